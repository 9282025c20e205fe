"""A privacy-budget ledger that many fits, threads and worker processes can charge."""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import threading
import weakref
from collections.abc import Iterator
from dataclasses import asdict, dataclass

from skdp._secure import is_secure_mode
from skdp.accounting._gdp import (
    _check_real,
    mu_from_epsilon_delta,
)
from skdp.accounting._shared_ledger import LedgerChanged, LedgerUnreachable, SharedLedger
from skdp.accounting._zcdp import rho_from_epsilon_delta, spent_epsilon
from skdp.exceptions import BudgetExceededError

__all__ = ["BudgetAccountant", "Charge"]

# A charge that uses the remaining budget exactly must pass despite rounding:
# the round trip mu -> epsilon -> mu of the conversions errs in mu**2 by up to
# 6e-13 relative for mu >= 1e-3, 1e-11 near mu = 1e-4 and 1e-9 near mu = 1e-6
# (measured), so spending what remaining() reports needs this much. It lets a
# charge overspend by as much (epsilon 1.000000001 on a budget of 1): a tenth
# review found that, and 1e-12 was tried and refused such round trips at small mu.
_SLACK = 1e-9


@dataclass(frozen=True)
class Charge:
    """One entry of a :class:`BudgetAccountant` ledger.

    Exactly one of ``mu`` (a Gaussian charge) or ``(epsilon, delta)`` (any
    other (epsilon, delta)-DP mechanism) is set; the other is None. ``zcdp``
    marks a charge made in secure mode (discrete Gaussian noise): it is
    ``mu**2 / 2``-zCDP rather than mu-GDP.
    """

    label: str
    mu: float | None = None
    epsilon: float | None = None
    delta: float | None = None
    zcdp: bool = False


