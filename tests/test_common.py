"""scikit-learn's estimator checks and skdp's own common checks, for every estimator."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LinearRegression
from sklearn.utils.estimator_checks import parametrize_with_checks
from sklearn.utils.validation import has_fit_parameter

from skdp.accounting import mu_from_epsilon_delta
from skdp.decomposition import DPPCA
from skdp.density import PrivateGaussianDensity
from skdp.linear_model import (
    AdaSSPRegressor,
    DPAMBSSGDRegressor,
    DPLinearRegressionGD,
    DPSGDClassifier,
    DPSGDRegressor,
)
from skdp.moments import StreamingMomentEstimator
from skdp.preprocessing import DPStandardScaler


def _test_instances():
    # A large budget keeps the noise small enough for sklearn's accuracy checks
    # (e.g. R^2 > 0.5 on small data); fixed seeds make them reproducible.
    return [
        # sklearn's sample-weight checks use weights up to 5 or so: declare the bound.
        DPLinearRegressionGD(epsilon=1e4, random_state=0, max_weight=10.0),
        AdaSSPRegressor(epsilon=1e4, random_state=0, label_bound=10.0, max_weight=10.0),
        DPAMBSSGDRegressor(epsilon=1e4, random_state=0),
        DPAMBSSGDRegressor(epsilon=1e4, random_state=0, variant="ssgd", clip_norm=10.0),
        # sklearn's accuracy checks use ~100 rows: several epochs at a large budget.
        DPSGDRegressor(epsilon=1e4, epochs=50, noise="independent", max_weight=10.0, random_state=0),
        # max_weight=10 multiplies the noise by 10: a 10x larger mu (epsilon 1e6) keeps it small.
        DPSGDRegressor(epsilon=1e6, optimizer="adam", private_moments="jme", noise="nu",
                       epochs=50, learning_rate=0.05, n_steps=10_000, max_weight=10.0,
                       random_state=0),
        DPSGDClassifier(epsilon=1e4, epochs=20, noise="independent", max_weight=10.0, random_state=0),
        DPSGDClassifier(epsilon=1e4, optimizer="adagrad", private_moments="scale_then_privatize",
                        noise="nu", max_weight=10.0, random_state=0),
        # sklearn's weight checks use weights up to 10.
        StreamingMomentEstimator(norm_bound=10.0, max_weight=10.0, random_state=0),
        StreamingMomentEstimator(method="pp", noise_shaping="nu", nu=0.1, diagonal_only=True,
                                 release="per_row", norm_bound=10.0, random_state=0),
        PrivateGaussianDensity(norm_bound=10.0, max_weight=10.0, random_state=0),
        # The private bound (a quantile of the row norms) on sklearn's small
        # tables needs a large budget.
        PrivateGaussianDensity(epsilon=1e4, max_weight=10.0, random_state=0),
        DPStandardScaler(bounds=(-10.0, 10.0), max_weight=10.0, random_state=0),
        DPStandardScaler(epsilon=1e6, max_weight=10.0, random_state=0),
        DPPCA(norm_bound=10.0, max_weight=10.0, random_state=0),
    ]


# A weight scales the sensitivity (max_weight) and so the noise, and a private
# fit's noise depends on the public row count: a weight of 2 cannot give the
# same release as a repeated row. (sklearn compares only predict, predict_proba,
# decision_function and transform, so the check passes, comparing nothing, for
# StreamingMomentEstimator and PrivateGaussianDensity, which have none of them.)
WEIGHTS_ARE_NOT_REPEATS = {
    "check_sample_weight_equivalence_on_dense_data":
        "weights enter the sensitivity (max_weight, 1 without weights) and the noise follows the "
        "public row count: weight 2 != a repeated row"}
PER_ROW_HAS_NO_WEIGHTS = {
    name: "release='per_row' streams rows one per step and takes no sample_weight"
    for name in ("check_sample_weights_pandas_series", "check_sample_weights_not_an_array",
                 "check_sample_weights_list", "check_sample_weights_shape",
                 "check_sample_weights_not_overwritten",
                 "check_sample_weight_equivalence_on_dense_data",
                 "check_all_zero_sample_weights_error")}
# Refused whenever weights are passed, unit weights included (a rule on their values
# would accept a table of unit weights and refuse its neighbour).
_NO_WEIGHTS = {name: "sample_weight is not supported with scale_then_privatize" for name in (
    "check_sample_weights_list", "check_sample_weights_not_overwritten",
    "check_sample_weight_equivalence_on_dense_data",
    "check_classifiers_one_label_sample_weights", "check_sample_weights_shape",
    "check_sample_weights_pandas_series", "check_sample_weights_not_an_array",
    "check_all_zero_sample_weights_error")}
# Each weight lies in [0, max_weight]: refusing the table whose weights are all 0 while
# fitting its neighbour, where one row weighs 1, would tell the two apart by an error.
ZERO_WEIGHTS_ARE_DATA = {
    "check_all_zero_sample_weights_error":
        "weights that are all 0 are a neighbour of a table where one row weighs 1: the fit "
        "releases noise instead of an error that would tell the two apart"}
EXPECTED_FAILED = {name: WEIGHTS_ARE_NOT_REPEATS for name in (
    "AdaSSPRegressor", "DPLinearRegressionGD", "DPSGDRegressor", "DPSGDClassifier",
    "DPStandardScaler", "DPPCA")}


def _expected_failed_checks(estimator):
    expected = dict(EXPECTED_FAILED.get(type(estimator).__name__, {}))
    if has_fit_parameter(estimator, "sample_weight"):
        expected.update(ZERO_WEIGHTS_ARE_DATA)
    if getattr(estimator, "release", None) == "per_row":
        expected.update(PER_ROW_HAS_NO_WEIGHTS)
    if getattr(estimator, "private_moments", None) == "scale_then_privatize" and \
            getattr(estimator, "optimizer", "sgd") != "sgd":
        expected.update(_NO_WEIGHTS)
    return expected


# sklearn's checks fit classifiers on many label sets, so the DPSGDClassifier
# instances read their labels from y and (rightly) warn that this leaks.
@pytest.mark.filterwarnings("ignore::skdp.exceptions.PrivacyLeakWarning")
@parametrize_with_checks(_test_instances(), expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)


# -- skdp's own common checks ---------------------------------------------------

def _regression_data(n=400, p=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    return X, X @ np.ones(p) / np.sqrt(p) + 0.1 * rng.normal(size=n)


SKDP_INSTANCES = [DPLinearRegressionGD(epsilon=1.0, delta=1e-6),
                  AdaSSPRegressor(epsilon=1.0, delta=1e-6, label_bound=10.0),
                  # 400 rows are too few for DP-STAT's default margin at epsilon 0.5.
                  DPAMBSSGDRegressor(epsilon=1.0, delta=1e-6, count_margin=0.0),
                  DPSGDRegressor(epsilon=1.0, delta=1e-6, optimizer="adam", noise="nu")]
IDS = [type(e).__name__ for e in SKDP_INSTANCES]
# Estimators whose non-private limit is least squares (not one-pass SGD).
FULL_BATCH = [e for e in SKDP_INSTANCES
              if not isinstance(e, (DPAMBSSGDRegressor, DPSGDRegressor))]


@pytest.mark.parametrize("estimator", SKDP_INSTANCES, ids=IDS)
def test_seed_controls_the_noise(estimator):
    X, y = _regression_data()
    fit = lambda seed: clone(estimator).set_params(random_state=seed).fit(X, y).predict(X)  # noqa: E731
    np.testing.assert_array_equal(fit(0), fit(0))
    assert not np.allclose(fit(0), fit(1))


@pytest.mark.parametrize("estimator", SKDP_INSTANCES, ids=IDS)
def test_privacy_spent_within_budget(estimator):
    # 1000 rows: at epsilon 0.5 DP-GD's safe private bound searches need more than 400.
    X, y = _regression_data(n=1000)
    est = clone(estimator).set_params(random_state=0, epsilon=0.5, delta=1e-7).fit(X, y)
    eps, delta, mu = est.privacy_spent_
    assert eps <= 0.5 * (1 + 1e-9) and delta <= 1e-7
    assert mu == pytest.approx(mu_from_epsilon_delta(0.5, 1e-7), rel=1e-12)


@pytest.mark.parametrize("estimator", SKDP_INSTANCES, ids=IDS)
def test_no_per_row_data_is_stored(estimator):
    X, y = _regression_data(n=1234)
    est = clone(estimator).set_params(random_state=0).fit(X, y)
    for name, value in vars(est).items():
        if isinstance(value, np.ndarray):
            assert 1234 not in value.shape, f"{name} has a per-row axis"


@pytest.mark.parametrize("estimator", FULL_BATCH, ids=[type(e).__name__ for e in FULL_BATCH])
def test_huge_epsilon_matches_non_private_reference(estimator):
    X, y = _regression_data()
    est = clone(estimator).set_params(random_state=0, epsilon=1e7).fit(X, y)
    ref = LinearRegression().fit(X, y)
    # Tolerance: at epsilon = 1e7 (mu = 4467) the largest noise is AdaSSP's on
    # X^T y, std 2 * 6 * 10 / (4467 / sqrt 3) = 0.047 on a sum over 400 rows,
    # i.e. coef sd ~ 1.2e-4; rows have norm <= 4.5, so prediction sd <= 5.4e-4,
    # and 5 sd is 2.7e-3. DP-GD's noise is 10x smaller (lambda = 1.7e-4, and
    # no clipping at the optimum, where residuals are ~0.1).
    np.testing.assert_allclose(est.predict(X), ref.predict(X), atol=3e-3)
