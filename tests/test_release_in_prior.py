"""Releases respect the prior the user gave, and a failure's message says what happened
(issue 17, items 5 and 6): post-processing of DP outputs and public quantities only."""

from __future__ import annotations

import numpy as np
import pytest

import privgauss as pg


def test_mean_and_covariance_are_released_inside_the_prior():
    # n = 40 rows at rho = 0.5: the noise dwarfs the signal (with n = 20 the mean once came
    # out at norm 16,144 with mean_bound=100; that fit is now refused before spending, see
    # below); the release is projected into the prior the user stated
    X = np.random.default_rng(0).normal(size=(40, 3)) + 5.0
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
    X = np.random.default_rng(0).normal(size=(10, 2)) + 1.5  # the mean just outside the bound
    g = pg.PrivateGaussian(rho=0.01, method="coinpress", covariance="identity", mean_bound=1.0,
                           random_state=0).fit(X)
    assert np.linalg.norm(g.mean_) <= 1.0
    np.testing.assert_array_equal(g.covariance_, np.eye(2))
    # rows 100 standard deviations from everything the prior allows: the fit's ball misses
    # them all, and that is a failure (a DP outcome), not a model with a warning — once n is
    # large enough for the DP count to say so beyond its noise (not at n = 10)
    Y = np.random.default_rng(1).normal(size=(2000, 2)) * 100
    with pytest.raises(pg.EstimationFailed, match="missed the data"), pytest.warns(
            pg.warnings.BudgetSpentWarning):
        pg.PrivateGaussian(rho=0.5, method="coinpress", covariance="identity", mean_bound=1.0,
                           random_state=0).fit(Y)
    g = pg.PrivateGaussian(rho=0.01, method="coinpress", covariance="identity", mean_bound=1.0,
                           random_state=0)
    assert np.linalg.norm(g.fit(X * 100).mean_) <= 1.0  # n = 10: the count cannot tell


def test_a_failure_says_the_step_the_n_it_needs_and_what_was_spent():
    # a fit that passes every check before spending and fails after: a prior that excludes
    # the data (every row 1e4 from the prior's ball), so the DP clipped count says the fit
    # missed it. (A correlation condition of ~1e8 beyond corr_condition used to serve here;
    # the bound-free route now fits it with a ridge tied to the noise.)
    X = np.random.default_rng(0).normal(size=(20_000, 5)) + 1e4
    with pytest.raises(pg.EstimationFailed) as err, pytest.warns(pg.warnings.BudgetSpentWarning):
        pg.PrivateGaussian(epsilon=1.0, delta=1e-6, method="coinpress", mean_bound=10.0,
                           cov_bounds=(0.1, 10.0), random_state=1).fit(X)
    text = str(err.value)
    assert err.value.step and err.value.step in text
    assert "spent (" in text and "of (1, 1e-06)-DP" in text


@pytest.mark.parametrize("method", ["histogram", "auto"])
def test_too_few_rows_for_the_bound_free_route_are_refused_before_spending(method: str) -> None:
    # 30 rows at d = 3, (1, 1e-6): the localisation could release no bin (it used to fail
    # after spending 0.65 of epsilon); the registry's requirement refuses first
    X = np.random.default_rng(0).normal(size=(30, 3))
    acct = pg.Accountant(pg.privacy.ApproxDP(1.0, 1e-6))
    with pytest.raises(pg.InvalidDataError, match=r"needs about n >= \d+ rows") as err:
        pg.PrivateGaussian(epsilon=1.0, delta=1e-6, method=method, accountant=acct,
                           random_state=0).fit(X)
    assert "Nothing was spent" in str(err.value) and not acct.ledger
    need = pg.methods.requirements("gaussian", "histogram", pg.methods.Facts(
        "gaussian", pg.privacy.ApproxDP(1.0, 1e-6), 30, 3)).n_needed
    assert f"n >= {need:.0f}" in str(err.value)
    X = np.random.default_rng(0).normal(size=(int(1.2 * need), 3))  # and above it: a fit
    assert pg.PrivateGaussian(epsilon=1.0, delta=1e-6, method=method,
                              random_state=0).fit(X).method_ == "histogram"


def test_a_loose_prior_on_a_small_table_is_refused_before_spending() -> None:
    # breast cancer (455 rows, d = 30) at rho = 0.5 with a prior of condition 1e16: the fit
    # returned a covariance error of 6.7e4 without failing; the plan predicts 8e7 at the
    # prior's worst case, so it is refused before anything is spent, naming the n it needs
    X = pg.datasets.load_table("breast_cancer")[:455]
    acct = pg.Accountant(pg.privacy.ZCDP(0.5))
    kw = dict(rho=0.5, method="coinpress", mean_bound=1e6, cov_bounds=(1e-6, 1e10))
    with pytest.raises(pg.InvalidDataError, match="cannot promise a covariance") as err:
        pg.PrivateGaussian(accountant=acct, random_state=0, **kw).fit(X)
    assert "Nothing was spent" in str(err.value) and not acct.ledger
    assert "Tighten cov_bounds" in str(err.value)
    # the same prior with enough rows of a Gaussian fits (the check is not a blanket refusal)
    Y = np.random.default_rng(1).normal(size=(20_000, 30)) * 3.0
    g = pg.PrivateGaussian(random_state=0, **kw).fit(Y)
    assert np.abs(np.linalg.eigvalsh(g.covariance_) / 9.0 - 1.0).max() < 0.5


def test_auto_falls_back_to_the_bound_free_route_when_the_prior_is_too_loose() -> None:
    # (epsilon, delta) with a prior: auto tries coinpress first; its plan at this prior's worst
    # case cannot work with 4,000 rows, so auto takes the bound-free route (before spending)
    X = np.random.default_rng(2).normal(size=(4000, 10)) * 2.0 + 7.0
    kw = dict(epsilon=1.0, delta=1e-6, mean_bound=1e6, cov_bounds=(1e-6, 1e10), random_state=0)
    g = pg.PrivateGaussian(**kw).fit(X)
    assert g.method_ == "histogram" and "'coinpress' cannot work here" in g.method_reason_
    assert np.abs(np.linalg.eigvalsh(g.covariance_) / 4.0 - 1.0).max() < 0.7
    # a tight prior keeps coinpress
    tight = dict(kw, mean_bound=20.0, cov_bounds=(1.0, 10.0))
    assert pg.PrivateGaussian(**tight).fit(X).method_ == "coinpress"
