"""PrivateGaussianDensity: a running private Gaussian fit (Kalinin et al. 2025, Section 4.1)."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, DensityMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from skdp.base import PRIVACY_PARAMS_DOC, DPEstimatorMixin
from skdp.mechanisms import make_rng
from skdp.moments import StreamingMomentEstimator
from skdp.utils._sklearn import Interval, StrOptions, _fit_context
from skdp.utils._validation import validate_private

__all__ = ["PrivateGaussianDensity", "gaussian_kl", "private_covariances", "project_covariances"]


def private_covariances(means, second_moments, mean_noise_variances=None) -> np.ndarray:
    """Covariances ``S_t - mu_t mu_t^T`` from running private moments, optionally debiased.

    Parameters
    ----------
    means : ndarray of shape (n, d)
        Private running means (the average workload applied to noisy rows).
    second_moments : ndarray of shape (n, d, d)
        Private running averages of ``x x^T``, unbiased (JME, or debiased PP).
    mean_noise_variances : ndarray of shape (n,) or None
        Variance of each entry of the noise in ``means[t]``. The product
        ``mu_hat mu_hat^T`` carries that variance on its diagonal; adding it
        back makes the covariance unbiased (Kalinin et al. 2025, eqs. 62 and 70).

    Returns
    -------
    ndarray of shape (n, d, d)
        Not symmetrised (the second-moment noise of JME is not symmetric, as
        in Theorem 4.1); see :func:`project_covariances`.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.density import private_covariances
    >>> private_covariances(np.array([[1.0]]), np.array([[[2.0]]]), np.array([0.5]))
    array([[[1.5]]])
    """
    means = np.asarray(means, dtype=float)
    cov = np.array(second_moments, dtype=float)
    cov -= means[:, :, None] * means[:, None, :]
    if mean_noise_variances is not None:
        d = means.shape[1]
        idx = np.arange(d)
        cov[:, idx, idx] += np.asarray(mean_noise_variances)[:, None]
    return cov


def project_covariances(covariances, floor: float) -> np.ndarray:
    """Symmetrise and lift every eigenvalue to at least ``floor`` (post-processing).

    This is the Frobenius-nearest symmetric matrix with eigenvalues >= floor.

    Parameters
    ----------
    covariances : ndarray of shape (n, d, d)
    floor : float
        > 0.

    Returns
    -------
    ndarray of shape (n, d, d)
    """
    cov = np.asarray(covariances, dtype=float)
    sym = 0.5 * (cov + np.swapaxes(cov, -1, -2))
    vals, vecs = np.linalg.eigh(sym)
    vals = np.maximum(vals, floor)
    return (vecs * vals[..., None, :]) @ np.swapaxes(vecs, -1, -2)


def gaussian_kl(mean_p, cov_p, mean_q, cov_q) -> np.ndarray:
    """``KL(N(mean_p, cov_p) || N(mean_q, cov_q))``, broadcast over leading axes.

    Parameters
    ----------
    mean_p, mean_q : array-like of shape (..., d)
    cov_p, cov_q : array-like of shape (..., d, d)
        Symmetric positive definite.

    Returns
    -------
    ndarray of shape (...)

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.density import gaussian_kl
    >>> float(gaussian_kl(np.zeros(2), np.eye(2), np.ones(2), np.eye(2)))
    1.0
    """
    mean_p, mean_q = np.asarray(mean_p, float), np.asarray(mean_q, float)
    cov_p, cov_q = np.asarray(cov_p, float), np.asarray(cov_q, float)
    d = mean_p.shape[-1]
    chol_q = np.linalg.cholesky(cov_q)
    solve = np.linalg.solve
    diff = (mean_q - mean_p)[..., None]
    a = solve(chol_q, cov_p)  # L^{-1} cov_p
    trace = np.trace(solve(chol_q, np.swapaxes(a, -1, -2)), axis1=-2, axis2=-1)  # tr(cov_q^{-1} cov_p)
    maha = np.sum(solve(chol_q, diff)[..., 0] ** 2, axis=-1)
    logdet_q = 2 * np.sum(np.log(np.diagonal(chol_q, axis1=-2, axis2=-1)), axis=-1)
    logdet_p = np.linalg.slogdet(cov_p)[1]
    return 0.5 * (trace + maha - d + logdet_q - logdet_p)


_DOC = """A Gaussian density fitted privately to a stream, re-estimated after every row.

