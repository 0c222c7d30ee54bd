"""The starts of private EM (:mod:`privgauss.mixture.private_em`): the noisy grid histogram of
the whitened rows and its k-means (histogram and whitened-frame starts), the private Lloyd steps
seeded by it (the k-means start), more starts from the same cells' k-means in other frames
(the raw columns' frame among them: :func:`frame_starts`, a wide plan's, where the steps are
quiet) and the DP pick among runs.

**Reference.** Park, Foulds, Chaudhuri, Welling, "DP-EM", AISTATS 2017 (the EM steps); the
start's private Lloyd steps follow DP k-means via noisy counts and sums (Su, Cao, Li, Bertino,
Lin, Vaidya, "Differentially private k-means clustering", CODASPY 2016).

**Neighbours:** replace one row; n is public. **Guarantee:** each release here is a Gaussian
mechanism at the ρ the :class:`~privgauss.mixture.private_em.EMPlan` gives it, charged to the
accountant under the plan's step name; everything else is post-processing of releases and public
rows (the k-means++ restarts on the released cells cost nothing).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any, Protocol

import numpy as np

from ..backends import reduce_rows
from ..linalg import clip_weights, sym
from ..mechanisms import (
    Release,
    gaussian_mechanism,
    soft_statistics_mechanism,
    symmetric_matrix_mechanism,
)
from ..privacy import ZCDP
from ..sensitivity import (
    histogram_l2,
    regret_sums_l2,
    score_sums_l2,
    soft_counts_l2,
    soft_outer_sums_frobenius,
    soft_sums_l2,
)
from .weighted_kmeans import (
    KMEANS_RESTARTS,
    best_kmeans,
    best_run,
    kmeans,
    nearest,
    skip_seedings,
    sq_dists,
)

__all__: list[str] = []

BOX = 3.0  # half-width of the start grid's box (whitened frame)
EIG_FLOOR = 1e-3  # eigenvalue floor of Σ_j in the whitened frame
PUBLIC_WEIGHT = 0.1  # total weight of the public rows in the start, as a fraction of n
WIDE_RESTARTS = 2  # k-means++ seedings of the summary start's K'-centre k-means
QUIET_RESTARTS = 1  # k-means++ seedings of the two k-centre cell k-means beside a summary start

Run = tuple[np.ndarray, np.ndarray, np.ndarray]  # an EM run: (weights, means, covariances)


class StartPlan(Protocol):
    """What the starts read of the budget plan (:class:`~privgauss.mixture.private_em.EMPlan`)."""

    @property
    def grid_dims(self) -> int: ...
    @property
    def grid_cells(self) -> int: ...
    @property
    def rho_init(self) -> float: ...
    @property
    def rho_kmeans_steps(self) -> tuple[float, ...]: ...
    @property
    def rho_spread(self) -> float: ...
    @property
    def kmeans_radius(self) -> float: ...
    def kmeans_rhos(self, t: int) -> tuple[float, float, float]: ...
    @property
    def joint_releases(self) -> bool: ...
    @property
    def start_clusters(self) -> int: ...
    @property
    def rho_score(self) -> float: ...
    @property
    def score_bound(self) -> float: ...


# ----------------------------------------------------------------------------------------------
# Per-block kernels (module level: picklable to dask workers)
# ----------------------------------------------------------------------------------------------


def _cell_kernel(B: np.ndarray, V: np.ndarray, width: float, m: int) -> tuple[np.ndarray]:
    """Counts of the rows' grid cells: coordinates z·V clamped into the box [−3, 3]^p, cells of
    ``width``, m per axis (a row with a non-finite projection goes to the centre
    cell)."""
    with np.errstate(all="ignore"):
        P = B @ V
        P[~np.isfinite(P)] = 0.0
        idx = np.floor((np.clip(P, -BOX, BOX) + BOX) / width)
    idx = np.clip(np.nan_to_num(idx), 0, m - 1).astype(np.int64)
    flat = np.ravel_multi_index(tuple(idx.T), (m,) * V.shape[1])
    return (np.bincount(flat, minlength=m ** V.shape[1]).astype(np.float64),)


FAR_ROW = 1e300  # ‖u‖² beyond which a row's label comes from its exact differences


def _lloyd_kernel(B: np.ndarray, centres: np.ndarray, G: np.ndarray, radius: float
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(counts, Σ y, Σ y yᵀ) per cluster over a block: each row goes to its nearest centre in
    the standardised frame u = G z, y = clip_r(u − G c_j) (hard responsibilities: a vertex of
    the simplex, so the soft statistics' sensitivities hold). A row's label comes from its own
    ‖Gc_j‖² − 2 u·Gc_j (one product for all rows and centres; the exact differences' argmin
    but at near-ties within rounding); a row whose image u is not finite takes, alone, the
    exact differences with each non-finite coordinate counted as 0, as does a row with
    ‖u‖² > ``FAR_ROW`` (a per-record map either way; every squared distance overflowing:
    label 0). K' = 9 centres, 16k rows, d = 10: 2.7 → 1.8 ms (the (n, K', d) differences were
    most of it)."""
    k, d = centres.shape
    with np.errstate(all="ignore"):
        U = B @ G.T
        CG = centres @ G.T
        D = U @ (-2.0 * CG.T)
        D += np.einsum("jd,jd->j", CG, CG)
        lab = np.argmin(D, axis=1)
        # gathers by take (the same values as fancy indexing, 3-5 times faster)
        Y = U - CG.take(lab, axis=0)
        # rows not finite or so far out that a squared distance may overflow: alone, exact
        bad = np.flatnonzero(~(np.einsum("ij,ij->i", U, U) <= FAR_ROW))
        if bad.size:  # their differences with every non-finite coordinate 0
            Ub = U.take(bad, axis=0)[:, None, :] - CG[None]
            Ub[~np.isfinite(Ub)] = 0.0
            lab[bad] = np.argmin(np.einsum("ijd,ijd->ij", Ub, Ub), axis=1)
            Y[bad] = Ub[np.arange(bad.size), lab[bad]]
        Y *= clip_weights(Y, radius)[:, None]
    onehot = np.eye(k).take(lab, axis=0)  # (n, k), C-ordered as before: the same product
    M = np.empty((k, d, d))
    for j in range(k):
        Yj = Y.take(np.flatnonzero(lab == j), axis=0)
        M[j] = Yj.T @ Yj
    return np.bincount(lab, minlength=k).astype(np.float64), onehot.T @ Y, M


