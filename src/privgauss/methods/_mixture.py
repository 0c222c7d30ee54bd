"""Shared pieces of the mixture methods: the :class:`MixtureJob` a mixture run function
receives, the call of one of the library's paper learners with the fit's public parameters
(:func:`learner_call`), and the requirement of a learner from its own formula in
:mod:`privgauss.mixture.requirements` (:func:`paper_requirements`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..mechanisms import Release
from ..privacy import ApproxDP, Budget, BudgetPlan
from ._record import Facts

Mixture = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class MixtureJob:
    """What a mixture run function receives: the validated rows (in memory unless the method
    streams), the public rows, the fit's public facts (budget, k, ``min_weight``, ``beta``,
    ``constants``, the prior's bounds, the method knobs), the fit's release context, the
    prior's centre, and the dict the learner reports its public facts and DP outputs into
    (``fit_info_``).

    ``center`` is the centre of the prior ball (zeros when ``center=`` is not given)."""

    X: Any
    public_X: np.ndarray | None
    facts: Facts
    release: Release
    center: np.ndarray
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def budget(self) -> Budget:
        """The fit's budget."""
        return self.facts.budget

    def knobs(self, names: tuple[str, ...]) -> dict[str, Any]:
        """The method knobs given (``method_params``) among ``names``."""
        return {key: value for key, value in self.facts.knobs.items() if key in names}


def learner_plan(facts: Facts, plan: BudgetPlan, step: str) -> BudgetPlan:
    """A learner's own plan (of the ρ or (ε, δ) it converts the fit's budget to) as the fit's
    plan: its parts named ``step + "/" + part``, as the learner charges them, with the fit's
    budget as the total (to which they compose exactly)."""
    p = plan.prefixed(step + "/")
    return BudgetPlan.of(facts.budget, dict(p.parts), groups=p.groups)


def learner_call(learner: Callable[..., Mixture], job: MixtureJob, *, public: bool = False,
                 **extra: Any) -> Mixture:
    """``learner(X, k, budget, min_weight=, beta=, constants=, release=, info=, ...)`` — a
    paper learner of :mod:`privgauss.mixture` called with the fit's public parameters, its
    release context and ``extra`` (the method's knobs, packed or as keywords), and
    ``public_X=`` when ``public``."""
    facts = job.facts
    return learner(
        job.X,
        facts.k,
        job.budget,
        min_weight=facts.min_weight,
        beta=facts.beta,
        constants=facts.constants,
        release=job.release,
        info=job.info,
        **({"public_X": job.public_X} if public else {}),
        **extra,
    )


def paper_requirements(formula: Callable[..., Any], facts: Facts, **extra: Any) -> Any:
    """``formula`` (a learner's own function of :mod:`privgauss.mixture.requirements`) of the
    fit's public facts, for an (ε, δ) budget."""
    budget = facts.budget
    assert isinstance(budget, ApproxDP)
    return formula(n=facts.n, d=facts.d, k=facts.k, epsilon=budget.epsilon, delta=budget.delta,
                   min_weight=facts.min_weight, beta=float(facts.beta), **extra)
