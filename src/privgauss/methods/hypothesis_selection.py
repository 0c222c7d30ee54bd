"""``hypothesis-selection`` (Gaussian): pure ε-DP private hypothesis selection over a finite
cover of the prior, or of d+1 public rows' neighbourhood; small d only
(:mod:`privgauss.gaussian.hypothesis_selection`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..exceptions import InvalidDataError, PrivacyBudgetError
from ..privacy import ApproxDP, BudgetPlan, PureDP, is_pure
from ._gaussian import GaussianJob
from ._record import Facts, Method

__all__: list[str] = []


def _auto(facts: Facts) -> str | None:
    usable = facts.m >= facts.d + 1 and not facts.public_unusable
    if is_pure(facts.budget) and (facts.has_prior or usable):
        return "pure epsilon budget: private hypothesis selection"
    return None


def _check(facts: Facts) -> None:
    if not is_pure(facts.budget):
        raise PrivacyBudgetError("method='hypothesis-selection' needs a pure epsilon budget")


def _run(job: GaussianJob) -> tuple[np.ndarray, np.ndarray]:
    from ..backends import in_memory
    from ..gaussian import hypothesis_selection as hs

    facts = job.facts
    budget = job.budget
    assert isinstance(budget, PureDP | ApproxDP)  # _check: a pure epsilon budget
    eps = budget.epsilon
    X = in_memory(job.X, max_memory_bytes=facts.max_memory_bytes)
    Xp = job.public_X
    refine = facts.constants == "practical"  # the paper's selection alone: "theory"
    if Xp is not None and Xp.shape[0] >= X.shape[1] + 1 and not facts.public_unusable:
        return hs.hypothesis_selection_public(X, Xp, eps, release=job.release, refine=refine,
                                              beta=float(facts.beta))
    if facts.mean_bound is None or (job.known is None and facts.cov_bounds is None):
        raise InvalidDataError(
            "method='hypothesis-selection' needs mean_bound= and cov_bounds= "
            "(or d+1 public rows)"
        )
    return hs.hypothesis_selection_gaussian(
        X,
        eps,
        center=job.center,
        radius=float(facts.mean_bound),
        cov_bounds=facts.cov_bounds,
        cov=job.known,
        release=job.release,
        refine=refine,
        beta=float(facts.beta),
    )


def _plan(facts: Facts) -> BudgetPlan:
    """The selection over the cover of d+1 usable public rows' neighbourhood, or the Scheffé
    tournament over the prior's cover — the whole budget with ``constants="theory"``; by
    default its share of :data:`~privgauss.gaussian.hypothesis_refinement.REFINE_SHARES`,
    then the refinement's mean and (unless the covariance is known) covariance releases."""
    from ..gaussian.hypothesis_refinement import shares
    from ..gaussian.hypothesis_selection import DEFAULT_ALPHA, worth_refining

    usable = facts.m >= facts.d + 1 and not facts.public_unusable  # as _run decides
    prefix = "hypothesis-selection-public" if usable else "hypothesis-selection"
    # the score (Scheffé or projection) is chosen from the cover's size, n and d (public,
    # gaussian.hypothesis_selection._choose_score): the plan names the likelier, a branch
    # the other
    kinds = ("projection", "scheffe") if usable else ("scheffe", "projection")
    known = facts.known_covariance and not usable
    refine = facts.constants == "practical" and worth_refining(
        facts.n, facts.d, facts.budget.epsilon,  # type: ignore[union-attr]  # pure (_check)
        DEFAULT_ALPHA, float(facts.beta), known)
    plans = []
    for kind in kinds:
        step = f"{prefix}-{kind}"
        if not refine:
            plans.append(BudgetPlan.of(facts.budget, {step: facts.budget}))
            continue
        eps = facts.budget.epsilon  # type: ignore[union-attr]  # _check: pure epsilon
        sel, e_mean, e_cov = shares(known)
        parts = {step: PureDP(eps * sel), f"{prefix}-refine-mean": PureDP(eps * e_mean)}
        if e_cov > 0:
            parts[f"{prefix}-refine-cov"] = PureDP(eps * e_cov)
        plans.append(BudgetPlan.of(facts.budget, parts))
    main, other = plans
    return BudgetPlan(main.total, main.parts, main.exact, main.groups, (other,))


def _theory(facts: Facts, alpha: float, cond: float) -> tuple[Any, str]:
    from .. import theory

    budget, d = facts.budget, facts.d
    if not isinstance(budget, PureDP):
        raise PrivacyBudgetError("method 'hypothesis-selection' needs --epsilon alone (pure)")
    known = facts.known_covariance and facts.mean_bound is not None
    if facts.constants == "practical":  # the selection's share of ε when it refines (_plan)
        from ..gaussian.hypothesis_refinement import shares
        from ..gaussian.hypothesis_selection import DEFAULT_ALPHA, worth_refining

        if worth_refining(facts.n, d, budget.epsilon, DEFAULT_ALPHA, float(facts.beta), known):
            budget = PureDP(budget.epsilon * shares(known)[0])
    if facts.mean_bound is None:
        return (theory.public_gaussian_n(d, alpha, facts.beta, epsilon=budget.epsilon,
                                         gamma=facts.gamma),
                f"{d + 1} public rows (or --mean-bound and covariance bounds)")
    return (theory.bksw_n(d, alpha, facts.beta, budget.epsilon, facts.mean_bound,
                          None if facts.known_covariance else cond),
            "R (and covariance bounds)")


METHOD = Method(
    name="hypothesis-selection",
    kind="gaussian",
    summary="pure ε-DP private hypothesis selection over a finite cover; small d only",
    needs="small d; a prior or d+1 public rows",
    privacy="pure ε-DP",
    budgets=frozenset({"pure"}),
    run=_run,
    public="optional",
    prior="optional",
    known_covariance="optional",
    check=_check,
    theory_bound=_theory,
    plan=_plan,
    auto=_auto,
    auto_rank=3,
)
