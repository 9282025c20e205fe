"""Random generators and Gaussian noise: the one place skdp draws randomness from."""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterator
from numbers import Integral

import numpy as np

__all__ = ["gaussian_noise", "is_secure_mode", "make_rng", "secure_mode", "set_secure_mode"]

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

    In secure mode every generator skdp makes is seeded with 256 bits from the
    operating system's CSPRNG (:mod:`secrets`), and any user seed
    (``random_state`` other than None) is refused with a ValueError, so a
    release cannot be reproduced, and its noise subtracted, by anyone who
    learns the seed.

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

    What secure mode does **not** protect against:

    - The generator itself is numpy's PCG64DXSM, which is fast but not a
      cryptographic generator: an adversary who could observe many of its raw
      outputs could in principle reconstruct its state. skdp only releases
      outputs with data added, which makes this far harder, but it is not
      ruled out by a proof.
    - Floating-point attacks (Mironov, 2012): Gaussian noise on doubles is not
      exactly Gaussian, and the low-order bits of a noisy release can reveal
      the noiseless value. skdp does not snap or discretise its releases.
    - Timing and other side channels of the computation.
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


def make_rng(random_state=None) -> np.random.Generator:
    """Turn a ``random_state`` parameter into a :class:`numpy.random.Generator`.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
        None draws fresh entropy from the operating system (use this for real
        releases); an int gives a reproducible generator (for tests and
        examples: anyone who knows the seed can remove the noise); a Generator
        is used as is; a RandomState seeds a new Generator from its stream, so
        successive calls differ, as in scikit-learn.

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    ValueError
        In secure mode (:func:`set_secure_mode`) for anything but None, or
        for a negative int.
    TypeError
        For any other type.

    Examples
    --------
    >>> from skdp.mechanisms import make_rng
    >>> make_rng(0).standard_normal() == make_rng(0).standard_normal()
    True
    """
    if is_secure_mode():
        if random_state is not None:
            raise ValueError(
                f"Secure mode is on: a user seed (random_state={random_state!r}) is "
                "refused. Pass random_state=None, or turn secure mode off for "
                "reproducible (non-secret) noise."
            )
        return np.random.Generator(np.random.PCG64DXSM(secrets.randbits(256)))
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1, size=4))
    if isinstance(random_state, Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative int, got {random_state}.")
        return np.random.default_rng(int(random_state))
    raise TypeError(
        "random_state must be None, an int, a numpy Generator or RandomState, "
        f"got {type(random_state).__name__}."
    )


def gaussian_noise(std, size, rng: np.random.Generator) -> np.ndarray:
    """Draw ``N(0, std**2)`` noise of the given size.

    Parameters
    ----------
    std : float or array-like
        Standard deviation, >= 0; an array broadcasts against ``size``.
    size : int or tuple of int
    rng : numpy.random.Generator
        From :func:`make_rng`.

    Returns
    -------
    ndarray of shape ``size``

    Examples
    --------
    >>> from skdp.mechanisms import gaussian_noise, make_rng
    >>> gaussian_noise(2.0, (2, 3), make_rng(0)).shape
    (2, 3)
    """
    std = np.asarray(std, dtype=float)
    if not np.all(np.isfinite(std)) or np.any(std < 0):
        raise ValueError(f"Noise std must be finite and >= 0, got {std}.")
    return rng.standard_normal(size) * std
