"""Shapes of the CUDA backend's one-kernel reduction, timed without rebuilding the Rust workspace.

Starts from `s = sum(x*x)` as the backend generated it before its reductions took the shapes this lab found
(`lab/sum_xx_f32.cu`, printed by the CUDA crate's `expr_cuda_source` example), applies each edit to its text, compiles it with CuPy's NVRTC, checks its value against
float64, and times it in batches of 20 back-to-back launches between two CUDA events (as gpuworthy's `kernel`
column is timed), beside `torch.compile`'s `(x*x).sum()` and a device copy of the same bytes in batches, in the same
run. Each shape is timed in several rounds, interleaved, and the median of each round printed.

    python3 bench-suite/peers/reduction_lab.py [N]          # default 2^26

A shape that wins here moves into `reduction_source` (cuda/src/expr.rs), where the conformance tests check it.
"""

import pathlib
import statistics
import sys

import cupy
import numpy
import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from expr_peers import batch_event_ms, median_of, parse_n  # noqa: E402

SOURCE = (HERE / "lab" / "sum_xx_f32.cu").read_text()
# The kernel as the backend generates it now, for a check that the lab's shape is what the backend runs.
NOW = (HERE / "lab" / "sum_xx_f32_now.cu").read_text()
BLOCK = 256
COUNTER_AT = 1025  # the generated kernel's counter: after REDUCE_BLOCKS + 1 floats

TREE = """    shared_values[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned stride = 128; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) { shared_values[threadIdx.x] = shared_values[threadIdx.x] + shared_values[threadIdx.x + stride]; }
        __syncthreads();
    }
"""
# Warp shuffles: each warp adds its 32 values in registers, its first lane publishes, one warp adds the 8.
SHUFFLE = """    for (int offset = 16; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
    if ((threadIdx.x & 31u) == 0) shared_values[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x < 32) {
        acc = threadIdx.x < 8 ? shared_values[threadIdx.x] : 0.0f;
        for (int offset = 4; offset > 0; offset /= 2) acc += __shfl_down_sync(0xffffffffu, acc, offset);
        if (threadIdx.x == 0) shared_values[0] = acc;
    }
    __syncthreads();
"""
MAIN_LOOP = """#pragma unroll 4
    for (long long q = first; q < n / 4; q += stride) {
        const float4 x0 = reinterpret_cast<const float4*>(p_in0)[q];
        const float t0 = gw_term(x0.x);
        const float t1 = gw_term(x0.y);
        const float t2 = gw_term(x0.z);
        const float t3 = gw_term(x0.w);
        acc = acc + ((t0 + t1) + (t2 + t3));
    }
"""
# Four float4 loads issued before any is used, in a loop of its own for the whole trips; the rest as before.
FOUR_LOADS = """    long long q = first;
    for (; q + 3 * stride < n / 4; q += 4 * stride) {
        const float4 a = __ldg(reinterpret_cast<const float4*>(p_in0) + q);
        const float4 b = __ldg(reinterpret_cast<const float4*>(p_in0) + q + stride);
        const float4 c = __ldg(reinterpret_cast<const float4*>(p_in0) + q + 2 * stride);
        const float4 d = __ldg(reinterpret_cast<const float4*>(p_in0) + q + 3 * stride);
        acc = acc + ((((gw_term(a.x) + gw_term(a.y)) + (gw_term(a.z) + gw_term(a.w)))
                     + ((gw_term(b.x) + gw_term(b.y)) + (gw_term(b.z) + gw_term(b.w))))
                    + (((gw_term(c.x) + gw_term(c.y)) + (gw_term(c.z) + gw_term(c.w)))
                     + ((gw_term(d.x) + gw_term(d.y)) + (gw_term(d.z) + gw_term(d.w)))));
    }
    for (; q < n / 4; q += stride) {
        const float4 x0 = reinterpret_cast<const float4*>(p_in0)[q];
        acc = acc + ((gw_term(x0.x) + gw_term(x0.y)) + (gw_term(x0.z) + gw_term(x0.w)));
    }
"""

