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

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from . import _gpuworthy
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
    "devices",
    "run",
    "explain",
    "sweep",
    "calibrate",
    "expr",
]


def _dataframe(records: List[Dict[str, Any]]):
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
    """Every device this machine has (``available``), and for each backend it cannot run, the reason."""
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

    @staticmethod
    def _from(record: Dict[str, Any]) -> "RunResult":
        phases = {k: Phase(**record[k]) for k in ("upload", "kernel", "download", "end_to_end")}
        return RunResult(**{**record, **phases})

    @property
    def passed(self) -> bool:
        """Whether the output matched the reference (False where it was not checked)."""
        return self.check == "passed"

    def to_dict(self) -> Dict[str, Any]:
        """The result as a (nested) dictionary."""
        return asdict(self)

    def to_dataframe(self):
        """The result as a one-row pandas DataFrame (phases flattened: ``kernel.median_s`` ...)."""
        return _dataframe([self.to_dict()])


def run(
    workload: str,
    size: Optional[str] = None,
    backend: str = "auto",
    variant: Optional[str] = None,
    quick: bool = False,
    seed: int = 1,
) -> Union[RunResult, List[RunResult]]:
    """Measures a built-in workload (``square``, ``saxpy``, ``sum``, ``softmax``, ``matmul``, ``mandelbrot``,
    ``histogram``, ``stencil``) at ``size`` (``"2^24"``, ``"16M"``, ``"1024x1024"``, ``"MxKxN"``; the workload's
    largest quick size by default) on ``backend`` (``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"wgpu"``, ...).

    Returns one :class:`RunResult` for one variant (auto's choice, the device's best, or the one named), or a list for
    ``variant="all"``. ``quick`` takes fewer repetitions.
    """
    records = json.loads(_gpuworthy.run(workload, size, backend, variant, quick, seed))
    results = [RunResult._from(r) for r in records]
    return results if variant == "all" else results[0]


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

    def to_dict(self) -> Dict[str, Any]:
        """The explanation as a (nested) dictionary."""
        return asdict(self)

    def to_dataframe(self):
        """The predictions as a pandas DataFrame, one row per device."""
        return _dataframe([p.to_dict() for p in self.predictions])


def explain(workload: str, size: str, placement: str = "host") -> Explanation:
    """Auto's choice for ``workload`` at ``size`` with the data on the ``"host"``, ``"resident"`` on the device, or
    moved through ``"pinned"`` memory: predicted from this machine's calibration (see :func:`calibrate`), without
    measuring. Without a calibration, auto's default and the reason (``uncalibrated``)."""
    record = json.loads(_gpuworthy.explain(workload, size, placement))
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

    def to_dataframe(self):
        """The rows as a pandas DataFrame."""
        return _dataframe(self.rows)


def sweep(
    workload: str,
    sizes: Optional[Sequence[str]] = None,
    backends: Optional[Sequence[str]] = None,
    quick: bool = True,
    budget_s: float = 4.0,
) -> SweepResult:
    """Measures ``workload`` at each size (the quick ladder by default, the full one with ``quick=False``, or the
    ``sizes`` given) on each backend (all by default) and finds where a GPU starts to win, with the data resident and
    from the host. A variant whose next size would take longer than ``budget_s`` per measurement stops there."""
    record = json.loads(
        _gpuworthy.sweep(workload, None if sizes is None else list(sizes), None if backends is None else list(backends), quick, budget_s)
    )
    return SweepResult(
        workload=record["workload"], rows=record["rows"], notes=record["notes"], crossover=record.get("crossover")
    )


def calibrate() -> Dict[str, Any]:
    """Measures what the cost model needs on this machine (about a minute) and saves it where ``auto`` and
    :func:`explain` find it (``GPUWORTHY_CALIBRATION``, else the user's cache directory). Returns where it went."""
    return json.loads(_gpuworthy.calibrate())


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
        self._last_run: Optional[str] = None

    @property
    def source(self) -> str:
        """The expression's text."""
        return self._compiled.source

    @property
    def last_run(self) -> Optional[Dict[str, Any]]:
        """Where the last call ran and why: ``device``, ``device_name``, ``variant``, ``reason``."""
        return None if self._last_run is None else json.loads(self._last_run)

    def __call__(self, device: str = "auto", **arguments: Any) -> Union[np.ndarray, float, Dict[str, Any]]:
        outputs, self._last_run = self._compiled.call(device, **arguments)
        if len(outputs) == 1:
            return next(iter(outputs.values()))
        return dict(outputs)

    def __repr__(self) -> str:
        return f"gpuworthy.expr({self.source!r})"


def expr(source: str) -> Expr:
    """Parses ``source`` into an :class:`Expr`; a language error is a ``ValueError`` pointing at the text."""
    return Expr(source)
