"""``ppe`` (mixture): the Private Populous Estimator (Arbas–Ashtiani–Liaw) — the practical
stable-average PPE for k = 1, the faithful mixture PPE (EM per block, masking) for k ≥ 2;
never chosen by ``auto``; (ε, δ)-DP (:mod:`privgauss.reductions.ppe_gaussian`)."""

from __future__ import annotations

import math
from typing import Any

from ._mixture import reduction_requirements, reduction_run
from ._record import Facts, Method

__all__: list[str] = []


def _requirements(facts: Facts) -> Any:
    return reduction_requirements("ppe", facts, facts.formula or "practical")


METHOD = Method(
    name="ppe",
    kind="mixture",
    summary="Private Populous Estimator: any non-private learner made private",
    needs="any non-private learner; a large n",
    privacy="(ε, δ)-DP",
    budgets=frozenset({"approx"}),
    run=reduction_run("run_ppe"),
    requirements=_requirements,
    min_separation=math.inf,
)
