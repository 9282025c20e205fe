"""The public steps that follow a private one in a private search, their outputs made finite.

A private search charges its budget once, before any fit. A stateless step
after a private one (``FunctionTransformer(np.exp)`` after a private scaler)
can turn one table's outlier into an infinity or a NaN, which the next private
step's validation refuses: an error, or a numpy warning, that only tables with
such a row give, after the charge. In the search's fits such a step is wrapped
in :class:`~skdp.preprocessing.FiniteOutput` (a fixed map of its output to
finite values). The returned ``best_estimator_`` is unwrapped again.
"""

from __future__ import annotations

from sklearn.pipeline import Pipeline

from skdp.model_selection._budget import _is_private
from skdp.preprocessing._finite_output import FiniteOutput

__all__ = ["unwrap_public_steps", "wrap_public_steps"]


class _Added(FiniteOutput):
    """A :class:`~skdp.preprocessing.FiniteOutput` added by the search (removed on return)."""


def _steps(pipe: Pipeline, after_private: bool, wrap: bool) -> bool:
    for i, (name, step) in enumerate(pipe.steps):
        if step is None or (isinstance(step, str) and step == "passthrough"):
            continue
        if isinstance(step, Pipeline):
            after_private = _steps(step, after_private, wrap)
        elif _is_private(step):
            after_private = True
        elif (wrap and after_private and hasattr(step, "transform")
              and not isinstance(step, FiniteOutput)):
            pipe.steps[i] = (name, _Added(step))
        elif not wrap and isinstance(step, _Added):
            pipe.steps[i] = (name, getattr(step, "step_", step.step))
    return after_private


def wrap_public_steps(estimator):
    """Wrap, in place, every public step of a Pipeline that follows a private step.

    Parameters
    ----------
    estimator : estimator or Pipeline
        A candidate of a private search (anything but a Pipeline is returned
        as it is).

    Returns
    -------
    estimator
    """
    if isinstance(estimator, Pipeline):
        _steps(estimator, False, wrap=True)
    return estimator


def unwrap_public_steps(estimator):
    """Undo :func:`wrap_public_steps` in place: each wrapper it added gives way to its (fitted) step.

    Parameters
    ----------
    estimator : estimator or Pipeline

    Returns
    -------
    estimator
    """
    if isinstance(estimator, Pipeline):
        _steps(estimator, False, wrap=False)
    return estimator
