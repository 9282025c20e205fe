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

__all__ = [
    "clip_factors",
    "clip_rows",
    "clipped_gradient_sum",
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
    clip_norm = _check_clip_norm(clip_norm)
    norms = np.asarray(norms, dtype=float)
    safe = np.where(norms > clip_norm, norms, clip_norm)
    return np.minimum(1.0, clip_norm / safe)


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


def squared_loss_residuals(X, y, coef) -> np.ndarray:
    """Residuals ``X @ coef - y`` of the squared loss ``(x . w - y)**2 / 2``."""
    return np.asarray(X) @ coef - y


def logistic_loss_residuals(X, y, coef) -> np.ndarray:
    """Residuals of the logistic loss: ``sigmoid(X w) - y`` or ``softmax(X W) - Y``.

    Parameters
    ----------
    X : ndarray of shape (n, p)
    y : ndarray of shape (n,) with values in {0, 1}, or (n, K) one-hot
    coef : ndarray of shape (p,) or (p, K)

    Returns
    -------
    ndarray of the shape of y
    """
    z = np.asarray(X) @ coef
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
    r_norms = np.abs(residuals) if residuals.ndim == 1 else np.linalg.norm(residuals, axis=1)
    return clip_factors(np.asarray(row_norms, dtype=float) * r_norms, clip_norm)


def clipped_gradient_sum(X, residuals, clip_norm: float, *, row_norms=None,
                         scale=None, fit_intercept: bool = False) -> np.ndarray:
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
    scale : ndarray of shape (p,) or (p, K), optional
        Scale-then-privatize (papers/002, Algorithm 8): clip the scaled
        gradients ``s * g_i`` instead; the result is the sum in the scaled
        geometry. Undo it after adding noise with :func:`scale_then_privatize`.
        Not combined with ``fit_intercept``.
    fit_intercept : bool, default=False
        Treat each row as ``(x_i, 1)``: the constant column is part of the
        clipped gradient (so the intercept cannot leak through an unclipped
        coordinate) without copying X; the result has one more row, last.

    Returns
    -------
    ndarray of shape (p,) or (p, K), or (p + 1,) / (p + 1, K) with an intercept
        Each clipped gradient has norm <= clip_norm, so replacing one row
        changes the sum by at most ``2 * clip_norm`` in L2.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.clipping import clipped_gradient_sum
    >>> X = np.array([[1.0, 0.0], [0.0, 2.0]])
    >>> clipped_gradient_sum(X, np.array([3.0, 0.25]), clip_norm=1.0)
    array([1. , 0.5])
    """
    X = np.asarray(X, dtype=float)
    residuals = np.asarray(residuals, dtype=float)
    if scale is None:
        if row_norms is None:
            sq = np.einsum("ij,ij->i", X, X)
            row_norms = np.sqrt(sq + 1.0 if fit_intercept else sq)
        f = gradient_clip_factors(row_norms, residuals, clip_norm)
        weighted = residuals * (f if residuals.ndim == 1 else f[:, None])
        grad = X.T @ weighted
        if fit_intercept:
            grad = np.concatenate([grad, weighted.sum(axis=0, keepdims=True)])
        return grad
    if fit_intercept:
        raise ValueError("scale is not supported with fit_intercept; append the column to X.")
    scale = np.asarray(scale, dtype=float)
    # ||s * x_i r_i^T||^2 = sum_k r_ik^2 sum_j s_jk^2 x_ij^2.
    s2 = scale * scale
    if residuals.ndim == 1:
        norms = np.sqrt((X * X) @ s2) * np.abs(residuals)
        f = clip_factors(norms, clip_norm)
        return scale * (X.T @ (residuals * f))
    norms = np.sqrt(np.sum(((X * X) @ s2) * residuals * residuals, axis=1))
    f = clip_factors(norms, clip_norm)
    return scale * (X.T @ (residuals * f[:, None]))


def scale_from_second_moment(second_moment, eps_stability: float = 1e-8) -> np.ndarray:
    """Scaling ``s = 1 / (sqrt(v) + eps)`` of scale-then-privatize (Algorithm 8, line 3).

    ``second_moment`` must be a private (already released) estimate, e.g. the
    optimizer's previous ``v_hat``; it is clipped at 0 before the square root.
    ``eps_stability`` must be > 0, so that s is finite.
    """
    if not (np.isfinite(eps_stability) and eps_stability > 0):
        raise ValueError(f"eps_stability must be positive and finite, got {eps_stability}.")
    v = np.maximum(np.asarray(second_moment, dtype=float), 0.0)
    return 1.0 / (np.sqrt(v) + float(eps_stability))


def scale_then_privatize(scaled_sum, noise, scale) -> np.ndarray:
    """Add noise in the scaled geometry and map back: ``(scaled_sum + noise) / s``.

    papers/002, Algorithm 8, line 6. The privacy guarantee is that of adding
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
