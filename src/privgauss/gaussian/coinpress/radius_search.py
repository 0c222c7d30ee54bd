"""Clip radii read off the data by DP: a noisy-count search over a public grid of radii.

The practical CoinPress steps (:mod:`.plan`, Biswas–Dong–Kamath–Ullman 2020, Alg.
1–2, with our planner) clip at radii planned for Gaussian rows. On real tables — a few gross
recording errors, collinear columns whose error rows leave the plane, heavy tails — rows lie
far outside those radii at every budget, and the fit converges to the moment of the central
rows instead of np.mean/np.cov's (DESIGN.md rule 15). A *radius search* lets the data move a
step's radius up, by DP:

* a public geometric grid τ_0 = τ_plan < τ_1 < … < τ_J = τ_cap (ratio ≤ :data:`_GRID_RATIO`),
  τ_cap the radius at which the step's noise std reaches max(σ_plan, :data:`_COV_NOISE_CAP`/d)
  for a second moment, max(σ_plan, :data:`_MEAN_NOISE_CAP`/√d) for a mean — a noise level
  whose cost in held-out log-likelihood is below about 0.005 nat/row, and which leaves room
  (τ_cap ≥ :data:`_MIN_ROOM`·τ_plan) only when the budget is large: at small n·ρ there is no
  search, no cost, the step as planned;
* a binary search for the smallest τ_j whose number of rows outside the step's ball is at
  most ``allowed`` = 2·n·p + 4√(n·p) + 3σ_c: p the fraction of Gaussian rows the plan expects
  outside τ_plan, σ_c the noise std of one count — so on Gaussian data the search keeps the
  planned radius (with probability about 1 − 10⁻³ per query), and as the budget grows
  (p → 0 with the planned radius, σ_c → 0) it covers every row up to τ_cap;
* each query is a count with sensitivity 1 under replace-one neighbours
  (:func:`privgauss.sensitivity.count`), released by :func:`privgauss.mechanisms.private_count`
  (discrete Gaussian, charged before its noise). The grid has 2^m − 1 radii plus "beyond the
  cap", so the search makes exactly m queries whatever the data (the ledger's length is
  public), each at ρ_s/m: the search is ρ_s-zCDP, ρ_s = :data:`SEARCH_SHARE` of the step's
  ρ, planned with the step (:class:`RadiusSearch`), and the step's statistic is then released
  with the rest at the radius found — a DP output, so its sensitivity is public.

"Beyond the cap" (more rows outside τ_cap than allowed) returns τ_cap and ``covered=False``:
the step is biased by the rows it cuts, and the pooling of releases leaves it out.

A *frame* search (``frame=True``: a cover step of :func:`~.cov_plan.with_cover_steps`, whose
release only sets the next step's frame) may raise its noise std to
:data:`_FRAME_NOISE_CAP`/√(2d) per entry — a noise matrix of spectral norm about
:data:`_FRAME_NOISE_CAP`, which leaves the next frame within a factor of about 2 of the truth
(the planner's model ℓ/(ℓ + η + √d σ)) — and spends :data:`_FRAME_SEARCH_SHARE` of its ρ on
the counts, so that its threshold is below one row: it covers single gross rows, which the
final step can then cover in the frame the cover step released.

A search may also start *below* the planned radius (``start``: the last covariance step at
large budgets, :func:`~.cov_plan._cov_step`): the planned radius there is a formula that
grows without bound with n·ρ (:func:`~.schedule.noise_matched_radius`), so on the rows'
data the grid from the Gaussian radius up finds the radius the rows need (its noise std
∝ τ² then smaller by the square of the ratio) — breast_cancer at ε = 1e6: 59 planned against
rows within 17.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ...backends import is_dask, reduce_rows, take_rows
from ...clipped_stats import Rows, affine_rows, mapped_inputs, prepare_moments
from ...mechanisms import Release, private_count
from ...privacy import ZCDP
from ...sensitivity import count as count_sensitivity

__all__ = [
    "RadiusSearch",
    "plan_search",
    "search_cap",
    "search_noise_cap",
    "search_radius",
    "search_share",
]

#: share of a step's ρ spent on its radius search (when the step has room to grow)
SEARCH_SHARE = 0.01
#: largest ratio of consecutive radii of the grid (noise grows as the square for a moment)
_GRID_RATIO = 2.0 ** 0.125
#: noise caps: the search never raises a second moment's noise std above 0.1/d (entries of the
#: whitened moment; held-out cost ≈ d²σ²/8 ≈ 0.001 nat/row) nor a mean's above 0.05/√d
_COV_NOISE_CAP = 0.1
_MEAN_NOISE_CAP = 0.05
#: a frame search's noise cap (spectral norm of the noise matrix, ≈ σ√(2d)), its search share
#: and its count threshold's noise margin: it must see a single row out. At share 0.01 the
#: threshold is ~2 rows, and diamonds' cover steps (ε = 1e4) cut its one row 850 sds out; at
#: 0.1 (count noise std ~0.3) a cover step of a single-row table (n = 20,000, ε = 1e4) read
#: "0 outside" with the row out at one seed in three and re-expanded the frame along it; a
#: false alarm costs less (a cover step's radius grows toward its cap)
_FRAME_NOISE_CAP = 1.0
_FRAME_SEARCH_SHARE = 0.25
_FRAME_MARGIN = 0.5
#: a search runs only when the cap is at least this multiple of the planned radius: below it
#: the radius could barely move, and the search's share of ρ would buy nothing. At 2 the
#: corpus's fair table (d = 9, n = 5,092, ε = 1e4) had no covariance search (room 1.7-2.0:
#: the noise-matched radius already uses most of the cap) and stayed 0.011 nat/row off
#: np.cov at seed 0; at 1.25 CoinPress's ρ = 0.5 protocol (room 1.4-1.5 at n = 6,636-8,000)
#: searched and paid 1 % of its last step for nothing
_MIN_ROOM = 1.6
_MAX_RADIUS = 1e140  # far below the 1e150 the rows are bounded by: radii stay computable
#: standard deviations of a count's noise in the threshold
_COUNT_Z = 3.0


@dataclass(frozen=True)
class RadiusSearch:
    """The public plan of a radius search: its zCDP cost ``rho`` (m equal queries), the grid
    of 2^m − 1 radii (the first is the planned radius, the last the cap) and the threshold
    ``allowed`` on a noisy count of rows outside."""

    rho: float
    grid: tuple[float, ...]
    allowed: float

    @property
    def queries(self) -> int:
        return int(round(math.log2(len(self.grid) + 1)))

    @property
    def count_sigma(self) -> float:
        return math.sqrt(self.queries / (2.0 * self.rho))


def plan_search(tau: float, sigma: float, rho: float, n: int, d: int, power: int,
                model_fraction: float, frame: bool = False, start: float | None = None
                ) -> RadiusSearch | None:
    """The search for a step clipping at ``tau`` with noise std ``sigma`` there (growing as
    τ^``power``: 1 mean, 2 second moment) and budget ``rho``, or None when the noise cap leaves
    no room to grow or the budget is infinite; ``frame``: a cover step's search (second
    moment only: its larger noise cap and search share); ``start``: a radius below ``tau``
    where the grid starts (a search that may also shrink the radius; planned even when the
    cap leaves no room above ``tau``, if ``start`` leaves room below). Public quantities
    only."""
    cap = search_cap(tau, sigma, rho, d, power, frame)
    lo = tau if start is None else min(float(start), tau)
    if lo < tau and _allowed(n, model_fraction, _count_sigma(rho, frame, cap or tau, lo),
                             frame) >= 1.0:
        # its counts too noisy to tell one row out: a search down could cut rows the planned
        # radius keeps (heavy tails at middling budgets), so it only grows the radius
        lo = tau
    if cap is None:
        if lo * _MIN_ROOM > tau or not math.isfinite(rho):
            return None
        cap = tau  # a search down only
    m = _queries(cap, lo)
    grid = tuple(float(x) for x in np.geomspace(lo, cap, 2**m - 1))
    sc = _count_sigma(rho, frame, cap, lo)
    return RadiusSearch(rho * search_share(frame), grid, _allowed(n, model_fraction, sc, frame))


def _queries(cap: float, lo: float) -> int:
    steps = math.ceil(math.log(cap / lo) / math.log(_GRID_RATIO))
    return max(1, math.ceil(math.log2(steps + 2)))


def _count_sigma(rho: float, frame: bool, cap: float, lo: float) -> float:
    """The noise std of each count of a search on the grid lo..cap with budget ρ·share."""
    return math.sqrt(_queries(cap, lo) / (2.0 * rho * search_share(frame)))


def _allowed(n: int, model_fraction: float, sc: float, frame: bool) -> float:
    """The threshold on a noisy count of rows outside (module docstring): a frame search must
    see a single row out (a false alarm only grows a cover step's radius toward its cap), so
    its noise margin stays below one row."""
    p = min(max(float(model_fraction), 0.0), 1.0)
    margin = min(_COUNT_Z * sc, _FRAME_MARGIN) if frame else _COUNT_Z * sc
    return 2.0 * n * p + 4.0 * math.sqrt(n * p) + margin


def search_noise_cap(d: int, power: int) -> float:
    """The noise std a (non-frame) search may raise a step's to: :data:`_COV_NOISE_CAP`/d for a
    second moment (power 2), :data:`_MEAN_NOISE_CAP`/√d for a mean."""
    return (_COV_NOISE_CAP / d) if power == 2 else (_MEAN_NOISE_CAP / math.sqrt(d))


def search_share(frame: bool = False) -> float:
    """The share of a step's ρ its search spends (a frame search's, or any other's)."""
    return _FRAME_SEARCH_SHARE if frame else SEARCH_SHARE


def search_cap(tau: float, sigma: float, rho: float, d: int, power: int,
               frame: bool = False) -> float | None:
    """The cap of :func:`plan_search`'s grid, or None when it plans no search (the noise cap
    leaves no room, or the budget is infinite): what decides whether a step searches — and
    so its noise, ρ·(1 − :data:`SEARCH_SHARE`) left for the moment — without building the
    grid (the planner's inner loops). Public quantities only."""
    if not (math.isfinite(rho) and rho > 0 and sigma > 0 and math.isfinite(sigma)):
        return None
    cap_sigma = search_noise_cap(d, power)
    if frame and power == 2:
        cap_sigma = max(cap_sigma, _FRAME_NOISE_CAP / math.sqrt(2.0 * d))
    # the moment keeps 1 − share of ρ: its noise at τ is σ/√(1 − share)
    sig = sigma / math.sqrt(1.0 - search_share(frame))
    cap = min(tau * (cap_sigma / sig) ** (1.0 / power), _MAX_RADIUS)
    return cap if cap >= tau * _MIN_ROOM else None


def _norms_kernel(B: np.ndarray, *, P: Any, p0: Any, A: Any, s: Any, center: np.ndarray,
                  grid: np.ndarray) -> tuple[np.ndarray]:
    """(number of rows W_i = A(y_i − s) with ‖W_i − center‖ > grid_j, for each j,)."""
    W = affine_rows(mapped_inputs(B, P, p0), A, s) - center
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.sqrt(np.einsum("ij,ij->i", W, W))
    r = np.where(np.isfinite(r), r, np.inf)
    # k_i = #{j : grid_j < r_i}: row i lies outside the balls 0..k_i − 1
    hist = np.bincount(np.searchsorted(grid, r, side="left"), minlength=grid.size + 1)
    return (np.cumsum(hist[::-1])[::-1][1:].astype(np.float64),)


def outside_counts(rows: Rows, A: np.ndarray | None, shift: np.ndarray | None,
                   center: np.ndarray, grid: tuple[float, ...]) -> np.ndarray:
    """Exact numbers of rows outside B(center, τ) for each τ of ``grid`` (nothing is released
    here): the per-row verdict of :func:`_norms_kernel` summed over the rows, evaluated only
    on rows that may lie outside the smallest ball (every other row is inside every ball of
    the grid): those the rows' fast summaries cannot place inside, when they are already
    computed (:class:`~privgauss.clipped_stats.Rows`: a step's second moment or mean read
    them); else, for a ball about 0, those :func:`~privgauss.clipped_stats.prepare_moments`
    keeps in a pass whose other parts the step's
    :func:`~privgauss.clipped_stats.clipped_moments` then reuses; else one pass."""
    kernel = partial(_norms_kernel, P=rows.P, p0=rows.p0, A=A, s=shift,
                     center=np.asarray(center, dtype=np.float64),
                     grid=np.asarray(grid, dtype=np.float64))
    idx = None
    if A is not None and shift is not None and not is_dask(rows.X):
        A, shift = np.asarray(A, dtype=np.float64), np.asarray(shift, dtype=np.float64)
        c = np.asarray(center, dtype=np.float64)
        idx = rows.outside_candidates(A, shift, c, float(grid[0]))
        if idx is None and not c.any():  # a clipped_moments pass that keeps what it needs
            idx = prepare_moments(rows, A, shift, float(grid[0]))
    if idx is None:
        return np.rint(reduce_rows(rows.X, kernel)[0]).astype(np.int64)
    total = np.zeros(len(grid))
    for a0 in range(0, idx.size, _COUNT_BLOCK):
        total += kernel(take_rows(rows.X, idx[a0 : a0 + _COUNT_BLOCK]))[0]
    return np.rint(total).astype(np.int64)


_COUNT_BLOCK = 1 << 14  # candidate rows evaluated per block


def search_radius(rows: Rows, A: np.ndarray | None, shift: np.ndarray | None,
                  center: np.ndarray, search: RadiusSearch, *, release: Release,
                  exclude: Rows | None = None, counts: np.ndarray | None = None
                  ) -> tuple[float, bool]:
    """(radius, covered): the smallest grid radius whose noisy count of rows outside is at most
    ``search.allowed`` (binary search, exactly ``search.queries`` releases of ρ_s/m each), or
    the cap with covered=False when every queried count says more. ρ_s-zCDP (replace-one).
    ``exclude``: rows of ``rows`` picked by a public index set, counted out (a split mode's
    final pass reads only the other rows), exactly: the counts of all rows minus theirs.
    ``counts``: the exact numbers of rows outside each radius of the grid, when the caller
    counted them (another statistic than a ball's: :mod:`.direction_cover`'s distances along
    a direction). Charged to ``release``, the counts named "<step> radius k/m"."""
    if counts is None:
        counts = outside_counts(rows, A, shift, center, search.grid)
    if exclude is not None:
        counts = counts - outside_counts(exclude, A, shift, center, search.grid)
    m = search.queries
    budget = ZCDP(search.rho / m)
    lo, hi = 0, len(search.grid)  # index len(grid): "beyond the cap" (never queried)
    for k in range(m):
        mid = (lo + hi) // 2
        noisy = private_count(int(counts[mid]), budget, accountant=release.accountant,
                              noise=release.noise, step=release.sub(f"radius {k + 1}/{m}").step,
                              sensitivity=count_sensitivity())
        if float(np.asarray(noisy).reshape(-1)[0]) <= search.allowed:
            hi = mid
        else:
            lo = mid + 1
    if lo >= len(search.grid):
        return search.grid[-1], False
    return search.grid[lo], True
