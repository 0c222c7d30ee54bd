"""``agnostic`` (mixture): agnostic private density estimation (Afzali–Ashtiani–Liaw) —
candidates from the library's private learners selected by a private tournament
(``constants="theory"``: the faithful list-global-stability route); never chosen by ``auto``;
(ε, δ)-DP (:mod:`privgauss.reductions.agnostic`)."""

from __future__ import annotations

import math
from typing import Any

from ..privacy import ApproxDP, BudgetPlan
from ._mixture import Mixture, MixtureJob
from ._record import Facts, Method

__all__: list[str] = []


def _requirements(facts: Facts) -> Any:
    from ..reductions.agnostic import agnostic_requirements

    budget = facts.budget
    assert isinstance(budget, ApproxDP)
    # constants="theory" is a different route (the faithful one): its own requirement
    return agnostic_requirements(n=facts.n, d=facts.d, k=facts.k, epsilon=budget.epsilon,
                                 delta=budget.delta, beta=float(facts.beta),
                                 constants=facts.formula or facts.constants)


def _plan(facts: Facts) -> BudgetPlan | None:
    """Route P2 (practical constants):
    :func:`~privgauss.reductions.selection.selection_plan` — each candidate producer's share,
    one entry each (its own learner's releases kept in the entry's parts) whether it succeeds
    or fails, then the private selection. The faithful route (``constants="theory"``):
    :func:`~privgauss.reductions.agnostic.faithful_budget_plan` — its R Filter-and-Test rounds
    and the Choosing Mechanism, each charged on every dataset."""
    from ..reductions.agnostic import faithful_budget_plan, p2_producers
    from ..reductions.selection import selection_plan

    budget = facts.budget
    assert isinstance(budget, ApproxDP)
    if facts.constants == "theory":
        return faithful_budget_plan(budget.epsilon, budget.delta)
    count = 1 if facts.k == 1 else len(p2_producers(facts.n, facts.d, facts.k, budget.epsilon,
                                                      budget.delta, float(facts.beta)))
    return selection_plan(budget.epsilon, budget.delta, count)


def _run(job: MixtureJob) -> Mixture:
    from ..reductions.agnostic import run_agnostic

    budget = job.budget
    assert isinstance(budget, ApproxDP)  # the method takes (ε, δ) budgets only
    return run_agnostic(job.X, job.facts.k, budget, constants=job.facts.constants,
                        beta=job.facts.beta, release=job.release, info=job.info)


METHOD = Method(
    name="agnostic",
    kind="mixture",
    summary="agnostic reduction: private selection among private learners' candidates",
    needs="no separation assumption; candidates from the private learners",
    privacy="(ε, δ)-DP",
    budgets=frozenset({"approx"}),
    run=_run,
    requirements=_requirements,
    plan=_plan,
    min_separation=math.inf,
)
