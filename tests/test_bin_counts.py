"""The blockwise per-axis bin counts of the localisation (privgauss.bin_counts) equal, bit for
bit, np.unique of the histogram module's own key definitions over all rows at once — on data
with the defects that exercise every branch: ties and zero differences (the sentinel key),
exact-value axes, keys saturated at the limit, heavy tails, scales from 1e-300 to 1e300."""

from __future__ import annotations

import numpy as np
import pytest

from privgauss.bin_counts import key_counts, location_key_counts, log_scale_key_counts
from privgauss.gaussian import histogram_keys as h


def _tables() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    return [
        rng.standard_normal((30_001, 7)) * np.exp(rng.standard_normal(7) * 3) + 100.0,
        np.round(rng.standard_cauchy((20_003, 4)) * 10.0),  # ties, heavy tails
        rng.integers(0, 2, size=(9_999, 3)).astype(float),  # 0/1 flags: many zero differences
        rng.standard_cauchy((5_001, 3)) ** 7,  # values up to float range
        np.array([[1.0, -0.0], [0.0, 1e308], [-1e308, 5.0]]),
    ]


def _unique(col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.unique(col, return_counts=True)


@pytest.mark.parametrize("t", range(5))
def test_scale_counts_equal_the_reference_keys(t: int) -> None:
    X = _tables()[t]
    rng = np.random.default_rng(t)
    n, d = X.shape
    perm, u, m = rng.permutation(n), rng.random(d), n // 2
    Y = np.abs(X[perm[0 : 2 * m : 2]] - X[perm[1 : 2 * m : 2]])
    got = log_scale_key_counts(X, perm[1 : 2 * m : 2], perm[0 : 2 * m : 2], u, h.ZERO_KEY)
    for k in range(d):
        want = _unique(h.pair_scale_keys(Y, u, k)[0])
        np.testing.assert_array_equal(got[k][0], want[0])
        np.testing.assert_array_equal(got[k][1], want[1])
        assert got[k][0].dtype == np.int64 and got[k][1].dtype == np.int64


@pytest.mark.parametrize("t", range(5))
@pytest.mark.parametrize("scale", [1.0, 1e-300])
def test_location_counts_equal_the_reference_keys(t: int, scale: float) -> None:
    X = _tables()[t]
    rng = np.random.default_rng(10 + t)
    d = X.shape[1]
    for tied in (np.zeros(d, bool), rng.random(d) < 0.5, np.ones(d, bool)):
        w = np.exp(rng.standard_normal(d) * 4) * scale
        off = rng.random(d) * w
        with np.errstate(all="ignore"):
            K = h.location_keys(X, off, w, tied)
        got = location_key_counts(X, off, w, h.KEY_LIMIT, tied)
        for k in range(d):
            want = _unique(K[:, k])
            np.testing.assert_array_equal(got[k][0], want[0])
            np.testing.assert_array_equal(got[k][1], want[1])


def test_key_counts_is_unique_with_counts() -> None:
    rng = np.random.default_rng(0)
    for keys in (np.array([5]), np.array([-(2**62), 2**62]), np.array([-(2**40), 3, 3, 4]),
                 np.array([-(2**40), -(2**40)]), rng.integers(-(2**62), 2**62, 1000),
                 rng.integers(-3, 4, 5000)):
        got, want = key_counts(keys), _unique(keys)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])


def test_log2_keys_equal_the_float_formula_at_bin_edges_and_special_values() -> None:
    from privgauss.bin_counts import _log2_keys

    rng = np.random.default_rng(3)
    us = np.array([0.0, 1e-11, 0.3, 0.5, 0.999, 1.0 - 1e-11, *rng.random(4)])
    d = us.size
    cols = []
    for k in range(d):
        j = rng.integers(-1070, 1020, 300).astype(float)
        edges = np.exp2(j + 1.0 - us[k])  # the bin edges of the axis, and their neighbours
        v = np.concatenate([edges, np.nextafter(edges, 0), np.nextafter(edges, np.inf),
                            np.abs(rng.standard_normal(300)) * 10.0 ** rng.integers(-300, 300, 300),
                            [0.0, 5e-324, 1e-310, 2.2250738585072014e-308, 1.0, 2.0, 1.7e308,
                             np.inf, np.nan]])
        cols.append(v[:1200])
    y = np.ascontiguousarray(np.array(cols))
    u = us[:, None]
    out = np.empty(y.shape, dtype=np.int64)
    scratch = (np.empty(y.shape, dtype=np.int64), np.empty(y.shape, dtype=np.int64),
               np.empty(y.shape, dtype=bool), np.empty(y.shape, dtype=bool))
    with np.errstate(all="ignore"):
        _log2_keys(y, u, h.ZERO_KEY, out, *scratch)
        want = np.where(y > 0, np.floor(np.log2(y) + u), h.ZERO_KEY).astype(np.int64)
    np.testing.assert_array_equal(out, want)
