"""``histogram`` (Gaussian): bound-free (ε, δ)-DP — private localisation by stability
histograms, then CoinPress-style refinement (:mod:`privgauss.gaussian.histogram`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..exceptions import PrivacyBudgetError
from ..privacy import ApproxDP
from ._gaussian import GaussianJob
from ._record import Facts, Method

__all__: list[str] = []


def _auto(facts: Facts) -> str | None:
    if facts.notion == "approx" and not facts.known_mean:
        return "(epsilon, delta) budget and no bounds: private localisation"
    return None


def _check(facts: Facts) -> None:
    if facts.notion != "approx":
        raise PrivacyBudgetError("method='histogram' needs an (epsilon, delta>0) budget")


def _run(job: GaussianJob) -> tuple[np.ndarray, np.ndarray]:
    from ..gaussian.histogram import histogram_gaussian

    facts, budget = job.facts, job.budget
    assert isinstance(budget, ApproxDP)  # _check: an (epsilon, delta > 0) budget
    return histogram_gaussian(
        job.X,
        budget.epsilon,
        budget.delta,
        accountant=job.accountant,
        noise=job.noise,
        mean_only=job.known is not None,
        cov=job.known,
        beta=facts.beta,
        constants=facts.constants,
        corr_condition=float(facts.corr_condition),
    )


def _theory(facts: Facts, alpha: float, cond: float) -> tuple[Any, str]:
    from .. import theory

    budget = facts.budget
    if not isinstance(budget, ApproxDP):
        raise PrivacyBudgetError("method 'histogram' needs --epsilon and --delta")
    return theory.al21_n(facts.d, alpha, facts.beta, budget.epsilon, budget.delta), "no bounds"


METHOD = Method(
    name="histogram",
    kind="gaussian",
    summary="bound-free: private localisation by stability histograms, then refinement",
    needs="nothing but an (ε, δ) budget",
    privacy="(ε, δ)-DP",
    budgets=frozenset({"approx"}),
    run=_run,
    known_covariance="optional",
    check=_check,
    theory_bound=_theory,
    auto=_auto,
    auto_rank=4,
    auto_hint="an (epsilon, delta) budget for the bound-free histogram method",
    audit_rows=2000,
)
