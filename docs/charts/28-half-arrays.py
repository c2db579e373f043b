"""Chapter 28: expressions at 2^26 on f32, bf16 and f16 arrays, kernel time with the data resident, CUDA and Vulkan.

Reads the first section of `nvidia-h200/half/half-goals-17.txt` (`== gpuworthy at 2^26`): one `run` table per
expression, dtype and backend, whose kernel column is the fourth time of its row.
"""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

import matplotlib.pyplot as plt

import _chart

SOURCE = "nvidia-h200/half/half-goals-17.txt"
DTYPES = [("f32", _chart.COLOURS["cpu"]), ("bf16", _chart.COLOURS["cuda"]), ("f16", _chart.COLOURS["wgpu"])]
BACKENDS = [("cuda", "CUDA"), ("wgpu", "Vulkan (wgpu)")]


def short(expression: str) -> str:
    """A label that fits under a bar: the Horner polynomial by its name, the others as written."""
    return "degree-7 polynomial (Horner)" if expression.startswith("y = ((((") else expression


kernels: Dict[Tuple[str, str, str], float] = {}
expressions: List[str] = []
head = None
for line in _chart.read(SOURCE).splitlines():
    if line.startswith("== ") and "at 2^26" not in line:
        if kernels:
            break
        continue
    match = re.match(r"`(.+)`(?: on (\w+) arrays)? at (\d+) on (\w+) ", line)
    if match:
        expression, dtype, _, backend = match.groups()
        head = (expression, dtype or "f32", backend)
        if expression not in expressions:
            expressions.append(expression)
        continue
    if head and line.strip().startswith("generated"):
        kernels[head] = _chart.times_in(line)[3] * 1e6  # compile, first, upload, kernel, ...
        head = None

figure, axes = plt.subplots(1, 2, sharey=True, figsize=(11, 5.6))
width = 0.26
for ax, (backend, title) in zip(axes, BACKENDS):
    for k, (dtype, colour) in enumerate(DTYPES):
        ys = [i + (k - 1) * width for i in range(len(expressions))]
        values = [kernels[(e, dtype, backend)] for e in expressions]
        ax.barh(ys, values, width, color=colour, label=f"{dtype} arrays")
        for y, v in zip(ys, values):
            ax.text(v, y, f" {v:.3g}", va="center", fontsize=8)
    ax.set_yticks(range(len(expressions)), [short(e) for e in expressions])
    ax.invert_yaxis()
    ax.set_title(title, fontsize=10, loc="left")
    ax.set_xlabel("kernel time at 2^26 elements (µs, data resident)")
    ax.set_xlim(0, max(kernels.values()) * 1.2)
axes[1].legend(loc="lower right")
figure.suptitle(
    "Expressions on an H200 at 2^26: 16-bit arrays take about half the f32 kernel time\n"
    "where memory bounds the kernel, exp·sin too; Vulkan's reduction, with its finish, gains less",
    fontsize=12,
)
_chart.save(figure, "28-half-arrays", SOURCE)