# ----------------------------------------------------------------------------------------------
# The starts (post-processing of the released cells, public rows and Lloyd steps)
# ----------------------------------------------------------------------------------------------



def histogram_start(Z: Any, P: np.ndarray | None, k: int, plan: StartPlan, release: Release,
                    n: int, G: np.ndarray, *, extra: int = 0, Winv: np.ndarray | None = None,
                    extras: list[Run] | None = None, cell_restarts: int = 0
                    ) -> tuple[Run, Run, np.ndarray]:
    """The histogram start (weights, means, covariances) in the whitened frame, whose means
    also seed the k-means start, and the whitened-frame start. The first two share the
    centres of the weighted k-means of the noisy cells (and public rows) in the standardised
    frame u = G z (mapped back to z); the histogram start gives each cluster the covariance
    of its within- variance, isotropic in u. The whitened-frame start runs the same k-means
    on the cells in z itself (isotropic covariances in z): at ρ = 0.5 with 500 public rows,
    seed 11 of the synthetic benchmark set, the two standardised starts both began at one
    poor optimum and ended 0.332 nat/row below sklearn; with the third run, 0.000.

    ``extra`` > 0 (a wide plan: quiet steps only) appends that many more starts to ``extras``
    (:func:`frame_starts`: the same cells' k-means in the released frame's raw coordinates
    x − m₀ = ``Winv`` z, then single k-means++ seedings in the whitened, raw and standardised
    frames in turn), drawn after every other draw of this function.

    ``cell_restarts`` > 0 (``private_em.CELL_START``, an experiment switch): the returned
    histogram start is instead :func:`cell_gmm_start`, a k-component mixture fitted to the
    same noisy cells by EM with that many k-means++ restarts, its seedings drawn from a
    generator jumped ahead of the release's (every other draw, and the k-means start's
    seeds, unchanged)."""
    d = int(Z.shape[1])
    p, m = plan.grid_dims, plan.grid_cells
    rng = release.rng
    if p < d:
        V = np.linalg.qr(rng.normal(size=(d, p)))[0]
    else:
        V = np.eye(d)
    width = 2.0 * BOX / m
    (counts,) = reduce_rows(Z, partial(_cell_kernel, V=V, width=width, m=m))
    noisy = gaussian_mechanism(counts, histogram_l2(), ZCDP(plan.rho_init),
                               accountant=release.accountant, noise=release.noise,
                               step=release.name("em start histogram"))
    sigma = histogram_l2() / math.sqrt(2.0 * plan.rho_init)
    # an empty cell's noisy count exceeds σ·√(2 ln C) with probability ≲ 1/C: among C cells
    # about one spurious cell at most (at 2σ, 2.3 % of the empty cells were kept, and k-means
    # gave a component to a far spurious cell)
    keep = noisy > sigma * max(2.0, math.sqrt(2.0 * math.log(m**p)))
    # the kept cells' centres only (the same values as every cell's, then the kept ones: the
    # grid has m^p cells, 262,144 at n = 5e4, d = 10, ε = 1e4, and all of them cost ~10 ms)
    kept = np.flatnonzero(keep)
    pts = -BOX + (np.array(np.unravel_index(kept, (m,) * p)).T.reshape(-1, p) + 0.5) * width
    wts = noisy[kept]
    init = None
    if P is not None and P.shape[0] >= k:
        Pp = P @ V
        seed, _ = kmeans(Pp, np.ones(len(Pp)), k, rng)
        init = seed
        pts = np.vstack([pts, Pp])
        wts = np.concatenate([wts, np.full(len(Pp), PUBLIC_WEIGHT * n / len(Pp))])
    if pts.shape[0] == 0:
        pts, wts = np.zeros((1, p)), np.ones(1)
    # k-means on the cells lifted to the standardised frame u = G z (0 in the directions the
    # grid did not see). In the whitened frame instead, the pixels' faint colour directions
    # are blown up 15-fold and the histogram run went to a basin 0.059 nat/row below
    # sklearn's at every one of 12 seeds (benchmark, ε = 1, 500 public rows)
    # Beside a summary start (K' > k: public, only where the EM steps are quiet) the two
    # k-centre runs below are its back-ups: the first 1 + ``QUIET_RESTARTS`` of their
    # 1 + ``KMEANS_RESTARTS`` seedings each, the rest skipped (the generator advanced past
    # them: every later draw, the summary start's among them, is unchanged). Their 22 runs
    # were a third of an ε = 1e4 fit (n = 5e4, d = 10, k = 3); with 2 each, every generated
    # family's ε = 1e4 gap is unchanged to 4 decimals (benchmarks/results/em_speed.md).
    # Elsewhere (ε = 1) they are the start, and unchanged
    K = plan.start_clusters
    restarts = QUIET_RESTARTS if K > k else KMEANS_RESTARTS
    Cu, var = best_kmeans(pts @ V.T @ G.T, wts, k, rng, None if init is None else
                           init @ V.T @ G.T, restarts)
    skip_seedings(rng, k, KMEANS_RESTARTS - restarts)
    Ginv = np.linalg.inv(G)
    hist = _cell_run(Cu @ Ginv.T, var, width, Ginv @ Ginv.T)
    # the same cells' k-means in the whitened frame: a third start (its own basin on some data)
    Cw, var_w = best_kmeans(pts, wts, k, rng, init, restarts)
    skip_seedings(rng, k, KMEANS_RESTARTS - restarts)
    white = _cell_run(Cw @ V.T, var_w, width, np.eye(d))
    # the summary start's K' > k seeds: the same cells' k-means in u with K' centres. Only
    # ``WIDE_RESTARTS`` seedings: over-clustering makes every seeding nearly as good (the 11
    # runs' inertias within 0.3 % of the best, n = 5e4, d = 10, k = 3, ε = 1e4), the private
    # Lloyd steps move the centres anyway, and these runs were half of such a fit's time
    seeds = hist[1] if K <= k else best_kmeans(pts @ V.T @ G.T, wts, K, rng, None,
                                                WIDE_RESTARTS)[0] @ Ginv.T
    if extra > 0 and extras is not None:
        raw = np.eye(d) if Winv is None else Winv
        extras.extend(frame_starts(pts @ V.T, wts, V, width, k, rng,
                                   [(raw, QUIET_RESTARTS)] + [((np.eye(d), raw, G)[i % 3], 0)
                                                              for i in range(extra - 1)]))
    if cell_restarts > 0:
        hist = cell_gmm_start(pts @ V.T, wts, V, width, k, _side_rng(rng), cell_restarts)
    return hist, white, seeds


