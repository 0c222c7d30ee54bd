"""``sample-aggregate`` (mixture): KSSU19 §6 — a non-private learner on disjoint chunks,
private 1-cluster aggregation of the chunk means, then per-part CoinPress estimation;
(ε, δ)-DP (:mod:`privgauss.mixture.sample_aggregate`)."""

from __future__ import annotations

from typing import Any

from ._mixture import learner_run, paper_requirements
from ._record import Facts, Method

__all__: list[str] = []

KNOBS = ("n_chunks", "learner", "radii", "peel_factor", "t_fraction", "box_factor",
         "max_points")


def _requirements(facts: Facts) -> Any:
    return paper_requirements("sample-aggregate", facts, constants=facts.formula or "practical")


METHOD = Method(
    name="sample-aggregate",
    kind="mixture",
    summary="KSSU19 sample-and-aggregate: a non-private learner on chunks, private aggregation",
    needs="separated components (ratio ≳ 3); large n",
    privacy="(ε, δ)-DP",
    budgets=frozenset({"approx"}),
    run=learner_run("sample_aggregate", "sample_aggregate_gmm", KNOBS),
    requirements=_requirements,
    knobs=KNOBS,
    min_separation=3.0,
)
