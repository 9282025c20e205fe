import contextlib
import warnings

import numpy as np
import pytest
from scipy.special import binom

from skdp.clipping import geometric_grid, private_quantiles
from skdp.mechanisms import (
    MAX_WEIGHT,
    CorrelatedNoise,
    PlannedRelease,
    WorkloadStream,
    blt_coefficients,
    blt_parameters,
    blt_sensitivity_factor,
    correlated_noise,
    cyclic_sensitivity_factor,
    gaussian_noise,
    gaussian_release,
    make_rng,
    noise_shaping_matrix,
    private_gram,
    record_release,
    record_releases,
    secure_mode,
    sensitivity_factor,
    toeplitz_coefficients,
    toeplitz_sensitivity_factor,
    workload_matrix,
)

# -- random generators ---------------------------------------------------------


def test_make_rng_inputs():
    assert make_rng(3).standard_normal() == make_rng(3).standard_normal()
    assert make_rng(3).standard_normal() != make_rng(4).standard_normal()
    g = np.random.default_rng(0)
    # A Generator seeds a new generator (never used itself: its state, in a
    # pickle, would replay the noise); successive calls differ.
    assert make_rng(g) is not g
    assert make_rng(g).standard_normal() != make_rng(g).standard_normal()
    assert make_rng(3, entry=0).standard_normal() != make_rng(3).standard_normal()
    rs = np.random.RandomState(0)
    # A RandomState seeds a new generator from its stream: successive calls differ.
    assert make_rng(rs).standard_normal() != make_rng(rs).standard_normal()
    assert make_rng(None).standard_normal() != make_rng(None).standard_normal()
    with pytest.raises(TypeError):
        make_rng("seed")
    with pytest.raises(ValueError):
        make_rng(-1)


def test_secure_mode_refuses_seeds_and_is_scoped():
    with secure_mode():
        a, b = make_rng(None).standard_normal(), make_rng(None).standard_normal()
        assert a != b
        for seed in (0, np.random.default_rng(0), np.random.RandomState(0)):
            with pytest.raises(ValueError, match="Secure mode"):
                make_rng(seed)
    make_rng(0)  # allowed again outside the context


def test_secure_mode_reaches_worker_threads():
    import threading

    errors = []

    def worker():
        try:
            make_rng(0)
        except ValueError as exc:
            errors.append(exc)

    with secure_mode():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert len(errors) == 1


def test_a_weighted_gram_release_is_exactly_symmetric():
    # sum_i w_i z_i z_i^T in floating point is symmetric only up to rounding; noise
    # mirrored onto both triangles used to leave G_ij - G_ji, a residue of the data,
    # in the release without noise. Only the upper triangle is read now, in both modes.
    rng = np.random.default_rng(0)
    X, w = rng.normal(size=(5000, 6)), rng.uniform(0.1, 2.0, size=5000)
    for secure in (False, True):
        with secure_mode() if secure else contextlib.nullcontext():
            G, _ = private_gram(X, fit_intercept=True, norm_bound=3.0, mu=1.0,
                                rng=make_rng(None if secure else 0), sample_weight=w,
                                max_weight=2.0)
        np.testing.assert_array_equal(G, G.T)



