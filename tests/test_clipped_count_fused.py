"""The clipped count that clipped_moments' pass leaves for Rows.clipped_count equals the sum of
the per-row verdict of its definition (outside_rows) — on rows placed within a few ulps of the
sphere in the clipping frame, in both the float32 and float64 tiers, with and without excluded
rows — and so does the separate counting pass: one per-row function, sensitivity 1."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from privgauss import clipped_stats as cs
from privgauss.backends import reduce_rows
from privgauss.clipped_stats import outside


def _boundary_rows(rng: np.random.Generator, n: int, d: int, A: np.ndarray, s: np.ndarray,
                   tau: float) -> np.ndarray:
    X = rng.standard_normal((n, d))
    k = n // 3
    U = rng.standard_normal((k, d))
    U /= np.linalg.norm(U, axis=1)[:, None]
    U *= tau * (1.0 + rng.integers(-4, 5, (k, 1)) * 1e-16)
    X[:k] = s + np.linalg.solve(A, U.T).T
    return np.ascontiguousarray(X[rng.permutation(n)])


@pytest.mark.parametrize("trial", range(8))
def test_fused_count_is_the_per_row_definition(trial: int) -> None:
    rng = np.random.default_rng(trial)
    d = int(rng.integers(1, 9))
    n = int(rng.integers(5000, 12000))
    A = rng.standard_normal((d, d)) + (3.0 if trial % 2 else 0.2) * np.eye(d)  # both tiers
    s = rng.standard_normal(d) * (1e3 if trial % 4 == 3 else 1.0)
    tau = float(rng.uniform(1.0, 5.0))
    X = _boundary_rows(rng, n, d, A, s, tau)
    exclude = np.sort(rng.choice(n, size=n // 10, replace=False)) if trial % 3 == 0 else None
    rows = cs.Rows(X)
    cs.clipped_moments(rows, A, s, tau, exclude=exclude)
    want = int(np.count_nonzero(outside.outside_rows(X, A, s, np.zeros(d), tau)))
    assert rows.outside_memo is not None and rows.outside_memo[3] == want
    assert rows.clipped_count(A.copy(), s.copy(), np.zeros(d), tau) == want
    # the separate pass (a frame clipped_moments did not see) sums the same verdicts
    passes = reduce_rows(X, partial(outside.outside_exact_kernel, A=A, s=s, center=np.zeros(d),
                                    tau=tau))
    assert int(round(float(passes[0]))) == want
    assert cs.Rows(X).clipped_count(A, s, np.zeros(d), tau) == want


def test_count_of_a_different_ball_is_not_taken_from_the_pass() -> None:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((6000, 3))
    A, s = np.eye(3), np.zeros(3)
    rows = cs.Rows(X)
    cs.clipped_moments(rows, A, s, 2.0)
    for tau, center in ((1.5, np.zeros(3)), (2.0, np.full(3, 0.5))):
        want = int(np.count_nonzero(np.linalg.norm(X - center, axis=1) > tau))
        assert rows.clipped_count(A, s, center, tau) == want
