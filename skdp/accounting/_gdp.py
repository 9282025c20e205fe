"""Exact Gaussian differential privacy (mu-GDP) conversions.

Every mechanism in skdp is a Gaussian mechanism or an adaptive composition of
Gaussian mechanisms. Such a composition is exactly mu-GDP (Dong, Roth & Su,
2022) with ``mu = sqrt(sum_i (sensitivity_i / noise_std_i) ** 2)``, and mu-GDP
is equivalent to the family of (epsilon, delta)-DP guarantees

    delta(epsilon) = Phi(-epsilon / mu + mu / 2)
                     - exp(epsilon) * Phi(-epsilon / mu - mu / 2),

which is also the exact privacy profile of one Gaussian mechanism (Balle &
Wang, 2018, Theorem 8). Calibrating noise on this curve is therefore exact,
and tighter than the zCDP conversion used in the papers.
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np
from scipy.optimize import brentq
from scipy.special import erfcx, log_ndtr

__all__ = [
    "compose_mu",
    "delta_from_mu",
    "epsilon_from_mu",
    "epsilon_from_rho",
    "gaussian_noise_std",
    "mu_from_epsilon_delta",
    "mu_from_rho",
    "rho_from_mu",
]

_SQRT2 = math.sqrt(2.0)
# Root finding runs on log(delta); brentq stops when the bracket is this small
# relative to the root, far below the 1e-9 round-trip accuracy we promise.
_RTOL = 1e-14


def _check_real(name: str, value, *, low: float = 0.0, high: float = math.inf,
                closed_low: bool = False) -> float:
    """Return ``value`` as a float, or raise a ValueError that names it."""
    if isinstance(value, bool) or not isinstance(value, (Real, np.number)):
        raise ValueError(f"{name} must be a real number, got {value!r}.")
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"{name} must be finite, got {value}.")
    below = value < low if closed_low else value <= low
    if below or value >= high:
        left = "[" if closed_low else "("
        hi = "inf" if high == math.inf else f"{high:g}"
        raise ValueError(f"{name} must be in {left}{low:g}, {hi}), got {value}.")
    return value


def _log_delta(mu: float, epsilon: float) -> float:
    """log of the GDP privacy profile delta(epsilon) for mu-GDP, computed stably.

    With x = epsilon / mu and a = x - mu / 2, b = x + mu / 2 the profile is
    Phi(-a) - exp(epsilon) Phi(-b). Because b**2 - a**2 = 2 epsilon, writing
    Phi(-z) = erfcx(z / sqrt 2) exp(-z**2 / 2) / 2 gives, for a > 0,

        delta = exp(-a**2 / 2) / 2 * (erfcx(a / sqrt 2) - erfcx(b / sqrt 2)),

    which neither overflows (exp(epsilon) is never formed) nor underflows for
    tiny delta.
    """
    x = epsilon / mu
    a = x - mu / 2.0
    b = x + mu / 2.0
    if a > 0.0:
        bracket = erfcx(a / _SQRT2) - erfcx(b / _SQRT2)
        if bracket <= 0.0:  # beyond double precision: delta is 0 to machine accuracy
            return -math.inf
        return math.log(0.5) - 0.5 * a * a + math.log(bracket)
    # Phi(-a) >= 1/2 here, so the plain formula has no cancellation problem.
    first = math.exp(log_ndtr(-a))
    second = math.exp(epsilon + log_ndtr(-b))
    return math.log(first - second)


def delta_from_mu(mu: float, epsilon: float) -> float:
    """Smallest delta such that a mu-GDP mechanism is (epsilon, delta)-DP.

    Parameters
    ----------
    mu : float
        GDP parameter, in (0, inf).
    epsilon : float
        Privacy loss, in [0, inf).

    Returns
    -------
    delta : float
        ``Phi(-epsilon/mu + mu/2) - exp(epsilon) Phi(-epsilon/mu - mu/2)``.

    Examples
    --------
    >>> from skdp.accounting import delta_from_mu
    >>> round(delta_from_mu(1.0, 1.0), 6)
    0.126937
    """
    mu = _check_real("mu", mu)
    epsilon = _check_real("epsilon", epsilon, closed_low=True)
    return math.exp(_log_delta(mu, epsilon))


def epsilon_from_mu(mu: float, delta: float) -> float:
    """Smallest epsilon such that a mu-GDP mechanism is (epsilon, delta)-DP.

    Parameters
    ----------
    mu : float
        GDP parameter, in (0, inf).
    delta : float
        Target delta, in (0, 1).

    Returns
    -------
    epsilon : float
        The exact epsilon (0 when ``delta`` is already at least
        ``delta_from_mu(mu, 0)``).

    Examples
    --------
    The rho = 0.015 zCDP budget of Brown et al. (2024) is mu = sqrt(2 rho):

    >>> from skdp.accounting import epsilon_from_mu, mu_from_rho
    >>> round(epsilon_from_mu(mu_from_rho(0.015), 1e-6), 3)
    0.715
    """
    mu = _check_real("mu", mu)
    delta = _check_real("delta", delta, high=1.0)
    log_target = math.log(delta)
    if _log_delta(mu, 0.0) <= log_target:
        return 0.0
    # delta(epsilon) decreases in epsilon; Gaussian tail bounds give an upper
    # bracket, doubled until it brackets the root.
    high = mu * mu / 2.0 + mu * math.sqrt(2.0 * math.log(1.0 / delta)) + 1.0
    while _log_delta(mu, high) > log_target:
        high *= 2.0
    return brentq(lambda e: _log_delta(mu, e) - log_target, 0.0, high,
                  xtol=1e-300, rtol=_RTOL, maxiter=500)


def mu_from_epsilon_delta(epsilon: float, delta: float) -> float:
    """Largest mu such that mu-GDP implies (epsilon, delta)-DP.

    A Gaussian mechanism with sensitivity ``s`` and noise std ``s / mu`` is
    then exactly (epsilon, delta)-DP, and so is any adaptive composition of
    Gaussian mechanisms whose composed mu (:func:`compose_mu`) equals it.

    Parameters
    ----------
    epsilon : float
        Privacy loss, in (0, inf).
    delta : float
        Failure probability, in (0, 1).

    Returns
    -------
    mu : float

    Examples
    --------
    >>> from skdp.accounting import mu_from_epsilon_delta
    >>> round(mu_from_epsilon_delta(1.0, 1e-5), 4)
    0.2681
    """
    epsilon = _check_real("epsilon", epsilon)
    delta = _check_real("delta", delta, high=1.0)
    log_target = math.log(delta)
    # delta(mu) increases in mu at fixed epsilon: bracket the root by halving
    # or doubling from mu = 1.
    def f(m):
        return _log_delta(m, epsilon) - log_target

    low, high = 1.0, 1.0
    if f(1.0) > 0.0:
        low = 0.5
        while f(low) > 0.0:
            low, high = low / 2.0, low
    else:
        high = 2.0
        while f(high) < 0.0:
            low, high = high, high * 2.0
    return brentq(f, low, high,
                  xtol=1e-300, rtol=_RTOL, maxiter=500)


def gaussian_noise_std(sensitivity: float, epsilon: float, delta: float) -> float:
    """Noise standard deviation that makes a Gaussian mechanism (epsilon, delta)-DP.

    Exact (the analytic Gaussian mechanism of Balle & Wang, 2018): the
    mechanism ``f(D) + N(0, std**2 I)`` with L2 sensitivity ``sensitivity``
    is (epsilon, delta)-DP and no smaller std is.

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity of the released function under the neighbouring
        relation in use (skdp: one row replaced), in (0, inf).
    epsilon : float
        In (0, inf).
    delta : float
        In (0, 1).

    Returns
    -------
    std : float
        ``sensitivity / mu_from_epsilon_delta(epsilon, delta)``.

    Examples
    --------
    >>> from skdp.accounting import gaussian_noise_std
    >>> round(gaussian_noise_std(1.0, 1.0, 1e-5), 4)
    3.7306
    """
    sensitivity = _check_real("sensitivity", sensitivity)
    return sensitivity / mu_from_epsilon_delta(epsilon, delta)


def compose_mu(*mus: float) -> float:
    """Compose GDP guarantees: ``sqrt(sum(mu_i ** 2))``.

    Adaptive composition of mu_i-GDP mechanisms is exactly
    ``sqrt(sum mu_i**2)``-GDP (Dong, Roth & Su, 2022, Corollary 3.3).

    Parameters
    ----------
    *mus : float
        GDP parameters in [0, inf) (0 is a mechanism that reveals nothing).

    Returns
    -------
    mu : float

    Examples
    --------
    >>> from skdp.accounting import compose_mu
    >>> compose_mu(3.0, 4.0)
    5.0
    """
    total = 0.0
    for i, m in enumerate(mus):
        m = _check_real(f"mus[{i}]", m, closed_low=True)
        total += m * m
    return math.sqrt(total)


def mu_from_rho(rho: float) -> float:
    """GDP parameter of a Gaussian mechanism that is rho-zCDP: ``sqrt(2 rho)``.

    For Gaussian mechanisms (and their compositions) rho-zCDP and mu-GDP with
    ``rho = mu**2 / 2`` describe the same noise; the GDP curve is exact.

    Parameters
    ----------
    rho : float
        zCDP parameter, >= 0.

    Returns
    -------
    float

    Examples
    --------
    >>> from skdp.accounting import mu_from_rho
    >>> round(mu_from_rho(0.5), 12)
    1.0
    """
    rho = _check_real("rho", rho)
    return math.sqrt(2.0 * rho)


def rho_from_mu(mu: float) -> float:
    """zCDP parameter of a mu-GDP Gaussian mechanism: ``mu**2 / 2``.

    Parameters
    ----------
    mu : float
        GDP parameter, >= 0.

    Returns
    -------
    float

    Examples
    --------
    >>> from skdp.accounting import rho_from_mu
    >>> rho_from_mu(1.0)
    0.5
    """
    mu = _check_real("mu", mu)
    return mu * mu / 2.0


def epsilon_from_rho(rho: float, delta: float) -> float:
    """Classic zCDP to (epsilon, delta) conversion ``rho + 2 sqrt(rho log(1/delta))``.

    Bun & Steinke (2016), Proposition 1.3. Kept for comparison with the
    papers, which state their budgets this way; it is loose. For Gaussian
    noise use ``epsilon_from_mu(mu_from_rho(rho), delta)``, which is exact.

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
    >>> from skdp.accounting import epsilon_from_rho
    >>> round(epsilon_from_rho(0.015, 1e-6), 3)
    0.925
    """
    rho = _check_real("rho", rho)
    delta = _check_real("delta", delta, high=1.0)
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))
