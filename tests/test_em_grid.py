"""The start grid's cells per axis (``private_em._grid``; famall, issue 27): at most
``GRID_CELLS`` = 12, and with ``GRID_FINE_CELLS`` > 0 (24 by default; 0: 12 everywhere, as
before famall) at most that many where the grid has p ≤ 2 directions. A plan change from
public quantities only (n, d, the plan's ρ): the start histogram's replace-one sensitivity
does not depend on the number of cells, so the ledger is the same step by step and cost by
cost."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from _helpers import em_fit_following_its_plan

import privgauss as pg
from privgauss.mixture import em_starts as es
from privgauss.mixture import private_em as pe
from privgauss.privacy import ApproxDP

EPS1 = ApproxDP(1.0, 1e-6)


def test_on_by_default_and_off_at_zero(monkeypatch):
    assert pe.GRID_CELLS == 12 and pe.GRID_FINE_CELLS == 24
    plan = pe.em_plan(50_000, 2, 4, EPS1)
    assert (plan.grid_dims, plan.grid_cells) == (2, 21)
    monkeypatch.setattr(pe, "GRID_FINE_CELLS", 0)
    plan = pe.em_plan(50_000, 2, 4, EPS1)
    assert (plan.grid_dims, plan.grid_cells) == (2, 12)


@pytest.mark.parametrize("n, d, cells", [(50_000, 2, 21), (20_000, 2, 13), (50_000, 1, 24)])
def test_the_switch_refines_grids_of_at_most_two_directions(monkeypatch, n, d, cells):
    """At ε = 1 the room for cells (an expected ~5σ per occupied cell) allows 21 per axis at
    n = 5e4, d = 2 and 13 at n = 2e4; the cap of 24 binds at d = 1. Nothing else in the plan
    changes."""
    monkeypatch.setattr(pe, "GRID_FINE_CELLS", 0)
    off = pe.em_plan(n, d, 4, EPS1)
    monkeypatch.setattr(pe, "GRID_FINE_CELLS", 24)
    on = pe.em_plan(n, d, 4, EPS1)
    assert off.grid_cells == 12 and on.grid_cells == cells and on.grid_dims == off.grid_dims
    assert dataclasses.replace(on, grid_cells=12) == off


@pytest.mark.parametrize("n, d, budget", [(50_000, 3, ApproxDP(10.0, 1e-6)),
                                          (50_000, 6, ApproxDP(1e4, 1e-6)),
                                          (8_000, 2, EPS1)])
def test_the_switch_leaves_other_grids(monkeypatch, n, d, budget):
    """p ≥ 3 directions (where 24 per axis would be 24^p cells) keep the cap of 12; at
    n = 8000, d = 2, ε = 1 the room allows no more than 12 anyway."""
    monkeypatch.setattr(pe, "GRID_FINE_CELLS", 0)
    off = pe.em_plan(n, d, 3, budget)
    monkeypatch.setattr(pe, "GRID_FINE_CELLS", 24)
    assert pe.em_plan(n, d, 3, budget) == off


def test_a_finer_grid_keeps_the_ledger(monkeypatch):
    """n = 2e4, d = 2, k = 3 at ε = 1: on, the start histogram has 13² cells (12² off), the fit
    spends exactly its plan, and its ledger is the one of the switch off, step by step and
    cost by cost."""
    X = pg.datasets.make_mixture(20_000, 3, 2, separation=4.0, random_state=4).X
    assert _histogram_sizes_and_same_ledger(monkeypatch, X, 3, 1.0, "GRID_FINE_CELLS",
                                            (0, 24)) == [144, 169]


def _histogram_sizes_and_same_ledger(monkeypatch: Any, X: np.ndarray, k: int, epsilon: float,
                                     switch: str, values: tuple[int, int]) -> list[int]:
    """Fit with ``switch`` at each of ``values`` (each fit spending exactly its plan), check
    that the two ledgers agree step by step and cost by cost, and return the sizes of the
    released start histograms."""
    sizes: list[int] = []
    mech = es.gaussian_mechanism

    def spy(released: Any, *a: Any, **kw: Any) -> Any:
        if "em start histogram" in str(kw.get("step", "")):
            sizes.append(int(np.size(released)))
        return mech(released, *a, **kw)

    monkeypatch.setattr(es, "gaussian_mechanism", spy)
    ests = []
    for value in values:
        monkeypatch.setattr(pe, switch, value)
        ests.append(em_fit_following_its_plan(X, k, epsilon=epsilon))
    assert [(e.step, e.cost) for e in ests[0].ledger_] == \
        [(e.step, e.cost) for e in ests[1].ledger_]
    return sizes


@pytest.mark.parametrize("n, budget", [(20_000, ApproxDP(1e4, 1e-6)),
                                       (50_000, ApproxDP(10.0, 1e-6)),
                                       (2_000, ApproxDP(1e4, 1e-6))])
def test_seven_columns_get_a_grid_of_every_direction(monkeypatch, n, budget):
    """Where the room rule caps the grid at 6 directions and d = 7 (``GRID_MAX_DIMS``), the
    grid takes all seven (no random projection that can blur a 0/1 column; instflag) with the
    same cells per axis; nothing else in the plan changes. At d = 8, or where the room gives
    fewer than 6 directions (n = 5e4, ε = 1: 5), the grid is as before."""
    monkeypatch.setattr(pe, "GRID_MAX_DIMS", 6)
    off = pe.em_plan(n, 7, 3, budget)
    monkeypatch.setattr(pe, "GRID_MAX_DIMS", 7)
    on = pe.em_plan(n, 7, 3, budget)
    assert (off.grid_dims, on.grid_dims) == (6, 7)
    assert dataclasses.replace(on, grid_dims=6) == off
    assert pe.em_plan(n, 8, 3, budget).grid_dims == 6
    assert pe.em_plan(50_000, 7, 3, EPS1).grid_dims == 5


def test_the_cells_cap_lowers_the_cells_per_axis(monkeypatch):
    """m^p stays within ``GRID_MAX_CELLS``: with a cap of 4^7 a 6-per-axis grid of 7
    directions falls to 4 per axis."""
    budget = ApproxDP(1e4, 1e-6)
    assert pe.em_plan(20_000, 7, 3, budget).grid_cells == 6
    monkeypatch.setattr(pe, "GRID_MAX_CELLS", 4 ** 7)
    plan = pe.em_plan(20_000, 7, 3, budget)
    assert (plan.grid_dims, plan.grid_cells) == (7, 4)


def test_a_seven_direction_grid_keeps_the_ledger(monkeypatch):
    """n = 4000, d = 7, k = 2 at ε = 30 with a 0/1 column: the start histogram is released
    over the cells of all seven directions instead of six (the same sensitivity), the fit
    spends exactly its plan, and its ledger is the six-direction one step by step and cost by
    cost."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(4_000, 7))
    X[:, 4] = rng.integers(0, 2, 4_000)
    m = pe.em_plan(4_000, 7, 2, ApproxDP(30.0, 1e-6)).grid_cells
    assert _histogram_sizes_and_same_ledger(monkeypatch, X, 2, 30.0, "GRID_MAX_DIMS",
                                            (6, 7)) == [m ** 6, m ** 7]
