"""Arrays already on a CUDA GPU (CuPy, PyTorch) in and out without a copy: skipped where neither library or no CUDA
device is present; GPUWORTHY_REQUIRE=cuda makes that a failure."""

import os

import numpy as np
import pytest

import gpuworthy

REQUIRED = "cuda" in os.environ.get("GPUWORTHY_REQUIRE", "").split(",")
HAS_CUDA = any(d.backend == "cuda" and d.available for d in gpuworthy.devices())


def library(name):
    try:
        module = __import__(name)
    except ImportError:
        module = None
    ready = module is not None and HAS_CUDA
    if ready and name == "torch":
        ready = module.cuda.is_available()
    if not ready:
        if REQUIRED:
            pytest.fail(f"GPUWORTHY_REQUIRE names cuda, but {name} on a CUDA device is not usable here")
        pytest.skip(f"{name} on a CUDA device is not available here")
    return module


@pytest.fixture(params=["cupy", "torch"])
def xp(request):
    module = library(request.param)
    if request.param == "cupy":
        return (module, lambda a: module.asarray(a), lambda a: module.asnumpy(a), module.ndarray)
    return (
        module,
        lambda a: module.from_numpy(np.ascontiguousarray(a)).to("cuda"),
        lambda a: a.cpu().numpy(),
        module.Tensor,
    )


def pointer(array):
    return array.__cuda_array_interface__["data"][0]


def test_device_arrays_in_and_out_without_a_copy(xp):
    module, to_gpu, to_host, kind = xp
    host = np.linspace(-2, 2, 100_003, dtype=np.float32)
    x = to_gpu(host)
    before = pointer(x)
    f = gpuworthy.expr("y = exp(-x*x) * sin(a*x)")
    y = f(x=x, a=3.0)
    assert isinstance(y, kind), type(y)
    assert pointer(x) == before and pointer(y) != before
    np.testing.assert_allclose(to_host(y), np.exp(-host * host) * np.sin(3 * host), rtol=1e-5, atol=1e-6)
    assert f.last_run["device"] == "cuda:0" and "no copy" in f.last_run["reason"]


def test_several_outputs_in_place_outputs_and_reductions(xp):
    module, to_gpu, to_host, kind = xp
    host_x = np.arange(1, 1001, dtype=np.float32)
    host_z = np.ones(1000, dtype=np.float32)
    x, z = to_gpu(host_x), to_gpu(host_z)
    out = gpuworthy.expr("u = x*c - z*s; v = x*s + z*c")(x=x, z=z, c=0.6, s=0.8)
    np.testing.assert_allclose(to_host(out["v"]), host_x * 0.8 + host_z * 0.6, rtol=1e-6)
    total = gpuworthy.expr("s = sum(x*x)")(x=x)
    assert isinstance(total, float) and total == pytest.approx(float(np.sum(host_x.astype(np.float64) ** 2)), rel=1e-5)
    # An output named after an input overwrites it, in place.
    z_before = pointer(z)
    same = gpuworthy.expr("z = a*x + z")(x=x, z=z, a=2.0)
    assert pointer(same) == z_before
    np.testing.assert_allclose(to_host(z), 2 * host_x + 1, rtol=1e-6)
    empty = gpuworthy.expr("y = x + 1")(x=to_gpu(np.zeros(0, dtype=np.float32)))
    assert to_host(empty).shape == (0,)


def test_work_on_another_stream_is_ordered_with_the_kernel():
    cupy = library("cupy")
    f = gpuworthy.expr("y = x * 2")
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        x = cupy.arange(1 << 22, dtype=cupy.float32)  # written on `stream`
        y = f(x=x)
        z = y + 1  # enqueued on `stream` after the kernel
    stream.synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(z), np.arange(1 << 22, dtype=np.float32) * 2 + 1)


