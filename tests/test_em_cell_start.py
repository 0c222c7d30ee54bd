"""The cells' mixture start (famlowd2, issue 27; ``CELL_START`` = 40, 0 switches it off): in a
plain plan whose start grid misses at most ``CELL_GATE_SLACK`` = 1 directions (famd6; 0: a full
grid only) the histogram start is replaced by a k-component mixture fitted by EM with
restarts to the released start cells (post-processing). Off, every fit is the k-means histogram
start's; on, only that one start changes — the plan, the ledger, the other starts and every
noise draw stay as they are."""

from __future__ import annotations

import warnings
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
    assert pe.CELL_START == 40
    assert pe.CELL_GATE_SLACK == 1  # famd6: a grid that misses one direction is gated too
    plan = pe.em_plan(6_000, 3, 6, EPS1)
    assert pe._cell_start(plan, 3, 6)
    monkeypatch.setattr(pe, "CELL_START", 0)
    assert not pe._cell_start(plan, 3, 6)


@pytest.mark.parametrize("n, d, k", [(3_000, 2, 3), (8_000, 2, 6), (4_000, 3, 4),
                                     (6_000, 3, 6), (12_000, 4, 4), (20_000, 4, 6)])
def test_the_gate_opens_on_plain_full_grid_plans(monkeypatch, n, d, k):
    """At ε = 1 where the steps are loud (first-step noise > ``SUMMARY_NOISE``) and the plan
    has no k' run: small n at d ≤ 4. (At n = 5e4, where it was measured, the summary start
    has its place since session 52.)"""
    monkeypatch.setattr(pe, "CELL_START", 40)
    plan = pe.em_plan(n, d, k, EPS1)
    assert plan.n_starts == pe.N_STARTS and plan.grid_dims == d
    assert plan.start_clusters == k and plan.components == 0
    assert pe._cell_start(plan, d, k)


@pytest.mark.parametrize("n, d, k, budget", [
    (50_000, 7, 4, EPS1),  # the grid misses two directions (and the plan is not plain)
    (50_000, 10, 3, EPS1),  # over-parameterised (k' run)
    (8_000, 4, 3, EPS1),  # over-parameterised at small n
    (50_000, 3, 4, ApproxDP(1e4, 1e-6)),  # wide, summary start: quiet steps
    (50_000, 5, 6, ApproxDP(1e4, 1e-6)),
    (8_000, 2, 6, ApproxDP(1e4, 1e-6)),
    (50_000, 2, 6, ApproxDP(10.0, 1e-6)),  # three runs, summary start
    (50_000, 3, 4, EPS1),  # three runs, summary start at ε = 1 (SUMMARY_NOISE = 0.1)
    (21_638, 3, 3, EPS1),
])
def test_the_gate_stays_closed_elsewhere(monkeypatch, n, d, k, budget):
    monkeypatch.setattr(pe, "CELL_START", 40)
    plan = pe.em_plan(n, d, k, budget)
    assert not pe._cell_start(plan, d, k)


@pytest.mark.parametrize("n, d, k", [(1_800, 3, 4), (2_000, 3, 6), (2_500, 3, 6)])
def test_the_gate_slack_opens_plans_whose_grid_misses_one_direction(monkeypatch, n, d, k):
    """famd6: a plain plan whose start grid is a (d − 1)-dimensional projection (d = 3 at
    n = 1800–2500, ε = 1; d = 6 at n = 5e4 before the summary start took those plans) is gated by
    ``CELL_GATE_SLACK`` ≥ 1, not at 0."""
    monkeypatch.setattr(pe, "CELL_START", 40)
    plan = pe.em_plan(n, d, k, EPS1)
    assert plan.grid_dims == d - 1 and plan.n_starts == pe.N_STARTS and plan.components == 0
    monkeypatch.setattr(pe, "CELL_GATE_SLACK", 0)
    assert not pe._cell_start(plan, d, k)
    monkeypatch.setattr(pe, "CELL_GATE_SLACK", 1)
    assert pe._cell_start(plan, d, k)


def test_the_gate_slack_counts_the_unseen_directions(monkeypatch):
    """n = 2072, d = 4, k = 3 (Chile's shape): a plain plan on a 2-dimensional grid opens at
    a slack of 2, not of 1."""
    monkeypatch.setattr(pe, "CELL_START", 40)
    plan = pe.em_plan(2_072, 4, 3, EPS1)
    assert plan.grid_dims == 2 and plan.n_starts == pe.N_STARTS and plan.components == 0
    for slack, gated in ((0, False), (1, False), (2, True)):
        monkeypatch.setattr(pe, "CELL_GATE_SLACK", slack)
        assert pe._cell_start(plan, 4, 3) is gated, slack


