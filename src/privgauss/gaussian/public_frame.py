"""The robust frame of public rows (public rows only, free): which rows a public-data fit may
use, and whether they can give a frame at all (:func:`public_verdict`).

Public rows are free, so any robust non-private estimate of them may be used: duplicates are
merged, gross errors (data-entry errors) screened, and Wilks-test outliers dropped; the order of
the rows never matters. :func:`public_verdict` says, before anything is spent, whether the
remaining rows can give the frame of :func:`~privgauss.gaussian.public.public_preconditioner`
(Bie, Kamath, Singhal, NeurIPS 2022, Alg. 1), and why not; :func:`untrusted_message` turns a
verdict into a refusal a user can act on. Nothing here reads private rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.stats import beta as beta_dist
from scipy.stats import chi2
from scipy.stats import f as f_dist

from ..backends import public_rows

__all__ = ["PublicVerdict", "clean_rows", "frame_of", "public_verdict", "untrusted_message"]

_EPS = float(np.finfo(np.float64).eps)


# A public entry this many robust standard deviations (1.4826·MAD of its column, over the
# distinct rows) from its column's median is a gross error (a data-entry error): the row is
# dropped before the robust fit. Far beyond any Gaussian draw (or a t(3) one at these sizes),
# so it flags only gross errors — and it works with d+1 rows, where no affine-equivariant
# estimator can tell an outlier from an inlier.
_SCREEN_SDS = 1000.0
# Outlier test of the remaining rows (Wilks 1963): for m Gaussian rows the in-sample squared
# Mahalanobis distance D² of each, scaled to m·D²/(m−1)², is Beta(d/2, (m−d−1)/2); a row whose
# p-value is below _OUTLIER_LEVEL/m (Bonferroni: clean rows lose one row with probability
# ≤ _OUTLIER_LEVEL per round) is dropped, and the test is repeated on the rest.
_OUTLIER_LEVEL = 0.01


@dataclass(frozen=True)
class PublicVerdict:
    """Whether m public rows can precondition an unknown covariance in d dimensions — a
    function of the public rows only (:func:`public_verdict`). ``n_distinct``: rows left after
    exact duplicates are merged; ``n_inliers``: those a robust fit keeps (gross errors and
    Wilks-test outliers dropped); ``reason``: why the frame cannot be trusted ("" when it can)."""

    n_rows: int
    n_distinct: int
    n_inliers: int
    dim: int
    reason: str

    @property
    def trusted(self) -> bool:
        return not self.reason


def _spans(C: np.ndarray) -> bool:
    """Whether centred rows C (m × d) span all of R^d: scale-invariant (columns equilibrated)
    and read off the singular values of C itself, with numpy's relative tolerance."""
    m, d = C.shape
    norms = np.linalg.norm(C, axis=0)
    if m < d or not (np.isfinite(norms).all() and norms.min() > 0):
        return False
    s = np.linalg.svd(C / norms, compute_uv=False)
    return bool(s.shape[0] >= d and s[-1] > max(m, d) * _EPS * s[0])


def _screen(P: np.ndarray) -> np.ndarray:
    """Mask of the rows with no entry :data:`_SCREEN_SDS` robust standard deviations from its
    column's median (columns with MAD 0 are not screened: the span check judges them)."""
    med = np.median(P, axis=0)
    dev = np.abs(P - med)
    scale = 1.4826 * np.median(dev, axis=0)
    ok = scale > 0
    if not ok.any():
        return np.ones(P.shape[0], dtype=bool)
    return np.all(dev[:, ok] <= _SCREEN_SDS * scale[ok], axis=1)


def _whiten(P: np.ndarray) -> np.ndarray:
    """P centred and whitened by its own mean and covariance (rows that span R^d), scaled so
    that the columns are orthonormal (the Q of a QR factorisation): the same rows up to a
    rotation for any affine image of P, so ‖z_i‖² (a leverage) is affine-invariant."""
    C = P - P.mean(axis=0)
    return np.linalg.qr(C / np.linalg.norm(C, axis=0), mode="reduced")[0]


def _outliers(U: np.ndarray) -> np.ndarray:
    """Mask of the rows of U (m ≥ d+2 rows spanning R^d) that Wilks's test keeps, and the
    distances ‖z_i‖² of the rows whitened by their own mean and covariance (affine-invariant)."""
    m, d = U.shape
    Z = _whiten(U)
    lev = np.einsum("ij,ij->i", Z, Z)  # D_i² / (m − 1)
    p = beta_dist.sf(np.clip(m * lev / (m - 1), 0.0, 1.0), d / 2.0, (m - d - 1) / 2.0)
    return np.asarray(p >= _OUTLIER_LEVEL / m)


