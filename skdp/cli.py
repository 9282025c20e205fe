"""The ``skdp`` command: ``skdp demo`` and ``skdp regress FILE.csv --target COLUMN [--bounds B.csv]``."""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys

import skdp

__all__ = ["main"]

EXIT_USAGE = 2  # user mistakes: bad file, column, data or parameters
# Separators a one-column header may hide, as a shell would take them after --sep.
_SEPARATORS = {";": "';'", "\t": "$'\\t' (a tab)", "|": "'|'", ",": "','"}


class UserError(Exception):
    """A mistake in the command's input, reported in one line with exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (``skdp regress: error: ...``) and exit code 2."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _demo(args: argparse.Namespace) -> int:
    from skdp._demo import run_demo

    return run_demo(random_state=args.random_state, plots=args.plots)


def _read_csv(path: str, sep: str):
    import pandas as pd

    name = "standard input" if path == "-" else path
    try:
        # Standard input, pipes and process substitutions are read once, into memory,
        # so that the header can be read before the table (as bytes: pandas decodes
        # them as UTF-8, strictly).
        if path == "-":
            buffer = getattr(sys.stdin, "buffer", None)
            source = io.BytesIO(buffer.read()) if buffer else io.StringIO(sys.stdin.read())
        elif os.path.exists(path) and not (os.path.isfile(path) or os.path.isdir(path)):
            with open(path, "rb") as stream:
                source = io.BytesIO(stream.read())
        else:
            source = path
        # The header as pandas reads it (compression, a byte-order mark, blank lines),
        # before pandas renames a repeated name to name.1: the columns a --features
        # list meant would silently be other ones. Empty names are pandas' 'Unnamed'.
        header = pd.read_csv(source, sep=sep, header=None, nrows=1, dtype=str,
                             keep_default_na=False).iloc[0].tolist()
        if not isinstance(source, str):
            source.seek(0)
        names = [h for h in header if h != ""]
        if len(set(names)) < len(names):  # no name shown: without a header row it is data
            raise UserError(f"{name}: its first row repeats a column name (not shown: "
                            "without a header row that row is data); give every column "
                            "its own name")
        frame = pd.read_csv(source, sep=sep)
    except FileNotFoundError:
        raise UserError(f"no such file: {path}") from None
    except pd.errors.EmptyDataError:
        raise UserError(f"{name} is empty (no header row)") from None
    except UnicodeError:  # its message quotes the offending byte of the data
        raise UserError(f"cannot read {name} as CSV: it is not UTF-8 text") from None
    except pd.errors.ParserError as exc:  # line numbers and field counts, no values
        raise UserError(f"cannot read {name} as CSV: {str(exc).splitlines()[0]}") from None
    except (OSError, ValueError) as exc:  # the message could quote the data: its kind only
        raise UserError(f"cannot read {name} as CSV ({type(exc).__name__})") from None
    return frame, name


def _columns_text(columns) -> str:
    """What an error message says about the file's columns: their number, never their names.

    A CSV without a header row has its first data row read as the column names,
    and no test tells a header from such a row (``Smith,F,2021-03-04,yes`` reads
    like one): printing the names could print a private row.
    """
    return (f"it has {len(columns)} columns; their names are not shown, since a file "
            "without a header row would show its first row: check the names against "
            "the file's header")


def _read_table(path: str, target: str, features: str | None, sep: str = ","):
    import numpy as np
    import pandas as pd

    frame, name = _read_csv(path, sep)
    if features:
        columns = [c.strip() for c in features.split(",")]
        if target in columns:
            raise UserError(f"the target {target!r} is also listed in --features")
        dup = sorted({c for c in columns if columns.count(c) > 1})
        if dup:
            raise UserError(f"--features lists column(s) more than once: {', '.join(dup)}")
    else:
        columns = [c for c in frame.columns if c != target]
    missing = [c for c in [target, *columns] if c not in frame.columns]
    if missing:
        hint = ""
        if len(frame.columns) == 1:  # the header read as one column: another separator?
            header = str(frame.columns[0])
            guess = next((shown for char, shown in _SEPARATORS.items()
                          if char != sep and char in header), None)
            if guess:
                hint = f"; the header was read as one column: try --sep {guess}"
        raise UserError(f"column(s) not in {name}: {', '.join(map(str, missing))} "
                        f"({_columns_text(frame.columns)}){hint}")
    if not columns:
        raise UserError(f"{name} has no feature columns besides the target {target!r}")
    if len(frame) == 0:
        raise UserError(f"{name} has a header but no rows")
    bad = [c for c in [*columns, target] if not pd.api.types.is_numeric_dtype(frame[c])]
    if bad:
        raise UserError(f"non-numeric column(s): {', '.join(map(str, bad))}; skdp regress "
                        "needs numbers (encode categories first, or leave them out with "
                        "--features)")
    used = frame[[*columns, target]]
    nan = [str(c) for c in used.columns if used[c].isna().any()]
    if nan:
        raise UserError(f"the data has missing values in column(s): {', '.join(nan)}; drop or "
                        "impute them first (with rules that do not look at the private values)")
    inf = [str(c) for c in used.columns if np.isinf(used[c].to_numpy(dtype=float)).any()]
    if inf:
        raise UserError(f"column(s) contain infinity: {', '.join(inf)}; the private data must "
                        "be finite (cap or drop such values with rules that do not look at the "
                        "data)")
    return frame[columns], frame[target], list(frame.columns), name


def _read_bounds(path: str, columns: list, target: str, sep: str, data_columns: list,
                 data_name: str):
    """bounds.csv: columns ``column,lower,upper``, one row per used column (target included).

    Rows for other columns of the data are allowed (a data dictionary may
    list them all); rows for columns the data does not have are an error.
    """
    import pandas as pd

    frame, name = _read_csv(path, sep)
    need = {"column", "lower", "upper"}
    if not need <= set(frame.columns):
        raise UserError(f"{name} must have the columns column,lower,upper "
                        f"(it has: {', '.join(map(str, frame.columns))})")
    frame["column"] = frame["column"].astype(str).str.strip()
    if frame["column"].duplicated().any():
        dup = sorted(set(frame.loc[frame["column"].duplicated(), "column"]))
        raise UserError(f"{name} lists column(s) more than once: {', '.join(dup)}")
    for c in ("lower", "upper"):
        if not pd.api.types.is_numeric_dtype(frame[c]) or frame[c].isna().any():
            raise UserError(f"{name}: every {c} bound must be a number")
    table = frame.set_index("column")
    unknown = [c for c in table.index if c not in set(map(str, data_columns))]
    if unknown:
        raise UserError(f"{name} has bounds for column(s) not in {data_name}: "
                        f"{', '.join(unknown)} ({_columns_text(data_columns)})")
    missing = [c for c in [*map(str, columns), str(target)] if c not in table.index]
    if missing:
        raise UserError(f"{name} has no bounds for: {', '.join(missing)}")
    used = table.loc[[*map(str, columns), str(target)]]
    inverted = [str(c) for c, row in used.iterrows() if not row["lower"] < row["upper"]]
    if inverted:
        raise UserError(f"{name}: the lower bound must be below the upper bound for column(s): "
                        f"{', '.join(inverted)}")
    lower = table.loc[[str(c) for c in columns], "lower"].to_numpy(float)
    upper = table.loc[[str(c) for c in columns], "upper"].to_numpy(float)
    return (lower, upper), (float(table.loc[str(target), "lower"]),
                            float(table.loc[str(target), "upper"]))


def _regress(args: argparse.Namespace) -> int:
    import warnings

    from sklearn.utils._param_validation import InvalidParameterError

    from skdp.linear_model import DPLinearRegressionGD

    X, y, data_columns, data_name = _read_table(args.file, args.target, args.features,
                                                args.sep)
    if not 0.0 < args.alpha < 1.0:
        raise UserError(f"--alpha must be in (0, 1), got {args.alpha}")
    bounds_x = bounds_y = None
    if args.bounds is not None:
        if args.bounds == "-" and args.file == "-":
            raise UserError("the data and the bounds cannot both come from standard input")
        bounds_x, bounds_y = _read_bounds(args.bounds, list(X.columns), args.target, args.sep,
                                          data_columns, data_name)
    reg = DPLinearRegressionGD(epsilon=args.epsilon, delta=args.delta, clip_norm=args.clip_norm,
                               ci_method=args.ci_method, bounds_X=bounds_x, bounds_y=bounds_y,
                               n_iter=args.n_iter, learning_rate=args.learning_rate,
                               fit_intercept=not args.no_intercept,
                               random_state=args.random_state)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            reg.fit(X, y)
    except InvalidParameterError as exc:
        message = str(exc)
        for param in ("epsilon", "delta", "clip_norm", "n_iter", "learning_rate"):
            message = message.replace(f"The '{param}' parameter of DPLinearRegressionGD",
                                      "--" + param.replace("_", "-"))
        raise UserError(message) from None
    except (ValueError, FloatingPointError) as exc:
        raise UserError(_cli_words(str(exc).splitlines()[0])) from None
    target = "population" if args.population else "empirical"
    table = reg.summary(alpha=args.alpha, target=target)
    spent = reg.privacy_spent_
    notes = [_cli_words(str(w.message).splitlines()[0]) for w in caught]
    if args.json:
        print(json.dumps({
            "target": args.target, "n_samples": int(X.shape[0]), "ci_method": args.ci_method,
            "alpha": args.alpha, "interval_target": target,
            "coefficients": {str(name): {"coef": float(row["coef"]),
                                         "std_err": float(row["std err"]),
                                         "t": float(row["t"]), "p_value": float(row["P>|t|"]),
                                         "ci_low": float(row.iloc[4]),
                                         "ci_high": float(row.iloc[5])}
                             for name, row in table.iterrows()},
            "privacy_spent": {"epsilon": spent.epsilon, "delta": spent.delta, "mu": spent.mu,
                              "notion": spent.notion, "rho": spent.rho},
            "privacy_shares": reg.privacy_shares_, "notes": table.attrs["notes"],
            "warnings": notes,
        }, indent=2))
        return 0
    import pandas as pd

    print(f"DPLinearRegressionGD: {args.target} ~ {' + '.join(map(str, X.columns))}")
    scale = "original scale (declared bounds)" if args.bounds else "the data's own scale"
    what = ("the population parameter (HC1 sandwich)" if args.population
            else "the least-squares solution of this data")
    print(f"n = {X.shape[0]}, ci_method = {args.ci_method}, steps = {reg.n_iter_}, "
          f"{100 * (1 - args.alpha):g}% intervals for {what}, on {scale}")
    with pd.option_context("display.float_format", "{:10.4f}".format, "display.width", 120):
        print(table.to_string())
    # In secure mode the guarantee is zCDP (rho = mu**2 / 2), not mu-GDP: say which.
    calibration = (f"mu = {spent.mu:.4g} GDP" if spent.notion == "GDP" else
                   f"rho = {spent.rho:.4g} zCDP, secure mode")
    print(f"Privacy spent: epsilon = {spent.epsilon:.4g}, delta = {spent.delta:g} "
          f"({calibration}), replace-one adjacency.")
    for note in table.attrs["notes"]:
        print(f"Note: {_cli_words(note)}")
    for note in notes:
        print(f"Warning: {note}")
    if args.bounds is None:
        print("No --bounds given: rows are clipped at private quantiles; declare bounds from "
              "a data dictionary for results you can trust on the original scale.")
    return 0


def _cli_words(message: str) -> str:
    """The estimator's advice in the command's terms (its parameters are flags here).

    The command has no burn-in flag: the burn-in follows --n-iter.
    """
    message = re.sub(r"n_iter - burn_in = (\d+) iterates cannot form n_batches=(\d+) batches; "
                     r"raise n_iter or lower burn_in\.",
                     r"--n-iter leaves \1 iterates after the burn-in, too few for \2 batches; "
                     "raise --n-iter.", message)
    message = re.sub(r"n_iter // n_batches = (\d+) steps, which must exceed burn_in=(\d+); "
                     r"raise n_iter or lower burn_in\.",
                     r"--n-iter / n_batches = \1 steps, which must exceed the burn-in of \2 "
                     "steps; raise --n-iter.", message)
    message = message.replace(" (skdp.preprocessing.DPStandardScaler in a Pipeline)", "")
    for api, flag in (("declare bounds_X and bounds_y (or norm_bound) and clip_norm",
                       "declare --bounds (every used column and the target) and --clip-norm"),
                      ("declare bounds_X/bounds_y", "declare --bounds"),
                      ("bounds_X and bounds_y (or norm_bound)",
                       "--bounds (every used column and the target)"),
                      ("bounds_X and bounds_y", "--bounds"), ("clip_norm", "--clip-norm"),
                      ("ci_method='independent_runs'", "--ci-method independent_runs"),
                      ("n_iter and burn_in", "n_iter"), ("learning_rate", "--learning-rate"),
                      ("n_iter", "--n-iter"), ("burn_in", "the burn-in")):
        message = message.replace(api, flag)
    return message


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="skdp",
        description="Differentially private estimators for scikit-learn.",
    )
    parser.add_argument("--version", action="version", version=f"skdp {skdp.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser(
        "demo",
        help="run every private estimator on data bundled with the install and print a report",
        description="Run every skdp estimator on synthetic tables and streams and on the "
                    "diabetes data that ships with scikit-learn, and print a report. Offline.",
    )
    demo.add_argument("--random-state", type=int, default=0,
                      help="seed, for a reproducible report (default: 0). A fixed seed is "
                           "for demonstration only: real releases use fresh randomness.")
    demo.add_argument("--plots", metavar="DIR", default=None,
                      help="also write PNG figures to DIR (needs matplotlib)")
    demo.set_defaults(func=_demo)
    regress = sub.add_parser(
        "regress",
        help="private linear regression with confidence intervals on a CSV file",
        description="Fit DPLinearRegressionGD on a CSV file with a header row and print a "
                    "coefficient table (coef, std err, interval) and the privacy spent.",
    )
    regress.add_argument("file", help="CSV file with a header row ('-' reads standard input)")
    regress.add_argument("--target", required=True, help="name of the label column")
    regress.add_argument("--features", default=None,
                         help="comma-separated feature columns (default: all but the target)")
    regress.add_argument("--bounds", metavar="BOUNDS.csv", default=None,
                         help="CSV with columns column,lower,upper: the declared range of every "
                              "used column, the target included (a data dictionary, not the "
                              "data); values are clipped to it and results are on the "
                              "original scale")
    regress.add_argument("--sep", default=",", help="field separator of the CSV files (default ,)")
    regress.add_argument("--epsilon", type=float, default=1.0, help="privacy budget (default 1)")
    regress.add_argument("--delta", type=float, default=1e-6, help="privacy budget (default 1e-6)")
    regress.add_argument("--ci-method", default="batched_means",
                         choices=["batched_means", "checkpoints", "independent_runs"])
    regress.add_argument("--alpha", type=float, default=0.05,
                         help="1 - confidence level of the intervals (default 0.05)")
    regress.add_argument("--clip-norm", type=float, default=None,
                         help="gradient clip norm (default: the estimator's, for unit-scale data)")
    regress.add_argument("--n-iter", type=int, default=None,
                         help="gradient steps (default: planned from the private Gram matrix)")
    regress.add_argument("--learning-rate", type=float, default=None,
                         help="step size in the preconditioned coordinates (default 1)")
    regress.add_argument("--no-intercept", action="store_true", help="fit no intercept")
    regress.add_argument("--population", action="store_true",
                         help="intervals for the population parameter (adds the private "
                              "sandwich estimate of the sampling variance)")
    regress.add_argument("--random-state", type=int, default=None,
                         help="seed (for tests only: a known seed lets anyone remove the noise)")
    regress.add_argument("--json", action="store_true", help="print the result as JSON")
    regress.set_defaults(func=_regress)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_usage(sys.stderr)
        print("skdp: error: a command is required (demo or regress); see skdp --help",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        return args.func(args)
    except UserError as exc:
        print(f"skdp {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        # The reader closed the pipe (``skdp regress ... | head``): stop quietly.
        # Python would still try to flush stdout at exit, so point it at devnull.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
