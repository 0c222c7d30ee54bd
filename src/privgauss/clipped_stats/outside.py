"""Which rows a clip moves: the per-row verdict "A(y_i − s) lies outside B(center, τ)" whose
sum over the rows is the clipped count (sensitivity 1 under replace-one neighbours,
:func:`privgauss.sensitivity.count`), and the passes that count it — evaluating the verdict
exactly wherever rounding could decide it. Nothing here is released."""

from __future__ import annotations

from typing import Any

import numpy as np

from .record_maps import MAX_VALUE, affine_rows, mapped_inputs, sanitize_rows
from .rounding import EPS64, gamma

__all__ = ["outside_count", "outside_count_kernel", "outside_exact_kernel", "outside_rows"]


def _rowwise_map(D: np.ndarray, A: np.ndarray) -> np.ndarray:
    """D·Aᵀ computed row by row: W_ij = Σ_l D_il A_jl summed in the order l = 0, 1, …, one
    elementwise operation at a time, so that each row's result is a fixed sequence of float
    operations on that row alone (a BLAS product may round a row differently depending on
    its position in the block)."""
    W = D[:, :1] * A[:, 0]
    for col in range(1, D.shape[1]):
        W += D[:, col : col + 1] * A[:, col]
    return W


def outside_rows(Y: np.ndarray, A: np.ndarray | None, s: np.ndarray | None,
                 center: np.ndarray, tau: float) -> np.ndarray:
    """Per row y of Y, whether W = A(y − s) lies outside B(center, τ): the clip weight of
    :func:`~privgauss.linalg.clip_weights` is below 1, W as :func:`affine_rows` defines it
    (an overflowing row is the far point) but computed by :func:`_rowwise_map` — the verdict
    is a function of the row alone. This is the per-row function that the clipped counts of
    rows without an input map sum (sensitivity 1 under replace-one neighbours)."""
    from ..linalg import clip_weights

    with np.errstate(over="ignore", invalid="ignore"):
        if A is None and s is None:
            W = Y
        else:
            D = Y if s is None else Y - s
            W = sanitize_rows(D if A is None else _rowwise_map(D, A))
        return clip_weights(W - center, tau) < 1.0


def outside_count(Y: np.ndarray, A: np.ndarray | None, s: np.ndarray | None,
                  center: np.ndarray, tau: float) -> int:
    """Σ over the rows of Y of :func:`outside_rows`, evaluating it only on the rows that a
    BLAS product cannot place inside the ball with a rigorous margin.

    For D_i = y_i − s (the same float operation as the definition's), both the BLAS product
    and :func:`_rowwise_map` are within γ_d‖A‖_F‖D_i‖ of the exact A·D_i, and each
    subtraction of the centre and norm adds a relative (d + 3)ε: a row whose BLAS norm plus
    twice that bound lies below r = τ(1 − 4(d + 2)ε) — the radius below which
    :func:`~privgauss.linalg.clip_weights` gives weight 1 — is inside by the definition too
    (NaN or inf norms are always evaluated)."""
    if Y.shape[0] == 0:
        return 0
    d = Y.shape[1]
    center = np.asarray(center, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        D = Y if s is None else Y - s
        W = D if A is None else D @ A.T
        nrm = np.sqrt(np.einsum("ij,ij->i", W - center, W - center))
        if A is None:
            bound = np.zeros(1)
        else:
            af = float(np.linalg.norm(A)) * (1.0 + 1e-12)
            bound = 2.0 * gamma(d + 2) * af * np.sqrt(np.einsum("ij,ij->i", D, D))
        grow = 1.0 + 4.0 * (d + 3) * EPS64
        r = tau * (1.0 - 4.0 * (d + 2) * EPS64)
        sure_in = nrm * grow + 2.0 * bound * grow < r * (1.0 - 4.0 * (d + 3) * EPS64)
    # NaN: evaluated; so is every row when τ nears the far point of sanitize_rows
    cand = np.flatnonzero(~sure_in) if r < 1e-3 * MAX_VALUE else np.arange(Y.shape[0])
    if cand.size == 0:
        return 0
    return int(np.count_nonzero(outside_rows(Y[cand], A, s, center, tau)))


def outside_exact_kernel(B: np.ndarray, A: np.ndarray | None, s: np.ndarray | None,
                         center: np.ndarray, tau: float) -> tuple[np.ndarray]:
    """(number of rows of a block outside the ball,) by :func:`outside_count` (rows without
    an input map)."""
    return (np.array(float(outside_count(B, A, s, center, tau))),)


def outside_count_kernel(B: np.ndarray, **kw: Any) -> tuple[np.ndarray]:
    """(number of rows W_i = A(y_i − s) outside B(center, τ),) for the rows of a block: the
    rows that :func:`clipped_block` moves (the same clip weights, so the same rows)."""
    from ..linalg import clip_weights

    W = affine_rows(mapped_inputs(B, kw["P"], kw["p0"]), kw["A"], kw["s"])
    w = clip_weights(W - kw["center"], kw["tau"])
    return (np.array(float(np.count_nonzero(w < 1.0))),)

