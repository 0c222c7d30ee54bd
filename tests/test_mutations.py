"""Mutation checks: deliberately broken variants of the library must be caught.

Each test patches one privacy-critical piece (with ``monkeypatch``, undone after the test) and
shows that a check of the test suite catches it, next to the unpatched code passing the same
check:

* halved sensitivity (the clip mean's L1 sensitivity) — caught by an empirical audit;
* halved Gaussian noise calibration — caught by the ledger check σ ≥ Δ/√(2ρ);
* a budget split whose parts sum to more than the total (CoinPress' split, the KSSU and
  sample-and-aggregate plans) — the accountant refuses the over-budget charge;
* a clip radius read from the private data — caught by an audit on a far-outlier pair;
* the disjoint-cluster double count dropped (KSSU's per-level multiplier, the per-part
  estimation budget) — caught by the charged-twice ledger checks.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import privgauss as pg
from privgauss import calibration, linalg
from privgauss.audit import AuditResult, audit_mechanism, estimator_mechanism, worst_case_pairs
from privgauss.gaussian import clip_mean as clip_mean_module
from privgauss.gaussian import ridge as ridge_module
from privgauss.gaussian.coinpress import chi_tail_radius, cov_plan, mean_plan, plan
from privgauss.linalg import clip_rows
from privgauss.mechanisms import Release
from privgauss.mixture import component_estimation as ce_module
from privgauss.mixture import kssu as kssu_module
from privgauss.mixture import sample_aggregate as sa_module
from privgauss.mixture.component_estimation import Partition
from privgauss.privacy import ZCDP, Accountant, ApproxDP, PureDP, zcdp_to_epsilon

N, MEAN_BOUND, BETA = 12, 4.0, 0.05
CLIP_RADIUS = MEAN_BOUND + chi_tail_radius(1, BETA / N)  # the clip method's radius (d = 1)
X = np.random.default_rng(0).normal(size=(N, 1))


def _clip_fit(budget: dict[str, float]) -> Callable[[Any, np.random.Generator], np.ndarray]:
    def make(rng: np.random.Generator) -> pg.PrivateGaussian:
        return pg.PrivateGaussian(
            method="clip",
            covariance="identity",
            mean_bound=MEAN_BOUND,
            beta=BETA,
            random_state=rng,
            **budget,
        )

    return estimator_mechanism(make, lambda g: g.mean_[0], 1)


def _audit_clip(pair: str, budget: dict[str, float], claimed: float, delta: float, runs: int
                ) -> AuditResult:
    data, neighbour = worst_case_pairs(X, radius=2 * CLIP_RADIUS)[pair]
    return audit_mechanism(
        _clip_fit(budget), data, neighbour, epsilon=claimed, delta=delta, n_runs=runs
    )


# ------------------------------------------------------------------------------------------
# halved sensitivity
# ------------------------------------------------------------------------------------------


def test_clip_mean_radius_is_what_the_audits_assume() -> None:
    # the boundary pair moves the clipped mean by exactly the sensitivity 2r/n
    lo, hi = worst_case_pairs(X, radius=2 * CLIP_RADIUS)["boundary"]
    move = clip_rows(hi, np.zeros(1), CLIP_RADIUS)[0].mean() - clip_rows(
        lo, np.zeros(1), CLIP_RADIUS
    )[0].mean()
    assert abs(move) == pytest.approx(pg.sensitivity.clipped_mean_l1(CLIP_RADIUS, N, 1))


@pytest.mark.slow
def test_halved_sensitivity_is_flagged_by_the_audit(monkeypatch: pytest.MonkeyPatch) -> None:
    # 1,500 runs per dataset: over audit seeds 0-9 the real fit's bound was 0.57-0.70 (> 0.4
    # asserted, ε = 1 claimed) and the halved sensitivity's 1.36-1.66 (flagged at every seed)
    real = _audit_clip("boundary", {"epsilon": 1.0}, 1.0, 0.0, 1500)
    assert real.passed, str(real)
    assert real.epsilon_lower_bound > 0.4, str(real)  # the audit sees the allowed difference

    def halved(radius: float, n: int, d: int) -> float:
        return pg.sensitivity.clipped_mean_l1(radius, n, d) / 2

    monkeypatch.setattr(clip_mean_module, "clipped_mean_l1", halved)
    broken = _audit_clip("boundary", {"epsilon": 1.0}, 1.0, 0.0, 1500)
    assert not broken.passed, str(broken)


# ------------------------------------------------------------------------------------------
# halved noise calibration: the ledger's sigma must match its sensitivity and cost
# ------------------------------------------------------------------------------------------


def ledger_noise_is_calibrated(ledger: list[pg.LedgerEntry]) -> bool:
    """Every zCDP Gaussian entry has σ ≥ Δ/√(2ρ), every pure Laplace entry scale ≥ Δ/ε."""
    for e in ledger:
        if e.sensitivity is None or e.noise_scale is None:
            continue
        if isinstance(e.cost, ZCDP) and "gaussian" in e.mechanism:
            need = e.sensitivity / math.sqrt(2 * e.cost.rho)
        elif isinstance(e.cost, PureDP) and "laplace" in e.mechanism:
            need = e.sensitivity / e.cost.epsilon
        else:
            continue
        if e.noise_scale < need * (1 - 1e-9):
            return False
    return True


def _zcdp_ledgers() -> list[list[pg.LedgerEntry]]:
    rng = np.random.default_rng(3)
    Xg = rng.normal(size=(300, 2))
    fits = [
        pg.PrivateGaussian(rho=0.5, mean_bound=10.0, cov_bounds=(0.1, 10.0), random_state=0),
        pg.PrivateGaussian(rho=0.5, covariance="identity", mean_bound=10.0, random_state=0),
        pg.PrivateGaussian(rho=0.5, method="public", random_state=0),
        pg.PrivateGaussian(epsilon=1.0, covariance="identity", mean_bound=10.0, random_state=0),
    ]
    ledgers = []
    for g in fits:
        g.fit(Xg, public_X=Xg[:3] if g.method == "public" else None)
        ledgers.append(g.ledger_)
    return ledgers


def test_halved_noise_calibration_is_flagged_by_the_ledger(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = _zcdp_ledgers()
    assert all(ledger_noise_is_calibrated(ledger) for ledger in real)
    assert sum(1 for ledger in real for e in ledger if e.noise_scale) >= 4  # something checked

    original = calibration.gaussian_sigma_zcdp
    monkeypatch.setattr(
        calibration, "gaussian_sigma_zcdp", lambda s, rho: original(s, rho) / 2
    )
    broken = _zcdp_ledgers()
    assert not all(ledger_noise_is_calibrated(ledger) for ledger in broken)


# ------------------------------------------------------------------------------------------
# budget split not summing to the total
# ------------------------------------------------------------------------------------------


@pytest.fixture
def fresh_schedules() -> Any:
    """CoinPress caches its (public) schedules: clear them so a patched split is used, and
    again afterwards so no inflated schedule outlives the test."""
    mean_plan.mean_schedule.cache_clear()
    cov_plan.covariance_schedule.cache_clear()
    yield
    mean_plan.mean_schedule.cache_clear()
    cov_plan.covariance_schedule.cache_clear()


@pytest.mark.usefixtures("fresh_schedules")
def _clear_plan_caches() -> None:
    for planner in (cov_plan.covariance_schedule, mean_plan.mean_schedule, plan.practical_plan):
        planner.cache_clear()


def test_coinpress_split_over_total_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_plan_caches()  # plans cached by earlier tests were made with the correct split
    original = mean_plan.split_rho
    for module in (mean_plan, cov_plan):  # each schedule module binds the split it uses
        monkeypatch.setattr(
            module, "split_rho", lambda rho, fr: tuple(1.5 * r for r in original(rho, fr))
        )
    acct = Accountant(ZCDP(0.5))
    g = pg.PrivateGaussian(
        rho=0.5, mean_bound=10.0, cov_bounds=(0.1, 10.0), random_state=0, accountant=acct
    )
    # refused before spending, or (the over-charge reached mid-fit) the one failure contract
    # after spending: an internal EstimationFailed — never a total above the budget
    with pytest.raises((pg.PrivacyBudgetError, pg.EstimationFailed)) as err:
        g.fit(np.random.default_rng(0).normal(size=(300, 2)))
    assert not isinstance(err.value, pg.EstimationFailed) or err.value.internal
    assert acct.spent is None or acct.spent.rho <= 0.5 * (1 + 1e-9)
    _clear_plan_caches()  # drop the mutated plans


def _mixture_X() -> np.ndarray:
    return pg.datasets.make_mixture(2000, 2, 1, separation=20.0, random_state=0).X


@pytest.mark.parametrize(
    ("module", "planner"), [(kssu_module, "plan_kssu_budget"), (sa_module, "plan_sa_budget")]
)
def test_mixture_plan_over_total_is_refused(
    monkeypatch: pytest.MonkeyPatch, module: Any, planner: str
) -> None:
    original = getattr(module, planner)

    def inflated(*args: Any, **kwargs: Any) -> Any:
        plan = original(*args, **kwargs)
        return dataclasses.replace(plan, estimation=ZCDP(3 * plan.estimation.rho + 1.0))

    monkeypatch.setattr(module, planner, inflated)
    acct = Accountant(ApproxDP(2.0, 1e-3))
    method = "kssu" if module is kssu_module else "sample-aggregate"
    m = pg.PrivateGaussianMixture(
        2, method=method, random_state=0, accountant=acct, enforce_requirements=False
    )
    with pytest.raises(pg.PrivacyBudgetError):
        m.fit(_mixture_X())
    assert acct.spent is None or acct.spent.epsilon <= 2.0 * (1 + 1e-9)


# ------------------------------------------------------------------------------------------
# clip radius taken from the private data
# ------------------------------------------------------------------------------------------


def _radius_from_data(rows: Any, center: Any, radius: float) -> tuple[np.ndarray, int]:
    """The mutant clip: the radius grows to the data's largest distance from the centre (the
    clipping code looks ``privgauss.linalg.clip_rows`` up when it runs, so patching it there
    reaches every exact clip of rows)."""
    norms = np.linalg.norm(np.asarray(rows) - np.asarray(center), axis=1)
    return clip_rows(rows, center, max(radius, float(norms.max())))


def test_clip_radius_from_data_is_flagged_by_an_outlier_audit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 150 runs per dataset: the mutant separates the pair (almost) completely, so its bound is
    # close to the largest 150 runs allow (2.10-2.21 of 2.24 over audit seeds 0-4, ε = 1
    # claimed; 3.48 of 3.48 at 500 runs); the real clip: 0.0. A correct fit fails with
    # probability <= 0.1% at any run count.
    real = _audit_clip("outlier", {"epsilon": 1.0}, 1.0, 0.0, 150)
    assert real.passed, str(real)
    monkeypatch.setattr(linalg, "clip_rows", _radius_from_data)
    broken = _audit_clip("outlier", {"epsilon": 1.0}, 1.0, 0.0, 150)
    assert not broken.passed, str(broken)


@pytest.mark.slow
def test_coinpress_radius_from_data_is_flagged_by_an_outlier_audit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # claimed epsilon 0.905 (ρ = 0.05, δ = 1e-3): within reach of 150 runs per dataset, where a
    # complete separation gives 2.24; over audit seeds 0-4 the mutant's bound was 1.43-1.78 and
    # the real fit's 0.0: flagged at every seed, the smallest margin 0.53
    rho = 0.05
    claimed = zcdp_to_epsilon(rho, 1e-3)
    # enough rows that the correct release is rarely projected onto the prior's boundary
    # (releases are projected into the mean_bound ball; with 50 rows most of them were)
    Xc = np.random.default_rng(1).normal(size=(400, 1))
    data, neighbour = worst_case_pairs(Xc, radius=4.0)["outlier"]

    def make(rng: np.random.Generator) -> pg.PrivateGaussian:
        return pg.PrivateGaussian(
            rho=rho, mean_bound=4.0, cov_bounds=(0.25, 4.0), method="coinpress", random_state=rng
        )

    mech = estimator_mechanism(make, lambda g: g.mean_[0], 1)
    real = audit_mechanism(mech, data, neighbour, epsilon=claimed, delta=1e-3, n_runs=150)
    assert real.passed, str(real)
    monkeypatch.setattr(linalg, "clip_rows", _radius_from_data)
    broken = audit_mechanism(mech, data, neighbour, epsilon=claimed, delta=1e-3, n_runs=150)
    assert not broken.passed, str(broken)


# ------------------------------------------------------------------------------------------
# disjoint-cluster double count dropped
# ------------------------------------------------------------------------------------------


def kssu_charges_twice_below_the_root(ledger: list[pg.LedgerEntry], plan: Any) -> bool:
    """The ledger covers every level's per-node budgets once at the root and twice below it (a
    replaced row's old and new values can follow two root-to-leaf paths), plus the weights and
    estimation charges."""
    eps_needed = rho_needed = 0.0
    for level in range(plan.k):
        factor = 1 if level == 0 else 2
        eps_needed += factor * plan.enclose[level].epsilon
        if plan.terrific[level] is not None:
            eps_needed += factor * 2 * plan.terrific[level].epsilon  # raw and projected
            rho_needed += factor * plan.pca[level].rho
        if plan.count[level] is not None:
            rho_needed += factor * plan.count[level].rho
    rho_needed += plan.weights.rho + plan.estimation.rho
    eps_charged = sum(e.cost.epsilon for e in ledger if isinstance(e.cost, ApproxDP))
    rho_charged = sum(e.cost.rho for e in ledger if isinstance(e.cost, ZCDP))
    return eps_charged >= eps_needed * (1 - 1e-9) and rho_charged >= rho_needed * (1 - 1e-9)


def _kssu_run() -> tuple[list[pg.LedgerEntry], Any]:
    acct = Accountant(ApproxDP(2.0, 1e-3))
    info: dict[str, Any] = {}
    try:
        kssu_module.kssu_gmm(
            _mixture_X(),
            3,
            ApproxDP(2.0, 1e-3),
            info=info,
            release=Release.of(acct, 0),
        )
    except pg.EstimationFailed:
        pass  # below its sample threshold: the charges are made all the same
    return acct.ledger, info["budget_plan"]


def test_kssu_double_count_dropped_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    assert kssu_charges_twice_below_the_root(*_kssu_run())
    original = kssu_module.plan_kssu_budget

    def once(*args: Any, **kwargs: Any) -> Any:
        plan = original(*args, **kwargs)
        return dataclasses.replace(plan, multipliers=(1,) * plan.k)

    monkeypatch.setattr(kssu_module, "plan_kssu_budget", once)
    assert not kssu_charges_twice_below_the_root(*_kssu_run())


def _estimate_parts(monkeypatch: pytest.MonkeyPatch, drop_double: bool) -> tuple[float, float]:
    """(charged estimation ρ, largest ρ a part's CoinPress run was given)."""
    used: list[float] = []
    original = ridge_module.gaussian_of_rows  # the practical part learner's CoinPress

    def spy(rows: np.ndarray, rho: float, **kwargs: Any) -> Any:
        rho = 2 * rho if drop_double else rho  # the mutant gives each part the whole budget
        used.append(rho)
        part = kwargs["release"]
        kwargs["release"] = Release(Accountant(ZCDP(rho)), part.noise, part.step)
        return original(rows, rho, **kwargs)

    monkeypatch.setattr(ridge_module, "gaussian_of_rows", spy)
    rng = np.random.default_rng(0)
    data = np.concatenate([rng.normal(-20, 1, (400, 1)), rng.normal(20, 1, (400, 1))])
    labels = np.repeat([0, 1], 400)
    priors = [
        ce_module.ComponentPrior(np.array([c]), 5.0, (0.25, 4.0)) for c in (-20.0, 20.0)
    ]
    acct = Accountant(ZCDP(1.0))
    ce_module.estimate_components(
        data,
        Partition(labels, rng.random(800)),
        priors,
        ZCDP(0.1),
        ZCDP(0.9),
        beta=0.05,
        constants="practical",
        release=Release.of(acct, pg.NoiseSource(0), "parts"),
    )
    charged = sum(e.cost.rho for e in acct.ledger if e.step == "parts/estimate")
    return charged, max(used)


def test_part_estimation_double_count_dropped_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    # a record moved across the partition changes two parts: the charge must cover two runs
    charged, largest = _estimate_parts(monkeypatch, drop_double=False)
    assert 2 * largest <= charged * (1 + 1e-9)
    charged, largest = _estimate_parts(monkeypatch, drop_double=True)
    assert not 2 * largest <= charged * (1 + 1e-9)
