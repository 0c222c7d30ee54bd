"""The one-pass map-and-jitter of the bound-free refinement's rows equals mapping
(transform_rows) then jittering (jitter_rows) with the same seed, bit for bit — across the
jitter's blocks of signs, for d = 1 and wider rows — and declines (None) when a mapped row
leaves ±1e150, where the separate map sends the row far."""

from __future__ import annotations

import numpy as np
import pytest

from privgauss.clipped_stats import transform_rows
from privgauss.gaussian import ridge
from privgauss.noise import NoiseSource


@pytest.mark.parametrize(("n", "d"), [(1, 1), (70_001, 1), (140_000, 3), (5000, 57)])
def test_same_rows_as_map_then_jitter(n: int, d: int) -> None:
    rng = np.random.default_rng(n + d)
    X = rng.standard_normal((n, d)) * 50.0 + 7.0
    a, c = 1.0 / rng.uniform(0.5, 3.0, d), rng.standard_normal(d)
    seed = ridge.jitter_seed(NoiseSource(3))
    got = ridge.transform_jittered(X, a, c, 0.123, seed)
    want = ridge.jitter_rows(transform_rows(X, a, c), 0.123, NoiseSource(3), owned=True,
                             seed=seed)
    assert got is not None and np.array_equal(got, want)
    # the signs are the generator's bytes (np.random.default_rng([seed, k]).bytes)
    signs = np.frombuffer(np.random.default_rng([seed, 0]).bytes(65536 * d), dtype=np.int8)
    k = min(n, 65536) * d
    np.testing.assert_array_equal(np.sign(got - transform_rows(X, a, c)).reshape(-1)[:k],
                                  np.where(signs[:k] < 0, -1.0, 1.0))


def test_declines_rows_sent_far() -> None:
    X = np.ones((100, 2))
    X[50, 1] = 1e300
    assert ridge.transform_jittered(X, np.full(2, 1e-3), np.zeros(2), 0.1, 5) is None
    assert ridge.transform_jittered(np.asfortranarray(np.ones((10, 2))), np.ones(2),
                                    np.zeros(2), 0.1, 5) is None
