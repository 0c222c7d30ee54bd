"""Densities and samples at any scale (issue #26): ``score_samples`` and ``sample`` standardise by
the released scales and factor the correlation matrix, so a table whose columns are in units
from 1e-3 to 1e7 (covariance condition ≥ 1e12) is scored exactly."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from mpmath import mp

import privgauss as pg

SCALES = np.array([1e-3, 1.0, 1e3, 1e7])


def _table(n: int = 4000, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    d = len(SCALES)
    A = rng.normal(size=(d, d))
    C = A @ A.T + 0.5 * np.eye(d)
    return (rng.multivariate_normal(np.zeros(d), C, size=n) + 5.0) * SCALES


def _exact_logpdf(X: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """The log density in 50-digit arithmetic (mpmath): the reference."""
    mp.dps = 50
    d = len(mean)
    M = mp.matrix(cov.tolist())
    L = mp.cholesky(M)
    logdet = 2 * sum(mp.log(L[i, i]) for i in range(d))
    out = []
    for x in X:
        dx = mp.matrix((x - mean).tolist())
        q = sum(dx[i] * v for i, v in enumerate(mp.lu_solve(M, dx)))
        out.append(float(-(d * mp.log(2 * mp.pi) + logdet + q) / 2))
    return np.array(out)


@pytest.fixture(scope="module")
def fitted() -> pg.PrivateGaussian:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pg.PrivateGaussian(epsilon=1e4, delta=1e-6, random_state=0).fit(_table())


def test_score_samples_is_exact_on_a_badly_scaled_table(fitted):
    assert np.linalg.cond(fitted.covariance_) >= 1e12
    X = _table(100, seed=1)
    exact = _exact_logpdf(X, fitted.mean_, fitted.covariance_)
    ours = fitted.score_samples(X)
    assert np.max(np.abs(ours - exact)) < 1e-8  # the old trace-scaled ridge: off by > 0.3
    # the same model as a one-component mixture scores the same
    mix = pg.PrivateGaussianMixture(1, epsilon=1.0, delta=1e-6)
    mix.weights_, mix.means_ = np.ones(1), fitted.mean_[None]
    mix.covariances_, mix.n_features_in_ = fitted.covariance_[None], 4
    assert np.max(np.abs(mix.score_samples(X) - exact)) < 1e-8


def test_samples_follow_the_model_at_every_scale(fitted):
    Y = fitted.sample(200_000, random_state=3)
    # each column's spread and every correlation are those of the model, whatever its units
    s = np.sqrt(np.diag(fitted.covariance_))
    np.testing.assert_allclose(Y.std(axis=0) / s, 1.0, atol=0.01)
    R = fitted.covariance_ / np.outer(s, s)
    np.testing.assert_allclose(np.corrcoef(Y.T), R, atol=0.01)
    np.testing.assert_allclose((Y.mean(axis=0) - fitted.mean_) / s, 0.0, atol=0.01)


def test_a_zero_variance_column_scores_finite():
    g = pg.PrivateGaussian(epsilon=1.0, delta=1e-6)
    g.mean_, g.covariance_, g.n_features_in_ = np.zeros(2), np.diag([1.0, 0.0]), 2
    assert np.isfinite(g.score_samples(np.zeros((3, 2)))).all()
    assert np.isfinite(g.sample(5, random_state=0)).all()
