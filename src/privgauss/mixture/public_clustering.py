"""Clustering decided by public data (Bie, Kamath, Singhal, "Private Estimation with Public Data",
NeurIPS 2022; spec ``public-data.md`` §4.2, §4.8, §4.9).

* :func:`supercluster` — Alg. 3: a public centre and radius whose ball is pure (every component
  inside or outside it) and holds at least the centre's component.
* :func:`public_split` — the public half of the low-dimensional partitioners (Alg. 5 proposes on
  public points, Alg. 8 decides on them): the first (centre, radius) on a halving radius grid
  with ≥ t public points inside B_r(c), (almost) none in the annulus B_{a·r}(c) \\ B_r(c) and
  ≥ t outside B_{a·r}(c) (the query Q_Pub of eq. (3)).
* :func:`easy_clustering` — Alg. 9: the whole clustering from O(d log(k/β)/w_min) public rows;
  private rows are only **routed** by the public balls and projections.

Nothing here releases anything about private rows. :func:`easy_clustering` returns the private
rows' cluster labels as a per-row function of the public data and the row itself; those labels
(and cluster sizes) are **not DP outputs** (pitfall P11): only the public part
(:class:`PublicClusters`) may be shown to users.

Constants (:class:`SplitConstants`): ``"theory"`` uses the paper's (SC multiplier 16, annulus
11r, radius grid halving down to r_min); ``"practical"`` a smaller SC multiplier (4), annulus
4r and a √2 radius grid — these change accuracy only: every choice here is public.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial.distance import cdist, pdist

from ..exceptions import InvalidDataError
from .private_pca import top_eigenvectors

__all__ = [
    "PublicClusters",
    "SplitConstants",
    "easy_clustering",
    "public_split",
    "radius_grid",
    "split_constants",
    "supercluster",
]

#: The most public points tried as centres by :func:`public_split` (the first ones, a public rule).
MAX_CANDIDATES = 600
#: The longest radius grid (guards duplicated public points, whose smallest distance is 0).
MAX_RADII = 80


@dataclass(frozen=True)
class SplitConstants:
    """Public constants of the clustering (privacy never depends on them)."""

    sc_multiplier: float  # Alg. 3: r = multiplier · (largest nearest-neighbour distance)
    annulus: float  # Q_Pub: the annulus B_{a r} \\ B_r must be (almost) empty
    annulus_fraction: float  # ... holding at most this fraction of t points
    grid_ratio: float  # consecutive radii differ by this factor
    private_outer: float  # Alg. 5 Q_Priv: regions B_{2r}, B_{o·2r} \\ B_{2r}, outside
    private_annulus_fraction: float  # Q_Priv: noisy annulus count < fraction · t


def split_constants(constants: str) -> SplitConstants:
    """The paper's constants (``"theory"``) or the tuned ones (``"practical"``)."""
    if constants == "theory":
        return SplitConstants(16.0, 11.0, 1.0 / 320.0, 2.0, 5.0, 1.0 / 320.0)
    if constants == "practical":
        return SplitConstants(4.0, 4.0, 1.0 / 320.0, math.sqrt(2.0), 1.5, 0.1)
    raise ValueError(f"constants must be 'practical' or 'theory', got {constants!r}")


def supercluster(Y: np.ndarray, k: int, multiplier: float = 16.0) -> tuple[np.ndarray, float]:
    """Alg. 3 (SC_k) on public rows ``Y``: (centre c ∈ Y, radius R) with B_R(c) pure w.h.p.
    (Thm 4.14; closed balls). c is the point with the largest nearest-neighbour distance
    (excluding itself), r = multiplier·nn(c); R grows by shells of width r until a shell (and,
    without a pure flag, the next) is empty, at most k times. One row gives (row, 0)."""
    Y = np.asarray(Y, dtype=np.float64)
    if Y.shape[0] < 2:
        return Y[0].copy(), 0.0
    D = cdist(Y, Y)
    np.fill_diagonal(D, np.inf)
    nn = D.min(axis=1)
    j = int(np.argmax(nn))
    c = Y[j].copy()
    r = multiplier * float(nn[j])
    dist = D[j]
    dist[j] = 0.0
    R, pure = r, False
    for _ in range(k):
        a = int(np.count_nonzero(dist <= R))
        b = int(np.count_nonzero(dist <= R + r))
        e = int(np.count_nonzero(dist <= R + 2 * r))
        if b == a:
            if pure:
                return c, R
            if e == a:
                return c, R + r
            pure, R = False, R + 3 * r
        else:
            pure, R = e == b, R + 2 * r
    return c, R


def radius_grid(r_max: float, r_min: float, ratio: float = 2.0) -> np.ndarray:
    """r_max, r_max/ratio, … down to the first radius ≤ r_min (at most :data:`MAX_RADII`)."""
    if not (r_max > 0 and math.isfinite(r_max)):
        return np.zeros(0)
    levels = 0 if not r_min > 0 else math.ceil(math.log(r_max / r_min) / math.log(ratio))
    levels = min(max(levels, 0), MAX_RADII - 1)
    return r_max / ratio ** np.arange(levels + 1)


