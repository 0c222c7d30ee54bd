"""Gaussian mixtures with O(d log(k/β)/w_min) public rows: DPEasyEstimator (Bie, Kamath,
Singhal, NeurIPS 2022, Alg. 10 with Alg. 9; Thm 4.27–4.29; spec ``public-data.md`` §4.9–4.10).

**Neighbours:** replace one row of ``X``; n is public. **Guarantee:** ρ-zCDP for ``ZCDP(ρ)``, and
(ε, δ)-DP for ``ApproxDP(ε, δ)`` (δ > 0: run at the largest ρ whose zCDP implies it), with
respect to the private rows, for **every** public dataset (Def. 2.17) — duplicated, far away or
too few public rows change accuracy only.

1. :func:`~.public_clustering.easy_clustering` (Alg. 9) on the public rows: zero privacy cost;
   the private rows are only routed by public balls.
2. Joint noisy cluster sizes (discrete Gaussian, L2 sensitivity √2: a replaced row leaves one
   cluster and joins another) → the weights.
3. Per-component estimation, ``estimator=``:

   * ``"joint"`` (default for ``constants="practical"``):
     :func:`~.cluster_estimation.estimate_clusters` — each cluster's private rows whitened by
     **that cluster's public rows** (the spec's erratum: Alg. 9/10 must return aligned
     public/private pairs), clipped, and their sums and outer-product sums released **jointly
     over the k clusters** (L2 sensitivities 2τ and √2·τ², whether the replaced row stays in
     its cluster or moves between two), with three refinement steps and the clipping shrinkage
     undone. No factor 2: the whole ρ − ρ_counts serves the estimation.
   * ``"learner"`` (default for ``constants="theory"``, the faithful Alg. 10): per cluster,
     :func:`~privgauss.gaussian.public.public_gaussian` (Alg. 2: d+1-sample public
     preconditioning + bounded CoinPress, no range parameters) with that cluster's public rows,
     on a fixed-size subset of the cluster's private rows (size from the released count, padded
     with the public cluster mean: :func:`~.sample_aggregate.fixed_size_subset`), so each
     learner is DP for its cluster under add/remove. A replaced row can change **two** clusters
     (pitfall P3): the k learners, each at ρ_E, are charged 2ρ_E
     (:func:`~.sample_aggregate.estimate_components`). The paper charges the learners once
     (parallel composition) — half of what is honest under replace-one.

Budget: ρ = ρ_counts (``count_share``) + ρ_estimation ("joint") or + 2ρ_E ("learner").
Failure probability: β/3 clustering, β/(3k) per learner (the fixed-size subsets use the rest).

Refused with :class:`~privgauss.exceptions.InvalidDataError` before any budget is spent (public
facts only): public rows of the wrong dimension or fewer than :func:`min_public_rows`, and a
public clustering that does not find k clusters of at least d+1 public rows each (k mismatch).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..backends import as_rows, public_rows
from ..exceptions import InvalidDataError, PrivacyBudgetError
from ..gaussian.public import public_gaussian
from ..gaussian.public_frame import frame_of
from ..gaussian.public_preconditioner import public_preconditioner
from ..linalg import scaled_floor
from ..mechanisms import Release
from ..privacy import ZCDP, Accountant, Budget, BudgetPlan, zcdp_of
from ..theory import Bound
from ..validation import check_positive_int
from .cluster_estimation import (
    FRACTIONS,
    MEAN_SHARE,
    cluster_plan,
    estimate_clusters,
    frame_from_public,
)
from .component_estimation import ComponentPrior, Partition, estimate_components
from .public_clustering import PublicClusters, easy_clustering

__all__ = [
    "check_public_clustering",
    "heavy_plan",
    "joint_component_rows",
    "min_public_rows",
    "positive_definite",
    "public_heavy_gmm",
    "public_heavy_requirements",
]

#: Share of ρ for the joint cluster-size counts (the rest, halved, is each learner's ρ_E).
COUNT_SHARE = 0.04



def min_public_rows(d: int, min_weight: float) -> int:
    """The fewest public rows public-heavy accepts: every cluster needs ≥ d+1 public rows for
    Alg. 2 and holds about m·w_min/2 of them, so m ≥ 2(d+1)/w_min (public-light's:
    :func:`~.public_light.min_public_rows`)."""
    return math.ceil(2 * (d + 1) / min_weight)


def joint_component_rows(d: int, rho_estimation: float, min_weight: float) -> float:
    """Practical n for :func:`~.cluster_estimation.estimate_clusters` with ρ_estimation (the
    budget after the counts): the smallest cluster (≈ n·w_min rows) needs n·w_min ≳ 11d²
    (sampling) + 3d²/√ρ (the outer-product noise, ∝ d·τ²/√ρ with τ² ≈ d) — constants measured
    with ``benchmarks/public_mixtures.py`` (public-heavy, d = 10, k = 3, w_min = 0.2, ε = 1:
    2/10 recovered at n = 10,000, 10/10 at 14,000 and 20,000; this gives 15,300)."""
    return (11.0 * d * d + 3.0 * d * d / math.sqrt(rho_estimation)) / min_weight


def public_heavy_requirements(
    *, n: int, d: int, k: int, rho: float, min_weight: float, beta: float = 0.05
) -> dict[str, float]:
    """Practical n for public-heavy with the default joint estimator
    (:func:`joint_component_rows`), plus count regularity (Lemma 4.7) and the counts' noise."""
    rho_c = rho * COUNT_SHARE
    sigma_c = math.sqrt(2.0) / math.sqrt(2 * rho_c)
    z = math.sqrt(2 * math.log(3 * k / beta))
    return {
        "per-component estimation": joint_component_rows(d, rho - rho_c, min_weight),
        "count regularity": 12.0 * math.log(2 * k / beta) / min_weight,
        "weight noise": 20.0 * z * sigma_c,
    }


