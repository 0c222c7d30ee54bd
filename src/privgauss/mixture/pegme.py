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
the accountant is charged (ε, δ) once, the halves draw on scratch accountants of (ε, δ) each.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.stats import norm

from .. import sensitivity
from ..backends import as_rows
from ..exceptions import EstimationFailed, InvalidDataError, PrivacyBudgetError
from ..linalg import clip_rows
from ..mechanisms import gaussian_mechanism, gaussian_sigma_zcdp, private_count
from ..noise import NoiseSource, RandomState, as_noise
from ..privacy import ZCDP, Accountant, ApproxDP, approx_to_zcdp, reserve
from ..validation import check_positive_int
from .kssu import radius_grid_below, subsampled_call
from .one_cluster import Ball, doubling_radii, one_cluster
from .private_pca import private_pca
from .sample_aggregate import (
    DEFAULT_RADIUS_RANGE,
    check_mixture_inputs,
    dummy_points,
    fixed_size_subset,
)

__all__ = ["pegme"]


def _psge(
    rows: np.ndarray,
    center: np.ndarray,
    radius: float,
    rho_mean: float,
    rho_var: float,
    accountant: Accountant,
    noise: NoiseSource,
    step: str,
) -> tuple[np.ndarray, float]:
    """PSGE on a fixed-size part (m public): clipped mean (sensitivity 2R/m) and the mean of
    ‖x − μ̂_c‖² over rows clipped to the ball, μ̂_c the released mean projected into the ball,
    each term in [0, 4R²] (sensitivity bounded_mean(4R², m) = 4R²/m); ρ-zCDP each."""
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


