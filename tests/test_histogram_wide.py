"""Wide axes of the bound-free route (issue 27): a column whose values spread over orders of
magnitude has pair differences spread over many octaves, so its scale histogram may release no
bin. Such an axis used to fail after spending (``localise-scale``: SumHes 4 of 20 seeds,
Snmesp 2, MedExp 1 at ε = 1); now a ρ-zCDP octave release of its pair differences
(:func:`~privgauss.gaussian.histogram_ties.octave_brackets`) brackets its scale. Checked
here: its sensitivity by brute force, its charge and the plan's branch, what it reads, that
such columns fit, and that fits without a wide axis are bit-identical to the route without
the release.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from _helpers import correlated_gaussian

import privgauss as pg
from privgauss.gaussian import histogram as hg
from privgauss.gaussian import histogram_ties as ht
from privgauss.gaussian.histogram import histogram_gaussian, localisation_plan
from privgauss.gaussian.histogram_budget import TIE_SHARE, WIDE_SHARE
from privgauss.mechanisms import Release
from privgauss.privacy import ZCDP, Accountant, ApproxDP, BudgetPlan, ledger_mismatch

DELTA = 1e-6


def _wide(n: int, seed: int) -> np.ndarray:
    """Values from 1e3 to 2e8, uniform in log10 (no two pair differences' octaves share more
    than ~10 % of the pairs: below the scale threshold, half the Gaussian's 32 %)."""
    return 10 ** np.random.default_rng(seed + 5000).uniform(3.0, 8.3, size=n)


def _zero_inflated(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed + 1000)
    x = np.exp(rng.normal(0.0, 1.3, size=n))
    x[rng.random(n) < 0.72] = 0.0
    return x


def _steps(ledger: list[object], suffix: str) -> list[object]:
    return [e for e in ledger if e.step.endswith(suffix)]  # type: ignore[attr-defined]


def _without_wide(monkeypatch: pytest.MonkeyPatch) -> None:
    """The route as it was before the wide release: an axis that releases no scale bin
    fails."""
    monkeypatch.setattr(hg, "WIDE_SHARE", 0.0)


# ------------------------------------------------------------------------ the release itself


@pytest.mark.parametrize("h", [1, 3])
def test_octave_release_sensitivity_by_brute_force(h: int) -> None:
    """Replacing one pair difference (what replacing one record does: a record is in at most
    one pair) moves the released counts by at most the L2 sensitivity the release is
    calibrated to, √(2h) — and by exactly that when the pair's octave changes on every axis
    (tight), including to 0 and to an overflowing difference."""
    rng = np.random.default_rng(h)
    Y = np.exp(rng.normal(0.0, 6.0, size=(200, h))) * rng.choice([-1.0, 1.0], size=(200, h))
    base = ht._octave_counts(Y, np.arange(h), np.zeros(h))[0]
    worst = 0.0
    for new in (np.zeros(h), np.full(h, np.inf), rng.normal(size=h) * 1e-300,
                Y[0] * 1e9, Y[1]):
        for i in range(5):
            Z = Y.copy()
            Z[i] = new
            moved = ht._octave_counts(Z, np.arange(h), np.zeros(h))[0] - base
            worst = max(worst, float(np.sqrt(np.sum(moved**2))))
    assert worst == pytest.approx(ht._sensitivity(h)) == pytest.approx(math.sqrt(2 * h))
    assert ht.noise_sd(h, 0.5) == pytest.approx(math.sqrt(2 * h))  # Δ/√(2ρ)


def test_octave_brackets_charge_their_rho_with_that_sensitivity(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The release is one Gaussian mechanism at ρ with sensitivity √(2h) (a smaller one would
    be caught here), charged before its noise."""
    seen: list[tuple[float, object]] = []
    real = ht.gaussian_mechanism

    def spy(values, sensitivity, budget, **kw):  # type: ignore[no-untyped-def]
        seen.append((sensitivity, budget))
        return real(values, sensitivity, budget, **kw)

    monkeypatch.setattr(ht, "gaussian_mechanism", spy)
    acct = Accountant(ZCDP(1.0))
    Y = np.random.default_rng(0).normal(size=(500, 2))
    ht.octave_brackets(Y, 0.25, release=Release.of(acct, 0, "w"))
    assert seen == [(pytest.approx(2.0), ZCDP(0.25))]
    assert [(e.step, e.cost) for e in acct.ledger] == [("w", ZCDP(0.25))]


def test_octave_brackets_bracket_the_scale() -> None:
    """What the release reads (post-processing): at a large ρ every octave is read, the
    bracket holds σ = RMS(Y)/√2 and its upper end bounds every |Y|/√2; at the ρ a wide
    column gets at ε = 1 (2 % of the refinement's ρ at n = 5,000) coarser bins are read
    and the bracket holds σ up to a factor 2 above it; a column of zeros and a column that
    overflows read nothing."""
    rng = np.random.default_rng(3)
    m = 1300
    Y = np.column_stack([10 ** rng.uniform(3, 8.3, m) - 10 ** rng.uniform(3, 8.3, m),
                         rng.normal(size=m) * 1e-200, rng.normal(size=m) * 1e200])
    top = np.max(np.abs(Y), axis=0)
    sigma = np.sqrt(np.mean((Y / top) ** 2, axis=0) / 2.0) * top
    got, spent = ht.octave_brackets(Y, 1e3, release=Release.of(Accountant(ZCDP(1e4)), 0, "w"))
    assert spent == 1e3
    for k in range(3):
        b = got[k]
        assert b is not None
        lo, mid, hi = b
        assert lo < sigma[k] < hi and lo < mid < hi
        assert hi >= np.max(np.abs(Y[:, k])) / math.sqrt(2)
        assert hi / lo < 2.0**10  # a bracket, not the float range
    rho = WIDE_SHARE * 0.02
    Yw = np.column_stack([10 ** rng.uniform(3, 8.3, 2500) - 10 ** rng.uniform(3, 8.3, 2500)])
    sw = float(np.sqrt(np.mean(Yw**2) / 2.0))
    for seed in range(5):
        (b,), _ = ht.octave_brackets(Yw, rho, release=Release.of(Accountant(ZCDP(1.0)), seed,
                                                                  "w"))
        assert b is not None
        # σ lies below 2·hi: octaves each too thin to be read may lie above the read ones
        # (here octave 26 of 2^27.6 drew −4 noise sds at seed 4: hi = 0.9 σ)
        assert b[0] < sw < 2.0 * b[2] and b[2] / b[0] < 2.0**12
    none = np.column_stack([np.zeros(m), np.where(np.arange(m) % 2, np.inf, -np.inf)])
    assert ht.octave_brackets(none, 1e3, release=Release.of(Accountant(ZCDP(1e4)), 0,
                                                              "w"))[0] == [None, None]


# ------------------------------------------------------------------------ the fit


def test_a_column_over_five_orders_of_magnitude_fits_at_eps_1(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """n = 5,000, d = 4, ε = 1: the wide column's scale histogram releases no bin at most
    seeds. Without the wide release those fits fail after spending (and only those: the
    decision is the scale release's, the same noise); with it every fit returns: the other
    columns as accurate as ever, the wide column located within its range, with a positive
    variance at most its np.var's (its heavy top is clipped), and every score finite. (At
    n = 2,600 such a column — 17.6 octaves, ~10 % of the pairs per octave — still failed in
    the wide release at 3 of 20 seeds with 2 % of the refinement's ρ.)"""
    n = 5000
    widened = []
    for seed in range(6):
        X = np.column_stack([correlated_gaussian(n, 3, seed), _wide(n, seed)])
        g = pg.PrivateGaussian(epsilon=1.0, delta=DELTA, random_state=seed).fit(X)
        widened.append(len(_steps(g.ledger_, "-wide")) == 1)
        ratio = np.diag(g.covariance_) / np.diag(np.cov(X.T))
        assert np.all(ratio[:3] > 0.7) and np.all(ratio[:3] < 1.4)
        assert 1e-3 < ratio[3] < 1.2
        assert 1e3 < g.mean_[3] < 2e8
        assert np.isfinite(g.score_samples(X[:200])).all()
    assert sum(widened) >= 4
    _without_wide(monkeypatch)
    for seed in range(6):
        X = np.column_stack([correlated_gaussian(n, 3, seed), _wide(n, seed)])
        est = pg.PrivateGaussian(epsilon=1.0, delta=DELTA, random_state=seed)
        if not widened[seed]:
            est.fit(X)
            continue
        with pytest.raises(pg.EstimationFailed, match="no scale bin"), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X)


def test_the_wide_release_is_charged_and_the_total_unchanged() -> None:
    """One zCDP entry of WIDE_SHARE of the refinement's planned ρ, between the scale and the
    location histograms; with a tied column whose other values are rare as well, the ties'
    release still gets its TIE_SHARE of it; the zCDP entries still sum to the plan's ρ_all
    and the fit spends exactly (ε, δ)."""
    n = 4000
    X = np.column_stack([correlated_gaussian(n, 3, 1), _wide(n, 1), _zero_inflated(n, 1)])
    acct = Accountant(ApproxDP(1.0, DELTA))
    histogram_gaussian(X, 1.0, DELTA, release=Release.of(acct, 1))
    steps = [e.step for e in acct.ledger]
    assert steps.index("localise-scale-axes") < steps.index("localise-wide") \
        < steps.index("localise-axes") < steps.index("localise-ties")
    s_b, l_b, rho_all = localisation_plan(n, 5, 1.0, DELTA)
    assert s_b is not None
    rho_ref = rho_all - s_b.rho - l_b.rho
    (wide,) = _steps(acct.ledger, "-wide")
    (ties,) = _steps(acct.ledger, "-ties")
    assert isinstance(wide.cost, ZCDP) and isinstance(ties.cost, ZCDP)  # type: ignore[attr-defined]
    assert wide.cost.rho == pytest.approx(WIDE_SHARE * rho_ref)  # type: ignore[attr-defined]
    assert ties.cost.rho == pytest.approx(TIE_SHARE * rho_ref)  # type: ignore[attr-defined]
    zc = [e.cost.rho for e in acct.ledger if isinstance(e.cost, ZCDP)]
    assert sum(zc) == pytest.approx(rho_all, rel=1e-9)
    assert acct.spent is not None
    assert acct.spent.epsilon == pytest.approx(1.0) and acct.spent.delta == pytest.approx(DELTA)


@pytest.mark.parametrize("tied", [False, True])
def test_wide_axes_follow_the_histogram_plans_branch(tied: bool) -> None:
    """The estimator's ledger follows its plan's wide branch (and the wide-and-ties branch
    with a rare-valued tied column), not its main line nor the ties-only branch."""
    n = 4000
    cols = [correlated_gaussian(n, 2, 2), _wide(n, 2)] + ([_zero_inflated(n, 2)] if tied else [])
    est = pg.PrivateGaussian(method="histogram", epsilon=1.0, delta=DELTA, random_state=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(np.column_stack(cols))
    steps = [e.step for e in est.ledger_]
    assert "localise-wide" in steps and ("localise-ties" in steps) == tied
    plan = est.budget_plan_
    assert ledger_mismatch(plan, est.ledger_) is None
    main = BudgetPlan.of(plan.total, dict(plan.parts), groups=plan.groups)
    assert ledger_mismatch(main, est.ledger_) is not None
    # the branches: wide × ties, each not run / run / run with its retry (the main line
    # neither): (0, t), (0, t+r), (w, 0), (w, t), (w, t+r), (w+r, 0), ...
    ties_only, _, wide_only, both = plan.branches[:4]
    assert (ledger_mismatch(ties_only, est.ledger_) is None) is False
    assert (ledger_mismatch(wide_only, est.ledger_) is None) is (not tied)
    assert (ledger_mismatch(both, est.ledger_) is None) is tied


@pytest.mark.parametrize("rows", ["gaussian", "tied", "sorted"])
def test_fits_without_a_wide_axis_are_bit_identical(
        rows: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The release changes only axes whose scale histogram released no bin: any other fit —
    Gaussian rows, a rare-valued tied column (the ties' release at its full share), sorted
    rows with a flag — is bit for bit the fit of the route without it, with the same
    ledger."""
    n = 5000
    X = correlated_gaussian(n, 4, 7)
    if rows == "tied":
        X = np.column_stack([X, _zero_inflated(n, 7)])
    if rows == "sorted":
        X = np.column_stack([X[np.argsort(X[:, 0])], np.arange(n) % 17 == 0])

    def fit() -> tuple[np.ndarray, np.ndarray, list[tuple[str, object]]]:
        acct = Accountant(ApproxDP(1.0, DELTA))
        mean, cov = histogram_gaussian(X, 1.0, DELTA, release=Release.of(acct, 11))
        return mean, cov, [(e.step, e.cost) for e in acct.ledger]

    m1, c1, l1 = fit()
    assert not [s for s, _ in l1 if s.endswith("-wide")]
    assert any(s.endswith("-ties") for s, _ in l1) == (rows == "tied")
    _without_wide(monkeypatch)
    m0, c0, l0 = fit()
    assert np.array_equal(m0, m1) and np.array_equal(c0, c1) and l0 == l1


def test_dask_rows_read_the_same_wide_brackets() -> None:
    """The wide release reads the same pair differences from dask rows (streamed into memory
    once) as from rows in memory: the same histograms, brackets and ledger; the bracket is
    the read upper end with a top bin's width below it."""
    da = pytest.importorskip("dask.array")
    from privgauss.gaussian.histogram import budget_split, localise

    n = 5000
    X = np.column_stack([correlated_gaussian(n, 2, 4), _wide(n, 4)])
    s_b, l_b, rho_ref = budget_split(n, 3, ApproxDP(1.0, DELTA), False, "practical")
    out = []
    for rows in (X, da.from_array(X, chunks=(1001, 3))):
        acct = Accountant(ApproxDP(1.0, DELTA))
        loc = localise(rows, s_b, l_b, release=Release.of(acct, 5), tie_rho=0.0,
                       wide_rho=WIDE_SHARE * rho_ref)
        out.append((loc, [(e.step, e.cost) for e in acct.ledger]))
    (a, la), (b, lb) = out
    assert a.wide == b.wide == (2,) and la == lb
    assert a.wide_rho == pytest.approx(WIDE_SHARE * rho_ref)
    for f in ("scale", "scale_lo", "scale_hi", "center"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f))
    # the refinement's prior on the wide axis: twice the read upper end (a power of two)
    # and below it a bracket as wide as a top bin's
    from privgauss.gaussian.histogram_reading import HI_RATIO, LO_RATIO

    hi = float(a.scale_hi[2])
    assert math.frexp(hi)[0] == 0.5 and hi > float(np.median(np.abs(X[:, 2])))
    assert a.scale_hi[2] / a.scale_lo[2] == pytest.approx(HI_RATIO / LO_RATIO, rel=1e-12)


def test_the_wide_retry_releases_the_unread_columns_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``octave_brackets`` with a retry: the first release covers both columns (sensitivity
    √(2·2)) and brackets the narrow one; the column over ten orders of magnitude, not read
    at this ρ, gets a second release alone (√2) at the retry's ρ, its own ledger step, and is
    bracketed from both (its σ inside the bracket up to the usual factor 2 at the top)."""
    seen: list[tuple[float, object, int]] = []
    real = ht.gaussian_mechanism

    def spy(values, sensitivity, budget, **kw):  # type: ignore[no-untyped-def]
        seen.append((sensitivity, budget, np.asarray(values).shape[0]))
        return real(values, sensitivity, budget, **kw)

    monkeypatch.setattr(ht, "gaussian_mechanism", spy)
    rng = np.random.default_rng(5)
    m = 3000
    Y = np.column_stack([rng.normal(size=m),
                         rng.choice([-1.0, 1.0], m) * 10 ** rng.uniform(-2, 8, m)])
    acct = Accountant(ZCDP(1.0))
    first = Release.of(acct, 0, "w")
    got, spent = ht.octave_brackets(Y, 1e-4, release=first, retry_rho=5e-3,
                                    retry_release=Release(acct, first.noise, "w-retry"))
    assert seen == [(pytest.approx(2.0), ZCDP(1e-4), 2),
                    (pytest.approx(math.sqrt(2.0)), ZCDP(5e-3), 1)]
    assert [e.step for e in acct.ledger] == ["w", "w-retry"] and spent == pytest.approx(5.1e-3)
    sigma = float(np.sqrt(np.mean(Y[:, 1] ** 2) / 2.0))
    b = got[1]
    assert b is not None and b[0] < sigma < 2.0 * b[2]
    plain, _ = ht.octave_brackets(Y, 1e-4, release=Release.of(Accountant(ZCDP(1.0)), 0, "w"))
    assert plain[0] == got[0] and plain[1] is None


def test_a_lone_far_read_does_not_set_a_wide_axis_top(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reading of a wide axis's octave counts (post-processing): a noise spike 48 octaves
    above the rows' octaves — below the strict threshold, above the 1 % one at some level —
    raised the bracket's top to 2^49 (generated family 1341, seed 1: an sd of 714 read as
    ~1e14, and em's diagonal frame fitted 110 nat/row below one Gaussian). Far from the
    fullest read bin a bin needs the strict threshold; the rows' own bins are read as before."""
    sd = 23.1
    row = np.zeros(ht.N_KEYS)
    for octave, count in ((-6, 121), (-5, 182), (-4, 172), (-3, 277), (-2, 241), (-1, 209),
                          (0, 93), (48, 130), (181, 78)):
        row[1 + octave - ht._MIN_OCTAVE] = count
    got = ht._wide_bracket(row, sd, 1, 1400)
    assert got is not None and got[2] == 1.0  # the top of octave −1 (octave 0: 93 < 5.2 sd)
    monkeypatch.setattr(ht, "WIDE_FAR", False)
    far = ht._wide_bracket(row, sd, 1, 1400)
    assert far is not None and far[2] >= 2.0**49
    # a real far cluster clears the strict threshold and still sets the top
    row[1 + 48 - ht._MIN_OCTAVE] = 400
    monkeypatch.setattr(ht, "WIDE_FAR", True)
    real = ht._wide_bracket(row, sd, 1, 1400)
    assert real is not None and real[2] == 2.0**49
