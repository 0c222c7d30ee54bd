"""The public plan of the CoinPress covariance (:func:`covariance_schedule`): no data involved.

Biswas, Dong, Kamath and Ullman, *CoinPress* (NeurIPS 2020), Alg. 2: the step count, the
split ρ_i = ρ·f_i (:func:`~.schedule.split_rho`), each step's clip radius (in whitened
coordinates), noise std and ridge, the planner's model of the smallest eigenvalue after each
whitening, (practical) DP radius searches (:mod:`.radius_search`, charged within each ρ_i)
and, at large budgets, cover steps before the last one (:func:`with_cover_steps`). The
runner (:func:`~.steps.run_cov`) charges ``ZCDP(ρ_i)`` per step before drawing noise: ρ-zCDP
under **replace-one** neighbours (n public) for any plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from ...mechanisms import gaussian_sigma_zcdp
from ...sensitivity import clipped_second_moment_frobenius
from . import schedule
from .radius_search import RadiusSearch, plan_search, search_noise_cap
from .schedule import (
    check_fractions,
    check_schedule,
    coinpress_fractions,
    noise_matched_radius,
    split_rho,
)
from .tails import (
    chi2_isf,
    chi2_sf,
    chi_tail_bound,
    clip_fourth_moment,
    cov_clip_slope,
)

__all__ = [
    "COV_CLIP_TAIL",
    "CovStep",
    "covariance_schedule",
    "final_cov_error",
    "sigma_cov",
    "with_cover_steps",
]

_MAX_COV_STEPS = 40
# Practical covariance: per-row clipping tail of the chi-square radius.
COV_CLIP_TAIL = 0.01


@dataclass(frozen=True)
class CovStep:
    """One covariance step, all public: zCDP cost, row clip radius (in the current whitened
    coordinates, where the second moment M ⪯ I), noise std of each diagonal entry (σ/√2 off
    the diagonal: :func:`~privgauss.mechanisms.symmetric_matrix_mechanism`), the
    ridge η added before the next whitening (0 for the last step), and the public lower
    bound on λ_min(M) entering the step."""

    rho: float
    clip_radius: float
    sigma: float
    eta: float
    lower: float
    debias: bool = False  # last step only: clipped inside the bulk, shrinkage undone
    #: a DP search that may grow the radius from the data (its cost is part of ``rho``;
    #: ``sigma`` is then the noise at the planned radius with the rest)
    search: RadiusSearch | None = None
    #: a cover step (:func:`with_cover_steps`): its release only sets the next frame
    cover: bool = False


def sigma_cov(tau: float, n: int, rho: float) -> float:
    return gaussian_sigma_zcdp(clipped_second_moment_frobenius(tau, n), rho)


# Whether the planner may clip the last covariance step inside the bulk and undo the shrinkage
# under the Gaussian model. Off: on non-Gaussian columns the undone clip is biased — at
# (1, 1e-6), n = 8,000, d = 4 a 0/1 flag (p = 0.1) came out with 52 % of its variance and a
# Poisson(0.3) count with 80 % (92-97 % with the covering clip), while on Gaussian draws it gains
# ~20 % (bound-free, d = 10, n = 2e4: covariance 1.33× non-private against 1.68×).
COV_DEBIAS = False
# quantiles of ‖z‖ tried for a debiased last covariance step
_COV_FINAL_QUANTILES = (0.7, 0.8, 0.9)
# ... only when the planned frame is close to whitened (typical λ_min(M) at least this)
_COV_DEBIAS_MIN_LOWER = 0.3
_COV_DEBIAS_MIN_GAIN = 0.1  # ... and when its predicted squared error is this much smaller


def final_cov_error(n: int, d: int, step: CovStep) -> float:
    """The planner's predicted squared error of the last step, (d² + d)(v/n + σ²/(ℓk²)): the
    sampling variance v and the slope k of an undone clip at τ are those of an off-diagonal
    entry at M = I (1 and 1 when no row is meant to be clipped). The noise term counts σ² on
    every entry, where the symmetric mechanism puts σ²/2 off the diagonal: pessimistic by up to
    2× in the noise, kept because the exact term chose worse plans (bound-free, d = 10, ε = 1,
    n = 2e4, 20 draws: covariance 1.46× non-private against 1.42×)."""
    v, k = 1.0, 1.0
    if step.debias:
        k = cov_clip_slope(d, step.clip_radius)
        v = clip_fourth_moment(d, step.clip_radius) / (k * k)
    return (d * d + d) * (v / n + step.sigma**2 / (step.lower * k * k))


def _final_cov_step(n: int, d: int, rho_f: float, lower: float, tau: float) -> CovStep:
    """The last covariance step: the covering clip at ``tau`` or a clip at a χ_d quantile
    inside the bulk whose shrinkage is undone under the Gaussian model
    (:func:`undo_cov_clip`), whichever has the smaller predicted error."""
    best = first = _cov_step(rho_f, tau, n, 0.0, lower, d, down=True)
    tau = first.clip_radius
    err = cover = final_cov_error(n, d, best)
    if not COV_DEBIAS or lower < _COV_DEBIAS_MIN_LOWER or d < 2:  # (far from whitened: the model
        return best  # does not hold; d = 1 has no off-diagonal entry to model)
    for p in _COV_FINAL_QUANTILES:
        t = math.sqrt(chi2_isf(1.0 - p, d))
        if t >= tau:
            continue
        cand = CovStep(rho_f, t, sigma_cov(t, n, rho_f), 0.0, lower, True)
        e = final_cov_error(n, d, cand)
        if e < err * (1 - 1e-12):
            best, err = cand, e
    # the undone clip relies on Gaussian tails (a 0/1 column came out 11 % too wide): only
    # worth it when the noise dominates, i.e. a clear predicted gain
    if best.debias and err > (1.0 - _COV_DEBIAS_MIN_GAIN) * cover:
        return first
    return best


def _theory_cov_plan(
    n: int, d: int, cond: float, rhos: tuple[float, ...], beta: float
) -> tuple[CovStep, ...]:
    tau = chi_tail_bound(d, beta)
    eta = 0.5 * (2.0 * math.sqrt(d / n) + d / n)
    lower = 1.0 / cond
    out = []
    for i, rho_i in enumerate(rhos):
        s = sigma_cov(tau, n, rho_i)
        last = i == len(rhos) - 1
        out.append(CovStep(rho_i, tau, s, 0.0 if last else eta, lower))
        lower = min(1.0, lower / (lower + eta + math.sqrt(d) * s))  # as in the practical model
    return tuple(out)


def _practical_cov_chain(
    n: int, d: int, cond: float, rhos: tuple[float, ...]
) -> tuple[list[CovStep], float]:
    """Whitening steps with CoinPress's ridge η = (2√(d/n) + d/n)/2, and the planner's
    typical-case model of the smallest eigenvalue: ℓ ← ℓ/(ℓ + η + √d·σ) (the noise matrix
    lifts a direction by about √d·σ; its worst case is 2√d·σ)."""
    tau = math.sqrt(chi2_isf(COV_CLIP_TAIL, d))
    eta = 0.5 * (2.0 * math.sqrt(d / n) + d / n)
    lower = 1.0 / cond
    out = []
    for rho_i in rhos:
        step = _cov_step(rho_i, tau, n, eta, lower, d)
        out.append(step)
        lower = min(1.0, lower / (lower + eta + math.sqrt(d) * step.sigma))
    return out, lower


def _cov_step(rho: float, tau: float, n: int, eta: float, lower: float, d: int = 0,
              frame: bool = False, down: bool = False) -> CovStep:
    """A practical covariance step clipping at ``tau`` or at its noise-matched radius; with
    ``d``, a radius search (:mod:`.radius_search`) may grow it from the data when the
    budget leaves room (rows in the step's frame have second moment ⪯ I: at most a χ_d tail
    of Gaussian rows lies outside); ``frame``: a cover step's search. ``down`` (the last
    step): in the regime of the cover steps (a cap τ_c, where the noise reaches 0.1/d, with
    τ_c² ≥ n/:data:`COVER_GROUP`), the search's grid starts at ``tau``, below the
    noise-matched radius, so the radius is what the rows need rather than the formula's
    (which grows without bound with n·ρ)."""
    tau0 = tau
    tau = noise_matched_radius(tau, sigma_cov(tau, n, rho), n, 2)
    sigma = sigma_cov(tau, n, rho)
    rs = None
    if schedule.SEARCH and d > 0:
        start = None
        if down and math.isfinite(rho) and tau > tau0:
            cap_sq = tau * tau * search_noise_cap(d, 2) / sigma  # noise ∝ τ²
            if cap_sq * COVER_GROUP >= n:
                start = tau0
        rs = plan_search(tau, sigma, rho, n, d, 2, chi2_sf(tau * tau, d), frame, start)
    if rs is not None:
        sigma = sigma_cov(tau, n, rho - rs.rho)
    return CovStep(rho, tau, sigma, eta, lower, search=rs)


#: cover steps inserted before a searching last step (:func:`with_cover_steps`). Each one that
#: cannot reach a single gross row compresses its direction by about √(1 + τ²/n), so a later
#: one covers it: diamonds at ε = 1e4 (n = 43,152), 850 → 400 → covered → the last step
#: covers it at ~190 (one cover step left it at 250, outside the last step's reach). With
#: two, 2 rows 3,000 sds out in 20,000 stayed cut (KL to np.cov's Gaussian 0.16); with three
#: they were covered (KL ≤ 4e-4), as were a single row and 10 rows 800 sds out
COVER_STEPS = 3
#: ... and only when the last step's cap reaches √(n/k) for groups of k ≤ this many rows: such a
#: group, alone in its direction, lies √(n/k) out in np.cov's frame, so below that budget no
#: frame lets the last step cover a few gross rows and cover steps would only cost the mean
#: budget (at ε = 1 they would run on the corpus's large tables and change their fits)
COVER_GROUP = 10


def with_cover_steps(plan: tuple[CovStep, ...], n: int, d: int, rho_cover: float
                     ) -> tuple[CovStep, ...]:
    """``plan`` with :data:`COVER_STEPS` *cover steps* of ρ ``rho_cover`` in all inserted
    before its last step, when that step searches its radius up to a cap τ with τ² ≥ n /
    :data:`COVER_GROUP` (a large budget; else ``plan`` unchanged). A cover step is a
    whitening step whose radius search may raise its noise far above the last step's cap (a
    *frame* search, :mod:`.radius_search`): it only sets the next frame, which needs to be
    right within a constant factor. A few gross rows far out in the chain's frame (recording
    errors, hundreds of standard deviations out) are then in the released frame only about
    √(n/#rows) out along their direction, which the last step covers with its small noise;
    without them the last step cuts those rows and the fit converges to the covariance of
    the clean rows, not np.cov's (DESIGN.md rule 15). On Gaussian rows a cover step keeps its
    planned radius and its release is one more whitening step. Public quantities only; the
    plan then sums to its ρ plus ``rho_cover`` (:func:`.practical_plan` takes it from the
    final mean's share)."""
    last = plan[-1]
    if (last.search is None or COVER_STEPS < 1
            or not (rho_cover > 0 and math.isfinite(rho_cover))):
        return plan
    if last.search.grid[-1] ** 2 * COVER_GROUP < n:
        return plan
    eta = 0.5 * (2.0 * math.sqrt(d / n) + d / n)
    tau = math.sqrt(chi2_isf(COV_CLIP_TAIL, d))
    lower = last.lower
    covers = []
    for rho_c in split_rho(rho_cover, (1.0 / COVER_STEPS,) * COVER_STEPS):
        step = replace(_cov_step(rho_c, tau, n, eta, lower, d, frame=True), cover=True)
        covers.append(step)
        lower = min(1.0, lower / (lower + eta + math.sqrt(d) * step.sigma))
    return (*plan[:-1], *covers, replace(last, lower=lower))


@lru_cache(maxsize=1024)
def covariance_schedule(
    n: int,
    d: int,
    cond: float,
    rho: float,
    *,
    steps: int | None = None,
    fractions: tuple[float, ...] | None = None,
    beta: float = 0.1,
    constants: str = "practical",
    prefer_fewer: float = 0.0,
) -> tuple[CovStep, ...]:
    """The public plan of the iterative covariance estimator for a second moment M with
    I/cond ⪯ M ⪯ I in the starting coordinates (no data involved).

    ``theory``: CoinPress (γ_c = γ(d, β), η = (2√(d/n) + d/n)/2, CoinPress's split); steps=None
    gives t = 1 + ⌈log10 cond⌉ (at least 2). ``practical``: clip at the exact χ_d quantile
    0.99, CoinPress's ridge, and — when steps/fractions are None — t ∈ 1..40 and the last
    step's share chosen to minimise the predicted error (d² + d)(1/n + σ_t²/ℓ_t), ℓ_t the
    typical smallest eigenvalue after t − 1 whitening steps (see ``_practical_cov_chain``).
    ``beta`` is the tail of the theory clip radius (practical plans do not use it).
    ``prefer_fewer`` (practical, automatic plans): take the fewest steps whose predicted error
    is within this relative tolerance of the best (e.g. 0.01; each step is a pass over the
    data).
    """
    cond = float(cond)
    if not (cond >= 1 and math.isfinite(cond)):
        raise ValueError("the condition bound must be finite and >= 1")
    rho, beta, steps, fr = check_schedule(n, d, rho, beta, constants, steps, fractions)
    if constants == "theory":
        t = max(2, 1 + math.ceil(math.log10(cond))) if steps is None else int(steps)
        fr = coinpress_fractions(t) if fr is None else fr
        return _theory_cov_plan(n, d, cond, split_rho(rho, fr), beta)

    tau = math.sqrt(chi2_isf(COV_CLIP_TAIL, d))
    if fr is not None:
        chosen = fr
    else:
        ts = range(1, _MAX_COV_STEPS + 1) if steps is None else [int(steps)]
        chosen = _best_cov_fractions(n, d, cond, rho, tuple(ts), tau, float(prefer_fewer))
    rhos = split_rho(rho, chosen)
    chain, lower = _practical_cov_chain(n, d, cond, rhos[:-1])
    return (*chain, _final_cov_step(n, d, rhos[-1], lower, tau))


_COV_LAST_SHARES = np.linspace(0.3, 0.99, 47)


def _best_cov_fractions(
    n: int, d: int, cond: float, rho: float, ts: tuple[int, ...], tau: float, prefer_fewer: float
) -> tuple[float, ...]:
    """The split minimising the predicted error (d² + d)(1/n + σ_t²/ℓ_t) over t ∈ ``ts`` and
    the last share f ∈ [0.3, 0.99] (earlier steps share 1 − f equally), vectorised over f.
    With ``prefer_fewer`` > 0 the fewest steps whose best error is within that relative
    tolerance of the overall best win (fewer passes over the data, near-equal accuracy)."""
    sens = clipped_second_moment_frobenius(tau, n)
    eta = 0.5 * (2.0 * math.sqrt(d / n) + d / n)
    per_t: list[tuple[int, np.ndarray, np.ndarray]] = []
    many = [t for t in ts if t > 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        # all t > 1 at once: row j runs t_j − 1 head steps (the same arithmetic per entry)
        tt = np.asarray(many, dtype=float)[:, None]
        f = np.broadcast_to(_COV_LAST_SHARES, (len(many), _COV_LAST_SHARES.size))
        head = rho * (1.0 - f) / (tt - 1.0)
        last = rho - (tt - 1.0) * head if math.isfinite(rho) else np.full_like(f, math.inf)
        step = eta + math.sqrt(d) * (sens / np.sqrt(2.0 * head))
        lower = np.full_like(f, 1.0 / cond)
        for k in range(int(max(many, default=1)) - 1):
            go = (tt - 1.0) > k
            lower = np.where(go, np.minimum(1.0, lower / (lower + step)), lower)
        errs = (d * d + d) * (1.0 / n + (sens / np.sqrt(2.0 * last)) ** 2 / lower)
        rows_of = {t: j for j, t in enumerate(many)}
        for t in ts:
            if t == 1:
                s1 = sens / math.sqrt(2.0 * rho) if math.isfinite(rho) else 0.0
                per_t.append((1, np.array([1.0]),
                              np.array([(d * d + d) * (1.0 / n + s1 * s1 * cond)])))
            else:
                j = rows_of[t]
                per_t.append((t, _COV_LAST_SHARES, errs[j]))
    best_err = min(float(e.min()) for _, _, e in per_t)
    limit = best_err * (1.0 + prefer_fewer)
    for t, f, err in per_t:
        if prefer_fewer > 0 and float(err.min()) > limit:
            continue
        # the first minimum in candidate order (t increasing, f increasing), as a scan would
        j = int(np.argmin(err))
        if prefer_fewer > 0 or float(err[j]) <= best_err * (1 + 1e-12):
            if t == 1:
                return (1.0,)
            fj = float(f[j])
            return check_fractions([(1.0 - fj) / (t - 1)] * (t - 1) + [fj], t)
    raise AssertionError("unreachable")  # pragma: no cover
