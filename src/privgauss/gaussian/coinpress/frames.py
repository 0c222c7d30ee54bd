"""Whitening frames of the CoinPress chain computed without losing badly scaled columns.

Post-processing only (no data, no privacy cost): functions of DP releases and public bounds.
The chain of :mod:`.steps` (Biswas, Dong, Kamath, Ullman, *CoinPress*, NeurIPS 2020, Alg. 2)
whitens by a released covariance and keeps each frame's estimate inside the prior's lower
bound lo. Done in the rows' units, an eigendecomposition resolves eigenvalues only down to
about d·eps·λ_max: on a table whose columns span 1e-2 to 1e8 units (λ_max ≈ 1e16) every
eigenvalue below ~1 is round-off, so a p-value column's variance 2e-4 would be floored, or
read as negative, and the frame would stop whitening it (its sd came out 3.7× too wide and its
mean 2 sd off on mhtdata at ε = 1e4). Here both operations are carried out in well-scaled
coordinates: the frame (where the release is near I) for the prior floor, the correlation
matrix for the whitener; well-resolved inputs take the plain eigendecomposition unchanged.
"""

from __future__ import annotations

import math

import numpy as np

from ...exceptions import EstimationFailed
from ...linalg import correlation_factor, project_psd, sym

__all__ = ["MAX_PRIOR_CONDITION", "floor_in_frame", "whitener"]

# Widest cov_bounds (hi/lo) a CoinPress fit accepts: the frames are float64 matrices, and past
# a covariance condition of ~1e36 (columns ~1e18 sd apart) the whitened rows lose their small
# directions to round-off. Measured at eps = 1e4, n = 20,000, d = 4 (two collinear columns at
# sd s_big, one at s_small, one at 1; KL to np.cov over seeds): condition 1e34 and 1e36 fit
# (KL <= 6e-4; mhtdata's 3e25 at 1e-7), 1e40 missed (a DP failure, or KL 0.3-0.9 with a clip
# warning), 1e42 came back singular without a warning. The prior bounds the truth's condition,
# so a prior within this width is resolved whatever the data; a wider one is refused before
# anything is spent (the bound-free route standardises each axis by DP first).
MAX_PRIOR_CONDITION = 1e36

_EPS = float(np.finfo(np.float64).eps)
# an eigendecomposition in the rows' units is trusted when the quantity it must resolve is at
# least this many times its round-off (d·eps·λ_max)
_RESOLVE = 1e6
# relative eigenvalue guard of a factorisation: 1e-12 of the largest (the plain whitener's)
_GUARD = 1e-12


def _resolved(small: float, largest: float, d: int) -> bool:
    """Whether an eigendecomposition in the rows' units resolves ``small`` next to ``largest``."""
    return small >= _RESOLVE * d * _EPS * largest


def floor_in_frame(Z: np.ndarray, A: np.ndarray, floor: float) -> np.ndarray:
    """The release Z of the frame A projected so that A⁻¹ Z' A⁻ᵀ ⪰ floor·I (post-processing);
    project_psd(Z) when that already holds.

    In the rows' units (S = A⁻¹ Z A⁻ᵀ, eigendecomposed, floored, mapped back) when that
    resolves ``floor`` next to S's largest eigenvalue; otherwise in the frame: with
    Z₊ = Z's eigenvalues raised to d·eps of its largest and K = Z₊^{-1/2} A = U Σ Vᵀ,
    S⁻¹ = KᵀK, so S's eigenvalues are 1/σ² and
    Z' = Z₊^{1/2} U diag(max(1, floor·σ²)) Uᵀ Z₊^{1/2} — the large σ (the small variances
    the floor is about) are the ones an SVD resolves, whatever the columns' units."""
    d = Z.shape[0]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        Ainv = np.linalg.inv(A)
        S = sym(Ainv @ Z @ Ainv.T)
    if not np.isfinite(S).all():
        return project_psd(Z)
    w, V = np.linalg.eigh(S)
    if _resolved(floor, float(w[-1]), d):
        if w[0] >= floor:
            return project_psd(Z)
        with np.errstate(over="ignore", invalid="ignore"):
            out = sym(A @ ((V * np.maximum(w, floor)) @ V.T) @ A.T)
        return out if np.isfinite(out).all() else project_psd(Z)
    z, Q = np.linalg.eigh(sym(Z))
    if not z[-1] > 0:  # nothing positive released: S = floor·I
        return sym(floor * (A @ A.T))
    zc = np.maximum(z, d * _EPS * float(z[-1]))
    with np.errstate(over="ignore", invalid="ignore"):
        U, sig, _ = np.linalg.svd((Q / np.sqrt(zc)) @ Q.T @ A)
        t = np.maximum(1.0, floor * sig * sig)
        if not (t > 1.0).any():
            return project_psd(Z)
        H = (Q * np.sqrt(zc)) @ Q.T @ U
        out = sym((H * t) @ H.T)
    return out if np.isfinite(out).all() else project_psd(Z)


def whitener(cov: np.ndarray, floor: float, step: str, rel: float = 1e-6) -> np.ndarray:
    """A whitener B (B cov Bᵀ ⪯ I, = I above the floor) of a released covariance
    (post-processing): its symmetric inverse square root with eigenvalues floored at
    max(floor·rel, 1e-12·λ_max), the second term a round-off guard. When the covariance's own
    eigenvalues are not all resolved (columns of very different scales) it is taken through a
    factor that keeps the columns' scales instead, cov = M Mᵀ (:func:`~privgauss.linalg.
    clip_eigenvalues`), not symmetric: K = M⁻¹ = U Σ Vᵀ whitens exactly, and
    B = U diag(min(1, cap/σ)) Uᵀ K caps the magnification at cap = (floor·rel)^{-1/2} where
    it exceeds it (the large σ, the ones an SVD resolves). A non-finite release (overflow on
    absurd inputs) is a DP failure output."""
    if not np.isfinite(cov).all():
        raise EstimationFailed(
            "the private covariance overflowed; rescale the data or tighten the bounds",
            step=step,
        )
    d = cov.shape[0]
    w, V = np.linalg.eigh(sym(cov))
    if _resolved(float(w[0]), float(w[-1]), d) or not w[-1] > 0:
        w = np.maximum(w, max(floor * rel, _GUARD * float(w[-1]), np.finfo(float).tiny))
        return sym((V / np.sqrt(w)) @ V.T)
    K = np.linalg.inv(correlation_factor(sym(cov), float(w[-1])))
    U, sig, _ = np.linalg.svd(K)
    cap = 1.0 / math.sqrt(max(floor * rel, np.finfo(float).tiny))
    return np.asarray((U * np.minimum(1.0, cap / sig)) @ U.T @ K)