def public_split(
    P: np.ndarray, t: float, radii: np.ndarray, const: SplitConstants
) -> tuple[int, float] | None:
    """Q_Pub search (the public part of Alg. 5, all of Alg. 8): the first radius r (largest
    first), then the first candidate centre P[j] with |P ∩ B_r| ≥ t, |P ∩ B_{a r} \\ B_r| ≤
    fraction·t and |P \\ B_{a r}| ≥ t. Returns (j, r) or None (⊥). Public data only."""
    m = P.shape[0]
    if m < 2 or radii.size == 0:
        return None
    D = np.sort(cdist(P[: min(m, MAX_CANDIDATES)], P), axis=1)
    for r in radii:
        inside = _count_le(D, r)
        within = _count_le(D, const.annulus * r)
        ok = (inside >= t) & (within - inside <= const.annulus_fraction * t) & (m - within >= t)
        hits = np.flatnonzero(ok)
        if hits.size:
            return int(hits[0]), float(r)
    return None


def _count_le(D_sorted: np.ndarray, r: float) -> np.ndarray:
    """Per row, the number of entries ≤ r of a row-sorted matrix."""
    return (D_sorted <= r).sum(axis=1)


@dataclass(frozen=True, eq=False)
class PublicClusters:
    """The public outcome of :func:`easy_clustering` (safe to show: public data only).

    ``labels[i]`` is the cluster of public row i (−1: in no cluster); ``means`` and
    ``covariances`` are the clusters' public sample statistics; ``sizes`` their public row counts;
    ``splits`` the public balls (projected centre, radius) that were used, in order."""

    labels: np.ndarray
    means: np.ndarray
    covariances: np.ndarray
    sizes: np.ndarray
    splits: tuple[tuple[np.ndarray, float], ...]

    @property
    def n_clusters(self) -> int:
        return int(self.sizes.shape[0])


def _public_summary(
    P: np.ndarray, groups: list[np.ndarray], splits: list[tuple[np.ndarray, float]]
) -> PublicClusters:
    m, d = P.shape
    labels = np.full(m, -1, dtype=np.int64)
    means = np.zeros((len(groups), d))
    covs = np.zeros((len(groups), d, d))
    for j, g in enumerate(groups):
        labels[g] = j
        if g.size:
            means[j] = P[g].mean(axis=0)
        if g.size > 1:
            covs[j] = np.cov(P[g], rowvar=False).reshape(d, d)
    sizes = np.array([g.size for g in groups], dtype=np.int64)
    return PublicClusters(labels, means, covs, sizes, tuple(splits))


def easy_clustering(
    public_X: np.ndarray,
    X: np.ndarray | None,
    k: int,
    min_weight: float,
    *,
    beta: float = 0.05,
    constants: str = "practical",
    n: int | None = None,
) -> tuple[PublicClusters, np.ndarray]:
    """Alg. 9 (EasyClustering): split public and private rows together by balls chosen on the
    public rows alone; returns (public clusters, private labels).

    Aligned queues of (public subset, private subset); at most 2k iterations; each pops a pair,
    projects both on the top-k eigenvectors of the public subset's second moment centred at its
    public mean, searches a public split (:func:`public_split`, t = m·w_min/2 with m the
    **total** public size, radii from R = 4·diameter down to the paper's
    r = √(2k ln(2(n+m)k/β))/(4√d)·(smallest public distance)); a split pushes the inside and
    outside pairs, ⊥ makes the private subset a cluster. Errata fixed: the pairs (not only the
    private sets) are returned, the ⊥ branch appends the popped set, empty public subsets are
    dropped (public decision).

    Privacy: zero cost — every decision is a function of ``public_X`` (and public n); a private
    row's label is a function of that row and the public data only. The private labels are
    **not** DP outputs. With ``X=None`` and ``n`` given, the public clustering alone (the same
    clusters, no private labels: an empty label array): a check that reads public data only.
    """
    P = np.asarray(public_X, dtype=np.float64)
    m, d = P.shape
    if X is None:
        if n is None:
            raise ValueError("easy_clustering needs X or n")
        Z = np.zeros((0, d))
    else:
        Z = np.asarray(X, dtype=np.float64)
        if Z.ndim != 2 or Z.shape[1] != d:
            raise InvalidDataError(f"X must have {d} columns like public_X")
        n = Z.shape[0]
    const = split_constants(constants)
    t = m * min_weight / 2.0
    queue: list[tuple[np.ndarray, np.ndarray]] = [(np.arange(m), np.arange(Z.shape[0]))]
    done: list[tuple[np.ndarray, np.ndarray]] = []
    splits: list[tuple[np.ndarray, float]] = []
    log_term = math.sqrt(2 * k * math.log(2 * (n + m) * k / beta)) / (4 * math.sqrt(d))
    for _ in range(2 * k):
        if len(done) >= k or not queue:
            break
        pub, priv = queue.pop(0)
        if pub.size == 0:
            continue
        Y = P[pub]
        if pub.size < 2:
            done.append((pub, priv))
            continue
        center = Y.mean(axis=0)
        _, V = top_eigenvectors((Y - center).T @ (Y - center), min(k, d))
        Yp = (Y - center) @ V
        dists = pdist(Y)
        radii = radius_grid(4.0 * float(dists.max()), log_term * float(dists.min()),
                            const.grid_ratio)
        found = public_split(Yp, t, radii, const)
        if found is None:
            done.append((pub, priv))
            continue
        j, r = found
        c, radius = Yp[j], 2.0 * r
        splits.append((c.copy(), radius))
        in_pub = np.linalg.norm(Yp - c, axis=1) <= radius
        in_priv = np.linalg.norm((Z[priv] - center) @ V - c, axis=1) <= radius
        queue.append((pub[in_pub], priv[in_priv]))
        queue.append((pub[~in_pub], priv[~in_priv]))
    labels = np.full(Z.shape[0], -1, dtype=np.int64)
    for j, (_, priv) in enumerate(done):
        labels[priv] = j
    return _public_summary(P, [pub for pub, _ in done], splits), labels