The running mean and covariance of Kalinin et al. 2025, Section 4.1: a
:class:`~skdp.moments.StreamingMomentEstimator` with the average workload
releases private means ``mu_t`` and second moments ``S_t``; the covariance is
``S_t - mu_t mu_t^T``, debiased (the squared noise of ``mu_t`` is added back),
symmetrised and projected onto the positive-definite cone (eigenvalues
below ``eigenvalue_floor * norm_bound**2`` are raised to it). All of that is
post-processing, so every per-step density costs nothing beyond the moments.

Parameters
----------
%(epsilon)s
%(delta)s
method : {'jme', 'pp'}, default='jme'
    Joint moment estimation (second moment for free) or post-processing of
    the noisy rows. JME is better at high privacy, PP at low privacy in high
    dimension (Kalinin et al. 2025, Theorems 4.1 and 4.2).
debias : bool, default=True
    Remove the known biases (of ``mu_t mu_t^T`` and, for PP, of the squared
    rows) before the projection.
noise_shaping : {'identity', 'sqrt', 'nu', 'workload_sqrt'} or array-like, default='identity'
    As in :class:`~skdp.moments.StreamingMomentEstimator`.
nu : float or None, default=None
n_steps : int or None, default=None
    Horizon, for the shapings that need one.
norm_bound : float, default=1.0
    Rows longer than this are scaled down to it. Rescale your data with
    public constants so that this holds.
eigenvalue_floor : float, default=1e-3
    Smallest eigenvalue of the released covariances, relative to
    ``norm_bound**2`` (a public scale: no covariance of rows in the ball
    exceeds it).
%(accountant)s
%(random_state)s

Attributes
----------
location_ : ndarray of shape (n_features,)
    Current private mean.
covariance_ : ndarray of shape (n_features, n_features)
    Current private covariance (symmetric positive definite).
precision_ : ndarray of shape (n_features, n_features)
locations_ : ndarray of shape (n_steps, n_features)
    Mean after every row (continual release).
covariances_ : ndarray of shape (n_steps, n_features, n_features)
    Covariance after every row, projected.
moments_ : StreamingMomentEstimator
    The fitted moment estimator behind the density.
n_steps_seen_ : int
privacy_spent_ : PrivacySpent
n_features_in_ : int
feature_names_in_ : ndarray of shape (n_features,)

Notes
-----
**Guarantee.** One row of the stream replaced by another; each row is one
step. The moments are (epsilon, delta)-DP for all steps together (see
:class:`~skdp.moments.StreamingMomentEstimator`); the density, its scores and
its samples are post-processing. ``partial_fit`` continues the stream at no
further cost; a row fed twice is not covered.

References
----------
Kalinin, Upadhyay & Lampert (2025). Continual Release Moment Estimation
with Differential Privacy, Section 4.1.

