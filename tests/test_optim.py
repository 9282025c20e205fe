"""skdp.optim: the steppers against reference updates, and the private variants' calibration."""

import math

import numpy as np
import pytest

from skdp.accounting import compose_mu
from skdp.moments import joint_sensitivity
from skdp.optim import SGD, AdaGrad, Adam, moment_noise_stds, private_step_inputs


def _grads(n=25, d=3, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


def test_sgd_with_momentum_is_heavy_ball():
    grads = _grads()
    opt, w = SGD(0.1, momentum=0.9), np.zeros(3)
    ref_w, buf = np.zeros(3), np.zeros(3)
    for g in grads:
        w = opt.step(w, g)
        buf = 0.9 * buf + g
        ref_w = ref_w - 0.1 * buf
    np.testing.assert_allclose(w, ref_w, rtol=1e-12)
    assert opt.n_steps == len(grads)


def test_adagrad_and_adam_match_the_textbook_updates_when_v_dominates_eps():
    grads = _grads()
    w_ada, w_adam = np.zeros(3), np.zeros(3)
    ada, adam = AdaGrad(0.5, eps=1e-12), Adam(0.01, betas=(0.8, 0.99), eps=1e-12)
    ref_ada, v_sum = np.zeros(3), np.zeros(3)
    ref_adam, m, v = np.zeros(3), np.zeros(3), np.zeros(3)
    for t, g in enumerate(grads, start=1):
        w_ada, w_adam = ada.step(w_ada, g), adam.step(w_adam, g)
        v_sum += g * g
        ref_ada -= 0.5 * g / np.sqrt(v_sum)
        m, v = 0.8 * m + 0.2 * g, 0.99 * v + 0.01 * g * g
        ref_adam -= 0.01 * (m / (1 - 0.8**t)) / np.sqrt(v / (1 - 0.99**t))
    np.testing.assert_allclose(w_ada, ref_ada, rtol=1e-10)
    np.testing.assert_allclose(w_adam, ref_adam, rtol=1e-10)
    np.testing.assert_allclose(ada.second_moment, v_sum)
    np.testing.assert_allclose(adam.second_moment, v / (1 - 0.99 ** len(grads)))


def test_second_moment_input_and_bias_are_used():
    # Feeding g**2 + b as the second input with bias b is the plain update.
    grads = _grads(seed=1)
    for make in (lambda: AdaGrad(0.3, eps=1e-9), lambda: Adam(0.3, eps=1e-9)):
        plain, corrected, wp, wc = make(), make(), np.zeros(3), np.zeros(3)
        for g in grads:
            wp = plain.step(wp, g)
            wc = corrected.step(wc, g, second=g * g + 0.7, second_bias=0.7)
        np.testing.assert_allclose(wc, wp, rtol=1e-9)
    # A second moment debiased below zero meets the floor: the step is lr * g / eps.
    opt = AdaGrad(1.0, eps=0.5)
    np.testing.assert_allclose(opt.step(np.zeros(2), np.array([0.1, -0.2]), second=np.array(
        [-1.0, 0.0])), [-0.2, 0.4])


def test_stepper_errors():
    with pytest.raises(ValueError, match="momentum"):
        SGD(0.1, momentum=1.0)
    with pytest.raises(ValueError, match="learning_rate"):
        AdaGrad(0.0)
    with pytest.raises(ValueError, match="eps"):
        Adam(0.1, eps=-1.0)
    with pytest.raises(ValueError, match="betas"):
        Adam(0.1, betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="shape"):
        Adam(0.1).step(np.zeros(2), np.zeros(2), second=np.zeros(3))


# -- the private variants ------------------------------------------------------

MU, ZETA, KAPPA = 0.8, 1.5, 1.3


def test_post_processing_noise_is_the_gaussian_mechanism():
    # Replace-one sensitivity of the gradient sum: 2 zeta kappa.
    for variant in ("post_processing", "bias_correction", "scale_then_privatize"):
        std1, std2 = moment_noise_stds(variant, MU, ZETA, 4, KAPPA)
        assert std1 == pytest.approx(2 * ZETA * KAPPA / MU) and std2 == 0.0


def test_independent_moments_split_the_budget_exactly():
    std1, std2 = moment_noise_stds("independent", MU, ZETA, 4, KAPPA)
    # Sensitivities 2 zeta kappa and sqrt(2) zeta^2 kappa; the two Gaussian
    # mechanisms compose (in GDP) to exactly mu, half of mu^2 each.
    mu1, mu2 = 2 * ZETA * KAPPA / std1, math.sqrt(2) * ZETA**2 * KAPPA / std2
    assert mu1 == pytest.approx(mu2)
    assert compose_mu(mu1, mu2) == pytest.approx(MU)


@pytest.mark.parametrize("dim", [1, 6])
def test_jme_second_moment_is_free(dim):
    std1, std2 = moment_noise_stds("jme", MU, ZETA, dim, KAPPA)
    assert std1 == pytest.approx(2 * ZETA * KAPPA / MU)  # the post-processing noise
    # The joint vector (G, sqrt(lam) Q) with lam = std1^2 / std2^2 has the
    # sensitivity mu * std1 (Kalinin et al. 2025, Lemma 3.5 / Theorem 4.3).
    lam = (std1 / std2) ** 2
    assert joint_sensitivity([KAPPA], [KAPPA], lam, dim, ZETA) == pytest.approx(MU * std1)


def test_jme_joint_sensitivity_holds_on_random_pairs():
    # sup ||a - b||^2 + lam ||a^2 - b^2||^2 over ||a||, ||b|| <= zeta (one
    # participation, kappa = 1) never exceeds the calibrated sensitivity.
    dim = 3
    std1, std2 = moment_noise_stds("jme", 1.0, ZETA, dim)
    lam = (std1 / std2) ** 2
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 200_000, dim))
    a *= ZETA / np.linalg.norm(a, axis=1, keepdims=True) * rng.random((200_000, 1)) ** 0.1
    b *= ZETA / np.linalg.norm(b, axis=1, keepdims=True)
    sq = np.sum((a - b) ** 2, axis=1) + lam * np.sum((a * a - b * b) ** 2, axis=1)
    assert np.sqrt(sq.max()) <= std1 * (1 + 1e-12)


def test_private_step_inputs():
    G, Z, Q, Z2 = np.array([4.0, 2.0]), np.array([2.0, -2.0]), np.array([8.0, 6.0]), np.ones(2)
    g, second, bias = private_step_inputs("post_processing", G, Z, 2)
    np.testing.assert_allclose(g, [3.0, 0.0]) and second is None and bias == 0.0
    assert private_step_inputs("bias_correction", G, Z, 2, noise_variance=8.0)[2] == 2.0
    g, second, _ = private_step_inputs("jme", G, Z, 2, square_sum=Q, square_noise=Z2)
    np.testing.assert_allclose(second, [4.5, 3.5])
    s = np.array([0.5, 2.0])
    g, second, _ = private_step_inputs("scale_then_privatize", G, Z, 2, scale=s)
    np.testing.assert_allclose(g, (G + Z) / s / 2)
    with pytest.raises(ValueError, match="square_sum"):
        private_step_inputs("independent", G, Z, 2)
    with pytest.raises(ValueError, match="Unknown"):
        moment_noise_stds("adam", 1.0, 1.0, 2)
