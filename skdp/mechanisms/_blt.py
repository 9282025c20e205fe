"""Buffered-linear-Toeplitz (BLT) noise: correlated noise in O(buffers) memory per step.

A BLT matrix (Dvijotham, McMahan, Pillutla, Steinke & Thakurta 2024) is a
lower-triangular Toeplitz C whose coefficients are a sum of a few geometric
sequences,

    c_0 = 1,    c_k = sum_j omega_j theta_j**(k - 1)   (k >= 1).

The noise ``w = C^{-1} z`` of the matrix mechanism then comes out of a
recursion with one buffer per term: with ``S_j`` the decayed sum of past
outputs,

    w_t = z_t - sum_j omega_j S_j,        S_j <- theta_j S_j + w_t,

so each step costs O(buffers * dim) time and memory, and no horizon is
needed to generate the noise.

**Which BLT.** skdp approximates the nu-damped square root of the prefix-sum
matrix, ``c_k = binom(2k, k) 4**-k (1 - nu)**k`` (the ``'nu'`` family of
Choquette-Choo et al. 2024; nu -> 0 is the square root, the near-optimal
factorization for prefix sums and running averages). These coefficients
are a Beta integral: with ``theta = 1 / (1 + e^-u)``,

    binom(2k, k) 4**-k = (1 / pi) int theta**(k-1) * theta**(3/2) (1 - theta)**(1/2) du

over the real line (substitute ``t = theta`` in ``B(k + 1/2, 1/2) / pi``).
The trapezoidal rule with step h in u turns the integral into a sum of
geometric sequences in k: nodes ``theta_j = 1 / (1 + e^-u_j)`` and weights
``omega_j = (h / pi) theta_j**(3/2) (1 - theta_j)**(1/2)``, which is a BLT.
The integrand is smooth and decays exponentially in u, so the rule is
accurate with a coarse step; damping by ``(1 - nu)**k`` scales every node by
``1 - nu`` and lets the nodes stop at ``u = log(1 / nu) + 12``. With h = 1.5
(15 to 20 buffers) every coefficient up to ``k = 1 / nu`` is within 0.6% of
the exact one and the sensitivity within 0.1%; the prefix-sum error of the
mechanism is within a few percent of the exact square root's
(``benchmarks/blt_noise.py``).

**Sensitivity.** Under single participation the replace-one sensitivity of
``C X`` is ``2 zeta`` times the largest column norm of C; for a Toeplitz C
every column is a prefix of the first, so over an unbounded stream it is
``sqrt(1 + sum_{k>=1} c_k**2) = sqrt(1 + sum_ij omega_i omega_j / (1 - theta_i theta_j))``,
finite because every ``theta < 1``. That is what makes a stream with no
horizon private: the guarantee holds however long it runs; the noise is
tuned for about ``1 / nu`` steps and degrades slowly beyond.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["BLTState", "blt_coefficients", "blt_parameters", "blt_sensitivity_factor"]

_U_MIN = -8.0       # smallest node: theta = 3e-4, weight e^-12 of the largest
_TAIL = 12.0        # nodes beyond u = log(1 / nu) + _TAIL are dropped


def blt_parameters(nu: float, resolution: float = 1.5) -> tuple[np.ndarray, np.ndarray]:
    """BLT parameters ``(theta, omega)`` approximating the nu-damped square root.

    Parameters
    ----------
    nu : float
        Damping in [1e-15, 1); the noise is tuned for streams of about ``1 / nu``
        steps.
    resolution : float, default=1.5
        Step h of the quadrature; smaller is more accurate and uses more
        buffers (about ``(log(1 / nu) + 20) / h``).

    Returns
    -------
    theta, omega : ndarray of shape (buffers,)
        Decays in (0, 1 - nu) and positive weights.

    Examples
    --------
    >>> from skdp.mechanisms import blt_coefficients, blt_parameters, toeplitz_coefficients
    >>> theta, omega = blt_parameters(1e-3)
    >>> len(theta)
    18
    >>> blt_coefficients(theta, omega, 4).round(2), toeplitz_coefficients(4, 1e-3).round(2)
    (array([1.  , 0.5 , 0.37, 0.31]), array([1.  , 0.5 , 0.37, 0.31]))
    """
    nu = float(nu)
    if not (1e-15 <= nu < 1.0):  # below, the decays round to 1 and the calibration to NaN
        raise ValueError(f"BLT noise needs nu in [1e-15, 1), got {nu}.")
    h = float(resolution)
    if not (0.0 < h <= 3.0):
        raise ValueError(f"resolution must be in (0, 3], got {resolution}.")
    u = np.arange(_U_MIN, math.log(1.0 / nu) + _TAIL, h)
    theta = 1.0 / (1.0 + np.exp(-u))
    omega = h / math.pi * theta**1.5 * np.sqrt(1.0 - theta)
    return theta * (1.0 - nu), omega * (1.0 - nu)


def blt_coefficients(theta, omega, n: int) -> np.ndarray:
    """First n Toeplitz coefficients ``c_0 = 1, c_k = sum_j omega_j theta_j**(k-1)``.

    Parameters
    ----------
    theta, omega : ndarray of shape (buffers,)
    n : int

    Returns
    -------
    ndarray of shape (n,)
    """
    theta, omega = np.asarray(theta, float), np.asarray(omega, float)
    out = np.empty(int(n))
    out[:1] = 1.0
    block = 4096
    for start in range(1, int(n), block):
        k = np.arange(start, min(int(n), start + block))
        out[k] = (theta[None, :] ** (k[:, None] - 1)) @ omega
    return out


def blt_sensitivity_factor(theta, omega, n: int | None = None) -> float:
    """Largest column norm of the BLT matrix C, over n steps or an unbounded stream.

    Parameters
    ----------
    theta, omega : ndarray of shape (buffers,)
    n : int or None, default=None
        None: ``sqrt(1 + sum_ij omega_i omega_j / (1 - theta_i theta_j))``.

    Returns
    -------
    float
    """
    theta, omega = np.asarray(theta, float), np.asarray(omega, float)
    prod = np.outer(theta, theta)
    if n is None:
        total = np.outer(omega, omega) / (1.0 - prod)
    else:
        total = np.outer(omega, omega) * -np.expm1((int(n) - 1) * np.log(prod)) / (1.0 - prod)
    return math.sqrt(1.0 + float(np.sum(total)))


class BLTState:
    """The O(buffers * dim) state of the noise ``C^{-1} z`` for a BLT matrix C.

    Parameters
    ----------
    theta, omega : ndarray of shape (buffers,)
    width : int
        Numbers per step.

    Notes
    -----
    The buffers hold sums of past noise: with them (and the generator) the
    noise of future steps could be predicted, so the state is secret.
    """

    def __init__(self, theta, omega, width: int) -> None:
        self.theta = np.asarray(theta, dtype=float)
        self.omega = np.asarray(omega, dtype=float)
        self.buffers = np.zeros((self.theta.shape[0], int(width)))

    def apply_inverse(self, z: np.ndarray) -> np.ndarray:
        """``[C^{-1} z]`` for the next steps (rows of z, shape (m, width)); advances the state."""
        out = np.empty_like(z)
        S, theta, omega = self.buffers, self.theta[:, None], self.omega
        for t in range(z.shape[0]):
            w = z[t] - omega @ S
            out[t] = w
            S *= theta
            S += w
        return out


class InverseCoefficientTracker:
    """Running sums of the coefficients ``h_k`` of ``C^{-1}`` for a BLT C (public, O(buffers)).

    ``h`` is the response of the noise recursion to a unit impulse. The
    tracker yields, step by step, ``sum_{j<=k} h_j**2`` (the variance of each
    entry of the noise at step k, for unit z) and ``sum_{j<=k} g_j**2`` with
    ``g_j = sum_{i<=j} h_i`` (the variance of the running sum of the noise up
    to step k).
    """

    def __init__(self, theta, omega) -> None:
        self.theta = np.asarray(theta, dtype=float)
        self.omega = np.asarray(omega, dtype=float)
        self.reset()

    def reset(self) -> None:
        self.position = 0
        self._S = np.zeros_like(self.theta)
        self._h2 = self._g = self._g2 = 0.0

    def advance(self, m: int) -> tuple[np.ndarray, np.ndarray]:
        """Variances for the next m steps: (row variances, prefix-sum variances)."""
        rows, prefix = np.empty(m), np.empty(m)
        S, theta, omega = self._S, self.theta, self.omega
        for i in range(m):
            h = (1.0 if self.position == 0 else 0.0) - omega @ S
            S *= theta
            S += h
            self._h2 += h * h
            self._g += h
            self._g2 += self._g * self._g
            rows[i], prefix[i] = self._h2, self._g2
            self.position += 1
        return rows, prefix
