"""Hostile and malformed input (hypothesis) at every public entry point and CLI command.

Every generated case must end in a valid result or a typed error with a message — never an
unhandled numpy/scipy exception, a hang, budget spent on invalid input, or a modified input.
:func:`run_case` is the one oracle; ``benchmarks/hostile_deep.py`` runs the same strategies with
≥ 2,000 examples per entry point and counts the outcomes.
"""

from __future__ import annotations

import math
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import privgauss as pg
from privgauss import mechanisms
from privgauss.cli import main as cli_main
from privgauss.estimators.gaussian import METHODS as GAUSSIAN_METHODS
from privgauss.estimators.mixture import METHODS as MIXTURE_METHODS

#: the typed errors a user may see (InvalidDataError and PrivacyBudgetError are ValueErrors)
ALLOWED = (pg.InvalidDataError, pg.PrivacyBudgetError, pg.EstimationFailed, ValueError, TypeError)
#: never acceptable, even though some subclass ValueError (LinAlgError does)
FORBIDDEN = (np.linalg.LinAlgError, ArithmeticError, IndexError, KeyError, AttributeError)
SPENDS_ON_FAILURE = (pg.EstimationFailed,)
EXAMPLES = 25  # per entry point in CI; the deep tier runs >= 2,000

# ------------------------------------------------------------------------------------------
# strategies
# ------------------------------------------------------------------------------------------

MAGNITUDES = (1e-300, 1e-6, 1.0, 1e6, 1e150, 1e300)


@st.composite
def numeric_matrix(
    draw: st.DrawFn, d: int | None = None, max_rows: int = 30, min_rows: int = 1
) -> np.ndarray:
    """A float matrix that may be valid, or poisoned in one of many ways."""
    n = draw(st.integers(min_rows, max(min_rows, max_rows)))
    d = draw(st.integers(1, 4)) if d is None else d
    seed = draw(st.integers(0, 2**16))
    X = np.random.default_rng(seed).normal(size=(n, d))
    X = X * draw(st.sampled_from(MAGNITUDES)) + draw(st.sampled_from((0.0, 1e12, -1e12)))
    poison = draw(
        st.sampled_from(
            ("none", "none", "nan", "inf", "duplicate", "constant-column", "all-equal", "zeros")
        )
    )
    i, j = draw(st.integers(0, n - 1)), draw(st.integers(0, d - 1))
    if poison == "nan":
        X[i, j] = np.nan
    elif poison == "inf":
        X[i, j] = draw(st.sampled_from((np.inf, -np.inf)))
    elif poison == "duplicate":
        X[:] = X[i]
    elif poison == "constant-column":
        X[:, j] = X[i, j]
    elif poison == "all-equal":
        X[:] = draw(st.sampled_from((0.0, 1.0, 1e300)))
    elif poison == "zeros":
        X[:] = 0.0
    return X


@st.composite
def hostile_data(draw: st.DrawFn, d: int | None = None) -> Any:
    """Anything a user might pass as data: arrays of every shape and dtype, lists, frames."""
    kind = draw(
        st.sampled_from(
            (
                "matrix", "matrix", "matrix", "float32", "int", "bool", "complex", "object",
                "strings", "list", "ragged", "0-d", "1-d", "3-d", "empty-rows", "empty-cols",
                "frame", "frame-text", "none", "scalar",
            )
        )
    )
    X = draw(numeric_matrix(d=d))
    if kind == "float32":
        with np.errstate(over="ignore"):
            return X.astype(np.float32)
    if kind == "int":
        return np.nan_to_num(np.clip(X, -1e9, 1e9)).astype(np.int64)
    if kind == "bool":
        return X > 0
    if kind == "complex":
        return X + 1j
    if kind == "object":
        out = X.astype(object)
        out[0, 0] = draw(st.sampled_from(("a", None, [1.0], 1.5)))
        return out
    if kind == "strings":
        return X.astype(str)
    if kind == "list":
        return X.tolist()
    if kind == "ragged":
        rows = X.tolist()
        return [rows[0] + [1.0], *rows[1:]] if len(rows) > 1 else [[1.0], [1.0, 2.0]]
    if kind == "0-d":
        return np.float64(X.ravel()[0])
    if kind == "1-d":
        return X[:, 0]
    if kind == "3-d":
        return X[None, :, :]
    if kind == "empty-rows":
        return X[:0]
    if kind == "empty-cols":
        return X[:, :0]
    if kind == "frame":
        return pd.DataFrame(X, columns=[f"c{k}" for k in range(X.shape[1])])
    if kind == "frame-text":
        frame = pd.DataFrame(X, columns=[f"c{k}" for k in range(X.shape[1])])
        frame["label"] = "x"
        return frame
    if kind == "none":
        return None
    if kind == "scalar":
        return 3.0
    return X


