"""The command line's bad-input table (bench-suite/tests/cli.rs), against the Python API: each a clear Python
exception (``ValueError`` for bad input, ``gpuworthy.Unavailable`` for a backend that cannot run here), never a crash.

Rows of that table with no Python form, and why:

- ``--json``, ``--csv``, ``--plot`` under a file: the API writes no file; it returns records (``to_dict()``,
  ``to_dataframe()``).
- ``roofline``: the package has no roofline function.
- ``explain --expr``: ``explain`` takes a built-in workload (``explain(on=..., gpu_memory=..., link=...)`` are the
  ``--on`` rows, below).
- ``sweep sum square`` (exactly one workload): ``sweep`` takes one workload by its signature.
- ``run --expr ... --size``, ``--expr-file``, ``--set``, ``--range``: an expression's call takes its arrays and
  scalars as arguments, whose bad forms are the argument rows below.
- ``--block-size``, ``calibrate --json/--evaluate/--expr``, ``--resident --pinned``: no such parameters
  (``calibrate()`` takes none; ``placement`` is one value).
- ``GPUWORTHY_BACKEND``: the package does not read it (``backend=`` and ``device=`` name each call's device).
- ``GPUWORTHY_REQUIRE``: read by the test suites (these tests too), not by the package.
"""

import functools
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import gpuworthy

X = np.arange(4, dtype=np.float32)


@functools.lru_cache(maxsize=None)
def available(backend):
    return any(d.backend == backend and d.available for d in gpuworthy.devices())


@pytest.mark.parametrize(
    "source, needle",
    [
        ("y = x +", "^"),
        ("y = foo(x)", "exp"),
        ("y = x > 1", "boolean"),
        ("", "assigns nothing"),
        ("y = 2 * sinc(x)", "unknown function `sinc`"),
        # The caret under `sinc`, as the command line prints it.
        ("y = 2 * sinc(x)", "\n1 | y = 2 * sinc(x)\n  |         ^^^^"),
        ("y = f64(x)", "^"),
    ],
)
def test_language_errors_are_value_errors_with_a_caret_or_the_known_names(source, needle):
    with pytest.raises(ValueError) as e:
        gpuworthy.expr(source)
    assert needle in str(e.value)


@pytest.mark.parametrize(
    "arguments, error, needle",
    [
        # Other dtypes, views, N-D arrays and sequences compute (test_arrays.py); strict=True refuses them there.
        (dict(x="abc"), TypeError, "str"),
        (dict(x=X + 1j), ValueError, "complex"),
        (dict(), ValueError, "`x`"),
        (dict(x=X, z=X), ValueError, "`z`"),
        (dict(x=X, a=np.ones(3, dtype=np.float32)), ValueError, "do not broadcast"),
    ],
)
def test_bad_arguments_are_refused_with_what_is_wrong(arguments, error, needle):
    f = gpuworthy.expr("y = x * 2") if "a" not in arguments else gpuworthy.expr("y = x * a")
    with pytest.raises(error) as e:
        f(device="cpu", **arguments)
    assert needle in str(e.value), str(e.value)


@pytest.mark.parametrize("size", [True, 1.5, [1.5, 2], {"n": 4}, ()])
def test_a_size_of_another_type_is_a_type_error(size):
    with pytest.raises(TypeError) as e:
        gpuworthy.run("square", size, backend="cpu")
    assert "size" in str(e.value)


def test_a_scalar_without_a_value_is_refused():
    with pytest.raises(ValueError) as e:
        gpuworthy.expr("y = a*x + b")(x=X, a=2.0, device="cpu")
    assert "`b`" in str(e.value) or "scalar" in str(e.value)


