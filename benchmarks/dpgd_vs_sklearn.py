"""Default DPLinearRegressionGD against sklearn's LinearRegression: time and error ratios in one run.

Run: python benchmarks/dpgd_vs_sklearn.py [--n 1000000] [--p 20] [--repeats 3]

x ~ N(0, I_p), theta* on the unit sphere, sigma = 1, epsilon = 1,
delta = 1e-6, intercept fitted. Times are medians over repeats of whole
``fit`` calls (validation included) measured in the same run; the error is
``||theta - theta*||`` of the coefficients, DP-GD's averaged over the repeats
(different seeds). Target: time ratio <= 2, error ratio <= 1.3.
"""

import argparse
import time

import numpy as np
from _common import linear_data, print_table
from sklearn.linear_model import LinearRegression

from skdp.linear_model import DPLinearRegressionGD


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--p", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    X, y, theta = linear_data(args.n, args.p)
    t_ols, t_dp, e_dp, steps = [], [], [], []
    for r in range(args.repeats):
        t = time.perf_counter()
        ols = LinearRegression().fit(X, y)
        t_ols.append(time.perf_counter() - t)
        t = time.perf_counter()
        reg = DPLinearRegressionGD(epsilon=1.0, random_state=r).fit(X, y)
        t_dp.append(time.perf_counter() - t)
        e_dp.append(np.linalg.norm(reg.coef_ - theta))
        steps.append(reg.n_iter_)
    e_ols = np.linalg.norm(ols.coef_ - theta)
    to, td = float(np.median(t_ols)), float(np.median(t_dp))
    print_table(f"DP-GD (defaults, epsilon = 1) vs LinearRegression, n = {args.n}, p = {args.p}",
                ["quantity", "value"],
                [["LinearRegression fit (s)", to], ["DPLinearRegressionGD fit (s)", td],
                 ["time ratio (target <= 2)", td / to], ["DP-GD steps", int(np.median(steps))],
                 ["OLS error", float(e_ols)], ["DP-GD error (mean)", float(np.mean(e_dp))],
                 ["error ratio (target <= 1.3)", float(np.mean(e_dp) / e_ols)]])


if __name__ == "__main__":
    main()
