"""Noise-shaping matrices for the matrix-factorization mechanism.

The private estimate of a workload ``A X`` is ``A (X + C^{-1} Z)`` with Z
i.i.d. Gaussian: the noise added to the stream at step t is ``[C^{-1} Z]_t``.
Under single participation and replace-one adjacency, a row of L2 norm at most
``zeta`` changes ``C X`` by at most ``2 zeta`` times the largest column norm of
C (Choquette-Choo et al. 2024, Theorem 1.1; Kalinin et al. 2025, eq. 2), so Z needs std
``2 zeta max_j ||C[:, j]|| / mu`` for mu-GDP.

Families (C lower triangular, n the horizon):

- ``'identity'``: C = I, independent noise (DP-SGD).
- ``'sqrt'``: C = E_1^{1/2}, the square root of the prefix-sum matrix. Toeplitz
  with the coefficients of (1 - x)^{-1/2}: 1, 1/2, 3/8, 5/16, ...; C^{-1} has
  those of (1 - x)^{1/2}: 1, -1/2, -1/8, -1/16, ...
- ``'nu'``: C^{-1} is Toeplitz with the nu-DP-FTRL coefficients of Choquette-Choo et al. 2024,
  eq. (7), ``beta_t = (-1)^t binom(1/2, t) (1 - nu)^t``; C has those of
  (1 - (1 - nu) x)^{-1/2}. ``nu = 0`` is ``'sqrt'``.
- ``'blt'``: a buffered-linear-Toeplitz approximation of ``'nu'`` (see
  :mod:`skdp.mechanisms._blt`): the same near-optimal noise, generated in
  O(buffers * dim) time and memory per step, with a finite sensitivity over
  an unbounded stream (nu > 0). The default for streams.
- a user matrix: any square, lower-triangular, invertible C.

The Toeplitz families need no horizon to generate noise. Exact ``'sqrt'`` and
``'nu'`` keep every past draw (O(t * dim) memory); ``'blt'`` keeps a few
buffers. Their coefficients come from ratio recursions
(``c_t = c_{t-1} (2t - 1) / (2t) * (1 - nu)``), which neither overflow nor
produce NaN at any length.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import fft
from scipy.linalg import solve_triangular
from scipy.special import ellipk

from skdp._secure import is_secure_mode
from skdp.mechanisms._blt import (
    BLTState,
    InverseCoefficientTracker,
    blt_coefficients,
    blt_parameters,
    blt_sensitivity_factor,
)
from skdp.mechanisms._discrete_gaussian import GridPlan
from skdp.mechanisms._random import gaussian_noise, record_release

__all__ = [
    "CorrelatedNoise",
    "SHAPINGS",
    "correlated_noise",
    "noise_shaping_matrix",
    "sensitivity_factor",
    "toeplitz_coefficients",
    "toeplitz_sensitivity_factor",
]

SHAPINGS = ("identity", "blt", "sqrt", "nu")


def _check_nu(nu, kind: str = "nu") -> float:
    # BLT's buffer decays round to 1 below nu ~ 1e-16, and its calibration turns NaN.
    low, span = (0.0, "[0, 1)") if kind == "nu" else (1e-15, "[1e-15, 1)")
    if nu is None:
        raise ValueError(f"The {kind!r} noise shaping needs nu in {span}.")
    nu = float(nu)
    if not (low <= nu < 1.0):
        raise ValueError(f"The {kind!r} noise shaping needs nu in {span}, got {nu}.")
    return nu


def toeplitz_coefficients(n: int, nu: float = 0.0, *, inverse: bool = False) -> np.ndarray:
    """First column of the Toeplitz noise-shaping matrix C (or of C^{-1}).

    Parameters
    ----------
    n : int
        Number of coefficients, >= 1.
    nu : float, default=0.0
        Damping in [0, 1); 0 gives the square root of the prefix-sum matrix.
    inverse : bool, default=False
        If True, return the coefficients of C^{-1}, i.e. the nu-DP-FTRL
        ``beta_t = (-1)^t binom(1/2, t) (1 - nu)^t`` of Choquette-Choo et al. 2024, eq. (7).

    Returns
    -------
    ndarray of shape (n,)

    Examples
    --------
    >>> from skdp.mechanisms import toeplitz_coefficients
    >>> toeplitz_coefficients(4)
    array([1.    , 0.5   , 0.375 , 0.3125])
    >>> toeplitz_coefficients(4, inverse=True)
    array([ 1.    , -0.5   , -0.125 , -0.0625])
    """
    nu = _check_nu(nu)
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}.")
    t = np.arange(1, int(n))
    # Ratios of consecutive binomial coefficients: binom(-1/2, t) (-1)^t has
    # ratio (t - 1/2) / t, binom(1/2, t) (-1)^t has ratio (t - 3/2) / t.
    ratio = ((t - 1.5) if inverse else (t - 0.5)) / t * (1.0 - nu)
    return np.concatenate([[1.0], np.cumprod(ratio)])


def toeplitz_sensitivity_factor(nu: float = 0.0, n: int | None = None) -> float:
    """Largest column norm of the Toeplitz C of the ``'sqrt'``/``'nu'`` family.

    For a lower-triangular Toeplitz matrix every column is a prefix of the
    first, so the largest column norm is ``sqrt(sum_{t<n} c_t**2)``.

    Parameters
    ----------
    nu : float, default=0.0
    n : int or None, default=None
        Horizon. None gives the bound for an unbounded stream, finite for
        ``nu > 0``: ``sum_t c_t**2 = (2/pi) K((1 - nu)**2)`` with K the
        complete elliptic integral of the first kind (parameter m), because
        ``c_t = binom(2t, t) 4^{-t} (1 - nu)^t``.

    Returns
    -------
    float

    Examples
    --------
    >>> from skdp.mechanisms import toeplitz_sensitivity_factor
    >>> round(toeplitz_sensitivity_factor(0.0, n=2), 4)
    1.118
    >>> round(toeplitz_sensitivity_factor(0.5), 4)
    1.0359
    """
    nu = _check_nu(nu)
    if n is None:
        if nu == 0.0:
            raise ValueError("With nu = 0 the column norm grows like sqrt(log n): "
                             "a horizon n is needed.")
        return math.sqrt(2.0 / math.pi * ellipk((1.0 - nu) ** 2))
    c = toeplitz_coefficients(n, nu)
    return float(np.sqrt(np.sum(c * c)))


def _validate_user_matrix(C) -> np.ndarray:
    C = np.asarray(C, dtype=float)
    if C.ndim != 2 or C.shape[0] != C.shape[1] or C.shape[0] == 0:
        raise ValueError(f"A noise-shaping matrix must be square, got shape {C.shape}.")
    if not np.all(np.isfinite(C)):
        raise ValueError("A noise-shaping matrix must be finite.")
    if np.any(np.triu(C, 1) != 0.0):
        raise ValueError("A noise-shaping matrix must be lower triangular (causal noise).")
    diag = np.abs(np.diag(C))
    if np.any(diag <= 1e-12 * max(diag.max(), 1.0)):
        raise ValueError("A noise-shaping matrix must be invertible (nonzero diagonal).")
    return C


def noise_shaping_matrix(kind, n: int | None = None, *, nu: float | None = None) -> np.ndarray:
    """Dense lower-triangular noise-shaping matrix C (for analysis and tests).

    Parameters
    ----------
    kind : {'identity', 'blt', 'sqrt', 'nu'} or array-like
        A family (see the module notes) or a user matrix, which is validated
        (square, lower triangular, invertible) and returned as a float array.
    n : int, optional
        Horizon; required for the families.
    nu : float, optional
        For ``'nu'`` (in [0, 1)) and ``'blt'`` (in (0, 1)).

    Returns
    -------
    C : ndarray of shape (n, n)

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.mechanisms import noise_shaping_matrix, workload_matrix
    >>> C = noise_shaping_matrix("sqrt", 50)
    >>> bool(np.allclose(C @ C, workload_matrix("prefix", 50)))
    True
    """
    if not isinstance(kind, str):
        return _validate_user_matrix(kind)
    if kind not in SHAPINGS:
        raise ValueError(f"Unknown noise shaping {kind!r}; choose one of {SHAPINGS} or pass a matrix.")
    if n is None or int(n) != n or n < 1:
        raise ValueError(f"The {kind!r} noise shaping needs a positive horizon n, got {n!r}.")
    n = int(n)
    if kind == "identity":
        return np.eye(n)
    if kind == "blt":
        return _lower_toeplitz(blt_coefficients(*blt_parameters(_check_nu(nu, "blt")), n))
    c = toeplitz_coefficients(n, 0.0 if kind == "sqrt" else nu)
    return _lower_toeplitz(c)


def _lower_toeplitz(c: np.ndarray) -> np.ndarray:
    n = c.shape[0]
    idx = np.arange(n)[:, None] - np.arange(n)[None, :]
    return np.where(idx >= 0, c[np.clip(idx, 0, None)], 0.0)


def sensitivity_factor(C) -> float:
    """Largest column L2 norm of a noise-shaping matrix: ``max_j ||C[:, j]||``.

    Multiply by ``2 * norm_bound`` for the replace-one sensitivity of ``C X``
    when each row of X has L2 norm at most ``norm_bound`` and participates in
    one step.

    Parameters
    ----------
    C : array-like of shape (n, n)

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.mechanisms import sensitivity_factor
    >>> sensitivity_factor(np.eye(3))
    1.0
    """
    C = np.asarray(C, dtype=float)
    return float(np.sqrt(np.max(np.sum(C * C, axis=0))))


class CorrelatedNoise:
    """Stream of correlated Gaussian noise ``[C^{-1} Z]_t``, one step at a time.

    Z has i.i.d. standard normal entries of shape (steps, dim); multiply the
    output by the noise std. Drawing ``next(a)`` then ``next(b)`` gives
    exactly the rows of ``correlated_noise(..., n=a + b)`` with the same seed
    (up to rounding).

    Parameters
    ----------
    kind : {'identity', 'blt', 'sqrt', 'nu'} or array-like
        As in :func:`noise_shaping_matrix`.
    dim : int or tuple of int
        Shape of the noise at one step.
    rng : numpy.random.Generator
    nu : float, optional
        For ``'nu'`` and ``'blt'``.

    Attributes
    ----------
    n_steps_seen : int
    horizon : int or None
        None for the Toeplitz families (unbounded streams); otherwise the size
        of the user matrix, beyond which :meth:`next` raises.

    Notes
    -----
    Memory and time per step: ``'identity'`` keeps nothing; ``'blt'`` keeps
    O(buffers * dim) numbers (about 25 buffers) and costs as much time;
    exact ``'sqrt'`` and ``'nu'`` keep every past Z (O(t * dim) memory, a
    block of m steps costs O(t * m * dim), or an FFT convolution); a user
    matrix keeps C and the past outputs. The state holds past noise: it is
    secret (see :class:`skdp.base.StreamStateMixin`).

    Examples
    --------
    >>> from skdp.mechanisms import CorrelatedNoise, make_rng
    >>> noise = CorrelatedNoise("blt", dim=2, rng=make_rng(0), nu=1e-3)
    >>> noise.next(3).shape
    (3, 2)
    """

    def __init__(self, kind, dim, rng: np.random.Generator, *, nu: float | None = None) -> None:
        self.dim = (int(dim),) if np.ndim(dim) == 0 else tuple(int(d) for d in dim)
        self.rng = rng
        self.n_steps_seen = 0
        self._kind = kind if isinstance(kind, str) else "matrix"
        self._nu = None
        self._C = None
        width = int(np.prod(self.dim))
        if self._kind == "blt":
            self._nu = _check_nu(nu, "blt")
            self._blt = blt_parameters(self._nu)
            self._buffers = BLTState(*self._blt, width)
            self._tracker = InverseCoefficientTracker(*self._blt)
        elif self._kind in ("sqrt", "nu"):
            self._nu = 0.0 if self._kind == "sqrt" else _check_nu(nu)
            self._coef = np.ones(1)
            self._z = np.empty((0, width))
        elif self._kind != "identity":
            self._C = noise_shaping_matrix(kind, nu=nu)
            self._w = np.empty((0,) + self.dim)
        self.horizon = None if self._C is None else self._C.shape[0]

    @property
    def independent(self) -> bool:
        """True for ``'identity'``: the noise of each step is drawn on its own."""
        return self._kind == "identity"

    def coefficients(self, n: int) -> np.ndarray:
        """First column of C over n steps (its Toeplitz coefficients, or of a user matrix).

        Parameters
        ----------
        n : int

        Returns
        -------
        ndarray of shape (n,)
        """
        if self._kind == "identity":
            return np.eye(1, int(n))[0]
        if self._kind == "blt":
            return blt_coefficients(*self._blt, n)
        if self._C is None:
            return toeplitz_coefficients(n, self._nu)
        return self._C[:n, 0]

    def sensitivity_factor(self, n: int | None = None) -> float:
        """Largest column norm of C over a horizon n (see :func:`sensitivity_factor`).

        Parameters
        ----------
        n : int or None, default=None
            Horizon; None for an unbounded stream (finite for 'blt', and for
            'nu' with nu > 0).

        Returns
        -------
        float
        """
        if self._kind == "identity":
            return 1.0
        if self._kind == "blt":
            return blt_sensitivity_factor(*self._blt, n)
        if self._C is not None:
            return sensitivity_factor(self._C if n is None else self._C[:n, :n])
        return toeplitz_sensitivity_factor(self._nu, n)

    def step_variances(self, t0: int, t1: int) -> np.ndarray:
        """Variance of each entry of ``[C^{-1} Z]_k`` for steps ``t0 <= k < t1``.

        That is the squared norm of row k of C^{-1}; a known constant, used
        to remove the bias of squared noise (Kalinin et al. 2025, Algorithm 6).

        Parameters
        ----------
        t0, t1 : int
            First step and one past the last.

        Returns
        -------
        ndarray of shape (t1 - t0,)
        """
        return self._variances(t0, t1)[0]

    def prefix_variances(self, t0: int, t1: int) -> np.ndarray:
        """Variance of each entry of the running sum ``sum_{s<=k} [C^{-1} Z]_s``, ``t0 <= k < t1``.

        Parameters
        ----------
        t0, t1 : int
            First step and one past the last.

        Returns
        -------
        ndarray of shape (t1 - t0,)
        """
        return self._variances(t0, t1)[1]

    def average_variances(self, t0: int, t1: int) -> np.ndarray:
        """Variance of each entry of the running average of the noise, steps ``t0 <= t < t1``.

        Row t (0-based) of ``V C^{-1}``, with V the average workload, is the
        mean of rows 0..t of C^{-1}; this returns its squared norm.

        Parameters
        ----------
        t0, t1 : int
            First step and one past the last.

        Returns
        -------
        ndarray of shape (t1 - t0,)
        """
        return self.prefix_variances(t0, t1) / np.arange(t0 + 1, t1 + 1, dtype=float) ** 2

    def _variances(self, t0: int, t1: int) -> tuple[np.ndarray, np.ndarray]:
        if self._kind == "identity":
            return np.ones(t1 - t0), np.arange(t0 + 1, t1 + 1, dtype=float)
        if self._kind == "blt":
            # Steps are asked for in order; anything else replays from step 0.
            tracker = self._tracker
            if tracker.position > t0:
                tracker.reset()
            if tracker.position < t0:
                tracker.advance(t0 - tracker.position)
            return tracker.advance(t1 - t0)
        if self._C is None:  # Toeplitz C^{-1}: row k holds h_k, ..., h_0
            h = self._coefficients(t1)
            g = np.cumsum(h)
            return np.cumsum(h**2)[t0:t1], np.cumsum(g**2)[t0:t1]
        inv = self._inverse()[:t1]
        sums = np.cumsum(inv, axis=0)[t0:t1]
        return np.sum(inv[t0:t1] ** 2, axis=1), np.sum(sums**2, axis=1)

    def _inverse(self) -> np.ndarray:
        if getattr(self, "_C_inv", None) is None:
            self._C_inv = solve_triangular(self._C, np.eye(self._C.shape[0]), lower=True)
        return self._C_inv

    def _coefficients(self, n: int) -> np.ndarray:
        if self._coef.shape[0] < n:  # grow geometrically, amortised O(1) per step
            self._coef = toeplitz_coefficients(max(n, 2 * self._coef.shape[0]), self._nu, inverse=True)
        return self._coef[:n]

    def next(self, n_steps: int = 1) -> np.ndarray:
        """Noise for the next ``n_steps`` steps, shape ``(n_steps, *dim)``.

        Not available in secure mode, where the noise must be added on a
        grid: use :meth:`release`.

        Parameters
        ----------
        n_steps : int, default=1

        Returns
        -------
        ndarray of shape ``(n_steps, *dim)``
        """
        m = self._check_steps(n_steps)
        z = gaussian_noise(1.0, (m,) + self.dim, self.rng, name="correlated noise (whitened)")
        return self._shape(z)

    def release(self, values, std: float, *, mechanism_mu: float, share: float = 1.0) -> np.ndarray:
        """The next ``len(values)`` steps released: ``values + std * [C^{-1} Z]_t``.

        In secure mode the released quantity is the strategy's output
        ``C x / std`` plus exact discrete Gaussian noise, on a grid
        (:class:`~skdp.mechanisms.GridPlan`); the returned steps are
        ``std C^{-1}`` of that release (post-processing), the same
        estimator as the default's.

        Parameters
        ----------
        values : ndarray of shape ``(m, *dim)``
            The exact values of the next m steps (the rows of x).
        std : float
            Noise std, > 0.
        mechanism_mu : float
            The stream's GDP parameter: the L2 sensitivity of ``C x / std``
            over the whole stream (secure mode).
        share : float, default=1.0
            This stream's share of the mechanism's rounding allowance, when
            the mechanism has several streams (``sum share**2 <= 1``).

        Returns
        -------
        ndarray of shape ``(m, *dim)``

        Notes
        -----
        In secure mode the stream's steps are blocks of one mechanism: step
        t gets the share ``share * 2**-ceil(log2((t + 1) pi / sqrt(6)))``
        of the rounding allowance, whose squares sum to at most ``share**2``
        over an unbounded stream. It keeps the whitened past values, O(t *
        dim) memory, and computes ``C x`` by an FFT convolution (Toeplitz
        shapings) or a product with C.
        """
        values = np.asarray(values, dtype=float)
        if not is_secure_mode():
            return values + std * self.next(values.shape[0])
        m = self._check_steps(values.shape[0])
        width = int(np.prod(self.dim))
        t0, t1 = self.n_steps_seen, self.n_steps_seen + m
        x = values.reshape(m, width) / float(std)
        buffer = getattr(self, "_x", np.empty((0, width)))
        if buffer.shape[0] < t1:  # grow the history geometrically
            grown = np.empty((max(t1, 2 * buffer.shape[0]), width))
            grown[:t0] = buffer[:t0]
            self._x = buffer = grown
        buffer[t0:t1] = x
        history = buffer[:t1]
        if self._kind == "identity":
            u = x
        elif self._C is not None:
            u = self._C[t0:t1, :t1] @ history
        else:
            cached = getattr(self, "_forward", np.empty(0))
            if cached.shape[0] < t1:  # C's first column, grown geometrically
                self._forward = cached = self.coefficients(max(t1, 2 * cached.shape[0]))
            u = _toeplitz_apply(cached[:t1], history, t0, t1)
        # The stream's sensitivity is recorded by its owner (sensitivity 0 here).
        record_release("correlated noise (whitened, grid)", 0.0, 1.0)
        out = np.empty_like(u)
        # Step t's share of the rounding allowance, a power of two: constant
        # over dyadic blocks of steps, so each block is one plan and one draw.
        levels = np.ceil(np.log2((np.arange(t0, t1) + 1) * math.pi / math.sqrt(6.0))).astype(int)
        plans = self.__dict__.setdefault("_plans", {})
        for level in np.unique(levels).tolist():
            rows = np.flatnonzero(levels == level)
            key = (float(mechanism_mu), float(share), level)
            if key not in plans:
                plans[key] = GridPlan(1.0, (width,), mechanism_mu, share * 2.0 ** -max(level, 0))
            plan = plans[key]
            out[rows] = plan.release(u[rows], plan.draw(rows.size))  # the plan broadcasts over rows
        return float(std) * self._shape(out.reshape((m,) + self.dim))

    def _check_steps(self, n_steps) -> int:
        m = int(n_steps)
        if m < 0:
            raise ValueError(f"n_steps must be >= 0, got {n_steps}.")
        t0 = self.n_steps_seen
        if self.horizon is not None and t0 + m > self.horizon:
            raise ValueError(f"The noise-shaping matrix has horizon {self.horizon}; "
                             f"{t0 + m} steps were asked for.")
        return m

    def _shape(self, z: np.ndarray) -> np.ndarray:
        """``[C^{-1} z]`` for the next ``len(z)`` steps, given their whitened ``z``; advances the stream."""
        m = z.shape[0]
        t0 = self.n_steps_seen
        self.n_steps_seen = t0 + m
        if self._kind == "identity" or m == 0:
            return z
        width = int(np.prod(self.dim))
        if self._kind == "blt":
            return self._buffers.apply_inverse(z.reshape(m, width)).reshape(z.shape)
        if self._C is not None:
            C = self._C
            rhs = z.reshape(m, width) - C[t0:t0 + m, :t0] @ self._w.reshape(t0, width)
            w = solve_triangular(C[t0:t0 + m, t0:t0 + m], rhs, lower=True).reshape(z.shape)
            self._w = np.concatenate([self._w, w])
            return w
        t1 = t0 + m
        if self._z.shape[0] < t1:  # grow the history buffer geometrically
            grown = np.empty((max(t1, 2 * self._z.shape[0]), width))
            grown[:t0] = self._z[:t0]
            self._z = grown
        self._z[t0:t1] = z.reshape(m, width)
        out = _toeplitz_apply(self._coefficients(t1), self._z[:t1], t0, t1)
        return out.reshape(z.shape)


def _toeplitz_apply(c: np.ndarray, history: np.ndarray, t0: int, t1: int) -> np.ndarray:
    """Rows t0..t1-1 of ``T history`` for the lower-triangular Toeplitz T with first column c."""
    m = t1 - t0
    if m == 1:  # row t is sum_k c[t - k] history[k]
        return (c[:t1][::-1] @ history)[None]
    if m * t1 <= 64 * 4096:
        return _lower_toeplitz_rows(c, t0, t1) @ history
    return _causal_convolve(c, history)[t0:t1]


def _causal_convolve(c: np.ndarray, z: np.ndarray) -> np.ndarray:
    """``T z`` for the lower-triangular Toeplitz T with first column c, by FFT along axis 0.

    The transform length is padded to a fast size (scipy's
    ``matmul_toeplitz`` uses ``2n - 1``, which can be 10x slower).
    """
    n = z.shape[0]
    size = fft.next_fast_len(2 * n - 1, real=True)
    spectrum = fft.rfft(c[:n], size)[:, None] * fft.rfft(z, size, axis=0)
    return fft.irfft(spectrum, size, axis=0)[:n]


def _lower_toeplitz_rows(c: np.ndarray, t0: int, t1: int) -> np.ndarray:
    """Rows t0..t1-1 of the lower-triangular Toeplitz matrix with first column c."""
    idx = np.arange(t0, t1)[:, None] - np.arange(t1)[None, :]
    return np.where(idx >= 0, c[np.clip(idx, 0, None)], 0.0)


def correlated_noise(kind, n: int, dim, rng: np.random.Generator, *,
                     nu: float | None = None) -> np.ndarray:
    """Whole-horizon correlated noise ``C^{-1} Z`` of shape ``(n, *dim)``.

    Equal, with the same generator state, to the concatenated outputs of
    :class:`CorrelatedNoise`. Exact Toeplitz families use an FFT
    convolution, O(n log n * dim); ``'blt'`` its recursion, O(n * buffers * dim).

    Parameters
    ----------
    kind, nu
        As in :func:`noise_shaping_matrix`.
    n : int
        Number of steps.
    dim : int or tuple of int
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of shape ``(n, *dim)``

    Examples
    --------
    >>> from skdp.mechanisms import correlated_noise, make_rng
    >>> correlated_noise("nu", 5, 3, make_rng(0), nu=0.1).shape
    (5, 3)
    """
    dim = (int(dim),) if np.ndim(dim) == 0 else tuple(int(d) for d in dim)
    if isinstance(kind, str) and kind in ("sqrt", "nu"):
        z = gaussian_noise(1.0, (int(n),) + dim, rng, name="correlated noise (whitened)")
        beta = toeplitz_coefficients(n, 0.0 if kind == "sqrt" else nu, inverse=True)
        out = _causal_convolve(beta, z.reshape(int(n), -1))
        return out.reshape(z.shape)
    if isinstance(kind, str) and kind in ("identity", "blt"):
        return CorrelatedNoise(kind, dim, rng, nu=nu).next(int(n))
    C = noise_shaping_matrix(kind, n, nu=nu)
    if C.shape[0] < n:
        raise ValueError(f"The noise-shaping matrix has horizon {C.shape[0]} < n = {n}.")
    C = C[:n, :n]
    z = gaussian_noise(1.0, (int(n),) + dim, rng, name="correlated noise (whitened)")
    return solve_triangular(C, z.reshape(int(n), -1), lower=True).reshape(z.shape)
