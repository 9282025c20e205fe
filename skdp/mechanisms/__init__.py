"""Randomness, Gaussian noise, workloads and correlated noise.

Every draw of randomness in skdp goes through :func:`make_rng`; estimators
never hold global random state.
"""

from skdp.mechanisms._blt import blt_coefficients, blt_parameters, blt_sensitivity_factor
from skdp.mechanisms._gram import private_gram
from skdp.mechanisms._noise_shaping import (
    SHAPINGS,
    CorrelatedNoise,
    correlated_noise,
    noise_shaping_matrix,
    sensitivity_factor,
    toeplitz_coefficients,
    toeplitz_sensitivity_factor,
)
from skdp.mechanisms._participation import cyclic_sensitivity_factor
from skdp.mechanisms._random import (
    Release,
    composed_mu,
    gaussian_noise,
    is_secure_mode,
    make_rng,
    record_release,
    record_releases,
    secure_mode,
    set_secure_mode,
    spawn_rngs,
)
from skdp.mechanisms._workloads import WORKLOADS, WorkloadStream, workload_matrix

__all__ = [
    "SHAPINGS",
    "WORKLOADS",
    "CorrelatedNoise",
    "Release",
    "WorkloadStream",
    "blt_coefficients",
    "blt_parameters",
    "blt_sensitivity_factor",
    "composed_mu",
    "correlated_noise",
    "cyclic_sensitivity_factor",
    "gaussian_noise",
    "is_secure_mode",
    "make_rng",
    "noise_shaping_matrix",
    "private_gram",
    "record_release",
    "record_releases",
    "secure_mode",
    "sensitivity_factor",
    "set_secure_mode",
    "spawn_rngs",
    "toeplitz_coefficients",
    "toeplitz_sensitivity_factor",
    "workload_matrix",
]
