"""Chapter 23: which side of a transpose strides. The kernel times of four transposes of a 4096 x 4096 float32 matrix
on one H200, compiled by CuPy from the example's CUDA C: the naive kernel with its stores strided, the same with its
loads strided, the tiled kernel and the padded tile, with the copy of the same matrix as the bar."""

import re

import _chart

SOURCE = "nvidia-h200/memory-access/memory-access-exercises.txt"
text = _chart.read(SOURCE)

# `transpose_naive_swapped         83.1 us    1614.8 GB/s  ok`
rows = re.findall(r"^(\w+)\s+([0-9.]+ (?:ns|us|µs|ms|s))\s+[0-9.]+ GB/s\s+ok", text, re.M)
time = {kernel: _chart.seconds(t) * 1e6 for kernel, t in rows}

kernels = [
    ("transpose_naive", "naive: stores strided"),
    ("transpose_naive_swapped", "naive: loads strided"),
    ("transpose_tiled", "tiled (32-way bank conflict)"),
    ("transpose_padded", "padded tile: neither strides"),
]
labels = [label for _, label in kernels]
values = [time[kernel] for kernel, _ in kernels]
colours = [_chart.COLOURS["cuda"]] * len(kernels)  # every kernel here is CUDA C, compiled by CuPy

fig, ax = _chart.plt.subplots()
_chart.bars(ax, labels, values, colours, "µs", digits=".1f")
copy = time["copy"]
ax.axvline(copy, color="#555555", linestyle="--", linewidth=1, label=f"copy of the same matrix: {copy:.1f} µs")
ax.legend(loc="lower right")
ax.set_xlim(0, max(values) * 1.2)
ax.set_xlabel("kernel time, µs (shorter is faster)")
ax.set_title("On one H200, a 4096 x 4096 transpose should stride on its loads,\n"
             "not its stores, or stage a padded tile so that neither strides")
_chart.save(fig, "23-transposes", SOURCE)
