"""Host overhead of one call on data already on the GPU, at n = 1024: gpuworthy.expr against CuPy's
ElementwiseKernel, both enqueueing without waiting. A benchmark, not a test: run it on a CUDA machine with CuPy.

    python python/benches/overhead.py
"""

import time

import cupy
import numpy as np

import gpuworthy

N = 1024
CALLS = 20_000


def per_call(f):
    for _ in range(200):
        f()
    cupy.cuda.Device().synchronize()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(CALLS):
            f()
        elapsed = time.perf_counter() - start
        cupy.cuda.Device().synchronize()
        best = min(best, elapsed / CALLS)
    return best


x = cupy.asarray(np.linspace(-1, 1, N, dtype=np.float32))
ours = gpuworthy.expr("y = a*x + b")
theirs = cupy.ElementwiseKernel("float32 x, float32 a, float32 b", "float32 y", "y = a * x + b", "saxpy_peer")
np.testing.assert_allclose(cupy.asnumpy(ours(x=x, a=2.0, b=1.0)), cupy.asnumpy(theirs(x, np.float32(2), np.float32(1))))
a, b = np.float32(2), np.float32(1)
t_ours = per_call(lambda: ours(x=x, a=2.0, b=1.0))
t_theirs = per_call(lambda: theirs(x, a, b))
print(f"n = {N}, best of 5 x {CALLS} calls, data resident on {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
print(f"gpuworthy.expr(...)(x=x, a=2.0, b=1.0): {t_ours * 1e6:.2f} us per call")
print(f"cupy.ElementwiseKernel(...)(x, a, b):   {t_theirs * 1e6:.2f} us per call")
print(f"ratio: {t_ours / t_theirs:.2f}x")
# Where gpuworthy's time goes on the Python side: allocating the output and reading the arrays' interface.
t_empty = per_call(lambda: cupy.empty(N, dtype=cupy.float32))
t_interface = per_call(lambda: x.__cuda_array_interface__)
print(f"of which, in CuPy: cupy.empty {t_empty * 1e6:.2f} us, __cuda_array_interface__ {t_interface * 1e6:.2f} us")

# The arrays users have on a GPU: other dtypes and strided views are converted on the GPU by their own library, a
# phase `last_run` reports. Each call's time (median of 20, synchronised) beside the conversion's share of it, and
# the float32 contiguous call as the baseline, at 2^24 elements.
M = 1 << 24
try:
    import torch
except ImportError:  # pragma: no cover - a machine with CuPy alone
    torch = None
cases = [("cupy", d, lay) for d in ("float32", "float64") for lay in ("contiguous", "strided")]
if torch is not None:
    cases += [("torch", d, lay) for d in ("float32", "float64", "bfloat16") for lay in ("contiguous", "strided")]
print(f"\nconversions on the GPU, n = {M}: median of 20 calls of `y = a*x + b`, synchronised")
print(f"{'library':8} {'dtype':9} {'layout':11} {'call':>10} {'conversion':>11}  converted")
for library, dtype, layout in cases:
    if library == "cupy":
        base = cupy.arange(2 * M, dtype=cupy.float32).astype(dtype)
        sync = cupy.cuda.Device().synchronize
    else:
        base = torch.arange(2 * M, dtype=torch.float32, device="cuda").to(getattr(torch, dtype))
        sync = torch.cuda.synchronize
    arg = base[::2] if layout == "strided" else base[:M]
    times, conversion = [], []
    for i in range(23):
        sync()
        start = time.perf_counter()
        y = ours(x=arg, a=2.0, b=1.0)
        sync()
        if i >= 3:
            times.append(time.perf_counter() - start)
            conversion.append((ours.last_run or {}).get("conversion_s", 0.0))
    how = (ours.last_run or {}).get("conversions", {}).get("x", "read in place")
    print(
        f"{library:8} {dtype:9} {layout:11} {np.median(times) * 1e3:8.3f} ms {np.median(conversion) * 1e3:8.3f} ms  {how}"
    )
