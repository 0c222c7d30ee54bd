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

(a) *Scale* and (b) *location*: per-axis stability histograms give a scale bracket and a
    centre within a public radius of μ, with no range parameter (:mod:`.histogram_localise`,
    whose docstring covers tied and constant columns and the random subset of the rows read
    when n is large).
(c) *Refinement.* In the coordinates z = (x − c) / s (s_k the middle of the scale bracket) the mean
    lies within ‖r / s‖ of 0 and the diagonal of the covariance within the squared bracket, so
    CoinPress (:func:`~privgauss.gaussian.coinpress.coinpress_gaussian`) runs with the zCDP budget
    left over; with a known covariance the data are whitened first and
    :func:`~privgauss.gaussian.coinpress.coinpress_mean` is used. A degenerate axis enters the
    refinement as a column of public N(0, 1) noise (so the refinement's plan, prior and ledger
    are those of d ordinary axes, whatever was degenerate) and leaves it with its released
    value as mean and zero variance and covariances. Directions the refinement's clipping
    shrinks, and the axes whose spread the octave release read (a rare flag, a DP output),
    have their far rows searched and covered before its last covariance step
    (:mod:`.coinpress.direction_cover`; its counts come out of that step's ρ): a 1.5-2 %
    flag was otherwise shrunk to 0.05-0.12× its sd at about 1 seed in 10 (issue 26).

The budget split between (a)–(b) and (c) is :mod:`.histogram_budget`.

**Failure (⊥).** If a histogram releases no bin, or the top location bin is saturated by
overflow, :class:`EstimationFailed` is raised after the budget spent so far; it names the step
and an approximate n the step needs, computed from τ and the bin masses only. A constant
column is not a failure (see *Ties* in :mod:`.histogram_localise`), nor a tied column whose
rarer values the octave release reads, nor a column over orders of magnitude whose scale
histogram released no bin when the wide axes' octave release reads it (*Wide axes* there;
WIDE_SHARE of the refinement's ρ, a branch of :func:`histogram_plan`).

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
from typing import Any

import numpy as np

from ..backends import as_rows, is_dask
from ..clipped_stats import transform_rows
from ..exceptions import PrivacyBudgetError
from ..linalg import inv_sqrtm_psd, sqrtm_psd, sym
from ..mechanisms import Release
from ..privacy import Accountant, ApproxDP, has_delta
from ..validation import check_probability

# the route's budget, localisation and their names, re-exported: callers import them from here
from .histogram_budget import P_LOCATION as P_LOCATION
from .histogram_budget import P_SCALE as P_SCALE
from .histogram_budget import (
    RADIUS_FACTOR,
    TIE_RETRY_SHARE,
    TIE_SHARE,
    WIDE_RETRY_SHARE,
    WIDE_SHARE,
    WIDTH_FACTOR,
    budget_split,
)
from .histogram_budget import JointBudget as JointBudget
from .histogram_budget import budget_condition as budget_condition
from .histogram_budget import histogram_plan as histogram_plan
from .histogram_budget import localisation_budget as localisation_budget
from .histogram_budget import localisation_plan as localisation_plan
from .histogram_budget import localisation_rows as localisation_rows
from .histogram_budget import localisation_within_cap as localisation_within_cap
from .histogram_budget import min_epsilon as min_epsilon
from .histogram_budget import refinement_error as refinement_error
from .histogram_localise import Localisation as Localisation
from .histogram_localise import localise as localise
from .histogram_reading import HI_RATIO, LO_RATIO
from .ridge import JITTER_SHARE, jitter_seed, ridged_gaussian, transform_jittered

__all__ = ["histogram_gaussian", "public_padding"]

_PAD_SEED = 20_171_117  # public seed of the padding that replaces degenerate axes


def histogram_gaussian(
    X: Any,
    epsilon: float,
    delta: float,
    *,
    release: Release,
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
    (utility only). All releases are charged to ``release`` (its accountant an (ε, δ) one with
    room for ``ApproxDP(epsilon, delta)``; its steps named under the context's prefix); the
    call spends exactly (ε, δ), unless it fails.

    Raises :class:`EstimationFailed` (a DP output, budget spent) when localisation fails, and
    :class:`PrivacyBudgetError` before anything is drawn when the accountant cannot pay.
    """
    from .coinpress import mean_of_rows

    budget = ApproxDP(epsilon, delta)
    if not has_delta(budget):
        raise PrivacyBudgetError("histogram_gaussian needs delta > 0 (stability histograms)")
    beta = check_probability(beta, "beta")
    if not (isinstance(corr_condition, int | float) and corr_condition >= 1):
        raise ValueError("corr_condition must be a number >= 1")
    Xc = as_rows(X, min_rows=2)
    n, d = Xc.shape
    accountant = release.accountant
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
    src = release.noise

    s_budget, l_budget, rho_ref = budget_split(n, d, budget, known is not None, constants)
    if known is not None:
        w = inv_sqrtm_psd(known)
        Xw = transform_rows(Xc, w)  # w symmetric: rows x ↦ w x, an overflow sent far
        loc = localise(Xw, None, l_budget, release=release)
        rho = _refinement_rho(accountant, rho_ref, 0.0)
        radius = float(np.linalg.norm(loc.radius))
        mean_w = mean_of_rows(as_rows(Xw), loc.center, radius, rho,
                              release=Release(accountant, src, release.name("coinpress-mean")),
                              beta=beta)
        return np.asarray(mean_w) @ sqrtm_psd(known), known.copy()

    loc = localise(Xc, s_budget, l_budget, release=release, tie_rho=TIE_SHARE * rho_ref,
                   wide_rho=WIDE_SHARE * rho_ref, tie_retry_rho=TIE_RETRY_SHARE * rho_ref,
                   wide_retry_rho=WIDE_RETRY_SHARE * rho_ref)
    rho = _refinement_rho(accountant, rho_ref, loc.tie_rho + loc.wide_rho)
    deg = np.zeros(d, dtype=bool) if loc.degenerate is None else loc.degenerate
    # a degenerate axis (a constant column: one released value, scale 0) is known exactly; in the
    # refinement it becomes a public N(0, 1) column, so the plan, and the ledger, stay those of
    # d ordinary axes (a zero-variance column would break the refinement's eigenvalue prior)
    s = np.where(deg, 1.0, loc.scale)
    c = np.where(deg, 0.0, loc.center)
    s_lo = np.where(deg, LO_RATIO, loc.scale_lo)
    s_hi = np.where(deg, HI_RATIO, loc.scale_hi)
    radius = float(np.linalg.norm(RADIUS_FACTOR * WIDTH_FACTOR * s_hi / s))
    cond = (float(corr_condition) if constants == "theory"
            else budget_condition(float(corr_condition), n, rho))
    lo = float(np.min(s_lo / s) ** 2) / cond
    hi = float(np.sum((s_hi / s) ** 2))  # λ_max <= trace
    # a ridge: ±eta on every entry makes the covariance the refinement sees Σ_z + eta²·I, whose
    # smallest eigenvalue is at least eta² even when columns are exact linear combinations of
    # others; eta² = JITTER_SHARE·lo vanishes with the noise as lo does (budget_condition), see
    # :mod:`.ridge` (practical constants only; "theory" runs the refinement as published)
    eta2 = 0.0 if constants == "theory" else JITTER_SHARE * lo
    seed = jitter_seed(src) if eta2 > 0 else None
    Z = None
    if seed is not None and not deg.any() and not is_dask(Xc):  # map and jitter in one pass
        Z = transform_jittered(Xc, 1.0 / s, c, math.sqrt(eta2), seed)
    jittered = Z is not None
    if Z is None:
        Z = transform_rows(Xc, 1.0 / s, c)  # a row that overflows is sent far (clipped)
        if deg.any():
            Z = np.array(Z, dtype=np.float64, copy=True)  # never write into the caller's rows
            Z[:, deg] = public_padding(n, int(deg.sum()))
    mean_z, cov_z = ridged_gaussian(
        Z,
        rho,
        eta2,
        release=Release(accountant, src, release.name("coinpress-gaussian")),
        cov_bounds=(lo, hi),  # lo is an assumption, judged from the release (check)
        owned=bool(deg.any()) or Z is not Xc,
        seed=seed,
        jittered=jittered,
        check="histogram-refinement",
        center=np.zeros(d),
        radius=radius,
        constants=constants,
        beta=beta,
        # directions the clipping shrinks are covered, and the far rows of the axes whose
        # spread came from rare values (a DP output) searched whatever the check says
        cover=loc.rare,
    )
    mean = np.where(deg, loc.center, c + s * mean_z)
    cov_hat = sym(cov_z * s[:, None] * s[None, :])
    cov_hat[deg, :] = 0.0
    cov_hat[:, deg] = 0.0
    if loc.degenerate_var is not None:  # never a zero variance: see Localisation
        cov_hat[deg, deg] = loc.degenerate_var[deg]
    return mean, cov_hat


def public_padding(n: int, k: int) -> np.ndarray:
    """n × k standard normal values from a fixed public seed: the stand-in for k degenerate
    (constant) axes in a CoinPress refinement, data-independent, so the refinement's plan,
    prior and ledger stay those of ordinary axes (its estimates for these columns are
    discarded)."""
    return np.random.default_rng(_PAD_SEED).standard_normal((n, k))


def _refinement_rho(accountant: Accountant, planned: float, ties: float) -> float:
    """The refinement's ρ: what the plan left it, less what the octave releases of wide and
    tied axes spent (``ties``), and no more than the accountant has left."""
    return min(planned - ties, accountant.remaining_zcdp())
