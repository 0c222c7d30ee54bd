"""``clip`` (Gaussian): one-shot clip-and-noise mean inside a prior ball, for a known
covariance; ρ-zCDP, (ε, δ)- or pure ε-DP (:func:`privgauss.gaussian.clip_mean.clip_mean`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..exceptions import InvalidDataError
from ..privacy import BudgetPlan, as_rho, is_pure
from ._gaussian import GaussianJob, prior_radius, run_plan, whitened_mean
from ._record import Facts, Method

__all__: list[str] = []


def _auto(facts: Facts) -> str | None:
    if is_pure(facts.budget) and facts.known_covariance and facts.has_prior:
        return "pure epsilon budget and a mean bound"
    return None


def _check(facts: Facts) -> None:
    if facts.mean_bound is None:
        raise InvalidDataError("method='clip' needs mean_bound= (a radius around center)")
    if not facts.known_covariance:
        raise InvalidDataError(
            "method='clip' estimates a mean only: pass covariance='identity' or a known matrix"
        )


def _run(job: GaussianJob) -> tuple[np.ndarray, np.ndarray]:
    from ..gaussian.clip_mean import clip_mean
    from ..gaussian.coinpress import chi_tail_radius

    def mean(X: Any, Xp: np.ndarray | None, center: np.ndarray,
             bound: float | None) -> np.ndarray:
        # the mean lies within `bound` of center, and a row within the chi tail of the mean
        n, d = X.shape
        radius = bound + chi_tail_radius(d, job.facts.beta / n)  # type: ignore[operator]
        return clip_mean(X, center, radius, job.budget,
                         release=job.release)

    return whitened_mean(job, mean)


def _plan(facts: Facts) -> BudgetPlan:
    """One clip-and-noise release of the mean, then the clipped count."""
    return run_plan(facts, METHOD, "clip-mean", group=False)


def _theory(facts: Facts, alpha: float, cond: float) -> tuple[Any, str]:
    from .. import theory

    return (theory.clip_mean_n(facts.d, alpha, facts.beta, as_rho(facts.budget),
                               prior_radius(facts, "clip")), "a known covariance and R")


METHOD = Method(
    name="clip",
    kind="gaussian",
    summary="one-shot clip-and-noise mean inside the prior (also pure ε-DP)",
    needs="a known covariance and a prior ball",
    privacy="ρ-zCDP, (ε, δ) or pure ε",
    budgets=frozenset({"zcdp", "approx", "pure"}),
    run=_run,
    prior="required",
    known_covariance="required",
    check=_check,
    theory_bound=_theory,
    plan=_plan,
    auto=_auto,
    auto_rank=2,
    clipped_count="budget",
)
