"""Tests of privgauss.mixture.one_cluster (private 1-cluster / location; simplified NS18 as used
by KSSU19 App. B and spec §5.2, §6.6).

Ball counts and the capped score against brute force (the sensitivities of the capped score and
of the joint (sum, count) release are checked in ``test_sensitivity.py``), the exponential
mechanism over boxes (exact distribution), the budget planner, utility (a cluster among
background noise, ApproxDP and PureDP), ledgers that sum to the budget on success and failure,
an empirical audit, input handling and the secure path.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from scipy import stats

from privgauss import InvalidDataError, PrivacyBudgetError
from privgauss.audit import audit_mechanism
from privgauss.linalg import clip_rows
from privgauss.mechanisms import Release
from privgauss.mixture.good_center import _exponential_box, _noisy_set_mean
from privgauss.mixture.good_radius import (
    ball_counts,
    capped_count_score,
    doubling_radii,
    good_radius,
)
from privgauss.mixture.one_cluster import Ball, BallSearch, one_cluster, plan_budget
from privgauss.noise import NoiseSource
from privgauss.privacy import ZCDP, Accountant, ApproxDP, PureDP
from privgauss.sensitivity import joint_sum_count

RADII = doubling_radii(0.01, 1000.0)
EPS, DELTA = 1.0, 1e-6


def cluster_in_background(t: int, d: int, seed: int, n_background: int | None = None):
    """t points of N(μ, I) plus uniform background on [−100, 100]^d."""
    rng = np.random.default_rng(seed)
    mu = rng.uniform(-50, 50, d)
    nb = t if n_background is None else n_background
    X = np.vstack([mu + rng.standard_normal((t, d)), rng.uniform(-100, 100, (nb, d))])
    is_cluster = np.r_[np.ones(t, bool), np.zeros(nb, bool)]
    order = rng.permutation(len(X))
    return X[order], is_cluster[order], mu


def success(ball: Ball | None, X, is_cluster, mu) -> bool:
    if ball is None:
        return False
    r_true = np.linalg.norm(X[is_cluster] - mu, axis=1).max()
    inside = np.linalg.norm(X[is_cluster] - ball.center, axis=1) <= ball.radius
    return inside.mean() >= 0.9 and ball.radius <= 8 * r_true


# --------------------------------------------------------------------------- counts and scores


def test_doubling_radii() -> None:
    r = doubling_radii(0.5, 10.0)
    np.testing.assert_allclose(r, [0.5, 1, 2, 4, 8, 16])
    np.testing.assert_allclose(doubling_radii(1.0, 8.0), [1, 2, 4, 8])
    np.testing.assert_allclose(doubling_radii(3.0, 3.0), [3.0])
    with pytest.raises(ValueError):
        doubling_radii(0.0, 1.0)


def test_ball_counts_match_brute_force_including_ties() -> None:
    rng = np.random.default_rng(0)
    X = rng.integers(0, 6, size=(40, 2)).astype(float)
    centers = rng.integers(0, 6, size=(7, 2)).astype(float)
    thr = [5.0, 1.0, 2.5, 3.0, 0.0]  # unsorted on purpose, with exact ties (3-4-5)
    got = ball_counts(X, thr, centers=centers)
    want = [[sum(math.dist(c, x) <= r for x in X) for r in thr] for c in centers]
    assert got.tolist() == want
    own = ball_counts(X, thr)
    assert own.tolist() == [[sum(math.dist(c, x) <= r for x in X) for r in thr] for c in X]


def test_ball_counts_in_several_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    import privgauss.mixture.good_radius as grm

    X = np.random.default_rng(1).standard_normal((300, 3))
    full = ball_counts(X, [0.5, 1.0, 2.0])
    monkeypatch.setattr(grm, "_BLOCK_ELEMENTS", 1000)  # 3 rows per block
    np.testing.assert_array_equal(grm.ball_counts(X, [0.5, 1.0, 2.0]), full)


def L_oracle(X, r, t) -> float:
    vals = sorted((min(sum(math.dist(x, y) <= r for y in X), t) for x in X), reverse=True)
    return sum(vals[:t]) / t


def test_capped_score_matches_oracle() -> None:
    # (its sensitivity is checked by brute force in test_sensitivity.py)
    rng = np.random.default_rng(2)
    radii = [1.0, 2.0, 2.5, 5.0]
    for _ in range(120):
        n, d = int(rng.integers(2, 25)), int(rng.integers(1, 3))
        X = rng.integers(0, 6, size=(n, d)).astype(float)
        t = int(rng.integers(1, n + 4))
        L = capped_count_score(X, t, radii)
        assert L.tolist() == pytest.approx([L_oracle(X, r, t) for r in radii])


def test_mean_release_is_computed_on_the_clipped_rows() -> None:
    """With a huge (finite) budget the joint release is nearly exact: the mean must be that of
    the rows projected onto B(anchor, rho), and the count exact."""
    rng = np.random.default_rng(4)
    a, rho = np.array([1.0, -2.0, 0.5]), 1.5
    rows = a + rng.standard_normal((20, 3)) * 3.0  # many rows outside the ball
    rows[0] = [1e9, 0.0, 0.0]
    acct = Accountant(ZCDP(1e16))
    mean, sd = _noisy_set_mean(
        rows, a, rho, ZCDP(1e16), release=Release(acct, NoiseSource(0), "m")
    )
    clipped, _ = clip_rows(rows, a, rho)
    np.testing.assert_allclose(mean, clipped.mean(axis=0), rtol=1e-7)
    assert np.linalg.norm(mean - a) <= rho * (1 + 1e-7) and sd < 1e-7
    sens, _ = joint_sum_count(rho, 3, "l2")
    assert acct.ledger[0].sensitivity == sens == 2 * rho


# --------------------------------------------------------------------------- box selection


@pytest.mark.parametrize("key_hi", [3, 1], ids=["rejection", "enumeration"])
def test_pure_box_choice_is_exactly_the_exponential_mechanism(key_hi: int) -> None:
    keys = np.array([[0, 0]] * 3 + [[1, 1]] * 2 + [[0, 1]])  # 3 non-empty boxes
    lo, hi = np.zeros(2, np.int64), np.full(2, key_hi, np.int64)
    acct = Accountant(PureDP(1e12))
    src = NoiseSource(0)
    n = 6000
    picks = Counter(
        tuple(
            int(v)
            for v in _exponential_box(
                keys, lo, hi, PureDP(1.0), release=Release(acct, src, "box")
            )
        )
        for _ in range(n)
    )
    boxes = [(i, j) for i in range(key_hi + 1) for j in range(key_hi + 1)]
    counts = Counter(tuple(k) for k in keys.tolist())
    weights = np.array([math.exp(1.0 * counts.get(b, 0) / 2) for b in boxes])
    expected = n * weights / weights.sum()
    observed = np.array([picks.get(b, 0) for b in boxes])
    assert set(picks) <= set(boxes)
    assert stats.chisquare(observed, expected).pvalue > 1e-4


# --------------------------------------------------------------------------- budget planner


@pytest.mark.parametrize("d", [1, 3, 10, 50])
@pytest.mark.parametrize("eps,delta", [(0.3, 1e-8), (1.0, 1e-6), (5.0, 1e-5)])
def test_plan_budget_composes_to_exactly_the_budget(d: int, eps: float, delta: float) -> None:
    kinds = ("pure", "hist", "noise", "noise", "noise")
    parts = plan_budget(ApproxDP(eps, delta), kinds, (0.3, 0.2, 0.15, 0.2, 0.15), (1, 1, d, d, 1))
    acct = Accountant(ApproxDP(eps, delta))
    for p in parts:
        acct.spend(p)
    assert acct.spent.epsilon == pytest.approx(eps, rel=1e-9)
    assert acct.spent.delta == pytest.approx(delta, rel=1e-12)
    assert isinstance(parts[0], PureDP) and isinstance(parts[1], ApproxDP)
    assert parts[0].epsilon == pytest.approx(0.3 * eps)
    assert parts[1].epsilon == pytest.approx(0.2 * eps)
    pure = plan_budget(PureDP(eps), kinds, (0.3, 0.2, 0.15, 0.2, 0.15), (1, 1, d, d, 1))
    assert all(isinstance(p, PureDP) for p in pure)
    assert sum(p.epsilon for p in pure) == pytest.approx(eps, rel=1e-15)


def test_plan_budget_prefers_laplace_in_low_dimension() -> None:
    kinds, w = ("pure", "hist", "noise", "noise"), (0.3, 0.25, 0.18, 0.27)
    low = plan_budget(ApproxDP(1.0, 1e-6), kinds, w, (1, 1, 2, 2))
    high = plan_budget(ApproxDP(1.0, 1e-6), kinds, w, (1, 1, 20, 20))
    assert all(isinstance(p, PureDP) for p in low[2:]) and low[1].delta == 1e-6
    assert all(isinstance(p, ZCDP) for p in high[2:]) and high[1].delta == pytest.approx(5e-7)


# --------------------------------------------------------------------------- utility


@pytest.mark.parametrize("d,t", [(2, 600), (5, 800)])
def test_finds_the_cluster_among_background_noise(d: int, t: int) -> None:
    ok = 0
    for seed in range(5):
        X, is_cluster, mu = cluster_in_background(t, d, seed)
        acct = Accountant(ApproxDP(EPS, DELTA))
        ball = one_cluster(
            X,
            t,
            ApproxDP(EPS, DELTA),
            radii=RADII,
            release=Release.of(acct, seed),
        )
        ok += success(ball, X, is_cluster, mu)
    assert ok >= 4


def test_pure_budget_with_a_public_box() -> None:
    ok = 0
    for seed in range(4):
        X, is_cluster, mu = cluster_in_background(600, 2, seed)
        acct = Accountant(PureDP(EPS))
        ball = one_cluster(
            X,
            600,
            PureDP(EPS),
            radii=RADII,
            search=BallSearch(center_box=(-100, 100)),
            release=Release.of(acct, seed),
        )
        ok += success(ball, X, is_cluster, mu)
        assert [e.mechanism for e in acct.ledger] == [
            "above-threshold",
            "exponential",
            "laplace",
            "laplace",
        ]
    assert ok >= 3
    with pytest.raises(ValueError, match="center_box"):
        one_cluster(X, 600, PureDP(EPS), radii=RADII, release=Release.of(Accountant(PureDP(EPS))))


def test_good_radius_on_a_subsample() -> None:
    X, _, _ = cluster_in_background(3000, 2, seed=9)
    acct = Accountant(PureDP(EPS))
    r = good_radius(X, 3000, RADII, PureDP(EPS), max_points=1000, release=Release.of(acct, 9))
    assert r is not None and 1.0 <= r <= 10.0


# --------------------------------------------------------------------------- ledger / failure


def _spent_is(acct: Accountant, budget) -> None:
    spent = acct.spent
    assert spent.epsilon == pytest.approx(budget.epsilon, rel=1e-9)
    assert spent.epsilon <= budget.epsilon * (1 + 1e-12)
    if isinstance(budget, ApproxDP):
        assert spent.delta == pytest.approx(budget.delta, rel=1e-12)


@pytest.mark.parametrize(
    "budget,d",
    [(ApproxDP(EPS, DELTA), 2), (ApproxDP(EPS, DELTA), 8), (PureDP(EPS), 2)],
    ids=["approx-laplace", "approx-gauss", "pure"],
)
def test_ledger_sums_to_the_budget_on_success(budget, d: int) -> None:
    X, _, _ = cluster_in_background(800, d, seed=4)
    acct = Accountant(budget)
    ball = one_cluster(
        X,
        800,
        budget,
        radii=RADII,
        search=BallSearch(center_box=(-120, 120)),
        release=Release.of(acct, 4),
    )
    assert ball is not None
    _spent_is(acct, budget)
    assert [e.step for e in acct.ledger] == [
        "one-cluster/radius",
        "one-cluster/box",
        "one-cluster/box-mean",
        "one-cluster/refine",
    ]


@pytest.mark.parametrize("budget", [ApproxDP(EPS, DELTA), PureDP(EPS)], ids=["approx", "pure"])
def test_failure_is_a_dp_output_with_the_budget_spent(budget) -> None:
    X, _, _ = cluster_in_background(200, 2, seed=5)
    # (a) t = 2n: no radius can pass, the search releases ⊥
    acct = Accountant(budget)
    assert (
        one_cluster(
            X,
            800,
            budget,
            radii=RADII,
            search=BallSearch(center_box=(-120, 120)),
            release=Release.of(acct, 5),
        )
        is None
    )
    _spent_is(acct, budget)
    assert [e.mechanism for e in acct.ledger][1:] == ["unused"] * 3
    assert all("⊥" in e.note for e in acct.ledger[1:])
    # (b) a starved box step: the box/mean releases fail, the rest is charged as unused
    if isinstance(budget, ApproxDP):
        acct = Accountant(budget)
        out = one_cluster(
            X,
            200,
            budget,
            radii=RADII,
            search=BallSearch(split=(1.0, 1e-3, 1.0, 1.0)),
            release=Release.of(acct, 5),
        )
        assert out is None
        _spent_is(acct, budget)
        assert [e.mechanism for e in acct.ledger] == [
            "above-threshold",
            "stability-histogram",
            "unused",
            "unused",
        ]


def test_budget_is_refused_before_anything_is_drawn() -> None:
    X, _, _ = cluster_in_background(100, 2, seed=6)
    for acct in (
        Accountant(ApproxDP(0.5, DELTA)),
        Accountant(ZCDP(10.0)),
        Accountant(PureDP(10.0)),
    ):
        rng = np.random.default_rng(0)
        state = rng.bit_generator.state
        with pytest.raises(PrivacyBudgetError):
            one_cluster(X, 100, ApproxDP(EPS, DELTA), radii=RADII, release=Release.of(acct, rng))
        assert acct.ledger == [] and rng.bit_generator.state == state


# --------------------------------------------------------------------------- privacy audit

T_AUDIT = 30
# t duplicates at 0 (one of them moves to 3 in D') and t isolated points inside the public box
AUDIT_D = np.vstack([np.zeros((T_AUDIT, 1)), 20.0 + 2.0 * np.arange(T_AUDIT)[:, None]])
AUDIT_D_PRIME = AUDIT_D.copy()
AUDIT_D_PRIME[T_AUDIT - 1, 0] = 3.0
AUDIT_EPS = 2.0


def _one_cluster_mechanism(data: np.ndarray, rng: np.random.Generator) -> float:
    acct = Accountant(PureDP(AUDIT_EPS))
    ball = one_cluster(
        data,
        T_AUDIT,
        PureDP(AUDIT_EPS),
        radii=[0.5, 1.0, 2.0, 4.0],
        search=BallSearch(center_box=(-10, 100), beta=0.5),
        release=Release.of(acct, rng),
    )
    return -1000.0 if ball is None else float(ball.center[0])


@pytest.mark.slow
def test_one_cluster_passes_an_empirical_audit() -> None:
    result = audit_mechanism(
        _one_cluster_mechanism, AUDIT_D, AUDIT_D_PRIME, epsilon=AUDIT_EPS, n_runs=4_000
    )
    assert result.passed, str(result)


# --------------------------------------------------------------------------- input handling


def test_inputs_are_not_mutated() -> None:
    X, _, _ = cluster_in_background(300, 2, seed=7)
    X.flags.writeable = False
    radii = RADII.copy()
    radii.flags.writeable = False
    X_copy = X.copy()
    one_cluster(
        X,
        300,
        ApproxDP(EPS, DELTA),
        radii=radii,
        search=BallSearch(center_box=(-50, 50)),
        release=Release.of(Accountant(ApproxDP(EPS, DELTA)), 7),
    )
    one_cluster(
        X,
        300,
        PureDP(EPS),
        radii=radii,
        search=BallSearch(center_box=(-50, 50)),
        release=Release.of(Accountant(PureDP(EPS)), 7),
    )
    capped_count_score(X, 300, radii)
    np.testing.assert_array_equal(X, X_copy)
    np.testing.assert_array_equal(radii, RADII)


def test_error_messages_contain_no_data() -> None:
    X = np.full((30, 2), 987.654321)
    bad = X.copy()
    bad[4, 1] = np.nan
    budget = ApproxDP(EPS, DELTA)
    # a non-finite row is handled per record, never an error on a private value (rule 10)
    one_cluster(bad, 10, budget, radii=RADII, release=Release.of(Accountant(budget), 0))
    cases = [
        lambda: one_cluster(X, 0, budget, radii=RADII, release=Release.of(Accountant(budget))),
        lambda: one_cluster(X, 10, budget, radii=[], release=Release.of(Accountant(budget))),
        lambda: one_cluster(
            X,
            10,
            budget,
            radii=RADII,
            c=-1.0,
            release=Release.of(Accountant(budget)),
        ),
        lambda: one_cluster(
            X,
            10,
            budget,
            radii=RADII,
            search=BallSearch(center_box=(5, -5)),
            release=Release.of(Accountant(budget)),
        ),
        lambda: one_cluster(
            X,
            10,
            budget,
            radii=RADII,
            search=BallSearch(split=(1, 1)),
            release=Release.of(Accountant(budget)),
        ),
        lambda: one_cluster(
            X,
            10,
            ZCDP(1.0),
            radii=RADII,
            release=Release.of(Accountant(ZCDP(1.0))),
        ),
        lambda: one_cluster(
            X,
            10,
            budget,
            radii=RADII,
            release=Release.of(Accountant(ApproxDP(0.1, DELTA))),
        ),
    ]
    for case in cases:
        with pytest.raises((ValueError, InvalidDataError, PrivacyBudgetError)) as err:
            case()
        assert "987" not in str(err.value)


def test_secure_noise_path() -> None:
    X, is_cluster, mu = cluster_in_background(300, 1, seed=8)
    acct = Accountant(PureDP(4.0))
    ball = one_cluster(
        X,
        300,
        PureDP(4.0),
        radii=doubling_radii(0.1, 100),
        search=BallSearch(center_box=(-100, 100)),
        release=Release.of(acct),
    )
    assert ball is None or ball.center.shape == (1,)
    assert len(acct.ledger) == 4
