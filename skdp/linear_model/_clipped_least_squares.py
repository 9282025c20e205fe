"""The solution of DP-GD's clipped least-squares problem: what its intervals cover.

DP-GD clips each per-example gradient ``w_i P z_i r_i`` of the squared loss
(``r_i = z_i . theta - y_i``, P the preconditioner) to the norm C. Its
iterates settle where the mean clipped gradient vanishes, ``sum_i w_i z_i
psi_i(r_i) = 0`` with ``psi_i(r) = clip(r, -c_i, c_i)`` and ``c_i = C / ||P
z_i||``: the stationary point of a Huber loss whose threshold differs from
row to row (rows of high leverage are clipped at smaller residuals). The
loss is convex, and its minimiser is least squares when no row's residual
there exceeds its threshold. :func:`clipped_least_squares` finds it by
iteratively reweighted least squares, the majorise-minimise scheme for
Huber's loss (Huber 1981, section 7.8): each step solves least squares
with the weights ``w_i min(1, c_i / |r_i|)`` at the current residuals, and
the loss does not increase.

This reads the data without privacy: it is for checks on data one may see
(simulations, an audit by the data's owner), never for release.
"""

from __future__ import annotations

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from skdp.clipping import gradient_clip_factors
from skdp.utils._warnings import warn

__all__ = ["clipped_least_squares"]


def clipped_least_squares(Z: np.ndarray, y: np.ndarray, row_norms: np.ndarray, clip_norm: float,
                          sample_weight: np.ndarray | None = None, *, tol: float = 1e-10,
                          max_iter: int = 1000) -> np.ndarray:
    """Minimise ``sum_i w_i huber(z_i . theta - y_i; c_i)``, ``c_i = clip_norm / row_norms_i``.

    ``huber(r; c)`` is ``r**2 / 2`` for ``|r| <= c`` and ``c |r| - c**2 / 2``
    beyond. The reweighting is the fit's own clip factor,
    :func:`skdp.clipping.gradient_clip_factors` (``min(1, c_i / |r_i|)``).

    Parameters
    ----------
    Z : ndarray of shape (n, q)
        The rows as the model sees them (with the intercept column).
    y : ndarray of shape (n,)
    row_norms : ndarray of shape (n,)
        The norms the gradients' clip sees (``||P z_i||`` for DP-GD); 0 for
        a row never clipped.
    clip_norm : float
    sample_weight : ndarray of shape (n,) or None, default=None
    tol : float, default=1e-10
        Stop when an iteration moves theta by at most ``tol (1 + ||theta||)``.
    max_iter : int, default=1000

    Returns
    -------
    ndarray of shape (q,)
        The minimiser (of least norm where the rows leave a direction free,
        as ``numpy.linalg.lstsq``). Where the iterations stop before ``tol``
        a ``ConvergenceWarning`` says so.
    """
    w = np.ones(y.shape[0]) if sample_weight is None else np.asarray(sample_weight, float)

    def weighted_lstsq(v):
        root = np.sqrt(v)
        return np.linalg.lstsq(Z * root[:, None], y * root, rcond=None)[0]

    theta = weighted_lstsq(w)
    for _ in range(max_iter):
        new = weighted_lstsq(w * gradient_clip_factors(row_norms, Z @ theta - y, clip_norm))
        moved = np.linalg.norm(new - theta)
        theta = new
        if moved <= tol * (1.0 + np.linalg.norm(theta)):
            return theta
    warn(f"The clipped least-squares solution did not converge in {max_iter} "
                  "iterations; the last iterate is returned.", ConvergenceWarning)
    return theta
