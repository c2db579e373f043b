"""Chapter 3: how far an f32 sum drifts with the order of its additions, from 2^10 to 2^26 floats in [0, 1): a
sequential running total against NumPy's pairwise sum, each as a relative error against the float64 sum, with the
check's bound (1e-5).

Reads `cpu-2-core-lavapipe/guide/sum-order-by-size.txt` (`python3 bench-suite/peers/sum_order.py`).
"""

from __future__ import annotations

import re
from typing import List, Tuple

import matplotlib.pyplot as plt

import _chart

SOURCE = "cpu-2-core-lavapipe/guide/sum-order-by-size.txt"

rows: List[Tuple[int, float, float]] = []
for line in _chart.read(SOURCE).splitlines():
    match = re.match(r"\s+2\^(\d+)\s+([0-9.e+-]+)\s+([0-9.e+-]+)\s+1e-05", line)
    if match:
        rows.append((1 << int(match.group(1)), float(match.group(2)), float(match.group(3))))
sizes = [n for n, _, _ in rows]
figure, ax = plt.subplots(figsize=(9, 4.6))
ax.plot(sizes, [s for _, s, _ in rows], "o-", color=_chart.COLOURS["wgpu"], label="sequential f32 running total")
ax.plot(sizes, [p for _, _, p in rows], "s-", color=_chart.COLOURS["cuda"], label="pairwise f32 (NumPy's x.sum())")
ax.axhline(1e-5, color="#555555", linestyle="--", linewidth=1, label="the check's bound, 1e-5 relative")
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.set_xlabel("floats summed, uniform in [0, 1)")
ax.set_ylabel("relative error against the float64 sum")
ax.legend(loc="upper left", fontsize=9)
ax.set_title("A running f32 total drifts with n and stops growing at 2^24; pairwise stays near f32's precision",
             fontsize=10, loc="left")
_chart.save(figure, "03-sum-order", SOURCE)
