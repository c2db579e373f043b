"""Chapter 27: what each precision buys and what it costs, matmul 8192x8192x8192 on an H200 through cuBLAS (PyTorch):
the rate against the relative error of the product, one point per precision.

Reads the PyTorch section of `nvidia-h200/precision/precision-8192-fragments.txt` (the lines after `matmul 8192^3,
cuBLAS through torch`): each precision's TFLOP/s and its `rho`, the root-mean-square error of the whole product
relative to its products' norms, against an f64 product of the same f32 inputs.
"""

from __future__ import annotations

import re
from typing import List, Tuple

import matplotlib.pyplot as plt

import _chart

SOURCE = "nvidia-h200/precision/precision-8192-fragments.txt"

points: List[Tuple[str, float, float]] = []
reading = False
for line in _chart.read(SOURCE).splitlines():
    if line.startswith("matmul 8192^3, cuBLAS through torch"):
        reading = True
        continue
    match = re.match(r"\s+(fp32|tf32|bf16|fp16)\b.*?([\d.]+) TFLOP/s .*rho ([\d.e+-]+)", line)
    if reading and match:
        points.append((match.group(1), float(match.group(2)), float(match.group(3))))
    elif reading and points and not line.strip():
        break
assert [p for p, _, _ in points] == ["fp32", "tf32", "bf16", "fp16"], points

figure, ax = plt.subplots()
for precision, rate, rho in points:
    ax.scatter([rho], [rate], s=60, color=_chart.COLOURS["torch" if precision == "fp32" else "cuda"], zorder=3)
    # fp16 and tf32 sit left of bf16 at about its rate: their labels go to the left of their points.
    left = precision in ("fp16", "tf32")
    ax.annotate(f"{precision}\n{rate:.0f} TFLOP/s, rho {rho:.1e}", (rho, rate), textcoords="offset points",
                xytext=(-8, -4) if left else (8, -4), ha="right" if left else "left", fontsize=9)
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlim(min(r for _, _, r in points) / 3, max(r for _, _, r in points) * 30)
ax.set_ylim(min(t for _, t, _ in points) / 1.5, max(t for _, t, _ in points) * 2)
ax.set_xlabel("error of the product relative to its products' norms (rho)")
ax.set_ylabel("TFLOP/s (cuBLAS through PyTorch, data resident)")
ax.grid(True, which="both", alpha=0.3)
ax.set_title(
    "matmul 8192x8192x8192 on an H200: each step down in precision buys rate and costs error;\n"
    "bf16 runs 15 times as fast as fp32 with 1650 times its error, fp16 nearly as fast with an eighth of bf16's",
    fontsize=11,
)
_chart.save(figure, "27-speed-and-error", SOURCE)
