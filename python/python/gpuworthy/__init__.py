"""gpuworthy: is this work worth sending to the GPU?

The same computations run on the CPU (Rust, rayon and explicit SIMD), on NVIDIA GPUs (CUDA C compiled at run time)
and on any GPU through WGSL compute shaders (wgpu: Vulkan, Metal, DX12, or a CPU through Mesa's lavapipe), every
phase measured (compile, upload, kernel, download), every result checked against a reference.

    >>> import gpuworthy, numpy as np
    >>> f = gpuworthy.expr("y = 2*x")
    >>> f(x=np.arange(4, dtype=np.float32))
    array([0., 2., 4., 6.], dtype=float32)

The work runs in Rust with the GIL released. Arrays are read from NumPy in place (float32, C-contiguous, one
dimension) and results come back as NumPy arrays; records (measurements, predictions, sweeps) are plain Python
objects with attributes and ``to_dict()``, and ``to_dataframe()`` where pandas is installed.
"""

from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Literal, Optional, Sequence, Tuple, Union, cast, overload

import numpy as np

from . import _arrays, _gpuworthy, _plot, _progress
from ._gpuworthy import Unavailable

__version__ = _gpuworthy.__version__

__all__ = [
    "Unavailable",
    "Device",
    "Phase",
    "RunResult",
    "Prediction",
    "Explanation",
    "SweepResult",
    "Expr",
    "RawKernel",
    "devices",
    "run",
    "run_group",
    "GroupResult",
    "GroupMember",
    "explain",
    "sweep",
    "calibrate",
    "expr",
    "plot_runs",
    "plot_evaluation",
]


def _dataframe(records: List[Dict[str, Any]]) -> Any:
    try:
        import pandas
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("to_dataframe() needs pandas: pip install pandas") from e
    return pandas.json_normalize(records)


@dataclass(frozen=True)
class Device:
    """A backend's device as this machine has it, or one it lacks and why (``available`` False, ``reason``)."""

    label: str
    backend: str
    name: Optional[str]
    driver: Optional[str]
    is_gpu: Optional[bool]
    available: bool
    reason: Optional[str]

    def to_dict(self) -> Dict[str, Any]:
        """The device as a dictionary."""
        return asdict(self)


def devices() -> List[Device]:
    """Every device this machine has (``available``), and for each backend it cannot run, the reason.

    Raises ``ValueError`` naming the variable when a ``GPUWORTHY_*`` variable a backend reads holds a value it does
    not accept (``GPUWORTHY_CPU_SIMD=bogus``, ``GPUWORTHY_WGPU_CHECKS=speed`` ...): a mistake to fix, not a backend
    missing here.
    """
    return [Device(**d) for d in json.loads(_gpuworthy.devices())]


@dataclass(frozen=True)
class Phase:
    """One phase's times over its repetitions, in seconds: the median and the spread around it."""

    median_s: float
    min_s: float
    max_s: float
    p25_s: float
    p75_s: float
    samples: int

    def to_dict(self) -> Dict[str, Any]:
        """The phase as a dictionary."""
        return asdict(self)


@dataclass(frozen=True)
class RunResult:
    """One variant of one workload measured on one device: every phase, the throughput and the check.

    ``compile_s`` and ``first_call_s`` are the first use (compiling the kernel, then one synchronised call); the
    phases ``upload``, ``kernel`` (on resident data, by the device's own timer), ``download`` and ``end_to_end`` are
    the repetitions after warm-up. ``check`` is ``"passed"``, ``"not checked"`` or ``"failed: ..."``. ``reason`` says
    why auto chose this device, where it did.
    """

    workload: str
    size: str
    device: str
    device_name: str
    is_gpu: bool
    variant: str
    kernel_clock: str
    compile_s: float
    first_call_s: float
    upload: Phase
    kernel: Phase
    download: Phase
    end_to_end: Phase
    bytes: int
    flops: int
    kernel_gb_per_s: float
    kernel_gflop_per_s: float
    check: str
    reason: Optional[str] = None
    launches: Optional[Dict[str, Any]] = None
    clocks: Optional[Dict[str, Phase]] = None

    @staticmethod
    def _from(record: Dict[str, Any]) -> "RunResult":
        phases: Dict[str, Any] = {k: Phase(**record[k]) for k in ("upload", "kernel", "download", "end_to_end")}
        clocks = record.get("clocks")
        if clocks is not None:
            phases["clocks"] = {name: Phase(**times) for name, times in clocks.items()}
        return RunResult(**{**record, **phases})

    @property
    def passed(self) -> bool:
        """Whether the output matched the reference (False where it was not checked)."""
        return self.check == "passed"

    def to_dict(self) -> Dict[str, Any]:
        """The result as a (nested) dictionary."""
        return asdict(self)

    def to_dataframe(self) -> Any:
        """The result as a one-row pandas DataFrame (phases flattened: ``kernel.median_s`` ...)."""
        return _dataframe([self.to_dict()])

    def plot(self, ax: Any = None, path: Optional[str] = None) -> Any:
        """Where the run's time goes: upload, kernel and download stacked, end to end's spread beside them, with
        matplotlib; :func:`plot_runs` puts several results side by side. Returns the axes."""
        return _plot.phases_chart([self], ax=ax, path=path)

    def _phase_rows(self) -> List[Tuple[str, str, str, str]]:
        """Each phase as people read it: its name, median, p25 and p75 (the spread empty for the single-shot
        compile and first call)."""
        rows = [("compile", _plot.seconds(self.compile_s), "", ""), ("first call", _plot.seconds(self.first_call_s), "", "")]
        for name in ("upload", "kernel", "download", "end_to_end"):
            phase = getattr(self, name)
            rows.append((name.replace("_", " "), _plot.seconds(phase.median_s), _plot.seconds(phase.p25_s),
                         _plot.seconds(phase.p75_s)))
        # With no_sync, one launch timed three ways, in chapter 10's order.
        clocks = self.clocks or {}
        for name, label in (("host_unsynchronised", "launch, host clock, no sync (wrong)"),
                            ("host_synchronised", "launch, host clock, synchronised"),
                            ("device_timer", "launch, device timer")):
            if name in clocks:
                phase = clocks[name]
                rows.append((label, _plot.seconds(phase.median_s), _plot.seconds(phase.p25_s),
                             _plot.seconds(phase.p75_s)))
        return rows

    def __str__(self) -> str:
        """The result as ``print`` shows it: a title line, then each phase's median with its spread (p25 to p75), as
        the command line's ``gpuworthy run`` prints its table."""
        lines = [
            f"{self.workload} {self.size} on {self.device} ({self.device_name}), {self.variant}: "
            f"{self.kernel_gb_per_s:.1f} GB/s, {self.kernel_gflop_per_s:.1f} GFLOP/s, check {self.check}"
        ]
        rows = self._phase_rows()
        width = max([11] + [len(name) for name, _, _, _ in rows])
        for name, median, p25, p75 in rows:
            spread = f"   ({p25} to {p75})" if p25 else ""
            lines.append(f"  {name:{width}} {median:>10}{spread}")
        if self.reason:
            lines.append(f"  {self.reason}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """The result as Jupyter shows it: every phase's median and spread, the throughput and the check."""
        rows = self._phase_rows()
        caption = (
            f"{self.workload} {self.size} on {self.device} ({self.device_name}), {self.variant}: "
            f"{self.kernel_gb_per_s:.1f} GB/s, check {self.check}"
        )
        return _plot.html_table(("phase", "median", "p25", "p75"), rows, caption=caption)


Size = Union[str, int, Sequence[int]]
"""A workload's size: ``1 << 20``, ``(1024, 1024, 1024)`` for matmul's M, K, N, ``(2048, 2048)`` for rows and columns,
or the command line's text (``"2^20"``, ``"16M"``, ``"1024x1024"``)."""


def _size_text(size: Optional[Size]) -> Optional[str]:
    """A size as the command line writes it: ``1 << 20`` is ``"1048576"``, ``(1024, 512)`` is ``"1024x512"``."""
    if size is None or isinstance(size, str):
        return size
    if isinstance(size, (bool, np.bool_)):
        raise TypeError(f"size {size!r} is a boolean: pass a number of elements, a tuple of dimensions or a string")
    if isinstance(size, (int, np.integer)):
        return str(int(size))
    if isinstance(size, (tuple, list)) and size and all(
        isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_)) for d in size
    ):
        return "x".join(str(int(d)) for d in size)
    raise TypeError(
        f"size {size!r} is a {type(size).__name__}: pass a number of elements (1 << 20), a tuple of dimensions"
        " ((1024, 1024, 1024)) or a string (\"2^20\")"
    )


