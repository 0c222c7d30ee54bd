"""A mean-first CoinPress refinement for small budgets (ρ-zCDP, replace-one, n public).

The practical :func:`~privgauss.gaussian.coinpress.coinpress_gaussian` whitens Σ first, from
pairwise differences when the prior centre is far (half the rows, twice the sensitivity), and
spends a fixed share on its rough and final means. At small n·ρ its whitening chain then eats
the budget (measured at d = 10, condition 100, ρ ≈ 0.021 with a localisation prior: covariance
error 26× non-private at n = 3,000 and 7.7× at n = 5,000). This variant

1. releases a rough mean m₁ of the rows scaled by 1/√hi (covariance ⪯ I there), with a public
   (1 − β) error bound r₁ from its plan (15 % of ρ);
2. runs all but the last step of the known-mean covariance chain (the runner of
   :func:`~privgauss.gaussian.coinpress.coinpress_covariance`) on *all* rows centred at m₁: it
   estimates S = Σ + δδᵀ, δ = μ − m₁, whose eigenvalues lie in [lo, hi + r₁²] (public);
3. releases a *centring mean* in the frame whitened by the chain's pooled estimate of S (since
   S ⪰ δδᵀ, ‖S^{-1/2}δ‖ < 1: the prior radius is a public constant; 8.5 % of ρ);
4. runs the chain's last step about that mean, so that its moment is Σ plus a second-order
   term, in a frame that whitens the chain's releases *re-centred* there (each release minus
   A_i·off·offᵀ·A_iᵀ, off the centring offset: an estimate of Σ whose error, ≈ 2‖Aδ‖²E‖Ae‖² in
   the frame, enters its pooling weight) — the chain's own frames squash the spike of S along
   δ; the last release is pooled with the re-centred ones (:func:`~.steps.pooled`);
5. releases a final mean (1.5 % of ρ) in the frame of that covariance, about the centring
   mean, and returns the two means' generalised-least-squares combination (their noise
   covariances σ²B⁻¹B⁻ᵀ are public given the frames) and the covariance less the small
   remaining offset (shortened when ‖B(μ̂ − c)‖² > 0.8; all post-processing).

Unknown- against known-mean covariance at d = 10, ε = 1, condition 100, n = 3,000 (20 draws of
``benchmarks/small_n.py``): 1.28× (re-centring the chain's moment once at the end with the
final mean, the cross term δeᵀ of the correction cost 1.48×); bound-free covariance 5.6× at
n = 3,000 and 2.6× at n = 5,000 non-private.

Every radius and plan is computed from public quantities (n, d, ρ, the prior, β) or from
releases; each release is charged by the functions it calls. The returned covariance's
eigenvalues are at least 0.2·lo, so the bound-free route's check of its lower-bound
assumption cannot fire on this path. :func:`use_mean_first` picks the variant by the public
predicted error; the practical :func:`~privgauss.gaussian.coinpress.coinpress_gaussian`
dispatches here on it.
"""

from __future__ import annotations

import math

import numpy as np

from ...clipped_stats import Rows
from ...linalg import inv_sqrtm_psd, project_psd, sym
from ...mechanisms import Release
from .cov_plan import covariance_schedule, final_cov_error
from .direction_cover import Cover
from .mean_plan import check_radii, mean_error_bound, mean_schedule
from .steps import ChainPart, PastRelease, noise_floored, pooled, run_cov, run_mean, whitener

