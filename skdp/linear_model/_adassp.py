"""AdaSSP: sufficient-statistics perturbation with an adaptive ridge (Wang, 2018)."""

from __future__ import annotations

import math
from functools import partial
from numbers import Real

import numpy as np
from scipy import stats
from sklearn.base import BaseEstimator, RegressorMixin

from skdp.base import (
    MAX_WEIGHT,
    PRIVACY_PARAMS_DOC,
    DPEstimatorMixin,
    LinearPredictMixin,
    weight_bound,
)
from skdp.clipping import clip_rows
from skdp.linear_model._bounds import check_bounds, make_scaling, original_scale_map
from skdp.linear_model._preconditioner import offset_columns, offset_message
from skdp.linear_model._private_bounds import private_row_label_bounds, safe_search_mu
from skdp.linear_model._weights import check_weights
from skdp.mechanisms import gaussian_release, symmetric_release
from skdp.mechanisms._gram import gram_sensitivity
from skdp.utils._rows import sum_rows
from skdp.utils._sklearn import Interval, _fit_context
from skdp.utils._validation import validate_private
from skdp.utils._warnings import warn

__all__ = ["AdaSSPRegressor"]

#: Share of ``mu**2`` for the private row and label bounds, when searched.
BOUNDS_SHARE = 0.05
#: Largest share a safe bound search may take before the fit asks for declared bounds.
MAX_BOUNDS_SHARE = 0.5

