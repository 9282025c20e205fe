"""No leak by default: the findings of the audit of data-dependent code paths.

Each test is one finding of the audit listed in
``docs/user_guide/threat_model.rst`` ("Audit of data-dependent choices").
"""

import warnings

import numpy as np
import pytest
from test_hostile import ESTIMATORS, MARKER, _data, _fit

from skdp import PrivacyLeakWarning
from skdp.clipping import clipping_report
from skdp.linear_model import DPAMBSSGDRegressor, DPSGDClassifier, DPSGDRegressor

# Noisy releases, not calibration: DPLinearRegressionGD's clip norm, Gram row bound and step
# plan (and so its noise std and the steps it asked for, planned_n_iter_), and AdaSSP's row
# and label bounds, are chosen from private releases paid for with budget; the clipping
# check's resolution is post-processing of the clip norm and the released iterates, and
# whether DP-GD's steps use the Gram's preconditioner (with its step size) is
# post-processing of the released Gram matrix.
PRIVATE_SCALARS = {"intercept_", "l2_penalty_", "clip_norm_", "norm_bound_", "noise_std_",
                   "n_iter_", "planned_n_iter_", "burn_in_", "clipped_fraction_",
                   "clipped_fraction_std_", "label_bound_", "clip_check_resolution_",
                   "preconditioned_", "learning_rate_"}


def _public_attributes(est):
    """Fitted scalars and tuples: the calibration a fit chose (noise stds, sizes, ...)."""
    return {k: v for k, v in vars(est).items()
            if k.endswith("_") and not k.startswith("_") and k not in PRIVATE_SCALARS
            and isinstance(v, (int, float, tuple, str, type(None)))}


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_defaults_and_calibration_do_not_depend_on_the_data(name):
    # Two datasets of the same shape with very different values: every
    # default and every noise scale must come out the same, because they
    # may only depend on n, the feature count and the parameters.
    n = ESTIMATORS[name][1]
    X1, y1 = _data(name, n, seed=1)
    X2, y2 = _data(name, n, seed=2)
    X2 = X2 * 7.0 + 3.0
    if name != "DPSGDClassifier":
        y2 = y2 * -5.0
    a = _public_attributes(_fit(name, X1, y1))
    b = _public_attributes(_fit(name, X2, y2))
    assert a and a.keys() == b.keys()
    for key in a:  # tuples may hold arrays (a scaler's declared bounds_)
        assert _same(a[key], b[key]), key


def _same(u, v):
    if isinstance(u, tuple):
        return isinstance(v, tuple) and len(u) == len(v) and all(map(_same, u, v))
    return np.array_equal(np.asarray(u, dtype=object), np.asarray(v, dtype=object))


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_no_privacy_leak_warning_by_default(name):
    X, y = _data(name, ESTIMATORS[name][1])
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        est = ESTIMATORS[name][0]()
        est.fit(X, y) if name != "StreamingMomentEstimator" else est.fit(X)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_warnings_never_quote_data(name):
    X, y = _data(name, ESTIMATORS[name][1])
    X[0, 0] = MARKER
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = ESTIMATORS[name][0]()
        if name == "DPSGDClassifier":
            est.set_params(classes=None)  # the one default-path warning of skdp
        est.fit(X, y) if name != "StreamingMomentEstimator" else est.fit(X)
    assert all(str(MARKER) not in str(w.message) for w in caught)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_errors_never_quote_data(name):
    # scikit-learn's validation printed the array for a 1-D X ("array=[...]") and for
    # complex data; the threat model promises errors that name the problem only.
    X, y = _data(name, ESTIMATORS[name][1])
    X[0, 0] = MARKER
    text = X.astype(object)
    text[0, 0] = "patient-987.65"  # a value that is not a number, quoted by numpy
    bad_inputs = [X[:, 0], X * (1 + 1j), text]
    fitted = _fit(name, X, y)

    def quotes(error):  # the marker in any of numpy's print formats
        return any(s in str(error) for s in ("987.65", "9.8765"))

    for bad in bad_inputs:
        with pytest.raises(ValueError) as info:
            _fit(name, bad, y)
        assert not quotes(info.value), info.value
        for method in ("predict", "transform", "score_samples", "inverse_transform"):
            if hasattr(fitted, method):
                with pytest.raises(ValueError) as info:
                    getattr(fitted, method)(bad)
                assert not quotes(info.value), info.value


def test_classes_read_from_the_data_warn():
    X, y = _data("DPSGDClassifier", 100)
    with pytest.warns(PrivacyLeakWarning, match="label set is read from y"):
        DPSGDClassifier(clip_norm=1.0, random_state=0).fit(X, y)


def test_a_label_the_first_call_lacked_raises_later_as_its_warning_says():
    # With classes=None the label set comes from the first call's rows; a later batch
    # with a new label raises after the charge, so the warning names that too (a
    # ninth review). With classes declared the same error is a schema error.
    X, y = _data("DPSGDClassifier", 200)
    with pytest.warns(PrivacyLeakWarning, match="later partial_fit call refuses labels"):
        est = DPSGDClassifier(clip_norm=1.0, random_state=0).partial_fit(X, y)
    y2 = y.copy()
    y2[0] = np.max(y) + 1
    with pytest.raises(ValueError, match="not in classes"):
        est.partial_fit(X, y2)


def test_clipping_report_is_off_by_default_and_warns_when_on():
    X, y = _data("DPSGDRegressor", 200)
    plain = DPSGDRegressor(clip_norm=1.0, random_state=0).fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match="outside the privacy guarantee"):
        with clipping_report() as report:
            watched = DPSGDRegressor(clip_norm=1.0, random_state=0).fit(X, y)
    assert report.total == 200  # one epoch: every per-example gradient once
    np.testing.assert_array_equal(plain.coef_, watched.coef_)  # the fit is unchanged


@pytest.mark.parametrize("clip_norm,expected", [(1e-9, 1.0), (1e9, 0.0)])
def test_clipping_report_counts(clip_norm, expected):
    X, y = _data("DPSGDRegressor", 200)
    y = y + 1.0  # no zero gradient at the start
    with pytest.warns(PrivacyLeakWarning), clipping_report() as report:
        DPSGDRegressor(clip_norm=clip_norm, random_state=0).fit(X, y)
    assert report.fraction == expected


def test_clipping_report_sees_dp_ssgd_row_by_row_clipping():
    X, y = _data("DPAMBSSGDRegressor", 500)
    with pytest.warns(PrivacyLeakWarning), clipping_report() as report:
        DPAMBSSGDRegressor(variant="ssgd", clip_norm=1e-9, random_state=0).fit(X, y + 1.0)
    assert report.total == 500 and report.clipped == 500
