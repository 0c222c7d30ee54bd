"""Gaussian mixtures with O(log(k/β)/w_min) public rows: DPHardEstimator (Bie, Kamath, Singhal,
NeurIPS 2022, Alg. 4–7 with Alg. 3; Thm 4.20–4.24; spec ``public-data.md`` §4.2–4.7).

**Neighbours:** replace one row of ``X``; n is public. **Guarantee:** ρ-zCDP for ``ZCDP(ρ)``, and
(ε, δ)-DP for ``ApproxDP(ε, δ)`` (δ > 0: run at the largest ρ whose zCDP implies it), with
respect to the private rows, for **every** public dataset: the public rows only choose centres,
radii, candidate balls and thresholds.

Hard clustering (Alg. 6), aligned queues of (public subset, private subset), exactly 2k
iterations charged whatever happens (unused iterations are charged too, so the spend never
depends on the data):

1. :func:`~.public_clustering.supercluster` (Alg. 3) on the public subset: a public ball
   B_{R_i}(c_i); the rows outside it go back to the queue.
2. Private PCA (Alg. 4, :func:`~.private_pca.private_pca`, rank k) of the private rows inside the
   ball, centred at the public c_i and clipped to the public R_i, **padded to the public total n
   with copies of c_i** (zero contribution), so the normaliser is public and a row entering or
   leaving the subset is one replacement of the padded data.
3. The DP low-dimensional partitioner (Alg. 5): a public split proposal
   (:func:`~.public_clustering.public_split`, t = m·w_min/2) confirmed by Q_Priv — three noisy
   counts of the projected private rows (inside B_{2r}, the annulus, outside), t = n·w_min/4 with
   the **total** n. One row moves between two regions under replace-one: the count vector has
   L2 sensitivity √2 (the spec's P2 erratum: the paper's single-count accounting is half of it).
4. ⊥ (no public proposal or Q_Priv rejects) makes the private subset a cluster.

Before anything is spent, :func:`check_public_clusters` replays the public part of these
iterations on the public rows alone (their own top-k directions in place of the private PCA,
every Q_Priv confirming, no iteration cap): an upper bound on the clusters a run can end with.
When even that is below k the fit is refused (:class:`~privgauss.exceptions.InvalidDataError`,
nothing spent) instead of spending the budget and failing. With k ≥ d the private PCA keeps
every direction, so the bound is exact about the run's public decisions; with k < d the public
rows' directions stand in for the private ones.

Estimation (Alg. 7), ``estimator=``:

* ``"joint"`` (default for ``constants="practical"``):
  :func:`~.cluster_estimation.estimate_clusters` — joint noisy cluster sizes, then three steps of
  noisy clipped sums and outer-product sums released jointly over the clusters (L2 sensitivities
  2τ and √2·τ² whether a replaced row stays in its cluster or moves between two: no factor 2),
  starting from each cluster's public frame (its public rows' mean and shrunk covariance, or its
  ball when it has fewer than two distinct public rows).
* ``"learner"`` (default for ``constants="theory"``): joint noisy cluster sizes (L2 sensitivity
  √2) and CoinPress per cluster with the public prior (centre c_i, radius R_i,
  R_i²/``cond_range`` ⪯ Σ ⪯ R_i²) on a fixed-size subset, charged 2ρ_E because a replaced row can
  change two clusters (:func:`~.sample_aggregate.estimate_components`, pitfall P3).

Budget ρ = ρ_clustering (``clustering_share``, default 30% "joint" / 15% "learner": 2k
iterations × (PCA 40% + Q_Priv 60% "joint", PCA 70% + Q_Priv 30% "learner")) + ρ_counts (5%)
+ the estimation (the rest; "learner": 2ρ_E). Failure to find exactly k clusters is a DP
output: :class:`~privgauss.exceptions.EstimationFailed` after the whole budget is charged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.spatial.distance import pdist

from ..exceptions import EstimationFailed, InvalidDataError
from ..mechanisms import Release, private_count
from ..privacy import ZCDP, Accountant, Budget, BudgetPlan
from ..sensitivity import histogram_l2
from .cluster_estimation import (
    MEAN_SHARE,
    ClusterFrame,
    cluster_plan,
    estimate_clusters,
    frame_from_public,
)
from .component_estimation import ComponentPrior, Partition, estimate_components
from .private_pca import private_pca, top_eigenvectors
from .public_clustering import public_split, radius_grid, split_constants, supercluster
from .public_heavy import joint_component_rows, pick_estimator, positive_definite, prepare

__all__ = [
    "check_public_clusters",
    "light_plan",
    "min_public_rows",
    "public_cluster_count",
    "public_light_gmm",
    "public_light_requirements",
    "q_priv_counts",
    "q_priv_sensitivity",
    "run_plan",
]

CLUSTERING_SHARE = 0.15
COUNT_SHARE = 0.05
PCA_SHARE = 0.7  # of each clustering iteration; Q_Priv gets the rest
#: The joint estimator needs less of ρ, so the clustering gets more (and Q_Priv, whose noisy
#: counts limited n, more of each iteration): measured 10/10 at n = 20,000 (issue-5 setting)
#: against 4/6 with the learner's shares.
JOINT_CLUSTERING_SHARE = 0.3
JOINT_PCA_SHARE = 0.4
#: The joint estimator's steps: the public frames here come from few public rows.
JOINT_FRACTIONS = (0.15, 0.25, 0.6)
JOINT_CLIP_SCALE = (2.0, 1.5, 1.0)


def q_priv_sensitivity() -> float:
    """L2 sensitivity of Q_Priv's three counts over disjoint regions under replace-one: one row
    leaves a region and enters another, √2 (a histogram's,
    :func:`privgauss.sensitivity.histogram_l2`)."""
    return histogram_l2()


def public_light_requirements(
    *, n: int, d: int, k: int, rho: float, min_weight: float, beta: float = 0.05
) -> dict[str, float]:
    """Practical n for public-light (default joint estimator and its shares): Q_Priv's counts
    (noise σ_q) must resolve t = n·w_min/4 and the annulus threshold 0.1·t; the private PCA's
    spectral noise (∝ √d/√ρ_PCA) must stay below the between-component signal; the per-cluster
    estimation as for public-heavy (:func:`~.public_heavy.joint_component_rows`). Constants
    measured with ``benchmarks/public_mixtures.py`` and the joint estimator (d = 10, k = 3,
    w_min = 0.2, ε = 1, 60 public rows: 0/10 recovered at n = 12,000, 10/10 at 20,000; this
    gives 18,000)."""
    rho_it = rho * JOINT_CLUSTERING_SHARE / (2 * k)
    sigma_q = q_priv_sensitivity() / math.sqrt(2 * rho_it * (1 - JOINT_PCA_SHARE))
    z = math.sqrt(2 * math.log(6 * k / beta))
    rho_e = rho * (1 - JOINT_CLUSTERING_SHARE - COUNT_SHARE)
    return {
        "Q_Priv counts": 4 * 7 * z * sigma_q / min_weight,
        "private PCA noise": 25 * math.sqrt(d) / (min_weight
                                                 * math.sqrt(rho_it * JOINT_PCA_SHARE)),
        "per-component estimation": joint_component_rows(d, rho_e, min_weight),
    }


def light_plan(rho: float, k: int, clustering_share: float, pca_share: float) -> BudgetPlan:
    """The budget plan of public-light for ρ (public): 2k clustering iterations of
    ``clustering_share``·ρ/(2k) each, split ``pca_share`` to the private PCA
    ("iteration-i/pca") and the rest to Q_Priv ("iteration-i/q-priv"); :data:`COUNT_SHARE` of ρ
    to the cluster sizes ("counts") and the rest to the estimation ("estimate", charged once:
    2ρ_E). The parts compose to exactly ρ."""
    it = rho * clustering_share / (2 * k)
    counts = rho * COUNT_SHARE
    est = rho - 2 * k * it - counts
    parts: dict[str, Budget] = {}
    for i in range(2 * k):
        parts[f"iteration-{i + 1}/pca"] = ZCDP(it * pca_share)
        parts[f"iteration-{i + 1}/q-priv"] = ZCDP(it * (1 - pca_share))
    parts.update({"counts": ZCDP(counts), "estimate": ZCDP(est)})
    return BudgetPlan.of(ZCDP(rho), parts)


@dataclass(frozen=True)
class LightOptions:
    """The public knobs of :func:`public_light_gmm`; they move accuracy only.

    Parameters
    ----------
    cond_range : float
        Condition-number range (≥ 1) of a cluster's covariance prior.
    clustering_share : float, optional
        Share of ρ for the hard clustering (default: the estimator's).
    count_sensitivity : float, optional
        Overrides Q_Priv's √2 (for audits of a broken variant only).
    estimator : {"joint", "learner"}, optional
        The per-cluster estimator (default: ``"joint"``, or ``"learner"`` for
        ``constants="theory"``).
    """

    cond_range: float = 1e4
    clustering_share: float | None = None
    count_sensitivity: float | None = None
    estimator: str | None = None


def min_public_rows(d: int, min_weight: float) -> int:
    """The fewest public rows public-light accepts: Alg. 3/5 need t = m·w_min/2 ≥ 2 public rows
    per ball, so m ≥ 4/w_min (whatever d)."""
    return math.ceil(4 / min_weight)


def public_light_gmm(
    X: Any,
    k: int,
    budget: Budget,
    *,
    public_X: Any,
    min_weight: float | None = None,
    beta: float = 0.05,
    constants: str = "practical",
    options: LightOptions | None = None,
    release: Release,
    info: dict[str, Any] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(weights, means, covariances) of a k-component mixture, ρ-zCDP (or (ε, δ)-DP) w.r.t.
    the rows of ``X`` for any ``public_X``; replace-one, n public. See the module docstring.

    ``info`` (if given) receives ``"public_balls"``: the released/public balls (c_i, R_i) of the
    clusters. ``options``: the public knobs (:class:`LightOptions`). Charged to ``release``
    (step "public-light" unless it names one).
    """
    opts = LightOptions() if options is None else options
    cond_range = opts.cond_range
    count_sensitivity = opts.count_sensitivity
    rel = release.named("public-light")
    accountant = rel.accountant
    joint = pick_estimator(opts.estimator, constants) == "joint"
    clustering_share = _clustering_share(opts.clustering_share, joint)
    if not (1.0 <= cond_range and math.isfinite(cond_range)):
        raise ValueError("cond_range must be finite and >= 1")
    if not (0 < clustering_share < 1 - COUNT_SHARE):
        raise ValueError(f"clustering_share must be in (0, {1 - COUNT_SHARE:g})")
    X, P, k, w_min, rho = prepare(X, k, budget, public_X, min_weight, beta, accountant,
                                  "public-light", min_public_rows)
    n = X.shape[0]
    check_public_clusters(P, k, w_min, constants)  # before anything is spent
    plan = light_plan(rho, k, clustering_share, JOINT_PCA_SHARE if joint else PCA_SHARE)
    sens = q_priv_sensitivity() if count_sensitivity is None else float(count_sensitivity)
    clusters = _hard_clustering(P, X, k, w_min, plan, sens, constants, rel)
    if info is not None:
        info["public_balls"] = [(c.copy(), R) for _, _, c, R in clusters]
    counts, estimation = plan.part("counts", ZCDP), plan.part("estimate", ZCDP)
    if len(clusters) != k:
        accountant.spend(counts, step=rel.name("counts"), note="unused: failed")
        accountant.spend(estimation, step=rel.name("estimate"), note="unused: failed")
        raise EstimationFailed(
            f"the private hard clustering found {len(clusters)} clusters, not {k}: its noisy "
            f"counts (Q_Priv) did not confirm enough of the public split proposals on the n = "
            f"{n} private rows; the whole budget ({accountant.spent_str()}) was spent",
            step=rel.name("clustering"),
            needed_n=math.ceil(max(public_light_requirements(
                n=n, d=X.shape[1], k=k, rho=rho, min_weight=w_min, beta=beta).values())),
        )
    labels = np.full(n, -1, dtype=np.int64)
    for j, (rows, _, _, _) in enumerate(clusters):
        labels[rows] = j
    if joint:
        frames = [_frame(P[pub], c, R) for _, pub, c, R in clusters]
        weights, means, covs = estimate_clusters(
            X, labels, frames, ZCDP(counts.rho + estimation.rho),
            count_share=counts.rho / (counts.rho + estimation.rho),
            release=rel, fractions=JOINT_FRACTIONS, clip_scale=JOINT_CLIP_SCALE,
        )
        return weights, means, positive_definite(covs)
    priors = [_prior(P[pub], c, R, cond_range, constants) for _, pub, c, R in clusters]
    keys = rel.rng.random(n)
    weights, means, covs, _ = estimate_components(
        X, Partition(labels, keys), priors, counts, estimation, beta=beta / 3,
        constants=constants, release=rel,
    )
    return weights, means, positive_definite(covs)


def _clustering_share(share: float | None, joint: bool) -> float:
    return (JOINT_CLUSTERING_SHARE if joint else CLUSTERING_SHARE) if share is None else share


def run_plan(rho: float, k: int, constants: str = "practical",
             clustering_share: float | None = None, estimator: str | None = None
             ) -> BudgetPlan:
    """Every charge of :func:`public_light_gmm` at ρ, named as its ledger records them after
    ``public-light/``: the 2k clustering iterations of :func:`light_plan`, then the
    estimation — the joint cluster estimation's counts and steps
    (:func:`~.cluster_estimation.cluster_plan` of the counts and estimate parts together) or,
    for the per-cluster learners, ``counts`` and ``estimate``. Public quantities only."""
    joint = pick_estimator(estimator, constants) == "joint"
    share = _clustering_share(clustering_share, joint)
    plan = light_plan(rho, k, share, JOINT_PCA_SHARE if joint else PCA_SHARE)
    if not joint:
        return plan
    parts = {n: b for n, b in plan.parts if n.startswith("iteration-")}
    counts, estimation = plan.part("counts", ZCDP), plan.part("estimate", ZCDP)
    both = ZCDP(counts.rho + estimation.rho)
    parts.update(cluster_plan(both, counts.rho / both.rho, JOINT_FRACTIONS, MEAN_SHARE).parts)
    return BudgetPlan.of(ZCDP(rho), parts)


def _hard_clustering(
    P: np.ndarray,
    X: np.ndarray,
    k: int,
    w_min: float,
    plan: BudgetPlan,
    sensitivity: float,
    constants: str,
    release: Release,
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray, float]]:
    """Alg. 6: the clusters as (private row indices, public row indices, public centre c_i,
    public radius R_i), charged to ``release`` under its step.
    The private index sets are **not** DP outputs; the balls are public or DP outputs."""
    m, d = P.shape
    n = X.shape[0]
    accountant = release.accountant
    const = split_constants(constants)
    t_pub, t_priv = m * w_min / 2.0, n * w_min / 4.0
    rank = min(k, d)
    queue: list[tuple[np.ndarray, np.ndarray]] = [(np.arange(m), np.arange(n))]
    out: list[tuple[np.ndarray, np.ndarray, np.ndarray, float]] = []
    for it in range(2 * k):
        step = release.name(f"iteration-{it + 1}")
        pub = priv = None
        while queue and len(out) < k:  # empty public subsets: dropped (a public decision)
            pub, priv = queue.pop(0)
            if pub.size:
                break
            pub = None
        if pub is None or priv is None:
            _unused(accountant, plan, it, step)
            continue
        c, R = supercluster(P[pub], k, const.sc_multiplier)
        in_pub = np.linalg.norm(P[pub] - c, axis=1) <= R
        in_priv = np.linalg.norm(X[priv] - c, axis=1) <= R
        queue.append((pub[~in_pub], priv[~in_priv]))
        pub, priv = pub[in_pub], priv[in_priv]
        if not R > 0:  # one public row (or duplicates): nothing to split on
            out.append((priv, pub, c, R))
            _unused(accountant, plan, it, step)
            continue
        padded = np.repeat(c[None, :], n, axis=0)
        padded[: priv.size] = X[priv]
        pca_budget = plan.part(f"iteration-{it + 1}/pca", ZCDP)
        pca = private_pca(padded, c, R, rank, pca_budget,
                          release=Release(accountant, release.noise, f"{step}/pca"))
        Yp, Zp = pca.project(P[pub]), pca.project(X[priv])
        r_min = R / math.sqrt(d) if constants == "theory" else R / (8.0 * math.sqrt(d))
        found = public_split(Yp, t_pub, radius_grid(R, r_min, const.grid_ratio), const)
        if found is None:
            accountant.spend(plan[f"iteration-{it + 1}/q-priv"], step=f"{step}/q-priv",
                             note="unused: no public split")
            out.append((priv, pub, c, R))
            continue
        j, r = found
        centre, radius = Yp[j], 2.0 * r
        qpriv = plan.part(f"iteration-{it + 1}/q-priv", ZCDP)
        noisy = q_priv_counts(Zp, centre, radius, const.private_outer, qpriv,
                              release=Release(accountant, release.noise, f"{step}/q-priv"),
                              sensitivity=sensitivity)
        ok = (
            noisy[0] >= t_priv
            and noisy[1] < const.private_annulus_fraction * t_priv
            and noisy[2] >= t_priv
        )
        if not ok:
            out.append((priv, pub, c, R))
            continue
        in_p = np.linalg.norm(Yp - centre, axis=1) <= radius
        inside = np.linalg.norm(Zp - centre, axis=1) <= radius
        queue.append((pub[in_p], priv[inside]))
        queue.append((pub[~in_p], priv[~inside]))
    return out


