"""Tests of privgauss.mixture.sample_aggregate (KSSU19 §6 sample-and-aggregate; spec §8).

Accuracy on separated mixtures at fixed seeds, the privacy unit (one changed row changes one
chunk, hence at most one point per peeling round), the fixed-size subsets (add/remove of a part
member = one replacement), the 2× charge of the per-part estimation, ledgers that compose to
exactly the budget on success and on failure, charge-before-noise, no mutation, messages free of
data, silenced per-chunk warnings, and one small run on the secure noise path.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter

import numpy as np
import pytest
from _helpers import spent_equals as _spent_equals

from privgauss import EstimationFailed, PrivacyBudgetError
from privgauss.datasets import make_mixture
from privgauss.gaussian import ridge
from privgauss.mechanisms import Release
from privgauss.metrics import mixture_error
from privgauss.mixture import sample_aggregate as sa
from privgauss.mixture.component_estimation import (
    ComponentPrior,
    Partition,
    estimate_components,
    fixed_size_subset,
    nearest_center,
)
from privgauss.mixture.requirements import sample_aggregate_requirements
from privgauss.mixture.sample_aggregate import (
    SAOptions,
    default_chunk_size,
    dummy_points,
    round_points,
    sample_aggregate_gmm,
)
from privgauss.mixture.sample_aggregate_budget import plan_sa_budget
from privgauss.noise import NoiseSource
from privgauss.privacy import ZCDP, Accountant, ApproxDP, PureDP

EPS, DELTA = 5.0, 1e-6


# --------------------------------------------------------------------------- accuracy


@pytest.mark.parametrize("seed", [0, 1])
def test_recovers_a_separated_mixture(seed: int) -> None:
    mix = make_mixture(40_000, 2, 2, separation=3.0, random_state=seed)
    acct = Accountant(ApproxDP(EPS, DELTA))
    w, m, c = sample_aggregate_gmm(mix.X, 2, ApproxDP(EPS, DELTA), release=Release.of(acct, seed))
    err = mixture_error(w, m, c, mix.weights, mix.means, mix.covariances)
    assert err.max_component_tv <= 0.1, err.component_tv
    assert err.weight_error <= 0.02
    assert _spent_equals(acct, EPS, DELTA)


def test_recovers_unequal_weights_with_min_weight() -> None:
    mix = make_mixture(150_000, 3, 2, weights=[0.5, 0.3, 0.2], separation=3.0, random_state=3)
    acct = Accountant(ApproxDP(EPS, DELTA))
    w, m, c = sample_aggregate_gmm(
        mix.X,
        3,
        ApproxDP(EPS, DELTA),
        min_weight=0.2,
        release=Release.of(acct, 3),
    )
    err = mixture_error(w, m, c, mix.weights, mix.means, mix.covariances)
    assert err.max_component_tv <= 0.15, err.component_tv
    assert err.weight_error <= 0.02


# --------------------------------------------------------------------------- privacy unit


def test_round_points_are_a_per_chunk_map() -> None:
    """Neighbouring datasets change one chunk: whatever the released balls, every round's point
    set changes in at most that chunk's row (no group-privacy factor k needed)."""
    rng = np.random.default_rng(0)
    s, k, d = 40, 3, 2
    W = rng.dirichlet(np.ones(k), size=s)
    M = rng.normal(size=(s, k, d)) * 5
    W2, M2 = W.copy(), M.copy()
    W2[7] = rng.dirichlet(np.ones(k))  # chunk 7 changed
    M2[7] = rng.normal(size=(k, d)) * 5
    dummies = dummy_points(s, d, np.array([1.0, 2.0]), 3.0, rng)
    for trial in range(50):
        center = rng.normal(size=d) * 5
        radius = rng.uniform(0, 8)
        alive = np.linalg.norm(M - center, axis=2) > radius
        alive2 = np.linalg.norm(M2 - center, axis=2) > radius
        if trial % 5 == 0:  # a chunk with nothing left gets its dummy
            alive[3] = alive2[3] = False
        P, P2 = round_points(W, M, alive, dummies), round_points(W2, M2, alive2, dummies)
        differs = np.flatnonzero(np.any(P != P2, axis=1))
        assert set(differs.tolist()) <= {7}
        assert P.shape == (s, d)
    np.testing.assert_array_equal(round_points(W, M, np.zeros((s, k), bool), dummies), dummies)


def test_dummies_never_share_a_ball() -> None:
    radii = np.array([0.5, 1.0, 4.0])
    P = dummy_points(100, 3, radii, 3.0, np.random.default_rng(1))
    gaps = np.linalg.norm(np.diff(P, axis=0), axis=1)
    assert gaps.min() >= 4 * 3.0 * radii.max() * (1 - 1e-12)
    assert np.linalg.norm(P, axis=1).min() >= 1e3 * radii.max() * (1 - 1e-12)


