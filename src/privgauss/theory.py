"""Sample-complexity formulas of the source papers' theorems.

The theorems are stated up to unspecified constants and polylog factors. These functions set every
constant to 1 and every ``polylog(x)`` to ``log(x)``: the numbers are **indicative only** — right
in how they scale with d, α, β and the budget, not in their absolute size. Each returns a
:class:`Bound` naming the theorem it evaluates (Bie–Kamath–Singhal 2022, "full" arXiv numbering).
"""

from __future__ import annotations

import math
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
