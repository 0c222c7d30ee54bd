"""The requirement, public-row count and w_min shared by ``public-light`` and ``public-heavy``:
each passes its own functions of :mod:`privgauss.mixture`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._record import Facts


def public_mixture_requirements(formula: Callable[..., Any]) -> Callable[[Facts], Any]:
    """``requirements(facts)`` of a public-data mixture method from its ``formula``
    (:func:`~privgauss.mixture.requirements.public_heavy_report` or
    :func:`~privgauss.mixture.requirements.public_light_report`)."""

    def requirements(facts: Facts) -> Any:
        return formula(n=facts.n, d=facts.d, k=facts.k, budget=facts.budget,
                       min_weight=facts.min_weight, beta=float(facts.beta),
                       n_public=facts.n_public, constants=facts.formula or "practical")

    return requirements


def min_weight_of(facts: Facts) -> float:
    """The fit's w_min: ``min_weight`` when given, else 1/k (as the learners default it)."""
    return 1.0 / facts.k if facts.min_weight is None else float(facts.min_weight)
