"""Pure ε-DP Gaussian learning by private hypothesis selection over a finite cover.

Bun, Kamath, Steinke and Wu (2019, "Private Hypothesis Selection", NeurIPS; BKSW) turn any finite
α-cover of a distribution class into an ε-DP learner: score every candidate from the data and
pick one with the exponential mechanism. Bie, Kamath and Singhal (2022, Lemma 2.24(3) / 3.2(2),
spec E2) use it as their pure-DP Gaussian learner after public preconditioning. This module builds
explicit covers and implements two scores of our own writing:

* ``score="scheffe"`` — the BKSW score. For candidates H_i, H_j let W_ij = {x: H_i(x) > H_j(x)}
  (the Scheffé set), p_ij = H_i(W_ij), TV_ij = p_ij + p_ji − 1, and c_ij = #{data in W_ij}.
  H_i is "beaten" by H_j when TV_ij > 3α and c_ij < n (p_ij − 2α) (H_i claims much more mass on
  W_ij than the data show); Γ_ij = max(0, c_ij − n (p_ij − 2α)) counts the rows that would have to
  change for that to happen (Γ_ij = n when TV_ij ≤ 3α), and S_i = min_j Γ_ij. Under replace-one
  every c_ij moves by at most 1, so every Γ_ij and S_i moves by at most 1: **sensitivity 1**.
  If some candidate is within TV α of the data distribution, the output is within O(α) (BKSW
  Thm. 3.5: 7α) with n = O(log(m/β)/α² + log(m/β)/(αε)) — informative only for α < 1/7.
  Cost: m² Scheffé sets, whose masses are in closed form in 1-D (intervals) and for a shared
  covariance (half-spaces); counts by sorting (1-D) or by comparing log-densities (n·m²). Not
  offered for full-covariance covers in d = 2 (quadric Scheffé sets would need Monte Carlo
  masses, and α < 1/7 makes that cover ~10⁵ candidates, i.e. ~10¹⁰ pairs).
* ``score="projection"`` — a minimum-distance score over half-spaces: S_i = −max_{v, z}
  |#{data: v·x ≤ t} − n Φ(z)| over public directions v (1 in 1-D, 8 angles in 2-D, the axes and
  the diagonals e_a ± e_b otherwise) and t = v·μ_i + z √(vᵀΣ_i v) at 161 public quantile levels
  z ∈ [−4, 4]. Each count moves by at most 1: **sensitivity 1**. It costs O(m·|V|·161·log n), so
  it handles covers of 10⁵–10⁶ candidates. Guarantee: the output's half-space (Kolmogorov)
  distance to the data distribution is at most OPT + 2 sup|F̂ − F| + 0.02 + 2 ln(m/β)/(nε);
  in 1-D the Scheffé sets of two Gaussians are intervals, so TV ≤ 2 × that; in d ≥ 2 TV and
  half-space distance agree for equal covariances (up to the direction grid) and differ by up
  to O(√d) for covariance errors.

``score="auto"`` uses the Scheffé score when it applies, α < 1/7 and its estimated run time is
under 2 s; the projection score otherwise.

**Neighbours:** replace one row; n is public. **Guarantee:** ε-DP (one exponential mechanism
charged as ``PureDP(epsilon)``); the cover, the directions and the quantile levels are
computed from public parameters only, so privacy holds for any
``center``, ``radius``, ``cov_bounds``, ``cov``.

**Covers** (α-covers in TV of {N(μ, Σ): ‖μ − center‖ ≤ radius, Σ in the given set}):
known covariance (mean only, any d): a lattice of means in the Σ-metric with spacing
4Φ⁻¹((1+α)/2)/√d; d = 1, variance in [lo, hi]: a geometric grid of σ (TV ≤ α/2 to the nearest)
times a σ-scaled mean lattice (α/2); d = 2, lo·I ⪯ Σ ⪯ hi·I: geometric eigenvalue grids (α/6
each), a rotation grid fine enough for the eigenvalue ratio (α/3), and a mean lattice in each
candidate's metric (α/3). Full-covariance covers for d ≥ 3 are not built.

**Practicality (measured on this 2-core machine, n = 5000).** Scheffé score: 1-D 0.8 s at
m = 1.1·10³, 4.8 s at 3.5·10³, 14 s at 7·10³; 2-D mean-only 1.7 s at m = 440, 9.8 s at 970 (it
grows like n·m²). Projection score: 1-D 0.4 s at m = 10⁵; 2-D full covariance 3 s at 3.6·10⁴ and
7.8 s at 10⁵; 3-D mean-only 1.9 s at 2.5·10⁴. Cover sizes at α = 0.1: 1-D, radius 10, variance
ratio 100: 365; mean-only radius 5: d = 2 690, d = 3 2.5·10⁴, d = 4 9.4·10⁵ (refused); radius 2:
d = 4 3.2·10⁴, d = 5 5.3·10⁵ (refused); 2-D full covariance, radius 2, eigenvalues in [1, 4]:
3.9·10⁵ at α = 0.1 (refused), 1.75·10⁴ at α = 0.2, 7·10³ at α = 0.25. So: practical for d = 1,
mean-only d ≤ 3 (d = 4 with a small radius), and full covariance in d = 2 at α ≳ 0.2. Beyond
``max_candidates`` (default 2·10⁵, about 15 s of projection scoring) the call refuses with a
ValueError recommending ``method="public"``, ``"coinpress"`` or ``"clip"``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr, ndtri

from ..backends import as_rows, public_rows
from ..exceptions import PrivacyBudgetError
from ..linalg import cholesky_pd, sqrtm_psd, sym
from ..mechanisms import Release, exponential_mechanism
from ..metrics import tv_distance_1d
from ..privacy import PureDP
from ..validation import check_positive_int
from . import hypothesis_refinement as refinement
from .public_preconditioner import public_preconditioner

__all__ = [
    "DEFAULT_ALPHA",
    "Cover",
    "build_cover",
    "cover_size",
    "worth_refining",
    "hypothesis_selection_gaussian",
    "hypothesis_selection_public",
    "projection_scores",
    "scheffe_scores",
]

DEFAULT_ALPHA = 0.1  # the cover's resolution (TV) when the caller gives none: the paper's
_ZETA = 1.0  # BKSW slack: "close" below (2 + ζ)α, threshold p − (1 + ζ)α
_Z_LEVELS = np.linspace(-4.0, 4.0, 161)  # public quantile levels of the projection score
_SCHEFFE_SECONDS = 2.0  # "auto" uses the Scheffé score when it should take less than this
_PAIR_SECONDS_1D = 3e-7  # measured: one 1-D Scheffé pair (closed form + two binary searches)
_PAIR_ROW_SECONDS = 2e-9  # measured: one (pair, row) log-density comparison in d >= 2
_MAX_BOX = 5e7  # largest lattice box enumerated when building a mean grid
_REFUSAL = (
    "use method='public' (with public data), 'coinpress' or 'clip' (with bounds), or raise "
    "alpha / shrink radius and cov_bounds"
)


@dataclass(frozen=True)
class Cover:
    """A finite set of Gaussians, stored as groups sharing a covariance.

    ``covs[g]`` is the covariance of group g, ``means[group == g]`` its means.
    """

    means: np.ndarray  # (m, d)
    group: np.ndarray  # (m,) int
    covs: np.ndarray  # (G, d, d)

    @property
    def size(self) -> int:
        return int(self.means.shape[0])

    def candidate(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        return self.means[i].copy(), self.covs[self.group[i]].copy()


# ----------------------------------------------------------------------------------------------
# Cover construction (public parameters only)
# ----------------------------------------------------------------------------------------------


def _std_ratio(tv: float) -> float:
    """The std ratio r > 1 with TV(N(0, 1), N(0, r²)) = tv."""
    return float(brentq(lambda r: tv_distance_1d(0.0, 1.0, 0.0, r) - tv, 1.0 + 1e-12, 1e6))


def _mean_step(tv: float, d: int) -> float:
    """Lattice step h (Mahalanobis units) whose cells have TV ≤ tv to their centre point."""
    return 4.0 * float(ndtri((1.0 + tv) / 2.0)) / math.sqrt(d)


def _sigma_grid(lo: float, hi: float, tv: float) -> np.ndarray:
    """Geometric grid of standard deviations covering [√lo, √hi] with TV ≤ tv to the nearest."""
    r = _std_ratio(tv)
    s_lo, s_hi = math.sqrt(lo), math.sqrt(hi)
    count = max(1, math.ceil(math.log(s_hi / s_lo) / (2 * math.log(r)) - 1e-12))
    return s_lo * r ** (2 * np.arange(count) + 1)


def _check_cov_dim(d: int) -> None:
    if d > 2:
        raise ValueError(
            f"full-covariance covers are only built for d <= 2 (got d={d}): the cover grows like "
            f"(1/alpha)^(d^2); {_REFUSAL}"
        )


def _rotation_count(s_a: float, s_b: float, alpha: float) -> int:
    """Number of rotation angles for the axes (s_a ≥ s_b) of a d = 2 covariance candidate."""
    root_k = s_a / s_b  # √κ; rotation TV ≤ ½|sin δ| (√κ − 1/√κ) by Pinsker
    bound = (2 * alpha / 3) / (root_k - 1 / root_k)
    phi = 2 * math.asin(min(1.0, bound))
    return max(1, math.ceil(math.pi / phi - 1e-12))


def _cov_spectra(
    d: int, cov: np.ndarray | None, cov_bounds: tuple[float, float] | None, alpha: float
) -> tuple[list[tuple[np.ndarray, int]], float]:
    """The covariance candidates as (eigenvalues, number of rotations), and the TV left for the
    mean lattice. Cheap (no matrices): sizes the cover before anything is built."""
    if cov is not None:
        return [(np.linalg.eigvalsh(cov), 1)], alpha
    if cov_bounds is None:
        return [(np.ones(d), 1)], alpha
    lo, hi = cov_bounds
    if d == 1:
        return [(np.array([s * s]), 1) for s in _sigma_grid(lo, hi, alpha / 2)], alpha / 2
    _check_cov_dim(d)
    s = _sigma_grid(lo, hi, alpha / 6)
    spectra = []
    for a in range(len(s)):
        for b in range(a + 1):
            n_ang = 1 if a == b else _rotation_count(s[a], s[b], alpha)
            spectra.append((np.array([s[b] ** 2, s[a] ** 2]), n_ang))
    return spectra, alpha / 3


def _cov_grid(
    d: int, cov: np.ndarray | None, cov_bounds: tuple[float, float] | None, alpha: float
) -> tuple[list[np.ndarray], float]:
    """Covariance candidates and the TV left for the mean lattice."""
    if cov is not None:
        return [cov], alpha
    spectra, tv = _cov_spectra(d, cov, cov_bounds, alpha)
    if d == 1 or cov_bounds is None:
        return [np.diag(w) for w, _ in spectra], tv
    covs = []
    for w, n_ang in spectra:
        for k in range(n_ang):
            t = math.pi * k / n_ang
            R = np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])
            covs.append(sym((R * w[::-1]) @ R.T))
    return covs, tv


def _ball_volume(d: int, r: float) -> float:
    return math.pi ** (d / 2) / math.gamma(d / 2 + 1) * r**d


def _lattice_params(C: np.ndarray, radius: float, tv: float) -> tuple[np.ndarray, float, float]:
    d = C.shape[0]
    A = sqrtm_psd(C)
    h = _mean_step(tv, d)
    return A, h, _padded_radius(float(np.linalg.eigvalsh(C)[-1]), radius, h, d)


def _padded_radius(top_eig: float, radius: float, h: float, d: int) -> float:
    return radius + top_eig**0.5 * h * math.sqrt(d) / 2


def cover_size(
    d: int,
    radius: float,
    *,
    cov: Any = None,
    cov_bounds: tuple[float, float] | None = None,
    alpha: float = 0.1,
) -> float:
    """Approximate number of candidates of the cover (volume count; public, cheap: no
    covariance matrix is built, the lattice size depends on the spectrum only)."""
    C = None if cov is None else np.asarray(cov, float)
    spectra, tv = _cov_spectra(d, C, cov_bounds, alpha)
    h = _mean_step(tv, d)
    total = 0.0
    for w, n_ang in spectra:
        r_pad = _padded_radius(float(w[-1]), radius, h, d)
        det_a = math.sqrt(max(float(np.prod(w)), 1e-300))
        total += n_ang * max(1.0, _ball_volume(d, r_pad) / (h**d * det_a))
    return total


def build_cover(
    center: Any,
    radius: float,
    *,
    cov: Any = None,
    cov_bounds: tuple[float, float] | None = None,
    alpha: float = 0.1,
    max_candidates: int = 200_000,
) -> Cover:
    """An α-cover (in TV) of {N(μ, Σ): ‖μ − center‖ ≤ radius, Σ known / in cov_bounds / = I}.

    Refuses (ValueError) when it would hold more than ``max_candidates`` Gaussians.
    """
    c = np.asarray(center, dtype=np.float64).reshape(-1)
    d = c.shape[0]
    C0 = None if cov is None else sym(np.asarray(cov, dtype=np.float64))
    est = cover_size(d, radius, cov=C0, cov_bounds=cov_bounds, alpha=alpha)
    if est > max_candidates:
        raise ValueError(
            f"the alpha={alpha:g} cover in d={d} would hold about {est:.3g} candidates, more than "
            f"max_candidates={max_candidates}; hypothesis selection is impractical here: "
            + _REFUSAL
        )
    covs, tv = _cov_grid(d, C0, cov_bounds, alpha)
    means, groups = [], []
    for g, C in enumerate(covs):
        A, h, r_pad = _lattice_params(C, radius, tv)
        k = int(math.floor(r_pad / (h * float(np.linalg.eigvalsh(C)[0]) ** 0.5)))
        if (2 * k + 1) ** d > _MAX_BOX:
            raise ValueError(
                f"the mean lattice of the cover is too elongated to enumerate; {_REFUSAL}"
            )
        axes = [np.arange(-k, k + 1, dtype=np.float64)] * d
        Z = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, d)
        off = (h * Z) @ A.T
        keep = np.linalg.norm(off, axis=1) <= r_pad
        means.append(c + off[keep])
        groups.append(np.full(int(keep.sum()), g))
    M = np.concatenate(means)
    if M.shape[0] > max_candidates:
        raise ValueError(
            f"the alpha={alpha:g} cover in d={d} holds {M.shape[0]} candidates, more than "
            f"max_candidates={max_candidates}; " + _REFUSAL
        )
    return Cover(means=M, group=np.concatenate(groups), covs=np.stack(covs))


# ----------------------------------------------------------------------------------------------
# Scores (sensitivity 1 under replace-one, in units of rows)
# ----------------------------------------------------------------------------------------------


def _whitened(X: np.ndarray, C: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    L = cholesky_pd(C)
    Linv = np.linalg.inv(L)
    return X @ Linv.T, Linv, float(2 * np.sum(np.log(np.diag(L))))


def _log_densities(X: np.ndarray, cover: Cover) -> np.ndarray:
    """(n, m) log-densities (up to a common constant) of the rows under every candidate."""
    out = np.empty((X.shape[0], cover.size))
    for g in range(cover.covs.shape[0]):
        idx = np.flatnonzero(cover.group == g)
        Xw, Linv, logdet = _whitened(X, cover.covs[g])
        Mw = cover.means[idx] @ Linv.T
        sq = (Xw * Xw).sum(1)[:, None] - 2 * Xw @ Mw.T + (Mw * Mw).sum(1)[None, :]
        out[:, idx] = -0.5 * sq - 0.5 * logdet
    return out


def _pairwise_exceed(A: np.ndarray, B: np.ndarray | None = None) -> np.ndarray:
    """C[i, j] = #{rows t: A[t, i] > B[t, j]} (B = A by default), in row chunks."""
    B = A if B is None else B
    n, m = A.shape
    out = np.zeros((m, B.shape[1]), dtype=np.int64)
    step = max(1, int(2e7 // max(m * B.shape[1], 1)))
    for a in range(0, n, step):
        out += (A[a : a + step, :, None] > B[a : a + step, None, :]).sum(axis=0)
    return out


def _scheffe_1d(y: np.ndarray, cover: Cover) -> tuple[np.ndarray, np.ndarray]:
    """(P, counts) for a 1-D cover: P[i, j] = H_i(W_ij), counts[i, j] = #{y in W_ij}."""
    mu = cover.means[:, 0]
    s = np.sqrt(cover.covs[cover.group, 0, 0])
    ys = np.sort(y)
    n = ys.shape[0]
    m = mu.shape[0]
    P = np.zeros((m, m))
    counts = np.zeros((m, m), dtype=np.int64)
    step = max(1, int(4e6 // m))
    for a in range(0, m, step):
        i = np.arange(a, min(a + step, m))
        mi, si = mu[i, None], s[i, None]
        dlt = (mu[None, :] - mi) / si  # candidate j in units of candidate i
        r = s[None, :] / si
        lo = np.full(dlt.shape, -np.inf)
        hi = np.full(dlt.shape, np.inf)
        inside = np.ones(dlt.shape, dtype=bool)
        eq = r == 1.0
        # equal variances: W = {z < δ/2} if δ > 0, {z > δ/2} if δ < 0
        hi = np.where(eq & (dlt > 0), dlt / 2, hi)
        lo = np.where(eq & (dlt < 0), dlt / 2, lo)
        empty = eq & (dlt == 0)
        # unequal: log H_i − log H_j = a z² + b z + c with the roots z1 < z2
        with np.errstate(divide="ignore", invalid="ignore"):
            qa = 0.5 / r**2 - 0.5
            qb = -dlt / r**2
            qc = dlt**2 / (2 * r**2) + np.log(r)
            disc = np.sqrt(np.maximum(qb * qb - 4 * qa * qc, 0.0))
            q = -0.5 * (qb + np.where(qb >= 0, disc, -disc))
            z1, z2 = q / qa, qc / q
        zl, zh = np.minimum(z1, z2), np.maximum(z1, z2)
        ne = ~eq
        lo = np.where(ne, zl, lo)
        hi = np.where(ne, zh, hi)
        inside = np.where(ne, qa < 0, inside)  # i narrower (r > 1): W is between the roots
        mass = ndtr(hi) - ndtr(lo)
        xl, xh = mi + si * lo, mi + si * hi
        cnt = np.searchsorted(ys, xh, "left") - np.searchsorted(ys, xl, "right")
        cnt = np.maximum(cnt, 0)
        P[i] = np.where(empty, 0.0, np.where(inside, mass, 1.0 - mass))
        counts[i] = np.where(empty, 0, np.where(inside, cnt, n - cnt))
    return P, counts


def _scheffe_masses_shared(cover: Cover) -> np.ndarray:
    """P[i, j] = Φ(D_ij / 2) for candidates sharing one covariance (Scheffé half-spaces)."""
    _, Linv, _ = _whitened(cover.means[:1], cover.covs[0])
    Mw = cover.means @ Linv.T
    sq = (Mw * Mw).sum(1)
    D = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2 * Mw @ Mw.T, 0.0))
    P = ndtr(D / 2)
    np.fill_diagonal(P, 0.0)
    return P


def scheffe_scores(X: np.ndarray, cover: Cover, alpha: float) -> np.ndarray:
    """BKSW scores S_i = min_j Γ_ij (module docstring); sensitivity 1 under replace-one.

    Needs Scheffé masses in closed form: a 1-D cover, or a cover whose candidates share one
    covariance (mean-only covers), where the Scheffé sets are half-spaces.
    """
    n, d = X.shape
    if d == 1:
        P, counts = _scheffe_1d(X[:, 0], cover)
    elif cover.covs.shape[0] == 1:
        P = _scheffe_masses_shared(cover)
        counts = _pairwise_exceed(_log_densities(X, cover))
    else:
        raise ValueError(
            "the Scheffé score is only implemented for d = 1 and for shared-covariance (mean-only) "
            "covers; use score='projection' for full-covariance covers in d >= 2"
        )
    tv = P + P.T - 1.0
    gamma = np.maximum(0.0, counts - n * (P - (1 + _ZETA) * alpha))
    gamma = np.where(tv > (2 + _ZETA) * alpha, np.minimum(gamma, n), float(n))
    np.fill_diagonal(gamma, float(n))
    return gamma.min(axis=1)


def _directions(d: int) -> np.ndarray:
    if d == 1:
        return np.ones((1, 1))
    if d == 2:
        t = np.pi * np.arange(8) / 8
        return np.stack([np.cos(t), np.sin(t)], axis=1)
    eye = np.eye(d)
    rows = [eye[a] for a in range(d)]
    for a in range(d):
        for b in range(a + 1, d):
            rows.append((eye[a] + eye[b]) / math.sqrt(2))
            rows.append((eye[a] - eye[b]) / math.sqrt(2))
    return np.stack(rows)


def projection_scores(X: np.ndarray, cover: Cover) -> np.ndarray:
    """Minimum-distance scores −max_{v,z} |#{v·x ≤ t_iz} − nΦ(z)| (module docstring);
    sensitivity 1 under replace-one."""
    n, d = X.shape
    V = _directions(d)
    target = n * ndtr(_Z_LEVELS)
    worst = np.zeros(cover.size)
    sd_all = np.sqrt(np.einsum("vd,gde,ve->gv", V, cover.covs, V))  # (G, |V|)
    step = max(1, int(2e6 // _Z_LEVELS.size))
    for k, v in enumerate(V):
        ys = np.sort(X @ v)
        loc = cover.means @ v
        sd = sd_all[cover.group, k]
        for a in range(0, cover.size, step):
            t = loc[a : a + step, None] + sd[a : a + step, None] * _Z_LEVELS[None, :]
            cnt = np.searchsorted(ys, t, "right")
            dev = np.abs(cnt - target[None, :]).max(axis=1)
            worst[a : a + step] = np.maximum(worst[a : a + step], dev)
    return -worst


# ----------------------------------------------------------------------------------------------
# Estimators
# ----------------------------------------------------------------------------------------------


def _choose_score(score: str, n: int, d: int, cover: Cover, alpha: float) -> str:
    scheffe_ok = d == 1 or cover.covs.shape[0] == 1
    if score == "projection" or (score == "scheffe" and scheffe_ok):
        return score
    if score == "scheffe":
        raise ValueError(
            "score='scheffe' needs d = 1 or a known covariance; use score='projection' for "
            "full-covariance covers in d >= 2"
        )
    if score != "auto":
        raise ValueError("score must be 'auto', 'scheffe' or 'projection'")
    m = cover.size
    seconds = m * m * (_PAIR_SECONDS_1D if d == 1 else n * _PAIR_ROW_SECONDS)
    informative = 7 * alpha < 1  # BKSW's guarantee is 7α
    if scheffe_ok and informative and seconds <= _SCHEFFE_SECONDS:
        return "scheffe"
    return "projection"


def worth_refining(n: int, d: int, epsilon: float, alpha: float, beta: float,
                   known_cov: bool) -> bool:
    """Whether the practical default refines the pick (public: n, d, ε, α, β): when the
    refinement's noise (:mod:`.hypothesis_refinement`; std of its mean in sd units, of its
    variance relative) is at most half the worst error the pick leaves inside its cell of
    the cover — h/2 for the mean (h the lattice step), r² − 1 for a variance (r the σ-grid
    ratio) — so at ε = 1 a small table (measured: ≤ ~300 rows, d = 1) keeps the selection
    alone, which its cells beat there; as ε → ∞ the noise → 0 and the fit always refines
    (it then tends to np.mean / np.cov)."""
    sel, e_mean, e_cov = refinement.shares(known_cov)
    r = refinement.refine_radius(n, d, epsilon * e_mean, epsilon * e_cov, beta)
    tv_mean = alpha if known_cov else (alpha / 2 if d == 1 else alpha / 3)
    if math.sqrt(2.0) * 2 * r * math.sqrt(d) / (n * epsilon * e_mean) > _mean_step(tv_mean,
                                                                                  d) / 4:
        return False
    if known_cov:
        return True
    ratio = _std_ratio(alpha / 2 if d == 1 else alpha / 6)
    return math.sqrt(2.0) * (d + 1) * r * r / (n * epsilon * e_cov) <= (ratio**2 - 1) / 2


def hypothesis_selection_gaussian(
    X: Any,
    epsilon: float,
    *,
    center: Any,
    radius: float,
    cov_bounds: tuple[float, float] | None = None,
    cov: Any = None,
    alpha: float = DEFAULT_ALPHA,
    release: Release,
    max_candidates: int = 200_000,
    score: Literal["auto", "scheffe", "projection"] = "auto",
    refine: bool = False,
    beta: float = 0.05,
) -> tuple[np.ndarray, np.ndarray]:
    """ε-DP (replace-one, n public) Gaussian learning by private hypothesis selection (BKSW 2019).

    The parameter set is ‖μ − center‖ ≤ radius with Σ = ``cov`` (known, mean only), or
    lo·I ⪯ Σ ⪯ hi·I for ``cov_bounds=(lo, hi)`` (d ≤ 2), or Σ = I when both are None. An
    ``alpha``-cover of it is built from these public parameters, every candidate is scored
    (sensitivity 1; see the module docstring) and one is drawn by the exponential mechanism,
    charged as ``PureDP(epsilon)`` to ``release`` (step "hypothesis-selection-<score>", or its
    own prefix). Returns the chosen (mean, cov).

    ``refine`` (the practical default of ``method="hypothesis-selection"``; off: the paper's
    algorithm), where :func:`worth_refining` (public) says the refinement is precise enough
    to beat the cover's cells: the selection gets the public share ``REFINE_SHARES[0]`` of ε
    and the rest
    pays a clipped-moments refinement in the frame of the pick
    (:mod:`.hypothesis_refinement`, steps "<step>-refine-mean" / "<step>-refine-cov", its
    radius from ``beta``), so the output tends to the rows' np.mean / np.cov as ε grows,
    where the pick alone stays within the cover's resolution α of them.

    Raises ValueError (before anything is spent) when the cover would exceed
    ``max_candidates``, and :class:`PrivacyBudgetError` when the accountant cannot pay ε.
    """
    budget = PureDP(epsilon)
    accountant, step = release.accountant, release.named("hypothesis-selection").step
    Xc = as_rows(X)
    n, d = Xc.shape
    max_candidates = check_positive_int(max_candidates, "max_candidates")
    if not (isinstance(alpha, int | float) and 0 < alpha <= 0.5):
        raise ValueError("alpha (the cover resolution in TV) must be in (0, 0.5]")
    r = float(radius)
    if not (math.isfinite(r) and r >= 0):
        raise ValueError("radius must be finite and >= 0")
    c = np.asarray(center, dtype=np.float64).reshape(-1)
    if c.shape != (d,) or not np.isfinite(c).all():
        raise ValueError(f"center must be a finite vector of length {d}")
    C = None
    if cov is not None:
        C = sym(np.asarray(cov, dtype=np.float64))
        if C.shape != (d, d):
            raise ValueError(f"cov must have shape ({d}, {d})")
        cholesky_pd(C)
    elif cov_bounds is not None:
        lo, hi = (float(x) for x in cov_bounds)
        if not (0 < lo <= hi < math.inf):
            raise ValueError("cov_bounds must be (lo, hi) with 0 < lo <= hi < inf")
        cov_bounds = (lo, hi)
    if not accountant.can_spend(budget):
        raise PrivacyBudgetError(
            f"hypothesis selection needs {budget} from the accountant, which cannot pay it"
        )
    src = release.noise
    cover = build_cover(
        c, r, cov=C, cov_bounds=cov_bounds, alpha=alpha, max_candidates=max_candidates
    )
    kind = _choose_score(score, n, d, cover, alpha)
    if kind == "scheffe":
        utilities = scheffe_scores(Xc, cover, alpha)
    else:
        utilities = projection_scores(Xc, cover)
    if not (refine and worth_refining(n, d, epsilon, alpha, beta, C is not None)):
        i = exponential_mechanism(
            utilities, 1.0, budget, accountant=accountant, noise=src, step=f"{step}-{kind}"
        )
        return cover.candidate(i)
    sel, e_mean, e_cov = refinement.shares(C is not None)
    i = exponential_mechanism(utilities, 1.0, PureDP(epsilon * sel), accountant=accountant,
                              noise=src, step=f"{step}-{kind}")
    mean0, cov0 = cover.candidate(i)
    return refinement.refine_pick(Xc, mean0, cov0, epsilon * e_mean, epsilon * e_cov,
                                  beta=beta, release=release, step=step,
                                  known_cov=C is not None)


def hypothesis_selection_public(
    X: Any,
    X_pub: Any,
    epsilon: float,
    *,
    release: Release,
    alpha: float = DEFAULT_ALPHA,
    beta: float = 0.05,
    gamma: float = 0.0,
    max_candidates: int = 200_000,
    score: Literal["auto", "scheffe", "projection"] = "auto",
    refine: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """ε-DP hypothesis selection after public preconditioning (Bie–Kamath–Singhal 2022, E2).

    The public rows (free, but untrusted: privacy holds for any ``X_pub``) give the affine map
    of :func:`privgauss.gaussian.public.public_preconditioner`, after which the private rows
    satisfy ‖μ‖ ≤ R and I ⪯ Σ ⪯ K·I w.h.p.; selection runs in those coordinates over the
    (0, R, (1, K)) cover and the result is mapped back. Replace-one neighbours on X, n public.
    Charged to ``release`` (step "hypothesis-selection-public-<score>" unless it names one).
    ``refine``: as :func:`hypothesis_selection_gaussian`'s, in the preconditioned coordinates.
    """
    Xc = as_rows(X)
    Xp = public_rows(X_pub, name="X_pub", n_features=Xc.shape[1])
    pre = public_preconditioner(Xp, beta, gamma=gamma)
    Z = pre.forward(Xc)
    d = Xc.shape[1]
    mean_z, cov_z = hypothesis_selection_gaussian(
        Z,
        epsilon,
        center=np.zeros(d),
        radius=float(pre.R),
        cov_bounds=(1.0, float(pre.K)),
        alpha=alpha,
        release=release.named("hypothesis-selection-public"),
        max_candidates=max_candidates,
        score=score,
        refine=refine,
        beta=beta,
    )
    return pre.backward(mean_z, cov_z)
