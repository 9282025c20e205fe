"""The Dask engine: sums over partitions, computed where the data live; noise in the driver.

Every release of skdp reads the private data through
:func:`skdp.utils._rows.sum_rows`. For a ``dask.array.Array`` or a
``dask.dataframe.DataFrame``/``Series`` this module turns the sum into one
task per partition (the statistic of that partition's rows: a clipped
gradient sum, a Gram or moment sum, the counts of a private quantile) and a
tree of additions, and computes it with whatever scheduler is active (the
default threads, or a ``distributed.Client``). Only the O(d**2) result comes
back to the driver, which adds the noise once. Nothing assumes a shared
filesystem or shared memory: tasks carry their functions (cloudpickled) and
read their partitions where they are.

Privacy of distributed execution: each row is in exactly one partition, so
it enters each sum once; no noise is added per partition; the noise is
drawn in the driver after the sum is computed, so a retried task cannot
redraw it.

Dask is optional (``pip install "skdp[dask]"``); this module imports it only
when it is handed a Dask collection.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from sklearn.base import is_regressor
from sklearn.exceptions import DataConversionWarning

from skdp.utils._warnings import warn

__all__ = ["dask_sum", "is_dask", "validate_dask"]


def is_dask(obj) -> bool:
    """Whether obj is a Dask collection (without importing Dask)."""
    return type(obj).__module__.split(".")[0] == "dask" and hasattr(obj, "__dask_graph__")


class _SchemaError(ValueError):
    """A schema error of skdp's own partition checks: its message names no value."""


_READ_FAILED = (
    "Computing on the Dask collection failed ({}). Its message is withheld: {} To see the "
    "message, compute the collection yourself, outside skdp.")
_READ_HINT = (
    "Dask's read errors can quote a value of the private data. A common cause: dd.read_csv "
    "guesses column types from the first block, and a later block disagrees (pass dtype=... "
    "to read_csv).")
#: Failures of the workers themselves, whose messages name no value but can name a task
#: key (a hash of the data, for an array made from memory) or a block's shape (set by
#: the rows' byte lengths, for read_csv).
_RESOURCE_FAILURES = {"builtins.MemoryError", "distributed.scheduler.KilledWorker"}
_RESOURCE_HINT = (
    "the workers ran out of memory or died, and such messages can name a hash of the data "
    "or a block's shape. Use smaller blocks (npartitions, blocksize) or more memory per "
    "worker.")


def read(call: Callable):
    """``call()``, which computes on a Dask collection; only skdp's schema errors keep their message.

    The replacement names the failure's type only, and is raised outside the
    ``except`` clause, so that it carries no ``__context__`` holding the
    original (a ``from None`` would only hide it from printed tracebacks).
    A distributed worker still logs the failed task's own error: that log is
    Dask's.
    """
    try:
        return call()
    except _SchemaError:
        raise
    except Exception as exc:
        failed = f"{type(exc).__module__}.{type(exc).__qualname__}"
    hint = _RESOURCE_HINT if failed in _RESOURCE_FAILURES else _READ_HINT
    raise ValueError(_READ_FAILED.format(failed, hint))


def compute(*collections):
    """``dask.compute`` through :func:`read`."""
    import dask

    return read(lambda: dask.compute(*collections))


def in_memory(*objs) -> list:
    """``objs`` with the Dask collections among them computed, in one pass, through :func:`read`."""
    lazy = [i for i, a in enumerate(objs) if is_dask(a)]
    out = list(objs)
    for i, value in zip(lazy, compute(*[objs[i] for i in lazy]) if lazy else ()):
        out[i] = value
    return out


def as_float64(a, error: Exception) -> np.ndarray:
    """``a`` as a float64 array; if it holds values that are not numbers, raise ``error``.

    Raised after the ``except`` clause: no ``__context__`` keeps numpy's
    message, which quotes the value (a ``from None`` only hides it).
    """
    try:
        return np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        pass
    raise error


