"""Issue 27 (edge_sweep R3 / R4): knobs that guard against noise vanish with the budget.

R3 — floors tied to the largest scale swamped a small-unit column's variance at every budget:
the de-clipping frames and the final PSD floor (public-light, public-heavy) and the private
selection's floor (agnostic) were relative to the trace / largest eigenvalue; now in each
column's own units. (kssu / sample-aggregate's floor is their CoinPress part learner's prior,
left: see benchmarks/results/edge_sweep.md, session 49.) R4 — hypothesis selection's cover
resolution α kept the variance ~15 % off at any ε. Each test below fails with its fix reverted
(checked by hand when the fixes were written).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import privgauss as pg
from privgauss.gaussian import hypothesis_refinement as hr
from privgauss.gaussian.hypothesis_selection import DEFAULT_ALPHA, worth_refining
from privgauss.linalg import scaled_floor
from privgauss.mixture.cluster_estimation import (
    ClusterFrame,
    _shrink_target,
    frame_from_public,
)
from privgauss.mixture.public_heavy import positive_definite
from privgauss.privacy import ledger_mismatch
from privgauss.reductions.selection import _regular
from privgauss.sensitivity import (
    clipped_mean_l1,
    clipped_second_moment_upper_l1,
)

UNITS = np.array([1e-6, 1.0, 1e6])


def _scaled_clusters(n: int = 4000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """edge_sweep's ``scales`` cell: two clusters 40 sd apart in the last column, the columns
    in units 1e-6, 1 and 1e6."""
    rng = np.random.default_rng(seed)
    lab = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3))
    X[lab == 1, 2] += 40
    return X * UNITS, lab


def _unit_error(C: np.ndarray, ref: np.ndarray) -> float:
    """max_ij |C_ij − ref_ij| / (s_i s_j), s the reference's standard deviations."""
    s = np.sqrt(np.diag(ref))
    return float(np.max(np.abs(C - ref) / np.outer(s, s)))


# ----------------------------------------------------------------------------------- R3


@pytest.mark.parametrize("method", ["public-heavy", "public-light"])
def test_public_methods_are_unit_equivariant_at_a_huge_budget(method: str) -> None:
    """public-heavy / public-light at ε = 1e12 on the scales cell: the 1e-6 column's variance
    is np.cov's of the rows each component predicts, within 1 % (it was ~1e5 for np.cov's
    1e-12: floors relative to the largest scale). public-heavy is moreover unit-equivariant:
    the fit in units (1e-6, 1, 1e6) is the fit in units 1, rescaled."""
    X, lab = _scaled_clusters()
    rng = np.random.default_rng(1)
    P = rng.normal(size=(100, 3))
    P[:50, 2] += 40
    fits = []
    for units in (np.ones(3), UNITS):
        est = pg.PrivateGaussianMixture(2, method=method, epsilon=1e12, delta=1e-6,
                                        random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X / UNITS * units, public_X=P * units)
        fits.append(est)
    est = fits[1]
    pred = est.predict(X)
    for j in range(2):
        ref = np.cov(X[pred == j].T, bias=True)
        assert est.covariances_[j][0, 0] == pytest.approx(ref[0, 0], rel=0.01)
    if method == "public-heavy":
        np.testing.assert_allclose(fits[1].covariances_ / np.outer(UNITS, UNITS),
                                   fits[0].covariances_, rtol=1e-6, atol=0)


