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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..exceptions import EstimationFailed, InvalidDataError
from ..mechanisms import Release, truncated_laplace_bound
from ..privacy import ApproxDP, BudgetPlan
from .list_stable import (
    choosing_threshold,
    list_stable_reduction,
    reduction_parameters,
    reduction_plan,
)
from .quantised_lists import decode, quantised_em_lists
from .selection import Mixture, private_selection

__all__ = [
    "FaithfulPlan",
    "faithful_agnostic",
    "faithful_budget_plan",
    "faithful_plan",
    "agnostic_requirements",
    "run_agnostic",
    "run_ppe",
]



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


_C = 3.0  # [B]'s constant C of the agnostic bound, as the faithful route runs it


def faithful_plan(
    d: int, k: int, epsilon: float, delta: float, *, alpha: float = 0.2, beta: float = 0.05,
    C: float = _C, restarts: int = 4,
) -> FaithfulPlan:
    """:class:`FaithfulPlan` for these public quantities."""
    from ..theory import agnostic_n

    L = restarts + 1
    p = reduction_parameters(epsilon, delta, alpha, beta, L, C)
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


def faithful_budget_plan(epsilon: float, delta: float, *, alpha: float = 0.2) -> BudgetPlan:
    """The faithful route's budget plan (:func:`~.list_stable.reduction_plan`, the parts
    :func:`faithful_agnostic` charges at these (ε, δ, α)): R Filter-and-Test rounds and the
    Choosing Mechanism, (ε, δ)/(1 + R) each. Every round runs on every dataset and the
    Choosing Mechanism is charged before its ⊥ may be drawn, so a fit's ledger is this plan
    whatever the data (a refusal for too few rows comes before anything is spent)."""
    return reduction_plan(epsilon, delta, alpha, _C)