def theory_terms(*, d: int, k: int, rho: float, min_weight: float, alpha: float = 0.2,
                 beta: float = 0.05) -> dict[str, Bound]:
    """Thm 4.29 (zCDP, constants 1, polylog → log): n and m terms, indicative only."""
    a, w = alpha, min_weight
    lk = math.log(k / beta)
    return {
        "sampling": Bound(d * d * lk / (w * a * a), "Thm 4.29", "d^2 ln(k/b)/(w a^2)"),
        "privacy": Bound(
            d * d * math.log(d * k / (a * beta * rho)) / (w * a * math.sqrt(rho)),
            "Thm 4.29", "d^2 polylog(dk/(a b rho))/(w a sqrt(rho))",
        ),
        "public rows m": Bound(d * lk / w, "Thm 4.26", "d ln(k/b)/w_min"),
    }


def check_public(public_X: Any, d: int, k: int, min_weight: float, method: str,
                 need: int) -> np.ndarray:
    """Validate the public rows for ``method`` (its name, for the messages), which needs at
    least ``need`` of them (before any budget is spent)."""
    if public_X is None:
        raise InvalidDataError(f"method={method!r} needs public rows: pass public_X")
    P = public_rows(public_X, name="public_X")
    if P.shape[1] != d:
        raise InvalidDataError(
            f"public_X has {P.shape[1]} columns but X has {d}: give public rows of the same "
            "dimension"
        )
    if P.shape[0] < need:
        raise InvalidDataError(
            f"method={method!r} needs at least {need} public rows here (d = {d}, k = {k}, "
            f"min_weight = {min_weight:g}), got {P.shape[0]}; give more public rows or use a "
            "method needing fewer"
        )
    return P


def prepare(
    X: Any,
    k: int,
    budget: Budget,
    public_X: Any,
    min_weight: float | None,
    beta: float,
    accountant: Accountant,
    method: str,
    min_public: Callable[[int, float], int],
) -> tuple[np.ndarray, np.ndarray, int, float, float]:
    """Validate everything a public-data mixture learner needs, before anything is spent:
    (X, public rows, k, w_min, ρ); ``method`` names the learner in the messages,
    ``min_public(d, w_min)`` is the fewest public rows it accepts."""
    X = as_rows(X, min_rows=2)
    k = check_positive_int(k, "k", minimum=1)
    w_min = 1.0 / k if min_weight is None else float(min_weight)
    if not (0 < w_min <= 1.0 / k + 1e-12):
        raise ValueError(f"min_weight must be in (0, 1/k] = (0, {1.0 / k:.4g}]")
    if not (0 < beta < 1):
        raise ValueError("beta must be in (0, 1)")
    P = check_public(public_X, X.shape[1], k, w_min, method, min_public(X.shape[1], w_min))
    rho = zcdp_of(budget, method)
    if not accountant.can_spend(ZCDP(rho)):
        raise PrivacyBudgetError(
            f"{method} needs {rho:g}-zCDP but the accountant cannot pay it "
            f"(total {accountant.total}, spent {accountant.spent_str()})"
        )
    return X, P, k, w_min, rho


