"""Independent moment estimation (IME): Kalinin et al. 2025, Algorithm 4.

Two separate Gaussian mechanisms, one per moment; the budget is split
exactly in GDP: ``mu_1^2 = budget_split mu^2`` and
``mu_2^2 = (1 - budget_split) mu^2`` compose to mu. (The paper splits
(epsilon, delta) linearly, which is looser.)
"""

from __future__ import annotations

import math

__all__ = ["ime_noise_stds"]


def ime_noise_stds(mu: float, norm_bound: float, col_norm1: float, col_norm2: float,
                   budget_split: float) -> tuple[float, float]:
    """Noise stds of IME for mu-GDP.

    Replace-one sensitivities: ``2 zeta ||C1||_{1->2}`` for the first moment
    and ``sqrt(2) zeta^2 ||C2||_{1->2}`` for the second, because
    ``||x (x) x - y (x) y||_F^2 = ||x||^4 + ||y||^4 - 2 (x . y)^2 <= 2 zeta^4``
    (also for the diagonal ``x o x``: ``||x o x||^2 <= ||x||^4``).

    Parameters
    ----------
    mu : float
    norm_bound : float
    col_norm1, col_norm2 : float
        Largest column norms of C1 and C2.
    budget_split : float
        Share of ``mu**2`` spent on the first moment, in (0, 1).

    Returns
    -------
    std1, std2 : float

    Examples
    --------
    >>> from skdp.moments import ime_noise_stds
    >>> [round(v, 4) for v in ime_noise_stds(1.0, 1.0, 1.0, 1.0, 0.5)]
    [2.8284, 2.0]
    """
    if not 0.0 < budget_split < 1.0:
        raise ValueError(f"budget_split must be in (0, 1), got {budget_split}.")
    mu1 = mu * math.sqrt(budget_split)
    mu2 = mu * math.sqrt(1.0 - budget_split)
    zeta = float(norm_bound)
    return 2.0 * zeta * col_norm1 / mu1, math.sqrt(2.0) * zeta**2 * col_norm2 / mu2
