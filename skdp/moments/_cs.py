"""Concatenate-and-split (CS): Kalinin et al. 2025, Algorithm 5.

The row ``(x, sqrt(tau) vec(x (x) x))`` is privatised as one vector with one
noise-shaping matrix C, then split; the second part is divided by
``sqrt(tau)``. Equivalently: independent noises of stds ``s / mu`` and
``s / (mu sqrt(tau))`` on the two streams, both shaped by C.

**Calibration.** The paper bounds the change of the concatenated row by
the triangle inequality, ``2 zeta sqrt(1 + tau zeta**2)``. The exact
supremum of ``||(x, sqrt(tau) x x^T) - (y, sqrt(tau) y y^T)||`` over the
ball is ``zeta sqrt(r_d(tau zeta**2))`` (Lemma 3.5's r_d, by scaling the
ball to radius 1), which is smaller (e.g. ``sqrt(4.5 / 8) = 0.75`` times at
``tau zeta**2 = 1``), so skdp calibrates with it. CS with weight tau is then
lambda-JME with ``lam = tau`` and the same C for both moments.
"""

from __future__ import annotations

import math

from skdp.moments._jme import r_d

__all__ = ["cs_noise_stds"]


def cs_noise_stds(mu: float, norm_bound: float, col_norm: float, tau: float,
                  d: int) -> tuple[float, float]:
    """Noise stds of CS for mu-GDP.

    The replace-one sensitivity of the concatenated stream is
    ``s = zeta sqrt(r_d(tau zeta**2)) ||C||_{1->2}`` (see the module notes).

    Parameters
    ----------
    mu : float
    norm_bound : float
    col_norm : float
        Largest column norm of C (shared by both moments).
    tau : float
        Rescaling of the second moment, > 0.
    d : int
        Dimension of the rows.

    Returns
    -------
    std1, std2 : float

    Examples
    --------
    >>> from skdp.moments import cs_noise_stds
    >>> [round(v, 4) for v in cs_noise_stds(1.0, 1.0, 1.0, 1.0, d=3)]
    [2.1213, 2.1213]
    """
    if not tau > 0:
        raise ValueError(f"tau must be > 0, got {tau}.")
    zeta = float(norm_bound)
    s = zeta * math.sqrt(r_d(tau * zeta**2, d)) * col_norm
    return s / mu, s / (mu * math.sqrt(tau))