def _check_block(block, index: int, labels: bool = False, max_abs: float = 1e50):
    """One partition as float64 (or labels), finite, capped: schema errors name the partition."""
    block = np.asarray(block)
    if labels:
        return block
    if np.iscomplexobj(block):  # astype would drop the imaginary part, with a warning
        raise _SchemaError(f"Partition {index} holds complex numbers: the data must be real.")
    block = as_float64(block, _SchemaError(f"Partition {index} holds values that are not "
                                           "numbers."))
    if not np.all(np.isfinite(block)):
        kind = "NaN" if np.any(np.isnan(block)) else "infinity"
        raise _SchemaError(f"Partition {index} contains {kind}: the private data must be finite "
                         "(drop or impute with rules that do not look at the data).")
    if block.size and (block.max() > max_abs or block.min() < -max_abs):
        block = np.clip(block, -max_abs, max_abs)
    return block


def _numeric_columns_message(estimator, frame) -> str | None:
    from pandas.api.types import is_bool_dtype, is_numeric_dtype

    bad = [str(c) for c, dt in frame.dtypes.items()
           if not (is_numeric_dtype(dt) or is_bool_dtype(dt))]
    if bad:
        return (f"{type(estimator).__name__} needs numeric data; non-numeric columns: {bad}. "
                "Encode categories with a category list you know without looking at the data.")
    return None


def _as_array(obj, what: str):
    """A Dask DataFrame/Series as a Dask array with known chunk sizes (one pass for the lengths)."""
    import dask.array as da

    if isinstance(obj, da.Array):
        if any(np.isnan(c) for chunks in obj.chunks for c in chunks):
            raise ValueError(f"{what} is a Dask array with unknown chunk sizes; call "
                             f"{what}.compute_chunk_sizes() first (the number of rows is "
                             "public and sets the noise).")
        return obj
    return read(lambda: obj.to_dask_array(lengths=True))  # a pass for the lengths


def _align(y, X, what: str):
    """y as a Dask array whose row chunks are X's (rechunked where they differ)."""
    import dask.array as da

    if y is None:
        return None
    if not is_dask(y):
        y = np.asarray(y)
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but {what} has {y.shape[0]}.")
        return da.from_array(y, chunks=(X.chunks[0],) + y.shape[1:])
    y = _as_array(y, what)
    if y.shape[0] != X.shape[0]:
        raise ValueError(f"X has {X.shape[0]} rows but {what} has {y.shape[0]}.")
    if y.chunks[0] != X.chunks[0]:
        # Rechunked, never refused: the weights reach here only after the charge (their
        # values were checked before it), and row i is row i whatever the partitions.
        y = y.rechunk((X.chunks[0],) + y.chunks[1:])
    return y


