"""CoinPress-style iterative Gaussian estimation inside a public prior (ρ-zCDP).

Biswas, Dong, Kamath and Ullman, *CoinPress: Practical Private Mean and Covariance Estimation*
(NeurIPS 2020) — the practical stand-in for the KLSU19 learner that Bie–Kamath–Singhal (2022,
Alg. 2, spec ``public-data.md`` E1/E1′) call with range parameters (R, K).

Privacy: every function here is ρ-zCDP for the rows of ``X`` under **replace-one** neighbours
(n is public). Each step clips to a ball whose radius is computed *before* any data is read,
from public quantities only (n, d, ρ, the prior, β and the step index), releases a clipped
statistic with the Gaussian mechanism (sensitivity from :mod:`privgauss.sensitivity`), and
charges ``ZCDP(ρ·f_i)`` to the accountant before drawing its noise; the fractions f_i sum to 1
(the last is ``1 − sum(others)``). Step counts, splits and radii are therefore the same for all
datasets of a given size — :func:`mean_schedule` and :func:`covariance_schedule` return them.

``constants="theory"`` reproduces CoinPress's published recipe (Laurent–Massart tail bound γ at
β, clip radius ``min(sqrt(r²+6r+γ²), r+γ)``, t = 2 with ``[1/4, 3/4]``, covariance ridge
``η = (2√(d/n) + d/n)/2``). ``"practical"`` (default) chooses the number of steps and the split
by minimising a predicted error over a public grid, uses exact χ quantiles, and (mean) may clip
the last step inside the bulk of the data and undo the resulting shrinkage under the Gaussian
model. **Privacy never depends on the choice**; only accuracy does.

Large data (n·d ≥ 2^20): the practical Gaussian estimator may run in a *split mode* — a public
random subset of m rows fits a coarse frame, one pass over the final rows releases clipped first
and second moments in that frame (:mod:`.coinpress_split`: parallel composition with the whole ρ
on each part, or a ρ split with the final pass on all rows). The planner uses it only when its
predicted covariance error is within 1 % of the sequential plan's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.special import gammaln
from scipy.stats import chi2, norm, poisson

from ..accounting import ZCDP, Accountant
from ..backends import Rows
from ..exceptions import EstimationFailed, InvalidDataError, PrivacyBudgetError
from ..linalg import inv_sqrtm_psd, project_psd, sym
from ..mechanisms import gaussian_mechanism, gaussian_sigma_zcdp, symmetric_matrix_mechanism
from ..noise import RandomState, as_noise
from ..sensitivity import clipped_mean_l2, clipped_second_moment_frobenius
from ..validation import validated_rows

__all__ = [
    "CovStep",
    "MeanStep",
    "chi_tail_bound",
    "chi_tail_radius",
    "coinpress_covariance",
    "coinpress_gaussian",
    "coinpress_mean",
    "covariance_schedule",
    "mean_schedule",
]

CONSTANTS = ("practical", "theory")
_MAX_MEAN_STEPS = 10
_MAX_COV_STEPS = 40
# Practical covariance: per-row clipping tail of the chi-square radius.
_COV_CLIP_TAIL = 0.01
# Practical Gaussian estimator: shares of ρ for the rough mean, the final mean and the rest
# (the covariance steps).
_ROUGH_MEAN_SHARE = 0.05
_FINAL_MEAN_SHARE = 0.20
# Above this ω² (public Mahalanobis bound on the prior centre's offset) the coarse covariance
# steps use pairwise differences instead of rows centred at the prior centre.
_PAIRS_OMEGA2 = 4.0


# ----------------------------------------------------------------------------------------------
# Public tail bounds
# ----------------------------------------------------------------------------------------------


def chi_tail_bound(d: int, beta: float) -> float:
    """γ(d, β) = sqrt(d + 2√(d ln 1/β) + 2 ln 1/β): ‖z‖ ≤ γ w.p. ≥ 1 − β for z ~ N(0, I_d)
    (Laurent–Massart 2000). The bound CoinPress uses."""
    lb = math.log(1.0 / beta)
    return math.sqrt(d + 2.0 * math.sqrt(d * lb) + 2.0 * lb)


@lru_cache(maxsize=4096)
def _chi2_isf(p: float, d: int) -> float:
    return float(chi2.isf(p, d))


@lru_cache(maxsize=1024)
def _norm_isf(p: float) -> float:
    return float(norm.isf(p))


def chi_tail_radius(d: int, beta: float) -> float:
    """The exact (1 − β) quantile of ‖z‖ for z ~ N(0, I_d); never above :func:`chi_tail_bound`."""
    return math.sqrt(_chi2_isf(beta, d))


# ----------------------------------------------------------------------------------------------
# Argument checks (public quantities only in messages)
# ----------------------------------------------------------------------------------------------


def _check_constants(constants: str, allowed: tuple[str, ...] = CONSTANTS) -> str:
    if constants not in allowed:
        raise ValueError(f"constants must be one of {allowed}, got {constants!r}")
    return constants


def _check_rho(rho: Any) -> float:
    return ZCDP(rho).rho  # raises PrivacyBudgetError for <= 0, NaN, non-numbers


def _check_beta(beta: Any, name: str = "beta") -> float:
    b = float(beta)
    if not 0.0 < b < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {b}")
    return b


def _check_accountant(accountant: Any) -> Accountant:
    if not isinstance(accountant, Accountant):
        raise TypeError("accountant must be a privgauss.Accountant")
    return accountant


def _reserve(accountant: Accountant, rho: float) -> None:
    """Refuse up front (nothing spent, nothing drawn) when ρ is not available."""
    if not accountant.can_spend(ZCDP(rho)):
        raise PrivacyBudgetError(
            f"this estimator needs {rho:g}-zCDP but the accountant cannot pay it "
            f"(total {accountant.total}, spent {accountant.spent_str()})"
        )


def _fractions(fractions: Any, steps: int) -> tuple[float, ...]:
    """Validate a user split: positive, ``steps`` long, summing to 1; the last is recomputed
    as 1 − sum(others) so the parts sum to exactly 1."""
    f = [float(x) for x in fractions]
    if len(f) != steps:
        raise ValueError(f"fractions must have one entry per step ({steps}), got {len(f)}")
    if any(not (x > 0) or math.isinf(x) for x in f):
        raise ValueError("fractions must be positive and finite")
    if abs(math.fsum(f) - 1.0) > 1e-9:
        raise ValueError("fractions must sum to 1")
    last = 1.0 - math.fsum(f[:-1])
    if not last > 0:
        raise ValueError("fractions must sum to 1 with a positive last entry")
    return (*f[:-1], last)


def _split(rho: float, fractions: tuple[float, ...]) -> tuple[float, ...]:
    """ρ·f_i for all but the last step; the last gets ρ − sum(others) (all ∞ when ρ = ∞)."""
    if math.isinf(rho):
        return tuple(math.inf for _ in fractions)
    head = [rho * f for f in fractions[:-1]]
    return (*head, rho - math.fsum(head))


def _coinpress_fractions(t: int) -> tuple[float, ...]:
    """CoinPress's scripts: the last step gets 3/4, the others share 1/4 equally."""
    if t == 1:
        return (1.0,)
    return _fractions([0.25 / (t - 1)] * (t - 1) + [0.75], t)


