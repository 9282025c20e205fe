"""Post-processing (PP): Kalinin et al. 2025, Algorithm 6.

Only the stream x_t is privatised; the second moment is built from the
noisy rows, ``x_hat (x) x_hat``, which is private by post-processing but
biased by the squared noise.
"""

from __future__ import annotations

import numpy as np

__all__ = ["pp_second_moment_inputs"]


def pp_second_moment_inputs(x_hat, noise_variances=None, *, diagonal_only: bool = False):
    """Second-moment stream of PP: ``x_hat (x) x_hat`` (or its diagonal), optionally debiased.

    Parameters
    ----------
    x_hat : ndarray of shape (m, d)
        Privatised rows ``x_k + std1 [C^{-1} Z]_k``.
    noise_variances : ndarray of shape (m,) or None
        The variance of each entry of row k's noise, ``std1^2
        ||C^{-1}[k, :]||^2``. When given, ``v_k I`` is subtracted from row k,
        which makes every weighted sum ``sum_k A2[t, k] (...)`` unbiased:
        ``E[x_hat_k (x) x_hat_k] = x_k (x) x_k + v_k I`` because the noise
        entries of one row are independent with equal variance. (The paper's
        Algorithm 6 subtracts a workload-weighted sum per row, which applies
        A2 twice, and omits the factor ``s^2`` of its own noise.)
    diagonal_only : bool, default=False

    Returns
    -------
    ndarray of shape (m, d, d), or (m, d) when diagonal_only

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.moments import pp_second_moment_inputs
    >>> pp_second_moment_inputs(np.array([[1.0, 2.0]]), np.array([0.5]))
    array([[[0.5, 2. ],
            [2. , 3.5]]])
    """
    x_hat = np.asarray(x_hat, dtype=float)
    if diagonal_only:
        out = x_hat * x_hat
        if noise_variances is not None:
            out -= np.asarray(noise_variances)[:, None]
        return out
    out = x_hat[:, :, None] * x_hat[:, None, :]
    if noise_variances is not None:
        d = x_hat.shape[1]
        idx = np.arange(d)
        out[:, idx, idx] -= np.asarray(noise_variances)[:, None]
    return out