# Every live accountant (to prepare them for os.fork) and, by token, those
# whose ledger is shared (so that unpickling in the same process returns the
# very object).
_ALL: weakref.WeakSet = weakref.WeakSet()
_SHARED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


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
    skdp.model_selection.DPGridSearchCV : A hyper-parameter search that is
        charged once, for its fits, its validation scores and its choice.

    Notes
    -----
    **How charges compose.** Gaussian charges (:meth:`charge_mu`) are
    composed exactly, as mu-GDP: ``mu = sqrt(sum mu_i**2)``. Any other charge
    (:meth:`charge`, an (epsilon_i, delta_i)-DP mechanism) is composed with the
    Gaussian block by basic composition: the budget is respected if the
    Gaussian block is (epsilon - sum epsilon_i, delta - sum delta_i)-DP.
    Composition is adaptive: a fit may depend on the outputs of earlier ones.
    Sums are exactly rounded (:func:`math.fsum`), so the totals do not depend
    on the order in which charges arrive.

    **Sharing under clone.** The accountant is a reference to one ledger, not
    a hyper-parameter value: ``copy.deepcopy`` (used by
    :func:`sklearn.base.clone`, hence by ``GridSearchCV`` and
    ``cross_val_score``) returns the same object, so every cloned estimator
    charges the ledger you created. Charges are thread safe.

    **Worker processes.** A *pickled* copy (joblib's default loky backend
    with ``n_jobs > 1``, :mod:`multiprocessing`, a local Dask cluster)
    charges the same ledger: the first time the accountant is pickled, its
    ledger moves to an append-only file in a private temporary directory
    (mode 0700, removed when the original accountant is garbage collected),
    and every copy, the original included, reads and appends to that file
    under an exclusive OS file lock. Each charge is checked against all the
    charges of all processes while the lock is held, so processes racing for
    the last of the budget cannot overspend it, and a search run with
    ``n_jobs=2`` ends with exactly the spend of the sequential run. Unpickled
    in the process that owns it, the accountant is the original object. The
    same holds after ``os.fork``: accountants are moved to the file before
    the fork.

    Limits: copies share the ledger only on **one machine** (the file must be
    reachable at the same path); a copy in a process that cannot reach it
    (a worker on another machine of a Dask cluster, a pickle loaded after
    the original accountant is gone) refuses charges with a RuntimeError and
    reports the ledger as it was when pickled. On a multi-machine cluster,
    charge in the driver, for example with
    :class:`~skdp.model_selection.DPGridSearchCV`, which charges once
    before it sends any fit out.

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
    0
    >>> acc.charge_mu(half, label="second fit")
    1
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
        self._lock = threading.Lock()
        self._shared: SharedLedger | None = None  # the file, once pickled
        self._detached = False  # a copy that cannot reach its ledger (or why not)
        _ALL.add(self)

    # -- sharing ------------------------------------------------------------
    def __copy__(self) -> BudgetAccountant:
        return self

    def __deepcopy__(self, memo) -> BudgetAccountant:
        return self

    def __reduce__(self):
        with self._lock:
            if not self._detached:
                try:
                    self._share()
                except OSError:  # no temporary directory: the copy will refuse charges
                    pass
            shared = self._shared
            if isinstance(self._detached, LedgerChanged):
                shared = None  # the copy refuses charges too, with the ledger as last read
            token = shared.token if shared is not None else None
            path = shared.path if shared is not None else None
            known = shared.known() if shared is not None else None
            snapshot = [asdict(c) for c in self._charges]
        return _restore, (self.epsilon, self.delta, path, token, snapshot, known)

    def _share(self) -> None:
        """Move the ledger to a file that copies in other processes can charge (under the lock)."""
        if self._shared is not None:
            return
        shared = SharedLedger.create({"epsilon": self.epsilon, "delta": self.delta})
        with shared.locked():
            shared.read_new()
            for c in self._charges:
                shared.append(asdict(c))
        self._shared = shared
        _SHARED[shared.token] = self
        weakref.finalize(self, _remove_if_owner, shared.path, os.getpid())

    @contextlib.contextmanager
    def _synced(self, charging: bool) -> Iterator[None]:
        """Hold the locks, with the charges of every process read in."""
        with self._lock, contextlib.ExitStack() as file_lock:
            if self._shared is not None and not self._detached:
                try:
                    file_lock.enter_context(self._shared.locked())
                    self._charges.extend(Charge(**e) for e in self._shared.read_new())
                except LedgerUnreachable as exc:
                    file_lock.close()
                    # From now on the ledger as last read is reported, and charges
                    # are refused with this reason (an exception is truthy).
                    self._detached = exc.with_traceback(None)
                    if charging:
                        raise RuntimeError(self._unreachable_message(exc)) from None
            elif charging and self._detached:
                raise RuntimeError(self._unreachable_message(self._detached))
            yield

    def _unreachable_message(self, exc) -> str:
        if isinstance(exc, LedgerChanged):
            return (f"The shared ledger file of this BudgetAccountant changed behind its back "
                    f"({exc}). Charges recorded there may be lost, so no charge is accepted: "
                    "the budget of this dataset must be counted again from your own records.")
        where = f" ({exc})" if isinstance(exc, Exception) else ""
        return ("This BudgetAccountant is a copy that cannot reach its ledger" + where + ": it "
                "was pickled in a process whose ledger file this process cannot read (another "
                "machine, or the original accountant is gone), or inherited by os.fork before "
                "it could be shared. Charges to it would not reach the ledger you created. "
                "Charge in the process that owns the accountant, or pass the original "
                "accountant again with set_params(accountant=...).")

    def __repr__(self) -> str:
        eps, _ = self.spent()
        return (f"BudgetAccountant(epsilon={self.epsilon!r}, delta={self.delta!r})"
                f"  # {len(self._charges)} charges, epsilon spent {eps:.4g}")

    # -- budget arithmetic ----------------------------------------------------
    def _totals(self) -> tuple[float, float, float]:
        """Exactly rounded (sum mu_i**2, sum epsilon_i, sum delta_i) of the charges."""
        cs = self._charges
        return (math.fsum(c.mu * c.mu for c in cs if c.mu is not None),
                math.fsum(c.epsilon for c in cs if c.mu is None),
                math.fsum(c.delta for c in cs if c.mu is None))

    def _zcdp(self, charging: bool = False) -> bool:
        """Whether the Gaussian block must be read as zCDP: a secure-mode charge is in it (or comes)."""
        return (charging and is_secure_mode()) or any(c.zcdp for c in self._charges)

    def _gaussian_budget_mu(self, other_epsilon: float, other_delta: float,
                            zcdp: bool = False) -> float:
        """Largest composed mu the Gaussian charges may reach.

        With a secure-mode charge among them the block is zCDP (a mu-GDP
        charge is ``mu**2 / 2``-zCDP too), converted by the Renyi bound.
        """
        eps = self.epsilon - other_epsilon
        delta = self.delta - other_delta
        if eps <= 0.0 or delta <= 0.0:
            return 0.0
        if zcdp:
            return math.sqrt(2.0 * rho_from_epsilon_delta(eps, delta))
        return mu_from_epsilon_delta(eps, delta)

    @property
    def spent_mu(self) -> float:
        with self._synced(charging=False):
            return math.sqrt(self._totals()[0])

    @property
    def ledger(self) -> list[Charge]:
        with self._synced(charging=False):
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
        with self._synced(charging=False):
            mu_sq, other_eps, other_delta = self._totals()
            zcdp = self._zcdp()
        if mu_sq == 0.0:
            return other_eps, other_delta
        return (spent_epsilon(math.sqrt(mu_sq), self.delta - other_delta, zcdp=zcdp) + other_eps,
                self.delta)

    def remaining(self) -> tuple[float, float]:
        """The largest further Gaussian charge, as (epsilon, delta).

        Returns
        -------
        epsilon, delta : float
            ``(0.0, 0.0)`` when the budget is used up.
        """
        with self._synced(charging=False):
            mu_sq, other_eps, other_delta = self._totals()
            zcdp = self._zcdp(charging=True)
        budget = self._gaussian_budget_mu(other_eps, other_delta, zcdp)
        left_sq = budget * budget - mu_sq
        if left_sq <= (_SLACK * budget) ** 2:
            return 0.0, 0.0
        delta = self.delta - other_delta
        return spent_epsilon(math.sqrt(left_sq), delta, zcdp=zcdp), delta

    def remaining_mu(self) -> float:
        """The largest further Gaussian charge, as a GDP mu.

        Returns
        -------
        float
        """
        with self._synced(charging=False):
            mu_sq, other_eps, other_delta = self._totals()
            zcdp = self._zcdp(charging=True)
        budget = self._gaussian_budget_mu(other_eps, other_delta, zcdp)
        return math.sqrt(max(budget * budget - mu_sq, 0.0))

    # -- charging -------------------------------------------------------------
    def _record(self, charge: Charge) -> int:
        if self._shared is not None:
            self._shared.append(asdict(charge))
        self._charges.append(charge)
        return len(self._charges) - 1

    def _refuse(self, asked: str, mu_sq: float, other_eps: float, other_delta: float,
                zcdp: bool = False) -> None:
        budget = self._gaussian_budget_mu(other_eps, other_delta, zcdp)
        left_mu = math.sqrt(max(budget * budget - mu_sq, 0.0))
        delta_left = self.delta - other_delta
        eps_left = (spent_epsilon(left_mu, delta_left, zcdp=zcdp)
                    if left_mu > _SLACK * budget and delta_left > 0 else 0.0)
        raise BudgetExceededError(
            f"Privacy budget exceeded: asked for {asked}, but only "
            f"epsilon={eps_left:.6g} at delta={max(delta_left, 0.0):.3g} "
            f"(mu={left_mu:.6g}) is left of the budget "
            f"epsilon={self.epsilon:g}, delta={self.delta:g}. Nothing was charged."
        )

    def charge_mu(self, mu: float, label: str = "gaussian") -> int:
        """Charge a Gaussian mechanism (or composition of them) with GDP parameter mu.

        Parameters
        ----------
        mu : float
            In [0, inf).
        label : str, default="gaussian"
            What the charge is for; kept in :attr:`ledger`.

        Returns
        -------
        int
            The charge's position in the ledger (over all processes that share
            it). skdp estimators mix it into their noise seed, so two fits
            charged to one ledger never draw the same noise.

        Raises
        ------
        BudgetExceededError
            If the charge does not fit in what is left; nothing is recorded.
        RuntimeError
            On a copy that cannot reach its ledger (see Notes of the class).
        """
        mu = _check_real("mu", mu, closed_low=True)
        with self._synced(charging=True):
            mu_sq, other_eps, other_delta = self._totals()
            zcdp = self._zcdp(charging=True)
            budget = self._gaussian_budget_mu(other_eps, other_delta, zcdp)
            if mu_sq + mu * mu > budget * budget * (1.0 + _SLACK):
                delta = self.delta - other_delta
                # (A mu beyond 1e150 has no finite epsilon to print: its square overflows.)
                eps = (spent_epsilon(mu, delta, zcdp=zcdp) if 0 < mu <= 1e150 and delta > 0
                       else math.inf)
                self._refuse(f"mu={mu:.6g} (epsilon={eps:.6g} at delta={delta:.3g})",
                             mu_sq, other_eps, other_delta, zcdp)
            return self._record(Charge(label=str(label), mu=mu, zcdp=is_secure_mode()))

    def charge(self, epsilon: float, delta: float = 0.0, label: str = "mechanism") -> int:
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
            What the charge is for; kept in :attr:`ledger`.

        Returns
        -------
        int
            The charge's position in the ledger.

        Raises
        ------
        BudgetExceededError
            If the charge does not fit in what is left; nothing is recorded.
        RuntimeError
            On a copy that cannot reach its ledger (see Notes of the class).
        """
        epsilon = _check_real("epsilon", epsilon, closed_low=True)
        delta = _check_real("delta", delta, high=1.0, closed_low=True)
        with self._synced(charging=True):
            mu_sq, other_eps, other_delta = self._totals()
            new_eps = math.fsum([other_eps, epsilon])
            new_delta = math.fsum([other_delta, delta])
            fits = (new_eps <= self.epsilon * (1.0 + _SLACK)
                    and new_delta <= self.delta * (1.0 + _SLACK))
            zcdp = self._zcdp()
            if fits and mu_sq > 0.0:
                budget = self._gaussian_budget_mu(new_eps, new_delta, zcdp)
                fits = mu_sq <= budget * budget * (1.0 + _SLACK)
            if not fits:
                self._refuse(f"epsilon={epsilon:.6g}, delta={delta:.3g}",
                             mu_sq, other_eps, other_delta, zcdp)
            return self._record(Charge(label=str(label), epsilon=epsilon, delta=delta))


def _restore(epsilon, delta, path, token, snapshot, known=None) -> BudgetAccountant:
    """Unpickle: the original object in its own process, else a copy on the shared file.

    ``known`` (offset, digest) is what the pickled handle had read: the copy's
    first read checks that the file still begins with it.
    """
    if token is not None and (live := _SHARED.get(token)) is not None:
        return live
    acc = BudgetAccountant.__new__(BudgetAccountant)
    acc.epsilon, acc.delta = epsilon, delta
    acc._lock = threading.Lock()
    acc._charges = []
    acc._shared = SharedLedger(path, token, known) if token is not None else None
    acc._detached = token is None
    if token is not None:
        try:
            with acc._shared.locked():
                acc._charges.extend(Charge(**e) for e in acc._shared.read_new())
            _SHARED[token] = acc
        except LedgerUnreachable as exc:
            acc._detached = exc.with_traceback(None)  # refuses charges with this reason
    if acc._detached:
        acc._charges = [Charge(**e) for e in snapshot]
    _ALL.add(acc)
    return acc


def _remove_if_owner(path: str, pid: int) -> None:
    # A forked child inherits this finalizer with the object: only the
    # process that created the directory removes it.
    if os.getpid() == pid:
        shutil.rmtree(path, ignore_errors=True)


def _before_fork() -> None:
    # A forked child inherits accountants without pickling them: share the
    # ledgers first, so that its charges reach the same file.
    for acc in list(_ALL):
        try:
            with acc._lock:
                if not acc._detached:
                    acc._share()
        except OSError:  # no temporary directory: the child's copy will refuse charges
            pass


def _after_fork_in_child() -> None:
    for acc in list(_ALL):
        acc._lock = threading.Lock()  # another thread of the parent may have held it
        if acc._shared is None:
            acc._detached = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)
