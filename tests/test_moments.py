import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize

import skdp.decomposition
import skdp.density
from skdp.accounting import BudgetAccountant, mu_from_epsilon_delta
from skdp.mechanisms import noise_shaping_matrix, workload_matrix
from skdp.moments import (
    StreamingMomentEstimator,
    c_d,
    cs_noise_stds,
    ime_noise_stds,
    jme_noise_stds,
    joint_sensitivity,
    r_d,
)

MU = mu_from_epsilon_delta(1.0, 1e-6)
# The papers' setting: a continual release after every row, every release kept.
PER_ROW = dict(release="per_row", store_history=True, norm_bound=1.0)


# -- Lemma 3.5: the joint sensitivity --------------------------------------------------

def _r_numeric(nu, d, starts=20, seed=0):
    """sup over the unit ball of ||x - y||^2 + nu ||x x^T - y y^T||_F^2, by local search."""
    rng = np.random.default_rng(seed)

    def neg(z):
        x, y = z[:d], z[d:]
        x = x / max(1.0, np.linalg.norm(x))
        y = y / max(1.0, np.linalg.norm(y))
        return -(np.sum((x - y) ** 2) + nu * np.sum((np.outer(x, x) - np.outer(y, y)) ** 2))

    return max(-minimize(neg, rng.normal(size=2 * d), method="Nelder-Mead",
                         options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000}).fun
               for _ in range(starts))


@pytest.mark.parametrize("d", [1, 2, 3])
@pytest.mark.parametrize("nu", [0.2, 0.5, 1.0, 2.0, 3.0, 8.0])
@pytest.mark.slow
def test_r_d_matches_a_numerical_supremum(d, nu):
    # Local search finds a lower bound; with 20 starts it reaches the sup.
    assert _r_numeric(nu, d) == pytest.approx(r_d(nu, d), rel=1e-5)


@pytest.mark.parametrize("d", [1, 2, 7])
def test_c_d_is_the_edge_of_privacy_for_free(d):
    assert r_d(1 / c_d(d), d) == pytest.approx(4.0, rel=1e-12)
    assert r_d(1.01 / c_d(d), d) > 4.0


def test_joint_sensitivity_takes_the_worst_column():
    # Columns (a, b) = (1, 1) and (0.5, 2): the second has the larger
    # second-moment weight relative to its first-moment norm.
    lam = 1.0
    expected = math.sqrt(max(r_d(lam, 3), 0.25 * r_d(lam * 4 / 0.25, 3)))
    assert joint_sensitivity([1.0, 0.5], [1.0, 2.0], lam, 3, 1.0) == pytest.approx(expected)


def test_privacy_for_free_first_moment_scale():
    # JME's first-moment noise is exactly that of releasing the first moment
    # alone, 2 zeta ||C||_{1->2} / mu, for any d, zeta and shaping.
    for d, zeta, shaping, kw in [(1, 1.0, "identity", {}), (10, 2.5, "sqrt", {"n_steps": 64}),
                                 (4, 0.5, "nu", {"nu": 0.1})]:
        X = np.full((16, d), zeta / (2 * math.sqrt(d)))
        common = dict(release="per_row", store_history=True, norm_bound=zeta,
                      noise_shaping=shaping, nu=kw.get("nu"), n_steps=kw.get("n_steps"),
                      random_state=0)
        est = StreamingMomentEstimator(**common).fit(X)
        alone = StreamingMomentEstimator(method="pp", debias=False, **common).fit(X)
        C = noise_shaping_matrix(shaping, kw.get("n_steps", 4096), nu=kw.get("nu"))
        col = np.sqrt(np.sum(C[:, 0] ** 2)) if shaping != "nu" else None
        assert est.noise_stds_[0] == alone.noise_stds_[0]
        if col is not None:
            assert est.noise_stds_[0] == pytest.approx(2 * zeta * col / MU, rel=1e-12)
        np.testing.assert_array_equal(est.first_moments_, alone.first_moments_)


# -- Theorem 3.3: expected errors ---------------------------------------------------------

def _mc_errors(method_kw, shaping, d, n=24, reps=2000, seed=0):
    """Monte-Carlo mean squared Frobenius errors of Y and S over the whole stream."""
    X = np.random.default_rng(seed).normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    A = workload_matrix("prefix", n)
    Y, S = A @ X, np.einsum("ts,si,sj->tij", A, X, X)
    e1 = e2 = 0.0
    for r in range(reps):
        est = StreamingMomentEstimator(noise_shaping=shaping, n_steps=n, random_state=r,
                                       **PER_ROW, **method_kw).fit(X)
        e1 += np.sum((est.first_moments_ - Y) ** 2)
        e2 += np.sum((est.second_moments_ - S) ** 2)
    return e1 / reps, e2 / reps, est