_DOC = """Linear regression by AdaSSP: noisy sufficient statistics and an adaptive ridge.

The baseline of Wang (2018) used in the experiments of Brown et al. 2024: release
a noisy smallest eigenvalue of ``X^T X``, a noisy ``X^T X`` and a noisy
``X^T y``, choose the ridge ``l2`` from the first so that the noisy Gram
matrix is well conditioned with high probability, and solve
``(X^T X + noise + l2 I) theta = X^T y + noise``.

Without declared bounds, centre or standardise the columns: a column far
from 0 against its spread (a year, a depth of 62 +- 1.4) has its level
resolved by the noisy Gram matrix but not its variation, and the ridge
shrinks its coefficient and the intercept towards 0 (diamonds' depth and
table beside log carat: R^2 0.06 against OLS's 0.94). The fit warns when
it sees such a column in the released Gram matrix (post-processing).

Parameters
----------
%(epsilon)s
%(delta)s
bounds_X : tuple (lower, upper) or None, default=None
    Declared range of every feature (scalars, one value per feature, or
    Series or dicts keyed by column name), as in
    :class:`DPLinearRegressionGD`: values are clipped to it, the fit runs on
    the columns mapped to [-1, 1], and ``coef_`` and ``intercept_`` are on the
    original scale. The row bound is then exact, ``sqrt(n_features + 1)``.
bounds_y : tuple (lower, upper) or None, default=None
    Declared range of the label, used the same way (label bound 1).
norm_bound : float or None, default=None
    L2 bound of the rows ``(x_i, 1)`` (``x_i`` without intercept) on the
    fitting scale, in [1e-100, 1e100]; longer rows are clipped. None: exact
    with ``bounds_X``, else a private high quantile of the row norms (see
    Notes).
label_bound : float or None, default=None
    Bound on ``|y_i|`` on the fitting scale; labels are clipped to
    ``[-label_bound, label_bound]``. None: 1 with ``bounds_y``, else a
    private high quantile of ``|y_i|``.
fit_intercept : bool, default=True
    Fit an intercept through a constant 1 column inside the row bound.
failure_probability : float, default=0.05
    The ridge makes the noisy Gram matrix positive definite except with at
    most this probability (rho in Wang, 2018).
%(max_weight)s
%(accountant)s
%(random_state)s

Attributes
----------
coef_ : ndarray of shape (n_features,)
intercept_ : float
l2_penalty_ : float
    The ridge chosen from the private eigenvalue.
norm_bound_, label_bound_ : float
    The bounds used (fitting scale).
privacy_spent_ : PrivacySpent
privacy_shares_ : dict
    Each release's share of ``mu**2``: 'bounds' (0.05 or the safe share,
    only when a bound is searched privately), 'gram', 'xty' (equal) and 'eigenvalue' (the rest
    over ``q + 1``, at most a third; see Notes).
n_features_in_ : int
feature_names_in_ : ndarray of shape (n_features,)

Notes
-----
**Guarantee.** One row replaced (n public). When ``norm_bound`` or
``label_bound`` is not declared, 5%% of the budget's ``mu**2`` buys private
high quantiles of ``||(x_i, 1)||`` and ``|y_i|`` (one noisy binary search,
:func:`skdp.clipping.private_quantiles`, at the highest level it resolves
safely, ``max(0.5, 1 - 4 sigma / n)``). On small tables the search takes
more, ``(8 sqrt(18) / (n mu))**2`` (rows counted unweighted: they are
clipped before their weights apply), so that its comparisons stay 4 count
stds clear at the median (a wrong comparison far from the quantile sends the
bound octaves away); above half the budget the fit raises a ``ValueError``
before any charge and asks for declared bounds. The three releases split the rest of
``mu**2``: the Gram matrix and ``X^T y`` equally, the smallest eigenvalue,
which only sets the ridge, a ``1 / (q + 1)`` part (at most a third), so that
its noise is a quarter of the Gram noise's spectral norm (q the number of
coefficients; Wang, 2018, splits in three equal parts, which spends a third
of the budget on a number that at large n does not change the ridge).
Everything composes exactly.
Sensitivities under replace-one with ``||(x, 1)|| <= B``, ``|y| <= B_y`` and
weights at most W (``max_weight``; 1 without weights):
``lambda_min(X^T W X)`` moves by at most ``W B**2`` (Weyl: a rank-one PSD
term of norm <= W B**2 is removed and another added); ``X^T W X`` by at most
``sqrt(2) W B**2`` in Frobenius norm
(:func:`~skdp.mechanisms.private_gram`); ``X^T W y`` by at most
``2 W B B_y``.

**Departures from Wang (2018).** Noise is calibrated exactly (GDP) instead of
with the classic Gaussian bound; sensitivities are doubled for replace-one
adjacency; the private eigenvalue is lowered by its noise std times the
``1 - failure_probability`` normal quantile, and the ridge is
``max(0, sigma_G (2 sqrt(q) + 2 sqrt(log(1 / failure_probability))) -
lambda_min)`` with ``sigma_G`` the std of the Gram noise and q the number of
coefficients: the spectral norm of the symmetric Gaussian noise matrix
concentrates at ``2 sqrt(q) sigma_G`` with sub-Gaussian tails
(``P(||E|| > sigma_G (2 sqrt(q) + t)) <= exp(-t**2 / 4)``), a bound about
half as large as Wang's ``sigma_G sqrt(2 q log(2 q**2 / rho))``.

References
----------
Wang, Y.-X. (2018). Revisiting differentially private linear regression:
optimal and adaptive prediction & estimation in unbounded domain. UAI.

Examples
--------
>>> import numpy as np
>>> from skdp.linear_model import AdaSSPRegressor
>>> rng = np.random.default_rng(0)
>>> X = rng.normal(size=(50_000, 2))
>>> y = X @ np.array([0.5, -0.5]) + 0.1 * rng.normal(size=50_000)
>>> np.round(AdaSSPRegressor(random_state=0).fit(X, y).coef_, 1)
array([ 0.5, -0.5])
"""


