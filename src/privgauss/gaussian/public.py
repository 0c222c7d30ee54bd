"""Gaussian estimation helped by public data (Bie, Kamath, Singhal, NeurIPS 2022).

* :func:`public_mean` / :func:`public_mean_one_sample` — Thm 3.3: one public sample (or a few)
  turns an unknown location into a public ball of radius ≈ √d; then a bounded private mean.
* :func:`public_preconditioner` — Alg. 1 (Lemma 3.4; γ-shifted public data, Lemma 3.13), in
  :mod:`.public_preconditioner`, re-exported here.
* :func:`public_gaussian` — Alg. 2: precondition with d+1 (or more) public rows, run the bounded
  ρ-zCDP learner (:func:`~privgauss.gaussian.coinpress.coinpress_gaussian`) on the whitened
  private rows with the public range parameters (R, K), and map back. It refuses, before
  spending, a plan that cannot whiten the worst-case public range at this n
  (:func:`check_public_plan`) and reports a collapsed release as a failure
  (:func:`check_public_collapse`); :class:`~privgauss.estimators.PrivateGaussian` uses both.

Privacy is with respect to the private rows, for **every** public dataset (Def. 2.17): the
public rows only choose a per-record affine map and the range parameters, so the guarantee is
that of the inner learner — ρ-zCDP under replace-one neighbours, n public — however bad,
duplicated or far away the public rows are. Only accuracy depends on them. Invalid public
input (too few rows, wrong dimension, NaN, a singular covariance) is refused before any budget
is spent.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.stats import chi2

from ..backends import as_rows, public_rows
from ..clipped_stats import Rows, transform_rows
from ..exceptions import EstimationFailed, InvalidDataError
from ..linalg import inv_sqrtm_psd, sqrtm_psd, sym
from ..mechanisms import Release
from ..privacy import ZCDP
from ..privacy import check_accountant as _check_accountant
from ..privacy import check_rho as _check_rho
from ..privacy import reserve_rho as _reserve
from .clip_mean import clip_mean
from .coinpress import chi_tail_bound, covariance_schedule, mean_schedule
from .coinpress.estimate import GaussianPrior
from .coinpress.estimate import run_gaussian as _gaussian
from .coinpress.plan import practical_plan as _practical_plan
from .coinpress.schedule import check_beta as _check_beta
from .coinpress.schedule import check_constants as _check_constants
from .coinpress.steps import run_mean as _run_mean
from .coinpress.steps import without_noise_floor
from .public_frame import clean_rows
from .public_preconditioner import (
    Preconditioner,
    check_gamma,
    public_preconditioner,
    range_constants,
)
from .ridge import RIDGE_KEEP, jitter_rows, unjitter

__all__ = [
    "Preconditioner",
    "check_public_collapse",
    "public_jitter",
    "check_public_plan",
    "public_gaussian",
    "public_mean",
    "public_mean_one_sample",
    "public_noise_ratio",
    "public_preconditioner",
    "public_predicted_error",
    "public_resolves",
]

# Practical public-data Gaussian on large data (n·d ≥ 2^20 values): the covariance planner takes
# the fewest steps whose predicted error is within 1 % of its best (each step is a pass over the
# data; the worst-case K of the public preconditioner otherwise asks for many near-useless
# coarse steps). Smaller data keep the most accurate plan: there a pass costs next to nothing.
_FEWER_STEPS_TOLERANCE = 0.01
_FEWER_STEPS_MIN_VALUES = 1 << 20
# Predicted relative covariance error ‖Σ̂ − Σ‖_F/‖Σ‖_F (whitened frame) of a public-data fit
# past which the plan itself says the chain cannot whiten the public range K at this n (and
# past twice what a perfect preconditioner would leave): refused before spending. The model is
# pessimistic for small ℓ (d = 20, n = 2000, 21 public rows: predicted 14.7, measured 0.33), so
# only hopeless plans are refused (ρ = 1, d+1 public rows: d = 100, n = 5000 predicts 1.4e4 and
# erred by 9e8; d = 50 with constants="theory" predicts 125 at n = 20000 and erred by 195).
_PUBLIC_MAX_ERROR = 20.0
# ... and, from d = _NOISE_RULE_MIN_D on, a plan whose last covariance step's noise (spectral
# norm ≈ 2σ√d) exceeds this share of the smallest eigenvalue ℓ it must resolve
# (public_noise_ratio). Measured with d+1 public rows, ρ = 1: d = 100 collapsed at ratios 0.62–3
# (n = 20000–24000), d = 60 returned error 0.98 at 3.1, d = 50 errors 3–8× np.cov's at 2.1–152;
# but d = 30 and 40 gave fits 3.5× np.cov's at ratios 4 and 2, and d ≤ 20 no failure up to 120
# (the 2σ√d edge of the noise spectrum is a large-d law) — so the rule stops below d = 50.
_PUBLIC_MAX_NOISE_RATIO = 0.5
_NOISE_RULE_MIN_D = 50
PUBLIC_RANGE_FACTOR = 2.0  # a predicted error this many times the ideal one is a range problem
PUBLIC_TARGET_ERROR = 0.5  # the suggested n / public rows predict at most this
# The whitened covariance Σ_Y of Alg. 2 satisfies Σ_Y ⪰ I (w.p. 1 − β/2 over the public rows); a
# released Σ̂_Y with an eigenvalue below this is a collapsed chain (d = 100, n = 20000: the
# estimate shrank to ~1e-4·Σ), reported as EstimationFailed. Public rows several times wider
# than the private ones also land here (the truth itself is below I in their frame): the
# message then suggests gamma=, which widens the frame. (0.01 let a collapsed d = 60 fit with
# error 0.98 through silently.)
_PUBLIC_COLLAPSE = 0.1
# ... and with the jitter (practical route), a release whose *largest* eigenvalue in the frame
# is below this: the frame is wider than the private rows in every direction (public rows from
# a wider population: 8x wider rows gave covariance errors 0.12-0.19 where the bound-free route
# gives 0.03), while Gaussian public rows give Σ_Y ⪰ I in every direction w.p. 1 − β/2. A few
# directions below I are columns whose public spread comes from a few rows (a count with 99 %
# zeros, a rare flag), which the chain resolves below I: not a collapse.
_PUBLIC_WIDER = 0.5
# a plan whose last covariance step's noise ratio (public_noise_ratio) is below this resolves
# the frame's lower bound: a release below it is then data, not noise (check_public_collapse)
_PUBLIC_RESOLVED = 1.0
_GROWTH_STEPS = 24  # suggestions search n·2^k, m·2^k for k ≤ this
# Variance of the ±jitter added to every whitened private row in the practical route: the
# chain then sees Σ_Y + 0.3·I at small n·√ρ, so real columns whose whitening chain collapsed in
# the public frame (randhie, 1 % public rows: a direction released at 0.017 where np.cov has 2.5
# and the histogram route 4.2) stay above its floor. Measured at ε = 1, Gaussian d = 10,
# n = 20000, seeds 0-3: covariance error 0.100 -> 0.104 with 11 public rows, 0.104 -> 0.122
# with 200; d = 5, n = 5000, 6 public rows: 0.306 -> 0.188. 0.1 left randhie's chain collapsed
# (2 of 2 seeds).
_PUBLIC_JITTER = 0.3
# ... up to n·√ρ = this, then shrinking as 1/(n√ρ) — as the chain's noise does — so that it
# vanishes with the noise (DESIGN.md rule 15; randhie at ε = 1: n·√ρ = 2,460)
_PUBLIC_JITTER_NOISE = 5000.0


# ----------------------------------------------------------------------------------------------
# Mean with known covariance
# ----------------------------------------------------------------------------------------------


def _check_public_rows(X_pub: Any, d: int, min_rows: int) -> np.ndarray:
    return public_rows(X_pub, min_rows=min_rows, n_features=d)


def _known_cov_maps(cov: Any, d: int) -> tuple[np.ndarray, np.ndarray] | None:
    if cov is None:
        return None
    S = np.asarray(cov, dtype=np.float64)
    if S.shape != (d, d):
        raise InvalidDataError(f"cov must have shape ({d}, {d}), got {S.shape}")
    if not np.isfinite(S).all():
        raise InvalidDataError("cov contains NaN or infinite values")
    return inv_sqrtm_psd(S), sqrtm_psd(S)


def public_mean(
    X: Any,
    X_pub: Any,
    rho: float,
    *,
    release: Release,
    cov: Any = None,
    beta: float = 0.01,
    constants: str = "practical",
) -> np.ndarray:
    """ρ-zCDP mean of private rows ~ N(μ, Σ) with Σ known (identity by default), using m ≥ 1
    public rows from the same distribution and no prior bound (Bie–Kamath–Singhal Thm 3.3).

    Whiten with Σ^{-1/2} (public), centre at the public mean x̄ of the m distinct public rows
    free of gross errors (:func:`.public_frame.clean_rows`; ‖μ − x̄‖ ≤ R_pub/√m w.p.
    1 − β/2), estimate the mean of the shifted private rows inside that ball, shift back and
    un-whiten. ρ-zCDP for every public dataset under replace-one neighbours (n public): the
    shift and R_pub are public, the inner estimator is ρ-zCDP.

    ``constants``: ``"practical"`` — R_pub the exact χ_d quantile at β/2, then
    :func:`coinpress_mean` (planned steps, failure β/2); ``"theory"`` — the paper's estimator:
    R_pub = γ(d, β/2), one clip-and-noise step at λ = R_pub + γ(d, β/(2n)) (Lemma 3.2(1));
    ``"paper-code"`` — the published experiment: CoinPress t = 2, [1/4, 3/4], with the code's
    radius γ(**n**, 0.01) (its n-for-d bug, spec §6.1), for the Figure-1 reproduction.

    Charged to ``release``, its steps named under the context's prefix, or "public-mean".
    """
    _check_constants(constants, ("practical", "theory", "paper-code"))
    X = as_rows(X)
    n, d = int(X.shape[0]), int(X.shape[1])
    P = _check_public_rows(X_pub, d, 1)
    maps = _known_cov_maps(cov, d)
    accountant = _check_accountant(release.accountant)
    rho = _check_rho(rho)
    beta = _check_beta(beta)
    step = release.named("public-mean").step
    root = None
    W = np.eye(d)
    if maps is not None:
        W, root = maps
    P = clean_rows(P)  # duplicates merged, gross errors dropped (order-free)
    m = P.shape[0]
    p_bar = P.mean(axis=0)
    x_bar = p_bar @ W
    src = release.noise
    # private rows y = sanitize(Σ^{-1/2}(x − p̄)), mapped block by block (never materialised)
    Y = Rows(X, input_map=(W.T, p_bar))
    zero = np.zeros(d)
    _reserve(accountant, rho)
    if constants == "theory":
        r_pub = chi_tail_bound(d, beta / 2) / math.sqrt(m)
        lam = r_pub + chi_tail_bound(d, beta / (2 * n))
        est = clip_mean(Y, zero, lam, ZCDP(rho), release=Release(accountant, src, step))
    else:
        if constants == "practical":
            r_pub = math.sqrt(float(chi2.isf(beta / 2, d)) / m)
            plan = mean_schedule(n, d, r_pub, rho, beta=beta / 2)
        else:
            r_pub = chi_tail_bound(n, 0.01)
            plan = mean_schedule(n, d, r_pub, rho, steps=2, fractions=(0.25, 0.75),
                                 constants="theory", beta=0.01)
        est = _run_mean(Y, zero, plan, Release(accountant, src, step))
    out = est + x_bar
    return out if root is None else out @ root


def public_mean_one_sample(
    X: Any,
    x_pub: Any,
    rho: float,
    *,
    release: Release,
    cov: Any = None,
    beta: float = 0.01,
    constants: str = "practical",
) -> np.ndarray:
    """ρ-zCDP mean with one public sample ``x_pub`` (shape (d,) or (1, d)); see
    :func:`public_mean` (Bie–Kamath–Singhal Thm 3.3 / 2.3). Replace-one neighbours, n public."""
    x = np.asarray(x_pub)
    if not (x.ndim == 1 or (x.ndim == 2 and x.shape[0] == 1)):
        raise InvalidDataError("x_pub must be one public sample of shape (d,) or (1, d)")
    return public_mean(X, x.reshape(1, -1), rho, release=release, cov=cov, beta=beta,
                       constants=constants)


# ----------------------------------------------------------------------------------------------
# Algorithm 2
# ----------------------------------------------------------------------------------------------


def public_gaussian(
    X: Any,
    X_pub: Any,
    rho: float,
    *,
    release: Release,
    beta: float = 0.1,
    gamma: float = 0.0,
    constants: str = "practical",
    checks: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """ρ-zCDP (mean, covariance) of private rows ~ N(μ, Σ) with no range bounds, using m ≥ d+1
    public rows (Bie–Kamath–Singhal Alg. 2, Thm 3.7; TV-shifted public data Thm 3.14).

    Precondition with :func:`public_preconditioner` at failure β/2, map every private row by
    the public bijection y = L^{-1/2}A^{-1}(x − μ̂), run :func:`coinpress_gaussian` (failure
    β/2, the **whole** ρ) on the rows with prior ‖μ_Y‖ ≤ R and I ⪯ Σ_Y ⪯ K·I, and map back
    with the same A. ρ-zCDP with respect to the private rows for every public dataset
    (replace-one, n public); affine-equivariant.

    ``"theory"``: the direct port (CoinPress on pairwise differences with the worst-case K).
    ``"practical"``: additionally passes the public Mahalanobis bound ω on the public mean's
    offset, so all n rows (centred at μ̂) serve the coarse covariance steps and the mean is
    localised to radius ~1 for free; the schedules are planned from K, n, d, ρ.

    ``checks`` (default): raise InvalidDataError before any budget is spent when the plan is
    hopeless at these public sizes (:func:`check_public_plan`, which names the n or public rows
    that would do), and EstimationFailed (budget spent) when the release collapsed in the
    preconditioner's frame (:func:`check_public_collapse`). ``checks=False`` runs Alg. 2 as
    written and returns whatever it releases (for experiments on the algorithm itself).
    Charged to ``release``, its steps named under the context's prefix, or "public-gaussian".
    """
    X = as_rows(X, min_rows=2)
    if not checks:
        return public_gaussian_validated(X, X_pub, rho, release=release, beta=beta, gamma=gamma,
                                         constants=constants)
    _check_constants(constants)
    d = int(X.shape[1])
    P = _check_public_rows(X_pub, d, d + 1)
    _check_accountant(release.accountant)
    check_public_plan(int(X.shape[0]), d, P.shape[0], rho, beta, gamma, constants)
    mean, cov = public_gaussian_validated(X, P, rho, release=release, beta=beta, gamma=gamma,
                                          constants=constants)
    n, rho = int(X.shape[0]), _check_rho(rho)
    check_public_collapse(P, cov, beta, gamma, public_jitter(n, rho, constants),
                          public_resolves(n, P.shape[0], d, rho, beta, gamma, constants))
    return mean, cov


def public_gaussian_validated(
    X: Any,
    X_pub: Any,
    rho: float,
    *,
    release: Release,
    beta: float = 0.1,
    gamma: float = 0.0,
    constants: str = "practical",
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`public_gaussian` on rows already validated by
    :func:`~privgauss.backends.as_rows` (numpy, not copied, or dask), without the plan
    and collapse checks (the caller runs them). Charged to ``release``, its steps named under
    the context's prefix, or "public-gaussian"."""
    _check_constants(constants)
    d = int(X.shape[1])
    P = _check_public_rows(X_pub, d, d + 1)
    accountant = _check_accountant(release.accountant)
    rho = _check_rho(rho)
    beta = _check_beta(beta)
    pre = public_preconditioner(P, beta / 2, gamma)
    _reserve(accountant, rho)
    src = release.noise
    # the private rows y = sanitize(F(x − μ̂)) of pre.forward, mapped block by block
    n = int(X.shape[0])
    eta2 = public_jitter(n, rho, constants)
    if eta2 > 0:  # a ridge the frame's lower bound cannot exclude (.ridge)
        Y = Rows(jitter_rows(transform_rows(X, pre.forward_matrix, pre.mean),
                             math.sqrt(eta2), src, owned=True))
    else:
        Y = Rows(X, input_map=(pre.forward_matrix, pre.mean))
    omega = pre.R  # K ⪰ Σ_Y ⪰ I: R bounds the Mahalanobis offset too
    prefer_fewer = 0.0
    if constants == "practical":
        omega = min(omega, pre.mahalanobis_radius)
        if int(X.shape[0]) * d >= _FEWER_STEPS_MIN_VALUES:  # public sizes only
            prefer_fewer = _FEWER_STEPS_TOLERANCE
    # the callers judge the release for a collapse (check_public_collapse): returned as
    # released, since a floor at the noise level would hide one where the noise swamps the frame
    with without_noise_floor():
        mean_Y, cov_Y = _gaussian(
            Y, rho, GaussianPrior(np.zeros(d), pre.R, 1.0, pre.K, omega),
            Release(accountant, src, release.named("public-gaussian").step), constants,
            beta / 2, prefer_fewer,
        )
    if eta2 > 0:
        _check_jittered(np.asarray(cov_Y), eta2)
        cov_Y = unjitter(np.asarray(cov_Y), eta2)
    return pre.backward(mean_Y, cov_Y)