def _side_rng(rng: np.random.Generator) -> np.random.Generator:
    """A generator of its own for post-processing draws that must leave ``rng``'s stream as
    it is: ``rng``'s bit generator jumped ahead (``rng`` itself not advanced); a bit
    generator that cannot jump gives one draw of ``rng`` as the seed instead."""
    bg = rng.bit_generator
    if hasattr(bg, "jumped"):
        return np.random.Generator(bg.jumped())
    return np.random.default_rng(int(rng.integers(2**63)))


def cell_gmm_start(cells: np.ndarray, wts: np.ndarray, V: np.ndarray, width: float, k: int,
                   rng: np.random.Generator, restarts: int) -> Run:
    """The *cell-mixture start* (famlowd2, issue 27): a k-component Gaussian mixture fitted
    to the released grid cells as weighted Gaussian blobs (:func:`summary_gmm`, EM on the
    summary from the cells' least-inertia k-means and ``restarts`` k-means++ seedings; the
    largest summary log-likelihood wins). ``cells``: the kept cells' centres in the whitened
    frame z, ``wts`` their noisy counts; each cell a blob of covariance width²/12 along the
    grid's directions ``V`` and the frame's unit variance along those it did not see.
    Where the k-means of the cells merges two true clusters (the clusters of a coarse grid
    are not round), the mixture's full covariances can tell them apart: at n = 5e4, ε = 1
    it started scikit-learn's EM in its best basin on families where all three starts of the
    plain plan led elsewhere. Post-processing of the released cells only."""
    d = cells.shape[1]
    seen = V @ V.T
    cov = width**2 / 12.0 * seen + (np.eye(d) - seen)
    covs = np.broadcast_to(cov, (cells.shape[0], d, d)).copy()
    w, mu, S = summary_gmm(np.maximum(wts, 0.0), cells, covs, k, rng, restarts=restarts,
                           skipped=0)
    w = np.maximum(w, 1e-3)
    return w / w.sum(), mu, repair_covariance(S)


