import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import multivariate_normal, wishart

from skdp.accounting import BudgetAccountant, epsilon_from_mu
from skdp.density import (
    PrivateGaussianDensity,
    gaussian_kl,
    private_covariances,
    project_covariances,
)
from skdp.moments import StreamingMomentEstimator, c_d

# The papers' setting: a release after every row, privacy-for-free JME,
# independent noise, every release kept.
PER_ROW = dict(release="per_row", store_history=True, norm_bound=1.0)
PAPER = dict(release="per_row", store_history=True, noise_shaping="identity", lam=None,
             eigenvalue_floor=1e-3)


@pytest.mark.slow
def test_theorem_4_1_worst_case_covariance_error():
    # Every row is the same unit vector: the true running covariance is 0 and
    # the debiased JME covariance error summed over t has expectation
    # (c_d d^2 + 2d + 2) s^2 H_{n,1} + d(d+1) s^4 H_{n,2}, s = first-moment noise std,
    # for the paper's noise on all d^2 entries. skdp symmetrises that noise,
    # which halves the variance of the d^2 - d off-diagonal entries:
    # c_d d^2 becomes c_d d (d + 1) / 2.
    n, d, reps = 50, 4, 2000
    X = np.tile(np.eye(d)[0], (n, 1))
    errs = []
    for r in range(reps):
        est = StreamingMomentEstimator(epsilon=8.0, workload="average", random_state=r,
                                       noise_shaping="identity", **PER_ROW).fit(X)
        var = est.noise_stds_[0] ** 2 / np.arange(1, n + 1)  # identity shaping, average workload
        cov = private_covariances(est.first_moments_, est.second_moments_, var)
        true = np.zeros((n, d, d))
        errs.append(np.sum((cov - true) ** 2))
    s = est.noise_stds_[0]
    h1 = np.sum(1.0 / np.arange(1, n + 1))
    h2 = np.sum(1.0 / np.arange(1, n + 1) ** 2)
    expected = (c_d(d) * d * (d + 1) / 2 + 2 * d + 2) * s**2 * h1 + d * (d + 1) * s**4 * h2
    errs = np.array(errs)
    se = errs.std(ddof=1) / math.sqrt(reps)
    assert 3 * se < 0.05 * expected  # the 5% band is at least 3 standard errors wide
    assert errs.mean() == pytest.approx(expected, rel=0.05)


@pytest.fixture(scope="module")
def figure5():
    """Mean KL(p_hat_t || p) over 200 runs, Kalinin et al. 2025 Figure 5 (d = 5, n = 100, strength 2)."""
    d, n, runs = 5, 100, 200
    rng = np.random.default_rng(0)
    # Noise strength 2: the noise multiplier 1 / mu. The rows are clipped to
    # the prior's RMS norm sqrt(E tr Sigma + E||m||^2) = sqrt(d^2 + d/2), a
    # public constant.
    eps = epsilon_from_mu(0.5, 1e-6)
    zeta = math.sqrt(d * d + d / 2)
    kl = {"jme": 0.0, "pp": 0.0, "pp_biased": 0.0}
    for r in range(runs):
        mean = rng.normal(scale=math.sqrt(0.5), size=d)
        cov = wishart(df=2 * d, scale=0.5 * np.eye(d)).rvs(random_state=rng)
        X = rng.multivariate_normal(mean, cov, size=n)
        for name, kw in [("jme", {}), ("pp", {"method": "pp"}),
                         ("pp_biased", {"method": "pp", "debias": False})]:
            est = PrivateGaussianDensity(epsilon=eps, norm_bound=zeta, random_state=r,
                                         **PAPER, **kw).fit(X)
            kl[name] = kl[name] + gaussian_kl(est.locations_, est.covariances_, mean, cov) / runs
    return kl


@pytest.mark.slow
def test_figure_5_jme_beats_pp_from_step_20(figure5):
    # The benchmark (1000 runs) measures at t = 20 KL 67 (sd 51) for JME and
    # 145 (sd 121) for debiased PP: over 200 runs the means have sd 3.6 and
    # 8.6, so the gap of 78 is > 8 sd of the difference; it widens with t.
    assert np.all(figure5["jme"][19:] < figure5["pp"][19:])
    assert np.all(figure5["jme"][19:] < figure5["pp_biased"][19:])
    assert figure5["jme"][-1] < figure5["jme"][19]  # and it improves along the stream