def public_jitter(n: int, rho: float, constants: str) -> float:
    """The variance η² of the ±η jitter :func:`public_gaussian` adds to every whitened private
    row (public sizes only): :data:`_PUBLIC_JITTER` up to n·√ρ = :data:`_PUBLIC_JITTER_NOISE`,
    then shrinking as 1/(n√ρ) with the chain's noise; 0 for ``constants="theory"``."""
    if constants != "practical":
        return 0.0
    return _PUBLIC_JITTER * min(1.0, _PUBLIC_JITTER_NOISE / (n * math.sqrt(rho)))


def _check_jittered(cov_y: np.ndarray, eta2: float) -> None:
    """Fail (post-processing of the release and the public η²) when the chain's release of
    Σ_Y + η²·I — at least η²·I on *any* rows — has an eigenvalue below
    :data:`_PUBLIC_COLLAPSE`·η²: the whitening chain collapsed. This, not Σ_Y ⪰ I, is the
    collapse test of the jittered route: Σ_Y ⪰ I holds for Gaussian public rows, but a public
    sample whose spread in a column comes from a few rows (a 99 %-zeros count, a rare flag)
    or from a wider population leaves the private rows' core far inside the frame's lower
    bound, and the chain then resolves it correctly, below I."""
    low = float(np.linalg.eigvalsh(sym(cov_y))[0]) if np.isfinite(cov_y).all() else 0.0
    if not low >= _PUBLIC_COLLAPSE * eta2:
        raise EstimationFailed(_COLLAPSE_MESSAGE, step="public-gaussian")


