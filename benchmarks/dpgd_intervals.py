"""Brown et al. 2024 Figures 5-6: coverage and width of the three interval constructions.

Run: python benchmarks/dpgd_intervals.py [--reps R] [--paper]

n = 1000, p = 10, clip_norm = 5 sqrt(p), m = 10, the (epsilon, delta)
equivalent of the paper's rho = 0.015 at delta = 1e-6 (exact GDP: mu =
sqrt(2 rho)), no sandwich release. Coverage of the empirical least-squares
solution by nominal 95% intervals, averaged over coordinates and R data sets,
and the share of fits that raised the clipping warning (``clip warn``).

By default skdp's own plan: a private Gram matrix, which at this n and
budget resolves no direction, so the fit sets it aside and runs without a
preconditioner, at the step that keeps the run's total time (step times
iterations, about 25 here) where the noise's wander of the gradient norms
stays within half the clip norm; independent runs keep step 0.25 (when the
Gram's preconditioner was used, the declared clip norm bounded the
preconditioned gradients ``||P z_i r_i||``, about 3 times the paper's clip
on these rows). With
``--paper``, the paper's algorithm: no preconditioner (``gram_share=0``, so
the clip bounds the raw gradients ``||x_i r_i||`` as in the paper), step
0.25, burn-in 20.
"""

import argparse
import math
import warnings

import numpy as np
from _common import linear_data, print_table

from skdp.accounting import epsilon_from_mu, mu_from_rho
from skdp.linear_model import DPLinearRegressionGD

DELTA = 1e-6
EPS = epsilon_from_mu(mu_from_rho(0.015), DELTA)
PAPER = dict(gram_share=0.0, learning_rate=0.25, burn_in=20)


def run(method, total_iters, reps, paper=False):
    cover, width, clip_warned = [], [], []
    for r in range(reps):
        X, y, _ = linear_data(1000, 10, seed=r)
        ols = np.linalg.lstsq(X, y, rcond=None)[0]
        with warnings.catch_warnings():  # counted below (fit_warnings_), not printed
            warnings.simplefilter("ignore")
            reg = DPLinearRegressionGD(epsilon=EPS, delta=DELTA, clip_norm=5 * math.sqrt(10),
                                       n_iter=total_iters, ci_method=method,
                                       fit_intercept=False, population_share=0.0,
                                       random_state=r, **(PAPER if paper else {})).fit(X, y)
        ci = reg.conf_int(0.05)
        cover.append(np.mean((ci[:, 0] <= ols) & (ols <= ci[:, 1])))
        width.append(np.mean(ci[:, 1] - ci[:, 0]))
        clip_warned.append("clipping" in reg.fit_warnings_)
    return float(np.mean(cover)), float(np.mean(width)), float(np.mean(clip_warned))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--paper", action="store_true",
                        help="the paper's algorithm: no preconditioner, step 0.25, burn-in 20")
    args = parser.parse_args()
    rows = []
    for total in (200, 500, 1000):
        for method in ("batched_means", "checkpoints", "independent_runs"):
            if method == "independent_runs" and total // 10 <= 20:
                rows.append([total, method, "n/a", "n/a", "n/a"])  # runs shorter than the burn-in
                continue
            rows.append([total, method, *run(method, total, args.reps, args.paper)])
    plan = "the paper's algorithm" if args.paper else "skdp's plan"
    print_table(f"Coverage of nominal 95% intervals (target 0.90-0.98), {plan}, n=1000, p=10, "
                f"epsilon={EPS:.3f}, delta={DELTA}, {args.reps} reps",
                ["total iterations", "method", "coverage", "mean width", "clip warn"], rows)


if __name__ == "__main__":
    main()
