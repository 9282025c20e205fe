"""PrivateGaussianDensity: a running private Gaussian fit (Kalinin et al. 2025, Section 4.1)."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, DensityMixin
from sklearn.utils.validation import check_is_fitted

from skdp.base import MAX_WEIGHT, PRIVACY_PARAMS_DOC, DPEstimatorMixin
from skdp.mechanisms import make_rng
from skdp.moments import StreamingMomentEstimator
from skdp.moments._streaming import BOUND_DOC, warn_new_stream
from skdp.utils._dask import is_dask, partial_fit_over_partitions
from skdp.utils._sklearn import Interval, Options, StrOptions, _fit_context
from skdp.utils._validation import validate_new_rows, validate_private
from skdp.utils._warnings import warn

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


def project_covariances(covariances, floor, cap: float | None = None,
                        trace_cap: float | None = None) -> np.ndarray:
    """Symmetrise and project onto the covariances rows in a ball can have (post-processing).

    The eigenvalues are projected onto ``{floor <= l_i <= cap, sum_i l_i <=
    trace_cap}`` (Euclidean projection: clip, then lower all by the shift
    that brings the clipped sum to the cap). The constraint set is spectral,
    so this is the Frobenius-nearest matrix with such eigenvalues. Rows of
    norm at most zeta have a covariance with trace at most ``zeta**2``, so
    with ``cap = trace_cap = zeta**2`` every projected covariance is one that
    data inside the bound can produce.

    Parameters
    ----------
    covariances : ndarray of shape (..., d, d)
    floor : float or ndarray of shape (...)
        > 0; one per matrix of the stack, or one for all.
    cap, trace_cap : float or None, default=None
        Largest eigenvalue and largest trace (None: no cap).

    Returns
    -------
    ndarray of shape (..., d, d)

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.density import project_covariances
    >>> np.linalg.eigvalsh(project_covariances(np.diag([3.0, 2.0, -1.0]), 0.1, 2.5, 4.0))
    array([0.1 , 1.45, 2.45])
    """
    cov = np.asarray(covariances, dtype=float)
    sym = 0.5 * (cov + np.swapaxes(cov, -1, -2))
    raw, vecs = np.linalg.eigh(sym)
    cap = np.inf if cap is None else float(cap)
    floor = np.broadcast_to(np.asarray(floor, dtype=float), raw.shape[:-1])[..., None]
    vals = np.clip(raw, floor, cap)
    if trace_cap is not None:
        vals = _cap_trace(raw, vals, floor, cap, float(trace_cap))
    return (vecs * vals[..., None, :]) @ np.swapaxes(vecs, -1, -2)


def _cap_trace(raw: np.ndarray, vals: np.ndarray, floor: np.ndarray, cap: float,
               trace_cap: float) -> np.ndarray:
    """Where the clipped eigenvalues sum above trace_cap: ``clip(raw - tau, floor, cap)``, sum = cap.

    The KKT conditions of the projection onto the box with a sum constraint
    give this form with the multiplier tau >= 0; the clipped sum decreases in
    tau, so bisection finds it.
    """
    over = vals.sum(axis=-1) > trace_cap
    if not np.any(over):
        return vals
    v, f = raw[over], floor[over]
    lo, hi = np.zeros(v.shape[0]), v.max(axis=-1) - f[:, 0]
    for _ in range(100):  # bisection on the shift; the clipped sum decreases in it
        mid = 0.5 * (lo + hi)
        too_big = np.clip(v - mid[:, None], f, cap).sum(axis=-1) > trace_cap
        lo, hi = np.where(too_big, mid, lo), np.where(too_big, hi, mid)
    out = vals.copy()
    out[over] = np.clip(v - hi[:, None], f, cap)
    return out


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


_DOC = """A Gaussian density fitted privately to a table, or re-estimated along a stream.