def _required_size(size: Size) -> str:
    """:func:`_size_text` for a size that must be given."""
    text = _size_text(size)
    if text is None:
        raise TypeError("size is None: pass a number of elements, a tuple of dimensions or a string")
    return text


# "all" is a string too: the first overload wins for it, which is what the overlap mypy reports means.
@overload
def run(  # type: ignore[overload-overlap]
    workload: str,
    size: Optional[Size] = ...,
    backend: str = ...,
    *,
    variant: Literal["all"],
    quick: bool = ...,
    seed: int = ...,
    pinned: bool = ...,
    pipelined: bool = ...,
    launches: Optional[int] = ...,
    precision: Union[str, Sequence[str], None] = ...,
    tolerance: Optional[float] = ...,
    bins: Optional[int] = ...,
    distribution: Optional[str] = ...,
    region: Optional[str] = ...,
    max_iter: Optional[int] = ...,
    block_size: Optional[int] = ...,
    no_sync: bool = ...,
) -> List[RunResult]: ...


@overload
def run(
    workload: str,
    size: Optional[Size] = ...,
    backend: str = ...,
    variant: Optional[str] = ...,
    quick: bool = ...,
    seed: int = ...,
    pinned: bool = ...,
    pipelined: bool = ...,
    launches: Optional[int] = ...,
    precision: Union[str, Sequence[str], None] = ...,
    tolerance: Optional[float] = ...,
    bins: Optional[int] = ...,
    distribution: Optional[str] = ...,
    region: Optional[str] = ...,
    max_iter: Optional[int] = ...,
    block_size: Optional[int] = ...,
    no_sync: bool = ...,
) -> RunResult: ...


def run(
    workload: str,
    size: Optional[Size] = None,
    backend: str = "auto",
    variant: Optional[str] = None,
    quick: bool = False,
    seed: int = 1,
    pinned: bool = False,
    pipelined: bool = False,
    launches: Optional[int] = None,
    precision: Union[str, Sequence[str], None] = None,
    tolerance: Optional[float] = None,
    bins: Optional[int] = None,
    distribution: Optional[str] = None,
    region: Optional[str] = None,
    max_iter: Optional[int] = None,
    block_size: Optional[int] = None,
    no_sync: bool = False,
) -> Union[RunResult, List[RunResult]]:
    """Measures a built-in workload (``square``, ``saxpy``, ``sum``, ``softmax``, ``matmul``, ``mandelbrot``,
    ``histogram``, ``stencil``) at ``size`` (``1 << 24``, ``(1024, 1024)``, ``(M, K, N)`` or the command line's
    ``"2^24"``, ``"16M"``, ``"1024x1024"``, ``"MxKxN"``; the workload's largest quick size by default) on ``backend`` (``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"wgpu"``, ...).

    Returns one :class:`RunResult` for one variant (auto's choice, the device's best, or the one named), or a list for
    ``variant="all"``. ``quick`` takes fewer repetitions. On CUDA, ``pinned=True`` moves the data through pinned
    (page-locked) staging memory and ``pipelined=True`` overlaps the copies with the kernels in chunks (the command
    line's ``--pinned`` and ``--pipelined``); ``launches=k`` also times k kernels between one upload and one download
    (``launches``: the time per kernel, and with one kernel per transfer), the lesson of ``--launches``.

    Auto chooses among ``f32`` variants unless you allow lower precisions: ``precision="bf16"`` (or a list of
    ``"tf32"``, ``"bf16"``, ``"fp16"``) names them, ``tolerance=1e-2`` allows every precision whose error bound at this
    size (the root-mean-square error relative to the products' norms) is within it; as ``--precision`` and
    ``--tolerance`` do on the command line. With ``variant="all"`` they keep the device's variants in those precisions.

    A workload's own parameters, as the command line's options of the same names: histogram's ``bins`` (1 to 65536)
    and ``distribution`` (``"uniform"``, or ``"skewed"``: 90% of the values in one bin, the atomics' contention),
    mandelbrot's ``region`` (``"whole"``, ``"inside"``, ``"boundary"`` or ``"XMIN,XMAX,YMIN,YMAX"``) and ``max_iter``
    (1 to 2^20). An option the workload does not have is a ``ValueError`` that names it.

    ``block_size`` sets the threads per block (CUDA) or invocations per workgroup (wgpu) of the elementwise kernels,
    ``square`` and ``saxpy``, on a device opened for the call (the command line's ``--block-size``; chapter 13's
    lesson); it needs a named GPU backend.

    ``no_sync=True`` also times one launch on resident data three ways, in ``clocks``: the host's clock around the
    launch call alone (``host_unsynchronised``: wrong on purpose, it reads how long queueing the kernel took), the
    host's clock around the launch and a synchronisation (``host_synchronised``), and the device's own timer
    (``device_timer``); the command line's ``--no-sync``, chapter 10's lesson.

    Raises ``ValueError`` for a bad request (an unknown workload, variant or device, a malformed size, a size too
    large for this machine's memory or the device's limits, a bad ``GPUWORTHY_*`` variable), :class:`Unavailable` for
    a backend that cannot run here, ``RuntimeError`` for a device's failure.
    """
    precisions = precision if precision is None or isinstance(precision, str) else ",".join(precision)
    records = json.loads(
        _gpuworthy.run(
            workload, _size_text(size), backend, variant, quick, seed, pinned, pipelined, launches, precisions, tolerance,
            bins, distribution, region, max_iter, block_size, no_sync,
        )
    )
    results = [RunResult._from(r) for r in records]
    return results if variant == "all" else results[0]


