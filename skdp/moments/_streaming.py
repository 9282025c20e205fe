"""StreamingMomentEstimator: private first and second moments released after every row."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator

from skdp.base import PRIVACY_PARAMS_DOC, DPEstimatorMixin, StreamStateMixin
from skdp.clipping import clip_rows
from skdp.mechanisms import (
    WORKLOADS,
    CorrelatedNoise,
    WorkloadStream,
    make_rng,
    noise_shaping_matrix,
    toeplitz_sensitivity_factor,
    workload_matrix,
)
from skdp.moments._cs import cs_noise_stds
from skdp.moments._ime import ime_noise_stds
from skdp.moments._jme import jme_noise_stds
from skdp.moments._pp import pp_second_moment_inputs
from skdp.utils._sklearn import Interval, StrOptions, _fit_context
from skdp.utils._validation import validate_private

__all__ = ["StreamingMomentEstimator"]

METHODS = ("jme", "ime", "cs", "pp")
_CHUNK_ENTRIES = 1 << 18  # rows go in chunks of about this many second-moment entries (2 MB)


class _Buffer:
    """Growable array along the first axis (amortised O(1) appends); views are exposed."""

    def __init__(self, row_shape, capacity):
        self.data = np.empty((max(int(capacity), 1),) + tuple(row_shape))
        self.size = 0

    def reserve(self, m):
        need = self.size + m
        if need > self.data.shape[0]:
            grown = np.empty((max(need, 2 * self.data.shape[0]),) + self.data.shape[1:])
            grown[:self.size] = self.data[:self.size]
            self.data = grown
        return self.data[self.size:need]

    def view(self):
        return self.data[:self.size]


_DOC = """Private first and second moments of a stream, released after every row.

After each row ``x_t`` the estimator releases private versions of
``Y_t = sum_i A1[t, i] x_i`` and ``S_t = sum_i A2[t, i] x_i x_i^T``
(Kalinin et al. 2025) for a workload A1, A2 (running sum, running average,
exponentially weighted or sliding-window sums) with independent or
correlated (matrix-factorization) noise. Four methods:

- ``'jme'``: joint moment estimation (Algorithm 1). Both moments are
  privatised with one joint sensitivity (Lemma 3.5); with ``lam=None`` the
  second moment is *free*: the first moment gets exactly the noise it would
  get alone. A number ``lam`` is lambda-JME (Algorithm 3), trading accuracy
  between the moments.
- ``'ime'``: independent moment estimation (Algorithm 4), the budget split
  between the moments (``budget_split`` of ``mu**2`` to the first).
- ``'cs'``: concatenate-and-split (Algorithm 5), the second moment scaled by
  ``sqrt(tau)`` and privatised in one vector with the first.
- ``'pp'``: post-processing (Algorithm 6): the second moment is built from the
  noisy rows; ``debias=True`` removes the exact bias.

Parameters
----------
%(epsilon)s
%(delta)s
method : {'jme', 'ime', 'cs', 'pp'}, default='jme'
lam : float or None, default=None
    'jme' only: weight lambda of the second moment; None is the
    privacy-for-free choice of Algorithm 1.
budget_split : float, default=0.5
    'ime' only: share of ``mu**2`` spent on the first moment, in (0, 1).
tau : float, default=1.0
    'cs' only: rescaling of the second moment, > 0.
debias : bool, default=True
    'pp' only: subtract the known bias ``sum_k A2[t, k] v_k I`` (v_k the
    noise variance of row k) so that the second moment is unbiased.
workload : {'prefix', 'average', 'exponential', 'window'}, default='prefix'
    A1 (Kalinin et al. 2025, Table 1).
second_workload : {'prefix', 'average', 'exponential', 'window'} or None, default=None
    A2; None means the same as ``workload``.
beta : float or None, default=None
    Decay in (0, 1] of the 'exponential' workload(s).
window : int or None, default=None
    Length k of the 'window' workload(s).
noise_shaping : {'identity', 'sqrt', 'nu', 'workload_sqrt'} or array-like, default='identity'
    The matrix C of the matrix mechanism (noise ``C^{-1} Z``): independent
    noise, the square root of the prefix-sum matrix, the nu-damped Toeplitz
    of Choquette-Choo et al. 2024, the square root of each moment's workload
    (``C_i = A_i^{1/2}``), or your own lower-triangular invertible matrix
    (its size is the horizon).