def test_a_scalar_release_draws_what_the_general_path_draws():
    # gaussian_release takes a fast path for one scalar std (no broadcasting):
    # the same noise, the same record, the same errors as PlannedRelease.
    value = np.arange(6.0).reshape(2, 3)
    with record_releases() as fast_log:
        fast = gaussian_release(value, 0.5, make_rng(3), name="a", sensitivity=2.0, weight=4.0)
    with record_releases() as slow_log:
        slow = PlannedRelease(0.5, 1, value.shape, make_rng(3), name="a", sensitivity=2.0,
                              weight=4.0).add(0, value)
    np.testing.assert_array_equal(fast, slow)
    assert fast_log == slow_log and len(fast_log) == 1 and fast_log[0].size == 6
    for std in (-1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="finite and >= 0"):
            gaussian_release(value, std, make_rng(0))
    # A 0-d value, and part and weight_power, are kept as the general path keeps them.
    with record_releases() as fast_log:
        fast = gaussian_release(2.0, 0.5, make_rng(4), sensitivity=1.0, part="a", weight_power=2)
    with record_releases() as slow_log:
        slow = PlannedRelease(0.5, 1, (), make_rng(4), sensitivity=1.0, part="a",
                              weight_power=2).add(0, 2.0)
    assert fast == slow and np.ndim(fast) == 0 and fast_log == slow_log
    # Secure mode never takes the fast path: its release is on a grid, drawn from the
    # operating system (no generator fingerprint in the record).
    with secure_mode(), record_releases() as log:
        gaussian_release(value, 0.5, make_rng(None), sensitivity=2.0)
    assert len(log) == 1 and log[0].stream is None


def test_every_release_refuses_a_weight_bound_beyond_max_weight():
    # With weights above 1e10 a sum of rows can overflow on one table and not on
    # its neighbour (the Gram of 180 rows at weight 1e206 did, of 179 rows not):
    # the release functions refuse the bound, so the public helpers keep it too.
    X, w = np.ones((10, 2)), np.ones(10)
    too_big = MAX_WEIGHT * 10
    calls = [
        lambda: gaussian_release(np.zeros(2), 1.0, make_rng(0), weight=too_big),
        lambda: gaussian_noise(1.0, 2, make_rng(0), weight=too_big),
        lambda: PlannedRelease(1.0, 3, 2, make_rng(0), weight=too_big),
        lambda: record_release("a", 1.0, 1.0, weight=too_big),
        lambda: private_gram(X, fit_intercept=True, norm_bound=1.0, mu=1.0, rng=make_rng(0),
                             sample_weight=w, max_weight=too_big),
        lambda: private_quantiles(np.ones((8, 1)), geometric_grid()[:8], mu=1.0,
                                  rng=make_rng(0), max_weight=too_big),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="max_weight"):
            call()
    with secure_mode(), pytest.raises(ValueError, match="max_weight"):
        gaussian_release(np.zeros(2), 1.0, make_rng(None), weight=too_big)
    gaussian_release(np.zeros(2), 1.0, make_rng(0), weight=MAX_WEIGHT)  # the bound itself
    gaussian_release(np.zeros(2), 1.0, make_rng(0), weight=None)  # counts ignoring weights
    # A Gram's declared norm bound too: rows clipped to 1e150 have squares of 1e300.
    for bound in (1e150, 1e-150):
        with pytest.raises(ValueError, match="norm_bound"):
            private_gram(X, fit_intercept=True, norm_bound=bound, mu=1.0, rng=make_rng(0))



def test_private_gram_refuses_weights_beyond_its_bound_before_the_draw():
    # Its noise is sized for max_weight; a heavier row (or a NaN weight) used to
    # pass: one weight of 1e4 with max_weight=1 put 1e4 on an entry whose noise
    # std is 1.41 (the privacy audit of session 22).
    X = np.ones((10, 2)) * 0.5
    kw = dict(fit_intercept=True, norm_bound=1.0, mu=1.0)
    for bad in (1e4, np.nan, -1.0):
        w = np.ones(10)
        w[3] = bad
        with record_releases() as log, pytest.raises(ValueError, match="sample_weight|weight"):
            private_gram(X, rng=make_rng(0), sample_weight=w, max_weight=1.0, **kw)
        assert log == []
    w = np.ones(10)
    w[3] = 2.0
    G, std = private_gram(X, rng=make_rng(0), sample_weight=w, max_weight=2.0, **kw)
    assert std == pytest.approx(np.sqrt(2) * 2.0)


