"""Secure mode: the exact discrete Gaussian sampler, grid releases, zCDP accounting, the attack."""

import contextlib
import math
import multiprocessing
import os
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats
from scipy.linalg import toeplitz

from skdp.accounting import (
    BudgetAccountant,
    budget_mu,
    epsilon_from_mu,
    epsilon_from_rho_tight,
    mu_from_epsilon_delta,
    rho_from_epsilon_delta,
    spent_epsilon,
)
from skdp.base import PrivacySpent, ZCDPPrivacySpent
from skdp.density import PrivateGaussianDensity
from skdp.linear_model import DPAMBSSGDRegressor, DPSGDRegressor
from skdp.mechanisms import (
    CorrelatedNoise,
    GridPlan,
    PlannedRelease,
    composed_mu,
    discrete_gaussian,
    gaussian_noise,
    gaussian_release,
    grid_release,
    make_rng,
    record_releases,
    secure_mode,
    symmetric_release,
)
from skdp.mechanisms import _discrete_gaussian as dg
from skdp.moments import StreamingMomentEstimator
from skdp.preprocessing import DPStandardScaler


def _source(seed):
    """A seeded byte source (the tests' stand-in for os.urandom)."""
    rng = np.random.default_rng(seed)
    return rng.bytes


# -- the sampler --------------------------------------------------------------

def _pmf(sigma2, support):
    logp = -support.astype(float) ** 2 / (2.0 * float(sigma2))
    p = np.exp(logp - logp.max())
    return p / p.sum()


@pytest.mark.parametrize("sigma2", [Fraction(1, 3), 1, 2, Fraction(49, 2), 400])
def test_discrete_gaussian_matches_its_pmf(sigma2):
    n = 100_000
    x = discrete_gaussian(sigma2, n, source=_source(1))
    assert x.dtype == np.int64
    sigma = math.sqrt(float(sigma2))
    edge = int(math.ceil(12 * sigma)) + 2           # mass beyond: below 1e-30
    support = np.arange(-edge, edge + 1)
    p = _pmf(sigma2, support)
    # Pool the tails so that every cell expects >= 20 draws (chi-square regime).
    keep = n * p >= 20
    lo, hi = support[keep][0], support[keep][-1]
    observed = np.array([np.sum(x <= lo)] + [np.sum(x == k) for k in range(lo + 1, hi)]
                        + [np.sum(x >= hi)])
    expected = n * np.array([p[support <= lo].sum()]
                            + [p[support == k][0] for k in range(lo + 1, hi)]
                            + [p[support >= hi].sum()])
    chi2 = float(np.sum((observed - expected) ** 2 / expected))
    df = observed.size - 1
    # chi2 ~ chi-square(df): mean df, sd sqrt(2 df); six sd is p < 1e-6.
    assert chi2 < df + 6 * math.sqrt(2 * df), (chi2, df)


@pytest.mark.parametrize("sigma2", [10**6, 10**14, 2**100])
def test_discrete_gaussian_large_scale_moments(sigma2):
    n = 50_000
    x = discrete_gaussian(sigma2, n, source=_source(2)).astype(float)
    sigma = math.sqrt(float(sigma2))
    # For sigma >> 1 the variance is sigma2 (to exp(-2 pi^2 sigma2)); the
    # sample mean has sd sigma / sqrt(n), the sample variance sd
    # sigma2 sqrt(2 / n): five sd each.
    assert abs(x.mean()) < 5 * sigma / math.sqrt(n)
    assert abs(x.var() / float(sigma2) - 1.0) < 5 * math.sqrt(2.0 / n)
    assert abs(stats.skew(x)) < 5 * math.sqrt(6.0 / n)


def test_discrete_gaussian_is_exact_and_refuses_floats():
    with pytest.raises(TypeError, match="Fraction"):
        discrete_gaussian(2.0, 3)
    with pytest.raises(ValueError):
        discrete_gaussian(0, 3)
    # Same bytes, same samples: the sampler is a function of its randomness only.
    a = discrete_gaussian(Fraction(7, 3), 1000, source=_source(3))
    b = discrete_gaussian(Fraction(7, 3), 1000, source=_source(3))
    assert np.array_equal(a, b)
    assert discrete_gaussian(5, (2, 3)).shape == (2, 3)


