"""The ``privgauss`` command line."""

from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click
import numpy as np

from . import __version__
from .exceptions import EstimationFailed, InvalidDataError, PrivacyBudgetError

_USER_ERRORS = (InvalidDataError, PrivacyBudgetError, EstimationFailed, ValueError, OSError)


def _fail(message: str) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(2)


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file and a rename: never a half-written file."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent or ".", prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_table(path: str, columns: str | None) -> np.ndarray:
    """Rows of a CSV, Parquet or .npy file as a float array (selected columns, if given)."""
    p = Path(path)
    if not p.exists():
        raise InvalidDataError(f"file not found: {path}")
    suffix = p.suffix.lower()
    cols = [c.strip() for c in columns.split(",")] if columns else None
    if suffix == ".npy":
        arr = np.load(p, allow_pickle=False)
        if cols:
            raise InvalidDataError("--columns needs a CSV or Parquet file with a header")
        return arr
    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover
        raise InvalidDataError("reading CSV/Parquet needs pandas: pip install pandas") from exc
    if suffix == ".parquet":
        frame = pd.read_parquet(p)
    elif suffix in (".csv", ".txt", ".tsv"):
        try:
            frame = pd.read_csv(p, sep="\t" if suffix == ".tsv" else ",")
        except pd.errors.EmptyDataError:
            raise InvalidDataError(f"{path} is empty") from None
    else:
        raise InvalidDataError(f"unsupported file type {suffix!r}: use .csv, .parquet or .npy")
    if cols:
        missing = [c for c in cols if c not in frame.columns]
        if missing:
            raise InvalidDataError(
                f"{path} has no column(s) {missing}; it has {list(frame.columns)}"
            )
        frame = frame[cols]
    return frame


def _budget_kwargs(rho: float | None, epsilon: float | None, delta: float | None) -> dict:
    if rho is None and epsilon is None:
        raise PrivacyBudgetError("give a privacy budget: --rho, or --epsilon (with --delta)")
    return {"rho": rho, "epsilon": epsilon, "delta": delta}


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="privgauss")
def main() -> None:
    """Differentially private estimation of Gaussians, helped by optional public data.

    \b
    Examples:
      privgauss demo
      privgauss fit-gaussian data.csv --rho 0.5 --public public.csv --out model.json
    """


@main.command()
@click.option("--n", "n", default=5000, show_default=True, help="private rows to simulate")
@click.option("--d", "d", default=10, show_default=True, help="dimension")
@click.option("--rho", default=0.5, show_default=True, help="zCDP budget per estimate")
@click.option("--seed", default=0, show_default=True, help="seed (fast, reproducible noise)")
def demo(n: int, d: int, rho: float, seed: int) -> None:
    """Private estimates on synthetic data, next to the non-private estimator.

    \b
    Example:
      privgauss demo --n 5000 --d 10 --rho 0.5
    """
    from .datasets import make_gaussian
    from .estimators import PrivateGaussian
    from .metrics import covariance_error, mahalanobis_mean_error

    rng = np.random.default_rng(seed)
    X, mu, cov = make_gaussian(
        n, d, mean=np.full(d, 1000.0), condition_number=10.0, random_state=rng
    )
    pub, _, _ = make_gaussian(d + 1, d, mean=mu, cov=cov, random_state=rng)
    click.echo(
        f"privgauss {__version__} demo: n={n} private rows, d={d}, mean=1000*1 (unknown to the "
        f"estimators), covariance with condition number 10; budget rho={rho} per fit "
        f"(= ({math.inf if math.isinf(rho) else _eps(rho):.3g}, 1e-6)-DP)"
    )
    rows = [("non-private (sample mean / covariance)", X.mean(0), np.cov(X.T), "-", 0.0)]
    runs: list[tuple[str, dict[str, Any], Any]] = [
        ("public, 1 public row, mean only (Sigma known)", {"covariance": cov}, pub[:1]),
        ("public, d+1 public rows, no bounds", {}, pub),
        (
            "coinpress, prior ball R=1e4, covariance in [0.1, 100]",
            {"mean_bound": 1e4 * math.sqrt(d), "cov_bounds": (0.1, 100.0)},
            None,
        ),
    ]
    for label, kw, public in runs:
        t0 = time.perf_counter()
        g = PrivateGaussian(rho=rho, random_state=seed, **kw).fit(X, public_X=public)
        rows.append((label, g.mean_, g.covariance_, g.method_, time.perf_counter() - t0))
    t0 = time.perf_counter()
    g = PrivateGaussian(epsilon=_eps(rho), delta=1e-6, random_state=seed).fit(X)
    rows.append(
        (
            "histogram, no bounds, (eps, 1e-6)-DP",
            g.mean_,
            g.covariance_,
            g.method_,
            time.perf_counter() - t0,
        )
    )
    click.echo(f"\n{'estimator':<56}{'mean err (Mahal.)':>18}{'cov err (rel. F)':>18}{'time s':>8}")
    for label, m, c, _method, secs in rows:
        click.echo(
            f"{label:<56}{mahalanobis_mean_error(m, mu, cov):>18.4f}"
            f"{covariance_error(c, cov):>18.4f}{secs:>8.2f}"
        )
    click.echo(
        "\nErrors: ||Sigma^-1/2 (mu_hat - mu)|| and ||Sigma^-1/2 Sigma_hat Sigma^-1/2 - I||_F "
        "against the true parameters; seeded noise (not for real releases)."
    )