def public_cluster_count(P: np.ndarray, k: int, w_min: float, constants: str) -> int:
    """An upper bound (capped at k) on the clusters :func:`_hard_clustering` can end with,
    replayed on the public rows ``P`` alone: the same queue, superclusters, split target
    t = m·w_min/2 and radius grid, with the private PCA replaced by the top-min(k, d)
    eigenvectors of the public rows' second moment about the supercluster centre (the private
    PCA's statistic, on the public rows), **every** public proposal accepted and no 2k-iteration
    cap. A function of public data only. Why a bound: a rejected proposal makes its subset one
    cluster where accepting it gives at least one (both sides of a split hold ≥ t ≥ 2 public
    rows), and the cap only stops the run early; with k ≥ d both projections keep every
    direction, so the public decisions are those of the run."""
    return min(_public_replay(P, k, w_min, constants)[0], k)


def _public_replay(P: np.ndarray, k: int, w_min: float, constants: str) -> tuple[int, int]:
    """:func:`public_cluster_count`'s replay: (the clusters it ends with, uncapped; how many of
    them are a ball of radius 0 — identical public rows, whose ball holds no private row
    unless one equals them exactly)."""
    m, d = P.shape
    const = split_constants(constants)
    t_pub, rank = m * w_min / 2.0, min(k, d)
    queue: list[np.ndarray] = [np.arange(m)]
    n_out = n_point = 0
    for _ in range(4 * m + 4):  # every step makes a cluster or strictly shrinks a subset
        if not queue or n_out >= k:
            break
        pub = queue.pop(0)
        if not pub.size:
            continue
        c, R = supercluster(P[pub], k, const.sc_multiplier)
        in_pub = np.linalg.norm(P[pub] - c, axis=1) <= R
        queue.append(pub[~in_pub])
        pub = pub[in_pub]
        Y = P[pub] - c
        found = None
        if R > 0:
            _, V = top_eigenvectors(Y.T @ Y, rank)
            Yp = Y @ V
            r_min = R / math.sqrt(d) if constants == "theory" else R / (8.0 * math.sqrt(d))
            found = public_split(Yp, t_pub, radius_grid(R, r_min, const.grid_ratio), const)
        if found is None:
            n_out += 1  # this subset ends as a cluster
            n_point += not R > 0
            continue
        j, r = found
        in_p = np.linalg.norm(Yp - Yp[j], axis=1) <= 2.0 * r
        queue.extend([pub[in_p], pub[~in_p]])
    return n_out, n_point


