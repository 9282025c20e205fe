"""The only skdp module that imports scikit-learn helpers from private modules.

If scikit-learn moves one of these, this is the one file to change.
"""

from sklearn.base import _fit_context
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    Options,
    StrOptions,
    validate_parameter_constraints,
)

__all__ = ["HasMethods", "Interval", "Options", "StrOptions", "_fit_context",
           "validate_parameter_constraints"]
