"""Private model selection: the budget is exact, the choice is good, nothing is charged in vain."""

import itertools
import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import loguniform
from sklearn.base import BaseEstimator, RegressorMixin, TransformerMixin, clone
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import KFold
from sklearn.pipeline import FeatureUnion, Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdp.accounting import BudgetAccountant, BudgetExceededError, mu_from_epsilon_delta
from skdp.base import DPEstimatorMixin
from skdp.decomposition import DPPCA
from skdp.exceptions import PrivacyLeakWarning
from skdp.linear_model import DPLinearRegressionGD, DPSGDClassifier
from skdp.mechanisms import secure_mode
from skdp.model_selection import DPGridSearchCV, DPRandomizedSearchCV
from skdp.preprocessing import DPStandardScaler

EVENTS = []


class _Spy(DPEstimatorMixin, RegressorMixin, BaseEstimator):
    """Test double: charges its budget (times `overspend`), records the fit, predicts `level`."""

    def __init__(self, *, epsilon=1.0, delta=1e-6, accountant=None, random_state=None, level=0.0,
                 charge=True, overspend=1.0):
        self.epsilon = epsilon
        self.delta = delta
        self.accountant = accountant
        self.random_state = random_state
        self.level = level
        self.charge = charge
        self.overspend = overspend

    def fit(self, X, y):
        mu = self._budget_mu() * self.overspend
        self.privacy_spent_ = self._charge(mu)[0] if self.charge else None
        EVENTS.append("fit")
        self.n_fit_ = len(X)
        self.n_features_in_ = np.asarray(X).shape[1]
        return self

    def predict(self, X):
        return np.full(len(X), float(self.level))


class _SpyScaler(DPEstimatorMixin, TransformerMixin, BaseEstimator):
    """A private transformer double (identity), to test budgets split across Pipeline steps."""

    def __init__(self, *, epsilon=1.0, delta=1e-6, accountant=None, random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.accountant = accountant
        self.random_state = random_state

    def fit(self, X, y=None):
        self.privacy_spent_, _ = self._charge(self._budget_mu())
        return self

    def transform(self, X):
        return X


class _RecordingLedger(BudgetAccountant):
    def charge_mu(self, mu, label="gaussian"):
        EVENTS.append("charge")
        return super().charge_mu(mu, label)


def _linear(n=20_000, p=5, seed=0, sigma=1.0):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=p)
    theta /= np.linalg.norm(theta)
    X = rng.normal(size=(n, p))
    return X, X @ theta + sigma * rng.normal(size=n)


# -- acceptance: the clearly best candidate ---------------------------------------------

def test_picks_the_sane_clip_norm_among_far_too_small_and_far_too_large():
    # n = 2e4, p = 5, sigma = 1, epsilon = 2: each of the 3 candidates is
    # trained on 15,000 rows at mu_c = mu sqrt(0.4 / 3) = 0.164 and scored on
    # 5,000 rows with noise std loss_bound / (mu_c * 5000) = 4 / 819 = 0.0049 on
    # its mean clipped squared loss. The mean losses (measured, seeds 0-4:
    # 0.90-0.92 for the sane clip, 1.40-1.47 for clip 0.01, which barely moves
    # from 0, 3.75-3.87 for clip 1e4, whose noise swamps it) are at least 0.48
    # apart: a wrong pick needs the difference of two noisy scores (sd
    # sqrt(2) * 0.0049 = 0.007) to err by over 60 sd, and the fits' own
    # spread (0.01-0.03 across seeds, data included) is 15 times smaller than
    # the gap. So every one of 5 seeds must pick the sane clip (a random pick
    # would pass all 5 with probability 0.4%).
    p = 5
    sane = 5 * math.sqrt(p + 1)
    for seed in range(5):
        X, y = _linear(p=p, seed=seed)
        search = DPGridSearchCV(DPLinearRegressionGD(), {"clip_norm": [0.01, sane, 1e4]},
                                epsilon=2.0, delta=1e-6, random_state=seed).fit(X, y)
        assert search.best_params_ == {"clip_norm": sane}, search.cv_results_["mean_test_score"]
        assert search.cv_results_["rank_test_score"].tolist() == [2, 1, 3]


# -- the budget ------------------------------------------------------------------------

@pytest.mark.parametrize("cv,uses", [(0.25, 1), (3, 3)])
def test_the_budget_composes_exactly(cv, uses):
    X, y = _linear(n=600, seed=1)
    grid = {"level": [0.0, 1.0, 2.0, 3.0]}
    acc = BudgetAccountant(epsilon=10.0, delta=1e-5)
    search = DPGridSearchCV(_Spy(), grid, epsilon=2.0, delta=1e-6, cv=cv, selection_share=0.3,
                            accountant=acc, random_state=0).fit(X, y)
    mu = mu_from_epsilon_delta(2.0, 1e-6)
    assert search.privacy_spent_.mu == pytest.approx(mu, rel=1e-12)
    assert search.privacy_spent_.epsilon == pytest.approx(2.0, rel=1e-9)
    mu_c, mu_refit = search.candidate_privacy_.mu, search.refit_privacy_.mu
    assert mu_c == pytest.approx(mu * math.sqrt(0.3 / (4 * uses)), rel=1e-12)
    assert mu_refit == pytest.approx(mu * math.sqrt(0.7), rel=1e-12)
    assert 4 * uses * mu_c**2 + mu_refit**2 == pytest.approx(mu**2, rel=1e-12)
    # The refit spends exactly its share (its epsilon was set from it) ...
    assert search.best_estimator_.privacy_spent_.mu == pytest.approx(mu_refit, rel=1e-9)
    assert search.best_estimator_.privacy_spent_.mu <= mu_refit
    # ... the ledger got one charge of the whole budget, and the refitted
    # estimator carries it for any later fit.
    assert [c.mu for c in acc.ledger] == [pytest.approx(mu, rel=1e-12)]
    assert search.best_estimator_.accountant is acc
    assert search.n_splits_ == (1 if cv == 0.25 else 3)


