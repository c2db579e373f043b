"""Special functions sized to 16-bit arrays: `y = exp(-x*x) * sin(3*x)` on bf16 and f16 arrays on CUDA, three ways.

gpuworthy's CUDA kernel for an expression on 16-bit arrays reads eight elements a thread (one `uint4`), widens them
to `float`, computes the element eight times inlined and rounds each result once to the storage type. With CUDA's
math library (`expf`, `sinf`: a few units in the last place of an f32 result) the kernel is bound by instructions, not
by memory: the 16-bit arrays halve the bytes but not the instructions. This lab pastes that kernel's shape and times
three element functions, each compiled by CuPy's NVRTC and run on the same 2^26 inputs:

- `library`: `expf` and `sinf`, as the generator wrote every kernel before this lab;
- `hardware`: `__expf` (`ex2.approx` of `x log2 e`) and the angle reduced exactly to [-pi, pi] (three products of
  2 pi's parts, as the WGSL generator's `reduce_angle`) before `__sinf` (`sin.approx`): the special-function unit's
  approximations, which Vulkan drivers use for `exp` and `sin`; `sinf` past 2^18;
- `hardware, far call`: the same, `sinf` past 2^18 in a function of its own (`__noinline__`), not inlined eight times;
- `relative`: `__expf`, and the angle reduced by half turns (three parts of pi) to [-pi/2, pi/2], `sin.approx` there
  except below 1/16 in magnitude, where `r - r^3/6` keeps the relative accuracy that an absolute error loses;
- `polynomial`, `polynomial, far call`: `__expf`, and `sin` by a quarter-turn reduction (three parts of pi / 2) and
  Cephes' single-precision sine and cosine polynomials, chosen by the quadrant;
- `relative, far flag`: `relative` as the generator now writes it: an argument past 2^18 (or not finite) sets a flag
  instead of branching each element, and a thread whose flag is set recomputes its eight elements by `expf` and
  `sinf`;
- `relative, far flag, by reference`: the same, the recomputed element written through a reference to the caller's
  variable across the call, as the generator's first form of it was;
- `whole turns, far flag`: `relative, far flag` with `sin` reduced by whole turns (no sign to fix) and `r` itself
  below 1/64 in magnitude, as the generator writes it since half_sine_lab.py measured both.

Beside them, a kernel copying the same bytes (`uint4` in, `uint4` out) and torch's copy of the tensor, timed the same
way: CUDA events around batches of 20 back-to-back calls, the median of 30 batches, per call. Each line gives, over
every element, the largest error against a float64 reference of the same 16-bit inputs in units of the storage type's
spacing at the reference (`ulp16`), the elements whose stored result is not the float64 result rounded to the storage
type (`misrounded`), the elements whose result differs from `library`'s, and the largest absolute error of the
element function before its rounding to 16 bits (`f32 abs`, from a float32 run of the same kernel body).

    python3 bench-suite/peers/half_functions_lab.py              # x uniform in [-1, 1), as gpuworthy draws it
    python3 bench-suite/peers/half_functions_lab.py --wide 1000  # x uniform in [-1000, 1000): the reductions at work
    python3 bench-suite/peers/half_functions_lab.py --generated  # bf16: the generator's kernel and shapes of it
"""

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile

import cupy
import numpy
import torch

LIBRARY = r"""
static __device__ __forceinline__ float gw_exp(float x) { return expf(x); }
static __device__ __forceinline__ float gw_sin(float x) { return sinf(x); }
"""

HARDWARE = r"""
static __device__ __forceinline__ float gw_exp(float x) { return __expf(x); }
static __device__ __forceinline__ float gw_sin(float x) {
    if (fabsf(x) > 262144.0f) return sinf(x);
    const float k = rintf(x * 0.15915494f);
    const float r = fmaf(-k, 3.0199160e-7f, fmaf(-k, 0.0019350052f, fmaf(-k, 6.28125f, x)));
    return x == 0.0f ? x : __sinf(r);
}
"""

# The argument past the exact reduction's reach goes to the library's sinf in a call of its own, so that its slow
# path (a long reduction through a table) is not inlined eight times into the kernel.
FAR = r"""
static __device__ __noinline__ float gw_sin_far(float x) { return sinf(x); }
"""