_ROUGH_SHARE = 0.15  # of ρ: the rough mean (step 1)
_FINAL_SHARE = 0.1  # of ρ: the final means (steps 3 and 5); the covariance gets the rest
_CENTRE_PART = 0.85  # of the final means' share: the centring mean (step 3)
REFRAME = True
_CENTRE_SLACK = 1.5  # step 5's prior radius: this multiple of step 3's public error bound
_FINAL_RADIUS = 1.5  # public prior radius of step 3 (‖S^{-1/2} δ‖ < 1, with slack for noise)
_MEAN_BETA = 0.01
_MAX_OFFSET = 0.8  # cap on ‖Ŝ^{-1/2}(μ̂ − m₁)‖² in the rank-one correction
# the sequential plan is kept while its predicted covariance error is at most this multiple
# of the non-private one
_SEQUENTIAL_MAX_RATIO = 2.0
# ... or while the variant's predicted error is not at least this much smaller (ρ = 0.5,
# n = 3,000, d = 10, Σ = 2·I: predicted 0.065 against 0.079, measured 1.16× non-private
# against 1.24×; at large n both predict about the sampling error and the sequential plan
# keeps its split mode). Only inside a user's prior: with a prior derived from dirty public
# rows (tests/test_public_dirty.py) the variant returned covariance errors of 1.2-16 where the
# sequential plan fits or fails visibly
_MIN_GAIN = 0.05
_MAX_ROUGH_Q = 10.0  # largest r₁²/√(lo·hi) for which the variant is chosen (use_mean_first)
# ... inside an assumed prior (not the user's: the bound-free frame's, a public or derived
# frame's), whose lo is its pessimistic end while its Σ is near I: small real tables reach
# 12-17 there (immi, mid, nlschools, Tobacco at n ≈ 2,000-3,000, ε = 1), where the sequential
# plan's coarse whitening of pair differences returned fits 1-2 nat/row below np.cov held out
# and the variant 0.15-0.36 (benchmarks/results/gaussian_error_tail.md); the wide public
# frame's failure (below) sat at 53
_MAX_ROUGH_Q_ASSUMED = 30.0


def use_mean_first(n: int, d: int, cov_err: float, rho: float, radius: float,
                   cov_bounds: tuple[float, float], trusted_prior: bool = False) -> bool:
    """Public choice: the mean-first variant when the sequential plan's predicted squared
    covariance error ``cov_err`` exceeds _SEQUENTIAL_MAX_RATIO² times the non-private one or
    — when the prior is the user's (``trusted_prior``) — the variant's own
    (:func:`planned_error`) by _MIN_GAIN, and the rough mean's public error bound r₁ is small
    against the prior's middle scale: r₁² ≤ q·√(lo·hi), q = _MAX_ROUGH_Q in the user's prior
    and _MAX_ROUGH_Q_ASSUMED in an assumed one. Step 4 removes δδᵀ well only when
    q = δᵀΣ⁻¹δ is moderate (with q ≫ 1 the rank-one correction needs S^{-1/2}δ to a precision
    of 1/q); a wide prior — a public frame widened by ``gamma``: hi = 9e8, r₁² ≈ 53·√hi —
    made the variant return a covariance error of 2,600 where the sequential plan gives 0.04.
    In the bound-free frame r₁²/√(lo·hi) is 6.9 at n = 3,000 and 1.9 at n = 5,000 (d = 10,
    ε = 1), 12-17 on small real tables."""
    lo, hi = cov_bounds
    if cov_err <= _SEQUENTIAL_MAX_RATIO**2 * (d * d + d) / n and (
            not trusted_prior
            or (1.0 - _MIN_GAIN) * cov_err <= planned_error(n, d, rho, radius, cov_bounds)):
        return False
    r1 = _rough_bound(n, d, rho, radius, hi)
    q = _MAX_ROUGH_Q if trusted_prior else _MAX_ROUGH_Q_ASSUMED
    return r1 is not None and r1 * r1 <= q * math.sqrt(lo * hi)


def planned_error(n: int, d: int, rho: float, radius: float,
                  cov_bounds: tuple[float, float], beta: float = 0.05) -> float:
    """The planner's predicted squared covariance error of this variant in the frame where
    Σ ≈ I (its step 2's last step, as :func:`~.plan.final_cov_error`); inf when a
    plan is impossible. Public quantities only."""
    lo, hi = cov_bounds
    r1 = _rough_bound(n, d, rho, radius, hi)
    if r1 is None:
        return math.inf
    rho2 = rho * (1.0 - _ROUGH_SHARE - _FINAL_SHARE)
    try:
        plan2 = covariance_schedule(n, d, (hi + r1 * r1) / lo, rho2, beta=beta)
    except ValueError:
        return math.inf
    return final_cov_error(n, d, plan2[-1])


def _rough_bound(n: int, d: int, rho: float, radius: float, hi: float) -> float | None:
    """Public (1 − _MEAN_BETA) bound on ‖μ − m₁‖ after step 1, or None if the plan fails."""
    sh = math.sqrt(hi)
    try:
        plan1 = mean_schedule(n, d, radius / sh, rho * _ROUGH_SHARE, beta=_MEAN_BETA,
                              debias=False)
    except ValueError:
        return None
    return mean_error_bound(n, d, plan1[-1], _MEAN_BETA) * sh


