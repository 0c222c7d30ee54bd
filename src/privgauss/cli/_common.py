"""Shared pieces of the ``privgauss`` command line: error exits and their statuses,
registry-backed choices, budget checks, input reading and atomic outputs (the option groups
that deliver them to the commands are in :mod:`privgauss.cli.options`). The module is private
to the package; the names the command modules import from it are its public ones (no other
module's ``_private`` names are imported)."""

from __future__ import annotations

import contextlib
import json
import math
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

import click
import numpy as np

from ..exceptions import EstimationFailed, InvalidDataError, PrivacyBudgetError
from ..io import atomic_path, column_names, read_table
from ..privacy import Accountant, Budget
from ..progress import on_terminal
from ..warnings import ClippedDataWarning, PrivacyWarning, SeededNoiseWarning

# PrivacyWarning: raised only when the user turned it into an error (-W error::...PrivacyWarning)
_USER_ERRORS = (InvalidDataError, PrivacyBudgetError, EstimationFailed, ValueError, OSError,
                PrivacyWarning)
# the command line's wording of a warning whose library text speaks of Python arguments
_CLI_WARNING_TEXT: dict[type[BaseException], str] = {
    SeededNoiseWarning: "--seed gives reproducible but NOT secure noise (numpy's seeded "
    "generator): fine for experiments, but omit --seed to release results from real private data",
}
DEMO_PLOT = "privgauss-demo.png"

#: exit status of a command refused before anything was spent (bad input, a plan that cannot
#: work, a budget that cannot pay)
EXIT_REFUSED = 2
#: exit status of a command that failed after its fit had spent budget (the budget stays spent)
EXIT_SPENT = 3
EXIT_STATUS_HELP = (
    "Exit status: 0 done; 2 refused before anything was spent (bad input, a plan that cannot "
    "work, a budget that cannot pay); 3 failed after the fit had spent budget (a failed fit, "
    "which is itself a DP output, or outputs that could not be written): that budget stays "
    "spent, count it before retrying on the same rows."
)


def _fail(message: str, status: int = EXIT_REFUSED) -> NoReturn:
    click.echo(f"error: {' '.join(str(message).split())}", err=True)
    sys.exit(status)


class Spending:
    """The accountant a command's fit charges, so that a failure can say whether (and what)
    it had spent: exit status 3 and the accountant's spent total, or 2 when nothing was."""

    def __init__(self) -> None:
        self.accountant: Accountant | None = None

    def accountant_for(self, budget: dict[str, Any]) -> Accountant:
        """A fresh accountant of the command's budget (``budget_kwargs``'s keywords), to pass to the
        estimator as ``accountant=``."""
        from ..privacy import make_budget

        self.accountant = Accountant(make_budget(**budget))
        return self.accountant

    @property
    def spent(self) -> Budget | None:
        return None if self.accountant is None else self.accountant.spent


class RegistryChoice(click.Choice):
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


def gaussian_methods() -> list[str]:
    from .. import methods

    return ["auto", *methods.names("gaussian")]


def mixture_methods() -> list[str]:
    from .. import methods

    return ["auto", *methods.names("mixture")]


def experiment_names() -> list[str]:
    from ..experiments import EXPERIMENTS

    return list(EXPERIMENTS)


# ----------------------------------------------------------------------------------------------
# Shared plumbing
# ----------------------------------------------------------------------------------------------


def check_budget_flags(**flags: float | None) -> None:
    """Refuse a given budget flag that is not a finite number in range (--rho, --epsilon in
    (0, MAX_BUDGET]; --delta in [0, 1)) with a :class:`PrivacyBudgetError` naming the flag;
    None = not given."""
    from ..privacy.budgets import MAX_BUDGET

    for name, value in flags.items():
        if value is None:
            continue
        ok = math.isfinite(value) and (0 <= value < 1 if name == "delta"
                                       else 0 < value <= MAX_BUDGET)
        if not ok:
            what = ("a number in [0, 1)" if name == "delta"
                    else f"a number > 0 and at most {MAX_BUDGET:g}")
            raise PrivacyBudgetError(f"--{name.replace('_', '-')} must be {what}, got {value}")


def budget_kwargs(rho: float | None, epsilon: float | None, delta: float | None) -> dict[str, Any]:
    # validates before anything is read: each flag (inf and NaN refused), then the combination
    check_budget_flags(rho=rho, epsilon=epsilon, delta=delta)
    if rho is None and epsilon is None:
        raise PrivacyBudgetError("give a privacy budget: --rho, or --epsilon (with --delta)")
    from ..privacy import make_budget

    make_budget(rho=rho, epsilon=epsilon, delta=delta)
    return {"rho": rho, "epsilon": epsilon, "delta": delta}


def _streamed_npy(data: str, columns: str | None) -> tuple[Any, list[str]] | None:
    """A 2-D numeric C-ordered ``.npy`` file as a lazy dask array (read in chunks by the fit,
    never loaded whole) with its column names "0", "1", …; None for any other input, which
    :func:`~privgauss.io.read_table` reads (and refuses with its messages)."""
    p = Path(data)
    if columns or p.suffix.lower() != ".npy" or not p.is_file():
        return None
    try:
        head = np.load(p, mmap_mode="r", allow_pickle=False)  # the header; no data is read
    except (ValueError, OSError):
        return None
    if (head.ndim != 2 or head.size == 0 or head.dtype.kind not in "biuf"
            or not head.flags.c_contiguous):
        return None
    from ..backends import open_array

    return open_array(p), [str(i) for i in range(head.shape[1])]


