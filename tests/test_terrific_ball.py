"""Tests of privgauss.mixture.terrific_ball (KSSU19 §5.1: terrific balls, TerrificRadius,
PTerrificBall).

The scores against a brute-force oracle (their sensitivities are checked by brute force in
``test_sensitivity.py``), AboveThreshold usage (one ⊤, scan stops), utility on separated
clusters and a single Gaussian, the `largest` flag, the ledger, an empirical audit of
TerrificRadius (which also flags a deliberately under-noised version), input handling and the
secure path.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import privgauss.mixture.good_radius as grm
import privgauss.mixture.terrific_ball as tb
from privgauss import InvalidDataError, PrivacyBudgetError, sensitivity
from privgauss.audit import audit_mechanism
from privgauss.mechanisms import Release
from privgauss.mixture.good_radius import above_threshold_slack, doubling_radii
from privgauss.mixture.one_cluster import BallSearch
from privgauss.mixture.terrific_ball import (
    ball_query,
    point_scores,
    radius_scores,
    terrific_ball,
    terrific_radius,
)
from privgauss.privacy import ZCDP, Accountant, ApproxDP, PureDP

RADII = doubling_radii(0.01, 1000.0)
EPS, DELTA = 1.0, 1e-6


# --------------------------------------------------------------------------- oracle


def _in(x, y, r) -> bool:
    return math.dist(x, y) <= r


def q_oracle(X, x, r, c, t) -> int:
    inner = sum(_in(x, y, r) for y in X)
    within = sum(_in(x, y, c * r) for y in X)
    return min(min(inner, t), min(len(X) - within, t), t - min(within - inner, t))


def Q_oracle(X, r, c, t) -> float:
    vals = sorted((q_oracle(X, x, r, c, t) for x in X), reverse=True)[:t]
    return sum(vals) / t


def f_oracle(X, p, r, c, t) -> int:
    inner = sum(_in(p, y, r) for y in X)
    within = sum(_in(p, y, c * r) for y in X)
    return min(inner, len(X) - within, t - (within - inner))


def integer_points(rng: np.random.Generator, n: int, d: int, high: int = 6) -> np.ndarray:
    """Integer coordinates: many exact ties on the sphere boundaries (3-4-5 triangles etc.)."""
    return rng.integers(0, high, size=(n, d)).astype(float)


TIE_RADII = [1.0, 2.0, 2.5, 3.0, 5.0]


@pytest.mark.parametrize("seed", range(4))
def test_scores_match_the_brute_force_oracle(seed: int) -> None:
    rng = np.random.default_rng(seed)
    X = integer_points(rng, 25, 2)
    t, c = int(rng.integers(1, 30)), float(rng.choice([2.0, 2.5, 4.0]))
    q = point_scores(X, t, c, TIE_RADII)
    for j, r in enumerate(TIE_RADII):
        assert [q_oracle(X, x, r, c, t) for x in X] == q[:, j].tolist()
        assert radius_scores(X, t, c, TIE_RADII)[j] == pytest.approx(Q_oracle(X, r, c, t))
        p = rng.integers(0, 6, size=2).astype(float)
        assert ball_query(X, p, r, c, t) == f_oracle(X, p, r, c, t)


# --------------------------------------------------------------------------- AboveThreshold


def test_terrific_radius_uses_one_above_threshold_and_stops_at_the_first_top(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[int | None, int, int]] = []
    real = grm.above_threshold  # the shared radius search of one_cluster / terrific_ball

    def spy(queries, *args, **kwargs):
        queries = list(queries)
        consumed = 0

        def stream():
            nonlocal consumed
            for q in queries:
                consumed += 1
                yield q

        hit = real(stream(), *args, **kwargs)
        calls.append((hit, consumed, len(queries)))
        return hit

    monkeypatch.setattr(grm, "above_threshold", spy)
    X = two_clusters(300, 2, seed=0)[0]
    for seed in range(20):
        acct = Accountant(PureDP(0.5))
        r = terrific_radius(X, 300, 5.0, RADII, PureDP(0.5), release=Release.of(acct, seed))
        hit, consumed, total = calls[-1]
        assert len(acct.ledger) == 1 and acct.ledger[0].mechanism == "above-threshold"
        assert acct.ledger[0].sensitivity == 2.0
        if hit is None:
            assert r is None and consumed == total
        else:
            assert r == RADII[hit] and consumed == hit + 1  # nothing asked after the ⊤
    assert len(calls) == 20


def test_slack_constants() -> None:
    for eps, T, beta in [(0.3, 18, 0.05), (1.0, 5, 0.01), (2.0, 40, 0.2)]:
        theory = above_threshold_slack(eps, T, beta, constants="theory")
        practical = above_threshold_slack(eps, T, beta, constants="practical")
        assert theory == pytest.approx(16 * (math.log(T) + math.log(2 / beta)) / eps)
        assert practical <= theory
        # the practical slack is a valid (1 - beta) bound on the AboveThreshold noise gap
        rng = np.random.default_rng(0)
        zt = rng.laplace(0, 4 / eps, size=20_000)
        zq = np.abs(rng.laplace(0, 8 / eps, size=(20_000, T))).max(axis=1)
        assert np.mean(np.abs(zt) + zq > practical) <= beta


# --------------------------------------------------------------------------- utility


def two_clusters(t: int, d: int, seed: int, gap: float = 40.0):
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    shift = rng.uniform(-50, 50, d)
    means = np.array([gap * u, -gap * u]) * math.sqrt(d / 2) / 2 + shift
    X = np.vstack([means[j] + rng.standard_normal((t, d)) for j in (0, 1)])
    labels = np.repeat([0, 1], t)
    order = rng.permutation(2 * t)
    return X[order], labels[order], means


@pytest.mark.parametrize("d", [2, 5])
def test_finds_a_ball_around_one_of_two_separated_clusters(d: int) -> None:
    ok = 0
    for seed in range(5):
        X, labels, _ = two_clusters(500, d, seed)
        acct = Accountant(ApproxDP(EPS, DELTA))
        ball = terrific_ball(
            X,
            500,
            5.0,
            RADII,
            ApproxDP(EPS, DELTA),
            release=Release.of(acct, seed),
        )
        if ball is None:
            continue
        inside = np.linalg.norm(X - ball.center, axis=1) <= ball.radius
        fractions = sorted(inside[labels == j].mean() for j in (0, 1))
        ok += fractions[1] >= 0.9 and fractions[0] == 0.0 and ball.radius <= 25.0
    assert ok >= 4


def test_single_gaussian_has_no_terrific_ball() -> None:
    rng = np.random.default_rng(1)
    nones = radius_nones = 0
    for seed in range(8):
        X = rng.standard_normal((1200, 2)) * 3 + 7
        acct = Accountant(ApproxDP(EPS, DELTA))
        nones += (
            terrific_ball(
                X,
                300,
                5.0,
                RADII,
                ApproxDP(EPS, DELTA),
                release=Release.of(acct, seed),
            )
            is None
        )
        acct = Accountant(PureDP(EPS))
        radius_nones += (
            terrific_radius(X, 300, 5.0, RADII, PureDP(EPS), release=Release.of(acct, seed)) is None
        )
    assert nones >= 7 and radius_nones >= 7


def test_largest_flag_picks_the_larger_secluded_scale() -> None:
    rng = np.random.default_rng(2)
    A = rng.standard_normal((300, 2)) * 0.3
    B = rng.standard_normal((300, 2)) * 0.3 + [10.0, 0.0]
    C = rng.standard_normal((600, 2)) * 0.3 + [1000.0, 0.0]
    X = np.vstack([A, B, C])
    small = large = 0
    for seed in range(5):
        acct = Accountant(PureDP(4.0))
        r0 = terrific_radius(X, 300, 5.0, RADII, PureDP(2.0), release=Release.of(acct, seed))
        r1 = terrific_radius(
            X,
            300,
            5.0,
            RADII,
            PureDP(2.0),
            largest=True,
            release=Release.of(acct, seed),
        )
        small += r0 is not None and r0 <= 4.0  # a ball around A, B or C alone
        large += r1 is not None and 10.0 <= r1 <= 200.0  # A ∪ B secluded from C
    assert small >= 4 and large >= 4


def test_the_check_rejects_a_ball_that_is_not_terrific(monkeypatch: pytest.MonkeyPatch) -> None:
    """A centre half-way between the clusters (the radius is right, the centre is not) must fail
    the noisy ball query, with the whole budget spent."""
    X, _, means = two_clusters(500, 2, seed=9)

    def fake_center(center):
        def center_with(X, r, parts, search, release):
            for b in parts[1:4]:  # charged as the real GoodCenter would
                release.accountant.spend(b, step="fake-center")
            return center

        return center_with

    monkeypatch.setattr(tb, "center_with", fake_center(means.mean(axis=0)))
    rejected = 0
    for seed in range(5):
        acct = Accountant(ApproxDP(EPS, DELTA))
        ball = terrific_ball(
            X,
            500,
            5.0,
            RADII,
            ApproxDP(EPS, DELTA),
            release=Release.of(acct, seed),
        )
        rejected += ball is None
        _total_spent_ok(acct, ApproxDP(EPS, DELTA))
    assert rejected == 5
    monkeypatch.setattr(tb, "center_with", fake_center(means[0]))  # a good centre passes
    acct = Accountant(ApproxDP(EPS, DELTA))
    ball = terrific_ball(X, 500, 5.0, RADII, ApproxDP(EPS, DELTA), release=Release.of(acct, 0))
    assert ball is not None and np.array_equal(ball.center, means[0])


def test_subsampled_scoring_still_finds_the_ball() -> None:
    X, labels, _ = two_clusters(1500, 2, seed=3)
    acct = Accountant(ApproxDP(EPS, DELTA))
    ball = terrific_ball(
        X,
        1500,
        5.0,
        RADII,
        ApproxDP(EPS, DELTA),
        search=BallSearch(max_points=800),
        release=Release.of(acct, 3),
    )
    assert ball is not None
    inside = np.linalg.norm(X - ball.center, axis=1) <= ball.radius
    assert max(inside[labels == j].mean() for j in (0, 1)) >= 0.9


# --------------------------------------------------------------------------- budget


def _total_spent_ok(acct: Accountant, budget) -> None:
    spent = acct.spent
    assert spent.epsilon == pytest.approx(budget.epsilon, rel=1e-9)
    assert spent.epsilon <= budget.epsilon * (1 + 1e-12)
    if isinstance(budget, ApproxDP):
        assert spent.delta == pytest.approx(budget.delta, rel=1e-12)


@pytest.mark.parametrize("d", [2, 8])
@pytest.mark.parametrize("found", [True, False])
def test_ledger_sums_to_the_budget_on_success_and_failure(d: int, found: bool) -> None:
    X, _, _ = two_clusters(400, d, seed=4)
    if not found:
        X = np.random.default_rng(4).standard_normal((800, d))
    budget = ApproxDP(EPS, DELTA)
    acct = Accountant(budget)
    ball = terrific_ball(X, 400, 5.0, RADII, budget, release=Release.of(acct, 4))
    assert (ball is not None) == found
    _total_spent_ok(acct, budget)
    steps = [e.step for e in acct.ledger]
    assert steps[0] == "terrific-ball/radius" and len(steps) == 5
    if found:
        mechanisms = [e.mechanism for e in acct.ledger]
        assert mechanisms[:2] == ["above-threshold", "stability-histogram"]
        assert steps[-1] == "terrific-ball/check"
        assert "unused" not in mechanisms
    else:
        assert [e.mechanism for e in acct.ledger][1:] == ["unused"] * 4
    # every Gaussian part is zCDP, every pure part is Laplace/AboveThreshold: kinds are public
    kinds = {type(e.cost).__name__ for e in acct.ledger}
    assert kinds <= {"PureDP", "ApproxDP", "ZCDP"}


def test_pure_budget_with_a_public_box() -> None:
    X, labels, _ = two_clusters(500, 2, seed=5)
    acct = Accountant(PureDP(EPS))
    ball = terrific_ball(
        X,
        500,
        5.0,
        RADII,
        PureDP(EPS),
        search=BallSearch(center_box=(-200, 200)),
        release=Release.of(acct, 5),
    )
    assert ball is not None
    assert [e.mechanism for e in acct.ledger] == [
        "above-threshold",
        "exponential",
        "laplace",
        "laplace",
        "laplace",
    ]
    _total_spent_ok(acct, PureDP(EPS))
    inside = np.linalg.norm(X - ball.center, axis=1) <= ball.radius
    assert max(inside[labels == j].mean() for j in (0, 1)) >= 0.9
    with pytest.raises(ValueError, match="center_box"):
        terrific_ball(
            X,
            500,
            5.0,
            RADII,
            PureDP(EPS),
            release=Release.of(Accountant(PureDP(EPS))),
        )


def test_budget_is_refused_before_anything_is_drawn() -> None:
    X, _, _ = two_clusters(100, 2, seed=6)
    for acct in (Accountant(ApproxDP(0.5, DELTA)), Accountant(ZCDP(10.0))):
        rng = np.random.default_rng(0)
        state = rng.bit_generator.state
        with pytest.raises(PrivacyBudgetError):
            terrific_ball(X, 100, 5.0, RADII, ApproxDP(EPS, DELTA), release=Release.of(acct, rng))
        assert acct.ledger == [] and rng.bit_generator.state == state
    with pytest.raises(PrivacyBudgetError):
        terrific_radius(
            X,
            100,
            5.0,
            RADII,
            ApproxDP(EPS, DELTA),
            release=Release.of(Accountant(ApproxDP(EPS, DELTA))),
        )


# --------------------------------------------------------------------------- privacy audit

T_AUDIT = 20
# Worst-case-style neighbours for Q_r: t − 1 duplicates at 0 and t isolated far points; the
# t-th record sits at 0 (D) or far away (D'), so Q_r drops by 2 − 2/t at every radius.
_CLUSTER = np.zeros((T_AUDIT - 1, 1))
_FAR = 1000.0 * np.arange(1, T_AUDIT + 1)[:, None]
AUDIT_D = np.vstack([_CLUSTER, [[0.0]], _FAR])
AUDIT_D_PRIME = np.vstack([_CLUSTER, [[100.0]], _FAR])
AUDIT_RADII = [1.0, 2.0, 4.0, 8.0]
AUDIT_EPS = 4.0  # with beta = 0.5 the threshold t − Γ sits close to the scores


def _terrific_radius_mechanism(data: np.ndarray, rng: np.random.Generator) -> float:
    acct = Accountant(PureDP(AUDIT_EPS))
    r = terrific_radius(
        data,
        T_AUDIT,
        2.0,
        AUDIT_RADII,
        PureDP(AUDIT_EPS),
        beta=0.5,
        release=Release.of(acct, rng),
    )
    return -1.0 if r is None else r  # the index of the radius, or ⊥


def test_audit_pair_is_worst_case() -> None:
    dQ = radius_scores(AUDIT_D, T_AUDIT, 2.0, AUDIT_RADII) - radius_scores(
        AUDIT_D_PRIME, T_AUDIT, 2.0, AUDIT_RADII
    )
    np.testing.assert_allclose(dQ, 2.0 - 2.0 / T_AUDIT)


@pytest.mark.slow
def test_terrific_radius_passes_an_empirical_audit() -> None:
    result = audit_mechanism(
        _terrific_radius_mechanism, AUDIT_D, AUDIT_D_PRIME, epsilon=AUDIT_EPS, n_runs=10_000
    )
    assert result.passed, str(result)


@pytest.mark.slow
def test_audit_flags_an_underestimated_sensitivity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sensitivity, "capped_radius_score", lambda: 0.5)
    result = audit_mechanism(
        _terrific_radius_mechanism, AUDIT_D, AUDIT_D_PRIME, epsilon=AUDIT_EPS, n_runs=10_000
    )
    assert not result.passed, str(result)


# --------------------------------------------------------------------------- input handling


def test_inputs_are_not_mutated() -> None:
    X, _, _ = two_clusters(300, 2, seed=7)
    X.flags.writeable = False
    radii = RADII.copy()
    radii.flags.writeable = False
    X_copy = X.copy()
    acct = Accountant(ApproxDP(EPS, DELTA))
    terrific_ball(X, 300, 5.0, radii, ApproxDP(EPS, DELTA), release=Release.of(acct, 7))
    terrific_radius(
        X,
        300,
        5.0,
        radii,
        PureDP(EPS),
        release=Release.of(Accountant(PureDP(EPS)), 7),
    )
    point_scores(X, 300, 5.0, radii)
    ball_query(X, X[0], 1.0, 5.0, 300)
    np.testing.assert_array_equal(X, X_copy)
    np.testing.assert_array_equal(radii, RADII)


def test_error_messages_contain_no_data() -> None:
    X = np.full((30, 2), 987.654321)
    bad = X.copy()
    bad[2, 0] = np.inf
    # a non-finite row is handled per record, never an error on a private value (rule 10)
    terrific_ball(
        bad,
        10,
        5.0,
        RADII,
        ApproxDP(EPS, DELTA),
        release=Release.of(Accountant(ApproxDP(EPS, DELTA)), 0),
    )
    cases = [
        lambda: terrific_ball(
            X,
            10,
            2.5,
            RADII,
            ApproxDP(EPS, DELTA),
            release=Release.of(Accountant(ApproxDP(EPS, DELTA))),
        ),
        lambda: terrific_radius(
            X,
            0,
            5.0,
            RADII,
            PureDP(EPS),
            release=Release.of(Accountant(PureDP(EPS))),
        ),
        lambda: terrific_radius(
            X,
            10,
            5.0,
            [1.0, -2.0],
            PureDP(EPS),
            release=Release.of(Accountant(PureDP(EPS))),
        ),
        lambda: terrific_radius(
            X,
            10,
            5.0,
            RADII,
            PureDP(EPS),
            release=Release.of(Accountant(PureDP(0.1))),
        ),
    ]
    for case in cases:
        with pytest.raises((ValueError, InvalidDataError, PrivacyBudgetError)) as err:
            case()
        assert "987" not in str(err.value)


def test_secure_noise_path() -> None:
    X, labels, _ = two_clusters(150, 1, seed=8)
    acct = Accountant(PureDP(4.0))
    r = terrific_radius(
        X,
        150,
        5.0,
        doubling_radii(0.1, 100),
        PureDP(4.0),
        release=Release.of(acct),
    )
    assert r is None or r in doubling_radii(0.1, 100)
    assert len(acct.ledger) == 1


def test_a_huge_budget_still_finds_the_ball_and_still_refuses_a_single_gaussian() -> None:
    # the practical slack (at least PRACTICAL_SLACK·t: tests/test_kssu.py) is a tolerance for
    # the data that stays as ε grows; it must not make a single Gaussian look secluded
    huge = ApproxDP(1e6, DELTA)

    def found(X: np.ndarray, t: int) -> int:
        hits = 0
        for seed in range(3):
            ball = terrific_ball(X, t, 5.0, RADII, huge, release=Release.of(Accountant(huge), seed))
            hits += ball is not None
        return hits

    X, _, _ = two_clusters(500, 2, 0)
    gauss = np.random.default_rng(1).standard_normal((1200, 2)) * 3 + 7
    assert found(X, 500) == 3
    assert found(gauss, 300) == 0