HARDWARE_FAR_CALL = FAR + HARDWARE.replace("return sinf(x);", "return gw_sin_far(x);")

# Half-turn reduction (three parts of pi), the special-function unit's sine on [-pi/2, pi/2] except near zero, where
# r - r^3/6 keeps the relative accuracy that sin.approx's absolute error loses; the sign from the half-turn's parity.
RELATIVE = FAR + r"""
static __device__ __forceinline__ float gw_exp(float x) { return __expf(x); }
static __device__ __forceinline__ float gw_sin(float x) {
    if (fabsf(x) > 262144.0f) return gw_sin_far(x);
    const float t = fmaf(x, 0.31830987f, 12582912.0f);
    const float k = t - 12582912.0f;
    float r = fmaf(-k, 3.140625f, x);
    r = fmaf(-k, 9.6750259e-4f, r);
    r = fmaf(-k, 1.5099580e-7f, r);
    const float v = fabsf(r) < 0.0625f ? fmaf(r * r * r, -0.16666667f, r) : __sinf(r);
    return __int_as_float(__float_as_int(v) ^ (__float_as_int(t) << 31));
}
"""

# As the generator writes it (`gpuworthy_cuda::expr`, `SIXTEEN_BIT_HELPERS`): RELATIVE's forms, with an argument
# past the reach (or not finite) setting a flag instead of branching each element, and the thread recomputing its
# eight elements by the math library where it is set (FLAGGED_KERNEL).
FLAGGED = r"""
static __device__ __forceinline__ float gw_exp(float x) { return __expf(x); }
static __device__ __forceinline__ float gw_sin(float x, bool& far) {
    far |= !(fabsf(x) <= 262144.0f);
    const float t = fmaf(x, 0.318309886f, 12582912.0f);
    const float k = t - 12582912.0f;
    const float r = fmaf(-k, 1.50995799e-7f, fmaf(-k, 9.67502594e-4f, fmaf(-k, 3.140625f, x)));
    const float v = fabsf(r) < 0.0625f ? fmaf(r * r * r, -0.166666667f, r) : __sinf(r);
    return __int_as_float(__float_as_int(v) ^ (__float_as_int(t) << 31));
}
static __device__ __forceinline__ float gw_element(float x, bool& far) { return gw_exp(-x * x) * gw_sin(3.0f * x, far); }
static __device__ __noinline__ float gw_element_far(float x) { return expf(-x * x) * sinf(3.0f * x); }
static __device__ __forceinline__ float gw_element(float x) { bool far = false; const float y = gw_element(x, far); return far ? gw_element_far(x) : y; }
"""

FLAGGED_KERNEL = r"""
extern "C" __global__ void expr_map(const unsigned short* __restrict__ p_in0, unsigned short* __restrict__ p_out0,
                                    long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x; q < n / 8; q += stride) {
        const uint4 r = reinterpret_cast<const uint4*>(p_in0)[q];
        const unsigned w[4] = {r.x, r.y, r.z, r.w};
        float x[8], y[8];
        bool far = false;
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            x[2 * k] = gw_widen(w[k] & 0xffffu);
            x[2 * k + 1] = gw_widen(w[k] >> 16);
        }
#pragma unroll
        for (int e = 0; e < 8; ++e) y[e] = gw_element(x[e], far);
        if (far) {
#pragma unroll
            for (int e = 0; e < 8; ++e) y[e] = gw_element_far(x[e]);
        }
        unsigned o[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) o[k] = gw_narrow(y[2 * k]) | (gw_narrow(y[2 * k + 1]) << 16);
        reinterpret_cast<uint4*>(p_out0)[q] = make_uint4(o[0], o[1], o[2], o[3]);
    }
}
extern "C" __global__ void expr_f32(const float* __restrict__ x, float* __restrict__ y, long long n) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = gw_element(x[i]);
}
"""

