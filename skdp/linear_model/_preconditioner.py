"""A preconditioner, a pilot estimate and a step plan from one private Gram matrix.

The private Gram matrix of the rows ``(z_i, y_i)`` (``z_i = (x_i, [1])``)
released by :func:`skdp.mechanisms.private_gram` is all that this module
reads, with the public n, the budget and the clip norm: everything here is
post-processing, with no data and no budget.

With ``A = Z^T W Z / n`` (the Hessian of the least-squares loss) and its noisy
release ``A_hat = A + E``, the preconditioner is ``P = (A_hat + r I)^{-1/2}``
where the ridge ``r`` bounds the spectral norm of E with high probability
(``r = sigma (2 sqrt(q) + 6)`` with sigma the noise std of an entry of
``A_hat``: the norm of a symmetric Gaussian matrix concentrates at ``2
sqrt(q)`` entry standard deviations, and 6 more make a larger norm a
``< 1e-4`` event). Then ``A_hat + r I >= A`` and the preconditioned Hessian
``H = P A P`` has every eigenvalue in ``(0, 1]``: gradient descent in the
coordinates ``w = P^{-1} theta`` with step eta contracts each eigendirection
of H by ``1 - eta h``.

**Slowest contraction.** Weyl with the typical noise norm ``e = 2 sigma
sqrt(q)`` gives ``(lambda_min(A_hat) - e) / (lambda_min(A_hat) + r)``. It is
pessimistic for a flat spectrum: ``lambda_min(H) = 1 / lambda_max(A^{-1/2}
(A_hat + r I) A^{-1/2}) >= l / (l + r + ||E||)`` with ``l = lambda_min(A)``,
an equality for ``A = I``, where every direction contracts by about ``1 / (1
+ r + ||E||)`` while the Weyl estimate is 0 once the noise norm reaches 1 (and
the plan then asks for thousands of steps). The plan uses the larger of the
two, with l from :func:`smallest_eigenvalue`, which undoes the noise's
spreading of the smallest eigenvalues. That estimate is a plug-in, not a
bound, and on real tables it can overestimate the slow directions (measured
on anes96 at epsilon 10: with batch-means errors alone, coverage fell from
0.9 to 0.82). The plan needs no guarantee: the interval's standard errors
guard against slow mixing (:func:`~skdp.linear_model._intervals.mean_standard_error`
and the AR(1) model of ``skdp.linear_model._ar1_standard_error``, which
also counts the pilot's error the run has not forgotten; with it the same
cells cover 0.94-0.99 with 5-80x fewer steps), and the fit warns when the
batch means drift.

**Burn-in.** The estimate is the mean of K kept iterates. In an
eigendirection with contraction ``eta h`` the start's error ``e`` leaves a
bias ``(1 - eta h)^B e / (K eta h)`` in the mean after B burn-in steps,
while the noise (std s per step and coordinate) gives the mean a standard
deviation ``s / (h sqrt(K))``. The pilot start is already good: its excess
risk ``h e**2`` (summed over directions) is at most its plug-in risk R
(:attr:`Preconditioner.pilot_risk`), so ``|e| <= sqrt(R / h)`` and the bias is
at most ``BURN_BIAS`` standard deviations once ``(1 - eta a)^B sqrt(R / a) <=
BURN_BIAS eta s sqrt(K)`` (a the slowest contraction; the left side
decreases in h). Burning until the start is forgotten to ``1e-3`` costs
``sqrt(T / K)`` in error for nothing when the pilot is already within the
noise (a burn-in of half the run costs ``sqrt(2)``).

**Number of steps.** Past stationarity the error of the mean of K iterates
out of T is ``sqrt(T / K) 2 W C / (n mu)`` times a factor that depends on A
only: more steps buy a smaller burn-in fraction and better mixed batches,
while the noise per step grows as ``sqrt(T)`` and the iterates wander. At
stationarity the wander moves the residual ``u_i . (w - w*)`` of the
preconditioned rows ``u_i = P z_i`` by a root mean square (over rows and
noise) of ``s sqrt(eta sum_j 1 / (2 - eta h_j)) <= s sqrt(q eta / (2 -
eta))`` (the rows have second moment H, so the slow directions, where the
iterates wander most, are the ones the rows barely see). :func:`max_steps`
caps T where the wander of the gradients would reach the clip norm.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

__all__ = ["Preconditioner", "burn_in_steps", "gram_preconditioner", "max_steps", "noise_norm",
           "offset_columns", "offset_message", "plain_time", "plan_steps",
           "smallest_eigenvalue"]

#: Ridge in units of the Gram noise std per row: 2 sqrt(q) + RIDGE_MARGIN.
RIDGE_MARGIN = 6.0
#: Slowest contraction the step plan assumes (a smaller estimate is raised to it).
MIN_CONTRACTION = 0.005
#: Largest bias of the mean left by the start, in standard deviations of the mean.
BURN_BIAS = 0.25

class Preconditioner(NamedTuple):
    """``P``, ``P**2``, the pilot ``theta0``, the spectrum of ``A_hat`` and the plan's inputs."""

    root: np.ndarray
    square: np.ndarray
    pilot: np.ndarray
    min_eigenvalue: float
    ridge: float
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    mean_contraction: float
    pilot_risk: float
    label_moment: float


