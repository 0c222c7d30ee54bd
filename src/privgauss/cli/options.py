"""Option groups of the ``privgauss`` command line: options that belong together (the budget,
the input files, the outputs of a fit, the prior) declared once and delivered to a command as
one frozen parameter object each.

:func:`option_group` declares a group's click options on a command and packs their values
into the group's dataclass, as click's own ``pass_context`` wraps a callback (the wrapper keeps
the callback's declared parameters). The help texts, flags and defaults are those of the
options themselves; a group changes only how the command receives them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from functools import update_wrapper
from typing import Any

import click

from ._common import Inputs, budget_kwargs, check_outputs, finish_fit, read_inputs

__all__ = [
    "BudgetFlags",
    "InputFlags",
    "OutputFlags",
    "PriorFlags",
    "budget_options",
    "fit_options",
    "input_options",
    "option_group",
    "output_options",
    "prior_options",
]

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def option_group(cls: type[Any], name: str, *options: Decorator) -> Decorator:
    """A decorator that declares ``options`` (click option or argument decorators, top to
    bottom as in the help) on a command and passes their values to it as one ``cls`` instance,
    keyword ``name``. ``cls`` is a dataclass with one field per option, named as the option's
    parameter (checked when the command is declared)."""
    fields = tuple(f.name for f in dataclasses.fields(cls))

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        def command(*args: Any, **kwargs: Any) -> Any:
            kwargs[name] = cls(**{f: kwargs.pop(f) for f in fields})
            return fn(*args, **kwargs)

        update_wrapper(command, fn)  # keeps the parameters declared below the group
        before = len(getattr(command, "__click_params__", ()))
        out: Callable[..., Any] = command
        for opt in reversed(options):
            out = opt(out)
        declared = {p.name for p in getattr(out, "__click_params__", [])[before:]}
        if declared != set(fields):
            raise TypeError(f"{cls.__name__}'s fields {sorted(fields)} are not its options' "
                            f"parameters {sorted(str(p) for p in declared)}")
        return out

    return decorate


def _chain(*decorators: Decorator) -> Decorator:
    """The decorators applied as if stacked top to bottom."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        for dec in reversed(decorators):
            fn = dec(fn)
        return fn

    return decorate


# ----------------------------------------------------------------------------------------------
# The budget: --rho, --epsilon, --delta
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BudgetFlags:
    """The budget flags as given (None: not given)."""

    rho: float | None
    epsilon: float | None
    delta: float | None

    @property
    def given(self) -> bool:
        """Whether a budget was given (--rho or --epsilon)."""
        return self.rho is not None or self.epsilon is not None

    def kwargs(self) -> dict[str, Any]:
        """The budget's keywords (``rho``, ``epsilon``, ``delta``), each flag and their
        combination checked (:func:`~privgauss.cli._common.budget_kwargs`)."""
        return budget_kwargs(self.rho, self.epsilon, self.delta)


budget_options = option_group(
    BudgetFlags, "budget",
    click.option("--rho", type=float, default=None, help="rho-zCDP budget"),
    click.option("--epsilon", type=float, default=None, help="epsilon (alone: pure DP)"),
    click.option("--delta", type=float, default=None, help="delta of (eps, delta)-DP"),
)


# ----------------------------------------------------------------------------------------------
# The input files: --columns, --no-header, --public
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InputFlags:
    """How to read the data file and the public rows."""

    columns: str | None
    no_header: bool
    public: str | None

    def read(self, data: str, text: list[str] | None = None) -> Inputs:
        """The private rows of ``data`` and the public rows (:func:`read_inputs`; ``text``:
        categorical columns, read as strings)."""
        return read_inputs(data, self.public, self.columns, header=not self.no_header,
                           text=text)


def input_options(columns_help: str, no_header_help: str, public_help: str) -> Decorator:
    """The :class:`InputFlags` options (keyword ``inputs``), with each command's help texts."""
    return option_group(
        InputFlags, "inputs",
        click.option("--columns", default=None, help=columns_help),
        click.option("--no-header", is_flag=True, help=no_header_help),
        click.option("--public", default=None, type=click.Path(dir_okay=False),
                     help=public_help),
    )


# ----------------------------------------------------------------------------------------------
# The outputs of a fit: --out, --plot, --dims, --show-data
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OutputFlags:
    """Where a fit's model and plot go."""

    out: str | None
    plot_path: str | None
    dims: str
    show_data: bool

    def check(self, names: list[str]) -> tuple[int, int] | None:
        """Refuse unusable outputs before the fit spends anything; the --plot coordinates
        (:func:`check_outputs`)."""
        return check_outputs(self.out, self.plot_path, self.dims, names)

    def finish(self, model: Any, inputs: Inputs, ij: tuple[int, int] | None) -> None:
        """Write the model (or print it) and the plot (:func:`finish_fit`)."""
        finish_fit(model, inputs, self.out, self.plot_path, ij, self.show_data)


output_options = option_group(
    OutputFlags, "output",
    click.option("--out", type=click.Path(dir_okay=False), default=None,
                 help="write the model JSON here (default: print it)"),
    click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
                 help="write a PNG of the fitted ellipses (needs matplotlib)"),
    click.option("--dims", default="0,1", show_default=True,
                 help="two coordinates (indices or column names) for --plot"),
    click.option("--show-data", is_flag=True,
                 help="draw the private rows on --plot (the picture is NOT private)"),
)


# ----------------------------------------------------------------------------------------------
# The prior: --mean-bound, --cov-bounds
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PriorFlags:
    """A stated prior: a radius R about the origin for the mean(s), eigenvalue bounds LO HI
    for the covariance(s) (None: not stated)."""

    mean_bound: float | None
    cov_bounds: tuple[float, float] | None


def prior_options(mean_help: str, cov_help: str) -> Decorator:
    """The :class:`PriorFlags` options (keyword ``prior``), with each command's help texts."""
    return option_group(
        PriorFlags, "prior",
        click.option("--mean-bound", type=float, default=None, help=mean_help),
        click.option("--cov-bounds", type=(float, float), default=None, help=cov_help),
    )


# ----------------------------------------------------------------------------------------------
# A fit command's shared options: DATA, inputs, budget, seed, outputs
# ----------------------------------------------------------------------------------------------

fit_options = _chain(
    click.argument("data", type=click.Path(dir_okay=False)),
    input_options(
        "comma-separated columns to use, each once (names; with --no-header or a .npy file, "
        "positions 0, 1, ...)",
        "DATA and --public are CSV/TSV files without a header line (by default their first "
        "line is the header); columns are then named 0, 1, ...",
        "file of public rows; never charged to the budget. When it and DATA both name their "
        "columns, its columns are matched to DATA's by name"),
    budget_options,
    click.option("--seed", type=int, default=None,
                 help="seed for reproducible (NOT secure) noise; omit for secure noise"),
    output_options,
)
