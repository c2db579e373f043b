"""The Python API on whatever backends this machine has: results as attributes, arrays in and out, errors as
exceptions. GPU-only checks skip where no GPU is present; GPUWORTHY_REQUIRE makes a missing backend a failure."""

import os
import threading

import numpy as np
import pytest

import gpuworthy

AVAILABLE = {d.backend for d in gpuworthy.devices() if d.available}
REQUIRED = {b for b in os.environ.get("GPUWORTHY_REQUIRE", "").split(",") if b}


def backends():
    for backend in ("cpu", "wgpu", "cuda"):
        if backend in AVAILABLE:
            yield backend
        elif backend in REQUIRED:
            pytest.fail(f"GPUWORTHY_REQUIRE names {backend}, which cannot run here")


def test_the_first_example_of_the_readme():
    out = gpuworthy.expr("y = 2*x")(x=np.arange(4, dtype=np.float32))
    assert isinstance(out, np.ndarray) and out.dtype == np.float32
    assert out.tolist() == [0.0, 2.0, 4.0, 6.0]


def test_devices_list_the_cpu_and_say_why_others_are_missing():
    devices = gpuworthy.devices()
    cpu = [d for d in devices if d.backend == "cpu"]
    assert cpu and cpu[0].available and cpu[0].is_gpu is False
    for d in devices:
        assert d.available or d.reason, d
        assert set(d.to_dict()) >= {"label", "backend", "available", "reason"}


@pytest.mark.parametrize("backend", list(backends()))
def test_an_expression_matches_numpy_on_every_backend(backend):
    rng = np.random.default_rng(7)
    x = rng.uniform(-2, 2, 10_001).astype(np.float32)
    f = gpuworthy.expr("y = exp(-x*x) * sin(a*x)")
    y = f(x=x, a=3.0, device=backend)
    np.testing.assert_allclose(y, np.exp(-x * x) * np.sin(3 * x), rtol=1e-5, atol=1e-6)
    assert f.last_run["device"].startswith(backend)


@pytest.mark.parametrize("backend", list(backends()))
def test_several_outputs_come_back_by_name_and_a_reduction_as_a_number(backend):
    x = np.linspace(-1, 1, 1000, dtype=np.float32)
    z = np.linspace(2, 3, 1000, dtype=np.float32)
    rotated = gpuworthy.expr("u = x*c - z*s; v = x*s + z*c")(x=x, z=z, c=0.6, s=0.8, device=backend)
    assert set(rotated) == {"u", "v"}
    np.testing.assert_allclose(rotated["u"], x * 0.6 - z * 0.8, rtol=1e-5, atol=1e-6)
    total = gpuworthy.expr("s = sum(x*x)")(x=x, device=backend)
    assert isinstance(total, float)
    assert total == pytest.approx(float(np.sum(x.astype(np.float64) ** 2)), rel=1e-4)


def test_auto_says_where_it_ran_and_why():
    f = gpuworthy.expr("y = a*x + b")
    f(x=np.ones(16, dtype=np.float32), a=2, b=1)
    assert f.last_run["device"] and f.last_run["reason"]


def test_an_empty_array_gives_an_empty_result():
    assert gpuworthy.expr("y = x + 1")(x=np.zeros(0, dtype=np.float32), device="cpu").shape == (0,)


def test_the_input_is_read_in_place_and_left_unchanged():
    x = np.arange(8, dtype=np.float32)
    before = x.copy()
    gpuworthy.expr("y = x * x")(x=x, device="cpu")
    assert np.array_equal(x, before)


def test_the_gil_is_released_while_work_runs():
    # Another Python thread makes progress while a long expression runs.
    x = np.ones(1 << 22, dtype=np.float32)
    f = gpuworthy.expr("y = sqrt(x) * exp(x) + sin(x) * cos(x)")
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)

    counter = threading.Thread(target=count)
    counter.start()
    try:
        for _ in range(5):
            f(x=x, device="cpu")
    finally:
        stop.set()
        counter.join()
    assert len(ticks) > 100


