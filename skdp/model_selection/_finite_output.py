"""The public steps that follow a private one in a private search, their outputs made finite.

A private search charges its budget once, before any fit. A stateless step
after a private one (``FunctionTransformer(np.exp)`` after a private scaler)
can turn one table's outlier into an infinity or a NaN, which the next private
step's validation refuses: an error, or a numpy warning, that only tables with
such a row give, after the charge. In the search's fits such a step is wrapped
in :class:`FiniteOutput`, which maps its output value by value (a complex
value to its real part, NaN to 0, infinities and values beyond ``MAX_ABS``
to ``+-MAX_ABS``; a fixed map, so neighbouring tables stay neighbours) and
silences numpy's floating-point warnings inside it. Object outputs pass
as they are. The returned ``best_estimator_`` is unwrapped again.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator
from sklearn.pipeline import Pipeline
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if

from skdp.model_selection._budget import _is_private
from skdp.utils._dask import _capped

__all__ = ["FiniteOutput", "unwrap_public_steps", "wrap_public_steps"]


def _finite(out):
    """``out`` with every numeric value mapped by :func:`skdp.utils._dask._capped`."""
    if sparse.issparse(out):
        out = out.copy()
        out.data = _capped(np.real(out.data))
        return out
    if hasattr(out, "select_dtypes"):  # a DataFrame (set_output(transform="pandas"))
        # "number" takes complex and timedelta columns too; nullable and pyarrow
        # columns give NaN for NA (then 0), not an object array.
        columns = out.select_dtypes(include="number").columns
        complex_ = any(getattr(t, "kind", "") == "c" for t in out[columns].dtypes)
        out = out.copy()
        out[columns] = _capped(np.real(out[columns].to_numpy(dtype=complex if complex_ else float,
                                                             na_value=np.nan)))
        return out
    array = np.asarray(out)
    if array.dtype.kind == "c":  # a step whose dtype follows the values (np.emath.sqrt)
        array = array.real
    if array.dtype.kind in "biuf":
        return _capped(array)
    return out


def _step_has(attr):
    return lambda self: hasattr(self.step, attr)


class FiniteOutput(BaseEstimator):
    """A stateless step whose output is mapped to finite values, without numpy warnings.

    Parameters
    ----------
    step : transformer
        The wrapped step (it keeps its parameters and, once fitted, its state).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.preprocessing import FunctionTransformer
    >>> from skdp.model_selection._finite_output import FiniteOutput
    >>> FiniteOutput(FunctionTransformer(np.exp)).fit_transform(np.array([[0.0], [1e4]]))
    array([[1.e+00],
           [1.e+50]])
    """

    def __init__(self, step):
        self.step = step

    def __sklearn_tags__(self):
        return get_tags(self.step)

    def fit(self, X, y=None, **params):
        with np.errstate(all="ignore"):
            self.step.fit(X, y, **params)
        return self

    def fit_transform(self, X, y=None, **params):
        with np.errstate(all="ignore"):
            if hasattr(self.step, "fit_transform"):
                return _finite(self.step.fit_transform(X, y, **params))
            return _finite(self.step.fit(X, y, **params).transform(X))

    def transform(self, X):
        with np.errstate(all="ignore"):
            return _finite(self.step.transform(X))

    @available_if(_step_has("set_output"))
    def set_output(self, *, transform=None):
        """The wrapped step's output container (the map keeps DataFrames)."""
        self.step.set_output(transform=transform)
        return self

    @available_if(_step_has("get_feature_names_out"))
    def get_feature_names_out(self, input_features=None):
        return self.step.get_feature_names_out(input_features)


def _steps(pipe: Pipeline, after_private: bool, wrap: bool) -> bool:
    for i, (name, step) in enumerate(pipe.steps):
        if step is None or (isinstance(step, str) and step == "passthrough"):
            continue
        if isinstance(step, Pipeline):
            after_private = _steps(step, after_private, wrap)
        elif _is_private(step):
            after_private = True
        elif wrap and after_private and hasattr(step, "transform"):
            pipe.steps[i] = (name, FiniteOutput(step))
        elif not wrap and isinstance(step, FiniteOutput):
            pipe.steps[i] = (name, step.step)
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
    """Undo :func:`wrap_public_steps` in place: each wrapper gives way to its (fitted) step.

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
