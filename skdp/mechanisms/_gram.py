"""Gaussian mechanism on the Gram matrix of clipped rows (sufficient statistics)."""

from __future__ import annotations

import numpy as np

from skdp.clipping import clip_rows
from skdp.mechanisms._random import gaussian_noise

__all__ = ["private_gram"]


def private_gram(X, y=None, *, fit_intercept: bool, norm_bound: float, mu: float,
                 rng: np.random.Generator, chunk_size: int = 16384) -> tuple[np.ndarray, float]:
    """Private ``Z^T Z`` for the rows ``z_i = (x_i, [1], [y_i])`` clipped to ``norm_bound``.

    Parameters
    ----------
    X : ndarray of shape (n, p)
    y : ndarray of shape (n,), optional
        Appended as the last column of Z.
    fit_intercept : bool
        Append a constant 1 column after X.
    norm_bound : float
        Rows of Z are clipped to this L2 norm (a declared bound, never taken
        from the data).
    mu : float
        GDP budget of the release.
    rng : numpy.random.Generator
    chunk_size : int, default=16384
        Rows are processed in chunks: extra memory O(chunk_size * q).

    Returns
    -------
    gram : ndarray of shape (q, q)
        Symmetric; Gaussian noise of std ``noise_std`` on each entry of the
        upper triangle (diagonal included), mirrored below.
    noise_std : float
        ``2 * norm_bound**2 / mu``. Replacing a row z by z' changes
        ``Z^T Z`` by ``z z^T - z' z'^T``, of Frobenius norm at most
        ``||z||**2 + ||z'||**2 <= 2 norm_bound**2``; the upper triangle is a
        sub-vector, so its L2 sensitivity is at most that too.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.mechanisms import make_rng, private_gram
    >>> X = np.ones((1000, 2)) * 0.5
    >>> G, std = private_gram(X, fit_intercept=True, norm_bound=1.0, mu=1.0, rng=make_rng(0))
    >>> G.shape, std
    ((3, 3), 2.0)
    """
    X = np.asarray(X, dtype=float)
    n, p = X.shape
    q = p + int(fit_intercept) + int(y is not None)
    gram = np.zeros((q, q))
    for start in range(0, n, chunk_size):
        parts = [X[start:start + chunk_size]]
        m = parts[0].shape[0]
        if fit_intercept:
            parts.append(np.ones((m, 1)))
        if y is not None:
            parts.append(np.asarray(y, dtype=float)[start:start + chunk_size, None])
        Z = clip_rows(np.hstack(parts), norm_bound)
        gram += Z.T @ Z
    noise_std = 2.0 * float(norm_bound) ** 2 / float(mu)
    upper = np.triu(gaussian_noise(noise_std, (q, q), rng))
    return gram + upper + np.triu(upper, 1).T, noise_std