def test_symmetric_release_draws_the_off_diagonal_std_it_is_given():
    # Outside secure mode it drew std (Z + Z^T) / 2 whatever offdiagonal_std said
    # (std / sqrt(2) off the diagonal: 0.71 when 5 was asked for). 4,000 draws of
    # each entry: the sample std of N normal draws has standard error sigma /
    # sqrt(2 N), 1.1% of sigma; 5% is over 4 of them.
    from skdp.mechanisms import symmetric_release
    rng = make_rng(0)
    for off, std in ((5.0, 1.0), (1.0 / np.sqrt(2), 1.0), (None, 2.0)):
        draws = np.array([symmetric_release(np.zeros((3, 3)), std, rng, offdiagonal_std=off)
                          for _ in range(4000)])
        assert np.all(draws == draws.transpose(0, 2, 1))
        want = std if off is None else off
        assert draws[:, 0, 1].std() == pytest.approx(want, rel=0.05)
        assert draws[:, 2, 1].std() == pytest.approx(want, rel=0.05)
        assert draws[:, 1, 1].std() == pytest.approx(std, rel=0.05)
    # The release log gives the mechanism's mu for a Frobenius sensitivity S:
    # S / min(std, sqrt(2) off) (the log had said S / max(std, off) for off = 0.01).
    from skdp.mechanisms import composed_mu
    for off, mu in ((5.0, 1.0), (0.01, 1.0 / (np.sqrt(2) * 0.01)), (None, 1.0),
                    (1.0 / np.sqrt(2), 1.0)):
        for secure in (False, True):
            with record_releases() as log, (secure_mode() if secure else contextlib.nullcontext()):
                symmetric_release(np.zeros((3, 3)), 1.0, make_rng(None if secure else 0),
                                  offdiagonal_std=off, sensitivity=1.0)
            assert composed_mu(log) == pytest.approx(mu, rel=1e-9)
    with record_releases() as log:  # off-diagonal entries released exactly
        symmetric_release(np.zeros((3, 3)), 1.0, make_rng(0), offdiagonal_std=0.0,
                          sensitivity=1.0)
    assert composed_mu(log) == np.inf

def test_private_gram_checks_its_parameters_before_reading_a_row_and_stays_finite():
    # The weight bound is refused before the sum (it used to overflow first, with a
    # warning on one table and not on its neighbour); a huge public x_scale used to
    # overflow a row of 1e10 but not a row of 1.
    kw = dict(fit_intercept=True, norm_bound=1.0, mu=1.0)
    big = np.full((18, 2), 1e100)
    for last in (1e107, 1.0):
        w = np.full(18, 1e107)
        w[-1] = last
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no overflow warning before the refusal
            with pytest.raises(ValueError, match="max_weight"):
                private_gram(big, rng=make_rng(0), sample_weight=w, max_weight=1e107, **kw)
    for name, value in (("x_scale", 1e101), ("x_scale", 0.0), ("intercept_value", 1e101)):
        with pytest.raises(ValueError, match=name):
            private_gram(big, rng=make_rng(0), **{name: value}, **kw)
    with pytest.raises(ValueError, match="finite"):
        private_gram(np.array([[1.0, np.nan]]), rng=make_rng(0), **kw)
    # Neighbouring tables, one row far beyond the others, at the largest x_scale: the
    # release is finite on each.
    rows = np.ones((5, 2))
    for last in ([1e300, -1e300], [1.0, 0.0], [1e10, 0.0]):
        X = np.vstack([rows, last])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            G, _ = private_gram(X, rng=make_rng(0), x_scale=1e100, **kw)
        assert np.all(np.isfinite(G))
    # Rows of 200 columns at the cap and the largest scale: each clipped to the bound
    # (trace n B**2), none dropped. At mu = 1e12 each entry's noise has std
    # sqrt(2) B**2 / mu = 5.7e-12, and the trace sums 201 of them (std 8e-11): 1e-6 is
    # over 10,000 of those stds.
    G, _ = private_gram(np.full((3, 200), 1e50), rng=make_rng(0), x_scale=1e100, fit_intercept=True,
                        norm_bound=2.0, mu=1e12)
    assert abs(np.trace(G) - 3 * 2.0**2) < 1e-6
    # x_scale applies without y and intercept too (it was ignored there): rows (2, 2).
    # Noise std sqrt(2) * 100**2 / 1e12 = 1.4e-8 per entry: 1e-6 is 70 stds, and the
    # unscaled Gram (4 per entry) is 12 away.
    G, _ = private_gram(np.ones((4, 2)), rng=make_rng(0), x_scale=2.0, fit_intercept=False,
                        norm_bound=100.0, mu=1e12)
    np.testing.assert_allclose(G, np.full((2, 2), 16.0), atol=1e-6)


