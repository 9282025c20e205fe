"""Private first-order optimizers: SGD, AdaGrad and Adam, and the DP-Adam variants.

The steppers (:class:`SGD`, :class:`AdaGrad`, :class:`Adam`) are plain numpy
and never see data; privacy comes from what they are fed.
:func:`moment_noise_stds` and :func:`private_step_inputs` implement the
private variants of the second moment (Ganesh et al. 2025 Algorithms 5-8, Kalinin et al. 2025
Algorithm 2); :class:`~skdp.linear_model.DPSGDRegressor` and
:class:`~skdp.linear_model.DPSGDClassifier` put them together.
"""

from skdp.optim._adagrad import AdaGrad
from skdp.optim._adam import Adam
from skdp.optim._private_moments import PRIVATE_MOMENTS, moment_noise_stds, private_step_inputs
from skdp.optim._sgd import SGD

__all__ = ["PRIVATE_MOMENTS", "SGD", "AdaGrad", "Adam", "moment_noise_stds",
           "private_step_inputs"]
