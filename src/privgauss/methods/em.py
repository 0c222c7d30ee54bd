"""``em`` (mixture): private EM for full-covariance mixtures — no separation assumed; public
rows optional (they set the frame and seed the start; a ρ budget needs d+1 of them or a
prior). ``method="auto"`` runs it unless ``separation=`` states a separation at which a paper
learner was validated and that learner can run; it is the only mixture method that streams
(:mod:`privgauss.mixture.private_em`)."""

from __future__ import annotations

import functools
import re
from typing import Any

from ..privacy import BudgetPlan
from ._mixture import Mixture, MixtureJob, learner_call
from ._record import Facts, Method

__all__: list[str] = []

KNOBS = ("n_steps",)


def _requirements(facts: Facts) -> Any:
    from ..mixture.private_em import em_requirements

    return em_requirements(facts.n, facts.d, facts.k, facts.budget,
                           min_weight=facts.min_weight, n_public=facts.m,
                           prior=facts.mean_bound is not None)


def _check(facts: Facts) -> None:
    from ..mixture.private_em import check_em_inputs

    check_em_inputs(facts.d, facts.k, facts.budget, facts.m, facts.mean_bound is not None)


def _fallback(facts: Facts, req: Any) -> str:
    seeded = ("; public rows set the frame and seed the start" if facts.m >= facts.d + 1 else
              "; localised inside the prior (mean_bound=, cov_bounds=)"
              if facts.mean_bound is not None else "")
    return f"private EM, no separation assumed (needs n >~ {req.n_needed:.3g}){seeded}"


# em_plan's part names → the steps the fit's ledger records (format fields: T, the EM steps,
# K, the k-means steps); a part not listed is recorded as "em <part>"
_STEP_NAMES = (
    (r"re-whitening moments", "em re-whitening second moments"),
    (r"re-whitening statistics", "em re-whitening statistics"),
    (r"start", "em start histogram"),
    (r"start k-means step (\d+) (counts|sums)", "em start k-means step \\1/{K} \\2"),
    (r"start k-means moments", "em start k-means second moments"),
    (r"start k-means step (\d+) statistics", "em start k-means step \\1/{K} statistics"),
    (r"step (\d+)( run \d+)? counts", "em step \\1/{T}\\2 soft counts"),
    (r"step (\d+)( run \d+)? sums", "em step \\1/{T}\\2 weighted sums"),
    (r"step (\d+)( run \d+)? moments", "em step \\1/{T}\\2 weighted second moments"),
    (r"step (\d+)( run \d+)? statistics", "em step \\1/{T}\\2 soft statistics"),
)
_GROUPS = ("em localisation in the prior",)  # CoinPress inside the prior: its own steps


@functools.lru_cache(maxsize=4096)
def _step_name(part: str, T: int, K: int) -> str:
    for pattern, name in _STEP_NAMES:
        if re.fullmatch(pattern, part):
            return re.sub(pattern, name, part).format(T=T, K=K)
    return f"em {part}"


def _plan(facts: Facts) -> BudgetPlan:
    """:func:`~privgauss.mixture.private_em.em_plan`, the plan the fit spends from, named as
    its ledger records it; the bound-free localisation is
    :func:`~privgauss.gaussian.histogram.histogram_plan` at em's localisation budget (its
    refinement one group, and its tied-axes branch)."""
    from ..gaussian.histogram import histogram_plan
    from ..mixture.private_em import em_plan

    steps = facts.knobs.get("n_steps")
    n = max(facts.n, 2)
    plan = em_plan(n, facts.d, facts.k, facts.budget, n_public=facts.m,
                   n_steps=None if steps is None else int(steps),
                   prior=facts.mean_bound is not None)
    T, K = plan.n_steps, len(plan.rho_kmeans_steps)
    tail = {_step_name(p, T, K): b for p, b in plan.parts() if not p.startswith("localisation ")
            or p == "localisation in the prior"}
    groups = [g for g in _GROUPS if g in tail]
    if plan.localisation is None:
        return BudgetPlan.of(facts.budget, tail, groups=groups)
    if plan.diagonal:
        return _diagonal_plan(facts, plan, tail, groups)
    local = histogram_plan(n, facts.d, plan.localisation)  # em runs the practical route

    def with_head(head: BudgetPlan) -> BudgetPlan:
        return BudgetPlan.of(facts.budget, {**dict(head.parts), **tail},
                             groups=[*groups, *head.groups])

    head = with_head(local)
    return BudgetPlan.of(facts.budget, dict(head.parts), groups=head.groups,
                         branches=[with_head(b) for b in local.branches])


