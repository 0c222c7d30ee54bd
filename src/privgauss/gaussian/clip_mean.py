"""Clip-and-noise mean estimation (folklore; Bie–Kamath–Singhal Lemma 3.2(1), spec E5).

Rows are projected onto the ball B(center, radius), averaged, and released with the Gaussian
mechanism (ρ-zCDP or (ε, δ)-DP, L2 sensitivity 2r/n) or the Laplace mechanism (ε-DP, L1
sensitivity 2r√d/n). Neighbours: replace one row, n public. ``center`` and ``radius`` must be
public (or DP outputs) — never computed from X.
"""

from __future__ import annotations

import numpy as np

from ..accounting import Accountant, ApproxDP, Budget, PureDP
from ..linalg import clip_rows
from ..mechanisms import gaussian_mechanism, laplace_mechanism
from ..noise import RandomState
from ..sensitivity import clipped_mean_l1, clipped_mean_l2


def clip_mean(
    X: np.ndarray,
    center: np.ndarray,
    radius: float,
    budget: Budget,
    *,
    accountant: Accountant,
    noise: RandomState = None,
    step: str = "clip-mean",
) -> np.ndarray:
    """Private mean of the rows of ``X`` clipped to B(center, radius)."""
    n, d = X.shape
    clipped, _ = clip_rows(X, center, radius)
    mean = clipped.mean(axis=0)
    if isinstance(budget, PureDP) or (isinstance(budget, ApproxDP) and budget.delta == 0):
        return laplace_mechanism(
            mean,
            clipped_mean_l1(radius, n, d),
            budget,
            accountant=accountant,
            noise=noise,
            step=step,
        )
    return gaussian_mechanism(
        mean, clipped_mean_l2(radius, n), budget, accountant=accountant, noise=noise, step=step
    )
