"""Noise calibration: the Gaussian σ and the truncated Laplace bound that make a release of a
given sensitivity private under a given budget — zCDP (Bun–Steinke 2016, Prop. 1.6), the
analytic Gaussian mechanism (Balle–Wang 2018, Thm. 8) and the truncated Laplace mechanism
(Geng, Ding, Guo, Kumar 2020). No accounting and no noise: :mod:`privgauss.mechanisms` charges
and draws with these scales; the functions are public so that tests and plans can check
them exactly."""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import erfcx, log_ndtr

from .exceptions import PrivacyBudgetError
from .privacy import ZCDP, Budget, check_delta, has_delta

__all__ = [
    "analytic_delta",
    "check_sensitivity",
    "gaussian_sigma",
    "gaussian_sigma_analytic",
    "gaussian_sigma_zcdp",
    "truncated_laplace_bound",
]


def check_sensitivity(sensitivity: float) -> float:
    """A sensitivity: a finite number >= 0 (ValueError otherwise)."""
    s = float(sensitivity)
    if not s >= 0 or math.isinf(s):
        raise ValueError("sensitivity must be finite and >= 0")
    return s


def _check_budget_value(name: str, value: float) -> float:
    """A calibration's ε or ρ: a finite number > 0 (budgets are finite, DESIGN rule 12)."""
    v = float(value)
    if not (math.isfinite(v) and v > 0):
        raise PrivacyBudgetError(f"{name} must be a finite number > 0, got {v}")
    return v


def gaussian_sigma_zcdp(sensitivity: float, rho: float) -> float:
    """σ = Δ₂ / √(2ρ) gives ρ-zCDP (Bun–Steinke 2016, Prop. 1.6)."""
    r, s = float(rho), float(sensitivity)
    if not (0.0 < r < math.inf and 0.0 <= s < math.inf):  # the checks' errors (NaN: too)
        r, s = _check_budget_value("rho", rho), check_sensitivity(sensitivity)
    return s / math.sqrt(2.0 * r)


def analytic_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """The δ at which the Gaussian mechanism with noise σ and L2 sensitivity Δ > 0 is
    (ε, δ)-DP (Balle–Wang 2018, Thm. 8): Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ)."""
    a = sensitivity / (2 * sigma)
    b = epsilon * sigma / sensitivity
    if b >= a:
        # e^ε = e^{2ab}, so δ = ½ e^{−(b−a)²/2} [erfcx((b−a)/√2) − erfcx((b+a)/√2)]: a
        # difference of two smooth O(1) terms, far less cancellation than the form below
        r = 1 / math.sqrt(2)
        mills = erfcx((b - a) * r) - erfcx((b + a) * r)
        return max(0.5 * math.exp(-((b - a) ** 2) / 2) * mills, 0.0)
    # Φ(a − b) − e^ε Φ(−a − b), computed in log space to avoid cancellation
    log1 = log_ndtr(a - b)
    log2 = epsilon + log_ndtr(-a - b)
    return math.exp(log1) * -math.expm1(log2 - log1) if log2 < log1 else 0.0


def gaussian_sigma_analytic(sensitivity: float, epsilon: float, delta: float) -> float:
    """Smallest σ for which the Gaussian mechanism is (ε, δ)-DP (Balle–Wang 2018, Thm. 8):
    Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) ≤ δ, found by bisection and rounded up."""
    sensitivity = check_sensitivity(sensitivity)
    epsilon = _check_budget_value("epsilon", epsilon)
    if sensitivity == 0:
        return 0.0
    check_delta(delta, message="the analytic Gaussian mechanism needs 0 < delta < 1")
    lo, hi = sensitivity * 1e-6, sensitivity
    while analytic_delta(hi, sensitivity, epsilon) > delta:
        hi *= 2
    while analytic_delta(lo, sensitivity, epsilon) <= delta:
        lo /= 2
    sigma = brentq(
        lambda s: analytic_delta(s, sensitivity, epsilon) - delta, lo, hi, xtol=1e-15, rtol=1e-14
    )
    # round up, with a margin for the ~1e-11 relative float error of _analytic_delta
    while analytic_delta(sigma, sensitivity, epsilon) > delta * (1 - 1e-10):
        sigma *= 1 + 1e-12
    return sigma


def gaussian_sigma(sensitivity: float, budget: Budget) -> float:
    """Gaussian noise scale for a budget: zCDP calibration or the analytic (ε, δ) one."""
    if isinstance(budget, ZCDP):
        return gaussian_sigma_zcdp(sensitivity, budget.rho)
    if has_delta(budget):
        return gaussian_sigma_analytic(sensitivity, budget.epsilon, budget.delta)
    raise PrivacyBudgetError(
        f"the Gaussian mechanism needs a zCDP or (epsilon, delta>0) budget, got {budget}; "
        "use the Laplace mechanism for pure DP"
    )


def truncated_laplace_bound(sensitivity: float, epsilon: float, delta: float) -> float:
    """Truncation A = (Δ/ε) ln(1 + (e^ε − 1)/(2δ)) of the truncated Laplace mechanism with scale
    Δ/ε, which makes it (ε, δ)-DP (Geng, Ding, Guo, Kumar 2020). Computed in log space where
    (e^ε − 1)/(2δ) overflows, so a huge (finite) ε does not."""
    epsilon = _check_budget_value("epsilon", epsilon)
    if epsilon < 700:
        a = (sensitivity / epsilon) * math.log1p(math.expm1(epsilon) / (2 * delta))
        if math.isfinite(a):
            return a
    # ln(1 + (e^ε − 1)/(2δ)) = logaddexp(0, ln(e^ε − 1) − ln 2δ), ln(e^ε − 1) = ε + ln(1 − e^−ε)
    log_em1 = epsilon + math.log1p(-math.exp(-epsilon))
    return (sensitivity / epsilon) * float(np.logaddexp(0.0, log_em1 - math.log(2 * delta)))
