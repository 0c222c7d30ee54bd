"""public-heavy's refusal of public clusters it cannot precondition names public-heavy and a
mixture fallback (edge sweep, issues 27/28): it said "method='public' cannot precondition the
covariance ... use method='auto' ... or method='histogram' ... mean_bound= and cov_bounds= for
method='coinpress'" — the Gaussian estimator's advice, which a mixture fit cannot take."""

from __future__ import annotations

import numpy as np
import pytest

import privgauss as pg


def _const_column_mixture(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lab = rng.integers(0, 2, size=n)
    X = rng.normal(size=(n, 3)) + np.where(lab[:, None] == 1, [40.0, 0.0, 0.0], 0.0)
    X[:, 2] = 7.0
    return X


@pytest.mark.parametrize("budget", [{"epsilon": 1e4, "delta": 1e-6}, {"rho": 0.5}])
def test_a_constant_public_column_is_refused_in_public_heavys_words(budget):
    X, P = _const_column_mixture(2000, 0), _const_column_mixture(100, 1)
    acct = pg.Accountant(pg.ZCDP(0.5) if "rho" in budget else pg.ApproxDP(1e4, 1e-6))
    est = pg.PrivateGaussianMixture(2, method="public-heavy", random_state=0, accountant=acct,
                                    **budget)
    with pytest.raises(pg.InvalidDataError) as info:
        est.fit(X, public_X=P)
    msg = str(info.value)
    assert "method='public-heavy' cannot precondition public cluster" in msg
    assert "constant in column(s) [2]" in msg and "method='em'" in msg
    assert "method='public'" not in msg and "histogram" not in msg and "coinpress" not in msg
    assert not acct.ledger  # refused before anything was spent
