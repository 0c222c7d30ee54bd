"""CoinPress-style iterative Gaussian estimation inside a public prior (ρ-zCDP).

Biswas, Dong, Kamath and Ullman, *CoinPress: Practical Private Mean and Covariance Estimation*
(NeurIPS 2020) — the practical stand-in for the KLSU19 learner that Bie–Kamath–Singhal (2022,
Alg. 2, spec ``public-data.md`` E1/E1′) call with range parameters (R, K).

Privacy: every function here is ρ-zCDP for the rows of ``X`` under **replace-one** neighbours
(n is public). Each step clips to a ball whose radius is computed *before* any data is read,
from public quantities only (n, d, ρ, the prior, β and the step index), releases a clipped
statistic with the Gaussian mechanism (sensitivity from :mod:`privgauss.sensitivity`), and
charges ``ZCDP(ρ·f_i)`` to the accountant before drawing its noise; the fractions f_i sum to 1
(the last is ``1 − sum(others)``). Step counts, splits and planned radii are therefore the same
for all datasets of a given size — :func:`mean_schedule` and :func:`covariance_schedule` return
them (:mod:`.plan` holds all public planning; this module runs the plans on data).
At large budgets a practical step's plan may include a *radius search*
(:mod:`.radius_search`): a fixed number of noisy counts, charged within the step's ρ·f_i,
that may grow its radius from the data before the statistic is released at the radius found
(a DP output, so its sensitivity is public).

``constants="theory"`` reproduces CoinPress's published recipe (Laurent–Massart tail bound γ at
β, clip radius ``min(sqrt(r²+6r+γ²), r+γ)``, t = 2 with ``[1/4, 3/4]``, covariance ridge
``η = (2√(d/n) + d/n)/2``). ``"practical"`` (default) chooses the number of steps and the split
by minimising a predicted error over a public grid, uses exact χ quantiles, and (mean) may clip
the last step inside the bulk of the data and undo the resulting shrinkage under the Gaussian
model; its covariance is the last release pooled with the whitening chain's earlier ones,
each mapped into the last frame and weighted by its mapped noise (post-processing). **Privacy
never depends on the choice**; only accuracy does.

Large data (n·d ≥ 2^20): the practical Gaussian estimator may run in a *split mode* — a public
random subset of m rows fits a coarse frame, one pass over the final rows releases clipped first
and second moments in that frame (:mod:`.split_mode`: parallel composition with the whole ρ
on each part, or a ρ split with the final pass on all rows). The planner uses it only when its
predicted covariance error is within 1 % of the sequential plan's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...backends import as_rows
from ...clipped_stats import Rows
from ...exceptions import InvalidDataError
from ...mechanisms import Release
from ...noise import RandomState
from ...privacy import Accountant, check_accountant, check_rho, reserve_rho
from ..clip_diagnostics import take_count_share
from . import split_mode as sm
from .cov_plan import covariance_schedule
from .mean_plan import check_radii, mean_schedule
from .plan import finite_prior, practical_plan
from .schedule import check_beta, check_constants
from .steps import run_cov, run_mean, run_practical, whitener

__all__ = [
    "PLAN_MAX_ERROR",
    "GaussianPrior",
    "coinpress_covariance",
    "coinpress_gaussian",
    "coinpress_mean",
    "gaussian_of_rows",
    "mean_of_rows",
    "planned_covariance_error",
    "run_gaussian",
]


# ----------------------------------------------------------------------------------------------
# Mean
# ----------------------------------------------------------------------------------------------


def _check_center(center: Any, d: int) -> np.ndarray:
    c = np.array(center, dtype=np.float64).reshape(-1)
    if c.shape != (d,):
        raise InvalidDataError(f"center must have shape ({d},), got {c.shape}")
    if not np.isfinite(c).all():
        raise InvalidDataError("center contains NaN or infinite values")
    return c


def _check_radius(radius: Any, name: str = "radius") -> float:
    r = float(radius)
    if not (r >= 0 and math.isfinite(r)):
        raise ValueError(f"{name} must be finite and >= 0")
    return r


def coinpress_mean(
    X: Any,
    center: Any,
    radius: float,
    rho: float,
    *,
    accountant: Accountant,
    noise: RandomState = None,
    steps: int | None = None,
    fractions: Any = None,
    beta: float = 0.01,
    constants: str = "practical",
    debias: bool = False,
) -> np.ndarray:
    """ρ-zCDP mean of rows ~ N(μ, I) with the public prior ‖μ − center‖ ≤ ``radius``.

    Biswas–Dong–Kamath–Ullman 2020, Alg. 1 (iterated clip-and-noise: each step clips to
    B(c, τ_i), adds N(0, σ_i² I) with L2 sensitivity 2τ_i/n (replace-one, n public) and σ_i =
    (2τ_i/n)/√(2ρ_i), and shrinks the public radius). The plan (steps, split ρ_i = ρ f_i, τ_i)
    is :func:`mean_schedule` — public, the same for every dataset. Callers whiten: the
    guarantee is privacy for any X; the accuracy assumes identity covariance.

    ``debias`` (practical only) lets the planner clip the last step inside the bulk and undo
    the shrinkage under the Gaussian model: more accurate on Gaussian data, biased on skewed
    columns (a 0/1 flag with p = 0.1: 0.17 standard deviations), so off by default. Its
    ledger steps are named "coinpress-mean …" (:func:`mean_of_rows` names them from a
    release context).
    """
    return mean_of_rows(as_rows(X), center, radius, rho,
                        release=Release.of(accountant, noise, "coinpress-mean"), steps=steps,
                        fractions=fractions, beta=beta, constants=constants, debias=debias)


def mean_of_rows(
    X: Any,
    center: Any,
    radius: float,
    rho: float,
    *,
    release: Release,
    steps: int | None = None,
    fractions: Any = None,
    beta: float = 0.01,
    constants: str = "practical",
    debias: bool = False,
) -> np.ndarray:
    """:func:`coinpress_mean` on rows already validated by
    :func:`~privgauss.backends.as_rows`, charged to ``release`` (its steps named under its
    step, "coinpress-mean" when it has none)."""
    n, d = int(X.shape[0]), int(X.shape[1])
    c = _check_center(center, d)
    radius = _check_radius(radius)
    accountant = check_accountant(release.accountant)
    rho = check_rho(rho)
    fr = None if fractions is None else tuple(float(f) for f in fractions)
    reserve_rho(accountant, rho)
    rho = take_count_share(rho)  # a fit's diagnostics may set 2 % aside (clip_diagnostics)
    plan = mean_schedule(
        n, d, radius, rho, steps=steps, fractions=fr, beta=beta, constants=constants,
        debias=bool(debias),
    )
    check_radii(plan)
    return run_mean(Rows(X), c, plan, release.named("coinpress-mean"))


# ----------------------------------------------------------------------------------------------
# Covariance
# ----------------------------------------------------------------------------------------------


def coinpress_covariance(
    X: Any,
    rho: float,
    *,
    cov_upper: float,
    accountant: Accountant,
    noise: RandomState = None,
    steps: int | None = None,
    fractions: Any = None,
    beta: float = 0.1,
    constants: str = "practical",
    step: str = "coinpress-cov",
) -> np.ndarray:
    """ρ-zCDP covariance of rows ~ N(0, Σ) with the public bounds I ⪯ Σ ⪯ ``cov_upper``·I.

    Biswas–Dong–Kamath–Ullman 2020, Alg. 2: A₀ = I/√cov_upper; each step clips the rows of
    X Aᵀ to a public radius, adds symmetric Gaussian noise to the clipped second moment
    (Frobenius sensitivity √2 τ²/n under replace-one, n public), projects to PSD and re-whitens.
    Plan (steps, split, radii, ridges): :func:`covariance_schedule` with cond = cov_upper —
    public. Callers rescale so that the lower bound is 1. ``practical`` returns the last
    release pooled with the chain's earlier ones (post-processing; see
    :func:`~privgauss.gaussian.coinpress.steps.run_cov`); ``theory`` the last release alone,
    as the paper.
    """
    X = as_rows(X)
    n, d = int(X.shape[0]), int(X.shape[1])
    u = float(cov_upper)
    if not (u >= 1 and math.isfinite(u)):
        raise ValueError("cov_upper must be finite and >= 1 (rescale X so that I ⪯ Σ)")
    accountant = check_accountant(accountant)
    rho = check_rho(rho)
    fr = None if fractions is None else tuple(float(f) for f in fractions)
    plan = covariance_schedule(
        n, d, u, rho, steps=steps, fractions=fr, beta=beta, constants=constants
    )
    reserve_rho(accountant, rho)
    A0 = np.eye(d) / math.sqrt(u)
    _, cov = run_cov(Rows(X), A0, plan, Release.of(accountant, noise, step),
                     pool=constants != "theory")
    assert cov is not None
    return cov


# ----------------------------------------------------------------------------------------------
# Unknown mean and covariance
# ----------------------------------------------------------------------------------------------


def _check_bounds(cov_bounds: Any) -> tuple[float, float]:
    try:
        lo, hi = (float(x) for x in cov_bounds)
    except (TypeError, ValueError):
        raise ValueError("cov_bounds must be a pair (lo, hi) of eigenvalue bounds") from None
    if not (0 < lo <= hi and math.isfinite(hi)):
        raise ValueError("cov_bounds must satisfy 0 < lo <= hi < inf")
    return lo, hi


def coinpress_gaussian(
    X: Any,
    rho: float,
    *,
    center: Any,
    radius: float,
    cov_bounds: tuple[float, float],
    accountant: Accountant,
    noise: RandomState = None,
    constants: str = "practical",
    beta: float = 0.1,
    mahalanobis_radius: float | None = None,
    prior_floor: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """ρ-zCDP estimate (mean, covariance) of rows ~ N(μ, Σ) with the public prior
    ‖μ − center‖ ≤ ``radius`` and lo·I ⪯ Σ ⪯ hi·I (``cov_bounds``). Replace-one, n public.

    ``practical`` (default), four stages, with the split
    ρ = ρ_cov (3/4) + ρ_rough (1/20) + ρ_mean (the rest, 1/5):

    1. coarse covariance steps giving a whitening transform T. Near prior (ω² ≤ 4, where
       ω = ``mahalanobis_radius`` is a public bound on ‖Σ^{-1/2}(μ − c)‖, default R/√lo):
       all n rows centred at the public centre, whose second moment S = Σ + (μ−c)(μ−c)ᵀ
       lies between lo·I and min(hi + R², (1 + ω²)hi)·I, so T S Tᵀ ⪯ I puts the mean within
       1 of Tc whatever R was. Far prior: the ⌊n/2⌋ pairwise differences
       (X_{2j} − X_{2j−1})/√2 ~ N(0, Σ) (used for these cheap steps only);
    2. a rough mean (covering clips) of the T-whitened rows;
    3. the rest of the covariance plan on all n rows centred at that mean (the centring
       error is second order), starting from T;
    4. the final mean of rows whitened by the DP covariance, prior radius from stage 2's
       public error bound.

    Stages 1 and 3 share ρ_cov by :func:`covariance_schedule`'s planner; all plans are
    functions of (n, d, ρ, R, lo, hi, ω, β) only. ``prior_floor`` (default): lo is a prior
    the data satisfy, so no whitening frame magnifies a direction past 1/√lo (each frame's
    release is projected onto {Σ ⪰ lo·I}, post-processing): a constant or near-constant
    column — a direction of variance far below lo — keeps an accurate mean and leaves the
    other coordinates' estimates as they were; its variance comes out near lo. Callers whose
    lo is an assumption they check afterwards (the bound-free methods) turn it off. ``theory``: the
    classic reduction — CoinPress covariance on the ⌊n/2⌋ pairwise differences
    (X_{2j} − X_{2j−1})/√2 with ρ/2, then CoinPress mean (t = 2) on rows whitened by it with ρ/2.
    Its ledger steps are named "coinpress-gaussian …" (:func:`gaussian_of_rows` names them
    from a release context).
    """
    X = as_rows(X, min_rows=2)
    return gaussian_of_rows(X, rho, center=center, radius=radius, cov_bounds=cov_bounds,
                            release=Release.of(accountant, noise, "coinpress-gaussian"),
                            constants=constants, beta=beta,
                            mahalanobis_radius=mahalanobis_radius, prior_floor=prior_floor)


def gaussian_of_rows(
    X: Any,
    rho: float,
    *,
    center: Any,
    radius: float,
    cov_bounds: tuple[float, float],
    release: Release,
    constants: str = "practical",
    beta: float = 0.1,
    mahalanobis_radius: float | None = None,
    prior_floor: bool = True,
    cover: tuple[int, ...] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`coinpress_gaussian` on rows already validated by
    :func:`~privgauss.backends.as_rows` (numpy, not copied, or dask), charged to ``release``
    (its steps named under its step, "coinpress-gaussian" when it has none). ``cover`` (the
    single-Gaussian method inside the user's prior, and the bound-free route's refinement;
    None: off): directions the chain's clipping shrinks are covered before its last
    covariance step (:mod:`.direction_cover`; its counts come out of that step's ρ, only when
    a direction is flagged), and the columns it lists (public or DP outputs) are searched
    whatever the check says."""
    check_constants(constants)
    d = int(X.shape[1])
    c = _check_center(center, d)
    R = _check_radius(radius)
    lo, hi = _check_bounds(cov_bounds)
    accountant = check_accountant(release.accountant)
    rho = check_rho(rho)
    beta = check_beta(beta)
    omega = R / math.sqrt(lo)
    if mahalanobis_radius is not None:
        omega = min(omega, _check_radius(mahalanobis_radius, "mahalanobis_radius"))
    reserve_rho(accountant, rho)
    return run_gaussian(Rows(X, center=c), rho, GaussianPrior(c, R, lo, hi, omega),
                        release.named("coinpress-gaussian"), constants, beta,
                        prior_floor=prior_floor, cover=cover is not None,
                        cover_columns=() if cover is None else tuple(cover))


