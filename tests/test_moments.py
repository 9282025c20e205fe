import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize

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
        est = StreamingMomentEstimator(norm_bound=zeta, noise_shaping=shaping, nu=kw.get("nu"),
                                       n_steps=kw.get("n_steps"), random_state=0).fit(X)
        alone = StreamingMomentEstimator(method="pp", debias=False, norm_bound=zeta,
                                         noise_shaping=shaping, nu=kw.get("nu"),
                                         n_steps=kw.get("n_steps"), random_state=0).fit(X)
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
                                       **method_kw).fit(X)
        e1 += np.sum((est.first_moments_ - Y) ** 2)
        e2 += np.sum((est.second_moments_ - S) ** 2)
    return e1 / reps, e2 / reps, est


@pytest.mark.parametrize("shaping", ["identity", "sqrt"])
@pytest.mark.parametrize("d", [1, 10])
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
    points = [ime_noise_stds(MU, 1.0, 1.0, 1.0, a) for a in np.linspace(0.05, 0.95, 19)]
    points += [cs_noise_stds(MU, 1.0, 1.0, t) for t in np.geomspace(0.01, 100, 21)]
    for std1, std2 in points:
        jme1, jme2 = _jme_std2_at_std1(std1, d)
        assert jme1 <= std1 * (1 + 1e-9)
        assert jme2 < std2
    # And the estimator uses those stds.
    X = np.zeros((5, d))
    est = StreamingMomentEstimator(method="ime", budget_split=0.3, random_state=0).fit(X)
    assert est.noise_stds_ == pytest.approx(ime_noise_stds(MU, 1.0, 1.0, 1.0, 0.3))
    est = StreamingMomentEstimator(method="cs", tau=2.0, random_state=0).fit(X)
    assert est.noise_stds_ == pytest.approx(cs_noise_stds(MU, 1.0, 1.0, 2.0))


# -- PP: the exact bias ---------------------------------------------------------------------

@pytest.mark.parametrize("shaping", ["identity", "sqrt"])
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
                n_steps=n, random_state=r).fit(X).second_moments_ - S, axis1=1, axis2=2).sum()
            for r in range(reps)])
        z = errs.mean() / (errs.std(ddof=1) / math.sqrt(reps))
        if debias:
            assert abs(z) < 3  # fixed seeds: a 3-sd band around zero
        else:
            assert z > 10  # the squared noise is all positive on the diagonal


# -- the stream ---------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["jme", "ime", "cs", "pp"])
@pytest.mark.parametrize("shaping,kw", [("identity", {}), ("sqrt", {"n_steps": 40}),
                                        ("nu", {"nu": 0.05}), ("workload_sqrt", {"n_steps": 40})])