def dimension(X: Any) -> int | None:
    """The feature count of a 2-D array with columns (for matching public data), else None."""
    ok = isinstance(X, np.ndarray) and X.ndim == 2 and X.shape[1] > 0
    return X.shape[1] if ok else None


def hostile_public(d: int | None) -> st.SearchStrategy[Any]:
    """None, or public rows of the right dimension, another dimension, or hostile."""
    return st.one_of(
        st.none(),
        numeric_matrix(d=d, min_rows=(d or 1) + 1, max_rows=(d or 1) + 3)
        if d is not None
        else st.none(),
        numeric_matrix(d=d, max_rows=6) if d is not None else st.none(),
        numeric_matrix(d=(d or 1) + 1, max_rows=6),
        hostile_data(d=d),
    )


# ------------------------------------------------------------------------------------------
# the oracle
# ------------------------------------------------------------------------------------------


def _snapshot(x: Any) -> Any:
    if isinstance(x, pd.DataFrame):
        return x.copy(deep=True)
    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, list):
        return [list(r) if isinstance(r, list) else r for r in x]
    return x


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, pd.DataFrame):
        return a.equals(b)
    if isinstance(a, np.ndarray) and a.dtype == object:
        return b.dtype == object and repr(a.tolist()) == repr(b.tolist())
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(
            a, b, equal_nan=a.dtype.kind in "fc"
        )
    if isinstance(a, list):
        return repr(a) == repr(b)
    return True


def _raised_in_privgauss(exc: BaseException) -> bool:
    """True when the innermost frame of the traceback is privgauss code (a deliberate raise),
    or the exception is scikit-learn's estimator protocol (its parameter validation and
    fitted-state check, which the estimators use as scikit-learn estimators do)."""
    from sklearn.exceptions import NotFittedError
    from sklearn.utils._param_validation import InvalidParameterError

    if isinstance(exc, InvalidParameterError | NotFittedError):
        return True
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and "privgauss" in frames[-1].filename.replace("\\", "/")


def run_case(call: Callable[[], Any], inputs: tuple[Any, ...], acct: pg.Accountant | None,
             check_result: Callable[[Any], None] | None = None) -> str:
    """Run ``call`` and check the contract; returns the outcome (``"ok"`` or an error name).

    Raises AssertionError on a contract violation: a forbidden or foreign exception, an empty
    message, budget spent by an input error, or a modified input.
    """
    before = [_snapshot(x) for x in inputs]
    outcome = "ok"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numpy's RuntimeWarnings; results are checked
            result = call()
    except ALLOWED as exc:
        assert not isinstance(exc, FORBIDDEN), f"unhandled {type(exc).__name__}: {exc}"
        assert _raised_in_privgauss(exc), (
            f"{type(exc).__name__} escaped from a dependency: {exc}\n"
            + "".join(traceback.format_tb(exc.__traceback__)[-3:])
        )
        assert str(exc).strip(), f"{type(exc).__name__} without a message"
        if acct is not None and not isinstance(exc, SPENDS_ON_FAILURE):
            assert acct.spent is None, f"budget spent before refusing the input: {exc}"
        outcome = type(exc).__name__
    else:
        if check_result is not None:
            check_result(result)
    for x, b in zip(inputs, before, strict=True):
        assert _same(x, b), "an input was modified"
    return outcome


def check_gaussian(g: pg.PrivateGaussian) -> None:
    mean, cov = np.asarray(g.mean_), np.asarray(g.covariance_)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(cov)), "NaN/inf in the estimate"
    assert np.allclose(cov, cov.T), "covariance not symmetric"
    eig = np.linalg.eigvalsh(cov)
    assert eig[0] >= -1e-9 * max(eig[-1], 1e-300), "covariance not PSD"