@dataclass(frozen=True)
class GroupMember:
    """One member of a group's run: its share of the work, the units it took (rows, elements ...), its variant, its
    time in the group and alone on the whole input."""

    name: str
    share: float
    units: Optional[List[int]]
    variant: Optional[str]
    in_group_s: Optional[float]
    alone_s: float


@dataclass(frozen=True)
class GroupResult:
    """A workload split over a device group and measured, as ``gpuworthy run --backend GROUP`` reports it.

    From the host: each member alone on the whole input (``alone_s``), the shares (``shares_from`` says whether the
    calibration balanced them or each member's time alone did), and the median of ``repeats`` group runs:
    ``group_s`` is the members at once (``parallel_s``, of which cutting their parts ``split_s``) plus joining the
    parts (``join_s``); ``in_place`` says the members wrote their parts straight into one output instead (nothing
    cut by the group, nothing joined); ``speedup`` is the fastest member alone over the group. ``resident`` holds the
    phases with the data kept on the members: upload, a launch on the host's clock, the slowest member's kernel on
    its own timer, the fastest member alone, download and join, and a launch with its download and join on the
    host's clock beside the fastest member's launch and download (``with_combine_s``, ``with_combine_alone_s``). ``check`` is ``"passed"`` when both joined results matched
    the reference."""

    workload: str
    size: str
    group: str
    unit: str
    shares_from: str
    members: List[GroupMember]
    group_s: float
    parallel_s: float
    split_s: float
    join_s: float
    in_place: bool
    speedup: float
    repeats: int
    resident: Dict[str, float]
    check: str

    @property
    def passed(self) -> bool:
        """Whether the joined results matched the reference."""
        return self.check == "passed"

    def to_dict(self) -> Dict[str, Any]:
        """The result as a (nested) dictionary."""
        return asdict(self)

    def _repr_html_(self) -> str:
        """The group's run as Jupyter shows it: each member's share and times, and the group's."""
        rows = [
            (m.name, f"{100 * m.share:.1f}%", "-" if m.units is None else f"{m.units[0]}..{m.units[1]}",
             m.variant or "-", _plot.seconds(m.in_group_s), _plot.seconds(m.alone_s))
            for m in self.members
        ]
        caption = (
            f"{self.workload} {self.size} on {self.group}: {_plot.seconds(self.group_s)}, {self.speedup:.2f}x the "
            f"fastest member alone; shares {self.shares_from}; check {self.check}"
        )
        return _plot.html_table(("member", "share", self.unit, "variant", "in group", "alone"), rows, caption)


def run_group(
    workload: str, group: str, size: Optional[Size] = None, quick: bool = True, seed: int = 1
) -> GroupResult:
    """Measures a built-in workload split over a device group: ``"cpu+wgpu"`` (the CPU and WGSL's adapter),
    ``"cuda:0,1"``, ``"cuda:*"`` (every GPU), ``"cpu+cuda"``: each member takes a share of the work in proportion to
    its speed, the parts are cut from the input and joined on the host, and the joined result is checked against the
    reference. Is a second device worth it? ``speedup`` says, from the host and resident.

    Raises ``ValueError`` for a workload that does not split, a group that names one device or a member twice, a
    size a member cannot take; :class:`Unavailable` for a member that cannot run here, named."""
    record = json.loads(_gpuworthy.run_group(workload, group, _size_text(size), quick, seed))
    record["members"] = [GroupMember(**m) for m in record["members"]]
    return GroupResult(**record)


def plot_runs(results: Sequence[RunResult], ax: Any = None, path: Optional[str] = None) -> Any:
    """Several results side by side (``run(..., variant="all")``, or one workload on each backend): each one's
    upload, kernel and download stacked, with matplotlib. Returns the axes."""
    return _plot.phases_chart(list(results), ax=ax, path=path)


@dataclass(frozen=True)
class Prediction:
    """The cost model's prediction for one device, in seconds; ``pipelined`` where the data would move through CUDA's
    pipelined path."""

    device: str
    is_gpu: bool
    variant: str
    upload_s: float
    launch_s: float
    kernel_s: float
    download_s: float
    total_s: float
    pipelined: bool = False

    def to_dict(self) -> Dict[str, Any]:
        """The prediction as a dictionary."""
        return asdict(self)


@dataclass(frozen=True)
class Explanation:
    """Where auto would run a workload at a size, and why, with every device's predicted phases (fastest first)."""

    workload: str
    size: str
    placement: str
    bytes: int
    flops: int
    device: str
    variant: str
    pipelined: bool
    reason: str
    predictions: List[Prediction] = field(default_factory=list)
    uncalibrated: Optional[str] = None
    model_error: Optional[Dict[str, Any]] = None
    on: Optional[str] = None
    cpu_from: Optional[str] = None

    def to_dict(self) -> Dict[str, Any]:
        """The explanation as a (nested) dictionary."""
        return asdict(self)

    def to_dataframe(self) -> Any:
        """The predictions as a pandas DataFrame, one row per device."""
        return _dataframe([p.to_dict() for p in self.predictions])

    def _repr_html_(self) -> str:
        """The explanation as Jupyter shows it: every device's predicted phases, fastest first, and the reason."""
        rows = [
            (p.device + (" (pipelined)" if p.pipelined else ""), p.variant, _plot.seconds(p.upload_s),
             _plot.seconds(p.kernel_s), _plot.seconds(p.download_s), _plot.seconds(p.total_s))
            for p in self.predictions
        ]
        where = f" beside {self.on}" if self.on else ""
        caption = f"{self.workload} {self.size}, {self.placement}{where}: {self.device} ({self.reason})"
        return _plot.html_table(("device", "variant", "upload", "kernel", "download", "total"), rows, caption)