def check_public_clusters(P: np.ndarray, k: int, w_min: float, constants: str) -> None:
    """Refuse, before anything is spent, public rows on which public-light cannot end with k
    clusters (:func:`public_cluster_count` < k), or ends with a cluster whose public ball has
    radius 0 (duplicated public rows: the ball holds no private row, and the estimation failed
    after spending — benchmarks/edge_sweep.py's R2): InvalidDataError naming what to do. Public
    data only, so the refusal reveals nothing about the private rows."""
    found, points = _public_replay(P, k, w_min, constants)
    if min(found, k) < k:
        raise InvalidDataError(
            f"method='public-light' cannot find n_components = {k} clusters with these public "
            f"rows: its public split separates them into only {found} (nothing was spent); "
            "the components may not be separated enough for it (it is validated at separation "
            "ratio >= 6), or a few far outlying public rows (gross errors) stretch its search "
            "far beyond the clusters' scale — look for them and drop them; else use "
            "method='em' (no separation needed) or 'auto', or give more public rows from the "
            "same mixture"
        )
    if points:
        raise InvalidDataError(
            f"method='public-light' cannot use these public rows: {points} of the clusters its "
            "public split finds are balls of radius 0 around identical (duplicated) public "
            "rows, which hold no private row (nothing was spent); give public rows without "
            "duplicates (at least two distinct rows per component), or use method='em' or "
            "'auto'"
        )