def test_without_refit_the_whole_budget_selects_and_the_candidate_is_kept():
    X, y = _linear(n=400, seed=2)
    search = DPGridSearchCV(_Spy(), {"level": [0.0, 5.0]}, epsilon=1.0, refit=False,
                            random_state=0).fit(X, y)
    mu = mu_from_epsilon_delta(1.0, 1e-6)
    assert search.refit_privacy_ is None
    assert search.candidate_privacy_.mu == pytest.approx(mu / math.sqrt(2), rel=1e-12)
    assert search.best_params_ == {"level": 0.0}
    assert search.best_estimator_.n_fit_ == 300  # fitted on the training part only
    assert search.best_estimator_.privacy_spent_.mu == pytest.approx(mu / math.sqrt(2), rel=1e-9)


def test_pipeline_steps_share_a_candidate_budget_in_their_declared_ratio():
    X, y = _linear(n=400, seed=3)
    pipe = Pipeline([("scale", _SpyScaler(epsilon=0.5)), ("reg", _Spy(epsilon=1.0))])
    search = DPGridSearchCV(pipe, {"reg__level": [0.0, 1.0]}, epsilon=1.0, refit=False,
                            random_state=0).fit(X, y)
    scale_mu = search.best_estimator_["scale"].privacy_spent_.mu
    reg_mu = search.best_estimator_["reg"].privacy_spent_.mu
    declared = mu_from_epsilon_delta(0.5, 1e-6) / mu_from_epsilon_delta(1.0, 1e-6)
    assert scale_mu / reg_mu == pytest.approx(declared, rel=1e-9)
    assert math.hypot(scale_mu, reg_mu) == pytest.approx(search.candidate_privacy_.mu, rel=1e-9)


def test_the_accountant_is_charged_once_before_any_fit():
    X, y = _linear(n=300, seed=4)
    EVENTS.clear()
    acc = _RecordingLedger(epsilon=5.0, delta=1e-5)
    DPGridSearchCV(_Spy(), {"level": [0.0, 1.0, 2.0]}, cv=3, accountant=acc,
                   random_state=0).fit(X, y)
    # The dry runs stop at their charge (no "fit" event); then one charge,
    # then 3 x 3 fits and the refit.
    assert EVENTS == ["charge"] + ["fit"] * 10


def test_the_accountant_carried_by_the_estimator_is_used():
    X, y = _linear(n=300, seed=5)
    acc = BudgetAccountant(epsilon=5.0, delta=1e-5)
    search = DPGridSearchCV(_Spy(accountant=acc), {"level": [0.0, 1.0]},
                            random_state=0).fit(X, y)
    assert len(acc.ledger) == 1 and search.best_estimator_.accountant is acc
    other = BudgetAccountant(epsilon=5.0, delta=1e-5)
    with pytest.raises(ValueError, match="different accountants"):
        DPGridSearchCV(_Spy(accountant=acc), {"level": [0.0]}, accountant=other).fit(X, y)
    assert len(acc.ledger) == 1 and not other.ledger


# -- bad input: clear errors before anything is charged -----------------------------------

BAD = [
    (_Spy(), {"level": []}, {}, ValueError, "non-empty"),
    (_Spy(), [], {}, ValueError, "no candidate"),
    (_Spy(), {"nope": [1]}, {}, ValueError, "Invalid parameter 'nope'"),
    (DPLinearRegressionGD(), {"clip_norm": [1.0, -1.0]}, {}, ValueError, "clip_norm"),
    (DPLinearRegressionGD(), {"n_iter": [5]}, {}, ValueError, "cannot form"),  # found by the dry run
    (_Spy(), {"epsilon": [1.0]}, {}, ValueError, "Remove them from the grid"),
    (_Spy(), {"random_state": [1]}, {}, ValueError, "Remove them from the grid"),
    (_Spy(delta=0.5), {"level": [0.0] * 50}, {"epsilon": 0.01}, ValueError,
     "cannot cover one fit"),
    (_Spy(overspend=1.5), {"level": [0.0]}, {}, BudgetExceededError, "share of the search"),
    (_Spy(charge=False), {"level": [0.0]}, {}, TypeError, "without charging"),
    (LinearRegression(), {"fit_intercept": [True]}, {}, ValueError, "not a private estimator"),
    (make_pipeline(StandardScaler(), _Spy()), {"_spy__level": [0.0]}, {}, ValueError,
     "learns from the data without privacy"),
    (make_pipeline(ColumnTransformer([("s", _SpyScaler(), [0])], remainder="passthrough"),
                   _Spy()), {"_spy__level": [0.0]}, {}, ValueError,
     r"holds a private estimator.*not inside a ColumnTransformer"),
    (make_pipeline(FeatureUnion([("s", _SpyScaler())]), _Spy()), {"_spy__level": [0.0]}, {},
     ValueError, r"holds a private estimator.*not inside a FeatureUnion"),
    (_Spy(), {"level": [0.0]}, {"cv": KFold(3)}, ValueError, "cv"),
    (_Spy(), {"level": [0.0]}, {"cv": 500}, ValueError, "at least 500 rows, got n_samples=200"),
    (_Spy(), {"level": [0.0]}, {"scoring": "r2"}, ValueError, "scoring"),
    (_Spy(), {"level": [0.0]}, {"epsilon": 30.0}, BudgetExceededError, "budget exceeded"),
]