def explain(
    workload: str,
    size: Size,
    placement: str = "host",
    *,
    on: Optional[str] = None,
    gpu_memory: Optional[float] = None,
    gpu_compute: Optional[float] = None,
    link: Optional[float] = None,
    unified: bool = False,
) -> Explanation:
    """Auto's choice for ``workload`` at ``size`` with the data on the ``"host"``, ``"resident"`` on the device, or
    moved through ``"pinned"`` memory: predicted from this machine's calibration (see :func:`calibrate`), without
    measuring. Without a calibration, auto's default and the reason (``uncalibrated``).

    With ``on="nvidia-h100"`` (or ``"nvidia-h200"``), the prediction puts this machine's CPU beside that reference
    machine's measured GPUs, as ``gpuworthy explain --on`` does: the answer for a GPU you do not have. The what-ifs
    change that GPU: ``gpu_memory`` (its memory's GB/s), ``gpu_compute`` (a share of the reference GPU's arithmetic),
    ``link`` (the host link's GB/s each way), ``unified`` (memory shared with the CPU). ``on`` says whose GPU it is,
    ``cpu_from`` where the CPU's times came from (this machine's calibration, or a few seconds measured now).

    Raises ``ValueError`` for an unknown workload, placement or machine, a malformed size, one too large for this
    machine's memory, a what-if that is not a positive number, or a what-if without ``on``."""
    record = json.loads(
        _gpuworthy.explain(
            workload, _required_size(size), placement, on, gpu_memory, gpu_compute, link, bool(unified)
        )
    )
    record["predictions"] = [Prediction(**p) for p in record["predictions"]]
    return Explanation(**record)


@dataclass(frozen=True)
class SweepResult:
    """A workload swept over sizes: every row measured (one per size, device and variant), what could not be
    measured and why (``notes``), and the crossovers with the verdict."""

    workload: str
    rows: List[Dict[str, Any]]
    notes: List[Dict[str, Any]]
    crossover: Optional[Dict[str, Any]]

    def to_dict(self) -> Dict[str, Any]:
        """The sweep as a dictionary."""
        return asdict(self)

    def to_dataframe(self) -> Any:
        """The rows as a pandas DataFrame."""
        return _dataframe(self.rows)

    def plot(self, ax: Any = None, path: Optional[str] = None) -> Any:
        """Time against size for each device's best variant, kernel and (for GPUs) end to end, crossovers marked:
        the command line's ``sweep --plot``, with matplotlib (``pip install "gpuworthy[plot]"``). Draws on ``ax``
        (a new figure's axes by default), saves to ``path`` when given (``.png``, ``.svg``, ``.pdf``), returns the
        axes."""
        return _plot.sweep_chart(self, ax=ax, path=path)

    def _repr_html_(self) -> str:
        """The sweep as Jupyter shows it: the best time per size and device, and the verdict."""
        best: Dict[Tuple[str, str], Dict[str, Any]] = {}
        for r in self.rows:
            key = (r["size"], r["label"])
            if key not in best or r["kernel_s"] < best[key]["kernel_s"]:
                best[key] = r
        rows = [
            (size, label, r["variant"], _plot.seconds(r["kernel_s"]), _plot.seconds(r["end_to_end_s"]), r["check"])
            for (size, label), r in best.items()
        ]
        verdict = (self.crossover or {}).get("verdict", "")
        headers = ("size", "device", "best variant", "kernel", "end to end", "check")
        return _plot.html_table(headers, rows, caption=f"{self.workload}: {verdict}")


def sweep(
    workload: str,
    sizes: Optional[Sequence[Size]] = None,
    backends: Optional[Sequence[str]] = None,
    quick: bool = True,
    budget_s: float = 4.0,
    progress: Any = True,
) -> SweepResult:
    """Measures ``workload`` at each size (the quick ladder by default, the full one with ``quick=False``, or the
    ``sizes`` given) on each backend (all by default) and finds where a GPU starts to win, with the data resident and
    from the host. A variant whose next size would take longer than ``budget_s`` per measurement stops there.

    ``progress`` shows a bar while it measures (tqdm's where it is installed, in a notebook or a terminal; ``False``
    for none; or a callable ``(planned, done, measuring)`` of yours); Ctrl-C stops the sweep with
    ``KeyboardInterrupt``, leaving nothing half-made behind.

    A size that cannot be measured (too large for this machine or a device) is left out with a note. Raises
    ``ValueError`` for a bad request (an unknown workload or device, a malformed size, ``budget_s`` not positive) and
    when no size could be measured at all (the message gives each note), :class:`Unavailable` when none of the
    ``backends`` can run here.
    """
    asked = None if sizes is None else [_required_size(size) for size in sizes]
    with _progress.Progress(progress, f"sweeping {workload}") as callback:
        record = json.loads(
            _gpuworthy.sweep(workload, asked, None if backends is None else list(backends), quick, budget_s, callback)
        )
    return _sweep_result(record, asked)


def _sweep_result(record: Dict[str, Any], asked: Optional[List[str]]) -> SweepResult:
    """A sweep's record as a :class:`SweepResult`; a sweep that measured nothing refused, as the command line
    refuses it: a request this machine cannot serve."""
    if not record["rows"] and (asked is None or asked):
        why = [f"{note['size']}: {note['message']}" for note in record["notes"]]
        raise ValueError(
            f"{record['workload']}: no size could be measured here:\n  "
            + ("\n  ".join(why) if why else "no device took it")
        )
    return SweepResult(
        workload=record["workload"], rows=record["rows"], notes=record["notes"], crossover=record.get("crossover")
    )