# ----------------------------------------------------------------------------------------------
# Clipping under the Gaussian model (public, closed forms)
# ----------------------------------------------------------------------------------------------


def _chi2_trunc_terms(k: np.ndarray, tau: float) -> np.ndarray:
    """h_k(τ) = P(χ²_{k+2} ≤ τ²) + τ E[χ²_{k+2}^{-1/2}; χ²_{k+2} > τ²] for an array of k."""
    t2 = tau * tau
    ratio = np.exp(gammaln((k + 1) / 2.0) - gammaln(k / 2.0 + 1.0)) / math.sqrt(2.0)
    return chi2.cdf(t2, k + 2) + tau * ratio * chi2.sf(t2, k + 1)


@lru_cache(maxsize=8192)
def _clip_slope(d: int, tau: float, a: float = 0.0) -> float:
    """φ_τ(a): E[clip_τ(z + v)] = φ_τ(‖v‖)·v for z ~ N(0, I_d), clip_τ the projection onto the
    ball of radius τ. By Stein's identity E[y g(‖y‖²)] = v E[g(χ'²_{d+2}(‖v‖²))], a Poisson
    mixture of central χ² terms."""
    if a == 0.0:
        return float(_chi2_trunc_terms(np.array([float(d)]), tau)[0])
    lam = a * a / 2.0
    jmax = int(lam + 12.0 * math.sqrt(lam) + 30.0)
    j = np.arange(jmax + 1)
    w = poisson.pmf(j, lam)
    return float(np.dot(w, _chi2_trunc_terms(d + 2.0 * j, tau)))


@lru_cache(maxsize=8192)
def _clip_second_moment(d: int, tau: float) -> float:
    """E[min(‖z‖², τ²)]/d for z ~ N(0, I_d): the per-coordinate variance of clip_τ(z)."""
    t2 = tau * tau
    return float(chi2.cdf(t2, d + 2) + (t2 / d) * chi2.sf(t2, d))


def _undo_shrinkage(g: np.ndarray, d: int, tau: float, a_cap: float) -> np.ndarray:
    """Invert v ↦ φ_τ(‖v‖) v radially (post-processing of a DP output): the v with
    ‖v‖ φ_τ(‖v‖) = ‖g‖, its norm capped at ``a_cap``."""
    a0 = float(np.linalg.norm(g))
    if a0 == 0.0:
        return g / _clip_slope(d, tau)

    def psi(a: float) -> float:
        return a * _clip_slope(d, tau, a) - a0

    if psi(a_cap) <= 0:
        a = a_cap
    else:
        a = brentq(psi, 0.0, a_cap, xtol=1e-12 * max(a_cap, 1.0), rtol=1e-10)
    return g * (a / a0)


