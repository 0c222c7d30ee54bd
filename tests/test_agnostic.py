"""Agnostic learning (reductions/agnostic.py): the Choosing Mechanism, the list-stability
reduction (Algorithms 2–4) and the practical private-selection route P2."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from privgauss.accounting import Accountant, ApproxDP, PureDP
from privgauss.audit import audit_mechanism
from privgauss.exceptions import EstimationFailed
from privgauss.mechanisms import exponential_mechanism
from privgauss.noise import NoiseSource
from privgauss.reductions.agnostic import (
    _filtered_scores,
    choosing_mechanism,
    decode,
    list_stable_reduction,
    private_selection,
    quantised_em_lists,
    yatracos_scores,
)

EPS, DELTA = 1.0, 1e-3


def _choose(threshold_ok: bool):
    def run(lists: list[list[tuple[str, float]]], rng: np.random.Generator) -> str:
        scores = dict(_filtered_scores(lists, 1.0))
        acct = Accountant(ApproxDP(EPS, DELTA))
        src = NoiseSource(rng)
        if not threshold_ok:  # broken: no noisy threshold test, plain exponential mechanism
            keys = list(scores)
            if not keys:
                return "⊥"
            return keys[src.noisy_argmax(np.array([scores[c] for c in keys], float), 4 / EPS)]
        try:
            return str(choosing_mechanism(scores, 2, ApproxDP(EPS, DELTA), 0.1,
                                          accountant=acct, noise=src))
        except EstimationFailed:
            return "⊥"

    return run


@pytest.mark.parametrize("ok, flagged", [(True, False), (False, True)])
def test_choosing_mechanism_audit(ok: bool, flagged: bool) -> None:
    """One list holding a candidate nobody else holds, replaced by an empty list: the noisy
    threshold hides it; without the test the candidate leaks."""
    D = [[("b", 0.0)]] + [[] for _ in range(30)]
    Dn = [[] for _ in range(31)]
    res = audit_mechanism(_choose(ok), D, Dn, epsilon=EPS, delta=DELTA, n_runs=4000)
    assert res.passed != flagged, str(res)


def test_choosing_mechanism_picks_the_popular_candidate_and_charges() -> None:
    scores = {"a": 400, "b": 3}
    acct = Accountant(ApproxDP(EPS, DELTA))
    assert choosing_mechanism(scores, 4, ApproxDP(EPS, DELTA), 0.1, accountant=acct,
                              noise=0) == "a"
    assert acct.spent.epsilon == pytest.approx(EPS)
    with pytest.raises(EstimationFailed):
        choosing_mechanism({"a": 3}, 4, ApproxDP(EPS, DELTA), 0.1,
                           accountant=Accountant(ApproxDP(EPS, DELTA)), noise=0)


def _rounded(block: np.ndarray, seed: int, extra: int = 0) -> list[tuple[object, float]]:
    key = int(np.floor(block.mean()))
    return [(key, 0.0)] + [(f"junk{seed}-{i}", 0.0) for i in range(extra)]


def test_list_reduction_returns_the_stable_candidate_with_exact_budget() -> None:
    X = np.full((600, 1), 3.2) + np.random.default_rng(0).normal(0, 0.01, size=(600, 1))
    acct = Accountant(ApproxDP(8.0, 1e-3))
    out, info = list_stable_reduction(
        X, _rounded, 8.0, 1e-3, n_blocks=300, list_size=4, alpha=0.5, accountant=acct, noise=0,
    )
    assert out == 3
    assert acct.spent.epsilon == pytest.approx(8.0) and acct.spent.delta == pytest.approx(1e-3)
    assert len(acct.ledger) == info["rounds"] + 1
    # a list learner returning more than L items is truncated: the junk never counts
    out, _ = list_stable_reduction(
        X, functools.partial(_rounded, extra=50), 8.0, 1e-3, n_blocks=300, list_size=4,
        alpha=0.5, accountant=Accountant(ApproxDP(8.0, 1e-3)), noise=1,
    )
    assert out == 3


def test_list_reduction_fails_on_unstable_lists() -> None:
    X = np.arange(600.0)[:, None] * 7
    acct = Accountant(ApproxDP(8.0, 1e-3))
    with pytest.raises(EstimationFailed):
        list_stable_reduction(X, _rounded, 8.0, 1e-3, n_blocks=300, list_size=4, alpha=0.5,
                              accountant=acct, noise=0)
    assert acct.spent.epsilon == pytest.approx(8.0)


def test_quantised_em_lists_are_canonical() -> None:
    rng = np.random.default_rng(2)
    halves = [rng.normal(-5, 1, (300, 1)), rng.normal(5, 1, (300, 1))]
    block = rng.permutation(np.concatenate(halves))
    items = quantised_em_lists(block, 7, k=2, step=0.5, offset=0.3, w_step=0.1, restarts=2)
    keys = [c for c, _ in items]
    assert keys[-1] == "g0" and len(set(keys)) == len(keys)
    w, M, C = decode(keys[0], 1, 0.5, 0.3, 0.1)
    assert sorted(np.round(M.ravel())) == pytest.approx([-5, 5], abs=1.0)
    assert min(tv for c, tv in items) == 0.0  # the MDE winner itself


def test_yatracos_score_sensitivity_and_selection_audit() -> None:
    cands = [
        (np.ones(1), np.zeros((1, 1)), np.ones((1, 1, 1))),
        (np.ones(1), np.full((1, 1), 3.0), np.ones((1, 1, 1))),
    ]
    X = np.concatenate([np.zeros((25, 1)), np.full((25, 1), 3.0)])
    rng = np.random.default_rng(9)
    s = yatracos_scores(cands, X, np.random.default_rng(0))
    for _ in range(20):  # replace-one moves every score by at most 1
        Y = X.copy()
        Y[rng.integers(50)] = rng.normal(0, 3, size=1)
        assert np.max(np.abs(yatracos_scores(cands, Y, np.random.default_rng(0)) - s)) <= 1 + 1e-9
    Y = X.copy()
    Y[30] = 0.0
    t = yatracos_scores(cands, Y, np.random.default_rng(0))

    def select(monotone: bool):
        def run(scores: np.ndarray, g: np.random.Generator) -> int:
            return exponential_mechanism(scores, 1.0, PureDP(EPS), monotone=monotone,
                                         accountant=Accountant(PureDP(EPS)), noise=g)

        return run

    assert audit_mechanism(select(False), s, t, epsilon=EPS, n_runs=20_000).passed
    assert not audit_mechanism(select(True), s, t, epsilon=EPS, n_runs=20_000).passed


def test_private_selection_picks_the_closest_candidate() -> None:
    rng = np.random.default_rng(4)
    X = rng.normal(3.0, 1.0, size=(3000, 1))

    def fixed(mu: float):
        def make(Xg, budget, acct, noise):
            return np.ones(1), np.full((1, 1), mu), np.ones((1, 1, 1))

        return make

    def failing(Xg, budget, acct, noise):
        acct.spend(budget, step="producer")
        raise EstimationFailed("no", step="producer")

    acct = Accountant(ApproxDP(1.0, 1e-6))
    f, info = private_selection(X, [fixed(0.0), fixed(3.0), failing, fixed(-2.0)], 1.0, 1e-6,
                                accountant=acct, noise=0)
    assert float(f[1][0, 0]) == 3.0 and info["n_candidates"] == 3 and info["n_failed"] == 1
    assert acct.spent.epsilon <= 1.0 + 1e-9


def test_a_singular_candidate_is_scored_not_a_crash() -> None:
    # a privately produced candidate may have a singular covariance (found at d=10, k=2)
    from privgauss.reductions.agnostic import yatracos_scores

    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3))
    good = (np.array([1.0]), np.zeros((1, 3)), np.eye(3)[None])
    singular = (np.array([1.0]), np.zeros((1, 3)), np.diag([1.0, 1.0, 0.0])[None])
    scores = yatracos_scores([good, singular], X, rng)
    assert np.isfinite(scores).all() and scores[0] > scores[1]
