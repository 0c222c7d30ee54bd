"""Private EM's histogram localisation at small n (issue 27): ε_L and em's requirement are sized
from the route the fit runs (the practical joint histograms and their CoinPress refinement),
not from the per-axis Laplace route; large-n plans are unchanged; the refusal, the
requirement and the preview agree; a small-n plan without re-whitening follows its ledger."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import privgauss as pg
from privgauss import methods
from privgauss.gaussian.histogram import histogram_gaussian
from privgauss.gaussian.histogram_budget import (
    localisation_min_epsilon,
    localisation_within_cap,
    refinement_error,
)
from privgauss.mechanisms import Release
from privgauss.mixture import private_em as pe
from privgauss.privacy import ledger_mismatch

DELTA = 1e-6
BUDGET = pg.ApproxDP(1.0, DELTA)


@pytest.mark.parametrize(("n", "d"), [(1000, 2), (2000, 5), (3000, 7), (20_000, 13),
                                      (10**6, 3)])
def test_localisation_min_epsilon_is_the_edge_of_the_cap(n: int, d: int) -> None:
    e = localisation_min_epsilon(n, d, DELTA / 2)
    assert math.isfinite(e)
    assert localisation_within_cap(n, d, e, DELTA / 2)
    assert not localisation_within_cap(n, d, e * (1.0 - 1e-3), DELTA / 2)
    # more rows need less; the practical route needs less than the per-axis Laplace one
    assert localisation_min_epsilon(2 * n, d, DELTA / 2) < e
    assert e < pe._theory_need(n, d, DELTA / 2)


def test_localisation_min_epsilon_is_inf_where_no_budget_helps() -> None:
    assert localisation_min_epsilon(5, 3, DELTA / 2) == math.inf


def _old_epsilon(n: int, d: int) -> float:
    return min(max(2.0 * pe._theory_need(n, d, DELTA / 2), 0.2), 0.5)


@pytest.mark.parametrize("d", [2, 3, 5, 8, 10, 13, 15])
def test_large_n_plans_are_unchanged(d: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """n = 5e4, ε = 1: ε_L is the share the per-axis route sized (0.2–0.37 ε) and the plan
    is the one without the practical need or the re-whitening gate (tuned there)."""
    plans = {k: pe.em_plan(50_000, d, k, BUDGET) for k in (2, 3, 4, 6)}
    for plan in plans.values():
        assert plan.localisation is not None
        assert plan.localisation.epsilon == pytest.approx(_old_epsilon(50_000, d), rel=1e-12)
        assert plan.rho_rewhiten > 0
    monkeypatch.setattr(pe, "_hist_need", lambda *args: 0.0)
    monkeypatch.setattr(pe, "REWHITEN_REACH", math.inf)
    for k, plan in plans.items():
        assert pe.em_plan(50_000, d, k, BUDGET) == plan


def _threshold(d: int, k: int = 3) -> int:
    return int(pe.em_requirements(1000, d, k, BUDGET).terms["histogram localisation"])


@pytest.mark.parametrize("d", [3, 7, 13])
def test_the_refined_route_runs_where_it_keeps_its_margins(
        d: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The histograms and their CoinPress refinement (the frame above the diagonal one's
    range: as em sized it without :data:`~privgauss.mixture.private_em.DIAGONAL_FRAME`)."""
    monkeypatch.setattr(pe, "DIAGONAL_FRAME", False)
    n = _threshold(d)
    # far below what the per-axis Laplace route asked (d = 5: 1.17e4 before)
    assert pe._theory_need(n, d, DELTA / 2) > 0.5 * pe.LOC_SHARE_SMALL
    for m in (n, int(1.3 * n), 4 * n):
        eps_l = pe._localisation_epsilon(m, d, 1.0, DELTA)
        assert eps_l <= pe.LOC_SHARE_SMALL + 1e-12
        # at ε_L: the joint histograms within their cap, the refinement's planned error
        # within LOC_MAX_ERROR
        assert localisation_within_cap(m, d, eps_l, DELTA / 2)
        assert eps_l >= localisation_min_epsilon(m, d, DELTA / 2)
        assert refinement_error(m, d, eps_l, DELTA / 2) <= pe.LOC_MAX_ERROR
        assert pe.em_plan(m, d, 3, BUDGET).localisation == pg.ApproxDP(eps_l, DELTA / 2)
    # just below, the largest share would not keep the margins: refused
    below = int(0.97 * n)
    assert not pe._localises(below, d, pe.LOC_SHARE_SMALL, DELTA / 2)
    assert pe.em_requirements(below, d, 3, BUDGET).terms["histogram localisation"] > below


