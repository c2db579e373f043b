"""The shape of CUDA's generated kernel for `y = exp(-x*x) * sin(3*x)` on bf16 arrays: where its time goes.

gpuworthy's CUDA kernel for an expression with special functions on 16-bit arrays reads eight elements a thread (one
`uint4`), computes them with the storage-sized `exp` and `sin` (`gw_exp16`, `gw_sin16`) and writes one `uint4`; its
grid covers the array, one group a thread, and the grid's first thread takes the last, partial group element by
element. At 2^26 elements on an H200 it ran at about 0.9x a copy of the same bytes. This lab pastes the generated
kernel (`lab/half_e2_generated_bf16_tail_before.cu`, and the generator's previous form,
`lab/half_e2_generated_bf16_tail_after.cu`) and times shapes of it around the same element code, each shape a test of
one account of the missing tenth:

- registers and occupancy: `partial group after the loop` (the previous form: 40 registers), `as generated (partial
  group before)` (32), `no partial-group code` (2^26 is a multiple of eight), `launch bounds 8`
  (`__launch_bounds__(256, 8)` holds ptxas to 32 registers), `partial group in a call` (in a `__noinline__`
  function);
- instructions issued: `... exp flushing`, `exp` by `ex2.approx.ftz.f32`, which flushes a subnormal result to zero
  (as every backend may: the check allows it) where `__expf` (`ex2.approx.f32`) keeps it by scaling around the
  special-function unit, a compare and two predicated multiplies an element;
- the special-function unit: `sine by polynomial ...`, `sin` on [-pi/2, pi/2] by an odd polynomial of degree 9 in
  place of `sin.approx` and the cubic below 1/16: as many instructions, half the unit's;
- bytes in flight while a thread computes: `resident grid` (8 blocks an SM looping over the array, or as many as
  the registers allow), `... next group loaded ahead` (each trip loads the next trip's group before computing its
  own), `... shared memory N stages` (`cp.async` copies of the next groups into shared memory, N - 1 trips ahead,
  holding no registers), `... two groups a trip` and `covering grid, two groups a thread` (two loads before any
  compute).

Each is timed as the other labs time (CUDA events around 20 back-to-back calls, the median of 30 batches, per
call) and also alone (events around one call after the stream has drained, the median of 200), as gpuworthy's
harness and the peers' script time a kernel; a kernel that copies the same bytes and torch's copy of the tensor are
timed both ways beside them. Each result is compared with the first shape's, element for element (`differs`: they
compute the same function, so they must agree bit for bit on these inputs). Registers and local memory are the
driver's; SASS counts are nvcc's, for the device's architecture.

    python3 bench-suite/peers/half_kernel_shapes_lab.py
"""

import os
import statistics

import cupy
import torch

# Timed and counted as the functions lab times and counts: batches of back-to-back calls, nvcc's SASS.
from half_functions_lab import BATCH, SAMPLES, per_call_us, sass_counts

HERE = os.path.dirname(os.path.abspath(__file__))
# The generator's kernel as it is now (the partial group before the loop) and as it was (after the loop).
GENERATED = open(os.path.join(HERE, "lab", "half_e2_generated_bf16_tail_before.cu")).read()
GENERATED_BEFORE = open(os.path.join(HERE, "lab", "half_e2_generated_bf16_tail_after.cu")).read()
PRELUDE, _ = GENERATED_BEFORE.split('extern "C" __global__')

BLOCK = 256
SINGLE_SAMPLES = 200


