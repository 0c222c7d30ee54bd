"""What every CoinPress schedule shares (:mod:`.mean_plan`, :mod:`.cov_plan`): argument checks,
the split of ρ over the steps, and the noise-matched radius a practical step may grow to.

Biswas, Dong, Kamath and Ullman, *CoinPress* (NeurIPS 2020), Alg. 1–2. The split
ρ_i = ρ·f_i gives the last step ``1 − sum(others)``, so the parts sum to ρ exactly: the runners
charge ``ZCDP(ρ_i)`` per step before drawing noise, and the estimators are ρ-zCDP under
**replace-one** neighbours (n public) for any plan. Public quantities only.
"""

from __future__ import annotations

import math
from typing import Any

from ...privacy import check_rho

__all__ = [
    "CONSTANTS",
    "SEARCH",
    "check_beta",
    "check_constants",
    "check_fractions",
    "check_schedule",
    "coinpress_fractions",
    "noise_matched_radius",
    "split_rho",
]

CONSTANTS = ("practical", "theory")
# Practical plans: when a step's noise std σ at its planned radius is below s = √(η/n) (η the
# first constant: 0.1 for second-moment steps, 0.02 for mean steps — at 0.1 the mean steps of
# CoinPress's d = 50, ρ = 0.5 protocol grew at n ≥ 6000 and lost 1-3 % to CoinPress t = 2;
# 1/n the sampling variance per whitened coordinate), the radius grows until the
# noise std is s·(σ/s)^(1 − g) (g the second): almost s, which adds under 10 % to the sampling
# variance, and still vanishing as σ does. As n·ρ grows the radius grows without bound (fewer
# and fewer rows clipped: heavy tails, rare flags and counts are covered) while the noise
# vanishes, so every step converges to the non-private moment of the same rows (DESIGN.md rule
# 15); where the noise is already larger (small n·ρ) the planned radius stands. g = 0.9: at
# ε = 1e4, n = 16,000 a lognormal(σ = 1.5) column's held-out gap to np.cov was 0.24, 0.11 and
# 0.044 nat/row for g = 0.5, 0.75 and 0.9.
NOISE_TO_SAMPLING = {1: 0.02, 2: 0.1}  # by the power of τ the noise grows with: mean, moment
_GROWTH = 0.9
# ... at that pace up to this multiple of the planned radius (about 5,000 standard deviations:
# beyond, rows are mostly gross errors, which the background component describes); past it the
# radius grows as (s/σ)^(0.1/power) only, so it still has no bound (rule 15) while the noise
# falls almost as 1/√ρ again and a huge budget reaches the non-private estimate quickly
_MAX_GROWTH = 1e3
# Practical covariance steps and final mean steps may grow their radius from the data by a DP
# search (:mod:`.radius_search`) when the budget leaves room: at ε = 1e4 the planned radii
# cut a table's few gross-error rows out of np.cov's moment (diamonds: 23 of 43,152 rows,
# held-out gap 10.8 nat/row)
SEARCH = True


def check_constants(constants: str, allowed: tuple[str, ...] = CONSTANTS) -> str:
    if constants not in allowed:
        raise ValueError(f"constants must be one of {allowed}, got {constants!r}")
    return constants


def check_beta(beta: Any, name: str = "beta") -> float:
    b = float(beta)
    if not 0.0 < b < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {b}")
    return b



def check_fractions(fractions: Any, steps: int) -> tuple[float, ...]:
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


def split_rho(rho: float, fractions: tuple[float, ...]) -> tuple[float, ...]:
    """ρ·f_i for all but the last step; the last gets ρ − sum(others) (all ∞ when ρ = ∞)."""
    if math.isinf(rho):
        return tuple(math.inf for _ in fractions)
    head = [rho * f for f in fractions[:-1]]
    return (*head, rho - math.fsum(head))


def coinpress_fractions(t: int) -> tuple[float, ...]:
    """CoinPress's scripts: the last step gets 3/4, the others share 1/4 equally."""
    if t == 1:
        return (1.0,)
    return check_fractions([0.25 / (t - 1)] * (t - 1) + [0.75], t)


def noise_matched_radius(tau: float, sigma: float, n: int, power: int) -> float:
    """The larger of ``tau`` and the radius τ' at which a release whose noise std is ``sigma``
    at ``tau`` and grows as τ^``power`` (1 for a clipped mean, 2 for a clipped second moment)
    has noise std s·(σ/s)^(1 − g), s = √(η/n) (η = :data:`NOISE_TO_SAMPLING` of the power, g =
    :data:`_GROWTH`); past :data:`_MAX_GROWTH`·τ it grows as (s/σ)^(0.1/power) only — a public
    function of (n, ρ) that grows without bound with n·ρ while the noise tends to 0 (see the
    constants' comments)."""
    target = math.sqrt(NOISE_TO_SAMPLING[power] / n)
    if not (0.0 < sigma < target):  # noisier than that (or no noise: an infinite budget)
        return tau
    r = target / sigma
    return tau * min(r ** (_GROWTH / power), _MAX_GROWTH * r ** ((1.0 - _GROWTH) / power))


def check_schedule(n: int, d: int, rho: Any, beta: Any, constants: str, steps: int | None,
                    fractions: Any) -> tuple[float, float, int | None, tuple[float, ...] | None]:
    """The arguments a schedule shares, checked: (ρ, β, steps, validated fractions or None)."""
    check_constants(constants)
    if n < 1 or d < 1:
        raise ValueError("n and d must be >= 1")
    rho = check_rho(rho)
    beta = check_beta(beta)
    if steps is not None and (int(steps) != steps or steps < 1):
        raise ValueError("steps must be a positive integer")
    fr = None
    if fractions is not None:
        fr = check_fractions(fractions, len(fractions) if steps is None else int(steps))
        steps = len(fr)
    return rho, beta, steps, fr
