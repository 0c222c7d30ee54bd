"""CoinPress inside a valid prior is right at any column scale (issue 26).

A table whose columns lie 1e-2 and 1e8 units apart (mhtdata: p-values beside genome positions)
has a covariance whose eigenvalues span ~1e25, so any valid ``cov_bounds`` spans more. The chain
(frames whitened by DP releases) resolves such a covariance, but three post-processing steps
that eigendecomposed it in the rows' units did not — the prior floor of each frame, the final
mean's whitener and the projection of the release into ``cov_bounds`` — and the fit came back
silently wrong (KL to np.cov 1e8 on mhtdata at ε = 1e4). They are now scale-free
(:mod:`privgauss.gaussian.coinpress.frames`, :func:`privgauss.linalg.clip_eigenvalues`), checked
here against 50-digit references and end to end.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from mpmath import mp

import privgauss as pg
from privgauss.gaussian.coinpress.frames import floor_in_frame, whitener
from privgauss.linalg import clip_eigenvalues

SCALES = np.array([5e7, 5e7, 1e-2, 5.0])
CORR = np.array([[1.0, 0.99999, 0.1, 0.2], [0.99999, 1.0, 0.1, 0.2], [0.1, 0.1, 1.0, -0.3],
                 [0.2, 0.2, -0.3, 1.0]])
COV = CORR * np.outer(SCALES, SCALES)  # eigenvalues from ~1e-4 to 5e15


def _exact_eig(C: np.ndarray) -> tuple[list, mp.matrix]:
    mp.dps = 60
    w, V = mp.eigsy(mp.matrix(C.tolist()))
    return [w[i] for i in range(C.shape[0])], V


def _exact_clip(C: np.ndarray, lo: float, hi: float) -> np.ndarray:
    w, V = _exact_eig(C)
    d = C.shape[0]
    D = mp.diag([min(max(x, mp.mpf(lo)), mp.mpf(hi)) for x in w])
    out = V * D * V.T
    return np.array([[float(out[i, j]) for j in range(d)] for i in range(d)])


def _scaled_gap(A: np.ndarray, B: np.ndarray) -> float:
    """max |A − B| entrywise relative to √(A_ii A_jj): the error in correlation units."""
    s = np.sqrt(np.diag(A))
    return float(np.max(np.abs(A - B) / np.outer(s, s)))


def test_clip_eigenvalues_is_exact_on_badly_scaled_covariances():
    w, _ = _exact_eig(COV)
    lam_min = float(w[0])
    # a valid lower bound leaves the matrix alone (the eigendecomposition in these units reads
    # λ_min as round-off, about ±1, and the old projection replaced that direction)
    np.testing.assert_array_equal(clip_eigenvalues(COV, lam_min / 100, 1e20), COV)
    # a bound above λ_min lifts that direction only, exactly as in 60-digit arithmetic
    for lo in (lam_min * 10, 1e-3):
        got = clip_eigenvalues(COV, lo, 1e20)
        assert _scaled_gap(_exact_clip(COV, lo, 1e20), got) < 1e-8
    # an upper bound too, together with a lower one: the large eigenvalues are the SVD's small
    # singular values, resolved to eps·cond(K) ≈ 1e-6 of themselves (measured 2e-7)
    got = clip_eigenvalues(COV, lam_min * 10, 1e15)
    assert _scaled_gap(_exact_clip(COV, lam_min * 10, 1e15), got) < 2e-6
    # well-scaled input: the plain eigendecomposition, bit for bit
    C = CORR + 0.0
    wv, V = np.linalg.eigh(C)
    plain = (V * np.clip(wv, 0.01, 1.5)) @ V.T
    np.testing.assert_array_equal(clip_eigenvalues(C, 0.01, 1.5), (plain + plain.T) / 2)


def test_whitener_whitens_a_badly_scaled_covariance():
    B = whitener(COV, 1e-12, "test", rel=1.0)
    mp.dps = 60
    M = mp.matrix(B.tolist()) * mp.matrix(COV.tolist()) * mp.matrix(B.T.tolist())
    got = np.array([[float(M[i, j]) for j in range(4)] for i in range(4)])
    # measured 1.2e-6 off I (the SVD's eps·cond(K)); the plain eigendecomposition floored the
    # p-value axis at 1e-12·λ_max, leaving its variance 2e-8 in the frame instead of 1
    np.testing.assert_allclose(got, np.eye(4), rtol=0, atol=1e-5)
    # its floor still caps the magnification of a direction at 1/√floor
    w, _ = _exact_eig(COV)
    B = whitener(COV, float(w[0]) * 4, "test", rel=1.0)
    assert np.linalg.norm(B, 2) == pytest.approx(1 / np.sqrt(float(w[0]) * 4), rel=1e-6)


def test_floor_in_frame_is_exact_in_a_badly_scaled_frame():
    # a frame that whitens COV (the end of a chain): its release ≈ I; a floor below λ_min
    # leaves it alone, one above lifts that direction to the floor — in the rows' units
    # A⁻¹ Z' A⁻ᵀ equals the 60-digit projection of A⁻¹ Z A⁻ᵀ
    Ainv = SCALES[:, None] * np.linalg.cholesky(CORR)
    A = np.linalg.inv(Ainv)
    Z = np.eye(4) + 1e-3 * np.diag([1.0, -1.0, 0.5, 0.0])
    S = Ainv @ Z @ Ainv.T
    lam = float(_exact_eig(S)[0][0])
    np.testing.assert_allclose(floor_in_frame(Z, A, lam / 100), Z, rtol=0, atol=1e-14)
    for floor in (lam * 10, lam * 1e4):
        got = Ainv @ floor_in_frame(Z, A, floor) @ Ainv.T
        assert _scaled_gap(_exact_clip(S, floor, 1e30), got) < 1e-8


def _table(n: int = 20_000, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    mu = np.array([1e8, 1.0002e8, 5e-2, 3.0])
    return rng.multivariate_normal(np.zeros(4), CORR, size=n) * SCALES + mu


def _kl(m1: np.ndarray, S1: np.ndarray, m0: np.ndarray, S0: np.ndarray) -> float:
    """KL(N(m0, S0) ‖ N(m1, S1)), computed in the correlation units of S0 (scale-free)."""
    s = np.sqrt(np.diag(S0))
    A, B, dm = S0 / np.outer(s, s), S1 / np.outer(s, s), (m1 - m0) / s
    Li = np.linalg.inv(np.linalg.cholesky(B))
    M, v = Li @ A @ Li.T, Li @ dm
    return 0.5 * float(np.trace(M) - len(s) + v @ v - np.linalg.slogdet(M)[1])


@pytest.mark.parametrize("eps", [1e4, 1.0])
def test_coinpress_with_a_valid_wide_prior_at_any_scale(eps):
    # a valid prior: the mean within 10‖μ‖, cov_bounds 100× outside the spectrum (λ_min from
    # the correlation matrix: np.linalg.eigvalsh of np.cov reads it as round-off); before,
    # seeds 0-2 gave KL 1.0, 17.6, 2.9 at ε = 1e4 and 33, 0.05, 0.39 at ε = 1, no failure
    X = _table()
    mu, S = X.mean(axis=0), np.cov(X, rowvar=False)
    sd = np.sqrt(np.diag(S))
    lam = np.linalg.eigvalsh(S / np.outer(sd, sd))[0] * sd.min() ** 2
    prior = dict(mean_bound=10 * float(np.linalg.norm(mu)),
                 cov_bounds=(lam / 100, 100 * float(np.linalg.eigvalsh(S)[-1])))
    limit = 1e-4 if eps > 1 else 0.02  # measured: ≤ 2e-6 and ≤ 0.003
    for seed in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                g = pg.PrivateGaussian(epsilon=eps, delta=1e-6, method="coinpress",
                                       random_state=seed, **prior).fit(X)
            except pg.EstimationFailed:  # a DP outcome would be honest; none is expected here
                pytest.fail("the fit failed inside a valid prior")
        assert _kl(g.mean_, g.covariance_, mu, S) < limit


def test_a_prior_wider_than_float64_resolves_is_refused_before_spending():
    # columns ~1e21 sd apart (condition ~1e42): coinpress inside a valid prior came back
    # singular without a warning; any prior containing such a truth is wider than
    # MAX_PRIOR_CONDITION, so method='coinpress' refuses it before spending and auto takes the
    # bound-free route, which standardises each axis by DP first
    from privgauss.gaussian.coinpress.frames import MAX_PRIOR_CONDITION

    rng = np.random.default_rng(0)
    scales = np.array([1e12, 1e12, 1e-9, 1.0])
    X = rng.multivariate_normal(np.zeros(4), CORR, size=20_000) * scales + 2 * scales
    mu, S = X.mean(axis=0), np.cov(X, rowvar=False)
    sd = np.sqrt(np.diag(S))
    lam = np.linalg.eigvalsh(S / np.outer(sd, sd))[0] * sd.min() ** 2
    prior = dict(mean_bound=10 * float(np.linalg.norm(mu)), cov_bounds=(lam / 2, 8 * sd.max() ** 2))
    assert prior["cov_bounds"][1] / prior["cov_bounds"][0] > MAX_PRIOR_CONDITION
    g = pg.PrivateGaussian(epsilon=1e4, delta=1e-6, method="coinpress", random_state=0, **prior)
    with pytest.raises(pg.InvalidDataError, match="float64"):
        g.fit(X)
    assert not getattr(g, "ledger_", None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = pg.PrivateGaussian(epsilon=1e4, delta=1e-6, random_state=0, **prior).fit(X)
    assert g.method_ == "histogram" and "'coinpress' cannot work here" in g.method_reason_
    assert _kl(g.mean_, g.covariance_, mu, S) < 1e-3
    # a prior just inside the limit is still run (mhtdata's valid priors span ~1e29)
    lo, hi = 1e-6, 1e-6 * MAX_PRIOR_CONDITION / 2
    Y = _table(5000)
    est = pg.PrivateGaussian(rho=1e3, method="coinpress", cov_bounds=(lo, hi),
                             mean_bound=1e9, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(Y)
    assert est.method_ == "coinpress"
