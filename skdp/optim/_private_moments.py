"""Private inputs of the first and second moments of adaptive optimizers.

Each step the model sees the sum of clipped per-example gradients
``G_t = sum_i clip(g_i, zeta)`` of a batch of b rows and, for the variants
that privatise it separately, the sum of their element-wise squares
``Q_t = sum_i clip(g_i, zeta)**2``. The variants (Ganesh et al. 2025 Algorithms
5-8, Kalinin et al. 2025 Algorithm 2) differ in what they noise and in what they give
the optimizer as its second-moment input:

``'post_processing'`` (Algorithm 5)
    Noise G_t; the optimizer squares the noisy mean gradient. Biased by the
    noise variance.
``'bias_correction'`` (Algorithm 7)
    As post-processing, and the known noise variance of the mean gradient,
    ``std1**2 Var([C^{-1} Z]_t) / b**2``, is passed as a bias to subtract.
``'independent'`` (Algorithm 6)
    Noise G_t and Q_t separately, the budget split equally in GDP
    (``mu_1**2 = mu_2**2 = mu**2 / 2``, via
    :func:`~skdp.moments.ime_noise_stds`).
``'jme'`` (Kalinin et al. 2025 Algorithm 2, Theorem 4.3)
    Noise G_t and Q_t with one joint sensitivity and the privacy-for-free
    weight: G_t gets exactly the post-processing noise, and Q_t comes free.
``'scale_then_privatize'`` (Algorithm 8)
    Clip and noise ``s_t * g_i`` with ``s_t = 1 / (sqrt(v_{t-1}) + eps)``
    from the optimizer's previous (private) mean square gradient (Adam's
    ``v_hat``; AdaGrad's sum divided by the steps, so that ``s_t g`` stays of
    order one rather than shrinking like ``1 / sqrt(t)``), then unscale; the
    second moment is post-processed from the result.

**Square-then-average.** 'independent' and 'jme' privatise Q_t, a sum over
rows, whose replace-one change is that of one row (``||a**2 - b**2|| <=
sqrt(2) zeta**2``, jointly with ``a - b`` for JME): the stream fits the
joint-sensitivity analysis of Kalinin et al. 2025 for any batch size. Ganesh et al. 2025
Algorithm 6 squares the batch *mean* instead, whose sensitivity grows with
the batch. With batch size 1 the two agree. The second-moment input is
``(Q_t + noise) / b``, the mean of the squared per-example gradients
(Ganesh et al. 2025 §2.2.1).

**Correlated noise.** Every variant works with any noise shaping C: the
noise of step t is ``std * [C^{-1} Z]_t`` with the same C for both streams,
so a row that takes part in the steps P multiplies both sensitivities by the
same participation factor kappa
(:func:`~skdp.mechanisms.cyclic_sensitivity_factor`; the largest column norm
of C for one participation). For JME with several participations, Cauchy-
Schwarz on each pair of steps gives the squared joint sensitivity
``zeta**2 r_d(lam zeta**2) kappa**2``, which is what
:func:`~skdp.moments.jme_noise_stds` returns for column norms kappa.
"""

from __future__ import annotations

import numpy as np

from skdp.moments import ime_noise_stds, jme_noise_stds

__all__ = ["PRIVATE_MOMENTS", "moment_noise_stds", "private_step_inputs"]

PRIVATE_MOMENTS = ("post_processing", "bias_correction", "independent", "jme",
                   "scale_then_privatize")


def _check_variant(variant: str) -> None:
    if variant not in PRIVATE_MOMENTS:
        raise ValueError(f"Unknown private_moments {variant!r}; choose one of {PRIVATE_MOMENTS}.")


def moment_noise_stds(variant: str, mu: float, clip_norm: float, dim: int,
                      sensitivity_factor: float = 1.0) -> tuple[float, float]:
    """Noise stds on the per-step sums G_t and Q_t for mu-GDP over the whole stream.

    Parameters
    ----------
    variant : str
        One of :data:`PRIVATE_MOMENTS`.
    mu : float
        GDP budget of the whole training run.
    clip_norm : float
        zeta, the bound on each per-example gradient's L2 norm.
    dim : int
        Number of entries of one gradient (for JME's r_d).
    sensitivity_factor : float, default=1.0
        kappa: the participation factor of the noise shaping (1 for
        independent noise and one participation).

    Returns
    -------
    std1, std2 : float
        std2 is 0 for the variants that do not noise Q_t.

    Examples
    --------
    >>> from skdp.optim import moment_noise_stds
    >>> moment_noise_stds("post_processing", mu=1.0, clip_norm=1.0, dim=5)
    (2.0, 0.0)
    >>> std1, std2 = moment_noise_stds("jme", mu=1.0, clip_norm=1.0, dim=5)
    >>> std1  # the second moment is free: the first gets the same noise
    2.0
    """
    _check_variant(variant)
    zeta, kappa = float(clip_norm), float(sensitivity_factor)
    if variant == "independent":
        return ime_noise_stds(mu, zeta, kappa, kappa, 0.5)
    if variant == "jme":
        std1, std2, _ = jme_noise_stds(mu, int(dim), zeta, [kappa], [kappa])
        return std1, std2
    return 2.0 * zeta * kappa / mu, 0.0


def private_step_inputs(variant: str, grad_sum, noise, batch_size: int, *, square_sum=None,
                        square_noise=None, noise_variance: float = 0.0, scale=None):
    """Turn the noisy sums of one step into the optimizer's inputs.

    Parameters
    ----------
    variant : str
        One of :data:`PRIVATE_MOMENTS`.
    grad_sum : ndarray
        G_t (for 'scale_then_privatize': the sum of the clipped *scaled*
        gradients, :func:`~skdp.clipping.clipped_gradient_sum` with ``scale``).
    noise : ndarray
        The noise of G_t, ``std1 * [C^{-1} Z1]_t``.
    batch_size : int
        The divisor of the sums: the planned rows per step (public;
        :func:`~skdp.linear_model.dp_sgd` passes the planned batch size also
        for a smaller last batch, whose noise is a full step's).
    square_sum, square_noise : ndarray, optional
        Q_t and its noise, for 'independent' and 'jme'.
    noise_variance : float, default=0.0
        Variance of each entry of ``noise`` (for 'bias_correction').
    scale : ndarray, optional
        s_t, for 'scale_then_privatize'.

    Returns
    -------
    grad : ndarray
        The private mean gradient.
    second : ndarray or None
        The private second-moment input, or None for ``grad**2``.
    second_bias : float
        Known mean of the noise in ``grad**2`` (nonzero for 'bias_correction').

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.optim import private_step_inputs
    >>> private_step_inputs("bias_correction", np.array([4.0]), np.array([2.0]), 2,
    ...                     noise_variance=4.0)
    (array([3.]), None, 1.0)
    """
    _check_variant(variant)
    b = float(batch_size)
    if variant == "scale_then_privatize":
        return (np.asarray(grad_sum) + noise) / (np.asarray(scale) * b), None, 0.0
    grad = (np.asarray(grad_sum) + noise) / b
    if variant == "post_processing":
        return grad, None, 0.0
    if variant == "bias_correction":
        return grad, None, float(noise_variance) / (b * b)
    if square_sum is None or square_noise is None:
        raise ValueError(f"{variant!r} needs square_sum and square_noise.")
    return grad, (np.asarray(square_sum) + square_noise) / b, 0.0
