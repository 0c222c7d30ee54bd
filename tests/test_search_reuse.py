"""A radius search's counts and the step's clipped moments, computed from one pass
(prepare_moments) or from the rows' summaries, equal those of the separate passes exactly:
the same counts for every radius of the grid, and bit-identical moments and clipped count —
on rows with gross errors, rows within a few ulps of the smallest ball, far-out rows (the
float64 fallback of a block) and a frame far from 0."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from privgauss import clipped_stats as cs
from privgauss.backends import reduce_rows
from privgauss.clipped_stats import outside
from privgauss.gaussian.coinpress import radius_search as cr


def _rows(rng: np.random.Generator, n: int, d: int, A: np.ndarray, s: np.ndarray,
          grid: np.ndarray, far: bool) -> np.ndarray:
    X = s + np.linalg.solve(A, rng.standard_normal((n, d)).T * 1.3).T
    k = n // 20
    U = rng.standard_normal((k, d))
    U /= np.linalg.norm(U, axis=1)[:, None]
    radii = rng.choice(grid, size=(k, 1)) * (1.0 + rng.integers(-4, 5, (k, 1)) * 1e-16)
    X[:k] = s + np.linalg.solve(A, (U * radii).T).T  # on the spheres of the grid
    X[k : k + 5] = s + 1e3 * rng.standard_normal((5, d))  # gross errors
    if far:
        X[k + 5] = s + 1e9  # a row beyond the float32 tier's limit: its block runs in float64
    return np.ascontiguousarray(X[rng.permutation(n)])


def _old_counts(X: np.ndarray, A: np.ndarray, s: np.ndarray, grid: tuple[float, ...]
                ) -> np.ndarray:
    kernel = partial(cr._norms_kernel, P=None, p0=None, A=A, s=s, center=np.zeros(A.shape[0]),
                     grid=np.asarray(grid))
    return np.rint(reduce_rows(X, kernel)[0]).astype(np.int64)


@pytest.mark.parametrize("trial", range(6))
def test_counts_and_moments_from_one_pass(trial: int) -> None:
    rng = np.random.default_rng(100 + trial)
    d = int(rng.integers(2, 12))
    n = int(rng.integers(9000, 20000))
    A = rng.standard_normal((d, d)) * 0.2 + np.eye(d)
    s = rng.standard_normal(d) * (1e3 if trial % 3 == 2 else 1.0)
    tau0 = float(np.sqrt(d) + 2.0)
    grid = tuple(float(x) for x in np.geomspace(tau0, 8.0 * tau0, 7))
    X = _rows(rng, n, d, A, s, np.asarray(grid), far=trial % 2 == 1)
    want_counts = _old_counts(X, A, s, grid)
    for tau in (grid[0], grid[3], grid[-1]):
        ref_rows = cs.Rows(X)
        ref = cs.clipped_moments(ref_rows, A, s, tau)
        rows = cs.Rows(X)
        got_counts = cr.outside_counts(rows, A, s, np.zeros(d), grid)
        assert rows.moments_memo is not None  # the fused pass ran
        np.testing.assert_array_equal(got_counts, want_counts)
        got = cs.clipped_moments(rows, A.copy(), s.copy(), tau)
        assert rows.moments_memo is None  # used once
        assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1])
        assert rows.outside_memo is not None and ref_rows.outside_memo is not None
        assert rows.outside_memo[3] == ref_rows.outside_memo[3]


def test_a_different_frame_or_a_smaller_radius_reads_the_rows() -> None:
    rng = np.random.default_rng(7)
    X = rng.standard_normal((9000, 4)) * 1.5
    A, s = np.eye(4), np.zeros(4)
    grid = (3.0, 4.0, 5.0)
    for tau, A2 in ((2.5, A), (3.0, 1.01 * A)):  # below the grid, or another frame
        rows = cs.Rows(X)
        cr.outside_counts(rows, A, s, np.zeros(4), grid)
        got = cs.clipped_moments(rows, A2, s, tau)
        ref = cs.clipped_moments(cs.Rows(X), A2, s, tau)
        assert np.array_equal(got[0], ref[0]) and np.array_equal(got[1], ref[1])


def test_counts_from_the_summaries() -> None:
    """With the fast summaries computed, only the candidate rows are evaluated: the same
    counts, for a ball about 0 and about another centre."""
    rng = np.random.default_rng(3)
    d = 6
    X = rng.standard_normal((20000, d)) @ (np.eye(d) + 0.3 * rng.standard_normal((d, d)))
    X[:7] += 50.0
    rows = cs.Rows(X)
    assert rows.summary() is not None
    A = np.linalg.inv(np.linalg.cholesky(np.cov(X.T)))
    s = X.mean(0)
    grid = tuple(float(x) for x in np.geomspace(3.0, 30.0, 15))
    for center in (np.zeros(d), np.full(d, 0.2)):
        kernel = partial(cr._norms_kernel, P=None, p0=None, A=A, s=s, center=center,
                         grid=np.asarray(grid))
        want = np.rint(reduce_rows(X, kernel)[0]).astype(np.int64)
        idx = rows.outside_candidates(A, s, center, grid[0])
        assert idx is not None and idx.size < X.shape[0] // 2
        np.testing.assert_array_equal(cr.outside_counts(rows, A, s, center, grid), want)


@pytest.mark.parametrize("trial", range(4))
def test_clipped_count_from_the_summaries(trial: int) -> None:
    """With the summaries computed, the clipped count evaluates only the candidate rows: the
    per-row definition's sum, on rows within a few ulps of the sphere."""
    rng = np.random.default_rng(200 + trial)
    d = int(rng.integers(2, 9))
    n = int(rng.integers(6000, 15000))
    A = rng.standard_normal((d, d)) * 0.3 + np.eye(d)
    s = rng.standard_normal(d)
    tau = float(rng.uniform(2.0, 5.0))
    center = np.zeros(d) if trial % 2 == 0 else rng.standard_normal(d) * 0.1
    X = rng.standard_normal((n, d)) * 1.5 + s
    k = n // 3
    U = rng.standard_normal((k, d))
    U /= np.linalg.norm(U, axis=1)[:, None]
    U *= tau * (1.0 + rng.integers(-4, 5, (k, 1)) * 1e-16)
    X[:k] = s + np.linalg.solve(A, (U + center).T).T
    X = np.ascontiguousarray(X[rng.permutation(n)])
    rows = cs.Rows(X)
    assert rows.summary() is not None
    assert rows.outside_candidates(A, s, center, tau) is not None
    want = int(np.count_nonzero(outside.outside_rows(X, A, s, center, tau)))
    assert rows.clipped_count(A, s, center, tau) == want
