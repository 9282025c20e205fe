"""Sensitivity of the matrix mechanism when every row takes part several times.

With several epochs over the data in a fixed cyclic order, row i enters the
steps ``P_i = {i, i + k, i + 2k, ...}`` (k steps per epoch). Replacing it
changes the stream of clipped-gradient sums G by a matrix D whose rows
``D_t`` (t in P_i) have norm at most ``2 zeta`` and whose other rows are 0.
The change of ``C G`` is then bounded by

    ||C D||_F^2 = sum_{s, t in P_i} (C^T C)_{st} <D_s, D_t>
                <= 4 zeta^2 sum_{s, t in P_i} |(C^T C)_{st}|,

so the replace-one sensitivity is ``2 zeta`` times the *participation
factor* ``sqrt(max_i sum_{s, t in P_i} |(C^T C)_{st}|)`` (the multi-epoch
bound of Choquette-Choo et al., 2023, for a fixed participation pattern).
It is exact when ``C^T C`` has no negative entries (all the Toeplitz
families, BLT included: the coefficients of C are positive) and every D_t is the same
vector. For C = I it is ``sqrt(epochs)``: independent noise composes
exactly. With one participation it is the largest column norm of C.
"""

from __future__ import annotations

import math

import numpy as np

from skdp.mechanisms._blt import blt_coefficients, blt_parameters
from skdp.mechanisms._noise_shaping import noise_shaping_matrix, toeplitz_coefficients

__all__ = ["cyclic_sensitivity_factor"]


def cyclic_sensitivity_factor(kind, n_steps: int, period: int, n_participations: int = 1, *,
                              nu: float | None = None) -> float:
    """Participation factor of a noise-shaping matrix for a fixed cyclic order.

    Parameters
    ----------
    kind : {'identity', 'blt', 'sqrt', 'nu'} or array-like
        The noise shaping (see :func:`~skdp.mechanisms.noise_shaping_matrix`);
        a matrix must be at least ``n_steps`` x ``n_steps``.
    n_steps : int
        Horizon: the number of rows of C that noise the stream (steps after
        the last participation count too, because their noise is correlated
        with the noise of the participating steps).
    period : int
        Steps per epoch, k: row i takes part in steps ``i + m * k``.
    n_participations : int, default=1
        Epochs, E; ``E * k <= n_steps``.
    nu : float, optional
        For ``'nu'`` and ``'blt'``.

    Returns
    -------
    float
        ``sqrt(max_{i < k} sum_{s, t in P_i} |(C^T C)_{st}|)``; multiply by
        ``2 * clip_norm`` for the replace-one sensitivity.

    Examples
    --------
    >>> from skdp.mechanisms import cyclic_sensitivity_factor, toeplitz_sensitivity_factor
    >>> cyclic_sensitivity_factor("identity", 100, 25, 4)
    2.0
    >>> single = cyclic_sensitivity_factor("sqrt", 100, 100)
    >>> bool(abs(single - toeplitz_sensitivity_factor(0.0, 100)) < 1e-12)
    True
    """
    H, k, E = int(n_steps), int(period), int(n_participations)
    if min(H, k, E) < 1 or k * E > H:
        raise ValueError(f"Need 1 <= period * n_participations <= n_steps, got period={period}, "
                         f"n_participations={n_participations}, n_steps={n_steps}.")
    if isinstance(kind, str) and kind == "identity":
        return math.sqrt(E)
    if isinstance(kind, str) and kind in ("sqrt", "nu", "blt"):
        c = (blt_coefficients(*blt_parameters(nu), H) if kind == "blt"
             else toeplitz_coefficients(H, 0.0 if kind == "sqrt" else nu))
        return math.sqrt(_toeplitz_cyclic_max(c, k, E))
    C = noise_shaping_matrix(kind, H, nu=nu)
    if C.shape[0] < H:
        raise ValueError(f"The noise-shaping matrix has horizon {C.shape[0]} < n_steps = {H}.")
    gram = np.abs(C[:H, :H].T @ C[:H, :H])
    idx = np.arange(k)[:, None] + k * np.arange(E)[None, :]  # row i: the steps of P_i
    totals = [gram[np.ix_(steps, steps)].sum() for steps in idx]
    return math.sqrt(float(max(totals)))


def _toeplitz_cyclic_max(c: np.ndarray, k: int, E: int) -> float:
    """``max_i sum_{s,t in P_i} (C^T C)_{st}`` for lower-triangular Toeplitz C (first column c).

    For s <= t, ``(C^T C)_{st} = sum_{j < H - t} c_j c_{j + t - s}``; within
    P_i the lags are multiples of k, so E cumulative sums give every entry.
    O(E * H) time, plus O(E^2 k) for the sums over pairs.
    """
    H = c.shape[0]
    i = np.arange(k)
    totals = np.zeros(k)
    for lag in range(E):
        # partial[L - 1] = sum_{j < L} c_j c_{j + lag k}
        partial = np.cumsum(c[:H - lag * k] * c[lag * k:])
        weight = 1.0 if lag == 0 else 2.0  # (s, t) and (t, s)
        for a in range(E - lag):
            t = i + (a + lag) * k  # the later step of the pair
            totals += weight * np.abs(partial[H - t - 1])
    return float(totals.max())