# ----------------------------------------------------------------------------------------------
# Mean
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MeanStep:
    """One step of the iterative mean, all public: its zCDP cost, the public bound on
    ‖center − μ‖ entering it, the clip radius, the per-coordinate noise std, and whether the
    output is de-shrunk under the Gaussian model (last practical step only)."""

    rho: float
    prior_radius: float
    clip_radius: float
    sigma: float
    debias: bool = False


def _sigma_mean(tau: float, n: int, rho: float) -> float:
    return gaussian_sigma_zcdp(clipped_mean_l2(tau, n), rho)


def _theory_mean_plan(
    n: int, d: int, radius: float, rhos: tuple[float, ...], beta: float
) -> tuple[MeanStep, ...]:
    gamma = chi_tail_bound(d, beta)
    r = radius
    out = []
    for rho_i in rhos:
        tau = min(math.sqrt(r * r + 6.0 * r + gamma * gamma), r + gamma)
        s = _sigma_mean(tau, n, rho_i)
        out.append(MeanStep(rho_i, r, tau, s))
        r = math.sqrt(1.0 / n + s * s) * gamma
    return tuple(out)


def _practical_chain(
    n: int, d: int, radius: float, rhos: tuple[float, ...], beta: float
) -> tuple[list[MeanStep], float]:
    """Localisation steps (all but the last): clip so that a row is cut w.p. ≤ β, then bound
    the new centre's distance by the exact χ quantile."""
    g2 = q = _chi2_isf(beta, d)
    z = _norm_isf(beta)
    r = radius
    out = []
    for rho_i in rhos:
        tau = math.sqrt(g2 + 2.0 * z * r + r * r)
        s = _sigma_mean(tau, n, rho_i)
        out.append(MeanStep(rho_i, r, tau, s))
        r = math.sqrt((1.0 / n + s * s) * q)
    return out, r


_FINAL_QUANTILES = (0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99)


def _practical_final(
    n: int, d: int, r: float, rho_f: float, beta: float, debias: bool
) -> tuple[MeanStep, float]:
    """The last step: either a covering clip (no de-shrinking) or a clip at a χ quantile whose
    shrinkage is undone under the model; the one with the smallest predicted error."""
    tau_c = math.sqrt(_chi2_isf(beta, d) + 2.0 * _norm_isf(beta) * r + r * r)
    s_c = _sigma_mean(tau_c, n, rho_f)
    best = (MeanStep(rho_f, r, tau_c, s_c, False), d * (1.0 / n + s_c * s_c))
    if not debias:
        return best
    for p in _FINAL_QUANTILES:
        tau = math.sqrt(_chi2_isf(1.0 - p, d))
        if tau >= tau_c or r > 0.5 * tau:
            continue
        s = _sigma_mean(tau, n, rho_f)
        slope = _clip_slope(d, tau)
        err = d * (_clip_second_moment(d, tau) / n + s * s) / slope**2
        if err < best[1]:
            best = (MeanStep(rho_f, r, tau, s, True), err)
    return best


@lru_cache(maxsize=1024)
def mean_schedule(
    n: int,
    d: int,
    radius: float,
    rho: float,
    *,
    steps: int | None = None,
    fractions: tuple[float, ...] | None = None,
    beta: float = 0.01,
    constants: str = "practical",
    debias: bool = True,
) -> tuple[MeanStep, ...]:
    """The public plan of :func:`coinpress_mean` (no data involved).

    ``theory``: CoinPress exactly (t = ``steps`` or 2, CoinPress's split unless ``fractions``).
    ``practical``: when ``steps``/``fractions`` are None, t ∈ 1..10 and the last step's share
    f ∈ [0.5, 0.99] (earlier steps share 1 − f equally) are chosen to minimise the predicted
    final error d(v/n + σ²)/slope² given the prior looseness ``radius``/√d, n, d and ρ.
    """
    _check_constants(constants)
    if n < 1 or d < 1:
        raise ValueError("n and d must be >= 1")
    if not (radius >= 0 and math.isfinite(radius)):
        raise ValueError("radius must be finite and >= 0")
    rho = _check_rho(rho)
    beta = _check_beta(beta)
    if steps is not None and (int(steps) != steps or steps < 1):
        raise ValueError("steps must be a positive integer")
    if fractions is not None:
        fr = _fractions(fractions, len(fractions) if steps is None else int(steps))
        steps = len(fr)
    if constants == "theory":
        t = 2 if steps is None else int(steps)
        fr = _coinpress_fractions(t) if fractions is None else fr
        return _theory_mean_plan(n, d, float(radius), _split(rho, fr), beta)

    candidates: list[tuple[float, ...]]
    if fractions is not None:
        candidates = [fr]
    else:
        ts = range(1, _MAX_MEAN_STEPS + 1) if steps is None else [int(steps)]
        candidates = []
        for t in ts:
            if t == 1:
                candidates.append((1.0,))
                continue
            for f in np.linspace(0.5, 0.99, 36):
                candidates.append(_fractions([(1.0 - f) / (t - 1)] * (t - 1) + [f], t))
    best: tuple[tuple[MeanStep, ...], float] | None = None
    for fr_c in candidates:
        rhos = _split(rho, fr_c)
        chain, r = _practical_chain(n, d, float(radius), rhos[:-1], beta)
        last, err = _practical_final(n, d, r, rhos[-1], beta, debias)
        if best is None or err < best[1] * (1 - 1e-12):
            best = ((*chain, last), err)
    assert best is not None
    return best[0]


