"""Sample-and-aggregate Gaussian-mixture learner (KSSU19 §6, Thm 6.1/6.4; spec §8), plus the
per-component estimation on a released partition that the KSSU19 learner (:mod:`.kssu`) reuses.

**Neighbours:** replace one row of ``X``; n is public. **Guarantee:**
:func:`sample_aggregate_gmm` is (ε, δ)-DP for ``ApproxDP(ε, δ)`` (δ > 0), whatever the data; the
whole budget is charged whatever the outcome, a failure (⊥) raises
:class:`~privgauss.exceptions.EstimationFailed`.

Algorithm (what is released, and its sensitivity):

1. *Chunks* (public randomness). A public random permutation splits the rows into ``s`` disjoint
   chunks of about m = n/s rows. A non-private learner (default: scikit-learn's
   ``GaussianMixture``, seeded from public randomness, warnings silenced) fits k components to
   each chunk separately: chunk c yields weights w_c ∈ Δ_k and means M_c ∈ R^{k×d}. A chunk whose
   fit fails or is not finite contributes nothing. One changed row changes **one chunk**, i.e.
   up to k estimates.
2. *Peeling, k rounds of the private 1-cluster* (:func:`~.one_cluster.one_cluster`, each
   (ε_M/k, δ_M/k)-DP). In round j every chunk contributes **exactly one point**: its still
   unclaimed estimate of largest weight, or, if it has none, a dummy at a public far-away
   location (dummies are spaced so that no ball of the public radius grid holds two). This is a
   per-chunk map of (chunk, released balls), so neighbouring datasets give point sets of the
   same public size s that differ in **at most one point** — exactly one_cluster's replace-one
   neighbour relation, no group-privacy factor k is needed. The released ball B_j = B(p_j, c·r_j)
   (t_j = ⌊t_fraction·s/(k − j + 1)⌋, public) claims every estimate it contains.
3. *Data-level estimation* (:func:`estimate_components`). Every row is assigned to its nearest
   released centre p_j (a per-row map of released values). The k part sizes are released
   jointly with discrete Gaussian noise, L2 sensitivity √2 (replace-one moves one row between
   two parts), giving the weights. Each part is cut/padded to a public size m_j (a function of
   its noisy count; see :func:`fixed_size_subset`) and estimated with
   :func:`~privgauss.gaussian.coinpress.coinpress_gaussian` (ρ_E-zCDP, replace-one) inside the
   released prior ‖μ_j − p_j‖ ≤ c·r_j, λ(Σ_j) ≤ hi_j = cov_margin·r_j²·m·ŵ_j (a chunk mean has
   covariance Σ_j/(m w_j), so r_j² ≈ tr Σ_j/(m w_j) up to the grid factor), lo_j = hi_j/cond_range.
   A replaced row changes at most **two** parts (its old and its new one), each by one
   replacement of the fixed-size input, so the k CoinPress runs cost 2·ρ_E in total; the
   accountant is charged ZCDP(2ρ_E) before any of them runs (the runs draw on scratch
   accountants of ρ_E each).

Budget split of ``ApproxDP(ε, δ)``: the peeling rounds take ε_M = ``means_share``·ε and δ/2
(basic composition; round j gets ε_M·(k − j + 1)/(k(k + 1)/2) and δ/(2k), the last a
remainder; inside a round one_cluster splits by ``round_split``); the rest is converted to zCDP,
ρ_Z = the largest ρ with ρ-zCDP ⇒ (ε − ε_M, δ/2)-DP (tight CKS20 conversion), of which
``counts_share`` goes to the counts and the remainder to the 2ρ_E estimation charge. The ledger
composes to exactly (ε, δ). Everything the algorithm branches on (chunking, t_j, balls, m_j,
priors) is public or released; nothing data dependent is logged or put in a message.

Cost: k·s learner fits of m rows, k one_cluster calls on s points (O(min(s, max_points)²·d)),
and k CoinPress runs on the parts.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..backends import as_rows
from ..exceptions import EstimationFailed
from ..mechanisms import Release
from ..privacy import (
    ApproxDP,
    charge_unused,
)
from ..progress import bar
from ..validation import check_positive_int, check_probability
from .component_estimation import (
    ComponentPrior,
    Partition,
    estimate_components,
    nearest_center,
)
from .good_radius import doubling_radii
from .one_cluster import Ball, BallSearch, one_cluster
from .sample_aggregate_budget import ROUND_SPLIT, SABudget, plan_sa_budget
from .sample_size import one_cluster_floor

__all__ = [
    "DEFAULT_RADIUS_RANGE",
    "Learner",
    "SAOptions",
    "check_mixture_inputs",
    "default_chunk_size",
    "dummy_points",
    "gmm_learner",
    "kmeans_learner",
    "needed_n",
    "root_radius_grid",
    "round_points",
    "sample_aggregate_gmm",
]

#: public default range of the radius grids (data units); T = 61 doubling radii. The top is
#: 1e12, not 1e6: with no prior the enclosing search can only find a ball on this grid, and
#: at 1e6 a table in large units (two clusters in units of 1e7, e.g. money in cents) failed
#: after spending at every ε (kssu, sample-aggregate, pegme, agnostic: benchmarks/
#: edge_sweep.py); the wider grid costs one AboveThreshold's ln T (+3 % on sample-aggregate's
#: practical n at ε = 1, nothing at ε ≥ 1e4)
DEFAULT_RADIUS_RANGE = (1e-6, 1e12)
Learner = Callable[[np.ndarray, int, int], tuple[np.ndarray, np.ndarray]]


# ----------------------------------------------------------------------------------------------
# Non-private learners run on each chunk
# ----------------------------------------------------------------------------------------------


def gmm_learner(X: np.ndarray, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn ``GaussianMixture`` (diagonal covariances, k-means++ init, seeded):
    (weights, means). Only the chunk means and weights are aggregated, and a diagonal model is
    far more stable than a full one on small chunks.

    The chunk is fitted in its own standardised columns (its mean and standard deviation, 1
    for a constant column) and the means mapped back, so the fit is the same in any units:
    scikit-learn's ``reg_covar`` is absolute, and in units of 1e7 it no longer kept a
    component from collapsing onto one row (17 of 50 chunks of two clusters 40 sd apart fitted
    one component to a single row, and the aggregation failed in 9 of 12 fits at ε = 1e4;
    none in units of 1: benchmarks/edge_sweep.py). A function of the chunk's rows only, so the
    aggregation's per-chunk argument is unchanged."""
    from sklearn.mixture import GaussianMixture

    loc = X.mean(axis=0)
    scale = X.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)

    gm = GaussianMixture(
        n_components=k,
        covariance_type="diag",
        n_init=1,
        max_iter=100,
        reg_covar=1e-6,
        init_params="k-means++",
        random_state=seed,
    )
    gm.fit((X - loc) / scale)
    return gm.weights_, loc + gm.means_ * scale


