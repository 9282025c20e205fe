"""Sums over rows: the one way skdp reads private data for a release.

Every data-dependent quantity skdp releases is a sum over rows (clipped
gradient sums, clipped Gram and moment sums, the signed counts behind private
quantiles) to which Gaussian noise is added once. :func:`sum_rows` computes
such a sum block by block, so that extra memory stays O(block) and the same
code serves tables held in memory and, through the Dask engine
(:mod:`skdp.utils._dask`), tables split over partitions.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from skdp.utils._dask import dask_sum, is_dask

__all__ = ["sum_rows"]

#: Most rows per block when a table in memory is summed block by block.
BLOCK_ROWS = 1 << 16
#: Bytes of one block of the first array (so a block's temporaries stay a few MB).
BLOCK_BYTES = 1 << 22


def _add(total, part):
    if isinstance(part, tuple):
        return tuple(_add(a, b) for a, b in zip(total, part))
    return total + part


def block_rows_for(a) -> int:
    """Rows per block of ``a``: about ``BLOCK_BYTES`` of it, between 1,024 and ``BLOCK_ROWS``."""
    width = int(np.prod(a.shape[1:])) if getattr(a, "ndim", 1) > 1 else 1
    return int(min(BLOCK_ROWS, max(1024, BLOCK_BYTES // (8 * max(width, 1)))))


def sum_rows(stat: Callable, *arrays, block_rows: int | None = None):
    """``sum over row blocks B of stat(*[a[B] for a in arrays])``.

    Parameters
    ----------
    stat : callable
        Takes one block of each array (None stays None) and returns an
        ndarray or a tuple of ndarrays whose sum over blocks is the wanted
        statistic: it must be additive over rows.
    *arrays : ndarray or None
        Arrays with the rows on the first axis (X, y, sample weights, ...).
    block_rows : int or None, default=None
        Rows per block; None takes about 4 MB of the first array
        (:func:`block_rows_for`), so that a block's temporaries stay small
        next to the table.

    Returns
    -------
    ndarray or tuple of ndarray
        As ``stat`` returns.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.utils._rows import sum_rows
    >>> X = np.arange(10.0).reshape(5, 2)
    >>> sum_rows(lambda Xb: Xb.T @ Xb, X, block_rows=2)
    array([[120., 140.],
           [140., 165.]])
    """
    first = next(a for a in arrays if a is not None)
    if block_rows is None:
        block_rows = block_rows_for(first)
    if any(a is not None and is_dask(a) for a in arrays):
        # One task per partition (itself summed block by block), added up where the data are.
        return dask_sum(stat, arrays, block_rows=block_rows)
    n = first.shape[0]
    if n <= block_rows:
        return stat(*arrays)
    total = None
    for start in range(0, n, block_rows):
        block = [None if a is None else a[start:start + block_rows] for a in arrays]
        part = stat(*block)
        total = part if total is None else _add(total, part)
    return total

