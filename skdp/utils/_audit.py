"""Empirical privacy audits: lower bounds on epsilon (and mu) from a threshold test.

An audit runs a mechanism many times on two neighbouring datasets D and D'
(differing in one row), reduces each output to a scalar, and tests "D or
D'?" by thresholding it. Differential privacy limits how well any test can
do: an (epsilon, delta)-DP mechanism has, for every test,

    1 - delta - FNR <= exp(epsilon) * FPR,

and a mu-GDP mechanism (every skdp fit claims this, which is stronger) has

    FNR >= Phi(Phi^{-1}(1 - FPR) - mu).

With Clopper-Pearson upper bounds on the two error rates measured on trials
that did not choose the threshold, both inequalities give high-confidence
lower bounds:

    epsilon_lb = log((1 - delta - FNR_ub) / FPR_ub),
    mu_lb = Phi^{-1}(1 - FPR_ub) - Phi^{-1}(FNR_ub).

If each rate's bound fails with probability at most ``alpha``, a private
mechanism gets a lower bound above its claim with probability at most
``2 * alpha`` (union bound). The threshold (and the direction of the test)
is chosen on separate calibration trials, so it is independent of the
trials the bounds are computed on.

The (epsilon, delta) bound at a small delta needs millions of trials to
come near the claim; the mu bound tests the Gaussian-DP claim directly and
detects a mechanism whose noise is halved with a few thousand trials.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy import stats

__all__ = ["AuditResult", "audit", "clopper_pearson_upper", "lower_bounds"]


class AuditResult(NamedTuple):
    """Outcome of one audit (see :func:`audit`)."""

    epsilon_lb: float
    mu_lb: float
    fpr_ub: float
    fnr_ub: float
    threshold: float
    n_trials: int


def clopper_pearson_upper(k: int, n: int, alpha: float) -> float:
    """One-sided Clopper-Pearson upper bound on a rate, with k events in n trials.

    The true rate exceeds the bound with probability at most ``alpha``.
    """
    if k >= n:
        return 1.0
    return float(stats.beta.ppf(1.0 - alpha, k + 1, n - k))


def lower_bounds(fpr_ub: float, fnr_ub: float, delta: float) -> tuple[float, float]:
    """(epsilon_lb, mu_lb) implied by upper bounds on the two error rates."""
    num = 1.0 - delta - fnr_ub
    eps_lb = math.log(num / fpr_ub) if num > 0 and fpr_ub > 0 else 0.0
    mu_lb = float(stats.norm.isf(fpr_ub) - stats.norm.ppf(fnr_ub)) if 0 < fnr_ub < 1 else 0.0
    return max(eps_lb, 0.0), max(mu_lb, 0.0)


def _rates(threshold: float, sign: float, out_d: np.ndarray, out_d2: np.ndarray):
    """Counts of false positives (D' called D) and false negatives (D called D')."""
    fp = int(np.sum(sign * out_d2 > sign * threshold))
    fn = int(np.sum(sign * out_d <= sign * threshold))
    return fp, fn


def _choose_threshold(cal_d: np.ndarray, cal_d2: np.ndarray, n_test: int, alpha: float,
                      delta: float) -> tuple[float, float]:
    """Threshold and direction that maximise mu_lb on the calibration trials."""
    pooled = np.concatenate([cal_d, cal_d2])
    candidates = np.quantile(pooled, np.linspace(0.02, 0.98, 97))
    best = (-1.0, 0.0, 1.0)
    for sign in (1.0, -1.0):
        for t in candidates:
            fp, fn = _rates(t, sign, cal_d, cal_d2)
            # Plug the calibration rates in at the test sample size.
            fpr = clopper_pearson_upper(round(fp * n_test / len(cal_d2)), n_test, alpha)
            fnr = clopper_pearson_upper(round(fn * n_test / len(cal_d)), n_test, alpha)
            mu_lb = lower_bounds(fpr, fnr, delta)[1]
            if mu_lb > best[0]:
                best = (mu_lb, float(t), sign)
    return best[1], best[2]


def audit(run: Callable[[bool, int], float], *, n_calibration: int, n_test: int, alpha: float,
          delta: float, seed: int = 0) -> AuditResult:
    """Audit a mechanism: threshold chosen on calibration trials, bounds from test trials.

    Parameters
    ----------
    run : callable
        ``run(neighbour, seed) -> float``: fit on D (``neighbour=False``) or
        D' (``True``) with randomness from ``seed`` and return the scalar.
    n_calibration, n_test : int
        Trials per dataset for choosing the threshold and for the bounds.
    alpha : float
        Failure probability of each one-sided Clopper-Pearson bound.
    delta : float
        The delta at which epsilon is bounded (the fit's delta).
    seed : int, default=0
        Seeds of the trials are ``seed, seed + 1, ...``, all distinct.

    Returns
    -------
    AuditResult
    """
    seeds = iter(range(seed, seed + 2 * (n_calibration + n_test)))
    cal_d = np.array([run(False, next(seeds)) for _ in range(n_calibration)])
    cal_d2 = np.array([run(True, next(seeds)) for _ in range(n_calibration)])
    threshold, sign = _choose_threshold(cal_d, cal_d2, n_test, alpha, delta)
    test_d = np.array([run(False, next(seeds)) for _ in range(n_test)])
    test_d2 = np.array([run(True, next(seeds)) for _ in range(n_test)])
    fp, fn = _rates(threshold, sign, test_d, test_d2)
    fpr_ub = clopper_pearson_upper(fp, n_test, alpha)
    fnr_ub = clopper_pearson_upper(fn, n_test, alpha)
    eps_lb, mu_lb = lower_bounds(fpr_ub, fnr_ub, delta)
    return AuditResult(eps_lb, mu_lb, fpr_ub, fnr_ub, threshold, n_test)
