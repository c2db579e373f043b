"""CPU peers for gpuworthy's CPU backend: Numba `njit(parallel=True)` and NumPy (OpenBLAS SGEMM).

Prints the median kernel throughput of each workload at the sizes `gpuworthy run` uses for the CPU comparison, with
the same cost model (bytes moved, flops) as gpuworthy's workloads, so the figures can be set side by side:

    python3 bench-suite/peers/cpu_peers.py
    cargo run --release -p bench-suite --bin gpuworthy -- run square --size 2^24

Name workloads to measure only those (square, saxpy, sum, softmax, histogram, mandelbrot, sgemm):

    python3 bench-suite/peers/cpu_peers.py saxpy
"""

import sys
import time

import numpy as np
from numba import njit, prange


def timings(fn, *args, repeat=15):
    """The times of `repeat` calls of `fn(*args)`, shortest first, after two calls that compile and warm up."""
    fn(*args)
    fn(*args)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return sorted(times)


def median_time(fn, *args, repeat=15):
    times = timings(fn, *args, repeat=repeat)
    return times[len(times) // 2]


@njit(parallel=True, fastmath=False)
def square(x, y):
    for i in prange(x.size):
        y[i] = x[i] * x[i]


@njit(parallel=True)
def saxpy(a, x, y):
    for i in prange(x.size):
        y[i] = a * x[i] + y[i]


@njit(parallel=True)
def total(x):
    s = 0.0
    for i in prange(x.size):
        s += x[i]
    return s


@njit(parallel=True)
def softmax(x, y):
    rows, cols = x.shape
    for r in prange(rows):
        m = x[r, 0]
        for c in range(cols):
            m = max(m, x[r, c])
        s = np.float32(0.0)
        for c in range(cols):
            e = np.exp(x[r, c] - m)
            y[r, c] = e
            s += e
        inv = np.float32(1.0) / s
        for c in range(cols):
            y[r, c] *= inv


@njit(parallel=True)
def histogram(x, bins, chunks):
    n = x.size
    partial = np.zeros((chunks, bins), dtype=np.uint32)
    per = (n + chunks - 1) // chunks
    for k in prange(chunks):
        for i in range(k * per, min(n, (k + 1) * per)):
            v = x[i]
            if v == v:
                b = int(v * np.float32(bins))
                b = min(max(b, 0), bins - 1)
                partial[k, b] += 1
    return partial.sum(axis=0)


@njit(parallel=True)
def mandelbrot(width, height, max_iter, out):
    dx = np.float32(3.0) / np.float32(width)
    dy = np.float32(3.0) / np.float32(height)
    for j in prange(height):
        cy = np.float32(-1.5) + (np.float32(j) + np.float32(0.5)) * dy
        for i in range(width):
            cx = np.float32(-2.0) + (np.float32(i) + np.float32(0.5)) * dx
            x = np.float32(0.0)
            y = np.float32(0.0)
            count = 0
            while count < max_iter:
                x2 = x * x
                y2 = y * y
                if x2 + y2 > np.float32(4.0):
                    break
                y = np.float32(2.0) * x * y + cy
                x = x2 - y2 + cx
                count += 1
            out[j, i] = count


def main():
    known = ("square", "saxpy", "sum", "softmax", "histogram", "mandelbrot", "sgemm")
    wanted = sys.argv[1:] or list(known)
    unknown = [w for w in wanted if w not in known]
    if unknown:
        sys.exit(f"cpu_peers.py: unknown workload {', '.join(unknown)}; known: {', '.join(known)}")
    rng = np.random.default_rng(1)
    n = 1 << 24
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    out = np.empty_like(x)
    if "square" in wanted:
        print(f"square  n=2^24        {8 * n / median_time(square, x, out) / 1e9:8.1f} GB/s")
    if "saxpy" in wanted:
        print(f"saxpy   n=2^24        {12 * n / median_time(saxpy, np.float32(2.5), x, y) / 1e9:8.1f} GB/s")
    if "sum" in wanted:
        print(f"sum     n=2^24        {4 * n / median_time(total, x) / 1e9:8.1f} GB/s")
    if "softmax" in wanted:
        m = (rng.random((2048, 2048), dtype=np.float32) * 16 - 8).astype(np.float32)
        print(f"softmax 2048x2048     {8 * m.size / median_time(softmax, m, np.empty_like(m)) / 1e9:8.1f} GB/s")
    if "histogram" in wanted:
        print(f"histogram n=2^24 256  {4 * n / median_time(histogram, x, 256, 64) / 1e9:8.1f} GB/s")
    if "mandelbrot" in wanted:
        counts = np.empty((1024, 1024), dtype=np.int64)
        t = median_time(mandelbrot, 1024, 1024, 256, counts, repeat=5)
        print(f"mandelbrot 1024^2     {1024 * 1024 / t / 1e6:8.1f} Mpixel/s  ({8 * counts.sum() / t / 1e9:.1f} GFLOP/s)")
    if "sgemm" in wanted:
        a = rng.random((1024, 1024), dtype=np.float32)
        b = rng.random((1024, 1024), dtype=np.float32)
        print(f"sgemm   1024 (numpy)  {2 * 1024**3 / median_time(np.matmul, a, b) / 1e9:8.1f} GFLOP/s")
        a = rng.random((4096, 4096), dtype=np.float32)
        b = rng.random((4096, 4096), dtype=np.float32)
        print(f"sgemm   4096 (numpy)  {2 * 4096**3 / median_time(np.matmul, a, b, repeat=5) / 1e9:8.1f} GFLOP/s")


if __name__ == "__main__":
    main()
