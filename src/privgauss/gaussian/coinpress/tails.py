"""χ tails and clipping under the Gaussian model, for the CoinPress plans: no data involved.

Biswas, Dong, Kamath and Ullman, *CoinPress* (NeurIPS 2020): the Laurent–Massart bound γ(d, β)
their recipe clips at, the exact χ quantiles the practical plans use instead, and the closed forms
of clipping N(0, M) rows to a ball (slopes, second and fourth moments, and their inversions
:func:`undo_shrinkage` and :func:`undo_cov_clip`). Everything is a function of public
quantities, or post-processing of a DP output: no privacy cost.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.optimize import brentq
from scipy.special import chdtrc, gammaln
from scipy.stats import chi2, norm, poisson

__all__ = [
    "chi2_isf",
    "chi2_sf",
    "chi_tail_bound",
    "chi_tail_radius",
    "clip_fourth_moment",
    "clip_second_moment",
    "clip_slope",
    "cov_clip_slope",
    "norm_isf",
    "undo_cov_clip",
    "undo_shrinkage",
]


def chi_tail_bound(d: int, beta: float) -> float:
    """γ(d, β) = sqrt(d + 2√(d ln 1/β) + 2 ln 1/β): ‖z‖ ≤ γ w.p. ≥ 1 − β for z ~ N(0, I_d)
    (Laurent–Massart 2000). The bound CoinPress uses."""
    lb = math.log(1.0 / beta)
    return math.sqrt(d + 2.0 * math.sqrt(d * lb) + 2.0 * lb)


@lru_cache(maxsize=4096)
def chi2_isf(p: float, d: int) -> float:
    return float(chi2.isf(p, d))


def chi2_sf(x: float, d: int) -> float:
    """P(χ²_d > x): ``scipy.stats.chi2.sf``'s own function (``chdtrc``, the same values)
    without the distribution object's argument handling, which costs ~20× the evaluation in
    the planner's inner loops."""
    return 1.0 if x < 0 else float(chdtrc(d, x))


@lru_cache(maxsize=1024)
def norm_isf(p: float) -> float:
    return float(norm.isf(p))


def chi_tail_radius(d: int, beta: float) -> float:
    """The exact (1 − β) quantile of ‖z‖ for z ~ N(0, I_d); never above :func:`chi_tail_bound`."""
    return math.sqrt(chi2_isf(beta, d))


def _chi2_trunc_terms(k: np.ndarray, tau: float) -> np.ndarray:
    """h_k(τ) = P(χ²_{k+2} ≤ τ²) + τ E[χ²_{k+2}^{-1/2}; χ²_{k+2} > τ²] for an array of k."""
    t2 = tau * tau
    ratio = np.exp(gammaln((k + 1) / 2.0) - gammaln(k / 2.0 + 1.0)) / math.sqrt(2.0)
    return chi2.cdf(t2, k + 2) + tau * ratio * chi2.sf(t2, k + 1)


@lru_cache(maxsize=8192)
def clip_slope(d: int, tau: float, a: float = 0.0) -> float:
    """φ_τ(a): E[clip_τ(z + v)] = φ_τ(‖v‖)·v for z ~ N(0, I_d), clip_τ the projection onto the
    ball of radius τ. By Stein's identity E[y g(‖y‖²)] = v E[g(χ'²_{d+2}(‖v‖²))], a Poisson
    mixture of central χ² terms."""
    if a == 0.0:
        return float(_chi2_trunc_terms(np.array([float(d)]), tau)[0])
    lam = a * a / 2.0
    jmax = int(lam + 12.0 * math.sqrt(lam) + 30.0)
    j = np.arange(jmax + 1)
    w = poisson.pmf(j, lam)
    return float(np.dot(w, _chi2_trunc_terms(d + 2.0 * j, tau)))


@lru_cache(maxsize=8192)
def clip_second_moment(d: int, tau: float) -> float:
    """E[min(‖z‖², τ²)]/d for z ~ N(0, I_d): the per-coordinate variance of clip_τ(z)."""
    t2 = tau * tau
    return float(chi2.cdf(t2, d + 2) + (t2 / d) * chi2.sf(t2, d))


