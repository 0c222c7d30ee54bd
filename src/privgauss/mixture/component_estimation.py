"""Component estimation on a released partition, shared by sample-and-aggregate and KSSU19.

Kamath, Sheffet, Singhal and Ullman (NeurIPS 2019), the last step of Alg. 1, and the estimation
step of :mod:`.sample_aggregate`: each row is assigned to its nearest released centre (a DP
output), the part sizes are released with discrete Gaussian noise (L2 sensitivity √2), and one
CoinPress-style learner (:func:`~privgauss.gaussian.coinpress.coinpress_gaussian`, ρ_E-zCDP) runs
on a fixed-size subset of each part. **Neighbours:** replace one row (n public); a replaced row
changes at most two of the disjoint parts, so the runs are charged once as 2ρ_E.

**Practical part learner** (:func:`ridged_part`, ``constants="practical"``; "theory" runs
CoinPress as published). A part's prior lower bound lo = R²/cond_range is a guess tied to its
radius, i.e. to its largest scale: it floored every smaller direction (a column in units 1e-6
beside one in 1e6 kept a variance 1e11 times np.cov's at every budget; session 49, R3). So

1. lo falls with the budget (:func:`widened_bounds`: by factors of 100, down to
   hi/``WIDEST_RANGE``, while the planner's predicted error stays within ``RANGE_SLACK`` of the
   given range's — unchanged while the noise matters, open as ρ → ∞), and a widened run is
   planned at β·``WIDE_BETA`` (its longer chain has more steps that can lose the rows);
2. CoinPress sees the part's rows in its own frame (centred at the released centre) plus an
   independent ±η on every entry, η² = ``JITTER_SHARE``·lo (:mod:`~privgauss.gaussian.ridge`,
   as the histogram route's refinement): the covariance it estimates is Σ + η²·I, whose
   smallest eigenvalue is at least η² whatever the rows — a constant or duplicated column no
   longer lets the whitening chain diverge at a wide range (session 49: kssu const 397
   nat/row); η²·I is removed from the release and its spectrum floored at
   ``RIDGE_KEEP``·η² (post-processing), a ridge that vanishes as lo does.

Privacy: the jitter's signs come from a generator spawned from the fit's noise source, drawn
whatever the rows are — a data-independent map of each record — and the new bounds are
functions of public quantities (a released size, d, ρ, the prior, β); the runs' clipping,
sensitivities and budget are those of the published learner.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from .. import sensitivity
from ..backends import as_rows
from ..exceptions import EstimationFailed
from ..gaussian.coinpress import gaussian_of_rows
from ..gaussian.coinpress.estimate import planned_covariance_error
from ..gaussian.ridge import JITTER_SHARE, ridged_gaussian
from ..mechanisms import Release, gaussian_sigma_zcdp, private_count
from ..privacy import (
    ZCDP,
    Accountant,
)

__all__ = [
    "ComponentPrior",
    "PartLearner",
    "Partition",
    "estimate_components",
    "fixed_size_subset",
    "nearest_center",
    "ridged_part",
    "widened_bounds",
]

#: :func:`widened_bounds`: the widest prior range it tries (eigenvalue ratio hi/lo). Two limits
#: meet here. A constant column leaves the chain a direction of variance η² = JITTER_SHARE·lo,
#: so it whitens a condition up to hi/(JITTER_SHARE·lo), and past ~1e29 the whitened rows lose
#: that direction to rounding: a part with a constant column and a released centre 1 off
#: (12 tables × ρ = 1e4, 1e6; ``test_part_ridge.py``'s parts) had its other variances within
#: 0.04 % / 0.24 % / 1.8 % (one fit 18 %) of np.var at 1e26 / 1e27 / 1e28 (main: up to 136 %).
#: And the jitter's cross terms with a small column (≈ 2η·sd/√n, not removable) must stay
#: below its variance: R3's 1e-6 column beside a 1e6 one (kssu, ε = 1e8 / 1e12) came within
#: 1.1 % / 0.9 % of np.var at 1e26, 0.13 % / 0.21 % at 1e27, 0.08 % at 1e28 and 1e32.
WIDEST_RANGE = 1e27
#: and the planned error it may cost: at most this fraction above the given range's.
RANGE_SLACK = 0.01
#: a widened run's failure probability, as a fraction of the caller's β
WIDE_BETA = 1e-3


# ----------------------------------------------------------------------------------------------
# Shared by sample-and-aggregate and KSSU19: estimation on a released partition
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ComponentPrior:
    """Released (or public) prior of one part: ‖μ − center‖ ≤ radius, lo·I ⪯ Σ ⪯ hi·I."""

    center: np.ndarray
    radius: float
    cov_bounds: tuple[float, float]


@dataclass(frozen=True)
class Partition:
    """A released partition of the rows: each row's part (``labels``, 0..K−1, or another value
    for a row in no part) and one public random key per row index (``keys``: a replaced row
    keeps its key), which picks each part's fixed-size subset (:func:`fixed_size_subset`)."""

    labels: np.ndarray
    keys: np.ndarray


