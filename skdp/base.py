"""What every skdp estimator shares: privacy parameters, charging, bookkeeping."""

from __future__ import annotations

from numbers import Integral, Real
from typing import NamedTuple

import joblib
import numpy as np
from sklearn.utils.validation import check_is_fitted

from skdp._fork import fork_token
from skdp._secure import is_secure_mode
from skdp.accounting import BudgetAccountant, budget_mu, spent_epsilon
from skdp.mechanisms._random import MAX_WEIGHT as MAX_WEIGHT  # re-exported: the estimators' bound
from skdp.mechanisms._random import check_random_state_type, make_rng
from skdp.utils._sklearn import HasMethods, Interval
from skdp.utils._validation import validate_new_rows
from skdp.utils._warnings import warn

__all__ = ["PRIVACY_PARAMS_DOC", "DPEstimatorMixin", "LinearPredictMixin", "NoGeneratorPickleMixin",
           "PrivacySpent", "StreamStateMixin", "ZCDPPrivacySpent", "begin_draws",
           "check_stream_continues",
           "weight_bound"]


class PrivacySpent(NamedTuple):
    """The guarantee of one fit: (epsilon, delta)-DP, from mu-GDP (or, in secure mode, zCDP).

    By default the fit is mu-GDP and ``epsilon`` is the exact epsilon of mu
    at ``delta``. A fit made in secure mode returns a
    :class:`ZCDPPrivacySpent`: it is ``mu**2 / 2``-zCDP, and ``epsilon``
    comes from :func:`~skdp.accounting.epsilon_from_rho_tight`.
    """

    epsilon: float
    delta: float
    mu: float

    #: The privacy definition ``mu`` refers to.
    notion = "GDP"

    @property
    def rho(self) -> float:
        """The zCDP parameter ``mu**2 / 2`` (implied by mu-GDP too)."""
        return self.mu * self.mu / 2.0

    @classmethod
    def of(cls, mu: float, delta: float, *, zcdp: bool | None = None) -> PrivacySpent:
        """The guarantee of a fit calibrated to ``mu`` (secure mode: zCDP).

        Parameters
        ----------
        mu, delta : float
        zcdp : bool or None, default=None
            None reads the current mode.

        Returns
        -------
        PrivacySpent
        """
        zcdp = is_secure_mode() if zcdp is None else zcdp
        kind = ZCDPPrivacySpent if zcdp else PrivacySpent
        return kind(spent_epsilon(mu, delta, zcdp=zcdp), float(delta), float(mu))


class ZCDPPrivacySpent(PrivacySpent):
    """A guarantee stated in zCDP (secure mode): ``rho = mu**2 / 2``; see :class:`PrivacySpent`."""

    __slots__ = ()
    notion = "zCDP"


#: Parameter documentation shared by every estimator (inserted with ``%``).
PRIVACY_PARAMS_DOC = {
    "epsilon": """epsilon : float, default=1.0
        Privacy budget of one fit, in (0, inf). Together with ``delta`` it is
        converted exactly to a Gaussian-DP ``mu`` (see
        :func:`skdp.accounting.mu_from_epsilon_delta`) that calibrates all the
        noise of the fit.""",
    "delta": """delta : float, default=1e-6
        Privacy budget of one fit, in (0, 1). Choose it well below 1 / n.""",
    "accountant": """accountant : BudgetAccountant or None, default=None
        Ledger charged at the start of every fit, before any noise is drawn;
        a fit that would exceed its budget raises
        :class:`~skdp.exceptions.BudgetExceededError`. Clones (e.g. in
        ``GridSearchCV``) charge the same ledger.""",
    "random_state": """random_state : int, RandomState, Generator or None, default=None
        Source of the noise. Use None (or secure mode,
        :func:`skdp.mechanisms.secure_mode`) for real releases: anyone who
        knows a fixed seed can subtract the noise. A fixed seed is for tests
        and examples: without an accountant it reproduces the noise exactly;
        with one, the seed is mixed with the fit's position in the ledger,
        so two fits charged to one ledger never share noise. A Generator
        seeds each fit (successive fits differ; clones share it, so their
        fits differ too); it is never pickled (see the security page).""",
    "max_weight": """max_weight : float, default=1.0
        Public bound on every ``sample_weight``, in (0, 1e10] (beyond, sums of
        bounded rows can overflow; weights are relative, so rescale them).
        With ``sample_weight``,
        a row's influence, and so the sensitivity behind every noise scale,
        is ``max_weight`` times that of an unweighted row; ``fit`` raises a
        ValueError for a weight above it (or negative, or not finite) before
        any budget is charged. Without ``sample_weight`` every row weighs 1
        and the noise is that of ``max_weight=1``, whatever its value.""",
}


