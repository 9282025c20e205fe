"""A preconditioner, a pilot estimate and a step plan from one private Gram matrix.

The private Gram matrix of the rows ``(z_i, y_i)`` (``z_i = (x_i, [1])``)
released by :func:`skdp.mechanisms.private_gram` is all that this module
reads: everything here is post-processing, with no data and no budget.

With ``A = Z^T W Z / n`` (the Hessian of the least-squares loss) and its noisy
release ``A_hat = A + E``, the preconditioner is ``P = (A_hat + r I)^{-1/2}``
where the ridge ``r`` bounds the spectral norm of E with high probability
(``r = noise_std (2 sqrt(q) + 6) / n``: the norm of a symmetric Gaussian
matrix concentrates at ``2 sqrt(q)`` entry standard deviations, and 6 more
make a larger norm a ``< 1e-4`` event). Then ``A_hat + r I >= A`` and the
preconditioned Hessian ``P A P`` has every eigenvalue in ``(0, 1]``: gradient
descent in the coordinates ``w = P^{-1} theta`` with step 1 is stable and
contracts each direction by ``1 - lambda``. Its smallest eigenvalue is about
``(lambda_min(A_hat) - e) / (lambda_min(A_hat) + r)`` with ``e = noise_std 2
sqrt(q) / n`` the typical norm of the noise (``r`` in place of ``e`` would be
a high-probability lower bound, too pessimistic to plan with); it sets how
many steps make the iterates stationary (:func:`plan_steps`). The plan needs
no guarantee: the interval's standard error also guards against slow mixing
(:func:`~skdp.linear_model._intervals.mean_standard_error`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

__all__ = ["Preconditioner", "gram_preconditioner", "max_steps", "plan_steps"]

#: Ridge in units of the Gram noise std per row: 2 sqrt(q) + RIDGE_MARGIN.
RIDGE_MARGIN = 6.0
#: Slowest contraction the step plan assumes (a smaller bound is raised to it).
MIN_CONTRACTION = 0.005


class Preconditioner(NamedTuple):
    """``P``, ``P**2``, the pilot ``theta0``, a bound on the spectrum of ``P A P``, and ``A_hat``."""

    root: np.ndarray
    square: np.ndarray
    pilot: np.ndarray
    min_eigenvalue: float
    ridge: float
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    mean_contraction: float


def gram_preconditioner(gram: np.ndarray, noise_std: float, n: int) -> Preconditioner:
    """Preconditioner and pilot from a private Gram matrix of ``(z, y)`` rows.

    Parameters
    ----------
    gram : ndarray of shape (q + 1, q + 1)
        Private ``sum_i w_i (z_i, y_i)(z_i, y_i)^T`` (the label last).
    noise_std : float
        Std of the Gaussian noise on each entry of its upper triangle.
    n : int
        Public number of rows.

    Returns
    -------
    Preconditioner
        ``pilot`` is the ridge solution ``(A_hat + r I)^{-1} b_hat`` with
        ``b_hat = Z^T W y / n`` (noisy): a start for gradient descent.
        ``min_eigenvalue`` is the estimate of the module notes, at least 0.
        ``eigenvalues`` (floored at 0) and ``eigenvectors`` are those of
        ``A_hat``. ``mean_contraction`` is the plug-in average eigenvalue of
        ``P A P``, ``mean(lambda / (lambda + r))`` over the eigenvalues of
        ``A_hat``: the typical contraction of a step.
    """
    q = gram.shape[0] - 1
    a_hat = gram[:q, :q] / n
    b_hat = gram[:q, q] / n
    ridge = float(noise_std) * (2.0 * math.sqrt(q) + RIDGE_MARGIN) / n
    lam, V = np.linalg.eigh(a_hat)
    lam = np.maximum(lam, 0.0)
    inv = 1.0 / (lam + ridge) if ridge > 0 else 1.0 / np.maximum(lam, np.finfo(float).tiny)
    root = (V * np.sqrt(inv)) @ V.T
    square = (V * inv) @ V.T
    typical = float(noise_std) * 2.0 * math.sqrt(q) / n  # typical spectral norm of the noise
    low = float(np.min((lam - typical) / (lam + ridge))) if ridge > 0 else 1.0
    mean = float(np.mean(lam / (lam + ridge))) if ridge > 0 else 1.0
    return Preconditioner(root, square, square @ b_hat, max(low, 0.0), ridge, lam, V, mean)


def max_steps(n: int, q: int, mu: float, max_weight: float = 1.0,
              contraction: float = 0.5) -> int:
    """Most steps before the noise alone pushes the gradients past the clip norm.

    With T steps the noise on each mean gradient has std ``s = sqrt(T) 2 W C /
    (n mu)`` per coordinate. In a direction that contracts by ``a`` per step
    (step size 1) the iterates wander by about ``s / sqrt(2 a)``, and a row's
    gradient norm by about ``||P z|| s / sqrt(2 a) ~ sqrt(q) s / sqrt(2 a)``.
    Keeping that below C (so that the clipping stays mostly inactive near the
    least-squares solution and the iteration stays linear) gives
    ``T <= (n mu / (2 W sqrt(q)))**2 * 2 a``, with ``a`` the typical
    contraction, at most 1/2.

    Parameters
    ----------
    n : int
    q : int
        Coefficients.
    mu : float
        GDP budget of the gradient steps.
    max_weight : float, default=1.0
    contraction : float, default=0.5
        Typical contraction per step (:attr:`Preconditioner.mean_contraction`).

    Returns
    -------
    int
    """
    factor = 2.0 * min(max(contraction, 0.0), 0.5)
    bound = (n * mu / (2.0 * max_weight * math.sqrt(q))) ** 2 * factor
    return int(min(bound, 1e9))


def plan_steps(min_eigenvalue: float, learning_rate: float, n_batches: int) -> tuple[int, int]:
    """Burn-in and total steps that make the iterates stationary and the batches nearly independent.

    In the preconditioned coordinates each direction of the noisy iteration is
    an AR(1) process with coefficient ``phi = 1 - learning_rate * lambda``.
    The slowest (``lambda`` at its lower bound, raised to
    :data:`MIN_CONTRACTION`) sets both numbers: the burn-in shrinks the
    distance from the start by ``1e-3`` (``phi**burn_in <= 1e-3``, at least 3
    steps), and batches of ``L = max(2, ceil(8 phi / (1 - phi)))`` steps have
    lag-one correlation about ``1 / (2 L (1 - phi)) <= 1/16``, so the
    batched-means standard error is at most ~5% too small.

    Parameters
    ----------
    min_eigenvalue : float
        Lower bound on the spectrum of the preconditioned Hessian.
    learning_rate : float
    n_batches : int

    Returns
    -------
    burn_in, n_iter : int
    """
    rate = min(1.0, learning_rate * max(min_eigenvalue, MIN_CONTRACTION))
    phi = 1.0 - rate
    burn_in = 3 if phi <= 1e-3 else max(3, math.ceil(math.log(1e-3) / math.log(phi)))
    length = max(2, math.ceil(8.0 * phi / rate))
    return burn_in, burn_in + n_batches * length
