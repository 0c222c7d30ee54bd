"""The estimators' shared protocol (issue 29): the trusted internal entry, the cached factors of
the fitted covariances, and the public API's numpydoc sections."""

from __future__ import annotations

import numpy as np
import pytest

import privgauss as pg


def _ledger(est):
    return [(e.to_dict(), [p.to_dict() for p in e.parts]) for e in est.ledger_]


@pytest.mark.parametrize("make", [
    lambda: pg.PrivateGaussian(rho=0.5, mean=np.zeros(3), cov_bounds=(0.05, 3.0), random_state=4),
    lambda: pg.PrivateGaussianMixture(2, rho=0.5, mean_bound=10.0, cov_bounds=(0.05, 3.0),
                                      random_state=4),
])
def test_fit_trusted_is_fit_without_the_input_checks(make, gaussian_rows) -> None:
    Z = np.ascontiguousarray(gaussian_rows(4000, 3, seed=2))
    a, b = make().fit(Z), make()._fit_trusted(Z)
    assert _ledger(a) == _ledger(b) and a.method_ == b.method_
    for name in ("mean_", "covariance_", "weights_", "means_", "covariances_"):
        if hasattr(a, name):
            assert np.array_equal(getattr(a, name), getattr(b, name))
    assert b.n_features_in_ == 3 and not hasattr(b, "feature_names_in_")


def test_fit_trusted_refuses_what_the_library_did_not_compute() -> None:
    g = pg.PrivateGaussian(rho=0.5, mean=np.zeros(2), cov_bounds=(0.05, 3.0))
    for bad in ([[0.0, 1.0]] * 10, np.zeros((10, 2), dtype=np.float32),
                np.zeros((2, 10)).T, np.zeros((1, 2))):
        with pytest.raises(TypeError, match="fit()"):
            g._fit_trusted(bad)
    with pytest.raises(pg.PrivacyBudgetError):  # the budget is still checked
        pg.PrivateGaussian(rho=-1.0)._fit_trusted(np.zeros((10, 2)))
    assert not hasattr(g, "ledger_")
