"""Chapter 26: two answers the device groups chapter reads off tables, drawn: where one value's combine belongs (on
the host, or through NCCL on the GPUs), and what the CPU adds beside a GPU from page-locked host arrays.

Reads `nvidia-h200-x2/groups/collectives-run-2.txt` (`run sum --size 2^30 --backend cuda:0,1`: the resident step of
one GPU alone, of two with the values added on the host, and of two with an NCCL all-reduce) and
`nvidia-h200-x2/groups/groups-runs-5.txt` (`run square --size 2^26 --backend cpu+cuda --pipelined --page-locked`: the
CPU alone, the H200 alone and the two together, from the host).
"""

from __future__ import annotations

import re

import matplotlib.pyplot as plt

import _chart

COLLECTIVES = "nvidia-h200-x2/groups/collectives-run-2.txt"
RUNS = "nvidia-h200-x2/groups/groups-runs-5.txt"


def one_value(text: str) -> tuple[float, float, float]:
    """sum 2^30 resident on two H200s: the fastest member alone, the host's combine, NCCL's combine (seconds)."""
    block = text.split("$ gpuworthy run sum --size 2^30 --backend cuda:0,1")[1].split("\n$ ")[0]
    host = re.search(r"resident, a launch with its download and join on the host's clock: (\S+ \S+) \(the fastest "
                     r"member alone, a launch and its download: (\S+ \S+),", block)
    nccl = re.search(r"resident, a launch with its combine through NCCL[^:]*: (\S+ \S+) ", block)
    assert host and nccl, "the sum's resident lines"
    return _chart.seconds(host.group(2)), _chart.seconds(host.group(1)), _chart.seconds(nccl.group(1))


def cpu_and_gpu(text: str) -> tuple[float, float, float]:
    """square 2^26 from page-locked host arrays: the CPU alone, the H200 alone, the two together (seconds)."""
    block = text.split("$ gpuworthy run square --size 2^26 --backend cpu+cuda --pipelined --page-locked")[1]
    block = block.split("\n$ ")[0]
    cpu = _chart.times_in(next(l for l in block.splitlines() if l.strip().startswith("cpu ")))[-1]
    gpu = _chart.times_in(next(l for l in block.splitlines() if l.strip().startswith("cuda:0 ")))[-1]
    group = _chart.seconds(re.search(r"group: (\S+ \S+) ", block).group(1))  # type: ignore[union-attr]
    return cpu, gpu, group


alone, host, nccl = one_value(_chart.read(COLLECTIVES))
cpu, gpu, together = cpu_and_gpu(_chart.read(RUNS))
figure, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
_chart.bars(
    left,
    ["one H200 alone", "two H200s, values added on the host", "two H200s, NCCL all-reduce"],
    [alone * 1e6, host * 1e6, nccl * 1e6],
    [_chart.COLOURS["cuda"], _chart.COLOURS["cuda"], _chart.COLOURS["other"]],
    "µs",
)
left.set_title("sum 2^30, resident: one value to combine", fontsize=10, loc="left")
left.set_xlabel("a launch and its value on the host (µs)")
left.set_xlim(0, alone * 1e6 * 1.3)
_chart.bars(
    right,
    ["the CPU alone", "one H200 alone", "the CPU and the H200 together"],
    [cpu * 1e3, gpu * 1e3, together * 1e3],
    [_chart.COLOURS["cpu"], _chart.COLOURS["cuda"], _chart.COLOURS["other"]],
    "ms",
)
right.set_title("square 2^26, page-locked host arrays", fontsize=10, loc="left")
right.set_xlabel("host input to host output (ms)")
right.set_xlim(0, max(cpu, gpu, together) * 1e3 * 1.3)
figure.suptitle(
    "One value is cheaper to add on the host than through NCCL; beside a GPU from the host, the CPU\n"
    "competes for the same host memory, and the pair is slower than the CPU alone",
    fontsize=11,
)
figure.tight_layout()
_chart.save(figure, "26-one-value-and-the-cpu", f"{COLLECTIVES} and docs/results/{RUNS}")
