"""The CLI's option groups (privgauss.cli.options): a group's options reach the command as one
frozen parameter object, next to the command's own parameters, and a group whose dataclass
does not match its options is refused when the command is declared."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import click
import pytest
from click.testing import CliRunner

from privgauss.cli.options import (
    BudgetFlags,
    PriorFlags,
    budget_options,
    option_group,
    prior_options,
)


def test_groups_deliver_frozen_parameter_objects_in_help_order() -> None:
    seen: dict[str, object] = {}

    @click.command()
    @click.option("--k", type=int, default=1)
    @budget_options
    @prior_options("radius", "bounds")
    @click.option("--last", is_flag=True)
    def cmd(k: int, budget: BudgetFlags, prior: PriorFlags, last: bool) -> None:
        seen.update(k=k, budget=budget, prior=prior, last=last)

    res = CliRunner().invoke(cmd, ["--epsilon", "1", "--delta", "1e-6", "--cov-bounds", "1",
                                   "2", "--last", "--k", "3"])
    assert res.exit_code == 0, res.output
    assert seen == {"k": 3, "budget": BudgetFlags(None, 1.0, 1e-6),
                    "prior": PriorFlags(None, (1.0, 2.0)), "last": True}
    budget = seen["budget"]
    assert isinstance(budget, BudgetFlags) and budget.given
    with pytest.raises(dataclasses.FrozenInstanceError):
        budget.rho = 1.0  # type: ignore[misc]
    assert budget.kwargs() == {"rho": None, "epsilon": 1.0, "delta": 1e-6}
    flags = [p.opts[0] for p in cmd.params]
    assert flags == ["--k", "--rho", "--epsilon", "--delta", "--mean-bound", "--cov-bounds",
                     "--last"]


def test_a_group_whose_fields_are_not_its_options_is_refused() -> None:
    @dataclass(frozen=True)
    class Two:
        a: int
        b: int

    group = option_group(Two, "two", click.option("--a", type=int), click.option("--c"))
    with pytest.raises(TypeError, match="fields"):
        group(lambda two: None)