def weight_bound(sample_weight, max_weight: float) -> float:
    """The most a replaced row can weigh: ``max_weight`` with weights, 1 without.

    Decided by whether weights were passed, not by their values: unit weights
    under ``max_weight=2`` still allow a neighbour of weight 2.

    Parameters
    ----------
    sample_weight : array-like or None
        As passed by the user.
    max_weight : float

    Returns
    -------
    float
    """
    return 1.0 if sample_weight is None else float(max_weight)


class NoGeneratorPickleMixin:
    """Pickles and deep copies never carry a Generator or RandomState ``random_state``.

    A generator's state after a fit is enough to step it back and replay the
    noise it drew. A pickled estimator gets ``random_state=None`` instead
    (fresh entropy from the operating system at its next fit).
    """

    def __getstate__(self):
        state = super().__getstate__()
        if isinstance(state.get("random_state"), (np.random.Generator, np.random.RandomState)):
            state = {**state, "random_state": None}
        return state

    def __sklearn_clone__(self):
        """``sklearn.base.clone``, sharing a Generator or RandomState instead of copying it.

        scikit-learn's clone deep-copies a generator parameter, so every clone
        would start from the same state and, without an accountant to tell
        their charges apart, add the same noise (clones fitted on neighbouring
        tables, as the folds of ``cross_validate``, would reveal the differing
        row). A shared generator gives each clone's fit its own seed, drawn in
        turn, as successive fits of one estimator get.
        """
        clone = super().__sklearn_clone__()
        if isinstance(self.random_state, (np.random.Generator, np.random.RandomState)):
            clone.random_state = self.random_state
        return clone


class DPEstimatorMixin(NoGeneratorPickleMixin):
    """Privacy parameters, budget charging and ``privacy_spent_`` for skdp estimators.

    Subclasses extend ``_parameter_constraints`` with
    ``{**DPEstimatorMixin._parameter_constraints, ...}``.
    """

    _parameter_constraints: dict = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "accountant": [HasMethods(["charge_mu"]), None],
        # Any non-negative int (a private search gives each fit a 128-bit seed), a
        # Generator or RandomState, or None.
        "random_state": [Interval(Integral, 0, None, closed="left"), np.random.RandomState,
                         np.random.Generator, None],
    }

    def _budget_mu(self) -> float:
        """The mu that calibrates the fit: exact GDP of (epsilon, delta), zCDP in secure mode."""
        return budget_mu(self.epsilon, self.delta)

    def _charge(self, mu: float) -> tuple[PrivacySpent, np.random.Generator]:
        """Charge the accountant (if any) before noise is drawn.

        Returns
        -------
        spent : PrivacySpent
            The fit's guarantee.
        rng : numpy.random.Generator
            The fit's noise source: from ``random_state`` and the charge's
            position in the ledger, so fits charged to one ledger never
            share noise (:func:`skdp.mechanisms.make_rng`).
        """
        accountant: BudgetAccountant | None = self.accountant
        # A seed make_rng would refuse (a bool, a seed in secure mode) fails before the
        # charge, not after it.
        check_random_state_type(self.random_state)
        entry = None
        if accountant is not None:
            entry = accountant.charge_mu(
                mu, label=getattr(self, "_ledger_label", type(self).__name__))
            entry = entry if isinstance(entry, int) and not isinstance(entry, bool) else None
        spent = PrivacySpent.of(mu, self.delta)
        return spent, make_rng(self.random_state, entry=entry)


