"""Budgets are finite (DESIGN rule 12): infinite and NaN budgets are refused everywhere — budget
classes, estimators, the command line, model files — before any data is read; the non-private
reference is a separately named function."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

import privgauss as pg
from privgauss.cli import main as cli_main
from privgauss.metrics import nonprivate_gaussian

INVALID = [
    {"rho": math.inf},
    {"rho": -math.inf},
    {"rho": math.nan},
    {"epsilon": math.inf},
    {"epsilon": math.nan},
    {"epsilon": math.inf, "delta": 1e-6},
    {"epsilon": 1.0, "delta": math.inf},
    {"epsilon": 1.0, "delta": math.nan},
    {"epsilon": math.inf, "delta": 0.5},
]


class Untouchable:
    """Data that fails the test if anything reads it."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the data was touched ({name}) before the budget was checked")

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise AssertionError("the data was converted before the budget was checked")

    def __len__(self) -> int:
        raise AssertionError("the data was measured before the budget was checked")


@pytest.mark.parametrize("budget", INVALID)
def test_estimators_refuse_infinite_and_nan_budgets_before_touching_the_data(
    budget: dict[str, float],
) -> None:
    for est in (pg.PrivateGaussian(**budget), pg.PrivateGaussianMixture(2, **budget)):
        with pytest.raises(pg.PrivacyBudgetError):
            est.fit(Untouchable())
        with pytest.raises(pg.PrivacyBudgetError):
            est.fit(Untouchable(), public_X=Untouchable())
        assert not hasattr(est, "mean_") and not hasattr(est, "means_")


def test_an_infinite_budget_never_reaches_a_shared_accountant() -> None:
    acct = pg.Accountant(pg.ZCDP(1.0))
    X = np.random.default_rng(0).normal(size=(200, 2))
    with pytest.raises(pg.PrivacyBudgetError):
        pg.PrivateGaussian(rho=math.inf, accountant=acct, mean_bound=10.0,
                           cov_bounds=(0.1, 10.0)).fit(X)
    assert acct.spent is None and acct.ledger == []


def test_a_model_file_with_an_infinite_budget_is_refused(tmp_path: Path) -> None:
    X = np.random.default_rng(1).normal(size=(500, 2))
    g = pg.PrivateGaussian(rho=0.5, mean_bound=10.0, cov_bounds=(0.1, 10.0),
                           random_state=0).fit(X)
    model = g.to_dict()
    model["privacy"]["budget"] = {"notion": "zCDP", "rho": math.inf}
    path = tmp_path / "model.json"
    path.write_text(json.dumps(model))  # Python's json writes Infinity
    assert "Infinity" in path.read_text()
    with pytest.raises(pg.InvalidDataError):
        pg.load(path)


# ------------------------------------------------------------------------------ command line


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--rho", "inf"], "--rho"),
        (["--rho", "nan"], "--rho"),
        (["--epsilon", "inf"], "--epsilon"),
        (["--epsilon", "inf", "--delta", "1e-6"], "--epsilon"),
        (["--epsilon", "1", "--delta", "inf"], "--delta"),
        (["--epsilon", "nan", "--delta", "1e-6"], "--epsilon"),
        (["--epsilon", "1", "--delta", "nan"], "--delta"),
    ],
)
@pytest.mark.parametrize("command", ["fit-gaussian", "fit-mixture"])
def test_cli_refuses_infinite_and_nan_budget_flags_naming_the_flag(
    command: str, flags: list[str], named: str, tmp_path: Path
) -> None:
    # the data file does not exist: the budget is refused before the file is read
    args = [command, str(tmp_path / "missing.csv"), *flags]
    if command == "fit-mixture":
        args += ["--n-components", "2"]
    res = CliRunner().invoke(cli_main, args)
    assert res.exit_code == 2, res.output
    assert res.output.startswith("error: ") and named in res.output
    assert "missing.csv" not in res.output