def frame_starts(cells: np.ndarray, wts: np.ndarray, V: np.ndarray, width: float, k: int,
                 rng: np.random.Generator, frames: list[tuple[np.ndarray, int]]) -> list[Run]:
    """One start per ``(F, restarts)`` of ``frames``: the weighted k-means of the noisy cells
    (``cells``: their centres in the whitened frame z, weights ``wts``) in the frame u = F z
    (the least-inertia of 1 + ``restarts`` k-means++ seedings), and from its hard labels, as
    scikit-learn's k-means initialisation, each cluster's weight, mean and covariance of its
    cells in z (a cell's own spread width²/12 added along the grid's directions ``V``, the
    frame's unit variance along the directions the grid did not see), eigenvalues repaired.
    Post-processing of the released cells. The frame decides the basin: on Males (issue 27,
    ε = 1e4) scikit-learn's k-means on the raw columns led EM to a basin 2.3 nat/row above
    the one from standardised or whitened columns, on Benefits the whitened frame's
    seedings to one 0.12 above the raw columns' (both held out)."""
    d = cells.shape[1]
    out: list[Run] = []
    seen = V @ V.T
    unseen = np.eye(d) - seen
    w_all = np.maximum(wts, 0.0)
    for F, restarts in frames:
        U = cells @ F.T
        C, D, prepared = best_run(U, w_all, k, rng, None, restarts)
        # the winner's distances are sq_dists of these points (unless _prepare put one
        # point at the origin for want of weight): its labels without computing them again
        same = prepared[0].shape[0] == U.shape[0] and float(w_all.sum()) > 0
        lab = nearest(D if same else sq_dists(np.ascontiguousarray(U.T), C))
        weights, means, covs = np.empty(k), np.zeros((k, d)), np.empty((k, d, d))
        for j in range(k):
            wj = w_all * (lab == j)
            tot = float(wj.sum())
            weights[j] = max(tot, 1.0)
            if tot > 0:
                means[j] = wj @ cells / tot
                D = cells - means[j]
                cov = (D * wj[:, None]).T @ D / tot
            else:
                means[j] = cells[int(np.argmax(w_all))] if len(cells) else 0.0
                cov = np.eye(d)
            covs[j] = repair_covariance(cov + width**2 / 12.0 * seen + unseen)
        out.append((weights / weights.sum(), means, covs))
    return out


def _cell_run(means: np.ndarray, var: np.ndarray, width: float, unit: np.ndarray) -> Run:
    """A start from a k-means of grid cells: equal weights, each cluster's within-cell
    variance (plus a cell's own, clipped into [0.05, 1]) times the frame's ``unit``
    covariance, eigenvalues repaired."""
    within = np.clip(var + width**2 / 12.0, 0.05, 1.0)
    k = means.shape[0]
    covs = np.array([repair_covariance(within[j] * unit) for j in range(k)])
    return np.full(k, 1.0 / k), means, covs


def standardiser(Winv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(G, G^{-1}): the map from the whitened frame z to the standardised frame u = G z, the
    released frame's columns x − m₀ each divided by its released standard deviation. The start's
    k-means runs there, as a user's k-means on standardised columns would: in the whitened frame
    the pixels' low-variance colour directions are blown up 15-fold and k-means (and EM after
    it) settles in a basin 0.059 nat/row below sklearn's."""
    sd = np.sqrt(np.maximum(np.einsum("ij,ij->i", Winv, Winv), 1e-300))
    G = Winv / sd[:, None]
    return G, np.linalg.inv(G)


def _private_lloyd(Z: Any, centres: np.ndarray, plan: StartPlan, release: Release,
                   G: np.ndarray, Ginv: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None,
                              float, float]:
    """The private Lloyd steps from ``centres`` (whitened frame, any number K' of them: the
    sensitivities do not grow with K'), each one pass releasing the clusters' counts and
    clipped sums (and, with the last, their clipped second moments). Returns (the centres
    after the last step, the last step's noisy counts, sums and second moments — around the
    centres before its update, in the standardised frame —, the second moments' noise sd,
    the sums' move floor)."""
    K, d = centres.shape
    R = plan.kmeans_radius
    C = centres.copy()
    n_steps = len(plan.rho_kmeans_steps)
    Nn, Sn = np.ones(K), np.zeros((K, d))
    Mn = None
    sig_m = math.inf
    floor = math.inf
    for t in range(n_steps):
        counts, S, M = reduce_rows(Z, partial(_lloyd_kernel, centres=C, G=G, radius=R))
        rc, rs, rm = plan.kmeans_rhos(t)
        tag = f"em start k-means step {t + 1}/{n_steps}"
        if plan.joint_releases:  # the step's blocks together, charged once at their joint cost
            Nn, Sn, Mt = soft_statistics_mechanism(
                counts, S, np.asarray(M) if rm > 0 else None, R, (rc, rs, rm),
                accountant=release.accountant, noise=release.noise,
                step=release.name(f"{tag} statistics"))
            if Mt is not None:
                Mn = Mt
        else:
            Nn = gaussian_mechanism(counts, soft_counts_l2(), ZCDP(rc),
                                    accountant=release.accountant, noise=release.noise,
                                    step=release.name(f"{tag} counts"))
            Sn = gaussian_mechanism(S.ravel(), soft_sums_l2(R), ZCDP(rs),
                                    accountant=release.accountant, noise=release.noise,
                                    step=release.name(f"{tag} sums")).reshape(K, d)
            if rm > 0:
                Mn = symmetric_matrix_mechanism(
                    np.asarray(M), soft_outer_sums_frobenius(R), ZCDP(rm),
                    accountant=release.accountant, noise=release.noise,
                    step=release.name("em start k-means second moments"))
        if rm > 0:
            sig_m = soft_outer_sums_frobenius(R) / math.sqrt(2.0 * rm)
        # a cluster moves only when its noisy mean shift is at most R/2 in norm (in expectation)
        floor = 2.0 * math.sqrt(d) * soft_sums_l2(R) / math.sqrt(2.0 * rs) / R
        if t == n_steps - 1:
            before = C.copy()
        for j in range(K):
            if Nn[j] > floor:
                step = Sn[j] / Nn[j]
                step *= min(1.0, R / max(float(np.linalg.norm(step)), 1e-300))
                C[j] = C[j] + Ginv @ step
    if n_steps == 0:
        before = C.copy()
    return C, before, Nn, Sn, Mn, sig_m, floor


