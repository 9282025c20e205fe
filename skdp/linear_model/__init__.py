"""Private linear models."""

from skdp.linear_model._adassp import AdaSSPRegressor
from skdp.linear_model._dpgd import DPLinearRegressionGD, dp_gradient_descent

__all__ = ["AdaSSPRegressor", "DPLinearRegressionGD", "dp_gradient_descent"]
