"""Chapter 26: square from the host on one H200 and on two, with the arrays page-locked, beside PyTorch and beside
what the host's links carry both ways at once.

Reads `nvidia-h200-x2/groups/groups-runs-5.txt`: gpuworthy's `run square --backend cuda:0,1 --pipelined
--page-locked` (each GPU alone on the whole input and the group), PyTorch's pinned runs pipelined through three
streams per GPU on one GPU and on two (`group_peers.py`, the same run), and the host's links moving as many bytes each
way as square does, both directions at once. The links' bars are the time those bytes took as two plain copies per
GPU, one each way, and nothing else: not a floor (a pipelined run's many smaller copies did slightly better at 2^28),
but the scale against which a second GPU's gain from the host is read.
"""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

import matplotlib.pyplot as plt

import _chart

RUNS = "nvidia-h200-x2/groups/groups-runs-5.txt"
SIZES = {26: "67108864", 28: "268435456"}


def gpuworthy(text: str, n: str) -> Tuple[float, float]:
    """The fastest member alone and the group, for square n on cuda:0,1 with page-locked arrays."""
    block = text.split(f"square {n} on the group cuda:0+cuda:1")[1].split("\n$ ")[0]
    alone = min(_chart.times_in(line)[-1] for line in block.splitlines() if re.match(r"\s+cuda:\d\s", line))
    group = _chart.seconds(re.search(r"group: (\S+ \S+) ", block).group(1))  # type: ignore[union-attr]
    return alone, group


def torch_pipelined(text: str, log2: int) -> Tuple[float, float]:
    """PyTorch's pinned, pipelined square on one GPU and on two."""
    line = next(l for l in text.splitlines() if l.startswith(f"square 2^{log2} host->GPU->host (pinned, pipelined)"))
    one, two = _chart.times_in(line)[:2]
    return one, two


def links(text: str, log2: int) -> Tuple[float, float]:
    """The time square's bytes (4 bytes an element each way) take at the links' rate both ways, one GPU and two."""
    line = next(l for l in text.splitlines() if l.startswith(f"links both ways at once, 2^{log2} floats"))
    one, two = (float(v) for v in re.findall(r"([0-9.]+) GB/s", line))
    moved = 2 * 4 * (1 << log2)
    return moved / (one * 1e9), moved / (two * 1e9)


text = _chart.read(RUNS)
figure, axes = plt.subplots(1, 2, figsize=(11, 4.2))
for ax, (log2, n) in zip(axes, SIZES.items()):
    alone, group = gpuworthy(text, n)
    torch_one, torch_two = torch_pipelined(text, log2)
    floor_one, floor_two = links(text, log2)
    bars: List[Tuple[str, float, str]] = [
        ("copies both ways, one GPU", floor_one, _chart.COLOURS["other"]),
        ("gpuworthy, one H200", alone, _chart.COLOURS["cuda"]),
        ("PyTorch pipelined, one H200", torch_one, _chart.COLOURS["torch"]),
        ("copies both ways, two GPUs", floor_two, _chart.COLOURS["other"]),
        ("gpuworthy, two H200s", group, _chart.COLOURS["cuda"]),
        ("PyTorch pipelined, two H200s", torch_two, _chart.COLOURS["torch"]),
    ]
    _chart.bars(ax, [b[0] for b in bars], [b[1] * 1e3 for b in bars], [b[2] for b in bars], "ms")
    ax.set_title(f"square 2^{log2}, page-locked host arrays", fontsize=10, loc="left")
    ax.set_xlabel("host input to host output (ms)")
    ax.set_xlim(0, max(b[1] for b in bars) * 1e3 * 1.3)
figure.suptitle(
    "From the host, a second GPU is worth what the host's links carry more with two (about 1.37x here):\n"
    "gpuworthy and PyTorch, both pipelined from page-locked arrays, run as fast as plain copies of the same bytes",
    fontsize=11,
)
figure.tight_layout()
_chart.save(figure, "26-host-links", RUNS)
