"""Private quantiles by noisy binary search over a fixed geometric grid.

This is the bound-finding step skdp runs when a user declares no bound (a
row-norm bound, a gradient clip norm, a feature range). It uses DP-STAT's
machinery (Varshney, Thakurta & Jain 2022, Algorithm 3): candidate
thresholds on a public geometric grid and Gaussian noise on counts. DP-STAT
scans the levels upwards and releases one count per level; a binary search
over the same kind of grid releases only ``ceil(log2(levels))`` counts, so
at the same budget each count gets ``sqrt(levels / log2(levels))`` times
less noise, and the grid can be fine (ratio ``2**(1/8)``) and wide (2**-32
to 2**32) at once.

The query at a threshold g for quantile q is the signed count

    s(g) = sum_i w_i (1{v_i <= g} - q),

positive when more than a share q of the (weighted) rows lie at or below
g. Replacing one row changes it by at most ``max_weight`` (a row's term lies
in ``[-q w, (1 - q) w]``), and it needs no total count: the number of rows,
or their total weight, never enters the comparison.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from skdp.mechanisms._random import gaussian_release
from skdp.utils._rows import sum_rows

__all__ = ["effective_quantile", "geometric_grid", "private_norm_quantile", "private_quantiles",
           "quantile_statistics", "search_noise_std"]

#: Default grid: 2**(k / 8) for k = -256..256, about 2.3e-10 to 4.3e9.
DEFAULT_GRID = dict(lower=2.0**-32, upper=2.0**32, ratio=2.0**0.125)


def geometric_grid(lower: float = DEFAULT_GRID["lower"], upper: float = DEFAULT_GRID["upper"],
                   ratio: float = DEFAULT_GRID["ratio"], *, signed: bool = False) -> np.ndarray:
    """Candidate thresholds ``lower * ratio**k`` up to ``upper`` (public constants).

    Parameters
    ----------
    lower, upper : float
        Smallest and largest magnitude, ``0 < lower < upper``.
    ratio : float
        Ratio between neighbours, > 1: the relative resolution of the result.
    signed : bool, default=False
        Also the negated thresholds and 0, in increasing order (for the range
        of a feature rather than a norm).

    Returns
    -------
    ndarray
        Increasing.

    Examples
    --------
    >>> from skdp.clipping import geometric_grid
    >>> geometric_grid(1.0, 8.0, 2.0)
    array([1., 2., 4., 8.])
    >>> geometric_grid(1.0, 2.0, 2.0, signed=True)
    array([-2., -1.,  0.,  1.,  2.])
    """
    lower, upper, ratio = float(lower), float(upper), float(ratio)
    if not (0.0 < lower < upper < math.inf) or not (1.0 < ratio < math.inf):
        raise ValueError(f"Need 0 < lower < upper < inf and ratio > 1, got lower={lower}, "
                         f"upper={upper}, ratio={ratio}.")
    k = int(math.ceil(math.log(upper / lower) / math.log(ratio) - 1e-9))
    grid = lower * ratio ** np.arange(k + 1)
    if signed:
        grid = np.concatenate([-grid[::-1], [0.0], grid])
    return grid


def quantile_statistics(values, grid, quantiles, sample_weight=None) -> np.ndarray:
    """Signed counts ``s[k, j] = sum_i w_i (1{values[i, j] <= grid[k]} - quantiles[j])``.

    A sum over rows (so it can be computed block by block and added up); the
    binary search of :func:`private_quantiles` reads at most
    ``ceil(log2(len(grid)))`` of its rows per column, each with noise.

    Parameters
    ----------
    values : array-like of shape (n, m)
    grid : ndarray of shape (K,)
        Increasing thresholds.
    quantiles : array-like of shape (m,)
    sample_weight : array-like of shape (n,), optional

    Returns
    -------
    ndarray of shape (K, m)
    """
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    n, m = values.shape
    w = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    q = np.broadcast_to(np.asarray(quantiles, dtype=float), (m,))
    K = grid.shape[0]
    out = np.empty((K, m))
    for j in range(m):
        # Index of the first threshold >= v: the row counts at that level and above.
        idx = np.searchsorted(grid, values[:, j], side="left")
        hist = np.bincount(idx, weights=w, minlength=K + 1)[:K]
        out[:, j] = np.cumsum(hist) - q[j] * w.sum()
    return out


def private_quantiles(statistics, grid, *, mu: float, rng: np.random.Generator,
                      max_weight: float | None = 1.0, part=None) -> np.ndarray:
    """Noisy binary search for the quantile of every column (one Gaussian query per step).

    Step by step, every column asks whether its signed count at the middle
    of its current interval of grid indices is >= 0 (with Gaussian noise), and
    keeps the lower or upper half. After ``ceil(log2(K))`` steps each
    column's interval is one threshold: the smallest grid point whose noisy
    signed count was found >= 0 (the top of the grid if none was).

    Parameters
    ----------
    statistics : ndarray of shape (K, m)
        From :func:`quantile_statistics` (summed over all blocks of rows).
    grid : ndarray of shape (K,)
    mu : float
        GDP budget of the whole search, > 0.
    rng : numpy.random.Generator
    max_weight : float or None, default=1.0
        Bound on any row's weight (1 without weights); None for counts of
        rows that ignore the weights (a row moves each count by at most 1,
        whatever its weight).
    part : hashable or None, default=None
        For :func:`skdp.mechanisms.record_releases`: the disjoint part of
        the rows the counts read (None: all rows).

    Returns
    -------
    ndarray of shape (m,)
        One threshold per column.

    Notes
    -----
    **Privacy.** At each step the m noisy counts form one Gaussian
    mechanism of L2 sensitivity ``sqrt(m) * max_weight`` (replacing a row
    moves each column's count by at most ``max_weight``); the
    ``L = ceil(log2(K))`` steps compose adaptively, so noise of std
    ``sqrt(L * m) * max_weight / mu`` on every count makes the search
    mu-GDP. The grid and L are public; the search always takes L steps.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.clipping import geometric_grid, private_quantiles, quantile_statistics
    >>> from skdp.mechanisms import make_rng
    >>> norms = np.abs(make_rng(0).normal(size=(100_000, 1)))
    >>> grid = geometric_grid()
    >>> stats = quantile_statistics(norms, grid, [0.9])
    >>> float(private_quantiles(stats, grid, mu=0.5, rng=make_rng(1))[0])  # 0.9 quantile: 1.645
    1.6817...
    """
    statistics = np.asarray(statistics, dtype=float)
    K, m = statistics.shape
    if not (np.isfinite(mu) and mu > 0):
        raise ValueError(f"mu must be positive and finite, got {mu}.")
    n_steps = max(1, int(math.ceil(math.log2(K))))
    W = 1.0 if max_weight is None else float(max_weight)
    std = search_noise_std(K, m, float(mu), W)
    lo = np.zeros(m, dtype=int)
    hi = np.full(m, K - 1)
    cols = np.arange(m)
    for _ in range(n_steps):
        mid = (lo + hi) // 2
        noisy = gaussian_release(
            statistics[mid, cols], std, rng, name="private quantile search",
            sensitivity=math.sqrt(m) * W, weight=max_weight, part=part)
        up = noisy >= 0.0
        # A column whose interval is already one point keeps drawing noise
        # (the number of queries is public), but its interval stays put.
        hi = np.where(up, mid, hi)
        lo = np.where(up, lo, np.minimum(mid + 1, hi))
    return grid[hi]


def _norm_statistics(X, w, grid, quantile):
    return quantile_statistics(np.sqrt(np.einsum("ij,ij->i", X, X)), grid, [quantile], w)


def search_noise_std(n_levels: int, n_columns: int, mu: float,
                     max_weight: float | None = 1.0) -> float:
    """Std of the noise on each count of :func:`private_quantiles` (a public constant).

    Parameters
    ----------
    n_levels : int
        Grid size K; the search makes ``ceil(log2(K))`` queries.
    n_columns : int
        Columns searched at once, m.
    mu : float
        GDP budget of the search.
    max_weight : float or None, default=1.0
        None (counts that ignore the weights) counts as 1.

    Returns
    -------
    float
        ``sqrt(ceil(log2(K)) * m) * max_weight / mu``.
    """
    W = 1.0 if max_weight is None else max_weight
    return math.sqrt(max(1, math.ceil(math.log2(n_levels))) * n_columns) * W / mu


def effective_quantile(quantile: float, n: int, noise_std: float, margin: float = 3.0,
                       parameter: str | None = None) -> float:
    """The quantile actually searched for: at most ``1 - margin * noise_std / n``.

    Above the largest value every signed count equals ``n (1 - q)``; unless
    that is several noise stds above 0, the search's decisions there are
    nearly coin flips and it can wander to the top of the grid. Lowering q
    to keep ``margin`` stds of rows above it (DP-STAT's margin) prevents
    that. A public function of public quantities.

    Parameters
    ----------
    quantile : float
    n : int
        Number of rows (public).
    noise_std : float
        From :func:`search_noise_std`.
    margin : float, default=3.0
    parameter : str or None, default=None
        The estimator's parameter that declares the bound, named in the error.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        When the result would be below 0.5: too few rows for a private bound
        at this budget.
    """
    q = min(float(quantile), 1.0 - margin * noise_std / max(int(n), 1))
    if q < 0.5:
        raise ValueError(
            f"Too few rows (n_samples={n}) for a private bound at this budget: the counts of the private "
            f"quantile have noise sd {noise_std:.3g} rows. Declare the bound"
            + ("" if parameter is None else f" ({parameter}=...)")
            + " (it is then free), or give more rows or budget.")
    return q


def private_norm_quantile(X, quantile: float, *, mu: float, rng: np.random.Generator,
                          sample_weight=None, max_weight: float = 1.0, grid=None,
                          margin: float = 3.0) -> float:
    """Private ``quantile`` of the rows' L2 norms (a bound to clip the rows at).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    quantile : float
        In (0, 1), e.g. 0.95: about that share of the rows end up inside.
        Lowered to keep ``margin`` noise stds of rows above it (see
        :func:`effective_quantile`).
    mu : float
        GDP budget of the search.
    rng : numpy.random.Generator
    sample_weight : ndarray of shape (n,), optional
        None counts the rows unweighted (sensitivity 1, whatever
        ``max_weight``). Pass the user's weights as they are, unit weights
        included (not ``None`` for all-ones weights, as
        :func:`skdp.linear_model._weights.check_weights` returns): whether
        every weight is exactly 1 must not choose the counts' noise scale.
    max_weight : float, default=1.0
    grid : ndarray, optional
        Candidate bounds; default :func:`geometric_grid` (2**-32 to 2**32,
        ratio 2**(1/8)).
    margin : float, default=3.0

    Returns
    -------
    float
        A grid point: the result overshoots the quantile by at most one grid
        step (9%) plus the noise of the counts (std
        ``sqrt(10) * max_weight / mu`` rows on the default grid).

    Raises
    ------
    ValueError
        For too few rows at this budget (see :func:`effective_quantile`).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.clipping import private_norm_quantile
    >>> from skdp.mechanisms import make_rng
    >>> X = make_rng(0).normal(size=(50_000, 3))
    >>> round(private_norm_quantile(X, 0.5, mu=0.5, rng=make_rng(1)), 2)  # median norm: 1.54
    1.54
    """
    if not 0.0 < quantile < 1.0:
        raise ValueError(f"quantile must be in (0, 1), got {quantile}.")
    grid = geometric_grid() if grid is None else np.asarray(grid, dtype=float)
    std = search_noise_std(grid.shape[0], 1, mu, max_weight)
    quantile = effective_quantile(quantile, X.shape[0], std, margin)
    stats = sum_rows(partial(_norm_statistics, grid=grid, quantile=quantile), X, sample_weight)
    return float(private_quantiles(stats, grid, mu=mu, rng=rng,
                                   max_weight=None if sample_weight is None else max_weight)[0])