def pegme(
    X: Any,
    k: int,
    budget: ApproxDP,
    *,
    rank: int | None = None,
    min_weight: float | None = None,
    peel_factor: float = 3.0,
    radii: Any = None,
    max_points: int = 10_000,
    beta: float = 0.05,
    constants: str = "practical",
    accountant: Accountant,
    noise: RandomState = None,
    step: str = "pegme",
    info: dict[str, Any] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """KSSU19 warm-up PEGME (Alg. 1, spec §5) for spherical components of equal weight:
    (weights = 1/k, means (k, d), covariances σ̂²_j·I (k, d, d)).

    ``min_weight`` may only be 1/k (equal weights). (ε, δ)-DP for ``ApproxDP(ε, δ)`` under
    replace-one neighbours, n public (module docstring:
    each public half uses the whole budget). Raises :class:`EstimationFailed` (budget spent)
    when a step returns ⊥ or a part is too small.
    """
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
    if not isinstance(budget, ApproxDP) or budget.delta <= 0:
        raise PrivacyBudgetError("PEGME needs an (epsilon, delta) budget with delta > 0")
    grid = doubling_radii(*DEFAULT_RADIUS_RANGE) if radii is None else np.asarray(radii, float)
    reserve(accountant, [budget], "PEGME")
    src = as_noise(noise)
    accountant.spend(
        budget,
        step=step,
        mechanism="two public halves",
        note="parallel composition: a row is in one half; each half uses the budget",
    )
    perm = src.rng.permutation(n)  # public split
    Y, Z = data[perm[: n // 2]], data[perm[n // 2 :]]
    beta0 = beta / (4 * k)

    def fail(what: str) -> EstimationFailed:
        return EstimationFailed(f"PEGME: {what}", step=f"{step}/{what}", needed_n=None)

    # half Y: enclosing ball (40%) and PCA (the rest, as zCDP)
    y_acct = Accountant(budget)
    enc_budget = ApproxDP(0.4 * budget.epsilon, budget.delta / 2)
    y_acct.spend(enc_budget, step=f"{step}/Y/enclosing-ball")
    ball = subsampled_call(
        one_cluster,
        Y,
        max(2, Y.shape[0] - Y.shape[0] // (8 * k)),
        enc_budget,
        max_points=max_points,
        rng=src.rng,
        radii=grid,
        c=2.0,
        beta=beta0,
        noise=src,
        step=f"{step}/Y/enclosing-ball",
    )
    if ball is None:
        raise fail("enclosing-ball")
    rho_pca = approx_to_zcdp(budget.epsilon - enc_budget.epsilon, budget.delta / 2)
    pca = private_pca(
        Y,
        ball.center,
        ball.radius,
        ell,
        ZCDP(rho_pca),
        accountant=y_acct,
        noise=src,
        step=f"{step}/Y/private-pca",
    )

    # half Z: k peeling rounds in the projection, then PSGE per part
    z_acct = Accountant(budget)
    m = Z.shape[0]
    P = pca.project(Z)
    round_budget = ApproxDP(0.6 * budget.epsilon / k, budget.delta / (2 * k))
    pgrid = radius_grid_below(ball.radius, 30)
    # a claimed row is replaced by its own public far point (a per-row map: row i's dummy
    # depends on i only), keeping the size m public and neighbours one row apart
    dummies = dummy_points(m, ell, pgrid, peel_factor, src.rng)
    owner = np.full(m, -1, dtype=np.int64)
    balls: list[Ball] = []
    for j in range(k):
        free = owner < 0
        pts = np.where(free[:, None], P, dummies)
        z_acct.spend(round_budget, step=f"{step}/Z/round-{j + 1}")
        b = subsampled_call(
            one_cluster,
            pts,
            max(2, m // (2 * k)),
            round_budget,
            max_points=max_points,
            rng=src.rng,
            radii=pgrid,
            c=peel_factor,
            beta=beta0,
            noise=src,
            step=f"{step}/Z/round-{j + 1}",
        )
        if b is None:
            raise fail(f"round-{j + 1}")
        inside = free & (np.sqrt(np.sum((P - b.center) ** 2, axis=1)) <= b.radius)
        owner[inside] = j
        balls.append(b)
    eps_left = budget.epsilon - k * round_budget.epsilon
    rho_z = approx_to_zcdp(eps_left, budget.delta - k * round_budget.delta)
    rho_cnt = 0.1 * rho_z
    counts = private_count(
        np.bincount(owner[owner >= 0], minlength=k),
        ZCDP(rho_cnt),
        accountant=z_acct,
        noise=src,
        step=f"{step}/Z/counts",
        sensitivity=sensitivity.histogram_l2(),
    )
    sigma = gaussian_sigma_zcdp(sensitivity.histogram_l2(), rho_cnt)
    sizes = np.floor(counts - float(norm.isf(beta / (2 * k))) * sigma).astype(int)
    # each part's estimation is ρ_E-zCDP; a moved row changes two parts: charged 2ρ_E
    rho_e = (rho_z - rho_cnt) / 2
    z_acct.spend(
        ZCDP(2 * rho_e),
        step=f"{step}/Z/psge",
        mechanism="psge x parts",
        note="a replaced row changes at most two parts: charged twice",
    )
    if (sizes < 2).any():
        raise fail("psge")
    keys = src.rng.random(m)
    lift = (
        (1.0 + 16.0 + 2.0 * math.sqrt(3 * d / ell))
        if constants == "theory"
        else (3.0 + 2.0 * math.sqrt(3 * d / ell))
    )
    means = np.empty((k, d))
    covs = np.empty((k, d, d))
    for j, b in enumerate(balls):
        center = pca.center + b.center @ pca.components.T
        radius = (b.radius / peel_factor) * lift
        rows = fixed_size_subset(
            Z, np.flatnonzero(owner == j), keys, int(sizes[j]), center, src.rng
        )
        mu, var = _psge(
            rows,
            center,
            radius,
            0.5 * rho_e,
            0.5 * rho_e,
            Accountant(ZCDP(rho_e)),
            src,
            f"{step}/Z/psge-{j + 1}",
        )
        means[j] = mu
        covs[j] = var * np.eye(d)
    if info is not None:
        info.update(balls=balls, noisy_counts=counts, pca=pca)
    return np.full(k, 1.0 / k), means, covs
