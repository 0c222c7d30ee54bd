"""The public preconditioner: Alg. 1 of Bie, Kamath and Singhal (NeurIPS 2022; Lemma 3.4, the
γ-shifted version Lemma 3.13).

:func:`public_preconditioner` turns d+1 (or more) public rows into an affine frame
(:class:`Preconditioner`) in which the private rows' covariance lies between I and K·I and
their mean within R of the origin, with probability ≥ 1 − β over the public rows; its range
constants depend on public sizes only (:func:`range_constants`). Public data only: nothing is
spent and no private row is read, so any guarantee of a learner run in the frame is kept for
every public dataset. :mod:`.public` (Alg. 2 and the public-data mean) uses it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..backends import public_rows
from ..clipped_stats import transform_rows
from ..exceptions import InvalidDataError
from ..linalg import sqrtm_psd, sym
from .coinpress.schedule import check_beta as _check_beta
from .public_frame import PublicVerdict, frame_of, untrusted_message

__all__ = ["Preconditioner", "check_gamma", "public_preconditioner", "range_constants"]

_EPS = float(np.finfo(np.float64).eps)


@dataclass(frozen=True, eq=False)
class Preconditioner:
    """Output of Alg. 1 (public only). With probability ≥ 1 − β over the public rows:
    L·Σ̂ ⪯ Σ ⪯ U·Σ̂, so the private rows mapped by :meth:`forward` have covariance between I
    and K·I (K = U/L) and mean of norm ≤ R, and lie within Mahalanobis distance
    ``mahalanobis_radius`` (ω) of the origin. ``cov_sqrt`` is the one square root A (AAᵀ = Σ̂)
    used in both directions (pitfall P9); it is affine-equivariant: public rows x ↦ Bx + b
    give A ↦ BA.
    """

    mean: np.ndarray
    cov: np.ndarray
    cov_sqrt: np.ndarray
    L: float
    U: float
    K: float
    R: float
    mahalanobis_radius: float
    beta: float
    gamma: float
    n_public: int
    n_inliers: int = 0

    @property
    def dim(self) -> int:
        return int(self.mean.shape[0])

    @property
    def forward_matrix(self) -> np.ndarray:
        """The matrix F = L^{-1/2} A^{-1} of :meth:`forward`."""
        return np.linalg.inv(self.cov_sqrt) / math.sqrt(self.L)

    def forward(self, X: Any) -> np.ndarray:
        """Rows y = L^{-1/2} A^{-1}(x − μ̂) (a fixed map per record): (X − μ̂) Fᵀ, a row that
        overflows in that frame sent far, so clipped
        (:func:`~privgauss.clipped_stats.transform_rows`)."""
        return transform_rows(X, self.forward_matrix, self.mean)

    def backward(self, mean_Y: Any, cov_Y: Any) -> tuple[np.ndarray, np.ndarray]:
        """Map an estimate in forward coordinates back: (√L·A μ_Y + μ̂, L·A Σ_Y Aᵀ)."""
        A = self.cov_sqrt
        mu = math.sqrt(self.L) * (A @ np.asarray(mean_Y, dtype=np.float64)) + self.mean
        cov = sym(self.L * (A @ np.asarray(cov_Y, dtype=np.float64) @ A.T))
        return mu, cov


def _helmert(k: int) -> np.ndarray:
    """(k+1) × k orthonormal basis of the complement of the all-ones vector."""
    H = np.zeros((k + 1, k))
    for j in range(1, k + 1):
        H[:j, j - 1] = 1.0
        H[j, j - 1] = -float(j)
        H[:, j - 1] /= math.sqrt(j * (j + 1))
    return H


def _equivariant_sqrt(P: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """A with AAᵀ = cov and A(BP + b) = B·A(P): the frame of the first d+1 rows (via a
    Helmert basis), corrected by the symmetric root of the (B-invariant) remaining factor."""
    m, d = P.shape
    S = P[: d + 1]
    A0 = (S - S.mean(axis=0)).T @ _helmert(d) / math.sqrt(d)
    if m == d + 1:
        return A0
    if np.linalg.cond(A0) > 1e12:  # first d+1 rows degenerate: any valid root will do
        return np.linalg.cholesky(cov)
    A0inv = np.linalg.inv(A0)
    return A0 @ sqrtm_psd(sym(A0inv @ cov @ A0inv.T))


def _check_general_position(C: np.ndarray) -> None:
    """Refuse centred public rows C (m × d) whose affine span is not all of R^d.

    Scale-invariant: columns are equilibrated (any per-coordinate scaling gives the same
    verdict) and the numerical rank is read off the singular values of C itself — not of CᵀC,
    whose squared spread would flag well-posed but ill-conditioned data (condition number 1e8
    at d = 100) — with numpy's relative tolerance max(m, d)·eps·σ_max.
    """
    m, d = C.shape
    norms = np.linalg.norm(C, axis=0)
    if not (np.isfinite(norms).all() and norms.min() > 0):
        s = np.zeros(1)
    else:
        s = np.linalg.svd(C / norms, compute_uv=False)
    if s.shape[0] < d or not s[-1] > max(m, d) * _EPS * s[0]:
        raise InvalidDataError(
            "the public rows are degenerate (they do not span all d dimensions: their "
            "covariance is singular); give d+1 public rows in general position"
        )


def _lu_constants(d: int, m: int, b: float) -> tuple[float, float]:
    """(L, U) for the sample covariance of m ≥ d+1 public rows (k = m − 1 d.o.f.), each side
    failing w.p. ≤ b/3. With k = d these are Alg. 1's L = d/(2√d + √(2 ln 3/b))², U = 9d²/b².
    For k > d: Davidson–Szarek σ_max(G) ≤ √k + √d + t and σ_min(G) ≥ √k − √d − t
    (t = √(2 ln 3/b), G a d×k Gaussian matrix); the Edelman bound on a d×d block gives
    U ≤ 9dk/b², used when the Davidson–Szarek lower bound is vacuous or weaker."""
    k = m - 1
    t = math.sqrt(2.0 * math.log(3.0 / b))
    L = k / (math.sqrt(k) + math.sqrt(d) + t) ** 2
    U = 9.0 * d * k / b**2
    gap = math.sqrt(k) - math.sqrt(d) - t
    if gap > 0:
        U = min(U, k / gap**2)
    return L, U


def public_preconditioner(X_pub: Any, beta: float, gamma: float = 0.0, *,
                          outliers: bool = False) -> Preconditioner:
    """Alg. 1 (Bie–Kamath–Singhal Lemma 3.4, γ-version Lemma 3.13) — public data only, free,
    on the m' inliers of a robust fit of the public rows (:func:`.public_frame.public_verdict`).

    Exact duplicates are merged, gross errors and outliers of a reweighted MCD fit dropped, so
    neither the order nor duplicates of the public rows change the frame, and one far row
    (a data-entry error) does not move it. μ̂ is the mean of the m' inliers; Σ̂ is their
    unbiased covariance (never that of a central subset: biased low); L, U (failure ``beta``
    split in three) as in
    :func:`_lu_constants` with m' rows; with
    TV shift γ: L_γ = (1−γ)⁴L/4, U_γ = 4U/(1−γ)⁴. K = U_γ/L_γ and, with the exact χ bound
    c = d + 2√(d ln 3/b) + 2 ln 3/b instead of the paper's √5-erratum value,
    R = √(U/L_γ)·(√(40γ/(1−γ)⁵) + √(c/m')) and ω = √(c/m') (γ = 0) or
    (2/(1−γ)²)(√(40γ/(1−γ)⁵) + √(c/m')). Affine-equivariant: public rows x ↦ Bx + b give
    the same inliers and A ↦ BA.

    ``outliers=False`` keeps every distinct row free of gross errors (public rows of a mixture:
    a cluster is not an outlier).

    Raises InvalidDataError (no budget is involved) for fewer than d+1 rows, NaN/inf, or public
    rows whose frame cannot be trusted (fewer than d+1 distinct or inlying rows, or inliers
    that do not span R^d), with :func:`untrusted_message`'s advice.
    """
    P = public_rows(X_pub)
    m, d = P.shape
    if m < d + 1:
        raise InvalidDataError(
            f"the public preconditioner needs at least d+1 = {d + 1} public rows, got {m}"
        )
    b = _check_beta(beta)
    g = check_gamma(gamma)
    inliers, reason, k = frame_of(P, outliers)
    if reason:
        raise InvalidDataError(untrusted_message(PublicVerdict(m, k, inliers.shape[0], d, reason)))
    m_in = int(inliers.shape[0])
    mean = inliers.mean(axis=0)
    L_g, U_g, R, omega, rows_used = range_constants(d, m_in, b, g)
    S = inliers[:rows_used]
    C = S - S.mean(axis=0)
    _check_general_position(C)
    cov = sym(C.T @ C / (S.shape[0] - 1))
    A = _equivariant_sqrt(S, cov)
    return Preconditioner(mean, cov, A, L_g, U_g, U_g / L_g, R, omega, b, g, m, m_in)


def check_gamma(gamma: Any) -> float:
    """The TV shift γ of the public rows, checked to lie in [0, 1) (ValueError otherwise)."""
    g = float(gamma)
    if not 0.0 <= g < 1.0:
        raise ValueError(f"gamma must be in [0, 1), got {g}")
    return g


def range_constants(d: int, m: int, b: float, g: float) -> tuple[float, float, float, float, int]:
    """(L_γ, U_γ, R, ω, rows) of :func:`public_preconditioner` for m (inlying) public rows in
    d dimensions — public sizes only, no data: ``rows`` is how many inliers give Σ̂ (all m).

    Never a subset of the inliers: the d+1 *first* rows of a file are a random draw, but the
    d+1 *most central* inliers are not — their covariance is biased low (two central rows of
    ten N(0, 1) rows gave a scale 0.015 instead of 1), and the range (L, U) of d+1 random rows
    would not hold for it."""
    L, U = _lu_constants(d, m, b)
    rows = m
    shrink = (1.0 - g) ** 4 / 4.0 if g > 0 else 1.0
    L_g, U_g = L * shrink, U / shrink
    c = d + 2.0 * math.sqrt(d * math.log(3.0 / b)) + 2.0 * math.log(3.0 / b)
    shift = math.sqrt(40.0 * g / (1.0 - g) ** 5) if g > 0 else 0.0
    base = math.sqrt(c / m)
    R = math.sqrt(U / L_g) * (shift + base)
    omega = base if g == 0 else (2.0 / (1.0 - g) ** 2) * (shift + base)
    return L_g, U_g, R, omega, rows
