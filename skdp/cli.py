"""The ``skdp`` command: ``skdp demo`` and ``skdp regress FILE.csv --target COLUMN``."""

from __future__ import annotations

import argparse
import json
import sys

import skdp

__all__ = ["main"]

EXIT_USAGE = 2  # user mistakes: bad file, column, data or parameters


class UserError(Exception):
    """A mistake in the command's input, reported in one line with exit code 2."""


def _demo(args: argparse.Namespace) -> int:
    from skdp._demo import run_demo

    return run_demo(random_state=args.random_state, plots=args.plots)


def _read_table(path: str, target: str, features: str | None):
    import pandas as pd

    try:
        frame = pd.read_csv(path)
    except FileNotFoundError:
        raise UserError(f"no such file: {path}") from None
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise UserError(f"cannot read {path} as CSV: {str(exc).splitlines()[0]}") from None
    columns = [c.strip() for c in features.split(",")] if features else \
        [c for c in frame.columns if c != target]
    missing = [c for c in [target, *columns] if c not in frame.columns]
    if missing:
        raise UserError(f"column(s) not in {path}: {', '.join(map(str, missing))} "
                        f"(it has: {', '.join(map(str, frame.columns))})")
    if not columns:
        raise UserError(f"{path} has no feature columns besides the target {target!r}")
    bad = [c for c in [*columns, target] if not pd.api.types.is_numeric_dtype(frame[c])]
    if bad:
        raise UserError(f"non-numeric column(s): {', '.join(map(str, bad))}; skdp regress "
                        "needs numbers (encode categories first, or leave them out with "
                        "--features)")
    if frame[[*columns, target]].isna().to_numpy().any():
        raise UserError("the data has missing values; drop or impute them first (with rules "
                        "that do not look at the private values)")
    return frame[columns], frame[target]


def _regress(args: argparse.Namespace) -> int:
    from sklearn.utils._param_validation import InvalidParameterError

    from skdp.linear_model import DPLinearRegressionGD

    X, y = _read_table(args.file, args.target, args.features)
    if not 0.0 < args.alpha < 1.0:
        raise UserError(f"--alpha must be in (0, 1), got {args.alpha}")
    reg = DPLinearRegressionGD(epsilon=args.epsilon, delta=args.delta, clip_norm=args.clip_norm,
                               ci_method=args.ci_method, random_state=args.random_state)
    try:
        reg.fit(X, y)
    except InvalidParameterError as exc:
        raise UserError(str(exc).replace("The 'epsilon' parameter of DPLinearRegressionGD",
                                         "--epsilon").replace(
            "The 'delta' parameter of DPLinearRegressionGD", "--delta")) from None
    except (ValueError, FloatingPointError) as exc:
        raise UserError(str(exc).splitlines()[0]) from None
    table = reg.summary(alpha=args.alpha)
    spent = reg.privacy_spent_
    if args.json:
        print(json.dumps({
            "target": args.target, "n_samples": int(X.shape[0]), "ci_method": args.ci_method,
            "alpha": args.alpha,
            "coefficients": {str(name): {"coef": float(row.iloc[0]), "std_err": float(row.iloc[1]),
                                         "ci_low": float(row.iloc[2]), "ci_high": float(row.iloc[3])}
                             for name, row in table.iterrows()},
            "privacy_spent": {"epsilon": spent.epsilon, "delta": spent.delta, "mu": spent.mu},
        }, indent=2))
        return 0
    import pandas as pd

    print(f"DPLinearRegressionGD: {args.target} ~ {' + '.join(map(str, X.columns))}")
    clip = (f"{5 * (X.shape[1] + 1) ** 0.5:.4g} (the default, 5 sqrt(p + 1))"
            if args.clip_norm is None else f"{args.clip_norm:g}")
    print(f"n = {X.shape[0]}, clip_norm = {clip}, ci_method = {args.ci_method}, "
          f"{100 * (1 - args.alpha):g}% intervals for the least-squares solution of this data")
    with pd.option_context("display.float_format", "{:10.4f}".format, "display.width", 120):
        print(table.to_string())
    print(f"Privacy spent: epsilon = {spent.epsilon:.4g}, delta = {spent.delta:g} "
          f"(mu = {spent.mu:.4g}), replace-one adjacency.")
    print("The defaults assume features and target of unit scale; rescale with constants you "
          "know without looking at the data.")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="skdp",
        description="Differentially private estimators for scikit-learn.",
    )
    parser.add_argument("--version", action="version", version=f"skdp {skdp.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser(
        "demo",
        help="run every private estimator on data bundled with the install and print a report",
        description="Run every skdp estimator on the diabetes data that ships with "
                    "scikit-learn (and a synthetic stream) and print a report. Offline.",
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
    regress.add_argument("file", help="CSV file with a header row")
    regress.add_argument("--target", required=True, help="name of the label column")
    regress.add_argument("--features", default=None,
                         help="comma-separated feature columns (default: all but the target)")
    regress.add_argument("--epsilon", type=float, default=1.0, help="privacy budget (default 1)")
    regress.add_argument("--delta", type=float, default=1e-6, help="privacy budget (default 1e-6)")
    regress.add_argument("--ci-method", default="batched_means",
                         choices=["batched_means", "checkpoints", "independent_runs"])
    regress.add_argument("--alpha", type=float, default=0.05,
                         help="1 - confidence level of the intervals (default 0.05)")
    regress.add_argument("--clip-norm", type=float, default=None,
                         help="gradient clip norm (default: the estimator's, for unit-scale data)")
    regress.add_argument("--random-state", type=int, default=None,
                         help="seed (for tests only: a known seed lets anyone remove the noise)")
    regress.add_argument("--json", action="store_true", help="print the result as JSON")
    regress.set_defaults(func=_regress)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 0
    try:
        return args.func(args)
    except UserError as exc:
        print(f"skdp {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
