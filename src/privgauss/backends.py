"""One pass over the rows of a data matrix: numpy in memory, or dask chunks.

Every private statistic of the Gaussian estimators is a sum over rows of a per-row function
(clipped row, clipped outer product, ...). :func:`reduce_rows` applies a per-block numpy kernel
to cache-sized row blocks of a numpy array, or to every row chunk of a ``dask.array`` (each
chunk again in row blocks) and adds the partial results, so data larger than memory streams
through one chunk at a time. :func:`map_rows` does the same for per-row outputs (a few floats
per row), :func:`take_rows` fetches a handful of rows. Nothing here is private or released:
these are computations whose results the callers clip and noise.

Data on disk: :func:`open_array` opens a ``.npy`` file (read in blocks, never loaded whole) or a
``.zarr`` directory (if zarr is installed) as a dask array. The clipped statistics built on
these passes (:class:`~privgauss.clipped_stats.Rows`, one-pass clipped moments) are in
:mod:`privgauss.clipped_stats`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .exceptions import InvalidDataError

__all__ = [
    "DEFAULT_MAX_MEMORY_BYTES",
    "as_rows",
    "public_rows",
    "block_rows",
    "in_memory",
    "is_dask",
    "map_rows",
    "open_array",
    "pair_differences",
    "reduce_rows",
    "take_rows",
]

#: Default limit for estimators that must hold the data in memory (``max_memory_bytes``).
DEFAULT_MAX_MEMORY_BYTES = 4 * 2**30

Kernel = Callable[[np.ndarray], Sequence[np.ndarray]]


def is_dask(X: Any) -> bool:
    """True for dask collections (anything with a task graph)."""
    return hasattr(X, "__dask_graph__")


def block_rows(d: int) -> int:
    """Rows per block: about 1 MB of float64, so a block stays in cache between operations."""
    return max(256, (1 << 17) // max(int(d), 1))


def as_rows(
    X: Any, *, name: str = "X", min_rows: int = 1, n_features: int | None = None
) -> Any:
    """Rows that the trust boundary (:mod:`privgauss.validation`, called by the estimators, the
    command line and :mod:`privgauss.io`) has validated, as a 2-D float64 array: a numpy array
    (not copied when it is float64 already) or a dask array (left lazy).

    Only public facts are checked here — the number of dimensions, rows and columns — so an
    error can never depend on a record. Values are not inspected: the algorithms treat every
    value per record (a non-finite or overflowing transformed row is mapped as if clipped, see
    :func:`privgauss.clipped_stats.sanitize_rows`), which is what keeps a direct call with raw
    rows private as well."""
    if not is_dask(X):
        X = np.asarray(X, dtype=np.float64)
    elif X.dtype != np.float64:
        X = X.astype(np.float64)
    if X.ndim != 2:
        raise InvalidDataError(f"{name} must be a 2-D array of shape (n_samples, n_features)")
    n, d = X.shape
    if d != d or n != n:  # NaN: a dask array with unknown chunk sizes
        raise InvalidDataError(
            f"{name} is a dask array with unknown chunk sizes; call {name}.compute_chunk_sizes()"
        )
    if int(n) < min_rows:
        raise InvalidDataError(
            f"{name} has {int(n)} rows but this method needs at least {min_rows}"
        )
    if n_features is not None and int(d) != n_features:
        raise InvalidDataError(f"{name} has {int(d)} features but {n_features} were expected")
    return X


def public_rows(
    X: Any, *, name: str = "public data", min_rows: int = 1, n_features: int | None = None
) -> np.ndarray:
    """Public rows as a 2-D float64 numpy array (a single row of shape (d,) is accepted).
    Public data are public: unlike private rows they may be refused for their values (NaN or
    infinite entries), here as at the trust boundary."""
    P = np.asarray(X, dtype=np.float64)
    if P.ndim == 1:
        P = P.reshape(1, -1)
    P = as_rows(P, name=name, min_rows=min_rows, n_features=n_features)
    if not np.isfinite(P).all():
        raise InvalidDataError(f"{name} contains NaN or infinite values; remove them")
    return P


def row_chunks(X: Any) -> Any:
    """The dask array with each chunk spanning all columns (rows are the only split)."""
    if len(X.chunks[1]) != 1:
        X = X.rechunk({1: -1})
    return X


def _reduce_numpy(X: np.ndarray, kernel: Kernel, block: int | None) -> list[np.ndarray]:
    step = block or block_rows(X.shape[1])
    total: list[np.ndarray] | None = None
    for a in range(0, X.shape[0], step):
        part = kernel(X[a : a + step])
        if total is None:
            total = [np.array(p, dtype=np.float64, copy=True) for p in part]
        else:
            for t, p in zip(total, part, strict=True):
                t += p
    assert total is not None
    return total


def as_block(chunk: Any) -> np.ndarray:
    """A chunk of rows as a float64 numpy block."""
    return np.asarray(chunk, dtype=np.float64)


def _reduce_chunk(chunk: Any, kernel: Kernel, block: int | None) -> list[np.ndarray]:
    """Task of :func:`reduce_rows` on one dask chunk (module level: picklable to workers)."""
    return _reduce_numpy(as_block(chunk), kernel, block)


def reduce_rows(X: Any, kernel: Kernel, *, block: int | None = None) -> list[np.ndarray]:
    """Σ over row blocks B of ``kernel(B)`` (a sequence of arrays, added elementwise).

    ``X`` is a 2-D numpy array (never copied: the kernel sees views of row blocks) or a
    ``dask.array`` (each row chunk is computed, cut into blocks and reduced; the chunk results
    are added in a tree, :data:`REDUCE_FAN` at a time in chunk order, on the workers). The
    kernel gets float64 blocks of at most ``block`` rows.

    For dask input the kernel is shipped to the workers: it must pickle with the standard
    :mod:`pickle` — a module-level function, a :func:`functools.partial` of one, or an
    instance of a module-level class; never a lambda or a closure (they do not reach process
    workers of a ``dask.distributed`` cluster reliably, and a closure over an object drags
    that object along)."""
    if not is_dask(X):
        return _reduce_numpy(X, kernel, block)
    import dask

    parts = [
        dask.delayed(_reduce_chunk)(chunk, kernel, block)
        for chunk in row_chunks(X).to_delayed().ravel()
    ]
    # a tree of sums where the chunks are (REDUCE_FAN at a time, in chunk order): only the
    # total comes back, and a kernel with a large output (the atom counts' d × 2^14 cells)
    # never has every chunk's result in memory at once
    while len(parts) > 1:
        parts = [dask.delayed(_add_parts)(*parts[a : a + REDUCE_FAN])
                 for a in range(0, len(parts), REDUCE_FAN)]
    (total,) = dask.compute(parts[0])
    return [np.asarray(t) for t in total]


#: chunk results added per task of :func:`reduce_rows`' tree (dask input)
REDUCE_FAN = 8


def _add_parts(*results: list[np.ndarray]) -> list[np.ndarray]:
    """Task of :func:`reduce_rows`' tree: the elementwise sum of chunk results, in order
    (module level: picklable to workers)."""
    total = [np.array(p, copy=True) for p in results[0]]
    for r in results[1:]:
        for t, p in zip(total, r, strict=True):
            t += p
    return total


def _map_numpy(X: np.ndarray, kernel: Kernel, block: int | None) -> list[np.ndarray]:
    step = block or block_rows(X.shape[1])
    pieces = [kernel(X[a : a + step]) for a in range(0, X.shape[0], step)]
    return [np.concatenate([p[k] for p in pieces]) for k in range(len(pieces[0]))]


def _map_chunk(chunk: Any, kernel: Kernel, block: int | None) -> list[np.ndarray]:
    """Task of :func:`map_rows` on one dask chunk (module level: picklable to workers)."""
    return _map_numpy(as_block(chunk), kernel, block)


def map_rows(X: Any, kernel: Kernel, *, block: int | None = None) -> list[np.ndarray]:
    """Per-row outputs: ``kernel(B)`` returns arrays whose first axis runs over the rows of the
    block B; the pieces are concatenated in row order (numpy or dask input, as
    :func:`reduce_rows`, with the same picklable-kernel rule for dask input). Meant for a few
    numbers per row."""
    if not is_dask(X):
        return _map_numpy(X, kernel, block)
    import dask

    parts = [
        dask.delayed(_map_chunk)(chunk, kernel, block)
        for chunk in row_chunks(X).to_delayed().ravel()
    ]
    results = dask.compute(*parts)
    return [np.concatenate([r[k] for r in results]) for k in range(len(results[0]))]


def pair_differences(X: Any, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """The rows ``X[second] − X[first]`` (pairs of row indices, any order) as a float64 numpy
    array of shape (len(first), d).

    A numpy ``X`` is indexed directly. A dask ``X`` is streamed once, chunk by chunk (one
    chunk in memory at a time), and never gathered whole: each pair's row is added into the
    output when the chunk holding ``second`` is read and subtracted when the chunk holding
    ``first`` is, so only the output (the size of the pairs) is held. The result equals the
    direct difference bit for bit (0 + a − b and 0 − b + a both round to fl(a − b)). Random
    pairings need this: a random gather from a dask array would hold every row of it at
    once."""
    first = np.asarray(first, dtype=np.intp)
    second = np.asarray(second, dtype=np.intp)
    if not is_dask(X):
        return np.asarray(X[second], dtype=np.float64) - np.asarray(X[first], dtype=np.float64)
    Xr = row_chunks(X)
    out = np.zeros((first.size, int(X.shape[1])))
    bounds = np.cumsum((0, *Xr.chunks[0]))
    sides = []
    for idx in (second, first):
        order = np.argsort(idx, kind="stable")
        sides.append((idx, order, np.searchsorted(idx[order], bounds)))
    for c in range(len(bounds) - 1):
        if all(cut[c] == cut[c + 1] for _, _, cut in sides):
            continue
        rows = as_block(Xr.blocks[c].compute())
        for add, (idx, order, cut) in zip((True, False), sides, strict=True):
            j = order[cut[c] : cut[c + 1]]
            part = rows[idx[j] - bounds[c]]
            if add:
                out[j] += part
            else:
                out[j] -= part
    return out


def take_rows(X: Any, idx: np.ndarray) -> np.ndarray:
    """The rows ``X[idx]`` (``idx`` sorted, increasing) as a float64 numpy array."""
    if not is_dask(X):
        return np.asarray(X[idx], dtype=np.float64)
    if idx.size == 0:
        return np.empty((0, int(X.shape[1])))
    return as_block(X[idx].compute())


def in_memory(X: Any, *, name: str = "X", max_memory_bytes: int = DEFAULT_MAX_MEMORY_BYTES) -> Any:
    """``X`` itself when it is not a dask array, else its computed numpy array — refused with
    :class:`InvalidDataError` (before reading anything) when n·d·8 bytes exceeds
    ``max_memory_bytes``. For estimators that need random access to all rows."""
    if not is_dask(X):
        return X
    n, d = X.shape
    if n != n or d != d:  # NaN: unknown chunk sizes
        raise InvalidDataError(
            f"{name} is a dask array with unknown chunk sizes; call {name}.compute_chunk_sizes()"
        )
    need = int(n) * int(d) * 8
    if need > int(max_memory_bytes):
        raise InvalidDataError(
            f"{name} ({int(n)} x {int(d)} float64, {need / 2**30:.1f} GiB) is larger than "
            f"max_memory_bytes={int(max_memory_bytes)}; this method holds the data in memory: "
            "raise max_memory_bytes or use a streaming Gaussian method"
        )
    return np.asarray(X.compute(), dtype=np.float64)


class _NpyRows:
    """Read-only array view of a 2-D ``.npy`` file that reads only the requested rows
    (``os.pread``), so streaming it keeps no pages of the file mapped in the process. It
    holds the file's absolute path (each read opens and closes the file), so it pickles into
    a dask graph and reads on the workers of a cluster that share the file system."""

    def __init__(self, path: Path) -> None:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            else:
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            self._offset = f.tell()
        if len(shape) != 2 or fortran or dtype.hasobject:
            raise InvalidDataError(
                f"{path.name} must hold a 2-D C-ordered numeric array to be streamed"
            )
        self.path = path.resolve()  # workers may run in another directory
        self.shape = (int(shape[0]), int(shape[1]))
        self.dtype = dtype
        self.ndim = 2

    def __getitem__(self, key: Any) -> np.ndarray:
        rows, cols = key if isinstance(key, tuple) else (key, slice(None))
        if not isinstance(rows, slice):
            raise TypeError("only row slices are supported")
        a, b, step = rows.indices(self.shape[0])
        if step != 1:
            raise TypeError("only contiguous row slices are supported")
        width = self.shape[1] * self.dtype.itemsize
        count = max(b - a, 0)
        out = np.empty((count, self.shape[1]), dtype=self.dtype)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            view = out.data.cast("B")
            got = 0
            while got < count * width:
                k = os.preadv(fd, [view[got:]], self._offset + a * width + got)
                if k <= 0:
                    raise InvalidDataError(f"{self.path.name} is truncated")
                got += k
        finally:
            os.close(fd)
        return out[:, cols]


def open_array(path: str | os.PathLike[str], *, chunk_bytes: int = 64 * 2**20) -> Any:
    """A dask array over chunked on-disk data, read lazily: a ``.npy`` file (rows read in
    chunks of about ``chunk_bytes``; the file is never loaded whole) or a ``.zarr`` directory
    (needs the ``zarr`` package)."""
    import dask.array as da

    p = Path(path)
    if p.suffix == ".zarr" or (p.is_dir() and (p / ".zarray").exists()):
        try:
            import zarr  # noqa: F401
        except ImportError:
            raise InvalidDataError("reading .zarr data needs the zarr package") from None
        return da.from_zarr(str(p))
    if p.suffix != ".npy":
        raise InvalidDataError(f"{p.name}: streaming reads .npy files or .zarr directories")
    if not p.is_file():
        raise InvalidDataError(f"{p.name} does not exist")
    src = _NpyRows(p)
    rows = max(1, int(chunk_bytes) // (src.shape[1] * src.dtype.itemsize))
    return da.from_array(src, chunks=(rows, src.shape[1]), asarray=True, fancy=False,
                         name=f"npy-{p.resolve()}-{p.stat().st_mtime_ns}")
