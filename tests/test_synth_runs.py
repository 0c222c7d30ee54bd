"""The zoom's runs of sub-bins (issue 28; ``synthesis.marginals._run_fits``): a bin whose
levels are each too thin for the zoom's cut is narrowed to the span its sub-bins support,
a bin of mass throughout is left whole; and a marginal of one bin of mass gets no
correlations from its noise (``synthesizer._undo_jitter_attenuation``)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import privgauss as pg
import privgauss.synthesis.marginals as marg
import privgauss.synthesis.synthesizer as synth_mod

SIGMA_Z = 65.7  # the zoom's noise on SumHes at ε = 1 (2,080 rows, 4 columns)
SIGMA = 21.9  # its first histogram's
CUT = 3.16  # the zoom's cut on a sub-bin, in deviations (64 sub-bins a slot)


def _fit(true: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray | None, np.ndarray]:
    """One bin's sub-counts ``true`` with the zoom's noise: its run-fit masses (None: whole)
    and the noisy sub-counts."""
    sub = true + rng.normal(0.0, SIGMA_Z, len(true))
    count = float(true.sum() + rng.normal(0.0, SIGMA))
    total = marg._combined_total(count, SIGMA, sub, SIGMA_Z)
    (run,) = marg._run_fits([(5, sub, np.ones(len(true)), total)], SIGMA_Z, CUT)
    return marg._run_masses(count, SIGMA, sub, SIGMA_Z, run, np.ones(len(true))), sub


def test_a_bin_of_thin_levels_is_narrowed_to_them() -> None:
    """SumHes's year: 23 levels of 80 records then 20 empty ones in one bin of 43 sub-bins.
    The sub-bins one by one (:func:`_zoomed_masses`, cut ≈ 3.2 σ_z = 210) mostly leave the
    bin whole, 20/43 = 0.47 of its mass on the empty years; its runs put all of it on the 23
    in most draws (0.22 on the empty years on average over 200 draws: a draw whose noise
    hides the emptiness keeps the bin whole)."""
    true = np.r_[np.full(23, 80.0), np.zeros(20)]
    rng = np.random.default_rng(0)
    outside, whole = [], 0
    for _ in range(20):
        mass, sub = _fit(true, rng)
        if marg._zoomed_masses(float(true.sum()), SIGMA, sub, SIGMA_Z, np.ones(43),
                               CUT * SIGMA_Z) is None:
            whole += 1
            outside.append(1.0 if mass is None else mass[23:].sum() / mass.sum())
    assert whole >= 15
    assert np.median(outside) < 0.1 and np.mean(outside) < 0.3, outside


@pytest.mark.parametrize("true", [np.full(64, 40.0), np.full(45, 2.5), np.full(2, 141.0)],
                         ids=["dense", "thin", "two-levels"])
def test_a_bin_of_mass_throughout_stays_whole(true: np.ndarray) -> None:
    """A bin with the same density throughout — dense, a thin tail, two levels — is left
    whole by its runs in at least 36 of 40 noise draws (a false narrowing moves its mass onto
    the levels its noise lifts; over 400 draws 2.3 %, 4.5 % and 0 % are narrowed; with the
    ends tested against the bins' even share instead, a bin of two levels was in ~3 %)."""
    rng = np.random.default_rng(1)
    narrowed = sum(_fit(true, rng)[0] is not None for _ in range(40))
    assert narrowed <= 4


def test_the_runs_of_adjacent_bins_are_fitted_together() -> None:
    """Two adjacent bins, the data's levels straddling their edge: each is narrowed to its
    side of the run (the fit sees one sequence of sub-bins); the same bins apart (not
    adjacent) are fitted each alone."""
    left = np.r_[np.zeros(30), np.full(12, 150.0)]
    right = np.r_[np.full(14, 150.0), np.zeros(29)]
    rng = np.random.default_rng(2)
    subs = [t + rng.normal(0.0, SIGMA_Z, len(t)) for t in (left, right)]
    slots = [(7, subs[0], np.ones(42), float(left.sum())),
             (8, subs[1], np.ones(43), float(right.sum()))]
    runs = marg._run_fits(slots, SIGMA_Z, CUT)
    for (fit, empty), t in zip(runs, (left, right), strict=True):
        assert empty[t == 0].mean() > 0.8 and not empty[t > 0].any()
        assert fit[t > 0].sum() > 0.9 * fit.sum()


def test_the_runs_vanish_with_the_noise() -> None:
    """Consistency: at a tiny σ_z the fit is the data's sub-counts, and the empty stretches
    at the ends — only those — are found empty (noise-free counts: exactly)."""
    true = np.r_[np.zeros(5), 30.0, 0.0, 12.0, 12.0, np.zeros(7), 3.0, 0.0, 0.0]
    sigma_z = 1e-6
    noisy = true + np.random.default_rng(3).normal(0.0, sigma_z, len(true))
    mass = float(true.sum())
    ((fit, _),) = marg._run_fits([(0, noisy, np.ones(len(true)), mass)], sigma_z, CUT)
    assert np.allclose(fit, true, atol=1e-4)
    ((fit, empty),) = marg._run_fits([(0, true, np.ones(len(true)), mass)], sigma_z, CUT)
    assert np.array_equal(fit, true)
    want = np.zeros(len(true), dtype=bool)
    want[:5] = want[-2:] = True
    assert np.array_equal(empty, want)


def _sumhes_like(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    year = rng.integers(1960, 1986, n)
    return pd.DataFrame({
        "year": year.astype(np.int64),
        "pop": (np.exp(rng.normal(9.0, 2.0, n)) + 40).round().astype(np.int64),
        "gdp": rng.lognormal(8.0, 0.8, n).round().astype(np.int64),
        "sr": np.round(rng.normal(20.0, 8.0, n) + 0.2 * (year - 1970), 1)})


def test_a_year_column_stays_near_its_years_at_eps1() -> None:
    """End to end, SumHes's shape (26 years of ~80 rows, a released octave [1024, 2048)):
    the share of synthetic years outside 1960-1985, over six seeds. Before the runs the
    year's bin of ~50 years kept its mass whole: 0.47 outside on each of the six; narrowed
    to the span its runs support, 0.26 or less on five (a span that starts a decade early
    when its first run mixes the empty 1950s with the 1960s)."""
    shares = []
    for seed in range(6):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            syn = pg.PrivateSynthesizer(epsilon=1.0, delta=1e-6, random_state=seed).fit(
                _sumhes_like(2080, seed))
            y = syn.sample_table(2080, random_state=seed + 1)["year"].to_numpy()
        shares.append(float(np.mean((y < 1960) | (y > 1985))))
    assert np.median(shares) < 0.3 and max(shares) < 0.4, shares


# ------------------------------------------------------------- the support's end bins


def _vocab_like(n: int, seed: int) -> pd.DataFrame:
    """Vocab's shape: a survey year every other year 1974-2004 (16 levels in the octave
    [1024, 2048)), an education and a score."""
    rng = np.random.default_rng(seed)
    educ = np.clip(rng.normal(12.0, 3.0, n), 0, 20).round().astype(np.int64)
    return pd.DataFrame({
        "year": rng.choice(np.arange(1974, 2005, 2), size=n).astype(np.int64),
        "educ": educ,
        "vocab": np.clip(np.round(rng.normal(6.0, 2.0, n) + 0.2 * (educ - 12)), 0, 10
                         ).astype(np.int64)})


def _years_outside(seed: int) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        syn = pg.PrivateSynthesizer(epsilon=1.0, delta=1e-6, random_state=seed).fit(
            _vocab_like(8000, seed))
        y = syn.sample_table(8000, random_state=seed + 1)["year"].to_numpy()
    return float(np.mean((y < 1974) | (y > 2004)))


def test_the_zoom_splits_the_supports_end_bins(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first bin of the year's support, [1963.5, 1977.5), holds 1974 and 1976 and is not
    among the two heaviest: without the end slots its mass is spread over 1964-1977 (13 % of
    the synthetic years outside 1974-2004 on each of four seeds); with them, split into its
    years, almost none are."""
    assert max(_years_outside(seed) for seed in range(4)) < 0.03
    monkeypatch.setattr(marg, "ZOOM_END_BINS", 0)
    assert min(_years_outside(seed) for seed in range(2)) > 0.1


def test_the_end_slots_pick_the_supports_ends_once() -> None:
    """:func:`_zoom_bins`: the heaviest bins, then the first and last bin whose counts pass
    their cut when splittable and not picked already; without end slots, as before."""
    e = np.array([0.5, 10.5, 20.5, 30.5, 40.5, 41.5, 50.5])
    counts = np.array([1.0, 300.0, 900.0, 800.0, 700.0, 1.0])
    cuts = np.full(6, 100.0)
    assert marg._zoom_bins(e, counts, 1.0, None, 2) == [2, 3]
    # the support is bins 1-4; bin 4 holds one level (no split), bin 1 is added
    assert marg._zoom_bins(e, counts, 1.0, None, 4, 2, cuts) == [1, 2, 3]
    # without end slots the four heaviest splittable bins, empty bin 0 among them
    assert marg._zoom_bins(e, counts, 1.0, None, 4, 0, cuts) == [0, 1, 2, 3]


# --------------------------------------------------------------- one bin of mass: (a)


def test_a_one_bin_columns_correlations_are_zero_not_divided_by_the_floor() -> None:
    """A column whose marginal has one bin of mass (attenuation at the floor: its jittered
    scores carry no rank) gets correlation 0 with the others; the others keep theirs. Divided
    by the floor, its noise 0.05 became the cap 0.99 and, kept positive definite, bent the
    others' 0.5."""
    one = marg.Marginal("integer", np.array([1920.5, 2005.5]), np.array([0.0, 1.0]))
    assert one.jitter_attenuation() == marg.ATTENUATION_FLOOR
    cop = pg.PrivateGaussian(rho=1.0)
    cop.mean_ = np.zeros(3)
    cop.covariance_ = np.array([[1.0, 0.05, -0.03], [0.05, 1.0, 0.5], [-0.03, 0.5, 1.0]])
    synth_mod._undo_jitter_attenuation(cop, [one.jitter_attenuation(), 1.0, 1.0])
    c = cop.covariance_
    assert c[0, 1] == 0.0 and c[0, 2] == 0.0 and c[1, 0] == 0.0
    assert c[1, 2] == pytest.approx(0.5, abs=1e-9)
    mix = pg.PrivateGaussianMixture(2, rho=1.0)
    mix.weights_ = np.array([0.5, 0.5])
    mix.means_ = np.array([[0.0, -0.5, -0.4], [0.0, 0.5, 0.4]])
    mix.covariances_ = np.array([[[1.0, 0.05, 0.0], [0.05, 0.75, 0.3], [0.0, 0.3, 0.84]]] * 2)
    synth_mod._undo_jitter_attenuation(mix, [marg.ATTENUATION_FLOOR, 0.9, 1.0])
    w, mu = mix.weights_, mix.means_
    dev = mu - w @ mu
    overall = (np.einsum("k,kij->ij", w, mix.covariances_)
               + np.einsum("k,ki,kj->ij", w, dev, dev))
    assert abs(overall[0, 1]) < 1e-9 and abs(overall[0, 2]) < 1e-9


# ------------------------------------------------- a negative code below a range at 0: (b)


def _kids_with_code(n: int, seed: int) -> pd.DataFrame:
    """Counts 0-13 and a missing-value code −1 in 2 % of the rows (int64), and a value."""
    rng = np.random.default_rng(seed)
    k = rng.poisson(4.0, n).clip(0, 13)
    k[rng.random(n) < 0.02] = -1
    return pd.DataFrame({"kids": k.astype(np.int64), "x": rng.normal(size=n) + 0.1 * k})


@pytest.mark.parametrize("seed", range(4))
def test_a_negative_code_below_a_range_from_0_is_kept(seed: int) -> None:
    """The code's octave is too thin for the range's threshold, so the released range starts
    at 0; the integer column's sign probe (one bin of levels below 0) keeps the code's mass
    below 0 instead of clipping it to 0. Before the probe, on three of these four seeds no
    synthetic value was negative and the 0 level's share doubled (0.04 against 0.02)."""
    X = _kids_with_code(4000, seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        syn = pg.PrivateSynthesizer(epsilon=1.0, delta=1e-6, random_state=seed).fit(X)
        k = syn.sample_table(4000, random_state=seed + 1)["kids"].to_numpy()
    real = X["kids"].to_numpy()
    assert 0.01 < np.mean(k < 0) < 0.035
    assert k.min() >= -6
    assert abs(np.mean(k == 0) - np.mean(real == 0)) < 0.01


def test_the_level_probe_is_one_bin_of_levels_past_0() -> None:
    e = np.arange(-0.5, 32.0, 1.0)
    out, probe = marg._with_level_probe(e, 1.0, True)
    assert probe == 0 and out[0] == -4.5 and np.array_equal(out[1:], e)
    out, probe = marg._with_level_probe(-e[::-1], 1.0, False)
    assert probe == len(e) - 1 and out[-1] == 4.5
    out, _ = marg._with_level_probe(np.arange(-0.05, 0.5, 0.1), 0.1, True)
    assert out[0] == pytest.approx(-0.15)  # ⌈0.125 × 0.45 / 0.1⌉ = 1 grid step


def test_a_bin_of_a_far_released_range_is_split_without_overflow() -> None:
    """A false alarm of the range release can reach 2^129 (forbes2000 at ε = 0.5): a gridded
    column's bin [−0.025, 2^129] holds ~1.4e40 grid values, more than an int64 counts; its
    zoom sub-bins are still ``split`` increasing half-step edges ending at the bin's end (the
    level count was an int, and np.linspace failed on it: EstimationFailed after spending)."""
    b = 2.0**129
    e = marg._zoom_edges(-0.025, b, 0.05, 64)
    assert e.shape == (65,) and e[0] == -0.025 and e[-1] == b
    assert np.all(np.diff(e) > 0) and np.all(np.isfinite(e))
    small = marg._zoom_edges(-0.5, 3.5, 1.0, 64)  # few levels: one sub-bin per level
    assert np.array_equal(small, [-0.5, 0.5, 1.5, 2.5, 3.5])


def test_a_side_without_tail_bins_spreads_nothing() -> None:
    """A column side with no tail octaves (its released range reaching the last octave, or no
    room past it) has no tail bins: the spread's Bonferroni over its bins divided by zero
    (ZeroDivisionError inside the fit: EstimationFailed after spending); it now keeps and
    gives back nothing and the other side is handled as before."""
    key = int(marg._octave_keys(np.array([1000.0]))[0])
    ranged = {0: (np.zeros(marg.N_RANGE_BINS), key - 3, key)}
    top_edges, top_keys = marg._tail_edges(marg._bin_edges(key)[1], key, 1.0, True)
    assert len(top_keys) == marg.TAIL_OCTAVES
    tails = [{"bottom": (np.array([0.0]), []), "top": (top_edges, top_keys)}]
    noisy = np.zeros(len(top_keys))
    out = marg._released_tails(noisy, tails, ranged, 1.0, 1.0)
    assert set(out[0]) == {"bottom", "top"}
    bottom = out[0]["bottom"]
    assert len(bottom[1]) == 0 and float(np.sum(bottom[2])) == 0.0
    assert len(out[0]["top"][1]) == len(top_keys)
