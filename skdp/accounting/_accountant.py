"""A privacy-budget ledger that many fits can charge."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

from skdp.accounting._gdp import (
    _check_real,
    epsilon_from_mu,
    mu_from_epsilon_delta,
)
from skdp.exceptions import BudgetExceededError

__all__ = ["BudgetAccountant", "Charge"]

# A charge that uses the remaining budget exactly must pass despite rounding
# in the root finding (accurate to ~1e-14 relative).
_SLACK = 1e-9


@dataclass(frozen=True)
class Charge:
    """One entry of a :class:`BudgetAccountant` ledger.

    Exactly one of ``mu`` (a Gaussian charge) or ``(epsilon, delta)`` (any
    other (epsilon, delta)-DP mechanism) is set; the other is None.
    """

    label: str
    mu: float | None = None
    epsilon: float | None = None
    delta: float | None = None


class BudgetAccountant:
    """Ledger of the privacy budget spent on one dataset across many fits.

    Create one per dataset with the total budget, pass it as ``accountant=``
    to every estimator that fits on that data, and it is charged at the start
    of every fit, before any noise is drawn. A charge that would exceed the
    budget raises :class:`~skdp.exceptions.BudgetExceededError` and records
    nothing.

    Parameters
    ----------
    epsilon : float
        Total budget, in (0, inf).
    delta : float
        Total budget, in (0, 1).

    Attributes
    ----------
    ledger : list of Charge
        Every charge made so far, in order (a copy).
    spent_mu : float
        Composed GDP parameter of the Gaussian charges.

    See Also
    --------
    skdp.accounting.mu_from_epsilon_delta : The exact conversion used here.

    Notes
    -----
    **How charges compose.** Gaussian charges (:meth:`charge_mu`) are
    composed exactly, as mu-GDP: ``mu = sqrt(sum mu_i**2)``. Any other charge
    (:meth:`charge`, an (epsilon_i, delta_i)-DP mechanism) is composed with the
    Gaussian block by basic composition: the budget is respected if the
    Gaussian block is (epsilon - sum epsilon_i, delta - sum delta_i)-DP.
    Composition is adaptive: a fit may depend on the outputs of earlier ones.

    **Sharing under clone.** The accountant is a reference to one ledger, not
    a hyper-parameter value: ``copy.deepcopy`` (used by
    :func:`sklearn.base.clone`, hence by ``GridSearchCV`` and
    ``cross_val_score``) returns the same object, so every cloned estimator
    charges the ledger you created. A copy made by *pickling* (for example
    joblib with ``n_jobs > 1`` and a process backend) cannot report back, so
    it refuses to be charged; fit with ``n_jobs=1`` or a thread backend.

    **What spent and remaining mean.** ``spent()`` is the smallest epsilon
    at the budget's delta that covers all charges so far. ``remaining()`` is
    the (epsilon, delta) of the largest single further Gaussian charge. With
    Gaussian charges the two epsilons do not add up to the total: GDP
    composes in mu**2, not in epsilon.

    Examples
    --------
    >>> from skdp.accounting import BudgetAccountant, mu_from_epsilon_delta
    >>> acc = BudgetAccountant(epsilon=1.0, delta=1e-6)
    >>> half = mu_from_epsilon_delta(1.0, 1e-6) / 2 ** 0.5
    >>> acc.charge_mu(half, label="first fit")
    >>> acc.charge_mu(half, label="second fit")
    >>> eps, delta = acc.spent()
    >>> round(eps, 6), delta
    (1.0, 1e-06)
    >>> acc.charge_mu(0.01)
    Traceback (most recent call last):
    ...
    skdp.exceptions.BudgetExceededError: ...
    """

    def __init__(self, epsilon: float, delta: float) -> None:
        self.epsilon = _check_real("epsilon", epsilon)
        self.delta = _check_real("delta", delta, high=1.0)
        self._charges: list[Charge] = []
        self._gauss_mu_sq = 0.0
        self._other_epsilon = 0.0
        self._other_delta = 0.0
        self._detached = False
        self._lock = threading.Lock()

    # -- sharing ------------------------------------------------------------
    def __copy__(self) -> BudgetAccountant:
        return self

    def __deepcopy__(self, memo) -> BudgetAccountant:
        return self

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._detached = True
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        eps, _ = self.spent()
        return (f"BudgetAccountant(epsilon={self.epsilon!r}, delta={self.delta!r})"
                f"  # {len(self._charges)} charges, epsilon spent {eps:.4g}")

    # -- budget arithmetic ----------------------------------------------------
    def _gaussian_budget_mu(self, other_epsilon: float, other_delta: float) -> float:
        """Largest composed mu the Gaussian charges may reach."""
        eps = self.epsilon - other_epsilon
        delta = self.delta - other_delta
        if eps <= 0.0 or delta <= 0.0:
            return 0.0
        return mu_from_epsilon_delta(eps, delta)

    @property
    def spent_mu(self) -> float:
        return math.sqrt(self._gauss_mu_sq)

    @property
    def ledger(self) -> list[Charge]:
        return list(self._charges)

    def spent(self) -> tuple[float, float]:
        """Budget spent so far, as (epsilon, delta).

        Returns
        -------
        epsilon, delta : float
            ``(0.0, 0.0)`` before any charge. With Gaussian charges, epsilon is
            the exact epsilon of the composed Gaussian block at the delta left
            by the other charges, plus those charges' epsilons, and delta is
            the budget's delta.
        """
        if self._gauss_mu_sq == 0.0:
            return self._other_epsilon, self._other_delta
        gauss_delta = self.delta - self._other_delta
        eps = epsilon_from_mu(self.spent_mu, gauss_delta) + self._other_epsilon
        return eps, self.delta

    def remaining(self) -> tuple[float, float]:
        """The largest further Gaussian charge, as (epsilon, delta).

        Returns
        -------
        epsilon, delta : float
            ``(0.0, 0.0)`` when the budget is used up.
        """
        budget = self._gaussian_budget_mu(self._other_epsilon, self._other_delta)
        left_sq = budget * budget - self._gauss_mu_sq
        if left_sq <= (_SLACK * budget) ** 2:
            return 0.0, 0.0
        delta = self.delta - self._other_delta
        return epsilon_from_mu(math.sqrt(left_sq), delta), delta

    def remaining_mu(self) -> float:
        """The largest further Gaussian charge, as a GDP mu."""
        budget = self._gaussian_budget_mu(self._other_epsilon, self._other_delta)
        return math.sqrt(max(budget * budget - self._gauss_mu_sq, 0.0))

    # -- charging -------------------------------------------------------------
    def _check_attached(self) -> None:
        if self._detached:
            raise RuntimeError(
                "This BudgetAccountant is a copy made by pickling (for example by "
                "joblib with n_jobs > 1); charges to it would not reach the ledger "
                "you created. Fit with n_jobs=1 or a thread-based backend, or pass "
                "the original accountant again with set_params(accountant=...)."
            )

    def _refuse(self, asked: str) -> None:
        eps_left, delta_left = self.remaining()
        raise BudgetExceededError(
            f"Privacy budget exceeded: asked for {asked}, but only "
            f"epsilon={eps_left:.6g} at delta={delta_left:.3g} "
            f"(mu={self.remaining_mu():.6g}) is left of the budget "
            f"epsilon={self.epsilon:g}, delta={self.delta:g}. Nothing was charged."
        )

    def charge_mu(self, mu: float, label: str = "gaussian") -> None:
        """Charge a Gaussian mechanism (or composition of them) with GDP parameter mu.

        Parameters
        ----------
        mu : float
            In [0, inf).
        label : str, default="gaussian"
            What the charge is for; kept in :attr:`ledger`.

        Raises
        ------
        BudgetExceededError
            If the charge does not fit in what is left; nothing is recorded.
        """
        mu = _check_real("mu", mu, closed_low=True)
        with self._lock:
            self._check_attached()
            budget = self._gaussian_budget_mu(self._other_epsilon, self._other_delta)
            if self._gauss_mu_sq + mu * mu > budget * budget * (1.0 + _SLACK):
                delta = self.delta - self._other_delta
                eps = epsilon_from_mu(mu, delta) if mu > 0 and delta > 0 else math.inf
                self._refuse(f"mu={mu:.6g} (epsilon={eps:.6g} at delta={delta:.3g})")
            self._gauss_mu_sq += mu * mu
            self._charges.append(Charge(label=str(label), mu=mu))

    def charge(self, epsilon: float, delta: float = 0.0, label: str = "mechanism") -> None:
        """Charge an (epsilon, delta)-DP mechanism that is not Gaussian.

        It composes with the other charges by basic composition (see Notes of
        the class).

        Parameters
        ----------
        epsilon : float
            In [0, inf).
        delta : float, default=0.0
            In [0, 1).
        label : str, default="mechanism"

        Raises
        ------
        BudgetExceededError
            If the charge does not fit in what is left; nothing is recorded.
        """
        epsilon = _check_real("epsilon", epsilon, closed_low=True)
        delta = _check_real("delta", delta, high=1.0, closed_low=True)
        with self._lock:
            self._check_attached()
            new_eps = self._other_epsilon + epsilon
            new_delta = self._other_delta + delta
            fits = new_eps <= self.epsilon * (1.0 + _SLACK) and new_delta <= self.delta * (1.0 + _SLACK)
            if fits and self._gauss_mu_sq > 0.0:
                budget = self._gaussian_budget_mu(new_eps, new_delta)
                fits = self._gauss_mu_sq <= budget * budget * (1.0 + _SLACK)
            if not fits:
                self._refuse(f"epsilon={epsilon:.6g}, delta={delta:.3g}")
            self._other_epsilon = new_eps
            self._other_delta = new_delta
            self._charges.append(Charge(label=str(label), epsilon=epsilon, delta=delta))
