"""The steps of CoinPress-style estimation shared by its sequential and split modes: one planned
mean step, one planned covariance step (clip in the current frame, noise, update the frame),
and the four-stage practical runner (:mod:`.estimate` plans and dispatches; :mod:`.split_mode`
runs the split modes). Every release is charged to the accountant before its noise is drawn
(:mod:`privgauss.mechanisms`); sensitivities come from :mod:`privgauss.sensitivity`.
Biswas, Dong, Kamath, Ullman, *CoinPress* (NeurIPS 2020), Alg. 1–2.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np

from ...clipped_stats import Rows
from ...exceptions import EstimationFailed
from ...linalg import inv_sqrtm_psd, project_psd, sym
from ...mechanisms import Release, gaussian_mechanism, symmetric_matrix_mechanism
from ...privacy import ZCDP
from ...sensitivity import clipped_mean_l2, clipped_second_moment_frobenius
from ..clip_diagnostics import (
    MEAN_COUNT_TAIL,
    chi_tail,
    cov_clip_scale,
    mean_ball_radius,
    note_clip,
    note_final_moment,
)
from .cov_plan import CovStep, sigma_cov
from .direction_cover import Cover, cover_directions
from .frames import floor_in_frame, whitener
from .mean_plan import MeanStep, sigma_mean
from .plan import GaussianPlan
from .radius_search import RadiusSearch, search_radius
from .tails import undo_cov_clip, undo_shrinkage

WHITEN_REL = 1e-6  # the whitener's eigenvalue floor, as a fraction of an assumed lower bound
#: a final release's eigenvalues, in the frame it was released in, are at least this × its noise
#: std σ per whitened entry (practical chains; 0: none). A direction the noise pushed to ~0
#: costs a Gaussian's log-likelihood without bound (KL grows like the variance ratio), one
#: the floor lifts costs at most its log; the floor vanishes with the noise (DESIGN.md rule
#: 15). Measured on small real tables at ε = 1 (`benchmarks/gaussian_error_tail.py`)
NOISE_FLOOR = 1.0




def run_mean(
    rows: Rows,
    center: np.ndarray,
    plan: tuple[MeanStep, ...],
    release: Release,
    *,
    A: np.ndarray | None = None,
    shift: np.ndarray | None = None,
    sigmas: list[float] | None = None,
) -> np.ndarray:
    """Run a mean plan on the rows W_i = A(y_i − shift) of ``rows`` (y_i − shift without A),
    never materialised: each step releases mean_i clip_{B(c, τ)}(W_i) (one pass, or the
    Gram-based fast evaluation of :class:`~privgauss.clipped_stats.Rows`). A step with a
    radius search first releases its radius (:func:`.search_radius`); ``sigmas`` receives
    each step's noise std at the radius used (a function of DP outputs). Charged to
    ``release``, step i of t named "<step> i/t"."""
    n, d = rows.n, rows.d
    c = center
    t = len(plan)
    for i, s in enumerate(plan):
        tau, rho = s.clip_radius, s.rho
        if s.search is not None:
            tau, _ = search_radius(rows, A, shift, c, s.search,
                                   release=release.sub(f"{i + 1}/{t}"))
            rho = s.rho - s.search.rho
        stat = rows.clipped_mean(A, shift, c, tau)
        # the ball counted, and the Gaussian tail outside it (its centre within the prior
        # radius: at most MEAN_COUNT_TAIL, less as a grown radius leaves the bulk behind)
        r_ball = mean_ball_radius(d, tau, s.prior_radius)
        note_clip(rows, A, shift, c, r_ball, "mean",
                  min(MEAN_COUNT_TAIL, chi_tail(d, max(r_ball - s.prior_radius, 0.0))))
        released = gaussian_mechanism(
            stat,
            clipped_mean_l2(tau, n),
            ZCDP(rho),
            accountant=release.accountant,
            noise=release.noise,
            step=release.sub(f"{i + 1}/{t}").step,
        )
        if sigmas is not None:
            sigmas.append(s.sigma if s.search is None else sigma_mean(tau, n, rho))
        if s.debias:
            cap = max(3.0 * s.prior_radius, 4.0 * math.sqrt(d / n), 1e-12)
            released = c + undo_shrinkage(released - c, d, tau, cap)
        c = released
    return np.asarray(c, dtype=np.float64)


@dataclass(frozen=True)
class ChainPart:
    """A part of a covariance chain a caller runs in several :func:`run_cov` calls: the
    chain's releases so far (appended to), the ledger numbering (index of the part's first
    step, the chain's total) and, if given, a list receiving each step's noise std."""

    past: list[PastRelease]
    labels: tuple[int, int]
    sigmas: list[float] | None = None


def run_cov(
    rows: Rows,
    A: np.ndarray,
    plan: tuple[CovStep, ...],
    release: Release,
    *,
    final: bool = True,
    shift: np.ndarray | None = None,
    floor: float = 0.0,
    part: ChainPart | None = None,
    pool: bool = True,
    cover: Cover | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Run the plan on rows y_i − shift (second moment S) starting from the transform A
    (A S Aᵀ ⪯ I). Each step whitens W_i = A(y_i − shift), clips rows to the planned radius,
    releases WᵀW/n with the symmetric Gaussian mechanism (Frobenius sensitivity √2 τ²/n; τ is
    the planned radius times the fit's public ``clip_scale``, :func:`.cov_clip_scale`),
    projects to PSD and — except in a final step — updates A ← (Z + ηI)^{-1/2} A (A need not
    be symmetric, so this bookkeeping is right for any number of steps). The whitened rows
    are never materialised (:meth:`~privgauss.clipped_stats.Rows.second_moment`).

    ``floor`` is the prior's public lower bound S ⪰ floor·I (0: none). Each release that
    updates the frame is projected (post-processing) onto {Z : A⁻¹ Z A⁻ᵀ ⪰ floor·I}, the set
    the true whitened moment lies in, so the projection never moves it away from the truth (a
    Frobenius projection in the rows' units) and the next frame never whitens a direction past
    what the prior allows: a direction of (near-)zero variance — a constant column — is then
    treated as one of variance ``floor`` instead of being magnified by the inverse noise level
    until the clipped means collapse. The final release is returned PSD-repaired and, when
    pooled (practical chains), with its eigenvalues in its frame at least :data:`NOISE_FLOOR`
    × its noise std (:func:`noise_floored`; as released inside :func:`without_noise_floor`):
    callers judge it against their prior. Before that repair, the final release is pooled
    with the chain's earlier ones mapped into its frame (:func:`pooled`, post-processing): a
    whitening step's release is an estimate of the same moment with its own independent noise,
    and the late steps, in frames already close to white, carry a third to a half of the
    chain's information (bound-free, d = 10, ε = 1, n = 5,000: covariance 3.87× non-private →
    2.80×, 20 draws).

    ``part`` (a caller running one chain in parts, :class:`ChainPart`): its ``past`` list the
    steps' releases are appended to (frame, release, σ, 0), which may already hold earlier
    releases of the same moment (the caller's chain, re-centred) — the final release is
    pooled with all of them; its ``labels`` = (index of the first step, total), the ledger's
    step numbers; its ``sigmas``, which receives each step's noise std at the radius used.
    A step with a radius search (:mod:`.radius_search`) first releases its radius from the
    data; a release whose search hit the cap enters the pooling with infinite extra error
    (left out). ``pool=False`` (the papers' algorithms as written, ``constants="theory"``):
    the final release alone. ``cover`` (the
    practical chain inside a user's prior, or the bound-free refinement): before the final
    step (and its radius search), the release before it is checked for directions the
    clipping shrinks, and any found (or named by ``cover``) are covered by the last step's
    frame (:mod:`.direction_cover`; ``cover.lower`` is the
    modelled λ_min of that release's frame when it comes from ``past``, not this plan).

    Returns (A, None) when ``final`` is False, else (A_used, Ŝ = A⁻¹ Z Aᵀ⁻¹)."""
    n, d = rows.n, rows.d
    t = len(plan)
    sh = np.zeros(d) if shift is None else np.asarray(shift, dtype=np.float64)
    k = cov_clip_scale()  # the fit's public multiplier of the planned radii (1 by default)
    past: list[PastRelease] = [] if part is None else part.past
    i0, total = (0, t) if part is None else part.labels
    sigmas = None if part is None else part.sigmas
    for i, s in enumerate(plan):
        tau, rho, sigma, extra = s.clip_radius * k, s.rho, s.sigma * k * k, 0.0
        fix, spent = None, 0.0
        if final and i == t - 1 and cover is not None and past and not s.debias:
            lower = plan[i - 1].lower if i > 0 else cover.lower
            # the chain's releases pooled in the frame of its last one: less noise to judge by
            A_c, Z_c, s_c = past[-1][:3]
            Z_c, s_c = pooled_release(past[:-1], A_c, Z_c, s_c)
            fix = cover_directions(rows, A, sh, (A_c, Z_c, s_c), lower, tau, rho,
                                   release.sub(f"{i0 + i + 1}/{total}"), cover.columns,
                                   cover.zeros)
            if fix.rho != rho:
                A, rho, spent = fix.A, fix.rho, rho - fix.rho
                sigma = sigma_cov(tau, n, rho)
        if s.search is not None:  # the radius from the data, by DP (radius_search)
            tau, covered = search_radius(rows, A, sh, np.zeros(d), _scaled(s.search, k),
                                         release=release.sub(f"{i0 + i + 1}/{total}"))
            rho = s.rho - s.search.rho - spent
            sigma = sigma_cov(tau, n, rho)
            # a release that cut more rows than allowed even at the cap is biased by them:
            # left out of the pooling of the chain's releases
            extra = 0.0 if covered else math.inf
        stat = rows.second_moment(A, sh, tau)
        note_clip(rows, A, sh, np.zeros(d), tau, "cov", chi_tail(d, tau),
                  grown=tau > s.clip_radius * k)
        Z = symmetric_matrix_mechanism(
            stat,
            clipped_second_moment_frobenius(tau, n),
            ZCDP(rho),
            accountant=release.accountant,
            noise=release.noise,
            step=release.sub(f"{i0 + i + 1}/{total}").step,
        )
        if sigmas is not None:
            sigmas.append(sigma)
        if final and i == t - 1:
            compressed = fix is not None and fix.compressed
            if pool and not s.debias:
                if s.search is not None or compressed:  # releases that clipped rows this
                    past = _containing(past, A, tau)  # step keeps would pull it back: left out
                Z = pooled(past, A, Z, sigma)
            Zp = project_psd(Z)
            # judged in the chain's frame (a covered direction is compressed on purpose)
            Zj = sym(fix.undo @ Zp @ fix.undo.T) if fix is not None and compressed else Zp
            note_final_moment(float(np.linalg.eigvalsh(Zj)[0]), sigma, s.lower)
            if s.debias:  # a last step clipped inside the bulk: undo the shrinkage (the model's)
                Zp = undo_cov_clip(Zp, tau)
            if pool:
                Zp = noise_floored(Zp, sigma)
            Ainv = np.linalg.inv(A)
            with np.errstate(over="ignore", invalid="ignore"):
                cov = sym(Ainv @ Zp @ Ainv.T)
            if not np.isfinite(cov).all():
                raise EstimationFailed(
                    "the private covariance overflowed; rescale the data or tighten the bounds",
                    step=release.step,
                )
            return A, cov
        past.append((A, Z, sigma, extra, tau))
        Zp = project_psd(Z) if floor <= 0 else floor_in_frame(Z, A, floor)
        if s.debias:
            Zp = undo_cov_clip(Zp, tau)
        A = inv_sqrtm_psd(Zp + s.eta * np.eye(d)) @ A
    return A, None


