"""``privgauss synthesize``: DP synthetic rows from a model file."""

from __future__ import annotations

import click

from ._common import _run_user

_EXIT_STATUS = ("Exit status: 0 done; 2 refused (a model file that is missing or fails the load "
                "checks, a bad request). Sampling spends no budget.")


@click.command("synthesize", epilog=_EXIT_STATUS)
@click.argument("model", type=click.Path(dir_okay=False))
@click.option("-n", "--n-rows", "n_rows", type=int, required=True, help="rows to draw")
@click.option("-o", "--out", required=True, type=click.Path(dir_okay=False),
              help="output table: .csv (with a header), .parquet or .npy")
@click.option("--seed", type=int, default=None,
              help="seed of the sampler (reproducible rows; sampling is post-processing)")
def synthesize(model: str, n_rows: int, out: str, seed: int | None) -> None:
    """Draw N synthetic rows from the private MODEL (a file written by fit-gaussian or
    fit-mixture) and write them to a table with the model's column names (x0, x1, ... when
    the model has none, or names that could not be a header).

    The rows are post-processing of the model's DP outputs: they cost no budget and carry the
    model's guarantee (its file's "privacy" section), whatever is done with them. The model
    file is checked on load (finite, bounded, symmetric positive semi-definite parameters; a
    ledger that composes to the stated spent) but it is a record, not a certificate: anyone
    can edit it.

    \b
    Examples:
      privgauss fit-mixture data.csv -k 4 --epsilon 1 --delta 1e-6 --out mix.json
      privgauss synthesize mix.json -n 10000 -o synthetic.csv
    """
    from ..exceptions import InvalidDataError
    from ..io import load, valid_header, write_table

    def run() -> None:
        if n_rows < 1:
            raise InvalidDataError("--n-rows must be at least 1")
        est = load(model)
        rows = est.sample(n_rows, random_state=seed)
        X = rows[0] if isinstance(rows, tuple) else rows  # a mixture also returns labels
        names = [str(c) for c in getattr(est, "feature_names_in_", ())]
        cols = names if names and valid_header(names) else [f"x{j}" for j in range(X.shape[1])]
        write_table(out, X, cols)
        click.echo(f"wrote {out} ({n_rows} synthetic rows from a {est.method_} model; "
                   f"privacy: {est.privacy_spent_}, no further cost)")

    _run_user(run)
