"""Private EM at ε = 1e4 on a table with a point mass (issue 27's "parked" tables: Aids2,
Chile, Treatment). Diagnosis (``benchmarks/results/em_parked.md``): on Aids2 and Chile private
EM finds scikit-learn's basin — its component sits on the atom with scikit-learn's weight —
and loses by the variance alone: the whitened-frame eigenvalue floor stops at
``NUMERIC_FLOOR`` = 1e-8 (×``EIG_FLOOR``·(f/0.4)⁴ above it), where scikit-learn's
``reg_covar`` (10⁻⁶ in the data's units) needs 2.5e-12 (Aids2) and 1e-16 (Chile) in that
frame; ½·w·ln(ratio) of the variances is the whole gap (1.55 of 1.55, 4.46 of 4.44 nat/row).

The synthetic table mimics Aids2: 35 % of the rows share one value of a column whose standard
deviation is 600, far from the continuous rows; scikit-learn's best of 5 parks a component
there (variance 1e-6) and scored 1.6 nat/row above the private fit while the floor held it
(checked below with the factor path gated off). A wide plan (quiet: here ε = 1e4) now carries
the covariances by their Cholesky factors and lets the floor fade to 1e-20
(``EMPlan.factored``): the parked component is as thin as the rows say."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.mixture import GaussianMixture

import privgauss as pg
from privgauss.mixture import private_em as pe
from privgauss.privacy import ApproxDP

ATOM = 12500.0


def _table(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.multivariate_normal(np.zeros(3), [[1, .5, .2], [.5, 1, .3], [.2, .3, 1]], size=n)
    X = X * np.array([600.0, 600.0, 10.0]) + np.array([10000.0, 10500.0, 37.0])
    X[rng.random(n) < 0.35, 1] = ATOM  # a point mass 3.3 sd above the column's other rows
    return X


@pytest.fixture(scope="module")
def fits() -> tuple[GaussianMixture, pg.PrivateGaussianMixture, np.ndarray, np.ndarray]:
    X, held = _table(3000, 0), _table(2000, 100)
    ref = GaussianMixture(3, n_init=5, random_state=0).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = pg.PrivateGaussianMixture(3, epsilon=1e4, delta=1e-6, random_state=0).fit(X)
    return ref, est, X, held


def test_the_reference_parks_a_component_on_the_atom(fits):
    ref, _, X, _ = fits
    j = int(np.argmin(ref.covariances_[:, 1, 1]))
    assert ref.covariances_[j, 1, 1] < 1e-5  # reg_covar: the column's variance is 3.6e5
    assert ref.means_[j, 1] == pytest.approx(ATOM, abs=1e-6)
    assert ref.weights_[j] == pytest.approx(np.mean(X[:, 1] == ATOM), abs=0.01)


def test_private_em_finds_the_parked_basin(fits):
    """The start and the steps find scikit-learn's basin: a component on the atom, with the
    atom's share of the rows, far thinner in that column than any continuous cluster (with the
    floor: 1e-8 of the column's variance). A start that missed it would leave every
    component's variance there near the continuous rows' (3.6e5 of the column's 1.15e6)."""
    ref, est, X, _ = fits
    j = int(np.argmin(est.covariances_[:, 1, 1]))
    assert est.means_[j, 1] == pytest.approx(ATOM, abs=1e-3)
    assert est.weights_[j] == pytest.approx(np.mean(X[:, 1] == ATOM), abs=0.01)
    assert est.covariances_[j, 1, 1] < 1e-6 * X[:, 1].var()


def test_the_parked_fit_reaches_the_reference_at_eps_1e4(fits):
    """Issue 27's goal on the parked table: a wide plan (quiet, ε = 1e4) carries the
    covariances by their Cholesky factors and lets the whitened-frame floor fade to 1e-20, so
    the parked component is as thin as the rows say (before: 1e-8 of the column's variance,
    the numeric floor, 1.62 nat/row below scikit-learn's held-out score). The returned
    covariances are symmetric positive definite and the user's scoring and sampling read
    them."""
    ref, est, _, held = fits
    assert est.fit_info_["em_plan"].factored
    gap = float(np.mean(ref.score_samples(held)) - np.mean(est.score_samples(held)))
    assert gap <= 0.02, gap
    for C in est.covariances_:
        np.testing.assert_array_equal(C, C.T)
        np.linalg.cholesky(C)
    j = int(np.argmin(est.covariances_[:, 1, 1]))
    assert est.covariances_[j, 1, 1] < 1e-6  # as thin as scikit-learn's reg_covar, or thinner
    assert np.all(np.isfinite(est.score_samples(held)))
    draws = est.sample(500)[0]
    assert draws.shape == (500, 3) and np.all(np.isfinite(draws))


def test_the_gate_off_leaves_the_parked_fit_at_the_numeric_floor(monkeypatch):
    """The same fit with the factor path gated off (as before it): the parked variance stops
    at the whitened-frame floor 1e-8 (of the column's variance, about) and the fit is far
    below the reference — what the test above would miss if the gate never opened."""
    X, held = _table(3000, 0), _table(2000, 100)
    ref = GaussianMixture(3, n_init=5, random_state=0).fit(X)
    monkeypatch.setattr(pe.EMPlan, "factored", property(lambda self: False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = pg.PrivateGaussianMixture(3, epsilon=1e4, delta=1e-6, random_state=0).fit(X)
    j = int(np.argmin(est.covariances_[:, 1, 1]))
    assert est.covariances_[j, 1, 1] > 1e-9 * X[:, 1].var()
    assert float(np.mean(ref.score_samples(held)) - np.mean(est.score_samples(held))) > 1.0


def test_the_factor_update_is_the_repair_where_float64_holds_it_and_exact_below():
    """:func:`private_em._factor_update` gives the factor of repair_covariance(L C Lᵀ, lo)
    where the matrix path is accurate, and keeps an eigenvalue of 1e-18 (far below float64's
    resolution of an O(1) matrix, where the matrix path's Cholesky fails or loses it)."""
    rng = np.random.default_rng(3)
    d = 4
    A = rng.normal(size=(d, d))
    Lj = np.linalg.cholesky(A @ A.T + d * np.eye(d))
    B = rng.normal(size=(d, d))
    Cy = B @ B.T / d + 0.1 * np.eye(d)
    F = pe._factor_update(Lj, Cy, 1e-6)
    assert np.all(np.diagonal(F) > 0) and np.allclose(F, np.tril(F))
    want = pe.repair_covariance(Lj @ pe.repair_covariance(Cy) @ Lj.T, 1e-6)
    np.testing.assert_allclose(F @ F.T, want, rtol=1e-10, atol=1e-12)
    # the lower clip: a direction squeezed far below lo comes back to lo exactly
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    thin = (Q * np.array([1e-30, 1.0, 2.0, 3.0])) @ Q.T
    F = pe._factor_update(np.eye(d), thin, 1e-18)  # repair(Cy) lifts Cy to 1e-3 first
    assert np.linalg.svd(F, compute_uv=False)[-1] ** 2 == pytest.approx(1e-3, rel=1e-6)
    # a previous factor with eigenvalues (1e-18, 1, 2, 3) in a rotated frame
    _, R = np.linalg.qr((Q * np.sqrt([1e-18, 1.0, 2.0, 3.0])).T)
    F = pe._factor_update(R.T * 0.1, np.eye(d), 1e-30)
    lam = np.linalg.svd(F, compute_uv=False) ** 2
    assert lam[-1] == pytest.approx(1e-20, rel=1e-6)  # 1e-2 × 1e-18: held in the factor
    assert lam[0] == pytest.approx(3e-2, rel=1e-9)
    F = pe._factor_update(R.T * 0.1, np.eye(d), 1e-16)  # the floor lifts it
    assert np.linalg.svd(F, compute_uv=False)[-1] ** 2 == pytest.approx(1e-16, rel=1e-6)
    # the matrix path cannot hold it: its smallest eigenvalue is rounding (~1e-18), not 1e-20
    low = np.linalg.eigvalsh(pe.sym(0.01 * (R.T @ R)))[0]
    assert not 1e-21 < low < 1e-19, low


def test_the_factor_update_of_a_stack_is_each_component_alone_bit_for_bit():
    """A step's components go through :func:`private_em._factor_update` in one call (issue
    28): each factor is exactly the one-component call's, each with its own floor (one
    lifted to it)."""
    rng = np.random.default_rng(8)
    d, m = 3, 5
    Ls, Cs = [], []
    for _ in range(m):
        A = rng.normal(size=(d, d))
        Ls.append(np.linalg.cholesky(A @ A.T + 0.1 * np.eye(d)))
        B = rng.normal(size=(d, d))
        Cs.append(B @ B.T / d + 0.05 * np.eye(d))
    Cs[2] = np.diag([1e-30, 1.0, 2.0])  # lifted by the repair, then by its floor
    lo = np.array([1e-6, 1e-12, 0.5, 1e-20, 1e-3])
    F = pe._factor_update(np.array(Ls), np.array(Cs), lo)
    for j in range(m):
        alone = pe._factor_update(Ls[j], Cs[j], float(lo[j]))
        assert np.array_equal(F[j], alone), j
    assert np.linalg.svd(F[2], compute_uv=False)[-1] ** 2 == pytest.approx(0.5, rel=1e-9)


def test_the_output_floors_each_correlation_matrix_not_a_parked_variance():
    """:func:`private_em._data_covariance`: a component parked on a column (variance 1e-20 of
    the other columns', uncorrelated) keeps that variance to rounding; a component whose
    columns are collinear to 1e-20 gets its correlation matrix's smallest eigenvalue lifted to
    ``CORR_FLOOR`` × its largest, so the user's Cholesky succeeds."""
    M = np.diag([1e5, 1e-5, 3.0])  # a factor in the data's units
    C = pe._data_covariance(M)
    assert C[1, 1] == pytest.approx(1e-10, rel=1e-9) and C[0, 0] == pytest.approx(1e10)
    np.linalg.cholesky(C)
    v = np.array([1.0, 2.0, -1.0]) / math.sqrt(6.0)
    Q, _ = np.linalg.qr(np.column_stack([v, np.eye(3)[:, :2]]))
    M = Q * np.array([1.0, 1e-10, 1e-10])  # M Mᵀ = v vᵀ + 1e-20 (I − v vᵀ): collinear columns
    M = M * np.array([[1e3], [1.0], [1e-3]])
    with pytest.raises(np.linalg.LinAlgError):  # the plain product is not numerically PD
        np.linalg.cholesky(M @ M.T)
    C = pe._data_covariance(M)
    np.linalg.cholesky(C)
    s = 1.0 / np.sqrt(np.diag(C))
    lam = np.linalg.eigvalsh(C * np.outer(s, s))
    assert lam[0] >= 0.5 * pe.CORR_FLOOR * lam[-1]


def test_eps_1_fits_are_untouched_by_the_factor_path(monkeypatch):
    """At ε = 1 no benchmark shape's plan is wide (the factor path's gate, public), and a
    fixed-seed ε = 1 fit's parameters equal, bit for bit, those with the gate forced off
    (the floors as before)."""
    shapes = [(50_000, 10, 3), (50_000, 2, 2), (50_000, 15, 6), (30_000, 5, 3),
              (1_000_000, 10, 3), (2_000, 3, 3), (20_000, 10, 3), (100_000, 2, 3)]
    for n, d, k in shapes:
        assert not pe.em_plan(n, d, k, ApproxDP(1.0, 1e-6)).factored, (n, d, k)
    assert pe.em_plan(2274, 3, 3, ApproxDP(1e4, 1e-6)).factored  # Aids2's shape at ε = 1e4
    X = _table(3000, 1)

    def fit() -> pg.PrivateGaussianMixture:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pg.PrivateGaussianMixture(3, epsilon=1.0, delta=1e-6, random_state=4,
                                             enforce_requirements=False).fit(X)

    on = fit()
    monkeypatch.setattr(pe.EMPlan, "factored", property(lambda self: False))
    off = fit()
    for a in ("weights_", "means_", "covariances_"):
        np.testing.assert_array_equal(getattr(on, a), getattr(off, a))


# --- session 50 (emfloat): the back map of a badly scaled frame ------------------------------


def _mht_like(n: int, seed: int) -> np.ndarray:
    """mhtdata's shape: positions ~1e8 (three correlated columns, sds 2e7–7e7), a column of
    sd 0.015, an integer column of sd 2e4, and a column whose values are the atoms 1.0 and 2.0
    (sd 0.49), which the positions depend on."""
    rng = np.random.default_rng(seed)
    atom = rng.choice([1.0, 2.0], size=n, p=[0.6, 0.4])
    pos = 1e8 - 5e7 * (atom - 1.5) + 6e7 * rng.standard_normal(n)
    a = pos - 1e5 + 2e7 * rng.standard_normal(n)
    b = pos + 1e5 + 4e7 * rng.standard_normal(n)
    small = 0.02 + 0.015 * rng.standard_normal(n)
    cnt = np.round(30 + 2e4 * rng.standard_normal(n))
    return np.column_stack([pos, small, atom, cnt, a, b])


def test_the_back_map_inverts_the_rows_map_to_each_columns_resolution():
    """z = W(x − m₀) mapped back by :func:`_back_map` gives x − m₀ to float64's resolution of
    each column's own spread; through the frame's W⁻¹ (``Winv``, its own eigen-products) the
    atom column is off by ~1e-8 — more than a parked component's sd there (issue 27, mhtdata)."""
    X = _mht_like(4000, 0)
    m0 = X.mean(axis=0)
    _, W, Winv = pe._whitening(m0, np.cov(X.T))
    Z = (X - m0) @ W.T
    back = pe._back_map(W, Winv)(Z.T).T
    sd = X.std(axis=0)
    err_back = np.max(np.abs(back - (X - m0)) / sd)
    err_winv = np.max(np.abs(Z @ Winv.T - (X - m0)) / sd)
    assert err_back < 1e-12
    assert err_winv > 1e3 * err_back  # the old map: the test would pass without the fix
    # the atom column itself, where a parked component's sd is ~1e-9
    assert np.max(np.abs(back[:, 2] - (X[:, 2] - m0[2]))) < 1e-13


def test_a_parked_mean_lies_within_its_own_sd_at_eps_1e12():
    """At ε = 1e12 (a wide plan) both components park on the atoms 1.0 / 2.0 with sds ~3e-9;
    their means in that column must be the atoms to well within that sd. Through ``Winv`` they
    were 0.02–0.09 sd off on this table (17 sd on mhtdata: 32 % of its rows lost ~156 nat)."""
    X = _mht_like(4000, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = pg.PrivateGaussianMixture(2, epsilon=1e12, delta=1e-6, random_state=0).fit(X)
    for j in range(2):
        sd = math.sqrt(est.covariances_[j][2, 2])
        assert sd < 1e-7  # parked on an atom
        atom = round(float(est.means_[j, 2]))
        assert abs(est.means_[j, 2] - atom) < 1e-3 * sd


def test_the_clipped_count_reads_a_wide_fits_factors():
    """The final pass counts the rows outside the returned model's balls: a component carried by
    its factor, parked to sd 1e-10 along an axis, leaves out rows 0.1 off that axis (1e9 of its
    sds) — 1 in 100 here. Read at ``EIG_FLOOR`` (sd 0.03) they were inside, the released count
    0 and the background's weight 0: movies at ε = 1e12 scored 2 rows at −1.8e18 each."""
    from privgauss.mixture.em_final import final_pick

    rng = np.random.default_rng(0)
    Z = rng.standard_normal((3000, 3))
    Z[:, 2] = 0.0  # the atom
    off = rng.random(3000) < 0.01
    Z[off, 2] = 0.1  # 3.2 sds at EIG_FLOOR: inside the ball of radius 5
    L = np.diag([1.0, 1.0, 1e-10])
    cand = (np.ones(1), np.zeros((1, 3)), (L @ L.T)[None])
    _, outside, _, _ = final_pick(Z, [cand], radius=5.0, bound=8.0, rho=0.0, planned=1,
                                  release=None, factors=[L[None]])
    far = np.sum(np.einsum("ij,ij->i", Z, Z) > 25.0)
    assert outside == np.count_nonzero(off | (np.einsum("ij,ij->i", Z, Z) > 25.0))
    assert outside >= np.count_nonzero(off) > far  # the off-atom rows, not only the tails
    # without the factor (the covariance read at EIG_FLOOR) only the far rows are out
    _, outside0, _, _ = final_pick(Z, [cand], radius=5.0, bound=8.0, rho=0.0, planned=1,
                                   release=None)
    assert outside0 == far


def test_the_back_map_of_a_singular_frame_falls_back_to_winv():
    """A frame whose W is singular in float64 (released values: no exception may follow the
    spending) maps back through ``Winv`` as before."""
    W = np.array([[1.0, 0.0], [0.0, 0.0]])
    Winv = np.array([[1.0, 0.0], [0.0, 2.0]])
    Zt = np.array([[1.0], [3.0]])
    np.testing.assert_array_equal(pe._back_map(W, Winv)(Zt), Winv @ Zt)


def test_a_revived_components_factor_survives_a_thin_covariance() -> None:
    """A parked run's revived component (restart or split) needs its covariance's lower
    factor; a rotated covariance with a 1e-18 eigenvalue is indefinite in float64 and its
    Cholesky raised after spending (a generated table of flags and Likert answers at
    ε = 1e4). The factor then comes from the eigenvalues floored at d·ε_mach of the largest:
    lower-triangular, positive diagonal, L Lᵀ equal to the matrix to that floor; a matrix
    Cholesky can factor gets its Cholesky factor exactly."""
    rng = np.random.default_rng(0)
    Q, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    thin = (Q * np.array([1e-18, 0.5, 1.0, 2.0])) @ Q.T
    thin = (thin + thin.T) / 2
    fine = np.eye(4) + 0.3
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.cholesky(thin)
    L = pe._lower_factors(np.array([fine, thin]))
    assert np.allclose(np.triu(L, 1), 0.0) and np.all(np.diagonal(L, axis1=1, axis2=2) > 0)
    np.testing.assert_array_equal(L[0], np.linalg.cholesky(fine))  # not a fallback's
    np.testing.assert_allclose(L[1] @ L[1].T, thin, atol=1e-14)
    np.testing.assert_array_equal(pe._lower_factors(np.array([fine])), np.linalg.cholesky(
        np.array([fine])))
