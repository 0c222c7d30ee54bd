"""The estimators are scikit-learn estimators: sklearn's own estimator checks, clone, pipelines,
cross-validation and grid search, with the budget semantics of the ecosystem (a clone shares
its accountant, so every fit a cross-validation runs is charged to the one total)."""

from __future__ import annotations

import numpy as np
import pytest
from _helpers import scale_free_rows
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import parametrize_with_checks

import privgauss as pg


def _gaussian(rho=0.5, **kw):
    return pg.PrivateGaussian(rho=rho, mean_bound=100.0, cov_bounds=(1e-3, 1e3), random_state=0,
                              **kw)


def _gaussian_for_checks():
    """The Gaussian as sklearn's checks run it: their tables have 10-100 rows, and at
    rho = 0.5 coinpress refuses (before spending) fits its plan cannot promise inside this
    prior (n >= 31 at d = 3, 110 at d = 10); the checks test the protocol, so, like the
    mixture's, they run at a large finite budget (n >= 12 rows at d = 10)."""
    return _gaussian(rho=1e6)


def _mixture(rho=1e6, **kw):
    """The mixture as sklearn's checks run it. Their tables have 10-100 rows; a private mixture
    at an everyday budget needs hundreds to thousands (``requirements``, and the estimator
    refuses below them), so the checks — which test the protocol, not accuracy — run at a large
    finite budget where private EM's requirement holds at their sizes (4-7 rows per component
    for d <= 5), localised inside a prior as a user who knows the data's range would give it."""
    return pg.PrivateGaussianMixture(2, rho=rho, mean_bound=100.0, cov_bounds=(1e-3, 1e3),
                                     random_state=0, **kw)


# No expected failures: every check sklearn runs on a density estimator passes on both. The
# mixture runs 4 EM steps (at rho = 1e6 its plan would run 60, 375 ledger entries on a 100-row
# table, twice the CPU): the checks test the protocol, which the steps' number does not change
@parametrize_with_checks([_gaussian_for_checks(), _mixture(method_params={"n_steps": 4})])
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


def test_get_params_clone_and_repr():
    g = _gaussian(constants="theory")
    assert g.get_params()["constants"] == "theory"
    c = clone(g)
    assert c is not g and c.get_params() == g.get_params()
    assert " ".join(repr(g).split()) == (
        "PrivateGaussian(constants='theory', cov_bounds=(0.001, 1000.0), mean_bound=100.0, "
        "random_state=0, rho=0.5)")
    m = pg.PrivateGaussianMixture(3, epsilon=1.0, delta=1e-6)
    assert clone(m).get_params() == m.get_params()
    assert get_tags(g).estimator_type == "density_estimator"
    assert get_tags(pg.PrivateGaussian(rho=1.0)).non_deterministic  # secure noise
    assert not get_tags(g).non_deterministic  # a seed makes fits reproducible


def test_bad_parameters_are_refused_at_fit_with_sklearn_errors(gaussian_rows):
    from sklearn.utils._param_validation import InvalidParameterError

    X = gaussian_rows(100)
    for bad in (dict(method="nope"), dict(gamma=1.5), dict(beta=0.0), dict(mean_bound=-1.0),
                dict(accountant="mine")):
        with pytest.raises(InvalidParameterError):
            pg.PrivateGaussian(rho=0.5, **bad).fit(X)
    with pytest.raises(InvalidParameterError):
        pg.PrivateGaussianMixture(0, epsilon=1.0, delta=1e-6).fit(X)
    # budgets keep the library's contract: PrivacyBudgetError (also a ValueError)
    with pytest.raises(pg.PrivacyBudgetError):
        pg.PrivateGaussian(rho=-1.0, mean_bound=1.0, cov_bounds=(1, 2)).fit(X)


def test_unfitted_estimators_raise_notfittederror(gaussian_rows):
    X = gaussian_rows(10)
    for est in (_gaussian(), pg.PrivateGaussianMixture(2, epsilon=1.0, delta=1e-6)):
        for call in ("score_samples", "score", "sample", "to_dict"):
            with pytest.raises(NotFittedError):
                getattr(est, call)(X) if call.startswith("score") else getattr(est, call)()
    with pytest.raises(NotFittedError):
        pg.PrivateGaussianMixture(2, epsilon=1.0, delta=1e-6).predict(X)


def test_a_failed_fit_leaves_the_estimator_unfitted(gaussian_rows):
    g = pg.PrivateGaussian(epsilon=1.0, delta=1e-6, method="histogram", random_state=0)
    with pytest.raises(pg.EstimationFailed), pytest.warns(pg.warnings.BudgetSpentWarning):
        g.fit(scale_free_rows(3000, 3))  # no common scale for the localisation: ⊥
    with pytest.raises(NotFittedError):
        g.score(gaussian_rows(5))


def test_feature_names_and_n_features(gaussian_rows):
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(gaussian_rows(2000), columns=["age", "income", "score"])
    g = _gaussian().fit(df)
    assert list(g.feature_names_in_) == ["age", "income", "score"] and g.n_features_in_ == 3
    with pytest.raises(ValueError, match="expecting 3 features"):
        g.score(gaussian_rows(10, 2))
    with pytest.warns(UserWarning, match="feature names"):
        g.score(gaussian_rows(10))  # fitted with names, scored without


