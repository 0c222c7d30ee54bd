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
from ..mechanisms import Release, gaussian_mechanism, laplace_mechanism
from ..privacy import Budget, is_pure
from ..sensitivity import clipped_mean_l1, clipped_mean_l2
from .clip_diagnostics import MEAN_COUNT_TAIL, note_clip


def clip_mean(
    X: Any,
    center: np.ndarray,
    radius: float,
    budget: Budget,
    *,
    release: Release,
) -> np.ndarray:
    """Private mean of the rows of ``X`` clipped to B(center, radius), charged to ``release``
    (one step: its prefix, or "clip-mean")."""
    rel = release.named("clip-mean")
    rows = X if isinstance(X, Rows) else Rows(X, fast=False)
    n, d = rows.n, rows.d
    mean = rows.clipped_mean(None, None, np.asarray(center, dtype=np.float64), radius)
    # callers' radii cover all but a small tail of Gaussian rows (≤ 1 %, see clip_diagnostics)
    note_clip(rows, None, None, center, radius, "mean", MEAN_COUNT_TAIL)
    if is_pure(budget):
        return laplace_mechanism(mean, clipped_mean_l1(radius, n, d), budget,
                                 accountant=rel.accountant, noise=rel.noise, step=rel.step)
    return gaussian_mechanism(mean, clipped_mean_l2(radius, n), budget,
                              accountant=rel.accountant, noise=rel.noise, step=rel.step)
