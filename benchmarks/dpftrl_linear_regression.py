"""Choquette-Choo et al. 2024: nu-DP-FTRL against DP-SGD on streaming linear regression.

Run: python benchmarks/dpftrl_linear_regression.py [--seeds 3]

d = 20, x ~ N(0, H) with eigenvalues k^-1.5, y = <theta*, x> + 0.1 N(0, 1),
T = 20,000 rows in one pass at batch size 1, clip norm 1, no intercept,
plain SGD on the last iterate; the same (epsilon, delta = 1e-6) for every
noise, the learning rate on the same grid. Reports the excess risk
``(w - theta*)^T H (w - theta*) / 2`` (mean over seeds) along the grid and
the best per noise. ``nu = 0`` uses the horizon T (its column norms grow
like sqrt(log T)); nu > 0 uses the unbounded-stream sensitivity.
"""

import argparse

import numpy as np
from _common import print_table

from skdp.datasets import make_power_law_regression
from skdp.linear_model import DPSGDRegressor

LRS = [1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1]
NOISES = [("independent", 0.0), ("nu", 0.0), ("nu", 0.001), ("nu", 0.01), ("nu", 0.05)]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    data = [make_power_law_regression(20_000, 20, random_state=s) for s in range(args.seeds)]
    summary = []
    for epsilon in (1.0, 4.0):
        risk = {}
        for seed, (X, y, theta, h) in enumerate(data):
            for noise, nu in NOISES:
                for lr in LRS:
                    est = DPSGDRegressor(epsilon=epsilon, noise=noise, nu=nu, batch_size=1,
                                         learning_rate=lr, clip_norm=1.0, fit_intercept=False,
                                         random_state=seed)
                    try:
                        w = est.fit(X, y).coef_
                        r = 0.5 * float(np.sum(h * (w - theta) ** 2))
                    except FloatingPointError:
                        r = np.inf
                    risk.setdefault((noise, nu), {}).setdefault(lr, []).append(r)
        names = [n if n == "independent" else f"nu={v:g}" for n, v in NOISES]
        rows = [[lr] + [float(np.mean(risk[k][lr])) for k in NOISES] for lr in LRS]
        print_table(f"Excess risk at epsilon = {epsilon:g} (mean of {args.seeds} seeds; "
                    f"predicting 0 gives {0.5 * float(np.sum(data[0][3] * data[0][2]**2)):.4g})",
                    ["lr"] + names, rows)
        best = {k: min(float(np.mean(v)) for v in risk[k].values()) for k in NOISES}
        ind = best[("independent", 0.0)]
        for (noise, nu), name in zip(NOISES, names):
            summary.append([epsilon, name, best[(noise, nu)], ind / best[(noise, nu)]])
    print_table("Best excess risk over the learning-rate grid (target: nu at most half of "
                "independent)", ["epsilon", "noise", "best excess risk", "independent / this"],
                summary)


if __name__ == "__main__":
    main()
