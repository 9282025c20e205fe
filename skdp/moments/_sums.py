"""The sums behind every moment release: clipped rows and their outer products.

A release of moments (once for a table, or once per step of a stream) is a
Gaussian mechanism on ``(sum_i a_i x_i, sum_i b_i x_i x_i^T)`` for rows
clipped to the norm bound and public (or bounded) per-row weights a, b.
:func:`moment_sums` computes those sums for one block of rows, so that
:func:`skdp.utils._rows.sum_rows` can add them up block by block.
"""

from __future__ import annotations

import math

import numpy as np

from skdp.clipping import clip_factors
from skdp.mechanisms._random import gaussian_release, symmetric_release

__all__ = ["moment_sums", "second_moment_release"]


def moment_sums(X, weights1=None, weights2=None, *, norm_bound: float,
                diagonal_only: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(sum_i a_i x_i, sum_i b_i x_i x_i^T, sum_i a_i)`` over rows clipped to ``norm_bound``.

    Parameters
    ----------
    X : ndarray of shape (m, d)
    weights1, weights2 : ndarray of shape (m,) or None
        Per-row weights a and b of the first and second moment (None: 1).
    norm_bound : float
        Rows are clipped to this L2 norm first.
    diagonal_only : bool, default=False
        The second sum holds only the diagonal, ``sum_i b_i x_i**2``.

    Returns
    -------
    first : ndarray of shape (d,)
    second : ndarray of shape (d, d), or (d,) with ``diagonal_only``
    total_weight : ndarray of shape ()
        ``sum_i a_i`` (the number of rows without weights).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.moments._sums import moment_sums
    >>> first, second, total = moment_sums(np.array([[3.0, 4.0], [0.0, 0.5]]), norm_bound=1.0)
    >>> first, total
    (array([0.6, 1.3]), array(2.))
    """
    X = np.asarray(X, dtype=float)
    # Clip by scaling the weights, not the rows: row i enters as f_i x_i with
    # f_i = min(1, zeta / ||x_i||), so the sums are X^T (a f) and
    # X^T diag(b f^2) X, with no clipped copy of X.
    f = clip_factors(np.sqrt(np.einsum("ij,ij->i", X, X)), norm_bound)
    a = np.ones(X.shape[0]) if weights1 is None else np.asarray(weights1, dtype=float)
    b = a if weights2 is None else np.asarray(weights2, dtype=float)
    first = (a * f) @ X
    if diagonal_only:
        second = (b * f * f) @ (X * X)
    else:
        Xs = X * (np.sqrt(b) * f)[:, None]
        second = Xs.T @ Xs  # numpy computes A^T A as a symmetric rank-k update
    return first, second, np.asarray(a.sum())


def second_moment_release(second, std, rng: np.random.Generator, *, diagonal_only: bool = False,
                          mechanism_mu: float | None = None, share: float = 1.0) -> np.ndarray:
    """Release a symmetric second moment with noise ``std * (Z + Z^T) / 2``.

    The diagonal gets std ``std``, each off-diagonal pair one draw of std
    ``std / sqrt(2)``. This is the distribution of symmetrising noise of std
    ``std`` on the full d x d matrix, so the release is post-processing of a
    release whose sensitivity is that of the full ``x x^T`` (Frobenius
    norm): no privacy is lost, and half of the noise is averaged away.

    Parameters
    ----------
    second : ndarray of shape (d, d), or (d,) with ``diagonal_only``
        The exact second moment (symmetric).
    std : float
    rng : numpy.random.Generator
    diagonal_only : bool, default=False
        The diagonal alone.
    mechanism_mu, share : float
        Secure mode: the joint release's mu and this block's share of its
        grid allowance (see :func:`~skdp.mechanisms.gaussian_release`).

    Returns
    -------
    ndarray like ``second``
    """
    # Second-moment noise is one block of a joint release whose sensitivity
    # is recorded with its first block (sensitivity 0 here).
    if diagonal_only:
        return gaussian_release(second, std, rng, name="second moment",
                                mechanism_mu=mechanism_mu, share=share)
    return symmetric_release(second, std, rng, offdiagonal_std=std / math.sqrt(2.0),
                             name="second moment", mechanism_mu=mechanism_mu, share=share)
