"""zCDP accounting, for secure mode's discrete Gaussian releases.

The discrete Gaussian mechanism is rho-zCDP with ``rho = sensitivity**2 /
(2 sigma**2)`` (Canonne, Kamath and Steinke 2020), like the continuous one,
but it is not exactly mu-GDP. In secure mode skdp therefore states its
guarantees in zCDP: a fit calibrated to ``mu`` is ``mu**2 / 2``-zCDP, zCDP
guarantees add, and the budget's ``(epsilon, delta)`` is met through the
conversion of :func:`epsilon_from_rho_tight`.

:func:`budget_mu` and :func:`spent_epsilon` are the pair every estimator
uses: mu-GDP and its exact curve by default, zCDP in secure mode.
"""

from __future__ import annotations

import math

from scipy.optimize import brentq, minimize_scalar

from skdp._secure import is_secure_mode
from skdp.accounting._gdp import _check_real, epsilon_from_mu, mu_from_epsilon_delta

__all__ = ["budget_mu", "epsilon_from_rho_tight", "rho_from_epsilon_delta", "spent_epsilon"]


def _epsilon_at_order(rho: float, log_delta: float, alpha: float) -> float:
    # Renyi DP of order alpha with alpha * rho, converted as in Canonne, Kamath
    # and Steinke (2020), Proposition 12.
    return (alpha * rho + math.log1p(-1.0 / alpha)
            - (log_delta + math.log(alpha)) / (alpha - 1.0))


def epsilon_from_rho_tight(rho: float, delta: float) -> float:
    """Smallest epsilon such that rho-zCDP implies (epsilon, delta)-DP, by the Renyi conversion.

    ``epsilon = min over alpha > 1 of alpha rho + log(1 - 1/alpha) -
    (log(delta) + log(alpha)) / (alpha - 1)`` (Canonne, Kamath and Steinke
    2020, Proposition 12), minimised over a continuous alpha; tighter than
    :func:`~skdp.accounting.epsilon_from_rho` and the same conversion
    ``dp-accounting`` applies on its grid of orders.

    Parameters
    ----------
    rho : float
        zCDP parameter, >= 0.
    delta : float
        In (0, 1).

    Returns
    -------
    float

    Examples
    --------
    >>> from skdp.accounting import epsilon_from_rho_tight, epsilon_from_rho
    >>> epsilon_from_rho_tight(0.5, 1e-5) < epsilon_from_rho(0.5, 1e-5)
    True
    """
    rho = _check_real("rho", rho, closed_low=True)
    delta = _check_real("delta", delta, high=1.0)
    if rho == 0.0:
        return 0.0
    log_delta = math.log(delta)
    # The minimiser is near alpha = 1 + sqrt(log(1/delta) / rho); search on
    # log(alpha - 1) around it, where the objective is unimodal.
    guess = math.log(math.sqrt(-log_delta / rho))
    res = minimize_scalar(lambda u: _epsilon_at_order(rho, log_delta, 1.0 + math.exp(u)),
                          bounds=(guess - 8.0, guess + 8.0), method="bounded",
                          options={"xatol": 1e-10})
    return max(float(res.fun), 0.0)


def rho_from_epsilon_delta(epsilon: float, delta: float) -> float:
    """Largest rho such that rho-zCDP implies (epsilon, delta)-DP.

    The inverse of :func:`epsilon_from_rho_tight`, rounded down.

    Parameters
    ----------
    epsilon : float
        In (0, inf).
    delta : float
        In (0, 1).

    Returns
    -------
    float

    Examples
    --------
    >>> from skdp.accounting import epsilon_from_rho_tight, rho_from_epsilon_delta
    >>> rho = rho_from_epsilon_delta(1.0, 1e-6)
    >>> round(epsilon_from_rho_tight(rho, 1e-6), 9)
    1.0
    """
    epsilon = _check_real("epsilon", epsilon)
    delta = _check_real("delta", delta, high=1.0)
    high = 1.0
    while epsilon_from_rho_tight(high, delta) < epsilon:
        high *= 2.0
    low = high / 2.0
    while epsilon_from_rho_tight(low, delta) > epsilon:
        low /= 2.0
    # Root a little below the crossing: the answer must not overshoot.
    root = brentq(lambda r: epsilon_from_rho_tight(r, delta) - epsilon, low, high,
                  xtol=1e-300, rtol=1e-13, maxiter=500)
    return root * (1.0 - 1e-10)


def budget_mu(epsilon: float, delta: float) -> float:
    """The mu that calibrates a fit's noise for a budget (epsilon, delta).

    By default the largest mu-GDP that implies (epsilon, delta)-DP
    (:func:`~skdp.accounting.mu_from_epsilon_delta`); in secure mode
    ``sqrt(2 rho)`` for the largest rho-zCDP that does
    (:func:`rho_from_epsilon_delta`).

    Parameters
    ----------
    epsilon : float
    delta : float

    Returns
    -------
    float
    """
    if is_secure_mode():
        return math.sqrt(2.0 * rho_from_epsilon_delta(epsilon, delta))
    return mu_from_epsilon_delta(epsilon, delta)


def spent_epsilon(mu: float, delta: float, *, zcdp: bool | None = None) -> float:
    """The epsilon at delta of a fit calibrated to mu (the inverse of :func:`budget_mu`).

    Parameters
    ----------
    mu : float
    delta : float
    zcdp : bool or None, default=None
        Whether the guarantee is ``mu**2 / 2``-zCDP (secure mode) rather than
        mu-GDP; None reads the current mode.

    Returns
    -------
    float
    """
    zcdp = is_secure_mode() if zcdp is None else zcdp
    if zcdp:
        return epsilon_from_rho_tight(mu * mu / 2.0, delta)
    return epsilon_from_mu(mu, delta)
