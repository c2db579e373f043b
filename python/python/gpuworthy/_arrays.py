"""The arrays users have, made into what the kernels read: one-dimensional, C-contiguous float32, or 16-bit.

The kernels compute in float32 over flat arrays of float32, or of one 16-bit type (float16, bfloat16) widened as read
and rounded as written; users hold NumPy's default float64, integers, booleans, images,
strided views, broadcasts, Python lists, torch tensors and JAX arrays. This module is the one place where one becomes
the other: float32 data that is already contiguous is read in place; anything else is converted once (the conversion is
timed as its own phase and reported in ``last_run``), and the result is given back in the inputs' common shape.
Host arrays all of one 16-bit type keep it: their bits go to the kernels as they are, half the bytes of float32, and
the results come back in that type.

Host values become NumPy arrays; values on a CUDA GPU stay there and are converted by their own library (CuPy or
torch), so a bf16 tensor is widened on its GPU, not copied through the host.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

# DLPack device types of memory a CUDA kernel can read (kDLCUDA, kDLCUDAHost, kDLCUDAManaged).
_DLPACK_CUDA = (2, 3, 13)
# What the CUDA kernels' float4 accesses need of an array's start, in bytes (a view such as `x[1:]` starts 4 bytes in).
_ALIGNMENT = 16


@dataclass
class Prepared:
    """A call's keyword arguments as the kernels read them, and what it took to get there."""

    arguments: Dict[str, Any]
    shape: Optional[Tuple[int, ...]]
    conversions: Dict[str, str] = field(default_factory=dict)
    conversion_s: float = 0.0

    def record(self) -> Dict[str, Any]:
        """What ``last_run`` adds: each argument converted and how, and the time the conversions took."""
        if not self.conversions:
            return {}
        return {"conversions": dict(self.conversions), "conversion_s": self.conversion_s}


def is_number(value: Any) -> bool:
    """Whether ``value`` is a real scalar: a Python or NumPy number or boolean (not a 0-d array)."""
    return isinstance(value, (bool, int, float, np.bool_, np.integer, np.floating))


def library_of(value: Any) -> Optional[str]:
    """The library of an array on a CUDA GPU (``"cupy"``, ``"torch"``, or ``"dlpack"`` for another DLPack producer
    such as JAX), or ``None`` for a value on the host."""
    module = type(value).__module__.split(".")[0]
    if module == "torch":
        return "torch" if bool(getattr(value, "is_cuda", False)) else None
    if module == "cupy":
        return "cupy"
    # Another library's GPU array (JAX ...) is read through DLPack as a torch tensor or a CuPy array, whose
    # allocators make the outputs.
    device = getattr(value, "__dlpack_device__", None)
    if device is not None and not isinstance(value, np.ndarray):
        try:
            kind = int(device()[0])
        except Exception:  # noqa: BLE001 - a producer that cannot say where it is: treat it as a host value
            kind = None
        if kind in _DLPACK_CUDA:
            return "dlpack"
    # `hasattr` would evaluate a property that raises for dtypes it cannot describe: look the name up instead.
    if "__cuda_array_interface__" in dir(type(value)):
        return module
    return None


def _describe(value: Any) -> str:
    return type(value).__name__


def host_array(name: str, value: Any) -> np.ndarray:
    """``value`` (an array, a sequence, a 0-d array, anything with ``__array__`` or ``__dlpack__`` on the host) as a
    NumPy array of a real dtype, without a copy where NumPy can avoid one."""
    if isinstance(value, np.ndarray):
        array = value
    elif isinstance(value, (str, bytes)):
        raise TypeError(f"`{name}` is a {_describe(value)}: pass an array, a sequence of numbers or a number")
    elif hasattr(value, "__dlpack__") and not hasattr(value, "__array__"):
        array = _through_dlpack_or_torch(name, value, None)
    else:
        try:
            array = np.asarray(value)
        except (TypeError, ValueError, RuntimeError) as e:
            array = _through_dlpack_or_torch(name, value, e)
    kind = array.dtype.kind
    if storage_of(array) == "bf16":
        return array  # ml_dtypes' bfloat16 (kind "V"): NumPy widens it to float32 exactly
    if kind == "c":
        raise ValueError(f"`{name}` is complex ({array.dtype}): gpuworthy computes real numbers; pass its `.real`")
    if kind not in "fiub":
        raise TypeError(
            f"`{name}` is a {_describe(value)} of dtype {array.dtype}: pass an array, a sequence of numbers or a number"
        )
    return array