def q_priv_counts(
    Z: np.ndarray,
    centre: np.ndarray,
    radius: float,
    outer: float,
    budget: ZCDP,
    *,
    release: Release,
    sensitivity: float | None = None,
) -> np.ndarray:
    """Q_Priv's three noisy counts (eq. (4)) of the rows of ``Z``: inside B_radius(centre), in
    the annulus up to outer·radius, outside; ``centre``, ``radius``, ``outer`` public. ρ-zCDP
    under replace-one (discrete Gaussian, L2 sensitivity :func:`q_priv_sensitivity` = √2: the
    regions are disjoint and one row can leave one and enter another). Charged to ``release``
    (step "q-priv" unless it names one)."""
    dist = np.linalg.norm(np.asarray(Z, dtype=np.float64) - centre, axis=1)
    inside = dist <= radius
    within = dist <= outer * radius
    counts = np.array([inside.sum(), (within & ~inside).sum(), (~within).sum()])
    sens = q_priv_sensitivity() if sensitivity is None else float(sensitivity)
    return private_count(counts, budget, accountant=release.accountant, noise=release.noise,
                         step=release.named("q-priv").step, sensitivity=sens)


def _frame(Y: np.ndarray, c: np.ndarray, R: float) -> ClusterFrame:
    """A cluster's public frame: its public rows' (shrunk) covariance when they have spread,
    else the isotropic frame of its ball (variance R²/d per direction). Public data only."""
    d = c.shape[0]
    if Y.shape[0] >= 2 and float(np.ptp(Y, axis=0).max()) > 0:
        return frame_from_public(Y, shrink=True)
    R = R if R > 0 else 1.0
    return ClusterFrame(np.asarray(c, dtype=np.float64), np.eye(d) * math.sqrt(d) / R)


