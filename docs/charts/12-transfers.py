"""Chapter 12, two charts, one per idea: where the time of a run from the host goes (12-transfers.svg), and what k
kernels per transfer do to it (12-reuse.svg).

12-transfers: square 2^26 on CUDA from `nvidia-h200/performance-goals-5.txt`, the run that measured the pageable, pinned and
pipelined paths one after another with one build: the upload, kernel and download of the pageable and pinned paths
stacked, the end-to-end time of each as a mark, and the pipelined path's end-to-end time (its phases overlap, so they
are not stacked), into a fresh output and into a kept one.

12-reuse: sum 2^24 from `nvidia-h200/guide/transfers.txt`: the cost per kernel with the data uploaded once and downloaded
once around k kernels, one transfer divided by k plus the kernel, for CUDA's `warp` and wgpu's `subgroup`, the
measured points at 1 and 16 kernels per transfer, and the CPU's kernel (its data is already there).
"""

from __future__ import annotations

import math
import re
from typing import Dict, List

import matplotlib.pyplot as plt

import _chart

MODES = "nvidia-h200/performance-goals-5.txt"
AMORTISED = "nvidia-h200/guide/transfers.txt"
SQUARE = "gpuworthy run square --size 2^26 --backend cuda --variant vec4 --quick"


def blocks(text: str) -> Dict[str, str]:
    """Each command's output, by its command line (the first run of a command repeated later)."""
    found: Dict[str, str] = {}
    for block in re.split(r"\n(?=\$ )", text):
        if block.startswith("$ "):
            command, _, output = block[2:].partition("\n")
            found.setdefault(command.strip(), output)
    return found


def row(output: str, variant: str) -> List[float]:
    """The times of `variant`'s row (compile, first, upload, kernel, download, end to end), in seconds."""
    line = next(l for l in output.splitlines() if re.match(rf"\s+{variant}\s", l) and len(_chart.times_in(l)) >= 6)
    return _chart.times_in(line)


def per_transfer(output: str, variant: str) -> Dict[int, float]:
    """`--launches K`'s lines: seconds per kernel at K and at 1 kernels per transfer."""
    line = next(l for l in output.splitlines() if re.match(rf"\s+{variant}\s+\d+ per transfer:", l))
    k = int(re.search(r"(\d+) per transfer:", line).group(1))  # type: ignore[union-attr]
    at_k, at_one = _chart.times_in(line)
    return {k: at_k, 1: at_one}


runs = blocks(_chart.read(MODES))
pageable = row(runs[SQUARE], "vec4")
pinned = row(runs[f"{SQUARE} --pinned"], "vec4")
pipelined = row(runs[f"{SQUARE} --pipelined"], "vec4")
kept = row(runs[f"{SQUARE} --pipelined --reuse-output"], "vec4")

sums = blocks(_chart.read(AMORTISED))
cuda = sums["gpuworthy run sum --size 2^24 --backend cuda --quick --no-validate --launches 16"]
wgpu = sums["gpuworthy run sum --size 2^24 --backend wgpu --quick --no-validate --launches 16"]
cpu = sums["gpuworthy run sum --size 2^24 --backend cpu --quick --no-validate --launches 16"]

figure, left = plt.subplots(figsize=(7.5, 4.6))

# The three paths.
labels = ["pageable", "pinned", "pipelined,\nfresh output", "pipelined,\nkept output"]
phases = [("upload", 2, "#1f77b4"), ("kernel", 3, "#2ca02c"), ("download", 4, "#ff7f0e")]
for y, times in enumerate([pageable, pinned]):
    start = 0.0
    for p, (phase, column, colour) in enumerate(phases):
        name = f"{phase} ({times[column] * 1e6:.3g} µs: too short to see)" if phase == "kernel" else phase
        left.barh(y, times[column] * 1e3, left=start, color=colour, label=name if y == 0 else None)
        start += times[column] * 1e3
for y, times in [(2, pipelined), (3, kept)]:
    left.barh(y, times[5] * 1e3, color="#9467bd", hatch="//", edgecolor="white",
              label="overlapped: upload, kernels and download at once" if y == 2 else None)
for y, times in enumerate([pageable, pinned, pipelined, kept]):
    left.plot(times[5] * 1e3, y, marker="|", markersize=22, color="black", label="end to end" if y == 0 else None)
    left.text(times[5] * 1e3, y, f"  {times[5] * 1e3:.3g} ms", va="center", fontsize=9)
left.set_yticks(range(len(labels)))
left.set_yticklabels(labels)
left.invert_yaxis()
left.set_xlim(0, pageable[5] * 1e3 * 1.25)
left.set_xlabel("ms")
left.set_title("square 2^26 on CUDA, data in host memory", fontsize=10, loc="left")
left.legend(fontsize=8, loc="lower right")
figure.suptitle("Pinned and pipelined copies shorten a run from the host; the kernel is too short to see", fontsize=11)
_chart.save(figure, "12-transfers", MODES)

# k kernels per transfer.
figure, right = plt.subplots(figsize=(7.5, 4.8))
cpu_kernel = row(cpu, "simd")[3]
ks = [2 ** (i / 8) for i in range(0, 8 * 7 + 1)]  # 1 to 128 kernels per transfer
for name, output, variant, colour in [("cuda warp", cuda, "warp", _chart.COLOURS["cuda"]),
                                      ("wgpu subgroup", wgpu, "subgroup", _chart.COLOURS["wgpu"])]:
    kernel = row(output, variant)[3]
    measured = per_transfer(output, variant)
    transfer = measured[1]
    right.plot(ks, [(transfer / k + kernel) * 1e6 for k in ks], color=colour, label=f"{name}: one transfer / k + kernel")
    right.plot(list(measured), [t * 1e6 for t in measured.values()], "o", color=colour, label=f"{name}: measured")
    if name == "cuda warp":
        even = transfer / (cpu_kernel - kernel)
        right.axvline(math.ceil(even), color="#555555", linestyle=":")
        right.text(math.ceil(even), transfer * 1e6 / 2, f" k = {math.ceil(even)}", fontsize=9)
right.axhline(cpu_kernel * 1e6, color=_chart.COLOURS["cpu"], linestyle="--", label="cpu simd kernel (data already there)")
right.set_xscale("log", base=2)
right.set_xticks([1, 2, 4, 8, 16, 32, 64, 128])
right.xaxis.set_major_formatter(plt.FuncFormatter(lambda k, _: f"{k:g}"))
right.set_yscale("log")
right.set_xlabel("kernels per transfer, k")
right.set_ylabel("cost per kernel (µs)")
right.set_title("sum 2^24: the transfer shared by k kernels", fontsize=10, loc="left")
right.legend(fontsize=8)

figure.suptitle("Only many kernels per transfer bring the GPU's cost per kernel under the CPU's", fontsize=11)
_chart.save(figure, "12-reuse", AMORTISED)
