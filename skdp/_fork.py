"""Which process is this: the one that imported skdp, a forked copy of it, or a worker.

A process made by ``os.fork`` inherits every object of its parent, generators
and live streams included: two children that go on drawing from one inherited
state add the same noise, and the difference of their releases removes it.
Each forked child gets a fresh random token here. ``skdp/__init__.py`` imports
this module (it needs nothing but the standard library), so the hook is in
place from ``import skdp`` on; a fork before that is not seen.
"""

from __future__ import annotations

import os
import secrets

_TOKEN: int | None = None  # None in a process not forked from one that imported skdp


def _after_fork_in_child() -> None:
    global _TOKEN
    _TOKEN = secrets.randbits(128)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def fork_token() -> int | None:
    """Identifies this process among those forked from one another (None if never forked).

    A stream's state records it when the stream starts; a copy inherited by a
    forked child has another token and refuses to continue
    (:class:`skdp.base.StreamStateMixin`).
    """
    return _TOKEN


def in_worker_process() -> bool:
    """A process forked after skdp was imported, or started by multiprocessing (any method).

    Such a process holds copies of its parent's objects, or of a task's
    arguments (a Generator pickled once per task): two of them, or two tasks
    in one, can hold the same generator state.
    """
    import multiprocessing

    return _TOKEN is not None or multiprocessing.parent_process() is not None
