"""The marginals' zoom into each column's heaviest bins (issue 28; ``synthesis.marginals._zoom``):
a year column's levels come back at ε = 1, the marginals reach the data's values as the budget
grows, the plan equals the ledger, and an audit sees the release's sensitivity."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from _helpers import zoom_release

import privgauss as pg
import privgauss.synthesis.marginals as marg
import privgauss.synthesis.synthesizer as synth_mod
from privgauss.audit import audit_mechanism
from privgauss.privacy import approx_to_zcdp, zcdp_to_epsilon
from privgauss.synthesis.marginals import MarginalPlan

EPS, DELTA = 1.0, 1e-6
YEARS = np.arange(1980, 1988)


def _years_table(n: int, seed: int) -> pd.DataFrame:
    """A panel's year column (eight levels in the octave [1024, 2048), int64) and a value."""
    rng = np.random.default_rng(seed)
    year = rng.choice(YEARS, size=n)
    return pd.DataFrame({"year": year.astype(np.int64),
                         "value": rng.normal(0.1 * (year - 1980), 1.0)})


def _year_shares(n: int, seed: int, **budget: float) -> tuple[np.ndarray, pg.PrivateSynthesizer]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        syn = pg.PrivateSynthesizer(random_state=seed, **budget).fit(_years_table(n, seed))
        out = syn.sample_table(n, random_state=seed + 1)
    years = out["year"].to_numpy()
    return np.array([np.mean(years == y) for y in YEARS]), syn


@pytest.mark.parametrize("seed", [0, 1])
def test_a_year_columns_levels_come_back_at_eps1(seed: int) -> None:
    shares, syn = _year_shares(4000, seed, epsilon=EPS, delta=DELTA)
    # every synthetic year is one of the eight, each near its share of 1/8
    assert shares.sum() == pytest.approx(1.0)
    assert np.abs(shares - 1 / 8).max() < 0.04, shares
    assert any(e.step == "marginals/zoom" for e in syn.ledger_)


