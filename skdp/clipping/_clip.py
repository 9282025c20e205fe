"""L2 clipping of rows and of per-example gradients of linear models.

For a generalized linear model with parameters W (p,) or (p, K) the
per-example gradient of the loss at row x_i is the outer product
``x_i r_i^T``, where the *residual* r_i is

- ``x_i . w - y_i`` for the squared loss ``(x_i . w - y_i)**2 / 2``,
- ``sigmoid(x_i . w) - y_i`` for the logistic loss (y_i in {0, 1}),
- ``softmax(x_i W) - onehot(y_i)`` for the multinomial logistic loss.

Its L2 (Frobenius) norm is ``||x_i|| * ||r_i||``, so the clip factors and the
sum of clipped gradients ``X^T (f * r)`` cost O(n p K), like the forward pass:
no n x p gradient matrix is ever built.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, softmax

from skdp.clipping._report import _record, _recording

__all__ = [
    "clip_factors",
    "clip_rows",
    "clipped_gradient_sum",
    "clipped_residuals",
    "gradient_clip_factors",
    "logistic_loss_residuals",
    "scale_from_second_moment",
    "scale_then_privatize",
    "squared_loss_residuals",
]


def _check_clip_norm(clip_norm) -> float:
    clip_norm = float(clip_norm)
    if not (np.isfinite(clip_norm) and clip_norm > 0.0):
        raise ValueError(f"clip_norm must be a positive finite number, got {clip_norm}.")
    return clip_norm


def clip_factors(norms, clip_norm: float) -> np.ndarray:
    """Factors ``min(1, clip_norm / norm)`` that bring each norm to at most clip_norm.

    A zero norm gets factor 1.

    Parameters
    ----------
    norms : array-like of shape (n,)
        Non-negative norms.
    clip_norm : float
        Bound, > 0.

    Returns
    -------
    ndarray of shape (n,)

    Examples
    --------
    >>> from skdp.clipping import clip_factors
    >>> clip_factors([0.0, 0.5, 4.0], 2.0)
    array([1. , 1. , 0.5])
    """
    return _factors(np.asarray(norms, dtype=float), _check_clip_norm(clip_norm))


def _factors(norms: np.ndarray, clip_norm: float) -> np.ndarray:
    # clip / max(norm, clip) = min(1, clip / norm), and 1 for a zero norm.
    _record(norms, clip_norm)
    return clip_norm / np.maximum(norms, clip_norm)


def clip_rows(X, clip_norm: float) -> np.ndarray:
    """Scale each row of X to L2 norm at most ``clip_norm``.

    ``clip(v, c) = v * min(1, c / ||v||)``.

    Parameters
    ----------
    X : array-like of shape (n, d)
    clip_norm : float

    Returns
    -------
    ndarray of shape (n, d)
        A new array; X is not modified.

    Examples
    --------
    >>> from skdp.clipping import clip_rows
    >>> clip_rows([[3.0, 4.0], [0.3, 0.4]], 1.0)
    array([[0.6, 0.8],
           [0.3, 0.4]])
    """
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"clip_rows expects a 2-D array, got shape {X.shape}.")
    return X * clip_factors(np.linalg.norm(X, axis=1), clip_norm)[:, None]


def _linear_output(X, coef, fit_intercept: bool):
    X = np.asarray(X)
    if not fit_intercept:
        return X @ coef
    return X @ coef[:X.shape[1]] + coef[X.shape[1]]


def squared_loss_residuals(X, y, coef, *, fit_intercept: bool = False) -> np.ndarray:
    """Residuals ``X @ coef - y`` of the squared loss ``(x @ w - y)**2 / 2``.

    Parameters
    ----------
    X : ndarray of shape (n, p)
    y : ndarray of shape (n,)
    coef : ndarray of shape (p,) or (p + 1,)
        With ``fit_intercept`` the last entry is the intercept.
    fit_intercept : bool, default=False

    Returns
    -------
    ndarray of shape (n,)
    """
    return _linear_output(X, coef, fit_intercept) - y


def logistic_loss_residuals(X, y, coef, *, fit_intercept: bool = False) -> np.ndarray:
    """Residuals of the logistic loss: ``sigmoid(X w) - y`` or ``softmax(X W) - Y``.

    Parameters
    ----------
    X : ndarray of shape (n, p)
    y : ndarray of shape (n,) with values in {0, 1}, or (n, K) one-hot
    coef : ndarray of shape (q,) or (q, K)
        q = p, or p + 1 with ``fit_intercept`` (the intercept last).
    fit_intercept : bool, default=False

    Returns
    -------
    ndarray of the shape of y
    """
    z = _linear_output(X, coef, fit_intercept)
    if np.ndim(coef) == 1:
        return expit(z) - y
    return softmax(z, axis=1) - y


def gradient_clip_factors(row_norms, residuals, clip_norm: float) -> np.ndarray:
    """Clip factors of the per-example gradients ``x_i r_i^T`` of a linear model.

    Parameters
    ----------
    row_norms : array-like of shape (n,)
        ``||x_i||`` (of the rows as the model sees them, e.g. with the
        intercept column appended).
    residuals : array-like of shape (n,) or (n, K)
        See the module notes.
    clip_norm : float

    Returns
    -------
    ndarray of shape (n,)
        ``min(1, clip_norm / (||x_i|| ||r_i||))``.
    """
    residuals = np.asarray(residuals, dtype=float)
    return _gradient_factors(np.asarray(row_norms, dtype=float), residuals,
                             _check_clip_norm(clip_norm))


def _gradient_factors(row_norms, residuals, clip_norm):
    if residuals.ndim == 1:
        r_norms = np.abs(residuals)
    else:
        r_norms = np.sqrt(np.einsum("ij,ij->i", residuals, residuals))
    return _factors(row_norms * r_norms, clip_norm)


def clipped_residuals(row_norms, residuals, clip_norm: float) -> np.ndarray:
    """Residuals ``f_i r_i`` of the clipped per-example gradients, finite for any input.

    The clipped gradient ``clip(x_i r_i^T, clip_norm)`` is ``x_i (f_i r_i)^T``
    with ``f_i = min(1, clip_norm / (||x_i|| ||r_i||))``. Computed as
    ``r_i * f_i`` it turns into NaN when ``r_i`` is infinite (``inf * 0``),
    which happens once an iterate overflows. Here every row gets a clipped
    residual of norm at most ``clip_norm / ||x_i||`` whatever its residual:

    - an infinite residual is clipped in the direction of its infinite
      entries (``r_i = +inf`` gives ``clip_norm / ||x_i||``);
    - a NaN residual (``inf - inf``), or a row of norm 0, gives 0.

    So the sum of clipped gradients stays finite and its sensitivity stays
    ``2 * clip_norm`` on every table: whether a release is NaN can never
    depend on a row's values.

    Parameters
    ----------
    row_norms : array-like of shape (n,)
        ``||x_i||`` of the rows as the model sees them.
    residuals : array-like of shape (n,) or (n, K)
    clip_norm : float

    Returns
    -------
    ndarray of the shape of ``residuals``

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.clipping import clipped_residuals
    >>> clipped_residuals([1.0, 2.0, 2.0, 2.0], [0.5, 3.0, -np.inf, np.nan], 1.0)
    array([ 0.5,  0.5, -0.5,  0. ])
    """
    return _clipped_residuals(np.asarray(row_norms, dtype=float),
                              np.asarray(residuals, dtype=float), _check_clip_norm(clip_norm))


def _clipped_residuals(row_norms, residuals, clip_norm):
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if residuals.ndim == 1:
            # r * min(1, c / (||x|| |r|)) = r clipped to [-c / ||x||, c / ||x||].
            limit = clip_norm / row_norms
            if _recording():
                _record(np.abs(residuals) / limit, 1.0)
            out = np.clip(residuals, -limit, limit)
        else:
            out = residuals * _gradient_factors(row_norms, residuals, clip_norm)[:, None]
    bad = ~np.isfinite(out)
    if not bad.any():
        return out
    rows = bad if out.ndim == 1 else bad.any(axis=1)
    # Left: an infinite residual on a row of norm 0 (1-D), or (K-D) a row with an
    # infinite entry (its factor is 0) or a NaN. Clip the infinite ones along the
    # signs of their infinite entries; the rest (NaN, norm 0) contribute nothing.
    r = residuals[rows]
    direction = np.where(np.isinf(r), np.sign(r), 0.0)
    if r.ndim > 1:
        direction[np.isnan(r).any(axis=1)] = 0.0
        size = np.sqrt(np.einsum("ij,ij->i", direction, direction))
        size[size == 0] = 1.0
        direction /= size[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        limit = np.where(row_norms[rows] > 0, clip_norm / row_norms[rows], 0.0)
    out[rows] = direction * (limit if r.ndim == 1 else limit[:, None])
    return out


def clipped_gradient_sum(X, residuals, clip_norm: float, *, row_norms=None,
                         scale=None, fit_intercept: bool = False, squares: bool = False,
                         sample_weight=None):
    """Sum of the clipped per-example gradients of a linear model.

    Computes ``sum_i clip(s * x_i r_i^T, clip_norm)`` as ``s * X^T (f * r)``
    with f the clip factors, in O(n p K) time and O(n K) extra memory.

    Parameters
    ----------
    X : ndarray of shape (n, p)
    residuals : ndarray of shape (n,) or (n, K)
    clip_norm : float
    row_norms : ndarray of shape (n,), optional
        Norms of the model's rows (``sqrt(||x_i||**2 + 1)`` with an
        intercept), if already known: they do not change between steps.
        Ignored with ``scale``.
    scale : ndarray of shape (q,) or (q, K), optional
        Scale-then-privatize (Ganesh et al. 2025, Algorithm 8): clip the scaled
        gradients ``s * g_i`` instead; the result is the sum in the scaled
        geometry. Undo it after adding noise with :func:`scale_then_privatize`.
        q is p, or p + 1 with ``fit_intercept`` (the intercept's scale last).
    fit_intercept : bool, default=False
        Treat each row as ``(x_i, 1)``: the constant column is part of the
        clipped gradient (so the intercept cannot leak through an unclipped
        coordinate) without copying X; the result has one more row, last.
    squares : bool, default=False
        Also return ``sum_i clip(g_i)**2``, the sum of the element-wise
        squares of the clipped gradients (the diagonal second moment of
        Kalinin et al. 2025, Theorem 4.3), as ``(X**2)^T (f**2 r**2)``. Not with
        ``scale``.
    sample_weight : ndarray of shape (n,), optional
        Weights applied *after* the clip: the sums are ``sum_i w_i clip(g_i)``
        (and ``sum_i (w_i clip(g_i))**2``), so replacing one row moves the
        sum by at most ``2 * max_weight * clip_norm``. The clip factors come
        from the unweighted gradients, so every finite weight, however
        small, gives a finite sum. Not with ``scale``.

    Returns
    -------
    total : ndarray of shape (q,) or (q, K)
        Each clipped gradient has norm <= clip_norm, so replacing one row
        changes the sum by at most ``2 * clip_norm`` in L2 (``2 * max_weight *
        clip_norm`` with ``sample_weight``, which must lie in ``[0,
        max_weight]``: the caller checks them).
    square_total : ndarray of the same shape
        Only with ``squares=True``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.clipping import clipped_gradient_sum
    >>> X = np.array([[1.0, 0.0], [0.0, 2.0]])
    >>> clipped_gradient_sum(X, np.array([3.0, 0.25]), clip_norm=1.0)
    array([1. , 0.5])
    >>> clipped_gradient_sum(X, np.array([3.0, 0.25]), clip_norm=1.0, squares=True)[1]
    array([1.  , 0.25])
    """
    X = np.asarray(X, dtype=float)
    residuals = np.asarray(residuals, dtype=float)
    clip_norm = _check_clip_norm(clip_norm)
    flat = residuals.ndim == 1
    if scale is None:
        if row_norms is None:
            sq = np.einsum("ij,ij->i", X, X)
            row_norms = np.sqrt(sq + 1.0 if fit_intercept else sq)
        weighted = _clipped_residuals(np.asarray(row_norms, dtype=float), residuals, clip_norm)
        if sample_weight is not None:
            w = np.asarray(sample_weight, dtype=float)
            weighted = weighted * (w if flat else w[:, None])
        grad = _add_intercept_row(X.T @ weighted, weighted, fit_intercept)
        if not squares:
            return grad
        w2 = weighted * weighted
        return grad, _add_intercept_row((X * X).T @ w2, w2, fit_intercept)
    if squares or sample_weight is not None:
        raise ValueError("squares and sample_weight are not supported with scale.")
    scale = np.asarray(scale, dtype=float)
    p = X.shape[1]
    # ||s * g_i||^2 = sum_k r_ik^2 sum_j s_jk^2 x_ij^2 (x_i with a trailing 1).
    s2 = scale * scale
    per_output = (X * X) @ s2[:p]
    if fit_intercept:
        per_output = per_output + s2[p]
    if flat:
        weighted = _clipped_residuals(np.sqrt(per_output), residuals, clip_norm)
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            norms = np.sqrt(np.sum(per_output * residuals * residuals, axis=1))
            weighted = residuals * _factors(norms, clip_norm)[:, None]
        # A non-finite residual (an overflowed iterate) contributes nothing: the
        # sum stays finite, with the same sensitivity.
        weighted[~np.isfinite(weighted).all(axis=1)] = 0.0
    return scale * _add_intercept_row(X.T @ weighted, weighted, fit_intercept)


def _add_intercept_row(grad, weighted, fit_intercept):
    if not fit_intercept:
        return grad
    out = np.empty((grad.shape[0] + 1,) + grad.shape[1:])
    out[:-1] = grad
    out[-1] = weighted.sum(axis=0)
    return out


def scale_from_second_moment(second_moment, eps_stability: float = 1e-8) -> np.ndarray:
    """Scaling ``s = 1 / (sqrt(v) + eps)`` of scale-then-privatize (Algorithm 8, line 3).

    ``second_moment`` must be a private (already released) estimate, e.g. the
    optimizer's previous ``v_hat``; it is clipped at 0 before the square root.
    ``eps_stability`` must be > 0, so that s is finite.

    Parameters
    ----------
    second_moment : array-like
        A released estimate of the second moment v.
    eps_stability : float, default=1e-8

    Returns
    -------
    ndarray
        s, of the shape of ``second_moment``.
    """
    if not (np.isfinite(eps_stability) and eps_stability > 0):
        raise ValueError(f"eps_stability must be positive and finite, got {eps_stability}.")
    v = np.maximum(np.asarray(second_moment, dtype=float), 0.0)
    return 1.0 / (np.sqrt(v) + float(eps_stability))


def scale_then_privatize(scaled_sum, noise, scale) -> np.ndarray:
    """Add noise in the scaled geometry and map back: ``(scaled_sum + noise) / s``.

    Ganesh et al. 2025, Algorithm 8, line 6. The privacy guarantee is that of adding
    ``noise`` to ``scaled_sum``, whose replace-one sensitivity is
    ``2 * clip_norm`` (:func:`clipped_gradient_sum` with ``scale``); dividing
    by a scale that is itself private is post-processing.

    Parameters
    ----------
    scaled_sum : ndarray
        From ``clipped_gradient_sum(..., scale=s)``.
    noise : ndarray
        Gaussian noise of the same shape (independent or correlated).
    scale : ndarray
        The ``s`` used for clipping.

    Returns
    -------
    ndarray
    """
    return (np.asarray(scaled_sum) + np.asarray(noise)) / np.asarray(scale)
