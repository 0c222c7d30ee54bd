"""A ball search on a public uniform subsample, run with the amplified budget.

Balle, Barthe and Gaboardi, *Privacy Amplification by Subsampling* (NeurIPS 2018), Thm 9, for
sampling without replacement under substitution (replace-one) neighbours with n public: a
mechanism that is (ε′, δ′)-DP on a fraction γ of the rows, drawn with public randomness, is
(ln(1 + γ(e^{ε′} − 1)), γδ′)-DP on the whole (:func:`~privgauss.privacy.amplified_budget`).
:func:`subsampled_call` runs one_cluster / terrific_ball that way inside a prepaid entry of its
caller's accountant; :func:`search_is_meaningful` is a public check before such a call.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from ..mechanisms import Release
from ..privacy import (
    Accountant,
    ApproxDP,
    LedgerEntry,
    amplified_budget,
)
from . import one_cluster as one_cluster_module
from . import terrific_ball as terrific_ball_module
from .one_cluster import Ball, BallSearch, search_floor

__all__ = ["search_is_meaningful", "subsampled_call"]


def subsampled_call(
    fn: Callable[..., Ball | None],
    rows: np.ndarray,
    t: int,
    budget: ApproxDP,
    *,
    search: BallSearch,
    release: Release,
    paid_by: LedgerEntry | None = None,
    name: str = "",
    **kwargs: Any,
) -> Ball | None:
    """Run ``fn(rows, t, budget, search=..., release=..., **kwargs)`` (one_cluster /
    terrific_ball, both replace-one with n public) on at most ``search.max_points`` rows drawn
    uniformly with ``release.rng``, with the amplified budget and t scaled by the sampling rate;
    ``budget``-DP for ``rows`` (which the caller has already charged: ``paid_by``, an entry of
    ``release.accountant``). The inner call charges an accountant of the amplified total whose
    entries are kept in ``paid_by.parts`` (:meth:`~privgauss.privacy.Accountant.prepaid`, steps
    prefixed with ``name``, then ``release.step``); without ``paid_by`` (a direct call) it
    charges a fresh accountant of that total."""
    m = rows.shape[0]
    max_points = search.max_points
    if m > max_points:
        rate = max_points / m
        inner = amplified_budget(budget, rate)
        rows = rows[np.sort(release.rng.choice(m, size=max_points, replace=False))]
        t = max(1, int(round(t * rate)))
    else:
        inner = budget
    acct = (Accountant(inner) if paid_by is None
            else release.accountant.prepaid(paid_by, inner, name))
    return fn(rows, t, budget=inner, search=replace(search, max_points=rows.shape[0] + 1),
              release=Release(acct, release.noise, release.step), **kwargs)


def search_is_meaningful(
    kind: str, budget: ApproxDP, m: int, t: int, n_radii: int, beta: float, max_points: int
) -> bool:
    """Whether a subsampled one_cluster / terrific_ball call can be meaningful: t·γ > Γ (else
    its AboveThreshold threshold t·γ − Γ is negative and the first radius passes whatever the
    data). A public function of (budget, m, t, T, β, max_points): skipping a call when it is
    False is post-processing of public values (its budget is charged all the same)."""
    rate = min(1.0, max_points / max(m, 1))
    inner = amplified_budget(budget, rate)
    if math.isinf(inner.epsilon):
        return True
    search = terrific_ball_module if kind == "terrific" else one_cluster_module
    dims = (1,) * len(search.KINDS)
    gamma, _ = search_floor(inner, search.KINDS, search.DEFAULT_SPLIT, dims, n_radii, beta)
    return t * rate > gamma
