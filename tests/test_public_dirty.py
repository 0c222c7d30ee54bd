"""Dirty public rows (issue 17): the public frame is a robust, order- and duplicate-free function
of *all* public rows, and public rows that cannot give a frame are judged before anything is
spent — ``auto`` falls back to a route without them, ``method="public"`` refuses naming the
fallback and ``gamma``. Both regimes: ρ = 0.5 and (ε, δ) = (1, 1e-6)."""

from __future__ import annotations

import numpy as np
import pytest

import privgauss as pg
from privgauss.gaussian.public import public_preconditioner
from privgauss.gaussian.public_frame import public_verdict

D, N = 6, 12_000
SCALES = np.linspace(1.0, 3.0, D)
MU = np.full(D, 5.0)
COV = np.diag(SCALES**2)
REGIMES = {"rho": {"rho": 0.5}, "approx": {"epsilon": 1.0, "delta": 1e-6}}


def rows(n: int, seed: int, scale: float = 1.0, shift: float = 0.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return MU + shift + scale * rng.standard_normal((n, D)) * SCALES


X = rows(N, 0)


def cov_error(S: np.ndarray) -> float:
    return float(np.linalg.norm(S - COV) / np.linalg.norm(COV))


def fit(public_X: np.ndarray, regime: str, **kw: object) -> pg.PrivateGaussian:
    return pg.PrivateGaussian(random_state=3, **REGIMES[regime], **kw).fit(X, public_X=public_X)


# ---------------------------------------------------------------------------------------------
# The frame: order, duplicates, outliers
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("m", [D + 2, 30])
def test_permuted_and_duplicated_public_rows_give_the_same_frame(m: int) -> None:
    P = rows(m, 1)
    rng = np.random.default_rng(2)
    base = public_preconditioner(P, 0.05)
    for Q in (P[rng.permutation(m)], np.vstack([P, P[:3], P[:1]]),
              np.vstack([P[::-1], P[::-1]])):
        pre = public_preconditioner(Q, 0.05)
        for name in ("mean", "cov", "cov_sqrt"):
            assert np.allclose(getattr(pre, name), getattr(base, name), rtol=1e-12, atol=1e-12)
        assert (pre.L, pre.U, pre.K, pre.R) == (base.L, base.U, base.K, base.R)
    # the fit itself: the same release at the same seed, for either order
    for regime in REGIMES:
        a, b = fit(P, regime), fit(np.vstack([P[rng.permutation(m)], P[:2]]), regime)
        assert np.array_equal(a.covariance_, b.covariance_) and np.array_equal(a.mean_, b.mean_)


def test_d_plus_1_rows_in_any_order_give_the_same_ellipsoid() -> None:
    # no affine-invariant order of d+1 points exists: only the basis of the frame may rotate
    P = rows(D + 1, 1)
    base = public_preconditioner(P, 0.05)
    pre = public_preconditioner(np.vstack([P[::-1], P[:2]]), 0.05)
    assert np.allclose(pre.cov, base.cov, rtol=1e-12) and np.allclose(pre.mean, base.mean)
    assert (pre.K, pre.R) == (base.K, base.R)


@pytest.mark.parametrize("regime", list(REGIMES))
@pytest.mark.parametrize("m", [D + 1, 50])
def test_one_far_public_row_is_dropped(m: int, regime: str) -> None:
    clean = rows(m, 1)
    dirty = np.insert(clean, m // 2, np.full(D, 1e6), axis=0)  # a data-entry error
    assert public_verdict(dirty).n_inliers == m
    ref, est = fit(clean, regime), fit(dirty, regime)
    assert est.method_ == "public"
    # before: the first d+1 rows set the frame and the mean of all rows its centre — with
    # m = d+1 the fit returned a covariance error of ~93 silently, with m = 50 it failed
    assert cov_error(est.covariance_) <= 1.1 * cov_error(ref.covariance_) + 0.01
    assert cov_error(est.covariance_) < 0.1
    assert np.linalg.norm(est.mean_ - MU) < 0.2


@pytest.mark.parametrize("regime", list(REGIMES))
def test_a_cluster_of_outlying_public_rows_widens_the_frame_and_costs_little(regime: str) -> None:
    """A small cluster away from the rest is kept in the frame (it may be part of the
    population np.cov describes: dropping such clusters made the frame too narrow for real
    tables, e.g. an image's dark pixels 87 frame units out); the frame is then wider than
    needed, which costs a little noise, never a clipped-away part of the data."""
    P = rows(50, 1)
    bad = rows(4, 2, scale=0.3, shift=12.0)
    v = public_verdict(np.vstack([P, bad]))
    assert v.trusted and v.n_inliers == 54
    est = fit(np.vstack([P, bad]), regime)
    assert est.method_ == "public"
    assert cov_error(est.covariance_) < 0.1
    assert np.linalg.norm(est.mean_ - MU) < 0.3


# ---------------------------------------------------------------------------------------------
# Public rows from another population
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("regime", list(REGIMES))
@pytest.mark.parametrize("kind", ["subgroup", "shifted", "wider"])
def test_public_rows_from_another_population(kind: str, regime: str) -> None:
    if kind == "subgroup":  # the top fifth by the first column, resampled
        P = pg.datasets.dirty_public(rows(200, 1), "shifted", random_state=0)[:40]
    elif kind == "shifted":
        P = rows(40, 1, scale=0.5, shift=3.0)
    else:  # 3× wider: the frame's range still holds the private rows
        P = rows(40, 1, scale=3.0)
    for gamma in (0.0, 0.2):
        est = fit(P, regime, gamma=gamma)
        assert est.method_ == "public"
        assert cov_error(est.covariance_) < 0.1
        assert np.linalg.norm(est.mean_ - MU) < 0.3


@pytest.mark.parametrize("regime", list(REGIMES))
def test_much_wider_public_rows_fail_suggesting_gamma(regime: str) -> None:
    # 8× wider public rows: the private rows lie far inside the frame's lower bound, the chain
    # is reported as collapsed (after spending) and the message points to gamma=, which fits
    P = rows(40, 1, scale=8.0)
    with pytest.warns(pg.warnings.BudgetSpentWarning), pytest.raises(pg.EstimationFailed) as info:
        fit(P, regime)
    msg = str(info.value)
    assert "gamma=" in msg and "'histogram'" in msg
    est = fit(P, regime, gamma=0.2)
    assert est.method_ == "public" and cov_error(est.covariance_) < 0.1


# ---------------------------------------------------------------------------------------------
# Public rows that cannot give a frame: judged before spending
# ---------------------------------------------------------------------------------------------


def _constant_column() -> np.ndarray:
    P = rows(30, 1)
    P[:, 2] = 4.0
    return P


def _too_few_distinct() -> np.ndarray:
    return np.vstack([rows(D, 1)] * 4)  # 4d rows, only d distinct


@pytest.mark.parametrize("make", [_constant_column, _too_few_distinct])
def test_unusable_public_rows_fall_back_or_refuse_before_spending(make) -> None:
    P = make()
    verdict = public_verdict(P)
    assert not verdict.trusted
    # auto with (ε, δ): the bound-free route, saying why
    est = fit(P, "approx")
    assert est.method_ == "histogram" and "public rows not used" in est.method_reason_
    assert cov_error(est.covariance_) < 0.2
    # auto with ρ (no bound-free zCDP route) and method="public": refused, nothing spent
    for regime, method in (("rho", "auto"), ("rho", "public"), ("approx", "public")):
        acct = pg.Accountant(pg.ZCDP(1.0) if regime == "rho" else pg.ApproxDP(2.0, 1e-5))
        with pytest.raises(pg.InvalidDataError) as info:
            pg.PrivateGaussian(method=method, accountant=acct, **REGIMES[regime]).fit(
                X, public_X=P)
        msg = str(info.value)
        assert verdict.reason in msg and "Nothing was spent" in msg
        assert "gamma=" in msg and "'histogram'" in msg and "supply" not in msg.lower()
        assert acct.ledger == []
    # with a prior, auto uses it instead
    est = pg.PrivateGaussian(rho=0.5, mean_bound=100.0, cov_bounds=(0.1, 100.0),
                             random_state=0).fit(X, public_X=P)
    assert est.method_ == "coinpress" and "public rows not used" in est.method_reason_


def test_known_mean_with_unusable_public_rows() -> None:
    with pytest.raises(pg.InvalidDataError, match="gamma="):
        pg.PrivateGaussian(rho=0.5, mean=MU).fit(X, public_X=_constant_column())
    est = pg.PrivateGaussian(rho=0.5, mean=MU, cov_bounds=(0.1, 100.0), random_state=0).fit(
        X, public_X=_constant_column())
    assert est.method_ == "coinpress"


def test_verdict_reasons() -> None:
    assert public_verdict(rows(D + 1, 1)).trusted
    assert "distinct" in public_verdict(_too_few_distinct()).reason
    assert "degenerate" in public_verdict(_constant_column()).reason
    P = rows(D + 1, 1)
    P[0] = 1e6  # d+1 rows, one a gross error: only d usable rows remain
    v = public_verdict(P)
    assert not v.trusted and "gross errors" in v.reason and v.n_inliers == D


@pytest.mark.parametrize("regime", list(REGIMES))
def test_known_covariance_mean_ignores_far_and_duplicated_public_rows(regime: str) -> None:
    P = rows(3, 1)
    fits = [pg.PrivateGaussian(covariance=COV, random_state=0, **REGIMES[regime]).fit(
        X, public_X=Q) for Q in (P, np.vstack([P, np.full(D, -1e6)]), np.vstack([P] * 4))]
    assert all(np.array_equal(f.mean_, fits[0].mean_) for f in fits)
    assert np.linalg.norm(fits[0].mean_ - MU) < 0.2
