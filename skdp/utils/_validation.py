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

from collections.abc import Mapping

import numpy as np
import pandas as pd
from pandas.api.types import is_bool_dtype, is_numeric_dtype
from sklearn.utils.validation import validate_data

from skdp.utils._dask import (
    _SchemaError,
    as_float64,
    compute,
    in_memory,
    is_dask,
    read,
    validate_dask,
)

__all__ = ["MAX_ABS", "check_bounds", "check_sample_weight", "check_stream_weights",
           "float_rows", "validate_new_rows", "validate_private"]

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
    if is_dask(y) and not is_dask(X):
        # X in memory (a transformer's pandas output in a Pipeline, say) with a Dask y:
        # y, one value per row, comes into memory too, rather than fail later.
        (y,) = compute(y)
        y = np.asarray(y)
    if is_dask(X):
        if not getattr(estimator, "_accepts_dask", False):
            streaming = " (its partial_fit takes one partition at a time)" \
                if hasattr(estimator, "partial_fit") else ""
            raise TypeError(f"{type(estimator).__name__}.fit does not read Dask collections"
                            f"{streaming}; compute the data into memory first.")
        return validate_dask(estimator, X, y, labels=labels, **kwargs)
    kwargs.setdefault("dtype", np.float64)
    out = validate_new_rows(estimator, X, y, **kwargs)
    if isinstance(y, str) and y == "no_validation":
        return _cap(out)
    X, y = out
    return _cap(X), (y if labels else _cap(y))


def validate_new_rows(estimator, X, y="no_validation", **kwargs):
    """scikit-learn's ``validate_data``, with the data values its errors print cut out.

    For the rows of ``transform``, ``predict`` and ``score`` (and, through
    :func:`validate_private`, of ``fit``): a 1-D X or complex data made
    scikit-learn's message print the array.
    """
    X, y = in_memory(X, y)  # validate_data would compute a Dask X or y unguarded
    try:
        return validate_data(estimator, X, y, **kwargs)
    except ValueError as exc:
        text = str(exc)
        if "could not convert" not in text and _without_values(text) == text:
            raise
    # Raised after the except clause, so that no __context__ keeps the message quoting
    # the value (numpy's "could not convert ...", scikit-learn's "array=...").
    if "could not convert" in text:
        raise ValueError(_non_numeric_message(estimator, X))
    raise ValueError(_without_values(text))


def float_rows(X) -> np.ndarray:
    """``X`` as a new float64 array, with errors that quote no value (``inverse_transform``)."""
    try:
        X = np.asarray(X)
        if not np.iscomplexobj(X):
            return np.array(X, dtype=np.float64)
        numeric = True
    except (TypeError, ValueError):  # raised below: no __context__ quoting the value
        numeric = False
    if not numeric:
        raise ValueError("X holds values that are not numbers.")
    raise ValueError("X must hold real numbers, not complex ones.")


def _without_values(message: str) -> str:
    """scikit-learn's validation errors with the data they print cut out.

    A 1-D or scalar X is printed after ``array=``, complex data after
    "Complex data not supported"; the threat model promises errors that name
    the problem, never a value.
    """
    if message.startswith("Complex data not supported"):
        return "Complex data not supported: X and y must hold real numbers."
    start = message.find("\narray=")
    if start < 0:
        return message
    end = message.find("\nReshape your data", start)
    return message[:start].rstrip(":") + "." + ("" if end < 0 else " " + message[end + 1:])


def _non_numeric_message(estimator, X) -> str:
    name = type(estimator).__name__
    columns = getattr(X, "columns", None)
    if columns is not None and hasattr(X, "dtypes"):
        bad = [str(c) for c, dt in zip(columns, X.dtypes)
               if not (is_numeric_dtype(dt) or is_bool_dtype(dt))]
        if bad:
            return (f"{name} needs numeric data; non-numeric columns: {bad}. Encode categories "
                    "with a category list you know without looking at the data (e.g. "
                    "OneHotEncoder(categories=[...], handle_unknown='ignore', "
                    "sparse_output=False)) and drop free text.")
    return (f"{name} needs numeric data; X or y contains values that are not numbers "
            "(strings or objects). Encode them first.")


def _cap(a: np.ndarray) -> np.ndarray:
    # max and min read X twice but allocate nothing (np.abs would copy it).
    if a.size and (a.max() > MAX_ABS or a.min() < -MAX_ABS):
        return np.clip(a, -MAX_ABS, MAX_ABS)
    return a


