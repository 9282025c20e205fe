"""DP-GD for linear regression with confidence intervals (Brown et al. 2024)."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from skdp.base import PRIVACY_PARAMS_DOC, DPEstimatorMixin, LinearPredictMixin
from skdp.clipping import clipped_gradient_sum
from skdp.linear_model._intervals import CI_METHODS, split_estimates, t_bounds, t_interval
from skdp.mechanisms import gaussian_noise, make_rng, private_gram
from skdp.utils._sklearn import Interval, StrOptions, _fit_context
from skdp.utils._validation import validate_private

__all__ = ["DPLinearRegressionGD", "dp_gradient_descent"]


def dp_gradient_descent(X, y, *, clip_norm: float, noise_std: float, learning_rate: float,
                        n_iter: int, rng: np.random.Generator, fit_intercept: bool = True,
                        theta0=None) -> np.ndarray:
    """Full-batch DP gradient descent for least squares (Brown et al. 2024, Algorithm 1).

    At each step the per-example gradients ``x_i (x_i . theta - y_i)`` (with
    ``x_i`` extended by a constant 1 when ``fit_intercept``) are clipped to
    ``clip_norm``, averaged over the n rows, and N(0, noise_std**2 I) is added:
    ``theta_t = theta_{t-1} - learning_rate * (g_t + z_t)``.

    Parameters
    ----------
    X : ndarray of shape (n, p)
    y : ndarray of shape (n,)
    clip_norm : float
    noise_std : float
        Std of the noise added to the mean clipped gradient (lambda in the
        paper). The mean has replace-one sensitivity ``2 clip_norm / n``, so
        the n_iter steps are ``sqrt(n_iter) * 2 clip_norm / (n noise_std)``-GDP.
    learning_rate : float
    n_iter : int
    rng : numpy.random.Generator
    fit_intercept : bool, default=True
        The intercept is the last coordinate of theta.
    theta0 : ndarray, optional
        Start (default zeros).

    Returns
    -------
    iterates : ndarray of shape (n_iter, p + fit_intercept)
        theta_1, ..., theta_T. Cost per step: two matrix-vector products with
        X and O(n) for the clip factors.
    """
    n, p = X.shape
    q = p + int(fit_intercept)
    theta = np.zeros(q) if theta0 is None else np.array(theta0, dtype=float)
    sq = np.einsum("ij,ij->i", X, X)
    row_norms = np.sqrt(sq + 1.0) if fit_intercept else np.sqrt(sq)
    iterates = np.empty((n_iter, q))
    # Overflow (features near the float limit) shows up as non-finite
    # iterates, which the caller reports; no warning per step.
    with np.errstate(over="ignore", invalid="ignore"):
        _descend(X, y, theta, row_norms, iterates, clip_norm, noise_std, learning_rate,
                 fit_intercept, rng)
    return iterates


def _descend(X, y, theta, row_norms, iterates, clip_norm, noise_std, learning_rate,
             fit_intercept, rng):
    n, p = X.shape
    q = theta.shape[0]
    for t in range(iterates.shape[0]):
        residuals = X @ theta[:p] - y
        if fit_intercept:
            residuals += theta[p]
        grad = clipped_gradient_sum(X, residuals, clip_norm, row_norms=row_norms,
                                    fit_intercept=fit_intercept) / n
        theta = theta - learning_rate * (grad + gaussian_noise(noise_std, q, rng))
        iterates[t] = theta


_DOC = """Linear regression by differentially private gradient descent, with confidence intervals.

Full-batch DP-GD (Brown et al. 2024, Algorithm 1): every step clips the per-example
gradients of the squared loss to ``clip_norm``, averages them over all rows,
and adds Gaussian noise calibrated exactly so that all the steps together are
(epsilon, delta)-DP. The estimate is the mean of the post-burn-in iterates,
and the spread of m nearly independent estimates gives Student-t confidence
intervals (Section 3): ``conf_int``, ``bse_``, ``summary``.

Parameters
----------
%(epsilon)s
%(delta)s
clip_norm : float or None, default=None
    L2 bound of each per-example gradient ``(x_i, 1) * residual_i``. None
    means ``5 * sqrt(n_features + fit_intercept)``, the paper's choice for
    standardised features (Appendix B). Larger means less clipping bias and
    more noise.
learning_rate : float, default=0.25
    Step size. 0.25 is the paper's step for features with unit covariance;
    it must be below ``2 / lambda_max(X^T X / n)`` (including the intercept
    column) or the iterates diverge.
