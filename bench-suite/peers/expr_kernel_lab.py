"""Shapes of the CUDA kernel gpuworthy generates for `y = exp(-x*x) * sin(3*x)`, timed without rebuilding.

The generated kernel (`gpuworthy_cuda::expr::elementwise_source`, pasted below as it is generated) and variants of
it, each compiled by CuPy's NVRTC and run on the same 2^26 float32 inputs, uniform in [-1, 1), timed with CUDA events
(median of 30) beside a device copy of the same bytes and the kernel `torch.compile` generates, in the same run. Each
line gives the largest error against a float64 reference, in units of the f32 result's spacing (ulp) and absolute.

    python3 bench-suite/peers/expr_kernel_lab.py [LOG2_N]
    BATCH=20 python3 bench-suite/peers/expr_kernel_lab.py [LOG2_N]   # each sample 20 back-to-back calls, per call
"""

import os
import statistics
import sys

import cupy
import numpy
import torch

ELEMENT = r"""
static __device__ __forceinline__ void gw_element(float i0, float& o0) {
    const float v0 = i0;
    const float v1 = -v0;
    const float v2 = i0;
    const float v3 = v1 * v2;
    const float v4 = expf(v3);
    const float v5 = __uint_as_float(0x40400000u);
    const float v6 = i0;
    const float v7 = v5 * v6;
    const float v8 = sinf(v7);
    const float v9 = v4 * v8;
    o0 = v9;
}
"""

# As generated: a grid-stride loop over float4s, the element inlined four times, 64-bit indices.
GENERATED = ELEMENT + r"""
extern "C" __global__ void expr_map(const float* __restrict__ p_in0, float* __restrict__ p_out0, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (long long q = first; q < (n + 3) / 4; q += stride) {
        const long long i = 4 * q;
        const bool whole = i + 4 <= n;
        float4 x0;
        if (whole) {
            x0 = reinterpret_cast<const float4*>(p_in0)[q];
        } else {
            x0 = make_float4(p_in0[i], i + 1 < n ? p_in0[i + 1] : 0.0f, i + 2 < n ? p_in0[i + 2] : 0.0f, 0.0f);
        }
        float4 y0 = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        gw_element(x0.x, y0.x);
        gw_element(x0.y, y0.y);
        gw_element(x0.z, y0.z);
        gw_element(x0.w, y0.w);
        if (whole) {
            reinterpret_cast<float4*>(p_out0)[q] = y0;
        } else {
            p_out0[i] = y0.x;
            if (i + 1 < n) p_out0[i + 1] = y0.y;
            if (i + 2 < n) p_out0[i + 2] = y0.z;
        }
    }
}
"""

# No loop: each thread two float4s (eight elements), 32-bit indices, as Triton's kernel is shaped.
EIGHT = ELEMENT + r"""
extern "C" __global__ void expr_map(const float* __restrict__ p_in0, float* __restrict__ p_out0, long long n) {
    const unsigned q = (blockIdx.x * blockDim.x + threadIdx.x) * 2;
    if (4ll * q + 8 > n) return;
    const float4 a = reinterpret_cast<const float4*>(p_in0)[q];
    const float4 b = reinterpret_cast<const float4*>(p_in0)[q + 1];
    float4 ya, yb;
    gw_element(a.x, ya.x); gw_element(a.y, ya.y); gw_element(a.z, ya.z); gw_element(a.w, ya.w);
    gw_element(b.x, yb.x); gw_element(b.y, yb.y); gw_element(b.z, yb.z); gw_element(b.w, yb.w);
    reinterpret_cast<float4*>(p_out0)[q] = ya;
    reinterpret_cast<float4*>(p_out0)[q + 1] = yb;
}
"""

# Eight a thread, each of a block's two loads 16 bytes a thread side by side (every load of a warp 512 contiguous
# bytes): thread t of block b reads float4s 512 b + t and 512 b + 256 + t, where EIGHT's read 2 t and 2 t + 1.
EIGHT_INTERLEAVED = ELEMENT + r"""
extern "C" __global__ void expr_map(const float* __restrict__ p_in0, float* __restrict__ p_out0, long long n) {
    const unsigned q = blockIdx.x * (2 * blockDim.x) + threadIdx.x;
    const unsigned r = q + blockDim.x;
    if (4ll * r + 4 > n) return;
    const float4 a = reinterpret_cast<const float4*>(p_in0)[q];
    const float4 b = reinterpret_cast<const float4*>(p_in0)[r];
    float4 ya, yb;
    gw_element(a.x, ya.x); gw_element(a.y, ya.y); gw_element(a.z, ya.z); gw_element(a.w, ya.w);
    gw_element(b.x, yb.x); gw_element(b.y, yb.y); gw_element(b.z, yb.z); gw_element(b.w, yb.w);
    reinterpret_cast<float4*>(p_out0)[q] = ya;
    reinterpret_cast<float4*>(p_out0)[r] = yb;
}
"""