def smallest_eigenvalue(eigenvalues: np.ndarray, entry_std: float) -> float:
    """Estimate of ``lambda_min(A)`` from the eigenvalues of ``A_hat = A + E``.

    The symmetric noise E (entry std sigma) spreads a cluster of k equal
    eigenvalues of A over a semicircle of radius ``2 sigma sqrt(k)`` around
    them, so the smallest eigenvalue of ``A_hat`` sits about that far below
    the smallest cluster of A. k is the largest count with at least k
    eigenvalues of ``A_hat`` within ``4 sigma sqrt(k)`` (the cluster's
    diameter) of the smallest, and the estimate is ``lambda_min(A_hat) + 2
    sigma (sqrt(k) - 1)``: ``lambda_min(A_hat) + ||E|| - 2 sigma`` for a flat
    spectrum (``A = c I``, where the plain ``lambda_min(A_hat)`` is off by
    the whole noise norm), and ``lambda_min(A_hat)`` for an isolated smallest
    eigenvalue (which the noise moves by about sigma). Post-processing; a
    plug-in, not a bound.

    Parameters
    ----------
    eigenvalues : ndarray of shape (q,)
        Eigenvalues of ``A_hat`` (not floored).
    entry_std : float
        Noise std of an entry of ``A_hat``.

    Returns
    -------
    float
        At least 0.
    """
    lam = np.sort(np.asarray(eigenvalues, dtype=float))
    sigma = float(entry_std)
    if sigma <= 0:
        return max(float(lam[0]), 0.0)
    k = 1
    for size in range(lam.shape[0], 0, -1):
        if np.count_nonzero(lam <= lam[0] + 4.0 * sigma * math.sqrt(size)) >= size:
            k = size
            break
    return max(float(lam[0]) + 2.0 * sigma * (math.sqrt(k) - 1.0), 0.0)


def noise_norm(sigma: float, q: int, margin: float) -> float:
    """A high-probability bound on the spectral norm of the noise of ``A_hat``.

    ``2 sqrt(q)`` entry stds (sigma) is the typical norm of a symmetric
    Gaussian q x q matrix; ``margin`` more stds cover the fluctuation of its
    largest eigenvalue (:data:`RIDGE_MARGIN` for the ridge).
    """
    return sigma * (2.0 * math.sqrt(q) + margin)


def offset_columns(a_hat: np.ndarray, sigma: float) -> np.ndarray:
    """Columns that the private Gram matrix sees but cannot tell from the intercept.

    For column j and the intercept (the last coordinate), the 2 x 2 block
    ``[[a_jj, a_j0], [a_j0, a_00]]`` of ``A_hat``: its smallest eigenvalue
    is the column's spread around its mean (for unit weights, ``var_j / (1 +
    mean_j**2)``), its entry ``a_jj`` the column's second moment. A column
    whose second moment clears the typical noise norm of the block, ``t =
    2 sqrt(2) sigma``, four times over while its spread stays below t lies
    far from 0 against its spread (a calendar year, a price level): the
    Gram matrix resolves its level but not its variation, so neither its
    coefficient nor the intercept is resolved, and the run, from a pilot
    shrunk to 0 there, barely moves along that direction. Centred or
    standardised columns never meet the test, since their spread is their
    second moment. Post-processing of the release.

    Parameters
    ----------
    a_hat : ndarray of shape (q, q)
        The private ``Z^T W Z / n`` with the intercept last.
    sigma : float
        Noise std of an entry of ``a_hat``.

    Returns
    -------
    ndarray of int
        The indices j < q - 1 of such columns.
    """
    q = a_hat.shape[0]
    t = 2.0 * math.sqrt(2.0) * float(sigma)
    found = []
    for j in range(q - 1):
        block = a_hat[np.ix_([j, q - 1], [j, q - 1])]
        if np.linalg.eigvalsh(block)[0] < t and a_hat[j, j] > 4.0 * t:
            found.append(j)
    return np.array(found, dtype=int)


