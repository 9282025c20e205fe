"""Joint moment estimation (JME): Algorithm 1 and lambda-JME (Algorithm 3) of Kalinin et al. 2025.

JME privatises the stream ``x_t`` and the stream ``x_t (x) x_t`` with two
independent Gaussian noises whose scales come from one *joint* sensitivity
(Lemma 3.5), so that both moments together cost what the first costs alone
("privacy for free").
"""

from __future__ import annotations

import functools
import math

import numpy as np

__all__ = ["c_d", "joint_sensitivity", "jme_noise_stds", "r_d"]

_NU_1 = (11.0 + 5.0 * math.sqrt(5.0)) / 8.0  # threshold of r_1: r_1(nu) = 4 up to here


def r_d(nu: float, d: int) -> float:
    """``sup_{||x||, ||y|| <= 1} ||x - y||^2 + nu ||x (x) x - y (x) y||^2`` (Kalinin et al. 2025, eq. 7).

    Parameters
    ----------
    nu : float
        Weight of the second moment, >= 0.
    d : int
        Dimension, >= 1.

    Returns
    -------
    float

    Examples
    --------
    >>> from skdp.moments import r_d
    >>> r_d(0.5, 3), r_d(2.0, 3)
    (4.0, 6.25)
    """
    nu = float(nu)
    if not (np.isfinite(nu) and nu >= 0):
        raise ValueError(f"nu must be finite and >= 0, got {nu}.")
    if d == 1:
        if nu <= _NU_1:
            return 4.0
        tau = math.sqrt(1.0 - 2.0 / nu)
        return (3.0 - tau) ** 2 * (nu * tau + 1.0 + nu) / 8.0
    if nu <= 0.5:
        return 4.0
    return 2.0 + 2.0 * nu + 1.0 / (2.0 * nu)


def c_d(d: int) -> float:
    """The constant of Algorithm 1: ``1 / c_d`` is the largest nu with ``r_d(nu) = 4``.

    2 for d >= 2 and ``8 / (11 + 5 sqrt 5)`` for d = 1.

    Parameters
    ----------
    d : int
        Dimension, >= 1.

    Returns
    -------
    float
    """
    return 1.0 / _NU_1 if d == 1 else 2.0


def joint_sensitivity(col_norms1, col_norms2, lam: float, d: int, norm_bound: float) -> float:
    """Replace-one L2 sensitivity of ``(C1 X, sqrt(lam) C2 (X (x) X))`` (Kalinin et al. 2025, Lemma 3.5).

    A replaced row k moves column k of both products, so the squared
    sensitivity is ``max_k zeta^2 a_k^2 r_d(lam zeta^2 b_k^2 / a_k^2)`` with
    ``a_k, b_k`` the norms of column k of C1 and C2. Lemma 3.5 states the
    value at k = 0 for matrices with decreasing column norms; taking the
    maximum over k makes it hold for any C1, C2. The diagonal-only release
    ``(C1 X, sqrt(lam) C2 (X o X))`` has the same sensitivity (Theorem 4.3).

    Parameters
    ----------
    col_norms1, col_norms2 : array-like of shape (n,)
        Column norms of C1 and C2 (a single value each when the columns are
        decreasing, or for identical C1 = C2).
    lam : float
        Weight lambda > 0 of the second moment.
    d : int
    norm_bound : float
        zeta: every row has ``||x|| <= zeta``.

    Returns
    -------
    float

    Examples
    --------
    >>> from skdp.moments import c_d, joint_sensitivity
    >>> joint_sensitivity([1.0], [1.0], lam=1 / c_d(5), d=5, norm_bound=1.0)  # privacy for free
    2.0
    """
    a, b = np.broadcast_arrays(np.atleast_1d(np.asarray(col_norms1, dtype=float)),
                               np.atleast_1d(np.asarray(col_norms2, dtype=float)))
    a, b = a.ravel(), b.ravel()
    z2 = float(norm_bound) ** 2
    best = 0.0
    both = a > 0
    if np.any(both):
        # r_d depends on the column only through the ratio b / a: evaluate each
        # distinct ratio once (a workload's columns share a handful of them).
        ratio, inverse = np.unique(b[both] / a[both], return_inverse=True)
        r = np.array([r_d(lam * z2 * q * q, d) for q in ratio])
        best = float(np.max(z2 * a[both] ** 2 * r[inverse.ravel()]))
    if np.any(~both):
        # A column that moves only the second moment: lam ||x x^T - y y^T||^2
        # <= lam * 2 zeta^4 (zeta^4 for d = 1), the limit of a^2 r_d(.) as a -> 0.
        best = max(best, float(np.max(lam * (2.0 if d > 1 else 1.0) * z2 * z2 * b[~both] ** 2)))
    return math.sqrt(best)


