"""Chapter 27: matmul 8192x8192x8192 on an H200, TFLOP/s of each precision's fastest rung of ours beside cuBLAS in
that precision.

Reads `nvidia-h200/precision/precision-8192-fragments.txt`: the variant rows of its `run` tables (the section headed
`== gpuworthy`), with their precision in brackets (none for fp32) and their GFLOP/s column.
"""

from __future__ import annotations

import re
from typing import Dict, Tuple

import matplotlib.pyplot as plt

import _chart

SOURCE = "nvidia-h200/precision/precision-8192-fragments.txt"
PRECISIONS = ["fp32", "tf32", "bf16", "fp16"]


def is_cublas(variant: str) -> bool:
    """cuBLAS's variants: `cublas`, `cublas-bf16`, `cublas-fp16`, and `tf32` (SGEMM with TF32 tensor-op math)."""
    return variant.startswith("cublas") or variant == "tf32"


rates: Dict[Tuple[str, str], Tuple[str, float]] = {}
section = ""
for line in _chart.read(SOURCE).splitlines():
    if line.startswith("== "):
        section = line
        continue
    if "gpuworthy" not in section:
        continue
    row = re.match(r"\s+([a-z0-9-]+)(?: \((\w+)\))?\s+\S", line)
    if not row or row.group(1) in ("variant", "kernel", "measured"):
        continue
    variant, precision = row.group(1), row.group(2) or "fp32"
    gflops = float(line.split()[-2])
    key = (precision, "cublas" if is_cublas(variant) else "ours")
    # Our fastest rung of each precision (`mma.sync`, Hopper's `wgmma`, and `wgmma` fed by the TMA).
    if key not in rates or rates[key][1] < gflops / 1e3:
        rates[key] = (variant, gflops / 1e3)

figure, ax = plt.subplots()
width = 0.38
for k, (who, label, colour) in enumerate(
    [("ours", "gpuworthy's kernel", _chart.COLOURS["cuda"]), ("cublas", "cuBLAS", _chart.COLOURS["torch"])]
):
    xs = [i + (k - 0.5) * width for i in range(len(PRECISIONS))]
    values = [rates[(p, who)][1] for p in PRECISIONS]
    ax.bar(xs, values, width, color=colour, label=label)
    for x, p, v in zip(xs, PRECISIONS, values):
        ax.text(x, v, f"{v:.0f}\n{rates[(p, who)][0]}", ha="center", va="bottom", fontsize=8)
ax.set_xticks(range(len(PRECISIONS)), PRECISIONS)
ax.set_xlabel("precision of the inputs (every sum f32)")
ax.set_ylabel("TFLOP/s (kernel, data resident)")
ax.set_ylim(0, max(v for _, v in rates.values()) * 1.2)
ax.legend(loc="upper left")
ax.set_title(
    "matmul 8192x8192x8192 on an H200: tensor cores multiply the rate in TF32, more in bf16 and fp16;\n"
    "fed by the tensor memory accelerator, our Hopper rung matches cuBLAS in bf16 and fp16, 0.90x in TF32",
    fontsize=11,
)
_chart.save(figure, "27-precision", SOURCE)
