"""A Gaussian mixture of normal scores fitted to a two-column table's noisy grid counts (issue 28;
our own post-processing).

A one-component copula (the correlation the counts give, :func:`~.grid.count_correlations`)
is a poor shape for clustered columns (three blobs): as the grid's shrinkage target it lets
the counts' noise through, and inside each cell it places the synthetic rows as one tilted
Gaussian would. Here mixtures of k = 1 … K components in normal-score space are fitted to
the released counts of both grids — each maximising the Gaussian approximation of the counts'
likelihood (mean n·q(θ), variance n·q(1 − q) plus the cells' noise σ², as
:func:`~.grid.count_correlations`), q(θ) the mixture's cell masses by midpoint quadrature of
its density on the uniform scores — and k is chosen by BIC over the cells
(:func:`fit_grid_mixture`). The noise enters only through its known σ, so as σ → 0 the
likelihood becomes the counts' multinomial one (BIC then keeps every component the counts
support).

Guarantee: none needed — a function of DP releases (the counts) and public n, σ only
(post-processing); deterministic starts, no randomness.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp, ndtri

#: quadrature points per fine cell and column (midpoints)
QUADRATURE = 3
#: component standard deviations kept in [s, SD_MAX] (normal scores), s the fine grid's
#: central cell's width in scores times SD_MIN_CELLS (a component narrower than a cell is
#: the counts' noise, not a shape they resolve), |r| ≤ R_MAX
SD_MIN_CELLS, SD_MAX, R_MAX = 0.5, 3.0, 0.95
#: the optimiser's iterations per k
MAX_ITER = 300


def sd_floor(fine_levels: int) -> float:
    """The smallest component deviation: :data:`SD_MIN_CELLS` times the width, in normal
    scores, of the fine grid's central cell."""
    h = 0.5 / fine_levels
    return float(SD_MIN_CELLS * (ndtri(0.5 + h) - ndtri(0.5 - h)))


