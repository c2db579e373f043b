"""Chapter 6: mandelbrot 8192x8192 on an H200, phase by phase: with no input array the upload times making the device
buffers, above all the width x height counts buffer (CUDA checks the parameters and allocates the counts zero-filled;
wgpu makes the counts buffers band by band and a small buffer of parameters), the kernel is a compute-bound 1.4 ms,
and the download of the 256 MiB image from pageable memory is most of a run from the host.

Reads the `mandelbrot 8192x8192 on cuda|wgpu` blocks of `nvidia-h200/variants-and-torch.txt` (`naive`, the one
variant): their upload, kernel and download medians as written.
"""

from __future__ import annotations

import re
from typing import List

import matplotlib.pyplot as plt

import _chart

SOURCE = "nvidia-h200/variants-and-torch.txt"


def phases(text: str, backend: str) -> List[float]:
    """The `naive` row's upload, kernel and download medians in milliseconds, of the 8192x8192 block on `backend`."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"mandelbrot 8192x8192 on {backend}"))
    row = next(line for line in lines[start + 2 :] if line.split()[0] == "naive")
    # compile, first call, upload, kernel, download, end to end: the spreads (±N%) are not times.
    times = _chart.times_in(re.sub(r"±[0-9]+%", "", row))
    return [t * 1e3 for t in times[2:5]]


text = _chart.read(SOURCE)
backends = ["cuda", "wgpu"]
measured = [phases(text, b) for b in backends]
figure, ax = plt.subplots(figsize=(11, 3.4))
names = ["upload (no input: the counts buffer made on the device)", "kernel", "download (the image, 256 MiB, pageable)"]
colours = ["#9467bd", "#2ca02c", "#1f77b4"]
_chart.grouped_bars(ax, len(backends), [(n, [m[k] for m in measured], c) for k, (n, c) in enumerate(zip(names, colours))], "ms")
ax.set_yticks(range(len(backends)))
ax.set_yticklabels([f"{b} naive" for b in backends])
ax.invert_yaxis()
ax.set_xscale("log")
ax.set_xlim(0.1, 150)
ax.set_xlabel("median time of each phase (ms, logarithmic)")
ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8)
ax.set_title("mandelbrot 8192x8192 on an NVIDIA H200: no input to upload, a short kernel, a long download", fontsize=10, loc="left")
_chart.save(figure, "06-phases", SOURCE)
