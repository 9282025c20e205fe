"""Model-based standard errors of (preconditioned) DP-GD: every direction as an AR(1) series.

While the clipping is inactive, DP-GD on least squares is a linear
recursion. In the coordinates ``x = D^{1/2} V^T theta`` (``P = V D^{-1/2}
V^T`` the preconditioner, ``D = eigenvalues(A_hat) + ridge``) a step is
``x_t - x* = (I - eta D^{-1/2} V^T A V D^{-1/2}) (x_{t-1} - x*) - eta e_t``
with ``e_t ~ N(0, s**2 I)`` (s the noise std of the mean gradient): each
coordinate is nearly an AR(1) series whose coefficient phi is one minus the
contraction of that direction, in [0, 1) (the ridge makes ``P A P <= I``).

The standard errors of batch means (or of their autocorrelations) need a
run much longer than the slowest mixing time, which on ill-conditioned
tables at small budgets no plan can afford: there they come out several
times too small (measured on the scikit-learn diabetes table: 0.12-0.31 of
the true standard deviation at epsilon 1, 0.5-0.7 in the collinear columns
at epsilon 10). :func:`dpgd_model_covariance` takes the run to the
eigenbasis of its VAR(1) coefficient, fitted by least squares among
symmetric matrices (:func:`symmetric_var1`), where the directions
decouple; :func:`ar1_upper_phi` estimates each direction's phi
and raises it by one standard error, to its upper 84% confidence bound (the
variance grows with phi, so this errs on the wide side), less the amount by
which picking the direction from the same noisy fit already raised it
(:func:`deconvolved_eigenvalues`);
:func:`ar1_weighted_variance` gives the variance of
the estimate exactly for that phi, including the share of the start's error
that the run has not forgotten. The start is the pilot ``(A_hat + r
I)^{-1} b_hat`` from the private Gram matrix; its error variance follows
from the Gram's public noise std (:func:`pilot_variance`). The fit's
standard errors are the larger of these and the empirical ones.
Everything here is post-processing of released quantities.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from sklearn.isotonic import isotonic_regression

__all__ = ["AR1Directions", "ar1_directions", "ar1_upper_phi", "ar1_weighted_variance",
           "contrast_z", "deconvolved_eigenvalues", "dpgd_model_covariance", "pilot_variance",
           "symmetric_var1", "weighted_covariance"]

#: Standard errors added to the least-squares phi. Two (a 97.7% bound) gave
#: standard errors 2-10x the actual spread of the estimates on long runs over
#: small tables; none, even with Satterthwaite's degrees of freedom for the
#: uncertainty of phi, under-covered without a warning on four cells of 68
#: (12 seeds). One holds on both halves of ``benchmarks/interval_suite.py``
#: (issue 23; the docs page *When to trust the intervals*).
PHI_MARGIN = 1.0
#: Monte Carlo draws of :func:`deconvolved_eigenvalues` (fewer beyond q = 32, where
#: each q x q draw samples more eigenvalues at once), and its most iterations.
DECONVOLUTION_DRAWS = 32
DECONVOLUTION_ITERATIONS = 30


def ar1_upper_phi(series: np.ndarray | list, step_std: float, z: float = PHI_MARGIN,
                  shift: np.ndarray | None = None) -> np.ndarray:
    """Least-squares AR(1) coefficient of each column, raised by ``z`` standard errors.

    The model is ``x_t - x* = phi (x_{t-1} - x*) + e_t`` with ``e_t ~ N(0,
    step_std**2)``. The least-squares phi (with a mean) is biased down by
    about ``(1 + 3 phi) / T`` (Kendall 1954), much more near 1, where short
    runs of a slow direction live; that bias is added back. Its standard
    error is ``sd / sqrt(sum_t (x_{t-1} - mean)**2)`` with sd the larger of
    ``step_std`` (public) and the residual std. Several runs of the same
    recursion (each with its own mean) are pooled into one phi per column.

    ``shift`` moves phi against the bias of the fit that picked the
    columns (:func:`deconvolved_eigenvalues`; negative where that fit
    raised them); it takes back at most the raise, so that the result is
    never below the column's own (corrected) least-squares phi. The result is capped to
    [0, 1].

    Parameters
    ----------
    series : ndarray of shape (T + 1, k), or a list of them
        ``x_0, ..., x_T``, T >= 1; a list holds runs of equal length.
    step_std : float
    z : float, default=PHI_MARGIN
    shift : ndarray of shape (k,) or None, default=None

    Returns
    -------
    ndarray of shape (k,)
    """
    runs = [np.asarray(x, dtype=float) for x in (series if isinstance(series, list) else [series])]
    T = runs[0].shape[0] - 1
    ss = cross = rss = 0.0
    centred = []
    for x in runs:
        dp, dn = x[:-1] - x[:-1].mean(axis=0), x[1:] - x[1:].mean(axis=0)
        centred.append((dp, dn))
        ss = ss + np.einsum("ij,ij->j", dp, dp)
        cross = cross + np.einsum("ij,ij->j", dp, dn)
    ss = np.maximum(ss, np.finfo(float).tiny)
    phi = cross / ss
    for dp, dn in centred:
        resid = dn - dp * phi
        rss = rss + np.einsum("ij,ij->j", resid, resid)
    sd = np.maximum(step_std, np.sqrt(rss / max(len(runs) * (T - 2), 1)))
    phi = phi + (1.0 + 3.0 * phi) / T  # Kendall's (1954) correction of the small-sample bias
    raise_ = z * sd / np.sqrt(ss)
    if shift is not None:
        raise_ = np.maximum(raise_ + shift, 0.0)
    return np.clip(phi + raise_, 0.0, 1.0)


def ar1_weighted_variance(phi: np.ndarray, weights: np.ndarray,
                          step_std: float) -> tuple[np.ndarray, np.ndarray]:
    """Noise variance of ``sum_t w_t x_t`` for AR(1) series, and the start's weight in it.

    With ``x_t - x* = phi (x_{t-1} - x*) + e_t`` (t = 1..T), ``sum_t w_t
    (x_t - x*) = g (x_0 - x*) + sum_j c_j e_j`` with ``c_j = sum_{t >= j}
    w_t phi**(t - j)`` and ``g = sum_t w_t phi**t``. Both grow with phi in
    [0, 1]; at ``phi = 1`` they are those of a random walk, an upper bound
    for every contraction.

    Parameters
    ----------
    phi : ndarray of shape (k,)
        In [0, 1].
    weights : ndarray of shape (T,)
        ``w_1, ..., w_T``.
    step_std : float

    Returns
    -------
    noise_var : ndarray of shape (k,)
        ``step_std**2 sum_j c_j**2``.
    start_weight : ndarray of shape (k,)
        g.
    """
    phi = np.asarray(phi, dtype=float)
    c = np.zeros(phi.shape)
    total = np.zeros(phi.shape)
    for w in np.asarray(weights, dtype=float)[::-1]:  # c_j = w_j + phi c_{j+1}, j = T..1
        c = w + phi * c
        total += c * c
    return step_std**2 * total, phi * c


def pilot_variance(theta: np.ndarray, eigenvalues: np.ndarray, eigenvectors: np.ndarray,
                   ridge: float, sigma_a: float, sigma_b: float,
                   signal_bound: float | None = None, noise_norm: float = 0.0) -> np.ndarray:
    """Error variance of the ridge pilot in the coordinates ``x = D^{1/2} V^T theta``.

    The pilot ``(A_hat + r I)^{-1} b_hat`` with ``A_hat = A + E`` and ``b_hat
    = b + e`` (entry noise stds ``sigma_a`` and ``sigma_b``, E symmetric) has
    error ``(A_hat + r I)^{-1} (e - E theta* - r theta*)``. To first order
    ``e - E theta*`` has covariance at most ``(sigma_b**2 + 2 sigma_a**2
    ||theta*||**2) I`` (entry i has variance ``sigma_b**2 + sigma_a**2
    ||theta*||**2`` when every entry of E has std sigma_a, the bound allows
    for a diagonal twice as noisy), which ``D^{-1/2} V^T`` maps to variance
    ``tau**2 / D_k`` per coordinate; the ridge's bias ``r D_k^{-1/2}
    (V^T theta*)_k`` is counted as a variance.

    theta* is unknown. With ``signal_bound`` S, an upper bound on ``theta* .
    A theta*`` (``A_yy``: the fitted sum of squares is at most the labels'),
    Cauchy-Schwarz gives ``(v . theta*)**2 <= (v . A^{-1} v) S``, and for an
    eigenvector ``v_k`` of ``A_hat`` whose eigenvalue is at least twice the
    noise norm e (so that the first-order term is at most half of it),
    ``v_k . A^{-1} v_k <= 1 / (lambda_k - e)`` to first order in E: there
    ``(V^T theta*)_k**2`` is bounded by ``S / (lambda_k - e)``, whatever the
    estimate. In the other directions (and in all of them without S) the
    estimate stands in for theta*, its squared norm spread evenly as a
    floor.

    Parameters
    ----------
    theta : ndarray of shape (q,)
    eigenvalues, eigenvectors : ndarray
        Of ``A_hat`` (eigenvalues floored at 0).
    ridge : float
    sigma_a, sigma_b : float
    signal_bound : float or None, default=None
        Upper bound on ``theta* . A theta*``; valid only when the Gram
        matrix saw the rows unclipped (declared bounds).
    noise_norm : float, default=0.0
        e, a high-probability bound on ``||E||``.

    Returns
    -------
    ndarray of shape (q,)
    """
    d = eigenvalues + ridge
    # float64 arithmetic: an extreme declared norm_bound overflows to inf (which the
    # fit reports) instead of raising OverflowError from Python floats.
    sigma_a, sigma_b, ridge = np.float64(sigma_a), np.float64(sigma_b), np.float64(ridge)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        norm2 = theta @ theta
        share = np.maximum((eigenvectors.T @ theta) ** 2, norm2 / theta.shape[0])
        if signal_bound is not None:
            resolved = eigenvalues > 2.0 * noise_norm
            bound = np.float64(signal_bound) / np.where(resolved, eigenvalues - noise_norm, 1.0)
            share = np.where(resolved, bound, share)
            norm2 = float(np.sum(share))
        tau2 = sigma_b**2 + 2.0 * sigma_a**2 * norm2
        return (tau2 + ridge**2 * share) / d


class AR1Directions(NamedTuple):
    """DP-GD runs in the directions where they decouple (:func:`ar1_directions`).

    ``x = theta @ to_x`` are the preconditioned coordinates (``theta =
    back @ x``), ``U`` the eigenbasis of the fitted VAR(1) coefficient, ``phi`` each direction's
    raised AR(1) coefficient, ``runs`` the number of runs.
    """

    to_x: np.ndarray
    back: np.ndarray
    U: np.ndarray
    phi: np.ndarray
    runs: int


def ar1_directions(iterate_runs: list[np.ndarray], theta0: np.ndarray, step_std: float,
                   basis: tuple | None, curvature: np.ndarray | None = None) -> AR1Directions:
    """Fit the AR(1) model of every direction of DP-GD runs.

    The series are taken to the x coordinates, and then to the eigenbasis U
    of their VAR(1) coefficient fitted among symmetric matrices
    (:func:`symmetric_var1`; the true coefficient is symmetric, and in its
    eigenbasis the directions decouple exactly, with the same isotropic
    noise); U = I when the runs are too short to estimate it (fewer than
    ``5 q`` steps). Each direction of U is then an AR(1) series
    (:func:`ar1_upper_phi`, pooled over the runs), its phi raised by one
    standard error less the bias of having picked the direction from the
    same fit (:func:`deconvolved_eigenvalues`).

    Short runs estimate phi poorly (standard error about ``1 / sqrt(T)``),
    and the raised phi alone would make the intervals of a well-conditioned
    problem several times too wide (measured with two standard errors: 3-6x
    at 20,000 rows and 23-44 steps). Where the private Gram matrix resolves the curvature, it caps
    phi: with ``A = A_hat - E`` and ``||E|| <= e``, the preconditioned
    Hessian in the x coordinates is at least ``diag((lambda_k - e) /
    D_k)``, so a unit direction u contracts by at least ``eta sum_k u_k**2
    (lambda_k - e) / D_k`` per step and its phi is at most one minus that.
    The cap binds only in directions the Gram resolves; in the others the
    fitted phi stands.

    Parameters
    ----------
    iterate_runs : list of ndarray of shape (T, q)
        Each run's iterates theta_1..theta_T, all from ``theta0``.
    theta0 : ndarray of shape (q,)
    step_std : float
        ``learning_rate * noise_std``: the innovation std in the x coordinates.
    basis : tuple (D, V) or None
        The preconditioner ``P = V D^{-1/2} V^T``; None for P = I.
    curvature : ndarray of shape (q,) or None, default=None
        ``eta (lambda_k - e) / D_k`` for each x coordinate: a lower bound on
        the contraction per step from the private Gram matrix (None: no cap).

    Returns
    -------
    AR1Directions
    """
    q = theta0.shape[0]
    D, V = (np.ones(q), np.eye(q)) if basis is None else basis
    to_x = V * np.sqrt(D)  # x = theta @ to_x
    series = [np.vstack([theta0, run]) @ to_x for run in iterate_runs]
    U, shift = _slow_directions(series, step_std)
    cap = 1.0 if curvature is None else np.clip(1.0 - (U * U).T @ curvature, 0.0, 1.0)
    # The runs follow one recursion: one phi per direction from all of them.
    phi = np.minimum(ar1_upper_phi([x @ U for x in series], step_std, shift=shift), cap)
    return AR1Directions(to_x, V / np.sqrt(D), U, phi, len(series))


def weighted_covariance(model: AR1Directions, weights: np.ndarray, step_std: float,
                        start_var: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Covariance of the mean over runs of ``sum_t w_t theta_t`` under the fitted model.

    :func:`ar1_weighted_variance` in each direction. The noise parts of
    independent runs average out; the start's error, shared by all runs,
    does not. Also returns each direction's ``g = sum_t w_t phi**t``: the
    share of the start's error that the estimate keeps (it is off by ``g
    (x_0 - x*)`` from the start alone; with the raised phi, this errs on the
    large side).

    Parameters
    ----------
    model : AR1Directions
    weights : ndarray of shape (T,)
        The estimate's weights on the iterates of a run (they sum to 1).
    step_std : float
    start_var : ndarray of shape (q,)
        Error variance of each x coordinate of the start, taken as
        independent.

    Returns
    -------
    cov : ndarray of shape (q, q)
        On the fitting scale.
    start_weight : ndarray of shape (q,)
        g in each direction of ``model.U``; in [0, 1] for non-negative
        weights summing to 1.
    """
    U = model.U
    noise, weight = ar1_weighted_variance(model.phi, weights, step_std)
    G = (U * weight) @ U.T
    cov_x = (U * (noise / model.runs)) @ U.T + (G * start_var) @ G.T
    return model.back @ cov_x @ model.back.T, weight


def contrast_z(model: AR1Directions, iterate_runs: list[np.ndarray], theta0: np.ndarray,
               contrast: np.ndarray, step_std: float, start_var: np.ndarray) -> np.ndarray:
    """A contrast of the runs' iterates in each direction, in its standard deviations under the model.

    For weights c summing to 0 (for example the first half of the batch
    means less the second), ``sum_t c_t (x_t - x*)`` does not involve x*:
    under the fitted AR(1) model it is the start's unforgotten error, with
    weight ``g = sum_t c_t phi**t``, plus noise (:func:`ar1_weighted_variance`).
    Averaged over R runs from the same start, the noise variance is divided
    by R and the start's part is shared. Dividing by the standard deviation,
    ``sqrt(noise / R + g**2 var(start))``, gives a statistic that is at most
    standard normal where the model holds (phi is raised, so the variance
    errs on the large side); runs that still move beyond what their public
    noise and their start's error can explain (a learning rate too small to
    settle, clipping that keeps pulling) give large values.

    Parameters
    ----------
    model : AR1Directions
        Fitted on these runs (:func:`ar1_directions`).
    iterate_runs : list of ndarray of shape (T, q)
        Each run's theta_1..theta_T.
    theta0 : ndarray of shape (q,)
    contrast : ndarray of shape (T,)
        Weights summing to 0.
    step_std : float
    start_var : ndarray of shape (q,)
        As in :func:`weighted_covariance`.

    Returns
    -------
    ndarray of shape (q,)
        One statistic per direction of ``model.U``.
    """
    U = model.U
    noise, weight = ar1_weighted_variance(model.phi, contrast, step_std)
    value = np.mean([contrast @ (run - theta0) for run in iterate_runs], axis=0) @ model.to_x @ U
    var = noise / len(iterate_runs) + weight**2 * ((U * U).T @ start_var)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.abs(value) / np.sqrt(np.maximum(var, np.finfo(float).tiny))


def dpgd_model_covariance(iterate_runs: list[np.ndarray], theta0: np.ndarray,
                          weights: np.ndarray, step_std: float, basis: tuple | None,
                          start_var: np.ndarray,
                          curvature: np.ndarray | None = None) -> np.ndarray:
    """Covariance of the DP-GD estimate, the mean over runs of ``sum_t w_t theta_t``.

    :func:`ar1_directions` then :func:`weighted_covariance`.

    Parameters
    ----------
    iterate_runs : list of ndarray of shape (T, q)
        Each run's iterates theta_1..theta_T, all from ``theta0``.
    theta0 : ndarray of shape (q,)
    weights : ndarray of shape (T,)
        The estimate's weights on the iterates of a run (they sum to 1).
    step_std : float
        ``learning_rate * noise_std``: the innovation std in the x coordinates.
    basis : tuple (D, V) or None
        The preconditioner ``P = V D^{-1/2} V^T``; None for P = I.
    start_var : ndarray of shape (q,)
        Error variance of each x coordinate of ``theta0``, taken as
        independent.
    curvature : ndarray of shape (q,) or None, default=None
        As in :func:`ar1_directions`.

    Returns
    -------
    ndarray of shape (q, q)
        On the fitting scale.
    """
    model = ar1_directions(iterate_runs, theta0, step_std, basis, curvature)
    return weighted_covariance(model, weights, step_std, start_var)[0]


def _slow_directions(series: list[np.ndarray], step_std: float) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvectors of the symmetric VAR(1) fit, and the shift that deconvolves its eigenvalues.

    (I and no shift when the runs are short.)
    """
    q = series[0].shape[1]
    if series[0].shape[0] - 1 < 5 * q:
        return np.eye(q), np.zeros(q)
    cross, gram, rows = _var1_sums(series)
    phi = _symmetric_solution(cross, gram)
    # Overflowing iterates (extreme declared bounds) end here; the caller reports them.
    if not np.all(np.isfinite(phi)):
        return np.eye(q), np.zeros(q)
    fitted, U = np.linalg.eigh(phi)
    # The innovation variance, from the residuals of the fit (q (q + 1) / 2 + q
    # parameters), floored at the public step variance.
    resid = sum(float(np.sum((x[1:] - x[1:].mean(axis=0) - (x[:-1] - x[:-1].mean(axis=0)) @ phi)
                             ** 2)) for x in series)
    noise_var = max(step_std**2, resid / max(rows * q - q * (q + 1) // 2 - q, 1))
    if not np.isfinite(noise_var):
        return U, np.zeros(q)
    return U, deconvolved_eigenvalues(phi, gram, noise_var) - fitted


def _var1_sums(series: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, int]:
    """``C = sum_t d_t d_{t-1}^T``, ``G = sum_t d_{t-1} d_{t-1}^T`` (d centred per series), rows."""
    q = series[0].shape[1]
    cross, gram, rows = np.zeros((q, q)), np.zeros((q, q)), 0
    with np.errstate(over="ignore", invalid="ignore"):
        for x in series:
            prev, nxt = x[:-1] - x[:-1].mean(axis=0), x[1:] - x[1:].mean(axis=0)
            cross += nxt.T @ prev
            gram += prev.T @ prev
            rows += prev.shape[0]
    return cross, gram, rows


def _symmetric_solution(cross: np.ndarray, gram: np.ndarray) -> np.ndarray:
    """Solve ``phi G + G phi = C + C^T`` in G's eigenbasis (all NaN when the sums overflowed)."""
    q = gram.shape[0]
    if not (np.all(np.isfinite(gram)) and np.all(np.isfinite(cross))):
        return np.full((q, q), np.nan)
    g, W = np.linalg.eigh(gram)
    g = np.maximum(g, np.finfo(float).tiny)
    phi = W @ ((W.T @ (cross + cross.T) @ W) / np.add.outer(g, g)) @ W.T
    return 0.5 * (phi + phi.T)


def deconvolved_eigenvalues(phi: np.ndarray, gram: np.ndarray, noise_var: float,
                            draws: int | None = None) -> np.ndarray:
    """Eigenvalues whose noisy fits would, on average, come out as those of ``phi``.

    The symmetric VAR(1) fit (:func:`symmetric_var1`) is ``phi = Phi + N``:
    in the eigenbasis of G, ``N_ij`` has variance ``s**2 / (g_i + g_j)``
    off the diagonal and ``s**2 / g_i`` on it (s**2 = ``noise_var``, the
    innovation variance). Noise spreads the eigenvalues of a matrix (they
    repel each other): when several directions have similar phi, the
    largest fitted one is too large by several of its own standard errors
    (Wigner's 1958 semicircle: the fitted eigenvalues of ``Phi = 0.9 I`` with q
    = 10 and 500 steps spread over about 0.79-0.96), while a direction well
    apart from the others (a slow direction of an ill-conditioned
    problem) barely moves. This finds eigenvalues ``lam`` (with phi's
    eigenvectors, kept in ascending order by isotonic regression) such
    that the mean sorted eigenvalues of ``U diag(lam) U^T + N`` over
    ``draws`` Monte Carlo draws of N equal phi's, by fixed-point
    iteration (until lam moves by less than 0.1% of the smallest entry
    std of N, or :data:`DECONVOLUTION_ITERATIONS` times: where the fitted
    spread is narrower than the noise alone would make it, lam keeps
    creeping by a small fraction of that std). The draws use a fixed
    seed: deterministic post-processing.

    Parameters
    ----------
    phi : ndarray of shape (q, q)
        Symmetric.
    gram : ndarray of shape (q, q)
        G of the fit.
    noise_var : float
    draws : int or None, default=None
        Monte Carlo draws of N; None for ``DECONVOLUTION_DRAWS`` up to q =
        32 and ``max(8, ceil(32 * 32 / q))`` beyond.

    Returns
    -------
    ndarray of shape (q,)
        Ascending, matching ``numpy.linalg.eigh(phi)``.
    """
    q = phi.shape[0]
    if draws is None:
        draws = max(8, min(DECONVOLUTION_DRAWS, -(-DECONVOLUTION_DRAWS * 32 // q)))
    fitted, U = np.linalg.eigh(phi)
    g, W = np.linalg.eigh(gram)
    g = np.maximum(g, np.finfo(float).tiny)
    sd = np.sqrt(noise_var / np.add.outer(g, g))
    sd[np.diag_indices(q)] *= np.sqrt(2.0)
    z = np.random.default_rng(0).standard_normal((draws, q, q))
    z = np.triu(z) + np.triu(z, 1).transpose(0, 2, 1)  # symmetric, unit-variance entries
    noise = W @ (z * sd) @ W.T
    if g[0] <= 1e-12 * g[-1] or not np.all(np.isfinite(noise)):
        return fitted  # a direction that (nearly) never moved: its noise is unknown
    lam = fitted.copy()
    tol = 1e-3 * float(np.sqrt(noise_var / g.max()))  # of the smallest entry std of N
    for _ in range(DECONVOLUTION_ITERATIONS):
        mean = np.linalg.eigvalsh((U * lam) @ U.T + noise).mean(axis=0)
        new = isotonic_regression(lam + fitted - mean)
        done = np.max(np.abs(new - lam)) <= tol
        lam = new
        if done:
            break
    return lam


def symmetric_var1(series: list[np.ndarray]) -> np.ndarray:
    """Least-squares VAR(1) coefficient of the series among symmetric matrices.

    Minimises ``sum_t ||x_t - m' - phi (x_{t-1} - m)||**2`` (each series
    with its own means) over symmetric phi: the normal equations are the
    Sylvester equation ``phi G + G phi = C + C^T`` with ``G = sum_t d_{t-1}
    d_{t-1}^T`` and ``C = sum_t d_t d_{t-1}^T`` (d the centred series),
    solved in G's eigenbasis, where it reads ``(g_i + g_j) phi_ij = S_ij``.
    With isotropic innovations (as in DP-GD's x coordinates) this is the
    maximum-likelihood estimate under the known symmetry.

    Symmetrising the unconstrained fit instead averages the two estimates
    of each coupling with equal weights, though the one from the slow
    direction's large swings is far more precise: its eigenvectors then
    tilt the slow direction's large variance into the fast ones (measured:
    the model standard errors of DP-GD on the diamonds table at epsilon 1
    were 6-10x the actual spread for carat and table, 2.6-3.7x with this
    fit).

    Parameters
    ----------
    series : list of ndarray of shape (T + 1, q)

    Returns
    -------
    ndarray of shape (q, q)
        Symmetric; all NaN when the sums overflow.
    """
    cross, gram, _ = _var1_sums(series)
    return _symmetric_solution(cross, gram)
