"""Private model selection: which scheme picks the best DP-GD candidate at a fixed budget?

Run: python benchmarks/model_selection.py [--seeds S] [--quick] [--sensitivity]
     python benchmarks/model_selection.py --seeds 40 --only-sensitivity --cvs 0.25 0.4 0.5 --shares 0.25 0.4
     python benchmarks/model_selection.py --acceptance   (the acceptance test's grid on 100 more seeds)

Measured 2026-11-23 (2-core machine, about 9 minutes for --seeds 20): see
docs/user_guide/model_selection.rst and the README for the tables.

Data: x ~ N(0, I_10), theta* on the unit sphere, sigma = 1, n = 20,000; the
whole selection and the returned model together are (epsilon = 2,
delta = 1e-6)-DP. The candidates are DPLinearRegressionGD settings; a
candidate's quality is its population excess risk
``||coef - theta*||**2 + intercept**2`` (exact for isotropic Gaussian x).

Schemes (each returns a model; the budget is exact for every one):

- holdout + refit (skdp's DPGridSearchCV, cv=0.25): one shared hold-out
  split; every candidate is trained on the training rows and scored on the
  validation rows (in parallel: a row is used once per candidate), the m
  candidates composed in GDP; the chosen one is refitted on all rows with
  1 - selection_share of mu**2.
- 3-fold + refit (DPGridSearchCV, cv=3): each row enters 3 releases per candidate.
- disjoint + refit: the rows split into m parts, one per candidate (75% train,
  25% validation): parallel composition, so each candidate gets the whole
  selection budget, on 1/m of the rows; then the same refit.
- disjoint, each row once: as above with the whole budget and no refit; the
  model is the chosen candidate as fitted on its part.
- random stopping: Papernot & Steinke (2022), Theorem 2, with a geometric
  number of runs (eta = 1) of mean E[K]; each run trains a random candidate
  on a hold-out split (75% / 25%) and scores it; the best run's model is
  returned, or the best candidate is refitted as above. The Renyi-DP bound
  of the repeated runs (plus the refit's Gaussian RDP) is converted to
  (epsilon, delta) with Canonne, Kamath & Steinke (2020); the runs' mu is the
  largest that stays within epsilon = 2.

References: "oracle" is the candidate with the lowest mean excess risk when
fitted on all rows with the whole budget (what a free, perfect selection
would return); "default" is DPLinearRegressionGD's default clip norm at the
whole budget (no tuning). "picked best" is the share of seeds in which a
scheme chose that candidate.
"""

import argparse
import math
import time

import numpy as np
from _common import linear_data, print_table

from skdp.accounting import epsilon_from_mu, mu_from_epsilon_delta
from skdp.linear_model import DPLinearRegressionGD
from skdp.model_selection import DPGridSearchCV
from skdp.model_selection._scoring import noisy_mean_loss, row_losses

EPS, DELTA, N, P = 2.0, 1e-6, 20_000, 10
MU = mu_from_epsilon_delta(EPS, DELTA)
LOSS_BOUND = 4.0
SHARE = 0.4  # selection_share of the schemes that refit (DPGridSearchCV's default)


def grids():
    sane = 5 * math.sqrt(P + 1)
    clips = [0.5, 1, 2, 4, 8, 16, 32, 64]
    return {
        "3 clip norms (acceptance)": [{"clip_norm": c} for c in (0.01, sane, 1e4)],
        "8 clip norms": [{"clip_norm": c} for c in clips],
        "24: clip x learning rate": [{"clip_norm": c, "learning_rate": lr}
                                     for c in clips for lr in (0.02, 0.1, 0.5)],
    }


def excess_risk(est, theta):
    return float(np.sum((est.coef_ - theta) ** 2) + est.intercept_ ** 2)


def dpgd(params, mu, X, y, rng):
    eps = epsilon_from_mu(mu * (1 - 1e-12), 1e-6)
    return DPLinearRegressionGD(epsilon=eps, delta=1e-6, random_state=rng, **params).fit(X, y)


def noisy_score(est, X, y, mu, rng):
    losses = row_losses("neg_mean_squared_error", est, X, y, LOSS_BOUND)
    return -noisy_mean_loss(losses, LOSS_BOUND, mu, rng)


# -- schemes: each returns (chosen index, final model) -------------------------------

def search(cands, X, y, rng, cv, refit=True):
    s = DPGridSearchCV(DPLinearRegressionGD(), [{k: [v] for k, v in c.items()} for c in cands],
                       epsilon=EPS, delta=DELTA, cv=cv, refit=refit, selection_share=SHARE,
                       random_state=rng).fit(X, y)
    return s.best_index_, s.best_estimator_


