"""Secluded ("terrific") balls: KSSU19 §5.1 — Definition 5.2, TerrificRadius (Alg. 2), the revised
GoodCenter and the verification step of PTerrificBall (Lemma 5.7); spec §6.

**Neighbours:** replace one row; n is public. **Guarantees:** :func:`terrific_radius` is ε-DP
for ``PureDP(ε)``; :func:`terrific_ball` is (ε, δ)-DP for ``ApproxDP(ε, δ)`` and ε-DP for
``PureDP(ε)`` (which needs a public ``center_box``). t, c, the radius grid, ``largest``, β and
the split are public.

Definitions (closed balls B_r(p) = {x : ‖x − p‖ ≤ r}). A ball B_r(p) is (c, Γ)-terrific for X if
|X ∩ B_r(p)| ≥ t − Γ, |X \\ B_{cr}(p)| ≥ t − Γ and |X ∩ (B_{cr}(p) \\ B_r(p))| ≤ Γ.

* **Ball query** f_{p,r}(X) = min{|X ∩ B_r(p)|, |X \\ B_{cr}(p)|, t − |annulus|} (not capped; the
  last term may be negative). Each term is a count, so replace-one moves it by ≤ 1:
  **sensitivity 1** (:func:`privgauss.sensitivity.ball_query`).
* **Capped radius score** Q_r(X) = (1/t)·(sum of the t largest values over data points x of
  q_r(x; X) = min{#_t(X ∩ B_r(x)), #_t(X \\ B_{cr}(x)), t − #_t(annulus)}, #_t(S) = min(|S|, t)),
  zero-padded if n < t. For a fixed x every term moves by ≤ 1, and the replaced row's own value
  lies in [0, t], so the top-t sum moves by ≤ 2t: **sensitivity 2**
  (:func:`privgauss.sensitivity.capped_radius_score`; uncapped counts would give Θ(n/t),
  pitfall P4).
  Centres are data points, but only a radius index is released (no data point leaks, P8).

TerrificRadius (ε_R, pure): AboveThreshold (standard, non-monotone version: Q_r is not monotone
in r) over the public radii, increasing (``largest=False``) or decreasing (``largest=True``),
Δ = 2, threshold t − Γ, Γ = 16(ln T + ln(2/β))/ε_R (``constants="theory"``) or the sharper union
bound of :func:`~privgauss.mixture.good_radius.above_threshold_slack` (``"practical"``). With
probability ≥ 1 − β a returned r has Q_r ≥ t − 2Γ, so some B_r(x) is (c, 2Γ)-terrific (Claim 5.5),
and if X has a (4c+1)-terrific ball the search does not return ⊥ (Claim 5.6). With the
practical constants Γ is at least ``PRACTICAL_SLACK``·t (the search's and the check's): the
paper's Γ is the noise's alone, so as ε → ∞ it asked for an annulus with no row in it, which
real clusters' tails never give (two clusters 25 sd apart, n = 2e5: found at ε = 1, where Γ
is 17 % of t, and ⊥ at ε = 1e6, the best score 0.5 below t); the floor is a tolerance for the
data, not for the noise, so it stays as ε grows (a returned ball is then (c, 2Γ)-terrific
with 2Γ ≥ 10 % of t).

PTerrificBall (:func:`terrific_ball`), five adaptively composed releases:

1. r ← TerrificRadius (ε_R, pure).
2.–4. p ← GoodCenter(r) (:func:`~privgauss.mixture.good_center.good_center`): heavy box of a
   randomly rotated, shifted grid of side ``box_factor``·r (stability histogram (ε_H, δ_H), or
   the exponential mechanism for pure ε), a noisy joint (sum, count) over the box (ρ_M), and a
   refinement over the rows within 2r + margin of it (ρ_F); ρ's are ε's for Laplace parts.
5. Check (ρ_C, or ε_C pure): f_{p,2r} with annulus constant c_out = (c − 1)/2 is released with
   the Gaussian (Laplace) mechanism, sensitivity 1, and the ball B_{2r}(p) is returned iff the
   noisy value is ≥ t − Γ (Γ of step 1, in full-data units); otherwise ⊥. With Γ_C the
   (1 − β/2)-quantile of the check noise, a returned ball is (c_out, Γ + Γ_C)-terrific with
   probability ≥ 1 − β/2. Refinement lemma (spec §6.4): if B_r(x) is (c, Γ′)-terrific and
   ‖p − x‖ ≤ r, then B_{2r}(p) is (c_out, Γ′)-terrific, so a good centre with Γ′ ≤ Γ − Γ_C
   passes with probability ≥ 1 − β/2. (Checking against the lemma-chain value t − 2Γ − Γ_C
   instead would make the check vacuous whenever t ≲ 2Γ.)

Budget split (:func:`~privgauss.mixture.one_cluster.plan_budget`, ``split`` = relative ε
weights, default (0.3, 0.2, 0.15, 0.2, 0.15)). ``PureDP(ε)``: the five ε's sum to ε.
``ApproxDP(ε, δ)``: ε_R = 0.3ε (pure), ε_H = 0.2ε for the histogram, and each of the three
noise releases is pure (its ε share, Laplace) or Gaussian, whichever assignment of the 8 gives
the least total noise (public: depends on d, ε, δ only); the Gaussian ones share the remaining ε
and δ/2 as zCDP (largest ρ whose tight conversion fits, split by weight), the histogram the other
δ/2 (all of δ if no part is Gaussian). Basic composition of the pieces gives exactly (ε, δ); last
parts are remainders, so the ledger sums to the total. After a ⊥ the remaining parts are charged
as "unused" ledger entries, so the spent budget never depends on the data.

Cost: exact scoring in O(n²d) per call (row blocks, one pass for all radii). Above ``max_points``
rows TerrificRadius runs on a uniformly random subset of ``max_points`` rows (public randomness)
with t rescaled; **no privacy amplification is claimed** — the subset of neighbouring datasets
differs in at most one row, so the mechanism simply sees less data at the same ε (spec §6.6,
P14). GoodCenter and the check always use all rows (O(nd)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import sensitivity
from ..mechanisms import Release, gaussian_mechanism, laplace_mechanism
from ..privacy import (
    ApproxDP,
    Budget,
    BudgetPlan,
    PureDP,
    charge_unused,
    is_pure,
    pure_epsilon,
)
from ..validation import check_positive_int, check_probability
from .good_radius import above_threshold_slack, ball_counts, radius_search, subsample_t, top_t_mean
from .one_cluster import Ball, BallSearch, center_with, prepare_search

__all__ = [
    "Ball",
    "ball_query",
    "point_scores",
    "radius_scores",
    "terrific_ball",
    "terrific_radius",
]

DEFAULT_SPLIT = (0.3, 0.2, 0.15, 0.2, 0.15)
#: the least slack Γ of the practical search and check, as a share of t (module docstring)
PRACTICAL_SLACK = 0.05
#: the kinds of terrific_ball's five releases, for :func:`~.one_cluster.plan_budget`
KINDS = ("pure", "hist", "noise", "noise", "noise")
#: the names of those releases in terrific_ball's budget plan
NAMES = ("radius", "box", "mean", "refine", "check")


def _check_c(c: float, minimum: float) -> float:
    c = float(c)
    if not (math.isfinite(c) and c > minimum):
        raise ValueError(f"c must be a finite number > {minimum:g}")
    return c


def point_scores(X: Any, t: int, c: float, radii: Any) -> np.ndarray:
    """q_r(x_i; X) for every data point (rows) and radius (columns, in the order given)."""
    data = np.asarray(X, dtype=np.float64)
    t = check_positive_int(t, "t", minimum=1)
    c = _check_c(c, 1.0)
    r = np.asarray(radii, dtype=np.float64).ravel()
    T = r.size
    counts = ball_counts(data, np.concatenate([r, c * r]))
    inner, within_c = counts[:, :T], counts[:, T:]
    outer = data.shape[0] - within_c
    annulus = within_c - inner
    capped = np.minimum(np.minimum(inner, t), np.minimum(outer, t))
    return np.minimum(capped, t - np.minimum(annulus, t))


def radius_scores(X: Any, t: int, c: float, radii: Any) -> np.ndarray:
    """Q_r(X) for every radius: the mean of the t largest q_r values (zero-padded if n < t)."""
    t = check_positive_int(t, "t", minimum=1)
    return top_t_mean(point_scores(X, t, c, radii), t)


def ball_query(X: Any, center: Any, radius: float, c: float, t: int) -> float:
    """f_{p,r}(X) = min{|X ∩ B_r(p)|, |X \\ B_{cr}(p)|, t − |X ∩ (B_{cr}(p) \\ B_r(p))|}."""
    data = np.asarray(X, dtype=np.float64)
    p = np.asarray(center, dtype=np.float64).reshape(1, -1)
    counts = ball_counts(data, [radius, c * radius], centers=p)[0]
    inner, within_c = int(counts[0]), int(counts[1])
    return float(min(inner, data.shape[0] - within_c, t - (within_c - inner)))


def terrific_radius(
    X: Any,
    t: int,
    c: float,
    radii: Any,
    budget: Budget,
    *,
    largest: bool = False,
    beta: float = 0.05,
    constants: str = "practical",
    max_points: int = 5000,
    release: Release,
) -> float | None:
    """TerrificRadius (KSSU19 Alg. 2): ε-DP (replace-one, n public) AboveThreshold over the public
    ``radii`` (increasing, or decreasing if ``largest``) on Q_r (sensitivity 2) with threshold
    t − Γ. Returns the first passing radius or None (⊥). Charged to ``release`` (step
    "terrific-radius" unless it names one)."""
    c = _check_c(c, 1.0)
    return radius_search(
        lambda rows, t_rows, grid: radius_scores(rows, t_rows, c, grid),
        X,
        t,
        radii,
        budget,
        sensitivity.capped_radius_score(),
        beta=beta,
        constants=constants,
        max_points=max_points,
        release=release.named("terrific-radius"),
        descending=largest,
        min_slack=PRACTICAL_SLACK if constants == "practical" else 0.0,
    )


def terrific_ball(
    X: Any,
    t: int,
    c: float,
    radii: Any,
    budget: ApproxDP | PureDP,
    *,
    largest: bool = False,
    search: BallSearch | None = None,
    release: Release,
) -> Ball | None:
    """PTerrificBall (KSSU19 §5.1, Lemma 5.7, simplified per spec §6.4–6.6): a released ball
    B(p, 2r) that passed the noisy check of being ((c − 1)/2, ·)-terrific, or None (⊥).

    (ε, δ)-DP for ``ApproxDP(ε, δ)``, ε-DP for ``PureDP(ε)`` (needs ``center_box``), replace-one
    neighbours with n public; the whole budget is charged whatever the outcome. Search constant
    ``c`` > 3; the output's annulus constant is (c − 1)/2. ``search`` holds the public knobs
    (default :class:`~privgauss.mixture.one_cluster.BallSearch`). Charged to ``release`` (step
    "terrific-ball" unless it names one). See the module docstring."""
    knobs = BallSearch() if search is None else search
    rel = release.named("terrific-ball")
    acct = rel.accountant
    data, plan, t, grid = prepare_search(
        X,
        t,
        radii,
        budget,
        NAMES,
        KINDS,
        DEFAULT_SPLIT if knobs.split is None else knobs.split,
        lambda d: (1, 1, d, d, 1),
        center_box=knobs.center_box,
        accountant=acct,
    )
    check_probability(knobs.beta, "beta")
    check_positive_int(knobs.max_points, "max_points", minimum=1)
    run = _Search(data, t, _check_c(c, 3.0), grid, plan, largest, knobs, rel)
    before = len(acct.ledger)
    found = _find_ball(run)
    if found is None:  # ⊥ before the check: the parts not used are charged all the same
        charge_unused(acct, plan.budgets()[len(acct.ledger) - before :], rel.step)
        return None
    return _checked(run, *found)


@dataclass(frozen=True)
class _Search:
    """The public parameters of one terrific-ball search (validated), and its rows."""

    data: np.ndarray
    t: int
    c: float
    grid: np.ndarray
    plan: BudgetPlan
    largest: bool
    knobs: BallSearch
    release: Release


def _find_ball(s: _Search) -> tuple[float, np.ndarray] | None:
    """The terrific radius r, then a good centre p for it: (r, p), or None (⊥)."""
    r = terrific_radius(
        s.data,
        s.t,
        s.c,
        s.grid,
        s.plan["radius"],
        largest=s.largest,
        beta=s.knobs.beta,
        constants=s.knobs.constants,
        max_points=s.knobs.max_points,
        release=s.release.at("radius"),
    )
    if r is None:
        return None
    center = center_with(s.data, r, s.plan, s.knobs, s.release)
    return None if center is None else (r, center)


def _checked(s: _Search, r: float, center: np.ndarray) -> Ball | None:
    """The noisy check that B(p, 2r) is terrific, in full-data units (the radius search may
    have run on a subsample): the ball, or None (⊥)."""
    t_sub = subsample_t(s.data.shape[0], s.t, s.knobs.max_points)
    gamma = above_threshold_slack(
        pure_epsilon(s.plan["radius"], "step"),
        s.grid.size,
        s.knobs.beta,
        sensitivity=sensitivity.capped_radius_score(),
        constants=s.knobs.constants,
    ) * (s.t / t_sub)
    if s.knobs.constants == "practical":
        gamma = max(gamma, PRACTICAL_SLACK * s.t)
    c_out = (s.c - 1.0) / 2.0
    f = ball_query(s.data, center, 2.0 * r, c_out, s.t)
    mechanism = laplace_mechanism if is_pure(s.plan["check"]) else gaussian_mechanism
    noisy = float(
        mechanism(
            f,
            sensitivity.ball_query(),
            s.plan["check"],
            accountant=s.release.accountant,
            noise=s.release.noise,
            step=s.release.name("check"),
        )
    )
    if noisy < s.t - gamma:
        return None
    return Ball(center=center, radius=2.0 * r)