class LinearPredictMixin:
    """``predict`` for fitted linear models with ``coef_`` and ``intercept_``."""

    def predict(self, X):
        """Predict with the private coefficients (post-processing: no budget).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        X = validate_new_rows(self, X, reset=False, dtype=np.float64)
        return X @ self.coef_ + self.intercept_


def check_stream_continues(state: dict) -> None:
    """Refuse to continue a stream that failed, or in another noise mode than its own.

    A call that fails once it has begun drawing (an overflow found at the end
    of its steps, an interrupt, a memory error between two releases) has
    advanced the stream's noise, and can have moved its optimizer or sums
    with that call's rows: continuing would take the stream past the steps
    its noise was calibrated for (a correlated stream's horizon), or its two
    noise streams out of step, and a retry with the same rows would use them
    twice. :func:`begin_draws` marks the stream before the first draw; the
    call clears the mark when it completes. A marked stream ends there.

    A stream started in secure mode (exact discrete Gaussian releases, zCDP
    accounting) and continued outside would draw floating-point noise under a
    secure claim; the other way round its noise state does not fit.

    Parameters
    ----------
    state : dict
        The stream's state, with ``'secure'`` recorded at its first call.
    """
    if state.get("failed", False):
        raise ValueError("This stream's last call failed after it began drawing its noise, so "
                         "the stream cannot continue (its noise and state already hold part of "
                         "that call). Call fit to start a new stream; it is charged anew.")
    started = bool(state.get("secure", False))
    if started != is_secure_mode():
        where = "inside" if started else "outside"
        raise ValueError(f"This stream started {where} secure mode; continue it {where} "
                         "secure mode too (or call fit to start a new one).")


def begin_draws(state: dict) -> None:
    """Mark ``state`` as failed until the call that is about to draw completes.

    The call sets ``state['failed'] = False`` (in the state it keeps) as its
    last step; any exception before that leaves the mark, and
    :func:`check_stream_continues` refuses the stream from then on.

    Parameters
    ----------
    state : dict
    """
    state["failed"] = True


def _fingerprint(value):
    """A parameter's value by content (a callable, or what cannot be hashed, by identity)."""
    if callable(value):
        return ("id", id(value))
    try:
        return joblib.hash(value)
    except Exception:  # unpicklable callables: any pickling error
        return ("id", id(value))


class StreamStateMixin:
    """Keeps a stream's secret state (``self._state``) out of pickles, copies and forks.

    Estimators that continue a stream with ``partial_fit`` hold their noise
    generator (future noise) and, for correlated noise, past noise draws;
    with those the noise could be subtracted from the releases. Pickles and
    deep copies leave the state out; such a copy keeps its fitted attributes
    but cannot continue the stream. A process made by ``os.fork`` inherits
    the state without a pickle: the state records the process that started
    it (:func:`skdp._fork.fork_token`), and a forked copy
    refuses to continue too (two children continuing one stream would add
    the same noise to different rows).
    """

    #: Parameters whose change mid-stream needs no notice: the accountant is charged
    #: only by the first call, and a Generator's state moves as it is used.
    _UNWATCHED_PARAMS = ("accountant", "random_state")
    #: Parameters an estimator reads live (not fixed by the stream's first call).
    _LIVE_PARAMS: tuple = ()

    def __setattr__(self, name, value):
        if name == "_state" and isinstance(value, dict):
            value.setdefault("_process", fork_token())
            if "_params" not in value:  # each value with its fingerprint
                value["_params"] = {k: (v, _fingerprint(v))
                                    for k, v in self._watched_params().items()}
        super().__setattr__(name, value)

    def _watched_params(self) -> dict:
        skip = self._UNWATCHED_PARAMS + self._LIVE_PARAMS
        return {k: v for k, v in self.get_params(deep=False).items() if k not in skip}

    def _warn_changed_params(self, state: dict) -> None:
        """Say once which parameters were set after the stream began (they are ignored).

        A value that is still the stream's own object is unchanged without
        hashing it (per-row streams call this once per row); another object is
        compared by content.
        """
        now = {k: _fingerprint(getattr(self, k)) for k, (v, _) in state["_params"].items()
               if getattr(self, k) is not v}
        warned = state.setdefault("_params_warned", set())
        changed = [k for k, v in now.items()
                   if state["_params"][k][1] != v and (k, v) not in warned]
        if changed:
            warned.update((k, now[k]) for k in changed)  # the stream's own values stay
            warn(f"{', '.join(changed)} changed after this stream began: the stream keeps the "
                 "values of its first call (its noise and plan were calibrated for them), so "
                 "the change is ignored until the next fit, which starts a new stream.",
                 UserWarning)

    def __getstate__(self):
        state = super().__getstate__()
        if state.get("_state") is not None:
            state = {**state, "_state": None}
        return state

    def _stream_started(self) -> bool:
        """False before the first call; raises on a copy whose stream state was dropped."""
        state = getattr(self, "_state", False)
        if state is None:
            raise RuntimeError("This estimator was pickled, copied or returned by a private "
                               "search: its secret noise state is not kept, so the stream "
                               "cannot continue. Call fit to start a new one.")
        if isinstance(state, dict) and state.get("_process") != fork_token():
            raise RuntimeError("This estimator's stream was started in another process and "
                               "inherited by os.fork: continuing it here would repeat the "
                               "noise the other process draws. Continue it in the process "
                               "that started it, or call fit to start a new one here.")
        if isinstance(state, dict) and "_params" in state:
            self._warn_changed_params(state)
        return hasattr(self, "_state")

