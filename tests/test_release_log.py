"""The plumbing of the guarantee: every noise draw, recomposed, is what the fit claims.

Each fit below runs inside :func:`skdp.mechanisms.record_releases`, which
logs every noise draw (mechanism, sensitivity, std, the weight bound it
assumed, a fingerprint of the generator state, the part of the rows it
reads). Two properties are checked, for every public estimator and the
private search, across weights, ``max_weight``, every kind of
``random_state``, clones, pickles, Pipeline(memory), threads, processes and
Dask:

1. The GDP parameter recomposed from the draws, with each row's real
   maximal weight (``max_weight`` with sample weights, 1 without), equals
   ``privacy_spent_.mu``. A fit that scaled its noise for weights its rows
   do not have (issue 22, item 1) recomposes to more than it claims.
2. No two draws charged to one ledger come from one generator state (no
   shared noise; issue 22, items 2-4).

These are exact identities, not statistics: the tolerance is float rounding.
"""

from __future__ import annotations

import copy
import pickle
import pickletools
import threading
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.pipeline import Pipeline

from skdp.accounting import BudgetAccountant
from skdp.decomposition import DPPCA
from skdp.density import PrivateGaussianDensity
from skdp.linear_model import (
    AdaSSPRegressor,
    DPAMBSSGDRegressor,
    DPLinearRegressionGD,
    DPSGDClassifier,
    DPSGDRegressor,
)
from skdp.mechanisms import composed_mu, make_rng, record_releases, secure_mode
from skdp.model_selection import DPGridSearchCV, DPRandomizedSearchCV
from skdp.moments import StreamingMomentEstimator
from skdp.preprocessing import DPStandardScaler

N = 3000


def _data(n=N, p=3, seed=0, classes=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    y = X @ np.array([1.0, -0.5, 0.25][:p]) + 0.5 * rng.normal(size=n)
    if classes:
        y = (y > 0).astype(int)
    return X, y


# name -> (factory(**params), supervised, classes, takes sample_weight)
ESTIMATORS = {
    "DPLinearRegressionGD": (lambda **kw: DPLinearRegressionGD(n_iter=40, **kw), True, False, True),
    "DPLinearRegressionGD(bounds)": (lambda **kw: DPLinearRegressionGD(
        bounds_X=(-4, 4), bounds_y=(-8, 8), n_iter=40, **kw), True, False, True),
    "AdaSSPRegressor": (lambda **kw: AdaSSPRegressor(**kw), True, False, True),
    "DPSGDRegressor": (lambda **kw: DPSGDRegressor(epochs=2, **kw), True, False, True),
    "DPSGDRegressor(independent, adam)": (lambda **kw: DPSGDRegressor(
        noise="independent", optimizer="adam", private_moments="independent", **kw),
        True, False, True),
    "DPSGDClassifier": (lambda **kw: DPSGDClassifier(classes=[0, 1], **kw), True, True, True),
    "DPAMBSSGDRegressor": (lambda **kw: DPAMBSSGDRegressor(**kw), True, False, False),
    "DPAMBSSGDRegressor(ssgd)": (lambda **kw: DPAMBSSGDRegressor(variant="ssgd", clip_norm=2.0,
                                                                 **kw), True, False, False),
    "DPStandardScaler": (lambda **kw: DPStandardScaler(**kw), False, False, True),
    "DPStandardScaler(bounds)": (lambda **kw: DPStandardScaler(bounds=(-4, 4), **kw),
                                 False, False, True),
    "DPPCA": (lambda **kw: DPPCA(n_components=2, **kw), False, False, True),
    "StreamingMomentEstimator": (lambda **kw: StreamingMomentEstimator(**kw), False, False, True),
    "StreamingMomentEstimator(per_row)": (lambda **kw: StreamingMomentEstimator(
        release="per_row", norm_bound=4.0, **kw), False, False, False),
    "PrivateGaussianDensity": (lambda **kw: PrivateGaussianDensity(**kw), False, False, True),
}


def _fit(est, name, sample_weight=None, seed=0):
    _, supervised, classes, _ = ESTIMATORS[name]
    X, y = _data(seed=seed, classes=classes)
    if name.endswith("(per_row)"):
        X = X[:200]
    kwargs = {} if sample_weight is None else {"sample_weight": sample_weight}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, y, **kwargs) if supervised else est.fit(X, **kwargs)


def _same_release(a, b) -> bool:
    """Whether two fits released the same float arrays (their fitted attributes)."""
    released = [k for k, v in vars(a).items() if k.endswith("_") and not k.startswith("_")
                and isinstance(v, np.ndarray) and v.dtype.kind == "f"]
    assert released
    return all(np.array_equal(getattr(a, k), getattr(b, k)) for k in released)


