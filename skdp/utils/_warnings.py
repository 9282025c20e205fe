"""Warnings that point at the user's line, however deep in skdp or scikit-learn they are raised."""

from __future__ import annotations

import contextlib
import os
import sys

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
