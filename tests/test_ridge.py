"""The ridge helper (gaussian/ridge.py: ``ridged_gaussian``), shared by the bound-free
refinement, the PPE refinement and the mixture part learners: it is jitter → CoinPress →
chain check → unjitter and nothing else, it fits exactly collinear columns that fail the chain
check without it, it never writes rows it does not own, and the ledger does not depend on
whether the ridge is there."""

from __future__ import annotations

import math

import numpy as np
import pytest

from privgauss.backends import as_rows
from privgauss.clipped_stats import transform_rows
from privgauss.exceptions import EstimationFailed
from privgauss.gaussian import ridge
from privgauss.gaussian.coinpress import gaussian_of_rows
from privgauss.mechanisms import Release
from privgauss.noise import NoiseSource
from privgauss.privacy import ZCDP, Accountant

LO, HI, RADIUS = 1e-2, 10.0, 10.0
CHAIN = dict(center=np.zeros(3), radius=RADIUS, beta=0.05)


def _collinear(n: int = 20_000) -> np.ndarray:
    """Two standard normal columns and their scaled sum: a singular covariance."""
    G = np.random.default_rng(0).normal(size=(n, 2))
    return np.column_stack([G[:, 0], G[:, 1], (G[:, 0] + G[:, 1]) / math.sqrt(2)])


def _fit(Z: np.ndarray, rho: float, eta2: float, seed: int = 1, **kw: object
         ) -> tuple[np.ndarray, np.ndarray, Accountant]:
    acct = Accountant(ZCDP(rho))
    kw = {"owned": False, "check": "ridge-test", **CHAIN, **kw}
    m, C = ridge.ridged_gaussian(Z, rho, eta2, release=Release.of(acct, seed),
                                 cov_bounds=(LO, HI), **kw)
    return m, C, acct


@pytest.mark.parametrize(("rho", "tol"), [(0.5, 0.01), (1e4, 1.2e-3)])
def test_the_ridge_fits_exactly_collinear_columns(rho: float, tol: float) -> None:
    """Without the ridge the release of a singular covariance has an eigenvalue far below the
    prior's lo (measured ≈ 1e-16 and 3e-14 against lo = 1e-2), which the check fails under the
    caller's step; with η² = JITTER_SHARE·lo the fit is within ``tol`` of np.cov
    (measured 3.3e-3 at ρ = 0.5, 3.7e-4 at 1e4: the jitter's cross terms ≈ 2η/√n remain), the
    singular direction comes back at the ridge RIDGE_KEEP·η², and both arms charge the same
    ledger."""
    Z = _collinear()
    bare = Accountant(ZCDP(rho))
    with pytest.raises(EstimationFailed) as info:
        ridge.ridged_gaussian(Z, rho, 0.0, release=Release.of(bare, 1), cov_bounds=(LO, HI),
                              owned=False, check="ridge-test", **CHAIN)
    assert info.value.step == "ridge-test"
    eta2 = ridge.JITTER_SHARE * LO
    m, C, acct = _fit(Z, rho, eta2)
    assert np.abs(C - np.cov(Z.T, bias=True)).max() < tol
    assert np.abs(m - Z.mean(axis=0)).max() < tol
    assert np.linalg.eigvalsh(C)[0] == pytest.approx(ridge.RIDGE_KEEP * eta2, rel=1e-6)
    assert [(e.step, e.cost) for e in acct.ledger] == [(e.step, e.cost) for e in bare.ledger]


def test_it_is_jitter_then_coinpress_then_check_then_unjitter() -> None:
    """Bit for bit the composition it replaces, whether the seed is drawn inside, given, or
    the rows arrive jittered by the one-pass map (transform_jittered)."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(6000, 3)) * [2.0, 0.5, 1.0] + 3.0
    a, c = np.array([0.5, 2.0, 1.0]), np.full(3, 3.0)
    rho, eta2 = 2.0, 0.03 * LO
    acct = Accountant(ZCDP(rho))
    src = NoiseSource(9)
    Z = ridge.jitter_rows(transform_rows(X, a, c), math.sqrt(eta2), src, owned=True)
    m0, C0 = gaussian_of_rows(as_rows(Z), rho, cov_bounds=(LO, HI), prior_floor=False,
                              release=Release(acct, src), **CHAIN)
    ridge.check_chain(np.asarray(C0), eta2, step="ridge-test")
    C0 = ridge.unjitter(np.asarray(C0), eta2)
    want = (m0, C0, [repr(e) for e in acct.ledger])

    m1, C1, a1 = _fit(transform_rows(X, a, c), rho, eta2, seed=9, owned=True)
    src = NoiseSource(9)
    seed = ridge.jitter_seed(src)
    acct2 = Accountant(ZCDP(rho))
    Zj = ridge.transform_jittered(X, a, c, math.sqrt(eta2), seed)
    m2, C2 = ridge.ridged_gaussian(Zj, rho, eta2, release=Release(acct2, src),
                                   cov_bounds=(LO, HI), owned=True, seed=seed, jittered=True,
                                   check="ridge-test", **CHAIN)
    for m, C, led in [(m1, C1, a1.ledger), (m2, C2, acct2.ledger)]:
        assert np.array_equal(m, want[0]) and np.array_equal(C, want[1])
        assert [repr(e) for e in led] == want[2]


def test_rows_it_does_not_own_are_never_written() -> None:
    Z = _collinear(3000)
    before = Z.copy()
    m, C, _ = _fit(Z, 1.0, 0.03 * LO, owned=False)
    assert np.array_equal(Z, before)
    m2, C2, _ = _fit(Z.copy(), 1.0, 0.03 * LO, owned=True)  # in place: the same draws
    assert np.array_equal(m, m2) and np.array_equal(C, C2)


def test_without_a_ridge_it_is_the_published_chain() -> None:
    """η² = 0: no jitter drawn, no ridge removed — CoinPress's release as it is."""
    X = np.random.default_rng(5).normal(size=(4000, 3))
    m, C, acct = _fit(X, 1.0, 0.0)
    ref = Accountant(ZCDP(1.0))
    m0, C0 = gaussian_of_rows(X, 1.0, cov_bounds=(LO, HI), prior_floor=False,
                              release=Release.of(ref, 1), **CHAIN)
    assert np.array_equal(m, m0) and np.array_equal(C, C0)
    assert [repr(e) for e in acct.ledger] == [repr(e) for e in ref.ledger]
