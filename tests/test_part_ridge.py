"""The mixture part learners' ridge (mixture/component_estimation.py: ``ridged_part``,
``widened_bounds``; issue 27, R3): the prior's lower bound lo = R²/cond_range falls with the
budget and CoinPress sees each part's rows plus a data-independent ±η jitter, so a column in
small units converges to np.var at a huge budget (it kept a variance 1e11 times np.var's at
every budget), a constant column no longer derails the other variances, and neither the
budget nor the ledger depends on the rows."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import privgauss as pg
from privgauss.gaussian import ridge
from privgauss.mechanisms import Release
from privgauss.mixture import component_estimation as ce
from privgauss.mixture.component_estimation import ComponentPrior, Partition
from privgauss.noise import NoiseSource
from privgauss.privacy import ZCDP, Accountant


def _r3_rows() -> tuple[np.ndarray, np.ndarray]:
    """edge_sweep.md's reproducer R3: two clusters 40 sd apart in the last column, columns in
    units (1e-6, 1, 1e6)."""
    rng = np.random.default_rng(0)
    lab = rng.integers(0, 2, 4000)
    X = rng.normal(size=(4000, 3))
    X[lab == 1, 2] += 40
    return X * np.array([1e-6, 1.0, 1e6]), lab


def test_kssu_small_unit_column_converges_to_np_var_at_a_huge_budget() -> None:
    """R3 at ε = 1e12: every variance of both components within 1 % of its cluster's np.var
    (measured: within 3e-4; before the ridge the 1e-6 column's variance was 0.091 against
    np.var's 1e-12, the 1-unit column's 0.4 off)."""
    X, lab = _r3_rows()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = pg.PrivateGaussianMixture(2, method="kssu", epsilon=1e12, delta=1e-6,
                                        random_state=0).fit(X)
    for j in range(2):
        truth = int(np.argmin(np.abs(est.means_[j, 2] - np.array([0.0, 4e7]))))
        var = X[lab == truth].var(axis=0)
        np.testing.assert_allclose(np.diag(est.covariances_[j]), var, rtol=0.01)


def _const_parts(seed: int) -> tuple[np.ndarray, np.ndarray, list[ComponentPrior]]:
    """Two separated clusters, rotated in the first two columns, whose last column is the
    constant 7 (edge_sweep's const defect), their labels, and priors as kssu's leaves get
    them at moderate budgets: a released centre 1 away from the cluster's mean (a random
    direction), radius 8, lo = R²/1e4."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.normal(size=(2, 2)))
    X = np.zeros((2800, 3))
    X[:1600, :2] = rng.normal(size=(1600, 2)) * [1.0, 0.5] @ Q
    X[1600:, :2] = rng.normal(size=(1200, 2)) * [1.5, 0.7] @ Q.T + 25.0
    X[:, 2] = 7.0
    lab = np.repeat([0, 1], [1600, 1200])
    u = rng.normal(size=(2, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    priors = [ComponentPrior(X[lab == j].mean(axis=0) + u[j], 8.0, (64.0 / 1e4, 64.0))
              for j in range(2)]
    return X, lab, priors


@pytest.mark.parametrize("rho_e", [1e4, 1e6])
def test_constant_column_leaves_the_other_variances_at_np_var(
        rho_e: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """Parts whose rows have a constant column, at ρ = 1e4 and 1e6 per part: the two other
    variances within 1 % of the np.var of the rows each run received (measured: within
    0.24 % over seeds 0-11; main was off by 0.30-1.36 at 1e4 and 0.01-0.37 at 1e6 on seeds
    0-3 — the constant direction let the whitening magnify the rough mean's error until the
    clipping swamped the other directions), and the constant column's variance at most the
    ridge's 1e-2·η² ≤ 3e-4·lo."""
    seen: list[np.ndarray] = []
    real = ce.fixed_size_subset

    def spy(*args: Any, **kwargs: Any) -> np.ndarray:
        rows = real(*args, **kwargs)
        seen.append(rows.copy())
        return rows

    monkeypatch.setattr(ce, "fixed_size_subset", spy)
    for seed in range(4):
        X, lab, priors = _const_parts(seed)
        seen.clear()
        acct = Accountant(ZCDP(1e6 + 2 * rho_e))
        _, _, covs, _ = ce.estimate_components(
            X, Partition(lab, np.random.default_rng(seed).random(len(X))), priors,
            ZCDP(1e6), ZCDP(2 * rho_e), beta=0.05, constants="practical",
            release=Release.of(acct, NoiseSource(seed), "parts"))
        for j in range(2):
            var = seen[j].var(axis=0)
            np.testing.assert_allclose(np.diag(covs[j])[:2], var[:2], rtol=0.01)
            assert 0.0 < covs[j][2, 2] <= 3e-4 * priors[j].cov_bounds[0]


def test_widened_bounds_keep_the_prior_while_the_noise_matters_and_open_as_it_vanishes() -> None:
    """At a small per-part ρ the bounds and β are the caller's (a wider range would cost
    accuracy); at a huge one lo falls to hi/WIDEST_RANGE and β to β·WIDE_BETA. Public
    quantities only."""
    bounds = (64.0 / 1e4, 64.0)
    assert ce.widened_bounds(2000, 3, 0.01, 8.0, bounds, 0.05) == (bounds, 0.05)
    (lo, hi), beta = ce.widened_bounds(2000, 3, 1e10, 8.0, bounds, 0.05)
    assert hi == 64.0 and lo == pytest.approx(hi / ce.WIDEST_RANGE)
    assert beta == pytest.approx(0.05 * ce.WIDE_BETA)


def test_jitter_and_ledger_do_not_depend_on_the_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neighbouring parts (one row replaced by a far one) with the same noise seed: the rows
    CoinPress receives differ in that row only (the jitter's signs are the same, drawn from the
    noise source whatever the rows), and the ledgers have the same steps and costs — the
    ridge adds no release and no data-dependent branch."""
    seen: list[np.ndarray] = []
    real = ridge.gaussian_of_rows  # ridged_part runs CoinPress through ridge.ridged_gaussian

    def spy(rows: Any, rho: float, **kw: Any) -> Any:
        seen.append(np.array(rows, copy=True))
        return real(rows, rho, **kw)

    monkeypatch.setattr(ridge, "gaussian_of_rows", spy)
    X, _, priors = _const_parts(0)
    Y = X[:1600].copy()
    Y2 = Y.copy()
    Y2[5] = [40.0, -30.0, 7.0]
    ledgers = []
    for rows in (Y, Y2):
        acct = Accountant(ZCDP(1e4))
        ce.ridged_part(rows.copy(), 1e4, priors[0], Release.of(acct, NoiseSource(3), "p"),
                       beta=0.05)
        ledgers.append([(e.step, e.cost) for e in acct.ledger])
    assert ledgers[0] == ledgers[1] and len(ledgers[0]) > 0
    diff = np.flatnonzero(np.any(seen[0] != seen[1], axis=1))
    assert diff.tolist() == [5]
    # the jitter is ±η, η² = JITTER_SHARE·lo of the widened bounds: read off the constant
    # column (the other columns' entries, ~1, round part of it away at this lo)
    (lo, _), _ = ce.widened_bounds(1600, 3, 1e4, priors[0].radius, priors[0].cov_bounds, 0.05)
    eta = np.sqrt(ce.JITTER_SHARE * lo)
    jit = seen[0][:, 2] - (7.0 - priors[0].center[2])
    np.testing.assert_allclose(np.abs(jit), eta, rtol=0.02)
    assert 0.4 < np.mean(jit > 0) < 0.6
