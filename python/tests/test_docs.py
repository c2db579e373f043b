"""The guide's Python page (docs/python.md) runs as written: its examples in order, in one interpreter, as a reader
pastes them into a notebook, and they type-check under ``mypy --strict``. A block that needs CuPy on a GPU runs
where CuPy and a CUDA device are present (GPUWORTHY_REQUIRE=cuda makes their absence a failure).

So do the chapters' Python commands: each block of a numbered chapter (or of the concepts chapter) whose first line is
``import gpuworthy`` runs on its own where its backend is present (one that asks for CUDA, pinned or pipelined
transfers needs a CUDA device), and every one type-checks."""

import importlib.util
import os
import pathlib
import re
import subprocess
import sys
import textwrap

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


DOCS = PAGE.parent
CHAPTERS = sorted(DOCS.glob("[0-9][0-9]-*.md")) + [DOCS / "numbers-that-decide.md"]
# Fewer than this and the chapters have lost their Python path (or the pattern below no longer finds it).
AT_LEAST = 10


def chapter_commands():
    """Each chapter's Python commands, as (chapter, index, block): the blocks whose first line is `import gpuworthy`,
    those of an exercise (indented under its number) included, dedented."""
    found = []
    for path in CHAPTERS:
        pattern = r"^( *)```python\n(\1import gpuworthy\n.*?)^\1```"
        blocks = re.findall(pattern, path.read_text(encoding="utf-8"), flags=re.S | re.M)
        found += [(path.name, i, textwrap.dedent(block)) for i, (_, block) in enumerate(blocks)]
    return found


def needs_cuda(block):
    """Whether a command asks for CUDA: a `cuda` backend or device, or a transfer mode only CUDA has."""
    return re.search(r"""(backend|device)=["']cuda|pinned=True|pipelined=True""", block) is not None


COMMANDS = chapter_commands()


def test_the_chapters_have_python_commands():
    assert len(COMMANDS) >= AT_LEAST, [c for c, _, _ in COMMANDS]


@pytest.mark.parametrize("chapter, index, block", COMMANDS, ids=[f"{c}:{i}" for c, i, _ in COMMANDS])
def test_a_chapters_python_command_runs(chapter, index, block, tmp_path):
    if needs_cuda(block) and not HAS_CUDA:
        if REQUIRED:
            pytest.fail(f"GPUWORTHY_REQUIRE names cuda, but {chapter}'s command {index} cannot run here")
        pytest.skip(f"{chapter}'s command {index} needs a CUDA device")
    script = tmp_path / "command.py"
    script.write_text(block, encoding="utf-8")
    env = dict(os.environ, MPLBACKEND="Agg", GPUWORTHY_CALIBRATION=str(tmp_path / "calibration.json"))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, f"{chapter}, command {index}:\n{block}\n" + done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.strip(), f"{chapter}'s command {index} printed nothing"


def test_the_chapters_python_commands_type_check(tmp_path):
    mypy = pytest.importorskip("mypy.api")
    script = tmp_path / "commands.py"
    # Each block in a function of its own, so that two chapters may use one name for different things.
    functions = []
    for n, (chapter, index, block) in enumerate(COMMANDS):
        body = "\n".join("    " + line if line.strip() else "" for line in block.splitlines())
        functions.append(f"# {chapter}, command {index}\ndef command_{n}() -> None:\n{body}\n")
    script.write_text("\n\n".join(functions), encoding="utf-8")
    config = TESTS.parent / "pyproject.toml"
    out, err, status = mypy.run(["--strict", "--config-file", str(config), "--no-incremental",
                                 "--follow-imports=silent", str(script)])
    assert status == 0, out + err
