"""Model files (save / pg.load round trips, refusing bad files), data tables, atomic writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import privgauss as pg
from privgauss.datasets import make_gaussian, make_mixture
from privgauss.io import atomic_path, column_names, read_table, save, write_atomic

MODEL_KEYS = {"model", "library", "version", "method", "method_reason", "n_features",
              "feature_names", "privacy", "pure_dp"}


@pytest.fixture(scope="module")
def gaussian() -> pg.PrivateGaussian:
    X, mu, cov = make_gaussian(4000, 3, mean=np.full(3, 50.0), random_state=0)
    pub, _, _ = make_gaussian(4, 3, mean=mu, cov=cov, random_state=1)
    return pg.PrivateGaussian(rho=0.5, random_state=0).fit(X, public_X=pub)


@pytest.fixture(scope="module")
def mixture() -> pg.PrivateGaussianMixture:
    mix = make_mixture(15_000, 2, 2, separation=6.0, random_state=2)
    return pg.PrivateGaussianMixture(
        2, epsilon=8.0, delta=1e-6, method="sample-aggregate", random_state=0
    ).fit(mix.X)


def test_gaussian_round_trip(gaussian: pg.PrivateGaussian, tmp_path: Path) -> None:
    path = tmp_path / "g.json"
    save(gaussian, path)
    stored = json.loads(path.read_text())
    assert set(stored) == MODEL_KEYS | {"mean", "covariance", "clipped_fraction",
                                        "background_weight"}
    assert stored["privacy"]["budget"] == {"notion": "zCDP", "rho": 0.5}
    g = pg.load(path)
    assert isinstance(g, pg.PrivateGaussian)
    assert g.to_dict() == gaussian.to_dict()
    assert g.privacy_spent_ == gaussian.privacy_spent_ and len(g.ledger_) == len(gaussian.ledger_)
    Y = np.random.default_rng(3).normal(50.0, 1.0, size=(20, 3))
    assert np.allclose(g.score_samples(Y), gaussian.score_samples(Y))
    assert np.array_equal(g.sample(5, random_state=4), gaussian.sample(5, random_state=4))


def test_feature_names_round_trip(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(np.random.default_rng(0).normal(size=(3000, 2)), columns=["age", "bmi"])
    g = pg.PrivateGaussian(rho=0.5, mean_bound=10.0, cov_bounds=(0.1, 10.0), random_state=0)
    g.fit(df)
    path = tmp_path / "g.json"
    save(g, path)
    assert json.loads(path.read_text())["feature_names"] == ["age", "bmi"]
    assert list(pg.load(path).feature_names_in_) == ["age", "bmi"]


def test_mixture_round_trip(mixture: pg.PrivateGaussianMixture, tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    save(mixture, path)
    stored = json.loads(path.read_text())
    assert set(stored) == MODEL_KEYS | {"n_components", "weights", "means", "covariances",
                                        "clipped_fraction", "background_weight",
                                        "selected_model"}
    assert stored["privacy"]["neighbours"].startswith("replace-one")
    assert stored["selected_model"] is None  # private EM's final pick only
    m = pg.load(path)
    assert isinstance(m, pg.PrivateGaussianMixture) and m.method_ == "sample-aggregate"
    assert m.to_dict() == mixture.to_dict()
    Y = mixture.sample(200, random_state=5)[0]
    assert np.array_equal(m.predict(Y), mixture.predict(Y))
    assert np.allclose(m.score_samples(Y), mixture.score_samples(Y))
    X1, labels1 = m.sample(50, random_state=6)
    X2, labels2 = mixture.sample(50, random_state=6)
    assert np.array_equal(X1, X2) and np.array_equal(labels1, labels2)


def _corrupt(gaussian: pg.PrivateGaussian, tmp_path: Path, change) -> Path:  # noqa: ANN001
    d = gaussian.to_dict()
    change(d)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d))
    return path


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d.update(library="other"), "not a privgauss model"),
        (lambda d: d.update(model="tree"), "unknown model type"),
        (lambda d: d.update(mean=[1.0, 2.0]), "shape (3,)"),
        (lambda d: d.update(covariance=[[float("nan")] * 3] * 3), "finite"),
        (lambda d: d.pop("privacy"), "missing"),
        (lambda d: d["privacy"]["ledger"].append(d["privacy"]["ledger"][0]), "exceeds"),
        # hand edits: each refused in one line naming the field
        (lambda d: d.update(mean=[1e308, 0.0, 0.0]), "mean has entries above 1e+152"),
        (lambda d: d["covariance"][0].__setitem__(0, 1e308), "covariance has entries above"),
        (lambda d: d["covariance"][0].__setitem__(1, 5.0), "covariance is not symmetric"),
        (lambda d: d["covariance"][0].__setitem__(0, -1.0), "not positive semi-definite"),
        (lambda d: d.update(n_features="3"), "n_features must be a positive integer"),
        (lambda d: d.update(feature_names=["a", "a", "b"]), "feature_names must be a list"),
        (lambda d: d.update(clipped_fraction=2.0), "clipped_fraction must be a fraction"),
        (lambda d: d.update(pure_dp=True), "pure_dp contradicts"),
        (lambda d: d["privacy"].update(budget={"notion": "zCDP", "rho": -1.0}),
         "privacy.budget is not a valid privacy budget"),
        (lambda d: d["privacy"]["ledger"][0].update(cost={"notion": "zCDP"}),
         "privacy.ledger[0].cost is not a valid"),
        # the ledger edited to claim 1/100 of the spend (the stated spent kept) ...
        (lambda d: [e["cost"].update(rho=e["cost"]["rho"] / 100) for e in d["privacy"]["ledger"]],
         "privacy.spent (0.5-zCDP) differs from what the ledger's entries compose to"),
        # ... or the spent total edited (the ledger kept)
        (lambda d: d["privacy"]["spent"].update(rho=0.005), "privacy.spent (0.005-zCDP) differs"),
        (lambda d: d["privacy"].pop("spent"), "privacy.spent is missing"),
    ],
)
def test_bad_model_files_are_refused(
    gaussian: pg.PrivateGaussian, tmp_path: Path, change, message: str  # noqa: ANN001
) -> None:
    with pytest.raises(pg.InvalidDataError) as info:
        pg.load(_corrupt(gaussian, tmp_path, change))
    assert message in str(info.value)


def test_mixture_weights_must_sum_to_one(
    mixture: pg.PrivateGaussianMixture, tmp_path: Path
) -> None:
    d = mixture.to_dict()
    d["weights"] = [0.9, 0.9]
    (tmp_path / "w.json").write_text(json.dumps(d))
    with pytest.raises(pg.InvalidDataError, match="sum to 1"):
        pg.load(tmp_path / "w.json")


def test_mixture_covariances_and_means_are_checked(
    mixture: pg.PrivateGaussianMixture, tmp_path: Path
) -> None:
    for change, message in (
        (lambda d: d["covariances"][1][1].__setitem__(1, -2.0), "covariances is not positive"),
        (lambda d: d["covariances"][0][0].__setitem__(1, 0.5), "covariances is not symmetric"),
        (lambda d: d["means"][0].__setitem__(0, float("inf")), "means must be a finite"),
        (lambda d: d.update(weights=[1.5, -0.5]), "weights must be non-negative"),
    ):
        d = mixture.to_dict()
        change(d)
        (tmp_path / "m.json").write_text(json.dumps(d))
        with pytest.raises(pg.InvalidDataError) as info:
            pg.load(tmp_path / "m.json")
        assert message in str(info.value) and "\n" not in str(info.value)


def test_a_model_file_is_a_record_not_a_certificate(
    gaussian: pg.PrivateGaussian, tmp_path: Path
) -> None:
    """Load checks consistency only: a file whose costs AND spent total are divided by 100
    consistently loads, claiming a hundredth of the spend (documented in io and the guide)."""
    d = gaussian.to_dict()
    for e in d["privacy"]["ledger"]:
        e["cost"]["rho"] /= 100
    d["privacy"]["spent"] = {"notion": "zCDP", "rho": sum(e["cost"]["rho"]
                                                           for e in d["privacy"]["ledger"])}
    (tmp_path / "g.json").write_text(json.dumps(d))
    assert pg.load(tmp_path / "g.json").privacy_spent_.rho == pytest.approx(0.005)


def _within_seconds(args: list[str], seconds: float) -> subprocess.CompletedProcess[str]:
    """Run a command in a fresh interpreter; a hang fails the test instead of the suite."""
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=seconds, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{' '.join(args[-6:])} did not finish in {seconds} s (unbounded work)")


def test_synthesize_on_a_huge_model_is_refused_at_once(
    gaussian: pg.PrivateGaussian, tmp_path: Path
) -> None:
    """The red team's model file, mean and variance 1e308: loading used to symmetrise the
    covariance as (C + C.T) / 2, which overflowed to inf, and numpy's SVD of an inf matrix never
    returns, so ``privgauss synthesize`` spun for minutes. Now it is refused on load."""
    d = gaussian.to_dict()
    d["mean"][0] = 1e308
    d["covariance"][0][0] = 1e308
    (tmp_path / "huge.json").write_text(json.dumps(d))
    res = _within_seconds([sys.executable, "-m", "privgauss.cli", "synthesize",
                           str(tmp_path / "huge.json"), "-n", "5", "-o",
                           str(tmp_path / "s.csv")], 120)
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("error: model file: mean has entries above")
    assert not (tmp_path / "s.csv").exists()


def test_sampling_is_bounded_for_any_model(gaussian: pg.PrivateGaussian,
                                           mixture: pg.PrivateGaussianMixture) -> None:
    """At the load bounds, sampling gives finite rows; non-finite parameters (set by hand
    on a fitted estimator) are refused instead of handed to numpy's never-ending SVD."""
    d = gaussian.to_dict()
    d["mean"] = [1e152, -1e152, 0.0]
    d["covariance"] = [[1e304, 0.0, 0.0], [0.0, 1e304, 0.0], [0.0, 0.0, 1.0]]
    rows = pg.io.from_dict(d).sample(1000, random_state=0)
    assert np.all(np.isfinite(rows))
    code = ("import pickle, sys, numpy as np; g = pickle.loads(sys.stdin.buffer.read()); "
            "g.covariance_ = np.full_like(g.covariance_, np.inf)\n"
            "try:\n    g.sample(3)\nexcept ValueError as e:\n    print(e)")
    for model in (gaussian, mixture):
        import pickle

        if isinstance(model, pg.PrivateGaussianMixture):
            code = code.replace("g.covariance_", "g.covariances_")
        try:
            res = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(model),
                                 capture_output=True, timeout=120, check=False)
        except subprocess.TimeoutExpired:
            pytest.fail("sampling a model with an infinite covariance did not finish")
        assert b"not finite" in res.stdout, res.stderr


