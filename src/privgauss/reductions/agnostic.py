"""Agnostic private density estimation for Gaussian mixtures (spec ``ppe-agnostic.md`` Part B).

**Neighbours:** replace one row (n public). Two routes:

1. :func:`list_stable_reduction` — Afzali, Ashtiani and Liaw (ALT 2025), Algorithms 2–4 with the
   Choosing Mechanism (BNS13/BNSV15): the rows are split into T disjoint blocks by a public
   permutation; each block produces, *alone*, a list of at most L hashable candidates (truncated
   deterministically) and each candidate's TV distance to the block's own minimum-distance
   estimate; a binary search over the radius guess g runs ⌈log2(1/α')⌉ Filter-and-Test rounds
   (truncated Laplace on MAX = the largest number of filtered lists holding one candidate,
   sensitivity 1, threshold 0.8T + R), and the Choosing Mechanism picks a candidate from the
   lists filtered at the smallest accepted radius (spec pitfall B.6). **Guarantee:** (ε, δ)-DP
   for *any* list learner: each round is (ε', δ')-DP, and the Choosing Mechanism is run at
   (ε'/2, δ'/(1 + e^{ε'/2})) internally and charged (ε', δ'): a replaced list is a removal plus
   an addition, and group privacy for a group of 2 turns (ε̃, δ̃) into exactly
   (2ε̃, δ̃(1 + e^ε̃)) (spec B.3; :func:`choosing_run_budget`), so the total is
   (1 + R)(ε', δ') = (ε, δ). Utility is [B]'s
   7C-agnostic bound when T and the block size meet :func:`privgauss.theory.agnostic_n` — an
   astronomically large n; the default list learner (quantised EM fits on a public randomly
   shifted grid, spec P1) is a heuristic.
2. :func:`private_selection` — the practical route P2 (not in [B]): candidates produced
   **privately** on one part of the rows (ε₁, δ₁), one of them chosen on the other part by the
   exponential mechanism with the minimum-distance (Yatracos) score, sensitivity 1 (ε₂).
   **Guarantee:** (ε₁ + ε₂, δ₁)-DP. Accuracy *relative to the candidate set*: with probability
   ≥ 1 − β, d_TV(f̂, g) ≤ 3 min_j d_TV(f_j, g) + 4(Δ_n + Δ_MC) + 4 ln(2M/β)/(n_sel ε₂), where
   Δ_n = √(ln(4M²/β)/(2 n_sel)) bounds the empirical deviation on the M² Yatracos sets and
   Δ_MC the same with the Monte Carlo sample size (Devroye–Lugosi Thm 6.4 + the exponential
   mechanism's utility bound). Never fed candidates fitted non-privately on the same rows.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from scipy.special import logsumexp

from ..exceptions import EstimationFailed, InvalidDataError
from ..linalg import project_psd
from ..mechanisms import exponential_mechanism, truncated_laplace_bound, truncated_laplace_mechanism
from ..metrics import gaussian_logpdf
from ..noise import RandomState, as_noise
from ..privacy import Accountant, ApproxDP, PureDP
from .ppe import run_blocks

__all__ = [
    "FaithfulPlan",
    "Mixture",
    "choosing_mechanism",
    "choosing_run_budget",
    "choosing_threshold",
    "decode",
    "faithful_agnostic",
    "faithful_plan",
    "list_stable_reduction",
    "private_selection",
    "quantised_em_lists",
    "reduction_requirements",
    "yatracos_scores",
]

Mixture = tuple[np.ndarray, np.ndarray, np.ndarray]  # (weights (k,), means (k, d), covs (k, d, d))
_MC = 4000  # Monte Carlo samples per candidate (Yatracos masses, TV)


# ------------------------------------------------------------------------------ densities


def _regular(f: Mixture) -> Mixture:
    """A candidate with every covariance floored to a tiny multiple of its mean eigenvalue, so
    its density exists (a privately produced candidate may be singular; this is post-processing
    of a DP output)."""
    w, M, C = f
    C = np.asarray(C, dtype=np.float64)
    d = C.shape[-1]
    floored = [
        project_psd(c, min_eig=max(1e-9 * float(np.trace(c)) / d, 1e-300)) for c in C
    ]
    return w, M, np.stack(floored) if floored else C


def _logpdf(f: Mixture, X: np.ndarray) -> np.ndarray:
    w, M, C = f
    cols = [
        gaussian_logpdf(X, M[j], C[j]) + (math.log(w[j]) if w[j] > 0 else -math.inf)
        for j in range(len(w))
    ]
    return logsumexp(np.stack(cols, axis=1), axis=1)


def _sample(f: Mixture, m: int, rng: np.random.Generator) -> np.ndarray:
    w, M, C = f
    counts = rng.multinomial(m, np.asarray(w) / np.sum(w))
    return np.concatenate(
        [rng.multivariate_normal(M[j], C[j], size=c) for j, c in enumerate(counts) if c]
    )


def yatracos_scores(
    candidates: Sequence[Mixture], X: np.ndarray, rng: np.random.Generator, n_mc: int = _MC
) -> np.ndarray:
    """Minimum-distance scores S_i = −n max_{j≠l} |P_i(W_jl) − P̂_n(W_jl)| over the Yatracos
    sets W_jl = {f_j > f_l}; P_i by Monte Carlo from f_i (public: candidates are DP outputs).
    Replacing one row moves every count n P̂_n(W) by at most 1: sensitivity 1."""
    candidates = [_regular(f) for f in candidates]
    M = len(candidates)
    n = X.shape[0]
    LX = np.stack([_logpdf(f, X) for f in candidates], axis=1)  # (n, M)
    counts = np.array([[np.count_nonzero(LX[:, j] > LX[:, l]) for l in range(M)]
                       for j in range(M)])
    scores = np.empty(M)
    for i, f in enumerate(candidates):
        S = _sample(f, n_mc, rng)
        LS = np.stack([_logpdf(g, S) for g in candidates], axis=1)
        mass = np.array([[np.mean(LS[:, j] > LS[:, l]) for l in range(M)] for j in range(M)])
        scores[i] = -float(np.max(np.abs(n * mass - counts))) if M > 1 else 0.0
    return scores


# ------------------------------------------------------------------------------ route P2


def private_selection(
    X: np.ndarray,
    producers: Sequence[Callable[..., Mixture]],
    epsilon: float,
    delta: float,
    *,
    accountant: Accountant,
    noise: RandomState = None,
    select_share: float = 0.2,
    select_fraction: float = 0.3,
) -> tuple[Mixture, dict[str, Any]]:
    """Route P2: rows split by a public permutation into D_gen (1 − ``select_fraction``) and
    D_sel. Each producer ``(X_gen, budget, accountant, noise) -> Mixture`` is run on D_gen with
    an equal share of (ε(1 − select_share), δ) and charges what it spends; a producer that fails
    (:class:`EstimationFailed`, a DP output) yields no candidate. The exponential mechanism
    with the Yatracos score picks one candidate on D_sel with ε·select_share."""
    src = as_noise(noise)
    n = X.shape[0]
    perm = src.rng.permutation(n)
    n_sel = int(round(select_fraction * n))
    X_sel, X_gen = X[perm[:n_sel]], X[perm[n_sel:]]
    acct = Accountant(ApproxDP(epsilon, delta), parent=accountant)
    e1 = epsilon * (1 - select_share) / len(producers)
    cands: list[Mixture] = []
    failed = 0
    share = ApproxDP(e1, delta / len(producers))
    for make in producers:
        try:
            cands.append(make(X_gen, share, Accountant(share, parent=acct), src))
        except EstimationFailed:
            failed += 1
    e2 = PureDP(epsilon * select_share)
    # top up what the producers left unused (a failed producer may stop early; zCDP parts
    # convert more tightly here), so the total spend never depends on the data
    left = acct.remaining
    assert left is None or isinstance(left, ApproxDP)  # the remainder of an ApproxDP total
    if left is not None and left.epsilon > e2.epsilon * (1 + 1e-9):
        acct.spend(PureDP((left.epsilon - e2.epsilon) * (1 - 1e-9)), step="producers-unused")
    if not cands:  # every producer returned ⊥ (DP outputs): the selection budget is still spent
        acct.spend(e2, step="private-selection", mechanism="exponential", note="no candidate")
        raise EstimationFailed("every candidate producer failed", step="private-selection")
    scores = yatracos_scores(cands, X_sel, src.rng)
    i = exponential_mechanism(
        scores, 1.0, e2, accountant=acct, noise=src, step="private-selection"
    )
    return _regular(cands[i]), {"n_candidates": len(cands), "n_failed": failed, "n_select": n_sel}


# ------------------------------------------------------------------------------ Choosing


def choosing_run_budget(budget: ApproxDP) -> tuple[float, float]:
    """The add/remove (ε̃, δ̃) the Choosing Mechanism runs at so that, under replace-one, it is
    exactly (ε, δ) = ``budget``-DP. A replaced list is a removal plus an addition: group
    privacy for a group of 2 turns (ε̃, δ̃)-DP into (2ε̃, δ̃ + e^ε̃ δ̃) = (2ε̃, δ̃(1 + e^ε̃))-DP
    (the δ of the first step is carried through the second with factor e^ε̃). So
    ε̃ = ε/2 and δ̃ = δ/(1 + e^{ε/2}) — slightly less than δ/2, which would cost
    (δ/2)(1 + e^{ε/2}) > δ. δ̃ is rounded down so the group cost never exceeds δ in floats."""
    e = budget.epsilon / 2
    d = budget.delta / (1 + math.exp(e))
    while d * (1 + math.exp(e)) > budget.delta:
        d = math.nextafter(d, 0.0)
    return e, d


def choosing_mechanism(
    scores: dict[Hashable, int],
    growth: int,
    budget: ApproxDP,
    beta: float,
    *,
    accountant: Accountant,
    noise: RandomState = None,
    step: str = "choosing",
) -> Hashable:
    """BNSV15 Lemma 3.8 / [B] Thm 13 for a growth-``growth`` score, run at the add/remove
    (ε', δ') = :func:`choosing_run_budget` (``budget``) so that a *replaced* list (removal +
    addition, group privacy 2) costs exactly ``budget`` = (ε, δ), which is charged.
    MAX + Lap(4/ε') must exceed (8/ε') ln(4L/(β ε' δ')); then a candidate of positive score is
    drawn with probability ∝ exp(ε' score/4). Raises :class:`EstimationFailed` (⊥) otherwise."""
    src = as_noise(noise)
    e, d = choosing_run_budget(budget)
    accountant.spend(budget, step=step, mechanism="choosing", sensitivity=1.0,
                     noise_scale=4 / e,
                     note=f"run at ({e:.17g}, {d:.17g}) add/remove: replace-one = group of 2")
    top = max(scores.values(), default=0)
    noisy = float(src.laplace(float(top), 4 / e))
    if noisy <= choosing_threshold(budget.epsilon, budget.delta, growth, beta):
        raise EstimationFailed("no candidate is held by enough lists", step=step)
    keys = [c for c, s in scores.items() if s >= 1]
    i = src.noisy_argmax(np.array([scores[c] for c in keys], dtype=float), 4 / e)
    return keys[i]


# ------------------------------------------------------------------------------ Algorithms 2–4


def _filtered_scores(lists: Sequence[Sequence[tuple[Hashable, float]]], radius: float) -> Counter:
    score: Counter = Counter()
    for lst in lists:
        score.update({c for c, tv in lst if tv <= radius})  # a list counts a candidate once
    return score


class _Params(NamedTuple):
    a1: float  # α' = α/(9 + 4C) (spec fix 9)
    rounds: int  # ⌈log2(1/α')⌉ Filter-and-Test rounds
    e1: float  # ε' = ε/(1 + rounds)
    d1: float  # δ' = δ/(1 + rounds)
    b1: float  # β' of [B] Alg. 2, the Choosing Mechanism's failure probability


def _parameters(epsilon: float, delta: float, alpha: float, beta: float, list_size: int,
                C: float) -> _Params:
    """[B] Alg. 2's public parameters (α', rounds, ε', δ', β')."""
    a1 = alpha / (9 + 4 * C)
    rounds = math.ceil(math.log2(1 / a1))
    e1, d1 = epsilon / (1 + rounds), delta / (1 + rounds)
    b1 = beta * e1 / (7680 * math.log(9830400 * list_size / (e1**3 * beta * d1)) * rounds)
    return _Params(a1, rounds, e1, d1, b1)


def choosing_threshold(epsilon: float, delta: float, growth: int, beta: float) -> float:
    """The Choosing Mechanism's threshold (8/ε̃) ln(4L/(β ε̃ δ̃)) at the (ε̃, δ̃) =
    :func:`choosing_run_budget` it runs at for a charged (ε, δ) (replace-one)."""
    e, d = choosing_run_budget(ApproxDP(epsilon, delta))
    return (8 / e) * math.log(4 * growth / (beta * e * d))


def list_stable_reduction(
    X: np.ndarray,
    list_learner: Any,
    epsilon: float,
    delta: float,
    *,
    n_blocks: int,
    list_size: int,
    alpha: float,
    C: float = 3.0,
    beta: float = 0.1,
    accountant: Accountant,
    noise: RandomState = None,
    progress: bool = False,
) -> tuple[Hashable, dict[str, Any]]:
    """[B] Algorithms 2–4 (see the module docstring). ``list_learner(block, seed)`` returns
    [(candidate, d_TV(candidate, block's MDE winner)), ...]; anything past ``list_size`` items
    is dropped deterministically, as are duplicates. The Choosing Mechanism gets [B]'s β'.
    Returns the chosen candidate and the public facts (T, rounds, the final radius guess)."""
    src = as_noise(noise)
    T = int(n_blocks)
    p = _parameters(epsilon, delta, alpha, beta, list_size, C)
    acct = Accountant(ApproxDP(epsilon, delta), parent=accountant)
    raw, ok = run_blocks(X, list_learner, T, src, progress=progress)
    lists = []
    for lst, good in zip(raw, ok, strict=True):
        seen: dict[Hashable, float] = {}
        for c, tv in (lst if good else [])[: list_size]:
            if c not in seen:
                seen[c] = float(tv)
        lists.append(list(seen.items()))
    lo, hi = 0.0, 1.0
    bound = truncated_laplace_bound(1.0, p.e1, p.d1)
    accepted_radius: float | None = None
    for r in range(p.rounds):
        g = (lo + hi) / 2
        radius = 4 * C * g + 5 * p.a1
        top = max(_filtered_scores(lists, radius).values(), default=0)
        noisy = float(truncated_laplace_mechanism(
            float(top), 1.0, ApproxDP(p.e1, p.d1), accountant=acct, noise=src,
            step=f"filter-and-test-{r}",
        ))
        if noisy < 0.8 * T + bound:
            lo = g
        else:
            hi = g
            accepted_radius = radius
    final = accepted_radius if accepted_radius is not None else 4 * C * hi + 5 * p.a1
    chosen = choosing_mechanism(
        dict(_filtered_scores(lists, final)), list_size, ApproxDP(p.e1, p.d1), p.b1,
        accountant=acct, noise=src,
    )
    return chosen, {"T": T, "rounds": p.rounds, "radius_guess": hi}


# ------------------------------------------------------------------------------ P1 list learner


def _offsets(offset: Any, d: int) -> tuple[float, np.ndarray, np.ndarray]:
    """The public grid shift, one per coordinate (weight, d mean, d(d+1)/2 log-covariance
    entries); a scalar shifts every coordinate alike."""
    o = np.asarray(offset, dtype=np.float64)
    if o.ndim == 0:
        o = np.full(1 + d + d * (d + 1) // 2, float(o))
    return float(o[0]), o[1 : 1 + d], o[1 + d :]


def _quantise(f: Mixture, step: float, offset: Any, w_step: float) -> tuple:
    """Canonical key: components sorted, matrix log of Σ quantised, then the mean whitened by
    the *quantised* Σ, then the weight, on a grid shifted by the public ``offset``."""
    w, M, C = f
    ow, om, oS = _offsets(offset, M.shape[1])
    comps = []
    for j in range(len(w)):
        lam, V = np.linalg.eigh(C[j])
        logS = (V * np.log(np.maximum(lam, 1e-300))) @ V.T
        iu = np.triu_indices(len(lam))
        qS = tuple(np.floor(logS[iu] / step + oS).astype(int).tolist())
        Sq = _decode_cov(qS, len(lam), step, oS)
        lam_q, V_q = np.linalg.eigh(Sq)
        z = (V_q / np.sqrt(lam_q)) @ V_q.T @ M[j]  # Σ_q^{-1/2} μ
        qm = tuple(np.floor(z / step + om).astype(int).tolist())
        comps.append((int(np.floor(w[j] / w_step + ow)), qm, qS))
    return tuple(sorted(comps, key=lambda c: (c[1], c[2])))


def _decode_cov(qS: tuple, d: int, step: float, oS: Any) -> np.ndarray:
    iu = np.triu_indices(d)
    L = np.zeros((d, d))
    L[iu] = (np.asarray(qS) - oS + 0.5) * step
    L = L + np.triu(L, 1).T
    lam, V = np.linalg.eigh(L)
    return (V * np.exp(lam)) @ V.T


def decode(key: tuple, d: int, step: float, offset: Any, w_step: float) -> Mixture:
    """The mixture a quantised key stands for (cell centres); weights renormalised."""
    ow, om, oS = _offsets(offset, d)
    ws, Ms, Cs = [], [], []
    for qw, qm, qS in key:
        S = _decode_cov(qS, d, step, oS)
        lam, V = np.linalg.eigh(S)
        z = (np.asarray(qm) - om + 0.5) * step
        Ms.append((V * np.sqrt(lam)) @ V.T @ z)
        Cs.append(S)
        ws.append(max((qw - ow + 0.5) * w_step, 1e-3))
    w = np.asarray(ws)
    return w / w.sum(), np.asarray(Ms), np.asarray(Cs)


def dummy_mixture(k: int, d: int) -> Mixture:
    """[B]'s dummy g0: a fixed, data-independent mixture (equal weights, N(0, I) components)."""
    return np.full(k, 1.0 / k), np.zeros((k, d)), np.stack([np.eye(d)] * k)


def quantised_em_lists(
    block: np.ndarray,
    seed: int,
    *,
    k: int,
    step: float,
    offset: Any,
    w_step: float,
    restarts: int = 4,
    n_mc: int = 1000,
) -> list[tuple[tuple | str, float]]:
    """P1 list learner for one block: EM restarts on the first half, each fit quantised
    (:func:`_quantise`), plus the dummy g0 = "g0" (at most ``restarts`` + 1 items); the
    Yatracos minimum-distance winner on the second half, and every item's Monte Carlo TV
    distance to it. Uses its block and ``seed`` only (grid and seed are public)."""
    from sklearn.mixture import GaussianMixture

    rng = np.random.default_rng(seed)
    d = block.shape[1]
    half = block.shape[0] // 2
    keys: list[Any] = []
    for r in range(restarts):
        try:
            # a restart's warnings and errors depend on the block's rows: captured, dropped
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                gm = GaussianMixture(k, covariance_type="full", reg_covar=1e-6,
                                     init_params="k-means++", random_state=seed + r,
                                     ).fit(block[:half])
        except Exception:  # noqa: BLE001 - a failed restart is a per-block outcome: skip it
            continue
        key = _quantise((gm.weights_, gm.means_, gm.covariances_), step, offset, w_step)
        if key not in keys:
            keys.append(key)
    keys.append("g0")
    dec = functools.partial(decode, d=d, step=step, offset=offset, w_step=w_step)
    mixtures = [dummy_mixture(k, d) if key == "g0" else dec(key) for key in keys]
    win = int(np.argmax(yatracos_scores(mixtures, block[half:], rng, n_mc=n_mc)))
    S = _sample(mixtures[win], n_mc, rng)
    lw = _logpdf(mixtures[win], S)
    tvs = [float(np.mean(np.clip(1 - np.exp(_logpdf(f, S) - lw), 0, None))) for f in mixtures]
    return list(zip(keys, tvs, strict=True))


# ------------------------------------------------------------------------------ faithful route


@dataclass(frozen=True)
class FaithfulPlan:
    """The faithful route's public parameters, from (d, k, ε, δ, α, β) only.

    ``n_blocks`` T is the fewest blocks at which a candidate held by *every* list passes both
    private tests (spec B.5 P1.4): T ≥ 20R (Filter-and-Test, [B] Thm 4's condition; R the
    truncated-Laplace bound at (ε', δ')) and T ≥ threshold + (4/ε̃) ln(1/(2β)) (the Choosing
    Mechanism, at [B]'s β', passes with probability ≥ 1 − β). The grid makes one cell's
    mixtures ≤ α apart in TV: weights on step α/k (spec P1), whitened means and log-covariance
    entries on step α/(√d + 3d) (TV ≤ ½‖Δz‖ + (3/2)‖Δ log Σ‖_F per component).
    ``min_block`` = 4 k(1 + d + d(d+1)/2) rows (each half twice the free parameters);
    ``n_needed`` = T·min_block; ``theory_n`` = [B] Thm 4's n for this L
    (:func:`privgauss.theory.agnostic_n`, m = min_block/2)."""

    n_blocks: int
    list_size: int
    restarts: int
    step: float
    w_step: float
    alpha: float
    beta: float
    min_block: int
    n_needed: int
    theory_n: float


def faithful_plan(
    d: int, k: int, epsilon: float, delta: float, *, alpha: float = 0.2, beta: float = 0.05,
    C: float = 3.0, restarts: int = 4,
) -> FaithfulPlan:
    """:class:`FaithfulPlan` for these public quantities."""
    from ..theory import agnostic_n

    L = restarts + 1
    p = _parameters(epsilon, delta, alpha, beta, L, C)
    e = p.e1 / 2  # the Choosing Mechanism's own ε (replace-one)
    T = math.ceil(max(
        20 * truncated_laplace_bound(1.0, p.e1, p.d1),
        choosing_threshold(p.e1, p.d1, L, p.b1) + (4 / e) * math.log(1 / (2 * beta)),
    ))
    min_block = 4 * k * (1 + d + d * (d + 1) // 2)
    return FaithfulPlan(
        n_blocks=T, list_size=L, restarts=restarts, step=alpha / (math.sqrt(d) + 3 * d),
        w_step=alpha / k, alpha=alpha, beta=beta, min_block=min_block,
        n_needed=T * min_block,
        theory_n=agnostic_n(epsilon, delta, alpha, beta, L, min_block // 2, C).n,
    )


def faithful_agnostic(
    X: np.ndarray,
    k: int,
    epsilon: float,
    delta: float,
    *,
    alpha: float = 0.2,
    beta: float = 0.05,
    accountant: Accountant,
    noise: RandomState = None,
    progress: bool = False,
    info: dict[str, Any] | None = None,
) -> Mixture:
    """The faithful route: [B] Alg. 2–4 + Choosing (:func:`list_stable_reduction`) with the
    P1 list learner (:func:`quantised_em_lists`) on a grid shifted by a public uniform offset,
    parameters from :func:`faithful_plan`. **Guarantee:** (ε, δ)-DP, replace-one, for any data
    (the list learner only sees its own block). A chosen dummy g0 is reported as
    :class:`EstimationFailed` (post-processing of the DP choice). Refuses n < ``n_needed``
    before anything is spent."""
    from threadpoolctl import threadpool_limits

    n, d = X.shape
    plan = faithful_plan(d, k, epsilon, delta, alpha=alpha, beta=beta)
    if n < plan.n_needed:
        raise InvalidDataError(
            f"the faithful agnostic route needs n >= {plan.n_needed} rows here ({plan.n_blocks} "
            f"blocks of >= {plan.min_block} rows; d = {d}, k = {k}, epsilon = {epsilon:g}, "
            f"delta = {delta:g}), got n = {n}: give more rows, or use constants='practical'"
        )
    src = as_noise(noise)
    offset = src.rng.uniform(size=1 + d + d * (d + 1) // 2)  # public randomness
    learner = functools.partial(quantised_em_lists, k=k, step=plan.step, offset=offset,
                                w_step=plan.w_step, restarts=plan.restarts)
    with threadpool_limits(1):  # thousands of tiny fits: BLAS threads only add overhead
        key, extra = list_stable_reduction(
            X, learner, epsilon, delta, n_blocks=plan.n_blocks, list_size=plan.list_size,
            alpha=alpha, beta=beta, accountant=accountant, noise=src, progress=progress,
        )
    if info is not None:
        info.update(extra, block_rows=n // plan.n_blocks, list_size=plan.list_size)
    if key == "g0":
        raise EstimationFailed(
            f"the Choosing Mechanism picked the dummy g0: no quantised EM fit was held by "
            f"enough of the {plan.n_blocks} blocks ({n // plan.n_blocks} rows each); "
            f"[B] Thm 4 guarantees accuracy from n ~ {plan.theory_n:.2g}",
            step="agnostic-choosing", needed_n=int(plan.theory_n),
        )
    assert isinstance(key, tuple)  # quantised_em_lists' keys are tuples; g0 was the only other
    return decode(key, d, plan.step, offset, plan.w_step)


# ------------------------------------------------------------------------------ requirements


def reduction_requirements(
    method: str,
    *,
    n: int,
    d: int,
    k: int,
    epsilon: float,
    delta: float,
    alpha: float = 0.2,
    beta: float = 0.05,
    constants: str = "practical",
) -> Any:
    """The n ``method`` ("ppe" or "agnostic") needs, from public quantities only."""
    from ..mixture.sample_size import Requirements
    from .ppe_gaussian import ppe_requirements

    if method == "ppe":
        return ppe_requirements(n, d, epsilon, delta, constants, k)
    if constants == "theory":  # the faithful route: what its plan needs to run
        plan = faithful_plan(d, k, epsilon, delta, alpha=alpha, beta=beta)
        term = f"{plan.n_blocks} blocks x {plan.min_block} rows"
        return Requirements(
            "agnostic", int(n), float(plan.n_needed), bool(n >= plan.n_needed), constants,
            {term: float(plan.n_needed)}, term, {},
            "faithful route ([B] Alg. 2-4, quantised EM lists); [B] Thm 4's accuracy "
            f"guarantee needs n ~ {plan.theory_n:.2g}",
        )
    # route P2: one producer must work on 70% of the rows with its share of the budget
    # (the producers share 0.8 ε; below the n where two can share it, the best runs alone:
    # :func:`_p2_producers`)
    if k == 1:
        need = ppe_requirements(n, d, 0.8 * epsilon, delta).n_needed / 0.7
    else:
        need = min(_producer_needs(n, d, k, 0.8 * epsilon, delta, beta).values()) / 0.7
    return Requirements("agnostic", int(n), need, bool(n >= need), constants,
                        {"n": need}, "n", {},
                        "route P2: the n its best candidate producer needs (on 70% of the rows)")


# ------------------------------------------------------------------------------ estimator hooks


_P2_PRODUCERS = {"sample-aggregate": ("sample_aggregate", "sample_aggregate_gmm"),
                 "kssu": ("kssu", "kssu_gmm")}


def _producer_needs(n: int, d: int, k: int, epsilon: float, delta: float, beta: float
                    ) -> dict[str, float]:
    """The n each P2 producer needs with the budget (ε, δ) (public: each producer's own
    practical terms, as ``requirements`` reports them)."""
    import importlib

    def need(method: str) -> float:
        module = importlib.import_module(f"privgauss.mixture.{_P2_PRODUCERS[method][0]}")
        terms = module.practical_terms(n, d, k, epsilon, delta, 1.0 / k, beta)["terms"]
        return float(max(terms.values()))

    return {m: need(m) for m in _P2_PRODUCERS}


def _p2_producers(n: int, d: int, k: int, epsilon: float, delta: float, beta: float
                  ) -> list[str]:
    """Route P2's candidate producers for k ≥ 2, from public quantities: both when each can
    work on the generating rows (70 %) with half the producers' 0.8 ε, else the one that needs
    the fewest rows with all of it (a split that starves both producers returns nothing)."""
    n_gen = n - int(round(0.3 * n))
    half = _producer_needs(n, d, k, 0.4 * epsilon, delta / 2, beta)
    if all(need <= n_gen for need in half.values()):
        return list(_P2_PRODUCERS)
    full = _producer_needs(n, d, k, 0.8 * epsilon, delta, beta)
    return [min(full, key=full.__getitem__)]


def _producer(module: str, function: str, k: int, beta: float) -> Callable[..., Mixture]:
    def make(X: np.ndarray, budget: ApproxDP, acct: Accountant, noise: Any) -> Mixture:
        import importlib

        learner = getattr(importlib.import_module(f"privgauss.mixture.{module}"), function)
        w, M, C = learner(X, k, budget, beta=beta, accountant=acct, noise=noise, info={})
        return np.asarray(w), np.asarray(M), np.asarray(C)

    return make


def run_agnostic(est: Any, X: np.ndarray, public_X: Any, budget: ApproxDP, acct: Accountant,
                 noise: Any, info: dict[str, Any]) -> Mixture:
    """``PrivateGaussianMixture(method="agnostic")``: with ``constants="theory"`` the faithful
    route (:func:`faithful_agnostic`); otherwise route P2 with candidates from the library's
    private mixture learners (sample-and-aggregate and/or KSSU, chosen from public quantities
    by :func:`_p2_producers`) — for k = 1, the practical PPE — selected by the private
    Yatracos tournament."""
    k = int(est.n_components)
    if est.constants == "theory":
        return faithful_agnostic(X, k, budget.epsilon, budget.delta, beta=float(est.beta),
                                 accountant=acct, noise=noise, info=info)
    if k == 1:
        from .ppe_gaussian import ppe_gaussian

        def single(Xg: np.ndarray, b: ApproxDP, a: Accountant, nz: Any) -> Mixture:
            m, C = ppe_gaussian(Xg, b.epsilon, b.delta, accountant=a, noise=nz)
            return np.ones(1), m[None], C[None]

        producers: list[Callable[..., Mixture]] = [single]
    else:
        chosen = _p2_producers(X.shape[0], X.shape[1], k, budget.epsilon, budget.delta,
                               float(est.beta))
        producers = [_producer(*_P2_PRODUCERS[m], k, float(est.beta)) for m in chosen]
        info["producers"] = chosen
    f, extra = private_selection(X, producers, budget.epsilon, budget.delta,
                                 accountant=acct, noise=noise)
    info.update(extra)
    return f


def run_ppe(est: Any, X: np.ndarray, public_X: Any, budget: ApproxDP, acct: Accountant,
            noise: Any, info: dict[str, Any]) -> Mixture:
    """``PrivateGaussianMixture(method="ppe")``: the practical stable-average PPE for k = 1 and
    the faithful mixture PPE (EM per block, B_GMM masking) for k ≥ 2."""
    k = int(est.n_components)
    if k == 1 and est.constants == "practical":
        from .ppe_gaussian import ppe_gaussian

        m, C = ppe_gaussian(X, budget.epsilon, budget.delta, accountant=acct, noise=noise)
        return np.ones(1), m[None], C[None]
    from .ppe_gaussian import ppe_mixture

    return ppe_mixture(X, k, budget.epsilon, budget.delta, accountant=acct, noise=noise)
