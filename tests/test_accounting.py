import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from skdp.accounting import (
    compose_mu,
    delta_from_mu,
    epsilon_from_mu,
    epsilon_from_rho,
    gaussian_noise_std,
    mu_from_epsilon_delta,
    mu_from_rho,
    rho_from_mu,
)

EPSILONS = [0.01, 0.1, 0.5, 1.0, 3.0, 8.0, 20.0]
DELTAS = [1e-12, 1e-9, 1e-6, 1e-3, 0.1]


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("delta", DELTAS)
def test_round_trips(epsilon, delta):
    mu = mu_from_epsilon_delta(epsilon, delta)
    assert epsilon_from_mu(mu, delta) == pytest.approx(epsilon, rel=1e-9)
    assert delta_from_mu(mu, epsilon) == pytest.approx(delta, rel=1e-9)


@settings(max_examples=200, deadline=None)
@given(log_eps=st.floats(math.log(0.01), math.log(20.0)),
       log_delta=st.floats(math.log(1e-12), math.log(0.1)))
def test_round_trip_property(log_eps, log_delta):
    epsilon, delta = math.exp(log_eps), math.exp(log_delta)
    mu = mu_from_epsilon_delta(epsilon, delta)
    assert epsilon_from_mu(mu, delta) == pytest.approx(epsilon, rel=1e-9)


@pytest.mark.parametrize("mu", [0.05, 0.3, 1.0, 2.5])
@pytest.mark.parametrize("epsilon", [0.0, 0.1, 1.0, 3.0])
def test_delta_matches_plain_formula(mu, epsilon):
    # Independent evaluation with scipy.stats.norm where it is numerically safe.
    expected = norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * norm.cdf(-epsilon / mu - mu / 2)
    assert delta_from_mu(mu, epsilon) == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_analytic_gaussian_mechanism_value():
    # Balle & Wang (2018): the analytic Gaussian mechanism for epsilon = 1,
    # delta = 1e-5 and unit sensitivity needs sigma ~= 3.73 (vs 4.84 for the
    # classic sqrt(2 log(1.25/delta)) / epsilon calibration).
    sigma = gaussian_noise_std(1.0, 1.0, 1e-5)
    assert sigma == pytest.approx(3.7306, abs=1e-4)
    assert sigma < math.sqrt(2 * math.log(1.25 / 1e-5))


def test_monotonicity():
    mus = [mu_from_epsilon_delta(e, 1e-6) for e in EPSILONS]
    assert np.all(np.diff(mus) > 0)
    assert mu_from_epsilon_delta(1.0, 1e-3) > mu_from_epsilon_delta(1.0, 1e-6)


def test_epsilon_zero_when_delta_is_large():
    # delta_from_mu(mu, 0) = 2 Phi(mu / 2) - 1; any delta above it needs no epsilon.
    assert epsilon_from_mu(0.1, 0.5) == 0.0


def test_design_doc_numbers():
    # DESIGN.md: rho = 0.015 at delta = 1e-6 is epsilon 0.925 (classic), 0.715 (exact).
    assert epsilon_from_rho(0.015, 1e-6) == pytest.approx(0.925, abs=5e-4)
    assert epsilon_from_mu(mu_from_rho(0.015), 1e-6) == pytest.approx(0.715, abs=5e-4)


def test_rho_mu_and_composition():
    assert rho_from_mu(mu_from_rho(0.37)) == pytest.approx(0.37)
    assert compose_mu(3.0, 4.0) == 5.0
    assert compose_mu() == 0.0
    assert compose_mu(*([0.1] * 100)) == pytest.approx(1.0)
    assert gaussian_noise_std(2.0, 1.0, 1e-6) == pytest.approx(2.0 / mu_from_epsilon_delta(1.0, 1e-6))


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), "1", None, True])
def test_invalid_epsilon(bad):
    with pytest.raises(ValueError, match="epsilon"):
        mu_from_epsilon_delta(bad, 1e-6)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5, float("nan"), float("inf")])
def test_invalid_delta(bad):
    with pytest.raises(ValueError, match="delta"):
        mu_from_epsilon_delta(1.0, bad)
    with pytest.raises(ValueError, match="delta"):
        epsilon_from_mu(1.0, bad)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_invalid_mu_rho_sensitivity(bad):
    with pytest.raises(ValueError, match="mu"):
        epsilon_from_mu(bad, 1e-6)
    with pytest.raises(ValueError, match="rho"):
        mu_from_rho(bad)
    with pytest.raises(ValueError, match="sensitivity"):
        gaussian_noise_std(bad, 1.0, 1e-6)
    with pytest.raises(ValueError):
        compose_mu(1.0, -1.0)


# -- independent oracle: Google's dp-accounting PLD accountant ----------------

dp_accounting = pytest.importorskip("dp_accounting")


def _pld_epsilon(noise_multiplier, count, delta):
    from dp_accounting.pld import pld_privacy_accountant

    # Add/remove adjacency with unit sensitivity: one Gaussian with
    # std = noise_multiplier is exactly (1 / noise_multiplier)-GDP, the same
    # privacy profile as skdp's replace-one Gaussian with mu = sensitivity / std.
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_accounting.GaussianDpEvent(noise_multiplier=noise_multiplier), count)
    return acc.get_epsilon(delta)


@pytest.mark.parametrize("noise_multiplier,delta", [(0.8, 1e-5), (2.0, 1e-6), (5.0, 1e-9)])
def test_single_gaussian_against_dp_accounting(noise_multiplier, delta):
    ours = epsilon_from_mu(1.0 / noise_multiplier, delta)
    assert ours == pytest.approx(_pld_epsilon(noise_multiplier, 1, delta), rel=0.01)


@pytest.mark.parametrize("noise_multiplier,delta", [(10.0, 1e-5), (20.0, 1e-6)])
def test_composition_of_100_against_dp_accounting(noise_multiplier, delta):
    ours = epsilon_from_mu(compose_mu(*[1.0 / noise_multiplier] * 100), delta)
    assert ours == pytest.approx(_pld_epsilon(noise_multiplier, 100, delta), rel=0.01)
