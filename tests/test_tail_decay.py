"""The geometric continuation of a released tail (issue 28,
:func:`privgauss.synthesis.marginals._tail_decay`): past a side's outermost tail bin holding
mass, a tail whose octaves are each too thin for the tail cut is continued by a geometric
shape whose first count is the pooled least-squares fit to the remaining noisy tail counts,
soft-thresholded at :data:`TAIL_DECAY_SIGMAS` of its own noise. Post-processing of the same
two releases (no plan or ledger change): these tests check the fit, its threshold, its
expected mass on pure noise (what a column without a tail pays) and what it gives a
lognormal column past its range."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from privgauss.mechanisms import Release
from privgauss.noise import NoiseSource
from privgauss.privacy import ZCDP, Accountant
from privgauss.synthesis import marginals as marg
from privgauss.synthesis.marginals import MarginalPlan, release_marginals


def _nested(y: np.ndarray, sd: float, r: float, z: float) -> np.ndarray:
    """The continuation by hand: the shape's soft-thresholded fit to bins i, i + 1, ...,
    each bin at most a·r^i, its own fit and the bins before it; below half a record ends it."""
    fits = []
    for i in range(len(y)):
        w = r ** np.arange(len(y) - i)
        fits.append(max(float(np.sum(y[i:] * w)) / float(np.sum(w * w))
                        - z * sd / math.sqrt(float(np.sum(w * w))), 0.0))
    out, prev = [], math.inf
    for i, f in enumerate(fits):
        m = min(fits[0] * r ** i, f, prev)
        if m < marg.TAIL_MIN_COUNT:
            break
        out.append(m)
        prev = m
    return np.array(out + [0.0] * (len(y) - len(out)))


def test_the_fit_its_threshold_start_and_order() -> None:
    """Each case fails if the fit's weights, its noise deviation, the start past the
    outermost held bin, a bin's own evidence, the half-record end or a bottom side's order
    were wrong."""
    sd, r, z = 20.0, 0.25, 1.0
    y = np.array([60.0, 30.0, 0.0, 0.0, 0.0])
    out = marg._tail_decay(y, np.zeros(5), sd, r, z)
    assert np.allclose(out, _nested(y, sd, r, z))
    w = r ** np.arange(5)
    a = float(np.sum(y * w)) / float(np.sum(w * w)) - z * sd / math.sqrt(float(np.sum(w * w)))
    assert out[0] == pytest.approx(a)  # the first bin: the pooled fit less z deviations
    # the second bin: its own fit (30/1.067 − 19.4 = 8.7) is below a·r = 11.0; the third's
    # is 0 and ends the continuation
    assert 0 < out[1] < a * r and np.all(out[2:] == 0.0)
    # a light tail: a first bin of 60 records, nothing past it — not continued
    n4 = float(np.sum(w[:4] ** 2))
    assert np.allclose(marg._tail_decay(np.array([60.0, 0, 0, 0]), np.zeros(4), sd, r, z),
                       [60 / n4 - z * sd / math.sqrt(n4), 0, 0, 0])
    # past the outermost bin holding mass (kept or spread): the fit starts at bin 2, and
    # holds at most r times that bin's records (40·r = 10, below the fit's 41.8)
    held = np.array([50.0, 40.0, 0.0, 0.0])
    out2 = marg._tail_decay(np.array([50.0, 40.0, 60.0, 20.0]), held, sd, r, z)
    assert out2[0] == out2[1] == 0.0
    assert np.allclose(out2[2:], np.minimum(_nested(np.array([60.0, 20.0]), sd, r, z),
                                            r * 40.0))
    assert out2[2] == pytest.approx(10.0)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(marg, "TAIL_DECAY_AFTER_HELD", False)
        free = marg._tail_decay(np.array([50.0, 40.0, 60.0, 20.0]), held, sd, r, z)
    assert np.allclose(free[2:], _nested(np.array([60.0, 20.0]), sd, r, z))
    assert free[2] > 40.0
    # a bottom side is stored farthest first: its fit starts at the last bin
    assert np.allclose(marg._tail_decay(y[::-1].copy(), np.zeros(5), sd, r, z,
                                        outward=False), out[::-1])
    # a count below the threshold gives nothing; ratio 0 is off; a held outermost bin leaves
    # nothing to continue
    assert np.all(marg._tail_decay(np.array([15.0, 0, 0, 0]), np.zeros(4), sd, r, z) == 0)
    assert np.all(marg._tail_decay(y, np.zeros(5), sd, 0.0, z) == 0)
    assert np.all(marg._tail_decay(y, np.array([0, 0, 0, 0, 1.0]), sd, r, z) == 0)
    # as the noise vanishes so does the threshold: a geometric tail's counts themselves
    tiny = marg._tail_decay(np.array([64.0, 16, 4, 1]), np.zeros(4), 1e-9, r, z)
    assert np.allclose(tiny, [64, 16, 4, 1])


def test_pure_noise_gets_the_soft_thresholds_expected_mass() -> None:
    """A side without records past its range (8 tail bins of noise alone, forbes2000's
    combined deviation 22.7) gets on average sd_a·(φ(z) − z·(1 − Φ(z))) records in its first
    bin (the soft threshold's mean on N(0, sd_a²), sd_a = sd/√Σr^2i): ≈ 1.8 at z = 1 — a hard
    threshold, a threshold in the wrong units (sd, not sd_a) or no threshold would not give
    it; and it is positive on only 1 − Φ(z) of the sides."""
    rng = np.random.default_rng(3)
    sd, r, z, m = 22.7, marg.TAIL_DECAY, marg.TAIL_DECAY_SIGMAS, 8
    assert r > 0
    noise = rng.normal(0.0, sd, (200_000, m))
    w = r ** np.arange(m)
    sd_a = sd / math.sqrt(float(np.sum(w * w)))
    fit = noise @ w / float(np.sum(w * w))
    first = np.maximum(fit - z * sd_a, 0.0)
    first = np.where(first >= marg.TAIL_MIN_COUNT, first, 0.0)
    out = np.array([marg._tail_decay(row, np.zeros(m), sd, r, z) for row in noise[:20_000]])
    assert np.allclose(out[:, 0], first[:20_000])
    # past the first bin each needs its own evidence: less than the first's r-th part
    assert float(np.mean(out[:, 1:].sum(axis=1))) < r * float(np.mean(out[:, 0]))
    expected = sd_a * (norm.pdf(z) - z * norm.sf(z))
    assert float(np.mean(np.maximum(fit - z * sd_a, 0.0))) == pytest.approx(expected, rel=0.02)
    assert expected < 2.0
    assert float(np.mean(out[:, 0] > 0)) == pytest.approx(norm.sf(z), abs=0.01)


def _release(X: np.ndarray, seed: int) -> list[marg.Marginal]:
    n, d = X.shape
    # noise deviations 26.3 (histogram) and 45.3 (range) records for three columns, as
    # test_synthesize's thin-tail tests: forbes2000's at ε = 1
    rho_hist, rho_range = 3 / 26.3 ** 2, 3 / 45.3 ** 2
    plan = MarginalPlan(["float"] * d, [None] * d, marg.n_fine_bins(n, rho_hist, d),
                        rho_range, rho_hist)
    return release_marginals(X, plan, release=Release(Accountant(ZCDP(1.0)), NoiseSource(seed)))


def test_a_lognormal_tail_past_the_range_keeps_mass_there() -> None:
    """Lognormal columns (σ = 1.5 and 2, n = 3000, 1-4 % of the rows past a range over
    octaves each too thin to keep) at forbes2000's noise, seeded: the continuation puts mass
    past the highest value the marginal reached without it (where held-out rows lie, and
    without it would score as impossible) in most fits, never more than the real rows' share
    there, and never a value past 2^4 times the real maximum."""
    gained, pasts, reals = 0, [], []
    for sigma in (1.5, 2.0):
        for seed in range(8):
            rng = np.random.default_rng(seed)
            X = np.column_stack([rng.lognormal(0.0, sigma, 3000), rng.normal(50.0, 5.0, 3000),
                                 rng.normal(0.0, 1.0, 3000)])
            on = _release(X, seed)[0]
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(marg, "TAIL_DECAY", 0.0)
                off = _release(X, seed)[0]
            top = float(off.edges[-1])
            past = 1.0 - float(np.interp(top, on.edges, on.cdf))
            real = float(np.mean(X[:, 0] > top))
            assert past >= 0.0 and on.high <= 4.0 * float(X[:, 0].max()), (sigma, seed)
            gained += past > 0
            pasts.append(past)
            reals.append(real)
    assert gained >= 10, gained
    assert float(np.mean(pasts)) <= float(np.mean(reals))


def test_columns_without_a_tail_get_little_past_their_data() -> None:
    """Columns of bounded support (a normal, a uniform and a two-sided normal, n = 2000, 30
    seeded fits at forbes2000's noise): the continuation's extra mass past the data's own
    minimum and maximum is the soft threshold's on noise, ≤ 0.05 % of n on average over the
    180 sides (measured 0.017 %, 6 sides with any) and ≤ 2 % on any (measured at most
    0.94 %: a continued bin's values spread past the data's largest), never beyond 2^3
    times the data's reach (unless the tail cut's own bins reach farther).
    (The normals' released ranges may end inside their data, at ±2: the records past them
    are a real tail, which the continuation may extend up to the data's reach.)"""
    shares = []
    for seed in range(30):
        rng = np.random.default_rng(100 + seed)
        X = np.column_stack([rng.normal(50.0, 5.0, 2000), rng.uniform(0.0, 100.0, 2000),
                             rng.normal(0.0, 1.0, 2000)])
        on = _release(X, seed)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(marg, "TAIL_DECAY", 0.0)
            off = _release(X, seed)
        for j, (p, q) in enumerate(zip(on, off, strict=True)):
            lo, hi = float(X[:, j].min()), float(X[:, j].max())
            for m, sign in ((p, 1.0), (q, -1.0)):
                shares.append(sign * (1.0 - float(np.interp(hi, m.edges, m.cdf))))
                shares.append(sign * float(np.interp(lo, m.edges, m.cdf)))
            # (seed 3's normal(50, 5) has a tail bin [2048, 4096) kept by the tail cut in
            # both arms: a false alarm of the cut, not of the continuation)
            assert p.high <= max(q.high, 8.0 * max(abs(hi), 1.0)), (seed, j)
            assert p.low >= min(q.low, -8.0 * max(abs(lo), 1.0)), (seed, j)
    # the continuation's extra mass past the data's reach, per side (on − off)
    extra = np.array(shares[0::4] + shares[1::4]) + np.array(shares[2::4] + shares[3::4])
    assert extra.max() <= 0.02, extra.max()
    assert extra.mean() <= 0.0005, extra.mean()
