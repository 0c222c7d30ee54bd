"""An over-parameterised EM plan's lean start (issue 27, session 47): its start histogram,
k-means start, re-whitening and run pick take ``LEAN_*`` shares of ρ_EM and the EM steps the
rest; every other plan keeps the standard shares, the parts still compose to the budget and
a fit's ledger is its plan."""

from __future__ import annotations

import pytest
from _helpers import em_fit_following_its_plan

import privgauss as pg
from privgauss.mixture import private_em as pe
from privgauss.privacy import ZCDP, ApproxDP

EPS1 = ApproxDP(1.0, 1e-6)


def _rho(parts: list) -> float:  # type: ignore[type-arg]
    return sum(b.rho for _, b in parts if isinstance(b, ZCDP))


def _plans(monkeypatch: pytest.MonkeyPatch, *args: object, **kw: object
           ) -> tuple[pe.EMPlan, pe.EMPlan]:
    """The plan with the lean start (main) and with the standard shares."""
    plan = pe.em_plan(*args, **kw)  # type: ignore[arg-type]
    with monkeypatch.context() as m:
        m.setattr(pe, "LEAN_START", False)
        return plan, pe.em_plan(*args, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("n, d, k", [(50_000, 15, 5), (50_000, 10, 3), (5_000, 5, 3)])
def test_an_over_parameterised_plan_moves_the_start_shares_to_the_steps(monkeypatch, n, d, k):
    plan, std = _plans(monkeypatch, n, d, k, EPS1)
    assert pe.LEAN_START and plan.components == std.components > k
    assert plan.reduce_at is not None and plan.reduce_at == std.reduce_at
    rho_em = plan.rho_em
    assert rho_em == pytest.approx(std.rho_em, rel=1e-12)
    assert plan.rho_init == pytest.approx(pe.LEAN_INIT * rho_em, rel=1e-12)
    assert sum(plan.rho_kmeans_steps) + plan.rho_spread == pytest.approx(
        pe.LEAN_KMEANS * rho_em, rel=1e-12)
    assert plan.rho_score == pytest.approx(pe.LEAN_SCORE * rho_em, rel=1e-12)
    assert std.rho_init == pytest.approx(pe.INIT_SHARE * rho_em, rel=1e-12)
    assert std.rho_score == pytest.approx(pe.SCORE_SHARE * rho_em, rel=1e-12)
    assert plan.rho_rewhiten == pytest.approx(
        pe.LEAN_REWHITEN / pe.REWHITEN_SHARE * std.rho_rewhiten, rel=1e-12)
    # what the start, k-means, re-whitening and pick give up, the EM steps get, split as any
    # k' plan's (OVER_SHARE on the k' steps, half of the rest on the last)
    freed = (std.rho_init - plan.rho_init + std.rho_score - plan.rho_score
             + std.rho_rewhiten - plan.rho_rewhiten
             + sum(std.rho_kmeans_steps) + std.rho_spread
             - sum(plan.rho_kmeans_steps) - plan.rho_spread)
    assert freed > 0.1 * rho_em
    rest = sum(plan.rho_steps)
    assert rest == pytest.approx(sum(std.rho_steps) + freed, rel=1e-9)
    assert plan.rho_steps[-1] == pytest.approx(0.5 * (1 - pe.OVER_SHARE) * rest, rel=1e-9)
    for name in ("rho_count", "rho_final", "rho_atoms", "rho_refinement", "rho_histograms"):
        assert getattr(plan, name) == pytest.approx(getattr(std, name), rel=1e-12), name
    assert _rho(plan.parts()) == pytest.approx(_rho(std.parts()), rel=1e-12)


@pytest.mark.parametrize("n, d, k, budget, kw", [
    (50_000, 4, 2, EPS1, {}),  # plain (quiet)
    (50_000, 4, 6, EPS1, {}),  # plain, three runs
    (50_000, 10, 3, ApproxDP(1e4, 1e-6), {}),  # wide: the shares vanish with the noise
    (50_000, 15, 5, ApproxDP(1e4, 1e-6), {}),
    (50_000, 10, 3, EPS1, {"n_steps": 15}),  # the user's schedule: no k' run
])
def test_every_other_plan_keeps_the_standard_shares(monkeypatch, n, d, k, budget, kw):
    plan, std = _plans(monkeypatch, n, d, k, budget, **kw)
    assert plan.components == 0 and plan == std
    rho_em = plan.rho_em
    assert plan.rho_init == pytest.approx(pe.INIT_SHARE * rho_em, rel=1e-12)


def test_a_lean_fit_charges_its_plan():
    """n = 12,000, d = 10, k = 3 at ε = 1 (an over-parameterised plan): the ledger is the
    plan's parts (tests/test_plan_ledger.py's check), its start at the lean share."""
    X = pg.datasets.make_mixture(12_000, 3, 10, separation=8.0, random_state=3).X
    plan = pe.em_plan(12_000, 10, 3, EPS1)
    assert plan.components > 3
    est = em_fit_following_its_plan(X, 3)
    start = [e.cost.rho for e in est.ledger_ if e.step == "em start histogram"]
    assert start == [pytest.approx(pe.LEAN_INIT * plan.rho_em, rel=1e-12)]
