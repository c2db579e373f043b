"""The numbers that decide: the inequality, drawn. For a memory-bound workload (square of 2^24 floats) and a
compute-bound one (matmul at 2048), the CPU's pass beside the GPU's run from the host (upload, kernel, download, one
after another) and with the data resident (the kernel alone), as run 2 of the H200 baseline measured each phase.

Reads `nvidia-h200/baseline/run-2/sweep.csv`: the `upload_s`, `kernel_s` and `download_s` columns of CPU `simd` and
CUDA `vec4` for square, CPU `blocked` and CUDA `cublas` for matmul.
"""

from __future__ import annotations

import csv
import io
from typing import Dict

import matplotlib.pyplot as plt

import _chart

SOURCE = "nvidia-h200/baseline/run-2/sweep.csv"


def phases(rows: list, workload: str, size: str, backend: str, variant: str) -> Dict[str, float]:
    """The upload, kernel and download seconds of one record."""
    row = next(
        r for r in rows if (r["workload"], r["size"], r["backend"], r["variant"]) == (workload, size, backend, variant)
    )
    return {phase: float(row[f"{phase}_s"] or 0.0) for phase in ("upload", "kernel", "download")}


text = _chart.read(SOURCE)
rows = list(csv.DictReader(io.StringIO("\n".join(l for l in text.splitlines() if not l.startswith("#")))))
cases = [
    ("square 2^24: memory-bound", "square", "16777216", ("cpu", "simd"), ("cuda", "vec4")),
    ("matmul 2048x2048x2048: compute-bound", "matmul", "2048x2048x2048", ("cpu", "blocked"), ("cuda", "cublas")),
]
figure, axes = plt.subplots(1, 2, figsize=(11, 3.6))
colours = {"upload": "#bcbd22", "kernel": _chart.COLOURS["cuda"], "download": "#17becf"}
for ax, (title, workload, size, cpu, gpu) in zip(axes, cases):
    cpu_pass = phases(rows, workload, size, *cpu)["kernel"]
    run = phases(rows, workload, size, *gpu)
    labels = ["the CPU's pass", "GPU, from the host", "GPU, data resident"]
    ax.barh(labels[0], cpu_pass * 1e3, color=_chart.COLOURS["cpu"])
    left = 0.0
    for phase in ("upload", "kernel", "download"):
        ax.barh(labels[1], run[phase] * 1e3, left=left, color=colours[phase], label=phase)
        left += run[phase] * 1e3
    ax.barh(labels[2], run["kernel"] * 1e3, color=colours["kernel"])
    for y, value in enumerate([cpu_pass * 1e3, left, run["kernel"] * 1e3]):
        ax.text(value, y, f" {value:.3g} ms", va="center", fontsize=9)
    ax.invert_yaxis()
    ax.set_xlim(0, max(cpu_pass * 1e3, left) * 1.3)
    ax.set_xlabel("ms")
    ax.set_title(title, fontsize=10, loc="left")
axes[0].legend(loc="lower right", fontsize=8)
figure.suptitle(
    "upload + launch + kernel + download against the CPU's pass, on one H200 machine: memory-bound work wins only\n"
    "resident, compute-bound work wins either way",
    fontsize=11,
)
_chart.save(figure, "00-the-inequality", SOURCE)
