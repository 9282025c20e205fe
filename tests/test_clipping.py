import numpy as np
import pytest
from scipy.special import expit, softmax

from skdp.clipping import (
    clip_factors,
    clip_rows,
    clipped_gradient_sum,
    clipped_gradients,
    clipped_residuals,
    dp_stat,
    dp_stat_n_levels,
    gradient_clip_factors,
    logistic_loss_residuals,
    scale_from_second_moment,
    scale_then_privatize,
    squared_loss_residuals,
)
from skdp.mechanisms import make_rng


def _clip_each(G, c):
    """Reference: clip a materialised per-example gradient matrix row by row."""
    norms = np.linalg.norm(G.reshape(len(G), -1), axis=1)
    f = np.minimum(1.0, c / np.maximum(norms, 1e-300))
    return (G * f.reshape((-1,) + (1,) * (G.ndim - 1))).sum(axis=0)


def test_clip_rows_and_factors():
    X = make_rng(0).normal(size=(100, 4)) * 3
    Xc = clip_rows(X, 2.0)
    norms = np.linalg.norm(Xc, axis=1)
    assert np.all(norms <= 2.0 + 1e-12)
    short = np.linalg.norm(X, axis=1) <= 2.0
    np.testing.assert_array_equal(Xc[short], X[short])
    np.testing.assert_allclose(norms[~short], 2.0)
    assert clip_factors([0.0], 1.0)[0] == 1.0
    with pytest.raises(ValueError, match="clip_norm"):
        clip_rows(X, 0.0)
    with pytest.raises(ValueError, match="2-D"):
        clip_rows(np.ones(3), 1.0)


def test_squared_loss_gradient_sum_matches_materialised():
    rng = make_rng(1)
    X, y, w = rng.normal(size=(200, 5)), rng.normal(size=200), rng.normal(size=5)
    r = squared_loss_residuals(X, y, w)
    np.testing.assert_allclose(r, X @ w - y)
    G = X * r[:, None]  # per-example gradients of (x.w - y)^2 / 2
    for c in (0.1, 1.0, 100.0):
        np.testing.assert_allclose(clipped_gradient_sum(X, r, c), _clip_each(G, c), rtol=1e-12)
        np.testing.assert_allclose(clipped_gradient_sum(X, r, c, row_norms=np.linalg.norm(X, axis=1)),
                                   _clip_each(G, c), rtol=1e-12)


def test_intercept_column_is_clipped_with_the_row():
    rng = make_rng(5)
    X, r = rng.normal(size=(50, 3)), rng.normal(size=50) * 3
    Xa = np.hstack([X, np.ones((50, 1))])
    expected = _clip_each(Xa * r[:, None], 0.8)
    np.testing.assert_allclose(clipped_gradient_sum(X, r, 0.8, fit_intercept=True), expected)
    R = rng.normal(size=(50, 2))
    np.testing.assert_allclose(clipped_gradient_sum(X, R, 0.8, fit_intercept=True),
                               _clip_each(Xa[:, :, None] * R[:, None, :], 0.8))
    s = rng.uniform(0.5, 2.0, size=4)  # the intercept's scale last
    np.testing.assert_allclose(clipped_gradient_sum(X, r, 0.8, fit_intercept=True, scale=s),
                               _clip_each(Xa * r[:, None] * s, 0.8), rtol=1e-12)
    S = rng.uniform(0.5, 2.0, size=(4, 2))
    np.testing.assert_allclose(clipped_gradient_sum(X, R, 0.8, fit_intercept=True, scale=S),
                               _clip_each(Xa[:, :, None] * R[:, None, :] * S, 0.8), rtol=1e-12)


