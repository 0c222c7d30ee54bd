"""An Accountant is an identity, not a value (DESIGN rule 12: copies and clones of an estimator
share its accountant): copying, cloning or pickling an estimator never duplicates a budget."""

from __future__ import annotations

import copy
import gc
import multiprocessing
import os
import pickle
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import privgauss as pg

X = np.random.default_rng(0).normal(size=(500, 2))
PRIOR = {"mean_bound": 10.0, "cov_bounds": (0.1, 10.0)}


def _pickled(obj: Any) -> Any:
    return pickle.loads(pickle.dumps(obj))


def _sklearn_clone(est: Any) -> Any:
    base = pytest.importorskip("sklearn.base")
    if not hasattr(est, "get_params"):
        pytest.skip("the estimators do not implement get_params yet: sklearn cannot clone them")
    return base.clone(est)


COPIERS: dict[str, Callable[[Any], Any]] = {
    "copy": copy.copy,
    "deepcopy": copy.deepcopy,
    "pickle": _pickled,
    "sklearn-clone": _sklearn_clone,
}


def test_copies_of_an_accountant_are_the_accountant() -> None:
    acct = pg.Accountant(pg.ZCDP(1.0))
    acct.spend(pg.ZCDP(0.25), step="s")
    for copier in (copy.copy, copy.deepcopy, _pickled):
        assert copier(acct) is acct
    assert copy.deepcopy({"a": acct, "b": [acct]})["b"][0] is acct
    # identity semantics: an equal-looking accountant is another budget
    twin = pg.Accountant(pg.ZCDP(1.0))
    twin.spend(pg.ZCDP(0.25), step="s")
    assert twin != acct and len({acct, twin, acct}) == 2
    # a child (one fit's accountant) and its shared parent both resolve to themselves
    child = pg.Accountant(pg.ZCDP(0.5), parent=acct)
    back = _pickled(child)
    assert back is child and back.parent is acct


@pytest.mark.parametrize("how", list(COPIERS))
def test_copies_of_an_estimator_cannot_spend_the_budget_again(how: str) -> None:
    acct = pg.Accountant(pg.ZCDP(1.0))
    est = pg.PrivateGaussian(rho=0.4, accountant=acct, random_state=0, **PRIOR)
    copies = [COPIERS[how](est), COPIERS[how](est)]
    assert all(c.accountant is acct for c in copies)
    spent = []
    refused = 0
    for e in (est, *copies):
        try:
            e.fit(X)
        except pg.PrivacyBudgetError:
            refused += 1
        else:
            spent.append(e.privacy_spent_.rho)
        assert acct.spent.rho <= 1.0 * (1 + 1e-9)  # never more than the shared total
    # each fit needs 0.4 of the 1.0: two fit, the third is refused (with separate copies of
    # the accountant, all three would have fit: 1.2 spent of a 1.0 budget)
    assert spent == pytest.approx([0.4, 0.4]) and refused == 1
    assert acct.spent.rho == pytest.approx(sum(spent))


@pytest.mark.parametrize("how", list(COPIERS))
def test_copies_share_an_accountant_spent_to_exhaustion(how: str) -> None:
    # no rho/epsilon: each fit takes what is left of the shared accountant
    acct = pg.Accountant(pg.ZCDP(0.6))
    est = pg.PrivateGaussian(accountant=acct, random_state=0, **PRIOR)
    clone = COPIERS[how](est)
    est.fit(X)
    assert acct.remaining is None and acct.spent.rho == pytest.approx(0.6)
    with pytest.raises(pg.PrivacyBudgetError):
        clone.fit(X)
    with pytest.raises(pg.PrivacyBudgetError):
        COPIERS[how](clone).fit(X)
    assert acct.spent.rho == pytest.approx(0.6)


@pytest.mark.parametrize("how", ["copy", "deepcopy", "pickle"])
def test_mixture_copies_share_the_accountant(how: str) -> None:
    acct = pg.Accountant(pg.ApproxDP(1.0, 1e-6))
    m = pg.PrivateGaussianMixture(2, epsilon=0.5, delta=1e-7, accountant=acct)
    assert COPIERS[how](m).accountant is acct


def test_fitted_estimators_deepcopy_and_pickle(tmp_path: Path) -> None:
    acct = pg.Accountant(pg.ZCDP(1.0))
    g = pg.PrivateGaussian(rho=0.5, accountant=acct, random_state=0, **PRIOR).fit(X)
    for other in (copy.deepcopy(g), _pickled(g)):
        assert other.accountant is acct and other.accountant_ is g.accountant_
        assert other.to_dict() == g.to_dict()
        np.testing.assert_array_equal(other.mean_, g.mean_)
        np.testing.assert_array_equal(other.score_samples(X[:5]), g.score_samples(X[:5]))
        pg.io.save(other, tmp_path / "m.json")
        assert pg.load(tmp_path / "m.json").to_dict()["privacy"] == g.to_dict()["privacy"]
    # a loaded model's accountant is a fresh record of the file's ledger; copying keeps it
    loaded = pg.load(tmp_path / "m.json")
    assert copy.deepcopy(loaded).accountant_ is loaded.accountant_


