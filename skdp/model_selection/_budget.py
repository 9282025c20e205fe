"""How a private search spends its budget: splits, composition, candidates' own budgets.

The search's guarantee is an exact GDP composition. A row enters, for each
candidate, one Gaussian release per split it is part of (a fit on a training
part, or a noisy score on a validation part); releases that do not read a row
cost nothing for neighbours that differ in it. So with m candidates, each of
whose releases is ``mu_c``-GDP, and at most u releases per row and candidate,
the selection is ``sqrt(m u) mu_c``-GDP (Dong, Roth & Su 2022, composition).
A hold-out split has u = 1 (a row is trained on or scored on, never both);
k-fold cross-validation has u = k.
"""

from __future__ import annotations

import functools
import math
from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OneHotEncoder
from sklearn.utils import get_tags

from skdp.accounting import budget_mu, spent_epsilon
from skdp.accounting._accountant import _SLACK
from skdp.accounting._gdp import _check_real
from skdp.exceptions import BudgetExceededError

__all__ = ["FitAllowance", "Probe", "ProbeDone", "budget_params", "forget_noise",
           "private_steps", "selection_budget", "set_accountants", "splits", "uses_per_row"]

# Root finding is accurate to ~1e-14 relative: a candidate's share is rounded
# down by 1e-12 so that the mu its own calibration spends never exceeds it.
_ROUND_DOWN = 1.0 - 1e-12
_PRIVACY_PARAMS = ("epsilon", "delta", "accountant")