def test_gaussian_kl_closed_form_and_monte_carlo():
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(3, 3)), rng.normal(size=(3, 3))
    cp, cq = A @ A.T + np.eye(3), B @ B.T + np.eye(3)
    mp, mq = rng.normal(size=3), rng.normal(size=3)
    kl = float(gaussian_kl(mp, cp, mq, cq))
    x = rng.multivariate_normal(mp, cp, size=400_000)
    mc = multivariate_normal(mp, cp).logpdf(x) - multivariate_normal(mq, cq).logpdf(x)
    # The MC mean has sd mc.std() / sqrt(4e5); allow 4 sd.
    assert kl == pytest.approx(mc.mean(), abs=4 * mc.std() / math.sqrt(len(x)))
    assert float(gaussian_kl(mp, cp, mp, cp)) == pytest.approx(0.0, abs=1e-12)
    stacked = gaussian_kl(np.stack([mp, mq]), np.stack([cp, cq]), mq, cq)
    assert stacked.shape == (2,) and stacked[1] == pytest.approx(0.0, abs=1e-12)


def test_projection_is_symmetric_with_the_floor():
    M = np.array([[[1.0, 2.0], [0.0, -3.0]]])
    P = project_covariances(M, 0.1)
    np.testing.assert_allclose(P, np.swapaxes(P, 1, 2))
    assert np.linalg.eigvalsh(P).min() == pytest.approx(0.1)
    np.testing.assert_allclose(project_covariances(np.eye(2)[None], 0.1), np.eye(2)[None])


def test_projection_onto_feasible_covariances_is_the_euclidean_one():
    # Eigenvalues (3, 2, -1) onto {0.1 <= l <= 2.5, sum <= 4}: by the KKT
    # conditions l = clip(v - tau, 0.1, 2.5) with sum 4, tau = 0.55.
    P = project_covariances(np.diag([3.0, 2.0, -1.0]), 0.1, 2.5, 4.0)
    np.testing.assert_allclose(np.linalg.eigvalsh(P), [0.1, 1.45, 2.45], atol=1e-9)
    # Brute force: no point of the set is closer.
    rng = np.random.default_rng(0)
    v = np.array([3.0, 2.0, -1.0])
    best = np.sum((np.array([2.45, 1.45, 0.1]) - v) ** 2)
    for _ in range(20_000):
        cand = np.clip(rng.uniform(0.1, 2.5, 3), 0.1, 2.5)
        if cand.sum() <= 4.0:
            assert np.sum((cand - v) ** 2) >= best - 1e-9
    # Per-matrix floors on a stack.
    stack = project_covariances(np.stack([np.eye(2) * -1, np.eye(2) * -1]), np.array([0.1, 0.3]))
    np.testing.assert_allclose(np.linalg.eigvalsh(stack), [[0.1, 0.1], [0.3, 0.3]])


def _gaussian_rows(n, seed=0):
    rng = np.random.default_rng(seed)
    return rng.multivariate_normal([0.2, -0.1], [[0.04, 0.01], [0.01, 0.02]], size=n)


def test_api_scores_samples_mahalanobis():
    X = _gaussian_rows(50_000)
    dens = PrivateGaussianDensity(epsilon=4.0, random_state=0).fit(X)
    ref = multivariate_normal(dens.location_, dens.covariance_)
    np.testing.assert_allclose(dens.score_samples(X[:100]), ref.logpdf(X[:100]), rtol=1e-10)
    assert dens.score(X[:100]) == pytest.approx(ref.logpdf(X[:100]).mean())
    diff = X[:5] - dens.location_
    np.testing.assert_allclose(dens.mahalanobis(X[:5]),
                               np.sum(diff @ np.linalg.inv(dens.covariance_) * diff, axis=1))
    np.testing.assert_allclose(dens.precision_ @ dens.covariance_, np.eye(2), atol=1e-10)
    draws = dens.sample(200_000, random_state=1)
    # Sample covariance entries of 2e5 draws have sd <= ~0.05 * 1.5 / sqrt(2e5) ~ 2e-4.
    np.testing.assert_allclose(np.cov(draws.T), dens.covariance_, atol=2e-3)
    assert not hasattr(dens, "covariances_") and dens.n_steps_seen_ == 1
    rows = PrivateGaussianDensity(epsilon=4.0, random_state=0, **PAPER).fit(X[:500])
    assert rows.covariances_.shape == (500, 2, 2)


