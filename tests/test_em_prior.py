"""The mixture's prior (``mean_bound=``, ``center=``, ``cov_bounds=``): a user who knows the
range of the components skips private EM's bound-free localisation — CoinPress inside the prior
localises instead (zCDP, so a rho budget needs no public rows) and far fewer rows suffice. The
prior is validated before anything is spent, every release is projected into it, and private
EM's start requirement scales with the budget."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

import privgauss as pg
from privgauss.mixture import private_em as pe
from privgauss.privacy import ZCDP, Accountant, ApproxDP

M = pg.PrivateGaussianMixture
PRIOR = dict(mean_bound=20.0, cov_bounds=(0.1, 10.0))


def _fit(est: M, X: np.ndarray) -> M:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X)


def test_a_prior_lets_em_fit_a_rho_budget_without_public_rows(two_clusters):
    X = two_clusters()
    m = _fit(M(2, rho=0.5, method="em", random_state=0, **PRIOR), X)
    plan = m.fit_info_["em_plan"]
    assert plan.localisation is None and plan.rho_prior_localisation == pytest.approx(0.05)
    assert m.ledger_[0].step.startswith("em localisation in the prior")
    assert m.privacy_spent_.rho == pytest.approx(0.5, rel=1e-9)
    order = np.argsort(m.means_[:, 0])
    assert np.allclose(m.means_[order], [[0, 0], [6, 6]], atol=0.25), m.means_
    assert np.allclose(m.weights_[order], [0.6, 0.4], atol=0.05), m.weights_
    for c in m.covariances_:
        assert np.allclose(c, np.eye(2), atol=0.3), c
    # auto: no paper method takes a rho budget without public rows; the prior makes em possible
    a = _fit(M(2, rho=0.5, random_state=0, **PRIOR), X)
    assert a.method_ == "em" and "prior" in a.method_reason_


def test_the_prior_route_under_epsilon_delta_spends_exactly_the_budget(two_clusters):
    X = two_clusters(2000)
    m = _fit(M(2, epsilon=1.0, delta=1e-6, method="em", random_state=1, center=[3.0, 3.0],
               **PRIOR), X)
    assert m.privacy_spent_.epsilon == pytest.approx(1.0, rel=1e-6)
    assert m.privacy_spent_.delta == pytest.approx(1e-6, rel=1e-9)
    # no stability histograms: the whole budget is zCDP, 10 % of it on the localisation
    plan = m.fit_info_["em_plan"]
    assert plan.localisation_histograms is None
    assert plan.rho_prior_localisation == pytest.approx(0.1 * sum(
        b.rho for _, b in plan.parts()))


def test_releases_are_projected_into_the_prior(two_clusters):
    # the prior is wrong on purpose: the clusters' means lie 0 and 8.5 from the centre and
    # their variances are 1; every released mean must land in the ball and every covariance's
    # eigenvalues in the bounds (post-processing)
    X = two_clusters()
    center, R, (lo, hi) = np.array([1.0, 1.0]), 2.0, (2.0, 3.0)
    m = _fit(M(2, rho=0.5, method="em", random_state=0, center=center, mean_bound=R,
               cov_bounds=(lo, hi)), X)
    assert np.all(np.linalg.norm(m.means_ - center, axis=1) <= R)
    for c in m.covariances_:
        w = np.linalg.eigvalsh(c)
        assert lo - 1e-9 <= w[0] and w[-1] <= hi + 1e-9, w


@pytest.mark.parametrize(("kw", "error", "match"), [
    (dict(mean_bound=5.0), ValueError, "mean_bound= needs cov_bounds="),
    (dict(cov_bounds=(1.0, 2.0)), ValueError, "cov_bounds= needs mean_bound="),
    (dict(center=[0.0, 0.0]), ValueError, "center= is the centre of the mean_bound= ball"),
    (dict(mean_bound=5.0, cov_bounds=(2.0, 1.0)), ValueError, "cov_bounds must be"),
    (dict(mean_bound=5.0, cov_bounds=(0.0, 1.0)), ValueError, "cov_bounds must be"),
    (dict(mean_bound=5.0, cov_bounds=(1.0, math.inf)), ValueError, "cov_bounds must be"),
    (dict(mean_bound=5.0, cov_bounds=(1.0, 2.0, 3.0)), ValueError, "cov_bounds must be"),
    (dict(mean_bound=math.inf, cov_bounds=(1.0, 2.0)), ValueError, "mean_bound"),
    (dict(mean_bound=-1.0, cov_bounds=(1.0, 2.0)), InvalidParameterError, "mean_bound"),
    (dict(mean_bound=5.0, cov_bounds=(1.0, 2.0), center=[0.0, 0.0, 0.0]),
     pg.InvalidDataError, "center must be a finite vector of length 2"),
    (dict(mean_bound=5.0, cov_bounds=(1.0, 2.0), center=[np.nan, 0.0]),
     pg.InvalidDataError, "center must be a finite vector of length 2"),
])
def test_the_prior_is_validated_before_anything_is_spent(kw, error, match, two_clusters):
    acct = Accountant(ZCDP(1.0))
    with pytest.raises(error, match=match):
        M(2, rho=0.5, method="em", accountant=acct, **kw).fit(two_clusters(500))
    assert acct.spent is None and not acct.ledger


def test_a_rho_budget_without_public_rows_or_prior_says_what_to_give(two_clusters):
    acct = Accountant(ZCDP(1.0))
    with pytest.raises(pg.InvalidDataError, match="mean_bound= and cov_bounds="):
        M(2, rho=0.5, method="em", accountant=acct).fit(two_clusters(500))
    with pytest.raises(pg.PrivacyBudgetError, match="mean_bound= and cov_bounds="):
        M(2, rho=0.5, accountant=acct).fit(two_clusters(500))  # auto
    assert acct.spent is None


def test_em_start_requirement_scales_with_the_budget():
    # at everyday budgets no lower than the former flat 100 rows per component
    for budget in (ZCDP(0.5), ApproxDP(1.0, 1e-6)):
        for d in (1, 3, 10):
            req = pe.em_requirements(10**6, d, 2, budget, prior=True)
            assert req.terms["rows per component (start)"] >= 200.0
    # a large finite budget needs only a handful of rows per component (d + 1 at least)
    huge = pe.em_requirements(20, 5, 2, ZCDP(1e6), prior=True)
    assert huge.ok and huge.terms["rows per component (start)"] == pytest.approx(
        2 * max(6.0, 40 * 5 * 1e6**-0.25))
    assert pe.em_requirements(20, 1, 2, ZCDP(1e6), prior=True).terms[
        "rows per component (start)"] == pytest.approx(2 * 40 * 3 * 1e6**-0.25)
    assert pe.em_requirements(20, 3, 2, ZCDP(1e6), prior=False).n_needed == math.inf
    assert not pe.em_requirements(20, 3, 2, ZCDP(10.0), prior=True).ok


def test_auto_names_private_em_when_nothing_can_work_yet(two_clusters):
    acct = Accountant(ZCDP(1.0))
    with pytest.raises(pg.InvalidDataError, match="method='em' needs about n >="):
        M(2, rho=0.5, accountant=acct, **PRIOR).fit(two_clusters(100))
    with pytest.raises(pg.InvalidDataError, match="method='em' needs about n >="):
        M(2, epsilon=1.0, delta=1e-6).fit(two_clusters(300))
    assert acct.spent is None


def test_a_tiny_table_fits_at_a_large_budget(two_clusters):
    # what sklearn's estimator checks do: 20 rows; a huge-but-finite budget approaches EM
    X = two_clusters(20, seed=3)
    m = _fit(M(2, rho=1e6, random_state=0, **PRIOR), X)
    assert m.method_ == "em"
    order = np.argsort(m.means_[:, 0])
    assert np.allclose(m.means_[order], [[0, 0], [6, 6]], atol=1.0), m.means_
