"""Where a dead or fading EM component is revived (issue 27, branch `revive`): restarted at
its state in the model its largest released count was measured under
(``private_em._restart``), else split from the widest component (``private_em._split``).
Post-processing of released counts and models only."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from privgauss.mechanisms import Release
from privgauss.mixture import private_em as pe
from privgauss.privacy import Accountant, ApproxDP

N_ROWS, D, K, T = 50_000, 9, 4, 1


def _plan() -> pe.EMPlan:
    plan = pe._base_plan(N_ROWS, D, K, ApproxDP(1.0, 1e-6))
    assert plan.reduce_at is None and T < plan.n_steps - 2  # a plain plan; revivals allowed
    return plan


def _state() -> tuple[np.ndarray, np.ndarray]:
    # component 0: the widest (w·λ_max = 0.2 · 25 = 5, along e₁); 1: compact, 0.1;
    # 2: the dying one; 3: heavy, compact
    means = np.zeros((K, D))
    means[0, 0], means[1, 1], means[2, 1], means[3, 2] = -12.0, 6.0, 9.0, 12.0
    covs = np.array([np.eye(D)] * K)
    covs[0][0, 0] = 25.0
    return means, covs


def _peaks(count: float) -> pe._Peaks:
    """Component 2 peaked at ``count`` rows at (3, …, 3) with covariance 2I; the others at
    their current state."""
    means, covs = _state()
    peaks = pe._Peaks(np.array([10_000.0, 5_000.0, count, 26_000.0]), means, covs)
    peaks.means[2], peaks.covs[2] = 3.0, 2.0 * np.eye(D)
    return peaks


def _step(plan: pe.EMPlan, counts: list[float], prev: list[float], peaks: pe._Peaks | None,
          seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    means, covs = _state()
    N = np.array(counts)
    stats = (N, np.zeros((K, D)), N[:, None, None] * np.eye(D))
    run = (np.array(prev) / sum(prev), means, covs)
    release = Release.of(Accountant(ApproxDP(1e9, 0.5)), seed)
    return pe._em_release(stats, run, np.linalg.cholesky(covs), plan, T, release, N_ROWS,
                          peaks=peaks)


FADE_NOW = [10_000.0, 13_800.0, 200.0, 26_000.0]  # 2 fell from 9,000 to 200: fading
FADE_PREV = [10_000.0, 5_000.0, 9_000.0, 26_000.0]


@pytest.mark.parametrize("seed", range(3))
def test_a_fading_component_restarts_where_its_count_peaked(
        monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """Its largest count (9,000) cleared the floor: component 2 goes back to its state in the
    model that count was measured under, at weight 9,000/n renormalised, and no other
    component is split. Main's rule (``REVIVE_RESTART`` off) splits the widest, 0, instead:
    the test fails on it."""
    plan = _plan()
    assert 9_000.0 > pe._release_floor(plan, T, N_ROWS, K)
    means, _ = _state()
    w, m, c = _step(plan, FADE_NOW, FADE_PREV, _peaks(9_000.0), seed)
    np.testing.assert_array_equal(m[2], np.full(D, 3.0))
    np.testing.assert_array_equal(c[2], 2.0 * np.eye(D))
    # 0.18 renormalised with the others' released shares (its own was ~0.004): ≈ 0.18/1.176
    assert 0.15 < w[2] < 0.157 and w.sum() == pytest.approx(1.0)
    # the alive ones updated from their releases (noise moves a mean by ~0.3 here; a split
    # would move 0's by 2.5): none split
    assert np.linalg.norm(m[[0, 1, 3]] - means[[0, 1, 3]], axis=1).max() < 1.0
    monkeypatch.setattr(pe, "REVIVE_RESTART", False)
    _, m, _ = _step(plan, FADE_NOW, FADE_PREV, _peaks(9_000.0), seed)
    assert np.linalg.norm(0.5 * (m[0] + m[2]) - means[0]) < 1.0  # the widest split
    assert 4.0 < abs(m[0][0] - m[2][0]) < 6.0  # ±½·5 on e₁


def test_a_component_that_never_cleared_the_floor_is_split_from_the_widest() -> None:
    """A peak under the floor (a component dead from the start, or one never updated from
    its own release) or none since its last revival (NaN): the widest is split, as before."""
    plan = _plan()
    assert 2_500.0 < pe._release_floor(plan, T, N_ROWS, K)
    means, _ = _state()
    for peak in (2_500.0, np.nan):
        prev = [10_000.0, 5_000.0, 2_500.0, 32_500.0]
        _, m, _ = _step(plan, [10_800.0, 5_800.0, 200.0, 33_200.0], prev, _peaks(peak))
        assert np.linalg.norm(0.5 * (m[0] + m[2]) - means[0]) < 1.0
        assert 4.0 < abs(m[0][0] - m[2][0]) < 6.0


def test_an_over_parameterised_runs_steps_split_from_the_widest() -> None:
    """Before the reduction (a k′ run's steps: components fade into a sibling on the same
    cluster, as they should) the revival splits the widest: restarting there changed the
    reduction's input (``benchmarks/results/em_small_clusters.md``, revive)."""
    plan = dataclasses.replace(_plan(), reduce_at=T + 1)
    means, _ = _state()
    _, m, _ = _step(plan, FADE_NOW, FADE_PREV, _peaks(9_000.0))
    assert np.linalg.norm(0.5 * (m[0] + m[2]) - means[0]) < 1.0
    plan = dataclasses.replace(_plan(), reduce_at=T)  # the reduction's own steps: restart
    _, m, _ = _step(plan, FADE_NOW, FADE_PREV, _peaks(9_000.0))
    np.testing.assert_array_equal(m[2], np.full(D, 3.0))


def test_the_peaks_keep_the_model_each_count_was_measured_under() -> None:
    """A count above a component's peak replaces it with the component's state in the model
    the statistics were computed under (the run before this step's update), not the
    update's result; a smaller one does not; after a revival the revived component's peak
    is NaN (it starts again)."""
    plan = _plan()
    means, covs = _state()
    peaks = pe._Peaks.of(K, D)
    _, m, _ = _step(plan, FADE_PREV, FADE_PREV, peaks)
    assert np.abs(m - means).max() > 0.0  # the update moved the means (noise)
    np.testing.assert_array_equal(peaks.means, means)
    np.testing.assert_array_equal(peaks.covs, covs)
    assert np.abs(peaks.count - FADE_PREV).max() < 2_000.0  # released: noisy
    before = peaks.count.copy()
    peaks.means[:] = 7.0  # a marker: kept where the count does not rise
    _step(plan, FADE_NOW, FADE_PREV, peaks)  # 2 fades and restarts (its peak ~9,000)
    assert np.isnan(peaks.count[2])
    assert peaks.count[1] > before[1] and peaks.count[1] > 12_000.0  # 1 rose: replaced
    np.testing.assert_array_equal(peaks.means[1], means[1])
    np.testing.assert_array_equal(peaks.means[[0, 3]][peaks.count[[0, 3]] == before[[0, 3]]],
                                  7.0)
