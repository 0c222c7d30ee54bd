"""Budget plans as data (privacy/plans.py) and child ledgers (Accountant.child / prepaid):
every plan composes to its total, and no sub-computation's ledger entries are dropped."""

from __future__ import annotations

import math
import pickle

import pytest

from privgauss.exceptions import PrivacyBudgetError
from privgauss.privacy import (
    ZCDP,
    Accountant,
    ApproxDP,
    BudgetPlan,
    LedgerEntry,
    PureDP,
    approx_to_zcdp,
    composed,
)

# ---------------------------------------------------------------------------- BudgetPlan


def test_zcdp_split_sums_to_the_total_and_is_looked_up_by_name() -> None:
    plan = BudgetPlan.zcdp(ZCDP(0.5), {"mean": 1.0, "covariance": 3.0})
    assert plan["mean"] == ZCDP(0.125) and plan["covariance"] == ZCDP(0.375)
    assert plan.names() == ["mean", "covariance"] and len(plan) == 2 and "mean" in plan
    assert plan[0] == ZCDP(0.125) and plan[1:] == [ZCDP(0.375)]
    assert plan.sums_to_total() and plan.composed() == ZCDP(0.5)
    with pytest.raises(KeyError, match="no part 'median'"):
        plan["median"]


def test_basic_split_of_epsilon_and_delta() -> None:
    total = ApproxDP(1.0, 1e-6)
    plan = BudgetPlan.basic(total, {"search": 3.0, "hist": 1.0}, {"search": 0.0, "hist": 1.0})
    assert plan["search"] == PureDP(0.75) and plan["hist"] == ApproxDP(0.25, 1e-6)
    assert plan.sums_to_total()
    assert composed(total, plan.budgets()) == ApproxDP(1.0, 1e-6)


def test_pure_split_and_a_mixed_plan_under_an_approx_total() -> None:
    assert BudgetPlan.pure(PureDP(2.0), {"a": 1, "b": 1}).budgets() == [PureDP(1.0)] * 2
    total = ApproxDP(1.0, 1e-6)
    rho = approx_to_zcdp(0.6, 1e-6)  # what a zCDP part may use of the ε the pure part leaves
    plan = BudgetPlan.of(total, {"radius": PureDP(0.4), "noise": ZCDP(rho)})
    assert plan.sums_to_total()
    assert math.isclose(plan.composed().epsilon, 1.0, rel_tol=1e-9)


def test_a_plan_over_its_total_or_short_of_an_exact_total_is_refused() -> None:
    with pytest.raises(PrivacyBudgetError, match="do not compose within"):
        BudgetPlan.of(ZCDP(0.5), {"a": ZCDP(0.3), "b": ZCDP(0.3)})
    with pytest.raises(PrivacyBudgetError, match="compose to 0.4-zCDP, not to its total"):
        BudgetPlan.of(ZCDP(0.5), {"a": ZCDP(0.2), "b": ZCDP(0.2)})
    under = BudgetPlan.of(ZCDP(0.5), {"a": ZCDP(0.2), "b": ZCDP(0.2)}, exact=False)
    assert not under.sums_to_total()
    with pytest.raises(PrivacyBudgetError):  # approximate DP does not fit a zCDP total
        BudgetPlan.of(ZCDP(0.5), {"a": ApproxDP(0.1, 1e-9)}, exact=False)
    with pytest.raises(ValueError, match="unique names"):
        BudgetPlan(ZCDP(0.5), (("a", ZCDP(0.25)), ("a", ZCDP(0.25))))
    with pytest.raises(ValueError, match="positive finite weights"):
        BudgetPlan.zcdp(ZCDP(0.5), {"a": 1.0, "b": 0.0})


def test_reserve_refuses_the_whole_plan_before_anything_is_spent() -> None:
    plan = BudgetPlan.zcdp(ZCDP(0.5), {"a": 1.0, "b": 1.0})
    shared = Accountant(ZCDP(1.0))
    shared.spend(ZCDP(0.7), step="earlier fit")
    fit = Accountant(ZCDP(0.5), parent=shared)  # fits its own total, not the shared one
    with pytest.raises(PrivacyBudgetError, match="cannot afford my step"):
        plan.reserve(fit, "my step")
    assert fit.ledger == [] and len(shared.ledger) == 1
    plan.reserve(Accountant(ZCDP(0.5)), "my step")  # affordable: nothing raised, nothing spent


