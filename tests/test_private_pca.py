"""Tests of privgauss.mixture.private_pca (Analyze-Gauss private PCA, DTTZ14 / KSSU19 §3.7).

Subspace recovery, the exact noise scale in the ledger, the symmetric noise distribution,
eigen-selection by algebraic value, the Weyl projection bound, clipping, the non-private limit,
an empirical privacy audit (and that it flags a halved sensitivity), input handling and the
secure path. Fast seeded noise everywhere except the last test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import linalg, stats

import privgauss.mixture.private_pca as pca_module
from privgauss import PrivacyBudgetError
from privgauss.audit import audit_mechanism
from privgauss.datasets import make_mixture
from privgauss.linalg import clip_rows
from privgauss.mechanisms import Release, gaussian_sigma_analytic, gaussian_sigma_zcdp
from privgauss.mixture.private_pca import (
    PrivatePCA,
    noise_spectral_norm_bound,
    private_pca,
    projection_error_bound,
    top_eigenvectors,
)
from privgauss.noise import NoiseSource
from privgauss.privacy import ZCDP, Accountant, ApproxDP, PureDP


def second_moment(X: np.ndarray, center: np.ndarray, radius: float) -> np.ndarray:
    """The exact (non-private) statistic: (1/n) Σ (x−c)(x−c)ᵀ over the clipped rows."""
    clipped, _ = clip_rows(X, center, radius)
    Z = clipped - center
    return Z.T @ Z / X.shape[0]


def full_matrix(res: PrivatePCA) -> np.ndarray:
    """The released noisy matrix, recovered from a rank-d output (post-processing)."""
    return (res.components * res.eigenvalues) @ res.components.T


def run(X, center, radius, rank, budget, seed):
    acct = Accountant(budget)
    return private_pca(X, center, radius, rank, budget, release=Release.of(acct, seed)), acct


# --------------------------------------------------------------------------- utility


def test_recovers_the_span_of_the_means_of_a_separated_mixture() -> None:
    mix = make_mixture(20_000, 3, 10, separation=3.0, random_state=0)
    radius = 40.0  # public, chosen by the analyst; the clipping covers the data w.h.p.
    res, _ = run(mix.X, np.zeros(10), radius, 3, ZCDP(0.5), seed=1)
    assert res.components.shape == (10, 3)
    np.testing.assert_allclose(res.components.T @ res.components, np.eye(3), atol=1e-12)
    angles = linalg.subspace_angles(res.components, mix.means.T)
    assert np.max(angles) < 0.05
    # noisy eigenvalues are within ||E|| of the exact ones (Weyl), ||E|| bounded w.h.p.
    exact = np.linalg.eigvalsh(second_moment(mix.X, np.zeros(10), radius))[::-1][:3]
    bound = noise_spectral_norm_bound(res.noise_scale, 10, beta=1e-3)
    assert np.all(np.abs(res.eigenvalues - exact) <= bound)


def test_projection_coordinates_follow_one_convention() -> None:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 4))
    c = np.array([1.0, 0.0, -1.0, 2.0])
    res, _ = run(X, c, 5.0, 2, ZCDP(1.0), seed=0)
    np.testing.assert_allclose(res.project(X), (X - c) @ res.components)
    np.testing.assert_array_equal(res.center, c)


# --------------------------------------------------------------------------- calibration


@pytest.mark.parametrize(
    "budget",
    [ZCDP(0.3), ApproxDP(0.8, 1e-6), PureDP(2.0)],
    ids=["zcdp", "approx", "pure"],
)
def test_ledger_records_the_exact_noise_scale(budget) -> None:
    n, d, r = 200, 5, 3.0
    X = np.random.default_rng(1).standard_normal((n, d))
    res, acct = run(X, np.zeros(d), r, 2, budget, seed=0)
    (entry,) = acct.ledger
    assert entry.cost == budget
    assert entry.step == "private-pca"
    if isinstance(budget, PureDP):
        sens = (d + 1) * r**2 / n
        scale = sens / budget.epsilon
        assert entry.mechanism == "symmetric-laplace"
        assert res.noise_kind == "laplace"
    else:
        sens = math.sqrt(2.0) * r**2 / n
        if isinstance(budget, ZCDP):
            scale = gaussian_sigma_zcdp(sens, budget.rho)
            assert scale == pytest.approx(sens / math.sqrt(2 * budget.rho), rel=1e-15)
        else:
            scale = gaussian_sigma_analytic(sens, budget.epsilon, budget.delta)
        assert entry.mechanism == "symmetric-gaussian"
    assert entry.sensitivity == pytest.approx(sens, rel=1e-15)
    assert entry.noise_scale == pytest.approx(scale, rel=1e-15)
    assert res.noise_scale == pytest.approx(scale, rel=1e-15)


@pytest.mark.parametrize("budget", [ZCDP(0.05), PureDP(1.0)], ids=["gaussian", "laplace"])
def test_released_noise_is_symmetric_with_the_stated_distribution(budget) -> None:
    # With rank = d the whole noisy matrix is recoverable, so E = M_hat - M is observable.
    n, d, r = 100, 40, 1.0
    X = np.random.default_rng(2).standard_normal((n, d)) * 0.1
    M = second_moment(X, np.zeros(d), r)
    res, _ = run(X, np.zeros(d), r, d, budget, seed=3)
    E = full_matrix(res) - M
    np.testing.assert_allclose(E, E.T, atol=1e-12 * res.noise_scale)
    s = res.noise_scale
    gauss = isinstance(budget, ZCDP)
    dist = stats.norm(scale=s) if gauss else stats.laplace(scale=s)
    # Gaussian noise is σ on the diagonal and σ/√2 off it (noise on the Frobenius coordinates,
    # whose L2 sensitivity is the Frobenius one); Laplace noise is the same on every entry
    off = stats.norm(scale=s / np.sqrt(2.0)) if gauss else dist
    iu = np.triu_indices(d, 1)
    # off-diagonal and diagonal entries separately, each against its stated scale
    assert stats.kstest(E[iu], off.cdf).pvalue > 1e-4
    assert stats.kstest(np.diag(E), dist.cdf).pvalue > 1e-4
    if gauss:  # the other scale is rejected: the test can tell them apart
        assert stats.kstest(E[iu], dist.cdf).pvalue < 1e-4


# --------------------------------------------------------------------------- eigen-selection


def test_top_eigenvectors_rank_by_algebraic_value() -> None:
    M = np.diag([3.0, -5.0, 1.0])
    w, V = top_eigenvectors(M, 2)
    np.testing.assert_allclose(w, [3.0, 1.0])
    np.testing.assert_allclose(np.abs(V), [[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]])
    # an SVD ranks by |λ| and would pick the -5 direction first
    U, _, _ = np.linalg.svd(M)
    assert abs(U[1, 0]) == 1.0


def test_noisy_negative_directions_are_never_selected() -> None:
    """Heavy noise on a small statistic: find seeds where the largest-|λ| eigenvalue of the
    released matrix is negative; the rank-1 output must still be the top algebraic one."""
    n, d, r = 30, 6, 1.0
    X = np.random.default_rng(4).standard_normal((n, d)) * 0.05
    budget = ZCDP(1e-3)
    found = 0
    for seed in range(40):
        full, _ = run(X, np.zeros(d), r, d, budget, seed)  # same seed => same noise
        one, _ = run(X, np.zeros(d), r, 1, budget, seed)
        w = full.eigenvalues
        if abs(w.min()) <= abs(w.max()):
            continue
        found += 1
        assert one.eigenvalues[0] == pytest.approx(w.max())
        assert abs(one.components[:, 0] @ full.components[:, 0]) == pytest.approx(1.0)
        assert abs(one.components[:, 0] @ full.components[:, -1]) < 1e-8
    assert found >= 5


def test_weyl_projection_bound_holds_for_the_noise_drawn() -> None:
    mix = make_mixture(2_000, 3, 8, separation=2.0, random_state=5)
    c, r, rank = np.zeros(8), 30.0, 3
    M = second_moment(mix.X, c, r)
    lam = np.linalg.eigvalsh(M)[::-1]
    for seed in range(10):
        full, _ = run(mix.X, c, r, 8, ZCDP(0.01), seed)
        part, _ = run(mix.X, c, r, rank, ZCDP(0.01), seed)
        E = full_matrix(full) - M
        P_perp = np.eye(8) - part.components @ part.components.T
        residual = np.linalg.eigvalsh(P_perp @ M @ P_perp)[-1]
        assert residual <= lam[rank] + 2 * np.linalg.norm(E, 2) + 1e-9 * lam[0]


def test_spectral_norm_bound_holds_at_the_stated_rate() -> None:
    src = NoiseSource(6)
    for d in (2, 10, 50):
        norms = [np.linalg.norm(src.symmetric(np.zeros((d, d)), 1.0), 2) for _ in range(300)]
        assert np.mean(np.array(norms) > noise_spectral_norm_bound(1.0, d, beta=0.05)) <= 0.05
    assert projection_error_bound(2.0, 10, 0.1) == pytest.approx(
        2 * noise_spectral_norm_bound(2.0, 10, 0.1)
    )


# --------------------------------------------------------------------------- clipping, limits


def test_rows_are_always_clipped_before_the_release() -> None:
    rng = np.random.default_rng(7)
    X = rng.standard_normal((100, 3))
    X[0] = [1e6, -2e6, 3e5]
    pre_clipped, _ = clip_rows(X, np.zeros(3), 2.0)
    a, _ = run(X, np.zeros(3), 2.0, 3, ZCDP(0.5), seed=8)
    b, _ = run(pre_clipped, np.zeros(3), 2.0, 3, ZCDP(0.5), seed=8)
    np.testing.assert_allclose(a.eigenvalues, b.eigenvalues, rtol=1e-12)
    # the outlier cannot push the spectrum above r^2 + ||E||
    assert a.eigenvalues[0] <= 4.0 + noise_spectral_norm_bound(a.noise_scale, 3, 1e-6)


def test_huge_budget_approaches_exact_pca() -> None:
    X = np.random.default_rng(9).standard_normal((300, 5)) @ np.diag([3, 2, 1, 0.5, 0.1])
    c = np.full(5, 0.2)
    res, _ = run(X, c, 100.0, 2, ZCDP(1e20), seed=0)
    w, V = np.linalg.eigh(second_moment(X, c, 100.0))
    np.testing.assert_allclose(res.eigenvalues, w[::-1][:2], rtol=1e-7)
    np.testing.assert_allclose(np.abs(res.components.T @ V[:, ::-1][:, :2]), np.eye(2), atol=1e-7)
    assert res.noise_scale < 1e-7


# --------------------------------------------------------------------------- privacy audit

N_AUDIT, D_AUDIT = 10, 2
AUDIT_BUDGET = ApproxDP(1.0, 1e-2)  # a large delta keeps the audit short and powerful
# replace-one neighbours at the clipping boundary: e1 vs e2 on the unit sphere, the worst case
# of the Frobenius sensitivity (||e1e1ᵀ - e2e2ᵀ||_F = sqrt(2))
AUDIT_D = np.zeros((N_AUDIT, D_AUDIT))
AUDIT_D[0] = [1.0, 0.0]
AUDIT_D_PRIME = np.zeros((N_AUDIT, D_AUDIT))
AUDIT_D_PRIME[0] = [0.0, 1.0]


def _audit_mechanism(data: np.ndarray, rng: np.random.Generator) -> float:
    acct = Accountant(AUDIT_BUDGET)
    res = private_pca(
        data,
        np.zeros(D_AUDIT),
        1.0,
        D_AUDIT,
        AUDIT_BUDGET,
        release=Release.of(acct, rng),
    )
    M = full_matrix(res)  # a function of the output only
    return float(M[0, 0] - M[1, 1])


@pytest.mark.slow
def test_privacy_audit_passes_on_boundary_neighbours() -> None:
    result = audit_mechanism(
        _audit_mechanism, AUDIT_D, AUDIT_D_PRIME, epsilon=1.0, delta=1e-2, n_runs=6_000
    )
    assert result.passed, str(result)


@pytest.mark.slow
def test_privacy_audit_flags_a_halved_sensitivity(monkeypatch: pytest.MonkeyPatch) -> None:
    true = pca_module.clipped_second_moment_frobenius
    monkeypatch.setattr(pca_module, "clipped_second_moment_frobenius", lambda r, n: true(r, n) / 2)
    result = audit_mechanism(
        _audit_mechanism, AUDIT_D, AUDIT_D_PRIME, epsilon=1.0, delta=1e-2, n_runs=6_000
    )
    assert not result.passed, str(result)


# --------------------------------------------------------------------------- input handling


def test_inputs_are_not_mutated() -> None:
    X = np.random.default_rng(10).standard_normal((40, 3)) * 5
    X.flags.writeable = False
    c = np.array([0.5, 0.5, 0.5])
    c.flags.writeable = False
    X_copy, c_copy = X.copy(), c.copy()
    res, _ = run(X, c, 1.0, 2, ZCDP(1.0), seed=0)
    np.testing.assert_array_equal(X, X_copy)
    np.testing.assert_array_equal(c, c_copy)
    assert res.center is not c


def test_errors_do_not_leak_data_and_budget_is_checked_before_noise() -> None:
    X = np.full((20, 3), 123.456789)
    X[3, 1] = np.nan
    # a non-finite row is clipped to the centre per record, never an error (rule 10): the
    # estimators refuse NaN at their entry, before anything is spent
    run(X, np.zeros(3), 1.0, 1, ZCDP(1.0), 0)
    X = np.full((20, 3), 123.456789)
    for kwargs, exc in [
        (dict(rank=4), ValueError),
        (dict(rank=0), ValueError),
        (dict(center=np.zeros(2)), ValueError),
        (dict(radius=-1.0), ValueError),
        (dict(radius=math.inf), ValueError),
    ]:
        args = dict(center=np.zeros(3), radius=1.0, rank=1) | kwargs
        with pytest.raises(exc) as err:
            private_pca(
                X,
                args["center"],
                args["radius"],
                args["rank"],
                ZCDP(1.0),
                release=Release.of(Accountant(ZCDP(1.0)), 0),
            )
        assert "123.45" not in str(err.value)
    acct = Accountant(ZCDP(0.1))
    src = NoiseSource(0)
    state = src.rng.bit_generator.state
    with pytest.raises(PrivacyBudgetError) as err:
        private_pca(X, np.zeros(3), 1.0, 1, ZCDP(0.5), release=Release.of(acct, src))
    assert "123.45" not in str(err.value)
    assert acct.ledger == [] and src.rng.bit_generator.state == state  # nothing drawn


def test_secure_noise_path() -> None:
    X = np.random.default_rng(11).standard_normal((50, 3))
    acct = Accountant(ZCDP(1.0))
    res = private_pca(X, np.zeros(3), 3.0, 2, ZCDP(1.0), release=Release.of(acct))
    np.testing.assert_allclose(res.components.T @ res.components, np.eye(2), atol=1e-12)
    assert res.eigenvalues[0] >= res.eigenvalues[1]
    assert len(acct.ledger) == 1
