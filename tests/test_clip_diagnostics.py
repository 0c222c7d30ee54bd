"""Private clipping diagnostics (issue 17): the DP count of rows outside a fit's final clipping
ball, ``clipped_fraction_`` and :class:`~privgauss.warnings.ClippedDataWarning`."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import privgauss as pg
from privgauss.clipped_stats import Rows
from privgauss.estimators import gaussian as est_gaussian
from privgauss.gaussian import clip_diagnostics as cd
from privgauss.warnings import ClippedDataWarning, SeededNoiseWarning

pytestmark = pytest.mark.filterwarnings("ignore::privgauss.warnings.SeededNoiseWarning")

# a budget at which n = 2e4 .. 5e4 rows keep the planned (Gaussian) clip radii: at larger n·ρ
# the radii grow with the budget (coinpress.schedule.noise_matched_radius) and cover the tails
SMALL_RHO = 0.01


def _heavy(n: int, d: int, seed: int) -> np.ndarray:
    """t(3) rows with 1 % gross recording errors (values ×1000)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_t(3, size=(n, d))
    X[rng.choice(n, n // 100, replace=False)] *= 1000.0
    return X


def _coinpress(**kw):
    return pg.PrivateGaussian(method="coinpress", mean_bound=10.0, cov_bounds=(0.1, 10.0), **kw)


def _fit_warned(est, X, **kw) -> bool:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, **kw)
    return any(issubclass(w.category, ClippedDataWarning) for w in caught)


def test_count_entry_has_sensitivity_one_and_the_planned_share_zcdp():
    X = np.random.default_rng(0).normal(size=(3000, 3))
    g = _coinpress(rho=0.5, random_state=0).fit(X)
    last = g.ledger_[-1]
    assert last.step == "clipped count"
    assert last.mechanism == "count-discrete-gaussian"
    assert last.sensitivity == 1.0
    rho_c = 0.5 * cd.COUNT_SHARE
    assert last.cost.rho == pytest.approx(rho_c, rel=1e-12)
    # σ = Δ/√(2ρ): a count released with sensitivity 2, or from the whole ρ, fails this
    assert last.noise_scale == pytest.approx(1.0 / math.sqrt(2.0 * rho_c), rel=1e-12)
    # the plan still adds up to the budget, and the algorithm kept the rest
    assert math.fsum(e.cost.rho for e in g.ledger_) == pytest.approx(0.5, rel=1e-12)
    assert math.fsum(e.cost.rho for e in g.ledger_[:-1]) == pytest.approx(0.5 - rho_c, rel=1e-12)


def test_count_entry_pure_epsilon_is_a_laplace_count():
    X = np.random.default_rng(1).normal(size=(2000, 3))
    g = pg.PrivateGaussian(epsilon=1.0, method="clip", covariance="identity", mean_bound=5.0,
                           random_state=0).fit(X)
    last = g.ledger_[-1]
    assert last.mechanism == "count-discrete-laplace" and last.sensitivity == 1.0
    assert last.cost.epsilon == pytest.approx(cd.COUNT_SHARE, rel=1e-12)
    assert last.noise_scale == pytest.approx(1.0 / cd.COUNT_SHARE, rel=1e-12)
    assert math.fsum(e.cost.epsilon for e in g.ledger_) == pytest.approx(1.0, rel=1e-12)


def test_bound_free_method_takes_the_share_from_its_refinement():
    X = np.random.default_rng(2).normal(size=(4000, 3))
    g = pg.PrivateGaussian(epsilon=1.0, delta=1e-6, method="histogram", random_state=0).fit(X)
    last = g.ledger_[-1]
    assert last.step == "clipped count" and last.sensitivity == 1.0
    refinement = [e for e in g.ledger_ if isinstance(e.cost, pg.ZCDP)  # not the localisation's
                  and not e.mechanism.startswith("gaussian-stability-histograms")][:-1]
    rho_ref = math.fsum(e.cost.rho for e in refinement)
    share = cd.REFINEMENT_COUNT_SHARE
    assert last.cost.rho == pytest.approx(rho_ref * share / (1 - share), rel=1e-9)
    assert last.noise_scale == pytest.approx(1.0 / math.sqrt(2.0 * last.cost.rho), rel=1e-12)
    # what the fit charged is within its (ε, δ)
    acct = pg.Accountant(pg.ApproxDP(1.0, 1e-6))
    for e in g.ledger_:
        acct.spend(e.cost)  # raises PrivacyBudgetError if the plan overspent


def test_hypothesis_selection_clips_nothing_and_releases_no_count():
    X = np.random.default_rng(3).normal(size=(600, 1))
    g = pg.PrivateGaussian(epsilon=1.0, method="hypothesis-selection", covariance="identity",
                           mean_bound=2.0, random_state=0).fit(X)
    assert g.clipped_fraction_ is None
    assert all(e.step != "clipped count" for e in g.ledger_)


def test_clipped_count_changes_by_at_most_one_between_neighbours():
    """The count's sensitivity 1 under replace-one, including extreme-but-valid records."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(500, 3))
    A = rng.normal(size=(3, 3))
    shift, center, tau = rng.normal(size=3), rng.normal(size=3) * 0.1, 2.5
    base = Rows(X).clipped_count(A, shift, center, tau)
    W = (X - shift) @ A.T - center
    assert base == int(np.sum(np.linalg.norm(W, axis=1) > tau))  # the definition
    for j, row in [(0, np.full(3, 1e150)), (7, np.zeros(3)), (9, -np.eye(1, 3)[0] * 1e150),
                   (11, shift)]:
        Xn = X.copy()
        Xn[j] = row
        assert abs(Rows(Xn).clipped_count(A, shift, center, tau) - base) <= 1


def test_count_release_audit_flags_a_doubled_budget():
    """An audit of the release itself: counts c and c + 1 under the count's noise; the
    empirical privacy loss of the event "noisy ≥ c + 1" stays below the stated ε for the
    planned scale, and exceeds it for a scale computed from twice the budget (a wrong
    sensitivity or share)."""
    eps = 0.5
    b = pg.PureDP(eps)
    runs = 20000

    def loss(scale_budget: pg.PureDP) -> float:
        hits = []
        for c in (0, 1):
            src = pg.noise.as_noise(np.random.default_rng(10 + c))
            acct = pg.Accountant(scale_budget)
            out = pg.mechanisms.private_count(np.full(runs, c), scale_budget, accountant=acct,
                                              noise=src)
            hits.append(np.mean(out >= 1))
        return math.log(hits[1] / hits[0])

    assert loss(b) < eps * 1.1
    assert loss(pg.PureDP(2 * eps)) > eps * 1.3


def test_false_alarms_on_gaussian_data_are_rare():
    """≤ 1 warning in 40 fits. Analytically (cd.alarm_fraction): on Gaussian data the final
    covariance ball cuts a fraction of mean ≤ p = 1 % when the frame whitens exactly; the
    threshold adds max(p + 0.5 %, 4 binomial sd) — an exceedance of mean + 4 sd has probability
    < 1e-3 — and the 1 − 1e-3 quantile of the count's noise, so a false alarm has probability
    ≈ 2e-3 per fit; 2 or more in 40 fits has probability < 0.4 %."""
    warned = 0
    for s in range(40):
        X = np.random.default_rng(100 + s).normal(size=(1500, 3))
        g = _coinpress(rho=0.5, random_state=s)
        warned += _fit_warned(g, X)
        assert 0.0 <= g.clipped_fraction_ < 0.03
    assert warned <= 1


def test_heavy_tails_and_gross_errors_warn_with_the_true_fraction(monkeypatch):
    exact = {}
    original = est_gaussian.release_clipped_count

    def spy(ball, budget, **kw):
        W = ball.rows.X if ball.A is None else (ball.rows.X - ball.shift) @ ball.A.T
        exact["outside"] = int(np.sum(np.linalg.norm(W - ball.center, axis=1) > ball.tau))
        exact["n"] = ball.rows.n
        return original(ball, budget, **kw)

    monkeypatch.setattr(est_gaussian, "release_clipped_count", spy)
    X = _heavy(20000, 5, 0)
    g = pg.PrivateGaussian(rho=SMALL_RHO, method="coinpress", mean_bound=10.0,
                           cov_bounds=(0.01, 1e8), random_state=0)
    assert _fit_warned(g, X)
    truth = exact["outside"] / exact["n"]
    sigma = g.ledger_[-1].noise_scale / exact["n"]
    assert truth > 0.03  # far above the 1 % of Gaussian rows
    assert abs(g.clipped_fraction_ - truth) <= 4 * sigma
    assert g.clipped_fraction_ > g.clipped_fraction_alarm_
    d = g.to_dict()
    assert d["clipped_fraction"] == g.clipped_fraction_
    assert pg.io.from_dict(d).clipped_fraction_ == g.clipped_fraction_


def test_heavy_tails_warn_with_the_default_bound_free_method():
    g = pg.PrivateGaussian(epsilon=1.0, delta=1e-6, random_state=1)
    assert _fit_warned(g, _heavy(20000, 5, 1))
    assert g.method_ == "histogram" and g.clipped_fraction_ > 0.04


@pytest.mark.filterwarnings("ignore::privgauss.warnings.ClippedDataWarning")
def test_clip_scale_covers_more_rows_with_more_noise(monkeypatch):
    # the planned radii alone: at this budget the steps' DP radius searches
    # (gaussian/coinpress/radius_search.py) would read the t(3) radius off the data whatever the
    # multiplier (both fits then leave ~5 % outside), hiding the knob under test
    from privgauss.gaussian.coinpress import cov_plan as cp_cov
    from privgauss.gaussian.coinpress import mean_plan as cp_mean
    from privgauss.gaussian.coinpress import plan as cp_plan
    from privgauss.gaussian.coinpress import schedule as cp_schedule

    monkeypatch.setattr(cp_schedule, "SEARCH", False)
    for f in (cp_plan.practical_plan, cp_mean.mean_schedule, cp_cov.covariance_schedule):
        f.cache_clear()
    X = np.random.default_rng(5).standard_t(3, size=(20000, 4))
    fits = {k: _coinpress(rho=SMALL_RHO, random_state=0, clip_scale=k).fit(X)
            for k in (1.0, 2.0)}
    # the wider fit leaves fewer rows outside its 99 % ellipsoid
    assert fits[2.0].clipped_fraction_ < fits[1.0].clipped_fraction_ - 0.01
    cov_steps = {k: [e for e in f.ledger_ if e.mechanism == "symmetric-gaussian"]
                 for k, f in fits.items()}
    # the same plan, radii doubled: the Frobenius sensitivity √2τ²/n grows 4×
    for a, b in zip(cov_steps[1.0], cov_steps[2.0], strict=True):
        assert b.sensitivity == pytest.approx(4.0 * a.sensitivity, rel=1e-12)
    # t(3) has variance 3: the wider balls describe more of it
    var = {k: float(np.trace(f.covariance_)) / 4 for k, f in fits.items()}
    assert var[1.0] < var[2.0] < 3.0
    for f in (cp_plan.practical_plan, cp_mean.mean_schedule, cp_cov.covariance_schedule):
        f.cache_clear()  # no plan without searches outlives the test


def test_warning_is_a_privacy_warning_and_is_documented():
    assert issubclass(ClippedDataWarning, pg.PrivacyWarning)
    assert not issubclass(ClippedDataWarning, SeededNoiseWarning)
    for part in ("**When**", "**Why**", "**What to do**", "clip_scale"):
        assert part in ClippedDataWarning.__doc__


def test_cli_prints_the_clipped_fraction_and_warns_once(tmp_path):
    from click.testing import CliRunner

    from privgauss.cli import main

    path = tmp_path / "heavy.npy"
    np.save(path, _heavy(20000, 3, 2))
    out = tmp_path / "model.json"
    res = CliRunner().invoke(main, ["fit-gaussian", str(path), "--rho", str(SMALL_RHO),
                                    "--mean-bound",
                                    "10", "--cov-bounds", "0.01", "1e8", "--seed", "0",
                                    "--out", str(out)])
    assert res.exit_code == 0, res.output
    err = res.stderr
    assert "clipped fraction" in res.stdout and "(DP)" in res.stdout
    assert err.count("lie outside the fit's final clipping ball") == 1
    assert "--clip-scale" in err and "clip_scale" not in err
    import json

    assert json.loads(out.read_text())["clipped_fraction"] > 0.03


@pytest.mark.filterwarnings("ignore::privgauss.warnings.ClippedDataWarning")
def test_fraction_tracks_each_defect_below_and_above_the_alarm():
    """Real-data defects (datasets.with_defect, make_heavy_tailed): 1 % gross errors alone
    raise the DP fraction by about 1 % (the fit leaves those rows out: below the alarm, no
    warning), multivariate t(3) tails by more (warned)."""
    X, _, _ = pg.datasets.make_gaussian(50000, 5, condition_number=100, random_state=0)
    kw = dict(rho=SMALL_RHO, mean_bound=10.0, cov_bounds=(0.01, 1e8), random_state=0)
    clean = pg.PrivateGaussian(method="coinpress", **kw).fit(X)
    gross = pg.PrivateGaussian(method="coinpress", **kw).fit(
        pg.datasets.with_defect(X, "gross", random_state=0))
    T, _ = pg.datasets.make_heavy_tailed(50000, 5, condition_number=100, random_state=0)
    heavy = pg.PrivateGaussian(method="coinpress", **kw)
    assert _fit_warned(heavy, T)
    assert clean.clipped_fraction_ < clean.clipped_fraction_alarm_
    assert 0.006 < gross.clipped_fraction_ - clean.clipped_fraction_ < 0.014
    assert gross.clipped_fraction_ < gross.clipped_fraction_alarm_
    # (the radius searches grow the t(3) fit's radii past the plan: 4.6 % left outside where
    # the planned radii left 10 %, still above its alarm and over twice the gross errors')
    assert heavy.clipped_fraction_ > 2 * gross.clipped_fraction_


@pytest.mark.parametrize(("fraction", "fails"), [(0.9, True), (0.51, True), (0.4, False)])
def test_a_fit_whose_ball_missed_most_rows_is_a_failure(monkeypatch, fraction, fails):
    """A DP clipped fraction above one half ends in EstimationFailed (with the budget spent and
    BudgetSpentWarning), never in a model returned with a warning."""
    original = est_gaussian.release_clipped_count

    def fake(ball, budget, **kw):
        original(ball, budget, **kw)  # the release is charged as usual
        return fraction * ball.rows.n

    monkeypatch.setattr(est_gaussian, "release_clipped_count", fake)
    X = np.random.default_rng(0).normal(size=(3000, 3))
    g = _coinpress(rho=0.5, random_state=0)
    if fails:
        with pytest.warns(pg.warnings.BudgetSpentWarning), pytest.raises(
                pg.EstimationFailed, match="missed the data"):
            g.fit(X)
        assert not hasattr(g, "mean_")
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClippedDataWarning)
            assert g.fit(X).clipped_fraction_ == pytest.approx(fraction)
