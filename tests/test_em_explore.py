"""The longer exploration of a plain, quiet three-run EM plan (issue 27, "explore"; on since
session 54 at ⌊T/2⌋ with no extra steps): ``PLAIN_EXTRA_STEPS`` more steps, the first
⌊T/``PLAIN_EXPLORE_DIV``⌋ exploring, the steps' ρ re-split by the plan's own rule; every other
plan untouched, the rule vanishing once the budget lets T reach ``MAX_STEPS``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from _helpers import em_fit_following_its_plan

import privgauss as pg
from privgauss.mixture import private_em as pe
from privgauss.privacy import ZCDP, ApproxDP
from privgauss.sensitivity import soft_statistics_zcdp

EPS1 = ApproxDP(1.0, 1e-6)


@pytest.fixture
def on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The switch as measured (``benchmarks/em_explore.py``'s ``div1.5-ex8``)."""
    monkeypatch.setattr(pe, "PLAIN_EXPLORE_DIV", 1.5)
    monkeypatch.setattr(pe, "PLAIN_EXTRA_STEPS", 8)


def _main_plan(monkeypatch: pytest.MonkeyPatch, *args: object, **kw: object) -> pe.EMPlan:
    with monkeypatch.context() as m:
        m.setattr(pe, "PLAIN_EXPLORE_DIV", pe.EXPLORE_DIV)
        m.setattr(pe, "PLAIN_EXTRA_STEPS", 0)
        return pe.em_plan(*args, **kw)  # type: ignore[arg-type]


def _rho(parts: list) -> float:  # type: ignore[type-arg]
    return sum(b.rho for _, b in parts if isinstance(b, ZCDP))


def test_by_default_a_quiet_plain_plan_picks_after_half_its_steps():
    """Since session 54 (the regret pick): a plain three-run plan under the noise gate
    explores ⌊T/2⌋ of the same T steps, on the same parts; an over-parameterised plan, a loud
    one and a wide one keep ⌊T/3⌋ or their own."""
    assert pe.PLAIN_EXPLORE_DIV == 2 and pe.PLAIN_EXTRA_STEPS == 0
    plan, base = pe.em_plan(50_000, 4, 6, EPS1), pe._base_plan(50_000, 4, 6, EPS1)
    assert base.components == 0 and base.explore_steps == base.n_steps // pe.EXPLORE_DIV
    assert plan.n_steps == base.n_steps and plan.rho_steps == base.rho_steps
    assert plan.explore_steps == plan.n_steps // 2 > base.explore_steps
    assert [b for _, b in plan.parts()] != [b for _, b in base.parts()]  # runs explore longer
    assert plan.rho_em == pytest.approx(base.rho_em, rel=1e-12)
    over = pe.em_plan(50_000, 13, 6, EPS1)
    assert over.components > 6 and over.explore_steps == over.n_steps // pe.EXPLORE_DIV
    small = pe.em_plan(2_500, 5, 3, EPS1)  # loud: the gate keeps the base plan
    assert small.components == 0 and small == pe._base_plan(2_500, 5, 3, EPS1)


@pytest.mark.parametrize("n, d, k", [(50_000, 4, 6), (50_000, 5, 5), (20_000, 4, 3)])
def test_a_plain_noisy_plan_explores_longer_on_the_same_budget(monkeypatch, on, n, d, k):
    plan = pe.em_plan(n, d, k, EPS1)
    base = _main_plan(monkeypatch, n, d, k, EPS1)
    assert base.components == 0 and base.n_starts == pe.N_STARTS < pe.WIDE_STARTS
    assert base.n_steps < pe.MAX_STEPS and base.explore_steps == base.n_steps // pe.EXPLORE_DIV
    assert pe._noise_change(base, 0, n, d, k) <= pe.OVER_NOISE
    T = base.n_steps + 8
    assert plan.n_steps == T and plan.components == 0 and plan.n_starts == pe.N_STARTS
    assert plan.explore_steps == math.floor(T / 1.5) > base.explore_steps
    # the same ρ for the EM steps, re-split: half on the last, the rest evenly
    rest = sum(base.rho_steps)
    assert sum(plan.rho_steps) == pytest.approx(rest, rel=1e-12)
    assert plan.rho_steps[-1] == pytest.approx(pe.LAST_SHARE * rest, rel=1e-12)
    assert np.allclose(plan.rho_steps[:-1], (1 - pe.LAST_SHARE) * rest / (T - 1), rtol=1e-12)
    # an exploring step's ρ over the three runs; the pick's share and every other part kept
    E = plan.explore_steps
    assert soft_statistics_zcdp(*plan.stat_rhos(E - 1)) == pytest.approx(
        plan.rho_steps[E - 1] / pe.N_STARTS)
    assert soft_statistics_zcdp(*plan.stat_rhos(E)) == pytest.approx(plan.rho_steps[E])
    for name in ("rho_init", "rho_score", "rho_count", "rho_final", "rho_atoms", "rho_em"):
        assert getattr(plan, name) == pytest.approx(getattr(base, name), rel=1e-12), name
    assert _rho(plan.parts()) == pytest.approx(_rho(base.parts()), rel=1e-12)
    names = [nm for nm, _ in plan.parts()]
    assert names.index("run selection") == names.index(f"step {E} run 3 statistics") + 1
    assert f"step {E + 1} run 1 statistics" not in names and f"step {T} statistics" in names


@pytest.mark.parametrize("n, d, k, budget, kw", [
    (50_000, 10, 3, EPS1, {}),  # k' plan
    (50_000, 4, 2, EPS1, {}),  # plain, T = MAX_STEPS already
    (50_000, 10, 3, ApproxDP(1e4, 1e-6), {}),  # wide
    (50_000, 4, 6, EPS1, {"n_steps": 15}),  # the user's schedule
    (50_000, 10, 3, ZCDP(0.5), {"n_public": 500}),
    (2_000, 5, 3, EPS1, {}),  # plain and loud (first step's noise > OVER_NOISE): the corpus'
])
def test_other_plans_are_untouched(monkeypatch, on, n, d, k, budget, kw):
    if n == 2_000:
        base = _main_plan(monkeypatch, n, d, k, budget)
        assert not base.components and pe._noise_change(base, 0, n, d, k) > pe.OVER_NOISE
    assert pe.em_plan(n, d, k, budget, **kw) == _main_plan(monkeypatch, n, d, k, budget, **kw)


def test_the_rule_vanishes_as_the_budget_grows(monkeypatch, on):
    """n = 5e4, d = 4, k = 6: longer at ε = 1, main's plan once T reaches MAX_STEPS."""
    changed = []
    for eps in (1.0, 3.0, 10.0, 100.0, 1e4):
        b = ApproxDP(eps, 1e-6)
        changed.append(pe.em_plan(50_000, 4, 6, b) != _main_plan(monkeypatch, 50_000, 4, 6, b))
    assert changed[0] and not any(changed[2:])


def test_a_longer_fit_follows_its_plan(on):
    """n = 19,000, d = 4, k = 3 at ε = 1: T 12 → 20, 13 exploring steps; the ledger is the
    plan's parts (tests/test_plan_ledger.py's check)."""
    X = pg.datasets.make_mixture(19_000, 3, 4, separation=8.0, random_state=12).X
    plan = pe.em_plan(19_000, 4, 3, EPS1)
    assert (plan.n_steps, plan.explore_steps) == (20, 13)
    est = em_fit_following_its_plan(X, 3)
    steps = {e.step for e in est.ledger_}
    assert any("step 13/20 run 3" in s for s in steps), sorted(steps)[:5]
    assert not any("step 14/20 run" in s for s in steps)