def test_exact_bernoulli_helpers():
    n = 200_000
    src = _source(4)
    # Bernoulli(num / den) with a denominator far beyond 64 bits.
    den = 3 * 10**40
    num = np.full(n, 10**40, dtype=object)
    hits = dg._bernoulli_big(num, np.full(n, den, dtype=object), src).mean()
    # Binomial: sd sqrt(p (1 - p) / n); five sd.
    assert abs(hits - 1 / 3) < 5 * math.sqrt(2 / 9 / n)
    # Bernoulli(exp(-gamma)) with gamma = 5/2: integer and fractional parts.
    p = math.exp(-2.5)
    hits = dg._bernoulli_exp_big(np.full(n, 5, dtype=object), 2, src).mean()
    assert abs(hits - p) < 5 * math.sqrt(p * (1 - p) / n)
    p = math.exp(-0.3)
    hits = dg._bernoulli_exp_fraction(np.full(n, 3), 10, src).mean()
    assert abs(hits - p) < 5 * math.sqrt(p * (1 - p) / n)


def test_discrete_gaussian_cost():
    # The benchmark's budget: about 1.5 us per sample in bulk.
    import time
    start = time.perf_counter()
    discrete_gaussian(10**12, 200_000)
    assert time.perf_counter() - start < 10.0


# -- grid releases ------------------------------------------------------------

def test_grid_release_is_on_the_grid_and_has_the_noise_it_claims():
    rng = np.random.default_rng(5)
    value = rng.normal(size=20_000) * 100
    std = np.where(np.arange(value.size) % 2 == 0, 0.5, 2.0)
    plan = GridPlan(std, value.shape, mechanism_mu=1.0)
    out = plan.release(value, plan.draw(source=_source(6)))
    steps = np.ldexp(1.0, plan.exponent)
    assert np.all(out / steps == np.round(out / steps))           # on the grid
    assert np.all(steps <= dg.GRID_SLACK * 1.0 / math.sqrt(value.size) * std)
    for s in (0.5, 2.0):
        resid = (out - value)[std == s]
        # The noise std is (1 + 2**-10) std plus the rounding (below a step);
        # the sample sd has relative sd 1 / sqrt(2 m): five of them.
        assert abs(resid.std() / (s * (1 + dg.GRID_SLACK)) - 1) < 5 / math.sqrt(2 * resid.size)


@pytest.mark.parametrize("shape,std,share", [((1,), 1.0, 1.0), ((50,), 0.01, 1.0),
                                             ((10, 10), 3.0, 0.5), ((7,), [1.0, 2, 3, 4, 5, 6, 7], 1.0)])
def test_grid_rounding_costs_no_privacy(shape, std, share):
    """The integers' worst-case zCDP, computed exactly, is within the Gaussian calibration.

    A block's neighbours whose whitened difference has norm ``share * mu``:
    after rounding, ``sum_i D_i**2 / sigma2_i`` (the discrete Gaussian's 2
    rho for this block) must be at most ``(share * mu)**2``, the block's part
    of the claim (GridPlan's proof). Checked on values near rounding ties
    and random directions.
    """
    mu = 0.7
    std = np.broadcast_to(np.asarray(std, dtype=float), shape)
    plan = GridPlan(std, shape, mechanism_mu=mu, share=share)
    steps = np.ldexp(1.0, plan.exponent)
    sigma2 = np.array(plan._sigma2, dtype=object)[plan._where].reshape(shape)
    rng = np.random.default_rng(7)
    worst = 0.0
    for _ in range(300):
        direction = rng.normal(size=shape)
        direction *= share * mu / np.linalg.norm(direction)      # whitened block difference
        a = rng.normal(size=shape) * 1e3 * steps + steps / 2      # near rounding ties
        b = a + direction * std
        D = np.rint(np.ldexp(a, -plan.exponent)) - np.rint(np.ldexp(b, -plan.exponent))
        two_rho = sum(Fraction(int(d)) ** 2 / s for d, s in zip(D.ravel(), sigma2.ravel()))
        worst = max(worst, float(two_rho))
    # The proof's bound for the block: ((share mu + sqrt(k) c) / (1 + s))**2 with
    # c = s mu share / sqrt(k), i.e. (share mu)**2 exactly.
    assert worst <= (share * mu) ** 2 * (1 + 1e-12)


