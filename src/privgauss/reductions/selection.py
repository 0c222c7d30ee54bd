"""Private selection among candidate mixtures by the minimum-distance (Yatracos) score (route P2).

Devroye and Lugosi, *Combinatorial Methods in Density Estimation* (2001), Thm 6.4, with the
exponential mechanism (spec ``ppe-agnostic.md`` Part B, P2; not in [B]). **Neighbours:**
replace one row (n public). **Guarantee:** :func:`private_selection` is (ε, δ)-DP: a public
permutation splits the rows; the producers run on the generation rows, each with its share of
(ε(1 − s), δ) charged as one (ε, δ) entry whatever it spends (basic composition), and the
exponential mechanism picks one candidate on the selection rows with ε·s, the Yatracos score
having sensitivity 1 (candidates and the Monte Carlo samples of the Yatracos sets are earlier
DP outputs or public). The ledger is :func:`selection_plan` on every dataset. The accuracy
bound is in :mod:`.agnostic`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.special import logsumexp

from ..densities import gaussian_logpdf
from ..exceptions import EstimationFailed
from ..linalg import scaled_floor
from ..mechanisms import Release, exponential_mechanism
from ..privacy import Accountant, ApproxDP, Budget, BudgetPlan, PureDP

Mixture = tuple[np.ndarray, np.ndarray, np.ndarray]  # (weights (k,), means (k, d), covs (k, d, d))
_MC = 4000  # Monte Carlo samples per candidate (Yatracos masses, TV)

__all__ = [
    "Mixture",
    "mixture_logpdf",
    "private_selection",
    "sample_mixture",
    "selection_plan",
    "yatracos_scores",
]


# ------------------------------------------------------------------------------ densities


def _regular(f: Mixture) -> Mixture:
    """A candidate with the eigenvalues of every covariance's correlation matrix floored at
    1e-9, so its density exists (a privately produced candidate may be singular; this is
    post-processing of a DP output). The floor is in each column's own units
    (:func:`~privgauss.linalg.scaled_floor`): 1e-9 of the mean eigenvalue,
    as before session 49, gave a column in units 1e-6 beside one in 1e6 a variance of ~350
    (np.cov 1e-12) at every budget."""
    w, M, C = f
    C = np.asarray(C, dtype=np.float64)
    floored = [scaled_floor(c, 1e-9) for c in C]
    return w, M, np.stack(floored) if floored else C


def mixture_logpdf(f: Mixture, X: np.ndarray) -> np.ndarray:
    w, M, C = f
    cols = [
        gaussian_logpdf(X, M[j], C[j]) + (math.log(w[j]) if w[j] > 0 else -math.inf)
        for j in range(len(w))
    ]
    return logsumexp(np.stack(cols, axis=1), axis=1)


def sample_mixture(f: Mixture, m: int, rng: np.random.Generator) -> np.ndarray:
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
    LX = np.stack([mixture_logpdf(f, X) for f in candidates], axis=1)  # (n, M)
    counts = np.array([[np.count_nonzero(LX[:, j] > LX[:, l]) for l in range(M)]
                       for j in range(M)])
    scores = np.empty(M)
    for i, f in enumerate(candidates):
        S = sample_mixture(f, n_mc, rng)
        LS = np.stack([mixture_logpdf(g, S) for g in candidates], axis=1)
        mass = np.array([[np.mean(LS[:, j] > LS[:, l]) for l in range(M)] for j in range(M)])
        scores[i] = -float(np.max(np.abs(n * mass - counts))) if M > 1 else 0.0
    return scores


# ------------------------------------------------------------------------------ route P2


def selection_plan(
    epsilon: float, delta: float, n_producers: int, select_share: float = 0.2
) -> BudgetPlan:
    """Route P2's budget plan (public): each of the ``n_producers`` producers gets
    (ε(1 − ``select_share``)/P, δ/P) ("producer-i"), the exponential mechanism ε·``select_share``
    ("private-selection"). The parts compose to exactly (ε, δ); a fit's top-level ledger is
    these parts, one entry each, on every dataset (each producer's releases are kept in its
    entry's ``parts``)."""
    e1 = epsilon * (1 - select_share) / n_producers
    share = ApproxDP(e1, delta / n_producers)
    parts: dict[str, Budget] = {f"producer-{i + 1}": share for i in range(n_producers)}
    parts["private-selection"] = PureDP(epsilon * select_share)
    return BudgetPlan.of(ApproxDP(epsilon, delta), parts)


def private_selection(
    X: np.ndarray,
    producers: Sequence[Callable[..., Mixture]],
    epsilon: float,
    delta: float,
    *,
    release: Release,
    select_share: float = 0.2,
    select_fraction: float = 0.3,
) -> tuple[Mixture, dict[str, Any]]:
    """Route P2: rows split by a public permutation into D_gen (1 − ``select_fraction``) and
    D_sel. Each producer ``(X_gen, budget, release) -> Mixture`` is run on D_gen with an equal
    share of (ε(1 − select_share), δ), charged as one entry named for the producer at its first
    release (:meth:`~privgauss.privacy.Accountant.paid_on_first_charge`; its releases are
    that entry's parts) — or after it, when it charged nothing — so a producer that stops early
    costs its whole share; a producer that fails (:class:`EstimationFailed`, a DP output)
    yields no candidate. The exponential mechanism with the Yatracos score picks one candidate
    on D_sel with ε·select_share. Charged to a child of ``release``'s accountant, exactly as
    :func:`selection_plan` states."""
    src = release.noise
    n = X.shape[0]
    perm = src.rng.permutation(n)
    n_sel = int(round(select_fraction * n))
    X_sel, X_gen = X[perm[:n_sel]], X[perm[n_sel:]]
    plan = selection_plan(epsilon, delta, len(producers), select_share)
    acct = Accountant(plan.total, parent=release.accountant)
    cands: list[Mixture] = []
    failed = 0
    for i, make in enumerate(producers):
        name = f"producer-{i + 1}"
        share = plan.part(name, ApproxDP)
        # the producer's share is one entry of the ledger, charged at its first release (its
        # releases are kept in that entry's parts), whether it succeeds or fails: the ledger
        # is the plan on every dataset
        sub = acct.paid_on_first_charge(share, name, note="a candidate producer's share")
        try:
            cands.append(make(X_gen, share, Release(sub, src)))
        except EstimationFailed:
            failed += 1
        sub.settle()
    e2 = plan.part("private-selection", PureDP)
    if not cands:  # every producer returned ⊥ (DP outputs): the selection budget is still spent
        acct.spend(e2, step="private-selection", mechanism="exponential", note="no candidate")
        raise EstimationFailed("every candidate producer failed", step="private-selection")
    scores = yatracos_scores(cands, X_sel, src.rng)
    i = exponential_mechanism(
        scores, 1.0, e2, accountant=acct, noise=src, step="private-selection"
    )
    return _regular(cands[i]), {"n_candidates": len(cands), "n_failed": failed, "n_select": n_sel}
