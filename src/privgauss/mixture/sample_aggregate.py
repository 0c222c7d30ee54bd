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
from scipy.stats import norm

from .. import sensitivity
from ..backends import as_rows
from ..exceptions import EstimationFailed, PrivacyBudgetError
from ..gaussian.coinpress import coinpress_gaussian
from ..mechanisms import gaussian_sigma_zcdp, private_count
from ..noise import NoiseSource, RandomState, as_noise
from ..privacy import ZCDP, Accountant, ApproxDP, Budget, approx_to_zcdp, charge_unused, reserve
from ..progress import bar
from ..validation import check_positive_int, check_probability
from .one_cluster import (
    Ball,
    doubling_radii,
    one_cluster,
    plan_budget,
)
from .sample_size import one_cluster_floor

__all__ = [
    "DEFAULT_RADIUS_RANGE",
    "ROUND_SPLIT",
    "ComponentPrior",
    "Learner",
    "check_mixture_inputs",
    "default_chunk_size",
    "dummy_points",
    "estimate_components",
    "fixed_size_subset",
    "gmm_learner",
    "kmeans_learner",
    "nearest_center",
    "needed_n",
    "plan_sa_budget",
    "root_radius_grid",
    "round_points",
    "sample_aggregate_gmm",
]

#: public default range of the radius grids (data units); T ≈ 41 doubling radii
DEFAULT_RADIUS_RANGE = (1e-6, 1e6)
#: relative ε weights of one_cluster's (radius search, box histogram, box mean, refinement): the
#: radius search's slack Γ is what limits the aggregation, so it gets the largest share
ROUND_SPLIT = (0.45, 0.2, 0.15, 0.2)
Learner = Callable[[np.ndarray, int, int], tuple[np.ndarray, np.ndarray]]


# ----------------------------------------------------------------------------------------------
# Non-private learners run on each chunk
# ----------------------------------------------------------------------------------------------


