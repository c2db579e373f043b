"""Host arrays of a 16-bit type (NumPy's float16, ml_dtypes' bfloat16, torch's float16 and bfloat16 CPU tensors):
computed on that storage on every backend, half the bytes of float32, each output rounded once from the float32
result, and given back in the inputs' type; a mix of types falls back to float32, said so."""

import numpy as np
import pytest

import gpuworthy
from test_api import backends

TWICE = gpuworthy.expr("y = 2*x")


def bfloat16():
    return pytest.importorskip("ml_dtypes").bfloat16


def rounded_from_float32(values: np.ndarray, dtype) -> np.ndarray:
    """What a correct backend stores: the float32 result rounded once to the type (NumPy and ml_dtypes round to
    nearest, ties to even)."""
    return values.astype(np.float32).astype(dtype)


@pytest.mark.parametrize("backend", list(backends()))
@pytest.mark.parametrize("storage", ["float16", "bfloat16"])
def test_sixteen_bit_arrays_are_computed_and_given_back_in_their_type(backend, storage):
    dtype = np.float16 if storage == "float16" else bfloat16()
    rng = np.random.default_rng(7)
    x = rng.uniform(-4, 4, 4099).astype(dtype)
    z = rng.uniform(-4, 4, 4099).astype(dtype)
    f = gpuworthy.expr("y = a*x / 3 + z")
    y = f(x=x, z=z, a=1.5, device=backend)
    assert y.dtype == x.dtype and y.shape == x.shape
    wide = 1.5 * x.astype(np.float32) / np.float32(3) + z.astype(np.float32)
    # f32 arithmetic may differ from NumPy's in its last bit (an fma, a reciprocal), which moves a 16-bit rounding by
    # at most one unit of the type: the check the test suite makes bit for bit is in the Rust conformance tests.
    expected = rounded_from_float32(wide, dtype)
    one_unit = 2.0**-10 if storage == "float16" else 2.0**-7  # the largest relative spacing of the type's normals
    np.testing.assert_allclose(y.astype(np.float32), expected.astype(np.float32), rtol=one_unit, atol=2.0**-20)
    run = f.last_run
    assert run["dtype"] == ("f16" if storage == "float16" else "bf16"), run
    assert "conversions" not in run, run


@pytest.mark.parametrize("backend", list(backends()))
def test_an_exactly_representable_result_comes_back_bit_for_bit(backend):
    x = np.arange(-512, 512, dtype=np.float16)
    y = TWICE(x=x, device=backend)
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y.view(np.uint16), (2 * x).view(np.uint16))


def test_each_output_is_rounded_once_from_the_float32_result():
    # 1 + 2^-11 is a tie in float16: rounded once from float32 it goes to 1 (even); a float16 intermediate would not
    # matter here, but a result rounded from float64 and then again could. Every output must equal one rounding.
    x = np.array([1.0, 1.0 + 2.0**-10, 2.0**-14, 65504.0, -0.0], dtype=np.float16)
    y = gpuworthy.expr("y = x + 0.00048828125")(x=x, device="cpu")
    expected = (x.astype(np.float32) + np.float32(2.0**-11)).astype(np.float16)
    np.testing.assert_array_equal(y.view(np.uint16), expected.view(np.uint16))


def test_float16_overflow_is_infinite_as_numpy_gives_it():
    y = TWICE(x=np.array([40000.0, -40000.0, 1.0], dtype=np.float16), device="cpu")
    assert np.isinf(y[0]) and y[0] > 0 and np.isinf(y[1]) and y[1] < 0 and y[2] == 2


def test_reductions_of_sixteen_bit_arrays_are_float_values():
    x = np.linspace(-1, 1, 1001).astype(np.float16)
    total = gpuworthy.expr("s = sum(x*x)")(x=x, device="cpu")
    assert isinstance(total, float)
    assert total == pytest.approx(float((x.astype(np.float64) ** 2).sum()), rel=1e-5)


def test_views_and_broadcasts_of_sixteen_bit_arrays_are_gathered_and_reported():
    column = np.arange(3, dtype=np.float16).reshape(3, 1)
    row = np.arange(4, dtype=np.float16)[::-1]
    y = gpuworthy.expr("y = x + z")(x=column, z=row, device="cpu")
    assert y.shape == (3, 4) and y.dtype == np.float16
    np.testing.assert_array_equal(y, column + row)
    f = gpuworthy.expr("y = x + z")
    f(x=column, z=row, device="cpu")
    assert f.last_run["conversions"] == {"x": "broadcast from (3, 1) to (3, 4)", "z": "broadcast from (4,) to (3, 4)"}
    f = gpuworthy.expr("y = 2*x")
    f(x=np.arange(8, dtype=np.float16)[::2], device="cpu")
    assert f.last_run["conversions"] == {"x": "gathered into a contiguous copy"}


