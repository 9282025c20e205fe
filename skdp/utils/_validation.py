"""Validation of the private data: schema errors without data values, magnitudes capped.

Every estimator's ``fit`` and ``partial_fit`` pass the private data through
:func:`validate_private`. It enforces the public schema (numeric, finite,
two-dimensional X, one label per row, enough rows), and its errors name the
problem without quoting any data value. It then caps every value at
``MAX_ABS`` in magnitude.

Why a cap: the estimators clip rows and gradients to declared bounds, but
computing a norm squares the values, and a finite value such as 1e300
overflows to inf on the way; depending on the code path the row is then
zeroed instead of clipped, or the fit ends in NaN or a FloatingPointError,
which would reveal that such a row exists. Capping at 1e50 (a public
constant, applied to each value independently of the other rows) keeps all
the arithmetic finite. It is a fixed map applied row by row, so neighbouring
datasets stay neighbours and the guarantee is unchanged; any value beyond
the cap is beyond every bound the estimators use, so it is clipped anyway.
"""

from __future__ import annotations

import numpy as np
from pandas.api.types import is_bool_dtype, is_numeric_dtype
from sklearn.utils.validation import validate_data

__all__ = ["MAX_ABS", "validate_private"]

#: Largest magnitude skdp computes with; larger finite inputs are capped to it.
MAX_ABS = 1e50


def validate_private(estimator, X, y="no_validation", *, labels: bool = False, **kwargs):
    """``sklearn.utils.validation.validate_data`` for private data.

    Parameters
    ----------
    estimator : estimator
    X : array-like or DataFrame
    y : array-like or None, optional
        Validated with X when given (None raises scikit-learn's "requires y"
        error); the default validates X alone.
    labels : bool, default=False
        y holds class labels: they are not capped.
    **kwargs
        Passed on (``reset``, ``y_numeric``, ``ensure_min_samples``, ...);
        ``dtype`` defaults to float64.

    Returns
    -------
    X or (X, y)
        Float arrays with values capped at ``MAX_ABS`` in magnitude (y only
        when numeric).

    Raises
    ------
    ValueError
        For data that violate the schema. Messages about non-numeric data
        name the columns (the schema is public), never a value.
    """
    kwargs.setdefault("dtype", np.float64)
    try:
        out = validate_data(estimator, X, y, **kwargs)
    except ValueError as exc:
        if "could not convert" in str(exc):
            raise ValueError(_non_numeric_message(estimator, X)) from None
        raise
    if isinstance(y, str) and y == "no_validation":
        return _cap(out)
    X, y = out
    return _cap(X), (y if labels else _cap(y))


def _non_numeric_message(estimator, X) -> str:
    name = type(estimator).__name__
    columns = getattr(X, "columns", None)
    if columns is not None and hasattr(X, "dtypes"):
        bad = [str(c) for c, dt in zip(columns, X.dtypes)
               if not (is_numeric_dtype(dt) or is_bool_dtype(dt))]
        if bad:
            return (f"{name} needs numeric data; non-numeric columns: {bad}. Encode categories "
                    "with a category list you know without looking at the data (e.g. "
                    "OneHotEncoder(categories=...)) and drop free text.")
    return (f"{name} needs numeric data; X or y contains values that are not numbers "
            "(strings or objects). Encode them first.")


def _cap(a: np.ndarray) -> np.ndarray:
    # max and min read X twice but allocate nothing (np.abs would copy it).
    if a.size and (a.max() > MAX_ABS or a.min() < -MAX_ABS):
        return np.clip(a, -MAX_ABS, MAX_ABS)
    return a