@pytest.mark.parametrize("fit_intercept", [False, True])
@pytest.mark.parametrize("multiclass", [False, True])
def test_sum_of_squared_clipped_gradients_matches_materialised(fit_intercept, multiclass):
    rng = make_rng(6)
    X = rng.normal(size=(60, 3))
    Xa = np.hstack([X, np.ones((60, 1))]) if fit_intercept else X
    R = rng.normal(size=(60, 2)) * 3 if multiclass else rng.normal(size=60) * 3
    G = Xa[:, :, None] * R[:, None, :] if multiclass else Xa * R[:, None]
    norms = np.linalg.norm(G.reshape(60, -1), axis=1)
    clipped = G * np.minimum(1, 0.8 / norms).reshape((60,) + (1,) * (G.ndim - 1))
    total, square_total = clipped_gradient_sum(X, R, 0.8, fit_intercept=fit_intercept, squares=True)
    np.testing.assert_allclose(total, clipped.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(square_total, (clipped**2).sum(axis=0), rtol=1e-12)
    with pytest.raises(ValueError, match="squares"):
        clipped_gradient_sum(X, R, 0.8, scale=np.ones(G.shape[1:]), squares=True)
    # Squares of clipped gradients beyond 1e150 overflow: such a clip is refused.
    with pytest.raises(ValueError, match="at most 1e100"):
        clipped_gradient_sum(X, R, 1e154, fit_intercept=fit_intercept, squares=True)


def test_residuals_with_an_intercept_last():
    rng = make_rng(7)
    X, y, w = rng.normal(size=(30, 3)), rng.normal(size=30), rng.normal(size=4)
    np.testing.assert_allclose(squared_loss_residuals(X, y, w, fit_intercept=True),
                               X @ w[:3] + w[3] - y)
    y01 = (y > 0).astype(float)
    np.testing.assert_allclose(logistic_loss_residuals(X, y01, w, fit_intercept=True),
                               expit(X @ w[:3] + w[3]) - y01)
    W, Y = rng.normal(size=(4, 2)), np.eye(2)[(y > 0).astype(int)]
    np.testing.assert_allclose(logistic_loss_residuals(X, Y, W, fit_intercept=True),
                               softmax(X @ W[:3] + W[3], axis=1) - Y)


def test_logistic_gradient_sums_match_materialised():
    rng = make_rng(2)
    X = rng.normal(size=(150, 4))
    y = (rng.random(150) < 0.5).astype(float)
    w = rng.normal(size=4)
    r = logistic_loss_residuals(X, y, w)
    np.testing.assert_allclose(r, expit(X @ w) - y)
    np.testing.assert_allclose(clipped_gradient_sum(X, r, 0.5), _clip_each(X * r[:, None], 0.5))
    # Multinomial: gradient of row i is the outer product x_i (p_i - y_i)^T.
    W = rng.normal(size=(4, 3))
    Y = np.eye(3)[rng.integers(0, 3, 150)]
    R = logistic_loss_residuals(X, Y, W)
    np.testing.assert_allclose(R, softmax(X @ W, axis=1) - Y)
    G = X[:, :, None] * R[:, None, :]
    np.testing.assert_allclose(clipped_gradient_sum(X, R, 0.5), _clip_each(G, 0.5), rtol=1e-12)
    f = gradient_clip_factors(np.linalg.norm(X, axis=1), R, 0.5)
    np.testing.assert_allclose(f, np.minimum(1, 0.5 / np.linalg.norm(G.reshape(150, -1), axis=1)))


def test_clipped_residuals_match_the_factors_on_finite_input():
    rng = make_rng(11)
    norms, r = rng.uniform(0.1, 3, size=300), rng.standard_cauchy(size=300)
    expected = r * gradient_clip_factors(norms, r, 0.9)
    np.testing.assert_allclose(clipped_residuals(norms, r, 0.9), expected, rtol=1e-14)
    R = rng.standard_cauchy(size=(300, 3))
    expected = R * gradient_clip_factors(norms, R, 0.9)[:, None]
    np.testing.assert_allclose(clipped_residuals(norms, R, 0.9), expected, rtol=1e-14)


def test_overflowed_residuals_give_bounded_gradients_not_nan():
    # An iterate that overflowed gives residuals +-inf (or NaN from inf - inf). Each
    # clipped gradient must still have norm <= clip_norm and be finite, or the
    # release would be NaN exactly when the table holds such a row (a leak and a
    # crash after the charge). r * f, the old form, gave inf * 0 = NaN.
    X = np.array([[3.0, 4.0], [3.0, 4.0], [1.0, 0.0], [0.0, 0.0], [1e150, 1e150]])
    r = np.array([np.inf, -np.inf, np.nan, np.inf, 1e200])
    norms = np.linalg.norm(X, axis=1)
    np.testing.assert_array_equal(clipped_residuals(norms, r, 2.0),
                                  [0.4, -0.4, 0.0, 0.0, 2.0 / norms[-1]])
    np.testing.assert_allclose(clipped_gradient_sum(X, r, 2.0),
                               [0.4 * 3 - 0.4 * 3 + 2.0 / np.sqrt(2), 2.0 / np.sqrt(2)])
    for kwargs in ({}, {"fit_intercept": True}, {"scale": np.array([0.5, 2.0])}):
        assert np.isfinite(clipped_gradient_sum(X, r, 2.0, **kwargs)).all()
    total, squares = clipped_gradient_sum(X, r, 2.0, squares=True)
    assert np.isfinite(total).all() and np.isfinite(squares).all()
    # K outputs: an infinite entry is clipped along its sign, a NaN row gives 0.
    R = np.array([[np.inf, 1.0], [np.nan, 0.0], [-np.inf, np.inf], [1.0, 1.0], [0.0, 0.0]])
    out = clipped_residuals(norms, R, 2.0)
    np.testing.assert_allclose(out[:3], [[0.4, 0.0], [0.0, 0.0],
                                         [-np.sqrt(2), np.sqrt(2)]])
    assert np.all(np.linalg.norm(out, axis=1) * norms <= 2.0 * (1 + 1e-12))
    scaled = clipped_gradient_sum(X, R, 2.0, scale=np.ones((2, 2)))
    assert np.isfinite(scaled).all()


@pytest.mark.parametrize("fit_intercept", [False, True])
def test_clipped_gradients_are_the_rows_of_the_sum(fit_intercept):
    rng = make_rng(12)
    X, r, w = rng.normal(size=(60, 3)), rng.standard_cauchy(size=60), rng.uniform(0, 2, 60)
    Z = np.hstack([X, np.ones((60, 1))]) if fit_intercept else X
    expected = Z * r[:, None] * np.minimum(1, 0.7 / (np.linalg.norm(Z, axis=1) * np.abs(r)))[:, None]
    G = clipped_gradients(X, r, 0.7, fit_intercept=fit_intercept, sample_weight=w)
    np.testing.assert_allclose(G, expected * w[:, None], rtol=1e-12)
    np.testing.assert_allclose(G.sum(axis=0), clipped_gradient_sum(
        X, r, 0.7, fit_intercept=fit_intercept, sample_weight=w), rtol=1e-12)


def test_tiny_rows_with_huge_weights_or_residuals_stay_bounded():
    # The clipped residual of a row of tiny norm may reach clip / ||x||; times a large
    # weight (or squared) it overflowed, although the gradient it stands for is
    # bounded by w * clip: a NaN or inf release only on tables holding such a row.
    X = np.array([[1e-60, 0.0], [1.0, 1.0]])
    total = clipped_gradient_sum(X, np.array([1e50, 1.0]), 1.0, sample_weight=[1e260, 1.0])
    # Row 0's gradient 1e-60 * 1e50 is under the clip: times its weight, 1e250.
    np.testing.assert_allclose(total, [1e250, np.sqrt(0.5)])
    G = clipped_gradients(X, np.array([1e50, 1.0]), 1.0, sample_weight=[1e260, 1.0])
    np.testing.assert_allclose(G, [[1e250, 0.0], [np.sqrt(0.5), np.sqrt(0.5)]])
    total, squares = clipped_gradient_sum([[5e-55]], np.array([1e160]), 1e100, squares=True)
    np.testing.assert_allclose([total[0], squares[0]], [1e100, 1e200])
    # clip / ||x|| overflows: the gradient is still clip along the row.
    np.testing.assert_allclose(clipped_gradient_sum([[1e-300]], np.array([np.inf]), 1e10), [1e10])
    # ||x||**2 underflows to 0; the row must still be clipped (true norm 1.4e-170).
    g = clipped_gradient_sum([[1e-170, 1e-170]], np.array([1e160]), 1e-20)
    np.testing.assert_allclose(g, [1e-20 / np.sqrt(2)] * 2, rtol=1e-12)
    g = clipped_gradient_sum([[1e-170, 1e-170]], np.array([1e160]), 1e-20, scale=np.ones(2))
    np.testing.assert_allclose(g, [1e-20 / np.sqrt(2)] * 2, rtol=1e-12)


def test_rows_at_the_edges_of_the_float_range_are_clipped_within_the_bound():
    # Twelfth review. K outputs with a scale: x**2 of a 1e-163 row underflowed to 0,
    # so its norm was 0 and it passed unclipped (norm 8e-64 against 1e-100).
    g = clipped_gradient_sum([[1e-163]], np.array([[-2 / 3, 1 / 3, 1 / 3]]), 1e-100,
                             scale=np.full((1, 3), 1e100))
    assert np.linalg.norm(g) <= 1e-100
    # A subnormal row's norm rounded down (to its own value): the clipped row came
    # out sqrt(2) times the bound.
    assert np.linalg.norm(clipped_gradients([[5e-324, 5e-324]], np.array([np.inf]), 1.0)) <= 1.0
    # A row whose squared norm overflows, and one whose clip limit c / ||x|| is
    # subnormal (rounded to a few digits): clipped exactly, in unit-row form.
    np.testing.assert_allclose(clipped_gradient_sum([[1e210]], np.array([1.0]), 1e-100), [1e-100])
    np.testing.assert_allclose(clipped_gradient_sum([[1e210, 1e210]], np.array([1.0]), 1e-100),
                               [1e-100 / np.sqrt(2)] * 2)


@pytest.mark.parametrize("multiclass", [False, True])
def test_scale_then_privatize_matches_materialised(multiclass):
    rng = make_rng(3)
    X = rng.normal(size=(80, 4))
    if multiclass:
        R, s = rng.normal(size=(80, 3)), rng.uniform(0.5, 2, size=(4, 3))
        G = X[:, :, None] * R[:, None, :]
    else:
        R, s = rng.normal(size=80), rng.uniform(0.5, 2, size=4)
        G = X * R[:, None]
    scaled = clipped_gradient_sum(X, R, 0.7, scale=s)
    np.testing.assert_allclose(scaled, _clip_each(G * s, 0.7), rtol=1e-12)
    # With zero noise, unscaling returns the sum of s-clipped gradients in the
    # original geometry; each scaled gradient has norm <= clip (sensitivity 2 clip).
    np.testing.assert_allclose(scale_then_privatize(scaled, 0.0, s), _clip_each(G * s, 0.7) / s)
    np.testing.assert_allclose(scale_from_second_moment([4.0, -1.0], 1e-12), [0.5, 1e12])
    with pytest.raises(ValueError, match="eps_stability"):
        scale_from_second_moment([1.0], 0.0)


def test_dp_stat_levels_and_privacy_cost():
    assert dp_stat_n_levels(100.0, 0.01) == 14  # 0.01 * 2**14 = 163.84 >= 100 > 0.01 * 2**13
    assert dp_stat_n_levels(1.0, 1.0) == 0
    assert dp_stat_n_levels(8.0, 1.0) == 3
    values = np.abs(make_rng(0).normal(size=500))
    gamma, mu = dp_stat(values, target_count=490, upper_bound=100.0, resolution=0.01,
                        noise_std=7.0, rng=make_rng(1))
    assert mu == pytest.approx(np.sqrt(14) / 7.0)
    assert gamma in [0.01 * 2**i for i in range(15)]


def test_dp_stat_finds_the_quantile_with_little_noise():
    # Values 1..1000; with negligible noise the answer is the smallest level
    # 2**i * 0.5 with count >= target: 900 values <= 900 -> level 1024.
    values = np.arange(1.0, 1001.0)
    gamma, _ = dp_stat(values, target_count=900, upper_bound=1e4, resolution=0.5,
                       noise_std=1e-6, rng=make_rng(0))
    assert gamma == 1024.0
    gamma, _ = dp_stat(values, target_count=100, upper_bound=1e4, resolution=0.5,
                       noise_std=1e-6, rng=make_rng(0))
    assert gamma == 128.0
    # Never reached: the top level is returned without a further count.
    gamma, _ = dp_stat(values, target_count=2000, upper_bound=1e4, resolution=0.5,
                       noise_std=1e-6, rng=make_rng(0))
    assert gamma == 0.5 * 2**dp_stat_n_levels(1e4, 0.5)


def test_dp_stat_is_insensitive_to_one_replaced_row():
    # Replacing one value changes every count by at most 1: with the same noise
    # draws, the output can move by at most one level when the noisy counts sit
    # far from the target, and not at all here.
    values = np.abs(make_rng(4).normal(size=300))
    neighbour = values.copy()
    neighbour[0] = 1e6
    kw = dict(target_count=270, upper_bound=1e3, resolution=1e-3, noise_std=3.0)
    a = dp_stat(values, rng=make_rng(9), **kw)
    b = dp_stat(neighbour, rng=make_rng(9), **kw)
    assert a == b


def test_dp_stat_validation():
    with pytest.raises(ValueError, match="noise_std"):
        dp_stat(np.ones(3), target_count=3, upper_bound=1.0, resolution=0.1, noise_std=0.0, rng=make_rng(0))
    with pytest.raises(ValueError, match="NaN"):
        dp_stat(np.array([np.nan]), target_count=1, upper_bound=1.0, resolution=0.1, noise_std=1.0,
                rng=make_rng(0))
    with pytest.raises(ValueError, match="resolution"):
        dp_stat_n_levels(1.0, -1.0)
