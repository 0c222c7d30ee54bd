"""The named privacy warnings (``privgauss.warnings``): each fires when it should and not
otherwise, is decided from public quantities or DP outputs only (the same on neighbouring
datasets), points at the caller of ``fit``, and reads as one line on the command line.

pyproject.toml ignores SeededNoiseWarning for the whole suite (it seeds everywhere); the tests
here record warnings with ``pytest.warns`` or ``simplefilter("always")``, which override it.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from _helpers import scale_free_rows
from click.testing import CliRunner

import privgauss as pg
from privgauss.audit import fit_outcome
from privgauss.cli import main
from privgauss.estimators._base import warn_before_fit
from privgauss.noise import NoiseSource
from privgauss.warnings import (
    BudgetSpentWarning,
    ClippedDataWarning,
    DiscreteDataWarning,
    LargeDeltaWarning,
    NoisyFitWarning,
    PrivacyWarning,
    RareCategoriesWarning,
    SeededNoiseWarning,
    SimplerModelWarning,
)

N = 2000
X = np.random.default_rng(0).normal(size=(N, 2))
NEIGHBOUR = X.copy()
NEIGHBOUR[-1] = [1e6, -1e6]  # replace-one: a gross error in one record
# the histogram method releases no scale bin from rows without a common scale: EstimationFailed
# after spending (5 rows are now refused before spending, by the method's requirement)
TINY = scale_free_rows(N)
ALL = (SeededNoiseWarning, LargeDeltaWarning, BudgetSpentWarning, ClippedDataWarning,
       DiscreteDataWarning, SimplerModelWarning, NoisyFitWarning, RareCategoriesWarning)


def _clip(**kw: object) -> pg.PrivateGaussian:  # mean only, a few draws: fast even when secure
    return pg.PrivateGaussian(rho=0.5, covariance="identity", mean_bound=10.0, method="clip", **kw)


def _caught(fn) -> tuple[list[type[Warning]], object]:  # noqa: ANN001
    """The privacy-warning categories emitted by ``fn()`` (in order) and its result or error."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        try:
            result: object = fn()
        except Exception as exc:  # noqa: BLE001
            result = exc
    return [w.category for w in rec if issubclass(w.category, PrivacyWarning)], result


# ------------------------------------------------------------------------------------------------
# the module and its exports
# ------------------------------------------------------------------------------------------------


def test_classes_exported_and_documented() -> None:
    assert pg.warnings.SeededNoiseWarning is SeededNoiseWarning
    assert pg.PrivacyWarning is PrivacyWarning and "PrivacyWarning" in pg.__all__
    assert issubclass(PrivacyWarning, UserWarning)
    assert "warnings" not in pg.__all__  # `from privgauss import *` keeps the stdlib's name
    assert set(pg.warnings.__all__) == {c.__name__ for c in (PrivacyWarning, *ALL)}
    for cls in ALL:
        assert issubclass(cls, PrivacyWarning)
        doc = cls.__doc__ or ""
        assert "**When**" in doc and "**What to do**" in doc, cls


def test_star_import_does_not_shadow_the_stdlib_warnings() -> None:
    namespace: dict[str, object] = {}
    exec("import warnings\nfrom privgauss import *", namespace)
    assert namespace["warnings"] is warnings


def test_package_modules_importing_warnings_get_the_stdlib() -> None:
    """``privgauss/warnings.py`` does not shadow ``import warnings`` inside the package."""
    src = Path(pg.__file__).parent
    checked = 0
    for info in pkgutil.walk_packages(pg.__path__, "privgauss."):
        rel = info.name.split(".")[1:]
        path = src.joinpath(*rel)
        path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
        if "\nimport warnings\n" not in path.read_text():
            continue
        module = importlib.import_module(info.name)
        assert module.warnings is sys.modules["warnings"], info.name
        checked += 1
    assert checked >= 4  # audit, estimators._base, cli._common, the learners


# ------------------------------------------------------------------------------------------------
# SeededNoiseWarning
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, np.random.default_rng(0)], ids=["int", "Generator"])
def test_seeded_noise_warns_gaussian(seed: object) -> None:
    with pytest.warns(SeededNoiseWarning, match="random_state=None") as rec:
        _clip(random_state=seed).fit(X)
    assert [w.category for w in rec] == [SeededNoiseWarning]  # once per fit, nothing else
    assert rec[0].filename == __file__  # points at the call of fit, not into the library


@pytest.mark.parametrize("seed", [1, np.random.default_rng(1)], ids=["int", "Generator"])
def test_seeded_noise_warns_mixture(seed: object) -> None:
    mix = pg.datasets.make_mixture(4000, 2, 2, separation=20.0, random_state=0).X
    est = pg.PrivateGaussianMixture(2, epsilon=2.0, delta=1e-6, method="sample-aggregate",
                                    random_state=seed, enforce_requirements=False)
    categories, result = _caught(lambda: est.fit(mix))
    assert categories[0] is SeededNoiseWarning and SeededNoiseWarning not in categories[1:]
    assert LargeDeltaWarning not in categories


