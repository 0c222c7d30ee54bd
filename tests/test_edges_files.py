"""Privacy at the edges of the files (issue #25), through the command line: a header comes from
the file format and ``--no-header``, never from a row; public files are matched by column name;
the exit status says whether budget was spent; and neighbouring CSV files end in the same
outcome — exit status, messages, model keys and names, synthetic header — up to DP outputs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _helpers import scale_free_rows
from click.testing import CliRunner, Result

import privgauss as pg
from privgauss.cli import main

# the only DP output the commands print besides the model file
_DP_FRACTION = re.compile(r"clipped fraction [0-9.]+% \(DP\)")


def _invoke(*args: object) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _table(rows: np.ndarray, header: str | None = None) -> str:
    lines = [] if header is None else [header]
    return "\n".join(lines + [",".join(f"{v:.10g}" for v in r) for r in rows]) + "\n"


def _outcome(folder: Path, text: str, *flags: object,
             command: str = "fit-gaussian") -> dict[str, Any]:
    """Everything an observer sees of ``command`` (then ``synthesize``) on a CSV holding
    ``text``, run in ``folder`` with ``--seed``: DP outputs (the parameters, the clipped
    fraction) left out, the folder's path masked."""
    folder.mkdir()
    data, model, synthetic = folder / "data.csv", folder / "model.json", folder / "syn.csv"
    data.write_text(text)
    res = _invoke(command, data, *flags, "--seed", 7, "--out", model)

    def masked(s: str) -> str:
        return _DP_FRACTION.sub("clipped fraction (DP)", s.replace(str(folder), "DIR"))

    seen: dict[str, Any] = {"exit": res.exit_code, "stdout": masked(res.stdout),
                            "stderr": masked(res.stderr),
                            "files": sorted(p.name for p in folder.iterdir())}
    if model.exists():
        m = json.loads(model.read_text())
        seen |= {"keys": sorted(m), "feature_names": m["feature_names"], "method": m["method"],
                 "budget": m["privacy"]["budget"], "spent": m["privacy"]["spent"],
                 "ledger": [(e["step"], e["mechanism"], e["cost"]) for e in m["privacy"]["ledger"]]}
        syn = _invoke("synthesize", model, "-n", 50, "-o", synthetic, "--seed", 1)
        seen |= {"synthesize": (syn.exit_code, masked(syn.stdout), syn.stderr),
                 "synthetic header": synthetic.read_text().splitlines()[0]}
    return seen


def _no_cell_value(seen: dict[str, Any], cells: tuple[str, ...]) -> None:
    """No cell value in the messages, the names or the synthetic header (the parameters are DP
    outputs, and may be near a value by chance)."""
    text = " ".join(str(seen.get(k)) for k in ("stdout", "stderr", "feature_names",
                                                "synthetic header", "synthesize"))
    assert not [c for c in cells if c in text], text


# ------------------------------------------------------------------------------------------------
# the red team's attacks, as neighbouring files
# ------------------------------------------------------------------------------------------------

RNG = np.random.default_rng(0)
BODY = RNG.normal([50.0, 3.0, 1800.0], [5.0, 0.5, 100.0], size=(2999, 3))
NA_FIRST = "52.7,NA,1893.2\n" + _table(BODY)
FILLED_FIRST = "52.7,3.1,1893.2\n" + _table(BODY)
CELLS = ("52.7", "NA", "1893.2", "3.1")


def test_headerless_neighbours_default_flags(tmp_path: Path) -> None:
    """A headerless file whose first record has an NA cell, and its neighbour with the cell
    filled: before, the first was read with that record as its header (its values became the
    model's feature_names and the synthetic file's header) and the second as headerless
    (0, 1, 2). Now the first line is the header by default, and both are refused alike, before
    anything is spent, with a message that quotes no cell and names --no-header."""
    budget = ("--epsilon", 1, "--delta", 1e-6)
    a = _outcome(tmp_path / "a", NA_FIRST, *budget)
    b = _outcome(tmp_path / "b", FILLED_FIRST, *budget)
    assert a == b
    assert a["exit"] == 2 and a["stderr"].startswith("error: data.csv: its first line is read")
    assert "--no-header" in a["stderr"] and a["files"] == ["data.csv"]
    _no_cell_value(a, CELLS)


