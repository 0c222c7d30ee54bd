"""Accuracy metrics for Gaussian and Gaussian-mixture estimates.

* parameter errors: :func:`mean_error`, :func:`mahalanobis_mean_error`, :func:`covariance_error`;
* total variation: exact in 1-D (:func:`tv_distance_1d`), Monte Carlo with a confidence interval
  otherwise (:func:`tv_distance`, :func:`mixture_tv_distance`);
* closed-form Hellinger distance and the TV upper bound it implies (:func:`hellinger_distance`,
  :func:`component_distance`);
* matching of estimated to true mixture components (:func:`match_components`) and a summary
  of per-component errors (:func:`mixture_error`);
* the non-private reference estimate :func:`nonprivate_gaussian` (sample mean and covariance);
* the log densities of :mod:`privgauss.densities` (:func:`gaussian_logpdf`,
  :func:`background_logpdf` and their factored forms), re-exported here.

These functions evaluate estimates against known ground truth (simulations); their outputs are
not differentially private.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy.linalg import solve_triangular
from scipy.optimize import linear_sum_assignment
from scipy.special import logsumexp, ndtr, ndtri

from .densities import (
    DensityFactor,
    as_cov,
    as_gaussian,
    as_mean,
    background_factor,
    background_logpdf,
    background_matrix,
    background_scale,
    chol_logdet,
    chol_logpdf,
    factored_logpdf,
    gaussian_factor,
    gaussian_logpdf,
)
from .linalg import cholesky_pd, whitened_sq_norms
from .validation import check_positive_int, check_probability

__all__ = [
    "DensityFactor",
    "MixtureError",
    "TVEstimate",
    "component_distance",
    "covariance_error",
    "factored_logpdf",
    "gaussian_factor",
    "background_factor",
    "background_logpdf",
    "background_matrix",
    "background_scale",
    "gaussian_logpdf",
    "hellinger_distance",
    "mahalanobis_mean_error",
    "match_components",
    "mean_error",
    "mixture_error",
    "mixture_tv_distance",
    "nonprivate_gaussian",
    "tv_distance",
    "tv_distance_1d",
]


# --------------------------------------------------------------------------- helpers


def _rng(random_state: Any) -> np.random.Generator:
    return np.random.default_rng(random_state)


# --------------------------------------------------------------------------- parameter errors


def mean_error(mu_hat: Any, mu: Any) -> float:
    """Euclidean error ``||mu_hat - mu||_2``."""
    a, b = as_mean(mu_hat, "mu_hat"), as_mean(mu, "mu")
    if a.shape != b.shape:
        raise ValueError(f"shape mismatch: mu_hat {a.shape} vs mu {b.shape}")
    return float(np.linalg.norm(a - b))


def mahalanobis_mean_error(mu_hat: Any, mu: Any, cov: Any) -> float:
    """Error in the metric of the true covariance: ``||cov^{-1/2} (mu_hat - mu)||_2``."""
    a, b = as_mean(mu_hat, "mu_hat"), as_mean(mu, "mu")
    if a.shape != b.shape:
        raise ValueError(f"shape mismatch: mu_hat {a.shape} vs mu {b.shape}")
    L = cholesky_pd(as_cov(cov, b.shape[0]))
    return float(np.sqrt(whitened_sq_norms((a - b)[None, :], np.zeros_like(b), L)[0]))


def covariance_error(cov_hat: Any, cov: Any) -> float:
    """Relative Frobenius error ``||cov^{-1/2} cov_hat cov^{-1/2} - I||_F``.

    Computed as ``||L^{-1} cov_hat L^{-T} - I||_F`` with ``L`` the Cholesky factor of ``cov``;
    both matrices are symmetric with the same eigenvalues, so the norms coincide.
    """
    C = np.asarray(cov, dtype=np.float64)
    d = 1 if C.ndim == 0 else C.shape[0]
    C = as_cov(C, d, "cov")
    H = as_cov(cov_hat, d, "cov_hat")
    L = cholesky_pd(C)
    A = solve_triangular(L, H, lower=True, check_finite=False)
    M = solve_triangular(L, A.T, lower=True, check_finite=False)  # (L^{-1} H L^{-T})^T
    return float(np.linalg.norm(M - np.eye(d)))


def nonprivate_gaussian(X: Any) -> tuple[np.ndarray, np.ndarray]:
    """The **non-private** reference estimate of a Gaussian: the sample mean and the unbiased
    sample covariance (``np.mean``, ``np.cov``) of the rows of ``X`` (shape ``(n, d)``, n >= 2).

    This is what a private estimator approaches as its budget grows, for comparisons in
    experiments and tests. It spends no budget and carries no privacy guarantee: it is not a
    budget value (budgets are finite, DESIGN rule 12) and returns plain arrays, never a model
    that could be saved as if it were private.
    """
    A = np.asarray(X, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] < 2 or not np.all(np.isfinite(A)):
        raise ValueError("X must be a finite (n, d) array with n >= 2")
    return A.mean(axis=0), np.atleast_2d(np.cov(A, rowvar=False))


# --------------------------------------------------------------------------- total variation


@dataclass(frozen=True)
class TVEstimate:
    """A total-variation value with a confidence interval (``lower == upper`` when exact)."""

    estimate: float
    lower: float
    upper: float


def _interval_prob(a: float, b: float) -> float:
    """P(a < Z < b) for a standard normal Z, accurate in both tails."""
    if b <= 0.0:
        return float(ndtr(b) - ndtr(a))
    if a >= 0.0:
        return float(ndtr(-a) - ndtr(-b))
    return float(1.0 - ndtr(a) - ndtr(-b))


def tv_distance_1d(mu1: float, sigma1: float, mu2: float, sigma2: float) -> float:
    """Exact total variation distance between ``N(mu1, sigma1^2)`` and ``N(mu2, sigma2^2)``.

    ``sigma`` are standard deviations. Equal variances give ``2 Phi(|mu1 - mu2| / (2 sigma)) - 1``;
    otherwise the densities cross at two points (roots of a quadratic, solved stably) and the TV
    is the difference of the two distributions' masses between them.
    """
    vals = [float(v) for v in (mu1, sigma1, mu2, sigma2)]
    if not all(math.isfinite(v) for v in vals):
        raise ValueError("means and standard deviations must be finite")
    mu1, sigma1, mu2, sigma2 = vals
    if sigma1 <= 0.0 or sigma2 <= 0.0:
        raise ValueError("standard deviations must be > 0")
    if sigma1 > sigma2:  # TV is symmetric: let the first distribution be the narrower one
        mu1, sigma1, mu2, sigma2 = mu2, sigma2, mu1, sigma1
    delta = (mu2 - mu1) / sigma1  # second distribution in units of the first: N(delta, r^2)
    if sigma1 == sigma2:
        return float(math.erf(abs(delta) / (2.0 * math.sqrt(2.0))))
    rm1 = (sigma2 - sigma1) / sigma1  # r - 1 > 0, without cancellation
    r = 1.0 + rm1
    log_r = math.log1p(rm1)
    # Densities cross where a z^2 + 2 delta z + c = 0 with a = r^2 - 1 > 0 and
    # c = -(delta^2 + 2 r^2 log r) < 0; half the square root of the discriminant is s.
    a = rm1 * (r + 1.0)
    c = -(delta * delta + 2.0 * r * r * log_r)
    s = r * math.sqrt(delta * delta + 2.0 * a * log_r)
    q = -(delta + math.copysign(s, delta))  # stable quadratic formula, q != 0
    z1, z2 = sorted((q / a, c / q))
    # The narrower density is the larger one between the crossing points.
    p_mass = _interval_prob(z1, z2)
    q_mass = _interval_prob((z1 - delta) / r, (z2 - delta) / r)
    return float(min(1.0, max(0.0, p_mass - q_mass)))


def _mc_interval(total: float, total_sq: float, n: int, confidence: float) -> TVEstimate:
    est = total / n
    var = max(0.0, (total_sq - n * est * est) / max(n - 1, 1))
    alpha = 1.0 - confidence
    hw_normal = float(ndtri(1.0 - alpha / 2.0)) * math.sqrt(var / n)
    hw_hoeffding = math.sqrt(math.log(2.0 / alpha) / (2.0 * n))  # values lie in [0, 1]
    hw = min(hw_normal, hw_hoeffding)
    est = min(1.0, max(0.0, est))
    return TVEstimate(est, max(0.0, est - hw), min(1.0, est + hw))


def _tv_terms(log_p: np.ndarray, log_q: np.ndarray) -> np.ndarray:
    # max(0, 1 - q/p) = -expm1(min(0, log q - log p)), accurate when q/p is near 1.
    return -np.expm1(np.minimum(log_q - log_p, 0.0))


def tv_distance(
    mean1: Any,
    cov1: Any,
    mean2: Any,
    cov2: Any,
    *,
    n_samples: int = 100_000,
    random_state: Any = None,
    confidence: float = 0.95,
) -> TVEstimate:
    """Total variation distance between two Gaussians.

    In 1-D the exact value is returned (``lower == upper == estimate``). Otherwise a Monte
    Carlo estimate of ``E_{x~P}[max(0, 1 - q(x)/p(x))]`` with a two-sided ``confidence``
    interval: the narrower of the normal-approximation and Hoeffding half-widths.
    """
    m1, C1 = as_gaussian(mean1, cov1, "1")
    m2, C2 = as_gaussian(mean2, cov2, "2")
    if m1.shape != m2.shape:
        raise ValueError(f"dimension mismatch: {m1.shape[0]} vs {m2.shape[0]}")
    n = check_positive_int(n_samples, "n_samples", minimum=2)
    confidence = check_probability(confidence, "confidence")
    d = m1.shape[0]
    L1, L2 = cholesky_pd(C1, name="cov1"), cholesky_pd(C2, name="cov2")
    if np.array_equal(m1, m2) and np.array_equal(C1, C2):
        return TVEstimate(0.0, 0.0, 0.0)
    if d == 1:
        tv = tv_distance_1d(m1[0], L1[0, 0], m2[0], L2[0, 0])
        return TVEstimate(tv, tv, tv)
    half_logdet_diff = 0.5 * (chol_logdet(L1) - chol_logdet(L2))
    rng = _rng(random_state)
    total = total_sq = 0.0
    step = max(1, (1 << 20) // d)
    for a in range(0, n, step):
        Z = rng.standard_normal((min(step, n - a), d))
        X = m1 + Z @ L1.T
        # log q - log p, the 2*pi terms cancel.
        log_ratio = half_logdet_diff - 0.5 * (
            whitened_sq_norms(X, m2, L2) - np.einsum("ij,ij->i", Z, Z)
        )
        f = _tv_terms(np.zeros_like(log_ratio), log_ratio)
        total += float(f.sum())
        total_sq += float(f @ f)
    return _mc_interval(total, total_sq, n, confidence)


def _as_mixture(
    weights: Any, means: Any, covs: Any, tag: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    M = np.asarray(means, dtype=np.float64)
    if M.ndim == 1:  # k one-dimensional components
        M = M[:, None]
    k = w.shape[0]
    if M.ndim != 2 or M.shape[0] != k:
        raise ValueError(f"means{tag} must have shape ({k}, d), got {M.shape}")
    d = M.shape[1]
    C = np.asarray(covs, dtype=np.float64)
    if C.ndim == 1 and d == 1:
        C = C[:, None, None]
    if C.shape != (k, d, d):
        raise ValueError(f"covs{tag} must have shape ({k}, {d}, {d}), got {C.shape}")
    if not np.isfinite(w).all() or (w < 0).any() or abs(w.sum() - 1.0) > 1e-6:
        raise ValueError(f"weights{tag} must be non-negative and sum to 1")
    if not np.isfinite(M).all():
        raise ValueError(f"means{tag} contain NaN or infinite values")
    return w / w.sum(), M, C


def _mixture_logpdf(X: np.ndarray, w: np.ndarray, M: np.ndarray, chols: list) -> np.ndarray:
    with np.errstate(divide="ignore"):
        logw = np.log(w)
    cols = [
        chol_logpdf(X, M[j], L, chol_logdet(L)) + logw[j]
        if w[j] > 0
        else np.full(len(X), -np.inf)
        for j, L in enumerate(chols)
    ]
    return logsumexp(np.stack(cols, axis=1), axis=1)


def mixture_tv_distance(
    weights1: Any,
    means1: Any,
    covs1: Any,
    weights2: Any,
    means2: Any,
    covs2: Any,
    *,
    n_samples: int = 100_000,
    random_state: Any = None,
    confidence: float = 0.95,
) -> TVEstimate:
    """Monte Carlo total variation distance between two Gaussian mixtures.

    Samples from the first mixture and averages ``max(0, 1 - q(x)/p(x))``; mixture log
    densities use log-sum-exp over components. The interval is as in :func:`tv_distance`.
    """
    w1, M1, C1 = _as_mixture(weights1, means1, covs1, "1")
    w2, M2, C2 = _as_mixture(weights2, means2, covs2, "2")
    if M1.shape[1] != M2.shape[1]:
        raise ValueError(f"dimension mismatch: {M1.shape[1]} vs {M2.shape[1]}")
    n = check_positive_int(n_samples, "n_samples", minimum=2)
    confidence = check_probability(confidence, "confidence")
    chols1 = [cholesky_pd(C, name="covs1[j]") for C in C1]
    chols2 = [cholesky_pd(C, name="covs2[j]") for C in C2]
    rng = _rng(random_state)
    counts = rng.multinomial(n, w1)
    d = M1.shape[1]
    X = np.concatenate(
        [M1[j] + rng.standard_normal((c, d)) @ chols1[j].T for j, c in enumerate(counts) if c > 0]
    )
    f = _tv_terms(_mixture_logpdf(X, w1, M1, chols1), _mixture_logpdf(X, w2, M2, chols2))
    return _mc_interval(float(f.sum()), float(f @ f), n, confidence)


# --------------------------------------------------------------------------- Hellinger


def _log_bhattacharyya(m1: np.ndarray, C1: np.ndarray, m2: np.ndarray, C2: np.ndarray) -> float:
    """log of the Bhattacharyya coefficient BC = int sqrt(p q) of two Gaussians (<= 0)."""
    L1 = cholesky_pd(C1, name="cov1")
    L2 = cholesky_pd(C2, name="cov2")
    Lm = cholesky_pd((C1 + C2) / 2.0, name="average covariance")
    dm = (m1 - m2)[None, :]
    maha = float(whitened_sq_norms(dm, np.zeros_like(m1), Lm)[0])
    log_bc = 0.25 * (chol_logdet(L1) + chol_logdet(L2)) - 0.5 * chol_logdet(Lm) - maha / 8.0
    return min(0.0, log_bc)


def hellinger_distance(mean1: Any, cov1: Any, mean2: Any, cov2: Any) -> float:
    """Hellinger distance ``H = sqrt(1 - BC)`` between two Gaussians (closed form, in [0, 1]).

    With this normalisation ``H^2 <= TV <= H sqrt(2 - H^2) <= sqrt(2) H``.
    """
    m1, C1 = as_gaussian(mean1, cov1, "1")
    m2, C2 = as_gaussian(mean2, cov2, "2")
    if m1.shape != m2.shape:
        raise ValueError(f"dimension mismatch: {m1.shape[0]} vs {m2.shape[0]}")
    return math.sqrt(min(1.0, -math.expm1(_log_bhattacharyya(m1, C1, m2, C2))))


def component_distance(mean1: Any, cov1: Any, mean2: Any, cov2: Any) -> float:
    """Closed-form upper bound on the TV distance between two Gaussians.

    Returns ``sqrt(1 - BC^2) = H sqrt(2 - H^2)`` (``H`` the Hellinger distance), which is the
    Le Cam bound, at most ``sqrt(2) H`` and at most 1.
    """
    m1, C1 = as_gaussian(mean1, cov1, "1")
    m2, C2 = as_gaussian(mean2, cov2, "2")
    if m1.shape != m2.shape:
        raise ValueError(f"dimension mismatch: {m1.shape[0]} vs {m2.shape[0]}")
    return math.sqrt(min(1.0, -math.expm1(2.0 * _log_bhattacharyya(m1, C1, m2, C2))))


# --------------------------------------------------------------------------- matching


def _cost_matrix(
    means_hat: np.ndarray,
    means_true: np.ndarray,
    covs_hat: np.ndarray | None,
    covs_true: np.ndarray | None,
) -> np.ndarray:
    """Cost of matching true component j (row) to estimated component i (column)."""
    if covs_hat is None:
        diff = means_true[:, None, :] - means_hat[None, :, :]
        return np.sqrt(np.einsum("jid,jid->ji", diff, diff))
    assert covs_true is not None  # match_components requires both or neither
    cost = np.empty((means_true.shape[0], means_hat.shape[0]))
    for j in range(cost.shape[0]):
        for i in range(cost.shape[1]):
            cost[j, i] = component_distance(means_true[j], covs_true[j], means_hat[i], covs_hat[i])
    return cost


def _assign(cost: np.ndarray, method: str) -> np.ndarray:
    k_true, k_hat = cost.shape
    if method == "hungarian":
        rows, cols = linear_sum_assignment(cost)
    elif method == "minmax":
        # Bottleneck assignment: smallest threshold t such that a full matching uses only
        # costs <= t (binary search, feasibility via an assignment on 0/1 costs); ties are
        # then broken by the smallest total cost among matchings under the threshold.
        values = np.unique(cost)
        lo, hi = 0, values.size - 1
        while lo < hi:
            mid = (lo + hi) // 2
            blocked = (cost > values[mid]).astype(np.float64)
            r, c = linear_sum_assignment(blocked)
            if blocked[r, c].sum() == 0:
                hi = mid
            else:
                lo = mid + 1
        restricted = np.where(cost <= values[lo], cost, np.inf)
        rows, cols = linear_sum_assignment(restricted)
    else:
        raise ValueError(f"method must be 'hungarian' or 'minmax', got {method!r}")
    perm = np.full(k_true, -1, dtype=np.intp)
    perm[rows] = cols
    return perm


def match_components(
    means_hat: Any,
    means_true: Any,
    covs_hat: Any = None,
    covs_true: Any = None,
    *,
    method: Literal["hungarian", "minmax"] = "hungarian",
) -> np.ndarray:
    """Match estimated mixture components to true ones.

    Returns ``perm`` of length ``k_true``: ``perm[j]`` is the index of the estimated component
    matched to true component ``j``, or ``-1`` if there are fewer estimated components
    (so ``means_hat[perm]`` lines up with ``means_true`` when all are matched).

    With covariances the cost is :func:`component_distance` (a closed-form TV upper bound);
    without, the Euclidean distance between means. ``"hungarian"`` minimises the total cost,
    ``"minmax"`` the largest matched cost (bottleneck assignment).
    """
    Mh = np.asarray(means_hat, dtype=np.float64)
    Mt = np.asarray(means_true, dtype=np.float64)
    Mh = Mh[:, None] if Mh.ndim == 1 else Mh
    Mt = Mt[:, None] if Mt.ndim == 1 else Mt
    if Mh.ndim != 2 or Mt.ndim != 2 or Mh.shape[1] != Mt.shape[1]:
        raise ValueError(f"means must be (k, d) arrays of equal d, got {Mh.shape} and {Mt.shape}")
    if (covs_hat is None) != (covs_true is None):
        raise ValueError("give both covs_hat and covs_true, or neither")
    if covs_hat is not None:
        d = Mt.shape[1]
        covs_hat = np.asarray(covs_hat, dtype=np.float64).reshape(Mh.shape[0], d, d)
        covs_true = np.asarray(covs_true, dtype=np.float64).reshape(Mt.shape[0], d, d)
    if method not in ("hungarian", "minmax"):
        raise ValueError(f"method must be 'hungarian' or 'minmax', got {method!r}")
    return _assign(_cost_matrix(Mh, Mt, covs_hat, covs_true), method)


@dataclass(frozen=True, eq=False)
class MixtureError:
    """Per-component accuracy of a mixture estimate after matching to the truth.

    Arrays are indexed by true component. Unmatched true components (the estimate has fewer
    components) get ``permutation = -1``, TV 1 and infinite mean/covariance errors.
    ``mean_errors`` are Mahalanobis errors in the true covariance's metric and
    ``covariance_errors`` are :func:`covariance_error`. ``component_tv`` holds closed-form TV
    upper bounds (:func:`component_distance`); ``component_tv_mc`` Monte Carlo TV estimates,
    only when requested.
    """

    permutation: np.ndarray
    weight_error: float
    component_tv: np.ndarray
    max_component_tv: float
    mean_errors: np.ndarray
    covariance_errors: np.ndarray
    component_tv_mc: np.ndarray | None = None


def mixture_error(
    weights_hat: Any,
    means_hat: Any,
    covs_hat: Any,
    weights: Any,
    means: Any,
    covs: Any,
    *,
    method: Literal["hungarian", "minmax"] = "hungarian",
    mc: bool = False,
    n_samples: int = 100_000,
    random_state: Any = None,
) -> MixtureError:
    """Match an estimated mixture to the true one and report per-component errors.

    ``weight_error`` is the largest absolute weight difference over matched pairs, counting
    the full weight of any unmatched component (true or estimated). With ``mc=True`` also
    Monte Carlo TV estimates per matched pair (``n_samples`` each).
    """
    wh, Mh, Ch = _as_mixture(weights_hat, means_hat, covs_hat, "_hat")
    w, M, C = _as_mixture(weights, means, covs, "")
    if Mh.shape[1] != M.shape[1]:
        raise ValueError(f"dimension mismatch: {Mh.shape[1]} vs {M.shape[1]}")
    perm = match_components(Mh, M, Ch, C, method=method)
    k = w.shape[0]
    tv = np.ones(k)
    mean_errs = np.full(k, np.inf)
    cov_errs = np.full(k, np.inf)
    tv_mc = np.ones(k) if mc else None
    rng = _rng(random_state)
    w_errs = [float(x) for x in w[perm < 0]]
    for j in range(k):
        i = int(perm[j])
        if i < 0:
            continue
        tv[j] = component_distance(M[j], C[j], Mh[i], Ch[i])
        mean_errs[j] = mahalanobis_mean_error(Mh[i], M[j], C[j])
        cov_errs[j] = covariance_error(Ch[i], C[j])
        w_errs.append(abs(float(wh[i] - w[j])))
        if tv_mc is not None:
            tv_mc[j] = tv_distance(
                M[j], C[j], Mh[i], Ch[i], n_samples=n_samples, random_state=rng
            ).estimate
    matched = set(int(i) for i in perm if i >= 0)
    w_errs.extend(float(wh[i]) for i in range(wh.shape[0]) if i not in matched)
    return MixtureError(
        permutation=perm,
        weight_error=max(w_errs) if w_errs else 0.0,
        component_tv=tv,
        max_component_tv=float(tv.max()),
        mean_errors=mean_errs,
        covariance_errors=cov_errs,
        component_tv_mc=tv_mc,
    )
