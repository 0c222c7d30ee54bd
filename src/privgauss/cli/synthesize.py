"""``privgauss synthesize``: DP synthetic rows from a model file, or from a data file in one
step (DP marginals + a Gaussian-copula mixture, :mod:`privgauss.synthesis`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import numpy as np

if TYPE_CHECKING:
    from ..synthesis import PrivateSynthesizer

from ._common import EXIT_STATUS_HELP, Spending, run_user
from .options import BudgetFlags, InputFlags, budget_options, input_options, option_group

_KIND_FLAGS = ("integer", "binary", "float")


def _article(word: str) -> str:
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def _names(text: str | None) -> list[str]:
    return [] if not text else [c.strip() for c in text.split(",") if c.strip()]


@dataclass(frozen=True)
class SynthesisFlags:
    """The flags of a one-step synthesis from a data file beyond its budget and input flags:
    declared column kinds, stated ranges, the copula model's size and the model file."""

    integer_cols: str | None
    binary_cols: str | None
    float_cols: str | None
    categorical_cols: str | None
    categories: tuple[tuple[str, str], ...]
    bounds: tuple[tuple[str, float, float], ...]
    n_components: str
    model_out: str | None

    def kinds(self) -> dict[str, list[str]]:
        """The columns flagged as each kind (``--integer``, ``--binary``, ``--float``,
        ``--categorical``; a column given ``--categories`` is categorical)."""
        return {"integer": _names(self.integer_cols), "binary": _names(self.binary_cols),
                "float": _names(self.float_cols),
                "categorical": _names(self.categorical_cols) + [c for c, _ in self.categories]}

    def stated_categories(self) -> dict[str, list[str]]:
        """``--categories``: each named column's stated (public) labels."""
        return {c: [v.strip() for v in labels.split(",")] for c, labels in self.categories}


synthesis_options = option_group(
    SynthesisFlags, "synthesis",
    click.option("--integer", "integer_cols", default=None,
                 help="data file: comma-separated columns that hold integers (Parquet and .npy "
                 "files declare theirs; a CSV column is a float unless named here)"),
    click.option("--binary", "binary_cols", default=None,
                 help="data file: comma-separated 0/1 columns (a Parquet boolean is one)"),
    click.option("--float", "float_cols", default=None,
                 help="data file: columns to treat as real numbers whatever their declared "
                 "type"),
    click.option("--categorical", "categorical_cols", default=None,
                 help="data file: comma-separated columns of categories (labels; a Parquet "
                 "string column is one). Their categories are released with DP thresholds "
                 "(needs --epsilon/--delta): a category too rare to release comes back as an "
                 "empty cell"),
    click.option("--categories", "categories", type=(str, str), multiple=True,
                 help="data file: COL A,B,C, the stated (public) categories of a column: none "
                 "is released or dropped, any other value is refused; repeat for more columns"),
    click.option("--bounds", "bounds", type=(str, float, float), multiple=True,
                 help="data file: COL LO HI, a stated (public) range of a column: no budget is "
                 "spent finding it and its synthetic values stay inside; repeat for more "
                 "columns"),
    click.option("--n-components", default="auto", show_default=True,
                 help="data file: components of the copula model (1: a Gaussian copula; auto: "
                 "chosen from n, d and the budget)"),
    click.option("--model-out", type=click.Path(dir_okay=False), default=None,
                 help="data file: also write the fitted synthesizer (a JSON model file; "
                 "'synthesize MODEL.json' samples it again)"),
)


@click.command("synthesize", epilog=EXIT_STATUS_HELP)
@click.argument("source", type=click.Path(dir_okay=False))
@click.option("-n", "--n-rows", "n_rows", type=int, required=True, help="rows to draw")
@click.option("-o", "--out", required=True, type=click.Path(dir_okay=False),
              help="output table: .csv (with a header), .parquet or .npy")
@click.option("--seed", type=int, default=None,
              help="seed of the sampler (and, for a data file, of the fit's noise: "
              "reproducible but NOT secure; omit it to release from real private data)")
@budget_options
@input_options(
    "data file: comma-separated columns to use (names; positions 0, 1, ... with --no-header or "
    "a .npy file)",
    "data file: a CSV/TSV without a header line",
    "data file: public rows (free, untrusted); their range, widened, replaces the released one "
    "for columns without --bounds")
