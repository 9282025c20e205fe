"""Default settings of the private regressors on the issue-15 setups, against OLS.

Run: python benchmarks/regression_defaults.py [--seeds 2]

x ~ N(0, I_p), theta* on the unit sphere, sigma = 1, epsilon = 1,
delta = 1e-6, intercept fitted; error ``||coef - theta*||`` averaged over
seeds (predicting 0 scores 1.0).

1. DPSGDRegressor at its defaults for (batch_size, epochs) in (64, 1),
   (64, 3), (1, 1), (256, 5), p = 50, n = 1e5 (target: under 0.3).
2. AdaSSPRegressor against DPLinearRegressionGD at n = 1e5, p = 100 (target:
   AdaSSP within ~3x of DP-GD).
"""

import argparse
import time

import numpy as np
from _common import linear_data, print_table
from sklearn.linear_model import LinearRegression

from skdp.linear_model import AdaSSPRegressor, DPLinearRegressionGD, DPSGDRegressor


def error(make, X, y, theta, seeds):
    errs, times = [], []
    for s in range(seeds):
        t = time.perf_counter()
        est = make(s).fit(X, y)
        times.append(time.perf_counter() - t)
        errs.append(np.linalg.norm(est.coef_ - theta))
    return float(np.mean(errs)), float(np.median(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=2)
    args = parser.parse_args()
    X, y, theta = linear_data(100_000, 50)
    ols = np.linalg.norm(LinearRegression().fit(X, y).coef_ - theta)
    rows = [["OLS (not private)", "-", "-", ols, "-"]]
    for b, e in [(64, 1), (64, 3), (1, 1), (256, 5)]:
        err, t = error(lambda s: DPSGDRegressor(batch_size=b, epochs=e, random_state=s),
                       X, y, theta, args.seeds)
        rows.append(["DPSGDRegressor", b, e, err, t])
    print_table(f"DPSGDRegressor defaults, n = 1e5, p = 50, epsilon = 1, {args.seeds} seeds",
                ["estimator", "batch_size", "epochs", "error", "fit (s)"], rows)

    X, y, theta = linear_data(100_000, 100)
    rows = [["OLS (not private)", np.linalg.norm(LinearRegression().fit(X, y).coef_ - theta),
             "-"]]
    for name, make in [("DPLinearRegressionGD", lambda s: DPLinearRegressionGD(random_state=s)),
                       ("AdaSSPRegressor", lambda s: AdaSSPRegressor(random_state=s))]:
        err, t = error(make, X, y, theta, args.seeds)
        rows.append([name, err, t])
    rows.append(["AdaSSP / DP-GD (target <= ~3)", rows[2][1] / rows[1][1], "-"])
    print_table(f"n = 1e5, p = 100, epsilon = 1, defaults, {args.seeds} seeds",
                ["estimator", "error", "fit (s)"], rows)


if __name__ == "__main__":
    main()
