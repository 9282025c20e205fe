"""Brown et al. 2024 Figures 1-2: error of DP-GD, AdaSSP and OLS vs p (n = 100 p) and vs n.

Run: python benchmarks/dpgd_accuracy.py [--reps R]

Errors are ||theta_hat - theta*|| (the true parameter) and, for the private
methods, also ||theta_hat - theta_OLS||, averaged over R data sets / seeds.
Budget: epsilon = 1, delta = 1e-6 (exact GDP calibration).
"""

import argparse

import numpy as np
from _common import linear_data, print_table
from sklearn.linear_model import LinearRegression

from skdp.linear_model import AdaSSPRegressor, DPLinearRegressionGD

EPS, DELTA = 1.0, 1e-6


def errors(n, p, reps):
    out = {"ols": [], "dpgd": [], "dpgd_vs_ols": [], "adassp": [], "adassp_vs_ols": []}
    for r in range(reps):
        X, y, theta = linear_data(n, p, seed=r)
        ols = LinearRegression(fit_intercept=False).fit(X, y).coef_
        gd = DPLinearRegressionGD(epsilon=EPS, delta=DELTA, fit_intercept=False,
                                  population_share=0.0, random_state=r).fit(X, y).coef_
        ssp = AdaSSPRegressor(epsilon=EPS, delta=DELTA, fit_intercept=False, label_bound=4.0,
                              random_state=r).fit(X, y).coef_
        out["ols"].append(np.linalg.norm(ols - theta))
        out["dpgd"].append(np.linalg.norm(gd - theta))
        out["dpgd_vs_ols"].append(np.linalg.norm(gd - ols))
        out["adassp"].append(np.linalg.norm(ssp - theta))
        out["adassp_vs_ols"].append(np.linalg.norm(ssp - ols))
    return {k: float(np.mean(v)) for k, v in out.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    header = ["p", "n", "OLS", "DP-GD", "DP-GD vs OLS", "AdaSSP", "AdaSSP vs OLS"]
    rows = []
    for p in (10, 20, 50, 100):
        e = errors(100 * p, p, args.reps)
        rows.append([p, 100 * p, e["ols"], e["dpgd"], e["dpgd_vs_ols"], e["adassp"], e["adassp_vs_ols"]])
    print_table(f"Figure 1: n = 100 p, epsilon = {EPS}, delta = {DELTA}, mean over {args.reps} reps",
                header, rows)
    gd = [r[4] for r in rows]
    print(f"DP-GD error vs OLS: max/min over p = {max(gd) / min(gd):.2f} (flat in p if <= 1.3)")
    rows = []
    for n in (1_000, 10_000, 100_000):
        e = errors(n, 10, args.reps)
        rows.append([10, n, e["ols"], e["dpgd"], e["dpgd_vs_ols"], e["adassp"], e["adassp_vs_ols"]])
    print_table(f"Figure 2: p = 10, mean over {args.reps} reps", header, rows)
    print(f"At n = 1e5: DP-GD error / OLS error = {rows[-1][3] / rows[-1][2]:.2f} (target <= 1.5)")


if __name__ == "__main__":
    main()
