"""PrivateGaussianDensity: test log-likelihood and errors, one release against streams.

Run: python benchmarks/density_loglik.py [--seeds 10]

The setting of the phase-2 issue: d = 5, rows ~ N(m, Sigma) with
||m||^2 = 1.8 and Sigma's eigenvalues (1, 0.4, 0.2, 0.1, 0.076) in a random
basis (the rows' norms are about 1.9), epsilon = 1, delta = 1e-5. For each
way of fitting: the median over seeds of the mean log-likelihood of 50,000
fresh rows, the errors of the private mean and covariance against the
non-private estimates of the same table (Euclidean and Frobenius), and the
size of the pickled estimator. "declared" uses norm_bound = 4; "private
bound" spends 5% of mu**2 on the 99th percentile of the row norms.
"""

import argparse
import math
import pickle

import numpy as np
from _common import print_table
from scipy.stats import multivariate_normal, ortho_group

from skdp.density import PrivateGaussianDensity


def setting():
    d = 5
    Q = ortho_group.rvs(d, random_state=1)
    cov = Q @ np.diag([1.0, 0.4, 0.2, 0.1, 0.076]) @ Q.T
    mean = np.full(d, math.sqrt(1.8 / d))
    return mean, cov


def fit(kind, X, seed):
    common = dict(epsilon=1.0, delta=1e-5, random_state=seed)
    if kind == "one release, declared":
        return PrivateGaussianDensity(norm_bound=4.0, **common).fit(X)
    if kind == "one release, private bound":
        return PrivateGaussianDensity(**common).fit(X)
    if kind.startswith("release after every row"):
        shaping = kind.split("(")[1].rstrip(")")
        return PrivateGaussianDensity(norm_bound=4.0, release="per_row", noise_shaping=shaping,
                                      **common).fit(X)
    shaping = kind.split("(")[1].rstrip(")")
    dens = PrivateGaussianDensity(norm_bound=4.0, noise_shaping=shaping, n_steps=1000,
                                  **common)
    for block in np.array_split(X, 1000):
        dens.partial_fit(block)
    return dens


KINDS = ["one release, declared", "one release, private bound",
         "release after every row (identity)", "release after every row (blt)",
         "1000 partial_fit calls (identity)", "1000 partial_fit calls (blt)",
         "1000 partial_fit calls (sqrt)"]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    mean, cov = setting()
    test = np.random.default_rng(0).multivariate_normal(mean, cov, size=50_000)
    rows = [["-", "true density", multivariate_normal(mean, cov).logpdf(test).mean(),
             "-", "-", "-"]]
    for n in (10_000, 100_000):
        X = np.random.default_rng(5).multivariate_normal(mean, cov, size=n)
        m_np, c_np = X.mean(axis=0), np.cov(X.T, bias=True)
        rows.append([n, "non-private Gaussian", multivariate_normal(m_np, c_np).logpdf(test).mean(),
                     0.0, 0.0, "-"])
        for kind in KINDS:
            if kind.startswith("release after every row") and n > 10_000:
                continue  # the old default: ten times slower to run, and worse (see n = 1e4)
            ll, em, ec = [], [], []
            for seed in range(args.seeds):
                dens = fit(kind, X, seed)
                ll.append(dens.score(test))
                em.append(np.linalg.norm(dens.location_ - m_np))
                ec.append(np.linalg.norm(dens.covariance_ - c_np))
            rows.append([n, kind, float(np.median(ll)), float(np.median(em)),
                         float(np.median(ec)), len(pickle.dumps(dens))])
    print_table(f"Log-likelihood of new rows (median of {args.seeds} seeds); errors vs "
                "the non-private estimates", ["n", "fit", "log-lik", "mean err", "cov err",
                                               "pickle bytes"], rows)


if __name__ == "__main__":
    main()
