"""AdaGrad (Ganesh et al. 2025, Algorithm 3), with private second-moment inputs."""

from __future__ import annotations

import numpy as np

from skdp.optim._base import AdaptiveStepper

__all__ = ["AdaGrad"]


class AdaGrad(AdaptiveStepper):
    """Diagonal AdaGrad: ``v += g**2; w -= learning_rate * g / max(sqrt(v), eps)``.

    The second-moment input can be given separately from the gradient, which
    is how the private variants of :mod:`skdp.optim` differ (see
    :func:`~skdp.optim.private_step_inputs`).

    Parameters
    ----------
    learning_rate : float
    eps : float, default=1e-8
        Floor of the denominator (see Notes).

    Attributes
    ----------
    n_steps : int
    second_moment : ndarray or None
        The current debiased sum ``max(v - b, 0)`` (None before the first step).
    mean_square : ndarray or None
        ``second_moment / n_steps``.

    Notes
    -----
    The stability constant is a floor, ``max(sqrt(v), eps)``, as in
    Ganesh et al. 2025 §5.1 (``eta / max(1, sqrt(v))``), rather than a sum.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.optim import AdaGrad
    >>> opt = AdaGrad(learning_rate=1.0)
    >>> opt.step(np.zeros(2), np.array([3.0, -4.0]))  # sign steps at first
    array([-1.,  1.])
    """

    def __init__(self, learning_rate: float, eps: float = 1e-8) -> None:
        super().__init__(learning_rate, eps)
        self._v = None
        self._bias = 0.0

    @property
    def second_moment(self):
        return None if self._v is None else np.maximum(self._v - self._bias, 0.0)

    @property
    def mean_square(self):
        """Running mean of the squared gradients, ``second_moment / n_steps`` (None at first).

        The geometry of scale-then-privatize: like Adam's ``v_hat`` it is of
        the order of one squared gradient, so ``s * g`` is of order one.
        """
        return None if self._v is None else self.second_moment / self.n_steps

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
            Known mean of the noise in the second-moment input; the sum of
            these is subtracted (bias correction, Ganesh et al. 2025 Algorithm 7).

        Returns
        -------
        ndarray
        """
        grad, second, second_bias = self._inputs(grad, second, second_bias)
        self._v = second if self._v is None else self._v + second
        self._bias = self._bias + second_bias
        self.n_steps += 1
        return self._update(params, grad, self._v - self._bias)
