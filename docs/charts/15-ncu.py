"""Chapter 15: ncu's Speed Of Light for a memory-bound kernel (square `vec4` at 2^24) beside a compute-bound one
(matmul `register` at 2048x2048x2048).

Reads `nvidia-h200/guide/ncu.txt`: for each of its first two profiles, the percentages of the GPU Speed Of Light
Throughput section (memory, DRAM, L1/TEX, L2, compute), and plots them side by side.
"""

from __future__ import annotations

import re
from typing import Dict, List

import matplotlib.pyplot as plt

import _chart

SOURCE = "nvidia-h200/guide/ncu.txt"
KERNELS = ["square_vec4", "matmul_register"]
METRICS = [
    "DRAM Throughput",
    "L2 Cache Throughput",
    "L1/TEX Cache Throughput",
    "Memory Throughput",
    "Compute (SM) Throughput",
]
COLOURS = {"square_vec4": _chart.COLOURS["cuda"], "matmul_register": _chart.COLOURS["other"]}


def speed_of_light(text: str) -> Dict[str, Dict[str, float]]:
    """Each profiled kernel's Speed Of Light percentages, by metric name."""
    found: Dict[str, Dict[str, float]] = {}
    kernel = None
    in_section = False
    for line in text.splitlines():
        head = re.match(r"\s+(\w+) \(\d+, \d+, \d+\)x\(\d+, \d+, \d+\)", line)
        if head:
            kernel = head.group(1)
            found[kernel] = {}
            continue
        if "Section:" in line:
            in_section = kernel is not None and "Speed Of Light" in line
            continue
        if in_section:
            row = re.match(r"\s+(.+?)\s+%\s+([0-9.]+)\s*$", line)
            if row:
                found[kernel][row.group(1)] = float(row.group(2))  # type: ignore[index]
    return found


sol = speed_of_light(_chart.read(SOURCE))
figure, ax = plt.subplots()
height = 0.38
ys: List[float] = list(range(len(METRICS)))
for k, kernel in enumerate(KERNELS):
    values = [sol[kernel][m] for m in METRICS]
    positions = [y + (k - 0.5) * height for y in ys]
    ax.barh(positions, values, height=height, color=COLOURS[kernel], label=kernel)
    for y, v in zip(positions, values):
        ax.text(v, y, f" {v:.2f}%", va="center", fontsize=9)
ax.set_yticks(ys)
ax.set_yticklabels(METRICS)
ax.invert_yaxis()
ax.set_xlim(0, 100)
ax.set_xlabel("% of the unit's peak (ncu Speed Of Light, one profiled launch)")
ax.set_title("square keeps DRAM busy and the SMs idle; matmul the reverse")
ax.legend(["square_vec4, 2^24 (memory-bound)", "matmul_register, 2048³ (compute-bound)"], loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=1, frameon=False)
_chart.save(figure, "15-ncu", SOURCE)
