"""``kssu`` (mixture): Kamath–Sheffet–Singhal–Ullman 2019, Alg. 3–4 — private recursive
partitioning by terrific balls (raw, then after private PCA), then per-part CoinPress
estimation; (ε, δ)-DP (:mod:`privgauss.mixture.kssu`)."""

from __future__ import annotations

from typing import Any

from ..privacy import ApproxDP, BudgetPlan
from ._mixture import Mixture, MixtureJob, learner_call, learner_plan, paper_requirements
from ._record import Facts, Method

__all__: list[str] = []

KNOBS = ("terrific_c", "radii", "n_radii_max", "max_points")


def _requirements(facts: Facts) -> Any:
    from ..mixture.kssu import KSSUOptions
    from ..mixture.requirements import kssu_requirements

    # the run's knobs that move its search floor
    knobs = {knob: int(facts.knobs[knob]) for knob in ("max_points", "n_radii_max")
             if knob in facts.knobs}
    return paper_requirements(kssu_requirements, facts, constants=facts.formula or "practical",
                              kssu_options=KSSUOptions(**knobs))


def _plan(facts: Facts) -> BudgetPlan:
    """:func:`~privgauss.mixture.kssu_budget.plan_kssu_budget`, the split the learner spends
    from: each level's charges, then the leaves' counts and estimation."""
    from ..mixture.kssu_budget import plan_kssu_budget

    assert isinstance(facts.budget, ApproxDP)
    return learner_plan(facts, plan_kssu_budget(facts.budget, facts.k, facts.d).budget_plan(),
                        "kssu")


def _run(job: MixtureJob) -> Mixture:
    from ..mixture.kssu import KSSUOptions, kssu_gmm

    return learner_call(kssu_gmm, job, options=KSSUOptions(**job.knobs(KNOBS)))


METHOD = Method(
    name="kssu",
    kind="mixture",
    summary="KSSU19 recursive partitioning by terrific balls, then per-part CoinPress",
    needs="separated components (validated at ratio ≥ 5: `auto` runs it only with "
    "`separation=` ≥ 5); large n",
    privacy="(ε, δ)-DP",
    budgets=frozenset({"approx"}),
    run=_run,
    requirements=_requirements,
    plan=_plan,
    knobs=KNOBS,
    # the separation ratio its practical n was measured at (privgauss.mixture.kssu.
    # VALIDATED_SEPARATION; benchmarks/results/mixture_requirements.md: at 1.2x the stated n
    # every fit succeeded at ratio 5, at ratio 3 the partition failed in 6 of 6)
    min_separation=5.0,
)
