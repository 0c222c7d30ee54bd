"""The Private Populous Estimator (PPE): any non-private learner made (ε, δ)-DP.

Arbas (with Ashtiani and Liaw), MSc thesis 2023, Algorithm 1 and Theorem 4.3.1 (spec
``ppe-agnostic.md`` A.4). **Neighbours:** replace one row (n public).

``populous_estimator``: the data are split into t disjoint blocks by a public random
permutation; the learner runs on each block **alone** (see *isolation*); q_i = (1/t)·#{j:
dist(Y_i, Y_j) ≤ r/(2z)} under a semimetric with a z-approximate r_tri-restricted triangle
inequality; Q = mean(q) (L1 sensitivity 2/t) is tested with truncated Laplace noise,
``Q̃ ≥ 0.8 + A_t`` (A_t the noise bound; a pass implies Q ≥ 0.8 deterministically, so some
q_j > 0.6); the first such Y_j is released through a (r, ε, δ)-masking mechanism.
**Guarantee:** (2ε, 4e^ε δ)-DP for *every* learner, t ≥ 5 (Thm 4.3.1). Spec fixes: the masking
radius r and the restriction radius r_tri are separate parameters, r ≤ r_tri is enforced; a
failing learner is replaced by a fixed default output (never dropped); both halves are charged
before the test, so a ⊥ (``EstimationFailed``) leaves the budget spent.

``stable_average``: the practical aggregator of the same shape (our design, after the averaging
of Ashtiani–Liaw 2022 that the thesis mentions): block outputs are vectors u_i ∈ R^p compared in
the Euclidean metric (an exact triangle inequality, z = 1), soft weights
w_i = clip((q_i/t − 0.55)/0.3, 0, 1), and the released value is Σ w_i u_i / Σ w_i plus Gaussian
noise. Privacy proof (PTR): the test passes only if Q̃ ≥ θ + 2/t + A, which needs Q(D) ≥ θ + 2/t,
so whenever either of two neighbours can pass, both have Q ≥ θ. For such pairs
:func:`privgauss.sensitivity.stable_average_l2` bounds ‖ū − ū'‖ by
Δ = (2r/0.3 + 4r)/W_min, W_min = t(θ − 0.55)/0.45 (θ = 0.75), so the analytic Gaussian mechanism
at (ε₂, δ₂) hides it; pairs where neither can pass output ⊥ with probability 1. By composition
the release is (ε₁ + ε₂, δ₁ + δ₂)-DP (ε₁, δ₁ for the test).

*Isolation* (spec A.9: nothing may be shared between blocks). The learner receives one block and
one integer seed derived from public randomness, nothing else. ``isolation="copy"`` (default)
gives every block a fresh ``copy.deepcopy`` of the learner (objects, bound methods and
``functools.partial`` are copied with their state) and **rejects closures** (their cells are
shared and cannot be copied); module-level state can still leak in this mode, so
``isolation="process"`` runs each block in its own forked process (state written by one block
is lost when its process exits), at a cost of a fork per block.
"""

from __future__ import annotations

import copy
import inspect
import math
import multiprocessing
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..exceptions import EstimationFailed, PrivacyBudgetError
from ..mechanisms import (
    Release,
    gaussian_sigma,
    truncated_laplace_bound,
    truncated_laplace_mechanism,
)
from ..noise import NoiseSource
from ..privacy import ApproxDP
from ..progress import bar
from ..sensitivity import ppe_score_mean, stable_average_l2

__all__ = [
    "Semimetric",
    "StableAverage",
    "check_learner",
    "populous_estimator",
    "populous_parts",
    "ppe_aggregate",
    "ppe_blocks",
    "ppe_halves",
    "ppe_spends_all",
    "run_blocks",
    "stable_average",
]

_PASS = 0.8  # PPE test threshold (Alg. 1)
_SELECT = 0.6  # PPE selection: any index with q_j > 0.6
# stable average: weight ramp and safety floor (public constants)
SA_LOW, SA_HIGH, SA_FLOOR = 0.55, 0.85, 0.75


@dataclass(frozen=True)
class Semimetric:
    """A semimetric with a z-approximate r_tri-restricted triangle inequality (Def. 4.1.1):
    dist(a, b), dist(b, c) ≤ r_tri ⇒ dist(a, c) ≤ z (dist(a, b) + dist(b, c))."""

    dist: Callable[[Any, Any], float]
    z: float = 1.5
    r_tri: float = 1.0
    name: str = "dist"
    pairwise: Callable[[Sequence[Any]], np.ndarray] | None = None  # optional vectorised t × t


