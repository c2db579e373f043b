"""Chapter 11: what the first call costs beside the steady state.

Reads `nvidia-h200/guide/first-call-2.txt`: square 2^26 on CUDA and softmax 8192x8192 on wgpu, each run with the
spin-up and without it, in two rounds of new processes on a machine whose kernel caches started empty. For each run
it plots the compilation, the first call (upload, launch and download after compiling), the steady end-to-end time
and the steady kernel, on a logarithmic axis. The file's one-launch-at-a-time runs (`--no-sync`) are not drawn.
"""

from __future__ import annotations

import re
from typing import List, Tuple

import matplotlib.pyplot as plt

import _chart

SOURCE = "nvidia-h200/guide/first-call-2.txt"

# The columns of a `gpuworthy run` row, in order, that this chart plots (index into the row's times).
PHASES = [("compile", 0, "#9467bd"), ("first call", 1, "#d62728"), ("steady end to end", 5, "#7f7f7f"),
          ("steady kernel", 3, "#2ca02c")]


def runs(text: str) -> List[Tuple[str, List[float], List[str]]]:
    """Each first-call command's label (workload, size, backend, variant, spin-up, which new process) and the times of
    its one row, in seconds and as the file writes them. Each command of the file ran in a process of its own."""
    found = []
    for block in text.split("\n$ ")[1:]:
        words = block.splitlines()[0].split()
        if "--no-sync" in words:
            continue
        option = lambda name: words[words.index(name) + 1]  # noqa: E731
        label = f"{words[2]} {option('--size')}, {option('--backend')} {option('--variant')}"
        label += ", no spin-up" if "--no-spin-up" in words else ", spin-up"
        label += f", process {len(found) + 1}"
        row = next(
            line for line in block.splitlines()[1:]
            if re.match(rf"\s+{re.escape(option('--variant'))}\s", line) and len(_chart.times_in(line)) >= 6
        )
        written = re.findall(r"[0-9]+(?:\.[0-9]+)? (?:ns|µs|ms|s)\b", row)
        found.append((label, _chart.times_in(row), written))
    return found


measured = runs(_chart.read(SOURCE))
figure, ax = plt.subplots(figsize=(9, 8.4))
height = 0.8 / len(PHASES)
for p, (phase, column, colour) in enumerate(PHASES):
    ys = [i + p * height for i in range(len(measured))]
    values = [times[column] * 1e3 for _, times, _ in measured]
    ax.barh(ys, values, height=height, color=colour, label=phase)
    for y, v, (_, _, written) in zip(ys, values, measured):
        ax.text(v, y, f" {written[column]}", va="center", fontsize=8)
ax.set_yticks([i + 0.4 - height / 2 for i in range(len(measured))])
ax.set_yticklabels([label for label, _, _ in measured])
ax.invert_yaxis()
ax.set_xscale("log")
ax.set_xlim(right=ax.get_xlim()[1] * 3)
ax.set_xlabel("time (ms, logarithmic)")
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=len(PHASES), fontsize=9)
figure.suptitle(
    "The first process compiles in about 100 ms, later ones load from a cache;\n"
    "the steady kernel takes a fraction of a millisecond, with or without the spin-up",
    fontsize=12,
)
_chart.save(figure, "11-first-call", SOURCE)