def nearest_center(X: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """Index of the nearest centre of each row (Euclidean, ties to the lowest index): a per-row
    map of released values."""
    X = np.asarray(X, dtype=np.float64)
    C = np.asarray(centers, dtype=np.float64)
    out = np.empty(X.shape[0], dtype=np.int64)
    step = max(1, (1 << 22) // max(C.shape[0] * X.shape[1], 1))
    for a in range(0, X.shape[0], step):
        diff = X[a : a + step, None, :] - C[None, :, :]
        out[a : a + step] = np.argmin(np.einsum("ijd,ijd->ij", diff, diff), axis=1)
    return out


def fixed_size_subset(
    data: np.ndarray,
    members: np.ndarray,
    keys: np.ndarray,
    m: int,
    pad: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """The m members with the smallest public keys, padded with copies of the released point
    ``pad`` when fewer than m, in a public uniformly random order (m × d, a new array).

    Privacy: ``keys`` is one public random number per row index (a replaced row keeps its key),
    and m is public. Adding or removing one member changes the selected multiset by at most one
    replacement (the member enters/leaves; the (m+1)-th smallest key or a pad leaves/enters), and
    replacing a member in place changes one element. The public shuffle makes the output a
    mixture, over orders, of inputs that differ in one position, so any mechanism that is DP
    under replace-one with n = m public stays DP for the part under add/remove.
    """
    members = np.asarray(members, dtype=np.int64)
    if members.size > m:
        chosen = members[np.argpartition(keys[members], m - 1)[:m]]
    else:
        chosen = members
    rows = data[chosen]
    if rows.shape[0] < m:
        rows = np.vstack([rows, np.repeat(pad[None, :], m - rows.shape[0], axis=0)])
    return rows[rng.permutation(m)]


#: ``(part index, fixed-size rows, rho, accountant) -> (mean, covariance)``
PartLearner = Callable[[int, np.ndarray, float, Accountant], tuple[np.ndarray, np.ndarray]]


def widened_bounds(m: int, d: int, rho: float, radius: float, bounds: tuple[float, float],
                   beta: float) -> tuple[tuple[float, float], float]:
    """The covariance bounds and failure probability a part's practical CoinPress run gets:
    ``bounds`` = (lo, hi) with lo lowered by factors of 100 (down to hi/``WIDEST_RANGE``) as
    long as the planned covariance error
    (:func:`~privgauss.gaussian.coinpress.estimate.planned_covariance_error`, the route the
    run takes) at β·``WIDE_BETA`` stays within ``RANGE_SLACK`` of the error at ``bounds`` and
    β; when lo is lowered the run is planned at β·``WIDE_BETA``, else at β. A wider range
    costs CoinPress steps, which cost accuracy only while the noise matters: at the per-part
    ρ of ε = 1 / ρ = 0.5 fits the bounds stay as given, and as ρ → ∞ the planned error is the
    sampling error at any range and lo falls to hi/``WIDEST_RANGE`` (DESIGN.md rule 15, up to
    float64's resolution). Each step of the longer chain is a chance to lose the rows (its
    localising means bound their noise at β/t each: at β = 0.05, range 1e32, 2 of 100 noise
    draws on one part of the edge sweep's dups cell did, the covariance off by 1e16; 0 of 100
    at 1e-3·β, same median error), hence the smaller β. Public: a function of m (a released
    size), d, ρ, the prior and β."""
    lo, hi = bounds
    base = planned_covariance_error(m, d, rho, radius, (lo, hi), beta)
    if not math.isfinite(base):
        return bounds, beta
    limit = (1.0 + RANGE_SLACK) * base
    small = beta * WIDE_BETA
    best = lo
    while True:
        trial = max(best / 100.0, hi / WIDEST_RANGE)
        if not trial < best:  # at the widest range (hi/(hi/W) may round below W)
            break
        if planned_covariance_error(m, d, rho, radius, (trial, hi), small) > limit:
            break
        best = trial
    return ((best, hi), small) if best < lo else (bounds, beta)


def ridged_part(rows: np.ndarray, rho: float, prior: ComponentPrior, release: Release, *,
                beta: float) -> tuple[np.ndarray, np.ndarray]:
    """The practical part learner: ρ-zCDP (replace-one, the m rows' number public) mean and
    covariance of ``rows`` (m × d, a fresh array of the caller's: written in place) inside
    ``prior``, charged to ``release``. The prior's bounds are widened with the budget
    (:func:`widened_bounds`); the rows, centred at the prior's centre (which keeps the jitter
    above their rounding), go to :func:`~privgauss.gaussian.ridge.ridged_gaussian` with η² =
    ``JITTER_SHARE``·lo and no chain check, so the guarantee is CoinPress's."""
    m, d = rows.shape
    (lo, hi), beta = widened_bounds(m, d, rho, prior.radius, prior.cov_bounds, beta)
    Z = np.subtract(rows, prior.center, out=rows)
    mean, cov = ridged_gaussian(
        Z, rho, JITTER_SHARE * lo, release=release, cov_bounds=(lo, hi), owned=True,
        center=np.zeros(d), radius=prior.radius, constants="practical", beta=beta)
    return prior.center + mean, cov


def _min_part_rows(d: int) -> int:
    return d + 2


def estimate_components(
    data: np.ndarray,
    partition: Partition,
    priors: Sequence[ComponentPrior],
    counts_budget: ZCDP,
    estimation_budget: ZCDP,
    *,
    beta: float,
    constants: str,
    release: Release,
    cov_bounds_of: Callable[[int, float], tuple[float, float]] | None = None,
    needed_n: int | None = None,
    part_learner: PartLearner | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Weights, means and covariances of the parts ``partition.labels`` = 0..K−1 of a released
    partition (K = len(priors); rows with another label, e.g. −1 for dropped rows, belong to no
    part), and the released counts; charged to ``release`` under its step.

    Releases (replace-one, n public): the K part sizes with discrete Gaussian noise of L2
    sensitivity √2 (``counts_budget``), then one CoinPress run per part on a fixed-size subset
    (:func:`fixed_size_subset`, size m_j = ⌊ñ_j − z·σ⌋ with z the (1 − β/2K) normal quantile),
    charged once as ``estimation_budget`` = 2ρ_E, each run getting ρ_E (a replaced row changes at
    most two parts). ``cov_bounds_of(j, weight_j)`` may replace a prior's covariance bounds from
    the released weight. ``part_learner(j, rows, rho_j, accountant)`` (a ρ_j-zCDP learner under
    replace-one with the rows' number public) replaces CoinPress when given. Raises
    EstimationFailed (budget spent) when a part is too small.
    """
    K = len(priors)
    n, d = data.shape
    l2 = sensitivity.histogram_l2()  # one row leaves a part and joins another
    labels = np.asarray(partition.labels, dtype=np.int64)
    keys, accountant, noise, step = partition.keys, release.accountant, release.noise, release.step
    counts = np.bincount(labels[(labels >= 0) & (labels < K)], minlength=K).astype(np.int64)
    noisy = private_count(
        counts,
        counts_budget,
        accountant=accountant,
        noise=noise,
        step=f"{step}/counts",
        sensitivity=l2,
    ).astype(np.float64)
    paid = accountant.spend(
        estimation_budget,
        step=f"{step}/estimate",
        mechanism="coinpress x parts",
        note=(
            f"{K} CoinPress runs on disjoint parts, each rho={estimation_budget.rho / 2:.6g}; "
            "a replaced row changes at most two parts: charged twice"
        ),
    )
    positive = np.maximum(noisy, 0.0)
    if not positive.sum() > 0:
        raise EstimationFailed(
            "every part has a non-positive noisy size", step=f"{step}/counts", needed_n=needed_n
        )
    weights = positive / positive.sum()
    sigma = gaussian_sigma_zcdp(l2, counts_budget.rho)
    z = float(norm.isf(beta / (2 * K)))
    sizes = np.floor(noisy - z * sigma).astype(np.int64)
    if (sizes < _min_part_rows(d)).any():
        raise EstimationFailed(
            f"a part's noisy size is below the {_min_part_rows(d)} rows its estimation needs",
            step=f"{step}/estimate",
            needed_n=needed_n,
        )
    rho_e = estimation_budget.rho / 2.0
    means = np.empty((K, d))
    covs = np.empty((K, d, d))
    for j, prior in enumerate(priors):
        members = np.flatnonzero(labels == j)
        rows = fixed_size_subset(data, members, keys, int(sizes[j]), prior.center, noise.rng)
        bounds = prior.cov_bounds if cov_bounds_of is None else cov_bounds_of(j, weights[j])
        # part j's run, paid by the 2ρ_E charge above: its entries are kept under that entry
        scratch = accountant.prepaid(paid, ZCDP(rho_e))
        if part_learner is not None:
            means[j], covs[j] = part_learner(j, rows, rho_e, scratch)
            continue
        part = Release.of(scratch, noise, f"{step}/part-{j + 1}")
        if constants == "practical":
            means[j], covs[j] = ridged_part(
                rows, rho_e, ComponentPrior(prior.center, prior.radius, bounds), part, beta=beta)
            continue
        means[j], covs[j] = gaussian_of_rows(
            as_rows(rows, min_rows=2),
            rho_e,
            center=prior.center,
            radius=prior.radius,
            cov_bounds=bounds,
            release=part,
            constants=constants,
            beta=beta,
            prior_floor=False,  # derived bounds: behaviour as before the prior floor
        )
    return weights, means, covs, noisy
