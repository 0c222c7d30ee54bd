"""The command line end to end on files, including bad files."""

import json

import numpy as np
import pytest
from click.testing import CliRunner

from privgauss.cli import main


@pytest.fixture()
def files(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(100.0, 2.0, size=(3000, 3))
    pub = rng.normal(100.0, 2.0, size=(8, 3))
    header = "a,b,c\n"
    (tmp_path / "data.csv").write_text(header + "\n".join(",".join(map(str, r)) for r in X))
    (tmp_path / "pub.csv").write_text(header + "\n".join(",".join(map(str, r)) for r in pub))
    np.save(tmp_path / "data.npy", X)
    return tmp_path


def test_help_lists_commands():
    out = CliRunner().invoke(main, ["--help"])
    assert out.exit_code == 0
    assert "demo" in out.output and "fit-gaussian" in out.output


def test_demo_prints_real_numbers():
    out = CliRunner().invoke(main, ["demo", "--n", "3000", "--d", "3"])
    assert out.exit_code == 0, out.output
    lines = [ln for ln in out.output.splitlines() if ln.startswith(("public", "non-private"))]
    assert len(lines) >= 3
    errors = [float(ln.split()[-3]) for ln in lines]
    assert all(0 < e < 1 for e in errors)


def test_fit_gaussian_writes_a_model(files):
    out_path = files / "model.json"
    res = CliRunner().invoke(
        main,
        ["fit-gaussian", str(files / "data.csv"), "--rho", "0.5", "--public",
         str(files / "pub.csv"), "--seed", "1", "--out", str(out_path)],
    )
    assert res.exit_code == 0, res.output
    model = json.loads(out_path.read_text())
    assert model["method"] == "public"
    assert np.allclose(model["mean"], 100.0, atol=0.5)
    assert model["privacy"]["spent"]["rho"] == pytest.approx(0.5)


def test_fit_gaussian_npy_and_columns(files):
    res = CliRunner().invoke(
        main,
        ["fit-gaussian", str(files / "data.csv"), "--columns", "a,c", "--epsilon", "2",
         "--delta", "1e-6", "--seed", "0"],
    )
    assert res.exit_code == 0, res.output
    assert len(json.loads(res.output)["mean"]) == 2
    res = CliRunner().invoke(
        main, ["fit-gaussian", str(files / "data.npy"), "--epsilon", "2", "--delta", "1e-6",
               "--seed", "0"]
    )
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize(
    "content, extra, message",
    [
        (None, ["--columns", "a,zz"], "no column"),
        ("a,b\n1,x\n2,3\n", [], "non-numeric"),
        ("", [], "empty"),
        (None, ["--public", "WRONGD"], "features"),
        (None, [], "budget"),
    ],
)
def test_bad_input_gives_one_line_and_no_output_file(files, content, extra, message):
    data = files / "data.csv"
    if content is not None:
        data = files / "bad.csv"
        data.write_text(content)
    if "WRONGD" in extra:
        (files / "pub2.csv").write_text("a,b\n1,2\n3,4\n5,6\n")
        extra = ["--public", str(files / "pub2.csv")]
    budget = [] if message == "budget" else ["--rho", "0.5"]
    out_path = files / "out.json"
    res = CliRunner().invoke(
        main, ["fit-gaussian", str(data), *budget, *extra, "--out", str(out_path)]
    )
    assert res.exit_code != 0
    assert message in res.output.lower()
    assert not out_path.exists()
    assert not list(files.glob(".out.json*"))


def test_experiment_writes_csv_and_plot(tmp_path):
    res = CliRunner().invoke(
        main, ["experiment", "public-covariance", "--quick", "--trials", "2", "--out",
               str(tmp_path)]
    )
    assert res.exit_code == 0, res.output
    csv_text = (tmp_path / "public-covariance.csv").read_text()
    assert "ours" in csv_text and "np.cov" in csv_text
    assert (tmp_path / "public-covariance.png").stat().st_size > 1000
    rows = [ln.split(",") for ln in csv_text.splitlines()[1:]]
    # every error is a positive finite number
    assert all(0 < float(r[5]) < 1e3 for r in rows)
