"""DP per-column marginals: a DP range on a fixed magnitude grid, then a DP histogram CDF.

Our own method (issue 28), not from the seed papers; the histogram CDF is the classic one
(Dwork–Roth §3.3; MST/AIM measure the same 1-way marginals). Guarantee: ρ-zCDP under
replace-one neighbours (n public) for the releases together, ``rho_types + rho_range +
rho_hist``:

* **range** (columns without a stated range): the counts of every column's records in a fixed,
  data-independent grid of signed octaves ``±[2^e, 2^(e+1))`` (``e`` from
  :data:`E_MIN` to :data:`E_MAX`, plus one bin for magnitudes below ``2^E_MIN``), all columns
  released jointly with Gaussian noise (replace-one moves one record between two bins in each
  column: L2 sensitivity √(2m) for m columns). A column's range runs from the lowest to the
  highest octave whose noisy count passes a public threshold (always including the octave with
  the largest noisy count), widened by one octave on each side — post-processing.
* **histogram**: the counts in a grid of fine bins built from the released range (each octave
  split into sub-bins in proportion to its noisy count, of equal mass under a density linear
  between its neighbours' released densities; fewer bins for a continuous float column than
  for a discrete or gridded one, :func:`n_continuous_bins`: post-processing), released jointly for
  all columns with Gaussian noise (L2 sensitivity √(2m)); the CDF is the normalised
  cumulative sum of the noisy counts, those below two noise deviations past the column's
  support set to zero (a discrete column's support reaching, at each end, over the thin bins
  inside the released range less its margin whose summed counts pass a test per side, and
  to an isolated passing end bin when the bins between pass together:
  :data:`SUPPORT_END_BETA`, :func:`_support_end_runs`; a float column's, past its core's
  end, over the range's margin: :data:`SUPPORT_END_FLOAT`) and, for a float column or an
  integer one whose bins hold two or more levels each (:func:`_wide_integer_bins`), the bin
  densities shrunk towards their three-bin moving average by a James–Stein factor
  (smoothing where the differences are noise, not where a column's levels make them
  signal) — or averaged over a wider kernel when Stein's unbiased risk estimate says it
  beats that step (:func:`_diffused`). A float
  column whose released range has one sign gets one extra bin of the other sign (the *sign
  probe*, :data:`PROBE_FRACTION` of the range's far end wide), kept only when its noisy count
  passes :data:`PROBE_SIGMAS` deviations, its mass then spread over :data:`PROBE_OCTAVES`
  octaves: a sign's values spread over octaves too thin to pass the range threshold are not
  clipped to 0 (same release, same sensitivity: every record still counts in exactly one bin
  per column). Likewise a released range away from zero gets :data:`TAIL_OCTAVES` *tail
  bins* past its far end(s), one per octave (values past the last counted in it): a column's
  values beyond its range — a missing-value code 99 above counts of 0-13, too thin per
  octave to pass the range's threshold — are counted there instead of being clipped into
  the range's end bin; a tail bin keeps its mass when its count, combined by inverse variance
  with its octave's count in the range release, passes a cut at which a false alarm among the
  table's tail bins has probability ≤ :data:`TAIL_BETA` (and half a record), split over the
  bins in proportion to 2^−t, t octaves past the range (:data:`TAIL_GRADED`: a far bin needs
  more evidence); the range's bins keep the rest of the mass, and the records of a side's
  tail bins too thin to keep go back to the range's end bin, as clipping put them before the
  tail bins, when their summed counts pass a test of their own (:data:`TAIL_RETURN_BETA`;
  post-processing) — but for the part of them the unkept bins' own counts support, each less
  the universal threshold √(2 ln m) noise deviations and capped by the bins nearer the range
  and by the records of the range's end octave, which stays in the tail's octaves
  (:data:`TAIL_SPREAD`, :func:`_tail_spread`: a heavy tail thinning out past the range keeps
  values past it, not all winsorised at its end). Past a side's outermost bin holding mass,
  the tail is continued by a geometric shape (:data:`TAIL_DECAY` per octave,
  :func:`_tail_decay`), each bin at most the shape's fit to its own and the farther bins'
  counts, soft-thresholded at :data:`TAIL_DECAY_SIGMAS` of that fit's noise: a tail too
  thin per octave for any test keeps some synthetic values where its records lie.

**zoom** (when planned): the heaviest bins of each integer or gridded column's histogram, chosen
from its noisy counts, are split into sub-bins — one per level — and counted again
(:func:`_zoom`): a column whose values crowd into one bin of the first histogram (a year
1980-1987 in a released octave [1024, 2048)) gets its levels back. The first and the last bin
of a column's support are split too (:data:`ZOOM_END_BINS`: their mass, spread over a wide
bin, is what falls outside the data's range), and a bin whose levels are each too thin for
the zoom's cut is narrowed by *runs* of its sub-bins (:func:`_run_fits`: a piecewise-constant
fit of the sub-counts, the segments at its ends empty when their density falls significantly
below its densest segment's — SumHes's 26 years of ~80 rows, half of their synthetic values
outside the data's years before). The number of bins split
(:func:`zoom_bins`) and of sub-bins (:func:`zoom_split`) grow with n/σ; at a large budget the
zoom is *fine* (:func:`fine_zoom`): it splits continuous float columns' bins too and runs a
second round into the heaviest sub-bins of the first, so that a point mass — at the top of a
bin of thousands of integers, or a float column's √½ — lies in a sub-bin of its own.

Consistency: every guard against noise here vanishes with it; the bin counts are bounded by
memory (:data:`MAX_BINS`, reached at n/σ ≈ 1.7e7) and a zoom round's counts by time
(:data:`ZOOM_MAX_COUNTS`, secure noise's cost): resolution bounds, not guards, which a table
of 10⁴ rows and 6 columns reaches between ε = 10³ and 10⁴.

The ``"auto"`` columns' types come from a further release (:func:`release_types`, charged to
the plan's ``types`` share): integer, or float with a resolution from a public ladder (a
column of heights to 0.1 or a duration in half-years: its edges sit at half-steps of its grid
and its synthetic values on the grid, as an integer column's, instead of being spread between
its levels).

Every edge, CDF value and type rule is a function of DP releases, public n, the user's
declared types and bounds: the maps :meth:`Marginal.to_uniform` / :meth:`Marginal.from_uniform`
handle any record (clipped into the range), never raise on data, and are post-processing of
the releases for the synthetic side.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy.fft import dct, idct
from scipy.special import ndtri

from ..mechanisms import Release, gaussian_mechanism
from ..privacy import ZCDP
from ..sensitivity import histogram_l2

#: column kinds: real values, integers, 0/1 flags
KINDS = ("float", "integer", "binary")
#: octave exponents of the range grid: magnitudes up to 2^E_MAX (the largest value a fit
#: accepts, 1e150, is below 2^499) and down to 2^E_MIN (smaller magnitudes share one bin)
E_MAX = 499
E_MIN = -500
#: false-alarm probability of the range threshold, over all bins of all columns
RANGE_BETA = 0.05
#: octaves of magnitude between a passing octave and the range's for it to join at the
#: range threshold; a further one must pass the far threshold, false-alarm probability
#: :data:`RANGE_FAR_BETA` (see :func:`_octaves_of_range`)
RANGE_GAP = 2
RANGE_FAR_BETA = 1e-6
#: octaves below the range's largest magnitude times 2^-CENTRAL_OCTAVES merge into one bin
CENTRAL_OCTAVES = 8
#: the smallest jitter attenuation (:meth:`Marginal.jitter_attenuation`): that of a marginal
#: with one bin of mass (0: its scores carry no rank, only the jitter), whose correlations the
#: synthesizer sets to 0 instead of dividing them by it
ATTENUATION_FLOOR = 1e-3


@dataclass(frozen=True)
class Marginal:
    """A released marginal: a piecewise-linear CDF ``cdf`` at the strictly increasing bin
    ``edges``, the column's ``kind`` and the range its synthetic values keep. A float column
    of DP-released resolution ``step`` > 0 (:func:`release_types`) has its values on the grid
    ``step``·ℤ: edges at half-steps, synthetic values rounded to the grid. A ``smooth``
    marginal's inverse CDF is monotone cubic through the knots (edge, CDF) — the same bin
    masses, a density without steps at the edges — not piecewise linear."""

    kind: str
    edges: np.ndarray
    cdf: np.ndarray
    step: float = 0.0
    smooth: bool = False

    @property
    def grid(self) -> float:
        """The grid the column's values lie on: 1 for a discrete kind, ``step`` for a gridded
        float column, 0 for a continuous one."""
        return 1.0 if self.kind != "float" else self.step

    @property
    def low(self) -> float:
        return float(self.edges[0])

    @property
    def high(self) -> float:
        return float(self.edges[-1])

    def to_uniform(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Each value's CDF level in [0, 1], spread uniformly over its bin's CDF interval (the
        jittered probability integral transform: a value repeated by many records — a 0 in a
        float column, a discrete level — gets uniform levels, not one score shared by all);
        any float is handled, values outside the range count as its end points."""
        x = np.nan_to_num(np.asarray(x, dtype=np.float64), nan=self.low)
        x = np.clip(x, self.low, self.high)
        if self.grid > 0:
            x = np.clip(_on_grid(x, self.grid), self.low, self.high)
        k = np.clip(np.searchsorted(self.edges, x, side="right") - 1, 0, len(self.edges) - 2)
        lo, hi = self.cdf[k], self.cdf[k + 1]
        return np.asarray(lo + rng.uniform(0.0, 1.0, x.shape) * (hi - lo))

    def from_uniform(self, u: np.ndarray) -> np.ndarray:
        """The values at CDF levels ``u`` (the inverse CDF), of this column's kind and range."""
        u = np.clip(u, 0.0, 1.0)
        x = (_smooth_inverse_cdf(u, self.cdf, self.edges) if self.smooth
             else _inverse_cdf(u, self.cdf, self.edges))
        g = self.grid
        if g == 0:
            return np.clip(x, self.low, self.high)
        lo, hi = math.ceil(self.low / g - 1e-9), math.floor(self.high / g + 1e-9)
        return np.clip(np.rint(x / g), lo, hi) * g

    def jitter_attenuation(self) -> float:
        """The factor c² by which the jittered scores (:meth:`to_uniform`) shrink the
        column's correlations with the other columns' scores, from the released CDF alone:
        with bins of probability p_k between normal scores a_k < b_k, c² = Σ_k p_k m_k², m_k =
        E[Z | a_k < Z < b_k] = (φ(a_k) − φ(b_k)) / p_k (a Gaussian latent variable; near 1 for
        a column of many fine bins, well below for few levels or an atom)."""
        from scipy.stats import norm

        z = ndtri(np.clip(self.cdf, 0.0, 1.0))
        p = np.diff(self.cdf)
        dens = norm.pdf(z)  # 0 at ±inf
        keep = p > 1e-12
        m = (dens[:-1] - dens[1:])[keep] / p[keep]
        return float(np.clip(np.sum(p[keep] * m * m), ATTENUATION_FLOOR, 1.0))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "edges": self.edges.tolist(),
                               "cdf": self.cdf.tolist()}
        if self.step:
            out["step"] = self.step
        if self.smooth:
            out["smooth"] = True
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Marginal:
        edges = np.asarray(d["edges"], dtype=np.float64)
        cdf = np.asarray(d["cdf"], dtype=np.float64)
        ok = (d.get("kind") in KINDS and edges.ndim == 1 and edges.shape == cdf.shape
              and edges.size >= 2 and np.all(np.isfinite(edges)) and np.all(np.diff(edges) > 0)
              and np.all(np.isfinite(cdf)) and np.all(np.diff(cdf) >= 0)
              and cdf[0] == 0.0 and cdf[-1] == 1.0)
        step, smooth = d.get("step", 0.0), d.get("smooth", False)
        if not ok or not (isinstance(step, (int, float)) and math.isfinite(step) and step >= 0
                          and isinstance(smooth, bool)):
            raise ValueError("a marginal needs a kind, increasing edges, a CDF from 0 to 1, "
                             "a non-negative step and a boolean smooth")
        return cls(str(d["kind"]), edges, cdf, float(step), smooth)