def undo_shrinkage(g: np.ndarray, d: int, tau: float, a_cap: float) -> np.ndarray:
    """Invert v ↦ φ_τ(‖v‖) v radially (post-processing of a DP output): the v with
    ‖v‖ φ_τ(‖v‖) = ‖g‖, its norm capped at ``a_cap``."""
    a0 = float(np.linalg.norm(g))
    if a0 == 0.0:
        return g / clip_slope(d, tau)

    def psi(a: float) -> float:
        return a * clip_slope(d, tau, a) - a0

    if psi(a_cap) <= 0:
        a = a_cap
    else:
        a = brentq(psi, 0.0, a_cap, xtol=1e-12 * max(a_cap, 1.0), rtol=1e-10)
    return g * (a / a0)


def clip_fourth_moment(d: int, tau: float) -> float:
    """E[min(‖z‖⁴, τ⁴)]/(d(d+2)) for z ~ N(0, I_d): E[z_i² z_j² min(1, τ²/‖z‖²)²] (i ≠ j)."""
    t2 = tau * tau
    return float(chi2.cdf(t2, d + 4) + t2 * t2 * chi2.sf(t2, d) / (d * (d + 2.0)))


def cov_clip_slope(d: int, tau: float) -> float:
    """∂E[clip_τ(x) clip_τ(x)ᵀ]_ij / ∂M_ij at M = I, i ≠ j (x ~ N(0, M)): the factor by which
    undoing the clip magnifies an off-diagonal error, h − 2τ² P(χ²_d > τ²)/(d(d + 2))."""
    t2 = tau * tau
    return clip_second_moment(d, tau) - 2.0 * t2 * float(chi2.sf(t2, d)) / (d * (d + 2.0))


_CLIP_DRAWS = 8192  # public Monte Carlo draws for the anisotropic part of the clip correction


@lru_cache(maxsize=64)
def _clip_draws(d: int) -> np.ndarray:
    """Fixed public N(0, I_d) draws (no data, no privacy role): squared coordinates."""
    return np.random.default_rng(20_201_004).standard_normal((_CLIP_DRAWS, d)) ** 2


def _clip_factors(lam: np.ndarray, tau: float) -> np.ndarray:
    """h_i(λ) = E[g_i² min(1, τ²/Σ_j λ_j g_j²)], g ~ N(0, I): rows ~ N(0, diag λ) clipped to
    the ball of radius τ have second moment diag(λ_i h_i). Exact for λ = c·1 (χ² closed
    form); the anisotropic remainder by Monte Carlo with the isotropic term as control
    variate (its error scales with the anisotropy)."""
    d = lam.size
    c = float(np.mean(lam))
    if not c > 0:
        return np.ones(d)
    t2 = tau * tau
    exact = clip_second_moment(d, tau / math.sqrt(c))
    G2 = _clip_draws(d)
    w = np.minimum(1.0, t2 / np.maximum(G2 @ lam, 1e-300))
    w0 = np.minimum(1.0, (t2 / c) / G2.sum(axis=1))
    return np.maximum(exact + (G2 * (w - w0)[:, None]).mean(axis=0), 1e-12)


def undo_cov_clip(Z: np.ndarray, tau: float, iters: int = 50) -> np.ndarray:
    """Invert M ↦ E[clip_τ(x) clip_τ(x)ᵀ], x ~ N(0, M), at a released PSD second moment
    ``Z`` (post-processing of a DP output). The map is rotation-equivariant, so the solution
    shares Z's eigenvectors; its eigenvalues solve z_i = λ_i h_i(λ) (fixed point)."""
    z, V = np.linalg.eigh((Z + Z.T) / 2.0)
    z = np.maximum(z, 0.0)
    lam = z.copy()
    for _ in range(iters):
        new = z / _clip_factors(lam, tau)
        if np.allclose(new, lam, rtol=1e-10, atol=0.0):
            lam = new
            break
        lam = new
    return (V * lam) @ V.T