nu : float or None, default=None
    Damping in [0, 1) for ``noise_shaping='nu'``.
n_steps : int or None, default=None
    Horizon: the most rows the stream may ever have. Needed by 'sqrt' and
    'workload_sqrt' (their sensitivity grows with the horizon); for 'nu' it
    is optional and a finite horizon gives less noise. ``fit`` uses the
    number of rows when it is None.
norm_bound : float, default=1.0
    zeta: rows longer than this (in L2) are scaled down to it.
diagonal_only : bool, default=False
    Estimate only the diagonal of the second moment (Theorem 4.3: the same
    sensitivity, d instead of d**2 numbers per step).
%(accountant)s
%(random_state)s

Attributes
----------
first_moment_ : ndarray of shape (n_features,)
    The current (last) release of Y.
second_moment_ : ndarray of shape (n_features, n_features) or (n_features,)
    The current release of S (its diagonal when ``diagonal_only``).
first_moments_ : ndarray of shape (n_steps, n_features)
    Every release of Y so far (row t after row t of the stream).
second_moments_ : ndarray of shape (n_steps, n_features, n_features) or (n_steps, n_features)
    Every release of S so far.
n_steps_seen_ : int
noise_stds_ : tuple of float
    ``(std1, std2)``: the noise ``std1 [C1^{-1} Z1]_t`` is added to row t and
    ``std2 [C2^{-1} Z2]_t`` to ``x_t x_t^T`` (std2 is None for 'pp').
lam_ : float or None
    The lambda used by 'jme'.
privacy_spent_ : PrivacySpent
n_features_in_ : int
feature_names_in_ : ndarray of shape (n_features,)

Notes
-----
**Guarantee.** Neighbouring streams differ in one row replaced by another
(the length is public); every row takes part in one step. All releases of
the whole stream together are (epsilon, delta)-DP: 'jme' and 'cs' are one
Gaussian mechanism on the pair of streams (joint sensitivity: Lemma 3.5,
with the maximum over the columns of C1 and C2, so it holds for any noise
shaping; or the norm of the concatenated row), 'ime' two mechanisms whose
GDP budgets compose exactly, and 'pp' one mechanism on the rows followed by
post-processing. ``partial_fit`` continues the same stream without further
charges; ``fit`` starts (and pays for) a new one. The fitted object holds the
stream's noise generator and past noise, which would let anyone subtract
the noise: publish the release attributes, not the live object. Pickles and
copies leave that state out (they cannot continue the stream).

**Departures from Kalinin et al. 2025**: the noise is calibrated exactly (GDP), and
IME splits ``mu**2`` rather than (epsilon, delta); the joint sensitivity is
maximised over columns (the paper assumes decreasing column norms); PP
subtracts each row's own noise variance (see
:func:`~skdp.moments.pp_second_moment_inputs`). The second moment keeps the
paper's independent noise on all d**2 entries, so its release is not
symmetric; ``(S + S.T) / 2`` is a free improvement (post-processing).

**Memory.** Every release is kept: ``n (d + d**2)`` numbers. The
'identity' shaping draws its noise on the fly; 'sqrt' and 'nu' keep all
past noise (O(t d**2)) and cost O(t d**2) per single-row ``partial_fit``
(blocks use an FFT); dense shapings keep an n x n matrix.

References
----------
Kalinin, Upadhyay & Lampert (2025). Continual Release Moment Estimation
with Differential Privacy.