def kmeans_steps(Z: Any, centres: np.ndarray, plan: StartPlan, release: Release,
                  G: np.ndarray, Ginv: np.ndarray,
                  shrink: Callable[[np.ndarray, float], np.ndarray]
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Private Lloyd steps (:func:`_private_lloyd`) from the histogram's ``centres`` (whitened
    frame). Returns the start (weights, means, covariances), as scikit-learn's k-means start:
    each cluster's released covariance (a cluster too small for its release: the frame's).
    Post-processing of releases only. ``shrink(C, s)``: the EM steps' shrinkage of a released
    covariance whose diagonal noise has standard deviation s."""
    k, d = centres.shape
    C, _, Nn, Sn, Mn, sig_m, _ = _private_lloyd(Z, centres, plan, release, G, Ginv)
    sizes = np.maximum(Nn, 1.0)
    weights = sizes / sizes.sum()
    weights = np.maximum(weights, 1e-3)
    covs = np.array([np.eye(d) for _ in range(k)])
    for j in range(k):
        if Mn is not None and Nn[j] > max(2.0 * sig_m, 1.0):
            ybar = Sn[j] / Nn[j]
            Cu = shrink(Mn[j] / Nn[j] - np.outer(ybar, ybar), sig_m / Nn[j])
            covs[j] = repair_covariance(Ginv @ repair_covariance(Cu) @ Ginv.T)
    return weights / weights.sum(), C, covs


def summary_start(Z: Any, seeds: np.ndarray, k: int, plan: StartPlan, release: Release,
                  G: np.ndarray, Ginv: np.ndarray, alternatives: list[Run] | None = None
                  ) -> Run:
    """The *summary start*: the private Lloyd steps (:func:`_private_lloyd`) run with K' > k
    ``seeds`` (whitened frame; over-clustering, as k-means‖ over-samples: a true cluster a
    coarse start merged with a neighbour is still split among small clusters, one it split is
    still covered), then a k-component mixture fitted to the K' released clusters by EM on
    the summary (:func:`summary_gmm`, many restarts) — post-processing, free. Each released
    cluster is a Gaussian blob in the standardised frame: its noisy count, its mean (the
    centre it was clipped around plus its released mean shift, when its count clears the
    sums' floor; else that centre) and its covariance, its own released one blended with the
    pooled within-cluster covariance of all clusters in proportion to its count against
    the second moments' noise reach (a small cluster's own is mostly noise). Everything
    from releases: the same charges as :func:`kmeans_steps`. ``alternatives`` (appended
    to): the summary's best other basin (:func:`summary_gmm`), in the whitened frame."""
    K, d = seeds.shape
    _, before, Nn, Sn, Mn, sig_m, floor = _private_lloyd(Z, seeds, plan, release, G, Ginv)
    R = plan.kmeans_radius
    counts = np.maximum(np.nan_to_num(Nn, nan=0.0), 0.0)
    cu = before @ G.T
    ok = counts > floor
    means = cu.copy()
    ybar = np.zeros((K, d))
    for j in np.flatnonzero(ok).tolist():
        ybar[j] = Sn[j] / counts[j]
        ybar[j] *= min(1.0, R / max(float(np.linalg.norm(ybar[j])), 1e-300))
        means[j] = cu[j] + ybar[j]
    covs = np.array([np.eye(d) for _ in range(K)])
    if Mn is not None and ok.any():
        own = np.array([Mn[j] / counts[j] - np.outer(ybar[j], ybar[j]) if ok[j]
                        else np.zeros((d, d)) for j in range(K)])
        pooled = repair_covariance(np.einsum("j,jab->ab", counts[ok], own[ok])
                                   / counts[ok].sum(), 1e-2)
        reach = 2.0 * math.sqrt(d) * sig_m  # the noise's spectral norm on a cluster's sum
        for j in range(K):
            a = counts[j] / (counts[j] + reach) if ok[j] else 0.0
            covs[j] = repair_covariance(a * own[j] + (1.0 - a) * pooled, 1e-2)
    elif ok.any():
        covs[:] = np.eye(d) * 0.25
    alt: list[Run] | None = [] if alternatives is not None else None
    w, mu, cov = summary_gmm(counts, means, covs, k, release.rng, alternatives=alt)
    for aw, amu, acov in alt or []:
        assert alternatives is not None
        alternatives.append((aw, amu @ Ginv.T,
                             np.array([repair_covariance(Ginv @ c @ Ginv.T) for c in acov])))
    cov_z = np.array([repair_covariance(Ginv @ c @ Ginv.T) for c in cov])
    return w, mu @ Ginv.T, cov_z


