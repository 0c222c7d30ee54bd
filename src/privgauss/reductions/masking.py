"""Masking mechanisms for Gaussian components and k-mixtures, with explicit privacy radii.

Arbas (with Ashtiani and Liaw), MSc thesis 2023, Ch. 5–6 (spec ``ppe-agnostic.md`` A.2, A.5,
A.6). A mechanism B is a (γ, ε, δ)-*masking* for a semimetric ``dist`` when ``dist(F, F') ≤ γ``
implies that B(F) and B(F') are (ε, δ)-indistinguishable (Def. 4.2.1). The "neighbours" of a
masking mechanism are therefore *parameter sets within the radius γ*; PPE (``ppe.py``) turns
this into DP for datasets.

Per-part mechanisms and their radii (each certifies (ε₀, δ₀) at the radius it reports; no
unknown constant is left):

* weight ``w + η g`` (Lemma 5.1.1): the radius is the *exact* one of the analytic Gaussian
  mechanism (Balle–Wang 2018), ``γ_W = η / σ(1, ε₀, δ₀)`` — tighter than the thesis's closed form;
* mean ``μ + η Σ^{1/2} g`` shaped by the candidate's own Σ, for max{dist_MEAN, dist_COV} ≤ γ
  (which dist_COMP ≤ γ gives), and
* covariance ``Σ^{1/2}(I + ηG)(I + ηG)ᵀΣ^{1/2}`` for dist_COV ≤ γ: in both, the radius is the
  larger of two valid ones (``method="best"``): the thesis's — for the mean the largest γ ≤ 1/2
  with ``γ²/2 + γ²/(2η²) + 2γ√L + 2γL + 2γ√(2L)/η ≤ ε₀``, L = ln(2/δ₀) (Lemma 5.2.2, by root
  finding: spec fix A.5.2), for the covariance condition (5.3) of Lemma 5.3.2 — and the
  near-tight **Rényi radius** below (``"renyi"``; 2.5–4× the thesis's for the mean, 8–70× for the
  covariance).

Rényi radius, proof. (1) *Whitening.* x ↦ Σ₁^{-1/2}(x − μ₁) (and X ↦ Σ₁^{-1/2}XΣ₁^{-1/2}) is a
bijection, so the pair's divergences are those of the whitened pair: S = Σ₁^{-1/2}Σ₂Σ₁^{-1/2}
with eigenvalues s_j, a = Σ₁^{-1/2}(μ₂ − μ₁). dist_COV ≤ γ gives Σ(s_j − 1)² ≤ γ² and
|s_j − 1|, |1/s_j − 1| ≤ γ, i.e. s_j ∈ I_γ = [1/(1+γ), 1+γ]; dist_MEAN ≤ γ gives ‖a‖ ≤ γ. The
set is closed under swapping the two inputs (re-whiten by Σ₂: S ↦ S⁻¹), so a bound on
D_α(out₂ ‖ out₁) over the set bounds both directions. (2) *Rényi divergence.* For 1-D Gaussians
D_α(N(m, s) ‖ N(0, 1)) = φ_α(s) + αm²/(2(α − (α−1)s)) with
φ_α(1 + u) = −½ln(1+u) − ln(1 − (α−1)u)/(2(α−1)) = ½[g(−u) + g((α−1)u)/(α−1)],
g(x) = −ln(1−x) − x (Gil–Alajaji–Linder 2013); finite on I_γ iff (α − 1)γ < 1. Independent
coordinates add. *Mean:* in S's eigenbasis out₂ = ⊗N(a_j, η²s_j), out₁ = ⊗N(0, η²), so
D_α = Σ_j φ_α(s_j) + Σ_j αa_j²/(2η²(α − (α−1)s_j)) ≤ γ²K_α(γ) + αγ²/(2η²(1 − (α−1)γ)), with
K_α(γ) ≥ max_{I_γ} φ_α(s)/(s − 1)². From φ_α(1+u) = ½Σ_{k≥2}[(−1)^k + (α−1)^{k−1}]u^k/k: for
α ≥ 2 every coefficient is ≥ 0, so φ_α/u² increases for u > 0 and is termwise smaller for
u < 0 (|u| ≤ γ): K = φ_α(1+γ)/γ², and the bound is *attained* by the 1-D pair a = γ, s = 1+γ.
For α < 2, dropping the negative terms and bounding the rest at |u| = γ gives
K = [g(γ) − ln(1 − (α−1)²γ²)/(2(α−1))]/(2γ²). *Covariance:* W = L(I + ηG)(I + ηG)ᵀLᵀ has the same
law for every L with LLᵀ = Σ (UGUᵀ ~ G for orthogonal U), so W is post-processing of
M = L(I + ηG), whose columns are independent N(Le_j, η²LLᵀ). Whitened, take L₁ = I,
L₂ = S^{1/2}: D_α ≤ Σ_i [d φ_α(s_i) + α(√s_i − 1)²/(2η²(α − (α−1)s_i))] (d columns share S; the
column shifts (S^{1/2} − I)e_j add up to a trace), and (√s − 1)²/(s − 1)² = 1/(√s + 1)² with
(√s + 1)²(α − (α−1)s) unimodal in √s, hence minimal at an end of I_γ:
D_α ≤ γ²[d K_α(γ) + α/(2η² min_{s ∈ ∂I_γ}(√s + 1)²(α − (α−1)s))] (:func:`cov_rdp`).
(3) *Conversion.* D_α ≤ τ implies (ε, δ) with δ = e^{(α−1)(τ−ε)}(1 − 1/α)^α/(α − 1)
(Canonne–Kamath–Steinke 2020, Prop. 12) for every α; :func:`rdp_delta` minimises over α, and the
radius is the largest γ ≤ 1/2 whose δ is ≤ δ₀ (τ increases in γ for each α), re-checked at the
value returned. Dimension-free for the mean. Near-tight: the exact δ(ε₀) of the worst 1-D pair
exceeds δ₀ at 1.07–1.37× the radius for the mean and 1.07–1.55× for the covariance (d = 1), for
ε₀ ≤ 1, δ₀ ≤ 0.05, η ≤ 0.3 (``tests/test_masking_tight.py``); the slack is the conversion's,
largest at large δ₀ and η.

``ComponentMask`` composes the parts basically (radius: the smallest part radius; 3 or 2 parts).
``MixtureMask`` applies it to each component in a fresh uniformly random order (Lemma 6.1.1,
the mixture lemma 2.2.4 makes the permutation free) and splits (ε, δ) over the k components by
basic **or** advanced composition, whichever gives the larger radius (spec A.6: basic wins for
k ≲ 10). Advanced composition is used in the form ε' = √(2k ln(1/δ'))ε_c + kε_c(e^ε_c − 1)
(``privacy.compose_advanced``), valid for every ε_c, so the thesis's ε₀ < ln(2)/3 restriction
(needed only for its e^x ≤ 1 + 2x simplification) does not apply.

Accuracy scales (``etas``): ``theory_etas`` gives the thesis's η_W, η_MEAN and a Frobenius-
calibrated η_COV = α / (1.6 d + 2√(d ln(1/β))) (spec fix A.5.3: the thesis's √d form is off by √d).
Privacy never depends on η: the radius is recomputed for whatever η is used.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.linalg import eigh
from scipy.optimize import brentq, minimize_scalar
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from ..linalg import cholesky_pd, sym
from ..mechanisms import Release, gaussian_sigma_analytic
from ..noise import NoiseSource, RandomState, as_noise
from ..privacy import ApproxDP, compose_advanced

__all__ = [
    "Component",
    "ComponentMask",
    "MixtureMask",
    "cov_radius",
    "cov_rdp",
    "dist_comp",
    "dist_cov",
    "dist_mean",
    "lifted_within",
    "mean_privacy_loss",
    "mean_radius",
    "mean_rdp",
    "rdp_delta",
    "theory_etas",
    "weight_radius",
]

#: A mixture component (weight, mean (d,), covariance (d, d)).
Component = tuple[float, np.ndarray, np.ndarray]


# ------------------------------------------------------------------------------- distances


def dist_cov(S1: np.ndarray, S2: np.ndarray) -> float:
    """dist_COV = max{‖Σ1^{1/2}Σ2^{-1}Σ1^{1/2} − I‖_F, ‖Σ2^{1/2}Σ1^{-1}Σ2^{1/2} − I‖_F}, from the
    generalised eigenvalues λ of (Σ1, Σ2) (spec A.2); inf when either is not positive definite."""
    try:
        lam = eigh(sym(S1), sym(S2), eigvals_only=True)
    except (np.linalg.LinAlgError, ValueError):
        return math.inf
    if not np.all(np.isfinite(lam)) or lam.min() <= 0:
        return math.inf
    return float(max(np.linalg.norm(lam - 1.0), np.linalg.norm(1.0 / lam - 1.0)))


def _maha(v: np.ndarray, S: np.ndarray) -> float:
    try:
        L = np.linalg.cholesky(sym(S))
    except np.linalg.LinAlgError:
        return math.inf
    return float(np.linalg.norm(np.linalg.solve(L, v)))


def dist_mean(mu1: np.ndarray, S1: np.ndarray, mu2: np.ndarray, S2: np.ndarray) -> float:
    """dist_MEAN = max{‖μ1 − μ2‖_{Σ1}, ‖μ1 − μ2‖_{Σ2}} (Mahalanobis, eq. 5.1)."""
    v = np.asarray(mu1, dtype=float) - np.asarray(mu2, dtype=float)
    return max(_maha(v, S1), _maha(v, S2))


def dist_comp(F1: Component, F2: Component) -> float:
    """dist_COMP = max{|w1 − w2|, dist_MEAN, dist_COV} (thesis Def. 2.1.4)."""
    w1, m1, S1 = F1
    w2, m2, S2 = F2
    dc = dist_cov(S1, S2)
    if not math.isfinite(dc):
        return math.inf
    return max(abs(float(w1) - float(w2)), dist_mean(m1, S1, m2, S2), dc)


def lifted_within(
    F: Sequence[Component], G: Sequence[Component], tau: float, dist: Any = dist_comp
) -> bool:
    """Whether the lifted (bottleneck) distance min_π max_i dist(F_i, G_π(i)) is ≤ ``tau``
    (Lemma 6.1.4): threshold the k×k cost matrix and look for a perfect matching. Not
    ``linear_sum_assignment``, which minimises the *sum* (spec D.4)."""
    k = len(F)
    if len(G) != k:
        return False
    adj = np.array([[dist(F[i], G[j]) <= tau for j in range(k)] for i in range(k)], dtype=bool)
    if not adj.any(axis=1).all():
        return False
    match = maximum_bipartite_matching(csr_matrix(adj.astype(np.int8)), perm_type="column")
    return bool(np.all(match >= 0))


# ------------------------------------------------------------------------------- radii

_MAX_RADIUS = 0.5  # the thesis lemma's range; PPE needs every radius ≤ r_tri = 1 anyway


def weight_radius(eta: float, epsilon: float, delta: float) -> float:
    """Radius of ``w + η g``: the largest |w − w'| the analytic Gaussian mechanism with σ = η
    hides at (ε, δ) (σ is linear in the sensitivity)."""
    return float(eta) / gaussian_sigma_analytic(1.0, epsilon, delta)


def mean_privacy_loss(gamma: float, eta: float, delta: float) -> float:
    """Thesis Lemma 5.2.2: with probability ≥ 1 − δ the privacy loss of R_MEAN between inputs
    with dist_MEAN ≤ γ and dist_COV ≤ γ (γ ≤ 1/2) is at most this."""
    L = math.log(2.0 / delta)
    g = float(gamma)
    return (
        g * g / 2
        + g * g / (2 * eta * eta)
        + 2 * g * math.sqrt(L)
        + 2 * g * L
        + 2 * g * math.sqrt(2 * L) / eta
    )


def _mean_radius_thesis(eta: float, epsilon: float, delta: float) -> float:
    if mean_privacy_loss(_MAX_RADIUS, eta, delta) <= epsilon:
        return _MAX_RADIUS
    root = brentq(lambda g: mean_privacy_loss(g, eta, delta) - epsilon, 0.0, _MAX_RADIUS)
    return float(root) * (1 - 1e-12)


def _cov_radius_thesis(eta: float, d: int, epsilon: float, delta: float) -> float:
    L = math.log(2.0 / delta)
    return min(
        _MAX_RADIUS,  # the lemma is for small radii; PPE needs r ≤ r_tri = 1 anyway
        math.sqrt(epsilon / (2 * d * (d + 1 / eta**2))),
        epsilon / (8 * d * math.sqrt(L)),
        epsilon / (8 * L),
        epsilon * eta / (12 * math.sqrt(d) * math.sqrt(L)),
    )


def _g(x: np.ndarray) -> np.ndarray:
    """g(x) = −ln(1 − x) − x = Σ_{k≥2} x^k/k (x < 1), without cancellation near 0."""
    x = np.asarray(x, dtype=float)
    small = np.abs(x) < 0.01
    xs = np.where(small, x, 0.0)
    series = sum(xs**k / k for k in range(2, 10))  # remainder < 1e-14 relative for |x| < 0.01
    xl = np.where(small, 0.0, x)
    return np.where(small, series, -np.log1p(-xl) - xl)


def _phi_ratio(alpha: np.ndarray, gamma: float) -> np.ndarray:
    """K_α(γ) ≥ φ_α(s)/(s − 1)² on I_γ = [1/(1+γ), 1+γ], where φ_α(1 + u) =
    ½[g(−u) + g((α−1)u)/(α−1)] is the Rényi divergence of N(0, s) from N(0, 1). Exact (the
    value at s = 1 + γ) for α ≥ 2; the absolute-series bound for α < 2 (see the module
    docstring). Needs (α − 1)γ < 1 and γ < 1."""
    b = alpha - 1.0
    exact = 0.5 * (_g(np.full_like(b, -gamma)) + _g(b * gamma) / b) / gamma**2
    y = (b * gamma) ** 2
    series = (_g(np.full_like(b, gamma)) + (_g(y) + y) / (2 * b)) / (2 * gamma**2)
    return np.where(alpha >= 2, exact, series)


def mean_rdp(alpha: Any, gamma: float, eta: float) -> np.ndarray:
    """Sup of D_α(R_MEAN(μ₂, Σ₂) ‖ R_MEAN(μ₁, Σ₁)) over dist_MEAN, dist_COV ≤ γ (attained by
    a 1-D pair for α ≥ 2), for 1 < α < 1 + 1/γ: γ²[K_α(γ) + α/(2η²(1 − (α−1)γ))]."""
    a = np.asarray(alpha, dtype=float)
    return gamma**2 * (_phi_ratio(a, gamma) + a / (2 * eta**2 * (1 - (a - 1) * gamma)))


def cov_rdp(alpha: Any, gamma: float, eta: float, d: int) -> np.ndarray:
    """Upper bound on D_α(R_COV(Σ₂) ‖ R_COV(Σ₁)) over dist_COV ≤ γ, for 1 < α < 1 + 1/γ:
    γ²[d K_α(γ) + α/(2η² min_{s = 1/(1+γ), 1+γ} (√s + 1)²(α − (α−1)s))]."""
    a = np.asarray(alpha, dtype=float)
    ends = [(math.sqrt(s) + 1) ** 2 * (a - (a - 1) * s) for s in (1 / (1 + gamma), 1 + gamma)]
    return gamma**2 * (d * _phi_ratio(a, gamma) + a / (2 * eta**2 * np.minimum(*ends)))


def _log_delta_rdp(alpha: np.ndarray, tau: np.ndarray, epsilon: float) -> np.ndarray:
    """ln δ of CKS20 Prop. 12: D_α ≤ τ implies (ε, δ) with
    δ = e^{(α−1)(τ−ε)} (1 − 1/α)^α / (α − 1)."""
    return (alpha - 1) * (tau - epsilon) + alpha * np.log1p(-1 / alpha) - np.log(alpha - 1)


def _rdp_log_delta(rdp: Callable[[np.ndarray], np.ndarray], gamma: float, epsilon: float) -> float:
    top = math.log((1 - 1e-9) / gamma)  # log(α − 1) < log(1/γ)
    xs = np.linspace(min(math.log(1e-3), top - 1), top, 200)

    def obj(x: np.ndarray) -> np.ndarray:
        a = 1 + np.exp(x)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            out = _log_delta_rdp(a, rdp(a), epsilon)
        return np.where(np.isnan(out), np.inf, out)

    vals = obj(xs)
    i = int(np.argmin(vals))
    lo, hi = xs[max(i - 1, 0)], xs[min(i + 1, xs.size - 1)]
    ref = minimize_scalar(lambda x: float(obj(np.array(x))), bounds=(lo, hi), method="bounded")
    return min(float(vals[i]), float(ref.fun))


def rdp_delta(rdp: Callable[[np.ndarray], np.ndarray], gamma: float, epsilon: float) -> float:
    """The δ at ε certified by the Rényi bound ``rdp(α)`` of a radius-γ pair, minimised over
    α ∈ (1, 1 + 1/γ) (grid, then a local refinement; every α gives a valid δ)."""
    return min(1.0, math.exp(_rdp_log_delta(rdp, gamma, epsilon)))


@lru_cache(maxsize=4096)
def _renyi_radius(eta: float, d: int, epsilon: float, delta: float, part: str) -> float:
    """Largest γ ≤ 1/2 whose certified δ (:func:`rdp_delta`) is ≤ δ; τ increases in γ for
    every α, hence so does the certified δ."""

    def rdp(g: float) -> Callable[[np.ndarray], np.ndarray]:
        if part == "mean":
            return lambda a: mean_rdp(a, g, eta)
        return lambda a: cov_rdp(a, g, eta, d)

    def excess(g: float) -> float:
        return _rdp_log_delta(rdp(g), g, epsilon) - math.log(delta)

    if excess(_MAX_RADIUS) <= 0:
        return _MAX_RADIUS
    lo = 1e-3 * _MAX_RADIUS
    while excess(lo) > 0:
        lo /= 16
        if lo < 1e-300:
            return 0.0
    g = brentq(lambda x: excess(math.exp(x)), math.log(lo), math.log(_MAX_RADIUS), xtol=1e-12)
    g = math.exp(g) * (1 - 1e-9)
    while excess(g) > 0:  # the certificate must hold at the value returned
        g *= 1 - 1e-6
    return g


def _best(method: str, thesis: Callable[[], float], renyi: Callable[[], float]) -> float:
    if method == "thesis":
        return thesis()
    if method == "renyi":
        return renyi()
    if method == "best":
        return max(thesis(), renyi())
    raise ValueError(f"method must be 'best', 'renyi' or 'thesis', got {method!r}")


def mean_radius(eta: float, epsilon: float, delta: float, method: str = "best") -> float:
    """A (γ, ε, δ)-masking radius of R_MEAN for max{dist_MEAN, dist_COV}, γ ≤ 1/2:
    ``"thesis"``, the largest γ with :func:`mean_privacy_loss` ≤ ε (Lemma 2.2.5, spec fix
    A.5.2); ``"renyi"``, the Rényi bound :func:`mean_rdp` converted to (ε, δ); ``"best"``
    (default), the larger of the two (both are valid)."""
    return _best(
        method,
        lambda: _mean_radius_thesis(eta, epsilon, delta),
        lambda: _renyi_radius(float(eta), 1, float(epsilon), float(delta), "mean"),
    )


def cov_radius(eta: float, d: int, epsilon: float, delta: float, method: str = "best") -> float:
    """A (γ, ε, δ)-masking radius of R_COV for dist_COV: ``"thesis"``, the explicit condition
    (5.3) of Lemma 5.3.2; ``"renyi"``, the Rényi bound :func:`cov_rdp` converted to (ε, δ)
    (capped at 1/2); ``"best"`` (default), the larger of the two."""
    return _best(
        method,
        lambda: _cov_radius_thesis(eta, d, epsilon, delta),
        lambda: _renyi_radius(float(eta), int(d), float(epsilon), float(delta), "cov"),
    )


def theory_etas(alpha: float, beta: float, d: int) -> tuple[float, float, float]:
    """(η_W, η_MEAN, η_COV) making each part α-accurate with probability ≥ 1 − β (A.5)."""
    lb = math.log(1.0 / beta)
    return (
        alpha / math.sqrt(2 + 2 * lb),
        alpha / math.sqrt(3 * (d + lb)),
        alpha / (1.6 * d + 2 * math.sqrt(d * lb)),
    )


# ------------------------------------------------------------------------------- mechanisms


@dataclass(frozen=True)
class ComponentMask:
    """B_COMP (thesis Alg. 2 / eq. 5.6): weight, mean and covariance masks with independent
    noise, each (ε₀, δ₀) at its radius; a (γ, nε₀, nδ₀)-masking for dist_COMP with
    γ = the smallest part radius (n = 3 parts, or 2 with ``with_weight=False`` for k = 1, where
    the weight is the constant 1)."""

    d: int
    epsilon0: float
    delta0: float
    eta_weight: float
    eta_mean: float
    eta_cov: float
    with_weight: bool = True

    @property
    def n_parts(self) -> int:
        return 3 if self.with_weight else 2

    @property
    def radii(self) -> dict[str, float]:
        e, dl = self.epsilon0, self.delta0
        out = {
            "mean": mean_radius(self.eta_mean, e, dl),
            "cov": cov_radius(self.eta_cov, self.d, e, dl),
        }
        if self.with_weight:
            out["weight"] = weight_radius(self.eta_weight, e, dl)
        return out

    @property
    def radius(self) -> float:
        return min(self.radii.values())

    @property
    def budget(self) -> ApproxDP:
        return ApproxDP(self.n_parts * self.epsilon0, self.n_parts * self.delta0)

    def release(self, F: Component, noise: RandomState = None) -> Component:
        """Draw B_COMP(F) (no accounting: callers charge ``budget`` first)."""
        src = as_noise(noise)
        w, mu, S = F
        d = self.d
        L = cholesky_pd(S, name="component covariance")  # any LLᵀ = Σ gives the same law
        w_out = float(src.gaussian(float(w), self.eta_weight)) if self.with_weight else float(w)
        mu_out = np.asarray(mu, dtype=float) + L @ src.gaussian(np.zeros(d), self.eta_mean)
        A = np.eye(d) + src.gaussian(np.zeros((d, d)), self.eta_cov)
        LA = L @ A
        return w_out, mu_out, sym(LA @ LA.T)

    def apply(self, F: Component, *, release: Release) -> Component:
        """Charge (nε₀, nδ₀) to ``release`` (step "component-mask" unless it names one), then
        release B_COMP(F)."""
        release.accountant.spend(
            self.budget, step=release.named("component-mask").step, mechanism="masking",
            note=f"radius={self.radius:.6g}",
        )
        return self.release(F, release.noise)


def _advanced_component_budget(k: int, epsilon: float, delta: float) -> ApproxDP | None:
    """Per-component (ε_c, δ_c) whose k-fold advanced composition with δ' = δ/2 fits (ε, δ)."""
    dp = delta / 2

    def total(e: float) -> float:
        return compose_advanced(e, delta / (2 * k), k, dp).epsilon

    hi = epsilon
    if total(hi) <= epsilon:
        return ApproxDP(hi, delta / (2 * k))
    e = brentq(lambda x: total(x) - epsilon, 1e-12, hi) * (1 - 1e-12)
    return ApproxDP(e, delta / (2 * k))


