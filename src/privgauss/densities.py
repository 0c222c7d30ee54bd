"""Gaussian log densities, and the heavy-tailed *background* of a fitted Gaussian, factored
once for many evaluations.

* :func:`gaussian_logpdf` and :func:`background_logpdf` — scale free (rows standardised, the
  correlation matrix factored), so columns in very different units cost nothing to round-off;
* :func:`gaussian_factor`, :func:`background_factor` and :func:`factored_logpdf` — the same
  values with the matrix factored once (:class:`DensityFactor`), as the estimators' scoring
  and sampling use them.

Exact functions of their arguments, not differentially private: at private rows their values
are not private (score private held-out rows with :class:`~privgauss.DPScorer`). Re-exported
by :mod:`privgauss.metrics`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .linalg import scaled_cholesky, whitened_sq_norms

__all__ = [
    "BACKGROUND_FLOOR",
    "DensityFactor",
    "background_factor",
    "background_logpdf",
    "background_matrix",
    "background_scale",
    "factored_logpdf",
    "gaussian_factor",
    "gaussian_logpdf",
]

_LOG_2PI = math.log(2.0 * math.pi)


def as_mean(mean: Any, name: str = "mean") -> np.ndarray:
    """``mean`` as a finite float vector (ValueError otherwise)."""
    m = np.atleast_1d(np.asarray(mean, dtype=np.float64))
    if m.ndim != 1:
        raise ValueError(f"{name} must be a vector, got shape {m.shape}")
    if not np.isfinite(m).all():
        raise ValueError(f"{name} contains NaN or infinite values")
    return m


def as_cov(cov: Any, d: int, name: str = "cov") -> np.ndarray:
    """A scalar means ``cov * I``, a vector a diagonal matrix, a matrix itself."""
    c = np.asarray(cov, dtype=np.float64)
    if c.ndim == 0:
        c = c * np.eye(d)
    elif c.ndim == 1:
        c = np.diag(c)
    if c.shape != (d, d):
        raise ValueError(f"{name} must have shape ({d}, {d}), got {c.shape}")
    return c


def as_gaussian(mean: Any, cov: Any, tag: str = "") -> tuple[np.ndarray, np.ndarray]:
    """(mean, cov) checked by :func:`as_mean` and :func:`as_cov`."""
    m = as_mean(mean, f"mean{tag}")
    return m, as_cov(cov, m.shape[0], f"cov{tag}")


def chol_logdet(L: np.ndarray) -> float:
    """log det(LLᵀ) of a Cholesky factor ``L``."""
    return 2.0 * float(np.sum(np.log(np.diag(L))))


@dataclass(frozen=True)
class DensityFactor:
    """A Gaussian's or its background's density, factored once for many evaluations
    (:func:`gaussian_factor`, :func:`background_factor`; evaluated by :func:`factored_logpdf`):
    the centre ``mean``, the column ``scale`` the rows are divided by, the Cholesky factor
    ``chol`` of the scaled matrix, and ``const`` (the Gaussian's log-determinant, or the
    background's log normalising constant)."""

    kind: Literal["gaussian", "background"]
    mean: np.ndarray
    scale: np.ndarray
    chol: np.ndarray
    const: float


def gaussian_factor(mean: Any, cov: Any, *, ridge: float = 0.0) -> DensityFactor:
    """The factorisation of ``N(mean, cov)`` that :func:`gaussian_logpdf` computes on each call:
    the standard deviations and the Cholesky factor of the correlation matrix
    (:func:`~privgauss.linalg.scaled_cholesky`; ``ridge`` a fraction of each variance)."""
    m, C = as_gaussian(mean, cov)
    s, L = scaled_cholesky(C, ridge=ridge)
    return DensityFactor("gaussian", m, s, L, chol_logdet(L) + 2.0 * float(np.sum(np.log(s))))


def factored_logpdf(X: Any, factor: DensityFactor) -> np.ndarray:
    """Log density at each row of ``X`` of a factored Gaussian (:func:`gaussian_factor`) or
    background (:func:`background_factor`): the values :func:`gaussian_logpdf` and
    :func:`background_logpdf` give, without refactoring the matrix."""
    m = factor.mean
    Z = (np.asarray(X, dtype=np.float64) - m) / factor.scale
    if factor.kind == "gaussian":
        return chol_logpdf(Z, np.zeros_like(m), factor.chol, factor.const)
    q = whitened_sq_norms(Z, np.zeros_like(m), factor.chol)
    return factor.const - 0.5 * (m.shape[0] + 1) * np.log1p(q)


def gaussian_logpdf(X: Any, mean: Any, cov: Any, *, ridge: float = 0.0) -> np.ndarray:
    """Log density of ``N(mean, cov)`` at each row of ``X`` (shape ``(n, d)``), computed scale
    free: rows standardised by the standard deviations, the correlation matrix factored
    (:func:`~privgauss.linalg.scaled_cholesky`; ``ridge`` a fraction of each variance), so
    columns whose units differ by many orders of magnitude cost nothing to round-off. To
    evaluate one Gaussian many times, factor it once (:func:`gaussian_factor`,
    :func:`factored_logpdf`)."""
    return factored_logpdf(X, gaussian_factor(mean, cov, ridge=ridge))


def background_scale(d: int) -> float:
    """K_d ≥ 1, the smallest factor for which the multivariate Cauchy of scale K_d²·Σ peaks no
    higher than N(μ, Σ): Γ((d+1)/2)·2^(d/2) / (√π·K^d) ≤ 1."""
    log_ratio = math.lgamma((d + 1) / 2.0) + 0.5 * d * math.log(2.0) - 0.5 * math.log(math.pi)
    return max(1.0, math.exp(log_ratio / d))


#: the background's correlation floor: its scale matrix is K_d²·D·(R + c·I)·D/(1 + c) for a
#: fitted covariance D·R·D, so no direction of it is narrower than c/(1 + c) of the columns'
#: scale. A clipped fit can release a direction far narrower than the rows that fall outside
#: its ball (the core of collinear count columns, ~1 % of np.cov's variance on the corpus's
#: baseball table), and a background as narrow as the fit there scored those rows at −50
#: nats each. Chosen on the corpus's tuning tables (3 % against 10-30 %: best on baseball
#: and the pixels, ≤ 0.07 nat/row dearer on diamonds); its weight vanishes with the noise.
BACKGROUND_FLOOR = 0.03


def background_matrix(cov: Any) -> np.ndarray:
    """The background's scale matrix before the factor K_d²: D·(R + c·I)·D/(1 + c) for
    ``cov`` = D·R·D, c = :data:`BACKGROUND_FLOOR` (the same variances, every direction at least
    c/(1 + c) of the scale of the columns). Its determinant is at least ``cov``'s (R has trace
    d and log((λ + c)/((1 + c)λ)) is convex, zero at λ = 1), so the background still never
    peaks above the Gaussian."""
    C = np.asarray(cov, dtype=np.float64)
    v = np.diag(C)
    s = np.where(v > 0, np.sqrt(np.where(v > 0, v, 1.0)), 1.0)
    R = C / np.outer(s, s)
    R = (R + BACKGROUND_FLOOR * np.eye(C.shape[0])) / (1.0 + BACKGROUND_FLOOR)
    return np.asarray(R * np.outer(s, s))


def background_logpdf(X: Any, mean: Any, cov: Any, *, ridge: float = 0.0) -> np.ndarray:
    """Log density of the *background* of a fitted Gaussian N(mean, cov) at each row of ``X``:
    the multivariate Cauchy (Student t, one degree of freedom) centred at ``mean`` with scale
    matrix K_d²·B, B = :func:`background_matrix` (``cov``'s variances, its correlations
    shrunk by 3 % towards none: no direction narrower than 3 % of the columns' scale) and K_d
    = :func:`background_scale` (it never peaks above the Gaussian). Its tails are polynomial,
    so a row a million standard deviations out costs about (d + 1)·ln 10⁶ nats, not 10¹²/2 —
    the model of the gross errors a clipped fit leaves out (the noise component of
    model-based clustering). Scale free, like :func:`gaussian_logpdf`; factored once by
    :func:`background_factor`."""
    return factored_logpdf(X, background_factor(mean, cov, ridge=ridge))


def background_factor(mean: Any, cov: Any, *, ridge: float = 0.0) -> DensityFactor:
    """The factorisation of the background of N(``mean``, ``cov``) (see
    :func:`background_logpdf`): the scale K_d·s, the Cholesky factor of the floored
    correlation matrix and the log normalising constant."""
    m, C = as_gaussian(mean, cov)
    d = m.shape[0]
    s, L = scaled_cholesky(background_matrix(C), ridge=ridge)
    k = background_scale(d)
    logdet = chol_logdet(L) + 2.0 * float(np.sum(np.log(s * k)))
    norm = (math.lgamma((d + 1) / 2.0) - 0.5 * math.log(math.pi)
            - 0.5 * d * math.log(math.pi) - 0.5 * logdet)
    return DensityFactor("background", m, s * k, L, norm)


def chol_logpdf(X: np.ndarray, mean: np.ndarray, L: np.ndarray, logdet: float) -> np.ndarray:
    """Log density of N(``mean``, LLᵀ) at the rows of ``X`` (``logdet`` = log det(LLᵀ))."""
    d = mean.shape[0]
    return -0.5 * (d * _LOG_2PI + logdet + whitened_sq_norms(X, mean, L))
