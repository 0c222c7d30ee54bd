"""Cover the rows of a direction the CoinPress chain shrinks, before its last covariance step.

Biswas, Dong, Kamath and Ullman, *CoinPress* (NeurIPS 2020), Alg. 2, clips whitened rows at a
radius τ planned for Gaussian rows (≈ 4.8 at d = 10). A direction whose variance is carried by
a few far rows — a 0/1 column with a fraction p of ones has them ~1/√p standard deviations out —
keeps only about p·τ² of its variance at each step when p·τ² < 1, so each whitening magnifies
it further and the chain shrinks it step after step, down to the prior's lower bound (issue 26:
randhie's 1.5 % flag came back with 0.06× its standard deviation inside a valid prior). Our
design, for the practical chain inside a user's prior and the bound-free route's refinement
(:func:`~.steps.run_cov`, ``cover``):

1. **Check** (post-processing): the release before the last step, in the frame it was made in,
   should be ≥ about the plan's modelled λ_min ℓ of that frame in every direction, less its
   noise, and above a constant column's 0 (:func:`shrunk`), has spread rows beyond the
   radius. Searched too (step 2 tells them from a column with nothing far): inside the
   user's prior, directions released at or below a constant column's 0 ± σ that lie along a
   column (:func:`near_zero_directions`; the mean-first route's re-centring can put a shrunk
   flag there); and columns the caller names (``Cover.columns``, a DP output: the bound-free
   route's axes whose spread its octave release read — a rare flag the chain can shrink to a
   fixed point with no gap for the check, p·τ² ≈ 1). At most :data:`MAX_DIRECTIONS` in all,
   the flagged ones first (DP outputs and public constants).
2. **Radius along the direction** (ρ-zCDP): in the last step's frame A, the rows' coordinate
   f_i = ĥᵀA(y_i − shift) along the flagged direction ĥ — the image A·e_j of a column when ĥ
   is within :data:`SNAP_COS` of it (:func:`snap_to_column`: a rare flag's far rows lie along
   it); a binary search (:func:`~.radius_search.search_radius`) over a public geometric grid
   r₀·√2^j (31 radii, 5 noisy counts of rows with |f_i| beyond a radius, sensitivity 1 each
   under replace-one neighbours) finds the smallest radius t beyond which at most ``allowed``
   rows lie — the Gaussian tail expected beyond r₀ (≥ 4) plus three standard deviations of a
   count's noise. The counts' budget, :data:`COVER_SHARE` of the last step's ρ split evenly
   over the flagged directions, is taken from that step only when a direction is flagged (the
   group's total and, on data without such directions, its ledger are as planned).
3. **Compress** (post-processing), when t > r₀: A ← (I − (1 − g)ĥĥᵀ)A with g = r/t, so the far
   rows lie at about r along ĥ, with r² + (the 0.9 quantile of χ²_{d−1}) = τ²: inside the
   ball with the rest of their coordinates; g is at least √(σ/:data:`NOISE_ROOM`), σ the last
   step's noise, which the map back multiplies by 1/g² along ĥ. The last step then reads
   that direction's moment, far rows included (a 1.5 % flag at 0.1 of a unit variance in the
   frame, with the step's noise), and the estimate A⁻¹ZA⁻ᵀ maps it back. On a Gaussian
   direction (a false flag) t = r₀ and nothing changes but the last step's noise (its ρ less
   the counts').

Privacy: the direction, grid, threshold and frame are functions of DP releases and public
quantities; each count is charged before its noise; the last step's statistic keeps its
sensitivity √2·τ²/n in any frame.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numpy as np
from scipy import stats

from ...backends import reduce_rows
from ...clipped_stats import Rows, mapped_inputs
from ...linalg import project_psd
from ...mechanisms import Release
from .cov_plan import sigma_cov
from .radius_search import RadiusSearch, search_radius

__all__ = ["COVER_SHARE", "MAX_DIRECTIONS", "Cover", "cover_directions", "flagged_directions",
           "near_zero_directions", "shrunk"]

#: share of the last covariance step's ρ spent on the counts of each searched direction ...
COVER_SHARE = 0.2
#: ... and on all of them together (several: vietnam_health inside a 10×-100× prior searches
#: its 1 % flag and a count with 0.7 % non-zero values; splitting one share between them
#: raised each count's noise √2× and left the count at 0.01× its sd, 0.03× with one search)
MAX_COVER_SHARE = 0.4
#: most directions covered in one fit (the lowest flagged eigenvalues)
MAX_DIRECTIONS = 3
_QUERIES = 5  # noisy counts per direction: a grid of 2^5 − 1 radii
_GRID_RATIO = math.sqrt(2.0)
_COUNT_Z = 3.0  # standard deviations of a count's noise in the threshold
_REST_QUANTILE = 0.9  # of χ²_{d−1}: the far rows' other coordinates, kept inside the ball
#: the search's first radius (at least): 6e-5 of a unit Gaussian lies beyond it, so at d = 5
#: the threshold is not the 280 rows (n = 20,000) a first radius at the target 2.7 allows —
#: above a 1 % flag's 200 ones
_FIRST_RADIUS = 4.0
#: noise stds above 0 a flagged eigenvalue must lie (a constant column's release is 0 ± σ;
#: the mean-first route's re-centring adds its own error there: a constant column came out at
#: -0.06 to 0.024 with σ = 0.045, randhie's shrunk flag at 0.10 with σ = 0.027)
LOWER_SIGMAS = 2.0
#: a flagged direction this close in angle to a column's image is taken as that column's: the
#: eigenvector of a noisy release can be far off (cosine 0.74 to randhie's flag rows at
#: seed 1 inside a 10× prior, where the flag column's image had 0.996); on a direction the
#: rows do not leave, snapping changes nothing (the search keeps its first radius)
SNAP_COS = 0.5
#: the compression's least g: the last release's noise σ comes back 1/g² larger along the
#: covered direction, so g² ≥ σ / NOISE_ROOM keeps it within NOISE_ROOM × the frame's unit
#: variance. A search that read rows 1,000 units out compressed by 1/372 and returned a
#: zero-inflated column 47× too wide (1.3× with the cap; generated tables at ε = 1); at 1
#: the cap left a 1 % flag inside a 100× prior 0.21 of its variance (tests/test_rare_flag_prior);
#: the cap vanishes with the noise
NOISE_ROOM = 4.0


@dataclass(frozen=True)
class Cover:
    """The public setting of a chain's cover check: ``lower`` is the plan's modelled λ_min of
    the frame the checked release was made in (used when that release comes from an earlier
    call, as in the mean-first route; within one call the step's own plan gives it)."""

    lower: float
    #: the user's columns to search whatever the check says (a DP output: the bound-free
    #: route's tied axes whose spread came from rare values, :mod:`..histogram_ties`)
    columns: tuple[int, ...] = ()
    #: inside the user's prior (its lower bound floors every frame, so a constant column's
    #: release is 0 ± σ in each): directions released at or below a constant column's band
    #: that lie along a column are searched too (:func:`near_zero_directions`)
    zeros: bool = False


@dataclass(frozen=True)
class Covered:
    """What :func:`cover_directions` did: the last step's frame, its ρ and whether a direction
    was compressed (then ``undo`` maps a release in the new frame back to the old one)."""

    A: np.ndarray
    rho: float
    compressed: bool
    undo: np.ndarray


def shrunk(z: float, sigma: float, lower: float, d: int) -> bool:
    """Whether an eigenvalue ``z`` of a release (noise std σ per diagonal entry, made in a frame
    whose modelled λ_min is ℓ = ``lower``) says its direction is shrunk by clipping: above a
    constant column's 0 ± σ (:data:`LOWER_SIGMAS`·σ) and below ℓ − √(2d)·σ, the smallest
    eigenvalue a frame of true λ_min ≥ ℓ shows under the release's noise (the spectral edge
    of a symmetric noise matrix with σ²/2 off the diagonal). Measured on Gaussian rows at
    ε = 1, d = 10 (n = 3,000-20,000, priors 10× and 100× outside the spectrum, 20 fits each):
    the release before the last step lay 2.0-2.6σ above that bound at worst, 3.6-4.9σ in the
    median; randhie's 1.5 % flag 0.7-2.9σ below it. A release at or below a constant
    column's band is not judged here (:func:`near_zero_directions`)."""
    return LOWER_SIGMAS * sigma < z < lower - math.sqrt(2.0 * d) * sigma


def flagged_directions(Z: np.ndarray, sigma: float, lower: float) -> np.ndarray:
    """The unit eigenvectors (rows) of the release ``Z`` (PSD-repaired) whose eigenvalues are
    :func:`shrunk`, lowest first, at most :data:`MAX_DIRECTIONS`. Post-processing of a release
    and public numbers."""
    w, V = np.linalg.eigh(project_psd(np.asarray(Z, dtype=np.float64)))
    keep = [j for j in range(w.size) if shrunk(float(w[j]), sigma, lower, w.size)]
    return V[:, keep[:MAX_DIRECTIONS]].T


def near_zero_directions(Z: np.ndarray, sigma: float) -> np.ndarray:
    """The unit eigenvectors (rows) of the release ``Z`` whose eigenvalues are at most
    :data:`LOWER_SIGMAS`·σ — where a constant column's release lies, and, in the mean-first
    route, a shrunk flag's re-centred one (randhie inside a 10× prior, seeds 2 and 4: −0.003
    and 0.009 with σ = 0.03, its flag 0.30× its sd) — lowest first, at most
    :data:`MAX_DIRECTIONS`. The release cannot tell them apart; a count of rows far along
    the column can (:func:`cover_directions`): a constant column has none, and its search
    stays at its first radius (no change to the frame). Post-processing."""
    w, V = np.linalg.eigh(project_psd(np.asarray(Z, dtype=np.float64)))
    keep = [j for j in range(w.size) if float(w[j]) <= LOWER_SIGMAS * sigma]
    return V[:, keep[:MAX_DIRECTIONS]].T


def target_radius(tau: float, d: int) -> float:
    """r: the coordinate along a covered direction at which a row whose other d − 1 coordinates
    are whitened Gaussian lies inside the ball of radius τ with probability about 0.9."""
    rest = float(stats.chi2.ppf(_REST_QUANTILE, d - 1)) if d > 1 else 0.0
    return math.sqrt(max(tau * tau - rest, 0.25 * tau * tau))


def snap_to_column(A: np.ndarray, h: np.ndarray, used: set[int] | None = None
                   ) -> tuple[np.ndarray, int | None]:
    """(the image A·e_j/‖A·e_j‖ of the user's column j closest in angle to the unit direction
    ``h`` of the frame A, j) when their cosine is at least :data:`SNAP_COS` and j is not in
    ``used`` (columns an earlier flagged direction took: two shrunk columns give two
    eigenvectors that both mix them — vietnam_health inside a 100× prior: cosines 0.85 and
    0.53 to its 1 % flag and its 0.7 %-nonzero count); else (``h``, None).
    A rare flag or sparse count is a column: its far rows lie along A·e_j (t·A·e_j/‖A·e_j‖,
    t their distance in the frame), while ``h`` — an eigenvector of a noisy release — is
    tilted from it by about σ over the eigenvalue gap (0.1 rad on randhie inside a 100×
    prior), which leaves the far rows t·sin θ ≈ 8.5 off the compressed axis at t = 85: still
    beyond the ball (measured: cosine 0.92-1.0 to the far rows' offset for the eigenvector,
    0.98-1.0 for the column's image, over priors 2× to 100×). Post-processing of DP outputs and
    public column axes."""
    cols = A / np.linalg.norm(A, axis=0)
    cos = np.abs(cols.T @ h)
    if used:
        cos[sorted(used)] = -1.0
    j = int(np.argmax(cos))
    return (cols[:, j], j) if cos[j] >= SNAP_COS else (h, None)


def _line_kernel(B: np.ndarray, *, P: np.ndarray | None, p0: np.ndarray | None, a: np.ndarray,
                 s: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray]:
    """(number of rows with |aᵀ(y_i − s)| > grid_j, for each j,) for a block (module level:
    picklable). A row that overflows counts as beyond every radius."""
    Y = mapped_inputs(B, P, p0)
    with np.errstate(over="ignore", invalid="ignore"):
        f = np.abs((Y - s) @ a)
    f = np.where(np.isfinite(f), f, np.inf)
    hist = np.bincount(np.searchsorted(grid, f, side="left"), minlength=grid.size + 1)
    return (np.cumsum(hist[::-1])[::-1][1:].astype(np.float64),)


def _line_counts(rows: Rows, a: np.ndarray, shift: np.ndarray, grid: tuple[float, ...]
                 ) -> np.ndarray:
    """Exact numbers of rows beyond each radius of ``grid`` along the functional ``a`` (nothing
    is released here)."""
    kernel = partial(_line_kernel, P=rows.P, p0=rows.p0, a=np.asarray(a, dtype=np.float64),
                     s=np.asarray(shift, dtype=np.float64),
                     grid=np.asarray(grid, dtype=np.float64))
    return np.rint(reduce_rows(rows.X, kernel)[0]).astype(np.int64)


def line_search(n: int, d: int, tau: float, rho: float) -> RadiusSearch:
    """The public search along one direction: ρ over :data:`_QUERIES` counts, the grid from
    the larger of :func:`target_radius` and :data:`_FIRST_RADIUS` up by √2 per radius, the
    threshold 2·n·q + 4√(n·q) + 3σ_c (q the two-sided Gaussian tail beyond the first radius,
    σ_c a count's noise std): on a direction of variance ≤ 1 the search stays at its first
    radius, and any radius past it means rows beyond the Gaussian reach."""
    r = max(target_radius(tau, d), _FIRST_RADIUS)
    grid = tuple(r * _GRID_RATIO**j for j in range(2**_QUERIES - 1))
    q = 2.0 * float(stats.norm.sf(r))
    sc = math.sqrt(_QUERIES / (2.0 * rho))
    return RadiusSearch(rho, grid, 2.0 * n * q + 4.0 * math.sqrt(n * q) + _COUNT_Z * sc)


def cover_directions(rows: Rows, A: np.ndarray, shift: np.ndarray, checked: tuple[np.ndarray,
                     np.ndarray, float], lower: float, tau: float, rho: float,
                     release: Release, columns: tuple[int, ...] = (), zeros: bool = False
                     ) -> Covered:
    """Steps 1–3 of the module docstring for the last covariance step (frame ``A``, rows
    y − ``shift``, radius τ, budget ρ): ``checked`` is the earlier release (its frame, Z and
    noise std σ) and ``lower`` its frame's modelled λ_min. Charges the counts to ``release``
    (named "<step> cover k radius j/m") only when a direction is flagged. ``columns``
    (public or DP outputs): the user's columns whose images are searched too, after the
    flagged directions (at most :data:`MAX_DIRECTIONS` in all): a rare flag the chain shrank
    to a fixed point where the clipped ones still fill the frame's unit variance (p·τ² ≈ 1,
    no gap for the check to see: a 2 % flag at d = 10, ε = 1, 0.12× its sd at 1 seed in 12).
    ``zeros``: the :func:`near_zero_directions` that lie along a column (:func:`snap_to_column`)
    are searched too, after the flagged ones."""
    A_prev, Z_prev, sigma_prev = checked
    d = A.shape[0]
    U = flagged_directions(Z_prev, sigma_prev, lower)
    forced = [int(j) for j in columns if 0 <= int(j) < d]
    zero_cols: list[int] = []
    if zeros:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            for u in near_zero_directions(Z_prev, sigma_prev):
                h = np.linalg.solve(A.T, A_prev.T @ u)
                norm = float(np.linalg.norm(h))
                if math.isfinite(norm) and norm > 0:
                    _, j = snap_to_column(A, h / norm, set(zero_cols))
                    if j is not None:
                        zero_cols.append(j)
    forced = zero_cols + [j for j in forced if j not in zero_cols]
    if U.shape[0] + len(forced) == 0 or not (math.isfinite(rho) and rho > 0):
        return Covered(A, rho, False, np.eye(d))
    A0 = A
    # each direction in the last step's frame before any compression (a compression along one
    # inflates it in every direction mapped through the compressed frame), snapped to a column
    # no earlier direction took
    targets: list[tuple[np.ndarray, int | None]] = []
    used: set[int] = set()
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for u in U:
            h = np.linalg.solve(A0.T, A_prev.T @ u)
            norm = float(np.linalg.norm(h))
            if math.isfinite(norm) and norm > 0:
                h, j = snap_to_column(A0, h / norm, used)
                if j is not None:
                    used.add(j)
                targets.append((h, j))
        for j in forced:
            if j not in used and len(targets) < MAX_DIRECTIONS:
                used.add(j)
                targets.append((A0[:, j] / np.linalg.norm(A0[:, j]), j))
        spend = rho * min(COVER_SHARE * max(len(targets), 1), MAX_COVER_SHARE)
        search = line_search(rows.n, d, tau, spend / max(len(targets), 1))
        r = target_radius(tau, d)
        g_min = math.sqrt(sigma_cov(tau, rows.n, rho - spend) / NOISE_ROOM)
        for k, (h0, j) in enumerate(targets):
            # the same direction in the current frame: the column's image, or h0 mapped
            v = A[:, j] if j is not None else A @ np.linalg.solve(A0, h0)
            h = v / np.linalg.norm(v)
            a = A.T @ h  # f_i = hᵀA(y_i − shift)
            counts = _line_counts(rows, a, shift, search.grid)
            t, found = search_radius(rows, None, None, np.zeros(1), search,
                                     release=release.sub(f"cover {k + 1}"), counts=counts)
            g = min(1.0, max(r / t, g_min))
            # (the first radius: no rows beyond the Gaussian reach; beyond the cap: too many
            # rows out to be a few far ones)
            if found and t > search.grid[0] and g < 1.0:
                A = A - (1.0 - g) * np.outer(h, a)
    compressed = A is not A0
    undo = A0 @ np.linalg.inv(A) if compressed else np.eye(d)
    return Covered(A, rho - spend, compressed, undo)
