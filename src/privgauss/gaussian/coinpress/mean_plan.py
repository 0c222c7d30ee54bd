"""The public plan of the CoinPress mean (:func:`mean_schedule`): no data involved.

Biswas, Dong, Kamath and Ullman, *CoinPress* (NeurIPS 2020), Alg. 1: the step count, the
split ρ_i = ρ·f_i (:func:`~.schedule.split_rho`), each step's prior radius, clip radius and noise
std, and (practical) an optional DP radius search for the last step (:mod:`.radius_search`,
charged within its ρ_i). The runner (:func:`~.steps.run_mean`) charges ``ZCDP(ρ_i)`` per step
before drawing noise: ρ-zCDP under **replace-one** neighbours (n public) for any plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ...mechanisms import gaussian_sigma_zcdp
from ...sensitivity import clipped_mean_l2
from . import schedule
from .radius_search import SEARCH_SHARE, RadiusSearch, plan_search, search_cap
from .schedule import (
    NOISE_TO_SAMPLING,
    check_fractions,
    check_schedule,
    coinpress_fractions,
    noise_matched_radius,
    split_rho,
)
from .tails import chi2_isf, chi2_sf, chi_tail_bound, clip_second_moment, clip_slope, norm_isf

__all__ = ["MeanStep", "check_radii", "mean_error_bound", "mean_schedule", "sigma_mean"]

_MAX_MEAN_STEPS = 10


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


def sigma_mean(tau: float, n: int, rho: float) -> float:
    return gaussian_sigma_zcdp(clipped_mean_l2(tau, n), rho)


def _mean_step(rho: float, r: float, tau: float, n: int, d: int = 0,
               search: bool = False) -> MeanStep:
    """A practical mean step clipping at ``tau`` or at its noise-matched radius if larger;
    with ``search``, a radius search (:mod:`.radius_search`) may grow it from the data."""
    tau = noise_matched_radius(tau, sigma_mean(tau, n, rho), n, 1)
    sigma = sigma_mean(tau, n, rho)
    rs = None
    if search and schedule.SEARCH and d > 0:
        p = chi2_sf(max(tau - r, 0.0) ** 2, d)  # Gaussian rows outside, centre within r
        rs = plan_search(tau, sigma, rho, n, d, 1, p)
    if rs is not None:
        sigma = sigma_mean(tau, n, rho - rs.rho)
    return MeanStep(rho, r, tau, sigma, search=rs)


def _theory_mean_plan(
    n: int, d: int, radius: float, rhos: tuple[float, ...], beta: float
) -> tuple[MeanStep, ...]:
    gamma = chi_tail_bound(d, beta)
    r = radius
    out = []
    for rho_i in rhos:
        tau = min(math.sqrt(r * r + 6.0 * r + gamma * gamma), r + gamma)
        s = sigma_mean(tau, n, rho_i)
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
    g2 = chi2_isf(beta, d)
    q = chi2_isf(beta / max(len(rhos), 1), d)
    z = norm_isf(beta)
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
    cover = _mean_step(rho_f, r, math.sqrt(chi2_isf(beta, d) + 2.0 * norm_isf(beta) * r + r * r),
                       n, d, search)
    tau_c = cover.clip_radius
    best = (cover, d * (1.0 / n + cover.sigma**2))
    if not debias:
        return best
    for p in _FINAL_QUANTILES:
        tau = math.sqrt(chi2_isf(1.0 - p, d))
        if tau >= tau_c or r > 0.5 * tau:
            continue
        s = sigma_mean(tau, n, rho_f)
        slope = clip_slope(d, tau)
        err = d * (clip_second_moment(d, tau) / n + s * s) / slope**2
        if err < best[1]:
            best = (MeanStep(rho_f, r, tau, s, True), err)
    return best


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
    (:mod:`.radius_search`) — for a plan whose output no later prior radius relies on.
    """
    if not (radius >= 0 and math.isfinite(radius)):
        raise ValueError("radius must be finite and >= 0")
    rho, beta, steps, fr = check_schedule(n, d, rho, beta, constants, steps, fractions)
    if constants == "theory":
        t = 2 if steps is None else int(steps)
        fr = coinpress_fractions(t) if fr is None else fr
        return _theory_mean_plan(n, d, float(radius), split_rho(rho, fr), beta)

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
        rhos = split_rho(rho, fr_c)
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
            out.append(check_fractions([(1.0 - f) / (t - 1)] * (t - 1) + [f], t))
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
    g2 = q = chi2_isf(beta, d)
    z = norm_isf(beta)
    inv_n = 1.0 / n
    target = math.sqrt(NOISE_TO_SAMPLING[1] / n)  # as noise_matched_radius computes it
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
        head = [rho * f for f in fr_c[:-1]]  # split_rho(rho, fr_c), ρ finite
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
        if search and schedule.SEARCH and d > 0 and search_cap(tau, sigma, rho_f, d, 1) is not None:
            sigma = (2.0 * tau / n) / math.sqrt(2.0 * (rho_f - rho_f * SEARCH_SHARE))
        err = d * (1.0 / n + sigma**2)
        if not math.isfinite(err):
            return None
        if best is None or err < best_err * (1 - 1e-12):
            best, best_err = fr_c, err
    return best


def check_radii(*plans: tuple[MeanStep, ...]) -> None:
    """Public check, before any spending, that every planned clip radius is usable."""
    if any(not s.clip_radius <= 1e150 for p in plans for s in p):
        raise ValueError("the prior radius is too large (clip radii must stay below 1e150)")


def mean_error_bound(n: int, d: int, s: MeanStep, beta: float) -> float:
    """Public (1 − β) bound on the error of a covering mean step's output."""
    return math.sqrt((1.0 / n + s.sigma**2) * chi2_isf(beta, d))
