"""Numerical robustness: ill-conditioned covariances, huge translations, tiny scales, larger d.

The public-data method is affine-equivariant: run with the same seed on ``A x + b`` (public rows
transformed alike), its estimate is the transformed estimate, so its errors — which are
affine-invariant (Mahalanobis mean error, whitened covariance error) — equal those in the
original frame. This is tested for translations by 1e12, scaling by 1e-6 and covariance
condition numbers up to 1e8. The bound-free histogram method places its grids from private
scale estimates, so it is only approximately equivariant: its errors are checked to stay of
the same size. No estimate may be NaN or non-PSD.
"""

from __future__ import annotations

import numpy as np
import pytest

import privgauss as pg
from privgauss.metrics import covariance_error, mahalanobis_mean_error

D, N = 5, 20_000
RNG = np.random.default_rng(0)
X0 = RNG.normal(size=(N, D))
P0 = RNG.normal(size=(D + 1, D))


def conditioned(cond: float, d: int = D, seed: int = 1) -> np.ndarray:
    """A (d, d) map A with A Aᵀ of condition number ``cond`` and a random eigenbasis."""
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(d, d)))
    return q @ np.diag(np.logspace(0, np.log10(cond) / 2, d)) @ q.T


TRANSFORMS = {
    "identity": (np.eye(D), np.zeros(D)),
    "translate 1e12": (np.eye(D), np.full(D, 1e12)),
    "scale 1e-6": (1e-6 * np.eye(D), np.zeros(D)),
    "condition 1e4": (conditioned(1e4), np.zeros(D)),
    "condition 1e8": (conditioned(1e8), np.zeros(D)),
    "condition 1e8, scale 1e-6, translate 1e3": (1e-6 * conditioned(1e8), np.full(D, 1e3)),
    "translate 1e12, condition 1e8": (conditioned(1e8), np.full(D, 1e12)),
}


def assert_valid(mean: np.ndarray, cov: np.ndarray) -> None:
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(cov))
    assert np.array_equal(cov, cov.T)
    eig = np.linalg.eigvalsh(cov)
    assert eig[0] >= -1e-12 * eig[-1]


def fit_errors(method: str, A: np.ndarray, b: np.ndarray, **kwargs: object) -> tuple[float, float]:
    X, P = X0 @ A.T + b, P0 @ A.T + b
    g = pg.PrivateGaussian(method=method, random_state=7, **kwargs).fit(
        X, public_X=P if method == "public" else None
    )
    assert_valid(g.mean_, g.covariance_)
    cov = A @ A.T
    return mahalanobis_mean_error(g.mean_, b, cov), covariance_error(g.covariance_, cov)


@pytest.fixture(scope="module")
def public_reference() -> tuple[float, float]:
    return fit_errors("public", *TRANSFORMS["identity"], rho=0.5)


@pytest.mark.parametrize("name", list(TRANSFORMS)[1:])
def test_public_method_errors_are_affine_invariant(
    name: str, public_reference: tuple[float, float]
) -> None:
    A, b = TRANSFORMS[name]
    mean_err, cov_err = fit_errors("public", A, b, rho=0.5)
    ref_mean, ref_cov = public_reference
    # float64 keeps ~16 digits: a 1e12 translation of unit-scale data keeps ~4 of them
    rtol = 1e-2 if np.abs(b).max() >= 1e12 else 1e-6
    assert mean_err == pytest.approx(ref_mean, rel=rtol)
    assert cov_err == pytest.approx(ref_cov, rel=rtol)
    assert ref_mean < 0.1 and ref_cov < 0.2  # and the reference itself is accurate


@pytest.mark.parametrize("name", ["translate 1e12", "scale 1e-6", "condition 1e6"])
def test_histogram_method_is_scale_free(name: str) -> None:
    # up to condition 1e6, whose correlation matrix has condition 1.2e3: beyond the default
    # corr_condition=100 assumption, so that case states it (corr_condition=1e4). With the
    # default it failed (EstimationFailed) on 6 of 12 noise seeds and was silently off (error
    # 7-35) on 1; it had passed here by the luck of one seed. At 1e8 (far beyond) see
    # test_histogram_method_at_condition_1e8_is_a_ridge_fit
    A, b = TRANSFORMS[name] if name in TRANSFORMS else (conditioned(1e6), np.zeros(D))
    corr = {"corr_condition": 1e4} if name == "condition 1e6" else {}
    ref = fit_errors("histogram", *TRANSFORMS["identity"], epsilon=1.0, delta=1e-6, **corr)
    got = fit_errors("histogram", A, b, epsilon=1.0, delta=1e-6, **corr)
    # its grids sit at private scales, not transformed ones: same size of error, not equal
    assert got[0] < 3 * ref[0] + 0.02
    assert got[1] < 3 * ref[1] + 0.05


