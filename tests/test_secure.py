"""Secure mode works for every estimator: OS entropy for every fit, user seeds refused."""

import os
import subprocess
import sys

import joblib
import numpy as np
import pytest
from sklearn.model_selection import GridSearchCV
from test_hostile import ESTIMATORS, RELEASES, _data, _fit

import skdp.mechanisms._random as random_module
from skdp.linear_model import DPSGDRegressor
from skdp.mechanisms import secure_mode


@pytest.fixture
def entropy_calls(monkeypatch):
    """Count the draws from the OS CSPRNG."""
    calls = []
    real = random_module.secrets.randbits

    def counting(k):
        calls.append(k)
        return real(k)

    monkeypatch.setattr(random_module.secrets, "randbits", counting)
    return calls


def _release(est):
    return np.concatenate([np.ravel(getattr(est, a)) for a in RELEASES
                           if getattr(est, a, None) is not None])


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_every_estimator_fits_in_secure_mode_from_os_entropy(name, entropy_calls):
    X, y = _data(name, ESTIMATORS[name][1])
    with secure_mode():
        first = _fit(name, X, y, est=ESTIMATORS[name][0]().set_params(random_state=None))
        second = _fit(name, X, y, est=ESTIMATORS[name][0]().set_params(random_state=None))
    assert len(entropy_calls) >= 2 and set(entropy_calls) == {256}
    a, b = _release(first), _release(second)
    assert np.all(np.isfinite(a))
    assert not np.array_equal(a, b)  # fresh noise: equal releases have probability 0


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_every_estimator_refuses_a_seed_in_secure_mode(name):
    X, y = _data(name, ESTIMATORS[name][1])
    with secure_mode(), pytest.raises(ValueError, match="Secure mode is on"):
        _fit(name, X, y)  # the ESTIMATORS factories pass random_state=0


def test_secure_mode_in_a_threaded_grid_search(entropy_calls):
    X, y = _data("DPSGDRegressor", 200)
    with secure_mode(), joblib.parallel_backend("threading"):
        GridSearchCV(DPSGDRegressor(), {"clip_norm": [0.5, 1.0]}, cv=2, n_jobs=2).fit(X, y)
    assert len(entropy_calls) == 2 * 2 + 1  # every fold of every candidate, and the refit


@pytest.mark.slow
def test_secure_mode_reaches_new_processes_through_the_environment():
    # A process started while secure mode is on (as joblib's process
    # workers are) refuses seeds from its first import.
    code = "from skdp.mechanisms import make_rng; make_rng(0)"
    with secure_mode():
        inside = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=False)
    after = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=False)
    assert inside.returncode != 0 and "Secure mode is on" in inside.stderr
    assert after.returncode == 0, after.stderr
    assert "SKDP_SECURE_MODE" not in os.environ