@pytest.mark.parametrize("estimator,grid,kwargs,error,match", BAD,
                         ids=[b[4] for b in BAD])
def test_bad_grids_fail_before_any_charge_or_noise(estimator, grid, kwargs, error, match):
    X, y = _linear(n=200, seed=6)
    acc = BudgetAccountant(epsilon=20.0, delta=1e-5)
    EVENTS.clear()
    with pytest.raises(error, match=match):
        DPGridSearchCV(estimator, grid, accountant=acc, random_state=0, **kwargs).fit(X, y)
    assert acc.ledger == []
    # No fit ran past its charge; an estimator that never charges runs its
    # whole fit in the dry run, whose output is discarded (nothing released).
    assert "fit" not in EVENTS or match == "without charging"


def test_an_encoder_with_declared_categories_may_precede_the_private_steps():
    # A new user's trial (session 23): skdp's own error for non-numeric columns
    # advised OneHotEncoder(categories=...), and the private search refused it as a
    # step that learns from the data. With declared categories, no frequency rule
    # and unknown values ignored it learns nothing (alone or in a ColumnTransformer
    # with sparse_threshold=0, whose output cannot switch to sparse with the data's
    # density); the others are still refused, before any charge. After a private
    # step (where the search wraps public steps in FiniteOutput) it is accepted too:
    # refused there, the wrapped step failed after the charge (the review).
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"j": rng.choice(["a", "b", "c"], 600), "x": rng.normal(size=600)})
    y = (X["x"] + (X["j"] == "b") > 0.5).astype(int)
    declared = dict(categories=[["a", "b", "c"]], sparse_output=False, handle_unknown="ignore")
    grid = {"dpsgdclassifier__epochs": [1, 2]}
    clf = DPSGDClassifier(classes=[0, 1], clip_norm=1.0)
    ok = [make_pipeline(OneHotEncoder(**declared), clone(clf)),
          make_pipeline(ColumnTransformer([("j", OneHotEncoder(**declared), ["j"])],
                                          remainder="passthrough", sparse_threshold=0),
                        clone(clf)),
          make_pipeline(DPStandardScaler(bounds=(-4.0, 4.0)),
                        ColumnTransformer([("x", "passthrough", [0])], sparse_threshold=0),
                        clone(clf))]
    for pipe in ok:
        acc = BudgetAccountant(epsilon=2.0, delta=1e-5)
        first = pipe.steps[0][1]
        X_in = (X[["j"]] if isinstance(first, OneHotEncoder)
                else X[["x"]] if isinstance(first, DPStandardScaler) else X)
        search = DPGridSearchCV(pipe, grid, epsilon=1.0, accountant=acc, random_state=0)
        search.fit(X_in, y)
        assert len(acc.ledger) == 1 and hasattr(search, "best_estimator_")
    refused = [dict(declared, categories="auto"), dict(declared, handle_unknown="error"),
               dict(declared, min_frequency=5), dict(declared, drop="first")]
    for kwargs in refused:
        acc = BudgetAccountant(epsilon=2.0, delta=1e-5)
        pipe = make_pipeline(OneHotEncoder(**kwargs), clone(clf))
        with pytest.raises(ValueError, match="learns from the data without privacy"):
            DPGridSearchCV(pipe, grid, accountant=acc, random_state=0).fit(X[["j"]], y)
        assert acc.ledger == []
    # A ColumnTransformer whose output turns sparse below a density (sparse X passed
    # through, or a sparse encoder): whether the next step took it depended on one row.
    for part in ("passthrough", OneHotEncoder(**dict(declared, sparse_output=True))):
        acc = BudgetAccountant(epsilon=2.0, delta=1e-5)
        ct = ColumnTransformer([("j", part, ["j"])], remainder="passthrough")
        with pytest.raises(ValueError, match="sparse_threshold=0"):
            DPGridSearchCV(make_pipeline(ct, clone(clf)), grid, accountant=acc,
                           random_state=0).fit(X, y)
        assert acc.ledger == []


def test_bad_data_in_any_row_fails_before_any_charge():
    # The first candidate's dry run reads all the rows, validation rows too.
    X, y = _linear(n=200, seed=13)
    for bad in range(200):
        X_bad = X.copy()
        X_bad[bad, 0] = np.nan
        acc = BudgetAccountant(epsilon=20.0, delta=1e-5)
        with pytest.raises(ValueError, match="NaN"):
            DPGridSearchCV(DPLinearRegressionGD(), {"clip_norm": [1.0]}, accountant=acc,
                           random_state=0).fit(X_bad, y)
        assert acc.ledger == []