def test_a_larger_budget_or_more_rows_never_raise_the_localisation_threshold() -> None:
    for d in (2, 5, 9):
        n1 = _threshold(d)
        n2 = int(pe.em_requirements(1000, d, 3, pg.ApproxDP(2.0, DELTA)).terms[
            "histogram localisation"])
        assert n2 < n1
        share = [pe._localisation_epsilon(n, d, 1.0, DELTA) for n in (n1, 2 * n1, 8 * n1)]
        assert share == sorted(share, reverse=True)


def test_refusal_requirement_and_preview_agree() -> None:
    d, k = 5, 3
    n_need = pe.em_requirements(1000, d, k, BUDGET).n_needed
    facts = methods.Facts("mixture", BUDGET, 1000, d, k=k)
    assert methods.requirements("mixture", "em", facts).n_needed == n_need
    X = pg.datasets.make_mixture(int(0.9 * n_need), k, d, separation=3.0, random_state=1).X
    with pytest.raises(pg.InvalidDataError) as info:
        pg.PrivateGaussianMixture(k, epsilon=1.0, delta=DELTA, method="em").fit(X)
    assert f"needs about n >= {n_need:.3g}" in str(info.value)
    assert pe.em_requirements(int(1.01 * n_need), d, k, BUDGET).ok


def test_rewhitening_is_planned_only_where_its_noise_is_below_its_reach(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pe, "DIAGONAL_FRAME", False)  # the refined route at this n
    # the plans compared below share their start shares (the k' plan's lean start aside)
    monkeypatch.setattr(pe, "LEAN_START", False)
    small = pe.em_plan(1800, 3, 2, BUDGET)
    assert small.localisation is not None and small.localisation.epsilon > 0.5
    assert small.rho_rewhiten == 0.0
    assert not any("re-whitening" in name for name, _ in small.parts())
    # the reach vanishes with the noise: re-whitened again at a larger budget or more rows
    assert pe.em_plan(1800, 3, 2, pg.ApproxDP(10.0, DELTA)).rho_rewhiten > 0
    assert pe.em_plan(20_000, 3, 2, BUDGET).rho_rewhiten > 0
    reach = [pe._rewhiten_reach(1800, 3, rho) for rho in (1e-4, 1e-2, 1.0)]
    assert reach == sorted(reach, reverse=True) and reach[-1] < 0.1
    # its ρ goes to the EM steps: with the gate open they get that much less
    monkeypatch.setattr(pe, "REWHITEN_REACH", math.inf)
    opened = pe.em_plan(1800, 3, 2, BUDGET, n_steps=small.n_steps)
    assert opened.rho_rewhiten > 0
    assert sum(small.rho_steps) == pytest.approx(sum(opened.rho_steps) + opened.rho_rewhiten,
                                                 rel=1e-12)


def test_small_n_fit_follows_its_plan_and_spends_exactly_its_budget(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pe, "DIAGONAL_FRAME", False)  # the refined route at this n
    n, d, k = 1800, 3, 2
    X = pg.datasets.make_mixture(n, k, d, separation=4.0, random_state=3).X
    est = pg.PrivateGaussianMixture(k, epsilon=1.0, delta=DELTA, method="em", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)
    plan = est.budget_plan_
    assert plan is not None and plan.sums_to_total()
    assert ledger_mismatch(plan, est.ledger_) is None
    assert not any("re-whitening" in e.step for e in est.ledger_)
    assert est.privacy_spent_.epsilon == pytest.approx(1.0, rel=1e-6)