def test_run_gives_phases_medians_spread_and_check():
    r = gpuworthy.run("saxpy", "2^16", backend="cpu", quick=True)
    assert isinstance(r, gpuworthy.RunResult)
    assert r.workload == "saxpy" and r.device == "cpu" and r.passed
    assert 0 < r.kernel.p25_s <= r.kernel.median_s <= r.kernel.p75_s
    assert r.kernel.samples >= 3 and r.kernel_gb_per_s > 0
    assert r.to_dict()["kernel"]["median_s"] == r.kernel.median_s
    every = gpuworthy.run("square", "4096", backend="cpu", variant="all", quick=True)
    assert {x.variant for x in every} >= {"scalar", "simd"}


def test_a_result_prints_as_its_table():
    r = gpuworthy.run("square", 4096, backend="cpu", quick=True)
    lines = str(r).splitlines()
    assert lines[0].startswith(f"square 4096 on cpu ({r.device_name}), {r.variant}: ") and lines[0].endswith("check passed")
    assert [line.split()[0] for line in lines[1:7]] == ["compile", "first", "upload", "kernel", "download", "end"]
    # Each phase's median as a person reads it, then its spread.
    assert gpuworthy._plot.seconds(r.kernel.median_s) in lines[4] and "to" in lines[4]


def test_run_on_auto_says_why():
    r = gpuworthy.run("sum", "1K", quick=True)
    assert r.reason


def test_explain_predicts_without_measuring():
    e = gpuworthy.explain("square", "2^20", placement="resident")
    assert e.device and e.reason and e.placement.startswith("data resident")


def test_sweep_gives_rows_and_crossovers():
    s = gpuworthy.sweep("square", sizes=["1K", "64K"], backends=["cpu"])
    assert {r["size"] for r in s.rows} == {"1024", "65536"}
    assert all(r["check"] == "ok" for r in s.rows) and s.notes == []
    # The CPU alone has no crossover; with a GPU there is one, with its verdict.
    assert s.crossover is None
    gpus = [d.backend for d in gpuworthy.devices() if d.available and d.is_gpu]
    if gpus:
        with_gpu = gpuworthy.sweep("square", sizes=["1K", "1M"], backends=["cpu", gpus[0]])
        assert with_gpu.crossover is not None and with_gpu.crossover["verdict"]


def test_to_dataframe_where_pandas_is_installed():
    pandas = pytest.importorskip("pandas")
    frame = gpuworthy.run("sum", "4K", backend="cpu", quick=True).to_dataframe()
    assert isinstance(frame, pandas.DataFrame) and "kernel.median_s" in frame.columns


@pytest.mark.parametrize(
    "workload, size, shown",
    [("square", 1 << 16, "65536"), ("matmul", (64, 32, 16), "64x32x16"), ("softmax", (64, 128), "64x128"),
     ("square", "2^16", "65536")],
)
def test_sizes_are_python_values_or_the_command_lines_text(workload, size, shown):
    r = gpuworthy.run(workload, size, backend="cpu", quick=True)
    assert r.passed and r.size == shown, (r.size, r.check)


def test_explain_on_a_reference_machine_answers_for_a_gpu_this_machine_lacks():
    e = gpuworthy.explain("square", 1 << 26, on="nvidia-h100")
    assert "H100" in e.on and e.cpu_from
    assert any(p.is_gpu for p in e.predictions) and any(not p.is_gpu for p in e.predictions)
    slow_link = gpuworthy.explain("square", 1 << 26, on="nvidia-h100", link=1.0)
    gpu = lambda x: min(p.total_s for p in x.predictions if p.is_gpu and not p.pipelined)  # noqa: E731
    assert gpu(slow_link) > gpu(e) and "what-if" in slow_link.on


