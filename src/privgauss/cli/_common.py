"""Shared pieces of the ``privgauss`` command line: error exits, registry-backed choices, budget
and fit options, input reading and atomic outputs."""

from __future__ import annotations

import contextlib
import json
import math
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import click
import numpy as np

from ..exceptions import EstimationFailed, InvalidDataError, PrivacyBudgetError
from ..io import atomic_path, read_table
from ..progress import progress_bars
from ..warnings import PrivacyWarning, SeededNoiseWarning

# PrivacyWarning: raised only when the user turned it into an error (-W error::...PrivacyWarning)
_USER_ERRORS = (InvalidDataError, PrivacyBudgetError, EstimationFailed, ValueError, OSError,
                PrivacyWarning)
# the command line's wording of a warning whose library text speaks of Python arguments
_CLI_WARNING_TEXT: dict[type[BaseException], str] = {
    SeededNoiseWarning: "--seed gives reproducible but NOT secure noise (numpy's seeded "
    "generator): fine for experiments, but omit --seed to release results from real private data",
}
_DEMO_PLOT = "privgauss-demo.png"


def _fail(message: str) -> None:
    click.echo(f"error: {' '.join(str(message).split())}", err=True)
    sys.exit(2)


class _RegistryChoice(click.Choice):
    """A ``click.Choice`` whose choices are read from a registry each time they are needed."""

    def __init__(self, choices: Callable[[], Sequence[str]]) -> None:
        self._get = choices
        super().__init__([], case_sensitive=True)

    @property  # type: ignore[override]  # click.Choice's plain attribute, read from the registry
    def choices(self) -> Sequence[str]:
        return tuple(self._get())

    @choices.setter
    def choices(self, value: Sequence[str]) -> None:  # set by click.Choice.__init__
        pass


def _gaussian_methods() -> list[str]:
    from ..estimators.gaussian import METHODS

    return list(METHODS)


def _mixture_methods() -> list[str]:
    from ..estimators.mixture import METHODS

    return ["auto", *METHODS]


def _experiment_names() -> list[str]:
    from ..experiments import EXPERIMENTS

    return list(EXPERIMENTS)


# ----------------------------------------------------------------------------------------------
# Shared options and plumbing
# ----------------------------------------------------------------------------------------------


def _budget_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    for opt in reversed(
        [
            click.option("--rho", type=float, default=None, help="rho-zCDP budget"),
            click.option("--epsilon", type=float, default=None, help="epsilon (alone: pure DP)"),
            click.option("--delta", type=float, default=None, help="delta of (eps, delta)-DP"),
        ]
    ):
        fn = opt(fn)
    return fn


def _fit_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    opts: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
        click.argument("data", type=click.Path(dir_okay=False)),
        click.option("--columns", default=None, help="comma-separated columns (CSV/Parquet)"),
        click.option("--public", "public", default=None, type=click.Path(dir_okay=False),
                     help="file of public rows (same columns); never charged to the budget"),
        _budget_options,
        click.option("--seed", type=int, default=None,
                     help="seed for reproducible (NOT secure) noise; omit for secure noise"),
        click.option("--out", type=click.Path(dir_okay=False), default=None,
                     help="write the model JSON here (default: print it)"),
        click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
                     help="write a PNG of the fitted ellipses (needs matplotlib)"),
        click.option("--dims", default="0,1", show_default=True,
                     help="two coordinates (indices or column names) for --plot"),
        click.option("--show-data", is_flag=True,
                     help="draw the private rows on --plot (the picture is NOT private)"),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def _check_budget_flags(**flags: float | None) -> None:
    """Refuse a given budget flag that is not a finite number in range (--rho, --epsilon > 0;
    --delta in [0, 1)) with a :class:`PrivacyBudgetError` naming the flag; None = not given."""
    for name, value in flags.items():
        if value is None:
            continue
        ok = math.isfinite(value) and (0 <= value < 1 if name == "delta" else value > 0)
        if not ok:
            what = "a number in [0, 1)" if name == "delta" else "a finite number > 0"
            raise PrivacyBudgetError(f"--{name.replace('_', '-')} must be {what}, got {value}")


def _budget(rho: float | None, epsilon: float | None, delta: float | None) -> dict[str, Any]:
    # validates before anything is read: each flag (inf and NaN refused), then the combination
    _check_budget_flags(rho=rho, epsilon=epsilon, delta=delta)
    if rho is None and epsilon is None:
        raise PrivacyBudgetError("give a privacy budget: --rho, or --epsilon (with --delta)")
    from ..privacy import make_budget

    make_budget(rho=rho, epsilon=epsilon, delta=delta)
    return {"rho": rho, "epsilon": epsilon, "delta": delta}


def _read_inputs(
    data: str, public: str | None, columns: str | None
) -> tuple[np.ndarray, np.ndarray | None, list[str]]:
    X, names = read_table(data, columns, with_names=True)
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    Xp = None
    if public is not None:
        Xp = read_table(public, columns)
        Xp = Xp.reshape(-1, 1) if Xp.ndim == 1 else Xp
        if Xp.ndim != 2 or Xp.shape[1] != X.shape[1]:
            raise InvalidDataError(
                f"the public file has {Xp.shape[-1]} features (columns) but the data has "
                f"{X.shape[1]}; give public rows with the same columns"
            )
    return X, Xp, names


