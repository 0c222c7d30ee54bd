"""PrivateGaussian: method choice, budgets, shared accountants, validation before spending,
and end-to-end accuracy of each method at fixed seeds."""

import math

import numpy as np
import pytest

import privgauss as pg
from privgauss.datasets import make_gaussian
from privgauss.metrics import covariance_error, mahalanobis_mean_error


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    d = 4
    X, mu, cov = make_gaussian(20_000, d, mean=np.full(d, 50.0), condition_number=5.0,
                               random_state=rng)
    pub, _, _ = make_gaussian(3 * (d + 1), d, mean=mu, cov=cov, random_state=rng)
    return X, pub, mu, cov


def _ledger_total_rho(g):
    return sum(e.cost.rho for e in g.ledger_)


def test_auto_uses_public_data_and_spends_exactly_the_budget(data):
    X, pub, mu, cov = data
    g = pg.PrivateGaussian(rho=0.5, random_state=0).fit(X, public_X=pub)
    assert g.method_ == "public"
    assert math.isclose(_ledger_total_rho(g), 0.5, rel_tol=1e-9)
    assert g.privacy_spent_.rho == pytest.approx(0.5, rel=1e-9)
    assert mahalanobis_mean_error(g.mean_, mu, cov) < 0.1
    assert covariance_error(g.covariance_, cov) < 0.3


def test_auto_mean_only_with_one_public_row(data):
    X, pub, mu, cov = data
    g = pg.PrivateGaussian(rho=0.5, covariance=cov, random_state=1).fit(X, public_X=pub[:1])
    assert g.method_ == "public"
    np.testing.assert_array_equal(g.covariance_, cov)
    nonpriv = mahalanobis_mean_error(X.mean(0), mu, cov)
    assert mahalanobis_mean_error(g.mean_, mu, cov) < nonpriv + 0.05


def test_auto_coinpress_with_a_prior(data):
    X, _, mu, cov = data
    g = pg.PrivateGaussian(rho=0.5, mean_bound=1e4, cov_bounds=(0.1, 100.0), random_state=2)
    g.fit(X)
    assert g.method_ == "coinpress"
    assert mahalanobis_mean_error(g.mean_, mu, cov) < 0.1
    assert covariance_error(g.covariance_, cov) < 0.4


def test_auto_histogram_without_bounds_under_approx_dp(data):
    X, _, mu, cov = data
    g = pg.PrivateGaussian(epsilon=2.0, delta=1e-6, random_state=3).fit(X)
    assert g.method_ == "histogram"
    assert g.privacy_spent_.epsilon <= 2.0 * (1 + 1e-9)
    assert g.privacy_spent_.delta <= 1e-6 * (1 + 1e-9)
    assert mahalanobis_mean_error(g.mean_, mu, cov) < 0.2


def test_no_method_possible_says_what_to_supply(data):
    X, _, _, _ = data
    with pytest.raises(ValueError, match="public_X"):
        pg.PrivateGaussian(rho=0.5).fit(X)


def test_shared_accountant_composes_and_refuses_before_spending(data):
    X, pub, _, _ = data
    acct = pg.Accountant(pg.ZCDP(1.0))
    pg.PrivateGaussian(rho=0.6, accountant=acct, random_state=0).fit(X, public_X=pub)
    assert acct.spent.rho == pytest.approx(0.6)
    n_entries = len(acct.ledger)
    with pytest.raises(pg.PrivacyBudgetError):
        pg.PrivateGaussian(rho=0.6, accountant=acct, random_state=0).fit(X, public_X=pub)
    # the refused fit charged nothing: the whole fit is checked before any release
    assert acct.spent.rho == pytest.approx(0.6)
    assert len(acct.ledger) == n_entries
    # without an explicit budget an estimator takes what is left
    g = pg.PrivateGaussian(accountant=pg.Accountant(pg.ZCDP(0.3)), random_state=0)
    g.fit(X, public_X=pub)
    assert g.privacy_spent_.rho == pytest.approx(0.3)


@pytest.mark.parametrize(
    "kwargs, public, exc",
    [
        (dict(rho=0.5, method="public"), "few", pg.InvalidDataError),
        (dict(rho=0.5, method="public"), "wrong-d", pg.InvalidDataError),
        (dict(rho=0.5, method="coinpress"), None, pg.InvalidDataError),
        (dict(rho=0.5, method="histogram"), None, pg.PrivacyBudgetError),
        (dict(rho=-1.0), None, pg.PrivacyBudgetError),
        (dict(epsilon=1.0, delta=1.5), None, pg.PrivacyBudgetError),
        (dict(rho=0.5, method="nope"), None, ValueError),
        (dict(rho=0.5, covariance="diagonal"), None, ValueError),
    ],
)
def test_bad_input_is_refused_before_any_budget_is_spent(data, kwargs, public, exc):
    X, pub, _, _ = data
    acct = pg.Accountant(pg.ZCDP(10.0))
    public_X = {"few": pub[:2], "wrong-d": pub[:, :2], None: None}[public]
    before = X.copy()
    with pytest.raises(exc):
        pg.PrivateGaussian(accountant=acct, **kwargs).fit(X, public_X=public_X)
    assert acct.ledger == []
    np.testing.assert_array_equal(X, before)


@pytest.mark.parametrize("bad", [np.array([1.0, 2.0]), np.zeros((0, 3)), [["a", "b"], ["c", "d"]]])
def test_bad_data_is_a_typed_error(bad):
    with pytest.raises(pg.InvalidDataError):
        pg.PrivateGaussian(rho=0.5).fit(bad)


