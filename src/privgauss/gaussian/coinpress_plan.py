"""The public plans of the CoinPress estimators (:mod:`.coinpress`): no data involved.

Biswas, Dong, Kamath and Ullman, *CoinPress: Practical Private Mean and Covariance Estimation*
(NeurIPS 2020), Alg. 1–2. Everything here is a function of public quantities only (n, d, ρ,
the prior, β, the step index): the step counts, the split ρ_i = ρ·f_i (the last share is
``1 − sum(others)``, so the parts sum to ρ), clip radii, noise scales and ridges of
:func:`mean_schedule`, :func:`covariance_schedule` and the practical Gaussian planner, the
χ tail bounds they use, and the closed forms of clipping under the Gaussian model
(post-processing only). The runners in :mod:`.coinpress` charge ``ZCDP(ρ_i)`` per step before
drawing noise, so the estimators are ρ-zCDP under **replace-one** neighbours (n public) for
any plan; the plan only decides accuracy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import chdtrc, gammaln
from scipy.stats import chi2, norm, poisson

from ..mechanisms import gaussian_sigma_zcdp
from ..privacy import ZCDP
from ..sensitivity import clipped_mean_l2, clipped_second_moment_frobenius
from .coinpress_radius import _SEARCH_SHARE, RadiusSearch, plan_search, search_cap

__all__ = [
    "CovStep",
    "MeanStep",
    "chi_tail_bound",
    "chi_tail_radius",
    "covariance_schedule",
    "mean_schedule",
]

CONSTANTS = ("practical", "theory")
_MAX_MEAN_STEPS = 10
_MAX_COV_STEPS = 40
# Practical covariance: per-row clipping tail of the chi-square radius.
_COV_CLIP_TAIL = 0.01
# Practical Gaussian estimator: shares of ρ for the rough mean, the final mean and the rest
# (the covariance steps).
_ROUGH_MEAN_SHARE = 0.05
_FINAL_MEAN_SHARE = 0.20
# Practical plans: when a step's noise std σ at its planned radius is below s = √(η/n) (η the
# first constant: 0.1 for second-moment steps, 0.02 for mean steps — at 0.1 the mean steps of
# CoinPress's d = 50, ρ = 0.5 protocol grew at n ≥ 6000 and lost 1-3 % to CoinPress t = 2;
# 1/n the sampling variance per whitened coordinate), the radius grows until the
# noise std is s·(σ/s)^(1 − g) (g the second): almost s, which adds under 10 % to the sampling
# variance, and still vanishing as σ does. As n·ρ grows the radius grows without bound (fewer
# and fewer rows clipped: heavy tails, rare flags and counts are covered) while the noise
# vanishes, so every step converges to the non-private moment of the same rows (DESIGN.md rule
# 15); where the noise is already larger (small n·ρ) the planned radius stands. g = 0.9: at
# ε = 1e4, n = 16,000 a lognormal(σ = 1.5) column's held-out gap to np.cov was 0.24, 0.11 and
# 0.044 nat/row for g = 0.5, 0.75 and 0.9.
_NOISE_TO_SAMPLING = {1: 0.02, 2: 0.1}  # by the power of τ the noise grows with: mean, moment
_GROWTH = 0.9
# ... at that pace up to this multiple of the planned radius (about 5,000 standard deviations:
# beyond, rows are mostly gross errors, which the background component describes); past it the
# radius grows as (s/σ)^(0.1/power) only, so it still has no bound (rule 15) while the noise
# falls almost as 1/√ρ again and a huge budget reaches the non-private estimate quickly
_MAX_GROWTH = 1e3
# Above this ω² (public Mahalanobis bound on the prior centre's offset) the coarse covariance
# steps use pairwise differences instead of rows centred at the prior centre.
_PAIRS_OMEGA2 = 4.0
# Practical covariance steps and final mean steps may grow their radius from the data by a DP
# search (:mod:`.coinpress_radius`) when the budget leaves room: at ε = 1e4 the planned radii
# cut a table's few gross-error rows out of np.cov's moment (diamonds: 23 of 43,152 rows,
# held-out gap 10.8 nat/row)
SEARCH = True


# ----------------------------------------------------------------------------------------------
# Public tail bounds
# ----------------------------------------------------------------------------------------------


def chi_tail_bound(d: int, beta: float) -> float:
    """γ(d, β) = sqrt(d + 2√(d ln 1/β) + 2 ln 1/β): ‖z‖ ≤ γ w.p. ≥ 1 − β for z ~ N(0, I_d)
    (Laurent–Massart 2000). The bound CoinPress uses."""
    lb = math.log(1.0 / beta)
    return math.sqrt(d + 2.0 * math.sqrt(d * lb) + 2.0 * lb)


@lru_cache(maxsize=4096)
def _chi2_isf(p: float, d: int) -> float:
    return float(chi2.isf(p, d))


def _chi2_sf(x: float, d: int) -> float:
    """P(χ²_d > x): ``scipy.stats.chi2.sf``'s own function (``chdtrc``, the same values)
    without the distribution object's argument handling, which costs ~20× the evaluation in
    the planner's inner loops."""
    return 1.0 if x < 0 else float(chdtrc(d, x))


@lru_cache(maxsize=1024)
def _norm_isf(p: float) -> float:
    return float(norm.isf(p))