def test_unpickled_without_its_original_an_accountant_is_read_only() -> None:
    acct = pg.Accountant(pg.ZCDP(1.0))
    g = pg.PrivateGaussian(rho=0.3, accountant=acct, random_state=0, **PRIOR).fit(X)
    report = g.to_dict()["privacy"]
    blob, acct_blob = pickle.dumps(g), pickle.dumps(acct)
    del g, acct
    gc.collect()
    back = pickle.loads(acct_blob)
    assert not back.spendable and not back.can_spend(pg.ZCDP(1e-3))
    assert back.spent.rho == pytest.approx(0.3) and len(back.ledger) > 0
    assert back.remaining is None and back.remaining_zcdp() == 0.0
    with pytest.raises(pg.PrivacyBudgetError, match="read-only"):
        back.spend(pg.ZCDP(1e-3))
    assert pickle.loads(acct_blob) is back  # one record per key, not one per unpickling
    est = pickle.loads(blob)
    assert est.accountant is back and est.to_dict()["privacy"] == report
    with pytest.raises(pg.PrivacyBudgetError, match="read-only"):
        est.fit(X)  # refused before the data is read
    assert back.spent.rho == pytest.approx(0.3)


def _spend_in_child(acct: pg.Accountant, blob: bytes, out: Any) -> None:
    results = []
    for a in (acct, pickle.loads(blob)):
        try:
            a.spend(pg.ZCDP(0.1))
        except pg.PrivacyBudgetError:
            results.append("refused")
        else:
            results.append("spent")
    out.put(results)


@pytest.mark.skipif(sys.platform == "win32", reason="needs fork")
def test_a_forked_child_cannot_spend_the_parents_accountant() -> None:
    acct = pg.Accountant(pg.ZCDP(1.0))
    blob = pickle.dumps(acct)
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    proc = ctx.Process(target=_spend_in_child, args=(acct, blob, out))
    proc.start()
    results = out.get(timeout=60)
    proc.join(timeout=60)
    assert results == ["refused", "refused"]
    acct.spend(pg.ZCDP(1.0))  # the parent still spends its whole budget, once
    assert acct.remaining is None


def test_unpickled_in_another_process_an_accountant_is_read_only(tmp_path: Path) -> None:
    acct = pg.Accountant(pg.ZCDP(1.0))
    g = pg.PrivateGaussian(rho=0.4, accountant=acct, random_state=0, **PRIOR).fit(X)
    (tmp_path / "est.pkl").write_bytes(pickle.dumps(g))
    np.save(tmp_path / "X.npy", X)
    (tmp_path / "report.pkl").write_bytes(pickle.dumps(g.to_dict()))
    script = textwrap.dedent(
        """
        import pickle, sys
        import numpy as np
        import privgauss as pg
        d = sys.argv[1]
        g = pickle.load(open(d + "/est.pkl", "rb"))
        X = np.load(d + "/X.npy")
        assert g.to_dict() == pickle.load(open(d + "/report.pkl", "rb"))
        assert not g.accountant.spendable and not g.accountant_.spendable
        assert abs(g.accountant.spent.rho - 0.4) < 1e-12 and g.accountant.remaining is None
        for spend in (lambda: g.accountant.spend(pg.ZCDP(0.1)),
                      lambda: g.accountant_.spend(pg.ZCDP(0.01)),
                      lambda: g.fit(X)):
            try:
                spend()
            except pg.PrivacyBudgetError:
                pass
            else:
                raise SystemExit("a budget was spent twice")
        g.score_samples(X[:3])
        print("read-only")
        """
    )
    src = str(Path(pg.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    res = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True,
                         text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "read-only"
    # meanwhile the original still has its 0.6 left, here
    assert acct.spendable and acct.remaining.rho == pytest.approx(0.6)


def test_reservation_checks_change_nothing() -> None:
    from privgauss.privacy import reserve

    shared = pg.Accountant(pg.ApproxDP(1.0, 1e-6))
    fit = pg.Accountant(pg.ApproxDP(2.0, 1e-6), parent=shared)
    parts = [pg.ApproxDP(0.4, 2e-7), pg.ApproxDP(0.4, 2e-7)]
    assert fit.can_spend_all(parts) and shared.can_spend_all(parts)
    assert not fit.can_spend_all([*parts, pg.PureDP(0.3)])  # the shared total refuses
    assert fit.can_spend_all([*parts, pg.PureDP(0.3)], parents=False)
    assert not pg.Accountant(pg.PureDP(1.0)).can_spend_all([pg.ZCDP(0.1)])  # wrong notion
    reserve(fit, parts, "a test")
    with pytest.raises(pg.PrivacyBudgetError, match="cannot afford"):
        reserve(fit, [*parts, pg.PureDP(0.3)], "a test")
    # (reserve used to trial-spend a deepcopy and detach its parent: with copies being the
    # accountant itself that would have spent, and cut, the real one)
    assert fit.parent is shared and fit.ledger == [] and shared.ledger == []
    assert fit.spent is None and shared.spent is None
