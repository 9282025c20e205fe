"""Private linear models."""

from skdp.linear_model._adassp import AdaSSPRegressor
from skdp.linear_model._dp_ambssgd import DPAMBSSGDRegressor, dp_ambssgd
from skdp.linear_model._dp_ssgd import dp_ssgd
from skdp.linear_model._dpgd import DPLinearRegressionGD, dp_gradient_descent
from skdp.linear_model._dpsgd import DPSGDClassifier, DPSGDRegressor, dp_sgd

__all__ = ["AdaSSPRegressor", "DPAMBSSGDRegressor", "DPLinearRegressionGD", "DPSGDClassifier",
           "DPSGDRegressor", "dp_ambssgd", "dp_gradient_descent", "dp_sgd", "dp_ssgd"]
