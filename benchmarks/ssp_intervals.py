"""Noisy sufficient statistics with parametric-bootstrap intervals, on the cells of the suite.

Run: python benchmarks/ssp_intervals.py [--seeds 30] [--tables diamonds,SLID] [--half dev]

The alternative to DP-GD that issue 23 asked to measure: release the Gram
matrix of the rows ``(x_i, 1, y_i)`` once, with the whole budget, solve the
normal equations of the noisy statistics, and get intervals from a
parametric bootstrap through the released statistics (Ferrando, Wang and
Sheldon 2022): redraw the Gram noise around the released matrix, re-solve,
and take the spread. A sandwich built from the same noisy statistics has
the same estimate, hence the same error.

Same tables, flows, budgets and columns as ``interval_suite.py`` (nominal
90%, against the table's least-squares coefficients). ``bounds``: the rows
are scaled to [-1, 1] by the declared bounds, so nothing is clipped.
``std``: the row and label bounds are private quantiles (5% of the budget,
``AdaSSPRegressor``'s share where the search is safe; it is not raised to
the safe share on the small tables at epsilon 1), and rows beyond are
clipped. ``lam/noise``: the
released Gram's smallest eigenvalue over its typical noise norm (below 1:
some direction is not resolved). Compare with the suite's table in
docs/user_guide/when_to_trust.rst.
"""

import math

import numpy as np
from _common import print_table
from interval_suite import ALPHA, misses, reference, suite_cells
from scipy import stats

from skdp.accounting import mu_from_epsilon_delta
from skdp.linear_model._private_bounds import private_row_label_bounds
from skdp.mechanisms import make_rng, private_gram

DELTA = 1e-6
BOOTSTRAP = 200
BOUNDS_SHARE = 0.05


def ssp_fit(X, y, kw, eps, seed):
    """Estimate, bootstrap standard errors and released-Gram conditioning of one fit."""
    n, p = X.shape
    q = p + 1
    mu = mu_from_epsilon_delta(eps, DELTA)
    rng = make_rng(seed)
    if kw:  # declared bounds: columns to [-1, 1], ||(x, 1)|| <= sqrt(q), |y| <= 1
        lo, hi = kw["bounds_X"]
        ylo, yhi = kw["bounds_y"]
        cx, sx = (lo + hi) / 2, (hi - lo) / 2
        cy, sy = (ylo + yhi) / 2, (yhi - ylo) / 2
        Xs, ys = (X - cx) / sx, (y - cy) / sy
        row, label, mu_gram = math.sqrt(q), 1.0, mu
    else:
        cx, sx, cy, sy = np.zeros(p), np.ones(p), 0.0, 1.0
        Xs, ys = X, y
        mu_b = math.sqrt(BOUNDS_SHARE) * mu
        row, label = private_row_label_bounds(X, y, None, fit_intercept=True, mu=mu_b, rng=rng)
        mu_gram = math.sqrt(1 - BOUNDS_SHARE) * mu
    # Rows (z / row, y / label), clipped to norm sqrt(2): the release DP-GD makes.
    gram, std = private_gram(Xs, ys / label, x_scale=1 / row, intercept_value=1 / row,
                             fit_intercept=True, norm_bound=math.sqrt(2), mu=mu_gram, rng=rng)
    A, b, s = gram[:q, :q] / n, gram[:q, q] / n, std / n
    theta = np.linalg.solve(A, b)
    boot = np.random.default_rng(10_000 + seed)
    draws = []
    for _ in range(BOOTSTRAP):
        E = np.triu(boot.normal(scale=s, size=(q, q)))
        E = E + np.triu(E, 1).T
        draws.append(np.linalg.solve(A + E, b + boot.normal(scale=s, size=q)))
    # Back to the original scale: theta_s is for (z / row, y / label).
    M = np.zeros((q, q))
    M[:p, :p] = np.diag(label / row / sx * sy)
    M[p, :p] = -label / row * sy * cx / sx
    M[p, p] = label / row * sy
    offset = np.r_[np.zeros(p), cy]
    est = M @ theta + offset
    se = (np.array(draws) @ M.T).std(axis=0)
    return est, se, np.linalg.eigvalsh(A)[0] / (2 * s * math.sqrt(q))


def cell(X, y, kw, eps, seeds):
    ls, hc1 = reference(X, y)
    z = stats.norm.ppf(1 - ALPHA / 2)
    hit, ses, ests, cond = [], [], [], []
    for seed in range(seeds):
        est, se, c = ssp_fit(X, y, kw, eps, seed)
        hit.append(np.abs(est - ls) <= z * se)
        ses.append(se)
        ests.append(est)
        cond.append(c)
    hit, ses, ests = np.array(hit), np.array(ses), np.array(ests)
    rmse = np.sqrt(np.mean((ests - ls) ** 2, axis=0))
    return dict(cov=hit.mean(), worst=hit.mean(0).min(), cov_ok=np.nan,
                width=float(np.median(2 * z * ses / hc1)),
                se_rmse=float(np.median(np.median(ses, axis=0) / rmse)),
                cond=float(np.median(cond)))


def main():
    rows = []
    for seeds, name, half, X, y, kw, flow, eps in suite_cells(__doc__.splitlines()[0]):
        r = cell(X, y, kw, eps, seeds)
        rows.append([name, half, X.shape[0], X.shape[1], flow, eps, r["cov"], r["worst"],
                     r["width"], r["se_rmse"], r["cond"], misses(r, X.shape[0], eps)])
        print(*rows[-1], flush=True)
    print_table(f"Noisy sufficient statistics + parametric bootstrap: nominal {1 - ALPHA:.0%}, "
                f"{seeds} seeds (delta {DELTA})",
                ["table", "half", "n", "p", "flow", "epsilon", "cov", "worst", "w/HC1",
                 "se/rmse", "lam/noise", "miss"], rows)


if __name__ == "__main__":
    main()
