"""The keys the localisation's histograms (:mod:`.histogram_localise`) count, per axis:
⌊log2 |Y_jk| + u_k⌋ of the pair differences (scale), ⌊(x_k − o_k) / w_k⌋ of the rows
(location) and the exact float64 values of a tied axis — read block by block from numpy rows
(:mod:`privgauss.bin_counts`) or in one chunked pass over dask rows.

Each record contributes one key per axis (one pair difference per record in the scale
histograms), which is what the histograms' replace-one sensitivity assumes; nothing is
released here.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ..backends import is_dask, map_rows, take_rows
from ..bin_counts import location_key_counts

ZERO_KEY = -(2**40)  # scale key of an exactly zero pair difference
KEY_LIMIT = float(2**62)  # location keys are clipped to +-this (saturated keys fail)

# (keys, counts) of one axis: one key per record (counts None), or the distinct keys, sorted,
# with their counts (a histogram streamed from dask chunks)
AxisKeys = Callable[[int], tuple[np.ndarray, np.ndarray | None]]


def axis_counts(keys: AxisKeys, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct keys of axis k, sorted, and their counts."""
    axis_keys, counts = keys(k)
    if counts is None:
        return np.unique(axis_keys, return_counts=True)
    return axis_keys, counts


def pair_scale_keys(Y: np.ndarray, u: np.ndarray, k: int) -> tuple[np.ndarray, None]:
    """The scale keys ⌊log2 |Y_jk| + u_k⌋ of axis k (ZERO_KEY for a zero difference)."""
    y = Y[:, k]
    with np.errstate(divide="ignore"):
        L = np.log2(y)
    return np.where(y > 0, np.floor(L + u[k]), ZERO_KEY).astype(np.int64), None


def location_keys(B: np.ndarray, offset: np.ndarray, w: np.ndarray,
                   tied: np.ndarray) -> np.ndarray:
    """The location keys ⌊(x_k − o_k) / w_k⌋ of a block of rows, clipped to ±KEY_LIMIT; on
    the tied axes the exact-value keys (a choice made from releases)."""
    with np.errstate(over="ignore", invalid="ignore"):
        q = (B - offset) / w
    keys = np.floor(np.clip(q, -KEY_LIMIT, KEY_LIMIT)).astype(np.int64)
    for j in np.flatnonzero(tied):
        keys[:, j] = value_keys(B[:, j])
    return keys


def _location_count_kernel(B: np.ndarray, offset: np.ndarray, w: np.ndarray,
                           tied: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """((axis, key) pairs, counts) of the location keys of a block: the kernel of the chunked
    location pass (module level: picklable to dask workers)."""
    keys = location_keys(B, offset, w, tied)
    pairs, counts = [], []
    for k in range(keys.shape[1]):
        u, c = np.unique(keys[:, k], return_counts=True)
        pairs.append(np.column_stack([np.full(u.size, k, dtype=np.int64), u]))
        counts.append(c.astype(np.int64))
    return np.concatenate(pairs), np.concatenate(counts)


def _merged_counts(pairs: np.ndarray, counts: np.ndarray, k: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The distinct keys of axis k, sorted, and their total counts over all blocks."""
    sel = pairs[:, 0] == k
    keys, inv = np.unique(pairs[sel, 1], return_inverse=True)
    total = np.zeros(keys.size, dtype=np.int64)
    np.add.at(total, inv, counts[sel])
    return keys, total


def value_keys(col: np.ndarray) -> np.ndarray:
    """Exact-value keys of a column: the bits of each float64 value (−0.0 folded into 0.0), so
    that the stability histogram releases the values many rows share."""
    return (np.asarray(col, dtype=np.float64) + 0.0).view(np.int64)


def subset_rows(X: Any, idx: np.ndarray) -> np.ndarray:
    """The rows ``X[idx]`` in the order of ``idx`` (distinct indices), as a numpy array; dask
    rows are read in increasing order (:func:`~privgauss.backends.take_rows`)."""
    if not is_dask(X):
        return np.take(X, idx, axis=0)
    order = np.argsort(idx)
    out = np.empty((idx.size, int(X.shape[1])))
    out[order] = take_rows(X, idx[order])
    return out


def location_counts(rows: Any, offset: np.ndarray, w: np.ndarray, exact: np.ndarray
                     ) -> AxisKeys:
    """Per axis, the distinct location keys of ``rows`` and their counts (exact-value keys on
    the ``exact`` axes): dask rows in one chunked pass, numpy rows block by block."""
    if is_dask(rows):
        kc = map_rows(rows, partial(_location_count_kernel, offset=offset, w=w, tied=exact))
        return partial(_merged_counts, kc[0], kc[1])
    return location_key_counts(rows, offset, w, KEY_LIMIT, exact).__getitem__


def pick_counts(subset: AxisKeys, full: AxisKeys, pos: dict[int, int], k: int
                 ) -> tuple[np.ndarray, np.ndarray | None]:
    """Axis k's counts: from ``full`` (at position ``pos[k]``) for the axes in ``pos``, else
    from ``subset``."""
    return full(pos[k]) if k in pos else subset(k)
