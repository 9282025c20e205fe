"""DP-GD for linear regression with confidence intervals (Brown et al. 2024), preconditioned privately."""

from __future__ import annotations

import math
from functools import partial
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from skdp.base import (
    MAX_WEIGHT,
    PRIVACY_PARAMS_DOC,
    DPEstimatorMixin,
    LinearPredictMixin,
    weight_bound,
)
from skdp.clipping import quantile_statistics, squared_loss_residuals
from skdp.clipping._clip import _clipped_gradient_sum  # X capped by validate_private
from skdp.exceptions import PrivacyLeakWarning
from skdp.linear_model._ar1_standard_error import (
    ar1_directions,
    contrast_z,
    pilot_variance,
    weighted_covariance,
)
from skdp.linear_model._bounds import check_bounds, make_scaling, original_scale_map
from skdp.linear_model._clipped_least_squares import clipped_least_squares
from skdp.linear_model._intervals import (
    CI_METHODS,
    estimate_weights,
    halves_contrast,
    mean_standard_error,
    split_estimates,
    t_bounds,
    t_interval,
)
from skdp.linear_model._preconditioner import (
    gram_preconditioner,
    max_steps,
    noise_norm,
    offset_columns,
    offset_message,
    plain_time,
    plan_steps,
)
from skdp.linear_model._private_bounds import (
    GRID,
    private_quantile,
    private_row_label_bounds,
    quantile_level,
    safe_search_mu,
    tail_factor,
)
from skdp.linear_model._sandwich import (
    private_meat_and_clipping,
    projected_row_norms,
    sandwich_covariance,
)
from skdp.linear_model._weights import check_weights
from skdp.mechanisms import gaussian_release, private_gram
from skdp.utils._dask import is_dask, read
from skdp.utils._progress import Progress
from skdp.utils._rows import sum_rows
from skdp.utils._sklearn import Interval, StrOptions, _fit_context
from skdp.utils._validation import (
    _cap,
    check_sample_weight,
    validate_new_rows,
    validate_private,
)
from skdp.utils._warnings import warn

__all__ = ["DPLinearRegressionGD", "dp_gradient_descent"]

#: Most steps the plan takes: n_iter <= max(23, WORK / (n * q)) (about 2 s of
#: gradient steps on this 2-core machine). A plan cut by it relies on the
#: autocorrelation-guarded standard error and the drift check.
WORK = 1.5e9
#: Bytes of X per block of the gradient loop (~2 MB): a block stays in cache
#: between the two matrix-vector products, so each step reads X from memory once.
GD_BLOCK_BYTES = 1 << 21


