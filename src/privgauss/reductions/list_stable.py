"""The list-stable reduction with the Choosing Mechanism (spec ``ppe-agnostic.md`` Part B, route 1).

Afzali, Ashtiani and Liaw (ALT 2025), Algorithms 2–4, with the Choosing Mechanism of
Beimel–Nissim–Stemmer (2013) / Bun–Nissim–Stemmer–Vadhan (2015). **Neighbours:** replace one row
(n public). **Guarantee:** :func:`list_stable_reduction` is (ε, δ)-DP for *any* list learner:
R Filter-and-Test rounds, each (ε', δ')-DP (truncated Laplace on a count of sensitivity 1), and
the Choosing Mechanism run at (ε'/2, δ'/(1 + e^{ε'/2})) and charged (ε', δ') by group privacy
for a group of 2 (:func:`choosing_run_budget`, spec B.3): (1 + R)(ε', δ') = (ε, δ) in total.
The derivation is in :mod:`.agnostic`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Any, NamedTuple

import numpy as np

from ..exceptions import EstimationFailed
from ..mechanisms import Release, truncated_laplace_bound, truncated_laplace_mechanism
from ..privacy import Accountant, ApproxDP, BudgetPlan
from .ppe import run_blocks

# ------------------------------------------------------------------------------ Choosing

__all__ = [
    "ReductionParams",
    "choosing_mechanism",
    "choosing_run_budget",
    "choosing_threshold",
    "list_stable_reduction",
    "reduction_parameters",
    "reduction_plan",
]


def choosing_run_budget(budget: ApproxDP) -> tuple[float, float]:
    """The add/remove (ε̃, δ̃) the Choosing Mechanism runs at so that, under replace-one, it is
    exactly (ε, δ) = ``budget``-DP. A replaced list is a removal plus an addition: group
    privacy for a group of 2 turns (ε̃, δ̃)-DP into (2ε̃, δ̃ + e^ε̃ δ̃) = (2ε̃, δ̃(1 + e^ε̃))-DP
    (the δ of the first step is carried through the second with factor e^ε̃). So
    ε̃ = ε/2 and δ̃ = δ/(1 + e^{ε/2}) — slightly less than δ/2, which would cost
    (δ/2)(1 + e^{ε/2}) > δ. δ̃ is rounded down so the group cost never exceeds δ in floats."""
    e = budget.epsilon / 2
    d = budget.delta / (1 + math.exp(e))
    while d * (1 + math.exp(e)) > budget.delta:
        d = math.nextafter(d, 0.0)
    return e, d


def choosing_mechanism(
    scores: dict[Hashable, int],
    growth: int,
    budget: ApproxDP,
    beta: float,
    *,
    release: Release,
) -> Hashable:
    """BNSV15 Lemma 3.8 / [B] Thm 13 for a growth-``growth`` score, run at the add/remove
    (ε', δ') = :func:`choosing_run_budget` (``budget``) so that a *replaced* list (removal +
    addition, group privacy 2) costs exactly ``budget`` = (ε, δ), which is charged.
    MAX + Lap(4/ε') must exceed (8/ε') ln(4L/(β ε' δ')); then a candidate of positive score is
    drawn with probability ∝ exp(ε' score/4). Raises :class:`EstimationFailed` (⊥) otherwise.
    Charged to ``release`` (step "choosing" unless it names one)."""
    src, accountant, step = release.noise, release.accountant, release.named("choosing").step
    e, d = choosing_run_budget(budget)
    accountant.spend(budget, step=step, mechanism="choosing", sensitivity=1.0,
                     noise_scale=4 / e,
                     note=f"run at ({e:.17g}, {d:.17g}) add/remove: replace-one = group of 2")
    top = max(scores.values(), default=0)
    noisy = float(src.laplace(float(top), 4 / e))
    if noisy <= choosing_threshold(budget.epsilon, budget.delta, growth, beta):
        raise EstimationFailed("no candidate is held by enough lists", step=step)
    keys = [c for c, s in scores.items() if s >= 1]
    i = src.noisy_argmax(np.array([scores[c] for c in keys], dtype=float), 4 / e)
    return keys[i]


# ------------------------------------------------------------------------------ Algorithms 2–4


def _filtered_scores(lists: Sequence[Sequence[tuple[Hashable, float]]], radius: float) -> Counter:
    score: Counter = Counter()
    for lst in lists:
        score.update({c for c, tv in lst if tv <= radius})  # a list counts a candidate once
    return score


class ReductionParams(NamedTuple):
    a1: float  # α' = α/(9 + 4C) (spec fix 9)
    rounds: int  # ⌈log2(1/α')⌉ Filter-and-Test rounds
    e1: float  # ε' = ε/(1 + rounds)
    d1: float  # δ' = δ/(1 + rounds)
    b1: float  # β' of [B] Alg. 2, the Choosing Mechanism's failure probability


def _rounds(a1: float) -> int:
    return math.ceil(math.log2(1 / a1))  # the binary search's length at accuracy α'


def reduction_parameters(epsilon: float, delta: float, alpha: float, beta: float, list_size: int,
                C: float) -> ReductionParams:
    """[B] Alg. 2's public parameters (α', rounds, ε', δ', β')."""
    a1 = alpha / (9 + 4 * C)
    rounds = _rounds(a1)
    e1, d1 = epsilon / (1 + rounds), delta / (1 + rounds)
    b1 = beta * e1 / (7680 * math.log(9830400 * list_size / (e1**3 * beta * d1)) * rounds)
    return ReductionParams(a1, rounds, e1, d1, b1)


def reduction_plan(epsilon: float, delta: float, alpha: float, C: float = 3.0) -> BudgetPlan:
    """[B] Alg. 2's budget as data: ``filter-and-test-0`` … ``filter-and-test-{R-1}`` and
    ``choosing``, each (ε', δ') = (ε, δ)/(1 + R) (:func:`reduction_parameters`; R depends on
    α and C only), composing to exactly (ε, δ) by basic composition. Every round runs whatever
    the data (a binary search of fixed length), and the Choosing Mechanism is charged before
    its ⊥ may be drawn, so a run's ledger is this plan on every dataset.
    :func:`list_stable_reduction` charges each release its part."""
    rounds = _rounds(alpha / (9 + 4 * C))
    total = ApproxDP(epsilon, delta)
    weights = {**{f"filter-and-test-{r}": 1.0 for r in range(rounds)}, "choosing": 1.0}
    return BudgetPlan.basic(total, weights)


def choosing_threshold(epsilon: float, delta: float, growth: int, beta: float) -> float:
    """The Choosing Mechanism's threshold (8/ε̃) ln(4L/(β ε̃ δ̃)) at the (ε̃, δ̃) =
    :func:`choosing_run_budget` it runs at for a charged (ε, δ) (replace-one)."""
    e, d = choosing_run_budget(ApproxDP(epsilon, delta))
    return (8 / e) * math.log(4 * growth / (beta * e * d))


def list_stable_reduction(
    X: np.ndarray,
    list_learner: Any,
    epsilon: float,
    delta: float,
    *,
    n_blocks: int,
    list_size: int,
    alpha: float,
    C: float = 3.0,
    beta: float = 0.1,
    release: Release,
    progress: bool = False,
) -> tuple[Hashable, dict[str, Any]]:
    """[B] Algorithms 2–4 (see the module docstring). ``list_learner(block, seed)`` returns
    [(candidate, d_TV(candidate, block's MDE winner)), ...]; anything past ``list_size`` items
    is dropped deterministically, as are duplicates. The Choosing Mechanism gets [B]'s β'.
    Charged to a child of ``release``'s accountant. Returns the chosen candidate and the public
    facts (T, rounds, the final radius guess)."""
    src = release.noise
    T = int(n_blocks)
    p = reduction_parameters(epsilon, delta, alpha, beta, list_size, C)
    plan = reduction_plan(epsilon, delta, alpha, C)
    assert len(plan) == p.rounds + 1
    acct = Accountant(plan.total, parent=release.accountant)
    raw, ok = run_blocks(X, list_learner, T, src, progress=progress)
    lists = []
    for lst, good in zip(raw, ok, strict=True):
        seen: dict[Hashable, float] = {}
        for c, tv in (lst if good else [])[: list_size]:
            if c not in seen:
                seen[c] = float(tv)
        lists.append(list(seen.items()))
    lo, hi = 0.0, 1.0
    bound = truncated_laplace_bound(1.0, p.e1, p.d1)
    accepted_radius: float | None = None
    for r in range(p.rounds):
        g = (lo + hi) / 2
        radius = 4 * C * g + 5 * p.a1
        top = max(_filtered_scores(lists, radius).values(), default=0)
        step = f"filter-and-test-{r}"
        noisy = float(truncated_laplace_mechanism(
            float(top), 1.0, plan.part(step, ApproxDP), accountant=acct, noise=src, step=step,
        ))
        if noisy < 0.8 * T + bound:
            lo = g
        else:
            hi = g
            accepted_radius = radius
    final = accepted_radius if accepted_radius is not None else 4 * C * hi + 5 * p.a1
    chosen = choosing_mechanism(
        dict(_filtered_scores(lists, final)), list_size, plan.part("choosing", ApproxDP), p.b1,
        release=Release(acct, src),
    )
    return chosen, {"T": T, "rounds": p.rounds, "radius_guess": hi}