def calibrate(progress: Any = True, evaluate: bool = False) -> Dict[str, Any]:
    """Measures what the cost model needs on this machine (about a minute) and saves it where ``auto`` and
    :func:`explain` find it (``GPUWORTHY_CALIBRATION``, else the user's cache directory). Returns where it went
    (``path``), how long it took and the devices it measured.

    With ``evaluate=True`` it then measures, at the sizes calibration did not use, auto's choice against the fastest
    device for every built-in workload (the command line's ``calibrate --evaluate``; minutes): ``evaluation`` holds
    each point (``regret``: auto's time over the fastest's) and :func:`plot_evaluation` draws them.

    ``progress`` shows a bar while it measures (as for :func:`sweep`); Ctrl-C stops it with ``KeyboardInterrupt``
    and nothing is saved."""
    with _progress.Progress(progress, "calibrating") as callback:
        record: Dict[str, Any] = json.loads(_gpuworthy.calibrate(callback, evaluate))
    return record


def plot_evaluation(evaluation: Dict[str, Any], ax: Any = None, path: Optional[str] = None) -> Any:
    """An evaluation (``calibrate(evaluate=True)["evaluation"]``) as a chart: each point's regret (auto's time over
    the fastest's; 1 is the best choice) by workload, with the 10% line the cost model aims under, as the command
    line's evaluation table reads. Returns the axes."""
    return _plot.evaluation_chart(evaluation, ax=ax, path=path)