def splits(n: int, cv, rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """Data-independent (train, validation) row positions: k folds, or one hold-out split.

    Parameters
    ----------
    n : int
        Number of rows (public).
    cv : int or float
        k >= 2 for k-fold cross-validation, or the validation fraction in (0, 1).
    rng : numpy.random.Generator
        Shuffles the positions; never sees the data.

    Returns
    -------
    list of (ndarray, ndarray)
        Sorted positions of each split's training and validation rows.
    """
    perm = rng.permutation(n)
    if isinstance(cv, Integral):
        if cv > n:
            raise ValueError(f"cv={cv} folds need at least {cv} rows, got n_samples={n}.")
        folds = np.array_split(perm, cv)
        return [(np.sort(np.concatenate(folds[:j] + folds[j + 1:])), np.sort(folds[j]))
                for j in range(cv)]
    n_val = int(round(cv * n))
    if n_val < 1 or n_val > n - 1:
        raise ValueError(f"cv={cv} with n_samples={n} leaves {n_val} validation and "
                         f"{n - n_val} training rows; both need at least one.")
    return [(np.sort(perm[n_val:]), np.sort(perm[:n_val]))]


def uses_per_row(split_list, n: int) -> int:
    """Most releases any one row enters per candidate (training or validation)."""
    counts = np.zeros(n, dtype=np.intp)
    for train, val in split_list:
        counts[train] += 1
        counts[val] += 1
    return int(counts.max())


def selection_budget(mu: float, n_candidates: int, uses: int, refit: bool,
                     selection_share: float) -> tuple[float, float]:
    """Split a search's mu between each candidate's releases and the refit.

    Parameters
    ----------
    mu : float
        GDP parameter of the whole search.
    n_candidates : int
    uses : int
        Releases per row and candidate (:func:`uses_per_row`).
    refit : bool
    selection_share : float
        Share of ``mu**2`` spent on the selection when ``refit``.

    Returns
    -------
    mu_candidate, mu_refit : float
        ``n_candidates * uses * mu_candidate**2 + mu_refit**2 = mu**2`` (mu_refit
        is 0 without refit).
    """
    share = selection_share if refit else 1.0
    mu_candidate = mu * math.sqrt(share / (n_candidates * uses))
    mu_refit = mu * math.sqrt(1.0 - share) if refit else 0.0
    return mu_candidate, mu_refit


def _is_private(est) -> bool:
    cls = type(est)
    if getattr(cls, "get_params", None) is BaseEstimator.get_params:
        # get_params reads the signature of __init__ on every call (a private
        # search asks this a few dozen times per fit): the names, once per class.
        return _has_privacy_params(cls)
    return hasattr(est, "get_params") and set(_PRIVACY_PARAMS) <= est.get_params(deep=False).keys()


@functools.lru_cache(maxsize=None)
def _has_privacy_params(cls) -> bool:
    return set(_PRIVACY_PARAMS) <= set(cls._get_param_names())


def _learns_nothing(step) -> bool:
    """Whether fitting a public step learns nothing from the rows (so it may see private ones).

    A stateless step; a ``OneHotEncoder`` whose categories are declared
    (not 'auto'), with no frequency rule (``min_frequency``,
    ``max_categories``), ``handle_unknown='ignore'`` and no ``drop`` (an
    unknown value in a validation part must neither raise nor warn after
    the search's charge, and with ``drop`` it warns); or a
    ``ColumnTransformer`` of such parts (and 'drop' or 'passthrough') whose
    columns are named, indexed or chosen by ``make_column_selector`` (names
    and dtypes only), with ``sparse_threshold=0``: otherwise its output turns
    sparse when the data's density falls below the threshold (a passthrough
    of sparse X, a sparse encoder), and whether the next step accepts it
    would depend on one row. A :class:`~skdp.preprocessing.FiniteOutput` (the
    search wraps public steps after a private one in it) is judged by its step.
    """
    from skdp.preprocessing._finite_output import FiniteOutput

    if isinstance(step, FiniteOutput):
        return _learns_nothing(step.step)
    if isinstance(step, OneHotEncoder):
        return (not isinstance(step.categories, str) and step.min_frequency is None
                and step.max_categories is None and step.handle_unknown == "ignore"
                and step.drop is None)
    if isinstance(step, ColumnTransformer):
        parts = [part for _, part, _ in step.transformers] + [step.remainder]
        columns = [cols for _, _, cols in step.transformers]
        return (all(isinstance(p, str) and p in ("drop", "passthrough") or _learns_nothing(p)
                    for p in parts)
                and all(not callable(c) or isinstance(c, make_column_selector) for c in columns)
                and step.sparse_threshold == 0)
    return not get_tags(step).requires_fit


def private_steps(estimator, prefix: str = "") -> list[tuple[str, object]]:
    """``(parameter prefix, estimator)`` of every private step of an estimator or Pipeline.

    Parameters
    ----------
    estimator : estimator
        An skdp estimator (it has ``epsilon``, ``delta`` and ``accountant``
        parameters), or a Pipeline (nested Pipelines too) whose steps are
        skdp estimators or stateless transformers.
    prefix : str, default=""
        Prepended to the returned prefixes.

    Returns
    -------
    list of (str, estimator)

    Raises
    ------
    ValueError
        For an estimator that is neither, for a Pipeline step that learns from
        the data without privacy (a ``StandardScaler`` fitted on the private
        rows releases their means), or for a Pipeline without a private step.
    """
    if _is_private(estimator):
        return [(prefix, estimator)]
    if isinstance(estimator, Pipeline):
        found = []
        for name, step in estimator.steps:
            if step is None or (isinstance(step, str) and step == "passthrough"):
                continue
            if _is_private(step) or isinstance(step, Pipeline):
                found += private_steps(step, f"{prefix}{name}__")
            elif hasattr(step, "get_params") and any(
                    _is_private(v) for v in step.get_params(deep=True).values()):
                raise ValueError(
                    f"Pipeline step {name!r} ({type(step).__name__}) holds a private "
                    "estimator, and a private search gives budgets only to private steps "
                    "of a Pipeline (nested Pipelines included), not inside a "
                    f"{type(step).__name__}. Fit it outside the search, or make each private "
                    "step a step of the Pipeline.")
            elif not _learns_nothing(step):
                raise ValueError(
                    f"Pipeline step {name!r} ({type(step).__name__}) learns from the data without "
                    "privacy, and the search would fit it on the private rows. Use a private "
                    "step (an skdp estimator), a stateless one (e.g. FunctionTransformer with "
                    "public constants) or an encoder with declared categories "
                    "(OneHotEncoder(categories=[...], handle_unknown='ignore', "
                    "sparse_output=False), alone or in a ColumnTransformer with "
                    "sparse_threshold=0).")
        if not found and not prefix:
            raise ValueError("The Pipeline has no private step (an skdp estimator with epsilon, "
                             "delta and accountant parameters) to give the budget to.")
        return found
    raise ValueError(
        f"{type(estimator).__name__} is not a private estimator: a private search needs an skdp "
        "estimator (with epsilon, delta and accountant parameters) or a Pipeline of skdp "
        "estimators and stateless transformers, so that every fit is inside the budget.")


def budget_params(estimator, mu: float, random_states: list) -> dict:
    """Parameters that make every private step of ``estimator`` spend its share of ``mu``.

    The private steps share ``mu`` in proportion to the GDP parameters of
    their own declared ``(epsilon, delta)``: step j gets
    ``mu * mu_j / sqrt(sum_k mu_k**2)``, so the steps compose to exactly
    ``mu`` and keep the ratio you gave them. Each step's ``epsilon`` becomes
    ``spent_epsilon(its share, its delta)`` (``epsilon_from_mu``, or the zCDP
    conversion in secure mode): its own exact calibration then
    spends exactly its share.

    Parameters
    ----------
    estimator : estimator
    mu : float
    random_states : list
        One ``random_state`` per private step.

    Returns
    -------
    dict
        For ``estimator.set_params``: ``epsilon``, ``random_state`` and
        ``accountant`` (None: the search charges the ledger) of every step.

    Raises
    ------
    ValueError
        If a step's share is too small to be expressed as an epsilon at its
        delta (the budget cannot cover one fit).
    """
    steps = private_steps(estimator)
    mus = [budget_mu(step.epsilon, step.delta) for _, step in steps]
    norm = math.sqrt(math.fsum(m * m for m in mus))
    params = {}
    for (prefix, step), m, state in zip(steps, mus, random_states):
        share = mu * m / norm * _ROUND_DOWN
        epsilon = spent_epsilon(share, step.delta) if share > 0 else 0.0
        if not epsilon > 0.0:
            raise ValueError(
                f"The budget cannot cover one fit: {type(step).__name__} would get mu={share:.3g}, "
                f"which is no more than delta={step.delta:g} can express (epsilon 0). Raise the "
                "search's epsilon, use fewer candidates or a smaller cv, or lower the step's delta.")
        params.update({f"{prefix}epsilon": epsilon, f"{prefix}random_state": state,
                       f"{prefix}accountant": None})
    return params


def set_accountants(estimator, accountant) -> None:
    """Set the ``accountant`` of every private step."""
    estimator.set_params(**{f"{p}accountant": accountant for p, _ in private_steps(estimator)})


def forget_noise(estimator) -> None:
    """Drop the seeds and noise state the search gave a fitted estimator's private steps.

    A seed, or a generator's state after a fit, is enough to replay the noise
    that was added, so neither leaves the search with the estimator: every
    private step's ``random_state`` becomes None, and a stream's secret state
    (its generators and past noise, ``_state``) is dropped, so the returned
    estimator cannot continue a stream with ``partial_fit``.
    """
    steps = private_steps(estimator)
    estimator.set_params(**{f"{p}random_state": None for p, _ in steps})
    for _, step in steps:
        if getattr(step, "_state", None) is not None:
            step._state = None


class FitAllowance:
    """The ledger one candidate fit charges: it refuses anything beyond ``mu``.

    Every private step of a candidate charges it before drawing noise, so a
    fit that would spend more than its share stops before any noise is drawn.

    Parameters
    ----------
    mu : float
    """

    def __init__(self, mu: float) -> None:
        self.mu, self.spent_sq, self.charges = mu, 0.0, 0

    def __deepcopy__(self, memo):
        return self

    def charge_mu(self, mu: float, label: str = "") -> int:
        mu = _check_real("mu", mu, closed_low=True)  # a NaN would pass every later check
        if self.spent_sq + mu * mu > self.mu * self.mu * (1.0 + _SLACK):
            raise BudgetExceededError(
                f"{label or 'A step'} asked for mu={mu:.6g}, more than the share of the search's "
                f"budget given to this candidate fit (mu={self.mu:.6g}).")
        self.spent_sq += mu * mu
        self.charges += 1
        return self.charges - 1


class ProbeDone(Exception):
    """A candidate reached its first charge: everything before it was validated."""


class Probe(FitAllowance):
    """Ledger for a dry run: a fit validates its parameters and data, then stops at its charge.

    The charges of a candidate's private steps (a Pipeline's, probed one
    after the other) add up as in :class:`FitAllowance`: together they must
    fit in the candidate's share.

    Parameters
    ----------
    mu : float
        The candidate's share.
    """

    def charge_mu(self, mu: float, label: str = "") -> None:
        super().charge_mu(mu, label)
        raise ProbeDone
