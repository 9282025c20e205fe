"""Gaussian mechanism on the Gram matrix of clipped rows (sufficient statistics)."""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from skdp.clipping import clip_factors
from skdp.mechanisms._random import _check_weight, symmetric_release
from skdp.utils._dask import is_dask
from skdp.utils._rows import sum_rows
from skdp.utils._validation import _cap, check_sample_weight

__all__ = ["gram_sensitivity", "private_gram"]


def gram_sensitivity(norm_bound: float, max_weight: float = 1.0) -> float:
    """Replace-one L2 sensitivity of ``sum_i w_i z_i z_i^T`` for ``||z_i|| <= B``, ``w_i <= W``.

    Replacing (w, z) by (w', z') changes the sum by ``w z z^T - w' z' z'^T``,
    whose squared Frobenius norm is ``w**2 ||z||**4 + w'**2 ||z'||**4 - 2 w w'
    (z . z')**2 <= 2 W**2 B**4``: the sensitivity is ``sqrt(2) W B**2``. The
    upper triangle (diagonal included) is a sub-vector, so the same bound holds
    for it.

    Parameters
    ----------
    norm_bound : float
        B.
    max_weight : float, default=1.0
        W.

    Returns
    -------
    float
    """
    return math.sqrt(2.0) * float(max_weight) * float(norm_bound) ** 2


def _gram_block(Xb, yb, wb, *, fit_intercept: bool, norm_bound: float, intercept_value=1.0,
                x_scale=1.0):
    """``sum_i w_i z_i z_i^T`` over one block, rows ``z_i = (s x_i, [c], [y_i])`` clipped."""
    parts = [Xb * x_scale if x_scale != 1.0 else Xb]
    if fit_intercept:
        parts.append(np.full((Xb.shape[0], 1), intercept_value))
    if yb is not None:
        parts.append(yb[:, None])
    Z = np.hstack(parts) if len(parts) > 1 else np.array(parts[0], dtype=float)
    f = clip_factors(np.sqrt(np.einsum("ij,ij->i", Z, Z)), norm_bound)
    if wb is not None:
        return (Z * (wb * f * f)[:, None]).T @ Z
    Z *= f[:, None]
    return Z.T @ Z


def private_gram(X, y=None, *, fit_intercept: bool, norm_bound: float, mu: float,
                 rng: np.random.Generator, chunk_size: int = 16384, sample_weight=None,
                 max_weight: float = 1.0, intercept_value: float = 1.0,
                 x_scale: float = 1.0) -> tuple[np.ndarray, float]:
    """Private ``Z^T W Z`` for the rows ``z_i = (x_i, [1], [y_i])`` clipped to ``norm_bound``.

    Parameters
    ----------
    X : ndarray of shape (n, p)
    y : ndarray of shape (n,), optional
        Appended as the last column of Z.
    fit_intercept : bool
        Append a constant 1 column after X.
    norm_bound : float
        Rows of Z are clipped to this L2 norm (a declared bound, never taken
        from the data), in [1e-100, 1e100]: beyond, a sum of clipped squares
        could overflow on some tables and not on others. For the same
        reason ``x_scale`` lies in [1e-100, 1e100], ``intercept_value`` in
        [-1e100, 1e100], ``max_weight`` at most
        :data:`~skdp.mechanisms.MAX_WEIGHT`, and the values of X and y (in
        memory; they must be finite) are capped at 1e50 in magnitude, as
        the estimators' validation caps them. A Dask X or y is summed
        where its partitions are, without a check: NaN is read as 0 and
        values beyond 1e50 (infinities too) as the cap.
    mu : float
        GDP budget of the release.
    rng : numpy.random.Generator
    chunk_size : int, default=16384
        Rows per block (:func:`skdp.utils._rows.sum_rows`): extra memory
        O(chunk_size * q).
    sample_weight : ndarray of shape (n,), optional
        Row weights in ``[0, max_weight]``; a negative, non-finite or larger
        weight is refused (ValueError) before any noise is drawn.
    max_weight : float, default=1.0
        The declared bound on the weights.
    intercept_value : float, default=1.0
        Value of the constant column (for rows rescaled by a public constant).
    x_scale : float, default=1.0
        Public factor applied to X block by block (no scaled copy of X).

    Returns
    -------
    gram : ndarray of shape (q, q)
        Symmetric; Gaussian noise of std ``noise_std`` on each entry of the
        upper triangle (diagonal included), mirrored below.
    noise_std : float
        ``sqrt(2) * max_weight * norm_bound**2 / mu``
        (:func:`gram_sensitivity` over mu).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.mechanisms import make_rng, private_gram
    >>> X = np.ones((1000, 2)) * 0.5
    >>> G, std = private_gram(X, fit_intercept=True, norm_bound=1.0, mu=1.0, rng=make_rng(0))
    >>> G.shape, round(std, 4)
    ((3, 3), 1.4142)
    """
    # Public parameters first, before any row is read.
    _check_weight(max_weight)
    for name, value in (("norm_bound", norm_bound), ("x_scale", x_scale)):
        if not 1e-100 <= float(value) <= 1e100:
            raise ValueError(f"{name} must lie in [1e-100, 1e100], got {value}.")
    if not abs(float(intercept_value)) <= 1e100:
        raise ValueError(f"intercept_value must lie in [-1e100, 1e100], got {intercept_value}.")
    if not is_dask(X):
        # Finite, then each value capped at 1e50 (as the estimators' validation does):
        # with x_scale <= 1e100 an entry is at most 1e150, and a squared norm
        # overflows only beyond 1e8 columns.
        X = np.asarray(X, dtype=float)
        y = None if y is None else np.asarray(y, dtype=float)
        if not (np.all(np.isfinite(X)) and (y is None or np.all(np.isfinite(y)))):
            raise ValueError("X and y must be finite (no NaN or infinity).")
        X, y = _cap(X), (None if y is None else _cap(y))
    else:
        # Summed where the partitions are, so not checked first: each value is
        # mapped as it is read (NaN to 0, beyond 1e50 to the cap), as the
        # estimators' re-reads of a Dask table are (skdp.utils._dask._capped).
        from skdp.utils._dask import _as_array, capped_values

        X = capped_values(_as_array(X, "X"))
        y = None if y is None else capped_values(_as_array(y, "y"))
    # The noise is sized for max_weight: a heavier (or non-finite) weight is refused
    # before the draw, as the estimators' validation does.
    sample_weight = check_sample_weight(sample_weight, X.shape[0], max_weight)
    block = partial(_gram_block, fit_intercept=fit_intercept, norm_bound=float(norm_bound),
                    intercept_value=float(intercept_value), x_scale=float(x_scale))
    gram = sum_rows(block, X, y, sample_weight, block_rows=int(chunk_size))
    noise_std = gram_sensitivity(norm_bound, max_weight) / float(mu)
    released = symmetric_release(gram, noise_std, rng, name="Gram matrix",
                                 sensitivity=gram_sensitivity(norm_bound, max_weight),
                                 weight=max_weight)
    return released, noise_std
