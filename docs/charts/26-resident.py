"""Chapter 26: with the data resident, a second H200 against one, for sum 2^30 (run 8), and matmul
16384x16384x16384 and the stencil at 32768x32768 (run 10): a resident step with its download, on the host's clock.

Reads `nvidia-h200-x2/groups/groups-runs-8.txt` and `groups-runs-10.txt`: the line `resident, a launch with its
download and join on the host's clock: GROUP (the fastest member alone, a launch and its download: ALONE, RATIOx)`
under each command.
"""

from __future__ import annotations

import re
from typing import List, Tuple

import matplotlib.pyplot as plt

import _chart

RUN8 = "nvidia-h200-x2/groups/groups-runs-8.txt"
RUN10 = "nvidia-h200-x2/groups/groups-runs-10.txt"


def step(text: str, command: str) -> Tuple[float, float]:
    """One H200 alone and two, in seconds, for the resident step under the command starting with `command`."""
    block = text.split(f"$ {command}")[1].split("\n$ ")[0]
    match = re.search(
        r"resident, a launch with its download and join on the host's clock: (\S+ \S+) \(the fastest member alone, "
        r"a launch and its download: (\S+ \S+),",
        block,
    )
    assert match, command
    return _chart.seconds(match.group(2)), _chart.seconds(match.group(1))


run8, run10 = _chart.read(RUN8), _chart.read(RUN10)
cases: List[Tuple[str, Tuple[float, float]]] = [
    ("sum 2^30", step(run8, "gpuworthy run sum --size 2^30 --backend cuda:0,1")),
    ("matmul 16384^3", step(run10, "gpuworthy run matmul --size 16384x16384x16384 --backend cuda:0,1")),
    ("stencil 32768^2", step(run10, "gpuworthy run stencil --size 32768x32768 --backend cuda:0,1")),
]
figure, axes = plt.subplots(1, len(cases), figsize=(11, 3.2))
for ax, (name, (alone, two)) in zip(axes, cases):
    unit, scale = ("µs", 1e6) if alone < 1e-2 else ("ms", 1e3)
    _chart.bars(ax, ["one H200", "two H200s"], [alone * scale, two * scale],
                [_chart.COLOURS["cuda"], _chart.COLOURS["other"]], unit)
    ax.set_xlim(0, alone * scale * 1.35)
    ax.set_title(f"{name}: {alone / two:.2f}x", fontsize=10, loc="left")
figure.suptitle("Data resident, a step and its download on the host's clock: a second GPU pays nearly twice", fontsize=11)
_chart.save(figure, "26-resident", f"{RUN8} and docs/results/{RUN10}")
