"""``public`` (Gaussian): Bie–Kamath–Singhal public-data estimation — 1 public row suffices for
the mean with a known covariance; d+1 public rows precondition the general case (Alg. 1–2).
No bounds needed; ρ-zCDP (:mod:`privgauss.gaussian.public`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..exceptions import InvalidDataError
from ..privacy import BudgetPlan, as_rho, is_pure, zcdp_of
from ..theory import smallest_n
from ._gaussian import GaussianJob, run_plan, whitened_mean
from ._record import Facts, Method

__all__: list[str] = []


def _need(facts: Facts) -> int:
    """Public rows needed: 1 for the mean with a known covariance, else d+1."""
    return 1 if facts.known_covariance and not facts.known_mean else facts.d + 1


def _auto(facts: Facts) -> str | None:
    m, d = facts.m, facts.d
    if is_pure(facts.budget) or facts.public_unusable:
        return None
    if facts.known_mean:
        return f"known mean; {m} public rows given ({d + 1} needed)" if m >= d + 1 else None
    need = _need(facts)
    return f"{m} public rows given ({need} needed, no bounds used)" if m >= need else None


def _check(facts: Facts) -> None:
    d, m = facts.d, facts.m
    if facts.public_unusable:  # judged from the public rows alone, before spending
        from ..gaussian.public_frame import untrusted_message

        raise InvalidDataError(untrusted_message(facts.verdict))
    if facts.known_mean:
        if m < d + 1:
            raise InvalidDataError(
                f"method='public' needs at least {d + 1} public rows (public_X=) to "
                "precondition the covariance"
            )
        zcdp_of(facts.budget, "method='public'")
        return
    need = _need(facts)
    if m < need:
        raise InvalidDataError(
            f"method='public' needs at least {need} public rows (public_X=)"
            + ("" if facts.known_covariance else " to precondition an unknown covariance")
        )
    if not facts.known_covariance and not is_pure(facts.budget):
        from ..gaussian.public import check_public_plan

        rho = zcdp_of(facts.budget, "method='public'")
        m_in = m if facts.verdict is None else facts.verdict.n_inliers
        check_public_plan(facts.n, d, m_in, rho, float(facts.beta), float(facts.gamma),
                          facts.constants)


def _run(job: GaussianJob) -> tuple[np.ndarray, np.ndarray]:
    facts = job.facts
    if job.known is not None:
        from ..gaussian.public import public_mean

        def mean_identity(X: Any, Xp: np.ndarray | None, center: np.ndarray,
                 bound: float | None) -> np.ndarray:
            return public_mean(X, Xp, zcdp_of(job.budget, "the public-data mean estimator"),
                               release=job.release, beta=facts.beta,
                               constants=facts.constants)

        return whitened_mean(job, mean_identity)
    from ..gaussian.public import (
        check_public_collapse,
        public_gaussian_validated,
        public_jitter,
        public_resolves,
    )

    # the plan was checked by _check: the unchecked runner, then collapse
    rho = zcdp_of(job.budget, "the public-data estimator")
    mean, cov = public_gaussian_validated(
        job.X,
        job.public_X,
        rho,
        release=job.release,
        beta=facts.beta,
        gamma=facts.gamma,
        constants=facts.constants,
    )
    n, beta, gamma = int(job.X.shape[0]), float(facts.beta), float(facts.gamma)
    m_in = facts.m if facts.verdict is None else facts.verdict.n_inliers  # as _check plans
    check_public_collapse(job.public_X, cov, beta, gamma,
                          public_jitter(n, rho, facts.constants),
                          public_resolves(n, m_in, facts.d, rho, beta, gamma, facts.constants))
    return mean, cov


def _run_known_mean(job: GaussianJob) -> np.ndarray:
    """The covariance of rows with a known mean μ: the whole ρ goes to CoinPress's known-mean
    covariance step in the public preconditioner's frame (covariance in [I, K·I])."""
    from ..clipped_stats import transform_rows
    from ..gaussian.coinpress import coinpress_covariance
    from ..gaussian.public_preconditioner import public_preconditioner

    facts = job.facts
    mu = job.known_mean
    assert mu is not None
    rho = zcdp_of(job.budget, "method='public'")
    pre = public_preconditioner(job.public_X, float(facts.beta) / 2, float(facts.gamma))
    Y = transform_rows(job.X, pre.forward_matrix, mu)  # x ↦ F(x − μ)
    cov_y = coinpress_covariance(Y, rho, cov_upper=max(float(pre.K), 1.0),
                                 accountant=job.accountant, noise=job.noise,
                                 beta=float(facts.beta) / 2, constants=facts.constants)
    return pre.backward(np.zeros(len(mu)), cov_y)[1]