def test_floors_are_in_each_columns_own_units() -> None:
    """public-heavy/light's final PSD floor, the de-clipping frames and agnostic's selection
    floor commute with a change of units (they were relative to the trace / largest
    eigenvalue, which swamped a 1e-6 column beside a 1e6 one)."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(3, 3))
    C = A @ A.T + 0.1 * np.eye(3)
    D = np.outer(UNITS, UNITS)
    np.testing.assert_allclose(scaled_floor(C * D, 1e-6) / D, scaled_floor(C, 1e-6), rtol=1e-9)
    np.testing.assert_allclose(positive_definite((C * D)[None])[0] / D, C, rtol=1e-9)
    _, _, reg = _regular((np.ones(1), np.zeros((1, 3)), (C * D)[None]))
    np.testing.assert_allclose(reg[0] / D, C, rtol=1e-9)
    # a frame from an estimate whitens every column by its own scale: W Σ Wᵀ = I
    W = ClusterFrame.from_estimate(np.zeros(3), C * D).whitener
    np.testing.assert_allclose(W @ (C * D) @ W.T, np.eye(3), atol=1e-9)
    # a zero-variance column keeps the trace-relative floor (no scale of its own)
    Z = C.copy()
    Z[2, :] = Z[:, 2] = 0.0
    floored = scaled_floor(Z, 1e-6)
    assert floored[2, 2] == pytest.approx(1e-6 * np.trace(Z) / 3, rel=1e-6)  # tr/d
    # and the public frame's shrinkage target is each column's own variance (within 5 %)
    # once the columns are in different units, the isotropic (tr/d)·I when they are not
    Y = rng.normal(size=(6, 3)) * UNITS
    S = np.cov(Y.T)
    target = _shrink_target(np.diag(S), 6)
    np.testing.assert_allclose(target / np.diag(S), 1.0, atol=0.05)
    Wp = frame_from_public(Y, shrink=True).whitener
    lam = 6 / 9
    np.testing.assert_allclose(Wp @ (lam * S + (1 - lam) * np.diag(target)) @ Wp.T,
                               np.eye(3), atol=1e-9)
    v = np.array([1.0, 1.2, 0.9])  # within 60 rows' sampling error of each other
    np.testing.assert_array_equal(_shrink_target(v, 60), np.full(3, v.mean()))


# ----------------------------------------------------------------------------------- R4


def _hs(eps: float, X: np.ndarray, **kw: object) -> pg.PrivateGaussian:
    g = pg.PrivateGaussian(method="hypothesis-selection", epsilon=eps, mean_bound=70,
                           cov_bounds=(0.1, 100), random_state=0, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return g.fit(X)


def test_hypothesis_selection_converges_to_the_sample_moments() -> None:
    """The default refines the pick: at ε = 1e12 mean and variance are the rows' np.mean /
    np.var (the selection alone stayed 15 % off the variance at every ε: its cover's α)."""
    X = np.random.default_rng(0).normal(1.0, 2.0, size=(3000, 1))
    g = _hs(1e12, X)
    assert abs(g.mean_[0] - X.mean()) / X.std() < 1e-6
    assert g.covariance_[0, 0] / X.var() == pytest.approx(1.0, abs=1e-4)
    # heavy tails too: the refinement's clip radius grows with the budget
    T = np.random.default_rng(1).standard_t(3, size=(3000, 1))
    g = _hs(1e12, T)
    assert g.covariance_[0, 0] / T.var() == pytest.approx(1.0, abs=1e-4)


def test_faithful_hypothesis_selection_keeps_the_papers_algorithm() -> None:
    """constants="theory": one selection at the whole ε, the output a cover candidate (the
    paper's α stays available); the default's ledger follows its plan's split."""
    X = np.random.default_rng(0).normal(1.0, 2.0, size=(3000, 1))
    g = _hs(1e12, X, constants="theory")
    # this cover (radius 70, variance ratio 1e3) is scored by projection (Scheffé: > 2 s)
    assert [e.step for e in g.ledger_] == ["hypothesis-selection-projection"]
    assert ledger_mismatch(g.budget_plan_, g.ledger_) is None
    assert abs(g.covariance_[0, 0] / X.var() - 1.0) > 0.01
    g = _hs(2.0, X)
    steps = [(e.step, e.cost.epsilon) for e in g.ledger_]
    sel, e_mean, e_cov = hr.REFINE_SHARES
    assert steps == [("hypothesis-selection-projection", pytest.approx(2.0 * sel)),
                     ("hypothesis-selection-refine-mean", pytest.approx(2.0 * e_mean)),
                     ("hypothesis-selection-refine-cov", pytest.approx(2.0 * e_cov))]
    assert ledger_mismatch(g.budget_plan_, g.ledger_) is None
    assert sum(hr.REFINE_SHARES) == pytest.approx(1.0)
    # a small table at ε = 1: the refinement would be noisier than the cover's cells, so
    # the default keeps the selection alone (public: n, d, ε, α, β), as its plan says
    assert not worth_refining(300, 1, 1.0, DEFAULT_ALPHA, 0.05, False)
    assert worth_refining(3000, 1, 1.0, DEFAULT_ALPHA, 0.05, False)
    g = _hs(1.0, X[:300])
    assert [e.step for e in g.ledger_] == ["hypothesis-selection-projection"]
    assert ledger_mismatch(g.budget_plan_, g.ledger_) is None


def test_refinement_sensitivities_bound_a_replacement() -> None:
    """The refinement's releases: the recorded L1 sensitivities are 2r√d/n and (d+1)r²/n at
    the public radius, and replacing one row (by extreme and random rows) never moves the
    clipped mean / upper second moment by more."""
    rng = np.random.default_rng(0)
    n, d = 200, 2
    X = rng.normal(size=(n, d))
    mean0, L = np.array([0.1, -0.2]), np.linalg.cholesky(np.array([[1.5, 0.3], [0.3, 0.8]]))
    r = hr.refine_radius(n, d, 0.5, 1.0, 0.05)
    assert r >= hr.RADIUS_MARGIN * math.sqrt(2 * math.log(n / 0.05))  # χ₂ tail, d = 2
    iu = np.triu_indices(d)

    def stats(Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        Z = hr.clipped_frame_rows(Y, mean0, L, r)
        return Z.mean(axis=0), (Z.T @ Z / n)[iu]

    m0, s0 = stats(X)
    worst_m = worst_s = 0.0
    for t in range(300):
        Y = X.copy()
        Y[t % n] = rng.normal(size=d) * 10.0 ** rng.integers(-1, 8)
        m1, s1 = stats(Y)
        worst_m = max(worst_m, float(np.abs(m1 - m0).sum()))
        worst_s = max(worst_s, float(np.abs(s1 - s0).sum()))
    assert worst_m <= clipped_mean_l1(r, n, d) * (1 + 1e-9)
    assert worst_s <= clipped_second_moment_upper_l1(r, n, d) * (1 + 1e-9)
    assert worst_s > 0.5 * clipped_second_moment_upper_l1(r, n, d) / (d + 1)  # not vacuous
    g = _hs(4.0, np.random.default_rng(2).normal(size=(500, 1)))
    (em, ec) = [e for e in g.ledger_ if "refine" in e.step]
    r1 = hr.refine_radius(500, 1, 4 * hr.REFINE_SHARES[1], 4 * hr.REFINE_SHARES[2], g.beta)
    assert em.sensitivity == pytest.approx(clipped_mean_l1(r1, 500, 1))
    assert ec.sensitivity == pytest.approx(clipped_second_moment_upper_l1(r1, 500, 1))