@dataclass(frozen=True)
class GaussianPrior:
    """A validated public prior on N(μ, Σ): ‖μ − ``center``‖ ≤ ``radius``,
    ``lo``·I ⪯ Σ ⪯ ``hi``·I and ‖Σ^{-1/2}(μ − ``center``)‖ ≤ ``omega`` (the Mahalanobis
    radius, at most radius/√lo). Public: every plan is a function of it, n, d, ρ and β."""

    center: np.ndarray
    radius: float
    lo: float
    hi: float
    omega: float


def run_gaussian(
    rows: Rows,
    rho: float,
    prior: GaussianPrior,
    release: Release,
    constants: str,
    beta: float,
    prefer_fewer: float = 0.0,
    info: dict[str, Any] | None = None,
    prior_floor: bool = False,
    cover: bool = False,
    cover_columns: tuple[int, ...] = (),
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`coinpress_gaussian` on validated rows (finite, |x| ≤ 1e150) inside the public
    ``prior``. Every plan is
    computed (from public quantities) before anything is spent. ``prefer_fewer``: see
    :func:`covariance_schedule` (used when the range parameters are known, e.g. public data).
    Large data (n·d ≥ 2^20) may run in split mode (:mod:`.split_mode`) when the planner
    predicts the same accuracy; ``info`` (tests) receives its public split and sub-ledgers.
    ``prior_floor``: see :func:`coinpress_gaussian`; ``cover`` (on or off) and
    ``cover_columns``: see :func:`gaussian_of_rows`'s ``cover``
    (sequential and mean-first routes). Charged to ``release``, its steps named under its
    step."""
    n, d = rows.n, rows.d
    c, R, lo, hi, omega = prior.center, prior.radius, prior.lo, prior.hi, prior.omega
    rho = take_count_share(rho)  # a fit's diagnostics may set 2 % aside (clip_diagnostics)
    if constants == "theory":
        return _gaussian_theory(rows, rho, c, R, lo, hi, release, beta)
    args = (d, rho, R, lo, hi, omega, beta, prefer_fewer)
    plan = practical_plan(n, *args)
    from . import mean_first as mf  # it calls this module's estimators

    # small n·ρ: the sequential chain eats ρ
    if mf.use_mean_first(n, d, plan.cov_err, rho, R, (lo, hi), trusted_prior=prior_floor):
        return mf.mean_first_gaussian(rows, rho, center=c, radius=R, cov_bounds=(lo, hi),
                                      release=release, beta=beta, prior_floor=prior_floor,
                                      cover=cover, cover_columns=cover_columns)

    split = sm.plan_split(n, args, plan) if n * d >= sm.SPLIT_MIN_VALUES else None
    if split is not None:
        return sm.split_gaussian(rows, split, args, c, release, info, prior_floor)
    return run_practical(rows, plan, c, lo, release, prior_floor, cover, cover_columns)


# Largest planned relative covariance error (planned_covariance_error) a fit may start with:
# past it the fit is refused before spending (coinpress inside a prior, and the bound-free
# route's refinement). Measured for the refinement at d = 10, ε = 1, covariances A·Aᵀ + 0.5·I:
# n = 2,592 (predicted 14) failed after spending in 4 of 6 draws, and the fits that passed were
# 40-290× np.cov's error; n = 3,300 (predicted 3.6) fitted 8 of 8 at 4.6-16×. The planner is
# pessimistic there (n = 3,000: predicted 7.7, measured ~0.6).
PLAN_MAX_ERROR = 10.0


def planned_covariance_error(n: int, d: int, rho: float, radius: float,
                             cov_bounds: tuple[float, float], beta: float = 0.05,
                             trusted_prior: bool = False) -> float:
    """The planner's predicted relative covariance error ‖Σ̂ − Σ‖_F/‖Σ‖_F of the practical
    :func:`coinpress_gaussian` (unknown mean) when the truth is the prior's worst case, for
    the route it would take (sequential or mean-first; ``trusted_prior``: the user's prior, as
    :func:`coinpress_gaussian` with ``prior_floor``); inf when no plan exists. Public
    quantities only: a check may refuse on it before anything is spent. The model is
    pessimistic when the truth sits well inside the prior (d = 10, n = 2,000, a prior of
    condition 1e16: predicted 1.6e4, measured 0.25), and close when the prior is tight or n
    small (n = 500: predicted 2.3e3, measured 3.0e3)."""
    lo, hi = cov_bounds
    try:
        plan = practical_plan(n, d, rho, radius, lo, hi, radius / math.sqrt(lo), beta, 0.0)
    except ValueError:
        return math.inf
    from . import mean_first as mf

    err = plan.cov_err
    if mf.use_mean_first(n, d, err, rho, radius, (lo, hi), trusted_prior=trusted_prior):
        err = mf.planned_error(n, d, rho, radius, (lo, hi), beta)
    return math.sqrt(err / d)


def _gaussian_theory(
    rows: Rows,
    rho: float,
    c: np.ndarray,
    R: float,
    lo: float,
    hi: float,
    release: Release,
    beta: float,
) -> tuple[np.ndarray, np.ndarray]:
    n, d = rows.n, rows.d
    half = rho / 2.0 if math.isfinite(rho) else math.inf
    rest = rho - half if math.isfinite(rho) else math.inf
    m = n // 2
    P = rows.pairs(release.rng)
    plan = covariance_schedule(m, d, finite_prior(hi / lo), half, beta=beta, constants="theory")
    # ‖B(μ − c)‖ ≤ R/√lo when B ≈ Σ^{-1/2} and Σ ⪰ lo·I: a public radius
    plan_m = mean_schedule(n, d, finite_prior(R / math.sqrt(lo)), rest, constants="theory",
                           beta=0.01)
    check_radii(plan_m)
    # CoinPress on the rescaled pairs P/√lo with A₀ = I·√(lo/hi), i.e. A₀ = I/√hi on P
    _, cov = run_cov(P, np.eye(d) / math.sqrt(hi), plan, release.sub("cov"), pool=False)
    assert cov is not None
    B = whitener(cov, lo, release.step)
    m_w = run_mean(rows, B @ c, plan_m, release.sub("mean"), A=B)
    return np.linalg.solve(B, m_w), cov