n_iter : int, default=200
    Total number of gradient steps, over all runs for
    ``ci_method='independent_runs'``. More steps do not cost privacy (the
    noise per step grows as ``sqrt(n_iter)``), and the averaged estimate
    barely changes; they give the interval more iterates.
fit_intercept : bool, default=True
    Fit an intercept through a constant 1 column that is part of every
    clipped gradient (so the intercept has no unclipped coordinate). The
    data are never centred: that would use their mean without paying for it.
ci_method : {'batched_means', 'checkpoints', 'independent_runs'}, default='batched_means'
    How the m = ``n_batches`` estimates are made (Section 3.1): the means of
    m consecutive batches of one run's post-burn-in iterates; m checkpoints
    of one run equally spaced after the burn-in; or m independent runs of
    ``n_iter // n_batches`` steps, each summarised by the mean of its
    post-burn-in iterates (the budget is split exactly: each run is
    ``mu / sqrt(m)``-GDP).
n_batches : int, default=10
    m, the number of estimates behind the t-interval (m - 1 degrees of
    freedom); at least 2.
burn_in : int, default=20
    Iterates discarded at the start of every run.
population_share : float, default=0.1
    Share of the budget, as a fraction of ``mu**2``, spent on private
    sufficient statistics (a noisy Gram matrix of the rows
    ``(x_i, 1, y_i)``) so that ``conf_int(target='population')`` can add the
    sampling variance of least squares. 0 spends everything on DP-GD and
    makes population intervals unavailable.
norm_bound : float or None, default=None
    L2 bound on the rows ``(x_i, 1, y_i)`` used for those statistics (longer
    rows are clipped). None means ``2 * sqrt(n_features + 2)``, for
    standardised features and a label of unit scale.
%(accountant)s
%(random_state)s

Attributes
----------
coef_ : ndarray of shape (n_features,)
intercept_ : float
bse_ : ndarray of shape (n_features + fit_intercept,)
    Standard errors of ``coef_`` (and ``intercept_``, last): ``sd / sqrt(m)``
    of the m estimates.
estimates_ : ndarray of shape (n_batches, n_features + fit_intercept)
    The m private estimates behind the interval.
sampling_cov_ : ndarray of shape (n_features + fit_intercept,) * 2 or None
    Private estimate of the least-squares sampling covariance
    ``sigma^2 (X^T X)^{-1}`` (None when ``population_share == 0``).
privacy_spent_ : PrivacySpent
    ``(epsilon, delta, mu)`` of this fit.
noise_std_ : float
    Std of the Gaussian noise added to the mean clipped gradient at each step.
n_iter_ : int
    Gradient steps taken.
n_features_in_ : int
feature_names_in_ : ndarray of shape (n_features,)
    Only when X is a DataFrame with string column names.

See Also
--------
skdp.accounting.BudgetAccountant : Budget across many fits.

Notes
-----
**Guarantee.** Neighbouring datasets differ in one row ``(x_i, y_i)``
replaced by another; n is public. Each step releases the mean of n clipped
gradients, whose replace-one L2 sensitivity is ``2 * clip_norm / n``, plus
N(0, noise_std_**2 I). The T steps form an adaptive composition of Gaussian
mechanisms, ``sqrt(T) * 2 clip_norm / (n noise_std_)``-GDP, and with the
statistics release (``2 norm_bound**2``-sensitive, see
:func:`skdp.mechanisms.private_gram`) the whole fit is exactly mu-GDP for the
mu of (epsilon, delta). Everything derived from the fit (``conf_int``,
``summary``, predictions) is post-processing. The guarantee holds for every
dataset; clipping only affects accuracy.

**What the intervals cover.** As proved in the paper, the t-intervals
cover the *empirical* least-squares solution of the data you fitted (their
randomness is the privacy noise), provided clipping is rare and the
estimates are nearly independent (enough iterations per batch). For the
*population* parameter use ``conf_int(target='population')``, which adds a
private estimate of the least-squares sampling variance; that estimate is
only accurate when n is large relative to ``norm_bound**2 * n_features / mu``.