def chi_tail_radius(d: int, beta: float) -> float:
    """The exact (1 − β) quantile of ‖z‖ for z ~ N(0, I_d); never above :func:`chi_tail_bound`."""
    return math.sqrt(_chi2_isf(beta, d))


# ----------------------------------------------------------------------------------------------
# Argument checks (public quantities only in messages)
# ----------------------------------------------------------------------------------------------


def _check_constants(constants: str, allowed: tuple[str, ...] = CONSTANTS) -> str:
    if constants not in allowed:
        raise ValueError(f"constants must be one of {allowed}, got {constants!r}")
    return constants


def _check_rho(rho: Any) -> float:
    return ZCDP(rho).rho  # raises PrivacyBudgetError for <= 0, NaN, non-numbers


def _check_beta(beta: Any, name: str = "beta") -> float:
    b = float(beta)
    if not 0.0 < b < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {b}")
    return b



def _fractions(fractions: Any, steps: int) -> tuple[float, ...]:
    """Validate a user split: positive, ``steps`` long, summing to 1; the last is recomputed
    as 1 − sum(others) so the parts sum to exactly 1."""
    f = [float(x) for x in fractions]
    if len(f) != steps:
        raise ValueError(f"fractions must have one entry per step ({steps}), got {len(f)}")
    if any(not (x > 0) or math.isinf(x) for x in f):
        raise ValueError("fractions must be positive and finite")
    if abs(math.fsum(f) - 1.0) > 1e-9:
        raise ValueError("fractions must sum to 1")
    last = 1.0 - math.fsum(f[:-1])
    if not last > 0:
        raise ValueError("fractions must sum to 1 with a positive last entry")
    return (*f[:-1], last)


def _split(rho: float, fractions: tuple[float, ...]) -> tuple[float, ...]:
    """ρ·f_i for all but the last step; the last gets ρ − sum(others) (all ∞ when ρ = ∞)."""
    if math.isinf(rho):
        return tuple(math.inf for _ in fractions)
    head = [rho * f for f in fractions[:-1]]
    return (*head, rho - math.fsum(head))


def _coinpress_fractions(t: int) -> tuple[float, ...]:
    """CoinPress's scripts: the last step gets 3/4, the others share 1/4 equally."""
    if t == 1:
        return (1.0,)
    return _fractions([0.25 / (t - 1)] * (t - 1) + [0.75], t)


# ----------------------------------------------------------------------------------------------
# Clipping under the Gaussian model (public, closed forms)
# ----------------------------------------------------------------------------------------------


def _chi2_trunc_terms(k: np.ndarray, tau: float) -> np.ndarray:
    """h_k(τ) = P(χ²_{k+2} ≤ τ²) + τ E[χ²_{k+2}^{-1/2}; χ²_{k+2} > τ²] for an array of k."""
    t2 = tau * tau
    ratio = np.exp(gammaln((k + 1) / 2.0) - gammaln(k / 2.0 + 1.0)) / math.sqrt(2.0)
    return chi2.cdf(t2, k + 2) + tau * ratio * chi2.sf(t2, k + 1)


@lru_cache(maxsize=8192)
def _clip_slope(d: int, tau: float, a: float = 0.0) -> float:
    """φ_τ(a): E[clip_τ(z + v)] = φ_τ(‖v‖)·v for z ~ N(0, I_d), clip_τ the projection onto the
    ball of radius τ. By Stein's identity E[y g(‖y‖²)] = v E[g(χ'²_{d+2}(‖v‖²))], a Poisson
    mixture of central χ² terms."""
    if a == 0.0:
        return float(_chi2_trunc_terms(np.array([float(d)]), tau)[0])
    lam = a * a / 2.0
    jmax = int(lam + 12.0 * math.sqrt(lam) + 30.0)
    j = np.arange(jmax + 1)
    w = poisson.pmf(j, lam)
    return float(np.dot(w, _chi2_trunc_terms(d + 2.0 * j, tau)))


@lru_cache(maxsize=8192)
def _clip_second_moment(d: int, tau: float) -> float:
    """E[min(‖z‖², τ²)]/d for z ~ N(0, I_d): the per-coordinate variance of clip_τ(z)."""
    t2 = tau * tau
    return float(chi2.cdf(t2, d + 2) + (t2 / d) * chi2.sf(t2, d))


def _undo_shrinkage(g: np.ndarray, d: int, tau: float, a_cap: float) -> np.ndarray:
    """Invert v ↦ φ_τ(‖v‖) v radially (post-processing of a DP output): the v with
    ‖v‖ φ_τ(‖v‖) = ‖g‖, its norm capped at ``a_cap``."""
    a0 = float(np.linalg.norm(g))
    if a0 == 0.0:
        return g / _clip_slope(d, tau)

    def psi(a: float) -> float:
        return a * _clip_slope(d, tau, a) - a0

    if psi(a_cap) <= 0:
        a = a_cap
    else:
        a = brentq(psi, 0.0, a_cap, xtol=1e-12 * max(a_cap, 1.0), rtol=1e-10)
    return g * (a / a0)