def faithful_agnostic(
    X: np.ndarray,
    k: int,
    epsilon: float,
    delta: float,
    *,
    alpha: float = 0.2,
    beta: float = 0.05,
    release: Release,
    progress: bool = False,
    info: dict[str, Any] | None = None,
) -> Mixture:
    """The faithful route: [B] Alg. 2–4 + Choosing (:func:`list_stable_reduction`) with the
    P1 list learner (:func:`quantised_em_lists`) on a grid shifted by a public uniform offset,
    parameters from :func:`faithful_plan`. **Guarantee:** (ε, δ)-DP, replace-one, for any data
    (the list learner only sees its own block). A chosen dummy g0 is reported as
    :class:`EstimationFailed` (post-processing of the DP choice). Refuses n < ``n_needed``
    before anything is spent. Charged to a child of ``release``'s accountant."""
    from threadpoolctl import threadpool_limits

    n, d = X.shape
    plan = faithful_plan(d, k, epsilon, delta, alpha=alpha, beta=beta)
    if n < plan.n_needed:
        raise InvalidDataError(
            f"the faithful agnostic route needs n >= {plan.n_needed} rows here ({plan.n_blocks} "
            f"blocks of >= {plan.min_block} rows; d = {d}, k = {k}, epsilon = {epsilon:g}, "
            f"delta = {delta:g}), got n = {n}: give more rows, or use constants='practical'"
        )
    offset = release.rng.uniform(size=1 + d + d * (d + 1) // 2)  # public randomness
    learner = functools.partial(quantised_em_lists, k=k, step=plan.step, offset=offset,
                                w_step=plan.w_step, restarts=plan.restarts)
    with threadpool_limits(1):  # thousands of tiny fits: BLAS threads only add overhead
        key, extra = list_stable_reduction(
            X, learner, epsilon, delta, n_blocks=plan.n_blocks, list_size=plan.list_size,
            alpha=alpha, C=_C, beta=beta, release=release, progress=progress,
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


def agnostic_requirements(
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
    """The n the agnostic reduction needs (the route ``constants`` selects), from public
    quantities only."""
    from ..mixture.sample_size import Requirements
    from .ppe_gaussian import ppe_requirements

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
        need = min(_producer_needs(n, d, k, 0.8 * epsilon, delta, beta)) / 0.7
    return Requirements("agnostic", int(n), need, bool(n >= need), constants,
                        {"n": need}, "n", {},
                        "route P2: the n its best candidate producer needs (on 70% of the rows)")


# ------------------------------------------------------------------------------ estimator hooks


@dataclass(frozen=True)
class _Producer:
    """A route-P2 candidate producer: its label (reported in ``fit_info_["producers"]``; the
    ledger lists producers as ``producer-i``), its private learner and its practical
    sample-size terms."""

    label: str
    learner: Callable[..., Any]
    terms: Callable[..., dict[str, Any]]

    def need(self, n: int, d: int, k: int, epsilon: float, delta: float, beta: float) -> float:
        """The n it needs with the budget (ε, δ) (public: its own practical terms, as
        ``requirements`` reports them)."""
        terms = self.terms(n, d, k, epsilon, delta, 1.0 / k, beta)["terms"]
        return float(max(terms.values()))

    def make(self, k: int, beta: float) -> Callable[..., Mixture]:
        """The producer ``(X, budget, release) -> Mixture`` that private selection runs."""

        def make(X: np.ndarray, budget: ApproxDP, release: Release) -> Mixture:
            w, M, C = self.learner(X, k, budget, beta=beta, release=release, info={})
            return np.asarray(w), np.asarray(M), np.asarray(C)

        return make


def _p2_catalogue() -> tuple[_Producer, ...]:
    """Route P2's producers, in order: sample-and-aggregate, then KSSU (imported on use: the
    mixture learners are heavy and not needed by the faithful route)."""
    from ..mixture.kssu import kssu_gmm
    from ..mixture.kssu_sample_size import practical_terms as kssu_terms
    from ..mixture.sample_aggregate import practical_terms as sa_terms
    from ..mixture.sample_aggregate import sample_aggregate_gmm

    return (_Producer("sample-aggregate", sample_aggregate_gmm, sa_terms),
            _Producer("kssu", kssu_gmm, kssu_terms))


def _producer_needs(n: int, d: int, k: int, epsilon: float, delta: float, beta: float
                    ) -> list[float]:
    """The n each P2 producer (in :func:`_p2_catalogue`'s order) needs with the budget (ε, δ)."""
    return [p.need(n, d, k, epsilon, delta, beta) for p in _p2_catalogue()]


def _chosen_producers(n: int, d: int, k: int, epsilon: float, delta: float, beta: float
                      ) -> list[_Producer]:
    """Route P2's candidate producers for k ≥ 2, from public quantities: both when each can
    work on the generating rows (70 %) with half the producers' 0.8 ε, else the one that needs
    the fewest rows with all of it (a split that starves both producers returns nothing)."""
    catalogue = _p2_catalogue()
    n_gen = n - int(round(0.3 * n))
    half = _producer_needs(n, d, k, 0.4 * epsilon, delta / 2, beta)
    if all(need <= n_gen for need in half):
        return list(catalogue)
    full = _producer_needs(n, d, k, 0.8 * epsilon, delta, beta)
    return [catalogue[min(range(len(full)), key=full.__getitem__)]]


def _p2_producers(n: int, d: int, k: int, epsilon: float, delta: float, beta: float
                  ) -> list[str]:
    """The labels of :func:`_chosen_producers`."""
    return [p.label for p in _chosen_producers(n, d, k, epsilon, delta, beta)]


def p2_producers(n: int, d: int, k: int, epsilon: float, delta: float, beta: float
                 ) -> list[str]:
    """Route P2's candidate producers for k ≥ 2 (public quantities only; the method's budget
    plan reads how many): :func:`_chosen_producers`' labels."""
    return _p2_producers(n, d, k, epsilon, delta, beta)


def run_agnostic(X: np.ndarray, k: int, budget: ApproxDP, *, constants: str = "practical",
                 beta: float = 0.05, release: Release,
                 info: dict[str, Any] | None = None) -> Mixture:
    """``PrivateGaussianMixture(method="agnostic")``: with ``constants="theory"`` the faithful
    route (:func:`faithful_agnostic`); otherwise route P2 with candidates from the library's
    private mixture learners (sample-and-aggregate and/or KSSU, chosen from public quantities
    by :func:`_p2_producers`) — for k = 1, the practical PPE — selected by the private
    Yatracos tournament. (ε, δ)-DP for ``budget``, replace-one; charged to ``release``;
    ``info`` receives the producers and the selection's public facts."""
    info = {} if info is None else info
    if constants == "theory":
        return faithful_agnostic(X, k, budget.epsilon, budget.delta, beta=beta,
                                 release=release, info=info)
    if k == 1:
        from .ppe_gaussian import ppe_gaussian

        def single(Xg: np.ndarray, b: ApproxDP, rel: Release) -> Mixture:
            m, C = ppe_gaussian(Xg, b.epsilon, b.delta, release=rel)
            return np.ones(1), m[None], C[None]

        producers: list[Callable[..., Mixture]] = [single]
    else:
        chosen = _chosen_producers(X.shape[0], X.shape[1], k, budget.epsilon, budget.delta,
                                   beta)
        producers = [p.make(k, beta) for p in chosen]
        info["producers"] = [p.label for p in chosen]
    f, extra = private_selection(X, producers, budget.epsilon, budget.delta, release=release)
    info.update(extra)
    return f


def run_ppe(X: np.ndarray, k: int, budget: ApproxDP, *, constants: str = "practical",
            release: Release) -> Mixture:
    """``PrivateGaussianMixture(method="ppe")``: the practical stable-average PPE for k = 1 and
    the faithful mixture PPE (EM per block, B_GMM masking) for k ≥ 2. (ε, δ)-DP for
    ``budget``, replace-one; charged to ``release``."""
    if k == 1 and constants == "practical":
        from .ppe_gaussian import ppe_gaussian

        m, C = ppe_gaussian(X, budget.epsilon, budget.delta, release=release)
        return np.ones(1), m[None], C[None]
    from .ppe_gaussian import ppe_mixture

    return ppe_mixture(X, k, budget.epsilon, budget.delta, release=release)
