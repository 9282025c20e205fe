"""Settings for the whole test session (tests, doctests of skdp and of the user guide).

The suite runs on pytest-xdist workers, one per core (``-n auto`` in
``pyproject.toml``): on the 2-core machines it is written for, that halves
its wall time (7:48 for the whole suite with the floor-version environment
cached, against 18:36 in one process).
"""

import os

import pytest

# The longest tests (the suite at the minimum versions, the privacy audits, the
# docs build) go first: the workers take tests in collection order and steal
# from each other's queues (``--dist worksteal``), so a long test started last
# would run alone at the end while the other workers idle.
LONG_FIRST = ("tests/test_min_versions.py", "tests/audit/", "tests/test_docs.py")

if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
    # One BLAS thread per worker: the workers already keep every core busy, and
    # oversubscribed BLAS threads make the many small products wait on each
    # other. The environment variables reach the subprocesses (the examples,
    # the suite at the minimum versions).
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: not item.nodeid.startswith(LONG_FIRST))  # stable otherwise


@pytest.fixture
def fail_on_call(monkeypatch):
    """Make the ``call``-th call of ``owner.name`` raise ``error``; returns the undo.

    For the tests of a call that fails part-way through its releases (a memory
    error between two noise draws, an interrupt between two partitions).
    """

    def patch(owner, name: str, call: int, error=MemoryError):
        real, calls = getattr(owner, name), []

        def failing(*args, **kwargs):
            calls.append(1)
            if len(calls) == call:
                raise error
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, failing)
        return lambda: monkeypatch.setattr(owner, name, real)

    return patch