def test_nan_rows_are_refused_and_the_array_is_untouched(data):
    X, pub, _, _ = data
    Xn = X[:100].copy()
    Xn[3, 1] = np.nan
    before = Xn.copy()
    with pytest.raises(pg.InvalidDataError, match="NaN"):
        pg.PrivateGaussian(rho=0.5).fit(Xn, public_X=pub)
    np.testing.assert_array_equal(Xn, before)


def test_fitted_model_scores_samples_and_serialises(data):
    X, pub, mu, cov = data
    g = pg.PrivateGaussian(rho=0.5, random_state=0).fit(X, public_X=pub)
    from privgauss.metrics import background_logpdf, gaussian_logpdf

    # the Gaussian mixed with its background at the released weight (a DP count: it may be a
    # little above 0 on Gaussian rows, by the count's noise)
    w = g.background_weight_
    assert 0.0 <= w < 1e-3
    expected = gaussian_logpdf(X[:5], g.mean_, g.covariance_)
    if w > 0:
        expected = np.logaddexp(np.log1p(-w) + expected,
                                np.log(w) + background_logpdf(X[:5], g.mean_, g.covariance_))
    np.testing.assert_allclose(g.score_samples(X[:5]), expected, rtol=1e-8)
    S = g.sample(20_000, random_state=0)
    assert np.abs(S.mean(0) - g.mean_).max() < 0.1
    d = g.to_dict()
    assert d["privacy"]["neighbours"].startswith("replace-one")
    assert sum(e["cost"]["rho"] for e in d["privacy"]["ledger"]) == pytest.approx(0.5)
    assert d["method"] == "public"


def test_same_seed_same_answer_and_secure_by_default(data):
    X, pub, _, _ = data
    a = pg.PrivateGaussian(rho=0.5, random_state=5).fit(X, public_X=pub)
    b = pg.PrivateGaussian(rho=0.5, random_state=5).fit(X, public_X=pub)
    np.testing.assert_array_equal(a.mean_, b.mean_)
    s1 = pg.PrivateGaussian(rho=0.5, covariance="identity").fit(X[:500, :2], public_X=pub[:1, :2])
    s2 = pg.PrivateGaussian(rho=0.5, covariance="identity").fit(X[:500, :2], public_X=pub[:1, :2])
    assert not np.array_equal(s1.mean_, s2.mean_)  # fresh OS entropy each time


def test_public_method_refuses_a_hopeless_plan_before_spending_and_says_what_works():
    # regression (T9): with d+1 public rows the worst-case range K (≈ 1e8 here) cannot be
    # whitened at this n; the fit used to return garbage (d = 100, n = 5000: mean error 8.4e6)
    import re

    rng = np.random.default_rng(0)
    d, n = 20, 1000
    X, P = rng.normal(size=(n, d)), rng.normal(size=(4 * d, d))
    acct = pg.Accountant(pg.ZCDP(2.0))
    messages = {}
    for constants in ("theory", "practical"):
        est = pg.PrivateGaussian(rho=1.0, method="public", constants=constants, accountant=acct,
                                 random_state=0)
        with pytest.raises(pg.InvalidDataError, match="private rows") as info:
            est.fit(X, public_X=P[: d + 1])
        assert acct.spent is None or acct.spent.rho == 0  # refused before any release
        messages[constants] = str(info.value)
    # following either practical suggestion gives a fit that works
    msg = messages["practical"]
    m_ok = int(re.search(r"or (\d+) public rows", msg).group(1))
    n_ok = int(re.search(r"n >= (\d+) private rows", msg).group(1))
    assert m_ok > d + 1 and n_ok > n
    for n_, m_ in ((n, m_ok), (n_ok, d + 1)):
        g = pg.PrivateGaussian(rho=1.0, method="public", random_state=0)
        g.fit(rng.normal(size=(n_, d)), public_X=rng.normal(size=(m_, d)))
        assert covariance_error(g.covariance_, np.eye(d)) < 0.75 * math.sqrt(d)  # relative 0.75


def test_public_method_reports_a_collapsed_chain_as_estimation_failed(monkeypatch):
    # regression (T9): at d = 100, n = 20000 with 101 public rows the whitening chain collapsed
    # (released covariance ~1e-4·Σ) and was returned as an estimate. The released covariance in
    # the preconditioner's frame must respect Σ_Y ⪰ I; a collapsed release is a DP failure.
    import privgauss.gaussian.public as pub

    rng = np.random.default_rng(1)
    d = 4
    X, P = rng.normal(size=(4000, d)), rng.normal(size=(d + 1, d))
    real = pub.public_gaussian_validated
    ok = pg.PrivateGaussian(rho=1.0, method="public", random_state=0).fit(X, public_X=P)
    assert covariance_error(ok.covariance_, np.eye(d)) < 0.3  # a good fit passes the check

    def collapsed(*args, **kwargs):
        mean, cov = real(*args, **kwargs)
        return mean, 1e-4 * cov

    monkeypatch.setattr(pub, "public_gaussian_validated", collapsed)
    est = pg.PrivateGaussian(rho=1.0, method="public", random_state=0)
    acct = pg.Accountant(pg.ZCDP(1.0))
    est.accountant = acct
    with pytest.raises(pg.EstimationFailed, match="did not converge"):
        est.fit(X, public_X=P)
    # the budget stays spent: all of the algorithm's; the clipped count's share (released
    # after a successful fit only) is not charged
    from privgauss.gaussian.clip_diagnostics import COUNT_SHARE

    assert acct.spent.rho == pytest.approx(1.0 - COUNT_SHARE)