@pytest.mark.parametrize(
    "args",
    [
        ["requirements", "gaussian", "public", "--d", "3", "--rho", "inf"],
        ["requirements", "mixture", "kssu", "--n", "1e5", "--d", "2", "--k", "2",
         "--epsilon", "inf", "--delta", "1e-6"],
        ["audit", "gaussian-mechanism", "--rho", "inf"],
        ["audit", "laplace-mechanism", "--epsilon", "nan"],
        ["demo", "--rho", "inf"],
        ["demo", "--mixture-epsilon", "inf"],
    ],
)
def test_other_commands_refuse_infinite_budget_flags(args: list[str]) -> None:
    res = CliRunner().invoke(cli_main, args)
    assert res.exit_code == 2, res.output
    flag = [a for a in args if a in ("--rho", "--epsilon", "--mixture-epsilon")][0]
    assert res.output.startswith("error: ") and flag in res.output


# ------------------------------------------------------------------------------ the reference


def test_nonprivate_reference_is_a_named_function_not_a_budget() -> None:
    X = np.random.default_rng(2).normal(size=(400, 3)) * [1.0, 2.0, 3.0] + 5.0
    mean, cov = nonprivate_gaussian(X)
    np.testing.assert_array_equal(mean, X.mean(axis=0))
    np.testing.assert_array_equal(cov, np.cov(X.T))
    assert isinstance(mean, np.ndarray) and isinstance(cov, np.ndarray)  # not a model
    one = nonprivate_gaussian(X[:, :1])[1]
    assert one.shape == (1, 1)
    for bad in (X[:1], X[:, 0], np.full((3, 2), np.nan)):
        with pytest.raises(ValueError):
            nonprivate_gaussian(bad)


def test_a_huge_finite_budget_approaches_the_nonprivate_reference() -> None:
    rng = np.random.default_rng(3)
    X = rng.normal(size=(4000, 3)) @ np.diag([1.0, 2.0, 0.5]) + [1.0, -2.0, 3.0]
    mean, cov = nonprivate_gaussian(X)
    g = pg.PrivateGaussian(rho=1e12, mean_bound=100.0, cov_bounds=(0.01, 100.0),
                           random_state=0).fit(X)
    assert np.linalg.norm(g.mean_ - mean) < 1e-3
    # the private covariance is the 1/n second moment; np.cov divides by n - 1
    assert np.linalg.norm(g.covariance_ - cov) < 1e-2 * np.linalg.norm(cov)
    g_small = pg.PrivateGaussian(rho=1e-3, mean_bound=100.0, cov_bounds=(0.01, 100.0),
                                 random_state=0).fit(X)
    assert np.linalg.norm(g_small.mean_ - mean) > np.linalg.norm(g.mean_ - mean)


def test_delta_checks_are_one_helper() -> None:
    """check_delta refuses anything outside (0, 1) — [0, 1) with zero_ok — including NaN,
    bools and non-numbers, with the caller's message; has_delta is δ > 0 of an (ε, δ) budget."""
    from privgauss.privacy import ZCDP, ApproxDP, PureDP, check_delta, has_delta

    PrivacyBudgetError = pg.PrivacyBudgetError

    assert check_delta(0.25) == 0.25 and check_delta(0, zero_ok=True) == 0.0
    for bad in (0.0, 1.0, -1e-9, float("nan"), float("inf"), True, "0.1", None):
        with pytest.raises(PrivacyBudgetError):
            check_delta(bad)
    for bad in (1.0, -1e-9, float("nan"), False):
        with pytest.raises(PrivacyBudgetError, match="mine"):
            check_delta(bad, zero_ok=True, message="mine")
    assert has_delta(ApproxDP(1.0, 1e-9))
    assert not any(has_delta(b) for b in (ApproxDP(1.0, 0.0), PureDP(1.0), ZCDP(1.0)))