SUMMARY_RESTARTS = 10  # k-means++ seedings of the summary EM (post-processing: free)
# seedings skipped after them in the generator: there were 20 (the summary EM took 0.31 s of
# a 4.0 s ε = 1e4 fit under cProfile, issue 27); skipping the last 10 keeps later draws as
# they were
SUMMARY_SKIPPED = 10
ALT_RESTARTS = 90  # seedings (a side generator's) that look for the summary's other basin
SUMMARY_ITERS = 200  # EM iterations per seeding (K' blobs: microseconds each)
SUMMARY_TOL = 1e-9  # relative: a restart this close to the best one's objective is as good
SUMMARY_BLAS = False  # the summary EM's contractions as matrix products (an experiment switch)


def _blob_loglik(means: np.ndarray, covs: np.ndarray, mu: np.ndarray, S: np.ndarray
                 ) -> np.ndarray:
    """E[log N(x; mu_c, S_c)] for x from each blob N(means[j], covs[j]), for every component
    c at once (``mu`` (k, d), ``S`` (k, d, d); returns (K', k)):
    log N(means[j]; mu_c, S_c) − ½ tr(S_c⁻¹ covs[j])."""
    d = means.shape[1]
    L = np.linalg.cholesky(S)
    Linv = np.linalg.inv(L)
    P = np.swapaxes(Linv, -1, -2) @ Linv
    if SUMMARY_BLAS:  # the same sums as matrix products (other rounding, ~25× faster)
        Y = (means[None] - mu[:, None]) @ np.swapaxes(Linv, -1, -2)
        tr = np.swapaxes(P, -1, -2).reshape(-1, d * d) @ covs.reshape(-1, d * d).T
    else:
        Y = np.einsum("cab,cjb->cja", Linv, means[None] - mu[:, None])
        tr = np.einsum("jab,cba->cj", covs, P)
    logdet = 2.0 * np.log(np.diagonal(L, axis1=-2, axis2=-1)).sum(axis=1)
    quad = np.einsum("cja,cja->cj", Y, Y)
    return np.asarray(-0.5 * (quad + tr + logdet[:, None] + d * math.log(2.0 * math.pi))).T


def _summary_em(N: np.ndarray, means: np.ndarray, covs: np.ndarray, resp: np.ndarray
                ) -> tuple[float, Run]:
    """EM on the blobs (weights ``N``) from the responsibilities ``resp`` (K', k): each blob
    counts as N_j rows spread as its Gaussian (the grouped-data form of EM). Returns (the
    summary log-likelihood Σ_j N_j log Σ_c π_c exp E_j[log N_c], the fit)."""
    K, d = means.shape
    eye = np.eye(d)
    obj = -math.inf
    fit: Run | None = None
    for _ in range(SUMMARY_ITERS):
        w, mu, S = _summary_m_step(N, means, covs, resp)
        S = _summary_repair(S, 1e-3, S.shape[0]) + 1e-6 * eye
        pi = w / w.sum()
        logp = _blob_loglik(means, covs, mu, S)
        logp += np.log(pi)
        top = logp.max(axis=1, keepdims=True)
        lse = top[:, 0] + np.log(np.exp(logp - top).sum(axis=1))
        new = float(N @ lse)
        resp = np.exp(logp - lse[:, None])
        fit = (pi, mu, S)
        if new - obj <= 1e-12 * abs(new):
            obj = new
            break
        obj = new
    assert fit is not None
    return obj, fit