# Eight a thread, one float4 in each half of the array.
EIGHT_HALVES = ELEMENT + r"""
extern "C" __global__ void expr_map(const float* __restrict__ p_in0, float* __restrict__ p_out0, long long n) {
    const unsigned q = blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned half = (unsigned)(n / 8);
    if (q >= half) return;
    const float4 a = reinterpret_cast<const float4*>(p_in0)[q];
    const float4 b = reinterpret_cast<const float4*>(p_in0)[q + half];
    float4 ya, yb;
    gw_element(a.x, ya.x); gw_element(a.y, ya.y); gw_element(a.z, ya.z); gw_element(a.w, ya.w);
    gw_element(b.x, yb.x); gw_element(b.y, yb.y); gw_element(b.z, yb.z); gw_element(b.w, yb.w);
    reinterpret_cast<float4*>(p_out0)[q] = ya;
    reinterpret_cast<float4*>(p_out0)[q + half] = yb;
}
"""

# The generator's first kernel of EIGHT_HALVES' shape, pasted as that build wrote it: 64-bit indices, the thread whose
# second float4 is partial or past the end taking its elements one by one. (The generator now takes 32-bit indices
# wherever they reach, as GENERATED_HALVES32 does here, after this lab found the 64-bit ones cost the gain.)
GENERATED_HALVES = ELEMENT + r"""
extern "C" __global__ void expr_map(const float* __restrict__ p_in0, float* __restrict__ p_out0, long long n) {
    const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long half = ((n + 3) / 4 + 1) / 2;
    if (q >= half) return;
    const long long ia = 4 * q;
    const long long ib = 4 * (q + half);
    const bool whole = ib + 4 <= n;
    float x0_0, x0_1, x0_2, x0_3, x0_4, x0_5, x0_6, x0_7;
    if (whole) {
        const float4 x0a = reinterpret_cast<const float4*>(p_in0)[q];
        const float4 x0b = reinterpret_cast<const float4*>(p_in0)[q + half];
        x0_0 = x0a.x; x0_1 = x0a.y; x0_2 = x0a.z; x0_3 = x0a.w; x0_4 = x0b.x; x0_5 = x0b.y; x0_6 = x0b.z; x0_7 = x0b.w;
    } else {
        x0_0 = ia + 0 < n ? p_in0[ia + 0] : 0.0f;
        x0_1 = ia + 1 < n ? p_in0[ia + 1] : 0.0f;
        x0_2 = ia + 2 < n ? p_in0[ia + 2] : 0.0f;
        x0_3 = ia + 3 < n ? p_in0[ia + 3] : 0.0f;
        x0_4 = ib + 0 < n ? p_in0[ib + 0] : 0.0f;
        x0_5 = ib + 1 < n ? p_in0[ib + 1] : 0.0f;
        x0_6 = ib + 2 < n ? p_in0[ib + 2] : 0.0f;
        x0_7 = ib + 3 < n ? p_in0[ib + 3] : 0.0f;
    }
    float y0_0, y0_1, y0_2, y0_3, y0_4, y0_5, y0_6, y0_7;
    gw_element(x0_0, y0_0);
    gw_element(x0_1, y0_1);
    gw_element(x0_2, y0_2);
    gw_element(x0_3, y0_3);
    gw_element(x0_4, y0_4);
    gw_element(x0_5, y0_5);
    gw_element(x0_6, y0_6);
    gw_element(x0_7, y0_7);
    if (whole) {
        const float4 y0a = make_float4(y0_0, y0_1, y0_2, y0_3);
        reinterpret_cast<float4*>(p_out0)[q] = y0a;
        const float4 y0b = make_float4(y0_4, y0_5, y0_6, y0_7);
        reinterpret_cast<float4*>(p_out0)[q + half] = y0b;
    } else {
        if (ia + 0 < n) p_out0[ia + 0] = y0_0;
        if (ia + 1 < n) p_out0[ia + 1] = y0_1;
        if (ia + 2 < n) p_out0[ia + 2] = y0_2;
        if (ia + 3 < n) p_out0[ia + 3] = y0_3;
        if (ib + 0 < n) p_out0[ib + 0] = y0_4;
        if (ib + 1 < n) p_out0[ib + 1] = y0_5;
        if (ib + 2 < n) p_out0[ib + 2] = y0_6;
    }
}
"""