# ----------------------------------------------------------------------------------------------
# Hopeless plans and collapsed releases of Alg. 2
# ----------------------------------------------------------------------------------------------


def _plan_figures(
    n: int, m: int, d: int, rho: float, beta: float, gamma: float, constants: str, ideal: bool,
) -> tuple[float, float]:
    """(predicted relative covariance error, noise ratio of the last covariance step) of
    :func:`public_gaussian`'s plan — public sizes only; (inf, inf) when the range overflows
    the planner. The noise ratio is 2σ√d/ℓ: the spectral norm of the step's symmetric noise
    (≈ 2σ√d for entries of std σ) over the public lower bound ℓ on the smallest eigenvalue it
    must resolve."""
    b = beta / 2
    L, U, R, omega, _ = range_constants(d, m, b, gamma)
    K = 1.0 if ideal else U / L
    try:
        if constants == "theory":
            last = covariance_schedule(n // 2, d, K, rho / 2, beta=b, constants="theory")[-1]
            err2 = (d * d + d) * (2.0 / n + last.sigma**2 / last.lower)
        else:
            fewer = _FEWER_STEPS_TOLERANCE if n * d >= _FEWER_STEPS_MIN_VALUES else 0.0
            plan = _practical_plan(n, d, rho, R, 1.0, K, min(R, omega), b, fewer)
            err2, last = plan.cov_err, plan.cov[-1]
    except ValueError:
        return math.inf, math.inf
    return math.sqrt(err2 / d), 2.0 * last.sigma * math.sqrt(d) / last.lower


def public_predicted_error(
    n: int, m: int, d: int, rho: float, beta: float, gamma: float, constants: str,
    ideal: bool = False,
) -> float:
    """The planner's predicted relative Frobenius error of the covariance from
    :func:`public_gaussian` (failure ``beta``) with m ≥ d+1 public rows (public sizes only: the
    preconditioner's range (R, K, ω) depends on d, m, β, γ, not on the rows); inf when the
    range overflows the planner. ``ideal``: the same with K = 1 (a perfect preconditioner),
    the error the privacy noise and sampling alone would leave."""
    return _plan_figures(n, m, d, rho, beta, gamma, constants, ideal)[0]


def public_noise_ratio(
    n: int, m: int, d: int, rho: float, beta: float, gamma: float, constants: str,
    ideal: bool = False,
) -> float:
    """2σ√d/ℓ of the last covariance step of :func:`public_gaussian`'s plan (see
    :func:`public_predicted_error` for the arguments): above :data:`_PUBLIC_MAX_NOISE_RATIO` the
    noise can wipe out the smallest eigenvalue the step must resolve, and the whitening chain
    collapses (d = 100, ρ = 1, d+1 public rows: ratio 2.99 and 0.62 at n = 20000 and 24000,
    every run collapsed; 0.34 at n = 28000, every run accurate); used by the plan check from
    d = :data:`_NOISE_RULE_MIN_D` on."""
    return _plan_figures(n, m, d, rho, beta, gamma, constants, ideal)[1]


def _plan_fails(n: int, m: int, d: int, rho: float, beta: float, gamma: float, constants: str,
                limit: float) -> bool:
    """Whether :func:`check_public_plan` refuses (with error ``limit``): from d =
    :data:`_NOISE_RULE_MIN_D` on, the last step's noise ratio is past
    :data:`_PUBLIC_MAX_NOISE_RATIO` while a perfect preconditioner's is not; or
    the predicted error is past ``limit`` and :data:`PUBLIC_RANGE_FACTOR` × the ideal one."""
    args = (d, rho, beta, gamma, constants)
    err, ratio = _plan_figures(n, m, *args, ideal=False)
    err_ideal, ratio_ideal = _plan_figures(n, m, *args, ideal=True)
    noise_rule = constants != "theory" and d >= _NOISE_RULE_MIN_D  # (theory: own radii)
    if noise_rule and ratio > _PUBLIC_MAX_NOISE_RATIO >= ratio_ideal:
        return True
    return err > limit and err > PUBLIC_RANGE_FACTOR * err_ideal


def check_public_plan(
    n: int, d: int, m: int, rho: float, beta: float, gamma: float, constants: str
) -> None:
    """Refuse a :func:`public_gaussian` fit (n private rows, m public rows — inliers, see
    :func:`.public_frame.public_verdict` — dimension d, ρ-zCDP, failure β, TV shift γ) whose
    planned chain
    cannot whiten the worst-case range of m public rows (:func:`_plan_fails`): in high
    dimension (d ≥ :data:`_NOISE_RULE_MIN_D`), the last covariance step's noise would swamp
    the smallest eigenvalue it must resolve (:func:`public_noise_ratio`); or the predicted
    relative covariance error (:func:`public_predicted_error`) is past
    :data:`_PUBLIC_MAX_ERROR` and more than :data:`PUBLIC_RANGE_FACTOR` times what a perfect
    preconditioner would leave (an error due to the noise itself is the price of privacy, not
    a failure). Raises InvalidDataError naming the n or public rows that would pass with a
    predicted error of :data:`PUBLIC_TARGET_ERROR`. Public sizes only: call it before
    spending anything."""
    _check_constants(constants)
    rho, beta, gamma = _check_rho(rho), _check_beta(beta), check_gamma(gamma)
    if m < d + 1:
        raise InvalidDataError(f"the public preconditioner needs at least d+1 = {d + 1} public "
                               f"rows, got {m}")
    args = (d, rho, beta, gamma, constants)

    def fails(n_: int, m_: int, limit: float) -> bool:
        return _plan_fails(n_, m_, *args, limit)

    if not fails(n, m, _PUBLIC_MAX_ERROR):
        return
    err = public_predicted_error(n, m, *args)
    ratio = public_noise_ratio(n, m, *args)
    growth = [1 << j for j in range(1, _GROWTH_STEPS + 1)]
    more_n = next((n * g for g in growth if not fails(n * g, m, PUBLIC_TARGET_ERROR)), None)
    more_m = next((m * g for g in growth if not fails(n, m * g, PUBLIC_TARGET_ERROR)), None)
    fixes = [f"n >= {more_n} private rows" if more_n else None,
             f"{more_m} public rows from the same population (they shrink the worst-case "
             "range K)" if more_m else None,
             "a larger rho"]
    raise InvalidDataError(
        f"method='public' cannot estimate this covariance: with n={n} private rows, d={d}, "
        f"{m} usable public rows and rho={rho:.3g}, the worst-case range of the public "
        f"preconditioner leaves a predicted relative covariance error of {err:.3g} and noise "
        f"{ratio:.3g}× the smallest eigenvalue the last step must resolve (the chain cannot "
        "whiten that range at this n). Nothing was spent. Supply "
        + " or ".join(f for f in fixes if f)
        + "; or use method='auto' with an (epsilon, delta) budget (the bound-free 'histogram' "
        "route needs no public rows)"
    )


_COLLAPSE_MESSAGE = (
    "the private whitening chain did not converge (the released covariance is far below the "
    "floor its frame guarantees): the public rows may come from a wider or different "
    "population than the private ones — pass gamma= (a bound on their TV distance) or use "
    "method='auto' with an (epsilon, delta) budget or method='histogram' (no public rows "
    "needed); with representative public rows, supply more private rows or a larger budget"
)


def public_resolves(n: int, m: int, d: int, rho: float, beta: float, gamma: float,
                    constants: str) -> bool:
    """Whether the last covariance step of :func:`public_gaussian`'s plan (n private rows, m
    public inliers) resolves the smallest eigenvalue it must — its noise ratio
    (:func:`public_noise_ratio`) below :data:`_PUBLIC_RESOLVED` — so that a release below the
    frame's Σ_Y ⪰ I in a few directions is the private rows' core, not noise (corpus tables
    with 1 % public rows: ratios 0.005-0.64; d = 20 and 40 at n = 5000 with 5d public rows:
    27 and 42, where releases below I are the noise's). Public sizes only."""
    return public_noise_ratio(n, m, d, rho, beta, gamma, constants) < _PUBLIC_RESOLVED


def check_public_collapse(X_pub: Any, cov: Any, beta: float, gamma: float = 0.0,
                          jitter: float = 0.0, resolved: bool = False) -> None:
    """Raise EstimationFailed when the covariance ``cov`` released by :func:`public_gaussian`
    (failure ``beta``, TV shift ``gamma``, public rows ``X_pub``, jitter variance ``jitter`` =
    :func:`public_jitter` of the run, ``resolved`` = :func:`public_resolves` of its plan) is,
    in the preconditioner's frame, below the floor the run guarantees: with no jitter
    (``constants="theory"``) or a plan whose noise cannot resolve the frame's lower bound, the
    Σ_Y ⪰ I of the frame (smallest eigenvalue under :data:`_PUBLIC_COLLAPSE`); with a jitter η²
    and a resolving plan (the run itself tested the
    jittered release against η², :func:`_check_jittered`), the ridge ``RIDGE_KEEP``·η² that
    :func:`~.ridge.unjitter` leaves, and a largest eigenvalue of at least
    :data:`_PUBLIC_WIDER` — every eigenvalue under it means the frame is wider than the private
    rows in all directions (public rows from a wider population, or a uniformly shrunk chain),
    while a few directions below it are columns whose public spread comes from a few rows (a
    count with 99 % zeros, a rare flag), which the chain resolves below I; or not finite.
    Reads only the release and the public rows (post-processing); the budget stays spent."""
    F = public_preconditioner(X_pub, float(beta) / 2, gamma).forward_matrix
    with np.errstate(over="ignore", invalid="ignore"):
        cov_y = F @ np.asarray(cov, dtype=np.float64) @ F.T
    w = np.linalg.eigvalsh(sym(cov_y)) if np.isfinite(cov_y).all() else np.zeros(1)
    if jitter <= 0 or not resolved:
        ok = w[0] >= _PUBLIC_COLLAPSE
    else:
        ok = w[0] >= RIDGE_KEEP * float(jitter) * (1.0 - 1e-6) and w[-1] >= _PUBLIC_WIDER
    if not ok:
        raise EstimationFailed(_COLLAPSE_MESSAGE, step="public-gaussian")