def test_the_command_line_comes_with_the_package():
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "gpuworthy._cli", "--help"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "Usage: gpuworthy" in done.stdout, done.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "gpuworthy", "run", "fft"], capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 2 and "fft" in bad.stderr


def test_the_installed_package_is_imported_from_any_folder(tmp_path):
    """Run from the package's own folder (where its sources are) or anywhere else, the import finds the installed
    package, compiled half included, not a source tree without it."""
    import pathlib
    import subprocess
    import sys

    package_folder = pathlib.Path(__file__).resolve().parent.parent
    for folder in (package_folder, tmp_path):
        done = subprocess.run(
            [sys.executable, "-c", "import gpuworthy, gpuworthy._gpuworthy; print(gpuworthy.__file__)"],
            cwd=folder, capture_output=True, text=True, timeout=120,
        )
        assert done.returncode == 0, done.stderr


def test_a_workload_split_over_a_device_group_is_measured_and_checked():
    groups = ["cpu+wgpu"] if "wgpu" in AVAILABLE else []
    if "cuda" in AVAILABLE:
        groups.append("cpu+cuda")
    if not groups:
        if REQUIRED - {"cpu"}:
            pytest.fail(f"GPUWORTHY_REQUIRE names {sorted(REQUIRED)}, but no group of two devices can run here")
        pytest.skip("no second device here to make a group with")
    for group in groups:
        r = gpuworthy.run_group("square", group, 1 << 16)
        # Members are named as they opened: `cuda` is `cuda:0`, the first GPU.
        assert r.passed and len(r.members) == 2 and r.members[0].name == "cpu", (r.check, r.group)
        assert r.group == "+".join(m.name for m in r.members)
        assert sum(m.share for m in r.members) == pytest.approx(1.0)
        assert r.group_s > 0 and r.speedup > 0 and r.resident["slowest_kernel_s"] > 0
        # Square's output is its parts end to end: the members write into it in place, and nothing is joined.
        assert r.in_place and r.join_s == 0 and r.resident["with_combine_s"] > 0
        assert "<table>" in r._repr_html_()
    with pytest.raises(ValueError) as e:
        gpuworthy.run_group("square", "cpu", 1 << 10)
    assert "not a group" in str(e.value)
    with pytest.raises(ValueError):
        gpuworthy.run_group("fft", "cpu+wgpu", 1 << 10)