def test_public_rows_go_by_keyword_and_y_is_ignored(gaussian_rows):
    X, P = gaussian_rows(3000), gaussian_rows(10, seed=1)
    a = pg.PrivateGaussian(rho=0.5, random_state=0).fit(X, public_X=P)
    b = pg.PrivateGaussian(rho=0.5, random_state=0).fit(X, np.zeros(3000), public_X=P)
    assert a.method_ == "public" and np.array_equal(a.mean_, b.mean_)


def test_clone_shares_the_accountant_so_cross_validation_spends_one_budget(gaussian_rows):
    acct = pg.Accountant(pg.ZCDP(1.0))
    g = _gaussian(accountant=acct)
    g.set_params(rho=0.2)
    assert clone(g).accountant is acct
    scores = cross_val_score(g, gaussian_rows(3000), cv=3)
    assert scores.shape == (3,) and np.all(np.isfinite(scores))
    assert abs(acct.spent.rho - 0.6) < 1e-12
    # a fourth and fifth fold would exceed the total: refused before any noise is drawn
    with pytest.raises(pg.PrivacyBudgetError):
        cross_val_score(g, gaussian_rows(3000), cv=3, error_score="raise")
    assert acct.spent.rho <= 1.0 + 1e-12


def test_grid_search_ranks_fits_by_held_out_likelihood(gaussian_rows):
    acct = pg.Accountant(pg.ZCDP(2.0))
    grid = GridSearchCV(_gaussian(rho=0.1, accountant=acct),
                        {"constants": ["practical", "theory"]}, cv=2).fit(gaussian_rows(4000))
    assert grid.best_params_["constants"] in ("practical", "theory")
    # 2 settings x 2 folds + the refit on all rows: 5 fits of 0.1 each
    assert abs(acct.spent.rho - 0.5) < 1e-12


def test_pipeline_with_a_scaler(gaussian_rows):
    # the scaler is fitted on the private rows without privacy: the docs say so; it works
    pipe = make_pipeline(StandardScaler(), _gaussian())
    pipe.fit(gaussian_rows(2000) * 5 + 3)
    assert np.isfinite(pipe.score(gaussian_rows(100) * 5 + 3))


def test_mixture_is_a_density_estimator_with_predict():
    mix = pg.datasets.make_mixture(6000, 2, 2, separation=8.0, random_state=0)
    X, P = mix.X[:5000], mix.X[5000:5060]
    m = pg.PrivateGaussianMixture(2, rho=0.5, method="public-heavy", random_state=0)
    m.fit(X, public_X=P)
    proba = m.predict_proba(X[:50])
    assert proba.shape == (50, 2) and np.allclose(proba.sum(axis=1), 1.0)
    assert np.array_equal(m.predict(X[:50]), proba.argmax(axis=1))
    assert m.score(X) == pytest.approx(np.mean(m.score_samples(X)))
    assert get_tags(m).estimator_type == "density_estimator"


def test_mixture_methods_the_sklearn_way(two_clusters):
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame(two_clusters(), columns=["height", "weight"])
    m = _mixture(rho=0.5).fit(df)
    assert m.method_ == "em" and "prior" in m.method_reason_
    assert list(m.feature_names_in_) == ["height", "weight"] and m.n_features_in_ == 2
    assert sorted(np.round(m.weights_, 1)) == [0.4, 0.6]
    X = df.to_numpy()
    proba = m.predict_proba(df)
    assert proba.shape == (3000, 2) and np.allclose(proba.sum(axis=1), 1.0)
    labels = m.predict(df)
    assert np.array_equal(labels, proba.argmax(axis=1))
    assert {labels[X[:, 0] > 3].mean().round(), labels[X[:, 0] < 3].mean().round()} == {0, 1}
    assert m.score(df) == pytest.approx(np.mean(m.score_samples(df)))
    S, lab = m.sample(500, random_state=1)
    assert S.shape == (500, 2) and lab.shape == (500,) and set(lab) <= {0, 1}
    with pytest.warns(UserWarning, match="feature names"):
        m.predict(X[:5])  # fitted with names, predicting without
    with pytest.raises(ValueError, match="expecting 2 features"):
        m.predict(X[:5, :1])


def test_mixture_cross_validation_and_grid_search_share_one_accountant(two_clusters):
    X = two_clusters()
    acct = pg.Accountant(pg.ZCDP(1.2))
    scores = cross_val_score(_mixture(rho=0.2, accountant=acct), X, cv=3)
    assert scores.shape == (3,) and np.all(np.isfinite(scores))
    assert abs(acct.spent.rho - 0.6) < 1e-12
    # a grid search of 2 settings x 2 folds + the refit at 0.2 each would need 1.0 of the 0.6
    # left: the fit that would exceed the total is refused before any noise is drawn
    with pytest.raises(pg.PrivacyBudgetError):
        GridSearchCV(_mixture(rho=0.2, accountant=acct), {"n_components": [1, 2]}, cv=2,
                     error_score="raise").fit(X)
    assert acct.spent.rho <= 1.2 + 1e-12
    acct2 = pg.Accountant(pg.ZCDP(2.5))
    grid = GridSearchCV(_mixture(rho=0.5, accountant=acct2), {"n_components": [1, 2]},
                        cv=2).fit(X)
    assert grid.best_params_ == {"n_components": 2}  # two clusters: held-out likelihood says so
    assert abs(acct2.spent.rho - 2.5) < 1e-12  # 2 settings x 2 folds + the refit
