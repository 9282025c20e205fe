"""Confidence intervals from a list of (nearly) independent private estimates.

Brown et al. (2024), Section 3.1: m estimates theta^(1..m), their mean,
and Student-t intervals ``mean +- t_{1 - alpha/2, m-1} * sd / sqrt(m)``.
Everything here is post-processing of released iterates: no data, no budget.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["CI_METHODS", "estimate_weights", "halves_contrast", "mean_standard_error",
           "split_estimates", "t_bounds", "t_interval"]

CI_METHODS = ("batched_means", "checkpoints", "independent_runs")


def split_estimates(iterates: np.ndarray, method: str, burn_in: int, n_batches: int) -> np.ndarray:
    """The m estimates of one run's iterates (after ``burn_in``) for a CI method.

    Parameters
    ----------
    iterates : ndarray of shape (T, p)
        Iterates theta_1..theta_T of one DP-GD run.
    method : {'batched_means', 'checkpoints'}
        ``'batched_means'``: the post-burn-in iterates are cut into
        ``n_batches`` consecutive batches of equal length (the oldest
        remainder is dropped) and each batch is averaged. ``'checkpoints'``:
        every (T - burn_in) // n_batches-th iterate after the burn-in.
    burn_in : int
    n_batches : int

    Returns
    -------
    ndarray of shape (n_batches, p)
    """
    kept = iterates[burn_in:]
    length = kept.shape[0] // n_batches
    if length < 1:
        raise ValueError(f"{kept.shape[0]} post-burn-in iterates cannot form {n_batches} batches.")
    kept = kept[kept.shape[0] - length * n_batches:]
    if method == "batched_means":
        return kept.reshape(n_batches, length, -1).mean(axis=1)
    if method == "checkpoints":
        return kept[length - 1::length]
    raise ValueError(f"Unknown method {method!r}.")



def estimate_weights(n_iter: int, method: str, burn_in: int, n_batches: int) -> np.ndarray:
    """Weights of a run's iterates in the mean of its estimates (they sum to 1).

    For ``'batched_means'`` and ``'checkpoints'`` the mean of the
    :func:`split_estimates` of a run of ``n_iter`` iterates; for
    ``'independent_runs'`` the mean of the run's post-burn-in iterates.

    Parameters
    ----------
    n_iter : int
        Iterates of the run.
    method : {'batched_means', 'checkpoints', 'independent_runs'}
    burn_in : int
    n_batches : int

    Returns
    -------
    ndarray of shape (n_iter,)
    """
    w = np.zeros(n_iter)
    if method == "independent_runs":
        w[burn_in:] = 1.0 / (n_iter - burn_in)
        return w
    kept = n_iter - burn_in
    length = kept // n_batches
    start = n_iter - length * n_batches
    if method == "batched_means":
        w[start:] = 1.0 / (length * n_batches)
    else:
        w[start + length - 1::length] = 1.0 / n_batches
    return w


def halves_contrast(n_iter: int, method: str, burn_in: int, n_batches: int) -> np.ndarray:
    """Weights of a run's iterates in the first half of its estimates' mean less the second's.

    For ``'batched_means'`` and ``'checkpoints'`` the estimates are those of
    :func:`split_estimates`; with m of them, the first ``m // 2`` are
    averaged against the rest. For ``'independent_runs'`` (one run of
    ``n_iter`` iterates, each run giving one estimate) the first half of the
    post-burn-in iterates is averaged against the second (the oldest one
    dropped when their number is odd). The weights sum to 0.

    Parameters
    ----------
    n_iter : int
        Iterates of the run.
    method : {'batched_means', 'checkpoints', 'independent_runs'}
    burn_in : int
    n_batches : int

    Returns
    -------
    ndarray of shape (n_iter,)
    """
    if method == "independent_runs":
        half = (n_iter - burn_in) // 2
        c = np.zeros(n_iter)
        if half > 0:  # one kept iterate has no halves: no contrast
            c[n_iter - 2 * half:n_iter - half] = 1.0 / half
            c[n_iter - half:] = -1.0 / half
        return c
    m = n_batches
    c = estimate_weights(n_iter, method, burn_in, m) * m  # each estimate's own weights
    length = (n_iter - burn_in) // m
    split = n_iter - length * m + (m // 2) * length
    c[:split] /= m // 2
    c[split:] /= -(m - m // 2)
    return c


def t_interval(estimates: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean, standard error and Student-t interval of m estimates, per coordinate.

    Parameters
    ----------
    estimates : ndarray of shape (m, p)
    alpha : float
        In (0, 1); the interval has nominal coverage 1 - alpha.

    Returns
    -------
    mean : ndarray of shape (p,)
    se : ndarray of shape (p,)
        ``sd / sqrt(m)`` with the unbiased (m - 1) sample sd.
    interval : ndarray of shape (p, 2)
    """
    m = estimates.shape[0]
    mean = estimates.mean(axis=0)
    se = estimates.std(axis=0, ddof=1) / np.sqrt(m)
    return mean, se, t_bounds(mean, se, m, alpha)


def t_bounds(center: np.ndarray, se: np.ndarray, m: int, alpha: float) -> np.ndarray:
    """``center +- t_{1 - alpha/2, m - 1} * se`` as an array of shape (p, 2)."""
    half = stats.t.ppf(1.0 - alpha / 2.0, df=m - 1) * se
    return np.column_stack([center - half, center + half])


def mean_standard_error(series: np.ndarray) -> np.ndarray:
    """Standard error of the mean of a stationary, autocorrelated series, per column.

    Geyer's (1992) initial positive sequence estimator: the autocovariances
    ``gamma_k`` are summed in pairs ``Gamma_j = gamma_{2j} + gamma_{2j+1}``
    up to the first non-positive pair, and the variance of the mean of N
    values is ``(-gamma_0 + 2 sum_j Gamma_j) / N``. Unlike batch means it does
    not assume the batches are independent, so it guards the batched-means
    interval when the iterates mix slowly. Post-processing of released
    iterates only.

    Parameters
    ----------
    series : ndarray of shape (N, p)

    Returns
    -------
    ndarray of shape (p,)
    """
    x = np.asarray(series, dtype=float)
    n = x.shape[0]
    x = x - x.mean(axis=0)
    size = 1 << (2 * n - 1).bit_length()
    spectrum = np.fft.rfft(x, n=size, axis=0)
    acov = np.fft.irfft(spectrum * np.conj(spectrum), n=size, axis=0)[:n] / n
    pairs = acov[0:n - 1:2] + acov[1:n:2]
    # Keep the pairs before the first non-positive one (per column).
    positive = np.cumprod(pairs > 0, axis=0).astype(bool)
    var = -acov[0] + 2.0 * np.sum(np.where(positive, pairs, 0.0), axis=0)
    return np.sqrt(np.maximum(var, acov[0]) / n)
