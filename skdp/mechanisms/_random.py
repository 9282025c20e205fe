"""Random generators and Gaussian noise: the one place skdp draws randomness from.

Every noise draw of every release goes through :func:`gaussian_noise`, which
can record it (:func:`record_releases`): the mechanism's name, its L2
sensitivity, the noise std, the weight bound it assumed and a fingerprint of
the generator's state. From such a log the GDP parameter of a fit can be
recomposed, ``mu = sqrt(sum_i (sensitivity_i / std_i)**2)``, and two releases
that share a noise stream show up as two draws from one generator state.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from numbers import Integral

import numpy as np

__all__ = ["Release", "composed_mu", "gaussian_noise", "is_secure_mode", "make_rng",
           "record_release", "record_releases", "secure_mode", "set_secure_mode", "spawn_rngs"]

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


def make_rng(random_state=None, *, entry: int | None = None) -> np.random.Generator:
    """Turn a ``random_state`` parameter into a :class:`numpy.random.Generator`.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
        None draws fresh entropy from the operating system (use this for real
        releases); an int gives a reproducible generator (for tests and
        examples: anyone who knows the seed can remove the noise); a Generator
        or RandomState seeds a new Generator from its stream (drawing from it,
        so successive calls differ, as in scikit-learn).
    entry : int or None, default=None
        The position of the fit's charge in its accountant's ledger
        (:meth:`skdp.accounting.BudgetAccountant.charge_mu` returns it). It
        is mixed into the seed, so two fits charged to one ledger never
        share noise, even with the same int seed or with clones of one
        Generator (``clone`` copies a Generator's state).

    Returns
    -------
    numpy.random.Generator
        Always a new generator: the caller's Generator is never used as the
        noise source itself (its state, in a pickle, would replay the noise).

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
    >>> make_rng(0, entry=1).standard_normal() == make_rng(0, entry=2).standard_normal()
    False
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
        entropy = [int(v) for v in random_state.integers(0, 2**63, size=4)]
    elif isinstance(random_state, np.random.RandomState):
        entropy = [int(v) for v in random_state.randint(0, 2**31 - 1, size=4)]
    elif isinstance(random_state, Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative int, got {random_state}.")
        entropy = int(random_state)
    else:
        raise TypeError(
            "random_state must be None, an int, a numpy Generator or RandomState, "
            f"got {type(random_state).__name__}."
        )
    key = () if entry is None else (int(entry),)
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=key))


def spawn_rngs(rng: np.random.Generator, count: int) -> list[np.random.Generator]:
    """``count`` independent generators seeded from ``rng`` (works with numpy >= 1.24).

    Parameters
    ----------
    rng : numpy.random.Generator
    count : int

    Returns
    -------
    list of numpy.random.Generator
    """
    seeds = np.random.SeedSequence([int(v) for v in rng.integers(0, 2**63, size=4)])
    return [np.random.default_rng(s) for s in seeds.spawn(int(count))]


@dataclass(frozen=True)
class Release:
    """One noise draw, as recorded by :func:`record_releases`.

    Parameters
    ----------
    name : str
        The mechanism.
    sensitivity : float
        L2 sensitivity (replace-one) of the released quantity, in the units
        of ``std``, for a row of weight ``weight``. A draw that continues a
        mechanism whose sensitivity was recorded with its first draw (a step
        of correlated noise, another block of a joint release) records 0.
    std : float
        Noise standard deviation per coordinate.
    weight : float or None
        The bound on a row's weight the sensitivity assumed (1 for unweighted
        rows); None where row weights do not enter (unweighted counts).
    size : int
        Number of noise coordinates drawn (0 for a record without a draw).
    stream : str or None
        Fingerprint of the generator's state before the draw: two draws with
        one fingerprint added the same noise.
    part : hashable or None
        The disjoint part of the rows the mechanism reads (a batch of a
        single pass, the rows of one ``partial_fit`` call); None for all
        rows. Mechanisms on disjoint parts compose in parallel.
    weight_power : int
        The sensitivity grows as ``weight**weight_power`` (2 for second
        moments of weighted vectors).
    """

    name: str
    sensitivity: float
    std: float
    weight: float | None
    size: int
    stream: str | None
    part: object = None
    weight_power: int = 1

    @property
    def mu(self) -> float:
        """``sensitivity / std``: the GDP parameter this draw adds (0 for a continuation)."""
        return self.sensitivity / self.std if self.sensitivity else 0.0


_RECORDERS: list[list[Release]] = []
_RECORDERS_LOCK = threading.Lock()
_TAGS = threading.local()


@contextlib.contextmanager
def release_part(label) -> Iterator[None]:
    """Label the releases recorded in this thread inside the block with a part of the rows.

    A meta-estimator (a private search) fits its candidates on parts of the
    rows; the label, prepended to each release's own part, says which.

    Parameters
    ----------
    label : hashable
    """
    previous = getattr(_TAGS, "label", None)
    _TAGS.label = label
    try:
        yield
    finally:
        _TAGS.label = previous


