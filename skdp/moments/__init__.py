"""Private moments of a stream in continual release (Kalinin et al. 2025).

:class:`StreamingMomentEstimator` runs JME, IME, CS or PP on any workload
with any noise shaping; the functions below are the calibrations behind it.
"""

from skdp.moments._cs import cs_noise_stds
from skdp.moments._ime import ime_noise_stds
from skdp.moments._jme import c_d, density_lambda, jme_noise_stds, joint_sensitivity, r_d
from skdp.moments._pp import pp_second_moment_inputs
from skdp.moments._streaming import METHODS, StreamingMomentEstimator

__all__ = [
    "METHODS",
    "StreamingMomentEstimator",
    "c_d",
    "cs_noise_stds",
    "density_lambda",
    "ime_noise_stds",
    "jme_noise_stds",
    "joint_sensitivity",
    "pp_second_moment_inputs",
    "r_d",
]
