"""Chapter 14: divergence and contention, measured.

Left: mandelbrot 1024x1024 (1000 iterations at most), the iteration rate (GFLOP/s: 8 flops per iteration a pixel
actually took) on the set's boundary as a share of the rate inside it, both rates written beside the bar, for CUDA's
and wgpu's `naive` (`nvidia-h200/guide/divergence-gpu.txt`) and the CPU's `simd` and `scalar`
(`nvidia-h200/guide/divergence-cpu.txt`). Right: histogram 2^24 into 256 bins, the
kernel time with uniform values and with 90% of them in one bin, for the `global` and `private` kernels of CUDA and
wgpu (`divergence-gpu.txt`).
"""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

import matplotlib.pyplot as plt

import _chart

GPU = "nvidia-h200/guide/divergence-gpu.txt"
CPU = "nvidia-h200/guide/divergence-cpu.txt"


def rows(text: str, command: str) -> Dict[str, List[str]]:
    """The rows the block of `command` prints, by variant: its columns as written (compile ... GFLOP/s, check)."""
    block = next(b for b in re.split(r"\n(?=\$ )", text) if b.startswith(f"$ {command}\n"))
    found = {}
    for line in block.splitlines()[1:]:
        if len(_chart.times_in(line)) >= 6:
            variant, *columns = re.split(r"\s{2,}", line.strip())
            found[variant] = columns
    return found


def mandelbrot(backend: str, variant: str, region: str) -> str:
    """GFLOP/s of one region's run, as written."""
    text = _chart.read(CPU if backend == "cpu" else GPU)
    chosen = "" if backend == "cpu" else " --variant naive"
    command = f"gpuworthy run mandelbrot --size 1024 --region {region} --max-iter 1000 --backend {backend}{chosen} --quick"
    return rows(text, command)[variant][7]


def histogram(backend: str, variant: str, distribution: str) -> str:
    """The kernel median of one distribution's run, as written (`4.33 ms`)."""
    command = f"gpuworthy run histogram --size 2^24 --distribution {distribution} --backend {backend} --quick"
    return rows(_chart.read(GPU), command)[variant][3].split(" ±")[0]


def pairs(ax: "plt.Axes", labels: List[str], written: List[Tuple[str, str]], names: Tuple[str, str], unit: str,
          value) -> None:
    """Two horizontal bars per label, of `value(text)`, with the texts as the files write them at their ends."""
    height = 0.38
    for side, (name, colour) in enumerate(zip(names, ("#1f77b4", "#ff7f0e"))):
        ys = [i + side * height for i in range(len(labels))]
        texts = [w[side] for w in written]
        xs = [value(t) for t in texts]
        ax.barh(ys, xs, height=height, color=colour, label=name)
        for y, x, t in zip(ys, xs, texts):
            ax.text(x, y, f" {t}", va="center", fontsize=8)
    ax.set_yticks([i + height / 2 for i in range(len(labels))])
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(right=ax.get_xlim()[1] * 6)
    ax.set_xlabel(unit)
    ax.legend(fontsize=8, loc="lower right")


figure, (left, right) = plt.subplots(1, 2, figsize=(12, 5.2))

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

kernels = [("cuda", "global"), ("cuda", "private"), ("wgpu", "global"), ("wgpu", "private")]
pairs(
    right,
    [f"{b} {v}" for b, v in kernels],
    [(histogram(b, v, "uniform"), histogram(b, v, "skewed")) for b, v in kernels],
    ("uniform values", "skewed: 90% in one bin"),
    "kernel time (µs, logarithmic)",
    lambda t: _chart.seconds(t) * 1e6,
)
right.set_title("histogram 2^24, 256 bins", fontsize=10, loc="left")

figure.suptitle(
    "Lanes that leave a loop at different times lower the iteration rate of warps and SIMD lanes, not of a scalar loop;\n"
    "atomics that hit one counter slow the global histogram, not the privatised one",
    fontsize=11,
)
_chart.save(figure, "14-divergence", f"{GPU} and docs/results/{CPU}")