@pytest.mark.parametrize("d", [3, 7])
def test_localisation_at_the_threshold_rarely_fails(d: int,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """At the smallest n em runs the refined route, the localisation at em's ε_L (Gaussian
    rows, 6 noise seeds here; benchmarks/results/em_small_n.md: 0 of 20 for d = 3, 7, 13)
    returns a Gaussian close to np.cov's."""
    n = _refined_threshold(d, monkeypatch)
    eps_l = pe._localisation_epsilon(n, d, 1.0, DELTA)
    rng = np.random.default_rng(d)
    A = rng.standard_normal((d, d)) / math.sqrt(d) + np.eye(d)
    X = rng.multivariate_normal(np.full(d, 1e3), A @ A.T, size=n)
    S = np.cov(X, rowvar=False)
    for seed in range(6):
        acct = pg.Accountant(pg.ApproxDP(eps_l, DELTA / 2))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _, C = histogram_gaussian(X, eps_l, DELTA / 2, release=Release.of(acct, seed))
        w = np.linalg.eigvalsh(np.linalg.solve(np.linalg.cholesky(S), np.linalg.solve(
            np.linalg.cholesky(S), C).T))
        assert 0.2 < w.min() and w.max() < 5.0, w


# ------------------------------------------------------- below it: the histograms' diagonal frame


def _refined_threshold(d: int, monkeypatch: pytest.MonkeyPatch) -> int:
    with monkeypatch.context() as m:
        m.setattr(pe, "DIAGONAL_FRAME", False)
        return _threshold(d)


def _refined_from(d: int, share: float) -> int:
    """The least n (to 1 %) from which the refined route keeps its margins within share·ε."""
    lo, hi = 2, 2
    while not pe._localises(hi, d, share, DELTA / 2):
        lo, hi = hi, 2 * hi
    while hi - lo > max(1, lo // 100):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if pe._localises(mid, d, share, DELTA / 2) else (mid, hi)
    return hi


@pytest.mark.parametrize("d", [3, 5, 7, 10])
def test_the_diagonal_frame_takes_over_below_the_refined_route(
        d: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the refined route would need more than DIAG_FROM (= LOC_SHARE_MAX) of ε, the plan
    localises by the histograms alone (at the whole (ε, δ/2) as their reference: within
    their cap there), and em's localisation term is the n from which they are — far below
    where the refined route kept its margins at LOC_SHARE_SMALL; above it nothing changes."""
    assert pe.DIAG_FROM == pe.LOC_SHARE_MAX
    refined = _refined_from(d, pe.DIAG_FROM)
    n = _threshold(d)
    assert n < 0.8 * _refined_threshold(d, monkeypatch) < 0.8 * refined
    assert localisation_within_cap(n, d, 1.0, DELTA / 2)
    assert not localisation_within_cap(int(0.97 * n), d, 1.0, DELTA / 2)
    for m in (n, (n + refined) // 2, int(0.99 * refined)):
        plan = pe.em_plan(m, d, 3, BUDGET)
        assert plan.diagonal and plan.localisation == pg.ApproxDP(1.0, DELTA / 2)
        assert "localisation octaves" in dict(plan.parts())
    for m in (int(1.02 * refined), 4 * refined):
        plan = pe.em_plan(m, d, 3, BUDGET)
        assert not plan.diagonal and plan.localisation is not None
        assert plan.localisation.epsilon <= pe.LOC_SHARE_MAX + 1e-12
    monkeypatch.setattr(pe, "DIAGONAL_FRAME", False)
    assert not pe.em_plan(n, d, 3, BUDGET).diagonal


def test_the_diagonal_plan_gives_the_histograms_their_need_and_em_the_rest(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The histograms' ρ is their need at n (the thresholds sized to half the bin they need,
    whatever ε), the octave reserve DIAG_TIE_SHARE + DIAG_WIDE_SHARE of what they leave, EM
    the rest;
    the zCDP parts add up to what (ε, δ − δ_h) converts to, and EM gets more than the refined
    route leaves it at its own threshold."""
    from privgauss.gaussian.histogram_budget import P_LOCATION, P_SCALE, _joint_rho
    from privgauss.privacy import approx_to_zcdp

    n, d = 2000, 5
    plan = pe.em_plan(n, d, 3, BUDGET)
    assert plan.diagonal
    dh = DELTA / 2 * 0.25
    need = _joint_rho(n // 2, P_SCALE, d, dh / 2) + _joint_rho(n, P_LOCATION, d, dh / 2)
    assert plan.rho_histograms == pytest.approx(need, rel=1e-9)
    assert plan.localisation_histograms is not None
    left = approx_to_zcdp(1.0, DELTA - plan.localisation_histograms.delta) - need
    tie, wide = pe.DIAG_TIE_SHARE * left, pe.DIAG_WIDE_SHARE * left
    assert plan.rho_refinement == pytest.approx(tie + wide, rel=1e-9)
    assert plan.octave_rhos() == pytest.approx((tie, wide), rel=1e-9)
    assert plan.rho_em == pytest.approx(left - plan.rho_refinement, rel=1e-9)
    monkeypatch.setattr(pe, "DIAGONAL_FRAME", False)
    refined = pe.em_plan(int(1.02 * _threshold(d)), d, 3, BUDGET)
    assert not refined.diagonal and refined.rho_em < plan.rho_em
    # with the reserve unspent (no tied or wide axes) EM gets more still
    assert refined.rho_em < 0.75 * (plan.rho_em + plan.rho_refinement)


def _tied_rows(n: int, d: int, seed: int) -> np.ndarray:
    """Correlated Gaussian columns and one that holds one value on 90 % of the rows, the rest
    spread (its spread needs the ties' octave release)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) @ (np.eye(d) + 0.5) + 3.0
    X[:, -1] = np.where(rng.random(n) < 0.9, 5.0, rng.normal(size=n) * 3.0)
    return X


@pytest.mark.parametrize("tied", [False, True])
def test_a_diagonal_frame_fit_follows_its_plan_and_spends_exactly_its_budget(tied: bool
                                                                            ) -> None:
    """Without tied columns the ledger follows the main line (the reserve spent by the last
    EM step), with one the ties branch (the reserve's tied-axes part by the octave release,
    the rest by the last step); either way exactly (ε, δ)."""
    n, d, k = 2000, 5, 3
    X = (_tied_rows(n, d, 4) if tied else
         pg.datasets.make_mixture(n, k, d, separation=3.0, random_state=1).X)
    est = pg.PrivateGaussianMixture(k, epsilon=1.0, delta=DELTA, method="em", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)
    plan = est.budget_plan_
    em = pe.em_plan(n, d, k, BUDGET)
    assert em.diagonal and plan is not None and plan.sums_to_total()
    steps = [e.step for e in est.ledger_]
    assert not any("coinpress" in s for s in steps)
    assert ("localise-ties" in steps) is tied and "localise-wide" not in steps
    assert ledger_mismatch(plan, est.ledger_) is None
    main = pg.privacy.BudgetPlan.of(plan.total, dict(plan.parts), groups=plan.groups)
    assert (ledger_mismatch(main, est.ledger_) is None) is not tied
    T = em.n_steps
    last = [e.cost.rho for e in est.ledger_ if e.step.startswith(f"em step {T}/{T} ")]
    tie, wide = em.octave_rhos()
    assert sum(last) == pytest.approx(em.rho_steps[-1] + wide + (0.0 if tied else tie),
                                      rel=1e-12)
    assert [e.cost.rho for e in est.ledger_ if e.step == "em start histogram"] == [em.rho_init]
    ties = [e.cost.rho for e in est.ledger_ if e.step == "localise-ties"]
    assert ties == ([pytest.approx(tie, rel=1e-12)] if tied else [])
    assert est.privacy_spent_.epsilon == pytest.approx(1.0, rel=1e-6)
    assert est.privacy_spent_.delta == pytest.approx(DELTA, rel=1e-6)