# Eight float4 loads issued before any is used.
EIGHT_LOADS = FOUR_LOADS.replace(
    """        const float4 d = __ldg(reinterpret_cast<const float4*>(p_in0) + q + 3 * stride);""",
    """        const float4 d = __ldg(reinterpret_cast<const float4*>(p_in0) + q + 3 * stride);
        const float4 e = __ldg(reinterpret_cast<const float4*>(p_in0) + q + 4 * stride);
        const float4 f = __ldg(reinterpret_cast<const float4*>(p_in0) + q + 5 * stride);
        const float4 g = __ldg(reinterpret_cast<const float4*>(p_in0) + q + 6 * stride);
        const float4 h = __ldg(reinterpret_cast<const float4*>(p_in0) + q + 7 * stride);""",
).replace("q + 3 * stride < n / 4; q += 4 * stride", "q + 7 * stride < n / 4; q += 8 * stride").replace(
    """                     + ((gw_term(d.x) + gw_term(d.y)) + (gw_term(d.z) + gw_term(d.w)))));""",
    """                     + ((gw_term(d.x) + gw_term(d.y)) + (gw_term(d.z) + gw_term(d.w)))))
                  + ((((gw_term(e.x) + gw_term(e.y)) + (gw_term(e.z) + gw_term(e.w)))
                     + ((gw_term(f.x) + gw_term(f.y)) + (gw_term(f.z) + gw_term(f.w))))
                    + (((gw_term(g.x) + gw_term(g.y)) + (gw_term(g.z) + gw_term(g.w)))
                     + ((gw_term(h.x) + gw_term(h.y)) + (gw_term(h.z) + gw_term(h.w)))));""",
)


def shape(shuffle, loads, counter):
    if shuffle == "now":
        return NOW.replace(f"partials + {COUNTER_AT}", f"partials + {counter}")
    src = SOURCE.replace(f"partials + {COUNTER_AT}", f"partials + {counter}")
    if shuffle:
        assert src.count(TREE) == 2
        src = src.replace(TREE, SHUFFLE)
    if loads:
        assert MAIN_LOOP in src
        src = src.replace(MAIN_LOOP, FOUR_LOADS if loads == 4 else EIGHT_LOADS)
    return src


SHAPES = {
    # name: (warp shuffles, loads a trip (0: the generated loop), blocks an SM); the grid is blocks an SM x the SMs
    "as generated, 1024 blocks": (False, 0, None),
    "warp shuffles, 1024 blocks": (True, 0, None),
    "four loads a trip, 1024 blocks": (False, 4, None),
    "shuffles + four loads, 1024 blocks": (True, 4, None),
    "shuffles + four loads, 2 an SM": (True, 4, 2),
    "shuffles + four loads, 3 an SM": (True, 4, 3),
    "shuffles + four loads, 4 an SM": (True, 4, 4),
    "shuffles + four loads, 6 an SM": (True, 4, 6),
    "shuffles + eight loads, 2 an SM": (True, 8, 2),
    "shuffles + eight loads, 4 an SM": (True, 8, 4),
    "as generated, 4 an SM": (False, 0, 4),
    "the backend's kernel now, 4 an SM": ("now", 0, 4),
}


def main():
    n = parse_n(sys.argv[1]) if len(sys.argv) > 1 else 1 << 26
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, CuPy {cupy.__version__}; n = {n}")
    rng = numpy.random.default_rng(1)
    host = rng.random(n, dtype=numpy.float32) * 2 - 1
    want = float(numpy.dot(host.astype(numpy.float64), host.astype(numpy.float64)))
    x_t = torch.from_numpy(host).cuda()
    x = cupy.asarray(host)
    counter = 8193
    sms = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["multiProcessorCount"]
    kernels = {}
    for name, (shuffle, loads, per_sm) in SHAPES.items():
        module = cupy.RawModule(code=shape(shuffle, loads, counter), options=("--std=c++17",))
        kernels[name] = (module.get_function("expr_reduce"), 1024 if per_sm is None else per_sm * sms)
    partials = cupy.zeros(counter + 1, dtype=cupy.float32)
    for name, (fn, blocks) in kernels.items():
        fn((blocks,), (BLOCK,), (x, partials, numpy.int64(n)))
        got = float(partials[blocks].get())
        ok = abs(got - want) <= 1e-5 * abs(want)
        print(f"{name:<40} value {got:.7g} against {want:.7g}: {'ok' if ok else 'WRONG'}")
    compiled = torch.compile(lambda t: (t * t).sum())
    out = torch.empty_like(x_t)
    clock = median_of(15, 3, batch_event_ms(torch))
    rounds = {name: [] for name in kernels}
    rounds["torch.compile (x*x).sum()"] = []
    rounds["device copy (read and write)"] = []
    for _ in range(3):
        for name, (fn, blocks) in kernels.items():
            rounds[name].append(1e3 * clock(lambda: fn((blocks,), (BLOCK,), (x, partials, numpy.int64(n)))))
        rounds["torch.compile (x*x).sum()"].append(1e3 * clock(lambda: compiled(x_t)))
        rounds["device copy (read and write)"].append(1e3 * clock(lambda: out.copy_(x_t)))
    print(f"{'shape, in batches of 20':<40} {'rounds (us a call)':<26} median    GB/s read")
    for name, times in rounds.items():
        med = statistics.median(times)
        moved = 8 * n if name.startswith("device copy") else 4 * n
        print(f"{name:<40} {', '.join(f'{t:.1f}' for t in times):<26} {med:6.1f}  {moved / med / 1e3:8.1f}")


if __name__ == "__main__":
    main()
