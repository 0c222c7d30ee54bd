"""Private EM at mid budgets (issue 27, brief midspeed): the exploring runs' freeze reads each
released change less what its step's noise alone makes (``NOISE_FREEZE``), and a three-run
plan's runs freeze and merge where a wide plan's would (``FREEZE_PLAIN``). Both are functions
of released models and public facts only; the stopping rule and the plans' parts are
unchanged, and a fit whose runs freeze charges its plan in order without their skipped
steps."""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest
from _helpers import charged_parts

import privgauss as pg
from privgauss.mixture import private_em as pe
from privgauss.privacy import ApproxDP


def _mixture(n: int, d: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """k well-separated rotated Gaussians in d columns: n training and 5,000 held-out rows."""
    rng = np.random.default_rng(seed)
    means = rng.normal(scale=4.0, size=(k, d))
    roots = rng.normal(size=(k, d, d)) / math.sqrt(d) + 0.5 * np.eye(d)
    w = rng.dirichlet(np.full(k, 4.0))

    def draw(m: int) -> np.ndarray:
        lab = rng.choice(k, size=m, p=w)
        return means[lab] + np.einsum("nij,nj->ni", roots[lab], rng.normal(size=(m, d)))

    return draw(n), draw(5_000)


def _fit(X: np.ndarray, k: int, epsilon: float, P: np.ndarray | None = None
         ) -> pg.PrivateGaussianMixture:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pg.PrivateGaussianMixture(k, method="em", epsilon=epsilon, delta=1e-6,
                                         random_state=0).fit(X, public_X=P)


def test_excess_is_the_change_less_its_noise_and_off_the_change_itself(monkeypatch):
    monkeypatch.setattr(pe, "NOISE_FREEZE", 0.0)
    assert pe._excess(3e-4, 1e-4) == 3e-4
    assert pe._excess(1e-9, 1.0) == 1e-9
    monkeypatch.setattr(pe, "NOISE_FREEZE", 2.0)
    assert pe._excess(3e-4, 1e-4) == pytest.approx(1e-4)
    assert pe._excess(1e-4, 1e-4) == 0.0  # all of it the noise's: nothing left of EM's move
    assert pe._excess(math.inf, 1e-4) == math.inf  # a change that could not be measured
    assert pe._excess(5e-4, 0.0) == 5e-4  # no noise: the change itself
    # the freeze on the excesses: a run whose changes are its noise's freezes, one that
    # moves by more than twice its noise does not
    tol = pe.FREEZE_TOL
    assert pe._converged([pe._excess(2e-3, 1e-3)] * 3, tol)
    assert not pe._converged([pe._excess(3e-3, 1e-3)] * 3, tol)


@pytest.mark.parametrize("epsilon", [1.0, 10.0, 100.0, 1e3, 1e4])
@pytest.mark.parametrize("d,k", [(7, 3), (10, 6), (14, 5)])
def test_the_switches_change_no_plan_but_the_three_run_freeze(monkeypatch, epsilon, d, k):
    """``NOISE_FREEZE`` reads the released changes differently, never the plan; with
    ``FREEZE_PLAIN`` a three-run plan may freeze (nothing else of it changes) where its
    first step's noise is at most ``STOP_NOISE`` × ``FREEZE_TOL``, the wide plan's gate."""
    n, budget = 50_000, ApproxDP(epsilon, 1e-6)
    monkeypatch.setattr(pe, "STOP_SPAN", 0)
    monkeypatch.setattr(pe, "NOISE_FREEZE", 0.0)
    monkeypatch.setattr(pe, "FREEZE_PLAIN", False)
    before = pe.em_plan(n, d, k, budget)
    monkeypatch.setattr(pe, "NOISE_FREEZE", 2.0)
    assert pe.em_plan(n, d, k, budget) == before
    monkeypatch.setattr(pe, "FREEZE_PLAIN", True)
    plan = pe.em_plan(n, d, k, budget)
    if before.n_starts == pe.N_STARTS:
        quiet = pe._noise_change(before, 0, n, d, k) <= pe.STOP_NOISE * pe.FREEZE_TOL
        assert plan.freeze == quiet
        assert plan == dataclasses.replace(before, freeze=quiet)
    else:
        assert plan == before
    if epsilon == 1.0:
        assert not plan.freeze


def test_a_three_run_plan_freezes_only_with_the_switch_and_where_a_wide_plan_would(
        monkeypatch):
    n, budget = 50_000, ApproxDP(100.0, 1e-6)
    monkeypatch.setattr(pe, "STOP_SPAN", 0)
    monkeypatch.setattr(pe, "FREEZE_PLAIN", False)
    plan = pe.em_plan(n, 10, 6, budget)
    assert plan.n_starts == pe.N_STARTS and not plan.freeze  # main's plan
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pe, "FREEZE_PLAIN", True)
        on = pe.em_plan(n, 10, 6, budget)
        assert on.freeze and on.n_starts == pe.N_STARTS
        assert pe._noise_change(on, 0, n, 10, 6) <= pe.STOP_NOISE * pe.FREEZE_TOL
        assert on.parts() == plan.parts()  # the same charges planned: only fewer may run
        # a loud three-run plan (ε = 10 here, ε = 1 everywhere) does not freeze
        for eps in (1.0, 10.0):
            loud = pe.em_plan(n, 10, 6, ApproxDP(eps, 1e-6))
            assert not loud.freeze
            assert pe._noise_change(loud, 0, n, 10, 6) > pe.STOP_NOISE * pe.FREEZE_TOL