def _check_log(log, spent_mu, row_weight):
    assert log, "no release was recorded"
    assert composed_mu(log, row_weight) == pytest.approx(spent_mu, rel=1e-9)
    streams = [r.stream for r in log if r.stream is not None]
    assert len(streams) == len(set(streams)), "two draws share a generator state"


_WEIGHT_CASES = [(0.5, False), (0.5, True), (1.0, False), (1.0, True), (2.0, False), (2.0, True)]


@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("max_weight,weighted", _WEIGHT_CASES)
def test_recomposed_mu_equals_the_claim_for_every_weight_bound(name, max_weight, weighted):
    factory, _, _, takes_weights = ESTIMATORS[name]
    if weighted and not takes_weights:
        pytest.skip("no sample_weight")
    if not takes_weights and max_weight != 1.0:
        pytest.skip("no max_weight")
    params = {"max_weight": max_weight} if takes_weights else {}
    w = None
    if weighted:
        w = np.random.default_rng(1).uniform(0.2, 1.0, size=N) * max_weight
        if name.endswith("(per_row)"):
            w = w[:200]
    with record_releases() as log:
        est = _fit(factory(random_state=0, **params), name, w)
    # The real bound on a row's weight: max_weight with weights, 1 without.
    _check_log(log, est.privacy_spent_.mu, max_weight if weighted else 1.0)


@pytest.mark.parametrize("name", ["DPStandardScaler(bounds)", "DPLinearRegressionGD(bounds)",
                                  "AdaSSPRegressor", "DPSGDRegressor", "DPPCA",
                                  "PrivateGaussianDensity"])
def test_max_weight_below_one_without_weights_does_not_shrink_the_noise(name):
    # Issue 22, item 1: rows without weights weigh 1, so max_weight < 1 must
    # not scale the noise down. The fit equals the max_weight=1 fit exactly.
    factory = ESTIMATORS[name][0]
    a = _fit(factory(random_state=3, max_weight=0.5), name)
    b = _fit(factory(random_state=3, max_weight=1.0), name)
    for attr in ("coef_", "mean_", "scale_", "components_", "covariance_"):
        if hasattr(b, attr):
            np.testing.assert_array_equal(getattr(a, attr), getattr(b, attr))
    assert a.privacy_spent_ == b.privacy_spent_


def test_scaler_noise_of_the_issue_is_that_of_max_weight_one():
    X = np.random.default_rng(0).uniform(size=(1000, 1))
    half = DPStandardScaler(bounds=(0, 1), max_weight=0.5, random_state=0).fit(X)
    one = DPStandardScaler(bounds=(0, 1), max_weight=1.0, random_state=0).fit(X)
    assert half.noise_stds_[0] == one.noise_stds_[0]
    weighted = DPStandardScaler(bounds=(0, 1), max_weight=0.5, random_state=0).fit(
        X, sample_weight=np.full(1000, 0.5))
    assert weighted.noise_stds_[0] == pytest.approx(0.5 * one.noise_stds_[0])


@pytest.mark.parametrize("kind", ["none", "int", "generator", "randomstate"])
@pytest.mark.parametrize("name", ["DPLinearRegressionGD", "DPSGDRegressor", "DPStandardScaler",
                                  "StreamingMomentEstimator", "DPAMBSSGDRegressor"])
def test_every_random_state_kind_clone_and_pickle_under_one_ledger(name, kind):
    # Two clones, and a pickled copy, fitted on the same rows under one
    # accountant: three charges, three independent noise streams.
    state = {"none": None, "int": 7, "generator": np.random.default_rng(7),
             "randomstate": np.random.RandomState(7)}[kind]
    acc = BudgetAccountant(epsilon=10.0, delta=1e-5)
    est = ESTIMATORS[name][0](random_state=state, accountant=acc)
    copies = [clone(est), clone(est), pickle.loads(pickle.dumps(est))]
    with record_releases() as log:
        fitted = [_fit(c, name) for c in copies]
    assert len(acc.ledger) == 3
    streams = [r.stream for r in log if r.stream is not None]
    assert len(streams) == len(set(streams)), "clones charged to one ledger share noise"
    first = [r for r in log]
    assert composed_mu(first[: len(first) // 3]) == pytest.approx(
        fitted[0].privacy_spent_.mu, rel=1e-9)


def test_one_int_seed_reproduces_without_a_ledger_and_not_under_one():
    X, y = _data()
    a = DPLinearRegressionGD(n_iter=40, random_state=5).fit(X, y)
    b = DPLinearRegressionGD(n_iter=40, random_state=5).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)  # a seed reproduces the noise
    acc = BudgetAccountant(epsilon=10.0, delta=1e-5)
    c = DPLinearRegressionGD(n_iter=40, random_state=5, accountant=acc).fit(X, y)
    d = DPLinearRegressionGD(n_iter=40, random_state=5, accountant=acc).fit(X, y)
    assert not np.array_equal(c.coef_, d.coef_)
    # ...and a rerun of the same program (a fresh ledger) reproduces both.
    acc2 = BudgetAccountant(epsilon=10.0, delta=1e-5)
    np.testing.assert_array_equal(
        DPLinearRegressionGD(n_iter=40, random_state=5, accountant=acc2).fit(X, y).coef_, c.coef_)