def test_secure_noise_does_not_warn() -> None:
    categories, result = _caught(lambda: _clip().fit(X))
    assert categories == [] and isinstance(result, pg.PrivateGaussian)
    # the mixture estimator makes the same call; checked here without slow secure noise
    categories, _ = _caught(lambda: warn_before_fit(pg.ApproxDP(1.0, 1e-6), N, NoiseSource()))
    assert categories == []
    categories, _ = _caught(lambda: warn_before_fit(pg.ApproxDP(1.0, 1e-6), N, NoiseSource(3)))
    assert categories == [SeededNoiseWarning]


def test_pytest_ignores_seeded_noise_by_default() -> None:
    """The suite-wide filter of pyproject.toml is in force outside ``pytest.warns``."""
    with warnings.catch_warnings(record=True) as rec:  # keeps the filters in force
        _clip(random_state=0).fit(X)
    assert not [w for w in rec if issubclass(w.category, SeededNoiseWarning)]


# ------------------------------------------------------------------------------------------------
# LargeDeltaWarning
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("budget", "warns"),
    [
        ({"epsilon": 1.0, "delta": 1.0 / N}, True),  # delta = 1/n: the boundary warns
        ({"epsilon": 1.0, "delta": 0.1}, True),
        ({"epsilon": 1.0, "delta": 0.999 / N}, False),
        ({"epsilon": 1.0, "delta": 1e-6}, False),
        ({"epsilon": 1.0}, False),  # pure DP: no delta
        ({"rho": 50.0}, False),  # zCDP: no delta, however large rho
    ],
)
def test_large_delta(budget: dict[str, float], warns: bool) -> None:
    est = pg.PrivateGaussian(**budget, covariance="identity", mean_bound=10.0, random_state=0)
    categories, result = _caught(lambda: est.fit(X))
    assert isinstance(result, pg.PrivateGaussian)
    assert categories == [SeededNoiseWarning] + ([LargeDeltaWarning] if warns else [])
    if warns:
        with pytest.warns(LargeDeltaWarning, match=f"1/n = 1/{N}"):
            est.fit(X)


def test_large_delta_suggestion_is_computed_from_n() -> None:
    """At n = 2e6 the refused delta = 1e-6 must not be suggested back (issue #29): the hint is
    1/n^2 of the public n, nothing else."""
    n = 2_000_000
    with pytest.warns(LargeDeltaWarning) as rec:
        warn_before_fit(pg.ApproxDP(1.0, 1e-6), n, NoiseSource())
    msg = str(rec[0].message)
    assert "1/n^2 = 2.5e-13" in msg and "1e-6" not in msg and "1e-06" in msg  # only the given one
    # nor by the class's documentation (which the docs page shows): no fixed range of deltas
    # that includes the one refused here
    assert "1e-10" not in (LargeDeltaWarning.__doc__ or "")


def test_large_delta_from_a_shared_accountant_and_for_the_mixture() -> None:
    acct = pg.Accountant(pg.ApproxDP(4.0, 0.01))  # what remains is used: delta 0.01 >= 1/2000
    est = pg.PrivateGaussian(accountant=acct, covariance="identity", mean_bound=10.0,
                             random_state=0)
    with pytest.warns(LargeDeltaWarning):
        est.fit(X)
    mix = pg.PrivateGaussianMixture(2, epsilon=2.0, delta=0.01, method="sample-aggregate",
                                    random_state=0, enforce_requirements=False)
    categories, _ = _caught(lambda: mix.fit(X))
    assert LargeDeltaWarning in categories


# ------------------------------------------------------------------------------------------------
# BudgetSpentWarning
# ------------------------------------------------------------------------------------------------


def test_budget_spent_warns_just_before_estimation_failed() -> None:
    acct = pg.Accountant(pg.ApproxDP(2.0, 1e-6))
    est = pg.PrivateGaussian(method="histogram", accountant=acct, random_state=0,
                             epsilon=1.0, delta=1e-6)
    with pytest.warns(BudgetSpentWarning, match="stays spent") as rec:
        with pytest.raises(pg.EstimationFailed):
            est.fit(TINY)
    assert rec[-1].category is BudgetSpentWarning and rec[-1].filename == __file__
    assert acct.ledger  # the failed fit did charge the shared accountant