def test_headerless_neighbours_with_no_header(tmp_path: Path) -> None:
    """Declared headerless: the filled file is fitted with columns named by position (no names
    in the model, x0, x1, x2 in the synthetic file); the NA file is refused at the entry, before
    anything is spent, for a non-numeric column (the trust boundary's rule for NaN/NA input:
    it names the column's position, no value, no row)."""
    budget = ("--no-header", "--epsilon", 1, "--delta", 1e-6)
    a = _outcome(tmp_path / "a", NA_FIRST, *budget)
    b = _outcome(tmp_path / "b", FILLED_FIRST, *budget)
    assert a["exit"] == 2 and "column '1' has non-numeric or empty cells" in a["stderr"]
    assert b["exit"] == 0 and b["feature_names"] is None
    assert b["synthetic header"] == "x0,x1,x2"
    _no_cell_value(a, CELLS)
    _no_cell_value(b, CELLS)
    # two valid headerless neighbours (the first record ordinary, or extreme): one outcome
    extreme = "9.87654321e8,-7.5e6,4.25e7\n" + _table(BODY)
    c = _outcome(tmp_path / "c", extreme, *budget)
    assert c == b
    _no_cell_value(c, ("987654321", "9.87654321", "7.5e6", "4.25e7", "-7500000"))


@pytest.mark.parametrize("flags", [("--epsilon", 1, "--delta", 1e-6),
                                   ("--rho", 0.5, "--public", "PUBLIC")],
                         ids=["histogram", "public"])
def test_neighbours_with_a_header(tmp_path: Path, flags: tuple[object, ...]) -> None:
    """A file with a header, and the same file with one record replaced by an extreme one:
    the same exit status, messages, model keys, names, ledger and synthetic header."""
    public = tmp_path / "public.csv"
    public.write_text(_table(RNG.normal([50.0, 3.0, 1800.0], [5.0, 0.5, 100.0], (8, 3)),
                             "age,bmi,income"))
    flags = tuple(public if f == "PUBLIC" else f for f in flags)
    neighbour = BODY.copy()
    neighbour[1234] = [9.87654321e8, -7.5e6, 4.25e7]
    a = _outcome(tmp_path / "a", _table(BODY, "age,bmi,income"), *flags)
    b = _outcome(tmp_path / "b", _table(neighbour, "age,bmi,income"), *flags)
    assert a == b
    assert a["exit"] == 0 and a["feature_names"] == ["age", "bmi", "income"]
    assert a["synthetic header"] == "age,bmi,income"
    _no_cell_value(b, ("987654321", "9.87654321", "7500000", "4.25e7", "42500000"))


def test_mixture_neighbours_with_a_header(tmp_path: Path) -> None:
    mix = pg.datasets.make_mixture(12_000, 2, 2, separation=6.0, random_state=3).X
    neighbour = mix.copy()
    neighbour[777] = [4.4e9, -3.3e9]
    # ε = 4: a plan whose runs neither freeze nor stop early; at ε = 8 they may (FREEZE_PLAIN,
    # STOP_SPAN), and which steps are skipped is then a DP output — the ledger's length differs
    # between neighbours as the released models do (DESIGN rule 10)
    flags = ("-k", 2, "--epsilon", 4, "--delta", 1e-6, "--method", "em")
    a = _outcome(tmp_path / "a", _table(mix, "u,v"), *flags, command="fit-mixture")
    b = _outcome(tmp_path / "b", _table(neighbour, "u,v"), *flags, command="fit-mixture")
    assert a == b
    assert a["exit"] == 0 and a["feature_names"] == ["u", "v"]
    assert a["synthetic header"] == "u,v"
    _no_cell_value(b, ("4400000000", "4.4e9", "4.4e+09", "3300000000", "3.3e9", "3.3e+09"))


# ------------------------------------------------------------------------------------------------
# command-line edges
# ------------------------------------------------------------------------------------------------