def test_row_by_row_partial_fit_equals_fit(method, shaping, kw):
    X = np.random.default_rng(2).normal(size=(40, 3)) / 2
    common = dict(method=method, workload="exponential", beta=0.9, second_workload="window",
                  window=5, noise_shaping=shaping, random_state=11, **kw)
    if method == "cs" and shaping == "workload_sqrt":
        common["second_workload"] = None
    whole = StreamingMomentEstimator(**common).fit(X)
    stream = StreamingMomentEstimator(**common)
    for row in X:
        stream.partial_fit(row[None, :])
    np.testing.assert_allclose(stream.first_moments_, whole.first_moments_, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(stream.second_moments_, whole.second_moments_, rtol=1e-9, atol=1e-9)
    assert stream.n_steps_seen_ == 40
    np.testing.assert_array_equal(stream.first_moment_, stream.first_moments_[-1])


def test_noise_free_limit_is_the_workload():
    # At epsilon = 1e12 (mu ~ 1.4e6) the noise stds are ~2e-6: the releases
    # are A1 X and A2 (X o X) to within 1e-4 (> 40 sd).
    X = np.random.default_rng(3).normal(size=(30, 2)) / 6  # norms < 1: no clipping
    est = StreamingMomentEstimator(epsilon=1e12, workload="window", window=4,
                                   second_workload="exponential", beta=0.8,
                                   random_state=0).fit(X)
    A1, A2 = workload_matrix("window", 30, k=4), workload_matrix("exponential", 30, beta=0.8)
    np.testing.assert_allclose(est.first_moments_, A1 @ X, atol=1e-4)
    np.testing.assert_allclose(est.second_moments_, np.einsum("ts,si,sj->tij", A2, X, X), atol=1e-4)
    diag = StreamingMomentEstimator(epsilon=1e12, diagonal_only=True, random_state=0).fit(X)
    np.testing.assert_allclose(diag.second_moments_, np.cumsum(X**2, axis=0), atol=1e-4)


def test_rows_are_clipped_to_the_norm_bound():
    X = np.array([[3.0, 4.0]])  # norm 5 -> (0.6, 0.8) at norm_bound 1
    est = StreamingMomentEstimator(epsilon=1e12, random_state=0).fit(X)
    np.testing.assert_allclose(est.first_moment_, [0.6, 0.8], atol=1e-4)


def test_budget_charged_once_per_stream_and_dataframes():
    acc = BudgetAccountant(epsilon=3.0, delta=1e-5)
    df = pd.DataFrame(np.zeros((10, 2)), columns=["a", "b"])
    est = StreamingMomentEstimator(accountant=acc, random_state=0)
    est.partial_fit(df.iloc[:5]).partial_fit(df.iloc[5:])
    assert len(acc.ledger) == 1
    assert list(est.feature_names_in_) == ["a", "b"]
    est.fit(df)
    assert len(acc.ledger) == 2
    assert est.privacy_spent_.epsilon == pytest.approx(1.0)


@pytest.mark.parametrize("X,params,match", [
    (np.array([[np.nan, 1.0]]), {}, "NaN"),
    (np.array([[np.inf, 1.0]]), {}, "infinity"),
    (np.ones((3, 2)), {"norm_bound": 0.0}, "norm_bound"),
    (np.ones((3, 2)), {"norm_bound": -1.0}, "norm_bound"),
    (np.ones((5, 2)), {"n_steps": 4}, "horizon"),
    (np.ones((5, 2)), {"method": "svd"}, "method"),
    (np.ones((5, 2)), {"workload": "exponential"}, "beta"),
    (np.ones((5, 2)), {"noise_shaping": "nu"}, "nu"),
    (np.ones((5, 2)), {"noise_shaping": np.triu(np.ones((5, 5)))}, "lower triangular"),
    (np.ones((5, 2)), {"method": "cs", "noise_shaping": "workload_sqrt",
                       "second_workload": "average"}, "one noise-shaping"),
])
def test_bad_input(X, params, match):
    with pytest.raises(ValueError, match=match):
        StreamingMomentEstimator(**params).fit(X)


def test_stream_errors():
    est = StreamingMomentEstimator(noise_shaping="sqrt")
    with pytest.raises(ValueError, match="n_steps"):
        est.partial_fit(np.ones((2, 2)))
    est = StreamingMomentEstimator(n_steps=3, random_state=0).partial_fit(np.ones((2, 2)))
    with pytest.raises(ValueError, match="features"):
        est.partial_fit(np.ones((1, 3)))
    with pytest.raises(ValueError, match="horizon"):
        est.partial_fit(np.ones((2, 2)))
    assert est.n_steps_seen_ == 2  # the failed calls changed nothing
    est.partial_fit(np.ones((1, 2)))
    assert est.n_steps_seen_ == 3


def test_pickles_drop_the_secret_noise_state():
    import copy
    import pickle

    X = np.random.default_rng(4).normal(size=(20, 2)) / 3
    est = StreamingMomentEstimator(noise_shaping="nu", nu=0.1, random_state=0).fit(X)
    for other in (pickle.loads(pickle.dumps(est)), copy.deepcopy(est)):
        np.testing.assert_array_equal(other.second_moments_, est.second_moments_)
        with pytest.raises(RuntimeError, match="secret noise state"):
            other.partial_fit(X[:2])
        assert other.fit(X).n_steps_seen_ == 20  # a new stream is fine
    est.partial_fit(X[:2])  # the original continues
    assert est.n_steps_seen_ == 22
