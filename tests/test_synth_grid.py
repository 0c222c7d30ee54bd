"""The synthesizer's DP dependence grid (issue 28): the release (sensitivity √2, charge, plan =
ledger), the choice from public n, d and budget, its post-processing (raking, shrinkage to
the copula model), types and ranges of a 2-column table, ``sample`` = both ``synthesize``
forms = the model file for the same seed, a privacy audit (and a broken variant it flags),
and the 2-way fidelity it buys over the copula alone on clustered data."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

import privgauss as pg
from privgauss.audit import audit_mechanism
from privgauss.cli import main
from privgauss.mechanisms import Release
from privgauss.noise import NoiseSource
from privgauss.privacy import ZCDP, Accountant, approx_to_zcdp, zcdp_to_epsilon
from privgauss.synthesis import grid as grid_mod
from privgauss.synthesis import synthesizer as synth_mod
from privgauss.synthesis.grid import (
    DependenceGrid,
    grid_from_counts,
    grid_levels,
    rake,
    release_grid_counts,
)

pd = pytest.importorskip("pandas")

EPS, DELTA = 1.0, 1e-6


def _clusters(n: int, seed: int = 0) -> Any:
    """Two columns: a float in three separated clusters (a 2-D shape no Gaussian copula has)
    and an integer count."""
    rng = np.random.default_rng(seed)
    c = rng.integers(0, 3, n)
    centres = np.array([[0.0, 0.0], [6.0, 0.0], [3.0, 5.0]])
    xy = centres[c] + rng.normal(size=(n, 2))
    return pd.DataFrame({"x": xy[:, 0], "count": np.clip(np.rint(3 * xy[:, 1] + 20), 0,
                                                        None).astype(np.int64)})


def _fit(X: Any, **kw: Any) -> pg.PrivateSynthesizer:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pg.warnings.SeededNoiseWarning)
        return pg.PrivateSynthesizer(epsilon=EPS, delta=DELTA, **kw).fit(X)


@pytest.fixture(scope="module")
def table() -> Any:
    return _clusters(3000)


@pytest.fixture(scope="module")
def fitted(table: Any) -> pg.PrivateSynthesizer:
    return _fit(table, random_state=3)


def test_levels_from_public_facts() -> None:
    rho = synth_mod.GRID_SHARE * approx_to_zcdp(EPS, DELTA)
    sigma = math.sqrt(2.0) / math.sqrt(2.0 * rho)
    assert grid_levels(3000, 2, rho) == int((3000 / sigma) ** (1 / 3)) >= 5
    assert grid_levels(3000, 1, rho) == 0        # one column: no dependence
    assert grid_levels(5000, 9, rho) == 0        # too coarse
    # no cap on the levels but memory's: 177 would make more than GRID_MAX_CELLS cells
    assert grid_levels(10**9, 3, 1.0) == 101
    assert 101**3 <= grid_mod.GRID_MAX_CELLS < 102**3
    assert grid_levels(10**9, 2, 1.0) == int((10**9) ** (1 / 3))  # 999: no longer 32


def test_release_charges_its_plan_with_sensitivity_sqrt2(fitted: pg.PrivateSynthesizer) -> None:
    total = approx_to_zcdp(EPS, DELTA)
    # two columns: the coarse grid and its refinement, each a histogram of sensitivity √2;
    # the one-component copula planned (from public n, d, ρ) takes the grid's correlations,
    # so the model's share (what the ranges, histograms and grid leave) goes to the
    # histograms and grids instead; the three clusters' counts then pick a mixture of
    # scores for the rows inside the cells (post-processing: no copula step, no charge)
    assert synth_mod.choose_components(3000, 2, 0.1 * total) == 1
    assert "copula" not in fitted.plan_ and fitted.copula_.ledger_ == []
    assert fitted.n_components_ == len(fitted.copula_.weights_) > 1
    model = 1.0 - synth_mod.RANGE_SHARE - synth_mod.histogram_share(2) - synth_mod.GRID_SHARE
    to_hist, to_grid, to_fine = synth_mod.FREED_SHARES
    shares = {"grid": synth_mod.GRID_SHARE - synth_mod.REFINE_SHARE + to_grid * model,
              "grid/fine": synth_mod.REFINE_SHARE + to_fine * model}
    for step, share in shares.items():
        (entry,) = [e for e in fitted.ledger_ if e.step == step]
        rho = share * total
        assert entry.mechanism == "gaussian" and entry.sensitivity == pytest.approx(math.sqrt(2))
        assert isinstance(entry.cost, ZCDP) and entry.cost.rho == pytest.approx(rho)
        assert entry.noise_scale == pytest.approx(math.sqrt(2) / math.sqrt(2 * rho))
    (bins,) = [e for e in fitted.ledger_ if e.step == "marginals/bins"]
    hist = (synth_mod.histogram_share(2) - synth_mod.TYPES_SHARE + to_hist * model) * total
    (zoom,) = [e for e in fitted.ledger_ if e.step == "marginals/zoom"]
    assert bins.cost.rho == pytest.approx((1 - synth_mod.ZOOM_SHARE) * hist)
    assert zoom.cost.rho == pytest.approx(synth_mod.ZOOM_SHARE * hist)
    assert zoom.sensitivity == pytest.approx(math.sqrt(2))  # one integer column zoomed
    steps = [e.step for e in fitted.ledger_]
    assert steps == ["marginals/types", "marginals/range", "marginals/bins", "marginals/zoom",
                     "grid", "grid/fine"]
    # the plan equals the ledger, step by step, and composes to the whole budget
    spent: dict[str, float] = {}
    for e in fitted.ledger_:
        key = e.step if e.step.startswith("marginals/") else e.step.split("/")[0]
        assert isinstance(e.cost, ZCDP)
        spent[key] = spent.get(key, 0.0) + e.cost.rho
    plan = {s: c.rho for s, c in fitted.plan_.items()}
    assert plan.keys() == spent.keys()
    for s in plan:
        assert spent[s] == pytest.approx(plan[s], rel=1e-9), s
    assert sum(spent.values()) == pytest.approx(total, rel=1e-9)
    assert fitted.method_.startswith(f"grid{fitted.grid_.levels}-copula-")


def test_types_and_ranges_are_kept(table: Any, fitted: pg.PrivateSynthesizer) -> None:
    out = fitted.sample_table(4000, random_state=1)
    assert list(out.columns) == ["x", "count"]
    assert out.dtypes.to_dict() == table.dtypes.to_dict()
    assert fitted.kinds_ == ["float", "integer"]
    assert out["count"].min() >= 0
    for j, m in enumerate(fitted.marginals_):
        col = out.iloc[:, j].to_numpy(float)
        assert m.low <= col.min() and col.max() <= m.high


def test_sample_and_both_synthesize_forms_agree(tmp_path: Path, table: Any) -> None:
    kinds = ["float", "integer"]  # stated, so the array form makes the same releases
    syn = _fit(table, random_state=7, kinds=kinds)
    a = syn.sample_table(500, random_state=7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pg.warnings.SeededNoiseWarning)
        b = pg.synthesize(table, 500, epsilon=EPS, delta=DELTA, random_state=7, kinds=kinds)
        arr = pg.synthesize(table.to_numpy(float), 500, epsilon=EPS, delta=DELTA,
                            random_state=7, kinds=kinds)
    pd.testing.assert_frame_equal(a, b)
    np.testing.assert_array_equal(arr, a.to_numpy(float))
    # the model file keeps the grid: the same rows again
    again = pg.PrivateSynthesizer.from_dict(json.loads(json.dumps(syn.to_dict())))
    assert again.grid_ is not None and again.method_ == syn.method_
    np.testing.assert_array_equal(again.sample(500, random_state=7), syn.sample(500, 7))
    # the CLI: one command, then the model-file form, the same rows
    data = tmp_path / "t.parquet"
    table.to_parquet(data)
    r = CliRunner().invoke(main, ["synthesize", str(data), "--epsilon", "1", "--delta", "1e-6",
                                  "-n", "300", "-o", str(tmp_path / "one.parquet"), "--seed",
                                  "4", "--model-out", str(tmp_path / "m.json")])
    assert r.exit_code == 0, r.output
    assert "grid" in r.output
    r2 = CliRunner().invoke(main, ["synthesize", str(tmp_path / "m.json"), "-n", "300", "-o",
                                   str(tmp_path / "two.parquet"), "--seed", "4"])
    assert r2.exit_code == 0, r2.output
    one, two = (pd.read_parquet(tmp_path / f) for f in ("one.parquet", "two.parquet"))
    pd.testing.assert_frame_equal(one, two)
    assert one.dtypes.to_dict() == table.dtypes.to_dict()


def test_grid_refused_before_spending_where_too_coarse() -> None:
    X = np.random.default_rng(0).normal(size=(3000, 8))
    acct = Accountant(pg.ApproxDP(EPS, DELTA))
    with pytest.raises(pg.InvalidDataError, match="grid is too coarse"):
        pg.PrivateSynthesizer(epsilon=EPS, delta=DELTA, dependence="grid",
                              accountant=acct).fit(X)
    with pytest.raises(pg.InvalidDataError, match="dependence must be"):
        pg.PrivateSynthesizer(epsilon=EPS, delta=DELTA, dependence="nope",
                              accountant=acct).fit(X)
    assert acct.spent is None
    # auto on a wide table: no grid, the copula model alone, as before
    syn = _fit(X[:, :7], random_state=0)
    assert syn.grid_ is None and "grid" not in syn.plan_
    assert all(e.step != "grid" for e in syn.ledger_)


def test_rake_gives_uniform_margins_and_shrinkage_follows_the_noise() -> None:
    rng = np.random.default_rng(0)
    p = rake(rng.uniform(size=(6, 6, 6)))
    for axis in range(3):
        other = tuple(a for a in range(3) if a != axis)
        np.testing.assert_allclose(p.sum(axis=other), 1 / 6, atol=1e-9)
    model = np.full((6, 6), 1 / 36)
    n, sigma = 3600, 10.0
    # counts that are the model plus noise alone: shrunk mostly to the model (the factor is
    # 1 − 36/χ²₃₆ clipped at 0: its median is about 0.03)
    fs = []
    for _ in range(21):
        noisy = model * n + rng.normal(0, sigma, (6, 6))
        g, f = grid_from_counts(noisy, n, sigma, model)
        fs.append(f)
        assert np.abs(g.probs - model).max() < 0.01
    assert np.median(fs) < 0.15
    # a dependence the model misses (all mass on the diagonal): the counts are kept
    diag = np.eye(6) / 6 * n + rng.normal(0, sigma, (6, 6))
    g, f = grid_from_counts(diag, n, sigma, model)
    assert f > 0.95 and np.trace(g.probs) > 0.9


def test_margins_combine_the_marginal_and_the_grid_by_inverse_variance() -> None:
    """Each column's slice masses: 1/g where the marginal is exact, the grid's slice sums
    where the marginal is pure noise, the inverse-variance mean between; the raking meets
    them (post-processing of the two releases)."""
    g, n, sigma = 5, 2000, 10.0
    counts = np.outer([0.1, 0.15, 0.2, 0.25, 0.3], np.full(g, 1.0 / g)) * n  # column 0 skewed
    exact = grid_mod.combined_margins(counts, n, sigma, np.zeros((2, g)))
    assert np.allclose(exact, 1.0 / g)
    noisy = grid_mod.combined_margins(counts, n, sigma, np.full((2, g), 1e6))
    assert np.allclose(noisy[0], [0.1, 0.15, 0.2, 0.25, 0.3]) and np.allclose(noisy[1], 0.2)
    grid_var = g * (sigma / n) ** 2
    both = grid_mod.combined_margins(counts, n, sigma, np.full((2, g), grid_var))
    assert np.allclose(both[0], (np.array([0.1, 0.15, 0.2, 0.25, 0.3]) + 0.2) / 2)
    probs = grid_mod.rake(np.ones((g, g)), margins=both)
    assert np.allclose(probs.sum(axis=1), both[0]) and np.allclose(probs.sum(axis=0), both[1])


def test_a_marginals_slice_variance_counts_its_bins() -> None:
    """Eight equal bins, four slices: two whole bins each (2 σ²/n²); one bin cut in halves by
    two slices gives each a quarter of its variance."""
    m = pg.synthesis.marginals.Marginal("float", np.arange(9.0), np.linspace(0.0, 1.0, 9))
    assert np.allclose(synth_mod._slice_variances(m, 4, 10.0, 100), 2 * 0.01)
    one = pg.synthesis.marginals.Marginal("float", np.array([0.0, 1.0]), np.array([0.0, 1.0]))
    assert np.allclose(synth_mod._slice_variances(one, 2, 10.0, 100), 0.25 * 0.01)


def test_sample_follows_the_cells_and_handles_empty_proposals() -> None:
    probs = np.zeros((4, 4))
    probs[0, 3] = probs[3, 0] = 0.5
    g = DependenceGrid(4, probs)
    rng = np.random.default_rng(1)
    U = g.sample(2000, np.empty((0, 2)), rng)   # no proposals: uniform within the cells
    cells = g.cells(U)
    assert set(np.unique(cells)) == {3, 12}
    assert abs(np.mean(cells == 3) - 0.5) < 0.05
    assert np.all((U >= 0) & (U <= 1))
    # proposals that fall in a cell are used, without replacement
    prop = np.tile([[0.1, 0.9]], (5, 1)) + np.arange(5)[:, None] * 1e-3
    U = g.sample(400, prop, rng)
    used = U[np.isin(U[:, 0], prop[:, 0])]
    assert len(used) == 5 and len(np.unique(used[:, 0])) == 5


def test_clusters_2way_better_than_the_copula_alone(table: Any,
                                                    fitted: pg.PrivateSynthesizer) -> None:
    """Three 2-D clusters: a Gaussian copula smears them into one blob; the grid keeps the
    empty space between them. 2-way TV on the real rows' 6×6 quantile cells, the grid's the
    median over eight fits (noise seeds 0–7; sample seed 1): one fit gives 0.06–0.11 (mean
    0.082), so a median over fewer seeds failed on a shift of the noise stream alone; the
    copula ≈ 0.2; the bounds leave room for noise only."""
    real = _clusters(20000, seed=9).to_numpy(float)

    def tv(rows: np.ndarray) -> float:
        ex, ey = (np.quantile(real[:, j], np.linspace(0, 1, 7)) for j in range(2))
        h = [np.histogram2d(np.clip(r[:, 0], ex[0], ex[-1]), np.clip(r[:, 1], ey[0], ey[-1]),
                            [ex, ey])[0] / len(r) for r in (real, rows)]
        return 0.5 * float(np.abs(h[0] - h[1]).sum())

    copula = _fit(table, random_state=0, dependence="copula")
    assert copula.grid_ is None
    fits = [fitted if s == 3 else _fit(table, random_state=s) for s in range(8)]
    ours = float(np.median([tv(f.sample(20000, 1)) for f in fits]))
    theirs = tv(copula.sample(20000, 1))
    assert ours < 0.1 and theirs > 0.15 and ours < 0.6 * theirs


AUDIT_RHO = 0.25
AUDIT_DELTA = 1e-3


def _grid_mechanism(data: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The grid's noisy counts (what the post-processing sees)."""
    acct = Accountant(ZCDP(AUDIT_RHO))
    return release_grid_counts(data, 3, AUDIT_RHO,
                               release=Release(acct, NoiseSource(rng))).ravel()


