"""``pegme`` (mixture): the KSSU19 warm-up (Alg. 1) for spherical, equal-weight, separated
components; only when asked for by name; (ε, δ)-DP (:mod:`privgauss.mixture.pegme`)."""

from __future__ import annotations

import math

from ._mixture import paper_run
from ._record import Method

__all__: list[str] = []

KNOBS = ("rank", "peel_factor", "radii", "max_points")

METHOD = Method(
    name="pegme",
    kind="mixture",
    summary="the KSSU19 warm-up: spherical, equal-weight components",
    needs="spherical, equal-weight, separated components (the KSSU19 warm-up)",
    privacy="(ε, δ)-DP",
    budgets=frozenset({"approx"}),
    run=paper_run("pegme", "pegme", KNOBS, options="PegmeOptions"),
    knobs=KNOBS,
    min_separation=math.inf,
)
