"""What every chart of the guide shares: results files read relative to the guide, one look, and SVG written the
same way on every run (no date, a fixed hash salt), so that a chart changes only when its data does.

Each `docs/charts/NAME.py` reads the results files it plots and writes `docs/charts/NAME.svg`; CI runs every one.
"""

from __future__ import annotations

import pathlib
import re
from typing import List, Tuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HERE = pathlib.Path(__file__).resolve().parent
RESULTS = HERE.parent / "results"

plt.rcParams.update(
    {
        "svg.hashsalt": "gpuworthy",
        "svg.fonttype": "none",
        "font.size": 11,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "figure.figsize": (9, 5.2),
    }
)

# One colour per backend, as the tool's own charts use them.
COLOURS = {"cpu": "#1f77b4", "cuda": "#2ca02c", "wgpu": "#d62728", "torch": "#7f7f7f", "other": "#9467bd"}

_UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def read(relative: str) -> str:
    """A results file's text, by its path under docs/results/."""
    return (RESULTS / relative).read_text(encoding="utf-8")


def seconds(text: str) -> float:
    """`4.28 ms`, `35.9 µs`, `1.2 s` in seconds."""
    number, unit = re.match(r"\s*([0-9.]+)\s*(ns|µs|us|ms|s)\b", text).groups()  # type: ignore[union-attr]
    return float(number) * _UNITS[unit]


def times_in(line: str) -> List[float]:
    """Every time written in a line, in seconds, in order."""
    return [float(n) * _UNITS[u] for n, u in re.findall(r"([0-9]+(?:\.[0-9]+)?)\s*(ns|µs|us|ms|s)\b", line)]


def save(figure: "plt.Figure", name: str, source: str) -> pathlib.Path:
    """Writes `docs/charts/NAME.svg`, with the results file it plots named under the chart."""
    figure.text(0.01, 0.005, f"data: docs/results/{source}", fontsize=8, color="#555555")
    figure.tight_layout(rect=(0, 0.03, 1, 1))
    path = HERE / f"{name}.svg"
    figure.savefig(path, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(figure)
    return path


def bars(
    ax: "plt.Axes", labels: List[str], values: List[float], colours: List[str], unit: str, digits: str = ".3g"
) -> None:
    """Horizontal bars with their values written at their ends, in the format `digits` (`.0f` for whole GB/s)."""
    ax.barh(labels, values, color=colours)
    ax.invert_yaxis()
    for y, v in enumerate(values):
        ax.text(v, y, f" {v:{digits}} {unit}".rstrip(), va="center", fontsize=9)
    ax.set_xlabel(unit)


def pairs(text: str, pattern: str) -> List[Tuple[str, ...]]:
    """Every match of `pattern` in `text`, as tuples."""
    return re.findall(pattern, text)


def grouped_bars(ax: "plt.Axes", groups: int, series: List[Tuple[str, List[float], str]], unit: str) -> None:
    """Horizontal bars in `groups` rows, one bar a row for each of `series` (name, values, colour), side by side
    within the row, each with its value written at its end."""
    height = 0.75 / len(series)
    for k, (name, values, colour) in enumerate(series):
        ys = [g + (k - (len(series) - 1) / 2) * height for g in range(groups)]
        ax.barh(ys, values, height=height, color=colour, label=name)
        for y, v in zip(ys, values):
            ax.text(v, y, f" {v:.3g} {unit}", va="center", fontsize=9)
