"""DP synthetic tables (issue 28): the one-command CLI, the Python entry point, types and
ranges, the ledger, agreement of ``sample`` and both ``synthesize`` forms, the marginals'
privacy audit (with a broken variant it flags), neighbour outcomes of the whole path, and the
1-way fidelity the DP marginals buy over the raw mixture."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.special import ndtr, ndtri

import privgauss as pg
from privgauss.audit import audit_mechanism, fit_outcome
from privgauss.cli import main
from privgauss.mechanisms import Release
from privgauss.noise import NoiseSource
from privgauss.privacy import ZCDP, Accountant, approx_to_zcdp, zcdp_to_epsilon
from privgauss.synthesis import marginals as marg
from privgauss.synthesis import synthesizer as synth_mod
from privgauss.synthesis.marginals import MarginalPlan, release_marginals

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

EPS, DELTA = 1.0, 1e-6


def _table(n: int, seed: int = 0) -> Any:
    """A uniform day-of-year (int), a lognormal income (float), a skewed count (int) and a
    0/1 flag (bool), correlated through a latent Gaussian."""
    rng = np.random.default_rng(seed)
    cov = [[1, .6, .3, .2], [.6, 1, .4, .1], [.3, .4, 1, .5], [.2, .1, .5, 1]]
    z = rng.multivariate_normal(np.zeros(4), cov, size=n)
    return pd.DataFrame({
        "day": np.floor(ndtr(z[:, 0]) * 365).astype(np.int64),
        "income": np.exp(10 + z[:, 1]),
        "kids": np.floor(-np.log(1 - ndtr(z[:, 2])) * 1.5).astype(np.int64),
        "flag": z[:, 3] > 0.5,
    })


def _tv_1way(real: np.ndarray, syn: np.ndarray, bins: int = 20) -> float:
    """Total variation between two samples on the real column's quantile bins."""
    edges = np.unique(np.quantile(real, np.linspace(0, 1, bins + 1)))
    h = [np.histogram(np.clip(x, edges[0], edges[-1]), edges)[0] / len(x) for x in (real, syn)]
    return 0.5 * float(np.abs(h[0] - h[1]).sum())


@pytest.fixture(scope="module")
def table() -> Any:
    return _table(4000)


@pytest.fixture(scope="module")
def fitted(table: Any) -> pg.PrivateSynthesizer:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pg.warnings.SeededNoiseWarning)
        return pg.PrivateSynthesizer(epsilon=EPS, delta=DELTA, random_state=5).fit(table)


# ------------------------------------------------------------------------ Python entry point


def test_names_dtypes_and_ranges_are_kept(table: Any, fitted: pg.PrivateSynthesizer) -> None:
    out = fitted.sample_table(3000, random_state=1)
    assert list(out.columns) == list(table.columns)
    assert out.dtypes.to_dict() == table.dtypes.to_dict()
    assert set(np.unique(out["flag"])) <= {False, True}
    assert out["kids"].min() >= 0 and out["day"].min() >= 0  # a non-negative column stays so
    for j, m in enumerate(fitted.marginals_):
        col = out.iloc[:, j].to_numpy(float)
        assert m.low <= col.min() and col.max() <= m.high


def test_stated_bounds_are_a_hard_range(table: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pg.warnings.SeededNoiseWarning)
        out = pg.synthesize(table, 3000, epsilon=EPS, delta=DELTA, random_state=2,
                            bounds={"day": (0, 364), "income": (0.0, 5e4)})
    assert out["day"].between(0, 364).all() and out["income"].between(0, 5e4).all()
    assert out["day"].dtype == np.int64


