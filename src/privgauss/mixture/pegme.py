"""The KSSU19 warm-up learner PEGME (Alg. 1, spec §5) with the private spherical Gaussian
estimator PSGE (Alg. 6, App. C). Kamath, Sheffet, Singhal, Ullman, "Differentially Private
Algorithms for Learning Mixtures of Separated Gaussians" (NeurIPS 2019).

**Neighbours:** replace one row of ``X``; n is public. **Guarantee:** :func:`pegme` is
(ε, δ)-DP for ``ApproxDP(ε, δ)`` (δ > 0) on any data; the whole budget is charged whatever
happens, and a failure (⊥) raises :class:`~privgauss.exceptions.EstimationFailed`.

PEGME (warm-up, spherical components, equal weights): a public random split into halves Y, Z.
On Y: an enclosing ball and private PCA (rank ℓ = k). On Z, projected: k peeling rounds of
one_cluster (t = |Z|/(2k)), each ball claiming the rows it holds (first match wins); then per
part PSGE: noisy count, noisy clipped mean inside the lifted ball B(c′, R), and the recommended
variance statistic (1/m)Σ‖x − μ̂_c‖² with μ̂_c the released mean projected into the ball (terms in
[0, 4R²]). A row is in one half only (public split), so each half may use the whole budget:
the accountant is charged (ε, δ) once, and each half charges a prepaid accountant of (ε, δ)
(its releases are kept under that one ledger entry; plans: :func:`pegme_plan`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import norm

from .. import sensitivity
from ..backends import as_rows
from ..exceptions import EstimationFailed, InvalidDataError, PrivacyBudgetError
from ..linalg import clip_rows
from ..mechanisms import Release, gaussian_mechanism, gaussian_sigma_zcdp, private_count
from ..privacy import (
    ZCDP,
    Accountant,
    ApproxDP,
    Budget,
    BudgetPlan,
    LedgerEntry,
    approx_to_zcdp,
    has_delta,
)
from ..theory import smallest_n
from ..validation import check_positive_int
from .component_estimation import fixed_size_subset
from .good_radius import doubling_radii
from .kssu import radius_grid_below
from .one_cluster import Ball, BallSearch, one_cluster
from .private_pca import private_pca
from .sample_aggregate import DEFAULT_RADIUS_RANGE, check_mixture_inputs, dummy_points
from .subsampling import search_is_meaningful, subsampled_call

__all__ = ["PegmeOptions", "pegme", "pegme_plan"]


@dataclass(frozen=True)
class PegmeOptions:
    """The public knobs of :func:`pegme`; they move accuracy and running time only.

    Parameters
    ----------
    rank : int, optional
        Rank ℓ of the private PCA (default k, at most d).
    peel_factor : float
        The released balls' radius over the cluster radius they were found at.
    radii : array-like, optional
        Public grid of the enclosing ball's radii (default
        :data:`~.sample_aggregate.DEFAULT_RADIUS_RANGE`).
    max_points : int
        Subsample size of the 1-cluster searches.
    """

    rank: int | None = None
    peel_factor: float = 3.0
    radii: Any = None
    max_points: int = 10_000


def _psge(
    rows: np.ndarray,
    center: np.ndarray,
    radius: float,
    rho_mean: float,
    rho_var: float,
    release: Release,
) -> tuple[np.ndarray, float]:
    """PSGE on a fixed-size part (m public): clipped mean (sensitivity 2R/m) and the mean of
    ‖x − μ̂_c‖² over rows clipped to the ball, μ̂_c the released mean projected into the ball,
    each term in [0, 4R²] (sensitivity bounded_mean(4R², m) = 4R²/m); ρ-zCDP each."""
    accountant, noise, step = release.accountant, release.noise, release.step
    m, d = rows.shape
    clipped, _ = clip_rows(rows, center, radius)
    mean = gaussian_mechanism(
        clipped.mean(axis=0),
        sensitivity.clipped_mean_l2(radius, m),
        ZCDP(rho_mean),
        accountant=accountant,
        noise=noise,
        step=f"{step}/mean",
    )
    mu_c = clip_rows(mean[None, :], center, radius)[0][0]
    sq = np.sum((clipped - mu_c) ** 2, axis=1)
    var = float(
        gaussian_mechanism(
            float(np.mean(sq)),
            sensitivity.bounded_mean(4 * radius**2, m),
            ZCDP(rho_var),
            accountant=accountant,
            noise=noise,
            step=f"{step}/variance",
        )
    )
    return mean, max(var / d, 1e-12 * radius**2 / d)


def pegme_plan(budget: ApproxDP, k: int) -> tuple[BudgetPlan, BudgetPlan]:
    """The budget plans of PEGME's two halves, each of the whole ``budget`` (module docstring):
    Y — the enclosing ball (0.4ε, δ/2) and the private PCA (the rest, as zCDP); Z — k peeling
    rounds (0.6ε/k, δ/(2k)) each, then the rest as zCDP: 10% to the counts, 90% to the PSGE
    runs (charged once at 2ρ_E). Public; each composes to exactly ``budget``."""
    eps, delta = budget.epsilon, budget.delta
    enc = ApproxDP(0.4 * eps, delta / 2)
    rho_pca = approx_to_zcdp(eps - enc.epsilon, delta / 2)
    half_y = BudgetPlan.of(budget, {"Y/enclosing-ball": enc, "Y/private-pca": ZCDP(rho_pca)})
    round_budget = ApproxDP(0.6 * eps / k, delta / (2 * k))
    rho_z = approx_to_zcdp(eps - k * round_budget.epsilon, delta - k * round_budget.delta)
    rho_cnt = 0.1 * rho_z
    rho_e = (rho_z - rho_cnt) / 2
    parts: dict[str, Budget] = {f"Z/round-{j + 1}": round_budget for j in range(k)}
    parts.update({"Z/counts": ZCDP(rho_cnt), "Z/psge": ZCDP(2 * rho_e)})
    return half_y, BudgetPlan.of(budget, parts)


#: the most radii below the enclosing ball a peeling round searches (:func:`_peel`)
ROUND_RADII = 30
#: :func:`practical_rows`' safety factor over the searches' floors, measured on spherical,
#: equal-weight clusters 30 sd apart (d / k / ε = 3 / 2 / 1, 5 / 3 / 1, 3 / 2 / 4; 5 seeds
#: each): at 1.2× the floor every fit failed after spending (15 of 15), at 2× none (0 of 15)
PRACTICAL_SAFETY = 2.0


def practical_rows(d: int, k: int, budget: ApproxDP, beta: float = 0.05,
                   options: PegmeOptions | None = None) -> dict[str, float]:
    """The n PEGME's private searches need, from public quantities only: ``PRACTICAL_SAFETY``
    × the least n at which each can be meaningful — half Y's enclosing ball and half Z's
    peeling rounds (one_cluster on ⌊n/2⌋ and ⌈n/2⌉ rows, t as :func:`_half_y` and
    :func:`_peel` set it, their planned budgets, the radii they search: ``ROUND_RADII`` below
    the ball, the most a round can get). Below that floor the search's AboveThreshold
    threshold t·γ − Γ is negative (:func:`~.subsampling.search_is_meaningful`) and PEGME
    fails after spending whatever the data (n = 4,000, d = 3, k = 2 at ε = 1: round 1 on every
    table of benchmarks/edge_sweep.py, whose R1 this is). ``d`` only checks the call: the
    searches' floors do not depend on it."""
    opts = PegmeOptions() if options is None else options
    del d
    plan_y, plan_z = pegme_plan(budget, k)
    beta0 = beta / (4 * k)
    n_grid = (len(doubling_radii(*DEFAULT_RADIUS_RANGE)) if opts.radii is None
              else len(np.asarray(opts.radii, dtype=float).ravel()))
    enc, rnd = plan_y.part("Y/enclosing-ball", ApproxDP), plan_z.part("Z/round-1", ApproxDP)

    def enclosing(n: int) -> bool:
        m = n // 2
        return search_is_meaningful("one-cluster", enc, m, max(2, m - m // (8 * k)), n_grid,
                                    beta0, opts.max_points)

    def rounds(n: int) -> bool:
        m = n - n // 2
        return search_is_meaningful("one-cluster", rnd, m, max(2, m // (2 * k)), ROUND_RADII,
                                    beta0, opts.max_points)

    return {name: PRACTICAL_SAFETY * smallest_n(ok, start=4, limit=1e15, rel=0.0)  # exact
            for name, ok in (("enclosing ball (half Y)", enclosing),
                             ("peeling rounds (half Z)", rounds))}


def pegme(
    X: Any,
    k: int,
    budget: ApproxDP,
    *,
    min_weight: float | None = None,
    beta: float = 0.05,
    constants: str = "practical",
    options: PegmeOptions | None = None,
    release: Release,
    info: dict[str, Any] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """KSSU19 warm-up PEGME (Alg. 1, spec §5) for spherical components of equal weight:
    (weights = 1/k, means (k, d), covariances σ̂²_j·I (k, d, d)).

    ``min_weight`` may only be 1/k (equal weights). (ε, δ)-DP for ``ApproxDP(ε, δ)`` under
    replace-one neighbours, n public (module docstring:
    each public half uses the whole budget). ``options``: the public knobs
    (:class:`PegmeOptions`). Charged to ``release`` (step "pegme" unless it names one). Raises
    :class:`EstimationFailed` (budget spent) when a step returns ⊥ or a part is too small.
    """
    opts = PegmeOptions() if options is None else options
    rank, radii = opts.rank, opts.radii
    rel = release.named("pegme")
    accountant, step = rel.accountant, rel.step
    data, k, beta, _ = check_mixture_inputs(
        X, k, beta=beta, constants=constants, min_weight=None, cond_range=1.0
    )
    if min_weight is not None and not math.isclose(float(min_weight), 1.0 / k, rel_tol=1e-9):
        raise InvalidDataError(
            f"PEGME assumes equal weights 1/k = {1.0 / k:.4g}; leave min_weight unset or use "
            "method='kssu' for unequal weights"
        )
    data = as_rows(data, min_rows=4)  # two halves of at least 2 rows
    n, d = data.shape
    ell = min(d, k if rank is None else check_positive_int(rank, "rank"))
    if not has_delta(budget):
        raise PrivacyBudgetError("PEGME needs an (epsilon, delta) budget with delta > 0")
    grid = doubling_radii(*DEFAULT_RADIUS_RANGE) if radii is None else np.asarray(radii, float)
    BudgetPlan.of(budget, {step: budget}).reserve(accountant, "PEGME")
    paid = accountant.spend(
        budget,
        step=step,
        mechanism="two public halves",
        note="parallel composition: a row is in one half; each half uses the budget",
    )
    perm = rel.rng.permutation(n)  # public split
    plan_y, plan_z = pegme_plan(budget, k)
    run = _PegmeRun(
        k=k,
        ell=ell,
        grid=grid,
        peel_factor=opts.peel_factor,
        max_points=opts.max_points,
        beta=beta,
        constants=constants,
        release=rel,
        plan_y=plan_y,
        plan_z=plan_z,
        # each half uses the whole budget under the one charge above: its entries are kept there
        y_acct=accountant.prepaid(paid, budget),
        z_acct=accountant.prepaid(paid, budget),
    )
    Y, Z = data[perm[: n // 2]], data[perm[n // 2 :]]
    ball, pca = _half_y(run, Y)
    P = pca.project(Z)
    owner, balls = _peel(run, P, ball)
    counts, means, covs = _half_z_estimate(run, Z, owner, balls, pca)
    if info is not None:
        info.update(balls=balls, noisy_counts=counts, pca=pca)
    return np.full(k, 1.0 / k), means, covs


@dataclass(frozen=True)
class _PegmeRun:
    """The public parameters of one PEGME run, its plans and the halves' accountants."""

    k: int
    ell: int
    grid: np.ndarray
    peel_factor: float
    max_points: int
    beta: float
    constants: str
    release: Release
    plan_y: BudgetPlan
    plan_z: BudgetPlan
    y_acct: Accountant
    z_acct: Accountant

    @property
    def beta0(self) -> float:
        return self.beta / (4 * self.k)

    def fail(self, what: str) -> EstimationFailed:
        return EstimationFailed(f"PEGME: {what}", step=self.release.name(what), needed_n=None)

    def charge(self, acct: Accountant, plan: BudgetPlan, name: str) -> LedgerEntry:
        """Charge ``plan[name]`` to ``acct`` (a half's accountant) as step ``step/name``."""
        return acct.spend(plan[name], step=self.release.name(name))


def _half_y(run: _PegmeRun, Y: np.ndarray) -> tuple[Ball, Any]:
    """Half Y: an enclosing ball of the rows, then private PCA of rank ℓ inside it."""
    k = run.k
    enc = run.charge(run.y_acct, run.plan_y, "Y/enclosing-ball")
    ball = subsampled_call(
        one_cluster,
        Y,
        max(2, Y.shape[0] - Y.shape[0] // (8 * k)),
        run.plan_y.part("Y/enclosing-ball", ApproxDP),
        search=BallSearch(beta=run.beta0, max_points=run.max_points),
        release=Release(run.y_acct, run.release.noise, run.release.name("Y/enclosing-ball")),
        paid_by=enc,
        radii=run.grid,
        c=2.0,
    )
    if ball is None:
        raise run.fail("enclosing-ball")
    pca_budget = run.plan_y.part("Y/private-pca", ZCDP)
    pca = private_pca(
        Y,
        ball.center,
        ball.radius,
        run.ell,
        pca_budget,
        release=Release(run.y_acct, run.release.noise, run.release.name("Y/private-pca")),
    )
    return ball, pca


def _peel(run: _PegmeRun, P: np.ndarray, ball: Ball) -> tuple[np.ndarray, list[Ball]]:
    """Half Z, projected: k peeling rounds of one_cluster, each claiming the free rows in its
    ball. A claimed row is replaced by its own public far point (a per-row map: row i's dummy
    depends on i only), keeping the size m public and neighbours one row apart."""
    k = run.k
    m = P.shape[0]
    pgrid = radius_grid_below(ball.radius, 30)
    dummies = dummy_points(m, run.ell, pgrid, run.peel_factor, run.release.rng)
    owner = np.full(m, -1, dtype=np.int64)
    balls: list[Ball] = []
    for j in range(k):
        free = owner < 0
        pts = np.where(free[:, None], P, dummies)
        name = f"Z/round-{j + 1}"
        paid = run.charge(run.z_acct, run.plan_z, name)
        b = subsampled_call(
            one_cluster,
            pts,
            max(2, m // (2 * k)),
            run.plan_z.part(name, ApproxDP),
            search=BallSearch(beta=run.beta0, max_points=run.max_points),
            release=Release(run.z_acct, run.release.noise, run.release.name(name)),
            paid_by=paid,
            radii=pgrid,
            c=run.peel_factor,
        )
        if b is None:
            raise run.fail(f"round-{j + 1}")
        inside = free & (np.sqrt(np.sum((P - b.center) ** 2, axis=1)) <= b.radius)
        owner[inside] = j
        balls.append(b)
    return owner, balls


def _half_z_estimate(
    run: _PegmeRun, Z: np.ndarray, owner: np.ndarray, balls: list[Ball], pca: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Half Z: the parts' noisy counts, then PSGE per part (each ρ_E-zCDP; a moved row changes
    two parts: charged 2ρ_E once). Returns (noisy counts, means, covariances)."""
    k, step, src = run.k, run.release.step, run.release.noise
    m: int = Z.shape[0]
    d: int = Z.shape[1]
    cnt_budget, psge_budget = run.plan_z.part("Z/counts", ZCDP), run.plan_z.part("Z/psge", ZCDP)
    counts = private_count(
        np.bincount(owner[owner >= 0], minlength=k),
        cnt_budget,
        accountant=run.z_acct,
        noise=src,
        step=f"{step}/Z/counts",
        sensitivity=sensitivity.histogram_l2(),
    )
    sigma = gaussian_sigma_zcdp(sensitivity.histogram_l2(), cnt_budget.rho)
    sizes = np.floor(counts - float(norm.isf(run.beta / (2 * k))) * sigma).astype(int)
    rho_e = psge_budget.rho / 2
    paid = run.z_acct.spend(
        psge_budget,
        step=f"{step}/Z/psge",
        mechanism="psge x parts",
        note="a replaced row changes at most two parts: charged twice",
    )
    if (sizes < 2).any():
        raise run.fail("psge")
    keys = src.rng.random(m)
    lift = (
        (1.0 + 16.0 + 2.0 * math.sqrt(3 * d / run.ell))
        if run.constants == "theory"
        else (3.0 + 2.0 * math.sqrt(3 * d / run.ell))
    )
    means = np.empty((k, d))
    covs = np.empty((k, d, d))
    for j, b in enumerate(balls):
        center = pca.center + b.center @ pca.components.T
        radius = (b.radius / run.peel_factor) * lift
        rows = fixed_size_subset(
            Z, np.flatnonzero(owner == j), keys, int(sizes[j]), center, src.rng
        )
        mu, var = _psge(
            rows,
            center,
            radius,
            0.5 * rho_e,
            0.5 * rho_e,
            Release(run.z_acct.prepaid(paid, ZCDP(rho_e)), src, f"{step}/Z/psge-{j + 1}"),
        )
        means[j] = mu
        covs[j] = var * np.eye(d)
    return counts, means, covs