def test_fixed_size_subset_add_remove_is_one_replacement() -> None:
    rng = np.random.default_rng(2)
    n, d, m = 60, 2, 20
    data = rng.normal(size=(n, d))
    keys = rng.random(n)
    pad = np.array([100.0, 100.0])
    for size in (10, 19, 20, 21, 35):
        members = np.sort(rng.choice(n, size=size, replace=False))
        for removed in members[:5]:
            other = members[members != removed]
            a = fixed_size_subset(data, members, keys, m, pad, np.random.default_rng(0))
            b = fixed_size_subset(data, other, keys, m, pad, np.random.default_rng(0))
            ca = Counter(map(tuple, a))
            cb = Counter(map(tuple, b))
            assert a.shape == b.shape == (m, d)
            assert sum((ca - cb).values()) <= 1 and sum((cb - ca).values()) <= 1
    # padding uses the released point, never other data
    few = fixed_size_subset(data, np.array([1, 2]), keys, 5, pad, rng)
    assert (few == pad).all(axis=1).sum() == 3


def test_estimation_is_charged_twice_per_part_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """k CoinPress runs on disjoint parts: each gets ρ_E, the accountant is charged 2ρ_E (a
    replaced row can leave one part and join another)."""
    seen: list[float] = []
    real = ridge.gaussian_of_rows  # the practical part learner's CoinPress (ridge.ridged_gaussian)

    def spy(rows, rho, **kw):
        seen.append(rho)
        return real(rows, rho, **kw)

    monkeypatch.setattr(ridge, "gaussian_of_rows", spy)
    rng = np.random.default_rng(4)
    data = np.vstack([rng.normal(size=(3000, 2)), rng.normal(size=(3000, 2)) + 20])
    centers = np.array([[0.0, 0.0], [20.0, 20.0]])
    labels = nearest_center(data, centers)
    priors = [ComponentPrior(c, 1.0, (0.1, 10.0)) for c in centers]
    acct = Accountant(ZCDP(1.0))
    w, m, c, _ = estimate_components(
        data,
        Partition(labels, rng.random(len(data))),
        priors,
        ZCDP(0.1),
        ZCDP(0.6),
        beta=0.05,
        constants="practical",
        release=Release.of(acct, NoiseSource(0), "t"),
    )
    assert seen == [pytest.approx(0.3), pytest.approx(0.3)]
    est = [e for e in acct.ledger if e.step == "t/estimate"]
    assert len(est) == 1 and est[0].cost == ZCDP(0.6)
    assert acct.spent.rho == pytest.approx(0.7)
    np.testing.assert_allclose(w, [0.5, 0.5], atol=0.02)
    np.testing.assert_allclose(m, centers, atol=0.1)
    np.testing.assert_allclose(c, np.stack([np.eye(2)] * 2), atol=0.15)


def test_count_release_has_histogram_sensitivity() -> None:
    """The joint count vector is calibrated to L2 sensitivity √2 (one row moves parts)."""
    acct = Accountant(ZCDP(1.0))
    data = np.random.default_rng(5).normal(size=(200, 2))
    labels = (data[:, 0] > 0).astype(int)
    priors = [ComponentPrior(np.zeros(2), 1.0, (0.1, 10.0))] * 2
    estimate_components(
        data,
        Partition(labels, np.arange(200) / 200),
        priors,
        ZCDP(0.1),
        ZCDP(0.2),
        beta=0.05,
        constants="practical",
        release=Release.of(acct, NoiseSource(0), "t"),
    )
    entry = acct.ledger[0]
    assert entry.step == "t/counts" and entry.sensitivity == pytest.approx(math.sqrt(2))


# --------------------------------------------------------------------------- budget


@pytest.mark.parametrize("k, d", [(1, 2), (2, 3), (3, 10), (5, 2)])
@pytest.mark.parametrize("eps", [0.3, 1.0, 5.0])
def test_plan_composes_to_exactly_the_budget(k: int, d: int, eps: float) -> None:
    budget = ApproxDP(eps, 1e-6)
    plan = plan_sa_budget(budget, k, d)
    acct = Accountant(budget)
    for part in plan.all():
        acct.spend(part)
    assert _spent_equals(acct, eps, 1e-6)
    # round j's share grows with the number of clusters it has to separate
    eps_r = [r.epsilon for r in plan.rounds]
    assert all(a >= b for a, b in zip(eps_r, eps_r[1:], strict=False))
    assert math.isclose(sum(eps_r), 0.7 * eps, rel_tol=1e-12)


