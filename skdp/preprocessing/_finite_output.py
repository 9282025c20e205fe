"""FiniteOutput: a public step whose output is mapped to finite values, for use after a private step."""

from __future__ import annotations

import numpy as np
from scipy import sparse
from sklearn.base import BaseEstimator, clone
from sklearn.pipeline import Pipeline
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from skdp.utils._dask import _capped

__all__ = ["FiniteOutput"]


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
    if type(out).__module__.split(".")[0] == "polars":  # set_output(transform="polars")
        import polars as pl

        numeric = [name for name, dtype in out.schema.items() if dtype.is_numeric()]
        return out.with_columns([pl.Series(name, _capped(out[name].to_numpy().astype(float)))
                                 for name in numeric])
    array = np.asarray(out)
    if array.dtype.kind == "c":  # a step whose dtype follows the values (np.emath.sqrt)
        array = array.real
    if array.dtype.kind in "biuf":
        return _capped(array)
    return out


def _step_has(attr):
    return lambda self: hasattr(self.step, attr)


class FiniteOutput(BaseEstimator):
    """A public step whose output is mapped to finite values, for use after a private step.

    In a ``Pipeline`` a public step that follows a private one runs after
    that step's charge, on values that depend on the data:
    ``FunctionTransformer(np.exp)`` after a private scaler turns one table's
    outlier into an infinity, which the next private step refuses. That
    error, which only tables with such a row give, says something about
    the rows that the noise does not cover. Wrapped in ``FiniteOutput``, the
    step's output is mapped value by value to finite numbers: a complex value
    to its real part, NaN to 0, infinities and values beyond 1e50 to
    +-1e50 (the cap skdp puts on every input). The map is fixed, so a
    Pipeline's guarantee is that of its private steps. numpy's
    floating-point warnings inside the step, which would also describe the
    data, are silenced. A private search wraps such steps itself
    (:class:`~skdp.model_selection.DPGridSearchCV`).

    Parameters
    ----------
    step : transformer
        The wrapped public step (left unfitted: ``fit`` fits a clone). A
        private step, or a Pipeline holding one, is refused: its output is
        capped already.

    Attributes
    ----------
    step_ : transformer
        The fitted clone of ``step``.
    n_features_in_ : int
        Number of input features, where the step records it.
    feature_names_in_ : ndarray of str
        Input feature names, where the step records them.

    See Also
    --------
    skdp.preprocessing.DPStandardScaler : A private scaler, whose own output
        is capped the same way.

    Notes
    -----
    The step must not *raise* on any value: an error after a private step's
    charge would say that some row made it fail. Outputs that are not
    numbers (an object array) pass as they are. Steps before the first
    private step need no wrapper: the private step validates its input
    before its charge.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import FunctionTransformer
    >>> from skdp.linear_model import DPLinearRegressionGD
    >>> from skdp.preprocessing import DPStandardScaler, FiniteOutput
    >>> FiniteOutput(FunctionTransformer(np.exp)).fit_transform(np.array([[0.0], [1e4]]))
    array([[1.e+00],
           [1.e+50]])
    >>> pipe = make_pipeline(DPStandardScaler(bounds=(-5.0, 5.0), random_state=0),
    ...                      FiniteOutput(FunctionTransformer(np.exp)),
    ...                      DPLinearRegressionGD(bounds_X=(0.0, 200.0), bounds_y=(-5.0, 5.0),
    ...                                           random_state=0))
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 2))
    >>> y = np.exp(X) @ np.array([0.5, -0.5]) + rng.normal(size=2000)
    >>> X[0, 0] = 1e6  # a data error: exp overflows on its scaled value
    >>> pipe.fit(X, y).predict(X[:2]).shape
    (2,)
    """

    def __init__(self, step):
        self.step = step

    def __sklearn_tags__(self):
        tags = get_tags(self.step)
        if tags.transformer_tags is not None:  # numbers come out as float64
            tags.transformer_tags.preserves_dtype = ["float64"]
        return tags

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "step_")

    def _fitted(self):
        for name in ("n_features_in_", "feature_names_in_"):
            if hasattr(self.step_, name):
                setattr(self, name, getattr(self.step_, name))
            elif hasattr(self, name):  # from an earlier fit
                delattr(self, name)
        return self

    def _clone_step(self):
        # Imported here: skdp.model_selection imports this module.
        from skdp.model_selection._budget import _is_private

        def holds_private(step):
            if isinstance(step, Pipeline):
                return any(holds_private(s) for _, s in step.steps
                           if not (s is None or isinstance(s, str)))
            return _is_private(step)

        if holds_private(self.step):
            raise ValueError("FiniteOutput wraps public steps; a private step's output is "
                             "already capped. Put the private step itself in the Pipeline.")
        self.step_ = clone(self.step)
        return self.step_

    def fit(self, X, y=None, **params):
        """Fit a clone of ``step`` (``step_``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or None, default=None
        **params : dict
            Passed to the step's ``fit``.

        Returns
        -------
        self : FiniteOutput
        """
        step = self._clone_step()
        with np.errstate(all="ignore"):
            step.fit(X, y, **params)
        return self._fitted()

    def fit_transform(self, X, y=None, **params):
        """Fit a clone of ``step`` and return its output, mapped to finite values.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,) or None, default=None
        **params : dict
            Passed to the step's ``fit_transform`` (or ``fit``).

        Returns
        -------
        ndarray, sparse matrix or DataFrame
        """
        step = self._clone_step()
        with np.errstate(all="ignore"):
            if hasattr(step, "fit_transform"):
                out = step.fit_transform(X, y, **params)
            else:
                out = step.fit(X, y, **params).transform(X)
        self._fitted()
        return _finite(out)

    def transform(self, X):
        """The fitted step's output, mapped to finite values.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray, sparse matrix or DataFrame
        """
        if not hasattr(self, "step_") and not get_tags(self.step).requires_fit:
            step = self.step  # a stateless step transforms unfitted
        else:
            check_is_fitted(self)
            step = self.step_
        with np.errstate(all="ignore"):
            return _finite(step.transform(X))

    @available_if(_step_has("set_output"))
    def set_output(self, *, transform=None):
        """Set the wrapped step's output container (the map keeps DataFrames).

        Parameters
        ----------
        transform : {"default", "pandas", "polars"} or None, default=None

        Returns
        -------
        self : FiniteOutput
        """
        self.step.set_output(transform=transform)
        if hasattr(self, "step_"):
            self.step_.set_output(transform=transform)
        return self

    @available_if(_step_has("get_feature_names_out"))
    def get_feature_names_out(self, input_features=None):
        """The fitted step's output feature names.

        Parameters
        ----------
        input_features : array-like of str or None, default=None

        Returns
        -------
        ndarray of str
        """
        check_is_fitted(self)
        return self.step_.get_feature_names_out(input_features)
