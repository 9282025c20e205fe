"""How far DP-GD's clipping bias goes, in standard errors, for a given excess beyond the clip.

Run: python benchmarks/dpgd_clipping_bias.py [--seeds S]

The docs (*When to trust the intervals*) derive that the clipped solution
differs from least squares by about ``H^{-1} E / n`` (E the summed excess of
the per-row gradients beyond the clip, at the clipped solution) while the
mean of the iterates has noise of about ``H^{-1} 2 W C / (n mu_steps)``, so
that in each direction the bias is about ``|E| mu_steps / (2 W C)`` of the
estimate's standard deviation, whatever n and H. This checks it: 20,000
rows x ~ N(0, I_2), y = x . (1, -0.5) + N(0, 1), a declared clip norm of 20
(no gradient of these rows reaches it), no preconditioner (so the clip acts
on ``z_i r_i`` and H is the identity up to sampling), and k rows whose label
is raised by a shift, so that their gradients are clipped by a known
excess. Per coefficient: the bias of the clipped solution (``estimand``)
against least squares, over the standard deviation of the estimates over
the seeds (``bias/sd``), and the derivation's prediction from the table's
own E and the steps' GDP budget (``predicted``).
"""

import argparse
import warnings

import numpy as np
from _common import print_table

from skdp.linear_model import DPLinearRegressionGD
from skdp.mechanisms import record_releases

CLIP = 20.0


def table(n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, X @ np.array([1.0, -0.5]) + rng.normal(size=n)


def cell(k, shift, epsilon, seeds):
    X, y = table()
    y[:k] += shift  # k rows far beyond the clip
    Z = np.column_stack([X, np.ones(len(y))])
    ols = np.linalg.lstsq(Z, y, rcond=None)[0]
    estimates = []
    for seed in range(seeds):
        with warnings.catch_warnings(), record_releases() as log:
            warnings.simplefilter("ignore")  # the clipping warning, counted elsewhere
            reg = DPLinearRegressionGD(epsilon=epsilon, delta=1e-6, clip_norm=CLIP,
                                       gram_share=0.0, population_share=0.0,
                                       random_state=seed).fit(X, y)
        estimates.append(np.append(reg.coef_, reg.intercept_))
    mu_steps = np.sqrt(sum(r.mu ** 2 for r in log if r.name == "DP-GD step"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # estimand's PrivacyLeakWarning: a simulation
        solution = reg.estimand(X, y)
    G = Z * (Z @ solution - y)[:, None]
    norms = np.linalg.norm(G, axis=1)
    E = (G * np.maximum(1.0 - CLIP / norms, 0.0)[:, None]).sum(axis=0)
    sd = np.std(estimates, axis=0, ddof=1)
    return (int(np.sum(norms > CLIP)), mu_steps, np.abs(solution - ols) / sd,
            np.abs(E) * mu_steps / (2.0 * CLIP))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=30)
    args = parser.parse_args()
    rows, ratios = [], []
    for k, shift in [(5, 60.0), (20, 60.0), (3, 400.0), (20, 400.0)]:
        for epsilon in (1.0, 10.0):
            clipped, mu_steps, measured, predicted = cell(k, shift, epsilon, args.seeds)
            for name, m, p in zip(("x1", "x2", "intercept"), measured, predicted):
                rows.append([k, shift, epsilon, round(mu_steps, 3), clipped, name, round(m, 2),
                             round(p, 2), round(m / p, 2) if p > 0.5 else "-"])
                if p > 0.5:
                    ratios.append(m / p)
    print_table(f"Clipping bias in standard deviations of the estimate, measured and predicted "
                f"(|E| mu_steps / (2 C)), clip {CLIP:g}, {args.seeds} seeds",
                ["rows", "shift", "epsilon", "mu_steps", "clipped", "coef", "bias/sd",
                 "predicted", "ratio"], rows)
    print(f"\nratio measured / predicted where the prediction exceeds 0.5: "
          f"{min(ratios):.2f} to {max(ratios):.2f} (median {np.median(ratios):.2f})")


if __name__ == "__main__":
    main()
