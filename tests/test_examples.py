"""Every example script runs headless and writes its figure."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SCRIPTS = sorted(EXAMPLES.glob("plot_*.py"))


def test_there_are_examples():
    assert len(SCRIPTS) >= 4


@pytest.mark.parametrize("script", SCRIPTS, ids=[s.stem for s in SCRIPTS])
def test_example_runs(script, tmp_path):
    pytest.importorskip("matplotlib")
    env = {**os.environ, "SKDP_EXAMPLES_OUT": str(tmp_path), "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, script.name], cwd=EXAMPLES, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    figures = list(tmp_path.glob("*.png"))
    assert len(figures) == 1 and figures[0].stat().st_size > 10_000
