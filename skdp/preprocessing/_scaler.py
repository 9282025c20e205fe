"""DPStandardScaler: private means and standard deviations from declared or private bounds."""

from __future__ import annotations

import math
from functools import partial
from numbers import Real

import numpy as np
from scipy.stats import norm
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from skdp._secure import is_secure_mode
from skdp.base import (
    MAX_WEIGHT,
    PRIVACY_PARAMS_DOC,
    DPEstimatorMixin,
    StreamStateMixin,
    begin_draws,
    check_stream_continues,
    weight_bound,
)
from skdp.clipping import (
    effective_quantile,
    geometric_grid,
    private_quantiles,
    quantile_statistics,
    search_noise_std,
)
from skdp.mechanisms import gaussian_release
from skdp.moments import c_d, r_d
from skdp.moments._streaming import _noisy_total
from skdp.utils._dask import (
    dask_transform,
    is_dask,
    partial_fit_over_partitions,
)
from skdp.utils._rows import sum_rows
from skdp.utils._sklearn import Interval, _fit_context
from skdp.utils._validation import (
    _cap,
    check_bounds,
    check_sample_weight,
    check_stream_weights,
    float_rows,
    validate_new_rows,
    validate_private,
)
from skdp.utils._warnings import warn

__all__ = ["DPStandardScaler", "check_bounds", "gaussian_clipped_variance"]

_LAM = 1.0 / c_d(1)  # the largest second-moment weight that is free on an interval: r_1 = 4


def _scaled_sums(X, w, center, half):
    """Sums of ``u = clip((x - center) / half, -1, 1)``, of ``u**2`` and of the weights."""
    U = np.clip((X - center) / half, -1.0, 1.0)
    w = np.ones(U.shape[0]) if w is None else w
    return w @ U, w @ (U * U), np.asarray(w.sum())


def _scaler_grid() -> np.ndarray:
    """Signed candidate bounds with ratio 2**(1/32) (3%% steps): a feature's spread can be
    small next to its distance from 0, and a bound one coarse step inside its quantile
    clips far more than the quantile says. Two more search steps than the 2**(1/8) grid."""
    return geometric_grid(ratio=2.0 ** (1.0 / 32.0), signed=True)


def gaussian_clipped_variance(q: float) -> float:
    """Variance of a standard normal clipped at its ``1 - q`` and ``q`` quantiles.

    ``(2q - 1) - 2 z phi(z) + 2 z**2 (1 - q)`` with ``z = Phi^{-1}(q)``: the
    share of a Gaussian feature's variance that survives clipping at those
    quantiles.

    Parameters
    ----------
    q : float
        In (0.5, 1).

    Returns
    -------
    float

    Examples
    --------
    >>> from skdp.preprocessing import gaussian_clipped_variance
    >>> round(gaussian_clipped_variance(0.995), 4)
    0.9819
    """
    z = float(norm.ppf(q))
    return (2.0 * q - 1.0) - 2.0 * z * float(norm.pdf(z)) + 2.0 * z * z * (1.0 - q)


def _both_tails(X, w, grid, q):
    d = X.shape[1]
    return quantile_statistics(np.hstack([X, X]), grid, np.r_[np.full(d, 1 - q), np.full(d, q)], w)


