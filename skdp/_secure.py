"""Secure mode: a process-wide switch read by the noise and the accounting.

Kept apart from :mod:`skdp.mechanisms` so that :mod:`skdp.accounting` can read
it without importing the mechanisms.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

__all__ = ["is_secure_mode", "secure_mode", "set_secure_mode"]

# Process-wide on purpose: a thread-local flag would be off in the worker
# threads of a threaded GridSearchCV, silently accepting seeds there. The
# environment variable carries it to worker processes started later (joblib's
# process backends start Python afresh); SKDP_SECURE_MODE=1 set before Python
# starts turns it on in every process from the first import.
_ENV = "SKDP_SECURE_MODE"
_SECURE = {"on": os.environ.get(_ENV) == "1"}


def is_secure_mode() -> bool:
    """Whether secure mode is on (see :func:`set_secure_mode`)."""
    return _SECURE["on"]


def set_secure_mode(enabled: bool) -> None:
    """Turn secure mode on or off, for the whole process (all threads).

    In secure mode:

    - every release is an exact discrete Gaussian mechanism on a grid
      (:func:`skdp.mechanisms.grid_release`, sampled by
      :func:`skdp.mechanisms.discrete_gaussian` from the operating system's
      CSPRNG with integer arithmetic only), so the low-order bits of a
      release say nothing about the data (Mironov 2012; Jin et al. 2022);
    - the guarantee is stated in zero-concentrated DP: a budget
      ``(epsilon, delta)`` is converted to the largest rho that implies it
      (:func:`skdp.accounting.rho_from_epsilon_delta`), the noise is
      calibrated to ``mu = sqrt(2 rho)``, and ``privacy_spent_`` reports
      the zCDP conversion (see :class:`skdp.base.PrivacySpent`);
    - every generator skdp makes (for data shuffles and subsamples, which
      are not releases) is seeded with 256 bits from :mod:`secrets`, and any
      user seed (``random_state`` other than None) is refused with a
      ValueError.

    Parameters
    ----------
    enabled : bool

    Notes
    -----
    **Processes.** The setting is copied to the environment variable
    ``SKDP_SECURE_MODE``, so worker processes started *afterwards* inherit
    it; joblib reuses its process pool, and workers started before the call
    do not see it. To be sure, set ``SKDP_SECURE_MODE=1`` before Python
    starts, or use a thread backend (``n_jobs`` with
    ``joblib.parallel_backend("threading")``).

    **Cost.** About 1.5 microseconds per noise coordinate on top of the fit
    (see ``benchmarks/secure_mode.py``), and 0.1% more noise, which pays
    for rounding to the grid.

    What secure mode does **not** protect against:

    - Floating-point error in the noiseless aggregate itself (a sum of n
      bounded rows computed in doubles): the sensitivity analysis treats the
      computed aggregate as exact. Its error is many orders of magnitude
      below the grid step for the sums skdp releases, but it is not bounded
      by a proof.
    - Timing and other side channels: the sampler's running time depends on
      the noise it draws (rejection sampling), and the fit's on the data.
    - Anything outside skdp: copies of the data, logs, or the non-private
      hyper-parameters you chose by looking at the data.
    """
    _SECURE["on"] = bool(enabled)
    if enabled:
        os.environ[_ENV] = "1"
    else:
        os.environ.pop(_ENV, None)


@contextlib.contextmanager
def secure_mode(enabled: bool = True) -> Iterator[None]:
    """Context manager form of :func:`set_secure_mode`.

    Parameters
    ----------
    enabled : bool, default=True
        The setting inside the block; the previous one is restored after it.

    Examples
    --------
    >>> from skdp.mechanisms import make_rng, secure_mode
    >>> with secure_mode():
    ...     rng = make_rng(None)      # seeded from the OS CSPRNG
    >>> with secure_mode():
    ...     make_rng(0)
    Traceback (most recent call last):
    ...
    ValueError: Secure mode is on: a user seed (random_state=0) is refused...
    """
    previous = is_secure_mode()
    set_secure_mode(enabled)
    try:
        yield
    finally:
        set_secure_mode(previous)


