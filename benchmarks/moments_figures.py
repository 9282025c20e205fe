"""Reproductions of Kalinin et al. 2025 Figures 1, 2-3 and 5 with StreamingMomentEstimator.

Run: python benchmarks/moments_figures.py [--runs 1000] [--reps 20]

- Figure 1: expected errors (sqrt of E||.||_F^2 over the stream) of the first
  and second moments for lambda-JME, IME (budget split alpha) and CS
  (tau, calibrated with the exact sensitivity, so on the lambda-JME curve);
  d = 10, n = 100, prefix workload, identity shaping, zeta = 1,
  noise strength 1 (mu = 1). Exact: each method adds independent Gaussian
  noise with the stds the estimator reports.
- Figures 2-3: second-moment (prefix) and covariance (average) errors of
  JME and PP (debiased and not) across noise strengths, d = 1 and 100,
  identity and sqrt shaping, n = 200; Monte-Carlo over --reps runs on the
  worst-case stream (every row the same unit vector).
- Figure 5: mean KL(p_hat_t || p) of PrivateGaussianDensity over --runs runs,
  d = 5, n = 100, noise strength 2 (mu = 1/2), mu ~ N(0, I/2),
  Sigma ~ Wishart(I/2, 2d), rows clipped to the prior RMS norm sqrt(d^2 + d/2),
  with the paper's post-processing (symmetrise, floor the eigenvalues:
  projection="psd"), and again with skdp's defaults, whose projection onto the
  covariances the rows can have (trace and eigenvalues at most zeta^2)
  removes most of PP's squared noise: there PP catches up with JME.
"""

import argparse
import math
import warnings

import numpy as np
from _common import print_table
from scipy.stats import wishart

from skdp.accounting import epsilon_from_mu
from skdp.density import PrivateGaussianDensity, gaussian_kl, private_covariances
from skdp.mechanisms import workload_matrix
from skdp.moments import StreamingMomentEstimator, cs_noise_stds, ime_noise_stds, jme_noise_stds

DELTA = 1e-6
# The paper's continual release: a release after every row, every release kept.
PER_ROW = dict(release="per_row", store_history=True, norm_bound=1.0)
PAPER = dict(release="per_row", store_history=True, noise_shaping="identity", lam=None,
             eigenvalue_floor=1e-3, projection="psd")


def figure1():
    d, n = 10, 100
    frob = math.sqrt(np.sum(workload_matrix("prefix", n) ** 2))  # ||A C^-1||_F with C = I
    rows = []

    def err(std1, std2):
        return std1 * math.sqrt(d) * frob, std2 * d * frob

    for lam in (0.05, 0.2, 0.5, 1.0, 2.0, 8.0):
        std1, std2, _ = jme_noise_stds(1.0, d, 1.0, [1.0], [1.0], lam=lam)
        rows.append(["lambda-JME", f"lambda={lam}", *err(std1, std2)])
    std1, std2, lam = jme_noise_stds(1.0, d, 1.0, [1.0], [1.0])
    rows.append(["JME (free)", f"lambda={lam:.3g}", *err(std1, std2)])
    for a in (0.1, 0.3, 0.5, 0.7, 0.9):
        rows.append(["IME", f"alpha={a}", *err(*ime_noise_stds(1.0, 1.0, 1.0, 1.0, a))])
    for tau in (0.1, 0.5, 1.0, 2.0, 10.0):
        rows.append(["CS (exact sensitivity)", f"tau={tau}",
                     *err(*cs_noise_stds(1.0, 1.0, 1.0, tau, d))])
    print_table("Figure 1: sqrt E||Y - Y_hat||^2 and sqrt E||S - S_hat||^2 (d = 10, n = 100, "
                "prefix, identity, mu = 1)", ["method", "parameter", "1st moment", "2nd moment"],
                rows)


