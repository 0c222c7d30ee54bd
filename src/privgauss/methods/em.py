"""``em`` (mixture): private EM for full-covariance mixtures — no separation assumed; public
rows optional (they set the frame and seed the start; a ρ budget needs d+1 of them or a
prior). ``method="auto"`` runs it unless ``separation=`` states a separation at which a paper
learner was validated and that learner can run; it is the only mixture method that streams
(:mod:`privgauss.mixture.private_em`)."""

from __future__ import annotations

from typing import Any

from ..privacy import Budget
from ._mixture import learner_run
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


def _plan(facts: Facts) -> tuple[tuple[str, Budget], ...]:
    from ..mixture.private_em import em_plan

    steps = facts.knobs.get("n_steps")
    plan = em_plan(max(facts.n, 2), facts.d, facts.k, facts.budget, n_public=facts.m,
                   n_steps=None if steps is None else int(steps),
                   prior=facts.mean_bound is not None)
    return tuple(plan.parts())


_learn = learner_run("private_em", "private_em_gmm", KNOBS, public=True)


def _run(est: Any, X: Any, public_X: Any, budget: Budget, acct: Any, noise: Any,
         info: dict[str, Any]) -> Any:
    # public rows optional: passed through (None without them); the user's prior (an EMPrior,
    # None without mean_bound=) goes to the learner
    return _learn(est, X, public_X, budget, acct, noise, info,
                  prior=est._em_prior(int(X.shape[1])))


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
