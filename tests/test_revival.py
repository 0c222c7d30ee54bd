"""Which component a dead or fading EM component is split from (issue 27, branch `revive`):
the one whose released count grew as the dying one's fell (``private_em._absorber``), else
the one of most spread (``private_em._split``). Post-processing of released counts only."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from privgauss import sensitivity
from privgauss.mechanisms import Release
from privgauss.mixture import private_em as pe
from privgauss.privacy import Accountant, ApproxDP

N_ROWS, D, K, T = 50_000, 9, 4, 1


@pytest.fixture(autouse=True)
def _absorber_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule is an experiment switch, off by default (it lost on held-out families and
    the corpus: ``benchmarks/results/em_small_clusters.md``, revive); on here: 2, the
    k-component steps."""
    monkeypatch.setattr(pe, "REVIVE_ABSORBER", 2)


def _plan() -> pe.EMPlan:
    plan = pe._base_plan(N_ROWS, D, K, ApproxDP(1.0, 1e-6))
    assert plan.reduce_at is None and T < plan.n_steps - 2  # a plain plan; revivals allowed
    return plan


def _count_sd(plan: pe.EMPlan) -> float:
    return sensitivity.soft_counts_l2() / math.sqrt(2.0 * plan.stat_rhos(T)[0])


def _state() -> tuple[np.ndarray, np.ndarray]:
    # component 0: the widest (w·λ_max = 0.2 · 25 = 5, two clusters merged along e₁);
    # 1: compact, the fading one's neighbour (0.27 · 1); 2: the fading one; 3: heavy, compact
    means = np.zeros((K, D))
    means[0, 0], means[1, 1], means[2, 1], means[3, 2] = -12.0, 6.0, 9.0, 12.0
    covs = np.array([np.eye(D)] * K)
    covs[0][0, 0] = 25.0
    return means, covs