def mean_first_gaussian(
    rows: Rows,
    rho: float,
    *,
    center: np.ndarray,
    radius: float,
    cov_bounds: tuple[float, float],
    release: Release,
    beta: float = 0.05,
    prior_floor: bool = False,
    cover: bool = False,
    cover_columns: tuple[int, ...] = (),
) -> tuple[np.ndarray, np.ndarray]:
    """ρ-zCDP (mean, covariance) of the private rows y_i ~ N(μ, Σ) of ``rows`` (with their
    public per-record map, if any) with ‖μ − center‖ ≤ ``radius`` and lo·I ⪯ Σ ⪯ hi·I
    (``cov_bounds``), steps 1–5 of the module docstring. The rows have been validated (finite;
    numpy or dask) and ρ reserved by the caller; each step charges its planned ρ_i before
    drawing noise (the runners of :mod:`.steps`). ``prior_floor``: lo is a prior
    the data satisfy (S ⪰ Σ ⪰ lo·I), so step 2's frames never whiten a direction past it (as
    :func:`~privgauss.gaussian.coinpress.coinpress_gaussian`): a constant column keeps its
    mean. ``cover``: step 4 covers directions the chain's clipping shrinks
    (:mod:`.direction_cover`; ``cover_columns``: searched whatever the check says). Charged
    to ``release``, its steps named under its step, or "mean-first"."""
    release = release.named("mean-first")
    step = release.step
    n, d = rows.n, rows.d
    center = np.asarray(center, dtype=float)
    lo, hi = cov_bounds
    rho1, rho3 = rho * _ROUGH_SHARE, rho * _FINAL_SHARE
    rho2 = rho - rho1 - rho3
    sh = math.sqrt(hi)
    # 1. rough mean of Z/√hi (covariance ⪯ I), prior ‖μ/√hi‖ ≤ R/√hi
    plan1 = mean_schedule(n, d, radius / sh, rho1, beta=_MEAN_BETA, debias=False)
    r1 = mean_error_bound(n, d, plan1[-1], _MEAN_BETA) * sh  # public bound on ‖μ − m₁‖
    cond = (hi + r1 * r1) / lo
    plan2 = covariance_schedule(n, d, cond, rho2, beta=beta)
    if len(plan2) < 2:  # the centring mean needs a frame from a first step
        plan2 = covariance_schedule(n, d, cond, rho2, beta=beta, steps=2)
    plan3 = mean_schedule(n, d, _FINAL_RADIUS, rho3 * _CENTRE_PART, beta=_MEAN_BETA)
    r3 = _CENTRE_SLACK * mean_error_bound(n, d, plan3[-1], _MEAN_BETA)
    plan5 = mean_schedule(n, d, r3, rho3 * (1.0 - _CENTRE_PART), beta=_MEAN_BETA, search=True)
    check_radii(plan1, plan3, plan5)  # every plan is public and checked before anything is spent
    # every statistic is of y_i − center − (offset): ``shift`` keeps the map (a public frame)
    m1 = run_mean(rows, np.zeros(d), plan1, release.sub("mean-rough"), A=np.eye(d) / sh,
                  shift=center) * sh
    # 2. second moment about m₁: eigenvalues in [lo, hi + r₁²]; start A₀ = I/√(hi + r₁²); all
    # steps but the last, which waits for the final mean
    past: list[PastRelease] = []
    A, _ = run_cov(rows, np.eye(d) / math.sqrt(lo * cond), plan2[:-1], release.sub("cov"),
                   final=False, shift=center + m1, floor=lo if prior_floor else 0.0,
                   part=ChainPart(past, (0, len(plan2))))
    # 3. centring mean in the frame whitened by the chain's pooled estimate of S
    S = project_psd(_pooled_moment(past), min_eig=lo)
    # eigenvalues floored (a released S may be singular) — at the prior's lo when it is trusted
    # (the truth is above it: a frame below it only magnifies the centre's error until the
    # ball misses the rows, e.g. along a constant column), far below it when lo is assumed
    rel = 1.0 if prior_floor else 1e-6
    B = whitener(S, lo, step, rel)
    mw = run_mean(rows, np.zeros(d), plan3, release.sub("mean"), A=B, shift=center + m1)
    off = np.linalg.solve(B, np.asarray(mw))
    # 4. the last covariance step about the centring mean (S' = Σ + eeᵀ, e its small error);
    # the chain's releases about m₁ are re-centred by off·offᵀ, whose error, about
    # 2‖Aδ‖²·E‖Ae‖² in the frame, enters their pooling weights
    if REFRAME:
        # the last step's frame whitens the re-centred pooled moment (≈ Σ), not S = Σ + δδᵀ,
        # whose spike along δ the chain's frames squash
        Sc = project_psd(_pooled_moment(_recentred(past, off, B, plan3[-1].sigma, n, A)),
                         min_eig=lo)
        A = inv_sqrtm_psd(project_psd(A @ Sc @ A.T) + plan2[-2].eta * np.eye(d)) @ A
    past = _recentred(past, off, B, plan3[-1].sigma, n, A)
    sig_last: list[float] = []
    # inside the user's prior, directions the clipping shrinks are covered (direction_cover),
    # checked on the chain's re-centred releases (the last one's frame: plan2[-2]'s λ_min)
    check = Cover(plan2[-2].lower, cover_columns, zeros=prior_floor) if cover else None
    A, cov = run_cov(rows, A, plan2[-1:], release.sub("cov"), shift=center + m1 + off,
                     floor=lo if prior_floor else 0.0,
                     part=ChainPart(past, (len(plan2) - 1, len(plan2)), sig_last), cover=check)
    assert cov is not None
    # 5. a second mean in the frame of the final covariance, about the centring mean; the
    # output mean pools both (their noise covariances σ²B⁻¹B⁻ᵀ; post-processing)
    # its frame: the final covariance plus its own noise level (‖noise‖ ≈ √d·σ in the frame A,
    # mapped back), so an eigenvalue the noise may have pushed down does not stretch the frame
    # until the ball misses the rows; the ridge vanishes with the noise
    Ainv = np.linalg.inv(A)
    ridge = math.sqrt(d) * sig_last[-1] * sym(Ainv @ Ainv.T)
    B2 = whitener(cov + ridge, lo, step, rel)
    sig5: list[float] = []
    mw2 = run_mean(rows, np.zeros(d), plan5, release.sub("mean-final"), A=B2,
                   shift=center + m1 + off, sigmas=sig5)
    off2 = off + np.linalg.solve(B2, np.asarray(mw2))
    # precisions of the two means: (σ²B⁻¹B⁻ᵀ)⁻¹ = BᵀB/σ²
    W1, W2 = B.T @ B / plan3[-1].sigma ** 2, B2.T @ B2 / sig5[-1] ** 2
    mean = np.linalg.solve(W1 + W2, W1 @ off + W2 @ off2)
    # the final moment is about m₁ + off: remove the (small) offset of the pooled mean
    shift = mean - off
    v = B2 @ shift
    g = float(v @ v)
    if g > _MAX_OFFSET:
        shift = shift * math.sqrt(_MAX_OFFSET / g)
    cov = project_psd(cov - np.outer(shift, shift), min_eig=lo * (1.0 - _MAX_OFFSET))
    # removing the offset may take a direction the noise left thin below the last release's
    # noise floor again: floored once more in that release's frame (post-processing)
    cov = noise_floored(cov, sig_last[-1], A)
    return center + m1 + mean, cov


