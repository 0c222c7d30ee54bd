"""Private EM's wide exploration where its steps are quiet (issue 27: scikit-learn's n_init):
more starts, run further, DP-picked; and that it vanishes into the three-run plan where the
budget is noisy."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import privgauss as pg
from privgauss.mixture import em_starts as es
from privgauss.mixture import private_em as pe
from privgauss.privacy import ZCDP, ApproxDP
from privgauss.sensitivity import score_sums_l2

NOISY = [  # (n, d, k, budget, public rows): none of these may change
    (50_000, 10, 3, ApproxDP(1.0, 1e-6), 0),
    (50_000, 10, 3, ApproxDP(1.0, 1e-6), 500),
    (50_000, 10, 3, ZCDP(0.5), 500),
    (3_488, 5, 3, ApproxDP(1.0, 1e-6), 35),
    (20_000, 4, 3, ApproxDP(1.0, 1e-6), 0),
    (2_000, 10, 3, ApproxDP(1e4, 1e-6), 0),  # d = 10 on 2,000 rows: even ε = 1e4 is noisy
]


@pytest.mark.parametrize("n, d, k, budget, n_public", NOISY)
def test_a_noisy_plan_is_the_three_run_plan(monkeypatch, n, d, k, budget, n_public):
    """Where a wide plan's first exploring step would move a model by more than
    ``WIDE_NOISE`` the plan is exactly the one without the wide machinery (the same parts
    and shares, three runs, no frozen runs): ε = 1 at n = 5e4, d = 10, k = 3 among them."""
    plan = pe.em_plan(n, d, k, budget, n_public=n_public)
    monkeypatch.setattr(pe, "WIDE_STARTS", pe.N_STARTS)  # the wide plan switched off
    before = pe.em_plan(n, d, k, budget, n_public=n_public)
    assert plan == before
    assert [(nm, str(b)) for nm, b in plan.parts()] == [(nm, str(b)) for nm, b in
                                                        before.parts()]
    assert plan.n_starts == pe.N_STARTS and not plan.freeze
    assert plan.explore_steps == plan.n_steps // pe.EXPLORE_DIV


def test_the_eps1_plan_at_the_speed_benchmark_size_names_the_same_parts():
    """n = 5e4, d = 10, k = 3, ε = 1 (``benchmarks/em_speed.py``): the parts of the session's
    plan before the wide exploration (three exploring runs over ⌊T/3⌋ of T = 20 steps, the
    over-parameterised k' = 6 run)."""
    plan = pe.em_plan(50_000, 10, 3, ApproxDP(1.0, 1e-6))
    names = [nm for nm, _ in plan.parts()]
    assert plan.n_steps == 20 and plan.explore_steps == 6 and plan.components == 6
    assert sum(1 for nm in names if nm.startswith("step ") and " run " in nm) == 6 * 3 * 3
    assert "step 6 run 3 moments" in names and "step 7 run 1 counts" not in names
    assert names.index("run selection") == names.index("step 6 run 3 moments") + 1


def test_a_quiet_plan_explores_wide():
    """ε = 1e4 at n = 5e4, d = 10, k = 3: ``WIDE_STARTS`` runs over 2/3 of ``WIDE_STEPS``, each
    exploring step's ρ split evenly over the runs, the parts composing to the plan's ρ_EM;
    frozen runs allowed (a step's noise is far below ``FREEZE_TOL``)."""
    plan = pe.em_plan(50_000, 10, 3, ApproxDP(1e4, 1e-6))
    T, E = pe.WIDE_STEPS, int(math.floor(pe.WIDE_EXPLORE * pe.WIDE_STEPS))
    assert (plan.n_steps, plan.explore_steps, plan.n_starts) == (T, E, pe.WIDE_STARTS)
    assert plan.freeze and plan.stop_from == E
    assert pe._noise_change(plan, 0, 50_000, 10, 3) <= pe.STOP_NOISE * pe.FREEZE_TOL
    parts = dict(plan.parts())
    assert f"step {E} run {pe.WIDE_STARTS} counts" in parts
    assert f"step {E + 1} run 1 counts" not in parts and f"step {E + 1} counts" in parts
    per_run = [parts[f"step 1 run {c} {s}"].rho for c in range(1, pe.WIDE_STARTS + 1)
               for s in ("counts", "sums", "moments")]
    assert sum(per_run) == pytest.approx(plan.rho_steps[0], rel=1e-12)
    em_parts = [b.rho for nm, b in plan.parts() if not nm.startswith("localisation")]
    assert sum(em_parts) == pytest.approx(plan.rho_em, rel=1e-9)
    # ρ_EM itself: what the three-run plan has (the wide plan only reshuffles the steps)
    base = pe._base_plan(50_000, 10, 3, ApproxDP(1e4, 1e-6))
    assert plan.rho_em == pytest.approx(base.rho_em, rel=1e-12)


def _mixture(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    means = np.array([[0.0, 0.0, 0.0], [4.0, 0.0, 1.0], [0.0, 5.0, -2.0]])
    lab = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    return means[lab] + rng.standard_normal((n, 3)) * np.array([1.0, 0.5, 2.0])


def _wide_fit(n: int = 6000):
    """A fit at a huge budget with 50 public rows (the frame is public: the plan's parts are
    the ledger's entries one to one)."""
    X, P = _mixture(n, 0), _mixture(50, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pg.PrivateGaussianMixture(3, method="em", epsilon=1e4, delta=1e-6,
                                         random_state=0).fit(X, public_X=P)


def test_a_wide_fit_charges_its_plan_in_order_without_the_frozen_and_skipped_steps():
    """The ledger is the plan's parts in order, less each frozen run's exploring steps after
    its freeze and the steps the stopping rule skipped (both DP outputs); the run pick's
    release has the sensitivity of ``WIDE_STARTS`` scores, 2b√R (a pick charged for three
    runs would be too little noise)."""
    m = _wide_fit()
    plan, info = m.fit_info_["em_plan"], m.fit_info_
    assert plan.n_starts == pe.WIDE_STARTS and plan.freeze
    frozen, stop = info["em_frozen"], info["em_stopped_after"]
    assert frozen  # the exploring runs converge on this well-separated mixture
    skipped = {f"step {t} run {c}" for c, f in frozen for t in range(f + 1,
                                                                    plan.explore_steps + 1)}
    if stop is not None:
        skipped |= {f"step {t}" for t in range(stop + 1, plan.n_steps)}
    kept = [(nm, b) for nm, b in plan.parts()
            if " ".join(nm.split()[:4]) not in skipped and " ".join(nm.split()[:2]) not in
            skipped]
    assert len(m.ledger_) == len(kept)
    assert [str(e.cost) for e in m.ledger_] == [str(b) for _, b in kept]
    pick = [e for e in m.ledger_ if e.step.endswith("em run selection")]
    assert len(pick) == 1
    assert pick[0].sensitivity == pytest.approx(score_sums_l2(plan.score_bound,
                                                              pe.WIDE_STARTS))
    assert pick[0].sensitivity == pytest.approx(2 * plan.score_bound * math.sqrt(6))
    # every run froze at most once, and only while exploring
    assert len({c for c, _ in frozen}) == len(frozen)
    assert all(1 <= c <= plan.n_starts and 1 <= f <= plan.explore_steps for c, f in frozen)


def test_frozen_runs_skip_only_their_own_steps(monkeypatch):
    """With the freeze switched off (``FREEZE_TOL`` = 0) no run stops while exploring and the
    ledger has every exploring run's every step; the freeze only ever removes entries."""
    monkeypatch.setattr(pe, "FREEZE_TOL", 0.0)
    m = _wide_fit()
    plan = m.fit_info_["em_plan"]
    assert m.fit_info_["em_frozen"] == []
    names = [e.step for e in m.ledger_]
    for c in range(1, plan.n_starts + 1):
        assert sum(1 for s in names if f"em step {plan.explore_steps}/{plan.n_steps} run {c} "
                   in s) == 3


def test_the_frame_decides_the_start():
    """:func:`~privgauss.mixture.em_starts.frame_starts`: two clusters apart along a
    low-variance column next to a wide, uniform one. k-means in the whitened frame (u = z)
    splits the clusters; in a raw frame where the wide column's unit is 100× larger (as a
    user's unscaled columns), it cuts the wide column instead — scikit-learn's k-means on raw
    columns does the same, and EM's basin follows its start. Each start is a mixture (weights
    summing to 1, PD covariances)."""
    rng = np.random.default_rng(0)
    a = np.column_stack([rng.uniform(-1.5, 1.5, 400), rng.normal(0.0, 0.2, 400)])
    cells = np.vstack([a + [0.0, 1.0], a - [0.0, 1.0]])
    wts = np.full(len(cells), 10.0)
    V = np.eye(2)
    white, raw = es.frame_starts(cells, wts, V, 0.25, 2, np.random.default_rng(1),
                                 [(np.eye(2), 3), (np.diag([100.0, 1.0]), 3)])
    for w, _mu, cov in (white, raw):
        assert w.sum() == pytest.approx(1.0) and np.all(w > 0)
        assert np.all(np.linalg.eigvalsh(cov) > 0)
    # whitened: the centres differ along the second column by ~2, not along the first
    assert abs(white[1][0, 1] - white[1][1, 1]) > 1.8
    assert abs(white[1][0, 0] - white[1][1, 0]) < 0.2
    # raw: the cut is along the first (wide) column
    assert abs(raw[1][0, 0] - raw[1][1, 0]) > 1.2
    assert abs(raw[1][0, 1] - raw[1][1, 1]) < 0.2