@dataclass(frozen=True)
class MixtureMask:
    """B_GMM (thesis §6.2, Lemma 6.1.1, 6.2.1): B_COMP on every component, in a fresh uniformly
    random order. A (γ, ε, δ)-masking for the lifted distance dist_PARAM = (dist_COMP)^k whose
    radius γ is the component radius at the per-part budget chosen by ``composition``
    ("best": basic or advanced, whichever gives the larger γ)."""

    k: int
    d: int
    epsilon: float
    delta: float
    alpha: float
    beta: float
    composition: str = "best"
    etas: tuple[float, float, float] | None = None

    def _component(self, per: ApproxDP) -> ComponentMask:
        with_w = self.k > 1
        parts = 3 if with_w else 2
        ew, em, ec = self.etas or theory_etas(self.alpha, self.beta / (3 * self.k), self.d)
        return ComponentMask(
            self.d, per.epsilon / parts, per.delta / parts, ew, em, ec, with_weight=with_w
        )

    @property
    def component(self) -> ComponentMask:
        basic = self._component(ApproxDP(self.epsilon / self.k, self.delta / self.k))
        if self.composition == "basic" or self.k == 1:
            return basic
        adv_budget = _advanced_component_budget(self.k, self.epsilon, self.delta)
        adv = None if adv_budget is None else self._component(adv_budget)
        if self.composition == "advanced":
            if adv is None:
                raise ValueError("advanced composition does not fit this budget")
            return adv
        return basic if adv is None or basic.radius >= adv.radius else adv

    @property
    def radius(self) -> float:
        return self.component.radius

    @property
    def budget(self) -> ApproxDP:
        return ApproxDP(self.epsilon, self.delta)

    def release(self, F: Sequence[Component], noise: RandomState = None) -> list[Component]:
        src: NoiseSource = as_noise(noise)
        comp = self.component
        order = src.rng.permutation(len(F))  # fresh each call (Lemma 6.1.1)
        return [comp.release(F[int(i)], src) for i in order]

    def apply(self, F: Sequence[Component], *, release: Release) -> list[Component]:
        """Charge the mask's budget to ``release`` (step "mixture-mask" unless it names one),
        then release B_GMM(F)."""
        release.accountant.spend(
            self.budget, step=release.named("mixture-mask").step, mechanism="masking",
            note=f"radius={self.radius:.6g}",
        )
        return self.release(F, release.noise)