def _subset_distances(U: np.ndarray, idx: np.ndarray) -> np.ndarray | None:
    """Squared Mahalanobis distances of all rows of U from the mean of U[idx] under its unbiased
    covariance; None when U[idx] does not span R^d."""
    S = U[idx]
    mu = S.mean(axis=0)
    C = S - mu
    if not _spans(C):
        return None
    scale = np.linalg.norm(C, axis=0)
    R = np.asarray(np.linalg.qr(C / scale, mode="r")) / math.sqrt(S.shape[0] - 1)
    W = np.linalg.solve(R.T, ((U - mu) / scale).T)
    return np.einsum("ij,ij->j", W, W)


def _concentrated(U: np.ndarray) -> np.ndarray:
    """Mask of the rows of U (m > d+2 rows spanning R^d) kept by one concentration run of the
    Minimum Covariance Determinant (Rousseeuw–Van Driessen's C-steps, deterministic start:
    the h = ⌊(m+d+2)/2⌋ rows nearest the coordinate-wise median in MAD units), reweighted:
    with distances scaled to a χ²_d median, a row is kept unless, as a new draw from the
    h-row fit (Hotelling: (h−d)h/(d(h−1)(h+1))·D² ~ F(d, h−d)), its p-value is below
    :data:`_OUTLIER_LEVEL`/m. A cluster of outliers that masks itself from the classical
    estimate stays outside the h rows; clean Gaussian rows are all kept w.p. ≥ 1 − 0.01."""
    m, d = U.shape
    h = (m + d + 2) // 2
    med = np.median(U, axis=0)
    mad = np.median(np.abs(U - med), axis=0)
    mad[mad <= 0] = 1.0
    idx = np.sort(np.argsort((((U - med) / mad) ** 2).sum(axis=1), kind="stable")[:h])
    dist: np.ndarray | None = None
    for _ in range(50):
        dist = _subset_distances(U, idx)
        if dist is None:
            return np.ones(m, dtype=bool)
        new = np.sort(np.argsort(dist, kind="stable")[:h])
        if np.array_equal(new, idx):
            break
        idx = new
    assert dist is not None
    dist = dist * (float(chi2.ppf(0.5, d)) / max(float(np.median(dist)), 1e-300))
    stat = dist * (h - d) * h / (d * (h - 1) * (h + 1))
    return np.asarray(f_dist.sf(stat, d, h - d) >= _OUTLIER_LEVEL / m)


def _robust_frame(P: np.ndarray, outliers: bool = True) -> tuple[np.ndarray, str, int]:
    """(inlier rows, reason, distinct rows) of public rows P (m × d).

    Exact duplicates are merged (a repeated row is one observation of the population), gross
    errors dropped (:func:`_screen`), then the outliers of a concentrated MCD fit
    (:func:`_concentrated`, more than d+2 rows), then rows that Wilks's outlier test rejects,
    repeatedly (each round on the rows left, until it rejects none or d+1 rows are left).
    ``outliers=False`` stops after the gross errors: for public rows of a *mixture*, whose
    clusters are not outliers of one Gaussian.
    ``reason`` is "" when at least d+1 inliers span R^d, else why not. With more than d+1
    inliers they are returned most central first (by Mahalanobis distance from their own
    mean: an order that no permutation or affine map of P changes).

    Neither order nor duplicates of P change the inliers; their order changes only when
    exactly d+1 rows are kept, as given (no affine-invariant order of d+1 points exists: an
    affine map permutes a simplex's vertices), and then only by a rotation of the frame's
    basis — the same ellipsoid (μ̂, Σ̂) and range (L, U, R).
    """
    d = P.shape[1]
    _, first = np.unique(P, axis=0, return_index=True)
    U = P[np.sort(first)]  # distinct rows, in the order of their first occurrence
    k = U.shape[0]
    spans = (f"are degenerate: they do not span all {d} dimensions (a constant column, or "
             "columns that are linear combinations of others)")
    U = U[_screen(U)] if k >= d + 1 else U
    if U.shape[0] < d + 1:
        why = "distinct public rows" if U.shape[0] == k else (
            f"of the {k} distinct public rows are free of gross errors")
        return U, f"only {U.shape[0]} {why} (d+1 = {d + 1} are needed)", k
    flat = _flat_columns(U)
    if flat:
        return U, (f"the public rows are degenerate: constant in column(s) {flat} (to float "
                   "resolution), so they cannot precondition that direction; the bound-free "
                   "method='histogram' estimates a constant column as one"), k
    if not _spans(U - U.mean(axis=0)):
        return U, f"the public rows {spans}", k
    first_round = U.shape[0] > d + 2
    while outliers and U.shape[0] > d + 1:
        keep = _concentrated(U) if first_round else _outliers(U)
        first_round = False
        if keep.all():
            break
        if keep.sum() < d + 1 or not _spans(U[keep] - U[keep].mean(axis=0)):
            return U[keep], (f"only {int(keep.sum())} of the {k} distinct public rows are "
                             f"inliers that span all {d} dimensions (d+1 = {d + 1} are "
                             "needed)"), k
        U = U[keep]
    if U.shape[0] > d + 1:
        Z = _whiten(U)
        U = U[np.lexsort((*U.T[::-1], np.einsum("ij,ij->i", Z, Z)))]
    return U, "", k


