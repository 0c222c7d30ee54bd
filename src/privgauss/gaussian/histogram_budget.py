"""The budget of the bound-free histogram route (:mod:`.histogram`), from public quantities
only: how (ε, δ) is split between the localisation's histograms and the CoinPress refinement,
the histograms' thresholds and noise, the rows the localisation reads, and the route's
:class:`~privgauss.privacy.BudgetPlan` (named by the steps its ledger records).

**Neighbours:** replace one row; n is public. Nothing here reads the data.

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
fitted to the Gaussian model (post-processing), which narrows the factor-10 bracket of the
scale step ((a) of :mod:`.histogram_localise`) to a factor 2 when at least two bins near the
top were released. The refinement is
:func:`~privgauss.gaussian.coinpress.coinpress_gaussian` (which switches to its mean-first
variant at small n·ρ).

**Per-axis Laplace route** (:func:`localisation_budget`; the fit uses it with
``constants="theory"``). (ε_h, δ_h = δ/2) goes to the histograms; ε_h is chosen from public
quantities only (n, d, ε, δ) as the smallest value for which every threshold is at most half
the expected count of the bin we need (``constants="practical"``, clamped to [ε/20, ε/2]) or ε/2
(``constants="theory"``). The rest, (ε − ε_h, δ − δ_h), is converted to the largest ρ whose tight
zCDP→(ε, δ) conversion fits (``accountant.remaining_zcdp()``) and spent on the refinement, so the
ledger sums to exactly (ε, δ).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ..privacy import ZCDP, ApproxDP, Budget, BudgetPlan, approx_to_zcdp
from ..privacy.budgets import MIN_EPS, zcdp_to_epsilon
from ..sensitivity import (
    gaussian_stability_histogram_threshold,
    histogram_l2,
    stability_histogram_threshold,
)

__all__ = [
    "TIE_RETRY_SHARE",
    "TIE_SHARE",
    "WIDE_RETRY_SHARE",
    "WIDE_SHARE",
    "JointBudget",
    "budget_condition",
    "budget_split",
    "histogram_plan",
    "localisation_budget",
    "localisation_min_epsilon",
    "localisation_plan",
    "localisation_rows",
    "localisation_within_cap",
    "min_epsilon",
    "refinement_error",
]

P_SCALE = 0.32  # mass of the modal log2 bin of |Z|
P_LOCATION = 0.47  # worst-case mass of the bin holding μ when the width is >= 2 σ
_SAFETY = 0.5  # thresholds are set to at most this fraction of the expected top count
WIDTH_FACTOR = 2.0  # location bin width in units of the upper scale bound
RADIUS_FACTOR = 2.0  # |μ_k - c_k| <= RADIUS_FACTOR * w_k (1.5 w_k suffices w.h.p.)


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
# (:mod:`.histogram_ties`; the requirement plans the refinement without it). 3 % left
# zero-inflated columns with a spread-out rest unread at 2,000-4,000 rows and ε = 1 — 29 of
# 1,870 fits of generated tables failed after spending even with bins of octaves; 6 % left 1
# (benchmarks/results/gaussian_error_tail.md), for about 1 % more stated rows
TIE_SHARE = 0.06
# ... and a second octave release on the tied axes the first read nothing of (a DP output),
# read with the first (histogram_ties.octave_spreads): those fits failed after spending. At
# 6 %, 3 of ~1,860 fits of generated tables still did (74-83 % of a column on one value at
# 2,000-2,500 rows); at 12 % none, and where 6 % sufficed the held-out fits were the same
TIE_RETRY_SHARE = 0.12
# ... and the octave release of wide axes (scale histograms that released no bin), when it
# runs: at most TIE_SHARE, so the requirement's plan holds when it runs alone; when both run
# (a column over orders of magnitude *and* a rare-valued tied one) the refinement gets
# 1 − TIE_SHARE − WIDE_SHARE = 91 % of its share, its planned error ~5 % above the stated one.
# (At em's ε_L on SumHes, 2 % left the wide release reading nothing at 3 of 20 seeds.)
WIDE_SHARE = 0.03
# ... and a second octave release of the wide axes the first bracketed nothing of (a DP output),
# read with the first
WIDE_RETRY_SHARE = 0.03


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


def needed_n_scale(tau: float) -> int:
    """The rows whose scale histograms (threshold ``tau``) keep their modal bin within the
    plan's safety margin: the ``needed_n`` a failed scale step reports."""
    return int(math.ceil(2 * tau / (_SAFETY * P_SCALE)))  # pairs: n/2 * 0.32 * 0.5 >= tau