def test_gaussian_release_in_both_modes():
    value = np.arange(5.0)
    plain = gaussian_release(value, 1.0, make_rng(0), sensitivity=1.0)
    assert np.array_equal(plain, value + make_rng(0).standard_normal(5))   # the draws of before
    with secure_mode():
        out = gaussian_release(value, 1.0, make_rng(None), sensitivity=1.0)
        assert out.shape == (5,)
        with pytest.raises(RuntimeError, match="grid"):
            gaussian_noise(1.0, 3, make_rng(None))
        with pytest.raises(ValueError, match="mechanism_mu"):
            gaussian_release(value, 1.0, make_rng(None))               # a block without its mu
        # A coordinate without noise is passed through (it has no sensitivity).
        out = gaussian_release(value, [1.0, 0, 1, 0, 1], make_rng(None), sensitivity=1.0)
        assert out[1] == 1.0 and out[3] == 3.0
        sym = symmetric_release(np.eye(3), 1.0, make_rng(None), sensitivity=1.0)
        assert np.array_equal(sym, sym.T)
        planned = PlannedRelease(1.0, 4, 3, make_rng(None), sensitivity=1.0)
        assert planned.add(2, np.zeros(3)).shape == (3,)


def test_correlated_stream_release_secure():
    """C x / std plus grid noise, then std C^{-1}: the default's estimator, on the grid."""
    x = np.random.default_rng(8).normal(size=(300, 2))
    with secure_mode():
        stream = CorrelatedNoise("nu", 2, make_rng(None), nu=0.1)
        parts = [stream.release(x[:1], 0.5, mechanism_mu=1.0),
                 stream.release(x[1:120], 0.5, mechanism_mu=1.0),
                 stream.release(x[120:], 0.5, mechanism_mu=1.0)]
        with pytest.raises(RuntimeError):
            stream.next(1)
    out = np.concatenate(parts)
    # The released steps' error is std [C^{-1} Z]_t (times 1 + 2**-10, plus
    # rounding far below a step): its per-step variance is known. Whitened
    # back by C (post-processing of the error), it is i.i.d. N(0, std**2):
    # the mean square of 600 entries has sd sqrt(2 / 600) = 0.058; five sd.
    first_column = CorrelatedNoise("nu", 2, make_rng(0), nu=0.1).coefficients(300)
    C = toeplitz(first_column, np.zeros(300))
    z = C @ (out - x) / 0.5
    assert abs(np.mean(z**2) - 1.0) < 5 * math.sqrt(2.0 / z.size)
    for kind in ("identity", "blt", "sqrt"):
        with secure_mode():
            s = CorrelatedNoise(kind, 2, make_rng(None), nu=0.01)
            assert s.release(x[:50], 1.0, mechanism_mu=1.0).shape == (50, 2)


def test_pool_is_emptied_in_a_forked_child():
    if not hasattr(os, "fork"):
        pytest.skip("no fork")
    dg._pooled_discrete_gaussian(12345, 10)
    assert 12345 in dg._POOL
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(1) as pool:
        assert pool.apply(_pool_keys) == []


def _pool_keys():
    return list(dg._POOL)


# -- accounting ---------------------------------------------------------------

@pytest.mark.parametrize("mu", [0.05, 0.3, 1.0, 4.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-9])
def test_zcdp_conversion_against_dp_accounting(mu, delta):
    dp_accounting = pytest.importorskip("dp_accounting")
    acc = dp_accounting.rdp.RdpAccountant()
    acc.compose(dp_accounting.GaussianDpEvent(1.0 / mu))       # Renyi alpha mu^2 / 2
    ours = epsilon_from_rho_tight(mu * mu / 2, delta)
    theirs = acc.get_epsilon(delta)
    # Same conversion; dp-accounting minimises over a grid of orders, we over
    # a continuum: ours is no larger, and close (their grid is coarse at large orders).
    assert ours <= theirs * (1 + 1e-9)
    assert ours >= theirs * (1 - 0.05)
    # zCDP is weaker than GDP: the same mu costs more epsilon.
    assert ours > epsilon_from_mu(mu, delta)