# a public column whose spread is at most this fraction of its magnitude is constant (exactly,
# or up to float rounding: ordinary columns translated by 1e12 are not)
_FLAT_REL = 64 * _EPS


def _flat_columns(U: np.ndarray) -> list[int]:
    """Columns on which the public rows U are constant, up to float rounding."""
    spread = U.max(axis=0) - U.min(axis=0)
    return [int(j) for j in np.flatnonzero(spread <= _FLAT_REL * np.abs(U).max(axis=0))]


@lru_cache(maxsize=8)
def _robust_frame_cached(data: bytes, shape: tuple[int, int], outliers: bool = True
                         ) -> tuple[np.ndarray, str, int]:
    P = np.frombuffer(data, dtype=np.float64).reshape(shape)
    inliers, reason, k = _robust_frame(P, outliers)
    inliers.setflags(write=False)
    return inliers, reason, k


def frame_of(P: np.ndarray, outliers: bool = True) -> tuple[np.ndarray, str, int]:
    """:func:`_robust_frame` of validated public rows, computed once per public dataset."""
    P = np.ascontiguousarray(P, dtype=np.float64)
    return _robust_frame_cached(P.tobytes(), (int(P.shape[0]), int(P.shape[1])), outliers)


def public_verdict(X_pub: Any, d: int | None = None) -> PublicVerdict:
    """Whether the public rows ``X_pub`` can give :func:`public_preconditioner`'s frame, from the
    public rows alone (free; decide it before spending anything). Untrusted: fewer than d+1
    distinct rows, fewer than d+1 inliers of the robust fit, or inliers that do not span R^d
    (a constant public column). Raises InvalidDataError only for rows that are not a table of
    finite numbers with ``d`` columns."""
    P = public_rows(X_pub, n_features=d)
    inliers, reason, k = frame_of(P, outliers=False)
    return PublicVerdict(int(P.shape[0]), k, int(inliers.shape[0]), int(P.shape[1]), reason)


def untrusted_message(verdict: PublicVerdict, method: str = "public") -> str:
    """Why ``method`` ('public', or 'auto' with a budget that has no bound-free fallback) refuses
    public rows with an untrusted frame, and what to do instead (public facts only)."""
    if method == "auto":
        fallback = ("pass an (epsilon, delta) budget (method='auto' then runs the bound-free "
                    "'histogram' route, which needs no public rows)")
    else:
        fallback = ("use method='auto' (with an (epsilon, delta) budget it falls back to the "
                    "bound-free 'histogram' route) or method='histogram'")
    return (
        f"method={method!r} cannot precondition the covariance with these public rows: "
        f"{verdict.reason}. Nothing was spent. Instead {fallback}, or give mean_bound= and "
        "cov_bounds= for method='coinpress'. More rows from the same source will not help when "
        "they are the problem; clean rows from a population only close to the private one "
        "are used with gamma= (a bound on their TV distance)"
    )


def clean_rows(P: np.ndarray) -> np.ndarray:
    """The distinct public rows of P without gross errors (:func:`_screen`; all of them when
    the screen would leave none): what the public mean of :func:`public_mean` averages."""
    _, first = np.unique(P, axis=0, return_index=True)
    U = P[np.sort(first)]
    keep = _screen(U)
    return U[keep] if keep.any() else U
