"""The sample-size report shared by the mixture learners' requirement formulas: a
:class:`Requirements` says, from public quantities only, whether n rows can work for a method,
what n it needs and which term dominates. Each learner's module owns its own formula
(:func:`privgauss.mixture.sample_aggregate.practical_terms`,
:func:`privgauss.mixture.kssu_sample_size.practical_terms`, …);
:mod:`privgauss.mixture.requirements`
dispatches by method name."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..privacy import ApproxDP, check_delta
from .one_cluster import DEFAULT_SPLIT as ONE_CLUSTER_SPLIT
from .one_cluster import KINDS as ONE_CLUSTER_KINDS
from .one_cluster import search_floor

__all__ = ["Requirements", "report"]


@dataclass(frozen=True)
class Requirements:
    """Whether n samples can work for ``method`` (from public quantities only).

    ``n_needed`` is the practical threshold (``constants="practical"``) or the theorem value
    (``"theory"``); ``ok`` is ``n >= n_needed``; ``terms`` maps each named requirement to the n
    it needs, ``dominant`` names the largest; ``knobs`` says what else must hold.
    """

    method: str
    n: int
    n_needed: float
    ok: bool
    constants: str
    terms: dict[str, float]
    dominant: str
    knobs: dict[str, Any] = field(default_factory=dict)
    note: str = ""

    def __str__(self) -> str:
        verdict = "enough" if self.ok else "too few"
        return (
            f"{self.method}: n = {self.n} is {verdict}; needs n >~ {self.n_needed:.3g} "
            f"({self.constants} constants; dominated by {self.dominant}). {self.note}"
        )

    def message(self, remedies: tuple[str, ...] = ("a larger budget",)) -> str:
        """A refusal message naming the n (and knobs) needed, and ``remedies``: what else
        lowers it here (the method registry works them out from public facts,
        :func:`privgauss.methods.refusal`)."""
        extra = "".join(f"; {k} {v}" for k, v in self.knobs.items())
        rest = "".join(f", or {r}" for r in remedies)
        return (
            f"method={self.method!r} needs about n >= {self.n_needed:.3g} samples here "
            f"(got n = {self.n}; dominated by {self.dominant}{extra}). Give more data{rest}"
        )


def report(method: str, n: int, terms: dict[str, float], constants: str,
           knobs: dict[str, Any] | None = None, note: str = "") -> Requirements:
    """The :class:`Requirements` of ``terms`` (name → n it needs): the largest dominates."""
    dominant = max(terms, key=lambda key: terms[key])
    need = float(terms[dominant])
    return Requirements(method, int(n), need, bool(n >= need), constants, dict(terms), dominant,
                        dict(knobs or {}), note)


def check_sizes(n: int, d: int, k: int, epsilon: float, delta: float, min_weight: float) -> None:
    if n < 1 or d < 1 or k < 1:
        raise ValueError("n, d and k must be positive integers")
    if not (epsilon > 0):
        raise ValueError("need epsilon > 0 and 0 < delta < 1")
    check_delta(delta, message="need epsilon > 0 and 0 < delta < 1")
    if not (0 < min_weight <= 1.0 / k + 1e-12):
        raise ValueError(f"min_weight must be in (0, 1/k] = (0, {1.0 / k:.4g}]")


def lg(x: float) -> float:
    return math.log(max(x, math.e))


def one_cluster_floor(
    eps: float, delta: float, d: int, beta: float, n_radii: int, split: tuple = ONE_CLUSTER_SPLIT
) -> tuple[float, float]:
    """(Γ of the radius search, τ of the box histogram) of one :func:`one_cluster` call."""
    return search_floor(ApproxDP(eps, delta), ONE_CLUSTER_KINDS, split, (1, 1, d, d), n_radii, beta)
