"""Private sandwich covariance of least squares, and a private count of the clipping, at an estimate.

One pass over the rows at a released estimate theta releases, with Gaussian
noise,

- the *meat* ``sum_i c_i c_i^T`` of the clipped per-example gradients
  ``c_i = w_i clip(P z_i r_i, C)`` in the preconditioned coordinates (``r_i =
  z_i . theta - y_i``), of replace-one sensitivity ``sqrt(2) W**2 C**2``
  (:func:`skdp.mechanisms.gram_sensitivity` with bound ``W C``);
- the weighted count of the gradients clipped by more than the estimate's
  own noise explains, ``sum_i (w_i / W) 1{||P z_i|| (|r_i| - z s_i) > C}``
  with ``s_i`` the standard deviation of ``z_i . theta`` under the
  estimate's (public, post-processed) covariance and z a public margin;
  replacing a row moves it by at most 1 (sensitivity 1).

The margin matters where the privacy noise is large against the residuals
(small tables at small epsilon): there the noisy estimate sits far enough
from the solution that a quarter of the rows can be clipped *at the
estimate* while none is at the solution, and a count at the estimate
reports clipping that does not bias anything.

The heteroskedasticity-consistent (HC1) covariance of least squares is
``n / (n - q) A^{-1} S A^{-1} / n`` with ``A = Z^T W Z / n`` and ``S = sum_i
w_i**2 r_i**2 z_i z_i^T / n``; :func:`sandwich_covariance` assembles it from
the private Gram and the private meat (post-processing).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from skdp.clipping import clipped_gradients, squared_loss_residuals
from skdp.clipping._clip import _row_norms
from skdp.mechanisms import gaussian_release, symmetric_release
from skdp.mechanisms._gram import gram_sensitivity
from skdp.utils._rows import sum_rows

__all__ = ["private_meat_and_clipping", "sandwich_covariance"]


def projected_row_norms(Xb, root, fit_intercept: bool) -> np.ndarray:
    """``||R^T z_i||`` for the rows of one block (``z_i = (x_i, [1])``; R = I when root is None).

    With R the preconditioner P these are the preconditioned rows' norms; with
    ``R R^T = Sigma`` they are the standard deviations of ``z_i . theta`` when
    theta has covariance Sigma.
    """
    if root is None:
        return _row_norms(Xb, 1.0 if fit_intercept else 0.0)
    p = Xb.shape[1]
    U = Xb @ root[:p]
    if fit_intercept:
        U += root[p]
    return _row_norms(U)


def _covariance_root(cov: np.ndarray) -> np.ndarray:
    """R with ``R R^T = cov`` (negative eigenvalues, from rounding, taken as 0)."""
    eigenvalues, eigenvectors = np.linalg.eigh(0.5 * (cov + cov.T))
    return eigenvectors * np.sqrt(np.maximum(eigenvalues, 0.0))


def _meat_block(Xb, yb, wb, lev, *, theta, clip_norm, max_weight, fit_intercept, cov_root,
                margin):
    r = squared_loss_residuals(Xb, yb, theta, fit_intercept=fit_intercept)
    # The gradient norm with the residual moved `margin` of its standard deviations
    # towards 0: beyond the clip, the row is clipped at any solution that close to
    # theta. (An overflowing margin, from extreme features, counts no row.)
    with np.errstate(over="ignore", invalid="ignore"):
        slack = 0.0 if cov_root is None else margin * projected_row_norms(Xb, cov_root,
                                                                           fit_intercept)
        norms = lev * (np.abs(r) - slack)
    G = clipped_gradients(Xb, r, clip_norm, row_norms=lev, fit_intercept=fit_intercept,
                          sample_weight=wb)
    meat = G.T @ G
    # Each row counts w_i / W. Unit weights arrive as None (check_weights), but W is
    # max_weight whenever weights were passed: 1 / W each, not 1, or the count's scale
    # would depend on whether every weight is exactly 1.
    share = np.full_like(r, 1.0 / max_weight) if wb is None else wb / max_weight
    return meat, np.array([share @ (norms > clip_norm)])


def private_meat_and_clipping(X, y, sample_weight, leverage, theta, *, clip_norm: float,
                              max_weight: float, fit_intercept: bool, root: np.ndarray,
                              mu_meat: float, mu_check: float, rng: np.random.Generator,
                              theta_cov: np.ndarray | None = None, margin: float = 0.0):
    """Private meat (preconditioned coordinates) and count of clipped gradients at ``theta``.

    The count takes each row's residual ``margin`` standard deviations of
    ``z_i . theta`` (under ``theta_cov``) closer to 0 before comparing its
    gradient norm with the clip: a row counts only if its gradient would
    still be clipped at any solution within that distance of ``theta``.

    Parameters
    ----------
    X : ndarray of shape (n, p)
    y : ndarray of shape (n,)
    sample_weight : ndarray of shape (n,) or None
    leverage : ndarray of shape (n,)
        ``||P z_i||``, the norms of the preconditioned rows.
    theta : ndarray of shape (q,)
    clip_norm : float
        C, in the preconditioned coordinates.
    max_weight : float
    fit_intercept : bool
    root : ndarray of shape (q, q)
        The preconditioner P (symmetric).
    mu_meat, mu_check : float
        GDP budgets of the two releases; 0 skips a release (it is then None).
    rng : numpy.random.Generator
    theta_cov : ndarray of shape (q, q) or None, default=None
        Covariance of ``theta`` around the solution it estimates (public:
        post-processing of earlier releases); None counts the rows clipped
        at ``theta`` itself.
    margin : float, default=0.0
        z, in standard deviations of each row's ``z_i . theta``.

    Returns
    -------
    meat : ndarray of shape (q, q) or None
        ``P (sum_i c_i**2 z_i z_i^T) P`` plus symmetric noise.
    meat_std : float
        Its noise std per entry (0 when not released).
    clipping : ndarray of shape (1,) or None
        Noisy weighted count of the gradients clipped beyond the margin.
    clipping_std : float
    """
    block = partial(_meat_block, theta=theta, clip_norm=float(clip_norm),
                    max_weight=float(max_weight), fit_intercept=fit_intercept,
                    cov_root=None if theta_cov is None else _covariance_root(theta_cov),
                    margin=float(margin))
    meat_theta, counts = sum_rows(block, X, y, sample_weight, leverage)
    meat, meat_std, clipping, clipping_std = None, 0.0, None, 0.0
    if mu_meat > 0:
        meat_sens = gram_sensitivity(max_weight * clip_norm)
        meat_std = meat_sens / mu_meat
        exact = root @ meat_theta @ root
        meat = symmetric_release(0.5 * (exact + exact.T), meat_std, rng, name="sandwich meat",
                                 sensitivity=meat_sens, weight=max_weight, weight_power=2)
    if mu_check > 0:
        clipping_std = 1.0 / mu_check
        # A row moves the count by at most 1 (weights enter as w_i / W <= 1, and each
        # row's margin is a public function of its own features).
        clipping = gaussian_release(counts, clipping_std, rng, name="clipping check",
                                    sensitivity=1.0, weight=None)
    return meat, meat_std, clipping, clipping_std


def sandwich_covariance(meat: np.ndarray, hessian_eigs: tuple, root: np.ndarray,
                        n: int) -> np.ndarray:
    """HC1 sandwich covariance of the coefficients from private pieces (post-processing).

    Parameters
    ----------
    meat : ndarray of shape (q, q)
        Private meat in the preconditioned coordinates; it is projected to
        the positive semi-definite cone (negative eigenvalues, which only
        noise can cause, set to 0).
    hessian_eigs : (ndarray, ndarray)
        Eigenvalues (floored by the caller) and eigenvectors of the private
        ``A_hat = Z^T W Z / n``.
    root : ndarray of shape (q, q)
        P, so that the meat in the coefficients' coordinates is
        ``P^{-1} meat P^{-1}``.
    n : int

    Returns
    -------
    ndarray of shape (q, q)
        ``n / (n - q) A^{-1} S A^{-1} / n`` in the coefficients' coordinates.
    """
    q = meat.shape[0]
    w, V = np.linalg.eigh((meat + meat.T) / 2.0)
    meat_psd = (V * np.maximum(w, 0.0)) @ V.T
    lam, U = hessian_eigs
    a_inv = (U / lam) @ U.T
    p_inv = np.linalg.pinv(root, hermitian=True)
    left = a_inv @ p_inv
    cov = left @ meat_psd @ left.T / (n * n)
    return cov * n / max(n - q, 1)