def test_clones_of_one_generator_on_neighbouring_tables_do_not_reveal_the_row():
    # Issue 22, item 3: with shared noise, the difference of two releases on
    # neighbouring tables is the difference of the data, exactly.
    X = np.random.default_rng(0).uniform(size=(1000, 1))
    X2 = X.copy()
    X2[0, 0] = 1.0 - X[0, 0]
    acc = BudgetAccountant(epsilon=2.0, delta=1e-5)
    base = DPStandardScaler(bounds=(0, 1), accountant=acc, random_state=np.random.default_rng(1))
    m1 = clone(base).fit(X).mean_[0]
    m2 = clone(base).fit(X2).mean_[0]
    exact = (X2[0, 0] - X[0, 0]) / 1000
    noise_sd = base.set_params(accountant=None).fit(X).noise_stds_[0] / 1000
    assert abs((m2 - m1) - exact) > 1e-3 * noise_sd


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_clones_of_one_generator_draw_their_own_noise_without_an_accountant(name):
    # clone deep-copied a Generator, so without a ledger entry to tell their
    # charges apart two clones added the same noise: fitted on the same rows
    # they released the same numbers. Clones now share the Generator object.
    rng = np.random.default_rng(7)
    est = ESTIMATORS[name][0](random_state=rng)
    a, b = clone(est), clone(est)
    assert a.random_state is rng and b.random_state is rng
    assert not _same_release(_fit(a, name), _fit(b, name))


def test_a_search_gives_every_fit_its_own_long_seed():
    # 32-bit seeds collided with probability about N**2 / 2**33 over N fits (two
    # fits adding the same noise); the seeds are 128-bit and distinct.
    from skdp.model_selection import DPGridSearchCV
    search = DPGridSearchCV(DPStandardScaler(bounds=(0, 1)), {"with_std": [True, False]})
    states = search._states(np.random.default_rng(0), 500, [{"with_std": True}])
    seeds = [s for step in states for s in step]
    assert len(set(seeds)) == len(seeds) and max(seeds) >= 2**64


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_a_seed_make_rng_refuses_fails_before_the_charge(name):
    # A bool seed passed the parameter check and a seed in secure mode is refused,
    # but make_rng raised only after the ledger was charged (budget spent for nothing).
    for seed, secure in ((True, False), (3, True)):
        acc = BudgetAccountant(epsilon=10.0, delta=1e-5)
        est = ESTIMATORS[name][0](random_state=seed, accountant=acc)
        with pytest.raises((TypeError, ValueError), match="random_state"), \
                (secure_mode() if secure else warnings.catch_warnings()):
            _fit(est, name)
        assert acc.ledger == []


def _pickled_globals(obj) -> set[str]:
    names = set()
    data = pickle.dumps(obj)
    strings = []
    for op, arg, _ in pickletools.genops(data):
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE"):
            strings.append(arg)
        if op.name == "GLOBAL":
            names.add(arg.replace(" ", "."))
        if op.name == "STACK_GLOBAL" and len(strings) >= 2:
            names.add(f"{strings[-2]}.{strings[-1]}")
    return names


def _carries_a_generator(obj) -> bool:
    return any("numpy.random" in g and ("generator" in g.lower() or "mtrand" in g.lower()
                                        or "pickle" in g.lower()) for g in _pickled_globals(obj))


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_pickles_never_carry_a_generator(name):
    # Issue 22, item 2: a Generator's post-fit state, rewound, replays the noise.
    est = _fit(ESTIMATORS[name][0](random_state=np.random.default_rng(0)), name)
    assert not _carries_a_generator(est)
    back = pickle.loads(pickle.dumps(est))
    assert back.random_state is None
    assert copy.deepcopy(est).random_state is None
    assert not _carries_a_generator(ESTIMATORS[name][0](random_state=np.random.RandomState(0)))