_FLOORED: ContextVar[bool] = ContextVar("privgauss_noise_floor", default=True)


@contextmanager
def without_noise_floor() -> Iterator[None]:
    """Chains run inside return their final releases without :data:`NOISE_FLOOR`: for a caller
    that judges the release itself for a collapse (the public route's check, which a floor
    at the noise level would hide where the plan's noise swamps the frame)."""
    token = _FLOORED.set(False)
    try:
        yield
    finally:
        _FLOORED.reset(token)


def noise_floored(Z: np.ndarray, sigma: float, A: np.ndarray | None = None) -> np.ndarray:
    """A final release ``Z`` (in its frame, noise std σ per entry) with its eigenvalues lifted
    to at least :data:`NOISE_FLOOR`·σ (post-processing); with ``A``, ``Z`` is a covariance in
    the rows' units and is floored in the frame ``A`` (A Z Aᵀ) and returned in those units.
    Unchanged inside :func:`without_noise_floor`."""
    if NOISE_FLOOR <= 0 or not _FLOORED.get():
        return Z
    if A is None:
        return project_psd(Z, min_eig=NOISE_FLOOR * sigma)
    Ainv = np.linalg.inv(A)
    return sym(Ainv @ project_psd(A @ Z @ A.T, min_eig=NOISE_FLOOR * sigma) @ Ainv.T)


