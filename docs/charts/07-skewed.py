"""Chapter 7: contention, measured.

histogram 2^24 into 256 bins on one H200, the kernel time with uniform values and with 90% of them in one bin, for
the `global` and `private` kernels of CUDA and wgpu (`nvidia-h200/guide/divergence-gpu.txt`, the runs chapter 14's
measurements made).
"""

from __future__ import annotations

import matplotlib.pyplot as plt

import _chart
from _divergence_runs import GPU, histogram, pairs

figure, right = plt.subplots(figsize=(7.5, 4.2))
kernels = [("cuda", "global"), ("cuda", "private"), ("wgpu", "global"), ("wgpu", "private")]
pairs(
    right,
    [f"{b} {v}" for b, v in kernels],
    [(histogram(b, v, "uniform"), histogram(b, v, "skewed")) for b, v in kernels],
    ("uniform values", "skewed: 90% in one bin"),
    "kernel time (µs, logarithmic)",
    lambda t: _chart.seconds(t) * 1e6,
)
right.set_title("histogram 2^24, 256 bins", fontsize=10, loc="left")

figure.suptitle(
    "Atomics that hit one counter slow the global histogram, not the privatised one",
    fontsize=11,
)
_chart.save(figure, "07-skewed", GPU)