def jme_noise_stds(mu: float, d: int, norm_bound: float, col_norms1, col_norms2,
                   lam: float | None = None) -> tuple[float, float, float]:
    """Noise stds of JME for mu-GDP.

    The first-moment stream gets ``s / mu`` times ``C1^{-1} Z1``, the second
    ``s / (mu sqrt(lam))`` times ``C2^{-1} Z2``, with s the joint sensitivity.

    Parameters
    ----------
    mu : float
        GDP budget.
    d : int
    norm_bound : float
    col_norms1, col_norms2 : array-like
        See :func:`joint_sensitivity`.
    lam : float or None
        None is Algorithm 1: ``lam = max||C1[:, k]||^2 / (c_d zeta^2
        max||C2[:, k]||^2)``, the largest weight at which the joint
        sensitivity (for C1 = C2, or decreasing columns) equals that of the
        first moment alone, ``2 zeta ||C1||_{1->2}``. A number is lambda-JME
        (Algorithm 3).

    Returns
    -------
    std1, std2, lam : float
    """
    a = float(np.max(col_norms1))
    b = float(np.max(col_norms2))
    if lam is None:
        lam = a**2 / (c_d(d) * float(norm_bound) ** 2 * b**2)
    lam = float(lam)
    if not (np.isfinite(lam) and lam > 0):
        raise ValueError(f"lam must be positive and finite, got {lam}.")
    s = joint_sensitivity(col_norms1, col_norms2, lam, d, norm_bound)
    return s / mu, s / (mu * math.sqrt(lam)), lam


def density_lambda(d: int, norm_bound: float) -> float:
    """The lambda-JME weight that minimises the expected log-likelihood loss of a fitted Gaussian.

    A Gaussian fitted from noisy moments loses, to second order, about
    ``tr(Sigma^-1 Cov(mean)) / 2 + ||Sigma^{-1/2} E Sigma^{-1/2}||_F**2 / 4``
    in expected log-likelihood (E the covariance's noise). For lambda-JME
    the two noise variances are ``s**2 / mu**2`` and ``s**2 / (lam mu**2)``
    with ``s**2 = zeta**2 r_d(lam zeta**2)``, so the loss is proportional to
    ``r_d(u) (1 + c / u)`` in ``u = lam zeta**2``, where ``c`` weighs the two
    moments' errors. The weight depends on the unknown covariance; skdp
    evaluates it at a public proxy, rows that fill the ball isotropically
    about 0 (``Sigma = zeta**2 / d I``), which gives ``c = d (d + 1) / 4``
    (the d(d+1)/2 free entries of a symmetric noise against the d entries
    of the mean). The loss is flat near its minimum (within 1% of the best
    log-likelihood over a factor of 4 in lam on a d = 5 benchmark), so the
    proxy costs little.

    Parameters
    ----------
    d : int
    norm_bound : float

    Returns
    -------
    float
        lam, with ``lam * norm_bound**2`` the minimiser u (about 3 for d = 5).

    Examples
    --------
    >>> from skdp.moments import density_lambda
    >>> round(density_lambda(5, 1.0), 1)
    3.0
    """
    return _density_u(int(d)) / float(norm_bound) ** 2


@functools.lru_cache(maxsize=64)
def _density_u(d: int) -> float:
    """The minimiser u of ``r_d(u) (1 + c / u)`` on a log grid (public: depends on d only)."""
    c = d * (d + 1) / 4.0
    grid = np.exp(np.linspace(math.log(1e-2), math.log(1e4), 2001))
    loss = np.array([r_d(u, d) for u in grid]) * (1.0 + c / grid)
    return float(grid[int(np.argmin(loss))])
