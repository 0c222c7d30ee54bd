"""Private 1-cluster ("private location"): a ball of small radius holding about t points.

A simplified, practical version of the Nissim–Stemmer (2018) / Nissim–Stemmer–Vadhan (2016)
1-cluster algorithm used by KSSU19 (App. B, Alg. 5 "PGLoc"; spec §3.8, §3.9, §5.2 practical
version, §6.6): GoodRadius is AboveThreshold over a public doubling grid of radii on the capped
score, GoodCenter is a randomly rotated, randomly shifted grid of boxes, a private choice of a
heavy box, and two noisy averages. No grid on the data domain and no LSH are needed; the price is
that the box step filters in ℓ∞, so the centre search degrades with the dimension (it is meant for
d ≲ 10, e.g. after private PCA).

**Neighbours:** replace one row; n is public. **Guarantee:** ``one_cluster`` is (ε, δ)-DP for an
``ApproxDP(ε, δ)`` budget and ε-DP for a ``PureDP(ε)`` budget (the pure version needs a public
``center_box``). The radius grid, t, c, box_factor, center_box, split and beta are public.

Privacy derivation (every quantity a later step uses is public or an earlier DP output, so the
four releases compose adaptively):

1. *GoodRadius* (ε_R, pure). L(r) = (1/t)·(sum of the t largest values of min(|X ∩ B_r(x_i)|, t)
   over the data points x_i; zeros pad when n < t). For a fixed point each capped count moves by
   ≤ 1 when one row is replaced, and the replaced row's own value lies in [0, t], so the sum of the
   t largest values moves by ≤ 2t: **sensitivity 2**
   (:func:`privgauss.sensitivity.capped_count_score`).
   AboveThreshold (standard, non-monotone version) over the radii in increasing order with
   threshold t − Γ returns the first radius whose noisy score passes, or ⊥.
2. *Box choice* (ε_H, δ_H). Public randomness (independent of the data) draws a rotation Q and an
   offset u ∈ [0, w)^d, w = box_factor·r. Each row gets the key ⌊(xQ − u)/w⌋ (after clipping into
   ``center_box`` when given — a per-row map). (ε, δ): the replace-one stability histogram of the
   keys (L1 sensitivity 2, threshold 1 + (2/ε_H) ln(1/δ_H)); the most populated released box is
   chosen, none released = ⊥. Pure ε: the exponential mechanism over **all** boxes meeting the
   public range, utility = count (sensitivity 1); the empty boxes are sampled as one group of
   known size, so the output distribution is exactly the exponential mechanism's.
3. *Box mean* (ρ_M, or ε_M pure: see the split below). The rows in the chosen box, clipped
   to the box's circumscribed ball (radius ρ₁ = w√d/2, centre b), contribute v(x) = (x − b, κ)
   to one joint release of (sum, κ·count), Gaussian (Laplace for a pure part). With κ = √3·ρ the
   L2 sensitivity is 2ρ (both rows in: ‖x − y‖ ≤ 2ρ; one in: √(ρ² + κ²) = 2ρ); with κ = ρ√d the
   L1 sensitivity is 2ρ√d (:func:`privgauss.sensitivity.joint_sum_count`). The noisy count is
   the released joint coordinate / κ, so no private size is ever used as a divisor; a noisy
   count below max(2, 3·its noise sd) = ⊥.
4. *Refinement* (ρ_F, or ε_F pure). The same joint release over the rows within
   ρ₂ = 2r + 2√d·(noise sd of step 3's mean) of the step-3 centre (a DP output), clipped there.

Budget split (:func:`plan_budget`, ``split`` = relative ε weights, default (0.3, 0.25, 0.18,
0.27)). ``PureDP(ε)``: ε_R + ε_H + ε_M + ε_F = ε (basic composition; Laplace means).
``ApproxDP(ε, δ)``: ε_R = 0.3ε (pure) and ε_H = 0.25ε for the histogram; each mean release is
either pure (its ε share, Laplace) or Gaussian, whichever assignment gives the least total noise
(a function of d, ε, δ only: Laplace for small d·ε-ratios, e.g. d ≤ 4 at ε = 1, δ = 1e-6). The
Gaussian releases share the remaining ε and δ/2 as zCDP (ρ = the largest value whose tight CKS20
conversion fits; split by weight) and the histogram takes the other δ/2 (all of δ when both means
are Laplace). Basic composition of the pieces gives exactly (ε, δ), which is what an accountant
with an ApproxDP total records. Last parts are computed as remainders, so the ledger sums to the
total; if a step outputs ⊥ the remaining parts are charged as "unused" ledger entries: the spent
budget never depends on the data.

Utility (spec §3.8, §6.6). With probability ≥ 1 − β the AboveThreshold error is at most Γ, so the
returned r satisfies L(r) ≥ t − 2Γ, and r is at most the first grid radius ≥ 2·r_opt (r_opt the
radius of the smallest ball holding t points; there L = t), i.e. r ≤ 4·r_opt on a doubling grid
starting below 2·r_opt. The output ball is B(p, c·r). Γ is
16(ln T + ln(2/β))/ε_R (``constants="theory"``, spec §3.4) or the sharper union bound
(4/ε_R)(2 ln(2T/β) + ln(2/β)) (``"practical"``); privacy does not depend on this choice.

Scoring is exact and vectorised: O(n²d) time in row blocks, O(n) memory per block. Above
``max_points`` rows the scores are computed on a uniformly random subset of ``max_points`` rows
drawn with public randomness, with t rescaled to t·max_points/n. **No amplification by
subsampling is claimed**: a fixed index subset of neighbouring datasets differs in at most one
row, so the mechanism run on it keeps exactly its ε.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..backends import as_rows
from ..exceptions import PrivacyBudgetError
from ..mechanisms import Release
from ..privacy import (
    ZCDP,
    Accountant,
    ApproxDP,
    Budget,
    BudgetPlan,
    PureDP,
    approx_to_zcdp,
    charge_unused,
    has_delta,
    is_pure,
    pure_epsilon,
)
from ..sensitivity import stability_histogram_threshold
from ..validation import check_positive_int
from .good_center import check_box, good_center
from .good_radius import above_threshold_slack, check_radii, good_radius

__all__ = [
    "Ball",
    "BallSearch",
    "center_with",
    "one_cluster",
    "plan_budget",
    "prepare_search",
    "search_floor",
    "search_plan",
]

DEFAULT_SPLIT = (0.3, 0.25, 0.18, 0.27)
#: the kinds of one_cluster's four releases, for :func:`plan_budget`
KINDS = ("pure", "hist", "noise", "noise")
#: the names of those releases in one_cluster's budget plan (:func:`search_plan`)
NAMES = ("radius", "box", "mean", "refine")


class Ball(NamedTuple):
    """A released ball B(center, radius) (both DP outputs)."""

    center: np.ndarray
    radius: float


@dataclass(frozen=True)
class BallSearch:
    """The public knobs of a private ball search (:func:`one_cluster`,
    :func:`~privgauss.mixture.terrific_ball.terrific_ball`). They move accuracy and running time
    only; the guarantee holds for any values.

    Parameters
    ----------
    beta : float
        Failure probability the search's slack Γ is set for.
    constants : {"practical", "theory"}
        The sharper union-bound slack or the paper's constants (spec §3.4).
    center_box : (lo, hi), optional
        A public box the centre lies in (rows are clipped into it); required for a pure budget.
    box_factor : float
        Side of GoodCenter's grid boxes over the radius.
    split : sequence of float, optional
        Relative ε weights of the search's releases (None: the algorithm's default).
    max_points : int
        Above this many rows the radius search runs on a public random subset of them.
    """

    beta: float = 0.05
    constants: str = "practical"
    center_box: Any = None
    box_factor: float = 2.0
    split: Sequence[float] | None = None
    max_points: int = 5000


# ----------------------------------------------------------------------------------------------
# Budget split helpers
# ----------------------------------------------------------------------------------------------


def plan_budget(
    budget: PureDP | ApproxDP,
    kinds: Sequence[str],
    weights: Sequence[float],
    dims: Sequence[int] | None = None,
) -> list[Budget]:
    """Split ``budget`` into one part per step; the parts compose to exactly ``budget``. Uses
    public quantities only (the budget, the weights and the output dimensions).

    ``kinds[i]`` is "pure" (AboveThreshold, exponential mechanism), "hist" (the stability
    histogram) or "noise" (an additive-noise release of dimension ``dims[i]`` whose L1
    sensitivity is √dims[i] times its L2 sensitivity: Laplace when its part is ``PureDP``,
    Gaussian when it is ``ZCDP``). ε is shared in proportion to ``weights``.

    * ``PureDP(ε)``: every part is pure (basic composition).
    * ``ApproxDP(ε, δ)``: "pure" and "hist" parts get their ε share (the "hist" parts share δ/2,
      or all of δ when no part is Gaussian). Each "noise" part is either pure (its ε share,
      Laplace) or Gaussian; the Gaussian ones share what is left, (ε_rest, δ_rest), as zCDP:
      ρ = the largest value whose tight zCDP → (ε_rest, δ_rest) conversion holds
      (:func:`privgauss.privacy.approx_to_zcdp`), split by weight. Of the 2^g assignments the
      one with the smallest total noise norm per unit L2 sensitivity, Σ √2·dims/ε_i (Laplace) or
      √dims/√(2ρ_i) (Gaussian), is used — Laplace wins at small d and small ε, where
      converting δ to zCDP is expensive.

    Last parts are computed as remainders; an accountant with an ApproxDP total composes the
    parts back to exactly (ε, δ) (basic composition of the pure / histogram / zCDP pieces).
    """
    w = tuple(float(x) for x in weights)
    if len(w) != len(kinds) or any(not (math.isfinite(x) and x > 0) for x in w):
        raise ValueError(f"split must be {len(kinds)} positive finite weights")
    if any(k not in ("pure", "hist", "noise") for k in kinds):
        raise ValueError("kinds must be 'pure', 'hist' or 'noise'")
    dim = (1,) * len(kinds) if dims is None else tuple(int(x) for x in dims)
    if len(dim) != len(kinds):
        raise ValueError("dims must have one entry per part")
    return list(_plan(budget, tuple(kinds), w, dim))


def search_plan(
    budget: PureDP | ApproxDP,
    names: Sequence[str],
    kinds: Sequence[str],
    weights: Sequence[float],
    dims: Sequence[int] | None = None,
) -> BudgetPlan:
    """:func:`plan_budget`'s split as a :class:`~privgauss.privacy.BudgetPlan` whose parts are
    named ``names`` (one per kind); its parts compose to exactly ``budget``."""
    if len(names) != len(kinds):
        raise ValueError("names must have one entry per part")
    parts = plan_budget(budget, kinds, weights, dims)
    return BudgetPlan.of(budget, dict(zip(names, parts, strict=True)))


@functools.lru_cache(maxsize=256)
def _plan(
    budget: PureDP | ApproxDP, kinds: tuple[str, ...], w: tuple[float, ...], dim: tuple[int, ...]
) -> tuple[Budget, ...]:
    total_w = sum(w)
    eps = float(budget.epsilon)
    if is_pure(budget):
        shares = [eps * x / total_w for x in w[:-1]]
        shares.append(eps - sum(shares) if math.isfinite(eps) else eps)
        return tuple(PureDP(e) for e in shares)
    assert isinstance(budget, ApproxDP)  # a PureDP budget is pure: returned above
    delta = float(budget.delta)
    if math.isinf(eps):  # the non-private limit: every mechanism noiseless
        return tuple(ApproxDP(eps, delta) if k == "hist" else PureDP(eps) for k in kinds)
    noise_idx = [i for i, k in enumerate(kinds) if k == "noise"]
    hist_idx = [i for i, k in enumerate(kinds) if k == "hist"]
    best: tuple[float, tuple[Budget, ...]] | None = None
    for laplace in itertools.product((False, True), repeat=len(noise_idx)):
        gauss = [i for i, lap in zip(noise_idx, laplace, strict=True) if not lap]
        parts: list[Budget | None] = [None] * len(kinds)
        eps_used = 0.0
        hist_delta = (delta / 2.0 if gauss else delta) / max(len(hist_idx), 1)
        for i, k in enumerate(kinds):
            if i in gauss:
                continue
            share = eps * w[i] / total_w
            eps_used += share
            parts[i] = ApproxDP(share, hist_delta) if k == "hist" else PureDP(share)
        if gauss:
            rho = approx_to_zcdp(eps - eps_used, delta / 2.0 if hist_idx else delta)
            gw = sum(w[i] for i in gauss)
            rhos = [rho * w[i] / gw for i in gauss[:-1]]
            rhos.append(rho - sum(rhos))
            for i, r in zip(gauss, rhos, strict=True):
                parts[i] = ZCDP(r)
        cost = 0.0
        for i in noise_idx:
            part = parts[i]
            if isinstance(part, ZCDP):
                cost += math.sqrt(dim[i]) / math.sqrt(2.0 * part.rho)
            else:
                assert part is not None  # every part was assigned above
                cost += math.sqrt(2.0) * dim[i] / part.epsilon
        if best is None or cost < best[0]:
            best = (cost, tuple(p for p in parts if p is not None))
    assert best is not None
    return best[1]


def search_floor(
    budget: PureDP | ApproxDP,
    kinds: Sequence[str],
    split: Sequence[float],
    dims: Sequence[int],
    n_radii: int,
    beta: float,
) -> tuple[float, float]:
    """(Γ, τ) of a ball search (one_cluster, terrific_ball) split by
    ``plan_budget(budget, kinds, split, dims)``: the AboveThreshold slack of its radius step
    (part 0, T = ``n_radii``) and the stability-histogram threshold of its box step (part 1;
    inf for a pure part). Public: what the searched cluster must exceed."""
    parts = plan_budget(budget, kinds, split, dims)
    gamma = above_threshold_slack(pure_epsilon(parts[0], "step"), n_radii, beta)
    box = parts[1]
    if not has_delta(box):
        return gamma, math.inf
    return gamma, stability_histogram_threshold(box.epsilon, box.delta)


def prepare_search(
    X: Any,
    t: int,
    radii: Any,
    budget: Budget,
    names: Sequence[str],
    kinds: Sequence[str],
    split: Sequence[float],
    noise_dims: Callable[[int], tuple[int, ...]],
    *,
    center_box: Any,
    accountant: Accountant,
) -> tuple[np.ndarray, BudgetPlan, int, np.ndarray]:
    """Validate a ball search (one_cluster, terrific_ball) before anything is spent: the data,
    the budget split (``plan_budget(budget, kinds, split, noise_dims(d))``, which the accountant
    must be able to pay), t, the public radius grid and ``center_box`` (required for a pure
    budget). Returns (data, plan, t, grid): the plan's parts are named ``names``."""
    if not isinstance(budget, PureDP | ApproxDP):
        raise PrivacyBudgetError("budget must be an ApproxDP(epsilon, delta) or PureDP(epsilon)")
    data = as_rows(X)
    d = data.shape[1]
    plan = search_plan(budget, names, kinds, split, noise_dims(d))
    plan.reserve(accountant, "this ball search", approx_total=not is_pure(budget))
    t = check_positive_int(t, "t", minimum=1)
    grid = check_radii(radii)
    if is_pure(budget) and center_box is None:
        raise ValueError("a PureDP budget needs a public center_box (lo, hi)")
    if center_box is not None:
        check_box(center_box, d)
    return data, plan, t, grid