def _through_dlpack_or_torch(name: str, value: Any, error: Optional[Exception]) -> np.ndarray:
    """A host value NumPy could not read directly: a torch tensor of a dtype NumPy lacks (bf16), or a DLPack producer
    without ``__array__``."""
    if type(value).__module__.split(".")[0] == "torch":
        widened: np.ndarray = value.detach().float().numpy()
        return widened
    if hasattr(value, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except (TypeError, ValueError, RuntimeError, BufferError) as e:
            error = e
    raise TypeError(f"`{name}` is a {_describe(value)} NumPy cannot read as numbers ({error})") from error


def broadcast_shape(shapes: Dict[str, Tuple[int, ...]]) -> Tuple[int, ...]:
    """The shape the arrays broadcast to, as NumPy's rules give it; a ``ValueError`` naming each shape otherwise."""
    try:
        return tuple(np.broadcast_shapes(*shapes.values()))
    except ValueError:
        listed = ", ".join(f"`{name}` {tuple(shape)}" for name, shape in shapes.items())
        raise ValueError(f"the arrays' shapes do not broadcast together: {listed}") from None


def prepare_host(arguments: Dict[str, Any]) -> Prepared:
    """Host arguments as the kernels read them: numbers stay numbers; every array is broadcast to the common shape
    and flattened, read in place when it is C-contiguous float32 of that shape, else converted (timed)."""
    arrays: Dict[str, np.ndarray] = {}
    prepared = Prepared(arguments={}, shape=None)
    for name, value in arguments.items():
        if is_number(value):
            if isinstance(value, complex):
                raise ValueError(f"`{name}` is complex: gpuworthy computes real numbers")
            prepared.arguments[name] = float(value)
        elif isinstance(value, complex):
            raise ValueError(f"`{name}` is complex: gpuworthy computes real numbers")
        else:
            arrays[name] = host_array(name, value)
    if not arrays:
        return prepared
    shape = broadcast_shape({name: a.shape for name, a in arrays.items()})
    prepared.shape = shape
    started = time.perf_counter()
    for name, array in arrays.items():
        flat, how = _flat_float32(array, shape)
        if how:
            prepared.conversions[name] = how
        prepared.arguments[name] = flat
    if prepared.conversions:
        prepared.conversion_s = time.perf_counter() - started
    return prepared


def _flat_float32(array: np.ndarray, shape: Tuple[int, ...]) -> Tuple[np.ndarray, Optional[str]]:
    """``array`` broadcast to ``shape`` as a flat C-contiguous float32 array, and how it was converted (``None``: read
    in place)."""
    steps: List[str] = []
    if array.shape != shape:
        steps.append(f"broadcast from {array.shape} to {shape}")
        array = np.broadcast_to(array, shape)
    if array.dtype != np.float32:
        steps.append(f"{array.dtype} to float32")
    elif not array.flags.c_contiguous:
        steps.append("gathered into a contiguous copy")
    if not steps:
        return array.reshape(-1), None
    return np.ascontiguousarray(array, dtype=np.float32).reshape(-1), ", ".join(steps)


def reshape_outputs(outputs: Dict[str, Any], shape: Optional[Tuple[int, ...]], dtype: Any) -> Dict[str, Any]:
    """The outputs in the inputs' common shape and in ``dtype`` (float32 when ``None``); reductions' values stay
    numbers."""
    shaped = {}
    for name, value in outputs.items():
        if isinstance(value, np.ndarray):
            if shape is not None and value.shape != shape:
                value = value.reshape(shape)
            if dtype is not None and type(dtype).__module__ == "torch":
                raise TypeError(f"dtype={dtype} is a torch dtype: NumPy results take a NumPy dtype (numpy.float64 ...)")
            if dtype is not None and value.dtype != np.dtype(dtype):
                value = value.astype(dtype)
        shaped[name] = value
    return shaped


def output_dtype(dtype: Any) -> Any:
    """``dtype`` as NumPy reads it, refused unless it is a real floating type (the results are float32 values)."""
    if dtype is None:
        return None
    if type(dtype).__module__ == "torch":
        # A torch dtype (torch.bfloat16 ...): for results of torch tensors, converted by torch.
        return dtype
    try:
        resolved = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"dtype={dtype!r} is not a NumPy dtype: pass numpy.float32 or numpy.float64") from e
    if resolved.kind != "f":
        raise ValueError(f"dtype={resolved} is not a floating type: the results are float32 values; pass float32 or float64")
    return resolved


# ---- arrays of a 16-bit type on the host -----------------------------------------------------------------------------