def test_private_gram_maps_a_dask_table_as_the_estimators_do():
    # Session 19: a Dask X reached the sums unchecked and uncapped (NaN made the Gram NaN,
    # a value of 1e300 overflowed at a large x_scale). Each value is now mapped as it is
    # read: NaN to 0, beyond 1e50 to the cap, as the in-memory caller must do first.
    da = pytest.importorskip("dask.array")
    X = np.ones((6, 2))
    X[1, 0], X[2, 1], X[3, 0], X[4, 1] = np.nan, np.inf, -1e300, 1e60
    y = np.arange(6.0)
    y[5] = np.nan
    mapped_X = np.clip(np.nan_to_num(X, nan=0.0, posinf=1e50, neginf=-1e50), -1e50, 1e50)
    mapped_y = np.nan_to_num(y, nan=0.0)
    kw = dict(fit_intercept=True, norm_bound=3.0, mu=1.0, x_scale=1e100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        G, std = private_gram(da.from_array(X, chunks=2), y=da.from_array(y, chunks=2),
                              rng=make_rng(0), **kw)
    G_mem, std_mem = private_gram(mapped_X, y=mapped_y, rng=make_rng(0), **kw)
    # Same noise draws; the sums differ only in their order (partitions of 2 rows),
    # by a few roundings of entries of at most 6 * 3**2 = 54.
    assert std == std_mem
    np.testing.assert_allclose(G, G_mem, rtol=0, atol=1e-12)


def test_gaussian_noise_std_monte_carlo():
    # The sample variance of N iid N(0, s^2) draws has std s^2 sqrt(2 / (N - 1));
    # with N = 200_000 a 5-sigma band is |var / s^2 - 1| < 5 sqrt(2 / N) = 0.0158
    # (false alarm < 1e-6 for a fresh seed; the seed here is fixed).
    n, std = 200_000, 3.0
    draws = gaussian_noise(std, n, make_rng(12))
    assert abs(draws.var(ddof=1) / std**2 - 1) < 5 * np.sqrt(2 / n)
    # Mean: std / sqrt(N) standard error, 5-sigma band.
    assert abs(draws.mean()) < 5 * std / np.sqrt(n)
    assert gaussian_noise(0.0, 3, make_rng(0)).tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError):
        gaussian_noise(-1.0, 3, make_rng(0))
    with pytest.raises(ValueError):
        gaussian_noise(np.nan, 3, make_rng(0))


# -- workloads -----------------------------------------------------------------

WORKLOAD_CASES = [("prefix", {}), ("average", {}), ("exponential", {"beta": 0.9}),
                  ("exponential", {"beta": 1.0}), ("window", {"k": 1}), ("window", {"k": 7})]


def test_workload_matrices_match_table_1():
    n = 6
    t, i = np.meshgrid(np.arange(1, n + 1), np.arange(1, n + 1), indexing="ij")
    low = i <= t
    np.testing.assert_allclose(workload_matrix("prefix", n), low * 1.0)
    np.testing.assert_allclose(workload_matrix("average", n), low / t)
    np.testing.assert_allclose(workload_matrix("exponential", n, beta=0.5), low * 0.5 ** np.abs(t - i))
    np.testing.assert_allclose(workload_matrix("window", n, k=2), (low & (t - 2 < i)) / 2)
    np.testing.assert_allclose(workload_matrix("exponential", n, beta=1.0), workload_matrix("prefix", n))