def validate_dask(estimator, X, y="no_validation", *, reset: bool = True, labels: bool = False,
                  ensure_min_samples: int = 1, **_):
    """Schema checks of Dask input; sets ``n_features_in_`` and ``feature_names_in_``.

    One pass over the partitions (before any budget is charged, as the
    in-memory validation) checks that every value is a finite number and
    that X and y are partitioned alike, counts the rows of a DataFrame's
    partitions, and raises a ValueError naming the first bad partition.
    Returns Dask arrays with known chunk sizes whose blocks are capped at
    1e50 in magnitude (as in memory) when they are read.
    """
    import dask

    names = None
    if hasattr(X, "columns"):
        message = _numeric_columns_message(estimator, X)
        if message:
            raise ValueError(message)
        columns = list(X.columns)
        if all(isinstance(c, str) for c in columns):
            names = np.asarray(columns, dtype=object)
    supervised = not (isinstance(y, str) and y == "no_validation")
    if supervised and y is None:
        raise ValueError(f"{type(estimator).__name__} requires y to be passed, but the target y "
                         "is None.")
    # One pass: every partition checked, the DataFrames' partitions counted.
    x_parts = _partitions(X, "X")
    y_parts = _partitions(y, "y") if supervised and is_dask(y) else None
    if y_parts is not None and len(y_parts) != len(x_parts):
        y_parts = None  # partitioned differently: aligned (rechunked) after the counts
    scans = [dask.delayed(_scan)(xb, None if y_parts is None else y_parts[i], i, labels)
             for i, xb in enumerate(x_parts)]
    lengths = compute(*scans)
    X = _with_lengths(X, [a for a, _ in lengths], "X")
    if X.ndim != 2:
        raise ValueError(f"Expected a 2-D Dask array, got {X.ndim} dimension(s); reshape it.")
    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    n, d = X.shape
    if n < ensure_min_samples:
        raise ValueError(f"Found array with {n} sample(s) while a minimum of "
                         f"{ensure_min_samples} is required by {type(estimator).__name__}.")
    if reset:
        estimator.n_features_in_ = d
        if names is not None:
            estimator.feature_names_in_ = names
        else:
            estimator.__dict__.pop("feature_names_in_", None)
    elif d != estimator.n_features_in_:
        raise ValueError(f"X has {d} features, but {type(estimator).__name__} is expecting "
                         f"{estimator.n_features_in_} features as input.")
    X = capped_values(X)
    if not supervised:
        return X
    if y_parts is not None:
        y = _with_lengths(y, [b for _, b in lengths], "y")
    elif is_dask(y):
        y = _with_lengths(y, None, "y")
        counted = compute(*[dask.delayed(_scan)(b, None, i, labels)[0]  # its own chunks
                                 for i, b in enumerate(_partitions(y, "y"))])
        y = _with_lengths(y, counted, "y")
    else:
        _check_block(np.asarray(y), 0, labels=labels)
    y = _align(y, X, "y")
    if y.ndim == 2 and y.shape[1] == 1:  # a one-column DataFrame, as in memory
        warn("A column-vector y was passed where a 1-D array was expected; it is "
                      "read as y[:, 0].", DataConversionWarning)
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, one label per row; got shape {y.shape}.")
    if not labels:
        y = capped_values(y)
    return X, y


def dask_transform(estimator, X, func, n_outputs: int):
    """``func`` mapped lazily over the row blocks of a Dask X: a transform that stays on Dask.

    The schema is checked as a fitted estimator's ``transform`` checks it
    (the number of features, and a DataFrame's column names against
    ``feature_names_in_``); each block is refused, when it is read, if it
    holds a NaN, an infinity, complex numbers or values that are not
    numbers (as in memory), and is capped at 1e50, as is ``func``'s output.
    Only a DataFrame's row counts are computed here (one pass); in a
    Pipeline the next step reads the output partition by partition.
    """
    import dask.array as da

    if hasattr(X, "columns"):
        fitted = getattr(estimator, "feature_names_in_", None)
        names = [str(c) for c in X.columns]
        if fitted is not None and names != [str(c) for c in fitted]:
            raise ValueError("The feature names should match those that were passed during "
                             "fit.")
    X = _as_array(X, "X")
    if X.ndim != 2 or X.shape[1] != estimator.n_features_in_:
        raise ValueError(f"X has {X.shape[1] if X.ndim == 2 else 'no'} features, but "
                         f"{type(estimator).__name__} is expecting {estimator.n_features_in_} "
                         "features as input.")
    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    return da.map_blocks(_mapped, X, func, dtype=np.float64,
                         chunks=(X.chunks[0], (int(n_outputs),)))


def _mapped(block, func, block_info=None):
    index = block_info[0]["chunk-location"][0] if block_info else 0
    block = _check_block(block, index)  # finite real numbers, capped
    with np.errstate(over="ignore", invalid="ignore"):
        return np.clip(func(block), -1e50, 1e50)


