"""``skdp demo``: every estimator on data that ships with the install, and a budget ledger."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression, LogisticRegression

from skdp.accounting import BudgetAccountant, epsilon_from_mu, epsilon_from_rho, mu_from_rho
from skdp.density import PrivateGaussianDensity
from skdp.linear_model import (
    AdaSSPRegressor,
    DPAMBSSGDRegressor,
    DPLinearRegressionGD,
    DPSGDClassifier,
    DPSGDRegressor,
)
from skdp.mechanisms import make_rng
from skdp.moments import StreamingMomentEstimator

__all__ = ["run_demo"]

_INDENT = "   "


def _print_frame(frame: pd.DataFrame, fmt: str = "{:8.3f}") -> None:
    with pd.option_context("display.float_format", fmt.format, "display.width", 120):
        print(_INDENT + frame.to_string().replace("\n", "\n" + _INDENT))


def _diabetes():
    data = load_diabetes(as_frame=True)
    # Public rescaling from the data set's documentation (not from its
    # values): each feature was scaled to unit L2 norm over the 442 rows, so
    # sqrt(442) * x has unit variance; the target lies in [25, 346].
    return data.data * np.sqrt(442.0), data.target.astype(float), data.target


def _synthetic_table(seed, n=20_000):
    """A public synthetic table with known coefficients (no data set of this size ships)."""
    rng = make_rng(seed)
    columns = ["age", "income", "visits", "score", "tenure"]
    X = pd.DataFrame(rng.standard_normal((n, 5)) @ np.diag([1.0, 2.0, 0.5, 1.0, 3.0]),
                     columns=columns)
    truth = pd.Series([0.5, -0.25, 1.0, 0.0, 0.2], index=columns)
    y = X @ truth + 1.0 + rng.standard_normal(n)
    return X, y, truth


def _intervals_section(seed, accountant) -> dict:
    X, y, truth = _synthetic_table(seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reg = DPLinearRegressionGD(epsilon=1.0, delta=1e-6, accountant=accountant,
                                   random_state=seed).fit(X, y)
    ols = LinearRegression().fit(X, y)
    table = reg.summary()
    table.insert(0, "OLS (not private)", np.append(ols.coef_, ols.intercept_))
    table.insert(0, "truth", np.append(truth.to_numpy(), 1.0))
    lo, hi = table.columns[-2], table.columns[-1]
    covered = int(((table[lo] <= table["truth"]) & (table["truth"] <= table[hi])).sum())
    print("1. DPLinearRegressionGD: a private linear regression with confidence intervals "
          "(20,000 synthetic\n   rows, 5 features; epsilon = 1, delta = 1e-6; defaults: the "
          "bounds are found privately; 95%\n   intervals beside non-private least squares and "
          "the true coefficients)")
    _print_frame(table)
    shares = ", ".join(f"{k} {v:.3g}" for k, v in reg.privacy_shares_.items())
    kind = "preconditioned" if reg.preconditioned_ else "plain (unpreconditioned)"
    print(f"{_INDENT}{covered} of {len(table)} intervals cover the truth; {reg.n_iter_} "
          f"{kind} steps; budget shares of mu^2:\n   {shares}.")
    for w in caught:
        print(f"{_INDENT}Warning: {str(w.message).splitlines()[0]}")
    print()
    return {"table": table}


def _small_table_section(X, y, seed, accountant) -> None:
    print("2. Small tables: the diabetes data (442 patients, 10 features; each fit epsilon = 2; "
          "R^2 on the\n   442 rows)")
    rows = [["LinearRegression (not private)", LinearRegression().fit(X, y).score(X, y), "-"]]
    fits = [
        ("DPSGDRegressor (Adam, JME, nu noise)",
         DPSGDRegressor(epsilon=2.0, optimizer="adam", private_moments="jme", noise="nu",
                        batch_size=64, epochs=20, learning_rate=0.05)),
        ("AdaSSPRegressor", AdaSSPRegressor(epsilon=2.0, bounds_y=(25.0, 346.0))),
    ]
    scaled = (y - 185.5) / 160.5  # the documented range [25, 346] mapped to [-1, 1]
    for name, est in fits:
        target = scaled if isinstance(est, DPSGDRegressor) else y  # DP-SGD takes no bounds
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.set_params(accountant=accountant, random_state=seed).fit(X, target)
        rows.append([name, est.score(X, target), f"{est.privacy_spent_.epsilon:.2f}"])
    _print_frame(pd.DataFrame(rows, columns=["estimator", "R^2", "epsilon"]).set_index(
        "estimator"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its warnings are summarised in words below
        reg = DPLinearRegressionGD(epsilon=2.0, bounds_y=(25.0, 346.0), accountant=accountant,
                                   random_state=seed).fit(X, y)
    ratio = float(np.median(reg.bse_[:-1] / _ols_standard_errors(X, y)[:-1]))
    print(f"{_INDENT}DPLinearRegressionGD is made for thousands of rows. Here its 95% intervals "
          f"are {ratio:.0f} times\n   as wide as OLS's (median over the features): the six "
          "blood-serum columns are nearly\n   collinear, and 442 rows at epsilon = 2 cannot pin "
          "them down. Its intervals say so; AdaSSP's\n   ridge and DP-SGD trade that honesty "
          "(they are biased) for a better fit here. Tune on private\n   data only with a "
          "BudgetAccountant or DPGridSearchCV.")
    # DP-AMBSSGD needs tens of thousands of rows: a synthetic table.
    rng = make_rng(seed)
    Xs = rng.standard_normal((100_000, 10))
    theta = np.full(10, 0.3)
    ys = Xs @ theta + 0.1 * rng.standard_normal(100_000)
    amb = DPAMBSSGDRegressor(epsilon=1.0, accountant=accountant, random_state=seed).fit(Xs, ys)
    ols = LinearRegression().fit(Xs, ys)
    print(f"{_INDENT}DPAMBSSGDRegressor needs large data: on 100,000 synthetic rows (d = 10, "
          f"epsilon = 1) its\n   coefficient error is {np.linalg.norm(amb.coef_ - theta):.4f} "
          f"(OLS {np.linalg.norm(ols.coef_ - theta):.4f}), in one pass with "
          f"{amb.n_iter_} private clip norms.\n")


def _ols_standard_errors(X, y) -> np.ndarray:
    """Classical OLS standard errors (coefficients, then the intercept): not private."""
    Z = np.column_stack([np.asarray(X, dtype=float), np.ones(len(X))])
    target = np.asarray(y, dtype=float)
    beta, *_ = np.linalg.lstsq(Z, target, rcond=None)
    resid = target - Z @ beta
    sigma2 = resid @ resid / (Z.shape[0] - Z.shape[1])
    return np.sqrt(sigma2 * np.diag(np.linalg.inv(Z.T @ Z)))


def _classifier_section(X, target, seed, accountant) -> None:
    # A public clinical threshold, not a statistic of the data.
    labels = np.where(target > 150, "progressed", "stable")
    clf = DPSGDClassifier(epsilon=2.0, classes=["progressed", "stable"], optimizer="adam",
                          noise="nu", batch_size=64, epochs=20, learning_rate=0.05,
                          accountant=accountant, random_state=seed).fit(X, labels)
    ref = LogisticRegression(max_iter=1000).fit(X, labels)
    print("3. DPSGDClassifier: disease progression above 150 (public threshold), "
          "epsilon = 2")
    print(f"{_INDENT}accuracy: private {clf.score(X, labels):.3f}, non-private logistic "
          f"regression {ref.score(X, labels):.3f}")
    print(f"{_INDENT}P(progressed) for the first 3 patients: "
          f"{np.round(clf.predict_proba(X.iloc[:3])[:, 0], 2).tolist()}\n")


def _accounting_section() -> None:
    print("4. Exact accounting (one Gaussian mechanism, delta = 1e-6)")
    print(f"{_INDENT}{'zCDP rho':>9} {'mu':>8} {'eps (classic zCDP)':>19} {'eps (exact GDP)':>16}")
    for rho in (0.015, 0.1, 0.5):
        mu = mu_from_rho(rho)
        print(f"{_INDENT}{rho:>9.3f} {mu:>8.4f} {epsilon_from_rho(rho, 1e-6):>19.3f} "
              f"{epsilon_from_mu(mu, 1e-6):>16.3f}")
    print(f"{_INDENT}The same noise buys a smaller epsilon when accounted exactly.\n")


def _stream_section(X, seed, accountant) -> dict:
    # One release of the diabetes table's density, against the non-private Gaussian.
    Xa = np.asarray(X)
    with warnings.catch_warnings(record=True) as caught:  # told below, in the demo's words
        warnings.simplefilter("always")
        dens = PrivateGaussianDensity(epsilon=2.0, accountant=accountant,
                                      random_state=seed).fit(Xa)
    below = [str(w.message).split(":")[0] for w in caught if "below the noise" in str(w.message)]
    for w in caught:  # any other warning is shown as it is
        if "below the noise" not in str(w.message):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    from scipy.stats import multivariate_normal

    nonprivate = multivariate_normal(Xa.mean(axis=0), np.cov(Xa.T, bias=True)).logpdf(Xa).mean()
    moments = StreamingMomentEstimator(epsilon=1.0, workload="average", accountant=accountant,
                                       random_state=seed).fit(Xa)
    err1 = np.abs(moments.first_moment_ - Xa.mean(axis=0)).max()
    err2 = np.abs(moments.second_moment_ - Xa.T @ Xa / len(Xa)).max()
    print("5. One release of a table's moments (the diabetes features, 442 rows, d = 10; the "
          "row-norm bound\n   found privately with 5% of the budget):\n"
          f"   StreamingMomentEstimator, epsilon = 1: largest error {err1:.3f} on the mean, "
          f"{err2:.3f} on the second moment\n   (features of unit variance).\n"
          "   PrivateGaussianDensity, epsilon = 2: mean log-likelihood "
          f"{dens.score(Xa):.2f} (non-private Gaussian: {nonprivate:.2f}); "
          f"norm_bound_ = {dens.norm_bound_:.2f}." + (
              f"\n   It warns: {below[0]}\n   (x4 to x9 are the blood serum measures s1 to s6, "
              "several of them nearly collinear).\n" if below else "\n"))
    # A synthetic stream of 400 calls of 5 rows in d = 4, inside the unit ball.
    rng = make_rng(seed)
    d, calls, rows = 4, 400, 5
    n = calls * rows
    L = np.tril(rng.standard_normal((d, d))) / 4 + np.eye(d) / 4
    stream = 0.25 + rng.standard_normal((n, d)) @ L.T / 2
    stream /= np.maximum(1.0, np.linalg.norm(stream, axis=1))[:, None]
    t = rows * np.arange(1, calls + 1)[:, None]
    mean = np.cumsum(stream, axis=0)[rows - 1::rows] / t
    second = np.cumsum(stream[:, :, None] * stream[:, None, :], axis=0)[rows - 1::rows] / \
        t[:, :, None]
    cov = second - mean[:, :, None] * mean[:, None, :]
    curves = {}
    for method in ("jme", "pp"):
        dens = PrivateGaussianDensity(epsilon=1.0, method=method, norm_bound=1.0,
                                      n_steps=calls if method == "jme" else n,
                                      store_history=True, accountant=accountant,
                                      random_state=seed)
        for block in np.split(stream, calls):
            dens.partial_fit(block)
        locs, covs = dens.locations_, dens.covariances_
        if method == "pp":  # PP steps row by row: keep the release after each call
            locs, covs = locs[rows - 1::rows], covs[rows - 1::rows]
        curves[method] = {"mean": np.linalg.norm(locs - mean, axis=1),
                          "cov": np.linalg.norm(covs - cov, axis=(1, 2))}
    steps = [10, 50, 100, 400]
    print(f"6. Continual release: a running private mean and covariance, released after each "
          f"of {calls} calls of {rows} rows\n   (d = {d}, epsilon = 1 per stream, "
          "correlated BLT noise; error against the true running values)")
    cols = {}
    for method, name in (("jme", "JME"), ("pp", "PP (debiased)")):
        c = curves[method]
        cols[f"{name} mean err"] = [c["mean"][s - 1] for s in steps]
        cols[f"{name} cov err"] = [c["cov"][s - 1] for s in steps]
    _print_frame(pd.DataFrame(cols, index=pd.Index(steps, name="call")), "{:9.4f}")
    print(f"{_INDENT}PrivateGaussianDensity.partial_fit: one release per call; JME privatises "
          "the second moment in\n   the same Gaussian mechanism as the mean; PP squares the "
          "noisy rows, whose squared noise\n   swamps a covariance of this size at epsilon 1: its "
          "release stays at the covariance of\n   largest trace that rows in the ball allow (PP pays "
          "off at low privacy in high dimension).\n")
    return curves


def _plots(directory: str, table: pd.DataFrame, curves: dict) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 4))
    pos = np.arange(len(table))
    lo, hi = table.columns[-2], table.columns[-1]
    ax.errorbar(pos, table["coef"], yerr=[table["coef"] - table[lo], table[hi] - table["coef"]],
                fmt="o", capsize=3, label="DPLinearRegressionGD, 95% interval")
    ax.plot(pos + 0.15, table["OLS (not private)"], "x", color="black", label="OLS (not private)")
    ax.set_xticks(pos, table.index, rotation=45)
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_title("20,000 synthetic rows: private coefficients (epsilon = 1)")
    ax.legend()
    fig.tight_layout()
    files = [out / "coefficients.png"]
    fig.savefig(files[0], dpi=120)
    plt.close(fig)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for method, name in (("jme", "JME"), ("pp", "PP (debiased)")):
        t = np.arange(1, curves[method]["mean"].shape[0] + 1)
        axes[0].loglog(t, curves[method]["mean"], label=name)
        axes[1].loglog(t, curves[method]["cov"], label=name)
    axes[0].set_title("running mean: error")
    axes[1].set_title("running covariance: error")
    for ax in axes:
        ax.set_xlabel("calls (5 rows each)")
        ax.legend()
    fig.tight_layout()
    files.append(out / "continual_release.png")
    fig.savefig(files[1], dpi=120)
    plt.close(fig)
    return files


def run_demo(random_state: int | None = 0, plots: str | None = None) -> int:
    """Print the demo report (and write figures to ``plots``); return the exit code."""
    if plots is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("skdp demo: --plots needs matplotlib, which is not installed; "
                  "pip install 'skdp[plot]' (or pip install matplotlib).", file=sys.stderr)
            return 2
    accountant = BudgetAccountant(epsilon=40.0, delta=1e-4)
    X, y, target = _diabetes()
    print("skdp demo: every estimator, on synthetic tables and streams and on data that ships "
          "with the\ninstall (scikit-learn's diabetes data)\n")
    table = _intervals_section(random_state, accountant)["table"]
    _small_table_section(X, y, random_state, accountant)
    _classifier_section(X, target, random_state, accountant)
    _accounting_section()
    curves = _stream_section(X, random_state, accountant)
    eps, delta = accountant.spent()
    print(f"7. Budget ledger: {len(accountant.ledger)} fits charged one BudgetAccountant; "
          f"composed exactly they spend\n   epsilon = {eps:.2f} at delta = {delta:g} "
          "(each fit's own guarantee is in its privacy_spent_).")
    for charge in accountant.ledger:
        print(f"{_INDENT}{charge.label:<28} epsilon {epsilon_from_mu(charge.mu, 1e-6):6.2f} "
              "at delta 1e-6")
    if plots is not None:
        files = _plots(plots, table, curves)
        print("\nFigures: " + ", ".join(str(f) for f in files))
    return 0
