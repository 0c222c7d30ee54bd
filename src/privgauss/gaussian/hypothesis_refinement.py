"""The practical second stage of private hypothesis selection: clipped moments around the pick.

A finite cover has a resolution α (TV); the exponential mechanism over it returns a candidate
within O(α) of the data however large ε is, so the selection alone never converges to the
rows' np.mean / np.cov (DESIGN.md rule 15: its variance stayed 15 % off at ε = 1e4, 1e8 and
1e12 alike, ``benchmarks/results/edge_sweep.md`` R4). The practical default therefore spends
a public share of ε on the selection (the paper's algorithm, at the paper's α: a coarse,
robust localisation) and the rest on one pure-DP refinement in the frame of the pick
(μ₀, Σ₀), a DP output:

* z = clip_r(Σ₀^{-1/2}(x − μ₀)) for every row (L2 ball of radius r);
* the mean: Σ z plus Laplace noise, L1 sensitivity 2r√d
  (:func:`~privgauss.sensitivity.clipped_mean_l1`);
* the covariance (unless it is known): the upper triangle of Σ zzᵀ plus Laplace noise, L1
  sensitivity (d + 1)r² (:func:`~privgauss.sensitivity.clipped_second_moment_upper_l1`);
* (μ̂, Σ̂) = (μ₀ + Σ₀^{1/2} m, Σ₀^{1/2}(S − m mᵀ)Σ₀^{1/2}) with m, S the noisy means of z and zzᵀ,
  the eigenvalues of S − m mᵀ floored at the second moment's Laplace scale (which → 0).

**Neighbours:** replace one row; n is public. **Guarantee:** ε_mean + ε_cov pure DP (two
Laplace releases, each charged to the accountant before its noise is drawn); the frame, r and
the split are functions of the pick (a DP output) and of public (n, d, ε, β) only.

The radius r starts at the (1 − β/n) quantile of ‖N(0, I_d)‖ times :data:`RADIUS_MARGIN`
(the pick is within α of the data: its σ may be ~15 % off) and grows with ε as CoinPress's
steps grow theirs (:func:`~privgauss.gaussian.coinpress.schedule.noise_matched_radius`), so
as ε → ∞ no row is clipped, the noise and the floor vanish, and (μ̂, Σ̂) → the rows' np.mean
and np.cov(bias=True) on any data (heavy tails and gross errors included).
"""

from __future__ import annotations

import math

import numpy as np

from ..linalg import cholesky_pd, clip_images, project_psd, sym
from ..mechanisms import Release, laplace_mechanism
from ..privacy import PureDP
from ..sensitivity import clipped_mean_l1, clipped_second_moment_upper_l1
from .coinpress.schedule import noise_matched_radius
from .coinpress.tails import chi_tail_radius

__all__ = [
    "RADIUS_MARGIN",
    "REFINE_SHARES",
    "clipped_frame_rows",
    "refine_pick",
    "refine_radius",
    "shares",
]

#: Shares of ε of the practical default: (selection, mean, covariance); with a known
#: covariance the covariance share goes to the mean. The selection keeps half: it must still
#: localise (BKSW's n grows like 1/(αε)); the covariance's Laplace noise ((d+1)r² per row)
#: dominates the mean's (2r√d), so it gets twice the mean's share.
REFINE_SHARES = (0.5, 1.0 / 6.0, 1.0 / 3.0)
#: r₀ = RADIUS_MARGIN × the (1 − β/n) quantile of ‖N(0, I_d)‖: the pick's σ is within its
#: cover's resolution of the data's, so its frame may under-state the spread by ~15 %.
RADIUS_MARGIN = 1.25


def shares(known_cov: bool) -> tuple[float, float, float]:
    """(selection, mean, covariance) shares of ε (public)."""
    sel, mean, cov = REFINE_SHARES
    return (sel, mean + cov, 0.0) if known_cov else (sel, mean, cov)


def refine_radius(n: int, d: int, eps_mean: float, eps_cov: float, beta: float) -> float:
    """The clip radius (public): r₀ (module docstring), grown with the budget until the
    Laplace noise of the clipped mean / second moment is the share of the sampling error
    :func:`noise_matched_radius` allows (the smaller growth of the two releases made)."""
    r0 = RADIUS_MARGIN * chi_tail_radius(d, beta / n)
    # Laplace with scale b has std √2·b; per coordinate, as noise_matched_radius compares
    sd_mean = math.sqrt(2.0) * clipped_mean_l1(r0, n, d) / eps_mean
    grown = noise_matched_radius(r0, sd_mean, n, 1)
    if eps_cov > 0:
        sd_cov = math.sqrt(2.0) * clipped_second_moment_upper_l1(r0, n, d) / eps_cov
        grown = min(grown, noise_matched_radius(r0, sd_cov, n, 2))
    return max(r0, grown)


def clipped_frame_rows(X: np.ndarray, mean0: np.ndarray, L: np.ndarray, r: float
                       ) -> np.ndarray:
    """z = clip_r(L⁻¹(x − μ₀)) for each row (L the Cholesky factor of the pick's covariance):
    a per-row map; a non-finite image (overflow) maps to 0, norms re-checked after
    rescaling, so every ‖z‖ ≤ r."""
    with np.errstate(over="ignore", invalid="ignore"):  # per row, data-independently
        Z = np.linalg.solve(L, (np.asarray(X, dtype=np.float64) - mean0).T).T
    return clip_images(Z, r)


def refine_pick(X: np.ndarray, mean0: np.ndarray, cov0: np.ndarray, eps_mean: float,
                eps_cov: float, *, beta: float, release: Release, step: str,
                known_cov: bool) -> tuple[np.ndarray, np.ndarray]:
    """(μ̂, Σ̂) from the clipped moments of ``X`` in the frame of the pick (``mean0``,
    ``cov0``: a DP output); ε_mean + ε_cov pure DP under replace-one, charged to ``release``
    as "<step>-refine-mean" and "<step>-refine-cov" (the latter only without ``known_cov``,
    when Σ̂ = ``cov0``). Module docstring."""
    n, d = X.shape
    r = refine_radius(n, d, eps_mean, eps_cov if not known_cov else 0.0, beta)
    L = cholesky_pd(sym(cov0))
    Z = clipped_frame_rows(X, mean0, L, r)
    acct, noise = release.accountant, release.noise
    m = laplace_mechanism(Z.sum(axis=0) / n, clipped_mean_l1(r, n, d), PureDP(eps_mean),
                          accountant=acct, noise=noise, step=f"{step}-refine-mean").reshape(d)
    mean = mean0 + L @ m
    if known_cov:
        return mean, sym(cov0)
    iu = np.triu_indices(d)
    s_sens = clipped_second_moment_upper_l1(r, n, d)
    upper = laplace_mechanism((Z.T @ Z / n)[iu], s_sens, PureDP(eps_cov), accountant=acct,
                              noise=noise, step=f"{step}-refine-cov").reshape(-1)
    S = np.zeros((d, d))
    S[iu] = upper
    S = S + np.triu(S, 1).T
    floor = s_sens / eps_cov  # the Laplace scale: → 0 with the noise
    C = project_psd(sym(S - np.outer(m, m)), min_eig=floor)
    return mean, sym(L @ C @ L.T)