@pytest.mark.parametrize("sigma", [2.0, 5.0, 20.0])
def test_zcdp_claim_covers_the_exact_discrete_gaussian_curve(sigma):
    """dp-accounting's privacy-loss distribution of the discrete Gaussian is within our claim."""
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as pld
    exact = pld.from_discrete_gaussian_mechanism(sigma, sensitivity=1)
    for delta in (1e-3, 1e-6):
        claimed = epsilon_from_rho_tight(1.0 / (2 * sigma**2), delta)
        assert exact.get_epsilon_for_delta(delta) <= claimed


def test_budget_round_trip_in_both_modes():
    for eps, delta in [(0.5, 1e-6), (1.0, 1e-5), (8.0, 1e-7)]:
        assert budget_mu(eps, delta) == mu_from_epsilon_delta(eps, delta)
        with secure_mode():
            mu = budget_mu(eps, delta)
            assert mu == pytest.approx(math.sqrt(2 * rho_from_epsilon_delta(eps, delta)))
            assert mu < mu_from_epsilon_delta(eps, delta)
            assert spent_epsilon(mu, delta) <= eps
            assert spent_epsilon(mu, delta) == pytest.approx(eps, rel=1e-8)
    spent = PrivacySpent.of(1.0, 1e-6, zcdp=True)
    assert isinstance(spent, ZCDPPrivacySpent) and spent.notion == "zCDP" and spent.rho == 0.5
    assert PrivacySpent.of(1.0, 1e-6).notion == "GDP"
    eps, delta, mu = spent                    # still a 3-tuple
    assert mu == 1.0


def test_accountant_reads_a_ledger_with_a_secure_charge_as_zcdp():
    acc = BudgetAccountant(epsilon=4.0, delta=1e-6)
    acc.charge_mu(0.3)
    gdp_eps = acc.spent()[0]
    assert gdp_eps == pytest.approx(epsilon_from_mu(0.3, 1e-6))
    with secure_mode():
        acc.charge_mu(0.3)
    assert acc.ledger[1].zcdp and not acc.ledger[0].zcdp
    mu = math.hypot(0.3, 0.3)
    assert acc.spent()[0] == pytest.approx(epsilon_from_rho_tight(mu * mu / 2, 1e-6))
    left = acc.remaining_mu()
    assert left == pytest.approx(math.sqrt(2 * rho_from_epsilon_delta(4.0, 1e-6) - mu * mu))
    from skdp.exceptions import BudgetExceededError
    with pytest.raises(BudgetExceededError):
        acc.charge_mu(left * 1.01)
    acc.charge_mu(left * 0.999)


# -- every estimator ----------------------------------------------------------

