"""Clipped first and second moments of affinely mapped rows in one pass, in a fixed, public
frame: :func:`clipped_moments` (float32 or float64 tier, :mod:`.moment_kernels`), its
reference definition :func:`exact_clipped_moments`, and :func:`prepare_moments`, whose pass a
radius search reuses. Each result equals its clip-then-sum definition up to rounding, so its
sensitivity under replace-one neighbours is the definition's; nothing here is released."""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from ..backends import Kernel, is_dask, reduce_rows, take_rows
from .kernels import MOMENT_BLOCK, clipped_moments_kernel
from .moment_kernels import CORRECT_LIMIT, ExactMomentKernel, Float32MomentKernel, MomentFrame
from .outside import outside_count
from .rounding import EPS64, gamma, kappa32
from .rows import Rows, same_frame

__all__ = ["clipped_moments", "exact_clipped_moments", "prepare_moments"]

_FAST32_COND = 1e3  # frames up to this condition number use the float32 tier of the moments


def _exclusion(n: int, exclude: np.ndarray | None) -> np.ndarray:
    idx = np.zeros(0, dtype=np.intp) if exclude is None else np.asarray(exclude, dtype=np.intp)
    if idx.size and not (np.all(np.diff(idx) > 0) and idx[0] >= 0 and idx[-1] < n):
        raise ValueError("exclude must hold sorted, distinct row indices")
    return idx


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
    kernel = partial(clipped_moments_kernel, P=rows.P, p0=rows.p0, A=A, s=s,
                     center=np.zeros(rows.d), tau=tau)
    return _rows_moments(rows, kernel, idx, rows.n - idx.size)