def test_a_frozen_three_run_fit_charges_its_plan_and_lands_where_the_full_one_does(
        monkeypatch):
    """At ε = 100 (n = 5e4, d = 10, k = 6: three runs, no stop, no freeze on main) the
    switches freeze the exploring runs, and the pick's step follows the last freeze; the
    ledger is the plan less the frozen runs' steps, in order, and the held-out score is the
    full schedule's to 1e-3 nat/row (same noise draws up to the first freeze)."""
    X, H = _mixture(50_000, 10, 6, 3)
    P, H = H[:50], H[50:]  # public rows: the plan's parts are the ledger's entries one to one
    monkeypatch.setattr(pe, "NOISE_FREEZE", 0.0)
    monkeypatch.setattr(pe, "FREEZE_PLAIN", False)
    monkeypatch.setattr(pe, "STOP_SPAN", 0)
    full = _fit(X, 6, 100.0, P)
    assert full.fit_info_["em_stopped_after"] is None and not full.fit_info_["em_frozen"]
    assert len(full.ledger_) == len(full.fit_info_["em_plan"].parts())
    monkeypatch.setattr(pe, "NOISE_FREEZE", 2.0)
    monkeypatch.setattr(pe, "FREEZE_PLAIN", True)
    monkeypatch.setattr(pe, "STOP_SPAN", 0)
    m = _fit(X, 6, 100.0, P)
    plan, frozen, stop = (m.fit_info_["em_plan"], m.fit_info_["em_frozen"],
                          m.fit_info_["em_stopped_after"])
    assert plan.n_starts == pe.N_STARTS and plan.freeze
    assert stop is None and plan.stop_from is None  # the stop is main's: none at ε = 100
    assert sorted(c for c, _ in frozen) == list(range(1, plan.n_starts + 1))  # all froze
    assert all(f < plan.explore_steps - 1 for _, f in frozen)  # ... early
    kept = charged_parts(plan, frozen, stop)
    assert len(m.ledger_) == len(kept) < len(full.ledger_)
    assert [str(e.cost) for e in m.ledger_] == [str(b) for _, b in kept]
    steps = [e.step for e in m.ledger_ if e.step.startswith("em step")]
    assert steps[-1].startswith(f"em step {plan.n_steps}/{plan.n_steps} ")  # the last ran
    assert m.privacy_spent_.epsilon < 100.0
    assert abs(full.score(H) - m.score(H)) < 1e-3


