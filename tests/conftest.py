"""Suite-wide settings."""

from __future__ import annotations

import os

_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def pytest_configure(config: object) -> None:
    # The README's `python -m pytest -n 2` runs one pytest-xdist worker per core. BLAS and
    # OpenMP start a pool of one thread per core in every worker, so two workers oversubscribe
    # the cores (and idle pool threads spin). Each worker therefore runs its numerical libraries
    # on one thread, unless the caller chose a thread count. Only the speed changes: the suite's
    # checks do not depend on the number of BLAS threads.
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        return
    if any(var in os.environ for var in _THREAD_VARS):
        return
    for var in _THREAD_VARS:
        os.environ[var] = "1"  # libraries loaded later (and subprocesses) start with one thread
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)  # the ones already loaded
