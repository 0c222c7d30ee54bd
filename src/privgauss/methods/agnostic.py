"""``agnostic`` (mixture): agnostic private density estimation (Afzali–Ashtiani–Liaw) —
candidates from the library's private learners selected by a private tournament
(``constants="theory"``: the faithful list-global-stability route); never chosen by ``auto``;
(ε, δ)-DP (:mod:`privgauss.reductions.agnostic`)."""

from __future__ import annotations

import math
from typing import Any

from ._mixture import reduction_requirements, reduction_run
from ._record import Facts, Method

__all__: list[str] = []


def _requirements(facts: Facts) -> Any:
    # constants="theory" is a different route (the faithful one): its own requirement
    return reduction_requirements("agnostic", facts, facts.formula or facts.constants)


METHOD = Method(
    name="agnostic",
    kind="mixture",
    summary="agnostic reduction: private selection among private learners' candidates",
    needs="no separation assumption; candidates from the private learners",
    privacy="(ε, δ)-DP",
    budgets=frozenset({"approx"}),
    run=reduction_run("run_agnostic"),
    requirements=_requirements,
    min_separation=math.inf,
)
