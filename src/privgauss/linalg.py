"""Vectorised linear-algebra helpers: PSD square roots and projections, Mahalanobis norms,
packing of symmetric matrices and float-safe clipping of rows to an L2 ball.

Errors never quote matrix or data entries, eigenvalues or norms (privacy rule).
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np
from scipy.linalg import solve_triangular

from .exceptions import InvalidDataError

__all__ = [
    "clip_eigenvalues",
    "correlation_factor",
    "scaled_cholesky",
    "cholesky_pd",
    "clip_rows",
    "inv_sqrtm_psd",
    "mahalanobis_norms",
    "project_psd",
    "sqrtm_psd",
    "sym",
    "symmetric_from_upper",
    "upper_indices",
    "upper_values",
    "whitened_sq_norms",
]

_EPS = float(np.finfo(np.float64).eps)
_MAX_RADIUS = 1e150
# Rows per block in chunked loops: keeps temporaries near 8 MB whatever the input size.
_BLOCK_ELEMENTS = 1 << 20


def _block_rows(d: int) -> int:
    return max(1, _BLOCK_ELEMENTS // max(d, 1))


def _square(A: Any, name: str = "matrix") -> np.ndarray:
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"{name} must be a square 2-D array, got shape {A.shape}")
    if not np.isfinite(A).all():
        raise InvalidDataError(f"{name} contains NaN or infinite values")
    return A


def sym(A: Any) -> np.ndarray:
    """Symmetric part ``(A + A^T) / 2`` (of the last two axes for stacked input)."""
    A = np.asarray(A, dtype=np.float64)
    return (A + np.swapaxes(A, -1, -2)) / 2.0


def _eigh_sym(A: Any) -> tuple[np.ndarray, np.ndarray]:
    return np.linalg.eigh(sym(_square(A)))


def sqrtm_psd(A: Any) -> np.ndarray:
    """Symmetric PSD square root of the symmetric part of ``A`` (negative eigenvalues -> 0)."""
    w, V = _eigh_sym(A)
    return sym((V * np.sqrt(np.clip(w, 0.0, None))) @ V.T)


def inv_sqrtm_psd(A: Any, *, floor: float = 0.0) -> np.ndarray:
    """Symmetric inverse square root ``A^{-1/2}`` of a positive definite matrix.

    Raises :class:`InvalidDataError` if the smallest eigenvalue is ``<= max(floor,
    d * eps * largest eigenvalue)``, i.e. the matrix is (numerically) singular.
    """
    w, V = _eigh_sym(A)
    d = w.shape[0]
    threshold = max(float(floor), d * _EPS * float(w[-1]))
    if not w[0] > threshold:
        raise InvalidDataError("matrix is singular or not positive definite")
    return sym((V / np.sqrt(w)) @ V.T)


def project_psd(A: Any, *, min_eig: float = 0.0) -> np.ndarray:
    """Nearest (Frobenius) symmetric matrix with all eigenvalues ``>= min_eig``."""
    if not math.isfinite(min_eig):
        raise ValueError("min_eig must be finite")
    w, V = _eigh_sym(A)
    return sym((V * np.maximum(w, min_eig)) @ V.T)


def cholesky_pd(A: Any, *, name: str = "covariance") -> np.ndarray:
    """Lower Cholesky factor of the symmetric part of ``A``; InvalidDataError if not PD."""
    A = sym(_square(A, name))
    try:
        return np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        raise InvalidDataError(f"{name} is not positive definite") from None


def scaled_cholesky(C: Any, *, ridge: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(s, L): C = diag(s)·L·Lᵀ·diag(s), s the standard deviations (1 for a zero-variance
    column) and L the Cholesky factor of the correlation matrix plus ``ridge``·I — the factor
    of a covariance whose columns may differ in scale by many orders of magnitude (1e-3 .. 1e7
    units in one table): the correlation matrix is well scaled, so its factor loses nothing to
    round-off that the scales cause. ``ridge`` is relative (a fraction of each variance); with
    ``ridge`` > 0 a correlation matrix that is still not positive definite (collinear columns)
    gets its eigenvalues floored at ``ridge``, with ``ridge`` = 0 it is refused
    (InvalidDataError)."""
    C = sym(_square(C, "covariance"))
    v = np.diag(C).copy()
    s = np.where(v > 0, np.sqrt(np.where(v > 0, v, 1.0)), 1.0)
    R = C / np.outer(s, s)
    R[np.diag_indices_from(R)] = np.where(v > 0, 1.0, 0.0) + ridge
    try:
        return s, np.linalg.cholesky(R)
    except np.linalg.LinAlgError:
        if not ridge > 0:
            raise InvalidDataError("covariance is not positive definite") from None
        return s, np.linalg.cholesky(project_psd(R, min_eig=ridge))