@pytest.mark.parametrize("shaping", ["identity", "sqrt"])
@pytest.mark.parametrize("d", [1, 10])
@pytest.mark.slow
def test_theorem_3_3_error_formulas(shaping, d):
    n = 24
    e1, e2, est = _mc_errors({}, shaping, d, n=n)
    C = noise_shaping_matrix(shaping, n)
    A = workload_matrix("prefix", n)
    col = np.sqrt(np.sum(C[:, 0] ** 2))
    frob2 = np.sum((A @ np.linalg.inv(C)) ** 2)
    sigma = 1 / MU  # noise for a unit-sensitivity query
    formula3 = (2 * 1.0 * math.sqrt(d) * sigma * col) ** 2 * frob2
    # (4) with zeta = 1 (the flattened text drops zeta's exponent: it is zeta^2).
    formula4 = (2 * math.sqrt(c_d(d)) * d * sigma * col) ** 2 * frob2
    # The symmetrised release halves the variance of every off-diagonal entry:
    # of the d^2 entries' total noise, (d^2 - d) / 2 is averaged away.
    formula4 *= (d + (d * d - d) / 2) / (d * d)
    # Each error is a Gaussian quadratic form: sd / mean <= sqrt(2), so the
    # mean of 2000 draws is within sqrt(2 / 2000) = 3.2% per sd; 10% > 3 sd.
    assert e1 == pytest.approx(formula3, rel=0.10)
    assert e2 == pytest.approx(formula4, rel=0.10)


# -- Figure 1: lambda-JME Pareto-dominates IME and CS ------------------------------------------

def _jme_std2_at_std1(target_std1, d):
    """Second-moment std of lambda-JME whose first-moment std equals target_std1."""
    lo, hi = 1e-6, 1e6  # std1 increases with lambda
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if jme_noise_stds(MU, d, 1.0, [1.0], [1.0], lam=mid)[0] < target_std1:
            lo = mid
        else:
            hi = mid
    std1, std2, _ = jme_noise_stds(MU, d, 1.0, [1.0], [1.0], lam=lo)
    return std1, std2


@pytest.mark.parametrize("d", [1, 10])
def test_lambda_jme_pareto_dominates_ime_and_cs(d):
    # With the same C for both moments every method adds independent noise
    # to the two streams, so its errors are (std1^2, std2^2) times the same
    # constants; comparing the stds along the Figure 1 grid is exact.
    for a in np.linspace(0.05, 0.95, 19):
        std1, std2 = ime_noise_stds(MU, 1.0, 1.0, 1.0, a)
        jme1, jme2 = _jme_std2_at_std1(std1, d)
        assert jme1 <= std1 * (1 + 1e-9)
        assert jme2 < std2
    # CS with its exact sensitivity is lambda-JME with lam = tau (same C):
    # on the JME curve, and below the paper's triangle-inequality calibration.
    for tau in np.geomspace(0.01, 100, 21):
        cs1, cs2 = cs_noise_stds(MU, 1.0, 1.0, tau, d)
        jme1, jme2, _ = jme_noise_stds(MU, d, 1.0, [1.0], [1.0], lam=tau)
        assert (cs1, cs2) == pytest.approx((jme1, jme2), rel=1e-12)
        paper = 2.0 * math.sqrt(1.0 + tau) / MU
        assert cs1 < paper and cs2 < paper / math.sqrt(tau)
    # And the estimator uses those stds (one release of a table: C = I).
    X = np.zeros((5, d))
    est = StreamingMomentEstimator(method="ime", budget_split=0.3, norm_bound=1.0,
                                   random_state=0).fit(X)
    assert est.noise_stds_ == pytest.approx(ime_noise_stds(MU, 1.0, 1.0, 1.0, 0.3))
    est = StreamingMomentEstimator(method="cs", tau=2.0, norm_bound=1.0, random_state=0).fit(X)
    assert est.noise_stds_ == pytest.approx(cs_noise_stds(MU, 1.0, 1.0, 2.0, d))


# -- PP: the exact bias ---------------------------------------------------------------------

