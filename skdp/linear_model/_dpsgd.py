"""DP-SGD / DP-MF for linear and logistic models: Ganesh et al. 2025 Algorithm 1 with its variants."""

from __future__ import annotations

import math
from functools import partial
from numbers import Integral, Real

import numpy as np
from scipy import stats
from scipy.signal import lfilter
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from skdp.base import (
    MAX_WEIGHT,
    PRIVACY_PARAMS_DOC,
    DPEstimatorMixin,
    LinearPredictMixin,
    StreamStateMixin,
    begin_draws,
    check_stream_continues,
    weight_bound,
)
from skdp.clipping import (
    logistic_loss_residuals,
    quantile_statistics,
    scale_from_second_moment,
    squared_loss_residuals,
)
from skdp.clipping._clip import _clipped_gradient_sum, _row_norms  # X capped at entry
from skdp.exceptions import PrivacyLeakWarning
from skdp.linear_model._bounds import check_bounds, make_scaling, original_scale_map
from skdp.linear_model._private_bounds import (
    GRID,
    SEARCH_MARGIN,
    private_quantile,
    search_steps,
)
from skdp.linear_model._weights import check_weights
from skdp.mechanisms import (
    CorrelatedNoise,
    blt_parameters,
    blt_sensitivity_factor,
    cyclic_sensitivity_factor,
    is_secure_mode,
    record_release,
    spawn_rngs,
    toeplitz_coefficients,
)
from skdp.optim import PRIVATE_MOMENTS, SGD, AdaGrad, Adam, moment_noise_stds, private_step_inputs
from skdp.utils._dask import is_dask, partial_fit_over_partitions
from skdp.utils._progress import Progress
from skdp.utils._sklearn import Interval, Options, StrOptions, _fit_context
from skdp.utils._validation import _cap, check_stream_weights, validate_new_rows, validate_private
from skdp.utils._warnings import warn

__all__ = ["DPSGDClassifier", "DPSGDRegressor", "dp_sgd"]

LOSSES = ("squared", "log", "multinomial")
#: The default SGD step: min(0.1 / c, _HORIZON_STEPS / (c T), max(_NOISE_STEP / rho**2,
#: 3 / (c T))), c the loss's curvature bound (_CURVATURE).
_HORIZON_STEPS = 25.0
_NOISE_STEP = 0.02
#: Bound on the loss's second derivative in its linear output: 1 for squared
#: loss, 1/4 for the logistic loss, 1/2 for the softmax (largest eigenvalue of
#: ``diag(p) - p p^T``).
_CURVATURE = {"squared": 1.0, "log": 0.25, "multinomial": 0.5}


def _residuals(loss: str, X, y, coef, fit_intercept: bool):
    """Derivative of the loss in the linear output: the per-example gradient is ``x r^T``."""
    if loss == "squared":
        return squared_loss_residuals(X, y, coef, fit_intercept=fit_intercept)
    return logistic_loss_residuals(X, y, coef, fit_intercept=fit_intercept)


#: The planned batch is n / PLAN_ROWS_PER_BATCH rows, between PLAN_MIN_BATCH and
#: PLAN_MAX_BATCH (about 500 steps per pass on large tables).
PLAN_ROWS_PER_BATCH, PLAN_MIN_BATCH, PLAN_MAX_BATCH = 500, 64, 1024


