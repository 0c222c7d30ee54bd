"""The graded tail cut (issue 28, :func:`privgauss.synthesis.marginals._tail_cuts`): the
table's tail-bin false-alarm probability ``TAIL_BETA`` split in proportion to 2^−t over the
bins, t octaves past the range — post-processing of the same histogram release (no plan or
ledger change), so these tests check the cut itself: its Bonferroni sum, its rates on pure
noise, and a constructed far count that the old, uniform cut kept."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import ndtr, ndtri

from privgauss.synthesis import marginals as marg


def _one_top_side() -> tuple[list, dict, list[int]]:
    """One column of a released range ending in the octave of 1000, with its
    :data:`TAIL_OCTAVES` tail bins above (none below)."""
    key = int(marg._octave_keys(np.array([1000.0]))[0])
    ranged = {0: (np.zeros(marg.N_RANGE_BINS), key - 3, key)}
    edges, keys = marg._tail_edges(marg._bin_edges(key)[1], key, 1.0, True)
    assert len(keys) == marg.TAIL_OCTAVES
    assert [k - key for k in keys] == list(range(1, marg.TAIL_OCTAVES + 1))
    return [{"bottom": (np.array([0.0]), []), "top": (edges, keys)}], ranged, keys


@pytest.mark.parametrize("graded", [False, True])
def test_the_cuts_spend_exactly_the_tables_beta(graded: bool) -> None:
    """Σ_i (1 − Φ(cut_i)) = β over all the table's tail bins (Bonferroni), whatever the sides'
    sizes; graded cuts rise with the distance, uniform ones are ndtri(1 − β/m)."""
    dist = [np.arange(1, 9), np.array([2, 3, 5]), np.zeros(0, dtype=np.int64), np.arange(1, 5)]
    beta = 0.01
    cuts = marg._tail_cuts(dist, beta, graded)
    assert [len(c) for c in cuts] == [8, 3, 0, 4]
    spent = sum(float(np.sum(1.0 - ndtr(c))) for c in cuts)
    assert spent == pytest.approx(beta, rel=1e-9)
    m = sum(len(t) for t in dist)
    if graded:
        assert np.all(np.diff(cuts[0]) > 0)
        # each octave farther halves the bin's share
        assert 1.0 - ndtr(cuts[0][3]) == pytest.approx(0.5 * (1.0 - ndtr(cuts[0][2])))
        assert cuts[0][0] < float(ndtri(1.0 - beta / m)) < cuts[0][-1]
    else:
        assert np.allclose(np.concatenate(cuts), float(ndtri(1.0 - beta / m)))


def test_pure_noise_passes_each_graded_cut_at_its_share() -> None:
    """Noise alone in the 8 tail bins of one side (histogram and range counts combined by
    inverse variance) is kept in bin t at rate β·2^−t/Σ2^−s: at β = 0.4 (to measure it), the
    near bin's rate 0.2, the fourth's 0.025 — a uniform split (0.05 each) or a weight by
    distance reversed would fail."""
    rng = np.random.default_rng(1)
    n, sh, sr = 400_000, 30.0, 50.0
    t = np.arange(1, 9)
    (cuts,) = marg._tail_cuts([t], 0.4, True)
    kept = marg._tail_masses(rng.normal(0, sh, (n, 8)), sh, rng.normal(0, sr, (n, 8)), sr,
                             cuts)
    rate = np.mean(kept > 0, axis=0)
    want = 0.4 * np.exp2(-t) / np.sum(np.exp2(-t))
    assert np.all(np.abs(rate - want) < 4 * np.sqrt(want * (1 - want) / n) + 1e-4)
    assert rate[0] == pytest.approx(0.2, abs=0.003)


@pytest.mark.parametrize("graded", [False, True])
def test_a_far_noise_count_is_cut_a_near_one_kept(graded: bool,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """wavesurge's draw (issue 28): a tail bin 7 octaves past the range whose combined count
    is ~3.3 deviations of its noise passed the uniform cut (ndtri(1 − β/8) ≈ 3.02 on a table of
    8 tail bins) and put 1.8 % of the rows 2^6 times past the range; the graded cut there is
    ≈ 3.78 deviations, so it is dropped, while the same count 1 octave out (cut ≈ 2.57) is
    kept under both rules."""
    monkeypatch.setattr(marg, "TAIL_GRADED", graded)
    tails, ranged, keys = _one_top_side()
    sd = 1.0 / math.sqrt(2.0)  # σ_h = σ_r = 1: the combination's deviation
    count = 3.3 * sd
    for pos, far in ((6, True), (0, False)):
        noisy = np.zeros(len(keys))
        noisy[pos] = count
        ranged[0][0][:] = 0.0
        ranged[0][0][keys[pos]] = count  # the same records in the range release's octave
        out = marg._released_tails(noisy, tails, ranged, 1.0, 1.0)
        kept = out[0]["top"][1]
        assert kept[pos] == (0.0 if (far and graded) else pytest.approx(count))
        assert np.count_nonzero(kept) == (0 if (far and graded) else 1)