def _block_rows(p: int) -> int:
    return int(min(65536, max(512, GD_BLOCK_BYTES // (8 * max(p, 1)))))
#: The clip norm is at least this multiple of the private quantile of the gradient norms.
CLIP_FACTOR = 2.0
#: Share of ``clip_share`` spent on the clip-norm quantile (the rest checks the clipping).
#: Half: the count's noise (1 / mu_check rows) decides which clipping it can see.
CLIP_QUANTILE_PART = 0.5
#: Noise-norm margin (entry stds beyond 2 sqrt(q)) of the Gram's cap on the AR(1)
#: coefficients of the model-based standard errors, and of the test whether the Gram
#: resolves any direction at all (the ridge uses 6).
CURVATURE_MARGIN = 3.0
#: Steps without a preconditioner (``gram_share=0``, or a Gram matrix that resolves no
#: direction), whose plan needs the Gram matrix.
PLAIN_STEPS = 200
#: The plain run's total time ``K = steps * step`` lies in this range: at most 50
#: (Brown et al. 2024's step 0.25 for unit feature covariance over 200 steps), less
#: where the noise would make the gradient norms wander past half the clip norm
#: (:func:`~skdp.linear_model._preconditioner.plain_time`), and at least 20: its
#: burn-in and ten batches of 1.5 time units each.
PLAIN_TIME = (20.0, 50.0)
#: The largest plain step (Brown et al. 2024's, for unit feature covariance).
PLAIN_MAX_STEP = 0.25
#: The plain run's burn-in, in time units (step times steps): e^-5 of the start's error
#: is left in a unit-curvature direction; 20 steps at step 0.25, 50 at 0.1.
PLAIN_BURN_TIME = 5.0
#: Share of the start's error an estimate may keep in a direction (``g`` of
#: :func:`weighted_covariance`) before a plan cut by the noise warns. The AR(1) model
#: puts the start's error at about one standard error of the estimate or less on the
#: interval suite's tables, and it can be low (a pilot shrunk along a direction the Gram
#: cannot resolve): 5% of ten standard errors is half of one.
START_LEFT = 0.05
#: Family-wise false-alarm rate of the drift check where the AR(1) model holds.
DRIFT_LEVEL = 0.01
#: The noise warning fires when the slopes' mean squared t-value is below this. An
#: unbiased estimate with standard error se has E[t**2] = 1 + (theta / se)**2, so a mean
#: below 2 estimates the coefficients at less than one standard error on average: the
#: noise is as large as the signal, and so is its share of a prediction's error.
NOISE_T2 = 2.0
#: The clipping check counts a row only if it stays clipped when its residual moves
#: towards 0 by a simultaneous (1 - CHECK_LEVEL) bound on the estimate's noise
#: (:func:`check_margin`).
CHECK_LEVEL = 0.01
#: Share of ``gram_share`` spent on the Gram row bound when none is declared.
NORM_QUANTILE_PART = 0.25


#: The releases of one fit, in the order they are drawn: (key in ``privacy_shares_``,
#: what is released, its replace-one L2 sensitivity). W bounds the weights, C is
#: the clip norm, n the public number of rows. Everything else the fit computes
#: (the preconditioner, the step plan, the intervals, the warnings) is
#: post-processing of these.
RELEASES = (
    ("gram_bound", "high quantiles of the row norms ||(x_i, 1)|| and labels |y_i|, a noisy "
     "binary search on a public grid (only without a declared bound)",
     "sqrt(2) per comparison (two counts of unweighted rows)"),
    ("gram", "Gram matrix of the rows (z_i / B, y_i / B_y), each clipped to norm sqrt(2)",
     "2 sqrt(2) W (sqrt(2) W b**2 for rows of norm b)"),
    ("clip_quantile", "a high quantile of the gradient norms ||P z_i r_i|| at the pilot, a "
     "noisy binary search (only with clip_norm=None)", "1 per comparison (unweighted rows)"),
    ("gradient_descent", "T means of the n clipped gradients clip(P z_i r_i w_i, C)",
     "2 W C / n per step"),
    ("population", "the meat sum_i c_i c_i^T of the clipped gradients at the estimate",
     "sqrt(2) W**2 C**2"),
    ("clip_check", "count of the gradients clipped at the estimate beyond its own noise "
     "(each residual moved towards 0 by a simultaneous 99% bound on the estimate's noise, "
     "check_margin)", "1"),
)


class _Data(NamedTuple):
    """Validated inputs on the fitting scale, and the public quantities of the plan."""

    X: object
    y: object
    w: object
    W: float
    n: int
    p: int
    q: int
    bx: object
    by: object
    declared: bool
    eta: float | None  # the step, set once the Gram matrix is released
    scaling: object


class _GramRelease(NamedTuple):
    """Releases 1-2 and what follows from them: the preconditioner and the rows' ``||P z_i||``.

    ``pre`` is None without a Gram matrix, and when it resolves no direction.
    """

    pre: object
    root: object
    norm_bound: float | None
    label_bound: float
    entry_std: float | None
    leverage: object
    unresolved: list
    warned: dict  # the collinearity warning's message under 'unresolved', if raised
    row_moment: float | None  # trace of A_hat, the rows' mean ||z_i||**2 (None without one)


class _Steps(NamedTuple):
    """Release 4: the runs of iterates, the estimates they give, and their plan."""

    iterate_runs: list
    estimates: np.ndarray
    estimates_orig: np.ndarray
    scale_map: np.ndarray
    theta0: np.ndarray
    runs: int
    per_run: int
    burn: int
    total: int
    noise_std: float
    wanted: int | None


def _gradient_block(Xb, yb, wb, lev, *, theta, clip_norm, fit_intercept):
    """Sum over one block of the clipped per-example gradients ``w_i f_i r_i z_i``."""
    r = squared_loss_residuals(Xb, yb, theta, fit_intercept=fit_intercept)
    return _clipped_gradient_sum(Xb, r, clip_norm, row_norms=lev, fit_intercept=fit_intercept,
                                sample_weight=wb)


def _leverage(X, root, fit_intercept):
    """``||P z_i||`` for every row (``z_i = (x_i, [1])``; P = I when root is None).

    For a Dask X a lazy array with X's partitions (persisted with X by the
    caller); in memory computed block by block.
    """
    block = partial(projected_row_norms, root=root, fit_intercept=fit_intercept)
    if is_dask(X):
        return X.map_blocks(block, drop_axis=1, dtype=np.float64)
    n, p = X.shape
    block_rows = _block_rows(p)
    out = np.empty(n)
    for start in range(0, n, block_rows):
        out[start:start + block_rows] = block(X[start:start + block_rows])
    return out


def dp_gradient_descent(X, y, *, clip_norm: float, noise_std: float, learning_rate: float,
                        n_iter: int, rng: np.random.Generator, fit_intercept: bool = True,
                        theta0=None, preconditioner=None, sample_weight=None,
                        progress=None, max_weight: float = 1.0) -> np.ndarray:
    """Full-batch DP gradient descent for least squares (Brown et al. 2024, Algorithm 1).

    At each step the per-example gradients ``g_i = w_i P z_i r_i`` (``z_i =
    (x_i, 1)`` with ``fit_intercept``, residual ``r_i = z_i . theta - y_i``,
    P the preconditioner, weight ``w_i``) are clipped to ``clip_norm``, summed,
    divided by the public n, and N(0, noise_std**2 I) is added; then
    ``theta_t = theta_{t-1} - learning_rate * P (g_t + z_t)``. In the
    coordinates ``w = P^{-1} theta`` this is plain DP-GD on the rows ``P z_i``.
    Each step reads X once, block by block
    (:func:`skdp.utils._rows.sum_rows`).

    Parameters
    ----------
    X : ndarray of shape (n, p)
    y : ndarray of shape (n,)
    clip_norm : float
    noise_std : float
        Std of the noise added to the mean clipped gradient (lambda in the
        paper). The mean has replace-one sensitivity ``2 W clip_norm / n``
        (W bounds the weights), so the n_iter steps are
        ``sqrt(n_iter) * 2 W clip_norm / (n noise_std)``-GDP.
    learning_rate : float
    n_iter : int
    rng : numpy.random.Generator
    fit_intercept : bool, default=True
        The intercept is the last coordinate of theta.
    theta0 : ndarray, optional
        Start (default zeros).
    preconditioner : ndarray of shape (q, q), optional
        P (default the identity), public: a function of earlier private
        releases only. The gradients are clipped in the norm ``||P z_i||``
        of the released ``P g_i``, so any P keeps the sensitivity.
    sample_weight : ndarray of shape (n,), optional
        Weights in ``[0, max_weight]``, checked before the first draw.
    progress : Progress, optional
    max_weight : float, default=1.0
        W, the bound on a row's weight: each step is recorded as a release
        of sensitivity ``2 W clip_norm / n``. Rows without weights weigh 1,
        so without ``sample_weight`` the bound is at least 1.

    Returns
    -------
    iterates : ndarray of shape (n_iter, p + fit_intercept)
        theta_1, ..., theta_T.
    """
    if not is_dask(X):  # values beyond MAX_ABS capped once, as the estimator's input is
        X, y = _cap(np.asarray(X, dtype=float)), _cap(np.asarray(y, dtype=float))
    w = check_sample_weight(sample_weight, X.shape[0], max_weight)
    W = float(max_weight) if w is not None else max(float(max_weight), 1.0)
    P = None if preconditioner is None else np.asarray(preconditioner, dtype=float)
    # ||P z_i||: projected_row_norms takes R and gives ||R^T z_i||.
    lev = _leverage(X, None if P is None else P.T, fit_intercept)
    if is_dask(lev):
        (lev,) = _persist(lev)
    return _gradient_steps(X, y, w, lev, clip_norm=clip_norm, noise_std=noise_std,
                           learning_rate=learning_rate, n_iter=n_iter, rng=rng,
                           fit_intercept=fit_intercept, theta0=theta0, preconditioner=P,
                           progress=progress, max_weight=W)


def _gradient_steps(X, y, w, lev, *, clip_norm: float, noise_std: float, learning_rate: float,
                    n_iter: int, rng: np.random.Generator, fit_intercept: bool, theta0,
                    preconditioner, progress, max_weight: float) -> np.ndarray:
    """:func:`dp_gradient_descent` on checked inputs: weights within ``max_weight``,
    ``lev`` the norms ``||P z_i||`` (the estimator's, computed once per fit)."""
    n, p = X.shape
    q = p + int(fit_intercept)
    theta = np.zeros(q) if theta0 is None else np.array(theta0, dtype=float)
    P = preconditioner
    iterates = np.empty((n_iter, q))
    blocks = _block_rows(p)
    step_sens = 2.0 * float(max_weight) * float(clip_norm) / n
    # Overflow (features near the float limit) shows up as non-finite
    # iterates, which the caller reports; no warning per step.
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(n_iter):
            block = partial(_gradient_block, theta=theta, clip_norm=clip_norm,
                            fit_intercept=fit_intercept)
            grad = sum_rows(block, X, y, w, lev, block_rows=blocks) / n
            # The release is P grad (each row's P g_i clipped to clip_norm)
            # plus noise; the step is P times it (post-processing).
            released = gaussian_release(grad if P is None else P @ grad, noise_std, rng,
                                        name="DP-GD step", sensitivity=step_sens,
                                        weight=max_weight)
            step = released if P is None else P @ released
            theta = theta - learning_rate * step
            iterates[t] = theta
            if progress is not None:
                progress.update()
    return iterates


def check_margin(q: int) -> float:
    """The clipping check's margin, in standard deviations of a row's fitted value.

    ``sqrt(chi2_q^{-1}(1 - CHECK_LEVEL))``: Scheffe's simultaneous bound, so
    that with probability ``1 - CHECK_LEVEL`` (under the estimate's model
    covariance) every row's residual at the solution lies within the
    margin of its residual at the estimate, and no row is counted as
    clipped only because the estimate is noisy.
    """
    return float(np.sqrt(stats.chi2.isf(CHECK_LEVEL, q)))


def _check_finite(*arrays) -> None:
    if not all(np.all(np.isfinite(a)) for a in arrays):
        raise FloatingPointError(
            "The fit overflowed on the original scale: check bounds_X/bounds_y (a tiny "
            "range), clip_norm and norm_bound.")


def _persist(*arrays):
    """Persist the Dask arrays among ``arrays`` (None stays None)."""
    import dask

    kept = [a for a in arrays if a is not None]
    done = iter(read(lambda: dask.persist(*kept)))  # the local schedulers read the data here
    return tuple(None if a is None else next(done) for a in arrays)


def _quantile_block(Xb, yb, wb, lev, *, theta, fit_intercept, level):
    norms = lev * np.abs(squared_loss_residuals(Xb, yb, theta, fit_intercept=fit_intercept))
    return quantile_statistics(norms[:, None], GRID, [level], wb)


_DOC = """Linear regression by differentially private gradient descent, with confidence intervals.

Full-batch DP-GD (Brown et al. 2024, Algorithm 1), preconditioned with a private
Gram matrix: every step clips the per-example gradients of the squared loss,
averages them over all rows, and adds Gaussian noise calibrated exactly so that
the whole fit is (epsilon, delta)-DP. The estimate is the mean of the
post-burn-in iterates, and the spread of m nearly independent estimates gives
Student-t confidence intervals (Section 3): ``conf_int``, ``bse_``,
``summary``. See the user guide, *Estimators*.

Parameters
----------
%(epsilon)s
%(delta)s
bounds_X : tuple (lower, upper) or None, default=None
    Declared range of every feature: two scalars, two arrays with one value
    per feature in column order (as in diffprivlib), or two pandas Series
    (or dicts) keyed by column name, which must name X's columns. Known
    without looking at the data (a data dictionary). Values outside are clipped to it, and the fit runs on the
    columns mapped to [-1, 1] (centred at the middle of the range and divided
    by half its width; without an intercept only divided by
    ``max(|lower|, |upper|)``). Every result (``coef_``, ``intercept_``,
    ``conf_int``, ``bse_``, ``summary``, ``predict``) is on the original
    scale. None: features are used as they are (ideally standardised with
    public constants).
bounds_y : tuple (lower, upper) or None, default=None
    Declared range of the label, used the same way.
clip_norm : float or None, default=None
    L2 bound of each per-example gradient ``P z_i r_i`` in the preconditioned
    coordinates (where the rows have unit second moment), in [1e-100, 1e100].
    None: a private high quantile of the gradient norms at the pilot estimate
    (``clip_share`` of the budget, see Notes), times
    ``max(2, sqrt(2 log n) / Phi^{-1}((1 + level) / 2))`` so as to reach the
    largest norm of a Gaussian tail; with ``clip_share=0``,
    ``5 * sqrt(n_features + fit_intercept)``. The quantile's level is the
    highest that the noisy search resolves safely,
    ``max(0.5, 1 - 4 sigma / n)`` with sigma the noise std of its counts.
learning_rate : float or None, default=None
    Step size in the preconditioned coordinates. None: 1.0 (a Newton step:
    the preconditioned Hessian has its eigenvalues in (0, 1]). When a
    released Gram matrix resolves no direction (see Notes, *Convergence*),
    ``K / n_iter`` (``n_iter`` 200 by default), at most 0.25, where the
    run's time ``K = 2 (n mu_gd / (4 W))**2 / (m q)``, within [20, 50],
    keeps the noise's wander of the gradient norms within half the clip
    norm (m the rows' mean squared norm, from the Gram matrix's noisy
    trace): over 200 steps 0.1-0.25 on tables of a few hundred rows at
    epsilon 1 and 0.25, Brown et al. 2024's step for unit feature
    covariance, on larger ones. With ``gram_share=0`` (no estimate of m) and for
    ``ci_method='independent_runs'`` (whose m burn-ins alone take 5 m time
    units): 0.25.
n_iter : int or None, default=None
    Total number of gradient steps, over all runs for
    ``ci_method='independent_runs'``. None: planned from the private Gram
    matrix so that the iterates are stationary after the burn-in and the
    batches are nearly independent (see Notes), at least 23 steps; at most
    ``(n mu_gd / (2 W sqrt(q)))**2 * 2 a`` with a the typical contraction
    of a step, at most 1/2 (beyond, the noise alone would push the
    gradients past the clip norm) and ``1.5e9 / (n q)`` (a time budget);
    200 without a preconditioner (for independent runs, m runs of its
    burn-in plus ``(200 - burn_in) // m``).
    More steps do not cost privacy
    (the noise per step grows as ``sqrt(n_iter)``) but time.
fit_intercept : bool, default=True
    Fit an intercept through a constant 1 column that is part of every
    clipped gradient (so the intercept has no unclipped coordinate). The
    data are never centred with their own mean: that would release it.
ci_method : {'batched_means', 'checkpoints', 'independent_runs'}, default='batched_means'
    How the m = ``n_batches`` estimates are made (Section 3.1): the means of
    m consecutive batches of one run's post-burn-in iterates; m checkpoints
    of one run equally spaced after the burn-in; or m independent runs, each
    summarised by the mean of its post-burn-in iterates (the budget is split
    exactly: each run is ``mu_gd / sqrt(m)``-GDP).
n_batches : int, default=10
    m, the number of estimates behind the t-interval (m - 1 degrees of
    freedom); at least 2.
burn_in : int or None, default=None
    Iterates discarded at the start of every run. None: planned with
    ``n_iter``; without a preconditioner 5 time units (``ceil(5 /
    learning_rate)`` steps, at least 20 and at most 50 or ``n_iter / 4``,
    and short enough to leave ``n_batches`` iterates).
gram_share : float, default=0.1
    Share of the budget, as a fraction of ``mu**2``, spent on a private Gram
    matrix of the rows ``(x_i, 1, y_i)`` (clipped to ``norm_bound``). It gives
    the preconditioner, the pilot estimate (the start), the step plan and the
    bread of the population covariance. 0: plain DP-GD from 0 with the
    identity preconditioner (and no population intervals), which is also
    what a fit runs when the released Gram matrix resolves no direction
    (``preconditioned_``).
clip_share : float, default=0.08
    Share of ``mu**2`` for the clipping: with ``clip_norm=None``, half of it
    buys the private quantile that sets the clip norm and half a noisy count
    of the gradients clipped at the final estimate beyond what its own
    noise explains (``clipped_fraction_``, the clipping check: see Notes,
    *What the intervals cover*); with a given ``clip_norm`` all of it buys
    the count. 0: neither. On
    small tables each private quantile search (this one and the Gram row
    bound's) gets at least the share that keeps its comparisons 4 count
    stds clear at the median, ``(8 sqrt(9 k) / (n mu))**2`` for k
    quantiles searched together, taken from the gradient steps; when that
    would leave them less than half their nominal share, the fit raises a
    ``ValueError`` before any budget is charged (declare the bounds
    instead). See ``privacy_shares_``.
population_share : float, default=0.1
    Share of ``mu**2`` for the private *meat* of a sandwich (HC1) covariance
    at the final estimate, so that ``conf_int(target='population')`` adds the
    sampling variance of least squares under heteroskedastic noise. 0 makes
    population intervals unavailable (as does a private Gram matrix that
    resolves no direction, since it is the sandwich's bread).
norm_bound : float or None, default=None
    L2 bound on the rows ``(x_i, 1, y_i)`` of the Gram matrix (on the fitting
    scale; longer rows are clipped), in [1e-100, 1e100]. None: exact
    (on the [-1, 1] scale the rows ``(x_i, 1)`` have norm at most
    ``sqrt(n_features + fit_intercept)`` and the labels 1) when both
    ``bounds_X`` and ``bounds_y`` are declared; else private quantiles of the
    row norms ``||(x_i, 1)||`` and of ``|y_i|`` (25%% of ``gram_share``), each
    at the level and with the tail factor of ``clip_norm`` (factor at least
    1). A given ``norm_bound`` bounds both parts.
%(max_weight)s
verbose : int, default=0
    0 silent; 1 a few progress lines on stderr; 2 a progress bar (tqdm, if
    installed). It prints the steps done (public) and the time elapsed,
    which, like any running time, depends on the data: a side channel the
    guarantee does not cover (threat model).
%(accountant)s
%(random_state)s

Attributes
----------
coef_ : ndarray of shape (n_features,)
intercept_ : float
bse_ : ndarray of shape (n_features + fit_intercept,)
    Standard errors of ``coef_`` (and ``intercept_``, last), on the original
    scale: the largest of ``sd / sqrt(m)`` of the m estimates, for
    'batched_means' the autocorrelation-based standard error of the mean of
    the iterates (Geyer's initial positive sequence), and a model-based
    standard error (see Notes, *Standard errors*), which guard the
    interval when the iterates mix slowly and when the run has not
    forgotten its pilot start.
estimates_ : ndarray of shape (n_batches, n_features + fit_intercept)
    The m private estimates behind the interval (original scale).
sampling_cov_ : ndarray of shape (n_features + fit_intercept,) * 2 or None
    Private HC1 sandwich estimate of the least-squares sampling covariance
    (original scale; None when ``population_share == 0``, and when the
    private Gram matrix resolved no direction: ``preconditioned_``).
clip_norm_ : float
    The clip norm used (preconditioned coordinates, fitting scale).
clipped_fraction_ : float or None
    Noisy share of the per-example gradients clipped at the final estimate
    even with each residual moved towards 0 by the estimate's own noise
    margin (weighted by ``w_i / max_weight``), clipped to [0, 1]; None with
    ``clip_share=0``. Its noise std is ``clipped_fraction_std_``.
clipped_fraction_std_ : float or None
clip_check_resolution_ : float or None
    The smallest clipping bias the private check can tell from 0, in
    standard errors of the estimate: the bias of as many rows as 3 noise
    stds of the clipped count, each clipped by one clip norm, against the
    smallest batch-means standard error in the preconditioned coordinates;
    None with ``clip_share=0``. Above about 0.5 the check cannot see a bias
    that would spoil the intervals. It counts only rows beyond the
    estimate's noise margin (Notes, *What the intervals cover*), so at
    small budgets, where that margin spans several clip norms, it sees
    less than this.
norm_bound_ : float
    The Gram row bound used (fitting scale).
unresolved_features_ : list of str
    Coefficients (feature names, 'intercept') loading on directions the
    private Gram matrix cannot resolve, as named by the collinearity
    warning, and columns far from 0 against their spread (without declared
    bounds), as named by the uncentred-columns warning; empty without
    either.
preconditioned_ : bool
    Whether the steps used the private Gram matrix's preconditioner, pilot
    and plan. False with ``gram_share=0``, and when no eigenvalue of the
    released Gram matrix clears a high-probability bound on its noise (it
    then certifies no direction; Notes, *Convergence*): post-processing of
    the release.
fit_warnings_ : dict
    The warnings the fit raised that qualify its intervals, message by
    kind: 'unresolved' (collinearity), 'uncentred' (columns far from 0
    against their spread, without declared bounds), 'not_converged' (the noise cut the
    planned steps and the estimate keeps part of the start's error),
    'clipping' (the clipping check), 'drift' (the
    iterates still drift) and 'noise' (the coefficients are on average
    within one standard error of zero); empty when none did. A fit inside a pipeline or a
    search, where warnings are often silenced, keeps them here, and
    :meth:`summary` notes them.
planned_n_iter_ : int
    The steps the plan asked for: above ``n_iter_`` when the noise cut
    them (the 'not_converged' warning says so where the estimate keeps
    part of the start's error).
privacy_spent_ : PrivacySpent
    ``(epsilon, delta, mu)`` of this fit: every release below composed.
privacy_shares_ : dict
    Each release's share of ``mu**2`` (they add up to 1): 'gram_bound',
    'gram', 'clip_quantile', 'gradient_descent', 'population',
    'clip_check'.
noise_std_ : float
    Std of the Gaussian noise added to the mean clipped gradient at each step.
learning_rate_ : float
n_iter_ : int
    Gradient steps taken.
burn_in_ : int
n_features_in_ : int
feature_names_in_ : ndarray of shape (n_features,)
    Only when X is a DataFrame with string column names.

See Also
--------
AdaSSPRegressor : One release of noisy sufficient statistics (no intervals).
skdp.accounting.BudgetAccountant : Budget across many fits.

Notes
-----
**Guarantee.** Neighbouring datasets differ in one row ``(x_i, y_i, w_i)``
replaced by another; n is public. The fit is an adaptive composition of
Gaussian mechanisms, each with a stated replace-one sensitivity:

1. without a declared row bound, private quantiles of the row norms
   ``||(x_i, 1)||`` and of the labels ``|y_i|`` (one noisy binary search on
   signed counts, two counts per comparison, sensitivity 1 per count: rows
   are counted unweighted, since they are clipped before their weights
   apply; :func:`skdp.clipping.private_quantiles`);
2. the Gram matrix of the rows ``(z_i / norm_bound, y_i / label_bound)``
   clipped to norm ``sqrt(2)``, sensitivity ``sqrt(2) W (sqrt(2))**2``;
3. with ``clip_norm=None``, a private quantile of the preconditioned gradient
   norms at the pilot estimate (unweighted counts, sensitivity 1);
4. the T gradient steps: each releases the mean of n clipped gradients,
   sensitivity ``2 W clip_norm / n``;
5. at the final estimate, the meat ``sum_i c_i c_i^T`` of the clipped
   gradients (sensitivity ``sqrt(2) W**2 clip_norm**2``) and the noisy count
   of the gradients clipped beyond the estimate's noise margin (sensitivity
   1; each row counts ``w_i / W``, ``1 / W`` for unit weights, so that
   whether every weight is exactly 1 does not change the count's scale;
   the margin is a public function of the row's own features and of
   earlier releases).

Each gets its share of ``mu**2`` (``privacy_shares_``), planned from public
quantities before any budget is charged; ``fit`` then draws them in this
order, one stage each, and post-processes (a test checks the recorded draws
against this list, share by share). The whole fit is exactly mu-GDP for the
mu of (epsilon, delta); in secure mode (:func:`skdp.mechanisms.secure_mode`)
every release is an exact discrete Gaussian on a grid and the fit is
``mu**2 / 2``-zCDP for the largest such rho that implies (epsilon, delta).
Everything derived from the fit (``conf_int``, ``summary``, the step plan,
the warnings, predictions) is post-processing. The guarantee holds for every
dataset; clipping only affects accuracy.

**What the intervals cover.** ``conf_int(target='empirical')`` (default)
covers the (weighted) *least-squares solution of the fitted data* (after
clipping to ``bounds_X``/``bounds_y``); its randomness is the privacy noise
only (Brown et al. 2024). Where gradients are clipped at the solution the
estimate solves a clipped problem instead, a Huber-type regression whose
threshold for row i is ``clip_norm_ / ||P z_i||``; the intervals cover
*its* solution (:meth:`estimand` computes it on rows you hold, without
privacy) and can miss least squares by the clipping bias, for which no
interval is widened. A ``UserWarning`` says so when the private count shows
enough clipped rows that, each clipped by one clip norm, they would bias
the estimate by half a standard error; the count cannot see a few rows far
beyond the clip. It counts the rows clipped at the estimate, but only
those that stay clipped when their residual moves towards 0 by
``sqrt(chi2_q^{-1}(0.99))`` standard deviations of their fitted value
under the AR(1) model's covariance of the estimate (Scheffe's
simultaneous 99%% bound over all rows, q coefficients): at small budgets
the estimate lies so far from the solution that a quarter of the rows can
be clipped there while none is at the solution, and a plain count warned
about clipping that biased nothing (on the diabetes table at epsilon 1,
in 23 fits of 30). The intervals also fail
when the iterates have not reached stationarity (a ``ConvergenceWarning``
says so when the halves of the batch means differ by more than the AR(1)
model of the run allows: see *Drift*), and when the
noise is so large that the clipping bites on the noisy iterates (small n,
small epsilon). ``conf_int(target='population')`` covers the
*population* parameter (the least-squares coefficients of the distribution
the rows were drawn from, independently): it adds a private HC1 sandwich
estimate of the sampling covariance, valid under heteroskedastic noise. It
also needs n large against the Gram noise (the bread of the sandwich comes
from the private Gram) and fails with dependent rows (clustered or time
series data). How often the intervals cover on 40 public tables, and where
they fail without a warning, is on the docs page *When to trust the
intervals* (``benchmarks/interval_suite.py``).

**Convergence.** The private Gram matrix gives ``P = (A_hat + r I)^{-1/2}``
(``A_hat`` the noisy ``Z^T W Z / n``, r a high-probability bound on its
noise), under which the Hessian has eigenvalues in (0, 1]: with step 1 a
well-conditioned problem converges in a few steps, whatever the scale or
the correlation of the columns. The batch length follows from an estimate
of the smallest eigenvalue of the preconditioned Hessian, and the burn-in
stops once the pilot's plug-in risk can bias the mean by at most a quarter
of its standard deviation (``skdp.linear_model._preconditioner``). The
pilot start is the ridge solution of the noisy normal equations. The plan
is an estimate, not a guarantee: the standard errors guard the intervals
when it is too short (see *Standard errors*). When the noise allows fewer
steps than the plan asks, the fit warns (``ConvergenceWarning``) if the
estimate keeps at least 5%% of the start's error in some direction of the
AR(1) model below (its coefficient raised, so the share errs on the large
side). A run that has forgotten its start has converged as far as its
intervals are concerned, whatever the plan asked: at small budgets the
Gram's smallest eigenvalue, from which the plan's length comes, is its
noise's. When no eigenvalue of ``A_hat`` clears a high-probability bound on
the norm of its noise (``(2 sqrt(q) + 3)`` entry stds; small tables at small
budgets), the Gram matrix certifies no direction: its preconditioner is
mostly noise and ridge, and its pilot is shrunk towards 0 along the
directions the data barely determine, an error that the short run the
noise allows does not forget and that the standard errors cannot see
(estimated from an estimate shrunk the same way, they covered one
coefficient only 3-53%% of the time on four public tables). The steps then run as
with ``gram_share=0`` (P = I, from 0, 200 steps): wider, honest
intervals (``preconditioned_`` is False, and the summary says so). Such a
plain run's noise makes a row's gradient norm wander by about ``2 W C
sqrt(m q K / 2) / (n mu_gd)`` (m the rows' mean squared norm), which at a
fixed number of steps grows with the run's total time K (steps times
step), not with the step alone. After a Gram matrix set aside, the step
keeps K where that wander stays within half the clip norm, between 20 and
50 (see ``learning_rate``). m comes from the Gram's noisy trace, so on a
few hundred rows K varies between fits; with sample weights below 1 the
wander is larger than the rule assumes, by the inverse of the mean
weight, which it does not know. At K = 50 (step 0.25) on tables of a few
hundred rows at epsilon 1 the wander reached the clip, so the clipping
acted on most steps and the mean iterate was noisier: standardised
diabetes and Boston had 25%% and 36%% of their rows clipped at the final
estimate, against 9%% and 18%% at K = 20 (10 fits each), and the rule
narrowed the intervals of 17 such cells of the calibration suite by a
quarter to a half, at the same coverage. The
Gram's share is spent all the same, and so is the population share: the
meat is drawn as planned, but with no resolved direction the sandwich
would take its bread from the noise, so population intervals are
unavailable.

**Standard errors.** Batch means (and their autocorrelations) need a run
much longer than the slowest mixing time of the iterates; on
ill-conditioned tables at small budgets the noise allows only a few dozen
to a few thousand steps, and those errors come out several times too small
(on the scikit-learn diabetes table at epsilon 1, 0.1-0.3 of the true
standard deviation). While the clipping is inactive, DP-GD is a linear
recursion: in the eigenbasis of its VAR(1) coefficient (fitted by least
squares among symmetric matrices, as the true one is) each direction is an
AR(1) series. ``bse_`` is at least the standard error of
that model, with each direction's coefficient raised to its upper 84%%
confidence bound (Kendall's 1954 bias correction plus one standard error),
including the share of the pilot's error that the run has not forgotten
(from the Gram's public noise level, with the ridge's shrinkage counted as
a variance; where the Gram resolves a direction and the bounds are
declared, the signal there is bounded by the Gram's ``A_yy`` instead of the
estimate). Where the private Gram matrix resolves a direction, it caps the
coefficient (the contraction it guarantees per step), so short runs on
well-conditioned tables are not inflated by the uncertainty of a fitted
coefficient; slow directions get the wide intervals they need. This is
post-processing of the released iterates. On the 17 development and
held-out tables of the calibration suite the reported standard errors are
0.9-2.2x the actual spread of the estimates around least squares in 66 of
68 cells (medians over coefficients), and below it where the estimate is
biased (diamonds, clipped; CPS1985's columns, collinear but for one row);
on 15 fresh tables, 0.8-2.1x in 58 of 60 cells (0.49-0.50 where clipped
rows bias the estimate: one data error in weather, the longest and most
voted films in movies); see the docs page *When to trust the intervals*.

**Drift.** The same model says how far apart the first and second half of
the batch means (or checkpoints) may lie: their difference, a contrast
whose weights sum to 0, is in each direction the start's unforgotten error
plus noise of a known variance. The fit warns (``ConvergenceWarning``) when
the difference exceeds that standard deviation by the normal quantile at a
family-wise 1%% over the directions (Bonferroni), which happens where the
run still moves in a way neither its public noise nor its start's error
can explain: a hand-set learning rate too small to settle, or a start
whose error the model understates. It fires at the default ten batches;
with ``ci_method='independent_runs'`` it compares the halves of every
run's kept iterates, averaged over the runs. It cannot see a
direction that barely moves (a random walk forgets nothing, so its start's
error is no contrast at all): the model's standard errors count that
error instead.

**Collinearity.** An eigenvalue of the private Gram matrix below the
typical norm of its noise cannot be told from 0: exactly collinear columns
(a duplicate, a constant beside the intercept) and columns that are nearly
collinear at the budget. The fit warns and names the columns with large
loadings in those directions (post-processing of the Gram matrix); their
coefficients are not identified separately and their intervals come out
wide (tested with a duplicated and a constant column at epsilon 10).

**Scale.** With ``bounds_X`` and ``bounds_y`` the columns are mapped to
[-1, 1] with public constants and every result is reported on the original
scale. Without bounds the data are used as they are: the preconditioner and
the private clip norm adapt to any scale, but without a declared bound the
Gram rows are clipped at a private quantile of their norms. Never rescale
with statistics of the private data (a ``StandardScaler`` fitted on it
releases its means and variances without any guarantee).

References
----------
Brown, Dvijotham, Evans, Liu, Smith & Thakurta (2024). Private Gradient
Descent for Linear Regression: Tighter Error Bounds and Instance-Specific
Uncertainty Estimation.

Examples
--------
>>> import numpy as np
>>> from skdp.linear_model import DPLinearRegressionGD
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(20_000, 3))
>>> y = X @ np.array([1.0, -0.5, 0.25]) + 0.5 + rng.normal(scale=0.5, size=20_000)
>>> reg = DPLinearRegressionGD(epsilon=1.0, random_state=0).fit(X, y)
>>> np.round(reg.coef_, 2)
array([ 1.  , -0.5 ,  0.26])
>>> reg.conf_int(alpha=0.05).shape
(4, 2)
"""


class DPLinearRegressionGD(DPEstimatorMixin, LinearPredictMixin, RegressorMixin, BaseEstimator):
    __doc__ = _DOC % PRIVACY_PARAMS_DOC
    _accepts_dask = True  # every pass is a sum over rows: Dask sums it per partition

    _parameter_constraints: dict = {
        **DPEstimatorMixin._parameter_constraints,
        "bounds_X": ["array-like", None],
        "bounds_y": ["array-like", None],
        "clip_norm": [Interval(Real, 1e-100, 1e100, closed="both"), None],
        "learning_rate": [Interval(Real, 0, 2, closed="neither"), None],
        "n_iter": [Interval(Integral, 1, None, closed="left"), None],
        "fit_intercept": ["boolean"],
        "ci_method": [StrOptions(set(CI_METHODS))],
        "n_batches": [Interval(Integral, 2, None, closed="left")],
        "burn_in": [Interval(Integral, 0, None, closed="left"), None],
        "gram_share": [Interval(Real, 0, 1, closed="left")],
        "clip_share": [Interval(Real, 0, 1, closed="left")],
        "population_share": [Interval(Real, 0, 1, closed="left")],
        "norm_bound": [Interval(Real, 1e-100, 1e100, closed="both"), None],
        "max_weight": [Interval(Real, 0, MAX_WEIGHT, closed="right")],
        "verbose": ["verbose"],
    }

    def __init__(self, *, epsilon=1.0, delta=1e-6, bounds_X=None, bounds_y=None, clip_norm=None,
                 learning_rate=None, n_iter=None, fit_intercept=True, ci_method="batched_means",
                 n_batches=10, burn_in=None, gram_share=0.1, clip_share=0.08,
                 population_share=0.1, norm_bound=None, max_weight=1.0, verbose=0,
                 accountant=None, random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.bounds_X = bounds_X
        self.bounds_y = bounds_y
        self.clip_norm = clip_norm
        self.learning_rate = learning_rate
        self.n_iter = n_iter
        self.fit_intercept = fit_intercept
        self.ci_method = ci_method
        self.n_batches = n_batches
        self.burn_in = burn_in
        self.gram_share = gram_share
        self.clip_share = clip_share
        self.population_share = population_share
        self.norm_bound = norm_bound
        self.max_weight = max_weight
        self.verbose = verbose
        self.accountant = accountant
        self.random_state = random_state

    # -- planning (public quantities only) ----------------------------------------

    def _shares(self, declared_bound: bool, n: int | None = None,
                mu: float | None = None) -> dict:
        """Each release's share of mu**2; raise if the shares leave too little for DP-GD.

        With ``n`` and ``mu``, each private quantile search gets at least the
        share that keeps it safe from far errors (:func:`safe_search_mu`),
        taken from the gradient steps.
        """
        used = self.gram_share + self.clip_share + self.population_share
        if used >= 1.0:
            raise ValueError(f"gram_share + clip_share + population_share = {used:g} must be "
                             "below 1: the rest of the budget pays for the gradient steps.")
        if self.population_share > 0 and self.gram_share == 0:
            raise ValueError("population_share > 0 needs gram_share > 0: the population "
                             "covariance takes its bread from the private Gram matrix.")
        bound_part = 0.0 if declared_bound else NORM_QUANTILE_PART
        quantile_part = CLIP_QUANTILE_PART if self.clip_norm is None else 0.0
        shares = {"gram_bound": self.gram_share * bound_part,
                  "gram": self.gram_share * (1.0 - bound_part),
                  "clip_quantile": self.clip_share * quantile_part,
                  "gradient_descent": 1.0 - used,
                  "population": self.population_share,
                  "clip_check": self.clip_share * (1.0 - quantile_part)}
        if n is None:
            return shares
        for key, columns in (("gram_bound", 2), ("clip_quantile", 1)):
            if shares[key] > 0:  # the searches count rows unweighted
                needed = (safe_search_mu(n, columns, 1.0) / mu) ** 2
                extra = max(0.0, needed - shares[key])
                shares[key] += extra
                shares["gradient_descent"] -= extra
        if shares["gradient_descent"] < 0.5 * (1.0 - used):
            searched = [name for key, name in (("gram_bound", "row"), ("clip_quantile", "clip"))
                        if shares[key] > 0]
            declare = ("declare bounds_X and bounds_y (or norm_bound) and clip_norm"
                       if len(searched) == 2 else "declare clip_norm" if searched == ["clip"]
                       else "declare bounds_X and bounds_y (or norm_bound)")
            raise ValueError(
                f"n_samples={n} rows are too few for the private {' and '.join(searched)} "
                f"bound{'s' if len(searched) == 2 else ''} at this budget (a safe quantile "
                f"search would take most of it): {declare}, or raise epsilon.")
        return shares

    def _step_size(self, preconditioned: bool, plain: float | None = None) -> float:
        """The step: ``learning_rate``, else 1 (a Newton step) with the Gram's preconditioner.

        Without it, ``plain`` (:meth:`_plain_step`).
        """
        return self.learning_rate or (1.0 if preconditioned else plain)

    def _plain_time(self, data: _Data, gram: _GramRelease, mu: float) -> float:
        """The plain run's total time K (:func:`plain_time`), from the Gram's trace.

        Without a Gram matrix (``gram_share=0``) the largest, 50: nothing
        estimates the rows' mean squared norm, and q, its bound for columns
        in [-1, 1], shortened runs that had time to spare.
        """
        if gram.row_moment is None:
            return PLAIN_TIME[1]
        return plain_time(data.n, data.q, mu, data.W, PLAIN_TIME, gram.row_moment)

    def _plain_step(self, time: float) -> float:
        """The step of a plain run of total time ``time`` over ``n_iter`` (or 200) steps.

        Independent runs keep the largest step: their m burn-ins alone take
        ``5 m`` time units, beyond any bound on the time, and a smaller step
        would only shorten what each run keeps. So does ``gram_share=0``,
        where nothing estimates the rows' mean squared norm.
        """
        if self.ci_method == "independent_runs" or self.gram_share == 0:
            return PLAIN_MAX_STEP
        return min(PLAIN_MAX_STEP, time / (self.n_iter or PLAIN_STEPS))

    def _plan(self, min_eigenvalue: float | None, learning_rate: float,
              cap: int | None = None, step_noise: float | None = None,
              pilot_risk: float | None = None) -> tuple[int, int, int, int]:
        """(runs, steps per run, burn-in, planned steps) from the parameters and private releases.

        ``cap`` (:func:`~skdp.linear_model._preconditioner.max_steps` and the
        time budget) limits the planned steps; the fourth value is the plan
        before the cap. ``step_noise`` (``2 W C / (n mu)``) and
        ``pilot_risk`` let the burn-in stop once the pilot's error is below
        the noise of the mean (:func:`~skdp.linear_model._preconditioner.burn_in_steps`);
        independent runs, each with a fraction of the steps, keep the burn-in
        that forgets the start to 1e-3.
        """
        m = self.n_batches
        runs = m if self.ci_method == "independent_runs" else 1
        if min_eigenvalue is None:
            # PLAIN_BURN_TIME time units: 20 steps at step 0.25, at most 50 of 200 steps
            # (the burn-in at the smallest plain time), or a quarter of n_iter.
            low, high = (PLAIN_BURN_TIME * PLAIN_STEPS / t for t in reversed(PLAIN_TIME))
            high = max(high, (self.n_iter or 0) / 4)
            burn = int(min(max(math.ceil(PLAIN_BURN_TIME / learning_rate - 1e-9), low), high))
            total = wanted = PLAIN_STEPS
            if runs == 1 and self.n_iter is None and self.burn_in is None:
                # Many batches: a shorter burn-in (not below 20), as before the step rule.
                burn = min(burn, max(int(low), total - m))
        else:
            if runs > 1:
                step_noise = pilot_risk = None
            burn, total, wanted = plan_steps(min_eigenvalue, learning_rate, m, cap,
                                             step_noise, pilot_risk)
        if runs > 1:  # each run: burn-in plus one batch length, at least 5 iterates
            total = runs * (burn + max(5, (total - burn) // m))
        burn = self.burn_in if self.burn_in is not None else burn
        if self.burn_in is not None and self.n_iter is None:
            # A declared burn-in with a planned length (which the private plan can make
            # shorter than the check before the charge): keep the batches after it.
            total = max(total, runs * (burn + (2 * m if runs == 1 else 5)))
        if self.n_iter is not None:
            total = self.n_iter
            if self.burn_in is None:
                burn = min(burn, max(0, total // runs - (m if runs == 1 else 1)))
        per_run = total // runs
        if runs > 1 and per_run <= burn:
            raise ValueError(
                f"ci_method='independent_runs' gives each of the n_batches={m} runs "
                f"n_iter // n_batches = {per_run} steps, which must exceed burn_in={burn}; "
                "raise n_iter or lower burn_in.")
        if runs == 1 and per_run - burn < m:
            raise ValueError(f"n_iter - burn_in = {per_run - burn} iterates cannot form "
                             f"n_batches={m} batches; raise n_iter or lower burn_in.")
        return runs, per_run, burn, wanted

    # -- fitting ----------------------------------------------------------------

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit by preconditioned DP-GD and compute the interval estimates.

        The fit validates, plans the releases listed in the class Notes
        (each one's share of the budget, from public quantities only),
        charges the budget, draws the releases in order and post-processes
        them.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Non-negative weights, at most ``max_weight`` (checked before any
            budget is charged). The estimand becomes the weighted
            least-squares solution.

        Returns
        -------
        self : DPLinearRegressionGD
        """
        # Validate: every error that needs no budget is raised here.
        data = self._validate(X, y, sample_weight)
        # Plan: each release's share of mu**2, from public quantities only.
        mu = self._budget_mu()
        shares = self._shares(data.declared or self.gram_share == 0, data.n, mu)
        mus = {k: mu * math.sqrt(v) for k, v in shares.items()}
        # Charge, before any noise is drawn.
        spent, rng = self._charge(mu)
        # The releases, in the order of the class Notes (each stage states its sensitivity).
        gram = self._release_gram(data, mus, rng)
        plain = self._plain_step(self._plain_time(data, gram, mus["gradient_descent"]))
        data = data._replace(eta=self._step_size(gram.pre is not None, plain))
        clip = self._release_clip_norm(data, gram, mus, rng)
        steps = self._release_steps(data, gram, clip, mus, rng)
        # Post-processing of the steps: the estimate and its standard errors, whose
        # covariance sets the clipping check's margin.
        theta, bse, theta_cov, drift, start_left = self._standard_errors_from(data, gram, steps)
        meat, clipping, clipping_std = self._release_meat_and_check(data, gram, clip, steps,
                                                                   theta_cov, mus, rng)
        # Post-processing: the sampling covariance, warnings, fitted state.
        cov = self._sampling_covariance(data, gram, steps, meat)
        resolution, raised = self._warn(steps, clipping, clipping_std, clip, data, gram, drift,
                                        start_left)
        raised.update(self._warn_noise(theta, bse, data.p))
        # The fitted state is set only once the fit has succeeded.
        p = data.p
        self.coef_ = theta[:p]
        self.intercept_ = float(theta[p]) if self.fit_intercept else 0.0
        self.estimates_, self.bse_, self.sampling_cov_ = steps.estimates_orig, bse, cov
        self.clip_norm_, self.norm_bound_ = clip, gram.norm_bound
        self.clipped_fraction_ = (None if clipping is None
                                  else float(np.clip(clipping[0] / data.n, 0.0, 1.0)))
        self.clipped_fraction_std_ = None if clipping is None else clipping_std / data.n
        self.clip_check_resolution_ = resolution
        self.noise_std_, self.learning_rate_ = steps.noise_std, data.eta
        self.n_iter_, self.burn_in_ = steps.total, steps.burn
        self.unresolved_features_ = gram.unresolved
        self.preconditioned_ = gram.pre is not None
        self.planned_n_iter_ = steps.total if steps.wanted is None else steps.wanted
        self.fit_warnings_ = dict(gram.warned, **raised)
        self.privacy_spent_ = spent
        self.privacy_shares_ = {k: v for k, v in shares.items() if v > 0}
        # For estimand(): the preconditioner (post-processing of the Gram release) and
        # the declared bounds' scaling (public).
        self._root, self._scaling = gram.root, data.scaling
        return self

    # -- the fit's stages ---------------------------------------------------------

    def _validate(self, X, y, sample_weight) -> _Data:
        """Checked inputs on the fitting scale; raises every error that needs no budget."""
        X, y = validate_private(self, X, y, y_numeric=True, ensure_min_samples=2,
                                dtype=np.float64)
        n, p = X.shape
        q = p + int(self.fit_intercept)
        w = check_weights(sample_weight, n, self.max_weight)
        W = weight_bound(sample_weight, self.max_weight)
        bx = check_bounds(self.bounds_X, p, "bounds_X", getattr(self, "feature_names_in_", None),
                          by_name=True)
        by = check_bounds(self.bounds_y, 1, "bounds_y")
        declared = self.norm_bound is not None or (bx is not None and by is not None)
        self._shares(declared or self.gram_share == 0)
        # Errors of n_iter / burn_in / n_batches do not depend on the private plan:
        # raise them before any budget is charged, for a plan with the Gram matrix and
        # for one without (a Gram matrix that resolves no direction is set aside), at
        # both ends of the plain step (whose burn-in falls as the step grows).
        if self.gram_share > 0:
            self._plan(1.0, self._step_size(True))
        for time in (PLAIN_TIME if self.gram_share > 0 else PLAIN_TIME[1:]):
            self._plan(None, self._step_size(False, self._plain_step(time)))
        scaling = make_scaling(bx, by, p, self.fit_intercept)
        X, y = scaling.transform(X, y)
        if is_dask(X):  # every step reads the rows: keep them (scaled) on the workers
            X, y, w = _persist(X, y, w)
        return _Data(X, y, w, W, n, p, q, bx, by, declared, None, scaling)

    def _release_gram(self, data: _Data, mus: dict, rng) -> _GramRelease:
        """Releases 1-2: row and label bounds (unless declared) and the Gram matrix.

        The Gram matrix of the rows ``(z_i / B, y_i / B_y)``, each clipped to
        norm ``sqrt(2)`` (:func:`skdp.mechanisms.private_gram`), gives the
        preconditioner, the pilot and the step plan (post-processing). With
        ``gram_share=0`` nothing is released and P is the identity.
        """
        X, y, q = data.X, data.y, data.q
        pre, norm_bound, label_bound, entry_std = None, self.norm_bound, 1.0, None
        unresolved, warned, row_moment = [], {}, None
        if self.gram_share > 0:
            if norm_bound is None and data.bx is not None and data.by is not None:
                norm_bound = math.sqrt(q)
            elif norm_bound is None:
                # Unweighted: the rows are clipped before their weights apply, and a
                # count of rows moves by 1 under replacement whatever the weights.
                norm_bound, label_bound = private_row_label_bounds(
                    X, y, None, fit_intercept=self.fit_intercept, mu=mus["gram_bound"], rng=rng)
            if data.by is None and self.norm_bound is not None:
                label_bound = float(self.norm_bound)
            gram, gram_std = private_gram(X, y / label_bound, x_scale=1.0 / norm_bound,
                                          fit_intercept=self.fit_intercept,
                                          intercept_value=1.0 / norm_bound,
                                          norm_bound=math.sqrt(2.0), mu=mus["gram"], rng=rng,
                                          sample_weight=data.w, max_weight=data.W)
            scale = np.append(np.full(q, norm_bound), label_bound)
            entry_std = gram_std * norm_bound**2 / data.n  # of an entry of A_hat
            pre = gram_preconditioner(gram * np.outer(scale, scale),
                                      gram_std * norm_bound**2, data.n, gram_std * label_bound**2)
            unresolved, warned = self._warn_unresolved(pre, entry_std, q)
            if self.fit_intercept and data.bx is None:
                a_hat = (gram * np.outer(scale, scale))[:q, :q] / data.n
                unresolved, warned = self._warn_offset(a_hat, entry_std, unresolved, warned)
            # Its trace estimates the rows' mean squared norm (noise std sqrt(q)
            # entry stds; floored there), which sets a plain run's step.
            row_moment = max(float(np.trace(gram[:q, :q])) * norm_bound**2 / data.n,
                             math.sqrt(q) * entry_std)
        if pre is not None and not np.any(
                pre.eigenvalues > noise_norm(entry_std, q, CURVATURE_MARGIN)):
            # No eigenvalue clears the noise (small tables at small budgets): the Gram
            # matrix certifies no direction. Its preconditioner would be mostly its noise
            # and ridge, its pilot shrunk towards 0 along the directions the data barely
            # determine, and its plan cut by the noise: a start the short run does not
            # forget, whose error the intervals cannot see. The steps run without them.
            pre = None
        root = None if pre is None else pre.root
        lev = _leverage(X, root, self.fit_intercept)
        if is_dask(lev):
            (lev,) = _persist(lev)
        return _GramRelease(pre, root, norm_bound, label_bound, entry_std, lev, unresolved,
                            warned, row_moment)

    def _release_clip_norm(self, data: _Data, gram: _GramRelease, mus: dict, rng) -> float:
        """Release 3: the clip norm, from a private quantile of the gradient norms at the pilot.

        Counts of rows (unweighted, as the row bound: the clip applies to
        ``g_i`` before ``w_i``) on the public grid, sensitivity 1 per
        comparison; the clip is the quantile times
        :func:`~skdp.linear_model._private_bounds.tail_factor`. A declared
        ``clip_norm`` releases nothing.
        """
        if self.clip_norm is not None:
            return float(self.clip_norm)
        if mus["clip_quantile"] == 0:
            return 5.0 * math.sqrt(data.q)
        level = quantile_level(data.n, 1, 1.0, mus["clip_quantile"])
        block = partial(_quantile_block, theta=self._start(data, gram),
                        fit_intercept=self.fit_intercept, level=level)
        quantile = private_quantile(block, data.X, data.y, None, gram.leverage,
                                    mu=mus["clip_quantile"], rng=rng, max_weight=None)
        return tail_factor(data.n, level, CLIP_FACTOR) * quantile

    def _start(self, data: _Data, gram: _GramRelease) -> np.ndarray:
        """Where the steps start: the Gram's ridge pilot (0 without a Gram matrix)."""
        return np.zeros(data.q) if gram.pre is None else gram.pre.pilot

    def _release_steps(self, data: _Data, gram: _GramRelease, clip: float, mus: dict,
                       rng) -> _Steps:
        """Release 4: the T gradient steps, each the mean of n clipped gradients.

        Sensitivity ``2 W C / n`` per step; the T steps share the budget
        ``mus['gradient_descent']`` equally. Their number is planned from
        the Gram matrix and the clip norm (post-processing).
        """
        n, q, W, pre = data.n, data.q, data.W, gram.pre
        work_cap = max(23, int(WORK / (n * q)))
        noise_cap = max_steps(n, q, mus["gradient_descent"], W,
                              0.5 if pre is None else data.eta * pre.mean_contraction)
        step_noise = 2.0 * W * clip / (n * mus["gradient_descent"])
        runs, per_run, burn, wanted = self._plan(
            None if pre is None else pre.min_eigenvalue, data.eta, min(noise_cap, work_cap),
            step_noise, None if pre is None else pre.pilot_risk)
        total = runs * per_run
        noise_std = math.sqrt(total) * 2.0 * W * clip / (n * mus["gradient_descent"])
        theta0 = self._start(data, gram)
        progress = Progress(self.verbose, total, type(self).__name__)
        # Inputs checked by _validate; the leverage is the Gram release's (P symmetric).
        iterate_runs = [_gradient_steps(data.X, data.y, data.w, gram.leverage, clip_norm=clip,
                                        noise_std=noise_std, learning_rate=data.eta,
                                        n_iter=per_run, rng=rng, fit_intercept=self.fit_intercept,
                                        theta0=theta0, preconditioner=gram.root,
                                        progress=progress, max_weight=W)
                        for _ in range(runs)]
        progress.close()
        if runs > 1:
            estimates = np.stack([r[burn:].mean(axis=0) for r in iterate_runs])
        else:
            estimates = split_estimates(iterate_runs[0], self.ci_method, burn, self.n_batches)
        if not np.all(np.isfinite(estimates)):
            raise FloatingPointError(
                "Non-finite iterates (floating-point overflow). Inputs are capped and gradients "
                "clipped, so only extreme parameters (learning_rate, clip_norm) can cause this.")
        M, offset = original_scale_map(data.scaling, self.fit_intercept)
        # The plan before the noise cut it, when it did (the fit warns).
        cut = self.n_iter is None and wanted > total and noise_cap < work_cap
        return _Steps(iterate_runs, estimates, estimates @ M.T + offset, M, theta0, runs,
                      per_run, burn, total, noise_std, wanted if cut else None)

    def _release_meat_and_check(self, data: _Data, gram: _GramRelease, clip: float,
                                steps: _Steps, theta_cov: np.ndarray, mus: dict, rng):
        """Release 5 at the estimate: the sandwich meat and the clipping check.

        The meat ``sum_i c_i c_i^T`` of the clipped gradients has sensitivity
        ``sqrt(2) W**2 C**2``; the count of the gradients clipped beyond the
        estimate's noise, 1
        (:func:`~skdp.linear_model._sandwich.private_meat_and_clipping`):
        each row's residual is moved :func:`check_margin` standard
        deviations of ``z_i . theta`` (under ``theta_cov``, the AR(1)
        model's covariance of the estimate: post-processing of the steps)
        towards 0 before its gradient norm is compared with the clip. Both
        are drawn as planned (every charged share is drawn); the meat goes
        unused when the Gram matrix resolved no direction.
        """
        theta = steps.estimates.mean(axis=0)
        root = np.eye(data.q) if gram.root is None else gram.root
        meat, _, clipping, clipping_std = private_meat_and_clipping(
            data.X, data.y, data.w, gram.leverage, theta, clip_norm=clip, max_weight=data.W,
            fit_intercept=self.fit_intercept, root=root, mu_meat=mus["population"],
            mu_check=mus["clip_check"], rng=rng, theta_cov=theta_cov,
            margin=check_margin(data.q))
        return meat, clipping, clipping_std

    def _standard_errors_from(self, data: _Data, gram: _GramRelease, steps: _Steps):
        """Post-processing of the steps: the estimate, its standard errors, their model, the drift.

        On the original scale. ``bse`` is the largest of the batch-means (or
        independent runs') error, the autocorrelation-based error and the
        AR(1) model's error (class Notes, *Standard errors*). The third
        value is that model's covariance of the estimate on the fitting
        scale (for the clipping check's margin). The drift is
        the halves' contrast of the run in each direction of that model, in
        the model's standard deviations (:func:`contrast_z`; for
        independent runs, the halves of each run's kept iterates). The last
        value is the largest share of the start's error that the estimate
        keeps in a direction of that model (:func:`weighted_covariance`).
        """
        pre, M = gram.pre, steps.scale_map
        theta_orig, bse, _ = t_interval(steps.estimates_orig, 0.05)
        if steps.runs == 1 and self.ci_method == "batched_means":
            # Slowly mixing iterates make batch means correlated and their spread too
            # small; the autocorrelation-based standard error guards against that.
            kept = steps.iterate_runs[0][steps.burn:]
            kept = kept[kept.shape[0] % self.n_batches:]
            bse = np.maximum(bse, mean_standard_error(kept @ M.T))
        # Runs too short for the empirical errors to see the slowest mixing, and the
        # pilot's own error: the AR(1) model of every direction guards both.
        theta = steps.estimates.mean(axis=0)
        if pre is None:
            basis, start_var, curvature = None, theta**2, None  # the start 0 is off by -theta*
        else:
            basis = (pre.eigenvalues + pre.ridge, pre.eigenvectors)
            sigma_a = gram.entry_std
            # Noise norm of A_hat with a margin for the fluctuation of its largest
            # eigenvalue: the directions it resolves, and the contraction it
            # guarantees in each.
            e = noise_norm(sigma_a, data.q, CURVATURE_MARGIN)
            # With declared bounds (and no norm_bound) the Gram saw every row
            # unclipped, and its A_yy bounds the signal in the resolved directions.
            unclipped = data.bx is not None and data.by is not None and self.norm_bound is None
            start_var = pilot_variance(theta, pre.eigenvalues, pre.eigenvectors, pre.ridge,
                                       sigma_a, sigma_a * gram.label_bound / gram.norm_bound,
                                       pre.label_moment if unclipped else None, e)
            curvature = data.eta * (pre.eigenvalues - e) / basis[0]
        # Overflow from extreme declared bounds shows up as non-finite standard errors,
        # which the check below reports.
        step_std = data.eta * steps.noise_std
        args = (steps.per_run, self.ci_method, steps.burn, self.n_batches)
        with np.errstate(over="ignore", invalid="ignore"):
            model = ar1_directions(steps.iterate_runs, steps.theta0, step_std, basis, curvature)
            # g: how much of the start's error the estimate keeps, per direction (the
            # convergence check; a non-finite share counts as all of it).
            model_cov, g = weighted_covariance(model, estimate_weights(*args), step_std,
                                               start_var)
            start_left = float(np.nan_to_num(np.max(g), nan=1.0))
            bse = np.maximum(bse, np.sqrt(np.maximum(np.diag(M @ model_cov @ M.T), 0.0)))
            # The drift check: the halves' difference against what the same model allows.
            drift = contrast_z(model, steps.iterate_runs, steps.theta0, halves_contrast(*args),
                               step_std, start_var)
        _check_finite(theta_orig, bse)
        return theta_orig, bse, model_cov, drift, start_left

    def _sampling_covariance(self, data: _Data, gram: _GramRelease, steps: _Steps, meat):
        """Post-processing: the private HC1 sandwich on the original scale (None without one)."""
        pre = gram.pre
        # Without a resolved direction the sandwich would take its bread from the noise.
        if meat is None or pre is None:
            return None
        # The bread is A_hat with its eigenvalues floored at the ridge (its noise level).
        a_eigs = np.maximum(pre.eigenvalues, pre.ridge)
        M = steps.scale_map
        cov = M @ sandwich_covariance(meat, (a_eigs, pre.eigenvectors), gram.root, data.n) @ M.T
        _check_finite(cov)
        return cov

    def _warn_unresolved(self, pre, entry_std: float, q: int) -> tuple[list[str], dict]:
        """Warn about directions the private Gram matrix cannot resolve, naming their columns.

        An eigenvalue of ``A_hat`` below the typical norm of its noise, ``2
        sigma sqrt(q)``, cannot be told from 0: exactly collinear columns
        (a duplicate, a constant beside the intercept) and near-collinear
        ones at this budget. Only when the median eigenvalue is resolved
        (at least twice that norm): otherwise the whole spectrum is at the
        noise level, a matter of budget, not of collinearity.
        Post-processing of the released Gram matrix. Returns the names
        (empty without a warning) and ``{'unresolved': message}`` (empty
        without one).
        """
        typical = 2.0 * entry_std * math.sqrt(q)
        weak = pre.eigenvalues < typical
        # Collinearity is a few weak directions in a resolved spectrum; when the
        # bulk is below the noise (many columns, a small budget) the gradient
        # steps, not the Gram matrix, resolve the directions.
        if not np.any(weak) or np.median(pre.eigenvalues) < 2.0 * typical:
            return [], {}
        loadings = np.abs(pre.eigenvectors[:, weak]).max(axis=1)
        names = [name for name, load in zip(self._coef_names(), loadings) if load >= 0.25]
        message = (
            f"The private Gram matrix cannot resolve {int(weak.sum())} direction(s) of the "
            f"features at this budget, mostly along {names}: exactly or nearly collinear "
            "columns (or too little spread for the noise). Their coefficients are not "
            "identified separately; their intervals should be wide, and where they are not, "
            "do not trust them. Drop or combine such columns, or give more rows or budget.")
        warn(message, UserWarning)
        return names, {"unresolved": message}

    def _warn_offset(self, a_hat: np.ndarray, entry_std: float, unresolved: list,
                     warned: dict) -> tuple[list[str], dict]:
        """Warn about columns far from 0 against their spread (:func:`offset_columns`).

        Only without declared bounds: declared bounds centre and scale every
        column into [-1, 1]. Adds the columns to ``unresolved`` and the
        message to ``warned`` under 'uncentred'.
        """
        found = offset_columns(a_hat, entry_std)
        if found.size == 0:
            return unresolved, warned
        names = [self._coef_names()[j] for j in found]
        message = offset_message(names, "the estimate may not have moved from its start "
                                        "there while its intervals look narrow")
        warn(message, UserWarning)
        # The intercept is not resolved either (the message says so).
        merged = unresolved + [name for name in names + ["intercept"] if name not in unresolved]
        return merged, dict(warned, uncentred=message)

    def _warn(self, steps: _Steps, clipping, clipping_std: float, clip: float, data: _Data,
              gram: _GramRelease, drift: np.ndarray,
              start_left: float) -> tuple[float | None, dict]:
        """Warnings computed from released quantities only; returns the clipping check's resolution.

        Also returns the messages raised, by kind ('not_converged',
        'clipping', 'drift'), for ``fit_warnings_``.

        The resolution is the smallest clipping bias the check can tell from
        0 (as many rows as 3 noise stds of the count, each clipped by one
        clip norm), in units of the smallest standard error of the batch
        means in the preconditioned coordinates; None without a check.
        """
        raised = {}
        # The plan's step count comes from the Gram's smallest eigenvalue, which at a small
        # budget is its noise's; the run itself says whether it has forgotten its start.
        if steps.wanted is not None and start_left >= START_LEFT:
            raised["not_converged"] = (
                f"The private Gram matrix asks for about {steps.wanted} steps to converge, but "
                f"at this budget the noise allows {steps.total} (more steps would make the "
                "clipping bite on the noisy iterates), and the estimate keeps "
                f"{start_left:.0%} of the start's error in its slowest direction: it may not "
                "have converged in the directions the data barely determine, and the "
                "intervals may not cover there. Standardised columns, tighter declared bounds, "
                "more rows or a larger epsilon help.")
        elif gram.pre is None and self.n_iter is None and start_left >= START_LEFT:
            # Without a preconditioner there is no plan to cut, but the fixed plain steps
            # may still leave the start (0) unforgotten along nearly collinear columns.
            raised["not_converged"] = (
                f"After {steps.total} plain steps (no preconditioner) the estimate keeps "
                f"{start_left:.0%} of the start's error in its slowest direction: it may not "
                "have converged in the directions the data barely determine (nearly collinear "
                "columns), and the intervals may not cover there. Standardise or combine the "
                "columns, or give more rows or budget.")
        if "not_converged" in raised:
            warn(raised["not_converged"], ConvergenceWarning)
        estimates, root, n, W = steps.estimates, gram.root, data.n, data.W
        m = estimates.shape[0]
        wspace = estimates if root is None else np.linalg.solve(root, estimates.T).T
        se_w = wspace.std(axis=0, ddof=1) / math.sqrt(m)
        resolution = None
        if clipping is not None:
            # Each clipped row moves the mean gradient by w_i (||g_i|| - C) / n, an excess no
            # private release can bound (one row may exceed the clip by any amount). In the
            # preconditioned coordinates the Hessian is about I, so a mean-gradient shift
            # compares directly with the standard errors there. The count, 3 noise stds
            # down, is the number of rows surely clipped; if that many rows, each clipped
            # by one clip norm, would move the estimate by half a standard error, the
            # clipping may spoil the intervals. The count leaves out the rows clipped only
            # because the estimate is noisy (check_margin): at small budgets they were a
            # quarter of the rows, and the check warned about a bias that was not there.
            # (A capped excess, released beside the count and required to clear the bar
            # too, missed 10-35 clipped data errors on diamonds at epsilon 10; in place of
            # the count it would miss many rows each clipped by a little, whose excess
            # sum is below its noise.)
            rows = float(clipping[0]) - 3.0 * clipping_std
            with np.errstate(divide="ignore"):
                resolution = float(W * clip * 3.0 * clipping_std / n / np.min(se_w))
            if W * clip * rows / n > 0.5 * float(np.min(se_w)):
                raised["clipping"] = (
                    f"At least {rows:.0f} per-example gradients ({max(rows, 0.0) / n:.2%}) are "
                    "clipped at the estimate, beyond what its own noise explains (a private "
                    "count, 3 noise stds down). Each moves "
                    "the estimate by its excess over the clip norm, which no private check can "
                    "bound, and this many rows clipped by one clip norm each would bias it by "
                    "more than half a standard error: the intervals may not cover the "
                    "least-squares solution. Declare wider bounds, raise clip_norm, or read the "
                    "estimate as a robust (clipped) fit, whose solution the intervals do cover "
                    "(estimand() computes it, without privacy, on data you hold).")
                warn(raised["clipping"], UserWarning)
        # Family-wise DRIFT_LEVEL over the q directions (Bonferroni), each statistic at
        # most standard normal where the model holds.
        if np.any(drift > stats.norm.isf(DRIFT_LEVEL / (2 * data.q))):
            raised["drift"] = (
                f"The iterates still drift: the first half of the run differs from the second "
                f"by {float(np.max(drift)):.1f} standard deviations of what the noise and the "
                "start's error allow, so the iterates had not settled and the intervals may "
                "not cover. Raise n_iter and burn_in (or leave learning_rate to the plan), or "
                "declare bounds_X/bounds_y.")
            warn(raised["drift"], ConvergenceWarning)
        return resolution, raised

    def _warn_noise(self, theta: np.ndarray, bse: np.ndarray, p: int) -> dict:
        """The noise warning, from the released estimate and its standard errors only."""
        if p == 0:
            return {}
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            t2 = float(np.mean((theta[:p] / bse[:p]) ** 2))
        if not t2 < NOISE_T2:  # (a NaN, from a zero standard error, does not warn)
            return {}
        message = (
            f"The privacy noise is as large as the signal: the coefficients are on average "
            f"within one standard error of zero (mean squared t-value {t2:.2g}, below "
            f"{NOISE_T2:g}). The intervals account for it, but the point estimate, and "
            "predict(), may do worse than predicting the mean. For prediction, give more "
            "rows or budget, declare tighter bounds, or use AdaSSPRegressor (a ridge that "
            "shrinks towards zero).")
        warn(message, UserWarning)
        return {"noise": message}

    # -- intervals ---------------------------------------------------------------

    def _coef_names(self) -> list[str]:
        names = (list(self.feature_names_in_) if hasattr(self, "feature_names_in_")
                 else [f"x{j}" for j in range(self.n_features_in_)])
        return names + (["intercept"] if self.fit_intercept else [])

    def _theta(self) -> np.ndarray:
        return np.append(self.coef_, self.intercept_) if self.fit_intercept else self.coef_

    def conf_int(self, alpha: float = 0.05, target: str = "empirical"):
        """Confidence intervals for the coefficients (intercept last), on the original scale.

        Reads only the fitted private estimates: no data, no budget.

        Parameters
        ----------
        alpha : float, default=0.05
            Nominal coverage is 1 - alpha.
        target : {'empirical', 'population'}, default='empirical'
            ``'empirical'``: the least-squares solution of the fitted data
            (Brown et al. 2024); the width is the privacy noise only.
            ``'population'``: the least-squares parameter of the population
            the rows were drawn from; the standard error adds the private HC1
            sandwich estimate of the sampling variance
            (``sqrt(bse_**2 + diag(sampling_cov_))``), with the t quantile on
            m - 1 degrees of freedom (conservative for the sampling part).
            See the class Notes for when each fails.

        Returns
        -------
        ndarray of shape (n_coef, 2), or DataFrame
            Columns lower, upper; a DataFrame indexed by feature names (and
            'intercept') when fitted on a DataFrame.
        """
        check_is_fitted(self)
        if not (isinstance(alpha, Real) and 0 < alpha < 1):
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}.")
        se = self._standard_errors(target)
        out = t_bounds(self._theta(), se, self.estimates_.shape[0], alpha)
        if hasattr(self, "feature_names_in_"):
            return pd.DataFrame(out, index=self._coef_names(), columns=["lower", "upper"])
        return out

    def _standard_errors(self, target: str) -> np.ndarray:
        if target == "empirical":
            return self.bse_
        if target == "population":
            if self.sampling_cov_ is None:
                if self.population_share > 0:
                    raise ValueError(
                        "Population intervals are unavailable for this fit: its private Gram "
                        "matrix resolved no direction (preconditioned_ is False), so the "
                        "sandwich would take its bread from the noise. Use more rows or a "
                        "larger epsilon.")
                raise ValueError("Population intervals need population_share > 0 at fit time "
                                 "(the sampling variance is estimated privately then).")
            return np.sqrt(self.bse_**2 + np.maximum(np.diag(self.sampling_cov_), 0.0))
        raise ValueError(f"target must be 'empirical' or 'population', got {target!r}.")

    def estimand(self, X, y, sample_weight=None) -> np.ndarray:
        """What the empirical intervals cover, computed on rows you hold: not private.

        DP-GD's iterates settle where the mean clipped gradient vanishes,
        ``sum_i w_i z_i psi_i(r_i) = 0`` with ``psi_i`` the residual clipped
        to ``+-clip_norm_ / ||P z_i||`` (P the private preconditioner, ``z_i``
        the row on the fitting scale with its intercept 1). That point
        minimises a Huber loss whose threshold differs from row to row: it
        is the least-squares solution when no gradient is clipped there, and
        a robust fit that discounts rows of large residual or leverage when
        some are. ``conf_int(target='empirical')`` covers this point at
        about its nominal level (measured on the interval suite, where
        clipping binds: docs, *When to trust the intervals*); the gap to
        least squares is the clipping bias, for which no interval is
        widened.

        This reads X and y exactly and adds no noise: **its output is not
        differentially private** (a :class:`~skdp.exceptions.PrivacyLeakWarning`
        says so at each call). Use it for checks on data you may see
        (simulations, the data owner's audit of a release), never to
        publish.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
            The fitted rows (or other rows, for the same clipped problem on
            them).
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,) or None, default=None
            As passed to ``fit``.

        Returns
        -------
        ndarray of shape (n_features + fit_intercept,)
            On the original scale, intercept last (the rows of ``conf_int``).

        Examples
        --------
        >>> import numpy as np
        >>> from skdp.linear_model import DPLinearRegressionGD
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(2000, 2))
        >>> y = X @ [1.0, -1.0] + rng.exponential(size=2000)  # skewed noise
        >>> reg = DPLinearRegressionGD(epsilon=10.0, clip_norm=1.0, random_state=0).fit(X, y)
        >>> ls = np.linalg.lstsq(np.c_[X, np.ones(2000)], y, rcond=None)[0]
        >>> target = reg.estimand(X, y)
        >>> bool(abs(target[-1] - ls[-1]) > 0.1)  # a tight clip moves the intercept
        True
        """
        check_is_fitted(self)
        warn("estimand() reads X and y exactly, without noise: its output is outside "
                      "the privacy guarantee.", PrivacyLeakWarning)
        if not hasattr(self, "_scaling"):
            raise AttributeError("This fit was pickled by a version without estimand(); "
                                 "refit it to use it.")
        X, y = validate_new_rows(self, X, y, reset=False, dtype=np.float64, y_numeric=True)
        w = check_weights(sample_weight, X.shape[0], self.max_weight)
        X, y = self._scaling.transform(X, y)
        lev = _leverage(X, self._root, self.fit_intercept)
        Z = np.column_stack([X, np.ones(X.shape[0])]) if self.fit_intercept else X
        M, offset = original_scale_map(self._scaling, self.fit_intercept)
        return M @ clipped_least_squares(Z, y, lev, self.clip_norm_, w) + offset

    def summary(self, alpha: float = 0.05, target: str = "empirical") -> pd.DataFrame:
        """Coefficient table in statsmodels' layout: coef, std err, t, P>|t| and the interval.

        The t statistic is ``coef / std err`` and its two-sided p-value uses
        Student's t with m - 1 degrees of freedom (m = ``n_batches``), as the
        interval does; both test the hypothesis that the target coefficient
        (see ``conf_int``) is 0. Post-processing only.

        Parameters
        ----------
        alpha : float, default=0.05
        target : {'empirical', 'population'}, default='empirical'

        Returns
        -------
        DataFrame
            Indexed by feature names (``x0, x1, ...`` for arrays) and
            'intercept'; columns ``coef``, ``std err``, ``t``, ``P>|t|``,
            ``[alpha/2``, ``1-alpha/2]``. ``attrs["notes"]`` holds the notes a
            statsmodels summary prints below its table: what the intervals
            cover, what the private clipping check saw and that no interval
            is widened for clipping bias (none is bias-bounded), one note for
            each warning the fit raised about clipping or convergence
            (``fit_warnings_``), and the columns the private Gram matrix
            cannot identify separately (``skdp regress`` prints them).
        """
        ci = np.asarray(self.conf_int(alpha, target))
        theta = self._theta()
        se = self._standard_errors(target)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = np.where(se > 0, theta / se, np.inf * np.sign(theta))
        pvalue = 2.0 * stats.t.sf(np.abs(t), df=self.estimates_.shape[0] - 1)
        lo, hi = f"[{alpha / 2:g}", f"{1 - alpha / 2:g}]"
        table = pd.DataFrame({"coef": theta, "std err": se, "t": t, "P>|t|": pvalue,
                              lo: ci[:, 0], hi: ci[:, 1]}, index=self._coef_names())
        table.attrs["notes"] = self._summary_notes(target)
        return table

    def _summary_notes(self, target: str) -> list[str]:
        """The notes of :meth:`summary`, from fitted (released) quantities only."""
        # Fits pickled by an earlier version lack the newer attributes.
        resolution = getattr(self, "clip_check_resolution_", None)
        unresolved = getattr(self, "unresolved_features_", [])
        if target == "empirical":
            notes = ["Intervals for the least-squares solution of the fitted rows, or where "
                     "gradients are clipped at it, for the solution of the clipped (Huber-type) "
                     "problem (estimand() computes it, without privacy, on data you hold); "
                     "their width is the privacy noise only."]
        else:
            notes = ["Intervals for the population least-squares parameter: privacy noise "
                     "and a private HC1 estimate of the sampling variance."]
        if self.clipped_fraction_ is None:
            notes.append("Clipping was not checked (clip_share=0). No interval is widened "
                         "for clipping bias.")
        else:
            notes.append(
                f"Clipping: {100 * self.clipped_fraction_:.2g}% of the per-example gradients "
                f"are clipped at the estimate beyond its own noise (private count, noise sd "
                f"{100 * self.clipped_fraction_std_:.2g}%). No interval is widened for "
                "clipping bias (none is bias-bounded): with clipped rows the estimate leans "
                "to a robust, Huber-type fit, and where their residuals are skewed the "
                "intervals can miss least squares even when the count is too noisy to show it"
                + ("." if resolution is None else
                   f" (this check sees a bias above about {resolution:.2g} standard errors, "
                   "counting each clipped row as one clip norm beyond the clip; it counts "
                   "only rows clipped beyond the estimate's own noise, so where that noise "
                   "is large it sees less)."))
        if self.gram_share > 0 and not getattr(self, "preconditioned_", True):
            notes.append("The private Gram matrix resolved none of its directions at this "
                         "budget (no eigenvalue above its noise), so the steps ran without "
                         "its preconditioner and pilot, as plain DP-GD from 0: the intervals "
                         "do not rest on a pilot shrunk along the directions the data barely "
                         "determine, and are often wider. No population intervals.")
        raised = getattr(self, "fit_warnings_", {})
        if "clipping" in raised:
            notes.append("The clipping check warned: enough gradients are clipped to bias the "
                         "estimate by more than half a standard error, so the intervals may "
                         "miss least squares; read the estimate as a robust (clipped) fit, "
                         "whose solution they cover.")
        if "not_converged" in raised:
            cause = (f"the noise allowed {self.n_iter_} steps where the private Gram matrix "
                     f"asked for about {self.planned_n_iter_}"
                     if self.planned_n_iter_ > self.n_iter_ else
                     f"after {self.n_iter_} plain steps")
            notes.append(f"Possibly not converged: {cause}, and the estimate keeps part of the "
                         "start's error (the warning says how much): where the data barely "
                         "determine a coefficient its interval may not cover.")
        if "drift" in raised:
            notes.append("The iterates drift between the two halves of the run beyond what "
                         "the noise and the start's error allow: the iterates had not "
                         "settled, and the intervals may not cover.")
        if "noise" in raised:
            notes.append("The noise is as large as the signal (the coefficients are on "
                         "average within one standard error of zero): the point estimate "
                         "may predict worse than the mean; the intervals account for it.")
        if "uncentred" in raised:
            notes.append("Columns far from 0 against their spread (named in the warning): "
                         "their coefficients and the intercept are not resolved at this "
                         "budget, and their intervals may not cover; centre or standardise "
                         "them, or declare bounds_X and bounds_y.")
        if unresolved:
            notes.append(f"Not identified separately at this budget (nearly collinear or "
                         f"uncentred): {', '.join(map(str, unresolved))}.")
        return notes
