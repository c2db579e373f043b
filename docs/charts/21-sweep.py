"""Chapter 21: `y = exp(-x*x) * sin(a*x)` swept on the H200 and its host's Xeon, time per run against elements: each
device's kernel with the data resident (thick) and a GPU's whole run from the host (thin), both axes logarithmic,
with the resident crossover marked. Reads the sweep's table in `nvidia-h200/roofline/sweep-expr.txt`, as written.
"""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

import matplotlib.pyplot as plt

import _chart

SOURCE = "nvidia-h200/roofline/sweep-expr.txt"
COLUMNS = [("cpu", "kernel"), ("cuda", "kernel"), ("cuda", "end to end"), ("wgpu", "kernel"), ("wgpu", "end to end")]

text = _chart.read(SOURCE)
lines: Dict[Tuple[str, str], List[Tuple[int, float]]] = {c: [] for c in COLUMNS}
for row in re.findall(r"^(\d+)\s+(.*)$", text, re.M):
    size, rest = int(row[0]), row[1]
    times = _chart.times_in(rest)[: len(COLUMNS)]
    if len(times) == len(COLUMNS):
        for column, seconds in zip(COLUMNS, times):
            lines[column].append((size, seconds))
found = re.search(r"crossover, data resident on the GPU: (\d+) \((\w+)\)", text)
assert found, f"no resident crossover in {SOURCE}"
crossover, crossover_backend = int(found.group(1)), found.group(2)

figure, ax = plt.subplots(figsize=(9, 5.2))
for (backend, phase), points in lines.items():
    sizes, seconds = zip(*points)
    ax.plot(sizes, [s * 1e6 for s in seconds], "-o" if phase == "kernel" else "--", color=_chart.COLOURS[backend],
            linewidth=2.2 if phase == "kernel" else 1.0, markersize=3, label=f"{backend} {phase}")
ax.axvline(crossover, color="#555555", linestyle=":", linewidth=1)
ax.text(crossover * 1.1, 0.97, f"resident crossover: {crossover} ({crossover_backend})", transform=ax.get_xaxis_transform(),
        va="top", fontsize=8)
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel("elements")
ax.set_ylabel("time per run (µs)")
ax.legend(fontsize=8)
ax.set_title("y = exp(-x*x) * sin(3*x) on the H200 and its 16-thread Xeon: from the host, the CPU wins at every size",
             fontsize=10, loc="left")
_chart.save(figure, "21-sweep", SOURCE)
