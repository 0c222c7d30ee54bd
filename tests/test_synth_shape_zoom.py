"""The zoom's *shaped* bins of continuous float columns below a fine zoom (issue 28;
``synthesis.marginals.SHAPE_ZOOM``, :func:`~privgauss.synthesis.marginals._shaped_masses`): a
column piled at one end of a released octave gets its in-bin shape back at ε = 1, the plan
equals the ledger, and an audit sees the release's sensitivity."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from _helpers import zoom_release

import privgauss.synthesis.marginals as marg
from privgauss.audit import audit_mechanism
from privgauss.mechanisms import Release
from privgauss.noise import NoiseSource
from privgauss.privacy import ZCDP, Accountant, approx_to_zcdp, zcdp_to_epsilon
from privgauss.synthesis.marginals import MarginalPlan, release_marginals

EPS, DELTA = 1.0, 1e-6


def test_shaped_masses_follow_a_rising_density_and_leave_noise_even() -> None:
    """A bin whose density rises across it: the shaped sub-bin masses are nearer the truth
    than the even spread; a flat bin's noise leaves it whole (None) in most draws; as the
    noise vanishes the masses are the sub-counts."""
    rng = np.random.default_rng(0)
    widths = np.full(10, 0.05)
    true = np.linspace(100.0, 400.0, 10)
    err_shaped, err_even, whole = [], [], 0
    for _ in range(50):
        sub = true + rng.normal(0.0, 66.0, 10)
        mass = marg._shaped_masses(true.sum(), 22.0, sub, 66.0, widths)
        assert mass is not None
        err_shaped.append(np.abs(mass - true).sum())
        err_even.append(np.abs(np.full(10, true.mean()) - true).sum())
        flat = marg._shaped_masses(2500.0, 22.0, 250.0 + rng.normal(0.0, 66.0, 10), 66.0,
                                   widths)
        whole += flat is None
    assert np.mean(err_shaped) < 0.6 * np.mean(err_even)
    assert whole >= 25
    exact = marg._shaped_masses(true.sum(), 1e-9, true, 1e-9, widths)
    assert exact is not None and np.allclose(exact, true)
    # levels (two atoms in the bin, at the tops of their sub-bins): the linear density does
    # not put each atom's mass across its sub-bin, it tilts the bin by the levels' balance
    levels = np.zeros(6)
    levels[[1, 4]] = [264.0, 311.0]
    mass = marg._shaped_masses(575.0, 22.0, levels, 1e-6, np.full(6, 1 / 36))
    assert mass is not None and mass.min() > 0.7 * mass.max()
    assert mass[-1] > mass[0]
    assert marg.shape_split(2270.0, 66.0, 64) == 10
    assert marg.shape_split(30.0, 66.0, 64) == 1 and marg.shape_split(1e9, 1.0, 64) == 64


def _piled(n: int, seed: int) -> np.ndarray:
    """A day index (integer, 1-365: the zoom is planned for it) and a log-emission-like
    column: 63 % spread over [4, 8), 37 % piled in [8, 8.6] rising towards 8.4 — the bottom
    of the released octave [8, 16)."""
    rng = np.random.default_rng(seed)
    low = rng.uniform(4.2, 8.0, int(0.63 * n))
    high = 8.0 + 0.6 * rng.beta(3.0, 1.5, n - low.size)
    return np.column_stack([rng.integers(1, 366, n).astype(float), np.r_[low, high]])


def _tv(x: np.ndarray, m: marg.Marginal) -> float:
    edges = np.quantile(x, np.linspace(0, 1, 21))
    u = (np.arange(20000) + 0.5) / 20000
    p = np.histogram(x, edges)[0] / len(x)
    q = np.histogram(np.clip(m.from_uniform(u), edges[0], edges[-1]), edges)[0] / 20000
    return 0.5 * float(np.abs(p - q).sum())


def test_a_column_piled_at_an_octaves_edge_gets_its_shape_back(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """At ε = 1 the piled column's marginal is nearer its rows with the shaped zoom than
    without (the zoom is planned for the day index either way). The zoom is charged its
    planned ρ with sensitivity √(2(1 + κ²)), κ² = SHAPE_SHARE (one zoomed, one shaped
    column: a record moves between two sub-bins of each, the shaped one's counts times κ),
    √2 without."""
    n = 6000
    rho = approx_to_zcdp(EPS, DELTA)
    plan = MarginalPlan(["integer", "float"], [None, None], marg.n_fine_bins(n, 0.4 * rho, 2),
                        0.1 * rho, 0.4 * rho, 0.0, marg.n_continuous_bins(n, 0.4 * rho, 2),
                        0.05 * rho)
    tvs: dict[bool, list[float]] = {True: [], False: []}
    for seed in range(4):
        x = _piled(n, seed)
        for on in tvs:
            monkeypatch.setattr(marg, "SHAPE_ZOOM", on)
            acct = Accountant(ZCDP(rho))
            m = release_marginals(x, plan, release=Release(acct, NoiseSource(seed)))[1]
            tvs[on].append(_tv(x[:, 1], m))
            (z,) = [e for e in acct.ledger if e.step.endswith("zoom")]
            assert z.cost.rho == pytest.approx(0.05 * rho)
            assert z.sensitivity == pytest.approx(
                math.sqrt(2 * (1 + marg.SHAPE_SHARE)) if on else math.sqrt(2))
    assert np.mean(tvs[True]) < 0.7 * np.mean(tvs[False]), tvs


def test_the_shaped_zoom_vanishes_into_the_fine_zoom_at_a_huge_budget() -> None:
    """Consistency: at a huge budget the zoom is fine (levels cut, two rounds), and a smooth
    column's marginal is its rows' (TV on quantile bins at the sampling floor of the levels)."""
    n = 6000
    x = _piled(n, 7)
    rho = 1e6
    plan = MarginalPlan(["integer", "float"], [None, None], marg.n_fine_bins(n, 0.4 * rho, 2),
                        0.1 * rho, 0.4 * rho, 0.0, marg.n_continuous_bins(n, 0.4 * rho, 2),
                        0.05 * rho)
    with warnings.catch_warnings(), pytest.MonkeyPatch.context() as mp:
        warnings.simplefilter("ignore")
        mp.setattr(marg, "SHAPE_ZOOM", True)
        m = release_marginals(x, plan, release=Release(Accountant(ZCDP(rho)),
                                                       NoiseSource(0)))[1]
    assert marg.fine_zoom(n, 2, 0.05 * rho)
    assert _tv(x[:, 1], m) < 0.01


# ------------------------------------------------------------------------------- privacy

AUDIT_RHO = 0.125
AUDIT_DELTA = 1e-3


def _shape_mechanism(data: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """An integer column (the zoom is planned for it) and a continuous float column, both on
    stated ranges (first bins 8 wide), the histograms and the zoom: its released sub-counts,
    the float column's shaped at weight κ."""
    plan = MarginalPlan(["integer", "float"], [(0.0, 64.0), (0.0, 64.0)], 8, 0.0, AUDIT_RHO,
                        rho_zoom=AUDIT_RHO)
    return zoom_release(data, plan, 2 * AUDIT_RHO, rng, "zoom")


def _shape_pair() -> tuple[np.ndarray, np.ndarray]:
    """Float values: forty records at 9 and forty at 12.5 — one first-level bin [8, 16), split
    into a few sub-bins; in D′ one moves from 9 to 12.5: the first histogram is unchanged,
    the zoom's shaped counts move by κ√2, the float column's share of the sensitivity (the
    integer column, 3 for all, does not move)."""
    base = np.column_stack([np.full(80, 3.0), np.r_[np.full(40, 9.0), np.full(40, 12.5)]])
    moved = base.copy()
    moved[0, 1] = 12.5
    return base, moved


def test_shaped_zoom_audit_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(marg, "ZOOM_BINS", 1)
    monkeypatch.setattr(marg, "SHAPE_ZOOM", True)
    res = audit_mechanism(_shape_mechanism, *_shape_pair(),
                          epsilon=zcdp_to_epsilon(2 * AUDIT_RHO, AUDIT_DELTA),
                          delta=AUDIT_DELTA, n_runs=3000)
    assert res.passed, str(res)


def test_shaped_zoom_with_an_eighth_of_the_sensitivity_is_flagged(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit has teeth (the float column's move is κ√2 of the sensitivity: a quarter of
    it is a real violation this audit's power does not reach, an eighth is)."""
    monkeypatch.setattr(marg, "ZOOM_BINS", 1)
    monkeypatch.setattr(marg, "SHAPE_ZOOM", True)
    monkeypatch.setattr(marg, "histogram_l2", lambda: math.sqrt(2.0) / 8)
    res = audit_mechanism(_shape_mechanism, *_shape_pair(),
                          epsilon=zcdp_to_epsilon(2 * AUDIT_RHO, AUDIT_DELTA),
                          delta=AUDIT_DELTA, n_runs=3000)
    assert not res.passed, str(res)


def test_the_shaped_counts_are_released_at_weight_kappa(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sensitivity √(2(m_d + κ² m_f)) holds because the shaped column's counts enter the
    release times κ: at a vanishing noise its released sub-counts are κ times its counts
    (summing to κ times its records in the split bin), the integer column's are its counts."""
    monkeypatch.setattr(marg, "ZOOM_BINS", 1)
    monkeypatch.setattr(marg, "SHAPE_ZOOM", True)
    rho = 1000.0  # noise ~0.05 a count, and a zoom below a fine one (n/σ < FINE_ZOOM_AT)
    assert not marg.fine_zoom(80, 2, rho)
    plan = MarginalPlan(["integer", "float"], [(0.0, 64.0), (0.0, 64.0)], 8, 0.0, rho,
                        rho_zoom=rho)
    released = zoom_release(_shape_pair()[0], plan, 2 * rho, np.random.default_rng(0), "zoom")
    kappa = math.sqrt(marg.SHAPE_SHARE)
    rows = released.reshape(2, -1)
    assert rows[0].sum() == pytest.approx(80.0, abs=2.0)  # the integer's 80 records at 3
    assert rows[1].sum() == pytest.approx(kappa * 80.0, abs=2.0)
