"""Rounding-error bounds of float64 and float32 arithmetic: the margins by which the fast
paths of the clipped statistics certify that a row lies inside (or outside) a ball, so that
they select every row the clip-then-sum definition would treat differently."""

from __future__ import annotations

import numpy as np

__all__ = ["EPS32", "EPS64", "gamma", "kappa32"]

EPS64 = float(np.finfo(np.float64).eps)
EPS32 = float(np.finfo(np.float32).eps) / 2  # unit roundoff of float32


def kappa32(d: int) -> float:
    """2·γ_{d+4} in float32: twice the relative rounding bound of a length-d dot product (plus
    the rounding of its inputs and output) — the margin of the float32 norm tiers."""
    return 2.0 * (d + 4) * EPS32 / (1.0 - (d + 4) * EPS32)


def gamma(k: int) -> float:
    """γ_k = kε/(1 − kε): the relative rounding bound of a length-k float64 sum of products."""
    return k * EPS64 / (1.0 - k * EPS64)