def test_a_mix_of_types_is_computed_in_float32_and_says_so():
    f = gpuworthy.expr("y = x + z")
    y = f(x=np.ones(3, dtype=np.float16), z=np.ones(3, dtype=np.float32), device="cpu")
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, [2, 2, 2])
    assert f.last_run["conversions"] == {"x": "float16 to float32"}
    assert "dtype" not in f.last_run


def test_a_mix_with_bfloat16_is_widened_exactly():
    x = np.array([1.0078125, -3.0], dtype=bfloat16())  # 1 + 2^-7 is a bfloat16
    y = gpuworthy.expr("y = x + z")(x=x, z=np.zeros(2, dtype=np.float32), device="cpu")
    np.testing.assert_array_equal(y, np.array([1.0078125, -3.0], dtype=np.float32))


def test_dtype_converts_a_sixteen_bit_result():
    y = TWICE(x=np.array([0.1, 3.0], dtype=np.float16), dtype=np.float64, device="cpu")
    assert y.dtype == np.float64
    np.testing.assert_array_equal(y, (2 * np.array([0.1, 3.0], dtype=np.float16)).astype(np.float64))
    with pytest.raises(ValueError, match="floating"):
        TWICE(x=np.ones(2, dtype=np.float16), dtype=np.int16, device="cpu")


def test_strict_reads_one_dimensional_contiguous_sixteen_bit_arrays_and_refuses_the_rest():
    y = TWICE(x=np.arange(4, dtype=np.float16), strict=True, device="cpu")
    assert y.dtype == np.float16
    with pytest.raises(ValueError, match="strict=True") as e:
        TWICE(x=np.arange(8, dtype=np.float16)[::2], strict=True, device="cpu")
    assert "`x`" in str(e.value) and "gathered" in str(e.value)
    with pytest.raises(ValueError, match="flattened from 2 dimensions"):
        TWICE(x=np.ones((2, 2), dtype=np.float16), strict=True, device="cpu")


def test_bad_sixteen_bit_calls_are_clear_errors():
    with pytest.raises(ValueError, match="not given"):
        gpuworthy.expr("y = x + z")(x=np.ones(3, dtype=np.float16), device="cpu")
    with pytest.raises(ValueError, match="broadcast"):
        gpuworthy.expr("y = x + z")(x=np.ones(3, dtype=np.float16), z=np.ones(4, dtype=np.float16), device="cpu")
    empty = TWICE(x=np.zeros(0, dtype=np.float16), device="cpu")
    assert empty.dtype == np.float16 and empty.shape == (0,)


def test_torch_cpu_tensors_keep_their_sixteen_bit_type():
    torch = pytest.importorskip("torch")
    for dtype in (torch.bfloat16, torch.float16):
        x = torch.arange(-8, 8).to(dtype)
        y = TWICE(x=x, device="cpu")
        assert isinstance(y, torch.Tensor) and y.dtype == dtype
        assert torch.equal(y, 2 * x)
        assert TWICE(x=x, dtype=torch.float32, device="cpu").dtype == torch.float32


@pytest.mark.parametrize("dtype", ["bf16", np.float16, "float16"])
def test_measure_sweep_and_explain_take_the_storage_type(dtype):
    f = gpuworthy.expr("y = a*x + b")
    narrow = f.measure(1 << 12, "cpu", quick=True, dtype=dtype, a=2.0, b=1.0)
    wide = f.measure(1 << 12, "cpu", quick=True, a=2.0, b=1.0)
    assert narrow.passed and narrow.bytes * 2 == wide.bytes, (narrow.bytes, wide.bytes)
    swept = f.sweep(sizes=[1 << 10], backends=["cpu"], progress=False, dtype=dtype, a=2.0, b=1.0)
    assert swept.rows and all(r["bytes"] * 2 == wide.bytes // 4 for r in swept.rows)
    explained = f.explain(1 << 20, dtype=dtype, a=2.0, b=1.0)
    assert explained.bytes * 2 == f.explain(1 << 20, a=2.0, b=1.0).bytes


def test_an_unknown_storage_type_is_refused_with_the_names_it_takes():
    f = gpuworthy.expr("y = 2*x")
    with pytest.raises(ValueError, match="f16|bf16"):
        f.measure(1 << 10, "cpu", quick=True, dtype="int8")
    with pytest.raises(TypeError, match="storage type"):
        f.measure(1 << 10, "cpu", quick=True, dtype=object())