def needed_n_location(tau: float) -> int:
    """The rows whose location histograms (threshold ``tau``) keep the bin holding μ within
    the plan's safety margin: the ``needed_n`` a failed location step reports."""
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



@lru_cache(maxsize=1024)  # a pure function of public numbers, asked again by plans
def localisation_min_epsilon(n: int, d: int, delta: float, known_scale: bool = False) -> float:
    """The smallest ε at which :func:`localisation_within_cap` holds for the practical route
    at (ε, ``delta``) and n rows (public quantities only; inf when no ε does): the joint
    releases' needs (:func:`_joint_rho`, which do not depend on ε) under ``_RHO_CAP`` of
    ρ_all, the release floors (shares of ρ_all) included, and ρ_all converted back to ε with
    the δ the plan leaves (δ − δ_h). d = 5, δ = 5e-7: 0.78 at n = 2,000, 0.50 at 3,000, 0.14
    at 10,000 — the per-axis Laplace route (:func:`localisation_budget`) needs 1.47, 0.98,
    0.29."""
    delta_h = delta * _DELTA_SHARE
    if known_scale:
        need_s, need_l, floor_s = 0.0, _joint_rho(n, P_LOCATION, d, delta_h), 0.0
    else:
        need_s = _joint_rho(n // 2, P_SCALE, d, delta_h / 2.0)
        need_l = _joint_rho(n, P_LOCATION, d, delta_h / 2.0)
        floor_s = _SCALE_FLOOR
    if math.isinf(need_s + need_l):
        return math.inf

    def within(rho_all: float) -> bool:  # as localisation_within_cap, at this ρ_all
        rho = max(need_s, floor_s * rho_all) + max(need_l, _LOC_FLOOR * rho_all)
        return rho < _RHO_CAP * rho_all * (1.0 - 1e-9)

    hi = max(need_s + need_l, 1e-300) / _RHO_CAP
    while not within(hi):
        hi *= 2.0
    lo = hi / 2.0
    while within(lo) and lo > 1e-300:
        lo, hi = lo / 2.0, lo
    for _ in range(100):  # the smallest ρ_all within the cap, to float precision
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if within(mid) else (mid, hi)
        if hi - lo <= 1e-12 * hi:
            break
    # a hair above: approx_to_zcdp(ε, δ − δ_h) then gives a ρ_all at least hi
    return float(zcdp_to_epsilon(hi * (1.0 + 1e-9), delta - delta_h)) * (1.0 + 1e-9)


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
    (:mod:`.ridge`, η² = JITTER_SHARE·lo ∝ 1/cond): its cross terms with the rows, about
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
    release of tied axes may take (TIE_SHARE, so the stated n holds when it runs), and the
    prior a fitted scale bracket (±½ in log₂ around each axis's scale) gives it — as
    :func:`histogram_gaussian` builds it from released brackets."""
    from .coinpress import planned_covariance_error

    scale, loc, rho_all = localisation_plan(n, d, epsilon, delta)
    rho = (rho_all - loc.rho - (0.0 if scale is None else scale.rho)) * (1.0 - TIE_SHARE)
    ratio = 2.0**FIT_HALF_WIDTH  # s_hi/s = s/s_lo
    lo = 1.0 / (ratio * ratio * corr_condition)
    hi = d * ratio * ratio
    radius = math.sqrt(d) * RADIUS_FACTOR * WIDTH_FACTOR * ratio
    return planned_covariance_error(n, d, rho, radius, (lo, hi))


# Scale fitted from the released counts of the top bin and its neighbours: the bracket is
# ±FIT_HALF_WIDTH in log2 around the fit (instead of the factor-10 top-bin bracket), used when
# at least two bins near the top were released and the counts fit the Gaussian model.
FIT_HALF_WIDTH = 0.5


def count_noise_sd(budget: ApproxDP | JointBudget, d: int) -> float:
    """Standard deviation of the noise on each released count (public)."""
    if isinstance(budget, JointBudget):
        return histogram_l2() * math.sqrt(d) / math.sqrt(2.0 * budget.rho)
    e = math.exp(-budget.epsilon / 2.0)  # discrete Laplace(2/ε): variance 2e/(1 − e)²
    return math.sqrt(2.0 * e) / (1.0 - e)


def histogram_threshold(budget: ApproxDP | JointBudget, d: int) -> float:
    """The release threshold τ of each of the d histograms released at ``budget`` (a
    per-axis Laplace histogram, or one of a joint Gaussian release)."""
    if isinstance(budget, JointBudget):
        return budget.threshold(d)
    return stability_histogram_threshold(budget.epsilon, budget.delta)


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
    tau_l = histogram_threshold(location_budget, d)
    need = needed_n_location(tau_l)
    if scale_budget is not None:
        need = max(need, needed_n_scale(histogram_threshold(scale_budget, d)))
    ties = _SUBSET_TIES * (tau_l + 4.0 * count_noise_sd(location_budget, d))
    m = int(math.ceil(max(_SUBSET_MIN, _SUBSET_MARGIN * need, ties)))
    return n if 2 * m > n else m


def budget_split(
    n: int, d: int, budget: ApproxDP, known_scale: bool, constants: str
) -> tuple[Any, Any, float]:
    """(scale budget, location budget, the zCDP the plan leaves after localisation).
    ``practical``: joint Gaussian histograms (:func:`localisation_plan`), ρ_all − ρ_h;
    ``theory``: per-axis Laplace histograms (:func:`localisation_budget`), what
    (ε − ε_h, δ − δ_h) converts to. The octave release of tied axes, when it runs, takes
    TIE_SHARE of it; the refinement gets the rest."""
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
    The branches: when the released scale histograms find wide axes (no bin released: a DP
    output), the octave release ``"localise-wide"`` takes WIDE_SHARE of the refinement's ρ
    between the scale and location histograms; when the location histograms find tied axes
    with rare other values (a DP output), the octave release ``"localise-ties"`` takes
    TIE_SHARE of it after them, and when it reads nothing of some of them (a DP output) its
    second release ``"localise-ties-retry"`` TIE_RETRY_SHARE more (the wide axes' likewise,
    ``"localise-wide-retry"``, WIDE_RETRY_SHARE). The parts come from
    :func:`budget_split`, the split the fit spends from."""
    s_b, l_b, rho_ref = budget_split(n, d, budget, known_scale, constants)

    def stage_parts(stage: str, b: ApproxDP | JointBudget | None) -> dict[str, Budget]:
        if b is None:
            return {}
        if isinstance(b, JointBudget):
            return {f"{stage}-axes": ZCDP(b.rho),
                    f"{stage}-axes (delta)": ApproxDP(MIN_EPS, b.delta)}
        return {f"{stage}-axis-{k}": b for k in range(d)}

    refine = "coinpress-mean" if known_scale else "coinpress-gaussian"

    def with_refinement(wide: tuple[float, ...], ties: tuple[float, ...]) -> BudgetPlan:
        parts = stage_parts("localise-scale", s_b)
        for name, rho in zip(("localise-wide", "localise-wide-retry"), wide, strict=False):
            parts[name] = ZCDP(rho)
        parts.update(stage_parts("localise", l_b))
        for name, rho in zip(("localise-ties", "localise-ties-retry"), ties, strict=False):
            parts[name] = ZCDP(rho)
        rest = rho_ref - sum(wide) - sum(ties)
        main, count = (rest, 0.0) if count_split is None else count_split(rest)
        parts[refine] = ZCDP(main)
        if count_split is not None:
            parts["clipped count"] = ZCDP(count)
        return BudgetPlan.of(budget, parts, groups=(refine,))

    plan = with_refinement((), ())
    if known_scale:
        return plan
    # each octave release: not run, run, or run with its retry (DP outputs decide)
    def runs(share: float, retry: float) -> list[tuple[float, ...]]:
        return [(), (share * rho_ref,)] + ([(share * rho_ref, retry * rho_ref)] if retry else [])

    return BudgetPlan.of(budget, dict(plan.parts), groups=plan.groups,
                         branches=[with_refinement(w, t)
                                   for w in runs(WIDE_SHARE, WIDE_RETRY_SHARE)
                                   for t in runs(TIE_SHARE, TIE_RETRY_SHARE) if w or t])