def test_missing_or_non_json_model_file(tmp_path: Path) -> None:
    with pytest.raises(pg.InvalidDataError, match="not found"):
        pg.load(tmp_path / "none.json")
    (tmp_path / "x.json").write_text("{not json")
    with pytest.raises(pg.InvalidDataError, match="not a JSON model"):
        pg.load(tmp_path / "x.json")


# ------------------------------------------------------------------------------------------------
# data tables and atomic writes
# ------------------------------------------------------------------------------------------------


def test_read_table_formats(tmp_path: Path) -> None:
    (tmp_path / "h.csv").write_text("x,y\n1,2\n3,4.5\n")
    (tmp_path / "n.csv").write_text("1,2\n3,4.5\n")
    (tmp_path / "t.tsv").write_text("x\ty\n1\t2\n3\t4.5\n")
    np.save(tmp_path / "a.npy", np.array([[1.0, 2.0], [3.0, 4.5]]))
    expected = np.array([[1.0, 2.0], [3.0, 4.5]])
    for name in ("h.csv", "t.tsv", "a.npy"):
        assert np.array_equal(read_table(tmp_path / name), expected), name
    # a headerless CSV is declared so (header=False): its columns are "0", "1"
    X, names = read_table(tmp_path / "n.csv", with_names=True, header=False)
    assert names == ["0", "1"] and np.array_equal(X, expected)
    assert np.array_equal(read_table(tmp_path / "n.csv", ["1"], header=False), expected[:, 1:])
    X, names = read_table(tmp_path / "h.csv", "y", with_names=True)
    assert names == ["y"] and np.array_equal(X, expected[:, 1:])
    with pytest.raises(pg.InvalidDataError, match="--columns needs"):
        read_table(tmp_path / "a.npy", "x")