def _partitions(obj, what: str) -> list:
    """The partitions of a Dask collection as delayed objects (arrays: whole rows)."""
    import dask.array as da

    if isinstance(obj, da.Array):
        obj = _as_array(obj, what)
        if obj.ndim == 2 and obj.numblocks[1] != 1:
            obj = obj.rechunk({1: -1})
        return list(obj.to_delayed().ravel())
    return list(obj.to_delayed())


def _with_lengths(obj, lengths, what: str = "X"):
    """A Dask array with known chunks: arrays as they are, DataFrames with the counted lengths.

    An array's declared chunk sizes must be the rows its partitions hold
    (``lengths``, counted by the check): n, public, sets the noise, and a
    partition holding fewer rows than declared (``from_delayed`` over a
    filter, say) would make n wrong or fail a release after the charge.
    """
    import dask.array as da

    if isinstance(obj, da.Array):
        obj = _as_array(obj, what)
        # (Only for 1-D and 2-D: other shapes are refused by the caller's own check.)
        if (lengths is not None and obj.ndim <= 2
                and tuple(int(m) for m in lengths) != tuple(obj.chunks[0])):
            raise ValueError(
                f"{what}'s partitions hold {sum(int(m) for m in lengths)} rows in all, but its "
                f"chunks declare {obj.shape[0]}: build the array with its true chunk sizes "
                "(or call compute_chunk_sizes()); the number of rows sets the noise.")
        return obj
    return read(lambda: obj.to_dask_array(lengths=lengths if lengths is not None else True))


def _scan(xb, yb, index: int, labels: bool):
    """Check one partition of X (and y): numbers, finite, as many rows. Returns the row counts."""
    xb = _check_block(xb, index)
    if yb is None:
        return xb.shape[0], -1
    yb = _check_block(yb, index, labels=labels)
    if yb.shape[0] != xb.shape[0]:
        raise _SchemaError(f"Partition {index} of X has {xb.shape[0]} rows but that of y has "
                         f"{yb.shape[0]}: X and y are not partitioned alike.")
    return xb.shape[0], yb.shape[0]


def _capped(block):
    # The check read the source once; each release reads it again. Should the
    # source change in between (a file rewritten, a worker's retry), a value that
    # is not finite now is mapped, value by value (a fixed map: the guarantee holds
    # for the rows read), to 0 or the cap instead of failing after the charge.
    block = np.asarray(block, dtype=np.float64)
    if block.size and not (block.max() <= 1e50 and block.min() >= -1e50):
        block = np.clip(np.nan_to_num(block, nan=0.0, posinf=1e50, neginf=-1e50), -1e50, 1e50)
    return block


def capped_values(a):
    """A Dask array whose values are mapped by :func:`_capped` as each block is read."""
    import dask.array as da

    return da.map_blocks(_capped, a, dtype=np.float64)


def _call(stat: Callable, block_rows: int, *blocks):
    from skdp.utils._rows import sum_rows

    return sum_rows(stat, *blocks, block_rows=block_rows)  # in memory: cache-sized blocks


def _add(a, b):
    if isinstance(a, tuple):
        return tuple(_add(u, v) for u, v in zip(a, b))
    return a + b


def dask_sum(stat: Callable, arrays, block_rows: int = 1 << 16):
    """``sum over partitions p of stat(*[a[p] for a in arrays])``, computed by Dask.

    Arrays that are not Dask collections (numpy per-row weights, say) are
    chunked like the first Dask array; None stays None. Within a partition
    the sum runs block by block (``block_rows``), as in memory.
    """
    import dask
    import dask.array as da

    first = next(a for a in arrays if a is not None and is_dask(a))
    first = _as_array(first, "X")
    rows = first.chunks[0]
    delayed = []
    for a in arrays:
        if a is None:
            delayed.append(None)
            continue
        if not is_dask(a):
            a = np.asarray(a)
            a = da.from_array(a, chunks=(rows,) + a.shape[1:])
        a = _align(a, first, "an array") if a is not first else a
        if a.ndim == 2 and a.numblocks[1] != 1:
            a = a.rechunk({1: -1})
        delayed.append(a.to_delayed().ravel())
    parts = [dask.delayed(_call)(stat, block_rows, *[None if b is None else b[i] for b in delayed])
             for i in range(len(rows))]
    while len(parts) > 1:  # a tree of additions: depth log(partitions)
        parts = [dask.delayed(_add)(parts[i], parts[i + 1]) if i + 1 < len(parts) else parts[i]
                 for i in range(0, len(parts), 2)]
    (total,) = compute(parts[0])
    return total