The private mean and covariance of Kalinin et al. (2025), Section 4.1: a
:class:`~skdp.moments.StreamingMomentEstimator` with the average workload
releases a private mean ``m`` and second moment ``S``; the covariance is
``S - m m^T``, debiased (the known variance of ``m``'s noise is added back),
symmetrised and projected onto the covariances that rows inside the norm
bound can have (eigenvalues between a floor and ``zeta**2``, trace at most
``zeta**2``). ``fit`` releases the table's moments once, with
the JME weight that minimises the log-likelihood loss; ``partial_fit``
releases after every call of a stream, with near-optimal correlated noise.
Everything after the moments is post-processing.

Parameters
----------
%(epsilon)s
%(delta)s
method : {'jme', 'pp'}, default='jme'
    Joint moment estimation (one release of both moments) or
    post-processing of noisy rows ('pp': streams and ``release='per_row'``
    only). JME is better at high privacy, PP at low privacy in high
    dimension (Kalinin et al. 2025, Theorems 4.1 and 4.2).
lam : float, 'density' or None, default='density'
    'jme' only: the second moment's weight (see
    :class:`~skdp.moments.StreamingMomentEstimator`); 'density' minimises the
    expected log-likelihood loss (:func:`~skdp.moments.density_lambda`),
    None is the privacy-for-free weight.
debias : bool, default=True
    Remove the known biases (of ``m m^T`` and, for PP, of the squared rows)
    before the projection.
noise_shaping : {'blt', 'identity', 'sqrt', 'nu'} or array-like, default='blt'
    For streams, as in :class:`~skdp.moments.StreamingMomentEstimator`.
nu : float or None, default=None
n_steps : int or None, default=None
    The stream's expected length (the 'blt' noise is tuned for it).
%(bound)s
release : {'once', 'per_row'}, default='once'
    What ``fit`` releases: the table's density once, or one after every row.
eigenvalue_floor : 'auto' or float, default='auto'
    Smallest eigenvalue of the released covariances. A float is relative to
    ``norm_bound_**2``. 'auto' is ``max(1e-3 * zeta**2, 0.75 * s * sqrt(d))``
    with s the (public) noise std of a diagonal entry of the released
    covariance: noise of that size pushes the smallest eigenvalues of a
    d x d covariance down by about ``s sqrt(2 d)``, and a Gaussian whose
    variance is underestimated scores new data far worse than one whose
    variance is overestimated (on the benchmark stream of 1,000 calls the
    median log-likelihood is -3.53 with 'auto' and -4.29 with 1e-3). For
    'pp' the noise std is approximate (it treats the noise of successive
    rows as independent).
projection : {'feasible', 'psd'}, default='feasible'
    The post-processing of the released covariances. 'feasible' projects
    onto the covariances rows inside the norm bound can have (eigenvalues
    between the floor and ``norm_bound_**2``, trace at most
    ``norm_bound_**2``). 'psd' only symmetrises and floors the eigenvalues,
    as Kalinin et al. (2025) do in their Figure 5. The cap matters when the
    comparison is JME against PP: PP's squared noise inflates its
    covariances far beyond what the rows allow, and the cap removes most of
    that, so with 'feasible' PP can match JME where with 'psd' JME wins by
    a wide margin. In the setting of their Figure 5 (d = 5, 100 rows, noise
    multiplier 2, 200 runs) the mean KL at the last step is 20.5 for JME and
    61.8 for PP with the paper's choices (identity noise, ``lam=None``,
    floor 1e-3, 'psd'); with skdp's defaults the medians are 2.41 and 2.53
    (``python benchmarks/moments_figures.py --runs 200``).
store_history : bool, default=False
    Keep the density of every step in ``locations_`` / ``covariances_``.
%(max_weight)s
%(accountant)s
%(random_state)s

Attributes
----------
location_ : ndarray of shape (n_features,)
    Current private mean (inside the norm ball).
covariance_ : ndarray of shape (n_features, n_features)
    Current private covariance (symmetric positive definite, feasible).
precision_ : ndarray of shape (n_features, n_features)
locations_, covariances_ : ndarray
    The density after every step; only with ``store_history=True``.
n_steps_seen_ : int
n_samples_seen_ : int
norm_bound_ : float
    The bound the rows were clipped to (declared or private).
noise_stds_ : tuple of float
    As in :class:`~skdp.moments.StreamingMomentEstimator`.
privacy_spent_ : PrivacySpent
n_features_in_ : int
feature_names_in_ : ndarray of shape (n_features,)

Notes
-----
**Guarantee.** One row replaced by another (the number of rows, and the
rows of each ``partial_fit`` call, are public). The moments are (epsilon,
delta)-DP for all releases together, the private norm bound included (see
:class:`~skdp.moments.StreamingMomentEstimator`); the density, its scores and
its samples are post-processing. ``partial_fit`` continues the stream at no
further cost (after a one-release ``fit`` it starts one, charged anew, and
warns); a row fed twice is not covered. The stream's noise state is
kept in a private attribute and left out of pickles and copies.

