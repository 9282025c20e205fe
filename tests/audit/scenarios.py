"""Neighbouring datasets and output scalars for the privacy audit of every estimator.

Each scenario fits an estimator on D or on D' (one row replaced) and
returns one number of the released output. The differing row is chosen to
move that number as far as the sensitivity allows (a label far beyond the
clip, a row on the norm bound), and everything else is chosen so that the
number carries as much of the fit's privacy loss as possible (one step
where steps would dilute it, no intercept, the row at the front of a
stream). ``tightness`` in the benchmark table is mu_lb / mu: how much of
the claim the audit can see.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

from skdp.accounting import mu_from_epsilon_delta
from skdp.density import PrivateGaussianDensity
from skdp.linear_model import (
    AdaSSPRegressor,
    DPAMBSSGDRegressor,
    DPLinearRegressionGD,
    DPSGDClassifier,
    DPSGDRegressor,
)
from skdp.mechanisms import make_rng, private_gram
from skdp.model_selection import DPGridSearchCV
from skdp.moments import StreamingMomentEstimator
from skdp.preprocessing import DPStandardScaler

EPSILON, DELTA = 8.0, 1e-5
MU = mu_from_epsilon_delta(EPSILON, DELTA)


@dataclass(frozen=True)
class Scenario:
    name: str
    run: Callable[[bool, int], float]
    epsilon: float = EPSILON
    delta: float = DELTA

    @property
    def mu(self) -> float:
        return mu_from_epsilon_delta(self.epsilon, self.delta)


def _one_hot_rows(n: int, big_label: float):
    """n rows of one feature: x = 0 except row 0 with x = 1 and label big_label."""
    X = np.zeros((n, 1))
    X[0, 0] = 1.0
    y = np.zeros(n)
    y[0] = big_label
    return X, y


def _ones_rows(n: int, label: float, first_label: float):
    """n rows x = 1 with the given label, the first row's label replaced."""
    y = np.full(n, label)
    y[0] = first_label
    return np.ones((n, 1)), y


def _dpgd(neighbour: bool, seed: int) -> float:
    # The row's clipped gradient is -clip or +clip at every step (the
    # residual stays beyond the clip), so the final iterate carries the
    # shift of all steps; the other rows (x = 0) add nothing.
    X, y = _one_hot_rows(10, -100.0 if neighbour else 100.0)
    reg = DPLinearRegressionGD(epsilon=EPSILON, delta=DELTA, clip_norm=1.0, fit_intercept=False,
                               n_iter=20, burn_in=0, n_batches=2, population_share=0.0,
                               gram_share=0.0, clip_share=0.0,
                               random_state=seed)
    return float(reg.fit(X, y).coef_[0])


def _dpgd_full(neighbour: bool, seed: int) -> float:
    # Every release of a default fit (private row and label bounds, Gram
    # matrix, clip check, sandwich meat) with a fixed clip norm. All rows x
    # = 1 with labels +-1 in turn, so the private bounds come out at 1 and
    # clip nothing; the replaced row's label is +1 or -1: it moves the Gram's
    # X^T y by 2 (the pilot start) and flips its clipped gradient from -C to
    # +C at every step (the iterates stay near 0), and coef_, the mean of
    # the iterates, carries both. 200 rows keep the safe bound search at its
    # default share (at 40 it takes a quarter of the budget); 20 steps.
    X = np.ones((200, 1))
    y = np.where(np.arange(200) % 2 == 0, 1.0, -1.0)
    y[0] = -1.0 if neighbour else 1.0
    reg = DPLinearRegressionGD(epsilon=EPSILON, delta=DELTA, clip_norm=1.0, fit_intercept=False,
                               n_iter=20, burn_in=0, n_batches=2, random_state=seed)
    return float(reg.fit(X, y).coef_[0])


def _gram(neighbour: bool, seed: int) -> float:
    # The Gram-matrix mechanism itself (DP-GD's preconditioner and pilot,
    # AdaSSP's statistics): inside a default DP-GD fit it has 7.5% of mu**2,
    # too little for an audit of coef_ to see it broken. Two features, bound
    # 1; the replaced row is (1, 0) or (0, 1), so the Gram matrix moves by
    # diag(1, -1), whose upper triangle has norm sqrt(2): the full
    # sensitivity. G_00 - G_11 carries all of it (means 1 and -1, noise std
    # sqrt(2) times an entry's).
    X = np.zeros((10, 2))
    X[0] = (0.0, 1.0) if neighbour else (1.0, 0.0)
    gram, _ = private_gram(X, fit_intercept=False, norm_bound=1.0, mu=MU, rng=make_rng(seed))
    return float(gram[0, 0] - gram[1, 1])


def _ambssgd(neighbour: bool, seed: int) -> float:
    # All rows x = 1, y = 1; the replaced row has y = +-10 (the residual
    # bound). Wherever the permutation puts it (stat sample or batch), only
    # one mechanism sees it; the audit shows how much reaches coef_.
    X, y = _ones_rows(2000, 1.0, -10.0 if neighbour else 10.0)
    reg = DPAMBSSGDRegressor(epsilon=EPSILON, delta=DELTA, fit_intercept=False, n_iter=2,
                             stat_fraction=0.3, random_state=seed)
    return float(reg.fit(X, y).coef_[0])


def _adassp(neighbour: bool, seed: int) -> float:
    # Every row sits on the norm bound (x = 1), so X^T X is large against
    # its noise and coef_ is nearly linear in the noisy X^T y; the replaced
    # label moves X^T y by the full 2 * bound * label_bound.
    X, y = _ones_rows(2000, 0.0, -1.0 if neighbour else 1.0)
    reg = AdaSSPRegressor(epsilon=EPSILON, delta=DELTA, norm_bound=1.0, label_bound=1.0,
                          fit_intercept=False, random_state=seed)
    return float(reg.fit(X, y).coef_[0])


