"""``sample-aggregate`` (mixture): KSSU19 §6 — a non-private learner on disjoint chunks,
private 1-cluster aggregation of the chunk means, then per-part CoinPress estimation;
(ε, δ)-DP (:mod:`privgauss.mixture.sample_aggregate`)."""

from __future__ import annotations

from typing import Any

from ..privacy import ApproxDP, BudgetPlan
from ._mixture import Mixture, MixtureJob, learner_call, learner_plan, paper_requirements
from ._record import Facts, Method

__all__: list[str] = []

KNOBS = ("n_chunks", "learner", "radii", "peel_factor", "t_fraction", "box_factor",
         "max_points")


def _requirements(facts: Facts) -> Any:
    from ..mixture.requirements import sample_aggregate_requirements

    return paper_requirements(sample_aggregate_requirements, facts,
                              constants=facts.formula or "practical")


def _plan(facts: Facts) -> BudgetPlan:
    """:func:`~privgauss.mixture.sample_aggregate_budget.plan_sa_budget`, the split the
    learner spends from: each aggregation round's releases, then the counts and estimation."""
    from ..mixture.sample_aggregate_budget import plan_sa_budget

    assert isinstance(facts.budget, ApproxDP)
    return learner_plan(facts, plan_sa_budget(facts.budget, facts.k, facts.d).budget_plan(),
                        "sample-aggregate")


def _run(job: MixtureJob) -> Mixture:
    from ..mixture.sample_aggregate import SAOptions, sample_aggregate_gmm

    return learner_call(sample_aggregate_gmm, job, options=SAOptions(**job.knobs(KNOBS)))


METHOD = Method(
    name="sample-aggregate",
    kind="mixture",
    summary="KSSU19 sample-and-aggregate: a non-private learner on chunks, private aggregation",
    needs="separated components (validated at ratio ≥ 3: `auto` runs it only with "
    "`separation=` ≥ 3); large n",
    privacy="(ε, δ)-DP",
    budgets=frozenset({"approx"}),
    run=_run,
    requirements=_requirements,
    plan=_plan,
    knobs=KNOBS,
    # the separation ratio its chunk learner was measured at (privgauss.mixture.
    # sample_aggregate.default_chunk_size: <= 1% of the chunk fits miss a component for
    # d <= 10, k <= 5; tests/test_estimator_mixture.py recovers a ratio-3 mixture with it)
    min_separation=3.0,
)
