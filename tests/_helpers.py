"""Small assertions shared by several test modules."""

from __future__ import annotations

import math

from privgauss.accounting import Accountant, ApproxDP


def spent_equals(acct: Accountant, eps: float, delta: float) -> bool:
    """Whether ``acct`` spent exactly (ε, δ) — up to float rounding of the composition."""
    spent = acct.spent
    return (
        isinstance(spent, ApproxDP)
        and math.isclose(spent.epsilon, eps, rel_tol=1e-7)
        and math.isclose(spent.delta, delta, rel_tol=1e-12)
    )
