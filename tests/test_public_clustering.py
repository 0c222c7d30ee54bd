"""Tests of privgauss.mixture.public_clustering (Bie–Kamath–Singhal Alg. 3, 8, 9: public only).

Superclustering gives a pure ball holding its centre's component; the public split rejects a
single Gaussian and splits separated ones; the easy clustering recovers clean clusters, routes
each private row by public balls only (its label is a function of that row and the public data),
and never lets private rows change the public outcome; adversarial public rows do not crash it.
"""

from __future__ import annotations

import numpy as np
import pytest

from privgauss.datasets import make_mixture
from privgauss.mixture.public_clustering import (
    MAX_RADII,
    easy_clustering,
    public_split,
    radius_grid,
    split_constants,
    supercluster,
)


def _blobs(seed: int, d: int = 10, per: int = 30, gap: float = 60.0) -> tuple[np.ndarray, list]:
    rng = np.random.default_rng(seed)
    centres = [np.zeros(d), np.r_[gap, np.zeros(d - 1)], np.r_[0.0, 3 * gap, np.zeros(d - 2)]]
    parts = [c + rng.standard_normal((per, d)) for c in centres]
    return np.vstack(parts), parts


@pytest.mark.parametrize("mult", [16.0, 4.0])
def test_supercluster_ball_is_pure_and_holds_its_centres_component(mult: float) -> None:
    Y, parts = _blobs(0)
    c, R = supercluster(Y, 3, mult)
    inside = [np.linalg.norm(p - c, axis=1) <= R for p in parts]
    assert all(flags.all() or not flags.any() for flags in inside)  # pure
    own = int(np.argmin([np.linalg.norm(p - c, axis=1).min() for p in parts]))
    assert inside[own].all()


def test_supercluster_degenerate_inputs() -> None:
    c, R = supercluster(np.ones((1, 3)), 2)
    assert R == 0.0 and np.array_equal(c, np.ones(3))
    c, R = supercluster(np.ones((5, 3)), 2)  # duplicates: nearest-neighbour distance 0
    assert R == 0.0


def test_radius_grid_is_bounded_and_halving() -> None:
    g = radius_grid(8.0, 1.0)
    np.testing.assert_allclose(g, [8, 4, 2, 1])
    assert radius_grid(8.0, 0.0).size == 1
    assert radius_grid(8.0, 1e-300).size == MAX_RADII
    assert radius_grid(0.0, 1.0).size == 0


def test_public_split_rejects_one_gaussian_and_splits_two() -> None:
    rng = np.random.default_rng(1)
    const = split_constants("practical")
    one = rng.standard_normal((200, 3))
    assert public_split(one, 40, radius_grid(40.0, 0.1, const.grid_ratio), const) is None
    two = np.vstack([one, 60.0 + rng.standard_normal((200, 3))])
    found = public_split(two, 40, radius_grid(200.0, 0.1, const.grid_ratio), const)
    assert found is not None
    j, r = found
    inside = np.linalg.norm(two - two[j], axis=1) <= 2 * r
    assert inside.sum() == 200 and (inside[:200].all() or inside[200:].all())  # one blob


def test_easy_clustering_recovers_clean_clusters_and_routes_by_public_data() -> None:
    mix = make_mixture(4_500, 3, 10, min_weight=0.2, separation=6.0, random_state=3)
    P, X = mix.X[:500], mix.X[500:]
    lp, lx = mix.labels[:500], mix.labels[500:]
    pub, labels = easy_clustering(P, X, 3, 0.2)
    assert pub.n_clusters == 3 and (labels >= 0).all() and (pub.labels >= 0).all()
    for j in range(3):  # clean: each cluster holds exactly one component (public and private)
        assert len(set(lx[labels == j])) == 1
        assert set(lp[pub.labels == j]) == set(lx[labels == j])
    np.testing.assert_allclose(pub.means[0], P[pub.labels == 0].mean(axis=0))
    # private rows never change the public outcome; a row's label depends on that row only
    X2 = X.copy()
    X2[0] = X[1]
    X2[5] = 1e6
    pub2, labels2 = easy_clustering(P, X2, 3, 0.2)
    np.testing.assert_array_equal(pub2.labels, pub.labels)
    assert len(pub2.splits) == len(pub.splits)
    changed = np.flatnonzero(labels2 != labels)
    assert set(changed) <= {0, 5} and labels2[0] == labels[1]


@pytest.mark.parametrize(
    "make_public",
    [
        lambda P: np.repeat(P[:1], 500, axis=0),  # all duplicates
        lambda P: P + 1e6,  # far away from the private rows
        lambda P: P[:3],  # far fewer than needed
        lambda P: np.vstack([P[:250], np.repeat(P[:1], 250, axis=0)]),
    ],
)
def test_easy_clustering_survives_adversarial_public_rows(make_public) -> None:
    mix = make_mixture(2_500, 3, 5, separation=6.0, random_state=4)
    pub, labels = easy_clustering(make_public(mix.X[:500]), mix.X[500:], 3, 0.2)
    assert labels.shape == (2_000,) and pub.n_clusters <= 3
    assert labels.max() < max(pub.n_clusters, 1)
