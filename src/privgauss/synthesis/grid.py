"""DP dependence grid: a joint histogram of a narrow table's copula scores (issue 28; our own).

A Gaussian-copula mixture cannot follow a 2-D dependence of any shape (clusters, a band, a
time trend); MST and AIM release the whole 2-way marginal instead. For a narrow table — the
number of levels per column, chosen from public n, d and the budget (:func:`grid_levels`),
large enough — the synthesizer releases the counts of the rows' uniform scores (each column
through its DP marginal, :meth:`Marginal.to_uniform`) in the g^d cells of the equal-width grid
on [0, 1]^d, jointly with Gaussian noise. Post-processing (:func:`grid_from_counts`): the noisy
cell frequencies are shrunk towards the copula model's cell masses by the James–Stein factor
(1 − cells · noise variance / squared distance, in [0, 1]: the grid where the model misses the
dependence, the model where the two differ by noise alone), negative masses set to 0, then the
table raked (iterative proportional fitting) to margins that combine the two DP measurements
of each column's mass in each of its g slices — 1/g by its marginal, the slice's noisy sum by
the grid — by inverse noise variance (:func:`combined_margins`; uniform when the grid is
used alone), so the synthetic columns follow the DP marginals corrected where the grid's sums
measure them better; a sample of m rows gives each cell m times its raked mass, rounded by
systematic sampling (:func:`systematic_counts`: no multinomial noise on top of the release's),
and each row a point inside its cell from the copula model's draws that fall there (uniform
in the cell when too few do), so the model sets the shape within a cell and the grid the mass
of each. The levels grow with n/σ, bounded by memory and time only (:data:`GRID_MAX_CELLS`):
as the noise vanishes the grid tends to the rows' own histogram of scores, down to that
bound's resolution.

Two levels (:func:`refinement_from_counts`): a second noisy histogram on the grid of r times
the levels (r^d sub-cells per cell) measures the shape inside each cell — its block sums are
combined with the coarse counts by inverse variance (:func:`combine_counts`), and its
frequencies, shrunk towards the model's like the coarse ones, split each cell's mass among its
sub-cells, so the coarse masses (and the raked margins the metric's quantile bins see) stay
those of the coarse grid while a sample follows the finer conditional shape.

Guarantee: ρ-zCDP under replace-one neighbours (n public): the per-record scores move one
record from one cell to another, L2 sensitivity √2 (:func:`privgauss.sensitivity.histogram_l2`),
for each of the two histograms (charged separately, steps ``grid`` and ``grid/fine``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import ndtri
from scipy.stats import multivariate_normal

from ..mechanisms import Release, gaussian_mechanism
from ..privacy import ZCDP
from ..sensitivity import histogram_l2

#: fewest levels per column for the grid to be used (below, the copula mixture alone)
GRID_MIN_LEVELS = 5
#: most cells in all: a bound on memory and time (each of the grid's tables holds this many
#: floats, the raking sweeps them, and secure noise costs ~40 µs a cell: 2^20 cells were 42 s
#: of noise), not a guard against noise — the levels grow with n/σ (:func:`grid_levels`) and
#: reach it only at n/σ ≈ GRID_MAX_CELLS^((d+1)/d) (1.3·10⁸ at d = 2).
#: Until 2026-11-29 the grid also stopped at 32 levels and 4,096 cells, a resolution floor
#: that kept the synthetic 2-way tables above their sampling floor at any budget (six
#: columns or more never got a grid: benchmarks/results/synth_corpus.md)
GRID_MAX_CELLS = 2**18
#: iterations of the raking to the margins
RAKE_ITERATIONS = 50
#: copula draws per synthetic row offered to the cells (see :meth:`DependenceGrid.sample`)
PROPOSALS_PER_ROW = 8


def grid_levels(n: int, d: int, rho: float) -> int:
    """Levels per column from public n, d and the grid's ρ: ⌊(n/σ)^(1/(d+1))⌋ (the cell width
    that balances the histogram's binning error, ∝ 1/g, with its noise's, ∝ g^d σ/n), σ the
    noise per cell, at most :data:`GRID_MAX_CELLS` cells in all (memory and time); 0 (no
    grid) when that is below :data:`GRID_MIN_LEVELS` or d < 2. The levels grow with n/σ up to
    that bound, so the released grid tends to the rows' joint histogram of scores."""
    if not (rho > 0 and n > 0 and d >= 2):  # one column has no dependence
        return 0
    sigma = histogram_l2() / math.sqrt(2.0 * rho)
    most = int(GRID_MAX_CELLS ** (1.0 / d)) + 1  # the most levels within the cap ...
    while most**d > GRID_MAX_CELLS:
        most -= 1
    # ... taken before the loop-free min: at ρ = 1e100 the balance alone asks for 1e13 levels
    g = min(int(min((n / sigma) ** (1.0 / (d + 1)), 1e9)), most)
    return g if g >= GRID_MIN_LEVELS else 0


