"""Releases respect the prior the user gave, and a failure's message says what happened
(issue 17, items 5 and 6): post-processing of DP outputs and public quantities only."""

from __future__ import annotations

import numpy as np
import pytest

import privgauss as pg


def test_mean_and_covariance_are_released_inside_the_prior():
    # n = 20 rows at rho = 0.5: the noise dwarfs the signal (the mean once came out at norm
    # 16,144 with mean_bound=100); the release is projected into the prior the user stated
    X = np.random.default_rng(0).normal(size=(20, 3)) + 5.0
    center = np.array([1.0, 2.0, 3.0])
    for seed in range(5):
        g = pg.PrivateGaussian(rho=0.5, method="coinpress", mean_bound=100.0, center=center,
                               cov_bounds=(0.1, 10.0), random_state=seed).fit(X)
        assert np.linalg.norm(g.mean_ - center) <= 100.0
        eig = np.linalg.eigvalsh(g.covariance_)
        assert eig[0] >= 0.1 - 1e-9 and eig[-1] <= 10.0 + 1e-9
    # a prior the estimate already satisfies leaves it unchanged
    Y = np.random.default_rng(1).normal(size=(50_000, 3))
    kw = dict(rho=0.5, method="coinpress", mean_bound=1e3, cov_bounds=(1e-3, 1e3), random_state=3)
    g = pg.PrivateGaussian(**kw).fit(Y)
    assert np.linalg.norm(g.mean_) < 0.1 and abs(np.linalg.eigvalsh(g.covariance_)[0] - 1) < 0.1


def test_known_covariance_mean_is_projected_and_covariance_kept():
    X = np.random.default_rng(0).normal(size=(10, 2)) * 100
    g = pg.PrivateGaussian(rho=0.01, method="coinpress", covariance="identity", mean_bound=1.0,
                           random_state=0).fit(X)
    assert np.linalg.norm(g.mean_) <= 1.0
    np.testing.assert_array_equal(g.covariance_, np.eye(2))


def test_a_failure_says_the_step_the_n_it_needs_and_what_was_spent():
    X = np.random.default_rng(0).normal(size=(30, 3))
    with pytest.raises(pg.EstimationFailed) as err, pytest.warns(pg.warnings.BudgetSpentWarning):
        pg.PrivateGaussian(epsilon=1.0, delta=1e-6, method="histogram", random_state=0).fit(X)
    text = str(err.value)
    assert err.value.step and err.value.step in text
    assert f"n >= {err.value.needed_n:,}" in text
    assert "spent (" in text and "of (1, 1e-06)-DP" in text
