"""What the variant charts of chapters 1-4, 7 and 8 share: one workload's kernels at one size on an H200, CUDA's and
WGSL's variants and PyTorch's own call, as the bandwidth each reaches against the copy peak measured beside them.

Reads `nvidia-h200/guide/variants-2.txt` unless a chart names another run: `gpuworthy run W --size S --backend
cuda|wgpu` (each block's variants, their `GB/s` column and the `measured copy peak` line under them), then
`gpu_peers.py`'s PyTorch lines, whose TB/s count the same bytes as the tool does. A chapter's chart draws its own
workload's first blocks.
"""

from __future__ import annotations

import re
from typing import List, Tuple

import matplotlib.pyplot as plt

import _chart

SOURCE = "nvidia-h200/guide/variants-2.txt"


def variants(text: str, title: str) -> Tuple[List[Tuple[str, float]], float]:
    """The variants' GB/s of the first block titled `title`, and the copy peak measured under it. Only the variants'
    rows count between the two, so a block with or without its `variant` header line reads the same."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rows: List[Tuple[str, float]] = []
    for line in lines[start + 1 :]:
        peak = re.search(r"measured copy peak: ([0-9.]+) GB/s", line)
        if peak:
            return rows, float(peak.group(1))
        words = line.split()
        if len(words) > 4 and words[-1] in ("ok", "not"):
            rows.append((words[0], float(words[-3])))
        elif len(words) > 5 and words[-2:] == ["not", "checked"]:  # a `--quick` run that skipped its check
            rows.append((words[0], float(words[-4])))
    raise ValueError(f"no copy peak under `{title}`")


def torch_rate(text: str, prefix: str) -> float:
    """PyTorch's rate in GB/s on the line starting with `prefix`."""
    line = next(l for l in text.splitlines() if l.startswith(prefix))
    return float(re.search(r"([0-9.]+) TB/s", line).group(1)) * 1000  # type: ignore[union-attr]


def draw(
    name: str,
    workload: str,
    size: str,
    torch_prefix: str,
    torch_label: str,
    lesson: str,
    source: str = SOURCE,
    torch_source: str = SOURCE,
) -> None:
    """Writes `NAME.svg`: `workload` at `size` on CUDA and wgpu beside PyTorch, against each backend's copy peak. The
    variants come from `source`, PyTorch's line from `torch_source` (pass the same file to draw one run's figures
    only); both default to `guide/variants-2.txt`."""
    text = _chart.read(source)
    cuda, cuda_peak = variants(text, f"{workload} {size} on cuda")
    wgpu, wgpu_peak = variants(text, f"{workload} {size} on wgpu")
    torch = torch_rate(_chart.read(torch_source), torch_prefix)
    labels = [f"CUDA {v}" for v, _ in cuda] + [f"WGSL {v}" for v, _ in wgpu] + [torch_label]
    values = [r for _, r in cuda] + [r for _, r in wgpu] + [torch]
    colours = [_chart.COLOURS["cuda"]] * len(cuda) + [_chart.COLOURS["wgpu"]] * len(wgpu) + [_chart.COLOURS["torch"]]
    figure, ax = plt.subplots(figsize=(9, 1.6 + 0.45 * len(labels)))
    _chart.bars(ax, labels, values, colours, "", digits=".0f")
    for peak, colour, who in ((cuda_peak, _chart.COLOURS["cuda"], "CUDA"), (wgpu_peak, _chart.COLOURS["wgpu"], "wgpu")):
        ax.axvline(peak, color=colour, linestyle="--", linewidth=1, label=f"{who}'s copy peak, {peak:.0f} GB/s")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_xlim(0, max(values + [cuda_peak, wgpu_peak]) * 1.3)
    ax.set_xlabel("bandwidth of the kernel alone, data resident (GB/s, bytes as the tool counts them)")
    ax.set_title(f"{workload} at {size} on an NVIDIA H200: {lesson}", fontsize=10, loc="left")
    _chart.save(figure, name, source if torch_source == source else f"{source} and docs/results/{torch_source}")
