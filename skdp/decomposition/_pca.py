"""DPPCA: principal components of a private covariance (one Gaussian release)."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from skdp.base import MAX_WEIGHT, PRIVACY_PARAMS_DOC, DPEstimatorMixin
from skdp.density import private_covariances
from skdp.moments import StreamingMomentEstimator
from skdp.moments._streaming import BOUND_DOC
from skdp.utils._dask import dask_transform, is_dask
from skdp.utils._sklearn import Interval, StrOptions, _fit_context
from skdp.utils._validation import _cap, float_rows, validate_new_rows, validate_private
from skdp.utils._warnings import warn

__all__ = ["DPPCA"]

_DOC = """Principal component analysis of a private covariance matrix.

The private counterpart of :class:`sklearn.decomposition.PCA`: the mean and
second moment of the rows are released once by
:class:`~skdp.moments.StreamingMomentEstimator` (one Gaussian mechanism for
both, rows clipped to a norm bound), the covariance ``S - m m^T`` is
debiased, and its eigenvectors are the components. Everything after the
release is post-processing: ``transform`` and ``inverse_transform`` cost
nothing.

Parameters
----------
n_components : int or None, default=None
    Number of components kept; None keeps all.
%(epsilon)s
%(delta)s
%(bound)s
lam : float, 'density' or None, default='density'
    JME weight of the second moment (see
    :class:`~skdp.moments.StreamingMomentEstimator`); 'density' spends more
    of the budget on the second moment than the privacy-for-free weight.
%(max_weight)s
%(accountant)s
%(random_state)s

Attributes
----------
components_ : ndarray of shape (n_components, n_features)
    Orthonormal principal axes, by decreasing private variance (each with
    its largest entry positive).
explained_variance_ : ndarray of shape (n_components,)
    Private variance along each component (eigenvalues, at least 0).
explained_variance_ratio_ : ndarray of shape (n_components,)
    Share of the private total variance.
mean_ : ndarray of shape (n_features,)
    Private mean (the centre of ``transform``).
n_components_ : int
norm_bound_ : float
privacy_spent_ : PrivacySpent
n_features_in_ : int
feature_names_in_ : ndarray of shape (n_features,)

See Also
--------
skdp.density.PrivateGaussianDensity : The same release as a Gaussian density.

Notes
-----
**Guarantee.** One row replaced by another (n public). The mean and second
moment are one Gaussian mechanism with the joint sensitivity of Kalinin et
al. (2025, Lemma 3.5) on rows clipped to ``norm_bound_`` (declared, or a
private quantile bought with ``bound_share`` of the budget); the
decomposition is post-processing.

**When it fails.** The covariance's noise has entries of order
``norm_bound**2 / (n mu)``: components whose variance gap to their
neighbours is below that are not resolved (their directions are noise),
and the smallest explained variances are biased up by the noise. Clipping
shrinks the long rows, which can rotate the components of heavy-tailed
data.

Examples
--------
>>> import numpy as np
>>> from skdp.decomposition import DPPCA
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(100_000, 4)) * [3.0, 2.0, 1.0, 0.5]
>>> pca = DPPCA(n_components=2, epsilon=1.0, random_state=0).fit(X)
>>> np.abs(pca.components_).round(2)
array([[1., 0., 0., 0.],
       [0., 1., 0., 0.]])
