"""Random generators, Gaussian noise and releases: the one place skdp draws randomness from.

Every release goes through :func:`gaussian_release` (or its forms
:func:`symmetric_release`, :class:`PlannedRelease` and
:meth:`CorrelatedNoise.release`): by default the value plus
:func:`gaussian_noise`, in secure mode an exact discrete Gaussian release on
a grid (:class:`~skdp.mechanisms.GridPlan`). Every draw can be recorded
(:func:`record_releases`): the mechanism's name, its L2
sensitivity, the noise std, the weight bound it assumed and a fingerprint of
the generator's state. From such a log the GDP parameter of a fit can be
recomposed, ``mu = sqrt(sum_i (sensitivity_i / std_i)**2)``, and two releases
that share a noise stream show up as two draws from one generator state.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from numbers import Integral

import numpy as np

from skdp._fork import in_worker_process
from skdp._secure import is_secure_mode, secure_mode, set_secure_mode
from skdp.mechanisms._discrete_gaussian import GridPlan

__all__ = ["MAX_WEIGHT", "PlannedRelease", "Release", "composed_mu", "gaussian_noise",
           "gaussian_release", "is_secure_mode", "make_rng", "record_release", "record_releases",
           "secure_mode", "set_secure_mode", "spawn_rngs", "symmetric_release"]

def check_random_state_type(random_state) -> None:
    """The errors of :func:`make_rng`, without drawing: for a check before a charge.

    Parameters
    ----------
    random_state : object

    Raises
    ------
    ValueError
        In secure mode for anything but None, and for a negative int.
    TypeError
        For anything but None, a non-negative int, a Generator or a
        RandomState (a bool included).
    """
    if is_secure_mode() and random_state is not None:
        raise ValueError(
            f"Secure mode is on: a user seed (random_state={random_state!r}) is "
            "refused. Pass random_state=None, or turn secure mode off for "
            "reproducible (non-secret) noise."
        )
    if random_state is None or isinstance(random_state, (np.random.Generator,
                                                         np.random.RandomState)):
        return
    if isinstance(random_state, Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative int, got {random_state}.")
        return
    raise TypeError(
        "random_state must be None, an int, a numpy Generator or RandomState, "
        f"got {type(random_state).__name__}."
    )


def make_rng(random_state=None, *, entry: int | None = None) -> np.random.Generator:
    """Turn a ``random_state`` parameter into a :class:`numpy.random.Generator`.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
        None draws fresh entropy from the operating system (use this for real
        releases); an int gives a reproducible generator (for tests and
        examples: anyone who knows the seed can remove the noise); a Generator
        or RandomState seeds a new Generator from its stream (drawing from it,
        so successive calls differ, as in scikit-learn). In a worker process
        (forked, or started by ``multiprocessing``, joblib or
        ``concurrent.futures``) the seed drawn from a Generator or
        RandomState is mixed with fresh entropy from the operating system at
        every call: a worker holds a copy of the generator (inherited by the
        fork, or pickled with each task), and two copies would add the same
        noise. Such fits are not reproducible; pass an int for reproducible
        fits in workers.
    entry : int or None, default=None
        The position of the fit's charge in its accountant's ledger
        (:meth:`skdp.accounting.BudgetAccountant.charge_mu` returns it). It
        is mixed into the seed, so two fits charged to one ledger never
        share noise, even with the same int seed or with copies of one
        Generator's state (skdp estimators' clones share the Generator
        object instead of copying it).

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
    check_random_state_type(random_state)
    if is_secure_mode():
        return np.random.Generator(np.random.PCG64DXSM(secrets.randbits(256)))
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        entropy = [int(v) for v in random_state.integers(0, 2**63, size=4)]
    elif isinstance(random_state, np.random.RandomState):
        entropy = [int(v) for v in random_state.randint(0, 2**31 - 1, size=4)]
    else:
        entropy = int(random_state)
    if not isinstance(entropy, int) and in_worker_process():  # a copied generator state
        entropy.append(secrets.randbits(128))
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


#: Largest row-weight bound a release accepts (``max_weight`` of every estimator and
#: helper): with clip norms and bounds up to 1e100, sums of n rows of weight up to
#: 1e10 (and their squares) stay far below the float range, so whether a sum
#: overflows can never depend on the rows.
MAX_WEIGHT = 1e10


