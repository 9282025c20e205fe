"""Declared bounds on features and label: clip, map to [-1, 1], and map results back.

A user who knows the range of each column from a data dictionary (not from
the data) declares it as ``bounds_X=(lower, upper)`` and
``bounds_y=(lower, upper)``, scalars or one value per feature, as in
diffprivlib. Values outside are clipped to the bounds (a fixed map applied
to each row on its own, so neighbouring datasets stay neighbours), and the
fit runs on ``(v - centre) / half_width``, which lies in [-1, 1]. Every
fitted coefficient is then mapped back to the original scale by the affine
map of :func:`original_scale_map`; intervals and covariances follow through
its linear part.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from skdp.utils._dask import is_dask
from skdp.utils._validation import check_bounds

__all__ = ["Scaling", "check_bounds", "make_scaling", "original_scale_map"]


class Scaling(NamedTuple):
    """Affine maps ``v -> (v - centre) / scale`` of the features and the label."""

    centre_x: np.ndarray
    scale_x: np.ndarray
    centre_y: float
    scale_y: float
    lower_x: np.ndarray | None
    upper_x: np.ndarray | None
    lower_y: float | None
    upper_y: float | None

    def transform(self, X, y):
        """Clip to the bounds (where declared) and map to the fitting scale.

        In memory the mapped X is one new array, mapped in place: the fit's
        extra memory is one copy of X, not the three a chain of array
        expressions would hold at once. A Dask X stays lazy.
        """
        if self.lower_x is not None:
            X = _affine(X, self.lower_x, self.upper_x, self.centre_x, self.scale_x)
        if self.lower_y is not None:
            y = _affine(y, self.lower_y, self.upper_y, self.centre_y, self.scale_y)
        return X, y


def _affine(a, lower, upper, centre, scale):
    if is_dask(a):
        return (a.clip(lower, upper) - centre) / scale
    out = np.clip(a, lower, upper)
    out -= centre
    out /= scale
    return out


def make_scaling(bounds_x, bounds_y, n_features: int, fit_intercept: bool) -> Scaling:
    """The fitting scale of declared bounds (identity where none is declared).

    With an intercept, each column is centred at the middle of its bounds and
    divided by half their width, so it lies in [-1, 1]. Without an intercept
    centring would add one, so each column is only divided by
    ``max(|lower|, |upper|)``.

    Parameters
    ----------
    bounds_x, bounds_y : tuple or None
        As validated by :func:`check_bounds`.
    n_features : int
    fit_intercept : bool

    Returns
    -------
    Scaling
    """
    def centre_scale(lower, upper):
        if fit_intercept:
            return (lower + upper) / 2.0, (upper - lower) / 2.0
        return np.zeros_like(lower), np.maximum(np.abs(lower), np.abs(upper))

    if bounds_x is None:
        cx, sx, lx, ux = np.zeros(n_features), np.ones(n_features), None, None
    else:
        lx, ux = bounds_x
        cx, sx = centre_scale(lx, ux)
    if bounds_y is None:
        cy, sy, ly, uy = 0.0, 1.0, None, None
    else:
        ly, uy = float(bounds_y[0][0]), float(bounds_y[1][0])
        c, s = centre_scale(bounds_y[0], bounds_y[1])
        cy, sy = float(c[0]), float(s[0])
    return Scaling(cx, sx, cy, sy, lx, ux, ly, uy)


def original_scale_map(scaling: Scaling, fit_intercept: bool):
    """``theta_original = M @ theta_scaled + offset`` for coefficients (intercept last).

    On the fitting scale the model is ``(y - cy) / sy = sum_j t_j (x_j - cx_j)
    / sx_j + t_0``, so on the original scale the slope of feature j is
    ``sy t_j / sx_j`` and the intercept is ``cy + sy (t_0 - sum_j t_j cx_j / sx_j)``.

    Parameters
    ----------
    scaling : Scaling
    fit_intercept : bool

    Returns
    -------
    M : ndarray of shape (q, q)
    offset : ndarray of shape (q,)
    """
    p = scaling.centre_x.shape[0]
    q = p + int(fit_intercept)
    M = np.zeros((q, q))
    M[np.arange(p), np.arange(p)] = scaling.scale_y / scaling.scale_x
    offset = np.zeros(q)
    if fit_intercept:
        M[p, :p] = -scaling.scale_y * scaling.centre_x / scaling.scale_x
        M[p, p] = scaling.scale_y
        offset[p] = scaling.centre_y
    return M, offset
