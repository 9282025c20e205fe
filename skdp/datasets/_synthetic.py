"""Generators for the synthetic experiments of Ganesh et al. 2025 §5.1 and Choquette-Choo et al. 2024 §2.2."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from skdp.mechanisms import make_rng

__all__ = ["make_power_law_regression", "make_sparse_logistic"]


def make_sparse_logistic(n_samples: int, *, sparsity: float = 0.9, theta: float = 1.0,
                         random_state=None) -> tuple[np.ndarray, np.ndarray]:
    """One-feature logistic data with most inputs zero (Ganesh et al. 2025 §5.1).

    ``x ~ N(0, 1)``, ``y ~ Bernoulli(sigmoid(theta x))``, then x is set to 0
    in a random ``sparsity`` fraction of the rows (their gradients vanish).

    Parameters
    ----------
    n_samples : int
    sparsity : float, default=0.9
        Fraction of rows with x = 0 (0 for the paper's test set).
    theta : float, default=1.0
        The true coefficient.
    random_state : int, Generator or None, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, 1)
    y : ndarray of shape (n_samples,) with values in {0, 1}

    Examples
    --------
    >>> from skdp.datasets import make_sparse_logistic
    >>> X, y = make_sparse_logistic(1000, random_state=0)
    >>> X.shape, float((X == 0).mean())
    ((1000, 1), 0.91)
    """
    rng = make_rng(random_state)
    x = rng.standard_normal(n_samples)
    y = (rng.random(n_samples) < expit(theta * x)).astype(int)
    x[rng.random(n_samples) < sparsity] = 0.0
    return x[:, None], y


def make_power_law_regression(n_samples: int, n_features: int = 20, *, decay: float = 1.5,
                              noise: float = 0.1, random_state=None):
    """Linear regression with Gaussian inputs whose covariance eigenvalues are ``k**-decay``.

    The setting of Choquette-Choo et al. 2024 §2.2: ``x ~ N(0, H)`` with H diagonal,
    ``H_kk = k**-decay`` (k = 1..d), ``y = <theta*, x> + noise * N(0, 1)``
    with ``theta* = (1, ..., 1) / sqrt(d)``. The excess risk of w is
    ``(w - theta*)^T H (w - theta*) / 2``.

    Parameters
    ----------
    n_samples, n_features : int
    decay : float, default=1.5
    noise : float, default=0.1
    random_state : int, Generator or None, default=None

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    theta : ndarray of shape (n_features,)
    eigenvalues : ndarray of shape (n_features,)
        The diagonal of H.

    Examples
    --------
    >>> from skdp.datasets import make_power_law_regression
    >>> X, y, theta, h = make_power_law_regression(5, 3, random_state=0)
    >>> h.round(3)
    array([1.   , 0.354, 0.192])
    """
    rng = make_rng(random_state)
    eigenvalues = np.arange(1, n_features + 1, dtype=float) ** -decay
    X = rng.standard_normal((n_samples, n_features)) * np.sqrt(eigenvalues)
    theta = np.ones(n_features) / np.sqrt(n_features)
    y = X @ theta + noise * rng.standard_normal(n_samples)
    return X, y, theta, eigenvalues