@pytest.mark.parametrize("shaping", ["identity", "sqrt"])
@pytest.mark.slow
def test_debiased_pp_is_unbiased_and_plain_pp_is_not(shaping):
    n, d, reps = 20, 3, 3000
    X = np.random.default_rng(1).normal(size=(n, d)) / 2
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    A = workload_matrix("average", n)
    S = np.einsum("ts,si,sj->tij", A, X, X)
    for debias in (True, False):
        errs = np.array([
            np.trace(StreamingMomentEstimator(
                method="pp", debias=debias, workload="average", noise_shaping=shaping,
                n_steps=n, random_state=r, **PER_ROW).fit(X).second_moments_ - S,
                axis1=1, axis2=2).sum()
            for r in range(reps)])
        z = errs.mean() / (errs.std(ddof=1) / math.sqrt(reps))
        if debias:
            assert abs(z) < 3  # fixed seeds: a 3-sd band around zero
        else:
            assert z > 10  # the squared noise is all positive on the diagonal


# -- a stream: one step per call ----------------------------------------------------------

SHAPINGS = [("identity", {}), ("blt", {}), ("sqrt", {"n_steps": 40}), ("nu", {"nu": 0.05, "n_steps": 40}),
            (noise_shaping_matrix("nu", 40, nu=0.3), {})]