def _grid_pair() -> tuple[np.ndarray, np.ndarray]:
    """30 score rows in the first cell; in D′ one moves to the last: two counts change by one,
    the whole sensitivity."""
    base = np.full((30, 2), 0.1)
    moved = base.copy()
    moved[0] = 0.9
    return base, moved


def test_grid_audit_passes() -> None:
    res = audit_mechanism(_grid_mechanism, *_grid_pair(),
                          epsilon=zcdp_to_epsilon(AUDIT_RHO, AUDIT_DELTA), delta=AUDIT_DELTA,
                          n_runs=3000)
    assert res.passed, str(res)


def test_grid_with_a_quarter_of_the_sensitivity_is_flagged(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grid_mod, "histogram_l2", lambda: math.sqrt(2.0) / 4)
    res = audit_mechanism(_grid_mechanism, *_grid_pair(),
                          epsilon=zcdp_to_epsilon(AUDIT_RHO, AUDIT_DELTA), delta=AUDIT_DELTA,
                          n_runs=3000)
    assert not res.passed, str(res)


@pytest.mark.parametrize("seed", [0, 1])
def test_neighbours_end_in_the_same_outcome(seed: int) -> None:
    """The grid path on a 2-column table and its neighbour (one row replaced by a gross
    error): same outcome class, warnings and ledger length (DESIGN.md rule 10)."""
    from privgauss.audit import fit_outcome

    X = _clusters(3000, seed).to_numpy(float)
    Y = X.copy()
    Y[0] = [1e9, -1e12]
    outs = []
    for data in (X, Y):
        est = pg.PrivateSynthesizer(epsilon=EPS, delta=DELTA, random_state=seed,
                                    kinds=["float", "integer"])
        outs.append(fit_outcome(est, data))
        assert est.grid_ is not None
    a, b = outs
    assert a.kind == b.kind == "success"
    assert a.warning_categories == b.warning_categories
    assert a.ledger_length == b.ledger_length


