"""The arrays users have: NumPy's default float64, integers and booleans, images, strided views, broadcasts, 0-d
arrays, Python numbers and sequences, objects with ``__array__`` or ``__dlpack__``, torch CPU tensors; each computed
and given back in its shape, each conversion reported, and ``strict=True`` refusing what would need one."""

import numpy as np
import pytest

import gpuworthy

TWICE = gpuworthy.expr("y = 2*x")


def test_numpys_default_dtype_computes_and_says_it_was_converted():
    y = TWICE(x=np.linspace(0, 1, 5))
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, np.array([0.0, 0.5, 1.0, 1.5, 2.0], dtype=np.float32))
    run = TWICE.last_run
    assert run["conversions"] == {"x": "float64 to float32"}, run
    assert run["conversion_s"] >= 0.0


def test_float32_contiguous_arrays_are_read_in_place_and_not_reported():
    TWICE(x=np.arange(4, dtype=np.float32))
    assert "conversions" not in TWICE.last_run


@pytest.mark.parametrize(
    "x",
    [
        np.arange(6, dtype=np.int64),
        np.arange(6, dtype=np.int8),
        np.arange(6, dtype=np.uint16),
        np.array([True, False, True, True, False, False]),
        np.arange(6, dtype=np.float64),
    ],
    ids=lambda x: str(x.dtype),
)
def test_every_real_dtype_computes(x):
    np.testing.assert_array_equal(TWICE(x=x, device="cpu"), 2 * x.astype(np.float32))
    assert TWICE.last_run["conversions"]["x"].startswith(f"{x.dtype} to float32")


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (1, 5), (5, 1)])
def test_n_dimensional_arrays_keep_their_shape(shape):
    x = np.random.default_rng(1).random(shape)
    y = gpuworthy.expr("y = x*x + 1")(x=x, device="cpu")
    assert y.shape == shape
    np.testing.assert_allclose(y, (x * x + 1).astype(np.float32), rtol=1e-6)


def test_views_and_broadcasts_are_gathered_rather_than_refused():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    for view in (base[:, ::2], base.T, base[::-1], np.arange(10, dtype=np.float32)[::3]):
        np.testing.assert_array_equal(TWICE(x=view, device="cpu"), 2 * view)
        assert "gathered" in TWICE.last_run["conversions"]["x"]
    read_only = np.broadcast_to(np.float32(3), (2, 3))
    np.testing.assert_array_equal(TWICE(x=read_only, device="cpu"), np.full((2, 3), 6, dtype=np.float32))


def test_arrays_broadcast_together_as_numpy_broadcasts_them():
    x = np.arange(3, dtype=np.float32).reshape(3, 1)
    z = np.arange(4, dtype=np.float64)
    y = gpuworthy.expr("y = x + 10*z")(x=x, z=z, device="cpu")
    assert y.shape == (3, 4)
    np.testing.assert_array_equal(y, (x + 10 * z).astype(np.float32))
    with pytest.raises(ValueError) as e:
        gpuworthy.expr("y = x + z")(x=np.ones(3), z=np.ones(4), device="cpu")
    assert "do not broadcast" in str(e.value) and "(3,)" in str(e.value) and "(4,)" in str(e.value)


def test_zero_dimensional_arrays_numbers_and_sequences():
    y = TWICE(x=np.array(2.5), device="cpu")
    assert isinstance(y, np.ndarray) and y.shape == () and float(y) == 5.0
    np.testing.assert_array_equal(TWICE(x=[1, 2, 3], device="cpu"), [2, 4, 6])
    np.testing.assert_array_equal(TWICE(x=(0.5, 1.5), device="cpu"), [1, 3])
    np.testing.assert_array_equal(TWICE(x=[[1, 2], [3, 4]], device="cpu"), [[2, 4], [6, 8]])
    f = gpuworthy.expr("y = a*x + b")
    np.testing.assert_array_equal(f(x=[1, 2], a=np.float64(2), b=np.int32(1), device="cpu"), [3, 5])
    np.testing.assert_array_equal(f(x=[1, 2], a=True, b=0, device="cpu"), [1, 2])


