"""``public-light`` (mixture): Bie–Kamath–Singhal Alg. 3–7 with ≥ 4/w_min public rows — public
superclustering, private PCA and a privately confirmed public split, then per-cluster
CoinPress; ρ-zCDP or (ε, δ)-DP (:mod:`privgauss.mixture.public_light`)."""

from __future__ import annotations

from typing import Any

from ..privacy import BudgetPlan, zcdp_of
from ._mixture import Mixture, MixtureJob, learner_call, learner_plan
from ._public_mixture import min_weight_of, public_mixture_requirements
from ._record import Facts, Method

__all__: list[str] = []

KNOBS = ("cond_range", "clustering_share")

def _plan(facts: Facts) -> BudgetPlan:
    """:func:`~privgauss.mixture.public_light.run_plan` of the budget's ρ: the clustering
    iterations, then the estimation."""
    from ..mixture.public_light import run_plan

    share = facts.knobs.get("clustering_share")
    plan = run_plan(zcdp_of(facts.budget, "public-light"), facts.k, facts.constants,
                    None if share is None else float(share))
    return learner_plan(facts, plan, "public-light")


def _min_public(d: int, min_weight: float) -> int:
    """The fewest public rows it accepts
    (:func:`~privgauss.mixture.public_light.min_public_rows`)."""
    from ..mixture.public_light import min_public_rows

    return min_public_rows(d, min_weight)


def _report(**facts: Any) -> Any:
    """Its requirement (:func:`~privgauss.mixture.requirements.public_light_report`)."""
    from ..mixture.requirements import public_light_report

    return public_light_report(**facts)


def _check_public(facts: Facts, public: Any) -> None:
    """Refuses, from the public rows alone, those on which its public split cannot end with k
    clusters (:func:`~privgauss.mixture.public_light.check_public_clusters`)."""
    from ..mixture.public_heavy import check_public
    from ..mixture.public_light import check_public_clusters, min_public_rows

    w = min_weight_of(facts)
    P = check_public(public, facts.d, facts.k, w, "public-light", min_public_rows(facts.d, w))
    check_public_clusters(P, facts.k, w, facts.constants)


def _run(job: MixtureJob) -> Mixture:
    from ..mixture.public_light import LightOptions, public_light_gmm

    return learner_call(public_light_gmm, job, public=True,
                        options=LightOptions(**job.knobs(KNOBS)))


METHOD = Method(
    name="public-light",
    kind="mixture",
    summary="BKS22 Alg. 3–7: public superclustering, private PCA and split, then CoinPress",
    needs="O(log(k/β)/w_min) public rows; separated components (validated at ratio ≥ 6: "
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
    auto_note=" (too few for 'public-heavy' or its n requirement not met)",
)