def test_device_arrays_that_would_need_converting_are_refused_with_strict():
    cupy = library("cupy")
    f = gpuworthy.expr("y = x * 2")
    cases = [
        (dict(x=cupy.arange(4, dtype=cupy.float64)), "<f8"),
        (dict(x=cupy.arange(8, dtype=cupy.float32)[::2]), "strided"),
        (dict(x=cupy.ones((2, 2), dtype=cupy.float32)), "dimensions"),
        (dict(x=cupy.arange(5, dtype=cupy.float32)[1:]), "aligned"),
    ]
    for arguments, needle in cases:
        with pytest.raises(ValueError) as e:
            f(**arguments, strict=True)
        assert needle in str(e.value), str(e.value)
    with pytest.raises(ValueError) as e:
        f(x=cupy.ones(4, dtype=cupy.float32), device="cpu")
    assert "on a GPU" in str(e.value)
    with pytest.raises(ValueError) as e:
        f(x=cupy.ones(4, dtype=cupy.float32), z=np.ones(4, dtype=np.float32))
    assert "in one place" in str(e.value) or "does not read" in str(e.value)


def dtypes_of(module):
    if module.__name__ == "torch":
        return [module.float32, module.float64, module.bfloat16, module.float16, module.int32]
    return [module.float32, module.float64, module.float16, module.int32]


def sixteen_bit(module, dtype):
    return dtype in (module.float16, getattr(module, "bfloat16", module.float16))


def as_float32(module, array):
    return array.float() if module.__name__ == "torch" else array.astype(module.float32)


def test_device_arrays_of_every_dtype_layout_and_shape_are_converted_on_their_gpu(xp):
    module, to_gpu, to_host, kind = xp
    f = gpuworthy.expr("y = 2*x + 1")
    host = np.arange(24, dtype=np.float32).reshape(4, 6)
    for dtype in dtypes_of(module):
        x = to_gpu(host).to(dtype) if module.__name__ == "torch" else to_gpu(host).astype(dtype)
        for view, expected in ((x, 2 * host + 1), (x[:, ::2], 2 * host[:, ::2] + 1), (x.T, 2 * host.T + 1),
                               (x.reshape(-1)[1:], 2 * host.reshape(-1)[1:] + 1)):
            y = f(x=view)
            assert isinstance(y, kind) and tuple(y.shape) == expected.shape, (dtype, tuple(y.shape))
            # Arrays of one 16-bit type keep it (computed on their storage); every other type becomes float32.
            assert y.dtype == (dtype if sixteen_bit(module, dtype) else module.float32), (dtype, y.dtype)
            np.testing.assert_array_equal(to_host(as_float32(module, y)), expected)
            if (dtype != dtypes_of(module)[0] and not sixteen_bit(module, dtype)) or view is not x:
                run = f.last_run
                assert run["conversions"] and run["conversion_s"] >= 0 and "on the GPU" in str(run["conversions"]), run
            elif sixteen_bit(module, dtype):
                assert "conversions" not in f.last_run and "no copy" in f.last_run["reason"], f.last_run


def sixteen_bit_types(module):
    return [module.float16, module.bfloat16] if module.__name__ == "torch" else [module.float16]


