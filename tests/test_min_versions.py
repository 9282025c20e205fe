"""The declared minimum versions work: the suite passes against them.

``pyproject.toml`` promises numpy, scipy, scikit-learn and pandas from
certain versions on. ``.ci/min-versions.txt`` pins exactly those floors; this
test builds a virtual environment with them (once, cached under
``~/.cache/skdp``, keyed by the constraints and the test extras), installs
this checkout into it and runs the suite there, in a subprocess, in one
process (the main suite's other workers keep the cores busy). Left out
there, because they do not exercise these libraries' APIs beyond what the
quicker tests do and take long: the empirical audits, the examples, the docs
build and the tests marked ``slow`` (several seconds each: statistical runs,
the demo, subprocesses; all of them run in the main suite).

Suites running at once on one machine share that environment: a lock file
beside it lets one of them build it, install its checkout and run at a time
(the others wait), so none clears or re-installs it under another.

It needs the package index (as ``pip install -e ".[test]"`` does). Set
``SKDP_SKIP_MIN_VERSIONS=1`` to skip it explicitly, for example offline.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import subprocess
import sys
import venv
from pathlib import Path

import pytest

try:
    import fcntl
except ImportError:  # not POSIX: suites running at once may race on the environment
    fcntl = None

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / ".ci" / "min-versions.txt"
FLOORS = ("numpy", "scipy", "scikit-learn", "pandas")


def _pins() -> dict[str, str]:
    pins = {}
    for line in CONSTRAINTS.read_text().splitlines():
        m = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)==([0-9.]+)\s*", line)
        if m:
            pins[m.group(1).lower()] = m.group(2)
    return pins


def _floors() -> dict[str, str]:
    text = (ROOT / "pyproject.toml").read_text()
    deps = re.search(r"^dependencies = \[(.*?)\]", text, re.S | re.M).group(1)
    return {m.group(1).lower(): m.group(2)
            for m in re.finditer(r'"([A-Za-z0-9_.-]+)>=([0-9.]+)"', deps)}


def test_the_pins_are_the_declared_floors():
    pins, floors = _pins(), _floors()
    assert set(floors) == set(FLOORS)
    for name in FLOORS:
        # 1.24.4 pins the floor 1.24: the same minor release, its last patch.
        assert pins[name].split(".")[:2] == floors[name].split(".")[:2], name


def _environment_dir() -> Path:
    pyproject = (ROOT / "pyproject.toml").read_text()
    extras = re.search(r"^test = \[(.*?)\]", pyproject, re.S | re.M).group(1)
    key = hashlib.sha256((CONSTRAINTS.read_text() + extras + sys.version).encode()).hexdigest()
    home = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "skdp"
    return home / f"min-versions-{key[:12]}"


@contextlib.contextmanager
def _exclusive(env: Path):
    """Hold the lock file ``<env>.lock`` (released when it closes)."""
    env.parent.mkdir(parents=True, exist_ok=True)
    with open(env.with_name(env.name + ".lock"), "w") as handle:
        if fcntl is not None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _environment(env: Path) -> Path:
    python = env / "bin" / "python"
    if not (env / "ready").exists():
        venv.create(env, with_pip=True, clear=True)
        subprocess.run([python, "-m", "pip", "install", "-q", "-c", CONSTRAINTS,
                        "setuptools>=77", f"{ROOT}[test]"], check=True)
        (env / "ready").write_text("ok\n")
    return python


@pytest.mark.skipif(os.environ.get("SKDP_SKIP_MIN_VERSIONS") == "1",
                    reason="SKDP_SKIP_MIN_VERSIONS=1")
def test_the_suite_passes_at_the_minimum_versions():
    env = _environment_dir()
    with _exclusive(env):
        _run_at_the_floors(_environment(env))


def _run_at_the_floors(python: Path) -> None:
    # This checkout, not whatever the cached environment last installed.
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "-e", ROOT], check=True)
    versions = subprocess.run(
        [python, "-c", "import numpy, scipy, sklearn, pandas; print(numpy.__version__, "
         "scipy.__version__, sklearn.__version__, pandas.__version__)"],
        capture_output=True, text=True, check=True).stdout.split()
    assert versions == [_pins()[name] for name in FLOORS]
    proc = subprocess.run(
        [python, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "--no-header", "-n", "0",
         "-m", "not benchmark and not slow",
         # The user guide's printed outputs follow the newest numpy's scalar repr.
         "--ignore=tests/audit", "--ignore=tests/test_examples.py", "--ignore=docs",
         "--ignore=tests/test_min_versions.py",
         "--deselect=tests/test_docs.py::test_docs_build_without_warnings"],
        cwd=ROOT, capture_output=True, text=True)
    tail = "\n".join(proc.stdout.splitlines()[-30:])
    assert proc.returncode == 0, f"the suite fails at the minimum versions:\n{tail}"
