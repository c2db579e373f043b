"""Chapter 20: what criterion calls a change. A second run of the short suite against the first on the H200: for each
`kernel` benchmark, criterion's estimate of the change in time (the median, with its 95% interval as a bar) and its
verdict, from the `change:` blocks of `nvidia-h200/criterion-pipelined.txt`. A change is reported when its interval
leaves zero (p < 0.05); inside the noise threshold (±2% by default) it is called noise.
"""

from __future__ import annotations

import re
from typing import List, Tuple

import matplotlib.pyplot as plt

import _chart

SOURCE = "nvidia-h200/criterion-pipelined.txt"
VERDICTS = {
    "Performance has improved.": ("improved", "#2ca02c"),
    "Performance has regressed.": ("regressed", "#d62728"),
    "No change in performance detected.": ("no change (p > 0.05)", "#7f7f7f"),
    "Change within noise threshold.": ("within the noise threshold", "#bcbd22"),
}


def percent(text: str) -> float:
    return float(text.replace("−", "-").rstrip("%"))


changes: List[Tuple[str, float, float, float, str]] = []  # name, low, median, high, verdict
pattern = re.compile(
    r"^(\S+/kernel/\S+)\n\s+time:.*\n\s+thrpt:.*\n\s+change:\n\s+time:\s+\[(\S+) (\S+) (\S+)\] \(p = [^)]*\)\n.*\n\s+(.+)$",
    re.M,
)
for name, low, mid, high, verdict in pattern.findall(_chart.read(SOURCE)):
    changes.append((name.replace("/kernel/", " "), percent(low), percent(mid), percent(high), verdict.strip()))

figure, ax = plt.subplots(figsize=(10, 1.2 + 0.32 * len(changes)))
shown = set()
for y, (name, low, mid, high, verdict) in enumerate(changes):
    label, colour = VERDICTS[verdict]
    ax.errorbar(mid, y, xerr=[[mid - low], [high - mid]], fmt="o", color=colour, capsize=3,
                label=None if label in shown else label)
    shown.add(label)
ax.axvline(0, color="#555555", linewidth=1)
ax.set_yticks(range(len(changes)), [c[0] for c in changes], fontsize=8)
ax.invert_yaxis()
ax.set_xlabel("change in time against the previous run (%, criterion's estimate and 95% interval)")
ax.legend(fontsize=8, loc="lower right")
ax.set_title("square and histogram kernels, second run of the short suite on the H200", fontsize=10, loc="left")
_chart.save(figure, "20-changes", SOURCE)
