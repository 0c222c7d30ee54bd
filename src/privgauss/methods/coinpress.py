"""``coinpress`` (Gaussian): CoinPress-style iterative estimation inside a prior — a ball of
radius ``mean_bound`` around ``center`` and, for the covariance, eigenvalue bounds
``cov_bounds``; ρ-zCDP (:mod:`privgauss.gaussian.coinpress`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..exceptions import InvalidDataError
from ._gaussian import GaussianJob, as_rho, prior_radius, whitened_mean
from ._record import Facts, Method, is_pure, zcdp_of

__all__: list[str] = []


def _auto(facts: Facts) -> str | None:
    if is_pure(facts.budget):
        return None
    unused = facts.unused_note
    if facts.known_mean:
        return unused + "known mean and cov_bounds given" if facts.cov_bounds is not None else None
    return unused + "mean_bound (and covariance bounds) given" if facts.has_prior else None


def _check(facts: Facts) -> None:
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
    from ..gaussian.coinpress import _coinpress_gaussian

    return _coinpress_gaussian(
        job.X,
        zcdp_of(job.budget, "coinpress"),
        center=job.center,
        radius=float(facts.mean_bound),  # type: ignore[arg-type]
        cov_bounds=facts.cov_bounds,  # type: ignore[arg-type]
        accountant=job.accountant,
        noise=job.noise,
        constants=facts.constants,
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
    theory_bound=_theory,
    auto=_auto,
    auto_rank=1,
    auto_hint="mean_bound= (and cov_bounds= when the covariance is unknown)",
    run_known_mean=_run_known_mean,
    clipped_count="zcdp",
)
