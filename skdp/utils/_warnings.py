"""skdp's warnings: marked as skdp's, and pointing at the user's line however deep they are raised."""

from __future__ import annotations

import contextlib
import os
import sys
import warnings

import joblib
import sklearn

import skdp

# scikit-learn's Pipeline calls its steps through joblib's Memory; a context manager
# (clipping_report) warns from inside contextlib's __enter__.
_LIBRARY_PATHS = (tuple(os.path.dirname(m.__file__) + os.sep for m in (skdp, sklearn, joblib))
                 + (contextlib.__file__,))


def user_stacklevel() -> int:
    """The ``stacklevel`` of :func:`warnings.warn` that names the first frame outside skdp.

    Call it in the argument list of ``warnings.warn``. Frames of skdp,
    scikit-learn and joblib (``fit``'s ``_fit_context`` wrapper, the Dask
    partition loop, a Pipeline, a search) are skipped, so the warning shows the line of the
    user's code that called into them, on every path.

    Examples
    --------
    >>> import warnings
    >>> from skdp.utils._warnings import user_stacklevel
    >>> def f():
    ...     warnings.warn("hello", UserWarning, stacklevel=user_stacklevel())
    """
    level, frame = 1, sys._getframe(1)  # level 1: the function that calls warnings.warn
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_LIBRARY_PATHS):
        frame, level = frame.f_back, level + 1
    return level


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """Raise one of skdp's warnings, at the user's line (:func:`user_stacklevel`).

    Every warning skdp raises inside a fit is computed from released or
    public quantities only (the non-private helpers ``estimand()`` and
    ``clipping_report()`` warn about themselves), and is marked as skdp's, so
    that a private search can tell it from a warning of a user's step, which
    may depend on the data (:func:`is_skdp_warning`).

    Examples
    --------
    >>> import warnings
    >>> from skdp.utils._warnings import is_skdp_warning, warn
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn("from skdp")
    ...     warnings.warn("from elsewhere")
    >>> [is_skdp_warning(w) for w in caught]
    [True, False]
    """
    instance = category(message)
    instance._skdp = True
    warnings.warn(instance, stacklevel=user_stacklevel())


def is_skdp_warning(record: warnings.WarningMessage) -> bool:
    """Whether a recorded warning was raised by :func:`warn`."""
    return getattr(record.message, "_skdp", False) is True
