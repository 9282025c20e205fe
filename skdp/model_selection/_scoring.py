"""Private validation scores: a Gaussian mechanism on the mean of a bounded per-row loss."""

from __future__ import annotations

import math

import numpy as np

from skdp.mechanisms._random import gaussian_release

__all__ = ["SCORINGS", "default_scoring", "noisy_mean_loss", "row_losses", "score_from_loss"]

#: scoring name -> (per-row loss, default bound on it). Every loss is clipped
#: to [0, loss_bound], so one row moves the sum of the losses by at most
#: loss_bound, whatever the model and the data.
SCORINGS = {
    # squared residual; 4.0 = a residual of 2 label standard deviations for
    # labels of unit scale (the scale skdp's defaults assume)
    "neg_mean_squared_error": ("squared", 4.0),
    # absolute residual, clipped at 2 for the same reason
    "neg_mean_absolute_error": ("absolute", 2.0),
    # 0-1 loss: bounded by 1 by construction (loss_bound is not used)
    "accuracy": ("zero_one", 1.0),
    # -log of the probability of the true class; 4.6 = log(100): a
    # probability below 1% counts as 1%
    "neg_log_loss": ("log", math.log(100.0)),
}


def default_scoring(estimator_type: str | None) -> str:
    """``accuracy`` for classifiers, ``neg_mean_squared_error`` otherwise."""
    return "accuracy" if estimator_type == "classifier" else "neg_mean_squared_error"


def row_losses(scoring: str, estimator, X, y, loss_bound: float) -> np.ndarray:
    """Per-row losses of a fitted estimator on (X, y), each in [0, loss_bound].

    A non-finite prediction (a diverged model) counts as the largest loss.

    Parameters
    ----------
    scoring : str
        A key of :data:`SCORINGS`.
    estimator : fitted estimator
    X : array-like of shape (n, p)
    y : ndarray of shape (n,)
    loss_bound : float
        Upper bound of the per-row loss (ignored for the 0-1 loss).

    Returns
    -------
    ndarray of shape (n,)
    """
    kind = SCORINGS[scoring][0]
    y = np.asarray(y)
    # The rows are private and uncapped: an overflow warning in a prediction (a
    # validation value near 1e308 times a released coefficient) would tell, after the
    # charge, that such a row exists. No floating-point warning leaves this function;
    # a non-finite prediction costs the bound.
    with np.errstate(all="ignore"):
        if kind == "zero_one":
            return (np.asarray(estimator.predict(X)) != y).astype(np.float64)
        if kind == "log":
            proba = np.asarray(estimator.predict_proba(X), dtype=np.float64)
            column = {c: i for i, c in enumerate(estimator.classes_)}
            idx = np.array([column.get(label, -1) for label in y.tolist()], dtype=np.intp)
            p_true = np.where(idx >= 0, proba[np.arange(len(y)), np.maximum(idx, 0)], 0.0)
            loss = -np.log(p_true)  # a label the model does not know: +inf -> the bound
        else:
            residual = np.asarray(estimator.predict(X), dtype=np.float64) - y.astype(np.float64)
            loss = residual * residual if kind == "squared" else np.abs(residual)
    return np.where(np.isfinite(loss), np.clip(loss, 0.0, loss_bound), loss_bound)


def noisy_mean_loss(losses: np.ndarray, loss_bound: float, mu: float,
                    rng: np.random.Generator) -> float:
    """Mean of the bounded losses plus Gaussian noise: a mu-GDP release.

    Replacing one row changes the sum of losses in [0, loss_bound] by at most
    ``loss_bound``; noise of std ``loss_bound / mu`` on the sum makes the
    release mu-GDP. The number of rows is public.

    Parameters
    ----------
    losses : ndarray of shape (n,)
        Values in [0, loss_bound].
    loss_bound : float
    mu : float
        GDP parameter of this release, > 0.
    rng : numpy.random.Generator

    Returns
    -------
    float
    """
    total = float(gaussian_release(math.fsum(losses.tolist()), loss_bound / mu, rng,
                                   name="validation loss", sensitivity=loss_bound, weight=None))
    return total / len(losses)


def score_from_loss(scoring: str, mean_loss):
    """Greater is better, as in scikit-learn: ``1 - loss`` for accuracy, else ``-loss``.

    Parameters
    ----------
    scoring : str
    mean_loss : float or ndarray

    Returns
    -------
    float or ndarray
    """
    return 1.0 - mean_loss if scoring == "accuracy" else -mean_loss
