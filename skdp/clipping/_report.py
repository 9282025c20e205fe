"""An opt-in, non-private diagnostic: how often clipping bites during a fit."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np

from skdp.exceptions import PrivacyLeakWarning
from skdp.utils._warnings import warn

__all__ = ["ClippingReport", "clipping_report"]

_ACTIVE: ContextVar[ClippingReport | None] = ContextVar("skdp_clipping_report", default=None)


@dataclass
class ClippingReport:
    """Counts of clipping decisions made inside :func:`clipping_report`.

    Parameters
    ----------
    clipped : int, default=0
        Vectors (rows or per-example gradients) whose norm exceeded the bound.
    total : int, default=0
        Vectors checked.
    """

    clipped: int = 0
    total: int = 0

    @property
    def fraction(self) -> float:
        """``clipped / total`` (NaN before anything was checked)."""
        return self.clipped / self.total if self.total else float("nan")


@contextlib.contextmanager
def clipping_report() -> Iterator[ClippingReport]:
    """Count how many rows or per-example gradients are clipped (not private).

    Every clipping decision skdp makes in the current thread inside the
    block is counted: per-example gradients for the gradient methods, rows
    for the moment estimators, AdaSSP and DP-GD's interval statistics. The
    counts are computed from the private data **without noise** and are not
    covered by any guarantee, so entering the block emits a
    :class:`~skdp.exceptions.PrivacyLeakWarning`. Use it on public or
    synthetic data of the same shape to choose bounds, or accept the leak
    knowingly. Off unless you enter the block.

    Yields
    ------
    ClippingReport

    Examples
    --------
    >>> import warnings
    >>> from skdp.clipping import clip_rows, clipping_report
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     with clipping_report() as report:
    ...         _ = clip_rows([[3.0, 4.0], [0.3, 0.4]], 1.0)
    >>> report.clipped, report.total, report.fraction
    (1, 2, 0.5)
    """
    warn("clipping_report() counts clipped rows/gradients of the private data without "
                  "noise; the counts are outside the privacy guarantee.", PrivacyLeakWarning)
    report = ClippingReport()
    token = _ACTIVE.set(report)
    try:
        yield report
    finally:
        _ACTIVE.reset(token)


def _recording() -> bool:
    """Whether a report is active (to skip work that only feeds one)."""
    return _ACTIVE.get() is not None


def _record(norms: np.ndarray, clip_norm: float) -> None:
    """Called by every vectorised clipping decision; free when no report is active."""
    if _ACTIVE.get() is not None:
        _count(int(np.count_nonzero(norms > clip_norm)), int(norms.size))


def _count(clipped: int, total: int) -> None:
    """Add counts to the active report, if any (for loops that clip one row at a time)."""
    report = _ACTIVE.get()
    if report is not None:
        report.clipped += clipped
        report.total += total