class AdaSSPRegressor(DPEstimatorMixin, LinearPredictMixin, RegressorMixin, BaseEstimator):
    __doc__ = _DOC % PRIVACY_PARAMS_DOC
    _accepts_dask = True  # every pass is a sum over rows: Dask sums it per partition

    _parameter_constraints: dict = {
        **DPEstimatorMixin._parameter_constraints,
        "norm_bound": [Interval(Real, 1e-100, 1e100, closed="both"), None],
        "label_bound": [Interval(Real, 1e-100, 1e100, closed="both"), None],
        "bounds_X": ["array-like", None],
        "bounds_y": ["array-like", None],
        "fit_intercept": ["boolean"],
        "failure_probability": [Interval(Real, 0, 1, closed="neither")],
        "max_weight": [Interval(Real, 0, MAX_WEIGHT, closed="right")],
    }

    def __init__(self, *, epsilon=1.0, delta=1e-6, bounds_X=None, bounds_y=None, norm_bound=None,
                 label_bound=None,
                 fit_intercept=True, failure_probability=0.05, max_weight=1.0, accountant=None,
                 random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.bounds_X = bounds_X
        self.bounds_y = bounds_y
        self.norm_bound = norm_bound
        self.label_bound = label_bound
        self.fit_intercept = fit_intercept
        self.failure_probability = failure_probability
        self.max_weight = max_weight
        self.accountant = accountant
        self.random_state = random_state

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, sample_weight=None):
        """Fit from noisy sufficient statistics.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Non-negative weights at most ``max_weight`` (checked before any
            budget is charged); the statistics become weighted sums.

        Returns
        -------
        self : AdaSSPRegressor
        """
        X, y = validate_private(self, X, y, y_numeric=True, ensure_min_samples=2, dtype=np.float64)
        n, p = X.shape
        w = check_weights(sample_weight, n, self.max_weight)
        W = weight_bound(sample_weight, self.max_weight)
        q = p + int(self.fit_intercept)
        bx = check_bounds(self.bounds_X, p, "bounds_X", getattr(self, "feature_names_in_", None),
                          by_name=True)
        by = check_bounds(self.bounds_y, 1, "bounds_y")
        scaling = make_scaling(bx, by, p, self.fit_intercept)
        X, y = scaling.transform(X, y)
        bound, label_bound = self.norm_bound, self.label_bound
        if bound is None and bx is not None:
            bound = math.sqrt(p + int(self.fit_intercept))
        if label_bound is None and by is not None:
            label_bound = 1.0
        search = bound is None or label_bound is None
        mu = self._budget_mu()
        needed = (safe_search_mu(n, 2, 1.0) / mu) ** 2 if search else 0.0
        if needed > MAX_BOUNDS_SHARE:
            raise ValueError(
                f"n_samples={n} rows are too few for private row and label bounds at this "
                "budget (a safe quantile search would take most of it): declare bounds_X and "
                "bounds_y (or norm_bound and label_bound), or raise epsilon.")
        shares = adassp_shares(search, q, needed)
        spent, rng = self._charge(mu)  # before any noise is drawn
        if search:
            # Unweighted: rows are clipped before their weights apply.
            row_q, label_q = private_row_label_bounds(
                X, y, None, fit_intercept=self.fit_intercept, mu=mu * math.sqrt(shares["bounds"]),
                rng=rng)
            bound = row_q if bound is None else bound
            label_bound = label_q if label_bound is None else label_bound

        block = partial(_statistics_block, fit_intercept=self.fit_intercept, norm_bound=bound,
                        label_bound=label_bound)
        zz, zy = sum_rows(block, X, y, w)
        mu_gram, mu_xty, mu_eig = (mu * math.sqrt(shares[k]) for k in ("gram", "xty", "eigenvalue"))
        gram_std = gram_sensitivity(bound, W) / mu_gram
        gram = symmetric_release(zz, gram_std, rng, name="Gram matrix",
                                 sensitivity=gram_sensitivity(bound, W), weight=W)
        xty_sens = 2.0 * W * bound * label_bound
        xty = gaussian_release(zy, xty_sens / mu_xty, rng, name="X'y", sensitivity=xty_sens,
                               weight=W)
        eig_std = W * bound**2 / mu_eig
        lam_min = gaussian_release(np.linalg.eigvalsh(zz)[0], eig_std, rng,
                                   name="smallest eigenvalue", sensitivity=W * bound**2, weight=W)
        lam_min = max(float(lam_min) - eig_std * stats.norm.ppf(1 - self.failure_probability), 0.0)
        spread = 2.0 * math.sqrt(q) + 2.0 * math.sqrt(math.log(1.0 / self.failure_probability))
        self.l2_penalty_ = max(0.0, gram_std * spread - lam_min)
        if self.fit_intercept and bx is None:
            # Post-processing of the Gram release: columns far from 0 against their spread
            # (DP-GD warns of them too; declared bounds centre every column).
            found = offset_columns(gram / n, gram_std / n)
            if found.size:
                names = [str(c) for c in getattr(self, "feature_names_in_",
                                                 [f"x{j}" for j in range(p)])]
                warn(offset_message([names[j] for j in found],
                                    "the ridge that covers the noise (l2_penalty_) shrinks "
                                    "them towards 0"), UserWarning)
        theta = np.linalg.lstsq(gram + self.l2_penalty_ * np.eye(q), xty, rcond=None)[0]
        M, offset = original_scale_map(scaling, self.fit_intercept)
        theta = M @ theta + offset
        self.coef_ = theta[:p]
        self.intercept_ = float(theta[p]) if self.fit_intercept else 0.0
        self.norm_bound_, self.label_bound_ = float(bound), float(label_bound)
        self.privacy_spent_ = spent
        self.privacy_shares_ = shares
        return self


