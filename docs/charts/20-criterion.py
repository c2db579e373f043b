"""Chapter 20: what each of criterion's phases measures, for square at 2^22 (4194304 floats) on the H200.

Reads `nvidia-h200/guide/criterion-2.txt` (the plain criterion suite with CUDA's pipelined phase) and plots criterion's
estimate for each benchmark `square/cuda/VARIANT/PHASE/4194304` (the middle of its `time:` line: with the suite's
flat sampling, the mean of its samples), the CPU's `simd` kernel beside them, on a logarithmic axis.
"""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

import matplotlib.pyplot as plt

import _chart

SOURCE = "nvidia-h200/guide/criterion-2.txt"
SIZE = "4194304"
# (benchmark id without its size, label); upload and download are benched once, under the backend's first variant.
BARS: List[Tuple[str, str]] = [
    ("square/cpu/simd/kernel", "cpu simd: kernel"),
    ("square/cuda/vec4/kernel", "cuda vec4: kernel (resident)"),
    ("square/cuda/naive/upload", "cuda: upload"),
    ("square/cuda/naive/download", "cuda: download"),
    ("square/cuda/vec4/end_to_end", "cuda vec4: end_to_end"),
    ("square/cuda/vec4/end_to_end_pipelined", "cuda vec4: end_to_end_pipelined"),
    ("square/cuda/vec4/first_call", "cuda vec4: first_call"),
]


def estimates(text: str) -> Dict[str, float]:
    """Each benchmark's estimate in seconds: the middle of the three times on the `time:` line after its id."""
    found: Dict[str, float] = {}
    current = None
    for line in text.splitlines():
        if re.match(r"^[a-z]+/\S+/\S+$", line.strip()) and not line.startswith(" "):
            current = line.strip()
            continue
        if current and line.strip().startswith("time:"):
            spread = _chart.times_in(line)
            if len(spread) == 3:  # `[low estimate high]`; a benchmark too fast to time (`0.0000 ps`) has none
                found.setdefault(current, spread[1])
            current = None
    return found


times = estimates(_chart.read(SOURCE))
labels = [label for _, label in BARS]
values = [times[f"{bench}/{SIZE}"] * 1e6 for bench, _ in BARS]
colours = [_chart.COLOURS["cpu"] if bench.startswith("square/cpu") else _chart.COLOURS["cuda"] for bench, _ in BARS]



def readable(us: float) -> str:
    """A time in the unit criterion would print it in."""
    return f"{us / 1000:.3g} ms" if us >= 1000 else f"{us:.3g} µs"


figure, ax = plt.subplots()
ax.barh(labels, values, color=colours)
ax.invert_yaxis()
for y, v in enumerate(values):
    ax.text(v, y, f" {readable(v)}", va="center", fontsize=9)
ax.set_xscale("log")
ax.set_xlim(1, max(values) * 8)
ax.set_xlabel("criterion's estimate of one iteration, µs (log scale)")
figure.suptitle("square at 2^22 on the H200: the GPU's kernel is the shortest phase,\nthe copies and the first call the longest")
_chart.save(figure, "20-criterion", SOURCE)
