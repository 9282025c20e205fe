"""DPStandardScaler and DPPCA: accuracy at the issue's settings, calibration, API."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.linalg import subspace_angles
from sklearn.decomposition import PCA
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdp.accounting import BudgetAccountant, mu_from_epsilon_delta
from skdp.decomposition import DPPCA
from skdp.linear_model import DPLinearRegressionGD
from skdp.preprocessing import DPStandardScaler, FiniteOutput

LOC, SCALE = np.array([50.0, -3.0, 0.0, 1e4]), np.array([10.0, 0.5, 1.0, 2e3])


def _table(n, seed=0):
    return np.random.default_rng(seed).normal(LOC, SCALE, size=(n, 4))


@pytest.mark.parametrize("bounds", [(LOC - 4 * SCALE, LOC + 4 * SCALE), None])
def test_scaler_error_is_a_few_percent_of_a_std_at_epsilon_half(bounds):
    # n = 1e5, epsilon = 0.5 (mu = 0.124), d = 4. Declared bounds at +-4 sd:
    # the noise sd of a mean is h sqrt(4 d + 1) / (n mu) = 4 sd * 4.1 / 12,400
    # = 0.0013 sd, of a variance about twice that; the sampling sd of a mean is
    # 0.003 sd. Private bounds (0.5% / 99.5% quantiles) clip about 1% of each
    # tail: the standard deviation comes out about 1% low. 3% is the target.
    X = _table(100_000)
    for seed in range(3):
        scaler = DPStandardScaler(epsilon=0.5, bounds=bounds, random_state=seed).fit(X)
        assert np.all(np.abs(scaler.mean_ - LOC) / SCALE < 0.03)
        assert np.all(np.abs(scaler.scale_ / SCALE - 1) < 0.03)


def test_scaler_noise_has_its_calibrated_scale():
    # Every row at the centre of its bounds: u = 0, so mean_u is the noise on
    # the sum over the noisy total. 400 fits: the sample sd of mean_ has
    # relative sd 1 / sqrt(2 * 399) = 0.035; 4 sd is 0.14.
    n, d = 2000, 3
    X = np.zeros((n, d))
    means = np.array([DPStandardScaler(bounds=(-2.0, 2.0), random_state=r).fit(X).mean_
                      for r in range(400)])
    mu = mu_from_epsilon_delta(1.0, 1e-6)
    std1 = math.sqrt(4 * d + 1) / mu  # on the sum of u in [-1, 1]
    expected = 2.0 * std1 / n  # half width 2
    assert means.std(ddof=1) / expected == pytest.approx(1.0, abs=0.14)


def test_an_unweighted_scaler_divides_by_the_public_row_count():
    # A new user's trial (session 23): on 376 rows at epsilon 0.5 the scaler warned
    # that its released total weight was near its noise, though without weights
    # the total is the public row count. Rows at u = 0.8 (far from the centre):
    # with the noisy total the mean's error is sqrt(1 + 0.8**2) = 1.28 times the
    # sum's noise over n; with n it is the sum's noise alone. 300 fits of 3
    # features: the sample sd has relative sd 1 / sqrt(2 * 899) = 0.024; 0.12 is 5.
    n, d = 376, 3
    X = np.full((n, d), 0.8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning about the total weight
        means = np.array([DPStandardScaler(epsilon=0.5, bounds=(-1.0, 1.0), random_state=r)
                          .fit(X).mean_ for r in range(300)])
    mu = mu_from_epsilon_delta(0.5, 1e-6)
    expected = math.sqrt(4 * d + 1) / mu / n  # half width 1
    assert (means - 0.8).std(ddof=1) / expected == pytest.approx(1.0, abs=0.12)
    # With weights (unit ones included) the released total divides, as before.
    weighted = np.array([DPStandardScaler(epsilon=0.5, bounds=(-1.0, 1.0), random_state=r)
                         .fit(X, sample_weight=np.ones(n)).mean_ for r in range(300)])
    assert (weighted - 0.8).std(ddof=1) / expected == pytest.approx(math.sqrt(1.64), abs=0.15)


def test_scaler_api_pandas_roundtrip_and_pipeline():
    X = pd.DataFrame(_table(5000), columns=["age", "ph", "z", "income"])
    scaler = DPStandardScaler(bounds=(LOC - 5 * SCALE, LOC + 5 * SCALE), random_state=0)
    scaler.set_output(transform="pandas")
    Z = scaler.fit_transform(X)
    assert isinstance(Z, pd.DataFrame) and list(Z.columns) == list(X.columns)
    np.testing.assert_allclose(scaler.inverse_transform(Z.to_numpy()), X.to_numpy(), rtol=1e-10)
    np.testing.assert_allclose(Z.to_numpy(), (X.to_numpy() - scaler.mean_) / scaler.scale_)
    assert list(scaler.get_feature_names_out()) == list(X.columns)
    pipe = make_pipeline(DPStandardScaler(bounds=(LOC - 5 * SCALE, LOC + 5 * SCALE),
                                          random_state=0), DPPCA(n_components=2, random_state=0))
    assert pipe.fit_transform(X).shape == (5000, 2)
    no_std = DPStandardScaler(bounds=(-1e5, 1e5), with_std=False, random_state=0).fit(X)
    assert no_std.scale_ is None and no_std.var_ is None


def test_scaler_partial_fit_charges_once_and_matches_a_fit():
    X = _table(40_000)
    acc = BudgetAccountant(epsilon=3.0, delta=1e-5)
    bounds = (LOC - 4 * SCALE, LOC + 4 * SCALE)
    parts = DPStandardScaler(bounds=bounds, accountant=acc, random_state=0)
    for block in np.array_split(X, 4):
        parts.partial_fit(block)
    assert len(acc.ledger) == 1 and parts.n_samples_seen_ == 40_000
    whole = DPStandardScaler(bounds=bounds, random_state=1).fit(X)
    # Four releases add four noises: sd of the mean 2 * 0.0027 sd at most; 0.02 sd apart.
    assert np.all(np.abs(parts.mean_ - whole.mean_) / SCALE < 0.02)


def test_a_later_scaler_call_whose_rows_all_weigh_zero_runs():
    # After the first call's charge, refusing a call whose rows all weigh 0 (and
    # running its neighbour) would single it out: such a call adds nothing.
    X = _table(3000)
    bounds = (LOC - 4 * SCALE, LOC + 4 * SCALE)
    for w2 in (np.zeros(5), np.r_[1.0, np.zeros(4)]):
        sc = DPStandardScaler(bounds=bounds, max_weight=1.0, random_state=0)
        sc.partial_fit(X, sample_weight=np.ones(3000))
        sc.partial_fit(X[:5], sample_weight=w2)
        assert np.all(np.isfinite(sc.mean_))


def test_scaler_weights_and_bad_input_before_any_charge():
    X = _table(3000)
    bounds = (LOC - 4 * SCALE, LOC + 4 * SCALE)
    a = DPStandardScaler(bounds=bounds, random_state=0).fit(X)
    b = DPStandardScaler(bounds=bounds, random_state=0).fit(X, sample_weight=np.ones(3000))
    # The same releases; without weights the means divide by the public row count,
    # with them by the released total weight (session 23), 3000 +- 27 here.
    assert a.noise_stds_ == b.noise_stds_
    np.testing.assert_allclose(a.mean_, b.mean_, rtol=0.02)
    np.testing.assert_allclose(a.scale_, b.scale_, rtol=0.02)
    acc = BudgetAccountant(epsilon=3.0, delta=1e-5)
    for kw, fit_kw, match in [
        ({"bounds": (1.0, 1.0)}, {}, "lower bound must be below its upper bound"),
        ({"bounds": ([0.0, 0.0, 0.0, 0.0], [1.0, -1.0, 1.0, 1.0])}, {}, r"feature\(s\) \[1\]"),
        ({"bounds": (0.0, np.inf)}, {}, "finite"),
        ({"bounds": (0.0, [1.0, 2.0])}, {}, "pair"),
        ({"bounds": bounds}, {"sample_weight": -np.ones(3000)}, "non-negative"),
        ({}, {"sample_weight": None}, None),
    ]:
        if match is None:
            continue
        with pytest.raises(ValueError, match=match):
            DPStandardScaler(accountant=acc, **kw).fit(X, **fit_kw)
    with pytest.raises(ValueError, match=r"Too few rows.*Declare the bound \(bounds=\.\.\.\)"):
        DPStandardScaler(accountant=acc).fit(X[:50])
    assert acc.ledger == []


# -- DPPCA -----------------------------------------------------------------------------

def test_pca_top_subspace_matches_non_private_pca():
    # n = 1e5, d = 10, a well-separated spectrum; default private bound,
    # epsilon = 1. The covariance noise has entries of order
    # zeta^2 / (n mu) ~ 1e-3 against eigenvalue gaps >= 0.5: the top-3
    # subspace must match non-private PCA to a smallest principal cosine
    # above 0.99 (measured 0.9999+).
    rng = np.random.default_rng(0)
    Q = np.linalg.qr(rng.normal(size=(10, 10)))[0]
    eig = np.array([6.0, 4.0, 2.5, 1.0, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05])
    X = rng.normal(size=(100_000, 10)) * np.sqrt(eig) @ Q.T + 1.0
    ref = PCA(n_components=3).fit(X)
    for seed in range(3):
        pca = DPPCA(n_components=3, epsilon=1.0, random_state=seed).fit(X)
        cosines = np.cos(subspace_angles(pca.components_.T, ref.components_.T))
        assert cosines.min() > 0.99
        np.testing.assert_allclose(pca.components_ @ pca.components_.T, np.eye(3), atol=1e-10)
        assert np.all(np.diff(pca.explained_variance_) <= 0)


def test_pca_warns_when_its_components_are_not_separated_from_the_noise():
    # A second new user's trial (session 23): on digits (pixels / 16, norm_bound 8,
    # epsilon 1) the top-10 subspace had a smallest principal cosine of 0.11 with
    # non-private PCA, silently. The gap between the 10th and 11th released
    # eigenvalues is below the noise between the two subspaces; a well-separated
    # spectrum (the test above) does not warn.
    from sklearn.datasets import load_digits

    X = load_digits().data / 16.0
    with pytest.warns(UserWarning, match="not separated from the others beyond the noise"):
        DPPCA(n_components=10, epsilon=1.0, norm_bound=8.0, random_state=0).fit(X)
    rng = np.random.default_rng(0)
    Q = np.linalg.qr(rng.normal(size=(10, 10)))[0]
    eig = np.array([6.0, 4.0, 2.5, 1.0, 0.5, 0.4, 0.3, 0.2, 0.1, 0.05])
    Y = rng.normal(size=(100_000, 10)) * np.sqrt(eig) @ Q.T + 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPPCA(n_components=3, epsilon=1.0, random_state=0).fit(Y)


def test_pca_api():
    X = pd.DataFrame(np.random.default_rng(1).normal(size=(2000, 4)), columns=list("abcd"))
    acc = BudgetAccountant(epsilon=5.0, delta=1e-5)
    pca = DPPCA(n_components=2, norm_bound=4.0, accountant=acc, random_state=0).fit(X)
    Z = pca.transform(X)
    np.testing.assert_allclose(Z, (X.to_numpy() - pca.mean_) @ pca.components_.T)
    assert pca.inverse_transform(Z).shape == (2000, 4)
    assert list(pca.get_feature_names_out()) == ["dppca0", "dppca1"]
    assert [c.label for c in acc.ledger] == ["DPPCA"]
    assert pca.explained_variance_ratio_.sum() <= 1.0 + 1e-12
    with pytest.raises(ValueError, match="n_components"):
        DPPCA(n_components=5, norm_bound=4.0).fit(X)


def test_a_length_one_bound_for_several_features_is_refused_before_the_charge():
    # Session 23's trial: bounds=([0], [1]) was broadcast to both columns silently.
    # A scalar is the way to give every column the same range.
    acc = BudgetAccountant(epsilon=1.0, delta=1e-6)
    X = np.random.default_rng(0).random((200, 2))
    with pytest.raises(ValueError, match=r"length 2; the lower bounds have shape \(1,\)"):
        DPStandardScaler(bounds=([0.0], [1.0]), accountant=acc).fit(X)
    assert acc.ledger == []
    DPStandardScaler(bounds=(0.0, 1.0), accountant=acc, random_state=0).fit(X)


def test_collapsed_private_bounds_are_widened_with_a_warning():
    # A 0/1 column with 1% ones: at epsilon 1 on 20,000 rows and 3 columns the
    # count noise (sd sqrt(11 * 6) / (mu sqrt(0.1)) = 109 rows) keeps the upper
    # quantile below 1 - 3 * 109 / 20,000 = 0.984, so both private quantiles of
    # that column are 0. The range is widened to 0 +- 1 (a warning says so) and
    # the scaler recovers its mean 0.01 and sd 0.099 instead of a zero scale.
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=20_000), rng.normal(5, 2, size=20_000),
                         (rng.uniform(size=20_000) < 0.01).astype(float)])
    with pytest.warns(UserWarning, match=r"feature\(s\) \[2\] collapsed"):
        scaler = DPStandardScaler(random_state=0).fit(X)
    assert scaler.bounds_[0][2] == -1.0 and scaler.bounds_[1][2] == 1.0
    # Noise sd of the mean of u in [-1, 1]: sqrt(4 * 3 + 1) / (mu sqrt(0.9) n) = 8e-4.
    assert abs(scaler.mean_[2] - X[:, 2].mean()) < 0.004
    assert scaler.scale_[2] == pytest.approx(X[:, 2].std(), rel=0.2)


def test_scaler_without_std_keeps_no_raw_sum_of_squares():
    # Issue 22, item 7: with_std=False releases no squares, so none may sit,
    # un-noised, in the state a later partial_fit reads.
    X = np.random.default_rng(0).uniform(size=(1000, 2))
    scaler = DPStandardScaler(bounds=(0, 1), with_std=False, random_state=0).fit(X)
    np.testing.assert_array_equal(scaler._state["sums"][1], 0.0)
    scaler.partial_fit(X)
    np.testing.assert_array_equal(scaler._state["sums"][1], 0.0)
    assert scaler.var_ is None


def test_private_bounds_moved_inwards_warn_and_gaussian_scales_stay_right():
    # Issue 26, item 1: at 10,000 rows and epsilon 1 the bound search cannot
    # resolve the 0.5% / 99.5% quantiles and moves inwards (0.965 here); that
    # used to shrink every scale by 3-7% in silence (45-80% at 1,000 rows).
    # Now it warns, and the clipped variance is corrected for Gaussian tails.
    # Tolerance: one fit's relative scale error has sd about 0.013 here
    # (benchmarks/scaler_small_n.py: p90 |error| 0.022 = 1.645 sd); the median
    # of 10 fits x 3 features has sd about 1.25 * 0.013 / sqrt(30) = 0.003,
    # so 0.015 is 5 sd.
    errors = []
    for seed in range(10):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(10_000, 3)) * [1.0, 5.0, 0.2] + [0.0, 10.0, -3.0]
        with pytest.warns(UserWarning, match="quantiles"):
            est = DPStandardScaler(epsilon=1.0, random_state=seed).fit(X)
        assert est.bound_quantile_ < 0.995
        errors.append(est.scale_ / X.std(axis=0) - 1.0)
    assert abs(np.median(errors)) < 0.015


def test_the_moved_quantile_warns_before_the_charge():
    # It depends on n and the budget only, but was raised after the charge: under
    # warnings-as-errors the fit failed having paid (session 19 review).
    import warnings

    from skdp.accounting import BudgetAccountant

    acc = BudgetAccountant(epsilon=10.0, delta=1e-3)
    X = np.random.default_rng(0).normal(size=(20_000, 2))
    for method in ("fit", "partial_fit"):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(UserWarning, match="quantiles"):
                getattr(DPStandardScaler(epsilon=1.0, accountant=acc), method)(X)
    assert acc.ledger == []
    for method in ("fit", "partial_fit"):  # it names the user's line on each path
        with pytest.warns(UserWarning, match="quantiles") as record:
            getattr(DPStandardScaler(epsilon=1.0, random_state=0), method)(X)
        assert [w.filename for w in record] == [__file__]


def test_no_inward_move_no_warning_and_declared_bounds_are_not_corrected():
    import warnings

    X = np.random.default_rng(0).normal(size=(100_000, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = DPStandardScaler(epsilon=1.0, random_state=0).fit(X)
    assert est.bound_quantile_ == 0.995
    declared = DPStandardScaler(bounds=(-6.0, 6.0), random_state=0).fit(X)
    assert declared.bound_quantile_ is None



def test_a_scaler_call_that_fails_between_its_releases_ends_the_stream(fail_on_call):
    import skdp.preprocessing._scaler as scaler_module
    X = np.random.default_rng(0).normal(size=(300, 2))
    sc = DPStandardScaler(bounds=(-4.0, 4.0), random_state=0).partial_fit(X[:100])
    # The second release: after the sums, before the sums of squares.
    undo = fail_on_call(scaler_module, "gaussian_release", 2)
    with pytest.raises(MemoryError):
        sc.partial_fit(X[100:200])
    undo()
    with pytest.raises(ValueError, match="failed after it began drawing"):
        sc.partial_fit(X[200:])
    sc.fit(X)  # a new stream
    sc.partial_fit(X[:100])

# -- FiniteOutput: a public step after a private one ------------------------------

@parametrize_with_checks([FiniteOutput(FunctionTransformer()), FiniteOutput(StandardScaler())])
def test_finite_output_is_a_scikit_learn_transformer(estimator, check):
    check(estimator)


def test_finite_output_keeps_a_plain_pipeline_from_failing_after_a_charge():
    # exp of one row's scaled outlier overflows: unwrapped, the regressor refuses
    # it after the scaler's charge (an error only tables with such a row give);
    # wrapped, the overflow is capped at 1e50 and the pipeline fits like its
    # neighbour without the outlier.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 2))
    y = np.exp(X) @ np.array([0.5, -0.5]) + rng.normal(size=2000)
    X[0, 0] = 1e6

    def pipeline(step, acc):
        return make_pipeline(DPStandardScaler(bounds=(-5.0, 5.0), accountant=acc, random_state=0),
                             step,
                             DPLinearRegressionGD(bounds_X=(0.0, 200.0), bounds_y=(-5.0, 5.0),
                                                  accountant=acc, random_state=0))

    acc = BudgetAccountant(epsilon=10.0, delta=1e-5)
    with pytest.raises(ValueError, match="infinity"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy's overflow in exp
        pipeline(FunctionTransformer(np.exp), acc).fit(X, y)
    assert len(acc.ledger) == 1  # the scaler had charged
    acc = BudgetAccountant(epsilon=10.0, delta=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # and no numpy warning escapes
        pipe = pipeline(FiniteOutput(FunctionTransformer(np.exp)), acc).fit(X, y)
    assert len(acc.ledger) == 2
    out = pipe[:2].transform(X[:3])
    assert out[0, 0] == 1e50 and np.all(np.isfinite(out))
    assert pipe[1].step.__class__ is FunctionTransformer and not hasattr(pipe[1].step, "n_features_in_")


def test_a_search_keeps_the_user_s_finite_output():
    from skdp.model_selection import DPGridSearchCV
    rng = np.random.default_rng(1)
    X = rng.normal(size=(600, 2))
    y = X @ np.array([1.0, -1.0]) + rng.normal(size=600)
    pipe = make_pipeline(DPStandardScaler(bounds=(-5.0, 5.0)), FiniteOutput(FunctionTransformer()),
                         FunctionTransformer(), DPLinearRegressionGD(bounds_X=(-5.0, 5.0),
                                                                     bounds_y=(-8.0, 8.0)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        best = DPGridSearchCV(pipe, {"dplinearregressiongd__clip_norm": [1.0, 2.0]}, epsilon=5.0,
                              random_state=0).fit(X, y).best_estimator_
    # The user's wrapper stays; the one the search added around the bare step goes.
    assert isinstance(best[1], FiniteOutput) and best[1].step_ is not None
    assert type(best[2]) is FunctionTransformer


def test_finite_output_refits_cleanly_refuses_private_steps_and_keeps_polars():
    X = np.random.default_rng(2).normal(size=(50, 2))
    frame = pd.DataFrame(X, columns=["a", "b"])
    wrapped = FiniteOutput(StandardScaler()).fit(frame)
    assert list(wrapped.feature_names_in_) == ["a", "b"]
    assert not hasattr(wrapped.fit(X), "feature_names_in_")  # not left from the first fit
    for private in (DPStandardScaler(bounds=(-4.0, 4.0)),
                    make_pipeline(FunctionTransformer(), DPStandardScaler(bounds=(-4.0, 4.0)))):
        acc = BudgetAccountant(epsilon=1.0, delta=1e-6)
        private.set_params(**{("dpstandardscaler__" if hasattr(private, "steps") else "")
                              + "accountant": acc})
        with pytest.raises(ValueError, match="wraps public steps"):
            FiniteOutput(private).fit(X)
        assert acc.ledger == []
    pl = pytest.importorskip("polars")
    exp = FunctionTransformer(np.exp, feature_names_out="one-to-one")
    out = FiniteOutput(exp).set_output(transform="polars").fit_transform(
        pl.DataFrame({"a": [0.0, 1e4]}))
    assert isinstance(out, pl.DataFrame) and out["a"].to_list() == [1.0, 1e50]