def _moment_setup(rows: Rows, A: np.ndarray, s: np.ndarray, tau: float
                  ) -> tuple[np.ndarray, np.ndarray, ExactMomentKernel | Float32MomentKernel,
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

    # float32 rounding bound (as in RowSummaries' float32 norm pass): ‖R‖_F‖D_i‖ ≤ c‖R D_i‖ with
    # c = ‖R‖_F‖R⁻¹‖, so the computed norm is within rel·(computed) of the exact one,
    # rel = 2κ(c + 1)/(1 − 2κc); the tier is used only while that is small (a few %)
    kappa = kappa32(d)
    c = float(np.linalg.norm(R)) * rinv
    # The same pass counts the rows outside the ball (rows without an input map), for
    # Rows.clipped_count: the computed float64 norm of R·D_i and the definition's ‖A D_i‖
    # (A = QR, ‖A‖_F = ‖R‖_F) each lie within γc of ‖R D_i‖ (relative; plus (d + 3)ε for a
    # norm), so a row whose computed norm times this factor is below the clip weights'
    # radius is inside by the definition; the others are evaluated by it (outside_rows).
    g4 = 4.0 * gamma(d + 2) * (c + 1.0)
    count_factor = ((1.0 + 4.0 * (d + 3) * EPS64) * (1.0 + g4) / (1.0 - g4)
                    if rows.P is None and g4 < 0.5 else None)
    frame = MomentFrame(P=rows.P, p_map=rows.p0, A=A, s=s, Q=Q, Rf=Rf, p0=p0, g=g, gn=gn,
                        z_lim2=z_lim2)
    exact_kernel = ExactMomentKernel(frame, tau, count_factor)
    kernel: ExactMomentKernel | Float32MomentKernel = exact_kernel
    if float(np.linalg.cond(R)) <= _FAST32_COND and 2.0 * kappa * c < 0.05 and tau < 0.5 * z_lim:
        rel = 2.0 * kappa * (c + 1.0) / (1.0 - 2.0 * kappa * c)
        big = min(math.sqrt(CORRECT_LIMIT) * tau, 0.5 * z_lim)
        # one subtraction of p0 + g when that offset is small in the frame (its rounding,
        # ≤ ε‖p0 + g‖ per row, stays ≤ 1e3·ε in whitened units); else p0 first, then g, so
        # data far from 0 keep their precision
        one_pass = float(np.linalg.norm(R, 2)) * (float(np.linalg.norm(p0)) + gn) <= 1e3
        kernel = Float32MomentKernel(exact_kernel, R, rel, big, one_pass)
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
    if setup is None or not isinstance(setup[2], Float32MomentKernel):
        return None
    kernel = setup[2]
    # a row kept whenever the float32 bound of either selection (candidates: (1 + rel);
    # the count's band: count_factor) may reach τ ≥ tau0, with room for the exact norm
    f = (1.0 + kernel.rel) ** 2 * max(1.0, kernel.count_factor or 1.0)
    lim = float(tau0) * (1.0 - 1e-6)
    blocks = []
    keep = []
    for a0 in range(0, rows.n, MOMENT_BLOCK):
        D, nrm = kernel.front(rows.X[a0 : a0 + MOMENT_BLOCK])
        with np.errstate(over="ignore", invalid="ignore"):
            gram = kernel.gram(D)
            loc = np.flatnonzero(~(nrm * f < lim))  # NaN: kept
        blocks.append((gram, loc, D[loc], nrm[loc]))
        keep.append(a0 + loc)
    rows.moments_memo = (A.copy(), s.copy(), float(tau0), blocks)
    return np.concatenate(keep) if keep else np.zeros(0, dtype=np.intp)


def clipped_moments(rows: Rows, A: np.ndarray, s: np.ndarray, tau: float,
                    exclude: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """:func:`exact_clipped_moments` in one fast pass: equal to the definition up to rounding.

    With B = A·P = Q·R (QR, R upper triangular) and g = P⁻¹s, A(y_i − s) = Q·R((x_i − p0) − g)
    for every row that the per-record map does not sanitise; clipping commutes with Q. Per
    row block, D = x − p0 − g (p0 first: data far from 0 keep their precision):

    * *float32 tier* (R well conditioned): the Gram DᵀD (syrk) and Σ D, whose image under R
      is the unclipped moments, and float32 norms of R·D widened by a rigorous rounding bound
      (as the float32 norm pass of :class:`~privgauss.clipped_stats.summaries.RowSummaries`)
      to find every row that may reach τ; those rows are mapped exactly and corrected in the
      R frame (−(1 − w²) z zᵀ and (w − 1) z, :func:`~privgauss.linalg.clip_weights`). Costs
      one Gram plus a float32 triangular multiply instead of a float64 one;
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
    memo, rows.moments_memo = rows.moments_memo, None
    if (memo is not None and idx.size == 0 and isinstance(kernel, Float32MomentKernel)
            and float(tau) >= memo[2] and same_frame(A, memo[0]) and same_frame(s, memo[1])):
        # the τ-free part of every block was computed by prepare_moments' pass
        sums = []
        for j, a0 in enumerate(range(0, rows.n, MOMENT_BLOCK)):
            gram, loc, Ds, ns = memo[3][j]
            with np.errstate(over="ignore", invalid="ignore"):
                part = kernel.back(rows.X[a0 : a0 + MOMENT_BLOCK], Ds, ns.copy(), loc, None,
                                   gram)
            if j == 0:  # added as reduce_rows adds the blocks of a pass
                sums = [np.array(p, dtype=np.float64, copy=True) for p in part]
            else:
                for t, p in zip(sums, part, strict=True):
                    t += p
    elif idx.size and not is_dask(rows.X) and isinstance(kernel, Float32MomentKernel):
        bounds = np.searchsorted(idx, np.arange(0, rows.n + MOMENT_BLOCK, MOMENT_BLOCK))
        sums = [np.zeros(d), np.zeros((d, d)), np.zeros(d), np.zeros((d, d)), np.zeros(())]
        for j, a0 in enumerate(range(0, rows.n, MOMENT_BLOCK)):
            drop = idx[bounds[j] : bounds[j + 1]] - a0
            part = kernel(rows.X[a0 : a0 + MOMENT_BLOCK], drop if drop.size else None)
            sums = [t + p for t, p in zip(sums, part, strict=True)]
    else:
        sums = reduce_rows(rows.X, kernel, block=MOMENT_BLOCK)
        for a0 in range(0, idx.size, MOMENT_BLOCK):
            part = kernel(take_rows(rows.X, idx[a0 : a0 + MOMENT_BLOCK]))
            sums = [t - p for t, p in zip(sums, part, strict=True)]
    sD, GD, sZ, GZ, outside = sums
    if count_factor is not None:  # the excluded rows counted apart: the count is over all
        n_out = int(round(float(outside))) + sum(
            outside_count(take_rows(rows.X, idx[a0 : a0 + MOMENT_BLOCK]), A, s,
                          np.zeros(d), tau) for a0 in range(0, idx.size, MOMENT_BLOCK))
        rows.outside_memo = (A.copy(), s.copy(), float(tau), n_out)
    with np.errstate(over="ignore", invalid="ignore"):
        m1 = R @ sD + sZ
        M2 = R @ ((GD + GD.T) / 2) @ R.T + GZ
        M2 = (M2 + M2.T) / 2
    return Q @ (m1 / count), Q @ (M2 / count) @ Q.T