def check_sample_weight(sample_weight, n_samples: int, max_weight: float):
    """Validate weights against their declared bound; None stays None.

    Weights that are zero for every row are accepted (unlike scikit-learn,
    which refuses them): each weight lies in the domain ``[0, max_weight]``,
    and refusing the table whose weights are all 0 while fitting its
    neighbour, in which one row weighs 1, would tell the two apart by an
    error. Such a fit releases noise only, and says so through the
    estimator's own warnings.

    Parameters
    ----------
    sample_weight : array-like of shape (n_samples,) or None
    n_samples : int
    max_weight : float
        The public bound (a hyper-parameter), > 0 and finite.

    Returns
    -------
    ndarray of shape (n_samples,) or None

    Raises
    ------
    ValueError
        For a wrong shape, a negative, non-finite or too large weight. The
        message names the problem, never a weight's value: whether one row's
        weight exceeds the bound is a schema error the user must fix, and it
        is raised before any budget is charged or noise drawn.
    """
    max_weight = float(max_weight)
    if not (np.isfinite(max_weight) and max_weight > 0):
        raise ValueError(f"max_weight must be positive and finite, got {max_weight}.")
    if sample_weight is None:
        return None
    if is_dask(sample_weight):
        return _check_dask_weights(sample_weight, n_samples, max_weight)
    complex_, numeric = False, True
    try:
        w = np.asarray(sample_weight)
        complex_ = np.iscomplexobj(w)
        if not complex_:
            w = w.astype(np.float64)
    except (TypeError, ValueError):  # raised below: no __context__ quoting the value
        numeric = False
    if not numeric:
        raise ValueError("sample_weight must be numeric.")
    if complex_:
        raise ValueError("sample_weight must be real numbers.")
    if w.ndim != 1 or w.shape[0] != n_samples:
        raise ValueError(f"sample_weight must have shape ({n_samples},), got {w.shape}.")
    if not np.all(np.isfinite(w)):
        raise ValueError("sample_weight contains NaN or infinite values.")
    if np.any(w < 0):
        raise ValueError("sample_weight must be non-negative.")
    if np.any(w > max_weight):
        raise ValueError(f"sample_weight exceeds max_weight={max_weight:g}; declare a larger "
                         "max_weight (it scales the noise) or cap the weights.")
    return w


def check_stream_weights(sample_weight, n_samples: int, max_weight: float, bound: float):
    """Weights of one call of a stream whose noise was calibrated for weights up to ``bound``.

    The first call fixes ``bound`` (:func:`skdp.base.weight_bound`):
    ``max_weight`` if it has sample weights, 1 if not. Later calls must stay
    within it: rows without weights weigh 1.

    Parameters
    ----------
    sample_weight : array-like of shape (n_samples,) or None
    n_samples : int
    max_weight : float
    bound : float

    Returns
    -------
    ndarray of shape (n_samples,) or None

    Raises
    ------
    ValueError
        As :func:`check_sample_weight`, and for rows that would weigh more
        than the stream's noise allows.
    """
    if sample_weight is None:
        if bound < 1.0:
            raise ValueError(
                f"This stream's noise is calibrated for rows of weight at most {bound:g} "
                "(max_weight, with sample weights); rows without sample_weight weigh 1. Pass "
                "sample_weight in every call.")
        return None
    # Dask weights are checked against the stream's bound too (partition by partition):
    # a weight above it would count more than the noise of the stream allows.
    if is_dask(sample_weight) and bound < float(max_weight):
        check_sample_weight(sample_weight, n_samples, bound)
    w = check_sample_weight(sample_weight, n_samples, max_weight)
    if w is not None and not is_dask(w) and np.any(w > bound):
        raise ValueError(
            "This stream started without sample_weight, so its noise is calibrated for rows of "
            f"weight at most {bound:g}; pass sample_weight from the first call on to use "
            f"weights up to max_weight={float(max_weight):g}.")
    return w


def _weight_block(w, max_weight, index) -> int:
    """Check one partition of Dask weights; its number of rows."""
    if np.iscomplexobj(w):
        raise _SchemaError(f"sample_weight: partition {index} holds complex numbers.")
    w = as_float64(w, _SchemaError(f"sample_weight: partition {index} holds values that are "
                                   "not numbers."))
    if not np.all(np.isfinite(w)):
        raise _SchemaError(f"sample_weight: partition {index} contains NaN or infinite values.")
    if np.any(w < 0):
        raise _SchemaError(f"sample_weight must be non-negative (partition {index}).")
    if np.any(w > max_weight):
        raise _SchemaError(f"sample_weight exceeds max_weight={max_weight:g} in partition {index}; "
                         "declare a larger max_weight (it scales the noise) or cap the weights.")
    return w.shape[0]


def _check_dask_weights(sample_weight, n_samples: int, max_weight: float):
    """Dask weights, checked partition by partition in one pass (before any charge)."""
    import dask
    import dask.array as da

    if isinstance(sample_weight, da.Array):
        w = sample_weight
    else:
        w = read(lambda: sample_weight.to_dask_array(lengths=True))
    if w.ndim != 1 or w.shape[0] != n_samples:
        raise ValueError(f"sample_weight must have shape ({n_samples},), got {w.shape}.")
    if any(np.isnan(c) for c in w.chunks[0]):
        raise ValueError("sample_weight is a Dask array with unknown chunk sizes; call "
                         "compute_chunk_sizes() first.")
    checked = compute(*[dask.delayed(_weight_block)(b, max_weight, i)
                             for i, b in enumerate(w.to_delayed().ravel())])
    if tuple(checked) != tuple(w.chunks[0]):
        raise ValueError("sample_weight's partitions hold other numbers of rows than its "
                         "chunks declare: build it with its true chunk sizes.")
    # Read again for each release: should the source change after this check, the
    # weights are mapped into [0, max_weight] (NaN to 0), value by value, so that no
    # row ever weighs more than the noise allows.
    return da.map_blocks(_bounded_weights, w, max_weight, dtype=np.float64)