# As the generator writes it since the sine lab (half_sine_lab.py): FLAGGED with `sin` reduced by whole turns (2 pi
# in three parts, the WGSL kernels' reduction), so that no sign is fixed afterwards, and `r` itself below 1/64 in
# magnitude, where the cubic term is under 2^-14 of it, in place of the cubic below 1/16.
WHOLE_TURNS = FLAGGED.replace(
    """    const float t = fmaf(x, 0.318309886f, 12582912.0f);
    const float k = t - 12582912.0f;
    const float r = fmaf(-k, 1.50995799e-7f, fmaf(-k, 9.67502594e-4f, fmaf(-k, 3.140625f, x)));
    const float v = fabsf(r) < 0.0625f ? fmaf(r * r * r, -0.166666667f, r) : __sinf(r);
    return __int_as_float(__float_as_int(v) ^ (__float_as_int(t) << 31));
""",
    """    const float t = fmaf(x, 0.159154943f, 12582912.0f);
    const float k = t - 12582912.0f;
    const float r = fmaf(-k, 3.019916050561733e-7f, fmaf(-k, 0.0019350051879882812f, fmaf(-k, 6.28125f, x)));
    return fabsf(r) < 0.015625f ? r : __sinf(r);
""",
)
assert WHOLE_TURNS != FLAGGED

# The same, the far path's result passed back through a reference to the caller's variable, as the generator's first
# form of it did.
FLAGGED_BY_REFERENCE = FLAGGED + r"""
static __device__ __noinline__ void gw_element_far_by_reference(float x, float& y) { y = expf(-x * x) * sinf(3.0f * x); }
"""

POLYNOMIAL = r"""
static __device__ __forceinline__ float gw_exp(float x) { return __expf(x); }
static __device__ __forceinline__ float gw_sin(float x) {
    if (fabsf(x) > 262144.0f) return sinf(x);
    const float t = fmaf(x, 0.63661977f, 12582912.0f);
    const float k = t - 12582912.0f;
    const int quadrant = __float_as_int(t);
    float r = fmaf(-k, 1.5703125f, x);
    r = fmaf(-k, 4.8375129699707031e-4f, r);
    r = fmaf(-k, 7.5497899548918821e-8f, r);
    const float s = r * r;
    const float sine = fmaf(fmaf(fmaf(s, -1.9515296e-4f, 8.3321609e-3f), s, -1.6666655e-1f) * s, r, r);
    const float cosine = fmaf(fmaf(fmaf(s, 2.4433157e-5f, -1.3887316e-3f), s, 4.1666646e-2f) * s, s, fmaf(-0.5f, s, 1.0f));
    const float v = (quadrant & 1) ? cosine : sine;
    return __int_as_float(__float_as_int(v) ^ ((quadrant & 2) << 30));
}
"""

ELEMENT = r"""
static __device__ __forceinline__ float gw_element(float x) { return gw_exp(-x * x) * gw_sin(3.0f * x); }
"""

WIDEN = {
    "bf16": r"""
static __device__ __forceinline__ float gw_widen(unsigned h) { return __uint_as_float(h << 16); }
static __device__ __forceinline__ unsigned gw_narrow(float f) {
    unsigned short h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}
""",
    "f16": r"""
static __device__ __forceinline__ float gw_widen(unsigned h) {
    float f; unsigned short s = (unsigned short)h; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(s)); return f;
}
static __device__ __forceinline__ unsigned gw_narrow(float f) {
    unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}
""",
}

# The generator's 16-bit shape: a grid-stride loop over uint4s of eight elements, the element inlined eight times.
KERNEL = r"""
extern "C" __global__ void expr_map(const unsigned short* __restrict__ p_in0, unsigned short* __restrict__ p_out0,
                                    long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x; q < n / 8; q += stride) {
        const uint4 r = reinterpret_cast<const uint4*>(p_in0)[q];
        const unsigned w[4] = {r.x, r.y, r.z, r.w};
        unsigned o[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const float a = gw_element(gw_widen(w[k] & 0xffffu));
            const float b = gw_element(gw_widen(w[k] >> 16));
            o[k] = gw_narrow(a) | (gw_narrow(b) << 16);
        }
        reinterpret_cast<uint4*>(p_out0)[q] = make_uint4(o[0], o[1], o[2], o[3]);
    }
}
extern "C" __global__ void expr_f32(const float* __restrict__ x, float* __restrict__ y, long long n) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = gw_element(x[i]);
}
"""

COPY = r"""
extern "C" __global__ void copy16(const uint4* __restrict__ a, uint4* __restrict__ b, long long groups) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x; q < groups; q += stride) b[q] = a[q];
}
"""

BLOCK = 256
GRID = 65535
BATCH = 20
SAMPLES = 30


