"""Bound-free (ε, δ)-DP estimation of a Gaussian: private localisation by stability histograms,
then CoinPress-style refinement.

This is our own design in the spirit of Karwa–Vadhan (2018, "Finite sample differentially private
confidence intervals", univariate two-shot: histogram, then clipped mean), extended to d
dimensions and to unknown covariance; the refinement is the CoinPress iteration of Biswas, Dong,
Kamath and Ullman (2020). No range parameter (mean bound, variance bounds) is needed: the data may
be centred anywhere in [−1e150, 1e150] and have any scale from ~1e-300 up, as long as the scale
is not below the float64 resolution of the location (|μ|·1e-15).

**Neighbours:** replace one row; n is public. **Guarantee:** (ε, δ)-DP in total.

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
(c) *Refinement.* In the coordinates z = (x − c) / s (s_k the middle of the scale bracket) the mean
    lies within ‖r / s‖ of 0 and the diagonal of the covariance within the squared bracket, so
    CoinPress (:func:`~privgauss.gaussian.coinpress.coinpress_gaussian`) runs with the zCDP budget
    left over; with a known covariance the data are whitened first and
    :func:`~privgauss.gaussian.coinpress.coinpress_mean` is used. A degenerate axis enters the
    refinement as a column of public N(0, 1) noise (so the refinement's plan, prior and ledger
    are those of d ordinary axes, whatever was degenerate) and leaves it with its released
    value as mean and zero variance and covariances.

**Composition of the histograms.** One row changes one pair difference, hence one key in each of
the d scale histograms, and one key in each of the d location histograms. Each histogram is the
library's replace-one stability histogram (L1 sensitivity 2, discrete Laplace(2/ε_i) counts,
threshold τ_i = 1 + (2/ε_i) ln(1/δ_i)), run at (ε_i, δ_i), and the 2d releases compose basically to
(Σε_i, Σδ_i). Viewed as one joint histogram over (axis, bin) keys this is exactly the calibration
of an L1-sensitivity-2d histogram with Laplace(2d/ε_h) noise and a union bound over the d bins
that can appear: so no separate sensitivity helper is needed. (Advanced composition only beats
this for d ≳ 2 ln(1/δ'), i.e. d > 30; for such d a Gaussian-noise joint histogram with L2
sensitivity √(2d) would be cheaper — not implemented.)

**Practical route: joint Gaussian histograms** (``constants="practical"``, the default). The d
scale histograms are released in one go with discrete Gaussian noise
(:func:`~privgauss.mechanisms.gaussian_stability_histograms`: L2 sensitivity √(2d), threshold
from the Gaussian tail), and likewise the d location histograms; each release is δ-approximate
ρ-zCDP and composes with the refinement's zCDP steps by adding ρ, so the whole fit is
δ_h-approximate ρ_all-zCDP with ρ_all = the largest ρ that (ε, δ − δ_h) allows, δ_h = δ/4
(:func:`localisation_plan`). At d = 10, (1, 1e-6) the histograms then take 25 % of ρ_all at
n = 3,000 and 0.5 % at n = 1e5, where d Laplace histograms composed basically needed more than
ε = 1 for the scale alone at n = 3,000. The released counts of the top scale bins are also
fitted to the Gaussian model (post-processing), which narrows the factor-10 bracket of (a) to
a factor 2 when at least two bins near the top were released. The refinement is
:func:`~privgauss.gaussian.coinpress.coinpress_gaussian` (which switches to its mean-first
variant at small n·ρ).

**Per-axis Laplace route** (:func:`localisation_budget`; the fit uses it with
``constants="theory"``). (ε_h, δ_h = δ/2) goes to the histograms; ε_h is chosen from public
quantities only (n, d, ε, δ) as the smallest value for which every threshold is at most half
the expected count of the bin we need (``constants="practical"``, clamped to [ε/20, ε/2]) or ε/2
(``constants="theory"``). The rest, (ε − ε_h, δ − δ_h), is converted to the largest ρ whose tight
zCDP→(ε, δ) conversion fits (``accountant.remaining_zcdp()``) and spent on the refinement, so the
ledger sums to exactly (ε, δ).

**Failure (⊥).** If a histogram releases no bin, or the top location bin is saturated by
overflow, :class:`EstimationFailed` is raised after the budget spent so far; it names the step
and an approximate n the step needs, computed from τ and the bin masses only. A constant column
is not a failure (see *Ties* above), nor a tied column whose rarer values the octave release
reads.

**Assumptions (utility only; privacy never depends on them).** Rows i.i.d. N(μ, Σ). CoinPress
needs eigenvalue bounds lo·I ⪯ Σ_z ⪯ hi·I for the standardised covariance: the upper one follows
from the diagonal bracket (λ_max ≤ trace), the lower one cannot be learnt from per-axis scales
(two perfectly correlated axes have λ_min = 0), so we *assume* the correlation matrix of Σ has
condition number at most ``corr_condition`` (default 100; larger values, e.g. 1e6–1e8, let the
refinement reach condition 1e8, but at d = 5, n = 20000, (1, 1e-6) its long whitening chain then
failed in 1 of 4 noise seeds, off by 1e2–1e3) and set lo = (min diagonal) / corr_condition
(the practical route raises the condition with the budget: :func:`budget_condition`). Real
tables break the assumption (dummies that sum to 1, near-collinear columns), so the practical
refinement sees its rows plus a ±η jitter, η² = 0.03·lo (:mod:`.ridge`): the covariance it
estimates is Σ_z + η²·I, whose smallest eigenvalue is at least η² whatever the data (3 % of
lo: measured, the chain copes with that); η²·I is removed from the release and the spectrum
floored at 0.01·η², a ridge that vanishes with lo. A direction the budget cannot resolve is then
returned at the ridge (overestimated, never underestimated). When the released (jittered)
covariance still has an eigenvalue below 1e-3·η², the whitening chain failed and
:class:`EstimationFailed` is raised after spending instead of returning an estimate off by
orders of magnitude. The localisation needs roughly n ≥ 12.5 τ_s rows (τ_s the scale
histograms' threshold; reported as ``needed_n`` on failure).
Example: n = 20000, d = 5, (ε, δ) = (1, 1e-6) gives ε_h = 0.14 (14 % of ε) and τ_s = 1600;
measured accuracy at mean 1e6·1 and scale 1e3 (10 noise seeds): Mahalanobis mean error
1.3–2.1× and covariance error ‖Σ^{-1/2} Σ̂ Σ^{-1/2} − I‖_F 1.0–2.2× the non-private ones, the
same after translating by 1e12 or rescaling by 1e-6.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from scipy.stats import norm

from ..backends import as_rows, is_dask, map_rows, pair_differences, take_rows
from ..bin_counts import location_key_counts, log_scale_key_counts
from ..clipped_stats import transform_rows
from ..exceptions import EstimationFailed, PrivacyBudgetError
from ..linalg import inv_sqrtm_psd, sqrtm_psd, sym
from ..mechanisms import gaussian_stability_histograms, stability_histogram
from ..noise import RandomState, as_noise
from ..privacy import ZCDP, Accountant, ApproxDP, Budget, BudgetPlan, approx_to_zcdp, has_delta
from ..privacy.budgets import MIN_EPS
from ..sensitivity import (
    gaussian_stability_histogram_threshold,
    histogram_l2,
    stability_histogram_threshold,
)
from ..validation import check_probability
from .ridge import jitter_rows, jitter_seed, transform_jittered, unjitter

__all__ = [
    "JointBudget",
    "Localisation",
    "histogram_gaussian",
    "histogram_plan",
    "localisation_budget",
    "localisation_plan",
    "localisation_rows",
    "localise",
]

# P(a <= log2|Z| < a + 1), Z ~ N(0, 1), is maximal (0.3227) at a = -0.557 and at least 0.12 for
# a in [-2.69, 0.63]; the bracket below is that interval rounded outwards.
_LOG_MODE = -0.557
_LOG_LO, _LOG_HI = -2.7, 0.65
P_SCALE = 0.32  # mass of the modal log2 bin of |Z|
P_LOCATION = 0.47  # worst-case mass of the bin holding μ when the width is >= 2 σ
_SAFETY = 0.5  # thresholds are set to at most this fraction of the expected top count
_WIDTH_FACTOR = 2.0  # location bin width in units of the upper scale bound
_RADIUS_FACTOR = 2.0  # |μ_k - c_k| <= _RADIUS_FACTOR * w_k (1.5 w_k suffices w.h.p.)
# the bracket relative to its middle (the same for every axis, so the refinement's prior is public)
_LO_RATIO, _HI_RATIO = 2.0 ** (_LOG_MODE - _LOG_HI), 2.0 ** (_LOG_MODE - _LOG_LO)
_PAD_SEED = 20_171_117  # public seed of the padding that replaces degenerate axes
_ZERO_KEY = -(2**40)  # scale key of an exactly zero pair difference
_KEY_LIMIT = float(2**62)  # location keys are clipped to +-this (saturated keys fail)
# released smallest eigenvalue below this fraction of the prior's lower bound: a failure (good
# fits measured at ≥ 0.14·lo, failed ones at ≤ 5e-5·lo; see _check_prior)
_PRIOR_SLACK = 1e-3


# Practical plan (joint Gaussian histograms): share of δ for the histograms, and the bounds of
# their share of the zCDP budget (the refinement gets the rest).
_DELTA_SHARE = 0.25
_RHO_FLOOR, _RHO_CAP = 0.005, 0.5
# ... and the location release's least share: a tied axis (a 0/1 flag, a count) is read off its
# released values, and its rarer values need a threshold far below the Gaussian top bin's
# (a flag with 10 % ones at n = 6,000, d = 4 had only its zeros released at 0.25 %)
_LOC_FLOOR = 0.03
# ... and the scale release's: its threshold then vanishes against n as the budget grows (at
# ε = 1e4 the Gaussian-sized ρ left a threshold of 334 pairs, and a column spread over many
# octaves — a budget from 0 to 2e8 — released no scale bin)
_SCALE_FLOOR = 0.002
# Share of the refinement's zCDP that the octave release of tied axes takes, when it runs
# (:mod:`.histogram_ties`; the requirement plans the refinement without it)
_TIE_SHARE = 0.03


@dataclass(frozen=True)
class JointBudget:
    """The budget of one joint release of d per-axis stability histograms with discrete
    Gaussian noise (:func:`~privgauss.mechanisms.gaussian_stability_histograms`):
    δ-approximate ρ-zCDP in total for the d histograms."""

    rho: float
    delta: float

    def threshold(self, d: int) -> float:
        """The release threshold τ of each of the d histograms."""
        sigma = histogram_l2() * math.sqrt(d) / math.sqrt(2.0 * self.rho)
        return gaussian_stability_histogram_threshold(sigma, self.delta / d)


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
    ``tie_rho`` is the zCDP the octave release of tied axes spent (0 when it did not run).
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


def _needed_n_scale(tau: float) -> int:
    return int(math.ceil(2 * tau / (_SAFETY * P_SCALE)))  # pairs: n/2 * 0.32 * 0.5 >= tau


def _needed_n_location(tau: float) -> int:
    return int(math.ceil(tau / (_SAFETY * P_LOCATION)))


def min_epsilon(n_eff: float, mass: float, delta_i: float) -> float:
    """Smallest ε_i with τ(ε_i, δ_i) <= _SAFETY * n_eff * mass (inf if impossible)."""
    room = _SAFETY * n_eff * mass - 1.0
    return math.inf if room <= 0 else 2.0 * math.log(1.0 / delta_i) / room


def localisation_budget(
    n: int,
    d: int,
    epsilon: float,
    delta: float,
    *,
    known_scale: bool = False,
    constants: str = "practical",
) -> tuple[ApproxDP | None, ApproxDP, ApproxDP]:
    """Per-histogram budgets from public quantities only.

    Returns ``(scale_budget, location_budget, total)``: the budget of each of the d scale
    histograms (None when ``known_scale``), of each of the d location histograms, and their sum
    (ε_h, δ_h = δ/2), which is what localisation costs in total.
    """
    if constants not in ("practical", "theory"):
        raise ValueError("constants must be 'practical' or 'theory'")
    n_hist = d if known_scale else 2 * d
    delta_i = (delta / 2.0) / n_hist
    if constants == "theory":
        eps_s = 0.0 if known_scale else epsilon / (2 * n_hist)
        eps_l = epsilon / (2 * n_hist)
    else:
        eps_s = 0.0 if known_scale else min_epsilon(n // 2, P_SCALE, delta_i)
        eps_l = min_epsilon(n, P_LOCATION, delta_i)
        total = d * (eps_s + eps_l)
        target = min(max(total, epsilon / 20.0), epsilon / 2.0)
        if math.isinf(total):  # hopeless n: spend the cap, the histograms will (DP-)fail
            eps_s, eps_l = (0.0, 1.0) if known_scale else (1.0, 1.0)
            total = d * (eps_s + eps_l)
        eps_s *= target / total
        eps_l *= target / total
    scale_budget = None if known_scale else ApproxDP(eps_s, delta_i)
    loc_budget = ApproxDP(eps_l, delta_i)
    eps_h = d * (eps_s + eps_l)
    return scale_budget, loc_budget, ApproxDP(eps_h, delta_i * n_hist)


def _joint_rho(n_eff: float, mass: float, d: int, delta: float) -> float:
    """Smallest ρ of a joint release of d Gaussian histograms (δ in all) whose threshold is at
    most _SAFETY * n_eff * mass (inf if impossible)."""
    tau = _SAFETY * n_eff * mass
    z = gaussian_stability_histogram_threshold(1.0, delta / d) - 2.0  # τ = 2 + σ z
    if tau <= 2.0:
        return math.inf
    sigma = (tau - 2.0) / z
    return d / sigma**2  # ρ = Δ₂²/(2σ²) with Δ₂² = 2d


def localisation_plan(
    n: int, d: int, epsilon: float, delta: float, *, known_scale: bool = False
) -> tuple[JointBudget | None, JointBudget, float]:
    """The practical localisation plan, from public quantities only: the budgets of the joint
    scale release (None when ``known_scale``) and location release, and ρ_all, the zCDP budget
    that (ε, δ − δ_h) allows for histograms and refinement together (δ_h = δ/4 is the
    histograms' δ, split equally between the releases).

    Each release gets the smallest ρ whose threshold is at most half the expected count of the
    bin it needs (as :func:`localisation_budget`), the two together clamped to
    [0.5 %, 50 %] of ρ_all; the refinement gets ρ_all minus that. At d = 10, (1, 1e-6):
    ρ_all = 0.0237, and the histograms take 26 % of it at n = 3,000, 11 % at 5,000, 3.5 % at
    20,000 and 3.0 % at 100,000 (the location release's floor _LOC_FLOOR).
    """
    delta_h = delta * _DELTA_SHARE
    rho_all = approx_to_zcdp(epsilon, delta - delta_h)
    if known_scale:
        rho_s, rho_l, d_l = 0.0, _joint_rho(n, P_LOCATION, d, delta_h), delta_h
    else:
        d_l = delta_h / 2.0
        rho_s = max(_joint_rho(n // 2, P_SCALE, d, d_l), _SCALE_FLOOR * rho_all)
        rho_l = _joint_rho(n, P_LOCATION, d, d_l)
    rho_l = max(rho_l, _LOC_FLOOR * rho_all)  # tied axes need their rarer values released
    total = rho_s + rho_l
    target = min(max(total, _RHO_FLOOR * rho_all), _RHO_CAP * rho_all)
    if math.isinf(total):  # hopeless n: spend the cap, the histograms will (DP-)fail
        rho_s, rho_l = (0.0, 1.0) if known_scale else (0.5, 0.5)
        total = 1.0
    scale = None if known_scale else JointBudget(rho_s * target / total, d_l)
    return scale, JointBudget(rho_l * target / total, d_l), rho_all


def localisation_within_cap(n: int, d: int, epsilon: float, delta: float,
                            known_scale: bool = False, constants: str = "practical") -> bool:
    """Whether the localisation's own plan at n leaves its histograms below their budget cap
    (public quantities only): practical, the joint releases of :func:`localisation_plan` under
    _RHO_CAP of the zCDP budget; theory, the Laplace histograms that
    :func:`localisation_budget` sizes to the bins under ε/2. At the cap the thresholds exceed
    half the expected count of the bins the fit needs, and a failure (after spending) is
    likely."""
    if constants == "theory":
        total = localisation_budget(n, d, epsilon, delta, known_scale=known_scale)[2]
        return total.epsilon < 0.5 * epsilon * (1.0 - 1e-9)
    scale, loc, rho_all = localisation_plan(n, d, epsilon, delta, known_scale=known_scale)
    rho = loc.rho + (0.0 if scale is None else scale.rho)
    return rho < _RHO_CAP * rho_all * (1.0 - 1e-9)



# the largest condition number the refinement assumes by itself at a large budget
_MAX_BUDGET_CONDITION = 1e12
# ... and its growth with n·ρ (see budget_condition): 2e-3 leaves the user's value standing at
# ε = 1 up to n ≈ 3e6 (n·ρ·2e-3 < 100 at ρ ≈ 0.017); at ε = 1e4 it takes a collinear Gaussian
# table of n = 500, d = 25 (correlation eigenvalues down to 1e-5) from a held-out KL of 0.16
# to np.cov's covariance to 0.008 nat/row (5 seeds; 2e-2 gave 0.006 but moves ε = 1 at n = 1e6)
_COND_PER_RHO = 2e-3


def budget_condition(corr_condition: float, n: int, rho: float) -> float:
    """The correlation condition number the practical refinement assumes: the user's
    ``corr_condition``, or max(0.001·n·√ρ, 0.002·n·ρ) when larger (up to 1e12) — what the
    budget can resolve: the refinement's noise on a whitened covariance entry scales as
    1/(n√ρ), so as the budget grows an ever smaller eigenvalue is estimated, and the
    assumption stops limiting the fit (DESIGN.md rule 15: collinear columns, or columns in
    units 1e-17 .. 1e8, at ε = 1e4). The n·ρ term sets the pace of the jitter
    (:mod:`.ridge`, η² = _JITTER·lo ∝ 1/cond): its cross terms with the rows, about
    η·√(λ/n) per whitened entry, cannot be removed after the release, and with η² ∝ 1/(n√ρ)
    they vanish only as ρ^(−1/4) — on a near-singular table at ε = 1e4 they, not the noise,
    set the error; with η² ∝ 1/(nρ) they vanish as the noise does. At ε = 1 and n ≤ 1e6 the
    user's value stands (more whitening steps cost accuracy there: with 0.01·n·√ρ the
    covariance at n = 1e6 went from 1.33× to 1.39× non-private)."""
    if not (rho > 0 and math.isfinite(rho)):
        return corr_condition
    grown = max(1e-3 * n * math.sqrt(rho), _COND_PER_RHO * n * rho)
    return max(corr_condition, min(_MAX_BUDGET_CONDITION, grown))


def refinement_error(n: int, d: int, epsilon: float, delta: float,
                     corr_condition: float = 100.0) -> float:
    """The coinpress planner's predicted relative covariance error of the refinement at n
    (public quantities only): its ρ after the localisation plan, less the share the octave
    release of tied axes may take (_TIE_SHARE, so the stated n holds when it runs), and the
    prior a fitted scale bracket (±½ in log₂ around each axis's scale) gives it — as
    :func:`histogram_gaussian` builds it from released brackets."""
    from .coinpress import planned_covariance_error

    scale, loc, rho_all = localisation_plan(n, d, epsilon, delta)
    rho = (rho_all - loc.rho - (0.0 if scale is None else scale.rho)) * (1.0 - _TIE_SHARE)
    ratio = 2.0**_FIT_HALF_WIDTH  # s_hi/s = s/s_lo
    lo = 1.0 / (ratio * ratio * corr_condition)
    hi = d * ratio * ratio
    radius = math.sqrt(d) * _RADIUS_FACTOR * _WIDTH_FACTOR * ratio
    return planned_covariance_error(n, d, rho, radius, (lo, hi))


# Scale fitted from the released counts of the top bin and its neighbours: the bracket is
# ±_FIT_HALF_WIDTH in log2 around the fit (instead of the factor-10 top-bin bracket), used when
# at least two bins near the top were released and the counts fit the Gaussian model.
_FIT_HALF_WIDTH = 0.5
_FIT_GRID = np.linspace(-_LOG_HI, -_LOG_LO, 336)  # a − top over the top-bin bracket
_FIT_MAX_LOSS = 9.0  # per released bin, in units of the count's variance


def _noise_sd(budget: ApproxDP | JointBudget, d: int) -> float:
    """Standard deviation of the noise on each released count (public)."""
    if isinstance(budget, JointBudget):
        return histogram_l2() * math.sqrt(d) / math.sqrt(2.0 * budget.rho)
    e = math.exp(-budget.epsilon / 2.0)  # discrete Laplace(2/ε): variance 2e/(1 − e)²
    return math.sqrt(2.0 * e) / (1.0 - e)


def _fitted_log_scale(
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


def _top_bin(hist: dict[Any, int]) -> Any:
    # Deterministic post-processing of the release: highest noisy count, smallest key on ties.
    best = max(hist.values())
    return min(k for k, c in hist.items() if c == best)


def _threshold(budget: ApproxDP | JointBudget, d: int) -> float:
    if isinstance(budget, JointBudget):
        return budget.threshold(d)
    return stability_histogram_threshold(budget.epsilon, budget.delta)


# (keys, counts) of one axis: one key per record (counts None), or the distinct keys, sorted,
# with their counts (a histogram streamed from dask chunks)
AxisKeys = Callable[[int], tuple[np.ndarray, np.ndarray | None]]


def _axis_counts(keys: AxisKeys, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct keys of axis k, sorted, and their counts."""
    axis_keys, counts = keys(k)
    if counts is None:
        return np.unique(axis_keys, return_counts=True)
    return axis_keys, counts


def _axis_top_bins(
    keys: AxisKeys,
    d: int,
    budget: ApproxDP | JointBudget,
    what: str,
    needed_n: int,
    released: list[dict[Any, int]],
    *,
    accountant: Accountant,
    noise: Any,
    step: str,
    axis_step: str | None = None,
) -> Iterator[Any]:
    """Per axis k < d, release the stability histogram of ``keys(k)`` (appended to
    ``released``) and yield its top bin; EstimationFailed (a DP output) when an axis releases
    no bin. The histograms' ledger steps are ``{axis_step or step}-axis-{k}`` (Laplace, one
    (ε, δ) release per axis) or ``{axis_step or step}-axes`` (a :class:`JointBudget`: one joint
    release of the d histograms)."""
    joint = None
    if isinstance(budget, JointBudget):
        joint = gaussian_stability_histograms(
            None, budget.rho, budget.delta, accountant=accountant, noise=noise,
            step=f"{axis_step or step}-axes",
            columns=[_axis_counts(keys, k) for k in range(d)],
        )
    for k in range(d):
        if joint is not None:
            hist = joint[k]
        else:
            assert isinstance(budget, ApproxDP)
            axis_keys, counts = keys(k)
            hist = stability_histogram(
                axis_keys, budget, accountant=accountant, noise=noise,
                step=f"{axis_step or step}-axis-{k}", counts=counts,
            )
        released.append(hist)
        if not hist:
            raise EstimationFailed(
                f"no {what} bin was released for axis {k}: no bin held enough rows — the "
                "column's values spread over many orders of magnitude (no common scale: "
                "transform it, e.g. log, or give bounds), or too few rows for this budget",
                step=step,
                needed_n=needed_n,
            )
        yield _top_bin(hist)


def _scale_keys(Y: np.ndarray, u: np.ndarray, k: int) -> tuple[np.ndarray, None]:
    """The scale keys ⌊log2 |Y_jk| + u_k⌋ of axis k (_ZERO_KEY for a zero difference)."""
    y = Y[:, k]
    with np.errstate(divide="ignore"):
        L = np.log2(y)
    return np.where(y > 0, np.floor(L + u[k]), _ZERO_KEY).astype(np.int64), None


def _location_keys(B: np.ndarray, offset: np.ndarray, w: np.ndarray,
                   tied: np.ndarray) -> np.ndarray:
    """The location keys ⌊(x_k − o_k) / w_k⌋ of a block of rows, clipped to ±_KEY_LIMIT; on
    the tied axes the exact-value keys (a choice made from releases)."""
    with np.errstate(over="ignore", invalid="ignore"):
        q = (B - offset) / w
    keys = np.floor(np.clip(q, -_KEY_LIMIT, _KEY_LIMIT)).astype(np.int64)
    for j in np.flatnonzero(tied):
        keys[:, j] = _value_keys(B[:, j])
    return keys


def _location_count_kernel(B: np.ndarray, offset: np.ndarray, w: np.ndarray,
                           tied: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """((axis, key) pairs, counts) of the location keys of a block: the kernel of the chunked
    location pass (module level: picklable to dask workers)."""
    keys = _location_keys(B, offset, w, tied)
    pairs, counts = [], []
    for k in range(keys.shape[1]):
        u, c = np.unique(keys[:, k], return_counts=True)
        pairs.append(np.column_stack([np.full(u.size, k, dtype=np.int64), u]))
        counts.append(c.astype(np.int64))
    return np.concatenate(pairs), np.concatenate(counts)


def _merged_counts(pairs: np.ndarray, counts: np.ndarray, k: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """The distinct keys of axis k, sorted, and their total counts over all blocks."""
    sel = pairs[:, 0] == k
    keys, inv = np.unique(pairs[sel, 1], return_inverse=True)
    total = np.zeros(keys.size, dtype=np.int64)
    np.add.at(total, inv, counts[sel])
    return keys, total


def _scale_bin(hist: dict[Any, int]) -> Any:
    """The bin of an axis's released scale histogram that brackets its scale, or None for a
    *tied* axis (post-processing of the release only). Ties (0/1 flags, counts with many
    zeros, rounded values, duplicated rows) make many pair differences exactly 0: the scale is
    then the top released bin among the non-zero differences; when the zero bin is the only one
    released (a constant or nearly constant column), the axis has no usable scale: None."""
    top = _top_bin(hist)
    if top != _ZERO_KEY:
        return top
    nonzero = {key: c for key, c in hist.items() if key != _ZERO_KEY}
    return _top_bin(nonzero) if nonzero else None


def _value_keys(col: np.ndarray) -> np.ndarray:
    """Exact-value keys of a column: the bits of each float64 value (−0.0 folded into 0.0), so
    that the stability histogram releases the values many rows share."""
    return (np.asarray(col, dtype=np.float64) + 0.0).view(np.int64)


def _tied_axis(hist: dict[Any, int]) -> tuple[float, float]:
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
_CONSTANT_MAX_OTHER = 0.01


def _off_fraction(hist: dict[Any, int], n: int, noise_sd: float) -> float:
    """The fraction of rows the one released value of a tied axis leaves elsewhere, beyond
    three noise standard deviations of its count (post-processing of the release)."""
    (count,) = hist.values()
    return (n - count - 3.0 * noise_sd) / n


def _constant_var(hist: dict[Any, int], n: int, noise_sd: float) -> float:
    """The variance, in squared units of the column, a constant axis is released with: the
    fraction of rows away from the value that the released count leaves, plus one noise sd (at
    least 1/n) — so a rare flag read as constant still gives its held-out 1s a finite, moderate
    log-likelihood (post-processing)."""
    (count,) = hist.values()
    return min(max((n - count + noise_sd) / n, 1.0 / n), 1.0)


def _not_localised(k: int, hist: dict[Any, int], n: int, step: str) -> EstimationFailed:
    """The failure (a DP output: the released count, public n) of a tied axis whose one
    released value leaves more than _CONSTANT_MAX_OTHER of the rows elsewhere, when no
    fallback release could give its spread."""
    (count,) = hist.values()
    return EstimationFailed(
        f"column {k}: about {min(max(count / n, 0.0), 1.0):.0%} of the rows share one value and "
        "the rest take values too rare and too spread out to be released at this budget, so "
        "the column cannot be localised. Give more rows or a larger epsilon; or bounds "
        "(mean_bound=, cov_bounds=, method='coinpress') or public rows",
        step=step,
    )


# Localisation of many rows reads a random subset of them (issue 26: at n = 1e6, d = 10 the
# histograms' key counting was 40 % of the fit). The subset has at least _SUBSET_MIN rows, at
# least _SUBSET_MARGIN times the rows the histograms' thresholds need (the plan sizes them to
# half the expected count of the bin they need at n: the subset keeps 4 times that margin), and
# enough rows that a value held by 1 % of them clears the location threshold by 4 noise sds
# twice over (_SUBSET_TIES: so a tied column's rarer values are read as they are from all rows,
# and a column is read as constant only when the value leaves at most ~1 % elsewhere); smaller
# n, or a subset above half of n, read all rows.
_SUBSET_MIN = 200_000
_SUBSET_MARGIN = 8
_SUBSET_TIES = 200.0


def localisation_rows(n: int, d: int, scale_budget: ApproxDP | JointBudget | None,
                      location_budget: ApproxDP | JointBudget) -> int:
    """How many rows :func:`localise` reads (public: a function of n, d and the budgets only):
    all n, or, when n is large against what the histograms need, a data-independent uniformly
    random subset of that many rows (without replacement, so a record is in it at most once
    and the histograms' sensitivity is unchanged; no amplification is claimed, each histogram
    is charged its full budget). The refinement always reads all n rows."""
    tau_l = _threshold(location_budget, d)
    need = _needed_n_location(tau_l)
    if scale_budget is not None:
        need = max(need, _needed_n_scale(_threshold(scale_budget, d)))
    ties = _SUBSET_TIES * (tau_l + 4.0 * _noise_sd(location_budget, d))
    m = int(math.ceil(max(_SUBSET_MIN, _SUBSET_MARGIN * need, ties)))
    return n if 2 * m > n else m


def _subset_rows(X: Any, idx: np.ndarray) -> np.ndarray:
    """The rows ``X[idx]`` in the order of ``idx`` (distinct indices), as a numpy array; dask
    rows are read in increasing order (:func:`~privgauss.backends.take_rows`)."""
    if not is_dask(X):
        return np.take(X, idx, axis=0)
    order = np.argsort(idx)
    out = np.empty((idx.size, int(X.shape[1])))
    out[order] = take_rows(X, idx[order])
    return out


def _location_counts(rows: Any, offset: np.ndarray, w: np.ndarray, exact: np.ndarray
                     ) -> AxisKeys:
    """Per axis, the distinct location keys of ``rows`` and their counts (exact-value keys on
    the ``exact`` axes): dask rows in one chunked pass, numpy rows block by block."""
    if is_dask(rows):
        kc = map_rows(rows, partial(_location_count_kernel, offset=offset, w=w, tied=exact))
        return partial(_merged_counts, kc[0], kc[1])
    return location_key_counts(rows, offset, w, _KEY_LIMIT, exact).__getitem__


def _pick_counts(subset: AxisKeys, full: AxisKeys, pos: dict[int, int], k: int
                 ) -> tuple[np.ndarray, np.ndarray | None]:
    """Axis k's counts: from ``full`` (at position ``pos[k]``) for the axes in ``pos``, else
    from ``subset``."""
    return full(pos[k]) if k in pos else subset(k)


def localise(
    X: np.ndarray,
    scale_budget: ApproxDP | JointBudget | None,
    location_budget: ApproxDP | JointBudget,
    *,
    accountant: Accountant,
    noise: RandomState = None,
    step: str = "localise",
    tie_rho: float = 0.0,
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

    ``tie_rho`` > 0: a tied axis whose one released value leaves more than 1 % of the rows
    elsewhere (a DP output) gets its spread from a ``tie_rho``-zCDP octave release
    (:func:`~privgauss.gaussian.histogram_ties.octave_spreads`, run once for all such axes,
    only when there are any; ``Localisation.tie_rho`` says what it spent); 0: such an axis
    fails.
    """
    src = as_noise(noise)
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
        Xl, order = _subset_rows(Xc, order), np.arange(n_l)

    scale_h: list[dict[Any, int]] = []
    tied = np.zeros(d, dtype=bool)
    if scale_budget is None:
        s_mid = s_lo = s_hi = np.ones(d)
    else:
        tau = _threshold(scale_budget, d)
        if n // 2 < 1:
            raise EstimationFailed(
                "scale localisation needs at least two rows",
                step=f"{step}-scale",
                needed_n=_needed_n_scale(tau),
            )
        m = n_l // 2
        # |x_{π(2j)} − x_{π(2j+1)}|; dask rows stream once into the differences, numpy rows
        # are keyed block by block (bin_counts: the same counts, no n/2 × d temporaries)
        scale_keys: AxisKeys
        if is_dask(Xl):
            Y = pair_differences(Xl, order[1 : 2 * m : 2], order[0 : 2 * m : 2])
            np.abs(Y, out=Y)
            scale_keys = partial(_scale_keys, Y, u)
        else:
            scale_keys = log_scale_key_counts(Xl, order[1 : 2 * m : 2], order[0 : 2 * m : 2],
                                              u, _ZERO_KEY).__getitem__
        b = np.zeros(d)
        for k, _ in enumerate(
            _axis_top_bins(scale_keys, d, scale_budget, "scale",
                           _needed_n_scale(tau), scale_h, accountant=accountant, noise=src,
                           step=f"{step}-scale")
        ):
            top = _scale_bin(scale_h[k])
            tied[k] = top is None
            b[k] = 0.0 if top is None else top
        s_mid, s_lo, s_hi = _bracket(b - u)  # log2 |Y| lies in [b − u, b − u + 1)
        noise_sd = _noise_sd(scale_budget, d)
        for k in map(int, np.flatnonzero(~tied)):  # narrow where released counts pin it
            a = _fitted_log_scale(scale_h[k], int(b[k]), m, tau, noise_sd)
            if a is not None:
                s_mid[k] = math.exp2(a - u[k]) / math.sqrt(2.0)
                s_lo[k] = s_mid[k] * 2.0**-_FIT_HALF_WIDTH
                s_hi[k] = s_mid[k] * 2.0**_FIT_HALF_WIDTH
        s_mid[tied], s_lo[tied], s_hi[tied] = 1.0, 1.0, 1.0  # set from the location release

    w = _WIDTH_FACTOR * s_hi
    if not np.all(np.isfinite(w) & (w > 0)):  # a function of released bins only
        raise EstimationFailed(
            "the released scale is outside the floating-point range", step=f"{step}-scale"
        )
    offset = v * w
    tau_l = _threshold(location_budget, d)
    loc_keys = _location_counts(Xl, offset, w, tied)
    rows_of = np.full(d, n_l)  # the rows each axis's location histogram counts
    if n_l < n and tied.any():
        # a tied axis (a DP output of the scale release) counts its exact values over all
        # rows: a value on a small fraction of them is released as without the subset, and a
        # column is read as constant only from all its rows (the cost: one pass over those
        # columns; no tied axis on continuous data)
        ta = np.flatnonzero(tied)
        loc_keys = partial(_pick_counts, loc_keys,
                           _location_counts(Xc[:, ta], offset[ta], w[ta], tied[ta]),
                           {int(k): i for i, k in enumerate(ta)})
        rows_of[ta] = n
    loc_h: list[dict[Any, int]] = []
    center = np.empty(d)
    deg_var = np.zeros(d)
    spread_of: dict[int, float] = {}  # tied axes left to the octave release
    for k, top in enumerate(
        _axis_top_bins(loc_keys, d, location_budget, "location", _needed_n_location(tau_l),
                       loc_h, accountant=accountant, noise=src, step=f"{step}-location",
                       axis_step=step)
    ):
        if tied[k]:
            center[k], spread = _tied_axis(loc_h[k])
            if spread == 0.0:
                sd = _noise_sd(location_budget, d)
                if _off_fraction(loc_h[k], int(rows_of[k]), sd) > _CONSTANT_MAX_OTHER:
                    if tie_rho <= 0:
                        raise _not_localised(k, loc_h[k], int(rows_of[k]),
                                         f"{step}-location")
                    spread_of[k] = math.nan  # read by the octave release below
                else:
                    deg_var[k] = _constant_var(loc_h[k], int(rows_of[k]), sd)
            s_mid[k], s_lo[k], s_hi[k] = spread, spread * _LO_RATIO, spread * _HI_RATIO
            continue
        if abs(top) >= _KEY_LIMIT - 1:
            raise EstimationFailed(
                f"the released location bin of axis {k} is saturated (values far beyond the "
                "released scale)",
                step=f"{step}-location",
            )
        center[k] = offset[k] + (top + 0.5) * w[k]
    spent_ties = 0.0
    if spread_of:  # a DP output: tied axes whose other values were each too rare
        from .histogram_ties import octave_spreads

        axes = np.array(sorted(spread_of), dtype=np.int64)
        spreads = octave_spreads(Xc, axes, center[axes], tie_rho, accountant=accountant,
                                 noise=src, step=f"{step}-ties")
        spent_ties = tie_rho
        for k, got in zip(map(int, axes), spreads, strict=True):
            if got is None:
                raise _not_localised(k, loc_h[k], int(rows_of[k]), f"{step}-ties")
            s_mid[k], s_lo[k], s_hi[k] = got, got * _LO_RATIO, got * _HI_RATIO
    return Localisation(
        center=center,
        radius=_RADIUS_FACTOR * _WIDTH_FACTOR * s_hi,
        scale=s_mid,
        scale_lo=s_lo,
        scale_hi=s_hi,
        scale_histograms=scale_h,
        location_histograms=loc_h,
        degenerate=tied & (s_mid == 0),
        degenerate_var=deg_var,
        tie_rho=spent_ties,
    )


def _bracket(base: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(middle, lower, upper) of the per-axis scale bracket when log2 |Y| ∈ [base, base + 1)."""
    base = np.asarray(base, dtype=np.float64)
    r2 = math.sqrt(2.0)
    return (np.exp2(base - _LOG_MODE) / r2, np.exp2(base - _LOG_HI) / r2,
            np.exp2(base - _LOG_LO) / r2)


def histogram_gaussian(
    X: Any,
    epsilon: float,
    delta: float,
    *,
    accountant: Accountant,
    noise: RandomState = None,
    mean_only: bool = False,
    cov: Any = None,
    beta: float = 0.05,
    constants: str = "practical",
    corr_condition: float = 100.0,
) -> tuple[np.ndarray, np.ndarray]:
    """(ε, δ)-DP mean and covariance of Gaussian rows with no range parameters (replace-one
    neighbours, n public); see the module docstring for the algorithm, split and assumptions.

    A ``dask.array`` ``X`` streams: the location histograms and the refinement's passes read
    it chunk by chunk; the random pairings of the scale histograms and of the refinement
    read it once each into the ⌊n/2⌋ pair differences
    (:func:`~privgauss.backends.pair_differences`), held in memory (n·d·4 bytes); the rows
    never are.

    ``cov`` given: the covariance is known (public), only the mean is estimated and ``cov`` is
    returned as the covariance. ``mean_only=True`` without ``cov`` means the covariance is the
    identity. ``beta`` is the failure probability passed to the CoinPress refinement.
    ``corr_condition`` is the assumed bound on the condition number of Σ's correlation matrix
    (utility only). All releases are charged to ``accountant`` (an (ε, δ) accountant with room
    for ``ApproxDP(epsilon, delta)``); the call spends exactly (ε, δ), unless it fails.

    Raises :class:`EstimationFailed` (a DP output, budget spent) when localisation fails, and
    :class:`PrivacyBudgetError` before anything is drawn when the accountant cannot pay.
    """
    from .coinpress import coinpress_gaussian, coinpress_mean

    budget = ApproxDP(epsilon, delta)
    if not has_delta(budget):
        raise PrivacyBudgetError("histogram_gaussian needs delta > 0 (stability histograms)")
    beta = check_probability(beta, "beta")
    if not (isinstance(corr_condition, int | float) and corr_condition >= 1):
        raise ValueError("corr_condition must be a number >= 1")
    Xc = as_rows(X, min_rows=2)
    n, d = Xc.shape
    if not accountant.can_spend(budget):
        raise PrivacyBudgetError(
            f"histogram_gaussian needs {budget} from the accountant, which cannot pay it; "
            "give it an ApproxDP accountant with enough budget left"
        )
    known: np.ndarray | None = None
    if cov is not None:
        known = sym(np.asarray(cov, dtype=np.float64))
        if known.shape != (d, d):
            raise ValueError(f"cov must have shape ({d}, {d})")
    elif mean_only:
        known = np.eye(d)
    src = as_noise(noise)

    s_budget, l_budget, rho_ref = _plan(n, d, budget, known is not None, constants)
    if known is not None:
        w = inv_sqrtm_psd(known)
        Xw = transform_rows(Xc, w)  # w symmetric: rows x ↦ w x, an overflow sent far
        loc = localise(Xw, None, l_budget, accountant=accountant, noise=src)
        rho = _refinement_rho(accountant, rho_ref, 0.0)
        radius = float(np.linalg.norm(loc.radius))
        mean_w = coinpress_mean(
            Xw, loc.center, radius, rho, accountant=accountant, noise=src, beta=beta
        )
        return np.asarray(mean_w) @ sqrtm_psd(known), known.copy()

    loc = localise(Xc, s_budget, l_budget, accountant=accountant, noise=src,
                   tie_rho=_TIE_SHARE * rho_ref)
    rho = _refinement_rho(accountant, rho_ref, loc.tie_rho)
    deg = np.zeros(d, dtype=bool) if loc.degenerate is None else loc.degenerate
    # a degenerate axis (a constant column: one released value, scale 0) is known exactly; in the
    # refinement it becomes a public N(0, 1) column, so the plan, and the ledger, stay those of
    # d ordinary axes (a zero-variance column would break the refinement's eigenvalue prior)
    s = np.where(deg, 1.0, loc.scale)
    c = np.where(deg, 0.0, loc.center)
    s_lo = np.where(deg, _LO_RATIO, loc.scale_lo)
    s_hi = np.where(deg, _HI_RATIO, loc.scale_hi)
    radius = float(np.linalg.norm(_RADIUS_FACTOR * _WIDTH_FACTOR * s_hi / s))
    cond = (float(corr_condition) if constants == "theory"
            else budget_condition(float(corr_condition), n, rho))
    lo = float(np.min(s_lo / s) ** 2) / cond
    hi = float(np.sum((s_hi / s) ** 2))  # λ_max <= trace
    # a ridge: ±eta on every entry makes the covariance the refinement sees Σ_z + eta²·I, whose
    # smallest eigenvalue is at least eta² even when columns are exact linear combinations of
    # others; eta² = _JITTER·lo vanishes with the noise as lo does (budget_condition), see
    # :mod:`.ridge` (practical constants only; "theory" runs the refinement as published)
    eta2 = 0.0 if constants == "theory" else _JITTER * lo
    seed = jitter_seed(src) if eta2 > 0 else None
    Z = None
    if seed is not None and not deg.any() and not is_dask(Xc):  # map and jitter in one pass
        Z = transform_jittered(Xc, 1.0 / s, c, math.sqrt(eta2), seed)
    if Z is None:
        Z = transform_rows(Xc, 1.0 / s, c)  # a row that overflows is sent far (clipped)
        if deg.any():
            Z = np.array(Z, dtype=np.float64, copy=True)  # never write into the caller's rows
            Z[:, deg] = public_padding(n, int(deg.sum()))
        if seed is not None:
            Z = jitter_rows(Z, math.sqrt(eta2), src, owned=bool(deg.any()) or Z is not Xc,
                            seed=seed)
    mean_z, cov_z = coinpress_gaussian(
        Z,
        rho,
        center=np.zeros(d),
        radius=radius,
        cov_bounds=(lo, hi),
        accountant=accountant,
        noise=src,
        constants=constants,
        beta=beta,
        prior_floor=False,  # lo is an assumption, judged from the release by _check_prior
    )
    _check_prior(np.asarray(cov_z), eta2 if eta2 > 0 else lo)
    if eta2 > 0:
        cov_z = unjitter(np.asarray(cov_z), eta2)
    mean = np.where(deg, loc.center, c + s * np.asarray(mean_z))
    cov_hat = sym(np.asarray(cov_z) * s[:, None] * s[None, :])
    cov_hat[deg, :] = 0.0
    cov_hat[:, deg] = 0.0
    if loc.degenerate_var is not None:  # never a zero variance: see Localisation
        cov_hat[deg, deg] = loc.degenerate_var[deg]
    return mean, cov_hat


# The jitter's variance as a fraction of the refinement's lower bound lo, chosen on mhtdata
# (near-collinear positions; ε = 1, ridge floor 0.01·η²): it fails after spending without a
# jitter (3 of 3 seeds), fits 5 of 5 at 0.03 (median gap -0.03 nat/row), 3 of 3 at 0.1 (0.35);
# at 0.01 (floor 0.1·η²) it failed 1 of 3. At 1 a Gaussian table of condition 1e4 lost accuracy
# (covariance error 0.52 against < 0.2). At ε ≥ 1e4 exactly collinear dummies fit 10 of 10
# seeds at 0.03·lo, 1 of 2 with 0.1·lo·100/cond. (The held-out baseball was looked at while
# diagnosing — median gap over seeds 0-9: -0.87 without, -0.36 at 0.03, +1.62 at 0.1 — so it
# is no longer a clean held-out check of this constant.)
_JITTER = 0.03
def public_padding(n: int, k: int) -> np.ndarray:
    """n × k standard normal values from a fixed public seed: the stand-in for k degenerate
    (constant) axes in a CoinPress refinement, data-independent, so the refinement's plan,
    prior and ledger stay those of ordinary axes (its estimates for these columns are
    discarded)."""
    return np.random.default_rng(_PAD_SEED).standard_normal((n, k))


def _check_prior(cov_z: np.ndarray, lo: float) -> None:
    """Fail (a DP output: a function of the release and the public ``lo``) when the released
    standardised covariance has an eigenvalue below _PRIOR_SLACK·lo (``lo``: the jitter's η²
    in the practical route, the prior's lower bound in "theory"): the whitening chain did not
    converge, and its estimate is then off by orders of magnitude (e.g. condition 1e8 with
    corr_condition=100 and no jitter: mean error 6.6e3, covariance error 2e2)."""
    if not float(np.linalg.eigvalsh(sym(cov_z))[0]) >= _PRIOR_SLACK * lo:
        raise EstimationFailed(
            "the released covariance is far more ill-conditioned than the refinement's prior "
            "allows: the correlation matrix's condition number exceeds corr_condition (raise "
            "it), or the refinement cannot whiten that range at this n (more rows); columns "
            "that are exact linear combinations of others (dummies that sum to 1, a total next "
            "to its parts) make it singular: drop one of them; or use method='public' with "
            "d+1 public rows",
            step="histogram-refinement",
        )


def _plan(
    n: int, d: int, budget: ApproxDP, known_scale: bool, constants: str
) -> tuple[Any, Any, float]:
    """(scale budget, location budget, the zCDP the plan leaves after localisation).
    ``practical``: joint Gaussian histograms (:func:`localisation_plan`), ρ_all − ρ_h;
    ``theory``: per-axis Laplace histograms (:func:`localisation_budget`), what
    (ε − ε_h, δ − δ_h) converts to. The octave release of tied axes, when it runs, takes
    _TIE_SHARE of it; the refinement gets the rest."""
    if constants == "theory":
        s_b, l_b, spent = localisation_budget(
            n, d, budget.epsilon, budget.delta, known_scale=known_scale, constants=constants
        )
        rho_ref = approx_to_zcdp(budget.epsilon - spent.epsilon, budget.delta - spent.delta)
        return s_b, l_b, rho_ref
    s_j, l_j, rho_all = localisation_plan(
        n, d, budget.epsilon, budget.delta, known_scale=known_scale
    )
    return s_j, l_j, rho_all - l_j.rho - (0.0 if s_j is None else s_j.rho)


def histogram_plan(
    n: int,
    d: int,
    budget: ApproxDP,
    *,
    known_scale: bool = False,
    constants: str = "practical",
    count_split: Callable[[float], tuple[float, float]] | None = None,
) -> BudgetPlan:
    """The budget plan of :func:`histogram_gaussian` (public quantities only), named by the
    steps its ledger records: the localisation's histograms (``practical``: one joint release
    per stage, its ρ and its δ; ``theory``: one Laplace histogram per axis), then the CoinPress
    refinement as one group (``"coinpress-gaussian"``, or ``"coinpress-mean"`` for a known
    scale: its own steps are planned from the DP localisation) and, with ``count_split`` (the
    estimator's ρ ↦ (refinement, clipped count) of the refinement's ρ), the ``"clipped count"``.
    The one branch: when the released histograms find tied axes with rare other values (a DP
    output), the octave release ``"localise-ties"`` takes its share of the refinement's ρ
    first. The parts come from :func:`_plan`, the split the fit spends from."""
    s_b, l_b, rho_ref = _plan(n, d, budget, known_scale, constants)
    head: dict[str, Budget] = {}
    for stage, b in (("localise-scale", s_b), ("localise", l_b)):
        if b is None:
            continue
        if isinstance(b, JointBudget):
            head[f"{stage}-axes"] = ZCDP(b.rho)
            head[f"{stage}-axes (delta)"] = ApproxDP(MIN_EPS, b.delta)
        else:
            head.update({f"{stage}-axis-{k}": b for k in range(d)})
    refine = "coinpress-mean" if known_scale else "coinpress-gaussian"

    def with_refinement(rho: float, ties: float) -> BudgetPlan:
        parts = dict(head)
        if ties > 0:
            parts["localise-ties"] = ZCDP(ties)
        main, count = (rho, 0.0) if count_split is None else count_split(rho)
        parts[refine] = ZCDP(main)
        if count_split is not None:
            parts["clipped count"] = ZCDP(count)
        return BudgetPlan.of(budget, parts, groups=(refine,))

    ties = 0.0 if known_scale else _TIE_SHARE * rho_ref
    plan = with_refinement(rho_ref, 0.0)
    if ties <= 0:
        return plan
    return BudgetPlan.of(budget, dict(plan.parts), groups=plan.groups,
                         branches=(with_refinement(rho_ref - ties, ties),))


def _refinement_rho(accountant: Accountant, planned: float, ties: float) -> float:
    """The refinement's ρ: what the plan left it, less what the octave release of tied axes
    spent (``ties``), and no more than the accountant has left."""
    return min(planned - ties, accountant.remaining_zcdp())