def storage_of(value: Any) -> Optional[str]:
    """``"f16"`` or ``"bf16"`` for a host array stored in that 16-bit floating type (NumPy's ``float16``, a torch CPU
    tensor of ``float16`` or ``bfloat16``, an ``ml_dtypes.bfloat16`` array as JAX gives on the host), else ``None``."""
    if type(value).__module__.split(".")[0] == "torch":
        return {"torch.float16": "f16", "torch.bfloat16": "bf16"}.get(str(getattr(value, "dtype", "")))
    dtype = getattr(value, "dtype", None)
    if not isinstance(dtype, np.dtype) or not dtype.isnative:
        return None
    if dtype == np.float16:
        return "f16"
    if dtype.name == "bfloat16" and dtype.itemsize == 2:
        return "bf16"
    return None


@dataclass
class Stored:
    """A call's arrays, all of one 16-bit type, as the kernels read them: each one's bits as a flat C-contiguous
    ``uint16`` array, read in place where the array already is one; the outputs come back in the same type."""

    dtype: str
    bits: Dict[str, np.ndarray]
    scalars: Dict[str, float]
    shape: Tuple[int, ...]
    # How an output's bits become the inputs' kind of array: the torch dtype, or the NumPy dtype to view them as.
    like: Any
    conversions: Dict[str, str] = field(default_factory=dict)
    conversion_s: float = 0.0

    def record(self) -> Dict[str, Any]:
        """What ``last_run`` adds: the storage type, and each argument gathered or broadcast with the time it took."""
        record: Dict[str, Any] = {"dtype": self.dtype}
        if self.conversions:
            record.update(conversions=dict(self.conversions), conversion_s=self.conversion_s)
        return record

    def restore(self, outputs: Dict[str, Any], dtype: Any) -> Dict[str, Any]:
        """The outputs in the inputs' shape and type (or ``dtype`` where one was asked for); reductions' values stay
        numbers."""
        restored: Dict[str, Any] = {}
        for name, value in outputs.items():
            if isinstance(value, np.ndarray):
                value = self._as_inputs_type(value.reshape(self.shape))
                if dtype is not None:
                    value = _converted(value, dtype)
            restored[name] = value
        return restored

    def _as_inputs_type(self, bits: np.ndarray) -> Any:
        if isinstance(self.like, np.dtype):
            return bits.view(self.like)
        import torch

        return torch.from_numpy(bits.view(np.int16)).view(self.like)


def _converted(value: Any, dtype: Any) -> Any:
    """A 16-bit result in ``dtype``: a torch dtype for a torch tensor, a NumPy dtype for a NumPy array."""
    is_torch_dtype = type(dtype).__module__ == "torch"
    if isinstance(value, np.ndarray):
        if is_torch_dtype:
            raise TypeError(f"dtype={dtype} is a torch dtype: NumPy results take a NumPy dtype (numpy.float64 ...)")
        return value if value.dtype == dtype else value.astype(dtype)
    if not is_torch_dtype:
        raise TypeError(f"dtype={dtype} is a NumPy dtype: torch results take a torch dtype (torch.float32 ...)")
    return value if value.dtype == dtype else value.to(dtype)


def _bits(value: Any) -> Tuple[np.ndarray, Any]:
    """A 16-bit host array's bits as a ``uint16`` NumPy view of the same shape and strides (no copy), and what views
    them back into the array's own type."""
    if isinstance(value, np.ndarray):
        return value.view(np.uint16), value.dtype
    import torch

    tensor = value.detach()
    return tensor.view(torch.int16).numpy().view(np.uint16), tensor.dtype


def prepare_stored(arguments: Dict[str, Any], strict: bool) -> Optional[Stored]:
    """The call on 16-bit storage, when every array argument is a host array of one 16-bit type from one library
    ([`storage_of`]): broadcast to the common shape and flattened, read in place when contiguous. ``None`` when the
    arrays are anything else (float32, a mix of types: the float32 path converts those). With ``strict``, an array that
    would need gathering or broadcasting is refused, as for float32."""
    arrays = {name: value for name, value in arguments.items() if not is_number(value)}
    types = {storage_of(value) for value in arrays.values()}
    if len(types) != 1 or None in types:
        return None
    views = {name: _bits(value) for name, value in arrays.items()}
    likes = {str(like) for _, like in views.values()}
    if len(likes) != 1:
        return None
    shape = broadcast_shape({name: bits.shape for name, (bits, _) in views.items()})
    stored = Stored(
        dtype=types.pop() or "",
        bits={},
        scalars={name: float(value) for name, value in arguments.items() if is_number(value)},
        shape=shape,
        like=next(iter(views.values()))[1],
    )
    started = time.perf_counter()
    for name, (bits, _) in views.items():
        steps: List[str] = []
        if bits.shape != shape:
            steps.append(f"broadcast from {bits.shape} to {shape}")
            bits = np.broadcast_to(bits, shape)
        elif not bits.flags.c_contiguous:
            steps.append("gathered into a contiguous copy")
        if strict and (steps or bits.ndim != 1):
            raise ValueError(
                f"`{name}` would need converting ({', '.join(steps) or f'flattened from {bits.ndim} dimensions'}); "
                "strict=True reads only one-dimensional, C-contiguous arrays: pass a contiguous 1-D array"
            )
        if steps:
            stored.conversions[name] = ", ".join(steps)
        stored.bits[name] = np.ascontiguousarray(bits).reshape(-1)
    if stored.conversions:
        stored.conversion_s = time.perf_counter() - started
    return stored


