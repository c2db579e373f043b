"""Chapter 18: what gpuworthy costs against the libraries a reader comes from, on the H200.

Left: square 2^26, the kernel time of gpuworthy's CUDA `naive` and `vec4` (the run of square on cuda in
`nvidia-h200/guide/variants-2.txt`) beside `torch.square` and a device-to-device copy of the same bytes (the torch
lines of the same file, the same run).

Right: the host's cost of one Python call on 1024 floats resident on the GPU, `gpuworthy.expr(...)` against CuPy's
`ElementwiseKernel`, in the last run of `nvidia-h200/python/overhead.txt` (run 8, the latest build measured there; the
file's earlier runs are earlier builds, and only the two calls of one run compare).
"""

from __future__ import annotations

import re
from typing import List, Tuple

TIME = r"([0-9]+(?:\.[0-9]+)?\s*(?:µs|us|ms))"

import matplotlib.pyplot as plt

import _chart

KERNELS = "nvidia-h200/guide/variants-2.txt"
CALLS = "nvidia-h200/python/overhead.txt"

# Left: the first square 2^26 run on cuda, and the torch lines.
text = _chart.read(KERNELS)
square = re.search(r"^square 67108864 on cuda .*?\n(.*?)\n  kernel clock", text, re.M | re.S).group(1)  # type: ignore[union-attr]
bars: List[Tuple[str, str, str]] = []  # (label, the time as the file writes it, colour)
for variant, shade in [("naive", "#98df8a"), ("vec4", _chart.COLOURS["cuda"])]:
    line = next(l for l in square.splitlines() if re.match(rf"\s+{variant}\s", l))
    bars.append((f"gpuworthy cuda {variant}", re.findall(TIME, line)[3], shade))
for name, label, shade in [("torch.square, 2^26", "torch.square", _chart.COLOURS["torch"]),
                           ("device-to-device copy, 2^26 floats", "device-to-device copy", "#bbbbbb")]:
    line = next(l for l in text.splitlines() if l.startswith(name))
    bars.append((label, re.findall(TIME, line[len(name):])[0], shade))

# Right: the last run of the call-cost bench (each run a build of its own: compare the two calls within a run).
calls = []  # (run, gpuworthy's time, CuPy's time, as the file writes them)
for block in re.split(r"\n(?=\$ )", _chart.read(CALLS)):
    label = re.search(r"# runs? (\d+)(?:-(\d+))?", block)
    if not label:
        continue
    ours = re.findall(rf"^gpuworthy\.expr.*:\s*{TIME} per call", block, re.M)
    theirs = re.findall(rf"^cupy\.ElementwiseKernel.*:\s*{TIME} per call", block, re.M)
    for k, (o, t) in enumerate(zip(ours, theirs)):
        calls.append((f"run {int(label.group(1)) + k}", o, t))
run, ours_latest, theirs_latest = calls[-1]

figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.8), gridspec_kw={"width_ratios": [1.7, 1]})



def micro(written: str) -> float:
    """A time as the file writes it, in µs."""
    return _chart.seconds(written) * 1e6


def shown(written: str) -> str:
    """A time with the file's digits, `us` written `µs`."""
    return " " + re.sub(r"\s*us$", " µs", written)


left.barh([label for label, _, _ in bars], [micro(t) for _, t, _ in bars], color=[c for _, _, c in bars])
left.invert_yaxis()
for y, (_, t, _) in enumerate(bars):
    left.text(micro(t), y, shown(t), va="center", fontsize=9)
left.set_xlim(right=max(micro(t) for _, t, _ in bars) * 1.2)
left.set_xlabel("kernel µs on the GPU")
left.set_title("square 2^26 on the H200", fontsize=10, loc="left")

pair = [("gpuworthy.expr", ours_latest, _chart.COLOURS["cuda"]), ("CuPy\nElementwiseKernel", theirs_latest, "#9467bd")]
right.barh([who for who, _, _ in pair], [micro(t) for _, t, _ in pair], color=[c for _, _, c in pair])
right.invert_yaxis()
for y, (_, t, _) in enumerate(pair):
    right.text(micro(t), y, shown(t), va="center", fontsize=9)
right.set_xlim(right=max(micro(t) for _, t, _ in pair) * 1.35)
right.set_xlabel("host µs per Python call, 1024 floats")
right.set_title(f"one call from Python,\n{run} (the latest build)", fontsize=10, loc="left")

figure.suptitle("gpuworthy's vec4 square takes the time of torch.square and of a copy of the same bytes,\n"
                "and its Python call costs what CuPy's does", fontsize=12)
_chart.save(figure, "18-coming-from", f"{KERNELS} and docs/results/{CALLS}")