def test_after_lists_what_a_failure_leaves_to_charge() -> None:
    plan = BudgetPlan.zcdp(ZCDP(1.0), {"a": 1.0, "b": 1.0, "c": 2.0})
    assert plan.after("a") == [ZCDP(0.25), ZCDP(0.5)]
    assert plan.after("b", inclusive=True) == [ZCDP(0.25), ZCDP(0.5)]
    assert plan.after("c") == []


def test_plan_display_and_dict() -> None:
    plan = BudgetPlan.zcdp(ZCDP(0.5), {"mean": 1.0, "covariance": 3.0})
    text = str(plan)
    assert "0.5-zCDP" in text and "covariance  0.375-zCDP" in text and "exactly" in text
    d = plan.to_dict()
    assert d["total"] == {"notion": "zCDP", "rho": 0.5} and d["exact"] is True
    assert [p["step"] for p in d["parts"]] == ["mean", "covariance"]
    assert d["parts"][1]["cost"] == {"notion": "zCDP", "rho": 0.375}


# ---------------------------------------------------------------------------- child ledgers


def test_a_child_is_charged_in_its_parent_under_its_name() -> None:
    parent = Accountant(ApproxDP(2.0, 1e-6))
    child = parent.child("producer-1", ApproxDP(1.0, 1e-6))
    child.spend(PureDP(0.5), step="noise", mechanism="laplace")
    grandchild = child.child("inner")
    grandchild.spend(PureDP(0.25), step="count")
    assert [e.step for e in child.ledger] == ["noise", "inner/count"]
    assert [e.step for e in parent.ledger] == ["producer-1/noise", "producer-1/inner/count"]
    assert parent.spent == ApproxDP(0.75, 0.0)
    with pytest.raises(PrivacyBudgetError):  # beyond the child's own total
        child.spend(PureDP(0.3))
    assert len(parent.ledger) == 2
    with pytest.raises(ValueError, match="needs a name"):
        parent.child("")


def test_a_prepaid_sub_computation_keeps_its_entries_under_the_entry_that_paid() -> None:
    shared = Accountant(ApproxDP(4.0, 1e-6))
    fit = Accountant(ApproxDP(2.0, 1e-6), parent=shared)
    paid = fit.spend(ApproxDP(1.0, 1e-7), step="level-1/enclosing", mechanism="parallel nodes")
    # a search on a 10% subsample may use the amplified budget under that one charge
    node = fit.prepaid(paid, ApproxDP(3.0, 1e-6), "root/A")
    node.spend(PureDP(1.0), step="radius")
    inner = node.prepaid(node.ledger[0], PureDP(5.0), "sub")
    inner.spend(PureDP(5.0), step="scores")
    node.spend(ApproxDP(2.0, 1e-6), step="box")
    with pytest.raises(PrivacyBudgetError):  # the node's own total is enforced
        node.spend(PureDP(0.1), step="too much")
    # nothing more is charged to the fit or the shared total
    assert fit.spent == ApproxDP(1.0, 1e-7) and shared.spent == ApproxDP(1.0, 1e-7)
    assert [p.step for p in paid.parts] == ["root/A/radius", "root/A/box"]
    assert [p.step for p in paid.parts[0].parts] == ["sub/scores"]
    # the shared accountant's copy of the entry shows the same parts
    assert [p.step for p in shared.ledger[0].parts] == ["root/A/radius", "root/A/box"]
    d = fit.to_dict()["ledger"][0]
    assert [p["step"] for p in d["parts"]] == ["root/A/radius", "root/A/box"]
    assert d["parts"][0]["parts"][0]["cost"] == {"notion": "pure", "epsilon": 5.0}
    back = LedgerEntry.from_dict(d)
    assert back == fit.ledger[0] and [p.step for p in back.parts[0].parts] == ["sub/scores"]
    assert "parts" not in fit.to_dict()["ledger"][0]["parts"][1]  # none: no key
    with pytest.raises(ValueError, match="entry of this accountant"):
        Accountant(ApproxDP(1.0, 1e-6)).prepaid(paid, PureDP(1.0))


def test_parts_survive_pickling_of_a_read_only_record() -> None:
    acct = Accountant(ZCDP(1.0))
    paid = acct.spend(ZCDP(1.0), step="two halves")
    acct.prepaid(paid, ZCDP(1.0)).spend(ZCDP(0.5), step="half/mean")
    blob = pickle.dumps(acct)
    del acct, paid
    import gc

    gc.collect()
    record = pickle.loads(blob)
    assert [p.step for p in record.ledger[0].parts] == ["half/mean"]