# ----------------------------------------------------------------------------------------------
# Mean
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MeanStep:
    """One step of the iterative mean, all public: its zCDP cost, the public bound on
    ‖center − μ‖ entering it, the clip radius, the per-coordinate noise std, and whether the
    output is de-shrunk under the Gaussian model (last practical step only)."""

    rho: float
    prior_radius: float
    clip_radius: float
    sigma: float
    debias: bool = False
    #: a DP search that may grow the radius from the data (its cost is part of ``rho``;
    #: ``sigma`` is then the noise at the planned radius with the rest)
    search: RadiusSearch | None = None


def _sigma_mean(tau: float, n: int, rho: float) -> float:
    return gaussian_sigma_zcdp(clipped_mean_l2(tau, n), rho)


def noise_matched_radius(tau: float, sigma: float, n: int, power: int) -> float:
    """The larger of ``tau`` and the radius τ' at which a release whose noise std is ``sigma``
    at ``tau`` and grows as τ^``power`` (1 for a clipped mean, 2 for a clipped second moment)
    has noise std s·(σ/s)^(1 − g), s = √(η/n) (η = :data:`_NOISE_TO_SAMPLING` of the power, g =
    :data:`_GROWTH`); past :data:`_MAX_GROWTH`·τ it grows as (s/σ)^(0.1/power) only — a public
    function of (n, ρ) that grows without bound with n·ρ while the noise tends to 0 (see the
    constants' comments)."""
    target = math.sqrt(_NOISE_TO_SAMPLING[power] / n)
    if not (0.0 < sigma < target):  # noisier than that (or no noise: an infinite budget)
        return tau
    r = target / sigma
    return tau * min(r ** (_GROWTH / power), _MAX_GROWTH * r ** ((1.0 - _GROWTH) / power))


def _mean_step(rho: float, r: float, tau: float, n: int, d: int = 0,
               search: bool = False) -> MeanStep:
    """A practical mean step clipping at ``tau`` or at its noise-matched radius if larger;
    with ``search``, a radius search (:mod:`.coinpress_radius`) may grow it from the data."""
    tau = noise_matched_radius(tau, _sigma_mean(tau, n, rho), n, 1)
    sigma = _sigma_mean(tau, n, rho)
    rs = None
    if search and SEARCH and d > 0:
        p = _chi2_sf(max(tau - r, 0.0) ** 2, d)  # Gaussian rows outside, centre within r
        rs = plan_search(tau, sigma, rho, n, d, 1, p)
    if rs is not None:
        sigma = _sigma_mean(tau, n, rho - rs.rho)
    return MeanStep(rho, r, tau, sigma, search=rs)


def _theory_mean_plan(
    n: int, d: int, radius: float, rhos: tuple[float, ...], beta: float
) -> tuple[MeanStep, ...]:
    gamma = chi_tail_bound(d, beta)
    r = radius
    out = []
    for rho_i in rhos:
        tau = min(math.sqrt(r * r + 6.0 * r + gamma * gamma), r + gamma)
        s = _sigma_mean(tau, n, rho_i)
        out.append(MeanStep(rho_i, r, tau, s))
        r = math.sqrt(1.0 / n + s * s) * gamma
    return tuple(out)


def _practical_chain(
    n: int, d: int, radius: float, rhos: tuple[float, ...], beta: float
) -> tuple[list[MeanStep], float]:
    """Localisation steps (all but the last): clip so that a row is cut w.p. ≤ β, then bound
    the new centre's distance by the exact χ quantile at β/t (t steps: a union bound, so the
    whole chain keeps the data inside its balls w.p. ≥ 1 − β — at β per step a 10-step chain
    inside a wide prior lost the data in about 1 fit in 20)."""
    g2 = _chi2_isf(beta, d)
    q = _chi2_isf(beta / max(len(rhos), 1), d)
    z = _norm_isf(beta)
    r = radius
    out = []
    for rho_i in rhos:
        step = _mean_step(rho_i, r, math.sqrt(g2 + 2.0 * z * r + r * r), n)
        out.append(step)
        r = math.sqrt((1.0 / n + step.sigma**2) * q)
    return out, r


# χ_d quantiles a debiased last mean step may clip at (``debias=True``, off by default: on a
# skewed column the undone clip is biased — a 0/1 flag with p = 0.1 came out 0.17 standard
# deviations off, against 0.003-0.006 for a Gaussian column, at (1, 1e-6) with coinpress and
# public; without it a Gaussian column's error grows by 10-35 %)
_FINAL_QUANTILES = (0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)


def _practical_final(
    n: int, d: int, r: float, rho_f: float, beta: float, debias: bool, search: bool = False
) -> tuple[MeanStep, float]:
    """The last step: either a covering clip (no de-shrinking; with ``search``, its radius
    may grow from the data) or a clip at a χ quantile whose shrinkage is undone under the
    model; the one with the smallest predicted error."""
    cover = _mean_step(rho_f, r, math.sqrt(_chi2_isf(beta, d) + 2.0 * _norm_isf(beta) * r + r * r),
                       n, d, search)
    tau_c = cover.clip_radius
    best = (cover, d * (1.0 / n + cover.sigma**2))
    if not debias:
        return best
    for p in _FINAL_QUANTILES:
        tau = math.sqrt(_chi2_isf(1.0 - p, d))
        if tau >= tau_c or r > 0.5 * tau:
            continue
        s = _sigma_mean(tau, n, rho_f)
        slope = _clip_slope(d, tau)
        err = d * (_clip_second_moment(d, tau) / n + s * s) / slope**2
        if err < best[1]:
            best = (MeanStep(rho_f, r, tau, s, True), err)
    return best


