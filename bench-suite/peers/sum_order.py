"""How far an f32 sum drifts with the order of its additions, by size: chapter 3's accuracy prediction measured.

For n = 2^10 .. 2^26 uniform floats in [0, 1) (seed 1), the relative error against the float64 sum of a sequential
f32 running total (`np.cumsum(x)[-1]`, one addition after another), of NumPy's pairwise f32 sum (`x.sum()`), and the
check's bound (1e-5, `core/src/workloads/sum.rs`). Runs on any machine with NumPy:

    python3 bench-suite/peers/sum_order.py
"""

import numpy as np


def main():
    print(f"# NumPy {np.__version__}; relative error of an f32 sum against the float64 sum of the same floats")
    print(f"{'n':>10} {'sequential f32':>16} {'pairwise f32':>14}  check bound")
    rng = np.random.default_rng(1)
    x = rng.random(1 << 26, dtype=np.float32)
    for log2 in range(10, 27, 2):
        part = x[: 1 << log2]
        exact = part.sum(dtype=np.float64)
        sequential = float(np.cumsum(part)[-1])
        pairwise = float(part.sum())
        print(f"{'2^' + str(log2):>10} {abs(sequential - exact) / exact:16.2e} {abs(pairwise - exact) / exact:14.2e}  1e-05")


if __name__ == "__main__":
    main()