def offset_message(names: list, consequence: str) -> str:
    """The warning about :func:`offset_columns` (``consequence``: what it does to this fit)."""
    return (f"Column(s) {names} lie far from 0 against their spread: the private Gram matrix "
            "resolves their level but not their variation around it, so neither their "
            f"coefficients nor the intercept is resolved at this budget, and {consequence}. "
            "Centre or standardise the columns first (skdp.preprocessing.DPStandardScaler in a "
            "Pipeline), or declare bounds_X and bounds_y, which centre and scale them.")


def gram_preconditioner(gram: np.ndarray, noise_std: float, n: int,
                        label_noise_std: float | None = None) -> Preconditioner:
    """Preconditioner, pilot and the plan's inputs from a private Gram matrix of ``(z, y)`` rows.

    Parameters
    ----------
    gram : ndarray of shape (q + 1, q + 1)
        Private ``sum_i w_i (z_i, y_i)(z_i, y_i)^T`` (the label last).
    noise_std : float
        Std of the Gaussian noise on each entry of its upper triangle in the
        ``z`` block.
    n : int
        Public number of rows.
    label_noise_std : float or None, default=None
        Std of the noise on the ``(y, y)`` entry (None: ``noise_std``).

    Returns
    -------
    Preconditioner
        ``pilot`` is the ridge solution ``(A_hat + r I)^{-1} b_hat`` with
        ``b_hat = Z^T W y / n`` (noisy): a start for gradient descent.
        ``min_eigenvalue`` estimates the smallest eigenvalue of ``P A P``:
        the larger of ``(lambda_min(A_hat) - e) / (lambda_min(A_hat) + r)``
        and ``l / (l + r + e)`` with ``e = 2 sigma sqrt(q)`` the typical noise
        norm and l from :func:`smallest_eigenvalue`, at least 0 (module
        notes). ``eigenvalues`` (floored at 0) and ``eigenvectors`` are those
        of ``A_hat``.
        ``mean_contraction`` is the plug-in average eigenvalue of ``P A P``,
        ``mean(lambda / (lambda + r))``. ``pilot_risk`` is the plug-in mean
        squared residual at the pilot, ``A_yy - 2 b_hat . theta0 + theta0 .
        A_hat theta0`` (at least twice the noise std of ``A_yy``, and
        positive): it bounds the pilot's excess risk and estimates the
        residual variance. ``label_moment`` is ``A_yy`` plus 3 noise stds: an
        upper bound on ``theta* . A theta*`` for the least-squares solution
        theta* of the rows the Gram matrix saw (its fitted sum of squares is
        at most the labels').
    """
    q = gram.shape[0] - 1
    a_hat = gram[:q, :q] / n
    b_hat = gram[:q, q] / n
    sigma = float(noise_std) / n  # noise std of an entry of A_hat
    ridge = noise_norm(sigma, q, RIDGE_MARGIN)
    raw, V = np.linalg.eigh(a_hat)
    lam = np.maximum(raw, 0.0)
    inv = 1.0 / (lam + ridge) if ridge > 0 else 1.0 / np.maximum(lam, np.finfo(float).tiny)
    root = (V * np.sqrt(inv)) @ V.T
    square = (V * inv) @ V.T
    pilot = square @ b_hat
    if ridge > 0:
        # The larger of Weyl's estimate (typical noise norm) and the Rayleigh form
        # with the deconvolved smallest eigenvalue (module notes).
        typical = 2.0 * sigma * math.sqrt(q)
        weyl = float(np.min((lam - typical) / (lam + ridge)))
        smallest = smallest_eigenvalue(raw, sigma)
        low = max(weyl, smallest / (smallest + ridge + typical), 0.0)
        mean = float(np.mean(lam / (lam + ridge)))
    else:
        low = mean = 1.0
    yy_std = (float(noise_std) if label_noise_std is None else float(label_noise_std)) / n
    risk = float(gram[q, q] / n - 2.0 * b_hat @ pilot + pilot @ a_hat @ pilot)
    risk = max(risk, 2.0 * yy_std, np.finfo(float).tiny)
    label_moment = max(float(gram[q, q] / n) + 3.0 * yy_std, 0.0)
    return Preconditioner(root, square, pilot, low, ridge, lam, V, mean, risk, label_moment)


