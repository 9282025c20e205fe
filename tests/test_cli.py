import json
import subprocess
import sys

import numpy as np
import pandas as pd
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


def test_demo_runs_every_estimator_and_reports(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    for name in ("DPLinearRegressionGD", "DPSGDRegressor", "AdaSSPRegressor",
                 "DPAMBSSGDRegressor", "DPSGDClassifier", "StreamingMomentEstimator",
                 "PrivateGaussianDensity", "Exact accounting", "Budget ledger", "[0.025"):
        assert name in out, name


def test_demo_writes_plots(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert main(["demo", "--plots", str(tmp_path)]) == 0
    for name in ("coefficients.png", "continual_release.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_demo_without_matplotlib_says_so(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails
    assert main(["demo", "--plots", str(tmp_path)]) == 2
    assert "needs matplotlib" in capsys.readouterr().err


# -- skdp regress ----------------------------------------------------------------

@pytest.fixture
def csv_file(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 2))
    y = X @ [1.0, -0.5] + 0.2 + 0.1 * rng.normal(size=3000)
    path = tmp_path / "data.csv"
    pd.DataFrame({"age": X[:, 0], "dose": X[:, 1], "city": "x", "outcome": y}).to_csv(
        path, index=False)
    return path


def test_regress_prints_a_summary(csv_file, capsys):
    args = [str(csv_file), "--target", "outcome", "--features", "age,dose", "--random-state", "0"]
    assert main(["regress", *args]) == 0
    out = capsys.readouterr().out
    assert "std err" in out and "[0.025" in out and "Privacy spent: epsilon = 1" in out
    assert main(["regress", *args, "--json", "--alpha", "0.1", "--epsilon", "2"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["coefficients"]) == {"age", "dose", "intercept"}
    assert report["privacy_spent"]["epsilon"] == pytest.approx(2.0)
    age = report["coefficients"]["age"]
    assert age["ci_low"] < age["coef"] < age["ci_high"]
    assert abs(age["coef"] - 1.0) < 0.2


@pytest.mark.parametrize("extra, match", [
    (["--target", "outcome", "--features", "age,dose"], "no such file"),
    (["--target", "income"], "column(s) not in"),
    (["--target", "outcome"], "non-numeric column(s): city"),
    (["--target", "outcome", "--features", "age,dose", "--epsilon", "-1"], "--epsilon"),
    (["--target", "outcome", "--features", "age,dose", "--delta", "2"], "--delta"),
])
def test_regress_user_mistakes_are_one_line_errors(csv_file, capsys, extra, match):
    path = str(csv_file) + ".missing" if match == "no such file" else str(csv_file)
    assert main(["regress", path, *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert match in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_regress_missing_values_are_a_clear_error(tmp_path, capsys):
    path = tmp_path / "nan.csv"
    path.write_text("a,b\n1,2\n,3\n4,5\n")
    assert main(["regress", str(path), "--target", "b"]) == 2
    assert "missing values" in capsys.readouterr().err


def test_regress_exit_code_from_a_shell(csv_file):
    proc = subprocess.run([sys.executable, "-m", "skdp", "regress", str(csv_file), "--target",
                           "nope"], capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


def test_module_entry_point():
    proc = subprocess.run([sys.executable, "-m", "skdp", "--version"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0
    assert skdp.__version__ in proc.stdout
