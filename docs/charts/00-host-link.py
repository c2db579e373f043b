"""The numbers that decide: the host link beside the memories it joins. The rates a byte can move at on the H200
machine, on one logarithmic axis: the link from pageable and from pinned host memory, each way, and the memory roofs
of the CPU and of the GPU, so that the gap the inequality turns on is a length the eye can read.

Reads `nvidia-h200/variants-and-torch.txt` (the `gpuworthy transfers` block: host to device and device to host,
pageable and pinned) and `nvidia-h200/roofline/roofline.txt` (the cpu and cuda memory roofs).
"""

from __future__ import annotations

import re

import matplotlib.pyplot as plt

import _chart

TRANSFERS = "nvidia-h200/variants-and-torch.txt"
ROOFS = "nvidia-h200/roofline/roofline.txt"

transfers = _chart.read(TRANSFERS)
link = {}
for direction in ("host to device", "device to host"):
    found = re.search(rf"{direction}\s+pageable\s+([0-9.]+) GB/s\s+pinned\s+([0-9.]+) GB/s", transfers)
    assert found, f"no `{direction}` line in {TRANSFERS}"
    link[f"link, {direction}, pageable"] = float(found.group(1))
    link[f"link, {direction}, pinned"] = float(found.group(2))
roofs = _chart.read(ROOFS)
memory = {}
for device, label in (("cpu", "CPU's memory roof (16-thread Xeon)"), ("cuda", "GPU's memory roof (H200)")):
    found = re.search(rf"^{device}: memory roof ([0-9.]+) GB/s", roofs, flags=re.M)
    assert found, f"no {device} memory roof in {ROOFS}"
    memory[label] = float(found.group(1))

rates = {**link, **memory}
colours = ["#bcbd22"] * len(link) + [_chart.COLOURS["cpu"], _chart.COLOURS["cuda"]]
figure, ax = plt.subplots(figsize=(8.5, 3.8))
names = list(rates)
ax.barh(range(len(names)), [rates[n] for n in names], color=colours)
for y, name in enumerate(names):
    ax.text(rates[name] * 1.08, y, f"{rates[name]:g} GB/s", va="center", fontsize=9)
ax.set_yticks(range(len(names)))
ax.set_yticklabels(names, fontsize=9)
ax.invert_yaxis()
ax.set_xscale("log")
ax.set_xlim(1, max(rates.values()) * 6)
ax.set_xlabel("GB/s (logarithmic)")
cpu_roof, gpu_roof = memory.values()
slowest, fastest = min(link.values()), max(link.values())
figure.suptitle(
    f"The link moves a byte {cpu_roof / fastest:.0f} to {cpu_roof / slowest:.0f} times slower than the CPU's memory roof "
    f"and {gpu_roof / fastest:.0f} to {gpu_roof / slowest:.0f} times slower\nthan the GPU's: memory-bound work from "
    "the host stays on the CPU",
    fontsize=11,
)
_chart.save(figure, "00-host-link", f"{TRANSFERS} and docs/results/{ROOFS}")
