"""Fast tier of the privacy audit suite: every registered estimator method on worst-case
neighbours, and ledgers that sum to the budget.

The method lists are read from the registries at run time (``estimators.gaussian.METHODS``,
``estimators.mixture.METHODS``), so a method that lands later is covered without editing this
file: each Gaussian method gets the first configuration of :data:`GAUSSIAN_CONFIGS` it accepts.
Each audit fits the estimator many times with fast seeded noise on a pair of replace-one
neighbours from :func:`privgauss.audit.worst_case_pairs` and checks that the 99.9%-confidence
lower bound on ε stays at or below the claimed ε. The per-method Gaussian audits are marked
``slow`` (CI's second step, ``-m slow``); the ledger checks run by default.
The deep tier (``benchmarks/audit_deep.py``) reuses these configurations with all pairs and
many more runs.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import privgauss as pg
from privgauss.audit import AuditResult, audit_mechanism, estimator_mechanism, worst_case_pairs
from privgauss.estimators.gaussian import METHODS as GAUSSIAN_METHODS
from privgauss.estimators.mixture import METHODS as MIXTURE_METHODS
from privgauss.mechanisms import Release
from privgauss.privacy import zcdp_to_epsilon

RHO, EPS, DELTA = 0.5, 1.0, 1e-3
DELTA_Z = 1e-3  # the delta at which a zCDP budget's claimed epsilon is taken
MEAN_BOUND, COV_BOUNDS = 4.0, (0.25, 4.0)
N, D = 12, 1  # few rows: one record moves the estimate a lot
BOUNDARY = 10.0  # |record| of the boundary pair: beyond every clip radius used here
FAST_RUNS = {"clip": 2000, "hypothesis-selection": 100, "histogram": 100}  # by cost; others 400
N_FOR = {"coinpress": 50, "public": 50, "histogram": 300}  # rows per method (default N)
LARGE_N = 12_000  # for methods that refuse small n (e.g. PPE's subsample-and-aggregate)
SLOW_N = 1_000  # methods needing more rows are audited in the deep tier only


@dataclass(frozen=True)
class GaussianConfig:
    """Keyword arguments of PrivateGaussian, whether public rows are given, and the claimed ε
    (at delta ``delta``) of the budget."""

    name: str
    kwargs: dict[str, Any]
    public: bool
    epsilon: float
    delta: float


GAUSSIAN_CONFIGS = (
    GaussianConfig(
        "zCDP, mean and covariance bounds",
        {"rho": RHO, "mean_bound": MEAN_BOUND, "cov_bounds": COV_BOUNDS},
        False,
        zcdp_to_epsilon(RHO, DELTA_Z),
        DELTA_Z,
    ),
    GaussianConfig(
        "zCDP, known identity covariance, mean bound",
        {"rho": RHO, "covariance": "identity", "mean_bound": MEAN_BOUND},
        False,
        zcdp_to_epsilon(RHO, DELTA_Z),
        DELTA_Z,
    ),
    GaussianConfig(
        "(epsilon, delta), no bounds", {"epsilon": 2.0, "delta": DELTA}, False, 2.0, DELTA
    ),
    GaussianConfig(
        "pure epsilon, bounds",
        {"epsilon": EPS, "mean_bound": MEAN_BOUND, "cov_bounds": COV_BOUNDS},
        False,
        EPS,
        0.0,
    ),
    GaussianConfig(
        "zCDP, d+1 public rows", {"rho": RHO}, True, zcdp_to_epsilon(RHO, DELTA_Z), DELTA_Z
    ),
)


def private_data(n: int = N, d: int = D, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d))


def public_data(d: int = D, seed: int = 1, rows: int = 64) -> np.ndarray:
    # more than d+1 rows: with d+1 the worst-case range is so wide that the public method
    # (rightly) refuses a few dozen private rows as hopeless
    return np.random.default_rng(seed).normal(size=(max(rows, d + 1), d))


@functools.cache
def gaussian_setup(method: str) -> tuple[GaussianConfig, int]:
    """The first configuration ``method`` accepts (a fit on clean data that does not raise a
    parameter error; a DP failure counts as accepted), and the number of rows it was given:
    :data:`N_FOR` (default :data:`N`), or :data:`LARGE_N` for methods refusing fewer rows."""
    P = public_data()
    for n in (N_FOR.get(method, N), LARGE_N):
        X = private_data(n=n)
        for cfg in GAUSSIAN_CONFIGS:
            try:
                pg.PrivateGaussian(method=method, random_state=0, **cfg.kwargs).fit(
                    X, public_X=P if cfg.public else None
                )
            except pg.EstimationFailed:
                return cfg, n
            except (ValueError, TypeError):
                continue
            return cfg, n
    raise AssertionError(f"no audit configuration fits PrivateGaussian(method={method!r})")


def gaussian_config(method: str) -> GaussianConfig:
    return gaussian_setup(method)[0]


STATISTICS: dict[str, Callable[[pg.PrivateGaussian], float]] = {
    "mean": lambda g: float(g.mean_[0]),
    "log-variance": lambda g: math.log(max(float(g.covariance_[0, 0]), 1e-300)),
}


def gaussian_mechanism_for(
    method: str, cfg: GaussianConfig, statistic: str = "mean"
) -> Callable[..., np.ndarray]:
    """Fit ``method`` with ``cfg``; output [failed, statistic]."""

    def make(rng: np.random.Generator) -> pg.PrivateGaussian:
        return pg.PrivateGaussian(method=method, random_state=rng, **cfg.kwargs)

    return estimator_mechanism(
        make, STATISTICS[statistic], 1, public_X=public_data() if cfg.public else None
    )


def audit_gaussian_method(
    method: str, pair: str, n_runs: int, *, statistic: str = "mean", seed: int = 0
) -> AuditResult:
    """Audit ``method`` on ``pair`` of :func:`worst_case_pairs` of the private data, with as
    many rows as the method needs (:func:`gaussian_setup`)."""
    cfg, n = gaussian_setup(method)
    X = private_data(n=n)
    data, neighbour = worst_case_pairs(X, radius=BOUNDARY)[pair]
    return audit_mechanism(
        gaussian_mechanism_for(method, cfg, statistic),
        data,
        neighbour,
        epsilon=cfg.epsilon,
        delta=cfg.delta,
        n_runs=n_runs,
        random_state=seed,
    )


METHODS = [m for m in GAUSSIAN_METHODS if m != "auto"]


# ------------------------------------------------------------------------------------------
# audits
# ------------------------------------------------------------------------------------------


def test_every_gaussian_method_has_an_audit_configuration() -> None:
    for method in METHODS:
        assert gaussian_config(method) in GAUSSIAN_CONFIGS


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_gaussian_method_outlier_pair(method: str) -> None:
    # a record at the boundary vs a far outlier: identical after a data-independent clip
    if gaussian_setup(method)[1] > SLOW_N:
        pytest.skip(f"{method!r} needs {gaussian_setup(method)[1]} rows: deep tier only")
    res = audit_gaussian_method(method, "outlier", FAST_RUNS.get(method, 400))
    assert res.passed, str(res)


@pytest.mark.slow
@pytest.mark.parametrize("pair", ["boundary", "duplicate"])
def test_clip_method_other_pairs(pair: str) -> None:
    res = audit_gaussian_method("clip", pair, FAST_RUNS["clip"])
    assert res.passed, str(res)
    if pair == "boundary":
        # the audit sees the move across the ball: it is not vacuous
        assert res.epsilon_lower_bound > 0.2, str(res)


@pytest.mark.slow
def test_histogram_near_its_sample_threshold() -> None:
    # n = 100 at (2, 1e-3): localisation succeeds rarely, so whether it does is the most
    # data-sensitive output; a duplicated record must not change that beyond epsilon. The
    # estimator refuses this n before spending (its plan's requirement), so the audit runs the
    # algorithm itself, where the failure is a DP output
    from privgauss.gaussian.histogram import histogram_gaussian

    X = private_data(n=100)
    data, neighbour = worst_case_pairs(X, radius=BOUNDARY)["duplicate"]
    cfg = GAUSSIAN_CONFIGS[2]
    acct = pg.Accountant(pg.ApproxDP(cfg.epsilon, cfg.delta))
    with pytest.raises(pg.InvalidDataError, match="needs about n"):
        pg.PrivateGaussian(method="histogram", accountant=acct, random_state=0,
                           **cfg.kwargs).fit(X)
    assert not acct.ledger

    def mechanism(rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        budget = pg.ApproxDP(cfg.epsilon, cfg.delta)
        try:
            mean, _ = histogram_gaussian(rows, cfg.epsilon, cfg.delta,
                                         release=Release.of(pg.Accountant(budget), rng))
        except pg.EstimationFailed:
            return np.zeros(1 + rows.shape[1]) + np.eye(1, 1 + rows.shape[1])[0]
        return np.concatenate([[0.0], np.clip(mean, -1e6, 1e6)])

    outputs = [mechanism(data, np.random.default_rng(s))[0] for s in range(40)]
    assert 0 < sum(outputs) < 40  # near the threshold: both outcomes occur
    res = audit_mechanism(mechanism, data, neighbour, epsilon=cfg.epsilon, delta=cfg.delta,
                          n_runs=200)
    assert res.passed, str(res)


# ------------------------------------------------------------------------------------------
# ledgers: every fit spends exactly its budget, success or failure
# ------------------------------------------------------------------------------------------


def _spent_matches(acct: pg.Accountant, budget: Any) -> None:
    """Spent within the budget (privacy) and equal to it (the ledger sums to the total: a fit's
    spend never depends on the data)."""
    spent = acct.spent
    assert spent is not None
    if isinstance(budget, pg.ZCDP):
        assert spent.rho <= budget.rho * (1 + 1e-9)
        assert spent.rho == pytest.approx(budget.rho, rel=1e-6)
    else:
        assert spent.epsilon <= budget.epsilon * (1 + 1e-9)
        assert getattr(spent, "delta", 0.0) <= getattr(budget, "delta", 0.0) * (1 + 1e-9)
        assert spent.epsilon == pytest.approx(budget.epsilon, rel=1e-6)


@pytest.mark.parametrize("method", METHODS)
def test_gaussian_method_spends_exactly_its_budget(method: str) -> None:
    cfg, n = gaussian_setup(method)
    kwargs = {k: v for k, v in cfg.kwargs.items() if k not in ("rho", "epsilon", "delta")}
    budget = pg.privacy.make_budget(
        rho=cfg.kwargs.get("rho"), epsilon=cfg.kwargs.get("epsilon"), delta=cfg.kwargs.get("delta")
    )
    shared = pg.Accountant(budget)
    g = pg.PrivateGaussian(method=method, random_state=0, accountant=shared, **kwargs)
    try:
        g.fit(private_data(n=max(n, 200)), public_X=public_data() if cfg.public else None)
    except pg.EstimationFailed:
        pass
    _spent_matches(shared, budget)
    assert all(e.cost is not None for e in shared.ledger)


def mixture_data(n: int = 300, seed: int = 0) -> np.ndarray:
    return pg.datasets.make_mixture(n, 2, 1, separation=20.0, random_state=seed).X



@pytest.mark.parametrize("method", list(MIXTURE_METHODS))
def test_mixture_method_spends_its_budget_or_nothing(method: str) -> None:
    # n = 300 is below every method's practical threshold: a method either refuses up front
    # (nothing spent) or runs and usually fails, and a failure spends the budget as well
    budget = pg.ApproxDP(2.0, 1e-3)
    shared = pg.Accountant(budget)
    m = pg.PrivateGaussianMixture(
        2,
        method=method,
        random_state=0,
        accountant=shared,
        enforce_requirements=False,
    )
    X = mixture_data()
    try:
        m.fit(X, public_X=X[:50] if MIXTURE_METHODS[method].uses_public else None)
    except pg.EstimationFailed:
        _spent_matches(shared, budget)
        return
    except ValueError:
        assert shared.spent is None  # refused before anything was spent
        return
    _spent_matches(shared, budget)
