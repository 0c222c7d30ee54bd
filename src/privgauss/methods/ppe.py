"""``ppe`` (Gaussian): bound-free (ε, δ)-DP Private Populous Estimator (Arbas–Ashtiani–Liaw):
stable averages of disjoint blocks' estimates localise, CoinPress refines
(``constants="theory"``: the thesis's Algorithm 1 with masking). Mean and covariance only
(:mod:`privgauss.reductions.ppe_gaussian`)."""

from __future__ import annotations

import numpy as np

from ..exceptions import InvalidDataError, PrivacyBudgetError
from ..privacy import ApproxDP, BudgetPlan
from ._gaussian import GaussianJob
from ._record import Facts, Method

__all__: list[str] = []


def _requirements(facts: Facts) -> object:
    from ..reductions.ppe_gaussian import ppe_requirements

    budget = facts.budget
    assert isinstance(budget, ApproxDP)
    return ppe_requirements(facts.n, facts.d, budget.epsilon, budget.delta,
                            facts.formula or facts.constants)


def _check(facts: Facts) -> None:
    if facts.notion != "approx":
        raise PrivacyBudgetError("method='ppe' needs an (epsilon, delta>0) budget")
    if facts.known_covariance:
        raise InvalidDataError(
            "method='ppe' estimates the mean and the covariance: drop covariance=, or use "
            "method='histogram' for a known covariance"
        )
    req = _requirements(facts)
    if not req.ok:  # type: ignore[attr-defined]
        raise InvalidDataError(req.message())  # type: ignore[attr-defined]


def _run(job: GaussianJob) -> tuple[np.ndarray, np.ndarray]:
    from ..backends import in_memory
    from ..reductions.ppe_gaussian import ppe_gaussian

    facts, budget = job.facts, job.budget
    assert isinstance(budget, ApproxDP)  # _check: an (epsilon, delta > 0) budget
    return ppe_gaussian(
        in_memory(job.X, max_memory_bytes=facts.max_memory_bytes),
        budget.epsilon,
        budget.delta,
        release=job.release,
        constants=facts.constants,
        beta=facts.beta,
        corr_condition=float(facts.corr_condition),
    )


def _plan(facts: Facts) -> BudgetPlan:
    """:func:`~privgauss.reductions.ppe_gaussian.ppe_plan`, the clipped count taking its
    share of the refinement's ρ."""
    from ..gaussian.clip_diagnostics import refinement_count_split
    from ..reductions.ppe_gaussian import ppe_plan

    assert isinstance(facts.budget, ApproxDP)  # _check: an (epsilon, delta > 0) budget
    return ppe_plan(facts.n, facts.d, facts.budget, facts.constants,
                    count_split=refinement_count_split)


METHOD = Method(
    name="ppe",
    kind="gaussian",
    summary="bound-free Private Populous Estimator: stable block averages, then CoinPress",
    needs="nothing but an (ε, δ) budget; a large n",
    privacy="(ε, δ)-DP",
    budgets=frozenset({"approx"}),
    run=_run,
    check=_check,
    requirements=_requirements,
    plan=_plan,
    clipped_count="refinement",
)
