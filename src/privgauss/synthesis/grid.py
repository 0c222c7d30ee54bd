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
measure them better; a sample picks a cell from the raked table and a point inside it from the
copula model's draws that fall there (uniform in the cell when too few do), so the model sets
the shape within a cell and the grid the mass of each.

Guarantee: ρ-zCDP under replace-one neighbours (n public): the per-record scores move one
record from one cell to another, L2 sensitivity √2 (:func:`privgauss.sensitivity.histogram_l2`).
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
#: most levels per column and most cells in all
GRID_MAX_LEVELS = 32
GRID_MAX_CELLS = 4096
#: iterations of the raking to the margins
RAKE_ITERATIONS = 50
#: copula draws per synthetic row offered to the cells (see :meth:`DependenceGrid.sample`)
PROPOSALS_PER_ROW = 8


def grid_levels(n: int, d: int, rho: float) -> int:
    """Levels per column from public n, d and the grid's ρ: ⌊(n/σ)^(1/(d+1))⌋ (the cell width
    that balances the histogram's binning error, ∝ 1/g, with its noise's, ∝ g^d σ/n), σ the
    noise per cell, at most :data:`GRID_MAX_LEVELS` and :data:`GRID_MAX_CELLS` cells in all;
    0 (no grid) when that is below :data:`GRID_MIN_LEVELS` or d < 2."""
    if not (rho > 0 and n > 0 and d >= 2):  # one column has no dependence
        return 0
    sigma = histogram_l2() / math.sqrt(2.0 * rho)
    cap = int(round(GRID_MAX_CELLS ** (1.0 / d), 9))  # the most levels within the cells' cap
    g = min(int((n / sigma) ** (1.0 / (d + 1))), GRID_MAX_LEVELS, cap)
    return g if g >= GRID_MIN_LEVELS else 0


@dataclass(frozen=True)
class DependenceGrid:
    """A released dependence grid: ``levels`` per column and the cell probabilities ``probs``
    (shape (levels,) * d, non-negative, summing to 1, margins those of the raking)."""

    levels: int
    probs: np.ndarray

    @property
    def d(self) -> int:
        return int(self.probs.ndim)

    def column_masses(self) -> np.ndarray:
        """Each column's mass in each of its ``levels`` slices (d, levels): the raked margins."""
        d = self.d
        return np.array([self.probs.sum(axis=tuple(a for a in range(d) if a != j))
                         for j in range(d)])

    def cells(self, U: np.ndarray) -> np.ndarray:
        """The flat cell index of each row of uniform scores ``U`` (n, d); any float is
        handled (clipped into [0, 1], NaN as 0)."""
        g = self.levels
        U = np.nan_to_num(np.asarray(U, dtype=np.float64), nan=0.0)
        idx = np.clip(np.floor(U * g).astype(np.int64), 0, g - 1)
        return np.asarray(np.ravel_multi_index(tuple(idx.T), (g,) * self.d))

    def sample(self, n: int, proposals: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``n`` rows of uniform scores: cell counts drawn from ``probs``; in each cell, the
        ``proposals`` (draws of the copula model's uniform scores) that fall there, taken
        without replacement, then uniform points in the cell for any shortfall; rows shuffled."""
        g, d = self.levels, self.d
        p = self.probs.ravel()
        want = rng.multinomial(n, p / p.sum())
        have = self.cells(proposals)
        order = np.argsort(have, kind="stable")
        starts = np.searchsorted(have[order], np.arange(p.size + 1))
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
                lo = np.array(np.unravel_index(c, (g,) * d), dtype=np.float64) / g
                out[at:at + short] = lo + rng.uniform(0.0, 1.0 / g, (short, d))
                at += short
        return out[rng.permutation(n)]

    def to_dict(self) -> dict[str, Any]:
        return {"levels": self.levels, "shape": list(self.probs.shape),
                "probs": self.probs.ravel().tolist()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DependenceGrid:
        g = int(data["levels"])
        shape = tuple(int(s) for s in data["shape"])
        probs = np.asarray(data["probs"], dtype=np.float64)
        ok = (g >= 1 and len(shape) >= 1 and all(s == g for s in shape)
              and probs.size == g ** len(shape) and np.all(np.isfinite(probs))
              and np.all(probs >= 0) and abs(float(probs.sum()) - 1.0) < 1e-6)
        if not ok:
            raise ValueError("a dependence grid needs levels, a shape of that many levels per "
                             "column and non-negative probabilities summing to 1")
        return cls(g, probs.reshape(shape))


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
                        release: Release) -> np.ndarray:
    """The noisy cell counts of the uniform scores ``U`` (n, d), shape (levels,) * d: one
    charge to ``release``, step ``grid`` under its prefix (ZCDP(rho), before the noise is
    drawn)."""
    d = U.shape[1]
    shape = (levels,) * d
    empty = DependenceGrid(levels, np.full(shape, 1.0 / levels**d))
    counts = np.bincount(empty.cells(U), minlength=levels**d).astype(np.float64)
    noisy = gaussian_mechanism(counts, histogram_l2(), ZCDP(rho), accountant=release.accountant,
                               noise=release.noise, step=release.name("grid"))
    return np.asarray(noisy, dtype=np.float64).reshape(shape)


def model_cell_masses(levels: int, proposals: np.ndarray) -> np.ndarray:
    """The copula model's mass in each cell, estimated from its draws of uniform scores."""
    d = proposals.shape[1]
    empty = DependenceGrid(levels, np.full((levels,) * d, 1.0 / levels**d))
    hits = np.bincount(empty.cells(proposals), minlength=levels**d).astype(np.float64)
    return (hits / max(len(proposals), 1)).reshape((levels,) * d)


def grid_from_counts(noisy: np.ndarray, n: int, sigma: float, model: np.ndarray,
                     margins: np.ndarray | None = None) -> tuple[DependenceGrid, float]:
    """The grid from its noisy counts (``sigma`` per cell, ``n`` public rows) and the model's
    cell masses: the frequencies shrunk towards the model by the James–Stein factor, clipped
    at 0 and raked (to ``margins``, default uniform); returns the grid and the factor (1: the
    released counts alone; 0: the model alone). Post-processing of DP releases."""
    f = noisy / n
    dist = float(np.sum((f - model) ** 2))
    noise_var = f.size * (sigma / n) ** 2
    factor = float(np.clip(1.0 - noise_var / dist, 0.0, 1.0)) if dist > 0 else 0.0
    p = np.clip(model + factor * (f - model), 0.0, None)
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


#: largest |correlation| a grid's pair is fitted with (:func:`grid_correlations`)
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


def _fitted_correlation(p: np.ndarray) -> float:
    """The r maximising Σ p log q(r) for a pair's cell masses ``p`` (g × g)."""
    g = p.shape[0]
    res = minimize_scalar(lambda r: -float(np.sum(p * np.log(normal_cell_masses(g, r)))),
                          bounds=(-GRID_MAX_CORRELATION, GRID_MAX_CORRELATION),
                          method="bounded", options={"xatol": 1e-3})
    return float(res.x)
