"""Every warning skdp raises names the user's line, whatever path led to it.

A warning attributed to a line inside skdp or scikit-learn (``fit``'s
``_fit_context`` wrapper, a Pipeline, a search, joblib) tells the user
nothing about which of their calls it came from, and Python's default
filter shows it once per library line instead of once per call site.
``skdp.utils._warnings.user_stacklevel`` skips those frames.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline

from skdp.clipping import clipping_report
from skdp.density import PrivateGaussianDensity
from skdp.exceptions import PrivacyLeakWarning
from skdp.linear_model import DPLinearRegressionGD, DPSGDClassifier, DPSGDRegressor
from skdp.model_selection import DPGridSearchCV
from skdp.moments import StreamingMomentEstimator
from skdp.preprocessing import DPStandardScaler


def _noise_only(n=600, p=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, p)), rng.normal(size=n)


def _cases():
    X, y = _noise_only()
    labels = (X[:, 0] > 0).astype(int)
    rng = np.random.default_rng(2)
    scales = np.column_stack([rng.normal(50.0, 30.0, 4000), rng.normal(6.7, 0.45, 4000)])
    year = np.column_stack([rng.integers(1976, 1983, 4000), rng.random(4000) < 0.1]).astype(float)
    year_y = 0.1 * (year[:, 0] - 1979) - 0.5 * year[:, 1] + 6.7 + 0.4 * rng.normal(size=4000)
    pinned = np.random.default_rng(0).normal(size=(2000, 3)) * 0.3
    slow_x = rng.normal(size=(30_000, 3))
    slow_labels = (slow_x[:, 0] - 2.5 + rng.logistic(size=30_000) > 0).astype(int)
    return {
        # y is pure noise: the slopes are within their standard errors of zero.
        "dpgd noise": (lambda: DPLinearRegressionGD(epsilon=1.0, random_state=0), X, y,
                       UserWarning, "noise is as large"),
        "classes read from y": (lambda: DPSGDClassifier(random_state=0), X, labels,
                                PrivacyLeakWarning, "label set is read"),
        # Session 23: an unweighted mean divides by the public n (no total-weight
        # warning without weights); the new warnings of that session instead.
        "density below the noise": (lambda: PrivateGaussianDensity(random_state=0), scales,
                                    None, UserWarning, "below the noise"),
        "uncentred columns": (lambda: DPLinearRegressionGD(epsilon=10.0, random_state=0),
                              year, year_y, UserWarning, "far from 0"),
        "clip norm far from unit scale": (lambda: DPSGDRegressor(epsilon=10.0, random_state=0),
                                          year, year_y, UserWarning, "far from unit scale"),
        "density at its cap": (lambda: PrivateGaussianDensity(
            method="pp", release="per_row", norm_bound=2.0, random_state=0), pinned, None,
            UserWarning, "largest trace"),
        # Session 24: 600 rows of pure noise, epsilon 1: slopes within their noise.
        "DP-SGD noise": (lambda: DPSGDRegressor(epsilon=1.0, random_state=0), X, y,
                         UserWarning, "noise is as large as the signal: the slopes"),
        # Session 24: a step far too small for the run (epsilon 100, the noise negligible).
        "DP-SGD not settled": (lambda: DPSGDClassifier(epsilon=100.0, classes=[0, 1],
                                                       learning_rate=0.003, random_state=0),
                               slow_x, slow_labels, ConvergenceWarning, "had not settled"),
    }


CASES = _cases()


def _fit_direct(make, X, y):
    return make().fit(X, y)


def _fit_in_pipeline(make, X, y):
    return make_pipeline(make()).fit(X, y)


def _partial_fit(make, X, y):
    return make().partial_fit(X, y)


@pytest.mark.parametrize("case, path", [
    *((case, path) for case in CASES for path in (_fit_direct, _fit_in_pipeline)),
    ("classes read from y", _partial_fit)])
def test_each_warning_names_the_users_line(case, path):
    make, X, y, category, match = CASES[case]
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        path(make, X, y)
    ours = [w for w in record if issubclass(w.category, category) and match in str(w.message)]
    assert ours, [str(w.message)[:80] for w in record]
    assert {w.filename for w in ours} == {__file__}


@pytest.mark.parametrize("est", [
    StreamingMomentEstimator(workload="average", norm_bound=5.0, random_state=0),
    DPStandardScaler(bounds=(-3, 3), random_state=0)])
def test_a_weighted_total_near_its_noise_warns_at_the_users_line(est):
    # A weighted mean divides by the released total weight; 600 rows of weight 0.001
    # give 0.6, within a few noise stds of zero (the unweighted case divides by the
    # public n since session 23, so weights are needed to reach this warning).
    X = np.random.default_rng(0).normal(size=(600, 3))
    weights = np.full(600, 0.001)
    step = type(est).__name__.lower()
    for fit in (lambda: clone(est).fit(X, sample_weight=weights),
                lambda: make_pipeline(clone(est)).fit(X, **{f"{step}__sample_weight": weights})):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            fit()
        ours = [w for w in record if "released total weight" in str(w.message)]
        assert ours and {w.filename for w in ours} == {__file__}


def test_a_parameter_set_mid_stream_is_named_once_and_at_the_users_line():
    # Session 23's trial: set_params(epsilon=...) between partial_fit calls showed in
    # repr and was silently ignored (the stream keeps its first call's calibration).
    X = np.random.default_rng(0).normal(size=(400, 3))
    est = StreamingMomentEstimator(norm_bound=5.0, random_state=0).partial_fit(X[:100])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no notice while nothing changed
        est.partial_fit(X[100:200])
    est.set_params(epsilon=5.0, random_state=1)  # random_state: no notice
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        est.partial_fit(X[200:300])
        est.partial_fit(X[300:])
    assert [str(w.message).split(" changed")[0] for w in record] == ["epsilon"]
    assert {w.filename for w in record} == {__file__}
    assert est.privacy_spent_.epsilon == pytest.approx(1.0, rel=1e-6)  # as the first call
    # Parameters read live are not 'ignored': the scaler's with_mean applies at once.
    scaler = DPStandardScaler(bounds=(-5, 5), random_state=0).partial_fit(X[:200])
    scaler.set_params(with_mean=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scaler.partial_fit(X[200:])
    np.testing.assert_allclose(scaler.transform(X), X / scaler.scale_)
    # ... but with_std cannot be turned on: the stream released no squares (it
    # reported var_ 0 and scale_ 1 in silence, the second review of session 24).
    scaler = DPStandardScaler(bounds=(-5, 5), with_std=False, random_state=0).partial_fit(X[:200])
    scaler.set_params(with_std=True)
    with pytest.raises(ValueError, match="with_std=True needs the sums of squares"):
        scaler.partial_fit(X[200:])
    scaler.set_params(with_std=False).partial_fit(X[200:])  # the stream continues
    # A returned value changes nothing: a notice per new value, not per call.
    est.set_params(epsilon=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.partial_fit(X[:10])
    # The moments' history is read live, in per-row streams too.
    pp = StreamingMomentEstimator(method="pp", norm_bound=5.0, n_steps=100, random_state=0)
    pp.partial_fit(X[:20]).set_params(store_history=True).partial_fit(X[20:50])
    assert pp.first_moments_.shape == (30, 3)


def test_warnings_through_a_cross_validation_and_a_search_name_the_users_line():
    X, y = _noise_only(n=4000)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        cross_val_score(DPLinearRegressionGD(epsilon=1.0, random_state=0), X, y, cv=2,
                        error_score="raise")
        # Without a refit the chosen candidate's warnings are passed on by the search.
        DPGridSearchCV(DPLinearRegressionGD(), {"n_iter": [200, 400]}, epsilon=1.0, cv=0.5,
                       refit=False, random_state=0).fit(X, y)
    ours = [w for w in record if "noise is as large" in str(w.message)]
    assert len(ours) == 3, [str(w.message)[:80] for w in record]  # two folds, the search
    assert {w.filename for w in ours} == {__file__}


def test_the_privacy_leak_warnings_of_direct_calls_name_the_users_line():
    X, y = _noise_only(n=2000)
    est = DPLinearRegressionGD(epsilon=10.0, random_state=0).fit(X, y)
    with pytest.warns(PrivacyLeakWarning) as record:
        est.estimand(X, y)
    with pytest.warns(PrivacyLeakWarning) as report_record:
        with clipping_report():
            pass
    assert {w.filename for w in [*record, *report_record]
            if issubclass(w.category, PrivacyLeakWarning)} == {__file__}


def test_skdp_raises_its_warnings_only_through_warn():
    # One route: the user's line and the mark a private search reads (23rd review).
    from pathlib import Path

    import skdp

    root = Path(skdp.__file__).parent
    direct = [str(path.relative_to(root)) for path in root.rglob("*.py")
              if path.name != "_warnings.py" and "warnings.warn(" in path.read_text()]
    assert direct == []