def test_the_gate_closes_as_the_budget_grows(monkeypatch):
    """n = 4000, d = 3, k = 4: from ε = 10 on the plan is no longer plain (summary or wide);
    n = 1800 (gated by the slack at ε = 1 and 3): from ε = 10 on; n = 12,000, d = 4: from
    ε = 3 on (the summary start)."""
    monkeypatch.setattr(pe, "CELL_START", 40)
    monkeypatch.setattr(pe, "CELL_GATE_SLACK", 1)
    for n, d, k, last_open in ((4_000, 3, 4, 3.0), (1_800, 3, 4, 3.0), (12_000, 4, 4, 1.0)):
        for eps in (1.0, 3.0, 10.0, 100.0, 1e3, 1e4):
            plan = pe.em_plan(n, d, k, ApproxDP(eps, 1e-6))
            assert pe._cell_start(plan, d, k) is (eps <= last_open), (n, eps)


def _starts(X: np.ndarray, k: int, cell: int, monkeypatch: pytest.MonkeyPatch
            ) -> tuple[list[Any], Any]:
    """The starts a fit passes to its EM steps, and the fitted estimator."""
    got: list[Any] = []
    steps = pe._em_steps

    def spy(Z: Any, runs: list[Any], *a: Any, **kw: Any) -> Any:
        got.append([tuple(np.array(x) for x in r) for r in runs])
        return steps(Z, runs, *a, **kw)

    with monkeypatch.context() as m:
        m.setattr(pe, "CELL_START", cell)
        m.setattr(pe, "_em_steps", spy)
        est = em_fit_following_its_plan(X, k)
    return got[0], est