**Scale.** The defaults assume standardised features (mean 0, variance 1)
and a label whose residuals are of order 1. Rescale with constants you know
without looking at the private data (a documented range, a public
reference sample): fitting a ``StandardScaler`` on the private data
releases its means and variances without any guarantee.

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
array([ 1.  , -0.5 ,  0.27])
>>> reg.conf_int(alpha=0.05).shape
(4, 2)
"""


class DPLinearRegressionGD(DPEstimatorMixin, LinearPredictMixin, RegressorMixin, BaseEstimator):
    __doc__ = _DOC % PRIVACY_PARAMS_DOC

    _parameter_constraints: dict = {
        **DPEstimatorMixin._parameter_constraints,
        "clip_norm": [Interval(Real, 0, None, closed="neither"), None],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "n_iter": [Interval(Integral, 1, None, closed="left")],
        "fit_intercept": ["boolean"],
        "ci_method": [StrOptions(set(CI_METHODS))],
        "n_batches": [Interval(Integral, 2, None, closed="left")],
        "burn_in": [Interval(Integral, 0, None, closed="left")],
        "population_share": [Interval(Real, 0, 1, closed="left")],
        "norm_bound": [Interval(Real, 0, None, closed="neither"), None],
    }

    def __init__(self, *, epsilon=1.0, delta=1e-6, clip_norm=None, learning_rate=0.25,
                 n_iter=200, fit_intercept=True, ci_method="batched_means", n_batches=10,
                 burn_in=20, population_share=0.1, norm_bound=None, accountant=None,
                 random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.clip_norm = clip_norm
        self.learning_rate = learning_rate
        self.n_iter = n_iter
        self.fit_intercept = fit_intercept
        self.ci_method = ci_method
        self.n_batches = n_batches
        self.burn_in = burn_in
        self.population_share = population_share
        self.norm_bound = norm_bound
        self.accountant = accountant
        self.random_state = random_state

    def _steps_per_run(self) -> int:
        """Check the iteration budget against the CI method; return steps per run."""
        if self.ci_method == "independent_runs":
            per_run = self.n_iter // self.n_batches
            if per_run <= self.burn_in:
                raise ValueError(
                    f"ci_method='independent_runs' gives each of the n_batches={self.n_batches} "
                    f"runs n_iter // n_batches = {per_run} steps, which must exceed "
                    f"burn_in={self.burn_in}; raise n_iter or lower burn_in.")
            return per_run
        if self.n_iter - self.burn_in < self.n_batches:
            raise ValueError(
                f"n_iter - burn_in = {self.n_iter - self.burn_in} iterates cannot form "
                f"n_batches={self.n_batches} batches; raise n_iter or lower burn_in.")
        return self.n_iter

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit by DP-GD and compute the interval estimates.

        Parameters
        ----------
        X : array-like or DataFrame of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : DPLinearRegressionGD
        """
        steps_per_run = self._steps_per_run()
        X, y = validate_private(self, X, y, y_numeric=True, ensure_min_samples=2,
                             dtype=np.float64)
        n, p = X.shape
        q = p + int(self.fit_intercept)
        n_runs = self.n_batches if self.ci_method == "independent_runs" else 1
        total_steps = n_runs * steps_per_run
        clip_norm = self.clip_norm if self.clip_norm is not None else 5.0 * math.sqrt(q)
        norm_bound = self.norm_bound if self.norm_bound is not None else 2.0 * math.sqrt(p + 2)

        mu = self._budget_mu()
        spent = self._charge(mu)  # before any noise is drawn
        rng = make_rng(self.random_state)
        mu_gd = mu * math.sqrt(1.0 - self.population_share)
        # Mean clipped gradient: replace-one sensitivity 2 clip / n per step,
        # total_steps steps compose to sqrt(total_steps) * 2 clip / (n std).
        noise_std = math.sqrt(total_steps) * 2.0 * clip_norm / (n * mu_gd)

        runs = [dp_gradient_descent(X, y, clip_norm=clip_norm, noise_std=noise_std,
                                    learning_rate=self.learning_rate, n_iter=steps_per_run,
                                    rng=rng, fit_intercept=self.fit_intercept)
                for _ in range(n_runs)]
        if self.ci_method == "independent_runs":
            estimates = np.stack([r[self.burn_in:].mean(axis=0) for r in runs])
        else:
            estimates = split_estimates(runs[0], self.ci_method, self.burn_in, self.n_batches)
        theta, bse, _ = t_interval(estimates, 0.05)
        if not np.all(np.isfinite(theta)):
            raise FloatingPointError(
                "Non-finite iterates (floating-point overflow). Inputs are capped and gradients "
                "clipped, so only extreme parameters (learning_rate, clip_norm) can cause this.")
        sampling_cov = None
        if self.population_share > 0:
            mu_stats = mu * math.sqrt(self.population_share)
            gram, stats_std = private_gram(X, y, fit_intercept=self.fit_intercept,
                                           norm_bound=norm_bound, mu=mu_stats, rng=rng)
            sampling_cov = _sampling_covariance(gram, stats_std, theta, n)
        # Fitted state is set only once the fit has succeeded.
        self.coef_ = theta[:p]
        self.intercept_ = float(theta[p]) if self.fit_intercept else 0.0
        self.estimates_, self.bse_, self.sampling_cov_ = estimates, bse, sampling_cov
        self.noise_std_, self.n_iter_, self.privacy_spent_ = noise_std, total_steps, spent
        return self

    def _coef_names(self) -> list[str]:
        names = (list(self.feature_names_in_) if hasattr(self, "feature_names_in_")
                 else [f"x{j}" for j in range(self.n_features_in_)])
        return names + (["intercept"] if self.fit_intercept else [])

    def conf_int(self, alpha: float = 0.05, target: str = "empirical"):
        """Confidence intervals for the coefficients (intercept last).

        Reads only the fitted private estimates: no data, no budget.

        Parameters
        ----------
        alpha : float, default=0.05
            Nominal coverage is 1 - alpha.
        target : {'empirical', 'population'}, default='empirical'
            ``'empirical'``: the least-squares solution of the fitted data
            (Brown et al. 2024). ``'population'``: the parameter of the population
            the rows were drawn from; the standard error adds the privately
            estimated least-squares sampling variance
            (``sqrt(bse_**2 + diag(sampling_cov_))``), with the t quantile on
            m - 1 degrees of freedom (conservative for the sampling part).

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
        theta = np.append(self.coef_, self.intercept_) if self.fit_intercept else self.coef_
        out = t_bounds(theta, se, self.estimates_.shape[0], alpha)
        if hasattr(self, "feature_names_in_"):
            return pd.DataFrame(out, index=self._coef_names(), columns=["lower", "upper"])
        return out

    def _standard_errors(self, target: str) -> np.ndarray:
        if target == "empirical":
            return self.bse_
        if target == "population":
            if self.sampling_cov_ is None:
                raise ValueError("Population intervals need population_share > 0 at fit time "
                                 "(the sampling variance is estimated privately then).")
            return np.sqrt(self.bse_**2 + np.diag(self.sampling_cov_))
        raise ValueError(f"target must be 'empirical' or 'population', got {target!r}.")

    def summary(self, alpha: float = 0.05, target: str = "empirical") -> pd.DataFrame:
        """Coefficient table: coef, std err, and the interval bounds.

        Parameters
        ----------
        alpha : float, default=0.05
        target : {'empirical', 'population'}, default='empirical'

        Returns
        -------
        DataFrame
            Indexed by feature names (``x0, x1, ...`` for arrays) and
            'intercept'.
        """
        ci = np.asarray(self.conf_int(alpha, target))
        theta = np.append(self.coef_, self.intercept_) if self.fit_intercept else self.coef_
        lo, hi = f"[{alpha / 2:g}", f"{1 - alpha / 2:g}]"
        return pd.DataFrame({"coef": theta, "std err": self._standard_errors(target),
                             lo: ci[:, 0], hi: ci[:, 1]}, index=self._coef_names())


def _sampling_covariance(gram: np.ndarray, noise_std: float, theta: np.ndarray,
                         n: int) -> np.ndarray:
    """Least-squares sampling covariance ``sigma^2 (X^T X)^{-1}`` from a private Gram matrix.

    ``gram`` is the noisy Gram of rows (x, [1], y). The X block is projected
    to eigenvalues at least the typical spectral norm of its noise
    (``2 sqrt(q) noise_std``, a public constant); the residual sum of squares
    at ``theta`` is ``y'y - 2 theta'X'y + theta'X'X theta``, floored at the
    same noise level. Post-processing only.
    """
    q = theta.shape[0]
    gxx, gxy, gyy = gram[:q, :q], gram[:q, q], gram[q, q]
    floor = 2.0 * math.sqrt(q) * noise_std
    w, V = np.linalg.eigh(gxx)
    w = np.maximum(w, floor)
    gxx_inv = (V / w) @ V.T
    rss = gyy - 2.0 * theta @ gxy + theta @ gxx @ theta
    sigma2 = max(rss, floor) / max(n - q, 1)
    return sigma2 * gxx_inv
