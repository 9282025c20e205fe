"""StreamingMomentEstimator: private first and second moments of a table or a stream."""

from __future__ import annotations

import math
from functools import partial
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator

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
from skdp.clipping import clip_rows, geometric_grid, private_norm_quantile
from skdp.mechanisms import (
    WORKLOADS,
    CorrelatedNoise,
    WorkloadStream,
    blt_parameters,
    blt_sensitivity_factor,
    gaussian_release,
    noise_shaping_matrix,
    record_release,
    spawn_rngs,
    toeplitz_sensitivity_factor,
)
from skdp.moments._cs import cs_noise_stds
from skdp.moments._ime import ime_noise_stds
from skdp.moments._jme import density_lambda, jme_noise_stds
from skdp.moments._pp import pp_second_moment_inputs
from skdp.moments._sums import moment_sums, second_moment_release
from skdp.utils._dask import is_dask, partial_fit_over_partitions
from skdp.utils._rows import sum_rows
from skdp.utils._sklearn import Interval, Options, StrOptions, _fit_context
from skdp.utils._validation import check_sample_weight, validate_private
from skdp.utils._warnings import warn

__all__ = ["StreamingMomentEstimator"]

METHODS = ("jme", "ime", "cs", "pp")
SHAPING_OPTIONS = ("identity", "blt", "sqrt", "nu")
_CHUNK_ENTRIES = 1 << 18  # per-row steps go in chunks of about this many second-moment entries
_DEFAULT_HORIZON = 10_000  # the stream length 'blt' noise is tuned for when n_steps is None

#: Shared documentation of the bound parameters (PrivateGaussianDensity, DPStandardScaler, DPPCA).
BOUND_DOC = """norm_bound : float or None, default=None
    zeta, in [1e-100, 1e100]: rows longer than this (in L2) are scaled down
    to it. It sets every noise scale (the second moment's as ``zeta**2``), so declare it when you
    know it from the data's documentation; None spends ``bound_share`` of the
    budget on a private ``bound_quantile`` of the row norms (a noisy binary
    search over a geometric grid, :func:`~skdp.clipping.private_norm_quantile`)
    and clips there. ``norm_bound_`` is the value used.
bound_quantile : float, default=0.99
    Share of the rows the private bound aims to keep unclipped (lowered
    automatically on small tables, where the counts' noise would make a high
    quantile unreliable; a ValueError asks you to declare the bound when
    fewer than about ``6 * sqrt(10) / (mu sqrt(bound_share))`` rows are
    given).
bound_share : float, default=0.05
    Share of the budget's ``mu**2`` spent on the private bound when
    ``norm_bound`` is None (in (0, 1)); the release gets the rest. At the
    default it costs the release 2.5%% of its mu."""