def _check_schedule(n: int, d: int, rho: Any, beta: Any, constants: str, steps: int | None,
                    fractions: Any) -> tuple[float, float, int | None, tuple[float, ...] | None]:
    """The arguments a schedule shares, checked: (ρ, β, steps, validated fractions or None)."""
    _check_constants(constants)
    if n < 1 or d < 1:
        raise ValueError("n and d must be >= 1")
    rho = _check_rho(rho)
    beta = _check_beta(beta)
    if steps is not None and (int(steps) != steps or steps < 1):
        raise ValueError("steps must be a positive integer")
    fr = None
    if fractions is not None:
        fr = _fractions(fractions, len(fractions) if steps is None else int(steps))
        steps = len(fr)
    return rho, beta, steps, fr


@lru_cache(maxsize=1024)
def mean_schedule(
    n: int,
    d: int,
    radius: float,
    rho: float,
    *,
    steps: int | None = None,
    fractions: tuple[float, ...] | None = None,
    beta: float = 0.01,
    constants: str = "practical",
    debias: bool = False,
    search: bool = False,
) -> tuple[MeanStep, ...]:
    """The public plan of :func:`coinpress_mean` (no data involved).

    ``theory``: CoinPress exactly (t = ``steps`` or 2, CoinPress's split unless ``fractions``).
    ``practical``: when ``steps``/``fractions`` are None, t ∈ 1..10 and the last step's share
    f ∈ [0.5, 0.99] (earlier steps share 1 − f equally) are chosen to minimise the predicted
    final error d(v/n + σ²)/slope² given the prior looseness ``radius``/√d, n, d and ρ.
    ``search`` (practical): the last step, when it covers, gets a DP radius search
    (:mod:`.coinpress_radius`) — for a plan whose output no later prior radius relies on.
    """
    if not (radius >= 0 and math.isfinite(radius)):
        raise ValueError("radius must be finite and >= 0")
    rho, beta, steps, fr = _check_schedule(n, d, rho, beta, constants, steps, fractions)
    if constants == "theory":
        t = 2 if steps is None else int(steps)
        fr = _coinpress_fractions(t) if fr is None else fr
        return _theory_mean_plan(n, d, float(radius), _split(rho, fr), beta)

    candidates: list[tuple[float, ...]]
    if fr is not None:
        candidates = [fr]
    else:
        candidates = list(_mean_candidates(steps))
    if not debias and 0.0 < rho < math.inf:  # score the candidates first, build the best
        pick = _best_mean_candidate(n, d, float(radius), rho, candidates, beta, search)
        if pick is not None:
            candidates = [pick]
    best: tuple[tuple[MeanStep, ...], float] | None = None
    for fr_c in candidates:
        rhos = _split(rho, fr_c)
        chain, r = _practical_chain(n, d, float(radius), rhos[:-1], beta)
        last, err = _practical_final(n, d, r, rhos[-1], beta, debias, search)
        if best is None or err < best[1] * (1 - 1e-12):
            best = ((*chain, last), err)
    assert best is not None
    return best[0]


@lru_cache(maxsize=16)
def _mean_candidates(steps: int | None) -> tuple[tuple[float, ...], ...]:
    """The splits :func:`mean_schedule` compares (public constants: t ∈ 1..10 or ``steps``, the
    last share f ∈ [0.5, 0.99]), built once."""
    ts = range(1, _MAX_MEAN_STEPS + 1) if steps is None else [int(steps)]
    out: list[tuple[float, ...]] = []
    for t in ts:
        if t == 1:
            out.append((1.0,))
            continue
        for f in np.linspace(0.5, 0.99, 36):
            out.append(_fractions([(1.0 - f) / (t - 1)] * (t - 1) + [f], t))
    return tuple(out)


def _best_mean_candidate(n: int, d: int, radius: float, rho: float,
                         candidates: list[tuple[float, ...]], beta: float, search: bool
                         ) -> tuple[float, ...] | None:
    """The split :func:`mean_schedule` keeps (no de-shrinking, finite ρ): the first candidate
    of least predicted error d(1/n + σ²), scored with the float operations of
    :func:`_practical_chain` and :func:`_practical_final` but without building their steps
    (no step objects, no search grids: the refusals' and ``requirements``' binary searches
    plan hundreds of times). None (the full scan decides, and raises as it does) when a
    radius leaves the range the steps accept."""
    g2 = q = _chi2_isf(beta, d)
    z = _norm_isf(beta)
    inv_n = 1.0 / n
    target = math.sqrt(_NOISE_TO_SAMPLING[1] / n)  # as noise_matched_radius computes it
    best: tuple[float, ...] | None = None
    best_err = math.inf

    def matched(cover: float, r: float, root: float) -> tuple[float, float]:
        # a step's covering radius around the previous error r, and its noise std (both grown
        # by noise_matched_radius when 0 < σ < target, as the steps do)
        tau = math.sqrt(cover + 2.0 * z * r + r * r)
        sigma = (2.0 * tau / n) / root
        if 0.0 < sigma < target:
            tau = noise_matched_radius(tau, sigma, n, 1)
            sigma = (2.0 * tau / n) / root
        return tau, sigma

    for fr_c in candidates:
        head = [rho * f for f in fr_c[:-1]]  # _split(rho, fr_c), ρ finite
        rho_f = rho - math.fsum(head)
        if not (rho_f > 0 and min(head, default=1.0) > 0):
            return None
        r = radius
        # an infinite radius (where the steps would refuse) makes every later term, and the
        # error, infinite: checked once, below. noise_matched_radius keeps τ unless
        # 0 < σ < target (then it is called, and σ recomputed at its radius)
        for rho_i in head:  # _practical_chain
            sigma = matched(g2, r, math.sqrt(2.0 * rho_i))[1]
            r = math.sqrt((inv_n + sigma**2) * q)
        # _practical_final, the covering step (_mean_step)
        tau, sigma = matched(g2, r, math.sqrt(2.0 * rho_f))
        if search and SEARCH and d > 0 and search_cap(tau, sigma, rho_f, d, 1) is not None:
            sigma = (2.0 * tau / n) / math.sqrt(2.0 * (rho_f - rho_f * _SEARCH_SHARE))
        err = d * (1.0 / n + sigma**2)
        if not math.isfinite(err):
            return None
        if best is None or err < best_err * (1 - 1e-12):
            best, best_err = fr_c, err
    return best


