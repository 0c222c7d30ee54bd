"""The command line end to end on files, including bad files (CliRunner)."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from _helpers import all_axes, assert_readable_panels
from click.testing import CliRunner

import privgauss as pg
from privgauss.cli import main
from privgauss.datasets import make_mixture
from privgauss.estimators import mixture as mixture_module
from privgauss.estimators.gaussian import METHODS as GAUSSIAN_METHODS

MIX_N, MIX_EPS = 15_000, 8.0  # sample-aggregate needs ~1.3e4 rows at d = 2, k = 2, eps = 8


def _write_csv(path: Path, X: np.ndarray, names: str) -> None:
    np.savetxt(path, X, delimiter=",", header=names, comments="")


def _invoke(*args: str) -> object:
    return CliRunner().invoke(main, [str(a) for a in args])


def _leftovers(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.startswith(".") or p.suffix == ".tmp"]


@pytest.fixture()
def files(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    _write_csv(tmp_path / "data.csv", rng.normal(100.0, 2.0, size=(3000, 3)), "a,b,c")
    _write_csv(tmp_path / "pub.csv", rng.normal(100.0, 2.0, size=(8, 3)), "a,b,c")
    np.save(tmp_path / "data.npy", rng.normal(100.0, 2.0, size=(3000, 3)))
    return tmp_path


@pytest.fixture(scope="module")
def mixture_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("mix")
    mix = make_mixture(MIX_N + 30, 2, 2, separation=6.0, random_state=3)
    _write_csv(folder / "mix.csv", mix.X[30:], "u,v")
    _write_csv(folder / "mixpub.csv", mix.X[:30], "u,v")
    return folder


# ------------------------------------------------------------------------------------------------
# help, demo
# ------------------------------------------------------------------------------------------------


def test_help_lists_every_command_and_each_has_examples() -> None:
    out = _invoke("--help")
    assert out.exit_code == 0
    for cmd in ("demo", "fit-gaussian", "fit-mixture", "requirements", "experiment", "audit"):
        assert cmd in out.output
        res = _invoke(cmd, "--help")
        assert res.exit_code == 0 and "Example" in res.output, cmd
    for kind in ("gaussian", "mixture"):
        assert "Example" in _invoke("requirements", kind, "--help").output


def test_method_choices_come_from_the_registries(monkeypatch: pytest.MonkeyPatch) -> None:
    assert all(m in _invoke("fit-gaussian", "--help").output for m in GAUSSIAN_METHODS)
    spec = mixture_module.METHODS["sample-aggregate"]
    monkeypatch.setitem(mixture_module.METHODS, "brand-new", spec)
    assert "brand-new" in _invoke("fit-mixture", "--help").output


@pytest.mark.filterwarnings("default::privgauss.warnings.SeededNoiseWarning")
def test_demo_prints_real_numbers_and_writes_a_plot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # one mixture method keeps the test fast; the demo runs whatever the registry holds
    monkeypatch.setattr(
        pg.methods, "MIXTURE", {"sample-aggregate": mixture_module.METHODS["sample-aggregate"]}
    )
    import privgauss.plots

    figures = []  # the demo's figure, to check its layout
    real_plot_fits = privgauss.plots.plot_fits

    def spy(*args: object, **kwargs: object) -> object:
        figures.append(real_plot_fits(*args, **kwargs))
        return figures[-1]

    monkeypatch.setattr(privgauss.plots, "plot_fits", spy)
    png = tmp_path / "demo.png"
    res = _invoke("demo", "--n", 1000, "--d", 3, "--mixture-n", MIX_N, "--mixture-epsilon",
                  MIX_EPS, "--plot", png)
    assert res.exit_code == 0, res.output
    # one panel per method with equal axes, titled with the method and its error; the legend
    # outside every panel
    (fig,) = figures
    assert_readable_panels(fig)
    gauss, mixture = fig.subfigs
    titles = [ax.get_title() for ax in all_axes(gauss)]
    assert [t.split("\n")[0] for t in titles] == ["public", "public", "coinpress", "histogram"]
    assert all("mean err 0." in t for t in titles)
    (panel,) = [p for p in mixture.subfigs if p.get_visible()]
    assert panel.get_suptitle().startswith("sample-aggregate\n")
    assert "max comp. TV 0.0" in panel.get_suptitle() and len(panel.axes) == 2
    lines = res.output.splitlines()
    gauss = [ln for ln in lines if ln.startswith(("public", "coinpress", "histogram"))]
    assert len(gauss) == 4
    mean_errors = [float(ln.split()[-3]) for ln in gauss]
    assert all(0 < e < 0.5 for e in mean_errors)  # Mahalanobis error at n = 1000, d = 3
    mix = next(ln for ln in lines if ln.startswith("sample-aggregate"))
    tv, weight_err = float(mix.split()[-3]), float(mix.split()[-2])
    assert tv < 0.1 and weight_err < 0.05
    assert png.stat().st_size > 10_000 and not _leftovers(tmp_path)
    # the demo seeds its noise and says so; it does not tell the user to omit a --seed they
    # did not pass (issue #29), and the histogram row states its epsilon
    assert "seeded noise (seed 0)" in lines[0] and "--seed" not in res.output
    eps = pg.privacy.zcdp_to_epsilon(0.5, 1e-6)  # the demo's default rho, at delta 1e-6
    assert f"({eps:.3g}, 1e-6)-DP" in next(ln for ln in lines if ln.startswith("histogram"))


# ------------------------------------------------------------------------------------------------
# fit-gaussian / fit-mixture
# ------------------------------------------------------------------------------------------------


def test_fit_gaussian_writes_a_loadable_model_and_a_plot(
    files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import privgauss.plots

    labels: list[str] = []  # the legend labels of the plot
    real_plot_models = privgauss.plots.plot_models

    def spy(models: dict, *args: object, **kwargs: object) -> object:
        labels.extend(models)
        return real_plot_models(models, *args, **kwargs)

    monkeypatch.setattr(privgauss.plots, "plot_models", spy)
    out_path, png = files / "model.json", files / "fit.png"
    res = _invoke("fit-gaussian", files / "data.csv", "--rho", 0.5, "--public", files / "pub.csv",
                  "--seed", 1, "--out", out_path, "--plot", png, "--dims", "a,c")
    assert res.exit_code == 0, res.output
    model = json.loads(out_path.read_text())
    assert model["method"] == "public"
    assert np.allclose(model["mean"], 100.0, atol=0.5)
    assert model["privacy"]["spent"]["rho"] == pytest.approx(0.5)
    assert model["privacy"]["neighbours"].startswith("replace-one")
    g = pg.load(out_path)
    assert np.allclose(g.mean_, model["mean"])
    assert g.score_samples(np.full((1, 3), 100.0)).shape == (1,)
    assert png.stat().st_size > 5000 and "private rows" not in res.output
    assert labels == ["DP fit (method public)"]  # not "private (public)" (issue #29)
    assert not _leftovers(files)


def test_fit_gaussian_columns_npy_and_stdout(files: Path) -> None:
    res = _invoke("fit-gaussian", files / "data.csv", "--columns", "a,c", "--epsilon", 2,
                  "--delta", 1e-6, "--seed", 0)
    assert res.exit_code == 0, res.output
    assert len(json.loads(res.output)["mean"]) == 2
    res = _invoke("fit-gaussian", files / "data.npy", "--epsilon", 2, "--delta", 1e-6, "--seed", 0)
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["method"] == "histogram"


def test_fit_gaussian_parquet(files: Path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    X = np.random.default_rng(5).normal(size=(2000, 2))
    pd.DataFrame({"p": X[:, 0], "q": X[:, 1], "s": ["x"] * 2000}).to_parquet(files / "d.parquet")
    res = _invoke("fit-gaussian", files / "d.parquet", "--columns", "p,q", "--rho", 0.5,
                  "--mean-bound", 10, "--cov-bounds", 0.1, 10, "--seed", 0)
    assert res.exit_code == 0, res.output
    assert np.allclose(json.loads(res.output)["mean"], 0.0, atol=0.3)
    res = _invoke("fit-gaussian", files / "d.parquet", "--rho", 0.5)
    assert res.exit_code == 2 and "'s' is not numeric" in res.output


def test_fit_mixture_end_to_end(mixture_csv: Path) -> None:
    out_path, png = mixture_csv / "mix.json", mixture_csv / "mix.png"
    res = _invoke("fit-mixture", mixture_csv / "mix.csv", "-k", 2, "--epsilon", MIX_EPS,
                  "--delta", 1e-6, "--method", "sample-aggregate", "--seed", 0, "--out", out_path,
                  "--plot", png, "--show-data")
    assert res.exit_code == 0, res.output
    assert "keep it local" in res.output  # --show-data warns that the picture is not private
    m = pg.load(out_path)
    assert m.method_ == "sample-aggregate" and np.allclose(sorted(m.weights_), 0.5, atol=0.05)
    assert m.predict(m.means_).tolist() == [0, 1]
    assert png.stat().st_size > 10_000


# ------------------------------------------------------------------------------------------------
# bad input: one line, non-zero exit, nothing written
# ------------------------------------------------------------------------------------------------

BAD_CASES = [
    ("missing column", None, ["--columns", "a,zz"], "no column"),
    ("non-numeric cell", "a,b,c\n1,x,3\n2,3,4\n", [], "non-numeric"),
    ("empty cell", "a,b,c\n1,,3\n2,3,4\n", [], "non-numeric or empty"),
    ("empty file", "", [], "empty"),
    ("header only", "a,b,c\n", [], "empty"),
    ("ragged rows", "a,b,c\n1,2,3\n2,3\n", [], "cells"),
    # both files name their columns: matched by name (before: by position, refused by count)
    ("public lacking a column", None, ["--public", "PUB2"], "public file has no column(s) ['c']"),
    ("public of wrong dimension", None, ["--public", "PUBNPY"], "features"),
    ("bad header", "a,1,c\n1,2,3\n2,3,4\n", [], "--no-header"),
    ("columns listed twice", None, ["--columns", "a,a"], "more than once"),
    ("no budget", None, ["NOBUDGET"], "budget"),
    ("negative budget", None, ["--rho", "-1", "NOBUDGET"], "rho"),
    ("budget above the largest", None, ["--epsilon", "1e101", "NOBUDGET"],
     "--epsilon must be a number > 0 and at most 1e+100"),
    ("missing file", "MISSING", [], "not found"),
    ("unknown suffix", "XLSX", [], "unsupported file type"),
]


@pytest.mark.parametrize("command", ["fit-gaussian", "fit-mixture"])
@pytest.mark.parametrize("case, content, extra, message", BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_input_one_line_nonzero_exit_no_output(
    files: Path, command: str, case: str, content: str | None, extra: list[str], message: str
) -> None:
    data = files / "data.csv"
    if content == "MISSING":
        data = files / "nope.csv"
    elif content == "XLSX":
        data = files / "data.xlsx"
        data.write_text("a\n1\n")
    elif content is not None:
        data = files / "bad.csv"
        data.write_text(content)
    args = list(extra)
    if "PUB2" in args:
        (files / "pub2.csv").write_text("a,b\n1,2\n3,4\n5,6\n")
        args[args.index("PUB2")] = str(files / "pub2.csv")
    if "PUBNPY" in args:  # a .npy file names no columns: matched by position
        np.save(files / "pub2.npy", np.ones((3, 2)))
        args[args.index("PUBNPY")] = str(files / "pub2.npy")
    budget = ["--epsilon", "1", "--delta", "1e-6"]
    if "NOBUDGET" in args:
        args.remove("NOBUDGET")
        budget = []
    k = ["-k", "2"] if command == "fit-mixture" else []
    out_path, png = files / "out.json", files / "out.png"
    res = _invoke(command, data, *k, *budget, *args, "--out", out_path, "--plot", png)
    assert res.exit_code == 2, res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.output
    assert message in lines[0].lower()
    assert not out_path.exists() and not png.exists() and not _leftovers(files)


def test_failure_while_writing_leaves_nothing(files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import privgauss.plots

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(privgauss.plots, "plot_models", interrupted)
    out_path, png = files / "m.json", files / "m.png"
    res = _invoke("fit-gaussian", files / "data.csv", "--rho", 0.5, "--public", files / "pub.csv",
                  "--seed", 0, "--out", out_path, "--plot", png)
    # the fit had spent its budget before the plot was drawn: status 3, saying so
    assert res.exit_code == 3 and "interrupted" in res.output, res.output
    assert "after spending 0.5-zCDP, which stays spent" in res.output
    assert not out_path.exists() and not png.exists() and not _leftovers(files)


def test_unusable_outputs_are_refused_before_fitting(
    files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_fit(*args: object, **kwargs: object) -> None:
        raise AssertionError("fit ran: budget would be spent before the output was checked")

    monkeypatch.setattr(pg.PrivateGaussian, "fit", no_fit)
    base = ["fit-gaussian", files / "data.csv", "--rho", 0.5]
    res = _invoke(*base, "--out", files / "nofolder" / "m.json")
    assert res.exit_code == 2 and "folder does not exist" in res.output
    res = _invoke(*base, "--plot", files / "p.png", "--dims", "a,a")
    assert res.exit_code == 2 and "--dims" in res.output
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    res = _invoke(*base, "--plot", files / "p.png")
    assert res.exit_code == 2 and "pip install" in res.output
    assert not _leftovers(files) and not (files / "p.png").exists()


def test_bad_dims_and_too_few_mixture_rows(files: Path) -> None:
    res = _invoke("fit-gaussian", files / "data.csv", "--rho", 0.5, "--public", files / "pub.csv",
                  "--plot", files / "p.png", "--dims", "a,a")
    assert res.exit_code == 2 and "--dims" in res.output and not (files / "p.png").exists()
    # 1,000 rows (em's localisation needs about 1,700 at d = 3, ε = 1; the 3,000 of data.csv
    # are enough since it is sized from the joint histograms the fit runs)
    _write_csv(files / "small.csv", np.random.default_rng(1).normal(100.0, 2.0, size=(1000, 3)),
               "a,b,c")
    res = _invoke("fit-mixture", files / "small.csv", "-k", 2, "--epsilon", 1, "--delta", 1e-6,
                  "--out", files / "m.json")
    assert res.exit_code == 2 and "needs" in res.output and not (files / "m.json").exists()


# ------------------------------------------------------------------------------------------------
# requirements, experiment, audit
# ------------------------------------------------------------------------------------------------


def test_requirements_gaussian_verdicts() -> None:
    big = _invoke("requirements", "gaussian", "public", "--d", 10, "--rho", 0.5, "--n", 1e9)
    small = _invoke("requirements", "gaussian", "public", "--d", 10, "--rho", 0.5, "--n", 100)
    assert big.exit_code == 0 and small.exit_code == 1  # "too few" is a verdict a script can test
    assert "Thm 3.7" in big.output and "is enough" in big.output and "too few" in small.output
    bound = pg.theory.public_gaussian_n(10, 0.1, 0.05, rho=0.5).n
    assert f"{bound:.3g}" in big.output
    res = _invoke("requirements", "gaussian", "coinpress", "--d", 3, "--rho", 0.5)
    assert res.exit_code == 2 and "--mean-bound" in res.output
    res = _invoke("requirements", "gaussian", "histogram", "--d", 3, "--rho", 0.5)
    assert res.exit_code == 2 and "--delta" in res.output


def test_requirements_coinpress_reads_its_plan_with_cov_bounds() -> None:
    # the plan check a fit runs before spending (issue 17: a loose prior on a small table)
    args = ("requirements", "gaussian", "coinpress", "--d", 30, "--rho", 0.5,
            "--mean-bound", 1e6, "--cov-bounds", 1e-6, 1e10)
    facts = pg.methods.Facts("gaussian", pg.ZCDP(0.5), 455, 30, mean_bound=1e6,
                             cov_bounds=(1e-6, 1e10))
    need = pg.methods.requirements("gaussian", "coinpress", facts).n_needed
    small, big = _invoke(*args, "--n", 455), _invoke(*args, "--n", 2 * need)
    assert small.exit_code == 1 and "too few" in small.output
    assert big.exit_code == 0 and "is enough" in big.output
    assert f"{need:.3g}" in small.output and "prior's worst case" in small.output
    bad = _invoke(*args[:-2], "--cov-bounds", 10, 1)
    assert bad.exit_code == 2 and "--cov-bounds" in bad.output


def test_requirements_mixture_matches_library() -> None:
    from privgauss.mixture.requirements import kssu_requirements

    expected = kssu_requirements(n=50_000, d=2, k=3, epsilon=1.0, delta=1e-6)
    res = _invoke("requirements", "mixture", "kssu", "--n", 5e4, "--d", 2, "--k", 3,
                  "--epsilon", 1, "--delta", 1e-6)
    assert res.exit_code == (0 if expected.ok else 1), res.output
    assert f"{expected.n_needed:.3g}" in res.output
    assert ("is enough" if expected.ok else "too few") in res.output
    res = _invoke("requirements", "mixture", "kssu", "--n", 5e4, "--d", 2, "--k", 3, "--rho", 1)
    assert res.exit_code == 2 and "--delta" in res.output


def test_experiment_coinpress_covariance_writes_csv_and_plot(tmp_path: Path) -> None:
    res = _invoke("experiment", "coinpress-covariance", "--quick", "--trials", 4, "--out", tmp_path)
    assert res.exit_code == 0, res.output
    assert "CoinPress t=3 (published): n=3000: 0.306" in res.output
    with open(tmp_path / "coinpress-covariance.csv", newline="") as fh:
        table = list(csv.DictReader(fh))
    assert {r["n"] for r in table} == {"3000", "3909", "5273", "6636", "8000"}
    for n in ("3000", "8000"):
        err = {r["method"]: float(r["trimmed_mean"]) for r in table if r["n"] == n}
        assert err["non-private (X'X/n)"] < err["ours"] < 1.6 * err["non-private (X'X/n)"]
    assert (tmp_path / "coinpress-covariance.png").stat().st_size > 10_000
    assert not _leftovers(tmp_path)


def test_experiment_rejects_bad_trials(tmp_path: Path) -> None:
    res = _invoke("experiment", "coinpress-covariance", "--trials", 1, "--out", tmp_path)
    assert res.exit_code == 2 and "--trials" in res.output
    assert _invoke("experiment", "no-such", "--out", tmp_path).exit_code == 2


def test_audit_passes_a_correct_mechanism_and_flags_a_broken_one() -> None:
    ok = _invoke("audit", "laplace-mechanism", "--epsilon", 1, "--runs", 20000)
    assert ok.exit_code == 0 and "PASSED" in ok.output, ok.output
    broken = _invoke("audit", "laplace-mechanism", "--epsilon", 1, "--runs", 20000,
                     "--sensitivity-scale", 0.5)
    assert broken.exit_code == 1 and "FAILED" in broken.output, broken.output


@pytest.mark.slow
@pytest.mark.parametrize("method, budget", [("coinpress", ["--rho", "0.1"]),
                                            ("public", ["--rho", "0.1"])])
def test_audit_estimators_on_worst_case_neighbours(method: str, budget: list[str]) -> None:
    res = _invoke("audit", method, *budget, "--runs", 600, "--n", 20)
    assert res.exit_code == 0 and "PASSED" in res.output, res.output
    assert "claimed epsilon" in res.output


def test_audit_refuses_mismatched_budget() -> None:
    res = _invoke("audit", "laplace-mechanism", "--rho", 0.5)
    assert res.exit_code == 2 and "pure" in res.output


# ------------------------------------------------------------------------------------------------
# synthesize
# ------------------------------------------------------------------------------------------------


def test_synthesize_writes_rows_with_the_model_s_column_names(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5000, 3)) * [1.0, 10.0, 100.0] + [0.0, 50.0, 1000.0]
    data = tmp_path / "data.csv"
    data.write_text("age,income,score\n"
                    + "\n".join(",".join(f"{v:.17g}" for v in r) for r in X) + "\n")
    model = tmp_path / "model.json"
    res = _invoke("fit-gaussian", data, "--epsilon", 1, "--delta", 1e-6, "--out", model,
                  "--seed", 1)
    assert res.exit_code == 0, res.output
    assert json.loads(model.read_text())["feature_names"] == ["age", "income", "score"]
    out = tmp_path / "synthetic.csv"
    res = _invoke("synthesize", model, "-n", 2000, "-o", out, "--seed", 3)
    assert res.exit_code == 0, res.output
    lines = out.read_text().splitlines()
    assert lines[0] == "age,income,score" and len(lines) == 2001
    S = np.array([[float(v) for v in line.split(",")] for line in lines[1:]])
    # drawn from the private model: its mean and spread, which are close to the data's
    fitted = pg.load(model)
    se = np.sqrt(np.diag(fitted.covariance_) / 2000)
    assert np.all(np.abs(S.mean(axis=0) - fitted.mean_) <= 4 * se)
    np.testing.assert_allclose(S.std(axis=0), X.std(axis=0), rtol=0.15)
    # the same seed draws the same rows; .npy and .parquet keep the shape (parquet the names)
    again = tmp_path / "again.csv"
    _invoke("synthesize", model, "-n", 2000, "-o", again, "--seed", 3)
    assert again.read_text() == out.read_text()
    npy = tmp_path / "s.npy"
    assert _invoke("synthesize", model, "-n", 10, "-o", npy).exit_code == 0
    assert np.load(npy).shape == (10, 3)
    pq = pytest.importorskip("pyarrow.parquet")
    par = tmp_path / "s.parquet"
    assert _invoke("synthesize", model, "-n", 10, "-o", par).exit_code == 0
    assert pq.read_table(par).column_names == ["age", "income", "score"]


def test_synthesize_from_a_mixture_and_bad_requests(tmp_path: Path) -> None:
    mix = pg.datasets.make_mixture(6000, 2, 2, separation=8.0, random_state=0)
    m = pg.PrivateGaussianMixture(2, rho=0.5, method="public-heavy", random_state=0).fit(
        mix.X[:5000], public_X=mix.X[5000:5060])
    model = tmp_path / "mix.json"
    pg.io.save(m, model)
    out = tmp_path / "rows.csv"
    res = _invoke("synthesize", model, "-n", 100, "-o", out)
    assert res.exit_code == 0, res.output
    assert out.read_text().splitlines()[0] == "x0,x1"  # no names in the model: x0, x1, ...
    for args in (("-n", 0, "-o", out), ("-n", 5, "-o", tmp_path / "rows.txt")):
        res = _invoke("synthesize", model, *args)
        assert res.exit_code == 2 and res.output.startswith("error:")
    res = _invoke("synthesize", tmp_path / "missing.json", "-n", 5, "-o", out)
    assert res.exit_code == 2


def test_errors_name_the_command_line_flags(tmp_path: Path) -> None:
    data = tmp_path / "d.csv"
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(200, 2))
    data.write_text("a,b\n" + "\n".join(f"{x:.6f},{y:.6f}" for x, y in rows))
    for args, flag in ((("--method", "coinpress"), "--mean-bound"), ((), "--public"),
                       (("--method", "public"), "--public")):
        res = _invoke("fit-gaussian", data, "--rho", 0.5, *args)
        assert res.exit_code == 2 and flag in res.output, res.output
        for python_name in ("mean_bound=", "public_X", "cov_bounds="):
            assert python_name not in res.output, res.output


def test_fit_mixture_streams_a_npy_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 2-D .npy file is read in chunks by method em (never read whole: neither the table
    reader nor the estimator's in-memory loader runs) and gives the fit of its rows."""
    from privgauss.cli import _common

    mix = make_mixture(12_000, 2, 2, separation=4.0, random_state=2)
    X = mix.X * 3.0 + 50.0
    np.save(tmp_path / "big.npy", X)
    ref = pg.PrivateGaussianMixture(2, epsilon=1.0, delta=1e-6, method="em",
                                    random_state=0).fit(X)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the rows were loaded whole")

    monkeypatch.setattr(_common, "read_table", refuse)
    monkeypatch.setattr(mixture_module, "in_memory", refuse)
    out = tmp_path / "m.json"
    res = _invoke("fit-mixture", tmp_path / "big.npy", "-k", 2, "--epsilon", 1, "--delta",
                  1e-6, "--method", "em", "--seed", 0, "--out", out)
    assert res.exit_code == 0, res.output
    m = pg.load(out)
    np.testing.assert_allclose(m.means_, ref.means_, rtol=1e-9)
    np.testing.assert_allclose(m.covariances_, ref.covariances_, rtol=1e-9, atol=1e-9)
