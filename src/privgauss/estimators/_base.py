"""Shared plumbing of the estimators: budgets, accountants, privacy reports."""

from __future__ import annotations

import contextlib
import sys
import warnings
from collections.abc import Iterator
from types import FrameType
from typing import Any

import numpy as np

from ..accounting import (
    ZCDP,
    Accountant,
    ApproxDP,
    Budget,
    PureDP,
    approx_to_zcdp,
    budget_to_dict,
    make_budget,
)
from ..exceptions import EstimationFailed, PrivacyBudgetError
from ..noise import NoiseSource
from ..warnings import BudgetSpentWarning, LargeDeltaWarning, SeededNoiseWarning

NEIGHBOURS = "replace-one (n public)"


class BudgetMixin:
    """Turns the estimator's budget keywords into a per-fit accountant."""

    rho: float | None
    epsilon: float | None
    delta: float | None
    accountant: Accountant | None

    def _budget(self) -> Budget:
        if self.rho is None and self.epsilon is None and self.accountant is not None:
            remaining = self.accountant.remaining
            if remaining is None:
                raise PrivacyBudgetError("the shared accountant has no budget left")
            return remaining
        return make_budget(rho=self.rho, epsilon=self.epsilon, delta=self.delta)

    def _refuse_invalid_budget(self) -> None:
        """Raise :class:`PrivacyBudgetError` for an invalid budget (<= 0, NaN, inf, delta >= 1,
        missing or ambiguous) or a shared ``accountant=`` that cannot spend here (a read-only
        record: unpickled without its live original, or inherited by a forked process) — the
        first thing ``fit`` does, before any data is read."""
        if isinstance(self.accountant, Accountant) and not self.accountant.spendable:
            raise PrivacyBudgetError(
                "accountant= is a read-only record (unpickled in another process or after its "
                "original was garbage-collected, or inherited by a forked process): it cannot "
                "spend; pass the original Accountant, in the process that created it"
            )
        self._budget()

    def _fit_accountant(self, budget: Budget) -> Accountant:
        """An accountant for this fit's budget, forwarding to the shared one if given."""
        if self.accountant is not None and not isinstance(self.accountant, Accountant):
            raise TypeError("accountant must be a privgauss.Accountant")
        return Accountant(budget, parent=self.accountant)

    def _warn_before_fit(self, budget: Budget, n_rows: int, noise: NoiseSource) -> None:
        """The fit's privacy warnings, from public quantities (see :func:`warn_before_fit`)."""
        warn_before_fit(budget, n_rows, noise)


@contextlib.contextmanager
def private_section() -> Iterator[None]:
    """The algorithm part of a fit, after the trust boundary: floating-point exceptions are
    ignored (``np.errstate``: the algorithms sanitise non-finite values per record) and every
    warning raised inside — numpy's, or a non-private learner's such as scikit-learn's
    ``ConvergenceWarning`` — is captured and dropped, never re-emitted, since whether it fires
    can depend on one record (DESIGN.md, privacy rule 10). The estimators warn only outside
    this section, from public quantities and DP outputs: when the section ends in
    :class:`~privgauss.exceptions.EstimationFailed` (⊥, a DP output), a
    :class:`~privgauss.warnings.BudgetSpentWarning` is emitted after the capture has ended,
    just before the exception propagates."""
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    except EstimationFailed:
        _warn(
            BudgetSpentWarning,
            "the fit failed (EstimationFailed, a DP output): the privacy budget it charged "
            "stays spent and nothing was released; count it before retrying on the same rows",
        )
        raise


# frames of these modules are skipped so that a warning points at the code that called fit
_INTERNAL_MODULES = ("privgauss", "sklearn", "contextlib")


def _warn(category: type[Warning], message: str) -> None:
    """Emit ``message`` attributed to the first caller outside privgauss (and outside
    scikit-learn's or contextlib's wrappers), so the default filter shows it once per call
    site of ``fit``."""
    level = 1
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if not any(name == m or name.startswith(m + ".") for m in _INTERNAL_MODULES):
            break
        level, frame = level + 1, frame.f_back
    warnings.warn(message, category, stacklevel=level + 1)


def warn_before_fit(budget: Budget, n_rows: int, noise: NoiseSource) -> None:
    """Emit the privacy warnings a fit is due before its algorithm runs, decided from public
    quantities only (DESIGN.md, rules 5 and 10) — the same on any two neighbouring datasets:

    * :class:`~privgauss.warnings.SeededNoiseWarning` when the noise source is seeded
      (``random_state`` an int or a Generator), not secure;
    * :class:`~privgauss.warnings.LargeDeltaWarning` when the budget is (ε, δ) with
      ``δ ≥ 1/n_rows`` (``n_rows`` is public under replace-one neighbours).

    Called by each estimator's ``fit`` once the budget is known and every refusal is done,
    before anything is charged."""
    if not noise.secure:
        _warn(
            SeededNoiseWarning,
            "random_state is set: the privacy noise comes from numpy's seeded generator, which "
            "is reproducible but predictable and not hardened against floating-point attacks; "
            "fine for experiments and tests, but fit with random_state=None (secure noise) to "
            "release results from real private data",
        )
    if isinstance(budget, ApproxDP) and budget.delta > 0 and budget.delta >= 1.0 / n_rows:
        _warn(
            LargeDeltaWarning,
            f"delta = {budget.delta:g} is at least 1/n = 1/{n_rows}: an (epsilon, delta) "
            "guarantee this weak allows publishing a record outright; choose delta well below "
            "1/n (e.g. 1/n^2 or 1e-6 .. 1e-10), or a rho-zCDP budget",
        )


def zcdp_of(budget: Budget, what: str) -> float:
    """The ρ a zCDP algorithm may use within ``budget`` (ApproxDP: the largest ρ implying it)."""
    if isinstance(budget, ZCDP):
        return budget.rho
    if isinstance(budget, ApproxDP) and budget.delta > 0:
        return approx_to_zcdp(budget.epsilon, budget.delta)
    raise PrivacyBudgetError(
        f"{what} is a zCDP algorithm and cannot give a pure epsilon-DP guarantee; pass rho= or "
        "epsilon= with delta=, or choose a pure-DP method"
    )


def privacy_report(budget: Budget, acct: Accountant) -> dict[str, Any]:
    spent = acct.spent
    report: dict[str, Any] = {
        "budget": budget_to_dict(budget),
        "spent": None if spent is None else budget_to_dict(spent),
        "neighbours": NEIGHBOURS,
        "ledger": [e.to_dict() for e in acct.ledger],
    }
    if isinstance(budget, ZCDP):
        report["approx_dp_at_delta_1e-6"] = budget_to_dict(budget.to_approx(1e-6))
    return report


def is_pure(budget: Budget) -> bool:
    return isinstance(budget, PureDP) or (isinstance(budget, ApproxDP) and budget.delta == 0)
