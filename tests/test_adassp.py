import numpy as np
import pytest

from skdp.accounting import BudgetAccountant, mu_from_epsilon_delta
from skdp.linear_model import AdaSSPRegressor


def _data(n, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    return X, X @ (np.ones(p) / np.sqrt(p)) * 0.5 + 0.1 * rng.normal(size=n)


def test_error_shrinks_with_n_and_epsilon():
    # The SSP noise is O(1 / mu) on statistics of size O(n), so the error
    # scales like 1 / (n mu) (until the ridge saturates it at ||theta*|| = 0.5):
    # 25x more rows or 10x more epsilon shrink it by roughly those factors,
    # far beyond the seed-to-seed spread of a mean over 5 seeds.
    errs = {}
    for n in (2_000, 50_000):
        for eps in (0.5, 5.0):
            X, y = _data(n)
            est = [AdaSSPRegressor(epsilon=eps, random_state=s).fit(X, y).coef_ for s in range(5)]
            errs[n, eps] = np.mean([np.linalg.norm(c - np.ones(3) / np.sqrt(3) * 0.5) for c in est])
    assert errs[50_000, 0.5] < errs[2_000, 0.5]
    assert errs[2_000, 5.0] < errs[2_000, 0.5]


def test_ridge_adapts_to_the_private_eigenvalue():
    X, y = _data(30)
    small = AdaSSPRegressor(epsilon=1.0, random_state=0).fit(X, y)
    X, y = _data(200_000)
    large = AdaSSPRegressor(epsilon=1.0, random_state=0).fit(X, y)
    assert small.l2_penalty_ > 0.0
    assert large.l2_penalty_ == 0.0


def test_charges_the_whole_budget_once():
    X, y = _data(500)
    acc = BudgetAccountant(epsilon=2.0, delta=1e-5)
    est = AdaSSPRegressor(epsilon=1.0, delta=1e-6, accountant=acc, random_state=0).fit(X, y)
    assert acc.spent_mu == pytest.approx(mu_from_epsilon_delta(1.0, 1e-6))
    assert est.privacy_spent_.epsilon == pytest.approx(1.0)


@pytest.mark.parametrize("params", [{"label_bound": 0.0}, {"failure_probability": 1.0},
                                    {"norm_bound": -1.0}, {"epsilon": 0.0}])
def test_bad_parameters(params):
    X, y = _data(50)
    with pytest.raises(ValueError):
        AdaSSPRegressor(**params).fit(X, y)


def test_bad_input():
    with pytest.raises(ValueError, match="NaN"):
        AdaSSPRegressor().fit(np.array([[np.nan], [1.0]]), np.ones(2))
