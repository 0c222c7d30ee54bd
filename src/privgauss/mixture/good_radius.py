"""GoodRadius of the private 1-cluster: the radius of a ball holding about t points (pure ε-DP).

Nissim–Stemmer–Vadhan (2016) / Nissim–Stemmer (2018) as used by KSSU19 (App. B, Alg. 5; spec
§3.4, §3.8, §6.6). **Neighbours:** replace one row; n is public. **Guarantee:**
:func:`radius_search` (and :func:`good_radius`) is ε-DP: one AboveThreshold over a public
doubling grid of radii on the capped score L(r), whose sensitivity is 2
(:func:`privgauss.sensitivity.capped_count_score`; step 1 of the derivation in
:mod:`.one_cluster`). The exact ball counts and scores here are the non-private computations the
mechanism reads; the grid, t and the public subsample are data independent.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import sensitivity
from ..backends import as_rows
from ..mechanisms import Release, above_threshold
from ..privacy import Budget, pure_epsilon
from ..validation import check_positive_int, check_probability

__all__ = [
    "above_threshold_slack",
    "ball_counts",
    "capped_count_score",
    "check_radii",
    "doubling_radii",
    "good_radius",
    "radius_search",
    "subsample_t",
    "top_t_mean",
]

_BLOCK_ELEMENTS = 1 << 20  # pairwise distances per block


# ----------------------------------------------------------------------------------------------
# Public parameters
# ----------------------------------------------------------------------------------------------


def doubling_radii(r_lo: float, r_hi: float) -> np.ndarray:
    """The public grid r_lo·2^j, j = 0..T−1, T = ⌈log₂(r_hi/r_lo)⌉ + 1 (last radius ≥ r_hi)."""
    r_lo, r_hi = float(r_lo), float(r_hi)
    if not (math.isfinite(r_lo) and math.isfinite(r_hi) and 0 < r_lo <= r_hi):
        raise ValueError("need finite 0 < r_lo <= r_hi")
    T = int(math.ceil(math.log2(r_hi / r_lo) - 1e-12)) + 1
    return r_lo * 2.0 ** np.arange(max(T, 1))


def above_threshold_slack(
    epsilon: float,
    n_queries: int,
    beta: float,
    *,
    sensitivity: float = 2.0,
    constants: str = "practical",
) -> float:
    """Accuracy slack Γ of AboveThreshold (threshold noise Lap(2Δ/ε), query noise Lap(4Δ/ε)):
    with probability ≥ 1 − β every answer is correct up to Γ.

    ``"theory"``: Γ = 8Δ(ln T + ln(2/β))/ε (Dwork–Roth Thm 3.24; spec §3.4). ``"practical"``:
    the union bound P(|Z_τ| > a) + T·P(|Z_q| > b) ≤ β with a = (2Δ/ε)ln(2/β),
    b = (4Δ/ε)ln(2T/β), i.e. Γ = a + b — never larger than the theory value.
    """
    n_queries = check_positive_int(n_queries, "n_queries", minimum=1)
    beta = check_probability(beta, "beta")
    if constants not in ("theory", "practical"):
        raise ValueError("constants must be 'theory' or 'practical'")
    eps = float(epsilon)
    if math.isinf(eps):
        return 0.0
    if constants == "theory":
        return 8.0 * sensitivity * (math.log(n_queries) + math.log(2.0 / beta)) / eps
    a = 2.0 * sensitivity / eps * math.log(2.0 / beta)
    b = 4.0 * sensitivity / eps * math.log(2.0 * n_queries / beta)
    return a + b


def check_radii(radii: Any) -> np.ndarray:
    r = np.asarray(radii, dtype=np.float64).ravel()
    if r.size == 0 or not np.isfinite(r).all() or not (r > 0).all():
        raise ValueError("radii must be a non-empty sequence of finite positive numbers")
    return np.unique(r)


# ----------------------------------------------------------------------------------------------
# Exact, vectorised ball counts
# ----------------------------------------------------------------------------------------------


def ball_counts(points: Any, thresholds: Any, centers: Any = None) -> np.ndarray:
    """``counts[i, j] = #{l : ‖centers_i − points_l‖ ≤ thresholds[j]}`` (closed balls; the rule
    is ``Σ_k (c_k − x_k)² ≤ r²`` in float64, summed over k in order, the same for every pair).

    ``centers`` defaults to ``points`` (each point counts itself). Row blocks keep the memory at
    about 8 MB per array whatever n; time O(n_centers · n · d).
    """
    P = np.ascontiguousarray(np.asarray(points, dtype=np.float64).T)  # d × n
    C = P.T if centers is None else np.asarray(centers, dtype=np.float64)
    thr = np.asarray(thresholds, dtype=np.float64).ravel()
    order = np.argsort(thr, kind="stable")
    thr2 = thr[order] ** 2
    d, n = P.shape
    K = thr2.size
    out = np.empty((C.shape[0], K), dtype=np.int64)
    step = max(1, _BLOCK_ELEMENTS // max(n, 1))
    for a in range(0, C.shape[0], step):
        rows = C[a : a + step]
        m = rows.shape[0]
        D2 = np.zeros((m, n))
        with np.errstate(over="ignore", invalid="ignore"):
            for k in range(d):
                diff = rows[:, k, None] - P[k][None, :]
                D2 += diff * diff
        # idx = number of thresholds strictly below D2; D2 <= thr2[j]  <=>  idx <= j
        idx = np.searchsorted(thr2, D2, side="left")
        flat = (idx + (K + 1) * np.arange(m)[:, None]).ravel()
        hist = np.bincount(flat, minlength=m * (K + 1)).reshape(m, K + 1)
        out[a : a + step, order] = np.cumsum(hist, axis=1)[:, :K]
    return out


def top_t_mean(values: np.ndarray, t: int) -> np.ndarray:
    """Per column: (sum of the t largest entries, zero-padded if fewer) / t."""
    n = values.shape[0]
    if n <= t:
        return values.sum(axis=0) / t
    return np.partition(values, n - t, axis=0)[n - t :].sum(axis=0) / t


def capped_count_score(X: Any, t: int, radii: Any) -> np.ndarray:
    """L(r) for every radius: the mean over the t best data points of min(|X ∩ B_r(x)|, t)
    (NSV16's GoodRadius score; sensitivity 2 under replace-one)."""
    data = np.asarray(X, dtype=np.float64)
    t = check_positive_int(t, "t", minimum=1)
    counts = ball_counts(data, radii)
    return top_t_mean(np.minimum(counts, t), t)


def subsample_t(n: int, t: int, max_points: int) -> int:
    """t rescaled to a subsample of max_points of n rows (public)."""
    return t if n <= max_points else max(1, int(round(t * max_points / n)))


def _subsample(
    data: np.ndarray, t: int, max_points: int, rng: np.random.Generator
) -> tuple[np.ndarray, int]:
    n = data.shape[0]
    if n <= max_points:
        return data, t
    idx = np.sort(rng.choice(n, size=max_points, replace=False))  # public randomness
    return data[idx], subsample_t(n, t, max_points)


# ----------------------------------------------------------------------------------------------
# GoodRadius
# ----------------------------------------------------------------------------------------------


def good_radius(
    X: Any,
    t: int,
    radii: Any,
    budget: Budget,
    *,
    beta: float = 0.05,
    constants: str = "practical",
    max_points: int = 5000,
    release: Release,
) -> float | None:
    """ε-DP (replace-one, n public) search for a radius r whose balls hold about t points:
    AboveThreshold on L(r) (sensitivity 2) over the public ``radii`` in increasing order with
    threshold t − Γ. Returns the first passing radius, or None (⊥). NSV16 GoodRadius in the
    AboveThreshold form of KSSU19 §5.2 (spec §3.8). Charged to ``release`` (step
    "good-radius" unless it names one)."""
    return radius_search(
        capped_count_score,
        X,
        t,
        radii,
        budget,
        sensitivity.capped_count_score(),
        beta=beta,
        constants=constants,
        max_points=max_points,
        release=release.named("good-radius"),
    )


def radius_search(
    score: Callable[[np.ndarray, int, np.ndarray], np.ndarray],
    X: Any,
    t: int,
    radii: Any,
    budget: Budget,
    score_sensitivity: float,
    *,
    beta: float,
    constants: str,
    max_points: int,
    release: Release,
    descending: bool = False,
    min_slack: float = 0.0,
) -> float | None:
    """ε-DP AboveThreshold (replace-one, n public) over the public ``radii`` (increasing, or
    decreasing if ``descending``) on ``score(rows, t, radii)`` (a capped score of the given
    sensitivity, at most t) with threshold t − Γ, Γ at least ``min_slack``·t (public); on a
    public random subsample of ``max_points`` rows (t rescaled) above that. The first passing
    radius, or None (⊥). Shared by GoodRadius and TerrificRadius; charged to ``release`` under
    its step."""
    eps = pure_epsilon(budget, "step")
    data = as_rows(X)
    t = check_positive_int(t, "t", minimum=1)
    grid = check_radii(radii)
    beta = check_probability(beta, "beta")
    max_points = check_positive_int(max_points, "max_points", minimum=1)
    if descending:
        grid = grid[::-1]
    gamma = above_threshold_slack(
        eps, grid.size, beta, sensitivity=score_sensitivity, constants=constants
    )
    sub, t_sub = _subsample(data, t, max_points, release.rng)
    gamma = max(gamma, float(min_slack) * t_sub)
    hit = above_threshold(
        score(sub, t_sub, grid).tolist(),
        t_sub - gamma,
        score_sensitivity,
        budget,
        accountant=release.accountant,
        noise=release.noise,
        step=release.step,
    )
    return None if hit is None else float(grid[hit])