def _refusal(path: Path, **kwargs: object) -> str:
    with pytest.raises(pg.InvalidDataError) as info:
        read_table(path, **kwargs)
    return str(info.value)


# a header line is declared by the format (CSV/TSV: yes) and header=False, never guessed from
# a row: before, a headerless file whose first record had an NA cell gave that record's values
# as column names, and its neighbour with the cell filled gave "0", "1", "2"
HEADERLESS_NEIGHBOURS = ("52.7,NA,1893.2\n48.1,3.3,1701.0\n50.2,2.9,1750.5\n",
                         "52.7,3.1,1893.2\n48.1,3.3,1701.0\n50.2,2.9,1750.5\n")


def test_headers_never_depend_on_a_record(tmp_path: Path) -> None:
    messages = []
    for i, text in enumerate(HEADERLESS_NEIGHBOURS):
        path = tmp_path / f"n{i}.csv"
        path.write_text(text)
        messages.append(_refusal(path).replace(path.name, "FILE"))
    # the same refusal for both neighbours, quoting no cell, saying what to do
    assert messages[0] == messages[1] and "header=False" in messages[0]
    assert not any(v in messages[0] for v in ("52.7", "NA", "1893", "3.1"))
    # declared headerless: the filled file is read, named by position; the other refused at
    # the entry for its NA cell (naming the column's position, no value)
    X, names = read_table(tmp_path / "n1.csv", with_names=True, header=False)
    assert names == ["0", "1", "2"] and X.shape == (3, 3)
    message = _refusal(tmp_path / "n0.csv", header=False)
    assert "'1'" in message and "NA" not in message and "52.7" not in message


