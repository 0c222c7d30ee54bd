"""Clipped statistics of affinely mapped rows, over the block passes of :mod:`privgauss.backends`
(numpy in memory or dask chunks).

:class:`Rows` holds the private rows y_i of a computation (optionally under a public per-record
map, :func:`sanitize_rows`, :func:`affine_rows`) and evaluates mean_i clip_{B(c, τ)}(A(y_i − s))
and Σ_i clip_τ(A(y_i − s)) (…)ᵀ / n: by the clip-then-sum definition in one pass, or faster
from two-pass summaries plus an exact correction for the rows that may reach τ.
:func:`clipped_moments` gives both clipped moments in a fixed, public frame in one pass
(:func:`exact_clipped_moments` is its reference definition). Nothing here is released: each
result equals its clip-then-sum definition up to floating-point rounding, so its sensitivity
under replace-one neighbours is the definition's (:mod:`privgauss.sensitivity`); the callers
add the noise.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from .backends import (
    Kernel,
    as_block,
    block_rows,
    is_dask,
    map_rows,
    pair_differences,
    reduce_rows,
    row_chunks,
    take_rows,
)

__all__ = [
    "Rows",
    "affine_rows",
    "clipped_moments",
    "exact_clipped_moments",
    "sanitize_rows",
    "transform_rows",
]

_FAST_MIN_ROWS = 4096  # below this the exact pass is as fast as the summaries
_SUMMARY_ROW_BYTES = 48  # memory per row of the summaries (norms, bounds, a direction, temps)
_MAX_CANDIDATES = 0.5  # above this fraction of rows to map exactly, the exact pass is cheaper
_MAX_CANDIDATES_U32 = 0.9  # the same for data small enough for float32 rows (gathered at once)
_MAX_BOUND_CANDIDATES = 0.2  # above this, exact norms (a triangular pass) select the rows
_BOUND_SLACK = 1e-9
_CANCEL_LIMIT = 1e4
_EPS64 = float(np.finfo(np.float64).eps)
MAX_VALUE = 1e150  # larger magnitudes (and NaN) are sanitised to this before any arithmetic
_MAX_DIRECTIONS = 24  # directions kept per row for the candidate bound
_PROJECTION_BYTES = 1 << 28  # memory for the per-row coordinates in those directions
_BOUND_BLOCK = 1 << 18  # rows per block of the candidate bound (bounded temporaries)
U32_BYTES = 1 << 28  # memory for a float32 copy of the whitened rows (in-memory data only)
_U32_BLOCK = 8192  # rows per block of the float32 norm pass
_EPS32 = float(np.finfo(np.float32).eps) / 2  # unit roundoff of float32


def _kappa32(d: int) -> float:
    """2·γ_{d+4} in float32: twice the relative rounding bound of a length-d dot product (plus
    the rounding of its inputs and output) — the margin of the float32 norm tiers."""
    return 2.0 * (d + 4) * _EPS32 / (1.0 - (d + 4) * _EPS32)

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


def _trmm(T: np.ndarray, D: np.ndarray, *, lower: bool) -> np.ndarray:
    """T·Dᵀ for a triangular T (Fortran order) and a fresh C-ordered block D, in D's memory
    (BLAS dtrmm: half the flops of a general product)."""
    from scipy.linalg.blas import dtrmm  # imported here: kernels are shipped to dask workers

    return dtrmm(1.0, T, D.T, side=0, lower=int(lower), overwrite_b=1)


# ----------------------------------------------------------------------------------------------
# Per-block kernels of the passes over the rows. Module level, parameters bound with
# functools.partial (or held by a module-level class), never closures: for dask input they are
# pickled into the task graph and run on the workers of a dask.distributed cluster, so they
# must not capture a Rows (whose rows, a dask array, would travel along) or a BLAS routine
# (scipy's Fortran objects do not pickle: _trmm and the float32 tier import them on the worker).
# In memory the passes call the same functions directly.
# ----------------------------------------------------------------------------------------------


def mapped_inputs(B: np.ndarray, P: np.ndarray | None, p0: np.ndarray | None) -> np.ndarray:
    """y = sanitize(P(x − p0)) for a block of rows (the rows themselves when P is None)."""
    if P is None:
        return B
    with np.errstate(over="ignore", invalid="ignore"):
        Y = (B - p0) @ P.T
    return sanitize_rows(Y)


def _mapped_chunk(chunk: Any, P: np.ndarray | None, p0: np.ndarray | None) -> np.ndarray:
    """:func:`mapped_inputs` of one dask chunk (``map_blocks``)."""
    return mapped_inputs(as_block(chunk), P, p0)


def _clipped_block(B: np.ndarray, P: np.ndarray | None, p0: np.ndarray | None,
                   A: np.ndarray | None, s: np.ndarray | None, center: np.ndarray,
                   tau: float) -> np.ndarray:
    """clip_{B(center, τ)}(A(y_i − s)) for the rows y_i = sanitize(P(x_i − p0)) of a block."""
    from .linalg import clip_rows

    return clip_rows(affine_rows(mapped_inputs(B, P, p0), A, s), center, tau)[0]


def _clipped_gram_kernel(B: np.ndarray, **kw: Any) -> tuple[np.ndarray]:
    """(Σ W_i W_iᵀ,) of the clipped rows W of :func:`_clipped_block`."""
    W = _clipped_block(B, **kw)
    return (W.T @ W,)


def _clipped_sum_kernel(B: np.ndarray, **kw: Any) -> tuple[np.ndarray]:
    """(Σ W_i,) of the clipped rows W of :func:`_clipped_block`."""
    W = _clipped_block(B, **kw)
    return (W.sum(axis=0),)


def _clipped_moments_kernel(B: np.ndarray, **kw: Any) -> tuple[np.ndarray, np.ndarray]:
    """(Σ W_i, Σ W_i W_iᵀ) of the clipped rows W of :func:`_clipped_block`."""
    return _moments_of(_clipped_block(B, **kw))


def _outside_count_kernel(B: np.ndarray, **kw: Any) -> tuple[np.ndarray]:
    """(number of rows W_i = A(y_i − s) outside B(center, τ),) for the rows of a block: the
    rows that :func:`_clipped_block` moves (the same clip weights, so the same rows)."""
    from .linalg import clip_weights

    W = affine_rows(mapped_inputs(B, kw["P"], kw["p0"]), kw["A"], kw["s"])
    w = clip_weights(W - kw["center"], kw["tau"])
    return (np.array(float(np.count_nonzero(w < 1.0))),)


def _gamma(k: int) -> float:
    """γ_k = kε/(1 − kε): the relative rounding bound of a length-k float64 sum of products."""
    return k * _EPS64 / (1.0 - k * _EPS64)


def _rowwise_map(D: np.ndarray, A: np.ndarray) -> np.ndarray:
    """D·Aᵀ computed row by row: W_ij = Σ_l D_il A_jl summed in the order l = 0, 1, …, one
    elementwise operation at a time, so that each row's result is a fixed sequence of float
    operations on that row alone (a BLAS product may round a row differently depending on
    its position in the block)."""
    W = D[:, :1] * A[:, 0]
    for col in range(1, D.shape[1]):
        W += D[:, col : col + 1] * A[:, col]
    return W


def _outside_rows(Y: np.ndarray, A: np.ndarray | None, s: np.ndarray | None,
                  center: np.ndarray, tau: float) -> np.ndarray:
    """Per row y of Y, whether W = A(y − s) lies outside B(center, τ): the clip weight of
    :func:`~privgauss.linalg.clip_weights` is below 1, W as :func:`affine_rows` defines it
    (an overflowing row is the far point) but computed by :func:`_rowwise_map` — the verdict
    is a function of the row alone. This is the per-row function that the clipped counts of
    rows without an input map sum (sensitivity 1 under replace-one neighbours)."""
    from .linalg import clip_weights

    with np.errstate(over="ignore", invalid="ignore"):
        if A is None and s is None:
            W = Y
        else:
            D = Y if s is None else Y - s
            W = sanitize_rows(D if A is None else _rowwise_map(D, A))
        return clip_weights(W - center, tau) < 1.0


def _outside_count(Y: np.ndarray, A: np.ndarray | None, s: np.ndarray | None,
                   center: np.ndarray, tau: float) -> int:
    """Σ over the rows of Y of :func:`_outside_rows`, evaluating it only on the rows that a
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
            bound = 2.0 * _gamma(d + 2) * af * np.sqrt(np.einsum("ij,ij->i", D, D))
        grow = 1.0 + 4.0 * (d + 3) * _EPS64
        r = tau * (1.0 - 4.0 * (d + 2) * _EPS64)
        sure_in = nrm * grow + 2.0 * bound * grow < r * (1.0 - 4.0 * (d + 3) * _EPS64)
    # NaN: evaluated; so is every row when τ nears the far point of sanitize_rows
    cand = np.flatnonzero(~sure_in) if r < 1e-3 * MAX_VALUE else np.arange(Y.shape[0])
    if cand.size == 0:
        return 0
    return int(np.count_nonzero(_outside_rows(Y[cand], A, s, center, tau)))