def _prior(
    Y: np.ndarray, c: np.ndarray, R: float, cond_range: float, constants: str
) -> ComponentPrior:
    """The public prior of a cluster. ``"theory"``: its ball, ‖μ − c‖ ≤ R, Σ ⪯ R²·I (Alg. 7
    with the KLSU19 range parameters). ``"practical"``: from the cluster's own public rows
    (≥ 2): their mean, tr Σ ≈ half the mean squared pairwise distance τ, ‖μ − ȳ‖ ≤ 2√τ,
    Σ ⪯ 2τ·I — public data only. Lower bound: upper/``cond_range``. A degenerate ball
    (duplicated public rows, R = 0) gets radius 1: accuracy is then whatever it is, privacy is
    unaffected."""
    R = R if R > 0 else 1.0
    if constants == "practical" and Y.shape[0] >= 2:
        tau = float(np.mean(pdist(Y, "sqeuclidean"))) / 2.0
        if tau > 0:
            hi = 2.0 * tau
            return ComponentPrior(Y.mean(axis=0), 2.0 * math.sqrt(tau), (hi / cond_range, hi))
    return ComponentPrior(c, R, (R * R / cond_range, R * R))


def _unused(accountant: Accountant, plan: BudgetPlan, it: int, step: str) -> None:
    for name in ("pca", "q-priv"):
        accountant.spend(
            plan[f"iteration-{it + 1}/{name}"], step=f"{step}/{name}", note="unused iteration"
        )
