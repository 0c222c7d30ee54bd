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
