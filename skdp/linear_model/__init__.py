"""Private linear models."""

from skdp.linear_model._adassp import AdaSSPRegressor
from skdp.linear_model._dp_ambssgd import DPAMBSSGDRegressor, dp_ambssgd
from skdp.linear_model._dp_ssgd import dp_ssgd
from skdp.linear_model._dpgd import DPLinearRegressionGD, dp_gradient_descent

__all__ = ["AdaSSPRegressor", "DPAMBSSGDRegressor", "DPLinearRegressionGD", "dp_ambssgd",
           "dp_gradient_descent", "dp_ssgd"]
