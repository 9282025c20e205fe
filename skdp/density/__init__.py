"""Private densities built on the private moments of :mod:`skdp.moments`."""

from skdp.density._gaussian import (
    PrivateGaussianDensity,
    gaussian_kl,
    private_covariances,
    project_covariances,
)

__all__ = ["PrivateGaussianDensity", "gaussian_kl", "private_covariances", "project_covariances"]