def _estimators():
    from skdp.decomposition import DPPCA
    from skdp.density import PrivateGaussianDensity
    from skdp.linear_model import (
        AdaSSPRegressor,
        DPAMBSSGDRegressor,
        DPLinearRegressionGD,
        DPSGDClassifier,
        DPSGDRegressor,
    )
    from skdp.model_selection import DPGridSearchCV, DPRandomizedSearchCV
    from skdp.moments import StreamingMomentEstimator
    from skdp.preprocessing import DPStandardScaler
    reg = "reg"
    return [
        ("DPLinearRegressionGD", lambda: DPLinearRegressionGD(), reg),
        ("DPLinearRegressionGD bounds", lambda: DPLinearRegressionGD(
            bounds_X=(-4, 4), bounds_y=(-12, 12), ci_method="checkpoints"), reg),
        ("AdaSSPRegressor", lambda: AdaSSPRegressor(), reg),
        ("DPAMBSSGDRegressor", lambda: DPAMBSSGDRegressor(), reg),
        ("DPSGDRegressor nu", lambda: DPSGDRegressor(), reg),
        ("DPSGDRegressor sqrt 2 epochs", lambda: DPSGDRegressor(nu=0.0, epochs=2), reg),
        ("DPSGDRegressor adam jme", lambda: DPSGDRegressor(optimizer="adam",
                                                           private_moments="jme"), reg),
        ("DPSGDRegressor independent", lambda: DPSGDRegressor(noise="independent"), reg),
        ("DPSGDClassifier", lambda: DPSGDClassifier(), "clf"),
        ("DPStandardScaler", lambda: DPStandardScaler(), None),
        ("PrivateGaussianDensity", lambda: PrivateGaussianDensity(), None),
        ("DPPCA", lambda: DPPCA(n_components=2), None),
        ("StreamingMomentEstimator", lambda: StreamingMomentEstimator(), None),
        ("StreamingMomentEstimator per_row", lambda: StreamingMomentEstimator(
            release="per_row"), None),
        ("StreamingMomentEstimator pp", lambda: StreamingMomentEstimator(
            method="pp", release="per_row"), None),
        ("DPGridSearchCV", lambda: DPGridSearchCV(DPLinearRegressionGD(), {"n_iter": [20, 40]},
                                                  cv=2), reg),
        ("DPRandomizedSearchCV", lambda: DPRandomizedSearchCV(
            DPSGDClassifier(), {"learning_rate": [0.01, 0.1]}, n_iter=2, cv=2), "clf"),
    ]


@pytest.mark.parametrize("name,make,target", _estimators(), ids=[e[0] for e in _estimators()])
def test_every_estimator_fits_in_secure_mode_with_the_claimed_zcdp(name, make, target):
    rng = np.random.default_rng(9)
    X = rng.normal(size=(4000, 3))
    y = X @ np.array([1.0, -1.0, 0.5]) + rng.normal(size=4000)
    args = (X,) if target is None else (X, y if target == "reg" else (y > 0).astype(int))
    with secure_mode(), record_releases() as log, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = make().fit(*args)
    spent = est.privacy_spent_
    assert isinstance(spent, ZCDPPrivacySpent)
    assert spent.epsilon <= est.epsilon * (1 + 1e-9)
    assert spent.mu == pytest.approx(budget_mu_secure(est.epsilon, est.delta), rel=1e-9)
    # Every release was recorded, none made with floating-point noise, and
    # the log recomposes to no more than the claim (a search's folds are parallel).
    assert log and all(r.stream is None for r in log)
    assert composed_mu(log) <= spent.mu * (1 + 1e-9)
    # The estimate is still an estimate (same code path after the release).
    if target == "reg":
        assert np.isfinite(est.predict(X[:5])).all()


def budget_mu_secure(epsilon, delta):
    with secure_mode():
        return budget_mu(epsilon, delta)


# -- the floating-point attack ------------------------------------------------

def _neighbours(x: np.ndarray, k: int) -> list[np.ndarray]:
    out, up, down = [x], x, x
    for _ in range(k):
        up, down = np.nextafter(up, np.inf), np.nextafter(down, -np.inf)
        out += [up, down]
    return out


def _possible_from_zero(outputs: np.ndarray, std: float) -> np.ndarray:
    """Whether each double could be ``0 + fl(std * z)`` for some double z (numpy's default path).

    fl(std * z) is monotone in z, so a preimage, if there is one, is within a
    few units in the last place of ``outputs / std``.
    """
    guess = outputs / std
    return np.any([std * z == outputs for z in _neighbours(guess, 4)], axis=0)