def figures2and3(reps):
    n = 200
    rows = []
    for d in (1, 100):
        X = np.tile(np.eye(d)[0], (n, 1))
        for shaping in ("identity", "sqrt"):
            for strength in (0.1, 1.0, 10.0):
                eps = epsilon_from_mu(1.0 / strength, DELTA)
                out = []
                for method, kw in (("jme", {}), ("pp", {}), ("pp", {"debias": False})):
                    e2 = ec = 0.0
                    for r in range(reps):
                        common = dict(epsilon=eps, delta=DELTA, method=method,
                                      noise_shaping=shaping, n_steps=n, random_state=r,
                                      **PER_ROW, **kw)
                        pre = StreamingMomentEstimator(**common).fit(X)
                        S = np.cumsum(np.einsum("ti,tj->tij", X, X), axis=0)
                        e2 += np.sum((pre.second_moments_ - S) ** 2) / reps
                        avg = StreamingMomentEstimator(workload="average", **common).fit(X)
                        var = None
                        if kw.get("debias", True):
                            var = (avg.noise_stds_[0] ** 2
                                   * avg._state["noise1"].average_variances(0, n))
                        cov = private_covariances(avg.first_moments_, avg.second_moments_, var)
                        ec += np.sum(cov**2) / reps  # the true covariance is 0
                    out += [math.sqrt(e2), math.sqrt(ec)]
                rows.append([d, shaping, strength, *out])
    print_table(f"Figures 2-3: sqrt E||S - S_hat||^2 (prefix) and sqrt E||Sigma - Sigma_hat||^2 "
                f"(average), worst-case stream, n = {n}, {reps} runs",
                ["d", "shaping", "strength", "JME S", "JME cov", "PP S", "PP cov",
                 "PP-biased S", "PP-biased cov"], rows)


def figure5(runs):
    d, n = 5, 100
    rng = np.random.default_rng(0)
    eps = epsilon_from_mu(0.5, DELTA)
    zeta = math.sqrt(d * d + d / 2)
    kl = {k: np.zeros((runs, n)) for k in ("JME", "PP", "PP (biased)")}
    for r in range(runs):
        mean = rng.normal(scale=math.sqrt(0.5), size=d)
        cov = wishart(df=2 * d, scale=0.5 * np.eye(d)).rvs(random_state=rng)
        X = rng.multivariate_normal(mean, cov, size=n)
        for name, kw in (("JME", {}), ("PP", {"method": "pp"}),
                         ("PP (biased)", {"method": "pp", "debias": False})):
            est = PrivateGaussianDensity(epsilon=eps, delta=DELTA, norm_bound=zeta,
                                         random_state=r, **PAPER, **kw).fit(X)
            kl[name][r] = gaussian_kl(est.locations_, est.covariances_, mean, cov)
    rows = [[t, *(f"{v[:, t - 1].mean():.3g} ± {v[:, t - 1].std():.3g}" for v in kl.values())]
            for t in (1, 5, 10, 20, 50, 100)]
    print_table(f"Figure 5: KL(p_hat_t || p), mean ± sd over {runs} runs (d = 5, noise strength 2; "
                "the paper's post-processing)", ["t", *kl], rows)
    wins = {k: bool(np.all(kl["JME"].mean(0)[19:] < v.mean(0)[19:])) for k, v in kl.items()
            if k != "JME"}
    print(f"JME mean KL below, for every t >= 20: {wins}")
    # The same streams with skdp's defaults (BLT noise, lam='density', floor 'auto',
    # the feasible projection): median KL at the last step.
    rng = np.random.default_rng(0)
    last = {"JME": [], "PP": []}
    for r in range(runs):
        mean = rng.normal(scale=math.sqrt(0.5), size=d)
        cov = wishart(df=2 * d, scale=0.5 * np.eye(d)).rvs(random_state=rng)
        X = rng.multivariate_normal(mean, cov, size=n)
        for name, kw in (("JME", {}), ("PP", {"method": "pp"})):
            est = PrivateGaussianDensity(epsilon=eps, delta=DELTA, norm_bound=zeta,
                                         release="per_row", random_state=r, **kw).fit(X)
            last[name].append(gaussian_kl(est.location_[None], est.covariance_[None], mean,
                                          cov)[0])
    print(f"skdp defaults, median KL at t = {n}: JME {np.median(last['JME']):.3g}, "
          f"PP {np.median(last['PP']):.3g}")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # small streams: the density warns when noise pins it
    figure1()
    figures2and3(args.reps)
    figure5(args.runs)


if __name__ == "__main__":
    main()