>>> pca.explained_variance_.round(1)  # 9 and 4, less what clipping at the 99th percentile takes
array([8.9, 4. ])
>>> pca.transform(X[:3]).shape
(3, 2)
"""


class DPPCA(DPEstimatorMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    __doc__ = _DOC % {**PRIVACY_PARAMS_DOC, "bound": BOUND_DOC}
    _accepts_dask = True  # fit reads Dask collections partition by partition

    _parameter_constraints: dict = {
        **DPEstimatorMixin._parameter_constraints,
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "norm_bound": [Interval(Real, 1e-100, 1e100, closed="both"), None],
        "bound_quantile": [Interval(Real, 0.5, 1, closed="neither")],
        "bound_share": [Interval(Real, 0, 1, closed="neither")],
        "lam": [Interval(Real, 0, None, closed="neither"), StrOptions({"density"}), None],
        "max_weight": [Interval(Real, 0, MAX_WEIGHT, closed="right")],
    }

    def __init__(self, n_components=None, *, epsilon=1.0, delta=1e-6, norm_bound=None,
                 bound_quantile=0.99, bound_share=0.05, lam="density", max_weight=1.0,
                 accountant=None, random_state=None):
        self.n_components = n_components
        self.epsilon = epsilon
        self.delta = delta
        self.norm_bound = norm_bound
        self.bound_quantile = bound_quantile
        self.bound_share = bound_share
        self.lam = lam
        self.max_weight = max_weight
        self.accountant = accountant
        self.random_state = random_state

    def _probe_output(self, X) -> np.ndarray:
        """Zeros of the shape ``transform`` returns (a private search's dry run; public)."""
        n, d = np.shape(X)
        return np.zeros((n, d if self.n_components is None else self.n_components))

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Release the private covariance of X and decompose it (charges the budget).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Row weights in [0, max_weight].

        Returns
        -------
        self : DPPCA
        """
        X = validate_private(self, X, dtype=np.float64)
        d = X.shape[1]
        k = d if self.n_components is None else self.n_components
        if k > d:
            raise ValueError(f"n_components={k} must be at most n_features={d}.")
        moments = StreamingMomentEstimator(
            epsilon=self.epsilon, delta=self.delta, workload="average", lam=self.lam,
            norm_bound=self.norm_bound, bound_quantile=self.bound_quantile,
            bound_share=self.bound_share, max_weight=self.max_weight,
            accountant=self.accountant, random_state=self.random_state)
        moments._ledger_label = type(self).__name__
        moments.fit(X, sample_weight=sample_weight)
        mean = moments.first_moment_
        cov = private_covariances(mean[None], moments.second_moment_[None],
                                  np.array([moments._release_info["mean_noise_var"]]))[0]
        values, vectors = np.linalg.eigh(0.5 * (cov + cov.T))
        order = np.argsort(values)[::-1]
        self._warn_unseparated(values[order], k, moments._release_info["second_noise_std"])
        values, vectors = np.maximum(values[order], 0.0), vectors[:, order].T
        # Deterministic signs (as scikit-learn): the largest entry of each axis positive.
        signs = np.sign(vectors[np.arange(d), np.argmax(np.abs(vectors), axis=1)])
        vectors *= np.where(signs == 0, 1.0, signs)[:, None]
        total = values.sum()
        self.components_ = vectors[:k]
        self.explained_variance_ = values[:k]
        self.explained_variance_ratio_ = values[:k] / total if total > 0 else np.zeros(k)
        self.mean_ = mean
        self.n_components_ = k
        self.norm_bound_ = moments.norm_bound_
        self.privacy_spent_ = moments.privacy_spent_
        return self

    @staticmethod
    def _warn_unseparated(values: np.ndarray, k: int, entry_std: float) -> None:
        """Warn when the kept components are not separated from the rest beyond the noise.

        Post-processing of the release: the covariance's noise is symmetric
        with diagonal std ``entry_std`` and off-diagonal std ``entry_std /
        sqrt(2)``. What turns the top-k subspace is the block of the noise
        between it and the rest, a k x (d - k) Gaussian matrix of typical
        norm ``(sqrt(k) + sqrt(d - k)) entry_std / sqrt(2)``; the sine of the
        angle is about that norm over the gap between the k-th and the
        (k+1)-th eigenvalue (Davis and Kahan 1970). Below a gap of that norm
        the components are partly the noise's.
        """
        d = values.shape[0]
        if k >= d:
            return  # all components: the projection is a rotation, nothing is left out
        typical = (math.sqrt(k) + math.sqrt(d - k)) * float(entry_std) / math.sqrt(2.0)
        gap = float(values[k - 1] - values[k])
        if gap < typical:
            warn(f"The {k} private components are not separated from the others beyond the "
                 f"noise: the gap between eigenvalues {k} and {k + 1} of the released "
                 f"covariance ({gap:.3g}) is below the typical norm of the noise between "
                 f"them ({typical:.3g}), so "
                 "the subspace they span is partly the noise's. Use fewer components, more "
                 "rows, a larger epsilon or a tighter norm_bound (one norm bound serves every "
                 "column: standardise them first).", UserWarning)

    @property
    def _n_features_out(self):
        return self.n_components_

    def transform(self, X):
        """Project onto the private components (post-processing: no budget).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_components)
            A lazy Dask array for a Dask X.
        """
        check_is_fitted(self)
        if is_dask(X):  # lazily, partition by partition: the next step reads it there
            return dask_transform(self, X, self._projected, self.components_.shape[0])
        # Capped as fit caps its input, before and after (see DPStandardScaler.transform:
        # the next private step of a Pipeline reads this after this step's charge).
        X = _cap(validate_new_rows(self, X, reset=False, dtype=np.float64))
        with np.errstate(over="ignore", invalid="ignore"):
            return _cap(self._projected(X))

    def _projected(self, X):
        return (X - self.mean_) @ self.components_.T

    def inverse_transform(self, X):
        """Map component scores back to the feature space.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_components)

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        return float_rows(X) @ self.components_ + self.mean_
