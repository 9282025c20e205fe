"""Processes made by os.fork: they inherit generators and live streams without a pickle.

A nineteenth review (session 19) found that two forked workers continuing one
stream (an estimator at module level, used from a fork-started pool) added the
same noise to neighbouring batches: the difference of their releases was the
difference of the rows. A Generator ``random_state`` inherited by two workers
gave two fits the same noise in the same way.
"""

import multiprocessing
import os
import warnings

import numpy as np
import pytest

from skdp.density import PrivateGaussianDensity
from skdp.linear_model import DPAMBSSGDRegressor, DPLinearRegressionGD, DPSGDRegressor
from skdp.moments import StreamingMomentEstimator
from skdp.preprocessing import DPStandardScaler

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")

RNG = np.random.default_rng(0)
X = RNG.uniform(-1, 1, size=(4000, 2))
Y = X @ np.array([1.0, -1.0])

STREAMS = {
    "moments": lambda: StreamingMomentEstimator(epsilon=1.0, norm_bound=2.0, random_state=0),
    "density": lambda: PrivateGaussianDensity(epsilon=1.0, norm_bound=2.0, random_state=0),
    "scaler": lambda: DPStandardScaler(epsilon=1.0, bounds=(-1, 1), random_state=0),
    "dpsgd": lambda: DPSGDRegressor(epsilon=1.0, clip_norm=1.0, bounds_X=(-1, 1),
                                    bounds_y=(-3, 3), batch_size=100, random_state=0),
    "ambssgd": lambda: DPAMBSSGDRegressor(epsilon=1.0, x_norm=2.0, random_state=0),
}
_LIVE = {}  # the parent's live streams, inherited by the forked child


def _needs_y(name):
    return name in ("dpsgd", "ambssgd")


def _continue(name):
    est = _LIVE[name]
    rows = slice(2000, 3000)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.partial_fit(X[rows], Y[rows]) if _needs_y(name) else est.partial_fit(X[rows])
    except RuntimeError as exc:
        return str(exc)
    return "continued"


def _fork_pool():
    return multiprocessing.get_context("fork").Pool(1)


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_a_forked_copy_of_a_live_stream_refuses_to_continue_and_the_parent_goes_on(name):
    est = STREAMS[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.partial_fit(X[:2000], Y[:2000]) if _needs_y(name) else est.partial_fit(X[:2000])
    _LIVE[name] = est
    try:
        with _fork_pool() as pool:
            outcome = pool.apply(_continue, (name,))
    finally:
        del _LIVE[name]
    assert "inherited by os.fork" in outcome
    # The process that started the stream continues it.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.partial_fit(X[2000:3000], Y[2000:3000]) if _needs_y(name) else \
            est.partial_fit(X[2000:3000])
    # A stream started in the child is the child's own (fit starts a new one).
    _LIVE[name] = STREAMS[name]()
    try:
        with _fork_pool() as pool:
            assert pool.apply(_continue, (name,)) == "continued"
    finally:
        del _LIVE[name]


_GENERATOR = {}


def _fit_with_inherited_generator(_):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPLinearRegressionGD(epsilon=1.0, random_state=_GENERATOR["rng"], bounds_X=(-1, 1),
                                    bounds_y=(-3, 3), clip_norm=1.0, n_iter=20).fit(X, Y).coef_


def test_forked_workers_that_inherit_one_generator_draw_different_noise():
    # Two workers given one Generator's state (fork copies it) drew the same seed from it:
    # the same noise on two fits. Each forked process now mixes its own entropy into the
    # seeds it draws. Equal coefficients would need equal noise (continuous draws).
    _GENERATOR["rng"] = np.random.default_rng(1)
    try:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(2) as pool:
            a, b = pool.map(_fit_with_inherited_generator, [0, 1], chunksize=1)
    finally:
        del _GENERATOR["rng"]
    assert not np.array_equal(a, b)
    # In the parent, a Generator stays reproducible: the same state gives the same fit.
    _GENERATOR["rng"] = np.random.default_rng(1)
    first = _fit_with_inherited_generator(0)
    _GENERATOR["rng"] = np.random.default_rng(1)
    np.testing.assert_array_equal(first, _fit_with_inherited_generator(0))
    del _GENERATOR["rng"]


def test_a_generator_passed_to_a_worker_with_each_task_gives_each_fit_its_own_noise():
    # The Generator is pickled with its state once per task: two tasks in one worker held
    # the same state, drew the same seed and added the same noise (twentieth review).
    rng = np.random.default_rng(2)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        a, b = pool.map(_fit_with_generator, [rng, rng], chunksize=1)
    assert not np.array_equal(a, b)


def _fit_with_generator(rng):
    _GENERATOR["rng"] = rng
    return _fit_with_inherited_generator(0)


def _secure_draw():
    from skdp.mechanisms import gaussian_release, make_rng, secure_mode

    with secure_mode():
        return float(np.sum(gaussian_release(np.zeros(3), 1.0, make_rng(), sensitivity=1.0)))


def test_a_fork_while_another_thread_draws_secure_noise_does_not_hang_the_child():
    # The secure pool's lock was copied held into the child, which then waited for it
    # forever (twentieth review). Holding it here stands for the other thread.
    from skdp.mechanisms import _discrete_gaussian

    with _discrete_gaussian._POOL_LOCK, _fork_pool() as pool:
        result = pool.apply_async(_secure_draw)
        assert np.isfinite(result.get(timeout=60))