def test_stratified_levels_keep_the_ranks_and_fill_every_stratum() -> None:
    """Each column gets exactly one level per stratum of its target distribution (uniform, or
    the grid's slice masses), assigned in the order of the drawn scores: the joint ranks (the
    dependence) are the draws', the marginal has no multinomial noise."""
    rng = np.random.default_rng(0)
    m = 1000
    U = rng.uniform(size=(m, 2))
    U[:, 1] = 0.5 * U[:, 0] + 0.5 * rng.uniform(size=m)
    out = synth_mod.stratified_levels(U, np.random.default_rng(1))
    for j in range(2):
        assert np.array_equal(np.argsort(out[:, j]), np.argsort(U[:, j]))
        assert np.array_equal(np.sort(np.floor(out[:, j] * m)), np.arange(m))
    masses = np.array([[0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25]])
    out = synth_mod.stratified_levels(U, np.random.default_rng(1), masses)
    counts = np.histogram(out[:, 0], np.linspace(0, 1, 5))[0]
    assert np.all(np.abs(counts - m * masses[0]) <= 1)
    assert np.array_equal(np.argsort(out[:, 0]), np.argsort(U[:, 0]))


def test_sampled_columns_follow_the_released_marginals_closely(
        fitted: pg.PrivateSynthesizer) -> None:
    """The synthetic columns' masses below each released edge match the released CDF (through
    the grid's raked margins) to within a few rows, far closer than the ±√(m p(1-p)) of m
    independent draws."""
    m = 4000
    X = fitted.sample(m, random_state=3)
    masses = fitted.grid_.column_masses() if fitted.grid_ is not None else None
    for j, marg in enumerate(fitted.marginals_):
        if marg.kind != "float" or marg.grid > 0:
            continue
        g = masses.shape[1] if masses is not None else 1
        w = masses[j] / masses[j].sum() if masses is not None else np.ones(1)
        knots = np.concatenate([[0.0], np.cumsum(w)])
        target = np.interp(marg.cdf, np.linspace(0.0, 1.0, g + 1), knots)
        # the edges between two bins of positive mass (the inverse CDF's knots)
        p = np.diff(marg.cdf)
        inner = np.flatnonzero((p[:-1] > 0) & (p[1:] > 0)) + 1
        assert inner.size >= 10
        below = np.array([np.mean(X[:, j] < marg.edges[k]) for k in inner])
        assert np.max(np.abs(below - target[inner])) <= 5.0 / m