def test_sixteen_bit_device_arrays_are_computed_on_their_storage_as_the_host_computes_them(xp):
    module, to_gpu, to_host, kind = xp
    host = np.linspace(-2, 2, 100_003, dtype=np.float32)
    for dtype in sixteen_bit_types(module):
        x = to_gpu(host).to(dtype) if module.__name__ == "torch" else to_gpu(host).astype(dtype)
        x_before = to_host(as_float32(module, x))
        # The same bits on the host: the host's 16-bit path computes in float32 and rounds once, as the kernel does.
        on_host = x.cpu() if module.__name__ == "torch" else module.asnumpy(x)
        storage = "bf16" if "bfloat16" in str(dtype) else "f16"
        relative = 2.0**-8 if storage == "bf16" else 2.0**-11  # half a unit in the last place, relative
        for source, scalars in (("y = exp(-x*x) * sin(a*x)", dict(a=3.0)), ("y = a*x + b", dict(a=2.0, b=1.0))):
            f = gpuworthy.expr(source)
            y = f(x=x, **scalars)
            assert isinstance(y, kind) and y.dtype == dtype, (source, y.dtype)
            run = f.last_run
            assert run["storage"] == storage and "no copy" in run["reason"] and "conversions" not in run, run
            expected = f(x=on_host, device="cpu", **scalars)
            expected = expected.float().numpy() if module.__name__ == "torch" else expected.astype(np.float32)
            # Each is the float32 result rounded once to the storage: they may differ by one unit where the two
            # float32 results fall on either side of a rounding boundary.
            np.testing.assert_allclose(to_host(as_float32(module, y)), expected, rtol=4 * relative, atol=1e-6)
            # The next call of the same shape takes the kept path, with the same result and record.
            assert f._launchers, "a call on 16-bit device arrays keeps what the next call of its shape needs"
            again = f(x=x, **scalars)
            assert again.dtype == dtype and f.last_run["storage"] == storage
            np.testing.assert_array_equal(to_host(as_float32(module, again)), to_host(as_float32(module, y)))
            # A float32 array after them is not of that shape: the general path runs it, in float32.
            y32 = f(x=as_float32(module, x), **scalars)
            assert y32.dtype == module.float32 and f.last_run["storage"] == "f32"
        np.testing.assert_array_equal(to_host(as_float32(module, x)), x_before)
        total = gpuworthy.expr("s = sum(x*x)")(x=x)
        exact = float(np.sum(x_before.astype(np.float64) ** 2))
        assert isinstance(total, float) and total == pytest.approx(exact, rel=1e-5)


def test_sixteen_bit_device_arrays_with_strict_and_mixed_types():
    torch = library("torch")
    f = gpuworthy.expr("y = x * z")
    x = torch.arange(64, device="cuda", dtype=torch.bfloat16)
    y = f(x=x, z=x, strict=True)
    assert y.dtype == torch.bfloat16 and f.last_run["storage"] == "bf16"
    # x*x is exact in float32 here, so the result is its one rounding to bfloat16, as torch rounds it.
    expected = (x.float() * x.float()).to(torch.bfloat16).float().cpu().numpy()
    np.testing.assert_array_equal(y.float().cpu().numpy(), expected)
    for bad, needle in ((x[::2], "strided"), (x.reshape(8, 8), "dimensions")):
        with pytest.raises(ValueError) as e:
            f(x=bad, z=bad, strict=True)
        assert needle in str(e.value), str(e.value)
    # bfloat16 beside float32: no shared 16-bit type, so both are computed from float32, and that is said.
    mixed = f(x=x, z=torch.ones(64, device="cuda"))
    assert mixed.dtype == torch.float32 and f.last_run["storage"] == "f32" and f.last_run["conversions"]
    np.testing.assert_array_equal(mixed.cpu().numpy(), np.arange(64, dtype=np.float32))


def test_results_come_back_in_the_dtype_asked_for(xp):
    module, to_gpu, to_host, kind = xp
    x = to_gpu(np.arange(4, dtype=np.float32))
    y = gpuworthy.expr("y = x / 2")(x=x, dtype=np.float64)
    assert "float64" in str(y.dtype)
    np.testing.assert_array_equal(to_host(y), [0, 0.5, 1, 1.5])
    if module.__name__ == "torch":
        b = gpuworthy.expr("y = x / 2")(x=x.to(module.bfloat16), dtype=module.bfloat16)
        assert b.dtype == module.bfloat16
        np.testing.assert_array_equal(b.float().cpu().numpy(), [0, 0.5, 1, 1.5])


