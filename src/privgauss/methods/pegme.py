"""``pegme`` (mixture): the KSSU19 warm-up (Alg. 1) for spherical, equal-weight, separated
components; only when asked for by name; (ε, δ)-DP (:mod:`privgauss.mixture.pegme`)."""

from __future__ import annotations

import math
from typing import Any

from ..privacy import BudgetPlan
from ._mixture import Mixture, MixtureJob, learner_call, paper_requirements
from ._record import Facts, Method

__all__: list[str] = []

KNOBS = ("rank", "peel_factor", "radii", "max_points")

def _requirements(facts: Facts) -> Any:
    from ..mixture.pegme import PegmeOptions
    from ..mixture.requirements import pegme_requirements

    # the run's knobs that move its searches' floors
    knobs = {knob: facts.knobs[knob] for knob in ("max_points", "radii") if knob in facts.knobs}
    if "max_points" in knobs:
        knobs["max_points"] = int(knobs["max_points"])
    return paper_requirements(pegme_requirements, facts, constants=facts.formula or "practical",
                              pegme_options=PegmeOptions(**knobs))


def _plan(facts: Facts) -> BudgetPlan:
    """One entry: the whole budget, paid up front; the learner's own releases
    (:func:`~privgauss.mixture.pegme.pegme_plan`'s two halves) are listed under it."""
    return BudgetPlan.of(facts.budget, {"pegme": facts.budget})


def _run(job: MixtureJob) -> Mixture:
    from ..mixture.pegme import PegmeOptions, pegme

    return learner_call(pegme, job, options=PegmeOptions(**job.knobs(KNOBS)))


METHOD = Method(
    name="pegme",
    kind="mixture",
    summary="the KSSU19 warm-up: spherical, equal-weight components",
    needs="spherical, equal-weight, separated components (the KSSU19 warm-up)",
    privacy="(ε, δ)-DP",
    budgets=frozenset({"approx"}),
    run=_run,
    requirements=_requirements,
    plan=_plan,
    knobs=KNOBS,
    min_separation=math.inf,
)