@pytest.mark.parametrize("method", ["jme", "ime", "cs", "pp"])
@pytest.mark.parametrize("shaping,kw", SHAPINGS)
def test_one_row_per_call_equals_the_per_row_release(method, shaping, kw):
    X = np.random.default_rng(2).normal(size=(40, 3)) / 2
    second = None if method == "cs" else "window"
    common = dict(method=method, workload="exponential", beta=0.9, second_workload=second,
                  window=5, noise_shaping=shaping, random_state=11, norm_bound=1.0,
                  store_history=True, **kw)
    whole = StreamingMomentEstimator(release="per_row", **common).fit(X)
    stream = StreamingMomentEstimator(**common)
    for row in X:
        stream.partial_fit(row[None, :])
    np.testing.assert_allclose(stream.first_moments_, whole.first_moments_, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(stream.second_moments_, whole.second_moments_, rtol=1e-9, atol=1e-9)
    assert stream.n_steps_seen_ == 40
    np.testing.assert_array_equal(stream.first_moment_, stream.first_moments_[-1])


def test_noise_free_limit_of_a_stream_of_blocks():
    # epsilon = 1e12: noise sd ~ 1e-6. Each call is one step holding its rows:
    # 'average' is the mean of all rows so far, 'window' the mean of the rows
    # of the last k calls, 'prefix' their sum, 'exponential' beta-decayed
    # sums of the calls' sums.
    rng = np.random.default_rng(3)
    blocks = [rng.normal(size=(m, 2)) / 6 for m in (3, 1, 5, 2, 4)]
    for workload, expected in [
        ("average", lambda bs: np.concatenate(bs).mean(axis=0)),
        ("prefix", lambda bs: np.concatenate(bs).sum(axis=0)),
        ("window", lambda bs: np.concatenate(bs[-2:]).mean(axis=0)),
        ("exponential", lambda bs: sum(0.5 ** (len(bs) - 1 - i) * b.sum(axis=0)
                                       for i, b in enumerate(bs))),
    ]:
        est = StreamingMomentEstimator(epsilon=1e12, workload=workload, window=2, beta=0.5,
                                       norm_bound=1.0, random_state=0)
        for i, block in enumerate(blocks):
            est.partial_fit(block)
            np.testing.assert_allclose(est.first_moment_, expected(blocks[:i + 1]), atol=1e-4)
        assert est.n_steps_seen_ == 5 and est.n_samples_seen_ == 15
        second = expected([np.einsum("ti,tj->tij", b, b) for b in blocks])
        np.testing.assert_allclose(est.second_moment_, second, atol=1e-4)


def test_noise_free_limit_of_a_table_release():
    # One release: the last row of each workload applied to the table.
    X = np.random.default_rng(3).normal(size=(30, 2)) / 6  # norms < 1: no clipping
    est = StreamingMomentEstimator(epsilon=1e12, workload="window", window=4,
                                   second_workload="exponential", beta=0.8, norm_bound=1.0,
                                   random_state=0).fit(X)
    A1, A2 = workload_matrix("window", 30, k=4), workload_matrix("exponential", 30, beta=0.8)
    np.testing.assert_allclose(est.first_moment_, A1[-1] @ X, atol=1e-4)
    np.testing.assert_allclose(est.second_moment_, np.einsum("s,si,sj->ij", A2[-1], X, X),
                               atol=1e-4)
    assert est.n_steps_seen_ == 1 and not hasattr(est, "first_moments_")
    diag = StreamingMomentEstimator(epsilon=1e12, diagonal_only=True, norm_bound=1.0,
                                    random_state=0).fit(X)
    np.testing.assert_allclose(diag.second_moment_, np.sum(X**2, axis=0), atol=1e-4)
    clipped = StreamingMomentEstimator(epsilon=1e12, norm_bound=1.0, random_state=0).fit(
        np.array([[3.0, 4.0]]))  # norm 5 -> (0.6, 0.8)
    np.testing.assert_allclose(clipped.first_moment_, [0.6, 0.8], atol=1e-4)


def test_a_table_release_has_its_calibrated_noise():
    # Zero data, 600 independent releases at d = 3: the first moment's entries
    # have variance std1^2, the symmetrised second moment's diagonal std2^2
    # and off-diagonal std2^2 / 2. A sample variance of R draws has relative
    # sd sqrt(2 / (R - 1)) = 0.058 (pooling 3 entries: 0.033); 4 sd = 0.23 / 0.14.
    R, d = 600, 3
    ests = [StreamingMomentEstimator(norm_bound=2.0, random_state=r).fit(np.zeros((50, d)))
            for r in range(R)]
    std1, std2 = ests[0].noise_stds_
    first = np.array([e.first_moment_ for e in ests])
    second = np.array([e.second_moment_ for e in ests])
    np.testing.assert_array_equal(second, np.swapaxes(second, 1, 2))
    assert first.var(axis=0, ddof=1).mean() / std1**2 == pytest.approx(1.0, abs=0.14)
    diag = second[:, np.arange(d), np.arange(d)]
    assert diag.var(axis=0, ddof=1).mean() / std2**2 == pytest.approx(1.0, abs=0.14)
    off = second[:, 0, 1]
    assert off.var(ddof=1) / (std2**2 / 2) == pytest.approx(1.0, abs=0.23)
    # privacy for free, one step: std1 = 2 zeta / mu and std2 = sqrt(c_d) zeta std1.
    assert std1 == pytest.approx(2 * 2.0 / MU)
    assert std2 == pytest.approx(math.sqrt(c_d(d)) * 2.0 * std1)


def test_the_private_bound_is_paid_for_and_near_the_quantile():
    X = np.random.default_rng(4).normal(size=(20_000, 4))
    acc = BudgetAccountant(epsilon=2.0, delta=1e-5)
    est = StreamingMomentEstimator(epsilon=1.0, delta=1e-5, accountant=acc,
                                   random_state=0).fit(X)
    q99 = np.quantile(np.linalg.norm(X, axis=1), 0.99)
    # Count noise sd: sqrt(10) / (mu sqrt(0.05)) = 53 rows of 20,000; the
    # effective quantile 1 - 3 * 53 / 20000 = 0.992; the grid steps by 9%.
    assert q99 / 1.1 < est.norm_bound_ < q99 * 1.25
    assert len(acc.ledger) == 1
    assert est.privacy_spent_.mu == pytest.approx(mu_from_epsilon_delta(1.0, 1e-5))
    # Too few rows for a private bound: a clear error, nothing charged.
    before = acc.spent()
    with pytest.raises(ValueError, match=r"Too few rows.*\(norm_bound=\.\.\.\)"):
        StreamingMomentEstimator(accountant=acc).fit(X[:100])
    assert acc.spent() == before
    # The same stream's first call finds the bound; later calls reuse it.
    stream = StreamingMomentEstimator(random_state=0).partial_fit(X[:10_000])
    bound = stream.norm_bound_
    assert stream.partial_fit(X[10_000:10_005]).norm_bound_ == bound


def test_state_does_not_grow_with_the_rows_or_the_steps():
    import pickle

    rng = np.random.default_rng(5)
    small, large = rng.normal(size=(1000, 3)), rng.normal(size=(100_000, 3))
    sizes = [len(pickle.dumps(StreamingMomentEstimator(norm_bound=3.0, random_state=0).fit(X)))
             for X in (small, large)]
    assert abs(sizes[0] - sizes[1]) < 16  # the row counts themselves take a few more bytes
    est = StreamingMomentEstimator(norm_bound=3.0, random_state=0)
    for block in np.array_split(large[:2000], 10):
        est.partial_fit(block)
    buffers = est._state["noise1"]._buffers.buffers.shape
    before = len(pickle.dumps(est))
    for block in np.array_split(large[2000:], 1000):
        est.partial_fit(block)
    assert est.n_steps_seen_ == 1010
    assert est._state["noise1"]._buffers.buffers.shape == buffers
    assert abs(len(pickle.dumps(est)) - before) < 16
    assert not hasattr(est, "first_moments_")


def test_history_is_opt_in_and_the_callback_sees_every_release():
    X = np.random.default_rng(6).normal(size=(60, 2)) / 3
    seen = []
    est = StreamingMomentEstimator(norm_bound=1.0, store_history=True, random_state=0,
                                   callback=lambda t, y, s: seen.append((t, y.copy(), s.copy())))
    for block in np.array_split(X, 6):
        est.partial_fit(block)
    assert est.first_moments_.shape == (6, 2) and est.second_moments_.shape == (6, 2, 2)
    assert [t for t, _, _ in seen] == [1, 2, 3, 4, 5, 6]
    np.testing.assert_array_equal(np.array([y for _, y, _ in seen]), est.first_moments_)
    rows = StreamingMomentEstimator(norm_bound=1.0, release="per_row", random_state=0,
                                    callback=lambda t, y, s: seen.append(t)).fit(X)
    assert seen[6:] == list(range(1, 61)) and rows.n_steps_seen_ == 60


def test_a_user_matrix_is_the_horizon_before_any_row_of_a_call_is_released():
    # Without n_steps the stream checked a user matrix's size one chunk (163 rows at
    # d = 40) at a time: a call that outgrew it had released its first chunks into the
    # running sums when it failed. Now it fails first, and the stream goes on as if the
    # call had not been made (the same releases as a stream that never saw it).
    rng = np.random.default_rng(0)
    X1 = rng.uniform(-0.1, 0.1, size=(100, 40))
    X2 = rng.uniform(-0.1, 0.1, size=(250, 40))

    def stream(bad_call):
        est = StreamingMomentEstimator(epsilon=2.0, method="pp", noise_shaping=np.eye(300),
                                       norm_bound=1.0, random_state=0)
        est.partial_fit(X1)
        if bad_call:
            with pytest.raises(ValueError, match="horizon is n_steps=300"):
                est.partial_fit(X2)  # 350 steps
        return est.partial_fit(X2[:37])

    a, b = stream(True), stream(False)
    assert a.n_samples_seen_ == b.n_samples_seen_ == 137
    np.testing.assert_array_equal(a.first_moment_, b.first_moment_)


def test_a_callback_that_raises_leaves_the_attributes_counting_the_rows():
    # The steps are taken before the callback runs; n_samples_seen_ used to stay at the
    # last call, as if the rows had not entered the stream (a retry then used them twice).
    def callback(t, first, second):
        if t == 2:
            raise RuntimeError("publishing failed")

    X = np.random.default_rng(1).normal(size=(100, 2)) / 3
    est = StreamingMomentEstimator(norm_bound=1.0, callback=callback, random_state=0)
    est.partial_fit(X[:50])
    with pytest.raises(RuntimeError, match="publishing failed"):
        est.partial_fit(X[50:])
    assert est.n_samples_seen_ == 100 and est.n_steps_seen_ == 2


def test_sample_weight():
    X = np.random.default_rng(7).normal(size=(5000, 3)) / 3
    a = StreamingMomentEstimator(norm_bound=2.0, random_state=0).fit(X)
    b = StreamingMomentEstimator(norm_bound=2.0, random_state=0).fit(X, sample_weight=np.ones(5000))
    np.testing.assert_array_equal(a.first_moment_, b.first_moment_)
    np.testing.assert_array_equal(a.second_moment_, b.second_moment_)
    # Integer weights act as repeated rows (noise-free limit, sums).
    w = np.arange(5000) % 3
    est = StreamingMomentEstimator(epsilon=1e12, norm_bound=2.0, max_weight=2.0,
                                   random_state=0).fit(X, sample_weight=w)
    np.testing.assert_allclose(est.first_moment_, w @ X, atol=1e-3)
    # A weighted mean divides by the (noisy) total weight.
    avg = StreamingMomentEstimator(epsilon=1e12, norm_bound=2.0, max_weight=2.0,
                                   workload="average", random_state=0).fit(X, sample_weight=w)
    np.testing.assert_allclose(avg.first_moment_, w @ X / w.sum(), atol=1e-6)
    acc = BudgetAccountant(epsilon=5.0, delta=1e-5)
    for bad, match in [(np.full(5000, 1.5), "max_weight"), (-np.ones(5000), "non-negative"),
                       (np.full(5000, np.nan), "NaN"), (np.ones(3), "shape")]:
        with pytest.raises(ValueError, match=match):
            StreamingMomentEstimator(norm_bound=2.0, accountant=acc).fit(X, sample_weight=bad)
    assert acc.ledger == []


def test_budget_charged_once_per_stream_and_dataframes():
    acc = BudgetAccountant(epsilon=3.0, delta=1e-5)
    df = pd.DataFrame(np.zeros((10, 2)), columns=["a", "b"])
    est = StreamingMomentEstimator(accountant=acc, norm_bound=1.0, random_state=0)
    est.partial_fit(df.iloc[:5]).partial_fit(df.iloc[5:])
    assert len(acc.ledger) == 1
    assert list(est.feature_names_in_) == ["a", "b"]
    est.fit(df)
    assert len(acc.ledger) == 2
    assert est.privacy_spent_.epsilon == pytest.approx(1.0)
    # After a table release, partial_fit starts (and pays for) a new stream.
    est.partial_fit(df)
    assert len(acc.ledger) == 3 and est.n_steps_seen_ == 1


@pytest.mark.parametrize("X,params,match", [
    (np.array([[np.nan, 1.0]]), {}, "NaN"),
    (np.array([[np.inf, 1.0]]), {}, "infinity"),
    (np.ones((3, 2)), {"norm_bound": 0.0}, "norm_bound"),
    (np.ones((3, 2)), {"norm_bound": -1.0}, "norm_bound"),
    (np.ones((3, 2)), {"norm_bound": 1e300}, "norm_bound"),
    (np.ones((5, 2)), {"n_steps": 4, "release": "per_row", "noise_shaping": "sqrt",
                       "norm_bound": 1.0}, "horizon"),
    (np.ones((5, 2)), {"method": "svd"}, "method"),
    (np.ones((5, 2)), {"workload": "exponential"}, "beta"),
    (np.ones((5, 2)), {"noise_shaping": "nu", "release": "per_row", "norm_bound": 1.0}, "nu"),
    (np.ones((5, 2)), {"noise_shaping": np.triu(np.ones((5, 5))), "release": "per_row",
                       "norm_bound": 1.0}, "lower triangular"),
    (np.ones((5, 2)), {"method": "cs", "second_workload": "exponential", "beta": 0.5,
                       "norm_bound": 1.0}, "one noise-shaping"),
    (np.ones((5, 2)), {"method": "pp", "norm_bound": 1.0}, "release='per_row'"),
    (np.ones((5, 2)), {"noise_shaping": "workload_sqrt"}, "noise_shaping"),
])
def test_bad_input(X, params, match):
    acc = BudgetAccountant(epsilon=3.0, delta=1e-5)
    with pytest.raises(ValueError, match=match):
        StreamingMomentEstimator(accountant=acc, **params).fit(X)
    assert acc.ledger == []  # every error comes before the charge


@pytest.mark.parametrize("params, match", [
    ({"beta": 0.5}, "beta=0.5 is ignored"),
    ({"window": 3, "workload": "exponential", "beta": 0.9}, "window=3 is ignored")])
def test_a_parameter_of_another_workload_is_said_to_be_ignored(params, match):
    # Session 23's trial: workload='prefix' with beta=0.5 silently ignored beta.
    with pytest.warns(UserWarning, match=match):
        StreamingMomentEstimator(norm_bound=1.0, random_state=0, **params).fit(np.ones((5, 2)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # used by one of the two workloads: no warning
        StreamingMomentEstimator(norm_bound=1.0, second_workload="exponential", beta=0.5,
                                 random_state=0).fit(np.ones((5, 2)))


def test_stream_errors():
    est = StreamingMomentEstimator(noise_shaping="sqrt", norm_bound=1.0)
    with pytest.raises(ValueError, match="n_steps"):
        est.partial_fit(np.ones((2, 2)))
    est = StreamingMomentEstimator(noise_shaping="sqrt", n_steps=2, norm_bound=1.0,
                                   random_state=0).partial_fit(np.ones((2, 2)))
    with pytest.raises(ValueError, match="features"):
        est.partial_fit(np.ones((1, 3)))
    est.partial_fit(np.ones((5, 2)))  # a call is one step, whatever its rows
    with pytest.raises(ValueError, match="horizon"):
        est.partial_fit(np.ones((1, 2)))
    assert est.n_steps_seen_ == 2 and est.n_samples_seen_ == 7  # failed calls changed nothing
    # 'blt' and 'identity' have no horizon: n_steps only tunes 'blt'.
    est = StreamingMomentEstimator(n_steps=2, norm_bound=1.0, random_state=0)
    for _ in range(5):
        est.partial_fit(np.ones((1, 2)))
    assert est.n_steps_seen_ == 5


def test_pickles_drop_the_secret_noise_state():
    import copy
    import pickle

    X = np.random.default_rng(4).normal(size=(20, 2)) / 3
    est = StreamingMomentEstimator(norm_bound=1.0, random_state=0).partial_fit(X)
    for other in (pickle.loads(pickle.dumps(est)), copy.deepcopy(est)):
        np.testing.assert_array_equal(other.second_moment_, est.second_moment_)
        with pytest.raises(RuntimeError, match="secret noise state"):
            other.partial_fit(X[:2])
        assert other.fit(X).n_steps_seen_ == 1  # a new release is fine
    est.partial_fit(X[:2])  # the original continues
    assert est.n_steps_seen_ == 2


def test_covariance_is_debiased_and_feasible_and_says_what_is_raw():
    # Issue 24: S - m m^T from the raw release can be indefinite; covariance()
    # projects it (post-processing), covariance(feasible=False) is the raw one.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 4)) * [1.0, 0.5, 0.1, 0.01]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = StreamingMomentEstimator(workload="average", norm_bound=4.0,
                                       random_state=1).fit(X)
    raw = est.covariance(feasible=False)
    np.testing.assert_allclose(raw, est.second_moment_ - np.outer(est.first_moment_,
                                                                  est.first_moment_))
    assert np.linalg.eigvalsh(raw).min() < 0  # the tiny column's variance is below the noise
    cov = est.covariance()
    vals = np.linalg.eigvalsh(cov)
    assert vals.min() >= -1e-12 and vals.max() <= 16.0 and np.trace(cov) <= 16.0 + 1e-9
    with pytest.raises(ValueError, match="means"):
        StreamingMomentEstimator(norm_bound=4.0, random_state=0).fit(X).covariance()


@pytest.mark.parametrize("make", [
    lambda **kw: StreamingMomentEstimator(**kw),
    lambda **kw: skdp.density.PrivateGaussianDensity(**kw),
    lambda **kw: skdp.decomposition.DPPCA(**kw),
])
def test_a_norm_bound_below_1e_minus_100_is_refused_before_the_charge(make):
    # norm_bound=1e-300 squared to 0 in the calibration, which raised a
    # ZeroDivisionError only after the budget was charged.
    from sklearn.utils._param_validation import InvalidParameterError

    acc = BudgetAccountant(epsilon=10, delta=1e-5)
    X = np.random.default_rng(0).normal(size=(50, 3))
    with pytest.raises(InvalidParameterError, match="norm_bound"):
        make(norm_bound=1e-300, accountant=acc, random_state=0).fit(X)
    assert acc.spent_mu == 0.0
    make(norm_bound=1e-100, accountant=acc, random_state=0).fit(X)


@pytest.mark.parametrize("first,kw", [("exponential", {"beta": 0.9}), ("window", {"window": 5})])
def test_a_one_shot_prefix_second_moment_sums_every_row(first, kw):
    # With a weighted first workload and an unweighted (prefix) second one, the
    # second moment's weights were passed as None, which the sums read as "the
    # first moment's weights": an exponentially weighted sum (0.8 instead of 27).
    X = np.random.default_rng(0).normal(size=(30, 2))
    est = StreamingMomentEstimator(epsilon=1e9, norm_bound=10.0, workload=first,
                                   second_workload="prefix", random_state=0, **kw).fit(X)
    # Noise std noise_stds_[1] per entry (diagonal); 6 stds is a 2e-9 two-sided miss.
    np.testing.assert_allclose(est.second_moment_, X.T @ X, atol=6 * est.noise_stds_[1])


def test_a_blt_damping_below_1e_minus_15_is_refused_before_the_charge():
    # nu = 1e-17 rounded BLT's buffer decays to 1 and its calibration to NaN, after
    # the charge (DP-SGD raised; the moments released NaN).
    from sklearn.utils._param_validation import InvalidParameterError

    from skdp.linear_model import DPSGDRegressor

    X = np.random.default_rng(0).normal(size=(200, 3))
    acc = BudgetAccountant(epsilon=10, delta=1e-5)
    with pytest.raises(InvalidParameterError, match="nu"):
        DPSGDRegressor(nu=1e-17, clip_norm=1.0, accountant=acc).fit(X, X.sum(axis=1))
    with pytest.raises(InvalidParameterError, match="nu"):
        StreamingMomentEstimator(method="pp", noise_shaping="blt", nu=1e-17, norm_bound=1.0,
                                 accountant=acc).partial_fit(X)
    assert acc.spent_mu == 0.0



@pytest.mark.parametrize("make", [
    lambda: StreamingMomentEstimator(norm_bound=2.0, n_steps=5, noise_shaping="sqrt",
                                     random_state=0),
    lambda: StreamingMomentEstimator(norm_bound=2.0, release="per_row", random_state=0),
    lambda: skdp.density.PrivateGaussianDensity(norm_bound=2.0, random_state=0),
], ids=["steps", "per_row", "density"])
def test_a_call_that_fails_between_its_releases_ends_the_stream(make, fail_on_call):
    # An error after the first release of a call (a memory error between the first
    # and second moments' noise) left noise1 a step ahead of noise2, and the
    # stream went on (the review of session 22). It now ends there.
    from skdp.mechanisms import CorrelatedNoise
    X = np.random.default_rng(0).normal(size=(300, 2)) * 0.3
    est = make().partial_fit(X[:100])
    undo = fail_on_call(CorrelatedNoise, "release", 2)  # between the two moments' noise
    with pytest.raises(MemoryError):
        est.partial_fit(X[100:200])
    undo()
    with pytest.raises(ValueError, match="failed after it began drawing"):
        est.partial_fit(X[200:])
    est.fit(X[200:])  # a new stream
    est.partial_fit(X[:100])


def test_an_unweighted_mean_divides_by_the_public_row_count():
    # Session 23: a table's mean divided its noisy first-moment sum by a noisy total
    # weight even without weights, where the total is the public n. Rows all equal
    # to v = (1.6, 0) inside the bound 2: the old error of the first coordinate also
    # carried v_1 times the total's noise (std1 / gamma, gamma = zeta / 4, the total
    # clipped at n from above), 2.1 times the sum's noise alone (measured on the old
    # code). Now it is the sum's noise over n. 300 fits: the sample sd has relative
    # sd 1 / sqrt(2 * 299) = 0.041; 0.16 is 4 of them.
    n = 1000
    X = np.tile([1.6, 0.0], (n, 1))
    fits = [StreamingMomentEstimator(workload="average", norm_bound=2.0, random_state=r).fit(X)
            for r in range(300)]
    errors = np.array([f.first_moment_[0] - 1.6 for f in fits])
    assert errors.std(ddof=1) / (fits[0].noise_stds_[0] / n) == pytest.approx(1.0, abs=0.16)


def test_partial_fit_after_a_one_release_fit_warns_that_it_starts_a_new_stream():
    # A second new user's trial (session 23): after fit(X) (one release of the table)
    # a partial_fit silently started a new stream with a second charge, where the
    # scaler and DP-SGD continue theirs. It still must (fit left no stream), but says so.
    from skdp.density import PrivateGaussianDensity

    X = np.random.default_rng(0).normal(size=(8000, 3)) * 0.3
    for make in (StreamingMomentEstimator, PrivateGaussianDensity):
        acc = BudgetAccountant(epsilon=5.0, delta=1e-5)
        est = make(norm_bound=2.0, accountant=acc, random_state=0).fit(X)
        with pytest.warns(UserWarning, match="starts a new stream, charged anew"):
            est.partial_fit(X[:48])
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the stream it started continues quietly
            est.partial_fit(X[48:96])
        assert len(acc.ledger) == 2


def test_a_weighted_mean_reports_the_noise_of_its_total_too():
    # The review of session 23: a weighted table's mean divides by the released total
    # weight, whose relative noise the reported noise scales left out (the mean's
    # noise was 3.45x the reported one for rows at (1.6, 0) with weight 0.5). The
    # reported variance is one scalar per release: the average over coordinates. 300
    # fits of 2 coordinates: the measured RMS sd has relative sd about
    # 1 / sqrt(2 * 600) = 0.03; the total is clipped at n W from above, which takes
    # up to 7% off the measured noise; 0.15 covers both.
    n = 1000
    X = np.tile([1.6, 0.0], (n, 1))
    fits = [StreamingMomentEstimator(workload="average", norm_bound=2.0, random_state=r).fit(
        X, sample_weight=np.full(n, 0.5)) for r in range(300)]
    firsts = np.array([f.first_moment_ for f in fits])
    seconds = np.array([np.diag(f.second_moment_) for f in fits])
    reported_mean = np.sqrt(np.mean([f._release_info["mean_noise_var"] for f in fits]))
    reported_second = np.mean([f._release_info["second_noise_std"] for f in fits])
    assert np.sqrt(np.mean(firsts.var(axis=0))) / reported_mean == pytest.approx(1.0, abs=0.15)
    assert np.sqrt(np.mean(seconds.var(axis=0))) / reported_second == pytest.approx(1.0, abs=0.15)
