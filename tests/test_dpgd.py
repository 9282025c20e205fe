import math
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from skdp.accounting import BudgetAccountant, BudgetExceededError, compose_mu, mu_from_epsilon_delta
from skdp.linear_model import DPLinearRegressionGD, dp_gradient_descent
from skdp.mechanisms import make_rng


def _data(n=1000, p=3, sigma=0.5, seed=0, intercept=0.5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    theta = np.linspace(1.0, -1.0, p) / np.sqrt(p)
    y = X @ theta + intercept + sigma * rng.normal(size=n)
    return X, y, theta


def _ols(X, y):
    return np.linalg.lstsq(np.column_stack([X, np.ones(len(X))]), y, rcond=None)[0]


def test_algorithm_matches_a_direct_implementation():
    # Reference: materialise per-example gradients of (x, 1), clip each row,
    # average, add the same noise draws.
    X, y, _ = _data(n=50, p=2, sigma=2.0)
    Xa = np.column_stack([X, np.ones(50)])
    ours = dp_gradient_descent(X, y, clip_norm=0.7, noise_std=0.3, learning_rate=0.2,
                               n_iter=15, rng=make_rng(3))
    rng, theta, ref = make_rng(3), np.zeros(3), []
    for _ in range(15):
        G = Xa * (Xa @ theta - y)[:, None]
        norms = np.linalg.norm(G, axis=1)
        G *= np.minimum(1, 0.7 / norms)[:, None]
        theta = theta - 0.2 * (G.mean(axis=0) + 0.3 * rng.standard_normal(3))
        ref.append(theta)
    np.testing.assert_allclose(ours, np.array(ref), rtol=1e-12)


@pytest.mark.parametrize("ci_method", ["batched_means", "checkpoints", "independent_runs"])
@pytest.mark.parametrize("clip_norm", [None, 2.0])
def test_every_release_is_calibrated_to_its_share_of_the_budget(ci_method, clip_norm):
    X, y, _ = _data()
    reg = DPLinearRegressionGD(epsilon=0.7, delta=1e-7, clip_norm=clip_norm, ci_method=ci_method,
                               random_state=0).fit(X, y)
    mu = mu_from_epsilon_delta(0.7, 1e-7)
    shares = reg.privacy_shares_
    assert sum(shares.values()) == pytest.approx(1.0, rel=1e-12)
    assert ("clip_quantile" in shares) == (clip_norm is None)
    assert "gram_bound" in shares  # no declared bounds: the Gram row bound is a private quantile
    # Gradient steps: sensitivity 2 clip / n each, n_iter_ of them, composed in GDP.
    n = len(X)
    step_mus = [2 * reg.clip_norm_ / n / reg.noise_std_] * reg.n_iter_
    assert compose_mu(*step_mus) == pytest.approx(mu * math.sqrt(shares["gradient_descent"]))
    others = [mu * math.sqrt(v) for k, v in shares.items() if k != "gradient_descent"]
    assert compose_mu(*step_mus, *others) == pytest.approx(mu, rel=1e-9)
    assert reg.privacy_spent_.epsilon == pytest.approx(0.7, rel=1e-9)
    assert reg.privacy_spent_.delta == 1e-7


def test_declared_bounds_need_no_bound_quantile_and_shares_are_validated():
    X, y, _ = _data()
    reg = DPLinearRegressionGD(bounds_X=(-5, 5), bounds_y=(-5, 6), random_state=0).fit(X, y)
    assert "gram_bound" not in reg.privacy_shares_
    assert reg.norm_bound_ == pytest.approx(2.0)  # sqrt(p + 1) on the [-1, 1] scale
    with pytest.raises(ValueError, match="gram_share"):
        DPLinearRegressionGD(gram_share=0.5, clip_share=0.3, population_share=0.2).fit(X, y)
    with pytest.raises(ValueError, match="population_share"):
        DPLinearRegressionGD(gram_share=0.0).fit(X, y)


def test_huge_epsilon_recovers_least_squares():
    X, y, _ = _data(n=500, p=4)
    reg = DPLinearRegressionGD(epsilon=1e7, n_iter=400, clip_norm=1e3, gram_share=0.0,
                               population_share=0.0, random_state=0).fit(X, y)
    ols = _ols(X, y)
    # Tolerance: mu(1e7, 1e-6) = 4467, so the per-step noise is
    # lambda = sqrt(400) * 2 * 1e3 / (500 * 4467 * sqrt(0.95)) = 0.0184. With
    # unit feature covariance each coordinate is an AR(1) with phi = 1 - eta
    # = 0.75 and stationary sd eta * lambda / sqrt(1 - phi^2) = 0.0070; the
    # mean of 380 post-burn-in iterates has sd 0.0070 * sqrt((1 + phi) /
    # ((1 - phi) 380)) = 9.5e-4. 5 sd = 5e-3 (no clipping: clip_norm = 1e3).
    np.testing.assert_allclose(reg.coef_, ols[:4], atol=5e-3)
    assert reg.intercept_ == pytest.approx(ols[4], abs=5e-3)
    # Preconditioned defaults: the private Gram's noise at mu = 4467 is ~1e-3
    # of X^T X, so the plan is ~23 steps, and the private clip (2x a high
    # quantile of the gradient norms) leaves the residuals (sd 0.5) unclipped.
    # Per-step noise sqrt(23) * 2 * C / (500 * 4467 * 0.9) with C ~ 2 * 2.5 * 2
    # is ~4e-5; 5e-3 is > 100 sd.
    pre = DPLinearRegressionGD(epsilon=1e7, random_state=0).fit(X, y)
    assert pre.n_iter_ < 40
    np.testing.assert_allclose(pre.coef_, ols[:4], atol=5e-3)


def test_seeds():
    X, y, _ = _data()
    a = DPLinearRegressionGD(random_state=1).fit(X, y).coef_
    b = DPLinearRegressionGD(random_state=1).fit(X, y).coef_
    c = DPLinearRegressionGD(random_state=2).fit(X, y).coef_
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_accountant_is_charged_before_noise():
    X, y, _ = _data()
    # Two (1, 1e-6) fits compose (in mu) to epsilon ~1.46: a 1.3 budget holds one only.
    acc = BudgetAccountant(epsilon=1.3, delta=1e-6)
    DPLinearRegressionGD(epsilon=1.0, delta=1e-6, accountant=acc, random_state=0).fit(X, y)
    assert acc.spent()[0] == pytest.approx(1.0)
    reg = DPLinearRegressionGD(epsilon=1.0, delta=1e-6, accountant=acc, random_state=0)
    with pytest.raises(BudgetExceededError):
        reg.fit(X, y)
    assert not hasattr(reg, "coef_")
    assert len(acc.ledger) == 1


def test_gridsearch_and_pipeline_charge_every_fit():
    X, y, _ = _data(n=600)
    acc = BudgetAccountant(epsilon=100.0, delta=1e-3)
    pipe = make_pipeline(FunctionTransformer(lambda Z: Z / 2.0),  # a public, data-free rescaling
                         DPLinearRegressionGD(epsilon=1.0, delta=1e-6, accountant=acc, random_state=0))
    search = GridSearchCV(pipe, {"dplinearregressiongd__clip_norm": [1.0, 3.0]}, cv=2)
    search.fit(X, y)
    assert len(acc.ledger) == 2 * 2 + 1
    assert search.predict(X).shape == (600,)


def test_dataframe_intervals_and_summary():
    X, y, _ = _data()
    df = pd.DataFrame(X, columns=["age", "bmi", "bp"])
    reg = DPLinearRegressionGD(random_state=0).fit(df, y)
    assert list(reg.feature_names_in_) == ["age", "bmi", "bp"]
    ci = reg.conf_int(0.1)
    assert isinstance(ci, pd.DataFrame)
    assert list(ci.index) == ["age", "bmi", "bp", "intercept"]
    assert np.all(ci["lower"] < ci["upper"])
    table = reg.summary()
    assert list(table.columns) == ["coef", "std err", "t", "P>|t|", "[0.025", "0.975]"]
    np.testing.assert_allclose(table["t"], table["coef"] / table["std err"])
    assert np.all((table["P>|t|"] >= 0) & (table["P>|t|"] <= 1))
    np.testing.assert_allclose(table["coef"], np.append(reg.coef_, reg.intercept_))
    # Narrower at a larger alpha.
    assert np.all(np.diff(reg.conf_int(0.5).to_numpy(), axis=1) < np.diff(ci.to_numpy(), axis=1))
    arr = DPLinearRegressionGD(fit_intercept=False, random_state=0).fit(X, y)
    assert arr.conf_int().shape == (3, 2) and arr.intercept_ == 0.0
    assert list(arr.summary().index) == ["x0", "x1", "x2"]


def test_population_intervals_need_their_budget_share():
    X, y, _ = _data()
    reg = DPLinearRegressionGD(population_share=0.0, random_state=0).fit(X, y)
    assert reg.sampling_cov_ is None and "population" not in reg.privacy_shares_
    with pytest.raises(ValueError, match="population_share"):
        reg.conf_int(target="population")
    with pytest.raises(ValueError, match="target"):
        reg.conf_int(target="sample")
    with pytest.raises(ValueError, match="alpha"):
        reg.conf_int(alpha=1.5)


def _coverage(target, n, p, n_fits, seed, **params):
    """Fraction of (fit, coordinate) pairs whose interval covers the target."""
    covered = []
    for k in range(n_fits):
        X, y, theta = _data(n=n, p=p, seed=seed + k)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            reg = DPLinearRegressionGD(random_state=1000 + k, **params).fit(X, y)
        truth = _ols(X, y) if target == "empirical" else np.append(theta, 0.5)
        ci = reg.conf_int(0.05, target=target)
        covered.append((ci[:, 0] <= truth) & (truth <= ci[:, 1]))
    return np.mean(covered)


@pytest.mark.parametrize("ci_method,n_iter", [("batched_means", None), ("checkpoints", None),
                                              ("independent_runs", None)])
def test_empirical_coverage(ci_method, n_iter):
    # Nominal 95%. With 30 fits the coverage fraction has sd at most
    # sqrt(0.95 * 0.05 / 30) = 0.040 even if the 4 coordinates of a fit were
    # perfectly correlated; 4 sd below 0.95 is 0.79. An interval that is
    # too narrow by half would cover ~70%.
    cov = _coverage("empirical", n=2000, p=3, n_fits=30, seed=0, ci_method=ci_method,
                    n_iter=n_iter, epsilon=1.0)
    assert 0.79 <= cov <= 1.0


def test_population_coverage():
    # Same bound as above (30 fits, 4 sd). At n = 20000 the least-squares
    # sampling error (sd ~ 0.5 / sqrt(n) = 0.0035) is comparable to the DP
    # noise at epsilon = 5, so empirical intervals alone would under-cover.
    cov = _coverage("population", n=20_000, p=2, n_fits=30, seed=100, epsilon=5.0)
    assert 0.79 <= cov <= 1.0


def test_stored_state_is_small_and_private():
    X, y, _ = _data(n=3000)
    reg = DPLinearRegressionGD(random_state=0).fit(X, y)
    for name, value in vars(reg).items():
        if isinstance(value, np.ndarray):
            assert value.shape[0] != 3000, f"{name} looks like per-row data"


@pytest.mark.parametrize("X,y,match", [
    (np.array([[np.nan, 1.0], [1.0, 2.0]]), np.array([1.0, 2.0]), "NaN"),
    (np.array([[np.inf, 1.0], [1.0, 2.0]]), np.array([1.0, 2.0]), "infinity"),
    (np.ones((3, 2)), np.array([1.0, np.nan, 2.0]), "NaN"),
    (np.ones((3, 2)), np.ones((3, 2)), "1d array"),
    (np.ones((1, 2)), np.ones(1), "minimum of 2"),
    (pd.DataFrame({"a": ["x", "y", "z"], "b": [1.0, 2.0, 3.0]}), np.ones(3), "non-numeric columns"),
])
def test_bad_input(X, y, match):
    with pytest.raises(ValueError, match=match):
        DPLinearRegressionGD(random_state=0).fit(X, y)


@pytest.mark.parametrize("params,match", [
    ({"epsilon": 0.0}, "epsilon"),
    ({"epsilon": -1.0}, "epsilon"),
    ({"delta": 1.0}, "delta"),
    ({"clip_norm": 0.0}, "clip_norm"),
    ({"clip_norm": 1e300}, "clip_norm"),
    ({"norm_bound": 1e-300}, "norm_bound"),
    ({"norm_bound": 1e300}, "norm_bound"),
    ({"learning_rate": 5.0}, "learning_rate"),
    ({"bounds_X": (1.0, 1.0)}, "bounds_X"),
    ({"bounds_X": (0.0, [1.0, 2.0])}, "bounds_X"),
    ({"bounds_y": (0.0, np.inf)}, "bounds_y"),
    ({"max_weight": 0.0}, "max_weight"),
    ({"n_batches": 1}, "n_batches"),
    ({"ci_method": "bootstrap"}, "ci_method"),
    ({"ci_method": "independent_runs", "n_iter": 200, "burn_in": 20}, "independent_runs"),
    ({"n_iter": 25, "burn_in": 20}, "n_batches"),
])
def test_bad_parameters(params, match):
    X, y, _ = _data(n=50)
    with pytest.raises(ValueError, match=match):
        DPLinearRegressionGD(**params).fit(X, y)


def test_features_near_the_float_limit_give_a_finite_fit():
    # X @ theta would overflow at 1e308; inputs are capped at 1e50 (a fixed
    # per-value map, skdp.utils._validation) and gradients clipped, so the
    # fit is finite and no data-dependent error is raised.
    X = np.array([[1e308, -1e308], [-1e308, 1e308], [1e308, 1e308]] * 10)
    reg = DPLinearRegressionGD(random_state=0).fit(X, np.ones(30))
    assert np.all(np.isfinite(reg.coef_)) and np.isfinite(reg.intercept_)
    assert np.all(np.isfinite(reg.conf_int()))
