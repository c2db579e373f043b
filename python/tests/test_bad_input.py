"""The command line's bad-input table, against the Python API: each a clear Python exception, never a crash."""

import numpy as np
import pytest

import gpuworthy

X = np.arange(4, dtype=np.float32)


@pytest.mark.parametrize(
    "source, needle",
    [
        ("y = x +", "^"),
        ("y = foo(x)", "exp"),
        ("y = x > 1", "boolean"),
        ("", "assigns nothing"),
    ],
)
def test_language_errors_are_value_errors_with_a_caret_or_the_known_names(source, needle):
    with pytest.raises(ValueError) as e:
        gpuworthy.expr(source)
    assert needle in str(e.value)


@pytest.mark.parametrize(
    "arguments, error, needle",
    [
        (dict(x=X.astype(np.float64)), ValueError, "float64"),
        (dict(x=np.arange(8, dtype=np.float32)[::2]), ValueError, "contiguous"),
        (dict(x=np.ones((2, 2), dtype=np.float32)), ValueError, "dimensions"),
        (dict(x=[1.0, 2.0]), TypeError, "list"),
        (dict(x="abc"), TypeError, "str"),
        (dict(), ValueError, "`x`"),
        (dict(x=X, z=X), ValueError, "`z`"),
        (dict(x=X, a=np.ones(3, dtype=np.float32)), ValueError, "length"),
    ],
)
def test_bad_arguments_are_refused_with_what_is_wrong(arguments, error, needle):
    f = gpuworthy.expr("y = x * 2") if "a" not in arguments else gpuworthy.expr("y = x * a")
    with pytest.raises(error) as e:
        f(device="cpu", **arguments)
    assert needle in str(e.value), str(e.value)


def test_a_scalar_without_a_value_is_refused():
    with pytest.raises(ValueError) as e:
        gpuworthy.expr("y = a*x + b")(x=X, a=2.0, device="cpu")
    assert "`b`" in str(e.value) or "scalar" in str(e.value)


@pytest.mark.parametrize(
    "call, needle",
    [
        (lambda: gpuworthy.run("fft", "1K"), "fft"),
        (lambda: gpuworthy.run("sum", "2^40", backend="cpu"), "too large"),
        (lambda: gpuworthy.run("sum", "banana", backend="cpu"), "banana"),
        (lambda: gpuworthy.run("sum", "1K", backend="tpu"), "tpu"),
        (lambda: gpuworthy.run("sum", "1K", backend="cpu", variant="fastest"), "fastest"),
        (lambda: gpuworthy.explain("square", "2^50"), "too large"),
        (lambda: gpuworthy.explain("square", "1K", placement="moon"), "placement"),
        (lambda: gpuworthy.sweep("square", sizes=["1K"], budget_s=0), "budget"),
        (lambda: gpuworthy.expr("y = x")(x=X, device="gpu9"), "gpu9"),
    ],
)
def test_bad_requests_are_value_errors(call, needle):
    with pytest.raises(ValueError) as e:
        call()
    assert needle in str(e.value), str(e.value)


def test_a_backend_that_cannot_run_here_is_unavailable():
    missing = [d for d in gpuworthy.devices() if not d.available]
    if not missing:
        pytest.skip("every backend runs here")
    with pytest.raises(gpuworthy.Unavailable) as e:
        gpuworthy.expr("y = x")(x=X, device=missing[0].label)
    assert isinstance(e.value, RuntimeError)
