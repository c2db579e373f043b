"""The numbers that decide: the launch overhead, drawn. Square's kernel time against its size for the CPU and for
each GPU backend's fastest variant, data resident, as run 2 of the H200 baseline measured it: the GPUs' times stay on
a floor of a few microseconds, their launch, while the CPU's pass grows with the bytes from far below it; the
crossing is where a resident GPU starts to win.

Reads `nvidia-h200/baseline/run-2/sweep.csv`: the `kernel_s` column of square, the fastest variant of each backend at
each size.
"""

from __future__ import annotations

import csv
import io
from typing import Dict, List, Tuple

import matplotlib.pyplot as plt

import _chart

SOURCE = "nvidia-h200/baseline/run-2/sweep.csv"

text = _chart.read(SOURCE)
rows = list(csv.DictReader(io.StringIO("\n".join(l for l in text.splitlines() if not l.startswith("#")))))
best: Dict[str, Dict[int, float]] = {}
for row in rows:
    if row["workload"] != "square" or not row["kernel_s"]:
        continue
    times = best.setdefault(row["backend"], {})
    n = int(row["elements"])
    times[n] = min(times.get(n, float("inf")), float(row["kernel_s"]))

figure, ax = plt.subplots(figsize=(8.0, 4.6))
for backend in ("cpu", "cuda", "wgpu"):
    points: List[Tuple[int, float]] = sorted(best[backend].items())
    ax.plot([n for n, _ in points], [t * 1e6 for _, t in points], "-o", markersize=4, color=_chart.COLOURS[backend],
            label=f"{backend}: fastest kernel, data resident")
ax.set_xscale("log", base=2)
ax.set_yscale("log")
ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda t, _: f"{t:g}"))
ax.set_xlabel("elements (square)")
ax.set_ylabel("kernel time (µs, logarithmic)")
ax.legend(fontsize=9)
figure.suptitle(
    "A GPU kernel costs its launch, a few microseconds, whatever the size, until its bytes take longer;\n"
    "the CPU's pass starts far below and grows with the bytes",
    fontsize=11,
)
_chart.save(figure, "00-launch-floor", SOURCE)
