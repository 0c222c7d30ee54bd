"""Tests of privgauss.mixture.public_heavy (Bie–Kamath–Singhal Alg. 10 with Alg. 9).

Accuracy at a fixed seed; the ledger composes to exactly the budget ((ε, δ) and ρ); bad public
input is refused before anything is spent; adversarial public rows never change what is spent;
an empirical audit on neighbours where one private row moves between two public clusters; and
the broken variant that drops the two-cluster double count is refused by the per-cluster
accountant.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from privgauss import EstimationFailed, InvalidDataError, PrivacyBudgetError
from privgauss.audit import audit_mechanism
from privgauss.datasets import make_mixture
from privgauss.gaussian.public import public_gaussian
from privgauss.mechanisms import Release
from privgauss.metrics import mixture_error
from privgauss.mixture import public_heavy as ph
from privgauss.mixture.public_heavy import min_public_rows, public_heavy_gmm
from privgauss.mixture.requirements import public_heavy_report
from privgauss.noise import NoiseSource
from privgauss.privacy import ZCDP, Accountant, ApproxDP, zcdp_to_epsilon


@pytest.fixture(scope="module")
def mix():
    return make_mixture(40_500, 3, 5, min_weight=0.2, separation=6.0, random_state=7)


def _spent(acct: Accountant) -> tuple[float, float]:
    s = acct.spent
    return (s.epsilon, s.delta) if isinstance(s, ApproxDP) else (s.rho, 0.0)


def _heavy_fit(mix, release: Release, estimator: str | None = None):
    """public_heavy_gmm at ρ = 0.3 on the fixture's private rows, its first 500 rows public."""
    return public_heavy_gmm(mix.X[500:], 3, ZCDP(0.3), public_X=mix.X[:500], min_weight=0.2,
                            estimator=estimator, release=release)


def test_recovers_every_component_at_a_fixed_seed(mix) -> None:
    P, X = mix.X[:500], mix.X[500:]
    budget = ApproxDP(1.0, 1e-6)
    acct = Accountant(budget)
    info: dict = {}
    w, m, c = public_heavy_gmm(
        X,
        3,
        budget,
        public_X=P,
        min_weight=0.2,
        info=info,
        release=Release.of(acct, 0),
    )
    err = mixture_error(w, m, c, mix.weights, mix.means, mix.covariances)
    assert (err.permutation >= 0).all()
    assert err.max_component_tv <= 0.2 and err.weight_error <= 0.05
    assert math.isclose(acct.spent.epsilon, 1.0, rel_tol=1e-9)
    assert math.isclose(acct.spent.delta, 1e-6, rel_tol=1e-9)
    assert info["public_clusters"].n_clusters == 3


def test_joint_estimator_ledger_sums_to_rho_with_no_double_charge(mix) -> None:
    """The default ("joint") path: counts + three steps of (vector, outer) sums, summing to ρ;
    the estimation gets ρ − ρ_counts once (not halved), and the learner path is not used."""
    acct = Accountant(ZCDP(0.3))
    _heavy_fit(mix, Release.of(acct, 1))
    assert math.isclose(acct.spent.rho, 0.3, rel_tol=1e-12)
    steps = [e.step for e in acct.ledger]
    assert steps == ["public-heavy/counts"] + [
        f"public-heavy/step-{t}/{kind}-sums" for t in (1, 2, 3) for kind in ("vector", "outer")
    ]
    sums = sum(e.cost.rho for e in acct.ledger if "sums" in e.step)
    assert math.isclose(sums, 0.3 * (1 - ph.COUNT_SHARE), rel_tol=1e-12)


def test_theory_constants_keep_the_faithful_learner(mix) -> None:
    acct = Accountant(ZCDP(0.3))
    public_heavy_gmm(
        AUDIT_X,
        2,
        ZCDP(0.3),
        public_X=AUDIT_P,
        constants="theory",
        release=Release.of(acct, 1),
    )
    assert [e.step for e in acct.ledger] == ["public-heavy/counts", "public-heavy/estimate"]
    assert math.isclose(acct.spent.rho, 0.3, rel_tol=1e-12)
    with pytest.raises(ValueError, match="estimator"):
        _heavy_fit(mix, Release.of(Accountant(ZCDP(0.3))), estimator="both")


def test_zcdp_ledger_sums_to_rho_and_charges_the_estimation_twice(mix, monkeypatch) -> None:
    used: list[float] = []

    def recording(rows, public, rho, **kw):
        used.append(rho)
        return public_gaussian(rows, public, rho, **kw)

    monkeypatch.setattr(ph, "public_gaussian", recording)
    acct = Accountant(ZCDP(0.3))
    _heavy_fit(mix, Release.of(acct, 1), estimator="learner")
    assert math.isclose(acct.spent.rho, 0.3, rel_tol=1e-12)
    est = [e for e in acct.ledger if e.step.endswith("/estimate")]
    assert len(est) == 1 and len(used) == 3
    # a row moving between two public clusters changes two learners: 2 x each learner's rho
    assert math.isclose(est[0].cost.rho, 2 * max(used), rel_tol=1e-12)