@synthesis_options
def synthesize(source: str, n_rows: int, out: str, seed: int | None, budget: BudgetFlags,
               inputs: InputFlags, synthesis: SynthesisFlags) -> None:
    """Draw N synthetic rows, from a private MODEL file or from a DATA file in one step.

    SOURCE ending in .json is a model file (written by fit-gaussian, fit-mixture or
    --model-out): sampling it is post-processing, at no privacy cost. Any other SOURCE is a
    data table (CSV, Parquet or .npy) and a budget is required: the command releases DP
    per-column marginals (a small planned share of the budget), fits a Gaussian-copula mixture
    to the columns' normal scores with the rest (a single Gaussian on small tables: named in
    the output), and samples it. Columns keep their names, their declared types (Parquet and
    .npy dtypes, or --integer/--binary/--categorical: integers, 0/1 and labels come back as
    such) and stay within their released range or --bounds. A CSV column is a float unless
    flagged: inferring "integer" or "categorical" from its values would depend on single
    records. A categorical column's categories are released with DP thresholds unless
    --categories states them.

    \b
    Examples:
      privgauss synthesize data.csv --epsilon 1 --delta 1e-6 -n 10000 -o synthetic.csv
      privgauss synthesize data.parquet --rho 0.5 -n 5000 -o syn.parquet --bounds age 0 120
      privgauss synthesize data.csv --epsilon 1 --delta 1e-6 --integer kids --binary smoker \\
          -n 2000 -o syn.csv --model-out synth.json
      privgauss synthesize census.csv --epsilon 1 --delta 1e-6 --categorical region,job \\
          --categories sex female,male -n 5000 -o syn.csv
      privgauss synthesize mix.json -n 10000 -o synthetic.csv
    """
    from ..exceptions import InvalidDataError

    spending = Spending()
    is_model = Path(source).suffix.lower() == ".json"

    def run() -> None:
        if n_rows < 1:
            raise InvalidDataError("--n-rows must be at least 1")
        if not Path(out).resolve().parent.is_dir():
            raise InvalidDataError(f"cannot write {out}: its folder does not exist")
        if is_model:
            syn = synthesis
            data_flags = {"--rho": budget.rho, "--epsilon": budget.epsilon,
                          "--delta": budget.delta, "--columns": inputs.columns,
                          "--public": inputs.public, "--integer": syn.integer_cols,
                          "--binary": syn.binary_cols, "--float": syn.float_cols,
                          "--categorical": syn.categorical_cols,
                          "--categories": syn.categories or None,
                          "--bounds": syn.bounds or None, "--model-out": syn.model_out,
                          "--no-header": inputs.no_header or None,
                          "--n-components": (None if syn.n_components == "auto"
                                             else syn.n_components)}
            given = [k for k, v in data_flags.items() if v is not None]
            if given:
                raise InvalidDataError(
                    f"flags for a data file ({', '.join(given)}) given, but {source} is a "
                    "model file "
                    "(already fitted: sampling it costs nothing)")
            _from_model(source, n_rows, out, seed)
        else:
            _from_data(spending, source, n_rows, out, seed, budget.kwargs(), inputs, synthesis)

    run_user(run, spending)


def _from_model(model: str, n_rows: int, out: str, seed: int | None) -> None:
    """Sample a model file: a synthesizer's, or a Gaussian's / mixture's."""
    import json

    from ..exceptions import InvalidDataError
    from ..io import load, valid_header, write_table
    from ..synthesis import PrivateSynthesizer

    try:
        data = json.loads(Path(model).read_text())
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        data = None
    if isinstance(data, dict) and data.get("model") == "synthesizer":
        syn = PrivateSynthesizer.from_dict(data)
        rows = syn.sample(n_rows, random_state=seed)
        write_typed_table(out, rows, _out_names(syn.feature_names_in_), syn.kinds_, syn.dtypes_,
                          syn.categories_)
        click.echo(f"wrote {out} ({n_rows} synthetic rows from {_article(syn.method_)} "
                   f"synthesizer; privacy: {syn.privacy_spent_}, no further cost)")
        return
    if not Path(model).is_file():
        raise InvalidDataError(f"model file not found: {model}")
    est = load(model)
    rows = est.sample(n_rows, random_state=seed)
    X = rows[0] if isinstance(rows, tuple) else rows  # a mixture also returns labels
    names = [str(c) for c in getattr(est, "feature_names_in_", ())]
    cols = names if names and valid_header(names) else [f"x{j}" for j in range(X.shape[1])]
    write_table(out, X, cols)
    click.echo(f"wrote {out} ({n_rows} synthetic rows from {_article(est.method_)} model; "
               f"privacy: {est.privacy_spent_}, no further cost)")