@pytest.mark.parametrize("kind,params", WORKLOAD_CASES)
@pytest.mark.parametrize("blocks", [[1] * 40, [40], [3, 1, 10, 0, 26]])
def test_streaming_workload_equals_dense(kind, params, blocks):
    rng = make_rng(0)
    X = rng.normal(size=(40, 2, 3))  # rows of any shape (here matrices)
    dense = np.einsum("ti,ijk->tjk", workload_matrix(kind, 40, **params), X)
    ws = WorkloadStream(kind, **params)
    out, start = [], 0
    for m in blocks:
        out.append(ws.update(X[start:start + m]))
        start += m
    np.testing.assert_allclose(np.concatenate(out), dense, rtol=1e-12, atol=1e-12)
    assert ws.n_steps_seen == 40


def test_window_state_is_bounded():
    ws = WorkloadStream("window", k=5)
    ws.update(np.ones((1000, 3)))
    assert ws._window.shape == (5, 3)


def test_workload_errors():
    with pytest.raises(ValueError, match="Unknown workload"):
        workload_matrix("median", 3)
    with pytest.raises(ValueError, match="beta"):
        workload_matrix("exponential", 3)
    with pytest.raises(ValueError, match="beta"):
        WorkloadStream("exponential", beta=1.5)
    with pytest.raises(ValueError, match="k"):
        workload_matrix("window", 3, k=0)
    with pytest.raises(ValueError, match="n must"):
        workload_matrix("prefix", 0)
    ws = WorkloadStream("prefix")
    ws.update(np.ones((2, 3)))
    with pytest.raises(ValueError, match="shape"):
        ws.update(np.ones((2, 4)))


# -- noise shaping -------------------------------------------------------------


def test_sqrt_factorises_prefix_sum_at_n_2000():
    n = 2000
    C = noise_shaping_matrix("sqrt", n)
    np.testing.assert_allclose(C @ C, workload_matrix("prefix", n), rtol=0, atol=1e-10)
    np.testing.assert_allclose(toeplitz_coefficients(4), [1, 1 / 2, 3 / 8, 5 / 16])


@pytest.mark.parametrize("nu", [0.0, 0.05, 0.5, 0.9])
def test_nu_coefficients_are_papers_003_eq_7(nu):
    t = np.arange(30)
    expected = (-1.0) ** t * binom(0.5, t) * (1 - nu) ** t
    np.testing.assert_allclose(toeplitz_coefficients(30, nu, inverse=True), expected, rtol=1e-12)
    C = noise_shaping_matrix("nu", 30, nu=nu)
    Cinv = noise_shaping_matrix(np.tril(np.ones((1, 1))), 1)  # user matrix path
    assert Cinv.shape == (1, 1)
    from skdp.mechanisms._noise_shaping import _lower_toeplitz

    np.testing.assert_allclose(C @ _lower_toeplitz(expected), np.eye(30), atol=1e-12)


def test_coefficients_are_stable_at_one_million():
    for nu in (0.0, 0.01):
        for inverse in (False, True):
            c = toeplitz_coefficients(10**6, nu, inverse=inverse)
            assert np.all(np.isfinite(c))
    # Asymptotics: c_t ~ 1 / sqrt(pi t) for the square root of the prefix sum.
    c = toeplitz_coefficients(10**6, 0.0)
    assert c[-1] == pytest.approx(1 / np.sqrt(np.pi * (10**6 - 1)), rel=1e-5)


