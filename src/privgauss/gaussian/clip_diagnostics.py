"""Private diagnostics of clipping: how many rows fell outside the final clipping ball.

Every clip-and-noise estimator describes the rows *inside* its clipping balls; a row outside
is pulled onto the ball's surface. On Gaussian data the planned radii cut a known, small
fraction of the rows (the plan's tail probability), so the fit describes the whole sample; on
heavy-tailed data or data with gross recording errors the final ball may cut many more, and
the fit then describes the central part only. This module lets a fit say so, privately:

* the steps of the Gaussian algorithms (:mod:`.coinpress.steps`, :mod:`.coinpress.split_mode`,
  :mod:`.clip_mean`) *note* each ball they clip to — :func:`note_clip`: the rows, the public
  frame (A, shift), centre, radius τ, and the fraction of Gaussian rows the plan expects
  outside it. Noting records public or released quantities only and does nothing unless an
  estimator opened a record (:func:`recording_clips`);
* after the algorithm, the estimator releases the number of rows outside the record's final
  ball (:meth:`ClipRecord.final`: the last clipping step's — for the practical CoinPress
  chain, the final mean step's covering ball in the frame of the *released* covariance, so
  the count says how many rows the fitted Gaussian's 99 % ellipsoid, widened by the centre's
  public error bound, leaves out; for the split mode and a known mean, the last covariance
  step's ball) with
  :func:`release_clipped_count` — a count, sensitivity 1 under replace-one neighbours
  (:func:`privgauss.sensitivity.count`), charged to the accountant before its noise
  (:func:`privgauss.mechanisms.private_count`: discrete Gaussian for a zCDP share, discrete
  Laplace for a pure-ε share), one ledger entry, from a share of the budget planned before the
  fit (:func:`split_for_count`);
* :func:`alarm_fraction` is the public threshold above which the released fraction says that
  the fit describes only part of the data.

Which ball is final depends on the method's plan and on earlier DP outputs only, never
directly on the data, so the count adds one ledger entry whatever the rows; the ledger's
length itself may vary between datasets, but only through DP outputs (DESIGN.md rule 10: a
histogram route's refinement plan is read off released scale brackets).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np
from scipy import stats

from ..backends import reduce_rows
from ..clipped_stats import Rows, affine_rows, mapped_inputs
from ..mechanisms import Release, private_count
from ..privacy import ZCDP, ApproxDP, Budget, PureDP, has_delta, zcdp_of
from ..sensitivity import count as count_sensitivity

__all__ = [
    "BACKGROUND_NOISE_SHARE",
    "background_weight",
    "COUNT_SHARE",
    "REFINEMENT_COUNT_SHARE",
    "ClipBall",
    "ClipRecord",
    "alarm_fraction",
    "clipped_advice",
    "COLLAPSE_SIGMAS",
    "collapse_advice",
    "is_collapsed",
    "note_final_moment",
    "cov_clip_scale",
    "count_noise_quantile",
    "mean_ball_radius",
    "note_clip",
    "recording_clips",
    "refinement_count_split",
    "release_clipped_count",
    "split_for_count",
    "take_count_share",
]

#: share of a fit's budget planned for the clipped-count release
COUNT_SHARE = 0.02
#: share of the CoinPress refinement's ρ set aside for the count by the bound-free (ε, δ)
#: methods (:func:`take_count_share`): their covariance error there is steep in ρ
REFINEMENT_COUNT_SHARE = 0.005
#: Gaussian tail of the ball counted for a mean step (see :func:`mean_ball_radius`)
MEAN_COUNT_TAIL = 0.01
# false-alarm level of each part of the threshold (the count's noise, the sampling of rows)
_ALARM_LEVEL = 1e-3
# slack for an inexact frame: the expected fraction may be up to twice the plan's, plus this
_FRAME_SLACK = 0.005
#: a released clipped fraction above this (and at most the missed-fit level of 0.5) is more
#: than tails: whole parts of the data lie outside (zero-inflated or coded columns, clusters,
#: a prior that cuts the data) — the warning says so, and that ``clip_scale`` will not help.
#: Heavy tails and a few gross errors leave out a few per cent (the corpus's heavy-tailed
#: tables: 2-7 % at ε = 1); a fit whose rough mean left the data released 33 %.
PARTIAL_MISS_FRACTION = 0.2


@dataclass(frozen=True)
class ClipBall:
    """One clipping ball of a step, all public or released except ``rows``: rows y_i are moved
    when W_i = A(y_i − shift) lies outside B(center, tau). ``kind`` is ``"cov"`` or ``"mean"``;
    ``model_fraction`` bounds the fraction of rows outside under the Gaussian model."""

    rows: Rows
    A: np.ndarray | None
    shift: np.ndarray | None
    center: np.ndarray
    tau: float
    kind: str
    model_fraction: float
    #: a second ball of the same rows: a row outside either is counted (the fit's final
    #: covariance ball beside its final mean ball; ``model_fraction`` then bounds the union)
    also: ClipBall | None = None
    #: a DP search of the data grew the step's radius past its plan
    #: (:mod:`.coinpress.radius_search`)
    grown: bool = False


@dataclass
class ClipRecord:
    """The balls noted during one fit, in order, and the fit's covariance clip multiplier
    ``cov_scale`` (public: the estimator's ``clip_scale``)."""

    balls: list[ClipBall] = field(default_factory=list)
    cov_scale: float = 1.0
    #: take the count's share from the zCDP refinement (:func:`take_count_share`)
    share_from_refinement: bool = False
    #: the budget set aside for the count by :func:`take_count_share`
    reserved: ZCDP | None = None
    #: the last final covariance release's smallest eigenvalue in its whitened frame (a DP
    #: output), its noise std and the plan's modelled λ_min of that frame (public):
    #: :func:`note_final_moment`, judged by :func:`is_collapsed`
    final_moment: tuple[float, float, float] | None = None

    def final(self) -> ClipBall | None:
        """The ball of the fit's last clipping step joined with the last covariance step's
        ball, when that is an earlier one (None when nothing was clipped): the rows the final
        covariance cut are rows the fit leaves out as much as those its final mean cut (a
        few gross errors far along a collinear direction lie inside the mean's ball in the
        frame of a covariance that never saw them). Only a covariance ball whose radius a DP
        search grew past its plan is joined — the data have rows beyond the plan's Gaussian
        reach, and the grown radius leaves the bulk behind (its χ tail, added to the model
        fraction as a union bound, is small). Otherwise the planned radius counts about as
        many Gaussian rows as the mean's ball (the union bound would double the model
        fraction), and at small n·ρ the noisy frame of the last covariance step cuts many
        Gaussian rows by design (20-50 % at n = 3,000, d = 10, ε = 1)."""
        if not self.balls:
            return None
        last = self.balls[-1]
        cov = next((b for b in reversed(self.balls) if b.kind == "cov"), None)
        if cov is None or cov is last or cov.rows is not last.rows or not cov.grown:
            return last
        return dataclasses.replace(
            last, model_fraction=min(1.0, last.model_fraction + cov.model_fraction), also=cov)


_ACTIVE: contextvars.ContextVar[ClipRecord | None] = contextvars.ContextVar(
    "privgauss_clip_record", default=None
)


@contextlib.contextmanager
def recording_clips(cov_scale: float = 1.0, share_from_refinement: bool = False
                    ) -> Iterator[ClipRecord]:
    """Record the clipping balls noted by the algorithms run inside (one fit); covariance
    steps run inside clip at ``cov_scale`` times their planned radius (:func:`cov_clip_scale`);
    with ``share_from_refinement`` the count's budget is set aside by the zCDP refinement
    (:func:`take_count_share`) instead of being split off before the fit."""
    record = ClipRecord(cov_scale=float(cov_scale), share_from_refinement=share_from_refinement)
    token = _ACTIVE.set(record)
    try:
        yield record
    finally:
        _ACTIVE.reset(token)


def cov_clip_scale() -> float:
    """The multiplier of the planned clip radius of covariance steps in the open record (1
    without one): a public choice of the fit (the estimators' ``clip_scale``). A step that
    clips at radius k·τ computes its sensitivity from k·τ, so privacy holds for every k; a
    larger k covers more of a heavy-tailed sample at the price of k² times the noise std."""
    record = _ACTIVE.get()
    return 1.0 if record is None else record.cov_scale


def take_count_share(rho: float) -> float:
    """The ρ a CoinPress refinement may spend when a record asks for the count's share to come
    from it: ρ(1 − s), setting ρ·s aside in the record for the count (s =
    :data:`REFINEMENT_COUNT_SHARE`); ρ unchanged otherwise. For the bound-free (ε, δ)
    methods, whose localisation spends a fixed ε first: taking 2 % of ε would cut the
    refinement's ρ by about 5 % (n = 2e4, d = 10, ε = 1), and their covariance error there is
    steep in ρ (measured: 2 % of ε cost 17 %, 2 % of the refinement's ρ 13 %,
    ``benchmarks/clip_count_cost.py``). Public: the record's flag and ρ only."""
    record = _ACTIVE.get()
    if record is None or not record.share_from_refinement or not math.isfinite(rho):
        return rho
    main, reserved = refinement_count_split(rho)
    record.reserved = ZCDP(reserved)
    return main


def refinement_count_split(rho: float) -> tuple[float, float]:
    """(the refinement's ρ, the clipped count's ρ) of a refinement planned with ρ: the split
    :func:`take_count_share` applies (and a method's budget plan states)."""
    main = rho * (1.0 - REFINEMENT_COUNT_SHARE)
    return main, rho - main


def note_clip(rows: Rows, A: np.ndarray | None, shift: np.ndarray | None, center: np.ndarray,
              tau: float, kind: str, model_fraction: float, grown: bool = False) -> None:
    """Note a step's clipping ball in the open record, if any (else nothing happens);
    ``grown``: a DP search of the data grew its radius past the plan."""
    record = _ACTIVE.get()
    if record is None:
        return
    record.balls.append(ClipBall(
        rows, None if A is None else np.array(A, dtype=np.float64),
        None if shift is None else np.array(shift, dtype=np.float64),
        np.array(center, dtype=np.float64), float(tau), kind, float(model_fraction),
        grown=bool(grown)))


def chi_tail(d: int, tau: float) -> float:
    """P(‖z‖ > τ) for z ~ N(0, I_d): the fraction of whitened Gaussian rows a ball about their
    mean cuts."""
    return float(stats.chi2.sf(float(tau) ** 2, d))


def mean_ball_radius(d: int, tau: float, prior_radius: float) -> float:
    """The radius of the ball counted for a mean step of radius τ whose centre is within
    ``prior_radius`` of the mean (whitened rows): at least the covering radius
    q + prior_radius, q the (1 − 1 %) quantile of ‖z‖ — a practical last step that clips
    inside the bulk on purpose (and undoes the shrinkage under the model) is counted against
    the ball the model says covers all but 1 % of Gaussian rows. By the triangle inequality at
    most 1 % of Gaussian rows fall outside it."""
    q = math.sqrt(float(stats.chi2.isf(MEAN_COUNT_TAIL, d)))
    return max(float(tau), q + float(prior_radius))


def split_for_count(budget: Budget, zcdp_method: bool) -> tuple[Budget, Budget]:
    """(budget for the algorithm, budget for the clipped count), planned before the fit from
    the budget alone: a ρ-zCDP budget — or an (ε, δ) budget spent by a zCDP method, through
    its ρ (``zcdp_method``) — gives ρ(1 − s) and the rest; otherwise ε(1 − s) (δ unchanged)
    and a pure ε·s for the count, s = :data:`COUNT_SHARE`. The two compose to the budget."""
    if isinstance(budget, ZCDP) or (zcdp_method and has_delta(budget)):
        rho = zcdp_of(budget, "the clipped count")
        main = rho * (1.0 - COUNT_SHARE)
        return ZCDP(main), ZCDP(rho - main)
    eps = budget.epsilon
    main_eps = eps * (1.0 - COUNT_SHARE)
    if has_delta(budget):
        return ApproxDP(main_eps, budget.delta), PureDP(eps - main_eps)
    return PureDP(main_eps), PureDP(eps - main_eps)


def release_clipped_count(ball: ClipBall, budget: Budget, *, release: Release) -> float:
    """The DP number of rows outside ``ball``: charged to ``release`` before the noise (one
    ledger entry, sensitivity 1, step "clipped count" unless the context names one). Returns
    the noisy count (may be negative or exceed n: clamp its fraction as post-processing)."""
    rel = release.named("clipped count")
    exact = outside_count(ball)
    noisy = private_count(exact, budget, accountant=rel.accountant, noise=rel.noise,
                          step=rel.step, sensitivity=count_sensitivity())
    return float(np.asarray(noisy).reshape(-1)[0])


def _union_kernel(B: np.ndarray, *, balls: tuple[tuple[Any, Any, Any, Any, np.ndarray, float], ...]
                  ) -> tuple[np.ndarray]:
    """(number of rows outside at least one of ``balls``,) for a block: each ball (P, p0, A,
    shift, center, τ) as :meth:`~privgauss.clipped_stats.Rows.clipped_count` sees it."""
    from ..linalg import clip_weights

    out = np.zeros(B.shape[0], dtype=bool)
    for P, p0, A, s, center, tau in balls:
        W = affine_rows(mapped_inputs(B, P, p0), A, s)
        out |= clip_weights(W - center, tau) < 1.0
    return (np.array(float(np.count_nonzero(out))),)


def outside_count(ball: ClipBall) -> int:
    """The exact number of rows outside ``ball`` (or outside ``ball`` or ``ball.also``): a
    count of records, sensitivity 1 under replace-one neighbours; nothing is released here."""
    b = ball
    if b.also is None:
        return b.rows.clipped_count(b.A, b.shift, b.center, b.tau)
    spec = tuple((x.rows.P, x.rows.p0, x.A, x.shift, np.asarray(x.center, dtype=np.float64),
                  float(x.tau)) for x in (b, b.also))
    return int(round(float(reduce_rows(b.rows.X, partial(_union_kernel, balls=spec))[0])))


def alarm_fraction(n: int, model_fraction: float, mechanism: str, noise_scale: float) -> float:
    """The public threshold on the released clipped fraction above which a fit describes only
    part of the data. With p the plan's Gaussian fraction outside the ball:

        p + max(p + 0.5 %, 4·√(p(1 − p)/n)) + z/n,

    z the one-sided 1 − 10⁻³ quantile of the count's noise (3.09σ for the discrete Gaussian,
    b·ln(500) for the discrete Laplace of scale b). On Gaussian data the true fraction has mean
    at most p when the frame whitens exactly; the term p + 0.5 % absorbs an inexact frame (up to
    twice the planned fraction), 4 standard deviations the sampling of rows (a binomial
    exceeds its mean by 4 sd with probability below 10⁻³ for these n·p, Bernstein), and z the
    noise: a false alarm has probability about 2·10⁻³ (tested: ≤ 1 in 40 fits)."""
    p = float(model_fraction)
    sampling = 4.0 * math.sqrt(max(p * (1.0 - p), 0.0) / n)
    return p + max(p + _FRAME_SLACK, sampling) + count_noise_quantile(mechanism, noise_scale) / n


def clipped_advice(fraction: float, alarm: float) -> str:
    """The text of a :class:`~privgauss.warnings.ClippedDataWarning` for a released clipped
    fraction above its public alarm (both DP outputs or public): up to
    :data:`PARTIAL_MISS_FRACTION`, heavy tails or gross errors — the fit describes the central
    part, and ``clip_scale`` covers more of the tails; above it, parts of the data the
    Gaussian does not reach — ``clip_scale`` will not fix that, transforming the columns,
    public rows, a prior that covers the data or a larger budget may."""
    head = (f"about {fraction:.1%} of the rows (a DP estimate) lie outside the fit's final "
            f"clipping ball, more than a Gaussian sample leaves out (alarm above {alarm:.1%}): ")
    if fraction <= PARTIAL_MISS_FRACTION:
        return head + (
            "heavy tails or gross errors — the fit describes the central part of the data, not "
            "its tails (heavy-tailed columns, recording errors). If the tails matter, raise "
            "clip_scale (the clipping radius multiplier: covers more rows, adds more noise), or "
            "transform or clean the columns (log, winsorize) before fitting; see the README, "
            "'Heavy-tailed data'")
    return head + (
        "more than tails — the fit may have missed part of the data (columns far from Gaussian: "
        "counts with many zeros, codes, clusters; or mean_bound/cov_bounds that exclude part "
        "of it), and raising clip_scale will not fix that. Transform the columns (log, ranks), "
        "check that the prior covers the data, give public rows, or use a larger budget")


def note_final_moment(z_min: float, sigma: float, lower: float) -> None:
    """Note, in the open record if any, a covariance chain's final release: its smallest
    eigenvalue ``z_min`` in the frame it was released in (a DP output), the release's noise
    std σ per whitened entry and the plan's modelled λ_min of that frame (public)."""
    record = _ACTIVE.get()
    if record is not None:
        record.final_moment = (float(z_min), float(sigma), float(lower))


# how many noise stds of the final release separate a collapsed direction from a constant
# column (0) and from the frame's modelled spread
COLLAPSE_SIGMAS = 4.0


def is_collapsed(z_min: float, sigma: float, lower: float) -> bool:
    """Whether a CoinPress chain collapsed in some direction, from its final release (see
    :func:`note_final_moment`; DP outputs and public quantities only). The chain's frames
    whiten the rows, so the final release Z should have eigenvalues near 1: at least the
    plan's modelled λ_min ℓ of the frame (ℓ/(ℓ + η + √d σ) per step, from the previous
    steps' noise) up to the frame's deficit 1 − ℓ once more, less the release's own noise;
    a constant column sits at 0 ± σ (inside a prior its frame is floored at cov_bounds'
    lower bound, and its rows all lie at one point). A direction between — above
    COLLAPSE_SIGMAS·σ and below 2ℓ − 1 − COLLAPSE_SIGMAS·σ — has rows that are spread but lie
    beyond the clipping radius: a 0/1 column with a fraction p of ones when p·τ² < 1 (τ the
    whitened clip radius, 4.8 at d = 10) has its ones ~1/√p standard deviations out, each
    step keeps about p·τ² of its variance, and the chain shrinks it step after step (down to
    the prior's lower bound). Measured at ε = 1 inside cov_bounds 100× and 2× outside np.cov's
    spectrum (n = 20,000, d = 5, four Gaussian columns and a 0/1 one; ℓ ≈ 0.9, σ ≈ 0.006):
    Gaussian columns only z_min 0.94-0.95, a flag with 5 % ones 0.89-0.95 (variance 0.95×),
    3 % 0.45-0.47 (0.017×-0.33×), 1 % 0.155 (0.007×-0.33×), a constant column 2e-4-2e-3;
    randhie (a flag with 1.5 % ones) 0.35 (its sd 0.06× np.cov's)."""
    k = COLLAPSE_SIGMAS * float(sigma)
    return k < float(z_min) < 2.0 * float(lower) - 1.0 - k


def collapse_advice(z_min: float) -> str:
    """The text of a :class:`~privgauss.warnings.ClippedDataWarning` for a fit whose covariance
    chain collapsed in a direction (:func:`is_collapsed`)."""
    return (
        "the fit's last covariance release, in the frame that should whiten the rows, has a "
        f"direction at {z_min:.2g} (a DP estimate; about 1 on a Gaussian sample): a failed "
        "fit in that direction, not heavy tails — its rows are spread but lie beyond the "
        "clipping radius, which cuts them at every whitening step (a 0/1 column with a few "
        "percent of ones or fewer, a count with few non-zeros, a few gross errors off a "
        "collinear plane), so the variance there is "
        "underestimated, down to cov_bounds' lower bound. Drop mean_bound and cov_bounds (the "
        "bound-free route reads such columns from histograms), or give public rows; "
        "clip_scale helps only partly")


#: the background's least weight, as a share of the rows a clipped count's noise can hide
BACKGROUND_NOISE_SHARE = 0.1
#: ... and as a share of the rows counted outside (the clipped fraction itself)
BACKGROUND_CLIPPED_SHARE = 0.1


def background_weight(clipped_fraction: float, model_fraction: float, noise_scale: float,
                      n: float) -> float:
    """The weight of the broad background that ``score_samples`` and ``sample`` add
    (post-processing of a released clipped count, public ``noise_scale`` and n): the rows
    outside the final balls beyond the model's own tail (``model_fraction``), at least a tenth
    of the rows the count's noise can hide (its std less one row, over n). A count that noise
    pushed down cannot rule out rows outside, and a background of weight 0 scores a held-out
    gross error at -1e4: the single Gaussian's corpus (fair, one seed in ten: +0.45 nat/row
    against -0.3 at the others), and private EM's at ε = 1, where the count's point estimate
    with this rule instead of the excess beyond its noise quantile gained 0.21 nat/row on
    average over 90 fits (41 better, 12 worse by at most 0.016; SumHes 1-7.5, Snmesp and
    MedExp ~0.5; ``benchmarks/results/em_background.md``). It costs
    Gaussian rows at most that weight per row, and goes to the plain excess once the count
    is exact to a row. It is also at least ``BACKGROUND_CLIPPED_SHARE`` of the rows counted
    outside: a few gross errors can hide in the model's own expected tail (a generated table
    at ε = 1e4: 3 rows outside where a 3-component mixture's tails put 3.8, weight 0, and a
    held-out gross error scored −2.6e11); as the budget grows the radius passes every row a
    Gaussian mixture holds, and this share of nothing is nothing."""
    hidden = max(float(noise_scale) - 1.0, 0.0)
    return max(float(clipped_fraction) - float(model_fraction),
               BACKGROUND_NOISE_SHARE * hidden / float(n),
               BACKGROUND_CLIPPED_SHARE * float(clipped_fraction))


def count_noise_quantile(mechanism: str, noise_scale: float) -> float:
    """z, the one-sided 1 − 10⁻³ quantile of a clipped count's noise: 3.09σ for the discrete
    Gaussian, b·ln(500) for the discrete Laplace of scale b (public)."""
    if "laplace" in mechanism:
        return float(noise_scale) * math.log(1.0 / (2.0 * _ALARM_LEVEL))
    return float(stats.norm.isf(_ALARM_LEVEL)) * float(noise_scale)