def test_grid_correlations_recover_the_copulas_and_feed_the_one_component_model(
        table: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pair's correlation fitted to the bivariate normal's own cell masses is recovered,
    from a released grid's masses and from noise-free counts; a one-component copula with a
    grid takes its correlation from the released counts (the discrete column's jitter
    attenuation undone) and makes no release of its own."""
    for r in (-0.6, 0.0, 0.3, 0.9):
        q = grid_mod.normal_cell_masses(6, r)
        assert abs(grid_mod.grid_correlations(DependenceGrid(6, q / q.sum()))[0, 1] - r) < 2e-3
        got = grid_mod.count_correlations(1e4 * q / q.sum(), 10_000, 1e-3)[0, 1]
        assert abs(got - r) < 2e-3
    seen: list[np.ndarray] = []

    def spy(noisy: np.ndarray, n: int, sigma: float) -> np.ndarray:
        seen.append(grid_mod.count_correlations(noisy, n, sigma))
        return seen[-1]

    monkeypatch.setattr(synth_mod, "count_correlations", spy)
    # the one-component copula sampled (on this clustered table a mixture fitted to the
    # counts would take over the rows inside the cells: test_grid_mixture_*)
    monkeypatch.setattr(synth_mod, "GRID_MIXTURE_MAX", 1)
    fitted = _fit(table, random_state=3)
    assert fitted.n_components_ == 1 and fitted.grid_ is not None and len(seen) == 1
    c = [m.jitter_attenuation() for m in fitted.marginals_]
    want = np.clip(seen[0][0, 1] / (c[0] * c[1]), -0.99, 0.99)
    cov = fitted.copula_.covariance_
    assert abs(cov[0, 1] / math.sqrt(cov[0, 0] * cov[1, 1]) - want) < 0.01
    copula = fitted.copula_
    assert copula.method_ == "grid-correlations" and copula.ledger_ == []
    assert copula.privacy_spent_ is None and "copula" not in fitted.plan_
    assert not any(e.step.startswith("copula") for e in fitted.ledger_)
    # without the grid, the copula's correlations are its own release, planned and charged
    alone = _fit(table, random_state=3, dependence="copula")
    assert alone.grid_ is None and "copula" in alone.plan_
    assert any(e.step.startswith("copula/") for e in alone.ledger_)


def test_count_correlations_are_unbiased_where_clipped_counts_are_not() -> None:
    """A strong dependence leaves the off-diagonal cells nearly empty: the noise's negative
    counts clipped at 0 there pull the correlation of the raked grid towards 0, the fit to
    the unclipped counts does not (n = 2400, 5 × 5 cells, noise 13.5 per cell, as xclara's
    grid at ε = 1)."""
    rng = np.random.default_rng(0)
    n, g, sigma, r = 2400, 5, 13.5, 0.9
    q = grid_mod.normal_cell_masses(g, r)
    q = q / q.sum()
    fits, clipped = [], []
    for _ in range(40):
        noisy = rng.multinomial(n, q.ravel()).reshape(g, g) + rng.normal(0.0, sigma, (g, g))
        fits.append(grid_mod.count_correlations(noisy, n, sigma)[0, 1])
        raked = rake(np.clip(noisy / n, 0.0, None))  # a released grid without shrinkage
        clipped.append(grid_mod.grid_correlations(DependenceGrid(g, raked))[0, 1])
    assert abs(np.mean(fits) - r) < 0.006
    assert np.mean(clipped) < r - 0.015


# -- the two-level grid -----------------------------------------------------------------------
def test_refined_grid_is_released_and_consistent(fitted: pg.PrivateSynthesizer) -> None:
    grid = fitted.grid_
    assert grid is not None and grid.refine == synth_mod.GRID_REFINE == 2
    assert grid.within is not None and grid.within.shape == (grid.levels**2, 4)
    assert np.all(grid.within >= 0) and np.allclose(grid.within.sum(axis=1), 1.0)
    back = DependenceGrid.from_dict(json.loads(json.dumps(grid.to_dict())))
    assert back.refine == 2 and np.array_equal(back.within, grid.within)
    assert np.array_equal(back.probs, grid.probs)


def test_refinement_only_for_two_columns() -> None:
    rng = np.random.default_rng(5)
    X = rng.normal(size=(200_000, 3))
    syn = _fit(X, random_state=1, n_components=1)
    assert syn.grid_ is not None and syn.grid_.refine == 1 and syn.grid_.within is None
    assert all(e.step != "grid/fine" for e in syn.ledger_)
    # the one-component copula takes the grid's correlations: the model's share goes to the
    # histograms and the coarse grid (the fine grid's part too, there being none)
    model = 1.0 - synth_mod.RANGE_SHARE - synth_mod.histogram_share(3) - synth_mod.GRID_SHARE
    to_grid = synth_mod.FREED_SHARES[1] + synth_mod.FREED_SHARES[2]
    assert syn.plan_["grid"].rho == pytest.approx(
        (synth_mod.GRID_SHARE + to_grid * model) * approx_to_zcdp(EPS, DELTA))
    assert "copula" not in syn.plan_


def test_to_blocks_orders_sub_cells_as_sampling_does() -> None:
    g, r = 3, 2
    grid = DependenceGrid(g, np.full((g, g), 1.0 / g**2), r, np.full((g * g, r * r), 0.25))
    # a point in fine cell (i, j) of the 6 × 6 grid lands at row c, column s of the blocks
    fine = np.arange(36.0).reshape(6, 6)
    blocks = grid_mod.to_blocks(fine, r)
    for i in range(6):
        for j in range(6):
            U = np.array([[(i + 0.5) / 6, (j + 0.5) / 6]])
            key = int(grid._sub_cells(U)[0])
            assert blocks.ravel()[key] == fine[i, j]
    assert np.allclose(blocks.sum(axis=1).reshape(g, g),
                       fine.reshape(g, r, g, r).sum(axis=(1, 3)))


def test_combine_counts_weights_by_inverse_variance() -> None:
    coarse = np.array([[10.0, 20.0], [30.0, 40.0]])
    fine = np.full((4, 4), 5.0)  # block sums 20 each
    out, sd = grid_mod.combine_counts(coarse, 1.0, fine, 1.0, 2)
    # coarse variance 1, block sums' 4: weights 4/5 and 1/5
    assert np.allclose(out, 0.8 * coarse + 0.2 * 20.0)
    assert sd == pytest.approx(math.sqrt(4.0 / 5.0))


def test_refinement_follows_the_counts_and_falls_back_to_the_model() -> None:
    r, n = 2, 10_000
    model = np.full((4, 4), 1.0 / 16)
    fine = np.zeros((4, 4))
    fine[0, 0] = n / 4  # coarse cell (0, 0): all its mass in sub-cell (0, 0)
    fine[2:, 2:] = n / 16  # coarse cell (1, 1): spread evenly
    within = grid_mod.refinement_from_counts(fine, n, 1e-6, model, r)
    assert np.allclose(within[0], [1.0, 0.0, 0.0, 0.0], atol=1e-6)
    assert np.allclose(within[3], 0.25)
    assert np.allclose(within[1], 0.25)  # no released mass: the model's (uniform) split
    # pure noise (σ huge): the model's split everywhere
    assert np.allclose(grid_mod.refinement_from_counts(fine, n, 1e9, model, r), 0.25)


def test_refined_sampling_follows_cells_and_sub_cells() -> None:
    g, r = 2, 2
    probs = np.array([[0.5, 0.2], [0.2, 0.1]])
    within = np.array([[1.0, 0, 0, 0], [0.25] * 4, [0, 0, 0, 1.0], [0.5, 0.5, 0, 0]])
    grid = DependenceGrid(g, probs, r, within)
    rng = np.random.default_rng(0)
    U = grid.sample(40_000, rng.uniform(size=(80_000, 2)), rng)
    keys = grid._sub_cells(U)
    freq = np.bincount(keys, minlength=16).reshape(4, 4) / len(U)
    assert np.allclose(freq, probs.reshape(4, 1) * within, atol=0.01)
    assert np.allclose(freq.sum(axis=1), probs.ravel(), atol=0.01)
    assert np.all((U >= 0) & (U <= 1))
