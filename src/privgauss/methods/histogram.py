"""``histogram`` (Gaussian): bound-free (ε, δ)-DP — private localisation by stability
histograms, then CoinPress-style refinement (:mod:`privgauss.gaussian.histogram`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..exceptions import InvalidDataError, PrivacyBudgetError
from ..privacy import ApproxDP, BudgetPlan, has_delta
from ..theory import smallest_n
from ._gaussian import GaussianJob
from ._record import Facts, Method, zcdp_of

__all__: list[str] = []


def _auto(facts: Facts) -> str | None:
    if facts.notion == "approx" and not facts.known_mean:
        errors = bound_free_preferred(facts)
        if errors is not None and facts.has_prior:  # coinpress gave way (its auto)
            return (facts.unused_note + "(epsilon, delta) budget: private localisation, "
                    f"whose planned relative covariance error {errors[1]:.3g} is below "
                    f"{errors[0]:.3g} for coinpress inside the given mean_bound and "
                    "cov_bounds (the release is projected into them)")
        why = facts.unused_note + "(epsilon, delta) budget and no bounds: private localisation"
        return why
    return None


#: ``auto`` takes the bound-free route over coinpress inside a given prior when its planned
#: covariance error is below this fraction of coinpress's. coinpress's prediction is at the
#: prior's worst case and pessimistic when the truth lies well inside it; at ε = 1 the corpus's
#: randhie inside a 100× prior predicts 0.044 (bound-free) against 0.050 (coinpress) while
#: coinpress measures KL 0.09-0.11 to np.cov over 5 seeds and the bound-free route 0.13-0.21,
#: with 232 at one seed in ten (its 1.5 % flag read as near-constant); fair inside the same
#: prior predicts 0.17 against 1.8 (KL 0.48 bound-free against 0.77 coinpress)
BOUND_FREE_GAIN = 0.8


def bound_free_preferred(facts: Facts) -> tuple[float, float] | None:
    """:func:`prior_against_bound_free`'s errors when ``auto`` takes the bound-free route over
    coinpress inside the prior (its error below :data:`BOUND_FREE_GAIN` times coinpress's),
    else None."""
    errors = prior_against_bound_free(facts)
    return errors if errors is not None and errors[1] < BOUND_FREE_GAIN * errors[0] else None


def prior_against_bound_free(facts: Facts) -> tuple[float, float] | None:
    """(coinpress's planned relative covariance error inside the given prior, this route's)
    when both routes can run on these facts — an (ε, δ) budget, unknown mean and covariance,
    practical constants, a prior coinpress accepts (``mean_bound``, ``cov_bounds`` its float64
    frames resolve) and n enough for this route — else None. Both are the coinpress planner's
    predictions (:func:`~privgauss.gaussian.coinpress.planned_covariance_error`: at the
    prior's worst case with coinpress's ρ after its clipped count, as its own check; at the
    localised refinement's prior here), from public facts only, before anything is spent:
    ``auto`` compares them (:func:`bound_free_preferred`; the estimator projects either
    route's release into the prior, so the prior's promise holds both ways)."""
    if (facts.notion != "approx" or facts.known_mean or facts.known_covariance
            or facts.cov_bounds is None or facts.mean_bound is None
            or facts.constants != "practical"):
        return None
    from ..gaussian.clip_diagnostics import COUNT_SHARE
    from ..gaussian.coinpress import planned_covariance_error
    from ..gaussian.coinpress.frames import MAX_PRIOR_CONDITION

    lo, hi = facts.cov_bounds
    if hi / lo > MAX_PRIOR_CONDITION or not enough(facts):
        return None
    rho = zcdp_of(facts.budget, "coinpress") * (1.0 - COUNT_SHARE)
    prior = planned_covariance_error(facts.n, facts.d, rho, float(facts.mean_bound),
                                     (lo, hi), facts.beta, trusted_prior=True)
    return float(prior), planned_error(facts)


def planned_error(facts: Facts) -> float:
    """The refinement's planned relative covariance error at n
    (:func:`~privgauss.gaussian.histogram.refinement_error`; public facts only)."""
    from ..gaussian.histogram import refinement_error

    assert isinstance(facts.budget, ApproxDP)
    return float(refinement_error(facts.n, facts.d, facts.budget.epsilon, facts.budget.delta,
                                  facts.corr_condition))


def enough(facts: Facts) -> bool:
    """Whether this method runs here without refusing: an (ε, δ) budget and n meeting every
    term of its requirement (public facts only)."""
    return facts.notion == "approx" and _enough(facts)


def _check(facts: Facts) -> None:
    if facts.notion != "approx":
        raise PrivacyBudgetError("method='histogram' needs an (epsilon, delta>0) budget")
    if not _enough(facts):  # below it the fit fails after spending, or returns noise
        req = _requirements(facts)
        raise InvalidDataError(
            f"method='histogram' (the bound-free route) needs about n >= {req.n_needed:.0f} "
            f"rows at d = {facts.d} with {facts.budget} (got n = {facts.n}; dominated by its "
            f"{req.dominant}): below that the fit fails after spending, or its covariance is "
            "noise. Nothing "
            "was spent. Give more rows or a larger epsilon; or bounds (mean_bound= and "
            "cov_bounds=, method='coinpress'); or d+1 public rows (public_X=, method='public')"
        )


def _run(job: GaussianJob) -> tuple[np.ndarray, np.ndarray]:
    from ..gaussian.histogram import histogram_gaussian

    facts, budget = job.facts, job.budget
    assert isinstance(budget, ApproxDP)  # _check: an (epsilon, delta > 0) budget
    return histogram_gaussian(
        job.X,
        budget.epsilon,
        budget.delta,
        release=job.release,
        mean_only=job.known is not None,
        cov=job.known,
        beta=facts.beta,
        constants=facts.constants,
        corr_condition=float(facts.corr_condition),
    )


def _tests(facts: Facts) -> dict[str, Callable[[int], bool]]:
    """The requirement's terms, each a public test of n (see :func:`_requirements`)."""
    from ..gaussian.coinpress import PLAN_MAX_ERROR
    from ..gaussian.histogram import localisation_within_cap, refinement_error

    assert isinstance(facts.budget, ApproxDP)
    eps, delta, d = facts.budget.epsilon, facts.budget.delta, facts.d

    def localises(n: int) -> bool:
        return localisation_within_cap(n, d, eps, delta, facts.known_covariance,
                                       facts.constants)

    def refines(n: int) -> bool:
        return refinement_error(n, d, eps, delta, facts.corr_condition) <= PLAN_MAX_ERROR

    tests: dict[str, Callable[[int], bool]] = {"localisation histograms": localises}
    if facts.constants == "practical" and not facts.known_covariance:
        tests["covariance refinement"] = refines
    return tests


def _enough(facts: Facts) -> bool:
    """Whether n meets every term of the requirement (one evaluation each: a fit's check)."""
    return not has_delta(facts.budget) or all(
        test(facts.n) for test in _tests(facts).values())


def _requirements(facts: Facts) -> Any:
    """The n this implementation needs, from its own plan: the smallest n at which the
    localisation's histograms stay below their budget cap (practical: the joint Gaussian
    releases of :func:`~privgauss.gaussian.histogram.localisation_plan`, under half of the
    zCDP budget; theory: the per-axis Laplace histograms of
    :func:`~privgauss.gaussian.histogram.localisation_budget`, under ε/2) and, practical, the
    refinement's planned covariance error
    (:func:`~privgauss.gaussian.histogram.refinement_error`) is at most
    ``PLAN_MAX_ERROR``. Below it the capped thresholds exceed half the expected count
    of the bins the fit needs, or the refinement returns noise: a failure is likely, after
    spending."""
    if not has_delta(facts.budget):
        return None
    from ..gaussian.coinpress import PLAN_MAX_ERROR
    from ..mixture.sample_size import report

    terms = {name: smallest_n(test, start=4) for name, test in _tests(facts).items()}
    return report("histogram", facts.n, terms, facts.constants, {},
                  "its own budget plan: the localisation below its budget cap, and the "
                  f"refinement's planned covariance error at most {PLAN_MAX_ERROR:g}× the "
                  "covariance")


def _plan(facts: Facts) -> BudgetPlan:
    """:func:`~privgauss.gaussian.histogram.histogram_plan`: the localisation's histograms,
    the refinement (one group: its steps are planned from the DP localisation) and the clipped
    count from the refinement's share; a branch when tied axes need the octave release."""
    from ..gaussian.clip_diagnostics import refinement_count_split
    from ..gaussian.histogram import histogram_plan

    assert isinstance(facts.budget, ApproxDP)  # _check: an (epsilon, delta > 0) budget
    return histogram_plan(facts.n, facts.d, facts.budget, known_scale=facts.known_covariance,
                          constants=facts.constants, count_split=refinement_count_split)


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
    plan=_plan,
    auto=_auto,
    auto_rank=4,
    auto_hint="an (epsilon, delta) budget for the bound-free histogram method",
    audit_rows=2000,
    clipped_count="refinement",
)
