"""Chapter 2: saxpy against square at 2^26 on an H200, the `vec4` kernel of each through CUDA and WGSL, with the data
resident. Saxpy moves 12 bytes an element (reads x and y, writes y) where square moves 8: the prediction is 1.5 times
square's time, and the measured ratio is written beside each pair.

Reads the first `square 67108864 on cuda|wgpu` and `saxpy 67108864 on cuda|wgpu` blocks of
`nvidia-h200/guide/variants-2.txt`: the `vec4` row's kernel median, as written.
"""

from __future__ import annotations

import re

import matplotlib.pyplot as plt

import _chart

SOURCE = "nvidia-h200/guide/variants-2.txt"


def kernel_us(text: str, workload: str, backend: str) -> float:
    """The `vec4` row's kernel median in µs, of the first `workload 67108864 on backend` block."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{workload} 67108864 on {backend}"))
    row = next(line for line in lines[start + 2 :] if line.split()[0] == "vec4")
    # compile, first call, upload, kernel, ...: the spreads (±N%) are not times.
    return _chart.times_in(re.sub(r"±[0-9]+%", "", row))[3] * 1e6


text = _chart.read(SOURCE)
backends = ["cuda", "wgpu"]
square = [kernel_us(text, "square", b) for b in backends]
saxpy = [kernel_us(text, "saxpy", b) for b in backends]
figure, ax = plt.subplots(figsize=(11, 3.2))
_chart.grouped_bars(ax, len(backends), [("square: 8 bytes an element", square, "#1f77b4"), ("saxpy: 12 bytes an element", saxpy, "#ff7f0e")], "µs")
ax.set_yticks(range(len(backends)))
ax.set_yticklabels([f"{b} vec4" for b in backends])
ax.invert_yaxis()
ax.set_xlim(0, max(saxpy) * 1.9)
for y, (a, b) in enumerate(zip(square, saxpy)):
    ax.text(max(saxpy) * 1.28, y, f"saxpy / square = {b / a:.2f}\n(bytes: 12 / 8 = 1.50)", va="center", fontsize=9)
ax.set_xlabel("kernel time at 2^26 elements, data resident (µs)")
ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
ax.set_title("saxpy costs its bytes: about 1.5 times square's time, not 2 (its extra multiply is free)", fontsize=10, loc="left")
_chart.save(figure, "02-against-square", SOURCE)