def center_with(
    data: np.ndarray, radius: float, plan: BudgetPlan, search: BallSearch, release: Release
) -> np.ndarray | None:
    """:func:`good_center` with the "box", "mean" and "refine" budgets of a ball search's
    plan and its public ``box_factor`` and ``center_box``, its steps under ``release``'s."""
    return good_center(
        data,
        radius,
        plan["box"],
        plan["mean"],
        plan["refine"],
        box_factor=search.box_factor,
        center_box=search.center_box,
        release=release,
    )


# ----------------------------------------------------------------------------------------------
# one_cluster
# ----------------------------------------------------------------------------------------------


def one_cluster(
    X: Any,
    t: int,
    budget: ApproxDP | PureDP,
    *,
    radii: Any,
    c: float = 2.0,
    search: BallSearch | None = None,
    release: Release,
) -> Ball | None:
    """Private 1-cluster: a ball B(p, c·r) meant to hold a cluster of about t points, or None.

    (ε, δ)-DP for ``ApproxDP(ε, δ)``, ε-DP for ``PureDP(ε)`` (then ``center_box`` is required),
    under replace-one neighbours with n public; the whole budget is charged whatever the outcome
    (see the module docstring for the derivation and the split). ``radii`` is a public grid
    (e.g. :func:`doubling_radii`); ``search`` holds the public knobs (default
    :class:`BallSearch`). Charged to ``release`` (step "one-cluster" unless it names one).
    Simplified NS18 / KSSU19 Alg. 5 (spec §5.2, §6.6).
    """
    knobs = BallSearch() if search is None else search
    rel = release.named("one-cluster")
    acct = rel.accountant
    data, plan, t, grid = prepare_search(
        X,
        t,
        radii,
        budget,
        NAMES,
        KINDS,
        DEFAULT_SPLIT if knobs.split is None else knobs.split,
        lambda d: (1, 1, d, d),
        center_box=knobs.center_box,
        accountant=acct,
    )
    c = float(c)
    if not (math.isfinite(c) and c > 0):
        raise ValueError("c must be finite and > 0")

    before = len(acct.ledger)
    r = good_radius(
        data,
        t,
        grid,
        plan["radius"],
        beta=knobs.beta,
        constants=knobs.constants,
        max_points=knobs.max_points,
        release=rel.at("radius"),
    )
    center = None
    if r is not None:
        center = center_with(data, r, plan, knobs, rel)
    if center is None or r is None:
        charge_unused(acct, plan.budgets()[len(acct.ledger) - before :], rel.step)
        return None
    return Ball(center=center, radius=c * r)