def test_a_machine_without_a_display_prints_no_false_error():
    """Mesa's Vulkan layers ask for a Wayland display while wgpu starts; without XDG_RUNTIME_DIR the client library
    would print `error: XDG_RUNTIME_DIR is invalid or not set` before anything else. No such line, from Python."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("XDG_RUNTIME_DIR", "WAYLAND_DISPLAY")}
    code = "import gpuworthy; gpuworthy.devices(); print(gpuworthy.run('square', 4096, backend='cpu', quick=True).check)"
    if "wgpu" in AVAILABLE:
        code += "; print(gpuworthy.run('square', 4096, backend='wgpu', quick=True).check)"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "error:" not in done.stderr and "error:" not in done.stdout, done.stderr


def test_precision_and_tolerance_choose_among_the_variants() -> None:
    """``precision`` keeps a device's variants in the precisions named, ``tolerance`` those whose error bound at the
    size is within it (bf16's is about 7.8e-3); a named device without ``variant="all"`` has nothing to choose among."""
    in_bf16 = gpuworthy.run("matmul", (64, 64, 64), backend="cpu", variant="all", quick=True, precision="bf16")
    assert in_bf16 and {r.variant for r in in_bf16} <= {"bf16", "avx512-bf16"}
    assert all(r.passed for r in in_bf16)
    tight = gpuworthy.run("matmul", (64, 64, 64), backend="cpu", variant="all", quick=True, tolerance=1e-3)
    assert "blocked" in {r.variant for r in tight} and "bf16" not in {r.variant for r in tight}
    loose = gpuworthy.run("matmul", (64, 64, 64), backend="cpu", variant="all", quick=True, tolerance=1e-2)
    assert "bf16" in {r.variant for r in loose}
    with pytest.raises(ValueError, match="choose among variants"):
        gpuworthy.run("matmul", 64, backend="cpu", tolerance=1e-2)
    with pytest.raises(ValueError, match="between 0 and 1"):
        gpuworthy.run("matmul", 64, backend="cpu", variant="all", tolerance=2.0)
    with pytest.raises(ValueError):
        gpuworthy.run("matmul", 64, backend="cpu", variant="all", precision="fp64")
    with pytest.raises(ValueError, match="too large"):
        gpuworthy.run("sum", "2^62", backend="cpu", variant="all", tolerance=1e-2)


def test_a_workloads_own_options_reach_it_and_others_are_refused_by_name():
    uniform = gpuworthy.run("histogram", "2^16", backend="cpu", variant="scalar", quick=True, bins=16)
    skewed = gpuworthy.run("histogram", "2^16", backend="cpu", variant="scalar", quick=True, bins=16,
                           distribution="skewed")
    assert uniform.passed and skewed.passed
    # Mandelbrot's flops count the iterations its pixels took: inside the set every pixel runs to the limit.
    inside = gpuworthy.run("mandelbrot", 64, backend="cpu", quick=True, region="inside", max_iter=50)
    boundary = gpuworthy.run("mandelbrot", 64, backend="cpu", quick=True, region="boundary", max_iter=50)
    assert inside.passed and boundary.passed
    assert inside.flops == 64 * 64 * 50 * 8 and boundary.flops < inside.flops
    with pytest.raises(ValueError, match="bins"):
        gpuworthy.run("square", 4096, backend="cpu", quick=True, bins=16)
    with pytest.raises(ValueError, match="max_iter"):
        gpuworthy.run("mandelbrot", 64, backend="cpu", quick=True, max_iter=0)
    with pytest.raises(ValueError, match="unknown distribution"):
        gpuworthy.run("histogram", 4096, backend="cpu", quick=True, distribution="wide")
    with pytest.raises(ValueError, match="region"):
        gpuworthy.run("mandelbrot", 64, backend="cpu", quick=True, region="1,0,0,1")


def test_a_block_size_needs_a_named_gpu_backend():
    with pytest.raises(ValueError, match="name it"):
        gpuworthy.run("square", 4096, quick=True, block_size=256)
    with pytest.raises(ValueError, match="no block size"):
        gpuworthy.run("square", 4096, backend="cpu", quick=True, block_size=256)
    if any(d.backend == "wgpu" and d.available for d in gpuworthy.devices()):
        small = gpuworthy.run("square", 4096, backend="wgpu", variant="naive", quick=True, block_size=64)
        assert small.passed


def test_no_sync_times_one_launch_three_ways_and_a_gpus_host_clock_reads_the_queueing():
    """Chapter 10's lesson: on a GPU the launch call returns before the kernel runs, so the host's clock without a
    synchronisation reads less than with one; on the CPU the call does the work before it returns."""
    assert gpuworthy.run("square", 1 << 12, backend="cpu", quick=True).clocks is None
    for backend in backends():
        variant = "simd" if backend == "cpu" else "vec4"
        r = gpuworthy.run("square", 1 << 20, backend=backend, variant=variant, quick=True, no_sync=True)
        assert r.clocks is not None and set(r.clocks) == {"host_unsynchronised", "host_synchronised", "device_timer"}
        assert all(c.median_s > 0 and c.samples > 0 for c in r.clocks.values()), r.clocks
        assert "launch, host clock, no sync (wrong)" in str(r) and "launch, device timer" in r._repr_html_()
        if backend != "cpu":
            unsynchronised, synchronised = r.clocks["host_unsynchronised"], r.clocks["host_synchronised"]
            assert unsynchronised.median_s < synchronised.median_s, r.clocks