def _out_names(names: list[str]) -> list[str]:
    from ..io import valid_header

    return names if names and valid_header(names) else [f"x{j}" for j in range(len(names))]


def _selected_names(data: str, read: InputFlags) -> list[str]:
    """The names of the columns a synthesis reads, before any data row: ``--columns``, else
    the file's (:func:`~privgauss.io.table_columns`)."""
    from ..io import table_columns

    return _names(read.columns) or table_columns(data, header=not read.no_header)


def declared_types(path: str, names: list[str]) -> tuple[list[str], list[str]]:
    """The kinds and dtypes a file declares for its columns ``names`` (Parquet's schema, a
    .npy file's dtype; a CSV/TSV declares none: floats). Reads no data row."""
    from ..synthesis.synthesizer import kind_of_dtype

    suffix = Path(path).suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq
        import pyarrow.types as pat

        schema = pq.read_schema(path)
        dtypes = []
        for c in names:
            try:
                t = schema.field(c).type
                dt = ("category" if pat.is_dictionary(t) or pat.is_string(t)
                      or pat.is_large_string(t) else np.dtype(t.to_pandas_dtype()).name)
            except (TypeError, KeyError, NotImplementedError):
                dt = "float64"
            dtypes.append(dt)
    elif suffix == ".npy":
        dt = np.load(path, mmap_mode="r", allow_pickle=False).dtype.name
        dtypes = [dt] * len(names)
    else:
        dtypes = ["float64"] * len(names)
    return [kind_of_dtype(t) for t in dtypes], dtypes


def _from_data(spending: Spending, data: str, n_rows: int, out: str, seed: int | None,
               budget: dict[str, Any], read: InputFlags, synthesis: SynthesisFlags) -> None:
    """Fit a synthesizer to a data file and sample it (one command)."""
    from ..exceptions import InvalidDataError
    from ..io import write_atomic
    from ..synthesis import PrivateSynthesizer

    model_out, n_components = synthesis.model_out, synthesis.n_components

    if model_out is not None and not Path(model_out).resolve().parent.is_dir():
        raise InvalidDataError(f"cannot write {model_out}: its folder does not exist")
    k: int | str = n_components
    if n_components != "auto":
        if not n_components.isdigit() or int(n_components) < 1:
            raise InvalidDataError("--n-components must be 'auto' or an integer >= 1")
        k = int(n_components)
    names = _selected_names(data, read)
    kinds, dtypes = declared_types(data, names)
    for kind, cols in synthesis.kinds().items():
        for c in cols:
            if c not in names:
                raise InvalidDataError(f"--{kind} names column {c!r}, which the data does not "
                                       f"have (its columns: {names})")
            j = names.index(c)
            kinds[j] = "category" if kind == "categorical" else kind
            dtypes[j] = {"integer": "int64", "binary": "int64", "float": "float64",
                         "categorical": "category"}[kind]
    text = [c for c, k in zip(names, kinds, strict=True) if k == "category"]
    stated_cats = synthesis.stated_categories()
    if text and Path(out).suffix.lower() == ".npy":
        raise InvalidDataError(f"{Path(out).name}: a .npy array holds numbers only; write the "
                               "categorical columns to a .csv or .parquet file")
    unstated = [c for c in text if c not in stated_cats]
    if unstated and budget.get("rho") is not None:
        raise InvalidDataError(
            f"the categories of {unstated} are released with DP thresholds, which need "
            "--epsilon and --delta; give those, or state each column's categories with "
            "--categories COL A,B,C")
    inputs = read.read(data, text=text)
    X = inputs.X if text else np.asarray(inputs.X, dtype=np.float64)
    if inputs.names != names:  # the file's own order of the selected columns
        order = [names.index(c) for c in inputs.names]
        kinds, dtypes, names = ([kinds[i] for i in order], [dtypes[i] for i in order],
                                inputs.names)
    stated: list[tuple[float, float] | None] = [None] * len(names)
    for c, lo, hi in synthesis.bounds:
        if c not in names:
            raise InvalidDataError(f"--bounds names column {c!r}, which the data does not have "
                                   f"(its columns: {names})")
        stated[names.index(c)] = (lo, hi)
    syn = PrivateSynthesizer(**budget, n_components=k, kinds=kinds, bounds=stated,
                             categories=stated_cats or None, random_state=seed,
                             accountant=spending.accountant_for(budget))
    syn.fit(X, public_X=inputs.public, feature_names=names)
    # the header (public metadata of the file) names the output's and the model's columns
    header = inputs.header if inputs.header is not None else [f"x{j}" for j in range(len(names))]
    syn.feature_names_in_ = _out_names(list(header))
    syn.dtypes_ = dtypes
    rows = syn.sample(n_rows, random_state=seed)
    write_typed_table(out, rows, syn.feature_names_in_, syn.kinds_, dtypes, syn.categories_)
    if model_out is not None:
        import json

        write_atomic(model_out, json.dumps(syn.to_dict(), indent=2) + "\n")
    path = model_description(syn, auto=n_components == "auto")
    plan = ", ".join(f"{step} {cost}" for step, cost in syn.plan_.items())
    click.echo(f"wrote {out} ({n_rows} synthetic rows from {path}; spent {syn.privacy_spent_}: "
               f"{plan})")
    if model_out is not None:
        click.echo(f"wrote {model_out}")