def max_steps(n: int, q: int, mu: float, max_weight: float = 1.0,
              contraction: float = 0.5) -> int:
    """Most steps before the noise alone pushes the gradients past the clip norm.

    With T steps the noise on each mean gradient has std ``s = sqrt(T) 2 W C /
    (n mu)`` per coordinate. In a direction that contracts by ``a`` per step
    (step size 1) the iterates wander by about ``s / sqrt(2 a)``, and a row's
    gradient norm by about ``||P z|| s / sqrt(2 a) ~ sqrt(q) s / sqrt(2 a)``.
    Keeping that below C (so that the clipping stays mostly inactive near the
    least-squares solution and the iteration stays linear) gives
    ``T <= (n mu / (2 W sqrt(q)))**2 * 2 a``, with ``a`` the typical
    contraction, at most 1/2.

    A stricter cap that keeps the residuals' root-mean-square wander (at
    most ``s sqrt(q eta / (2 - eta))``, module notes) below half the
    residual std was measured and rejected: on real tables at epsilon 1 it
    cut the runs to ~30 steps, too few for their slow directions, and the
    interval coverage fell from ~0.9 to ~0.6.

    Parameters
    ----------
    n : int
    q : int
        Coefficients.
    mu : float
        GDP budget of the gradient steps.
    max_weight : float, default=1.0
    contraction : float, default=0.5
        Typical contraction per step (:attr:`Preconditioner.mean_contraction`).

    Returns
    -------
    int
    """
    factor = 2.0 * min(max(contraction, 0.0), 0.5)
    bound = (n * mu / (2.0 * max_weight * math.sqrt(q))) ** 2 * factor
    return int(min(bound, 1e9))


def plain_time(n: int, q: int, mu: float, max_weight: float = 1.0,
               limits: tuple[float, float] = (20.0, 50.0),
               row_moment: float | None = None) -> float:
    """Total time ``K = T eta`` of a run without a preconditioner, from public quantities.

    Without a preconditioner (P = I, from 0) each of the T steps adds noise
    of std ``s = sqrt(T) 2 W C / (n mu)`` per coordinate. In a direction of
    curvature ``lambda`` the iterates wander with variance about ``eta s**2 /
    (2 lambda)``; a row's residual ``z' delta`` with variance ``sum_k (z'
    v_k)**2 eta s**2 / (2 lambda_k)``, whose mean over the rows is ``q eta
    s**2 / 2`` whatever the spectrum (the mean of ``(z' v_k)**2`` is
    ``lambda_k``). With ``m = mean ||z||**2`` (``row_moment``; about q for
    standardised columns) a row's gradient norm wanders by about ``s sqrt(m
    q eta / 2) = 2 W C sqrt(m q K / 2) / (n mu)``: at a fixed number of
    steps it grows with the run's total time K, not with the step alone.
    The clip norm is at least twice a high quantile of the gradient norms,
    so a row at that quantile stays unclipped while the wander stays within
    half the clip norm: ``K <= 2 (n mu / (4 W))**2 / (m q)``. Beyond it the
    clipping acts on most steps, the recursion is no longer linear, and
    the mean iterate's noise grows (measured on standardised diabetes and
    Boston at epsilon 1: 25% and 36% of the rows clipped at the final
    estimate at K = 50, 9% and 18% at K = 20; on 17 cells of the
    calibration suite's small tables at epsilon 1 the rule made the
    intervals a quarter to a half narrower at the same coverage).

    Parameters
    ----------
    n : int
    q : int
        Coefficients.
    mu : float
        GDP budget of the gradient steps.
    max_weight : float, default=1.0
    limits : tuple of float, default=(20.0, 50.0)
        The time is clipped to this range: below 20 the burn-in (5 time
        units) leaves too little for ten batches, and 50 is Brown et al.
        (2024)'s step 0.25 over 200 steps.
    row_moment : float or None, default=None
        m, an estimate of the rows' mean squared norm ``||(x_i, 1)||**2``
        (post-processing of a private Gram matrix's trace). None: q, as
        for standardised columns.

    Returns
    -------
    float
    """
    m = float(q) if row_moment is None else float(row_moment)
    bound = 2.0 * (n * mu / (4.0 * max_weight)) ** 2 / (m * q)
    return float(min(max(bound, limits[0]), limits[1]))