def test_without_the_zoom_a_year_column_spreads_over_decades(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The test above has teeth: with no zoom the eight levels share one or two bins of the
    first histogram, and a large part of the synthetic years are not 1980-1987."""
    monkeypatch.setattr(synth_mod, "ZOOM_SHARE", 0.0)
    shares, syn = _year_shares(4000, 0, epsilon=EPS, delta=DELTA)
    assert shares.sum() < 0.6
    assert not any(e.step == "marginals/zoom" for e in syn.ledger_)


def test_marginals_reach_the_datas_values_as_the_budget_grows() -> None:
    """Consistency: at a huge budget the years' shares are the data's, and a float column's
    atoms off every decimal grid (heights in feet) are reproduced to within 5e-3 — the first
    histogram's bins, about 3e-3 wide here: their number grows with n/σ, no longer capped at
    128, which left them 3e-2 wide (a continuous column is not zoomed)."""
    n = 6000
    rng = np.random.default_rng(5)
    atoms = np.array([4.714, 5.0, 5.381, 6.047])
    table = _years_table(n, 5).assign(height=rng.choice(atoms, size=n, p=[.1, .4, .3, .2]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        syn = pg.PrivateSynthesizer(rho=1e6, random_state=0).fit(table)
        out = syn.sample_table(n, random_state=1)
    real = table["year"].to_numpy()
    years = out["year"].to_numpy()
    tv = 0.5 * sum(abs(np.mean(years == y) - np.mean(real == y)) for y in YEARS)
    assert tv < 0.02 and set(np.unique(years)) <= set(YEARS.tolist())
    h = out["height"].to_numpy()
    near = np.min(np.abs(h[:, None] - atoms[None, :]), axis=1)
    assert np.mean(near < 5e-3) > 0.99


def test_the_zoom_is_planned_and_charged_with_sensitivity_sqrt_2m() -> None:
    _, syn = _year_shares(3000, 2, epsilon=EPS, delta=DELTA)
    total = approx_to_zcdp(EPS, DELTA)
    (zoom,) = [e for e in syn.ledger_ if e.step == "marginals/zoom"]
    (bins,) = [e for e in syn.ledger_ if e.step == "marginals/bins"]
    # one discrete column (the year; the value is continuous); the zoom takes ZOOM_SHARE of
    # the histograms' share
    assert zoom.sensitivity == pytest.approx(math.sqrt(2))
    assert zoom.cost.rho == pytest.approx(
        synth_mod.ZOOM_SHARE / (1 - synth_mod.ZOOM_SHARE) * bins.cost.rho)
    assert syn.plan_["marginals/zoom"].rho == pytest.approx(zoom.cost.rho)
    assert sum(e.cost.rho for e in syn.ledger_) == pytest.approx(total, rel=1e-9)


def test_a_binary_only_table_plans_no_zoom() -> None:
    X = pd.DataFrame({"a": np.r_[np.zeros(1500), np.ones(1500)].astype(bool),
                      "b": np.tile([True, False], 1500)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        syn = pg.PrivateSynthesizer(epsilon=EPS, delta=DELTA, random_state=0).fit(X)
    assert "marginals/zoom" not in syn.plan_
    assert not any(e.step == "marginals/zoom" for e in syn.ledger_)


def test_a_dense_bins_noise_leaves_it_whole() -> None:
    """A bin whose sub-counts depart from its even density by noise alone is not split: the
    few sub-counts its noise lifts past the cut would otherwise take all its mass."""
    rng = np.random.default_rng(0)
    widths = np.full(64, 1.0)
    sub = 40.0 + rng.normal(0.0, 40.0, 64)
    assert marg._zoomed_masses(2560.0, 30.0, sub, 40.0, widths, 130.0) is None
    levels = np.zeros(64)
    levels[[10, 11, 12]] = 800.0
    mass = marg._zoomed_masses(2400.0, 30.0, levels + rng.normal(0.0, 40.0, 64), 40.0, widths,
                               130.0)
    assert mass is not None and mass[[10, 11, 12]].sum() > 0.97 * mass.sum()


# ------------------------------------------------------------------------------- privacy

AUDIT_RHO = 0.125
AUDIT_DELTA = 1e-3


def _zoom_mechanism(data: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """An integer column on a stated range (fixed first bins 8 wide), the histogram and its
    zoom: the zoom's released sub-counts (the first histogram, identical in distribution on
    the pair below, is released too and claimed)."""
    plan = MarginalPlan(["integer"], [(0.0, 64.0)], 8, 0.0, AUDIT_RHO, rho_zoom=AUDIT_RHO)
    return zoom_release(data, plan, 2 * AUDIT_RHO, rng, "zoom")


def _zoom_pair() -> tuple[np.ndarray, np.ndarray]:
    """Twenty records at 9 and twenty at 12 — one first-level bin [8.5, 16.5), two of its
    sub-bins; in D′ one moves from 9 to 12: the first histogram is unchanged, the zoom's
    counts move by the whole sensitivity."""
    base = np.r_[np.full(20, 9.0), np.full(20, 12.0)][:, None]
    moved = base.copy()
    moved[0] = 12.0
    return base, moved


def test_zoom_audit_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(marg, "ZOOM_BINS", 1)  # one slot: the bin both spikes lie in
    res = audit_mechanism(_zoom_mechanism, *_zoom_pair(),
                          epsilon=zcdp_to_epsilon(2 * AUDIT_RHO, AUDIT_DELTA),
                          delta=AUDIT_DELTA, n_runs=3000)
    assert res.passed, str(res)


def test_zoom_with_a_quarter_of_the_sensitivity_is_flagged(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(marg, "ZOOM_BINS", 1)
    monkeypatch.setattr(marg, "histogram_l2", lambda: math.sqrt(2.0) / 4)
    res = audit_mechanism(_zoom_mechanism, *_zoom_pair(),
                          epsilon=zcdp_to_epsilon(2 * AUDIT_RHO, AUDIT_DELTA),
                          delta=AUDIT_DELTA, n_runs=3000)
    assert not res.passed, str(res)


# ------------------------------------------------------------------ 0/1 integer columns


def _flags_out(seed: int) -> pd.DataFrame:
    """Eight 0/1 columns read as int64 (a CSV's flags) and a value, 2,000 rows, ε = 1."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({f"f{i}": (rng.random(2000) < 0.2 + 0.07 * i).astype(np.int64)
                      for i in range(8)}).assign(v=rng.normal(size=2000))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        syn = pg.PrivateSynthesizer(epsilon=EPS, delta=DELTA, random_state=seed).fit(X)
        return syn.sample_table(2000, random_state=seed + 1)