def _check_weight(weight) -> None:
    if weight is not None and not (0.0 <= float(weight) <= MAX_WEIGHT):
        raise ValueError(f"The weight bound (max_weight) must lie in [0, {MAX_WEIGHT:g}], "
                         f"got {weight}: a sum of rows weighted beyond it may overflow.")


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
    _check_weight(weight)
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

    Releases call it through :func:`gaussian_release`; in secure mode it
    refuses (RuntimeError), as noise added in floating point is not a
    secure release.

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
    if is_secure_mode():
        raise RuntimeError(
            "Secure mode is on: noise is only added on a grid, by gaussian_release, "
            "PlannedRelease or CorrelatedNoise.release; gaussian_noise is not a release.")
    _check_weight(weight)
    std = np.asarray(std, dtype=float)
    if not np.all(np.isfinite(std)) or np.any(std < 0):
        raise ValueError(f"Noise std must be finite and >= 0, got {std}.")
    if _RECORDERS:
        _record(name, sensitivity, std, weight, int(np.prod(size)), rng, part, weight_power)
    return rng.standard_normal(size) * std


def _secure_mu(std, sensitivity: float, mechanism_mu) -> float:
    if mechanism_mu is not None:
        return float(mechanism_mu)
    if not sensitivity:
        raise ValueError("In secure mode a block of a joint release needs mechanism_mu "
                         "(the whole mechanism's sensitivity in units of its noise).")
    return float(sensitivity) / float(np.max(std))


class PlannedRelease:
    """Noise for ``count`` releases of one shape, drawn ahead; :meth:`add` makes release i.

    For sequential algorithms that release one row's or one step's value at
    a time with the same noise scale (DP-SSGD): the noise is drawn in one
    call and recorded once. In secure mode it is integer discrete Gaussian
    noise on a grid (:class:`~skdp.mechanisms.GridPlan`), and :meth:`add`
    rounds the value to the grid before adding it.

    Parameters
    ----------
    std, rng, name, sensitivity, weight, part, weight_power
        As in :func:`gaussian_noise` (the sensitivity of each release).
    count : int
    shape : int or tuple of int
        Shape of one release.
    mechanism_mu : float or None, default=None
        In secure mode: the L2 sensitivity, in units of the noise, of the
        whole mechanism each release belongs to (default
        ``sensitivity / max(std)``, a release that is a mechanism alone).
    share : float, default=1.0
        In secure mode: this block's share of the mechanism's rounding
        allowance (``sum share**2 <= 1`` over its blocks).
    """

    def __init__(self, std, count: int, shape, rng: np.random.Generator, *,
                 name: str = "gaussian", sensitivity: float = 0.0, weight: float | None = 1.0,
                 part=None, weight_power: int = 1, mechanism_mu: float | None = None,
                 share: float = 1.0) -> None:
        shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)
        std = np.broadcast_to(np.asarray(std, dtype=float), shape)
        if not np.all(np.isfinite(std)) or np.any(std < 0):
            raise ValueError(f"Noise std must be finite and >= 0, got {std}.")
        self._secure = is_secure_mode()
        if not self._secure:
            self._noise = gaussian_noise(std, (int(count),) + shape, rng, name=name,
                                         sensitivity=sensitivity, weight=weight, part=part,
                                         weight_power=weight_power)
            return
        _check_weight(weight)
        if _RECORDERS:
            _record(name, sensitivity, std, weight, int(count) * math.prod(shape), None, part,
                    weight_power)
        # A coordinate without noise has no sensitivity (else the Gaussian
        # calibration would be infinite): it is passed through.
        self._noisy = std > 0
        self._plan = GridPlan(std[self._noisy], (int(self._noisy.sum()),),
                              _secure_mu(std, sensitivity, mechanism_mu), share)
        self._noise = self._plan.draw(int(count))

    def add(self, i: int, value) -> np.ndarray:
        """Release i: ``value`` plus its noise (on the grid in secure mode).

        Parameters
        ----------
        i : int
        value : array-like of the release's shape

        Returns
        -------
        ndarray of float
        """
        if not self._secure:
            return np.asarray(value, dtype=float) + self._noise[i]
        out = np.array(value, dtype=float)
        out[self._noisy] = self._plan.release(out[self._noisy], self._noise[i])
        return out


def gaussian_release(value, std, rng: np.random.Generator, *, name: str = "gaussian",
                     sensitivity: float = 0.0, weight: float | None = 1.0, part=None,
                     weight_power: int = 1, mechanism_mu: float | None = None,
                     share: float = 1.0) -> np.ndarray:
    """Release ``value`` with Gaussian noise: ``value + N(0, std**2)``; every release of skdp comes here.

    In secure mode (:func:`set_secure_mode`) the release is exact discrete
    Gaussian noise added to ``value`` rounded to a grid
    (:class:`~skdp.mechanisms.GridPlan`): as private as the Gaussian
    calibration says, in zCDP, and free of floating-point leaks.

    Parameters
    ----------
    value : float or array-like
        The noiseless quantity.
    std, rng, name, sensitivity, weight, part, weight_power
        As in :func:`gaussian_noise`.
    mechanism_mu : float or None, default=None
        Secure mode: L2 sensitivity of the whole mechanism in units of its
        noise; needed for a block recorded with sensitivity 0.
    share : float, default=1.0
        Secure mode: the block's share of the rounding allowance.

    Returns
    -------
    ndarray of float, of the shape of ``value``

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.mechanisms import gaussian_release, make_rng
    >>> gaussian_release(np.zeros(3), 1.0, make_rng(0), sensitivity=1.0).shape
    (3,)
    """
    value = np.asarray(value, dtype=float)
    if np.ndim(std) == 0 and not is_secure_mode():
        # The common case, one scalar std, without PlannedRelease's broadcasting
        # (a DP-GD step on a small table spent half its time there): the same
        # checks, record and draws as the general path below.
        s = float(std)
        if not (math.isfinite(s) and s >= 0):
            raise ValueError(f"Noise std must be finite and >= 0, got {s}.")
        _check_weight(weight)
        if _RECORDERS:
            _record(name, sensitivity, s, weight, value.size, rng, part, weight_power)
        return value + rng.standard_normal(value.shape) * s
    return PlannedRelease(std, 1, value.shape, rng, name=name, sensitivity=sensitivity,
                          weight=weight, part=part, weight_power=weight_power,
                          mechanism_mu=mechanism_mu, share=share).add(0, value)


