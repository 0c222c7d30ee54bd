"""``ppe`` (mixture): the Private Populous Estimator (Arbas–Ashtiani–Liaw) — the practical
stable-average PPE for k = 1, the faithful mixture PPE (EM per block, masking) for k ≥ 2;
never chosen by ``auto``; (ε, δ)-DP (:mod:`privgauss.reductions.ppe_gaussian`)."""

from __future__ import annotations

import math
from typing import Any

from ..privacy import ApproxDP, BudgetPlan
from ._mixture import Mixture, MixtureJob
from ._record import Facts, Method

__all__: list[str] = []


def _requirements(facts: Facts) -> Any:
    from ..reductions.ppe_gaussian import ppe_requirements

    budget = facts.budget
    assert isinstance(budget, ApproxDP)
    return ppe_requirements(facts.n, facts.d, budget.epsilon, budget.delta,
                            facts.formula or "practical", facts.k)


def _plan(facts: Facts) -> BudgetPlan:
    """k = 1 (practical): :func:`~privgauss.reductions.ppe_gaussian.ppe_plan`'s stable
    averages and refinement; otherwise the mixture PPE's masking and test
    (:func:`~privgauss.reductions.ppe.populous_parts`)."""
    from ..reductions.ppe import populous_parts, ppe_halves, ppe_spends_all
    from ..reductions.ppe_gaussian import ppe_plan

    budget = facts.budget
    assert isinstance(budget, ApproxDP)
    if facts.k == 1 and facts.constants == "practical":  # as run_ppe decides
        return ppe_plan(facts.n, facts.d, budget)
    return BudgetPlan.of(budget, populous_parts(ApproxDP(*ppe_halves(budget)), "ppe-mixture"),
                         exact=ppe_spends_all(budget))


def _run(job: MixtureJob) -> Mixture:
    from ..reductions.agnostic import run_ppe

    budget = job.budget
    assert isinstance(budget, ApproxDP)  # the method takes (ε, δ) budgets only
    return run_ppe(job.X, job.facts.k, budget, constants=job.facts.constants,
                   release=job.release)


METHOD = Method(
    name="ppe",
    kind="mixture",
    summary="Private Populous Estimator: any non-private learner made private",
    needs="any non-private learner; a large n",
    privacy="(ε, δ)-DP",
    budgets=frozenset({"approx"}),
    run=_run,
    requirements=_requirements,
    plan=_plan,
    min_separation=math.inf,
)