_DOC = """Standardize features by removing a private mean and scaling to a private unit variance.

The private counterpart of :class:`sklearn.preprocessing.StandardScaler`: the
means and variances of the features are released with one Gaussian
mechanism from values clipped to per-feature bounds, which you declare
(``bounds=(lower, upper)``, from the data's documentation) or which are
found privately (a lower and an upper quantile of every feature, bought
with ``bound_share`` of the budget).

Parameters
----------
%(epsilon)s
%(delta)s
bounds : tuple (lower, upper) or None, default=None
    Per-feature bounds (scalars apply to every feature; one value per
    feature in column order, as in diffprivlib; or pandas Series or dicts
    keyed by column name, which must name X's columns). Values outside are clipped before the
    release. None finds them privately: the ``1 - bound_quantile`` and
    ``bound_quantile`` quantiles of every feature, by noisy binary search on
    a signed geometric grid (:func:`~skdp.clipping.private_quantiles`).
bound_quantile : float, default=0.995
    Upper quantile of the private bounds (the lower one is ``1 - bound_quantile``),
    in (0.5, 1). On small tables the quantiles move inwards to keep three
    noise standard deviations of rows outside them, with a warning (the
    quantiles used are in ``bound_quantile_``). The variance of the clipped
    values is then divided by the share of a Gaussian's variance that
    survives clipping at those quantiles
    (:func:`gaussian_clipped_variance`): right for near-Gaussian features,
    too small for heavy-tailed ones (see Notes).
bound_share : float, default=0.1
    Share of the budget's ``mu**2`` spent on the private bounds when
    ``bounds`` is None.
with_mean : bool, default=True
    Center the data in ``transform``.
with_std : bool, default=True
    Scale the data to unit variance in ``transform``. Without it the
    variances are not released and their budget goes to the means.
%(max_weight)s
%(accountant)s
%(random_state)s

Attributes
----------
mean_ : ndarray of shape (n_features,)
    Private mean of every feature (of the clipped values).
var_ : ndarray of shape (n_features,) or None
    Private variance of every feature (None when ``with_std=False``).
scale_ : ndarray of shape (n_features,) or None
    ``sqrt(var_)``, with 1 for a (privately) zero variance, as in
    scikit-learn.
bounds_ : tuple of ndarray
    The (lower, upper) bounds used, declared or private.
bound_quantile_ : float or None
    The upper quantile the private bounds were searched at (None with
    declared bounds).
n_samples_seen_ : int
noise_stds_ : tuple of float
    Std of the noise on the sums of the scaled values ``u`` in [-1, 1], of
    their squares, and of the total weight.
privacy_spent_ : PrivacySpent
n_features_in_ : int
feature_names_in_ : ndarray of shape (n_features,)

See Also
--------
skdp.moments.StreamingMomentEstimator : Means and second moments under an L2 row bound.

Notes
-----
**Guarantee.** One row replaced by another (n public). Every feature is
mapped to ``u = clip((x - c) / h, -1, 1)`` with c and h the centre and half
width of its bounds, and the release is one Gaussian mechanism on
``(sum_i w_i u_i, sqrt(lam) sum_i w_i u_i**2, sum_i w_i)``. On the interval
[-1, 1] a value's pair ``(u, u**2)`` moves by at most
``(u - v)**2 + lam (u**2 - v**2)**2 <= r_1(lam) = 4`` for
``lam <= (11 + 5 sqrt 5) / 8`` (the d = 1 case of Kalinin et al. 2025,
Lemma 3.5), so with that lam the squares come **free**: the squared
sensitivity is ``max_weight**2 (4 d + 1)``, the 1 for the total weight. With
private bounds, the quantile search (``bound_share`` of ``mu**2``) and the
release compose exactly. ``partial_fit`` releases the sums of each call's
rows with the same budget and adds them up: private by parallel
composition only if every row arrives once. The means divide by the
released total weight where weights were passed (in any call), and by the
public row count where none were: the total is then n, and dividing by its
noisy release only added error (post-processing either way).

**When it fails.** Values beyond the bounds are clipped, which biases both
the mean and the variance; bounds far wider than the data inflate the
noise (the noise on a mean is about ``2 h sqrt(4 d + 1) / (n mu)``). With
private bounds the variances are corrected for Gaussian tails beyond them.
Measured at epsilon 1, d = 3, 20 seeds (``python
benchmarks/scaler_small_n.py``): Gaussian features have median scale errors
of 0.2%% at 10,000 rows and 0.02%% at 100,000; at 1,000 rows the private
bounds are the 35%%/65%% quantiles, the scales are off by up to 78%% (90th
percentile of the error) and the fit warns. Heavy-tailed features (t with 3
degrees of freedom, log-normal) keep scales 20-26%% too small at 10,000 rows
(with the warning) and 11-12%% too small at 100,000 (without: the bounds are
then the 0.5%%/99.5%% quantiles, and the variance beyond them is not
estimated). Declare bounds for such features.

References
----------
Kalinin, Upadhyay & Lampert (2025). Continual Release Moment Estimation with
Differential Privacy (the joint sensitivity of first and second moments).

Examples
--------
>>> import numpy as np
>>> from skdp.preprocessing import DPStandardScaler
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(loc=[50.0, -3.0], scale=[10.0, 0.5], size=(100_000, 2))
>>> scaler = DPStandardScaler(epsilon=0.5, bounds=([0.0, -6.0], [100.0, 0.0]),
...                           random_state=0).fit(X)
>>> np.round(scaler.mean_, 2), np.round(scaler.scale_, 2)  # noise sd 0.012 and 0.0003 on the means
(array([50.02, -3.  ]), array([10.03,  0.5 ]))
>>> scaler.transform(X[:2]).shape
(2, 2)
"""