def model_description(syn: PrivateSynthesizer, *, auto: bool) -> str:
    """The dependence model a fitted synthesizer used, in words (for the CLI's message)."""
    copula = ("a Gaussian copula" if syn.n_components_ == 1
              else f"a {syn.n_components_}-component Gaussian-copula mixture")
    grid = getattr(syn, "grid_", None)
    if grid is not None:
        levels = grid.levels
        return (f"a DP dependence grid of {levels} levels per column over {copula} (the "
                "narrow-table path)")
    if syn.n_components_ == 1 and auto:
        return (f"the small-table path: {copula}, one component, as a mixture needs more rows "
                "at this budget")
    return copula


def write_typed_table(path: str, X: np.ndarray, names: list[str], kinds: list[str],
                      dtypes: list[str], categories: list[list[str] | None] | None = None
                      ) -> None:
    """Write synthetic rows atomically with their types: integer and 0/1 columns as integers
    (CSV), typed Parquet columns (int64, bool, float64 …), a .npy array of the one dtype all
    columns share (else float64); a categorical column's codes as its labels (``categories``:
    each column's, None for the others; a category not released: an empty CSV cell, a
    Parquet null), refused for a .npy file."""
    import csv

    from ..exceptions import InvalidDataError
    from ..io import atomic_path
    from ..synthesis.categories import decode
    from ..synthesis.synthesizer import cast_column

    p = Path(path)
    suffix = p.suffix.lower()
    if suffix not in (".csv", ".parquet", ".npy"):
        raise InvalidDataError(f"{p.name}: write .csv, .parquet or .npy")
    cats = categories or [None] * X.shape[1]
    if suffix == ".npy" and any(c is not None for c in cats):
        raise InvalidDataError(f"{p.name}: a .npy array holds numbers only; write the "
                               "categorical columns to a .csv or .parquet file")
    cols = [cast_column(X[:, j], dtypes[j], kinds[j]) if (c := cats[j]) is None
            else decode(X[:, j], c) for j in range(X.shape[1])]
    with atomic_path(p) as tmp:
        if suffix == ".npy":
            same = len(set(dtypes)) == 1
            arr = np.column_stack(cols).astype(dtypes[0] if same else np.float64)
            with open(tmp, "wb") as fh:
                np.save(fh, arr)
        elif suffix == ".csv":
            text = [["" if v is None else str(v) for v in col] if k == "category"
                    else [str(int(v)) if k != "float" else repr(float(v)) for v in col]
                    for col, k in zip(cols, kinds, strict=True)]
            with open(tmp, "w", newline="", encoding="utf-8") as fh:
                writer = csv.writer(fh)
                writer.writerow(names)
                writer.writerows(zip(*text, strict=True))
        else:
            try:
                import pyarrow as pa
                import pyarrow.parquet as pq
            except ImportError:
                raise InvalidDataError("writing .parquet needs pyarrow: pip install pyarrow"
                                       ) from None
            arrays = [c if (labels := cats[j]) is None else pa.DictionaryArray.from_arrays(
                          pa.array([None if v < 0 or v >= len(labels) else int(v)
                                    for v in np.rint(X[:, j]).astype(np.int64)],
                                   type=pa.int32()), pa.array(labels, type=pa.string()))
                      for j, c in enumerate(cols)]
            pq.write_table(pa.table(dict(zip(names, arrays, strict=True))), str(tmp))
