"""Per-axis bin counts of in-memory rows in one blockwise pass: the histograms that the
stability-histogram localisation (:mod:`privgauss.gaussian.histogram`, after Karwa–Vadhan
2018 and Kamath et al. 2019) releases, without materialising an (n, d) key array.

:func:`location_key_counts` counts, per axis k, the location keys
⌊clip((x_k − o_k)/w_k, ±L)⌋ (or, on *exact* axes, the bits of x_k itself);
:func:`log_scale_key_counts` counts the scale keys ⌊log2 |x_{s,k} − x_{f,k}| + u_k⌋ of pair
differences (a fixed key for a zero difference). Each returns, per axis, the distinct keys in
increasing order and their counts — exactly ``np.unique(keys[:, k], return_counts=True)`` of
the whole key array: every key is the same floating-point function of its own entry, evaluated
with the same operations, block by block (transposed, so each axis is contiguous), in reused
buffers; short key ranges are counted with ``np.bincount`` instead of a sort. Nothing here is
released: the callers add the noise, and the neighbour relation and sensitivity are those of
the histograms themselves (replace-one moves one record in every axis).
"""

from __future__ import annotations

import numpy as np

__all__ = ["key_counts", "location_key_counts", "log_scale_key_counts"]

KeyCounts = tuple[np.ndarray, np.ndarray]

_BLOCK_VALUES = 1 << 16  # values per block: the block and its buffers stay in cache
_DENSE_SLACK = 4  # a key range up to this many times the column length is counted densely


def key_counts(keys: np.ndarray) -> KeyCounts:
    """(distinct keys in increasing order, their counts) of a 1-D integer array: the result
    of ``np.unique(keys, return_counts=True)`` (int64 arrays). Keys within a short range are
    counted with ``np.bincount``; one far key below the others (a sentinel such as the scale
    key of a zero difference) is counted apart."""
    keys = np.asarray(keys, dtype=np.int64)
    if keys.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    lo, hi = int(keys.min()), int(keys.max())  # Python ints: the range cannot overflow
    if hi - lo <= _DENSE_SLACK * keys.size + 256:
        c = np.bincount(keys - np.int64(lo))
        nz = np.flatnonzero(c)
        return (nz + lo).astype(np.int64), c[nz].astype(np.int64)
    low = keys == lo
    rest = keys[~low]
    if rest.size and hi - int(rest.min()) <= _DENSE_SLACK * rest.size + 256:
        k, c = key_counts(rest)
        return (np.concatenate([np.array([lo], dtype=np.int64), k]),
                np.concatenate([np.array([keys.size - rest.size], dtype=np.int64), c]))
    k, c = np.unique(keys, return_counts=True)
    return k.astype(np.int64), c.astype(np.int64)


def _merge(parts: list[KeyCounts]) -> KeyCounts:
    """The (keys, counts) of a whole column from the (keys, counts) of its blocks."""
    if len(parts) == 1:
        return parts[0]
    keys = np.concatenate([k for k, _ in parts])
    counts = np.concatenate([c for _, c in parts])
    lo, hi = int(keys.min()), int(keys.max())
    if hi - lo <= _DENSE_SLACK * keys.size + 256:
        total = np.zeros(hi - lo + 1, dtype=np.int64)
        np.add.at(total, keys - np.int64(lo), counts)
        nz = np.flatnonzero(total)
        return (nz + lo).astype(np.int64), total[nz]
    u, inv = np.unique(keys, return_inverse=True)
    total = np.zeros(u.size, dtype=np.int64)
    np.add.at(total, inv, counts)
    return u.astype(np.int64), total


class _Blocks:
    """Reused buffers for blocks of up to ``b`` rows of d axes, kept transposed (d, b), and
    the per-axis counts of the blocks seen so far."""

    def __init__(self, n_rows: int, d: int) -> None:
        self.b = max(1, min(n_rows, max(1024, _BLOCK_VALUES // max(d, 1))))
        self.T = np.empty((d, self.b))  # the block's values, one contiguous row per axis
        self.F = np.empty((d, self.b))  # float keys
        self.K = np.empty((d, self.b), dtype=np.int64)
        self.mask = np.empty((d, self.b), dtype=bool)
        self.parts: list[list[KeyCounts]] = [[] for _ in range(d)]

    def load(self, B: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Copy a (rows, d) block in transposed; the views (T, F, K, mask) of its size."""
        r = B.shape[0]
        T, F, K, mask = self.T[:, :r], self.F[:, :r], self.K[:, :r], self.mask[:, :r]
        np.copyto(T, B.T)
        return T, F, K, mask

    def count(self, K: np.ndarray) -> None:
        for j, col in enumerate(K):
            self.parts[j].append(key_counts(col))

    def result(self) -> list[KeyCounts]:
        return [_merge(p) for p in self.parts]


def location_key_counts(X: np.ndarray, offset: np.ndarray, width: np.ndarray, limit: float,
                        exact: np.ndarray) -> list[KeyCounts]:
    """Per axis k of the numpy rows ``X`` (n ≥ 1), the distinct location keys and their
    counts: keys ``floor(clip((x_k − offset_k) / width_k, −limit, limit))`` as int64, or for
    ``exact[k]`` the bits of x_k + 0.0 as int64 (−0.0 folded into 0.0)."""
    n, d = X.shape
    off = np.asarray(offset, dtype=np.float64)[:, None]
    w = np.asarray(width, dtype=np.float64)[:, None]
    ex = np.flatnonzero(np.asarray(exact, dtype=bool))
    blk = _Blocks(n, d)
    with np.errstate(over="ignore", invalid="ignore"):
        for a in range(0, n, blk.b):
            T, F, K, _ = blk.load(X[a : a + blk.b])
            np.subtract(T, off, out=F)
            np.divide(F, w, out=F)
            np.clip(F, -limit, limit, out=F)
            np.floor(F, out=F)
            np.copyto(K, F, casting="unsafe")  # as astype(np.int64)
            for j in ex:
                np.add(T[j], 0.0, out=F[j])
                K[j] = F[j].view(np.int64)
            blk.count(K)
    return blk.result()


def log_scale_key_counts(X: np.ndarray, first: np.ndarray, second: np.ndarray,
                         shift: np.ndarray, zero_key: int) -> list[KeyCounts]:
    """Per axis k, the distinct scale keys of the pair differences y = |x_second − x_first|
    (pairs of row indices of the numpy rows ``X``, at least one pair) and their counts: keys
    ``floor(log2(y_k) + shift_k)`` as int64, ``zero_key`` where y_k is not positive. The
    differences are formed block by block, never held all at once."""
    first = np.asarray(first, dtype=np.intp)
    second = np.asarray(second, dtype=np.intp)
    m, d = first.size, X.shape[1]
    u = np.asarray(shift, dtype=np.float64)[:, None]
    blk = _Blocks(m, d)
    G1, G2 = np.empty((blk.b, d)), np.empty((blk.b, d))
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        for a in range(0, m, blk.b):
            r = min(blk.b, m - a)
            g1, g2 = G1[:r], G2[:r]
            np.take(X, second[a : a + r], axis=0, out=g2)
            np.take(X, first[a : a + r], axis=0, out=g1)
            np.subtract(g2, g1, out=g2)
            T, F, K, mask = blk.load(g2)
            np.abs(T, out=T)
            np.log2(T, out=F)
            np.add(F, u, out=F)
            np.floor(F, out=F)
            np.greater(T, 0.0, out=mask)
            np.logical_not(mask, out=mask)
            np.copyto(F, float(zero_key), where=mask)
            np.copyto(K, F, casting="unsafe")
            blk.count(K)
    return blk.result()
