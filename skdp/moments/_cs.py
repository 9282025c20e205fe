"""Concatenate-and-split (CS): Kalinin et al. 2025, Algorithm 5.

The row ``(x, sqrt(tau) vec(x (x) x))`` is privatised as one vector with one
noise-shaping matrix C, then split; the second part is divided by
``sqrt(tau)``. Equivalently: independent noises of stds ``s / mu`` and
``s / (mu sqrt(tau))`` on the two streams, both shaped by C.
"""

from __future__ import annotations

import math

__all__ = ["cs_noise_stds"]


def cs_noise_stds(mu: float, norm_bound: float, col_norm: float, tau: float) -> tuple[float, float]:
    """Noise stds of CS for mu-GDP.

    The concatenated row has norm ``sqrt(||x||^2 + tau ||x||^4) <=
    zeta sqrt(1 + tau zeta^2)``, so the replace-one sensitivity is
    ``s = 2 zeta sqrt(1 + tau zeta^2) ||C||_{1->2}``.

    Parameters
    ----------
    mu : float
    norm_bound : float
    col_norm : float
        Largest column norm of C (shared by both moments).
    tau : float
        Rescaling of the second moment, > 0.

    Returns
    -------
    std1, std2 : float

    Examples
    --------
    >>> from skdp.moments import cs_noise_stds
    >>> [round(v, 4) for v in cs_noise_stds(1.0, 1.0, 1.0, 1.0)]
    [2.8284, 2.8284]
    """
    if not tau > 0:
        raise ValueError(f"tau must be > 0, got {tau}.")
    zeta = float(norm_bound)
    s = 2.0 * zeta * math.sqrt(1.0 + tau * zeta**2) * col_norm
    return s / mu, s / (mu * math.sqrt(tau))