def test_pickle_of_a_generator_fitted_scaler_no_longer_gives_back_the_means():
    # The issue's attack: rewind the pickled generator and replay the noise.
    X = np.random.default_rng(0).uniform(size=(5000, 2))
    scaler = DPStandardScaler(epsilon=0.1, bounds=(0, 1),
                              random_state=np.random.default_rng()).fit(X)
    back = pickle.loads(pickle.dumps(scaler))
    assert not isinstance(back.random_state, np.random.Generator)


def _search(estimator, grid, **kw):
    return DPGridSearchCV(estimator, grid, epsilon=10.0, delta=1e-5, cv=0.3, **kw)


def test_search_pickle_and_best_estimator_hold_no_live_generator():
    X, y = _data()
    search = _search(DPSGDRegressor(), {"learning_rate": [0.01, 0.1]},
                     random_state=np.random.default_rng(0)).fit(X, y)
    assert not _carries_a_generator(search)
    assert pickle.loads(pickle.dumps(search)).random_state is None
    assert search.best_estimator_._state is None
    assert search.best_estimator_.random_state is None
    with pytest.raises(RuntimeError, match="private search"):
        search.best_estimator_.partial_fit(X[:100], y[:100])


def _search_mu(log, n_candidates, refit=True):
    """The search's mu from its log: (candidate, split, train/validation) parts.

    With one hold-out split a row is in the training part or in the
    validation part of every candidate, so the selection's mu**2 is the
    larger of the two parts' sums over candidates; the refit reads all rows.
    """
    def label(part):  # the search's (candidate, split, kind), possibly around a step's own
        if isinstance(part, tuple) and len(part) == 2 and isinstance(part[0], tuple):
            part = part[0]
        if isinstance(part, tuple) and len(part) == 3 and part[2] in ("train", "validation"):
            return part
        return None  # the refit: all rows (a single call of a step, if it names one)

    train = val = whole = 0.0
    for r in log:
        mu2 = r.mu ** 2
        part = label(r.part)
        if part is None:
            whole += mu2
        elif part[2] == "train":
            train += mu2
        else:
            val += mu2
    return np.sqrt(whole + max(train, val))


def test_search_composes_exactly_and_its_pipeline_steps_draw_independent_noise(tmp_path):
    # Issue 22, item 4: Pipeline(memory=...) clones its steps; with one
    # generator shared by the steps, the scaler and the regressor started
    # from the same state.
    X, y = _data()
    pipe = Pipeline([("scale", DPStandardScaler(bounds=(-4, 4))),
                     ("reg", DPLinearRegressionGD(n_iter=40))], memory=str(tmp_path))
    acc = BudgetAccountant(epsilon=20.0, delta=1e-5)
    with record_releases() as log, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = _search(pipe, {"reg__clip_norm": [None, 5.0]}, random_state=0,
                         accountant=acc).fit(X, y)
    streams = [r.stream for r in log if r.stream is not None]
    assert len(streams) == len(set(streams))
    assert _search_mu(log, 2) == pytest.approx(search.privacy_spent_.mu, rel=1e-9)


def test_search_with_threads_draws_independent_noise():
    X, y = _data()
    with record_releases() as log, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from joblib import parallel_backend
        with parallel_backend("threading", n_jobs=2):
            search = _search(DPLinearRegressionGD(n_iter=40), {"clip_norm": [None, 5.0, 9.0]},
                             random_state=0, n_jobs=2).fit(X, y)
    streams = [r.stream for r in log if r.stream is not None]
    assert len(streams) == len(set(streams))
    assert _search_mu(log, 3) == pytest.approx(search.privacy_spent_.mu, rel=1e-9)


def test_randomized_search_with_kfold_composes_exactly():
    # k-fold: each row is validated once and trained on k - 1 times per
    # candidate; the worst row's sum is the same for every row here.
    X, y = _data()
    with record_releases() as log, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = DPRandomizedSearchCV(DPLinearRegressionGD(n_iter=40),
                                      {"clip_norm": [None, 5.0, 9.0]}, n_iter=2, cv=3,
                                      epsilon=10.0, delta=1e-5, random_state=0).fit(X, y)
    streams = [r.stream for r in log if r.stream is not None]
    assert len(streams) == len(set(streams))
    whole, by_split = 0.0, {}
    for r in log:
        part = r.part[0] if isinstance(r.part, tuple) and isinstance(r.part[0], tuple) \
            else r.part
        if part is None or not (isinstance(part, tuple) and len(part) == 3):
            whole += r.mu ** 2
        else:
            by_split[part[1:]] = by_split.get(part[1:], 0.0) + r.mu ** 2
    # A row validated in split f is trained on in every other split.
    worst = max(by_split[(f, "validation")] + sum(by_split[(j, "train")] for j in range(3)
                                                  if j != f) for f in range(3))
    assert np.sqrt(whole + worst) == pytest.approx(search.privacy_spent_.mu, rel=1e-9)