def _step(plan: pe.EMPlan, counts: list[float], history: list[pe._Counts] | None,
          seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    means, covs = _state()
    N = np.array(counts)
    stats = (N, np.zeros((K, D)), N[:, None, None] * np.eye(D))
    prev = history[-1][0] if history else np.array([10_000.0, 5_000.0, 9_000.0, 26_000.0])
    run = (prev / prev.sum(), means.copy(), covs.copy())
    release = Release.of(Accountant(ApproxDP(1e9, 0.5)), seed)
    return pe._em_release(stats, run, np.linalg.cholesky(covs), plan, T, release, N_ROWS,
                          counts=history)


@pytest.mark.parametrize("seed", range(4))
def test_a_fading_component_is_split_from_the_one_that_took_its_rows(
        monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """Component 2 fades (9,000 → 200 rows) while component 1 grows by the same 8,800 (far
    beyond the counts' noise): the revival splits component 1 (its mean ± ½ sd along its main
    axis), not the widest, component 0. Main's rule (``REVIVE_ABSORBER`` = 0) splits 0: the
    test fails on it."""
    plan = _plan()
    history = [(np.array([10_000.0, 5_000.0, 9_000.0, 26_000.0]), _count_sd(plan), None)]
    counts = [10_000.0, 13_800.0, 200.0, 26_000.0]
    _, m, c = _step(plan, counts, [(h.copy(), s, None) for h, s, _ in history], seed)
    means, _ = _state()
    # the alive components update from their releases (noise moves a mean by ~0.3 here; the
    # components are 6–24 apart and a split moves a mean by ½ sd: 0.5 for 1, 2.5 for 0)
    assert np.linalg.norm(m[0] - means[0]) < 1.0  # the widest is not split
    assert c[0][0, 0] > 20.0
    # 1 and 2 are the halves of 1: ±½ sd (≈ ½) around 1's (updated) mean
    assert np.linalg.norm(0.5 * (m[1] + m[2]) - means[1]) < 1.0
    assert 0.7 < np.linalg.norm(m[1] - m[2]) < 1.6
    assert np.linalg.norm(m[2] - means[1]) < 1.5
    monkeypatch.setattr(pe, "REVIVE_ABSORBER", 0)
    _, m, _ = _step(plan, counts, [(h.copy(), s, None) for h, s, _ in history], seed)
    assert np.linalg.norm(0.5 * (m[0] + m[2]) - means[0]) < 1.0  # main: the widest
    assert 4.0 < abs(m[0][0] - m[2][0]) < 6.0  # ±½·5 on e₁


def test_growth_within_the_counts_noise_falls_back_to_the_widest() -> None:
    """No count grew beyond ``DEAD_SIGMAS`` sds of two counts' noise: the rows went nowhere
    one can read, and the revival splits the widest component, as before."""
    plan = _plan()
    sd = _count_sd(plan)
    before = np.array([10_000.0, 5_000.0, 9_000.0, 26_000.0])
    grow = 0.9 * pe.DEAD_SIGMAS * math.hypot(sd, sd)  # under the threshold
    assert pe._absorber(2, [(before, sd, None)], before + [0, grow, -8_800, 0], sd,
                        np.array([True, True, False, True]), []) is None
    assert pe._absorber(2, [(before, sd, None)], before + [0, 1.2 * grow / 0.9, -8_800, 0], sd,
                        np.array([True, True, False, True]), []) == 1
    # a fade of 2,300 rows (beyond FADE and the noise) spread over the three others by
    # 700-800 each (2.8-3.2 sds; the threshold is 4.2): the widest is split
    before = np.array([10_000.0, 5_000.0, 2_500.0, 32_500.0])
    assert 2_300.0 > pe.DEAD_SIGMAS * math.hypot(sd, sd) > 800.0 + sd
    _, m, _ = _step(plan, [10_800.0, 5_800.0, 200.0, 33_200.0], [(before.copy(), sd, None)], 0)
    means, _ = _state()
    assert np.linalg.norm(0.5 * (m[0] + m[2]) - means[0]) < 1.0
    assert 4.0 < abs(m[0][0] - m[2][0]) < 6.0


def test_the_fade_is_read_from_the_dying_components_peak() -> None:
    """The window starts at the dying component's largest released count (the fade's start),
    not at the previous step: component 1 took 2 rows' count over three steps, component 3
    grew only in the last one (more than 1 did in that step). NaN (a component split since)
    is never a baseline, and an excluded (already split this step) or dead-as-well component
    is never the absorber."""
    sd = 100.0
    alive = np.array([True, True, False, True])
    hist = [(np.array([10_000.0, 5_000.0, 9_000.0, 26_000.0]), sd, None),
            (np.array([10_000.0, 9_000.0, 5_000.0, 26_000.0]), sd, None),
            (np.array([10_000.0, 12_000.0, 2_000.0, 26_000.0]), sd, None)]
    now = np.array([10_000.0, 12_200.0, 200.0, 27_600.0])
    assert pe._absorber(2, hist, now, sd, alive, []) == 1  # +7,200 since the peak; 3: +1,600
    assert pe._absorber(2, hist[1:], now, sd, alive, []) == 1  # +3,200 vs +1,600
    assert pe._absorber(2, hist[2:], now, sd, alive, []) == 3  # the last step alone: 3
    assert pe._absorber(2, hist, now, sd, alive, [1]) == 3
    nan = [(h.copy(), s, None) for h, s, _ in hist]
    for h, _, _ in nan:
        h[1] = np.nan
    assert pe._absorber(2, nan, now, sd, alive, []) == 3
    for h, _, _ in nan:
        h[2] = np.nan
    assert pe._absorber(2, nan, now, sd, alive, []) is None  # no count of the dying one


def test_the_run_keeps_its_released_counts_and_forgets_split_components() -> None:
    """``_em_release`` appends each step's released counts (and their sd) to the run's history;
    after a revival the revived and the split component's entries are NaN (their counts
    restart: a half is not the whole), the others' kept."""
    plan = _plan()
    sd = _count_sd(plan)
    history = [(np.array([10_000.0, 5_000.0, 9_000.0, 26_000.0]), sd, None)]
    _step(plan, [10_000.0, 5_000.0, 9_000.0, 26_000.0], history, 0)  # no revival
    assert len(history) == 2 and np.isfinite(history[1][0]).all()
    assert history[1][1] == pytest.approx(sd)
    assert np.abs(history[1][0] - [10_000.0, 5_000.0, 9_000.0, 26_000.0]).max() < 6 * sd
    _step(plan, [10_000.0, 13_800.0, 200.0, 26_000.0], history, 0)  # 2 revived from 1
    assert len(history) == 3
    for counts, _, _ in history:
        assert np.isnan(counts[[1, 2]]).all() and np.isfinite(counts[[0, 3]]).all()


def test_an_over_parameterised_runs_components_are_revived_from_the_widest(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the reduction (a k′ run's steps, where components fade into a sibling on the
    same cluster as they should) the revival splits the widest, as main: with the absorber
    there, generated family 1124 (noise seed 1) reduced to a wrong structure, 0.08 → 0.44
    nat/row (``benchmarks/results/em_small_clusters.md``, revive)."""
    plan = dataclasses.replace(_plan(), reduce_at=T + 1)
    history = [(np.array([10_000.0, 5_000.0, 9_000.0, 26_000.0]), _count_sd(plan), None)]
    _, m, _ = _step(plan, [10_000.0, 13_800.0, 200.0, 26_000.0], history, 0)
    means, _ = _state()
    assert np.linalg.norm(0.5 * (m[0] + m[2]) - means[0]) < 1.0
    assert 4.0 < abs(m[0][0] - m[2][0]) < 6.0
    monkeypatch.setattr(pe, "REVIVE_ABSORBER", 1)  # the absorber in every step: 1 split
    history = [(np.array([10_000.0, 5_000.0, 9_000.0, 26_000.0]), _count_sd(plan), None)]
    _, m, _ = _step(plan, [10_000.0, 13_800.0, 200.0, 26_000.0], history, 0)
    assert np.linalg.norm(0.5 * (m[1] + m[2]) - means[1]) < 1.0


def test_a_restart_puts_the_fading_component_back_at_its_peak_state(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``REVIVE_ABSORBER`` = 3: the fading component is restarted at its own released state
    after the step where its count peaked (above the floor), at that count's weight, and no
    other component is split; without a released state above the floor it is split-revived
    from the widest, as main."""
    monkeypatch.setattr(pe, "REVIVE_ABSORBER", 3)
    plan = _plan()
    sd = _count_sd(plan)
    means, covs = _state()
    peak_means, peak_covs = means.copy(), covs.copy()
    peak_means[2] = [3.0] * D  # where it was at its peak
    peak_covs[2] = 2.0 * np.eye(D)
    history = [(np.array([10_000.0, 5_000.0, 6_000.0, 29_000.0]), sd, (means, covs)),
               (np.array([10_000.0, 5_000.0, 9_000.0, 26_000.0]), sd, (peak_means, peak_covs))]
    w, m, c = _step(plan, [10_000.0, 13_800.0, 200.0, 26_000.0], history, 0)
    np.testing.assert_array_equal(m[2], peak_means[2])
    np.testing.assert_array_equal(c[2], peak_covs[2])
    # its peak share 0.18, renormalised with the others' (its own was ~0.004): 0.18 / 1.176
    assert 0.15 < w[2] < 0.157 and w.sum() == pytest.approx(1.0)
    assert np.linalg.norm(m[0] - means[0]) < 1.0 and np.linalg.norm(m[1] - means[1]) < 1.0
    low = [(np.array([10_000.0, 5_000.0, 2_500.0, 32_500.0]), sd, (peak_means, peak_covs))]
    assert 2_500.0 < pe._release_floor(plan, T, N_ROWS, K)
    _, m, _ = _step(plan, [10_800.0, 5_800.0, 200.0, 33_200.0], low, 0)
    assert np.linalg.norm(0.5 * (m[0] + m[2]) - means[0]) < 1.0  # split from the widest