def kmeans_learner(X: np.ndarray, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn ``KMeans`` (k-means++, 3 restarts, seeded): (cluster fractions, centres)."""
    from sklearn.cluster import KMeans

    km = KMeans(n_clusters=k, n_init=3, random_state=seed).fit(X)
    weights = np.bincount(km.labels_, minlength=k) / X.shape[0]
    return weights, km.cluster_centers_


def default_chunk_size(k: int, d: int, min_weight: float | None = None) -> int:
    """Public default rows per chunk: ⌈max(20, 2(d + 1))/w_min⌉ (w_min defaults to 1/k), i.e.
    about max(20, 2(d + 1)) rows of the lightest component. Measured on separated mixtures
    (separation ratio 3): ≤ 1% of the chunk fits miss a component for d ≤ 10, k ≤ 5. Only the
    clustering uses the chunks, so small chunks (many of them) are what the aggregation wants."""
    w = 1.0 / k if min_weight is None else float(min_weight)
    return int(math.ceil(max(20, 2 * (d + 1)) / w - 1e-9))


def _fit_chunks(
    data: np.ndarray, k: int, s: int, learner: Learner, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Weights (s, k), means (s, k, d), validity (s, k) and the smallest chunk size."""
    n, d = data.shape
    perm = rng.permutation(n)  # public randomness
    chunks = np.array_split(perm, s)
    seeds = rng.integers(0, 2**31 - 1, size=s)
    W = np.zeros((s, k))
    M = np.zeros((s, k, d))
    ok = np.zeros((s, k), dtype=bool)
    for c, idx in enumerate(bar(chunks, "chunk fits")):
        try:
            with warnings.catch_warnings():  # a chunk's convergence warning is data dependent
                warnings.simplefilter("ignore")
                w, m = learner(data[idx], k, int(seeds[c]))
            w = np.asarray(w, dtype=np.float64).reshape(-1)
            m = np.asarray(m, dtype=np.float64)
        except Exception:  # noqa: BLE001 - a failing chunk fit is a per-chunk outcome: drop it
            continue
        if w.shape != (k,) or m.shape != (k, d):
            continue
        good = (
            np.isfinite(m).all(axis=1) & np.isfinite(w) & (w >= 0) & (np.abs(m) < 1e150).all(axis=1)
        )
        W[c] = np.where(good, w, 0.0)
        M[c] = np.where(good[:, None], m, 0.0)
        ok[c] = good
    return W, M, ok, min(len(c) for c in chunks)


def dummy_points(
    s: int, d: int, radii: np.ndarray, c: float, rng: np.random.Generator
) -> np.ndarray:
    """s public far-away points on a ray, 4·c·max(radii) apart (so no grid ball, nor any ball the
    1-cluster routine can release, holds two), starting 10³·max(radii) from the origin."""
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    r_hi = float(np.max(radii))
    dist = 1e3 * r_hi + 4.0 * c * r_hi * np.arange(s)
    return dist[:, None] * u[None, :]


def round_points(
    W: np.ndarray, M: np.ndarray, alive: np.ndarray, dummies: np.ndarray
) -> np.ndarray:
    """The s points of one peeling round: chunk c's unclaimed estimate of largest weight
    (ties to the lowest index), or its dummy if none is left. Row c depends only on chunk c's
    estimates and on ``alive[c]`` (a function of chunk c and the released balls): a per-chunk
    map, so neighbouring datasets give point sets that differ in at most one row."""
    has = alive.any(axis=1)
    pick = np.argmax(np.where(alive, W, -np.inf), axis=1)
    P = dummies.copy()
    P[has] = M[has, pick[has]]
    return P


# ----------------------------------------------------------------------------------------------
# Up-front checks shared by the no-public-data learners (nothing is spent before them)
# ----------------------------------------------------------------------------------------------


def check_mixture_inputs(
    X: Any, k: int, *, beta: float, constants: str, min_weight: float | None, cond_range: float
) -> tuple[np.ndarray, int, float, float]:
    """(data, k, beta, w_min) after the checks every learner needs, with messages that say what
    to supply: finite 2-D data, 1 ≤ k ≤ n, β ∈ (0, 1), ``constants``, ``min_weight`` in
    (0, 1/k] (default 1/k) and a finite ``cond_range`` ≥ 1."""
    data = as_rows(X, min_rows=2)
    k = check_positive_int(k, "k", minimum=1)
    if k > data.shape[0]:
        raise ValueError(
            f"k = {k} components need at least k rows, and in practice far more (n = "
            f"{data.shape[0]}); see privgauss.mixture_requirements for the n each method needs"
        )
    beta = check_probability(beta, "beta")
    if constants not in ("practical", "theory"):
        raise ValueError("constants must be 'practical' or 'theory'")
    w_min = 1.0 / k if min_weight is None else float(min_weight)
    if not (0 < w_min <= 1.0 / k):
        raise ValueError(f"min_weight must be in (0, 1/k] = (0, {1.0 / k:.4g}]")
    if not (cond_range >= 1 and math.isfinite(cond_range)):
        raise ValueError("cond_range must be a finite number >= 1")
    return data, k, beta, w_min


def root_radius_grid(radii: Any) -> np.ndarray:
    """The public radius grid of a root search: ``radii`` (a non-empty 1-D grid of finite
    positive radii) or, if None, the doubling grid over :data:`DEFAULT_RADIUS_RANGE`."""
    grid = doubling_radii(*DEFAULT_RADIUS_RANGE) if radii is None else np.asarray(radii, float)
    if grid.ndim != 1 or grid.size == 0 or not (np.isfinite(grid).all() and (grid > 0).all()):
        raise ValueError("radii must be a non-empty 1-D grid of finite positive radii")
    return grid


# Measured safety factors (benchmarks/mixture_recovery.py): the practical n is the smallest at
# which the 1-cluster rounds' signal (points in a cluster) exceeds their noise floor (Γ, τ) by
# these factors.
T_OVER_GAMMA = 2.2
BOX_OVER_TAU = 2.0


def practical_terms(
    n: int, d: int, k: int, eps: float, delta: float, w: float, beta: float
) -> dict:
    """This implementation's sample-size terms (public quantities only; measured safety
    factors, :data:`T_OVER_GAMMA` and :data:`BOX_OVER_TAU`) and knobs."""
    plan = plan_sa_budget(ApproxDP(eps, delta), k, d)
    T = doubling_radii(*DEFAULT_RADIUS_RANGE).size
    r0 = plan.rounds[0]
    gamma, tau = one_cluster_floor(r0.epsilon, r0.delta, d, beta / (4 * k), T, ROUND_SPLIT)
    m = default_chunk_size(k, d, w)
    # round 1: t = 0.8·s/k must exceed 2Γ (else a too-small radius passes AboveThreshold); the
    # heaviest box must hold > τ of the ~s/k estimates
    s_radius = k * T_OVER_GAMMA * gamma / 0.8
    s_box = k * BOX_OVER_TAU * tau
    return {
        "terms": {
            "1-cluster radius search (t vs Gamma)": s_radius * m,
            "1-cluster box histogram (threshold tau)": s_box * m,
            "one chunk per 2k": 2.0 * k * m,
        },
        "knobs": {"chunk size": m},
    }


def needed_n(shape: tuple[int, int], k: int, budget: ApproxDP, min_weight: float, beta: float
             ) -> int:
    """The practical n this learner needs (public quantities only), for the ``needed_n`` of an
    :class:`EstimationFailed`."""
    n, d = shape
    terms = practical_terms(n, d, k, budget.epsilon, budget.delta, min_weight, beta)["terms"]
    return int(math.ceil(max(terms.values())))


# ----------------------------------------------------------------------------------------------
# The learner
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SAOptions:
    """The public knobs of :func:`sample_aggregate_gmm`; they move accuracy and running time
    only.

    Parameters
    ----------
    n_chunks : int, optional
        Number of chunks (default n // :func:`default_chunk_size`, which uses the public
        ``min_weight``).
    learner : callable, optional
        The non-private learner (rows, k, seed) → (weights, means) run on each chunk (default
        :func:`gmm_learner`).
    radii : array-like, optional
        Public doubling grid of the 1-cluster rounds (default :data:`DEFAULT_RADIUS_RANGE`).
    peel_factor : float
        A round's ball radius over the radius it was found at (≥ 1).
    t_fraction : float
        Share (0, 1] of the chunks a round looks for, over the components left.
    box_factor : float
        Side of GoodCenter's grid boxes over the radius.
    cov_margin : float
        Margin of a part's covariance prior over its ball.
    cond_range : float
        Condition-number range of a part's covariance prior.
    means_share, counts_share : float
        Shares of ε for the rounds and of the rest for the counts (the remainder: estimation).
    round_split : sequence of float
        Relative ε weights of a round's releases.
    max_points : int
        Subsample size of a round's radius search.
    """

    n_chunks: int | None = None
    learner: Learner | None = None
    radii: Any = None
    peel_factor: float = 3.0
    t_fraction: float = 0.8
    box_factor: float = 4.0
    cov_margin: float = 8.0
    cond_range: float = 1e4
    means_share: float = 0.7
    counts_share: float = 0.05
    round_split: Sequence[float] = ROUND_SPLIT
    max_points: int = 50_000


def sample_aggregate_gmm(
    X: Any,
    k: int,
    budget: ApproxDP,
    *,
    min_weight: float | None = None,
    beta: float = 0.05,
    constants: str = "practical",
    options: SAOptions | None = None,
    release: Release,
    info: dict[str, Any] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Private k-component Gaussian mixture by sample-and-aggregate (KSSU19 §6; spec §8):
    (weights (k,), means (k, d), covariances (k, d, d)).

    (ε, δ)-DP for ``budget = ApproxDP(ε, δ)`` under replace-one neighbours with n public, for any
    data and any chunk learner. ``min_weight`` (default 1/k) and ``options``
    (:class:`SAOptions`) are public knobs that only affect accuracy. Charged to ``release``
    (step "sample-aggregate" unless it names one). Raises :class:`EstimationFailed` (with the
    whole budget spent) when a round finds no cluster or a part is too small. ``info``, if
    given, receives public/DP facts (chunks, balls, counts). See the module docstring for the
    derivation.
    """
    opts = SAOptions() if options is None else options
    n_chunks, t_fraction, cond_range = opts.n_chunks, opts.t_fraction, opts.cond_range
    peel_factor, cov_margin = opts.peel_factor, opts.cov_margin
    rel = release.named("sample-aggregate")
    data, k, beta, w_min = check_mixture_inputs(
        X, k, beta=beta, constants=constants, min_weight=min_weight, cond_range=cond_range
    )
    n, d = data.shape
    if not (0 < t_fraction <= 1) or not (peel_factor >= 1) or not (cov_margin > 0):
        raise ValueError("need 0 < t_fraction <= 1, peel_factor >= 1 and cov_margin > 0")
    chunk = default_chunk_size(k, d, min_weight)
    s = n // chunk if n_chunks is None else check_positive_int(n_chunks, "n_chunks")
    if s < 2 * k or n // max(s, 1) < k + 1:
        need = needed_n((n, d), k, budget, w_min, beta)
        raise ValueError(
            f"sample-and-aggregate needs at least {2 * k} chunks of at least {k + 1} rows "
            f"(n = {n}, n_chunks = {s}); it is meant for n of the order of {need:.2g} or more"
        )
    grid = root_radius_grid(opts.radii)
    plan = plan_sa_budget(
        budget, k, d, means_share=opts.means_share, counts_share=opts.counts_share,
        round_split=opts.round_split,
    )
    # the plan composes to exactly the budget (tests); refusing it needs only "within"
    plan.budget_plan(exact=False).reserve(rel.accountant, "sample-and-aggregate")
    run = _SARun(
        data=data,
        k=k,
        s=s,
        grid=grid,
        plan=plan,
        learner=gmm_learner if opts.learner is None else opts.learner,
        opts=opts,
        beta=beta,
        constants=constants,
        release=rel,
        needed=needed_n(data.shape, k, budget, w_min, beta),
    )
    balls, m_min = _aggregate(run)
    weights, means, covs, noisy = _estimate_parts(run, balls, m_min)
    if info is not None:
        info.update(
            n_chunks=s,
            chunk_size=m_min,
            balls=balls,
            noisy_counts=noisy,
            budget_plan=plan,
        )
    return weights, means, covs


@dataclass(frozen=True)
class _SARun:
    """The public parameters of one sample-and-aggregate run (validated) and its rows."""

    data: np.ndarray
    k: int
    s: int  # number of chunks
    grid: np.ndarray
    plan: SABudget
    learner: Learner
    opts: SAOptions
    beta: float
    constants: str
    release: Release
    needed: int


def _aggregate(run: _SARun) -> tuple[list[Ball], int]:
    """The non-private learner on every chunk, then k private 1-cluster rounds peeling the
    chunk estimates: the k released balls and the chunk size."""
    rel, opts = run.release, run.opts
    W, M, ok, m_min = _fit_chunks(run.data, run.k, run.s, run.learner, rel.rng)
    dummies = dummy_points(run.s, run.data.shape[1], run.grid, opts.peel_factor, rel.rng)
    alive = ok.copy()
    balls: list[Ball] = []
    for j in range(run.k):
        t = max(2, int(opts.t_fraction * run.s / (run.k - j)))
        P = round_points(W, M, alive, dummies)
        ball = one_cluster(
            P,
            t,
            run.plan.rounds[j],
            radii=run.grid,
            c=opts.peel_factor,
            search=BallSearch(
                beta=run.beta / (4 * run.k),
                constants=run.constants,
                box_factor=opts.box_factor,
                split=tuple(opts.round_split),
                max_points=opts.max_points,
            ),
            release=rel.at(f"round-{j + 1}"),
        )
        if ball is None:
            charge_unused(rel.accountant, run.plan.all(j + 1), rel.step)
            raise EstimationFailed(
                f"round {j + 1} of {run.k} of the private 1-cluster aggregation found no cluster",
                step=rel.name(f"round-{j + 1}"),
                needed_n=run.needed,
            )
        balls.append(ball)
        with np.errstate(over="ignore", invalid="ignore"):
            dist = np.sqrt(np.sum((M - ball.center) ** 2, axis=2))
        alive &= ~(dist <= ball.radius)
    return balls, m_min


def _estimate_parts(
    run: _SARun, balls: list[Ball], m_min: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every row to its nearest released centre, then the parts' counts and CoinPress runs."""
    centers = np.stack([b.center for b in balls])
    labels = nearest_center(run.data, centers)
    # public per-row keys (fixed-size subsets)
    keys = run.release.rng.random(int(run.data.shape[0]))
    priors = [ComponentPrior(b.center, b.radius, (1.0, 1.0)) for b in balls]

    def cov_bounds_of(j: int, w: float) -> tuple[float, float]:
        r = balls[j].radius / run.opts.peel_factor
        hi = run.opts.cov_margin * r * r * m_min * max(w, 1.0 / run.s)
        return hi / run.opts.cond_range, hi

    return estimate_components(
        run.data,
        Partition(labels, keys),
        priors,
        run.plan.counts,
        run.plan.estimation,
        beta=run.beta,
        constants=run.constants,
        release=run.release,
        cov_bounds_of=cov_bounds_of,
        needed_n=run.needed,
    )
