"""Private EM at mid budgets (issue 27, brief midspeed): the stopping rule and the exploring
runs' freeze read each released change less what its step's noise alone makes
(``NOISE_STOP``), and a three-run plan's runs freeze and merge where a wide plan's would
(``FREEZE_PLAIN``). Both are functions of released models and public facts only; a fit that
stops or freezes charges its plan in order without the skipped steps."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

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


def _charged_parts(plan, frozen, stop):
    """The plan's parts a fit charges: all, less each frozen run's exploring steps after its
    freeze and the steps after the stopping rule's stop (both DP outputs)."""
    skipped = {f"step {t} run {c}" for c, f in frozen for t in range(f + 1,
                                                                    plan.explore_steps + 1)}
    if stop is not None:
        skipped |= {f"step {t}" for t in range(stop + 1, plan.n_steps)}
    return [(nm, b) for nm, b in plan.parts()
            if " ".join(nm.split()[:4]) not in skipped and " ".join(nm.split()[:2]) not in
            skipped]


def test_excess_is_the_change_less_its_noise_and_off_the_change_itself(monkeypatch):
    monkeypatch.setattr(pe, "NOISE_STOP", 0.0)
    assert pe._excess(3e-4, 1e-4) == 3e-4
    assert pe._excess(1e-9, 1.0) == 1e-9
    monkeypatch.setattr(pe, "NOISE_STOP", 2.0)
    assert pe._excess(3e-4, 1e-4) == pytest.approx(1e-4)
    assert pe._excess(1e-4, 1e-4) == 0.0  # all of it the noise's: nothing left of EM's move
    assert pe._excess(math.inf, 1e-4) == math.inf  # a change that could not be measured
    assert pe._excess(5e-4, 0.0) == 5e-4  # no noise: the change itself
    # the rule on the excesses: a run whose changes are its noise's stops
    assert pe._converged([pe._excess(2e-4, 1e-4)] * 3)
    assert not pe._converged([pe._excess(1e-3, 1e-4)] * 3)


@pytest.mark.parametrize("epsilon", [1.0, 10.0, 100.0, 1e3, 1e4])
@pytest.mark.parametrize("d,k", [(7, 3), (10, 6), (14, 5)])
def test_the_noise_read_stop_is_planned_only_where_the_last_step_is_quiet(monkeypatch,
                                                                          epsilon, d, k):
    """The plan may stop where a step's noise alone moves a model by at most
    ``STOP_NOISE`` × ``STOP_TOL`` (as before) or, with ``NOISE_STOP``, by at most
    ``STOP_NOISE`` × ``FREEZE_TOL`` while the last step's moves it by at most ``STOP_NOISE`` ×
    ``STOP_TOL``; never at ε = 1. A plan that could stop before still may (from the same
    step, unless the wide plan's 150 steps, quiet now, replace its 60: the longest quiet
    one, :func:`_wide_plan`)."""
    n, budget = 50_000, ApproxDP(epsilon, 1e-6)
    monkeypatch.setattr(pe, "NOISE_STOP", 0.0)
    before = pe.em_plan(n, d, k, budget)
    monkeypatch.setattr(pe, "NOISE_STOP", 2.0)
    plan = pe.em_plan(n, d, k, budget)
    if before.stop_from is not None:
        assert plan.stop_from is not None
        assert plan == before or (before.n_steps == pe.MAX_STEPS
                                  and plan.n_steps == pe.WIDE_STEPS)
    if plan.stop_from is not None:
        first = pe._noise_change(plan, plan.stop_from, n, d, k)
        last = pe._noise_change(plan, plan.n_steps - 1, n, d, k)
        assert first <= pe.STOP_NOISE * pe.STOP_TOL or (
            first <= pe.STOP_NOISE * pe.FREEZE_TOL and last <= pe.STOP_NOISE * pe.STOP_TOL)
    if epsilon == 1.0:
        assert plan.stop_from is None and plan == before
    if epsilon == 100.0 and (d, k) == (7, 3):  # the mid budget this is for: 1.8e-6 last
        assert before.stop_from is None and plan.stop_from == plan.explore_steps


def test_a_three_run_plan_freezes_only_with_the_switch_and_where_a_wide_plan_would():
    n, budget = 50_000, ApproxDP(100.0, 1e-6)
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


def test_a_noise_stopped_three_run_fit_charges_its_plan_and_lands_where_the_full_one_does(
        monkeypatch):
    """At ε = 100 (n = 5e4, d = 10, k = 6: three runs, no stop, no freeze on main) the
    switches freeze the exploring runs and stop after the pick; the ledger is the plan less
    the frozen and skipped steps, in order, and the held-out score is the full schedule's
    to 1e-3 nat/row (same noise draws up to the first freeze)."""
    X, H = _mixture(50_000, 10, 6, 3)
    P, H = H[:50], H[50:]  # public rows: the plan's parts are the ledger's entries one to one
    full = _fit(X, 6, 100.0, P)
    assert full.fit_info_["em_stopped_after"] is None and not full.fit_info_["em_frozen"]
    assert len(full.ledger_) == len(full.fit_info_["em_plan"].parts())
    monkeypatch.setattr(pe, "NOISE_STOP", 2.0)
    monkeypatch.setattr(pe, "FREEZE_PLAIN", True)
    m = _fit(X, 6, 100.0, P)
    plan, frozen, stop = (m.fit_info_["em_plan"], m.fit_info_["em_frozen"],
                          m.fit_info_["em_stopped_after"])
    assert plan.n_starts == pe.N_STARTS and plan.freeze
    assert frozen and stop is not None and plan.explore_steps < stop < plan.n_steps - 1
    kept = _charged_parts(plan, frozen, stop)
    assert len(m.ledger_) == len(kept) < len(full.ledger_)
    assert [str(e.cost) for e in m.ledger_] == [str(b) for _, b in kept]
    steps = [e.step for e in m.ledger_ if e.step.startswith("em step")]
    assert steps[-1].startswith(f"em step {plan.n_steps}/{plan.n_steps} ")  # the last ran
    assert m.privacy_spent_.epsilon < 100.0
    assert abs(full.score(H) - m.score(H)) < 1e-3


def test_off_the_switches_change_nothing(monkeypatch):
    """``NOISE_STOP`` = 0 and ``FREEZE_PLAIN`` off: the fit of the module's defaults."""
    X, _ = _mixture(20_000, 5, 3, 4)
    m = _fit(X, 3, 300.0)
    monkeypatch.setattr(pe, "NOISE_STOP", 0.0)
    monkeypatch.setattr(pe, "FREEZE_PLAIN", False)
    off = _fit(X, 3, 300.0)
    np.testing.assert_array_equal(m.means_, off.means_)
    np.testing.assert_array_equal(m.covariances_, off.covariances_)
    assert [e.step for e in m.ledger_] == [e.step for e in off.ledger_]