@dataclass(frozen=True)
class DependenceGrid:
    """A released dependence grid: ``levels`` per column and the cell probabilities ``probs``
    (shape (levels,) * d, non-negative, summing to 1, margins those of the raking); with
    ``refine`` r > 1, ``within`` (levels^d, r^d) splits each cell's mass among its r^d
    sub-cells (rows non-negative, summing to 1: :func:`refinement_from_counts`)."""

    levels: int
    probs: np.ndarray
    refine: int = 1
    within: np.ndarray | None = None

    @property
    def d(self) -> int:
        return int(self.probs.ndim)

    def column_masses(self) -> np.ndarray:
        """Each column's mass in each of its ``levels`` slices (d, levels): the raked margins."""
        d = self.d
        return np.array([self.probs.sum(axis=tuple(a for a in range(d) if a != j))
                         for j in range(d)])

    def cells(self, U: np.ndarray, levels: int | None = None) -> np.ndarray:
        """The flat cell index of each row of uniform scores ``U`` (n, d) on the grid of
        ``levels`` per column (default the grid's); any float is handled (clipped into
        [0, 1], NaN as 0)."""
        g = self.levels if levels is None else int(levels)
        U = np.nan_to_num(np.asarray(U, dtype=np.float64), nan=0.0)
        idx = np.clip(np.floor(U * g).astype(np.int64), 0, g - 1)
        return np.asarray(np.ravel_multi_index(tuple(idx.T), (g,) * self.d))

    def _sub_cells(self, U: np.ndarray) -> np.ndarray:
        """Each row's index ``cell * r^d + sub-cell`` on the refined grid (r = ``refine``)."""
        g, r, d = self.levels, self.refine, self.d
        U = np.nan_to_num(np.asarray(U, dtype=np.float64), nan=0.0)
        idx = np.clip(np.floor(U * (g * r)).astype(np.int64), 0, g * r - 1)
        cell = np.ravel_multi_index(tuple((idx // r).T), (g,) * d)
        sub = np.ravel_multi_index(tuple((idx % r).T), (r,) * d)
        return np.asarray(cell * r**d + sub)

    def sample(self, n: int, proposals: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``n`` rows of uniform scores: cell counts n·``probs`` rounded by systematic
        sampling (:func:`systematic_counts`; refined, each cell's count split among its
        sub-cells by ``within`` the same way); in each (sub-)cell, the
        ``proposals`` (draws of the copula model's uniform scores) that fall there, taken
        without replacement, then uniform points in it for any shortfall; rows shuffled."""
        g, d = self.levels, self.d
        p = self.probs.ravel()
        want = systematic_counts(n, p, rng)
        if self.within is not None and self.refine > 1:
            r = self.refine
            sub = np.zeros((p.size, r**d), dtype=np.int64)
            for c in np.flatnonzero(want):
                sub[c] = systematic_counts(int(want[c]), self.within[c], rng)
            want, have, width = sub.ravel(), self._sub_cells(proposals), 1.0 / (g * r)
        else:
            r, have, width = 1, self.cells(proposals), 1.0 / g
        order = np.argsort(have, kind="stable")
        starts = np.searchsorted(have[order], np.arange(want.size + 1))
        out = np.empty((n, d))
        at = 0
        for c in np.flatnonzero(want):
            k = int(want[c])
            pool = order[starts[c]:starts[c + 1]]
            take = pool if pool.size <= k else rng.choice(pool, k, replace=False)
            out[at:at + take.size] = proposals[take]
            at += take.size
            short = k - take.size
            if short:
                cell, s = divmod(int(c), r**d)
                lo = (np.array(np.unravel_index(cell, (g,) * d), dtype=np.float64) * r
                      + np.array(np.unravel_index(s, (r,) * d), dtype=np.float64)) * width
                out[at:at + short] = lo + rng.uniform(0.0, width, (short, d))
                at += short
        return out[rng.permutation(n)]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"levels": self.levels, "shape": list(self.probs.shape),
                               "probs": self.probs.ravel().tolist()}
        if self.within is not None and self.refine > 1:
            out["refine"] = self.refine
            out["within"] = self.within.ravel().tolist()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DependenceGrid:
        g = int(data["levels"])
        shape = tuple(int(s) for s in data["shape"])
        probs = np.asarray(data["probs"], dtype=np.float64)
        ok = (g >= 1 and len(shape) >= 1 and all(s == g for s in shape)
              and probs.size == g ** len(shape) and np.all(np.isfinite(probs))
              and np.all(probs >= 0) and abs(float(probs.sum()) - 1.0) < 1e-6)
        r, within = int(data.get("refine", 1)), None
        if ok and r > 1:
            within = np.asarray(data.get("within", []), dtype=np.float64)
            ok = (within.size == probs.size * r ** len(shape) and np.all(np.isfinite(within))
                  and np.all(within >= 0))
            if ok:
                within = within.reshape(probs.size, r ** len(shape))
                ok = bool(np.all(np.abs(within.sum(axis=1) - 1.0) < 1e-6))
        if not ok or r < 1:
            raise ValueError("a dependence grid needs levels, a shape of that many levels per "
                             "column and non-negative probabilities summing to 1 (refined: "
                             "each cell's sub-cell shares summing to 1)")
        return cls(g, probs.reshape(shape), r, within)


def systematic_counts(n: int, p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``n`` draws' counts over the cells of probabilities ``p`` (non-negative, any sum > 0)
    by systematic sampling: the points (i + U)/n, i = 0 … n − 1, one uniform U, counted in
    the cells' intervals of the cumulative probabilities — each count ⌊n p_k⌋ or ⌈n p_k⌉,
    its mean n p_k, summing to n. Multinomial draws (until 2026-11-29) added their own
    sampling noise to the cells' masses — at a huge budget, when the released grid is the
    rows' own histogram, a second sample's worth of error over the sampling floor."""
    q = np.clip(np.asarray(p, dtype=np.float64), 0.0, None)
    total = q.sum()
    if not total > 0 or n <= 0:
        return np.zeros(q.size, dtype=np.int64)
    edges = np.concatenate([[0.0], np.cumsum(q / total)])
    edges[-1] = 1.0
    points = (np.arange(n) + rng.uniform(0.0, 1.0)) / n
    return np.diff(np.searchsorted(points, edges, side="left")).astype(np.int64)


def rake(table: np.ndarray, iterations: int = RAKE_ITERATIONS,
         margins: np.ndarray | None = None) -> np.ndarray:
    """Iterative proportional fitting of a non-negative table to the ``margins`` (one row of
    g masses per axis; default uniform, each axis's sums 1/g); a slice with no mass stays
    empty, so its margin cannot be met exactly."""
    p = np.asarray(table, dtype=np.float64)
    total = p.sum()
    if not total > 0:
        return np.full(p.shape, 1.0 / p.size)
    p = p / total
    for _ in range(iterations):
        for axis in range(p.ndim):
            other = tuple(a for a in range(p.ndim) if a != axis)
            sums = p.sum(axis=other, keepdims=True)
            shape = [1] * p.ndim
            shape[axis] = p.shape[axis]
            target = (1.0 / p.shape[axis] if margins is None
                      else np.asarray(margins[axis], dtype=np.float64).reshape(shape))
            p = p * np.where(sums > 0, target / np.where(sums > 0, sums, 1.0), 0.0)
    return p / p.sum()


def grid_sigma(rho: float) -> float:
    """The noise deviation of each cell's count at the grid's ρ."""
    return histogram_l2() / math.sqrt(2.0 * rho)


def release_grid_counts(U: np.ndarray, levels: int, rho: float, *,
                        release: Release, step: str = "grid") -> np.ndarray:
    """The noisy cell counts of the uniform scores ``U`` (n, d), shape (levels,) * d: one
    charge to ``release``, ``step`` under its prefix (ZCDP(rho), before the noise is
    drawn)."""
    d = U.shape[1]
    shape = (levels,) * d
    empty = DependenceGrid(levels, np.full(shape, 1.0 / levels**d))
    counts = np.bincount(empty.cells(U), minlength=levels**d).astype(np.float64)
    noisy = gaussian_mechanism(counts, histogram_l2(), ZCDP(rho), accountant=release.accountant,
                               noise=release.noise, step=release.name(step))
    return np.asarray(noisy, dtype=np.float64).reshape(shape)


def model_cell_masses(levels: int, proposals: np.ndarray) -> np.ndarray:
    """The copula model's mass in each cell, estimated from its draws of uniform scores."""
    d = proposals.shape[1]
    empty = DependenceGrid(levels, np.full((levels,) * d, 1.0 / levels**d))
    hits = np.bincount(empty.cells(proposals), minlength=levels**d).astype(np.float64)
    return (hits / max(len(proposals), 1)).reshape((levels,) * d)


#: false-alarm probability, over all of a grid's cells, of the cut a cell the model leaves
#: empty must pass to keep its count (:func:`grid_from_counts`)
GRID_EMPTY_BETA = 0.05


def grid_from_counts(noisy: np.ndarray, n: int, sigma: float, model: np.ndarray,
                     margins: np.ndarray | None = None) -> tuple[DependenceGrid, float]:
    """The grid from its noisy counts (``sigma`` per cell, ``n`` public rows) and the model's
    cell masses: the frequencies shrunk towards the model by the James–Stein factor, clipped
    at 0 and raked (to ``margins``, default uniform); returns the grid and the factor (1: the
    released counts alone; 0: the model alone). A cell the model leaves empty (none of its
    draws) whose count does not pass the cut at which a false alarm among all the cells has
    probability ≤ :data:`GRID_EMPTY_BETA` (Bonferroni, as the marginals' empty bins) is
    empty: clipping its noise at 0 instead left it ~0.4 σ/n of mass, and over the thousands
    of cells a wide table's grid has at a large budget (diamonds at ε = 1e4: 5^7 cells, 94 %
    of them empty) that spread 5 % of the rows uniformly over the cube — its normal-score
    correlations of 0.99 fell to 0.93 (benchmarks/results/synth_correlation.md). The cut
    vanishes with σ. Post-processing of DP releases."""
    f = noisy / n
    dist = float(np.sum((f - model) ** 2))
    noise_var = f.size * (sigma / n) ** 2
    factor = float(np.clip(1.0 - noise_var / dist, 0.0, 1.0)) if dist > 0 else 0.0
    shrunk = np.clip(model + factor * (f - model), 0.0, None)
    cut = sigma * float(ndtri(1.0 - GRID_EMPTY_BETA / f.size))
    p = np.where((model <= 0) & (noisy < cut), 0.0, shrunk)
    if not p.sum() > 0:  # nothing passed: the shrunk frequencies as before
        p = shrunk
    return DependenceGrid(noisy.shape[0], rake(p, margins=margins)), factor


def combined_margins(noisy: np.ndarray, n: int, sigma: float,
                     marginal_vars: np.ndarray) -> np.ndarray:
    """Each column's mass in each of the grid's g slices of its uniform scores, two DP
    measurements combined by inverse variance: 1/g by the column's released marginal (its
    noise variance ``marginal_vars[j, a]``, shape (d, g)) and the grid's slice sums (noise
    variance g^(d-1) σ²/n²); floored at a fifth of 1/g and normalised (post-processing)."""
    g, d = noisy.shape[0], noisy.ndim
    out = np.empty((d, g))
    grid_var = g ** (d - 1) * (sigma / n) ** 2
    for j in range(d):
        other = tuple(a for a in range(d) if a != j)
        slices = noisy.sum(axis=other) / n
        w = grid_var / (grid_var + np.asarray(marginal_vars[j], dtype=np.float64))
        m = np.clip((1.0 - w) * slices + w / g, 0.2 / g, None)
        out[j] = m / m.sum()
    return out


#: largest |correlation| a grid's pair is fitted with (:func:`grid_correlations`,
#: :func:`count_correlations`)
GRID_MAX_CORRELATION = 0.99


def normal_cell_masses(levels: int, r: float) -> np.ndarray:
    """The masses of the levels × levels equal-probability cells of the standard bivariate
    normal with correlation ``r`` (rows: the first variable's slices)."""
    z = ndtri(np.arange(1, levels) / levels)
    z = np.concatenate([[-10.0], z, [10.0]])
    corners = np.array(np.meshgrid(z, z, indexing="ij")).reshape(2, -1).T
    cdf = np.asarray(multivariate_normal(np.zeros(2), [[1.0, r], [r, 1.0]]).cdf(corners))
    c = cdf.reshape(levels + 1, levels + 1)
    return np.clip(c[1:, 1:] - c[:-1, 1:] - c[1:, :-1] + c[:-1, :-1], 1e-12, None)


def grid_correlations(grid: DependenceGrid) -> np.ndarray:
    """The Gaussian copula's correlation matrix fitted to a released grid: each pair's r
    maximises Σ p log q(r) over its 2-D margin p (the cells' masses) and the bivariate
    normal's cell masses q(r), |r| ≤ :data:`GRID_MAX_CORRELATION` (post-processing). With
    the grid's g² counts this is a far less noisy measure of a pair's dependence than a
    covariance release at the model's share (the correlation of clipped normal scores has
    sensitivity ∝ their bound squared)."""
    d = grid.d
    out = np.eye(d)
    for i in range(d):
        for j in range(i + 1, d):
            other = tuple(a for a in range(d) if a not in (i, j))
            p = grid.probs.sum(axis=other) if other else grid.probs
            out[i, j] = out[j, i] = _fitted_correlation(p / p.sum())
    return out


def count_correlations(noisy: np.ndarray, n: int, sigma: float) -> np.ndarray:
    """The Gaussian copula's correlation matrix fitted to a grid's noisy counts (``sigma``
    per cell, ``n`` public rows), unclipped: each pair's r maximises the Gaussian
    approximation of the likelihood of its 2-D margin's counts x — mean n·q(r), variance
    n·q(r)(1 − q(r)) (the rows' sampling) plus the summed cells' noise g^(d−2)·σ² —
    |r| ≤ :data:`GRID_MAX_CORRELATION` (post-processing). Clipping the noise's negative
    counts at 0 first (as :func:`grid_correlations` on a released grid sees them) would add
    mass to the cells a strong dependence leaves nearly empty and pull r towards 0."""
    d = noisy.ndim
    g = noisy.shape[0]
    noise_var = g ** (d - 2) * sigma**2
    out = np.eye(d)
    for i in range(d):
        for j in range(i + 1, d):
            other = tuple(a for a in range(d) if a not in (i, j))
            x = noisy.sum(axis=other) if other else noisy

            def nll(r: float, x: np.ndarray = x) -> float:
                q = normal_cell_masses(g, r)
                v = n * q * (1.0 - q) + noise_var
                return float(np.sum((x - n * q) ** 2 / v + np.log(v)))

            res = minimize_scalar(nll, bounds=(-GRID_MAX_CORRELATION, GRID_MAX_CORRELATION),
                                  method="bounded", options={"xatol": 1e-3})
            out[i, j] = out[j, i] = float(res.x)
    return out


def _fitted_correlation(p: np.ndarray) -> float:
    """The r maximising Σ p log q(r) for a pair's cell masses ``p`` (g × g)."""
    g = p.shape[0]
    res = minimize_scalar(lambda r: -float(np.sum(p * np.log(normal_cell_masses(g, r)))),
                          bounds=(-GRID_MAX_CORRELATION, GRID_MAX_CORRELATION),
                          method="bounded", options={"xatol": 1e-3})
    return float(res.x)


def to_blocks(fine: np.ndarray, refine: int) -> np.ndarray:
    """A table on the refined grid ((g·r,) * d) as (g^d, r^d): row c the r^d sub-cells of the
    coarse cell c (flat, C order), in the order of :meth:`DependenceGrid._sub_cells`."""
    d, r = fine.ndim, int(refine)
    g = fine.shape[0] // r
    t = fine.reshape(sum(((g, r) for _ in range(d)), ()))
    t = t.transpose(tuple(range(0, 2 * d, 2)) + tuple(range(1, 2 * d, 2)))
    return np.asarray(t.reshape(g**d, r**d))


def combine_counts(coarse: np.ndarray, sigma_c: float, fine: np.ndarray, sigma_f: float,
                   refine: int) -> tuple[np.ndarray, float]:
    """Two DP measurements of the coarse cells' counts combined by inverse variance: the
    coarse release (deviation ``sigma_c`` per cell) and the sums of each cell's r^d fine
    counts (``sigma_f`` each); returns the counts and their deviation (post-processing)."""
    vc, vf = sigma_c**2, refine ** fine.ndim * sigma_f**2
    sums = to_blocks(fine, refine).sum(axis=1).reshape(coarse.shape)
    w = vf / (vc + vf)
    return w * coarse + (1.0 - w) * sums, math.sqrt(vc * vf / (vc + vf))


def refinement_from_counts(fine: np.ndarray, n: int, sigma: float, model: np.ndarray,
                           refine: int) -> np.ndarray:
    """Each coarse cell's split among its r^d sub-cells (g^d, r^d) from the noisy fine counts
    (``sigma`` each) and the model's fine cell masses: the frequencies shrunk towards the
    model by the James–Stein factor (as :func:`grid_from_counts`), clipped at 0 and
    normalised within each cell (the model's split, else uniform, where nothing is left).
    Post-processing of DP releases."""
    f = fine / n
    dist = float(np.sum((f - model) ** 2))
    factor = float(np.clip(1.0 - f.size * (sigma / n) ** 2 / dist, 0.0, 1.0)) if dist > 0 else 0.0
    p = to_blocks(np.clip(model + factor * (f - model), 0.0, None), refine)
    m = to_blocks(np.clip(model, 0.0, None), refine) + 1e-300
    p = np.where(p.sum(axis=1, keepdims=True) > 0, p, m)
    return np.asarray(p / p.sum(axis=1, keepdims=True))