def test_ndarray_in_ndarray_out() -> None:
    X = np.random.default_rng(0).integers(0, 5, size=(3000, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pg.warnings.SeededNoiseWarning)
        out = pg.synthesize(X, 100, rho=1.0, random_state=0)
    assert isinstance(out, np.ndarray) and out.dtype == X.dtype and out.shape == (100, 3)
    assert out.min() >= 0


def test_ledger_composes_to_the_budget_with_named_steps(fitted: pg.PrivateSynthesizer) -> None:
    steps = [e.step for e in fitted.ledger_]
    # income is a float64 column: its kind ("auto") is a DP release too
    assert steps[:4] == ["marginals/types", "marginals/range", "marginals/bins",
                         "marginals/zoom"]
    assert len(steps) > 4 and all(s.startswith("copula/") for s in steps[4:])
    rho = sum(e.cost.rho for e in fitted.ledger_ if isinstance(e.cost, ZCDP))
    assert rho == pytest.approx(approx_to_zcdp(EPS, DELTA), rel=1e-9)
    spent = fitted.privacy_spent_
    assert spent.epsilon == pytest.approx(EPS, rel=1e-6) and spent.delta == DELTA
    total = approx_to_zcdp(EPS, DELTA)
    # d = 4 columns: the histograms get 0.25 + 0.05 (7 - 4) = 0.40, less the types' 0.02,
    # ZOOM_SHARE of that to the zoom into each column's heaviest bins
    z = synth_mod.ZOOM_SHARE
    assert [e.cost.rho for e in fitted.ledger_[:4]] == pytest.approx(
        [0.02 * total, 0.10 * total, 0.38 * (1 - z) * total, 0.38 * z * total])
    assert fitted.kinds_ == ["integer", "float", "integer", "binary"]


def test_pure_dp_and_bad_kinds_are_refused_before_spending(table: Any) -> None:
    acct = Accountant(pg.ApproxDP(1.0, 1e-6))
    with pytest.raises(pg.PrivacyBudgetError, match="pure"):
        pg.PrivateSynthesizer(epsilon=1.0).fit(table)
    with pytest.raises(pg.InvalidDataError, match="kinds"):
        pg.PrivateSynthesizer(epsilon=1.0, delta=1e-6, kinds={"nope": "integer"},
                              accountant=acct).fit(table)
    with pytest.raises(pg.InvalidDataError, match="Gaussian copula"):  # em's plan, from n
        pg.PrivateSynthesizer(epsilon=1.0, delta=1e-6, n_components=8,
                              accountant=acct).fit(table.iloc[:1000])
    assert acct.spent is None


def test_marginals_beat_the_raw_mixture_on_1way_tv(table: Any,
                                                   fitted: pg.PrivateSynthesizer) -> None:
    """The uniform day, the lognormal income and the skewed count: a Gaussian mixture in raw
    space misses their shapes; the copula's DP marginals must get each within 0.09 (measured
    0.02-0.07 at n = 4000, of which ~0.03 is the real sample's own noise) and beat the raw
    mixture's by half on average."""
    X = table.to_numpy(float)
    syn = fitted.sample(10 * len(X), random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        raw = pg.PrivateGaussianMixture(8, epsilon=EPS, delta=DELTA, random_state=5,
                                        enforce_requirements=False).fit(X).sample(10 * len(X), 3)[0]
    ours = [_tv_1way(X[:, j], syn[:, j]) for j in range(3)]
    theirs = [_tv_1way(X[:, j], raw[:, j]) for j in range(3)]
    assert max(ours) < 0.09, (ours, theirs)
    assert np.mean(ours) < 0.5 * np.mean(theirs), (ours, theirs)


def test_discrete_correlations_are_not_attenuated(monkeypatch: pytest.MonkeyPatch) -> None:
    """The jittered scores of the count and the flag shrink their correlation (0.35 in the
    data); the released CDFs undo it: within 0.06 at n = 20000, where the same fit without the
    correction is more than 0.1 off (measured 0.18)."""
    table = _table(20000, seed=3)
    X = table.to_numpy(float)

    def count_flag_error() -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pg.warnings.SeededNoiseWarning)
            syn = pg.PrivateSynthesizer(epsilon=EPS, delta=DELTA, n_components=1,
                                        random_state=4).fit(table).sample(50000, 4)
        return float(abs(np.corrcoef(X.T)[2, 3] - np.corrcoef(syn.T)[2, 3]))

    assert count_flag_error() < 0.06
    monkeypatch.setattr(synth_mod, "_undo_jitter_attenuation", lambda copula, factors: None)
    assert count_flag_error() > 0.1


def test_a_failed_copula_fit_falls_back_to_independent_scores(
        table: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one-component copula's EstimationFailed (⊥, a DP output) is not the synthesizer's
    failure: it keeps the marginals it released, draws independent scores, warns, and its
    model file samples the same rows. Without the fallback the fit raises."""
    from privgauss.exceptions import EstimationFailed

    def fail(self: Any, Z: np.ndarray) -> Any:
        raise EstimationFailed("the fit missed the data", step="clipped count")

    monkeypatch.setattr(pg.PrivateGaussian, "_fit_trusted", fail)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        syn = pg.PrivateSynthesizer(epsilon=EPS, delta=DELTA, n_components=1,
                                    random_state=3).fit(table)
    assert any(isinstance(w.message, pg.warnings.SimplerModelWarning) for w in caught)
    assert syn.method_.endswith("copula-independent")
    np.testing.assert_array_equal(syn.copula_.covariance_, np.eye(4))
    rows = syn.sample(20000, random_state=5)
    assert np.max(np.abs(np.corrcoef(rows.T) - np.eye(4))) < 0.05  # independent columns
    assert _tv_1way(table["income"].to_numpy(float), rows[:, 1]) < 0.1  # marginals kept
    back = pg.PrivateSynthesizer.from_dict(json.loads(json.dumps(syn.to_dict())))
    np.testing.assert_array_equal(back.sample(100, random_state=6), syn.sample(100, 6))
    monkeypatch.setattr(synth_mod, "_independent_scores",
                        lambda copula, d: (_ for _ in ()).throw(EstimationFailed("x")))
    with pytest.raises(EstimationFailed), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pg.PrivateSynthesizer(epsilon=EPS, delta=DELTA, n_components=1,
                              random_state=3).fit(table)


# ----------------------------------------------------------------------------- command line


def _run(args: list[str]) -> Any:
    return CliRunner().invoke(main, args, catch_exceptions=False)


def test_cli_one_command_parquet_keeps_types_and_both_forms_agree(
        tmp_path: Path, table: Any) -> None:
    data = tmp_path / "d.parquet"
    table.to_parquet(data)
    out, again, model = tmp_path / "o.parquet", tmp_path / "o2.parquet", tmp_path / "m.json"
    r = _run(["synthesize", str(data), "--epsilon", "1", "--delta", "1e-6", "-n", "500",
              "-o", str(out), "--seed", "7", "--model-out", str(model)])
    assert r.exit_code == 0, r.output
    assert "marginals/range" in r.output and "copula" in r.output
    first = pd.read_parquet(out)
    assert list(first.columns) == list(table.columns)
    assert first.dtypes.to_dict() == table.dtypes.to_dict()
    r = _run(["synthesize", str(model), "-n", "500", "-o", str(again), "--seed", "7"])
    assert r.exit_code == 0, r.output
    assert first.equals(pd.read_parquet(again))
    # the Python forms: fit + sample with the same seed, and the loaded model file
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pg.warnings.SeededNoiseWarning)
        syn = pg.PrivateSynthesizer(epsilon=1, delta=1e-6, random_state=7).fit(table)
    np.testing.assert_array_equal(syn.sample(500, random_state=7), first.to_numpy(float))
    loaded = pg.PrivateSynthesizer.from_dict(json.loads(model.read_text()))
    np.testing.assert_array_equal(loaded.sample(500, random_state=7), first.to_numpy(float))


def test_cli_one_command_csv_with_flags(tmp_path: Path, table: Any) -> None:
    data = tmp_path / "d.csv"
    t = table.assign(flag=table["flag"].astype(int))
    t.to_csv(data, index=False)
    out = tmp_path / "o.csv"
    r = _run(["synthesize", str(data), "--rho", "0.05", "-n", "300", "-o", str(out), "--seed",
              "1", "--integer", "day,kids", "--binary", "flag", "--bounds", "day", "0", "364"])
    assert r.exit_code == 0, r.output
    lines = out.read_text().splitlines()
    assert lines[0] == "day,income,kids,flag" and len(lines) == 301
    got = pd.read_csv(out)
    assert got["day"].dtype == np.int64 and got["day"].between(0, 364).all()
    assert set(got["flag"]) <= {0, 1} and got["kids"].dtype == np.int64
    # unflagged CSV columns: a DP count of non-integer values decides integer or float
    r = _run(["synthesize", str(data), "--rho", "0.05", "-n", "50", "-o", str(out), "--seed",
              "2"])
    assert r.exit_code == 0, r.output
    assert "marginals/types" in r.output
    got = pd.read_csv(out)
    assert [str(t) for t in got.dtypes] == ["int64", "float64", "int64", "int64"]
    assert set(got["flag"]) <= {0, 1}
    r = _run(["synthesize", str(data), "--rho", "0.05", "-n", "50", "-o", str(out),
              "--float", "day", "--seed", "3"])
    assert r.exit_code == 0, r.output
    assert pd.read_csv(out)["day"].dtype == np.float64


def test_cli_small_table_path_is_named(tmp_path: Path) -> None:
    data = tmp_path / "small.csv"
    _table(2000).assign(flag=lambda t: t["flag"].astype(int)).to_csv(data, index=False)
    r = _run(["synthesize", str(data), "--epsilon", "1", "--delta", "1e-6", "-n", "10",
              "-o", str(tmp_path / "o.csv"), "--seed", "0"])
    assert r.exit_code == 0, r.output
    assert "small-table path" in r.output


def test_cli_grid_path_is_named(tmp_path: Path) -> None:
    # a narrow table gets the dependence grid: the message names it, not the small-table path
    data = tmp_path / "narrow.csv"
    rng = np.random.default_rng(0)
    z = rng.multivariate_normal([0, 0], [[1, .7], [.7, 1]], size=3000)
    pd.DataFrame({"a": z[:, 0], "b": np.exp(z[:, 1])}).to_csv(data, index=False)
    r = _run(["synthesize", str(data), "--epsilon", "1", "--delta", "1e-6", "-n", "10",
              "-o", str(tmp_path / "o.csv"), "--seed", "0"])
    assert r.exit_code == 0, r.output
    assert "dependence grid of" in r.output and "small-table path" not in r.output


def test_cli_refusals(tmp_path: Path, table: Any) -> None:
    data = tmp_path / "d.csv"
    table.assign(flag=table["flag"].astype(int)).to_csv(data, index=False)
    out = str(tmp_path / "o.csv")
    r = CliRunner().invoke(main, ["synthesize", str(data), "-n", "5", "-o", out])
    assert r.exit_code == 2 and "budget" in r.output
    r = CliRunner().invoke(main, ["synthesize", str(data), "--epsilon", "1", "-n", "5",
                                  "-o", out])
    assert r.exit_code == 2 and "pure" in r.output
    r = CliRunner().invoke(main, ["synthesize", str(data), "--rho", "1", "-n", "5", "-o", out,
                                  "--integer", "nope"])
    assert r.exit_code == 2 and "nope" in r.output
    model = tmp_path / "m.json"
    model.write_text("{}")
    r = CliRunner().invoke(main, ["synthesize", str(model), "--rho", "1", "-n", "5", "-o", out])
    assert r.exit_code == 2 and "model file" in r.output


def test_model_file_form_article(tmp_path: Path) -> None:
    X = np.random.default_rng(0).normal(size=(20000, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = pg.PrivateGaussianMixture(2, epsilon=2, delta=1e-6, random_state=0).fit(X)
    path = tmp_path / "m.json"
    pg.save(m, path)
    r = _run(["synthesize", str(path), "-n", "5", "-o", str(tmp_path / "o.csv")])
    assert r.exit_code == 0 and "from an em model" in r.output, r.output


# ------------------------------------------------------------------------------- privacy

AUDIT_RHO = 0.125  # per release: the range and the histogram each
AUDIT_DELTA = 1e-3
PROBES = np.array([0.75, 1.0, 1.5, 3.0, 100.0, 600.0, 1200.0])


def _marginal_mechanism(data: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Both releases (range, then histogram on the released grid) and what a reader sees."""
    plan = MarginalPlan(["float"], [None], 16, AUDIT_RHO, AUDIT_RHO)
    acct = Accountant(ZCDP(2 * AUDIT_RHO))
    (m,) = release_marginals(data, plan, release=Release(acct, NoiseSource(rng)))
    return np.concatenate([np.interp(PROBES, m.edges, m.cdf), [math.log2(m.high), m.low]])


def _histogram_mechanism(data: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The histogram alone, on a stated range (fixed bins): the released bin masses."""
    plan = MarginalPlan(["float"], [(0.0, 4.0)], 8, 0.0, AUDIT_RHO)
    acct = Accountant(ZCDP(AUDIT_RHO))
    (m,) = release_marginals(data, plan, release=Release(acct, NoiseSource(rng)))
    return np.diff(m.cdf)


def _range_pair() -> tuple[np.ndarray, np.ndarray]:
    """40 records at 1; in D′ one of them moves to 1000: two range bins and two fine bins
    change by one, the whole sensitivity of both releases."""
    base = np.ones((40, 1))
    moved = base.copy()
    moved[0] = 1000.0
    return base, moved


def _histogram_pair() -> tuple[np.ndarray, np.ndarray]:
    """20 records in the first bin and 20 in the last; in D′ one moves across."""
    base = np.r_[np.full(20, 0.25), np.full(20, 3.75)][:, None]
    moved = base.copy()
    moved[0] = 3.75
    return base, moved


def test_marginals_audit_passes() -> None:
    res = audit_mechanism(_marginal_mechanism, *_range_pair(),
                          epsilon=zcdp_to_epsilon(2 * AUDIT_RHO, AUDIT_DELTA),
                          delta=AUDIT_DELTA, n_runs=1000)
    assert res.passed, str(res)


def test_histogram_audit_passes() -> None:
    res = audit_mechanism(_histogram_mechanism, *_histogram_pair(),
                          epsilon=zcdp_to_epsilon(AUDIT_RHO, AUDIT_DELTA), delta=AUDIT_DELTA,
                          n_runs=3000)
    assert res.passed, str(res)


def test_histogram_with_a_quarter_of_the_sensitivity_is_flagged(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(marg, "histogram_l2", lambda: math.sqrt(2.0) / 4)
    res = audit_mechanism(_histogram_mechanism, *_histogram_pair(),
                          epsilon=zcdp_to_epsilon(AUDIT_RHO, AUDIT_DELTA), delta=AUDIT_DELTA,
                          n_runs=3000)
    assert not res.passed, str(res)


@pytest.mark.parametrize("seed", [0, 1])
def test_neighbours_end_in_the_same_outcome(seed: int) -> None:
    """The whole synthesize path on a table and its neighbour (one row replaced by a gross
    error): same outcome class, warnings and ledger length (DESIGN.md rule 10)."""
    X = _table(2500, seed).to_numpy(float)
    Y = X.copy()
    Y[0] = [1e9, -1e12, 1e6, 7.0]
    outs = []
    for data in (X, Y):
        est = pg.PrivateSynthesizer(epsilon=EPS, delta=DELTA, random_state=seed,
                                    kinds=["integer", "float", "integer", "binary"])
        outs.append(fit_outcome(est, data))
    a, b = outs
    assert a.kind == b.kind == "success"
    assert a.warning_categories == b.warning_categories
    assert a.ledger_length == b.ledger_length


def test_fine_bins_go_where_the_values_are() -> None:
    """A positive column in [1, 8): its range reaches down to 0 across hundreds of empty
    octaves merged into one central bin; their noisy counts must not pull fine bins there
    (clipped at 0 and summed they used to take most of them)."""
    x = np.random.default_rng(0).uniform(1.0, 8.0, size=(3000, 1))
    plan = MarginalPlan(["float"], [None], 32, 0.005, 0.005)
    m = release_marginals(x, plan, release=Release(Accountant(ZCDP(0.01)),
                                                   NoiseSource(np.random.default_rng(1))))[0]
    assert m.low == 0.0
    inside = np.count_nonzero((m.edges > 1.0) & (m.edges < 8.0))
    assert inside >= 0.75 * (len(m.edges) - 1)
    pure_noise = np.random.default_rng(2).normal(0.0, 40.0, size=500)
    assert np.count_nonzero(marg._allocation_weights(pure_noise, 40.0)) <= 5


def test_cdf_keeps_sparse_bins_inside_the_support_only() -> None:
    """Bins between the first and last passing bin keep their (clipped) mass, a thin tail bin
    included; noise past the support's end is dropped, and for a discrete column (one bin per
    value over a wide range) the cut is Bonferroni over its bins."""
    sigma = 10.0
    counts = np.array([0.0, 5.0, 100.0, 15.0, 100.0, 12.0, -3.0, 25.0, 18.0])
    p = np.diff(marg._cdf_of_counts(counts, sigma))
    assert p[3] > 0 and p[6] == 0 and p[1] == 0
    assert p[7] > 0 and p[8] == 0  # 25 passes 2 sigma, 18 does not
    q = np.diff(marg._cdf_of_counts(counts, sigma, "integer"))  # cut: 2.54 sigma for 9 bins
    assert q[7] == 0 and q[5] == 0 and q[3] > 0  # support: bins 2..4


def test_an_atom_in_a_float_column_gets_uniform_levels() -> None:
    """Many records sharing one value of a float column (zeros at the range's low end) are
    spread over their bin's CDF interval, not given one level (a score of -3.7 for all)."""
    m = marg.Marginal("float", np.array([0.0, 0.5, 1.0, 2.0]), np.array([0.0, 0.6, 0.8, 1.0]))
    u = m.to_uniform(np.zeros(4000), np.random.default_rng(0))
    assert u.min() >= 0.0 and u.max() <= 0.6
    assert abs(u.mean() - 0.3) < 0.01 and abs(u.std() - 0.6 / math.sqrt(12)) < 0.01
    v = m.to_uniform(np.full(2000, 1.5), np.random.default_rng(1))
    assert v.min() >= 0.8 and v.max() <= 1.0 and v.std() > 0.05


# ------------------------------------------------------------------------------- sign probe


def _thin_negatives(n: int, seed: int) -> np.ndarray:
    """A mostly positive column (values up to ~100) whose 6 % of negatives are spread over
    six octaves (-0.5 .. -32): too thin per octave to pass the range threshold at the
    benchmark's budget, as xclara's first column."""
    rng = np.random.default_rng(seed)
    pos = rng.uniform(0.0, 100.0, n)
    neg = -np.exp2(rng.uniform(-1.0, 5.0, n))
    return np.where(rng.uniform(size=n) < 0.06, neg, pos)[:, None]


def _bench_marginal(x: np.ndarray, seed: int) -> marg.Marginal:
    rho = approx_to_zcdp(1.0, 1e-6)
    plan = MarginalPlan(["float"], [None], marg.n_fine_bins(len(x), 0.4 * rho, 2),
                        0.1 * rho, 0.4 * rho)
    (m,) = release_marginals(x, plan, release=Release(Accountant(ZCDP(0.5 * rho)),
                                                      NoiseSource(seed)))
    return m


def test_sign_probe_keeps_thin_negative_mass() -> None:
    """Without the probe the negatives are clipped to 0 (range starts at 0); with it the
    released CDF puts about their 6 % below 0, in a range that reaches below -8."""
    x = _thin_negatives(2400, 0)
    for seed in range(3):
        m = _bench_marginal(x, seed)
        assert m.low < -8.0
        assert 0.03 < float(np.interp(0.0, m.edges, m.cdf)) < 0.09
        # spread over octaves (equal mass each), not one uniform bin: a valid marginal whose
        # mass below 0 is mostly at magnitudes under a quarter of the probe's width
        marg.Marginal.from_dict(m.to_dict())
        below = float(np.interp(0.0, m.edges, m.cdf))
        assert float(np.interp(m.low / 4, m.edges, m.cdf)) < 0.5 * below


def test_without_the_sign_probe_thin_negatives_are_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(marg, "PROBE_SIGMAS", math.inf)
    m = _bench_marginal(_thin_negatives(2400, 0), 0)
    assert m.low == 0.0


def test_sign_probe_keeps_a_positive_column_positive() -> None:
    x = np.random.default_rng(1).lognormal(2.0, 1.0, (2400, 1))
    for seed in range(5):
        m = _bench_marginal(x, seed)
        assert m.low == 0.0
        assert np.all(m.from_uniform(np.linspace(0.0, 1.0, 101)) >= 0.0)


def _probe_mechanism(data: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Both releases of a one-signed column and what a reader sees of its other sign."""
    plan = MarginalPlan(["float"], [None], 16, AUDIT_RHO, AUDIT_RHO)
    acct = Accountant(ZCDP(2 * AUDIT_RHO))
    (m,) = release_marginals(data, plan, release=Release(acct, NoiseSource(rng)))
    return np.array([m.low, float(np.interp(0.0, m.edges, m.cdf)), math.log2(m.high)])


def test_sign_probe_audit_passes() -> None:
    """40 records at 1; in D′ one moves into the probe's bin (at -0.05)."""
    base = np.ones((40, 1))
    moved = base.copy()
    moved[0] = -0.05
    res = audit_mechanism(_probe_mechanism, base, moved,
                          epsilon=zcdp_to_epsilon(2 * AUDIT_RHO, AUDIT_DELTA),
                          delta=AUDIT_DELTA, n_runs=1000)
    assert res.passed, str(res)


def test_octave_sub_bins_hold_equal_mass_under_the_linear_density() -> None:
    """Each piece of :func:`_equal_mass_cuts` holds 1/m of the mass under the density linear
    from ``left`` to ``right``; equal ends give equal widths."""
    for left, right in [(0.0078, 0.0008), (0.5, 2.0), (0.0, 1.0), (1.0, 0.0)]:
        cuts = marg._equal_mass_cuts(64.0, 128.0, left, right, 5)
        t = np.concatenate([[0.0], (cuts - 64.0) / 64.0])
        mass = left * t + (right - left) * t * t / 2
        assert cuts[-1] == 128.0 and np.allclose(np.diff(mass), mass[-1] / 5)
    assert np.allclose(marg._equal_mass_cuts(0.0, 1.0, 3.0, 3.0, 4), [0.25, 0.5, 0.75, 1.0])


def test_a_thin_tail_octaves_bins_crowd_towards_the_mass() -> None:
    """A range whose top octave [64, 128) holds a thin tail next to a heavy [32, 64) octave
    (xclara's second column): the top octave's sub-bins are narrow next to 64, wide towards
    128, instead of equal widths spread over its empty upper half."""
    mid = marg._N_OCT
    lo_key = mid + 1 + (5 - marg.E_MIN)  # [32, 64)
    edges = marg._fine_edges(lo_key, lo_key + 1, np.array([900.0, 300.0]), 16)
    top = np.diff(edges[edges >= 64.0])
    assert len(top) == 4 and np.all(np.diff(top) > 0) and top[0] < 0.7 * 64.0 / 4


def test_continuous_columns_get_fewer_bins_than_discrete_ones() -> None:
    """At the benchmark's sizes (ε = 1, n ≈ 2,300–10,000) a continuous float column gets
    fewer fine bins than a discrete or gridded one (the (n/σ)^(2/5) rule against
    (n/σ)^(2/3)); the plan hands each column its count."""
    rho = approx_to_zcdp(1.0, 1e-6)
    for n, d, share in [(2315, 2, 0.48), (2635, 3, 0.43), (10000, 7, 0.23)]:
        cont, fine = (f(n, share * rho, d) for f in (marg.n_continuous_bins, marg.n_fine_bins))
        assert 8 <= cont < fine
        plan = MarginalPlan(["float"], [None], fine, 0.1 * rho, share * rho, 0.0, cont)
        assert plan.bins_for("float", 0.0) == cont
        assert plan.bins_for("float", 0.01) == plan.bins_for("integer", 0.0) == fine
    assert MarginalPlan(["float"], [None], 20, 0.1, 0.1).bins_for("float", 0.0) == 20


def test_smoothing_shrinks_noise_of_a_smooth_column_and_keeps_levels() -> None:
    """The James–Stein smoothing of a float column's noisy bin counts (post-processing): on a
    smooth density it removes much of the noise; on a column of levels (every other bin
    empty) the change is signal, so it is mostly not applied."""
    rng = np.random.default_rng(0)
    sigma = 13.0
    widths = np.r_[np.full(20, 0.5), np.full(20, 1.0)]  # two octaves' bins of unequal width
    mids = np.cumsum(widths) - widths / 2
    true = 60.0 * np.exp(-((mids - 15.0) / 10.0) ** 2) * widths
    err_raw, err_smooth = [], []
    for _ in range(200):
        noisy = true + rng.normal(0.0, sigma, true.size)
        err_raw.append(np.sum((np.clip(noisy, 0, None) - true) ** 2))
        err_smooth.append(np.sum((marg._smoothed(np.clip(noisy, 0, None), widths, sigma)
                                  - true) ** 2))
    assert np.mean(err_smooth) < 0.6 * np.mean(err_raw)
    levels = np.tile([400.0, 0.0], 20)
    noisy = levels + rng.normal(0.0, sigma, levels.size)
    out = marg._smoothed(np.clip(noisy, 0, None), np.ones(levels.size), sigma)
    assert np.all(out[1::2] < 0.05 * 400.0)  # the empty bins between levels stay nearly empty
    assert np.all(marg._smoothed(np.array([5.0, 7.0]), np.ones(2), sigma) == [5.0, 7.0])


def test_an_integer_column_of_wide_bins_is_smoothed_and_one_of_levels_is_not() -> None:
    """An integer column whose fine bins hold many levels each (a time index 1..20000, bins
    of ~10^3 integers) is smoothed as a float column: over a few fits its released bin masses
    are nearer the truth than the unsmoothed ones (same noise: the smoothing is
    post-processing); a column of few levels (one bin per level) or whose bins the zoom split
    is not (:func:`~privgauss.synthesis.marginals._wide_integer_bins`)."""
    n = 4000
    rho = approx_to_zcdp(EPS, DELTA)
    plan = MarginalPlan(["integer"], [None], marg.n_fine_bins(n, 0.48 * rho, 1),
                        0.1 * rho, 0.48 * rho)
    errs: dict[float, list[float]] = {0.0: [], 2.0: []}
    for seed in range(8):
        x = np.random.default_rng(seed).integers(1, 20001, n).astype(float)[:, None]
        for levels in errs:
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(marg, "INTEGER_SMOOTH_LEVELS", levels)
                m = release_marginals(x, plan, release=Release(Accountant(ZCDP(rho)),
                                                               NoiseSource(seed)))[0]
            assert np.median(np.diff(m.edges)) >= 2.0
            truth = np.histogram(x[:, 0], m.edges)[0] / n
            errs[levels].append(float(np.sum((np.diff(m.cdf) - truth) ** 2)))
    assert np.mean(errs[2.0]) < 0.8 * np.mean(errs[0.0])  # 0.71 at these seeds
    assert marg.INTEGER_SMOOTH_LEVELS == 2.0
    assert not marg._wide_integer_bins(np.arange(-0.5, 30.0, 1.0), None)  # one bin per level
    wide = np.arange(-0.5, 3000.0, 100.0)
    assert marg._wide_integer_bins(wide, np.zeros(len(wide) - 1, dtype=np.int8))
    split = np.zeros(len(wide) - 1, dtype=np.int8)
    split[3] = 1
    assert not marg._wide_integer_bins(wide, split)  # the zoom split a bin into its levels


def test_a_many_level_integer_column_keeps_its_zeros() -> None:
    """A non-negative integer column of many levels (earnings in dollars, a quarter of them 0:
    its range starts at 0 and its bins hold many levels each) keeps its zeros: the lowest
    edge is snapped to −0.5, below 0, not to 0.5 (until 2026-11-30 every synthetic 0 came out
    as 1); the other edges are snapped as before; a stated range [0, h] keeps 0 inside too."""
    e = np.array([0.0, 1.0, 2.0, 7.3, 1024.0, 4096.0])
    assert np.allclose(marg._integer_edges(e, 3), [-0.5, 1.5, 2.5, 7.5, 1024.5, 4096.5])
    assert np.allclose(marg._integer_edges(e * 0.5, 3, 0.5), [-0.25, 0.75, 1.25, 3.75,
                                                              512.25, 2048.25])
    assert np.allclose(marg._integer_edges(np.array([0.0, 2.0, 3.0]), 8), [-0.5, 0.5, 1.5, 2.5,
                                                                        3.5])  # few levels
    rng = np.random.default_rng(0)
    n = 4000
    earn = np.where(rng.uniform(size=n) < 0.25, 0.0, np.round(rng.lognormal(9.5, 0.8, n)))
    hours = np.round(rng.uniform(0, 3000, n))
    X = np.column_stack([earn, hours])
    syn = pg.PrivateSynthesizer(epsilon=EPS, delta=DELTA, kinds=["integer", "integer"],
                                random_state=0).fit(X)
    assert syn.marginals_[0].edges[0] == -0.5
    out = syn.sample(n, random_state=1)
    assert abs(np.mean(out[:, 0] == 0) - 0.25) < 0.03  # 0 % before the fix (all 1)
    assert np.mean(out[:, 0] == 1) < 0.01
    # a stated range [0, 2e5]: its equal-width bins start below 0 (0.5 before the fix)
    syn = pg.PrivateSynthesizer(epsilon=EPS, delta=DELTA, kinds=["integer", "integer"],
                                bounds=[(0.0, 2e5), None], random_state=0).fit(X)
    assert syn.marginals_[0].edges[0] == -0.5


def _coded_table(n: int, seed: int, code_share: float) -> np.ndarray:
    """A count 0-6 (mostly 0-4) and a schooling 8-17, each with ``code_share`` of its
    records a missing-value code 99 — an octave or more past the column's range, too few per
    octave to pass the range's threshold at ε = 1 with five columns — beside an income, an
    age and a normal column."""
    rng = np.random.default_rng(seed)
    kids = np.minimum(rng.poisson(1.8, n), 6).astype(float)
    kids[rng.uniform(size=n) < code_share] = 99.0
    school = rng.integers(8, 18, n).astype(float)
    school[rng.uniform(size=n) < code_share] = 99.0
    z = rng.normal(size=(n, 3))
    return np.column_stack([kids, school, np.round(np.exp(8 + z[:, 0])),
                            30 + np.round(10 * z[:, 1]), z[:, 2]])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_missing_value_code_past_the_range_is_kept(seed: int) -> None:
    """A code far past a column's range (PSID's kids and schooling coded 98/99) used to be
    clipped into the range's end and drawn as the column's largest ordinary values: the
    synthetic rows had no codes (held-out loglik −105 against −40, a linear model's R² −0.7
    against 0.4: benchmarks/results/synth_peers_gaps.md). The tail bins (one per octave past
    the range, in the same histogram release) keep it: about the code's share of synthetic
    values at 64-127 (the code's octave), none between the range and it."""
    n = 4000
    X = _coded_table(n, seed, 0.04)
    kinds = ["integer"] * 4 + ["float"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = pg.PrivateSynthesizer(epsilon=EPS, delta=DELTA, kinds=kinds,
                                    random_state=seed).fit(X).sample(n, random_state=seed)
    for j in range(2):
        assert 0.025 < np.mean(out[:, j] >= 64) < 0.06, (j, np.mean(out[:, j] >= 64))
        assert np.mean((out[:, j] >= 32) & (out[:, j] < 64)) < 0.005
        assert out[:, j].max() < 256
    # without the tail bins (the old code) no synthetic value reaches the code's octave
    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mp.setattr(marg, "TAIL_OCTAVES", 0)
        old = pg.PrivateSynthesizer(epsilon=EPS, delta=DELTA, kinds=kinds,
                                    random_state=seed).fit(X).sample(n, random_state=seed)
    assert np.mean(old[:, :2] >= 64) < 0.005


def test_tail_bins_count_every_record_once_and_stay_empty_without_one() -> None:
    """The tail bins are bins of the one histogram release: with them every record still
    counts in exactly one bin per column (its L2 sensitivity √(2m) stands); and a column
    with nothing past its range gets no tail mass at a large budget (a false alarm must pass
    half a record, :data:`~privgauss.synthesis.marginals.TAIL_MIN_COUNT`, as well as the
    cut in noise deviations: its probability vanishes with the noise)."""
    e, keys = marg._tail_edges(16.5, marg._N_OCT + 1 + (3 - marg.E_MIN), 1.0, up=True)  # [8, 16)
    assert np.allclose(e, [16.5, 31.5, 63.5, 127.5, 255.5, 511.5, 1023.5, 2047.5, 4095.5])
    assert len(keys) == marg.TAIL_OCTAVES
    x = np.array([0.0, 3.0, 16.0, 17.0, 99.0, 5000.0, 1e9])
    full = np.concatenate([np.arange(-0.5, 16.6, 1.0), e[1:]])
    counts = marg._fine_counts(x, full, "integer")
    assert counts.sum() == len(x) and counts[-1] == 2  # 5000 and 1e9 in the last tail bin
    neg, nkeys = marg._tail_edges(-7.5, marg._N_OCT - 1 - (2 - marg.E_MIN), 1.0, up=False)
    assert np.allclose(neg[-3:], [-31.5, -15.5, -7.5]) and len(nkeys) == len(neg) - 1
    rng = np.random.default_rng(0)
    n = 3000
    X = np.column_stack([rng.poisson(2.0, n), rng.normal(50.0, 5.0, n)])
    rho = 2000.0  # the combined noise deviation ≈ 0.05 records: below TAIL_MIN_COUNT / 10
    plan = MarginalPlan(["integer", "float"], [None] * 2, marg.n_fine_bins(n, 0.4 * rho, 2),
                        0.1 * rho, 0.4 * rho)
    for s in range(8):
        ms = release_marginals(X, plan, release=Release(Accountant(ZCDP(rho)), NoiseSource(s)))
        assert ms[0].high <= 32.5 and ms[1].high <= 256.0


def test_the_tail_cut_has_its_false_alarm_rate() -> None:
    """Pure noise in a tail bin — the histogram's count (deviation σ_h) and its octave's in
    the range release (σ_r), combined by inverse variance — passes the cut of c deviations
    of the combination at rate 1 − Φ(c): a wrong combined deviation (σ_h alone, or the two
    added) would not."""
    rng = np.random.default_rng(0)
    m = 400_000
    sh, sr = 34.0, 54.0
    for c in (1.0, 2.326):
        kept = marg._tail_masses(rng.normal(0, sh, m), sh, rng.normal(0, sr, m), sr, c)
        assert abs(np.mean(kept > 0) - (1 - float(ndtr(c)))) < 0.003
    # one record past the range at a budget of no noise is kept; half a record of noise not
    tiny = marg._tail_masses(np.array([1.0, 0.4]), 1e-3, np.array([1.0, 0.4]), 1e-3, 3.0)
    assert tiny[0] == pytest.approx(1.0) and tiny[1] == 0.0
    signal = marg._tail_masses(np.full(3, 98.0), sh, np.array([98.0, 0.0, 98.0]), sr, 3.0)
    assert signal[0] == pytest.approx(98.0) and signal[1] == 0.0


def _thin_tailed_table(n: int, seed: int, per_octave: int) -> np.ndarray:
    """A money-like column, uniform on [1, 8) but for ``per_octave`` records in each of the six
    octaves [16, 1024) — forbes2000's heavy tails: each octave too thin for the range's
    threshold and for a tail bin's cut, the six together 12 % of the rows at n = 3000 —
    beside two normal columns (one of them about 0: tails on both sides)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(1.0, 8.0, n)
    k = 6 * per_octave
    x[:k] = np.exp2(4 + np.repeat(np.arange(6), per_octave) + rng.uniform(0.0, 1.0, k))
    return np.column_stack([rng.permutation(x), rng.normal(50.0, 5.0, n), rng.normal(0.0, 1.0, n)])


# forbes2000's noise at ε = 1 (five columns): a histogram bin's deviation 26.3, an octave's in
# the range release 45.3 (their inverse-variance combination 22.7)
_RHO_HIST, _RHO_RANGE = 3 / 26.3 ** 2, 3 / 45.3 ** 2


def _thin_tail_release(X: np.ndarray, seed: int) -> list[marg.Marginal]:
    n, d = X.shape
    plan = MarginalPlan(["float"] * d, [None] * d, marg.n_fine_bins(n, _RHO_HIST, d),
                        _RHO_RANGE, _RHO_HIST)
    return release_marginals(X, plan, release=Release(Accountant(ZCDP(1.0)), NoiseSource(seed)))


def test_a_heavy_tail_too_thin_per_octave_keeps_its_mass_at_the_range_end() -> None:
    """A tail of 12 % of the rows over six octaves past the range, each too thin to keep:
    main clipped those records into the range's end bin; the tail bins dropped them (the
    range's bins took the rest of n in their own proportions, the mass spread over the whole
    range: forbes2000's linear R² 0.280 → 0.034). Their noisy counts summed pass their own
    test and go back to the range's end (:func:`~privgauss.synthesis.marginals._tail_return`):
    the marginal's mass at ≥ 8 (the range's end octave and past it) is the tail's share
    again, 0-0.07 without (seeded noise, so each line is deterministic)."""
    n = 3000
    after, without = [], []
    for seed in range(6):
        X = _thin_tailed_table(n, seed, 60)
        m = _thin_tail_release(X, seed)[0]
        after.append(1.0 - float(np.interp(8.0, m.edges, m.cdf)))
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(marg, "TAIL_RETURN_BETA", 0.0)  # synpeers3's code: no record given back
            # ... and its uniform tail cut (the graded one keeps a near octave of 60 records
            # in one seed of six: the premise, each octave too thin, holds for the old cut)
            mp.setattr(marg, "TAIL_GRADED", False)
            m0 = _thin_tail_release(X, seed)[0]
        without.append(1.0 - float(np.interp(8.0, m0.edges, m0.cdf)))
    assert min(after) > 0.08 and abs(float(np.mean(after)) - 0.12) < 0.02, after
    assert max(without) < 0.08 and float(np.mean(without)) < 0.05, without


def test_a_column_without_a_tail_gives_nothing_back() -> None:
    """Columns with nothing past their ranges: the tail bins' unkept counts, pure noise,
    pass the give-back test on a side at rate ≤ :data:`~privgauss.synthesis.marginals.
    TAIL_RETURN_BETA` (0.01) only — paired with the same noise and no give-back, the marginals
    are identical in all fits but those (a prefix sum tested at one bin's deviation instead of
    its own √k would move mass on far more sides); and on m bins of pure noise the test fires
    at a rate between β/m and β (Bonferroni over the m prefix sums, each at its own deviation
    √k·sd: at sd/√2 the rate is ~0.06), giving back at least a passing sum."""
    differ = 0
    for seed in range(30):
        X = _thin_tailed_table(2000, seed, 0)
        a = _thin_tail_release(X, seed)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(marg, "TAIL_RETURN_BETA", 0.0)
            b = _thin_tail_release(X, seed)
        same = all(np.array_equal(p.edges, q.edges) and np.array_equal(p.cdf, q.cdf)
                   for p, q in zip(a, b, strict=True))
        differ += not same
    assert differ <= 3, differ
    rng = np.random.default_rng(0)
    sd, m, beta = 22.7, 8, 0.01
    noise = rng.normal(0.0, sd, (100_000, m))
    for outward in (True, False):
        back = np.array([marg._tail_return(row, np.zeros(m), sd, beta, outward)
                         for row in noise])
        assert 0.004 < np.mean(back > 0) <= beta, np.mean(back > 0)
        first = float(ndtri(1.0 - beta / m)) * sd  # the one-bin prefix's cut, the lowest
        assert np.all((back == 0) | (back >= first))
    # a kept bin is not given back; the unkept bins' prefix sums, from the range outwards
    kept = np.array([120.0, 0, 0, 0])
    assert marg._tail_return(np.array([120.0, 70, 60, 50]), kept, sd, beta) == 180.0
    assert marg._tail_return(np.array([120.0, 30, 10, -5]), kept, sd, beta) == 0.0
    # a bottom side's bins are stored farthest first: its prefixes start at the last
    assert marg._tail_return(np.array([-40.0, -40, 0, 75]), np.zeros(4), sd, beta,
                             outward=False) == 75.0
    assert marg._tail_return(np.array([-40.0, -40, 0, 75]), np.zeros(4), sd, beta) == 0.0
    # the given-back records go to the range's end bin, as a share of public n
    e, cdf = marg._with_tails(np.array([0.0, 1.0, 2.0]), np.array([0.0, 0.5, 1.0]),
                              (np.array([2.0, 4.0]), np.zeros(1), 100.0), None, 1000)
    assert np.allclose(e, [0.0, 1.0, 2.0]) and np.allclose(cdf, [0.0, 0.45, 1.0])
    e, cdf = marg._with_tails(np.array([0.0, 1.0, 2.0]), np.array([0.0, 0.5, 1.0]), None,
                              (np.array([-4.0, 0.0]), np.zeros(1), 100.0), 1000)
    assert np.allclose(cdf, [0.0, 0.55, 1.0])


def test_the_spread_places_a_thinning_tail_in_its_octaves() -> None:
    """:func:`~privgauss.synthesis.marginals._tail_spread`: the unkept bins' most significant
    passing prefix (largest sum/√k) is spread over its bins, each its positive count less
    the universal threshold √(2 ln m)·sd (m unkept bins), capped by those nearer the range;
    kept bins are skipped; nothing passing spreads nothing; a bottom side's bins are stored
    farthest first. Each case fails if the prefix, the shrinkage, the cap or the order were
    wrong."""
    sd, cut = 20.0, 3.0
    z = np.zeros(4)
    lam = math.sqrt(2.0 * math.log(4)) * sd  # 33.3 records
    # all four prefixes pass (120 ≥ 60, 190 ≥ 84.9, ...); sum/√k grows to k = 4
    assert np.allclose(marg._tail_spread(np.array([120.0, 70, 60, 50]), z, sd, cut),
                       np.array([120, 70, 60, 50]) - lam)
    # k = 3 is the most significant (210/√3 = 121 > 240/2): a count above a nearer one is
    # capped by it
    assert np.allclose(marg._tail_spread(np.array([100.0, 40, 70, 30]), z, sd, cut),
                       [100 - lam, 40 - lam, 40 - lam, 0])
    # a bin at or below the threshold ends the spread
    assert np.allclose(marg._tail_spread(np.array([120.0, 80, -10, 90]), z, sd, cut),
                       [120 - lam, 80 - lam, 0, 0])
    assert np.allclose(marg._tail_spread(np.array([100.0, -5, 70, 80]), z, sd, cut),
                       [100 - lam, 0, 0, 0])
    # kept bins are not spread again: the prefixes start at the first unkept bin (m = 3)
    lam3 = math.sqrt(2.0 * math.log(3)) * sd
    assert np.allclose(marg._tail_spread(np.array([120.0, 70, 60, 50]),
                                         np.array([120.0, 0, 0, 0]), sd, cut),
                       [0, 70 - lam3, 60 - lam3, 50 - lam3])
    # nothing passes its √k·sd·cut: nothing spread
    assert np.allclose(marg._tail_spread(np.array([30.0, 20, 10, 5]), z, sd, cut), 0.0)
    # bottom side: from the range (the last bin) outwards — 70, 100 (capped to 70), 40
    assert np.allclose(marg._tail_spread(np.array([30.0, 40, 100, 70]), z, sd, cut,
                                         outward=False), [0, 40 - lam, 70 - lam, 70 - lam])
    # as the noise vanishes so does the shrinkage (and every bin holding a record is kept by
    # the tail cut itself, :func:`_tail_masses`, before any spread)
    assert np.allclose(marg._tail_spread(np.array([5.0, 3, 1, 0]), z, 1e-9, cut), [5, 3, 0, 0])


def test_the_spread_is_capped_by_the_range_end_and_the_rest_given_back() -> None:
    """:func:`~privgauss.synthesis.marginals._with_tails` with a spread side: each spread
    bin is capped by the records of the range's end octave (CDF mass past the bound times
    n); what the capped spread does not hold of the given-back records goes to the range's
    end bin, so the side's tail mass is the give-back's, as before the spread."""
    e0, c0 = np.array([0.0, 1.0, 2.0]), np.array([0.0, 0.5, 1.0])
    top = (np.array([2.0, 4.0, 8.0]), np.zeros(2), 100.0, np.array([60.0, 30.0]), 1.0)
    e, cdf = marg._with_tails(e0, c0, top, None, 1000)  # end octave [1, 2): 500 records
    assert np.allclose(e, [0, 1, 2, 4, 8])
    assert np.allclose(cdf, [0.0, 0.45, 0.91, 0.97, 1.0])  # 10 records back at the end
    # an end octave of 10 records caps each spread bin at 10: 80 go back to the end bin
    e, cdf = marg._with_tails(e0, np.array([0.0, 0.99, 1.0]), top, None, 1000)
    assert np.allclose(cdf, [0.0, 0.891, 0.98, 0.99, 1.0])
    # an empty end octave (a scale of 1-7 in a range to 16.5): nothing spread past the range,
    # the records given back to its end as without the spread
    e, cdf = marg._with_tails(e0, np.array([0.0, 1.0, 1.0]), top, None, 1000)
    assert np.allclose(e, [0, 1, 2]) and np.allclose(cdf, [0.0, 0.9, 1.0])
    # a bottom side's bound is the end octave's inner (upper) edge
    bottom = (np.array([-8.0, -4.0, 0.0]), np.zeros(2), 100.0, np.array([30.0, 60.0]), 1.0)
    e, cdf = marg._with_tails(np.array([0.0, 1.0, 2.0]), c0, None, bottom, 1000)
    assert np.allclose(e, [-8, -4, 0, 1, 2])
    assert np.allclose(cdf, [0.0, 0.03, 0.09, 0.55, 1.0])


def test_a_heavy_tail_past_the_range_is_spread_into_its_octaves() -> None:
    """Lognormal columns (σ = 1.5 and 2, n = 3000: 1-4 % of the rows past a range ending at
    16-128, over octaves each too thin to keep) at forbes2000's noise. Without the spread
    (:data:`~privgauss.synthesis.marginals.TAIL_SPREAD` False) no synthetic value lies past
    the range: the records given back sit in its end bin. With it, in the fits whose prefix
    sums pass, part of that mass lies past the range, in the tail's octaves — never more
    than the real rows' share there — and the end bin holds less of it (seeded, so each fit
    is deterministic: 6 of the 16 spread). Both arms without the geometric continuation
    (:data:`~privgauss.synthesis.marginals.TAIL_DECAY` 0, tested in test_tail_decay.py)."""
    spread = 0
    for sigma in (1.5, 2.0):
        for seed in range(8):
            rng = np.random.default_rng(seed)
            X = np.column_stack([rng.lognormal(0.0, sigma, 3000), rng.normal(50.0, 5.0, 3000),
                                 rng.normal(0.0, 1.0, 3000)])
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(marg, "TAIL_DECAY", 0.0)
                on = _thin_tail_release(X, seed)[0]
                mp.setattr(marg, "TAIL_SPREAD", False)
                off = _thin_tail_release(X, seed)[0]
            top = float(off.edges[-1])
            past_on = 1.0 - float(np.interp(top, on.edges, on.cdf))
            past_off = 1.0 - float(np.interp(top, off.edges, off.cdf))
            end_on = float(np.interp(top, on.edges, on.cdf) - np.interp(top / 2, on.edges, on.cdf))
            end_off = float(np.interp(top, off.edges, off.cdf)
                            - np.interp(top / 2, off.edges, off.cdf))
            assert past_off == 0.0
            assert 0.0 <= past_on <= float(np.mean(X[:, 0] > top)), (sigma, seed)
            assert end_on <= end_off + 1e-12
            spread += past_on > 0
    assert spread >= 4, spread


def test_columns_without_a_tail_get_nothing_spread_past_their_ranges() -> None:
    """Columns with nothing past their ranges (30 seeded fits of three columns, one of them
    two-sided, at forbes2000's noise): the spread changes no marginal and puts no mass past a
    range — a give-back false alarm's noise spread into the tail octaves is what the
    shrinkage and the end octave's cap exist to stop (without them, immigration's one false
    alarm put 202 records of a 1-7 scale at 16-1,023: benchmarks/results/
    synth_peers_gaps.md)."""
    for seed in range(30):
        X = _thin_tailed_table(2000, seed, 0)
        on = _thin_tail_release(X, seed)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(marg, "TAIL_SPREAD", False)
            off = _thin_tail_release(X, seed)
        for p, q in zip(on, off, strict=True):
            assert np.array_equal(p.edges, q.edges) and np.array_equal(p.cdf, q.cdf), seed


def test_the_zoom_does_not_count_again_the_records_of_the_tail_bins() -> None:
    """A record past a side with tail bins counts in a tail bin: the zoom's sub-bins of the
    range's end bin must not count it too (they clipped it into the end's last level: a
    code 99 past a range of 0-19 gave level 19 its 100 codes on top of its 24 records, mass
    counted twice — once kept in the tail bin, once at the range's end). At a budget of no
    noise the split bin's sub-bins hold exactly its records."""
    rng = np.random.default_rng(0)
    x = np.concatenate([np.repeat([3.0, 12.0, 15.0], 500), rng.integers(0, 20, 400),
                        np.full(100, 99.0)])
    e = np.array([-0.5, 9.5, 19.5])
    top = (x >= 9.5) & (x < 19.5)
    counts = np.array([float(np.sum(x < 9.5)), float(np.sum(top))])
    plan = MarginalPlan(["integer"], [None], 2, 1.0, 1.0, rho_zoom=1e6)
    for tailed, extra in ((None, 100.0), ([(False, True)], 0.0)):
        e2, c2, _ = marg._zoom(x[:, None], [(e, counts, None)], plan, [1.0], 1e3, [False],
                               [None], Release(Accountant(ZCDP(2e6)), NoiseSource(0)),
                               tailed)[0]
        assert len(e2) == 21  # both bins split into their levels
        assert c2[-1] == pytest.approx(np.sum(x == 19.0) + extra, abs=0.01)
        assert float(c2[e2[:-1] >= 9.5].sum()) == pytest.approx(np.sum(top) + extra, abs=0.02)


# ------------------------------------------------------------------------------- resolution


def test_types_release_a_float_columns_resolution() -> None:
    """One ``types`` charge resolves integer, a float column on the 0.5 grid (a few values
    off it, below the tolerance, are rounded onto it), one on the 0.01 grid and a continuous
    one; a float column's synthetic values then lie on its grid, within its range, and each
    grid value falls inside one bin (edges at half-steps)."""
    rng = np.random.default_rng(0)
    n = 4000
    halves = rng.integers(0, 40, n) / 2.0
    halves[:20] += 0.25  # 0.5 % off the grid
    X = np.column_stack([rng.integers(0, 30, n).astype(float), halves,
                         np.round(rng.normal(5.0, 1.0, n), 2), rng.normal(5.0, 1.0, n)])
    rho = approx_to_zcdp(EPS, DELTA)
    acct = Accountant(ZCDP(rho))
    kinds, steps = marg.release_types(X, ["auto"] * 4, 0.02 * rho,
                                      release=Release(acct, NoiseSource(0)))
    assert kinds == ["integer", "float", "float", "float"] and steps == [0.0, 0.5, 0.01, 0.0]
    assert [e.step for e in acct.ledger] == ["types"]
    plan = MarginalPlan(["auto"] * 4, [None] * 4, marg.n_fine_bins(n, 0.4 * rho, 4),
                        0.1 * rho, 0.4 * rho, 0.02 * rho)
    ms = release_marginals(X, plan, release=Release(Accountant(ZCDP(rho)), NoiseSource(1)))
    assert [m.step for m in ms] == [0.0, 0.5, 0.01, 0.0]
    u = np.random.default_rng(2).uniform(size=5000)
    for m in ms[1:3]:
        x = m.from_uniform(u)
        assert np.allclose(x / m.step, np.rint(x / m.step), atol=1e-9)
        assert x.min() >= m.low and x.max() <= m.high
        half = m.edges / m.step - 0.5
        assert np.allclose(half, np.rint(half), atol=1e-9)
    x = ms[3].from_uniform(u)
    assert len(np.unique(x)) > 4000  # a continuous column is not rounded
    # the 0.5-grid column's levels are reproduced: most synthetic mass on the true levels
    syn = ms[1].from_uniform(u)
    assert np.mean(np.isin(syn, np.unique(halves[20:]))) > 0.95


def test_a_marginals_step_round_trips_and_old_models_load() -> None:
    m = marg.Marginal("float", np.array([-0.25, 0.25, 0.75]), np.array([0.0, 0.5, 1.0]), 0.5)
    d = m.to_dict()
    assert d["step"] == 0.5 and marg.Marginal.from_dict(d).step == 0.5
    d.pop("step")  # a model saved before resolutions: continuous
    assert marg.Marginal.from_dict(d).step == 0.0
    with pytest.raises(ValueError):
        marg.Marginal.from_dict({**d, "step": -1.0})
    assert set(m.from_uniform(np.linspace(0, 1, 101)).tolist()) == {0.0, 0.5}


def test_a_smooth_continuous_column_gets_a_cubic_inverse_cdf() -> None:
    """A normal column (its bins' differences mostly noise: λ ≥ SMOOTH_LAMBDA) is marked smooth
    and drawn through the monotone cubic inverse CDF, which keeps every bin's released mass; a
    float column of 20 levels off every grid of the ladder (λ near 0) keeps the lines."""
    rng = np.random.default_rng(0)
    n = 3000
    levels = (np.arange(20) + 0.5625) / 12.0
    X = np.column_stack([rng.normal(0.0, 1.0, n), levels[rng.binomial(19, 0.5, n)]])
    rho = approx_to_zcdp(EPS, DELTA)
    plan = MarginalPlan(["auto"] * 2, [None] * 2, marg.n_fine_bins(n, 0.48 * rho, 2),
                        0.1 * rho, 0.48 * rho, 0.02 * rho)
    ms = release_marginals(X, plan, release=Release(Accountant(ZCDP(rho)), NoiseSource(3)))
    assert [m.step for m in ms] == [0.0, 0.0]
    assert ms[0].smooth and not ms[1].smooth
    u = np.random.default_rng(1).uniform(size=200_000)
    x = ms[0].from_uniform(u)
    mass = np.histogram(x, ms[0].edges)[0] / len(u)
    assert np.max(np.abs(mass - np.diff(ms[0].cdf))) < 0.004
    assert np.all(np.diff(ms[0].from_uniform(np.linspace(0, 1, 1001))) >= 0)
    assert marg.Marginal.from_dict(ms[0].to_dict()).smooth


def test_a_range_false_alarm_far_from_the_data_is_ignored() -> None:
    """An empty octave's noisy count passing the range threshold (probability RANGE_BETA per
    fit) hundreds of octaves from the data used to stretch the range to -2^190 and put every
    synthetic value there (wavesurge, 1 fit in 18: held-out loglik -125 instead of -1.2); it
    must now pass the far threshold. Octaves near the data, a zero-only central bin and a
    genuine far cluster passing the far threshold still count."""
    mid = marg._N_OCT
    sigma, thr, far = 30.0, 120.0, 190.0
    noisy = np.random.default_rng(0).normal(0.0, sigma, marg.N_RANGE_BINS).clip(None, 100.0)
    pos = mid + 1 - marg.E_MIN  # key of the octave [1, 2)
    noisy[pos - 1:pos + 4] = [300.0, 900.0, 800.0, 400.0, 130.0]  # [0.5, 16)
    noisy[mid - 190] = 150.0  # a false alarm at about -2^-310 ... far from [0.5, 16)
    noisy[mid + 700] = 150.0  # and one at 2^199
    lo, hi = marg._octaves_of_range(noisy, thr, far)
    assert (lo, hi) == (mid, pos + 4)  # down to zero (factor >= 4), up to [16, 32)
    assert marg._octaves_of_range(noisy, thr)[1] == mid + 701  # the old rule: to 2^200
    noisy[mid + 700] = 200.0  # a far cluster passing the far threshold is kept
    assert marg._octaves_of_range(noisy, thr, far)[1] == mid + 701
    zeros = np.zeros(marg.N_RANGE_BINS)
    zeros[mid], zeros[pos + 2] = 2000.0, 500.0  # mostly exact zeros, some values in [4, 8)
    assert marg._octaves_of_range(zeros, thr, far) == (mid, pos + 3)


def test_a_spurious_bin_at_the_supports_end_is_dropped() -> None:
    """An end bin passing two deviations (noise alone: ~2 % of fits per end) but not the
    Bonferroni cut is dropped when isolated beyond empty bins (the range's margin octave past
    the data); a thin tail bin next to the data, however wide, or one passing the Bonferroni
    cut, is kept."""
    sigma = 10.0
    edges = np.array([0.0, 1, 2, 3, 4, 5, 6, 7, 8, 20, 21, 22])  # bin 8 spans [8, 20)
    counts = np.array([50.0, 200, 300, 300, 200, 120, 60, 25, 0, 0, 24])
    p = np.diff(marg._cdf_of_counts(counts, sigma, "float", edges))
    assert p[-1] == 0 and p[7] > 0  # the isolated end bin goes; the thin tail bin 7 stays
    assert np.diff(marg._cdf_of_counts(counts, sigma))[-1] > 0  # no edges: the 2-sigma rule
    counts[-1] = 40.0  # above the Bonferroni cut (2.84 sigma for 11 bins): kept
    assert np.diff(marg._cdf_of_counts(counts, sigma, "float", edges))[-1] > 0
    edges = np.array([0.0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 40])  # a wide tail bin next to
    counts = np.array([50.0, 200, 300, 300, 200, 120, 60, 40, 30, 25, 24])  # the data: kept
    assert np.diff(marg._cdf_of_counts(counts, sigma, "float", edges))[-1] > 0


def test_whole_number_columns_hold_no_negative_zeros() -> None:
    """Rounding a synthetic value in (−½, 0) gives −0.0, which a CSV file shows as "-0.0" in
    a 0/1 or count column: sample returns +0.0 instead."""
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.normal(size=3000), (rng.random(3000) < 0.3).astype(float),
                         rng.integers(0, 5, 3000).astype(float)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = pg.PrivateSynthesizer(epsilon=1.0, delta=1e-6, random_state=0).fit(X)
    S = s.sample(3000, random_state=0)
    for j in (1, 2):
        zeros = S[:, j] == 0
        assert zeros.sum() > 500 and not np.signbit(S[zeros, j]).any()
