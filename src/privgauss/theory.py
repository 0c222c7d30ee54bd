"""Sample-complexity formulas of the source papers' theorems.

The theorems are stated up to unspecified constants and polylog factors. These functions set every
constant to 1 and every ``polylog(x)`` to ``log(x)``: the numbers are **indicative only** — right
in how they scale with d, α, β and the budget, not in their absolute size. Each returns a
:class:`Bound` naming the theorem it evaluates (Bie–Kamath–Singhal 2022, "full" arXiv numbering).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Bound:
    """A sample-size requirement n ≥ ``n`` (constants unknown: indicative only)."""

    n: float
    theorem: str
    formula: str
    note: str = "constants set to 1 and polylog(x) to log(x): indicative only"

    def __str__(self) -> str:
        return f"n >~ {self.n:.3g}  ({self.theorem}: {self.formula}; {self.note})"


def _check(**kw: float) -> None:
    for name, v in kw.items():
        if not (v > 0 and math.isfinite(v)):
            raise ValueError(f"{name} must be positive and finite")
    if "alpha" in kw and kw["alpha"] >= 1:
        raise ValueError("alpha (target TV error) must be < 1")
    if "beta" in kw and kw["beta"] >= 1:
        raise ValueError("beta (failure probability) must be < 1")


def _lg(x: float) -> float:
    return math.log(max(x, math.e))


def clip_mean_n(d: int, alpha: float, beta: float, rho: float, radius: float) -> Bound:
    """Clip-and-noise mean with ‖μ‖ ≤ R, identity covariance (Lemma 3.2(1))."""
    _check(d=d, alpha=alpha, beta=beta, rho=rho, radius=radius)
    lb = _lg(1 / beta)
    n = (d + lb) / alpha**2 + math.sqrt(d) * (radius + math.sqrt(d)) * lb / (alpha * math.sqrt(rho))
    return Bound(n, "Lemma 3.2(1)", "(d+log 1/b)/a^2 + sqrt(d)(R+sqrt d) log(1/b)/(a sqrt(rho))")


def public_mean_n(d: int, alpha: float, beta: float, rho: float) -> Bound:
    """Mean with one public sample, identity covariance, zCDP (Thm 3.3(1)); no R."""
    _check(d=d, alpha=alpha, beta=beta, rho=rho)
    lb = _lg(1 / beta)
    n = (d + lb) / alpha**2 + d * lb / (alpha * math.sqrt(rho))
    return Bound(n, "Thm 3.3(1)", "(d+log 1/b)/a^2 + d log(1/b)/(a sqrt(rho))")


def public_gaussian_n(
    d: int,
    alpha: float,
    beta: float,
    *,
    rho: float | None = None,
    epsilon: float | None = None,
    gamma: float = 0.0,
) -> Bound:
    """General Gaussian with d+1 public samples (Thm 3.7 for γ = 0, Thm 3.14 for γ > 0):
    ρ-zCDP (efficient) or pure ε-DP (via BKSW19, inefficient). No R or K."""
    _check(d=d, alpha=alpha, beta=beta)
    if not 0 <= gamma < 1:
        raise ValueError("gamma must be in [0, 1)")
    base = (d**2 + _lg(1 / beta)) / alpha**2
    g = 1 - gamma
    if rho is not None:
        _check(rho=rho)
        priv = d**2 * _lg(d / (alpha * beta * rho)) / (alpha * math.sqrt(rho))
        if gamma > 0:
            priv += d * _lg(d / (alpha * beta * rho * g)) / (alpha * math.sqrt(rho))
            priv += d**1.5 * _lg(d / (beta * rho * g)) / math.sqrt(rho)
        return Bound(
            base + priv,
            "Thm 3.14" if gamma else "Thm 3.7",
            "(d^2+log 1/b)/a^2 + d^2 log(d/(a b rho))/(a sqrt(rho)) [+ gamma terms]",
        )
    if epsilon is None:
        raise ValueError("give rho= or epsilon=")
    _check(epsilon=epsilon)
    priv = d**2 * _lg(d / (alpha * beta * g)) / (alpha * epsilon)
    return Bound(
        base + priv,
        "Thm 3.14 (pure)" if gamma else "Thm 3.7 (pure)",
        "(d^2+log 1/b)/a^2 + d^2 log(d/(a b (1-gamma)))/(a eps)",
    )


def klsu_n(d: int, alpha: float, beta: float, rho: float, radius: float, cond: float) -> Bound:
    """Bounded zCDP learner without public data, ‖μ‖ ≤ R and I ⪯ Σ ⪯ K I (Lemma 2.24(2),
    KLSU19): what :func:`public_gaussian_n` avoids — note the log R and log K terms."""
    _check(d=d, alpha=alpha, beta=beta, rho=rho, radius=radius, cond=cond)
    lb = _lg(1 / beta)
    sr = math.sqrt(rho)
    n = (
        (d**2 + lb) / alpha**2
        + (d**2 * _lg(d / (alpha * beta * rho)) + d * _lg(d * _lg(radius) / (alpha * beta * rho)))
        / (alpha * sr)
        + (
            d**1.5 * math.sqrt(_lg(cond)) * _lg(d * _lg(cond) / (rho * beta))
            + math.sqrt(d * _lg(radius * d / beta))
        )
        / sr
    )
    return Bound(n, "Lemma 2.24(2)", "KLSU19 with log R and log K terms")


def bksw_n(
    d: int, alpha: float, beta: float, epsilon: float, radius: float, cond: float | None = None
) -> Bound:
    """Pure ε-DP hypothesis selection (BKSW19, Lemma 2.24(3)); ``cond=None`` for known
    (identity) covariance, i.e. mean estimation."""
    _check(d=d, alpha=alpha, beta=beta, epsilon=epsilon, radius=radius)
    lb = _lg(1 / beta)
    if cond is None:
        n = (d + lb) / alpha**2 + (d * _lg(d * radius / alpha) + lb) / (alpha * epsilon)
        return Bound(n, "Lemma 2.24(3), mean", "(d+log 1/b)/a^2 + (d log(dR/a)+log 1/b)/(a eps)")
    _check(cond=cond)
    n = (d**2 + lb) / alpha**2 + (
        d * _lg(d * radius / alpha) + d**2 * _lg(d * cond / alpha) + lb
    ) / (alpha * epsilon)
    return Bound(
        n, "Lemma 2.24(3)", "(d^2+log 1/b)/a^2 + (d log(dR/a)+d^2 log(dK/a)+log 1/b)/(a eps)"
    )


def al21_n(d: int, alpha: float, beta: float, epsilon: float, delta: float) -> Bound:
    """(ε, δ)-DP learner with no range parameters (AL21, Lemma 2.24(1))."""
    _check(d=d, alpha=alpha, beta=beta, epsilon=epsilon, delta=delta)
    lb = _lg(1 / beta)
    ld = _lg(1 / delta)
    poly = _lg(d) * _lg(1 / alpha) * _lg(1 / beta) * _lg(1 / epsilon) * _lg(ld)
    n = (d**2 + lb) / alpha**2 + (d**2 * math.sqrt(ld) + d * ld) * poly / (alpha * epsilon)
    return Bound(
        n, "Lemma 2.24(1)", "(d^2+log 1/b)/a^2 + (d^2 sqrt(log 1/d)+d log 1/d) polylog/(a eps)"
    )


# ----------------------------------------------------------------------------------------------
# Private-to-non-private reductions (spec ppe-agnostic.md, Parts A and B)
# ----------------------------------------------------------------------------------------------


def ppe_n(
    d: int, k: int, epsilon: float, delta: float, alpha: float = 0.1, beta: float = 0.1
) -> Bound:
    """Arbas thesis Thm 7.1.3 with explicit constants: n = t · m_NP(γ/9, β/(2t)), where t and
    the per-half (ε', δ') are PPE's, γ is the explicit masking radius of ``reductions.masking``
    at accuracy α/3 (basic or advanced composition), and the learner is the empirical one,
    m_NP(a, b) = k(d(d + 1) + 2 ln(1/b))/a² (dist_COV error ≈ √(d(d+1)/s); ×k for k components,
    our explicit stand-in for MV10's unspecified polynomial)."""
    _check(d=d, k=k, epsilon=epsilon, delta=delta, alpha=alpha, beta=beta)
    from .privacy import ApproxDP
    from .reductions.masking import MixtureMask
    from .reductions.ppe import ppe_blocks, ppe_halves

    eps, dl = ppe_halves(ApproxDP(epsilon, delta))
    t = ppe_blocks(eps, dl)
    gamma = MixtureMask(k, d, eps, dl, alpha / 3, beta / (2 * t)).radius
    a = gamma / 9
    m_np = k * (d * (d + 1) + 2 * math.log(2 * t / beta)) / a**2
    return Bound(
        t * m_np,
        "Arbas Thm 7.1.3",
        f"t m_NP(gamma/9, beta/2t), t = {t}, gamma = {gamma:.3g}",
        "explicit masking radius; empirical learner m_NP = k(d(d+1) + 2 ln(2t/b))/a^2",
    )


def agnostic_n(
    epsilon: float,
    delta: float,
    alpha: float,
    beta: float,
    list_size: int,
    m: int,
    C: float = 3.0,
) -> Bound:
    """Afzali–Ashtiani–Liaw 2025, Thm 4 with the explicit parameters of Alg. 2 (spec B.3, fixes
    9–10): α' = α/(9 + 4C), R = ⌈log2(1/α')⌉ binary-search rounds, ε' = ε/(1 + R),
    δ' = δ/(1 + R), β' = βε'/(7680 ln(9830400 L/(ε'³βδ')) R), m1 = m + ln(L/β')/α'²,
    T = max{(640/ε') ln(1280 L/(β'δ'ε'²)), (20/ε') ln(1 + (e^ε' − 1)/(2δ')), 5000 ln(1/β')}
    blocks; n = T·m1."""
    _check(epsilon=epsilon, delta=delta, alpha=alpha, beta=beta, list_size=list_size, m=m)
    a1 = alpha / (9 + 4 * C)
    rounds = math.ceil(math.log2(1 / a1))
    e1, d1 = epsilon / (1 + rounds), delta / (1 + rounds)
    L = float(list_size)
    b1 = beta * e1 / (7680 * math.log(9830400 * L / (e1**3 * beta * d1)) * rounds)
    m1 = m + math.log(L / b1) / a1**2
    T = max(
        (640 / e1) * math.log(1280 * L / (b1 * d1 * e1**2)),
        (20 / e1) * math.log1p(math.expm1(e1) / (2 * d1)),
        5000 * math.log(1 / b1) / 0.91**2,
    )
    return Bound(
        math.ceil(T) * m1,
        "Afzali-Ashtiani-Liaw Thm 4",
        f"T m1, T = {math.ceil(T)}, m1 = {m1:.3g}",
        "explicit constants of Alg. 2 (with the spec's fixes)",
    )


def smallest_n(ok: Callable[[int], bool], *, start: int = 2, limit: float = 2.0**40,
               rel: float = 0.01) -> float:
    """The smallest n ≥ ``start`` (to within a factor 1 + ``rel``, rounded up) for which
    ``ok(n)`` holds, ``ok`` being monotone in n; ``inf`` when it fails up to ``limit``."""
    lo, hi = start, start
    while not ok(hi):
        if hi > limit:
            return math.inf
        lo, hi = hi, hi * 2
    if hi == start:
        return float(start)
    while hi > lo * (1.0 + rel) and hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if ok(mid) else (mid, hi)
    return float(hi)