def _unpack(theta: np.ndarray, k: int, sd_min: float
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(weights (k,), means (k, 2), covariances (k, 2, 2)) from the free parameters."""
    a = np.concatenate([[0.0], theta[:k - 1]])
    w = np.exp(a - logsumexp(a))
    rest = theta[k - 1:].reshape(k, 5)
    mu = rest[:, :2]
    sd = sd_min + (SD_MAX - sd_min) / (1.0 + np.exp(-rest[:, 2:4]))
    r = R_MAX * np.tanh(rest[:, 4])
    cov = np.empty((k, 2, 2))
    cov[:, 0, 0], cov[:, 1, 1] = sd[:, 0] ** 2, sd[:, 1] ** 2
    cov[:, 0, 1] = cov[:, 1, 0] = r * sd[:, 0] * sd[:, 1]
    return w, mu, cov


def _pack(w: np.ndarray, mu: np.ndarray, cov: np.ndarray, sd_min: float) -> np.ndarray:
    """The free parameters of (weights, means, covariances), inside their bounds."""
    k = len(w)
    lw = np.log(np.clip(w, 1e-6, None))
    sd = np.sqrt(np.stack([cov[:, 0, 0], cov[:, 1, 1]], axis=1))
    s = np.clip((sd - sd_min) / (SD_MAX - sd_min), 1e-4, 1.0 - 1e-4)
    r = np.clip(cov[:, 0, 1] / (sd[:, 0] * sd[:, 1]) / R_MAX, -0.999, 0.999)
    rest = np.column_stack([mu, np.log(s / (1.0 - s)), np.arctanh(r)])
    return np.concatenate([lw[1:] - lw[0], rest.ravel()]) if k > 1 else rest.ravel()


class _Quadrature:
    """Midpoints of the fine grid's cells split ``QUADRATURE`` ways per column, as normal
    scores, and which fine cell each falls in."""

    def __init__(self, fine_levels: int) -> None:
        m = fine_levels * QUADRATURE
        z = ndtri((np.arange(m) + 0.5) / m)
        z1, z2 = np.meshgrid(z, z, indexing="ij")
        self.z = np.column_stack([z1.ravel(), z2.ravel()])
        self.log_base = -0.5 * np.sum(self.z**2, axis=1) - math.log(2 * math.pi)
        idx = np.arange(m) // QUADRATURE
        i1, i2 = np.meshgrid(idx, idx, indexing="ij")
        self.cell = (i1 * fine_levels + i2).ravel()
        self.levels = fine_levels
        self.sd_min = sd_floor(fine_levels)

    def masses(self, w: np.ndarray, mu: np.ndarray, cov: np.ndarray) -> np.ndarray:
        """The mixture's mass in each fine cell (levels, levels): the mean of its copula
        density (mixture density over the standard normal's) at the cell's midpoints."""
        return self.terms(w, mu, cov)[0]

    def terms(self, w: np.ndarray, mu: np.ndarray, cov: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
        """(cell masses (levels, levels), each component's density ratio at each point
        before its weight (k, points), the centred points (k, points, 2), the inverse
        covariances (k, 2, 2), the number of points)."""
        k = len(w)
        x = self.z[None] - mu[:, None, :]
        inv = np.linalg.inv(cov)
        q = np.einsum("kpi,kij,kpj->kp", x, inv, x)
        logdet = np.log(np.linalg.det(cov))
        logs = (-0.5 * q - 0.5 * logdet[:, None] - math.log(2 * math.pi)
                - self.log_base[None])
        unweighted = np.exp(np.clip(logs, -700.0, 700.0)).reshape(k, -1)
        cells = np.bincount(self.cell, weights=w @ unweighted, minlength=self.levels**2)
        total = float(len(self.cell))  # the quadrature's weight, not renormalised: a
        # component's mass outside the points' span is not redistributed over them
        return (np.asarray(cells / total).reshape(self.levels, self.levels), unweighted, x, inv,
                total)


def _nll(q: np.ndarray, x: np.ndarray, n: int, sigma: float) -> tuple[float, np.ndarray]:
    """−2 log of the Gaussian approximation of the counts' ``x`` likelihood at masses ``q``,
    and its gradient in ``q``."""
    inside = (q > 0.0) & (q < 1.0)  # quadrature could step outside [0, 1]: no sampling term
    v = np.where(inside, n * q * (1.0 - q), 0.0) + sigma**2
    r = x - n * q
    dv = np.where(inside, n * (1.0 - 2.0 * q), 0.0)
    grad = -2.0 * n * r / v + dv * (1.0 / v - r**2 / v**2)
    return float(np.sum(r**2 / v + np.log(v))), grad


def _objective(theta: np.ndarray, k: int, quad: _Quadrature, coarse: np.ndarray,
               sigma_c: float, fine: np.ndarray, sigma_f: float, n: int,
               refine: int) -> tuple[float, np.ndarray]:
    """The two grids' −2 log-likelihood at the parameters ``theta`` and its gradient."""
    w, mu, cov = _unpack(theta, k, quad.sd_min)
    qf, e0, x, inv, total = quad.terms(w, mu, cov)
    lf, gf = _nll(qf, fine, n, sigma_f)
    lc, gc = _nll(_blocks(qf, refine), coarse, n, sigma_c)
    g = gf + np.kron(gc, np.ones((refine, refine)))  # d/d(fine masses)
    g = g.ravel()
    a = g[quad.cell] / total  # d/d(each point's density ratio)
    gw = e0 @ a  # d/d(weights)
    ae = w[:, None] * e0 * a[None]  # (k, points)
    y = np.einsum("kij,kpj->kpi", inv, x)  # Σ⁻¹ (z − μ)
    gmu = np.einsum("kp,kpi->ki", ae, y)
    gcov = 0.5 * (np.einsum("kp,kpi,kpj->kij", ae, y, y) - ae.sum(axis=1)[:, None, None] * inv)
    rest = theta[k - 1:].reshape(k, 5)
    sig = 1.0 / (1.0 + np.exp(-rest[:, 2:4]))
    sd = quad.sd_min + (SD_MAX - quad.sd_min) * sig
    t = np.tanh(rest[:, 4])
    r = R_MAX * t
    gs1 = gcov[:, 0, 0] * 2 * sd[:, 0] + 2 * gcov[:, 0, 1] * r * sd[:, 1]
    gs2 = gcov[:, 1, 1] * 2 * sd[:, 1] + 2 * gcov[:, 0, 1] * r * sd[:, 0]
    gr = 2 * gcov[:, 0, 1] * sd[:, 0] * sd[:, 1]
    dsd = (SD_MAX - quad.sd_min) * sig * (1.0 - sig)
    grest = np.column_stack([gmu, gs1 * dsd[:, 0], gs2 * dsd[:, 1], gr * R_MAX * (1 - t**2)])
    ga = w * (gw - float(np.sum(w * gw)))
    return lf + lc, np.concatenate([ga[1:], grest.ravel()])


def _blocks(fine: np.ndarray, refine: int) -> np.ndarray:
    g = fine.shape[0] // refine
    return np.asarray(fine.reshape(g, refine, g, refine).sum(axis=(1, 3)))


def fit_grid_mixture(coarse: np.ndarray, sigma_c: float, fine: np.ndarray, sigma_f: float,
                     n: int, refine: int, max_components: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, float]]:
    """The mixture of normal scores (weights, means, covariances) best fitting a two-column
    table's noisy ``coarse`` (g × g, deviation ``sigma_c`` per cell) and ``fine`` (g·r × g·r,
    ``sigma_f``) counts of ``n`` public rows: k = 1 … ``max_components`` components grown
    greedily (each k starts from k − 1's fit plus a component at the fine cell the fit misses
    most), each fitted by L-BFGS on the counts' approximate likelihood, k by BIC (free
    parameters 6k − 1, the cells counted as observations). Returns also each k's BIC.
    Post-processing of DP releases."""
    quad = _Quadrature(fine.shape[0])
    cells = coarse.size + fine.size

    w, mu, cov = np.ones(1), np.zeros((1, 2)), np.eye(2)[None] * 0.9
    best: tuple[float, tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
    bics: dict[str, float] = {}
    zc = ndtri((np.arange(fine.shape[0]) + 0.5) / fine.shape[0])
    for k in range(1, max_components + 1):
        if k > 1:  # a new component where the counts exceed the fit's masses most
            resid = fine - n * quad.masses(w, mu, cov)
            i, j = np.unravel_index(int(np.argmax(resid)), resid.shape)
            w = np.append(w * (1.0 - 1.0 / k), 1.0 / k)
            mu = np.vstack([mu, [zc[i], zc[j]]])
            cov = np.concatenate([cov, np.eye(2)[None] * 0.25])
        res = minimize(_objective, _pack(w, mu, cov, quad.sd_min), jac=True, method="L-BFGS-B",
                       args=(k, quad, coarse, sigma_c, fine, sigma_f, n, refine),
                       options={"maxiter": MAX_ITER})
        w, mu, cov = _unpack(np.asarray(res.x), k, quad.sd_min)
        bic = float(res.fun) + (6 * k - 1) * math.log(cells)
        bics[str(k)] = bic
        if best is None or bic < best[0]:
            best = (bic, (w.copy(), mu.copy(), cov.copy()))
    assert best is not None
    return (*best[1], bics)