@pytest.mark.parametrize("first_line", ["zeta,17.5,qq", "zeta,,qq", "zeta,qq,zeta",
                                        " zeta , zeta ,qq", "zeta,inf,qq"])
def test_a_declared_header_must_hold_names(tmp_path: Path, first_line: str) -> None:
    (tmp_path / "h.csv").write_text(f"{first_line}\n1,2,3\n")
    message = _refusal(tmp_path / "h.csv")
    assert "header=False" in message and "\n" not in message
    assert not any(cell in message for cell in ("zeta", "qq", "17.5"))
    with pytest.raises(pg.InvalidDataError, match="header=False"):
        column_names(tmp_path / "h.csv")


def test_column_names_read_no_row(tmp_path: Path) -> None:
    (tmp_path / "h.csv").write_text("x,y\n1,2\n")
    (tmp_path / "n.csv").write_text("1,2\n")
    np.save(tmp_path / "a.npy", np.ones((2, 2)))
    assert column_names(tmp_path / "h.csv") == ["x", "y"]
    assert column_names(tmp_path / "n.csv", header=False) is None
    assert column_names(tmp_path / "a.npy") is None


def test_columns_listed_twice_are_refused(tmp_path: Path) -> None:
    (tmp_path / "h.csv").write_text("x,y\n1,2\n")
    assert "more than once" in _refusal(tmp_path / "h.csv", columns="x,x")
    assert "more than once" in _refusal(tmp_path / "h.csv", columns=["0", "0"], header=False)


def test_read_table_messages_hold_no_cell_values(tmp_path: Path) -> None:
    (tmp_path / "s.csv").write_text("x,y\n1,secret-value\n")
    with pytest.raises(pg.InvalidDataError) as info:
        read_table(tmp_path / "s.csv")
    assert "'y'" in str(info.value) and "secret" not in str(info.value)


def test_atomic_write_keeps_the_old_file_on_failure(tmp_path: Path) -> None:
    path = tmp_path / "out.txt"
    write_atomic(path, "old\n")
    with pytest.raises(RuntimeError), atomic_path(path) as tmp:
        tmp.write_text("half")
        raise RuntimeError("boom")
    assert path.read_text() == "old\n"
    mask = os.umask(0)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask  # not mkstemp's 0600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]
    with pytest.raises(pg.InvalidDataError, match="does not exist"):
        write_atomic(tmp_path / "no" / "x.txt", "x")


def test_a_spreadsheets_byte_order_mark_is_not_part_of_a_name(tmp_path: Path) -> None:
    """A CSV exported as "CSV UTF-8" starts with a byte-order mark: the first column is still
    "age" (``--columns age`` finds it); bytes that are not UTF-8 are refused without being
    quoted."""
    p = tmp_path / "excel.csv"
    p.write_bytes("\ufeffage,income\n30,1.5\n40,2.5\n".encode())
    X, names = pg.io.read_table(p, "age", with_names=True)
    assert names == ["age"] and X.ravel().tolist() == [30.0, 40.0]
    bad = tmp_path / "latin1.csv"
    bad.write_bytes("name,x\nJos\xe9,1\n".encode("latin-1"))
    with pytest.raises(pg.InvalidDataError, match="not UTF-8") as err:
        pg.io.read_table(bad, "x", text=["name"])
    assert "Jos" not in str(err.value)
