"""Stochastic gradient descent with heavy-ball momentum."""

from __future__ import annotations

import numpy as np

from skdp.optim._base import check_positive

__all__ = ["SGD"]


class SGD:
    """Gradient step with momentum: ``b = momentum * b + g; w = w - learning_rate * b``.

    A plain-numpy stepper: it never sees data, only the (private) gradient it
    is given, so anything it computes is post-processing.

    Parameters
    ----------
    learning_rate : float
    momentum : float, default=0.0
        In [0, 1); 0 is plain SGD.

    Attributes
    ----------
    n_steps : int

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.optim import SGD
    >>> opt = SGD(learning_rate=0.5, momentum=0.5)
    >>> w = opt.step(np.zeros(2), np.array([1.0, -2.0]))
    >>> opt.step(w, np.array([1.0, -2.0]))
    array([-1.25,  2.5 ])
    """

    def __init__(self, learning_rate: float, momentum: float = 0.0) -> None:
        self.learning_rate = check_positive("learning_rate", learning_rate)
        momentum = float(momentum)
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"momentum must be in [0, 1), got {momentum}.")
        self.momentum = momentum
        self.n_steps = 0
        self._buffer = None

    def step(self, params, grad) -> np.ndarray:
        """Return the parameters after one step along ``grad``.

        Parameters
        ----------
        params : ndarray
        grad : ndarray
            The (private) gradient.

        Returns
        -------
        ndarray
        """
        grad = np.asarray(grad, dtype=float)
        if self.momentum:
            self._buffer = grad if self._buffer is None else self.momentum * self._buffer + grad
            grad = self._buffer
        self.n_steps += 1
        return np.asarray(params, dtype=float) - self.learning_rate * grad