# The same with 32-bit indices.
GENERATED_HALVES32 = GENERATED_HALVES.replace("const long long q = (long long)blockIdx.x", "const unsigned q = blockIdx.x").replace(
    "const long long half = ((n + 3) / 4 + 1) / 2;", "const unsigned half = (unsigned)(((n + 3) / 4 + 1) / 2);"
)

# The grid-stride loop with 32-bit indices (n < 2^31 here).
GENERATED32 = GENERATED.replace("long long q", "unsigned q").replace("const long long i", "const unsigned i").replace(
    "const long long stride = (long long)gridDim.x * blockDim.x", "const unsigned stride = gridDim.x * blockDim.x"
).replace("const long long first = (long long)blockIdx.x", "const unsigned first = blockIdx.x")


def main():
    log2 = int(sys.argv[1]) if len(sys.argv) > 1 else 26
    n = 1 << log2
    torch.manual_seed(0)
    x_t = torch.rand(n, device="cuda") * 2 - 1
    x = cupy.from_dlpack(x_t)
    y = cupy.empty_like(x)
    reference = numpy.exp(-x.get().astype(numpy.float64) ** 2) * numpy.sin(3 * x.get().astype(numpy.float64))
    spacing = numpy.spacing(numpy.abs(reference).astype(numpy.float32)).astype(numpy.float64)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()

    batch = int(os.environ.get("BATCH", "1"))

    def median_us(launch):
        for _ in range(5):
            launch()
        times = []
        for _ in range(30):
            start.record()
            for _ in range(batch):
                launch()
            stop.record()
            stop.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, stop) * 1e3 / batch)
        return statistics.median(times)

    moved = 8.0 * n
    sms = cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    timing = f"batches of {batch} calls between two events, per call" if batch > 1 else "CUDA events around one call"
    print(f"y = exp(-x*x) * sin(3*x), n = 2^{log2} float32, {sms} SMs; median of 30, {timing}")
    copy = median_us(lambda: y.__setitem__(slice(None), x))
    print(f"  {'device copy':44} {copy:8.1f} us  {moved / copy / 1e3:7.1f} GB/s")
    f = torch.compile(lambda x: torch.exp(-x * x) * torch.sin(3 * x))
    y_t = f(x_t)
    t = median_us(lambda: f(x_t))
    err = numpy.abs(y_t.cpu().numpy().astype(numpy.float64) - reference)
    label = "torch.compile, in batches" if batch > 1 else "torch.compile (events include its launch)"
    print(f"  {label:44} {t:8.1f} us  {moved / t / 1e3:7.1f} GB/s  "
          f"max {numpy.max(err / spacing):.2f} ulp, {err.max():.2e} abs")
    grid_stride = ((65535,), (256,))
    eight = (((n // 8 + 255) // 256,), (256,))
    shapes = [
        ("generated (grid-stride, 64-bit)", GENERATED, (), grid_stride),
        ("generated, -ftz=true", GENERATED, ("-ftz=true",), grid_stride),
        ("generated, 32-bit indices", GENERATED32, (), grid_stride),
        ("eight a thread, no loop", EIGHT, (), eight),
        ("eight a thread, -ftz=true", EIGHT, ("-ftz=true",), eight),
        ("eight a thread, a block's loads side by side", EIGHT_INTERLEAVED, (), eight),
        ("eight a thread, one float4 in each half", EIGHT_HALVES, (), eight),
        ("eight a thread, no loop (again)", EIGHT, (), eight),
        ("eight a thread, each half, as generated", GENERATED_HALVES, (), eight),
        ("the same, -lineinfo", GENERATED_HALVES, ("-lineinfo",), eight),
        ("the same, 32-bit indices", GENERATED_HALVES32, (), eight),
        ("eight a thread, one float4 in each half (again)", EIGHT_HALVES, (), eight),
        ("generated, --use_fast_math", GENERATED, ("--use_fast_math",), grid_stride),
    ]
    for label, source, options, (grid, block) in shapes:
        try:
            kernel = cupy.RawModule(code=source, options=("--std=c++17",) + options).get_function("expr_map")
            y.fill(0)
            us = median_us(lambda: kernel(grid, block, (x, y, numpy.int64(n))))
            err = numpy.abs(y.get().astype(numpy.float64) - reference)
            print(f"  {label:44} {us:8.1f} us  {moved / us / 1e3:7.1f} GB/s  max {numpy.max(err / spacing):.2f} ulp, "
                  f"{err.max():.2e} abs  {kernel.num_regs} regs")
        except Exception as e:
            print(f"  {label:44} failed: {type(e).__name__}: {str(e)[:600]}")


if __name__ == "__main__":
    main()