class DPStandardScaler(StreamStateMixin, DPEstimatorMixin, OneToOneFeatureMixin, TransformerMixin,
                       BaseEstimator):
    __doc__ = _DOC % PRIVACY_PARAMS_DOC
    _accepts_dask = True  # fit reads Dask collections partition by partition

    #: Read at every call (transform and publication), not fixed by the stream
    #: (with_std can be turned off mid-stream, not on: partial_fit raises then).
    _LIVE_PARAMS = ("with_mean", "with_std")

    _parameter_constraints: dict = {
        **DPEstimatorMixin._parameter_constraints,
        "bounds": ["array-like", tuple, None],
        "bound_quantile": [Interval(Real, 0.5, 1, closed="neither")],
        "bound_share": [Interval(Real, 0, 1, closed="neither")],
        "with_mean": ["boolean"],
        "with_std": ["boolean"],
        "max_weight": [Interval(Real, 0, MAX_WEIGHT, closed="right")],
    }

    def __init__(self, *, epsilon=1.0, delta=1e-6, bounds=None, bound_quantile=0.995,
                 bound_share=0.1, with_mean=True, with_std=True, max_weight=1.0,
                 accountant=None, random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.bound_quantile = bound_quantile
        self.bound_share = bound_share
        self.with_mean = with_mean
        self.with_std = with_std
        self.max_weight = max_weight
        self.accountant = accountant
        self.random_state = random_state

    def _searched(self, n: int, d: int, mu: float, W: float) -> float:
        """The quantile the private bounds search for (public: n, d, the budget); warns if lowered.

        Called before the charge, so that the warning (under warnings-as-errors, an
        error) comes before anything is spent.
        """
        std = search_noise_std(_scaler_grid().shape[0], 2 * d, mu, W)
        q = effective_quantile(self.bound_quantile, n, std, parameter="bounds")
        if q < self.bound_quantile:
            warn(
                f"On {n} rows at this budget the private bounds are the "
                f"{1 - q:.3g} and {q:.3g} quantiles of every feature, not {1 - self.bound_quantile:.3g}"
                f" and {self.bound_quantile:.3g} (the counts' noise needs that margin). The "
                "variances of the clipped values are scaled up as for Gaussian tails beyond the "
                "bounds: right for near-Gaussian features, still too small for heavy-tailed ones. "
                "Declare bounds, or give more rows or budget.", UserWarning)
        return q

    def _private_bounds(self, X, w, W: float, mu: float, q: float,
                        rng) -> tuple[np.ndarray, np.ndarray]:
        d = X.shape[1]
        grid = _scaler_grid()
        self._searched_quantile = q
        stats = sum_rows(partial(_both_tails, grid=grid, q=q), X, w)
        found = private_quantiles(stats, grid, mu=mu, rng=rng, max_weight=W, part=("call", 0))
        lower, upper = found[:d], found[d:]
        collapsed = upper <= lower
        if np.any(collapsed):
            # Both quantiles at one point g: a nearly constant feature, or a rare
            # value beyond the quantiles the budget can see (a 0/1 column with
            # a few percent of ones). Widen to g +- max(1, |g|): a public rule
            # applied to the private g (post-processing); say so.
            g = np.minimum(lower, upper)
            width = np.maximum(1.0, np.abs(g))
            lower = np.where(collapsed, g - width, lower)
            upper = np.where(collapsed, g + width, upper)
            warn(
                f"The private bounds of feature(s) {np.flatnonzero(collapsed).tolist()} collapsed "
                "to a point (a nearly constant feature, or a rare value beyond the quantiles "
                "this budget can resolve); they were widened to g +- max(1, |g|). Declare "
                "bounds for such features.", UserWarning)
        return lower, upper

    def _start(self, X, w, W: float) -> dict:
        """Check, charge, find the bounds: the state of the first call (W: the weight bound)."""
        n, d = X.shape
        mu = self._budget_mu()
        declared = None if self.bounds is None else check_bounds(
            self.bounds, d, feature_names=getattr(self, "feature_names_in_", None), by_name=True)
        mu_bound = mu * math.sqrt(self.bound_share) if declared is None else 0.0
        q = None if declared is not None else self._searched(n, d, mu_bound, W)
        spent, rng = self._charge(mu)  # before any noise is drawn
        self._searched_quantile = None
        lower, upper = declared if declared is not None else self._private_bounds(
            X, w, W, mu_bound, q, rng)
        mu_release = math.sqrt(mu * mu - mu_bound * mu_bound)
        lam = _LAM if self.with_std else 0.0
        # Squared sensitivity: every feature's (u, sqrt(lam) u^2) moves by at
        # most r_1(lam) = 4 (squared), the total weight by 1, all times W^2.
        sens = W * math.sqrt(d * r_d(max(lam, 1e-12), 1) + 1.0)
        std1 = sens / mu_release
        return dict(lower=lower, upper=upper, center=(lower + upper) / 2,
                    half=(upper - lower) / 2, spent=spent, rng=rng, W=W, sens=sens,
                    quantile=self._searched_quantile,
                    stds=(std1, std1 / math.sqrt(lam) if lam else None, std1),
                    sums=(np.zeros(d), np.zeros(d), 0.0), n=0,
                    secure=is_secure_mode())  # a stream continues only in this mode

    def _release(self, state: dict, X, w) -> None:
        # A partial of public constants: the tasks must not carry the state
        # (its generator is secret).
        s1, s2, total = sum_rows(partial(_scaled_sums, center=state["center"],
                                         half=state["half"]), X, w)
        rng, (std1, std2, std_w) = state["rng"], state["stds"]
        begin_draws(state)  # cleared by the caller once the call is published
        d = X.shape[1]
        # One joint mechanism on the call's rows (parallel composition over calls):
        # its sensitivity is recorded with the first block.
        part = ("call", state.get("calls", 0))
        # In secure mode its blocks share the grid's rounding allowance.
        joint = dict(part=part, mechanism_mu=state["sens"] / std1,
                     share=1.0 / math.sqrt(2.0 if std2 is None else 3.0))
        s1 = gaussian_release(s1, std1, rng, name="scaler sums", sensitivity=state["sens"],
                              weight=state["W"], **joint)
        # Without with_std the squares are never released: none is kept.
        s2 = gaussian_release(s2, std2, rng, name="scaler sums of squares", **joint) \
            if std2 is not None else np.zeros(d)
        total = float(gaussian_release(float(total), std_w, rng, name="scaler total weight",
                                       **joint))
        a, b, c = state["sums"]
        state["sums"] = (a + s1, b + s2, c + total)
        state["n"] += X.shape[0]
        # Whether any call had weights (w is None exactly when none were passed; public).
        state["weighted"] = state.get("weighted", False) or w is not None
        state["calls"] = state.get("calls", 0) + 1

    def _publish(self, state: dict) -> None:
        """Means and variances from the noisy sums (post-processing only)."""
        s1, s2, total = state["sums"]
        if state.get("weighted", True):
            total = _noisy_total(total, state["stds"][2] * math.sqrt(state["calls"]),
                                 state["n"] * state["W"])
        else:  # every row weighs 1: the total weight is the public row count
            total = float(state["n"])
        mean_u = np.clip(s1 / total, -1.0, 1.0)
        half, center = state["half"], state["center"]
        self.mean_ = center + half * mean_u
        if self.with_std:
            std1 = state["stds"][0] * math.sqrt(state["calls"])
            # E[mean_u^2] = mean^2 + Var(noise of mean_u): add it back (debias),
            # then keep the variance feasible on [-1, 1]: 0 <= var <= 1 - mean^2.
            var_u = s2 / total - mean_u**2 + (std1 / total) ** 2
            var_u = np.clip(var_u, 0.0, 1.0 - mean_u**2)
            self.var_ = half**2 * var_u
            if state["quantile"] is not None:
                # Values beyond private quantile bounds were clipped: undo the
                # shrinkage a Gaussian feature suffers there (a public factor).
                self.var_ = self.var_ / gaussian_clipped_variance(state["quantile"])
            scale = np.sqrt(self.var_)
            # As scikit-learn: a (privately) zero variance scales by 1.
            self.scale_ = np.where(scale < 1e-7 * half, 1.0, scale)
        else:
            self.var_ = self.scale_ = None
        self.bounds_ = (state["lower"].copy(), state["upper"].copy())
        self.bound_quantile_ = state["quantile"]
        self.n_samples_seen_ = state["n"]
        self.noise_stds_ = state["stds"]
        self.privacy_spent_ = state["spent"]

    def _probe_output(self, X) -> np.ndarray:
        """Zeros of the shape ``transform`` returns (a private search's dry run; public)."""
        return np.zeros(np.shape(X))

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Release the private means and variances of X (charges the budget).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Row weights in [0, max_weight].

        Returns
        -------
        self : DPStandardScaler
        """
        X = validate_private(self, X, dtype=np.float64)
        w = check_sample_weight(sample_weight, X.shape[0], self.max_weight)
        self.__dict__.pop("_state", None)
        state = self._start(X, w, weight_bound(sample_weight, self.max_weight))
        self._release(state, X, w)
        self._publish(state)
        state["failed"] = False  # the call completed (a warning raised as an error does not)
        self._state = state
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None, sample_weight=None):
        """Add new rows: release their sums and update the means and variances.

        The first call charges the budget and fixes the bounds; later calls
        release the sums of their own rows with the same noise and charge
        nothing more, which is private only if every row arrives once
        (parallel composition).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,) or None, default=None

        Returns
        -------
        self : DPStandardScaler
        """
        if is_dask(X):  # one release per partition, one partition in memory at a time
            return partial_fit_over_partitions(self.partial_fit, X,
                                               sample_weight=sample_weight)
        first = not self._stream_started()  # refuses a pickled, copied or forked scaler
        state = None if first else self._state
        X = validate_private(self, X, reset=first, dtype=np.float64)
        W = weight_bound(sample_weight, self.max_weight) if first else state["W"]
        w = check_stream_weights(sample_weight, X.shape[0], self.max_weight, W)
        if first:
            state = self._start(X, w, W)
        else:
            check_stream_continues(state)
            if self.with_std and state["stds"][1] is None:  # public: before any release
                raise ValueError("with_std=True needs the sums of squares, which this stream "
                                 "does not release (it started with with_std=False). Call "
                                 "fit to start a new stream.")
        self._release(state, X, w)
        self._publish(state)
        state["failed"] = False  # the call completed (a warning raised as an error does not)
        self._state = state
        return self

    def transform(self, X):
        """Center and scale with the private statistics (post-processing: no budget).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_features)
            A lazy Dask array for a Dask X.
        """
        check_is_fitted(self)
        if is_dask(X):  # lazily, partition by partition: the next step reads it there
            return dask_transform(self, X, self._scaled, self.n_features_in_)
        # Capped as fit caps its input, before and after: in a Pipeline the next private
        # step validates this output after this step's charge, and an overflow there
        # (a value near 1e308, or a tiny scale) would fail the fit only for tables that
        # hold such a row.
        X = _cap(validate_new_rows(self, X, reset=False, dtype=np.float64))
        return _cap(self._scaled(X))

    def _scaled(self, X):
        # A new array (never the caller's, which validation may pass through).
        X = X - self.mean_ if self.with_mean else np.array(X, dtype=np.float64)
        if self.with_std:
            X /= self.scale_
        return X

    def inverse_transform(self, X):
        """Undo :meth:`transform`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        X = float_rows(X)
        if self.with_std:
            X *= self.scale_
        if self.with_mean:
            X += self.mean_
        return X
