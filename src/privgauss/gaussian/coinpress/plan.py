"""The public plan of the practical CoinPress Gaussian estimator (:func:`practical_plan`).

Biswas, Dong, Kamath and Ullman, *CoinPress* (NeurIPS 2020), Alg. 1–2, as stages 1–4 of
:func:`~privgauss.gaussian.coinpress.coinpress_gaussian`: coarse whitening steps, a rough mean,
the covariance steps and the final mean, each a :func:`~.cov_plan.covariance_schedule` or
:func:`~.mean_plan.mean_schedule` on a fixed share of ρ (the shares sum to ρ). Public quantities
only (n, d, ρ, the prior, β); the runners charge ``ZCDP(ρ_i)`` per step before drawing noise, so
the estimator is ρ-zCDP under **replace-one** neighbours (n public) for any plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from .cov_plan import CovStep, covariance_schedule, final_cov_error, with_cover_steps
from .mean_plan import MeanStep, check_radii, mean_error_bound, mean_schedule

__all__ = ["FINAL_MEAN_SHARE", "GaussianPlan", "cov_plans", "finite_prior", "practical_plan"]

# Practical Gaussian estimator: shares of ρ for the rough mean, the final mean and the rest
# (the covariance steps).
_ROUGH_MEAN_SHARE = 0.05
FINAL_MEAN_SHARE = 0.20
# At budgets where the last covariance step searches its radius, this share of the final
# mean's ρ goes to cover steps before it (:func:`~.cov_plan.with_cover_steps`): the mean's noise
# is then far below its sampling error (diamonds at ε = 1e4: 0.0004 against 0.005 per whitened
# coordinate), while the last covariance step keeps its whole ρ and so its reach (its radius
# at the noise cap: a row alone in its direction lies √n out in np.cov's frame, 208 there)
_COVER_MEAN_SHARE = 0.5
# Above this ω² (public Mahalanobis bound on the prior centre's offset) the coarse covariance
# steps use pairwise differences instead of rows centred at the prior centre.
_PAIRS_OMEGA2 = 4.0


@dataclass(frozen=True)
class GaussianPlan:
    """The public plans of the practical estimator (stages 1–4 of :func:`coinpress_gaussian`)
    and the planner's predicted squared covariance error (d² + d)(1/n + σ_t²/ℓ_t)."""

    pairs: bool
    s_hi: float
    coarse: tuple[CovStep, ...]
    rough: tuple[MeanStep, ...]
    cov: tuple[CovStep, ...]
    mean: tuple[MeanStep, ...]
    cov_err: float


def _cov_share(final_mean: bool) -> float:
    """Share of ρ for the covariance stages (1 and 3): all but the mean stages'."""
    return 1.0 - _ROUGH_MEAN_SHARE - (FINAL_MEAN_SHARE if final_mean else 0.0)


def cov_plans(n: int, d: int, rho: float, R: float, lo: float, hi: float, omega: float,
               beta: float, prefer_fewer: float, final_mean: bool = True
               ) -> tuple[bool, float, tuple[CovStep, ...], tuple[CovStep, ...], float]:
    """(pairs, s_hi, coarse steps, stage-3 plan, cond3) of the practical estimator."""
    rho_cov = rho * _cov_share(final_mean)
    pairs = omega * omega > _PAIRS_OMEGA2
    if pairs:  # far prior: stage 1 whitens Σ itself from pairwise differences
        s_hi, offset2, n1 = hi, 1.0, n // 2
    else:  # near prior: whiten S = Σ + (μ−c)(μ−c)ᵀ ⪯ (1 + ω²)Σ with all n rows
        s_hi, offset2, n1 = min(hi + R * R, (1.0 + omega * omega) * hi), 1.0 + omega * omega, n
    plan1 = covariance_schedule(n1, d, finite_prior(s_hi / lo), rho_cov, beta=beta,
                                prefer_fewer=prefer_fewer)
    coarse = plan1[:-1]
    lower = plan1[-1].lower
    rho3 = rho_cov - math.fsum(s.rho for s in coarse) if math.isfinite(rho) else math.inf
    cond3 = max(finite_prior(offset2 / lower if coarse else s_hi / lo), 1.0)  # T Σ Tᵀ ⪰ ℓ/offset2
    plan3 = covariance_schedule(n, d, cond3, rho3, beta=beta, prefer_fewer=prefer_fewer)
    return pairs, s_hi, coarse, plan3, cond3


@lru_cache(maxsize=256)
def practical_plan(n: int, d: int, rho: float, R: float, lo: float, hi: float, omega: float,
                    beta: float, prefer_fewer: float, final_mean: bool = True) -> GaussianPlan:
    """Stages 1–4 of the practical estimator; without ``final_mean`` (a *frame* plan, used by
    the split mode) stage 4 is left out and its budget goes to the covariance stages: the
    output is the rough mean and the second moment about it."""
    pairs, s_hi, coarse, plan3, cond3 = cov_plans(n, d, rho, R, lo, hi, omega, beta,
                                                   prefer_fewer, final_mean)
    rho_rough = rho * _ROUGH_MEAN_SHARE
    rho_cov = rho * _cov_share(final_mean)
    rho_mean = rho - rho_cov - rho_rough if math.isfinite(rho) else math.inf
    if final_mean and plan3[-1].search is not None and math.isfinite(rho):
        covered = with_cover_steps(plan3, n, d, rho_mean * _COVER_MEAN_SHARE)
        if covered is not plan3:
            rho_mean -= math.fsum(s.rho for s in covered[len(plan3) - 1 : -1])
            plan3 = covered
    beta_m = min(beta, 0.01)
    # stage 2 prior: ‖T(μ − c)‖ ≤ 1 (near: T S Tᵀ ⪯ I) or ≤ ‖T‖R ≤ R/√lo = ω (far: T Σ Tᵀ ⪯ I)
    rough = mean_schedule(n, d, 1.5 if not pairs else omega, rho_rough, beta=beta_m,
                          debias=False)
    r_t = mean_error_bound(n, d, rough[-1], beta_m)
    # stage 4 prior: ‖B(μ_rough − μ)‖ ≤ r_t ‖B A⁻¹‖ with ‖B A⁻¹‖² ≲ cond3 when the plan holds
    plan4 = (mean_schedule(n, d, finite_prior(r_t * math.sqrt(cond3)), rho_mean, beta=beta_m,
                           search=True) if final_mean else ())
    check_radii(rough, plan4)
    err = final_cov_error(n, d, plan3[-1])
    return GaussianPlan(pairs, s_hi, coarse, rough, plan3, plan4, err)


def finite_prior(x: float) -> float:
    if not math.isfinite(x):
        raise ValueError("the prior (radius, cov_bounds) is too wide for float arithmetic")
    return x
