"""Per-block kernels of the passes over the rows (:func:`~privgauss.backends.reduce_rows`,
:func:`~privgauss.backends.map_rows`): clipped sums and Grams by the clip-then-sum definition,
and the Gram, whitened norms and projections behind the fast summaries.

Module level, parameters bound with functools.partial (or held by a module-level class), never
closures: for dask input they are pickled into the task graph and run on the workers of a
dask.distributed cluster, so they must not capture a :class:`~privgauss.clipped_stats.Rows`
(whose rows, a dask array, would travel along) or a BLAS routine (scipy's Fortran objects do
not pickle: :func:`trmm` and the float32 tier import them on the worker). In memory the passes
call the same functions directly. Nothing here is released.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .record_maps import affine_rows, mapped_inputs

__all__ = ["MOMENT_BLOCK", "centred_gram_kernel", "clipped_block", "clipped_gram_kernel",
           "clipped_moments_kernel", "clipped_sum_kernel", "moments_of", "projection_kernel",
           "triangular_norms_kernel", "trmm", "whitened_kernel"]

MOMENT_BLOCK = 4096  # rows per block of the one-pass moments (BLAS-efficient, cache-sized)


def trmm(T: np.ndarray, D: np.ndarray, *, lower: bool) -> np.ndarray:
    """T·Dᵀ for a triangular T (Fortran order) and a fresh C-ordered block D, in D's memory
    (BLAS dtrmm: half the flops of a general product)."""
    from scipy.linalg.blas import dtrmm  # imported here: kernels are shipped to dask workers

    return dtrmm(1.0, T, D.T, side=0, lower=int(lower), overwrite_b=1)


def moments_of(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Σ W_i, Σ W_i W_iᵀ) of the rows of W."""
    return W.sum(axis=0), W.T @ W


def clipped_block(B: np.ndarray, P: np.ndarray | None, p0: np.ndarray | None,
                  A: np.ndarray | None, s: np.ndarray | None, center: np.ndarray,
                  tau: float) -> np.ndarray:
    """clip_{B(center, τ)}(A(y_i − s)) for the rows y_i = sanitize(P(x_i − p0)) of a block."""
    from ..linalg import clip_rows

    return clip_rows(affine_rows(mapped_inputs(B, P, p0), A, s), center, tau)[0]


def clipped_gram_kernel(B: np.ndarray, **kw: Any) -> tuple[np.ndarray]:
    """(Σ W_i W_iᵀ,) of the clipped rows W of :func:`clipped_block`."""
    W = clipped_block(B, **kw)
    return (W.T @ W,)


def clipped_sum_kernel(B: np.ndarray, **kw: Any) -> tuple[np.ndarray]:
    """(Σ W_i,) of the clipped rows W of :func:`clipped_block`."""
    W = clipped_block(B, **kw)
    return (W.sum(axis=0),)


def clipped_moments_kernel(B: np.ndarray, **kw: Any) -> tuple[np.ndarray, np.ndarray]:
    """(Σ W_i, Σ W_i W_iᵀ) of the clipped rows W of :func:`clipped_block`."""
    return moments_of(clipped_block(B, **kw))


def centred_gram_kernel(B: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(DᵀD, Σ D) for D = B − q (the first summary pass)."""
    D = B - q
    return D.T @ D, D.sum(axis=0)


def whitened_kernel(B: np.ndarray, Tf: np.ndarray, q: np.ndarray, V: np.ndarray,
                    U32: np.ndarray | None = None, a0: int = 0) -> tuple[np.ndarray, ...]:
    """(‖u_i‖², Vᵀu_i) for u_i = T(x_i − q) (the second summary pass); in memory, the rows u_i
    are also written to ``U32[a0:]`` (float32)."""
    Ut = trmm(Tf, B - q, lower=True)
    if U32 is not None:
        U32[a0 : a0 + B.shape[0]] = Ut.T
    return np.einsum("ij,ij->j", Ut, Ut), (V.T @ Ut).T


def projection_kernel(B: np.ndarray, q: np.ndarray, M: np.ndarray) -> tuple[np.ndarray]:
    """((B − q) M,): each row's coordinates in new directions."""
    return ((B - q) @ M,)


def triangular_norms_kernel(B: np.ndarray, Rf: np.ndarray, x0: np.ndarray, Rq: np.ndarray
                            ) -> tuple[np.ndarray]:
    """(‖R(x_i − x0) − Rq‖²,) for an upper triangular R (Fortran order)."""
    Ut = trmm(Rf, B - x0, lower=False) - Rq
    return (np.einsum("ij,ij->j", Ut, Ut),)