def test_sensitivity_factors():
    n = 500
    C = noise_shaping_matrix("nu", n, nu=0.1)
    assert sensitivity_factor(C) == pytest.approx(toeplitz_sensitivity_factor(0.1, n))
    assert sensitivity_factor(noise_shaping_matrix("identity", 5)) == 1.0
    # Infinite-horizon closed form (elliptic integral) vs a long finite sum.
    for nu in (0.05, 0.3):
        assert toeplitz_sensitivity_factor(nu) == pytest.approx(
            toeplitz_sensitivity_factor(nu, 200_000), rel=1e-9)
    # nu = 0: the squared norm is sum_t binom(2t,t)^2/16^t ~ log(n)/pi, unbounded.
    with pytest.raises(ValueError, match="horizon"):
        toeplitz_sensitivity_factor(0.0)
    assert toeplitz_sensitivity_factor(0.0, 10**5) ** 2 == pytest.approx(
        np.log(10**5) / np.pi + 1.0, rel=0.05)


def test_exponential_workload_sqrt_is_the_nu_family():
    # sqrt(E_beta) is Toeplitz with the coefficients of (1 - beta x)^{-1/2}:
    # the nu family with 1 - nu = beta (what 'blt' approximates for it).
    E = workload_matrix("exponential", 50, beta=0.8)
    C = noise_shaping_matrix("nu", 50, nu=0.2)
    np.testing.assert_allclose(C @ C, E, atol=1e-12)


def test_blt_coefficients_approximate_the_damped_square_root():
    # The quadrature matches the nu-damped square-root coefficients where they
    # carry the sensitivity: sum_k c_k^2 agrees to 1%, every coefficient up to
    # 1 / nu to 1%, and all coefficients are positive (C^T C >= 0).
    for nu in (1e-4, 1e-2, 0.3):
        n = int(5 / nu)
        exact = toeplitz_coefficients(n, nu)
        approx = blt_coefficients(*blt_parameters(nu), n)
        k = int(1 / nu)
        assert np.all(approx > 0)
        assert np.max(np.abs(approx[:k] / exact[:k] - 1)) < 0.01
        assert blt_sensitivity_factor(*blt_parameters(nu)) == pytest.approx(
            toeplitz_sensitivity_factor(nu), rel=0.01)


def test_blt_sensitivity_closed_forms():
    theta, omega = blt_parameters(0.01)
    c = blt_coefficients(theta, omega, 5000)
    assert blt_sensitivity_factor(theta, omega, 5000) == pytest.approx(
        np.sqrt(np.sum(c**2)), rel=1e-10)
    # The unbounded stream: the limit of long horizons, and an upper bound on all.
    assert blt_sensitivity_factor(theta, omega) == pytest.approx(
        blt_sensitivity_factor(theta, omega, 200_000), rel=1e-9)
    assert blt_sensitivity_factor(theta, omega, 100) < blt_sensitivity_factor(theta, omega)


def test_blt_state_is_constant_memory():
    noise = CorrelatedNoise("blt", (3, 3), make_rng(0), nu=1e-4)
    noise.next(2000)
    size = noise._buffers.buffers.size
    noise.next(5000)
    assert noise._buffers.buffers.size == size == len(blt_parameters(1e-4)[0]) * 9


def test_variances_match_the_dense_inverse():
    n = 120
    for kind, params in [("blt", {"nu": 0.02}), ("nu", {"nu": 0.1}), ("identity", {}),
                         (noise_shaping_matrix("sqrt", n), {})]:
        C = noise_shaping_matrix(kind, n, **params)
        inv = np.linalg.inv(C)
        noise = CorrelatedNoise(kind, 2, make_rng(0), **params)
        np.testing.assert_allclose(noise.step_variances(0, n), np.sum(inv**2, axis=1), rtol=1e-10)
        prefix = np.sum(np.cumsum(inv, axis=0) ** 2, axis=1)
        # out of order on purpose: the BLT tracker replays
        np.testing.assert_allclose(noise.prefix_variances(30, n), prefix[30:], rtol=1e-10)
        np.testing.assert_allclose(noise.prefix_variances(0, 30), prefix[:30], rtol=1e-10)
        np.testing.assert_allclose(noise.average_variances(10, 20),
                                   prefix[10:20] / np.arange(11, 21) ** 2, rtol=1e-10)