class Expr:
    """A computation in gpuworthy's expression language (``"y = a*x + b"``; several statements, ``where``,
    reductions such as ``"s = sum(x*x)"``), compiled for the CPU, CUDA and WGSL and checked against an ``f64``
    reference by the test suite.

    Call it with NumPy float32 arrays and numbers by name; it returns the output array (or the reduction's value), or
    a dict of outputs when there are several. ``device="auto"`` runs it where this machine's calibration predicts it
    fastest; ``last_run`` says where it ran and why.
    """

    def __init__(self, source: str) -> None:
        self._compiled = _gpuworthy._Expr(source)
        # The last call's record: JSON from a host call, (ordinal, library) from a call on device arrays; read by
        # `last_run` when asked, so that a call does not pay for building it.
        self._last_run: Optional[Union[str, Tuple[Any, ...]]] = None
        self._plans: Dict[Tuple[str, ...], Any] = {}
        # Per device argument: a call on device arrays made cheap once one has run (see `_remember`), and the
        # record `last_run` reads for it.
        self._launchers: Dict[str, Tuple[Any, Tuple[Any, ...]]] = {}

    @property
    def source(self) -> str:
        """The expression's text."""
        return self._compiled.source

    @property
    def last_run(self) -> Dict[str, Any]:
        """Where the last call ran and why: ``device``, ``device_name``, ``variant``, ``reason``, and the arguments
        converted on the way (``conversions``, ``conversion_s``); empty before the first call."""
        if isinstance(self._last_run, str):
            parsed: Dict[str, Any] = json.loads(self._last_run)
            return parsed
        if isinstance(self._last_run, tuple):
            ordinal, library, conversions, conversion_s, storage = self._last_run
            stored = "" if storage == "f32" else f", on their {storage} storage (computed in float32)"
            record: Dict[str, Any] = {
                "device": f"cuda:{ordinal}",
                "device_name": None,
                "variant": "generated",
                "reason": f"the arrays are on cuda:{ordinal} ({library}): computed where they are{stored}, no copy",
                "storage": storage,
            }
            if conversions:
                record["reason"] = (
                    f"the arrays are on cuda:{ordinal} ({library}): computed there{stored}, converted on the GPU"
                )
                record.update(conversions=conversions, conversion_s=conversion_s)
            return record
        return {}

    def __call__(
        self, device: str = "auto", *, dtype: Any = None, strict: bool = False, **arguments: Any
    ) -> Any:
        """Computes the expression on ``device`` with its arrays and scalars given by name.

        Parameters:
            device: ``"auto"`` (where this machine's calibration predicts it fastest; arrays already on a GPU are
                computed where they are), ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"wgpu"`` or ``"wgpu:ADAPTER"``.
            dtype: the results' dtype (``numpy.float64`` ..., or a torch dtype for torch tensors); ``None`` gives
                float32, the precision the kernels compute in, or the inputs' 16-bit type when they share one.
            strict: ``True`` refuses every array that is not already one-dimensional, C-contiguous float32 (nothing
                is converted behind your back).
            **arguments: each array the expression reads, and each scalar, by name. An array is anything NumPy
                reads (an array of any real dtype and shape, a strided view, a broadcast, a 0-d array, a Python
                sequence, a torch CPU tensor, anything with ``__array__`` or ``__dlpack__``), or an array on a CUDA
                GPU (a CuPy array, a torch CUDA tensor, a JAX array: computed on its GPU with ``device="auto"``,
                ``"cuda"`` or ``"cuda:N"``). Float32 C-contiguous arrays are read in place; arrays all of one
                16-bit type (NumPy ``float16``, ``ml_dtypes.bfloat16``, torch ``float16`` or ``bfloat16`` on the
                host or a GPU, CuPy ``float16``) are computed on that storage, in float32, and give results in it;
                others are converted once to float32 (on their GPU for GPU arrays), a phase ``last_run`` reports. The arrays broadcast
                together as in NumPy, and array outputs come back in that shape. A scalar is a Python or NumPy
                number.

        Returns:
            The output array (of the inputs' library: NumPy, CuPy or torch; of their common shape), a ``float`` for a
            reduction (``"s = sum(x*x)"``), or a dict of outputs by name when the expression has several.
            ``last_run`` then says where it ran and why, and which arguments were converted (``conversions``,
            ``conversion_s``).

        Raises:
            ValueError: shapes that do not broadcast together; a complex array; an array or scalar the expression
                needs that was not given, or one it does not read; an unknown device; with ``strict=True``, an array
                that would need converting (the message names the argument and the fix).
            TypeError: an argument that is neither an array nor a number (a string, a dict); a ``dtype`` that is not
                one.
            Unavailable: the device asked for cannot run here (its driver, adapter or library is missing).
            RuntimeError: the device failed while running.
        """
        # The kept path first, before anything else is looked at: a repeated call on device arrays costs what the
        # array library's own kernel call costs.
        launcher = self._launchers.get(device) if dtype is None and not strict else None
        if launcher is not None:
            result = launcher[0](arguments)
            if result is not None:
                self._last_run = launcher[1]
                return result
        wanted = _arrays.output_dtype(dtype)
        on_gpu = {name: value for name, value in arguments.items() if _arrays.library_of(value) is not None}
        if on_gpu:
            return self._call_on_gpu(device, on_gpu, arguments, wanted, strict)
        stored = _arrays.prepare_stored(arguments, strict)
        if stored is not None:
            outputs, record = self._compiled.call_stored(device, stored.dtype, stored.bits, stored.scalars)
            self._last_run = json.dumps({**json.loads(record), **stored.record()})
            return _one_or_all(stored.restore(outputs, wanted))
        if strict:
            outputs, self._last_run = self._compiled.call(device, **arguments)
            return _one_or_all(outputs)
        prepared = _arrays.prepare_host(arguments)
        outputs, record = self._compiled.call(device, **prepared.arguments)
        if prepared.conversions:
            record = json.dumps({**json.loads(record), **prepared.record()})
        self._last_run = record
        return _one_or_all(_arrays.reshape_outputs(outputs, prepared.shape, wanted))

    @overload
    def measure(  # type: ignore[overload-overlap]
        self,
        size: Size = ...,
        backend: str = ...,
        *,
        variant: Literal["all"],
        quick: bool = ...,
        seed: int = ...,
        ranges: Optional[Dict[str, Tuple[float, float]]] = ...,
        dtype: Any = ...,
        **scalars: float,
    ) -> List[RunResult]: ...

    @overload
    def measure(
        self,
        size: Size = ...,
        backend: str = ...,
        variant: Optional[str] = ...,
        quick: bool = ...,
        seed: int = ...,
        ranges: Optional[Dict[str, Tuple[float, float]]] = ...,
        dtype: Any = ...,
        **scalars: float,
    ) -> RunResult: ...

    def measure(
        self,
        size: Size = 1 << 20,
        backend: str = "auto",
        variant: Optional[str] = None,
        quick: bool = False,
        seed: int = 1,
        ranges: Optional[Dict[str, Tuple[float, float]]] = None,
        dtype: Any = None,
        **scalars: float,
    ) -> Union[RunResult, List[RunResult]]:
        """Measures the expression at ``size`` elements on ``backend`` as :func:`run` measures a workload (the
        command line's ``run --expr``): generated inputs (drawn from ``[-1, 1)``, or ``ranges={"x": (0.5, 2)}``),
        ``scalars`` by name (``a=2.0``), every phase timed, the result checked against the ``f64`` reference.
        ``dtype`` stores the arrays as 16-bit elements (``"bf16"``, ``"f16"``, ``numpy.float16``,
        ``torch.bfloat16``: the command line's ``--dtype``), computed in float32 and checked to the type's rounding.
        Returns a :class:`RunResult` (a list for ``variant="all"``)."""
        sets, spans = _request(scalars, ranges)
        records = json.loads(
            self._compiled.measure(
                _required_size(size), sets, spans, backend, variant, quick, seed, _storage_name(dtype)
            )
        )
        results = [RunResult._from({**r, "workload": self.source}) for r in records]
        return results if variant == "all" else results[0]

    def sweep(
        self,
        sizes: Optional[Sequence[Size]] = None,
        backends: Optional[Sequence[str]] = None,
        quick: bool = True,
        budget_s: float = 4.0,
        progress: Any = True,
        ranges: Optional[Dict[str, Tuple[float, float]]] = None,
        dtype: Any = None,
        **scalars: float,
    ) -> SweepResult:
        """Sweeps the expression over sizes on backends and finds where a GPU starts to win, as :func:`sweep` does for
        a workload (the command line's ``sweep --expr``); ``scalars``, ``ranges`` and ``dtype`` as for
        :meth:`measure`."""
        sets, spans = _request(scalars, ranges)
        asked = None if sizes is None else [_required_size(size) for size in sizes]
        storage = _storage_name(dtype)
        with _progress.Progress(progress, f"sweeping {self.source}") as callback:
            text = self._compiled.sweep(
                sets, spans, asked, None if backends is None else list(backends), quick, budget_s, callback, storage
            )
        return _sweep_result(json.loads(text), asked)

    def explain(
        self,
        size: Size,
        placement: str = "host",
        *,
        on: Optional[str] = None,
        gpu_memory: Optional[float] = None,
        gpu_compute: Optional[float] = None,
        link: Optional[float] = None,
        unified: bool = False,
        ranges: Optional[Dict[str, Tuple[float, float]]] = None,
        dtype: Any = None,
        **scalars: float,
    ) -> Explanation:
        """Where auto would run the expression at ``size`` elements and why, predicted without measuring, as
        :func:`explain` does for a workload (``on=`` and the what-ifs included; ``dtype`` as for :meth:`measure`)."""
        sets, spans = _request(scalars, ranges)
        record = json.loads(
            self._compiled.explain(
                _required_size(size),
                sets,
                spans,
                placement,
                on,
                gpu_memory,
                gpu_compute,
                link,
                bool(unified),
                _storage_name(dtype),
            )
        )
        record["predictions"] = [Prediction(**p) for p in record["predictions"]]
        return Explanation(**record)

    def _call_on_gpu(
        self, device: str, arrays: Dict[str, Any], arguments: Dict[str, Any], wanted: Any, strict: bool
    ) -> Any:
        """Arrays already on a CUDA GPU (CuPy arrays, PyTorch tensors, JAX arrays through DLPack): read and written
        in place where they are flat, contiguous, and float32 or all of one 16-bit type (the kernel reads that
        storage), else converted on their GPU by their library; results allocated by the same library in the same
        storage, the kernel ordered on its current stream."""
        if not (device == "auto" or device == "cuda" or device.startswith("cuda:")):
            raise ValueError(
                f"the arrays {sorted(arrays)} are on a GPU: run them with device='cuda' or 'auto', or copy them to NumPy"
            )
        scalars = []
        for name, value in arguments.items():
            if name in arrays:
                continue
            if isinstance(value, (str, bytes, dict)) or value is None:
                raise TypeError(f"`{name}` is a {type(value).__name__}: pass a GPU array or a number")
            if not _arrays.is_number(value):
                raise ValueError(
                    f"`{name}` is a {type(value).__name__} on the host while {sorted(arrays)} are on a GPU: put them"
                    " in one place, or pass a number"
                )
            scalars.append((name, float(value)))
        if strict:
            storage = _arrays.shared_gpu_storage(arrays)
            prepared = _arrays.PreparedOnGpu(arrays=dict(arrays), library="", shape=(), storage=storage)
        else:
            prepared = _arrays.prepare_gpu(arrays)
        storage = prepared.storage
        first = next(iter(prepared.arrays.values()))
        library = prepared.library or type(first).__module__.split(".")[0]
        inputs, ordinals = [], set()
        for name, value in prepared.arrays.items():
            address, length = _arrays.device_pointer(name, value, storage)
            inputs.append((name, address, length))
            ordinals.add(_ordinal(value, library))
        if len(ordinals) != 1:
            raise ValueError(f"the arrays are on different GPUs ({sorted(ordinals)}): put them on one")
        ordinal = ordinals.pop()
        if device.startswith("cuda:") and int(device[5:]) != ordinal:
            raise ValueError(f"the arrays are on cuda:{ordinal}, not {device}")
        names = tuple(name for name, _ in scalars)
        if names not in self._plans:
            self._plans[names] = self._compiled.plan(list(names))
        plan, reduction = self._plans[names]
        shape_out = prepared.shape if not strict else (inputs[0][2] if inputs else 0,)
        n = inputs[0][2] if inputs else 0
        if n == 0 and all(length == 0 for _, _, length in inputs):
            # Nothing to launch: an empty result (or the reduction of nothing), as the CPU computes it.
            empty = {name: np.zeros(0, dtype=np.float32) for name in arrays}
            result = cast(Any, self)(device="cpu", **empty, **dict(scalars))
            if reduction:
                return result
            if len(plan) == 1:
                return _arrays.reshape_gpu_output(
                    _empty(library, 0, first, ordinal, storage), shape_out, wanted, library
                )
            return {
                name: _arrays.reshape_gpu_output(_empty(library, 0, first, ordinal, storage), shape_out, wanted, library)
                for name, _ in plan
            }
        outputs = {}
        pointers = []
        if not reduction:
            for name, overwritten in plan:
                if overwritten is not None:
                    outputs[name] = prepared.arrays[overwritten]
                else:
                    outputs[name] = _empty(library, n, first, ordinal, storage)
                    pointers.append(_arrays.device_pointer(name, outputs[name], storage)[0] if n else 0)
        stream = _current_stream(library, first)
        value = self._compiled.call_on_device(ordinal, inputs, pointers if n else [], scalars, stream, storage)
        self._last_run = (ordinal, library, dict(prepared.conversions), prepared.conversion_s, storage)
        if not prepared.conversions and prepared.shape == (n,) and wanted is None:
            self._remember(device, arguments, arrays, library, first, ordinal, storage)
        if reduction:
            return value
        shaped = {name: _arrays.reshape_gpu_output(out, shape_out, wanted, library) for name, out in outputs.items()}
        return _one_or_all(shaped)

    def _remember(self, device: str, arguments: Dict[str, Any], arrays: Dict[str, Any], library: str, first: Any,
                  ordinal: int, storage: str) -> None:
        """Keeps what a call on device arrays found out, so that the next call of the same shape (the same names, in
        the same order, of the same types, on the same GPU) goes straight to the launch: the host's cost of a call
        is then the arrays' pointers, the output's allocation and the launch."""
        if library == "cupy":
            import cupy

            empty, empty_kwargs = cupy.empty, {"dtype": cupy.float16 if storage == "f16" else cupy.float32}
            current_stream, attribute = cupy.cuda.get_current_stream, "ptr"
            several = cupy.cuda.runtime.getDeviceCount() > 1
            current_device = cupy.cuda.runtime.getDevice if several else None
        elif library == "torch":
            import torch

            element = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[storage]
            empty, empty_kwargs = torch.empty, {"dtype": element, "device": first.device}
            current_stream, attribute = functools.partial(torch.cuda.current_stream, first.device), "cuda_stream"
            current_device = None
        else:
            return
        launcher = self._compiled.launcher(
            ordinal,
            [(name, name in arrays) for name in arguments],
            type(first),
            library,
            empty,
            empty_kwargs,
            current_stream,
            attribute,
            current_device,
            storage,
        )
        self._launchers[device] = (launcher, (ordinal, library, {}, 0.0, storage))

    def __repr__(self) -> str:
        """The call that makes this expression: ``gpuworthy.expr('y = 2*x')``."""
        return f"gpuworthy.expr({self.source!r})"