def check_mixture(m: pg.PrivateGaussianMixture) -> None:
    assert np.all(np.isfinite(m.weights_)) and abs(m.weights_.sum() - 1) < 1e-6
    assert np.all(np.isfinite(m.means_)) and np.all(np.isfinite(m.covariances_))


# ------------------------------------------------------------------------------------------
# entry points (each a function of one drawn case, reused by the deep tier)
# ------------------------------------------------------------------------------------------


def _gaussian_kwargs(method: str) -> tuple[dict[str, Any], bool]:
    from test_audit_suite import gaussian_config

    cfg = gaussian_config(method)
    return dict(cfg.kwargs), cfg.public


def gaussian_fit_case(method: str, X: Any, public_X: Any) -> str:
    kwargs, _ = _gaussian_kwargs(method)
    budget = pg.privacy.make_budget(
        rho=kwargs.pop("rho", None), epsilon=kwargs.pop("epsilon", None),
        delta=kwargs.pop("delta", None),
    )
    acct = pg.Accountant(budget)
    g = pg.PrivateGaussian(method=method, random_state=0, accountant=acct, **kwargs)
    return run_case(lambda: g.fit(X, public_X=public_X), (X, public_X), acct, check_gaussian)


def mixture_fit_case(method: str, X: Any, public_X: Any, k: Any) -> str:
    acct = pg.Accountant(pg.ApproxDP(1.0, 1e-6))
    m = pg.PrivateGaussianMixture(k, method=method, random_state=0, accountant=acct)
    return run_case(lambda: m.fit(X, public_X=public_X), (X, public_X), acct, check_mixture)


_FITTED: dict[str, Any] = {}


def fitted_models() -> dict[str, Any]:
    """A fitted Gaussian (d = 2) and a hand-set fitted mixture for the post-fit entry points."""
    if not _FITTED:
        rng = np.random.default_rng(0)
        X = rng.normal(size=(500, 2))
        _FITTED["gaussian"] = pg.PrivateGaussian(rho=1.0, method="public", random_state=0).fit(
            X, public_X=X[:3]
        )
        m = pg.PrivateGaussianMixture(2, epsilon=1.0, delta=1e-6)
        m.weights_ = np.array([0.5, 0.5])
        m.means_ = np.array([[-5.0, 0.0], [5.0, 0.0]])
        m.covariances_ = np.stack([np.eye(2), np.eye(2)])
        m.n_features_in_ = 2
        _FITTED["mixture"] = m
    return _FITTED


def post_fit_case(what: str, X: Any) -> str:
    model = fitted_models()["gaussian" if what.startswith("gaussian") else "mixture"]
    fn = getattr(model, what.split(".")[1])

    def check(out: Any) -> None:
        assert not np.any(np.isnan(np.asarray(out, dtype=float)))

    return run_case(lambda: fn(X), (X,), None, check)


def mechanism_case(name: str, value: Any, sensitivity: Any) -> str:
    budgets = {
        "gaussian": pg.ZCDP(0.5), "laplace": pg.PureDP(1.0), "count": pg.PureDP(1.0),
        "exponential": pg.PureDP(1.0), "symmetric": pg.ZCDP(0.5),
        "histogram": pg.ApproxDP(1.0, 1e-6), "truncated": pg.ApproxDP(1.0, 1e-6),
    }
    acct = pg.Accountant(budgets[name])
    b = budgets[name]
    calls: dict[str, Callable[[], Any]] = {
        "gaussian": lambda: mechanisms.gaussian_mechanism(
            value, sensitivity, b, accountant=acct, noise=0),
        "laplace": lambda: mechanisms.laplace_mechanism(
            value, sensitivity, b, accountant=acct, noise=0),
        "count": lambda: mechanisms.private_count(
            value, b, accountant=acct, noise=0, sensitivity=sensitivity),
        "exponential": lambda: mechanisms.exponential_mechanism(
            value, sensitivity, b, accountant=acct, noise=0),
        "symmetric": lambda: mechanisms.symmetric_matrix_mechanism(
            value, sensitivity, b, accountant=acct, noise=0),
        "histogram": lambda: mechanisms.stability_histogram(value, b, accountant=acct, noise=0),
        "truncated": lambda: mechanisms.truncated_laplace_mechanism(
            value, sensitivity, b, accountant=acct, noise=0),
    }
    return run_case(calls[name], (value,), acct)