def test_broadcast_device_arrays_and_a_reduction_over_an_image(xp):
    module, to_gpu, to_host, kind = xp
    column = to_gpu(np.arange(3, dtype=np.float32).reshape(3, 1))
    row = to_gpu(np.arange(4, dtype=np.float32).reshape(1, 4))
    y = gpuworthy.expr("y = x + 10*z")(x=column, z=row)
    np.testing.assert_array_equal(to_host(y), np.arange(3).reshape(3, 1) + 10 * np.arange(4).reshape(1, 4))
    image = to_gpu(np.ones((64, 32), dtype=np.float32))
    assert gpuworthy.expr("s = sum(x)")(x=image) == 64 * 32


def test_jax_arrays_on_a_gpu_are_read_through_dlpack():
    jax = pytest.importorskip("jax")
    if not HAS_CUDA:
        pytest.skip("no CUDA device here")
    gpus = [d for d in jax.devices() if d.platform == "gpu"]
    if not gpus:
        pytest.skip("JAX has no GPU here")
    x = jax.device_put(jax.numpy.arange(8, dtype=jax.numpy.float32), gpus[0])
    y = gpuworthy.expr("y = 3*x")(x=x)
    # Read through DLPack by torch (or CuPy), so the result is one of theirs, on the same GPU.
    host = y.cpu().numpy() if hasattr(y, "cpu") else y.get()
    np.testing.assert_array_equal(host, 3 * np.arange(8))


def test_repeated_calls_take_the_kept_path_and_other_shapes_the_general_one(xp):
    module, to_gpu, to_host, kind = xp
    host = np.arange(1000, dtype=np.float32)
    x = to_gpu(host)
    f = gpuworthy.expr("y = a*x + b")
    for a in (1.0, 2.0, 3):
        y = f(x=x, a=a, b=1.0)
        assert isinstance(y, kind)
        np.testing.assert_allclose(to_host(y), a * host + 1, rtol=1e-6)
    assert f._launchers, "a call on device arrays keeps what the next call of its shape needs"
    # Calls of another shape: another length, the names in another order, NumPy arrays, a bad dtype, a bad scalar.
    np.testing.assert_allclose(to_host(f(x=to_gpu(host[:10]), a=2.0, b=1.0)), 2 * host[:10] + 1, rtol=1e-6)
    np.testing.assert_allclose(to_host(f(b=1.0, a=2.0, x=x)), 2 * host + 1, rtol=1e-6)
    # A view 4 bytes into its allocation is not aligned for the kernels: converted, not refused.
    np.testing.assert_allclose(to_host(f(x=x[1:], a=2.0, b=1.0)), 2 * host[1:] + 1, rtol=1e-6)
    np.testing.assert_allclose(f(x=host, a=2.0, b=1.0), 2 * host + 1, rtol=1e-6)
    assert "no copy" not in f.last_run["reason"]
    np.testing.assert_allclose(to_host(f(x=to_gpu(host.astype(np.float64)), a=2.0, b=1.0)), 2 * host + 1, rtol=1e-6)
    assert "conversions" in f.last_run
    with pytest.raises(TypeError):
        f(x=x, a="2", b=1.0)
    assert to_host(f(x=to_gpu(np.zeros(0, dtype=np.float32)), a=2.0, b=1.0)).shape == (0,)
    np.testing.assert_allclose(to_host(f(x=x, a=2.0, b=1.0)), 2 * host + 1, rtol=1e-6)
    assert "no copy" in f.last_run["reason"]
    # A reduction and an output that overwrites its input, called again and again.
    total = gpuworthy.expr("s = sum(x)")
    assert [total(x=x) for _ in range(3)] == [float(host.sum())] * 3
    z = to_gpu(np.zeros(1000, dtype=np.float32))
    step = gpuworthy.expr("z = z + x")
    for _ in range(3):
        assert pointer(step(z=z, x=x)) == pointer(z)
    np.testing.assert_allclose(to_host(z), 3 * host, rtol=1e-6)