_DOC = """Private first and second moments of a table, or of a stream released step by step.

**A table** (``fit``, the default ``release='once'``): one Gaussian mechanism
releases the table's moments ``Y = sum_i a_i x_i`` and
``S = sum_i b_i x_i x_i^T`` for a workload (running sum, average,
exponentially weighted sum, sliding window) over the rows in order, then
post-processing (symmetrised second moment). **A stream** (``partial_fit``):
every call is one step whose rows are summed; after each call the current
workload of the steps so far is released, with correlated noise
(matrix-factorization mechanism) that is near-optimal for running sums and
costs O(buffers * d**2) per step whatever the stream's length.

Four methods (Kalinin et al. 2025) set how the two moments share the budget:

- ``'jme'``: joint moment estimation (Algorithm 1). Both moments are
  privatised with one joint sensitivity (Lemma 3.5); with ``lam=None`` the
  second moment is *free*: the first moment gets exactly the noise it would
  get alone. A number ``lam`` is lambda-JME (Algorithm 3), trading accuracy
  between the moments.
- ``'ime'``: independent moment estimation (Algorithm 4), the budget split
  between the moments (``budget_split`` of ``mu**2`` to the first).
- ``'cs'``: concatenate-and-split (Algorithm 5), the second moment scaled by
  ``sqrt(tau)`` and privatised in one vector with the first (with the exact
  sensitivity it is lambda-JME with ``lam = tau``).
- ``'pp'``: post-processing (Algorithm 6): only the rows are privatised and
  the second moment is built from the noisy rows; ``debias=True`` removes
  the exact bias. It needs noisy rows, so every row is its own step (stream
  or ``release='per_row'``).

Parameters
----------
%(epsilon)s
%(delta)s
method : {'jme', 'ime', 'cs', 'pp'}, default='jme'
lam : float, 'density' or None, default=None
    'jme' only: weight lambda of the second moment. None is the
    privacy-for-free choice of Algorithm 1 (the first moment is as accurate
    as if released alone). 'density' is the weight that minimises the
    expected log-likelihood loss of a Gaussian fitted from the two moments
    (see :func:`~skdp.moments.density_lambda`); what
    :class:`~skdp.density.PrivateGaussianDensity` uses.
budget_split : float, default=0.5
    'ime' only: share of ``mu**2`` spent on the first moment, in (0, 1).
tau : float, default=1.0
    'cs' only: rescaling of the second moment, > 0.
debias : bool, default=True
    'pp' only: subtract the known bias ``v_k I`` of every squared noisy row
    (v_k the noise variance of row k), so that the second moment is unbiased.
workload : {'prefix', 'average', 'exponential', 'window'}, default='prefix'
    The first moment's workload over the steps (Kalinin et al. 2025, Table 1;
    for ``release='once'`` the rows of the table are the steps): running sum
    of the rows, running mean of the rows (sum over the rows seen so far),
    exponentially weighted sum ``sum_s beta**(t - s) X_s``, or mean of the
    rows in the last ``window`` steps.
second_workload : {'prefix', 'average', 'exponential', 'window'} or None, default=None
    The second moment's workload; None means the same as ``workload``.
beta : float or None, default=None
    Decay in (0, 1] of the 'exponential' workload(s).
window : int or None, default=None
    Length k (in steps) of the 'window' workload(s).
noise_shaping : {'blt', 'identity', 'sqrt', 'nu'} or array-like, default='blt'
    The matrix C of the matrix mechanism for streams (noise ``C^{-1} Z``;
    ignored by ``release='once'``). 'blt' (the default) is a
    buffered-linear-Toeplitz approximation of the damped square root of the
    prefix-sum matrix (Dvijotham et al. 2024): within a few percent of the
    exact square root's error for streams of about ``n_steps`` steps, O(20
    buffers * d**2) memory and time per step, no limit on the length.
    'identity' is independent noise; 'sqrt' and 'nu' are the exact square
    root and its nu-damped version (Choquette-Choo et al. 2024), which keep
    every past noise draw (O(t d**2) memory and time per step); an array is
    your own lower-triangular invertible C (its size is the horizon).
nu : float or None, default=None
    Damping in [0, 1) for 'nu', and in [1e-15, 1) for 'blt' (overrides the
    tuning from ``n_steps``); values in (0, 1e-15) are refused (BLT's
    calibration rounds to NaN there).
n_steps : int or None, default=None
    The stream's expected length in steps. 'blt' is tuned for it (damping
    ``nu = 1 / n_steps`` for running sums and averages, ``1 - beta`` for an
    exponential workload, ``1 / window`` for a window; None means 10,000
    steps); it stays private beyond, with slowly growing error. 'sqrt' needs
    it as a hard horizon (its sensitivity grows with it); for 'nu' it is an
    optional horizon. ``fit`` with ``release='per_row'`` uses the number of
    rows when it is None.
%(bound)s
release : {'once', 'per_row'}, default='once'
    What ``fit`` releases: the table's statistics once, or a continual
    release after every row (each row one step of the stream, as
    ``partial_fit`` one row at a time would give). ``partial_fit`` always
    releases once per call.
diagonal_only : bool, default=False
    Estimate only the diagonal of the second moment (Theorem 4.3: the same
    sensitivity, d instead of d**2 numbers per step).
store_history : bool, default=False
    Keep every release in ``first_moments_`` / ``second_moments_`` (memory
    grows with the steps). By default only the current release is kept, so
    a fitted estimator's size does not depend on the number of rows or
    steps.
callback : callable or None, default=None
    Called as ``callback(step, first_moment, second_moment)`` after each
    release (each step of a stream, each row of ``release='per_row'``): a way
    to keep or publish the history without storing it here. It runs once
    the call's steps are taken and the attributes set: if it raises, the
    rows are in the stream all the same (``n_samples_seen_`` counts them),
    and feeding them again would use them twice, outside the guarantee.
%(max_weight)s
%(accountant)s
%(random_state)s

Attributes
----------
first_moment_ : ndarray of shape (n_features,)
    The current (last) release of Y.
second_moment_ : ndarray of shape (n_features, n_features) or (n_features,)
    The current release of S, symmetric (its diagonal when ``diagonal_only``).
    Raw: unbiased, but its noise can make it (and ``S - Y Y^T``) indefinite;
    :meth:`covariance` gives a debiased covariance that rows inside the
    bound can have.
first_moments_, second_moments_ : ndarray
    Every release so far, one row per step; only with ``store_history=True``.
n_steps_seen_ : int
    Releases so far (1 after ``fit`` with ``release='once'``).
n_samples_seen_ : int
    Rows so far.
norm_bound_ : float
    The bound the rows were clipped to (declared or private).
noise_stds_ : tuple of float
    ``(std1, std2)``: the noise ``std1 [C1^{-1} Z1]_t`` is added to the
    step's first-moment sum and ``std2 [C2^{-1} Z2]_t`` (symmetrised) to its
    second-moment sum (std2 is None for 'pp').
lam_ : float or None
    The lambda used by 'jme'.
privacy_spent_ : PrivacySpent
    The whole guarantee, the private bound included.
n_features_in_ : int
feature_names_in_ : ndarray of shape (n_features,)

Notes
-----
**Guarantee.** Neighbouring tables (or streams) differ in one row replaced
by another; the number of rows, and in a stream the number of rows of each
call, are public. A row sits in one step. 'jme' and 'cs' are one Gaussian
mechanism on the pair of moment streams (joint sensitivity: Lemma 3.5,
maximised over the columns of C1 and C2, hence valid for any noise
shaping, and over the per-row weights of a table's workload), 'ime' two
mechanisms whose GDP budgets compose exactly, 'pp' one mechanism on the rows
followed by post-processing. With ``norm_bound=None`` the private bound
(``bound_share`` of ``mu**2``) composes with the release exactly; in a
stream it is computed on the first call's rows. With sample weights every
sensitivity is ``max_weight`` times the unweighted one (a weighted row lies
in the convex hull of unweighted rows and 0). All releases together are
(epsilon, delta)-DP. ``partial_fit`` continues the stream without further
charges; ``fit`` starts (and pays for) a new table or stream. A
``partial_fit`` after a one-release ``fit`` (``release='once'``) has no
stream to continue: it starts one, charged anew, and warns.

**Secret state.** A stream's estimator holds its noise generator and noise
buffers (``_state``), with which the noise of the releases could be
subtracted: publish the release attributes, not the live object. Pickles
and copies leave that state out (they cannot continue the stream).

**Departures from Kalinin et al. (2025)**: steps are calls of any number of
rows, not single rows; noise is calibrated exactly (GDP) and IME splits
``mu**2`` rather than (epsilon, delta); the joint sensitivity is maximised
over columns (the paper assumes decreasing column norms); CS uses the exact
sensitivity of the concatenated row; PP subtracts each row's own noise
variance (see :func:`~skdp.moments.pp_second_moment_inputs`); the second
moment's noise is symmetrised (post-processing of the paper's release).

References
----------
Kalinin, Upadhyay & Lampert (2025). Continual Release Moment Estimation
with Differential Privacy. Dvijotham, McMahan, Pillutla, Steinke & Thakurta
(2024). Efficient and Near-Optimal Noise Generation for Streaming
Differential Privacy.

Examples
--------
>>> import numpy as np
>>> from skdp.moments import StreamingMomentEstimator
>>> X = np.random.default_rng(0).normal(size=(100_000, 3))
>>> est = StreamingMomentEstimator(epsilon=1.0, norm_bound=4.0, random_state=0).fit(X)
>>> est.noise_stds_  # privacy for free: std1 = 2 * norm_bound / mu, on the sums
(33.79..., 191.18...)
>>> S = est.second_moment_ / 100_000  # noise sd 0.002, sampling sd 0.005
>>> bool(np.abs(S - np.eye(3)).max() < 0.03)
True
>>> stream = StreamingMomentEstimator(epsilon=1.0, workload="average", norm_bound=4.0,
...                                   random_state=0)
>>> for block in np.array_split(X, 100):      # 100 releases, one per call
...     stream = stream.partial_fit(block)
>>> stream.n_steps_seen_, stream.first_moment_.shape
(100, (3,))
"""


