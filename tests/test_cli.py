import subprocess
import sys

import pytest

import skdp
from skdp.cli import main


def test_version_and_help(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert skdp.__version__ in capsys.readouterr().out
    assert main([]) == 0
    assert "demo" in capsys.readouterr().out


def test_demo_runs_and_reports(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "Exact accounting" in out
    assert "Budget ledger" in out


def test_module_entry_point():
    proc = subprocess.run([sys.executable, "-m", "skdp", "--version"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0
    assert skdp.__version__ in proc.stdout
