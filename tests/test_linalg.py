import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import sqrtm

from privgauss.exceptions import InvalidDataError
from privgauss.linalg import (
    cholesky_pd,
    clip_rows,
    inv_sqrtm_psd,
    mahalanobis_norms,
    project_psd,
    sqrtm_psd,
    sym,
    symmetric_from_upper,
    upper_indices,
    upper_values,
)


def _random_pd(d, rng, kappa=10.0):
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return sym((Q * np.logspace(0, np.log10(kappa), d)) @ Q.T)


def test_sym():
    A = np.array([[1.0, 2.0], [4.0, 3.0]])
    np.testing.assert_array_equal(sym(A), [[1.0, 3.0], [3.0, 3.0]])
    S = np.stack([A, A.T])
    np.testing.assert_array_equal(sym(S)[0], sym(A))


@pytest.mark.parametrize("d", [1, 2, 5, 20])
def test_sqrtm_psd_squares_back_and_matches_scipy(d):
    rng = np.random.default_rng(d)
    A = _random_pd(d, rng, kappa=1e4)
    R = sqrtm_psd(A)
    np.testing.assert_allclose(R, R.T, atol=0)
    np.testing.assert_allclose(R @ R, A, rtol=0, atol=1e-10 * np.abs(A).max())
    np.testing.assert_allclose(R, np.real(sqrtm(A)), atol=1e-8)
    assert np.linalg.eigvalsh(R).min() > 0


def test_sqrtm_psd_clamps_negative_eigenvalues():
    A = np.diag([4.0, -1.0, 0.0])
    np.testing.assert_allclose(sqrtm_psd(A), np.diag([2.0, 0.0, 0.0]))


@pytest.mark.parametrize("d", [1, 3, 10])
def test_inv_sqrtm_psd(d):
    rng = np.random.default_rng(10 + d)
    A = _random_pd(d, rng, kappa=100.0)
    S = inv_sqrtm_psd(A)
    np.testing.assert_allclose(S @ A @ S, np.eye(d), atol=1e-10)
    np.testing.assert_allclose(S, np.linalg.inv(sqrtm_psd(A)), atol=1e-10)


def test_inv_sqrtm_psd_rejects_singular_and_floor():
    with pytest.raises(InvalidDataError, match="singular or not positive definite"):
        inv_sqrtm_psd(np.diag([1.0, 0.0]))
    with pytest.raises(InvalidDataError):
        inv_sqrtm_psd(np.diag([1.0, -1.0]))
    with pytest.raises(InvalidDataError):
        inv_sqrtm_psd(np.diag([1.0, 1e-17]))  # below d * eps * max
    with pytest.raises(InvalidDataError):
        inv_sqrtm_psd(np.diag([1.0, 0.5]), floor=0.5)
    inv_sqrtm_psd(np.diag([1.0, 0.5]), floor=0.49)


