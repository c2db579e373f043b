"""Chapter 9: where the GPU starts to win, workload by workload, in each of the three baseline sweeps of one H200
machine: the crossover with the data resident and with the data on the host, as `gpuworthy sweep` printed them.

Reads `nvidia-h200/baseline/run-{1,2,3}/sweep.txt`: under each workload's table, the lines `crossover, data resident
on the GPU: SIZE (BACKEND)` and `crossover, data on the host: SIZE (BACKEND...)` or `none in range`. A size with
several dimensions (`64x64x64`) is drawn at the product of its dimensions, the elements (or multiply-adds) it names.
"""

from __future__ import annotations

import math
import re
from typing import Dict, List, Optional, Tuple

import matplotlib.pyplot as plt

import _chart

RUNS = [f"nvidia-h200/baseline/run-{k}/sweep.txt" for k in (1, 2, 3)]
WORKLOADS = ["square", "saxpy", "sum", "softmax", "matmul", "mandelbrot", "histogram", "stencil"]


def size_of(text: str) -> Optional[float]:
    """The product of a printed size's dimensions, or None for `none in range`."""
    match = re.match(r"\s*([0-9]+(?:x[0-9]+)*)", text)
    if not match:
        return None
    return float(math.prod(int(d) for d in match.group(1).split("x")))


def crossovers(text: str) -> Dict[str, Tuple[Optional[float], Optional[float]]]:
    """Each workload's (resident, host) crossover in one sweep's text."""
    found: Dict[str, Tuple[Optional[float], Optional[float]]] = {}
    for section in text.split("\n== ")[1:]:
        name = section.split("\n", 1)[0].strip()
        resident = re.search(r"crossover, data resident on the GPU:\s*(.+)", section)
        host = re.search(r"crossover, data on the host:\s*(.+)", section)
        if name in WORKLOADS and resident and host:
            found[name] = (size_of(resident.group(1)), size_of(host.group(1)))
    return found


runs = [crossovers(_chart.read(path)) for path in RUNS]
figure, ax = plt.subplots(figsize=(9, 5.2))
for row, workload in enumerate(WORKLOADS):
    never: List[int] = []
    for k, run in enumerate(runs):
        resident, host = run.get(workload, (None, None))
        y = row + (k - 1) * 0.18
        if resident:
            ax.plot(resident, y, "o", color=_chart.COLOURS["cuda"], label="data resident" if row == k == 0 else None)
        if host:
            ax.plot(host, y, "s", color=_chart.COLOURS["other"], label="data on the host" if (row, k) == (4, 0) else None)
        else:
            never.append(k + 1)
    if len(never) == len(runs):
        ax.text(2.0e11, row, "from the host: never in range", va="center", fontsize=8, color="#555555")
ax.set_xscale("log", base=2)
ax.set_xlim(2**8, 2**44)
ax.set_yticks(range(len(WORKLOADS)))
ax.set_yticklabels(WORKLOADS)
ax.invert_yaxis()
ax.set_xlabel("size where the GPU starts to win (elements; for a shape, the product of its dimensions)")
ax.legend(loc="lower center", fontsize=9)
ax.set_title("The crossover in three sweeps of one H200 machine (runs 1, 2, 3 from top to bottom in each row)",
             fontsize=10, loc="left")
_chart.save(figure, "09-crossovers-across-runs", "nvidia-h200/baseline/run-{1,2,3}/sweep.txt")