def _check_center(center: Any, d: int) -> np.ndarray:
    c = np.array(center, dtype=np.float64).reshape(-1)
    if c.shape != (d,):
        raise InvalidDataError(f"center must have shape ({d},), got {c.shape}")
    if not np.isfinite(c).all():
        raise InvalidDataError("center contains NaN or infinite values")
    return c


def _check_radius(radius: Any, name: str = "radius") -> float:
    r = float(radius)
    if not (r >= 0 and math.isfinite(r)):
        raise ValueError(f"{name} must be finite and >= 0")
    return r


def _run_mean(
    rows: Rows,
    center: np.ndarray,
    plan: tuple[MeanStep, ...],
    accountant: Accountant,
    noise: Any,
    step: str,
    *,
    A: np.ndarray | None = None,
    shift: np.ndarray | None = None,
) -> np.ndarray:
    """Run a mean plan on the rows W_i = A(y_i − shift) of ``rows`` (y_i − shift without A),
    never materialised: each step releases mean_i clip_{B(c, τ)}(W_i) (one pass, or the
    Gram-based fast evaluation of :class:`~privgauss.backends.Rows`)."""
    n, d = rows.n, rows.d
    c = center
    t = len(plan)
    for i, s in enumerate(plan):
        stat = rows.clipped_mean(A, shift, c, s.clip_radius)
        released = gaussian_mechanism(
            stat,
            clipped_mean_l2(s.clip_radius, n),
            ZCDP(s.rho),
            accountant=accountant,
            noise=noise,
            step=f"{step} {i + 1}/{t}",
        )
        if s.debias:
            cap = max(3.0 * s.prior_radius, 4.0 * math.sqrt(d / n), 1e-12)
            released = c + _undo_shrinkage(released - c, d, s.clip_radius, cap)
        c = released
    return np.asarray(c, dtype=np.float64)


def coinpress_mean(
    X: Any,
    center: Any,
    radius: float,
    rho: float,
    *,
    accountant: Accountant,
    noise: RandomState = None,
    steps: int | None = None,
    fractions: Any = None,
    beta: float = 0.01,
    constants: str = "practical",
    debias: bool = True,
    step: str = "coinpress-mean",
) -> np.ndarray:
    """ρ-zCDP mean of rows ~ N(μ, I) with the public prior ‖μ − center‖ ≤ ``radius``.

    Biswas–Dong–Kamath–Ullman 2020, Alg. 1 (iterated clip-and-noise: each step clips to
    B(c, τ_i), adds N(0, σ_i² I) with L2 sensitivity 2τ_i/n (replace-one, n public) and σ_i =
    (2τ_i/n)/√(2ρ_i), and shrinks the public radius). The plan (steps, split ρ_i = ρ f_i, τ_i)
    is :func:`mean_schedule` — public, the same for every dataset. Callers whiten: the
    guarantee is privacy for any X; the accuracy assumes identity covariance.

    ``debias`` (practical only) lets the planner clip the last step inside the bulk and undo
    the shrinkage under the Gaussian model; turn it off for data that is not Gaussian.
    """
    X = validated_rows(X, name="X")
    n, d = int(X.shape[0]), int(X.shape[1])
    c = _check_center(center, d)
    radius = _check_radius(radius)
    accountant = _check_accountant(accountant)
    rho = _check_rho(rho)
    fr = None if fractions is None else tuple(float(f) for f in fractions)
    plan = mean_schedule(
        n, d, radius, rho, steps=steps, fractions=fr, beta=beta, constants=constants,
        debias=bool(debias),
    )
    _check_radii(plan)
    _reserve(accountant, rho)
    return _run_mean(Rows(X), c, plan, accountant, as_noise(noise), step)


# ----------------------------------------------------------------------------------------------
# Covariance
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CovStep:
    """One covariance step, all public: zCDP cost, row clip radius (in the current whitened
    coordinates, where the second moment M ⪯ I), noise std of each upper-triangle entry, the
    ridge η added before the next whitening (0 for the last step), and the public lower
    bound on λ_min(M) entering the step."""

    rho: float
    clip_radius: float
    sigma: float
    eta: float
    lower: float


def _sigma_cov(tau: float, n: int, rho: float) -> float:
    return gaussian_sigma_zcdp(clipped_second_moment_frobenius(tau, n), rho)