def _bounded_weights(block, max_weight):
    block = np.asarray(block, dtype=np.float64)
    return np.clip(np.nan_to_num(block, nan=0.0, posinf=max_weight, neginf=0.0), 0.0, max_weight)


def check_bounds(bounds, n_values: int, name: str = "bounds", feature_names=None,
                 by_name: bool = False):
    """Declared ``(lower, upper)`` bounds as two float arrays of length ``n_values``; None stays None.

    Scalars apply to every value; arrays apply by position. With
    ``by_name``, a pandas Series or a dict (a data dictionary) applies by
    column name: its names must be those of X, in any order (a Series
    indexed 0, 1, ..., n_values - 1 applies by position). The check runs
    before any budget is charged.

    Parameters
    ----------
    bounds : tuple of (float, array-like, Series or dict) or None
    n_values : int
        Features (``bounds_X``, a scaler's ``bounds``) or 1 (``bounds_y``).
    name : str, default="bounds"
        Parameter name, for the error messages.
    feature_names : array-like of str or None, default=None
        The names of X's columns (``feature_names_in_``), to which bounds
        given by name are aligned; None when X had none.
    by_name : bool, default=False
        Align Series and dicts to ``feature_names`` (bounds of features;
        a label's bounds are positional).

    Returns
    -------
    (ndarray, ndarray) or None

    Raises
    ------
    ValueError
        Naming the parameter, for a wrong shape, non-finite values, a lower
        bound not below its upper bound, a bound beyond 1e50 in magnitude or
        a range narrower than 1e-30.
    """
    if bounds is None:
        return None
    try:
        lower, upper = bounds
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (lower, upper) of scalars or arrays of length "
                         f"{n_values}.") from None
    if by_name:
        lower, upper = (_by_name(b, name, feature_names, n_values) for b in (lower, upper))
    try:
        lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (lower, upper) of scalars or arrays of length "
                         f"{n_values}.") from None
    for side, values in (("lower", lower), ("upper", upper)):
        # A scalar, or one value per feature: a length-1 array for several features
        # is more likely a mistake than a wish to broadcast, and clips silently.
        if values.ndim > 1 or (values.ndim == 1 and values.shape[0] != n_values):
            raise ValueError(f"{name} must be a pair (lower, upper) of scalars or arrays of "
                             f"length {n_values}; the {side} bounds have shape {values.shape} "
                             "(a scalar gives every one the same value).")
    lower = np.broadcast_to(lower, (n_values,)).copy()
    upper = np.broadcast_to(upper, (n_values,)).copy()
    if not (np.all(np.isfinite(lower)) and np.all(np.isfinite(upper))):
        raise ValueError(f"{name} must be finite.")
    if np.any(lower >= upper):
        bad = np.flatnonzero(lower >= upper).tolist()
        raise ValueError(f"{name}: every lower bound must be below its upper bound (not for "
                         f"feature(s) {bad}).")
    # Values are capped at 1e50 before any fit (skdp.utils._validation), and a
    # range narrower than 1e-30 would map results back by factors that overflow.
    if np.any(np.maximum(np.abs(lower), np.abs(upper)) > 1e50):
        raise ValueError(f"{name} must lie within +-1e50.")
    if np.any(upper - lower < 1e-30):
        raise ValueError(f"{name}: every range (upper - lower) must be at least 1e-30.")
    return lower, upper


def _by_name(bound, name: str, feature_names, n_values: int):
    """A bound given as a Series or dict, in the order of ``feature_names``; others unchanged.

    Applying a data dictionary's bounds by position would clip each column to
    another's range without a word, so names that do not match X's are an
    error. Keys 0, 1, ..., n_values - 1 that are not X's names are positions.
    """
    if isinstance(bound, pd.Series):
        keys, values = list(bound.index), bound
    elif isinstance(bound, Mapping):
        keys, values = list(bound), bound
    else:
        return bound
    names = None if feature_names is None else [str(f) for f in feature_names]
    if keys == list(range(n_values)) and (names is None or not set(map(str, keys)) <= set(names)):
        return [values[k] for k in keys]
    if names is None:
        raise ValueError(f"{name} gives bounds by column name, but X has no column names "
                         "(sklearn keeps string names only): pass X as a DataFrame with string "
                         "column names, or give the bounds as arrays in column order.")
    by_key = {str(k): k for k in keys}
    missing = [f for f in names if f not in by_key]
    extra = [str(k) for k in keys if str(k) not in names]
    if missing or extra or len(by_key) != len(keys):
        raise ValueError(f"{name} gives bounds by column name; they must name X's columns "
                         f"exactly once each (missing: {missing}, not in X: {extra}).")
    return [values[by_key[f]] for f in names]
