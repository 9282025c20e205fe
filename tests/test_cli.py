import io
import json
import os
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
    assert main([]) == 2  # plain `skdp`: usage on stderr, exit code 2
    err = capsys.readouterr().err
    assert "usage: skdp" in err and "demo or regress" in err


@pytest.mark.slow
def test_demo_runs_every_estimator_and_reports(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    for name in ("DPLinearRegressionGD", "DPSGDRegressor", "AdaSSPRegressor",
                 "DPAMBSSGDRegressor", "DPSGDClassifier", "StreamingMomentEstimator",
                 "PrivateGaussianDensity", "Exact accounting", "Budget ledger", "[0.025"):
        assert name in out, name


@pytest.mark.slow
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
    assert "P>|t|" in out
    assert main(["regress", *args, "--json", "--alpha", "0.1", "--epsilon", "2"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["coefficients"]) == {"age", "dose", "intercept"}
    assert report["privacy_spent"]["epsilon"] == pytest.approx(2.0)
    age = report["coefficients"]["age"]
    assert age["ci_low"] < age["coef"] < age["ci_high"]
    assert abs(age["coef"] - 1.0) < 0.2
    assert report["privacy_spent"]["notion"] == "GDP"


def test_regress_says_when_its_guarantee_is_zcdp(csv_file, capsys):
    # Secure mode's guarantee is rho = mu**2 / 2 zCDP; the output printed "mu = 0.22", which
    # read as a GDP mu claims more (epsilon 0.93 instead of 1; session 19 review).
    from skdp.mechanisms import secure_mode

    args = [str(csv_file), "--target", "outcome", "--features", "age,dose"]
    with secure_mode():
        assert main(["regress", *args]) == 0
        out = capsys.readouterr().out
        assert main(["regress", *args, "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
    assert "zCDP, secure mode" in out and "GDP)" not in out
    spent = report["privacy_spent"]
    assert spent["notion"] == "zCDP" and spent["rho"] == pytest.approx(spent["mu"] ** 2 / 2)


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


@pytest.fixture
def bounded(tmp_path):
    """A CSV on a large scale and its data dictionary (bounds known in advance)."""
    rng = np.random.default_rng(1)
    n = 5000
    age = rng.uniform(20, 80, n)
    dose = rng.uniform(0, 500, n)
    y = 100 + 2.0 * age - 0.1 * dose + rng.normal(0, 5, n)
    data = tmp_path / "data.csv"
    pd.DataFrame({"age": age, "dose": dose, "y": y}).to_csv(data, index=False)
    bounds = tmp_path / "bounds.csv"
    pd.DataFrame({"column": ["age", "dose", "y"], "lower": [18, 0, 0],
                  "upper": [90, 500, 400]}).to_csv(bounds, index=False)
    return data, bounds


def test_regress_with_bounds_reports_the_original_scale(bounded, capsys):
    data, bounds = bounded
    args = ["regress", str(data), "--target", "y", "--bounds", str(bounds), "--epsilon", "5",
            "--random-state", "0", "--json"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    coef = report["coefficients"]
    # epsilon 5, n 5000: the private slopes are within a few hundredths of 2 and -0.1
    # (the OLS standard errors are 0.007 and 0.001; the DP noise is of that order).
    assert coef["age"]["coef"] == pytest.approx(2.0, abs=0.1)
    assert coef["dose"]["coef"] == pytest.approx(-0.1, abs=0.02)
    assert coef["intercept"]["coef"] == pytest.approx(100.0, abs=8.0)
    assert "gradient_descent" in report["privacy_shares"]
    assert main(args[:-1] + ["--population", "--no-intercept", "--n-iter", "60",
                             "--learning-rate", "0.5"]) == 0
    out = capsys.readouterr().out
    assert "population" in out and "intercept" not in out.split("Privacy")[0].split("\n", 2)[2]


def test_regress_reads_standard_input_and_another_separator(bounded, monkeypatch, capsys):
    data, bounds = bounded
    text = pd.read_csv(data).to_csv(index=False, sep=";")
    monkeypatch.setattr(sys, "stdin", io.StringIO(text))
    bounds_semi = bounds.with_suffix(".semi.csv")
    pd.read_csv(bounds).to_csv(bounds_semi, index=False, sep=";")
    assert main(["regress", "-", "--target", "y", "--sep", ";", "--bounds", str(bounds_semi),
                 "--random-state", "0"]) == 0
    assert "age" in capsys.readouterr().out


def test_regress_independent_runs_with_defaults(csv_file, capsys):
    assert main(["regress", str(csv_file), "--target", "outcome", "--features", "age,dose",
                 "--ci-method", "independent_runs", "--random-state", "0"]) == 0


@pytest.mark.parametrize("content, extra, match", [
    ("a,b,y\n", [], "has a header but no rows"),
    ("", [], "is empty"),
    ("a,b,y\n1,2,3\n4,5,6\n", ["--features", "a,y"], "also listed in --features"),
    ("a,b,y\n1,2,3\n4,5,6\n", ["--features", "a,a"], "more than once"),
    ("a,b,y\n1,2,3\n", [], "minimum of 2"),
    ("a,b,y\n1,2,3\n4,5,6\n", ["--epsilon", "abc"], "invalid float value: 'abc'"),
    ("a,b,y\n1,2,3\n4,5,6\n", ["--n-iter", "0"], "--n-iter"),
    ("a,b,y\n1,2,3\n4,5,6\n", ["--bounds", "BOUNDS"], "no bounds for: y"),
])
def test_regress_more_user_mistakes(tmp_path, capsys, content, extra, match):
    path = tmp_path / "d.csv"
    path.write_text(content)
    (tmp_path / "b.csv").write_text("column,lower,upper\na,0,10\nb,0,10\n")
    extra = [str(tmp_path / "b.csv") if e == "BOUNDS" else e for e in extra]
    try:
        code = main(["regress", str(path), "--target", "y", *extra])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert match in err and len(err.splitlines()) == 1, err


# -- issue 24: the rough edges of skdp regress ------------------------------------

def _bounds(tmp_path, text):
    path = tmp_path / "bounds.csv"
    path.write_text(text)
    return str(path)


def _one_line_error(capsys):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


GOOD_BOUNDS = "column,lower,upper\nage,-5,5\ndose,-5,5\noutcome,-10,10\n"


def test_a_bounds_row_for_a_column_the_data_lacks_is_an_error(csv_file, tmp_path, capsys):
    bounds = _bounds(tmp_path, GOOD_BOUNDS + "bogus,0,1\n")
    args = ["regress", str(csv_file), "--target", "outcome", "--features", "age,dose",
            "--bounds", bounds]
    assert main(args) == 2
    err = _one_line_error(capsys)
    assert "bogus" in err and "bounds.csv" in err and "it has 4 columns" in err
    assert "dose" not in err  # the data file's names are never listed (see below)
    # A row for a column of the data that is not used is fine (a data dictionary).
    assert main(args[:-1] + [_bounds(tmp_path, GOOD_BOUNDS + "city,0,1\n"),
                             "--random-state", "0"]) == 0


def test_inverted_bounds_name_the_column_and_the_file(csv_file, tmp_path, capsys):
    bounds = _bounds(tmp_path, "column,lower,upper\nage,5,-5\ndose,-5,5\noutcome,-10,10\n")
    assert main(["regress", str(csv_file), "--target", "outcome", "--features", "age,dose",
                 "--bounds", bounds]) == 2
    err = _one_line_error(capsys)
    assert "bounds.csv" in err and "age" in err and "feature(s) [0]" not in err
    assert "bounds_X" not in err


def test_too_few_rows_advice_speaks_in_flags(tmp_path, capsys):
    rng = np.random.default_rng(0)
    path = tmp_path / "small.csv"
    pd.DataFrame({"a": rng.normal(size=60), "y": rng.normal(size=60)}).to_csv(path, index=False)
    assert main(["regress", str(path), "--target", "y"]) == 2
    err = _one_line_error(capsys)
    assert "--bounds" in err and "--clip-norm" in err
    assert "bounds_X" not in err and "clip_norm" not in err.replace("--clip-norm", "")


@pytest.mark.slow
def test_a_closed_pipe_ends_quietly(csv_file):
    # As ``skdp regress ... --json | head -c 100`` when head has exited: the
    # read end of stdout's pipe is closed before the report is written.
    import os

    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([sys.executable, "-m", "skdp", "regress", str(csv_file), "--target",
                               "outcome", "--features", "age,dose", "--random-state", "0",
                               "--json"], stdout=write, stderr=subprocess.PIPE, text=True,
                              timeout=120)
    finally:
        os.close(write)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr
    assert proc.returncode == 1


def test_a_wrong_separator_suggests_sep(tmp_path, capsys):
    path = tmp_path / "cps.csv"
    path.write_text("education;experience;wage\n12;3;9.5\n16;1;11.0\n")
    assert main(["regress", str(path), "--target", "wage"]) == 2
    err = _one_line_error(capsys)
    assert "--sep ';'" in err


def test_infinity_names_the_column(tmp_path, capsys):
    path = tmp_path / "inf.csv"
    path.write_text("a,b,y\n1,2,3\ninf,3,4\n4,5,6\n")
    assert main(["regress", str(path), "--target", "y"]) == 2
    err = _one_line_error(capsys)
    assert "infinity" in err and ": a;" in err
    path.write_text("a,b,y\n1,2,3\n2,,4\n4,5,6\n")
    assert main(["regress", str(path), "--target", "y"]) == 2
    assert "missing values in column(s): b" in _one_line_error(capsys)


def test_a_repeated_column_name_is_an_error_that_names_no_value(tmp_path, capsys):
    # Session 23's trial: pandas renamed a second 'x' to 'x.1', and the columns a
    # --features list meant were silently others. A headerless file whose first row
    # repeats a value ('1.5') looks the same, so the error shows no names.
    for text in ("x,y,x\n1,2,3\n4,5,6\n", "1.5,2,1.5\n1,2,3\n4,5,6\n"):
        path = tmp_path / "dup.csv"
        path.write_text(text)
        assert main(["regress", str(path), "--target", "y"]) == 2
        err = _one_line_error(capsys)
        assert "repeats a column name" in err and "1.5" not in err
    # Read as pandas reads it: compressed, with a byte-order mark, after a blank line;
    # empty names (trailing commas) are pandas' 'Unnamed' columns, not repeats.
    import gzip
    gz = tmp_path / "dup.csv.gz"
    gz.write_bytes(gzip.compress(b"x,y,x\n1,2,3\n4,5,6\n"))
    bom = tmp_path / "bom.csv"
    bom.write_bytes("\ufeffx,y,x\n1,2,3\n4,5,6\n".encode("utf-8"))
    blank = tmp_path / "blank.csv"
    blank.write_text("\nx,y,x\n1,2,3\n4,5,6\n")
    for path in (gz, bom, blank):
        assert main(["regress", str(path), "--target", "y"]) == 2
        assert "repeats a column name" in _one_line_error(capsys)
    trailing = tmp_path / "trailing.csv"
    trailing.write_text("a,y,,\n1,2,,\n4,5,,\n")
    main(["regress", str(trailing), "--target", "y"])
    assert "repeats" not in capsys.readouterr().err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_pipe_and_a_non_utf8_standard_input_are_read_once(tmp_path, monkeypatch, capsys):
    # The header is read before the table: a named pipe (or a shell's <(...)) would
    # be consumed by that first read (the second review of session 24), so it is
    # read into memory once; standard input as bytes, decoded strictly.
    import threading
    fifo = tmp_path / "data.csv"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text("a,y,a\n1,2,3\n"))
    writer.start()
    assert main(["regress", str(fifo), "--target", "y"]) == 2
    writer.join()
    assert "repeats a column name" in _one_line_error(capsys)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO("\xe9ge,y\n1,2\n".encode(
        "latin-1"))))
    assert main(["regress", "-", "--target", "y"]) == 2
    assert "not UTF-8 text" in _one_line_error(capsys)


def test_errors_never_print_a_row_read_as_a_header_or_a_byte_of_the_data(tmp_path, capsys):
    # Without a header row the first data row becomes the column names; listing
    # them printed a private row. A file that is not UTF-8 printed its byte. The
    # names were once hidden only when a field read as a number, which a row of
    # text (a name, a date, a yes) passed: the error printed it (a ninth review).
    rows = tmp_path / "nohdr.csv"
    rows.write_text("63.2,1.51,120.5\n45.1,1.72,98.0\n51.0,1.60,110.2\n")
    semi = tmp_path / "semi.csv"
    semi.write_text("63.2;1.51;120.5\n45.1;1.72;98.0\n")
    text = tmp_path / "text.csv"
    text.write_text("Smith,F,2021-03-04,yes\nJones,M,2020-01-02,no\n")
    latin = tmp_path / "latin.csv"
    latin.write_bytes("\xe9ge,y\n1,2\n".encode("latin-1"))
    for path, expected in ((rows, "names are not shown"), (semi, "names are not shown"),
                           (text, "names are not shown"), (latin, "UTF-8")):
        assert main(["regress", str(path), "--target", "y"]) == 2
        err = _one_line_error(capsys)
        assert expected in err and "63.2" not in err and "120.5" not in err
        assert "0xe9" not in err and "Smith" not in err and "2021" not in err


@pytest.mark.parametrize("extra, expected", [
    (["--n-iter", "5"], "--n-iter leaves 5 iterates after the burn-in, too few for 10 batches; "
                        "raise --n-iter."),
    (["--n-iter", "5", "--ci-method", "independent_runs"],
     "--ci-method independent_runs gives each of the n_batches=10 runs --n-iter / n_batches = 0 "
     "steps, which must exceed the burn-in of"),
])
def test_a_short_run_is_explained_in_the_command_s_terms(tmp_path, capsys, extra, expected):
    # A new user's trial (session 23): the message read "--n-iter - more steps (--n-iter) = 5
    # iterates ... or lower more steps (--n-iter)": the flags were substituted into the
    # Python parameters' names, and the command has no burn-in flag.
    rng = np.random.default_rng(0)
    path = tmp_path / "d.csv"
    pd.DataFrame({"a": rng.normal(size=200), "y": rng.normal(size=200)}).to_csv(path, index=False)
    bounds = _bounds(tmp_path, "column,lower,upper\na,-5,5\ny,-5,5\n")
    assert main(["regress", str(path), "--target", "y", "--bounds", bounds, *extra]) == 2
    err = _one_line_error(capsys)
    assert expected in err and "more steps" not in err, err


def test_too_few_rows_with_bounds_asks_only_for_the_clip_norm(tmp_path, capsys):
    # A second new user's trial (session 23): a 4-row file with --bounds failed with
    # "declare --bounds (...) and --clip-norm", although --bounds was declared.
    path = tmp_path / "d.csv"
    path.write_text("a,y\n1,2\n2,3\n3,5\n4,4\n")
    bounds = _bounds(tmp_path, "column,lower,upper\na,0,5\ny,0,6\n")
    assert main(["regress", str(path), "--target", "y", "--bounds", bounds]) == 2
    err = _one_line_error(capsys)
    assert "declare --clip-norm" in err and "--bounds" not in err, err


def test_the_fit_s_warnings_are_given_in_the_command_s_terms(tmp_path, capsys):
    # A second new user's trial (session 23): warnings on raw columns said
    # "DPStandardScaler in a Pipeline, or declare bounds_X and bounds_y", which a
    # command-line user cannot act on.
    rng = np.random.default_rng(0)
    n = 4000
    year = rng.integers(1976, 1983, n).astype(float)
    frame = pd.DataFrame({"year": year, "y": 0.1 * (year - 1979) + rng.normal(size=n)})
    path = tmp_path / "d.csv"
    frame.to_csv(path, index=False)
    assert main(["regress", str(path), "--target", "y", "--epsilon", "10"]) == 0
    out = capsys.readouterr().out
    assert "lie far from 0" in out and "declare --bounds" in out, out
    assert "bounds_X" not in out and "Pipeline" not in out, out