def test_nan_and_infinite_scalars_compute_as_in_the_command_line():
    f = gpuworthy.expr("y = a*x + b")
    y = f(x=np.arange(1, 4, dtype=np.float32), a=float("nan"), b=1.0, device="cpu")
    assert np.isnan(y).all()
    y = f(x=np.arange(1, 4, dtype=np.float32), a=float("inf"), b=1.0, device="cpu")
    assert np.isposinf(y).all()


class HasArray:
    """An object NumPy reads through ``__array__`` (what pandas Series, xarray and many others give)."""

    def __init__(self, values):
        self.values = values

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.values, dtype=dtype)


class HasDlpackOnly:
    """A host DLPack producer without ``__array__``."""

    def __init__(self, values):
        self.values = np.asarray(values)

    def __dlpack__(self, **kwargs):
        return self.values.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.values.__dlpack_device__()


def test_objects_with_array_or_dlpack_are_read():
    np.testing.assert_array_equal(TWICE(x=HasArray([1.0, 2.0]), device="cpu"), [2, 4])
    np.testing.assert_array_equal(TWICE(x=HasDlpackOnly(np.arange(3, dtype=np.float32)), device="cpu"), [0, 2, 4])


def test_torch_cpu_tensors_of_every_dtype_compute():
    torch = pytest.importorskip("torch")
    for dtype in (torch.float32, torch.float64, torch.int32):
        x = torch.arange(4).to(dtype)
        np.testing.assert_array_equal(TWICE(x=x, device="cpu"), [0, 2, 4, 6])
    # 16-bit tensors keep their type (test_half_arrays.py); a bf16 one mixed with float32 is widened to compute.
    mixed = gpuworthy.expr("y = x + z")(x=torch.arange(4).to(torch.bfloat16), z=np.zeros(4, np.float32), device="cpu")
    np.testing.assert_array_equal(mixed, [0, 1, 2, 3])


def test_reductions_read_every_element_of_an_n_dimensional_array():
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    total = gpuworthy.expr("s = sum(x*x)")(x=x, device="cpu")
    assert isinstance(total, float) and total == pytest.approx(float((x * x).sum()))


def test_dtype_asks_for_the_results_type():
    y = TWICE(x=np.arange(3), dtype=np.float64, device="cpu")
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y, [0, 2, 4])
    with pytest.raises(ValueError) as e:
        TWICE(x=np.arange(3), dtype=np.int32, device="cpu")
    assert "floating" in str(e.value)
    with pytest.raises(TypeError):
        TWICE(x=np.arange(3), dtype="banana", device="cpu")


@pytest.mark.parametrize(
    "x, needle",
    [
        (np.arange(4, dtype=np.float64), "float64"),
        (np.arange(8, dtype=np.float32)[::2], "contiguous"),
        (np.ones((2, 2), dtype=np.float32), "dimensions"),
        ([1.0, 2.0], "list"),
    ],
)
def test_strict_refuses_what_would_need_converting(x, needle):
    with pytest.raises((ValueError, TypeError)) as e:
        TWICE(x=x, strict=True, device="cpu")
    assert needle in str(e.value), str(e.value)


@pytest.mark.parametrize(
    "x, error, needle",
    [
        (np.arange(3) + 1j, ValueError, "complex"),
        ("abc", TypeError, "str"),
        ({"a": 1}, TypeError, "dict"),
        (np.array(["a", "b"]), TypeError, "dtype <U1"),
        (np.array([object(), 1]), TypeError, "dtype object"),
    ],
)
def test_what_is_not_real_numbers_is_refused_with_what_it_is(x, error, needle):
    with pytest.raises(error) as e:
        TWICE(x=x, device="cpu")
    assert needle in str(e.value), str(e.value)