def gmm_learner(X: np.ndarray, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn ``GaussianMixture`` (diagonal covariances, k-means++ init, seeded):
    (weights, means). Only the chunk means and weights are aggregated, and a diagonal model is
    far more stable than a full one on small chunks."""
    from sklearn.mixture import GaussianMixture

    gm = GaussianMixture(
        n_components=k,
        covariance_type="diag",
        n_init=1,
        max_iter=100,
        reg_covar=1e-6,
        init_params="k-means++",
        random_state=seed,
    )
    gm.fit(X)
    return gm.weights_, gm.means_


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
# Shared by sample-and-aggregate and KSSU19: estimation on a released partition
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ComponentPrior:
    """Released (or public) prior of one part: ‖μ − center‖ ≤ radius, lo·I ⪯ Σ ⪯ hi·I."""

    center: np.ndarray
    radius: float
    cov_bounds: tuple[float, float]


def nearest_center(X: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """Index of the nearest centre of each row (Euclidean, ties to the lowest index): a per-row
    map of released values."""
    X = np.asarray(X, dtype=np.float64)
    C = np.asarray(centers, dtype=np.float64)
    out = np.empty(X.shape[0], dtype=np.int64)
    step = max(1, (1 << 22) // max(C.shape[0] * X.shape[1], 1))
    for a in range(0, X.shape[0], step):
        diff = X[a : a + step, None, :] - C[None, :, :]
        out[a : a + step] = np.argmin(np.einsum("ijd,ijd->ij", diff, diff), axis=1)
    return out


def fixed_size_subset(
    data: np.ndarray,
    members: np.ndarray,
    keys: np.ndarray,
    m: int,
    pad: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """The m members with the smallest public keys, padded with copies of the released point
    ``pad`` when fewer than m, in a public uniformly random order (m × d, a new array).

    Privacy: ``keys`` is one public random number per row index (a replaced row keeps its key),
    and m is public. Adding or removing one member changes the selected multiset by at most one
    replacement (the member enters/leaves; the (m+1)-th smallest key or a pad leaves/enters), and
    replacing a member in place changes one element. The public shuffle makes the output a
    mixture, over orders, of inputs that differ in one position, so any mechanism that is DP
    under replace-one with n = m public stays DP for the part under add/remove.
    """
    members = np.asarray(members, dtype=np.int64)
    if members.size > m:
        chosen = members[np.argpartition(keys[members], m - 1)[:m]]
    else:
        chosen = members
    rows = data[chosen]
    if rows.shape[0] < m:
        rows = np.vstack([rows, np.repeat(pad[None, :], m - rows.shape[0], axis=0)])
    return rows[rng.permutation(m)]


#: ``(part index, fixed-size rows, rho, accountant) -> (mean, covariance)``
PartLearner = Callable[[int, np.ndarray, float, Accountant], tuple[np.ndarray, np.ndarray]]


def _min_part_rows(d: int) -> int:
    return d + 2


def estimate_components(
    data: np.ndarray,
    labels: np.ndarray,
    priors: Sequence[ComponentPrior],
    counts_budget: ZCDP,
    estimation_budget: ZCDP,
    *,
    keys: np.ndarray,
    beta: float,
    constants: str,
    accountant: Accountant,
    noise: NoiseSource,
    step: str,
    cov_bounds_of: Callable[[int, float], tuple[float, float]] | None = None,
    needed_n: int | None = None,
    part_learner: PartLearner | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Weights, means and covariances of the parts ``labels`` = 0..K−1 of a released partition
    (K = len(priors); rows with another label, e.g. −1 for dropped rows, belong to no part), and
    the released counts.

    Releases (replace-one, n public): the K part sizes with discrete Gaussian noise of L2
    sensitivity √2 (``counts_budget``), then one CoinPress run per part on a fixed-size subset
    (:func:`fixed_size_subset`, size m_j = ⌊ñ_j − z·σ⌋ with z the (1 − β/2K) normal quantile),
    charged once as ``estimation_budget`` = 2ρ_E, each run getting ρ_E (a replaced row changes at
    most two parts). ``cov_bounds_of(j, weight_j)`` may replace a prior's covariance bounds from
    the released weight. ``part_learner(j, rows, rho_j, accountant)`` (a ρ_j-zCDP learner under
    replace-one with the rows' number public) replaces CoinPress when given. Raises
    EstimationFailed (budget spent) when a part is too small.
    """
    K = len(priors)
    n, d = data.shape
    l2 = sensitivity.histogram_l2()  # one row leaves a part and joins another
    labels = np.asarray(labels, dtype=np.int64)
    counts = np.bincount(labels[(labels >= 0) & (labels < K)], minlength=K).astype(np.int64)
    noisy = private_count(
        counts,
        counts_budget,
        accountant=accountant,
        noise=noise,
        step=f"{step}/counts",
        sensitivity=l2,
    ).astype(np.float64)
    accountant.spend(
        estimation_budget,
        step=f"{step}/estimate",
        mechanism="coinpress x parts",
        note=(
            f"{K} CoinPress runs on disjoint parts, each rho={estimation_budget.rho / 2:.6g}; "
            "a replaced row changes at most two parts: charged twice"
        ),
    )
    positive = np.maximum(noisy, 0.0)
    if not positive.sum() > 0:
        raise EstimationFailed(
            "every part has a non-positive noisy size", step=f"{step}/counts", needed_n=needed_n
        )
    weights = positive / positive.sum()
    sigma = gaussian_sigma_zcdp(l2, counts_budget.rho)
    z = float(norm.isf(beta / (2 * K)))
    sizes = np.floor(noisy - z * sigma).astype(np.int64)
    if (sizes < _min_part_rows(d)).any():
        raise EstimationFailed(
            f"a part's noisy size is below the {_min_part_rows(d)} rows its estimation needs",
            step=f"{step}/estimate",
            needed_n=needed_n,
        )
    rho_e = estimation_budget.rho / 2.0
    means = np.empty((K, d))
    covs = np.empty((K, d, d))
    for j, prior in enumerate(priors):
        members = np.flatnonzero(labels == j)
        rows = fixed_size_subset(data, members, keys, int(sizes[j]), prior.center, noise.rng)
        bounds = prior.cov_bounds if cov_bounds_of is None else cov_bounds_of(j, weights[j])
        scratch = Accountant(ZCDP(rho_e))
        if part_learner is not None:
            means[j], covs[j] = part_learner(j, rows, rho_e, scratch)
            continue
        means[j], covs[j] = coinpress_gaussian(
            rows,
            rho_e,
            center=prior.center,
            radius=prior.radius,
            cov_bounds=bounds,
            accountant=scratch,
            noise=noise,
            constants=constants,
            beta=beta,
            step=f"{step}/part-{j + 1}",
        )
    return weights, means, covs, noisy


# ----------------------------------------------------------------------------------------------
# Budget plan and checks
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SABudget:
    """The parts of a sample-and-aggregate budget (they compose to exactly the total)."""

    rounds: tuple[ApproxDP, ...]
    round_parts: tuple[tuple[Budget, ...], ...]  # what one_cluster charges for each round
    counts: ZCDP
    estimation: ZCDP  # charged once: 2·ρ_E

    def all(self, first_round: int = 0) -> list[Budget]:
        """Every charge from round ``first_round`` on, in order."""
        out: list[Budget] = [p for parts in self.round_parts[first_round:] for p in parts]
        return [*out, self.counts, self.estimation]


def _round_parts(budget: ApproxDP, d: int, split: Sequence[float]) -> tuple[Budget, ...]:
    return tuple(plan_budget(budget, ("pure", "hist", "noise", "noise"), split, (1, 1, d, d)))


def _round_pieces(parts: Sequence[Budget]) -> tuple[float, float, float]:
    """(pure ε, δ, zCDP ρ) of one one_cluster call's charges."""
    eps = delta = rho = 0.0
    for part in parts:
        if isinstance(part, ZCDP):
            rho += part.rho
        else:
            eps += part.epsilon
            delta += part.delta if isinstance(part, ApproxDP) else 0.0
    return eps, delta, rho


def plan_sa_budget(
    budget: ApproxDP,
    k: int,
    d: int,
    *,
    means_share: float = 0.7,
    counts_share: float = 0.05,
    round_split: Sequence[float] = ROUND_SPLIT,
) -> SABudget:
    """Split (ε, δ) into k peeling rounds, the counts and the estimation charge. Public.

    Round j gets ApproxDP(ε_M·(k − j + 1)/(k(k + 1)/2), δ/(2k)) with ε_M = means_share·ε (round j
    sees k − j + 1 clusters of about s/(k − j + 1) points each; the last round is a remainder).
    one_cluster charges each round as pure, histogram and zCDP pieces (its planner, public);
    the zCDP left is ρ_Z = the largest ρ such that all zCDP charges together convert, with the δ
    the histograms leave, into the ε the pure pieces leave (tight CKS20). ``counts_share`` of
    ρ_Z goes to the counts, the rest to the estimation charge, so the ledger composes to exactly
    (ε, δ) in the accountant's own arithmetic.
    """
    if not isinstance(budget, ApproxDP) or budget.delta <= 0:
        raise PrivacyBudgetError(
            "sample-and-aggregate needs an (epsilon, delta) budget with delta > 0 (its 1-cluster "
            "step uses a stability histogram)"
        )
    if not (0 < means_share < 1) or not (0 < counts_share < 1):
        raise ValueError("means_share and counts_share must be in (0, 1)")
    eps, delta = budget.epsilon, budget.delta
    if math.isinf(eps):
        rounds = tuple(ApproxDP(math.inf, delta / (2 * k)) for _ in range(k))
        parts = tuple(_round_parts(r, d, tuple(round_split)) for r in rounds)
        return SABudget(rounds, parts, ZCDP(math.inf), ZCDP(math.inf))
    eps_m = eps * means_share
    total_w = k * (k + 1) / 2
    per = [eps_m * (k - j) / total_w for j in range(k - 1)]
    per.append(eps_m - sum(per))
    dl = [delta / (2 * k)] * (k - 1)
    dl.append(delta / 2 - sum(dl))
    rounds = tuple(ApproxDP(e, x) for e, x in zip(per, dl, strict=True))
    parts = tuple(_round_parts(r, d, tuple(round_split)) for r in rounds)
    pieces = [_round_pieces(p) for p in parts]
    eps_pure = math.fsum(p[0] for p in pieces)
    delta_h = math.fsum(p[1] for p in pieces)
    rho_oc = math.fsum(p[2] for p in pieces)
    rho_z = approx_to_zcdp(eps - eps_pure, delta - delta_h) - rho_oc
    if not rho_z > 0:  # pragma: no cover - the joint conversion is never worse than separate ones
        raise PrivacyBudgetError("the budget is too small to split")
    rho_w = rho_z * counts_share
    return SABudget(rounds, parts, ZCDP(rho_w), ZCDP(rho_z - rho_w))


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


def sample_aggregate_gmm(
    X: Any,
    k: int,
    budget: ApproxDP,
    *,
    n_chunks: int | None = None,
    min_weight: float | None = None,
    learner: Learner | None = None,
    radii: Any = None,
    peel_factor: float = 3.0,
    t_fraction: float = 0.8,
    box_factor: float = 4.0,
    cov_margin: float = 8.0,
    cond_range: float = 1e4,
    means_share: float = 0.7,
    counts_share: float = 0.05,
    round_split: Sequence[float] = ROUND_SPLIT,
    beta: float = 0.05,
    constants: str = "practical",
    max_points: int = 50_000,
    accountant: Accountant,
    noise: RandomState = None,
    step: str = "sample-aggregate",
    info: dict[str, Any] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Private k-component Gaussian mixture by sample-and-aggregate (KSSU19 §6; spec §8):
    (weights (k,), means (k, d), covariances (k, d, d)).

    (ε, δ)-DP for ``budget = ApproxDP(ε, δ)`` under replace-one neighbours with n public, for any
    data and any ``learner`` (a function (rows, k, seed) → (weights, means), run on each chunk).
    ``n_chunks`` (default n // :func:`default_chunk_size`, which uses the public ``min_weight``,
    default 1/k), ``radii`` (public doubling grid for
    the 1-cluster rounds, default :data:`DEFAULT_RADIUS_RANGE`), ``peel_factor``, ``t_fraction``,
    ``cov_margin`` and ``cond_range`` are public knobs that only affect accuracy. Raises
    :class:`EstimationFailed` (with the whole budget spent) when a round finds no cluster or a
    part is too small. ``info``, if given, receives public/DP facts (chunks, balls, counts).
    See the module docstring for the derivation.
    """
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
    grid = root_radius_grid(radii)
    plan = plan_sa_budget(
        budget, k, d, means_share=means_share, counts_share=counts_share, round_split=round_split
    )
    reserve(accountant, plan.all(), "sample-and-aggregate")
    src = as_noise(noise)
    learner = gmm_learner if learner is None else learner
    beta_r = beta / (4 * k)
    needed = needed_n(data.shape, k, budget, w_min, beta)

    W, M, ok, m_min = _fit_chunks(data, k, s, learner, src.rng)
    dummies = dummy_points(s, d, grid, peel_factor, src.rng)
    alive = ok.copy()
    balls: list[Ball] = []
    for j in range(k):
        t = max(2, int(t_fraction * s / (k - j)))
        P = round_points(W, M, alive, dummies)
        ball = one_cluster(
            P,
            t,
            plan.rounds[j],
            radii=grid,
            c=peel_factor,
            beta=beta_r,
            constants=constants,
            box_factor=box_factor,
            split=round_split,
            max_points=max_points,
            accountant=accountant,
            noise=src,
            step=f"{step}/round-{j + 1}",
        )
        if ball is None:
            charge_unused(accountant, plan.all(j + 1), step)
            raise EstimationFailed(
                f"round {j + 1} of {k} of the private 1-cluster aggregation found no cluster",
                step=f"{step}/round-{j + 1}",
                needed_n=needed,
            )
        balls.append(ball)
        with np.errstate(over="ignore", invalid="ignore"):
            dist = np.sqrt(np.sum((M - ball.center) ** 2, axis=2))
        alive &= ~(dist <= ball.radius)

    centers = np.stack([b.center for b in balls])
    labels = nearest_center(data, centers)
    keys = src.rng.random(int(n))  # public per-row keys for the fixed-size subsets
    priors = [ComponentPrior(b.center, b.radius, (1.0, 1.0)) for b in balls]

    def cov_bounds_of(j: int, w: float) -> tuple[float, float]:
        r = balls[j].radius / peel_factor
        hi = cov_margin * r * r * m_min * max(w, 1.0 / s)
        return hi / cond_range, hi

    weights, means, covs, noisy = estimate_components(
        data,
        labels,
        priors,
        plan.counts,
        plan.estimation,
        keys=keys,
        beta=beta,
        constants=constants,
        accountant=accountant,
        noise=src,
        step=step,
        cov_bounds_of=cov_bounds_of,
        needed_n=needed,
    )
    if info is not None:
        info.update(
            n_chunks=s,
            chunk_size=m_min,
            balls=balls,
            noisy_counts=noisy,
            budget_plan=plan,
        )
    return weights, means, covs