# ----------------------------------------------------------------------------------------------
# Covariance
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CovStep:
    """One covariance step, all public: zCDP cost, row clip radius (in the current whitened
    coordinates, where the second moment M ⪯ I), noise std of each diagonal entry (σ/√2 off
    the diagonal: :func:`~privgauss.mechanisms.symmetric_matrix_mechanism`), the
    ridge η added before the next whitening (0 for the last step), and the public lower
    bound on λ_min(M) entering the step."""

    rho: float
    clip_radius: float
    sigma: float
    eta: float
    lower: float
    debias: bool = False  # last step only: clipped inside the bulk, shrinkage undone
    #: a DP search that may grow the radius from the data (its cost is part of ``rho``;
    #: ``sigma`` is then the noise at the planned radius with the rest)
    search: RadiusSearch | None = None


def _sigma_cov(tau: float, n: int, rho: float) -> float:
    return gaussian_sigma_zcdp(clipped_second_moment_frobenius(tau, n), rho)


def _clip_fourth_moment(d: int, tau: float) -> float:
    """E[min(‖z‖⁴, τ⁴)]/(d(d+2)) for z ~ N(0, I_d): E[z_i² z_j² min(1, τ²/‖z‖²)²] (i ≠ j)."""
    t2 = tau * tau
    return float(chi2.cdf(t2, d + 4) + t2 * t2 * chi2.sf(t2, d) / (d * (d + 2.0)))


# Whether the planner may clip the last covariance step inside the bulk and undo the shrinkage
# under the Gaussian model. Off: on non-Gaussian columns the undone clip is biased — at
# (1, 1e-6), n = 8,000, d = 4 a 0/1 flag (p = 0.1) came out with 52 % of its variance and a
# Poisson(0.3) count with 80 % (92-97 % with the covering clip), while on Gaussian draws it gains
# ~20 % (bound-free, d = 10, n = 2e4: covariance 1.33× non-private against 1.68×).
COV_DEBIAS = False
# quantiles of ‖z‖ tried for a debiased last covariance step
_COV_FINAL_QUANTILES = (0.7, 0.8, 0.9)
# ... only when the planned frame is close to whitened (typical λ_min(M) at least this)
_COV_DEBIAS_MIN_LOWER = 0.3
_COV_DEBIAS_MIN_GAIN = 0.1  # ... and when its predicted squared error is this much smaller


def _final_cov_error(n: int, d: int, step: CovStep) -> float:
    """The planner's predicted squared error of the last step, (d² + d)(v/n + σ²/(ℓk²)): the
    sampling variance v and the slope k of an undone clip at τ are those of an off-diagonal
    entry at M = I (1 and 1 when no row is meant to be clipped). The noise term counts σ² on
    every entry, where the symmetric mechanism puts σ²/2 off the diagonal: pessimistic by up to
    2× in the noise, kept because the exact term chose worse plans (bound-free, d = 10, ε = 1,
    n = 2e4, 20 draws: covariance 1.46× non-private against 1.42×)."""
    v, k = 1.0, 1.0
    if step.debias:
        k = _cov_clip_slope(d, step.clip_radius)
        v = _clip_fourth_moment(d, step.clip_radius) / (k * k)
    return (d * d + d) * (v / n + step.sigma**2 / (step.lower * k * k))


def _cov_clip_slope(d: int, tau: float) -> float:
    """∂E[clip_τ(x) clip_τ(x)ᵀ]_ij / ∂M_ij at M = I, i ≠ j (x ~ N(0, M)): the factor by which
    undoing the clip magnifies an off-diagonal error, h − 2τ² P(χ²_d > τ²)/(d(d + 2))."""
    t2 = tau * tau
    return _clip_second_moment(d, tau) - 2.0 * t2 * float(chi2.sf(t2, d)) / (d * (d + 2.0))


