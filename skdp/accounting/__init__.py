"""Privacy accounting: exact Gaussian-DP conversions and a budget ledger.

skdp uses one privacy model everywhere: neighbouring datasets differ in one
row replaced by another (bounded DP, n public). Every mechanism is Gaussian,
so guarantees are tracked as mu-GDP and converted to (epsilon, delta) on the
exact curve; see :func:`delta_from_mu`. In secure mode the releases are
discrete Gaussian, and the same mu is read as ``mu**2 / 2``-zCDP
(:func:`budget_mu`, :func:`spent_epsilon`).
"""

from skdp.accounting._accountant import BudgetAccountant
from skdp.accounting._gdp import (
    compose_mu,
    delta_from_mu,
    epsilon_from_mu,
    epsilon_from_rho,
    gaussian_noise_std,
    mu_from_epsilon_delta,
    mu_from_rho,
    rho_from_mu,
)
from skdp.accounting._zcdp import (
    budget_mu,
    epsilon_from_rho_tight,
    rho_from_epsilon_delta,
    spent_epsilon,
)
from skdp.exceptions import BudgetExceededError, PrivacyLeakWarning

__all__ = [
    "BudgetAccountant",
    "BudgetExceededError",
    "PrivacyLeakWarning",
    "budget_mu",
    "compose_mu",
    "delta_from_mu",
    "epsilon_from_mu",
    "epsilon_from_rho",
    "epsilon_from_rho_tight",
    "gaussian_noise_std",
    "mu_from_epsilon_delta",
    "mu_from_rho",
    "rho_from_epsilon_delta",
    "rho_from_mu",
    "spent_epsilon",
]
