"""NumPy (OpenBLAS) SGEMM alone, with its spread: the median, best and worst of 15 calls (5 from 4096 up) of
`np.matmul` on fresh float32 matrices, for each size given (default 1024). The CPU peer of `gpuworthy run matmul
--backend cpu --variant blocked`; cpu_peers.py prints the median alone.

    python3 bench-suite/peers/numpy_sgemm.py 1024 4096
    OPENBLAS_NUM_THREADS=2 python3 bench-suite/peers/numpy_sgemm.py 1024
"""

import sys
import time

import numpy as np


def spread(fn, *args, repeat=15):
    fn(*args)  # warm up the thread pool and the caches
    fn(*args)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2], times[0], times[-1]


def main():
    rng = np.random.default_rng(1)
    for n in [int(arg) for arg in sys.argv[1:]] or [1024]:
        a = rng.random((n, n), dtype=np.float32)
        b = rng.random((n, n), dtype=np.float32)
        median, best, worst = spread(np.matmul, a, b, repeat=15 if n <= 2048 else 5)
        gflop = 2 * n**3 / 1e9
        print(f"numpy sgemm {n}: median {gflop / median:8.1f} GFLOP/s (best {gflop / best:.1f}, worst {gflop / worst:.1f})")


if __name__ == "__main__":
    main()