def _scaled(search: RadiusSearch, k: float) -> RadiusSearch:
    """The search of a step whose radii the fit multiplies by ``k`` (public clip_scale)."""
    if k == 1.0:
        return search
    return RadiusSearch(search.rho, tuple(g * k for g in search.grid), search.allowed)


# a released second moment: (frame A, release Z ≈ A S Aᵀ, noise σ, extra error x, clip radius
# τ in the frame A): x is an expected squared Frobenius error already in the final frame (a
# re-centring's), added to the noise's in the pooling weights
PastRelease = tuple[np.ndarray, np.ndarray, float, float, float]


def _containing(past: list[PastRelease], B: np.ndarray, tau: float) -> list[PastRelease]:
    """The releases whose clipping ball contains the final one's (frame ``B``, radius τ):
    ‖A_i B⁻¹‖₂·τ ≤ τ_i (centres as the chain's: a caller's re-centring moves them by its
    small offset only). A release that clipped rows the final step keeps pulls the pooled
    moment toward the central rows: when the final step searched its radius (a budget large
    enough for one; its noise is then small and pooling gains little) only the others are
    pooled (post-processing of releases and public radii). Measured on the corpus's fair
    table at ε = 1e4 (seed 0): earlier releases that cut 10 of 5,092 rows, pooled with a
    final one that cut none, left an eigenvalue at 0.84 of np.cov's (held-out gap 0.011
    nat/row)."""
    keep = []
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        Binv = np.linalg.inv(B)
        for r in past:
            g = float(np.linalg.norm(r[0] @ Binv, 2))
            if np.isfinite(g) and g * tau <= (r[4] if len(r) > 4 else math.inf):
                keep.append(r)
    return keep