def _parse_dims(dims: str, names: list[str]) -> tuple[int, int]:
    parts = [p.strip() for p in dims.split(",")]
    out = [names.index(p) if p in names else int(p) if p.lstrip("-").isdigit() else -1
           for p in parts]
    if len(out) != 2 or len(set(out)) != 2 or not all(0 <= i < len(names) for i in out):
        raise InvalidDataError(
            f"--dims must name two different columns (indices 0..{len(names) - 1} or names "
            f"{names})"
        )
    return out[0], out[1]


@contextlib.contextmanager
def _atomic_outputs(*paths: str | None) -> Iterator[list[Path | None]]:
    """Temporary paths for each given output, all renamed into place only if the block succeeds."""
    with contextlib.ExitStack() as stack:
        yield [None if p is None else stack.enter_context(atomic_path(p)) for p in paths]


def _check_outputs(out: str | None, plot_path: str | None, dims: str,
                   names: list[str]) -> tuple[int, int] | None:
    """Refuse unusable outputs before the fit spends any budget; the --plot coordinates."""
    for path in (out, plot_path):
        if path is not None and not Path(path).resolve().parent.is_dir():
            raise InvalidDataError(f"cannot write {path}: its folder does not exist")
    if plot_path is None:
        return None
    if len(names) < 2:
        raise InvalidDataError("--plot needs data with at least 2 columns")
    from ..plots import new_figure

    new_figure()  # raises a one-line ImportError now if matplotlib is missing
    return _parse_dims(dims, names)


def _finish_fit(model: Any, X: np.ndarray, names: list[str], out: str | None,
                plot_path: str | None, ij: tuple[int, int] | None, show_data: bool) -> None:
    """Write the model (or print it) and the plot, atomically together."""
    if names and len(names) == model.n_features_in_:  # the table's header: public metadata
        model.feature_names_in_ = np.array(names, dtype=object)
    text = json.dumps(model.to_dict(), indent=2) + "\n"
    with _atomic_outputs(out, plot_path) as (tmp_out, tmp_plot):
        if tmp_plot is not None:
            from ..plots import plot_models

            assert ij is not None  # _check_outputs gives the coordinates whenever --plot is set
            plot_models({f"private ({model.method_})": model}, tmp_plot, dims=ij,
                        data=X if show_data else None, feature_names=names)
        if tmp_out is not None:
            tmp_out.write_text(text)
    if out is None:
        click.echo(text, nl=False)
    else:
        click.echo(f"wrote {out} (method {model.method_}, spent {model.privacy_spent_})")
    if plot_path:
        note = " (it shows private rows: keep it local)" if show_data else ""
        click.echo(f"wrote {plot_path}{note}")


@contextlib.contextmanager
def _privacy_warnings_as_lines() -> Iterator[None]:
    """Show each privgauss privacy warning (:class:`~privgauss.warnings.PrivacyWarning`) once,
    as one ``warning: ...`` line on stderr instead of Python's two-line ``file:line: Category``
    form; other warnings and the warning filters (``-W``, ``PYTHONWARNINGS``) are untouched."""
    shown: set[tuple[type[Warning], str]] = set()
    with warnings.catch_warnings():  # restores warnings.showwarning afterwards
        python_show = warnings.showwarning

        def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 file: Any = None, line: str | None = None) -> None:
            if not issubclass(category, PrivacyWarning):
                python_show(message, category, filename, lineno, file, line)
                return
            text = " ".join(_CLI_WARNING_TEXT.get(category, str(message)).split())
            if (category, text) not in shown:
                shown.add((category, text))
                click.echo(f"warning: {text}", err=True)

        warnings.showwarning = show
        yield


# the library's parameter names as the command line spells them (messages are written for the
# Python API; on the command line they name the flags)
_FLAGS = (
    ("public_X=", "--public"), ("public_X", "--public"), ("mean_bound=", "--mean-bound"),
    ("cov_bounds=(lo, hi)", "--cov-bounds LO HI"), ("cov_bounds=", "--cov-bounds"),
    ("covariance='identity'", "--identity-covariance"), ("min_weight=", "--min-weight"),
    ("n_components", "--n-components"), ("separation=", "--separation"),
    ("constants='theory'", "--constants theory"), ("rho=", "--rho"), ("epsilon=", "--epsilon"),
    ("delta=", "--delta"), ("method=", "--method "), ("random_state", "--seed"),
)


def in_cli_words(message: str) -> str:
    """``message`` with the Python parameter names it mentions replaced by the CLI's flags."""
    for name, flag in _FLAGS:
        message = message.replace(name, flag)
    return message


def _run_user(fn: Callable[[], None]) -> None:
    """Run ``fn``, turning user errors (and a missing matplotlib) into one-line exits, and
    privacy warnings into one-line ``warning: ...`` messages."""
    try:
        # progress bars (chunk fits, PPE blocks, KSSU levels) when a person is watching
        with progress_bars(sys.stderr.isatty()), _privacy_warnings_as_lines():
            fn()
    except (*_USER_ERRORS, ImportError) as exc:
        _fail(in_cli_words(_CLI_WARNING_TEXT.get(type(exc), str(exc))))
    except KeyboardInterrupt:
        _fail("interrupted; no output written")