def _diagonal_plan(facts: Facts, plan: Any, tail: dict[str, Any], groups: list[str]
                   ) -> BudgetPlan:
    """The plan of em's diagonal frame (``EMPlan.diagonal``): the joint histograms of
    ``localisation_plan`` at ``plan.localisation``, the octave release of wide axes between
    them and of tied axes after them when the released histograms call for them (a DP
    output: the branches), and whatever of their reserve they leave spent by the last EM
    step (``EMPlan.with_unspent``)."""
    from ..gaussian.histogram import localisation_plan
    from ..privacy import ZCDP, ApproxDP
    from ..privacy.budgets import MIN_EPS

    loc = plan.localisation
    s_j, l_j, _ = localisation_plan(max(facts.n, 2), facts.d, loc.epsilon, loc.delta)
    assert s_j is not None  # the scale is not known: both joint releases run
    tie, wide = plan.octave_rhos()
    T, K = plan.n_steps, len(plan.rho_kmeans_steps)

    def branch(w: bool, t: bool) -> BudgetPlan:
        parts: dict[str, Any] = {"localise-scale-axes": ZCDP(s_j.rho),
                                 "localise-scale-axes (delta)": ApproxDP(MIN_EPS, s_j.delta)}
        if w:
            parts["localise-wide"] = ZCDP(wide)
        parts["localise-axes"] = ZCDP(l_j.rho)
        parts["localise-axes (delta)"] = ApproxDP(MIN_EPS, l_j.delta)
        if t:
            parts["localise-ties"] = ZCDP(tie)
        rest = dict(tail)
        last = plan.with_unspent((0.0 if w else wide) + (0.0 if t else tie))
        for part, cost in last.step_parts(T - 1):
            rest[_step_name(part, T, K)] = cost
        return BudgetPlan.of(facts.budget, {**parts, **rest}, groups=groups)

    main = branch(False, False)
    return BudgetPlan.of(facts.budget, dict(main.parts), groups=main.groups,
                         branches=[branch(True, False), branch(False, True), branch(True, True)])


def _prior(job: MixtureJob) -> Any:
    """The user's prior as an :class:`~privgauss.mixture.private_em.EMPrior` (public; None
    without ``mean_bound``; the estimator checked it before anything was spent)."""
    facts = job.facts
    if facts.mean_bound is None:
        return None
    from ..mixture.private_em import EMPrior

    assert facts.cov_bounds is not None  # mean_bound= and cov_bounds= come together
    return EMPrior(job.center, facts.mean_bound, facts.cov_bounds)


def _run(job: MixtureJob) -> Mixture:
    from ..mixture.private_em import private_em_gmm

    # public rows optional: passed through (None without them); the user's prior (None
    # without mean_bound=) goes to the learner
    return learner_call(private_em_gmm, job, public=True, **job.knobs(KNOBS), prior=_prior(job))


METHOD = Method(
    name="em",
    kind="mixture",
    summary="private EM: no separation assumed; what `auto` runs unless `separation=` is stated",
    needs="nothing but a budget (ρ needs d+1 public rows or a prior); overlapping clusters",
    privacy="(ε, δ)-DP or ρ-zCDP",
    budgets=frozenset({"zcdp", "approx"}),
    run=_run,
    public="optional",
    check=_check,
    requirements=_requirements,
    plan=_plan,
    knobs=KNOBS,
    # assumes no separation: auto's default (fallback=), run unless separation= states one at
    # which a paper learner was validated and that learner can run, and when a public
    # clustering refuses the public rows
    min_separation=0.0,
    fallback=_fallback,
    streams=True,
)
