"""The per-block kernels of the one-pass clipped moments
(:func:`~privgauss.clipped_stats.moments.clipped_moments`) in a fixed, public frame
(:class:`MomentFrame`): a float64 tier (:class:`ExactMomentKernel`) and a float32 tier
(:class:`Float32MomentKernel`) that finds the rows that may reach the ball from float32 norms
widened by a rigorous rounding bound. Module-level classes holding public quantities only:
picklable to dask workers. Nothing here is released."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .kernels import MOMENT_BLOCK, moments_of, trmm
from .outside import outside_rows
from .record_maps import affine_rows, mapped_inputs
from .rounding import EPS64

__all__ = ["CORRECT_LIMIT", "ExactMomentKernel", "Float32MomentKernel", "MomentFrame"]

CORRECT_LIMIT = 1e6  # clipped rows up to this squared norm / τ² are corrected after the Gram


@dataclass(frozen=True, eq=False)
class MomentFrame:
    """The public frame of a one-pass clipped-moments computation. The definition's rows are
    W = A(y − s) with y = sanitize(P(x − p_map)) (P, p_map None: y = x); with A·P = Q·R (QR)
    and g = P⁻¹s they are W = Q·z for z = R(x − p0 − g) whenever the map does not sanitise,
    which a public bound guarantees for ‖z‖² ≤ ``z_lim2`` (other rows are mapped by the
    definition and rotated by Q)."""

    P: np.ndarray | None  # the per-record input map (None: none)
    p_map: np.ndarray | None  # its shift
    A: np.ndarray
    s: np.ndarray
    Q: np.ndarray
    Rf: np.ndarray  # R, Fortran order (BLAS triangular multiply)
    p0: np.ndarray  # subtracted first (data far from 0 keep their precision)
    g: np.ndarray
    gn: float  # ‖g‖ (0: g is not subtracted)
    z_lim2: float


class ExactMomentKernel:
    """Per-block kernel of :func:`clipped_moments`, float64 tier: (0, 0, Σ z_i, Σ z_i z_iᵀ) of the
    clipped rows z_i = clip_τ(R(x_i − p0 − g)) in the R frame (rows the per-record map
    y = sanitize(P(x − p_map)) may sanitise: the definition's map, rotated by Q) in the public
    ``frame``, at radius ``tau``; with ``count_factor``, also the number of rows outside the
    ball (see :meth:`outside`)."""

    def __init__(self, frame: MomentFrame, tau: float, count_factor: float | None = None
                 ) -> None:
        f = frame
        self.P, self.p_map, self.A, self.s, self.Q = f.P, f.p_map, f.A, f.s, f.Q
        self.Rf, self.p0, self.g, self.gn, self.z_lim2 = f.Rf, f.p0, f.g, f.gn, f.z_lim2
        self.tau = tau
        self.t2 = float(tau) * float(tau)
        self.correct2 = CORRECT_LIMIT * self.t2
        d = int(f.Rf.shape[1])
        self.d, self.zero_d, self.zero_dd = d, np.zeros(d), np.zeros((d, d))
        # count the rows outside the ball (rows without an input map): a row whose computed
        # norm in the R frame times count_factor is below r is inside by the definition
        self.count_factor = count_factor
        self.r = tau * (1.0 - 4.0 * (d + 2) * EPS64)

    def outside(self, Bk: np.ndarray, idx: np.ndarray, nrm: np.ndarray) -> np.ndarray:
        """(the number of rows outside the ball,) among the rows ``idx`` of the block — the
        only ones that may be — from their computed float64 norms ``nrm`` in the R frame (NaN:
        a row to evaluate): beyond r·factor·(1 + 4ε) a row is outside by the definition too,
        below r/factor inside; the rows between are evaluated by :func:`outside_rows`."""
        f = self.count_factor
        assert f is not None
        r, hi = self.r, self.r * f * (1.0 + 4.0 * EPS64)
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
                outside_rows(Bk[idx[band]], self.A, self.s, self.zero_d, self.tau)))
        return np.array(float(n_out))

    def __call__(self, Bk: np.ndarray) -> tuple[np.ndarray, ...]:
        from ..linalg import clip_rows

        d, tau, t2, zero_d, zero_dd = self.d, self.tau, self.t2, self.zero_d, self.zero_dd
        with np.errstate(over="ignore", invalid="ignore"):
            D = Bk - self.p0
            if self.gn > 0:
                D -= self.g
            Z = trmm(self.Rf, D, lower=False).T  # rows R(x − p0 − g), in D's memory
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
            return (zero_d, zero_dd, *moments_of(Z), cnt)
        if float(nrm2[out].max()) > self.correct2:
            Z[out] = clip_rows(Z[out], np.zeros(d), tau)[0]
            return (zero_d, zero_dd, *moments_of(Z), cnt)
        sm, G = moments_of(Z)
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


class Float32MomentKernel:
    """Per-block kernel of :func:`clipped_moments`, float32 tier: (Σ D_i, DᵀD, Σ (w_i − 1) z_i,
    −Σ (1 − w_i²) z_i z_iᵀ) for D = x − p0 − g and the candidate rows z_i = R D_i (float32
    norms widened by ``rel`` select them); a block with a row at or beyond ``big`` goes to the
    float64 kernel. ``drop`` (in memory only) zeroes excluded rows. BLAS routines are looked
    up on call (they do not pickle): picklable to dask workers."""

    def __init__(self, exact: ExactMomentKernel, R: np.ndarray, rel: float, big: float,
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
            self.tiled = np.tile(self.off if self.one_pass else ex.p0, MOMENT_BLOCK)
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
        from ..linalg import clip_weights

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