def test_the_refit_is_dry_run_at_its_own_share_before_any_charge():
    # With selection_share=0.9 the refit's share (mu 0.1 * sqrt(0.1)) is too small for
    # DP-SGD's private clip norm on 1,000 rows, a check on public quantities that the
    # candidates' dry runs (at their larger share) passed: it failed after the charge.
    from skdp.accounting import epsilon_from_mu
    from skdp.linear_model import DPSGDRegressor
    X, y = _linear(n=1000, seed=3)
    acc = BudgetAccountant(epsilon=10.0, delta=1e-5)
    search = DPGridSearchCV(DPSGDRegressor(), {"learning_rate": [0.05]},
                            epsilon=epsilon_from_mu(0.1, 1e-6), delta=1e-6,
                            selection_share=0.9, accountant=acc, random_state=0)
    with pytest.raises(ValueError, match="too few for a private clip norm"):
        search.fit(X, y)
    assert acc.ledger == []



def test_every_training_part_is_dry_run_before_the_charge():
    # A classifier that reads its classes from the labels (classes=None) refuses a
    # training part with one class. The dry runs used the smallest part only, so
    # with the two rows of the minority class in two different folds one table
    # was searched and its neighbour (one of the two relabelled) failed after the
    # charge, in the part without the other (the privacy audit of session 22).
    from skdp.mechanisms import make_rng
    from skdp.model_selection._budget import splits
    n, seed = 400, 3
    X = np.random.default_rng(0).normal(size=(n, 2))
    folds = splits(n, 4, make_rng(seed))  # the search's own split (public seed)
    a, b = (int(np.min(validation)) for _, validation in folds[1:3])
    y = np.zeros(n, dtype=int)
    y[[a, b]] = 1
    neighbour = y.copy()
    neighbour[b] = 0
    # Also where the dry run's walk of a Pipeline loses the data's shape (the log of
    # the scaler's stand-in zeros): the classifier's label check still runs.
    piped = make_pipeline(DPStandardScaler(bounds=(-4.0, 4.0)), FunctionTransformer(np.log),
                          DPSGDClassifier(clip_norm=1.0))
    for (labels, fails), (est, key) in itertools.product(
            ((y, False), (neighbour, True)),
            ((DPSGDClassifier(clip_norm=1.0), "learning_rate"),
             (piped, "dpsgdclassifier__learning_rate"))):
        acc = BudgetAccountant(epsilon=10.0, delta=1e-5)
        search = DPGridSearchCV(est, {key: [0.05, 0.1]},
                                cv=4, epsilon=8.0, accountant=acc, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)  # classes=None's own
            warnings.simplefilter("ignore", RuntimeWarning)  # the log of negative values
            if fails:
                with pytest.raises(ValueError, match="at least two classes"):
                    search.fit(X, labels)
            else:
                search.fit(X, labels)
        assert len(acc.ledger) == (0 if fails else 1)

@pytest.mark.parametrize("first", [DPStandardScaler(bounds=(-4.0, 4.0)),
                                   DPPCA(n_components=2, norm_bound=4.0)])
def test_a_pipeline_is_dry_run_past_its_first_private_step(first):
    # The dry run stopped at the pipeline's first charge (the scaler's), so the
    # regressor's check that 300 rows are too few for its private bounds at this
    # budget ran only in the real fits, after the search had charged.
    X, y = _linear(n=300, seed=8)
    acc = BudgetAccountant(epsilon=10.0, delta=1e-5)
    search = DPGridSearchCV(make_pipeline(first, DPLinearRegressionGD()),
                            {"dplinearregressiongd__n_batches": [5, 10]}, accountant=acc,
                            random_state=0)
    with pytest.raises(ValueError, match="too few for the private row and clip bounds"):
        search.fit(X, y)
    assert acc.ledger == []
    # With declared bounds and clip norm the regressor needs no private bound: it runs.
    search.set_params(estimator__dplinearregressiongd__bounds_X=(-5.0, 5.0),
                      estimator__dplinearregressiongd__bounds_y=(-10.0, 10.0),
                      estimator__dplinearregressiongd__clip_norm=5.0).fit(X, y)
    assert len(acc.ledger) == 1


def test_the_pipeline_walk_checks_what_sklearn_checks_and_stops_where_the_stand_in_ends():
    # Fourteenth review: the walk skipped scikit-learn's own Pipeline checks (an invalid
    # verbose charged, then raised), and a stateless step that cannot take the zeros
    # stand-in (a row normalisation, a column selection by name) refused a valid search.
    X = pd.DataFrame(np.random.default_rng(0).normal(size=(3000, 4)), columns=list("abcd"))
    y = X.sum(axis=1)

    def gd():
        return DPLinearRegressionGD(bounds_X=(-5.0, 5.0), bounds_y=(-10.0, 10.0), clip_norm=5.0)

    acc = BudgetAccountant(epsilon=100.0, delta=1e-5)
    bad = Pipeline([("s", DPStandardScaler(bounds=(-4.0, 4.0))), ("r", gd())], verbose="yes")
    with pytest.raises(ValueError, match="verbose"):
        DPGridSearchCV(bad, {}, epsilon=5.0, accountant=acc).fit(X, y)
    assert acc.ledger == []
    normalise = FunctionTransformer(lambda Z: Z / np.linalg.norm(Z, axis=1, keepdims=True))
    select = FunctionTransformer(lambda d: d[["a", "b"]])
    for pipe in (make_pipeline(DPStandardScaler(bounds=(-4.0, 4.0)), normalise, gd()),
                 make_pipeline(DPStandardScaler(bounds=(-4.0, 4.0)), select, gd())
                 .set_output(transform="pandas")):
        DPGridSearchCV(pipe, {}, epsilon=5.0, accountant=acc).fit(X, y)
    assert len(acc.ledger) == 2


