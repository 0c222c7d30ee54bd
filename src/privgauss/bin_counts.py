"""Per-axis bin counts of in-memory rows in one blockwise pass: the histograms that the
stability-histogram localisation (:mod:`privgauss.gaussian.histogram`, after Karwa–Vadhan
2018 and Kamath et al. 2019) releases, without materialising an (n, d) key array.

:func:`location_key_counts` counts, per axis k, the location keys
⌊clip((x_k − o_k)/w_k, ±L)⌋ (or, on *exact* axes, the bits of x_k itself);
:func:`log_scale_key_counts` counts the scale keys ⌊log2 |x_{s,k} − x_{f,k}| + u_k⌋ of pair
differences (a fixed key for a zero difference). Each returns, per axis, the distinct keys in
increasing order and their counts — exactly ``np.unique(keys[:, k], return_counts=True)`` of
the whole key array: every key equals the floating-point formula applied to its own entry
(the location keys by the same operations; the scale keys from the entry's exponent and
mantissa bits, with the formula itself near bin edges), computed block by block (transposed,
so each axis is contiguous) in reused buffers; short key ranges are counted with
``np.bincount`` instead of a sort. Nothing here is
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


class _Counts:
    """Per axis, the counts of the key blocks seen so far: dense runs (first key, counts of
    the keys first, first + 1, …) for axes whose keys span a short range, (keys, counts)
    pairs for the others."""

    def __init__(self, d: int) -> None:
        self.dense: list[list[tuple[int, np.ndarray]]] = [[] for _ in range(d)]
        self.sparse: list[list[KeyCounts]] = [[] for _ in range(d)]

    def add(self, K: np.ndarray) -> None:
        """Add the counts of a block of keys K (d, rows); K is overwritten. The axes whose
        keys span a short range are counted together, in one ``np.bincount`` (each axis
        shifted to its own range of bins); the others one by one (:func:`key_counts`)."""
        d, r = K.shape
        lo, hi = K.min(axis=1).tolist(), K.max(axis=1).tolist()  # Python ints: no overflow
        limit = _DENSE_SLACK * r + 256
        dense = [j for j in range(d) if hi[j] - lo[j] <= limit]
        for j in range(d):
            if hi[j] - lo[j] > limit:
                self.sparse[j].append(key_counts(K[j]))
        if not dense:
            return
        base = [0]
        for j in dense:
            base.append(base[-1] + hi[j] - lo[j] + 1)
        shift = np.array([b - lo[j] for j, b in zip(dense, base, strict=False)],
                         dtype=np.int64)[:, None]
        if len(dense) == d:
            np.add(K, shift, out=K)
            idx = K.reshape(-1) if K.flags.c_contiguous else K.ravel()
        else:
            idx = (K[dense] + shift).ravel()
        c = np.bincount(idx, minlength=base[-1])
        for i, j in enumerate(dense):
            self.dense[j].append((lo[j], c[base[i] : base[i + 1]]))

    def result(self) -> list[KeyCounts]:
        out = []
        for runs, pairs in zip(self.dense, self.sparse, strict=True):
            if runs:
                glo = min(a for a, _ in runs)
                total = np.zeros(max(a + c.size for a, c in runs) - glo, dtype=np.int64)
                for a, c in runs:
                    total[a - glo : a - glo + c.size] += c
                nz = np.flatnonzero(total)
                pairs = [*pairs, ((nz + glo).astype(np.int64), total[nz])]
            out.append(_merge(pairs))
        return out


def _block(n_rows: int, d: int) -> int:
    return max(1, min(n_rows, max(1024, _BLOCK_VALUES // max(d, 1))))


def location_key_counts(X: np.ndarray, offset: np.ndarray, width: np.ndarray, limit: float,
                        exact: np.ndarray) -> list[KeyCounts]:
    """Per axis k of the numpy rows ``X`` (n ≥ 1), the distinct location keys and their
    counts: keys ``floor(clip((x_k − offset_k) / width_k, −limit, limit))`` as int64, or for
    ``exact[k]`` the bits of x_k + 0.0 as int64 (−0.0 folded into 0.0)."""
    n, d = X.shape
    off = np.asarray(offset, dtype=np.float64)[:, None]
    w = np.asarray(width, dtype=np.float64)[:, None]
    ex = np.flatnonzero(np.asarray(exact, dtype=bool))
    b = _block(n, d)
    F, K = np.empty((d, b)), np.empty((d, b), dtype=np.int64)
    counts = _Counts(d)
    with np.errstate(over="ignore", invalid="ignore"):
        for a in range(0, n, b):
            B = X[a : a + b]
            f, k = F[:, : B.shape[0]], K[:, : B.shape[0]]
            np.subtract(B.T, off, out=f)  # transposed: each axis contiguous
            np.divide(f, w, out=f)
            np.clip(f, -limit, limit, out=f)
            np.floor(f, out=f)
            np.copyto(k, f, casting="unsafe")  # as astype(np.int64)
            for j in ex:
                np.add(B[:, j], 0.0, out=f[j])
                k[j] = f[j].view(np.int64)
            counts.add(k)
    return counts.result()


_MANTISSA = (1 << 52) - 1
_NEAR = 1e-9  # a mantissa this close (relative) to an axis's bin edge is keyed by log2 itself
_EDGE_U = 1e-10  # an axis whose shift is this close to 0 or 1 is keyed by log2 throughout


def _log2_keys(y: np.ndarray, u: np.ndarray, zero_key: int, out: np.ndarray,
               e: np.ndarray, t: np.ndarray, near: np.ndarray, flag: np.ndarray) -> None:
    """``out`` = floor(log2(y) + u) as int64 (``zero_key`` where y is not positive) for a
    block y ≥ 0 (d, r) and per-axis shifts u (d, 1) in [0, 1), equal to that formula in float
    arithmetic entry by entry, from the bits of y instead of a log2 per entry.

    For a normal y = 2^E·m (m in [1, 2)), log2 y + u = E + log2 m + u with log2 m + u in
    [0, 2), so the key is E + [m ≥ 2^(1−u)]. The float formula rounds log2 y and the sum by
    at most a few ulps of |log2 y| ≤ 1075 (below 1e-11 absolute), so it gives the same key
    unless log2 m + u is within that of an integer: entries whose mantissa lies within a
    relative 1e-9 of the edge 2^(1−u), axes with u within 1e-10 of 0 or 1, and zeros,
    subnormals, infinities and NaNs are keyed by the formula itself. ``e``, ``t`` (int64) and
    ``near``, ``flag`` (bool) are scratch buffers of y's shape."""
    bits = y.view(np.int64)
    np.right_shift(bits, 52, out=e)  # the biased exponent (y ≥ 0: no sign bit)
    np.bitwise_and(bits, _MANTISSA, out=t)  # the mantissa's bits
    edge = np.exp2(1.0 - u)  # (d, 1) in (1, 2]
    tb = np.rint((edge - 1.0) * 2.0**52).astype(np.int64)
    np.greater(t, tb, out=flag)
    np.add(e, flag, out=out)
    np.subtract(out, 1023, out=out)
    np.subtract(t, tb, out=t)
    np.abs(t, out=t)
    np.less(t, int(_NEAR * 2.0**52), out=near)
    np.subtract(e, 1, out=e)
    np.greater(e.view(np.uint64), 2045, out=flag)  # exponent field 0 or 2047
    np.logical_or(near, flag, out=near)
    edge_axes = np.flatnonzero((u[:, 0] < _EDGE_U) | (u[:, 0] > 1.0 - _EDGE_U))
    near[edge_axes] = True
    idx = np.flatnonzero(near)
    if idx.size:
        r = y.shape[1]
        v = y.reshape(-1)[idx]
        with np.errstate(divide="ignore", invalid="ignore"):
            k = np.where(v > 0, np.floor(np.log2(v) + u[idx // r, 0]), float(zero_key))
        out.reshape(-1)[idx] = k.astype(np.int64)


def log_scale_key_counts(X: np.ndarray, first: np.ndarray, second: np.ndarray,
                         shift: np.ndarray, zero_key: int) -> list[KeyCounts]:
    """Per axis k, the distinct scale keys of the pair differences y = |x_second − x_first|
    (pairs of row indices of the numpy rows ``X``, at least one pair) and their counts: keys
    ``floor(log2(y_k) + shift_k)`` as int64 (``shift`` in [0, 1)), ``zero_key`` where y_k is
    not positive (:func:`_log2_keys`). The differences are formed block by block, never held
    all at once."""
    first = np.asarray(first, dtype=np.intp)
    second = np.asarray(second, dtype=np.intp)
    m, d = first.size, X.shape[1]
    u = np.asarray(shift, dtype=np.float64)[:, None]
    if not np.all((u >= 0.0) & (u < 1.0)):
        raise ValueError("shift must lie in [0, 1)")
    b = _block(m, d)
    G1, G2, Y = np.empty((b, d)), np.empty((b, d)), np.empty((d, b))
    K, E, T = (np.empty((d, b), dtype=np.int64) for _ in range(3))
    near, flag = np.empty((d, b), dtype=bool), np.empty((d, b), dtype=bool)
    counts = _Counts(d)
    with np.errstate(over="ignore", invalid="ignore"):
        for a in range(0, m, b):
            r = min(b, m - a)
            g1, g2 = G1[:r], G2[:r]
            np.take(X, second[a : a + r], axis=0, out=g2)
            np.take(X, first[a : a + r], axis=0, out=g1)
            y = Y[:, :r] if r == b else np.empty((d, r))  # contiguous: its bits are viewed
            np.subtract(g2.T, g1.T, out=y)  # transposed: each axis contiguous
            np.abs(y, out=y)
            k = K[:, :r] if r == b else np.empty((d, r), dtype=np.int64)
            scratch = ((E, T, near, flag) if r == b else
                       (np.empty((d, r), dtype=np.int64), np.empty((d, r), dtype=np.int64),
                        np.empty((d, r), dtype=bool), np.empty((d, r), dtype=bool)))
            _log2_keys(y, u, zero_key, k, *scratch)
            counts.add(k)
    return counts.result()
