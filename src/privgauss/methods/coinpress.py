"""``coinpress`` (Gaussian): CoinPress-style iterative estimation inside a prior — a ball of
radius ``mean_bound`` around ``center`` and, for the covariance, eigenvalue bounds
``cov_bounds``; ρ-zCDP (:mod:`privgauss.gaussian.coinpress`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..exceptions import InvalidDataError
from ..mechanisms import Release
from ..privacy import BudgetPlan, as_rho
from ..theory import smallest_n
from ._gaussian import GaussianJob, prior_radius, run_plan, whitened_mean
from ._record import Facts, Method, is_pure, zcdp_of

__all__: list[str] = []



def _auto(facts: Facts) -> str | None:
    if is_pure(facts.budget):
        return None
    unused = facts.unused_note
    if facts.known_mean:
        return unused + "known mean and cov_bounds given" if facts.cov_bounds is not None else None
    if not facts.has_prior:
        return None
    from ..gaussian.coinpress import PLAN_MAX_ERROR
    from .histogram import BOUND_FREE_GAIN, bound_free_preferred, prior_against_bound_free

    preferred = bound_free_preferred(facts)
    if preferred is not None and preferred[0] <= PLAN_MAX_ERROR:
        return None  # the bound-free route plans a clearly smaller error: auto gives way
    # (past PLAN_MAX_ERROR its own check refuses, and auto's reason says so)
    why = unused + "mean_bound (and covariance bounds) given"
    errors = prior_against_bound_free(facts)
    if errors is not None:
        why += (f"; its planned relative covariance error {errors[0]:.3g} is at most "
                f"{1.0 / BOUND_FREE_GAIN:g}× the bound-free route's {errors[1]:.3g}")
    return why


def _check(facts: Facts) -> None:
    _check_width(facts)
    if facts.known_mean:
        if facts.cov_bounds is None:
            raise InvalidDataError("method='coinpress' with a known mean needs cov_bounds=")
        zcdp_of(facts.budget, "method='coinpress'")
        return
    if facts.mean_bound is None:
        raise InvalidDataError("method='coinpress' needs mean_bound= (a radius around center)")
    if not facts.known_covariance and facts.cov_bounds is None:
        raise InvalidDataError(
            "method='coinpress' with an unknown covariance needs cov_bounds=(lo, hi)"
        )
    from ..gaussian.coinpress import PLAN_MAX_ERROR

    error = _planned_error(facts)
    if error is not None and facts.cov_bounds and not error(facts.n) <= PLAN_MAX_ERROR:
        req = _requirements(facts)
        lo, hi = facts.cov_bounds
        raise InvalidDataError(
            f"method='coinpress' cannot promise a covariance inside this prior: with n = "
            f"{facts.n} rows, d = {facts.d}, {facts.budget}, mean_bound = {facts.mean_bound:g} "
            f"and cov_bounds = ({lo:g}, {hi:g}) (a condition number of {hi / lo:.3g}), its plan "
            f"predicts a relative covariance error of {error(facts.n):.3g} when "
            "the truth is the prior's worst case (more than "
            f"{PLAN_MAX_ERROR:g}× the covariance itself). Nothing was spent. Tighten cov_bounds "
            "and mean_bound to what you know, give about n >= "
            f"{req.n_needed:.0f} rows or a larger budget; or, with an (epsilon, delta) budget, "
            "drop the bounds (the bound-free method='histogram')"
        )


def _check_width(facts: Facts) -> None:
    """Refuse, before spending, cov_bounds wider than float64 frames resolve
    (:data:`~privgauss.gaussian.coinpress.frames.MAX_PRIOR_CONDITION`): a truth that
    ill-conditioned would come back wrong without a sign."""
    from ..gaussian.coinpress.frames import MAX_PRIOR_CONDITION

    if facts.cov_bounds is None:
        return
    lo, hi = facts.cov_bounds
    if hi / lo > MAX_PRIOR_CONDITION:
        raise InvalidDataError(
            f"method='coinpress' cannot resolve cov_bounds = ({lo:g}, {hi:g}): a condition "
            f"number of {hi / lo:.3g}, beyond the {MAX_PRIOR_CONDITION:.0e} its float64 "
            "frames resolve (columns about 1e18 standard deviations apart). Nothing was "
            "spent. Tighten cov_bounds to what you know, rescale the columns, or, with an "
            "(epsilon, delta) budget, drop the bounds (the bound-free method='histogram' "
            "standardises each axis first)"
        )


def _planned_error(facts: Facts) -> Callable[[int], float] | None:
    """n ↦ the planner's predicted relative covariance error at the prior's worst case
    (:func:`~privgauss.gaussian.coinpress.planned_covariance_error`), for an unknown mean and
    covariance inside a prior with practical constants; None otherwise."""
    if (facts.known_mean or facts.known_covariance or facts.cov_bounds is None
            or facts.mean_bound is None or facts.constants != "practical"
            or is_pure(facts.budget)):
        return None
    from ..gaussian.clip_diagnostics import COUNT_SHARE
    from ..gaussian.coinpress import planned_covariance_error

    rho = zcdp_of(facts.budget, "method='coinpress'") * (1.0 - COUNT_SHARE)
    R, bounds, d, beta = float(facts.mean_bound), facts.cov_bounds, facts.d, facts.beta
    # the user's cov_bounds: the fit runs with prior_floor, so its route rule trusts the prior
    return lambda n: planned_covariance_error(n, d, rho, R, bounds, beta, trusted_prior=True)


def _requirements(facts: Facts) -> Any:
    """The smallest n at which :func:`_planned_error` is at most
    :data:`~privgauss.gaussian.coinpress.PLAN_MAX_ERROR`. With a loose
    prior on a small table the fit would otherwise return noise silently (breast cancer,
    n = 455, d = 30, ρ = 0.5, cov_bounds (1e-6, 1e10): predicted 8e7)."""
    error = _planned_error(facts)
    if error is None:
        return None
    from ..gaussian.coinpress import PLAN_MAX_ERROR
    from ..mixture.sample_size import report

    need = smallest_n(lambda n: error(n) <= PLAN_MAX_ERROR, start=facts.d + 2)
    return report("coinpress", facts.n, {"covariance plan": need}, "practical", {},
                  "its own plan at the prior's worst case")


def _run(job: GaussianJob) -> tuple[np.ndarray, np.ndarray]:
    facts = job.facts
    if job.known is not None:
        from ..gaussian.coinpress import coinpress_mean

        def mean(X: Any, Xp: np.ndarray | None, center: np.ndarray,
                 bound: float | None) -> np.ndarray:
            assert bound is not None  # _check: coinpress needs mean_bound
            return coinpress_mean(X, center, bound, zcdp_of(job.budget, "coinpress"),
                                  accountant=job.accountant, noise=job.noise)

        return whitened_mean(job, mean)
    from ..gaussian.coinpress import gaussian_of_rows

    return gaussian_of_rows(
        job.X,
        zcdp_of(job.budget, "coinpress"),
        center=job.center,
        radius=float(facts.mean_bound),  # type: ignore[arg-type]
        cov_bounds=facts.cov_bounds,  # type: ignore[arg-type]
        release=Release.of(job.accountant, job.noise),
        constants=facts.constants,
        cover=(),  # the user's prior: directions the clipping shrinks are covered
    )


def _run_known_mean(job: GaussianJob) -> np.ndarray:
    """The covariance of rows with a known mean μ: the whole ρ goes to the covariance
    (CoinPress's known-mean Alg. 2 on the rows x − μ, rescaled so that I ⪯ Σ ⪯ K·I)."""
    from ..clipped_stats import transform_rows
    from ..gaussian.coinpress import coinpress_covariance

    facts = job.facts
    mu = job.known_mean
    assert mu is not None and facts.cov_bounds is not None  # _check: needs cov_bounds
    lo, hi = facts.cov_bounds
    rho = zcdp_of(job.budget, "method='coinpress'")
    Y = transform_rows(job.X, np.full(job.X.shape[1], 1.0 / math.sqrt(lo)), mu)
    cov = coinpress_covariance(Y, rho, cov_upper=hi / lo, accountant=job.accountant,
                               noise=job.noise, beta=facts.beta, constants=facts.constants)
    return cov * lo


def _plan(facts: Facts) -> BudgetPlan:
    """The CoinPress run's ρ as one group (its steps — and the route, sequential, mean-first
    or split — are planned inside it from public quantities), then the clipped count."""
    step = ("coinpress-cov" if facts.known_mean else
            "coinpress-mean" if facts.known_covariance else "coinpress-gaussian")
    return run_plan(facts, METHOD, step, zcdp=True)


def _theory(facts: Facts, alpha: float, cond: float) -> tuple[Any, str]:
    from .. import theory

    return (theory.klsu_n(facts.d, alpha, facts.beta, as_rho(facts.budget),
                          prior_radius(facts, "coinpress"), cond),
            "R and covariance bounds (condition number <= --cond)")


METHOD = Method(
    name="coinpress",
    kind="gaussian",
    summary="CoinPress-style iterative estimation inside a prior",
    needs="a prior ball for the mean and eigenvalue bounds for the covariance",
    privacy="ρ-zCDP",
    budgets=frozenset({"zcdp", "approx"}),
    run=_run,
    prior="required",
    known_covariance="optional",
    known_mean="give cov_bounds=(lo, hi)",
    check=_check,
    requirements=_requirements,
    theory_bound=_theory,
    plan=_plan,
    auto=_auto,
    auto_rank=1,
    auto_hint="mean_bound= (and cov_bounds= when the covariance is unknown)",
    run_known_mean=_run_known_mean,
    clipped_count="zcdp",
)
