"""DPSGDRegressor / DPSGDClassifier: calibration, streaming, sklearn citizenship, papers' claims."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import expit
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import skdp.linear_model._dpsgd as dpsgd_module
from skdp.accounting import BudgetAccountant, epsilon_from_mu, mu_from_epsilon_delta
from skdp.datasets import make_power_law_regression, make_sparse_logistic
from skdp.exceptions import PrivacyLeakWarning
from skdp.linear_model import DPSGDClassifier, DPSGDRegressor
from skdp.mechanisms import (
    CorrelatedNoise,
    blt_parameters,
    blt_sensitivity_factor,
    cyclic_sensitivity_factor,
    toeplitz_coefficients,
    toeplitz_sensitivity_factor,
)


def _regression(n=2000, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    return X, X @ np.linspace(1.0, -0.5, p) + 0.3 + 0.1 * rng.normal(size=n)


# -- calibration ---------------------------------------------------------------

@pytest.mark.parametrize("noise", ["independent", "nu"])
def test_noise_has_the_calibrated_scale(noise):
    # With X = 0 and no intercept every gradient is 0, so with SGD at
    # learning rate 1 the coefficients are -(1/b) sum_t noise_t: 2000 i.i.d.
    # draws of a Gaussian whose variance is known in closed form.
    n, p, b = 640, 2000, 64
    T = n // b
    est = DPSGDRegressor(epsilon=2.0, noise=noise, nu=0.05, batch_size=b, learning_rate=1.0,
                         clip_norm=0.7, average=0.0, fit_intercept=False, random_state=0)
    est.fit(np.zeros((n, p)), np.ones(n))
    mu = mu_from_epsilon_delta(2.0, 1e-6)
    # 'nu' noise is the BLT approximation of nu-DP-FTRL: its own exact
    # sensitivity over an unbounded stream, within 1% of the exact matrix's.
    kappa = 1.0 if noise == "independent" else blt_sensitivity_factor(*blt_parameters(0.05))
    if noise == "nu":
        assert kappa == pytest.approx(toeplitz_sensitivity_factor(0.05), rel=0.01)
    assert est.noise_std_ == pytest.approx(2 * 0.7 * kappa / mu)
    # Var of sum_t [C^{-1} Z]_t is T^2 times the variance of the running
    # average at step T (CorrelatedNoise.average_variances; T for C = I).
    gen = CorrelatedNoise("identity" if noise == "independent" else "blt", 1, None, nu=0.05)
    expected = est.noise_std_**2 * T**2 * gen.average_variances(T - 1, T)[0] / b**2
    # The sample variance of 2000 draws has relative sd sqrt(2 / 2000) =
    # 0.032; 4 sd is 0.13.
    assert np.var(est.coef_) / expected == pytest.approx(1.0, abs=0.13)
    assert abs(np.mean(est.coef_)) < 4 * np.sqrt(expected / p)


def test_several_epochs_pay_for_every_participation():
    X, y = _regression(n=1000)
    mu = mu_from_epsilon_delta(1.0, 1e-6)
    ind = DPSGDRegressor(epochs=4, batch_size=100, noise="independent", clip_norm=1.0,
                         random_state=0).fit(X, y)
    assert ind.sensitivity_factor_ == pytest.approx(2.0)  # sqrt(4): exact composition
    assert ind.noise_std_ == pytest.approx(2 * 1.0 * 2.0 / mu)
    nu = DPSGDRegressor(epochs=4, batch_size=100, noise="nu", nu=0.1, clip_norm=1.0,
                        random_state=0).fit(X, y)
    assert nu.horizon_ == 40
    assert nu.sensitivity_factor_ == pytest.approx(
        cyclic_sensitivity_factor("blt", 40, 10, 4, nu=0.1))
    assert nu.sensitivity_factor_ == pytest.approx(
        cyclic_sensitivity_factor("nu", 40, 10, 4, nu=0.1), rel=0.01)
    assert nu.privacy_spent_.mu == pytest.approx(mu)


def test_every_row_is_used_once_per_epoch_in_a_fixed_order(monkeypatch):
    seen = []
    original = dpsgd_module._residuals

    def spy(loss, X, y, coef, fit_intercept):
        seen.append(X[:, 0].copy())
        return original(loss, X, y, coef, fit_intercept)

    monkeypatch.setattr(dpsgd_module, "_residuals", spy)
    n = 103
    X = np.column_stack([np.arange(n, dtype=float), np.ones(n)])
    DPSGDRegressor(epochs=3, batch_size=10, clip_norm=1.0, random_state=0).fit(X, np.zeros(n))
    assert len(seen) == 3 * 11 and seen[10].shape == (3,)  # the last batch is smaller
    epochs = [np.concatenate(seen[11 * e:11 * (e + 1)]) for e in range(3)]
    for order in epochs:
        np.testing.assert_array_equal(np.sort(order), np.arange(n))
        np.testing.assert_array_equal(order, epochs[0])


@pytest.mark.parametrize("optimizer, moments", [
    ("sgd", "post_processing"), ("adagrad", "bias_correction"), ("adam", "independent"),
    ("adam", "jme"), ("adagrad", "scale_then_privatize")])
def test_every_variant_charges_exactly_the_budget(optimizer, moments):
    X, y = _regression(n=20_000)
    acc = BudgetAccountant(epsilon=10.0, delta=1e-3)
    est = DPSGDRegressor(epsilon=0.5, delta=1e-7, optimizer=optimizer, private_moments=moments,
                         noise="nu", accountant=acc, random_state=0).fit(X, y)
    eps, delta, mu = est.privacy_spent_
    assert eps == pytest.approx(0.5) and delta == 1e-7
    assert acc.spent_mu == pytest.approx(mu_from_epsilon_delta(0.5, 1e-7))
    # A loose floor (predicting the mean scores 0, the true model 0.99): the
    # variant trained. Measured 0.92-0.99 over seeds 0-2, sgd lowest.
    assert est.score(X, y) > 0.9
    assert (est.second_noise_std_ > 0) == (moments in ("independent", "jme"))


# -- streaming -----------------------------------------------------------------

def test_partial_fit_continues_the_noise_stream_without_new_charges():
    # On X = 0 (no signal) the coefficients are -(lr / b) * the sum of the
    # noise, so two partial_fit calls equal one fit on all rows exactly when
    # the correlated-noise stream continues where it stopped.
    X, y = np.zeros((640, 5)), np.ones(640)
    acc = BudgetAccountant(epsilon=5.0, delta=1e-4)
    # Last iterates (average=0): the averages are of each call's own steps.
    kw = dict(noise="nu", nu=0.05, batch_size=64, learning_rate=1.0, fit_intercept=False,
              clip_norm=1.0, average=0.0, random_state=3)
    # Same seed, first charge of a fresh ledger each: the same noise.
    one = DPSGDRegressor(accountant=BudgetAccountant(epsilon=5.0, delta=1e-4), **kw).fit(X, y)
    two = DPSGDRegressor(accountant=acc, **kw).partial_fit(X[:384], y[:384])
    two.partial_fit(X[384:], y[384:])
    np.testing.assert_allclose(two.coef_, one.coef_, rtol=1e-10, atol=1e-12)
    assert acc.spent_mu == pytest.approx(two.privacy_spent_.mu)  # charged once
    assert two.n_steps_ == 10 and two.n_iter_ == 2 and two.horizon_ is None


def test_correlated_stream_stops_at_its_horizon():
    X, y = _regression(n=640)
    est = DPSGDRegressor(noise="nu", nu=0.0, batch_size=64, random_state=0).fit(X, y)
    assert est.horizon_ == 10
    with pytest.raises(ValueError, match="horizon"):
        est.partial_fit(X[:64], y[:64])
    est = DPSGDRegressor(noise="nu", nu=0.0, batch_size=64, n_steps=15, random_state=0)
    est.fit(X, y).partial_fit(X[:320], y[:320])
    assert est.n_steps_ == 15
    assert est.sensitivity_factor_ == pytest.approx(toeplitz_sensitivity_factor(0.0, 15))
    with pytest.raises(ValueError, match="horizon"):
        est.partial_fit(X[:64], y[:64])
    with pytest.raises(ValueError, match="more than the horizon"):
        DPSGDRegressor(noise="nu", n_steps=5, batch_size=64).fit(X, y)
    # Independent noise has no horizon: fit, then continue.
    DPSGDRegressor(random_state=0).fit(X, y).partial_fit(X, y)



def test_a_failed_call_ends_the_stream():
    # A partial_fit that overflows has drawn its correlated noise (and moved its
    # optimizer) before it finds the overflow: the stream must not continue, or
    # it would run past the horizon kappa was computed for (the privacy audit of
    # session 22: two failed calls drew 6 noise steps under a horizon of 4, 4.4%
    # more mu than claimed), and a retry would use the same rows twice.
    X, y = np.ones((1, 1)), np.zeros(1)
    kw = dict(epsilon=3.0, noise="nu", nu=0.0, n_steps=4, batch_size=1, learning_rate=1e308,
              clip_norm=1.0, fit_intercept=False, average=0.0)
    for seed in range(40):  # a seed whose first step stays finite and whose second does not
        est = DPSGDRegressor(random_state=seed, **kw)
        try:
            est.fit(X, y)
        except FloatingPointError:
            continue
        coef, steps = est.coef_.copy(), est.n_steps_
        try:
            est.partial_fit(X, y)
        except FloatingPointError as error:
            assert "call fit again" in str(error)
            break
    else:
        pytest.fail("no seed overflowed on its second step")
    for _ in range(3):
        with pytest.raises(ValueError, match="failed after it began drawing"):
            est.partial_fit(X, y)
    assert est._state["noise1"].n_steps_seen == 2  # nothing drawn after the failure
    np.testing.assert_array_equal(est.coef_, coef)  # the last success's release stands
    assert est.n_steps_ == steps
    est.set_params(learning_rate=0.1).fit(X, y)  # a new stream, charged anew
    est.partial_fit(X, y)
    assert est.n_steps_ == 2


def test_an_interrupted_call_ends_the_stream(monkeypatch):
    # Any exception once the call has drawn its noise (an interrupt, a memory error)
    # left the stream's step count behind its noise (the review of session 22).
    import skdp.linear_model._dpsgd as dpsgd_module
    X, y = _regression(n=400)
    est = DPSGDRegressor(noise="nu", nu=0.0, n_steps=8, batch_size=100, clip_norm=1.0,
                         random_state=0).fit(X[:100], y[:100])

    def interrupted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(dpsgd_module, "dp_sgd", interrupted)
    with pytest.raises(MemoryError):
        est.partial_fit(X[100:300], y[100:300])
    monkeypatch.undo()
    with pytest.raises(ValueError, match="failed after it began drawing"):
        est.partial_fit(X[:100], y[:100])
    # A refusal before any draw (the horizon) does not end a stream.
    est = DPSGDRegressor(noise="nu", nu=0.0, n_steps=2, batch_size=100, clip_norm=1.0,
                         random_state=0).fit(X[:100], y[:100])
    with pytest.raises(ValueError, match="horizon"):
        est.partial_fit(X[100:300], y[100:300])
    est.partial_fit(X[100:200], y[100:200])
    # A fit that fails past its charge leaves no old stream to continue.
    monkeypatch.setattr(dpsgd_module, "dp_sgd", interrupted)
    with pytest.raises(MemoryError):
        est.fit(X[:100], y[:100])
    monkeypatch.undo()
    assert not hasattr(est, "_state")

def test_pickles_drop_the_secret_noise_state():
    X, y = _regression(n=500)
    est = DPSGDRegressor(noise="nu", random_state=0).fit(X, y)
    copy = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(copy.predict(X), est.predict(X))
    with pytest.raises(RuntimeError, match="secret noise state"):
        copy.partial_fit(X, y)


# -- accuracy ------------------------------------------------------------------

def test_huge_epsilon_without_clipping_is_least_squares():
    X, y = _regression(n=400)
    est = DPSGDRegressor(epsilon=1e7, clip_norm=100.0, batch_size=20, epochs=200,
                         learning_rate=0.05, random_state=0).fit(X, y)
    ref = LinearRegression().fit(X, y)
    # Noise: std 2 * 100 / 4467 / 20 = 2.2e-3 per step on the mean gradient;
    # with step 0.05 the stationary sd of a coefficient is about
    # 2.2e-3 * sqrt(0.05 / 2) = 3.5e-4, and the SGD noise of batches of 20
    # rows with residual sd 0.1 is 0.1 * sqrt(0.05 / 40) = 3.5e-3; 5e-2 is
    # more than 10 sd of both.
    np.testing.assert_allclose(est.coef_, ref.coef_, atol=5e-2)
    assert est.intercept_ == pytest.approx(ref.intercept_, abs=5e-2)


def test_huge_epsilon_classifier_is_logistic_regression():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 2))
    y = (rng.random(1000) < expit(X @ np.array([1.5, -1.0]) + 0.5)).astype(int)
    est = DPSGDClassifier(epsilon=1e7, clip_norm=100.0, optimizer="adam", learning_rate=0.02,
                          batch_size=50, epochs=100, classes=[0, 1], random_state=0).fit(X, y)
    ref = LogisticRegression(C=np.inf).fit(X, y)
    # Adam's stationary jitter at step 0.02 is of order 0.02 per coefficient.
    np.testing.assert_allclose(est.coef_, ref.coef_, atol=0.1)
    np.testing.assert_allclose(est.predict_proba(X), ref.predict_proba(X), atol=0.03)


# -- classifier API ------------------------------------------------------------

def test_classifier_binary_and_multiclass_shapes():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(3000, 3))
    y2 = np.where(X[:, 0] > 0, "yes", "no")
    clf = DPSGDClassifier(classes=["no", "yes"], random_state=0).fit(X, y2)
    assert clf.coef_.shape == (1, 3) and clf.intercept_.shape == (1,)
    assert clf.decision_function(X).shape == (3000,)
    P = clf.predict_proba(X)
    assert P.shape == (3000, 2) and np.allclose(P.sum(axis=1), 1)
    assert set(clf.predict(X)) <= {"no", "yes"} and clf.score(X, y2) > 0.8
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    clf3 = DPSGDClassifier(classes=[0, 1, 2], epochs=3, optimizer="adam", random_state=0)
    clf3.fit(X, y3)
    assert clf3.coef_.shape == (3, 3) and clf3.intercept_.shape == (3,)
    assert clf3.decision_function(X).shape == (3000, 3) and clf3.score(X, y3) > 0.7
    np.testing.assert_allclose(clf3.predict_log_proba(X[:5]), np.log(clf3.predict_proba(X[:5])))


def test_label_set_is_public_or_warned():
    X, y = _regression(n=500)
    labels = (y > 0).astype(int)
    with pytest.warns(PrivacyLeakWarning, match="label set"):
        DPSGDClassifier(random_state=0).fit(X, labels)
    with pytest.raises(ValueError, match="not in classes"):
        DPSGDClassifier(classes=[0, 2], random_state=0).fit(X, labels)
    with pytest.raises(ValueError, match="1 class"):
        DPSGDClassifier(classes=[1], random_state=0).fit(X, labels)
    with pytest.raises(ValueError, match="Unknown label type"):
        DPSGDClassifier(classes=[0, 1]).fit(X, y)
    clf = DPSGDClassifier(random_state=0).partial_fit(X, labels, classes=[0, 1])
    clf.partial_fit(X[:100], labels[:100])
    with pytest.raises(ValueError, match="differs"):
        clf.partial_fit(X[:100], labels[:100], classes=[0, 1, 2])


# -- sklearn citizenship ---------------------------------------------------------

def test_dataframe_pipeline_and_gridsearch_with_an_accountant():
    X, y = _regression(n=3000)
    df = pd.DataFrame(X, columns=["age", "income", "score"])
    acc = BudgetAccountant(epsilon=20.0, delta=1e-3)
    pipe = make_pipeline(StandardScaler(), DPSGDRegressor(epsilon=0.5, accountant=acc,
                                                          random_state=0))
    grid = GridSearchCV(pipe, {"dpsgdregressor__noise": ["independent", "nu"],
                               "dpsgdregressor__optimizer": ["sgd", "adam"]}, cv=3)
    grid.fit(df, y)
    # Every fit charges the one ledger: 4 candidates x 3 folds + the refit.
    assert len(acc.ledger) == 13
    assert acc.spent_mu == pytest.approx(np.sqrt(13) * mu_from_epsilon_delta(0.5, 1e-6))
    assert list(grid.best_estimator_.feature_names_in_) == ["age", "income", "score"]
    # A smoke check that the pipeline learns (predicting the mean scores 0):
    # over seeds 0-5 the best cross-validated R^2 at epsilon 0.5 is 0.90-0.96
    # (OLS 0.99).
    assert grid.best_score_ > 0.8
    # The scaler sees the private data without noise: StandardScaler is not
    # private; real pipelines scale with public constants.


@pytest.mark.parametrize("params, match", [
    ({"optimizer": "rmsprop"}, "optimizer"), ({"private_moments": "clip"}, "private_moments"),
    ({"noise": "laplace"}, "noise"), ({"nu": 1.0}, "nu"), ({"batch_size": 0}, "batch_size"),
    ({"clip_norm": -1.0}, "clip_norm"), ({"epsilon": 0.0}, "epsilon"),
    ({"betas": (0.9, 1.5), "optimizer": "adam"}, "betas")])
def test_bad_parameters(params, match):
    X, y = _regression(n=200)
    with pytest.raises(ValueError, match=match):
        DPSGDRegressor(**params).fit(X, y)


# -- the papers' claims ----------------------------------------------------------

def _test_loss(clf, X, y):
    z = clf.decision_function(X)
    return float(np.mean(np.logaddexp(0.0, z) - y * z))


@pytest.mark.slow
def test_independent_moments_not_worse_than_post_processing_papers_002_5_1():
    # Ganesh et al. 2025 §5.1: 1000 rows (90% with x = 0), batch 1, one epoch, clip 1,
    # noise multiplier 0.1 (std 0.1 on a step's gradient: replace-one mu =
    # 2 / 0.1 = 20), AdaGrad on DP-MF noise (nu = 0, the optimal single-epoch
    # factorization of the prefix sum), learning rate and floor tuned on a
    # grid, 30 trials, test loss on 10,000 rows. The paper: 0.5981 vs 0.6010.
    # benchmarks/dpsgd_adagrad_1d.py runs the larger grid and all variants.
    Xte, yte = make_sparse_logistic(10_000, sparsity=0.0, random_state=12345)
    eps = epsilon_from_mu(20.0, 1e-6)
    grid = [(lr, floor) for lr in (0.1, 0.3, 1.0) for floor in (1e-3, 1.0)]
    losses = {m: np.zeros((len(grid), 30)) for m in ("post_processing", "independent")}
    for trial in range(30):
        X, y = make_sparse_logistic(1000, random_state=trial)
        for moments, table in losses.items():
            for g, (lr, floor) in enumerate(grid):
                clf = DPSGDClassifier(epsilon=eps, optimizer="adagrad", private_moments=moments,
                                      noise="nu", nu=0.0, batch_size=1, clip_norm=1.0,
                                      learning_rate=lr, eps_stability=floor, fit_intercept=False,
                                      classes=[0, 1], random_state=trial).fit(X, y)
                table[g, trial] = _test_loss(clf, Xte, yte)
    best = {m: t[np.argmin(t.mean(axis=1))] for m, t in losses.items()}
    diff = best["independent"] - best["post_processing"]
    # Measured: 0.6037 vs 0.6064 (paired difference -0.0027, se 0.0008). The
    # claim is the sign; allow no more than 1 paired se above zero.
    assert diff.mean() <= diff.std(ddof=1) / np.sqrt(30)


# A 54 s reproduction (the longest in the suite): a benchmark, run with -m benchmark.
@pytest.mark.benchmark
def test_nu_dp_ftrl_halves_the_excess_risk_of_dp_sgd_papers_003():
    # Choquette-Choo et al. 2024: d = 20, eigenvalues k^-1.5, T = 20,000 rows in one pass at
    # batch 1, the same (epsilon, delta), learning rate tuned on the same grid.
    # Measured (benchmarks/dpftrl_linear_regression.py): at epsilon 4 the best
    # excess risks are 1.2e-3 (nu = 0.001) and 1.3e-2 (independent), 10x
    # apart; the test asks for 2x over two seeds.
    lrs = [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1]
    risks = {}
    for seed in range(2):
        X, y, theta, h = make_power_law_regression(20_000, 20, random_state=seed)
        for noise, nu in [("independent", 0.0), ("nu", 0.001), ("nu", 0.01)]:
            for lr in lrs:
                est = DPSGDRegressor(epsilon=4.0, noise=noise, nu=nu, batch_size=1,
                                     learning_rate=lr, clip_norm=1.0, fit_intercept=False,
                                     random_state=seed)
                try:
                    w = est.fit(X, y).coef_
                    risk = 0.5 * np.sum(h * (w - theta) ** 2)
                except FloatingPointError:
                    risk = np.inf
                risks.setdefault((noise, nu, lr), []).append(risk)
    best = {}
    for (noise, nu, lr), r in risks.items():
        best[noise] = min(best.get(noise, np.inf), np.mean(r))
    assert best["nu"] <= 0.5 * best["independent"]


# -- defaults, weights, progress (issue 15) -------------------------------------------

def _sphere_data(n, p, seed=0):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=p)
    theta /= np.linalg.norm(theta)
    X = rng.normal(size=(n, p))
    return X, X @ theta + rng.normal(size=n), theta


@pytest.mark.parametrize("batch_size,epochs", [(64, 1), (64, 3), (256, 5)])
def test_default_step_is_stable_for_batch_sizes_and_epochs(batch_size, epochs):
    # x ~ N(0, I_50), n = 1e5, epsilon = 1 (the setting). The defaults
    # measured 0.27-0.29, 0.27-0.28 and 0.14-0.15 over two seeds each (seed
    # sd ~0.01); the old step gave 0.52 and 1.37 for the first two. 0.5 is
    # many seed sds above the new values and below the old (64, 3) one.
    X, y, theta = _sphere_data(100_000, 50)
    reg = DPSGDRegressor(batch_size=batch_size, epochs=epochs, random_state=0).fit(X, y)
    assert np.linalg.norm(reg.coef_ - theta) < 0.5
    assert reg.learning_rate_ <= 0.1


def test_batch_size_one_does_not_diverge():
    # One row per step: the noise of every step is 2 / mu ~ 8 per coordinate. The
    # default step shrinks with the noise the iterates accumulate
    # (learning_rate_ <= max(0.02 / rho^2, 3 / T), rho^2 scaled by the share V / T of
    # the per-step variance that the running sum keeps), so the model does not
    # diverge (it was > 1000 before). Independent noise keeps all of it (V = T):
    # the step is 3 / T and the model stays near its start. The default 'nu' noise
    # cancels most of it (V / T ~ 0.01 here): a larger step, and a model that learns.
    X, y, theta = _sphere_data(20_000, 10)
    ind = DPSGDRegressor(batch_size=1, noise="independent", random_state=0).fit(X, y)
    assert np.all(np.isfinite(ind.coef_))
    assert np.linalg.norm(ind.coef_ - theta) < 1.5
    assert ind.learning_rate_ == pytest.approx(3.0 / 20_000)
    nu = DPSGDRegressor(batch_size=1, random_state=0).fit(X, y)
    T, q = 20_000, 11
    beta = toeplitz_coefficients(T, 0.01, inverse=True)
    rho2 = q * (nu.noise_std_ / nu.clip_norm_) ** 2 * np.sum(np.cumsum(beta) ** 2) / T
    assert nu.learning_rate_ == pytest.approx(min(0.1, 25.0 / T, max(0.02 / rho2, 3.0 / T)))
    assert nu.learning_rate_ > 3 * ind.learning_rate_
    assert np.linalg.norm(nu.coef_ - theta) < np.linalg.norm(ind.coef_ - theta)


def _imbalanced_logistic(n, p, seed=0):
    # About 12% positives: the intercept must travel to about -2.5 (HMDA's shape).
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    return X, (X[:, 0] - 0.5 * X[:, 1] - 2.5 + rng.logistic(size=n) > 0).astype(int)


def test_the_classifier_step_is_sized_for_the_logistic_curvature():
    # The default step's horizon terms assume the squared loss's curvature, 1;
    # the logistic loss's is at most 1/4, so the classifier's are 4 times
    # larger, min(0.4, 100 / T, max(0.02 / rho**2, 12 / T)), while the noise
    # term 0.02 / rho**2 is the same (the loss the noise costs is curvature x
    # variance). The two estimators share T and rho**2 on the same X (one output).
    X, y = _imbalanced_logistic(30_000, 5)
    for eps, horizon in [(100.0, True), (0.05, False)]:
        reg = DPSGDRegressor(epsilon=eps, clip_norm=1.0, random_state=0).fit(X, y)
        clf = DPSGDClassifier(epsilon=eps, classes=[0, 1], clip_norm=1.0,
                              random_state=0).fit(X, y)
        T = clf.n_steps_
        beta = toeplitz_coefficients(T, 0.01, inverse=True)
        rho2 = 6 * (clf.noise_std_ / (clf.batch_size_ * 1.0)) ** 2 * np.sum(
            np.cumsum(beta) ** 2) / T
        assert clf.learning_rate_ == pytest.approx(min(0.4, 100 / T, max(0.02 / rho2, 12 / T)))
        assert reg.learning_rate_ == pytest.approx(min(0.1, 25 / T, max(0.02 / rho2, 3 / T)))
        if horizon:
            assert clf.learning_rate_ == pytest.approx(4 * reg.learning_rate_)


def test_the_classifier_default_beats_the_prior_where_the_old_step_did_not():
    # HMDA's shape: 1,700 rows, 13 columns, 11% positives, epsilon 100 (noise
    # negligible). The old step (0.1 here, the regression rule) leaves the
    # intercept near -0.63 after 27 steps and scores 0.48 nats on fresh rows,
    # worse than predicting the prior (0.348; HMDA itself: benchmarks/
    # dpsgd_classifier_tables.py). The new one scores 0.336-0.339 over three
    # seeds (logistic regression 0.301): the margin 0.005 is over twice that spread.
    X, y = _imbalanced_logistic(1_700, 13)
    Xt, yt = _imbalanced_logistic(20_000, 13, seed=1)
    prior = log_loss(yt, np.full((len(yt), 2), [1 - y.mean(), y.mean()]))
    clf = DPSGDClassifier(epsilon=100.0, classes=[0, 1], random_state=0).fit(X, y)
    assert log_loss(yt, clf.predict_proba(Xt)) < prior - 0.005
    old = clf.set_params(learning_rate=0.1).fit(X, y)
    assert log_loss(yt, old.predict_proba(Xt)) > prior + 0.1


@pytest.mark.parametrize("offset,scale", [(0.0, 1.0), (1e8, 1.0), (3.0, 1e160)])
def test_the_settling_statistic_matches_its_two_pass_formula(offset, scale):
    # The running (Welford) sums against numpy's two-pass ones, where the mean
    # dwarfs the spread and where squares of the raw releases would overflow.
    G = (np.random.default_rng(0).normal(size=(50, 3)) + offset) * scale
    tail = dpsgd_module._TailSums()
    for g in G:
        tail.append(g)
    k = len(G)
    spread = np.sum(np.var(G / scale, axis=0, ddof=1))
    t2 = np.sum((G / scale).sum(axis=0) ** 2) / (k * spread)
    threshold = stats.t.ppf(1 - dpsgd_module.UNSETTLED_LEVEL / 2, k - 1) ** 2
    assert tail.pull() == (pytest.approx(t2 / threshold, rel=1e-6), k)
    short = dpsgd_module._TailSums()
    short.append(G[0]), short.append(G[1])
    assert short.pull() == (0.0, 2)


def test_a_run_that_has_not_settled_warns():
    # Post-processing of the released gradient sums of the averaged steps: a
    # settled run's sum telescopes, a travelling one's grows like k. A step 100
    # times too small at epsilon 100 travels the whole run; the default settles.
    X, y = _imbalanced_logistic(30_000, 5)
    with pytest.warns(ConvergenceWarning, match="had not settled.*learning_rate"):
        DPSGDClassifier(epsilon=100.0, classes=[0, 1], learning_rate=0.003,
                        random_state=0).fit(X, y)
    with pytest.warns(ConvergenceWarning, match="had not settled"):
        DPSGDRegressor(epsilon=100.0, learning_rate=0.0003, random_state=0).fit(X, X[:, 0])
    # A stream's early calls are still travelling by design: partial_fit is silent.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPSGDClassifier(epsilon=100.0, classes=[0, 1], learning_rate=0.003,
                        random_state=0).partial_fit(X, y)


@pytest.mark.parametrize("noise,momentum,n", [("independent", 0.0, 2_000), ("nu", 0.0, 2_000),
                                               ("nu", 0.5, 2_000), ("independent", 0.0, 2_049),
                                               ("nu", 0.0, 2_049)])
def test_the_public_noise_of_the_averaged_iterate_matches_runs_on_flat_directions(noise,
                                                                                   momentum, n):
    # X = 0: no gradient ever reaches the slopes, so they carry the noise alone
    # (the noise check's model: no pull back). 300 seeds x 5 slopes = 1,500 draws
    # of a centred Gaussian: their mean square has relative sd sqrt(2 / 1500) = 3.7%;
    # the tolerance is 4 of those. n = 2,049 ends each pass with a batch of one row,
    # whose full step of noise was divided by 1 instead of 64 (the review of session
    # 24): 1.6 and 15 times the noise predicted then.
    X, y = np.zeros((n, 5)), np.zeros(n)
    warnings.simplefilter("ignore")  # pure noise: the noise warning, rightly (pytest resets)
    coefs = [DPSGDRegressor(noise=noise, momentum=momentum, clip_norm=1.0, learning_rate=0.5,
                            random_state=s).fit(X, y).coef_ for s in range(300)]
    reg = DPSGDRegressor(noise=noise, momentum=momentum, clip_norm=1.0, learning_rate=0.5,
                         random_state=0).fit(X, y)
    T = reg.n_steps_
    kind = "identity" if noise == "independent" else "blt"
    expected = (0.5 * reg.noise_std_ / reg.batch_size_) ** 2 * dpsgd_module._tail_noise_variance(
        kind, T, T // 2, reg.nu, momentum)
    assert np.mean(np.square(coefs)) == pytest.approx(expected, rel=4 * 0.037)


def test_a_fit_within_its_noise_warns_and_a_clear_one_does_not():
    # Post-processing: the averaged slopes against the public noise they would carry
    # with no pull back (an upper end). 400 rows, 40 columns, epsilon 0.5: the noise
    # swamps slopes of norm 1; 100,000 rows, 5 columns, epsilon 1 resolve them.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 40))
    y = X @ (rng.normal(size=40) / np.sqrt(40)) + rng.normal(size=400)
    with pytest.warns(UserWarning, match="noise is as large as the signal.*predict"):
        DPSGDRegressor(epsilon=0.5, random_state=0).fit(X, y)
    with pytest.warns(UserWarning, match="noise is as large.*class shares"):
        DPSGDClassifier(epsilon=0.5, classes=[0, 1], random_state=0).fit(X, y > 0)
    X, y, _ = _sphere_data(100_000, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPSGDRegressor(epsilon=1.0, random_state=0).fit(X, y)
        DPSGDClassifier(epsilon=1.0, classes=[0, 1], random_state=0).fit(X, y > 0)
        # An adaptive optimizer's steps follow a private second moment: no public
        # noise scale, no check.
        DPSGDRegressor(epsilon=0.5, optimizer="adam", random_state=0).fit(X[:400], y[:400])


@pytest.mark.parametrize("noise", ["nu", "independent"])
@pytest.mark.parametrize("optimizer,lr", [("sgd", 2.0), ("adam", 0.05)])
def test_settled_runs_do_not_warn(noise, optimizer, lr):
    # Three passes with a large step settle well inside the run. Under the test's
    # null a fit warns with probability at most about 1e-3 (UNSETTLED_LEVEL); a
    # settled run's statistic sits far below its threshold (the telescoping sum),
    # measured at 0.04 of it at most over 20 seeds of these settings. Eight fixed
    # seeds x three budgets must all stay below a quarter of it. The test reads the
    # last half of the steps whatever is averaged: with average=1 the first half's
    # travel from the start gave false warnings (the review of session 24).
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20_000, 5))
    y = (X @ rng.normal(size=5) + rng.logistic(size=20_000) > 0).astype(int)
    for eps in (1.0, 10.0, 1e4):
        for seed in range(8):
            clf = DPSGDClassifier(epsilon=eps, classes=[0, 1], optimizer=optimizer,
                                  learning_rate=lr, epochs=3, noise=noise,
                                  average=1.0 if seed % 2 else 0.5,
                                  random_state=seed).fit(X, y)
            assert clf._state["pull"][0] < 0.25


@pytest.mark.parametrize("est", [DPSGDRegressor(random_state=0), DPSGDRegressor(
    optimizer="adam", private_moments="jme", noise="nu", random_state=0)])
def test_unit_weights_are_the_unweighted_fit(est):
    X, y = _regression(n=500)
    a = est.fit(X, y).coef_.copy()
    b = est.fit(X, y, sample_weight=np.ones(500)).coef_
    np.testing.assert_array_equal(a, b)


def test_classifier_weights_and_bad_weights_before_any_charge():
    X, y = _regression(n=400)
    labels = (y > 0.3).astype(int)
    a = DPSGDClassifier(classes=[0, 1], random_state=0).fit(X, labels).coef_
    b = DPSGDClassifier(classes=[0, 1], random_state=0).fit(X, labels, np.ones(400)).coef_
    np.testing.assert_array_equal(a, b)
    for weights, match in [(np.full(400, 2.0), "max_weight"), (-np.ones(400), "non-negative"),
                           (np.full(400, np.inf), "infinite")]:
        acc = BudgetAccountant(epsilon=5.0, delta=1e-5)
        with pytest.raises(ValueError, match=match):
            DPSGDClassifier(classes=[0, 1], accountant=acc).fit(X, labels, sample_weight=weights)
        assert acc.ledger == []
        acc = BudgetAccountant(epsilon=5.0, delta=1e-5)
        with pytest.raises(ValueError, match=match):
            DPSGDRegressor(accountant=acc).fit(X, y, sample_weight=weights)
        assert acc.ledger == []


def test_max_weight_scales_the_noise_and_weights_count_as_repeats():
    X, y = _regression(n=2000)
    plain = DPSGDRegressor(random_state=0).fit(X, y)
    heavy = DPSGDRegressor(max_weight=3.0, random_state=0).fit(X, y, np.full(2000, 3.0))
    assert heavy.noise_std_ == pytest.approx(3.0 * plain.noise_std_)
    # With no noise to speak of, weight 3 on every row is the same gradient times 3:
    # the same as learning rate x 3 on the unweighted data.
    a = DPSGDRegressor(epsilon=1e9, learning_rate=0.03, max_weight=3.0, random_state=0).fit(
        X, y, np.full(2000, 3.0))
    b = DPSGDRegressor(epsilon=1e9, learning_rate=0.09, random_state=0).fit(X, y)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-6)
    # Refused whenever weights are passed (public), also unit weights: a rule on their
    # values would fit a table of unit weights and refuse its neighbour.
    for value in (2.0, 1.0):
        with pytest.raises(ValueError, match="scale_then_privatize"):
            DPSGDRegressor(optimizer="adam", private_moments="scale_then_privatize",
                           max_weight=2.0).fit(X, y, np.full(2000, value))


def test_a_later_call_whose_rows_all_weigh_zero_adds_nothing_instead_of_failing():
    # The stream is charged at its first call; refusing a later call whose rows all
    # weigh 0, while running the neighbour where one of them weighs 1, would tell the
    # two apart after the charge. Such a call now runs (its rows add nothing), and so
    # does a first call (tests/test_hostile.py).
    X, y = _regression(n=2000)
    for w2 in (np.zeros(5), np.r_[1.0, np.zeros(4)]):
        est = DPSGDRegressor(clip_norm=1.0, random_state=0)
        est.partial_fit(X, y, sample_weight=np.ones(2000))
        est.partial_fit(X[:5], y[:5], sample_weight=w2)
        assert np.all(np.isfinite(est.coef_))
    est = DPSGDRegressor(random_state=0).partial_fit(X, y, sample_weight=np.zeros(2000))
    assert np.all(np.isfinite(est.coef_))


def test_zero_weights_drop_rows():
    # At a huge epsilon, weights 0 on half the rows give the fit on the other half.
    X, y = _regression(n=1000)
    w = np.r_[np.ones(500), np.zeros(500)]
    # A declared clip: the private clip norm counts rows whatever their weights.
    a = DPSGDRegressor(epsilon=1e9, clip_norm=1.0, random_state=0).fit(X, y, sample_weight=w)
    assert np.all(np.isfinite(a.coef_))
    y_bad = y.copy()
    y_bad[500:] = 1e6  # rows with weight 0 must not matter
    b = DPSGDRegressor(epsilon=1e9, clip_norm=1.0, random_state=0).fit(X, y_bad, sample_weight=w)
    np.testing.assert_allclose(a.coef_, b.coef_, atol=1e-6)



@pytest.mark.parametrize("w0", [1e-309, 5e-324])
def test_a_tiny_weight_fits_like_its_neighbour(w0):
    # Row 0 weighs w0 > 0 on a zero residual (y = 0 at the start coef 0). The clip used
    # to divide its norm by w0 (inf) and multiply its residual by w0 (0): NaN in the
    # released sum and an error after the charge, where the neighbour with weight 0
    # fitted. Now the weight applies after the clip: the row adds w0 times a clipped
    # gradient (norm <= 1), below the rounding of the sum, so both fits are the same
    # stream (same seed) to the last bit.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 2))
    y = X @ [1.0, -1.0] + 0.1 * rng.normal(size=2000)
    X[0], y[0] = 0.0, 0.0
    fits = []
    for first in (0.0, w0):
        w = np.ones(2000)
        w[0] = first
        reg = DPSGDRegressor(epsilon=1.0, clip_norm=1.0, batch_size=2000, epochs=3,
                             random_state=1).fit(X, y, sample_weight=w)
        fits.append(reg.coef_)
    np.testing.assert_array_equal(fits[0], fits[1])

def test_verbose_prints_steps_to_stderr(capsys):
    X, y = _regression(n=640)
    DPSGDRegressor(verbose=1, batch_size=64, random_state=0).fit(X, y)
    err = capsys.readouterr().err
    assert "[DPSGDRegressor] step 10/10" in err and len(err.splitlines()) <= 6


def test_bounds_give_the_original_scale():
    # Raw columns with declared ranges: the same stream as on the columns mapped
    # to [-1, 1] by hand (same seed), mapped back.
    rng = np.random.default_rng(0)
    n = 20_000
    X = np.column_stack([rng.uniform(20, 80, n), rng.uniform(0, 500, n)])
    y = 100 + 2.0 * X[:, 0] - 0.1 * X[:, 1] + rng.normal(0, 5, n)
    lo, hi = np.array([18.0, 0.0]), np.array([90.0, 500.0])
    raw = DPSGDRegressor(bounds_X=(lo, hi), bounds_y=(0, 400), epochs=3, random_state=0).fit(X, y)
    c, s = (lo + hi) / 2, (hi - lo) / 2
    scaled = DPSGDRegressor(bounds_X=(-1, 1), bounds_y=(-1, 1), epochs=3, random_state=0).fit(
        (X - c) / s, (y - 200) / 200)
    np.testing.assert_allclose(raw.coef_, 200 * scaled.coef_ / s, rtol=1e-9)
    np.testing.assert_allclose(raw.intercept_, 200 + 200 * (scaled.intercept_ - scaled.coef_ @ (c / s)),
                               rtol=1e-9)
    # The model is right on the original scale (the noise at epsilon 1 is small here).
    assert raw.score(X, y) > 0.8
    clf = DPSGDClassifier(bounds_X=(lo, hi), classes=[0, 1], random_state=0).fit(X, y > 200)
    assert clf.coef_.shape == (1, 2) and clf.score(X, y > 200) > 0.8
    with pytest.raises(ValueError, match="bounds_X"):
        DPSGDRegressor(bounds_X=(1.0, 0.0)).fit(X, y)


def test_the_default_stability_floor_stays_in_its_documented_range():
    # The default eps_stability_ is the noise std of one step's mean gradient,
    # proportional to clip_norm * max_weight: at a tiny clip and weight bound it
    # fell far below the range [1e-100, 1e100] that a declared value must keep.
    X = np.random.default_rng(0).normal(size=(2000, 3))
    reg = DPSGDRegressor(optimizer="adam", clip_norm=1e-100, max_weight=1e-200,
                         random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reg.fit(X, X.sum(axis=1), sample_weight=np.full(2000, 1e-200))
    assert reg.eps_stability_ == 1e-100
    assert np.all(np.isfinite(reg.coef_))


def test_a_single_declared_class_is_named_as_the_parameter_error_it_is():
    # A new user's trial (session 23): classes=["no"] said the label set had one
    # class, which reads as a fact about the data; it is the declaration.
    X = np.zeros((100, 2))
    with pytest.raises(ValueError, match=r"declared classes=\['no'\] hold 1 class"):
        DPSGDClassifier(classes=["no"]).fit(X, np.array(["yes"] * 100))


def test_a_private_clip_norm_far_from_unit_scale_warns():
    # A new user's trial (session 23): on a raw calendar year beside a 0/1 column the
    # default steps diverged (R^2 -6e12) without a word. The private clip norm (a
    # median gradient norm at 0, released) says the rows are far from unit scale:
    # 1.4e4 here, against about 0.7 sqrt(q) for standardised columns and label.
    rng = np.random.default_rng(0)
    n = 4000
    X = np.column_stack([rng.integers(1976, 1983, n).astype(float), rng.random(n) < 0.1])
    y = 0.1 * (X[:, 0] - 1979) - 0.5 * X[:, 1] + 6.7 + 0.4 * rng.normal(size=n)
    with pytest.warns(UserWarning, match="far from unit scale"):
        DPSGDRegressor(epsilon=10.0, random_state=0).fit(X, y)
    Xs = (X - X.mean(0)) / X.std(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPSGDRegressor(epsilon=10.0, random_state=0).fit(Xs, y - y.mean())
        # A label with noise: X[:, 1] itself would separate the classes, where the
        # run never settles (and rightly warns so).
        labels = Xs[:, 0] - Xs[:, 1] + rng.logistic(size=n) > 0
        DPSGDClassifier(epsilon=10.0, classes=[0, 1], random_state=0).fit(Xs, labels)
