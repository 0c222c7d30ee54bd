"""A k-component start for private EM fitted to a released summary of the rows: many small
clusters, each with a released count, mean and covariance (post-processing only).

Private EM's start (:mod:`privgauss.mixture.private_em`) runs its private Lloyd steps with
more clusters than components (over-clustering, as k-means‖ over-samples its seeds): a true
cluster that a coarse start merged with its neighbour is then still split among several small
clusters, and one that a start split is still covered. This module fits a k-component Gaussian
mixture to those summaries by EM on summarised data — each small cluster c a Gaussian blob of
weight N_c, mean m_c and covariance S_c — from many k-means++ seedings, and keeps the fit of
largest summary likelihood: as many restarts as wanted, at no privacy cost (the inputs are
DP releases). No paper; EM on grouped data is the standard sufficient-statistics form
(Dempster, Laird, Rubin 1977, §4.3).

Neighbour relation and guarantee: those of the releases it post-processes.
"""

from __future__ import annotations

import math

import numpy as np

from ..linalg import sym

__all__ = ["summary_gmm"]

RESTARTS = 12  # k-means++ seedings of the summary EM (post-processing: free)
ITERS = 100  # EM iterations per seeding on the summary (K' blobs: microseconds each)
REG = 1e-3  # added to every covariance's diagonal (the whitened frame's variance is ~1)


def _log_gauss(points: np.ndarray, mean: np.ndarray, cov: np.ndarray, spread: np.ndarray
               ) -> np.ndarray:
    """E[log N(x; mean, cov)] for x a blob of mean ``points[c]`` and covariance ``spread[c]``:
    log N(m_c; mean, cov) − ½ tr(cov⁻¹ S_c)."""
    d = points.shape[1]
    L = np.linalg.cholesky(cov)
    Y = np.linalg.solve(L, (points - mean).T)
    Linv = np.linalg.inv(L)
    P = Linv.T @ Linv
    tr = np.einsum("cij,ji->c", spread, P)
    logdet = 2.0 * float(np.log(np.diag(L)).sum())
    return np.asarray(-0.5 * ((Y * Y).sum(axis=0) + tr + logdet + d * math.log(2 * math.pi)))


def _fit(N: np.ndarray, M: np.ndarray, S: np.ndarray, resp: np.ndarray
         ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """EM on the blobs from the hard responsibilities ``resp`` (K', k); returns (summary
    log-likelihood, weights, means, covariances)."""
    Kp, d = M.shape
    k = resp.shape[1]
    eye = np.eye(d)
    within = np.einsum("c,cij->ij", N, S) / N.sum()
    between = np.cov(M.T, aweights=N).reshape(d, d) if Kp > 1 else np.zeros((d, d))
    pooled = sym(within + between) + REG * eye
    means, covs = np.zeros((k, d)), np.array([pooled] * k)
    weights = np.full(k, 1.0 / k)
    last = -np.inf
    obj = -np.inf
    for _ in range(ITERS):
        # M step
        Nj = N @ resp
        for j in range(k):
            if Nj[j] <= 1e-9 * N.sum():
                continue  # an empty component keeps its previous parameters
            wj = N * resp[:, j]
            means[j] = wj @ M / Nj[j]
            D = M - means[j]
            covs[j] = sym((np.einsum("c,cij->ij", wj, S) + (D * wj[:, None]).T @ D) / Nj[j]
                          ) + REG * eye
        weights = np.maximum(Nj / Nj.sum(), 1e-12)
        # E step
        logp = np.stack([np.log(weights[j]) + _log_gauss(M, means[j], covs[j], S)
                         for j in range(k)], axis=1)
        top = logp.max(axis=1, keepdims=True)
        tot = np.exp(logp - top).sum(axis=1, keepdims=True)
        resp = np.exp(logp - top) / tot
        obj = float(N @ (top[:, 0] + np.log(tot[:, 0])))
        if obj - last <= 1e-9 * abs(obj):
            break
        last = obj
    return obj, weights / weights.sum(), means, covs


def _seed(M: np.ndarray, N: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Hard responsibilities (K', k) from a weighted k-means++ seeding of the blob means and a
    few Lloyd steps."""
    seeds = [int(rng.choice(len(N), p=N / N.sum()))]
    for _ in range(1, k):
        d2 = np.min(((M[:, None, :] - M[seeds][None]) ** 2).sum(-1), axis=1)
        q = N * d2
        seeds.append(int(rng.choice(len(N), p=q / q.sum())) if q.sum() > 0 else seeds[-1])
    C = M[seeds].copy()
    for _ in range(20):
        lab = np.argmin(((M[:, None, :] - C[None]) ** 2).sum(-1), axis=1)
        for j in range(k):
            if (lab == j).any():
                C[j] = N[lab == j] @ M[lab == j] / N[lab == j].sum()
    lab = np.argmin(((M[:, None, :] - C[None]) ** 2).sum(-1), axis=1)
    return (lab[:, None] == np.arange(k)).astype(np.float64)


def summary_gmm(counts: np.ndarray, means: np.ndarray, covs: np.ndarray, k: int,
                rng: np.random.Generator, restarts: int = RESTARTS,
                labels: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The k-component mixture (weights, means, covariances) of largest summary likelihood
    over ``restarts`` k-means++ seedings (and, when given, the partition of the blobs by
    ``labels`` in 0..k−1), fitted to the released blobs (``counts`` > 0 kept; their ``means``
    and ``covs``). None when fewer than k blobs have a positive count. Post-processing of
    released values only."""
    keep = np.isfinite(counts) & (counts > 0)
    N, M, S = counts[keep], means[keep], covs[keep]
    if N.shape[0] < k:
        return None
    seeds: list[np.ndarray | None] = [None] * restarts
    if labels is not None:
        seeds.insert(0, (labels[keep][:, None] == np.arange(k)).astype(np.float64))
    best: tuple[float, np.ndarray, np.ndarray, np.ndarray] | None = None
    with np.errstate(all="ignore"):
        for seed in seeds:
            try:
                fit = _fit(N, M, S, _seed(M, N, k, rng) if seed is None else seed)
            except np.linalg.LinAlgError:
                continue
            if math.isfinite(fit[0]) and (best is None or fit[0] > best[0]):
                best = fit
    if best is None:
        return None
    return best[1], best[2], best[3]