def _final_cov_step(n: int, d: int, rho_f: float, lower: float, tau: float) -> CovStep:
    """The last covariance step: the covering clip at ``tau`` or a clip at a χ_d quantile
    inside the bulk whose shrinkage is undone under the Gaussian model
    (:func:`undo_cov_clip`), whichever has the smaller predicted error."""
    best = first = _cov_step(rho_f, tau, n, 0.0, lower, d)
    tau = first.clip_radius
    err = cover = _final_cov_error(n, d, best)
    if not COV_DEBIAS or lower < _COV_DEBIAS_MIN_LOWER or d < 2:  # (far from whitened: the model
        return best  # does not hold; d = 1 has no off-diagonal entry to model)
    for p in _COV_FINAL_QUANTILES:
        t = math.sqrt(_chi2_isf(1.0 - p, d))
        if t >= tau:
            continue
        cand = CovStep(rho_f, t, _sigma_cov(t, n, rho_f), 0.0, lower, True)
        e = _final_cov_error(n, d, cand)
        if e < err * (1 - 1e-12):
            best, err = cand, e
    # the undone clip relies on Gaussian tails (a 0/1 column came out 11 % too wide): only
    # worth it when the noise dominates, i.e. a clear predicted gain
    if best.debias and err > (1.0 - _COV_DEBIAS_MIN_GAIN) * cover:
        return first
    return best


_CLIP_DRAWS = 8192  # public Monte Carlo draws for the anisotropic part of the clip correction


@lru_cache(maxsize=64)
def _clip_draws(d: int) -> np.ndarray:
    """Fixed public N(0, I_d) draws (no data, no privacy role): squared coordinates."""
    return np.random.default_rng(20_201_004).standard_normal((_CLIP_DRAWS, d)) ** 2


def _clip_factors(lam: np.ndarray, tau: float) -> np.ndarray:
    """h_i(λ) = E[g_i² min(1, τ²/Σ_j λ_j g_j²)], g ~ N(0, I): rows ~ N(0, diag λ) clipped to
    the ball of radius τ have second moment diag(λ_i h_i). Exact for λ = c·1 (χ² closed
    form); the anisotropic remainder by Monte Carlo with the isotropic term as control
    variate (its error scales with the anisotropy)."""
    d = lam.size
    c = float(np.mean(lam))
    if not c > 0:
        return np.ones(d)
    t2 = tau * tau
    exact = _clip_second_moment(d, tau / math.sqrt(c))
    G2 = _clip_draws(d)
    w = np.minimum(1.0, t2 / np.maximum(G2 @ lam, 1e-300))
    w0 = np.minimum(1.0, (t2 / c) / G2.sum(axis=1))
    return np.maximum(exact + (G2 * (w - w0)[:, None]).mean(axis=0), 1e-12)


def undo_cov_clip(Z: np.ndarray, tau: float, iters: int = 50) -> np.ndarray:
    """Invert M ↦ E[clip_τ(x) clip_τ(x)ᵀ], x ~ N(0, M), at a released PSD second moment
    ``Z`` (post-processing of a DP output). The map is rotation-equivariant, so the solution
    shares Z's eigenvectors; its eigenvalues solve z_i = λ_i h_i(λ) (fixed point)."""
    z, V = np.linalg.eigh((Z + Z.T) / 2.0)
    z = np.maximum(z, 0.0)
    lam = z.copy()
    for _ in range(iters):
        new = z / _clip_factors(lam, tau)
        if np.allclose(new, lam, rtol=1e-10, atol=0.0):
            lam = new
            break
        lam = new
    return (V * lam) @ V.T


def _theory_cov_plan(
    n: int, d: int, cond: float, rhos: tuple[float, ...], beta: float
) -> tuple[CovStep, ...]:
    tau = chi_tail_bound(d, beta)
    eta = 0.5 * (2.0 * math.sqrt(d / n) + d / n)
    lower = 1.0 / cond
    out = []
    for i, rho_i in enumerate(rhos):
        s = _sigma_cov(tau, n, rho_i)
        last = i == len(rhos) - 1
        out.append(CovStep(rho_i, tau, s, 0.0 if last else eta, lower))
        lower = min(1.0, lower / (lower + eta + math.sqrt(d) * s))  # as in the practical model
    return tuple(out)


def _practical_cov_chain(
    n: int, d: int, cond: float, rhos: tuple[float, ...]
) -> tuple[list[CovStep], float]:
    """Whitening steps with CoinPress's ridge η = (2√(d/n) + d/n)/2, and the planner's
    typical-case model of the smallest eigenvalue: ℓ ← ℓ/(ℓ + η + √d·σ) (the noise matrix
    lifts a direction by about √d·σ; its worst case is 2√d·σ)."""
    tau = math.sqrt(_chi2_isf(_COV_CLIP_TAIL, d))
    eta = 0.5 * (2.0 * math.sqrt(d / n) + d / n)
    lower = 1.0 / cond
    out = []
    for rho_i in rhos:
        step = _cov_step(rho_i, tau, n, eta, lower, d)
        out.append(step)
        lower = min(1.0, lower / (lower + eta + math.sqrt(d) * step.sigma))
    return out, lower


def _cov_step(rho: float, tau: float, n: int, eta: float, lower: float, d: int = 0) -> CovStep:
    """A practical covariance step clipping at ``tau`` or at its noise-matched radius; with
    ``d``, a radius search (:mod:`.coinpress_radius`) may grow it from the data when the
    budget leaves room (rows in the step's frame have second moment ⪯ I: at most a χ_d tail
    of Gaussian rows lies outside)."""
    tau = noise_matched_radius(tau, _sigma_cov(tau, n, rho), n, 2)
    sigma = _sigma_cov(tau, n, rho)
    rs = None
    if SEARCH and d > 0:
        rs = plan_search(tau, sigma, rho, n, d, 2, _chi2_sf(tau * tau, d))
    if rs is not None:
        sigma = _sigma_cov(tau, n, rho - rs.rho)
    return CovStep(rho, tau, sigma, eta, lower, search=rs)