def _aligned(X, others):
    X = _as_array(X, "X")
    if X.numblocks[1] != 1:
        X = X.rechunk({1: -1})
    return X, [None if o is None else _align(o, X, "y") for o in others]


def _check_partition(index: int, X, y, w, max_weight, classes, numeric_y=False) -> int:
    """Schema checks of one partition; returns its number of rows (public: the layout).

    Nothing else of it leaves the worker but pass or fail.
    """
    X = _check_block(X, index)
    for name, other in (("y", y), ("sample_weight", w)):
        if other is not None and np.shape(other)[0] != X.shape[0]:
            # Chunks declared unlike the rows they hold: refused before the first call.
            raise _SchemaError(f"Partition {index} of X has {X.shape[0]} rows but that of {name} "
                             f"has {np.shape(other)[0]}: give them their true chunk sizes.")
    if y is not None:
        y = np.asarray(y)
        if numeric_y and y.dtype.kind not in "fciub":
            # A regressor's labels: strings such as "n/a" fail here, not mid-stream.
            y = as_float64(y, _SchemaError(f"Partition {index} of y holds values that are not "
                                           "numbers."))
        if y.dtype.kind in "fc":
            _check_block(y, index)
        elif y.dtype.kind == "O" and any(v is None or v != v for v in y.ravel()):
            raise _SchemaError(f"Partition {index} of y contains missing labels.")
        if classes is not None and not np.all(np.isin(y, classes)):
            raise _SchemaError(f"Partition {index} of y holds labels outside classes.")
        if classes is not None:  # the per-call check, here before any release
            from sklearn.utils.multiclass import check_classification_targets

            try:
                check_classification_targets(y)
                problem = None
            except ValueError as exc:  # scikit-learn's message names the label type only
                problem = str(exc)
            if problem is not None:
                raise _SchemaError(problem)
    if w is not None:
        from skdp.utils._validation import _weight_block

        _weight_block(w, max_weight, index)
    return int(np.shape(X)[0])


