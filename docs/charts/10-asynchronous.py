"""Chapter 10's three clocks: one launch of square 2^24 timed by the host without synchronising (wrong on purpose),
by the host after synchronising, and by the device's own timer, on CUDA, wgpu and the CPU."""

import re

import _chart

SOURCE = "nvidia-h200/guide/asynchronous.txt"
CLOCKS = ["host, no synchronise (wrong)", "host, synchronised", "device timer"]
SHADES = ["#bbbbbb", "#ff7f0e", "#2ca02c"]

text = _chart.read(SOURCE)
runs = []  # (backend, [three times in seconds])
for block in text.split("$ gpuworthy")[1:]:
    backend = re.search(r"--backend (\w+)", block).group(1)  # type: ignore[union-attr]
    row = re.search(r"three clocks.*?\n.*?\n\s+\w+\s+(.*)", block)
    if row:
        runs.append((backend, _chart.times_in(row.group(1))[:3]))

fig, ax = _chart.plt.subplots()
series = [(clock, [times[k] * 1e6 for _, times in runs], shade) for k, (clock, shade) in enumerate(zip(CLOCKS, SHADES))]
_chart.grouped_bars(ax, len(runs), series, "µs")
ax.set_yticks(range(len(runs)), [f"{backend} square 2^24" for backend, _ in runs])
ax.invert_yaxis()
ax.set_xscale("log")
ax.set_xlabel("µs for one launch (log scale)")
ax.set_title("Without synchronising, the host's clock stops when the launch is queued:\n"
             "on a GPU it reads a fraction of the kernel's time; on the CPU the call is the work")
ax.set_xlim(right=max(max(times) for _, times in runs) * 1e6 * 4)
ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, fontsize=9, frameon=False)
_chart.save(fig, "10-asynchronous", SOURCE)