class Inputs(NamedTuple):
    """What a fit command read: the private rows (a dask array for a streamed ``.npy`` file),
    the public rows in the same column order, the columns' names (positions "0", "1", … when
    the file names none) and the header's names (None without a header: they are public
    metadata, and the only names a model file gets)."""

    X: Any
    public: np.ndarray | None
    names: list[str]
    header: list[str] | None


def read_inputs(data: str, public: str | None, columns: str | None,
                 header: bool = True, text: list[str] | None = None) -> Inputs:
    """The private and public rows of a fit command. Whether a CSV/TSV file has a header line
    comes from ``header`` (``--no-header``), never from its content. ``text``: categorical
    columns, read as strings (``synthesize``; see :func:`~privgauss.io.read_table`)."""
    streamed = None if text is not None else _streamed_npy(data, columns)
    if streamed is not None:
        X, names = streamed
        named = False
    else:
        X, names = read_table(data, columns, with_names=True, header=header, text=text)
        named = column_names(data, header=header) is not None
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    Xp = None if public is None else _public_rows(public, names if named else None, columns,
                                                   header, X.shape[1], text)
    return Inputs(X, Xp, names, names if named else None)


def _public_rows(public: str, names: list[str] | None, columns: str | None, header: bool,
                 d: int, text: list[str] | None = None) -> np.ndarray:
    """The public file's rows: its columns ``names`` in that order when both files name their
    columns (refused, naming them, when some are missing), else its ``columns`` by position."""
    public_names = column_names(public, header=header)
    if names is not None and public_names is not None:
        missing = [c for c in names if c not in public_names]
        if missing:
            raise InvalidDataError(
                f"the public file has no column(s) {missing}: its columns are matched to the "
                f"data's by name (it has {public_names}); give it those columns"
            )
        Xp = read_table(public, names, header=header, text=text)
    else:
        Xp = read_table(public, columns, header=header, text=text)
    Xp = Xp.reshape(-1, 1) if Xp.ndim == 1 else Xp
    if Xp.ndim != 2 or Xp.shape[1] != d:
        raise InvalidDataError(
            f"the public file has {Xp.shape[-1]} features (columns) but the data has "
            f"{d}; give public rows with the same columns"
        )
    return Xp


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
def atomic_outputs(*paths: str | None) -> Iterator[list[Path | None]]:
    """Temporary paths for each given output, all renamed into place only if the block succeeds."""
    with contextlib.ExitStack() as stack:
        yield [None if p is None else stack.enter_context(atomic_path(p)) for p in paths]


def check_outputs(out: str | None, plot_path: str | None, dims: str,
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


def plot_label(method: str) -> str:
    """The legend label of a fitted model in ``--plot``: says it is a DP fit and by which
    method ("private (public)" read as a contradiction when the method was ``public``)."""
    return f"DP fit (method {method})"


def finish_fit(model: Any, inputs: Inputs, out: str | None, plot_path: str | None,
                ij: tuple[int, int] | None, show_data: bool) -> None:
    """Write the model (or print it) and the plot, atomically together."""
    X, names = inputs.X, inputs.names
    if inputs.header is not None and len(inputs.header) == model.n_features_in_:
        model.feature_names_in_ = np.array(inputs.header, dtype=object)  # public metadata
    text = json.dumps(model.to_dict(), indent=2) + "\n"
    with atomic_outputs(out, plot_path) as (tmp_out, tmp_plot):
        if tmp_plot is not None:
            from ..plots import plot_models

            assert ij is not None  # check_outputs gives the coordinates whenever --plot is set
            plot_models({plot_label(model.method_): model}, tmp_plot, dims=ij,
                        data=np.asarray(X) if show_data else None, feature_names=names)
        if tmp_out is not None:
            tmp_out.write_text(text)
    if out is None:
        click.echo(text, nl=False)
    else:
        frac = getattr(model, "clipped_fraction_", None)  # in the JSON too (stdout without --out)
        clipped = "" if frac is None else f", clipped fraction {frac:.2%} (DP)"
        click.echo(f"wrote {out} (method {model.method_}, spent {model.privacy_spent_}{clipped})")
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
            if issubclass(category, ClippedDataWarning):  # names a parameter: the flag
                text = in_cli_words(text)
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
    ("clip_scale", "--clip-scale"), ("header=False", "--no-header"),
)


def in_cli_words(message: str) -> str:
    """``message`` with the Python parameter names it mentions replaced by the CLI's flags."""
    for name, flag in _FLAGS:
        message = message.replace(name, flag)
    return message


def run_user(fn: Callable[[], None], spending: Spending | None = None) -> None:
    """Run ``fn``, turning user errors (and a missing matplotlib) into one-line exits, and
    privacy warnings into one-line ``warning: ...`` messages. The exit status is 2, or 3 when
    ``spending``'s accountant had charged something (the message then says what it spent)."""
    try:
        # progress (loop bars, the status line of releases) when a person is watching
        with on_terminal(), _privacy_warnings_as_lines():
            fn()
    except (*_USER_ERRORS, ImportError, KeyboardInterrupt) as exc:
        if isinstance(exc, KeyboardInterrupt):
            message = "interrupted; no output written"
        else:
            message = in_cli_words(_CLI_WARNING_TEXT.get(type(exc), str(exc)))
        spent = None if spending is None else spending.spent
        if spent is None:
            _fail(message)
        elif not isinstance(exc, EstimationFailed):  # whose message says what was spent
            message = f"{message.rstrip('.')} (after spending {spent}, which stays spent)"
        _fail(message, EXIT_SPENT)
