"""Type stubs of the native half of gpuworthy (`gpuworthy._gpuworthy`): records cross as JSON text, arrays as NumPy.

The public API is `gpuworthy` itself (typed inline in `gpuworthy/__init__.py`); these are the functions it calls.
"""

from typing import Any, Callable, Dict, List, Optional, Tuple, final

__all__ = [
    "Unavailable",
    "_Expr",
    "_RawKernel",
    "_Launcher",
    "devices",
    "run",
    "run_group",
    "explain",
    "sweep",
    "calibrate",
    "main",
    "__version__",
]

__version__: str

class Unavailable(RuntimeError):
    """A backend that cannot run here: its driver, adapter or library is missing, or this build left it out."""

def devices() -> str:
    """The devices this machine has, and for the others why not: a JSON list of records. A ``GPUWORTHY_*`` variable
    with a value its backend does not accept raises ``ValueError`` naming it."""

def run(
    workload: str,
    size: Optional[str] = None,
    backend: str = "auto",
    variant: Optional[str] = None,
    quick: bool = False,
    seed: int = 1,
    pinned: bool = False,
    pipelined: bool = False,
    launches: Optional[int] = None,
    precision: Optional[str] = None,
    tolerance: Optional[float] = None,
    bins: Optional[int] = None,
    distribution: Optional[str] = None,
    region: Optional[str] = None,
    max_iter: Optional[int] = None,
    block_size: Optional[int] = None,
    no_sync: bool = False,
) -> str:
    """Measures a built-in workload phase by phase: a JSON list of records, one per variant."""

def run_group(workload: str, group: str, size: Optional[str] = None, quick: bool = True, seed: int = 1) -> str:
    """Measures a built-in workload split over a device group: a JSON record of its members, phases and check."""

def explain(
    workload: str,
    size: str,
    placement: str = "host",
    on: Optional[str] = None,
    gpu_memory_gb_per_s: Optional[float] = None,
    gpu_compute: Optional[float] = None,
    link_gb_per_s: Optional[float] = None,
    unified: bool = False,
) -> str:
    """Auto's choice for a workload at a size and why, with every device's prediction (beside a reference machine's
    GPUs with ``on``): a JSON record."""

def sweep(
    workload: str,
    sizes: Optional[List[str]] = None,
    backends: Optional[List[str]] = None,
    quick: bool = True,
    budget_s: float = 4.0,
    progress: Optional[Callable[[int, int, Optional[str]], None]] = None,
) -> str:
    """A workload swept over sizes: rows, notes, crossovers and verdict, as a JSON record."""

def calibrate(progress: Optional[Callable[[int, int, Optional[str]], None]] = None, evaluate: bool = False) -> str:
    """Calibrates this machine and saves it: a JSON record of where it went and what it fitted."""

def main(argv: List[str]) -> int:
    """The ``gpuworthy`` command line run in this process with ``argv`` (the program's name first): its exit status."""

@final
class _Expr:
    """An expression of gpuworthy's language, parsed (a ValueError with a caret if it does not parse)."""
    def __new__(cls, source: str) -> _Expr: ...
    @property
    def source(self) -> str:
        """The expression's text."""
    def call(self, device: str = "auto", **kwargs: Any) -> Tuple[Dict[str, Any], str]:
        """Runs it on NumPy float32 arrays and numbers by name: the outputs by name and a JSON record of where it ran."""
    def call_stored(
        self, device: str, dtype: str, arrays: Dict[str, Any], scalars: Dict[str, float]
    ) -> Tuple[Dict[str, Any], str]:
        """Runs it on uint16 arrays of a 16-bit type's bits ("f16", "bf16"): outputs as that type's bits, and the record."""
    def measure(
        self,
        size: str,
        sets: List[str],
        ranges: List[str],
        backend: str = "auto",
        variant: Optional[str] = None,
        quick: bool = False,
        seed: int = 1,
        storage: str = "f32",
    ) -> str:
        """Measures it at a size with generated inputs, phase by phase: a JSON list of records, one per variant."""
    def explain(
        self,
        size: str,
        sets: List[str],
        ranges: List[str],
        placement: str = "host",
        on: Optional[str] = None,
        gpu_memory_gb_per_s: Optional[float] = None,
        gpu_compute: Optional[float] = None,
        link_gb_per_s: Optional[float] = None,
        unified: bool = False,
        storage: str = "f32",
    ) -> str:
        """Auto's choice for it at a size and why, with every device's prediction: a JSON record."""
    def sweep(
        self,
        sets: List[str],
        ranges: List[str],
        sizes: Optional[List[str]] = None,
        backends: Optional[List[str]] = None,
        quick: bool = True,
        budget_s: float = 4.0,
        progress: Optional[Callable[[int, int, Optional[str]], None]] = None,
        storage: str = "f32",
    ) -> str:
        """It swept over sizes: rows, notes, crossovers and verdict, as a JSON record."""
    def plan(self, scalars: List[str]) -> Tuple[List[Tuple[str, Optional[str]]], bool]:
        """Each output's name and the input it overwrites, and whether the expression is a reduction."""
    def call_on_device(
        self,
        ordinal: int,
        inputs: List[Tuple[str, int, int]],
        outputs: List[int],
        scalars: List[Tuple[str, float]],
        stream: int,
        storage: str = "f32",
    ) -> Optional[float]:
        """Runs it on arrays in CUDA device memory (pointer and length by name), each stored as ``storage`` ("f32",
        "f16" or "bf16"), ordered on the raw stream given."""
    def launcher(
        self,
        ordinal: int,
        arguments: List[Tuple[str, bool]],
        array_type: type,
        library: str,
        empty: Callable[..., Any],
        empty_kwargs: Dict[str, Any],
        current_stream: Callable[[], Any],
        stream_attribute: str,
        current_device: Optional[Callable[[], int]],
        storage: str = "f32",
    ) -> _Launcher:
        """The fast path of later calls shaped like one that just ran on device arrays (stored as ``storage``)."""

@final
class _Launcher:
    """One expression's calls on device arrays of one shape, with everything the first call found out kept."""
    def __call__(self, arguments: Dict[str, Any]) -> Optional[Any]:
        """The call's result, or None when the call is not of the shape this launcher was made for."""

@final
class _RawKernel:
    """A kernel written by hand per backend (CUDA C, WGSL), with its signature and a reference expression."""
    def __new__(
        cls,
        name: str,
        inputs: List[str],
        outputs: List[str],
        scalars: List[str] = ...,
        cuda: Optional[Tuple[str, str, Tuple[int, int]]] = None,
        wgsl: Optional[Tuple[str, str]] = None,
        reference: Optional[str] = None,
    ) -> _RawKernel: ...
    def call(
        self, device: str = "auto", shape: Optional[Tuple[int, int]] = None, **kwargs: Any
    ) -> Tuple[Dict[str, Any], str]:
        """Runs it over a line (shape None) or a (height, width) grid: the outputs by name and a JSON record."""
    def measure(
        self, size: str, device: str = "auto", quick: bool = False, seed: int = 1, scalars: List[Tuple[str, float]] = ...
    ) -> str:
        """Measures it over a size ("2^20", "512x512") with generated inputs, phase by phase: a JSON list of one
        record."""