Examples
--------
>>> import numpy as np
>>> from skdp.moments import StreamingMomentEstimator
>>> X = np.random.default_rng(0).normal(size=(100_000, 3)) / 3  # norms mostly below 1
>>> est = StreamingMomentEstimator(epsilon=1.0, workload="average", random_state=0).fit(X)
>>> est.first_moments_.shape, est.second_moments_.shape
((100000, 3), (100000, 3, 3))
>>> est.noise_stds_  # privacy for free: std1 = 2 * norm_bound / mu
(8.449..., 11.949...)
>>> bool(np.abs(est.first_moment_).max() < 0.1)  # true mean 0, noise sd 8.45 / sqrt(1e5)
True
"""


class StreamingMomentEstimator(StreamStateMixin, DPEstimatorMixin, BaseEstimator):
    __doc__ = _DOC % PRIVACY_PARAMS_DOC

    _parameter_constraints: dict = {
        **DPEstimatorMixin._parameter_constraints,
        "method": [StrOptions(set(METHODS))],
        "lam": [Interval(Real, 0, None, closed="neither"), None],
        "budget_split": [Interval(Real, 0, 1, closed="neither")],
        "tau": [Interval(Real, 0, None, closed="neither")],
        "debias": ["boolean"],
        "workload": [StrOptions(set(WORKLOADS))],
        "second_workload": [StrOptions(set(WORKLOADS)), None],
        "beta": [Interval(Real, 0, 1, closed="right"), None],
        "window": [Interval(Integral, 1, None, closed="left"), None],
        "noise_shaping": [StrOptions({"identity", "sqrt", "nu", "workload_sqrt"}), "array-like"],
        "nu": [Interval(Real, 0, 1, closed="left"), None],
        "n_steps": [Interval(Integral, 1, None, closed="left"), None],
        "norm_bound": [Interval(Real, 0, None, closed="neither")],
        "diagonal_only": ["boolean"],
    }

    def __init__(self, *, epsilon=1.0, delta=1e-6, method="jme", lam=None, budget_split=0.5,
                 tau=1.0, debias=True, workload="prefix", second_workload=None, beta=None,
                 window=None, noise_shaping="identity", nu=None, n_steps=None, norm_bound=1.0,
                 diagonal_only=False, accountant=None, random_state=None):
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
        self.diagonal_only = diagonal_only
        self.accountant = accountant
        self.random_state = random_state

    # -- setting up a stream: public constants only ---------------------------

    def _horizon(self, n_rows: int | None) -> int | None:
        shaping = self.noise_shaping
        if not isinstance(shaping, str):
            size = np.asarray(shaping).shape[0]
            if self.n_steps is not None and self.n_steps > size:
                raise ValueError(f"n_steps={self.n_steps} exceeds the size {size} of the "
                                 "noise-shaping matrix.")
            return self.n_steps or size
        if self.n_steps is not None:
            return int(self.n_steps)
        if shaping in ("sqrt", "workload_sqrt"):
            if n_rows is None:
                raise ValueError(f"noise_shaping={shaping!r} needs the horizon n_steps to start a "
                                 "stream with partial_fit (its sensitivity grows with it).")
            return n_rows
        return None

    def _shaping(self, kind: str, horizon: int | None):
        """(CorrelatedNoise argument, column norms) for one moment's workload."""
        shaping = self.noise_shaping
        if not isinstance(shaping, str):
            C = noise_shaping_matrix(shaping)[:horizon, :horizon]
            return C, np.sqrt(np.sum(C * C, axis=0))
        if shaping == "identity":
            return "identity", np.ones(1)
        if shaping in ("sqrt", "nu"):
            nu = 0.0 if shaping == "sqrt" else self.nu
            if shaping == "nu" and nu is None:
                raise ValueError("noise_shaping='nu' needs nu in [0, 1).")
            return (shaping, np.array([toeplitz_sensitivity_factor(nu, horizon)]))
        A = workload_matrix(kind, horizon, beta=self.beta, k=self.window)
        C = noise_shaping_matrix("workload_sqrt", workload=A)
        return C, np.sqrt(np.sum(C * C, axis=0))

    def _start(self, n_features: int, n_rows: int | None, first_block: int) -> dict:
        """Validate the configuration, calibrate, charge, and create the noise streams."""
        d = n_features
        kind1 = self.workload
        kind2 = self.second_workload or self.workload
        # Built first: they fail early on a missing beta / window.
        work1 = WorkloadStream(kind1, beta=self.beta, k=self.window)
        work2 = WorkloadStream(kind2, beta=self.beta, k=self.window)
        horizon = self._horizon(n_rows)
        if horizon is not None and first_block > horizon:
            raise ValueError(f"The stream's horizon is n_steps={horizon}; "
                             f"{first_block} rows would exceed it.")
        shape1, norms1 = self._shaping(kind1, horizon)
        shape2, norms2 = self._shaping(kind2, horizon)
        mu = self._budget_mu()
        zeta = float(self.norm_bound)
        lam = None
        if self.method == "jme":
            std1, std2, lam = jme_noise_stds(mu, d, zeta, norms1, norms2, self.lam)
        elif self.method == "ime":
            std1, std2 = ime_noise_stds(mu, zeta, norms1.max(), norms2.max(), self.budget_split)
        elif self.method == "cs":
            if kind1 != kind2 and self.noise_shaping == "workload_sqrt":
                raise ValueError("method='cs' privatises both moments with one noise-shaping "
                                 "matrix; 'workload_sqrt' with two different workloads gives two.")
            std1, std2 = cs_noise_stds(mu, zeta, norms1.max(), self.tau)
        else:
            std1, std2 = 2.0 * zeta * norms1.max() / mu, None
        spent = self._charge(mu)  # before any noise is drawn
        rng1, rng2 = make_rng(self.random_state).spawn(2)
        row2 = (d,) if self.diagonal_only else (d, d)
        capacity = n_rows if n_rows is not None else 1024
        return dict(
            d=d, horizon=horizon, std1=std1, std2=std2, lam=lam, spent=spent, zeta=zeta,
            method=self.method, debias=self.debias, diagonal_only=self.diagonal_only,
            noise1=CorrelatedNoise(shape1, d, rng1, nu=self.nu),
            noise2=None if std2 is None else CorrelatedNoise(shape2, row2, rng2, nu=self.nu),
            work1=work1, work2=work2,
            Y=_Buffer((d,), capacity), S=_Buffer(row2, capacity), t=0,
        )

    # -- the stream -------------------------------------------------------------

    @staticmethod
    def _advance(state: dict, X: np.ndarray) -> None:
        """Privatise the rows of X as the next steps of the stream (mutates state)."""
        m, d = X.shape
        t0 = state["t"]
        if state["horizon"] is not None and t0 + m > state["horizon"]:
            raise ValueError(f"The stream's horizon is n_steps={state['horizon']}; "
                             f"{t0 + m} rows would exceed it.")
        X = clip_rows(X, state["zeta"])
        Y_out, S_out = state["Y"].reserve(m), state["S"].reserve(m)
        diag = state["diagonal_only"]
        step = max(1, _CHUNK_ENTRIES // (d * d))
        noise1, noise2 = state["noise1"], state["noise2"]
        # Independent noise is drawn chunk by chunk (small temporaries);
        # correlated noise for the whole block at once (one FFT, not one per
        # chunk). Both give the same numbers as row-by-row draws.
        block1 = None if noise1.independent else noise1.next(m)
        block2 = None if noise2 is None or noise2.independent else noise2.next(m)

        for a in range(0, m, step):
            b = min(m, a + step)
            n1 = noise1.next(b - a) if block1 is None else block1[a:b]
            x_hat = X[a:b] + state["std1"] * n1
            if state["method"] == "pp":
                var = None
                if state["debias"]:
                    var = state["std1"] ** 2 * noise1.step_variances(t0 + a, t0 + b)
                second = pp_second_moment_inputs(x_hat, var, diagonal_only=diag)
            else:
                second = noise2.next(b - a) if block2 is None else block2[a:b]
                second *= state["std2"]  # in place: each slice is used once
                if diag:
                    second += X[a:b] ** 2
                else:
                    second += np.einsum("ti,tj->tij", X[a:b], X[a:b])
            state["work1"].update(x_hat, out=Y_out[a:b])
            state["work2"].update(second, out=S_out[a:b])
        state["Y"].size += m
        state["S"].size += m
        state["t"] = t0 + m

    def _publish(self, state: dict) -> None:
        self.first_moments_ = state["Y"].view()
        self.second_moments_ = state["S"].view()
        self.first_moment_ = self.first_moments_[-1]
        self.second_moment_ = self.second_moments_[-1]
        self.n_steps_seen_ = state["t"]
        self.noise_stds_ = (state["std1"], state["std2"])
        self.lam_ = state["lam"]
        self.privacy_spent_ = state["spent"]
        self._state = state

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
        self : StreamingMomentEstimator
        """
        X = validate_private(self, X, dtype=np.float64)
        state = self._start(X.shape[1], X.shape[0], X.shape[0])
        self._advance(state, X)
        self._publish(state)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None):
        """Append the rows of X to the stream (the first call starts it and charges the budget).

        The calibration is fixed by the first call; later parameter changes
        are ignored until the next ``fit``. Every row must be a new element:
        a row fed twice is not covered by the guarantee.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        self : StreamingMomentEstimator
        """
        first = not self._stream_started()
        X = validate_private(self, X, reset=first, dtype=np.float64)
        state = self._start(X.shape[1], None, X.shape[0]) if first else self._state
        self._advance(state, X)
        self._publish(state)
        return self