def test_an_eps_one_fit_is_the_same_with_and_without_the_switches(monkeypatch):
    """At ε = 1 no plan freezes (a step's noise is far above the gate) and the switches leave
    the fit bit for bit as it was."""
    X, _ = _mixture(20_000, 5, 3, 4)
    monkeypatch.setattr(pe, "NOISE_FREEZE", 2.0)
    monkeypatch.setattr(pe, "FREEZE_PLAIN", True)
    monkeypatch.setattr(pe, "STOP_SPAN", 10)
    m = _fit(X, 3, 1.0)
    monkeypatch.setattr(pe, "NOISE_FREEZE", 0.0)
    monkeypatch.setattr(pe, "FREEZE_PLAIN", False)
    monkeypatch.setattr(pe, "STOP_SPAN", 0)
    off = _fit(X, 3, 1.0)
    assert not m.fit_info_["em_plan"].freeze
    np.testing.assert_array_equal(m.means_, off.means_)
    np.testing.assert_array_equal(m.covariances_, off.covariances_)
    assert [e.step for e in m.ledger_] == [e.step for e in off.ledger_]


@pytest.mark.parametrize("k,d", [(2, 2), (3, 7), (6, 15)])
def test_summary_em_as_matrix_products_is_the_same_sums(monkeypatch, k: int, d: int) -> None:
    """``SUMMARY_BLAS``: the summary EM's log-densities and scatter as matrix products equal
    the contractions to rounding, blob by blob (shared covariances, as the cells' start has,
    and distinct ones), and the restarts advanced together equal one at a time to rounding —
    not bit for bit (stacked products take other BLAS paths), which the switch gives up."""
    from privgauss.mixture import em_starts as es

    rng = np.random.default_rng(k * d)
    K = 40 * k
    means = rng.standard_normal((K, d)) * 2.0
    A = rng.standard_normal((K, d, d)) * 0.3
    for covs in (A @ np.swapaxes(A, 1, 2) + 0.1 * np.eye(d),
                 np.broadcast_to(0.2 * np.eye(d), (K, d, d)).copy()):
        mu = rng.standard_normal((3 * k, d))
        B = rng.standard_normal((3 * k, d, d)) * 0.5
        S = B @ np.swapaxes(B, 1, 2) + np.eye(d)
        NrT = rng.uniform(0.0, 5.0, (3 * k, K))
        D = means[None] - mu[:, None]
        monkeypatch.setattr(es, "SUMMARY_BLAS", False)
        want = es._blob_loglik(means, covs, mu, S), es._blob_scatter(NrT, covs, D)
        monkeypatch.setattr(es, "SUMMARY_BLAS", True)
        got = es._blob_loglik(means, covs, mu, S), es._blob_scatter(NrT, covs, D)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12 * np.abs(w).max())
            assert not np.array_equal(g, w) or k == 2  # other rounding: not the same code
        resps = [np.eye(k)[rng.integers(0, k, K)] for _ in range(5)]
        N = rng.uniform(10.0, 1000.0, K)
        for resp, (obj, fit) in zip(resps, es._summary_em_batch(N, means, covs, resps),
                                    strict=True):
            want_obj, want_fit = es._summary_em(N, means, covs, resp)
            assert obj == pytest.approx(want_obj, rel=1e-12)
            for x, y in zip(fit, want_fit, strict=True):
                np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)