def public_heavy_gmm(
    X: Any,
    k: int,
    budget: Budget,
    *,
    public_X: Any,
    min_weight: float | None = None,
    beta: float = 0.05,
    constants: str = "practical",
    release: Release,
    info: dict[str, Any] | None = None,
    count_share: float = COUNT_SHARE,
    estimator: str | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(weights, means, covariances) of a k-component mixture, ρ-zCDP (or (ε, δ)-DP) w.r.t.
    the rows of ``X`` for any ``public_X``; replace-one, n public. See the module docstring.

    ``estimator``: ``"joint"`` or ``"learner"`` (default: ``"joint"`` for practical constants,
    ``"learner"`` for ``constants="theory"``). ``info`` (if given) receives
    ``"public_clusters"`` (:class:`PublicClusters`, public only). Charged to ``release``
    (step "public-heavy" unless it names one).
    """
    rel = release.named("public-heavy")
    accountant = rel.accountant
    if not (0 < count_share < 1):
        raise ValueError("count_share must be in (0, 1)")
    estimator = pick_estimator(estimator, constants)
    X, P, k, w_min, rho = prepare(X, k, budget, public_X, min_weight, beta, accountant,
                                  "public-heavy", min_public_rows)
    n, d = X.shape
    clusters, labels = easy_clustering(P, X, k, w_min, beta=beta / 3, constants=constants)
    if info is not None:
        info["public_clusters"] = clusters
    _check_clusters(clusters, k, d, P.shape[0] * w_min / 2)
    src = rel.noise
    publics = [P[clusters.labels == j] for j in range(k)]
    for j, Pj in enumerate(publics):  # degenerate public clusters: refused, nothing spent
        _check_cluster_frame(Pj, j, beta / (6 * k))
    if estimator == "joint":
        weights, means, covs = estimate_clusters(
            X, labels, [frame_from_public(Pj) for Pj in publics], ZCDP(rho),
            count_share=count_share, release=rel,
        )
        return weights, means, positive_definite(covs)
    plan = heavy_plan(rho, count_share, "learner")
    keys = src.rng.random(n)  # public per-row keys for the fixed-size subsets

    def learner(
        j: int, rows: np.ndarray, rho_j: float, acct: Accountant
    ) -> tuple[np.ndarray, np.ndarray]:
        # checks=False: Alg. 2 as written; its plan check would refuse after the spending
        return public_gaussian(rows, publics[j], rho_j, release=Release(acct, src),
                               beta=beta / (3 * k), constants=constants, checks=False)

    priors = [
        ComponentPrior(clusters.means[j], 0.0, (1.0, 1.0)) for j in range(k)  # pad = centre
    ]
    weights, means, covs, _ = estimate_components(
        X, Partition(labels, keys), priors, plan.part("counts", ZCDP), plan.part("estimate", ZCDP),
        beta=beta / 3, constants=constants, release=rel, part_learner=learner,
    )
    return weights, means, positive_definite(covs)


def heavy_plan(
    rho: float, count_share: float = COUNT_SHARE, estimator: str = "joint"
) -> BudgetPlan:
    """The budget plan of public-heavy for ρ (public): ``count_share`` of ρ to the cluster
    sizes, the rest to the estimation — by :func:`~.cluster_estimation.estimate_clusters`'s
    steps (``"joint"``, its default fractions) or charged once as 2ρ_E for the per-cluster
    learners (``"learner"``). The parts compose to exactly ρ."""
    if estimator == "joint":
        return cluster_plan(ZCDP(rho), count_share, FRACTIONS, MEAN_SHARE)
    rho_c = rho * count_share
    return BudgetPlan.of(ZCDP(rho), {"counts": ZCDP(rho_c), "estimate": ZCDP(rho - rho_c)})


def pick_estimator(estimator: str | None, constants: str) -> str:
    """``"joint"`` or ``"learner"``; default ``"learner"`` (the paper's) for theory constants."""
    if estimator is None:
        return "learner" if constants == "theory" else "joint"
    if estimator not in ("joint", "learner"):
        raise ValueError(f"estimator must be 'joint' or 'learner', got {estimator!r}")
    return estimator


def positive_definite(covs: np.ndarray, floor: float = 1e-6) -> np.ndarray:
    """Each covariance with the eigenvalues of its correlation matrix raised to ≥ ``floor``
    (:func:`~privgauss.linalg.scaled_floor`; post-processing: a learner's PSD projection
    can return a singular matrix, which has no density). The floor is in each column's own
    units: floor·(trace/d), as before session 49, gave a column in units 1e-6 beside one in
    1e6 a variance ~1e5 (np.cov 1e-12) at every budget."""
    out = np.empty_like(covs)
    for j, C in enumerate(covs):
        out[j] = scaled_floor(C, floor)
    return out


def check_public_clustering(P: np.ndarray, n: int, k: int, w_min: float, beta: float,
                            constants: str) -> None:
    """Refuse (InvalidDataError), from the public rows ``P`` and public n alone, public rows on
    which :func:`public_heavy_gmm` cannot run: the same public clustering (Alg. 9) and the same
    checks (k clusters of ≥ d+1 rows, no large leftover group, no degenerate cluster) that it
    makes before spending. Nothing private is read, so it can run before the fit."""
    d = P.shape[1]
    clusters, _ = easy_clustering(P, None, k, w_min, beta=beta / 3, constants=constants, n=n)
    _check_clusters(clusters, k, d, P.shape[0] * w_min / 2)
    for j in range(k):
        _check_cluster_frame(P[clusters.labels == j], j, beta / (6 * k))


def _check_cluster_frame(Pj: np.ndarray, j: int, beta: float) -> None:
    """Refuse (InvalidDataError, public rows only) a public cluster whose rows cannot give
    the preconditioner's frame, in public-heavy's words: :func:`public_preconditioner`'s own
    refusal speaks of the Gaussian method='public' and advises Gaussian fallbacks (method=
    'histogram', 'coinpress'), which a mixture fit cannot take (edge sweep: a constant
    column)."""
    try:
        public_preconditioner(Pj, beta, outliers=True)
    except InvalidDataError:
        reason = frame_of(Pj, True)[1] if Pj.shape[0] > Pj.shape[1] else (
            f"{Pj.shape[0]} rows, fewer than d+1 = {Pj.shape[1] + 1}")
        if not reason:
            raise
        reason = reason.split("; the bound-free")[0]  # that advice is the Gaussian fit's
        raise InvalidDataError(
            f"method='public-heavy' cannot precondition public cluster {j}'s covariance with "
            f"its public rows: {reason} (nothing was spent). Instead use method='em' (no "
            "separation assumed; public rows optional) or method='public-light' (no "
            "per-cluster preconditioner)"
        ) from None


def _check_clusters(clusters: PublicClusters, k: int, d: int, t: float) -> None:
    """Alg. 10 needs exactly k public clusters of ≥ d+1 rows, and no leftover public group of
    ≥ t = m·w_min/2 rows (the public rows then form more than k clusters): decided on public data
    only, so it is refused (InvalidDataError) before anything is spent."""
    if int(np.count_nonzero(clusters.labels < 0)) >= max(t, 1):
        raise InvalidDataError(
            f"the public rows form more than n_components = {k} clusters (nothing was "
            "spent): check n_components"
        )
    if clusters.n_clusters != k:
        raise InvalidDataError(
            f"the public rows form {clusters.n_clusters} clusters, not n_components = {k} "
            "(nothing was spent): check n_components, or give more public rows from the same "
            "mixture"
        )
    small = int(np.count_nonzero(clusters.sizes < d + 1))
    if small:
        raise InvalidDataError(
            f"{small} of the public clusters have fewer than d+1 = {d + 1} public rows "
            "(nothing was spent): give more public rows, or use method='public-light'"
        )