def partial_fit_over_partitions(partial_fit: Callable, X, y=None, sample_weight=None,
                                classes=None):
    """Call ``partial_fit`` once per partition of a Dask X (with the aligned partitions of y).

    The driver holds one partition at a time; each call is what the
    estimator's ``partial_fit`` makes of a block of new rows (one step of a
    moment stream, the next steps of a one-pass regressor). The first call
    charges the budget; a row sits in one partition, so it is seen once.

    Every partition is checked first (finite numbers, labels present, weights
    in ``[0, max_weight]``), in one pass before the first call: a bad value in
    a late partition must not fail the stream after earlier partitions were
    released, since the natural retry would release them again without a
    new charge.

    Parameters
    ----------
    partial_fit : callable
        A bound ``partial_fit(X, [y,] [sample_weight=...])``.
    X : Dask array or DataFrame
    y, sample_weight : Dask or numpy arrays, optional
    classes : array-like, optional
        A classifier's declared labels: passed to the first call, and every
        partition's labels are checked against them.

    Returns
    -------
    estimator
    """
    import dask

    estimator = getattr(partial_fit, "__self__", None)
    stream = _stream_state(estimator)
    if stream:  # a stream under way that cannot continue is refused before any read
        from skdp.base import check_stream_continues

        check_stream_continues(stream)
    regressor = estimator is not None and is_regressor(estimator)
    max_weight = float(getattr(estimator, "max_weight", 1.0))
    # A stream under way keeps the weight bound of its first call (1 if that had no
    # weights): check every partition against it, or a late one would fail after
    # the early ones were released.
    state = getattr(estimator, "_state", None)
    if isinstance(state, dict) and "W" in state:
        max_weight = min(max_weight, float(state["W"]))
    # A Dask DataFrame's string column names go with every partition (as pandas), so
    # that the stream keeps feature_names_in_ and bounds given by name align.
    columns = list(X.columns) if hasattr(X, "columns") else None
    if columns is not None and not all(isinstance(c, str) for c in columns):
        columns = None
    Xa, (ya, wa) = _aligned(X, (y, sample_weight))
    sizes = compute(*[dask.delayed(_check_partition)(
        i, Xa.blocks[i], None if ya is None else ya.blocks[i],
        None if wa is None else wa.blocks[i], max_weight,
        None if classes is None else np.asarray(classes), regressor)
        for i in range(Xa.numblocks[0])])
    # An empty partition (left by a filter) holds no rows: it is no call. Its size is
    # public, and as a call it would fail after the earlier partitions were released.
    # With every partition empty, the first call raises the usual error on no rows.
    calls = [i for i, m in enumerate(sizes) if m > 0] or [0]
    # Checks that depend on the partitions' sizes only (public), by the estimator.
    check_sizes = getattr(estimator, "_check_call_sizes", None)
    if check_sizes is not None and sizes[calls[0]] > 0:
        check_sizes([sizes[i] for i in calls])
    released = False
    try:
        for i in calls:
            _partial_fit_partition(partial_fit, i, Xa, ya, wa, y, sample_weight, classes,
                                   regressor, max_weight, columns)
            classes, released = None, True
    except BaseException:
        # Earlier partitions were released: a retry would release them again. The
        # stream ends here (skdp.base.check_stream_continues); a failing call marks
        # its own stream once it has begun drawing.
        if released:
            _end_stream(estimator)
        raise
    return estimator


def _stream_state(estimator) -> dict | None:
    """The state of the stream of ``estimator`` (or of the moment stream it wraps), if any."""
    state = getattr(estimator, "_state", None)
    if not isinstance(state, dict):  # PrivateGaussianDensity continues its moment stream
        state = getattr(getattr(estimator, "_moments", None), "_state", None)
    return state if isinstance(state, dict) else None


def _end_stream(estimator) -> None:
    """Mark the stream of ``estimator`` (or of the moment stream it wraps) as failed."""
    state = _stream_state(estimator)
    if state is not None:
        state["failed"] = True


def _partial_fit_partition(partial_fit, i, Xa, ya, wa, y, sample_weight, classes, regressor,
                           max_weight, columns=None) -> None:
    """One call of :func:`partial_fit_over_partitions`: partition i, read and mapped."""
    from skdp.utils._validation import _bounded_weights

    Xb, yb, wb = compute(Xa.blocks[i], None if ya is None else ya.blocks[i],
                         None if wa is None else wa.blocks[i])
    # Read again since the check: mapped into what it accepted (see validate_dask),
    # so that a source changed in between cannot fail a call after earlier releases.
    Xb = _capped(Xb)
    if regressor and yb is not None:
        yb = _capped(yb)
    if wb is not None:
        wb = _bounded_weights(wb, max_weight)
    if columns is not None:
        import pandas as pd

        Xb = pd.DataFrame(Xb, columns=columns)
    args = (Xb,) if y is None else (Xb, yb)
    kwargs = {} if sample_weight is None else {"sample_weight": wb}
    if classes is not None:
        kwargs["classes"] = classes
    partial_fit(*args, **kwargs)
