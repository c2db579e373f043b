"""Chapter 13, two charts, one per idea: square 2^26's kernel time against the threads per block (13-block-size.svg),
and the tail (13-tail.svg).

Reads the CUDA sweep of `nvidia-h200/guide/block-size.txt` (`naive` and `vec4`, 32 to 1024 threads per block) and the
wgpu sweep of the same GPU in `nvidia-h200/guide/block-size-wgpu.txt` (the WGSL shaders' workgroup size), and plots each
variant's kernel median against the block size, both axes logarithmic. The second chart draws the tail
(`nvidia-h200/guide/tail-waves.txt`): mandelbrot's inside region, every block of the same long work, its kernel time
against the number of blocks, with the full waves (1056 and 2112 blocks on 132 SMs) marked.
"""

from __future__ import annotations

import math
import re
from typing import Dict, List, Tuple

import matplotlib.pyplot as plt

import _chart

CUDA = "nvidia-h200/guide/block-size.txt"
WGPU = "nvidia-h200/guide/block-size-wgpu.txt"
TAIL = "nvidia-h200/guide/tail-waves.txt"


def sweep(text: str, command: str) -> Dict[str, List[Tuple[int, float]]]:
    """The kernel medians of the block `command` prints, by variant: (block size, seconds), as `naive b32` or
    `vec4 wg128` rows name them."""
    block = next(b for b in re.split(r"\n(?=\$ )", text) if b.startswith(f"$ {command}\n"))
    found: Dict[str, List[Tuple[int, float]]] = {}
    for line in block.splitlines():
        row = re.match(r"\s+(\w+) (?:b|wg)(\d+)\s", line)
        if row and len(_chart.times_in(line)) >= 6:
            found.setdefault(row.group(1), []).append((int(row.group(2)), _chart.times_in(line)[3]))
    return found


cuda = {}
for variant in ("naive", "vec4"):
    cuda.update(sweep(_chart.read(CUDA), f"gpuworthy run square --size 2^26 --backend cuda --variant {variant} --quick "
                                         "--no-validate --block-size 32,64,128,256,512,1024"))
wgpu = sweep(_chart.read(WGPU), "gpuworthy run square --size 2^26 --backend wgpu --quick --no-validate "
                                "--block-size 32,64,128,256,512,1024")

figure, ax = plt.subplots(figsize=(8.5, 5.0))
styles = {"naive": "o", "vec4": "s"}
for backend, lines, colour, dash in [("cuda", cuda, _chart.COLOURS["cuda"], "-"),
                                     ("wgpu", wgpu, _chart.COLOURS["wgpu"], "--")]:
    for variant, points in lines.items():
        sizes, times = zip(*sorted(points))
        ax.plot(sizes, [t * 1e6 for t in times], dash, marker=styles[variant], color=colour,
                label=f"{backend} {variant}")
sizes = sorted({s for lines in (cuda, wgpu) for points in lines.values() for s, _ in points})
ax.set_xscale("log", base=2)
ax.set_xticks(sizes)
ax.xaxis.set_major_formatter(plt.FuncFormatter(lambda s, _: f"{s:g}"))
ax.set_yscale("log")
ax.yaxis.set_major_formatter(plt.FuncFormatter(lambda t, _: f"{t:g}"))
ax.yaxis.set_minor_formatter(plt.NullFormatter())
every = [t * 1e6 for lines in (cuda, wgpu) for points in lines.values() for _, t in points]
low, high = 10 ** math.floor(math.log10(min(every))), max(every) * 1.5
ax.set_ylim(low, high)
ax.set_yticks([m * 10 ** e for e in range(int(math.log10(low)), int(math.log10(high)) + 1) for m in (1, 2, 5)
               if low <= m * 10 ** e <= high])
ax.set_xlabel("threads per block (CUDA) or invocations per workgroup (wgpu)")
ax.set_ylabel("kernel time, square 2^26 (µs, logarithmic)")
ax.legend()
figure.suptitle("One thread per element needs large blocks to keep the memory busy;\n"
                "CUDA's grid-stride vec4 kernel hardly depends on the block size", fontsize=11)
_chart.save(figure, "13-block-size", f"{CUDA} and docs/results/{WGPU}")

figure, tail = plt.subplots(figsize=(7.0, 4.6))
waves = [
    (int(b), _chart.times_in(re.sub(r"±[0-9]+%", "", row))[3] * 1e6)
    for b, row in re.findall(r"# B = (\d+) blocks\n.*\n\s+(naive .*)", _chart.read(TAIL))
]
blocks, times = zip(*waves)
tail.plot(blocks, times, "-o", color=_chart.COLOURS["cuda"], markersize=4)
for wave in (1056, 2112):
    tail.axvline(wave, color="#555555", linestyle=":", linewidth=1)
at = dict(waves)
tail.text(0.03, 0.97, "\n".join(f"{b} blocks: {at[b]:g} µs" for b in (1056, 1057, 1188, 2112, 2113)),
          transform=tail.transAxes, va="top", fontsize=8, family="monospace")
tail.set_xlabel("blocks of 256 threads (dotted: full waves)")
tail.set_ylabel("kernel time (µs)")
tail.set_ylim(0, max(times) * 1.15)
tail.set_title("the tail: mandelbrot inside, 1000 iterations a pixel", fontsize=10, loc="left")
figure.suptitle("With long blocks, one block past a full wave costs as much as one more on every SM", fontsize=11)
_chart.save(figure, "13-tail", TAIL)
