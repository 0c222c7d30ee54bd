"""The budget plan of sample-and-aggregate (:func:`~.sample_aggregate.sample_aggregate_gmm`).

Kamath, Sheffet, Singhal and Ullman (NeurIPS 2019) §6, Thm 6.1/6.4 (spec §8), as run by
:mod:`.sample_aggregate`: k rounds of the private
1-cluster (each charged as one_cluster's pure, histogram and zCDP pieces, from its own public
planner), the cluster counts and the component estimation. **Neighbours:** replace one row (n
public). The parts compose (basic composition, zCDP parts through their tight conversion) to
exactly the (ε, δ) budget; public quantities only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ..exceptions import PrivacyBudgetError
from ..privacy import (
    ZCDP,
    ApproxDP,
    Budget,
    BudgetPlan,
    approx_to_zcdp,
    has_delta,
)
from .one_cluster import NAMES as ONE_CLUSTER_NAMES
from .one_cluster import plan_budget

__all__ = ["ROUND_SPLIT", "SABudget", "plan_sa_budget"]

#: relative ε weights of one_cluster's (radius search, box histogram, box mean, refinement): the
#: radius search's slack Γ is what limits the aggregation, so it gets the largest share
ROUND_SPLIT = (0.45, 0.2, 0.15, 0.2)



# ----------------------------------------------------------------------------------------------
# Budget plan and checks
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SABudget:
    """The parts of a sample-and-aggregate budget (they compose to exactly the total)."""

    rounds: tuple[ApproxDP, ...]
    round_parts: tuple[tuple[Budget, ...], ...]  # what one_cluster charges for each round
    counts: ZCDP
    estimation: ZCDP  # charged once: 2·ρ_E
    total: ApproxDP | None = None  # the budget the plan was made from

    def all(self, first_round: int = 0) -> list[Budget]:
        """Every charge from round ``first_round`` on, in order."""
        out: list[Budget] = [p for parts in self.round_parts[first_round:] for p in parts]
        return [*out, self.counts, self.estimation]

    def budget_plan(self, *, exact: bool = True) -> BudgetPlan:
        """Every charge, named as the learner's ledger records them after its step
        (``round-j/<one_cluster step>``, ``counts`` and ``estimate``), as a
        :class:`~privgauss.privacy.BudgetPlan` of :attr:`total` (exact: the parts compose to
        exactly the total; else within it)."""
        if self.total is None:
            raise ValueError("this sample-and-aggregate plan was made without its total")
        parts: dict[str, Budget] = {
            f"round-{j + 1}/{_LEDGER_NAMES.get(name, name)}": b
            for j, rp in enumerate(self.round_parts)
            for name, b in zip(ONE_CLUSTER_NAMES, rp, strict=True)
        }
        parts.update(counts=self.counts, estimate=self.estimation)
        return BudgetPlan.of(self.total, parts, exact=exact)


# one_cluster's plan names → the steps its releases are recorded under (good_center's
# noisy mean of the box is "box-mean")
_LEDGER_NAMES = {"mean": "box-mean"}


def _round_parts(budget: ApproxDP, d: int, split: Sequence[float]) -> tuple[Budget, ...]:
    return tuple(plan_budget(budget, ("pure", "hist", "noise", "noise"), split, (1, 1, d, d)))


def _round_pieces(parts: Sequence[Budget]) -> tuple[float, float, float]:
    """(pure ε, δ, zCDP ρ) of one one_cluster call's charges."""
    eps = delta = rho = 0.0
    for part in parts:
        if isinstance(part, ZCDP):
            rho += part.rho
        else:
            eps += part.epsilon
            delta += part.delta if isinstance(part, ApproxDP) else 0.0
    return eps, delta, rho


def plan_sa_budget(
    budget: ApproxDP,
    k: int,
    d: int,
    *,
    means_share: float = 0.7,
    counts_share: float = 0.05,
    round_split: Sequence[float] = ROUND_SPLIT,
) -> SABudget:
    """Split (ε, δ) into k peeling rounds, the counts and the estimation charge. Public.

    Round j gets ApproxDP(ε_M·(k − j + 1)/(k(k + 1)/2), δ/(2k)) with ε_M = means_share·ε (round j
    sees k − j + 1 clusters of about s/(k − j + 1) points each; the last round is a remainder).
    one_cluster charges each round as pure, histogram and zCDP pieces (its planner, public);
    the zCDP left is ρ_Z = the largest ρ such that all zCDP charges together convert, with the δ
    the histograms leave, into the ε the pure pieces leave (tight CKS20). ``counts_share`` of
    ρ_Z goes to the counts, the rest to the estimation charge, so the ledger composes to exactly
    (ε, δ) in the accountant's own arithmetic.
    """
    if not has_delta(budget):
        raise PrivacyBudgetError(
            "sample-and-aggregate needs an (epsilon, delta) budget with delta > 0 (its 1-cluster "
            "step uses a stability histogram)"
        )
    if not (0 < means_share < 1) or not (0 < counts_share < 1):
        raise ValueError("means_share and counts_share must be in (0, 1)")
    eps, delta = budget.epsilon, budget.delta
    if math.isinf(eps):
        rounds = tuple(ApproxDP(math.inf, delta / (2 * k)) for _ in range(k))
        parts = tuple(_round_parts(r, d, tuple(round_split)) for r in rounds)
        return SABudget(rounds, parts, ZCDP(math.inf), ZCDP(math.inf), total=budget)
    eps_m = eps * means_share
    total_w = k * (k + 1) / 2
    per = [eps_m * (k - j) / total_w for j in range(k - 1)]
    per.append(eps_m - sum(per))
    dl = [delta / (2 * k)] * (k - 1)
    dl.append(delta / 2 - sum(dl))
    rounds = tuple(ApproxDP(e, x) for e, x in zip(per, dl, strict=True))
    parts = tuple(_round_parts(r, d, tuple(round_split)) for r in rounds)
    pieces = [_round_pieces(p) for p in parts]
    eps_pure = math.fsum(p[0] for p in pieces)
    delta_h = math.fsum(p[1] for p in pieces)
    rho_oc = math.fsum(p[2] for p in pieces)
    rho_z = approx_to_zcdp(eps - eps_pure, delta - delta_h) - rho_oc
    if not rho_z > 0:  # pragma: no cover - the joint conversion is never worse than separate ones
        raise PrivacyBudgetError("the budget is too small to split")
    rho_w = rho_z * counts_share
    return SABudget(rounds, parts, ZCDP(rho_w), ZCDP(rho_z - rho_w), total=budget)
