"""Clip-and-noise mean estimation (folklore; Bie–Kamath–Singhal Lemma 3.2(1), spec E5).

Rows are projected onto the ball B(center, radius), averaged, and released with the Gaussian
mechanism (ρ-zCDP or (ε, δ)-DP, L2 sensitivity 2r/n) or the Laplace mechanism (ε-DP, L1
sensitivity 2r√d/n). Neighbours: replace one row, n public. ``center`` and ``radius`` must be
public (or DP outputs) — never computed from X. ``X`` may be a validated array (numpy or dask)
or a :class:`~privgauss.clipped_stats.Rows` (rows under a public per-record map), read in one pass.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..clipped_stats import Rows
from ..mechanisms import gaussian_mechanism, laplace_mechanism
from ..noise import RandomState
from ..privacy import Accountant, ApproxDP, Budget, PureDP
from ..sensitivity import clipped_mean_l1, clipped_mean_l2


def clip_mean(
    X: Any,
    center: np.ndarray,
    radius: float,
    budget: Budget,
    *,
    accountant: Accountant,
    noise: RandomState = None,
    step: str = "clip-mean",
) -> np.ndarray:
    """Private mean of the rows of ``X`` clipped to B(center, radius)."""
    rows = X if isinstance(X, Rows) else Rows(X, fast=False)
    n, d = rows.n, rows.d
    mean = rows.clipped_mean(None, None, np.asarray(center, dtype=np.float64), radius)
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
