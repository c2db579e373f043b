"""Charts of results in a notebook or a file, with matplotlib (the optional ``plot`` extra): the same charts the
command line's ``--plot`` draws, so that a sweep read in Jupyter looks like the one in the guide.

matplotlib is imported only when a chart is asked for, so the package itself depends on NumPy alone; without it,
``plot()`` raises an ``ImportError`` that says what to install.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

if TYPE_CHECKING:  # pragma: no cover - types only
    from . import RunResult, SweepResult

# The command line's colours per backend (its `export::colour`): the CPU blue, CUDA green, WGSL red.
_COLOURS = {"cpu": "#1f77b4", "cuda": "#2ca02c", "wgpu": "#d62728"}


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as pyplot
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError('plot() needs matplotlib: pip install "gpuworthy[plot]" (or pip install matplotlib)') from e
    return pyplot


def _axes(ax: Any) -> Tuple[Any, Any]:
    """The axes to draw on: ``ax`` if given, else a new figure's."""
    if ax is not None:
        return ax.figure, ax
    figure, ax = _pyplot().subplots(figsize=(9, 6))
    return figure, ax


def _save(figure: Any, path: Optional[str]) -> None:
    if path is not None:
        figure.savefig(path, bbox_inches="tight")


def _colour(backend: str, label: str) -> str:
    """The backend's colour; a device other than the backend's default (``cuda:1``, ``wgpu(cpu)``) a lighter one."""
    base = _COLOURS.get(backend, "#7f7f7f")
    if label == backend:
        return base
    rgb = [int(base[i : i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{c // 2 + 128:02x}" for c in rgb)


def sweep_chart(sweep: "SweepResult", ax: Any = None, path: Optional[str] = None) -> Any:
    """Time against size for each device's best variant, kernel (thick) and, for GPUs, end to end with the data on the
    host (thin), with the crossovers marked: the command line's ``sweep --plot``. Returns the axes."""
    figure, ax = _axes(ax)
    rows = [r for r in sweep.rows if r.get("check") != "failed"]
    elements: Dict[str, int] = {r["size"]: max(int(r["elements"]), 1) for r in rows}
    labels: List[str] = []
    for r in rows:
        if r["label"] not in labels:
            labels.append(r["label"])
    for label in labels:
        mine = [r for r in rows if r["label"] == label]
        backend, on_gpu = mine[0]["backend"], bool(mine[0]["on_gpu"])
        colour = _colour(backend, label)
        sizes = sorted({r["size"] for r in mine}, key=lambda s: elements[s])

        def best(key: str, size: str) -> float:
            return min(float(r[key]) for r in mine if r["size"] == size)

        x = [elements[s] for s in sizes]
        ax.plot(x, [best("kernel_s", s) for s in sizes], "o-", color=colour, linewidth=2.5, label=f"{label} kernel")
        if on_gpu:
            ax.plot(
                x,
                [best("end_to_end_s", s) for s in sizes],
                "-",
                color=colour,
                linewidth=1,
                label=f"{label} end-to-end (data on the host)",
            )
    crossover = sweep.crossover or {}
    for placement in ("resident", "host"):
        crossing = crossover.get(placement)
        if crossing and crossing[0] in elements:
            size, gpu = crossing[0], crossing[1]
            device = gpu.split(", ")[0]
            backend = device.split(":")[0].split("(")[0]
            ax.axvline(
                elements[size], color=_colour(backend, device), alpha=0.6, linewidth=2,
                label=f"crossover ({placement}): {size}, {gpu}",
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("elements")
    ax.set_ylabel("seconds")
    ax.set_title(f"{sweep.workload}: time per run (lower is better)")
    ax.grid(True, which="major", alpha=0.3)
    if labels:
        ax.legend(fontsize="small")
    _save(figure, path)
    return ax


def phases_chart(results: Sequence["RunResult"], ax: Any = None, path: Optional[str] = None) -> Any:
    """Each result's phases as one stacked bar (upload, kernel, download; first call and compile beside them): where
    a run's time goes, the lesson of the guide's first chapter. Returns the axes."""
    figure, ax = _axes(ax)
    names = [f"{r.device}\n{r.variant}" for r in results]
    bottoms = [0.0] * len(results)
    for phase, colour in (("upload", "#9467bd"), ("kernel", "#2ca02c"), ("download", "#ff7f0e")):
        heights = [getattr(r, phase).median_s for r in results]
        ax.bar(names, heights, bottom=bottoms, color=colour, label=f"{phase} (median)")
        bottoms = [b + h for b, h in zip(bottoms, heights)]
    for i, r in enumerate(results):
        low, high = r.end_to_end.p25_s, r.end_to_end.p75_s
        ax.errorbar(i, r.end_to_end.median_s, yerr=[[r.end_to_end.median_s - low], [high - r.end_to_end.median_s]],
                    fmt="k_", capsize=6, label="end to end: median, p25 to p75" if i == 0 else None)
    ax.set_yscale("log")
    ax.set_ylabel("seconds")
    first = results[0] if results else None
    ax.set_title(f"{first.workload} {first.size}: where the time goes" if first else "no results")
    ax.legend(fontsize="small")
    _save(figure, path)
    return ax


def evaluation_chart(evaluation: Dict[str, Any], ax: Any = None, path: Optional[str] = None) -> Any:
    """Each evaluation point's regret (auto's time over the fastest's) by workload, data resident and on the host
    marked apart, with the 10% line. Returns the axes."""
    figure, ax = _axes(ax)
    points = [p for p in evaluation.get("points", []) if p.get("regret") is not None]
    workloads: List[str] = []
    for p in points:
        if p["workload"] not in workloads:
            workloads.append(p["workload"])
    for placement, label, marker in (
        ("Resident", "data resident", "o"),
        ("Host", "data on the host", "s"),
        ("PinnedHost", "data on the host, pinned", "^"),
    ):
        mine = [p for p in points if p["placement"] == placement]
        if mine:
            ax.scatter(
                [workloads.index(p["workload"]) for p in mine], [p["regret"] for p in mine], marker=marker,
                alpha=0.7, label=label,
            )
    ax.axhline(1.10, color="#d62728", linestyle="--", label="within 10% of the fastest")
    ax.set_xticks(range(len(workloads)))
    ax.set_xticklabels(workloads, rotation=30, ha="right")
    ax.set_ylabel("auto's time / the fastest's")
    within = sum(1 for p in points if p["regret"] <= 1.10)
    ax.set_title(f"auto's choices: {within} of {len(points)} points within 10% of the fastest")
    ax.legend(fontsize="small")
    _save(figure, path)
    return ax


def html_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], caption: str = "") -> str:
    """A small HTML table for Jupyter's rich display, every cell escaped."""
    import html

    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    title = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{title}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def seconds(value: Optional[float]) -> str:
    """A duration as a person reads it: ``12.3 µs``, ``4.56 ms``, ``1.23 s``."""
    if value is None:
        return "-"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(value) >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e-9:.3g} ns"
