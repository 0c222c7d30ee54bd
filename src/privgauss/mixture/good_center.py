"""GoodCenter of the private 1-cluster: a heavy box of a randomly rotated, randomly shifted grid
of boxes, then two noisy averages of the rows near it.

Nissim–Stemmer (2018) / Nissim–Stemmer–Vadhan (2016) as simplified for KSSU19 (App. B, Alg. 5;
spec §3.8, §5.2 practical version). **Neighbours:** replace one row; n is public.
**Guarantee:** :func:`good_center` is (ε_H + ε_M + ε_F, δ)-DP for an ``ApproxDP`` split and pure
ε-DP for a ``PureDP`` split with a public ``center_box``: steps 2–4 of the derivation in
:mod:`.one_cluster` (stability histogram or exponential mechanism over the boxes, joint
(sum, count) releases). The rotation and offset are public randomness.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import sensitivity
from ..backends import as_rows
from ..linalg import clip_rows
from ..mechanisms import (
    Release,
    exponential_mechanism,
    gaussian_mechanism,
    gaussian_sigma,
    laplace_mechanism,
    stability_histogram,
)
from ..privacy import (
    Budget,
    is_pure,
    pure_epsilon,
)

__all__ = ["check_box", "good_center"]

_KEY_LIMIT = float(2**62)  # box keys saturate here (only reached for absurd scales)


# ----------------------------------------------------------------------------------------------
# GoodCenter
# ----------------------------------------------------------------------------------------------


def _random_rotation(d: int, rng: np.random.Generator) -> np.ndarray:
    A = rng.standard_normal((d, d))
    Q, R = np.linalg.qr(A)
    return Q * np.where(np.diag(R) < 0, -1.0, 1.0)


def _keys(Y: np.ndarray, offset: np.ndarray, width: float) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        z = np.floor((Y - offset) / width)
        return np.clip(z, -_KEY_LIMIT, _KEY_LIMIT).astype(np.int64)


def check_box(center_box: Any, d: int) -> tuple[np.ndarray, np.ndarray]:
    try:
        lo, hi = center_box
    except (TypeError, ValueError):
        raise ValueError("center_box must be a pair (lo, hi) of scalars or d-vectors") from None
    lo = np.broadcast_to(np.asarray(lo, dtype=np.float64), (d,)).copy()
    hi = np.broadcast_to(np.asarray(hi, dtype=np.float64), (d,)).copy()
    if not (np.isfinite(lo).all() and np.isfinite(hi).all() and (lo <= hi).all()):
        raise ValueError("center_box needs finite bounds with lo <= hi")
    return lo, hi


def _noisy_set_mean(
    rows: np.ndarray,
    anchor: np.ndarray,
    rho: float,
    budget: Budget,
    *,
    release: Release,
) -> tuple[np.ndarray | None, float]:
    """Joint (sum, κ·count) release of ``rows`` clipped to B(anchor, rho); returns the noisy
    mean (None if the noisy count is below max(2, 3 sd)) and the per-coordinate noise sd of
    the mean (public: noise scale over the released count)."""
    d = anchor.shape[0]
    if rows.shape[0]:
        clipped, _ = clip_rows(rows, anchor, rho)
        total = (clipped - anchor).sum(axis=0)
    else:
        total = np.zeros(d)
    if is_pure(budget):
        sens, kappa = sensitivity.joint_sum_count(rho, d, "l1")
        value = np.append(total, kappa * rows.shape[0])
        eps = pure_epsilon(budget, "step")
        sd = 0.0 if math.isinf(eps) else math.sqrt(2.0) * sens / eps
        released = laplace_mechanism(
            value, sens, budget, accountant=release.accountant, noise=release.noise,
            step=release.step,
        )
    else:
        sens, kappa = sensitivity.joint_sum_count(rho, d, "l2")
        value = np.append(total, kappa * rows.shape[0])
        sd = gaussian_sigma(sens, budget)
        released = gaussian_mechanism(
            value,
            sens,
            budget,
            accountant=release.accountant,
            noise=release.noise,
            step=release.step,
        )
    n_hat = float(released[-1]) / kappa if kappa > 0 else 0.0
    if not n_hat >= max(2.0, 3.0 * sd / kappa if kappa > 0 else 2.0):
        return None, math.inf
    return anchor + released[:-1] / n_hat, sd / n_hat


def _uniform_empty_box(
    nonempty: np.ndarray, key_lo: np.ndarray, key_hi: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """A uniformly random key in [key_lo, key_hi] that is not a row of ``nonempty``."""
    taken = {tuple(int(v) for v in row) for row in nonempty}
    sizes = key_hi - key_lo + 1
    log_total = float(np.sum(np.log(sizes.astype(np.float64))))
    if log_total <= math.log(2.0 * len(taken)) + 1e-9:  # few boxes: enumerate them
        grid = np.indices(tuple(int(s) for s in sizes)).reshape(len(sizes), -1).T + key_lo
        free = [g for g in grid if tuple(int(v) for v in g) not in taken]
        return free[int(rng.integers(len(free)))]
    while True:  # at least half the boxes are empty: expected <= 2 draws
        key = key_lo + np.array([int(rng.integers(int(s))) for s in sizes], dtype=np.int64)
        if tuple(int(v) for v in key) not in taken:
            return key


def _exponential_box(
    keys: np.ndarray,
    key_lo: np.ndarray,
    key_hi: np.ndarray,
    budget: Budget,
    *,
    release: Release,
) -> np.ndarray:
    """Exponential mechanism (utility = count, sensitivity 1) over all boxes in the public key
    range; the empty boxes enter as one candidate of weight (number of empty boxes)."""
    eps = pure_epsilon(budget, "step")
    boxes, counts = np.unique(keys, axis=0, return_counts=True)
    sizes = (key_hi - key_lo + 1).astype(np.float64)
    log_total = float(np.sum(np.log(sizes)))
    if log_total < 40.0:
        n_empty = math.prod(int(s) for s in sizes) - boxes.shape[0]
        log_empty = math.log(n_empty) if n_empty > 0 else None
    else:
        log_empty = log_total + math.log1p(-math.exp(math.log(boxes.shape[0]) - log_total))
    utilities = counts.astype(np.float64)
    if log_empty is not None:
        scale = 0.0 if math.isinf(eps) else 2.0 * sensitivity.count() / eps
        utilities = np.append(utilities, scale * log_empty)
    choice = exponential_mechanism(
        utilities, sensitivity.count(), budget, accountant=release.accountant,
        noise=release.noise, step=release.step,
    )
    if choice < boxes.shape[0]:
        return boxes[choice]
    return _uniform_empty_box(boxes, key_lo, key_hi, release.rng)


def good_center(
    X: Any,
    radius: float,
    box_budget: Budget,
    mean_budget: Budget,
    refine_budget: Budget,
    *,
    box_factor: float = 2.0,
    center_box: Any = None,
    release: Release,
) -> np.ndarray | None:
    """A private centre near a cluster of radius ``radius`` (public or released): heavy box of a
    randomly rotated and shifted grid of side box_factor·radius, then a noisy mean of its rows,
    then a noisy mean of the rows near that (steps 2–4 of the module docstring).

    DP under replace-one with n public: box_budget, mean_budget and refine_budget compose.
    ``box_budget`` is (ε, δ>0) (stability histogram) or pure ε (exponential mechanism; needs
    ``center_box``); the mean budgets are ZCDP / (ε, δ>0) (Gaussian) or pure ε (Laplace).
    Returns None (⊥) when no box is released or a noisy count is too small; the caller charges
    any unused budget. Charged to ``release`` (step "good-center" unless it names one)."""
    rel = release.named("good-center")
    data = as_rows(X)
    n, d = data.shape
    radius = float(radius)
    if not (math.isfinite(radius) and radius > 0):
        raise ValueError("radius must be finite and > 0")
    pure_box = is_pure(box_budget)
    if pure_box and center_box is None:
        raise ValueError("a pure-DP box choice needs a public center_box (lo, hi)")
    width = float(box_factor) * radius
    if not (math.isfinite(width) and width > 0):
        raise ValueError("box_factor must be finite and > 0")

    Q = _random_rotation(d, rel.rng)  # public randomness, independent of the data
    offset = rel.rng.uniform(0.0, width, size=d)
    if center_box is not None:
        lo, hi = check_box(center_box, d)
        data = np.clip(data, lo, hi)  # a per-row map: privacy-neutral
    Y = data @ Q
    keys = _keys(Y, offset, width)

    if pure_box:
        mid, half = (lo + hi) / 2.0 @ Q, (hi - lo) / 2.0 @ np.abs(Q)
        key_lo = _keys((mid - half)[None, :], offset, width)[0]
        key_hi = _keys((mid + half)[None, :], offset, width)[0]
        keys = np.clip(keys, key_lo, key_hi)  # rounding guard: still a per-row map
        chosen = _exponential_box(
            keys,
            key_lo,
            key_hi,
            box_budget,
            release=rel.at("box"),
        )
    else:
        released = stability_histogram(
            keys,
            box_budget,
            accountant=rel.accountant,
            noise=rel.noise,
            step=rel.name("box"),
        )
        if not released:
            return None
        best = max(released.values())
        chosen = np.array(min(k for k, v in released.items() if v == best), dtype=np.int64)

    box_center = offset + (chosen.astype(np.float64) + 0.5) * width
    in_box = np.all(keys == chosen, axis=1)
    rho1 = width * math.sqrt(d) / 2.0
    p1, sd1 = _noisy_set_mean(
        Y[in_box],
        box_center,
        rho1,
        mean_budget,
        release=rel.at("box-mean"),
    )
    if p1 is None:
        return None
    rho2 = 2.0 * radius + 2.0 * math.sqrt(d) * sd1
    near = np.sqrt(np.sum((Y - p1) ** 2, axis=1)) <= rho2
    p2, _ = _noisy_set_mean(
        Y[near],
        p1,
        rho2,
        refine_budget,
        release=rel.at("refine"),
    )
    if p2 is None:
        return None
    return p2 @ Q.T
