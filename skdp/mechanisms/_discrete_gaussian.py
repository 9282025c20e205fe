"""Exact discrete Gaussian noise and grid releases (secure mode).

The sampler is Algorithm 3 of Canonne, Kamath and Steinke (2020): discrete
Laplace proposals accepted with an exact Bernoulli(exp(-gamma)) test. Every
step is integer arithmetic on numpy int64 arrays or Python ints; the only
source of randomness is a byte source (the operating system's CSPRNG,
:func:`os.urandom`, unless a test passes another). A Bernoulli(p) for a
rational ``p = num / den`` compares a uniform integer below ``den`` with
``num``, or, where ``den`` is too large for int64, the binary expansion of
``p`` with uniform random bits, 62 at a time (exact: a tie asks for the
next 62 bits). The work is vectorised over the samples: each stage of the
rejection loops runs on the lanes still undecided.

:func:`grid_release` turns a float release into an integer one: the value is
divided by a power-of-two grid step (exact in binary floating point),
rounded, and discrete Gaussian noise is added to the integers; the float the
caller gets back is a function of those integers (post-processing).
"""

from __future__ import annotations

import math
import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from fractions import Fraction

import numpy as np

__all__ = ["GridPlan", "discrete_gaussian", "grid_release"]

_WORD = 62                 # bits per uniform word: below 2**62, so int64 arithmetic is safe
_TOP = 1 << _WORD
#: Relative noise added to pay for the rounding (see :func:`grid_release`).
GRID_SLACK = 2.0 ** -10


def _words(n: int, source: Callable[[int], bytes]) -> np.ndarray:
    """``n`` uniform integers in [0, 2**62), int64."""
    raw = np.frombuffer(source(8 * n), dtype="<u8")
    return (raw >> np.uint64(64 - _WORD)).astype(np.int64)