**When it fails.** On n rows at budget mu the covariance entries carry
noise of order ``zeta**2 / (n mu)``: with few rows, a loose declared
bound or a small epsilon, the smallest eigenvalues sit at the floor and
the log-likelihood of new data suffers; the private bound keeps zeta near
the 99th percentile of the norms, and the log-likelihood benchmark
(``benchmarks/density_loglik.py``) shows the cost at 1e4 and 1e5 rows.
One norm bound serves every column, so on columns of very different
scales it follows the widest, and the noise it sets buries the narrow
ones (PSID7682's raw experience, weeks, education and log wage at
epsilon 1: the log wage's variance 0.21 came out 11.5). A fit of a table
warns when a direction of its released covariance falls below the floor
(the noise level), naming the columns along it: standardise them first.
A stream (``partial_fit``) does not run this check, nor the trace-cap
one: its early steps sit below the noise by design, and a warning per
step would bury the one that matters. Check a stream's columns with a
``fit`` of a comparable public or synthetic table first.
A Gaussian is the wrong model for multi-modal or heavy-tailed data,
privately or not.

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
>>> X = rng.multivariate_normal(mean, cov, size=100_000)
>>> dens = PrivateGaussianDensity(epsilon=1.0, random_state=0).fit(X)
>>> round(dens.norm_bound_, 2)  # private 99th percentile of the norms (0.68), on a 9%% grid
0.71
>>> bool(np.abs(dens.location_ - mean).max() < 0.01), bool(np.abs(dens.covariance_ - cov).max() < 0.01)
(True, True)
>>> dens.sample(3, random_state=0).shape
(3, 2)
"""


class PrivateGaussianDensity(DPEstimatorMixin, DensityMixin, BaseEstimator):
    __doc__ = _DOC % {**PRIVACY_PARAMS_DOC, "bound": BOUND_DOC}
    _accepts_dask = True  # fit reads Dask collections partition by partition

    _parameter_constraints: dict = {
        **DPEstimatorMixin._parameter_constraints,
        "method": [StrOptions({"jme", "pp"})],
        "lam": [Interval(Real, 0, None, closed="neither"), StrOptions({"density"}), None],
        "debias": ["boolean"],
        "noise_shaping": [StrOptions({"identity", "blt", "sqrt", "nu"}), "array-like"],
        "nu": [Interval(Real, 1e-15, 1, closed="left"), Options(Real, {0.0}), None],
        "n_steps": [Interval(Integral, 1, None, closed="left"), None],
        "norm_bound": [Interval(Real, 1e-100, 1e100, closed="both"), None],
        "bound_quantile": [Interval(Real, 0.5, 1, closed="neither")],
        "bound_share": [Interval(Real, 0, 1, closed="neither")],
        "release": [StrOptions({"once", "per_row"})],
        "eigenvalue_floor": [Interval(Real, 0, 1, closed="neither"), StrOptions({"auto"})],
        "projection": [StrOptions({"feasible", "psd"})],
        "store_history": ["boolean"],
        "max_weight": [Interval(Real, 0, MAX_WEIGHT, closed="right")],
    }

    def __init__(self, *, epsilon=1.0, delta=1e-6, method="jme", lam="density", debias=True,
                 noise_shaping="blt", nu=None, n_steps=None, norm_bound=None,
                 bound_quantile=0.99, bound_share=0.05, release="once", eigenvalue_floor="auto",
                 projection="feasible", store_history=False, max_weight=1.0, accountant=None,
                 random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.method = method
        self.lam = lam
        self.debias = debias
        self.noise_shaping = noise_shaping
        self.nu = nu
        self.n_steps = n_steps
        self.norm_bound = norm_bound
        self.bound_quantile = bound_quantile
        self.bound_share = bound_share
        self.release = release
        self.eigenvalue_floor = eigenvalue_floor
        self.projection = projection
        self.store_history = store_history
        self.max_weight = max_weight
        self.accountant = accountant
        self.random_state = random_state

    def __getstate__(self):
        # The moment estimator behind the density holds the stream's secret
        # noise state; pickles keep the density, not the stream.
        state = super().__getstate__()
        if state.get("_moments") is not None:
            state = {**state, "_moments": None}
        return state

    def _moment_estimator(self) -> StreamingMomentEstimator:
        moments = StreamingMomentEstimator(
            epsilon=self.epsilon, delta=self.delta, method=self.method,
            lam=self.lam if self.method == "jme" else None, debias=self.debias,
            workload="average", noise_shaping=self.noise_shaping, nu=self.nu,
            n_steps=self.n_steps, norm_bound=self.norm_bound, bound_quantile=self.bound_quantile,
            bound_share=self.bound_share, release=self.release, store_history=self.store_history,
            max_weight=self.max_weight, accountant=self.accountant,
            random_state=self.random_state)
        moments._ledger_label = type(self).__name__  # the ledger names the estimator you fitted
        return moments

    def _update(self, moments: StreamingMomentEstimator, t0: int, rows0: int,
                per_row: bool, table: bool = False) -> None:
        """Derive the densities of the new steps from the moments (post-processing only).

        ``table``: a fit of a whole table, which warns when its (last) covariance
        is pinned at the trace cap; a stream's early steps are expected to be.
        """
        t1 = moments.n_steps_seen_
        if self.store_history:
            means = moments.first_moments_[t0:t1]
            seconds = moments.second_moments_[t0:t1]
        else:
            means, seconds = moments.first_moment_[None], moments.second_moment_[None]
        mean_var, second_std = self._noise_scales(moments, t1 - means.shape[0], t1, per_row)
        zeta = moments.norm_bound_
        norms = np.linalg.norm(means, axis=1, keepdims=True)
        means = means * np.minimum(1.0, zeta / np.maximum(norms, 1e-300))
        d = means.shape[1]
        if self.eigenvalue_floor == "auto":
            floor = np.maximum(1e-3 * zeta**2, 0.75 * second_std * np.sqrt(d))
        else:
            floor = self.eigenvalue_floor * zeta**2
        floor = np.minimum(floor, zeta**2 / d)  # feasible: d eigenvalues within the trace cap
        cap = zeta**2 if self.projection == "feasible" else None
        raw = private_covariances(means, seconds, mean_var if self.debias else None)
        if table:
            self._warn_below_noise(raw[-1], float(np.ravel(floor)[-1]))
        covariances = project_covariances(raw, floor, cap, cap)
        if table and cap is not None and np.trace(covariances[-1]) >= cap * (1.0 - 1e-9):
            # Read from the released covariance only (post-processing).
            warn(
                "The private covariance sits at the largest trace rows inside the norm bound can "
                f"have (norm_bound_**2 = {zeta**2:.3g}): the noise dominates the second moment at "
                "this budget and number of rows, so the density is mostly the projection (and "
                "debias makes no difference). Use method='jme', more rows or a larger epsilon.",
                UserWarning)
        if self.store_history:
            old = t0 > 0 and hasattr(self, "covariances_")
            self.locations_ = np.concatenate([self.locations_, means]) if old else means
            self.covariances_ = (np.concatenate([self.covariances_, covariances]) if old
                                 else covariances)
        self.location_, self.covariance_ = means[-1].copy(), covariances[-1].copy()
        self.precision_ = np.linalg.inv(self.covariance_)
        self.n_steps_seen_, self.n_samples_seen_ = t1, moments.n_samples_seen_
        self.norm_bound_, self.noise_stds_ = zeta, moments.noise_stds_
        self.privacy_spent_ = moments.privacy_spent_
        self._moments = moments

    def _warn_below_noise(self, covariance: np.ndarray, floor: float) -> None:
        """Warn about directions whose private variance is below the noise (post-processing).

        The eigenvalue floor is the noise level of the second moment; a
        direction of the released covariance below it holds the noise's
        variance, not the data's, and the projection raises it to the floor.
        Nearly collinear columns give such directions, and so do narrow
        columns beside wide ones: the norm bound follows the widest, and the
        noise it sets buries the narrow ones.
        """
        values, vectors = np.linalg.eigh(0.5 * (covariance + covariance.T))
        low = values < floor
        if not np.any(low):
            return
        names = getattr(self, "feature_names_in_", None)
        names = [str(c) for c in names] if names is not None else [
            f"x{j}" for j in range(covariance.shape[0])]
        loads = np.abs(vectors[:, low]).max(axis=1)
        # The columns that load most on those directions (at least the largest one).
        top = set(np.flatnonzero(loads >= 0.5)) or {int(np.argmax(loads))}
        named = [name for j, name in enumerate(names) if j in top]
        level = ("the noise of the second moment" if self.eigenvalue_floor == "auto"
                 else "the declared eigenvalue_floor")
        warn(f"{int(low.sum())} direction(s) of the private covariance, mostly along {named}, "
             f"have a variance below {level} ({floor:.3g}, the eigenvalue floor they are "
             "raised to): there the density shows the noise, not the data. Such directions "
             "come from nearly collinear columns, or from narrow columns beside wide ones: "
             "one norm bound serves every column, and the noise it sets "
             "buries the narrow ones, so standardise the columns first "
             "(skdp.preprocessing.DPStandardScaler). More rows or a larger epsilon resolve "
             "them.", UserWarning)

    @staticmethod
    def _noise_scales(moments, t0: int, t1: int, per_row: bool):
        """Noise of the released means and second moments at steps t0..t1 (public constants).

        Returns the variance of each entry of the mean's noise and the std of
        a diagonal entry of the second moment's noise, both on the scale of
        the averages. After step k the releases are running sums of noisy
        step sums over the N_k rows seen, so a noise stream shaped by C has
        variance ``std**2 * Var(prefix sum of [C^{-1} Z]) / N_k**2``.
        """
        state = getattr(moments, "_state", None)
        if state is None:  # a table released once
            info = moments._release_info
            return np.array([info["mean_noise_var"]]), np.array([info["second_noise_std"]])
        if per_row or state["method"] == "pp":  # one row per step: N_k = k + 1
            rows = np.arange(t0 + 1, t1 + 1, dtype=float)
        else:  # one step per call: only the last step is asked for
            rows = np.array([float(moments.n_samples_seen_)])
        mean_var = state["std1"] ** 2 * state["noise1"].prefix_variances(t0, t1) / rows**2
        if state["std2"] is not None:
            second_std = state["std2"] * np.sqrt(state["noise2"].prefix_variances(t0, t1)) / rows
        else:  # PP: x_hat x_hat^T - v I carries about 2 v zeta^2 / d + 2 v^2 per entry and row
            v = state["std1"] ** 2 * state["noise1"].step_variances(t0, t1)
            zeta2 = state["zeta"] ** 2
            second_std = np.sqrt(v * (2.0 * zeta2 / state["d"] + 2.0 * v) / rows)
        return mean_var, second_std

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, sample_weight=None):
        """Fit the density to the table X (one release), or stream its rows (``release='per_row'``).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : None
            Ignored.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Row weights in [0, max_weight] (``release='once'`` only).

        Returns
        -------
        self : PrivateGaussianDensity
        """
        X = validate_private(self, X, dtype=np.float64)
        for name in ("locations_", "covariances_"):
            self.__dict__.pop(name, None)
        moments = self._moment_estimator().fit(X, sample_weight=sample_weight)
        self._update(moments, 0, 0, per_row=self.release == "per_row", table=True)
        return self

    def _check_call_sizes(self, sizes: list) -> None:
        """Before the partitions of a Dask table: the moment stream's horizon check (public sizes)."""
        moments = getattr(self, "_moments", False)
        if moments is None:  # a copy without its stream: partial_fit raises before any release
            return
        started = moments is not False and isinstance(getattr(moments, "_state", None), dict)
        (moments if started else self._moment_estimator())._check_call_sizes(sizes)

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y=None):
        """One step of the stream: the rows of X (the first call starts it and charges the budget).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        self : PrivateGaussianDensity
        """
        if is_dask(X):  # one step per partition, one partition in memory at a time
            return partial_fit_over_partitions(self.partial_fit, X)
        moments = getattr(self, "_moments", False)
        if moments is None:
            raise RuntimeError("This estimator was pickled, copied or returned by a private "
                               "search: its secret noise state is not kept, so the stream "
                               "cannot continue. Call fit to start a new one.")
        first = moments is False or getattr(moments, "_state", None) is None
        if first and hasattr(self, "location_"):
            warn_new_stream(self)
        X = validate_private(self, X, reset=first, dtype=np.float64)
        if first:
            for name in ("locations_", "covariances_"):
                self.__dict__.pop(name, None)
            moments, t0, rows0 = self._moment_estimator(), 0, 0
        else:
            t0, rows0 = moments.n_steps_seen_, moments.n_samples_seen_
        moments.partial_fit(X)
        self._update(moments, t0, rows0, per_row=False)
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
        X = validate_new_rows(self, X, reset=False, dtype=np.float64)
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