def _request(
    scalars: Dict[str, float], ranges: Optional[Dict[str, Tuple[float, float]]]
) -> Tuple[List[str], List[str]]:
    """Scalars and ranges as the command line's ``--set a=2`` and ``--range x=0:1`` write them (``repr`` keeps every
    digit of a float, and ``nan`` and ``inf`` read back as themselves)."""
    sets = []
    for name, value in scalars.items():
        if not _arrays.is_number(value):
            raise TypeError(f"`{name}` is a {type(value).__name__}: a scalar is a number")
        sets.append(f"{name}={float(value)!r}")
    spans = [f"{name}={float(low)!r}:{float(high)!r}" for name, (low, high) in (ranges or {}).items()]
    return sets, spans


def _storage_name(dtype: Any) -> str:
    """The arrays' storage type as the command line's ``--dtype`` names it, from a name (``"bf16"``), a NumPy dtype
    (``numpy.float16``, ml_dtypes' ``bfloat16``) or a torch dtype (``torch.bfloat16``); ``None`` is float32. An
    unknown name is refused by the package with the names it takes."""
    if dtype is None:
        return "f32"
    if isinstance(dtype, str):
        return dtype
    if type(dtype).__module__ == "torch":
        return str(dtype).replace("torch.", "")
    try:
        return str(np.dtype(dtype).name)
    except TypeError:
        raise TypeError(f"dtype={dtype!r} is not a storage type: pass 'f32', 'f16' or 'bf16'") from None


def _one_or_all(outputs: Dict[str, Any]) -> Any:
    """The only output itself, or every output by name."""
    if len(outputs) == 1:
        return next(iter(outputs.values()))
    return dict(outputs)


def _ordinal(array: Any, library: str) -> int:
    """The CUDA device an array lives on."""
    if library == "torch":
        return int(array.device.index or 0)
    device = getattr(array, "device", None)
    return int(getattr(device, "id", 0) or 0)


def _empty(library: str, n: int, like: Any, ordinal: int, storage: str = "f32") -> Any:
    """A new array of ``n`` elements stored as ``storage`` (``"f32"``, ``"f16"``, ``"bf16"``) on ``like``'s GPU (CUDA
    device ``ordinal``), from ``like``'s library."""
    if library == "torch":
        import torch

        dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[storage]
        return torch.empty(n, dtype=dtype, device=like.device)
    if library == "cupy":
        import cupy

        dtype = cupy.float16 if storage == "f16" else cupy.float32
        if cupy.cuda.runtime.getDevice() == ordinal:
            return cupy.empty(n, dtype=dtype)
        with cupy.cuda.Device(ordinal):
            return cupy.empty(n, dtype=dtype)
    raise TypeError(f"arrays of {library} on a GPU are not supported: use CuPy arrays or PyTorch tensors")


