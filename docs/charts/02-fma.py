"""Chapter 2: what fusing saxpy's multiply and add changes. For 2^24 elements, the share whose float32 result is the
same with two roundings (multiply, then add) as with one (a fused multiply-add), one unit in the last place apart, or
more. Reads `cpu-2-core-lavapipe/guide/saxpy-fma.txt` (`bench-suite/peers/saxpy_fma.py`)."""

from __future__ import annotations

import re

import matplotlib.pyplot as plt

import _chart

SOURCE = "cpu-2-core-lavapipe/guide/saxpy-fma.txt"

text = _chart.read(SOURCE)
rows = re.findall(r"^(equal|1 ulp apart|2 or more ulp apart)\s+(\d+)\s+([0-9.]+)%$", text, re.M)
largest = re.search(r"^largest difference: .*, (\S+) absolute$", text, re.M).group(1)  # type: ignore[union-attr]
figure, ax = plt.subplots(figsize=(9, 2.8))
_chart.bars(ax, [label for label, _, _ in rows], [float(share) for _, _, share in rows],
            ["#2ca02c", "#bcbd22", "#ff7f0e"], "%", digits=".2f")
ax.set_xlim(0, 100)
ax.set_xlabel("share of the 2^24 elements (%)")
ax.set_title(f"saxpy in float32, two roundings against one: the largest difference {largest}, within the check's bound",
             fontsize=10, loc="left")
_chart.save(figure, "02-fma", SOURCE)
