"""NumPy (OpenBLAS) SGEMM alone, with its spread: the median, best and worst of 15 calls (5 above 2048) of
`np.matmul` on fresh float32 matrices, for each size given (default 1024). The CPU peer of `gpuworthy run matmul
--backend cpu --variant blocked`; cpu_peers.py (whose timing it shares, so numba must be installed too) prints the
median alone.

    python3 bench-suite/peers/numpy_sgemm.py 1024 4096
    OPENBLAS_NUM_THREADS=2 python3 bench-suite/peers/numpy_sgemm.py 1024
"""

import sys

import numpy as np

from cpu_peers import timings


def main():
    rng = np.random.default_rng(1)
    for n in [int(arg) for arg in sys.argv[1:]] or [1024]:
        a = rng.random((n, n), dtype=np.float32)
        b = rng.random((n, n), dtype=np.float32)
        times = timings(np.matmul, a, b, repeat=15 if n <= 2048 else 5)
        median, best, worst = times[len(times) // 2], times[0], times[-1]
        gflop = 2 * n**3 / 1e9
        print(f"numpy sgemm {n}: median {gflop / median:8.1f} GFLOP/s (best {gflop / best:.1f}, worst {gflop / worst:.1f})")


if __name__ == "__main__":
    main()