# ---- arrays on a CUDA GPU ------------------------------------------------------------------------------------------


@dataclass
class PreparedOnGpu:
    """A call's GPU arrays as the kernels read them (flat, contiguous, on one GPU, of one library), stored as
    ``storage``: ``"f32"``, or the 16-bit type (``"f16"``, ``"bf16"``) all of them share."""

    arrays: Dict[str, Any]
    library: str
    shape: Tuple[int, ...]
    conversions: Dict[str, str] = field(default_factory=dict)
    conversion_s: float = 0.0
    storage: str = "f32"


def gpu_storage_of(value: Any) -> Optional[str]:
    """``"f16"`` or ``"bf16"`` for a GPU array of that 16-bit floating type (a torch CUDA tensor of ``float16`` or
    ``bfloat16``, a CuPy ``float16`` array), else ``None``."""
    dtype = str(getattr(value, "dtype", ""))
    return {"torch.float16": "f16", "torch.bfloat16": "bf16", "float16": "f16"}.get(dtype)


def shared_gpu_storage(arrays: Dict[str, Any]) -> str:
    """The 16-bit type every one of the GPU ``arrays`` is stored in, or ``"f32"`` where they do not share one (they
    are then converted to float32, as the host's mixed arrays are)."""
    kinds = {gpu_storage_of(value) for value in arrays.values()}
    if len(kinds) == 1 and None not in kinds:
        return str(kinds.pop())
    return "f32"


def device_pointer(name: str, value: Any, storage: str) -> Tuple[int, int]:
    """The device address and length of a GPU array the kernels read as it is: one-dimensional, contiguous, stored as
    ``storage``; a ValueError naming what is wrong otherwise."""
    wanted = {"f32": ("<f4", 4), "f16": ("<f2", 2), "bf16": ("bfloat16", 2)}[storage]
    if str(getattr(value, "dtype", "")) == "torch.bfloat16":
        # torch's `__cuda_array_interface__` cannot describe bfloat16: the tensor's own accessors say the same.
        if storage != "bf16":
            raise ValueError(f"`{name}` has type bfloat16: pass `{name}.float()`, or every array in bfloat16")
        if value.dim() != 1:
            raise ValueError(f"`{name}` has {value.dim()} dimensions (shape {tuple(value.shape)}): pass `{name}.ravel()`")
        if not value.is_contiguous():
            raise ValueError(f"`{name}` is a strided view (strides {value.stride()}): pass a contiguous copy")
        return int(value.data_ptr()), int(value.numel())
    interface = value.__cuda_array_interface__
    shape, typestr, strides = interface["shape"], interface["typestr"], interface.get("strides")
    if typestr != wanted[0]:
        kind = "float32" if storage == "f32" else {"f16": "float16", "bf16": "bfloat16"}[storage]
        raise ValueError(
            f"`{name}` has type {typestr} where the arrays are computed from {kind}: pass `{name}.astype({kind})`"
        )
    if len(shape) != 1:
        raise ValueError(f"`{name}` has {len(shape)} dimensions (shape {tuple(shape)}): pass `{name}.ravel()`")
    if strides not in (None, (wanted[1],)):
        raise ValueError(f"`{name}` is a strided view (strides {strides}): pass a contiguous copy")
    return int(interface["data"][0]), int(shape[0])


def as_library_array(name: str, value: Any, library: str) -> Tuple[Any, str]:
    """A GPU array of a DLPack producer (JAX ...) as a torch tensor or a CuPy array, without a copy."""
    if library != "dlpack":
        return value, library
    try:
        import torch

        return torch.from_dlpack(value), "torch"
    except ImportError:
        pass
    try:
        import cupy

        return cupy.from_dlpack(value), "cupy"
    except ImportError:
        raise TypeError(
            f"`{name}` is a {_describe(value)} on a GPU: reading it needs torch or CuPy (DLPack), neither is installed"
        ) from None


