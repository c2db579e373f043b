"""Chapter 17: square 2^24 on the 2-core machine, the CPU backend's own code against the same work as WGSL on lavapipe,
Mesa's Vulkan driver that runs shaders on the same CPU cores: the kernel and the end-to-end time of each, from
`cpu-2-core-lavapipe/guide/asynchronous.txt`."""

from __future__ import annotations

import re
from typing import List, Tuple

import _chart

SOURCE = "cpu-2-core-lavapipe/guide/asynchronous.txt"
PHASES = [("kernel", 3), ("end to end", 5)]  # columns of a row's times: compile, first, upload, kernel, ...

runs: List[Tuple[str, List[float]]] = []  # (label, the row's times in seconds)
for block in _chart.read(SOURCE).split("$ gpuworthy")[1:]:
    backend = re.search(r"--backend (\w+)", block).group(1)  # type: ignore[union-attr]
    variant = re.search(r"--variant (\w+)", block).group(1)  # type: ignore[union-attr]
    line = next(l for l in block.splitlines() if re.match(rf"\s+{variant}\s", l) and len(_chart.times_in(l)) >= 6)
    name = f"{backend} {variant}: WGSL on lavapipe" if backend == "wgpu" else f"{backend} {variant}: the CPU backend's code"
    runs.append((name, _chart.times_in(line)))

cpu = next(times for name, times in runs if name.startswith("cpu"))
lavapipe = next(times for name, times in runs if name.startswith("wgpu"))
ratio = lavapipe[3] / cpu[3]

fig, ax = _chart.plt.subplots(figsize=(9, 4.2))
series = [
    (name, [times[column] * 1e3 for _, column in PHASES], _chart.COLOURS["wgpu" if name.startswith("wgpu") else "cpu"])
    for name, times in runs
]
_chart.grouped_bars(ax, len(PHASES), series, "ms")
ax.set_yticks(range(len(PHASES)), [f"square 2^24\n{phase}" for phase, _ in PHASES])
ax.invert_yaxis()
ax.set_xlabel("ms")
ax.set_xlim(right=max(times[5] for _, times in runs) * 1e3 * 1.15)
ax.legend(loc="upper right", fontsize=9)
ax.set_title(f"Lavapipe runs square's WGSL kernel {ratio:.0f} times slower than the CPU backend on the same 2 cores:\n"
             "a place to debug shaders, not to measure them", fontsize=11)
_chart.save(fig, "17-shaders-on-a-cpu", SOURCE)