# -- the log-likelihood of new data: the setting of the phase-2 issue ---------------------
# d = 5, rows ~ N(m, Sigma) with ||m||^2 = 1.8 and eigenvalues (1, .4, .2, .1, .076), so
# the rows' norms are about 1.9; epsilon = 1, delta = 1e-5. The true density scores
# -3.397 on the test rows (benchmarks/density_loglik.py prints the whole table).

def _issue_setting():
    from scipy.stats import ortho_group

    d = 5
    Q = ortho_group.rvs(d, random_state=1)
    cov = Q @ np.diag([1.0, 0.4, 0.2, 0.1, 0.076]) @ Q.T
    mean = np.full(d, math.sqrt(1.8 / d))
    test = np.random.default_rng(0).multivariate_normal(mean, cov, size=20_000)
    return mean, cov, test


@pytest.mark.parametrize("n, bound, target", [
    (10_000, 4.0, -3.60), (10_000, None, -3.75), (100_000, 4.0, -3.40), (100_000, None, -3.45)])
def test_one_release_log_likelihood_targets(n, bound, target):
    # The benchmark measures medians of -3.415 / -3.407 at n = 1e4 and -3.397
    # at 1e5 (the non-private fit's level); 5 seeds, the median must beat the
    # issue's targets, which leave margins of 0.05 to 0.34 nats: several times
    # the seed-to-seed spread the benchmark sees (sd 0.01 at 1e4).
    mean, cov, test = _issue_setting()
    X = np.random.default_rng(5).multivariate_normal(mean, cov, size=n)
    scores = [PrivateGaussianDensity(epsilon=1.0, delta=1e-5, norm_bound=bound,
                                     random_state=s).fit(X).score(test) for s in range(5)]
    assert np.median(scores) > target


@pytest.mark.slow
def test_stream_of_small_calls_log_likelihood_target():
    # 1,000 calls of 10 rows at norm_bound 4: the benchmark's median over 10
    # seeds is -3.59 (range -3.62 to -3.51); the issue asks for better than -4.0.
    mean, cov, test = _issue_setting()
    X = np.random.default_rng(5).multivariate_normal(mean, cov, size=10_000)
    scores = []
    for s in range(3):
        dens = PrivateGaussianDensity(epsilon=1.0, delta=1e-5, norm_bound=4.0, random_state=s)
        for block in np.array_split(X, 1000):
            dens.partial_fit(block)
        scores.append(dens.score(test))
    assert dens.n_steps_seen_ == 1000
    assert np.median(scores) > -4.0


@pytest.mark.parametrize("kw", [{}, {"method": "pp", "release": "per_row"},
                                {"release": "per_row", "store_history": True}])
def test_released_covariances_are_feasible(kw):
    # Whatever the noise (epsilon = 0.05 here), every released covariance has
    # eigenvalues in [floor, zeta^2] and trace <= zeta^2, and the mean lies in the ball.
    X = _gaussian_rows(400, seed=2) * 10
    dens = PrivateGaussianDensity(epsilon=0.05, norm_bound=1.0, random_state=0, **kw).fit(X)
    covs = getattr(dens, "covariances_", dens.covariance_[None])
    vals = np.linalg.eigvalsh(covs)
    assert np.all(vals > 0) and np.all(vals <= 1.0 + 1e-9)
    assert np.all(np.trace(covs, axis1=1, axis2=2) <= 1.0 + 1e-9)
    assert np.linalg.norm(dens.location_) <= 1.0 + 1e-12