def test_public_method_in_dimension_100_stays_finite_and_psd() -> None:
    # larger d with few rows: the estimate may be poor, but never NaN or non-PSD
    d = 100
    rng = np.random.default_rng(2)
    X = rng.normal(size=(3000, d)) * 1e-3 + 1e6
    P = rng.normal(size=(d + 1, d)) * 1e-3 + 1e6
    acct = pg.Accountant(pg.ZCDP(1.0))
    try:
        g = pg.PrivateGaussian(rho=1.0, method="public", random_state=0, accountant=acct).fit(
            X, public_X=P
        )
    except pg.InvalidDataError as exc:  # a hopeless plan is refused before spending
        assert "public rows" in str(exc) and acct.spent is None
        return
    except pg.EstimationFailed:
        return
    assert_valid(g.mean_, g.covariance_)


@pytest.mark.parametrize("cond", [1e4, 1e8])
def test_known_covariance_mean_is_affine_invariant(cond: float) -> None:
    # mean-only problems whiten by the known covariance: the same error in every frame
    ref = None
    for A, b in ((np.eye(D), np.zeros(D)), (conditioned(cond), np.full(D, 1e6))):
        X, P = X0 @ A.T + b, P0 @ A.T + b
        g = pg.PrivateGaussian(rho=0.5, covariance=A @ A.T, random_state=3).fit(X, public_X=P[:1])
        err = mahalanobis_mean_error(g.mean_, b, A @ A.T)
        ref = err if ref is None else ref
        assert np.all(np.isfinite(g.mean_))
        assert err == pytest.approx(ref, rel=1e-5)


@pytest.mark.parametrize("name", ["condition 1e8", "translate 1e12, condition 1e8"])
def test_histogram_method_at_condition_1e8_is_a_ridge_fit(name: str) -> None:
    # T9: beyond its corr_condition assumption the histogram method used to return mean error
    # 6.6e3 and covariance error 2e2 silently, then (issue 17) an EstimationFailed after
    # spending. Issue 26: near-collinear real columns must fit, so the refinement now sees a
    # jitter ridge its prior cannot exclude: the directions this budget cannot resolve are held
    # at the ridge (overestimated: covariance error 43, measured), never far underestimated,
    # and the mean stays accurate (measured Mahalanobis error 0.07)
    A, b = TRANSFORMS[name]
    X = X0 @ A.T + b
    g = pg.PrivateGaussian(method="histogram", epsilon=1.0, delta=1e-6, random_state=7).fit(X)
    assert_valid(g.mean_, g.covariance_)
    cov = A @ A.T
    assert mahalanobis_mean_error(g.mean_, b, cov) < 0.5
    root = np.linalg.inv(A)  # A symmetric: cov = A², cov^-1/2 = A^-1
    assert np.linalg.eigvalsh(root @ g.covariance_ @ root.T)[0] > 0.75


def test_public_preconditioner_accepts_ill_conditioned_public_rows_in_dimension_100() -> None:
    # T9: 101 public rows in general position with condition number 1e8-1e10 were refused as
    # "degenerate"; the preconditioner's frame must whiten them (covariance between I and K·I)
    from privgauss.gaussian.public import public_preconditioner

    d = 100
    rng = np.random.default_rng(3)
    A = conditioned(1e10, d=d, seed=3)  # the old absolute-style test refused this
    pre = public_preconditioner(rng.normal(size=(d + 1, d)) @ A.T + 1e12, 0.05)
    F = pre.forward_matrix
    eig = np.linalg.eigvalsh(F @ (A @ A.T) @ F.T)
    assert np.all(np.isfinite(eig)) and 0.5 <= eig[0] and eig[-1] <= pre.K