def burn_in_steps(min_eigenvalue: float, learning_rate: float, step_noise: float | None = None,
                  kept: int | None = None, pilot_risk: float | None = None) -> int:
    """Burn-in after which the start biases the mean by at most ``BURN_BIAS`` of its std.

    ``B`` is the smallest number of steps with ``(1 - eta a)^B sqrt(R / a) <=
    BURN_BIAS eta s sqrt(K)`` (module notes), a the slowest contraction
    (raised to :data:`MIN_CONTRACTION`), and never more than the steps that
    shrink any start's error by ``1e-3`` (``(1 - eta a)^B <= 1e-3``); at
    least 2. Without the noise inputs, that second number.

    Parameters
    ----------
    min_eigenvalue : float
        Estimate of the smallest eigenvalue of the preconditioned Hessian.
    learning_rate : float
    step_noise : float or None, default=None
        s, the noise std per step and coordinate.
    kept : int or None, default=None
        K, a lower bound on the iterates the mean keeps.
    pilot_risk : float or None, default=None
        R, an upper bound on the excess risk of the start.

    Returns
    -------
    int
    """
    a = max(min_eigenvalue, MIN_CONTRACTION)
    rate = min(1.0, learning_rate * a)
    if rate >= 1.0 - 1e-3:
        return 2
    log_phi = math.log1p(-rate)
    burn = math.ceil(math.log(1e-3) / log_phi)
    if step_noise is not None and kept and pilot_risk:
        ratio = BURN_BIAS * learning_rate * step_noise * math.sqrt(kept * a / pilot_risk)
        if ratio >= 1.0:
            return 2
        burn = min(burn, math.ceil(math.log(ratio) / log_phi))
    return max(2, burn)


def plan_steps(min_eigenvalue: float, learning_rate: float, n_batches: int,
               cap: int | None = None, step_noise: float | None = None,
               pilot_risk: float | None = None) -> tuple[int, int, int]:
    """Burn-in and total steps that make the iterates stationary and the batches nearly independent.

    In the preconditioned coordinates each direction of the noisy iteration is
    an AR(1) process with coefficient ``phi = 1 - learning_rate * lambda``.
    The slowest (``lambda`` at its estimate, raised to
    :data:`MIN_CONTRACTION`) sets batches of ``L = max(2, ceil(8 phi / (1 -
    phi)))`` steps, whose lag-one correlation is about ``1 / (2 L (1 - phi))
    <= 1/16`` (the batched-means standard error is at most ~5% too small),
    and the burn-in (:func:`burn_in_steps`). The plan wants ``m L`` kept
    steps after the burn-in; a ``cap`` (:func:`max_steps`, a time budget)
    shortens the batches and keeps the burn-in within half the run.

    Parameters
    ----------
    min_eigenvalue : float
        Estimate of the smallest eigenvalue of the preconditioned Hessian.
    learning_rate : float
    n_batches : int
    cap : int or None, default=None
        Most steps.
    step_noise : float or None, default=None
        ``2 W C / (n mu)``: the noise std per step is ``sqrt(T)`` times it.
        None: the burn-in forgets the start to ``1e-3``.
    pilot_risk : float or None, default=None
        Bound on the excess risk of the start (:attr:`Preconditioner.pilot_risk`).

    Returns
    -------
    burn_in, n_iter, wanted : int
        ``wanted`` is the plan before the cap.
    """
    rate = min(1.0, learning_rate * max(min_eigenvalue, MIN_CONTRACTION))
    length = max(2, math.ceil(8.0 * (1.0 - rate) / rate))
    kept = n_batches * length

    def burn_for(total):
        if step_noise is None:
            return burn_in_steps(min_eigenvalue, learning_rate)
        return burn_in_steps(min_eigenvalue, learning_rate, math.sqrt(total) * step_noise,
                             total // 2, pilot_risk)

    burn = burn_for(kept)
    wanted = burn + kept
    if cap is None or wanted <= cap:
        return burn, wanted, wanted
    burn = min(burn_for(cap), cap // 2)
    length = max(2, min(length, (cap - burn) // n_batches))
    return burn, burn + n_batches * length, wanted
