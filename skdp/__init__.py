"""skdp: differentially private estimators for scikit-learn.

Subpackages
-----------
accounting
    Exact Gaussian-DP accounting and the :class:`~skdp.accounting.BudgetAccountant`.
mechanisms
    Random generators, Gaussian noise, workloads and correlated noise.
clipping
    Row clipping, per-example gradient clip factors, DP-STAT.
optim
    SGD, AdaGrad and Adam steppers and the private second-moment variants.
linear_model, moments, density, preprocessing, decomposition
    The estimators and transformers.
model_selection
    Private hyper-parameter searches (DPGridSearchCV, DPRandomizedSearchCV).
datasets
    The papers' synthetic data.
"""

__version__ = "0.2.0.dev0"

import skdp._fork  # noqa: E402, F401 - the fork hook, from the first import on
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning  # noqa: E402

__all__ = ["BudgetExceededError", "PrivacyLeakWarning", "__version__"]