@lru_cache(maxsize=1024)
def covariance_schedule(
    n: int,
    d: int,
    cond: float,
    rho: float,
    *,
    steps: int | None = None,
    fractions: tuple[float, ...] | None = None,
    beta: float = 0.1,
    constants: str = "practical",
    prefer_fewer: float = 0.0,
) -> tuple[CovStep, ...]:
    """The public plan of the iterative covariance estimator for a second moment M with
    I/cond ⪯ M ⪯ I in the starting coordinates (no data involved).

    ``theory``: CoinPress (γ_c = γ(d, β), η = (2√(d/n) + d/n)/2, CoinPress's split); steps=None
    gives t = 1 + ⌈log10 cond⌉ (at least 2). ``practical``: clip at the exact χ_d quantile
    0.99, CoinPress's ridge, and — when steps/fractions are None — t ∈ 1..40 and the last
    step's share chosen to minimise the predicted error (d² + d)(1/n + σ_t²/ℓ_t), ℓ_t the
    typical smallest eigenvalue after t − 1 whitening steps (see ``_practical_cov_chain``).
    ``beta`` is the tail of the theory clip radius (practical plans do not use it).
    ``prefer_fewer`` (practical, automatic plans): take the fewest steps whose predicted error
    is within this relative tolerance of the best (e.g. 0.01; each step is a pass over the
    data).
    """
    cond = float(cond)
    if not (cond >= 1 and math.isfinite(cond)):
        raise ValueError("the condition bound must be finite and >= 1")
    rho, beta, steps, fr = _check_schedule(n, d, rho, beta, constants, steps, fractions)
    if constants == "theory":
        t = max(2, 1 + math.ceil(math.log10(cond))) if steps is None else int(steps)
        fr = _coinpress_fractions(t) if fr is None else fr
        return _theory_cov_plan(n, d, cond, _split(rho, fr), beta)

    tau = math.sqrt(_chi2_isf(_COV_CLIP_TAIL, d))
    if fr is not None:
        chosen = fr
    else:
        ts = range(1, _MAX_COV_STEPS + 1) if steps is None else [int(steps)]
        chosen = _best_cov_fractions(n, d, cond, rho, tuple(ts), tau, float(prefer_fewer))
    rhos = _split(rho, chosen)
    chain, lower = _practical_cov_chain(n, d, cond, rhos[:-1])
    return (*chain, _final_cov_step(n, d, rhos[-1], lower, tau))


_COV_LAST_SHARES = np.linspace(0.3, 0.99, 47)


