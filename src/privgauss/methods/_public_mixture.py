"""The requirement, public-row count and public-row check shared by ``public-light`` and
``public-heavy``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._record import Facts


def public_mixture_requirements(name: str) -> Callable[[Facts], Any]:
    """``requirements(facts)`` of the public-data mixture method ``name``."""

    def requirements(facts: Facts) -> Any:
        from ..mixture.requirements import public_requirements

        return public_requirements(
            name, n=facts.n, d=facts.d, k=facts.k, budget=facts.budget,
            min_weight=facts.min_weight, beta=float(facts.beta), n_public=facts.n_public,
            constants=facts.formula or "practical",
        )

    return requirements


def fewest_public_rows(name: str) -> Callable[[int, float], int]:
    """``min_public(d, min_weight)`` of the public-data mixture method ``name``."""

    def fewest(d: int, w: float) -> int:
        from ..mixture.public_heavy import min_public_rows

        return min_public_rows(d, w, name)

    return fewest


def min_weight_of(facts: Facts) -> float:
    """The fit's w_min: ``min_weight`` when given, else 1/k (as the learners default it)."""
    return 1.0 / facts.k if facts.min_weight is None else float(facts.min_weight)