def per_call_us(launch):
    for _ in range(3):
        launch()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(SAMPLES):
        start.record()
        for _ in range(BATCH):
            launch()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) * 1000.0 / BATCH)
    return statistics.median(times), min(times), max(times)


def spacing(values, dtype):
    """The storage type's spacing at each |value| (its ulp), as float64."""
    mantissa = 7 if dtype == "bf16" else 10
    smallest = -126 if dtype == "bf16" else -14
    exponent = numpy.floor(numpy.log2(numpy.maximum(numpy.abs(values), 1e-300)))
    return numpy.exp2(numpy.maximum(exponent, smallest) - mantissa)


def sass_counts(source):
    """The SASS instructions of `expr_map` (all, and those of the special-function unit), compiled by nvcc for the
    device's architecture; None where nvcc or cuobjdump is missing."""
    if not (shutil.which("nvcc") and shutil.which("cuobjdump")):
        return None
    major, minor = torch.cuda.get_device_capability(0)
    with tempfile.TemporaryDirectory() as folder:
        cu, cubin = os.path.join(folder, "k.cu"), os.path.join(folder, "k.cubin")
        with open(cu, "w") as f:
            f.write(source)
        # The generator's helpers that an expression does not call draw nvcc's "declared but never referenced".
        subprocess.run(["nvcc", "-cubin", f"-arch=sm_{major}{minor}", "-diag-suppress", "177", "-o", cubin, cu], check=True)
        sass = subprocess.run(["cuobjdump", "-sass", "-fun", "expr_map", cubin], capture_output=True, text=True).stdout
    lines = [line for line in sass.splitlines() if line.strip().startswith("/*") and "*/" in line and ";" in line]
    return len(lines), sum("MUFU" in line for line in lines)


