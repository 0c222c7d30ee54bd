"""Per-cluster Gaussian estimation from joint noisy clipped sums (replaces the per-cluster
black-box learner of Alg. 7 / Alg. 10 of Bie, Kamath, Singhal, NeurIPS 2022, whose replace-one
accounting charges 2ρ_E because a replaced row can change two clusters; spec ``public-data.md``
§4, pitfall P3).

**Neighbours:** replace one row of ``X``; n is public. **Guarantee:** ρ-zCDP (ρ = the budget
given) with respect to the private rows, for every public dataset, provided each row's cluster
label is a function of that row and of public or released values only (true for Alg. 9's public
balls and Alg. 6's released balls).

Releases, all charged to the accountant before their noise is drawn:

1. The k cluster sizes, jointly, discrete Gaussian with L2 sensitivity √2
   (:func:`~privgauss.sensitivity.histogram_l2`: a row leaves one cluster and joins another).
2. ``len(fractions)`` refinement steps. Step t has one *frame* per cluster: a centre c_j and a
   whitening matrix W_j, public (from the cluster's public rows or ball) at t = 1 and afterwards
   a function of the step-(t−1) releases only. Every row of cluster j is mapped to
   z = clip_τ(W_j(x − c_j)) (τ public), and the step releases, jointly over the clusters,

   * V = (V_1, …, V_k), V_j = Σ_{x∈C_j} z, Gaussian noise with L2 sensitivity 2τ, and
   * M = (M_1, …, M_k), M_j = Σ_{x∈C_j} zzᵀ, Frobenius sensitivity √2·τ² (the symmetric matrix
     mechanism: σ on diagonal entries, σ/√2 off them).

   *Proof of the joint sensitivities* (:func:`~privgauss.sensitivity.joint_cluster_sum_l2`,
   :func:`~privgauss.sensitivity.joint_cluster_outer_sum_frobenius`). The frames and τ are
   fixed by public/released values, and a replacement changes one row x → x'. (a) x and x'
   fall in the same cluster j: only V_j, M_j change, by z' − z (norm ≤ 2τ) and z'z'ᵀ − zzᵀ
   (Frobenius² = ‖z‖⁴ + ‖z'‖⁴ − 2(zᵀz')² ≤ 2τ⁴). (b) x in cluster j, x' in j' ≠ j: V changes
   by (−z in block j, +z' in block j'), norm √(‖z‖² + ‖z'‖²) ≤ √2·τ; M by (−zzᵀ, +z'z'ᵀ),
   norm √(‖z‖⁴ + ‖z'‖⁴) ≤ √2·τ². (c) one of them in no cluster: ≤ τ and τ². The maximum over the
   cases is 2τ and √2·τ²: the k clusters cost what one does, no factor 2 on the budget.
   Each release is a Gaussian mechanism at its share of ρ; adaptive zCDP composition over the
   counts and the steps gives ρ in total.

Estimation (post-processing): with ñ_j the noisy size, v = V_j/ñ_j and S = M_j/ñ_j are the
moments of the clipped rows. Clipping shrinks them by a known amount for a Gaussian cluster,
so :func:`undo_clipping` solves E[clip_τ(δ + A u)] = v, E[clip_τ(·)clip_τ(·)ᵀ] = S for the
mean δ and covariance AAᵀ in the frame (u ~ N(0, I) by a fixed, exactly whitened public Monte
Carlo sample) — the matrix version of CoinPress's isotropic ``_undo_shrinkage``; this lets τ be
about √d, where the noise is small. The estimate after step t is the precision-weighted average
of the steps' estimates so far (weights from the public noise scales: ρ_V·(slope/τ)² for the
mean, ρ_M·(a/τ²)² for the covariance, see :func:`_clip_slopes`), and it is the next step's frame
(centre μ̂, whitening Σ̂^{-1/2}), so later steps clip almost isotropic rows.

A noisy size below d + 2 is a failure (⊥): the remaining steps are charged and
:class:`~privgauss.exceptions.EstimationFailed` is raised (public message).
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import gammainc, gammaincc

from .. import sensitivity
from ..exceptions import EstimationFailed, PrivacyBudgetError
from ..gaussian.coinpress.schedule import noise_matched_radius
from ..linalg import clip_images, inv_sqrtm_psd, scaled_floor, split_scales, sym
from ..mechanisms import (
    Release,
    gaussian_mechanism,
    gaussian_sigma_zcdp,
    private_count,
    symmetric_matrix_mechanism,
)
from ..privacy import ZCDP, Budget, BudgetPlan

__all__ = [
    "cluster_plan",
    "CLIP_SCALE",
    "FRACTIONS",
    "MEAN_SHARE",
    "grown_radius",
    "ClusterFrame",
    "clipped_rows",
    "cluster_sums",
    "estimate_clusters",
    "frame_from_public",
    "release_cluster_sums",
    "undo_clipping",
    "undo_clipping_batch",
]

#: Budget fractions of the refinement steps (issue-5 setting: equal thirds, combined by
#: precision, beat (0.2, 0.8) and a single step; public-light passes its own).
FRACTIONS = (1 / 3, 1 / 3, 1 / 3)
#: Share of each step's ρ for the vector sums (the rest: outer products).
MEAN_SHARE = 0.2
#: Clip radius τ_t² = CLIP_SCALE[t]·d (first step: public whitening only; then refined) — the
#: planned radius; :func:`grown_radius` widens it as the budget grows.
CLIP_SCALE = (1.2, 1.0, 1.0)
_MC_PAIRS = 5_000  # antithetic pairs of the public Monte Carlo sample of undo_clipping
_MC_SEED = 20_221  # fixed: the sample is public and the same for every fit
_ITERATIONS = 60
_TOLERANCE = 1e-7  # stop once the model moments match the released ones this closely
_STILL = _TOLERANCE  # or once a step moves (δ, Σ) less than this (a constrained fixed point)
#: or once the residual the step leaves, predicted from the last two (linear convergence: the
#: residual shrinks ~60× a step at EM's radius), is below this fraction of ``_TOLERANCE``
_PREDICTED = 0.25
_START_STEPS = 6  # Newton steps of the start's mean variance (a scalar equation)
_MIN_EIG = 1e-4  # eigenvalue floor (relative to the frame) of the de-clipped covariance
_MAX_EIG = 1e4  # and its cap: noise can ask for an unattainable clipped moment
#: a component of the de-clipping stack whose rows that may be clipped hold more entries than
#: this is corrected alone, the others together (speed only: the same numbers either way)
_GATHER_MAX = 2048


@dataclass(frozen=True)
class ClusterFrame:
    """A cluster's coordinates z = W(x − c); public, or a function of released values."""

    centre: np.ndarray
    whitener: np.ndarray

    def forward(self, X: np.ndarray) -> np.ndarray:
        return (np.asarray(X, dtype=np.float64) - self.centre) @ self.whitener.T

    def backward(self, mean_z: np.ndarray, cov_z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Map a (mean, covariance) in z back: (c + W⁻¹δ, W⁻¹ Σ W⁻ᵀ)."""
        B = np.linalg.inv(self.whitener)
        return self.centre + B @ mean_z, sym(B @ cov_z @ B.T)

    @classmethod
    def from_estimate(cls, mean: np.ndarray, cov: np.ndarray) -> ClusterFrame:
        """Centre μ̂ and a whitening W with W Σ̂ Wᵀ = I, Σ̂ floored in its columns' own units
        (:func:`~privgauss.linalg.scaled_floor` at ``_MIN_EIG``): W = R^{-1/2} D^{-1} with D
        the standard deviations and R the correlation matrix, so a column in units 1e-6
        beside one in 1e6 is whitened by its own scale (a floor relative to the largest
        eigenvalue, as before session 49, gave it a frame 1e8 times its variance, and
        Σ̂^{-1/2} itself loses it to rounding)."""
        s, R = split_scales(scaled_floor(cov, _MIN_EIG))
        return cls(np.asarray(mean, dtype=np.float64), inv_sqrtm_psd(R) / s[None, :])


def frame_from_public(P: np.ndarray, shrink: bool = False) -> ClusterFrame:
    """A frame from a cluster's public rows alone: their mean and the inverse square root of
    their covariance (floored, so duplicated or degenerate public rows still give a valid —
    if useless — frame); one row, or rows with no spread, give the identity. ``shrink``: for
    few public rows (m ≲ d), the covariance is pulled towards :func:`_shrink_target` (the
    isotropic (tr/d)·I, or each column's own variance when the columns are in different
    units) with weight d/(m + d)."""
    P = np.asarray(P, dtype=np.float64)
    m, d = P.shape
    if m < 2:
        return ClusterFrame(P.mean(axis=0), np.eye(d))
    cov = sym(np.cov(P, rowvar=False).reshape(d, d))
    top = float(np.linalg.eigvalsh(cov)[-1])
    if not top > 0:
        return ClusterFrame(P.mean(axis=0), np.eye(d))
    if shrink:
        lam = m / (m + d)
        cov = lam * cov + (1.0 - lam) * np.diag(_shrink_target(np.diag(cov), m))
    return ClusterFrame.from_estimate(P.mean(axis=0), cov)


def _shrink_target(v: np.ndarray, m: int) -> np.ndarray:
    """The diagonal a public covariance of m rows is shrunk towards: the pooled variance
    v̄ = mean(v) (the isotropic (tr/d)·I) when the columns' log-variances spread no more than
    their sampling error (var log v_i ≈ 2/(m − 1)), else v̄^w·v_i^(1−w) with the positive-part
    James–Stein weight w = 2/(m − 1) / var_i(log v_i) — each column's own variance once the
    columns are in different units (a 1e-6 column beside a 1e6 one got 1e12 times its
    variance from (tr/d)·I). Public rows only."""
    mean = float(v.mean())
    pos = v > 0
    if not pos.all() or mean <= 0:
        return np.full(v.shape, mean)
    logs = np.log(v)
    spread = float(np.var(logs))
    noise = 2.0 / max(m - 1, 1)
    if spread <= noise:
        return np.full(v.shape, mean)
    w = noise / spread
    return np.exp(w * math.log(mean) + (1.0 - w) * logs)


def clipped_rows(X: np.ndarray, frame: ClusterFrame, tau: float) -> np.ndarray:
    """z = clip_τ(W(x − c)) for each row: a per-row map; non-finite images (overflow on
    adversarial frames) map to 0, norms re-checked after rescaling."""
    with np.errstate(over="ignore", invalid="ignore"):  # no data-dependent warnings
        Z = frame.forward(X)
    return clip_images(Z, tau)


def cluster_sums(
    X: np.ndarray, labels: np.ndarray, frames: Sequence[ClusterFrame], tau: float
) -> tuple[np.ndarray, np.ndarray]:
    """The exact (non-private) sums: V (k × d) and M (k × d × d) of the clipped rows."""
    k, d = len(frames), X.shape[1]
    V = np.zeros((k, d))
    M = np.zeros((k, d, d))
    for j, frame in enumerate(frames):
        Z = clipped_rows(X[labels == j], frame, tau)
        V[j] = Z.sum(axis=0)
        M[j] = Z.T @ Z
    return V, M


def release_cluster_sums(
    X: np.ndarray,
    labels: np.ndarray,
    frames: Sequence[ClusterFrame],
    tau: float,
    vector_budget: ZCDP,
    matrix_budget: ZCDP,
    *,
    release: Release,
) -> tuple[np.ndarray, np.ndarray]:
    """Noisy (V, M) of :func:`cluster_sums`, released jointly over the clusters: Gaussian noise
    with L2 sensitivity 2τ on V, and the symmetric matrix mechanism with Frobenius sensitivity
    √2·τ² on the stack M (module docstring; σ/√2 on off-diagonal entries).
    ``vector_budget`` + ``matrix_budget`` zCDP under replace-one, for any frames and τ fixed by
    public or released values. Charged to ``release`` (step "cluster-sums" unless it names
    one)."""
    k, d = len(frames), X.shape[1]
    V, M = cluster_sums(X, labels, frames, tau)
    rel = release.named("cluster-sums")
    noisy_v = gaussian_mechanism(V, sensitivity.joint_cluster_sum_l2(tau), vector_budget,
                                 accountant=rel.accountant, noise=rel.noise,
                                 step=rel.name("vector-sums"))
    noisy_m = symmetric_matrix_mechanism(M, sensitivity.joint_cluster_outer_sum_frobenius(tau),
                                         matrix_budget, accountant=rel.accountant,
                                         noise=rel.noise, step=rel.name("outer-sums"))
    return np.asarray(noisy_v).reshape(k, d), noisy_m


@functools.lru_cache(maxsize=16)
def _mc_sample(d: int) -> np.ndarray:
    """A fixed public N(0, I_d) sample, antithetic and exactly whitened (mean 0, second
    moment I), so that without clipping the moment model is exact: 2·``_MC_PAIRS`` rows, the
    first half H, the second −H. Computed once per d (read-only): private EM de-clips k
    components in every step."""
    U = np.random.default_rng(_MC_SEED + d).standard_normal((_MC_PAIRS, d))
    U = U @ inv_sqrtm_psd(U.T @ U / _MC_PAIRS)
    U = np.vstack([U, -U])
    U.flags.writeable = False
    return U


@dataclass(frozen=True)
class _Sample:
    """A Monte Carlo sample u_1..u_n of :func:`undo_clipping` as the moments its clipped model
    needs: rows ``H`` sorted by decreasing norm (``norms``), and −H as well when
    ``antithetic``; their Σ u uᵀ ``G`` and Σ u ``s``; ``sq_sums[c]`` the sum of the c largest
    squared norms."""

    H: np.ndarray
    norms: np.ndarray
    G: np.ndarray
    s: np.ndarray
    antithetic: bool
    sq_sums: np.ndarray

    @property
    def n(self) -> int:
        return self.H.shape[0] * (2 if self.antithetic else 1)

    @staticmethod
    def of(U: np.ndarray, antithetic: bool = False) -> _Sample:
        """``U`` (all rows; with ``antithetic``, the first half of them: the rest is −U)."""
        U = np.asarray(U, dtype=np.float64)
        norms = np.sqrt(np.einsum("ij,ij->i", U, U))
        order = np.argsort(-norms, kind="stable")
        H, norms = U[order], norms[order]
        G = H.T @ H
        sq_sums = np.concatenate([[0.0], np.cumsum(norms * norms)])
        if antithetic:
            return _Sample(H, norms, G + G, np.zeros(U.shape[1]), True, sq_sums)
        return _Sample(H, norms, G, H.sum(axis=0), False, sq_sums)

    def trace_deficit(self, t2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The trace of :meth:`deficit`, Σ (‖u‖² − t²) over the rows beyond t, divided by
        n (from the norms' running sums), and the share of rows beyond t (its derivative
        in t² is minus that share)."""
        beyond = np.searchsorted(-self.norms, -np.sqrt(t2), side="left")
        share = (2.0 if self.antithetic else 1.0) / self.n
        return (self.sq_sums[beyond] - beyond * t2) * share, beyond * share

    def deficit(self, t2: np.ndarray) -> np.ndarray:
        """I − the second moment of clip_t(u) over the sample, for each t² of ``t2`` (m,):
        Σ u uᵀ (1 − t²/‖u‖²) over the rows beyond t, divided by n (m × d × d); clipping
        N(0, λI) at radius² t²·λ leaves λ(I − deficit) (the sample is exactly whitened)."""
        d = self.H.shape[1]
        out = np.zeros((t2.size, d, d))
        beyond = np.searchsorted(-self.norms, -np.sqrt(t2), side="left")
        for j, c in enumerate(beyond.tolist()):
            if c:
                Hc = self.H[:c]
                out[j] = (Hc.T * (1.0 - t2[j] / self.norms[:c] ** 2)) @ Hc
        return out * ((2.0 if self.antithetic else 1.0) / self.n)

    def clipped_moments(self, A: np.ndarray, a_norm: np.ndarray, delta: np.ndarray, tau: float
                        ) -> tuple[np.ndarray, np.ndarray]:
        """(mean, second moment) of clip_τ(δ_j + A_j u) over the sample, for a stack of m
        components at once: ``A`` (m × d × d, each symmetric), ``a_norm`` (m,) ≥ their spectral
        norms, ``delta`` (m × d); returns (m × d, m × d × d). The moments of the unclipped
        δ + A u follow from G and s, and only rows that may be clipped add a correction:
        ‖δ + A u‖ ≤ ‖δ‖ + ‖A‖‖u‖, so rows with ‖u‖ ≤ (τ − ‖δ‖)/‖A‖ are inside the ball and
        never clipped (about a tenth of the sample is beyond that at EM's radius). The same
        numbers as clipping every row and summing, up to rounding, and for each component
        bit for bit those of a one-component stack; private EM de-clips k components per
        step, a few iterations each, and clipping the whole sample was a fifth of a fit at
        ε = 1e4 (one component a call, the calls' overhead was most of de-clipping's time
        at k = 32, d = 2: issue 28)."""
        n = self.n
        m_stack, d = delta.shape
        As = A @ self.s
        total = n * delta + As  # Σ (δ + A u), then Σ (δ + A u)(δ + A u)ᵀ:
        cross = As[:, :, None] * delta[:, None, :]
        second = (A @ self.G @ A + cross + np.swapaxes(cross, 1, 2)
                  + n * (delta[:, :, None] * delta[:, None, :]))
        dd = (delta[:, None, :] @ delta[:, :, None])[:, 0]  # ‖δ‖² (m × 1), as δ·δ rounds
        reach = (tau - np.sqrt(dd[:, 0])) / np.maximum(a_norm, 1e-300)
        # the rows with norm > reach (a margin for rounding): a prefix, norms decrease
        m = np.searchsorted(-self.norms, -reach * (1.0 - 1e-9), side="left")
        # the rows that may be clipped: P = H[:m_j]·A_j and P·δ_j by one product per
        # component, as a component alone makes them (BLAS rounds a row of H[:m]·A
        # differently for another row count m, and private EM amplified that to 1e-6
        # relative over a fit). A component with many such rows is corrected alone; the
        # others' rows are gathered and corrected in one pass (k = 32 components of d = 2
        # have ~100-250 rows each: one pass each was mostly the calls' overhead)
        comps = np.flatnonzero(m)
        alone = m[comps] * d > _GATHER_MAX
        for j in comps[alone].tolist():
            P = self.H[: m[j]] @ A[j]  # rows u·A = (A u)ᵀ
            _add_clipped(P, P @ delta[j], dd[j, 0], delta[j], j, tau, self.antithetic,
                         total, second)
        gather = comps[~alone]
        if gather.size:
            Ps = [self.H[:mj] @ A[j] for j, mj in zip(gather.tolist(), m[gather].tolist(),
                                                       strict=True)]
            b = np.concatenate([P @ delta[j] for j, P in zip(gather.tolist(), Ps, strict=True)])
            owner = np.repeat(gather, m[gather])
            _add_clipped(np.concatenate(Ps), b, dd[owner, 0], delta, owner, tau,
                         self.antithetic, total, second)
        return total / n, second / n


def _add_clipped(P: np.ndarray, b: np.ndarray, dd: float | np.ndarray, delta: np.ndarray,
                 owner: int | np.ndarray, tau: float, antithetic: bool, total: np.ndarray,
                 second: np.ndarray) -> None:
    """Add to ``total`` and ``second`` (in place) the corrections of the rows that clipping at
    ``tau`` shrinks: rows P = (A u)ᵀ with b = δᵀA u (so ‖δ ± A u‖² = ‖P‖² ± 2b + ``dd``) of
    component ``owner`` (δ = ``delta``), or, with ``owner`` an array, of the components it
    names row by row (contiguous runs; ``dd`` per row, δ = ``delta[owner]``). Each
    component's sums are the products it makes alone, bit for bit."""
    a = np.einsum("ij,ij->i", P, P)
    b = b + b
    tau2 = tau * tau
    for sign in (1.0, -1.0) if antithetic else (1.0,):
        q = a + b if sign > 0 else a - b  # ‖δ ± A u‖² (± exact: as a + (±1)·b)
        q += dd
        rows = (q > tau2).nonzero()[0]
        if rows.size == 0:
            continue
        Zc = P.take(rows, axis=0)  # take: numpy's fast gather, the same values
        if sign < 0:
            np.negative(Zc, out=Zc)
        if isinstance(owner, int):
            Zc += delta
            comp, cuts = None, [0, rows.size]
        else:
            comp = owner[rows]
            Zc += delta[comp]
            cuts = [0, *((comp[1:] != comp[:-1]).nonzero()[0] + 1).tolist(), rows.size]
        f = tau / np.sqrt(q[rows])  # < 1: these rows are clipped
        f1, f2 = f - 1.0, f * f - 1.0
        for lo, hi in itertools.pairwise(cuts):
            j, Zj = (owner if comp is None else int(comp[lo])), Zc[lo:hi]
            total[j] += f1[lo:hi] @ Zj
            second[j] += (Zj.T * f2[lo:hi]) @ Zj


@functools.lru_cache(maxsize=16)
def _default_sample(d: int) -> _Sample:
    return _Sample.of(_mc_sample(d)[:_MC_PAIRS], antithetic=True)


def _clip_slopes(d: int, t2: float) -> tuple[float, float, float]:
    """Derivatives of the clipped moments of N(δ, λI) at δ = 0, radius² = t²·λ (public): the
    mean moves by slope_m·dδ and the covariance by a·dΣ + b·tr(dΣ)·I. With r² ~ χ²_d:
    slope_m = P(r² ≤ t²) + (1 − 2/d)·t²·E[r⁻²; r² > t²], a = s + 2c/(d(d+2)),
    b = c/(d(d+2)), s = E[min(r², t²)]/d, c = −t²·P(r² > t²). Used as the Newton step of
    :func:`undo_clipping` (exact near isotropy, a safe damped step elsewhere)."""
    slope_m, a, b = _clip_slopes_batch(d, np.array([t2], dtype=np.float64))
    return float(slope_m[0]), float(a[0]), float(b[0])


def _clip_slopes_batch(d: int, t2: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_clip_slopes` for an array of t² (elementwise, the same arithmetic)."""
    tail = gammaincc(d / 2, t2 / 2)  # P(χ²_d > t²)
    s = (d * gammainc(d / 2 + 1, t2 / 2) + t2 * tail) / d
    c = -t2 * tail
    slope_m = 1.0 - tail
    if d > 2:
        slope_m += (1.0 - 2.0 / d) * t2 * gammaincc(d / 2 - 1, t2 / 2) / (d - 2)
    return np.maximum(slope_m, 1e-3), np.maximum(s + 2 * c / (d * (d + 2)), 1e-3), c / (d * (d + 2))


def undo_clipping(
    v: np.ndarray, S: np.ndarray, tau: float, U: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(δ, Σ) of the Gaussian N(δ, Σ) whose clipped rows clip_τ(z) have mean ``v`` and second
    moment ``S`` (fixed-point iteration on the public Monte Carlo sample ``U``; eigenvalues of Σ
    kept in [1e-4, 1e4]·τ²/d). Post-processing of released values only. One component of
    :func:`undo_clipping_batch`."""
    delta, cov = undo_clipping_batch(np.asarray(v)[None], np.asarray(S)[None], tau, U)
    return delta[0], cov[0]



def _retire(go: np.ndarray, out_delta: np.ndarray, out_cov: np.ndarray, act: np.ndarray,
            va: np.ndarray, Sa: np.ndarray, delta: np.ndarray, cov: np.ndarray,
            *more: np.ndarray) -> tuple[np.ndarray, ...]:
    """:func:`undo_clipping_batch`'s bookkeeping: the active components that stop now (not
    ``go``) write their (δ, Σ) to the outputs (rows ``act``); returns the active index, the
    targets, the iterates and ``more`` of those that go on."""
    out_delta[act[~go]], out_cov[act[~go]] = delta[~go], cov[~go]
    return (act[go], va[go], Sa[go], delta[go], cov[go], *(m[go] for m in more))

def undo_clipping_batch(
    v: np.ndarray, S: np.ndarray, tau: float, U: np.ndarray | None = None,
    floor_tau: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`undo_clipping` for m components clipped at the same radius at once: ``v`` (m ×
    d) and ``S`` (m × d × d) their clipped rows' mean and second moment; returns δ (m × d) and
    Σ (m × d × d). Each component iterates as it would alone (the Newton-like step of
    :func:`_clip_slopes`, its eigenvalues kept in [1e-4, 1e4]·τ²/d) from the isotropic
    start (:meth:`_Sample.deficit`) and stops on its own (its moments matched to
    ``_TOLERANCE``, a step that moves it less than ``_STILL``, or a step whose residual,
    predicted from the last two, is below ``_PREDICTED``·``_TOLERANCE``);
    the stack's clipped moments, eigendecompositions and slopes are computed together for
    the components still iterating. The same numbers as one call per component, bit for bit
    (private EM and :func:`estimate_clusters` de-clip a step's components by one call).
    ``floor_tau`` (default ``tau``) sets that eigenvalue range instead of ``tau``: a radius
    grown with the budget (:func:`grown_radius`) must not lift the floor with it.
    Post-processing of released values only."""
    v = np.asarray(v, dtype=np.float64)
    m, d = v.shape
    if m == 0:
        return np.empty((0, d)), np.empty((0, d, d))
    sample = _default_sample(d) if U is None else _Sample.of(U)
    ref = tau if floor_tau is None else float(floor_tau)
    lo, hi = _MIN_EIG * ref * ref / d, _MAX_EIG * max(ref, tau) ** 2 / d
    eye = np.eye(d)
    S_obs = sym(S) - v[:, :, None] * v[:, None, :]
    # the start: the observed covariance (eigenvalues ≥ lo) plus what clipping takes from
    # N(0, λI) on the sample itself, λ(I − second moment of clip(u)) (:meth:`_Sample.deficit`),
    # with λ such that the clipped N(0, λI) has the observed mean variance (a scalar equation,
    # by Newton). Exact for an isotropic centred Gaussian (one evaluation); on private EM's
    # releases at ε = 1e4 it leaves ~1/30 of the residual the observed moments leave (the
    # anisotropy's and the mean's effects), one evaluation fewer
    w, Q = np.linalg.eigh(sym(S_obs))
    w = np.maximum(w, lo)
    floored = (Q * w[:, None, :]) @ np.swapaxes(Q, 1, 2)
    observed = w.sum(axis=1) / d
    lam = observed
    for _ in range(_START_STEPS):  # λ(1 − tr deficit(τ²/λ)/d) = the observed mean variance
        t2 = tau * tau / lam
        tr_def, beyond = sample.trace_deficit(t2)
        slope_l = np.maximum(1.0 - (tr_def + beyond * t2) / d, 1e-3)  # its λ-derivative
        lam = np.clip(lam - (lam * (1.0 - tr_def / d) - observed) / slope_l, lo, hi)
    start = floored + lam[:, None, None] * sample.deficit(tau * tau / lam)
    w, Q = np.linalg.eigh(sym(start))
    w = np.clip(w, lo, hi)
    cov = sym((Q * w[:, None, :]) @ np.swapaxes(Q, 1, 2))
    root = sym((Q * np.sqrt(w)[:, None, :]) @ np.swapaxes(Q, 1, 2))  # from the same pairs
    delta = v.copy()
    out_delta, out_cov = np.empty((m, d)), np.empty((m, d, d))
    act = np.arange(m)  # the components still iterating; the arrays below hold only them
    va, Sa = v, S_obs
    last = np.full(m, np.nan)  # the previous evaluation's residual (none yet)
    for _ in range(_ITERATIONS):
        g1, second = sample.clipped_moments(root, np.sqrt(w[:, -1]), delta, tau)
        S_model = sym(second) - g1[:, :, None] * g1[:, None, :]
        step_mean, step_cov = va - g1, Sa - S_model
        e_m, e_c = np.abs(step_mean).max(axis=1), np.abs(step_cov).max(axis=(1, 2))
        resid = np.where(e_c > e_m, e_c, e_m)  # max() as Python's: NaN goes on
        go = ~(resid < _TOLERANCE)
        if not go.all():
            act, va, Sa, delta, cov, step_mean, step_cov, resid, last = _retire(
                go, out_delta, out_cov, act, va, Sa, delta, cov, step_mean, step_cov, resid,
                last)
            if act.size == 0:
                break
        slope_m, a, b = _clip_slopes_batch(
            d, tau * tau * d / np.maximum(np.trace(cov, axis1=1, axis2=2), 1e-300))
        new_delta = delta + step_mean / slope_m[:, None]
        tr = np.trace(step_cov, axis1=1, axis2=2) / np.maximum(a + b * d, 1e-3)
        w, Q = np.linalg.eigh(sym(cov + (step_cov - (b * tr)[:, None, None] * eye)
                                  / a[:, None, None]))
        w = np.clip(w, lo, hi)
        new_cov = sym((Q * w[:, None, :]) @ np.swapaxes(Q, 1, 2))
        e_m = np.abs(new_delta - delta).max(axis=1)
        e_c = np.abs(new_cov - cov).max(axis=(1, 2))
        delta, cov = new_delta, new_cov
        # a fixed point with an eigenvalue at its floor or cap (noisy moments no Gaussian
        # clips to): the residual stays, the iterate does not move (it contracts ~10× a
        # step); the remaining steps to the cap of _ITERATIONS changed it by < 3e-8 relative
        # on 604 calls of 4 fits, and were 2/3 of de-clipping's time
        # the residual this step leaves is about resid·(resid/last) (its contraction holds
        # from one step to the next): below the tolerance with room, the evaluation that
        # would confirm it is skipped (the same (δ, Σ) is returned; NaN goes on)
        go = ~((np.where(e_c > e_m, e_c, e_m) < _STILL)
               | (resid * (resid / last) < _PREDICTED * _TOLERANCE))
        last = resid
        if not go.all():
            act, va, Sa, delta, cov, w, Q, last = _retire(go, out_delta, out_cov, act, va, Sa,
                                                          delta, cov, w, Q, last)
            if act.size == 0:
                break
        root = sym((Q * np.sqrt(w)[:, None, :]) @ np.swapaxes(Q, 1, 2))  # from the same pairs
    if act.size:  # the cap of _ITERATIONS
        out_delta[act], out_cov[act] = delta, cov
    return out_delta, out_cov


def grown_radius(tau: float, n_min: float, vector_budget: ZCDP, matrix_budget: ZCDP) -> float:
    """The clip radius of a step whose planned radius is ``tau`` (√(CLIP_SCALE·d)), grown with
    the budget as CoinPress's practical steps grow theirs
    (:func:`~privgauss.gaussian.coinpress.schedule.noise_matched_radius`): until the noise
    of the smallest cluster's clipped mean (L2 sensitivity 2τ at ρ_V, over ``n_min`` rows)
    and of its clipped second moment (√2·τ² at ρ_M) is almost the sampling error's share
    that function allows, the smaller of the two growths. At a small budget the noise is
    already larger and ``tau`` stands (the same fit as before); as ρ → ∞ the radius grows
    without bound, so fewer and fewer rows are clipped and the de-clipping's Gaussian model
    stops mattering: the estimate tends to each cluster's np.mean / np.cov (DESIGN.md rule
    15; heavy-tailed clusters stayed 1.2 nat/row below scikit-learn at ε = 1e12 with the
    planned radius, benchmarks/edge_sweep.py). ``n_min`` is the smallest released (noisy)
    cluster size: a DP output, so τ is a function of public and released values, as the
    joint sensitivities require (module docstring)."""
    n = max(float(n_min), 1.0)
    sigma_v = gaussian_sigma_zcdp(sensitivity.joint_cluster_sum_l2(tau), vector_budget.rho) / n
    sigma_m = gaussian_sigma_zcdp(sensitivity.joint_cluster_outer_sum_frobenius(tau),
                                  matrix_budget.rho) / n
    return max(tau, min(noise_matched_radius(tau, sigma_v, int(n), 1),
                        noise_matched_radius(tau, sigma_m, int(n), 2)))


def cluster_plan(
    budget: ZCDP, count_share: float, fractions: Sequence[float] | np.ndarray, mean_share: float
) -> BudgetPlan:
    """The budget plan of :func:`estimate_clusters` (public): ``count_share`` of ρ to the
    sizes ("counts"), then step t gets ``fractions[t]`` (normalised) of the rest, split
    ``mean_share`` / 1 − ``mean_share`` between its vector ("step-t/vector-sums") and
    outer-product ("step-t/outer-sums") sums — the names :func:`estimate_clusters` charges
    them under (after its ``step``). The parts compose to exactly ``budget``."""
    fr = np.asarray(fractions, dtype=np.float64)
    fr = fr / fr.sum()
    rho = float(budget.rho)
    rho_steps = rho * (1.0 - count_share) * fr
    parts: dict[str, Budget] = {"counts": ZCDP(rho * count_share)}
    for t, r in enumerate(rho_steps):
        parts[f"step-{t + 1}/vector-sums"] = ZCDP(r * mean_share)
        parts[f"step-{t + 1}/outer-sums"] = ZCDP(r * (1.0 - mean_share))
    return BudgetPlan.of(budget, parts)


def estimate_clusters(
    X: np.ndarray,
    labels: np.ndarray,
    frames: Sequence[ClusterFrame],
    budget: ZCDP,
    *,
    count_share: float,
    release: Release,
    fractions: Sequence[float] = FRACTIONS,
    clip_scale: Sequence[float] = CLIP_SCALE,
    mean_share: float = MEAN_SHARE,
    needed_n: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(weights, means, covariances) of the clusters ``labels`` = 0..k−1 (other labels: in no
    cluster) from their public ``frames``; ρ-zCDP (ρ = ``budget.rho``) under replace-one, n
    public, for any frames (module docstring). ``count_share`` of ρ goes to the sizes; step t
    gets ``fractions[t]`` of the rest (split ``mean_share`` / 1 − ``mean_share`` between the
    vector and outer-product sums) with τ_t² = ``clip_scale[t]``·d, grown with the budget by
    :func:`grown_radius` (from the released sizes). Charged to ``release``
    (step "clusters" unless it names one)."""
    rel = release.named("clusters")
    accountant, step = rel.accountant, rel.step
    X = np.asarray(X, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.int64)
    k, d = len(frames), X.shape[1]
    fr = np.asarray(fractions, dtype=np.float64)
    if fr.ndim != 1 or fr.size < 1 or (fr <= 0).any() or len(clip_scale) != fr.size:
        raise ValueError("fractions must be positive, one per step, with one clip_scale each")
    if not (0 < count_share < 1 and 0 < mean_share < 1):
        raise ValueError("count_share and mean_share must be in (0, 1)")
    budget_plan = cluster_plan(budget, count_share, fr, mean_share)
    plan = [
        (
            budget_plan.part(f"step-{t + 1}/vector-sums", ZCDP),
            budget_plan.part(f"step-{t + 1}/outer-sums", ZCDP),
        )
        for t in range(fr.size)
    ]
    if not accountant.can_spend(budget):
        raise PrivacyBudgetError(f"the accountant cannot pay {budget} for the cluster estimation")
    src = rel.noise
    counts = np.bincount(labels[(labels >= 0) & (labels < k)], minlength=k)
    noisy = private_count(counts, budget_plan["counts"], accountant=accountant, noise=src,
                          step=f"{step}/counts",
                          sensitivity=sensitivity.histogram_l2()).astype(np.float64)
    if (noisy < d + 2).any():
        for t, (bv, bm) in enumerate(plan):
            accountant.spend(ZCDP(bv.rho + bm.rho), step=f"{step}/step-{t + 1}",
                             note="unused: failed")
        raise EstimationFailed(f"a cluster's noisy size is below the d + 2 = {d + 2} rows its "
                               "estimation needs", step=f"{step}/counts", needed_n=needed_n)
    weights = noisy / noisy.sum()
    frames = list(frames)
    means, covs = np.zeros((k, d)), np.zeros((k, d, d))
    total_m, total_c = np.zeros(k), np.zeros(k)
    for t, ((bv, bm), scale) in enumerate(zip(plan, clip_scale, strict=True)):
        planned = math.sqrt(float(scale) * d)
        tau = grown_radius(planned, float(noisy.min()), bv, bm)
        V, M = release_cluster_sums(X, labels, frames, tau, bv, bm,
                                    release=rel.at(f"step-{t + 1}"))
        deltas, dcovs = undo_clipping_batch(V / noisy[:, None], M / noisy[:, None, None], tau,
                                            floor_tau=planned)
        for j, (frame, delta, cov) in enumerate(zip(frames, deltas, dcovs, strict=True)):
            mean_t, cov_t = frame.backward(delta, cov)
            # precision weights of this step's noise: σ ∝ τ/(√ρ_V·slope), τ²/(√ρ_M·a)
            slope_m, a, _ = _clip_slopes(d, tau * tau * d / max(float(np.trace(cov)), 1e-300))
            w_m, w_c = bv.rho * (slope_m / tau) ** 2, bm.rho * (a / tau**2) ** 2
            total_m[j] += w_m
            total_c[j] += w_c
            means[j] += (w_m / total_m[j]) * (mean_t - means[j])
            covs[j] += (w_c / total_c[j]) * (cov_t - covs[j])
            if t + 1 < len(plan):
                frames[j] = ClusterFrame.from_estimate(means[j], covs[j])
    return weights, means, covs