@pytest.mark.slow
def test_floating_point_attack_succeeds_by_default_and_fails_in_secure_mode():
    """Mironov-style: the doubles a release can take on input 0 rule out input 0.

    A count is 0 on one dataset and 1 on its neighbour (sensitivity 1); the
    release adds noise of std 3 (mu = 1/3, epsilon 1.2 at delta 1e-6). On
    the default path, ``0 + fl(3 z)`` can only be a double of the form
    fl(3 z); ``1 + fl(3 z)`` often is not, and then the attacker knows the
    count is 1 with certainty: an event of probability 0 on one input and
    several percent on the other, which no (epsilon, 1e-6)-DP mechanism
    allows. In secure mode both inputs give multiples of the public grid
    step, every one of which has positive probability on both: the test
    never fires.
    """
    std, trials = 3.0, 4000
    rng = make_rng(10)
    default0 = np.array([gaussian_release(0.0, std, rng, sensitivity=1.0) for _ in range(trials)])
    default1 = np.array([gaussian_release(1.0, std, rng, sensitivity=1.0) for _ in range(trials)])
    assert _possible_from_zero(default0, std).all()          # never wrong about input 0
    caught = np.mean(~_possible_from_zero(default1, std))
    # Observed about 5%; the bound below is many binomial sd (sqrt(0.05 * 0.95 / 4000)
    # = 0.0034) under it and far above delta = 1e-6.
    assert caught > 0.02
    with secure_mode():
        secure1 = np.array([gaussian_release(1.0, std, make_rng(None), sensitivity=1.0)
                            for _ in range(trials)])
    plan = GridPlan(std, (), mechanism_mu=1.0 / std)
    step = math.ldexp(1.0, int(plan.exponent))
    # The attacker knows the grid: input 0's support is every multiple of it.
    assert np.all(secure1 / step == np.round(secure1 / step))
    # and the default-path test is no help either: it flags releases of
    # input 0 as often as releases of input 1 (they share one support).
    with secure_mode():
        secure0 = np.array([gaussian_release(0.0, std, make_rng(None), sensitivity=1.0)
                            for _ in range(trials)])
    assert np.all(secure0 / step == np.round(secure0 / step))
    rate0 = np.mean(~_possible_from_zero(secure0, std))
    rate1 = np.mean(~_possible_from_zero(secure1, std))
    # Two binomial proportions of 4000: difference sd <= sqrt(2 * 0.25 / 4000) = 0.011.
    assert abs(rate0 - rate1) < 0.06
    assert grid_release(np.zeros(2), 1.0, 1.0).shape == (2,)


@pytest.mark.parametrize("make", [
    lambda: StreamingMomentEstimator(norm_bound=4.0),
    lambda: DPStandardScaler(bounds=(-1.0, 1.0)),
    lambda: DPSGDRegressor(clip_norm=1.0),
    lambda: DPAMBSSGDRegressor(epsilon=10.0),
    lambda: PrivateGaussianDensity(norm_bound=4.0),
], ids=["moments", "scaler", "dpsgd", "ambssgd", "density"])
def test_a_stream_continues_only_in_the_mode_it_started_in(make):
    # Started in secure mode and continued outside, a stream drew floating-point
    # noise under its secure (zCDP) claim; the other way round it failed obscurely.
    rng = np.random.default_rng(0)
    X = 0.1 * rng.normal(size=(8000, 3))
    y = X @ [1.0, -1.0, 0.5]
    supervised = isinstance(make(), (DPSGDRegressor, DPAMBSSGDRegressor))
    args = (lambda rows: (X[rows], y[rows])) if supervised else (lambda rows: (X[rows],))
    for start_secure in (True, False):
        est = make()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with secure_mode() if start_secure else contextlib.nullcontext():
                est.partial_fit(*args(slice(0, 4000)))
            with pytest.raises(ValueError, match="secure mode"):
                with contextlib.nullcontext() if start_secure else secure_mode():
                    est.partial_fit(*args(slice(4000, 8000)))


def test_a_scaler_fitted_in_secure_mode_continues_only_in_secure_mode():
    # fit starts a stream too; it did not record the mode, so partial_fit outside
    # secure mode was accepted (and inside it refused).
    X = 0.1 * np.random.default_rng(0).normal(size=(4000, 3))
    with secure_mode():
        sc = DPStandardScaler(bounds=(-1.0, 1.0)).fit(X[:2000])
    with pytest.raises(ValueError, match="secure mode"):
        sc.partial_fit(X[2000:])
    with secure_mode():
        sc.partial_fit(X[2000:])