def group(r, out_index, indent, far="call"):
    """The generator's code for one group of eight: widen the `uint4` named `r`, the sized element eight times, the
    far path where a flag is set, and the store at `out_index`. `far` is the far path: "call" (the generator's, a
    call that is not inlined), "inline" (one inlined copy of the math library's element in a loop over the eight) or
    "none" (left out, which no correct kernel may do: half_sine_lab.py's floor)."""
    x = [f"{r}_x{e}" for e in range(8)]
    y = [f"{r}_y{e}" for e in range(8)]
    lanes = ["x", "y", "z", "w"]
    lines = [f"float {', '.join(x)};"]
    for k, lane in enumerate(lanes):
        lines.append(f"{x[2 * k]} = gw_widen({r}.{lane} & 0xffffu); {x[2 * k + 1]} = gw_widen({r}.{lane} >> 16);")
    lines.append(f"float {', '.join(y)};")
    lines.append(f"bool {r}_far = false;")
    for e in range(8):
        lines.append(f"gw_element_sized({x[e]}, {y[e]}, {r}_far);")
    if far == "call":
        lines.append(f"if ({r}_far) {{")
        for e in range(8):
            lines.append(f"    {{ const gw_far_outputs f = gw_element_far({x[e]}); {y[e]} = f.o0; }}")
        lines.append("}")
    elif far == "inline":
        # The element picked by selects, not an indexed array, which would live in local memory.
        pick = x[7]
        for e in range(6, -1, -1):
            pick = f"(e == {e} ? {x[e]} : {pick})"
        lines.append(f"if ({r}_far) {{")
        lines.append("#pragma unroll 1")
        lines.append("    for (int e = 0; e < 8; ++e) {")
        lines.append(f"        float ye; gw_element({pick}, ye);")
        lines.append("        " + " ".join(f"if (e == {e}) {y[e]} = ye;" for e in range(8)))
        lines.append("    }")
        lines.append("}")
    packed = ", ".join(f"gw_narrow({y[2 * k]}) | ((unsigned)gw_narrow({y[2 * k + 1]}) << 16)" for k in range(4))
    lines.append(f"reinterpret_cast<uint4*>(p_out0)[{out_index}] = make_uint4({packed});")
    return "".join(f"{indent}{line}\n" for line in lines)


PARTIAL_GROUP = r"""
#pragma unroll 1
        for (long long i = n / 8 * 8; i < n; ++i) {
            float y0;
            bool far = false;
            gw_element_sized(gw_widen(p_in0[i]), y0, far);
            if (far) { const gw_far_outputs r = gw_element_far(gw_widen(p_in0[i])); y0 = r.o0; }
            p_out0[i] = gw_narrow(y0);
        }
"""

SIGNATURE = "void {bounds}expr_map(const unsigned short* __restrict__ p_in0, unsigned short* __restrict__ p_out0, long long n)"


EXP16 = "static __device__ __forceinline__ float gw_exp16(float x) { return __expf(x); }\n"
assert EXP16 in PRELUDE
# `__expf` is `ex2.approx.f32` of `x log2 e`, which keeps subnormal results by scaling around the special-function
# unit (a compare and two predicated multiplies an element); `.ftz` flushes them, as the check allows every backend.
EXP16_FTZ = (
    "static __device__ __forceinline__ float gw_exp16(float x) {\n"
    "    float y;\n    asm(\"ex2.approx.ftz.f32 %0, %1;\" : \"=f\"(y) : \"f\"(x * 1.44269504f));\n    return y;\n}\n"
)


SIN16_SMALL = "    const float v = fabsf(r) < 0.0625f ? fmaf(r * r * r, -0.166666667f, r) : __sinf(r);\n"
assert SIN16_SMALL in PRELUDE
# sin on [-pi/2, pi/2] by an odd polynomial of degree 9 (r + r^3 p(r^2), coefficients fitted for relative error:
# 1.9 units of f32's last place at most, evaluated in f32 without fused multiply-adds), in place of the special-function
# unit's sine and the cubic below 1/16: as many instructions a thread issues, and none of the unit's.
SIN16_POLYNOMIAL = (
    "    const float s = r * r;\n"
    "    const float p = fmaf(fmaf(fmaf(2.605667078e-6f, s, -1.980954839e-4f), s, 8.333065547e-3f), s, -1.666665971e-1f);\n"
    "    const float v = fmaf(r * s, p, r);\n"
)


def kernel(body, bounds="", extra="", ftz=False, polynomial=False):
    prelude = PRELUDE.replace(EXP16, EXP16_FTZ) if ftz else PRELUDE
    prelude = prelude.replace(SIN16_SMALL, SIN16_POLYNOMIAL) if polynomial else prelude
    return prelude + extra + 'extern "C" __global__ ' + SIGNATURE.format(bounds=bounds) + " {\n" + body + "}\n"


