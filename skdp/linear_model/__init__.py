"""Private linear models."""

from skdp.linear_model._dpgd import DPLinearRegressionGD, dp_gradient_descent

__all__ = ["DPLinearRegressionGD", "dp_gradient_descent"]