def _dpsgd(noise: str, epochs: int, batch_size: int):
    def run(neighbour: bool, seed: int) -> float:
        X, y = _one_hot_rows(10, -100.0 if neighbour else 100.0)
        reg = DPSGDRegressor(epsilon=EPSILON, delta=DELTA, noise=noise, epochs=epochs,
                             batch_size=batch_size, clip_norm=1.0, fit_intercept=False,
                             random_state=seed)
        return float(reg.fit(X, y).coef_[0])
    return run


def _dpsgd_classifier(neighbour: bool, seed: int) -> float:
    # At coef 0 a row x = 4 has gradient x (1/2 - y): +-2, clipped to +-1.
    X = np.zeros((10, 1))
    X[0, 0] = 4.0
    y = np.array([0, 1] * 5)
    y[0] = 0 if neighbour else 1
    clf = DPSGDClassifier(epsilon=EPSILON, delta=DELTA, classes=[0, 1], batch_size=10,
                          clip_norm=1.0, fit_intercept=False, random_state=seed)
    return float(clf.fit(X, y).coef_.ravel()[0])


def _moments(method: str, noise_shaping: str):
    # The first release after the replaced row (at the front of the
    # stream) is that row plus its noise: x = +-1 on the norm bound.
    def run(neighbour: bool, seed: int) -> float:
        X = np.full((5, 1), 0.5)
        X[0, 0] = -1.0 if neighbour else 1.0
        est = StreamingMomentEstimator(epsilon=EPSILON, delta=DELTA, method=method,
                                       noise_shaping=noise_shaping, release="per_row",
                                       store_history=True, norm_bound=1.0, random_state=seed)
        return float(est.fit(X).first_moments_[0, 0])
    return run


def _jme_joint(neighbour: bool, seed: int) -> float:
    # Rows 1 and 0: most of their privacy loss is in the second moment
    # (x**2 moves by 1, x by 1), the channel JME gets "for free" (Lemma
    # 3.5). Both releases of the step are combined in the likelihood-ratio
    # direction, with the noise stds the estimator reports.
    a, b = 1.0, 0.0
    X = np.array([[b if neighbour else a]])
    est = StreamingMomentEstimator(epsilon=EPSILON, delta=DELTA, norm_bound=1.0,
                                   random_state=seed).fit(X)
    sd1, sd2 = est.noise_stds_
    m1, m2 = est.first_moment_[0], est.second_moment_[0, 0]
    return float((a - b) * m1 / sd1**2 + (a**2 - b**2) * m2 / sd2**2)


def _density(neighbour: bool, seed: int) -> float:
    X = np.array([[-1.0 if neighbour else 1.0]])
    dens = PrivateGaussianDensity(epsilon=EPSILON, delta=DELTA, norm_bound=1.0, random_state=seed)
    return float(dens.fit(X).location_[0])


def _scaler(neighbour: bool, seed: int) -> float:
    # One feature in [0, 1], the replaced row at 0 or 1. max_weight=0.5
    # without weights: the rows still weigh 1 (issue 22: the noise used to be
    # scaled by 0.5, a mu twice the claim).
    X = np.full((20, 1), 0.5)
    X[0, 0] = 0.0 if neighbour else 1.0
    scaler = DPStandardScaler(epsilon=EPSILON, delta=DELTA, bounds=(0.0, 1.0), max_weight=0.5,
                              random_state=seed)
    return float(scaler.fit(X).mean_[0])


def _search(neighbour: bool, seed: int) -> float:
    # A private search whose refit's steps carry the replaced label (as in
    # _dpgd); the output is the refitted coefficient. The audit sees the
    # refit's share of the budget (and whatever the choice leaks).
    X, y = _one_hot_rows(10, -100.0 if neighbour else 100.0)
    reg = DPLinearRegressionGD(clip_norm=1.0, fit_intercept=False, n_iter=20, burn_in=0,
                               n_batches=2, population_share=0.0, gram_share=0.0, clip_share=0.0)
    search = DPGridSearchCV(reg, {"learning_rate": [0.5, 1.0]}, epsilon=EPSILON, delta=DELTA,
                            cv=0.5, selection_share=0.1, random_state=seed)
    return float(search.fit(X, y).best_estimator_.coef_[0])


SCENARIOS = [
    Scenario("DPLinearRegressionGD", _dpgd),
    Scenario("DPLinearRegressionGD(all releases)", _dpgd_full),
    Scenario("private_gram", _gram),
    Scenario("DPAMBSSGDRegressor", _ambssgd),
    Scenario("AdaSSPRegressor", _adassp),
    Scenario("DPSGDRegressor", _dpsgd("independent", 1, 10)),
    Scenario("DPSGDRegressor(noise='nu', epochs=2)", _dpsgd("nu", 2, 5)),
    Scenario("DPSGDRegressor(noise='nu', epochs=4)", _dpsgd("nu", 4, 2)),
    Scenario("DPSGDClassifier", _dpsgd_classifier),
    Scenario("StreamingMomentEstimator(jme)", _moments("jme", "identity")),
    Scenario("StreamingMomentEstimator(jme, both moments)", _jme_joint),
    Scenario("StreamingMomentEstimator(pp, sqrt)", _moments("pp", "sqrt")),
    Scenario("PrivateGaussianDensity", _density),
    Scenario("DPStandardScaler(max_weight=0.5)", _scaler),
    Scenario("DPGridSearchCV", _search),
]


def quiet(run):
    """Run with skdp's warnings silenced (the scenarios are deliberately extreme)."""
    def wrapped(neighbour, seed):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return run(neighbour, seed)
    return wrapped