def _pooled_moment(past: list[PastRelease]) -> np.ndarray:
    """The pooled estimate of the chain's moment in the rows' units (post-processing), in the
    frame of its last release."""
    A, Z, sigma, _, _ = past[-1]
    Ainv = np.linalg.inv(A)
    with np.errstate(over="ignore", invalid="ignore"):
        return sym(Ainv @ project_psd(pooled(past[:-1], A, Z, sigma)) @ Ainv.T)


def _recentred(past: list[PastRelease], off: np.ndarray, B: np.ndarray, sigma_m: float, n: int,
               A: np.ndarray) -> list[PastRelease]:
    """The chain's releases about m₁ moved to the centring mean m₁ + ``off``:
    Z_i − A_i off offᵀ A_iᵀ, with the extra error 2‖A off‖²·E‖A e‖² (e the centring mean's
    error: noise σ_m in its frame B, plus the sampling error ≈ the pooled S/n) in the last
    frame A."""
    G = A @ np.linalg.inv(B)
    e2 = sigma_m * sigma_m * float(np.sum(G * G)) + float(np.sum(G * G)) / n
    x = 2.0 * float(np.sum((A @ off) ** 2)) * e2
    return [(A_i, Z_i - np.outer(A_i @ off, A_i @ off), s_i, x_i + x, t_i)
            for A_i, Z_i, s_i, x_i, t_i in past]