GRID_STRIDE = (
    "    const long long stride = (long long)gridDim.x * blockDim.x;\n"
    "    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    for (long long q = first; q < n / 8; q += stride) {\n"
    "        const uint4 g = reinterpret_cast<const uint4*>(p_in0)[q];\n" + group("g", "q", "        ") + "    }\n"
)
WITH_PARTIAL = GRID_STRIDE + "    if (first == 0) {" + PARTIAL_GROUP + "    }\n"

PARTIAL_IN_A_CALL = r"""
static __device__ __noinline__ void gw_partial_group(const unsigned short* __restrict__ p_in0,
                                                     unsigned short* __restrict__ p_out0, long long n) {""" + PARTIAL_GROUP + "}\n"

LOADED_AHEAD = (
    "    const long long stride = (long long)gridDim.x * blockDim.x;\n"
    "    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    const long long groups = n / 8;\n"
    "    uint4 next = make_uint4(0u, 0u, 0u, 0u);\n"
    "    if (first < groups) next = reinterpret_cast<const uint4*>(p_in0)[first];\n"
    "    for (long long q = first; q < groups; q += stride) {\n"
    "        const uint4 g = next;\n"
    "        if (q + stride < groups) next = reinterpret_cast<const uint4*>(p_in0)[q + stride];\n"
    + group("g", "q", "        ")
    + "    }\n"
)

# Each thread copies its next groups into shared memory with `cp.async` (16 bytes, bypassing L1), `STAGES - 1` trips
# ahead, and waits only for the oldest: the loads stay in flight while the thread computes, without holding
# registers for them. Each thread reads back only what it copied itself, so no barrier is needed.
def staged(stages, index="long long"):
    return (
        f"    __shared__ uint4 stage[{stages}][{BLOCK}];\n"
        f"    const {index} stride = ({index})gridDim.x * blockDim.x;\n"
        f"    const {index} first = ({index})blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"    const {index} groups = ({index})(n / 8);\n"
        f"    for (int s = 0; s < {stages - 1}; ++s) {{\n"
        f"        const {index} g = first + s * stride;\n"
        "        if (g < groups) gw_copy_async(&stage[s][threadIdx.x], reinterpret_cast<const uint4*>(p_in0) + g);\n"
        '        asm volatile("cp.async.commit_group;" ::: "memory");\n'
        "    }\n"
        "    int slot = 0;\n"
        f"    for ({index} q = first; q < groups; q += stride) {{\n"
        f"        const {index} ahead = q + {stages - 1} * stride;\n"
        f"        const int ahead_slot = slot == 0 ? {stages - 1} : slot - 1;\n"
        "        if (ahead < groups) gw_copy_async(&stage[ahead_slot][threadIdx.x], reinterpret_cast<const uint4*>(p_in0) + ahead);\n"
        '        asm volatile("cp.async.commit_group;" ::: "memory");\n'
        f'        asm volatile("cp.async.wait_group {stages - 1};" ::: "memory");\n'
        "        const uint4 g = stage[slot][threadIdx.x];\n"
        + group("g", "q", "        ")
        + f"        slot = slot == {stages - 1} ? 0 : slot + 1;\n"
        "    }\n"
    )


COPY_ASYNC = r"""
static __device__ __forceinline__ void gw_copy_async(uint4* shared, const uint4* global) {
    const unsigned address = (unsigned)__cvta_generic_to_shared(shared);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(address), "l"(global) : "memory");
}
"""


TWO_A_TRIP = (
    "    const long long stride = (long long)gridDim.x * blockDim.x;\n"
    "    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    const long long groups = n / 8;\n"
    "    for (long long q = first; q < groups; q += 2 * stride) {\n"
    "        const uint4 g = reinterpret_cast<const uint4*>(p_in0)[q];\n"
    "        const bool second = q + stride < groups;\n"
    "        uint4 h = make_uint4(0u, 0u, 0u, 0u);\n"
    "        if (second) h = reinterpret_cast<const uint4*>(p_in0)[q + stride];\n"
    + group("g", "q", "        ")
    + "        if (second) {\n"
    + group("h", "q + stride", "            ")
    + "        }\n    }\n"
)