def _requirements(facts: Facts) -> Any:
    """The n this implementation needs (unknown covariance, ρ or (ε, δ) budget): the smallest
    n at which the planned whitening chain predicts a relative covariance error of at most
    the target :func:`~privgauss.gaussian.public.check_public_plan` names (0.5), with
    ``facts.n_public`` public rows (d+1 when not stated). None for the mean alone."""
    if facts.known_covariance or is_pure(facts.budget):
        return None
    from ..gaussian.public import (
        PUBLIC_RANGE_FACTOR,
        PUBLIC_TARGET_ERROR,
        public_predicted_error,
    )
    from ..mixture.sample_size import report

    d = facts.d
    m = d + 1 if facts.n_public is None else facts.m
    if m < d + 1:
        return report("public", facts.n, {f"public rows (>= {d + 1})": math.inf}, "practical")
    args = (d, zcdp_of(facts.budget, "method='public'"), float(facts.beta),
            float(facts.gamma), facts.constants)

    def ok(n: int) -> bool:  # check_public_plan's criterion at its target error
        err = public_predicted_error(n, m, *args)
        return err <= PUBLIC_TARGET_ERROR or (
            err <= PUBLIC_RANGE_FACTOR * public_predicted_error(n, m, *args, ideal=True))

    need = smallest_n(ok, start=2)
    term = (f"whitening chain with {m} public rows (predicted covariance error <= "
            f"{PUBLIC_TARGET_ERROR:g})")
    return report("public", facts.n, {term: need}, "practical", {},
                  "its own plan: check_public_plan's target error")


def _plan(facts: Facts) -> BudgetPlan:
    """The public-data run's ρ as one group (its CoinPress steps are planned inside it from
    public quantities), then the clipped count."""
    step = ("coinpress-cov" if facts.known_mean else
            "public-mean" if facts.known_covariance else "public-gaussian")
    return run_plan(facts, METHOD, step, zcdp=True)


def _theory(facts: Facts, alpha: float, cond: float) -> tuple[Any, str]:
    from .. import theory
    from ..privacy import PureDP

    d, budget = facts.d, facts.budget
    rho = as_rho(budget)
    if facts.known_covariance:
        return theory.public_mean_n(d, alpha, facts.beta, rho), "1 public row (known covariance)"
    kw = {"epsilon": budget.epsilon} if isinstance(budget, PureDP) else {"rho": rho}
    return (theory.public_gaussian_n(d, alpha, facts.beta, gamma=facts.gamma, **kw),
            f"{d + 1} public rows")


METHOD = Method(
    name="public",
    kind="gaussian",
    summary="Bie–Kamath–Singhal: public rows give the frame, no bounds needed",
    needs="1 public row (known covariance) or d+1 public rows; no bounds",
    privacy="ρ-zCDP",
    budgets=frozenset({"zcdp", "approx"}),
    run=_run,
    public="required",
    known_covariance="optional",
    known_mean="give public_X with at least {d1} rows",
    check=_check,
    requirements=_requirements,
    theory_bound=_theory,
    plan=_plan,
    auto=_auto,
    auto_rank=0,
    auto_hint="supply public_X (at least {need})",
    run_known_mean=_run_known_mean,
    clipped_count="zcdp",
)