def _summary_m_step(N: np.ndarray, means: np.ndarray, covs: np.ndarray, resp: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The M-step of :func:`_summary_em` from one restart's responsibilities: (the components'
    blob weights clamped at 1e-12, their means, their covariances before the repair)."""
    Nr = N[:, None] * resp
    tot = Nr.sum(axis=0)
    w = np.maximum(tot, 1e-12)
    mu = (Nr.T @ means) / w[:, None]
    D = means[None] - mu[:, None]  # (k, K', d)
    S = _blob_scatter(Nr.T, covs, D) / w[:, None, None]
    return w, mu, S


def _blob_scatter(NrT: np.ndarray, covs: np.ndarray, D: np.ndarray) -> np.ndarray:
    """Σ_j r_jc (covs[j] + D_cj D_cjᵀ) for each component c (``NrT`` (c, K') the blobs'
    weighted responsibilities, ``D`` (c, K', d) the blobs' means less the components'): the
    summary M-step's scatter before dividing by the weights. ``SUMMARY_BLAS``: as matrix
    products (the same sums in another order)."""
    if SUMMARY_BLAS:
        K, d = covs.shape[0], covs.shape[-1]
        return ((NrT @ covs.reshape(K, d * d)).reshape(-1, d, d)
                + np.swapaxes(D * NrT[:, :, None], -1, -2) @ D)
    return (np.einsum("jc,jab->cab", NrT.T, covs)
            + np.einsum("cja,cjb->cab", D * NrT[:, :, None], D))


def _summary_repair(S: np.ndarray, lo: float, k: int) -> np.ndarray:
    """:func:`repair_covariance` ``(S, lo)`` of the summary EM's covariances, ``S`` the stack
    of m restarts × ``k`` components, to rounding: a restart whose k matrices all have their
    eigenvalues in [``lo``, 1e4] — S − lo·I has a Cholesky factor and tr S < 1e4 (≥ the
    largest eigenvalue of a PD matrix) — keeps sym(S), which the repair reconstructs from its
    eigenpairs unchanged but for rounding (~1e-16 relative); the other restarts' matrices
    are repaired. The decision is per restart (one stacked Cholesky when every restart
    passes), so the batch equals :func:`_summary_em` run restart by restart, bit for bit.
    The stacked eigendecomposition was half of the summary EM's time (n = 5e4, d = 10,
    k = 3, ε = 1e4: 11 restarts × 3 components, ~60 iterations as the blobs' mixture
    collapses to one Gaussian). Post-processing of released blobs."""
    C = sym(S)
    m = C.shape[0] // k
    d = C.shape[-1]
    fine = np.trace(C, axis1=-2, axis2=-1).reshape(m, k).max(axis=1) < 1e4
    shifted = C - lo * np.eye(d)
    try:
        np.linalg.cholesky(shifted)
    except np.linalg.LinAlgError:  # some restart does not pass: decided restart by restart
        for i in np.flatnonzero(fine).tolist():
            try:
                np.linalg.cholesky(shifted[i * k : (i + 1) * k])
            except np.linalg.LinAlgError:
                fine[i] = False
    bad = np.flatnonzero(~np.repeat(fine, k))
    if bad.size:
        C[bad] = repair_covariance(S[bad], lo)
    return C


def _summary_em_batch(N: np.ndarray, means: np.ndarray, covs: np.ndarray,
                      resps: list[np.ndarray]) -> list[tuple[float, Run]]:
    """:func:`_summary_em` from each of the restarts' responsibilities ``resps`` ((K', k)
    each), the restarts advanced together in stacked operations, every restart's objective and
    fit :func:`_summary_em`'s bit for bit; a restart drops out at its own convergence.
    Rounding follows the operands' memory layout, so the stacks keep each restart's layout:
    from the second step on :func:`_summary_em`'s responsibilities are transposed (K', k)
    arrays (its log-densities come transposed from :func:`_blob_loglik`), held here as one
    C-ordered (R, k, K') stack; the first M-step (ordinary (K', k) arrays) and the products
    with the blobs' means (a stacked product takes another BLAS path) run restart by
    restart."""
    K, d = means.shape
    eye = np.eye(d)
    obj = [-math.inf] * len(resps)
    fits: list[Run | None] = [None] * len(resps)
    active = np.arange(len(resps))
    RT = np.empty((len(resps), resps[0].shape[1], K))  # restart r's responsibilities: RT[r].T
    for it in range(SUMMARY_ITERS):
        m = active.size
        if it == 0:
            steps = [_summary_m_step(N, means, covs, resps[r]) for r in active.tolist()]
            k = steps[0][1].shape[0]
            w = np.array([x[0] for x in steps])
            mu = np.concatenate([x[1] for x in steps])
            S = np.concatenate([x[2] for x in steps])
        else:
            NrT = N * RT[active]  # (m, k, K'): restart i's N_j r_jc, transposed
            w = np.maximum(NrT.sum(axis=2), 1e-12)
            mu3 = np.array([x @ means for x in NrT]) / w[:, :, None]
            mu = mu3.reshape(m * k, d)
            D = means[None] - mu[:, None]  # (m k, K', d)
            S = _blob_scatter(NrT.reshape(m * k, K), covs, D) / w.reshape(m * k, 1, 1)
        S = _summary_repair(S, 1e-3, k) + 1e-6 * eye
        pi = w / w.sum(axis=1, keepdims=True)
        LT = _blob_loglik(means, covs, mu, S).T.reshape(m, k, K)  # C-ordered
        LT += np.log(pi)[:, :, None]
        top = LT.max(axis=1, keepdims=True)
        lse = top[:, 0, :] + np.log(np.exp(LT - top).sum(axis=1))
        RT[active] = np.exp(LT - lse[:, None, :])
        done = np.zeros(m, dtype=bool)
        for i, r in enumerate(active.tolist()):
            new = float(N @ lse[i])
            fits[r] = (pi[i], mu[i * k : (i + 1) * k], S[i * k : (i + 1) * k])
            done[i] = new - obj[r] <= 1e-12 * abs(new)
            obj[r] = new
        active = active[~done]
        if active.size == 0:
            break
    return [(o, f) for o, f in zip(obj, fits, strict=True) if f is not None]


def summary_gmm(N: np.ndarray, means: np.ndarray, covs: np.ndarray, k: int,
                rng: np.random.Generator, *, restarts: int | None = None,
                skipped: int | None = None, alternatives: list[Run] | None = None) -> Run:
    """A k-component mixture fitted to K' weighted Gaussian blobs by EM on the summary
    (:func:`_summary_em`) from the least-inertia k-means of the blobs' means and from
    ``SUMMARY_RESTARTS`` k-means++ seedings: the first fit within ``SUMMARY_TOL`` (relative)
    of the largest summary log-likelihood wins (a fit that equals the best up to rounding
    does not take over: the in-memory and cluster fits, whose releases differ in the last
    bits, pick the same restart). ``restarts`` / ``skipped``: that many seedings, then that
    many skipped (default ``SUMMARY_RESTARTS`` / ``SUMMARY_SKIPPED``). ``alternatives``
    (a list, appended to): also ``ALT_RESTARTS`` k-means++ seedings from a side generator
    (:func:`_side_rng`: ``rng`` ends where it would without them, and the returned fit is
    the same bit for bit — each restart is computed as alone), and the best of their fits
    whose objective differs from the winner's (relative 1e-6) is appended: the summary's
    best *other* basin, or nothing when they all found the winner's. Post-processing of
    releases only."""
    K = means.shape[0]
    w = np.maximum(N, 0.0)
    if K <= k or w.sum() <= 0:
        pad = k - min(K, k)
        idx = np.concatenate([np.arange(min(K, k)), np.zeros(pad, dtype=np.int64)])
        pi = np.maximum(w[idx], 1.0)
        return pi / pi.sum(), means[idx], covs[idx]
    inits: list[np.ndarray] = []
    C, _ = best_kmeans(means, w, k, rng, None)
    inits.append(C)
    for _ in range(SUMMARY_RESTARTS if restarts is None else restarts):
        inits.append(kmeans(means, w, k, rng)[0])
    skip_seedings(rng, k, SUMMARY_SKIPPED if skipped is None else skipped)
    n_main = len(inits)
    if alternatives is not None and ALT_RESTARTS > 0:
        side = _side_rng(rng)
        inits.extend(kmeans(means, w, k, side)[0] for _ in range(ALT_RESTARTS))
    resps = []
    for C in inits:
        lab = nearest(sq_dists(np.ascontiguousarray(means.T), C))
        resp = (lab[:, None] == np.arange(k)).astype(np.float64)
        empty = resp.sum(axis=0) == 0  # a centre no blob is nearest to: the farthest blob
        for c in np.flatnonzero(empty).tolist():
            j = int(np.argmin(((means - C[c]) ** 2).sum(axis=1)))
            resp[j] = 0.0
            resp[j, c] = 1.0
        resps.append(resp)
    fits = _summary_em_batch(w, means, covs, resps)
    if alternatives is not None:
        main = fits[:n_main]
        top = max(obj for obj, _ in main)
        won = next((o for o, _ in main if o >= top - SUMMARY_TOL * abs(top)), main[0][0])
        other = [(o, f) for o, f in fits[n_main:] if abs(o - won) > 1e-6 * abs(won)]
        if other:
            alternatives.append(max(other, key=lambda x: x[0])[1])
        fits = main
    best = max(obj for obj, _ in fits)
    for obj, fit in fits:
        if obj >= best - SUMMARY_TOL * abs(best):
            return fit
    return fits[0][1]


def reduce_run(run: Run, k: int, n: int, rng: np.random.Generator) -> Run:
    """A released run of k' > k components reduced to k (post-processing, free): each
    component a Gaussian blob of n·w_j rows, fitted by EM on the summary with restarts
    (:func:`summary_gmm`). Over-parameterised EM puts a component in every true cluster more
    often than EM with k (Dwivedi et al., "Singularity, misspecification and the convergence
    rate of EM", Ann. Statist. 2020; Xu, Hsu, Maleki, "Benefits of over-parameterization with
    EM", NeurIPS 2018); the reduction searches the k-component basins at no privacy cost."""
    w, means, covs = run
    pi, mu, S = summary_gmm(n * np.asarray(w, dtype=np.float64), means, covs, k, rng)
    pi = np.maximum(pi, 1e-3)
    return pi / pi.sum(), mu, repair_covariance(S)


def repair_covariance(C: np.ndarray, lo: float = EIG_FLOOR) -> np.ndarray:
    """``C`` (one matrix or a stack of them) symmetrised, its eigenvalues clipped to
    [``lo``, 1e4] (NaN ones set to 1)."""
    w, V = np.linalg.eigh(sym(C))
    w = np.clip(np.nan_to_num(w, nan=1.0), lo, 1e4)
    return sym((V * w[..., None, :]) @ np.swapaxes(V, -1, -2))


def pick_run(scores: np.ndarray, plan: StartPlan, release: Release, cap: float = 0.0) -> int:
    """The run with the largest noisy score (``scores``: the runs' sums from
    :func:`~privgauss.mixture.private_em._em_kernel`; one joint release over the runs, the
    pick is post-processing). ``cap`` > 0: each sum is the rows' regrets to the runs' best
    model capped at ``cap`` (each row moves each sum by at most cap: L2 sensitivity cap·√C,
    :func:`~privgauss.sensitivity.regret_sums_l2`); else their log-likelihood ratios to the
    frame's standard normal clipped to ±b, b = ``plan.score_bound`` (2b√C)."""
    sens = (regret_sums_l2(cap, len(scores)) if cap > 0
            else score_sums_l2(plan.score_bound, len(scores)))
    noisy = gaussian_mechanism(scores, sens, ZCDP(plan.rho_score),
                               accountant=release.accountant, noise=release.noise,
                               step=release.name("em run selection"))
    return int(np.argmax(np.nan_to_num(noisy, nan=-np.inf)))
