"""Per-record maps of validated rows into a public or released frame, sanitised so that an
overflowing row is sent to a far point (clipped, and counted as clipped) instead of raising.

Each map is a fixed function of one record given public quantities, so it keeps every
sensitivity computed downstream (:mod:`privgauss.sensitivity`); nothing here is released.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from ..backends import as_block, is_dask, row_chunks

__all__ = ["MAX_VALUE", "TRANSFORM_VALUES", "affine_rows", "mapped_chunk", "mapped_inputs",
           "sanitize_rows", "transform_rows"]

MAX_VALUE = 1e150  # larger magnitudes (and NaN) are sanitised to this before any arithmetic


def sanitize_rows(Y: np.ndarray) -> np.ndarray:
    """Map each row with a non-finite entry or an entry above 1e150 in magnitude to the far
    point (1e150, …, 1e150): outside every clipping ball, so it is clipped — and counted as
    clipped by every DP clipped count — like any other row far from the data.

    For rows produced by a public transform of validated data: a fixed per-record map, so it
    keeps every sensitivity, and unlike validation it never raises on private values. (Mapping
    such rows to the centre instead would hide them: a table with many overflowing rows would
    report few rows clipped.)"""
    with np.errstate(invalid="ignore"):
        if Y.size == 0 or (Y.max() <= MAX_VALUE and Y.min() >= -MAX_VALUE):  # NaN: False
            return Y  # the common case, without a temporary the size of Y
        bad = ~(np.abs(Y) <= MAX_VALUE).all(axis=1)
    if bad.any():
        Y = Y.copy()
        Y[bad] = MAX_VALUE
    return Y


def _transform_block(
    B: np.ndarray, A: np.ndarray | None, shift: np.ndarray | None
) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        W = B if shift is None else B - shift
        if A is not None and A.ndim == 1:
            W = W * A if W is B else np.multiply(W, A, out=W)  # W is a fresh temporary
        elif A is not None:
            W = W @ A.T
    return sanitize_rows(W)


TRANSFORM_VALUES = 1 << 15  # values per block of the diagonal transform (cache-sized)


def _transform_diagonal(X: np.ndarray, a: np.ndarray | None, shift: np.ndarray | None
                        ) -> np.ndarray:
    """:func:`_transform_block` for a diagonal map of C-contiguous rows: the same elementwise
    operations, computed block by block on flat views against tiled copies of ``shift`` and
    ``a`` (no broadcasting over a short last axis, one output array, no temporaries)."""
    n, d = X.shape
    out = np.empty((n, d))
    step = max(1, TRANSFORM_VALUES // max(d, 1))
    ts = None if shift is None else np.tile(shift, step)
    ta = None if a is None else np.tile(a, step)
    bad = False
    with np.errstate(over="ignore", invalid="ignore"):
        for a0 in range(0, n, step):
            xb = X[a0 : a0 + step].reshape(-1)
            ob = out[a0 : a0 + step].reshape(-1)
            k = xb.size
            if ts is not None:
                np.subtract(xb, ts[:k], out=ob)
                if ta is not None:
                    np.multiply(ob, ta[:k], out=ob)
            else:
                assert ta is not None
                np.multiply(xb, ta[:k], out=ob)
            if k and not (ob.max() <= MAX_VALUE and ob.min() >= -MAX_VALUE):  # NaN: bad
                bad = True
    return sanitize_rows(out) if bad else out


def transform_rows(X: Any, A: np.ndarray | None = None, shift: np.ndarray | None = None) -> Any:
    """The rows (x_i − shift)·Aᵀ (``A`` a matrix, a vector for a diagonal map, or None for the
    identity) with :func:`sanitize_rows` applied: a row that overflows, or reaches a magnitude
    above 1e150, in the new frame is mapped to a far point — clipped, and counted as clipped.

    The map the algorithms use whenever they move validated rows into a public or released
    frame (whitening by a known covariance, public preconditioning, rescaling by a released
    scale, projection): a fixed function of each record given public quantities, so every
    sensitivity computed downstream holds, and unlike validation it never raises or warns on a
    private value. numpy rows are transformed at once; dask rows lazily, chunk by chunk, with a
    picklable kernel."""
    A = None if A is None else np.asarray(A, dtype=np.float64)
    shift = None if shift is None else np.asarray(shift, dtype=np.float64)
    if not is_dask(X):
        Xn = np.asarray(X, dtype=np.float64)
        if (Xn.ndim == 2 and Xn.flags.c_contiguous and (A is None or A.ndim == 1)
                and (A is not None or shift is not None)):
            return _transform_diagonal(Xn, A, shift)
        return _transform_block(Xn, A, shift)
    d_out = int(X.shape[1]) if A is None or A.ndim == 1 else int(A.shape[0])
    Xr = row_chunks(X)
    return Xr.map_blocks(
        partial(_transform_block, A=A, shift=shift), dtype=np.float64,
        chunks=(Xr.chunks[0], (d_out,)),
    )


def affine_rows(Y: np.ndarray, A: np.ndarray | None, shift: np.ndarray | None = None) -> np.ndarray:
    """(Y − shift) Aᵀ row by row (A None: the identity); a row that overflows is mapped to the
    far point of :func:`sanitize_rows` (clipped, and counted as clipped). A fixed per-record
    map (given public or released A, shift): it never raises on extreme data and keeps the
    sensitivity of the clipped statistic computed from it."""
    with np.errstate(over="ignore", invalid="ignore"):
        W = Y if shift is None else Y - shift
        if A is not None:
            W = W @ A.T
        elif shift is None:
            return Y
    return sanitize_rows(W)


def mapped_inputs(B: np.ndarray, P: np.ndarray | None, p0: np.ndarray | None) -> np.ndarray:
    """y = sanitize(P(x − p0)) for a block of rows (the rows themselves when P is None)."""
    if P is None:
        return B
    with np.errstate(over="ignore", invalid="ignore"):
        Y = (B - p0) @ P.T
    return sanitize_rows(Y)


def mapped_chunk(chunk: Any, P: np.ndarray | None, p0: np.ndarray | None) -> np.ndarray:
    """:func:`mapped_inputs` of one dask chunk (``map_blocks``)."""
    return mapped_inputs(as_block(chunk), P, p0)

