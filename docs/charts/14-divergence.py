"""Chapter 14: divergence, measured.

mandelbrot 1024x1024 (1000 iterations at most), the iteration rate (GFLOP/s: 8 flops per iteration a pixel actually
took) on the set's boundary as a share of the rate inside it, both rates written beside the bar, for CUDA's and wgpu's
`naive` (`nvidia-h200/guide/divergence-gpu.txt`) and the CPU's `simd` and `scalar`
(`nvidia-h200/guide/divergence-cpu.txt`). Chapter 7 draws the same file's histogram runs (`07-skewed.py`).
"""

from __future__ import annotations

import matplotlib.pyplot as plt

import _chart
from _divergence_runs import CPU, GPU, mandelbrot

figure, left = plt.subplots(figsize=(7.5, 4.2))
runs = [("cuda", "naive"), ("wgpu", "naive"), ("cpu", "simd"), ("cpu", "scalar")]
rates = [(mandelbrot(b, v, "inside"), mandelbrot(b, v, "boundary")) for b, v in runs]
shares = [float(boundary) / float(inside) for inside, boundary in rates]
left.barh([f"{b} {v}" for b, v in runs], shares, color=[_chart.COLOURS[b] for b, _ in runs])
left.invert_yaxis()
for y, (share, (inside, boundary)) in enumerate(zip(shares, rates)):
    left.text(max(share, 1.0) + 0.02, y, f"{boundary} on the boundary\n{inside} inside", va="center", fontsize=8)
left.axvline(1.0, color="#555555", linestyle=":")
left.set_xlim(0, 1.6)
left.set_xlabel("iteration rate on the boundary, as a share of the rate inside the set")
left.set_title("mandelbrot 1024x1024, 1000 iterations at most (GFLOP/s)", fontsize=10, loc="left")

figure.suptitle(
    "Lanes that leave a loop at different times lower the iteration rate of warps and SIMD lanes,\n"
    "not of a scalar loop",
    fontsize=11,
)
_chart.save(figure, "14-divergence", f"{GPU} and docs/results/{CPU}")