@pytest.mark.parametrize(
    "call, needle",
    [
        (lambda: gpuworthy.run("fft", "1K"), "fft"),
        (lambda: gpuworthy.run("sum", "banana", backend="cpu"), "banana"),
        (lambda: gpuworthy.run("square", "lots", backend="cpu"), "malformed size `lots`"),
        (lambda: gpuworthy.run("matmul", "3x3", backend="cpu"), "MxKxN"),
        (lambda: gpuworthy.run("stencil", "0x5x3", backend="cpu"), "malformed size `0x5x3`"),
        (lambda: gpuworthy.run("sum", "1K", backend="tpu"), "tpu"),
        (lambda: gpuworthy.run("sum", "1K", backend="cpu", variant="fastest"), "fastest"),
        (lambda: gpuworthy.explain("square", "2^50"), "too large"),
        (lambda: gpuworthy.explain("square", "1K", placement="moon"), "placement"),
        (lambda: gpuworthy.sweep("square", sizes=["1K"], budget_s=0), "budget"),
        (lambda: gpuworthy.sweep("square", sizes=["1M", "2^"], backends=["cpu"]), "malformed size `2^`"),
        (lambda: gpuworthy.sweep("square", sizes=["2^40"], backends=["cpu"]), "square: no size could be measured here"),
        (lambda: gpuworthy.expr("y = x")(x=X, device="gpu9"), "gpu9"),
        (lambda: gpuworthy.explain("square", 1 << 20, on="tpu-farm"), "tpu-farm"),
        (lambda: gpuworthy.explain("square", 1 << 20, on="nvidia-h100", gpu_memory=-1.0), "positive"),
        (lambda: gpuworthy.explain("square", 1 << 20, gpu_memory=500.0), "on="),
        (lambda: gpuworthy.run("matmul", (64, 64), backend="cpu"), "MxKxN"),
    ],
)
def test_bad_requests_are_value_errors(call, needle):
    with pytest.raises(ValueError) as e:
        call()
    assert needle in str(e.value), str(e.value)


# Sizes past the memory of any machine these tests run on, or past 64 bits: each refused before anything of that size
# is allocated, on the CPU and by `explain`.
@pytest.mark.parametrize(
    "workload, size, needle",
    [
        ("sum", "2^40", "too large"),
        ("sum", "2^62", "too large"),
        ("square", "99999999999999", "too large"),
        ("sum", "64G", "too large"),
        ("mandelbrot", "10000000x10000000", "too large"),
        ("matmul", "4000000000", "too large"),
        ("sum", "2^99", "size `2^99` overflows"),
    ],
)
@pytest.mark.parametrize(
    "call",
    [
        lambda workload, size: gpuworthy.run(workload, size, backend="cpu"),
        lambda workload, size: gpuworthy.explain(workload, size),
    ],
    ids=["run", "explain"],
)
def test_sizes_too_large_are_refused_before_anything_is_allocated(call, workload, size, needle):
    with pytest.raises(ValueError) as e:
        call(workload, size)
    assert needle in str(e.value), str(e.value)


def test_a_size_beyond_a_device_limit_is_a_value_error():
    # Two billion mandelbrot counts (8 GB) exceed every wgpu binding limit (at most 4 GiB) and need no input data.
    if not available("wgpu"):
        pytest.skip("wgpu cannot run here")
    with pytest.raises(ValueError) as e:
        gpuworthy.run("mandelbrot", "2000000000x1", backend="wgpu")
    assert "limit" in str(e.value), str(e.value)


def test_a_backend_that_cannot_run_here_is_unavailable():
    missing = [d for d in gpuworthy.devices() if not d.available]
    if not missing:
        pytest.skip("every backend runs here")
    with pytest.raises(gpuworthy.Unavailable) as e:
        gpuworthy.expr("y = x")(x=X, device=missing[0].label)
    assert isinstance(e.value, RuntimeError)


@pytest.mark.parametrize(
    "call",
    [
        lambda: gpuworthy.run("square", "1K", backend="cuda:999"),
        lambda: gpuworthy.expr("y = x")(x=X, device="cuda:999"),
    ],
    ids=["run", "expr"],
)
def test_a_device_that_is_not_here_is_unavailable_with_its_reason(call):
    # No machine has a 1000th CUDA device.
    with pytest.raises(gpuworthy.Unavailable) as e:
        call()
    assert "cuda backend unavailable" in str(e.value), str(e.value)