def test_search_does_not_modify_estimators_given_as_grid_values():
    # Issue 22, item 5: each candidate build set the DPPCA's epsilon to a
    # share of its already reduced value.
    X, y = _data()
    pca = DPPCA(n_components=2)
    reg_a, reg_b = DPLinearRegressionGD(n_iter=40), AdaSSPRegressor()
    pipe = Pipeline([("scale", DPStandardScaler(bounds=(-4, 4))), ("pca", "passthrough"),
                     ("reg", DPLinearRegressionGD(n_iter=40))])
    grid = {"pca": ["passthrough", pca], "reg": [reg_a, reg_b]}
    acc = BudgetAccountant(epsilon=30.0, delta=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = _search(pipe, grid, random_state=0, accountant=acc).fit(X, y)
    assert pca.epsilon == 1.0 and reg_a.epsilon == 1.0 and reg_b.epsilon == 1.0
    assert pca.accountant is None and reg_a.random_state is None
    assert not hasattr(pca, "components_") and not hasattr(reg_a, "coef_")
    assert all(v is grid[k][grid[k].index(v)] for k, v in search.best_params_.items())
    assert len(acc.ledger) == 1
    # The refitted winner gets the refit's share of the budget, whatever the grid.
    winner = search.best_estimator_
    steps = [s for _, s in winner.steps if hasattr(s, "epsilon")]
    from skdp.accounting import mu_from_epsilon_delta
    mus = [mu_from_epsilon_delta(s.epsilon, s.delta) for s in steps]
    assert np.sqrt(np.sum(np.square(mus))) == pytest.approx(
        search.refit_privacy_.mu, rel=1e-6)


def test_an_infeasible_grid_fails_before_the_charge_even_with_estimator_values():
    X, y = _data()
    acc = BudgetAccountant(epsilon=1.0, delta=1e-5)
    pipe = Pipeline([("pca", "passthrough"), ("reg", DPLinearRegressionGD())])
    grid = {"pca": ["passthrough", DPPCA(n_components=2, delta=0.5)],
            "reg__clip_norm": [None, 100.0, 1000.0]}
    with pytest.raises(ValueError):
        DPGridSearchCV(pipe, grid, epsilon=1e-3, delta=1e-5, accountant=acc,
                       random_state=0).fit(X, y)
    assert acc.ledger == []


def test_threads_fitting_clones_under_one_ledger_draw_independent_noise():
    acc = BudgetAccountant(epsilon=20.0, delta=1e-5)
    base = DPSGDRegressor(random_state=np.random.default_rng(3), accountant=acc)
    copies = [clone(base) for _ in range(4)]
    with record_releases() as log:
        threads = [threading.Thread(target=_fit, args=(c, "DPSGDRegressor")) for c in copies]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(acc.ledger) == 4
    streams = [r.stream for r in log if r.stream is not None]
    assert len(streams) == len(set(streams))
    coefs = {tuple(c.coef_) for c in copies}
    assert len(coefs) == 4


def test_worker_processes_charged_to_one_ledger_draw_independent_noise():
    # joblib's process backend pickles the estimators (and the accountant,
    # whose ledger moves to a shared file): the same int seed in four worker
    # processes gives four ledger entries, hence four independent noises.
    from joblib import Parallel, delayed

    X, y = _data()
    acc = BudgetAccountant(epsilon=20.0, delta=1e-5)
    est = DPLinearRegressionGD(n_iter=40, random_state=11, accountant=acc)
    coefs = Parallel(n_jobs=2, backend="loky")(
        delayed(lambda e: clone(e).fit(X, y).coef_)(est) for _ in range(4))
    assert len(acc.ledger) == 4
    assert len({tuple(c) for c in coefs}) == 4


def test_make_rng_never_returns_the_callers_generator():
    g = np.random.default_rng(0)
    assert make_rng(g) is not g
    state = copy.deepcopy(g.bit_generator.state)
    make_rng(g)
    assert g.bit_generator.state != state  # successive fits differ
