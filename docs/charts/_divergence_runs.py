"""The runs behind chapter 14's divergence chart and chapter 7's skewed-histogram chart: one H200's
`gpuworthy run` blocks in `nvidia-h200/guide/divergence-gpu.txt` and `divergence-cpu.txt`, read as written."""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

import matplotlib.pyplot as plt

import _chart

GPU = "nvidia-h200/guide/divergence-gpu.txt"
CPU = "nvidia-h200/guide/divergence-cpu.txt"


def rows(text: str, command: str) -> Dict[str, List[str]]:
    """The rows the block of `command` prints, by variant: its columns as written (compile ... GFLOP/s, check)."""
    block = next(b for b in re.split(r"\n(?=\$ )", text) if b.startswith(f"$ {command}\n"))
    found = {}
    for line in block.splitlines()[1:]:
        if len(_chart.times_in(line)) >= 6:
            variant, *columns = re.split(r"\s{2,}", line.strip())
            found[variant] = columns
    return found


def mandelbrot(backend: str, variant: str, region: str) -> str:
    """GFLOP/s of one region's run, as written."""
    text = _chart.read(CPU if backend == "cpu" else GPU)
    chosen = "" if backend == "cpu" else " --variant naive"
    command = f"gpuworthy run mandelbrot --size 1024 --region {region} --max-iter 1000 --backend {backend}{chosen} --quick"
    return rows(text, command)[variant][7]


def histogram(backend: str, variant: str, distribution: str) -> str:
    """The kernel median of one distribution's run, as written (`4.33 ms`)."""
    command = f"gpuworthy run histogram --size 2^24 --distribution {distribution} --backend {backend} --quick"
    return rows(_chart.read(GPU), command)[variant][3].split(" ±")[0]


def pairs(ax: "plt.Axes", labels: List[str], written: List[Tuple[str, str]], names: Tuple[str, str], unit: str,
          value) -> None:
    """Two horizontal bars per label, of `value(text)`, with the texts as the files write them at their ends."""
    height = 0.38
    for side, (name, colour) in enumerate(zip(names, ("#1f77b4", "#ff7f0e"))):
        ys = [i + side * height for i in range(len(labels))]
        texts = [w[side] for w in written]
        xs = [value(t) for t in texts]
        ax.barh(ys, xs, height=height, color=colour, label=name)
        for y, x, t in zip(ys, xs, texts):
            ax.text(x, y, f" {t}", va="center", fontsize=8)
    ax.set_yticks([i + height / 2 for i in range(len(labels))])
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(right=ax.get_xlim()[1] * 6)
    ax.set_xlabel(unit)
    ax.legend(fontsize=8, loc="lower right")
