"""The guide's Python page (docs/python.md) runs as written: its examples in order, in one interpreter, as a reader
pastes them into a notebook, and they type-check under ``mypy --strict``. A block that needs CuPy on a GPU runs
where CuPy and a CUDA device are present (GPUWORTHY_REQUIRE=cuda makes their absence a failure)."""

import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

import gpuworthy

PAGE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"
TESTS = pathlib.Path(__file__).resolve().parent
# Names the page uses from elsewhere: the raw kernel's sources live in test_raw_kernel.py, as the page says.
PREAMBLE = "import gpuworthy\nimport numpy as np\nfrom test_raw_kernel import SQUARE_CUDA, SQUARE_WGSL\n"
HAS_CUDA = any(d.backend == "cuda" and d.available for d in gpuworthy.devices())
REQUIRED = "cuda" in os.environ.get("GPUWORTHY_REQUIRE", "").split(",")


def examples():
    """The page's Python blocks, in order; those that need CuPy on a GPU left out where it cannot run."""
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    assert blocks, f"no Python example found in {PAGE}"
    can_cupy = HAS_CUDA and importlib.util.find_spec("cupy") is not None
    if REQUIRED and not can_cupy:
        pytest.fail("GPUWORTHY_REQUIRE names cuda, but CuPy on a CUDA device is not usable here")
    return [b for b in blocks if can_cupy or "import cupy" not in b]


def test_the_python_pages_examples_run_in_order(tmp_path):
    script = tmp_path / "page.py"
    script.write_text(PREAMBLE + "\n".join(examples()), encoding="utf-8")
    env = dict(os.environ, MPLBACKEND="Agg", GPUWORTHY_CALIBRATION=str(tmp_path / "calibration.json"),
               PYTHONPATH=os.pathsep.join([str(TESTS), *filter(None, [os.environ.get("PYTHONPATH")])]))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert (tmp_path / "square.png").stat().st_size > 10_000, "the sweep's chart was drawn"


def test_the_python_pages_examples_type_check(tmp_path):
    mypy = pytest.importorskip("mypy.api")
    script = tmp_path / "page.py"
    # Every block, CuPy's included: type-checking needs no GPU.
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S)
    declared = 'import gpuworthy\nimport numpy as np\nSQUARE_CUDA = SQUARE_WGSL = ""\n'
    script.write_text(declared + "\n".join(blocks), encoding="utf-8")
    config = TESTS.parent / "pyproject.toml"
    out, err, status = mypy.run(["--strict", "--config-file", str(config), "--no-incremental",
                                 "--follow-imports=silent", str(script)])
    assert status == 0, out + err