def pooled(past: list[PastRelease], B: np.ndarray, Z: np.ndarray, sigma: float) -> np.ndarray:
    """:func:`pooled_release` without its noise level."""
    return pooled_release(past, B, Z, sigma)[0]


def pooled_release(past: list[PastRelease], B: np.ndarray, Z: np.ndarray, sigma: float
                   ) -> tuple[np.ndarray, float]:
    """The final release ``Z`` (frame ``B``, noise σ) averaged with the chain's earlier releases
    mapped into that frame, G_i Z_i G_iᵀ with G_i = B A_i⁻¹ (post-processing: each is an unbiased
    estimate of the same second moment up to clipping, with independent noise), weighted by
    the inverse of the expected squared Frobenius norm of the mapped noise,
    σ_i²(tr(P)² + tr(P²))/2 with P = G_iᵀG_i, plus the release's extra error x_i; and the
    noise std per entry of a single release with the pooled one's weight, 1/√(W(d² + d))."""
    d = B.shape[0]
    acc = Z / (sigma * sigma * (d * d + d))
    wsum = 1.0 / (sigma * sigma * (d * d + d))
    for r in past:
        A_i, Z_i, s_i, x_i = r[:4]
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            G = B @ np.linalg.inv(A_i)
            P = G.T @ G
            v = s_i * s_i * (np.trace(P) ** 2 + np.sum(P * P)) + 2.0 * x_i
            M = G @ Z_i @ G.T
        if not (np.isfinite(v) and v > 0 and np.isfinite(M).all()):
            continue
        acc = acc + M / v
        wsum += 1.0 / v
    return sym(acc / wsum), 1.0 / math.sqrt(wsum * (d * d + d))


def run_practical(rows: Rows, plan: GaussianPlan, c: np.ndarray, lo: float, release: Release,
                  prior_floor: bool = False, cover: bool = False,
                  cover_columns: tuple[int, ...] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Stages 1–4 of :func:`coinpress_gaussian` (``practical``) on ``rows``. ``prior_floor``:
    the lower bound ``lo`` is a prior the data are known to satisfy (the user's ``cov_bounds``),
    so no frame whitens a direction past it (see :func:`run_cov`'s ``floor``) — a constant
    column then keeps its mean instead of dragging every coordinate's mean off. ``cover``:
    stage 3 covers directions its clipping shrinks (:mod:`.direction_cover`), and searches
    ``cover_columns`` (DP outputs) whatever its check says. Charged to
    ``release``, its stages named "<step> cov-coarse", "mean-rough", "cov" and "mean"."""
    d = rows.d
    floor = lo if prior_floor else 0.0
    # Stage 1: coarse whitening steps → T (= A).
    A = np.eye(d) / math.sqrt(plan.s_hi)
    if plan.coarse:
        src1, shift1 = (rows.pairs(release.rng), None) if plan.pairs else (rows, c)
        A, _ = run_cov(src1, A, plan.coarse, release.sub("cov-coarse"), final=False,
                       shift=shift1, floor=floor)
    # Stage 2: rough mean in T-coordinates (cov(TX) ⪯ I).
    m_t = run_mean(rows, np.zeros(d), plan.rough, release.sub("mean-rough"), A=A, shift=c)
    mu_rough = c + np.linalg.solve(A, m_t)
    # Stage 3: covariance of all rows centred at the rough mean, continuing from T.
    # inside the user's prior, directions the clipping shrinks are covered (direction_cover)
    check = Cover(plan.cov[0].lower, cover_columns, zeros=prior_floor) if cover else None
    _, cov = run_cov(rows, A, plan.cov, release.sub("cov"), shift=mu_rough, floor=floor,
                     cover=check)
    assert cov is not None
    if not plan.mean:  # a frame plan: the rough mean and the second moment about it
        return mu_rough, cov
    # Stage 4: mean of the rows whitened by the released covariance.
    B = whitener(cov, lo, release.step, rel=1.0 if prior_floor else WHITEN_REL)
    m_w = run_mean(rows, np.zeros(d), plan.mean, release.sub("mean"), A=B, shift=mu_rough)
    return mu_rough + np.linalg.solve(B, m_w), cov
