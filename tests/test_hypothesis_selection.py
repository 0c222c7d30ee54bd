"""Tests of pure ε-DP private hypothesis selection (privgauss.gaussian.hypothesis_selection).

Covers are checked to be α-covers in TV; selection is checked for accuracy at fixed seeds, for
the sensitivity of both scores on random neighbours, for its pure-ε ledger, for refusing
impractical covers, and by an empirical audit that also flags a halved sensitivity.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import ndtr

import privgauss.gaussian.hypothesis_selection as hs
from privgauss.audit import audit_mechanism
from privgauss.exceptions import PrivacyBudgetError
from privgauss.mechanisms import Release, exponential_mechanism
from privgauss.metrics import tv_distance, tv_distance_1d
from privgauss.privacy import Accountant, ApproxDP, PureDP

EPS = 1.0


def _tv_1d(cover: hs.Cover, mu: float, sigma: float) -> np.ndarray:
    sd = np.sqrt(cover.covs[cover.group, 0, 0])
    return np.array(
        [tv_distance_1d(m, s, mu, sigma) for m, s in zip(cover.means[:, 0], sd, strict=True)]
    )


# ---------------------------------------------------------------------------- covers


def test_1d_cover_is_an_alpha_cover() -> None:
    alpha = 0.1
    cover = hs.build_cover([2.0], 10.0, cov_bounds=(1.0, 100.0), alpha=alpha)
    rng = np.random.default_rng(0)
    for _ in range(25):
        mu = 2.0 + rng.uniform(-10.0, 10.0)
        sigma = float(np.exp(rng.uniform(0.0, np.log(10.0))))
        assert _tv_1d(cover, mu, sigma).min() <= alpha
    # the estimate used for refusing is close to the true size
    est = hs.cover_size(1, 10.0, cov_bounds=(1.0, 100.0), alpha=alpha)
    assert 0.7 * cover.size <= est <= 1.3 * cover.size


def test_mean_only_cover_is_an_alpha_cover() -> None:
    alpha = 0.15
    cov = np.array([[3.0, 1.0], [1.0, 2.0]])
    cover = hs.build_cover([5.0, -5.0], 4.0, cov=cov, alpha=alpha)
    Linv = np.linalg.inv(np.linalg.cholesky(cov))
    rng = np.random.default_rng(1)
    for _ in range(200):
        v = rng.normal(size=2)
        mu = np.array([5.0, -5.0]) + v / np.linalg.norm(v) * 4.0 * np.sqrt(rng.uniform())
        dist = np.linalg.norm((cover.means - mu) @ Linv.T, axis=1)
        assert (2 * ndtr(dist / 2) - 1).min() <= alpha  # exact TV for a shared covariance


def test_full_covariance_2d_cover_is_an_alpha_cover() -> None:
    alpha = 0.3
    cover = hs.build_cover([0.0, 0.0], 1.5, cov_bounds=(1.0, 4.0), alpha=alpha)
    rng = np.random.default_rng(2)
    for _ in range(4):
        t = rng.uniform(0, np.pi)
        R = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
        C = (R * rng.uniform(1.0, 4.0, size=2)) @ R.T
        v = rng.normal(size=2)
        mu = v / np.linalg.norm(v) * 1.5 * np.sqrt(rng.uniform())
        # nearest candidate by KL(N_true || N_cand), then its Monte Carlo TV
        Cinv = np.linalg.inv(cover.covs)
        diff = cover.means - mu
        kl = 0.5 * (
            np.einsum("gij,ji->g", Cinv, C)[cover.group]
            - 2
            + np.log(np.linalg.det(cover.covs) / np.linalg.det(C))[cover.group]
            + np.einsum("mi,mij,mj->m", diff, Cinv[cover.group], diff)
        )
        i = int(np.argmin(kl))
        tv = tv_distance(mu, C, *cover.candidate(i), n_samples=200_000, random_state=0)
        assert tv.lower <= alpha, (tv, alpha)


# ---------------------------------------------------------------------------- accuracy


@pytest.mark.parametrize("score", ["scheffe", "projection"])
def test_accuracy_1d(score: str) -> None:
    alpha = 0.1
    mu, sigma = 3.0, 2.5
    X = np.random.default_rng(3).normal(mu, sigma, size=(3000, 1))
    kw = dict(center=[0.0], radius=10.0, cov_bounds=(1.0, 100.0), alpha=alpha)
    best = _tv_1d(
        hs.build_cover(kw["center"], 10.0, cov_bounds=(1.0, 100.0), alpha=alpha), mu, sigma
    ).min()
    for seed in range(3):
        acct = Accountant(PureDP(EPS))
        m, c = hs.hypothesis_selection_gaussian(
            X,
            EPS,
            score=score,
            **kw,  # type: ignore[arg-type]
            release=Release.of(acct, seed),
        )
        tv = tv_distance_1d(m[0], np.sqrt(c[0, 0]), mu, sigma)
        assert tv <= alpha and tv <= best + 0.03, (tv, best)


@pytest.mark.parametrize("score", ["scheffe", "projection"])
def test_accuracy_2d_mean_only(score: str) -> None:
    alpha = 0.15
    mu = np.array([1.3, -0.4])
    X = np.random.default_rng(4).normal(size=(3000, 2)) + mu
    acct = Accountant(PureDP(EPS))
    m, c = hs.hypothesis_selection_gaussian(
        X,
        EPS,
        center=[0.0, 0.0],
        radius=5.0,
        alpha=alpha,
        score=score,
        release=Release.of(acct, 0),
    )
    np.testing.assert_array_equal(c, np.eye(2))
    assert 2 * ndtr(np.linalg.norm(m - mu) / 2) - 1 <= alpha


def test_accuracy_2d_full_covariance() -> None:
    alpha = 0.25
    mu, C = np.array([1.0, -1.0]), np.array([[2.5, 0.6], [0.6, 1.5]])
    X = np.random.default_rng(5).multivariate_normal(mu, C, size=3000)
    acct = Accountant(PureDP(EPS))
    m, c = hs.hypothesis_selection_gaussian(
        X,
        EPS,
        center=[0.0, 0.0],
        radius=3.0,
        cov_bounds=(1.0, 4.0),
        alpha=alpha,
        release=Release.of(acct, 0),
    )
    assert acct.ledger[0].step.endswith("projection")  # 1.4e4 candidates: Scheffé too costly
    assert tv_distance(m, c, mu, C, n_samples=100_000, random_state=0).upper <= alpha


# ---------------------------------------------------------------------------- privacy


def test_ledger_is_one_pure_epsilon_charge() -> None:
    X = np.random.default_rng(6).normal(size=(500, 1))
    acct = Accountant(PureDP(EPS))
    hs.hypothesis_selection_gaussian(
        X,
        EPS,
        center=[0.0],
        radius=3.0,
        cov_bounds=(0.5, 2.0),
        alpha=0.2,
        release=Release.of(acct, 1),
    )
    assert len(acct.ledger) == 1
    assert acct.ledger[0].cost == PureDP(EPS) and acct.ledger[0].sensitivity == 1.0
    assert acct.spent == PureDP(EPS) and acct.remaining is None


@pytest.mark.parametrize(
    "d, kw, score",
    [
        (1, dict(cov_bounds=(0.5, 4.0), alpha=0.2), "scheffe"),
        (1, dict(cov_bounds=(0.5, 4.0), alpha=0.2), "projection"),
        (2, dict(alpha=0.25), "scheffe"),
        (2, dict(cov_bounds=(1.0, 2.0), alpha=0.4), "projection"),
    ],
)
def test_scores_have_sensitivity_one(d: int, kw: dict, score: str) -> None:
    cover = hs.build_cover(np.zeros(d), 2.0, **kw)
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = int(rng.integers(2, 40))
        X = rng.normal(size=(n, d)) * rng.choice([0.3, 1.0, 3.0])
        Y = X.copy()
        Y[rng.integers(n)] = rng.normal(size=d) * rng.choice([0.1, 1.0, 100.0])
        if score == "scheffe":
            a = hs.scheffe_scores(X, cover, kw["alpha"])
            b = hs.scheffe_scores(Y, cover, kw["alpha"])
        else:
            a, b = hs.projection_scores(X, cover), hs.projection_scores(Y, cover)
        assert np.max(np.abs(a - b)) <= 1.0 + 1e-9


def test_refuses_impractical_covers_before_spending() -> None:
    X = np.random.default_rng(8).normal(size=(100, 4))
    acct = Accountant(PureDP(EPS))
    with pytest.raises(ValueError, match="public.*coinpress.*clip"):
        hs.hypothesis_selection_gaussian(
            X,
            EPS,
            center=np.zeros(4),
            radius=5.0,
            alpha=0.1,
            release=Release.of(acct, 0),
        )
    with pytest.raises(ValueError, match="d <= 2"):
        hs.hypothesis_selection_gaussian(
            X[:, :3],
            EPS,
            center=np.zeros(3),
            radius=1.0,
            cov_bounds=(1.0, 2.0),
            release=Release.of(acct, 0),
        )
    with pytest.raises(ValueError, match="max_candidates=50"):
        hs.hypothesis_selection_gaussian(
            X[:, :1],
            EPS,
            center=[0.0],
            radius=20.0,
            alpha=0.1,
            max_candidates=50,
            release=Release.of(acct, 0),
        )
    assert acct.ledger == []
    small = Accountant(PureDP(0.5))
    with pytest.raises(PrivacyBudgetError):
        hs.hypothesis_selection_gaussian(
            X[:, :1],
            EPS,
            center=[0.0],
            radius=1.0,
            release=Release.of(small, 0),
        )
    assert small.ledger == []


def test_input_not_mutated() -> None:
    X = np.random.default_rng(9).normal(size=(400, 2))
    X.flags.writeable = False
    before = X.copy()
    acct = Accountant(ApproxDP(EPS, 1e-6))  # a pure charge fits an (ε, δ) accountant too
    hs.hypothesis_selection_gaussian(
        X,
        EPS,
        center=[0.0, 0.0],
        radius=2.0,
        alpha=0.2,
        release=Release.of(acct, 2),
    )
    np.testing.assert_array_equal(X, before)


def test_secure_noise_path() -> None:
    X = np.random.default_rng(10).normal(1.0, 2.0, size=(2000, 1))
    acct = Accountant(PureDP(EPS))
    m, c = hs.hypothesis_selection_gaussian(
        X,
        EPS,
        center=[0.0],
        radius=5.0,
        cov_bounds=(1.0, 9.0),
        alpha=0.1,
        release=Release.of(acct, None),
    )
    assert tv_distance_1d(m[0], np.sqrt(c[0, 0]), 1.0, 2.0) <= 0.1
    assert acct.spent == PureDP(EPS)


def test_public_front_end() -> None:
    rng = np.random.default_rng(11)
    mu, sigma = 1e4, 30.0
    X = rng.normal(mu, sigma, size=(4000, 1))
    X_pub = rng.normal(mu, sigma, size=(8, 1))
    acct = Accountant(PureDP(EPS))
    m, c = hs.hypothesis_selection_public(X, X_pub, EPS, release=Release.of(acct, 3))
    assert tv_distance_1d(m[0], np.sqrt(c[0, 0]), mu, sigma) <= 0.15
    assert acct.spent == PureDP(EPS)
    assert acct.ledger[0].step.startswith("hypothesis-selection-public")


# ---------------------------------------------------------------------------- audit

# A neighbouring pair found by searching small 1-D datasets for the largest exact privacy loss
# of the selection (scores computed exactly, output law ∝ exp(ε S / 2)): the exact loss is 0.77ε
# with the right sensitivity and 1.52ε when it is halved.
_DATA = np.array([[-3.0], [1.0], [50.0], [2.0], [50.0], [2.0], [-50.0]])
_NEIGHBOUR = _DATA.copy()
_NEIGHBOUR[0, 0] = 50.0


def _selection(data: np.ndarray, rng: np.random.Generator) -> float:
    acct = Accountant(PureDP(EPS))
    m, _ = hs.hypothesis_selection_gaussian(
        data,
        EPS,
        center=[0.0],
        radius=3.0,
        cov=[[1.0]],
        alpha=0.2,
        score="projection",
        release=Release.of(acct, rng),
    )
    return float(m[0])


# 5,000 runs per dataset: the halved sensitivity below was flagged at audit seeds 0-4 with
# bounds 1.21-1.38 (ε = 1 claimed; about 4 standard deviations clear of it), so the pair of tests
# still shows that this audit sees that bug; a correct selection fails with probability <= 0.1%.
AUDIT_RUNS = 5_000


@pytest.mark.slow
def test_audit_selection_passes() -> None:
    res = audit_mechanism(_selection, _DATA, _NEIGHBOUR, epsilon=EPS, n_runs=AUDIT_RUNS)
    assert res.passed, str(res)


@pytest.mark.slow
def test_audit_flags_halved_sensitivity(monkeypatch: pytest.MonkeyPatch) -> None:
    def halved(utilities, sensitivity, budget, **kw):  # type: ignore[no-untyped-def]
        return exponential_mechanism(utilities, sensitivity / 2, budget, **kw)

    monkeypatch.setattr(hs, "exponential_mechanism", halved)
    res = audit_mechanism(_selection, _DATA, _NEIGHBOUR, epsilon=EPS, n_runs=AUDIT_RUNS)
    assert not res.passed, str(res)


def test_refusal_is_instant_and_size_estimate_matches_the_built_cover() -> None:
    # regression: sizing a d = 2 full-covariance cover used to build every rotated covariance
    # (minutes for the worst-case K of 3 public rows); the count is now from spectra only
    import time

    import privgauss as pg

    rng = np.random.default_rng(0)
    X, P = rng.normal(size=(500, 2)), rng.normal(size=(3, 2))
    for kw, fit in [({}, {"public_X": P}), ({"mean_bound": 1e6, "cov_bounds": (1e-3, 1e3)}, {})]:
        est = pg.PrivateGaussian(epsilon=EPS, method="hypothesis-selection", random_state=0, **kw)
        t0 = time.perf_counter()
        with pytest.raises(ValueError, match="impractical"):
            est.fit(X, **fit)
        assert time.perf_counter() - t0 < 0.5
    for kw in [{"cov_bounds": (0.5, 4.0)}, {"cov_bounds": (1.0, 1.0)}, {}]:
        built = hs.build_cover(np.zeros(2), 1.0, alpha=0.3, **kw).size
        approx = hs.cover_size(2, 1.0, alpha=0.3, **kw)
        assert 0.5 * built <= approx <= 2.0 * built