def correlation_factor(C: np.ndarray, top: float) -> np.ndarray:
    """M with M Mᵀ = C (eigenvalues of the correlation matrix raised to 1e-12 of its
    largest): M = D Q diag(c)^{1/2}, D the standard deviations (√``top`` for a column of
    variance ≤ 0), D⁻¹CD⁻¹ = Q diag(c) Qᵀ — a factor whose entries keep every column's scale."""
    v = np.diag(C)
    s = np.sqrt(np.where(v > 0, v, top))
    c, Q = np.linalg.eigh(sym(C / np.outer(s, s)))
    return s[:, None] * (Q * np.sqrt(np.maximum(c, 1e-12 * float(c[-1]))))


def clip_eigenvalues(C: Any, lo: float, hi: float) -> np.ndarray:
    """The symmetric part of ``C`` with its eigenvalues clipped into [lo, hi] (0 < lo ≤ hi);
    ``C`` itself (a float64 copy) when they already lie there.

    An eigendecomposition of ``C`` in its own units resolves eigenvalues only down to about
    d·eps·λ_max: with columns 1e-2 and 1e8 units apart (λ_max ≈ 1e16) a variance of 2e-4 comes
    out as round-off, may read as below ``lo`` and would be replaced, destroying that column.
    When ``lo`` is not resolved that way, each end is clipped through a factor C = M Mᵀ that
    keeps the columns' scales (:func:`correlation_factor`) and an SVD, which resolves the
    singular values near its largest: the upper end through M = U Σ Vᵀ (C's eigenvalues σ²,
    C' = M V diag(min(1, hi/σ²)) Vᵀ Mᵀ), then the lower end through M⁻¹ = U Σ Vᵀ (eigenvalues
    1/σ², C' = M U diag(max(1, lo·σ²)) Uᵀ Mᵀ)."""
    C0 = _square(C).copy()
    C = sym(C0)
    lo, hi = float(lo), float(hi)
    if not (0 < lo <= hi):
        raise ValueError("need 0 < lo <= hi")
    w, V = np.linalg.eigh(C)
    d = w.shape[0]
    if lo >= 1e6 * d * _EPS * float(w[-1]) or not w[-1] > 0:
        if w[0] >= lo and w[-1] <= hi:
            return C0
        return sym((V * np.clip(w, lo, hi)) @ V.T)
    out = C0
    if w[-1] > hi:  # the largest eigenvalues are resolved in C's own units
        M = correlation_factor(C, float(w[-1]))
        _, sig, Vt = np.linalg.svd(M)
        H = M @ Vt.T
        C = out = sym((H * np.minimum(1.0, hi / (sig * sig))) @ H.T)
    M = correlation_factor(C, float(w[-1]))
    U, sig, _ = np.linalg.svd(np.linalg.inv(M))
    t = np.maximum(1.0, lo * sig * sig)
    if (t == 1.0).all():
        return out
    H = M @ U
    return sym((H * t) @ H.T)


def whitened_sq_norms(X: Any, mean: Any, chol: np.ndarray) -> np.ndarray:
    """Squared norms ``||L^{-1}(x_i - mean)||^2`` of the rows of ``X`` for a lower factor ``L``.

    With ``L = cholesky(cov)`` these are the squared Mahalanobis distances. Computed in row
    blocks so that temporaries stay small for large ``X``.
    """
    X = np.asarray(X, dtype=np.float64)
    mean = np.asarray(mean, dtype=np.float64)
    d = chol.shape[0]
    if X.ndim != 2 or X.shape[1] != d or mean.shape != (d,):
        raise ValueError(
            f"shape mismatch: X {X.shape}, mean {mean.shape}, factor {chol.shape}; expected "
            f"X of shape (n, {d}) and mean of shape ({d},)"
        )
    n = X.shape[0]
    out = np.empty(n, dtype=np.float64)
    step = _block_rows(d)
    for a in range(0, n, step):
        D = X[a : a + step] - mean
        Z = solve_triangular(chol, D.T, lower=True, check_finite=False)
        out[a : a + step] = np.einsum("ij,ij->j", Z, Z)
    return out


