"""DP-STAT: private approximate maximum by doubling with noisy counts.

Varshney, Thakurta & Jain (2022), Algorithm 3.
"""

from __future__ import annotations

import math

import numpy as np

from skdp.mechanisms._random import gaussian_release, record_release

__all__ = ["dp_stat", "dp_stat_n_levels"]


def dp_stat_n_levels(upper_bound: float, resolution: float, growth: float = 2.0) -> int:
    """Number of noisy counts DP-STAT may release: ``ceil(log(upper_bound / resolution) / log(growth))``.

    The candidate thresholds are ``resolution * growth**i`` for ``i = 0..L``;
    the last one (at least ``upper_bound``) is returned without a test, so at
    most L counts are released.

    Parameters
    ----------
    upper_bound : float
        Domain size B: the largest threshold.
    resolution : float
        Smallest threshold, in (0, upper_bound].
    growth : float, default=2.0
        Ratio of consecutive thresholds, > 1.

    Returns
    -------
    int
    """
    upper_bound = float(upper_bound)
    resolution = float(resolution)
    if not (np.isfinite(upper_bound) and upper_bound > 0):
        raise ValueError(f"upper_bound must be positive and finite, got {upper_bound}.")
    if not (np.isfinite(resolution) and 0 < resolution):
        raise ValueError(f"resolution must be positive and finite, got {resolution}.")
    growth = float(growth)
    if not (np.isfinite(growth) and growth > 1):
        raise ValueError(f"growth must be a finite number > 1, got {growth}.")
    if resolution >= upper_bound:
        return 0
    return int(math.ceil(math.log(upper_bound / resolution) / math.log(growth) - 1e-12))


def dp_stat(values, *, target_count: float, upper_bound: float, resolution: float,
            noise_std: float, rng: np.random.Generator,
            growth: float = 2.0, part=None) -> tuple[float, float]:
    """Private threshold that at least ``target_count`` of the values lie below.

    For ``i = 0, 1, ...`` the count ``c_i = #{j : values_j <= resolution * growth**i}``
    is released with Gaussian noise of std ``noise_std``; the first level whose
    noisy count reaches ``target_count`` is returned, or the top level
    ``resolution * growth**L`` (>= ``upper_bound``) if none does.

    Parameters
    ----------
    values : array-like of shape (s,)
        Non-negative statistics of the stat sample, one per row (e.g. absolute
        residuals). Each row must contribute exactly one value.
    target_count : float
        The paper stops when the noisy count reaches the sample size s; a
        smaller target (e.g. 0.9 s) makes the threshold a high quantile
        rather than the maximum, which is what makes it usable at moderate s.
        It is a public constant, so the choice does not affect privacy.
    upper_bound : float
        Domain size B: the largest threshold ever needed.
    resolution : float
        Discretisation width Delta: the smallest threshold.
    noise_std : float
        Std of the noise on each count, > 0 (ignored when L = 0).
    rng : numpy.random.Generator
    growth : float, default=2.0
        Ratio between consecutive levels; the paper doubles. A finer ratio
        (e.g. ``sqrt(2)``) overshoots the quantile by less but releases more
        counts (L grows as ``1 / log(growth)``), so each needs more noise for
        the same mu.
    part : hashable or None, default=None
        For :func:`skdp.mechanisms.record_releases`: the disjoint part of the
        rows (a stat sample) the counts read.

    Returns
    -------
    threshold : float
    mu : float
        GDP cost of the call: ``sqrt(L) / noise_std`` with L =
        :func:`dp_stat_n_levels`. Under replace-one adjacency each count
        changes by at most 1, and the output is a function of at most L noisy
        counts (an adaptive composition of L Gaussian mechanisms; stopping
        early only releases less).

    References
    ----------
    Varshney, Thakurta & Jain (2022), (Nearly) Optimal Private Linear
    Regression via Adaptive Clipping, Algorithm 3.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.clipping import dp_stat
    >>> from skdp.mechanisms import make_rng
    >>> values = np.abs(make_rng(0).standard_normal(1000))
    >>> gamma, mu = dp_stat(values, target_count=990, upper_bound=100.0,
    ...                     resolution=0.01, noise_std=5.0, rng=make_rng(1))
    >>> float(gamma), round(mu, 3)
    (2.56, 0.748)
    """
    values = np.asarray(values, dtype=float)
    if values.ndim != 1:
        raise ValueError(f"values must be 1-D, got shape {values.shape}.")
    if np.any(np.isnan(values)):
        raise ValueError("values contain NaN.")
    n_levels = dp_stat_n_levels(upper_bound, resolution, growth)
    if n_levels == 0:  # a single candidate: returned without reading the data
        return float(resolution), 0.0
    noise_std = float(noise_std)
    if not (np.isfinite(noise_std) and noise_std > 0):
        raise ValueError(f"noise_std must be positive and finite, got {noise_std}.")
    mu = math.sqrt(n_levels) / noise_std
    ordered = np.sort(values)
    for i in range(n_levels):
        gamma = float(resolution) * float(growth)**i
        count = np.searchsorted(ordered, gamma, side="right")
        noisy = gaussian_release(float(count), noise_std, rng, name="DP-STAT count",
                                 sensitivity=1.0, weight=None, part=part)
        if noisy >= target_count:
            # The levels not asked are paid for all the same (mu counts all L):
            # stopping early is post-processing of the L answers.
            for _ in range(i + 1, n_levels):
                record_release("DP-STAT count (not asked)", 1.0, noise_std, None, part)
            return gamma, mu
    return float(resolution) * float(growth)**n_levels, mu
