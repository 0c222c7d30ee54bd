"""The private rows of a computation (:class:`Rows`) and their clipped statistics: the
clipped second moment, mean and count of affinely mapped rows, by the clip-then-sum definition
in one pass or from the fast summaries of :mod:`~privgauss.clipped_stats.summaries`. Nothing
here is released: each result equals its definition up to rounding, so its sensitivity is the
definition's; the callers add the noise."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from ..backends import Kernel, is_dask, pair_differences, reduce_rows, row_chunks, take_rows
from .kernels import MOMENT_BLOCK, clipped_gram_kernel, clipped_sum_kernel
from .outside import outside_count_kernel, outside_exact_kernel, outside_rows
from .record_maps import mapped_chunk, mapped_inputs
from .summaries import PROJECTION_BYTES, SUMMARY_ROW_BYTES, RowSummaries

__all__ = ["Rows", "same_frame"]

_FAST_MIN_ROWS = 4096  # below this the exact pass is as fast as the summaries


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
    dask rows they are kept only up to ``PROJECTION_BYTES`` (about 5.6 million rows), beyond
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
        if fast is None:  # streamed rows keep no per-row summaries beyond PROJECTION_BYTES
            fast = self.n >= _FAST_MIN_ROWS and (
                not is_dask(X) or self.n * SUMMARY_ROW_BYTES <= PROJECTION_BYTES)
        self.fast = bool(fast)
        self.summaries = RowSummaries(X, self.P, self.p0, self.center)
        # (A, s, τ, count): the rows outside B(0, τ) in the frame W = A(y − s), counted by
        # the last clipped_moments pass (rows without an input map), for clipped_count
        self.outside_memo: tuple[np.ndarray, np.ndarray, float, int] | None = None
        # (A, s, τ0, per-block parts): prepare_moments' pass, for the next clipped_moments
        self.moments_memo: tuple[np.ndarray, np.ndarray, float, list[Any]] | None = None

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
                partial(mapped_chunk, P=self.P, p0=self.p0), dtype=np.float64
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
        kernel = partial(clipped_gram_kernel, P=self.P, p0=self.p0, A=A, s=s,
                         center=np.zeros(self.d), tau=tau)
        return reduce_rows(self.X, kernel)[0] / self.n

    def exact_clipped_mean(self, A: np.ndarray | None, s: np.ndarray | None,
                           center: np.ndarray, tau: float) -> np.ndarray:
        """mean_i clip_{B(center, τ)}(W_i) for W_i = A(y_i − s), by the definition (one pass)."""
        kernel = partial(clipped_sum_kernel, P=self.P, p0=self.p0, A=A, s=s, center=center,
                         tau=tau)
        return reduce_rows(self.X, kernel)[0] / self.n

    def clipped_count(self, A: np.ndarray | None, s: np.ndarray | None, center: np.ndarray,
                      tau: float) -> int:
        """The number of rows with W_i = A(y_i − s) outside B(center, τ) — the rows a clip to
        that ball moves (one pass, or only the rows the fast summaries, when already computed,
        cannot place inside; A None: W_i = y_i − s). Sensitivity 1 under replace-one
        neighbours (:func:`privgauss.sensitivity.count`); nothing is released here."""
        center = np.asarray(center, dtype=np.float64)
        memo = self.outside_memo
        if (memo is not None and not center.any() and float(tau) == memo[2]
                and same_frame(A, memo[0]) and same_frame(s, memo[1])):
            return memo[3]  # counted by clipped_moments' pass in this frame: the same sum
        if self.P is None and A is not None and s is not None and not is_dask(self.X):
            # rows the summaries cannot place inside B(center, τ(1 − 1e-9)): every other row's
            # verdict is "inside" (the clip weights' radius is τ(1 − 4(d + 2)ε))
            A, s = np.asarray(A, dtype=np.float64), np.asarray(s, dtype=np.float64)
            idx = self.outside_candidates(A, s, center, float(tau))
            if idx is not None:
                return sum(int(np.count_nonzero(outside_rows(
                    take_rows(self.X, idx[a0 : a0 + MOMENT_BLOCK]), A, s, center, float(tau))))
                    for a0 in range(0, idx.size, MOMENT_BLOCK))
        kernel: Kernel
        if self.P is None:  # the per-row verdict of outside_rows
            kernel = partial(outside_exact_kernel, A=A, s=s, center=center, tau=float(tau))
        else:
            kernel = partial(outside_count_kernel, P=self.P, p0=self.p0, A=A, s=s,
                             center=center, tau=float(tau))
        return int(round(float(reduce_rows(self.X, kernel)[0])))

    # ---- fast evaluation
    def second_moment(self, A: np.ndarray, s: np.ndarray, tau: float) -> np.ndarray:
        """Σ_i clip_τ(W_i) clip_τ(W_i)ᵀ / n for W_i = A(y_i − s)."""
        out = self.summaries.second_moment(A, s, tau) if self.fast else None
        return self.exact_second_moment(A, s, tau) if out is None else out

    def clipped_mean(self, A: np.ndarray | None, s: np.ndarray | None, center: np.ndarray,
                     tau: float) -> np.ndarray:
        """mean_i clip_{B(center, τ)}(W_i) for W_i = A(y_i − s) (A None: W_i = y_i − s)."""
        out = None
        if self.fast and A is not None:
            out = self.summaries.clipped_mean(A, np.zeros(self.d) if s is None else s, center, tau)
        return self.exact_clipped_mean(A, s, center, tau) if out is None else out

    def summary(self) -> dict[str, Any] | None:
        """The two-pass summaries (computed once), or None when they are not usable."""
        return self.summaries.summary()

    def outside_candidates(self, A: np.ndarray, s: np.ndarray, center: np.ndarray,
                           tau: float) -> np.ndarray | None:
        """:meth:`RowSummaries.outside_candidates
        <privgauss.clipped_stats.summaries.RowSummaries.outside_candidates>`: a superset of the
        rows outside B(center, τ(1 − 1e-9)) from the summaries already computed, or None."""
        return self.summaries.outside_candidates(A, s, center, tau)


def same_frame(a: np.ndarray | None, b: np.ndarray) -> bool:
    """Whether ``a`` is the array ``b`` of a memo (same shape and values)."""
    return a is not None and np.shape(a) == b.shape and bool(np.array_equal(a, b))
