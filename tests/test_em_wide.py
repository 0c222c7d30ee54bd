"""Private EM's wide exploration where its steps are quiet (issue 27: scikit-learn's n_init):
more starts, run further, DP-picked; and that it vanishes into the three-run plan where the
budget is noisy."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from _helpers import charged_parts

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
    and shares, three runs): ε = 1 at n = 5e4, d = 10, k = 3 among them. Its runs may freeze
    only where the wide plan's freeze gate holds (``FREEZE_PLAIN``, midspeed: n = 2000,
    d = 10 at ε = 1e4; none of the ε = 1 plans)."""
    plan = pe.em_plan(n, d, k, budget, n_public=n_public)
    monkeypatch.setattr(pe, "WIDE_STARTS", pe.N_STARTS)  # the wide plan switched off
    before = pe.em_plan(n, d, k, budget, n_public=n_public)
    assert plan == before
    assert [(nm, str(b)) for nm, b in plan.parts()] == [(nm, str(b)) for nm, b in
                                                        before.parts()]
    assert plan.n_starts == pe.N_STARTS
    gate = pe._noise_change(plan, 0, n, d, k) <= pe.STOP_NOISE * pe.FREEZE_TOL
    assert plan.freeze is (pe.FREEZE_PLAIN and gate)
    assert plan.freeze is (budget.epsilon > 1.0 if isinstance(budget, ApproxDP) else False)
    quiet_plain = (plan.components == 0 and plan.n_steps < pe.MAX_STEPS
                   and pe._noise_change(plan, 0, n, d, k) <= pe.OVER_NOISE)
    div = pe.PLAIN_EXPLORE_DIV if quiet_plain else pe.EXPLORE_DIV  # _explore_longer
    assert plan.explore_steps == int(plan.n_steps // div)


def test_the_eps1_plan_at_the_speed_benchmark_size_names_the_same_parts():
    """n = 5e4, d = 10, k = 3, ε = 1 (``benchmarks/em_speed.py``): the parts of the session's
    plan before the wide exploration (three exploring runs over ⌊T/3⌋ of T = 20 steps, the
    over-parameterised k' = 6 run)."""
    plan = pe.em_plan(50_000, 10, 3, ApproxDP(1.0, 1e-6))
    names = [nm for nm, _ in plan.parts()]
    assert plan.n_steps == 20 and plan.explore_steps == 6 and plan.components == 6
    assert sum(1 for nm in names if nm.startswith("step ") and " run " in nm) == 6 * 3
    assert "step 6 run 3 statistics" in names and "step 7 run 1 statistics" not in names
    assert names.index("run selection") == names.index("step 6 run 3 statistics") + 1


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
    assert f"step {E} run {pe.WIDE_STARTS} statistics" in parts
    assert f"step {E + 1} run 1 statistics" not in parts and f"step {E + 1} statistics" in parts
    per_run = [parts[f"step 1 run {c} statistics"].rho for c in range(1, pe.WIDE_STARTS + 1)]
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


def _wide_fit(n: int = 6000, epsilon: float = 1e4):
    """A fit at a huge budget (by default) with 50 public rows (the frame is public: the plan's
    parts are the ledger's entries one to one)."""
    X, P = _mixture(n, 0), _mixture(50, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pg.PrivateGaussianMixture(3, method="em", epsilon=epsilon, delta=1e-6,
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
    kept = charged_parts(plan, frozen, stop)
    assert len(m.ledger_) == len(kept)
    assert [str(e.cost) for e in m.ledger_] == [str(b) for _, b in kept]
    pick = [e for e in m.ledger_ if e.step.endswith("em run selection")]
    assert len(pick) == 1
    assert pick[0].sensitivity == pytest.approx(score_sums_l2(plan.score_bound,
                                                              pe.WIDE_STARTS))
    assert pick[0].sensitivity == pytest.approx(2 * plan.score_bound * math.sqrt(6))
    # every run froze at most once, and only while exploring
    assert len({c for c, _ in frozen}) == len(frozen)
    assert all(1 <= c <= plan.n_starts and 0 <= f <= plan.explore_steps for c, f in frozen)


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
                   in s) == (1 if pe.JOINT_STATS else 3)


def _spd_run(rng: np.random.Generator, k: int = 3, d: int = 4) -> pe.Run:
    A = rng.normal(size=(k, d, d))
    covs = A @ np.swapaxes(A, 1, 2) + np.eye(d)
    w = rng.uniform(0.5, 1.5, k)
    return w / w.sum(), rng.normal(scale=3.0, size=(k, d)), covs


def test_runs_within_matches_components_and_bounds_the_kl_both_ways():
    """:func:`_runs_within`: a run with its components reordered is the same model (within
    a tol of 1e-12: rounding); a component's mean moved by δ along a unit-variance axis of equal
    covariances moves the KL bound by exactly w_j·δ²/2 in both directions, so the pair is
    within tol just below that and not just above it (a wrong matching, a one-sided or a
    mis-scaled bound fails here); a different number of components is never within."""
    rng = np.random.default_rng(3)
    a = _spd_run(rng)
    perm = [2, 0, 1]
    b = (a[0][perm], a[1][perm], a[2][perm])
    assert pe._runs_within(a, b, 1e-12) and pe._runs_within(b, a, 1e-12)
    d = a[1].shape[1]
    w = np.array([0.2, 0.3, 0.5])
    covs = np.array([np.eye(d)] * 3)
    means = np.array([[0.0] * d, [5.0] + [0.0] * (d - 1), [0.0, 5.0] + [0.0] * (d - 2)])
    base = (w, means, covs)
    delta = 0.1
    moved = means.copy()
    moved[1, 2] += delta
    kl = 0.3 * delta**2 / 2.0
    shifted = (w[perm], moved[perm], covs[perm])
    assert pe._runs_within(base, shifted, 1.01 * kl)
    assert not pe._runs_within(base, shifted, 0.99 * kl)
    assert not pe._runs_within(shifted, base, 0.99 * kl)
    assert not pe._runs_within(base, (w[:2] / w[:2].sum(), means[:2], covs[:2]), 1.0)


def test_merge_runs_freezes_the_later_of_a_close_pair_and_never_thaws():
    """:func:`_merge_runs`: of two identical runs the one with the larger index is frozen and
    the other carries on; a run close to a frozen run is frozen and the frozen one stays
    frozen; a far run is left alone."""
    rng = np.random.default_rng(4)
    a, far = _spd_run(rng), _spd_run(rng)
    twin = (a[0][[1, 2, 0]], a[1][[1, 2, 0]], a[2][[1, 2, 0]])
    runs, facs = [a, far, twin], [None, None, None]
    active = [True, True, True]
    assert pe._merge_runs(runs, facs, active, [0, 1, 2], pe.FREEZE_TOL) == [2]
    assert active == [True, True, False]
    active = [True, True, True]  # only run 0 moved: still the later run 2 waits
    assert pe._merge_runs(runs, facs, active, [0], pe.FREEZE_TOL) == [2]
    assert active == [True, True, False]
    active = [False, True, True]  # run 0 frozen: its twin joins it
    assert pe._merge_runs(runs, facs, active, [2], pe.FREEZE_TOL) == [2]
    assert active == [False, True, False]
    active = [True, False, True]  # ... and a frozen run is never compared into activity
    assert pe._merge_runs(runs, facs, active, [1], pe.FREEZE_TOL) == []
    assert active == [True, False, True]


def test_a_duplicated_start_waits_and_the_ledger_misses_only_its_steps(monkeypatch):
    """A wide plan's start equal to an earlier one (the last extra start replaced by the
    histogram start: post-processing of released cells) is frozen before its first step,
    (run, 0) in ``info["em_frozen"]``: the ledger is the plan's parts less exactly that run's
    exploring steps (and the other freezes and the stop), the pick still over all runs."""
    orig = pe.histogram_start

    def duplicated(*args, **kwargs):
        hist, white, seeds = orig(*args, **kwargs)
        kwargs["extras"][-1] = tuple(np.array(x, copy=True) for x in hist)
        return hist, white, seeds

    monkeypatch.setattr(pe, "histogram_start", duplicated)
    m = _wide_fit()
    plan, info = m.fit_info_["em_plan"], m.fit_info_
    frozen, stop = info["em_frozen"], info["em_stopped_after"]
    assert (pe.WIDE_STARTS, 0) in frozen
    names = [e.step for e in m.ledger_]
    assert not any(f" run {pe.WIDE_STARTS} " in s for s in names if s.startswith("em step"))
    kept = charged_parts(plan, frozen, stop)
    assert [str(e.cost) for e in m.ledger_] == [str(b) for _, b in kept]
    pick = [e for e in m.ledger_ if e.step.endswith("em run selection")]
    assert len(pick) == 1
    assert pick[0].sensitivity == pytest.approx(2 * plan.score_bound * math.sqrt(6))


def test_a_start_within_merge_tol_waits_where_freeze_tol_would_not(monkeypatch):
    """A start whose model is within ``MERGE_TOL`` of an earlier one, but not within
    ``FREEZE_TOL`` (the histogram start with one mean moved: a KL bound of ~3e-3 both ways,
    :func:`_runs_within`), is frozen before its first step; with ``MERGE_TOL`` set to
    ``FREEZE_TOL`` it explores (a merge rule that ignored ``MERGE_TOL`` fails one of them).
    The ledger is the plan less exactly the frozen runs' steps either way."""
    orig = pe.histogram_start
    starts = []

    def near_copy(*args, **kwargs):
        hist, white, seeds = orig(*args, **kwargs)
        w, mu, cov = (np.array(x, copy=True) for x in hist)
        j = int(np.argmax(w))
        step = np.linalg.cholesky(cov[j])[:, 0]  # a unit step in the component's own frame
        mu[j] += math.sqrt(2.0 * 3e-3 / w[j]) * step  # w_j·δ²/2 = 3e-3
        kwargs["extras"][-1] = (w, mu, cov)
        starts.append((hist, (w, mu, cov)))
        return hist, white, seeds

    monkeypatch.setattr(pe, "histogram_start", near_copy)
    assert pe.FREEZE_TOL < 3e-3 < pe.MERGE_TOL
    for tol, waits in ((pe.MERGE_TOL, True), (pe.FREEZE_TOL, False)):
        monkeypatch.setattr(pe, "MERGE_TOL", tol)
        m = _wide_fit()
        hist, near = starts[-1]
        assert pe._runs_within(hist, near, pe.MERGE_TOL if waits else 1.0)
        assert not pe._runs_within(hist, near, pe.FREEZE_TOL)
        plan, info = m.fit_info_["em_plan"], m.fit_info_
        frozen, stop = info["em_frozen"], info["em_stopped_after"]
        assert ((pe.WIDE_STARTS, 0) in frozen) == waits
        kept = charged_parts(plan, frozen, stop)
        assert [str(e.cost) for e in m.ledger_] == [str(b) for _, b in kept]


def test_release_runs_is_each_run_alone_bit_for_bit():
    """:func:`_em_release_runs` (an exploring step's runs released in order, updated
    together: one de-clipping and one factor-update call for all of them) gives each run, its
    factors and its error memory exactly what :func:`_em_release` gives it alone, with the
    same ledger (names, costs, noise) — in a factored wide plan at ε = 1e4 and in a noisy
    three-run plan, with a component under the step's floor and one dead (revived)."""
    from functools import partial

    from privgauss import Accountant
    from privgauss.backends import reduce_rows
    from privgauss.mechanisms import Release

    n, d, k = 50_000, 4, 3
    rng = np.random.default_rng(7)
    Z = rng.standard_normal((6000, d)) * 1.3 + rng.choice([-2.0, 0.0, 2.0], size=(6000, 1))
    for budget in (ApproxDP(1e4, 1e-6), ApproxDP(1.0, 1e-6)):
        plan = pe.em_plan(n, d, k, budget)
        t = 1
        runs = [_spd_run(np.random.default_rng(s), k, d) for s in range(4)]
        runs = [(w, mu / 3.0, c / np.trace(c, axis1=1, axis2=2)[:, None, None] * d)
                for w, mu, c in runs]
        terms = [pe._model_terms(w, c) for w, _, c in runs]
        out = reduce_rows(Z, partial(pe._em_kernel, models=tuple(
            (r[1], Linv, ln) for r, (_, Linv, ln) in zip(runs, terms, strict=True)),
            radius=plan.step_radius(t)))
        stats = [(out[0][c] * (n / len(Z)), out[1][c] * (n / len(Z)),
                  out[2][c] * (n / len(Z))) for c in range(len(runs))]
        stats[1][0][2] = 0.0  # run 2's third component: no rows (dead, revived by a split)
        floor, dead = pe._release_floor(plan, t, n, k), pe._dead_floor(plan, t, n, k)
        # run 3's second component under the floor (no update; by its noisy count held, dead
        # or fading)
        stats[2][0][1] = 0.5 * (floor + dead)
        results = []
        for together in (True, False):
            release = Release.of(Accountant(budget), 11)
            facs = [np.empty((k, d, d)) if plan.factored else None for _ in runs]
            mems = [np.full((k, 2), np.nan) for _ in runs]
            steps = [pe._RunStep(stats[c], runs[c], terms[c][0], f" run {c + 1}", None,
                                 facs[c], None) for c in range(len(runs))]
            if together:
                new = pe._em_release_runs(steps, plan, t, release, n)
            else:
                new = [pe._em_release(st.stats, st.run, st.L, plan, t, release, n, st.tag,
                                      st.memory, st.factors, st.pool) for st in steps]
            ledger = [(e.step, str(e.cost), e.noise_scale) for e in release.accountant.ledger]
            results.append((new, facs, mems, ledger))
        (a, fa, ma, la), (b, fb, mb, lb) = results
        assert la == lb and len(la) == (1 if pe.JOINT_STATS else 3) * len(runs)
        for ra, rb in zip(a, b, strict=True):
            for xa, xb in zip(ra, rb, strict=True):
                assert np.array_equal(xa, xb)
        for xa, xb in zip(fa + ma, fb + mb, strict=True):
            assert (xa is None and xb is None) or np.array_equal(xa, xb, equal_nan=True)
        # the dead component was revived (moved by a split)
        assert not np.array_equal(a[1][1][2], runs[1][1][2])
        assert plan.factored == (budget.epsilon > 1.0)


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


def test_the_pick_scores_first_then_only_the_winner_s_step_bit_for_bit(monkeypatch):
    """Rows in memory: the run pick's pass computes the runs' scores alone
    (``_em_kernel(stats=False)``), the pick is released, then one pass computes the winner's
    statistics. The fit, its ledger and every noise draw are bit for bit those of the one-pass
    route streamed rows take (every run's statistics with the scores, the losers' dropped:
    forced here on the same in-memory rows); a winner's statistics taken from the wrong run
    or a score from a different kernel fails here. The score-only kernel gives the full
    kernel's scores exactly."""
    passes: list[tuple[int, float, bool]] = []
    real = pe.reduce_rows

    def counted(Z, kernel, **kw):
        opts = kernel.keywords
        passes.append((len(opts["models"]), opts.get("bound", 0.0), opts.get("stats", True))
                      if "models" in opts else (0, 0.0, True))
        return real(Z, kernel, **kw)

    monkeypatch.setattr(pe, "reduce_rows", counted)
    fits = []
    for streamed in (False, True):
        monkeypatch.setattr(pe, "is_dask", lambda X, s=streamed: s)
        passes.clear()
        m = _wide_fit()
        fits.append((m, list(passes)))
    (mem, mem_passes), (one, one_passes) = fits
    for name in ("weights_", "means_", "covariances_"):
        assert np.array_equal(getattr(mem, name), getattr(one, name)), name
    assert [(e.step, e.cost, e.noise_scale) for e in mem.ledger_] == [
        (e.step, e.cost, e.noise_scale) for e in one.ledger_]
    scored = [p for p in mem_passes if p[1] > 0]
    assert len(scored) == 1 and not scored[0][2] and scored[0][0] > 1  # the scores alone
    at = mem_passes.index(scored[0])
    assert mem_passes[at + 1] == (1, 0.0, True)  # then the winner's step alone
    (full,) = [p for p in one_passes if p[1] > 0]
    assert full[2] and full[0] == scored[0][0]  # streamed: all runs' statistics and scores
    assert len(mem_passes) == len(one_passes) + 1
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(5000, 4)) * 2.0
    models = tuple((r[1], *pe._model_terms(r[0], r[2])[1:])
                   for r in (_spd_run(np.random.default_rng(s)) for s in range(3)))
    both = pe._em_kernel(Z, models, 2.5, bound=9.0)
    alone = pe._em_kernel(Z, models, 2.5, bound=9.0, stats=False)
    assert len(alone) == 1 and np.array_equal(alone[0], both[3])


def test_collapsed_reads_every_component_against_the_first_both_ways():
    """:func:`_collapsed`: equal components (any weights) coincide within rounding; a
    component's mean moved by δ along a unit axis of identity covariances is exactly δ²/2 away
    both ways (each component's own KL, not weighted), so the run is collapsed just above
    that and not just below; a covariance scaled by s is KL (s − 1 − ln s)·d/2 one way and
    (1/s − 1 + ln s)·d/2 the other (the larger decides); one component never collapses."""
    d = 4
    w = np.array([0.5, 0.3, 0.2])
    mu = np.zeros((3, d))
    cov = np.array([np.eye(d)] * 3)
    assert pe._collapsed((w, mu, cov), 1e-14)
    delta = 0.2
    moved = mu.copy()
    moved[2, 1] = delta
    assert pe._collapsed((w, moved, cov), 1.01 * delta**2 / 2)
    assert not pe._collapsed((w, moved, cov), 0.99 * delta**2 / 2)
    s = 1.3
    wide = cov.copy()
    wide[1] *= s
    one, other = (s - 1 - math.log(s)) * d / 2, (1 / s - 1 + math.log(s)) * d / 2
    assert one > other
    assert pe._collapsed((w, mu, wide), 1.01 * one)
    assert not pe._collapsed((w, mu, wide), 0.99 * one)
    assert not pe._collapsed((w[:1] / w[0], mu[:1], cov[:1]), 1.0)


def test_a_collapsed_start_waits_from_its_first_step(monkeypatch):
    """A wide plan's start whose components coincide (the last extra start replaced by one
    with all its components equal to the histogram start's first: EM's tie) waits before
    its first step — (run, 0) in ``info["em_frozen"]``, the ledger the plan less exactly
    the frozen runs' steps, the pick over all runs — and the same start with one component
    moved by more than a step's noise (:func:`_noise_change`) explores."""
    orig = pe.histogram_start
    for spread, waits in ((0.0, True), (0.05, False)):
        def collapsed(*args, spread=spread, **kwargs):
            hist, white, seeds = orig(*args, **kwargs)
            w, mu, cov = (np.array(x, copy=True) for x in hist)
            mu[:] = mu[0]
            cov[:] = cov[0]
            mu[-1] += spread * np.linalg.cholesky(cov[0])[:, 0]
            kwargs["extras"][-1] = (w, mu, cov)
            return hist, white, seeds

        monkeypatch.setattr(pe, "histogram_start", collapsed)
        m = _wide_fit()
        plan, info = m.fit_info_["em_plan"], m.fit_info_
        frozen, stop = info["em_frozen"], info["em_stopped_after"]
        assert (spread**2 / 2 > pe._noise_change(plan, 0, 6000, 3, 3)) != waits
        assert ((pe.WIDE_STARTS, 0) in frozen) == waits
        kept = charged_parts(plan, frozen, stop)
        assert [str(e.cost) for e in m.ledger_] == [str(b) for _, b in kept]
        pick = [e for e in m.ledger_ if e.step.endswith("em run selection")]
        assert len(pick) == 1
        assert pick[0].sensitivity == pytest.approx(2 * plan.score_bound * math.sqrt(6))



@pytest.mark.parametrize("n, d, k, n_public", [(6_000, 3, 3, 50), (50_000, 10, 3, 0),
                                               (50_000, 15, 6, 0), (2_000, 7, 2, 0)])
def test_every_wide_plan_lets_its_runs_freeze_and_merge(n, d, k, n_public):
    """A wide plan opens where an exploring step's noise is at most ``WIDE_NOISE``, the freeze
    (and the merge of runs within ``MERGE_TOL``) where it is at most ``STOP_NOISE`` ×
    ``FREEZE_TOL``: with the first no larger than the second, no wide plan explores six runs
    that may neither freeze nor merge (as ε = 100 did at n = 5e4, d = 10, k = 3 with
    ``STOP_NOISE`` = 0.5: 3.7× scikit-learn's time). Checked over budgets from 1 to 1e6."""
    assert pe.WIDE_NOISE <= pe.STOP_NOISE * pe.FREEZE_TOL
    wide = 0
    for eps in np.geomspace(1.0, 1e6, 25):
        plan = pe.em_plan(n, d, k, ApproxDP(float(eps), 1e-6), n_public=n_public)
        if plan.n_starts == pe.WIDE_STARTS:
            wide += 1
            assert plan.freeze and plan.may_freeze(0) and not plan.may_freeze(plan.explore_steps)
    assert wide >= 5
