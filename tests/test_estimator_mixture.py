"""Tests of privgauss.estimators.mixture.PrivateGaussianMixture.

Fitting at fixed seeds, the prediction / density / sampling helpers against direct computations,
the privacy report, up-front refusals that spend nothing (checked on a shared accountant's
ledger) and say what is needed, method choice from public facts, failures that spend the
budget, and composition on a shared accountant.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import multivariate_normal

from privgauss import EstimationFailed, InvalidDataError, PrivacyBudgetError, methods
from privgauss.datasets import make_mixture
from privgauss.estimators.mixture import METHODS, PrivateGaussianMixture
from privgauss.metrics import mixture_error
from privgauss.mixture.requirements import sample_aggregate_requirements
from privgauss.privacy import Accountant, ApproxDP

EPS, DELTA = 5.0, 1e-6


@pytest.fixture(scope="module")
def mix():
    return make_mixture(40_000, 2, 2, separation=3.0, random_state=11)


@pytest.fixture(scope="module")
def read_only_X(mix):
    X = mix.X.copy()
    X.flags.writeable = False  # a fit that writes into its input raises
    return X


@pytest.fixture(scope="module")
def fitted(read_only_X):
    return PrivateGaussianMixture(
        2, epsilon=EPS, delta=DELTA, method="sample-aggregate", random_state=5
    ).fit(read_only_X)


def test_fit_recovers_the_mixture_and_reports_privacy(mix, fitted) -> None:
    m = fitted
    assert (
        m.weights_.shape == (2,)
        and m.means_.shape == (2, 2)
        and m.covariances_.shape
        == (
            2,
            2,
            2,
        )
    )
    err = mixture_error(
        m.weights_, m.means_, m.covariances_, mix.weights, mix.means, mix.covariances
    )
    assert err.max_component_tv <= 0.1 and err.weight_error <= 0.02
    assert m.method_ == "sample-aggregate" and m.method_reason_ == "requested"
    spent = m.privacy_spent_
    assert math.isclose(spent.epsilon, EPS, rel_tol=1e-7) and spent.delta == DELTA
    assert m.ledger_ and all(e.cost is not None for e in m.ledger_)


def test_predict_proba_score_samples_and_predict_agree(mix, fitted) -> None:
    X = mix.X[:2000]
    logp = np.stack(
        [
            np.log(w) + multivariate_normal(mu, c).logpdf(X)
            for w, mu, c in zip(fitted.weights_, fitted.means_, fitted.covariances_, strict=True)
        ],
        axis=1,
    )
    np.testing.assert_allclose(fitted.score_samples(X), logsumexp(logp, axis=1), rtol=1e-7)
    proba = fitted.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(
        proba, np.exp(logp - logsumexp(logp, axis=1, keepdims=True)), atol=1e-9
    )
    pred = fitted.predict(X)
    np.testing.assert_array_equal(pred, proba.argmax(axis=1))
    # up to relabelling, the private clustering agrees with the truth on separated data
    agree = max(np.mean(pred == mix.labels[:2000]), np.mean(pred == 1 - mix.labels[:2000]))
    assert agree >= 0.99


def test_sample_follows_the_fitted_mixture(fitted) -> None:
    X, labels = fitted.sample(20_000, random_state=0)
    assert X.shape == (20_000, 2) and labels.shape == (20_000,)
    np.testing.assert_allclose(np.bincount(labels) / 20_000, fitted.weights_, atol=0.02)
    for j in range(2):
        np.testing.assert_allclose(X[labels == j].mean(axis=0), fitted.means_[j], atol=0.1)


def test_to_dict_is_json_with_the_privacy_report(fitted) -> None:
    d = json.loads(json.dumps(fitted.to_dict()))
    assert d["model"] == "gaussian-mixture" and d["method"] == "sample-aggregate"
    assert len(d["weights"]) == 2 and np.asarray(d["covariances"]).shape == (2, 2, 2)
    assert d["privacy"]["budget"] == {"notion": "approx", "epsilon": EPS, "delta": DELTA}
    assert d["privacy"]["neighbours"].startswith("replace-one")
    assert len(d["privacy"]["ledger"]) == len(fitted.ledger_)


def test_inputs_are_not_mutated(mix, read_only_X, fitted) -> None:
    # the shared fit ran on the read-only copy (and succeeded): its rows are still mix.X
    assert fitted.means_.shape == (2, 2)
    np.testing.assert_array_equal(read_only_X, mix.X)


# --------------------------------------------------------------------------- refusals


def _refused(make, X, exc=ValueError) -> str:
    shared = Accountant(ApproxDP(100.0, 1e-3))
    est = make(shared)
    with pytest.raises(exc) as info:
        est.fit(X)
    assert shared.ledger == []  # nothing spent
    assert "987" not in str(info.value)
    return str(info.value)


@pytest.mark.parametrize(
    "kwargs, needle",
    [
        ({"n_components": 0}, "n_components"),
        ({"n_components": 5001}, "n_components"),
        ({"min_weight": 0.0}, "min_weight"),
        ({"min_weight": 0.6}, "min_weight"),
        ({"method": "kmeans"}, "method"),
        ({"constants": "paper"}, "constants"),
        ({"beta": 1.5}, "beta"),
        ({"method_params": {"peel_factor": 0.5}}, "peel_factor"),
        ({"method_params": {"terrific_c": 3.0}}, "terrific_c"),
        ({"method_params": {"max_points": 10}}, "max_points"),
        ({"separation": 0.0}, "separation"),
        ({"separation": float("nan")}, "separation"),
        ({"method_params": {"t_fraction": 0.0}}, "t_fraction"),
        ({"method_params": {"radii": [-1.0]}}, "radii"),
        ({"method_params": {"bogus": 1}}, "bogus"),
    ],
)
def test_bad_parameters_are_refused_before_spending(kwargs: dict, needle: str) -> None:
    X = np.full((5000, 2), 987.654321)
    params = {"n_components": 2, "epsilon": 1.0, "delta": DELTA}
    params.update(kwargs)
    k = params.pop("n_components")
    msg = _refused(lambda acct: PrivateGaussianMixture(k, accountant=acct, **params), X)
    assert needle in msg


@pytest.mark.parametrize(
    "budget",
    [{"rho": 0.5}, {"epsilon": 1.0}],
)
def test_budgets_without_delta_are_refused(budget: dict) -> None:
    X = np.full((5000, 2), 987.654321)
    msg = _refused(
        lambda acct: PrivateGaussianMixture(2, accountant=acct, **budget), X, PrivacyBudgetError
    )
    assert "delta" in msg


def test_too_little_data_is_refused_with_the_n_needed() -> None:
    X = np.full((3000, 2), 987.654321)
    need = sample_aggregate_requirements(n=3000, d=2, k=2, epsilon=1.0, delta=DELTA)
    assert not need.ok
    msg = _refused(
        lambda acct: PrivateGaussianMixture(
            2, epsilon=1.0, delta=DELTA, method="sample-aggregate", accountant=acct
        ),
        X,
        InvalidDataError,
    )
    assert f"{need.n_needed:.3g}" in msg and "n = 3000" in msg
    # 900 rows: below what em (the least demanding, about 980 at d = 2) needs
    msg = _refused(
        lambda acct: PrivateGaussianMixture(2, epsilon=1.0, delta=DELTA, accountant=acct),
        X[:900],
        InvalidDataError,
    )
    assert "no mixture method" in msg and "n = 900" in msg


def test_failure_below_the_requirement_spends_the_budget() -> None:
    mix = make_mixture(3000, 3, 2, separation=3.0, random_state=0)
    shared = Accountant(ApproxDP(0.5, DELTA))
    est = PrivateGaussianMixture(
        3,
        epsilon=0.5,
        delta=DELTA,
        method="sample-aggregate",
        enforce_requirements=False,
        accountant=shared,
        random_state=0,
    )
    with pytest.raises(EstimationFailed) as info:
        est.fit(mix.X)
    assert info.value.needed_n is not None and info.value.needed_n > 3000
    spent = shared.spent
    assert math.isclose(spent.epsilon, 0.5, rel_tol=1e-7) and spent.delta == DELTA
    assert any(e.mechanism == "unused" for e in shared.ledger)


def test_shared_accountant_composes_and_refuses_when_exhausted(mix) -> None:
    shared = Accountant(ApproxDP(2 * EPS, 2 * DELTA))
    for seed in (0, 1):
        PrivateGaussianMixture(
            2,
            epsilon=EPS,
            delta=DELTA,
            method="sample-aggregate",
            accountant=shared,
            random_state=seed,
        ).fit(mix.X)
    assert len(shared.ledger) > 2
    before = len(shared.ledger)
    with pytest.raises(PrivacyBudgetError):
        PrivateGaussianMixture(
            2,
            epsilon=EPS,
            delta=DELTA,
            method="sample-aggregate",
            accountant=shared,
            random_state=2,
        ).fit(mix.X)
    assert len(shared.ledger) == before


def test_kssu_through_the_estimator() -> None:
    mix = make_mixture(20_000, 2, 2, separation=5.0, random_state=12)
    m = PrivateGaussianMixture(
        2,
        epsilon=EPS,
        delta=DELTA,
        method="kssu",
        method_params={"max_points": 3000},
        random_state=12,
    ).fit(mix.X)
    err = mixture_error(
        m.weights_, m.means_, m.covariances_, mix.weights, mix.means, mix.covariances
    )
    assert err.max_component_tv <= 0.1 and err.weight_error <= 0.02
    assert m.method_ == "kssu" and m.fit_info_["n_leaves"] == 2
    assert math.isclose(m.privacy_spent_.epsilon, EPS, rel_tol=1e-7)
    json.dumps(m.to_dict())


@pytest.mark.parametrize(
    "n, separation, expected",
    [
        (40_000, None, "em"),  # both meet n, but no separation is stated: private EM
        (40_000, 6.0, "kssu"),  # both validated at 6: the most room in n
        (40_000, 4.0, "sample-aggregate"),  # kssu only validated from 5
        (10_000, None, "em"),  # kssu meets its requirement, but no separation is stated
        (10_000, 5.0, "kssu"),  # only kssu meets its requirement at this n
        (40_000, 2.0, "em"),  # no paper learner was validated at separation 2
    ],
)
def test_auto_choice_uses_only_public_facts(n, separation, expected) -> None:
    est = PrivateGaussianMixture(2, epsilon=EPS, delta=DELTA, separation=separation)
    facts = est._facts(ApproxDP(EPS, DELTA), n, 2, None)
    reqs = {m: methods.requirements("mixture", m, facts) for m in METHODS}
    assert reqs["kssu"].ok and (reqs["sample-aggregate"].ok == (n == 40_000))
    method, reason = est._choose(facts)
    assert method == expected
    assert ("no separation assumed" if expected == "em" else "requirement") in reason


def test_auto_chooses_from_public_facts_and_says_why(mix) -> None:
    m = PrivateGaussianMixture(2, epsilon=EPS, delta=DELTA, random_state=3).fit(mix.X)
    assert m.method_ == "em"  # no separation= stated
    assert "no separation= stated" in m.method_reason_
    # the choice depends only on (n, d, k, budget, min_weight): shuffling rows cannot change it
    X2 = mix.X[::-1].copy()
    m2 = PrivateGaussianMixture(2, epsilon=EPS, delta=DELTA, random_state=4).fit(X2)
    assert m2.method_ == m.method_ and m2.method_reason_ == m.method_reason_


def test_public_x_is_validated_and_reported_unused(mix) -> None:
    with pytest.raises(InvalidDataError):
        PrivateGaussianMixture(2, epsilon=EPS, delta=DELTA).fit(mix.X, public_X=np.zeros((3, 5)))
    if any(spec.uses_public for spec in METHODS.values()):  # pragma: no cover - later issue
        return
    m = PrivateGaussianMixture(2, epsilon=EPS, delta=DELTA, random_state=0).fit(
        mix.X, public_X=mix.X[:10]
    )
    assert "public_X is not used" in m.method_reason_


def test_unfitted_estimator_says_so() -> None:
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError, match="not fitted"):
        PrivateGaussianMixture(2, epsilon=1.0, delta=DELTA).predict(np.zeros((2, 2)))


# --------------------------------------------------------------------------- public data (issue 5)


@pytest.fixture(scope="module")
def public_mix():
    return make_mixture(60_500, 3, 10, min_weight=0.2, separation=6.0, random_state=21)


def test_auto_picks_public_heavy_with_enough_public_rows_and_exposes_the_clustering(
    public_mix,
) -> None:
    P, X = public_mix.X[:500], public_mix.X[500:]
    m = PrivateGaussianMixture(3, epsilon=1.0, delta=DELTA, min_weight=0.2, separation=6.0,
                               random_state=0)
    m.fit(X, public_X=P)
    assert m.method_ == "public-heavy" and "500 public rows" in m.method_reason_
    assert m.public_clusters_.n_clusters == 3
    assert m.public_clusters_.labels.shape == (500,)
    assert math.isclose(m.privacy_spent_.epsilon, 1.0, rel_tol=1e-9)
    err = mixture_error(m.weights_, m.means_, m.covariances_, public_mix.weights,
                        public_mix.means, public_mix.covariances)
    assert err.max_component_tv <= 0.2 and err.weight_error <= 0.05


def test_auto_falls_back_to_public_light_with_few_public_rows(public_mix) -> None:
    est = PrivateGaussianMixture(3, rho=0.5, min_weight=0.2, separation=6.0)
    method, reason = est._choose(est._facts(est._budget(), 60_000, 10, np.zeros((60, 10))))
    assert method == "public-light" and "too few for 'public-heavy'" in reason
    method, _ = est._choose(est._facts(est._budget(), 60_000, 10, np.zeros((500, 10))))
    assert method == "public-heavy"


def test_rho_budget_is_accepted_by_the_public_methods_only(public_mix) -> None:
    P, X = public_mix.X[:60], public_mix.X[500:]
    m = PrivateGaussianMixture(3, rho=0.5, method="public-light", min_weight=0.2, random_state=1)
    m.fit(X, public_X=P)
    assert math.isclose(m.privacy_spent_.rho, 0.5, rel_tol=1e-12)
    assert len(m.public_clusters_) == 3 and m.to_dict()["privacy"]["budget"]
    with pytest.raises(PrivacyBudgetError, match="rho= with a zCDP method"):
        PrivateGaussianMixture(3, rho=0.5, method="kssu").fit(X)
    with pytest.raises(PrivacyBudgetError, match="public_X"):
        PrivateGaussianMixture(3, rho=0.5).fit(X)


@pytest.mark.parametrize(
    ("method", "k", "public", "match"),
    [
        ("public-heavy", 3, lambda P: P[:, :4], "features"),  # wrong dimension
        ("public-heavy", 3, lambda P: P[:100], "needs at least 110 public rows"),
        ("public-light", 3, lambda P: P[:10], "needs at least 20 public rows"),
        ("public-heavy", 3, None, "needs public_X"),
        ("public-heavy", 3, lambda P: np.vstack([P, P + 1e4]), "more than n_components"),
    ],
)
def test_bad_public_input_is_refused_before_spending(public_mix, method, k, public, match) -> None:
    shared = Accountant(ApproxDP(1.0, DELTA))
    P = None if public is None else public(public_mix.X[:500])
    with pytest.raises(InvalidDataError, match=match):
        PrivateGaussianMixture(
            k, method=method, min_weight=0.2, accountant=shared, enforce_requirements=False,
            random_state=0,
        ).fit(public_mix.X[500:], public_X=P)
    assert shared.ledger == []


def test_dask_and_npy_inputs_give_the_in_memory_fit_and_large_ones_are_refused(
        tmp_path, mix, fitted) -> None:
    import dask.array as da

    import privgauss as pg

    # the reference is the module's in-memory fit (sample-aggregate, seed 5, the same rows)
    kwargs = dict(epsilon=EPS, delta=DELTA, method="sample-aggregate")
    ref = fitted
    lazy = pg.PrivateGaussianMixture(2, random_state=5, **kwargs).fit(
        da.from_array(mix.X, chunks=(3000, 2))
    )
    np.save(tmp_path / "x.npy", mix.X)
    path = pg.PrivateGaussianMixture(2, random_state=5, **kwargs).fit(str(tmp_path / "x.npy"))
    for other in (lazy, path):
        np.testing.assert_array_equal(other.means_, ref.means_)
        np.testing.assert_array_equal(other.weights_, ref.weights_)
    acct = pg.Accountant(pg.ApproxDP(5.0, 1e-6))
    small = pg.PrivateGaussianMixture(2, accountant=acct, max_memory_bytes=1000, **kwargs)
    with pytest.raises(pg.InvalidDataError, match="max_memory_bytes"):
        small.fit(da.from_array(mix.X, chunks=(3000, 2)))
    assert acct.spent is None and not acct.ledger
