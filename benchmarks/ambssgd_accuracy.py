"""DP-AMBSSGD accuracy (Varshney et al. 2022 Corollary 3.8 setting) against the baselines.

Run: python benchmarks/ambssgd_accuracy.py [--seeds 5] [--quick]

x ~ N(0, I_d), theta* on the unit sphere, y = x . theta* + sigma z; the
excess risk of w is ||w - theta*||^2 (+ intercept^2). Every private method
fits an intercept and runs at epsilon = 1, delta = 1e-6 with its defaults,
except where a column says otherwise:

- DP-AMBSSGD: ``DPAMBSSGDRegressor()``.
- fixed-clip MB: the same one-pass mini-batch steps with the clip fixed at
  ``x_norm`` (a single DP-STAT level: ``residual_bound = resolution = 1``).
- DP-SSGD: ``variant='ssgd'`` (Algorithm 1, batch 1, clip ``x_norm``),
  calibrated without shuffling amplification (see the estimator's Notes).
- DP-GD: ``DPLinearRegressionGD(population_share=0)`` (Brown et al. 2024).
- AdaSSP: ``AdaSSPRegressor(label_bound=3 * sqrt(1 + sigma^2))``.

Table 1 varies N and d at sigma = 1; table 2 varies sigma at N = 1e5, d = 10.
Numbers are means over seeds, reported as the ratio to OLS's excess risk.
"""

import argparse
import math

import numpy as np
from _common import linear_data, print_table

from skdp.linear_model import AdaSSPRegressor, DPAMBSSGDRegressor, DPLinearRegressionGD


def excess(coef, intercept, theta):
    return float(np.sum((coef - theta) ** 2) + intercept**2)


def methods(sigma, with_ssgd):
    out = {
        "DP-AMBSSGD": lambda s: DPAMBSSGDRegressor(random_state=s),
        "fixed-clip MB": lambda s: DPAMBSSGDRegressor(residual_bound=1.0, resolution=1.0,
                                                      random_state=s),
        "DP-GD": lambda s: DPLinearRegressionGD(population_share=0.0, random_state=s),
        "AdaSSP": lambda s: AdaSSPRegressor(label_bound=3 * math.sqrt(1 + sigma**2),
                                            random_state=s),
    }
    if with_ssgd:
        out["DP-SSGD"] = lambda s: DPAMBSSGDRegressor(variant="ssgd", random_state=s)
    return out


def run(n, d, sigma, seeds, with_ssgd):
    risks = {}
    ols = []
    for seed in range(seeds):
        X, y, theta = linear_data(n, d, sigma, seed)
        Xa = np.column_stack([X, np.ones(n)])
        w = np.linalg.lstsq(Xa, y, rcond=None)[0]
        ols.append(excess(w[:-1], w[-1], theta))
        for name, make in methods(sigma, with_ssgd).items():
            est = make(seed).fit(X, y)
            risks.setdefault(name, []).append(excess(est.coef_, est.intercept_, theta))
    return float(np.mean(ols)), {k: float(np.mean(v)) for k, v in risks.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="N <= 1e5 and no DP-SSGD")
    args = parser.parse_args()
    sizes = [10_000, 30_000, 100_000] + ([] if args.quick else [300_000])
    rows = []
    for d in (10, 50):
        for n in sizes:
            ols, r = run(n, d, 1.0, args.seeds, with_ssgd=not args.quick and n <= 100_000)
            rows.append([n, d, ols] + [r[k] / ols if k in r else "-" for k in
                                       ("DP-AMBSSGD", "fixed-clip MB", "DP-SSGD", "DP-GD", "AdaSSP")])
    print_table(f"Excess risk / OLS excess risk, sigma = 1, epsilon = 1, delta = 1e-6 "
                f"(mean of {args.seeds} seeds)",
                ["N", "d", "OLS risk", "DP-AMBSSGD", "fixed-clip MB", "DP-SSGD", "DP-GD", "AdaSSP"],
                rows)
    rows = []
    base = None
    for sigma in (1.0, 0.1, 0.01, 0.001):
        ols, r = run(100_000, 10, sigma, args.seeds, with_ssgd=not args.quick)
        base = base or r
        rows.append([sigma, ols, r["DP-AMBSSGD"], r["DP-AMBSSGD"] / base["DP-AMBSSGD"],
                     r["fixed-clip MB"], r.get("DP-SSGD", "-"), r["DP-GD"], r["AdaSSP"]])
    print_table(f"Excess risk vs label noise, N = 1e5, d = 10 (mean of {args.seeds} seeds)",
                ["sigma", "OLS", "DP-AMBSSGD", "vs sigma=1", "fixed-clip MB", "DP-SSGD", "DP-GD",
                 "AdaSSP"], rows)


if __name__ == "__main__":
    main()
