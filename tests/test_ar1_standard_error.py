"""Model-based standard errors of DP-GD (skdp.linear_model._ar1_standard_error)."""

import numpy as np
import pytest

from skdp.linear_model._ar1_standard_error import (
    ar1_upper_phi,
    ar1_weighted_variance,
    dpgd_model_covariance,
    pilot_variance,
)
from skdp.linear_model._intervals import estimate_weights, split_estimates


def _ar1(phi, T, R, rng, start=0.0, std=1.0):
    x = np.zeros((T + 1, R))
    x[0] = start
    for t in range(T):
        x[t + 1] = phi * x[t] + std * rng.normal(size=R)
    return x


def test_weighted_variance_matches_the_direct_sum():
    # sum_t w_t x_t = g x_0 + sum_j c_j e_j with c = L^T w, L[t, j] = phi**(t - j).
    T, std = 30, 0.7
    w = estimate_weights(T, "batched_means", 8, 4)
    for phi in (0.0, 0.3, 0.9, 1.0):
        t = np.arange(1, T + 1)
        L = np.tril(phi ** np.clip(t[:, None] - t[None, :], 0, None))
        var, g = ar1_weighted_variance(np.array([phi]), w, std)
        assert var[0] == pytest.approx(std**2 * np.sum((L.T @ w) ** 2), rel=1e-12)
        assert g[0] == pytest.approx(np.sum(w * phi**t), rel=1e-12, abs=1e-15)


def test_weighted_variance_grows_with_phi_up_to_the_random_walk():
    w = estimate_weights(200, "checkpoints", 50, 10)
    var, g = ar1_weighted_variance(np.linspace(0, 1, 21), w, 1.0)
    assert np.all(np.diff(var) > 0) and np.all(np.diff(g) >= 0)
    assert g[-1] == pytest.approx(1.0)


def test_estimate_weights_reproduce_the_estimates():
    it = np.random.default_rng(0).normal(size=(57, 3))
    for method in ("batched_means", "checkpoints"):
        w = estimate_weights(57, method, 7, 5)
        np.testing.assert_allclose(w @ it, split_estimates(it, method, 7, 5).mean(axis=0))
    w = estimate_weights(57, "independent_runs", 7, 5)
    np.testing.assert_allclose(w @ it, it[7:].mean(axis=0))


def test_upper_phi_is_above_the_true_phi_about_97_percent_of_the_time():
    # Least-squares phi over T = 2000 steps at phi = 0.9: standard error
    # sqrt((1 - phi**2) / T) = 0.0097, its small-sample bias -(1 + 3 phi) / T
    # added back, so phi_hat + 2 se >= phi with probability about Phi(2) =
    # 0.977. Over 400 series the fraction has sd 0.0075: 0.93 is 6 sd below.
    x = _ar1(0.9, 2000, 400, np.random.default_rng(1))
    up = ar1_upper_phi(x, 1.0)
    assert np.mean(up >= 0.9) >= 0.93
    assert np.all(up <= 1.0)


def test_short_slow_runs_get_the_random_walk_bound():
    # 30 steps at phi = 0.999 cannot tell phi from 1: the bound is then the
    # random walk's (the empirical batch spread is about 5x too small there).
    # Least squares alone is far below 1 there (Dickey-Fuller: T (phi_hat -
    # 1) has mean about -5.5 with a fitted mean); with Kendall's correction
    # and 2 se the upper phi reaches 1 in about 95% of 400 series (sd 0.011);
    # 0.9 is 4.5 sd below.
    x = _ar1(0.999, 30, 400, np.random.default_rng(2))
    assert np.mean(ar1_upper_phi(x, 1.0) == 1.0) >= 0.9


def test_model_covariance_covers_a_slow_rotated_recursion():
    # theta_t = theta_{t-1} - eta (H (theta_{t-1} - theta*) + s e_t) with H
    # rotated away from the preconditioner's basis (P = I) and one slow
    # direction (contraction 0.01), theta* = 0. 60 steps, the mean of the
    # last 40: the empirical errors cannot see the slow direction, the model
    # does. Nominal 90% intervals from the model's standard errors: over 300
    # runs the coverage of each coordinate has sd at most 0.017 at 0.9, so
    # 0.85 is 2.9 sd below (the raised phi makes the intervals conservative).
    rng = np.random.default_rng(3)
    q, T, s = 3, 60, 0.5
    Q = np.linalg.qr(rng.normal(size=(q, q)))[0]
    H = (Q * np.array([0.01, 0.4, 0.9])) @ Q.T
    M = np.eye(q) - H
    w = estimate_weights(T, "batched_means", 20, 10)
    covered = []
    for _ in range(300):
        x, run = np.zeros(q), []
        for _ in range(T):
            x = M @ x - s * rng.normal(size=q)
            run.append(x)
        run = np.array(run)
        se = np.sqrt(np.diag(dpgd_model_covariance([run], np.zeros(q), w, s, None, np.zeros(q))))
        covered.append(np.abs(w @ run) <= 1.645 * se)
    assert np.all(np.mean(covered, axis=0) >= 0.85)


def test_pilot_variance_counts_noise_and_ridge_bias():
    lam, V = np.array([0.0, 1.0]), np.eye(2)
    theta = np.array([3.0, 4.0])
    out = pilot_variance(theta, lam, V, 0.5, 0.1, 0.2)
    tau2 = 0.2**2 + 2 * 0.1**2 * 25.0
    share = np.maximum(theta**2, 25.0 / 2)
    np.testing.assert_allclose(out, (tau2 + 0.25 * share) / (lam + 0.5))


def test_model_covariance_is_not_wide_where_the_gram_resolves_the_curvature():
    # Preconditioner P = V D^{-1/2} V^T (a rotated, uneven D) and A with P A P =
    # 0.6 I: every direction contracts by 0.6 per step (phi = 0.4). The Gram's
    # cap (here its exact contraction, 0.6) keeps the 30-step runs' fitted phi
    # (standard error ~0.17, raised by 2 se) from inflating the variance. Over
    # 200 runs the mean model variance is within [0.9, 1.6] of the Monte Carlo
    # variance of the estimate (4000 runs: relative sd 2.2%); the upper 1.6
    # allows the Kendall correction's bias at phi = 0.4 and the 2 se margin
    # where the cap and the fitted phi cross.
    rng = np.random.default_rng(4)
    q, T, s = 3, 30, 0.3
    V = np.linalg.qr(rng.normal(size=(q, q)))[0]
    D = np.array([0.5, 1.0, 2.0])
    P = (V / np.sqrt(D)) @ V.T
    A = np.linalg.inv(P) @ (0.6 * np.eye(q)) @ np.linalg.inv(P)
    M = np.eye(q) - P @ P @ A
    w = estimate_weights(T, "batched_means", 5, 5)

    def run(R):
        theta, out = np.zeros((R, q)), []
        for _ in range(T):
            theta = theta @ M.T - (s * rng.normal(size=(R, q))) @ P.T
            out.append(theta)
        return np.stack(out, axis=1)

    true_var = np.einsum("t,rtq->rq", w, run(4000)).var(axis=0)
    model = np.mean([np.diag(dpgd_model_covariance([r], np.zeros(q), w, s, (D, V), np.zeros(q),
                                                   curvature=np.full(q, 0.6)))
                     for r in run(200)], axis=0)
    assert np.all(model / true_var >= 0.9) and np.all(model / true_var <= 1.6)
