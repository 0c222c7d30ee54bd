"""Component estimation on a released partition, shared by sample-and-aggregate and KSSU19.

Kamath, Sheffet, Singhal and Ullman (NeurIPS 2019), the last step of Alg. 1, and the estimation
step of :mod:`.sample_aggregate`: each row is assigned to its nearest released centre (a DP
output), the part sizes are released with discrete Gaussian noise (L2 sensitivity √2), and one
CoinPress-style learner (:func:`~privgauss.gaussian.coinpress.coinpress_gaussian`, ρ_E-zCDP) runs
on a fixed-size subset of each part. **Neighbours:** replace one row (n public); a replaced row
changes at most two of the disjoint parts, so the runs are charged once as 2ρ_E.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from .. import sensitivity
from ..backends import as_rows
from ..exceptions import EstimationFailed
from ..gaussian.coinpress import gaussian_of_rows
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
]


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
        means[j], covs[j] = gaussian_of_rows(
            as_rows(rows, min_rows=2),
            rho_e,
            center=prior.center,
            radius=prior.radius,
            cov_bounds=bounds,
            release=Release.of(scratch, noise, f"{step}/part-{j + 1}"),
            constants=constants,
            beta=beta,
            prior_floor=False,  # derived bounds: behaviour as before the prior floor
        )
    return weights, means, covs, noisy