def symmetric_release(matrix, std, rng: np.random.Generator, *, offdiagonal_std=None,
                      name: str = "symmetric matrix", sensitivity: float = 0.0,
                      weight: float | None = 1.0, part=None, weight_power: int = 1,
                      mechanism_mu: float | None = None, share: float = 1.0) -> np.ndarray:
    """Release a symmetric matrix: one noise draw per entry of the upper triangle, mirrored.

    Parameters
    ----------
    matrix : ndarray of shape (q, q)
        Symmetric; only its upper triangle (diagonal included) is read.
    std : float
        Noise std of each entry (of the diagonal, with ``offdiagonal_std``).
    rng, name, sensitivity, weight, part, weight_power, mechanism_mu, share
        As in :func:`gaussian_release`.
    offdiagonal_std : float or None, default=None
        Std of the off-diagonal entries, if not ``std``: ``std / sqrt(2)`` is
        the distribution of ``std * (Z + Z^T) / 2``.

    Returns
    -------
    ndarray of shape (q, q), symmetric

    Notes
    -----
    ``sensitivity`` is the Frobenius norm of the largest change of
    ``matrix``; the release is then ``sensitivity / min(std, sqrt(2) *
    offdiagonal_std)``-GDP (an off-diagonal change counts twice in the
    Frobenius norm and once in the released triangle), which is what the
    release log records.
    """
    matrix = np.asarray(matrix, dtype=float)
    q = matrix.shape[0]
    # Read the upper triangle only, in both modes: a weighted sum Z^T diag(w) Z is
    # symmetric only up to rounding, and noise mirrored onto both triangles would
    # leave that rounding residue of the data (G_ij - G_ji) exposed without noise.
    matrix = np.triu(matrix) + np.triu(matrix, 1).T
    std = float(std)
    off = std if offdiagonal_std is None else float(offdiagonal_std)
    # A symmetric change D of Frobenius norm S (the sensitivity's norm) moves the
    # released upper triangle by sum_i D_ii**2 / std**2 + sum_{i<j} D_ij**2 / off**2
    # <= S**2 / min(std, sqrt(2) off)**2 in squared units of the noise: the
    # mechanism's mu is S over that effective std. The release log takes its std as
    # the largest of the draws', so its sensitivity is scaled to give that mu.
    effective = min(std, math.sqrt(2.0) * off)
    # A zero std with a nonzero sensitivity releases exactly: mu is infinite.
    logged = (sensitivity * max(std, off) / effective if effective > 0
              else (math.inf if sensitivity else 0.0))
    if not is_secure_mode():  # the draws (and so a seed's noise) of earlier versions
        kw = dict(name=name, sensitivity=logged, weight=weight, part=part,
                  weight_power=weight_power)
        if offdiagonal_std is not None and math.isclose(off * math.sqrt(2.0), std,
                                                        rel_tol=1e-12):
            Z = gaussian_noise(std, (q, q), rng, **{**kw, "sensitivity": sensitivity})
            return matrix + 0.5 * (Z + Z.T)
        stds = np.full((q, q), std)
        stds[~np.eye(q, dtype=bool)] = off
        upper = np.triu(gaussian_noise(stds, (q, q), rng, **kw))
        return matrix + upper + np.triu(upper, 1).T
    rows, cols = np.triu_indices(q)
    stds = np.where(rows == cols, std, off)
    if mechanism_mu is None:
        mechanism_mu = _secure_mu(effective, sensitivity, None)
    values = gaussian_release(matrix[rows, cols], stds, rng, name=name, sensitivity=logged,
                              weight=weight, part=part, weight_power=weight_power,
                              mechanism_mu=mechanism_mu, share=share)
    out = np.empty((q, q))
    out[rows, cols] = values
    out[cols, rows] = values
    return out
