"""Step-plan rules of the preconditioned DP-GD: deterministic given a Gram matrix."""

import numpy as np
import pytest

from skdp.linear_model._preconditioner import (
    burn_in_steps,
    gram_preconditioner,
    offset_columns,
    plain_time,
    plan_steps,
    smallest_eigenvalue,
)


def _wigner(q, sigma, rng):
    upper = np.triu(rng.normal(scale=sigma, size=(q, q)))
    return upper + np.triu(upper, 1).T


def test_smallest_eigenvalue_undoes_the_spread_of_a_flat_spectrum():
    # A = I plus Wigner noise of entry std 0.05 at q = 100: the spectrum of A_hat
    # spreads over 1 +- 2 * 0.05 * sqrt(100) = 1 +- 1, so lambda_min(A_hat) ~ 0,
    # and the estimate adds back 2 sigma (sqrt(k) - 1) with k = 100: 0.9.
    rng = np.random.default_rng(0)
    lam = np.linalg.eigvalsh(np.eye(100) + _wigner(100, 0.05, rng))
    assert lam[0] < 0.15
    assert smallest_eigenvalue(lam, 0.05) == pytest.approx(1.0, abs=0.15)


def test_smallest_eigenvalue_keeps_an_isolated_one():
    # One eigenvalue at 0.01 well below a bulk at 1 (noise 1e-3 per entry): the
    # noise moves it by ~1e-3 and the estimate stays there (k = 1).
    rng = np.random.default_rng(1)
    lam = np.linalg.eigvalsh(np.diag([0.01] + [1.0] * 19) + _wigner(20, 1e-3, rng))
    assert smallest_eigenvalue(lam, 1e-3) == pytest.approx(lam[0])
    # A rank-deficient A: half the eigenvalues 0, the estimate is at most the noise.
    lam = np.linalg.eigvalsh(np.diag([0.0] * 10 + [1.0] * 10) + _wigner(20, 0.01, rng))
    assert smallest_eigenvalue(lam, 0.01) < 0.02


def test_pilot_risk_is_the_plug_in_residual_variance():
    # Noise-free Gram of y = z . theta + e with E e^2 = 0.25 and E z z^T = I: the
    # pilot is theta and its plug-in risk A_yy - 2 b theta + theta A theta = 0.25.
    theta = np.array([1.0, -2.0])
    A = np.eye(2)
    gram = np.zeros((3, 3))
    gram[:2, :2], gram[:2, 2], gram[2, :2] = A, A @ theta, A @ theta
    gram[2, 2] = theta @ A @ theta + 0.25
    pre = gram_preconditioner(gram * 100, 0.0, 100)
    np.testing.assert_allclose(pre.pilot, theta)
    assert pre.pilot_risk == pytest.approx(0.25)


def test_burn_in_stops_when_the_pilot_is_within_the_noise():
    # Without noise inputs: forget the start to 1e-3, ceil(log 1e-3 / log 0.9) = 66.
    assert burn_in_steps(0.1, 1.0) == 66
    # (0.9)^B sqrt(R / a) <= 0.25 s sqrt(K): with s = 0.1, K = 400, a = 0.1, R = 1,
    # ratio = 0.25 * 0.1 * sqrt(40) = 0.158 and B = ceil(log 0.158 / log 0.9) = 18.
    assert burn_in_steps(0.1, 1.0, 0.1, 400, 1.0) == 18
    # A pilot already well within the noise needs the minimum.
    assert burn_in_steps(0.1, 1.0, 1.0, 400, 1.0) == 2
    # A worse pilot never burns more than the 1e-3 rule.
    assert burn_in_steps(0.1, 1.0, 1e-6, 400, 1.0) == 66


def test_plan_steps_cap_keeps_the_burn_in_within_half_the_run():
    burn, total, wanted = plan_steps(0.1, 1.0, 10)
    # Batches of ceil(8 * 0.9 / 0.1) = 72 steps, 10 of them, plus 66 burn-in steps.
    assert (burn, total, wanted) == (66, 786, 786)
    burn, total, wanted = plan_steps(0.1, 1.0, 10, cap=100)
    assert wanted == 786 and total <= 100 and burn <= 50
    assert (total - burn) % 10 == 0
    # With the noise inputs the burn-in shrinks and the batches keep the rest.
    burn2, total2, _ = plan_steps(0.1, 1.0, 10, cap=100, step_noise=0.05, pilot_risk=1.0)
    assert burn2 < burn and total2 - burn2 >= total - burn


