"""What the adaptive steppers share: the second-moment input and the preconditioned step."""

from __future__ import annotations

import numpy as np


def check_positive(name: str, value) -> float:
    value = float(value)
    if not (np.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be positive and finite, got {value}.")
    return value


class AdaptiveStepper:
    """Base of :class:`~skdp.optim.AdaGrad` and :class:`~skdp.optim.Adam`.

    Both keep a second moment v of the gradients and step along
    ``m / max(sqrt(v - b), eps)`` per coordinate, where b is the accumulated
    known bias of the second-moment inputs (zero without bias correction).

    The stability constant is a *floor* on the denominator, as in Ganesh et al. 2025
    Algorithm 7 and §5.1, rather than the sum ``sqrt(v) + eps`` of the
    original Adam; the two differ by at most a factor 2 and agree when
    ``sqrt(v) >> eps``. With private inputs the debiased second moment can be
    zero or negative; the floor bounds the step at ``learning_rate / eps``
    times the first moment.
    """

    def __init__(self, learning_rate: float, eps: float) -> None:
        self.learning_rate = check_positive("learning_rate", learning_rate)
        self.eps = check_positive("eps", eps)
        self.n_steps = 0

    @staticmethod
    def _inputs(grad, second, second_bias):
        grad = np.asarray(grad, dtype=float)
        if second is None:
            second = grad * grad
        else:
            second = np.asarray(second, dtype=float)
            if second.shape != grad.shape:
                raise ValueError(f"second has shape {second.shape}, grad has shape {grad.shape}.")
        return grad, second, second_bias

    def _update(self, params, first, second_moment):
        denom = np.maximum(np.sqrt(np.maximum(second_moment, 0.0)), self.eps)
        # first / denom first: the released ratio is moderate where lr * first may overflow.
        return np.asarray(params, dtype=float) - self.learning_rate * (first / denom)