def test_integer_flags_come_back_as_0_and_1() -> None:
    """End to end: flags declared int64 (their released range [0, 4), its octaves and one of
    margin) come back 0/1. A check that the whole path keeps them so; noise past the old cut
    was rare on this table (0 of 12 seeds gave a 2 before the change), so the cut itself is
    tested deterministically below."""
    for seed in range(4):
        out = _flags_out(seed)
        vals = np.unique(out.filter(like="f").to_numpy())
        assert set(vals.tolist()) <= {0, 1}, (seed, vals)


def test_a_flags_margin_bin_needs_the_stricter_cut() -> None:
    """Deterministic: a 0/1 column's histogram over [-0.5, 4.5] with noise of 2.6 deviations in
    the margin bin 2. Inside the range less its margin, [0, 2), the cut is the Bonferroni one
    (2.33 deviations over 5 bins: 2 would pass, as before); in the margin it is MARGIN_BETA's
    (2.88): the flag stays 0/1. A count column of many levels keeps the old cut there."""
    sigma = 30.0
    edges = np.arange(-0.5, 5.0, 1.0)
    counts = np.array([1000.0, 900.0, 2.6 * sigma, 0.0, 0.0])
    core = (-(2.0 ** marg.E_MIN), 2.0)
    cdf, _ = marg._cdf_and_smoothness(counts, sigma, "integer", edges, None, core)
    assert cdf[2] == 1.0  # no mass at 2
    old, _ = marg._cdf_and_smoothness(counts, sigma, "integer", edges, None, None)
    assert old[2] < 1.0  # the old cut kept the noise at 2
    wide = marg._cdf_and_smoothness(counts, sigma, "integer", edges, None, (-(2.0 ** marg.E_MIN),
                                                                           8.0))[0]
    assert wide[2] < 1.0


def test_an_isolated_end_level_of_a_discrete_column_needs_the_far_cut() -> None:
    """mid's 0/1 'conflict' column gave 107 synthetic 4s in 2,500 rows: noise of 3.1 deviations
    in bin 4, past empty bins 2 and 3. An isolated end bin of a discrete column must pass the
    range's far cut (RANGE_FAR_BETA); one next to the support keeps the Bonferroni cut."""
    sigma = 34.0
    edges = np.arange(-0.5, 5.0, 1.0)
    cdf, _ = marg._cdf_and_smoothness(np.array([1600.0, 800.0, 0.0, 0.0, 3.1 * sigma]), sigma,
                                      "integer", edges)
    assert cdf[2] == 1.0
    near, _ = marg._cdf_and_smoothness(np.array([1600.0, 800.0, 3.1 * sigma, 0.0, 0.0]), sigma,
                                       "integer", edges)
    assert near[2] < 1.0