def test_a_sweep_where_no_backend_can_run_is_unavailable():
    missing = [b for b in ("cuda", "wgpu") if not available(b)]
    if not missing:
        pytest.skip("every backend runs here")
    with pytest.raises(gpuworthy.Unavailable) as e:
        gpuworthy.sweep("square", sizes=["1K"], backends=[missing[0]])
    assert "none of the requested backends can run here" in str(e.value), str(e.value)


# Run in a fresh interpreter with one variable set: the variable is read when a backend opens, and a backend opened
# here stays open for the process.
CHILD = """
import json, numpy, gpuworthy
try:
    {call}
except BaseException as e:
    print(json.dumps({{
        "type": type(e).__name__,
        "value_error": isinstance(e, ValueError),
        "message": str(e),
    }}))
else:
    print(json.dumps(None))
"""

CPU_SIMD = "GPUWORTHY_CPU_SIMD=bogus is not valid: expected a level this CPU supports: "
WGPU_CHECKS = (
    "GPUWORTHY_WGPU_CHECKS=speed is not valid: expected all, none, or a comma-separated list of bounds, loops, division"
)


@pytest.mark.parametrize(
    "variable, value, call, message",
    [
        ("GPUWORTHY_CPU_SIMD", "bogus", "gpuworthy.devices()", CPU_SIMD),
        ("GPUWORTHY_CPU_SIMD", "bogus", "gpuworthy.run('square', '1K', backend='cpu', quick=True)", CPU_SIMD),
        (
            "GPUWORTHY_CPU_SIMD",
            "bogus",
            "gpuworthy.expr('y = 2*x')(x=numpy.ones(4, dtype=numpy.float32), device='cpu')",
            CPU_SIMD,
        ),
        ("GPUWORTHY_CPU_SIMD", "bogus", "gpuworthy.sweep('square', sizes=['1K'], backends=['cpu'])", CPU_SIMD),
        # auto leaves out a backend that cannot run here, never one refused for a bad setting.
        ("GPUWORTHY_CPU_SIMD", "bogus", "gpuworthy.run('square', '1K', quick=True)", CPU_SIMD),
        (
            "GPUWORTHY_CPU_SIMD",
            "bogus",
            "gpuworthy.expr('y = 2*x')(x=numpy.ones(4, dtype=numpy.float32), device='auto')",
            CPU_SIMD,
        ),
        (
            "GPUWORTHY_WGPU_UNCHECKED",
            "maybe",
            "gpuworthy.devices()",
            "GPUWORTHY_WGPU_UNCHECKED=maybe is not valid: expected 1, true, yes, on, 0, false, no or off",
        ),
        ("GPUWORTHY_WGPU_CHECKS", "speed", "gpuworthy.devices()", WGPU_CHECKS),
        ("GPUWORTHY_WGPU_CHECKS", "speed", "gpuworthy.run('square', '1K', backend='wgpu', quick=True)", WGPU_CHECKS),
        (
            "GPUWORTHY_WGPU_MAX_BINDING",
            "1K",
            "gpuworthy.devices()",
            "GPUWORTHY_WGPU_MAX_BINDING=1K is not valid: expected a size of at least 1M, such as 64M",
        ),
    ],
)
def test_a_bad_environment_variable_is_a_value_error_that_names_it(variable, value, call, message):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUWORTHY_")}
    env[variable] = value
    # The same package as this process imported, wherever it was installed.
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(gpuworthy.__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in [package_parent, env.get("PYTHONPATH", "")] if p)
    out = subprocess.run(
        [sys.executable, "-c", CHILD.format(call=call)], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    raised = json.loads(out.stdout.strip().splitlines()[-1])
    assert raised is not None, f"{variable}={value}: {call} raised nothing"
    assert raised["value_error"], raised
    assert message in raised["message"], raised["message"]
