"""Privacy accounting: budgets and their conversions (:mod:`.budgets`), the
:class:`Accountant` every release is charged to, with reservations (:mod:`.accountant`), its
:class:`LedgerEntry` records (:mod:`.ledger`), and budget plans as data (:mod:`.plans`).

This is the lowest layer of the library: it imports nothing of privgauss but the exception
types, and everything else charges its releases here.
"""

from __future__ import annotations

from .accountant import (
    Accountant,
    charge_rest,
    charge_unused,
    check_accountant,
    composed,
    reserve,
    reserve_rho,
)
from .budgets import (
    ZCDP,
    ApproxDP,
    Budget,
    PureDP,
    amplified_budget,
    approx_to_zcdp,
    as_rho,
    budget_from_dict,
    budget_notion,
    budget_to_dict,
    check_delta,
    check_rho,
    compose_advanced,
    compose_basic,
    compose_zcdp,
    delta_at_least,
    estimator_kwargs,
    has_delta,
    is_pure,
    make_budget,
    pure_epsilon,
    scaled,
    split,
    zcdp_of,
    zcdp_rest,
    zcdp_to_delta,
    zcdp_to_epsilon,
)
from .ledger import LedgerEntry
from .plans import BudgetPlan, ledger_mismatch

__all__ = [
    "ZCDP",
    "Accountant",
    "ApproxDP",
    "Budget",
    "BudgetPlan",
    "ledger_mismatch",
    "LedgerEntry",
    "PureDP",
    "amplified_budget",
    "approx_to_zcdp",
    "as_rho",
    "budget_from_dict",
    "budget_notion",
    "budget_to_dict",
    "charge_rest",
    "charge_unused",
    "check_accountant",
    "check_delta",
    "check_rho",
    "compose_advanced",
    "compose_basic",
    "compose_zcdp",
    "delta_at_least",
    "estimator_kwargs",
    "has_delta",
    "is_pure",
    "composed",
    "make_budget",
    "pure_epsilon",
    "reserve",
    "reserve_rho",
    "scaled",
    "split",
    "zcdp_of",
    "zcdp_rest",
    "zcdp_to_delta",
    "zcdp_to_epsilon",
]
