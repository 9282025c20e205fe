"""Sample weights of the linear models: the shared check plus the linear models' own rule."""

from __future__ import annotations

import numpy as np

from skdp.utils._dask import is_dask
from skdp.utils._validation import check_sample_weight

__all__ = ["check_weights"]


def check_weights(sample_weight, n_samples: int, max_weight: float):
    """:func:`skdp.utils._validation.check_sample_weight`, with unit weights as None.

    Like every weight check it runs before any budget is charged; weights
    that are zero for every row are accepted (see there). Unit weights are
    the unweighted fit, bit for bit: they come back as None.
    The weight bound does not change with them (:func:`skdp.base.weight_bound`
    is ``max_weight`` whenever weights were passed), so a statistic that
    counts a row as ``w_i / W`` must count ``1 / W`` for None, and no rule may
    branch on None where the user passed weights: either would let the data
    (are all weights exactly 1?) pick the statistic's scale.

    Parameters
    ----------
    sample_weight : array-like of shape (n_samples,) or None
    n_samples : int
    max_weight : float

    Returns
    -------
    ndarray of shape (n_samples,) or None
    """
    w = check_sample_weight(sample_weight, n_samples, max_weight)
    if w is not None and not is_dask(w) and np.all(w == 1.0):
        return None  # the same sums, bit for bit, without the multiplications
    return w
