"""Post-processing of the localisation's released histograms (:mod:`.histogram_localise`):
the top bin, the scale bracket a released scale bin gives (and its narrowing by fitting the
released counts to the Gaussian model), and the centre and spread of a *tied* axis from its
released exact-value histogram. Every function here reads DP outputs and public quantities
only, so what it returns or raises is itself a DP output.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.stats import norm

from ..exceptions import EstimationFailed
from .histogram_keys import ZERO_KEY

# P(a <= log2|Z| < a + 1), Z ~ N(0, 1), is maximal (0.3227) at a = -0.557 and at least 0.12 for
# a in [-2.69, 0.63]; the bracket below is that interval rounded outwards.
_LOG_MODE = -0.557
_LOG_LO, _LOG_HI = -2.7, 0.65
# the bracket relative to its middle (the same for every axis, so the refinement's prior is public)
LO_RATIO, HI_RATIO = 2.0 ** (_LOG_MODE - _LOG_HI), 2.0 ** (_LOG_MODE - _LOG_LO)

# Scale fitted from the released counts of the top bin and its neighbours: the bracket is
# ±FIT_HALF_WIDTH in log2 around the fit (instead of the factor-10 top-bin bracket), used when
# at least two bins near the top were released and the counts fit the Gaussian model.
_FIT_GRID = np.linspace(-_LOG_HI, -_LOG_LO, 336)  # a − top over the top-bin bracket
_FIT_MAX_LOSS = 9.0  # per released bin, in units of the count's variance


def bracket(base: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(middle, lower, upper) of the per-axis scale bracket when log2 |Y| ∈ [base, base + 1)."""
    base = np.asarray(base, dtype=np.float64)
    r2 = math.sqrt(2.0)
    return (np.exp2(base - _LOG_MODE) / r2, np.exp2(base - _LOG_HI) / r2,
            np.exp2(base - _LOG_LO) / r2)


def fitted_log_scale(
    hist: dict[Any, int], top: int, m: int, tau: float, noise_sd: float
) -> float | None:
    """Post-processing of one released scale histogram: the a = log2(√2 σ) + u whose model
    counts m·P(j ≤ a + log2|Z| < j + 1) best fit the released counts of bins top−2..top+2
    (unreleased ones must lie below τ); None when fewer than two of them were released or
    the best fit is poor (e.g. discrete data)."""
    js = np.arange(top - 2, top + 3)
    obs = np.array([hist.get(int(j), -1) for j in js], dtype=float)
    if int(np.sum(obs >= 0)) < 2:
        return None
    a = top + _FIT_GRID
    lo = np.exp2(js[None, :] - a[:, None])
    expect = m * 2.0 * (norm.cdf(2.0 * lo) - norm.cdf(lo))
    var = expect + noise_sd**2
    got = obs[None, :] >= 0
    miss = np.maximum(expect - tau, 0.0)
    loss = np.where(got, (obs[None, :] - expect) ** 2, miss**2) / var
    total = loss.sum(axis=1)
    i = int(np.argmin(total))
    if not total[i] <= _FIT_MAX_LOSS * int(np.sum(got)):
        return None
    return float(a[i])


def top_bin(hist: dict[Any, int]) -> Any:
    """The key of the highest released count, the smallest on ties (deterministic
    post-processing of the release)."""
    best = max(hist.values())
    return min(k for k, c in hist.items() if c == best)


def scale_bin(hist: dict[Any, int]) -> Any:
    """The bin of an axis's released scale histogram that brackets its scale, or None for a
    *tied* axis (post-processing of the release only). Ties (0/1 flags, counts with many
    zeros, rounded values, duplicated rows) make many pair differences exactly 0: the scale is
    then the top released bin among the non-zero differences; when the zero bin is the only one
    released (a constant or nearly constant column), the axis has no usable scale: None."""
    top = top_bin(hist)
    if top != ZERO_KEY:
        return top
    nonzero = {key: c for key, c in hist.items() if key != ZERO_KEY}
    return top_bin(nonzero) if nonzero else None


def tied_axis(hist: dict[Any, int]) -> tuple[float, float]:
    """(centre, scale) of a tied axis from its released exact-value histogram (post-processing):
    the noisy-count-weighted mean and standard deviation of the released values. The scale is 0
    when one value was released: a degenerate (constant) axis located at that value."""
    vals = np.array([np.int64(k).view(np.float64) for k in hist], dtype=np.float64)
    wts = np.array(list(hist.values()), dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        centre = float(np.sum(wts * vals) / np.sum(wts)) if len(vals) > 1 else float(vals[0])
        spread = float(np.sqrt(np.sum(wts * (vals - centre) ** 2) / np.sum(wts)))
    return centre, (spread if len(vals) > 1 else 0.0)


# A tied axis with one released value is read as constant only when that value's released
# count leaves at most this fraction of the rows (beyond 3 noise standard deviations) elsewhere
CONSTANT_MAX_OTHER = 0.01


def off_fraction(hist: dict[Any, int], n: int, noise_sd: float) -> float:
    """The fraction of rows the one released value of a tied axis leaves elsewhere, beyond
    three noise standard deviations of its count (post-processing of the release)."""
    (count,) = hist.values()
    return (n - count - 3.0 * noise_sd) / n


def constant_var(hist: dict[Any, int], n: int, noise_sd: float) -> float:
    """The variance, in squared units of the column, a constant axis is released with: the
    fraction of rows away from the value that the released count leaves, plus one noise sd of
    that count (at least the noise sd over n) — so a rare flag read as constant still gives its
    held-out 1s a finite, moderate log-likelihood (post-processing). The floor is the count's
    noise, so it vanishes with the budget: a truly constant column's variance tends to np.var's
    0 (a floor of 1/n kept it at 1/n at every budget)."""
    (count,) = hist.values()
    return min(max((n - count + noise_sd) / n, noise_sd / n), 1.0)


def not_localised(k: int, hist: dict[Any, int], n: int, step: str) -> EstimationFailed:
    """The failure (a DP output: the released count, public n) of a tied axis whose one
    released value leaves more than CONSTANT_MAX_OTHER of the rows elsewhere, when no
    fallback release could give its spread."""
    (count,) = hist.values()
    return EstimationFailed(
        f"column {k}: about {min(max(count / n, 0.0), 1.0):.0%} of the rows share one value and "
        "the rest take values too rare and too spread out to be released at this budget, so "
        "the column cannot be localised. Give more rows or a larger epsilon; or bounds "
        "(mean_bound=, cov_bounds=, method='coinpress') or public rows",
        step=step,
    )