def _current_stream(library: str, like: Any) -> int:
    """The raw CUDA stream ``like``'s library orders its work on now (0: the legacy default stream)."""
    if library == "torch":
        import torch

        return int(torch.cuda.current_stream(like.device).cuda_stream)
    if library == "cupy":
        import cupy

        return int(cupy.cuda.get_current_stream().ptr)
    return 0


def expr(source: str) -> Expr:
    """Parses ``source`` into an :class:`Expr`; a language error is a ``ValueError`` pointing at the text."""
    return Expr(source)


class RawKernel:
    """A kernel written by hand for each backend, for what an expression cannot say (a 2-D grid with its own
    indexing, neighbours, a loop per element): the form of torch's ``load_inline`` and CuPy's ``RawKernel``.

    ``cuda`` is ``(source, entry point, (block x, block y))``, ``wgsl`` is ``(source, entry point)``; the calling
    conventions are those of the seeds' ``load_inline`` tutorial (CUDA: inputs, outputs, scalars, then ``int n``, or
    ``int width, int height`` for a grid; WGSL: a uniform ``{width, height, row, scalars...}`` at binding 0, then one
    storage array per input and output). ``reference`` is an expression the test suite checks every output against.
    A kernel runs on the backends it has a body for (the CPU needs a Rust body: see the library's ``RawKernel``).

    Call it with NumPy float32 arrays and numbers by name, and ``shape=(height, width)`` for a grid (a 2-D input
    gives its shape): it returns the output array (shaped like the grid), or a dict of outputs when there are several.
    """

    def __init__(
        self,
        name: str,
        inputs: Sequence[str],
        outputs: Sequence[str],
        scalars: Sequence[str] = (),
        cuda: Optional[Tuple[str, str, Tuple[int, int]]] = None,
        wgsl: Optional[Tuple[str, str]] = None,
        reference: Optional[str] = None,
    ) -> None:
        self._compiled = _gpuworthy._RawKernel(name, list(inputs), list(outputs), list(scalars), cuda, wgsl, reference)
        self._last_run: Optional[str] = None

    @property
    def last_run(self) -> Dict[str, Any]:
        """Where the last call ran and why: ``device``, ``device_name``, ``reason``; empty before the first call."""
        if self._last_run is None:
            return {}
        record: Dict[str, Any] = json.loads(self._last_run)
        return record

    def __call__(
        self, device: str = "auto", shape: Optional[Tuple[int, int]] = None, **arguments: Any
    ) -> Any:
        """Runs the kernel on ``device`` with its inputs and scalars given by name.

        Parameters:
            device: ``"auto"`` (among the backends the kernel has a body for, where this machine's calibration
                predicts it fastest), ``"cpu"``, ``"cuda"``, ``"cuda:N"``, ``"wgpu"`` or ``"wgpu:ADAPTER"``.
            shape: ``(height, width)`` of the grid the kernel runs over; ``None`` for a line as long as the inputs, or
                the shape of a two-dimensional input where one is given.
            **arguments: each input as a NumPy ``float32`` array, one-dimensional, or two-dimensional and
                C-contiguous (flattened in place; every 2-D input of the grid's shape); each scalar as a Python
                ``int`` or ``float``.

        Returns:
            The output as a NumPy ``float32`` array (of the grid's shape for a grid, else of the inputs' length), or a
            dict of outputs by name when the kernel has several. ``last_run`` then says where it ran and why.

        Raises:
            ValueError: an input of another dtype, a strided view, of a shape other than the grid's, or of the wrong
                length; an input or scalar missing or not in the kernel's signature; an unknown device; a device the
                kernel has no body for; a body that does not compile (with the compiler's log).
            TypeError: an argument that is neither an array nor a number.
            Unavailable: the device asked for cannot run here.
            RuntimeError: the device failed while running.
        """
        # A list or another sequence of two sizes is read as the tuple the native half takes; another length is
        # refused there.
        grid = None if shape is None else cast(Tuple[int, int], tuple(int(d) for d in shape))
        flat = {}
        for name, value in arguments.items():
            if isinstance(value, np.ndarray) and value.ndim == 2:
                if not value.flags.c_contiguous:
                    raise ValueError(f"`{name}` is not contiguous in memory: pass `numpy.ascontiguousarray({name})`")
                if grid is None:
                    grid = (int(value.shape[0]), int(value.shape[1]))
                elif tuple(value.shape) != tuple(grid):
                    raise ValueError(f"`{name}` has shape {value.shape}, not the grid's {tuple(grid)}")
                value = value.reshape(-1)
            flat[name] = value
        outputs, self._last_run = self._compiled.call(device, grid, **flat)
        if grid is not None:
            outputs = {name: array.reshape(grid) for name, array in outputs.items()}
        if len(outputs) == 1:
            return next(iter(outputs.values()))
        return dict(outputs)

    def measure(
        self, size: Size, device: str = "auto", quick: bool = False, seed: int = 1, **scalars: float
    ) -> RunResult:
        """Measures the kernel as :func:`run` measures a built-in workload: over ``size`` (``1 << 20`` or ``"2^20"``
        for a line; ``(height, width)`` as a call's ``shape``, or the command line's ``"WIDTHxHEIGHT"``, for a grid)
        with generated inputs, uniform in [-1, 1), and
        its scalars by name, on ``device`` (or where auto places it); every phase timed (the kernel by the device's
        own timer) and the output checked against the reference.

        Raises ``ValueError`` for a malformed size, a scalar missing, unknown or not a number, a device the kernel has
        no body for, a body that does not compile; :class:`Unavailable` for a device that cannot run here."""
        for name, value in scalars.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"scalar `{name}` is a {type(value).__name__}, not a number")
        # A (height, width) grid, as a call's shape, is the command line's WIDTHxHEIGHT.
        if isinstance(size, (tuple, list)) and len(size) == 2:
            size = (size[1], size[0])
        text = _size_text(size)
        if text is None:
            raise ValueError("measure needs a size: a number of elements, or (height, width) for a grid")
        records = json.loads(
            self._compiled.measure(text, device, quick, seed, [(n, float(v)) for n, v in scalars.items()])
        )
        return RunResult._from(records[0])