def _best_cov_fractions(
    n: int, d: int, cond: float, rho: float, ts: tuple[int, ...], tau: float, prefer_fewer: float
) -> tuple[float, ...]:
    """The split minimising the predicted error (d² + d)(1/n + σ_t²/ℓ_t) over t ∈ ``ts`` and
    the last share f ∈ [0.3, 0.99] (earlier steps share 1 − f equally), vectorised over f.
    With ``prefer_fewer`` > 0 the fewest steps whose best error is within that relative
    tolerance of the overall best win (fewer passes over the data, near-equal accuracy)."""
    sens = clipped_second_moment_frobenius(tau, n)
    eta = 0.5 * (2.0 * math.sqrt(d / n) + d / n)
    per_t: list[tuple[int, np.ndarray, np.ndarray]] = []
    many = [t for t in ts if t > 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        # all t > 1 at once: row j runs t_j − 1 head steps (the same arithmetic per entry)
        tt = np.asarray(many, dtype=float)[:, None]
        f = np.broadcast_to(_COV_LAST_SHARES, (len(many), _COV_LAST_SHARES.size))
        head = rho * (1.0 - f) / (tt - 1.0)
        last = rho - (tt - 1.0) * head if math.isfinite(rho) else np.full_like(f, math.inf)
        step = eta + math.sqrt(d) * (sens / np.sqrt(2.0 * head))
        lower = np.full_like(f, 1.0 / cond)
        for k in range(int(max(many, default=1)) - 1):
            go = (tt - 1.0) > k
            lower = np.where(go, np.minimum(1.0, lower / (lower + step)), lower)
        errs = (d * d + d) * (1.0 / n + (sens / np.sqrt(2.0 * last)) ** 2 / lower)
        rows_of = {t: j for j, t in enumerate(many)}
        for t in ts:
            if t == 1:
                s1 = sens / math.sqrt(2.0 * rho) if math.isfinite(rho) else 0.0
                per_t.append((1, np.array([1.0]),
                              np.array([(d * d + d) * (1.0 / n + s1 * s1 * cond)])))
            else:
                j = rows_of[t]
                per_t.append((t, _COV_LAST_SHARES, errs[j]))
    best_err = min(float(e.min()) for _, _, e in per_t)
    limit = best_err * (1.0 + prefer_fewer)
    for t, f, err in per_t:
        if prefer_fewer > 0 and float(err.min()) > limit:
            continue
        # the first minimum in candidate order (t increasing, f increasing), as a scan would
        j = int(np.argmin(err))
        if prefer_fewer > 0 or float(err[j]) <= best_err * (1 + 1e-12):
            if t == 1:
                return (1.0,)
            fj = float(f[j])
            return _fractions([(1.0 - fj) / (t - 1)] * (t - 1) + [fj], t)
    raise AssertionError("unreachable")  # pragma: no cover



# ----------------------------------------------------------------------------------------------
# The practical Gaussian estimator (coinpress_gaussian)
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    """The public plans of the practical estimator (stages 1–4 of :func:`coinpress_gaussian`)
    and the planner's predicted squared covariance error (d² + d)(1/n + σ_t²/ℓ_t)."""

    pairs: bool
    s_hi: float
    coarse: tuple[CovStep, ...]
    rough: tuple[MeanStep, ...]
    cov: tuple[CovStep, ...]
    mean: tuple[MeanStep, ...]
    cov_err: float


def _cov_share(final_mean: bool) -> float:
    """Share of ρ for the covariance stages (1 and 3): all but the mean stages'."""
    return 1.0 - _ROUGH_MEAN_SHARE - (_FINAL_MEAN_SHARE if final_mean else 0.0)


def _cov_plans(n: int, d: int, rho: float, R: float, lo: float, hi: float, omega: float,
               beta: float, prefer_fewer: float, final_mean: bool = True
               ) -> tuple[bool, float, tuple[CovStep, ...], tuple[CovStep, ...], float]:
    """(pairs, s_hi, coarse steps, stage-3 plan, cond3) of the practical estimator."""
    rho_cov = rho * _cov_share(final_mean)
    pairs = omega * omega > _PAIRS_OMEGA2
    if pairs:  # far prior: stage 1 whitens Σ itself from pairwise differences
        s_hi, offset2, n1 = hi, 1.0, n // 2
    else:  # near prior: whiten S = Σ + (μ−c)(μ−c)ᵀ ⪯ (1 + ω²)Σ with all n rows
        s_hi, offset2, n1 = min(hi + R * R, (1.0 + omega * omega) * hi), 1.0 + omega * omega, n
    plan1 = covariance_schedule(n1, d, _finite(s_hi / lo), rho_cov, beta=beta,
                                prefer_fewer=prefer_fewer)
    coarse = plan1[:-1]
    lower = plan1[-1].lower
    rho3 = rho_cov - math.fsum(s.rho for s in coarse) if math.isfinite(rho) else math.inf
    cond3 = max(_finite(offset2 / lower if coarse else s_hi / lo), 1.0)  # T Σ Tᵀ ⪰ ℓ/offset2
    plan3 = covariance_schedule(n, d, cond3, rho3, beta=beta, prefer_fewer=prefer_fewer)
    return pairs, s_hi, coarse, plan3, cond3


@lru_cache(maxsize=256)
def _practical_plan(n: int, d: int, rho: float, R: float, lo: float, hi: float, omega: float,
                    beta: float, prefer_fewer: float, final_mean: bool = True) -> _Plan:
    """Stages 1–4 of the practical estimator; without ``final_mean`` (a *frame* plan, used by
    the split mode) stage 4 is left out and its budget goes to the covariance stages: the
    output is the rough mean and the second moment about it."""
    pairs, s_hi, coarse, plan3, cond3 = _cov_plans(n, d, rho, R, lo, hi, omega, beta,
                                                   prefer_fewer, final_mean)
    rho_rough = rho * _ROUGH_MEAN_SHARE
    rho_cov = rho * _cov_share(final_mean)
    rho_mean = rho - rho_cov - rho_rough if math.isfinite(rho) else math.inf
    beta_m = min(beta, 0.01)
    # stage 2 prior: ‖T(μ − c)‖ ≤ 1 (near: T S Tᵀ ⪯ I) or ≤ ‖T‖R ≤ R/√lo = ω (far: T Σ Tᵀ ⪯ I)
    rough = mean_schedule(n, d, 1.5 if not pairs else omega, rho_rough, beta=beta_m,
                          debias=False)
    r_t = _mean_error_bound(n, d, rough[-1], beta_m)
    # stage 4 prior: ‖B(μ_rough − μ)‖ ≤ r_t ‖B A⁻¹‖ with ‖B A⁻¹‖² ≲ cond3 when the plan holds
    plan4 = (mean_schedule(n, d, _finite(r_t * math.sqrt(cond3)), rho_mean, beta=beta_m,
                           search=True) if final_mean else ())
    _check_radii(rough, plan4)
    err = _final_cov_error(n, d, plan3[-1])
    return _Plan(pairs, s_hi, coarse, rough, plan3, plan4, err)


def _finite(x: float) -> float:
    if not math.isfinite(x):
        raise ValueError("the prior (radius, cov_bounds) is too wide for float arithmetic")
    return x


def _check_radii(*plans: tuple[MeanStep, ...]) -> None:
    """Public check, before any spending, that every planned clip radius is usable."""
    if any(not s.clip_radius <= 1e150 for p in plans for s in p):
        raise ValueError("the prior radius is too large (clip radii must stay below 1e150)")


def _mean_error_bound(n: int, d: int, s: MeanStep, beta: float) -> float:
    """Public (1 − β) bound on the error of a covering mean step's output."""
    return math.sqrt((1.0 / n + s.sigma**2) * _chi2_isf(beta, d))