@pytest.mark.parametrize("bad,match", [
    (np.ones((2, 3)), "square"),
    (np.array([[1.0, 1.0], [0.0, 1.0]]), "lower triangular"),
    (np.array([[1.0, 0.0], [1.0, 0.0]]), "invertible"),
    (np.array([[np.nan, 0.0], [1.0, 1.0]]), "finite"),
])
def test_user_matrix_validation(bad, match):
    with pytest.raises(ValueError, match=match):
        noise_shaping_matrix(bad)
    with pytest.raises(ValueError, match=match):
        CorrelatedNoise(bad, 2, make_rng(0))


def test_shaping_errors():
    with pytest.raises(ValueError, match="Unknown noise shaping"):
        noise_shaping_matrix("cholesky", 4)
    with pytest.raises(ValueError, match="nu"):
        noise_shaping_matrix("nu", 4, nu=1.0)
    with pytest.raises(ValueError, match="horizon"):
        noise_shaping_matrix("sqrt")
    with pytest.raises(ValueError, match="nu"):
        noise_shaping_matrix("blt", 4, nu=0.0)
    with pytest.raises(ValueError, match="Unknown"):
        noise_shaping_matrix("workload_sqrt", 4)


SHAPING_CASES = [
    ("identity", {}),
    ("sqrt", {}),
    ("nu", {"nu": 0.2}),
    ("blt", {"nu": 0.01}),
    (noise_shaping_matrix("nu", 300, nu=0.3), {}),
]


@pytest.mark.parametrize("kind,params", SHAPING_CASES)
@pytest.mark.parametrize("dim", [1, (2, 3)])
def test_streaming_noise_equals_dense(kind, params, dim):
    dense = correlated_noise(kind, 300, dim, make_rng(5), **params)
    stream = CorrelatedNoise(kind, dim, make_rng(5), **params)
    blocks = [stream.next() for _ in range(40)] + [stream.next(0), stream.next(100), stream.next(160)]
    np.testing.assert_allclose(np.concatenate(blocks), dense, rtol=0, atol=1e-12)
    # And equal to the explicit C^{-1} Z with the same draws.
    C = noise_shaping_matrix(kind, 300, **params)
    Z = make_rng(5).standard_normal((300,) + ((dim,) if np.ndim(dim) == 0 else dim))
    np.testing.assert_allclose(dense.reshape(300, -1), np.linalg.solve(C, Z.reshape(300, -1)),
                               atol=1e-10)


def test_toeplitz_stream_has_no_horizon_but_dense_does():
    stream = CorrelatedNoise("nu", 3, make_rng(0), nu=0.1)
    assert stream.horizon is None
    stream.next(5000)
    dense = CorrelatedNoise(noise_shaping_matrix("sqrt", 10), 3, make_rng(0))
    dense.next(10)
    with pytest.raises(ValueError, match="horizon"):
        dense.next()


def test_correlated_noise_variance_monte_carlo():
    # Var([C^{-1} Z]_t) = sum_{k<=t} beta_k^2 per coordinate. With R = 4000
    # independent coordinates the sample variance has relative std
    # sqrt(2 / (R - 1)) = 0.0224; we allow 5 of those.
    n, reps, nu = 64, 4000, 0.1
    noise = correlated_noise("nu", n, reps, make_rng(7), nu=nu)
    beta = toeplitz_coefficients(n, nu, inverse=True)
    expected = np.cumsum(beta**2)
    ratio = noise.var(axis=1, ddof=1) / expected
    assert np.all(np.abs(ratio - 1) < 5 * np.sqrt(2 / (reps - 1)))


