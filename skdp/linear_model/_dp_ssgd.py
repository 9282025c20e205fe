"""DP-SSGD: one shuffled pass of single-row SGD with a fixed clip (Varshney et al. 2022, Algorithm 1)."""

from __future__ import annotations

import math

import numpy as np

from skdp.clipping._clip import _row_norms
from skdp.clipping._report import _count
from skdp.mechanisms._random import PlannedRelease
from skdp.utils._validation import _cap

__all__ = ["dp_ssgd"]

_CHUNK = 4096  # noise is drawn in chunks of this many steps


def dp_ssgd(X, y, w, *, clip_norm: float, noise_std: float, learning_rate: float,
            rng: np.random.Generator, fit_intercept: bool = True,
            tail_start: int = 0, part_offset: int = 0) -> tuple[np.ndarray, np.ndarray, int]:
    """One shuffled pass of single-row DP-SGD for least squares.

    For each row of a random permutation, in turn:
    ``w <- w - learning_rate * (clip(x_t (x_t . w - y_t), clip_norm) + N(0, noise_std**2 I))``,
    with ``x_t`` extended by a constant 1 when ``fit_intercept``.

    Parameters
    ----------
    X : ndarray of shape (n, p)
    y : ndarray of shape (n,)
    w : ndarray of shape (p + fit_intercept,)
        Starting iterate (the intercept last); not modified.
    clip_norm : float
        L2 bound of each per-example gradient; a row's gradient has replace-one
        sensitivity ``2 * clip_norm``.
    noise_std : float
        Std of the noise added to each step's clipped gradient. Each row is
        used in exactly one step, so the pass is ``2 clip_norm / noise_std``-GDP
        by parallel composition.
    learning_rate : float
    rng : numpy.random.Generator
        Draws the permutation and the noise.
    fit_intercept : bool, default=True
    tail_start : int, default=0
        Steps of this pass (counted from 0) before the running sum of iterates
        starts; the iterate after step t enters the sum when ``t >= tail_start``.
    part_offset : int, default=0
        Rows of the stream before this pass, so that the releases recorded by
        :func:`skdp.mechanisms.record_releases` name disjoint parts across
        ``partial_fit`` calls.

    Returns
    -------
    w : ndarray of shape (p + fit_intercept,)
        The last iterate.
    tail_sum : ndarray of shape (p + fit_intercept,)
        Sum of the iterates that entered the tail.
    n_tail : int
        How many did.

    References
    ----------
    Varshney, Thakurta & Jain (2022), (Nearly) Optimal Private Linear
    Regression via Adaptive Clipping, Algorithm 1.
    """
    # Values beyond MAX_ABS capped first, as the estimators' validation does (a fixed
    # map of each value): a huge row cannot overflow a product into NaN or a warning.
    X, y = _cap(np.asarray(X, dtype=float)), _cap(np.asarray(y))
    n, p = X.shape
    w = np.array(w, dtype=float)
    perm = rng.permutation(n)
    tail_sum = np.zeros_like(w)
    n_tail = n_clipped = 0
    row_norms = _row_norms(X, 1.0 if fit_intercept else 0.0)
    for start in range(0, n, _CHUNK):
        idx = perm[start:start + _CHUNK]
        Xc, yc, norms = X[idx], y[idx], row_norms[idx]
        # One mechanism per row, each on its own row (parallel composition):
        # recorded per chunk, with the sensitivity of any one of its rows.
        noise = PlannedRelease(noise_std, len(idx), w.shape[0], rng, name="DP-SSGD step",
                               sensitivity=2.0 * clip_norm, part=("rows", part_offset + start))
        gradient = np.zeros_like(w)
        for i in range(len(idx)):
            x = Xc[i]
            r = x @ w[:p] - yc[i]
            if fit_intercept:
                r += w[p]
            g_norm = abs(r) * norms[i]
            n_clipped += g_norm > clip_norm
            if math.isnan(r) or norms[i] == 0.0:  # an overflowed iterate, or x = 0
                gradient[:] = 0.0
            elif g_norm <= clip_norm:
                gradient[:p] = r * x
                if fit_intercept:
                    gradient[p] = r
            else:  # clipped: clip_norm along r's sign on the unit row (no ratio to
                # round, nor clip_norm / norm to overflow)
                u = math.copysign(clip_norm, r)
                gradient[:p] = u * (x / norms[i])
                if fit_intercept:
                    gradient[p] = u / norms[i]
            w -= learning_rate * noise.add(i, gradient)
            if start + i >= tail_start:
                tail_sum += w
                n_tail += 1
    _count(int(n_clipped), n)
    return w, tail_sum, n_tail
