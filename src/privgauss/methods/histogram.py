"""``histogram`` (Gaussian): bound-free (ε, δ)-DP — private localisation by stability
histograms, then CoinPress-style refinement (:mod:`privgauss.gaussian.histogram`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..exceptions import PrivacyBudgetError
from ..privacy import ApproxDP
from ._gaussian import GaussianJob, smallest_n
from ._record import Facts, Method

__all__: list[str] = []


def _auto(facts: Facts) -> str | None:
    if facts.notion == "approx" and not facts.known_mean:
        why = facts.unused_note + "(epsilon, delta) budget and no bounds: private localisation"
        return why
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


def _requirements(facts: Facts) -> Any:
    """The n this implementation needs: the smallest n at which the localisation's budget
    (:func:`~privgauss.gaussian.histogram.localisation_budget`, its own plan) sets every
    histogram threshold at most half the expected count of the bin it needs, within its cap
    of ε/2 (below that n the capped thresholds make a failure likely)."""
    if not isinstance(facts.budget, ApproxDP) or facts.budget.delta <= 0:
        return None
    from ..gaussian.histogram import localisation_budget
    from ..mixture.sample_size import report

    eps, delta = facts.budget.epsilon, facts.budget.delta

    def ok(n: int) -> bool:
        spent = localisation_budget(n, facts.d, eps, delta, known_scale=facts.known_covariance)
        return spent[2].epsilon < 0.5 * eps * (1.0 - 1e-9)  # below the cap: not clamped

    need = smallest_n(ok, start=4)
    return report("histogram", facts.n, {"localisation histograms": need}, "practical", {},
                  "its own budget plan: localisation_budget below its cap")


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
    requirements=_requirements,
    theory_bound=_theory,
    auto=_auto,
    auto_rank=4,
    auto_hint="an (epsilon, delta) budget for the bound-free histogram method",
    audit_rows=2000,
    clipped_count="refinement",
)