Examples
--------
>>> import numpy as np
>>> from skdp.density import PrivateGaussianDensity
>>> rng = np.random.default_rng(0)
>>> mean, cov = np.array([0.2, -0.1]), np.array([[0.04, 0.01], [0.01, 0.02]])
>>> X = rng.multivariate_normal(mean, cov, size=200_000)  # norms mostly below 1
>>> dens = PrivateGaussianDensity(epsilon=2.0, random_state=0).fit(X)
>>> # noise sd: 0.010 on the mean, 0.014 on the covariance entries
>>> bool(np.abs(dens.location_ - mean).max() < 0.05), bool(np.abs(dens.covariance_ - cov).max() < 0.05)
(True, True)
>>> dens.covariances_.shape  # one density per step of the stream
(200000, 2, 2)
>>> dens.sample(3, random_state=0).shape
(3, 2)
"""


class PrivateGaussianDensity(DPEstimatorMixin, DensityMixin, BaseEstimator):
    __doc__ = _DOC % PRIVACY_PARAMS_DOC

    _parameter_constraints: dict = {
        **DPEstimatorMixin._parameter_constraints,
        "method": [StrOptions({"jme", "pp"})],
        "debias": ["boolean"],
        "noise_shaping": [StrOptions({"identity", "sqrt", "nu", "workload_sqrt"}), "array-like"],
        "nu": [Interval(Real, 0, 1, closed="left"), None],
        "n_steps": [Interval(Integral, 1, None, closed="left"), None],
        "norm_bound": [Interval(Real, 0, None, closed="neither")],
        "eigenvalue_floor": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, *, epsilon=1.0, delta=1e-6, method="jme", debias=True,
                 noise_shaping="identity", nu=None, n_steps=None, norm_bound=1.0,
                 eigenvalue_floor=1e-3, accountant=None, random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.method = method
        self.debias = debias
        self.noise_shaping = noise_shaping
        self.nu = nu
        self.n_steps = n_steps
        self.norm_bound = norm_bound
        self.eigenvalue_floor = eigenvalue_floor
        self.accountant = accountant
        self.random_state = random_state

    def _moment_estimator(self) -> StreamingMomentEstimator:
        moments = StreamingMomentEstimator(
            epsilon=self.epsilon, delta=self.delta, method=self.method,
            debias=self.debias, workload="average", noise_shaping=self.noise_shaping,
            nu=self.nu, n_steps=self.n_steps, norm_bound=self.norm_bound,
            accountant=self.accountant, random_state=self.random_state)
        moments._ledger_label = type(self).__name__  # the ledger names the estimator you fitted
        return moments

    def _update(self, moments: StreamingMomentEstimator, t0: int, floor: float) -> None:
        """Derive the densities of steps t0.. from the moments (post-processing only)."""
        state = moments._state
        t1 = moments.n_steps_seen_
        means = moments.first_moments_[t0:t1]
        var = None
        if self.debias:
            var = moments.noise_stds_[0] ** 2 * state["noise1"].average_variances(t0, t1)
        new = project_covariances(
            private_covariances(means, moments.second_moments_[t0:t1], var), floor)
        old = self.covariances_ if t0 > 0 else np.empty((0,) + new.shape[1:])
        covariances = np.concatenate([old, new])
        self.moments_ = moments
        self.locations_ = moments.first_moments_
        self.covariances_ = covariances
        self.location_ = self.locations_[-1]
        self.covariance_ = covariances[-1]
        self.precision_ = np.linalg.inv(self.covariance_)
        self.n_steps_seen_ = t1
        self.privacy_spent_ = moments.privacy_spent_

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Start a new stream with the rows of X, in order (charges the budget).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        self : PrivateGaussianDensity
        """
        X = validate_private(self, X, dtype=np.float64)
        moments = self._moment_estimator().fit(X)
        self._floor = self.eigenvalue_floor * self.norm_bound**2
        self._update(moments, 0, self._floor)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None):
        """Append rows to the stream (the first call starts it and charges the budget).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        self : PrivateGaussianDensity
        """
        first = not hasattr(self, "moments_")
        X = validate_private(self, X, reset=first, dtype=np.float64)
        if first:
            moments, t0 = self._moment_estimator(), 0
            self._floor = self.eigenvalue_floor * self.norm_bound**2
        else:
            moments, t0 = self.moments_, self.n_steps_seen_
        moments.partial_fit(X)
        self._update(moments, t0, self._floor)
        return self

    def mahalanobis(self, X) -> np.ndarray:
        """Squared Mahalanobis distances of the rows of X to the current density.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        diff = X - self.location_
        return np.einsum("ij,jk,ik->i", diff, self.precision_, diff)

    def score_samples(self, X) -> np.ndarray:
        """Log-density of each row under the current private Gaussian.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        maha = self.mahalanobis(X)  # checks fitted state and width
        logdet = np.linalg.slogdet(self.covariance_)[1]
        return -0.5 * (maha + logdet + self.n_features_in_ * np.log(2 * np.pi))

    def score(self, X, y=None) -> float:
        """Mean log-likelihood of the rows of X.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        float
        """
        return float(np.mean(self.score_samples(X)))

    def sample(self, n_samples: int = 1, random_state=None) -> np.ndarray:
        """Draw rows from the current private Gaussian (post-processing: no budget).

        Parameters
        ----------
        n_samples : int, default=1
        random_state : int, Generator or None, default=None

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        return make_rng(random_state).multivariate_normal(self.location_, self.covariance_,
                                                          size=int(n_samples))
