"""Exceptions and warnings raised by skdp."""

__all__ = ["BudgetExceededError", "PrivacyLeakWarning"]


class BudgetExceededError(ValueError):
    """A charge would spend more privacy budget than a BudgetAccountant has left.

    Raised by :meth:`skdp.accounting.BudgetAccountant.charge_mu` and
    :meth:`skdp.accounting.BudgetAccountant.charge` *before* the charge is
    recorded, and by estimators before any noise is drawn.
    """


class PrivacyLeakWarning(UserWarning):
    """Something data-dependent is about to be released without being paid for.

    skdp never chooses a hyper-parameter (a bound, a clip norm, a stopping
    time) from the private data unless it is paid for with budget. When a user
    asks for a diagnostic that reveals data (for example the fraction of
    clipped gradients), or when an input forces a data-dependent choice, this
    warning says what is released outside the guarantee.
    """