@pytest.fixture()
def named(tmp_path: Path) -> Path:
    rows = RNG.normal([0.0, 100.0, -50.0], [1.0, 5.0, 2.0], size=(3000, 3))
    (tmp_path / "data.csv").write_text(_table(rows, "a,b,c"))
    pub = RNG.normal([0.0, 100.0, -50.0], [1.0, 5.0, 2.0], size=(8, 3))
    (tmp_path / "pub.csv").write_text(_table(pub, "a,b,c"))
    # the same public rows, columns in another order (and one more column)
    (tmp_path / "pub_reordered.csv").write_text(
        _table(np.column_stack([pub[:, 2], np.ones(8), pub[:, 0], pub[:, 1]]), "c,extra,a,b"))
    (tmp_path / "pub_lacking.csv").write_text(_table(pub[:, [0, 2]], "a,c"))
    return tmp_path


def test_public_columns_are_matched_by_name(named: Path) -> None:
    args = ("fit-gaussian", named / "data.csv", "--rho", 0.5, "--seed", 0)
    in_order = _invoke(*args, "--public", named / "pub.csv")
    reordered = _invoke(*args, "--public", named / "pub_reordered.csv")
    assert in_order.exit_code == 0 and reordered.exit_code == 0, reordered.output
    assert json.loads(in_order.stdout) == json.loads(reordered.stdout)
    # with --columns, the public file gives the same columns, by name
    sub = _invoke(*args, "--columns", "c,a", "--public", named / "pub_reordered.csv")
    assert sub.exit_code == 0 and json.loads(sub.stdout)["feature_names"] == ["c", "a"]


def test_refusals_before_spending(named: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fit(*args: object, **kwargs: object) -> None:
        raise AssertionError("fit ran: budget would be spent before the refusal")

    monkeypatch.setattr(pg.PrivateGaussian, "fit", no_fit)
    base = ("fit-gaussian", named / "data.csv", "--rho", 0.5)
    for extra, message in (
        (("--public", named / "pub_lacking.csv"),
         "error: the public file has no column(s) ['b']: its columns are matched to the data's "
         "by name"),
        (("--columns", "a,a"), "error: --columns lists ['a'] more than once"),
        (("--no-header",), "error: data.csv: column '0' has non-numeric or empty cells"),
    ):
        res = _invoke(*base, *extra)
        assert res.exit_code == 2 and res.output.startswith(message), res.output
        assert len(res.output.strip().splitlines()) == 1


def test_no_header_columns_by_position(tmp_path: Path) -> None:
    rows = RNG.normal([0.0, 100.0, -50.0], [1.0, 5.0, 2.0], size=(3000, 3))
    (tmp_path / "d.csv").write_text(_table(rows))
    (tmp_path / "p.csv").write_text(_table(rows[:8] + 0.1))
    res = _invoke("fit-gaussian", tmp_path / "d.csv", "--no-header", "--columns", "2,0",
                  "--public", tmp_path / "p.csv", "--rho", 0.5, "--seed", 0)
    assert res.exit_code == 0, res.output
    model = json.loads(res.stdout)
    assert model["feature_names"] is None and model["method"] == "public"
    assert np.allclose(model["mean"], [-50.0, 0.0], atol=0.5)


def test_exit_status_3_after_spending(tmp_path: Path) -> None:
    """A fit that fails after spending (the histogram route releases no scale bin from rows
    without a common scale) exits with 3, not 2, and says what the accountant spent."""
    np.save(tmp_path / "scale_free.npy", scale_free_rows(2000))
    res = _invoke("fit-gaussian", tmp_path / "scale_free.npy", "--epsilon", 1, "--delta", 1e-6,
                  "--method", "histogram", "--seed", 0)
    assert res.exit_code == 3, res.output
    error = res.stderr.splitlines()[-1]
    assert error.startswith("error: ") and "which stays spent" in error
    assert re.search(r"spent \(0\.\d+, 1e-06\)-DP of \(1, 1e-06\)-DP", error), error
    # refused before spending (a budget the method cannot use): 2
    res = _invoke("fit-gaussian", tmp_path / "scale_free.npy", "--rho", 0.5,
                  "--method", "histogram")
    assert res.exit_code == 2 and "needs an (epsilon, delta>0) budget" in res.output


def test_help_documents_the_exit_statuses() -> None:
    for args in (("--help",), ("fit-gaussian", "--help"), ("fit-mixture", "--help")):
        text = " ".join(_invoke(*args).output.split())
        assert "2 refused before anything was spent" in text, args
        assert "3 failed after" in text and "stays spent" in text, args
    assert "Exit status: 0 done; 2 refused" in _invoke("synthesize", "--help").output
