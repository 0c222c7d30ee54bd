"""The budget plan of the KSSU learner (:func:`~.kssu.kssu_gmm`): per-node budgets of every level.

Kamath, Sheffet, Singhal and Ullman (NeurIPS 2019), Alg. 1 as run by :mod:`.kssu`: each level's
enclosing-ball and terrific-ball searches, counts and PCA, and the final weight and component
estimation. **Neighbours:** replace one row (n public); a replaced row's old and new values can
follow two paths, so every level below the root is charged twice (the multipliers). The parts
compose (basic composition of the (ε, δ) parts, zCDP parts converted) to exactly the budget;
public quantities only.
"""

from __future__ import annotations

import math
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
from ..validation import check_positive_int

__all__ = ["KSSUBudget", "plan_kssu_budget"]

_ENC_WEIGHT = 0.5
_TERRIFIC_WEIGHT = 1.5
_ZCDP_SHARES = {"pca": 0.35, "count": 0.05, "weights": 0.05}  # estimation: the rest



# ----------------------------------------------------------------------------------------------
# Budget plan
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KSSUBudget:
    """Per-node budgets of every level (before the path multiplier) and the final charges.

    ``multipliers[ℓ]`` is 1 at the root and 2 below (a replaced row's old and new values can
    follow two paths). ``count[0]`` is None (the root's n is public); ``terrific``/``pca`` are
    None at level k − 1 (leaves only)."""

    k: int
    multipliers: tuple[int, ...]
    enclose: tuple[ApproxDP, ...]
    terrific: tuple[ApproxDP | None, ...]
    count: tuple[ZCDP | None, ...]
    pca: tuple[ZCDP | None, ...]
    weights: ZCDP
    estimation: ZCDP  # 2·ρ_E, charged once
    total: ApproxDP | None = None  # the budget the plan was made from

    def budget_plan(self, *, exact: bool = True) -> BudgetPlan:
        """Every charge of a run, named as the learner's ledger records them after its step
        (``level-ℓ/<step>``, then the leaves' ``leaves/counts`` and ``leaves/estimate``), as
        a :class:`~privgauss.privacy.BudgetPlan` of :attr:`total` (exact: the parts compose
        to exactly the total; else within it)."""
        if self.total is None:
            raise ValueError("this KSSU plan was made without its total")
        parts = {
            f"level-{lv}/{name}": cost
            for lv in range(self.k)
            for name, cost in self.level_charges(lv)
        }
        parts["leaves/counts"] = self.weights
        parts["leaves/estimate"] = self.estimation
        return BudgetPlan.of(self.total, parts, exact=exact)

    @property
    def node_enclose(self) -> ApproxDP:
        return self.enclose[0]

    @property
    def node_terrific(self) -> ApproxDP:
        return self.terrific[0] if self.terrific[0] is not None else self.enclose[0]

    @property
    def node_pca(self) -> ZCDP | None:
        """The root's private-PCA budget; None when the root runs no PCA (k = 1)."""
        return self.pca[0]

    def level_charges(self, level: int) -> list[tuple[str, Budget]]:
        """What the accountant is charged for level ``level`` (multiplier applied)."""
        mult = self.multipliers[level]

        def times(b: ZCDP | ApproxDP) -> Budget:
            if isinstance(b, ZCDP):
                return ZCDP(mult * b.rho)
            return ApproxDP(mult * b.epsilon, mult * b.delta)

        out: list[tuple[str, Budget]] = []
        count, terrific, pca = self.count[level], self.terrific[level], self.pca[level]
        if count is not None:
            out.append(("count", times(count)))
        out.append(("enclosing-ball", times(self.enclose[level])))
        if terrific is not None:
            assert pca is not None  # a level that splits runs both terrific searches and the PCA
            out.append(("terrific-raw", times(terrific)))
            out.append(("private-pca", times(pca)))
            out.append(("terrific-projected", times(terrific)))
        return out

    def all_charges(self, first_level: int = 0) -> list[Budget]:
        out = [c for lv in range(first_level, self.k) for _, c in self.level_charges(lv)]
        return [*out, self.weights, self.estimation]


def plan_kssu_budget(
    budget: ApproxDP, k: int, d: int | None = None, *, partition_share: float = 0.6
) -> KSSUBudget:
    """The public KSSU budget plan for ``ApproxDP(ε, δ)`` and k components (module docstring);
    the level charges, the leaf counts and the estimation compose to exactly (ε, δ)."""
    if not has_delta(budget):
        raise PrivacyBudgetError(
            "the KSSU learner needs an (epsilon, delta) budget with delta > 0 (its 1-cluster and "
            "terrific-ball steps use stability histograms)"
        )
    k = check_positive_int(k, "k", minimum=1)
    if not (0 < partition_share < 1):
        raise ValueError("partition_share must be in (0, 1)")
    eps, delta = budget.epsilon, budget.delta
    levels = range(k)
    mult = tuple(1 if lv == 0 else 2 for lv in levels)
    split = tuple(lv <= k - 2 for lv in levels)
    weight = [
        mult[lv] * (_ENC_WEIGHT + (2 * _TERRIFIC_WEIGHT if split[lv] else 0.0)) for lv in levels
    ]
    n_calls = sum(mult[lv] * (3 if split[lv] else 1) for lv in levels)
    if math.isinf(eps):
        unit, d_call = math.inf, delta / (2 * n_calls)
    else:
        unit, d_call = partition_share * eps / sum(weight), delta / (2 * n_calls)
    enclose = tuple(ApproxDP(unit * _ENC_WEIGHT, d_call) for _ in levels)
    terrific = tuple(
        ApproxDP(unit * _TERRIFIC_WEIGHT, d_call) if split[lv] else None for lv in levels
    )
    if math.isinf(eps):
        rho_z = math.inf
    else:
        # terrific[lv] is set exactly when split[lv]
        eps_a = math.fsum(
            mult[lv] * (enclose[lv].epsilon + (2 * t.epsilon if (t := terrific[lv]) else 0.0))
            for lv in levels
        )
        delta_a = math.fsum(mult[lv] * d_call * (3 if split[lv] else 1) for lv in levels)
        rho_z = approx_to_zcdp(eps - eps_a, delta - delta_a)
    pca_mult = sum(mult[lv] for lv in levels if split[lv])
    cnt_mult = sum(mult[lv] for lv in levels if lv >= 1)
    shares = dict(_ZCDP_SHARES)
    if pca_mult == 0:
        shares["pca"] = 0.0
    if cnt_mult == 0:
        shares["count"] = 0.0
    rho_pca = rho_z * shares["pca"] / pca_mult if pca_mult else 0.0
    rho_cnt = rho_z * shares["count"] / cnt_mult if cnt_mult else 0.0
    pca = tuple(ZCDP(rho_pca) if split[lv] else None for lv in levels)
    count = tuple(ZCDP(rho_cnt) if lv >= 1 else None for lv in levels)
    rho_w = rho_z * shares["weights"]
    if math.isinf(rho_z):
        rho_e = math.inf
    else:
        used = rho_pca * pca_mult + rho_cnt * cnt_mult + rho_w
        rho_e = rho_z - used
    return KSSUBudget(
        k, mult, enclose, terrific, count, pca, ZCDP(rho_w), ZCDP(rho_e), total=budget
    )
