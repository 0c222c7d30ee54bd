"""The start's k-means kernels (:mod:`privgauss.mixture.em_starts`): the fast squared distances
and nearest-centre labels agree with the plain broadcast formula and ``np.argmin``."""

import numpy as np
import pytest

from privgauss.mixture.em_starts import _nearest, _sq_dists


@pytest.mark.parametrize("p", [1, 2, 3, 7, 8, 9, 17, 128, 130])
def test_squared_distances_match_the_broadcast_formula(p: int) -> None:
    rng = np.random.default_rng(p)
    points = rng.standard_normal((257, p)) * rng.uniform(0.1, 10.0, p) + 3.0
    C = rng.standard_normal((4, p))
    want = ((points[:, None, :] - C[None]) ** 2).sum(-1).T
    got = _sq_dists(np.ascontiguousarray(points.T), C)
    assert got.shape == (4, 257)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0.0)


def test_nearest_is_argmin_with_the_first_index_among_ties() -> None:
    rng = np.random.default_rng(0)
    D = rng.integers(0, 4, size=(5, 400)).astype(float)  # many ties
    np.testing.assert_array_equal(_nearest(D), np.argmin(D, axis=0))
    D[2, 7] = np.nan  # numpy's own rule where a value is not a number
    np.testing.assert_array_equal(_nearest(D), np.argmin(D, axis=0))


def _blobs(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Three well-separated Gaussians in d = 3 over-clustered into 12 blobs by k-means:
    (blob counts, means, covariances, true weights, true means)."""
    from sklearn.cluster import KMeans

    rng = np.random.default_rng(seed)
    w = np.array([0.6, 0.3, 0.1])
    mu = np.array([[0.0, 0.0, 0.0], [6.0, 0.0, 0.0], [0.0, 6.0, 2.0]])
    lab = rng.choice(3, size=20_000, p=w)
    X = mu[lab] + rng.standard_normal((20_000, 3)) * np.array([1.0, 0.5, 1.5])
    blob = KMeans(12, n_init=1, random_state=seed).fit(X).labels_
    N = np.bincount(blob, minlength=12).astype(float)
    M = np.array([X[blob == j].mean(axis=0) for j in range(12)])
    S = np.array([np.cov(X[blob == j].T, bias=True) for j in range(12)])
    return N, M, S, w, mu


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_summary_gmm_recovers_the_mixture_from_its_blobs(seed: int) -> None:
    """EM on the over-clustered summary finds the three components (weights, means and the
    per-axis spreads), whatever the k-means++ seeding's luck."""
    from privgauss.mixture.em_starts import summary_gmm

    N, M, S, w, mu = _blobs(seed)
    pi, means, covs = summary_gmm(N, M, S, 3, np.random.default_rng(seed))
    order = [int(np.argmin(((means - m) ** 2).sum(axis=1))) for m in mu]
    assert sorted(order) == [0, 1, 2]
    np.testing.assert_allclose(pi[order], w, atol=0.02)
    np.testing.assert_allclose(means[order], mu, atol=0.1)
    for c in order:
        np.testing.assert_allclose(np.diag(covs[c]), [1.0, 0.25, 2.25], rtol=0.15)


def test_summary_gmm_picks_the_same_restart_under_rounding() -> None:
    """Releases that differ in the last bits (a dask fit's summation order) give the same
    start: a restart within the tolerance of the best does not take over."""
    from privgauss.mixture.em_starts import summary_gmm

    N, M, S, _, _ = _blobs(3)
    a = summary_gmm(N, M, S, 3, np.random.default_rng(7))
    b = summary_gmm(N * (1.0 + 1e-14), M + 1e-14, S, 3, np.random.default_rng(7))
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-9)


def test_summary_gmm_with_no_more_blobs_than_components() -> None:
    """K' ≤ k (too little room to over-cluster): the blobs themselves, padded, weights summing
    to 1."""
    from privgauss.mixture.em_starts import summary_gmm

    N, M, S = np.array([5.0, -1.0]), np.zeros((2, 2)), np.array([np.eye(2)] * 2)
    pi, means, covs = summary_gmm(N, M, S, 3, np.random.default_rng(0))
    assert pi.shape == (3,) and means.shape == (3, 2) and covs.shape == (3, 2, 2)
    assert abs(pi.sum() - 1.0) < 1e-12 and (pi > 0).all()