def ppe_blocks(epsilon: float, delta: float) -> int:
    """t = max{5, ⌈(20/ε) ln(1 + (e^ε − 1)/(2δ))⌉} (Thm 7.1.3): the TLap bound is ≤ 0.1."""
    return max(5, math.ceil(10 * truncated_laplace_bound(2.0, epsilon, delta)))


def populous_parts(half: ApproxDP, step: str = "ppe") -> dict[str, ApproxDP]:
    """The two charges of Algorithm 1's lines 2–7 for a mask of budget ``half`` = (ε, δ), in
    order and named as the ledger records them: the masking (ε, 4e^ε δ − δ) and the test
    (ε, δ); together (2ε, 4e^ε δ)."""
    eps, delta = half.epsilon, half.delta
    return {f"{step}-mask": ApproxDP(eps, 4 * math.exp(eps) * delta - delta),
            f"{step}-test": ApproxDP(eps, delta)}


#: the largest per-half ε PPE uses. Its δ' = δ/(4e^ε) leaves floating point near ε = 700 (and
#: the truncated Laplace bound's e^ε/δ' before), while its block count t (:func:`ppe_blocks`)
#: is already within 1 of its limit 40 at ε = 300 and the masking's Laplace scale ~1/ε is
#: negligible: a larger budget is left unspent (PPE is then (600, 4e^300·δ')-DP, within it)
PPE_MAX_HALF_EPSILON = 300.0


def ppe_halves(budget: ApproxDP) -> tuple[float, float]:
    """The per-half (ε, δ) of PPE for a total budget: PPE is (2ε, 4e^ε δ)-DP. Above a total
    ε of 2·``PPE_MAX_HALF_EPSILON`` the halves stay at that ε (and their δ at δ/(4e^ε)): the
    rest of the budget is not spent (:func:`ppe_spends_all`)."""
    eps = min(budget.epsilon / 2, PPE_MAX_HALF_EPSILON)
    return eps, budget.delta / (4 * math.exp(eps))


def ppe_spends_all(budget: ApproxDP) -> bool:
    """Whether PPE's two halves compose to the whole ``budget`` (public): below the cap of
    :func:`ppe_halves`; above it they compose to less, and a plan says "within"."""
    return budget.epsilon / 2 <= PPE_MAX_HALF_EPSILON


# ------------------------------------------------------------------------------ isolation


def check_learner(learner: Any, isolation: str) -> None:
    """Refuse learners that could carry state between blocks in ``isolation`` mode."""
    if isolation not in ("copy", "process"):
        raise ValueError("isolation must be 'copy' or 'process'")
    if not callable(learner):
        raise TypeError("learner must be callable as learner(block, seed)")
    if isolation == "copy" and inspect.isfunction(learner) and learner.__closure__:
        raise TypeError(
            "the learner is a closure: its captured variables would be shared by all blocks. "
            "Pass a module-level function, functools.partial(function, ...) or an object with "
            "__call__ (copied for every block), or use isolation='process'"
        )


def _call_learner(args: tuple[Any, np.ndarray, int]) -> tuple[bool, Any]:
    learner, block, seed = args
    try:
        # a block's warnings (e.g. scikit-learn's ConvergenceWarning) depend on its rows:
        # captured here and dropped, never re-emitted (DESIGN.md, privacy rule 10)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return True, learner(block, seed)
    except Exception:  # a failing learner is replaced by the default output (never dropped)
        return False, None


def run_blocks(
    X: np.ndarray,
    learner: Any,
    t: int,
    noise: NoiseSource,
    *,
    isolation: str = "copy",
    progress: bool = False,
) -> tuple[list[Any], list[bool]]:
    """Run ``learner(block, seed)`` on t disjoint blocks of ⌊n/t⌋ rows chosen by a public
    permutation; seeds come from public randomness. Returns (outputs, ok flags)."""
    check_learner(learner, isolation)
    n = X.shape[0]
    s = n // t
    perm = noise.rng.permutation(n)  # public randomness, drawn before anything else
    seeds = np.random.SeedSequence(int(noise.rng.integers(2**63))).generate_state(t, np.uint32)
    tasks = [(learner, X[perm[i * s : (i + 1) * s]], int(seeds[i])) for i in range(t)]
    if isolation == "process":
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(processes=1, maxtasksperchild=1) as pool:
            results = pool.map(_call_learner, tasks, chunksize=1)
    else:
        results = [
            _call_learner((copy.deepcopy(lrn), blk, sd))
            for lrn, blk, sd in bar(tasks, "PPE blocks", force=progress)
        ]
    return [r[1] for r in results], [r[0] for r in results]


# ------------------------------------------------------------------------------ Algorithm 1


