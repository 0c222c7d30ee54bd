"""Privacy at the edges, at run time (issue #25, findings 3–5 and 7's accountant message): a
thread-safe accountant, one failure contract after the first charge, overflowing rows counted
as clipped."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import privgauss as pg
from privgauss.audit import fit_outcome
from privgauss.exceptions import EstimationFailed, PrivacyBudgetError
from privgauss.privacy import Accountant
from privgauss.warnings import BudgetSpentWarning, ClippedDataWarning

# ---------------------------------------------------------------------------------------------
# 3. threads


def _hammer(acct: Accountant, cost: pg.ZCDP, n_threads: int, per_thread: int) -> list[int]:
    """Charge ``cost`` from many threads at once; the number of charges each thread made."""
    made = [0] * n_threads
    start = threading.Barrier(n_threads)

    def work(i: int) -> None:
        start.wait()
        for _ in range(per_thread):
            try:
                acct.spend(cost, step="tiny")
            except PrivacyBudgetError:
                continue
            made[i] += 1

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return made


@pytest.mark.parametrize("shared_parent", [False, True], ids=["one", "child-of-shared"])
def test_many_threads_never_overdraw_nor_lose_a_charge(monkeypatch, shared_parent):
    # make the check-then-act window wide: every composition check yields the GIL
    from privgauss.privacy import accountant as mod

    real_add = mod.Accountant._add

    def slow_add(self, cost, base=None):
        out = real_add(self, cost, base)
        threading.Event().wait(1e-5)
        return out

    monkeypatch.setattr(mod.Accountant, "_add", slow_add)
    root = Accountant(pg.ZCDP(1.0))
    acct = Accountant(pg.ZCDP(1.0), parent=root) if shared_parent else root
    made = _hammer(acct, pg.ZCDP(0.004), n_threads=8, per_thread=40)
    charged = sum(made) * 0.004
    assert sum(made) == 250  # exactly the budget: 1.0 / 0.004, none lost, none over
    assert len(root.ledger) == sum(made)
    assert charged <= 1.0 + 1e-9
    assert root.spent.rho == pytest.approx(charged, rel=1e-12)


def test_threaded_cross_validation_on_one_accountant_never_fails_after_spending():
    """sklearn's threading backend runs fits on one accountant at once; each fit holds the
    shared accountant from its reservation to its last release, so a fit is either refused
    before spending or completes: the total is exactly the fits that succeeded."""
    from joblib import parallel_backend
    from sklearn.model_selection import cross_validate

    X = np.random.default_rng(0).normal(size=(3000, 3))
    acct = pg.Accountant(pg.ZCDP(1.0))
    g = pg.PrivateGaussian(rho=0.15, accountant=acct, mean_bound=100.0,
                           cov_bounds=(1e-2, 1e2), random_state=0)
    with parallel_backend("threading", n_jobs=4), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = cross_validate(g, X, cv=8, error_score=np.nan, scoring=lambda e, X, y=None: 0.0)
    fitted = int(np.sum(np.isfinite(res["test_score"])))
    assert fitted == 6  # 6 × 0.15 ≤ 1.0 < 7 × 0.15: the other two are refused up front
    assert acct.spent.rho == pytest.approx(6 * 0.15)
    # every fit's entries are contiguous in the shared ledger: no interleaving
    steps = [e.step for e in acct.ledger]
    per_fit = len(steps) // fitted
    assert [steps[i * per_fit:(i + 1) * per_fit] for i in range(fitted)] == [
        steps[:per_fit]] * fitted


def test_refusal_reports_what_the_shared_accountant_spent():
    acct = pg.Accountant(pg.ZCDP(1.0))
    acct.spend(pg.ZCDP(0.9), step="earlier study")
    X = np.random.default_rng(0).normal(size=(30000, 3))
    for est in (pg.PrivateGaussian(rho=0.2, mean_bound=1e3, cov_bounds=(1e-2, 1e2)),
                pg.PrivateGaussianMixture(2, rho=0.2, mean_bound=1e3, cov_bounds=(1e-2, 1e2))):
        est.set_params(accountant=acct, random_state=0)
        with pytest.raises(PrivacyBudgetError, match=r"already spent 0\.9-zCDP of its total"):
            est.fit(X)
        assert len(acct.ledger) == 1


# ---------------------------------------------------------------------------------------------
# 4. one failure contract after the first charge


def _crash_on_charge(monkeypatch, number: int, error: Exception) -> None:
    """Make the ``number``-th charge of each fit's own accountant (a child of the shared one)
    raise ``error`` — as a singular matrix or NaN probabilities would, after spending."""
    real_spend = Accountant.spend
    counts: dict[int, int] = {}

    def spend(self, cost, **kw):
        if self.parent is not None and self.parent.parent is None and kw.get("step") != "unused":
            counts[id(self)] = counts.get(id(self), 0) + 1
            if counts[id(self)] == number:
                raise error
        return real_spend(self, cost, **kw)

    monkeypatch.setattr(Accountant, "spend", spend)


@pytest.mark.parametrize("error", [np.linalg.LinAlgError("Singular matrix"),
                                   ValueError("Probabilities contain NaN"),
                                   pg.InvalidDataError("matrix is singular"),
                                   FloatingPointError("overflow")],
                         ids=["linalg", "nan", "invalid-data", "overflow"])
@pytest.mark.parametrize("make", [
    lambda: pg.PrivateGaussian(rho=0.5, mean_bound=100.0, cov_bounds=(1e-2, 1e2)),
    lambda: pg.PrivateGaussian(epsilon=1.0, delta=1e-6),
    lambda: pg.PrivateGaussianMixture(2, epsilon=1.0, delta=1e-6, method="em"),
], ids=["coinpress", "histogram", "em"])
def test_an_error_after_spending_is_estimation_failed(monkeypatch, make, error):
    X = np.random.default_rng(1).normal(size=(30000, 2))
    _crash_on_charge(monkeypatch, 2, error)
    est = make().set_params(random_state=0)
    acct = pg.Accountant(est._budget())  # a shared total equal to the fit's budget
    est.set_params(accountant=acct)
    with pytest.warns(BudgetSpentWarning), pytest.raises(EstimationFailed) as info:
        est.fit(X)
    assert info.value.internal
    text = str(info.value)
    assert str(error) not in text and type(error).__name__ not in text  # nothing of it kept
    assert info.value.__cause__ is None and info.value.__suppress_context__
    # the ledger is kept, and the whole budget of the fit counts as spent
    assert acct.ledger[0].step != "unused" and acct.ledger[-1].step == "unused"
    assert composed_close(acct.spent, acct.total)


def composed_close(spent, budget) -> bool:
    if isinstance(budget, pg.ZCDP):
        return spent.rho == pytest.approx(budget.rho)
    return spent.epsilon == pytest.approx(budget.epsilon, rel=1e-6)


def test_an_error_before_spending_keeps_its_type(monkeypatch):
    X = np.random.default_rng(1).normal(size=(3000, 2))
    _crash_on_charge(monkeypatch, 1, ValueError("refused from public facts"))
    acct = pg.Accountant(pg.ZCDP(10.0))
    est = pg.PrivateGaussian(rho=0.5, mean_bound=100.0, cov_bounds=(1e-2, 1e2),
                             accountant=acct, random_state=0)
    with pytest.raises(ValueError, match="refused from public facts"):
        est.fit(X)
    assert acct.ledger == []


def test_the_audit_counts_a_wrapped_error_as_a_crash_not_a_dp_output(monkeypatch):
    X = np.random.default_rng(1).normal(size=(3000, 2))
    _crash_on_charge(monkeypatch, 2, np.linalg.LinAlgError("Singular matrix"))
    outcome = fit_outcome(pg.PrivateGaussian(rho=0.5, mean_bound=100.0,
                                             cov_bounds=(1e-2, 1e2), random_state=0), X)
    assert outcome.kind == "crashed"


def test_a_non_finite_release_is_a_failure_not_a_model(monkeypatch):
    from privgauss.estimators import gaussian as mod

    monkeypatch.setattr(mod.PrivateGaussian, "_inside_prior",
                        lambda self, m, c, *a, **kw: (m * np.inf, c))
    est = pg.PrivateGaussian(rho=0.5, mean_bound=100.0, cov_bounds=(1e-2, 1e2),
                             random_state=0)
    with pytest.warns(BudgetSpentWarning), pytest.raises(EstimationFailed, match="not finite"):
        est.fit(np.random.default_rng(1).normal(size=(3000, 2)))
    assert not hasattr(est, "mean_")


# ---------------------------------------------------------------------------------------------
# 5. overflow counts as clipped


@pytest.mark.parametrize("value", [1e150, -1e150])
def test_rows_that_overflow_in_the_frame_count_as_clipped(value):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20000, 4))
    bad = rng.random(20000) < 0.2
    X[bad] = value
    public = rng.normal(size=(50, 4))
    with pytest.warns(ClippedDataWarning):
        g = pg.PrivateGaussian(rho=0.5, method="public", random_state=0).fit(
            X, public_X=public)
    assert g.clipped_fraction_ == pytest.approx(bad.mean(), abs=0.02)  # was 0.015


def test_sanitized_rows_lie_outside_every_ball():
    from privgauss.clipped_stats import sanitize_rows, transform_rows

    Y = np.array([[1.0, 2.0], [np.inf, 0.0], [np.nan, 1.0], [3e150, 0.0]])
    out = sanitize_rows(Y)
    np.testing.assert_array_equal(out[0], Y[0])
    assert (np.abs(out[1:]) == 1e150).all()
    np.testing.assert_array_equal(sanitize_rows(out), out)  # a fixed point
    Z = transform_rows(np.array([[1e150, 1e150]]), np.full(2, 1e10))
    assert np.linalg.norm(Z) > 1e149