@contextlib.contextmanager
def record_releases() -> Iterator[list[Release]]:
    """Record every noise draw made in this process (all threads) inside the block.

    Yields
    ------
    list of Release
        Filled as the draws happen.

    Notes
    -----
    Draws made in other processes (joblib's process backends, Dask workers)
    are not recorded here.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import DPStandardScaler
    >>> from skdp.mechanisms import composed_mu, record_releases
    >>> X = np.random.default_rng(0).uniform(size=(1000, 2))
    >>> with record_releases() as log:
    ...     scaler = DPStandardScaler(bounds=(0, 1), random_state=0).fit(X)
    >>> bool(np.isclose(composed_mu(log), scaler.privacy_spent_.mu))
    True
    """
    log: list[Release] = []
    with _RECORDERS_LOCK:
        _RECORDERS.append(log)
    try:
        yield log
    finally:
        with _RECORDERS_LOCK:
            _RECORDERS.remove(log)


def _fingerprint(rng: np.random.Generator) -> str:
    return hashlib.sha256(repr(rng.bit_generator.state).encode()).hexdigest()[:16]


def _record(name, sensitivity, std, weight, size, rng, part, weight_power=1) -> None:
    if not _RECORDERS:
        return
    label = getattr(_TAGS, "label", None)
    if label is not None:
        part = label if part is None else (label, part)
    stds = np.asarray(std, dtype=float)
    entry = Release(str(name), float(sensitivity), float(stds.max()) if stds.size else 0.0,
                    None if weight is None else float(weight), int(size),
                    None if rng is None else _fingerprint(rng), part, int(weight_power))
    with _RECORDERS_LOCK:
        for log in _RECORDERS:
            log.append(entry)


def record_release(name: str, sensitivity: float, std: float, weight: float | None = 1.0,
                   part=None) -> None:
    """Record a mechanism without drawing: one whose noise is drawn step by step later
    (correlated noise; its draws are recorded by :func:`gaussian_noise` with
    sensitivity 0), or queries an early-stopping search pays for but skips.

    Parameters
    ----------
    name : str
    sensitivity : float
        L2 sensitivity of the whole mechanism, in the units of ``std``.
    std : float
        Noise std of its (whitened) draws.
    weight : float or None, default=1.0
        As in :class:`Release`.
    part : hashable or None, default=None
        As in :class:`Release`.
    """
    _record(name, sensitivity, std, weight, 0, None, part)


def composed_mu(releases, row_weight: float = 1.0) -> float:
    """The GDP parameter of the recorded releases, recomposed.

    Mechanisms on all rows compose sequentially; those on disjoint parts
    (:attr:`Release.part`) in parallel: ``mu**2 = sum over all-row releases
    of mu_i**2 + max over parts of the sum of that part's mu_i**2``.

    Parameters
    ----------
    releases : iterable of Release
    row_weight : float, default=1.0
        The real bound on a row's weight (``max_weight`` with sample weights,
        1 without): each release's sensitivity is rescaled from the weight it
        assumed to this one.

    Returns
    -------
    float
    """
    whole = 0.0
    parts: dict = {}
    for r in releases:
        mu = r.mu if r.weight is None else r.mu * (row_weight / r.weight) ** r.weight_power
        if r.part is None:
            whole += mu * mu
        else:
            parts[r.part] = parts.get(r.part, 0.0) + mu * mu
    return float(np.sqrt(whole + max(parts.values(), default=0.0)))


def gaussian_noise(std, size, rng: np.random.Generator, *, name: str = "gaussian",
                   sensitivity: float = 0.0, weight: float | None = 1.0,
                   part=None, weight_power: int = 1) -> np.ndarray:
    """Draw ``N(0, std**2)`` noise of the given size: every noise draw of skdp comes here.

    Parameters
    ----------
    std : float or array-like
        Standard deviation, >= 0; an array broadcasts against ``size``.
    size : int or tuple of int
    rng : numpy.random.Generator
        From :func:`make_rng`.
    name : str, default="gaussian"
        The mechanism, for :func:`record_releases`.
    sensitivity : float, default=0.0
        L2 sensitivity of what the noise is added to, in the units of ``std``
        (the largest std where ``std`` is an array whose entries scale the
        coordinates); 0 marks a further draw of a mechanism already recorded.
    weight : float or None, default=1.0
        The row-weight bound behind ``sensitivity`` (see :class:`Release`).
    part : hashable or None, default=None
        The disjoint part of the rows it reads (see :class:`Release`).
    weight_power : int, default=1
        How the sensitivity grows with ``weight`` (see :class:`Release`).

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
    if _RECORDERS:
        _record(name, sensitivity, std, weight, int(np.prod(size)), rng, part, weight_power)
    return rng.standard_normal(size) * std
