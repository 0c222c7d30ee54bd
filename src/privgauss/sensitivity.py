"""Sensitivities of the statistics the library releases, derived in one audited place.

Neighbouring datasets differ by **replacing one record** (n is public), unless a function says
otherwise. Every algorithm takes its sensitivity from here; ``tests/test_sensitivity.py`` checks
each formula against brute-force worst cases.
"""

from __future__ import annotations

import math


def _check(radius: float, n: int) -> None:
    if not radius >= 0 or math.isinf(radius):
        raise ValueError("radius must be finite and >= 0")
    if n < 1:
        raise ValueError("n must be >= 1")


def clipped_mean_l2(radius: float, n: int) -> float:
    """L2 sensitivity of the mean of n rows clipped to a ball of ``radius``: 2r/n.

    Replacing x by y moves the sum by y − x, and ‖y − x‖ ≤ 2r inside the ball.
    """
    _check(radius, n)
    return 2.0 * radius / n


def clipped_mean_l1(radius: float, n: int, d: int) -> float:
    """L1 sensitivity of the mean of n rows clipped to an L2 ball of ``radius`` in d dimensions:
    2r√d/n (since ‖v‖₁ ≤ √d ‖v‖₂)."""
    _check(radius, n)
    return 2.0 * radius * math.sqrt(d) / n


def clipped_second_moment_frobenius(radius: float, n: int) -> float:
    """Frobenius sensitivity of (1/n) Σ xxᵀ over rows clipped to norm ``radius``: √2 r²/n.

    ‖xxᵀ − yyᵀ‖_F² = ‖x‖⁴ + ‖y‖⁴ − 2(xᵀy)² ≤ 2r⁴. Adding i.i.d. noise to the upper triangle
    (diagonal included) of a symmetric matrix is at least as private as this sensitivity says,
    because the upper triangle of a symmetric Δ has L2 norm at most ‖Δ‖_F.
    """
    _check(radius, n)
    return math.sqrt(2.0) * radius**2 / n


def clipped_second_moment_upper_l1(radius: float, n: int, d: int) -> float:
    """L1 sensitivity of the upper triangle (diagonal included) of (1/n) Σ xxᵀ, rows clipped to
    norm ``radius``. Per row the upper triangle has L1 norm ≤ Σ_{i≤j}|x_i x_j| ≤ (‖x‖₁² + ‖x‖²)/2
    ≤ (d + 1) r²/2, so a replacement moves it by at most (d + 1) r²/n."""
    _check(radius, n)
    return (d + 1) * radius**2 / n


def count() -> float:
    """A count of records satisfying a predicate changes by at most 1 under replace-one."""
    return 1.0


def histogram_l1() -> float:
    """A histogram's L1 sensitivity under replace-one: one bin loses a record, one gains one."""
    return 2.0


def stability_histogram_threshold(epsilon: float, delta: float) -> float:
    """Release threshold τ of the replace-one stability histogram with Laplace(2/ε) noise.

    Only a bin that is non-empty in one dataset and empty in the other can break ε-DP, and
    replace-one empties at most one bin of each dataset. It has count 1 and is released when
    1 + Z > τ, Z discrete Laplace(2/ε): probability ≤ e^{−(τ−1)ε/2} / (1 + e^{−ε/2}) < δ for
    τ = 1 + (2/ε) ln(1/δ).
    """
    return 1.0 + (2.0 / epsilon) * math.log(1.0 / delta)