def _shifted_table(n: int, seed: int, spread: float = 7.0) -> pd.DataFrame:
    """Two continuous float columns far from 0 against their spread (a lab value at 2,500 ±
    7, right-skewed, and one at 3,240 ± 30), correlated −0.6: each falls in one or two bins
    of the first histogram's octave [2048, 4096)."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 2)) @ np.linalg.cholesky([[1.0, -0.6], [-0.6, 1.0]]).T
    return pd.DataFrame({"lab": 2513.0 + spread * np.exp(0.6 * z[:, 0]),
                         "other": 3240.0 + 30.0 * z[:, 1]})


def test_a_narrow_concentrated_float_column_is_zoomed_at_eps_1(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A continuous float column whose released range is narrow (one octave far from 0) and
    whose first histogram puts most rows in one bin is zoomed at ε = 1: its synthetic
    quartiles land within a tenth of its interquartile range of the data's, and the columns'
    rank correlation (−0.6) comes back within 0.25 (measured −0.38 to −0.45 over noise seeds
    0-2; without the zoom the lab column spreads over a bin 85 wide, its quartiles 40 below
    the data's, and the correlation is −0.16 to −0.20). The ledger has the zoom, charged as
    planned."""
    n = 4000
    X = _shifted_table(n, 0)
    q = np.quantile(X["lab"], [0.25, 0.5, 0.75])
    iqr = q[2] - q[0]

    def fit() -> tuple[pd.DataFrame, pg.PrivateSynthesizer]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            syn = pg.PrivateSynthesizer(epsilon=EPS, delta=DELTA, random_state=0).fit(X)
            return syn.sample_table(n, random_state=1), syn

    out, syn = fit()
    got = np.quantile(out["lab"], [0.25, 0.5, 0.75])
    assert np.all(np.abs(got - q) < 0.1 * iqr), (got, q)
    rank = pd.concat([out["lab"].rank(), out["other"].rank()], axis=1).corr().iloc[0, 1]
    truth = pd.concat([X["lab"].rank(), X["other"].rank()], axis=1).corr().iloc[0, 1]
    assert abs(rank - truth) < 0.25, (rank, truth)
    zooms = [e for e in syn.ledger_ if e.step == "marginals/zoom"]
    assert len(zooms) == 1 and syn.plan_["marginals/zoom"].rho == pytest.approx(
        zooms[0].cost.rho, rel=1e-12)
    monkeypatch.setattr(marg, "NARROW_ZOOM", False)
    out, syn = fit()
    assert not any(e.step == "marginals/zoom" for e in syn.ledger_)
    got = np.quantile(out["lab"], [0.25, 0.5, 0.75])
    assert np.any(np.abs(got - q) > 0.5 * iqr)
    rank = pd.concat([out["lab"].rank(), out["other"].rank()], axis=1).corr().iloc[0, 1]
    assert abs(rank - truth) > 0.3


def test_a_narrow_spread_out_column_leaves_the_zoom_to_the_copula() -> None:
    """A narrow range whose first histogram is not concentrated (values spread over the whole
    octave) is not zoomed: nothing is released for it, and the zoom's share goes to the
    model's next release (here, d = 2, the dependence grid's coarse counts): the plan says so,
    every charge is as planned and they compose to the whole budget."""
    rng = np.random.default_rng(3)
    n = 4000
    a = rng.uniform(2100.0, 4000.0, n)
    X = pd.DataFrame({"a": a, "b": a / 100.0 + rng.normal(size=n)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        syn = pg.PrivateSynthesizer(epsilon=EPS, delta=DELTA, random_state=0).fit(X)
    assert not any(e.step.startswith("marginals/zoom") for e in syn.ledger_)
    assert "marginals/zoom" not in syn.plan_
    for e in syn.ledger_:
        if e.step.startswith("marginals"):
            assert syn.plan_[e.step].rho == pytest.approx(e.cost.rho, rel=1e-12)
    total = approx_to_zcdp(EPS, DELTA)
    assert sum(c.rho for c in syn.plan_.values()) == pytest.approx(total, rel=1e-9)
    assert sum(e.cost.rho for e in syn.ledger_) == pytest.approx(total, rel=1e-9)