# -- several participations ----------------------------------------------------

def _brute_participation(C, k, E):
    gram = np.abs(C.T @ C)
    return np.sqrt(max(gram[np.ix_(i + k * np.arange(E), i + k * np.arange(E))].sum()
                       for i in range(k)))


@pytest.mark.parametrize("kind, nu", [("sqrt", None), ("nu", 0.05), ("nu", 0.5), ("blt", 0.05)])
@pytest.mark.parametrize("H, k, E", [(12, 3, 4), (15, 4, 3), (30, 4, 5), (7, 7, 1), (40, 10, 2)])
def test_cyclic_factor_matches_brute_force(kind, nu, H, k, E):
    C = noise_shaping_matrix(kind, H, nu=nu)
    expected = _brute_participation(C, k, E)
    assert cyclic_sensitivity_factor(kind, H, k, E, nu=nu) == pytest.approx(expected, rel=1e-12)
    assert cyclic_sensitivity_factor(C, H, k, E) == pytest.approx(expected, rel=1e-12)


def test_cyclic_factor_special_cases():
    # Independent noise composes exactly: sqrt(epochs).
    assert cyclic_sensitivity_factor("identity", 1000, 100, 9) == 3.0
    # One participation: the largest column norm of C (column 0 for Toeplitz).
    for nu in (0.0, 0.01, 0.3):
        assert cyclic_sensitivity_factor("nu", 500, 500, 1, nu=nu) == pytest.approx(
            toeplitz_sensitivity_factor(nu, 500), rel=1e-12)
    # C^T C >= 0 for the Toeplitz families, so the bound is attained by a row
    # whose (equal) contributions add up: check ||C d||^2 for that worst case.
    H, k, E = 60, 12, 5
    C = noise_shaping_matrix("nu", H, nu=0.1)
    factor = cyclic_sensitivity_factor("nu", H, k, E, nu=0.1)
    attained = max(np.linalg.norm(C[:, i + k * np.arange(E)].sum(axis=1)) for i in range(k))
    assert attained == pytest.approx(factor, rel=1e-12)
    # More epochs never lower the sensitivity; a longer horizon never does either.
    assert cyclic_sensitivity_factor("nu", 600, 100, 6, nu=0.01) > \
        cyclic_sensitivity_factor("nu", 600, 100, 5, nu=0.01)
    assert cyclic_sensitivity_factor("nu", 900, 100, 5, nu=0.01) >= \
        cyclic_sensitivity_factor("nu", 600, 100, 5, nu=0.01)
    with pytest.raises(ValueError, match="period"):
        cyclic_sensitivity_factor("sqrt", 10, 4, 3)


def test_blt_stream_error_is_within_15_percent_of_the_exact_square_root():
    # Exact error of running sums over n = 10,000 steps (unit sensitivity):
    # sens(C)^2 * Var(prefix sum of [C^{-1} Z]_t). The exact square root uses
    # the sensitivity of its horizon n; BLT (tuned for n) that of an unbounded
    # stream. The benchmark measures ratios 0.99 (RMSE) and 1.03 (last step).
    n = 10_000
    c = toeplitz_coefficients(n)
    sqrt_prefix = np.cumsum(np.cumsum(toeplitz_coefficients(n, inverse=True)) ** 2)
    sqrt_err = np.sum(c**2) * sqrt_prefix
    nu = 1.0 / n
    blt = CorrelatedNoise("blt", 1, make_rng(0), nu=nu)
    blt_err = blt.sensitivity_factor() ** 2 * blt.prefix_variances(0, n)
    assert np.sqrt(blt_err.mean() / sqrt_err.mean()) < 1.15
    assert np.sqrt(blt_err[-1] / sqrt_err[-1]) < 1.15
    # and independent noise is far worse (ratio about 18)
    assert np.sqrt(np.arange(1, n + 1).mean() / sqrt_err.mean()) > 10