def planned_batch(n: int) -> int:
    """The planned batch size for n rows (public): ``n / 500`` within [64, 1024], at most n.

    Parameters
    ----------
    n : int

    Returns
    -------
    int
    """
    return int(min(n, PLAN_MAX_BATCH, max(PLAN_MIN_BATCH, n // PLAN_ROWS_PER_BATCH)))


#: Level of the private clip norm: the median per-example gradient norm at the start.
CLIP_LEVEL = 0.5


#: Largest share of mu**2 the clip-norm search may take on a small table.
MAX_CLIP_SHARE = 0.25
#: A private clip norm above this many sqrt(q) says the rows are far from unit scale.
CLIP_SCALE_WARN = 5.0


def _clip_share(n: int, mu: float, share: float) -> float:
    """The search's share of mu**2: at least ``share``, and enough to stay safe on n rows.

    The median's signed count must stay ``SEARCH_MARGIN`` noise stds from 0
    at the grid's far ends (``n / 2`` rows): noise sd ``sqrt(L) / mu_clip <=
    n / (2 SEARCH_MARGIN)``. Raises before any charge when that takes more
    than ``MAX_CLIP_SHARE``.
    """
    safe = (2.0 * SEARCH_MARGIN * math.sqrt(search_steps()) / (n * mu)) ** 2
    if safe > MAX_CLIP_SHARE:
        raise ValueError(
            f"n_samples={n} rows are too few for a private clip norm at this budget (a safe "
            "search would take most of it): declare clip_norm, or raise epsilon.")
    return max(float(share), safe)


def _clip_block(Xb, yb, wb, *, loss, fit_intercept):
    coef = np.zeros(Xb.shape[1] + int(fit_intercept) if yb.ndim == 1
                    else (Xb.shape[1] + int(fit_intercept), yb.shape[1]))
    r = _residuals(loss, Xb, yb, coef, fit_intercept)
    r = np.abs(r) if r.ndim == 1 else np.linalg.norm(r, axis=1)
    norms = np.sqrt(np.einsum("ij,ij->i", Xb, Xb) + (1.0 if fit_intercept else 0.0)) * r
    return quantile_statistics(norms[:, None], GRID, [CLIP_LEVEL])


def _warn_scale(clip: float, q: int, loss: str) -> None:
    """Warn when the private clip norm says the rows are far from unit scale (post-processing).

    At the start (coefficients 0) a row's gradient norm is ``||z_i|| |r_i|``.
    With standardised columns ``||z_i||`` is about ``sqrt(q)``, and the
    residual is the label (about 0.7 at the median of a standardised one) or
    at most 1 (logistic losses): the median stays near ``sqrt(q)``. One above
    :data:`CLIP_SCALE_WARN` ``sqrt(q)`` means large features or an uncentred,
    wide label, where steps sized for unit scale diverge or crawl.
    """
    if clip <= CLIP_SCALE_WARN * math.sqrt(q):
        return
    what = "features" if loss != "squared" else "features or labels"
    warn(f"The private clip norm is {clip:.3g}, more than {CLIP_SCALE_WARN:g} sqrt(q) = "
         f"{CLIP_SCALE_WARN * math.sqrt(q):.3g}: the gradients at the start are large, so the "
         f"{what} are far from unit scale, where the steps (sized for standardised columns) "
         "can diverge or barely move, without any other sign. Standardise the columns "
         "(skdp.preprocessing.DPStandardScaler in a Pipeline)"
         + (", centre the label" if loss == "squared" else "")
         + ", or declare bounds_X" + (" and bounds_y" if loss == "squared" else "") + ".",
         UserWarning)


#: Two-sided level of the test of a run that has not settled (_TailSums.pull).
UNSETTLED_LEVEL = 1e-3


class _TailSums:
    """Running sum and spread of the released gradient sums of a run's last steps (Welford).

    ``append`` takes one step's release (post-processing); ``pull()`` is the
    test of :func:`_warn_unsettled`. O(coefficients) memory, whatever the steps.
    """

    def __init__(self) -> None:
        self.k, self.total, self.mean, self.m2, self.unit = 0, None, None, 0.0, 1.0

    def append(self, released) -> None:
        g = np.array(released, dtype=float).ravel()
        self.k += 1
        if self.mean is None:  # the first release sets the unit: the test is scale-free
            peak = float(np.max(np.abs(g))) if g.size else 0.0
            self.unit = peak if np.isfinite(peak) and peak > 0 else 1.0
            g = g / self.unit
            self.total, self.mean = g.copy(), g
            return
        g = g / self.unit
        with np.errstate(over="ignore", invalid="ignore"):
            self.total += g
            delta = g - self.mean
            self.mean = self.mean + delta / self.k
            self.m2 += float(delta @ (g - self.mean))

    def pull(self) -> tuple[float, int]:
        """How far these steps still pull one way: ``(t**2 / threshold, k)``.

        With S the sum of the k released gradient sums G_t and s**2 the trace
        of their sample covariance, ``t**2 = ||S||**2 / (k s**2)``. A settled
        run's G_t are, for SGD, ``b / lr`` times the increments of stationary
        iterates: their sum telescopes, so ``E ||S||**2`` is at most ``k``
        times their variance (the bound of independent steps; noise, row
        sampling and the pull back towards the optimum all count in s).
        Against it, t is at most Student's t with k - 1 degrees of freedom in
        the worst (one-direction) case, so ``t**2`` above its ``1 -
        UNSETTLED_LEVEL / 2`` quantile squared happens with probability at
        most about UNSETTLED_LEVEL. A run still travelling adds the same pull
        to every step, which outgrows s like ``sqrt(k)``. ``(0, k)`` for fewer
        than 3 steps, or without a finite spread to judge by.
        """
        k = self.k
        if k < 3:
            return 0.0, k
        spread = self.m2 / (k - 1)
        if not (np.isfinite(spread) and spread > 0):
            return 0.0, k
        with np.errstate(over="ignore", invalid="ignore"):
            t2 = float(self.total @ self.total) / (k * spread)
        if not np.isfinite(t2):
            return 0.0, k
        return t2 / stats.t.ppf(1 - UNSETTLED_LEVEL / 2, k - 1) ** 2, k


def _warn_unsettled(state: dict, name: str, classifier: bool) -> None:
    """Warn when the last half of the call's steps still pull one way (see _TailSums.pull)."""
    ratio, k = state.get("pull", (0.0, 0))
    if not ratio > 1.0:
        return
    warn(f"{name}: the run had not settled. Over the last {k} steps (the last half) the "
         "released gradients still pull one way, beyond what their own step-to-step noise "
         "explains, so coef_ stops short of the optimum. Raise "
         f"learning_rate (it was {state['lr']:.3g}) or epochs"
         + (", unless the classes are separable, where the coefficients grow without end"
            if classifier else "") + ".", ConvergenceWarning)


def _private_clip(X, Y, loss: str, fit_intercept: bool, mu: float, rng) -> float:
    """Private median of the per-example gradient norms at the start (coefficients 0).

    A mu-GDP noisy binary search (:func:`skdp.clipping.private_quantiles`) that
    counts rows, whatever their weights (the clip applies before the weight).
    """
    block = partial(_clip_block, loss=loss, fit_intercept=fit_intercept)
    return private_quantile(block, X, Y, None, mu=mu, rng=rng, max_weight=None)


def dp_sgd(X, y, coef, *, loss: str, optimizer, private_moments: str, batch_size: int,
           clip_norm: float, noise, square_noise=None, noise_variances=None, n_epochs: int = 1,
           fit_intercept: bool = True, sample_weight=None, progress=None,
           average_from: int | None = None, tail_release: tuple | None = None):
    """Private mini-batch training of a linear model, rows in the order given.

    Step t takes the next batch of rows (``ceil(n / batch_size)`` steps per
    epoch, the last batch of an epoch possibly smaller; every epoch visits
    the rows in the same order), clips each per-example gradient to
    ``clip_norm`` (:func:`~skdp.clipping.clipped_gradient_sum`), adds
    ``noise[t]`` to the sum, and feeds the optimizer the private inputs of
    :func:`~skdp.optim.private_step_inputs`, dividing by ``batch_size`` also
    in a smaller last batch (whose noise is a full step's).

    Parameters
    ----------
    X : ndarray of shape (n, p)
    y : ndarray of shape (n,) or (n, K)
        Labels (squared loss), 0/1 labels ('log') or one-hot rows ('multinomial').
    coef : ndarray of shape (q,) or (q, K)
        Starting parameters, q = p + fit_intercept (the intercept last); not modified.
    loss : {'squared', 'log', 'multinomial'}
    optimizer : SGD, AdaGrad or Adam
        A stepper from :mod:`skdp.optim` (its state carries over between calls).
    private_moments : str
        One of :data:`~skdp.optim.PRIVATE_MOMENTS`; only 'post_processing'
        makes sense with :class:`~skdp.optim.SGD`.
    batch_size : int
    clip_norm : float
    noise : ndarray of shape (n_epochs * ceil(n / batch_size), q[, K]), or callable
        The noise of each step's gradient sum, ``std1 * [C^{-1} Z1]_t``; or
        ``noise(t, value)`` returning step t's release of ``value`` (secure
        mode: :meth:`~skdp.mechanisms.CorrelatedNoise.release`), called for
        t = 0, 1, ... in order.
    square_noise : ndarray like noise, or callable, optional
        The noise of each step's sum of squared gradients ('independent', 'jme').
    noise_variances : ndarray of shape (n_steps,), optional
        Variance of each entry of ``noise[t]`` ('bias_correction').
    n_epochs : int, default=1
    fit_intercept : bool, default=True
    sample_weight : ndarray of shape (n,), optional
        Row weights: row i contributes ``w_i clip(g_i)`` (norm at most
        ``max_weight * clip_norm``, which the noise must be calibrated to).
        Not with 'scale_then_privatize'.
    progress : Progress, optional
        Told of every step.
    average_from : int or None, default=None
        Also return the mean of the iterates after steps ``average_from``,
        ``average_from + 1``, ... (Polyak-Ruppert tail averaging; post-processing).
    tail_release : (int, list-like) or None, default=None
        ``(start, sink)``: the released (noisy) gradient sums of steps
        ``start``, ``start + 1``, ... are passed to ``sink.append``
        (post-processing; the estimators' ``fit`` tests them for a run that
        has not settled).

    Returns
    -------
    ndarray like coef
        The parameters after the last step.
    ndarray like coef
        Only with ``average_from``: the mean of the tail's iterates.
    """
    # Values beyond MAX_ABS capped first, as the estimators' validation does (a fixed
    # map of each value): a huge row cannot overflow a product into NaN or a warning.
    X, y = _cap(np.asarray(X, dtype=float)), _cap(np.asarray(y))
    n = X.shape[0]
    b = int(batch_size)
    per_epoch = -(-n // b)
    if not callable(noise) and noise.shape[0] != n_epochs * per_epoch:
        raise ValueError(f"noise has {noise.shape[0]} steps, expected {n_epochs * per_epoch}.")
    squares = private_moments in ("independent", "jme")
    scaled = private_moments == "scale_then_privatize"
    row_norms = _row_norms(X, 1.0 if fit_intercept else 0.0)
    w = None if sample_weight is None else np.asarray(sample_weight, dtype=float)
    if w is not None:
        if scaled:
            raise ValueError("sample_weight is not supported with "
                             "private_moments='scale_then_privatize'.")
        # clip(w_i g_i) would cap the weight; w_i clip(g_i) is what the noise pays for:
        # clipped_gradient_sum clips the unweighted g_i and weighs them after (dividing
        # the norms by a tiny w_i instead overflowed to inf, and inf * 0 made the
        # released sum NaN after the charge).
    coef = np.array(coef, dtype=float)
    tail_sum, tail_count = np.zeros_like(coef), 0
    t = 0
    for _ in range(n_epochs):
        for start in range(0, n, b):
            Xb, yb = X[start:start + b], y[start:start + b]
            r = _residuals(loss, Xb, yb, coef, fit_intercept)
            wb = None if w is None else w[start:start + b]
            extra = {}
            if scaled:
                v = optimizer.mean_square
                scale = scale_from_second_moment(0.0 if v is None else v, optimizer.eps)
                scale = np.broadcast_to(scale, coef.shape)
                total = _clipped_gradient_sum(Xb, r, clip_norm, scale=scale,
                                             fit_intercept=fit_intercept)
                extra["scale"] = scale
            elif squares:
                total, square_total = _clipped_gradient_sum(Xb, r, clip_norm,
                                                           row_norms=row_norms[start:start + b],
                                                           fit_intercept=fit_intercept, squares=True,
                                                           sample_weight=wb)
                extra.update(square_sum=_released(square_noise, t, square_total), square_noise=0.0)
            else:
                total = _clipped_gradient_sum(Xb, r, clip_norm, row_norms=row_norms[start:start + b],
                                             fit_intercept=fit_intercept, sample_weight=wb)
            if noise_variances is not None:
                extra["noise_variance"] = noise_variances[t]
            released = _released(noise, t, total)
            # Divided by the planned batch, also for an epoch's smaller last batch: its
            # noise is a full step's, and its own row count (2 rows on HMDA's 1,666)
            # multiplied that noise by b / rows (post-processing with a public number).
            grad, second, bias = private_step_inputs(private_moments, released, 0.0, b, **extra)
            if isinstance(optimizer, SGD):
                coef = optimizer.step(coef, grad)
            else:
                coef = optimizer.step(coef, grad, second, bias)
            if average_from is not None and t >= average_from:
                tail_sum += coef
                tail_count += 1
            if tail_release is not None and t >= tail_release[0]:
                tail_release[1].append(released)
            t += 1
            if progress is not None:
                progress.update()
    if average_from is None:
        return coef
    return coef, (tail_sum / tail_count if tail_count else coef)


def _released(noise, t: int, value):
    """Step t's release of ``value``: from a callable, or plus precomputed noise."""
    return noise(t, value) if callable(noise) else value + noise[t]


_DOC = """Private %(model)s trained with SGD, AdaGrad or Adam, with independent or correlated noise.

Mini-batch training (Ganesh et al. 2025, Algorithm 1) of a linear model with the
%(loss)s.
Each step clips every per-example gradient to ``clip_norm`` (the
intercept's coordinate included), adds Gaussian noise to their sum, and
feeds the result to the optimizer. The noise is independent across steps
(DP-SGD) or correlated by nu-DP-FTRL (Choquette-Choo et al. 2024, eq. 7), which cancels
much of it over the course of training. For AdaGrad and Adam the second
moment is made private in one of five ways (``private_moments``, see
:mod:`skdp.optim`).

Parameters
----------
%(epsilon)s
%(delta)s
optimizer : {'sgd', 'adagrad', 'adam'}, default='sgd'
private_moments : {'post_processing', 'bias_correction', 'independent', \
'jme', 'scale_then_privatize'}, default='post_processing'
    How AdaGrad and Adam get their private second moment (Ganesh et al. 2025
    Algorithms 5-8; Kalinin et al. 2025 Algorithm 2 for 'jme'); ignored by 'sgd',
    which has none.
noise : {'independent', 'nu'}, default='nu'
    'nu' is nu-DP-FTRL (Choquette-Choo et al. 2024), whose noise at step t
    is ``sum_k beta_k z_{t-k}`` with ``beta_k = (-1)^k binom(1/2, k)
    (1 - nu)^k`` (for nu > 0 generated by its buffered-linear-Toeplitz
    approximation, see Memory): most of it cancels in the iterates, so the
    default step can be larger. 'independent' is DP-SGD.
nu : float, default=0.01
    Damping of the 'nu' noise: 0 (the square root of the prefix-sum
    matrix) or in [1e-15, 1) (BLT noise; smaller values round its
    calibration to NaN). Choquette-Choo et al. 2024 suggests ``nu <=
    learning_rate * (smallest eigenvalue of the Hessian)``; tune it like the
    learning rate.
batch_size : int or None, default=None
    Rows per step (at most n; the last batch of an epoch, or of a
    ``partial_fit`` call, may be smaller: every step's noisy sum is divided
    by the planned batch size, so a small batch takes a short step with a
    full step's noise; feed ``partial_fit`` at least ``batch_size_`` rows
    per call).
    None plans it from the public n of the first call: ``n / 500`` rows,
    between 64 and 1024 (about 500 steps per pass on large tables).
epochs : int or None, default=None
    Passes over the data in ``fit``, in one fixed random order (see Notes).
    None plans two passes once the planned batch is above its floor of 64
    (n above 32,500 rows), one below: on small tables a second pass
    doubles every row's participation, which costs more noise than its
    steps gain (see *Defaults* in Notes).
learning_rate : float or None, default=None
    None means 0.01 for 'adam', 0.1 for 'adagrad', and for 'sgd'
    ``min(0.1 / c, 25 / (c T))`` for the T steps of the first call (``epochs *
    ceil(n / batch_size)``), c the bound on the loss's second derivative in
    its output (1 squared, 1/4 logistic, 1/2 multinomial). With a fixed
    horizon the best constant step is of order 1 / T: the iterates must
    travel a few time constants (the effective curvature of clipped
    gradients, ``c clip_norm / ||g||``, is often ~0.1 c for standardised
    data), and a longer step only adds noise. It is also at most
    ``max(0.02 / rho**2, 3 / (c T))`` with ``rho**2 = q (noise_std_ /
    (batch_size_ * clip_norm * max_weight))**2 * V / T`` (q coefficients), the
    squared ratio of the noise on one step's mean gradient to the largest
    mean clipped gradient, times the share ``V / T`` of it that accumulates
    (V the variance of the running sum of ``[C^{-1} Z]_t`` over the T steps:
    T for independent noise, far less for 'nu'): the noise the iterates
    accumulate grows like ``learning_rate * rho**2`` (``3 / (c T)`` keeps three
    time constants of curvature c in short runs). Small batches and many epochs get small
    steps, so training is stable at every batch size (at batch size 1 and
    epsilon of order 1 the noise then keeps the model near its start: use
    larger batches).
clip_norm : float or None, default=None
    Bound on the L2 norm of every per-example gradient. None buys it with
    ``clip_share`` of the budget: the private median of the per-example
    gradient norms at the start (coefficients 0) of the first call's rows,
    by a noisy binary search that counts rows whatever their weights
    (``clip_norm_``). Tables too small for a safe search raise a ValueError
    before any charge: declare ``clip_norm`` there.
clip_share : float, default=0.05
    Share of the budget's ``mu**2`` spent on the private clip norm (more on
    small tables, where the search needs it to be safe; at most 0.25).
average : float, default=0.5
    Share of each call's last steps whose iterates are averaged into
    ``coef_`` and ``intercept_`` (Polyak-Ruppert tail averaging, which
    averages out much of the noise the last iterate carries;
    post-processing). 0 reports the last iterate. Training continues from
    the last iterate.
momentum : float, default=0.0
    Heavy-ball momentum of 'sgd', in [0, 1).
betas : tuple of float, default=(0.9, 0.999)
    Decay rates of 'adam'.
eps_stability : float or None, default=None
    Floor of AdaGrad's and Adam's denominator, ``max(sqrt(v), eps)``, and
    the eps of scale-then-privatize, in [1e-100, 1e100]. None means the std
    of the noise on one step's mean gradient, ``noise_std_ / batch_size_``
    (public; brought into the same range): below it the private second
    moment cannot tell signal from noise, and the floor keeps a second
    moment debiased to zero from blowing up the step.
fit_intercept : bool, default=True
    Fit an intercept through a constant 1 column that is part of every
    clipped gradient.%(classes)s
bounds_X : tuple (lower, upper) or None, default=None
    Declared range of every feature (scalars, one value per feature, or
    Series or dicts keyed by column name), known without looking at the
    data: values are clipped to it and training runs on the columns
    mapped to [-1, 1] (as in :class:`DPLinearRegressionGD`; ``clip_norm``
    applies there); ``coef_`` and ``intercept_`` are on the
    original scale. Fixed by the first call of a stream.%(bounds_y)s
%(max_weight)s
verbose : int, default=0
    0 silent; 1 a few progress lines on stderr; 2 a progress bar (tqdm, if
    installed). It prints the steps done (public) and the time elapsed,
    which, like any running time, depends on the data: a side channel the
    guarantee does not cover (threat model).
n_steps : int or None, default=None
    Horizon of the 'nu' noise: the number of steps the stream may take,
    across ``fit`` and later ``partial_fit`` calls (the sensitivity grows
    with it). None means no horizon when ``nu > 0`` and the first call makes
    one pass (the column norms of C converge; for ``nu >= 0.01`` this costs
    under 1%% more noise than the horizon of a 100-step fit), and otherwise
    (``nu = 0``, or several epochs) the steps of the first call, after which
    ``partial_fit`` raises. Ignored with 'independent' noise, whose stream
    has no horizon.
%(accountant)s
%(random_state)s

Attributes
----------
coef_ : %(coef_shape)s
intercept_ : %(intercept_shape)s%(classes_attr)s
privacy_spent_ : PrivacySpent
    ``(epsilon, delta, mu)`` of the stream started by the last ``fit`` (or
    first ``partial_fit``).
noise_std_ : float
    Std of the noise on each step's sum of clipped gradients.
second_noise_std_ : float
    Std of the noise on each step's sum of squared clipped gradients
    ('independent' and 'jme'; 0 otherwise).
sensitivity_factor_ : float
    kappa: the replace-one sensitivity of the gradient stream is
    ``2 * clip_norm * kappa`` (see Notes).
batch_size_ : int
eps_stability_ : float
learning_rate_ : float
    The step size used (see ``learning_rate``).
clip_norm_ : float
    The clip norm used: declared, or private (see ``clip_norm``). A private
    one above ``5 sqrt(q)`` (q coefficients) warns that the columns (or the
    label) are far from unit scale: the default steps are sized for
    standardised columns and a centred label, and on raw columns they
    diverge (a calendar year beside a 0/1 column: R^2 of -6e12) or barely
    move, with no other sign.
horizon_ : int or None
    The 'nu' noise's horizon (None for independent noise or an unbounded
    'nu' stream).
n_iter_ : int
    Passes over data: ``epochs`` after ``fit``, plus one per ``partial_fit``.
n_steps_ : int
    Optimizer steps taken in the stream.
n_features_in_ : int
feature_names_in_ : ndarray of shape (n_features,)
    Only when X is a DataFrame with string column names.

See Also
--------
%(see_also)s

Notes
-----
**Guarantee.** Neighbouring datasets differ in one row replaced by another;
n is public. Each per-example gradient has norm at most ``clip_norm`` and
enters with its weight (at most ``max_weight``, 1 without weights), so a
replaced row changes a step's gradient sum by at most ``2 max_weight
clip_norm``; every noise std below is that of ``max_weight = 1`` times
``max_weight``. The
noise of step t is ``std [C^{-1} Z]_t`` with C = I ('independent') or the
nu-DP-FTRL Toeplitz matrix; the whole run is the matrix mechanism on the
(adaptively chosen) stream of gradient sums, mu-GDP for
``std = 2 clip_norm kappa / mu``. With ``clip_norm=None`` the private clip
norm's search (``clip_share`` of ``mu**2``) and the run compose exactly, and
mu above is the run's share. The rows are put in a random order (drawn
from ``random_state``, independent of the data) and every epoch follows it,
so row i takes part in steps ``i, i + k, ..., i + (E - 1) k`` (k steps per
epoch, E epochs), and ::

    kappa = sqrt(max_i sum_{s, t in P_i} |(C^T C)_{st}|)

(:func:`~skdp.mechanisms.cyclic_sensitivity_factor` over the horizon;
:func:`~skdp.mechanisms.toeplitz_sensitivity_factor` for an unbounded 'nu'
stream): ``sqrt(E)`` for independent noise (E-fold composition, exact), the
largest column norm of C for one epoch, and exact for the nu matrices,
whose C^T C is positive. The noise of 'independent' and 'jme' second moments uses the
same C and the same kappa (see :mod:`skdp.optim`). Shuffling amplification
is not used: the guarantee holds for every order.

**Streaming.** ``partial_fit`` makes one pass over new rows, each row in
one step (single participation), and continues the optimizer and the noise
stream where they stopped; no further budget is charged, because a new
row's sensitivity (one column of C) is at most that of the first call's rows.
This holds only if every row is new: **passing the same rows (or the same
people) twice breaks the guarantee.** With 'nu' noise the stream stops at
its horizon ``n_steps``. The first call fixes the calibration, the
optimizer and the horizon; later parameter changes are ignored until the
next ``fit`` (a warning names them). The live object holds the noise generator and the past noise
(with them the noise could be removed); pickles and copies leave them out
and cannot continue the stream.

**Departures**, all public choices: 'independent' and 'jme' privatise the
sum of squared per-example gradients rather than the square of the batch
mean (the same for batch size 1; :mod:`skdp.optim`); the stability
constant is a floor, not a sum; AdaGrad's scale-then-privatize scales by
its mean square gradient (Algorithm 8 is written for Adam); noise is
calibrated exactly in GDP.

**Defaults.** The clip norm is a private quantile, the batch and the
passes follow n, the step follows the noise, and ``coef_`` is the average
of the last half of the steps. Measured on x ~ N(0, I_p), ||theta|| = 1,
noise sd 1, 3 seeds (``python benchmarks/dpsgd_defaults.py``), the error of
the 'sgd' defaults over that of :class:`DPLinearRegressionGD`'s defaults
is 0.65 / 0.97 (epsilon 1 / 10) at n = 10^4, p = 10; 0.82 / 1.23 at
n = 10^4, p = 50; 1.17 / 1.04 at n = 10^5, p = 10; 0.79 / 1.06 at n =
10^5, p = 100; 1.10 / 1.19 at n = 10^6, p = 20 (before: 1.7-5x). **When
to prefer DP-GD:** below about 10^4 rows (at n = 1,000, p = 10, epsilon 10
DP-SGD's error is 3.9 times DP-GD's), and whenever you need confidence
intervals. DP-SGD is the choice for logistic models, for streams
(``partial_fit``) and for adaptive optimizers. On the 10 held-out
binary tables of ``python benchmarks/dpsgd_classifier_tables.py``
(standardised, 5 splits) the classifier's defaults lose a median of
0.56 / 0.27 (epsilon 1 / 10) of logistic regression's gain in test
log-loss over predicting the prior (0.83 / 0.80 with the step sized for
the squared loss). At epsilon 1, Caravan (85 columns) and ResumeNames
(45) score far worse than the prior, and the noise check below warns on
every such fit; Mroz (753 rows) has a fit worse than the prior without a
warning. The private clip norm, a
median at the start, clips the hard rows at the solution, a Huber-like
estimand (Fertility: 0.660 against logistic regression's 0.643, also at
epsilon 100).

**Convergence check.** ``fit`` warns (``ConvergenceWarning``) when the
last half of the steps still pulls one way: the sum S of their k released gradient
sums against the trace s**2 of their sample covariance, ``||S||**2 / (k
s**2)`` above Student's t quantile (k - 1 degrees of freedom, two-sided
level 0.001) squared. Settled, the released sums are (for SGD) ``b / lr``
times the increments of stationary iterates, whose sum telescopes, so the
statistic stays below its independent-steps bound (for AdaGrad and Adam,
whose steps are rescaled as they go, approximately: a settled AdaGrad run
was seen at 0.89 of the threshold); a travelling run adds
the same pull to every step. It is post-processing, has little power on
short runs (k below about 10) or where the noise dominates, and does not
run in ``partial_fit``, whose early calls travel by design. It does not
see a run that has settled on a noisy or clipped answer.

**Noise check** ('sgd' only). ``fit`` also warns when the averaged
slopes are on average within their noise: mean squared t-value below 2
(as :class:`DPLinearRegressionGD`), each slope's noise sd being
``learning_rate noise_std_ / batch_size_ sqrt(V)``, V the variance of
the averaged iterate's noise per unit step in a direction nothing pulls
back (public: the noise's coefficients, the momentum and the averaged
steps). With standardised columns the mean squared t-value is about the
spread of the predicted outputs over that of their noise. A curved
direction carries less noise than V says, so the check errs towards
warning on long runs; on short ones it is close. AdaGrad and Adam divide
by a private second moment, so their noise has no public scale and they
are not checked. It is post-processing and does not run in
``partial_fit``.

**Memory.** The 'nu' noise (nu > 0) is generated as buffered-linear-Toeplitz
noise (Dvijotham et al. 2024; :func:`~skdp.mechanisms.blt_parameters`): a
BLT matrix that matches the nu-DP-FTRL coefficients to within 1%%, whose
noise costs O(20 buffers x coefficients) time and memory per step, however
long the stream; the sensitivity is computed for that matrix exactly.
``nu=0`` (the undamped square root) keeps every past draw.

References
----------
Ganesh, McMahan & Thakurta (2025). On Design Principles for Private
Adaptive Optimizers. Choquette-Choo et al. (2024). Correlated Noise
Provably Beats Independent Noise for Differentially Private Learning.
Kalinin, Upadhyay & Lampert (2025). Continual Release Moment Estimation
with Differential Privacy.

Examples
--------
%(example)s
"""


def _accumulated_noise(kind: str, steps: int, nu: float) -> float:
    """Variance of the running sum of ``[C^{-1} Z]_t`` over ``steps`` steps (unit Z).

    ``steps`` for independent noise; for the nu family the prefix sums of the
    coefficients of C^{-1} (the exact Toeplitz matrix, within 1% of its BLT
    approximation).
    """
    if kind == "identity":
        return float(steps)
    return float(np.sum(np.cumsum(_noise_coefficients(kind, steps, nu)) ** 2))


def _noise_coefficients(kind: str, steps: int, nu: float) -> np.ndarray:
    """The coefficients of C^{-1}: step t's noise is ``sum_j beta_{t-j} Z_j``.

    The identity for independent noise; for the nu family the exact Toeplitz
    matrix (within 1% of its BLT approximation).
    """
    if kind == "identity":
        return np.r_[1.0, np.zeros(steps - 1)]
    return toeplitz_coefficients(steps, nu, inverse=True)


def _tail_noise_variance(kind: str, steps: int, start: int, nu: float, momentum: float) -> float:
    """Variance, per unit std1 and step size, of the noise in the mean of iterates ``start..steps``.

    SGD's iterate after step t carries ``-(lr / b) sum_{s <= t} v_s``, v the
    momentum-filtered noise ``v_s = momentum v_{s-1} + [C^{-1} Z]_s``, when
    nothing pulls it back (a flat direction); the mean of the iterates after
    steps ``start, ..., steps - 1`` (those averaged into ``coef_``) carries
    ``sum_j c_j Z_j``, whose variance, ``sum_j c_j**2``, is returned (times
    ``(lr std1 / b)**2`` it is the coordinate's noise variance). A curved
    direction is pulled back and carries less: this is its upper end for the
    short runs of small tables, a generous one for long runs. O(steps).
    """
    beta = _noise_coefficients(kind, steps, nu)
    if momentum:
        beta = lfilter([1.0], [1.0, -momentum], beta)
    g = np.cumsum(beta)  # weight of Z_j in the iterate after step t: g[t - j]
    G = np.r_[0.0, np.cumsum(g)]  # G[i] = g[0] + ... + g[i - 1]
    j = np.arange(steps)
    c = (G[steps - j] - G[np.clip(start - j, 0, None)]) / (steps - start)
    return float(np.sum(c * c))


#: Below this mean squared t-value of the slopes, the fit warns that the noise is as
#: large as the signal (DPLinearRegressionGD's threshold).
NOISE_T2_WARN = 2.0


def _noise_t2(state: dict, coef, steps: int, start: int, fit_intercept: bool) -> float | None:
    """Mean squared t-value of the averaged slopes against their public noise ('sgd' only)."""
    optimizer = state["optimizer"]
    if not isinstance(optimizer, SGD):  # a private preconditioner: no public noise scale
        return None
    var = _tail_noise_variance(state["kind"], steps, start, state["params"]["nu"],
                               optimizer.momentum)
    sd = optimizer.learning_rate * state["std1"] / state["batch_size"] * math.sqrt(var)
    slopes = coef[:-1] if fit_intercept else coef
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        t2 = float(np.mean(slopes ** 2) / sd ** 2)
    return t2 if np.isfinite(t2) else None


def _warn_noise(state: dict, classifier: bool) -> None:
    """Warn when the slopes are on average within their noise (post-processing; see _noise_t2)."""
    t2 = state.get("noise_t2")
    if t2 is None or not t2 < NOISE_T2_WARN:
        return
    warn("The privacy noise is as large as the signal: the slopes are on average within "
         f"{math.sqrt(t2):.2g} noise standard deviations of zero (mean squared t-value "
         f"{t2:.2g}, below {NOISE_T2_WARN:g}; the noise is that of steps with no pull back "
         "to the optimum, about the most a direction can carry). "
         + ("predict_proba() may do worse than predicting the class shares"
            if classifier else "predict() may do worse than predicting the mean")
         + ". Give more rows or budget, or fewer columns.", UserWarning)


class _BaseDPSGD(StreamStateMixin, DPEstimatorMixin, BaseEstimator):
    """Shared fitting of DPSGDRegressor and DPSGDClassifier (targets differ)."""

    _parameter_constraints: dict = {
        **DPEstimatorMixin._parameter_constraints,
        "optimizer": [StrOptions({"sgd", "adagrad", "adam"})],
        "private_moments": [StrOptions(set(PRIVATE_MOMENTS))],
        "noise": [StrOptions({"independent", "nu"})],
        "nu": [Interval(Real, 1e-15, 1, closed="left"), Options(Real, {0.0})],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "epochs": [Interval(Integral, 1, None, closed="left"), None],
        "learning_rate": [Interval(Real, 0, None, closed="neither"), None],
        "clip_norm": [Interval(Real, 1e-100, 1e100, closed="both"), None],
        "clip_share": [Interval(Real, 0, 1, closed="neither")],
        "average": [Interval(Real, 0, 1, closed="both")],
        "momentum": [Interval(Real, 0, 1, closed="left")],
        "betas": ["array-like"],
        "eps_stability": [Interval(Real, 1e-100, 1e100, closed="both"), None],
        "fit_intercept": ["boolean"],
        "n_steps": [Interval(Integral, 1, None, closed="left"), None],
        "max_weight": [Interval(Real, 0, MAX_WEIGHT, closed="right")],
        "verbose": ["verbose"],
        "bounds_X": ["array-like", None],
    }

    _DEFAULT_LEARNING_RATE = {"sgd": 0.1, "adagrad": 0.1, "adam": 0.01}

    def _epochs(self, n: int) -> int:
        """``epochs``, or the plan's: two passes once the batch is above its floor."""
        if self.epochs is not None:
            return int(self.epochs)
        return 2 if n // PLAN_ROWS_PER_BATCH > PLAN_MIN_BATCH else 1

    # -- the first call: plan, calibrate, charge ------------------------------

    def _stream_plan(self, n: int, epochs: int) -> tuple[int, int, int, str, int | None]:
        """(batch, steps per epoch, steps, noise kind, horizon) of a stream whose first call has n rows.

        Public quantities only; raises if the first call alone outgrows ``n_steps``.
        """
        b = min(int(self.batch_size), n) if self.batch_size is not None else planned_batch(n)
        per_epoch = -(-n // b)
        steps = epochs * per_epoch
        # nu-DP-FTRL noise comes from its BLT approximation (O(buffers) state
        # per step); nu = 0, the undamped square root, only exactly.
        kind = "identity" if self.noise == "independent" else ("blt" if self.nu > 0 else "nu")
        horizon = None
        if kind != "identity" and self.n_steps is not None:
            horizon = int(self.n_steps)
            if steps > horizon:
                raise ValueError(f"This call takes {steps} steps, more than the horizon "
                                 f"n_steps={horizon}.")
        elif kind != "identity" and (epochs > 1 or self.nu == 0):
            horizon = steps
        return b, per_epoch, steps, kind, horizon

    def _check_call_sizes(self, sizes: list) -> None:
        """Raise, before any release, if ``partial_fit`` calls of ``sizes[i]`` rows outgrow the horizon.

        For ``partial_fit`` over Dask partitions (one pass over each): the
        sizes are public (the layout), and a partition past the correlated
        noise's horizon must fail before the first one is released, not
        after (a retry would release the earlier ones twice).
        """
        if not sizes:
            return
        if self._stream_started():
            state = self._state
            b, horizon, taken, later = state["batch_size"], state["horizon"], state["t"], sizes
        else:
            b, _, taken, _, horizon = self._stream_plan(int(sizes[0]), 1)
            later = sizes[1:]
        steps = taken + sum(-(-int(m) // b) for m in later)
        if horizon is not None and steps > horizon:
            raise ValueError(
                f"The correlated-noise stream has horizon n_steps={horizon}; these "
                f"{len(sizes)} partitions would take it to {steps} steps. Nothing was "
                "released: set n_steps (the total number of steps) before the first call, "
                "or pass fewer rows.")

    def _start(self, X, Y, epochs: int, W: float) -> dict:
        """Plan, calibrate and charge a training stream; W bounds a row's weight.

        X and Y are the first call's rows on the training scale; they are read
        only by the private clip-norm search (``clip_norm=None``).
        """
        n = X.shape[0]
        q = self.n_features_in_ + int(self.fit_intercept)
        shape = (q,) if Y.ndim == 1 else (q, Y.shape[1])
        b, per_epoch, steps, kind, horizon = self._stream_plan(n, epochs)
        if kind == "blt" and horizon is None:  # one participation on an unbounded stream
            kappa = blt_sensitivity_factor(*blt_parameters(self.nu))
        else:
            kappa = cyclic_sensitivity_factor(kind, horizon or steps, per_epoch, epochs, nu=self.nu)
        variant = "post_processing" if self.optimizer == "sgd" else self.private_moments
        mu = self._budget_mu()
        if self.optimizer == "adam":  # invalid betas raise here, before any charge
            Adam(1.0, betas=tuple(self.betas), eps=1.0)
        planned_clip = self.clip_norm is None
        # Raises before any charge on a table too small for a safe search.
        clip_share = _clip_share(n, mu, self.clip_share) if planned_clip else 0.0
        mu_clip = mu * math.sqrt(clip_share)
        mu_train = math.sqrt(mu * mu - mu_clip * mu_clip)
        # The noise of a mean gradient relative to the clip does not depend on
        # the clip: the step plan is public whatever the clip turns out to be.
        unit1, _ = moment_noise_stds(variant, mu_train, 1.0, int(np.prod(shape)), kappa)
        lr = self.learning_rate
        if lr is None and self.optimizer == "sgd":
            rho2 = np.prod(shape) * (unit1 / b) ** 2  # noise / clip of a mean gradient
            # What the iterates accumulate is the running sum of the noise:
            # T times a step's variance for independent noise, far less for
            # correlated noise (a public constant of C).
            rho2 *= _accumulated_noise(kind, steps, self.nu) / steps
            # The iterates' travel scales with the loss's curvature bound; the
            # noise term does not (the loss the noise costs is curvature x variance).
            c = _CURVATURE[self._loss(Y)]
            lr = min(0.1 / c, _HORIZON_STEPS / (c * steps), max(_NOISE_STEP / rho2, 3.0 / (c * steps)))
        elif lr is None:
            lr = self._DEFAULT_LEARNING_RATE[self.optimizer]
        spent, rng = self._charge(mu)  # before any noise is drawn
        rng_order, rng1, rng2, rng_clip = spawn_rngs(rng, 4)
        clip = (_private_clip(X, Y, self._loss(Y), self.fit_intercept, mu_clip, rng_clip)
                if planned_clip else float(self.clip_norm))
        if planned_clip:
            _warn_scale(clip, int(shape[0]), self._loss(Y))
        zeta = clip * W  # bound on w_i clip(g_i)
        std1, std2 = moment_noise_stds(variant, mu_train, zeta, int(np.prod(shape)), kappa)
        eps = (self.eps_stability if self.eps_stability is not None
               else min(max(std1 / b, 1e-100), 1e100))  # the documented range
        if self.optimizer == "sgd":
            optimizer = SGD(lr, momentum=self.momentum)
        elif self.optimizer == "adagrad":
            optimizer = AdaGrad(lr, eps=eps)
        else:
            optimizer = Adam(lr, betas=tuple(self.betas), eps=eps)
        # The whole run is one (correlated) Gaussian mechanism: the gradient
        # sums move by 2 zeta kappa (kappa: the participations' factor). With a
        # noisy second moment, the pair is calibrated jointly to mu_train.
        record_release("DP-SGD gradient stream",
                       2.0 * zeta * kappa if not std2 else mu_train * std1, std1, W)
        params = self.get_params(deep=False)
        params.pop("accountant")
        return dict(params=params, variant=variant, kind=kind, batch_size=b, horizon=horizon,
                    kappa=kappa, lr=lr,
                    W=W, clip=clip, clip_share=clip_share,
                    std1=std1, std2=std2, eps=eps, optimizer=optimizer, spent=spent,
                    # Secure mode: the run's mu, and each stream's share of its grid.
                    grid=dict(mechanism_mu=mu_train, share=math.sqrt(0.5) if std2 else 1.0),
                    rng_order=rng_order, noise1=CorrelatedNoise(kind, shape, rng1, nu=self.nu),
                    noise2=CorrelatedNoise(kind, shape, rng2, nu=self.nu) if std2 else None,
                    coef=np.zeros(shape), t=0, n_iter=0)

    # -- one call: draw the noise, run the steps -------------------------------

    def _run(self, X, Y, state: dict, epochs: int, sample_weight=None) -> dict:
        prm, b = state["params"], state["batch_size"]
        n = X.shape[0]
        steps = epochs * -(-n // b)
        t0 = state["t"]
        if state["horizon"] is not None and t0 + steps > state["horizon"]:
            raise ValueError(
                f"The correlated-noise stream has horizon n_steps={state['horizon']} and has taken "
                f"{t0} steps; these {n} rows need {steps} more. Set n_steps (the total number of "
                "steps) before the first call to continue a stream with partial_fit.")
        begin_draws(state)  # cleared by the returned state, if this call completes
        order = state["rng_order"].permutation(n)
        if is_secure_mode():  # each step released on its grid, in order
            def stream(name):
                source, std = state[f"noise{name}"], state[f"std{name}"]
                return lambda t, value: source.release(value[None], std, **state["grid"])[0]

            noise, square_noise = stream(1), stream(2) if state["noise2"] else None
        else:
            noise = state["std1"] * state["noise1"].next(steps)
            square_noise = state["std2"] * state["noise2"].next(steps) if state["noise2"] else None
        variances = None
        if state["variant"] == "bias_correction":
            variances = state["std1"] ** 2 * state["noise1"].step_variances(t0, t0 + steps)
        w = None if sample_weight is None else sample_weight[order]
        progress = Progress(prm["verbose"], steps, type(self).__name__)
        average_from = min(steps - 1, int(steps * (1.0 - prm["average"])))
        # The settling test reads the last half of the call's steps, whatever share is
        # averaged (with average=1 the first half still travels from the start).
        tail = _TailSums()
        with np.errstate(over="ignore", invalid="ignore"):
            coef, out = dp_sgd(X[order], Y[order], state["coef"], loss=self._loss(Y),
                               optimizer=state["optimizer"], private_moments=state["variant"],
                               batch_size=b, clip_norm=state["clip"], noise=noise,
                               square_noise=square_noise, noise_variances=variances,
                               n_epochs=epochs, fit_intercept=prm["fit_intercept"], sample_weight=w,
                               progress=progress, average_from=average_from,
                               tail_release=(steps // 2, tail))
        progress.close()
        if not (np.all(np.isfinite(coef)) and np.all(np.isfinite(out))):
            raise FloatingPointError(
                "Training produced non-finite parameters (floating-point overflow). Lower the "
                "learning rate, or raise eps_stability for 'adagrad'/'adam', and call fit again "
                "(a stream does not continue after a failed call).")
        return {**state, "coef": coef, "coef_out": out, "t": t0 + steps,
                "n_iter": state["n_iter"] + epochs, "failed": False,
                "pull": tail.pull(),
                "noise_t2": None if t0 else _noise_t2(state, out, steps, average_from,
                                                       prm["fit_intercept"])}

    def _store(self, state: dict) -> None:
        p = self.n_features_in_
        fi = state["params"]["fit_intercept"]
        M, offset = original_scale_map(state["scaling"], fi)
        out = state["coef_out"]
        coef = M @ out + (offset if out.ndim == 1 else offset[:, None])
        self._set_coef(coef[:p], coef[p] if fi else np.zeros(coef.shape[1:]))
        self.privacy_spent_ = state["spent"]
        self.noise_std_, self.second_noise_std_ = state["std1"], state["std2"]
        self.sensitivity_factor_ = state["kappa"]
        self.batch_size_, self.eps_stability_ = state["batch_size"], state["eps"]
        self.clip_norm_ = state["clip"]
        self.learning_rate_ = state["lr"]
        self.horizon_ = state["horizon"]
        self.n_iter_, self.n_steps_ = state["n_iter"], state["t"]
        self._state = state

    def _fit(self, X, Y, epochs: int, first: bool, sample_weight=None):
        if first:
            W = weight_bound(sample_weight, self.max_weight)
            w = check_weights(sample_weight, X.shape[0], self.max_weight)
        else:  # the first call fixed the weight bound of the stream's noise
            check_stream_continues(self._state)
            W = self._state["W"]
            check_stream_weights(sample_weight, X.shape[0], self._state["params"]["max_weight"], W)
            w = check_weights(sample_weight, X.shape[0], W)
        # Whether weights were passed (public), not their values: unit weights come back
        # from check_weights as None, and a rule on w would reject a neighbour.
        # A later call reads the stream's own variant ('post_processing' for 'sgd'),
        # not set_params since.
        if sample_weight is not None and (
                self.optimizer != "sgd" and self.private_moments == "scale_then_privatize"
                if first else self._state["variant"] == "scale_then_privatize"):
            raise ValueError("sample_weight is not supported with "
                             "private_moments='scale_then_privatize'.")
        if first:
            bounds_y = getattr(self, "bounds_y", None)
            names = getattr(self, "feature_names_in_", None)
            scaling = make_scaling(check_bounds(self.bounds_X, X.shape[1], "bounds_X", names, True),
                                   check_bounds(bounds_y, 1, "bounds_y"), X.shape[1],
                                   self.fit_intercept)
            X, Y = scaling.transform(X, Y)
            # A new stream: a fit that fails past its charge leaves no old one to continue.
            self.__dict__.pop("_state", None)
            state = {**self._start(X, Y, epochs, W), "scaling": scaling,
                     "secure": is_secure_mode()}
        else:
            state = self._state
            X, Y = state["scaling"].transform(X, Y)
        self._store(self._run(X, Y, state, epochs, w))
        return self


class DPSGDRegressor(LinearPredictMixin, RegressorMixin, _BaseDPSGD):
    __doc__ = _DOC % {
        **PRIVACY_PARAMS_DOC, "model": "linear regression", "loss": "squared loss "
        "``(x . w + b - y)**2 / 2``", "classes": "", "classes_attr": "",
        "bounds_y": """
bounds_y : tuple (lower, upper) or None, default=None
    Declared range of the label, used the same way.""",
        "coef_shape": "ndarray of shape (n_features,)", "intercept_shape": "float",
        "see_also": "DPLinearRegressionGD : Full-batch DP-GD with confidence intervals.\n"
                    "DPAMBSSGDRegressor : One pass with private adaptive clipping.",
        "example": """>>> import numpy as np
>>> from skdp.linear_model import DPSGDRegressor
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(20_000, 3))
>>> y = X @ np.array([1.0, -0.5, 0.25]) + 0.1 * rng.normal(size=20_000)
>>> reg = DPSGDRegressor(epsilon=1.0, random_state=0).fit(X, y)
>>> reg.coef_.round(2)
array([ 1.  , -0.5 ,  0.25])
>>> reg.batch_size_, reg.n_iter_  # planned from n: 20,000 / 500 is below the floor of 64
(64, 1)"""}

    _parameter_constraints: dict = {**_BaseDPSGD._parameter_constraints,
                                    "bounds_y": ["array-like", None]}

    def __init__(self, *, epsilon=1.0, delta=1e-6, optimizer="sgd",
                 private_moments="post_processing", noise="nu", nu=0.01, batch_size=None,
                 epochs=None, learning_rate=None, clip_norm=None, clip_share=0.05, average=0.5,
                 momentum=0.0, betas=(0.9, 0.999),
                 eps_stability=None, fit_intercept=True, n_steps=None, bounds_X=None,
                 bounds_y=None, max_weight=1.0, verbose=0, accountant=None, random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.optimizer = optimizer
        self.private_moments = private_moments
        self.noise = noise
        self.nu = nu
        self.batch_size = batch_size
        self.epochs = epochs
        self.learning_rate = learning_rate
        self.clip_norm = clip_norm
        self.clip_share = clip_share
        self.average = average
        self.momentum = momentum
        self.betas = betas
        self.eps_stability = eps_stability
        self.fit_intercept = fit_intercept
        self.n_steps = n_steps
        self.bounds_X = bounds_X
        self.bounds_y = bounds_y
        self.max_weight = max_weight
        self.verbose = verbose
        self.accountant = accountant
        self.random_state = random_state

    @staticmethod
    def _loss(Y):
        return "squared"

    def _set_coef(self, coef, intercept):
        self.coef_, self.intercept_ = coef, float(intercept)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Train for ``epochs`` passes, starting a fresh stream (and a fresh charge).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Non-negative weights at most ``max_weight``, checked before any
            budget is charged.

        Returns
        -------
        self : DPSGDRegressor
        """
        X, y = validate_private(self, X, y, y_numeric=True, dtype=np.float64)
        self._fit(X, y, self._epochs(X.shape[0]), first=True, sample_weight=sample_weight)
        _warn_unsettled(self._state, type(self).__name__, False)
        _warn_noise(self._state, False)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, sample_weight=None):
        """One pass over new rows, continuing the stream (no further budget; see Notes).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Weights at most the ``max_weight`` of the first call.

        Returns
        -------
        self : DPSGDRegressor
        """
        if is_dask(X):  # one pass over the partitions, one in memory at a time
            return partial_fit_over_partitions(self.partial_fit, X, y,
                                               sample_weight=sample_weight)
        first = not self._stream_started()
        X, y = validate_private(self, X, y, y_numeric=True, reset=first, dtype=np.float64)
        return self._fit(X, y, 1, first=first, sample_weight=sample_weight)


class DPSGDClassifier(ClassifierMixin, _BaseDPSGD):
    __doc__ = _DOC % {
        **PRIVACY_PARAMS_DOC, "model": "logistic regression",
        "loss": "logistic loss (binary) or multinomial logistic loss (three or more classes)",
        "bounds_y": "",
        "classes": """
classes : array-like or None, default=None
    The labels, known in advance (public). None reads them from ``y`` in the
    first call, which releases which labels occur in the data outside the
    guarantee (a :class:`~skdp.exceptions.PrivacyLeakWarning` says so).
    Labels outside ``classes`` raise, also in a later ``partial_fit`` call
    after the charge: with declared classes that is a schema error, but
    with ``classes=None`` the set came from the first call's rows, so the
    error tells whether a later batch holds a label they lacked (the same
    warning covers it).""",
        "classes_attr": """
classes_ : ndarray of shape (n_classes,)""",
        "coef_shape": "ndarray of shape (1, n_features) or (n_classes, n_features)",
        "intercept_shape": "ndarray of shape (1,) or (n_classes,)",
        "see_also": "DPSGDRegressor : The same training for the squared loss.",
        "example": """>>> import numpy as np
>>> from skdp.linear_model import DPSGDClassifier
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(20_000, 2))
>>> y = (X @ np.array([2.0, -1.0]) + rng.logistic(size=20_000) > 0).astype(int)
>>> clf = DPSGDClassifier(epsilon=1.0, classes=[0, 1], optimizer="adam", random_state=0)
>>> round(clf.fit(X, y).score(X, y), 2)
0.79"""}

    _parameter_constraints: dict = {**_BaseDPSGD._parameter_constraints,
                                    "classes": ["array-like", None]}

    def __init__(self, *, epsilon=1.0, delta=1e-6, optimizer="sgd",
                 private_moments="post_processing", noise="nu", nu=0.01, batch_size=None,
                 epochs=None, learning_rate=None, clip_norm=None, clip_share=0.05, average=0.5,
                 momentum=0.0, betas=(0.9, 0.999),
                 eps_stability=None, fit_intercept=True, classes=None, n_steps=None,
                 bounds_X=None, max_weight=1.0, verbose=0, accountant=None, random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.optimizer = optimizer
        self.private_moments = private_moments
        self.noise = noise
        self.nu = nu
        self.batch_size = batch_size
        self.epochs = epochs
        self.learning_rate = learning_rate
        self.clip_norm = clip_norm
        self.clip_share = clip_share
        self.average = average
        self.momentum = momentum
        self.betas = betas
        self.eps_stability = eps_stability
        self.fit_intercept = fit_intercept
        self.classes = classes
        self.n_steps = n_steps
        self.bounds_X = bounds_X
        self.max_weight = max_weight
        self.verbose = verbose
        self.accountant = accountant
        self.random_state = random_state

    @staticmethod
    def _loss(Y):
        return "log" if Y.ndim == 1 else "multinomial"

    def _set_coef(self, coef, intercept):
        self.coef_ = np.atleast_2d(coef.T).copy() if coef.ndim == 2 else coef[None, :].copy()
        self.intercept_ = np.atleast_1d(np.asarray(intercept, dtype=float)).copy()

    def _label_set(self, y, classes):
        """The public label set: given, or read from y with a PrivacyLeakWarning."""
        if classes is None:
            classes = self.classes
        declared = classes is not None
        if classes is None:
            warn("classes=None: the label set is read from y, which releases which "
                          "labels occur in the private data (and a later partial_fit call "
                          "refuses labels outside that set, which tells whether its rows "
                          "hold a new one). Pass classes=[...] (public) to avoid this.",
                          PrivacyLeakWarning)
            classes = np.unique(y)
        classes = np.unique(np.asarray(classes))
        if classes.shape[0] < 2:
            k = classes.shape[0]
            where = (f"the declared classes={classes.tolist()} hold" if declared
                     else "the label set has")
            raise ValueError(f"DPSGDClassifier needs at least two classes; {where} "
                             f"{k} class{'es' if k != 1 else ''}.")
        return classes

    def _probe_labels(self, y) -> None:
        """The checks of ``fit`` that read only the labels, for a private search's dry run.

        A search dry-runs each candidate before its charge; in a Pipeline whose
        earlier steps' output it cannot foresee, this still runs (a training
        part with one class fails there, not after the charge).
        """
        self._label_set(np.asarray(y).ravel(), None)

    def _encode(self, y):
        """Targets for the loss: 0/1 floats (binary) or one-hot rows; labels must be known."""
        idx = np.searchsorted(self.classes_, y)
        idx = np.clip(idx, 0, self.classes_.shape[0] - 1)
        unknown = self.classes_[idx] != y
        if np.any(unknown):
            # Name the declared (public) classes, never the offending labels.
            raise ValueError(f"y has labels that are not in classes {self.classes_.tolist()}; "
                             "every label must be one of the declared classes.")
        if self.classes_.shape[0] == 2:
            return idx.astype(np.float64)
        return np.eye(self.classes_.shape[0])[idx]

    def _validate(self, X, y, reset):
        X, y = validate_private(self, X, y, labels=True, reset=reset, dtype=np.float64)
        check_classification_targets(y)
        return X, y

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Train for ``epochs`` passes, starting a fresh stream (and a fresh charge).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Non-negative weights at most ``max_weight``, checked before any
            budget is charged.

        Returns
        -------
        self : DPSGDClassifier
        """
        X, y = self._validate(X, y, reset=True)
        check_weights(sample_weight, X.shape[0], self.max_weight)
        self.classes_ = self._label_set(y, None)
        self._fit(X, self._encode(y), self._epochs(X.shape[0]), first=True,
                  sample_weight=sample_weight)
        _warn_unsettled(self._state, type(self).__name__, True)
        _warn_noise(self._state, True)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        """One pass over new rows, continuing the stream (no further budget; see Notes).

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        classes : array-like or None, default=None
            The label set, for the first call (as the ``classes`` parameter);
            later calls must leave it None or pass the same labels.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Weights at most the ``max_weight`` of the first call.

        Returns
        -------
        self : DPSGDClassifier
        """
        if is_dask(X):  # one pass over the partitions, one in memory at a time
            if classes is None:
                classes = self.classes_ if self._stream_started() else self.classes
            if classes is None:
                raise ValueError("With a Dask X, declare classes=[...]: every partition's labels "
                                 "are checked against them before the first release.")
            return partial_fit_over_partitions(self.partial_fit, X, y,
                                               sample_weight=sample_weight, classes=classes)
        first = not self._stream_started()
        X, y = self._validate(X, y, reset=first)
        if first:
            self.classes_ = self._label_set(y, classes)
        elif classes is not None and not np.array_equal(np.unique(classes), self.classes_):
            raise ValueError(f"classes={list(classes)} differs from the stream's classes "
                             f"{self.classes_.tolist()}.")
        return self._fit(X, self._encode(y), 1, first=first, sample_weight=sample_weight)

    def decision_function(self, X):
        """Linear scores (post-processing: no budget).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) for two classes, else (n_samples, n_classes)
        """
        check_is_fitted(self)
        X = validate_new_rows(self, X, reset=False, dtype=np.float64)
        scores = X @ self.coef_.T + self.intercept_
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict_proba(self, X):
        """Class probabilities from the private model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        scores = self.decision_function(X)
        if scores.ndim == 1:
            p1 = expit(scores)
            return np.column_stack([1.0 - p1, p1])
        return softmax(scores, axis=1)

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X):
        """Most probable class.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        scores = self.decision_function(X)
        idx = (scores > 0).astype(int) if scores.ndim == 1 else scores.argmax(axis=1)
        return self.classes_[idx]