def disjoint(cands, X, y, rng, refit):
    m = len(cands)
    mu_sel = MU * math.sqrt(SHARE) if refit else MU
    parts = np.array_split(rng.permutation(len(y)), m)
    scores, models = [], []
    for c, part in zip(cands, parts):
        n_val = len(part) // 4
        val, train = part[:n_val], part[n_val:]
        est = dpgd(c, mu_sel, X[train], y[train], rng)
        scores.append(noisy_score(est, X[val], y[val], mu_sel, rng))
        models.append(est)
    best = int(np.argmax(scores))
    if not refit:
        return best, models[best]
    return best, dpgd(cands[best], MU * math.sqrt(1 - SHARE), X, y, rng)


def rs_epsilon(mu_run, expected_k, mu_refit, delta=DELTA):
    """epsilon of geometric random stopping (Papernot & Steinke 2022, Thm 2, eta=1) + a refit."""
    log_k = math.log(expected_k)
    lam = np.linspace(1.05, 400, 4000)[:, None]
    lam_hat = np.linspace(1.0, 400, 4000)[None, :]
    # The base run is mu_run-GDP: (a, a mu**2 / 2)-RDP for every order a.
    extra = np.min((lam_hat - 1) * mu_run ** 2 + 2 * log_k / lam_hat, axis=1)[:, None]
    rdp = lam * mu_run ** 2 / 2 + extra + log_k / (lam - 1) + lam * mu_refit ** 2 / 2
    eps = rdp + (math.log(1 / delta) + (lam - 1) * np.log(1 - 1 / lam) - np.log(lam)) / (lam - 1)
    return float(eps.min())


def rs_mu(expected_k, mu_refit):
    lo, hi = 1e-4, MU
    for _ in range(40):  # bisection on the run's mu
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if rs_epsilon(mid, expected_k, mu_refit) <= EPS else (lo, mid)
    return lo


def random_stopping(cands, X, y, rng, expected_k, mu_run, mu_refit):
    k = rng.geometric(1 / expected_k)
    n_val = len(y) // 4
    best, best_score, best_model = 0, -np.inf, None
    for _ in range(k):
        c = int(rng.integers(len(cands)))
        perm = rng.permutation(len(y))
        val, train = perm[:n_val], perm[n_val:]
        est = dpgd(cands[c], mu_run, X[train], y[train], rng)
        score = noisy_score(est, X[val], y[val], mu_run, rng)
        if score > best_score:
            best, best_score, best_model = c, score, est
    if mu_refit == 0:
        return best, best_model
    return best, dpgd(cands[best], mu_refit, X, y, rng)


def run_grid(name, cands, seeds, share=SHARE, cvs=None):
    m = len(cands)
    mu_refit = MU * math.sqrt(1 - SHARE)
    rs = {f"random stopping E[K]={ek}, no refit": (ek, 0.0) for ek in (m, 3 * m)}
    rs[f"random stopping E[K]={m} + refit"] = (m, mu_refit)
    rs = {label: (ek, rs_mu(ek, refit_mu), refit_mu) for label, (ek, refit_mu) in rs.items()}
    schemes = {
        "holdout + refit (skdp)": lambda X, y, r: search(cands, X, y, r, cv=0.25),
        "3-fold + refit": lambda X, y, r: search(cands, X, y, r, cv=3),
        "disjoint + refit": lambda X, y, r: disjoint(cands, X, y, r, refit=True),
        "disjoint, each row once": lambda X, y, r: disjoint(cands, X, y, r, refit=False),
        "holdout, no refit": lambda X, y, r: search(cands, X, y, r, cv=0.25, refit=False),
    }
    for label, (ek, mu_run, refit_mu) in rs.items():
        schemes[label] = (lambda X, y, r, ek=ek, mu_run=mu_run, refit_mu=refit_mu:
                          random_stopping(cands, X, y, r, ek, mu_run, refit_mu))
    risks = {s: [] for s in schemes}
    chosen = {s: [] for s in schemes}
    full = np.zeros((len(seeds), m))
    t0 = time.perf_counter()
    for i, seed in enumerate(seeds):
        X, y, theta = linear_data(N, P, seed=seed)
        rng = np.random.default_rng(1000 + seed)
        full[i] = [excess_risk(dpgd(c, MU, X, y, rng), theta) for c in cands]
        for s, scheme in schemes.items():
            idx, model = scheme(X, y, rng)
            chosen[s].append(idx)
            risks[s].append(excess_risk(model, theta))
    best = int(np.argmin(full.mean(axis=0)))
    oracle = full[:, best].mean()
    def ratio(values):
        r = np.asarray(values) / oracle
        return f"{r.mean():.3g} +- {r.std(ddof=1) / np.sqrt(len(r)):.2g}"

    rows = [[s, float(np.mean(risks[s])), ratio(risks[s]),
             f"{np.mean(np.array(chosen[s]) == best):.0%}"] for s in schemes]
    rows.append(["best candidate at the whole budget (oracle)", float(oracle), "1", "-"])
    worst = int(np.argmax(full.mean(axis=0)))
    rows.append(["worst candidate at the whole budget", float(full[:, worst].mean()),
                 ratio(full[:, worst]), "-"])
    default = {"clip_norm": 5 * math.sqrt(P + 1)}
    if default in cands:
        d = full[:, cands.index(default)]
        rows.append(["default clip at the whole budget (no search)", float(d.mean()), ratio(d),
                     "-"])
    runs = ", ".join(f"{v[1]:.3f}" for v in rs.values())
    print_table(f"{name}: m = {m}, best = {cands[best]}, {len(seeds)} seeds "
                f"({time.perf_counter() - t0:.0f} s). Each candidate's mu: holdout "
                f"{MU * math.sqrt(SHARE / m):.3f}, 3-fold {MU * math.sqrt(SHARE / (3 * m)):.3f}, "
                f"disjoint {MU * math.sqrt(SHARE):.3f}; random-stopping runs {runs}",
                ["scheme", "excess risk", "/ oracle (mean +- s.e.)", "picked best"], rows)
    return full.mean(axis=0)[best]


