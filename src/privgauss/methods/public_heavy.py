"""``public-heavy`` (mixture): Bie–Kamath–Singhal Alg. 9–10 with ≥ 2(d+1)/w_min public rows —
clustering on the public rows alone (free), then per cluster d+1-sample public
preconditioning + CoinPress; ρ-zCDP or (ε, δ)-DP (:mod:`privgauss.mixture.public_heavy`)."""

from __future__ import annotations

from typing import Any

from ..privacy import BudgetPlan, zcdp_of
from ._mixture import Mixture, MixtureJob, learner_call, learner_plan
from ._public_mixture import min_weight_of, public_mixture_requirements
from ._record import Facts, Method

__all__: list[str] = []

KNOBS = ("count_share",)

def _plan(facts: Facts) -> BudgetPlan:
    """:func:`~privgauss.mixture.public_heavy.heavy_plan` of the budget's ρ, for the
    estimator the constants pick: the counts, then the estimation steps."""
    from ..mixture.public_heavy import COUNT_SHARE, heavy_plan, pick_estimator

    share = float(facts.knobs.get("count_share", COUNT_SHARE))
    plan = heavy_plan(zcdp_of(facts.budget, "public-heavy"), share,
                      pick_estimator(None, facts.constants))
    return learner_plan(facts, plan, "public-heavy")


def _min_public(d: int, min_weight: float) -> int:
    """The fewest public rows it accepts
    (:func:`~privgauss.mixture.public_heavy.min_public_rows`)."""
    from ..mixture.public_heavy import min_public_rows

    return min_public_rows(d, min_weight)


def _report(**facts: Any) -> Any:
    """Its requirement (:func:`~privgauss.mixture.requirements.public_heavy_report`)."""
    from ..mixture.requirements import public_heavy_report

    return public_heavy_report(**facts)


def _check_public(facts: Facts, public: Any) -> None:
    """Refuses, from the public rows alone, those its public clustering cannot use
    (:func:`~privgauss.mixture.public_heavy.check_public_clustering`)."""
    from ..mixture.public_heavy import check_public, check_public_clustering, min_public_rows

    w = min_weight_of(facts)
    P = check_public(public, facts.d, facts.k, w, "public-heavy", min_public_rows(facts.d, w))
    check_public_clustering(P, facts.n, facts.k, w, float(facts.beta), facts.constants)


def _run(job: MixtureJob) -> Mixture:
    from ..mixture.public_heavy import public_heavy_gmm

    return learner_call(public_heavy_gmm, job, public=True, **job.knobs(KNOBS))


METHOD = Method(
    name="public-heavy",
    kind="mixture",
    summary="BKS22 Alg. 9–10: public clustering, then per-cluster preconditioned CoinPress",
    needs="O(d log(k/β)/w_min) public rows; separated components (validated at ratio ≥ 6: "
    "`auto` runs it only with `separation=` ≥ 6)",
    privacy="ρ-zCDP or (ε, δ)-DP",
    budgets=frozenset({"zcdp", "approx"}),
    run=_run,
    public="required",
    min_public=_min_public,
    check_public=_check_public,
    requirements=public_mixture_requirements(_report),
    plan=_plan,
    knobs=KNOBS,
    # the separation ratio it was measured at (benchmarks/results/public_mixtures*.md)
    min_separation=6.0,
)
