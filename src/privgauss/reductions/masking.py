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
* mean ``μ + η Σ^{1/2} g`` shaped by the candidate's own Σ (Lemma 5.2.1–5.2.2): the largest
  γ ≤ 1/2 for which the privacy-loss bound
  ``γ²/2 + γ²/(2η²) + 2γ√L + 2γL + 2γ√(2L)/η ≤ ε₀`` (L = ln(2/δ₀)), found by root finding (the
  thesis's "each term ≤ ε/4" has five terms; spec fix A.5.2). Valid when dist_MEAN ≤ γ **and**
  dist_COV ≤ γ, which dist_COMP ≤ γ gives;
* covariance ``Σ^{1/2}(I + ηG)(I + ηG)ᵀΣ^{1/2}`` (Lemma 5.3.2, eq. 5.3):
  ``γ_C = min{√(ε₀/(2d(d + 1/η²))), ε₀/(8d√L), ε₀/(8L), ε₀η/(12√d√L)}``.

``ComponentMask`` composes the parts basically (radius: the smallest part radius; 3 or 2 parts).
``MixtureMask`` applies it to each component in a fresh uniformly random order (Lemma 6.1.1,
the mixture lemma 2.2.4 makes the permutation free) and splits (ε, δ) over the k components by
basic **or** advanced composition, whichever gives the larger radius (spec A.6: basic wins for
k ≲ 10). Advanced composition is used in the form ε' = √(2k ln(1/δ'))ε_c + kε_c(e^ε_c − 1)
(``accounting.compose_advanced``), valid for every ε_c, so the thesis's ε₀ < ln(2)/3 restriction
(needed only for its e^x ≤ 1 + 2x simplification) does not apply.

Accuracy scales (``etas``): ``theory_etas`` gives the thesis's η_W, η_MEAN and a Frobenius-
calibrated η_COV = α / (1.6 d + 2√(d ln(1/β))) (spec fix A.5.3: the thesis's √d form is off by √d).
Privacy never depends on η: the radius is recomputed for whatever η is used.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import eigh
from scipy.optimize import brentq
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from ..accounting import Accountant, ApproxDP, compose_advanced
from ..linalg import cholesky_pd, sym
from ..mechanisms import gaussian_sigma_analytic
from ..noise import NoiseSource, RandomState, as_noise

__all__ = [
    "Component",
    "ComponentMask",
    "MixtureMask",
    "cov_radius",
    "dist_comp",
    "dist_cov",
    "dist_mean",
    "lifted_within",
    "mean_privacy_loss",
    "mean_radius",
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


def mean_radius(eta: float, epsilon: float, delta: float) -> float:
    """Largest γ ≤ 1/2 with :func:`mean_privacy_loss` ≤ ε (it increases in γ), by Lemma 2.2.5
    a valid (γ, ε, δ)-masking radius for R_MEAN (spec fix A.5.2)."""
    if mean_privacy_loss(0.5, eta, delta) <= epsilon:
        return 0.5
    return float(brentq(lambda g: mean_privacy_loss(g, eta, delta) - epsilon, 0.0, 0.5)) * (
        1 - 1e-12
    )


def cov_radius(eta: float, d: int, epsilon: float, delta: float) -> float:
    """The explicit condition (5.3) of thesis Lemma 5.3.2 for R_COV."""
    L = math.log(2.0 / delta)
    return min(
        math.sqrt(epsilon / (2 * d * (d + 1 / eta**2))),
        epsilon / (8 * d * math.sqrt(L)),
        epsilon / (8 * L),
        epsilon * eta / (12 * math.sqrt(d) * math.sqrt(L)),
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

    def apply(
        self, F: Component, *, accountant: Accountant, noise: RandomState = None, step: str = ""
    ) -> Component:
        """Charge (nε₀, nδ₀), then release B_COMP(F)."""
        accountant.spend(
            self.budget, step=step or "component-mask", mechanism="masking",
            note=f"radius={self.radius:.6g}",
        )
        return self.release(F, noise)


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

    def apply(
        self,
        F: Sequence[Component],
        *,
        accountant: Accountant,
        noise: RandomState = None,
        step: str = "",
    ) -> list[Component]:
        accountant.spend(
            self.budget, step=step or "mixture-mask", mechanism="masking",
            note=f"radius={self.radius:.6g}",
        )
        return self.release(F, noise)