def test_dropping_the_double_count_is_refused_by_the_cluster_accountant(mix, monkeypatch) -> None:
    """Broken variant: each learner takes the whole estimation budget (parallel composition as
    in the paper). The per-cluster accountant holds only half of it and refuses."""

    def greedy(rows, public, rho, **kw):
        return public_gaussian(rows, public, 2 * rho, **kw)

    monkeypatch.setattr(ph, "public_gaussian", greedy)
    with pytest.raises(PrivacyBudgetError):
        _heavy_fit(mix, Release.of(Accountant(ZCDP(0.3)), 1), estimator="learner")


@pytest.mark.parametrize(
    ("public", "match"),
    [
        (lambda P: P[:20], "needs at least"),
        (lambda P: P[:, :4], "columns"),
        (lambda P: np.repeat(P[:1], 500, axis=0), "public"),
        (lambda P: np.vstack([P, P + 1e4]), "more than"),  # the public rows form 6 clusters
    ],
)
def test_bad_public_input_is_refused_before_spending(mix, public, match) -> None:
    shared = Accountant(ApproxDP(1.0, 1e-6))
    with pytest.raises(InvalidDataError, match=match):
        public_heavy_gmm(
            mix.X[500:],
            3,
            ApproxDP(1.0, 1e-6),
            public_X=public(mix.X[:500]),
            min_weight=0.2,
            release=Release.of(Accountant(ApproxDP(1.0, 1e-6), parent=shared), 0),
        )
    assert shared.ledger == [] and shared.spent is None or shared.spent.epsilon == 0


def test_adversarial_public_rows_spend_exactly_the_budget_or_nothing(mix) -> None:
    """Public rows far from the private ones: utility fails, the spend is the budget."""
    for shift, seed in ((1e3, 2), (30.0, 3)):
        acct = Accountant(ZCDP(0.2))
        try:
            public_heavy_gmm(
                mix.X[500:],
                3,
                ZCDP(0.2),
                public_X=mix.X[:500] + shift,
                min_weight=0.2,
                release=Release.of(acct, seed),
            )
        except EstimationFailed:
            pass
        assert math.isclose(acct.spent.rho, 0.2, rel_tol=1e-12)
    assert min_public_rows(5, 0.2) == 60


def test_requirements_are_public_and_monotone() -> None:
    small = public_heavy_report(n=10_000, d=10, k=3, budget=ApproxDP(1, 1e-6),
                                min_weight=0.2)
    big = public_heavy_report(n=10_000, d=10, k=3, budget=ApproxDP(8, 1e-6),
                              min_weight=0.2)
    assert big.n_needed < small.n_needed
    few = public_heavy_report(n=10**9, d=10, k=3, budget=ZCDP(1.0),
                              min_weight=0.2, n_public=50)
    assert not few.ok and few.dominant == "too few public rows"
    theory = public_heavy_report(n=10, d=10, k=3, budget=ZCDP(1.0),
                                 constants="theory")
    assert theory.n_needed > 0 and "indicative" in theory.note


# --------------------------------------------------------------------------- privacy audit

AUDIT_RHO, AUDIT_DELTA = 0.5, 1e-3
_LINE = np.linspace(-1.0, 1.0, 150)[:, None]
AUDIT_X = np.vstack([_LINE, 20.0 + _LINE])
AUDIT_X_PRIME = AUDIT_X.copy()
AUDIT_X_PRIME[0, 0] = 20.5  # one private row moves from the first public cluster to the second
AUDIT_P = np.vstack([np.linspace(-1, 1, 12)[:, None], 20.0 + np.linspace(-1, 1, 12)[:, None]])


def _heavy_mechanism(estimator: str):
    def mechanism(data: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        b = ZCDP(AUDIT_RHO)
        w, m, c = public_heavy_gmm(
            data,
            2,
            b,
            public_X=AUDIT_P,
            estimator=estimator,
            constants="theory" if estimator == "learner" else "practical",
            release=Release.of(Accountant(b), NoiseSource(rng)),
        )
        order = np.argsort(m[:, 0])
        return np.r_[w[order][0], m[order, 0], c[order, 0, 0]]

    return mechanism


# 100 runs per dataset: the audit's bound cannot exceed 1.81 at 100 runs (3.48 at 500), below
# the claimed ε = 3.54 either way, so this audit checks that the fit runs on both neighbours and
# is not a test of the noise's size (the per-cluster joint release it calls is audited with
# teeth in test_cluster_estimation.py; the double charge is checked on the ledger above).
@pytest.mark.slow
@pytest.mark.parametrize("estimator", ["learner", "joint"])
def test_row_moving_between_public_clusters_passes_an_empirical_audit(estimator) -> None:
    result = audit_mechanism(
        _heavy_mechanism(estimator),
        AUDIT_X,
        AUDIT_X_PRIME,
        epsilon=zcdp_to_epsilon(AUDIT_RHO, AUDIT_DELTA),
        delta=AUDIT_DELTA,
        n_runs=100,
        random_state=0,
    )
    assert result.passed, str(result)