@pytest.mark.parametrize("estimator,scoring,labels,match", [
    (make_pipeline(DPStandardScaler(bounds=(-4.0, 4.0))), "neg_mean_squared_error", "numbers",
     "predict"),
    (DPLinearRegressionGD(), "neg_log_loss", "numbers", "predict_proba"),
    (DPSGDClassifier(classes=["a", "b"]), "neg_mean_squared_error", "strings", "numeric labels"),
])
def test_a_scoring_the_candidates_cannot_serve_fails_before_the_charge(estimator, scoring,
                                                                       labels, match):
    X, y = _linear(n=300, seed=9)
    if labels == "strings":
        y = np.where(y > 0, "a", "b")
    acc = BudgetAccountant(epsilon=100.0, delta=1e-5)
    with pytest.raises((TypeError, ValueError), match=match):
        DPGridSearchCV(estimator, {}, scoring=scoring, epsilon=5.0, accountant=acc).fit(X, y)
    assert acc.ledger == []


def test_a_huge_validation_value_raises_no_warning_after_the_charge():
    # Validation rows reach predict uncapped: 1e308 times a coefficient overflowed in
    # the accuracy score's predict, and the RuntimeWarning, shown by default, told after
    # the charge that the table holds such a row (its neighbour raised none).
    rng = np.random.default_rng(0)
    X = 1e-3 * rng.normal(size=(400, 3))
    y = (X.sum(axis=1) > 0).astype(int)
    for first in (X[0], np.full(3, 1e308)):
        X_n = X.copy()
        X_n[0] = first
        search = DPGridSearchCV(DPSGDClassifier(classes=[0, 1], bounds_X=(-3e-3, 3e-3)),
                                {"learning_rate": [0.1, 1.0]}, epsilon=4.0, random_state=0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            search.fit(X_n, y)
        assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]


def test_y_is_required():
    with pytest.raises(ValueError, match="needs y"):
        DPGridSearchCV(_Spy(), {"level": [0.0]}).fit(np.zeros((10, 2)), None)


# -- the noisy scores ------------------------------------------------------------------

def test_score_noise_has_the_calibrated_std_and_the_loss_is_clipped():
    # Labels 10 and predictions 0 give the squared loss 100 on every row,
    # clipped to loss_bound = 4: the noiseless mean loss is exactly 4, so the
    # split scores are -4 + N(0, s**2) with s = score_noise_std_ = 4 / (mu_c *
    # 75). Over 100 searches x 3 candidates (300 draws) the sample std has
    # relative sd 1 / sqrt(2 * 299) = 4.1%; a 4-sd tolerance is 16.4%. The mean
    # has sd s / sqrt(300); tolerance 4 of those.
    X = np.zeros((300, 1))
    y = np.full(300, 10.0)
    draws, stds = [], set()
    for seed in range(100):
        search = DPGridSearchCV(_Spy(), {"level": [0.0, 0.0, 0.0]}, epsilon=1.0,
                                random_state=seed).fit(X, y)
        draws += search.cv_results_["split0_test_score"].tolist()
        stds.add(float(search.score_noise_std_[0]))
    (s,) = stds
    mu_c = mu_from_epsilon_delta(1.0, 1e-6) * math.sqrt(0.4 / 3)
    assert s == pytest.approx(4.0 / (mu_c * 75), rel=1e-12)
    assert np.std(draws, ddof=1) == pytest.approx(s, rel=4 / math.sqrt(2 * 299))
    assert abs(np.mean(draws) + 4.0) < 4 * s / math.sqrt(300)


def test_same_seed_same_search_and_workers_give_the_same_result():
    X, y = _linear(n=3000, seed=7)
    grid = {"clip_norm": [1.0, 5.0, 20.0]}
    est = DPLinearRegressionGD(n_iter=60, burn_in=10)
    one = DPGridSearchCV(est, grid, cv=2, random_state=3).fit(X, y)
    two = DPGridSearchCV(est, grid, cv=2, random_state=3, n_jobs=2).fit(X, y)  # loky processes
    other = DPGridSearchCV(est, grid, cv=2, random_state=4).fit(X, y)
    # Same noise in worker processes; the workers' BLAS (limited to one thread
    # there) may sum in another order, which moves the last bit (seen with
    # numpy 1.24): equal up to rounding.
    for key in ("split0_test_score", "split1_test_score", "mean_test_score"):
        np.testing.assert_allclose(one.cv_results_[key], two.cv_results_[key], rtol=1e-12)
    np.testing.assert_allclose(one.best_estimator_.coef_, two.best_estimator_.coef_, rtol=1e-12)
    assert not np.array_equal(one.cv_results_["mean_test_score"],
                              other.cv_results_["mean_test_score"])


def test_a_search_inside_a_search_takes_its_128_bit_seed():
    # An outer search gives its candidates' private steps 128-bit seeds; an inner
    # search refused them (sklearn's 32-bit rule) after the outer charge.
    from skdp.accounting import BudgetAccountant
    X, y = _linear(n=3000, seed=7, p=2)
    inner = DPGridSearchCV(DPLinearRegressionGD(n_iter=30, burn_in=5), {"clip_norm": [1.0, 5.0]})
    acc = BudgetAccountant(epsilon=20.0, delta=1e-5)
    outer = DPGridSearchCV(inner, {"selection_share": [0.3, 0.5]}, epsilon=4.0, accountant=acc,
                           random_state=0).fit(X, y)
    assert len(acc.ledger) == 1 and np.all(np.isfinite(outer.best_estimator_.best_estimator_.coef_))


