"""Chapter 26: square 2^26 from the host on one GPU, on two GPUs, and on the CPU beside a GPU.

Reads the two-H200 host's group runs (`nvidia-h200-x2/groups/groups-runs.txt`, the groups' first build) and the
one-H200 host's `cpu+cuda` run (`nvidia-h200/groups/cpu-plus-cuda.txt`, a later build). For each group it plots the
fastest GPU alone on the whole input, the members running their parts at once, and the whole group, the host's
copies included.
"""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

import matplotlib.pyplot as plt

import _chart

TWO_GPUS = "nvidia-h200-x2/groups/groups-runs.txt"
ONE_GPU = "nvidia-h200/groups/cpu-plus-cuda.txt"
SIZE = "67108864"  # square 2^26, the size both files measure


def groups(text: str) -> Dict[str, Dict[str, object]]:
    """Each `square 2^26 on the group G` block: its members' times alone, the members at once, the whole group."""
    found: Dict[str, Dict[str, object]] = {}
    current = None
    for line in text.splitlines():
        head = re.match(rf"square {SIZE} on the group (\S+) \(", line)
        if head:
            current = {"alone": []}
            found[head.group(1)] = current
            continue
        if current is None:
            continue
        member = re.match(r"\s+(cpu|cuda\S*)\s+[0-9.]+%\s", line)
        if member:
            times = _chart.times_in(line)
            current["alone"].append((member.group(1), times[-1]))  # type: ignore[union-attr]
        group = re.match(r"\s+group: (.*)", line)
        if group:
            current["group"] = _chart.seconds(group.group(1))
            current["members"] = _chart.seconds(re.search(r"the members at once (.*)", line).group(1))  # type: ignore[union-attr]
            current["cuts_inside"] = "of which cutting" in line  # later builds cut each part on its member's thread
            current = None
    return found


def gpu_alone(block: Dict[str, object]) -> float:
    """The fastest GPU member alone on the whole input."""
    return min(t for name, t in block["alone"] if name.startswith("cuda"))  # type: ignore[union-attr]


def rows(label: str, block: Dict[str, object]) -> List[Tuple[str, float, str]]:
    """A group's two bars: its members running their parts at once, and the whole group."""
    inside = " (cuts included)" if block["cuts_inside"] else ""
    return [
        (f"{label}: the members at once{inside}", block["members"], _chart.COLOURS["other"]),  # type: ignore[list-item]
        (f"{label}: the whole group", block["group"], _chart.COLOURS["torch"]),  # type: ignore[list-item]
    ]


two = groups(_chart.read(TWO_GPUS))
one = groups(_chart.read(ONE_GPU))
pair, cpu_gpu = two["cuda+cuda"], two["cpu+cuda"]
one_cpu_gpu = next(iter(one.values()))

panels = [
    (
        "two H200s of one host (the groups' first build)",
        [("one H200 alone", gpu_alone(pair), _chart.COLOURS["cuda"])]
        + rows("two H200s", pair)
        + rows("CPU + one H200", cpu_gpu),
    ),
    (
        "one H200 and its host's 16 threads (a later build)",
        [("one H200 alone", gpu_alone(one_cpu_gpu), _chart.COLOURS["cuda"])]
        + rows("CPU + H200", one_cpu_gpu),
    ),
]

figure, axes = plt.subplots(
    2, 1, sharex=True, gridspec_kw={"height_ratios": [len(p[1]) for p in panels]}, figsize=(9, 5.6)
)
for ax, (title, bars) in zip(axes, panels):
    _chart.bars(ax, [b[0] for b in bars], [b[1] * 1e3 for b in bars], [b[2] for b in bars], "ms")
    ax.set_title(title, fontsize=10, loc="left")
longest = max(b[1] for _, bars in panels for b in bars) * 1e3
axes[0].set_xlim(0, longest * 1.15)
axes[0].set_xlabel("")
axes[1].set_xlabel("time for square 2^26 from the host (ms)")
figure.suptitle(
    "square 2^26 from the host: two GPUs run their halves sooner than one GPU its whole,\n"
    "but the host's cut and join make every group slower than one GPU alone",
    fontsize=12,
)
_chart.save(figure, "26-device-groups", f"{TWO_GPUS} and docs/results/{ONE_GPU}")