def _write(path: Path, X: Any) -> None:
    if isinstance(X, pd.DataFrame):
        X.to_csv(path, index=False)
        return
    arr = np.asarray(X, dtype=object) if isinstance(X, list) else np.asarray(X)
    if path.suffix == ".npy":
        np.save(path, arr, allow_pickle=False)
    else:
        frame = pd.DataFrame(np.atleast_2d(arr) if arr.ndim < 2 else arr.reshape(arr.shape[0], -1))
        # names, not pandas' integer labels: a header of numbers is refused (the header rule)
        frame.columns = [f"c{j}" for j in range(frame.shape[1])]
        frame.to_csv(path, index=False)


def cli_case(command: str, X: Any, suffix: str, extra: list[str], tmp: Path) -> str:
    """Run ``privgauss COMMAND file`` on a file holding X; exit 0, exit 2 with 'error:'
    (refused before spending) or exit 3 (failed after spending)."""
    path = tmp / f"data{suffix}"
    try:
        _write(path, X)
    except (ValueError, TypeError):
        return "unwritable"  # e.g. object arrays cannot be saved without pickle
    result = CliRunner().invoke(cli_main, [command, str(path), *extra])
    if result.exit_code == 0:
        return "ok"
    exc = result.exception
    assert isinstance(exc, SystemExit) and result.exit_code in (1, 2, 3), (
        f"{command} crashed with {type(exc).__name__}: {exc}\n"
        + ("".join(traceback.format_tb(exc.__traceback__)[-3:]) if exc else "")
    )
    assert result.exit_code in (2, 3) or "Usage" in result.output
    return f"exit-{result.exit_code}"


# ------------------------------------------------------------------------------------------
# CI tier
# ------------------------------------------------------------------------------------------

FAST = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)
GAUSSIAN = [m for m in GAUSSIAN_METHODS if m != "auto"] + ["auto"]


@pytest.mark.parametrize("method", GAUSSIAN)
@FAST
@given(data=st.data())
def test_private_gaussian_fit(method: str, data: st.DataObject) -> None:
    X = data.draw(hostile_data(), label="X")
    d = dimension(X)
    gaussian_fit_case(method, X, data.draw(hostile_public(d), label="public_X"))


@pytest.mark.parametrize("method", ["auto", *MIXTURE_METHODS])
@FAST
@given(data=st.data())
def test_private_gaussian_mixture_fit(method: str, data: st.DataObject) -> None:
    X = data.draw(hostile_data(), label="X")
    d = dimension(X)
    k = data.draw(st.sampled_from((1, 2, 3, 0, -1, 2.5, "2", None, 10**6)), label="k")
    mixture_fit_case(method, X, data.draw(hostile_public(d), label="public_X"), k)


@pytest.mark.parametrize(
    "what",
    ["gaussian.score_samples", "mixture.score_samples", "mixture.predict",
     "mixture.predict_proba"],
)
@FAST
@given(X=hostile_data())
def test_post_fit_entry_points(what: str, X: Any) -> None:
    post_fit_case(what, X)


SENSITIVITIES = st.sampled_from((1.0, 0.0, -1.0, math.nan, math.inf, 1e300, "1", None))


@pytest.mark.parametrize(
    "name", ["gaussian", "laplace", "count", "exponential", "symmetric", "histogram", "truncated"]
)
@FAST
@given(value=hostile_data(), sensitivity=SENSITIVITIES)
def test_mechanisms(name: str, value: Any, sensitivity: Any) -> None:
    if name in ("count", "histogram") and isinstance(value, np.ndarray) and value.dtype.kind == "f":
        value = np.nan_to_num(value, nan=0, posinf=0, neginf=0).clip(-1e9, 1e9).astype(np.int64)
    mechanism_case(name, value, sensitivity)