def test_budget_spent_as_an_error_keeps_the_failure_as_context() -> None:
    est = pg.PrivateGaussian(epsilon=1.0, delta=1e-6, method="histogram", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", BudgetSpentWarning)
        with pytest.raises(BudgetSpentWarning) as info:
            est.fit(TINY)
    assert isinstance(info.value.__context__, pg.EstimationFailed)


def test_budget_spent_for_the_mixture() -> None:
    est = pg.PrivateGaussianMixture(2, epsilon=1.0, delta=1e-6, method="sample-aggregate",
                                    random_state=0, enforce_requirements=False)
    categories, result = _caught(lambda: est.fit(X[:200]))
    assert isinstance(result, pg.EstimationFailed)
    assert categories == [SeededNoiseWarning, BudgetSpentWarning]


def test_no_budget_spent_warning_on_success_or_refusal() -> None:
    categories, result = _caught(lambda: _clip(random_state=0).fit(X))
    assert BudgetSpentWarning not in categories and isinstance(result, pg.PrivateGaussian)
    # a refusal before anything is spent: no warning at all, not even the seeded one
    refused = pg.PrivateGaussian(rho=0.5, method="public", random_state=0)
    categories, result = _caught(lambda: refused.fit(X))
    assert categories == [] and isinstance(result, pg.InvalidDataError)


# ------------------------------------------------------------------------------------------------
# nothing data-dependent: neighbouring datasets get the same warnings
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "data"),
    [
        (lambda: pg.PrivateGaussian(epsilon=1.0, delta=0.01, random_state=0), X),  # success
        (lambda: pg.PrivateGaussian(epsilon=1.0, delta=1e-6, method="histogram",
                                    random_state=0), TINY),  # fails, spends
        (lambda: pg.PrivateGaussianMixture(2, epsilon=2.0, delta=1e-3,
                                           method="sample-aggregate", random_state=0,
                                           enforce_requirements=False), X),
    ],
    ids=["gaussian-histogram", "gaussian-failure", "mixture"],
)
def test_neighbouring_datasets_get_the_same_warnings(make, data) -> None:  # noqa: ANN001
    neighbour = data.copy()
    neighbour[-1] = [1e6, -1e6]
    a, b = fit_outcome(make(), data), fit_outcome(make(), neighbour)
    assert a.kind == b.kind, (a, b)
    assert a.warning_categories == b.warning_categories, (a, b)
    names = {c.rsplit(".", 1)[-1] for c in a.warning_categories}
    assert "SeededNoiseWarning" in names
    assert ("BudgetSpentWarning" in names) == (a.kind == "failed")  # a function of ⊥ only


def test_warning_messages_hold_no_private_value() -> None:
    data = X.copy()
    data[:, 0] = 987.654321  # a value that must not appear anywhere
    est = pg.PrivateGaussian(epsilon=1.0, delta=0.5, method="histogram", random_state=0)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        try:
            est.fit(data)
        except pg.EstimationFailed:
            pass
    texts = [str(w.message) for w in rec if issubclass(w.category, PrivacyWarning)]
    assert len(texts) >= 2 and not any("987" in t for t in texts)


# ------------------------------------------------------------------------------------------------
# the command line: one readable line on stderr
# ------------------------------------------------------------------------------------------------


@pytest.fixture
def npy(tmp_path: Path) -> Path:
    path = tmp_path / "data.npy"
    np.save(path, X)
    return path


@pytest.mark.filterwarnings("default::privgauss.warnings.SeededNoiseWarning")
def test_cli_seeded_run_warns_once_in_one_line(npy: Path) -> None:
    import json

    res = CliRunner().invoke(main, ["fit-gaussian", str(npy), "--epsilon", "1", "--delta",
                                    "0.01", "--seed", "0"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["method"] == "histogram"  # stdout stays pure JSON
    lines = res.stderr.splitlines()
    assert len(lines) == 2, res.stderr
    assert lines[0].startswith("warning: --seed ") and "NOT secure" in lines[0]
    assert lines[1].startswith("warning: delta = 0.01 is at least 1/n = 1/2000")
    assert "SeededNoiseWarning" not in res.stderr and ".py:" not in res.stderr


def test_cli_secure_run_does_not_warn(npy: Path) -> None:
    res = CliRunner().invoke(main, ["fit-gaussian", str(npy), "--rho", "0.5", "--mean-bound", "10",
                                    "--identity-covariance", "--method", "clip"])
    assert res.exit_code == 0, res.output
    assert res.stderr == ""


def test_cli_failure_warns_then_errors(tmp_path: Path) -> None:
    path = tmp_path / "tiny.npy"
    np.save(path, TINY)
    res = CliRunner().invoke(main, ["fit-gaussian", str(path), "--epsilon", "1", "--delta",
                                    "1e-6", "--method", "histogram"])
    assert res.exit_code == 3  # failed after spending (2: refused before)
    lines = res.stderr.splitlines()
    assert len(lines) == 2 and lines[0].startswith("warning: the fit failed")
    assert lines[1].startswith("error: ")
