"""A plain noisy three-run EM plan explores longer before its run pick (issue 27, "explore"):
``PLAIN_EXTRA_STEPS`` more steps, the first ⌊T/``PLAIN_EXPLORE_DIV``⌋ exploring, the steps'
ρ re-split by the plan's own rule; every other plan is untouched, and the rule vanishes once
the budget lets T reach ``MAX_STEPS``."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privgauss.mixture import private_em as pe
from privgauss.privacy import ZCDP, ApproxDP

EPS1 = ApproxDP(1.0, 1e-6)


def _main_plan(monkeypatch: pytest.MonkeyPatch, *args: object, **kw: object) -> pe.EMPlan:
    with monkeypatch.context() as m:
        m.setattr(pe, "PLAIN_EXPLORE_DIV", float(pe.EXPLORE_DIV))
        m.setattr(pe, "PLAIN_EXTRA_STEPS", 0)
        return pe.em_plan(*args, **kw)  # type: ignore[arg-type]


def _rho(parts: list) -> float:  # type: ignore[type-arg]
    return sum(b.rho for _, b in parts if isinstance(b, ZCDP))


@pytest.mark.parametrize("n, d, k", [(50_000, 4, 6), (50_000, 5, 5), (20_000, 4, 3)])
def test_a_plain_noisy_plan_explores_longer_on_the_same_budget(monkeypatch, n, d, k):
    plan = pe.em_plan(n, d, k, EPS1)
    base = _main_plan(monkeypatch, n, d, k, EPS1)
    assert base.components == 0 and base.n_starts == pe.N_STARTS < pe.WIDE_STARTS
    assert base.n_steps < pe.MAX_STEPS and base.explore_steps == base.n_steps // pe.EXPLORE_DIV
    assert pe._noise_change(base, 0, n, d, k) <= pe.OVER_NOISE
    T = base.n_steps + pe.PLAIN_EXTRA_STEPS
    assert plan.n_steps == T and plan.components == 0 and plan.n_starts == pe.N_STARTS
    assert plan.explore_steps == math.floor(T / pe.PLAIN_EXPLORE_DIV) > base.explore_steps
    # the same ρ for the EM steps, re-split: half on the last, the rest evenly
    rest = sum(base.rho_steps)
    assert sum(plan.rho_steps) == pytest.approx(rest, rel=1e-12)
    assert plan.rho_steps[-1] == pytest.approx(pe.LAST_SHARE * rest, rel=1e-12)
    assert np.allclose(plan.rho_steps[:-1], (1 - pe.LAST_SHARE) * rest / (T - 1), rtol=1e-12)
    # an exploring step's ρ over the three runs, the pick's share and every other part kept
    E = plan.explore_steps
    assert sum(plan.stat_rhos(E - 1)) == pytest.approx(plan.rho_steps[E - 1] / pe.N_STARTS)
    assert sum(plan.stat_rhos(E)) == pytest.approx(plan.rho_steps[E])
    for name in ("rho_init", "rho_score", "rho_count", "rho_final", "rho_atoms", "rho_em"):
        assert getattr(plan, name) == pytest.approx(getattr(base, name), rel=1e-12), name
    assert _rho(plan.parts()) == pytest.approx(_rho(base.parts()), rel=1e-12)
    names = [nm for nm, _ in plan.parts()]
    assert names.index("run selection") == names.index(f"step {E} run 3 moments") + 1
    assert f"step {E + 1} run 1 counts" not in names and f"step {T} moments" in names


@pytest.mark.parametrize("n, d, k, budget, kw", [
    (50_000, 10, 3, EPS1, {}),  # k' plan
    (50_000, 4, 2, EPS1, {}),  # plain, T = MAX_STEPS already
    (50_000, 10, 3, ApproxDP(1e4, 1e-6), {}),  # wide
    (50_000, 4, 6, EPS1, {"n_steps": 15}),  # the user's schedule
    (50_000, 10, 3, ZCDP(0.5), {"n_public": 500}),
    (2_000, 5, 3, EPS1, {}),  # plain and loud (first step's noise > OVER_NOISE): the corpus'
])
def test_other_plans_are_untouched(monkeypatch, n, d, k, budget, kw):
    if n == 2_000:
        base = _main_plan(monkeypatch, n, d, k, budget)
        assert not base.components and pe._noise_change(base, 0, n, d, k) > pe.OVER_NOISE
    assert pe.em_plan(n, d, k, budget, **kw) == _main_plan(monkeypatch, n, d, k, budget, **kw)


def test_the_rule_vanishes_as_the_budget_grows(monkeypatch):
    """n = 5e4, d = 4, k = 6: longer at ε = 1, main's plan once T reaches MAX_STEPS."""
    changed = []
    for eps in (1.0, 3.0, 10.0, 100.0, 1e4):
        b = ApproxDP(eps, 1e-6)
        changed.append(pe.em_plan(50_000, 4, 6, b) != _main_plan(monkeypatch, 50_000, 4, 6, b))
    assert changed[0] and not any(changed[2:])