def _theory_cov_plan(
    n: int, d: int, cond: float, rhos: tuple[float, ...], beta: float
) -> tuple[CovStep, ...]:
    tau = chi_tail_bound(d, beta)
    eta = 0.5 * (2.0 * math.sqrt(d / n) + d / n)
    lower = 1.0 / cond
    out = []
    for i, rho_i in enumerate(rhos):
        s = _sigma_cov(tau, n, rho_i)
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
    tau = math.sqrt(_chi2_isf(_COV_CLIP_TAIL, d))
    eta = 0.5 * (2.0 * math.sqrt(d / n) + d / n)
    lower = 1.0 / cond
    out = []
    for rho_i in rhos:
        s = _sigma_cov(tau, n, rho_i)
        out.append(CovStep(rho_i, tau, s, eta, lower))
        lower = min(1.0, lower / (lower + eta + math.sqrt(d) * s))
    return out, lower


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
    _check_constants(constants)
    if n < 1 or d < 1:
        raise ValueError("n and d must be >= 1")
    cond = float(cond)
    if not (cond >= 1 and math.isfinite(cond)):
        raise ValueError("the condition bound must be finite and >= 1")
    rho = _check_rho(rho)
    beta = _check_beta(beta)
    if steps is not None and (int(steps) != steps or steps < 1):
        raise ValueError("steps must be a positive integer")
    if fractions is not None:
        fr = _fractions(fractions, len(fractions) if steps is None else int(steps))
        steps = len(fr)
    if constants == "theory":
        t = max(2, 1 + math.ceil(math.log10(cond))) if steps is None else int(steps)
        fr = _coinpress_fractions(t) if fractions is None else fr
        return _theory_cov_plan(n, d, cond, _split(rho, fr), beta)

    tau = math.sqrt(_chi2_isf(_COV_CLIP_TAIL, d))
    if fractions is not None:
        chosen = fr
    else:
        ts = range(1, _MAX_COV_STEPS + 1) if steps is None else [int(steps)]
        chosen = _best_cov_fractions(n, d, cond, rho, tuple(ts), tau, float(prefer_fewer))
    rhos = _split(rho, chosen)
    chain, lower = _practical_cov_chain(n, d, cond, rhos[:-1])
    return (*chain, CovStep(rhos[-1], tau, _sigma_cov(tau, n, rhos[-1]), 0.0, lower))


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
            return _fractions([(1.0 - fj) / (t - 1)] * (t - 1) + [fj], t)
    raise AssertionError("unreachable")  # pragma: no cover


