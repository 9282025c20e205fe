"""Private quantiles: exact statistics, the binary search, its noise, weights."""

import math

import numpy as np
import pytest
from scipy import stats

from skdp.clipping import (
    geometric_grid,
    private_norm_quantile,
    private_quantiles,
    quantile_statistics,
)
from skdp.mechanisms import make_rng
from skdp.utils._rows import sum_rows


def test_statistics_match_brute_force_and_add_over_blocks():
    rng = make_rng(0)
    v = rng.normal(size=(1000, 2))
    w = rng.uniform(0, 2, size=1000)
    grid = geometric_grid(0.01, 10.0, 1.5, signed=True)
    s = quantile_statistics(v, grid, [0.3, 0.7], w)
    brute = np.array([[np.sum(w * ((v[:, j] <= g) - q)) for j, q in enumerate([0.3, 0.7])]
                      for g in grid])
    np.testing.assert_allclose(s, brute, atol=1e-9)
    blocks = sum_rows(lambda vb, wb: quantile_statistics(vb, grid, [0.3, 0.7], wb), v, w,
                      block_rows=77)
    np.testing.assert_allclose(blocks, s, atol=1e-9)


def test_without_noise_the_search_finds_the_smallest_grid_point_at_the_quantile():
    rng = make_rng(1)
    v = rng.exponential(size=(5000, 3))
    grid = geometric_grid()
    q = np.array([0.1, 0.5, 0.99])
    found = private_quantiles(quantile_statistics(v, grid, q), grid, mu=1e12, rng=rng)
    for j in range(3):
        # smallest g with #{v <= g} >= q n
        k = np.argmax([np.mean(v[:, j] <= g) >= q[j] for g in grid])
        assert found[j] == grid[k]


def test_each_query_has_the_stated_noise():
    # K = 2 levels: one query per column, "up" iff s + noise >= 0. With
    # s = c at both levels, P(up) = Phi(c / std), std = sqrt(L m) / mu with
    # L = 1, m = 3. Over 20,000 draws per column the rate has sd <= 0.0035;
    # 5 sd is the tolerance.
    grid = np.array([1.0, 2.0])
    c, mu, draws = 2.0, 1.5, 20_000
    statistics = np.full((2, 3), c)
    rng = make_rng(2)
    ups = np.mean([private_quantiles(statistics, grid, mu=mu, rng=rng)[0] == 1.0
                   for _ in range(draws)])
    expected = stats.norm.cdf(c / (math.sqrt(3) / mu))
    assert abs(ups - expected) < 5 * 0.0035


def test_unit_weights_equal_no_weights_and_weights_count():
    X = make_rng(3).normal(size=(20_000, 4))
    a = private_norm_quantile(X, 0.9, mu=1.0, rng=make_rng(4))
    b = private_norm_quantile(X, 0.9, mu=1.0, rng=make_rng(4), sample_weight=np.ones(20_000))
    assert a == b
    # Zero weight on the long rows moves the weighted quantile down.
    norms = np.linalg.norm(X, axis=1)
    w = (norms < np.median(norms)).astype(float)
    c = private_norm_quantile(X, 0.9, mu=1.0, rng=make_rng(4), sample_weight=w)
    assert c < np.median(norms) * 1.1 < a


@pytest.mark.parametrize("n", [2_000, 100_000])
def test_norm_quantile_is_close_at_moderate_budget(n):
    # Noise sd of the counts: sqrt(10) / mu = 6.3 rows at mu = 0.5; the
    # result is one of the two grid points around the 0.95 quantile unless
    # the noise moves the count by more than the density of rows there
    # allows (about 0.4 n per unit of norm); 1.1x covers the grid step.
    X = make_rng(5).normal(size=(n, 5))
    true = np.quantile(np.linalg.norm(X, axis=1), 0.95)
    found = private_norm_quantile(X, 0.95, mu=0.5, rng=make_rng(6))
    assert true / 1.1 <= found <= true * 1.1 * 1.1


def test_bad_arguments():
    with pytest.raises(ValueError, match="quantile"):
        private_norm_quantile(np.ones((3, 2)), 1.0, mu=1.0, rng=make_rng(0))
    with pytest.raises(ValueError, match="mu"):
        private_quantiles(np.zeros((4, 1)), np.arange(4.0), mu=0.0, rng=make_rng(0))
    with pytest.raises(ValueError, match="lower"):
        geometric_grid(2.0, 1.0)
