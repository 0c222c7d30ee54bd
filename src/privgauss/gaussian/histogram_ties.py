"""The spread of a tied axis that the stability histograms could not localise: a ρ-zCDP release
of the octaves of its rows' distances to the released mode (our design, a fallback of
:mod:`privgauss.gaussian.histogram`); and the same release on the pair differences of a
*wide* axis, whose scale histogram released no bin (:func:`octave_brackets`, below).

**When.** A *tied* axis (most pair differences exactly 0: a 0/1 flag, a count with many zeros)
is localised from its exact-value location histogram. When that histogram releases a single
value v, yet its released count leaves more than 1 % of the rows elsewhere (a flag with 6 %
ones, a count with 72 % zeros and a long tail of distinct values at d = 17, ε = 1), the column
is neither constant nor localised: its other values are individually too rare for the joint
location threshold. Both facts are released quantities, so the decision to run this release is
a DP output.

**What.** For each such axis k (the set F is a DP output) and row i, the key is the octave
⌊log2 |x_ik − v_k|⌋, a fixed integer in [−1075, 1024] for any pair of float64 values, with two
more keys for x_ik = v_k and for a distance that overflows. Over this *fixed, finite* domain
the counts of all 2,102 keys are released with Gaussian noise — no stability threshold, so no
δ: **ρ-zCDP** under replace-one (n public). *Why:* one replaced row moves one count down and one
up in each of the |F| histograms, an L2 change of √(2|F|); σ = √(2|F|)/√(2ρ) = √(|F|/ρ).

**Post-processing.** Octaves whose noisy count exceeds σ·z (z: a false-positive rate of 1 % over
all the keys) are read as held by rows; the root mean square distance to v,
√(Σ_j c_j 4^(j+½) / n) over those octaves, is the axis's spread (an upper bound on its standard
deviation up to the octave's factor √2, and at least √(1 − p) times it when a fraction p of the
rows is away from v). The refinement's scale bracket is then taken around it, as for any tied
axis. When no single octave is read, the octaves are read in bins of 2, 4 and 8 (sums of the
released counts, as for wide axes below; :data:`TIE_BINS`), and the spread is bracketed by the
read bins' edges; when nothing is read at all, the axis fails (``None``): its other values are
too few and too spread to give a scale at this budget.

The caller charges ρ to the same accountant and takes it from the refinement's share, so the
fit's total is unchanged; the release runs only on the DP-chosen axes and only when there are
any (the ledger length varies through DP outputs only).

**Wide axes.** An axis whose scale histogram released no bin (a DP output: its pair
differences spread over too many octaves for any to reach the threshold — values over orders
of magnitude) gets the same release on its pair differences Y_jk (values v = 0), a record in
at most one pair: one replaced row moves one pair, so one count down and one up in each of
the |F| histograms, the same L2 sensitivity √(2|F|) (:func:`octave_brackets`). Its counts,
summed over bins of 1, 2, 4 or 8 octaves (post-processing; a bin of 2^ℓ octaves holds more
pairs than any of its octaves, its noise sd only 2^(ℓ/2) times a count's), bracket the
axis's scale.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
from scipy.stats import norm

from ..backends import reduce_rows
from ..mechanisms import Release, gaussian_mechanism
from ..privacy import ZCDP
from ..sensitivity import histogram_l2

__all__ = ["N_KEYS", "TIE_BINS", "Spread", "noise_sd", "octave_counts", "octave_spreads"]

_MIN_OCTAVE, _MAX_OCTAVE = -1075, 1024  # ⌊log2 |a − b|⌋ for float64 a ≠ b with a finite difference
_EQUAL = 0  # key index of x = v
_OVERFLOW = _MAX_OCTAVE - _MIN_OCTAVE + 2  # key index of a difference that overflows
N_KEYS = _OVERFLOW + 1
_FALSE_POSITIVE = 0.01  # chance that some key holding no row is read as held (utility only)


def _octave_counts(B: np.ndarray, axes: np.ndarray, values: np.ndarray) -> list[np.ndarray]:
    """Counts of the octave keys of a block on the given axes, shape (len(axes), N_KEYS): the
    kernel of the release (module level: picklable to dask workers)."""
    out = np.zeros((len(axes), N_KEYS), dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for i, (k, v) in enumerate(zip(axes, values, strict=True)):
            dist = np.abs(B[:, k] - v)
            octave = np.floor(np.log2(dist))
            idx = np.where(np.isfinite(octave), octave - _MIN_OCTAVE + 1, _OVERFLOW)
            idx = np.where(dist == 0, _EQUAL, idx)
            out[i] += np.bincount(idx.astype(np.int64), minlength=N_KEYS)
    return [out]


def octave_counts(
    X: object,
    axes: np.ndarray,
    values: np.ndarray,
    rho: float,
    *,
    release: Release,
) -> np.ndarray:
    """The release itself (ρ-zCDP, replace-one, n public): the noisy counts, shape
    (len(axes), N_KEYS), of the octave keys of |x_k − v_k| on ``axes`` (key 0: x = v; keys 1 ..
    N_KEYS − 2: the octaves −1075 .. 1024; the last key: an overflowing distance). ``axes`` and
    ``values`` must be DP outputs or public; ρ is charged to ``release`` (one step, its prefix,
    or "octave-spreads") before any noise is drawn. Its noise sd is :func:`noise_sd`."""
    rel = release.named("octave-spreads")
    axes = np.asarray(axes, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    (counts,) = reduce_rows(X, partial(_octave_counts, axes=axes, values=values))
    h = len(axes)
    noisy = gaussian_mechanism(counts, _sensitivity(h), ZCDP(rho), accountant=rel.accountant,
                               noise=rel.noise, step=rel.step)
    return np.asarray(noisy).reshape(h, N_KEYS)


def _sensitivity(h: int) -> float:
    """L2 sensitivity of the h histograms under replace-one: one count down and one up in
    each."""
    return histogram_l2() * math.sqrt(h)


def noise_sd(h: int, rho: float) -> float:
    """The sd of the Gaussian noise on each count of a ρ-zCDP release on h axes (public)."""
    return _sensitivity(h) / math.sqrt(2.0 * rho)


#: where no single octave of a tied axis is read, its octaves are read in bins of up to
#: 2^(WIDE_LEVELS − 1) (:func:`_read_octaves`; False: the axis fails, as before). A zero-inflated
#: column with a lognormal rest at 3,000-6,000 rows and ε = 1 spreads its 600-1,800 other rows
#: over 6-10 octaves, none of which holds the ~200 a single octave needs: 71 of 1,870 fits of
#: generated tables failed after spending there (benchmarks/gaussian_error_tail.py)
TIE_BINS = True

Spread = tuple[float, float, float]  # (lo, mid, hi) of an axis's RMS distance to its value

#: a read key (octave or bin) more than this many octaves from the fullest read key of its axis
#: counts only above a false-positive rate of _FAR_FALSE_POSITIVE: at 1 % per axis, a lone noise
#: read hundreds of octaves out set a spread of 1e27-1e140 in 2 of ~600 fits of generated
#: tables; the rows of a column sit in one run of octaves, a far cluster of real rows clears
#: the stricter threshold as well
_FAR_OCTAVES = 8
_FAR_FALSE_POSITIVE = 1e-6
#: the bins' reading (a fallback where no single octave is read) at a false-positive rate of
#: 1e-4 per axis, not 1 %: there the true rows are thin too, and a lone noise read far out is
#: the fullest bin (a spread of 1e138 in one of ~600 fits at 1 %)
_BIN_FALSE_POSITIVE = 1e-4


def _near(position: np.ndarray, counts: np.ndarray, strict: np.ndarray | float,
          main: float | None = None) -> np.ndarray:
    """Which read keys (their positions in octaves, noisy counts) count: those within
    _FAR_OCTAVES of the fullest one (or of ``main``), and farther ones above ``strict``."""
    if main is None:
        main = float(position[int(np.argmax(counts))])
    return (np.abs(position - main) <= _FAR_OCTAVES) | (counts > strict)


def octave_spreads(
    X: object,
    axes: np.ndarray,
    values: np.ndarray,
    rho: float,
    *,
    release: Release,
    retry_rho: float = 0.0,
    retry_release: Release | None = None,
) -> tuple[list[Spread | None], float]:
    """Release (ρ-zCDP, replace-one, n public) the octave histograms of |x_k − v_k| on ``axes``
    (:func:`octave_counts`); return each axis's spread (post-processing; see the module
    docstring) as a bracket (lo, mid, hi) — one value three times when single octaves are read
    — or None for an axis none of whose octaves, nor (:data:`TIE_BINS`) of whose bins of
    octaves, was read as held by rows; and the ρ spent.

    ``retry_rho`` > 0: the axes of which nothing was read (a DP output) get a second release
    at ``retry_rho`` on those axes alone, charged to ``retry_release``, and are read from the
    inverse-variance weighted mean of both releases' counts (post-processing; its noise sd
    1/√(1/σ₁² + 1/σ₂²)). The ρ spent is then ``rho`` + ``retry_rho``."""
    n = int(X.shape[0])  # type: ignore[attr-defined]
    axes = np.asarray(axes, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    noisy = octave_counts(X, axes, values, rho, release=release)
    sd = noise_sd(len(axes), rho)
    out = [_spread(row, sd, len(axes), n) for row in noisy]
    failed = np.array([i for i, got in enumerate(out) if got is None], dtype=np.int64)
    if not (retry_rho > 0 and failed.size):
        return out, rho
    assert retry_release is not None
    both, sd_both = _with_retry(X, axes[failed], values[failed], noisy[failed], sd, retry_rho,
                                retry_release)
    for i, row in zip(failed, both, strict=True):
        out[int(i)] = _spread(row, sd_both, failed.size, n)
    return out, rho + retry_rho


def _spread(row: np.ndarray, sd: float, h: int, n: int) -> Spread | None:
    """One axis's spread from its noisy key counts ``row`` (noise sd ``sd``; ``h`` axes read
    together, for the false-positive rates): single octaves above the 1 % read threshold,
    else (:data:`TIE_BINS`) bins of octaves (:func:`_binned_spread`); None when nothing is
    read or the overflow key is."""
    read = sd * float(norm.isf(_FALSE_POSITIVE / (h * N_KEYS)))
    if row[_OVERFLOW] > read:
        return None
    held = row[1:_OVERFLOW] > read
    if not held.any():
        return _binned_spread(row[1:_OVERFLOW], n, sd, h) if TIE_BINS else None
    strict = sd * float(norm.isf(_FAR_FALSE_POSITIVE / (h * N_KEYS)))
    octave = _MIN_OCTAVE + np.flatnonzero(held).astype(np.float64)
    counts = row[1:_OVERFLOW][held]
    near = _near(octave, counts, strict)
    with np.errstate(over="ignore", invalid="ignore"):
        m2 = float(np.sum(counts[near] * (np.exp2(octave[near] + 0.5) / math.sqrt(n)) ** 2))
    got = math.sqrt(m2) if math.isfinite(m2) and m2 > 0 else None
    return None if got is None else (got, got, got)


def _binned_spread(octs: np.ndarray, n: int, sd: float, h: int) -> Spread | None:
    """The bracket of a tied axis's RMS distance to its value from its noisy octave counts
    ``octs`` read in bins of 2^ℓ octaves (:func:`_read_octaves`, z for a false-positive rate
    of :data:`_BIN_FALSE_POSITIVE` over every bin of every grid): the read rows lie at least
    2^a_B from the value in their bin B, so lo = √(Σ_B c_B 4^a_B / n) up to the counts' noise
    (rows not read only add to it), and below the highest read bin's upper edge 2^t, so
    hi = 2^t·√(Σ_B c_B / n); mid is the geometric middle. Bins far from the fullest one count
    only above a stricter threshold (:func:`_near`), and the top is the finest level's (a
    coarser level's raised top is not read: it reaches where no bin of this level was).
    Post-processing of the released counts; None when nothing is read."""
    grids = h * N_KEYS * (2 * WIDE_LEVELS - 1)
    z = float(norm.isf(_BIN_FALSE_POSITIVE / grids))
    got = _read_octaves(octs, z * sd)
    if got is None:
        return None
    lower, counts, width, _ = got
    keep = _near(lower + width / 2, counts,
                 sd * math.sqrt(width) * float(norm.isf(_FAR_FALSE_POSITIVE / grids)))
    lower, counts = lower[keep], counts[keep]
    top = float(np.max(lower)) + width
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        frac = float(np.sum(counts)) / n
        lo = math.sqrt(float(np.sum(counts * np.exp2(2.0 * lower))) / n)
        hi = math.ldexp(math.sqrt(frac), int(top)) if top < 1024 else math.inf
    if not (0 < lo <= hi < math.inf):
        return None
    return lo, math.sqrt(lo) * math.sqrt(hi), hi


# The wide-axis reading: bins of 1, 2, 4 and 8 octaves (sums of the released octave counts,
# post-processing), the finest level holding a bin read
WIDE_LEVELS = 4
#: a wide axis's read bins and top far from its fullest read bin need the stricter threshold
#: (:func:`_read_octaves`; False: read at the 1 % rate alone, as before). A column with gross
#: errors read a noise bin 48 octaves out: its bracket's top 5.6e14 for an sd of 714, and
#: em's diagonal frame then fitted 110 nat/row below one Gaussian (generated family 1341)
WIDE_FAR = True


def _read_octaves(octs: np.ndarray, read: float, strict: float | None = None
                  ) -> tuple[np.ndarray, np.ndarray, int, float] | None:
    """The finest level's read bins of noisy octave counts ``octs`` (index i: the octave
    _MIN_OCTAVE + i): (lower edges in octaves, noisy sums, width in octaves, and the top: the
    highest upper edge of a read bin), or None when no bin of any level clears
    ``read`` · √width. A level of width 2^ℓ > 1 has two grids of bins, one shifted by half a
    bin, so mass that straddles a bin edge is read as well as mass inside a bin; where both
    grids read bins, the one whose read bins hold more is kept. Coarser levels then raise the
    top where a bin still clears the threshold without the octaves already read (mass in
    octaves each too thin to be read, above the read ones); where every octave is read (a
    large budget) they add nothing. ``strict`` (a count's threshold, as ``read``): a bin more
    than :data:`_FAR_OCTAVES` from the fullest bin of the finest read level counts — for the
    read bins and for the top — only above ``strict`` · √width (:func:`_near`; a lone noise
    read 40-180 octaves out of a column's rows raised its top to 2^49 at the 1 % rate).
    Post-processing: deterministic on the released counts."""
    found = None
    rest = octs.copy()
    top = -math.inf
    for level in range(WIDE_LEVELS):
        width = 2**level
        best = None
        for shift in ((0,) if width == 1 else (0, width // 2)):
            pad = (-(octs.size + shift)) % width
            sums = np.concatenate([np.zeros(shift), octs if found is None else rest,
                                   np.zeros(pad)]).reshape(-1, width).sum(axis=1)
            held = np.flatnonzero(sums > read * math.sqrt(width))
            if strict is not None and held.size:
                # far from the fullest bin (the finest read level's, or this grid's own at
                # that level) a bin needs the strict threshold
                centre = (held * width - shift + _MIN_OCTAVE + width / 2).astype(np.float64)
                main = (None if found is None
                        else float(found[0][int(np.argmax(found[1]))] + found[2] / 2))
                held = held[_near(centre, sums[held], strict * math.sqrt(width), main)]
            if not held.size:
                continue
            top = max(top, float(held[-1] * width - shift + _MIN_OCTAVE + width))
            if found is None and (best is None or sums[held].sum() > best[1].sum()):
                best = (held * width - shift + _MIN_OCTAVE, sums[held], width)
        if found is None and best is not None:
            found = best
            for a in best[0]:  # the octaves the finest read bins cover
                lo = int(a) - _MIN_OCTAVE
                rest[max(lo, 0):lo + width] = 0.0
    return None if found is None else (*found, top)


def octave_brackets(
    Y: np.ndarray, rho: float, *, release: Release, retry_rho: float = 0.0,
    retry_release: Release | None = None,
) -> tuple[list[Spread | None], float]:
    """The scale bracket (lo, mid, hi) of σ_k for each column k of the pair differences ``Y``
    (m × h, each row the difference of two rows of the data, a record in at most one pair),
    from one ρ-zCDP octave release of |Y_k| (:func:`octave_counts` with values 0; replace-one
    changes one pair, so one count down and one up per column: the sensitivity the release
    assumes). None for a column of which nothing is read, or whose differences overflow.

    Post-processing: the released octave counts are summed into bins of 2^ℓ octaves,
    ℓ = 0 .. WIDE_LEVELS − 1 (two grids per level ℓ > 0, one shifted by half a bin; a sum's
    noise sd is 2^(ℓ/2) that of a count), and the finest level with a bin whose sum clears
    z·sd·2^(ℓ/2) is read (z: a false-positive rate of 1 % over every bin of every grid;
    :func:`_read_octaves`): with 2^t the highest upper edge of a bin read (coarser levels
    reach thin octaves above the read ones), |Y_k| < 2^t for the rows read, and
    σ_k = RMS(Y_k)/√2 ≤ 2^t/√2 for them; hi = 2^t leaves a factor √2 for the rows in
    octaves too thin to be read. lo is half
    of √(Σ_B c_B 4^(a_B) / m)/√2 over the read bins B = [a_B, a_B + 2^ℓ) (their lower edges:
    a lower bound on σ_k up to the counts' noise), mid the geometric middle. Also returns
    the ρ spent.

    ``retry_rho`` > 0: the columns without a usable bracket (None, lo = 0 or hi = ∞: a DP
    output) get a second release at ``retry_rho`` on those columns alone, charged to
    ``retry_release`` and read with the first as in :func:`octave_spreads`."""
    m, h = Y.shape
    noisy = octave_counts(Y, np.arange(h), np.zeros(h), rho, release=release)
    sd = noise_sd(h, rho)
    out = [_wide_bracket(row, sd, h, m) for row in noisy]
    failed = np.array([i for i, br in enumerate(out)
                       if br is None or not (0.0 < br[0] and math.isfinite(br[2]))],
                      dtype=np.int64)
    if not (retry_rho > 0 and failed.size):
        return out, rho
    assert retry_release is not None
    both, sd_both = _with_retry(Y, failed, np.zeros(failed.size), noisy[failed], sd,
                                retry_rho, retry_release)
    for i, row in zip(failed, both, strict=True):
        out[int(i)] = _wide_bracket(row, sd_both, failed.size, m)
    return out, rho + retry_rho


def _wide_bracket(row: np.ndarray, sd: float, h: int, m: int) -> Spread | None:
    """One column's scale bracket from its noisy octave counts ``row`` of m pair differences
    (noise sd ``sd``; ``h`` columns read together): :func:`octave_brackets`' reading."""
    grids = h * N_KEYS * (2 * WIDE_LEVELS - 1)
    z = float(norm.isf(_FALSE_POSITIVE / grids))
    if row[_OVERFLOW] > z * sd:
        return None
    got = _read_octaves(row[1:_OVERFLOW], z * sd,
                        sd * float(norm.isf(_FAR_FALSE_POSITIVE / grids)) if WIDE_FAR else None)
    if got is None:
        return None
    lower, counts, width, top = got  # top: log2 of the highest read bin's upper edge
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        rel2 = float(np.sum(counts / m * np.exp2(2.0 * (lower - top))))
        hi = math.ldexp(1.0, int(top)) if top < 1024 else math.inf
        lo = 0.5 * hi * math.sqrt(rel2 / 2.0)
    return lo, math.sqrt(lo) * math.sqrt(hi), hi


def _with_retry(X: object, axes: np.ndarray, values: np.ndarray, first: np.ndarray,
                sd: float, rho: float, release: Release) -> tuple[np.ndarray, float]:
    """A second release (:func:`octave_counts` at ``rho`` on ``axes``) combined with the
    first's counts ``first`` (noise sd ``sd``) on those axes: their inverse-variance weighted
    mean and its noise sd 1/√(1/σ₁² + 1/σ₂²) (post-processing of the two releases)."""
    again = octave_counts(X, axes, values, rho, release=release)
    w1, w2 = sd**-2, noise_sd(axes.size, rho) ** -2
    return (first * w1 + again * w2) / (w1 + w2), 1.0 / math.sqrt(w1 + w2)