def mahalanobis_norms(X: Any, mean: Any, cov: Any) -> np.ndarray:
    """Row norms ``||cov^{-1/2} (x_i - mean)||`` via a Cholesky solve (``cov`` must be PD)."""
    return np.sqrt(whitened_sq_norms(X, mean, cholesky_pd(cov)))


def upper_indices(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the upper triangle (diagonal included) of a d x d matrix, row-major order."""
    return np.triu_indices(d)


def upper_values(A: Any) -> np.ndarray:
    """Upper triangle of a square matrix as a vector of length d(d+1)/2 (triu order)."""
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ValueError(f"expected a square 2-D array, got shape {A.shape}")
    return A[np.triu_indices(A.shape[0])]


def symmetric_from_upper(values: Any, d: int) -> np.ndarray:
    """Symmetric d x d matrix from its upper triangle given as a vector in triu order."""
    values = np.asarray(values, dtype=np.float64)
    m = d * (d + 1) // 2
    if values.shape != (m,):
        raise ValueError(f"expected a vector of length d(d+1)/2 = {m}, got shape {values.shape}")
    iu = np.triu_indices(d)
    M = np.empty((d, d), dtype=np.float64)
    M[iu] = values
    M[iu[1], iu[0]] = values
    return M


def _row_norms(D: np.ndarray) -> np.ndarray:
    # Same arithmetic as np.linalg.norm(D, axis=1).
    return np.sqrt(np.add.reduce(D * D, axis=1))


def clip_rows(X: Any, center: Any, radius: float) -> tuple[np.ndarray, int]:
    """Project the rows of ``X`` lying outside the ball ``B(center, radius)`` onto the ball.

    Returns ``(clipped, n_clipped)`` where ``clipped`` is a new float64 array (``X`` is never
    modified). Every returned row satisfies ``np.linalg.norm(row - center) <= radius`` as
    computed in float64 (``np.linalg.norm(clipped - center, axis=1) <= radius``): projected
    rows are aimed a hair inside the sphere and shrunk further until the check holds.
    Rows already inside are returned bit-for-bit unchanged. ``radius = 0`` maps every row to
    ``center``.

    ``n_clipped`` is data-dependent and therefore PRIVATE: it is for internal use and tests
    only and must never be printed, logged or released.
    """
    if isinstance(radius, bool | np.bool_) or not isinstance(radius, numbers.Real):
        raise ValueError("radius must be a real number")
    radius = float(radius)
    if not (0.0 <= radius <= _MAX_RADIUS):
        raise ValueError(f"radius must be finite, >= 0 and at most {_MAX_RADIUS:.0e}")
    out = np.array(X, dtype=np.float64, order="C", copy=True)
    if out.ndim != 2:
        raise ValueError(f"X must be a 2-D array, got {out.ndim} dimensions")
    n, d = out.shape
    c = np.asarray(center, dtype=np.float64)
    if c.shape != (d,):
        raise ValueError(f"center must have shape ({d},), got {c.shape}")
    if not np.isfinite(c).all():
        raise ValueError("center contains NaN or infinite values")

    norms = np.empty(n, dtype=np.float64)
    step = _block_rows(d)
    with np.errstate(over="ignore", invalid="ignore"):
        for a in range(0, n, step):
            norms[a : a + step] = _row_norms(out[a : a + step] - c)
    idx = np.flatnonzero(~(norms <= radius))  # NaN / inf norms are selected too
    for a in range(0, idx.size, step):
        block = idx[a : a + step]
        out[block] = _project_rows(out[block], norms[block], c, radius)
    return out, int(idx.size)


def split_scales(C: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(s, R): C = diag(s) R diag(s), s the standard deviations and R the correlation matrix;
    a column of variance ≤ 0 gets s² = tr C/d (its floor is then the trace-relative one of
    before session 49: a zero-variance column has no scale of its own, and a tinier floor
    would make any error in its mean cost ~1e300 nat)."""
    C = sym(np.asarray(C, dtype=np.float64))
    v = np.diag(C).copy()
    mean_var = max(float(np.sum(np.where(v > 0, v, 0.0))) / v.size, 1e-300)
    s = np.sqrt(np.where(v > 0, v, mean_var))
    return s, sym(C / np.outer(s, s))


def scaled_floor(C: np.ndarray, floor: float) -> np.ndarray:
    """``C`` with the eigenvalues of its correlation matrix raised to ≥ ``floor``: a floor in
    each column's own units, so changing a column's units scales the result's row and column
    the same way (a floor relative to the trace or the largest eigenvalue is tied to the
    largest scale and swamps a column in small units). Post-processing."""
    s, R = split_scales(C)
    return sym(project_psd(R, min_eig=floor) * np.outer(s, s))


def clip_images(Z: np.ndarray, radius: float) -> np.ndarray:
    """``Z`` (images of rows under a map, modified in place and returned) with each
    non-finite row, and each finite row whose norm overflows, set to 0, and every other row
    of norm above ``radius`` shrunk onto the ball, the norms re-checked after rescaling until
    each is at most ``radius`` (float rounding can leave one a hair above). A per-row map:
    data-independent, no warning raised."""
    with np.errstate(over="ignore", invalid="ignore"):
        Z[~np.isfinite(Z).all(axis=1)] = 0.0
        norms = np.linalg.norm(Z, axis=1)
        Z[~np.isfinite(norms)] = 0.0
    norms = np.linalg.norm(Z, axis=1)
    over = norms > radius
    Z[over] *= (radius / norms[over])[:, None]
    for _ in range(4):
        norms = np.linalg.norm(Z, axis=1)
        over = norms > radius
        if not over.any():
            break
        Z[over] *= (1.0 - 1e-12) * (radius / norms[over])[:, None]
    return Z


def clip_weights(D: np.ndarray, radius: float) -> np.ndarray:
    """Per-row factors w_i = min(1, r/‖D_i‖) with r = radius·(1 − 4(d + 2)ε): w_i·D_i is the
    projection of a finite row onto the ball of that radius about 0, of norm below ``radius``
    whatever the rounding of the computed norm (relative error ≤ (d + 2)ε). For weighted sums
    of clipped rows without materialising them (:func:`clip_rows` copies every row); a
    per-record map, so sums of w_i·D_i keep the clipped rows' sensitivity."""
    d = D.shape[1]
    r = radius * (1.0 - 4.0 * (d + 2) * float(np.finfo(np.float64).eps))
    with np.errstate(divide="ignore"):
        return np.minimum(1.0, r / _row_norms(D))  # a zero row: r/0 = inf → 1


def _project_rows(rows: np.ndarray, nr: np.ndarray, c: np.ndarray, radius: float) -> np.ndarray:
    """Project rows lying outside B(c, radius) (computed norms ``nr``) into the ball. A row with
    a non-finite entry has no direction: it is mapped to the centre (a fixed per-record map,
    so the clipped statistic keeps its sensitivity; never an error on a private value)."""
    bad = ~np.isfinite(rows).all(axis=1)
    if bad.any():
        out = np.empty_like(rows)
        out[bad] = c
        if not bad.all():
            out[~bad] = _project_rows(rows[~bad], nr[~bad], c, radius)
        return out
    finite = np.isfinite(nr)
    if finite.all():
        U = rows - c
        U /= nr[:, None]
    else:
        U = np.empty_like(rows)
        U[finite] = (rows[finite] - c) / nr[finite, None]
        # Squares (or x - center itself) overflowed: get the direction from a rescaled copy.
        H = rows[~finite] * 0.5 - c * 0.5
        H /= np.max(np.abs(H), axis=1, keepdims=True)
        U[~finite] = H / _row_norms(H)[:, None]

    # Aim a hair inside the sphere, then shrink any row whose rounded norm still exceeds the
    # radius by 1 - 2^(it-48): tiny steps first, reaching s = 0 (Y = center) after 49 rounds.
    s = np.full(rows.shape[0], radius * (1.0 - 2.0**-48))
    Y = U * s[:, None]
    Y += c
    active = np.arange(rows.shape[0])
    for it in range(64):
        bad = ~(_row_norms(Y[active] - c) <= radius)
        if not bad.any():
            break
        active = active[bad]
        s[active] *= max(0.0, 1.0 - 2.0 ** (it - 48))
        Y[active] = c + s[active, None] * U[active]
    else:  # pragma: no cover - unreachable: s = 0 gives Y = center exactly
        Y[active] = c
    return Y