class StreamingMomentEstimator(StreamStateMixin, DPEstimatorMixin, BaseEstimator):
    __doc__ = _DOC % {**PRIVACY_PARAMS_DOC, "bound": BOUND_DOC}
    _accepts_dask = True  # fit reads Dask collections partition by partition

    #: Read at every release, not fixed by the stream.
    _LIVE_PARAMS = ("store_history", "callback")

    _parameter_constraints: dict = {
        **DPEstimatorMixin._parameter_constraints,
        "method": [StrOptions(set(METHODS))],
        "lam": [Interval(Real, 0, None, closed="neither"), StrOptions({"density"}), None],
        "budget_split": [Interval(Real, 0, 1, closed="neither")],
        "tau": [Interval(Real, 0, None, closed="neither")],
        "debias": ["boolean"],
        "workload": [StrOptions(set(WORKLOADS))],
        "second_workload": [StrOptions(set(WORKLOADS)), None],
        "beta": [Interval(Real, 0, 1, closed="right"), None],
        "window": [Interval(Integral, 1, None, closed="left"), None],
        "noise_shaping": [StrOptions(set(SHAPING_OPTIONS)), "array-like"],
        "nu": [Interval(Real, 1e-15, 1, closed="left"), Options(Real, {0.0}), None],
        "n_steps": [Interval(Integral, 1, None, closed="left"), None],
        "norm_bound": [Interval(Real, 1e-100, 1e100, closed="both"), None],
        "bound_quantile": [Interval(Real, 0.5, 1, closed="neither")],
        "bound_share": [Interval(Real, 0, 1, closed="neither")],
        "release": [StrOptions({"once", "per_row"})],
        "diagonal_only": ["boolean"],
        "store_history": ["boolean"],
        "callback": [callable, None],
        "max_weight": [Interval(Real, 0, MAX_WEIGHT, closed="right")],
    }

    def __init__(self, *, epsilon=1.0, delta=1e-6, method="jme", lam=None, budget_split=0.5,
                 tau=1.0, debias=True, workload="prefix", second_workload=None, beta=None,
                 window=None, noise_shaping="blt", nu=None, n_steps=None, norm_bound=None,
                 bound_quantile=0.99, bound_share=0.05, release="once", diagonal_only=False,
                 store_history=False, callback=None, max_weight=1.0, accountant=None,
                 random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.method = method
        self.lam = lam
        self.budget_split = budget_split
        self.tau = tau
        self.debias = debias
        self.workload = workload
        self.second_workload = second_workload
        self.beta = beta
        self.window = window
        self.noise_shaping = noise_shaping
        self.nu = nu
        self.n_steps = n_steps
        self.norm_bound = norm_bound
        self.bound_quantile = bound_quantile
        self.bound_share = bound_share
        self.release = release
        self.diagonal_only = diagonal_only
        self.store_history = store_history
        self.callback = callback
        self.max_weight = max_weight
        self.accountant = accountant
        self.random_state = random_state

    # -- calibration: public constants only --------------------------------------

    def _kinds(self) -> tuple[str, str]:
        kind1, kind2 = self.workload, self.second_workload or self.workload
        for kind in (kind1, kind2):  # fail early on a missing beta / window
            WorkloadStream(kind, beta=self.beta, k=self.window)
        for param, kind in (("beta", "exponential"), ("window", "window")):
            if getattr(self, param) is not None and kind not in (kind1, kind2):
                warn(f"{param}={getattr(self, param)!r} is ignored: it applies to the "
                     f"'{kind}' workload only, and the workloads are "
                     f"{sorted({kind1, kind2})}.", UserWarning)
        return kind1, kind2

    def _noise_stds(self, mu: float, d: int, zeta: float, norms1, norms2):
        """(std1, std2, lam) of the method for column (or row-weight) norms of the two moments."""
        if self.method == "jme":
            lam = self.lam
            if isinstance(lam, str):  # 'density'
                lam = density_lambda(d, zeta)
            return jme_noise_stds(mu, d, zeta, norms1, norms2, lam)
        if self.method == "ime":
            return (*ime_noise_stds(mu, zeta, np.max(norms1), np.max(norms2), self.budget_split),
                    None)
        if self.method == "cs":
            if not np.allclose(norms1, norms2):
                raise ValueError("method='cs' privatises both moments with one noise-shaping "
                                 "matrix and one workload weight per row; these differ.")
            # Nearly equal may still differ in the last digits: the larger bounds both.
            factor = max(float(np.max(norms1)), float(np.max(norms2)))
            return (*cs_noise_stds(mu, zeta, factor, self.tau, d), None)
        return 2.0 * zeta * float(np.max(norms1)) / mu, None, None

    def _calibrate(self, mu: float, d: int, zeta: float, W: float, norms1, norms2,
                   total: bool):
        """(gamma, std1, std2, lam) of a table's release at norm bound zeta (public inputs).

        ``total``: the release carries the total weight (a mean over weighted rows).
        """
        gamma = 0.25 * zeta if total else 0.0
        zeta_cal, d_cal = math.hypot(zeta, gamma), d + int(gamma > 0)
        return (gamma, *self._noise_stds(mu, d_cal, zeta_cal, W * norms1, W * norms2))

    def _bound(self, X, sample_weight, W: float, mu: float, rng) -> tuple[float, float]:
        """(norm bound, mu left for the release): declared, or a private quantile of the norms.

        W bounds a row's weight (1 without weights).
        """
        if self.norm_bound is not None:
            return float(self.norm_bound), mu
        mu_bound = mu * math.sqrt(self.bound_share)
        zeta = private_norm_quantile(X, self.bound_quantile, mu=mu_bound, rng=rng,
                                     sample_weight=sample_weight, max_weight=W)
        return zeta, mu * math.sqrt(1.0 - self.bound_share)

    def _check_bound_rows(self, n: int, mu: float, W: float) -> None:
        """Raise before charging when a private bound cannot be found on n rows."""
        if self.norm_bound is None:
            from skdp.clipping import effective_quantile, search_noise_std

            std = search_noise_std(geometric_grid().shape[0], 1, mu * math.sqrt(self.bound_share),
                                   W)
            effective_quantile(self.bound_quantile, n, std, parameter="norm_bound")

    # -- a table: one release -------------------------------------------------------

    def _release_once(self, X, sample_weight) -> None:
        if self.method == "pp":
            raise ValueError("method='pp' builds the second moment from noisy rows, so it needs "
                             "every row as its own step: use release='per_row', partial_fit, "
                             "or method='jme' for one release of the table.")
        n, d = X.shape
        kind1, kind2 = self._kinds()
        row1, norm1 = _row_weights(kind1, n, self.beta, self.window, like=X)
        row2, norm2 = _row_weights(kind2, n, self.beta, self.window, like=X)
        weighted = sample_weight is not None
        means1 = kind1 in ("average", "window")
        if weighted and kind2 in ("average", "window") and kind2 != kind1:
            raise ValueError("With sample_weight, a mean ('average' or 'window') divides by the "
                             "private total weight: use the same workload for both moments.")
        mu = self._budget_mu()
        W = weight_bound(sample_weight, self.max_weight)
        self._check_bound_rows(n, mu, W)
        if kind1 == kind2:  # every row's pair is (a_i, a_i), largest at a_i = 1
            norms1 = norms2 = np.ones(1)
        else:  # the joint sensitivity maximises over every row's pair
            norms1 = _row_weights(kind1, n, self.beta, self.window, dense=True)[0]
            norms2 = _row_weights(kind2, n, self.beta, self.window, dense=True)[0]
        # Calibrate before the charge, so that an invalid configuration fails before
        # anything is spent: on the declared bound, or on both ends of the grid a
        # private bound is chosen from (the calibration is monotone in the bound).
        if self.norm_bound is not None:
            trial = [(float(self.norm_bound), mu)]
        else:
            grid = geometric_grid()
            trial = [(float(z), mu * math.sqrt(1.0 - self.bound_share)) for z in grid[[0, -1]]]
        for zeta, mu_release in trial:
            self._calibrate(mu_release, d, zeta, W, norms1, norms2, means1 and weighted)
        spent, rng = self._charge(mu)  # before any noise is drawn
        zeta, mu_release = self._bound(X, sample_weight, W, mu, rng)
        # A mean divides by the total weight of its rows, which is private
        # with sample weights: it is released in the same mechanism, as a
        # constant extra coordinate gamma of every row. Calibrating for rows
        # of norm sqrt(zeta**2 + gamma**2) in d + 1 dimensions bounds the
        # augmented sensitivity (the second moment of the first d coordinates
        # is a block of the full one). Without weights (none passed: public)
        # the total is the public row count, and nothing more is released.
        gamma, std1, std2, lam = self._calibrate(mu_release, d, zeta, W, norms1, norms2,
                                                 means1 and weighted)
        w1, w2 = _times(row1, sample_weight), _times(row2, sample_weight)
        if w2 is None and w1 is not None:  # moment_sums reads None as "as weights1"
            w2 = np.ones_like(w1)
        first, second, total = sum_rows(
            partial(moment_sums, norm_bound=zeta, diagonal_only=self.diagonal_only), X, w1, w2)
        # One joint mechanism, mu_release-GDP by its calibration: its
        # sensitivity (in units of std1) is recorded with the first block.
        # In secure mode its blocks share the grid's rounding allowance.
        joint = dict(mechanism_mu=mu_release, share=1.0 / math.sqrt(3.0 if gamma else 2.0))
        first = gaussian_release(first, std1, rng, name="moments (joint release)",
                                 sensitivity=mu_release * std1, weight=W, **joint)
        second = second_moment_release(second, std2, rng, diagonal_only=self.diagonal_only,
                                       **joint)
        if gamma:  # the total weight, with noise std1 / gamma (same mechanism)
            norm1 = _noisy_total(
                float(gaussian_release(float(total), std1 / gamma, rng, name="total weight",
                                       **joint)),
                std1 / gamma, n * W)
            first = first / norm1
            if kind2 == kind1:
                norm2 = norm1
        elif means1:  # every row weighs 1: the public count of the workload's rows
            first = first / norm1
        if kind2 in ("average", "window"):
            second = second / norm2
        count1 = norm1 if means1 else 1.0
        count2 = norm2 if kind2 in ("average", "window") else 1.0
        mean_var, second_std = (std1 / count1) ** 2, std2 / count2
        if gamma:
            # A mean over the noisy total T also carries its relative noise: to first
            # order the error is (e - m e_T) / T with e_T of std std1 / gamma, so each
            # entry's variance grows by m_j**2 (std1 / gamma / T)**2 (averaged over j:
            # one scalar per release), and a second moment divided by T by its diagonal
            # entries times the same relative noise (post-processing of the releases).
            relative = (std1 / gamma / norm1) ** 2
            mean_var += float(np.mean(first**2)) * relative
            if kind2 == kind1:
                diag = np.diag(second) if second.ndim == 2 else second
                second_std = math.sqrt(second_std**2 + float(np.mean(diag**2)) * relative)
        self._publish(dict(d=d, zeta=zeta, std1=std1, std2=std2, lam=lam, spent=spent, t=1,
                           kinds=(kind1, kind2), rows=n, mean_noise_var=mean_var,
                           second_noise_std=second_std), [first], [second], stream=None)

    # -- a stream -------------------------------------------------------------------

    def _shaping(self, kind: str, horizon: int | None):
        """(CorrelatedNoise kind, nu, column-norm factor) for a moment whose workload is ``kind``."""
        shaping = self.noise_shaping
        if not isinstance(shaping, str):
            C = noise_shaping_matrix(shaping)
            if horizon is not None and horizon > C.shape[0]:
                raise ValueError(f"n_steps={horizon} exceeds the size {C.shape[0]} of the "
                                 "noise-shaping matrix.")
            return C, None, float(np.sqrt(np.max(np.sum(C * C, axis=0))))
        if shaping == "identity":
            return "identity", None, 1.0
        if shaping == "blt":
            nu = self.nu
            if nu is None:
                length = horizon or _DEFAULT_HORIZON
                nu = {"exponential": 1.0 - (self.beta or 1.0),
                      "window": 1.0 / (self.window or length)}.get(kind, 0.0)
                nu = min(max(nu, 1.0 / length), 0.5)
            return "blt", nu, blt_sensitivity_factor(*blt_parameters(nu))
        if shaping == "sqrt" and horizon is None:
            raise ValueError("noise_shaping='sqrt' needs the horizon n_steps (its sensitivity "
                             "grows with it); 'blt' needs none.")
        if shaping == "nu" and self.nu is None:
            raise ValueError("noise_shaping='nu' needs nu in [0, 1).")
        nu = 0.0 if shaping == "sqrt" else float(self.nu)
        if nu == 0.0 and horizon is None:
            raise ValueError("noise_shaping='nu' with nu=0 needs the horizon n_steps.")
        return shaping, nu, toeplitz_sensitivity_factor(nu, horizon)

    def _stream_horizon(self, horizon: int | None) -> int | None:
        """The horizon a new stream gets: ``n_steps``, else a user matrix's size, else ``horizon``.

        A user's noise-shaping matrix bounds the steps by its size even
        without ``n_steps``: the stream's checks before each call (and before
        the partitions of a Dask table) must know it, or a call that outgrows
        the matrix would fail after some of its rows were released.
        """
        if self.n_steps is not None:
            return int(self.n_steps)
        if not isinstance(self.noise_shaping, str):
            return noise_shaping_matrix(self.noise_shaping).shape[0]
        if self.noise_shaping == "nu" and self.nu:
            return None  # damped: finite over an unbounded stream, no horizon unless asked
        return horizon

    def _hard_horizon(self) -> bool:
        """Whether the noise shaping bounds the steps ('blt' and 'identity' run unbounded)."""
        return not (isinstance(self.noise_shaping, str)
                    and self.noise_shaping in ("blt", "identity"))

    def _check_call_sizes(self, sizes: list) -> None:
        """Raise, before any release, if calls of ``sizes[i]`` rows would outgrow the horizon.

        For ``partial_fit`` over Dask partitions (one call, one step each, or
        one step per row with method='pp'): the sizes are public (the layout),
        and a partition past the horizon must fail before the first one is
        released, not after (a retry would release the earlier ones twice).
        """
        state = getattr(self, "_state", None)
        started = self._stream_started() and isinstance(state, dict)
        horizon = state["horizon"] if started else (
            self._stream_horizon(None) if self._hard_horizon() else None)
        if horizon is None:
            return
        # partial_fit takes one step per call (also after fit(release='per_row')), one
        # per row with method='pp'.
        one_per_row = (state["method"] if started else self.method) == "pp"
        steps = (state["t"] if started else 0) + sum(
            int(m) if one_per_row else 1 for m in sizes)
        if steps > horizon:
            raise ValueError(f"The stream's horizon is n_steps={horizon} steps; these "
                             f"{len(sizes)} partitions would take it to {steps}. Nothing was "
                             "released: set n_steps (or a larger noise-shaping matrix) before "
                             "the first call, or pass fewer rows.")

    def _start_stream(self, X, horizon: int | None, per_row: bool) -> dict:
        """Validate, calibrate, charge, and create the noise and workload state of a stream."""
        n_first, d = X.shape
        kind1, kind2 = self._kinds()
        horizon = self._stream_horizon(horizon)
        hard = self._hard_horizon()
        steps_now = n_first if (per_row or self.method == "pp") else 1
        if hard and horizon is not None and steps_now > horizon:
            raise ValueError(f"The stream's horizon is n_steps={horizon} steps; {steps_now} "
                             "would exceed it.")
        shape1, nu1, a = self._shaping(kind1, horizon)
        shape2, nu2, b = self._shaping(kind2, horizon)
        mu = self._budget_mu()
        self._check_bound_rows(n_first, mu, 1.0)  # a stream has no weights
        self._noise_stds(mu, d, 1.0, [a], [b])  # fails early on a bad configuration
        spent, rng = self._charge(mu)  # before any noise is drawn
        rng_bound, rng1, rng2 = spawn_rngs(rng, 3)
        zeta, mu_stream = self._bound(X, None, 1.0, mu, rng_bound)
        std1, std2, lam = self._noise_stds(mu_stream, d, zeta, [a], [b])
        # The whole stream is one (correlated) Gaussian mechanism, mu_stream-GDP
        # by its calibration; its steps' draws are recorded with sensitivity 0.
        record_release("moment stream (correlated noise)", mu_stream * std1, std1)
        row2 = (d,) if self.diagonal_only else (d, d)
        return dict(
            secure=is_secure_mode(),
            d=d, zeta=zeta, std1=std1, std2=std2, lam=lam, spent=spent, t=0, rows=0,
            # Secure mode: the stream's mu, and each noise stream's share of its grid.
            grid=dict(mechanism_mu=mu_stream, share=math.sqrt(0.5) if std2 is not None else 1.0),
            horizon=horizon if hard else None, method=self.method, debias=self.debias,
            per_row=per_row,
            diagonal_only=self.diagonal_only, kinds=(kind1, kind2),
            noise1=CorrelatedNoise(shape1, d, rng1, nu=nu1),
            noise2=None if std2 is None else CorrelatedNoise(shape2, row2, rng2, nu=nu2),
            work1=_StepWorkload(kind1, self.beta, self.window),
            work2=_StepWorkload(kind2, self.beta, self.window),
        )

    @staticmethod
    def _advance(state: dict, X: np.ndarray, per_row: bool):
        """Privatise X as the next step (or one step per row); return the steps' releases."""
        m, d = X.shape
        if per_row or state["method"] == "pp":
            return StreamingMomentEstimator._advance_rows(state, X)
        t0 = state["t"]
        if state["horizon"] is not None and t0 + 1 > state["horizon"]:
            raise ValueError(f"The stream's horizon is n_steps={state['horizon']} steps; "
                             "this call would exceed it.")
        first, second, _ = moment_sums(X, norm_bound=state["zeta"],
                                       diagonal_only=state["diagonal_only"])
        begin_draws(state)  # cleared below, if this call completes
        first = state["noise1"].release(first[None], state["std1"], **state["grid"])[0]
        second = state["noise2"].release(second[None], state["std2"], **state["grid"])[0]
        if not state["diagonal_only"]:  # symmetrise the release (post-processing)
            second = 0.5 * (second + second.T)
        counts = np.array([float(m)])
        Y = state["work1"].update(first[None], counts)
        S = state["work2"].update(second[None], counts)
        state["t"], state["rows"], state["failed"] = t0 + 1, state["rows"] + m, False
        return Y, S

    @staticmethod
    def _advance_rows(state: dict, X: np.ndarray):
        """Every row its own step (release='per_row', and 'pp' which needs noisy rows)."""
        m, d = X.shape
        t0 = state["t"]
        if state["horizon"] is not None and t0 + m > state["horizon"]:
            raise ValueError(f"The stream's horizon is n_steps={state['horizon']} steps; "
                             f"{t0 + m} would exceed it.")
        X = clip_rows(X, state["zeta"])
        begin_draws(state)  # cleared below, if this call completes
        diag = state["diagonal_only"]
        keep = state["keep"]  # the estimator's live store_history / callback
        Ys, Ss = [], []
        step = max(1, _CHUNK_ENTRIES // (d * d))
        ones = np.ones(m)
        for a in range(0, m, step):
            b = min(m, a + step)
            x_hat = state["noise1"].release(X[a:b], state["std1"], **state["grid"])
            if state["method"] == "pp":
                var = None
                if state["debias"]:
                    var = state["std1"] ** 2 * state["noise1"].step_variances(t0 + a, t0 + b)
                second = pp_second_moment_inputs(x_hat, var, diagonal_only=diag)
            else:
                exact = X[a:b] ** 2 if diag else np.einsum("ti,tj->tij", X[a:b], X[a:b])
                second = state["noise2"].release(exact, state["std2"], **state["grid"])
                if not diag:  # symmetrise the release (post-processing)
                    second = 0.5 * (second + np.swapaxes(second, 1, 2))
            Y = state["work1"].update(x_hat, ones[a:b])
            S = state["work2"].update(second, ones[a:b])
            if keep:
                Ys.append(Y)
                Ss.append(S)
            else:
                Ys, Ss = [Y[-1:]], [S[-1:]]
        state["t"], state["rows"], state["failed"] = t0 + m, state["rows"] + m, False
        return np.concatenate(Ys), np.concatenate(Ss)

    def _publish(self, state: dict, Y, S, stream) -> None:
        """Set the release attributes (and the history), then call the callback, after the steps.

        The attributes come first: the steps are taken and their rows are in
        the stream whatever the callback does, so a callback that raises
        leaves ``n_samples_seen_`` counting them (feeding them again would
        use them twice).
        """
        Y, S = np.asarray(Y), np.asarray(S)
        t = state["t"]
        if self.store_history:
            old = getattr(self, "first_moments_", None) if stream is not None and t > Y.shape[0] \
                else None
            self.first_moments_ = Y if old is None else np.concatenate([old, Y])
            self.second_moments_ = S if old is None else np.concatenate([self.second_moments_, S])
        else:
            for name in ("first_moments_", "second_moments_"):
                self.__dict__.pop(name, None)
        self.first_moment_, self.second_moment_ = Y[-1].copy(), S[-1].copy()
        self.n_steps_seen_, self.n_samples_seen_ = t, state["rows"]
        self.norm_bound_ = state["zeta"]
        self.noise_stds_ = (state["std1"], state["std2"])
        self.lam_ = state["lam"]
        self.privacy_spent_ = state["spent"]
        # Public noise scales of a table release (the density's debiasing and floor).
        self._release_info = {"mean_noise_var": state.get("mean_noise_var"),
                              "second_noise_std": state.get("second_noise_std"),
                              "kinds": state["kinds"], "per_row": state.get("per_row", False),
                              "diagonal_only": state["diagonal_only"]
                              if "diagonal_only" in state else self.diagonal_only}
        if stream is None:
            self.__dict__.pop("_state", None)  # a table release: no stream to continue
        else:
            self._state = stream
        if self.callback is not None:
            for i in range(Y.shape[0]):
                self.callback(t - Y.shape[0] + i + 1, Y[i], S[i])

    # -- the sklearn API ---------------------------------------------------------------

    def covariance(self, feasible: bool = True) -> np.ndarray:
        """The covariance ``S - m m^T`` of the current release (post-processing: no budget).

        Parameters
        ----------
        feasible : bool, default=True
            Debias (add back the known noise variance of the mean, whose
            square ``m m^T`` carries it) and project onto the covariances
            that rows inside ``norm_bound_`` can have: eigenvalues in
            ``[0, zeta**2]`` and trace at most ``zeta**2`` (the Euclidean
            projection that :class:`~skdp.density.PrivateGaussianDensity`
            uses, without its eigenvalue floor). False: the raw
            ``second_moment_ - outer(first_moment_, first_moment_)``, which
            noise can make indefinite.

        Returns
        -------
        ndarray of shape (n_features, n_features)

        Raises
        ------
        ValueError
            Unless both moments are means (workloads 'average' or 'window')
            of full second moments (not ``diagonal_only``).

        Examples
        --------
        >>> import numpy as np
        >>> from skdp.moments import StreamingMomentEstimator
        >>> X = np.random.default_rng(0).normal(size=(1000, 3)) * 0.5
        >>> est = StreamingMomentEstimator(workload="average", norm_bound=4.0,
        ...                                random_state=0).fit(X)
        >>> bool(np.all(np.linalg.eigvalsh(est.covariance()) >= 0))
        True
        """
        from skdp.density._gaussian import (
            PrivateGaussianDensity,
            private_covariances,
            project_covariances,
        )

        if not hasattr(self, "first_moment_"):
            raise AttributeError("This StreamingMomentEstimator is not fitted yet.")
        info = self._release_info
        if any(k not in ("average", "window") for k in info["kinds"]) or info["diagonal_only"]:
            raise ValueError("covariance() needs both moments as means (workload 'average' or "
                             "'window') and the full second moment (diagonal_only=False).")
        means, seconds = self.first_moment_[None], self.second_moment_[None]
        if not feasible:
            return private_covariances(means, seconds)[0]
        if getattr(self, "_state", None) is None and info["mean_noise_var"] is None:
            raise RuntimeError("The noise state of this stream was dropped (a pickle or copy): "
                               "its debiasing constants are gone; use feasible=False.")
        t = self.n_steps_seen_
        mean_var, _ = PrivateGaussianDensity._noise_scales(self, t - 1, t, info["per_row"])
        zeta2 = self.norm_bound_**2
        return project_covariances(private_covariances(means, seconds, mean_var), 0.0, zeta2,
                                   zeta2)[0]

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Release the moments of the table X (``release='once'``) or stream its rows.

        Charges the budget once; starts afresh (a previous stream ends).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Row weights in [0, max_weight] (``release='once'`` only). A mean
            ('average' or 'window') over weighted rows divides by their total
            weight, released in the same mechanism (a little more noise);
            without weights it divides by the public count of rows.

        Returns
        -------
        self : StreamingMomentEstimator
        """
        X = validate_private(self, X, dtype=np.float64)
        sample_weight = check_sample_weight(sample_weight, X.shape[0], self.max_weight)
        self.__dict__.pop("_state", None)
        if self.release == "once":
            self._release_once(X, sample_weight)
            return self
        if sample_weight is not None:
            raise ValueError("sample_weight is supported by release='once' only.")
        state = self._start_stream(X, X.shape[0], per_row=True)
        state["keep"] = self.store_history or self.callback is not None  # read live
        Y, S = self._advance(state, X, per_row=True)
        self._publish(state, Y, S, stream=state)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None):
        """Add one step to the stream: the rows of X, summed; release the workload after it.

        The first call starts the stream, fixes the calibration (later
        parameter changes are ignored until the next ``fit``, and a warning
        names them) and charges the
        budget; with ``norm_bound=None`` it also finds the private bound on
        its rows. Every row must be new: a row fed twice is not covered by the
        guarantee. With method='pp' each row is its own step.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        self : StreamingMomentEstimator
        """
        if is_dask(X):  # one step per partition, one partition in memory at a time
            return partial_fit_over_partitions(self.partial_fit, X)
        first = not self._stream_started()
        if first and hasattr(self, "first_moment_"):
            warn_new_stream(self)
        X = validate_private(self, X, reset=first, dtype=np.float64)
        if not first:
            check_stream_continues(self._state)
        state = self._start_stream(X, None, per_row=False) if first else self._state
        state["keep"] = self.store_history or self.callback is not None  # read live
        Y, S = self._advance(state, X, per_row=False)
        self._publish(state, Y, S, stream=state)
        return self


def _row_weights(kind: str, n: int, beta, window, like=None, dense: bool = False):
    """Per-row weights of a workload's last row over n rows (None: all ones), and its normaliser.

    The weights are public constants; for a Dask table they are built lazily
    with its partitions (no n-long array in the driver).
    """
    if kind in ("prefix", "average"):
        weights = np.ones(n) if dense else None
        return weights, (float(n) if kind == "average" else 1.0)
    if like is not None and is_dask(like):
        import dask.array as da

        index = da.arange(n, chunks=like.chunks[0], dtype=float)
    else:
        index = np.arange(n, dtype=float)
    if kind == "exponential":
        return beta ** (n - 1 - index), 1.0
    k = min(int(window), n)
    return (index >= n - k).astype(float), float(k)


def _times(a, b):
    """Product of optional per-row weights (None means ones)."""
    if a is None:
        return b
    return a if b is None else a * b


def warn_new_stream(estimator) -> None:
    """Warn that ``partial_fit`` after a one-release ``fit`` starts (and pays for) a new stream.

    The state it reads is public: whether ``fit`` released a table.
    """
    warn(f"partial_fit after {type(estimator).__name__}.fit(release='once') starts a new "
         "stream, charged anew: fit released the table once and left no stream to continue, "
         "and this stream's releases replace it. To stream rows, call partial_fit from the "
         "start (or fit with release='per_row').", UserWarning)


def _noisy_total(total: float, noise_std: float, largest: float) -> float:
    """A released total weight, made safe to divide by (post-processing with public constants).

    Clipped to ``[3 noise_std, largest]`` (``largest = n * max_weight``), so
    that a total near zero cannot blow a mean up; below ten noise stds the
    means built on it are unreliable and a warning says so (the test reads
    the release only).
    """
    if total < 10.0 * noise_std:
        warn(
            "The released total weight is within ten of its noise standard deviations "
            f"({noise_std:.3g}) of zero: too few rows (or too little weight) for this budget, and "
            "the means divided by it are unreliable. Use more rows, a larger epsilon or a "
            "declared bound.", UserWarning)
    return float(np.clip(total, 3.0 * noise_std, max(largest, 3.0 * noise_std)))


class _StepWorkload:
    """A workload over steps of noisy sums; 'average' and 'window' divide by the rows they hold."""

    def __init__(self, kind: str, beta, window) -> None:
        self.kind = kind
        inner = "prefix" if kind == "average" else kind
        self._sums = WorkloadStream(inner, beta=beta, k=window)
        self._counts = WorkloadStream(inner, beta=beta, k=window)

    def update(self, sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
        out = self._sums.update(sums)
        if self.kind in ("prefix", "exponential"):
            return out
        rows = self._counts.update(counts)
        if self.kind == "window":  # WorkloadStream's window is a mean over k steps
            out = out * self._sums.k
            rows = rows * self._sums.k
        return out / rows.reshape((-1,) + (1,) * (out.ndim - 1))