def _run_cov(
    rows: Rows,
    A: np.ndarray,
    plan: tuple[CovStep, ...],
    accountant: Accountant,
    noise: Any,
    step: str,
    *,
    final: bool = True,
    shift: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Run the plan on rows y_i − shift (second moment S) starting from the transform A
    (A S Aᵀ ⪯ I). Each step whitens W_i = A(y_i − shift), clips rows to the planned radius,
    releases WᵀW/n with the symmetric Gaussian mechanism (Frobenius sensitivity √2 τ²/n),
    projects to PSD and — except in a final step — updates A ← (Z + ηI)^{-1/2} A (A need not
    be symmetric, so this bookkeeping is right for any number of steps). The whitened rows
    are never materialised (:meth:`~privgauss.backends.Rows.second_moment`).

    Returns (A, None) when ``final`` is False, else (A_used, Ŝ = A⁻¹ Z Aᵀ⁻¹)."""
    n, d = rows.n, rows.d
    t = len(plan)
    sh = np.zeros(d) if shift is None else np.asarray(shift, dtype=np.float64)
    for i, s in enumerate(plan):
        stat = rows.second_moment(A, sh, s.clip_radius)
        Z = symmetric_matrix_mechanism(
            stat,
            clipped_second_moment_frobenius(s.clip_radius, n),
            ZCDP(s.rho),
            accountant=accountant,
            noise=noise,
            step=f"{step} {i + 1}/{t}",
        )
        Zp = project_psd(Z)
        if final and i == t - 1:
            Ainv = np.linalg.inv(A)
            with np.errstate(over="ignore", invalid="ignore"):
                cov = sym(Ainv @ Zp @ Ainv.T)
            if not np.isfinite(cov).all():
                raise EstimationFailed(
                    "the private covariance overflowed; rescale the data or tighten the bounds",
                    step=step,
                )
            return A, cov
        A = inv_sqrtm_psd(Zp + s.eta * np.eye(d)) @ A
    return A, None


def coinpress_covariance(
    X: Any,
    rho: float,
    *,
    cov_upper: float,
    accountant: Accountant,
    noise: RandomState = None,
    steps: int | None = None,
    fractions: Any = None,
    beta: float = 0.1,
    constants: str = "practical",
    step: str = "coinpress-cov",
) -> np.ndarray:
    """ρ-zCDP covariance of rows ~ N(0, Σ) with the public bounds I ⪯ Σ ⪯ ``cov_upper``·I.

    Biswas–Dong–Kamath–Ullman 2020, Alg. 2: A₀ = I/√cov_upper; each step clips the rows of
    X Aᵀ to a public radius, adds symmetric Gaussian noise to the clipped second moment
    (Frobenius sensitivity √2 τ²/n under replace-one, n public), projects to PSD and re-whitens.
    Plan (steps, split, radii, ridges): :func:`covariance_schedule` with cond = cov_upper —
    public. Callers rescale so that the lower bound is 1.
    """
    X = validated_rows(X, name="X")
    n, d = int(X.shape[0]), int(X.shape[1])
    u = float(cov_upper)
    if not (u >= 1 and math.isfinite(u)):
        raise ValueError("cov_upper must be finite and >= 1 (rescale X so that I ⪯ Σ)")
    accountant = _check_accountant(accountant)
    rho = _check_rho(rho)
    fr = None if fractions is None else tuple(float(f) for f in fractions)
    plan = covariance_schedule(
        n, d, u, rho, steps=steps, fractions=fr, beta=beta, constants=constants
    )
    _reserve(accountant, rho)
    A0 = np.eye(d) / math.sqrt(u)
    _, cov = _run_cov(Rows(X), A0, plan, accountant, as_noise(noise), step)
    assert cov is not None
    return cov


# ----------------------------------------------------------------------------------------------
# Unknown mean and covariance
# ----------------------------------------------------------------------------------------------


def _check_bounds(cov_bounds: Any) -> tuple[float, float]:
    try:
        lo, hi = (float(x) for x in cov_bounds)
    except (TypeError, ValueError):
        raise ValueError("cov_bounds must be a pair (lo, hi) of eigenvalue bounds") from None
    if not (0 < lo <= hi and math.isfinite(hi)):
        raise ValueError("cov_bounds must satisfy 0 < lo <= hi < inf")
    return lo, hi


def coinpress_gaussian(
    X: Any,
    rho: float,
    *,
    center: Any,
    radius: float,
    cov_bounds: tuple[float, float],
    accountant: Accountant,
    noise: RandomState = None,
    constants: str = "practical",
    beta: float = 0.1,
    mahalanobis_radius: float | None = None,
    step: str = "coinpress-gaussian",
) -> tuple[np.ndarray, np.ndarray]:
    """ρ-zCDP estimate (mean, covariance) of rows ~ N(μ, Σ) with the public prior
    ‖μ − center‖ ≤ ``radius`` and lo·I ⪯ Σ ⪯ hi·I (``cov_bounds``). Replace-one, n public.

    ``practical`` (default), four stages, with the split
    ρ = ρ_cov (3/4) + ρ_rough (1/20) + ρ_mean (the rest, 1/5):

    1. coarse covariance steps giving a whitening transform T. Near prior (ω² ≤ 4, where
       ω = ``mahalanobis_radius`` is a public bound on ‖Σ^{-1/2}(μ − c)‖, default R/√lo):
       all n rows centred at the public centre, whose second moment S = Σ + (μ−c)(μ−c)ᵀ
       lies between lo·I and min(hi + R², (1 + ω²)hi)·I, so T S Tᵀ ⪯ I puts the mean within
       1 of Tc whatever R was. Far prior: the ⌊n/2⌋ pairwise differences
       (X_{2j} − X_{2j−1})/√2 ~ N(0, Σ) (used for these cheap steps only);
    2. a rough mean (covering clips) of the T-whitened rows;
    3. the rest of the covariance plan on all n rows centred at that mean (the centring
       error is second order), starting from T;
    4. the final mean of rows whitened by the DP covariance, prior radius from stage 2's
       public error bound.

    Stages 1 and 3 share ρ_cov by :func:`covariance_schedule`'s planner; all plans are
    functions of (n, d, ρ, R, lo, hi, ω, β) only. ``theory``: the
    classic reduction — CoinPress covariance on the ⌊n/2⌋ pairwise differences
    (X_{2j} − X_{2j−1})/√2 with ρ/2, then CoinPress mean (t = 2) on rows whitened by it with ρ/2.
    """
    X = validated_rows(X, name="X", min_rows=2)
    return _coinpress_gaussian(X, rho, center=center, radius=radius, cov_bounds=cov_bounds,
                               accountant=accountant, noise=noise, constants=constants,
                               beta=beta, mahalanobis_radius=mahalanobis_radius, step=step)


def _coinpress_gaussian(
    X: Any,
    rho: float,
    *,
    center: Any,
    radius: float,
    cov_bounds: tuple[float, float],
    accountant: Accountant,
    noise: RandomState = None,
    constants: str = "practical",
    beta: float = 0.1,
    mahalanobis_radius: float | None = None,
    step: str = "coinpress-gaussian",
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`coinpress_gaussian` on rows already validated by
    :func:`~privgauss.validation.validated_rows` (numpy, not copied, or dask)."""
    _check_constants(constants)
    d = int(X.shape[1])
    c = _check_center(center, d)
    R = _check_radius(radius)
    lo, hi = _check_bounds(cov_bounds)
    accountant = _check_accountant(accountant)
    rho = _check_rho(rho)
    beta = _check_beta(beta)
    omega = R / math.sqrt(lo)
    if mahalanobis_radius is not None:
        omega = min(omega, _check_radius(mahalanobis_radius, "mahalanobis_radius"))
    _reserve(accountant, rho)
    return _gaussian(Rows(X, center=c), rho, c, R, lo, hi, omega, accountant, as_noise(noise),
                     constants, beta, step)


def _gaussian(
    rows: Rows,
    rho: float,
    c: np.ndarray,
    R: float,
    lo: float,
    hi: float,
    omega: float,
    accountant: Accountant,
    src: Any,
    constants: str,
    beta: float,
    step: str,
    prefer_fewer: float = 0.0,
    info: dict[str, Any] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`coinpress_gaussian` on validated rows (finite, |x| ≤ 1e150). Every plan is
    computed (from public quantities) before anything is spent. ``prefer_fewer``: see
    :func:`covariance_schedule` (used when the range parameters are known, e.g. public data).
    Large data (n·d ≥ 2^20) may run in split mode (:mod:`.coinpress_split`) when the planner
    predicts the same accuracy; ``info`` (tests) receives its public split and sub-ledgers."""
    n, d = rows.n, rows.d
    if constants == "theory":
        return _gaussian_theory(rows, rho, c, R, lo, hi, accountant, src, beta, step)
    args = (d, rho, R, lo, hi, omega, beta, prefer_fewer)
    plan = _practical_plan(n, *args)
    from . import coinpress_split as sm  # (imports this module: loaded on first use)

    split = sm._split_plan(n, args, plan) if n * d >= sm._SPLIT_MIN_VALUES else None
    if split is not None:
        return sm._split_gaussian(rows, split, args, c, accountant, src, step, info)
    return _run_practical(rows, plan, c, lo, accountant, src, step)


@dataclass(frozen=True)
class _Plan:
    """The public plans of the practical estimator (stages 1–4 of :func:`coinpress_gaussian`)
    and the planner's predicted squared covariance error (d² + d)(1/n + σ_t²/ℓ_t)."""

    pairs: bool
    s_hi: float
    coarse: tuple[CovStep, ...]
    rough: tuple[MeanStep, ...]
    cov: tuple[CovStep, ...]
    mean: tuple[MeanStep, ...]
    cov_err: float


def _cov_share(final_mean: bool) -> float:
    """Share of ρ for the covariance stages (1 and 3): all but the mean stages'."""
    return 1.0 - _ROUGH_MEAN_SHARE - (_FINAL_MEAN_SHARE if final_mean else 0.0)


def _cov_plans(n: int, d: int, rho: float, R: float, lo: float, hi: float, omega: float,
               beta: float, prefer_fewer: float, final_mean: bool = True
               ) -> tuple[bool, float, tuple[CovStep, ...], tuple[CovStep, ...], float]:
    """(pairs, s_hi, coarse steps, stage-3 plan, cond3) of the practical estimator."""
    rho_cov = rho * _cov_share(final_mean)
    pairs = omega * omega > _PAIRS_OMEGA2
    if pairs:  # far prior: stage 1 whitens Σ itself from pairwise differences
        s_hi, offset2, n1 = hi, 1.0, n // 2
    else:  # near prior: whiten S = Σ + (μ−c)(μ−c)ᵀ ⪯ (1 + ω²)Σ with all n rows
        s_hi, offset2, n1 = min(hi + R * R, (1.0 + omega * omega) * hi), 1.0 + omega * omega, n
    plan1 = covariance_schedule(n1, d, _finite(s_hi / lo), rho_cov, beta=beta,
                                prefer_fewer=prefer_fewer)
    coarse = plan1[:-1]
    lower = plan1[-1].lower
    rho3 = rho_cov - math.fsum(s.rho for s in coarse) if math.isfinite(rho) else math.inf
    cond3 = max(_finite(offset2 / lower if coarse else s_hi / lo), 1.0)  # T Σ Tᵀ ⪰ ℓ/offset2
    plan3 = covariance_schedule(n, d, cond3, rho3, beta=beta, prefer_fewer=prefer_fewer)
    return pairs, s_hi, coarse, plan3, cond3


@lru_cache(maxsize=256)
def _practical_plan(n: int, d: int, rho: float, R: float, lo: float, hi: float, omega: float,
                    beta: float, prefer_fewer: float, final_mean: bool = True) -> _Plan:
    """Stages 1–4 of the practical estimator; without ``final_mean`` (a *frame* plan, used by
    the split mode) stage 4 is left out and its budget goes to the covariance stages: the
    output is the rough mean and the second moment about it."""
    pairs, s_hi, coarse, plan3, cond3 = _cov_plans(n, d, rho, R, lo, hi, omega, beta,
                                                   prefer_fewer, final_mean)
    rho_rough = rho * _ROUGH_MEAN_SHARE
    rho_cov = rho * _cov_share(final_mean)
    rho_mean = rho - rho_cov - rho_rough if math.isfinite(rho) else math.inf
    beta_m = min(beta, 0.01)
    # stage 2 prior: ‖T(μ − c)‖ ≤ 1 (near: T S Tᵀ ⪯ I) or ≤ ‖T‖R ≤ R/√lo = ω (far: T Σ Tᵀ ⪯ I)
    rough = mean_schedule(n, d, 1.5 if not pairs else omega, rho_rough, beta=beta_m,
                          debias=False)
    r_t = _mean_error_bound(n, d, rough[-1], beta_m)
    # stage 4 prior: ‖B(μ_rough − μ)‖ ≤ r_t ‖B A⁻¹‖ with ‖B A⁻¹‖² ≲ cond3 when the plan holds
    plan4 = (mean_schedule(n, d, _finite(r_t * math.sqrt(cond3)), rho_mean, beta=beta_m)
             if final_mean else ())
    _check_radii(rough, plan4)
    last = plan3[-1]
    err = (d * d + d) * (1.0 / n + last.sigma**2 / last.lower)
    return _Plan(pairs, s_hi, coarse, rough, plan3, plan4, err)


def _run_practical(rows: Rows, plan: _Plan, c: np.ndarray, lo: float, accountant: Accountant,
                   src: Any, step: str) -> tuple[np.ndarray, np.ndarray]:
    """Stages 1–4 of :func:`coinpress_gaussian` (``practical``) on ``rows``."""
    d = rows.d
    # Stage 1: coarse whitening steps → T (= A).
    A = np.eye(d) / math.sqrt(plan.s_hi)
    if plan.coarse:
        src1, shift1 = (rows.pairs(), None) if plan.pairs else (rows, c)
        A, _ = _run_cov(src1, A, plan.coarse, accountant, src, f"{step} cov-coarse",
                        final=False, shift=shift1)
    # Stage 2: rough mean in T-coordinates (cov(TX) ⪯ I).
    m_t = _run_mean(rows, np.zeros(d), plan.rough, accountant, src, f"{step} mean-rough", A=A,
                    shift=c)
    mu_rough = c + np.linalg.solve(A, m_t)
    # Stage 3: covariance of all rows centred at the rough mean, continuing from T.
    _, cov = _run_cov(rows, A, plan.cov, accountant, src, f"{step} cov", shift=mu_rough)
    assert cov is not None
    if not plan.mean:  # a frame plan: the rough mean and the second moment about it
        return mu_rough, cov
    # Stage 4: mean of the rows whitened by the released covariance.
    B = _whitener(cov, lo, step)
    m_w = _run_mean(rows, np.zeros(d), plan.mean, accountant, src, f"{step} mean", A=B,
                    shift=mu_rough)
    return mu_rough + np.linalg.solve(B, m_w), cov


def _finite(x: float) -> float:
    if not math.isfinite(x):
        raise ValueError("the prior (radius, cov_bounds) is too wide for float arithmetic")
    return x


def _check_radii(*plans: tuple[MeanStep, ...]) -> None:
    """Public check, before any spending, that every planned clip radius is usable."""
    if any(not s.clip_radius <= 1e150 for p in plans for s in p):
        raise ValueError("the prior radius is too large (clip radii must stay below 1e150)")


def _mean_error_bound(n: int, d: int, s: MeanStep, beta: float) -> float:
    """Public (1 − β) bound on the error of a covering mean step's output."""
    return math.sqrt((1.0 / n + s.sigma**2) * _chi2_isf(beta, d))


def _whitener(cov: np.ndarray, floor: float, step: str) -> np.ndarray:
    """Symmetric inverse square root of a released covariance (post-processing), eigenvalues
    floored at max(floor·1e-6, 1e-12·λ_max). A non-finite release (overflow on absurd inputs)
    is a DP failure output."""
    if not np.isfinite(cov).all():
        raise EstimationFailed(
            "the private covariance overflowed; rescale the data or tighten the bounds",
            step=step,
        )
    w, V = np.linalg.eigh(sym(cov))
    w = np.maximum(w, max(floor * 1e-6, 1e-12 * float(w[-1]), np.finfo(float).tiny))
    return sym((V / np.sqrt(w)) @ V.T)


def _gaussian_theory(
    rows: Rows,
    rho: float,
    c: np.ndarray,
    R: float,
    lo: float,
    hi: float,
    accountant: Accountant,
    src: Any,
    beta: float,
    step: str,
) -> tuple[np.ndarray, np.ndarray]:
    n, d = rows.n, rows.d
    half = rho / 2.0 if math.isfinite(rho) else math.inf
    rest = rho - half if math.isfinite(rho) else math.inf
    m = n // 2
    P = rows.pairs()
    plan = covariance_schedule(m, d, _finite(hi / lo), half, beta=beta, constants="theory")
    # ‖B(μ − c)‖ ≤ R/√lo when B ≈ Σ^{-1/2} and Σ ⪰ lo·I: a public radius
    plan_m = mean_schedule(n, d, _finite(R / math.sqrt(lo)), rest, constants="theory",
                           beta=0.01)
    _check_radii(plan_m)
    # CoinPress on the rescaled pairs P/√lo with A₀ = I·√(lo/hi), i.e. A₀ = I/√hi on P
    _, cov = _run_cov(P, np.eye(d) / math.sqrt(hi), plan, accountant, src, f"{step} cov")
    assert cov is not None
    B = _whitener(cov, lo, step)
    m_w = _run_mean(rows, B @ c, plan_m, accountant, src, f"{step} mean", A=B)
    return np.linalg.solve(B, m_w), cov
