"""What a notebook user reaches for: charts (matplotlib, the optional ``plot`` extra), rich tables, progress on long
calls and Ctrl-C, an expression measured, swept and explained like a built-in workload, and the command line's
transfer lessons (``pinned``, ``pipelined``, ``launches``)."""

import threading
import time

import numpy as np
import pytest

import gpuworthy


@pytest.fixture(scope="module")
def swept():
    return gpuworthy.sweep("square", sizes=[1 << 10, 1 << 14, 1 << 16], backends=["cpu"], progress=False)


def test_a_sweep_plots_to_a_png_like_the_command_lines_chart(swept, tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    path = tmp_path / "square.png"
    ax = swept.plot(path=str(path))
    assert path.stat().st_size > 10_000
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert any("cpu kernel" in t.get_text() for t in ax.get_legend().get_texts())


def test_a_run_and_several_runs_plot_their_phases(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    every = gpuworthy.run("square", 1 << 14, backend="cpu", variant="all", quick=True)
    gpuworthy.plot_runs(every, path=str(tmp_path / "runs.png"))
    every[0].plot(path=str(tmp_path / "one.svg"))
    assert (tmp_path / "runs.png").stat().st_size > 5_000 and (tmp_path / "one.svg").exists()


def test_an_evaluation_plots_each_points_regret(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    # The shape `calibrate(evaluate=True)["evaluation"]` has (measuring one takes minutes: the command line's
    # `calibrate --evaluate` is tested in the workspace).
    point = dict(auto_device="cpu", auto_variant="simd", auto_pipelined=False, fastest="cpu", fastest_s=1e-3,
                 predicted_s=1e-3, past_ladder=False, by_trial=False)
    evaluation = {"points": [
        dict(point, workload="square", size="1024", placement="Resident", auto_s=1e-3, regret=1.0),
        dict(point, workload="square", size="4096", placement="Host", auto_s=1.5e-3, regret=1.5),
        dict(point, workload="sum", size="1024", placement="PinnedHost", auto_s=None, regret=None),
    ]}
    ax = gpuworthy.plot_evaluation(evaluation, path=str(tmp_path / "evaluation.png"))
    assert "1 of 2 points" in ax.get_title()
    assert (tmp_path / "evaluation.png").stat().st_size > 5_000


def test_results_show_as_html_tables_in_jupyter(swept):
    html = swept._repr_html_()
    assert html.startswith("<table>") and "square" in html and "cpu" in html
    run = gpuworthy.run("sum", 1 << 12, backend="cpu", quick=True)
    assert "kernel" in run._repr_html_() and "passed" in run._repr_html_()
    explanation = gpuworthy.explain("square", 1 << 20, on="nvidia-h100")
    assert "<td>" in explanation._repr_html_() and "H100" in explanation._repr_html_()
    assert "&lt;" in gpuworthy._plot.html_table(["a"], [["<script>"]]), "cells are escaped"


def test_a_sweep_reports_its_progress_to_a_callback():
    seen = []
    gpuworthy.sweep("square", sizes=[1 << 10, 1 << 12], backends=["cpu"], progress=lambda *a: seen.append(a))
    assert seen and seen[-1][0] > 0 and seen[-1][1] == seen[-1][0], seen[-3:]
    assert any(measuring for _, _, measuring in seen), "the step being measured is named"


def test_a_sweep_stops_on_ctrl_c_with_keyboard_interrupt():
    import _thread

    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        gpuworthy.sweep("square", backends=["cpu"], quick=False, budget_s=60, progress=False)
    assert time.monotonic() - started < 30
    timer.cancel()
    # The package still works after the interruption.
    assert gpuworthy.run("square", 1 << 10, backend="cpu", quick=True).passed


def test_an_exception_in_the_progress_callback_stops_the_sweep():
    def fail(planned, done, measuring):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        gpuworthy.sweep("square", sizes=[1 << 10], backends=["cpu"], progress=fail)


def test_an_expression_is_measured_swept_and_explained_like_a_workload():
    f = gpuworthy.expr("y = a*x + b")
    r = f.measure(1 << 14, backend="cpu", quick=True, a=2.0, b=1.0)
    assert isinstance(r, gpuworthy.RunResult) and r.passed and r.workload == "y = a*x + b"
    logs = gpuworthy.expr("y = log(x)").measure("2^12", backend="cpu", quick=True, ranges={"x": (0.5, 2.0)})
    assert logs.passed
    s = f.sweep(sizes=[1 << 10, 1 << 12], backends=["cpu"], progress=False, a=2.0, b=1.0)
    assert {row["size"] for row in s.rows} == {"1024", "4096"}
    e = f.explain(1 << 20, a=2.0, b=1.0)
    assert e.device and (e.predictions or e.uncalibrated)
    on = f.explain(1 << 26, on="nvidia-h100", a=2.0, b=1.0)
    assert any(p.is_gpu for p in on.predictions) and "H100" in on.on
    # A name without a value is an input array, generated like `x`, as the command line's `--set` leaves it.
    assert f.measure(1 << 10, backend="cpu", quick=True, a=2.0).passed
    with pytest.raises(ValueError) as e:
        f.measure(1 << 10, backend="cpu", a=2.0, b=1.0, z=3.0)
    assert "`z`" in str(e.value)
    with pytest.raises(TypeError):
        f.measure(1 << 10, backend="cpu", a="2", b=1.0)


def test_the_transfer_lessons_of_the_command_line():
    r = gpuworthy.run("square", 1 << 14, backend="cpu", quick=True, launches=4)
    assert r.launches["per_transfer"] == 4 and r.launches["per_kernel_s"] > 0
    for flag in ("pinned", "pipelined"):
        with pytest.raises(ValueError) as e:
            gpuworthy.run("square", 1 << 14, backend="cpu", **{flag: True})
        assert "CUDA" in str(e.value)
    with pytest.raises(ValueError):
        gpuworthy.run("square", 1 << 14, backend="cpu", launches=0)


def test_pinned_and_pipelined_runs_on_cuda():
    if not any(d.backend == "cuda" and d.available for d in gpuworthy.devices()):
        pytest.skip("no CUDA device here")
    pinned = gpuworthy.run("square", 1 << 20, backend="cuda", quick=True, pinned=True)
    pipelined = gpuworthy.run("square", 1 << 20, backend="cuda", quick=True, pipelined=True)
    assert pinned.passed and pipelined.passed
    assert np.isfinite(pipelined.end_to_end.median_s)
