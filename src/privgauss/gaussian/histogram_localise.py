"""Private coarse localisation of Gaussian rows by stability histograms, steps (a)–(b) of
:mod:`.histogram` (our design after Karwa–Vadhan 2018): a per-axis scale bracket and a
centre within a public radius, with no range parameter.

**Neighbours:** replace one row; n is public. **Guarantee:** the d scale and d location
histograms compose to the sum of their budgets (:mod:`.histogram_budget`); what follows them
varies only through their releases.

Pipeline (all grids, widths and offsets are public or derived from earlier DP outputs):

(a) *Scale* (skipped when the covariance is known). Rows are put in a random (public) order and
    paired; the pair differences Y_j = X_{2j} − X_{2j+1} ~ N(0, 2Σ). For every axis k a stability
    histogram of the integer keys ⌊log2 |Y_jk| + u_k⌋ (u_k a public uniform offset) is released.
    The most populated released bin b_k brackets the axis scale σ_k = √Σ_kk: if the bin holds at
    least 12 % of the pairs (the modal bin holds ≈ 32 %), then log2(√2 σ_k) ∈ [b_k − u_k − 0.65,
    b_k − u_k + 2.7], a factor-10 bracket, whatever σ_k is (1e-300 to 1e150).
    *Ties.* Pair differences that are exactly 0 (0/1 flags, counts with many zeros, rounded
    values, duplicated rows) share one key; when it tops the release, the top released non-zero
    bin gives the scale. When it is the *only* bin released, the axis is *tied* (almost all
    rows share a value): its location histogram (b) counts exact values instead of bins; the
    released values give the centre and spread (their noisy-count-weighted mean and standard
    deviation), and a single released value makes the axis *degenerate* — a constant column,
    located exactly at that value, with variance 0 — unless its released count leaves more
    than 1 % of the rows elsewhere: the other values were each too rare to be released (a flag
    with 6 % ones, a count with 72 % zeros and a long tail), and the axis's spread is read from
    one more release, a ρ-zCDP histogram of the octaves of |x − value| over a fixed finite
    domain (:mod:`.histogram_ties`; run only for such axes, paid from the refinement's share).
    *Wide axes.* A column whose values spread over many orders of magnitude (incomes,
    budgets, counts with a long tail) has pair differences spread over many octaves, so no
    bin may reach the threshold (its modal bin held 15-16 % of the pairs on real tables
    against the Gaussian's 32 %, and the threshold is sized to half of that): an axis whose
    scale histogram releases *no* bin is not a failure but gets one more release, a ρ-zCDP
    histogram of the octaves of its |Y_jk| over the fixed finite domain of float64
    (:func:`~privgauss.gaussian.histogram_ties.octave_brackets`; one release for all such
    axes, only when there are any, paid from the refinement's share). Its counts, summed into
    bins of 1, 2, 4 or 8 octaves (post-processing), give an upper bracket — the upper edge of
    the highest bin read, doubled for octaves too thin to be read above it — and below it
    the axis gets a bracket as wide as a top bin's (LO_RATIO..HI_RATIO around its middle), so
    the refinement's prior is as wide as for any axis bracketed by its top bin.
    These are post-processing decisions on released histograms; the histograms run, and are
    charged, the same whatever they decide.
(b) *Location.* For every axis k a stability histogram of ⌊(x_k − o_k) / w_k⌋ is released, with bin
    width w_k = 2 σ_hi,k (the upper end of the bracket; 2 when the covariance is known and the data
    whitened) and a public uniform offset o_k ∈ [0, w_k). The bin containing μ_k holds at least
    Φ(2) − ½ ≈ 48 % of the rows and bins two or more away at most 2.3 %, so the most populated
    released bin is μ_k's bin or a neighbour of it: its centre c_k satisfies |μ_k − c_k| ≤ 1.5 w_k;
    we use the radius r_k = 2 w_k.
*Subset.* When n is large against what (a)–(b) need, both read a uniformly random subset of
    the rows instead of all of them (drawn with the public randomness, without replacement, its
    size a function of n, d and the budget: :func:`localisation_rows`; at ε = 1, d = 10 about
    2.6e5 rows, from n ≈ 5e5). A record is in the subset at most once, so each histogram's
    sensitivity and charge are unchanged (no amplification is claimed); the subset keeps 16
    times the rows each threshold needs and releases a value held by 1 % of its rows w.h.p.,
    so only the cost of the coarse localisation changes (at n = 1e6, d = 10 it was 40 % of the
    fit). A *tied* axis (a DP output of (a)) counts its exact values over all n rows in (b),
    so its rarer values are released, and a constant column read, as without the subset.
    The refinement (c) reads all n rows.

**Failure (⊥).** If a histogram releases no bin, or the top location bin is saturated by
overflow, :class:`EstimationFailed` is raised after the budget spent so far; it names the step
and an approximate n the step needs, computed from τ and the bin masses only. A constant column
is not a failure (see *Ties* above), nor a tied column whose rarer values the octave release
reads, nor a scale histogram that releases no bin when the wide axes' octave release reads
its column (*Wide axes*).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from ..backends import as_rows, is_dask, pair_differences
from ..bin_counts import log_scale_key_counts
from ..exceptions import EstimationFailed
from ..mechanisms import Release, gaussian_stability_histograms, stability_histogram
from ..privacy import ApproxDP
from .histogram_budget import (
    FIT_HALF_WIDTH,
    RADIUS_FACTOR,
    WIDTH_FACTOR,
    JointBudget,
    count_noise_sd,
    histogram_threshold,
    localisation_rows,
    needed_n_location,
    needed_n_scale,
)
from .histogram_keys import (
    KEY_LIMIT,
    ZERO_KEY,
    AxisKeys,
    axis_counts,
    location_counts,
    pair_scale_keys,
    pick_counts,
    subset_rows,
)
from .histogram_reading import (
    CONSTANT_MAX_OTHER,
    HI_RATIO,
    LO_RATIO,
    bracket,
    constant_var,
    fitted_log_scale,
    not_localised,
    off_fraction,
    scale_bin,
    tied_axis,
    top_bin,
)

__all__ = ["Localisation", "localise"]


@dataclass(frozen=True)
class Localisation:
    """Output of :func:`localise` (every field is a DP output or public).

    ``center`` (d,) approximates μ with |μ_k − c_k| ≤ ``radius[k]`` w.h.p.; ``scale`` (d,) is the
    middle of the per-axis bracket [``scale_lo``, ``scale_hi``] of √Σ_kk (all ones when the data
    were whitened by a known covariance). The released histograms are kept for inspection.
    ``degenerate`` (d,) marks the axes read as constant (one released value; scale 0, radius 0,
    ``center`` that value); None when the covariance was known. ``degenerate_var`` (d,) is the
    variance such an axis is released with: the released fraction of rows away from that value
    (plus one noise sd of its count), times one unit of the column squared (so a rare flag read
    as constant still gives its held-out 1s a finite, moderate log-likelihood); 0 elsewhere.
    ``tie_rho`` is the zCDP the octave release of tied axes spent (0 when it did not run);
    ``rare`` the axes whose spread that release gave (a rare flag: the refinement searches
    their far rows, :mod:`.coinpress.direction_cover`). ``wide_rho`` is the zCDP the octave
    release of wide axes spent (0 when it did not run), ``wide`` the axes whose scale
    histogram released no bin and whose bracket that release gave.
    """

    center: np.ndarray
    radius: np.ndarray
    scale: np.ndarray
    scale_lo: np.ndarray
    scale_hi: np.ndarray
    scale_histograms: list[dict[Any, int]] = field(default_factory=list)
    location_histograms: list[dict[Any, int]] = field(default_factory=list)
    degenerate: np.ndarray | None = None
    degenerate_var: np.ndarray | None = None
    tie_rho: float = 0.0
    rare: tuple[int, ...] = ()
    wide_rho: float = 0.0
    wide: tuple[int, ...] = ()


def _axis_top_bins(
    keys: AxisKeys,
    d: int,
    budget: ApproxDP | JointBudget,
    what: str,
    needed_n: int,
    released: list[dict[Any, int]],
    *,
    release: Release,
    fail_step: str,
    allow_empty: bool = False,
) -> Iterator[Any]:
    """Per axis k < d, release the stability histogram of ``keys(k)`` (appended to
    ``released``) and yield its top bin; EstimationFailed (a DP output, naming ``fail_step``)
    when an axis releases no bin, or None for it with ``allow_empty``. The histograms are
    charged to ``release``, their ledger steps ``{release.step}-axis-{k}`` (Laplace, one
    (ε, δ) release per axis) or ``{release.step}-axes`` (a :class:`JointBudget`: one joint
    release of the d histograms)."""
    joint = None
    if isinstance(budget, JointBudget):
        joint = gaussian_stability_histograms(
            None, budget.rho, budget.delta, accountant=release.accountant, noise=release.noise,
            step=f"{release.step}-axes",
            columns=[axis_counts(keys, k) for k in range(d)],
        )
    for k in range(d):
        if joint is not None:
            hist = joint[k]
        else:
            assert isinstance(budget, ApproxDP)
            axis_keys, counts = keys(k)
            hist = stability_histogram(
                axis_keys, budget, accountant=release.accountant, noise=release.noise,
                step=f"{release.step}-axis-{k}", counts=counts,
            )
        released.append(hist)
        if not hist and allow_empty:
            yield None
            continue
        if not hist:
            raise EstimationFailed(
                f"no {what} bin was released for axis {k}: no bin held enough rows — the "
                "column's values spread over many orders of magnitude (no common scale: "
                "transform it, e.g. log, or give bounds), or too few rows for this budget",
                step=fail_step,
                needed_n=needed_n,
            )
        yield top_bin(hist)


def localise(
    X: np.ndarray,
    scale_budget: ApproxDP | JointBudget | None,
    location_budget: ApproxDP | JointBudget,
    *,
    release: Release,
    tie_rho: float = 0.0,
    wide_rho: float = 0.0,
    tie_retry_rho: float = 0.0,
    wide_retry_rho: float = 0.0,
) -> Localisation:
    """Private coarse location (and per-axis scale) of Gaussian rows, steps (a)–(b) of the module
    docstring: (d·ε_s + d·ε_l, d·δ_s + d·δ_l)-DP under replace-one (n public).

    ``scale_budget=None`` means the rows are already whitened (covariance I): only the location
    histograms run, with bin width 2. When n is large the histograms read a random subset of
    :func:`localisation_rows` rows (module docstring, *Subset*). An axis whose released scale
    histogram holds only the zero bin (most pair differences exactly 0) is *tied*: its location
    histogram counts exact
    values instead of bins, and the released values give its centre and spread; when a single
    value is released the axis is ``degenerate`` (a constant column: scale 0, located at that
    value). These decisions read released histograms only: the localisation's ledger entries
    are the same for every dataset of this size, and what follows may vary only through these
    DP outputs. Raises :class:`EstimationFailed` (a DP output) when a histogram
    releases nothing usable. An :class:`ApproxDP` budget runs one Laplace stability
    histogram per axis at that budget; a :class:`JointBudget` releases the d histograms of the
    step jointly with discrete Gaussian noise (δ-approximate ρ-zCDP in all).

    Every histogram is charged to ``release``; the ledger steps are ``<s>-scale-axes``,
    ``<s>-axes`` and ``<s>-ties`` (``-axis-k`` for per-axis Laplace histograms), ``<s>`` the
    context's step, or "localise" when it has none.

    ``tie_rho`` > 0: a tied axis whose one released value leaves more than 1 % of the rows
    elsewhere (a DP output) gets its spread from a ``tie_rho``-zCDP octave release
    (:func:`~privgauss.gaussian.histogram_ties.octave_spreads`, run once for all such axes,
    only when there are any; ``Localisation.tie_rho`` says what it spent): read octave by
    octave, its bracket is a top bin's around the spread; read in bins of octaves, it is
    anchored at the read upper end as a wide axis's (a bracket as wide as the bins would make
    the refinement's prior too wide: Tobacco at seed 3 came out 18-88× too wide in every
    column). 0: such an axis fails. ``tie_retry_rho`` > 0: the axes that release read
    nothing of (a DP output) get a second one at ``tie_retry_rho``, ledger step
    ``<s>-ties-retry``, read together with the first (``tie_rho`` then counts both); an axis
    neither reads fails.

    ``wide_rho`` > 0: axes whose scale histogram released no bin (a DP output) get their
    bracket from a ``wide_rho``-zCDP octave release of their pair differences
    (:func:`~privgauss.gaussian.histogram_ties.octave_brackets`, ledger step ``<s>-wide``,
    run once for all such axes between the scale and location histograms, only when there
    are any; ``Localisation.wide_rho`` says what it spent); 0: such an axis fails, as
    before. ``wide_retry_rho`` > 0: the axes that release brackets nothing of get a second
    one (``<s>-wide-retry``), read with the first.
    """
    step = release.named("localise").step
    src = release.noise
    Xc = as_rows(X)
    n, d = Xc.shape
    # the histograms read n_l rows: all rows in a random order, or when n is large a uniformly
    # random subset of them in random order (localisation_rows); the scale pairs are
    # consecutive rows of that order. All public randomness first, so it cannot depend on how
    # much noise was drawn.
    n_l = localisation_rows(n, d, scale_budget, location_budget)
    order = src.rng.permutation(n) if n_l == n else src.rng.choice(n, n_l, replace=False)
    u = src.rng.random(d)
    v = src.rng.random(d)
    Xl = Xc
    if n_l < n:
        Xl, order = subset_rows(Xc, order), np.arange(n_l)

    scale_h: list[dict[Any, int]] = []
    tied = np.zeros(d, dtype=bool)
    wide = np.zeros(d, dtype=bool)
    spent_wide = 0.0
    if scale_budget is None:
        s_mid = s_lo = s_hi = np.ones(d)
    else:
        tau = histogram_threshold(scale_budget, d)
        if n // 2 < 1:
            raise EstimationFailed(
                "scale localisation needs at least two rows",
                step=f"{step}-scale",
                needed_n=needed_n_scale(tau),
            )
        m = n_l // 2
        # |x_{π(2j)} − x_{π(2j+1)}|; dask rows stream once into the differences, numpy rows
        # are keyed block by block (bin_counts: the same counts, no n/2 × d temporaries)
        scale_keys: AxisKeys
        Y: np.ndarray | None = None
        if is_dask(Xl):
            Y = pair_differences(Xl, order[1 : 2 * m : 2], order[0 : 2 * m : 2])
            np.abs(Y, out=Y)
            scale_keys = partial(pair_scale_keys, Y, u)
        else:
            scale_keys = log_scale_key_counts(Xl, order[1 : 2 * m : 2], order[0 : 2 * m : 2],
                                              u, ZERO_KEY).__getitem__
        b = np.zeros(d)
        for k, got in enumerate(
            _axis_top_bins(scale_keys, d, scale_budget, "scale",
                           needed_n_scale(tau), scale_h,
                           release=Release(release.accountant, src, f"{step}-scale"),
                           fail_step=f"{step}-scale", allow_empty=wide_rho > 0)
        ):
            if got is None:  # released no bin: a wide axis, bracketed below
                wide[k] = True
                continue
            top = scale_bin(scale_h[k])
            tied[k] = top is None
            b[k] = 0.0 if top is None else top
        s_mid, s_lo, s_hi = bracket(b - u)  # log2 |Y| lies in [b − u, b − u + 1)
        noise_sd = count_noise_sd(scale_budget, d)
        for k in map(int, np.flatnonzero(~tied & ~wide)):  # narrow where counts pin it
            a = fitted_log_scale(scale_h[k], int(b[k]), m, tau, noise_sd)
            if a is not None:
                s_mid[k] = math.exp2(a - u[k]) / math.sqrt(2.0)
                s_lo[k] = s_mid[k] * 2.0**-FIT_HALF_WIDTH
                s_hi[k] = s_mid[k] * 2.0**FIT_HALF_WIDTH
        s_mid[tied], s_lo[tied], s_hi[tied] = 1.0, 1.0, 1.0  # set from the location release
        if wide.any():  # a DP output: axes whose scale histogram released no bin
            from .histogram_ties import octave_brackets

            axes = np.flatnonzero(wide)
            first, second = order[1 : 2 * m : 2], order[0 : 2 * m : 2]
            Yw = (np.abs(Y[:, axes]) if Y is not None
                  else pair_differences(np.asarray(Xl)[:, axes], first, second))
            got_w, spent_wide = octave_brackets(
                Yw, wide_rho, release=Release(release.accountant, src, f"{step}-wide"),
                retry_rho=wide_retry_rho,
                retry_release=Release(release.accountant, src, f"{step}-wide-retry"))
            for k, br in zip(map(int, axes), got_w, strict=True):
                if br is None or not (0.0 < br[0] and math.isfinite(br[2])):
                    raise EstimationFailed(
                        f"no scale bin was released for axis {k}, and its octave release "
                        "read none either: the column's values spread over too many orders "
                        "of magnitude for this budget (transform it, e.g. log, or give "
                        "bounds), or too few rows",
                        step=f"{step}-wide",
                        needed_n=needed_n_scale(tau),
                    )
                # an octave above the read upper end (thin top octaves: MedExp at
                # ε = 0.8 had a KL of 111 at one seed without it, ≤ 10.2 with it), and
                # below it a bracket as wide as a top bin's: the read lower end (2^6-2^10
                # below at coarse levels) made the refinement's prior 2^15-2^20 wide, its
                # chain long, and at n = 2,200, d = 7 the other columns' variances e^2.6-e^10
                # off (e^0.4-e^1.3 with this width, as without a wide axis there)
                s_mid[k] = 2.0 * br[2] / HI_RATIO
                s_lo[k], s_hi[k] = s_mid[k] * LO_RATIO, 2.0 * br[2]

    w = WIDTH_FACTOR * s_hi
    if not np.all(np.isfinite(w) & (w > 0)):  # a function of released bins only
        raise EstimationFailed(
            "the released scale is outside the floating-point range", step=f"{step}-scale"
        )
    offset = v * w
    tau_l = histogram_threshold(location_budget, d)
    loc_keys = location_counts(Xl, offset, w, tied)
    rows_of = np.full(d, n_l)  # the rows each axis's location histogram counts
    if n_l < n and tied.any():
        # a tied axis (a DP output of the scale release) counts its exact values over all
        # rows: a value on a small fraction of them is released as without the subset, and a
        # column is read as constant only from all its rows (the cost: one pass over those
        # columns; no tied axis on continuous data)
        ta = np.flatnonzero(tied)
        loc_keys = partial(pick_counts, loc_keys,
                           location_counts(Xc[:, ta], offset[ta], w[ta], tied[ta]),
                           {int(k): i for i, k in enumerate(ta)})
        rows_of[ta] = n
    loc_h: list[dict[Any, int]] = []
    center = np.empty(d)
    deg_var = np.zeros(d)
    spread_of: dict[int, float] = {}  # tied axes left to the octave release
    for k, top in enumerate(
        _axis_top_bins(loc_keys, d, location_budget, "location", needed_n_location(tau_l),
                       loc_h, release=Release(release.accountant, src, step),
                       fail_step=f"{step}-location")
    ):
        if tied[k]:
            center[k], spread = tied_axis(loc_h[k])
            if spread == 0.0:
                sd = count_noise_sd(location_budget, d)
                if off_fraction(loc_h[k], int(rows_of[k]), sd) > CONSTANT_MAX_OTHER:
                    if tie_rho <= 0:
                        raise not_localised(k, loc_h[k], int(rows_of[k]),
                                         f"{step}-location")
                    spread_of[k] = math.nan  # read by the octave release below
                else:
                    deg_var[k] = constant_var(loc_h[k], int(rows_of[k]), sd)
            s_mid[k], s_lo[k], s_hi[k] = spread, spread * LO_RATIO, spread * HI_RATIO
            continue
        if abs(top) >= KEY_LIMIT - 1:
            raise EstimationFailed(
                f"the released location bin of axis {k} is saturated (values far beyond the "
                "released scale)",
                step=f"{step}-location",
            )
        center[k] = offset[k] + (top + 0.5) * w[k]
    spent_ties = 0.0
    rare: tuple[int, ...] = ()
    if spread_of:  # a DP output: tied axes whose other values were each too rare
        from .histogram_ties import octave_spreads

        axes = np.array(sorted(spread_of), dtype=np.int64)
        spreads, spent_ties = octave_spreads(
            Xc, axes, center[axes], tie_rho,
            release=Release(release.accountant, src, f"{step}-ties"), retry_rho=tie_retry_rho,
            retry_release=Release(release.accountant, src, f"{step}-ties-retry"))
        rare = tuple(map(int, axes))
        for k, got in zip(map(int, axes), spreads, strict=True):
            if got is None:
                raise not_localised(k, loc_h[k], int(rows_of[k]), f"{step}-ties")
            if got[0] == got[2]:  # single octaves read: the spread, bracketed as a top bin
                s_mid[k], s_lo[k], s_hi[k] = got[1], got[1] * LO_RATIO, got[1] * HI_RATIO
            else:  # bins of octaves: anchored at the upper end, as a wide axis (above)
                s_hi[k] = 2.0 * got[2]
                s_mid[k] = s_hi[k] / HI_RATIO
                s_lo[k] = s_mid[k] * LO_RATIO
    return Localisation(
        center=center,
        radius=RADIUS_FACTOR * WIDTH_FACTOR * s_hi,
        scale=s_mid,
        scale_lo=s_lo,
        scale_hi=s_hi,
        scale_histograms=scale_h,
        location_histograms=loc_h,
        degenerate=tied & (s_mid == 0),
        degenerate_var=deg_var,
        tie_rho=spent_ties,
        rare=rare,
        wide_rho=spent_wide,
        wide=tuple(map(int, np.flatnonzero(wide))),
    )