TWO_HALVES = (
    "    const long long groups = n / 8;\n"
    "    const long long half = (groups + 1) / 2;\n"
    "    const long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (q >= half) return;\n"
    "    const uint4 g = reinterpret_cast<const uint4*>(p_in0)[q];\n"
    "    const bool second = q + half < groups;\n"
    "    uint4 h = make_uint4(0u, 0u, 0u, 0u);\n"
    "    if (second) h = reinterpret_cast<const uint4*>(p_in0)[q + half];\n"
    + group("g", "q", "    ")
    + "    if (second) {\n"
    + group("h", "q + half", "        ")
    + "    }\n"
)


def covering(groups, sms, registers):
    return (groups + BLOCK - 1) // BLOCK


def resident(groups, sms, registers):
    """As many blocks as the SMs hold at once with `registers` a thread (65536 an SM, allocated 256 at a time a
    warp; at most 2048 threads an SM)."""
    per_warp = -(-registers * 32 // 256) * 256
    per_sm = min(65536 // (per_warp * BLOCK // 32), 2048 // BLOCK)
    return min(per_sm * sms, (groups + BLOCK - 1) // BLOCK)


def halves(groups, sms, registers):
    return ((groups + 1) // 2 + BLOCK - 1) // BLOCK


BOUNDS = "__launch_bounds__(256, 8) "

SHAPES = {
    "partial group after the loop": (GENERATED_BEFORE, covering),
    "as generated (partial group before)": (GENERATED, covering),
    "no partial-group code": (kernel(GRID_STRIDE), covering),
    "launch bounds 8": (kernel(WITH_PARTIAL, bounds=BOUNDS), covering),
    "partial group in a call": (
        kernel(GRID_STRIDE + "    if (first == 0) gw_partial_group(p_in0, p_out0, n);\n", extra=PARTIAL_IN_A_CALL),
        covering,
    ),
    "launch bounds 8, exp flushing": (kernel(WITH_PARTIAL, bounds=BOUNDS, ftz=True), covering),
    "no partial-group code, exp flushing": (kernel(GRID_STRIDE, ftz=True), covering),
    "sine by polynomial": (kernel(WITH_PARTIAL, polynomial=True), covering),
    "sine by polynomial, launch bounds 8": (kernel(WITH_PARTIAL, bounds=BOUNDS, polynomial=True), covering),
    "sine by polynomial, no partial-group code": (kernel(GRID_STRIDE, polynomial=True), covering),
    "sine by polynomial, exp flushing, bounds 8": (kernel(WITH_PARTIAL, bounds=BOUNDS, ftz=True, polynomial=True), covering),
    "resident grid": (kernel(GRID_STRIDE), resident),
    "resident grid, next group loaded ahead": (kernel(LOADED_AHEAD), resident),
    "resident grid, loaded ahead, bounds 8": (kernel(LOADED_AHEAD, bounds=BOUNDS), resident),
    "resident grid, loaded ahead, exp flushing": (kernel(LOADED_AHEAD, ftz=True), resident),
    "resident grid, shared memory 2 stages": (kernel(staged(2), extra=COPY_ASYNC), resident),
    "resident grid, shared memory 3 stages": (kernel(staged(3), extra=COPY_ASYNC), resident),
    "resident grid, 3 stages, exp flushing": (kernel(staged(3), extra=COPY_ASYNC, ftz=True), resident),
    "resident grid, 3 stages, 32-bit indices": (kernel(staged(3, "unsigned"), extra=COPY_ASYNC), resident),
    "resident grid, 2 stages, 32-bit indices": (kernel(staged(2, "unsigned"), extra=COPY_ASYNC), resident),
    "resident grid, two groups a trip": (kernel(TWO_A_TRIP), resident),
    "resident grid, two a trip, bounds 8": (kernel(TWO_A_TRIP, bounds=BOUNDS), resident),
    "covering grid, two groups a thread": (kernel(TWO_HALVES), halves),
}

COPY = r"""
extern "C" __global__ void copy16(const uint4* __restrict__ a, uint4* __restrict__ b, long long groups) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long q = (long long)blockIdx.x * blockDim.x + threadIdx.x; q < groups; q += stride) b[q] = a[q];
}
"""


def single_us(launch):
    """One call between two events, after the stream has drained: the median of SINGLE_SAMPLES."""
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(SINGLE_SAMPLES):
        cupy.cuda.get_current_stream().synchronize()
        start.record()
        launch()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) * 1000.0)
    return statistics.median(times)


def measure(source, grid, x_bits, out, n, groups, sms):
    """Compiles `source`'s `expr_map`, launches it once on `x_bits` over `grid(groups, sms, registers)` blocks and
    times it, batched and alone: its output, the blocks, the function (for its registers and local memory), the
    batched median with its range, the lone call's median, and its SASS counts described."""
    function = cupy.RawModule(code=source).get_function("expr_map")
    blocks = grid(groups, sms, function.num_regs)
    launch = lambda: function((blocks,), (BLOCK,), (x_bits, out, cupy.int64(n)))  # noqa: E731
    out.fill(0)
    launch()
    result = out.copy()
    median, low, high = per_call_us(launch)
    alone = single_us(launch)
    counts = sass_counts(source)
    sass = f", SASS {counts[0]} ({counts[1]} MUFU)" if counts else ""
    return result, blocks, function, (median, low, high), alone, sass


def rate_line(name, bytes_moved, times, alone):
    """A shape's name and times, batched and alone, with the rates they give for `bytes_moved` bytes."""
    median, low, high = times
    return (f"{name:<40} {median:6.1f} us ({low:.1f}-{high:.1f}) {bytes_moved / median / 1e3:7.1f} GB/s"
            f"   alone {alone:6.1f} us {bytes_moved / alone / 1e3:7.1f} GB/s")


def time_the_copies(x, x_bits, out):
    """Times and prints, batched and alone, a kernel copying the bf16 tensor `x` (its bits `x_bits`) into `out` one
    `uint4` a thread, and torch's copy of `x`: the bar every shape is read against."""
    bytes_moved = 2 * 2 * x.numel()
    groups = x.numel() // 8
    copy = cupy.RawModule(code=COPY).get_function("copy16")
    copy_blocks = min(65535, (groups + BLOCK - 1) // BLOCK)
    copy_launch = lambda: copy((copy_blocks,), (BLOCK,), (x_bits, out, cupy.int64(groups)))  # noqa: E731
    y = torch.empty_like(x)
    torch_launch = lambda: y.copy_(x)  # noqa: E731
    for name, launch in (("copy kernel (uint4)", copy_launch), ("torch copy_", torch_launch)):
        print(rate_line(name, bytes_moved, per_call_us(launch), single_us(launch)))


def main():
    n = 1 << 26
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    print(f"device: {torch.cuda.get_device_name(0)} ({sms} SMs), CuPy {cupy.__version__}, torch {torch.__version__}")
    print(f"y = exp(-x*x) * sin(3*x) on bf16 arrays, n = 2^26, x uniform in [-1, 1), {BLOCK} threads a block")
    print(f"batched: events around {BATCH} calls, median (min-max) of {SAMPLES}, per call; alone: events around one")
    print(f"call after the stream drained, median of {SINGLE_SAMPLES}")
    generator = torch.Generator(device="cuda").manual_seed(1)
    x = (torch.rand(n, device="cuda", generator=generator) * 2 - 1).to(torch.bfloat16)
    x_bits = cupy.asarray(x.view(torch.int16)).view(cupy.uint16)
    bytes_moved = 2 * 2 * n
    groups = n // 8
    out = cupy.empty(n, dtype=cupy.uint16)
    time_the_copies(x, x_bits, out)
    reference = None
    for name, (source, grid) in SHAPES.items():
        result, blocks, function, times, alone, sass = measure(source, grid, x_bits, out, n, groups, sms)
        if reference is None:
            reference = result
        differs = int(cupy.count_nonzero(result != reference))
        print(f"{rate_line(name, bytes_moved, times, alone)}   {blocks} blocks,"
              f" {function.num_regs} registers, {function.local_size_bytes} B local{sass}, differs {differs}")


if __name__ == "__main__":
    main()