def test_a_flat_spectrum_plans_with_its_true_contraction():
    # A = I (q = 100) under Wigner noise of entry std 0.05: Weyl's estimate is 0
    # (the noise norm 1 reaches lambda_min), the Rayleigh form with the
    # deconvolved l ~ 1 gives l / (l + r + e) with r = 0.05 (2 * 10 + 6) =
    # 1.3 and e = 1: about 0.3, the true smallest eigenvalue of P A P being
    # 1 / lambda_max(A_hat + r I) ~ 1 / (2 + 1.3) = 0.3.
    rng = np.random.default_rng(2)
    q, n, sigma = 100, 1000, 0.05
    gram = np.zeros((q + 1, q + 1))
    gram[:q, :q] = n * (np.eye(q) + _wigner(q, sigma, rng))
    gram[q, q] = n
    pre = gram_preconditioner(gram, sigma * n, n)
    true = np.linalg.eigvalsh(pre.root @ np.eye(q) @ pre.root)[0]
    assert pre.min_eigenvalue == pytest.approx(true, rel=0.25)


def test_plain_time_closed_form():
    # K = 2 (n mu / (4 W))**2 / (m q), clipped to [20, 50]: 2 (400 * 0.2 / 4)**2 / 36 = 22.2.
    assert plain_time(400, 6, 0.2) == pytest.approx(800 / 36)
    assert plain_time(400, 6, 0.2, row_moment=2.0) == 50.0  # 66.7, at most 50
    assert plain_time(100, 6, 0.2) == 20.0  # 1.4, at least 20
    assert plain_time(400, 6, 0.2, max_weight=2.0, limits=(1.0, 100.0)) == pytest.approx(200 / 36)


def test_plain_time_keeps_the_gradient_wander_within_half_the_clip():
    # The derivation, simulated: the linear recursion of a plain run's error,
    # delta <- delta - eta (H delta + noise), noise std s = sqrt(T) 2 C / (n mu)
    # per coordinate, T = 200 steps at eta = K / T. Over the rows and the kept
    # steps the root-mean-square of ||z_i|| |z_i' delta| should be C / 2. Two
    # approximations of the derivation make it larger: for Gaussian rows
    # E ||z||**2 (z'u)**2 = (q + 2) ||u||**2 (the derivation takes q: a factor
    # sqrt(8 / 6) = 1.15 at q = 6), and the stationary variance is eta s**2 /
    # (lambda (2 - eta lambda)), not eta s**2 / (2 lambda) (a factor up to
    # 1 / sqrt(1 - 0.11 / 2) = 1.03 at eta lambda <= 0.11): 1.18 expected.
    # One run's ratio has sd 0.078 (measured over 40 seeds: mean 1.165); the
    # mean of 8 runs has sd 0.028, so [1.05, 1.30] is 4 sd either side.
    rng = np.random.default_rng(0)
    n, q, mu, C, T = 400, 6, 0.2, 1.0, 200
    ratios = []
    for _ in range(8):
        Z = np.column_stack([rng.normal(size=(n, q - 1)), np.ones(n)])
        H = Z.T @ Z / n
        K = plain_time(n, q, mu, row_moment=float(np.trace(H)), limits=(0.0, np.inf))
        eta, s = K / T, np.sqrt(T) * 2 * C / (n * mu)
        delta, wander = np.zeros(q), []
        for t in range(T):
            delta = delta - eta * (H @ delta + rng.normal(scale=s, size=q))
            if t >= 50:
                wander.append(np.linalg.norm(Z, axis=1) * np.abs(Z @ delta))
        ratios.append(np.sqrt(np.mean(np.square(wander))) / (C / 2))
    assert 1.05 <= np.mean(ratios) <= 1.30


def test_offset_columns_are_those_far_from_zero_against_their_spread():
    # A year (mean 1979, sd 2) beside a centred column and a 0/1 column, on the
    # scale of a raw table's private Gram matrix: the year's second moment is
    # resolved, its spread (4 / (1 + 1979**2) in the block with the intercept) is
    # not, and it alone is named. Standardised columns never are: their spread is
    # their second moment.
    rng = np.random.default_rng(0)
    n = 5000
    Z = np.column_stack([rng.normal(1979.0, 2.0, n), rng.normal(size=n),
                         rng.random(n) < 0.1, np.ones(n)])
    a = Z.T @ Z / n
    assert list(offset_columns(a, sigma=1.0)) == [0]
    for seed in range(20):  # noisy releases of standardised columns: nothing named
        g = np.random.default_rng(seed)
        S = np.column_stack([g.normal(size=(n, 3)), np.ones(n)])
        assert offset_columns(S.T @ S / n + _wigner(4, 0.05, g), sigma=0.05).size == 0
    # A resolved spread is no offset: the same year with sigma small enough to see it.
    assert offset_columns(a, sigma=1e-8).size == 0
