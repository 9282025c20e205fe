"""DP-AMBSSGD: one-pass mini-batch SGD with private adaptive clipping (Varshney et al. 2022)."""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

from skdp._secure import is_secure_mode
from skdp.base import (
    PRIVACY_PARAMS_DOC,
    DPEstimatorMixin,
    LinearPredictMixin,
    StreamStateMixin,
    begin_draws,
    check_stream_continues,
)
from skdp.clipping import dp_stat, dp_stat_n_levels
from skdp.clipping._clip import _clipped_gradient_sum  # X capped at entry
from skdp.linear_model._dp_ssgd import dp_ssgd
from skdp.mechanisms import gaussian_release
from skdp.utils._dask import is_dask, partial_fit_over_partitions
from skdp.utils._sklearn import Interval, StrOptions, _fit_context
from skdp.utils._validation import _cap, validate_private

__all__ = ["DPAMBSSGDRegressor", "dp_ambssgd"]


def dp_ambssgd(X, y, w, *, n_steps: int, stat_size: int, batch_size: int, x_norm: float,
               residual_bound: float, resolution: float, count_noise_std: float,
               target_count: float, noise_multiplier: float, learning_rate: float,
               rng: np.random.Generator, fit_intercept: bool = True,
               log_factor: float = 1.0, growth: float = 2.0,
               part_offset: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """One shuffled pass of DP-AMBSSGD for least squares (Varshney et al. 2022, Algorithm 2).

    The rows are permuted once; step t takes the next ``stat_size`` rows as
    its stat sample and the following ``batch_size`` rows as its batch (the two
    are disjoint, so every row is used exactly once), then

    1. ``gamma_t`` = :func:`~skdp.clipping.dp_stat` of the stat sample's
       absolute residuals at ``w_t`` (a private high quantile);
    2. ``zeta_t = x_norm * gamma_t * log_factor``;
    3. ``w_{t+1} = w_t - learning_rate * (mean_b clip(grad_i, zeta_t)
       + N(0, (noise_multiplier * 2 zeta_t / batch_size)**2 I))``.

    Parameters
    ----------
    X : ndarray of shape (n, p)
        At least ``n_steps * (stat_size + batch_size)`` rows; the rest are unused.
    y : ndarray of shape (n,)
    w : ndarray of shape (p + fit_intercept,)
        Starting iterate (the intercept last).
    n_steps, stat_size, batch_size : int
    x_norm : float
        Declared scale of the rows' norm (R_x), intercept column included.
    residual_bound, resolution : float
        DP-STAT's domain size B and discretisation width Delta.
    count_noise_std : float
        Std of the noise on each DP-STAT count (sensitivity 1).
    target_count : float
        DP-STAT stops at the first level whose noisy count reaches it.
    noise_multiplier : float
        Gradient noise std in units of the mean's sensitivity ``2 zeta_t / b``.
    learning_rate : float
    rng : numpy.random.Generator
    fit_intercept : bool, default=True
    log_factor : float, default=1.0
        The paper's ``log^a N`` inflation of the clip norm.
    growth : float, default=2.0
        Ratio of DP-STAT's levels (the paper doubles).
    part_offset : int, default=0
        Rows of the stream before this pass, so that the releases recorded by
        :func:`skdp.mechanisms.record_releases` name disjoint parts across
        ``partial_fit`` calls.

    Returns
    -------
    iterates : ndarray of shape (n_steps, p + fit_intercept)
        ``w_1, ..., w_T``.
    clip_norms : ndarray of shape (n_steps,)
        ``zeta_t``, private outputs of DP-STAT.

    Notes
    -----
    A row in a stat sample changes each of DP-STAT's at most L counts by at
    most 1 (``sqrt(L) / count_noise_std``-GDP); a row in a batch changes the
    mean clipped gradient by at most ``2 zeta_t / b`` in L2
    (``1 / noise_multiplier``-GDP). Every row is in exactly one of these
    mechanisms, so the pass is ``max(sqrt(L) / count_noise_std,
    1 / noise_multiplier)``-GDP (parallel composition over the permutation's
    disjoint parts; the permutation does not depend on the data).
    """
    # Values beyond MAX_ABS capped first, as the estimators' validation does (a fixed
    # map of each value): a huge row cannot overflow a product into NaN or a warning.
    X, y = _cap(np.asarray(X, dtype=float)), _cap(np.asarray(y))
    n, p = X.shape
    step_size = stat_size + batch_size
    if n_steps * step_size > n:
        raise ValueError(f"{n_steps} steps of {step_size} rows need {n_steps * step_size} "
                         f"rows, got {n}.")
    w = np.array(w, dtype=float)
    perm = rng.permutation(n)
    iterates = np.empty((n_steps, w.shape[0]))
    clip_norms = np.empty(n_steps)
    for t in range(n_steps):
        rows = perm[t * step_size:(t + 1) * step_size]
        Xt, yt = X[rows], y[rows]
        residuals = Xt @ w[:p] - yt
        if fit_intercept:
            residuals += w[p]
        # An overflowed iterate can give NaN (inf - inf): it counts above every level.
        stat_values = np.abs(residuals[:stat_size])
        stat_values[np.isnan(stat_values)] = np.inf
        gamma, _ = dp_stat(stat_values, target_count=target_count,
                           upper_bound=residual_bound, resolution=resolution,
                           noise_std=count_noise_std, rng=rng, growth=growth,
                           part=("stat sample", part_offset + t * step_size))
        zeta = x_norm * gamma * log_factor
        grad = _clipped_gradient_sum(Xt[stat_size:], residuals[stat_size:], zeta,
                                    fit_intercept=fit_intercept) / batch_size
        sens = 2.0 * zeta / batch_size
        w -= learning_rate * gaussian_release(
            grad, noise_multiplier * sens, rng, name="DP-AMBSSGD batch", sensitivity=sens,
            part=("batch", part_offset + t * step_size))
        iterates[t] = w
        clip_norms[t] = zeta
    return iterates, clip_norms


class _Plan(NamedTuple):
    """Public constants of one pass, fixed before any data value is read."""

    n_steps: int
    stat_size: int
    batch_size: int
    count_noise_std: float
    target_count: float


_DOC = """Linear regression in one private pass: mini-batch SGD with adaptive clipping.

DP-AMBSSGD (Varshney et al. 2022, Algorithm 2): the rows are shuffled once and cut
into T steps. Each step first spends a small *stat sample* on DP-STAT
(Algorithm 3), a private high quantile ``gamma_t`` of the absolute residuals
at the current iterate, and sets the clip norm ``zeta_t = x_norm * gamma_t``;
then takes a clipped, noisy mini-batch gradient step on the next, disjoint
batch. Because the clip norm follows the residuals down, the noise does too:
the error shrinks with the label noise, close to the non-private rate, in one
pass. The estimate is the average of the last half of the iterates.

``variant='ssgd'`` runs DP-SSGD (Algorithm 1) instead: single-row steps
with a fixed ``clip_norm``, for comparison.

Parameters
----------
%(epsilon)s
%(delta)s
n_iter : int or None, default=None
    Number of steps T. None means ``ceil(2 ln n)`` (the paper's
    ``c kappa log N`` with ``c kappa = 2``), lowered if needed until each
    stat sample is large enough (see ``count_margin``); n is public. Ignored
    by ``variant='ssgd'`` (one step per row).
stat_fraction : float, default=0.1
    Share of each step's ``n // T`` rows that forms the stat sample (the
    paper's ``s = b / 10`` is 1/11).
x_norm : float or None, default=None
    Declared norm scale R_x, in [1e-100, 1e100], of the rows ``(x_i, 1)``
    (``x_i`` alone without intercept). None means ``sqrt(n_features +
    fit_intercept)``, the expected norm of standardised features. The clip
    norm is ``x_norm * gamma_t * ln(n)**tail_exponent``.
residual_bound : float, default=10.0
    DP-STAT's domain size B, in [1e-100, 1e100]: the largest residual
    threshold it can return (for labels of unit scale). Larger residuals are
    clipped.
resolution : float, default=1e-4
    DP-STAT's smallest threshold Delta, in [1e-100, 1e100] (the paper's
    ``B / N**200`` would need thousands of noisy counts). The error cannot
    follow the label noise below about this scale.
stat_growth : float, default=sqrt(2)
    Ratio between DP-STAT's consecutive thresholds (the paper doubles). It
    fixes the number of noisy counts, ``L = ceil(log(residual_bound /
    resolution) / log(stat_growth))`` (34 with the defaults).
count_margin : float, default=2.0
    DP-STAT stops at the first threshold whose noisy count reaches
    ``s - count_margin * count_noise_std_`` rather than the stat sample size s
    (the paper, ``count_margin=0``). Demanding the full count only succeeds
    when the noise happens to be positive, so the threshold overshoots the
    maximum residual by several levels; with the margin it is a high quantile.
    Each stat sample must hold at least ``2 * count_margin * count_noise_std_``
    rows.
tail_exponent : float, default=0.0
    a in the paper's clip-norm inflation ``ln(n)**a``. The theory needs it
    (no gradient clipped with high probability); in practice it multiplies
    the noise by ``ln(n)**a`` while the few gradients clipped at a = 0 cost
    little.
learning_rate : float or None, default=None
    Step size. None means 0.5 for 'ambssgd' (stable when the largest
    eigenvalue of ``E[(x, 1)(x, 1)^T]`` is below 4) and ``1 / (4 (n_features
    + fit_intercept))`` for 'ssgd' (Varshney et al. 2022, Corollary 3.3).
fit_intercept : bool, default=True
    Fit an intercept through a constant 1 column that is part of every
    clipped gradient. The data are never centred.
variant : {'ambssgd', 'ssgd'}, default='ambssgd'
clip_norm : float or None, default=None
    Fixed clip norm of 'ssgd', in [1e-100, 1e100] (ignored by 'ambssgd').
    None means ``x_norm``, i.e. residuals of unit scale.
%(accountant)s
%(random_state)s

Attributes
----------
coef_ : ndarray of shape (n_features,)
intercept_ : float
privacy_spent_ : PrivacySpent
    ``(epsilon, delta, mu)`` of the pass (and of every ``partial_fit`` that
    continues it; see Notes).
n_iter_ : int
    Steps taken so far.
clip_norms_ : ndarray of shape (n_iter,) or None
    The private clip norms ``zeta_t`` of 'ambssgd' (None for 'ssgd').
stat_size_ : int
    s, rows per stat sample ('ambssgd'; 0 for 'ssgd').
batch_size_ : int
    b, rows per gradient step (1 for 'ssgd').
count_noise_std_ : float
    Std of the noise on each DP-STAT count ('ambssgd').
noise_multiplier_ : float
    Std of the gradient noise in units of the sensitivity of the mean
    clipped gradient, ``2 zeta_t / b``; equals ``1 / mu``.
n_samples_seen_ : int
    Rows received; ``n_iter_ * (stat_size_ + batch_size_)`` of them were used.
n_features_in_ : int
feature_names_in_ : ndarray of shape (n_features,)
    Only when X is a DataFrame with string column names.

See Also
--------
DPLinearRegressionGD : Full-batch DP-GD with confidence intervals.
AdaSSPRegressor : Sufficient-statistics perturbation.

Notes
-----
**Guarantee.** Neighbouring datasets differ in one row replaced by another;
n is public. The permutation does not depend on the data, and given it every
row lands in exactly one mechanism: a stat sample (at most L counts of
sensitivity 1, noise std ``sqrt(L) / mu``: mu-GDP) or a batch (mean clipped
gradient of sensitivity ``2 zeta_t / b``, noise std ``2 zeta_t / (b mu)``:
mu-GDP). The steps are an adaptive composition in which a replaced row
changes one mechanism only, so the pass is exactly mu-GDP (parallel
composition), with mu from (epsilon, delta). 'ssgd' adds noise of std
``2 clip_norm / mu`` to each single clipped gradient and is mu-GDP by the
same argument; skdp does not use the shuffling amplification of the paper's
Theorem 3.1, so its 'ssgd' is provably private for every epsilon but noisier
than the paper's. Rows left over when n is not a multiple of the step size
are not used.

**Streaming.** ``partial_fit`` continues the single pass: the rows of each
later call are shuffled and form further steps of the same size (rows left
over are not used), the current iterate and the running average continue,
and no budget is charged. This is private only because every row is used
once: **passing the same rows (or the same people) to** ``partial_fit``
**twice, or to** ``fit`` **and then** ``partial_fit``, **breaks the
guarantee.** The first call (of ``fit``, or of ``partial_fit`` on a fresh
estimator) fixes the step size, the burn-in (the first ``floor(T / 2)``
iterates are not averaged) and the noise calibration; later changes to the
parameters are ignored until the next ``fit`` (a warning names them). The
live object holds the noise generator (future noise); pickles and copies
leave it out and cannot continue the pass.

**Departures from Varshney et al. 2022**, all public constants (privacy is unchanged):
noise is calibrated exactly (GDP) rather than by zCDP; the stat sample and
the batch are disjoint (the paper's index ranges share a row); DP-STAT uses a
resolution of 1e-4 instead of ``B / N**200``, thresholds ``sqrt(2)`` apart
instead of doubling, and the ``count_margin`` stopping rule; the clip norm
is not inflated by ``log^a N`` (``tail_exponent=0``). With the paper's
constants the noise swamps the signal at n <= 1e5.

**Scale.** The defaults assume standardised features and a label whose
residuals are of order 1 or less; rescale with public constants.

References
----------
Varshney, Thakurta & Jain (2022). (Nearly) Optimal Private Linear
Regression via Adaptive Clipping. COLT.

Examples
--------
>>> import numpy as np
>>> from skdp.linear_model import DPAMBSSGDRegressor
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(100_000, 3))
>>> y = X @ np.array([1.0, -0.5, 0.25]) + 0.5 + 0.1 * rng.normal(size=100_000)
>>> reg = DPAMBSSGDRegressor(epsilon=1.0, random_state=0).fit(X, y)
>>> np.round(reg.coef_, 2), round(reg.intercept_, 2)
(array([ 1.  , -0.5 ,  0.25]), 0.5)
"""


class DPAMBSSGDRegressor(StreamStateMixin, DPEstimatorMixin, LinearPredictMixin, RegressorMixin,
                         BaseEstimator):
    __doc__ = _DOC % PRIVACY_PARAMS_DOC

    _parameter_constraints: dict = {
        **DPEstimatorMixin._parameter_constraints,
        "n_iter": [Interval(Integral, 1, None, closed="left"), None],
        "stat_fraction": [Interval(Real, 0, 1, closed="neither")],
        "x_norm": [Interval(Real, 1e-100, 1e100, closed="both"), None],
        "residual_bound": [Interval(Real, 1e-100, 1e100, closed="both")],
        "resolution": [Interval(Real, 1e-100, 1e100, closed="both")],
        "stat_growth": [Interval(Real, 1, None, closed="neither")],
        "count_margin": [Interval(Real, 0, None, closed="left")],
        "tail_exponent": [Interval(Real, 0, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither"), None],
        "fit_intercept": ["boolean"],
        "variant": [StrOptions({"ambssgd", "ssgd"})],
        "clip_norm": [Interval(Real, 1e-100, 1e100, closed="both"), None],
    }

    def __init__(self, *, epsilon=1.0, delta=1e-6, n_iter=None, stat_fraction=0.1, x_norm=None,
                 residual_bound=10.0, resolution=1e-4, stat_growth=2**0.5, count_margin=2.0,
                 tail_exponent=0.0, learning_rate=None, fit_intercept=True, variant="ambssgd",
                 clip_norm=None, accountant=None, random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.n_iter = n_iter
        self.stat_fraction = stat_fraction
        self.x_norm = x_norm
        self.residual_bound = residual_bound
        self.resolution = resolution
        self.stat_growth = stat_growth
        self.count_margin = count_margin
        self.tail_exponent = tail_exponent
        self.learning_rate = learning_rate
        self.fit_intercept = fit_intercept
        self.variant = variant
        self.clip_norm = clip_norm
        self.accountant = accountant
        self.random_state = random_state

    # -- planning: public constants only -------------------------------------

    def _plan(self, n: int, mu: float) -> _Plan:
        """Steps, stat/batch sizes and DP-STAT noise for n rows; raise if n is too small."""
        if self.variant == "ssgd":
            return _Plan(n, 0, 1, 0.0, 0.0)
        n_levels = dp_stat_n_levels(self.residual_bound, self.resolution, self.stat_growth)
        count_std = math.sqrt(n_levels) / mu if n_levels else 0.0
        min_stat = max(1, math.ceil(2.0 * self.count_margin * count_std))

        def sizes(steps):
            step = n // steps
            stat = int(self.stat_fraction * step)
            return stat, step - stat

        if self.n_iter is None:
            candidates = range(max(1, math.ceil(2.0 * math.log(n))), 0, -1)
        else:
            candidates = [self.n_iter]
        for steps in candidates:
            stat, batch = sizes(steps)
            if stat >= min_stat and batch >= 1:
                return _Plan(steps, stat, batch, count_std,
                             stat - self.count_margin * count_std)
        steps = candidates[-1]
        need = math.ceil(min_stat / self.stat_fraction) + 1
        raise ValueError(
            f"Too few rows: {n} rows give {steps} steps of {n // steps} rows, but each step "
            f"needs a stat sample of at least {min_stat} rows (2 * count_margin * count noise "
            f"std {count_std:.3g}) and a batch, i.e. about {need} rows per step at "
            f"stat_fraction={self.stat_fraction}. DPAMBSSGDRegressor is a one-pass method for "
            f"large tables (about 3e4 rows or more); on {n} rows use DPLinearRegressionGD (full-"
            f"batch DP-GD, with confidence intervals) instead, or use more rows, fewer steps "
            f"(n_iter), a larger epsilon or stat_fraction, or a smaller count_margin.")

    def _check_call_sizes(self, sizes: list) -> None:
        """Raise, before any release, if a call of ``sizes[i]`` rows could not take a step.

        For ``partial_fit`` over Dask partitions (one call each): the sizes are
        public (the layout), and a short last partition must fail before the
        first one is released, not after (a retry would release them twice).
        """
        state = getattr(self, "_state", None)
        started = isinstance(state, dict)
        # A stream under way runs the variant of its first call (set_params since
        # does not change it).
        if (state["params"]["variant"] if started else self.variant) == "ssgd" or not sizes:
            return
        if started:  # its first call fixed the step
            plan, later = state["plan"], list(sizes)
        else:  # this call starts it: its first partition sets the plan
            plan, later = self._plan(int(sizes[0]), self._budget_mu()), list(sizes[1:])
        step = plan.stat_size + plan.batch_size
        short = [i for i, m in enumerate(later) if m < step]
        if short:
            raise ValueError(
                f"A partition has {int(later[short[0]])} rows, fewer than one step of {step} "
                "rows (fixed by the first call): repartition so that every partition has at "
                "least that many rows.")

    def _first_call(self, X, y):
        """Validate, plan, charge; set the calibration. Returns the pass's constants."""
        n, p = X.shape
        q = p + int(self.fit_intercept)
        mu = self._budget_mu()
        plan = self._plan(n, mu)
        x_norm = self.x_norm if self.x_norm is not None else math.sqrt(q)
        if self.variant == "ssgd":
            lr = self.learning_rate if self.learning_rate is not None else 1.0 / (4.0 * q)
        else:
            lr = self.learning_rate if self.learning_rate is not None else 0.5
        try:
            log_factor = math.log(n) ** self.tail_exponent
        except OverflowError:
            log_factor = math.inf
        # The largest clip norm the pass can use (DP-STAT's top level is below
        # residual_bound * stat_growth, or is resolution): public, checked before
        # the charge.
        if self.variant == "ssgd":
            top = self.clip_norm if self.clip_norm is not None else x_norm
        else:
            # DP-STAT returns resolution when it has no level to test.
            top_level = max(self.residual_bound * self.stat_growth, self.resolution)
            top = x_norm * top_level * log_factor
        if not top <= 1e300:
            raise ValueError(
                f"The clip norm could reach {top:.3g} (x_norm * residual_bound * stat_growth * "
                "ln(n)**tail_exponent), beyond 1e300, where the noisy steps overflow: lower "
                "them.")
        spent, rng = self._charge(mu)  # before any noise is drawn
        # Everything later calls use is frozen here, so that set_params between
        # partial_fit calls cannot change the calibration mid-stream.
        params = self.get_params(deep=False)
        params.pop("accountant")
        return dict(secure=is_secure_mode(), params=params, plan=plan, mu=mu, x_norm=x_norm,
                    lr=lr, spent=spent, q=q,
                    clip=self.clip_norm if self.clip_norm is not None else x_norm,
                    log_factor=log_factor, rng=rng)

    # -- fitting -------------------------------------------------------------

    def _run(self, X, y, state, first: bool):
        """Take the steps of one call; return the updated state (nothing set on self)."""
        plan, rng, q, prm = state["plan"], state["rng"], state["q"], state["params"]
        w = state.get("w", np.zeros(q))
        n = X.shape[0]
        if prm["variant"] != "ssgd":
            n_steps = plan.n_steps if first else n // (plan.stat_size + plan.batch_size)
            if n_steps == 0:
                raise ValueError(
                    f"partial_fit received {n} rows, fewer than one step of "
                    f"{plan.stat_size + plan.batch_size} rows (fixed by the first call).")
        begin_draws(state)  # cleared by the returned state, if this call completes
        with np.errstate(over="ignore", invalid="ignore"):
            if prm["variant"] == "ssgd":
                tail_start = n // 2 if first else 0
                w, tail_sum, n_tail = dp_ssgd(
                    X, y, w, clip_norm=state["clip"], noise_std=2.0 * state["clip"] / state["mu"],
                    learning_rate=state["lr"], rng=rng, fit_intercept=prm["fit_intercept"],
                    tail_start=tail_start, part_offset=state.get("n_seen", 0))
                clip_norms = None
                n_steps = n
            else:
                iterates, clip_norms = dp_ambssgd(
                    X, y, w, n_steps=n_steps, stat_size=plan.stat_size,
                    batch_size=plan.batch_size, x_norm=state["x_norm"],
                    residual_bound=prm["residual_bound"], resolution=prm["resolution"],
                    count_noise_std=plan.count_noise_std, target_count=plan.target_count,
                    noise_multiplier=1.0 / state["mu"], learning_rate=state["lr"], rng=rng,
                    fit_intercept=prm["fit_intercept"], log_factor=state["log_factor"],
                    growth=prm["stat_growth"], part_offset=state.get("n_seen", 0))
                tail = iterates[n_steps // 2:] if first else iterates
                w, tail_sum, n_tail = iterates[-1].copy(), tail.sum(axis=0), tail.shape[0]
                if state.get("clip_norms") is not None:
                    clip_norms = np.concatenate([state["clip_norms"], clip_norms])
        total_sum = state.get("tail_sum", 0.0) + tail_sum
        total_n = state.get("n_tail", 0) + n_tail
        theta = total_sum / max(total_n, 1)
        if not (np.all(np.isfinite(theta)) and np.all(np.isfinite(w))):
            raise FloatingPointError(
                "Non-finite iterates (floating-point overflow). Inputs are capped and gradients "
                "clipped, so only extreme parameters (learning_rate, clip_norm) can cause this; "
                "call fit again with other ones (a stream does not continue after a failed "
                "call).")
        return {**state, "w": w, "tail_sum": total_sum, "n_tail": total_n, "failed": False,
                "clip_norms": clip_norms, "theta": theta,
                "n_iter": state.get("n_iter", 0) + n_steps,
                "n_seen": state.get("n_seen", 0) + n}

    def _store(self, state):
        p = self.n_features_in_
        theta = state["theta"]
        self.coef_ = theta[:p]
        self.intercept_ = float(theta[p]) if state["params"]["fit_intercept"] else 0.0
        plan = state["plan"]
        self.privacy_spent_ = state["spent"]
        self.n_iter_, self.n_samples_seen_ = state["n_iter"], state["n_seen"]
        self.clip_norms_ = state["clip_norms"]
        self.stat_size_, self.batch_size_ = plan.stat_size, plan.batch_size
        self.count_noise_std_ = plan.count_noise_std
        self.noise_multiplier_ = 1.0 / state["mu"]
        self._state = state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit in one private pass over the rows, starting a fresh stream.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : DPAMBSSGDRegressor
        """
        X, y = validate_private(self, X, y, y_numeric=True, ensure_min_samples=2, dtype=np.float64)
        # A new stream: a fit that fails past its charge leaves no old one to continue.
        self.__dict__.pop("_state", None)
        state = self._run(X, y, self._first_call(X, y), first=True)
        self._store(state)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y):
        """Continue the single pass with new rows (no further budget; see Notes).

        Each row must be new: feeding a row that an earlier call has seen
        breaks the privacy guarantee.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : DPAMBSSGDRegressor
        """
        if is_dask(X):  # the pass continues over the partitions, one in memory at a time
            return partial_fit_over_partitions(self.partial_fit, X, y)
        first = not self._stream_started()
        X, y = validate_private(self, X, y, y_numeric=True, reset=first, ensure_min_samples=2 if first
                             else 1, dtype=np.float64)
        if not first:
            check_stream_continues(self._state)
        state = self._first_call(X, y) if first else self._state
        self._store(self._run(X, y, state, first=first))
        return self
