"""Chapter 24: the ridge, measured. An expression of D chained multiply-adds (`p = p*x + 0.5`, 2*D flops on 8 bytes
an element) on 2^26 float32, for D from 1 to 255, on the H200 through CUDA and through Vulkan, and on its host's CPU.

Left: the kernel time against D: flat while the memory decides, then growing with the flops. Right: the same runs as
GFLOP/s against intensity (D/4 flops per byte), both axes logarithmic, under each device's roofs as the ladder itself
measured them (its best GB/s times the intensity, and its best GFLOP/s). Reads `nvidia-h200/roofline/intensity-ladder.txt`:
each run's kernel median, GB/s and GFLOP/s, as written.
"""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

import matplotlib.pyplot as plt

import _chart

SOURCE = "nvidia-h200/roofline/intensity-ladder.txt"


def runs(text: str) -> Dict[str, List[Tuple[int, float, float, float]]]:
    """The 2^26 runs by backend: (D, kernel seconds, GB/s, GFLOP/s)."""
    found: Dict[str, List[Tuple[int, float, float, float]]] = {}
    for block in re.split(r"\n(?=\$ )", text):
        head = re.match(r"\$ .*--size 2\^26 --backend (\w+).*# D = (\d+)", block)
        if not head:
            continue
        row = next(line for line in block.splitlines() if re.match(r"\s+(generated|blocks)\s", line))
        words = row.split()
        gbs, gflops = float(words[-4]), float(words[-3])  # ... GB/s GFLOP/s not checked
        kernel = _chart.times_in(re.sub(r"±[0-9]+%", "", row))[3]
        found.setdefault(head.group(1), []).append((int(head.group(2)), kernel, gbs, gflops))
    return found


measured = runs(_chart.read(SOURCE))
figure, (left, right) = plt.subplots(1, 2, figsize=(13, 5.2))
names = {"cuda": "H200, CUDA", "wgpu": "H200, Vulkan", "cpu": "16-thread Xeon, the expression evaluator"}
offsets = {"cuda": (-70, 6), "wgpu": (4, -16), "cpu": (-20, 6)}
for backend, points in measured.items():
    ds = [d for d, *_ in points]
    colour = _chart.COLOURS[backend]
    if backend != "cpu":
        left.plot(ds, [k * 1e6 for _, k, _, _ in points], "-o", color=colour, markersize=4, label=names[backend])
    memory = max(g for *_, g, _ in points)
    compute = max(f for *_, f in points)
    intensities = [d / 4 for d in ds]
    right.plot(intensities, [f for *_, f in points], "o", color=colour, markersize=4, label=names[backend])
    ridge = compute / memory
    xs = [min(intensities), ridge, max(intensities)]
    right.plot(xs, [min(memory * x, compute) for x in xs], "-", color=colour, linewidth=1, alpha=0.6)
    right.annotate(f"ridge {ridge:.1f}", (ridge, compute), textcoords="offset points", xytext=offsets[backend],
                   fontsize=8, color=colour)
left.set_xlabel("multiply-adds an element, D")
left.set_ylabel("kernel time at 2^26 (µs)")
left.set_ylim(0, None)
left.set_title("flat while the bytes decide, then the flops", fontsize=10, loc="left")
left.legend(fontsize=8)
right.set_xscale("log", base=2)
right.set_yscale("log")
right.set_xlabel("intensity (flops per byte): D / 4")
right.set_ylabel("GFLOP/s (logarithmic)")
right.set_title("the same runs under the roofs they measured", fontsize=10, loc="left")
right.legend(fontsize=8, loc="lower right")
figure.suptitle("Arithmetic is free until the ridge: an elementwise kernel on the H200 stays at the copy's time up to "
                "about 16 multiply-adds an element", fontsize=11)
_chart.save(figure, "24-intensity-ladder", SOURCE)
