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
from skdp.utils._validation import _cap

__all__ = [
    "clip_factors",
    "clip_rows",
    "clipped_gradient_sum",
    "clipped_gradients",
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
    # _row_norms rescales rows whose squares overflow or underflow (np.linalg.norm
    # gave inf for a row of 1e200, which was then zeroed); a row whose norm is
    # beyond the float range is clipped from its unit form, x / max|x_j| (with an
    # infinite entry: the signs of its infinite entries).
    with np.errstate(over="ignore", invalid="ignore"):
        norms = _row_norms(X)
        out = X * clip_factors(norms, clip_norm)[:, None]
        huge = np.flatnonzero(~(norms < np.inf) & ~np.isnan(X).any(axis=1))
        if huge.size:
            rows = X[huge]
            m = np.max(np.abs(rows), axis=1)[:, None]
            U = np.where(np.isinf(m), np.where(np.isinf(rows), np.sign(rows), 0.0), rows / m)
            out[huge] = U * (clip_norm / np.sqrt(np.einsum("ij,ij->i", U, U)))[:, None]
    return out


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

    See Also
    --------
    clipped_residuals : ``f_i r_i`` itself, which stays bounded where
        ``r_i * f_i`` is ``inf * 0`` (an overflowed iterate): use it to
        build gradients.
    """
    residuals = np.asarray(residuals, dtype=float)
    return _gradient_factors(np.asarray(row_norms, dtype=float), residuals,
                             _check_clip_norm(clip_norm))


def _residual_norms(residuals):
    """``||r_i||`` of K-output residuals, rescaled as in :func:`_row_norms`; inf where r_i is."""
    # A residual row whose square underflows (below about 1e-154) would get norm 0
    # and leave its gradient unclipped; one beyond 1e154 would get inf and be zeroed.
    with np.errstate(over="ignore", invalid="ignore"):
        r_norms = _row_norms(residuals)
    r_norms[np.isinf(residuals).any(axis=1)] = np.inf  # (inf / inf gave NaN there)
    return r_norms


def _gradient_factors(row_norms, residuals, clip_norm, r_norms=None):
    if residuals.ndim == 1:
        r_norms = np.abs(residuals)
    elif r_norms is None:
        r_norms = _residual_norms(residuals)
    return _factors(row_norms * r_norms, clip_norm)


def clipped_residuals(row_norms, residuals, clip_norm: float) -> np.ndarray:
    """Residuals ``f_i r_i`` of the clipped per-example gradients, bounded for any input.

    The clipped gradient ``clip(x_i r_i^T, clip_norm)`` is ``x_i (f_i r_i)^T``
    with ``f_i = min(1, clip_norm / (||x_i|| ||r_i||))``. Computed as
    ``r_i * f_i`` it turns into NaN when ``r_i`` is infinite (``inf * 0``),
    which happens once an iterate overflows. Here every row gets a clipped
    residual of norm at most ``clip_norm / ||x_i||`` whatever its residual:

    - an infinite residual is clipped in the direction of its infinite
      entries (``r_i = +inf`` gives ``clip_norm / ||x_i||``);
    - a NaN residual (``inf - inf``), or a row of norm 0, gives 0.

    The result is finite wherever ``clip_norm / ||x_i||`` is (a row of norm
    below about ``clip_norm / 1e308`` can give an infinite one); the sums
    built on it (:func:`clipped_gradient_sum`, :func:`clipped_gradients`)
    take such rows, and rows whose weighted coefficient overflows, in
    unit-row form, so they stay finite and their sensitivity stays ``2 *
    clip_norm`` (times the weight bound) on every table: whether a release
    is NaN can never depend on a row's values.

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


def _clipped_residuals(row_norms, residuals, clip_norm, *, repair: bool = True, r_norms=None):
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if residuals.ndim == 1:
            # r * min(1, c / (||x|| |r|)) = r clipped to [-c / ||x||, c / ||x||].
            limit = clip_norm / row_norms
            if _recording():
                _record(np.abs(residuals) / limit, 1.0)
            out = np.clip(residuals, -limit, limit)
        else:
            out = residuals * _gradient_factors(row_norms, residuals, clip_norm,
                                                r_norms)[:, None]
    if not repair:  # the caller takes non-finite rows in unit-row form
        return out
    bad = ~np.isfinite(out)
    if not bad.any():
        return out
    rows = bad if out.ndim == 1 else bad.any(axis=1)
    # Left: an infinite residual on a row of norm 0 (1-D), or (K-D) a row with an
    # infinite entry (its factor is 0) or a NaN: the unit-row clip, divided back by
    # the norm (an infinite residual clipped along the signs of its infinite
    # entries; a NaN, or a row of norm 0, contributes nothing).
    n = row_norms[rows]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        fixed = _unit_clipped(n, residuals[rows], clip_norm)
        fixed = fixed / (n if fixed.ndim == 1 else n[:, None])
    fixed[n == 0] = 0.0
    out[rows] = fixed
    return out


#: Beyond this a row's coefficient ``w_i f_i r_i`` (or its square) may overflow although
#: its clipped gradient is bounded: such rows are summed in unit-row form instead.
_BIG = 1e150


def _row_norms(Z, constant: float = 0.0) -> np.ndarray:
    """``sqrt(||z_i||**2 + constant)``, with the rows whose squares under- or overflow rescaled.

    A row of entries below about 1e-162 has ``||z||**2`` 0 in floating point;
    a gradient clip using that 0 would leave ``z r`` unclipped however large
    r is (and a row above 1e154 would get an infinite norm). Such rows get
    their norm from ``hypot(m ||z / m||, sqrt(constant))`` with m their
    largest absolute entry, rounded up by one unit.
    """
    with np.errstate(over="ignore"):
        sq = np.einsum("ij,ij->i", Z, Z)
    norms = np.sqrt(sq + constant)
    odd = ~(sq < 1e280)
    if not constant:  # with a constant, an underflowed square changes nothing the clip sees
        odd |= sq <= 1e-280
    odd = np.flatnonzero(odd)
    if odd.size:
        rows = Z[odd]
        m = np.max(np.abs(rows), axis=1) if rows.shape[1] else np.zeros(odd.size)
        safe = np.where(m > 0, m, 1.0)
        unit = rows / safe[:, None]
        # Rounded up by one unit: a subnormal product can round down by up to half
        # its value, and a norm taken too small would let the row pass the clip.
        fixed = np.nextafter(m * np.sqrt(np.einsum("ij,ij->i", unit, unit)), np.inf)
        fixed[m == 0] = 0.0
        norms[odd] = np.hypot(fixed, np.sqrt(constant))
    return norms


def _unit_clipped(row_norms, residuals, clip_norm):
    """``u_i = ||x_i|| f_i r_i``, of norm at most clip_norm and finite for every input.

    The clipped gradient of row i is ``(x_i / ||x_i||) u_i^T``. With r_i = s d
    (s its largest absolute entry), ``u_i = d min(s ||x_i||, clip_norm /
    ||d||)``; an infinite residual keeps the signs of its infinite entries, a
    NaN, a zero residual or a row of norm 0 give 0.
    """
    r = residuals if residuals.ndim > 1 else residuals[:, None]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        s = np.max(np.abs(r), axis=1)
        infinite = np.isinf(s)[:, None]
        d = np.where(infinite, np.where(np.isinf(r), np.sign(r), 0.0), r / s[:, None])
        size = np.sqrt(np.einsum("ij,ij->i", d, d))
        u = d * np.minimum(s * row_norms, clip_norm / size)[:, None]
    u[~np.isfinite(u).all(axis=1)] = 0.0
    return u if residuals.ndim > 1 else u[:, 0]


def _clipped_coefficients(row_norms, residuals, clip_norm, sample_weight=None):
    """Coefficients of the clipped, weighted gradients: row i's is ``x_i c_i^T``.

    Returns ``(c, rescue)``. A coefficient ``w_i f_i r_i`` can overflow (a
    tiny ``||x_i||`` lets ``f_i r_i`` reach ``clip_norm / ||x_i||``, then a
    weight multiplies it) while the gradient it stands for is bounded by
    ``w_i clip_norm``. Such rows get ``c_i = 0`` and come back in ``rescue =
    (rows, v)``, the coefficients ``w_i u_i`` of the unit rows ``x_i /
    ||x_i||`` (:func:`_unit_clipped`); None when there is none.
    """
    # Non-finite coefficients (an infinite or NaN residual) are rescued below.
    flat = residuals.ndim == 1
    r_norms = None if flat else _residual_norms(residuals)
    c = _clipped_residuals(row_norms, residuals, clip_norm, repair=False, r_norms=r_norms)
    if sample_weight is not None:
        w = np.asarray(sample_weight, dtype=float)
        with np.errstate(over="ignore", invalid="ignore"):
            c = c * (w if flat else w[:, None])
    if c.size == 0:
        return c, None
    # A clip limit clip / ||x|| below the normal range is rounded coarsely (a
    # subnormal keeps few digits): those rows are clipped in unit-row form too.
    # (||x|| * tiny > clip, written so that nothing overflows.) The common case,
    # no such row, costs two reductions.
    # With several outputs the limit is clip / (||x|| ||r||): a product below the
    # normal range, or beyond the float range (its factor 0 would zero the row),
    # goes to unit-row form as well (NaN, from an infinite residual, too).
    tiny = np.finfo(float).tiny
    with np.errstate(invalid="ignore", under="ignore", over="ignore"):
        scale = row_norms if flat else row_norms * r_norms
        if np.max(np.abs(c)) <= _BIG and np.max(scale) * tiny <= clip_norm:
            return c, None
        big = ~(np.abs(c) <= _BIG)
        if not flat:
            big = big.any(axis=1)
        big |= ~(scale * tiny <= clip_norm)
    rows = np.flatnonzero(big)
    c[rows] = 0.0
    v = _unit_clipped(row_norms[rows], residuals[rows], clip_norm)
    if sample_weight is not None:
        with np.errstate(over="ignore"):  # at most clip_norm * w_i, finite for finite bounds
            v = v * (w[rows] if flat else w[rows][:, None])
    return c, (rows, v)


def _unit_rows(X, row_norms, rows, fit_intercept, scale=None):
    """``z_i / ||z_i||`` (scaled by ``scale`` if given) of the rescued rows, 0 for norm 0."""
    n = row_norms[rows]
    Z = X[rows] if scale is None else X[rows] * scale[:X.shape[1]]
    if fit_intercept:
        Z = np.column_stack([Z, np.ones(rows.size) if scale is None else
                             np.full(rows.size, float(scale[-1]))])
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        U = Z / n[:, None]
    U[~np.isfinite(U).all(axis=1)] = 0.0
    return U


def clipped_gradients(X, residuals, clip_norm: float, *, row_norms=None,
                      fit_intercept: bool = False, sample_weight=None) -> np.ndarray:
    """The clipped per-example gradients ``w_i clip(z_i r_i, clip_norm)`` as rows.

    For a scalar residual per row (squared or binary logistic loss). Each row
    has norm at most ``w_i * clip_norm``, and is finite for every input (an
    infinite or NaN residual, a tiny row norm times a large weight).

    Parameters
    ----------
    X : ndarray of shape (n, p)
        Entries beyond ``MAX_ABS`` (1e50) in magnitude are capped first, as
        the estimators' input is, so that every product stays finite.
    residuals : ndarray of shape (n,)
    clip_norm : float
    row_norms : ndarray of shape (n,), optional
        The norms the clip uses, ``||z_i||`` by default (``z_i = (x_i, [1])``);
        another norm, such as ``||P z_i||`` in preconditioned coordinates,
        clips ``P z_i r_i`` while the rows returned stay ``z_i (f_i r_i)``.
    fit_intercept : bool, default=False
        Append the constant column (last).
    sample_weight : ndarray of shape (n,), optional
        Applied after the clip.

    Returns
    -------
    ndarray of shape (n, p + fit_intercept)

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.clipping import clipped_gradients
    >>> clipped_gradients(np.array([[3.0, 4.0], [0.3, 0.4]]), np.array([1.0, np.inf]), 1.0)
    array([[0.6, 0.8],
           [0.6, 0.8]])
    """
    X = _cap(np.asarray(X, dtype=float))  # entries beyond MAX_ABS, as the estimators' input
    residuals = np.asarray(residuals, dtype=float)
    clip_norm = _check_clip_norm(clip_norm)
    if residuals.ndim != 1:
        raise ValueError(f"residuals must be 1-D, got shape {residuals.shape}.")
    if row_norms is None:
        row_norms = _row_norms(X, 1.0 if fit_intercept else 0.0)
    row_norms = np.asarray(row_norms, dtype=float)
    c, rescue = _clipped_coefficients(row_norms, residuals, clip_norm, sample_weight)
    G = X * c[:, None]
    if fit_intercept:
        G = np.column_stack([G, c])
    if rescue is not None:
        rows, v = rescue
        G[rows] = _unit_rows(X, row_norms, rows, fit_intercept) * v[:, None]
    return G


def clipped_gradient_sum(X, residuals, clip_norm: float, *, row_norms=None,
                         scale=None, fit_intercept: bool = False, squares: bool = False,
                         sample_weight=None):
    """Sum of the clipped per-example gradients of a linear model.

    Computes ``sum_i clip(s * x_i r_i^T, clip_norm)`` as ``s * X^T (f * r)``
    with f the clip factors, in O(n p K) time and O(n K) extra memory.

    Parameters
    ----------
    X : ndarray of shape (n, p)
        Entries beyond ``MAX_ABS`` (1e50) in magnitude are capped first, as
        the estimators' input is, so that every product stays finite.
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
        ``scale``; ``clip_norm`` at most 1e100 (beyond, the squares could
        overflow on one table and not on its neighbour).
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
    return _clipped_gradient_sum(_cap(np.asarray(X, dtype=float)), residuals, clip_norm,
                                 row_norms=row_norms, scale=scale, fit_intercept=fit_intercept,
                                 squares=squares, sample_weight=sample_weight)


def _clipped_gradient_sum(X, residuals, clip_norm, *, row_norms=None, scale=None,
                          fit_intercept=False, squares=False, sample_weight=None):
    """:func:`clipped_gradient_sum` for an X whose entries are at most MAX_ABS (the estimators').

    The estimators' input is capped when validated; capping it again at every
    step cost DP-GD 14% of its fit time at 10^6 x 20.
    """
    X = np.asarray(X, dtype=float)
    residuals = np.asarray(residuals, dtype=float)
    clip_norm = _check_clip_norm(clip_norm)
    if squares and clip_norm > 1e100:
        raise ValueError(f"With squares=True, clip_norm must be at most 1e100, got {clip_norm}: "
                         "the squared clipped gradients are summed.")
    flat = residuals.ndim == 1
    if scale is None:
        if row_norms is None:
            row_norms = _row_norms(X, 1.0 if fit_intercept else 0.0)
        row_norms = np.asarray(row_norms, dtype=float)
        weighted, rescue = _clipped_coefficients(row_norms, residuals, clip_norm, sample_weight)
        grad = _add_intercept_row(X.T @ weighted, weighted, fit_intercept)
        if rescue is not None:  # rows whose coefficient overflows: in unit-row form
            U = _unit_rows(X, row_norms, rescue[0], fit_intercept)
            grad = grad + U.T @ rescue[1]
        if not squares:
            return grad
        w2 = weighted * weighted
        square_total = _add_intercept_row((X * X).T @ w2, w2, fit_intercept)
        if rescue is not None:
            square_total = square_total + (U * U).T @ (rescue[1] * rescue[1])
        return grad, square_total
    if squares or sample_weight is not None:
        raise ValueError("squares and sample_weight are not supported with scale.")
    scale = np.asarray(scale, dtype=float)
    p = X.shape[1]
    # ||s * g_i||^2 = sum_k r_ik^2 sum_j s_jk^2 x_ij^2 (x_i with a trailing 1).
    if flat:
        norms = _row_norms(X * scale[:p], float(scale[p]) ** 2 if fit_intercept else 0.0)
        weighted, rescue = _clipped_coefficients(norms, residuals, clip_norm)
        total = scale * _add_intercept_row(X.T @ weighted, weighted, fit_intercept)
        if rescue is not None:  # already in the scaled geometry
            total = total + _unit_rows(X, norms, rescue[0], fit_intercept, scale).T @ rescue[1]
        return total
    s2 = scale * scale
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        # ||s * g_i|| from the row divided by its largest entry m (x**2 of a tiny
        # row underflows to 0, which would leave it unclipped), m put back after
        # the square root; the intercept's part added with hypot.
        m = np.max(np.abs(X), axis=1) if p else np.zeros(X.shape[0])
        safe = np.where(m > 0, m, 1.0)
        unit = X / safe[:, None]
        r2 = residuals * residuals
        norms = m * np.sqrt(np.sum(((unit * unit) @ s2[:p]) * r2, axis=1))
        if fit_intercept:
            norms = np.hypot(norms, np.sqrt(r2 @ s2[p]))
        norms = np.nextafter(norms, np.inf)  # rounded up: a clip never too loose
        weighted = residuals * _factors(norms, clip_norm)[:, None]
    # A non-finite residual (an overflowed iterate), or a coefficient beyond _BIG,
    # contributes nothing: the sum stays finite, with the same sensitivity.
    with np.errstate(invalid="ignore"):
        weighted[~(np.abs(weighted) <= _BIG).all(axis=1)] = 0.0
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
