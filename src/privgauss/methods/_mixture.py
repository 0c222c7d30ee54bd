"""Shared pieces of the mixture methods: the run function calling one of the library's mixture
learners with the estimator's parameters (:func:`paper_run`), and the requirement of the
learners whose formula lives in :func:`privgauss.mixture.requirements.requirements`."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

from ..mechanisms import Release
from ..noise import NoiseSource
from ..privacy import Accountant, ApproxDP, Budget, BudgetPlan
from ._record import Facts

Mixture = tuple[np.ndarray, np.ndarray, np.ndarray]


def method_knobs(est: Any, knobs: tuple[str, ...]) -> dict[str, Any]:
    """The estimator's ``method_params`` that are knobs of the method (``knobs``)."""
    params = dict(est.method_params or {})
    return {key: value for key, value in params.items() if key in knobs}


def learner_plan(facts: Facts, plan: BudgetPlan, step: str) -> BudgetPlan:
    """A learner's own plan (of the ρ or (ε, δ) it converts the fit's budget to) as the fit's
    plan: its parts named ``step + "/" + part``, as the learner charges them, with the fit's
    budget as the total (to which they compose exactly)."""
    p = plan.prefixed(step + "/")
    return BudgetPlan.of(facts.budget, dict(p.parts), groups=p.groups)


def paper_run(module: str, function: str, knobs: tuple[str, ...], public: bool = False,
              options: str | None = None) -> Callable[..., Mixture]:
    """A run function calling the paper learner ``privgauss.mixture.<module>.<function>`` with
    the estimator's parameters, a :class:`~privgauss.mechanisms.Release` of the fit's
    accountant and noise, and its knobs — packed into the module's parameter object named
    ``options`` when given, else passed as keywords (and ``public_X=`` when ``public``)."""

    def run(est: Any, X: np.ndarray, public_X: np.ndarray | None, budget: Budget,
            acct: Accountant, noise: NoiseSource, info: dict[str, Any],
            **extra: Any) -> Mixture:
        mod = importlib.import_module(f"privgauss.mixture.{module}")
        given = method_knobs(est, knobs)
        packed = {"options": getattr(mod, options)(**given)} if options else given
        return getattr(mod, function)(
            X,
            est.n_components,
            budget,
            min_weight=est.min_weight,
            beta=est.beta,
            constants=est.constants,
            release=Release(acct, noise),
            info=info,
            **({"public_X": public_X} if public else {}),
            **packed,
            **extra,
        )

    return run


def reduction_run(function: str) -> Callable[..., Mixture]:
    """A run function calling ``privgauss.reductions.agnostic.<function>``."""

    def run(*args: Any) -> Mixture:
        from ..reductions import agnostic

        return getattr(agnostic, function)(*args)

    return run


def paper_requirements(name: str, facts: Facts, **extra: Any) -> Any:
    """:func:`privgauss.mixture.requirements.requirements` of ``name`` for an (ε, δ) budget."""
    from ..mixture.requirements import requirements

    budget = facts.budget
    assert isinstance(budget, ApproxDP)
    return requirements(name, n=facts.n, d=facts.d, k=facts.k, epsilon=budget.epsilon,
                        delta=budget.delta, min_weight=facts.min_weight, beta=float(facts.beta),
                        **extra)


def reduction_requirements(name: str, facts: Facts, constants: str) -> Any:
    """The requirement of the reduction ``name`` ("ppe" or "agnostic") for an (ε, δ) budget."""
    from ..reductions.agnostic import reduction_requirements as of_reduction

    budget = facts.budget
    assert isinstance(budget, ApproxDP)
    return of_reduction(name, n=facts.n, d=facts.d, k=facts.k, epsilon=budget.epsilon,
                        delta=budget.delta, beta=float(facts.beta), constants=constants)