def prepare_gpu(arrays: Dict[str, Any]) -> PreparedOnGpu:
    """GPU arrays made flat and contiguous on their GPU by their own library, kept in the 16-bit type they all share
    or else converted to float32; arrays of different libraries are refused (their allocators and streams differ)."""
    converted: Dict[str, Any] = {}
    libraries = set()
    for name, value in arrays.items():
        array, library = as_library_array(name, value, library_of(value) or "")
        converted[name] = array
        libraries.add(library)
    if len(libraries) != 1:
        raise ValueError(f"the GPU arrays come from several libraries ({sorted(libraries)}): use one of them")
    library = libraries.pop()
    shape = broadcast_shape({name: tuple(a.shape) for name, a in converted.items()})
    prepared = PreparedOnGpu(arrays={}, library=library, shape=shape, storage=shared_gpu_storage(converted))
    started = time.perf_counter()
    for name, array in converted.items():
        flat, how = _flat_on_gpu(array, shape, library, prepared.storage)
        if how:
            prepared.conversions[name] = how
        prepared.arrays[name] = flat
    if prepared.conversions:
        _synchronize(library, next(iter(prepared.arrays.values())))
        prepared.conversion_s = time.perf_counter() - started
    return prepared


def _flat_on_gpu(array: Any, shape: Tuple[int, ...], library: str, storage: str) -> Tuple[Any, Optional[str]]:
    """``array`` broadcast to ``shape`` as a flat contiguous array on its GPU, stored as ``storage`` (``"f32"``, or
    the 16-bit type it already has), and how it was converted."""
    steps: List[str] = []
    if library == "torch":
        import torch

        target = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[storage]
        if tuple(array.shape) != shape:
            steps.append(f"broadcast from {tuple(array.shape)} to {shape}")
            array = array.broadcast_to(shape)
        if array.dtype != target:
            steps.append(f"{str(array.dtype).replace('torch.', '')} to float32 on the GPU")
        elif not array.is_contiguous():
            steps.append("gathered into a contiguous copy on the GPU")
        elif array.numel() and array.data_ptr() % _ALIGNMENT:
            steps.append(f"copied to a buffer aligned to {_ALIGNMENT} bytes on the GPU")
        if steps:
            array = array.to(target).contiguous()
            if array.numel() and array.data_ptr() % _ALIGNMENT:
                array = array.clone()
        return array.reshape(-1), ", ".join(steps) or None
    if library == "cupy":
        import cupy

        target = cupy.float16 if storage == "f16" else cupy.float32
        if tuple(array.shape) != shape:
            steps.append(f"broadcast from {tuple(array.shape)} to {shape}")
            array = cupy.broadcast_to(array, shape)
        if array.dtype != target:
            steps.append(f"{array.dtype} to float32 on the GPU")
        elif not array.flags.c_contiguous:
            steps.append("gathered into a contiguous copy on the GPU")
        elif array.size and array.data.ptr % _ALIGNMENT:
            steps.append(f"copied to a buffer aligned to {_ALIGNMENT} bytes on the GPU")
        if steps:
            array = cupy.ascontiguousarray(array, dtype=target)
            if array.size and array.data.ptr % _ALIGNMENT:
                array = array.copy()
        return array.reshape(-1), ", ".join(steps) or None
    # Another library with `__cuda_array_interface__` (Numba's device arrays): read as it is, or refused below.
    return array, None


def _synchronize(library: str, like: Any) -> None:
    """Waits for the conversions queued on ``like``'s GPU, so that their time is theirs and not the kernel's."""
    if library == "torch":
        import torch

        torch.cuda.synchronize(like.device)
    elif library == "cupy":
        import cupy

        cupy.cuda.get_current_stream().synchronize()


def reshape_gpu_output(value: Any, shape: Tuple[int, ...], dtype: Any, library: str) -> Any:
    """A flat float32 GPU output in the inputs' common shape, and in ``dtype`` where one was asked for."""
    if tuple(value.shape) != shape:
        value = value.reshape(shape)
    if dtype is None:
        return value
    if library == "torch":
        import torch

        wanted = dtype if isinstance(dtype, torch.dtype) else getattr(torch, np.dtype(dtype).name)
        return value if value.dtype == wanted else value.to(wanted)
    if type(dtype).__module__ == "torch":
        raise TypeError(f"dtype={dtype} is a torch dtype: CuPy results take a NumPy dtype (numpy.float64 ...)")
    return value if value.dtype == dtype else value.astype(dtype)