def _eps(rho: float) -> float:
    from .accounting import zcdp_to_epsilon

    return zcdp_to_epsilon(rho, 1e-6)


@main.command("fit-gaussian")
@click.argument("data", type=click.Path(dir_okay=False))
@click.option("--columns", default=None, help="comma-separated columns to use (CSV/Parquet)")
@click.option("--public", "public", default=None, help="file of public rows (same columns)")
@click.option("--rho", type=float, default=None, help="zCDP budget")
@click.option("--epsilon", type=float, default=None, help="epsilon (pure DP, or with --delta)")
@click.option("--delta", type=float, default=None, help="delta for (epsilon, delta)-DP")
@click.option(
    "--method",
    default="auto",
    show_default=True,
    type=click.Choice(["auto", "clip", "coinpress", "public", "histogram", "hypothesis-selection"]),
)
@click.option("--mean-bound", type=float, default=None, help="prior radius R around --center 0")
@click.option("--cov-bounds", type=(float, float), default=None, help="eigenvalue bounds LO HI")
@click.option("--identity-covariance", is_flag=True, help="estimate the mean only (Sigma = I)")
@click.option(
    "--seed",
    type=int,
    default=None,
    help="seed for reproducible (NOT secure) noise; omit for secure noise",
)
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="write the model JSON")
def fit_gaussian(
    data: str,
    columns: str | None,
    public: str | None,
    rho: float | None,
    epsilon: float | None,
    delta: float | None,
    method: str,
    mean_bound: float | None,
    cov_bounds: tuple[float, float] | None,
    identity_covariance: bool,
    seed: int | None,
    out: str | None,
) -> None:
    """Fit a private Gaussian to the rows of DATA (CSV, Parquet or .npy).

    \b
    Examples:
      privgauss fit-gaussian data.csv --rho 0.5 --public public.csv --out model.json
      privgauss fit-gaussian data.csv --epsilon 1 --delta 1e-6 --columns age,income
    """
    from .estimators import PrivateGaussian

    try:
        X = read_table(data, columns)
        Xp = None if public is None else read_table(public, columns)
        g = PrivateGaussian(
            **_budget_kwargs(rho, epsilon, delta),
            method=method,
            mean_bound=mean_bound,
            cov_bounds=cov_bounds,
            covariance="identity" if identity_covariance else None,
            random_state=seed,
        ).fit(X, public_X=Xp)
    except _USER_ERRORS as exc:
        _fail(str(exc))
        return
    model = g.to_dict()
    text = json.dumps(model, indent=2)
    if out:
        write_atomic(out, text + "\n")
        click.echo(f"wrote {out} (method {g.method_}, spent {g.privacy_spent_})")
    else:
        click.echo(text)


@main.command()
@click.argument("name", type=click.Choice(["coinpress-mean", "one-public", "public-covariance"]))
@click.option("--trials", type=int, default=None, help="runs per point (default 100; 50 for cov)")
@click.option("--quick", is_flag=True, help="20 trials and 5 sample sizes")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=".",
              show_default=True, help="folder for NAME.csv and NAME.png")
def experiment(name: str, trials: int | None, quick: bool, seed: int, out_dir: str) -> None:
    """Reproduce a paper experiment on synthetic data: CSV of errors and a plot against n.

    \b
    coinpress-mean     CoinPress mean protocol (d=50, rho=0.5, R=10 sqrt(d))
    one-public         one public sample, mean k*1, k in {10, 100, 1000}, no bound
    public-covariance  covariance with d+1 public rows (d=10), no bounds
    \b
    Example:
      privgauss experiment one-public --quick --out results/
    """
    from . import experiments

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = experiments.run(name, trials=trials, quick=quick, seed=seed, progress=True)
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        experiments.write_csv(rows, Path(tmp) / "rows.csv")
        os.replace(Path(tmp) / "rows.csv", out / f"{name}.csv")
        try:
            experiments.plot(rows, Path(tmp) / "plot.png", title=name)
            os.replace(Path(tmp) / "plot.png", out / f"{name}.png")
            plotted = f" and {out / (name + '.png')}"
        except ImportError:
            plotted = " (install matplotlib for the plot: pip install 'privgauss[plot]')"
    click.echo(f"{'n':>7} {'k':>12} {'method':<28} {'trimmed mean':>13}")
    for r in rows:
        click.echo(f"{r['n']:>7} {str(r['k']):>12} {str(r['method']):<28} "
                   f"{float(r['trimmed_mean']):>13.4f}")
    click.echo(f"wrote {out / (name + '.csv')}{plotted}")


if __name__ == "__main__":  # pragma: no cover
    main()