def oracle_risk(cands, seeds):
    """Mean excess risk of the best candidate (by mean) fitted with the whole budget."""
    full = np.zeros((len(seeds), len(cands)))
    for i, seed in enumerate(seeds):
        X, y, theta = linear_data(N, P, seed=seed)
        rng = np.random.default_rng(1000 + seed)
        full[i] = [excess_risk(dpgd(c, MU, X, y, rng), theta) for c in cands]
    return full.mean(axis=0).min()


def sensitivity(cands, seeds, oracle, cvs, shares):
    """The implemented scheme's two knobs: validation fraction and selection share."""
    rows = []
    for cv in cvs:
        row = [cv]
        for share in shares:
            risk = []
            for seed in seeds:
                X, y, theta = linear_data(N, P, seed=seed)
                s = DPGridSearchCV(DPLinearRegressionGD(),
                                   [{k: [v] for k, v in c.items()} for c in cands],
                                   epsilon=EPS, delta=DELTA, cv=cv, selection_share=share,
                                   random_state=2000 + seed).fit(X, y)
                risk.append(excess_risk(s.best_estimator_, theta) / oracle)
            row.append(f"{np.mean(risk):.2f} +- {np.std(risk, ddof=1) / np.sqrt(len(risk)):.2f}")
        rows.append(row)
    print_table(f"holdout + refit, {len(cands)} candidates: excess risk / oracle (mean +- s.e.) "
                f"by validation fraction (cv) and selection_share, {len(seeds)} seeds",
                ["cv"] + [f"share {share}" for share in shares], rows)


def acceptance(seeds):
    """The acceptance test's setting (p = 5) on more seeds: how often is the sane clip picked?"""
    p = 5
    sane = 5 * math.sqrt(p + 1)
    picked, gaps = 0, []
    for seed in seeds:
        rng = np.random.default_rng(seed)  # the data of tests/test_model_selection.py::_linear
        theta = rng.normal(size=p)
        theta /= np.linalg.norm(theta)
        X = rng.normal(size=(N, p))
        y = X @ theta + rng.normal(size=N)
        s = DPGridSearchCV(DPLinearRegressionGD(), {"clip_norm": [0.01, sane, 1e4]},
                           epsilon=EPS, delta=DELTA, random_state=seed).fit(X, y)
        picked += s.best_params_ == {"clip_norm": sane}
        score = s.cv_results_["mean_test_score"]
        gaps.append((score[1] - max(score[0], score[2])) / s.score_noise_std_[0])
    print(f"acceptance grid (p = {p}), seeds {seeds[0]}-{seeds[-1]}: sane clip picked in "
          f"{picked} of {len(seeds)}; smallest lead over the next score: {min(gaps):.0f} "
          "score-noise standard deviations")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="first two grids only")
    parser.add_argument("--sensitivity", action="store_true",
                        help="also vary cv and selection_share of the implemented scheme")
    parser.add_argument("--only-sensitivity", action="store_true")
    parser.add_argument("--acceptance", action="store_true",
                        help="only the acceptance test's grid, on seeds 100-199")
    parser.add_argument("--cvs", type=float, nargs="+", default=[0.1, 0.25, 0.5])
    parser.add_argument("--shares", type=float, nargs="+", default=[0.1, 0.25, 0.5])
    args = parser.parse_args()
    print(f"n = {N}, p = {P}, epsilon = {EPS}, delta = {DELTA} (mu = {MU:.4f}), "
          f"selection_share = {SHARE}, loss bound {LOSS_BOUND}")
    seeds = list(range(args.seeds))
    if args.acceptance:
        acceptance(list(range(100, 200)))
        return
    for i, (name, cands) in enumerate(grids().items()):
        if args.quick and i == 2:
            break
        if args.only_sensitivity:
            if i > 0:
                sensitivity(cands, seeds, oracle_risk(cands, seeds), args.cvs, args.shares)
            continue
        oracle = run_grid(name, cands, seeds)
        if args.sensitivity and i > 0:
            sensitivity(cands, seeds, oracle, args.cvs, args.shares)


if __name__ == "__main__":
    main()