def test_plan_rejects_pure_and_zcdp_budgets() -> None:
    with pytest.raises(PrivacyBudgetError):
        plan_sa_budget(PureDP(1.0), 2, 2)  # type: ignore[arg-type]
    with pytest.raises(PrivacyBudgetError):
        plan_sa_budget(ZCDP(1.0), 2, 2)  # type: ignore[arg-type]


def test_failure_spends_the_whole_budget_and_names_the_step() -> None:
    mix = make_mixture(3_000, 3, 2, separation=3.0, random_state=0)
    budget = ApproxDP(0.5, DELTA)
    acct = Accountant(budget)
    with pytest.raises(EstimationFailed) as info:
        sample_aggregate_gmm(mix.X, 3, budget, release=Release.of(acct, 0))
    assert info.value.step.startswith("sample-aggregate/round-")
    need = sample_aggregate_requirements(n=3000, d=2, k=3, epsilon=0.5, delta=DELTA)
    assert info.value.needed_n == math.ceil(need.n_needed) > 3000
    assert _spent_equals(acct, 0.5, DELTA)
    assert any(e.mechanism == "unused" for e in acct.ledger)


def test_over_budget_accountant_refuses_before_any_noise() -> None:
    mix = make_mixture(4_000, 2, 2, separation=3.0, random_state=0)
    acct = Accountant(ApproxDP(1.0, DELTA))
    gen = np.random.default_rng(0)
    state = gen.bit_generator.state
    with pytest.raises(PrivacyBudgetError):
        sample_aggregate_gmm(mix.X, 2, ApproxDP(2.0, DELTA), release=Release.of(acct, gen))
    assert acct.ledger == [] and gen.bit_generator.state == state
    with pytest.raises(PrivacyBudgetError):  # a zCDP total cannot take (epsilon, delta) charges
        sample_aggregate_gmm(
            mix.X,
            2,
            ApproxDP(1.0, DELTA),
            release=Release.of(Accountant(ZCDP(10.0)), 0),
        )


# --------------------------------------------------------------------------- input handling


def test_inputs_are_not_mutated_and_chunk_warnings_are_silenced() -> None:
    mix = make_mixture(20_000, 2, 2, separation=3.0, random_state=1)
    X = mix.X.copy()
    X.flags.writeable = False

    def noisy_learner(rows, k, seed):
        warnings.warn("chunk-specific warning", RuntimeWarning, stacklevel=1)
        if seed % 7 == 0:
            raise np.linalg.LinAlgError("a failing chunk fit is dropped")
        return sa.gmm_learner(rows, k, seed)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sample_aggregate_gmm(
            X,
            2,
            ApproxDP(EPS, DELTA),
            options=SAOptions(learner=noisy_learner),
            release=Release.of(Accountant(ApproxDP(EPS, DELTA)), 1),
        )
    np.testing.assert_array_equal(X, mix.X)


def test_refusals_name_what_is_needed_and_contain_no_data() -> None:
    X = np.full((50, 2), 987.654321)
    budget = ApproxDP(1.0, DELTA)
    with pytest.raises(ValueError) as info:
        sample_aggregate_gmm(X, 2, budget, release=Release.of(Accountant(budget)))
    assert "chunks" in str(info.value) and "987" not in str(info.value)
    with pytest.raises(ValueError, match="min_weight"):
        sample_aggregate_gmm(
            np.zeros((5000, 2)),
            2,
            budget,
            min_weight=0.7,
            release=Release.of(Accountant(budget)),
        )
    bad = X.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError) as info:
        sample_aggregate_gmm(bad, 2, budget, release=Release.of(Accountant(budget)))
    assert "987" not in str(info.value)


def test_default_chunk_size_is_public_and_scales_with_min_weight() -> None:
    assert default_chunk_size(3, 2) == 60
    assert default_chunk_size(3, 10) == 66
    assert default_chunk_size(2, 2, 0.1) == 200


# --------------------------------------------------------------------------- secure noise


def test_secure_noise_path_runs() -> None:
    mix = make_mixture(12_000, 2, 2, separation=4.0, random_state=2)
    budget = ApproxDP(10.0, DELTA)
    acct = Accountant(budget)
    w, m, c = sample_aggregate_gmm(mix.X, 2, budget, release=Release.of(acct, None))
    err = mixture_error(w, m, c, mix.weights, mix.means, mix.covariances)
    assert err.max_component_tv <= 0.2
    assert _spent_equals(acct, 10.0, DELTA)