def _smooth_inverse_cdf(u: np.ndarray, cdf: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Monotone cubic (PCHIP) inverse of the CDF through its knots, one piece per run of
    adjacent bins with mass (a bin of no mass is a jump of the inverse: one cubic across it
    spread the next bin's mass over it — the first bin with mass of a column whose range
    starts at 0 drew values from 0 up, macdonell's heights of 4.7-6.4 from 0.15); each bin
    keeps its mass, as with :func:`_inverse_cdf` (which a run of one bin uses)."""
    from scipy.interpolate import PchipInterpolator

    u = np.asarray(u, dtype=np.float64)
    out = _inverse_cdf(u, cdf, edges)
    full = np.flatnonzero(np.diff(cdf) > 0)
    if full.size < 2:
        return out
    cuts = np.flatnonzero(np.diff(full) > 1)
    for a, b in zip(np.concatenate([full[:1], full[cuts + 1]]),
                    np.concatenate([full[cuts], full[-1:]]), strict=True):
        if b > a:  # bins a..b, knots a..b+1, the CDF strictly rising through them
            inside = (u >= cdf[a]) & (u <= cdf[b + 1])
            if inside.any():
                out[inside] = PchipInterpolator(cdf[a:b + 2], edges[a:b + 2])(u[inside])
    return np.asarray(out)


def _on_grid(x: np.ndarray, step: float) -> np.ndarray:
    """``x`` rounded to the grid ``step``·ℤ."""
    return np.asarray(np.rint(x / step) * step)


def _inverse_cdf(u: np.ndarray, cdf: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Piecewise-linear inverse of the CDF (flat stretches, bins of no mass, are skipped)."""
    k = np.clip(np.searchsorted(cdf, u, side="left") - 1, 0, len(cdf) - 2)
    lo, hi = cdf[k], cdf[k + 1]
    frac = np.where(hi > lo, (u - lo) / np.where(hi > lo, hi - lo, 1.0), 0.5)
    return edges[k] + np.clip(frac, 0.0, 1.0) * (edges[k + 1] - edges[k])


# ----------------------------------------------------------------------------------------------
# The range grid
# ----------------------------------------------------------------------------------------------

#: bins per sign: octaves E_MIN..E_MAX; index 0 of the grid is the central bin |x| < 2^E_MIN
_N_OCT = E_MAX - E_MIN + 1
N_RANGE_BINS = 2 * _N_OCT + 1


def _octave_keys(x: np.ndarray) -> np.ndarray:
    """Each value's bin in the range grid, ordered by value: 0 .. N_RANGE_BINS-1, the central
    bin (|x| < 2^E_MIN, zero included) in the middle. Non-finite values go to the central bin
    (rows are validated finite before; this keeps the map total)."""
    x = np.nan_to_num(np.asarray(x, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
    _, e = np.frexp(np.abs(x))  # |x| in [2^(e-1), 2^e)
    octave = np.clip(e.astype(np.int64) - 1, E_MIN - 1, E_MAX)
    mid = _N_OCT
    pos = mid + 1 + (octave - E_MIN)
    neg = mid - 1 - (octave - E_MIN)
    key = np.where(x > 0, pos, neg)
    return np.where((octave < E_MIN) | (x == 0), mid, key)  # frexp(0) has exponent 0


def _bin_edges(key: int) -> tuple[float, float]:
    """The value interval of range-grid bin ``key``."""
    mid = _N_OCT
    if key == mid:
        return -(2.0 ** E_MIN), 2.0 ** E_MIN
    e = E_MIN + (abs(key - mid) - 1)
    lo, hi = math.ldexp(1.0, e), math.ldexp(1.0, e + 1)
    return (lo, hi) if key > mid else (-hi, -lo)


def range_threshold(sigma: float, n_columns: int, beta: float = RANGE_BETA) -> float:
    """The noisy count an octave must pass to enter a range: a Gaussian false alarm in any of
    the ``n_columns`` × :data:`N_RANGE_BINS` empty bins has probability ≤ ``beta``."""
    return float(sigma * ndtri(1.0 - beta / (n_columns * N_RANGE_BINS)))


def _octaves_of_range(noisy: np.ndarray, threshold: float,
                      far_threshold: float | None = None,
                      core: list[int] | None = None) -> tuple[int, int]:
    """Lowest and highest grid bins of a column's range from its noisy octave counts.

    The range grows from the octave of largest noisy count by the octaves passing
    ``threshold`` whose magnitude lies within :data:`RANGE_GAP` octaves of those already in
    (either sign; the central bin whenever it passes, and when the largest count is the
    central bin's, the largest passing octave); an octave further away joins only when
    it passes ``far_threshold`` (default: ``threshold``). A false alarm among the ~10³ empty
    octaves (probability :data:`RANGE_BETA` at ``threshold``) sits, almost surely, hundreds
    of octaves from the data: it no longer stretches the range to ±2^190 and the column's
    mass into one fine bin. ``core`` (optional, a list) gets the lowest and highest octaves
    before the margin."""
    far = threshold if far_threshold is None else far_threshold
    mid = _N_OCT
    best = int(np.argmax(noisy))
    passed = [int(k) for k in np.flatnonzero(noisy > threshold) if k != best]
    inside = [best] + [int(k) for k in np.flatnonzero(noisy > far) if k != best]
    mags = [abs(k - mid) for k in inside if k != mid]
    if not mags and passed:  # only the central bin (zeros, tiny values): the others grow
        top = max((k for k in passed if k != mid), key=lambda k: noisy[k], default=None)
        if top is not None:  # from the largest passing octave outside it
            inside.append(top)
            mags.append(abs(top - mid))
    grew = True
    while grew:
        grew = False
        for k in passed:
            if k in inside:
                continue
            if k == mid or any(abs(abs(k - mid) - m) <= RANGE_GAP for m in mags):
                inside.append(k)
                if k != mid:
                    mags.append(abs(k - mid))
                grew = True
    lo, hi = min(inside), max(inside)
    if core is not None:
        core.extend([lo, hi])
    # one octave of margin on each side, never across zero (a non-negative column stays so)
    lo = lo if lo == mid else max(lo - 1, 0)
    hi = hi if hi == mid else min(hi + 1, N_RANGE_BINS - 1)
    # a one-signed range spanning a factor of 4 or more reaches down to zero: its small values
    # (a day-of-year's 0..15, a count's 1s) sit in octaves too thin to pass the threshold
    if lo > mid and _bin_edges(lo)[0] * 4 <= _bin_edges(hi)[1]:
        lo = mid
    if hi < mid and -_bin_edges(hi)[1] * 4 <= -_bin_edges(lo)[0]:
        hi = mid
    return lo, hi


def _fine_edges(lo_key: int, hi_key: int, weights: np.ndarray, n_bins: int) -> np.ndarray:
    """Fine bin edges over the octaves ``lo_key..hi_key``: octaves far below the range's
    largest magnitude merge into one central bin; each octave gets sub-bins in proportion to
    its (noisy, non-negative) weight, at least one, of equal mass under a density running
    linearly across the octave between its ends' densities (the means of its own and its
    neighbours' weight per unit length): narrower where the mass is, not of equal width."""
    spans = [_bin_edges(k) for k in range(lo_key, hi_key + 1)]
    # a range that starts (ends) at the central bin is non-negative (non-positive): it starts
    # (ends) at 0, so an integer column's lowest value is 0, not -1
    if lo_key == _N_OCT < hi_key:
        spans[0] = (0.0, spans[0][1])
    if lo_key < _N_OCT == hi_key:
        spans[-1] = (spans[-1][0], 0.0)
    top = max(abs(spans[0][0]), abs(spans[-1][1]))
    small = top * 2.0 ** -CENTRAL_OCTAVES
    merged: list[tuple[float, float, float]] = []  # (lo, hi, weight)
    for (a, b), w in zip(spans, weights, strict=True):
        if max(abs(a), abs(b)) <= small and merged and max(abs(merged[-1][0]),
                                                           abs(merged[-1][1])) <= small:
            pa, _, pw = merged[-1]
            merged[-1] = (pa, b, pw + w)
        else:
            merged.append((a, b, float(w)))
    total = sum(max(w, 0.0) for *_, w in merged)
    dens = [max(w, 0.0) / (b - a) for a, b, w in merged]
    edges = [merged[0][0]]
    for i, (a, b, w) in enumerate(merged):
        share = max(w, 0.0) / total if total > 0 else 1.0 / len(merged)
        m = max(1, int(round(share * n_bins)))
        # the density at the octave's ends: the mean of its and its neighbour's (0 past the
        # range's ends), so a thin tail octave's bins crowd towards the mass next to it
        left = 0.5 * (dens[i] + (dens[i - 1] if i > 0 else 0.0))
        right = 0.5 * (dens[i] + (dens[i + 1] if i + 1 < len(merged) else 0.0))
        edges.extend(_equal_mass_cuts(a, b, left, right, m).tolist())
    return np.unique(np.asarray(edges))


def _equal_mass_cuts(a: float, b: float, left: float, right: float, m: int) -> np.ndarray:
    """The cuts splitting [a, b] into ``m`` pieces of equal mass under the density running
    linearly from ``left`` at ``a`` to ``right`` at ``b`` (equal widths when the two are
    equal or both 0), ``b`` last."""
    q = np.arange(1, m + 1) / m
    if m == 1 or left + right <= 0 or abs(right - left) <= 1e-9 * (left + right):
        t = q
    else:  # the mass up to a fraction t of the width is left·t + (right - left)·t²/2
        c = right - left
        t = (np.sqrt(np.maximum(left * left + c * (left + right) * q, 0.0)) - left) / c
    out = a + np.clip(t, 0.0, 1.0) * (b - a)
    out[-1] = b
    return np.asarray(out)


def _allocation_weights(noisy: np.ndarray, sigma: float) -> np.ndarray:
    """The range's octaves' weights in the fine bins' allocation: a noisy count counts as 0
    unless it passes a threshold at which a false alarm among the range's empty octaves has
    probability ≤ :data:`RANGE_BETA`. Clipping at 0 alone gave the hundreds of empty octaves
    merged into the central bin a weight of ≈ 0.4 σ each, summed: most of the fine bins,
    spent where the column has no values (post-processing)."""
    cut = sigma * ndtri(1.0 - RANGE_BETA / max(len(noisy), 1))
    return np.where(noisy >= cut, noisy, 0.0)


#: a released range of one sign (it starts or ends at 0) gets one extra fine bin of the other
#: sign, of width this fraction of the range's far end: the values of that sign that were too
#: thin per octave to pass the range threshold (xclara's 5.6 % of negatives over 6 octaves)
PROBE_FRACTION = 0.125
#: the sign probe's noisy count must pass this many noise deviations to be kept (a false
#: alarm, a column of one sign given values of the other, has probability ≈ 3e-5 per column)
PROBE_SIGMAS = 4.0


def _with_sign_probe(edges: np.ndarray) -> tuple[np.ndarray, int | None]:
    """A float column's fine edges with the sign probe (see :data:`PROBE_FRACTION`) added
    when the released range is one-signed, and the probe's bin index (post-processing)."""
    if edges[0] == 0.0:
        return np.concatenate([[-PROBE_FRACTION * edges[-1]], edges]), 0
    if edges[-1] == 0.0:
        return np.concatenate([edges, [-PROBE_FRACTION * edges[0]]]), len(edges) - 1
    return edges, None


def _resolve_sign_probe(edges: np.ndarray, counts: np.ndarray, probe: int,
                        sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """Keep the sign probe's bin if its noisy count passes :data:`PROBE_SIGMAS` deviations,
    else drop it (the column keeps its one-signed range): post-processing of the release."""
    if counts[probe] >= PROBE_SIGMAS * sigma:
        return edges, counts
    if probe == 0:
        return edges[1:], counts[1:]
    return edges[:-1], counts[:-1]


def _with_level_probe(edges: np.ndarray, grid: float, low: bool) -> tuple[np.ndarray, int]:
    """A discrete or gridded column's edges (at half-steps of ``grid``) with a sign probe of
    the other sign added to a released range that starts (``low``) or ends at 0: one bin of
    ⌈:data:`PROBE_FRACTION` × the range's far end⌉ grid values (at least one) past the
    level 0, and its index (post-processing of the range release). Kept as the float
    columns' probe is (:func:`_resolve_sign_probe`); not spread over octaves but split by
    the zoom into its levels (its end slots take the support's first or last bin): a
    missing-value code −1 below counts of 0-13, too thin for the range's threshold, was
    clipped to 0 (every record still counts in one bin: the same release)."""
    far = max(abs(float(edges[0])), abs(float(edges[-1])))
    w = max(1, math.ceil(PROBE_FRACTION * far / grid - 1e-9)) * grid
    if low:
        return np.concatenate([[float(edges[0]) - w], edges]), 0
    return np.concatenate([edges, [float(edges[-1]) + w]]), len(edges) - 1


#: a kept sign probe's mass is spread equally over this many octaves of magnitude, the
#: innermost reaching 0 (public shape: a sign's thin values are spread over octaves)
PROBE_OCTAVES = 6


def _spread_sign_probe(edges: np.ndarray, cdf: np.ndarray,
                       probe: int) -> tuple[np.ndarray, np.ndarray]:
    """Split a kept probe's bin into :data:`PROBE_OCTAVES` octaves of equal mass (the released
    probe mass, redistributed by a public shape: post-processing), not one uniform bin."""
    k = np.arange(1, PROBE_OCTAVES)
    if probe == 0:  # the probe is [edges[0], 0)
        inner = edges[0] * np.exp2(-k)
        mass = cdf[0] + (cdf[1] - cdf[0]) * k / PROBE_OCTAVES
        return (np.concatenate([edges[:1], inner, edges[1:]]),
                np.concatenate([cdf[:1], mass, cdf[1:]]))
    # the probe is [0, edges[-1])
    inner = edges[-1] * np.exp2(-(PROBE_OCTAVES - k))
    mass = cdf[-2] + (cdf[-1] - cdf[-2]) * k / PROBE_OCTAVES
    return (np.concatenate([edges[:-1], inner, edges[-1:]]),
            np.concatenate([cdf[:-1], mass, cdf[-1:]]))


#: a released range away from zero gets this many *tail* bins past its far end, one per octave
#: of magnitude (a factor of 2^TAIL_OCTAVES), counted in the same histogram release: a column's
#: values beyond its range — a missing-value code 99 or 999 above counts of 0-13, too few per
#: octave to pass the range's threshold — are measured there instead of being clipped into
#: the range's end bin (see :func:`_tail_masses`)
TAIL_OCTAVES = 8
#: false-alarm probability of the tail bins' cut, over all tail bins of the table. A false
#: alarm costs what the range's does not (a range's empty octave gets no mass; a tail bin's
#: noise, ~3 deviations, is put up to 2^8 times past the range): at 0.05, 5 of 60 fits at
#: ε = 1 (fair, wavesurge, macdonell, budget_food, noxemissions; 4 draws of 3 splits) kept
#: 0.7-2.2 % of a column's mass in a tail with no record; at 0.01 none did, while PSID's
#: codes were kept in 10 of 12 fits (kids' 2.5 % in 4, against 6 at 0.05) and fair's values
#: of 7 and 12 past its range in 3 (benchmarks/results/synth_peers_gaps.md)
TAIL_BETA = 0.01
#: TAIL_BETA split over the table's tail bins in proportion to 2^−t, t the bin's distance in
#: octaves past the range's far end (:func:`_tail_cuts`; Bonferroni over a weighted split:
#: the false alarms' probabilities still sum to ≤ TAIL_BETA), so that a near bin — psid's
#: codes 98/99 three octaves past 0-13, fair's 7 and 12 — is cut as before or more loosely,
#: while a far one, whose false alarm puts noise 2^t times past the range, needs more
#: evidence; False: the same share for every bin (session 44's rule). A bin 7 octaves out
#: kept at 3.4 deviations made wavesurge's R² boosted −180 on one draw (split 3,
#: random_state 3002; benchmarks/results/synth_peers_gaps.md, issue 28)
TAIL_GRADED = True
#: ... and a kept tail bin holds at least this many records (noisy): half a record, so that
#: as the noise vanishes a tail bin is kept exactly when it holds a record, while a false
#: alarm's probability falls to 0 instead of staying TAIL_BETA (a noise of one record put at
#: 2^8 times the range moves a column's variance however small its mass)
TAIL_MIN_COUNT = 0.5
#: false-alarm probability, per side of a column, of the test that gives the records of a
#: side's *unkept* tail bins back to the range's end bin (:func:`_tail_return`): their noisy
#: counts summed from the range outwards, each prefix sum against its own noise deviation
#: (√k of a bin's for k bins; Bonferroni over the prefixes) and :data:`TAIL_MIN_COUNT`. A
#: false alarm moves ~3√k deviations of noise into the range's end bin, within the range —
#: the error main's clipping made whenever a column's end bin's noise passed its 2σ cut
#: (2.3 % per end) — not to 2^8 times past it as a tail bin's would; so per side, not over
#: the table's tail bins as :data:`TAIL_BETA`; the expected noise moved (a false alarm's
#: ~7 deviations at ~0.6 % per side, β/m to β by Bonferroni) about main's (σφ(2) per end).
#: 0: no record is given back (the tail bins' unkept records are dropped, as on branch
#: synpeers3). Measured (benchmarks/results/synth_peers_gaps.md, 3 splits × 12 draws):
#: forbes2000's linear R² 0.034 → 0.232 (main 0.280), psid's −0.465 → −0.400; the cost is
#: the false alarm's mass, up to ~18 % of a small table's rows at the range's end
#: (immigration, 1,120 rows, one fit in 36: median linear R² 0.042 → −0.162)
TAIL_RETURN_BETA = 0.01


def _tail_edges(edge: float, key: int, grid: float, up: bool) -> tuple[np.ndarray, list[int]]:
    """The tail bins' edges past a range's far ``edge`` (its top when ``up``, else its bottom,
    already snapped to half-steps of ``grid`` when > 0), the first being ``edge``, and each
    tail bin's octave key in the range grid (the octaves past range-grid bin ``key``, the
    range's far end, at most :data:`TAIL_OCTAVES`, within the grid). An octave's edge is
    snapped to the half-step below the octave's first grid value, so that a tail bin holds
    that octave's grid values (the first tail bin starts at ``edge``)."""
    out, keys = [float(edge)], []
    for t in range(1, TAIL_OCTAVES + 1):
        k = key + t if up else key - t
        if not 0 <= k < N_RANGE_BINS or k == _N_OCT:
            break
        lo, hi = _bin_edges(k)
        far = hi if up else lo
        if grid > 0:
            far = (math.ceil(far / grid - 1e-9) - 0.5) * grid if up else (
                math.floor(far / grid + 1e-9) + 0.5) * grid
        if (far <= out[-1]) if up else (far >= out[-1]):
            continue
        out.append(far)
        keys.append(k)
    return np.asarray(out if up else out[::-1]), (keys if up else keys[::-1])


def _tail_combined(hist: np.ndarray, sigma_hist: float, octave: np.ndarray,
                   sigma_range: float) -> tuple[np.ndarray, float]:
    """The tail bins' counts, each bin's histogram count combined by inverse noise variance
    with its octave's count in the range release (the same records, up to the first tail
    bin's partial octave), and the combination's noise deviation (post-processing)."""
    w_h, w_r = 1.0 / sigma_hist ** 2, 1.0 / sigma_range ** 2
    return (hist * w_h + octave * w_r) / (w_h + w_r), 1.0 / math.sqrt(w_h + w_r)


def _tail_masses(hist: np.ndarray, sigma_hist: float, octave: np.ndarray, sigma_range: float,
                 cut: float | np.ndarray) -> np.ndarray:
    """The tail bins' counts (post-processing): :func:`_tail_combined`, kept when the
    combination passes ``cut`` (in units of its noise deviation; one per bin, or one for
    all) and :data:`TAIL_MIN_COUNT`, else 0."""
    both, sd = _tail_combined(hist, sigma_hist, octave, sigma_range)
    return np.where(both >= np.maximum(np.asarray(cut) * sd, TAIL_MIN_COUNT), both, 0.0)


def _tail_cuts(distances: list[np.ndarray], beta: float, graded: bool) -> list[np.ndarray]:
    """Each tail bin's cut in noise deviations (one array per side, as ``distances``: the
    bins' distances in octaves past the range's far end, ≥ 1), at which a false alarm among
    all the table's tail bins has probability ≤ ``beta`` (Bonferroni): bin i of weight w_i
    gets the one-sided false-alarm probability ``beta``·w_i/Σw, w_i = 2^−t_i when ``graded``
    (far bins need more evidence, near ones less), else 1 (one cut for all). The cuts depend
    on the released ranges only (post-processing); times a noise deviation, they vanish with
    it."""
    w = [np.exp2(-np.asarray(t, dtype=np.float64)) if graded
         else np.ones(len(t)) for t in distances]
    total = sum(float(x.sum()) for x in w)
    if not total > 0:
        return [np.zeros(0) for _ in distances]
    return [np.asarray(ndtri(1.0 - beta * x / total), dtype=np.float64) for x in w]


def _tail_return(both: np.ndarray, kept: np.ndarray, sd: float, beta: float,
                 outward: bool = True) -> float:
    """The records a side's *unkept* tail bins give back to the range's end bin (records;
    post-processing). ``both``: the side's tail bins' combined noisy counts (each of noise
    deviation ``sd``, independent), in order from the range outwards when ``outward`` (a top
    side; a bottom side's are stored farthest first); ``kept``: their kept masses. The bins
    whose kept mass is 0, from the range outwards, are summed over each prefix of k of them
    (k = 1..m: a tail thins out past the range, so its first octaves hold most of it); the
    largest prefix sum that passes its own deviation √k·sd times the cut at false-alarm
    ``beta``/m (Bonferroni over the m prefixes) and :data:`TAIL_MIN_COUNT` is given back,
    else 0. Main clipped a record past the range into the range's end bin; a tail bin too
    thin to keep would otherwise drop it — forbes2000's money columns, 6-17 % of the rows
    over 2-5 octaves, each too thin, had that mass spread over the whole range
    (benchmarks/results/synth_peers_gaps.md). A side without records past the range gives
    something back with probability ≤ ``beta``, and as the noise vanishes nothing (half a
    record must pass): consistent."""
    rest = both[kept <= 0]
    if rest.size == 0 or not beta > 0:
        return 0.0
    if not outward:
        rest = rest[::-1]
    k = np.arange(1, rest.size + 1)
    sums = np.cumsum(rest)
    cut = float(ndtri(1.0 - beta / rest.size))
    ok = sums >= np.maximum(cut * np.sqrt(k) * sd, TAIL_MIN_COUNT)
    return float(sums[ok].max()) if ok.any() else 0.0


#: the records of a side's unkept tail bins whose prefix sums pass :func:`_tail_return`'s
#: test are spread over those bins as far as their counts support a thinning tail
#: (:func:`_tail_spread`), the rest given back to the range's end bin; False: all given back
#: (session 43's rule). The spread bins cost a false alarm more than the end bin (values past
#: the range, not at its end): the shrinkage and the caps of :func:`_tail_spread` and
#: :func:`_with_tails` keep it to a tail the counts support next to a populated range end.
#: Measured (benchmarks/results/synth_peers_gaps.md, 3 splits × 12 draws): forbes2000's
#: mean loglik −45.4 → −40.4, linear R² 0.232 → 0.284, boosted 0.343 → 0.376
TAIL_SPREAD = True


def _tail_spread(both: np.ndarray, kept: np.ndarray, sd: float, cut: float,
                 outward: bool = True) -> np.ndarray:
    """The records of a side's unkept tail bins, spread over them when their prefix sums
    pass ``cut`` (post-processing; zeros where nothing is spread). The unkept bins from the
    range outwards are summed over each prefix of k of them (as :func:`_tail_return`), each
    sum against its deviation √k·sd times ``cut`` and :data:`TAIL_MIN_COUNT`; of those that
    pass, the one of largest sum/√k (the most significant: far bins of noise alone lower it)
    is spread: each of its bins gets its combined count ``both`` less the universal
    threshold √(2 ln m)·sd (m unkept bins: the largest of m noises' expected size, so that
    bins of noise alone get ~nothing), at least 0 and capped by those nearer the range (a
    tail thins out, noise does not: a bin at or below the threshold ends the spread).
    :func:`_with_tails` caps them again by the range's end octave's records; what they do
    not hold of the given-back records stays at the range's end. Consistent: the threshold
    vanishes with sd, and every bin holding half a record is kept before any spread."""
    idx = np.flatnonzero(kept <= 0)
    out = np.zeros(len(kept))
    if idx.size == 0:
        return out
    if not outward:
        idx = idx[::-1]
    k = np.arange(1, idx.size + 1)
    sums = np.cumsum(both[idx])
    ok = sums >= np.maximum(cut * np.sqrt(k) * sd, TAIL_MIN_COUNT)
    if not ok.any():
        return out
    best = int(np.argmax(np.where(ok, sums / np.sqrt(k), -np.inf)))
    sel = idx[:best + 1]
    shrink = math.sqrt(2.0 * math.log(idx.size)) * sd if idx.size > 1 else 0.0
    out[sel] = np.minimum.accumulate(np.maximum(both[sel] - shrink, 0.0))
    return out


#: the tail past a side's outermost bin holding mass (kept or spread; the range's end when
#: none) is continued by a geometric one, each octave holding :data:`TAIL_DECAY` times the
#: one before (:func:`_tail_decay`): its first bin's count is the least-squares fit of that
#: shape to the side's remaining noisy tail counts (pooled: most of the weight on the first
#: bins), soft-thresholded at :data:`TAIL_DECAY_SIGMAS` of the fit's own noise deviation,
#: each later bin also at most its own such fit (:data:`TAIL_DECAY_NESTED`), and capped, as
#: the spread, by the records of the range's end octave (:func:`_with_tails`). A heavy tail
#: too thin per octave for the tail cut (forbes2000's money columns: 71, 20, 4 records past
#: the range against 22.7 records of noise per bin) keeps synthetic rows past the range,
#: where held-out rows lie; a side without records past the range gets, in expectation,
#: σ_a·(φ(z) − z·(1 − Φ(z))) records (≈ 1.8 at z = 1 for forbes2000's noise), and nothing
#: as the noise vanishes. 1/8 (a power law of α = 3 per octave): at 1/4 (without the nested
#: cap) forbes2000's linear R² fell 0.514 → 0.283 (targets continued 20-40 sd out while
#: their regressors were not; benchmarks/results/synth_peers_gaps.md, session 46). 0: off
#: (session 45's rule)
TAIL_DECAY = 0.125
#: the soft threshold of :func:`_tail_decay`'s fit, in its noise deviations
TAIL_DECAY_SIGMAS = 1.0
#: each continued bin also at most its own evidence: the shape's soft-thresholded fit to
#: it and the bins past it (a light tail's first bin of real records is not continued into
#: octaves of none)
TAIL_DECAY_NESTED = True
#: ... and past a bin holding h records (kept or spread), the continuation holds at most
#: ratio·h per bin (a tail thins out past its last measured octave too: at ε = 4, where the
#: tail cut keeps forbes2000's octaves up to the data's largest values, the continuation put
#: synthetic values one or two octaves past them: corr MAE 0.154 → 0.164, capped 0.162, 3
#: splits × 6 draws; at ε = 1 on six fresh splits linear R² 0.036 uncapped, 0.231 capped,
#: main 0.140 — benchmarks/results/synth_peers_gaps.md)
TAIL_DECAY_AFTER_HELD = True


def _tail_decay(both: np.ndarray, held: np.ndarray, sd: float, ratio: float, sigmas: float,
                outward: bool = True) -> np.ndarray:
    """A geometric continuation of a side's tail (records per tail bin; post-processing).
    ``both``: the side's combined noisy tail counts (each of noise deviation ``sd``,
    independent), in order from the range outwards when ``outward`` (a bottom side's are
    stored farthest first); ``held``: the masses the bins already hold (kept or spread).
    Past the outermost bin holding mass (all bins when none does), bin i (i = 0, 1, ...
    outwards) gets a_0·``ratio``^i, a_i = max(â_i − ``sigmas``·sd_â_i, 0), â_i = Σ_k y_(i+k)
    r^k / Σ r^2k the least-squares fit of the shape to the counts y of bins i, i + 1, ...
    (noise deviation sd_â_i = sd / √Σ r^2k) — with :data:`TAIL_DECAY_NESTED` at most a_i
    and the bin before it (each bin's own evidence: a light tail's first octave of real
    records is not continued into octaves of none), with :data:`TAIL_DECAY_AFTER_HELD` at
    most ``ratio`` times the records of the outermost held bin; the continuation ends at the
    first bin below :data:`TAIL_MIN_COUNT`. Zeros elsewhere, and everywhere when ``ratio`` ≤ 0.
    Consistent: the threshold is a multiple of sd, and as the noise vanishes every bin
    holding half a record is kept by the tail cut, the rest hold no record."""
    out = np.zeros(len(both))
    if not ratio > 0 or len(both) == 0:
        return out
    order = np.arange(len(both)) if outward else np.arange(len(both))[::-1]
    nz = np.flatnonzero(np.asarray(held)[order] > 0)
    first = int(nz[-1]) + 1 if nz.size else 0
    idx = order[first:]
    if idx.size == 0:
        return out
    y = np.asarray(both, dtype=np.float64)[idx]
    fits = np.zeros(idx.size)
    for i in range(idx.size):  # the shape's fit to bins i, i + 1, ... (each bin's own evidence)
        w = ratio ** np.arange(idx.size - i, dtype=np.float64)
        norm = float(np.sum(w * w))
        fits[i] = max(float(np.sum(y[i:] * w)) / norm - sigmas * sd / math.sqrt(norm), 0.0)
    mass = fits[0] * ratio ** np.arange(idx.size, dtype=np.float64)
    if TAIL_DECAY_NESTED:
        mass = np.minimum.accumulate(np.minimum(mass, fits))
    if TAIL_DECAY_AFTER_HELD and nz.size:
        # a tail thins out: past a bin holding h records, the next holds at most r·h
        mass = np.minimum(mass, ratio * float(np.asarray(held)[order][nz[-1]]))
    # as a kept tail bin, a continued one holds at least TAIL_MIN_COUNT records: the shape
    # ends where its mass falls below (no rows 2^8 times past the range for a tenth of one)
    out[idx] = np.where(np.cumprod(mass >= TAIL_MIN_COUNT) > 0, mass, 0.0)
    return out


def _end_octave_mass(edges: np.ndarray, cdf: np.ndarray, bound: float, up: bool) -> float:
    """The CDF's mass in the bins of ``edges`` whose middles lie past ``bound`` (at or
    above it when ``up``, else at or below): a range's end octave (post-processing)."""
    mid = 0.5 * (np.asarray(edges[:-1]) + np.asarray(edges[1:]))
    inside = (mid >= bound) if up else (mid <= bound)
    return float(np.sum(np.diff(np.asarray(cdf, dtype=np.float64))[inside]))


_Tail = tuple[np.ndarray, np.ndarray, float] | tuple[np.ndarray, np.ndarray, float, np.ndarray,
                                                    float]


def _with_tails(edges: np.ndarray, cdf: np.ndarray, top: _Tail | None, bottom: _Tail | None,
                n: int) -> tuple[np.ndarray, np.ndarray]:
    """A marginal's edges and CDF with its tail bins (``(edges, kept masses, given back[,
    spread masses, end octave's inner bound])`` per side, in records;
    :func:`_released_tails`): the spread masses (:func:`_tail_spread`), each capped by the
    records of the range's end octave (its CDF mass past the bound, times n: a range whose
    end octave is empty spreads nothing past it), join the kept ones; the kept tail bins and
    the records given back to the range's end bin (:func:`_tail_return`) get their share of
    public n (at most half), the range the rest in its own proportions, its end bin on a
    side also that side's given-back share; tail bins past the last with mass are dropped,
    those between it and the range keep no mass (post-processing)."""
    sides: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    back = {"top": 0.0, "bottom": 0.0}
    for name, tail in (("top", top), ("bottom", bottom)):
        if tail is None:
            continue
        e, m, b = tail[0], tail[1], float(tail[2])
        if len(tail) == 5:
            cap = n * _end_octave_mass(edges, cdf, float(tail[4]), up=name == "top")
            spread = np.minimum(tail[3], max(cap, 0.0))
            m, b = m + spread, b - float(spread.sum())
        back[name] = max(b, 0.0)
        nz = np.flatnonzero(m > 0)
        if nz.size == 0:
            continue
        if name == "top":
            sides[name] = (e[: nz[-1] + 2], m[: nz[-1] + 1])
        else:
            sides[name] = (e[nz[0]:], m[nz[0]:])
    total = sum(float(m.sum()) for _, m in sides.values()) + back["top"] + back["bottom"]
    if not total > 0:
        return edges, cdf
    share = min(total / n, 0.5)
    scale = share / total
    low = float(sides["bottom"][1].sum()) * scale if "bottom" in sides else 0.0
    mass = np.diff(np.asarray(cdf, dtype=np.float64)) * (1.0 - share)
    mass[0] += back["bottom"] * scale
    mass[-1] += back["top"] * scale
    core = low + np.concatenate([[0.0], np.cumsum(mass)])
    out_e, out_c = [np.asarray(edges)], [core]
    if "bottom" in sides:
        e, m = sides["bottom"]
        out_e.insert(0, e[:-1])
        out_c.insert(0, np.concatenate([[0.0], np.cumsum(m) * scale])[:-1])
    if "top" in sides:
        e, m = sides["top"]
        out_e.append(e[1:])
        out_c.append(core[-1] + np.cumsum(m) * scale)
    c = np.concatenate(out_c)
    c[0], c[-1] = 0.0, 1.0
    return np.concatenate(out_e), np.minimum(np.maximum.accumulate(c), 1.0)


def _few_levels(core: tuple[float, float] | None) -> bool:
    """Whether a discrete column's released range less its margin spans at most
    :data:`MARGIN_LEVELS` integers (a flag, a small code): its margin bins pass the stricter
    :data:`MARGIN_BETA` cut (:func:`_cdf_and_smoothness`) and its tails give back nothing to
    an empty end bin (:func:`_margin_give_back`)."""
    return core is not None and core[1] - core[0] <= MARGIN_LEVELS


def _margin_give_back(tail: _Tail | None, cdf: np.ndarray, up: bool) -> _Tail | None:
    """A few-level discrete column's side of tail bins (:func:`_released_tails`) with nothing
    given back (:func:`_tail_return`) when the range's end bin on that side holds no released
    mass — it lies in the range's margin, whose bins pass the stricter :data:`MARGIN_BETA`
    cut, and none passed. The given-back records go to the range's end bin; there they
    would be a value past an empty stretch that the margin's cut rejected (UnempDur's 0/1
    ``censor4`` at ε = 1, split 2 of ``benchmarks/synth_corpus.py``: a give-back of ~380
    noise records, a 1 % false alarm of the side's test, put 14 % of its synthetic values at
    4, past empty 2 and 3; benchmarks/results/synth_peers.md). A side whose end bin holds
    mass, and the kept and spread tail bins, are unchanged; so is every float column and
    every column of more levels (a scale of 1-7 still clips its records past the range into
    the range's end, as main did). Post-processing of released values."""
    if tail is None:
        return None
    end = float(np.diff(np.asarray(cdf, dtype=np.float64))[-1 if up else 0])
    if end > 0 or not float(tail[2]) > 0:
        return tail
    return tail[:2] + (0.0,) + tail[3:]


def _released_tails(noisy: np.ndarray, tails: list[dict[str, tuple[np.ndarray, list[int]]]],
                    ranged: dict[int, tuple[np.ndarray, int, int]], sigma_hist: float,
                    sigma_range: float) -> list[dict[str, _Tail]]:
    """Each column's tail bins per side — (edges, kept masses, records given back to the
    range's end bin[, spread masses, the inner bound of the range's end octave]) — from the
    histogram release's noisy tail counts ``noisy`` (bottom then top, column by column, as
    released) and the range release's noisy octave counts: :func:`_tail_masses` at the cuts
    at which a false alarm among the table's tail bins has probability ≤ :data:`TAIL_BETA`
    (:func:`_tail_cuts`, graded by distance when :data:`TAIL_GRADED`),
    :func:`_tail_return` of the others at :data:`TAIL_RETURN_BETA` per side, and, when
    :data:`TAIL_SPREAD`, :func:`_tail_spread` at that cut with Bonferroni over all the side's
    tail bins (never looser than the give-back's, over its unkept ones: a spread comes with a
    give-back, and its capped masses are taken from the given-back records by
    :func:`_with_tails`). Post-processing;
    each cut, in noise deviations, times a deviation that vanishes with the noise."""
    total = sum(len(k) for t in tails for _, k in t.values())
    out: list[dict[str, _Tail]] = [{} for _ in tails]
    if total == 0:
        return out
    # each bin's distance in octaves past its range's far end (keys of the released range)
    order = [(j, side) for j, t in enumerate(tails) for side in ("bottom", "top") if side in t]
    dist = [np.abs(np.asarray(tails[j][side][1], dtype=np.int64)
                   - (ranged[j][2] if side == "top" else ranged[j][1])) for j, side in order]
    cuts = dict(zip(order, _tail_cuts(dist, TAIL_BETA, TAIL_GRADED), strict=True))
    start = 0
    for j, t in enumerate(tails):
        for side in ("bottom", "top"):
            if side not in t:
                continue
            e, keys = t[side]
            h = noisy[start:start + len(keys)]
            start += len(keys)
            octave = ranged[j][0][np.asarray(keys, dtype=np.int64)]
            kept = _tail_masses(h, sigma_hist, octave, sigma_range, cuts[(j, side)])
            both, sd = _tail_combined(h, sigma_hist, octave, sigma_range)
            up = side == "top"
            # (a side of no tail bins — a range reaching E_MAX's octave — spreads nothing)
            spread = _tail_spread(both, kept, sd, float(ndtri(1.0 - TAIL_RETURN_BETA / max(
                len(keys), 1))), outward=up)
            back = _tail_return(both, kept, sd, TAIL_RETURN_BETA, outward=up)
            if not (TAIL_SPREAD and TAIL_RETURN_BETA > 0):
                spread = np.zeros(len(keys))
            spread = spread + _tail_decay(both, kept + spread, sd, TAIL_DECAY,
                                          TAIL_DECAY_SIGMAS, outward=up)
            if spread.sum() > 0:
                end = ranged[j][2] if up else ranged[j][1]
                out[j][side] = (e, kept, back, spread, _bin_edges(end)[0 if up else 1])
                continue
            out[j][side] = (e, kept, back)
    return out


def _integer_edges(edges: np.ndarray, n_bins: int, step: float = 1.0) -> np.ndarray:
    """Edges at half-steps of the grid ``step``·ℤ (half-integers for an integer column), so
    that each value on the grid falls inside one bin: one bin per grid value when the range
    holds few, else the given edges snapped to half-steps — each to the half-step above
    it, the lowest to the half-step below it, so that a grid value on the range's lowest edge
    stays inside. Until 2026-11-30 the lowest edge was snapped up as the others: a
    non-negative column of many levels, whose range starts at 0, lost its zeros to 1 (PSID's
    earnings and hours, a quarter of the rows 0: none 0 in the synthetic rows)."""
    lo, hi = math.floor(edges[0] / step), math.ceil(edges[-1] / step)
    if hi - lo + 1 <= max(n_bins, 2):
        return np.arange(lo - 0.5, hi + 1.0, 1.0) * step
    snapped = np.unique(np.floor(edges / step) + 0.5)
    snapped[0] = min(snapped[0], math.ceil(edges[0] / step) - 0.5)
    return np.asarray(snapped * step)


# ----------------------------------------------------------------------------------------------
# The release
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MarginalPlan:
    """Public inputs of the marginals' release: per column its kind (``"auto"``: float or
    integer, decided by :func:`release_types`) and stated range (None: released), the number
    of fine bins (``n_bins``; ``n_bins_continuous`` for a continuous float column, 0: the
    same), and the zCDP budgets of the releases (``rho_zoom`` > 0: the zoom into the heaviest
    bins, :func:`_zoom`)."""

    kinds: Sequence[str]
    bounds: Sequence[tuple[float, float] | None]
    n_bins: int
    rho_range: float
    rho_hist: float
    rho_types: float = 0.0
    n_bins_continuous: int = 0
    rho_zoom: float = 0.0

    def bins_for(self, kind: str, step: float) -> int:
        """The fine bins of a column of ``kind`` and released resolution ``step``."""
        if kind == "float" and step == 0 and self.n_bins_continuous > 0:
            return self.n_bins_continuous
        return self.n_bins


def histogram_sigma(rho_hist: float, n_columns: int) -> float:
    """The noise deviation of each fine bin's count: the joint release of ``n_columns``
    histograms at ``rho_hist`` (L2 sensitivity √(2m))."""
    return math.sqrt(2.0 * n_columns) / math.sqrt(2.0 * rho_hist)


#: most fine bins per column (and sub-bins per zoomed bin): a bound on memory, time and the
#: model file's size (two floats per bin), not a guard against noise. The bin counts below
#: grow with n/σ, so that the marginals sharpen as the noise vanishes; they reach this bound
#: only at n/σ ≈ 1.7e7 ((n/σ)^(2/3) = 2^16). At 128 bins (the cap until 2026-11-29) a year
#: column's eight levels in [1980, 1987] shared one bin of a released octave [1024, 2048) at
#: any budget, its synthetic years spread over 1977-1992 even at ε = 1e4; at 4,096 (the cap
#: until the next change of 2026-11-29) the bins stopped narrowing at n/σ ≈ 2.6e5
#: (benchmarks/synth_corpus.py)
MAX_BINS = 2**16


def n_fine_bins(n: int, rho_hist: float, n_columns: int) -> int:
    """Fine bins per column from public facts: about (n/σ)^(2/3) (the bin width that balances
    the histogram's binning error with its cumulative noise), between 8 and :data:`MAX_BINS`."""
    sigma = histogram_sigma(rho_hist, n_columns)
    return int(np.clip(round((n / sigma) ** (2.0 / 3.0)), 8, MAX_BINS))


#: factor of the continuous float columns' fine bins (:func:`n_continuous_bins`)
CONTINUOUS_BINS_FACTOR = 3.0


def n_continuous_bins(n: int, rho_hist: float, n_columns: int) -> int:
    """Fine bins of a continuous float column from public facts: about
    3 (n/σ)^(2/5), between 8 and :data:`MAX_BINS`. An interval's released mass has noise
    variance ∝ B σ²/n² over B bins, and the error of the piecewise-linear CDF within the bins
    of a smooth density is ∝ B⁻² on an interval's mass: the two balance at B ∝ (n/σ)^(2/5) —
    fewer bins than :func:`n_fine_bins` gives the discrete and gridded columns, whose levels need
    them."""
    sigma = histogram_sigma(rho_hist, n_columns)
    return int(np.clip(round(CONTINUOUS_BINS_FACTOR * (n / sigma) ** 0.4), 8, MAX_BINS))


#: a discrete column's bins in the released range's margin (the octave added on each side,
#: where no octave passed the range's threshold) pass the cut at which a false alarm among
#: its bins has probability ≤ this: at RANGE_BETA = 0.05 there, 0/1 integer columns of
#: benchmarks/synth_corpus.py's tables gave 2s at ε = 1 (immi1's gender: 65 in 1,988 rows)
MARGIN_BETA = 0.01
#: ... when the range less its margin spans at most this many integers (a flag, a small code:
#: a column of many levels keeps its thin tails there — weeks worked 5-52, mostly 40-52, lost
#: every week below 44 to the stricter cut)
MARGIN_LEVELS = 4
#: a fine bin's noisy count below this many noise deviations, outside the bins that pass it,
#: counts as empty (for a discrete column, one bin per value over a range widened by an
#: octave, the cut is at least the one at which a false alarm among its bins has probability
#: ≤ :data:`RANGE_BETA`; a float column's fine bins follow its octaves' mass instead)
EMPTY_BIN_SIGMAS = 2.0
#: false-alarm probability, per end of a discrete (or levelled) column's support, of the test
#: that extends the support over the bins just past its end that lie inside the released
#: range less its margin (:func:`_support_end_runs`): the bins past the end, from it
#: outwards, summed over each prefix of k of them against √k noise deviations times the cut
#: at this probability over the prefixes (Bonferroni), the most significant passing prefix
#: joining the support (its counts clipped at 0, as an interior bin's). The per-bin cut
#: grows with the number of bins (2.8 σ for 20): train's prices' last two bins inside the
#: range, 172 and 76 records (7.3 % and 3.2 %), noisy 122 and 92 against a cut of 126, were
#: dropped and the synthetic prices stopped at 4,943 while 10 % of the real ones are ≥ 5,000
#: (benchmarks/results/synth_peers.md, session 48). 0: off (the per-bin cut alone, main
#: until session 48). At 0.01 (:data:`TAIL_RETURN_BETA`'s per-side rule, not tuned) with
#: the bridge below, on benchmarks/synth_corpus.py's 56 tables at ε = 1, seeds 0-2, the mean
#: 1-way TV fell 0.0845 → 0.0837, 0.0804 → 0.0796, 0.0840 → 0.0820 (38 fits better, 3
#: worse), the 2-way TV's too; each of the 55 runs of bins it added holds records; ε = 1e4 changed
#: 1 fit of 56 (benchmarks/results/synth_peers_gaps.md)
SUPPORT_END_BETA = 0.01
#: ... and a bin that passed the per-bin cut but was dropped as an isolated end
#: (:func:`_without_isolated_ends`) joins the support, with the gap before it, when the gap's
#: bins together pass a test at SUPPORT_END_BETA (``reach`` of :func:`_support_end_runs`;
#: discrete columns of more than :data:`MARGIN_LEVELS` levels). UnempDur's tenure at split 1
#: of benchmarks/synth_corpus.py: bins 6.5-8.5 and 8.5-10.5 (118 and 92 records) just below
#: the cut, 10.5-16.5 (173) past it but isolated; the synthetic tenures stopped at 8 of 0-40
#: (the table's 1-way TV 0.077 → 0.070 bridged). On the corpus (ε = 1, seeds 0-2) it changed
#: 3 fits of 168, each 1-way TV better, and added no bin without records. False: the core
#: only
SUPPORT_END_BRIDGE = True
#: a float column (not one bin per grid value) whose support reaches its core's end gets
#: the same per-side run test through the released range's margin (:func:`_support_end_runs`
#: with ``margin``): there the per-bin cut (:data:`EMPTY_BIN_SIGMAS`) and the isolated-end
#: rule's Bonferroni drop a thin tail's bins one by one — forbes2000's sales (split 0,
#: random_state 3): 140 records in [16, 32), the margin octave, noisy 49.5 and 52.8 in its
#: two bins against a cut of 52.6, so the support, and every synthetic value, stopped at 16
#: while 15 % of the real values lie above. Through the core too, macdonell's heights (split
#: 2, random_state 2001) took a 1 % false alarm of nine bins of noise: corr MAE 0.030 → 0.073
#: (benchmarks/results/synth_peers_gaps.md, session 51). On: forbes2000's mean loglik
#: −26.39 → −25.82 and linear R² 0.530 → 0.535 (3 splits × 4 draws), none of the 13 held-out
#: peers' tables moved, the corpus (56 tables, seeds 0-2) only nlschools (better); False:
#: session 50's rule
SUPPORT_END_FLOAT = True


#: weight of each neighbour in the smoothing of a float column's bin densities (see
#: :func:`_smoothed`): a moving average over three bins
SMOOTH_WEIGHT = 1.0 / 3.0


def _smoothed(counts: np.ndarray, widths: np.ndarray, sigma: float) -> np.ndarray:
    """Noisy counts (each with noise deviation ``sigma``) of adjacent bins of ``widths``, their
    densities shrunk towards a three-bin moving average by the James–Stein factor λ = (the
    change's expected squared norm under noise alone) / (its squared norm), in [0, 1]: a
    smooth column (the change is mostly noise) is smoothed, a rough one (levels, atoms: the
    change is mostly signal) kept. Post-processing of a DP release."""
    if len(counts) < 3:
        return counts
    change, lam = _smoothing(counts, widths, sigma)
    wide = _diffused(counts, widths, sigma, float((lam * change) @ (lam * change)) + sigma ** 2
                     * (len(counts) - 4.0 * SMOOTH_WEIGHT * lam * (len(counts) - 2)))
    if wide is not None:
        return np.asarray(np.clip(wide, 0.0, None))
    return np.asarray(np.clip(counts + lam * change, 0.0, None))


#: the smoothing's wider kernels (:func:`_diffused`): repeated three-bin moving averages of
#: the densities, 2, 4, 8, … up to this many times (a bound on time, not a guard against
#: noise: the choice among them is Stein's unbiased risk estimate's, and at 4096 steps a
#: column of ~60 bins is flat already); 0: only the one James–Stein step of :func:`_smoothed`
DIFFUSE_MAX_STEPS = 4096


def _diffusion_eigenvalues(n_in: int) -> np.ndarray:
    """The eigenvalues 1 − 2w + 2w cos(jπ/N), j = 0 … N − 1, of one step T of :func:`_diffused`
    on N = ``n_in`` inner bins: each inner density moves by w = :data:`SMOOTH_WEIGHT` times
    its second difference among the inner bins, reflected half a bin past their ends (the
    end bins stay) — the matrix I + w L that the orthonormal DCT-II diagonalises."""
    w = SMOOTH_WEIGHT
    return 1.0 - 2.0 * w + 2.0 * w * np.cos(np.arange(n_in) * math.pi / n_in)


def _diffusion_power(dens: np.ndarray, k: int) -> np.ndarray:
    """T^k ``dens`` (the step of :func:`_diffusion_eigenvalues` applied k times), in closed
    form: the inner block is diagonal in the orthonormal DCT-II basis, so T^k is one
    transform, k-th powers of the eigenvalues and one inverse — equal to k steps
    to rounding (``tests/test_synth_smoothing.py``), at the cost of one step whatever k (the
    privacy audits run thousands of releases: k up to :data:`DIFFUSE_MAX_STEPS` steps each
    made them 40× slower)."""
    mid = np.asarray(dens[1:-1], dtype=np.float64)
    eig = _diffusion_eigenvalues(mid.shape[0])
    y = dct(mid, type=2, norm="ortho")
    return np.concatenate([dens[:1], idct(y * eig ** k, type=2, norm="ortho"), dens[-1:]])


def _diffusion_trace(m: int, k: int) -> float:
    """tr T^k of :func:`_diffused`'s step on m ≥ 3 bins: 2 (the end bins) plus the k-th powers
    of the inner block's eigenvalues (:func:`_diffusion_eigenvalues`)."""
    return 2.0 + float(np.sum(_diffusion_eigenvalues(m - 2) ** k))


def _diffused(counts: np.ndarray, widths: np.ndarray, sigma: float,
              one_step: float = math.inf) -> np.ndarray | None:
    """The noisy counts (noise deviation ``sigma`` each) with their densities averaged over a
    wider kernel than :func:`_smoothed`'s one step, when Stein's unbiased risk estimate says
    so (post-processing of a DP release). The step T moves each inner bin's density by
    :data:`SMOOTH_WEIGHT` times its second difference among the inner bins, reflected at
    their ends (no flux into the end bins, which stay: the support's first and last bins are
    partial — treering's first [−6123.5, −5876.5) holds the years from −6000 — and their low
    densities, diffused, would pull a ramp into a flat column); the candidates are T^k
    applied to the densities, k = 0, 1, 2, 4, …, :data:`DIFFUSE_MAX_STEPS`, each a linear
    map A_k of the counts similar to T^k, whose risk is estimated by SURE_k = ‖A_k x − x‖² +
    σ² (2 tr T^k − M) (tr T^k in closed form: the inner block of T is I + w L, L the
    reflected second difference, of eigenvalues −2 + 2 cos(jπ/(M − 2))). None (the one
    James–Stein step is kept) unless the best k is 2 or more and its risk estimate is below
    ``one_step``, the one step's (:func:`_smoothed`: ‖λc‖² + σ² (M − 4wλ(M − 2)), its λ
    taken as fixed — which favours it: a wider kernel must beat it clearly). A flat column's
    noise — a time index with every year once — is averaged over as many bins as it is
    noise: treering's year, ~60 bins of ~100 records against σ ≈ 13, came out of the one
    step with a 1-way TV against its training rows of 0.022 (0.012 with the wide kernel;
    benchmarks/synth_marginal_tv.py). Consistent: as σ → 0 the risk
    estimate is ‖A_k x − x‖², least at k = 0 (or equal, on a density T leaves as it is)."""
    m = len(counts)
    if DIFFUSE_MAX_STEPS < 2 or m < 4 or not sigma > 0:
        return None
    norm2 = float(counts @ counts)
    best_k, best_risk, best_x = 0, m * sigma ** 2, counts  # SURE_0 = σ² M
    k, worse = 0, 0
    dens = counts / widths
    while k < DIFFUSE_MAX_STEPS:
        k = max(1, 2 * k)
        x = _diffusion_power(dens, k) * widths
        risk = float((x - counts) @ (x - counts)) + sigma ** 2 * (2.0 * _diffusion_trace(m, k)
                                                                 - m)
        if risk < best_risk - 1e-12 * norm2:
            best_k, best_risk, best_x, worse = k, risk, x, 0
        else:
            worse += 1
            if worse >= 2:
                break
    return np.asarray(best_x) if best_k >= 2 and best_risk < one_step else None


def _smoothing(counts: np.ndarray, widths: np.ndarray,
               sigma: float) -> tuple[np.ndarray, float]:
    """The change towards the three-bin moving average of :func:`_smoothed` and its James–Stein
    factor λ (0 for fewer than three bins: nothing to smooth)."""
    change = np.zeros_like(counts)
    if len(counts) < 3:
        return change, 0.0
    w = SMOOTH_WEIGHT
    a = widths[1:-1] / widths[:-2]  # the change at bin i: w·(a_i x_{i-1} - 2 x_i + b_i x_{i+1})
    b = widths[1:-1] / widths[2:]
    change[1:-1] = w * (a * counts[:-2] - 2.0 * counts[1:-1] + b * counts[2:])
    noise = float(np.sum((w * sigma) ** 2 * (a * a + 4.0 + b * b)))
    size = float(change @ change)
    return change, float(np.clip(noise / size, 0.0, 1.0)) if size > 0 else 0.0


def _cdf_of_counts(counts: np.ndarray, sigma: float, kind: str = "float",
                   edges: np.ndarray | None = None) -> np.ndarray:
    """The CDF of :func:`_cdf_and_smoothness`."""
    return _cdf_and_smoothness(counts, sigma, kind, edges)[0]


#: a continuous float column whose smoothing factor λ (:func:`_smoothed`) is at least this is
#: *smooth* (its bins' differences mostly noise): its inverse CDF is interpolated by monotone
#: cubic pieces through the released knots instead of straight lines (a level-bearing column,
#: λ ≈ 0.01–0.05 at the benchmark's budget, keeps the lines)
SMOOTH_LAMBDA = 0.3


#: an integer column whose fine bins hold at least this many levels each (median) is smoothed
#: as a float column is (:func:`_wide_integer_bins`); 0: never. Until 2026-11-30 only float
#: columns were: an integer column of thousands of levels (a time index, a count in the
#: thousands) kept each bin's raw noise. Smoothing them took benchmarks/synth_corpus.py's
#: ε = 1 1-way TV excess (seed 0) from median 0.0400 to 0.0377, mean 0.0474 to 0.0464 (25
#: tables better, 10 worse by at most 0.0015), ε = 1e4 unchanged (the James–Stein factor
#: vanishes with the noise); benchmarks/results/synth_peers_gaps.md
INTEGER_SMOOTH_LEVELS = 2.0


def _wide_integer_bins(edges: np.ndarray, decided: np.ndarray | None) -> bool:
    """Whether an integer column's histogram is smoothed (:func:`_smoothed`): its bins
    (edges at half-integers) hold a median of at least :data:`INTEGER_SMOOTH_LEVELS` levels
    and the zoom split none of them (a split bin's sub-bins are its levels, measured)."""
    if INTEGER_SMOOTH_LEVELS <= 0 or len(edges) < 4:
        return False
    if decided is not None and decided.any():
        return False
    return bool(np.median(np.diff(edges)) >= INTEGER_SMOOTH_LEVELS)


#: an end bin of a float column's support beyond non-passing bins spanning this fraction of
#: the rest of the support is *isolated* (see :func:`_without_isolated_ends`)
ISOLATION_FRACTION = 0.25


def _without_isolated_ends(passed: np.ndarray, counts: np.ndarray, edges: np.ndarray,
                           cut: float) -> np.ndarray:
    """The passing bins less any end bin of the support whose count is below ``cut``
    (Bonferroni over the bins) and that is *isolated*: beyond a run of non-passing bins wider
    than :data:`ISOLATION_FRACTION` of the span of the other passing bins. Such a bin lies in
    the octave of margin the range adds beyond the data: its noise alone passes two
    deviations in ~2 % of fits per end, and the column then put ~1 % of its synthetic values
    up to twice past the data's largest (macdonell's heights to 15.7 against 6.4, halving the
    synthetic correlation). A thin tail next to the data is kept, however wide its bin
    (wavesurge's wave heights of 8 to 11 in the one-bin octave [8, 16)). Post-processing."""
    keep = [int(k) for k in passed]

    def isolated(end: int, inner: int) -> bool:
        if counts[end] >= cut:
            return False
        rest = keep[1:] if end == keep[0] else keep[:-1]
        span = float(edges[max(rest) + 1] - edges[min(rest)])
        gap = (float(edges[end] - edges[inner + 1]) if end > inner
               else float(edges[inner] - edges[end + 1]))
        return gap > ISOLATION_FRACTION * span

    while len(keep) > 1:
        if isolated(keep[-1], keep[-2]):
            keep.pop()
        elif isolated(keep[0], keep[1]):
            keep.pop(0)
        else:
            break
    return np.asarray(keep, dtype=np.int64)


def _support_end_runs(passed: np.ndarray, counts: np.ndarray, edges: np.ndarray,
                      sigma: float, core: tuple[float, float], decided: np.ndarray | None,
                      beta: float, reach: tuple[int, int] | None = None,
                      margin: bool = False) -> np.ndarray:
    """The passing bins with the support's ends extended (post-processing of noisy counts
    of noise deviation ``sigma`` each): at each end, the bins past it whose middles lie in
    ``core`` (the released range less its margin: octaves whose counts passed the range's
    threshold, so the column has records there) and that the zoom did not decide
    (``decided`` 0), from the end outwards up to the first that is not, are summed over each
    prefix of k of them; a prefix passes when its sum is at least √k·``sigma`` times the cut
    at false-alarm ``beta``/m (m such bins: Bonferroni over the prefixes) and
    :data:`TAIL_MIN_COUNT`, and the passing prefix of largest sum/√k (the most significant:
    bins of noise alone past the data lower it) joins the support — a tail thinning out
    inside the range is kept where its bins together pass, though each alone is below the
    per-bin cut. The test is :func:`_tail_return`'s (per side, over prefixes), at a cut that
    does not grow with the column's number of bins; a side without records past its end
    extends with probability ≤ ``beta``, and as the noise vanishes every bin holding half a
    record passes the per-bin cut already: consistent. ``reach`` (optional: the first and
    the last bin that passed the per-bin cut before :func:`_without_isolated_ends` dropped
    an isolated one, :data:`SUPPORT_END_BRIDGE`): the run may also go through the range's
    margin up to such a bin (over bins the zoom did not decide): when the gap's bins' sum
    passes √m·``sigma`` times the cut at false-alarm ``beta`` (m bins: one test per side) and
    :data:`TAIL_MIN_COUNT`, the gap and that bin join the support — a passing end bin beyond
    a gap of bins each just below the cut is not isolated when the gap's bins together hold
    records (the gap alone must pass: a noise false alarm at the end does not carry it).
    ``margin`` (a float column, :data:`SUPPORT_END_FLOAT`): the run goes through the bins
    *outside* ``core`` instead — the range's margin, past a support that reaches the core's
    end (inside the core a float column's bins pass the per-bin 2σ cut already)."""
    mid = 0.5 * (edges[:-1] + edges[1:])
    inside = (mid >= core[0]) & (mid < core[1])
    if margin:
        inside = ~inside
    if decided is not None:
        inside &= decided == 0
    first, last = int(passed[0]), int(passed[-1])
    add: list[int] = []
    for step in (1, -1):
        run = []
        i = (last if step > 0 else first) + step
        while 0 <= i < len(counts) and inside[i]:
            run.append(i)
            i += step
        if run:
            sums = np.cumsum(counts[run])
            k = np.arange(1, len(run) + 1)
            cut = float(ndtri(1.0 - beta / len(run)))
            ok = sums >= np.maximum(cut * np.sqrt(k) * sigma, TAIL_MIN_COUNT)
            if ok.any():
                best = int(np.argmax(np.where(ok, sums / np.sqrt(k), -np.inf)))
                add += run[:best + 1]
        # a dropped isolated end bin past this end, bridged when the gap's bins together pass
        if reach is None or not (reach[1] > last if step > 0 else reach[0] < first):
            continue
        target = reach[1] if step > 0 else reach[0]
        gap = list(range(last + 1, target)) if step > 0 else list(range(target + 1, first))
        if not gap or decided is not None and np.any(decided[gap] != 0):
            continue
        total = float(np.sum(counts[gap]))
        if total >= max(float(ndtri(1.0 - beta)) * math.sqrt(len(gap)) * sigma, TAIL_MIN_COUNT):
            add += gap + [target]
    if not add:
        return passed
    return np.unique(np.concatenate([passed, np.asarray(add, dtype=np.int64)]))


def _cdf_and_smoothness(counts: np.ndarray, sigma: float, kind: str = "float",
                        edges: np.ndarray | None = None, decided: np.ndarray | None = None,
                        core: tuple[float, float] | None = None, continuous: bool = False,
                        levelled: bool = False) -> tuple[np.ndarray, float]:
    """The CDF at the edges from noisy bin counts: the column's support runs from the first
    to the last bin whose count passes the cut (:data:`EMPTY_BIN_SIGMAS`); outside it counts are
    set to 0 (an empty bin's noise would otherwise put spurious mass there — values a column
    never takes, past its end), inside it they are clipped at 0 (cutting a sparse interior
    bin too would drop real mass, tails included) and, for a float column whose ``edges`` are
    given or an integer column of wide bins (:func:`_wide_integer_bins`), smoothed
    (:func:`_smoothed`), then normalised (post-processing). Also returns the
    smoothing factor λ (0 when not smoothed). ``decided`` (optional, per bin): 1 a bin that
    passes, −1 one that does not, 0 the test above (the zoom's sub-bins, tested by their own
    noise in :func:`_zoom`). ``core`` (optional): the released range less the octave of
    margin on each side; a discrete column's bins outside it pass a stricter cut
    (:data:`MARGIN_BETA`) when it spans at most :data:`MARGIN_LEVELS` integers.
    ``continuous`` (a float column with no released resolution): not smoothed once the zoom
    has split some of its bins. ``levelled`` (a gridded float column whose bins are one per
    grid value, :func:`_integer_edges`: a discrete column's histogram on its grid) takes the
    discrete columns' cut: at the float columns' 2σ rule ~2 % of the empty bins of its range
    (widened by an octave) passed by noise alone, the support ran to the range's end and each
    empty bin inside it kept its clipped noise — diamonds at ε = 1e4 (1,600 bins of 0.01 on
    [0, 16] around carats of 0.2-4.1) drew 0.3 % of its carats at 4-16, the column's
    deviation 0.68 against 0.48 and its correlations 0.2 too low
    (benchmarks/results/synth_correlation.md). A gridded column whose bins merge grid values
    (the released edges snapped to its grid, at small budgets) keeps the float rule."""
    bonferroni = float(ndtri(1.0 - RANGE_BETA / len(counts)))
    family = bonferroni if kind != "float" or levelled else 0.0
    cut = np.full(len(counts), sigma * max(EMPTY_BIN_SIGMAS, family))
    if kind != "float" and _few_levels(core) and edges is not None:
        assert core is not None
        mid = (np.asarray(edges)[:-1] + np.asarray(edges)[1:]) / 2
        margin = (mid < core[0]) | (mid >= core[1])  # an octave is [2^e, 2^(e+1))
        cut[margin] = sigma * max(EMPTY_BIN_SIGMAS, float(ndtri(1.0 - MARGIN_BETA / len(counts))))
    ok = counts >= cut
    if decided is not None:
        ok = np.where(decided == 0, ok, decided > 0)
    passed = np.flatnonzero(ok)
    reach = ((int(passed[0]), int(passed[-1]))
             if passed.size and SUPPORT_END_BRIDGE and not _few_levels(core) else None)
    if passed.size > 1 and edges is not None:
        # an isolated end bin must pass a stricter cut: Bonferroni for a float column, the
        # range's far cut for a discrete one (a 0/1 column's noise at 4, past an empty 2 and 3)
        far = bonferroni if kind == "float" else float(ndtri(1.0 - RANGE_FAR_BETA / len(counts)))
        passed = _without_isolated_ends(passed, counts, np.asarray(edges), sigma * far)
    float_ends = SUPPORT_END_FLOAT and kind == "float" and not levelled
    if (passed.size and SUPPORT_END_BETA > 0 and edges is not None and core is not None
            and (kind != "float" or levelled or float_ends)):
        # a float column's run goes through the range's margin only (SUPPORT_END_FLOAT)
        passed = _support_end_runs(passed, counts, np.asarray(edges), sigma, core, decided,
                                   SUPPORT_END_BETA, reach, margin=float_ends)
    kept = np.zeros_like(counts)
    lam = 0.0
    if passed.size:
        f, last = int(passed[0]), int(passed[-1])
        kept[f:last + 1] = np.clip(counts[f:last + 1], 0.0, None)
        # a continuous float column split by the (fine) zoom is not smoothed: its sub-bins
        # are measured, and a point mass's neighbours, a thousandth of its width, would take
        # its mass
        if edges is not None and (kind == "float" and not (
                continuous and decided is not None and decided.any())
                or kind == "integer" and _wide_integer_bins(np.asarray(edges), decided)):
            widths = np.diff(edges)[f:last + 1]
            lam = _smoothing(kept[f:last + 1], widths, sigma)[1]
            kept[f:last + 1] = _smoothed(kept[f:last + 1], widths, sigma)
    total = kept.sum()
    if not total > 0:
        return np.linspace(0.0, 1.0, len(counts) + 1), 0.0
    cdf = np.concatenate([[0.0], np.cumsum(kept) / total])
    cdf[-1] = 1.0
    return np.minimum(cdf, 1.0), lam


#: the zoom (:func:`_zoom`): this many heaviest bins of each column's histogram are split into
#: at least :data:`ZOOM_SPLIT` sub-bins (:func:`zoom_split`; one per grid value when fewer)
#: and counted again
ZOOM_BINS = 2
ZOOM_SPLIT = 64
#: a bin is split only where its sub-counts depart from its even density by more than this
#: many times the noise's expected departure (the James–Stein factor below 1/this): levels or
#: atoms, not a dense bin's noise
ZOOM_GATE = 2.0


#: the *fine* zoom (:func:`fine_zoom`): when the zoom's noise is this small — n/σ at least
#: FINE_ZOOM_AT, σ its deviation were all d columns zoomed — it runs :data:`ZOOM_ROUNDS`
#: rounds and reaches the continuous float columns too
FINE_ZOOM_AT = 4096.0
ZOOM_ROUNDS = 2


def fine_zoom(n: int, d: int, rho_zoom: float) -> bool:
    """Whether the zoom is *fine*, from public n, d and its ρ: n/σ ≥ :data:`FINE_ZOOM_AT`, σ
    the deviation of its counts were all d columns zoomed (:func:`histogram_sigma`). A fine
    zoom splits again, in a second round (:data:`ZOOM_ROUNDS`, each at an equal share of
    ``rho_zoom``), the heaviest sub-bins of the first that still hold more than one level,
    and splits continuous float columns' bins as well: a point mass — 65 % of mhtdata's ends
    at one value, at the top of a bin of ~30,000 integers; mfblong's √½ or macdonell's heights
    in sixteenths of an inch, in a float column — then lies in a sub-bin of one level, or one
    ~10⁻⁸ of the bin wide, instead of being spread over its bin (half of mhtdata's synthetic
    ends past the data's largest at ε = 1e4). At ε = 1 (n/σ of a few hundred on tables of
    10⁴ rows) the zoom is one round of the discrete columns, as before."""
    if not (rho_zoom > 0 and n > 0 and d > 0):
        return False
    return bool(n / histogram_sigma(rho_zoom, d) >= FINE_ZOOM_AT)


def zoomable(kind: str, step: float, fine: bool = False) -> bool:
    """Whether a column of ``kind`` and released resolution ``step`` gets the zoom: integer
    and gridded float columns, whose sub-bins hold one level each, and with a ``fine`` zoom
    (:func:`fine_zoom`) continuous float columns too (at a small budget their atoms would
    still be spread across their sub-bins, and the quantile bins of tied values see that:
    macdonell's heights, 1-way TV 0.07 → 0.15 at ε = 1)."""
    return kind == "integer" or (kind == "float" and (step > 0 or fine))


#: zoom a continuous float column's concentrated bins at any budget when its released range
#: is *narrow* — one-signed, within two octaves, so that its fine bins span the values'
#: magnitude, not their spread — and its first histogram's heaviest bin holds at least
#: :data:`CONCENTRATED_SHARE` of the rows (DP outputs both). Values shifted far from 0
#: (generated tables: a column of sd 7 at 2,500 fell in one bin of width 85 of [2048, 4096),
#: its synthetic values uniform over that bin and its correlations with the others lost:
#: Spearman's 0.56 came back 0.01). False: continuous columns zoom only when the zoom is fine
NARROW_ZOOM = True
CONCENTRATED_SHARE = 0.5


def narrow_range(core: tuple[float, float] | None) -> bool:
    """Whether a released range's core (the range less its margin octaves, a value interval)
    is one-signed and spans at most two octaves (post-processing of the range release)."""
    if not NARROW_ZOOM or core is None:
        return False
    lo, hi = core
    return bool((lo > 0.0 and hi <= 4.0 * lo) or (hi < 0.0 and lo >= 4.0 * hi))


def concentrated(counts: np.ndarray, n: int) -> bool:
    """Whether a first histogram's heaviest noisy bin holds at least
    :data:`CONCENTRATED_SHARE` of the n rows (post-processing)."""
    return bool(counts.size and float(np.max(counts)) >= CONCENTRATED_SHARE * n)


def zoom_split(n: int, sigma_z: float) -> int:
    """Sub-bins per zoomed bin from public facts: :data:`ZOOM_SPLIT`, or about (n/σ)^(2/3) —
    as :func:`n_fine_bins` — when that is more (up to :data:`MAX_BINS`), so that at a large
    budget a bin of 943 integers (mhtdata's positions, 65 % of them at one value) is split
    down to its values."""
    return int(np.clip(round((n / sigma_z) ** (2.0 / 3.0)), ZOOM_SPLIT, MAX_BINS))


#: slots of each column's zoom for the first and the last bin of its support, when they hold
#: more than one level and are not among its heaviest (:func:`_zoom_bins`): their mass, spread
#: over the bin, is what falls outside the data's range — Vocab's first bin [1963.5, 1977.5)
#: held its years 1974 and 1976, the third heaviest, and put 9.7 % of the synthetic years
#: before 1974 at ε = 1. The release's sensitivity does not change (a record counts in at
#: most one sub-bin per column), only its size
ZOOM_END_BINS = 2
#: the zoom splits about (n/σ)^(1/3) / ZOOM_BINS_DIVISOR bins per column (at least
#: :data:`ZOOM_BINS`; :func:`zoom_bins`)
ZOOM_BINS_DIVISOR = 4.0


def zoom_bins(n: int, sigma_z: float, fine: bool = False) -> int:
    """Bins per column the zoom splits, from public facts: :data:`ZOOM_BINS`, or about
    (n/σ)^(1/3) / :data:`ZOOM_BINS_DIVISOR` when that is more. A bin's sub-counts stand above
    their noise when it holds about :func:`zoom_split` · σ records, and at most
    n / (split · σ) = (n/σ)^(1/3) bins can: the number grows as the noise vanishes, so that
    every level of a column of a few levels spread over a wide range (Chile's incomes, seven
    levels in [2500, 200000]) gets its own sub-bin at a large budget, not only the two
    heaviest. (The release's sensitivity does not change: a record counts in one slot per
    column.) The divisor keeps it at :data:`ZOOM_BINS` at ε = 1 on the corpus's tables
    (n/σ < 1728); a ``fine`` zoom (:func:`fine_zoom`, never at ε = 1 there) splits all
    (n/σ)^(1/3) (a float column of 22 heights, each in a bin of its own, gets every one
    back)."""
    z = (n / sigma_z) ** (1.0 / 3.0)
    return max(ZOOM_BINS, int(math.floor(z if fine else z / ZOOM_BINS_DIVISOR)))


#: most noisy counts one zoom round releases (all columns' slots × sub-bins): a bound on time,
#: not a guard against noise — secure noise (OpenDP's exact sampler) costs ~40 µs a count, and
#: the unbounded sizes of :func:`zoom_split` × :func:`zoom_bins` asked mhtdata (159,312 × 6)
#: at ε = 1e4 for 4.4 million counts a round, 400 s of noise; at this bound a round's noise
#: costs at most ~10 s. A table of 10⁴ rows and 6 columns reaches it between ε = 10³ and 10⁴.
ZOOM_MAX_COUNTS = 2**18


def zoom_sizes(columns: int, split: int, slots: int) -> tuple[int, int]:
    """(sub-bins per bin, bins per column) of a zoom round over ``columns`` columns: ``split``
    and ``slots`` (:func:`zoom_split`, :func:`zoom_bins`), the sub-bins cut first (down to
    :data:`ZOOM_SPLIT`), then the bins (down to :data:`ZOOM_BINS`), until the round releases
    at most :data:`ZOOM_MAX_COUNTS` counts. Public: a function of the sizes only."""
    per = max(1, ZOOM_MAX_COUNTS // max(1, columns))
    if slots * split > per:
        split = max(ZOOM_SPLIT, per // slots)
    if slots * split > per:
        slots = max(ZOOM_BINS, per // split)
    return split, slots


def _zoom_edges(a: float, b: float, grid: float, split: int) -> np.ndarray:
    """Sub-bin edges of the bin [a, b]: one sub-bin per value of the grid ``grid``·ℤ it holds
    when at most ``split`` (its edges sit at half-steps), else ``split`` sub-bins at
    half-steps."""
    if grid <= 0:  # a continuous column: split equal sub-bins
        cuts = np.linspace(a, b, split + 1)
        cuts[-1] = b
        return np.unique(cuts)
    w = float(np.round((b - a) / grid))  # a float: a bin of a far released range can hold
    # more grid values than an int64 counts (2^129 / 0.05 on forbes2000 at ε = 0.5)
    ticks = (np.arange(int(w) + 1.0) if w <= split
             else np.round(np.linspace(0.0, w, split + 1)))
    out = a + grid * ticks
    out[-1] = b
    return np.asarray(out)


def _zoom_bins(e: np.ndarray, counts: np.ndarray, grid: float, probe: int | None,
               how_many: int = ZOOM_BINS, ends: int = 0,
               cuts: np.ndarray | None = None) -> list[int]:
    """The bins a column's zoom splits (post-processing of the first histogram): the
    ``how_many`` − ``ends`` (:func:`zoom_bins`) of largest noisy count among those holding more
    than one grid value, the sign probe's bin excepted; and with ``ends`` (2) slots for
    them, the first and the last bin of the column's support — whose noisy counts pass
    ``cuts`` (per bin) — when they hold more than one grid value and are not picked already
    (:data:`ZOOM_END_BINS`)."""
    widths = np.diff(e)
    can = widths > 1.5 * grid if grid > 0 else widths > 0
    if probe is not None:
        can[0 if probe == 0 else len(can) - 1] = False
    order = [int(k) for k in np.argsort(-counts, kind="stable") if can[k]]
    picks = order[:how_many - ends]
    if ends > 0 and cuts is not None:
        support = np.flatnonzero(counts >= cuts)
        for k in ([int(support[0]), int(support[-1])] if support.size else [])[:ends]:
            if can[k] and k not in picks:
                picks.append(k)
    return sorted(picks)


def _zoom(X: np.ndarray, cols: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]],
          plan: MarginalPlan, steps: Sequence[float], sigma: float, kept_probe: list[bool],
          probes: Sequence[int | None], release: Release,
          tailed: Sequence[tuple[bool, bool]] | None = None,
          narrow: Sequence[bool] | None = None
          ) -> list[tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """The zoom: the counts of each discrete column's (:func:`zoomable`) values in the sub-bins
    (:func:`_zoom_edges`) of its :func:`zoom_bins` heaviest bins (:func:`_zoom_bins`, chosen
    from the first histogram's noisy counts), released jointly (step ``zoom``, ZCDP
    ``plan.rho_zoom``; a record counts in at most one sub-bin per column: replace-one moves
    it out of one and into one, L2 sensitivity √(2m) for m columns; the release's shape —
    :func:`zoom_bins` × :func:`zoom_split` slots per column — is public, unused slots count
    no record). A split bin becomes its sub-bins (post-processing): its mass, the inverse-
    variance combination of its first count and its sub-counts' sum, goes to the sub-bins in
    proportion to those of its sub-counts that pass their noise's cut
    (:data:`EMPTY_BIN_SIGMAS`, Bonferroni over the slots; :func:`_zoomed_masses`), and a bin
    whose sub-counts depart from even density by little more than noise stays whole
    (:data:`ZOOM_GATE`) unless the runs of its sub-bins narrow it (:func:`_run_fits`,
    :func:`_run_masses`: adjacent split bins fitted together). The slots are
    :func:`zoom_bins` for the heaviest bins plus :data:`ZOOM_END_BINS` for the first and the
    last bin of the support (public: the release's shape; the picks are post-processing of
    the first histogram). A year column's levels 1980-1987,
    one bin of the first histogram at ε = 1, get a sub-bin each; a smooth column's sub-counts,
    noise, leave its bin whole. A *fine* zoom (:func:`fine_zoom`, from public n, d and
    ``plan.rho_zoom``) reaches continuous float columns too and runs :data:`ZOOM_ROUNDS`
    rounds, each at an equal share of ``plan.rho_zoom`` (steps ``zoom``, ``zoom/2``; the same
    sensitivity): a later round splits the heaviest bins of the earlier ones' result, chosen
    from their noisy masses (post-processing). Consistent: as σ → 0 the cut falls to 0 and
    the sub-bins' masses are the data's. ``tailed`` (per column, bottom and top): the sides
    with tail bins, whose records past the range counted there, not in the range's end bin
    (so the end bin's sub-bins do not count them either). ``narrow`` (per column): a
    continuous float column with a :func:`narrow_range` is zoomed too when its first histogram
    is :func:`concentrated` (the set zoomed, and the release's sensitivity, are then DP
    outputs); when no column is zoomed nothing is released."""
    n, d = X.shape
    fine = fine_zoom(n, d, plan.rho_zoom)
    zoomed = [j for j in range(d) if zoomable(plan.kinds[j], steps[j], fine)
              or (narrow is not None and narrow[j] and concentrated(cols[j][1], n))]
    if not zoomed:
        return cols
    rounds = ZOOM_ROUNDS if fine else 1
    rho_round = plan.rho_zoom / rounds
    grids = [1.0 if plan.kinds[j] != "float" else float(steps[j]) for j in range(d)]
    sens = histogram_l2() * math.sqrt(len(zoomed))
    sigma_z = sens / math.sqrt(2.0 * rho_round)
    split, slots = zoom_sizes(len(zoomed), zoom_split(n, sigma_z),
                              zoom_bins(n, sigma_z, fine) + ZOOM_END_BINS)
    ends = max(0, min(ZOOM_END_BINS, slots - ZOOM_BINS))  # slots for the support's ends
    cut = sigma_z * max(EMPTY_BIN_SIGMAS, float(ndtri(1.0 - RANGE_BETA / split)))
    out = list(cols)
    # each bin's noise deviation: the first histogram's, a sub-bin's the zoom's
    sds = {j: np.full(len(cols[j][1]), float(sigma)) for j in zoomed}
    for r in range(rounds):
        chosen: dict[int, list[tuple[int, np.ndarray]]] = {}
        flat = np.zeros((len(zoomed), slots, split))
        for i, j in enumerate(zoomed):
            e, counts, _ = out[j]
            probe = probes[j] if kept_probe[j] else None
            # the support's ends: bins past the discrete columns' cut on their own noise
            support_cut = sds[j] * max(EMPTY_BIN_SIGMAS,
                                       float(ndtri(1.0 - RANGE_BETA / len(counts))))
            picks = _zoom_bins(e, counts, grids[j], probe, slots, ends, support_cut)
            chosen[j] = [(k, _zoom_edges(float(e[k]), float(e[k + 1]), grids[j], split))
                         for k in picks]
            x, k_of = _binned(X[:, j], e, plan.kinds[j])  # as the histograms counted them
            if tailed is not None and any(tailed[j]):
                # a record past a side with tail bins counted in a tail bin, not the end bin
                raw = np.nan_to_num(np.asarray(X[:, j], dtype=np.float64), nan=float(e[0]))
                if plan.kinds[j] != "float":
                    raw = np.rint(raw)
                inside = np.ones(len(raw), dtype=bool)
                if tailed[j][0]:
                    inside &= raw >= e[0]
                if tailed[j][1]:
                    inside &= raw < e[-1]
                k_of = np.where(inside, k_of, -1)
            for slot, (k, sub) in enumerate(chosen[j]):
                idx = _bin_index(sub, x[k_of == k])
                flat[i, slot, :len(sub) - 1] = np.bincount(idx, minlength=len(sub) - 1)
        step = "zoom" if r == 0 else f"zoom/{r + 1}"
        noisy = gaussian_mechanism(flat.ravel(), sens, ZCDP(rho_round),
                                   accountant=release.accountant, noise=release.noise,
                                   step=release.name(step)).reshape(flat.shape)
        for i, j in enumerate(zoomed):
            e, counts, decided = out[j]
            if decided is None:
                decided = np.zeros(len(counts), dtype=np.int8)
            sd = sds[j]
            # a bin whose levels are measured (gated, some sub-count past the cut) but not
            # all in the sub-bins past the cut is shaped by its runs' fit
            measured = [_gated(noisy[i, slot, :len(sub) - 1], sigma_z, np.diff(sub))
                        and bool((noisy[i, slot, :len(sub) - 1] >= cut).any())
                        and _unkept_mass(noisy[i, slot, :len(sub) - 1], sigma_z, cut,
                                         float(counts[k]), float(sd[k]))
                        for slot, (k, sub) in enumerate(chosen[j])]
            # the runs' fit (M² time) only when some bin would use it: measured, or not
            # split by its sub-bins (the same answer as below; a shortcut, not a branch on
            # anything but the noisy counts)
            wanted = any(m or _zoomed_masses(float(counts[k]), float(sd[k]),
                                             noisy[i, slot, :len(sub) - 1], sigma_z,
                                             np.diff(sub), cut) is None
                         for m, (slot, (k, sub)) in zip(measured, enumerate(chosen[j]),
                                                        strict=True))
            runs = _run_fits([(k, noisy[i, slot, :len(sub) - 1], np.diff(sub),
                               _combined_total(float(counts[k]), float(sd[k]),
                                               noisy[i, slot, :len(sub) - 1], sigma_z))
                              for slot, (k, sub) in enumerate(chosen[j])], sigma_z,
                             cut / sigma_z, measured) if wanted else [None] * len(chosen[j])
            for slot, (k, sub) in reversed(list(enumerate(chosen[j]))):
                s = noisy[i, slot, :len(sub) - 1]
                shaped = runs[slot] is not None and measured[slot]
                mass = None if shaped else _zoomed_masses(
                    float(counts[k]), float(sd[k]), s, sigma_z, np.diff(sub), cut)
                if mass is None:
                    mass = _run_masses(float(counts[k]), float(sd[k]), s, sigma_z, runs[slot],
                                       np.diff(sub), shaped)
                if mass is None:
                    continue
                e = np.concatenate([e[:k], sub, e[k + 2:]])
                counts = np.concatenate([counts[:k], mass, counts[k + 1:]])
                decided = np.concatenate([decided[:k],
                                          np.where(mass > 0, 1, -1).astype(np.int8),
                                          decided[k + 1:]])
                sd = np.concatenate([sd[:k], np.full(len(mass), sigma_z), sd[k + 1:]])
            out[j] = (e, counts, decided)
            sds[j] = sd
    return out


#: the sub-counts below the zoom's cut hold records together when their sum passes this many
#: deviations of its noise (:func:`_unkept_mass`)
ZOOM_UNKEPT_SIGMAS = 2.0
#: ... also when the bin's own first count exceeds the kept sub-counts' sum by that many
#: deviations (:func:`_unkept_mass`; False: the sub-counts' test alone, an experiment switch)
ZOOM_UNKEPT_TOTAL = True


def _gated(sub: np.ndarray, sigma_z: float, widths: np.ndarray) -> bool:
    """Whether a split bin's sub-counts depart from its even density by more than
    :data:`ZOOM_GATE` times what noise alone would (levels or atoms, not a dense bin's
    noise)."""
    share = widths / float(widths.sum())
    spread = float(np.sum((sub - float(sub.sum()) * share) ** 2))
    return spread > ZOOM_GATE * (len(sub) - 2) * sigma_z ** 2


def _unkept_mass(sub: np.ndarray, sigma_z: float, cut: float, count: float = math.nan,
                 sigma: float = math.nan) -> bool:
    """Whether the k sub-counts below ``cut`` (a sub-bin's cut) sum to at least
    :data:`ZOOM_UNKEPT_SIGMAS` deviations of their summed noise σ_z √k: records the sub-bins
    past the cut would take from them (SumHes's year: 2,300 records over 23 levels, one of
    whose noisy counts passed the cut and took them all — the year's 1-way TV 0.90). Or
    (``ZOOM_UNKEPT_TOTAL``) whether the bin's first noisy ``count`` (noise ``sigma``) exceeds
    the sum of the sub-counts past the cut by as many deviations of their joint noise: the
    same question asked of the bin's own measurement, whose noise does not grow with the
    empty sub-bins (Males' year at d = 11, ε = 1: eight levels of ~390 records among 64
    sub-bins of noise 122, three past the cut of 386 took all 3,100 records while the other
    61 sub-counts' sum was within two deviations of their noise). Asked
    only where the runs can shape the bin instead (:func:`_zoom`): a huge budget's bins,
    past :data:`ZOOM_RUN_MAX` sub-bins, keep the sub-bins' split (at a cut of 3.2 deviations
    instead of 2, the corpus's ε = 1 1-way TV excess mean over 9 draws was 0.0414 against
    0.0401, benchmarks/results/synth_peers_gaps.md)."""
    rest = sub[sub < cut]
    if rest.size and float(rest.sum()) >= ZOOM_UNKEPT_SIGMAS * sigma_z * math.sqrt(rest.size):
        return True
    if not (ZOOM_UNKEPT_TOTAL and math.isfinite(count) and math.isfinite(sigma)):
        return False
    kept = sub[sub >= cut]
    return bool(rest.size) and count - float(kept.sum()) >= ZOOM_UNKEPT_SIGMAS * math.sqrt(
        sigma * sigma + kept.size * sigma_z * sigma_z)


def _zoomed_masses(count: float, sigma: float, sub: np.ndarray, sigma_z: float,
                   widths: np.ndarray, cut: float) -> np.ndarray | None:
    """A split bin's sub-bin masses from its first noisy ``count`` (noise ``sigma``) and its
    noisy sub-counts ``sub`` (noise ``sigma_z`` each): the bin's mass — the two measurements
    combined by inverse noise variance — in proportion to the sub-counts that pass ``cut``, 0
    elsewhere (clipping the others at 0 instead kept their noise: macdonell's heights, two
    levels in a bin of 64 sub-bins, lost a third of their mass to the sub-bins between).
    None — the bin stays whole, or its runs place it (:func:`_run_masses`) — when no
    sub-count passes or the sub-counts depart from the bin's even density by at most
    :data:`ZOOM_GATE` times what noise alone would (:func:`_gated`: a dense bin, whose few
    sub-counts lifted past the cut by noise would take all its mass). :func:`_zoom` does not
    ask when those that do not pass hold records together (:func:`_unkept_mass`): the runs
    shape that bin."""
    if not _gated(sub, sigma_z, widths):
        return None
    kept = np.where(sub >= cut, sub, 0.0)
    if not kept.sum() > 0:
        return None
    return np.asarray(max(_combined_total(count, sigma, sub, sigma_z), 0.0) * kept
                      / float(kept.sum()))


#: the zoom's *runs* (:func:`_run_fits`): a segment of sub-bins costs this many times
#: σ_z² ln M in the penalised least-squares fit of a piecewise-constant density to M noisy
#: sub-counts (BIC: a level and a change point per segment, each ln M)
ZOOM_RUN_PENALTY = 2.0
#: a run fit's end segment is empty only when its density falls below its neighbour's by
#: the cut at which this is the false-alarm probability over the fit's M sub-bins
ZOOM_RUN_BETA = 0.05
#: most sub-bins one run fit takes (its time grows as their square): a bound on time, not a
#: guard against noise — past it (n/σ ≳ 10⁴) the sub-bins pass their own cut
ZOOM_RUN_MAX = 1024


def _segments(sub: np.ndarray, widths: np.ndarray, beta: float) -> list[int]:
    """The boundaries (0 first, M last) of the piecewise-constant fit of the M counts ``sub``
    — each segment's fitted counts proportional to ``widths``, by least squares — that
    minimises the squared error plus ``beta`` per segment (optimal partitioning, exact, in
    O(M²)): post-processing."""
    m = len(sub)
    z = np.zeros(1)
    pss = np.concatenate([z, np.cumsum(sub * sub)])
    psw = np.concatenate([z, np.cumsum(sub * widths)])
    pww = np.concatenate([z, np.cumsum(widths * widths)])
    # every segment's squared error plus beta at once: row a (start), column b (end)
    with np.errstate(divide="ignore", invalid="ignore"):
        seg = ((pss[None, :] - pss[:, None])
               - (psw[None, :] - psw[:, None]) ** 2 / (pww[None, :] - pww[:, None]) + beta)
    best = np.zeros(m + 1)
    arg = np.zeros(m + 1, dtype=np.int64)
    for b in range(1, m + 1):
        cost = best[:b] + seg[:b, b]
        k = int(cost.argmin())
        best[b], arg[b] = cost[k], k
    cuts = [m]
    while cuts[-1] > 0:
        cuts.append(int(arg[cuts[-1]]))
    return cuts[::-1]


def _combined_total(count: float, sigma: float, sub: np.ndarray, sigma_z: float) -> float:
    """A split bin's mass: its first noisy ``count`` (noise ``sigma``) and its sub-counts'
    sum (noise σ_z √M) combined by inverse noise variance (post-processing)."""
    v1, v2 = sigma ** 2, len(sub) * sigma_z ** 2
    return (count / v1 + float(sub.sum()) / v2) / (1.0 / v1 + 1.0 / v2)


def _run_fits(slots: list[tuple[int, np.ndarray, np.ndarray, float]], sigma_z: float,
              floor: float = EMPTY_BIN_SIGMAS, measured: Sequence[bool] | None = None
              ) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """Each zoom slot's sub-bins' fitted counts from *runs* of sub-bins (post-processing of the
    zoom's noisy counts): the slots' bins (``(bin index, noisy sub-counts, sub-bin widths, the
    bin's mass)``, :func:`_combined_total`) that are adjacent in the column are fitted together,
    as one sequence of M sub-bins, by a piecewise-constant density (:func:`_segments`, penalty
    :data:`ZOOM_RUN_PENALTY` σ_z² ln M), each segment's fitted count its noisy sum (clipped at
    0) spread over its sub-bins by width. From each end of the sequence towards its densest
    segment, segments are *empty* (fitted 0) while :func:`_emptier` than that densest one, at
    the cut of false-alarm :data:`ZOOM_RUN_BETA` over the M sub-bins, at least ``floor``
    deviations (the zoom passes its sub-bins' own cut): the runs narrow the bins to the span
    their sub-bins support. Only from the ends: a bin's interior is its sub-bins' business
    (:func:`_zoomed_masses`), and a segment chosen among M² for its low count alone passed a cut
    of a few deviations in ~5 % of dense bins (nlschools at ε = 1: a bin of two levels narrowed
    to one). ``measured`` (per slot): a group with a bin whose levels the gate and the cut saw
    (:func:`_zoom`) needs no evidence against its bins' even share (LaborSupply's year, ten
    levels of ~420 records, kept 1963-1978 when their noise summed to 1.7 deviations). A year
    column's 26 levels of ~80 records each against σ_z ≈ 66 (SumHes: no single sub-bin passes
    its cut) are found as one run of ~2,100 records, its bins' empty decades on either side as
    runs of none. Returns per slot (fitted counts, empty sub-bins), None for a slot whose run
    fit exceeds :data:`ZOOM_RUN_MAX` sub-bins. Consistent: the penalty and the cuts vanish with
    σ_z."""
    out: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(slots)
    order = sorted(range(len(slots)), key=lambda t: slots[t][0])
    groups: list[list[int]] = []
    for t in order:
        if groups and slots[groups[-1][-1]][0] + 1 == slots[t][0]:
            groups[-1].append(t)
        else:
            groups.append([t])
    for g in groups:
        sub = np.concatenate([slots[t][1] for t in g])
        widths = np.concatenate([slots[t][2] for t in g])
        # each sub-bin's share of its bin's mass, spread evenly by width
        even = np.concatenate([max(slots[t][3], 0.0) * slots[t][2] / float(slots[t][2].sum())
                               for t in g])
        m = len(sub)
        if m > ZOOM_RUN_MAX or m < 2 or not sigma_z > 0:
            continue
        cuts = _segments(sub, widths, ZOOM_RUN_PENALTY * sigma_z ** 2 * math.log(m))
        segs = list(zip(cuts[:-1], cuts[1:], strict=True))
        fit, empty = np.zeros(m), np.zeros(m, dtype=bool)
        for a, b in segs:
            fit[a:b] = max(float(sub[a:b].sum()), 0.0) * widths[a:b] / float(widths[a:b].sum())
        sigmas = max(floor, float(ndtri(1.0 - ZOOM_RUN_BETA / m)))
        # a group with a measured bin (its levels past the gate and the cut) needs no
        # evidence against its bins' even share: its structure is not a thin bin's noise
        share = None if measured is not None and any(measured[t] for t in g) else even
        if len(segs) > 1:
            dens = [float(sub[a:b].sum()) / float(widths[a:b].sum()) for a, b in segs]
            peak = segs[int(np.argmax(dens))]
            for side in (segs, segs[::-1]):  # peeled from each end towards the densest
                for seg in side:
                    if seg == peak or not _emptier(sub, widths, share, seg, peak, sigma_z,
                                                   sigmas):
                        break
                    empty[seg[0]:seg[1]] = True
                    fit[seg[0]:seg[1]] = 0.0
        start = 0
        for t in g:
            size = len(slots[t][1])
            out[t] = (fit[start:start + size], empty[start:start + size])
            start += size
    return out


def _emptier(sub: np.ndarray, widths: np.ndarray, even: np.ndarray | None,
             end: tuple[int, int], inner: tuple[int, int], sigma_z: float,
             sigmas: float) -> bool:
    """Whether a run fit's ``end`` segment (sub-bins ``end[0]:end[1]``) is empty (post-processing):
    its noisy count below :data:`EMPTY_BIN_SIGMAS` times its deviation σ_z √L, short of its
    bins' masses spread ``even``ly over them by as much (unless ``even`` is None: a measured
    bin's group), and its density (count per width) ``sigmas`` deviations of the difference
    below the ``inner`` (densest) segment's. The density test alone, its segments chosen among
    M² for their contrast, emptied a thin bin's 55 sub-bins for a bump of noise in its other 9
    (Treatment's earnings, 289 records in 64 sub-bins against σ_z ≈ 95), and a bin's end segment
    with a level of 300 records in it (PSID's earnings); the even share keeps both."""
    (a, b), (c, d) = end, inner
    s_end, w_end = float(sub[a:b].sum()), float(widths[a:b].sum())
    s_in, w_in = float(sub[c:d].sum()), float(widths[c:d].sum())
    own = EMPTY_BIN_SIGMAS * sigma_z * math.sqrt(b - a)
    if s_end >= own or (even is not None and float(even[a:b].sum()) - s_end < own):
        return False
    dev = sigma_z * math.sqrt((b - a) / w_end ** 2 + (d - c) / w_in ** 2)
    return s_in / w_in - s_end / w_end >= sigmas * dev


def _run_masses(count: float, sigma: float, sub: np.ndarray, sigma_z: float,
                run: tuple[np.ndarray, np.ndarray] | None, widths: np.ndarray,
                shaped: bool = False) -> np.ndarray | None:
    """A split bin's sub-bin masses from its runs' fit (:func:`_run_fits`), when its
    sub-bins one by one did not split it (:func:`_zoomed_masses`): the bin's mass (its first
    noisy ``count``, noise ``sigma``, combined with its sub-counts' sum by inverse noise
    variance) spread evenly by ``widths`` over its sub-bins that are not empty (``run``:
    fitted counts and empty sub-bins) — the runs narrow a bin to the span its sub-bins
    support; within it, their segments' levels are mostly noise's (SumHes's 26 even years
    fitted as 13 of 48 records and 8 of 209). None — the bin stays whole — unless some of its
    sub-bins are empty and some not. A ``shaped`` bin, whose levels are measured
    (:func:`_gated`, some sub-count past the cut) but not all in the sub-bins past the cut
    (:func:`_unkept_mass`), takes the fit's levels instead, empty or not: an atom among
    thinner levels keeps its own segment, the levels theirs."""
    if run is None:
        return None
    fit, empty = run
    if shaped:
        shape = fit
    elif empty.any() and not empty.all():
        shape = np.where(empty, 0.0, widths)
    else:
        return None
    if not shape.sum() > 0:
        return None
    total = _combined_total(count, sigma, sub, sigma_z)
    return np.asarray(max(total, 0.0) * shape / float(shape.sum()))


def release_marginals(X: np.ndarray, plan: MarginalPlan, *,
                      release: Release, info: dict[str, Any] | None = None) -> list[Marginal]:
    """The DP marginals of the columns of ``X`` (validated finite rows, n public): at most four
    charges to ``release`` (steps under its prefix), ``types`` (ZCDP(plan.rho_types), when
    some column's kind is "auto": :func:`release_types`), ``range`` (ZCDP(plan.rho_range),
    when some column's range is not stated), ``bins`` (ZCDP(plan.rho_hist)) and ``zoom``
    (ZCDP(plan.rho_zoom), when it is > 0 and some column is integer or gridded after the
    ``types`` release, :func:`zoomable` — else its share joins ``bins``'; :func:`_zoom`),
    each made before its noise is drawn. With a continuous float column of
    :func:`narrow_range` the zoom's share is kept for it; when its first histogram is not
    :func:`concentrated` either (a DP output) that share is left unspent. ``info`` gets
    ``"zoom"``: "ran", "to histograms" or "unspent"."""
    n, d = X.shape
    steps = [0.0] * d  # a float column's released resolution (0: continuous)
    if "auto" in plan.kinds:
        kinds, steps = release_types(X, plan.kinds, plan.rho_types, release=release)
        plan = replace(plan, kinds=kinds)
    fine = fine_zoom(n, d, plan.rho_zoom)
    has_levels = any(zoomable(k, s, fine) for k, s in zip(plan.kinds, steps, strict=True))
    edges: list[np.ndarray | None] = [None] * d
    need_range = [j for j in range(d) if plan.bounds[j] is None and plan.kinds[j] != "binary"]
    cores: list[tuple[float, float] | None] = [None] * d  # the released range less its margin
    # a released range's noisy octave counts and its ends' keys (for the tail bins)
    ranged: dict[int, tuple[np.ndarray, int, int]] = {}
    sigma_range = 1.0
    for j in range(d):
        b = plan.bounds[j]
        if plan.kinds[j] == "binary":
            edges[j] = np.array([-0.5, 0.5, 1.5])
        elif b is not None:
            lo, hi = float(b[0]), float(b[1])
            edges[j] = np.linspace(lo, hi, plan.bins_for(plan.kinds[j], steps[j]) + 1)
    if need_range:
        m = len(need_range)
        counts = np.zeros((m, N_RANGE_BINS))
        for i, j in enumerate(need_range):
            counts[i] = np.bincount(_octave_keys(X[:, j]), minlength=N_RANGE_BINS)
        sens = histogram_l2() * math.sqrt(m)  # one record moves between two bins per column
        noisy = gaussian_mechanism(counts, sens, ZCDP(plan.rho_range),
                                   accountant=release.accountant, noise=release.noise,
                                   step=release.name("range")).reshape(m, N_RANGE_BINS)
        sigma = sens / math.sqrt(2.0 * plan.rho_range)
        thr = range_threshold(sigma, m)
        far = range_threshold(sigma, m, RANGE_FAR_BETA)
        sigma_range = sigma
        for i, j in enumerate(need_range):
            core: list[int] = []
            k_lo, k_hi = _octaves_of_range(noisy[i], thr, far, core)
            ranged[j] = (noisy[i], k_lo, k_hi)
            cores[j] = (_bin_edges(core[0])[0], _bin_edges(core[1])[1])
            edges[j] = _fine_edges(k_lo, k_hi, _allocation_weights(noisy[i, k_lo:k_hi + 1],
                                                                   sigma),
                                   plan.bins_for(plan.kinds[j], steps[j]))
    narrow = [j in ranged and plan.kinds[j] == "float" and steps[j] == 0
              and narrow_range(cores[j]) for j in range(d)]
    if plan.rho_zoom > 0 and not has_levels and not any(narrow):
        # no column has levels to zoom into: the zoom's share goes to the histograms
        plan = replace(plan, rho_hist=plan.rho_hist + plan.rho_zoom, rho_zoom=0.0)
        if info is not None:
            info["zoom"] = "to histograms"
    probes: list[int | None] = [None] * d  # index of a column's sign probe among its bins
    levelled = [False] * d  # a gridded float column with one bin per grid value
    level_probe = [False] * d  # a discrete or gridded column's probe (not spread, zoomed)
    for j in range(d):
        e = edges[j]
        assert e is not None
        if plan.kinds[j] == "integer":
            edges[j] = _integer_edges(e, plan.n_bins)
        elif steps[j] > 0:  # a gridded float column: as an integer one, on its grid
            snapped = _integer_edges(e, plan.n_bins, steps[j])
            edges[j] = snapped
            # one bin per grid value (a discrete column's histogram): its empty bins pass
            # the discrete columns' cut (see _cdf_and_smoothness's ``levelled``)
            levelled[j] = bool(np.allclose(np.diff(snapped), steps[j]))
        elif plan.kinds[j] == "float" and j in need_range:
            edges[j], probes[j] = _with_sign_probe(e)
        if j in ranged and (plan.kinds[j] == "integer" or steps[j] > 0):
            k_lo, k_hi = ranged[j][1], ranged[j][2]
            if (k_lo == _N_OCT) != (k_hi == _N_OCT):  # one-signed, from (to) 0
                grid = 1.0 if plan.kinds[j] == "integer" else float(steps[j])
                e_j = edges[j]
                assert e_j is not None
                edges[j], probes[j] = _with_level_probe(e_j, grid, k_lo == _N_OCT)
                level_probe[j] = True
    # tail bins past a released range's far ends (away from zero), one per octave
    tails: list[dict[str, tuple[np.ndarray, list[int]]]] = [{} for _ in range(d)]
    for j, (_, k_lo, k_hi) in ranged.items():
        e = edges[j]
        assert e is not None
        grid = 1.0 if plan.kinds[j] == "integer" else float(steps[j])
        if k_hi > _N_OCT:
            tails[j]["top"] = _tail_edges(float(e[-1]), k_hi, grid, up=True)
        if k_lo < _N_OCT:
            tails[j]["bottom"] = _tail_edges(float(e[0]), k_lo, grid, up=False)
    # the fine histograms of all columns, one joint Gaussian release: every record counts in
    # exactly one bin per column (its range's or, past the range, a tail bin's; past the last
    # tail bin, that one's); the ranges' bins first, then the tail bins
    sizes = [len(e) - 1 for e in edges if e is not None]
    parts, tail_parts = [], []
    for j, e in enumerate(edges):
        assert e is not None
        bottom = tails[j].get("bottom", (np.asarray(e[:1]), []))[0]
        top = tails[j].get("top", (np.asarray(e[-1:]), []))[0]
        full = np.concatenate([bottom[:-1], e, top[1:]])
        c = _fine_counts(X[:, j], full, plan.kinds[j])
        nb = len(bottom) - 1
        parts.append(c[nb:nb + len(e) - 1])
        tail_parts += [c[:nb], c[nb + len(e) - 1:]]
    flat = np.concatenate(parts + tail_parts)
    sens = histogram_l2() * math.sqrt(d)
    noisy_all = gaussian_mechanism(flat, sens, ZCDP(plan.rho_hist),
                                   accountant=release.accountant, noise=release.noise,
                                   step=release.name("bins"))
    sigma_hist = sens / math.sqrt(2.0 * plan.rho_hist)
    noisy_flat = noisy_all[:sum(sizes)]
    tail_masses = _released_tails(noisy_all[sum(sizes):], tails, ranged, sigma_hist,
                                  sigma_range)
    cols: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]] = []
    kept_probe: list[bool] = []
    start = 0
    for j, size in enumerate(sizes):
        e = edges[j]
        assert e is not None
        counts_j = noisy_flat[start:start + size]
        start += size
        probe = probes[j]
        if probe is not None:
            e, counts_j = _resolve_sign_probe(e, counts_j, probe, sigma_hist)
        kept_probe.append(probe is not None and len(e) == size + 1)
        cols.append((np.asarray(e), np.asarray(counts_j), None))
    if plan.rho_zoom > 0:
        spent = len(release.accountant.ledger)
        cols = _zoom(X, cols, plan, steps, sigma_hist, kept_probe,
                     [None if level_probe[j] else p for j, p in enumerate(probes)], release,
                     [("bottom" in t, "top" in t) for t in tails], narrow)
        if info is not None:
            info["zoom"] = "ran" if len(release.accountant.ledger) > spent else "unspent"
    out = []
    for j, (e, counts_j, decided) in enumerate(cols):
        probe = probes[j]
        cdf, lam = _cdf_and_smoothness(counts_j, sigma_hist, plan.kinds[j], e, decided,
                                       cores[j], steps[j] == 0, levelled[j])
        if probe is not None and kept_probe[j] and not level_probe[j]:
            e, cdf = _spread_sign_probe(e, cdf, probe)
        smooth = plan.kinds[j] == "float" and steps[j] == 0 and lam >= SMOOTH_LAMBDA
        upper, lower = tail_masses[j].get("top"), tail_masses[j].get("bottom")
        if plan.kinds[j] != "float" and _few_levels(cores[j]):
            upper, lower = _margin_give_back(upper, cdf, up=True), _margin_give_back(
                lower, cdf, up=False)
        e, cdf = _with_tails(np.asarray(e), cdf, upper, lower, n)
        out.append(Marginal(plan.kinds[j], np.asarray(e, dtype=np.float64), cdf, steps[j],
                            smooth))
    return out


#: an "auto" column is integer when its noisy count of non-integer values is below this
#: fraction of n or three noise deviations, whichever is larger (those few values are rounded);
#: a float column's resolution is the coarsest rung of :data:`RESOLUTIONS` whose noisy count
#: of values off its grid passes the same test
INTEGER_TOLERANCE = 0.02
#: the public ladder of resolutions a float column's values may lie on (nested grids: each
#: rung's grid holds the coarser rungs'); 1 is the integer test
RESOLUTIONS = (1.0, 0.5, 0.1, 0.05, 0.01)


#: a value within this relative distance of a rung's grid point lies on it: the rounding of a
#: float32 (2⁻²⁴ relative), which real files carry — azpro's hospital codes 3.1, 6.7 are stored
#: as 3.09999990463257, 6.70000028610229, 2.9e-6 of the rung 0.1 off its grid
FLOAT32_TOLERANCE = 2.0 ** -22


def _rung(x: np.ndarray) -> np.ndarray:
    """Each value's category in the resolution release: the index of the coarsest rung of
    :data:`RESOLUTIONS` whose grid holds it (exactly for the integers, to a relative 1e-6 of
    the rung or :data:`FLOAT32_TOLERANCE` of the value for the others),
    ``len(RESOLUTIONS)`` when none does."""
    out = np.full(x.shape, len(RESOLUTIONS), dtype=np.int64)
    for i in range(len(RESOLUTIONS) - 1, -1, -1):
        r = RESOLUTIONS[i]
        on = (x == np.rint(x) if r == 1.0 else np.abs(x - r * np.rint(x / r))
              <= np.maximum(1e-6 * r, FLOAT32_TOLERANCE * np.abs(x)))
        out[on] = i
    return out


def release_types(X: np.ndarray, kinds: Sequence[str], rho: float, *,
                  release: Release) -> tuple[list[str], list[float]]:
    """Resolve the ``"auto"`` kinds: integer, or float with a resolution (a step of
    :data:`RESOLUTIONS`, 0 for none), from one release (step ``types``, ρ-zCDP): per such
    column, the histogram of its values over the coarsest rung whose grid holds each
    (:func:`_rung`; replace-one moves one record between two cells per column, L2
    sensitivity √(2m) for m columns). The noisy count of values off rung i's grid is n minus
    the noisy cells 0..i (n public); the column lies on the coarsest rung whose count is below
    :data:`INTEGER_TOLERANCE` n or three of its noise deviations, integer for rung 0. Charged
    to ``release`` (step ``types`` under its prefix). A CSV
    file declares no types, and reading them off the values would let one record (a 1.5
    among integers) flip one. Returns the kinds and each column's step (0 but for a gridded
    float column)."""
    n = X.shape[0]
    auto = [j for j, k in enumerate(kinds) if k == "auto"]
    cells = len(RESOLUTIONS) + 1
    counts = np.concatenate([np.bincount(_rung(np.asarray(X[:, j], np.float64)),
                                         minlength=cells) for j in auto]).astype(np.float64)
    sens = histogram_l2() * math.sqrt(len(auto))
    noisy = gaussian_mechanism(counts, sens, ZCDP(rho), accountant=release.accountant,
                               noise=release.noise,
                               step=release.name("types")).reshape(len(auto), cells)
    sigma = sens / math.sqrt(2.0 * rho)
    out, steps = list(kinds), [0.0] * len(kinds)
    for j, h in zip(auto, noisy, strict=True):
        off = n - np.cumsum(h[:-1])  # values off each rung's grid
        cut = np.maximum(INTEGER_TOLERANCE * n, 3.0 * sigma * np.sqrt(np.arange(1, cells)))
        on = np.flatnonzero(off < cut)
        out[j] = "integer" if on.size and on[0] == 0 else "float"
        if on.size and on[0] > 0:
            steps[j] = RESOLUTIONS[int(on[0])]
    return out, steps


def _bin_index(edges: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Each value's bin among ``edges`` (values past the ends in the end bins)."""
    return np.clip(np.searchsorted(edges, x, side="right") - 1, 0, len(edges) - 2)


def _binned(x: np.ndarray, edges: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """The values as the histograms count them — clipped into the range, a discrete column's
    rounded first — and each one's bin among ``edges``: every record in exactly one bin."""
    x = np.nan_to_num(np.asarray(x, dtype=np.float64), nan=edges[0])
    x = np.clip(x, edges[0], edges[-1])
    if kind != "float":
        x = np.clip(np.rint(x), edges[0], edges[-1])
    return x, _bin_index(edges, x)


def _fine_counts(x: np.ndarray, edges: np.ndarray, kind: str) -> np.ndarray:
    """Counts of the values in the bins of ``edges`` (:func:`_binned`)."""
    k = _binned(x, edges, kind)[1]
    return np.bincount(k, minlength=len(edges) - 1).astype(np.float64)
