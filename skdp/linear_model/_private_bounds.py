"""Private bounds for the linear models: quantiles of row norms, labels and gradient norms.

When a bound is not declared, the linear models pay a stated share of the
budget for a noisy binary search on a public geometric grid
(:func:`skdp.clipping.private_quantiles`). The quantile's level is the highest
the search resolves safely: above the quantile the signed count is at most
``(1 - level) n``, and a margin of 4 noise stds makes a wrong turn there (which
would overshoot by up to the grid's range) a ``3e-5`` event per step.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
from scipy.stats import norm

from skdp.clipping import geometric_grid, private_quantiles, quantile_statistics
from skdp.utils._rows import sum_rows

__all__ = ["GRID", "private_quantile", "private_row_label_bounds", "quantile_level",
           "safe_search_mu", "search_steps", "tail_factor"]

#: Candidate bounds (public): 2**-32 .. 2**32, ratio 2**(1/4).
GRID = geometric_grid(2.0**-32, 2.0**32, 2.0**0.25)


def search_steps(grid=GRID) -> int:
    """Noisy comparisons of one binary search over ``grid``."""
    return max(1, math.ceil(math.log2(grid.shape[0])))


def quantile_level(n: int, n_columns: int, max_weight: float, mu: float,
                   floor: float = 0.5) -> float:
    """``max(floor, 1 - 4 sigma / n)``, sigma the noise std of the search's counts.

    Parameters
    ----------
    n : int
        Public number of rows.
    n_columns : int
        Quantiles searched at once (they share the budget).
    max_weight : float
    mu : float
        GDP budget of the search.
    floor : float, default=0.5

    Returns
    -------
    float
    """
    count_std = math.sqrt(search_steps() * n_columns) * max_weight / mu
    return max(floor, 1.0 - 4.0 * count_std / n)


#: Count stds between the search's target rank and the far ends of the grid.
SEARCH_MARGIN = 4.0


def safe_search_mu(n: int, n_columns: int, max_weight: float) -> float:
    """Smallest GDP budget at which a median search is safe from far errors.

    A noisy binary search on :data:`GRID` first compares at points far from
    the quantile (``2**0``, ``2**16``, ...), where the signed count is off
    the target by up to ``n min(level, 1 - level)``; one wrong comparison
    there sends the answer octaves away (measured: a row bound of 78,000
    for norms near 4 in 2 of 20 fits of 442 rows at epsilon 1). With the
    level at least 0.5 (:func:`quantile_level`) the margin is at least
    ``n / 2`` at the median and :data:`SEARCH_MARGIN` count stds at higher
    levels; this returns the budget that makes ``n / 2`` that many count
    stds, so that no comparison errs by more than a few grid steps except
    with probability about ``3e-5`` per comparison.

    Parameters
    ----------
    n : int
    n_columns : int
        Quantiles searched at once.
    max_weight : float

    Returns
    -------
    float
    """
    return 2.0 * SEARCH_MARGIN * math.sqrt(search_steps() * n_columns) * max_weight / n


def tail_factor(n: int, level: float, floor: float) -> float:
    """Multiple of the ``level`` quantile of ``|value|`` that reaches the largest of n values.

    For a Gaussian tail, the ``level`` quantile of ``|Z|`` is
    ``Phi^{-1}((1 + level) / 2)`` and the largest of n is about
    ``sqrt(2 log n)``: their ratio. At least ``floor``. Heavier tails (a
    label with outliers) are clipped more: the private check at the estimate
    counts it and warns when it can bias the intervals.

    Parameters
    ----------
    n : int
    level : float
    floor : float

    Returns
    -------
    float
    """
    return max(floor, math.sqrt(2.0 * math.log(max(n, 2))) / norm.ppf((1.0 + level) / 2.0))


def private_quantile(block, *arrays, mu: float, rng, max_weight: float | None) -> float:
    """One private quantile from a block function returning signed counts on :data:`GRID`.

    ``max_weight`` is None for counts of rows that ignore their weights.
    """
    stats = sum_rows(block, *arrays)
    return float(private_quantiles(stats, GRID, mu=mu, rng=rng, max_weight=max_weight)[0])


def _row_label_block(Xb, yb, wb, *, fit_intercept, level):
    sq = np.einsum("ij,ij->i", Xb, Xb) + (1.0 if fit_intercept else 0.0)
    return quantile_statistics(np.column_stack([np.sqrt(sq), np.abs(yb)]), GRID,
                               [level, level], wb)


def private_row_label_bounds(X, y, sample_weight, *, fit_intercept: bool, mu: float, rng,
                             max_weight: float = 1.0) -> tuple[float, float]:
    """Private high quantiles of ``||(x_i, [1])||`` and ``|y_i|``, one mu-GDP search.

    Both columns are searched together (sensitivity ``sqrt(2) max_weight``
    per step), at :func:`quantile_level` with floor 0.5. Rows beyond are
    clipped by the caller: for sufficient statistics a few clipped rows cost
    less than the noise a larger bound would add.

    Parameters
    ----------
    X : ndarray of shape (n, p)
    y : ndarray of shape (n,)
    sample_weight : ndarray of shape (n,) or None
    fit_intercept : bool
    mu : float
    rng : numpy.random.Generator
    max_weight : float, default=1.0

    Returns
    -------
    row_bound, label_bound : float
    """
    level = quantile_level(X.shape[0], 2, max_weight, mu)
    block = partial(_row_label_block, fit_intercept=fit_intercept, level=level)
    stats = sum_rows(block, X, y, sample_weight)
    row, label = private_quantiles(stats, GRID, mu=mu, rng=rng,
                                   max_weight=None if sample_weight is None else max_weight)
    return float(row), float(label)
