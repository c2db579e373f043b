"""Chapter 5: the CUDA SGEMM ladder at 4096x4096x4096 on an H200, GFLOP/s of each rung beside cuBLAS.

Each rung is read from the run the chapter's ladder table cites for it: `naive` and `tiled` from the CUDA matmul table
of `nvidia-h200/variants-and-torch.txt`; `register`, `warptile`, `prefetch` and `cublas` from run 11 of
`nvidia-h200/sgemm-ladder.txt`, `splitk` from its run 13. Each bar is labelled with its share of cuBLAS's rate in the
same run, as the chapter's table gives it. `tf32` (cuBLAS on the tensor cores, reduced precision) is left out: its
bar, several times cuBLAS's, would flatten the rest.
"""

from __future__ import annotations

import re
from typing import Dict, Tuple

import matplotlib.pyplot as plt

import _chart

VARIANTS_FILE = "nvidia-h200/variants-and-torch.txt"
LADDER_FILE = "nvidia-h200/sgemm-ladder.txt"
SIZE = "4096x4096x4096"
# (rung, file, run of that file that measured it: None for a file of one run)
RUNGS = [
    ("naive", VARIANTS_FILE, None),
    ("tiled", VARIANTS_FILE, None),
    ("register", LADDER_FILE, "11"),
    ("warptile", LADDER_FILE, "11"),
    ("prefetch", LADDER_FILE, "11"),
    ("splitk", LADDER_FILE, "13"),
]
REFERENCE = ("cublas", LADDER_FILE, "11")

Key = Tuple[str, str, str]  # (run, size, variant)


def cuda_matmul_rates(text: str) -> Dict[Key, float]:
    """GFLOP/s of every CUDA matmul row of a file of `gpuworthy run` outputs, by run heading, size and variant."""
    rates: Dict[Key, float] = {}
    run, workload, size, backend = "", "", "", ""
    for line in text.splitlines():
        heading = re.match(r"#+ [Rr]un (\d+)\b", line)
        if heading:
            run = heading.group(1)
            continue
        command = re.match(r"\$ gpuworthy run (\w+) --size (\S+) --backend (\w+)", line)
        title = re.match(r"(\w+) (\S+) on (\w+) \(", line)
        if command or title:
            workload, size, backend = (command or title).groups()  # type: ignore[union-attr]
            continue
        row = re.match(r"\s+([a-z0-9_]+)(?: \(reduced precision\))?\s+[0-9].*\s([0-9.]+)\s+([0-9.]+)\s+(?:ok|not checked)", line)
        if row and workload == "matmul" and backend == "cuda":
            rates[(run, size, row.group(1))] = float(row.group(3))
    return rates


texts = {name: cuda_matmul_rates(_chart.read(name)) for name in (VARIANTS_FILE, LADDER_FILE)}


def rate(variant: str, source: str, run: str | None) -> float:
    return texts[source][(run or "", SIZE, variant)]


def cublas_beside(source: str, run: str | None) -> float:
    """cuBLAS's rate in the same run as a rung."""
    return rate("cublas", source, run)


labels = [name for name, _, _ in RUNGS] + [REFERENCE[0]]
values = [rate(*r) for r in RUNGS] + [rate(*REFERENCE)]
shares = [rate(*r) / cublas_beside(r[1], r[2]) for r in RUNGS] + [1.0]
colours = [_chart.COLOURS["cuda"]] * len(RUNGS) + [_chart.COLOURS["torch"]]

figure, ax = plt.subplots()
ax.barh(labels, values, color=colours)
ax.invert_yaxis()
for y, (v, s) in enumerate(zip(values, shares)):
    ax.text(v, y, f" {v:.1f} GFLOP/s, {s:.2f}x cuBLAS", va="center", fontsize=9)
ax.axvline(values[-1], color=_chart.COLOURS["torch"], linestyle="--", linewidth=1)
ax.set_xlim(0, values[-1] * 1.45)
ax.set_xlabel("GFLOP/s (kernel, data resident; share of cuBLAS's rate in the same run)")
ax.set_ylabel("CUDA variant, one idea added per rung")
ax.set_title(
    "SGEMM 4096x4096x4096 on an H200: registers are the big step;\n"
    "the last rungs come within a tenth of cuBLAS",
    fontsize=11,
)
_chart.save(figure, "05-matmul-ladder", f"{LADDER_FILE} (runs 11, 13), {VARIANTS_FILE}")