@pytest.mark.parametrize("method", ["jme", "pp"])
def test_partial_fit_one_row_at_a_time_equals_the_per_row_fit(method):
    X = _gaussian_rows(300, seed=1)
    acc = BudgetAccountant(epsilon=2.0, delta=1e-5)
    # n_steps: the 'blt' noise is tuned for the stream's length, which a
    # per-row fit takes from the table and a stream from this hint.
    common = dict(method=method, norm_bound=1.0, store_history=True, n_steps=300, random_state=3)
    # A seed is mixed with the charge's place in its ledger: the first charge
    # of two fresh ledgers draws the same noise.
    whole = PrivateGaussianDensity(release="per_row", accountant=BudgetAccountant(2.0, 1e-5),
                                   **common).fit(X)
    parts = PrivateGaussianDensity(accountant=acc, **common)
    for row in X:
        parts.partial_fit(row[None])
    assert len(acc.ledger) == 1
    np.testing.assert_allclose(parts.covariances_, whole.covariances_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(parts.locations_, whole.locations_, rtol=1e-9, atol=1e-12)


def test_dataframes_and_bad_input():
    df = pd.DataFrame(_gaussian_rows(100), columns=["a", "b"])
    dens = PrivateGaussianDensity(norm_bound=1.0, random_state=0).fit(df)
    assert list(dens.feature_names_in_) == ["a", "b"]
    with pytest.raises(ValueError, match="features"):
        PrivateGaussianDensity(norm_bound=1.0).partial_fit(df).partial_fit(np.ones((3, 3)))
    with pytest.raises(ValueError, match="NaN"):
        PrivateGaussianDensity().fit(np.array([[np.nan, 1.0]]))
    with pytest.raises(ValueError, match="norm_bound"):
        PrivateGaussianDensity(norm_bound=0.0).fit(np.ones((3, 2)))
    with pytest.raises(ValueError, match="method"):
        PrivateGaussianDensity(method="ime").fit(np.ones((3, 2)))
    with pytest.raises(ValueError, match="horizon"):
        PrivateGaussianDensity(n_steps=2, noise_shaping="sqrt", release="per_row",
                               norm_bound=1.0).fit(np.ones((3, 2)))
    with pytest.raises(ValueError, match="Too few rows"):
        PrivateGaussianDensity().fit(np.ones((30, 2)))
    with pytest.raises(ValueError, match="release='per_row'"):
        PrivateGaussianDensity(method="pp", norm_bound=1.0).fit(np.ones((30, 2)))


def test_no_live_noise_state_in_public_attributes_or_pickles():
    import pickle

    X = _gaussian_rows(200)
    dens = PrivateGaussianDensity(norm_bound=1.0, random_state=0).partial_fit(X)
    assert not any(k.endswith("_") and not k.startswith("_") and
                   isinstance(v, StreamingMomentEstimator) for k, v in vars(dens).items())
    other = pickle.loads(pickle.dumps(dens))
    assert other._moments is None
    np.testing.assert_array_equal(other.score_samples(X[:3]), dens.score_samples(X[:3]))
    with pytest.raises(RuntimeError, match="secret noise state"):
        other.partial_fit(X[:3])
    assert len(pickle.dumps(dens)) < 5000  # the release and small numbers, not the rows
    dens.partial_fit(X[:3])  # the original continues


def test_sample_weight_and_the_ledger():
    acc = BudgetAccountant(epsilon=5.0, delta=1e-5)
    X = _gaussian_rows(3000)
    from skdp.mechanisms import record_releases

    # With weights (unit ones included) the mean divides by the released total
    # weight; without, by the public row count, and no total is released (session 23).
    with record_releases() as plain:
        a = PrivateGaussianDensity(norm_bound=1.0, random_state=0).fit(X)
    with record_releases() as weighted:
        b = PrivateGaussianDensity(norm_bound=1.0, random_state=0).fit(
            X, sample_weight=np.ones(3000))
    assert not any(r.name == "total weight" for r in plain)
    assert any(r.name == "total weight" for r in weighted)
    assert a.noise_stds_[0] < b.noise_stds_[0]
    # Each covariance is within about 4 of its entry noise stds of the table's (the
    # released second moment's noise dominates here), so the two within the sum.
    tol = 4.0 * sum(f._moments._release_info["second_noise_std"] for f in (a, b))
    np.testing.assert_allclose(a.covariance_, b.covariance_, atol=tol)
    PrivateGaussianDensity(accountant=acc, norm_bound=1.0, random_state=0).fit(X)
    assert [c.label for c in acc.ledger] == ["PrivateGaussianDensity"]


def test_pp_debias_matters_unless_the_noise_pins_the_covariance_at_its_cap():
    # Issue 24: with PP at epsilon 1 on 2,000 rows the noisy second moment is
    # so large that every covariance is projected onto the trace cap, and
    # debias=True / False agree to rounding. That is now announced; where the
    # covariance is not pinned (epsilon 100) debias changes it.
    X = np.random.default_rng(0).normal(size=(2000, 3)) * 0.3
    common = dict(method="pp", release="per_row", norm_bound=2.0, random_state=0)
    with pytest.warns(UserWarning, match="largest trace"):
        PrivateGaussianDensity(**common).fit(X)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        on = PrivateGaussianDensity(epsilon=100.0, debias=True, **common).fit(X)
        off = PrivateGaussianDensity(epsilon=100.0, debias=False, **common).fit(X)
    # Not pinned. (The per-row noise is still near the variance, 0.09 against a
    # typical noise norm of 0.12: one debiased direction falls below the floor, and
    # the fit says so.)
    assert not any("largest trace" in str(w.message) for w in caught)
    # Without debiasing, x_hat x_hat^T keeps the rows' noise variance v on its
    # diagonal (v = 0.16 here per row, against a true variance of 0.09).
    assert np.trace(off.covariance_) > np.trace(on.covariance_) + 1.0
    assert np.trace(on.covariance_) == pytest.approx(3 * 0.09, abs=0.1)


def test_the_papers_figure_5_ordering_with_the_papers_post_processing():
    # Issue 24: with skdp's feasible projection PP caught up with JME in the
    # Figure 5 setting (Kalinin et al. 2025: JME below PP). The projection is
    # why: PP's squared noise inflates its covariance far beyond what rows in
    # the ball can have, and the cap removes most of it. With the paper's
    # post-processing (projection='psd') JME wins by a factor of about 3 in
    # mean KL (benchmarks/moments_figures.py, 200 runs: 20.5 against 61.8),
    # far beyond the spread of a 30-run median.
    from scipy.stats import wishart

    from skdp.accounting import epsilon_from_mu
    from skdp.density import gaussian_kl

    d, n = 5, 100
    eps = epsilon_from_mu(0.5, 1e-6)
    zeta = math.sqrt(d * d + d / 2)
    rng = np.random.default_rng(0)
    kl = {"jme": [], "pp": []}
    for r in range(30):
        mean = rng.normal(scale=math.sqrt(0.5), size=d)
        cov = wishart(df=2 * d, scale=0.5 * np.eye(d)).rvs(random_state=rng)
        X = rng.multivariate_normal(mean, cov, size=n)
        for method in kl:
            est = PrivateGaussianDensity(
                epsilon=eps, delta=1e-6, method=method, norm_bound=zeta, release="per_row",
                noise_shaping="identity", eigenvalue_floor=1e-3, projection="psd",
                random_state=r, **({"lam": None} if method == "jme" else {})).fit(X)
            kl[method].append(gaussian_kl(est.location_[None], est.covariance_[None], mean,
                                          cov)[0])
    assert np.median(kl["jme"]) < 0.6 * np.median(kl["pp"])


def test_a_direction_below_the_noise_is_named():
    # A new user's trial (session 23): on PSID7682's raw columns (experience,
    # weeks, education, log wage) the norm bound follows the widest column and the
    # log wage's variance (0.21) came out 11.5, silently. A direction of the
    # released covariance below the eigenvalue floor (the noise level) now warns,
    # naming its columns; the same columns standardised do not.
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"wide": rng.normal(50.0, 30.0, 4000), "narrow": rng.normal(6.7, 0.45, 4000),
                      "mid": rng.normal(12.0, 3.0, 4000)})
    with pytest.warns(UserWarning, match=r"mostly along \['narrow'\]"):
        raw = PrivateGaussianDensity(random_state=0).fit(X)
    assert raw.covariance_[1, 1] > 10 * X["narrow"].var()  # the noise's variance, not the data's
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PrivateGaussianDensity(random_state=0).fit((X - X.mean()) / X.std())