@pytest.mark.parametrize(
    "budget",
    [{"rho": 0}, {"rho": -1}, {"rho": math.nan}, {"rho": math.inf},
     {"epsilon": math.inf, "delta": 0.5}, {"epsilon": math.inf}, {"epsilon": math.nan},
     {"epsilon": 1, "delta": math.inf}, {"epsilon": 1, "delta": math.nan},
     {"epsilon": 1, "delta": 1.5}, {"epsilon": "1"}, {"delta": 1e-6}, {},
     {"rho": 1, "epsilon": 1}, {"epsilon": -0.0}],
)
def test_invalid_budgets_are_refused_before_anything(budget: dict[str, Any]) -> None:
    # budgets are finite (DESIGN rule 12): an infinite one is refused like any other invalid one
    X = np.random.default_rng(0).normal(size=(50, 2))
    for est in (pg.PrivateGaussian(**budget), pg.PrivateGaussianMixture(2, **budget)):
        outcome = run_case(lambda est=est: est.fit(X), (X,), None)
        assert outcome == "PrivacyBudgetError"


@pytest.mark.parametrize(
    ("command", "extra"),
    [("fit-gaussian", ["--rho", "0.5", "--mean-bound", "10", "--cov-bounds", "0.1", "10"]),
     ("fit-gaussian", ["--epsilon", "1", "--delta", "1e-6"]),
     ("fit-mixture", ["--epsilon", "1", "--delta", "1e-6", "--n-components", "2"])],
)
@pytest.mark.parametrize("suffix", [".csv", ".npy"])
@settings(max_examples=10, deadline=None, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(X=hostile_data())
def test_cli_commands(command: str, extra: list[str], suffix: str, X: Any,
                      tmp_path_factory: pytest.TempPathFactory) -> None:
    if command not in cli_main.commands:
        pytest.skip(f"no {command} command")
    cli_case(command, X, suffix, extra, tmp_path_factory.mktemp("cli"))


NUMBERS = ("0", "-1", "nan", "inf", "1e300", "1e-300", "2", "abc", "")


def cli_options_case(args: list[str]) -> str:
    """Run ``privgauss ARGS`` (no data file): exit 0, 1 (an audit that fails), or 2 with a
    message — never a traceback."""
    result = CliRunner().invoke(cli_main, args)
    exc = result.exception
    assert exc is None or isinstance(exc, SystemExit), (
        f"privgauss {' '.join(args)} crashed with {type(exc).__name__}: {exc}\n"
        + "".join(traceback.format_tb(exc.__traceback__)[-3:])
    )
    if result.exit_code == 2:
        assert result.output.strip(), "exit 2 without a message"
    return f"exit-{result.exit_code}"


@st.composite
def option_commands(draw: st.DrawFn) -> list[str]:
    """Hostile option values for the commands that read no data file."""
    num = st.sampled_from(NUMBERS)
    kind = draw(st.sampled_from(("req-gaussian", "req-mixture", "audit", "demo")))
    if kind == "req-gaussian":
        method = draw(st.sampled_from(("public", "coinpress", "histogram", "clip", "bogus")))
        return ["requirements", "gaussian", method, "--d", draw(num), "--n", draw(num),
                "--rho", draw(num), "--mean-bound", draw(num), "--cond", draw(num)]
    if kind == "req-mixture":
        method = draw(st.sampled_from(tuple(MIXTURE_METHODS) + ("bogus",)))
        return ["requirements", "mixture", method, "--n", draw(num), "--d", draw(num),
                "--k", draw(num), "--epsilon", draw(num), "--delta", draw(num)]
    if kind == "audit":
        target = draw(st.sampled_from(("gaussian-mechanism", "laplace-mechanism", "clip")))
        return ["audit", target, "--runs", draw(st.sampled_from(("0", "-5", "100", "x"))),
                "--epsilon", draw(num), "--n", draw(st.sampled_from(("0", "1", "10", "-2")))]
    return ["demo", "--n", draw(st.sampled_from(("0", "1", "2", "-3", "x"))),
            "--d", draw(st.sampled_from(("0", "1", "-1"))), "--mixture-n", "0", "--plot", ""]


@settings(max_examples=40, deadline=None, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(args=option_commands())
def test_cli_option_commands(args: list[str]) -> None:
    if args[0] not in cli_main.commands:
        pytest.skip(f"no {args[0]} command")
    cli_options_case(args)
