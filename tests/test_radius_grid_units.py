"""The paper learners' public radius grid covers tables in large units (edge sweep, issues
27/28): with no prior, kssu, sample-aggregate, pegme and agnostic find the data's enclosing
ball on a public doubling grid (``DEFAULT_RADIUS_RANGE``); its top was 1e6, so two clusters in
units of 1e7 (money in cents, populations) failed after spending at every ε — a ⊥ whose message
blamed the separation. The grid is public (data independent): widening it changes no
sensitivity, only the AboveThreshold's ln T."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import privgauss as pg
from privgauss.mixture.good_radius import doubling_radii
from privgauss.mixture.sample_aggregate import DEFAULT_RADIUS_RANGE

UNIT = 1e7


def _two_clusters(n: int = 2000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two unit-variance clusters in d = 2 at separation ratio 7 (40 sd apart), weights 1/2,
    in units of 1e7; and the labels."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, size=n)
    X = rng.normal(size=(n, 2)) + np.where(labels[:, None] == 1, [40.0, 0.0], [0.0, 0.0])
    return X * UNIT, labels


def _cluster_means(X: np.ndarray, labels: np.ndarray) -> np.ndarray:
    return np.array([X[labels == j].mean(axis=0) for j in (0, 1)])


def test_the_default_grid_reaches_a_table_in_units_of_1e7():
    assert DEFAULT_RADIUS_RANGE[1] >= 100 * 40 * UNIT  # the table's spread, with room


# the component means' error at eps = 1e4, in standard deviations (measured in units of 1: kssu
# 0.002-0.006, sample-aggregate 0.003-0.006, agnostic 0.02-0.03 — its candidates are fitted
# on subsamples — over 3 seeds)
@pytest.mark.parametrize(("method", "tol"),
                         [("kssu", 0.02), ("sample-aggregate", 0.02), ("agnostic", 0.1)])
def test_a_mixture_in_large_units_is_fitted_at_a_large_budget(method, tol):
    X, labels = _two_clusters()
    est = pg.PrivateGaussianMixture(2, method=method, epsilon=1e4, delta=1e-6, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)  # was EstimationFailed (the enclosing ball / every candidate not found)
    got = est.means_[np.argsort(est.means_[:, 0])]
    np.testing.assert_allclose(got, _cluster_means(X, labels), rtol=0, atol=tol * UNIT)


def test_kssu_names_the_grid_when_the_enclosing_ball_is_not_found():
    X, _ = _two_clusters(n=1000)
    est = pg.PrivateGaussianMixture(2, method="kssu", epsilon=1e4, delta=1e-6, random_state=0,
                                    method_params={"radii": doubling_radii(1e-6, 1.0)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(pg.EstimationFailed, match=r"public radius grid \[1e-06, 1.05\]"):
            est.fit(X)


def test_the_chunk_learner_is_the_same_in_any_units():
    """sample-aggregate's chunk learner fits each chunk in its own standardised columns:
    scikit-learn's absolute reg_covar let a component collapse onto one row in units of 1e7
    (17 of 50 chunks here; the aggregation then failed in 9 of 12 fits at eps = 1e4)."""
    from privgauss.mixture.sample_aggregate import gmm_learner

    X, _ = _two_clusters(seed=3)
    rng = np.random.default_rng(0)
    for c in range(20):
        chunk = X[rng.choice(len(X), 40, replace=False)] / UNIT
        w1, m1 = gmm_learner(chunk, 2, c)
        w2, m2 = gmm_learner(chunk * UNIT, 2, c)
        np.testing.assert_allclose(w2, w1, rtol=0, atol=1e-6)
        np.testing.assert_allclose(m2 / UNIT, m1, rtol=0, atol=1e-6)