def _uniform_below(m: np.ndarray, source) -> np.ndarray:
    """Uniform integers in [0, m) for each entry of ``m`` (int64, 1 <= m < 2**62), by rejection."""
    m = np.asarray(m, dtype=np.int64)
    out = np.empty(m.shape, dtype=np.int64)
    todo = np.arange(m.size)
    while todo.size:
        w = _words(todo.size, source)
        mm = m[todo]
        ok = w < (_TOP // mm) * mm  # the largest multiple of m below 2**62
        out[todo[ok]] = w[ok] % mm[ok]
        todo = todo[~ok]
    return out


def _bernoulli_exp_fraction(num: np.ndarray, den: np.ndarray, source) -> np.ndarray:
    """Bernoulli(exp(-num / den)) for int64 ``0 <= num <= den`` (CKS 2020, Algorithm 1, gamma <= 1).

    Draws A_k ~ Bernoulli(gamma / k) for k = 1, 2, ... until one is 0, and
    returns whether that k is odd.
    """
    num = np.asarray(num, dtype=np.int64)
    den = np.broadcast_to(np.asarray(den, dtype=np.int64), num.shape)
    result = np.empty(num.shape, dtype=bool)
    lanes = np.arange(num.size)
    k = 1
    while lanes.size:
        if int(den[lanes].max()) > (_TOP - 1) // k:
            raise OverflowError("Bernoulli denominator beyond 62 bits.")
        carry_on = _uniform_below(den[lanes] * k, source) < num[lanes]
        stop = lanes[~carry_on]
        result[stop] = k % 2 == 1
        lanes = lanes[carry_on]
        k += 1
    return result


def _bernoulli_exp_minus_one(n: int, source) -> np.ndarray:
    """``n`` draws of Bernoulli(exp(-1))."""
    ones = np.ones(n, dtype=np.int64)
    return _bernoulli_exp_fraction(ones, ones, source)


def _bernoulli_big(num: np.ndarray, den: np.ndarray, source) -> np.ndarray:
    """Bernoulli(num / den) for Python-int object arrays ``0 <= num <= den`` of any size.

    Compares the binary expansion of ``num / den`` with uniform random bits,
    62 at a time; equal blocks (probability 2**-62) move on to the next.
    """
    result = np.empty(num.shape, dtype=bool)
    lanes = np.arange(num.size)
    rem = num.copy()
    while lanes.size:
        scaled = rem[lanes] * _TOP
        block = (scaled // den[lanes]).astype(np.int64)   # next 62 bits of the expansion
        w = _words(lanes.size, source)
        result[lanes[w < block]] = True
        result[lanes[w > block]] = False
        tie = w == block
        rem[lanes[tie]] = scaled[tie] - block[tie].astype(object) * den[lanes[tie]]
        lanes = lanes[tie]
    return result


def _bernoulli_exp_big(num: np.ndarray, den: int, source) -> np.ndarray:
    """Bernoulli(exp(-num / den)) for a Python-int object array ``num >= 0`` and int ``den > 0``.

    exp(-gamma) = exp(-1)**floor(gamma) * exp(-frac(gamma)) (CKS 2020,
    Algorithm 1): one Bernoulli(exp(-1)) per unit of the integer part, then
    the fractional part by the alternating series test.
    """
    whole = num // den
    frac = num - whole * den
    alive = np.ones(num.shape, dtype=bool)
    whole = whole.astype(np.int64)
    for j in range(int(whole.max(initial=0))):
        lanes = np.flatnonzero(alive & (whole > j))
        if lanes.size:
            alive[lanes] = _bernoulli_exp_minus_one(lanes.size, source)
    lanes = np.flatnonzero(alive)
    k = 1
    result = np.zeros(num.shape, dtype=bool)
    dens = np.full(num.shape, den, dtype=object)
    while lanes.size:  # A_k ~ Bernoulli(frac / (den k)) until one is 0
        carry_on = _bernoulli_big(frac[lanes], dens[lanes] * k, source)
        result[lanes[~carry_on]] = k % 2 == 1
        lanes = lanes[carry_on]
        k += 1
    return result


def _discrete_laplace(t: int, n: int, source) -> np.ndarray:
    """``n`` draws of the discrete Laplace with scale t, P(y) ~ exp(-|y| / t) (CKS 2020, Algorithm 2)."""
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    while todo.size:
        m = todo.size
        u = _uniform_below(np.full(m, t, dtype=np.int64), source)
        keep = _bernoulli_exp_fraction(u, np.int64(t), source)   # Bernoulli(exp(-u / t))
        v = np.zeros(m, dtype=np.int64)
        going = np.flatnonzero(keep)
        while going.size:   # v ~ Geometric: count Bernoulli(exp(-1)) successes
            hit = _bernoulli_exp_minus_one(going.size, source)
            v[going[hit]] += 1
            going = going[hit]
        x = u + t * v
        sign = _words(m, source) & 1
        keep &= ~((sign == 1) & (x == 0))   # +0 and -0 would count zero twice
        done = todo[keep]
        out[done] = np.where(sign[keep] == 1, -x[keep], x[keep])
        todo = todo[~keep]
    return out


def discrete_gaussian(sigma2, size, *, source: Callable[[int], bytes] | None = None) -> np.ndarray:
    """Exact samples of the discrete Gaussian ``N_Z(0, sigma2)``: P(y) ~ exp(-y**2 / (2 sigma2)).

    Canonne, Kamath and Steinke (2020), Algorithm 3, with integer arithmetic
    only: no floating-point number enters the sampling.

    Parameters
    ----------
    sigma2 : int or fractions.Fraction
        The scale parameter ``sigma**2`` (> 0), exact. For sigma much larger
        than 1 it is the variance, to within ``exp(-2 pi**2 sigma2)``.
    size : int or tuple of int
    source : callable or None, default=None
        ``source(n)`` returns n random bytes; None uses :func:`os.urandom`
        (the operating system's CSPRNG). Tests pass a seeded source.

    Returns
    -------
    ndarray of int64, of shape ``size``

    Examples
    --------
    >>> from skdp.mechanisms import discrete_gaussian
    >>> discrete_gaussian(100, (2, 3)).dtype
    dtype('int64')
    """
    if isinstance(sigma2, float):
        raise TypeError("sigma2 must be an int or a Fraction (exact), not a float.")
    s2 = Fraction(sigma2)
    if s2 <= 0:
        raise ValueError(f"sigma2 must be > 0, got {sigma2}.")
    source = os.urandom if source is None else source
    shape = (int(size),) if np.ndim(size) == 0 else tuple(int(s) for s in size)
    n = math.prod(shape)
    a, b = s2.numerator, s2.denominator
    t = math.isqrt(a // b) + 1                 # floor(sigma) + 1
    if t >= 1 << 56:
        raise OverflowError(f"sigma2={float(s2):.3g} is beyond the sampler's range (sigma < 2**56).")
    den = 2 * a * b * t * t
    out = np.empty(n, dtype=np.int64)
    todo = np.arange(n)
    while todo.size:
        y = _discrete_laplace(t, todo.size, source)
        # Accept with probability exp(-(|y| - sigma2 / t)**2 / (2 sigma2))
        # = exp(-(b t |y| - a)**2 / (2 a b t**2)), exactly.
        gap = np.abs(y).astype(object) * (b * t) - a
        accept = _bernoulli_exp_big(gap * gap, den, source)
        out[todo[accept]] = y[accept]
        todo = todo[~accept]
    return out.reshape(shape)


# Samples drawn beyond a call's need, kept for later calls with the same scale:
# one sampler call costs about as much for 1 sample as for 1,000 (the
# rejection loops are vectorised), and DP-GD asks for a few coordinates per
# step. Samples are i.i.d., so using them later is the same as drawing them
# then. The pool is secret like a generator's state: it lives in this
# process's memory only (never pickled), and a forked child empties it, so
# that parent and child never add the same noise.
_POOL: OrderedDict = OrderedDict()
_POOL_LOCK = threading.Lock()
_POOL_BATCH = 4096
_POOL_KEYS = 32


def _after_fork_in_child() -> None:
    # A fork taken while another thread held the lock copies it held: the child
    # would wait for it forever. The child has one thread; it starts afresh.
    global _POOL_LOCK
    _POOL_LOCK = threading.Lock()
    _POOL.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _pooled_discrete_gaussian(sigma2: int, n: int) -> np.ndarray:
    """``n`` samples of ``N_Z(0, sigma2)`` from the OS CSPRNG, by way of the pool."""
    with _POOL_LOCK:
        kept = _POOL.pop(sigma2, np.empty(0, dtype=np.int64))
        if kept.size < n:
            need = n - kept.size
            fresh = discrete_gaussian(sigma2, max(need, min(_POOL_BATCH, 32 * need)))
            kept = np.concatenate([kept, fresh])
        out, rest = kept[:n], kept[n:]
        if rest.size:
            _POOL[sigma2] = rest
            while len(_POOL) > _POOL_KEYS:
                _POOL.popitem(last=False)
    return out


class GridPlan:
    """The grid and discrete noise scale of a secure-mode Gaussian release (public quantities only).

    Coordinate i of a block of k coordinates is divided by a power of two
    ``g_i <= c * std_i``, rounded to an integer, and discrete Gaussian noise
    of scale ``sigma2_i = ceil(((1 + s) std_i / g_i)**2)`` is added;
    ``g_i`` times the result is the release. ``s = 2**-10`` and
    ``c = s * mechanism_mu * share / sqrt(k)``. The noise can be drawn before
    the value is known (:meth:`draw`), so a sequential algorithm can draw a
    whole chunk of rows' noise at once.

    Parameters
    ----------
    std : float or array-like
        The Gaussian noise std the mechanism was calibrated with, per
        coordinate (broadcast against ``shape``), > 0.
    shape : tuple of int
        Shape of one release.
    mechanism_mu : float
        The mechanism's GDP parameter in its Gaussian calibration: the L2
        sensitivity of the whole mechanism (all its blocks) in units of the
        noise, ``||(value - value') / std||_2 <= mechanism_mu``.
    share : float, default=1.0
        This block's share of the rounding allowance: the shares of the
        blocks of one mechanism must satisfy ``sum share**2 <= 1``.

    Notes
    -----
    **Privacy.** Rounding an exact quotient (division by a power of two is
    exact in binary floating point) moves a coordinate by at most half a
    step, so two neighbours' integers differ by at most
    ``|value_i - value'_i| / g_i + 1``. Discrete Gaussian noise with
    independent coordinates is rho-zCDP with ``rho = sum_i D_i**2 /
    (2 sigma2_i)`` for integer differences D_i (Canonne, Kamath and Steinke
    2020), so in units of the noise the block's sensitivity is at most
    ``(||(value - value') / std|| + sqrt(k) c) / (1 + s)``. By the triangle
    inequality over blocks with ``sum share**2 <= 1``, the mechanism's is at
    most ``mechanism_mu (1 + s) / (1 + s) = mechanism_mu``: it is
    ``mechanism_mu**2 / 2``-zCDP, as its Gaussian calibration says, at the
    price of ``1 + s`` (0.1%) more noise.

    The bound treats ``value`` as computed exactly; floating-point error in
    the aggregate (far below a grid step for sums of bounded rows) is not
    part of it.
    """

    def __init__(self, std, shape, mechanism_mu: float, share: float = 1.0) -> None:
        self.shape = tuple(int(s) for s in shape)
        std = np.broadcast_to(np.asarray(std, dtype=float), self.shape)
        if not (np.all(std > 0) and np.all(np.isfinite(std))):
            raise ValueError(f"Noise std must be finite and > 0 in secure mode, got {std}.")
        if not (mechanism_mu > 0 and math.isfinite(mechanism_mu)) or not 0 < share <= 1:
            raise ValueError("Need mechanism_mu > 0 and 0 < share <= 1, got "
                             f"{mechanism_mu}, {share}.")
        k = max(math.prod(self.shape), 1)
        c = GRID_SLACK * float(mechanism_mu) * float(share) / math.sqrt(k)
        levels, where = np.unique(std.ravel(), return_inverse=True)
        self._where = where.reshape(-1)
        self._exponents = np.empty(levels.size, dtype=int)
        self._sigma2 = []
        for j, s in enumerate(levels.tolist()):
            # One below floor(log2(c s)): g <= c s whatever the rounding of log2.
            e = math.floor(math.log2(s * c)) - 1
            ratio = Fraction(s) * (1 + Fraction(GRID_SLACK)) / Fraction(math.ldexp(1.0, e))
            self._exponents[j] = e
            self._sigma2.append(math.ceil(ratio * ratio))
        self.exponent = self._exponents[self._where].reshape(self.shape)

    def draw(self, count: int | None = None, *, source=None) -> np.ndarray:
        """Integer noise for one release (``count=None``) or ``count`` of them.

        Parameters
        ----------
        count : int or None
        source : callable or None
            Random bytes; None for :func:`os.urandom`.

        Returns
        -------
        ndarray of int64, of shape ``shape`` or ``(count, *shape)``
        """
        lead = () if count is None else (int(count),)
        z = np.empty(lead + (self._where.size,), dtype=np.int64)
        for j, sigma2 in enumerate(self._sigma2):
            at = np.flatnonzero(self._where == j)
            shape = lead + (at.size,)
            z[..., at] = (_pooled_discrete_gaussian(sigma2, math.prod(shape)).reshape(shape)
                          if source is None else discrete_gaussian(sigma2, shape, source=source))
        return z.reshape(lead + self.shape)

    def release(self, value, noise: np.ndarray) -> np.ndarray:
        """The released floats: ``g * (round(value / g) + noise)``.

        Parameters
        ----------
        value : array-like of shape ``shape``
        noise : ndarray of int64 of shape ``shape``, from :meth:`draw`

        Returns
        -------
        ndarray of float
        """
        value = np.asarray(value, dtype=float)
        if not np.all(np.isfinite(value)):
            raise ValueError("A secure-mode release must be finite.")
        scaled = np.ldexp(value, -self.exponent)        # exact: a power of two
        # Both terms below 2**61, so their int64 sum cannot wrap around (the
        # noise's scale is below 2**56: a draw beyond 2**61 never happens).
        if scaled.size and (np.max(np.abs(scaled)) >= 2.0 ** 61
                            or np.max(np.abs(noise)) >= 2 ** 61):
            raise OverflowError("The release is too large for its grid.")
        integers = np.rint(scaled).astype(np.int64) + noise
        return np.ldexp(integers.astype(float), self.exponent)


def grid_release(value, std, mechanism_mu: float, share: float = 1.0, *,
                 source: Callable[[int], bytes] | None = None) -> np.ndarray:
    """Release ``value`` with exact discrete Gaussian noise on a grid (see :class:`GridPlan`).

    Parameters
    ----------
    value : array-like of float
        The exact (noiseless) quantity.
    std : float or array-like
        The Gaussian noise std the mechanism was calibrated with, > 0.
    mechanism_mu : float
        L2 sensitivity of the whole mechanism in units of the noise.
    share : float, default=1.0
        This block's share of the rounding allowance (``sum share**2 <= 1``).
    source : callable or None, default=None
        Random bytes; None for :func:`os.urandom`.

    Returns
    -------
    ndarray of float, of the shape of ``value``

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.mechanisms import grid_release
    >>> grid_release(np.array([1.0, 2.0]), std=0.5, mechanism_mu=2.0).shape
    (2,)
    """
    value = np.asarray(value, dtype=float)
    plan = GridPlan(std, value.shape, mechanism_mu, share)
    return plan.release(value, plan.draw(source=source))