@pytest.mark.parametrize("refit", [True, False])
def test_the_returned_estimator_does_not_carry_the_noise_generator(refit):
    # A generator's state after the fit can be stepped back to replay the
    # noise; the search must not release it with best_estimator_.
    X, y = _linear(n=2000, seed=12, p=2)
    search = DPGridSearchCV(DPLinearRegressionGD(n_iter=30, burn_in=5, random_state=7),
                            {"clip_norm": [1.0, 5.0]}, refit=refit).fit(X, y)
    assert search.best_estimator_.get_params()["random_state"] is None
    pipe = make_pipeline(FunctionTransformer(), DPLinearRegressionGD(n_iter=30, burn_in=5))
    search = DPGridSearchCV(pipe, {"dplinearregressiongd__clip_norm": [1.0]},
                            refit=refit).fit(X, y)
    assert search.best_estimator_[-1].random_state is None


def test_secure_mode_refuses_a_seed_and_runs_without_one():
    X, y = _linear(n=300, seed=8)
    with secure_mode():
        with pytest.raises(ValueError, match="Secure mode"):
            DPGridSearchCV(_Spy(), {"level": [0.0, 1.0]}, random_state=0).fit(X, y)
        search = DPGridSearchCV(_Spy(), {"level": [0.0, 1.0]}).fit(X, y)
    assert search.best_estimator_.random_state is None


# -- sklearn conventions -----------------------------------------------------------------

def test_pandas_pipeline_keeps_feature_names_and_delegates():
    X, y = _linear(n=4000, seed=9, p=3)
    X = pd.DataFrame(X, columns=["age", "bmi", "bp"])
    pipe = make_pipeline(FunctionTransformer(lambda Z: Z / 2.0),
                         DPLinearRegressionGD(n_iter=60, burn_in=10))
    search = DPGridSearchCV(pipe, {"dplinearregressiongd__clip_norm": [0.01, 10.0]},
                            epsilon=2.0, random_state=0).fit(X, y)
    assert search.best_params_ == {"dplinearregressiongd__clip_norm": 10.0}
    assert search.feature_names_in_.tolist() == ["age", "bmi", "bp"]
    assert search.n_features_in_ == 3
    np.testing.assert_array_equal(search.predict(X[:5]), search.best_estimator_.predict(X[:5]))
    assert np.isfinite(search.score(X, y))
    results = pd.DataFrame(search.cv_results_)
    assert {"param_dplinearregressiongd__clip_norm", "mean_test_score",
            "rank_test_score"} <= set(results.columns)
    assert not any("time" in c for c in results.columns)  # timings are not released


def test_classifier_scores_accuracy_and_delegates_probabilities():
    rng = np.random.default_rng(10)
    X = rng.normal(size=(4000, 3))
    y = (X @ np.array([2.0, -1.0, 0.5]) + rng.logistic(size=4000) > 0).astype(int)
    search = DPGridSearchCV(DPSGDClassifier(classes=[0, 1]), {"learning_rate": [0.05, 0.2]},
                            epsilon=2.0, random_state=0).fit(X, y)
    assert search.scorer_ == "accuracy" and search.loss_bound_ == 1.0
    assert search.classes_.tolist() == [0, 1]
    assert search.predict_proba(X[:4]).shape == (4, 2)
    # Both rates learn the sign pattern: accuracies near the Bayes rate (~0.8),
    # far from 0.5, with score noise std 1 / (mu_c * 1000) = 1 / 200 = 0.005.
    assert np.all(search.cv_results_["mean_test_score"] > 0.7)
    log_loss = DPGridSearchCV(DPSGDClassifier(classes=[0, 1]), {"learning_rate": [0.05]},
                              scoring="neg_log_loss", random_state=0).fit(X, y)
    assert log_loss.loss_bound_ == pytest.approx(math.log(100))
    assert -math.log(100) < log_loss.best_score_ < 0


def test_randomized_search_draws_n_iter_candidates_without_the_data():
    X, y = _linear(n=500, seed=11)
    dist = {"level": loguniform(0.01, 10.0)}
    a = DPRandomizedSearchCV(_Spy(), dist, n_iter=5, random_state=0).fit(X, y)
    b = DPRandomizedSearchCV(_Spy(), dist, n_iter=5, random_state=0).fit(X * 100, y)
    assert len(a.cv_results_["params"]) == 5
    assert a.cv_results_["params"] == b.cv_results_["params"]  # the data do not matter
    mu = mu_from_epsilon_delta(1.0, 1e-6)
    assert a.candidate_privacy_.mu == pytest.approx(mu * math.sqrt(0.4 / 5), rel=1e-12)


def test_init_stores_parameters_and_unfitted_search_has_no_attributes():
    search = DPGridSearchCV(_Spy(), {"level": [0.0]}, epsilon=3.0, cv=4)
    assert search.get_params()["cv"] == 4 and search.get_params()["epsilon"] == 3.0
    assert not hasattr(search, "n_features_in_")
    assert not hasattr(search, "best_estimator_")


class _StableLogUniform:
    """``loguniform(1, 10)`` whose repr has no memory address.

    pytest-xdist requires every worker to collect the same test ids, and
    ``parametrize_with_checks`` names a test by the estimator's repr.
    """

    def rvs(self, size=None, random_state=None):
        return loguniform(1.0, 10.0).rvs(size=size, random_state=random_state)

    def __repr__(self):
        return "loguniform(1.0, 10.0)"