def adassp_shares(search: bool, q: int, bounds_share: float = 0.0) -> dict:
    """Each release's share of ``mu**2`` for AdaSSP.

    The private smallest eigenvalue only sets the ridge, and the ridge only
    needs it to within a fraction of the Gram noise's spectral norm, about
    ``2 sqrt(q)`` Gram noise stds. With share ``s_e`` its noise std is
    ``W B**2 / (mu sqrt(s_e))`` against ``sqrt(2) W B**2 / (mu sqrt(s_g))``
    for an entry of the Gram matrix, so ``s_e = 2 s_g / q`` (at most a
    third of the rest, Wang's 2018 equal split) keeps it at ``sqrt(q) / 2``
    Gram entry stds, a quarter of the noise norm. The Gram matrix and
    ``X^T y`` share the rest equally (the better split depends on
    ``||theta||``, which is not public). The row and label bounds, when
    searched, take 5%%, or ``bounds_share`` if larger (the share that keeps
    the search safe on a small table,
    :func:`~skdp.linear_model._private_bounds.safe_search_mu`).

    Parameters
    ----------
    search : bool
        Whether a row or label bound is searched privately.
    q : int
        Coefficients (features plus intercept).
    bounds_share : float, default=0.0
        Smallest share of the bound search.

    Returns
    -------
    dict
        'bounds' (only when searched), 'gram', 'xty', 'eigenvalue'; they
        add up to 1.
    """
    shares = {"bounds": max(BOUNDS_SHARE, bounds_share)} if search else {}
    rest = 1.0 - sum(shares.values())
    eig = min(rest / (q + 1.0), rest / 3.0)  # s_e = 2 s_g / q with s_g = s_x
    shares.update(gram=(rest - eig) / 2.0, xty=(rest - eig) / 2.0, eigenvalue=eig)
    return shares


def _statistics_block(Xb, yb, wb, *, fit_intercept, norm_bound, label_bound):
    """``(sum w z z^T, sum w z y)`` over one block: rows z = (x, [1]) clipped, y clipped."""
    Z = np.column_stack([Xb, np.ones(Xb.shape[0])]) if fit_intercept else Xb
    Z = clip_rows(Z, norm_bound)
    yc = np.clip(yb, -label_bound, label_bound)
    Zw = Z if wb is None else Z * wb[:, None]
    return Zw.T @ Z, Zw.T @ yc
