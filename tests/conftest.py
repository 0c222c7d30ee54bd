"""Suite-wide settings, and fixtures for the data and priors many test files build."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

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


# -- data the tests build again and again ---------------------------------------------------


@pytest.fixture(scope="session")
def gaussian_rows() -> Callable[..., np.ndarray]:
    """``gaussian_rows(n, d=3, seed=0, scale=1.0)``: n rows of N(0, scale²·I_d), the seed's
    own stream (the same rows for the same arguments in every test)."""

    def make(n: int, d: int = 3, seed: int = 0, scale: float = 1.0) -> np.ndarray:
        return np.random.default_rng(seed).normal(size=(n, d)) * scale

    return make


@pytest.fixture(scope="session")
def two_clusters() -> Callable[..., np.ndarray]:
    """``two_clusters(n=3000, seed=0)``: two unit-covariance clusters in d = 2, 40 % of the
    rows around (6, 6) and 60 % around (0, 0), shuffled."""

    def make(n: int = 3000, seed: int = 0) -> np.ndarray:
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(n, 2))
        X[: n * 2 // 5] += 6.0
        return rng.permutation(X)

    return make


@pytest.fixture(scope="session")
def wide_prior() -> dict[str, Any]:
    """A prior wide enough for unit-scale test rows (``mean_bound=100``, eigenvalues in
    [1e-3, 1e3]): the bounds a user who knows the data's range would give."""
    return {"mean_bound": 100.0, "cov_bounds": (1e-3, 1e3)}
