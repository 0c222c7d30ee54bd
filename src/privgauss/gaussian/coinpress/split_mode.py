"""Split mode of the practical CoinPress-style Gaussian estimator, for large data.

A public random subset of m rows fits a coarse frame with the sequential estimator of
:mod:`privgauss.gaussian.coinpress`; one blockwise pass over the final rows then releases clipped
first and second moments in that frame (:func:`split_gaussian`). In the *parallel* mode the
final rows are the other n − m rows and each part uses the whole ρ (parallel composition over a
data-independent split; proof in :func:`split_gaussian`); in the *subsample* mode the final pass
reads all n rows and the two parts split ρ. ρ-zCDP under replace-one neighbours, n public. The
planner (:func:`plan_split`) picks a split only when its predicted covariance error is within
``_SPLIT_TOLERANCE`` of the sequential plan's and its predicted cost is lower.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import chi2

from ...backends import take_rows
from ...clipped_stats import Rows, clipped_moments
from ...exceptions import EstimationFailed
from ...linalg import project_psd, sym
from ...mechanisms import Release, gaussian_mechanism, symmetric_matrix_mechanism
from ...privacy import ZCDP, Accountant
from ...sensitivity import clipped_mean_l2, clipped_second_moment_frobenius
from ..clip_diagnostics import chi_tail, cov_clip_scale, note_clip
from .cov_plan import COV_CLIP_TAIL, sigma_cov
from .plan import FINAL_MEAN_SHARE, GaussianPlan, cov_plans, practical_plan
from .radius_search import RadiusSearch, plan_search, search_radius
from .schedule import noise_matched_radius
from .steps import WHITEN_REL, run_practical, whitener
from .tails import chi2_isf

SPLIT_MIN_VALUES = 1 << 20  # n·d below this: passes are cheap, always the sequential mode
_SPLIT_MIN_ROWS = 4096  # fewest rows for the coarse fit
_SPLIT_FRACTIONS = (1 / 256, 1 / 128, 1 / 64, 1 / 32, 1 / 16, 1 / 8)
# coarse fit's share of ρ: 1 is the parallel mode, below 1 the subsample mode
_SPLIT_SHARES = (1.0, 0.1, 0.15, 0.2, 0.25, 0.3)
_SPLIT_TOLERANCE = 0.01  # predicted covariance error within 1 % of the sequential mode
_SPLIT_MAX_FRAME_ERROR = 0.9
# measured costs (n = 1e6, d = 100, one core), in units of rows·d² flops: the final one-pass
# moments (Gram + float32 norms); a step's norm pass over the float32 copy of the rows, or
# over the float64 rows when the copy would not fit its memory cap
_FINAL_PASS = 1.0
_STEP_PASS_U32 = 0.3
_STEP_PASS = 0.6
_STEP_OVERHEAD = 2e7  # fixed cost of a step, in flops (about a millisecond)
_COARSE_PREFER_FEWER = 1.0  # the coarse fit only sets a frame: fewest steps within 2x of its best
#: the practical plan's arguments after n: (d, ρ, R, lo, hi, ω, β, prefer_fewer)
_PlanArgs = tuple[int, float, float, float, float, float, float, float]


@dataclass(frozen=True)
class _Split:
    """Public plan of a split mode: m rows for the coarse fit (its plan, budget ``rho_coarse``);
    ``parallel``: the final pass reads the other n − m rows with the whole ρ, else all n rows
    with ρ − rho_coarse. The final frame's scale u (second moment about the coarse mean ⪯ u·I
    in the coarse whitened frame), clip radius and the final mean and second-moment budgets."""

    m: int
    parallel: bool
    rho_coarse: float
    coarse: GaussianPlan
    u: float
    tau: float
    rho_mean: float
    rho_cov: float
    cov_err: float
    #: the final pass's radius search (its cost is part of ``rho_cov``), or None
    search: RadiusSearch | None = None


def plan_split(n: int, args: _PlanArgs, seq: GaussianPlan) -> _Split | None:
    """The split (coarse rows m = n·2^-k, coarse budget) of least predicted cost
    (:func:`_plan_cost`, below the sequential plan's) whose predicted covariance error is
    within :data:`_SPLIT_TOLERANCE` of the sequential plan's ``seq.cov_err``; None when there
    is none (public: n, d, ρ, the prior, β), and None when the sequential plan has cover
    steps (:func:`~.cov_plan.with_cover_steps`, a large budget): a few gross rows far outside
    the frame of the m coarse rows (which may not even hold them) lie beyond the final pass's
    search cap, which then cuts them, and the fit converges to the clean rows' covariance,
    not np.cov's (DESIGN.md rule 15: at ρ = 100, d = 5, n = 3e5 the split mode ran there and
    left 10 rows 800 sds off a collinear plane out). The
    coarse fit is a *frame plan* (stages 1–3: its output is the rough mean ĉ and the second
    moment about ĉ, so the frame needs no allowance for the centre's error); its relative
    spectral error is modelled as e = 2√(d/m) + 2√d·σ₁/ℓ₁ (sampling, noise of its last
    covariance step). The final clip radius must cover rows whose squared norm is about
    tr(second moment), which the coarse error moves by about 2e/√d relative (spectral errors
    average over d directions): the final frame is the coarse whitening scaled by 1/√u,
    u = 1 + 2e/√d, and its
    smallest eigenvalue is about ℓ = 1/((1 + e)u)."""
    d, rho = args[0], args[1]
    if any(step.cover for step in seq.cov):
        return None
    tau = math.sqrt(chi2_isf(COV_CLIP_TAIL, d))
    limit = ((1.0 + _SPLIT_TOLERANCE) ** 2) * seq.cov_err
    seq_cost = _plan_cost(seq, n, d)
    best: tuple[float, _Split] | None = None
    for f in _SPLIT_FRACTIONS:
        m = int(n * f)
        if m < max(_SPLIT_MIN_ROWS, 20 * d):
            continue
        for share in _SPLIT_SHARES if math.isfinite(rho) else (1.0,):
            parallel = share == 1.0
            rho1 = rho * share
            rho2 = rho if parallel else rho - rho1
            coarse_args = (m, d, rho1, *args[2:-1], max(args[-1], _COARSE_PREFER_FEWER))
            try:
                last = cov_plans(*coarse_args, False)[3][-1]
            except ValueError:
                continue
            e = 2.0 * math.sqrt(d / m) + 2.0 * math.sqrt(d) * last.sigma / last.lower
            rho_m = rho2 * FINAL_MEAN_SHARE
            rho_c = rho2 - rho_m if math.isfinite(rho2) else math.inf
            n2 = n - m if parallel else n
            # the final radius grows with the budget like every practical step's
            # (noise_matched_radius), and a search may grow it from the data
            tau_f = noise_matched_radius(tau, sigma_cov(tau, n2, rho_c), n2, 2)
            sig = sigma_cov(tau_f, n2, rho_c)
            rs = plan_search(tau_f, sig, rho_c, n2, d, 2, float(chi2.sf(tau_f * tau_f, d)))
            if rs is not None:
                sig = sigma_cov(tau_f, n2, rho_c - rs.rho)
            u = 1.0 + 2.0 * e / math.sqrt(d)
            err = (d * d + d) * (1.0 / n2 + sig * sig * (1.0 + e) * u)
            if not (e < min(_SPLIT_MAX_FRAME_ERROR, 0.99) and err <= limit):
                continue
            p1 = practical_plan(*coarse_args, False)
            cost = _plan_cost(p1, m, d) + _FINAL_PASS * n2 * d * d
            if cost < seq_cost and (best is None or cost < best[0]):
                best = (cost, _Split(m, parallel, rho1, p1, u, tau_f, rho_m, rho_c, err, rs))
    return None if best is None else best[1]


def _plan_cost(plan: GaussianPlan, n: int, d: int) -> float:
    """Rough cost of running a plan on n rows, in flops: per step a norm pass over the rows
    and a fixed part (eigendecompositions, bookkeeping)."""
    from ...clipped_stats import U32_BYTES

    steps = len(plan.coarse) + len(plan.cov) + len(plan.rough) + len(plan.mean)
    per_row = _STEP_PASS_U32 if 4 * n * d <= U32_BYTES else _STEP_PASS
    return steps * (per_row * n * d * d + _STEP_OVERHEAD + 30.0 * d**3)


def _split_rows(n: int, m: int, src: Any) -> np.ndarray:
    """A uniformly random m-subset of range(n), sorted — drawn independently of the data."""
    return np.sort(src.rng.choice(n, size=m, replace=False))


def split_gaussian(rows: Rows, sp: _Split, args: _PlanArgs, c: np.ndarray, release: Release,
                   info: dict[str, Any] | None = None, prior_floor: bool = False,
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Split modes of the practical estimator: ρ-zCDP, replace-one neighbours, n public.

    A public random subset S₁ of m rows (:func:`_split_rows`, independent of the data) runs
    stages 1–3 of the sequential estimator (:func:`run_practical` on a frame plan, budget
    ρ₁) and gives a centre ĉ (the rough mean) and the second moment Σ̂₁ about it. The final
    rows S₂ then release, in the frame A = Σ̂₁^{-1/2}/√u centred at ĉ with
    W_i = clip_τ(A(y_i − ĉ)), the noisy mean m̂ = mean W_i + N (L2 sensitivity 2τ/|S₂|,
    budget ρ_m) and second moment M̂ = mean W_i W_iᵀ + N (Frobenius sensitivity √2τ²/|S₂|,
    budget ρ₂ − ρ_m), in one pass (:func:`~privgauss.clipped_stats.clipped_moments`); |S₂| is
    public. Output: μ̂ = ĉ + A⁻¹m̂, Σ̂ = A⁻¹ proj_PSD(M̂ − m̂m̂ᵀ) A⁻ᵀ.

    Privacy. *Subsample mode* (S₂ = all rows, ρ₁ + ρ₂ = ρ): adaptive sequential composition
    (A, ĉ, τ are functions of the released coarse output). *Parallel mode* (S₂ = the other
    n − m rows, ρ₁ = ρ₂ = ρ): let X, X' differ in row j and fix the split (it does not depend
    on the data). If j ∈ S₂, the coarse output O₁ has the same distribution under X and X';
    given O₁ = o the final release composes two Gaussian mechanisms on S₂ with parameters
    fixed by o: ρ-zCDP. If j ∈ S₁, O₁ is ρ-zCDP and, given O₁ = o, the final release has the
    same distribution (S₂ unchanged). By the chain rule of Rényi divergence D_α(O(X) ‖ O(X'))
    ≤ sup_o D_α(O₂(X|o) ‖ O₂(X'|o)) + D_α(O₁(X) ‖ O₁(X')) ≤ αρ in both cases: ρ-zCDP. The
    accountant is charged ρ once (``parallel composition``) before any noise and each part
    runs under its own prepaid accountant of total ρ (its entries kept under that charge); in
    the subsample mode the two parts charge the
    accountant directly. ``info`` (tests) receives the split, the coarse output and the two
    parts' ledgers; ``prior_floor`` as in :func:`~.steps.run_practical`. Charged to
    ``release``, its steps named "<step> split", "<step> coarse …" and "<step> final …"."""
    accountant, src, step = release.accountant, release.noise, release.step
    n = rows.n
    rho, lo = args[1], args[3]
    if sp.parallel:
        paid = accountant.spend(
            ZCDP(rho), step=f"{step} split", mechanism="parallel composition",
            note=f"public random split: {sp.m} rows for the coarse fit, "
                 f"{n - sp.m} for the final pass; each part uses the whole budget")
        # each part's releases are kept under the one charge that pays for both
        part1, part2 = accountant.prepaid(paid, ZCDP(rho)), accountant.prepaid(paid, ZCDP(rho))
    else:
        rho2 = rho - sp.rho_coarse
        part1 = Accountant(ZCDP(sp.rho_coarse), parent=accountant)
        part2 = Accountant(ZCDP(rho2), parent=accountant)
    idx = _split_rows(n, sp.m, src)
    input_map = None
    if rows.P is not None:
        assert rows.p0 is not None  # an input map sets P and p0 together
        input_map = (rows.P, rows.p0)
    rows1 = Rows(take_rows(rows.X, idx), input_map=input_map, center=rows.center)
    mu1, cov1 = run_practical(rows1, sp.coarse, c, lo, Release(part1, src, f"{step} coarse"),
                              prior_floor)
    A = whitener(cov1, lo, step, rel=1.0 if prior_floor else WHITEN_REL) / math.sqrt(sp.u)
    k = cov_clip_scale()  # the fit's public multiplier (1 by default)
    tau, rho_cov = sp.tau * k, sp.rho_cov
    if sp.search is not None:  # the final radius from the final rows, by DP
        search = sp.search if k == 1.0 else RadiusSearch(
            sp.search.rho, tuple(g * k for g in sp.search.grid), sp.search.allowed)
        tau, _ = search_radius(rows, A, mu1, np.zeros(rows.d), search,
                               release=Release(part2, src, f"{step} final"),
                               exclude=rows1 if sp.parallel else None)
        rho_cov = sp.rho_cov - sp.search.rho
    m1, M2 = clipped_moments(rows, A, mu1, tau, exclude=idx if sp.parallel else None)
    note_clip(rows, A, mu1, np.zeros(rows.d), tau, "cov", chi_tail(rows.d, tau),
              grown=tau > sp.tau * k)
    n2 = n - sp.m if sp.parallel else n
    m_w = gaussian_mechanism(m1, clipped_mean_l2(tau, n2), ZCDP(sp.rho_mean),
                             accountant=part2, noise=src, step=f"{step} final mean")
    M = symmetric_matrix_mechanism(M2, clipped_second_moment_frobenius(tau, n2),
                                   ZCDP(rho_cov), accountant=part2, noise=src,
                                   step=f"{step} final second moment")
    if info is not None:
        info.update(split_rows=idx, parallel=sp.parallel, coarse=(mu1, cov1),
                    ledgers=(part1.ledger, part2.ledger))
    Ainv = np.linalg.inv(A)
    with np.errstate(over="ignore", invalid="ignore"):
        cov = sym(Ainv @ project_psd(M - np.outer(m_w, m_w)) @ Ainv.T)
        mean = mu1 + Ainv @ m_w
    if not (np.isfinite(cov).all() and np.isfinite(mean).all()):
        raise EstimationFailed(
            "the private covariance overflowed; rescale the data or tighten the bounds", step=step
        )
    return mean, cov