# The generator's kernel for `y = exp(-x*x) * sin(3*x)` on bf16 arrays, as `elementwise_source` wrote it when this
# lab found its partial group's branch costly (the generator now takes that group after the loop), and shapes of it:
# the far path's function returning a float instead of a struct, inlined instead of called, and without the partial
# group's branch (2^26 is a multiple of eight).
GENERATED = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "lab", "half_e2_generated_bf16.cu")).read()
GENERATED_SHAPES = {
    "as generated": GENERATED,
    "generated, far returns a float": GENERATED.replace("static __device__ __noinline__ gw_far_outputs gw_element_far(float i0) {\n    gw_far_outputs r;\n"
             "    gw_element(i0, r.o0);\n    return r;\n}",
             "static __device__ __noinline__ float gw_element_far(float i0) {\n    float r;\n    gw_element(i0, r);\n"
             "    return r;\n}")
    .replace("const gw_far_outputs r = gw_element_far(", "const float r = gw_element_far(")
    .replace("= r.o0;", "= r;"),
    "generated, far path inlined": GENERATED.replace("__noinline__ gw_far_outputs", "__forceinline__ gw_far_outputs"),
    "generated, no partial group": GENERATED.replace("const bool whole = i + 8 <= n;", "const bool whole = true;"),
    # The generator's next form: the loop over whole groups only, the partial group element by element after it.
    "generated, partial group after the loop": open(
        os.path.join(os.path.dirname(os.path.abspath(__file__)), "lab", "half_e2_generated_bf16_tail_after.cu")
    ).read(),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2-n", type=int, default=26)
    parser.add_argument("--wide", type=float, default=1.0, help="x uniform in [-WIDE, WIDE)")
    parser.add_argument("--generated", action="store_true", help="bf16 only: the generated kernel and shapes of it")
    args = parser.parse_args()
    n = 1 << args.log2_n
    print(f"device: {torch.cuda.get_device_name(0)}, CuPy {cupy.__version__}, torch {torch.__version__}")
    print(f"y = exp(-x*x) * sin(3*x), n = 2^{args.log2_n}, x uniform in [-{args.wide:g}, {args.wide:g})")
    print(f"timing: CUDA events around {BATCH} calls, median (min-max) of {SAMPLES}, per call")
    copy = cupy.RawModule(code=COPY).get_function("copy16")
    generator = torch.Generator(device="cuda").manual_seed(1)
    for dtype in ("bf16",) if args.generated else ("bf16", "f16"):
        torch_dtype = torch.bfloat16 if dtype == "bf16" else torch.float16
        x = ((torch.rand(n, device="cuda", generator=generator) * 2 - 1) * args.wide).to(torch_dtype)
        x_bits = cupy.asarray(x.view(torch.int16)).view(cupy.uint16)
        widened = x.double().cpu().numpy()
        exact = numpy.exp(-widened * widened) * numpy.sin(3 * widened)
        rounded = torch.from_numpy(exact).to(torch_dtype).double().numpy()
        bytes_moved = 2 * 2 * n
        groups = n // 8
        out = cupy.empty(n, dtype=cupy.uint16)
        blocks = min(GRID, (groups + BLOCK - 1) // BLOCK)
        median, low, high = per_call_us(lambda: copy((blocks,), (BLOCK,), (x_bits, out, cupy.int64(groups))))
        print(f"{dtype}: copy kernel (uint4)      {median:8.1f} us ({low:.1f}-{high:.1f})  {bytes_moved / median / 1e3:7.1f} GB/s")
        y = torch.empty_like(x)
        median, low, high = per_call_us(lambda: y.copy_(x))
        print(f"{dtype}: torch copy_              {median:8.1f} us ({low:.1f}-{high:.1f})  {bytes_moved / median / 1e3:7.1f} GB/s")
        library_result = None
        x32 = cupy.asarray(widened.astype(numpy.float32))
        variants = (
            ("library", LIBRARY),
            ("hardware", HARDWARE),
            ("hardware, far call", HARDWARE_FAR_CALL),
            ("relative", RELATIVE),
            ("polynomial", POLYNOMIAL),
            ("polynomial, far call", FAR + POLYNOMIAL.replace("return sinf(x);", "return gw_sin_far(x);")),
            ("relative, far flag", FLAGGED),
            ("relative, far flag, by reference", FLAGGED_BY_REFERENCE),
            ("whole turns, far flag", WHOLE_TURNS),
        )
        if args.generated:
            variants = (("library", LIBRARY),) + tuple(GENERATED_SHAPES.items())
        for name, functions in variants:
            if functions is FLAGGED or functions is WHOLE_TURNS:
                source = WIDEN[dtype] + functions + FLAGGED_KERNEL
            elif functions is FLAGGED_BY_REFERENCE:
                by_reference = FLAGGED_KERNEL.replace(
                    "y[e] = gw_element_far(x[e]);", "gw_element_far_by_reference(x[e], y[e]);"
                )
                source = WIDEN[dtype] + functions + by_reference
            elif name in GENERATED_SHAPES:
                source = functions
            else:
                source = WIDEN[dtype] + functions + ELEMENT + KERNEL
            module = cupy.RawModule(code=source)
            counts = sass_counts(source) if dtype == "bf16" else None
            kernel = module.get_function("expr_map")
            median, low, high = per_call_us(lambda: kernel((blocks,), (BLOCK,), (x_bits, out, cupy.int64(n))))
            stored = torch.as_tensor(out.view(cupy.int16), device="cuda").view(torch_dtype).double().cpu().numpy()
            ulps = numpy.abs(stored - exact) / spacing(exact, dtype)
            misrounded = int(numpy.count_nonzero(stored != rounded))
            if library_result is None:
                library_result = stored
            differs = int(numpy.count_nonzero(stored != library_result))
            f32_abs = float("nan")
            if "expr_f32" in source:
                y32 = cupy.empty(n, dtype=cupy.float32)
                module.get_function("expr_f32")(((n + BLOCK - 1) // BLOCK,), (BLOCK,), (x32, y32, cupy.int64(n)))
                f32_abs = float(numpy.max(numpy.abs(cupy.asnumpy(y32).astype(numpy.float64) - exact)))
            print(
                f"{dtype}: {name:<24} {median:8.1f} us ({low:.1f}-{high:.1f})  {bytes_moved / median / 1e3:7.1f} GB/s"
                f"  max {ulps.max():.3f} ulp16, misrounded {misrounded}, differs from library {differs},"
                f" f32 abs {f32_abs:.3g}, {kernel.num_regs} registers, {kernel.local_size_bytes} B local"
            )
            if counts:
                print(f"      SASS of expr_map (nvcc): {counts[0]} instructions, {counts[1]} MUFU")


if __name__ == "__main__":
    main()