@parametrize_with_checks([
    DPGridSearchCV(DPLinearRegressionGD(epsilon=1e4, n_iter=60, burn_in=10),
                   {"clip_norm": [1.0, 10.0]}, epsilon=1e5, random_state=0),
    DPRandomizedSearchCV(DPLinearRegressionGD(epsilon=1e4, n_iter=60, burn_in=10),
                         {"clip_norm": _StableLogUniform()}, n_iter=2, epsilon=1e5,
                         random_state=0),
])
def test_sklearn_compatible(estimator, check):
    # A large budget keeps the noise small enough for sklearn's accuracy checks.
    check(estimator)


def test_losing_candidates_warnings_are_collected_not_shown():
    # Issue 24, item 8: "99% of gradients clipped" from a losing clip_norm=0.01
    # reached the user without saying which candidate.
    X, y = _linear(n=5000)
    search = DPGridSearchCV(DPLinearRegressionGD(n_iter=60), {"clip_norm": [0.01, None]},
                            epsilon=20.0, delta=1e-5, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search.fit(X, y)
    notes = search.cv_results_["warnings"]
    assert "clipped" in notes[0]
    assert search.best_params_ == {"clip_norm": None}
    assert not any("clipped" in str(w.message) for w in caught)


class _WarningSpy(_Spy):
    """Warns before its charge; with ``fail_at`` levels, raises there instead of charging."""

    def __init__(self, *, epsilon=1.0, delta=1e-6, accountant=None, random_state=None, level=0.0,
                 fail_at=()):
        super().__init__(epsilon=epsilon, delta=delta, accountant=accountant,
                         random_state=random_state, level=level)
        self.fail_at = fail_at

    def fit(self, X, y):
        warnings.warn("spy: read before the charge", UserWarning)
        if self.level in self.fail_at:
            raise ValueError("spy: refused")
        return super().fit(X, y)


@pytest.mark.parametrize("refit", [True, False])
def test_a_dry_run_warning_is_shown_only_with_the_dry_run_s_error(refit):
    # Every candidate is dry-run on all rows (with refit) and on a training part,
    # before the charge: a warning raised there used to be shown once per dry run,
    # then once per search (session 18), beside the refit's own: twice for the
    # returned estimator (the scaler's moved quantile, twentieth review).
    X, y = _linear(n=400)
    search = DPGridSearchCV(_WarningSpy(), {"level": [0.0, 1.0, 2.0]}, cv=2, refit=refit,
                            random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search.fit(X, y)
    shown = [w for w in caught if str(w.message) == "spy: read before the charge"]
    # The real fits' warnings are collected per candidate; the refit shows its own
    # (without refit, the chosen candidate's come prefixed, as "The chosen ...").
    assert len(shown) == refit
    # A dry run's error comes with the warnings raised before it, once, and no charge.
    ledger = BudgetAccountant(epsilon=2.0, delta=1e-5)
    failing = DPGridSearchCV(_WarningSpy(fail_at=(2.0,)), {"level": [0.0, 1.0, 2.0]}, cv=2,
                             refit=refit, random_state=0, accountant=ledger)
    with warnings.catch_warnings(record=True) as caught, \
            pytest.raises(ValueError, match="spy: refused"):
        warnings.simplefilter("always")
        failing.fit(X, y)
    assert [str(w.message) for w in caught] == ["spy: read before the charge"]
    assert ledger.spent_mu == 0.0
    # The user's filters apply as the dry runs raise them, by module too: "error"
    # stops the search before the charge, "ignore" hides it.
    ledger = BudgetAccountant(epsilon=2.0, delta=1e-5)
    search = DPGridSearchCV(_WarningSpy(), {"level": [0.0, 1.0]}, cv=2, refit=refit,
                            random_state=0, accountant=ledger)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", module=re.escape(_WarningSpy.__module__))
        with pytest.raises(UserWarning, match="spy: read before the charge"):
            search.fit(X, y)
    assert ledger.spent_mu == 0.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", module=re.escape(_WarningSpy.__module__))
        search.fit(X, y)
    assert "spy: read before the charge" not in [str(w.message) for w in caught]


def _warns_about_the_data(X):
    # A user's public step that warns about the values it sees (data-dependent).
    if np.max(np.abs(X)) > 10:
        warnings.warn("a large value", UserWarning)
    return X


@pytest.mark.parametrize("refit", [True, False])
def test_a_public_step_after_a_private_one_cannot_make_one_table_fail_or_warn(refit):
    # Review 22: FunctionTransformer(np.exp) after the private scaler turned one
    # table's outlier into inf, and the next private step refused it after the
    # search's charge (a RuntimeWarning and a user step's warning also reached
    # cv_results_ for that table only). In the search's fits such steps' outputs
    # are mapped to finite values and only skdp's warnings are kept there.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 2))
    y = X @ [1.0, -1.0] + 0.5 * rng.normal(size=3000)
    outcomes = []
    for outlier in (0.5, 1e4):
        X[0, 0] = outlier
        pipe = make_pipeline(DPStandardScaler(bounds=(-4.0, 4.0)), FunctionTransformer(np.exp),
                             FunctionTransformer(_warns_about_the_data),
                             DPLinearRegressionGD(bounds_X=(0.0, 60.0), bounds_y=(-8.0, 8.0)))
        acc = BudgetAccountant(epsilon=100.0, delta=1e-3)
        search = DPGridSearchCV(pipe, {"dplinearregressiongd__clip_norm": [1.0, 10.0]},
                                epsilon=4.0, refit=refit, accountant=acc, random_state=0)
        with warnings.catch_warnings(record=True) as shown:
            warnings.simplefilter("always")
            search.fit(X, y)
        assert [e.label for e in acc.ledger] == [acc.ledger[0].label]
        # The refit shows its warnings as the user's own fit would (the user step's
        # too); numpy's overflow warnings are silenced in the map. Without a refit
        # nothing of the user's step is shown (nor from the validation rows).
        assert not any(w.category is RuntimeWarning for w in shown)
        if not refit:
            assert not any("large value" in str(w.message) for w in shown)
        assert not any("RuntimeWarning" in s or "large value" in s
                       for s in search.cv_results_["warnings"])
        # The returned pipeline is the user's: its steps are not wrapped.
        assert [type(s).__name__ for _, s in search.best_estimator_.steps] == [
            "DPStandardScaler", "FunctionTransformer", "FunctionTransformer",
            "DPLinearRegressionGD"]
        outcomes.append(search.best_params_)
    assert outcomes[0] == outcomes[1]


class _FitTransformOnly(BaseEstimator):
    """A stateless step without TransformerMixin: fit and transform, no fit_transform."""

    def fit(self, X, y=None):
        return self

    def transform(self, X):
        return np.asarray(X) * 2.0

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = False
        return tags


@pytest.mark.parametrize("step", [_FitTransformOnly(), FunctionTransformer(np.emath.sqrt)],
                         ids=["no fit_transform", "complex for negative values"])
def test_the_finite_map_takes_any_stateless_step(step):
    # 23rd review: the wrapper called fit_transform unconditionally (an
    # AttributeError after the charge for a step a plain Pipeline accepts), and
    # passed complex output (np.emath.sqrt of a negative value) on unmapped.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 2))
    y = X @ [1.0, -1.0] + rng.normal(size=3000)
    pipe = make_pipeline(DPStandardScaler(bounds=(-4.0, 4.0)), step,
                         DPLinearRegressionGD(bounds_X=(-10.0, 10.0), bounds_y=(-8.0, 8.0)))
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        search = DPGridSearchCV(pipe, {"dplinearregressiongd__clip_norm": [1.0, 10.0]},
                                epsilon=4.0, refit=False, random_state=0).fit(X, y)
    assert search.best_estimator_.steps[1][1] is not None
    assert type(search.best_estimator_.steps[1][1]) is type(step)
    # Without a refit nothing of the user's step is shown: not its warnings on the
    # training rows (kept out of cv_results_), nor on the validation rows.
    assert not any(w.category is RuntimeWarning or w.category is np.exceptions.ComplexWarning
                   for w in shown)


def test_the_finite_map_offers_set_output_only_where_its_step_does():
    from skdp.preprocessing import FiniteOutput

    assert not hasattr(FiniteOutput(_FitTransformOnly()), "set_output")
    assert hasattr(FiniteOutput(FunctionTransformer()), "set_output")


def test_a_column_vector_y_warns_once_at_the_users_line():
    from sklearn.exceptions import DataConversionWarning

    from skdp.utils._warnings import is_skdp_warning

    X, y = _linear(n=2000)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DPGridSearchCV(DPLinearRegressionGD(), {"n_iter": [200, 400]}, epsilon=1.0,
                       random_state=0).fit(X, y[:, None])
    column = [w for w in caught if issubclass(w.category, DataConversionWarning)]
    assert len(column) == 1 and column[0].filename == __file__ and is_skdp_warning(column[0])


def test_the_finite_map_keeps_frames_and_sparse_matrices():
    import scipy.sparse as sp

    from skdp.preprocessing import FiniteOutput

    step = FiniteOutput(FunctionTransformer(lambda a: a * 1e300, feature_names_out="one-to-one"))
    step.set_output(transform="pandas")
    frame = pd.DataFrame({"a": [1.0, -1e10], "b": [0.0, 2.0]})
    out = step.fit_transform(frame)
    assert list(out.columns) == ["a", "b"]
    np.testing.assert_array_equal(out.to_numpy(), [[1e50, 0.0], [-1e50, 1e50]])
    # Complex output (np.emath.sqrt of a negative value) maps to its real part, in a
    # frame too, without numpy's ComplexWarning (24th review).
    root = FiniteOutput(FunctionTransformer(lambda f: f.apply(np.emath.sqrt),
                                            feature_names_out="one-to-one"))
    root.set_output(transform="pandas")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = root.fit_transform(pd.DataFrame({"a": [4.0, -4.0]}))
    np.testing.assert_array_equal(out["a"].to_numpy(), [2.0, 0.0])
    matrix = FiniteOutput(FunctionTransformer(lambda a: a * np.inf, accept_sparse=True)).fit_transform(
        sp.csr_matrix([[0.0, 1.0], [-1.0, 0.0]]))
    assert sp.issparse(matrix) and matrix.toarray().tolist() == [[0.0, 1e50], [-1e50, 0.0]]
    complex_sparse = FiniteOutput(FunctionTransformer(lambda a: a * (2.0 + 1j), accept_sparse=True))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        matrix = complex_sparse.fit_transform(sp.csr_matrix([[0.0, 1.0]]))
    assert matrix.toarray().tolist() == [[0.0, 2.0]]
