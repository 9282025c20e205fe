import math
import warnings

import numpy as np
import pandas as pd
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
    X, y = _data(300)  # 300 rows: the fewest for a safe private bound search at epsilon 1
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


def test_high_dimension_no_longer_shrinks_to_zero():
    # n = 1e5, p = 100, epsilon = 1 (issue 15: the error was 0.86, predicting 0
    # scores 1.0). With the private row and label bounds (~1.3 sqrt(p) and ~3.4
    # label sds instead of 3 sqrt(p + 1) and 2) and the sqrt(2) B^2 Gram
    # sensitivity, the ridge is 0 and the error is the Gram and X^T y noise:
    # ||(X^T X)^-1 noise|| ~ sqrt(q) sigma / n ~ 0.25 (measured 0.25-0.29 over
    # two seeds). 0.45 is far below the old value and the trivial 1.0.
    rng = np.random.default_rng(0)
    n, p = 100_000, 100
    theta = rng.normal(size=p)
    theta /= np.linalg.norm(theta)
    X = rng.normal(size=(n, p))
    y = X @ theta + rng.normal(size=n)
    est = AdaSSPRegressor(random_state=0).fit(X, y)
    assert np.linalg.norm(est.coef_ - theta) < 0.45
    assert est.l2_penalty_ == 0.0
    assert set(est.privacy_shares_) == {"bounds", "gram", "xty", "eigenvalue"}
    assert sum(est.privacy_shares_.values()) == pytest.approx(1.0)


def test_declared_bounds_give_the_original_scale_and_no_bound_search():
    rng = np.random.default_rng(1)
    n = 50_000
    X = np.column_stack([rng.uniform(20, 80, n), rng.uniform(0, 500, n)])
    y = 100 + 2.0 * X[:, 0] - 0.1 * X[:, 1] + rng.normal(0, 5, n)
    est = AdaSSPRegressor(epsilon=5.0, bounds_X=([18, 0], [90, 500]), bounds_y=(0, 400),
                          random_state=0).fit(X, y)
    assert "bounds" not in est.privacy_shares_
    assert est.norm_bound_ == pytest.approx(np.sqrt(3)) and est.label_bound_ == 1.0
    # OLS standard errors are ~0.002 and 0.0003 at n = 5e4; the noise at epsilon 5 on
    # statistics of size n is of the same order; 0.05 / 0.01 are > 10 of them.
    assert est.coef_[0] == pytest.approx(2.0, abs=0.05)
    assert est.coef_[1] == pytest.approx(-0.1, abs=0.01)
    assert est.intercept_ == pytest.approx(100.0, abs=3.0)


def test_weights_before_any_charge_and_unit_weights_exact():
    X, y = _data(500)
    a = AdaSSPRegressor(random_state=0).fit(X, y).coef_
    b = AdaSSPRegressor(random_state=0).fit(X, y, sample_weight=np.ones(500)).coef_
    np.testing.assert_array_equal(a, b)
    acc = BudgetAccountant(epsilon=2.0, delta=1e-5)
    with pytest.raises(ValueError, match="max_weight"):
        AdaSSPRegressor(accountant=acc).fit(X, y, sample_weight=np.full(500, 1.5))
    assert acc.ledger == []
    # Weighted statistics: at a huge epsilon the fit is weighted least squares.
    w = np.r_[np.ones(250), np.full(250, 3.0)]
    y2 = y.copy()
    y2[250:] += X[250:, 0]
    est = AdaSSPRegressor(epsilon=1e8, max_weight=3.0, norm_bound=50.0, label_bound=50.0,
                          random_state=0).fit(X, y2, sample_weight=w)
    Z = np.column_stack([X, np.ones(500)])
    wls = np.linalg.solve(Z.T @ (Z * w[:, None]), Z.T @ (w * y2))
    np.testing.assert_allclose(np.append(est.coef_, est.intercept_), wls, atol=1e-2)


@pytest.mark.parametrize("params", [{"norm_bound": 1e300}, {"label_bound": 1e-300},
                                    {"bounds_X": (1.0, 0.0)}, {"max_weight": -1.0}])
def test_absurd_parameters_name_themselves(params):
    X, y = _data(50)
    with pytest.raises(ValueError, match=next(iter(params))):
        AdaSSPRegressor(**params).fit(X, y)


def test_budget_split_gives_the_eigenvalue_a_small_part():
    from skdp.linear_model._adassp import adassp_shares

    # s_e = 2 s_g / q keeps the eigenvalue's noise std, W B^2 / (mu sqrt(s_e)), at
    # sqrt(q) / 2 Gram entry stds (sqrt(2) W B^2 / (mu sqrt(s_g))).
    for q, search in [(101, True), (11, False), (2, False), (1, True)]:
        shares = adassp_shares(search, q)
        assert sum(shares.values()) == pytest.approx(1.0)
        assert shares["gram"] == pytest.approx(shares["xty"])
        assert shares["eigenvalue"] <= (1.0 - shares.get("bounds", 0.0)) / 3.0 + 1e-12
        if q > 2:
            ratio = math.sqrt(shares["gram"] / shares["eigenvalue"]) / math.sqrt(2.0)
            assert ratio == pytest.approx(math.sqrt(q) / 2.0)
    assert adassp_shares(True, 101)["bounds"] == 0.05
    assert "bounds" not in adassp_shares(False, 3)


def test_small_tables_give_the_bound_search_a_safe_share_or_a_clear_error():
    # The search (9 comparisons, 2 columns) needs mu_b >= 8 sqrt(18) W / n
    # (safe_search_mu): at epsilon 1 (mu = 0.2367 at delta 1e-6) and 442 rows
    # that is (8 sqrt(18) / 442 / mu)**2 = 0.105 of mu**2.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(442, 3))
    y = X.sum(axis=1) + rng.normal(size=442)
    reg = AdaSSPRegressor(delta=1e-6, random_state=0).fit(X, y)
    mu = reg.privacy_spent_.mu
    assert reg.privacy_shares_["bounds"] == pytest.approx((8 * np.sqrt(18) / 442 / mu) ** 2)
    assert sum(reg.privacy_shares_.values()) == pytest.approx(1.0)
    acc = BudgetAccountant(epsilon=5.0, delta=1e-5)
    with pytest.raises(ValueError, match="n_samples=100 rows are too few.*bounds_X"):
        AdaSSPRegressor(accountant=acc).fit(X[:100], y[:100])
    assert acc.ledger == []


def test_columns_far_from_zero_against_their_spread_warn():
    # A second new user's trial (session 23): on diamonds' raw depth and table (means
    # 62 and 57, sds 1.4 and 2.2) beside log carat, AdaSSP scored R^2 0.06 (OLS
    # 0.94) with l2_penalty_ 5.9e5 and no warning: the Gram matrix resolves those
    # columns' level, not their variation, and the ridge shrinks them to 0. It now
    # warns as DP-GD does; centred columns do not.
    rng = np.random.default_rng(0)
    n = 20_000
    X = pd.DataFrame({"depth": rng.normal(61.7, 1.4, n), "table": rng.normal(57.5, 2.2, n),
                      "lcarat": rng.normal(-0.4, 0.6, n)})
    y = 1.8 * X["lcarat"] - 0.01 * X["depth"] + 0.005 * X["table"] + 8.0 + 0.2 * rng.normal(size=n)
    with pytest.warns(UserWarning, match=r"\['depth', 'table'\] lie far from 0"):
        AdaSSPRegressor(random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        AdaSSPRegressor(random_state=0).fit(X - X.mean(), y)
