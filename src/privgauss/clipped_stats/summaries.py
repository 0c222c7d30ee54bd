"""The fast evaluation of clipped statistics from two-pass summaries of the rows
(:class:`RowSummaries`, used by :class:`~privgauss.clipped_stats.Rows` for n ≥ 4096).

Two passes give the Gram matrix G of the rows about their mean and each row's norm ‖u_i‖ in
the frame u_i = T(x_i − x̄) that whitens G (Cholesky; triangular multiply), plus its
coordinates in a few directions V. A step then writes A(y_i − s) − c = C(u_i − q) + r
(C = A·P·T⁻¹), bounds every row's norm from ‖C V a_i‖ and ‖C(I − VVᵀ)‖ (V refreshed in one
pass when C is large off V), maps exactly only the rows whose bound reaches τ — or, when too
many do, finds them from exact norms in one triangular pass (float32 rows with a rigorous
rounding bound when they fit in memory) — and corrects the closed form C G Cᵀ + … for them.
Each result equals its clip-then-sum definition up to rounding (None when the summaries
cannot certify that: the caller's exact pass decides); nothing here is released.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ..backends import block_rows, is_dask, map_rows, reduce_rows, take_rows
from .kernels import (
    MOMENT_BLOCK,
    centred_gram_kernel,
    projection_kernel,
    triangular_norms_kernel,
    whitened_kernel,
)
from .record_maps import MAX_VALUE
from .rounding import EPS64, kappa32

__all__ = ["PROJECTION_BYTES", "SUMMARY_ROW_BYTES", "U32_BYTES", "RowSummaries"]

SUMMARY_ROW_BYTES = 48  # memory per row of the summaries (norms, bounds, a direction, temps)
_MAX_CANDIDATES = 0.5  # above this fraction of rows to map exactly, the exact pass is cheaper
_MAX_CANDIDATES_U32 = 0.9  # the same for data small enough for float32 rows (gathered at once)
_MAX_BOUND_CANDIDATES = 0.2  # above this, exact norms (a triangular pass) select the rows
_BOUND_SLACK = 1e-9
_CANCEL_LIMIT = 1e4
_MAX_DIRECTIONS = 24  # directions kept per row for the candidate bound
PROJECTION_BYTES = 1 << 28  # memory for the per-row coordinates in those directions
_BOUND_BLOCK = 1 << 18  # rows per block of the candidate bound (bounded temporaries)
U32_BYTES = 1 << 28  # memory for a float32 copy of the whitened rows (in-memory data only)
_U32_BLOCK = 8192  # rows per block of the float32 norm pass


class RowSummaries:
    """The two-pass summaries of the rows y_i = sanitize(P(x_i − p0)) of a
    :class:`~privgauss.clipped_stats.Rows` (y_i = x_i without a map), computed once on first
    use, and the clipped statistics they give: :meth:`second_moment`, :meth:`clipped_mean`
    and the candidate rows of a clipped count (:meth:`outside_candidates`)."""

    def __init__(self, X: Any, P: np.ndarray | None, p0: np.ndarray | None,
                 center: np.ndarray) -> None:
        self.X = X
        self.n, self.d = int(X.shape[0]), int(X.shape[1])
        self.P, self.p0, self.center = P, p0, center
        self._summary: dict[str, Any] | None = None

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
            G, m = reduce_rows(self.X, partial(centred_gram_kernel, q=q1))
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
                un2, Z = map_rows(self.X, partial(whitened_kernel, Tf=Tf, q=q, V=V))
            else:
                step = block_rows(d)
                parts = [whitened_kernel(self.X[a : a + step], Tf, q, V, U32, a)
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
        slack = _BOUND_SLACK + 100.0 * d * EPS64 * cond
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
        margin = 64.0 * (Z.shape[1] + 1) * EPS64 * S["un2"]
        S["V"], S["Z"] = V, Z
        S["rn"] = np.sqrt(np.maximum(rn2, 0.0) + margin)

    def _refresh_projections(self, S: dict[str, Any], C: np.ndarray, need: float) -> bool:
        """One pass: new directions V (the current V's first column, if any, and the right
        singular vectors of C with singular value above ``need``), so that ‖C‖ off V is at most
        ``need``. False when that takes more than _MAX_DIRECTIONS directions."""
        _, sv, Vt = np.linalg.svd(C)
        k = int(np.count_nonzero(sv > need))
        if k > min(_MAX_DIRECTIONS, PROJECTION_BYTES // (8 * self.n) - 1):
            return False
        keep = S["V"][:, :1]  # the direction of the prior centre, if any
        V, _ = np.linalg.qr(np.hstack([Vt[:k].T, keep]))
        M = S["T"].T @ V  # Z = (x − q) Tᵀ V
        q = S["q"]
        Z = map_rows(self.X, partial(projection_kernel, q=q, M=M))[0]
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
        kappa = kappa32(self.d)
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
        sl = S["slack"] + 100.0 * self.d * EPS64 * cond
        if not (np.isfinite(R).all() and np.isfinite(Rq).all() and sl < 1e-4):
            return None
        kernel = partial(triangular_norms_kernel, Rf=np.asfortranarray(R), x0=S["q"], Rq=Rq)
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
        for a0 in range(0, idx.size, MOMENT_BLOCK):
            B = take_rows(self.X, idx[a0 : a0 + MOMENT_BLOCK])
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

    def second_moment(self, A: np.ndarray, s: np.ndarray, tau: float) -> np.ndarray | None:
        """Σ_i clip_τ(W_i) clip_τ(W_i)ᵀ / n for W_i = A(y_i − s), from the summaries plus the
        exact candidate rows; None when they cannot certify it (the exact pass decides)."""
        from ..linalg import clip_weights

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

    def clipped_mean(self, A: np.ndarray, s: np.ndarray, center: np.ndarray, tau: float
                     ) -> np.ndarray | None:
        """mean_i clip_{B(center, τ)}(W_i) for W_i = A(y_i − s), from the summaries plus the
        exact candidate rows; None when they cannot certify it (the exact pass decides)."""
        from ..linalg import clip_weights

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