def _outside_exact_kernel(B: np.ndarray, A: np.ndarray | None, s: np.ndarray | None,
                          center: np.ndarray, tau: float) -> tuple[np.ndarray]:
    """(number of rows of a block outside the ball,) by :func:`_outside_count` (rows without
    an input map)."""
    return (np.array(float(_outside_count(B, A, s, center, tau))),)


def _centred_gram_kernel(B: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(DᵀD, Σ D) for D = B − q (the first summary pass)."""
    D = B - q
    return D.T @ D, D.sum(axis=0)


def _whitened_kernel(B: np.ndarray, Tf: np.ndarray, q: np.ndarray, V: np.ndarray,
                     U32: np.ndarray | None = None, a0: int = 0) -> tuple[np.ndarray, ...]:
    """(‖u_i‖², Vᵀu_i) for u_i = T(x_i − q) (the second summary pass); in memory, the rows u_i
    are also written to ``U32[a0:]`` (float32)."""
    Ut = _trmm(Tf, B - q, lower=True)
    if U32 is not None:
        U32[a0 : a0 + B.shape[0]] = Ut.T
    return np.einsum("ij,ij->j", Ut, Ut), (V.T @ Ut).T


def _projection_kernel(B: np.ndarray, q: np.ndarray, M: np.ndarray) -> tuple[np.ndarray]:
    """((B − q) M,): each row's coordinates in new directions."""
    return ((B - q) @ M,)


def _triangular_norms_kernel(B: np.ndarray, Rf: np.ndarray, x0: np.ndarray, Rq: np.ndarray
                             ) -> tuple[np.ndarray]:
    """(‖R(x_i − x0) − Rq‖²,) for an upper triangular R (Fortran order)."""
    Ut = _trmm(Rf, B - x0, lower=False) - Rq
    return (np.einsum("ij,ij->j", Ut, Ut),)


class Rows:
    """The private rows y_i of a computation: y_i = x_i, or with ``input_map=(P, p0)`` the
    public per-record map y_i = sanitize(P(x_i − p0)) (:func:`sanitize_rows`), never
    materialised. ``X`` is a validated numpy array or a dask array (rows streamed).

    :meth:`second_moment` and :meth:`clipped_mean` return Σ_i clip_τ(A(y_i − s)) (…)ᵀ / n and
    mean_i clip_{B(c, τ)}(A(y_i − s)) exactly as the clip-then-sum definition
    (:meth:`exact_second_moment`, :meth:`exact_clipped_mean`: one pass each) gives them, up
    to floating-point rounding. With ``fast`` (default for n ≥ 4096) they use summaries from
    two passes over the data instead — the Gram matrix G of the rows about their mean, and
    each row's norm ‖u_i‖ in the frame u_i = T(x_i − x̄) that whitens G (Cholesky; triangular
    multiply), plus its coordinates in a few directions V — so that a step writes
    A(y_i − s) − c = C(u_i − q) + r (C = A·P·T⁻¹), bounds every row's norm from ‖C V a_i‖ and
    ‖C(I − VVᵀ)‖ (V refreshed in one pass when C is large off V), maps exactly only the rows
    whose bound reaches τ — or, when too many do, finds them from exact norms in one
    triangular pass — and corrects the closed form C G Cᵀ + … for them. Which rows are
    re-mapped depends on the data, but only the rounding of the result does: nothing here
    is released before the caller adds noise. The summaries hold a few numbers per row: for
    dask rows they are kept only up to ``_PROJECTION_BYTES`` (about 5.6 million rows), beyond
    which every statistic is one exact pass and nothing per row is held.
    """

    def __init__(
        self,
        X: Any,
        *,
        input_map: tuple[np.ndarray, np.ndarray] | None = None,
        center: np.ndarray | None = None,
        fast: bool | None = None,
    ) -> None:
        self.X = X
        self.n, self.d = int(X.shape[0]), int(X.shape[1])
        self.P: np.ndarray | None
        self.p0: np.ndarray | None
        self.P, self.p0 = (None, None) if input_map is None else input_map
        self.center = np.zeros(self.d) if center is None else np.asarray(center, dtype=float)
        if fast is None:  # streamed rows keep no per-row summaries beyond _PROJECTION_BYTES
            fast = self.n >= _FAST_MIN_ROWS and (
                not is_dask(X) or self.n * _SUMMARY_ROW_BYTES <= _PROJECTION_BYTES)
        self.fast = bool(fast)
        self._summary: dict[str, Any] | None = None
        # (A, s, τ, count): the rows outside B(0, τ) in the frame W = A(y − s), counted by
        # the last clipped_moments pass (rows without an input map), for clipped_count
        self._outside_memo: tuple[np.ndarray, np.ndarray, float, int] | None = None
        # (A, s, τ0, per-block parts): prepare_moments' pass, for the next clipped_moments
        self._moments_memo: tuple[np.ndarray, np.ndarray, float, list[Any]] | None = None

    # ---- the per-record map
    def inputs(self, B: np.ndarray) -> np.ndarray:
        """y = sanitize(P(x − p0)) for a block of rows (the rows themselves without a map)."""
        return mapped_inputs(B, self.P, self.p0)

    def materialized(self) -> Any:
        """All rows y_i: a numpy array, or a lazy dask array for dask input."""
        if self.P is None:
            return self.X
        if is_dask(self.X):
            return row_chunks(self.X).map_blocks(
                partial(_mapped_chunk, P=self.P, p0=self.p0), dtype=np.float64
            )
        return self.inputs(self.X)

    def pairs(self, rng: np.random.Generator) -> Rows:
        """Rows (y_{π(2j)} − y_{π(2j−1)})/√2, j = 1..⌊n/2⌋: differences of the mapped rows over
        a uniformly random pairing π drawn from ``rng`` (the fit's noise source: public
        randomness, independent of the data). Random pairs make the statistic order-free
        (DESIGN.md rule 11): consecutive rows of a sorted file are near-equal, and their
        differences would describe almost no spread. Replace-one neighbours still differ in
        one pair, whatever π."""
        Y = self.materialized()
        m = self.n // 2
        perm = rng.permutation(self.n)[: 2 * m].reshape(m, 2)
        perm = perm[np.argsort(perm[:, 0], kind="stable")]  # pairs in row order of one side
        # dask rows stream once into the ⌊n/2⌋ differences (a random gather would hold them
        # all); numpy rows are gathered by np.take (the same values, far faster than X[idx])
        if is_dask(Y):
            D = pair_differences(Y, perm[:, 0], perm[:, 1])
        else:
            D = np.take(Y, perm[:, 1], axis=0)
            D -= np.take(Y, perm[:, 0], axis=0)
        D /= np.sqrt(2.0)
        return Rows(D, fast=self.fast if is_dask(self.X) else None)

    # ---- exact clip-then-sum (one pass)
    def exact_second_moment(self, A: np.ndarray | None, s: np.ndarray | None, tau: float
                            ) -> np.ndarray:
        """Σ_i clip_τ(W_i) clip_τ(W_i)ᵀ / n for W_i = A(y_i − s), by the definition (one pass)."""
        kernel = partial(_clipped_gram_kernel, P=self.P, p0=self.p0, A=A, s=s,
                         center=np.zeros(self.d), tau=tau)
        return reduce_rows(self.X, kernel)[0] / self.n

    def exact_clipped_mean(self, A: np.ndarray | None, s: np.ndarray | None,
                           center: np.ndarray, tau: float) -> np.ndarray:
        """mean_i clip_{B(center, τ)}(W_i) for W_i = A(y_i − s), by the definition (one pass)."""
        kernel = partial(_clipped_sum_kernel, P=self.P, p0=self.p0, A=A, s=s, center=center,
                         tau=tau)
        return reduce_rows(self.X, kernel)[0] / self.n

    def clipped_count(self, A: np.ndarray | None, s: np.ndarray | None, center: np.ndarray,
                      tau: float) -> int:
        """The number of rows with W_i = A(y_i − s) outside B(center, τ) — the rows a clip to
        that ball moves (one pass, or only the rows the fast summaries, when already computed,
        cannot place inside; A None: W_i = y_i − s). Sensitivity 1 under replace-one
        neighbours (:func:`privgauss.sensitivity.count`); nothing is released here."""
        center = np.asarray(center, dtype=np.float64)
        memo = self._outside_memo
        if (memo is not None and not center.any() and float(tau) == memo[2]
                and _same(A, memo[0]) and _same(s, memo[1])):
            return memo[3]  # counted by clipped_moments' pass in this frame: the same sum
        if self.P is None and A is not None and s is not None and not is_dask(self.X):
            # rows the summaries cannot place inside B(center, τ(1 − 1e-9)): every other row's
            # verdict is "inside" (the clip weights' radius is τ(1 − 4(d + 2)ε))
            A, s = np.asarray(A, dtype=np.float64), np.asarray(s, dtype=np.float64)
            idx = self.outside_candidates(A, s, center, float(tau))
            if idx is not None:
                return sum(int(np.count_nonzero(_outside_rows(
                    take_rows(self.X, idx[a0 : a0 + _MOMENT_BLOCK]), A, s, center, float(tau))))
                    for a0 in range(0, idx.size, _MOMENT_BLOCK))
        kernel: Kernel
        if self.P is None:  # the per-row verdict of _outside_rows
            kernel = partial(_outside_exact_kernel, A=A, s=s, center=center, tau=float(tau))
        else:
            kernel = partial(_outside_count_kernel, P=self.P, p0=self.p0, A=A, s=s,
                             center=center, tau=float(tau))
        return int(round(float(reduce_rows(self.X, kernel)[0])))

    # ---- fast evaluation
    def second_moment(self, A: np.ndarray, s: np.ndarray, tau: float) -> np.ndarray:
        """Σ_i clip_τ(W_i) clip_τ(W_i)ᵀ / n for W_i = A(y_i − s)."""
        out = self._fast_second_moment(A, s, tau) if self.fast else None
        return self.exact_second_moment(A, s, tau) if out is None else out

    def clipped_mean(self, A: np.ndarray | None, s: np.ndarray | None, center: np.ndarray,
                     tau: float) -> np.ndarray:
        """mean_i clip_{B(center, τ)}(W_i) for W_i = A(y_i − s) (A None: W_i = y_i − s)."""
        out = None
        if self.fast and A is not None:
            out = self._fast_clipped_mean(A, np.zeros(self.d) if s is None else s, center, tau)
        return self.exact_clipped_mean(A, s, center, tau) if out is None else out

    def _x_point(self, y: np.ndarray) -> np.ndarray:
        """The x with P(x − p0) = y (y itself without a map)."""
        return y if self.P is None else self.p0 + np.linalg.solve(self.P, y)

    def summary(self) -> dict[str, Any] | None:
        """The two-pass summaries (computed once), or None when they are not usable."""
        if self._summary is None:
            self._summary = self._summarize()
        return self._summary if self._summary.get("ok") else None

    def _summarize(self) -> dict[str, Any]:
        import scipy.linalg as sla

        n, d = self.n, self.d
        with np.errstate(over="ignore", invalid="ignore"):
            q1 = self._x_point(self.center)
            if not np.isfinite(q1).all():
                return {"ok": False}
            G, m = reduce_rows(self.X, partial(_centred_gram_kernel, q=q1))
            if not (np.isfinite(G).all() and np.isfinite(m).all()):
                return {"ok": False}
            delta = m / n
            Gc = G - n * np.outer(delta, delta)
            Gc = (Gc + Gc.T) / 2
            try:
                L = np.linalg.cholesky(Gc / n)
                T = sla.solve_triangular(L, np.eye(d), lower=True)
                cond = float(np.linalg.cond(L))
            except np.linalg.LinAlgError:
                L = T = np.eye(d)
                cond = 1.0
            if not (np.isfinite(T).all() and cond < 1e10):
                return {"ok": False}
            off = T @ delta
            offn = float(np.linalg.norm(off))
            if offn <= 1e3:  # centre the frame at the mean (cancellation ≤ 1e6·eps)
                q = q1 + delta
                dr = q - q1  # the offset actually applied (q is rounded far from 0)
                Gq = G - np.outer(m, dr) - np.outer(dr, m) + n * np.outer(dr, dr)
                Gu, mu = T @ Gq @ T.T, T @ (m - n * dr)
                V = (-off / offn)[:, None] if offn > 0 else np.zeros((d, 0))
            else:
                q, Gu, mu, V = q1, T @ G @ T.T, T @ m, np.zeros((d, 0))
            Tf = np.asfortranarray(T)
            # float32 rows for in-memory data, written in place block by block (one allocation)
            U32 = (np.empty((n, d), dtype=np.float32)
                   if not is_dask(self.X) and 4 * n * d <= U32_BYTES else None)
            if U32 is None:
                un2, Z = map_rows(self.X, partial(_whitened_kernel, Tf=Tf, q=q, V=V))
            else:
                step = block_rows(d)
                parts = [_whitened_kernel(self.X[a : a + step], Tf, q, V, U32, a)
                         for a in range(0, n, step)]
                un2 = np.concatenate([p[0] for p in parts])
                Z = np.concatenate([p[1] for p in parts])
        if self.P is None:  # y − s_ref = ref_inv · u
            ref_inv, s_ref = L, q
        else:
            assert self.p0 is not None  # an input map sets P and p0 together
            ref_inv, s_ref = self.P @ L, self.P @ (q - self.p0)
        big = float(np.linalg.norm(ref_inv, 2)) * math.sqrt(float(un2.max()))
        # every ‖y_i‖ ≤ ‖s_ref‖ + ‖P L‖‖u_i‖ stays far below 1e150: no row is sanitised, so the
        # closed form over all rows is the definition's sum
        ok = bool(np.isfinite(un2).all() and np.isfinite(Gu).all() and np.isfinite(s_ref).all()
                  and big + float(np.linalg.norm(s_ref)) < 1e-3 * MAX_VALUE)
        slack = _BOUND_SLACK + 100.0 * d * _EPS64 * cond
        S = {"ok": ok and slack < 1e-4, "G": (Gu + Gu.T) / 2, "m": mu,
             "un2": un2, "T": T, "q": q, "ref_inv": ref_inv, "s_ref": s_ref, "slack": slack,
             "unorm_sum": float(np.sqrt(un2).sum()),
             "u_hi": float(np.quantile(np.sqrt(un2), 0.9)) if n else 0.0,
             "U32": U32}
        self._set_projections(S, V, Z)
        return S

    @staticmethod
    def _set_projections(S: dict[str, Any], V: np.ndarray, Z: np.ndarray) -> None:
        """Store per-row coordinates Z = U V in the orthonormal directions V and the residual
        norms ‖u_i − V Z_i‖ (with a rounding margin)."""
        rn2 = S["un2"] - np.einsum("ij,ij->i", Z, Z) if Z.shape[1] else S["un2"]
        margin = 64.0 * (Z.shape[1] + 1) * _EPS64 * S["un2"]
        S["V"], S["Z"] = V, Z
        S["rn"] = np.sqrt(np.maximum(rn2, 0.0) + margin)

    def _refresh_projections(self, S: dict[str, Any], C: np.ndarray, need: float) -> bool:
        """One pass: new directions V (the current V's first column, if any, and the right
        singular vectors of C with singular value above ``need``), so that ‖C‖ off V is at most
        ``need``. False when that takes more than _MAX_DIRECTIONS directions."""
        _, sv, Vt = np.linalg.svd(C)
        k = int(np.count_nonzero(sv > need))
        if k > min(_MAX_DIRECTIONS, _PROJECTION_BYTES // (8 * self.n) - 1):
            return False
        keep = S["V"][:, :1]  # the direction of the prior centre, if any
        V, _ = np.linalg.qr(np.hstack([Vt[:k].T, keep]))
        M = S["T"].T @ V  # Z = (x − q) Tᵀ V
        q = S["q"]
        Z = map_rows(self.X, partial(_projection_kernel, q=q, M=M))[0]
        self._set_projections(S, V, Z)
        return True

    def outside_candidates(self, A: np.ndarray, s: np.ndarray, center: np.ndarray,
                           tau: float) -> np.ndarray | None:
        """Sorted indices of a superset of the rows with W_i = A(y_i − s) outside
        B(center, τ(1 − 1e-9)) — every other row provably lies inside, with a margin far above
        the rounding of any evaluation of ‖W_i − center‖ — from the summaries already
        computed (no pass over the rows beyond, at most, a float32 norm pass), or None when
        there are none or they cannot bound the rows. Leaves the summaries as they are
        (never refreshes their directions), so later statistics round as they would have."""
        S = self._summary
        if S is None or not S.get("ok"):
            return None
        got = self._candidates(A, s, center, tau, refresh=False)
        return None if got is None else got[3]

    def _candidates(self, A: np.ndarray, s: np.ndarray, center: np.ndarray | None, tau: float,
                    refresh: bool = True
                    ) -> tuple[dict[str, Any], np.ndarray, np.ndarray, np.ndarray] | None:
        """(summary, C, v, idx): idx the rows that may lie outside B(center, τ) in the
        coordinates W = C u + v; every other row provably lies inside (up to rounding).

        With V the stored directions, u − q = V a + ρ (ρ ⊥ V): ‖C(u − q)‖ ≤ ‖C V a‖ +
        ‖C(I − VVᵀ)‖·(‖ρ_u‖ + ‖(I − VVᵀ)q‖), a per-row bound that is tight when C is large
        only on V (the directions are refreshed, one pass, when C is large elsewhere, unless
        ``refresh`` is False)."""
        S = self.summary()
        if S is None:
            return None
        d = self.d
        sl = S["slack"]
        with np.errstate(over="ignore", invalid="ignore"):
            C = A @ S["ref_inv"]
            v = A @ (S["s_ref"] - s)
            b = v if center is None else v - center  # W − center = C u + b
            try:
                q = -np.linalg.solve(C, b)
            except np.linalg.LinAlgError:
                q = np.zeros(d)
            if not np.isfinite(q).all():
                q = np.zeros(d)
            r = float(np.linalg.norm(b + C @ q))  # W − center = C(u − q) + (b + Cq)
            lim = tau * (1.0 - sl) / (1.0 + sl) - r
            if not (math.isfinite(r) and lim > 0):
                return None
            for attempt in range(2):
                V = S["V"]
                Cperp = C - (C @ V) @ V.T
                cp = float(np.linalg.norm(Cperp, 2))
                if not math.isfinite(cp):
                    return None
                # rows up to the 90 % quantile of ‖u‖ must pass the bound off V: else refresh
                need = lim / max(S["u_hi"], 1e-300)
                if cp <= need or attempt == 1 or S["U32"] is not None or not refresh:
                    break
                if not self._refresh_projections(S, C, 0.97 * need):
                    break
            qperp = float(np.linalg.norm(q - V @ (V.T @ q)))
            Vq = V.T @ q
            CV = C @ V
            H = CV.T @ CV
            xc = float(np.linalg.norm(CV.T @ Cperp, 2)) if V.shape[1] else 0.0  # 0: V invariant
            lim2 = (lim / (1.0 + sl)) ** 2 * (1.0 - sl)
            found = []
            for a0 in range(0, self.n, _BOUND_BLOCK):
                rho = S["rn"][a0 : a0 + _BOUND_BLOCK] + qperp  # ≥ ‖(I − VVᵀ)(u − q)‖
                bound2 = (cp * cp) * rho * rho
                if V.shape[1]:
                    a = S["Z"][a0 : a0 + _BOUND_BLOCK] - Vq
                    bound2 += np.einsum("ij,ij->i", a @ H, a)
                    if xc > 0:
                        bound2 += (2.0 * xc) * np.sqrt(np.einsum("ij,ij->i", a, a)) * rho
                found.append(a0 + np.flatnonzero(~(bound2 <= lim2)))
            idx: np.ndarray | None  # None: the norm fallback below found no usable candidates
            idx = np.concatenate(found)
        if idx.size > _MAX_BOUND_CANDIDATES * self.n:
            idx = self._norm_candidates(S, C, q, r, tau)
            cap = _MAX_CANDIDATES if S["U32"] is None else _MAX_CANDIDATES_U32
            if idx is None or idx.size > cap * self.n:
                return None
        return S, C, v, idx

    def _norm_candidates(self, S: dict[str, Any], C: np.ndarray, q: np.ndarray, r: float,
                         tau: float) -> np.ndarray | None:
        if S["U32"] is not None:
            return self._norm32_candidates(S, C, q, r, tau)
        return self._norm64_candidates(S, C, q, r, tau)

    def _norm32_candidates(self, S: dict[str, Any], C: np.ndarray, q: np.ndarray, r: float,
                           tau: float) -> np.ndarray | None:
        """A superset of the rows with ‖C(u_i − q)‖ + r ≥ τ from float32 norms of the stored
        float32 rows u_i (a triangular multiply per block: a quarter of the float64 pass's
        memory traffic), each widened by a rigorous bound on its rounding error.

        With R the triangular QR factor of C (‖C y‖ = ‖R y‖) and κ = γ_{d+4} (float32), the
        computed norm of fl(R̃ũ_i) − fl(Rq) differs from ‖R(u_i − q)‖ by at most
        κ(‖R‖_F‖u_i‖ + ‖Rq‖ + computed norm), doubled for safety: rounding of u_i, of R and
        of Rq to float32 (≤ u each, relative), the product (≤ γ_d|R||u| per entry), the
        subtraction and the sum of squares (≤ γ_d). Rows within that of the limit are kept."""
        from scipy.linalg.blas import strmm

        with np.errstate(over="ignore", invalid="ignore"):
            R = np.linalg.qr(C, mode="r")
            Rq = R @ q
            rf = float(np.linalg.norm(R))
            rqn = float(np.linalg.norm(Rq))
        sl = S["slack"]
        lim = tau * (1.0 - sl) / (1.0 + sl) - r * (1.0 + sl)
        if not (np.isfinite(R).all() and math.isfinite(rqn) and lim > 0
                and rf * math.sqrt(float(S["un2"].max())) + rqn < 1e30):  # float32 range
            return self._norm64_candidates(S, C, q, r, tau)
        kappa = _kappa32(self.d)
        R32 = np.asfortranarray(R, dtype=np.float32)
        Rq32 = Rq.astype(np.float32)[:, None]
        U32 = S["U32"]
        found = []
        buf = np.empty((min(_U32_BLOCK, self.n), self.d), dtype=np.float32)
        for a0 in range(0, self.n, _U32_BLOCK):
            blk = buf[: min(_U32_BLOCK, self.n - a0)]
            np.copyto(blk, U32[a0 : a0 + _U32_BLOCK])  # the multiply overwrites its input
            Zt = strmm(1.0, R32, blk.T, side=0, lower=0, overwrite_b=1)
            Zt -= Rq32
            nrm = np.sqrt(np.einsum("ij,ij->j", Zt, Zt).astype(np.float64))
            un = np.sqrt(S["un2"][a0 : a0 + _U32_BLOCK])
            err = 2.0 * kappa * (rf * un + rqn + nrm)
            found.append(a0 + np.flatnonzero(~(nrm + err < lim)))
        return np.concatenate(found)

    def _norm64_candidates(self, S: dict[str, Any], C: np.ndarray, q: np.ndarray, r: float,
                           tau: float) -> np.ndarray | None:
        """Rows with ‖C(u_i − q)‖ + r ≥ τ from exact norms, one pass: C(u_i − q) =
        Bx(x_i − q_x) − Bx T⁻¹q with Bx = C·T, and ‖Bx z‖ = ‖R z‖ for the triangular QR factor
        R of Bx (a triangular multiply per row block: half the flops of mapping). The frame
        centre q_x is subtracted first, so data translated far from 0 keep their precision."""
        with np.errstate(over="ignore", invalid="ignore"):
            R = np.linalg.qr(C @ S["T"], mode="r")
            Rq = (R @ np.linalg.solve(S["T"], q))[:, None]  # subtracted after the map
            cond = float(np.linalg.cond(R))
        sl = S["slack"] + 100.0 * self.d * _EPS64 * cond
        if not (np.isfinite(R).all() and np.isfinite(Rq).all() and sl < 1e-4):
            return None
        kernel = partial(_triangular_norms_kernel, Rf=np.asfortranarray(R), x0=S["q"], Rq=Rq)
        nrm2 = map_rows(self.X, kernel)[0]
        lim = tau * (1.0 - sl) / (1.0 + sl) - r * (1.0 + sl)
        if not lim > 0:
            return None
        return np.flatnonzero(~(nrm2 <= lim * lim))

    def _mapped_sum(self, idx: np.ndarray, A: np.ndarray, s: np.ndarray,
                    kernel: Callable[[np.ndarray], tuple[np.ndarray, ...]]
                    ) -> list[np.ndarray] | None:
        """Σ ``kernel(W)`` over blocks W of the exact rows A(y_i − s), i ∈ idx (no row is
        sanitised when the summary is usable; blocks keep temporaries cache-sized), or None
        when a row overflows (then the exact pass decides)."""
        with np.errstate(over="ignore", invalid="ignore"):
            if self.P is None:
                M, p0, off = A.T, s, np.zeros(self.d)
            else:  # A(P(x − p0) − s) in one product; x − p0 first (precision far from 0)
                assert self.p0 is not None  # an input map sets P and p0 together
                M, p0, off = (A @ self.P).T, self.p0, A @ s
        total: list[np.ndarray] | None = None
        for a0 in range(0, idx.size, _MOMENT_BLOCK):
            B = take_rows(self.X, idx[a0 : a0 + _MOMENT_BLOCK])
            with np.errstate(over="ignore", invalid="ignore"):
                B -= p0
                W = B @ M
                W -= off
            if not np.isfinite(W).all():
                return None
            part = kernel(W)
            total = list(part) if total is None else [t + p for t, p in zip(total, part,
                                                                            strict=True)]
        return total

    def _fast_second_moment(self, A: np.ndarray, s: np.ndarray, tau: float) -> np.ndarray | None:
        from .linalg import clip_weights

        got = self._candidates(A, s, None, tau)
        if got is None:
            return None
        S, C, v, idx = got
        n = self.n

        def correction(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            # clip(W_i) clip(W_i)ᵀ − W_i W_iᵀ = −(1 − w_i²) W_i W_iᵀ (0 for rows inside)
            w = clip_weights(W, tau)
            out = np.flatnonzero(w < 1.0)
            Wd = W[out] * np.sqrt(1.0 - w[out] ** 2)[:, None]
            return Wd.T @ Wd, np.array(np.einsum("ij,ij->", W, W))

        with np.errstate(over="ignore", invalid="ignore"):
            Cm = C @ S["m"]
            CGC = C @ S["G"] @ C.T
            total = CGC + np.outer(Cm, v) + np.outer(v, Cm) + n * np.outer(v, v)
            big = 0.0
            if idx.size:
                got_c = self._mapped_sum(idx, A, s, correction)
                if got_c is None:
                    return None
                total = total - got_c[0]
                big = float(got_c[1])
        out = (total + total.T) / (2 * n)
        tr = float(np.trace(out)) * n
        scale = float(np.trace(CGC)) + n * float(v @ v) + big
        if not (np.isfinite(out).all() and tr > 0 and scale <= _CANCEL_LIMIT * tr):
            return None
        return out

    def _fast_clipped_mean(self, A: np.ndarray, s: np.ndarray, center: np.ndarray, tau: float
                           ) -> np.ndarray | None:
        from .linalg import clip_weights

        got = self._candidates(A, s, center, tau)
        if got is None:
            return None
        S, C, v, idx = got
        n = self.n

        def correction(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            # clip(W_i) − W_i = (w_i − 1)(W_i − center)
            D = W - center
            return (clip_weights(D, tau) - 1.0) @ D, np.array(np.linalg.norm(W, axis=1).sum())

        with np.errstate(over="ignore", invalid="ignore"):
            total = C @ S["m"] + n * v
            big = 0.0
            if idx.size:
                got_c = self._mapped_sum(idx, A, s, correction)
                if got_c is None:
                    return None
                total = total + got_c[0]
                big = float(got_c[1])
            cn = float(np.linalg.norm(C, 2))
        out = total / n
        scale = cn * S["unorm_sum"] + n * float(np.linalg.norm(v)) + big
        if not (np.isfinite(out).all()
                and scale <= _CANCEL_LIMIT * n * (tau + float(np.linalg.norm(center)))):
            return None
        return out


def _same(a: np.ndarray | None, b: np.ndarray) -> bool:
    return a is not None and np.shape(a) == b.shape and bool(np.array_equal(a, b))


# ----------------------------------------------------------------------------------------------
# Clipped first and second moments in one pass (a fixed, public frame)
# ----------------------------------------------------------------------------------------------

_MOMENT_BLOCK = 4096  # rows per block of the one-pass moments (BLAS-efficient, cache-sized)
_CORRECT_LIMIT = 1e6  # clipped rows up to this squared norm / τ² are corrected after the Gram
_FAST32_COND = 1e3  # frames up to this condition number use the float32 tier of the moments


def _exclusion(n: int, exclude: np.ndarray | None) -> np.ndarray:
    idx = np.zeros(0, dtype=np.intp) if exclude is None else np.asarray(exclude, dtype=np.intp)
    if idx.size and not (np.all(np.diff(idx) > 0) and idx[0] >= 0 and idx[-1] < n):
        raise ValueError("exclude must hold sorted, distinct row indices")
    return idx


def _moments_of(W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return W.sum(axis=0), W.T @ W


class _ExactMomentKernel:
    """Per-block kernel of :func:`clipped_moments`, float64 tier: (0, 0, Σ z_i, Σ z_i z_iᵀ) of the
    clipped rows z_i = clip_τ(R(x_i − p0 − g)) in the R frame (rows the per-record map
    y = sanitize(P(x − p_map)) may sanitise: the definition's map, rotated by Q). A
    module-level class holding the public frame: picklable to dask workers."""

    def __init__(self, P: np.ndarray | None, p_map: np.ndarray | None, A: np.ndarray,
                 s: np.ndarray, Q: np.ndarray, Rf: np.ndarray, p0: np.ndarray, g: np.ndarray,
                 gn: float, z_lim2: float, tau: float, count_factor: float | None = None
                 ) -> None:
        self.P, self.p_map, self.A, self.s, self.Q = P, p_map, A, s, Q
        self.Rf, self.p0, self.g, self.gn, self.z_lim2 = Rf, p0, g, gn, z_lim2
        self.tau = tau
        self.t2 = float(tau) * float(tau)
        self.correct2 = _CORRECT_LIMIT * self.t2
        d = int(Rf.shape[1])
        self.d, self.zero_d, self.zero_dd = d, np.zeros(d), np.zeros((d, d))
        # count the rows outside the ball (rows without an input map): a row whose computed
        # norm in the R frame times count_factor is below r is inside by the definition
        self.count_factor = count_factor
        self.r = tau * (1.0 - 4.0 * (d + 2) * _EPS64)

    def outside(self, Bk: np.ndarray, idx: np.ndarray, nrm: np.ndarray) -> np.ndarray:
        """(the number of rows outside the ball,) among the rows ``idx`` of the block — the
        only ones that may be — from their computed float64 norms ``nrm`` in the R frame (NaN:
        a row to evaluate): beyond r·factor·(1 + 4ε) a row is outside by the definition too,
        below r/factor inside; the rows between are evaluated by :func:`_outside_rows`."""
        f = self.count_factor
        assert f is not None
        r, hi = self.r, self.r * f * (1.0 + 4.0 * _EPS64)
        if nrm.size <= 64:  # the usual few rows per block: plain Python is cheaper
            vals = nrm.tolist()
            n_out = sum(1 for v in vals if v > hi)
            band = np.array([i for i, v in enumerate(vals) if not (v > hi or v * f < r)],
                            dtype=np.intp)
        else:
            sure_out = nrm > hi
            n_out = int(np.count_nonzero(sure_out))
            band = np.flatnonzero(~(nrm * f < r) & ~sure_out)
        if band.size:
            n_out += int(np.count_nonzero(
                _outside_rows(Bk[idx[band]], self.A, self.s, self.zero_d, self.tau)))
        return np.array(float(n_out))

    def __call__(self, Bk: np.ndarray) -> tuple[np.ndarray, ...]:
        from .linalg import clip_rows

        d, tau, t2, zero_d, zero_dd = self.d, self.tau, self.t2, self.zero_d, self.zero_dd
        with np.errstate(over="ignore", invalid="ignore"):
            D = Bk - self.p0
            if self.gn > 0:
                D -= self.g
            Z = _trmm(self.Rf, D, lower=False).T  # rows R(x − p0 − g), in D's memory
            nrm2 = np.einsum("ij,ij->i", Z, Z)
        odd = np.flatnonzero(~(nrm2 <= self.z_lim2))
        cnt = np.zeros(())
        if self.count_factor is not None:
            nrm = np.sqrt(nrm2)
            nrm[odd] = np.nan  # rows the definition may sanitise: always evaluated
            with np.errstate(invalid="ignore"):
                idx = np.flatnonzero(~(nrm * self.count_factor < self.r))
            cnt = self.outside(Bk, idx, nrm[idx])
        if odd.size:  # the definition's map, rotated into the R frame
            Z[odd] = affine_rows(mapped_inputs(Bk[odd], self.P, self.p_map), self.A,
                                 self.s) @ self.Q
            nrm2[odd] = np.einsum("ij,ij->i", Z[odd], Z[odd])
        out = np.flatnonzero(nrm2 > t2)
        if out.size == 0:
            return (zero_d, zero_dd, *_moments_of(Z), cnt)
        if float(nrm2[out].max()) > self.correct2:
            Z[out] = clip_rows(Z[out], np.zeros(d), tau)[0]
            return (zero_d, zero_dd, *_moments_of(Z), cnt)
        sm, G = _moments_of(Z)
        Zo = Z[out]
        Zc = clip_rows(Zo, np.zeros(d), tau)[0]
        return (zero_d, zero_dd, sm - Zo.sum(axis=0) + Zc.sum(axis=0),
                G - Zo.T @ Zo + Zc.T @ Zc, cnt)


def _minus_rows(B: np.ndarray, v: np.ndarray, tiled: np.ndarray) -> np.ndarray:
    """B − v (v subtracted from every row) as a new array: for a C-contiguous block on flat
    views against ``tiled`` (v repeated, at least B.size long) — the same operations as the
    broadcast, which numpy runs slowly over a short last axis."""
    if not (B.flags.c_contiguous and B.ndim == 2 and B.size <= tiled.size):
        return B - v
    out = np.empty(B.shape)
    np.subtract(B.reshape(-1), tiled[: B.size], out=out.reshape(-1))
    return out


class _Float32MomentKernel:
    """Per-block kernel of :func:`clipped_moments`, float32 tier: (Σ D_i, DᵀD, Σ (w_i − 1) z_i,
    −Σ (1 − w_i²) z_i z_iᵀ) for D = x − p0 − g and the candidate rows z_i = R D_i (float32
    norms widened by ``rel`` select them); a block with a row at or beyond ``big`` goes to the
    float64 kernel. ``drop`` (in memory only) zeroes excluded rows. BLAS routines are looked
    up on call (they do not pickle): picklable to dask workers."""

    def __init__(self, exact: _ExactMomentKernel, R: np.ndarray, rel: float, big: float,
                 one_pass: bool) -> None:
        self.exact, self.R, self.rel, self.big, self.one_pass = exact, R, rel, big, one_pass
        self.R32 = np.asfortranarray(R, dtype=np.float32)
        self.off = exact.p0 + exact.g
        self.tau_in = exact.tau * (1.0 - 1e-12)  # rows certainly below this are inside the ball
        # the subtracted offset repeated over a block's rows (see _minus_rows), made on the
        # first call (not shipped to dask workers with the kernel)
        self.tiled: np.ndarray | None = None
        # the float32 norm is within rel of ‖R D_i‖, which the count's factor then bounds
        self.count_factor = (None if exact.count_factor is None
                             else (1.0 + rel) * exact.count_factor)

    def __call__(self, Bk: np.ndarray, drop: np.ndarray | None = None
                 ) -> tuple[np.ndarray, ...]:
        D, nrm = self.front(Bk, drop)
        with np.errstate(over="ignore", invalid="ignore"):
            return self.back(Bk, D, nrm, np.arange(D.shape[0]), drop, None)

    def front(self, Bk: np.ndarray, drop: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray]:
        """(D, float32 norms of R·D) of a block: the part of a call that does not depend on τ."""
        from scipy.linalg.blas import strmm

        ex = self.exact
        if self.tiled is None:
            self.tiled = np.tile(self.off if self.one_pass else ex.p0, _MOMENT_BLOCK)
        with np.errstate(over="ignore", invalid="ignore"):
            if self.one_pass:
                D = _minus_rows(Bk, self.off, self.tiled)
            else:
                D = _minus_rows(Bk, ex.p0, self.tiled)
                if ex.gn > 0:
                    D -= ex.g
            if drop is not None:
                D[drop] = 0.0  # excluded rows add nothing
            D32 = D.astype(np.float32)
            Zt = strmm(1.0, self.R32, D32.T, side=0, lower=0, overwrite_b=1)
            nrm = np.sqrt(np.einsum("ij,ij->j", Zt, Zt).astype(np.float64))
        return D, nrm

    @staticmethod
    def gram(D: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(Σ D_i, DᵀD) of a block."""
        return np.ones(D.shape[0]) @ D, D.T @ D

    def back(self, Bk: np.ndarray, D: np.ndarray, nrm: np.ndarray, loc: np.ndarray,
             drop: np.ndarray | None, sums: tuple[np.ndarray, np.ndarray] | None
             ) -> tuple[np.ndarray, ...]:
        """The rest of a call at this kernel's τ, from rows ``D`` of the block (positions
        ``loc`` in it, increasing) with float32 norms ``nrm``: all rows, or (with the block's
        ``sums`` = :meth:`gram` of all its rows) a subset that holds every row that may reach
        the ball or the count's band — the same values either way."""
        from .linalg import clip_weights

        ex = self.exact
        sel_c = ~(nrm * (1.0 + self.rel) < self.tau_in)  # NaN/inf: selected
        cand = np.flatnonzero(sel_c)
        if cand.size and not float(nrm[cand].max()) < self.big:
            if drop is None:
                return ex(Bk)
            keep = np.ones(Bk.shape[0], dtype=bool)
            keep[drop] = False
            return ex(Bk[keep])
        cnt = np.zeros(())
        if self.count_factor is not None:
            if drop is not None:
                nrm[drop] = -np.inf  # excluded rows are not counted here
            # rows whose float32 bound may reach the ball: their float64 norms decide
            sel = np.flatnonzero(~(nrm * self.count_factor < ex.r))
            Zi = D[sel] @ self.R.T
            cnt = ex.outside(Bk, loc[sel], np.sqrt(np.einsum("ij,ij->i", Zi, Zi)))
        sD, GD = self.gram(D) if sums is None else sums
        if cand.size == 0:
            return sD, GD, ex.zero_d, ex.zero_dd, cnt
        Zc = D[cand] @ self.R.T  # the candidate rows exactly
        w = clip_weights(Zc, ex.tau)
        out = np.flatnonzero(w < 1.0)
        Wd = Zc[out] * np.sqrt(1.0 - w[out] ** 2)[:, None]
        return sD, GD, (w - 1.0) @ Zc, -(Wd.T @ Wd), cnt


def _rows_moments(rows: Rows, kernel: Kernel, idx: np.ndarray, count: int,
                  block: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(Σ, Σ outer) of ``kernel`` over all rows minus the rows ``idx``, divided by ``count``."""
    s, G = reduce_rows(rows.X, kernel, block=block)
    if idx.size:
        s1, G1 = kernel(take_rows(rows.X, idx))
        s, G = s - s1, G - G1
    return s / count, ((G + G.T) / 2) / count


def exact_clipped_moments(rows: Rows, A: np.ndarray, s: np.ndarray, tau: float,
                          exclude: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Reference definition: with W_i = clip_τ(A(y_i − s)) (ball about 0, per-record map and
    overflow handling of :func:`affine_rows`), (mean_i W_i, mean_i W_i W_iᵀ) over the rows
    not in ``exclude`` (sorted indices)."""
    idx = _exclusion(rows.n, exclude)
    kernel = partial(_clipped_moments_kernel, P=rows.P, p0=rows.p0, A=A, s=s,
                     center=np.zeros(rows.d), tau=tau)
    return _rows_moments(rows, kernel, idx, rows.n - idx.size)


def _moment_setup(rows: Rows, A: np.ndarray, s: np.ndarray, tau: float
                  ) -> tuple[np.ndarray, np.ndarray, _ExactMomentKernel | _Float32MomentKernel,
                             float | None] | None:
    """(Q, R, kernel, count factor) of :func:`clipped_moments` in the frame A(y − s) at τ, or
    None when the frame cannot be factored (the definition's pass decides)."""
    d = rows.d
    with np.errstate(over="ignore", invalid="ignore"):
        if rows.P is None:
            B, p0, g, pn = A, s, np.zeros(d), 0.0
        else:
            assert rows.p0 is not None  # an input map sets P and p0 together
            B, p0 = A @ rows.P, rows.p0
            g = np.linalg.solve(rows.P, s)
            pn = float(np.linalg.norm(rows.P, 2))
        Q, R = np.linalg.qr(B)
        rinv = float(np.linalg.norm(np.linalg.inv(R), 2)) if np.isfinite(R).all() else math.inf
    gn = float(np.linalg.norm(g))
    if not (np.isfinite(Q).all() and math.isfinite(rinv) and np.isfinite(g).all()):
        return None
    Rf = np.asfortranarray(R)
    # ‖y_i‖∞ ≤ ‖P‖(‖x_i − p0 − g‖ + ‖g‖) ≤ ‖P‖(‖R⁻¹‖‖z_i‖ + ‖g‖): below 1e149, no sanitising
    z_lim = (1e149 / pn - gn) / rinv if pn > 0 else math.inf
    z_lim2 = min(z_lim * abs(z_lim), 1e200) if z_lim > 0 else -1.0

    # float32 rounding bound (as in Rows._norm32_candidates): ‖R‖_F‖D_i‖ ≤ c‖R D_i‖ with
    # c = ‖R‖_F‖R⁻¹‖, so the computed norm is within rel·(computed) of the exact one,
    # rel = 2κ(c + 1)/(1 − 2κc); the tier is used only while that is small (a few %)
    kappa = _kappa32(d)
    c = float(np.linalg.norm(R)) * rinv
    # The same pass counts the rows outside the ball (rows without an input map), for
    # Rows.clipped_count: the computed float64 norm of R·D_i and the definition's ‖A D_i‖
    # (A = QR, ‖A‖_F = ‖R‖_F) each lie within γc of ‖R D_i‖ (relative; plus (d + 3)ε for a
    # norm), so a row whose computed norm times this factor is below the clip weights'
    # radius is inside by the definition; the others are evaluated by it (_outside_rows).
    g4 = 4.0 * _gamma(d + 2) * (c + 1.0)
    count_factor = ((1.0 + 4.0 * (d + 3) * _EPS64) * (1.0 + g4) / (1.0 - g4)
                    if rows.P is None and g4 < 0.5 else None)
    exact_kernel = _ExactMomentKernel(rows.P, rows.p0, A, s, Q, Rf, p0, g, gn, z_lim2, tau,
                                      count_factor)
    kernel: _ExactMomentKernel | _Float32MomentKernel = exact_kernel
    if float(np.linalg.cond(R)) <= _FAST32_COND and 2.0 * kappa * c < 0.05 and tau < 0.5 * z_lim:
        rel = 2.0 * kappa * (c + 1.0) / (1.0 - 2.0 * kappa * c)
        big = min(math.sqrt(_CORRECT_LIMIT) * tau, 0.5 * z_lim)
        # one subtraction of p0 + g when that offset is small in the frame (its rounding,
        # ≤ ε‖p0 + g‖ per row, stays ≤ 1e3·ε in whitened units); else p0 first, then g, so
        # data far from 0 keep their precision
        one_pass = float(np.linalg.norm(R, 2)) * (float(np.linalg.norm(p0)) + gn) <= 1e3
        kernel = _Float32MomentKernel(exact_kernel, R, rel, big, one_pass)
    return Q, R, kernel, count_factor


def prepare_moments(rows: Rows, A: np.ndarray, s: np.ndarray, tau0: float
                    ) -> np.ndarray | None:
    """One pass of :func:`clipped_moments`' float32 tier in the frame A(y − s) that keeps, per
    block, the part of the computation that does not depend on the radius (Σ D, DᵀD) and the
    few rows whose float32 norm may reach a ball of radius ``tau0``, and returns the sorted
    indices of those rows: a superset of the rows with ‖A(y_i − s)‖ ≥ tau0·(1 − 1e-6) — every
    other row provably lies inside every ball of radius ≥ tau0. A following
    ``clipped_moments(rows, A, s, τ)`` with τ ≥ tau0 and no exclusion then finishes from them
    without reading the rows again, to the same values as its own pass (each block's parts
    are computed by the same operations on the same rows). Used by a radius search
    (:func:`~privgauss.gaussian.coinpress_radius.outside_counts`), whose counts then need
    only those rows. None (nothing kept) for rows with an input map, dask rows, or a frame
    outside the float32 tier. Nothing is released here."""
    if is_dask(rows.X) or rows.P is not None:
        return None
    A = np.asarray(A, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    setup = _moment_setup(rows, A, s, tau0)
    if setup is None or not isinstance(setup[2], _Float32MomentKernel):
        return None
    kernel = setup[2]
    # a row kept whenever the float32 bound of either selection (candidates: (1 + rel);
    # the count's band: count_factor) may reach τ ≥ tau0, with room for the exact norm
    f = (1.0 + kernel.rel) ** 2 * max(1.0, kernel.count_factor or 1.0)
    lim = float(tau0) * (1.0 - 1e-6)
    blocks = []
    keep = []
    for a0 in range(0, rows.n, _MOMENT_BLOCK):
        D, nrm = kernel.front(rows.X[a0 : a0 + _MOMENT_BLOCK])
        with np.errstate(over="ignore", invalid="ignore"):
            gram = kernel.gram(D)
            loc = np.flatnonzero(~(nrm * f < lim))  # NaN: kept
        blocks.append((gram, loc, D[loc], nrm[loc]))
        keep.append(a0 + loc)
    rows._moments_memo = (A.copy(), s.copy(), float(tau0), blocks)
    return np.concatenate(keep) if keep else np.zeros(0, dtype=np.intp)


def clipped_moments(rows: Rows, A: np.ndarray, s: np.ndarray, tau: float,
                    exclude: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`exact_clipped_moments` in one fast pass: equal to the definition up to rounding.

    With B = A·P = Q·R (QR, R upper triangular) and g = P⁻¹s, A(y_i − s) = Q·R((x_i − p0) − g)
    for every row that the per-record map does not sanitise; clipping commutes with Q. Per
    row block, D = x − p0 − g (p0 first: data far from 0 keep their precision):

    * *float32 tier* (R well conditioned): the Gram DᵀD (syrk) and Σ D, whose image under R
      is the unclipped moments, and float32 norms of R·D widened by a rigorous rounding bound
      (as :meth:`Rows._norm32_candidates`) to find every row that may reach τ; those rows are
      mapped exactly and corrected in the R frame (−(1 − w²) z zᵀ and (w − 1) z,
      :func:`~privgauss.linalg.clip_weights`). Costs one Gram plus a float32 triangular
      multiply instead of a float64 one;
    * *float64 tier* (otherwise, and for blocks with very large or float32-overflowing rows):
      one triangular multiply, row norms, then the Gram of the unclipped rows and its
      correction for the rows beyond τ (or, when a row is very large, the Gram of the clipped
      rows). Rows that the map may sanitise or overflow (a public bound on ‖y_i‖ from ‖R⁻¹‖,
      ‖P‖) are mapped by the definition itself.

    The moments are then rotated back by Q. Excluded rows are skipped (numpy input) or
    subtracted (dask input)."""
    idx = _exclusion(rows.n, exclude)
    d = rows.d
    A = np.asarray(A, dtype=np.float64)
    s = np.asarray(s, dtype=np.float64)
    setup = _moment_setup(rows, A, s, tau)
    if setup is None:
        return exact_clipped_moments(rows, A, s, tau, exclude)
    Q, R, kernel, count_factor = setup
    count = rows.n - idx.size
    memo, rows._moments_memo = rows._moments_memo, None
    if (memo is not None and idx.size == 0 and isinstance(kernel, _Float32MomentKernel)
            and float(tau) >= memo[2] and _same(A, memo[0]) and _same(s, memo[1])):
        # the τ-free part of every block was computed by prepare_moments' pass
        sums = []
        for j, a0 in enumerate(range(0, rows.n, _MOMENT_BLOCK)):
            gram, loc, Ds, ns = memo[3][j]
            with np.errstate(over="ignore", invalid="ignore"):
                part = kernel.back(rows.X[a0 : a0 + _MOMENT_BLOCK], Ds, ns.copy(), loc, None,
                                   gram)
            if j == 0:  # added as reduce_rows adds the blocks of a pass
                sums = [np.array(p, dtype=np.float64, copy=True) for p in part]
            else:
                for t, p in zip(sums, part, strict=True):
                    t += p
    elif idx.size and not is_dask(rows.X) and isinstance(kernel, _Float32MomentKernel):
        bounds = np.searchsorted(idx, np.arange(0, rows.n + _MOMENT_BLOCK, _MOMENT_BLOCK))
        sums = [np.zeros(d), np.zeros((d, d)), np.zeros(d), np.zeros((d, d)), np.zeros(())]
        for j, a0 in enumerate(range(0, rows.n, _MOMENT_BLOCK)):
            drop = idx[bounds[j] : bounds[j + 1]] - a0
            part = kernel(rows.X[a0 : a0 + _MOMENT_BLOCK], drop if drop.size else None)
            sums = [t + p for t, p in zip(sums, part, strict=True)]
    else:
        sums = reduce_rows(rows.X, kernel, block=_MOMENT_BLOCK)
        for a0 in range(0, idx.size, _MOMENT_BLOCK):
            part = kernel(take_rows(rows.X, idx[a0 : a0 + _MOMENT_BLOCK]))
            sums = [t - p for t, p in zip(sums, part, strict=True)]
    sD, GD, sZ, GZ, outside = sums
    if count_factor is not None:  # the excluded rows counted apart: the count is over all
        n_out = int(round(float(outside))) + sum(
            _outside_count(take_rows(rows.X, idx[a0 : a0 + _MOMENT_BLOCK]), A, s,
                           np.zeros(d), tau) for a0 in range(0, idx.size, _MOMENT_BLOCK))
        rows._outside_memo = (A.copy(), s.copy(), float(tau), n_out)
    with np.errstate(over="ignore", invalid="ignore"):
        m1 = R @ sD + sZ
        M2 = R @ ((GD + GD.T) / 2) @ R.T + GZ
        M2 = (M2 + M2.T) / 2
    return Q @ (m1 / count), Q @ (M2 / count) @ Q.T