def test_the_switch_replaces_the_histogram_start_only(monkeypatch):
    """n = 3000, d = 2, k = 3 at ε = 1 (a plain full-grid plan): on, the second start is the
    cells' mixture (different covariances: full, not the isotropic cell spread) and the
    k-means and whitened-frame starts are main's bit for bit; the ledger is the plan's and
    main's, step by step and cost by cost."""
    X = pg.datasets.make_mixture(3_000, 3, 2, separation=4.0, random_state=5).X
    off, est0 = _starts(X, 3, 0, monkeypatch)
    on, est1 = _starts(X, 3, 40, monkeypatch)
    assert len(off) == len(on) == pe.N_STARTS
    for a, b in zip(off[0] + off[2], on[0] + on[2], strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.allclose(off[1][2], on[1][2])
    # main's histogram start is isotropic in the standardised frame; the mixture's is not
    # constrained so: its components' covariances differ from one another
    assert not np.allclose(on[1][2][0], on[1][2][1])
    np.testing.assert_allclose(on[1][0].sum(), 1.0)
    assert [(e.step, e.cost) for e in est0.ledger_] == [(e.step, e.cost) for e in est1.ledger_]


def test_the_slack_replaces_the_histogram_start_of_a_projected_grid(monkeypatch):
    """n = 2000, d = 3, k = 4 at ε = 1 (a plain plan — kept plain here: with the steps' joint
    releases it is over-parameterised there, session 57 — and a 2-dimensional start grid): at
    ``CELL_GATE_SLACK`` = 1 the second start is the cells' mixture, the other two starts and
    the ledger (step by step, cost by cost, and equal to the plan) are those of slack 0; the
    mixture's means lie in the grid's span and its covariances keep the frame's unit variance
    along the unseen direction."""
    X = pg.datasets.make_mixture(2_000, 4, 3, separation=8.0, random_state=3).X
    grids: list[np.ndarray] = []
    cells = es.cell_gmm_start

    def spy(c: Any, w: Any, V: np.ndarray, *a: Any) -> Any:
        grids.append(V)
        return cells(c, w, V, *a)

    monkeypatch.setattr(es, "cell_gmm_start", spy)
    monkeypatch.setattr(pe, "OVERPARAM", 1.0)
    got = []
    for slack in (0, 1):
        monkeypatch.setattr(pe, "CELL_GATE_SLACK", slack)
        got.append(_starts(X, 4, 40, monkeypatch))
    (off, est0), (on, est1) = got
    assert len(grids) == 1 and grids[0].shape == (3, 2)  # called at slack 1 only
    for a, b in zip(off[0] + off[2], on[0] + on[2], strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.allclose(off[1][2], on[1][2])
    assert len(np.unique(on[1][1].round(9), axis=0)) == 4  # one cell each at this n
    u = np.linalg.svd(grids[0], full_matrices=True)[0][:, -1]  # the direction the grid missed
    np.testing.assert_allclose(on[1][1] @ u, 0.0, atol=1e-12)
    np.testing.assert_allclose(on[1][2] @ u, np.tile(u, (4, 1)), atol=1e-5)  # + reg_covar
    assert [(e.step, e.cost) for e in est0.ledger_] == [(e.step, e.cost) for e in est1.ledger_]


def test_cell_gmm_start_on_a_projected_grid():
    """Cells on a grid of the first axis of a 2-dimensional frame (V = e₁): the mixture's
    means have no second coordinate and its covariances the frame's unit variance there."""
    g = np.linspace(-3, 3, 25)
    width = g[1] - g[0]
    cells = np.column_stack([g, np.zeros_like(g)])
    wts = 1e5 * (0.5 * np.exp(-0.5 * ((g + 1.5) / 0.4) ** 2)
                 + 0.5 * np.exp(-0.5 * ((g - 1.5) / 0.4) ** 2))
    keep = wts > 1.0
    V = np.array([[1.0], [0.0]])
    w, mu, S = es.cell_gmm_start(cells[keep], wts[keep], V, width, 2, np.random.default_rng(0),
                                 10)
    order = np.argsort(mu[:, 0])
    np.testing.assert_allclose(w[order], [0.5, 0.5], atol=0.02)
    np.testing.assert_allclose(mu[order, 0], [-1.5, 1.5], atol=0.05)
    np.testing.assert_array_equal(mu[:, 1], 0.0)
    np.testing.assert_allclose(S[:, 1, 1], 1.0, atol=1e-5)  # + reg_covar
    np.testing.assert_allclose(S[:, 0, 1], 0.0, atol=1e-9)
    np.testing.assert_allclose(S[order, 0, 0], 0.4**2 + width**2 / 12.0, atol=0.02)


def test_the_switch_is_ignored_where_the_gate_is_closed(monkeypatch):
    """n = 8000, d = 4, k = 3 (an over-parameterised plan): the same fit either way."""
    X = pg.datasets.make_mixture(8_000, 3, 4, separation=4.0, random_state=2).X
    plan = pe.em_plan(8_000, 4, 3, EPS1)
    assert plan.components > 3
    out = []
    for cell in (0, 40):
        with monkeypatch.context() as m, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m.setattr(pe, "CELL_START", cell)
            out.append(pg.PrivateGaussianMixture(3, method="em", random_state=0, epsilon=1.0,
                                                 delta=1e-6, enforce_requirements=False).fit(X))
    np.testing.assert_array_equal(out[0].means_, out[1].means_)
    np.testing.assert_array_equal(out[0].covariances_, out[1].covariances_)


def test_cell_gmm_start_fits_the_cells():
    """Two elongated clusters on a fine grid of cells (weights 0.3 / 0.7, crossing shapes):
    the cells' mixture recovers the weights, means and the clusters' own orientations (a
    k-means of the cells could not: it has no shapes)."""
    g = np.linspace(-3, 3, 41)
    cells = np.array([(x, y) for x in g for y in g])
    width = g[1] - g[0]

    def dens(m: np.ndarray, S: np.ndarray) -> np.ndarray:
        D = cells - m
        q = np.einsum("ia,ab,ib->i", D, np.linalg.inv(S), D)
        return np.exp(-0.5 * q) / (2 * np.pi * np.sqrt(np.linalg.det(S)))

    m1, m2 = np.array([-1.0, 0.0]), np.array([1.0, 0.5])
    S1, S2 = np.array([[0.1, 0.0], [0.0, 0.6]]), np.array([[0.4, 0.15], [0.15, 0.1]])
    wts = 1e6 * width**2 * (0.3 * dens(m1, S1) + 0.7 * dens(m2, S2))
    keep = wts > 1.0
    rng = np.random.default_rng(0)
    w, mu, S = es.cell_gmm_start(cells[keep], wts[keep], np.eye(2), width, 2, rng, 10)
    order = np.argsort(mu[:, 0])
    np.testing.assert_allclose(w[order], [0.3, 0.7], atol=0.02)
    np.testing.assert_allclose(mu[order], [m1, m2], atol=0.05)
    np.testing.assert_allclose(S[order[0]], S1, atol=0.05)
    np.testing.assert_allclose(S[order[1]], S2, atol=0.05)


def test_side_rng_leaves_the_stream():
    a, b = np.random.default_rng(7), np.random.default_rng(7)
    side = es._side_rng(a)
    side.normal(size=100)
    np.testing.assert_array_equal(a.normal(size=5), b.normal(size=5))
    assert not np.array_equal(es._side_rng(np.random.default_rng(7)).normal(size=5),
                              np.random.default_rng(7).normal(size=5))
