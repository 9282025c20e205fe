"""Adam (Ganesh et al. 2025, Algorithm 2), with private second-moment inputs."""

from __future__ import annotations

import numpy as np

from skdp.optim._base import AdaptiveStepper

__all__ = ["Adam"]


class Adam(AdaptiveStepper):
    """Adam with bias-corrected moments and a floored denominator.

    ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) u`` with u the
    second-moment input (``g**2`` unless given), and the step
    ``w -= learning_rate * m_hat / max(sqrt(v_hat - bias_hat), eps)`` with
    ``m_hat = m / (1 - b1**t)``, ``v_hat = v / (1 - b2**t)``.

    Parameters
    ----------
    learning_rate : float
    betas : tuple of float, default=(0.9, 0.999)
        Decay rates b1, b2 in [0, 1).
    eps : float, default=1e-8
        Floor of the denominator (see :class:`AdaGrad`).

    Attributes
    ----------
    n_steps : int
    second_moment : ndarray or None
        The current debiased, bias-corrected ``max(v_hat - bias_hat, 0)``.
    mean_square : ndarray or None
        The same (``v_hat`` is already a weighted mean).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.optim import Adam
    >>> opt = Adam(learning_rate=0.1)
    >>> opt.step(np.zeros(2), np.array([3.0, -4.0]))  # the first step is a sign step
    array([-0.1,  0.1])
    """

    def __init__(self, learning_rate: float, betas=(0.9, 0.999), eps: float = 1e-8) -> None:
        super().__init__(learning_rate, eps)
        b1, b2 = (float(b) for b in betas)
        if not (0.0 <= b1 < 1.0 and 0.0 <= b2 < 1.0):
            raise ValueError(f"betas must be in [0, 1), got {tuple(betas)}.")
        self.betas = (b1, b2)
        self._m = self._v = None
        self._bias = 0.0

    @property
    def second_moment(self):
        if self._v is None:
            return None
        return np.maximum((self._v - self._bias) / (1.0 - self.betas[1] ** self.n_steps), 0.0)

    @property
    def mean_square(self):
        """Estimate of the mean squared gradient: :attr:`second_moment` (a weighted mean)."""
        return self.second_moment

    def step(self, params, grad, second=None, second_bias=0.0) -> np.ndarray:
        """Return the parameters after one step.

        Parameters
        ----------
        params : ndarray
        grad : ndarray
            The (private) gradient.
        second : ndarray or None, default=None
            Input of the second moment; None means ``grad**2`` (post-processing).
        second_bias : float or ndarray, default=0.0
            Known mean of the noise in the second-moment input, removed from
            the moving average (bias correction, Ganesh et al. 2025 Algorithm 7).

        Returns
        -------
        ndarray
        """
        grad, second, second_bias = self._inputs(grad, second, second_bias)
        b1, b2 = self.betas
        if self._m is None:
            self._m, self._v = np.zeros_like(grad), np.zeros_like(grad)
        self._m = b1 * self._m + (1.0 - b1) * grad
        self._v = b2 * self._v + (1.0 - b2) * second
        self._bias = b2 * self._bias + (1.0 - b2) * second_bias
        self.n_steps += 1
        t = self.n_steps
        m_hat = self._m / (1.0 - b1**t)
        v_hat = (self._v - self._bias) / (1.0 - b2**t)
        return self._update(params, m_hat, v_hat)
