"""Randomness, Gaussian releases, workloads and correlated noise.

Every generator in skdp comes from :func:`make_rng` (estimators never hold
global random state), and every release from :func:`gaussian_release` and
its forms; in secure mode (:func:`secure_mode`) a release is an exact
discrete Gaussian (:func:`discrete_gaussian`) on a grid (:class:`GridPlan`).
"""

from skdp.mechanisms._blt import blt_coefficients, blt_parameters, blt_sensitivity_factor
from skdp.mechanisms._discrete_gaussian import GridPlan, discrete_gaussian, grid_release
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
    MAX_WEIGHT,
    PlannedRelease,
    Release,
    composed_mu,
    gaussian_noise,
    gaussian_release,
    is_secure_mode,
    make_rng,
    record_release,
    record_releases,
    secure_mode,
    set_secure_mode,
    spawn_rngs,
    symmetric_release,
)
from skdp.mechanisms._workloads import WORKLOADS, WorkloadStream, workload_matrix

__all__ = [
    "MAX_WEIGHT",
    "GridPlan",
    "PlannedRelease",
    "discrete_gaussian",
    "gaussian_release",
    "grid_release",
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
    "symmetric_release",
    "toeplitz_coefficients",
    "toeplitz_sensitivity_factor",
    "workload_matrix",
]