def populous_estimator(
    X: np.ndarray,
    learner: Any,
    semimetric: Semimetric,
    mask: Any,
    *,
    default: Any,
    release: Release,
    n_blocks: int | None = None,
    isolation: str = "copy",
    validate: Callable[[Any], bool] | None = None,
    progress: bool = False,
) -> tuple[Any, dict[str, Any]]:
    """Thesis Algorithm 1. ``mask`` has ``radius`` (r), ``budget`` (the per-half (ε, δ) it
    certifies at r) and ``release(Y, noise)``. Charges (2ε, 4e^ε δ) in total — (ε, δ) to the
    truncated Laplace test and (ε, 4e^ε δ − δ) to the masked release — before any noise, and
    raises :class:`EstimationFailed` (⊥) when the test fails. ``default`` replaces a learner
    output that raised or fails ``validate``. Charged to ``release`` (step "ppe" unless it names
    one). Returns (masked output, public info)."""
    half: ApproxDP = mask.budget
    eps, delta = half.epsilon, half.delta
    r = float(mask.radius)
    if not (0 < r <= semimetric.r_tri):
        raise ValueError("the masking radius must lie in (0, r_tri]: the proof needs r <= r_tri")
    t = ppe_blocks(eps, delta) if n_blocks is None else int(n_blocks)
    n = X.shape[0]
    if t < 5:
        raise ValueError("PPE needs t >= 5 blocks (Thm 4.3.1)")
    if n < t:
        raise ValueError(f"PPE needs at least one row per block: n >= t = {t}, got n = {n}")
    rel = release.named("ppe")
    if not rel.accountant.can_spend(ApproxDP(2 * eps, 4 * math.exp(eps) * delta)):
        raise PrivacyBudgetError("the PPE budget (2 eps, 4 e^eps delta) exceeds the accountant's")
    Ys, ok = run_blocks(X, learner, t, rel.noise, isolation=isolation, progress=progress)
    Ys = [
        y if good and (validate is None or validate(y)) else default
        for y, good in zip(Ys, ok, strict=True)
    ]
    out = ppe_aggregate(Ys, semimetric, mask, release=rel)
    return out, {"t": t, "block_size": n // t, "radius": r}


def _closeness(Ys: Sequence[Any], semimetric: Semimetric, thr: float) -> np.ndarray:
    t = len(Ys)
    if semimetric.pairwise is not None:
        D = np.asarray(semimetric.pairwise(Ys), dtype=float)
        close = np.nan_to_num(D, nan=math.inf) <= thr
    else:
        close = np.zeros((t, t), dtype=bool)
        for i in range(t):
            for j in range(i + 1, t):
                try:
                    dij = float(semimetric.dist(Ys[i], Ys[j]))
                except Exception:
                    dij = math.inf
                close[i, j] = close[j, i] = dij <= thr
    np.fill_diagonal(close, True)
    return close


def ppe_aggregate(
    Ys: Sequence[Any],
    semimetric: Semimetric,
    mask: Any,
    *,
    release: Release,
) -> Any:
    """Lines 2–7 of Algorithm 1 on the t block outputs (in block order): (2ε, 4e^ε δ)-DP with
    respect to replacing one block output, hence to replacing one row of the data. Charged to
    ``release`` (steps "ppe-mask" and "ppe-test" unless it names another prefix)."""
    half: ApproxDP = mask.budget
    eps, delta = half.epsilon, half.delta
    r = float(mask.radius)
    t = len(Ys)
    if t < 5:
        raise ValueError("PPE needs t >= 5 blocks (Thm 4.3.1)")
    accountant, src, step = release.accountant, release.noise, release.named("ppe").step
    q = _closeness(Ys, semimetric, r / (2 * semimetric.z)).sum(axis=1) / t
    Q = float(q.mean())
    accountant.spend(
        populous_parts(half, step)[f"{step}-mask"],
        step=f"{step}-mask",
        mechanism="masking",
        note=f"radius={r:.6g}",
    )
    sens = ppe_score_mean(t)
    noisy = float(
        truncated_laplace_mechanism(
            Q, sens, ApproxDP(eps, delta), accountant=accountant, noise=src, step=f"{step}-test"
        )
    )
    if noisy < _PASS + truncated_laplace_bound(sens, eps, delta):
        raise EstimationFailed(
            f"PPE stability test failed: fewer than 80% of the {t} block outputs agree within "
            f"r/(2z) = {r / (2 * semimetric.z):.3g}; a more accurate learner (more rows per "
            "block) is needed",
            step=f"{step}-test",
        )
    j = int(np.flatnonzero(q > _SELECT)[0])  # exists: a pass implies Q >= 0.8
    return mask.release(Ys[j], src)


# ------------------------------------------------------------------------------ stable average


@dataclass(frozen=True)
class StableAverage:
    """Output of :func:`stable_average` (DP) with public calibration facts."""

    value: np.ndarray
    sigma: float
    sensitivity: float
    threshold: float


def stable_average(
    U: np.ndarray,
    radius: float,
    test_budget: ApproxDP,
    noise_budget: ApproxDP,
    *,
    release: Release,
) -> StableAverage:
    """The noisy weighted average of the t rows of ``U`` (block outputs) that agree within
    ``radius`` (Euclidean), behind a truncated-Laplace stability test; see the module docstring
    for the proof. (ε₁ + ε₂, δ₁ + δ₂)-DP w.r.t. replacing one row of ``U`` (one block), both
    halves charged before the test. Raises :class:`EstimationFailed` (⊥) on a failed test.
    Charged to ``release`` (steps "stable-average-noise", "-test" unless it names a prefix)."""
    accountant, step = release.accountant, release.named("stable-average").step
    U = np.asarray(U, dtype=np.float64)
    t, p = U.shape
    sens_q = ppe_score_mean(t)
    bound = truncated_laplace_bound(sens_q, test_budget.epsilon, test_budget.delta)
    threshold = SA_FLOOR + sens_q + bound
    # the relation is computed up to float rounding: calibrate for a hair more than r
    delta_l2 = stable_average_l2(radius * (1 + 1e-9), t, SA_LOW, SA_HIGH, SA_FLOOR)
    if threshold >= 1.0:
        need = math.ceil(
            (2 + 2 * math.log1p(math.expm1(test_budget.epsilon) / (2 * test_budget.delta))
             / test_budget.epsilon) / (1 - SA_FLOOR)
        )
        raise ValueError(
            f"stable averaging needs at least {need} blocks for this test budget (got {t})"
        )
    if not accountant.can_spend(ApproxDP(test_budget.epsilon + noise_budget.epsilon,
                                         test_budget.delta + noise_budget.delta)):
        raise PrivacyBudgetError("the stable-average budget does not fit the accountant")
    src = release.noise
    close = _close_pairs(U, radius)
    q = close.sum(axis=1) / t
    Q = float(q.mean())
    sigma = gaussian_sigma(delta_l2, noise_budget)
    # both halves are charged before the test: a failure (⊥) leaves the budget spent
    accountant.spend(
        noise_budget, step=f"{step}-noise", mechanism="gaussian", sensitivity=delta_l2,
        noise_scale=sigma,
    )
    noisy = float(
        truncated_laplace_mechanism(
            Q, sens_q, test_budget, accountant=accountant, noise=src, step=f"{step}-test"
        )
    )
    if noisy < threshold:
        raise EstimationFailed(
            f"stability test failed: fewer than ~{SA_FLOOR:.0%} of the {t} block outputs agree "
            "within the public radius; more rows per block are needed, or, when the rows hold "
            "gross errors or heavy tails, this subsample-and-aggregate method cannot work at "
            "any budget (a block with one such row disagrees: with a share p of them and b "
            "rows per block only about (1 - p)^b of the blocks agree; more rows per block make "
            "it worse): use a method that clips instead (method='auto')",
            step=f"{step}-test",
        )
    w = np.clip((q - SA_LOW) / (SA_HIGH - SA_LOW), 0.0, 1.0)
    keep = w > 0
    avg = (w[keep, None] * U[keep]).sum(axis=0) / w[keep].sum()
    return StableAverage(src.gaussian(avg, sigma), sigma, delta_l2, threshold)


def _close_pairs(U: np.ndarray, radius: float) -> np.ndarray:
    """close[i, j] = ‖u_i − u_j‖ ≤ radius (rows with NaN/inf are close to themselves only).
    A Gram-matrix screen on rows centred at their median, with the pairs near the threshold
    recomputed exactly, so the relation is the true one up to float rounding."""
    t = U.shape[0]
    ok = np.isfinite(U).all(axis=1)
    close = np.zeros((t, t), dtype=bool)
    idx = np.flatnonzero(ok)
    if idx.size:
        V = U[idx] - np.median(U[idx], axis=0)
        sq = np.einsum("ij,ij->i", V, V)
        r2 = radius**2
        D2 = V @ V.T  # in place: t × t temporaries dominate the cost
        D2 *= -2.0
        D2 += sq[:, None]
        D2 += sq[None, :]
        D2 -= r2
        sub = D2 <= 0
        np.abs(D2, out=D2)  # rounding band |D2| <= 1e-7 (sq_i + sq_j + r²): recompute exactly
        D2 -= 1e-7 * sq[:, None]
        D2 -= 1e-7 * sq[None, :]
        a, b = np.nonzero(D2 <= 1e-7 * r2)
        diff = V[a] - V[b]
        sub[a, b] = np.einsum("ij,ij->i", diff, diff) <= r2
        close[np.ix_(idx, idx)] = sub
    np.fill_diagonal(close, True)
    return close
