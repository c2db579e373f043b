"""What fusing saxpy's multiply and add changes: chapter 2's rounding prediction measured.

For 2^24 elements x, y uniform in [-1, 1) (seed 1) and a = 2.5, as the saxpy workload generates them, it computes
`a*x + y` two ways in float32: separately (the product rounded to float32, then the sum rounded again: two roundings,
as the CPU backend's `scalar` variant does) and fused (the exact product added to y and rounded once, as a fused
multiply-add does: computed here as a float64 sum of the exact float64 product, rounded once to float32). It counts
the elements where the two differ, by how many units in the last place (ulp) of the fused result, and compares each
with the float64 reference the check uses and its bound (1e-6 absolute plus 1e-6 relative,
`core/src/workloads/saxpy.rs`). Runs on any machine with NumPy:

    python3 bench-suite/peers/saxpy_fma.py
"""

import numpy as np


def main():
    n, a = 1 << 24, np.float32(2.5)
    rng = np.random.default_rng(1)
    x = rng.uniform(-1.0, 1.0, n).astype(np.float32)
    y = rng.uniform(-1.0, 1.0, n).astype(np.float32)
    separate = (a * x) + y  # float32 throughout: two roundings
    reference = np.float64(a) * x.astype(np.float64) + y.astype(np.float64)  # the check's float64 reference
    fused = reference.astype(np.float32)  # the product is exact in float64 (24 + 3 bits); one rounding to float32
    ulp = np.spacing(np.abs(fused)).astype(np.float64)
    apart = np.abs(separate.astype(np.float64) - fused.astype(np.float64)) / ulp
    bound = 1e-6 + 1e-6 * np.abs(reference)
    print(f"# NumPy {np.__version__}; saxpy a*x + y, a = 2.5, x and y uniform in [-1, 1), n = 2^24 = {n}")
    print(f"{'two roundings against one':<40} {'elements':>10} {'share':>8}")
    for label, mask in (
        ("equal", apart == 0),
        ("1 ulp apart", apart == 1),
        ("2 or more ulp apart", apart >= 2),
    ):
        print(f"{label:<40} {int(mask.sum()):>10} {100 * mask.mean():7.2f}%")
    print(f"largest difference: {apart.max():.0f} ulp, {np.abs(separate - fused).max():.3e} absolute")
    for name, value in (("separate", separate), ("fused", fused)):
        error = np.abs(value.astype(np.float64) - reference)
        print(f"{name:>8} against the float64 reference: largest error {error.max():.3e}, "
              f"{(error / bound).max():.3f} of the check's bound")


if __name__ == "__main__":
    main()
