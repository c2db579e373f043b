"""Type stubs of gpuworthy: is this work worth sending to the GPU?"""

from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

__version__: str

class Unavailable(RuntimeError):
    """A backend that cannot run here: its driver, adapter or library is missing, or this build left it out."""

class Device:
    """A backend's device as this machine has it, or one it lacks and why."""
    label: str
    backend: str
    name: Optional[str]
    driver: Optional[str]
    is_gpu: Optional[bool]
    available: bool
    reason: Optional[str]
    def to_dict(self) -> Dict[str, Any]: ...

class Phase:
    """One phase's times over its repetitions, in seconds."""
    median_s: float
    min_s: float
    max_s: float
    p25_s: float
    p75_s: float
    samples: int
    def to_dict(self) -> Dict[str, Any]: ...

class RunResult:
    """One variant of one workload measured on one device: every phase, the throughput and the check."""
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
    reason: Optional[str]
    @property
    def passed(self) -> bool: ...
    def to_dict(self) -> Dict[str, Any]: ...
    def to_dataframe(self) -> Any: ...

class Prediction:
    """The cost model's prediction for one device, in seconds."""
    device: str
    is_gpu: bool
    variant: str
    upload_s: float
    launch_s: float
    kernel_s: float
    download_s: float
    total_s: float
    pipelined: bool
    def to_dict(self) -> Dict[str, Any]: ...

class Explanation:
    """Where auto would run a workload at a size, and why."""
    workload: str
    size: str
    placement: str
    bytes: int
    flops: int
    device: str
    variant: str
    pipelined: bool
    reason: str
    predictions: List[Prediction]
    uncalibrated: Optional[str]
    model_error: Optional[Dict[str, Any]]
    def to_dict(self) -> Dict[str, Any]: ...
    def to_dataframe(self) -> Any: ...

class SweepResult:
    """A workload swept over sizes: rows, notes, crossovers and the verdict."""
    workload: str
    rows: List[Dict[str, Any]]
    notes: List[Dict[str, Any]]
    crossover: Optional[Dict[str, Any]]
    def to_dict(self) -> Dict[str, Any]: ...
    def to_dataframe(self) -> Any: ...

class Expr:
    """A computation in gpuworthy's expression language, called with NumPy float32 arrays and numbers by name."""
    last_run: Optional[Dict[str, Any]]
    def __init__(self, source: str) -> None: ...
    @property
    def source(self) -> str: ...
    def __call__(self, device: str = "auto", **arguments: Union[np.ndarray, float, int]) -> Union[np.ndarray, float, Dict[str, Any]]: ...

def devices() -> List[Device]:
    """Every device this machine has, and for each backend it cannot run, the reason."""
def run(
    workload: str,
    size: Optional[str] = None,
    backend: str = "auto",
    variant: Optional[str] = None,
    quick: bool = False,
    seed: int = 1,
) -> Union[RunResult, List[RunResult]]:
    """Measures a built-in workload at a size on a backend, phase by phase."""
def explain(workload: str, size: str, placement: str = "host") -> Explanation:
    """Auto's choice for a workload at a size, and every device's predicted phases."""
def sweep(
    workload: str,
    sizes: Optional[Sequence[str]] = None,
    backends: Optional[Sequence[str]] = None,
    quick: bool = True,
    budget_s: float = 4.0,
) -> SweepResult:
    """Measures a workload over sizes on each backend and finds where a GPU starts to win."""
def calibrate() -> Dict[str, Any]:
    """Measures what the cost model needs on this machine and saves it."""
def expr(source: str) -> Expr:
    """Parses an expression; a language error is a ValueError pointing at the text."""
