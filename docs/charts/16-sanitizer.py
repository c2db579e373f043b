"""Chapter 16: what each compute-sanitizer tool reports for the broken and the fixed kernels of `broken_kernel`.

Reads `nvidia-h200/guide/sanitizer-broken.txt` (memcheck on the bounds bug and on `--fixed`, racecheck's default
report on the race), `nvidia-h200/guide/sanitizer-racecheck.txt` (synccheck on the race) and
`nvidia-h200/guide/sanitizer-racecheck-fixed.txt` (racecheck's hazard report on the race and on `--fixed`): for each
run, the errors of its `ERROR SUMMARY` or `RACECHECK SUMMARY` line, the warnings racecheck counts beside them, and the
run's exit status, and plots the errors on a logarithmic axis, writing 0 where there is no bar.
"""

from __future__ import annotations

import re
from typing import List, Tuple

import matplotlib.pyplot as plt

import _chart

GUIDE = "nvidia-h200/guide"
BROKEN = f"{GUIDE}/sanitizer-broken.txt"
RACECHECK = f"{GUIDE}/sanitizer-racecheck.txt"
HAZARDS = f"{GUIDE}/sanitizer-racecheck-fixed.txt"

# (label, file, command as the file writes it after `$ `), the broken kernels first, then the fixed ones.
RUNS = [
    ("memcheck, bounds bug", BROKEN, "compute-sanitizer --tool memcheck broken_kernel bounds"),
    ("racecheck, hazard report,\nrace", HAZARDS,
     "compute-sanitizer --tool racecheck --racecheck-report hazard broken_kernel race"),
    ("racecheck, default report,\nrace", BROKEN, "compute-sanitizer --tool racecheck broken_kernel race"),
    ("synccheck, race", RACECHECK, "compute-sanitizer --tool synccheck broken_kernel race"),
    ("memcheck, --fixed", BROKEN, "compute-sanitizer --tool memcheck broken_kernel --fixed"),
    ("racecheck, hazard report,\nrace --fixed", HAZARDS,
     "compute-sanitizer --tool racecheck --racecheck-report hazard broken_kernel race --fixed"),
]
FIXED_FROM = 4


def summary(text: str, command: str) -> Tuple[int, str]:
    """The errors the first block of `command` reports, and its summary as written after the errors' count (`errors`,
    or `errors, 15616 warnings`) with the run's exit status."""
    block = next(b for b in re.split(r"^(?=\$ )", text, flags=re.M) if b.startswith(f"$ {command}\n"))
    exit_status = re.search(r"^\(exit (\d+)\)$", block, flags=re.M).group(1)  # type: ignore[union-attr]
    race = re.search(r"RACECHECK SUMMARY: \d+ hazards displayed \((\d+) errors, (\d+) warnings\)", block)
    if race:
        return int(race.group(1)), f"errors, {race.group(2)} warnings (exit {exit_status})"
    errors = re.search(r"ERROR SUMMARY: (\d+) errors?", block).group(1)  # type: ignore[union-attr]
    return int(errors), f"errors (exit {exit_status})"


labels: List[str] = []
counts: List[int] = []
notes: List[str] = []
for label, source, command in RUNS:
    errors, note = summary(_chart.read(source), command)
    labels.append(label)
    counts.append(errors)
    notes.append(note)

figure, ax = plt.subplots()
ax.set_xscale("log")
low, high = 0.5, max(counts) * 2000
ax.set_xlim(low, high)
ys = list(range(len(RUNS)))
ax.barh(ys, [c - low if c > 0 else 0 for c in counts], left=low, color=_chart.COLOURS["cuda"])
for y, count, note in zip(ys, counts, notes):
    ax.text(max(count, low), y, f" {count} {note}", va="center", fontsize=9)
ax.set_yticks(ys)
ax.set_yticklabels(labels)
ax.invert_yaxis()
ax.axhline(FIXED_FROM - 0.5, color="#555555", linewidth=0.8)
ax.text(high, FIXED_FROM - 0.6, "broken kernels ", ha="right", va="bottom", fontsize=9, color="#555555")
ax.text(high, FIXED_FROM - 0.4, "fixed kernels ", ha="right", va="top", fontsize=9, color="#555555")
ax.set_xticks([10 ** e for e in range(len(str(max(counts))) + 1)])
ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:g}"))
ax.set_xlabel("errors in the tool's summary line (logarithmic; a run with 0 has no bar)")
figure.suptitle(
    "memcheck catches the bounds bug, and racecheck's hazard report the race;\n"
    "racecheck's default report and synccheck count 0 errors, as the tools do on the fixed kernels",
    fontsize=12,
)
_chart.save(figure, "16-sanitizer", f"{BROKEN}, {RACECHECK[len(GUIDE) + 1:]} and {HAZARDS[len(GUIDE) + 1:]}")
