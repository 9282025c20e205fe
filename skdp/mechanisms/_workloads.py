"""Workload matrices (Kalinin et al. 2025, Table 1) and their streaming recurrences.

A workload A (n x n, lower triangular) turns a stream x_1, ..., x_n into the
releases y_t = sum_{i <= t} A[t, i] x_i. skdp supports

=============  ===================================  ==================
kind           A[t, i] for i <= t (1-based)         streaming state
=============  ===================================  ==================
'prefix'       1                                    running sum
'exponential'  beta ** (t - i)                      running sum
'average'      1 / t                                running sum, count
'window'       1 / k if t - k < i else 0            last k rows, sum
=============  ===================================  ==================
"""

from __future__ import annotations

import numpy as np
from scipy.signal import lfilter

__all__ = ["WORKLOADS", "WorkloadStream", "workload_matrix"]

WORKLOADS = ("prefix", "average", "exponential", "window")


def _check_kind(kind: str, beta, k):
    if kind not in WORKLOADS:
        raise ValueError(f"Unknown workload {kind!r}; choose one of {WORKLOADS}.")
    if kind == "exponential":
        if beta is None or not (0.0 < float(beta) <= 1.0):
            raise ValueError(f"The exponential workload needs beta in (0, 1], got {beta!r}.")
        return float(beta), None
    if kind == "window":
        if k is None or int(k) != k or int(k) < 1:
            raise ValueError(f"The window workload needs an integer k >= 1, got {k!r}.")
        return None, int(k)
    return None, None


def workload_matrix(kind: str, n: int, *, beta: float | None = None,
                    k: int | None = None) -> np.ndarray:
    """Dense lower-triangular workload matrix of Kalinin et al. 2025, Table 1.

    Parameters
    ----------
    kind : {'prefix', 'average', 'exponential', 'window'}
        Prefix sum E_1, running average V, exponential decay E_beta, or
        sliding-window average W_k.
    n : int
        Horizon (number of stream elements), >= 1.
    beta : float, optional
        Decay in (0, 1], for ``'exponential'``.
    k : int, optional
        Window length >= 1, for ``'window'``.

    Returns
    -------
    A : ndarray of shape (n, n)

    Examples
    --------
    >>> from skdp.mechanisms import workload_matrix
    >>> workload_matrix("average", 3)
    array([[1.        , 0.        , 0.        ],
           [0.5       , 0.5       , 0.        ],
           [0.33333333, 0.33333333, 0.33333333]])
    """
    beta, k = _check_kind(kind, beta, k)
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}.")
    n = int(n)
    t = np.arange(n)[:, None]
    i = np.arange(n)[None, :]
    lower = i <= t
    if kind == "prefix":
        return lower.astype(float)
    if kind == "average":
        return lower / (t + 1.0)
    if kind == "exponential":
        return np.where(lower, beta ** np.where(lower, t - i, 0), 0.0)
    return (lower & (t - i < k)) / float(k)


class WorkloadStream:
    """Apply a workload to a stream with O(1) state (window: O(k)).

    Feed rows (or blocks of rows) with :meth:`update`; each call returns the
    releases ``y_t = sum_{i<=t} A[t, i] x_i`` for the new steps, equal to
    ``workload_matrix(kind, n) @ X`` up to rounding. Rows may have any shape
    (vectors, matrices): the workload acts on the first axis.

    Parameters
    ----------
    kind : {'prefix', 'average', 'exponential', 'window'}
    beta : float, optional
        For ``'exponential'``.
    k : int, optional
        For ``'window'``.

    Attributes
    ----------
    n_steps_seen : int

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.mechanisms import WorkloadStream
    >>> ws = WorkloadStream("average")
    >>> ws.update(np.array([[1.0], [3.0]]))
    array([[1.],
           [2.]])
    >>> ws.update(np.array([[5.0]]))
    array([[3.]])
    """

    def __init__(self, kind: str, *, beta: float | None = None, k: int | None = None) -> None:
        self.beta, self.k = _check_kind(kind, beta, k)
        self.kind = kind
        self.n_steps_seen = 0
        self._sum = None          # running (weighted) sum of the rows
        self._window = None       # last k rows, for 'window'

    def update(self, rows, out=None) -> np.ndarray:
        """Feed a block of rows (first axis: steps); return their releases.

        Parameters
        ----------
        rows : array-like of shape (m, ...)
        out : ndarray of the same shape, optional
            Where to write the releases (may be ``rows`` itself).

        Returns
        -------
        ndarray of shape (m, ...)
        """
        rows = np.asarray(rows, dtype=float)
        if rows.ndim == 0:
            raise ValueError("update expects a block of rows: an array with at least one axis.")
        m = rows.shape[0]
        if self._sum is None:
            self._sum = np.zeros(rows.shape[1:])
        elif rows.shape[1:] != self._sum.shape:
            raise ValueError(f"Rows of shape {rows.shape[1:]} after rows of shape {self._sum.shape}.")
        if out is None:
            out = np.empty_like(rows)
        if m == 0:
            return out
        t0 = self.n_steps_seen
        if self.kind == "window":
            out[...] = self._update_window(rows)
        else:
            decay = self.beta if self.kind == "exponential" else 1.0
            _accumulate(rows, self._sum, decay, out)
            self._sum = out[-1].copy()
            if self.kind == "average":
                out /= np.arange(t0 + 1, t0 + m + 1).reshape((m,) + (1,) * (rows.ndim - 1))
        self.n_steps_seen += m
        return out

    def _update_window(self, rows: np.ndarray) -> np.ndarray:
        k = self.k
        if self._window is None:
            self._window = np.zeros((0,) + rows.shape[1:])
        # Sums over the last k rows as differences of a cumulative sum taken
        # over (previous window, new rows): exact up to rounding of one block.
        both = np.concatenate([self._window, rows], axis=0)
        csum = np.concatenate([np.zeros((1,) + rows.shape[1:]), np.cumsum(both, axis=0)])
        h = self._window.shape[0]
        ends = np.arange(h + 1, h + rows.shape[0] + 1)
        starts = np.maximum(ends - k, 0)
        out = (csum[ends] - csum[starts]) / k
        self._window = both[-k:].copy()
        return out


def _accumulate(rows: np.ndarray, start: np.ndarray, decay: float, out: np.ndarray) -> None:
    """``out[i] = decay * out[i - 1] + rows[i]`` with ``out[-1] = start`` (out may be rows).

    Wide rows go through a loop over steps (each a vectorised row operation):
    numpy's cumsum and lfilter along the first axis are several times slower
    there. Narrow rows use them.
    """
    m = rows.shape[0]
    flat_rows, flat_out = rows.reshape(m, -1), out.reshape(m, -1)
    width = flat_rows.shape[1]
    if width >= 256 or m == 1:
        prev = start.reshape(-1)
        for i in range(m):
            if decay != 1.0:
                np.add(flat_rows[i], decay * prev, out=flat_out[i])
            else:
                np.add(prev, flat_rows[i], out=flat_out[i])
            prev = flat_out[i]
    elif decay == 1.0:
        np.cumsum(flat_rows, axis=0, out=flat_out)
        flat_out += start.reshape(1, -1)
    else:
        zi = (decay * start).reshape(1, -1)
        flat_out[...] = lfilter([1.0], [1.0, -decay], flat_rows, axis=0, zi=zi)[0]