def test_matrix_errors_do_not_leak_entries():
    A = np.array([[123456.789, 0.0], [0.0, -987.654]])
    for f in (inv_sqrtm_psd, cholesky_pd):
        with pytest.raises(InvalidDataError) as e:
            f(A)
        assert "123456" not in str(e.value) and "987" not in str(e.value)
    with pytest.raises(InvalidDataError, match="NaN"):
        sqrtm_psd(np.array([[np.nan, 0.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="square"):
        sqrtm_psd(np.ones((2, 3)))


def test_project_psd():
    rng = np.random.default_rng(3)
    B = rng.standard_normal((6, 6))
    P = project_psd(B)
    np.testing.assert_array_equal(P, P.T)
    assert np.linalg.eigvalsh(P).min() >= -1e-12
    # Eigenvalues of the projection are the clamped eigenvalues of sym(B).
    np.testing.assert_allclose(
        np.sort(np.linalg.eigvalsh(P)),
        np.sort(np.maximum(np.linalg.eigvalsh(sym(B)), 0)),
        atol=1e-12,
    )
    P2 = project_psd(B, min_eig=0.5)
    assert np.linalg.eigvalsh(P2).min() >= 0.5 - 1e-12
    A = _random_pd(4, rng)
    np.testing.assert_allclose(project_psd(A), A, atol=1e-12)  # already PSD: unchanged


def test_mahalanobis_norms_vs_reference():
    rng = np.random.default_rng(4)
    d = 5
    cov = _random_pd(d, rng, kappa=50.0)
    mean = rng.standard_normal(d)
    X = rng.standard_normal((300, d))
    ref = np.sqrt(np.einsum("ij,jk,ik->i", X - mean, np.linalg.inv(cov), X - mean))
    np.testing.assert_allclose(mahalanobis_norms(X, mean, cov), ref, rtol=1e-10)
    ref2 = np.linalg.norm((X - mean) @ inv_sqrtm_psd(cov), axis=1)
    np.testing.assert_allclose(mahalanobis_norms(X, mean, cov), ref2, rtol=1e-9)


def test_mahalanobis_norms_chunked_path():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((3000, 700))  # more rows than one block
    cov = np.diag(np.linspace(1.0, 4.0, 700))
    ref = np.sqrt(((X**2) / np.diag(cov)).sum(axis=1))
    np.testing.assert_allclose(mahalanobis_norms(X, np.zeros(700), cov), ref, rtol=1e-12)


def test_mahalanobis_requires_pd():
    with pytest.raises(InvalidDataError, match="not positive definite"):
        mahalanobis_norms(np.ones((2, 2)), np.zeros(2), np.diag([1.0, 0.0]))


@pytest.mark.parametrize("d", [1, 2, 7])
def test_upper_packing_roundtrip(d):
    rng = np.random.default_rng(d)
    A = sym(rng.standard_normal((d, d)))
    v = upper_values(A)
    assert v.shape == (d * (d + 1) // 2,)
    np.testing.assert_array_equal(symmetric_from_upper(v, d), A)
    iu = upper_indices(d)
    np.testing.assert_array_equal(v, A[iu])


def test_symmetric_from_upper_order_and_length():
    np.testing.assert_array_equal(
        symmetric_from_upper([1, 2, 3, 4, 5, 6], 3), [[1, 2, 3], [2, 4, 5], [3, 5, 6]]
    )
    with pytest.raises(ValueError, match="d\\(d\\+1\\)/2 = 6"):
        symmetric_from_upper(np.ones(5), 3)


# ----------------------------------------------------------------------------- clip_rows


def _norms(Y, c):
    return np.linalg.norm(Y - c, axis=1)


def test_clip_rows_basic():
    X = np.array([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0], [-6.0, 8.0]])
    before = X.copy()
    Y, k = clip_rows(X, np.zeros(2), 1.0)
    np.testing.assert_array_equal(X, before)
    assert not np.shares_memory(X, Y)
    assert k == 2
    np.testing.assert_allclose(Y[0], [0.6, 0.8], rtol=1e-12)
    np.testing.assert_allclose(Y[3], [-0.6, 0.8], rtol=1e-12)
    np.testing.assert_array_equal(Y[1:3], X[1:3])  # inside: bit-for-bit unchanged
    assert (_norms(Y, 0) <= 1.0).all()


def test_clip_rows_with_center():
    rng = np.random.default_rng(6)
    c = rng.standard_normal(4) * 10
    X = c + rng.standard_normal((1000, 4)) * 3
    r = 2.5
    Y, k = clip_rows(X, c, r)
    n = _norms(X, c)
    assert k == int((n > r).sum())
    assert (_norms(Y, c) <= r).all()
    out = n > r
    # Clipped rows keep their direction and land on the sphere (up to rounding).
    np.testing.assert_allclose(_norms(Y[out], c), r, rtol=1e-12)
    u_before = (X[out] - c) / n[out, None]
    u_after = (Y[out] - c) / _norms(Y[out], c)[:, None]
    np.testing.assert_allclose(u_after, u_before, atol=1e-12)


def test_clip_rows_boundary_rows_exact():
    # Rows whose computed norm is exactly the radius are left alone.
    X = np.array([[3.0, 4.0], [5.0, 0.0], [0.0, -5.0]])
    Y, k = clip_rows(X, np.zeros(2), 5.0)
    assert k == 0
    np.testing.assert_array_equal(Y, X)


def test_clip_rows_adversarial_float_safety():
    rng = np.random.default_rng(7)
    d = 50
    c = rng.standard_normal(d)
    radius = 1.0 / 3.0
    dirs = rng.standard_normal((2000, d))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    # Rows a few ulps outside, on, and far outside the sphere.
    scales = radius * (1.0 + rng.integers(-3, 4, size=2000) * 2.0**-52)
    X = np.concatenate([c + dirs * scales[:, None], c + dirs * 1e6, c + dirs * 1e-300])
    Y, _ = clip_rows(X, c, radius)
    assert (_norms(Y, c) <= radius).all()
    assert np.isfinite(Y).all()
    # A far-away centre makes rounding of center + radius * u large relative to the radius,
    # which needs the shrink-and-recheck loop.
    c2 = c * 1e3
    Y2, k2 = clip_rows(c2 + rng.standard_normal((5000, d)), c2, radius)
    assert k2 == 5000
    norms2 = _norms(Y2, c2)
    assert (norms2 <= radius).all()
    assert norms2.min() > radius * (1 - 1e-9)  # still essentially on the sphere


@pytest.mark.parametrize("mag", [1e150, 1e200, 1e300, 1.7e308])
def test_clip_rows_huge_values(mag):
    X = np.array([[mag, -mag, mag], [-mag, -mag, -mag], [1.0, 2.0, 3.0], [mag, 0.0, 0.0]])
    c = np.array([0.5, 1.0, 0.0])
    Y, k = clip_rows(X, c, 10.0)
    assert np.isfinite(Y).all()
    assert (_norms(Y, c) <= 10.0).all()
    assert k == 3
    np.testing.assert_array_equal(Y[2], X[2])
    # Directions of the huge rows are preserved (also through the overflow path).
    for i, v in ((0, [1.0, -1.0, 1.0]), (1, [-1.0, -1.0, -1.0]), (3, [1.0, 0.0, 0.0])):
        u = (Y[i] - c) / np.linalg.norm(Y[i] - c)
        np.testing.assert_allclose(u, np.array(v) / np.linalg.norm(v), atol=1e-9)
    np.testing.assert_allclose(_norms(Y[[0, 1, 3]], c), 10.0, rtol=1e-12)
    # A huge centre: even the small row is far outside.
    c2 = np.array([-mag / 2, 1.0, 0.0])
    Y2, k2 = clip_rows(X, c2, 10.0)
    assert k2 == 4 and np.isfinite(Y2).all()
    assert (_norms(Y2, c2) <= 10.0).all()


def test_clip_rows_huge_center_tiny_radius():
    c = np.full(3, 1e150)
    X = c + np.array([[1e140, 0, 0], [0, 0, 0], [0, -1e145, 1e141]])
    Y, _ = clip_rows(X, c, 1e-3)
    assert (_norms(Y, c) <= 1e-3).all()


def test_clip_rows_radius_zero():
    X = np.array([[1.0, 2.0], [5.0, 5.0], [5.0, 5.0]])
    c = np.array([5.0, 5.0])
    Y, k = clip_rows(X, c, 0.0)
    np.testing.assert_array_equal(Y, np.tile(c, (3, 1)))
    assert k == 1


@pytest.mark.parametrize("radius", [-1.0, np.nan, np.inf, 1e151, True, "1"])
def test_clip_rows_bad_radius(radius):
    with pytest.raises(ValueError, match="radius"):
        clip_rows(np.ones((2, 2)), np.zeros(2), radius)


def test_clip_rows_maps_nonfinite_rows_to_the_centre_and_rejects_bad_shapes():
    # a non-finite row has no direction: mapped to the centre per record, never an error on a
    # (private) value (rule 10); the other rows are clipped as usual
    c = np.array([0.5, -0.5])
    for bad in (np.nan, np.inf, -np.inf):
        X = np.ones((3, 2))
        X[1, 0] = bad
        Y, k = clip_rows(X, c, 1.0)
        np.testing.assert_array_equal(Y[1], c)
        assert np.all(np.linalg.norm(Y - c, axis=1) <= 1.0) and k == 3
    with pytest.raises(ValueError, match="center"):
        clip_rows(np.ones((3, 2)), np.zeros(3), 1.0)
    with pytest.raises(ValueError, match="2-D"):
        clip_rows(np.ones(3), np.zeros(3), 1.0)


def test_clip_rows_int_input_and_large_chunked():
    Y, k = clip_rows(np.array([[3, 4]]), [0, 0], 1)
    assert Y.dtype == np.float64 and k == 1
    rng = np.random.default_rng(8)
    X = rng.standard_normal((200_000, 20)).astype(np.float32)
    Y, k = clip_rows(X, np.zeros(20), 4.5)
    assert Y.dtype == np.float64
    assert (_norms(Y, 0) <= 4.5).all()
    assert k == int((np.linalg.norm(X.astype(np.float64), axis=1) > 4.5).sum())


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(
        st.lists(
            st.floats(-1e150, 1e150, allow_nan=False, allow_infinity=False), min_size=3, max_size=3
        ),
        min_size=1,
        max_size=6,
    ),
    center=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=3, max_size=3),
    radius=st.floats(0.0, 1e12, allow_nan=False),
)
def test_clip_rows_property(rows, center, radius):
    X = np.array(rows)
    c = np.array(center)
    before = X.copy()
    Y, k = clip_rows(X, c, radius)
    np.testing.assert_array_equal(X, before)
    assert np.isfinite(Y).all()
    assert (_norms(Y, c) <= radius).all()
    inside = _norms(X, c) <= radius
    np.testing.assert_array_equal(Y[inside], X[inside])
    assert k == int((~inside).sum())