def test_span_stop_reads_the_drift_over_the_span(monkeypatch):
    monkeypatch.setattr(pe, "STOP_SPAN", 10)
    tol = 100 * (1.0 - pe.STOP_RATE) * pe.STOP_TOL  # m²(1 − q)·STOP_TOL at m = 10
    assert pe._span_stop(2e-4 + 0.99 * tol, 1e-4)  # two models' noise and the allowance
    assert not pe._span_stop(2e-4 + 1.01 * tol, 1e-4)
    assert not pe._span_stop(math.inf, 1e-4)
    # a drift of a per step: m²·a over the span, stopped only where a/(1 − q) ≤ STOP_TOL
    a = pe.STOP_TOL * (1.0 - pe.STOP_RATE)
    assert pe._span_stop(100 * a * 0.99, 0.0) and not pe._span_stop(100 * a * 1.01, 0.0)


@pytest.mark.parametrize("epsilon", [1.0, 10.0, 100.0, 1e3, 1e4])
@pytest.mark.parametrize("d,k", [(7, 3), (10, 6), (14, 5)])
def test_the_span_stop_is_planned_only_where_the_last_step_is_quiet(monkeypatch, epsilon, d,
                                                                    k):
    """``STOP_SPAN`` opens the stop where a refining step's noise is at most ``STOP_NOISE`` ×
    ``FREEZE_TOL`` and the last step's at most ``STOP_NOISE`` × ``STOP_TOL`` (a stop gives up
    the refining releases' averaging, worth at most the last step's noise); never at ε = 1;
    a plan that could stop before still may."""
    n, budget = 50_000, ApproxDP(epsilon, 1e-6)
    monkeypatch.setattr(pe, "STOP_SPAN", 0)
    before = pe.em_plan(n, d, k, budget)
    monkeypatch.setattr(pe, "STOP_SPAN", 10)
    plan = pe.em_plan(n, d, k, budget)
    if before.stop_from is not None:
        assert plan.stop_from is not None
    if plan.stop_from is not None and before.stop_from is None:
        assert (pe._noise_change(plan, plan.stop_from, n, d, k)
                <= pe.STOP_NOISE * pe.FREEZE_TOL)
        assert (pe._noise_change(plan, plan.n_steps - 1, n, d, k)
                <= pe.STOP_NOISE * pe.STOP_TOL)
    if epsilon == 1.0:
        assert plan == before and plan.stop_from is None
    # (at (7, 3) the plain stop opens at ε = 100 itself since the steps' joint releases)
    if epsilon == 100.0 and (d, k) == (10, 6):
        assert before.stop_from is None and plan.stop_from == plan.explore_steps


def test_a_span_stopped_fit_charges_its_plan_and_lands_where_the_full_one_does(monkeypatch):
    """ε = 100, n = 5e4, d = 10, k = 6 (three runs, frozen): the span stop ends the refining
    steps ``STOP_SPAN`` steps after the pick or later; the ledger is the plan less the frozen
    and skipped steps in order, and the score is the unstopped fit's to 1e-3 nat/row."""
    X, H = _mixture(50_000, 10, 6, 3)
    P, H = H[:50], H[50:]
    monkeypatch.setattr(pe, "NOISE_FREEZE", 2.0)
    monkeypatch.setattr(pe, "FREEZE_PLAIN", True)
    monkeypatch.setattr(pe, "STOP_SPAN", 0)
    full = _fit(X, 6, 100.0, P)
    assert full.fit_info_["em_stopped_after"] is None
    monkeypatch.setattr(pe, "STOP_SPAN", 10)
    m = _fit(X, 6, 100.0, P)
    plan, frozen, stop = (m.fit_info_["em_plan"], m.fit_info_["em_frozen"],
                          m.fit_info_["em_stopped_after"])
    assert stop is not None and plan.explore_steps + 10 < stop < plan.n_steps - 1
    kept = charged_parts(plan, frozen, stop)
    assert len(m.ledger_) == len(kept) < len(full.ledger_)
    assert [str(e.cost) for e in m.ledger_] == [str(b) for _, b in kept]
    assert abs(full.score(H) - m.score(H)) < 1e-3
