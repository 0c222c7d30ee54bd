"""The :class:`LedgerEntry`: one release as the :class:`~privgauss.privacy.Accountant` records it
— public metadata only (step, mechanism, cost, sensitivity, noise scale), never data values —
and its dictionary form for model files. Re-exported by :mod:`.accountant`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .budgets import Budget, budget_from_dict, budget_to_dict

__all__ = ["LedgerEntry"]


@dataclass(frozen=True)
class LedgerEntry:
    """One release: public metadata only, never data values.

    ``parts`` lists the releases of a sub-computation whose whole cost is this entry's
    ``cost`` (a search run on a subsample under an amplified budget, or one node of a level
    whose nodes are charged once by parallel composition): they are kept here, under the entry
    that paid for them (see :meth:`Accountant.prepaid`), not added to the total. Their
    ``step`` names start with the sub-computation's name.

    Parameters
    ----------
    step : str
        The step of the algorithm that released (e.g. ``"coinpress/mean-1"``).
    mechanism : str
        The mechanism (e.g. ``"gaussian"``, ``"laplace"``, ``"count-discrete-gaussian"``).
    cost : Budget
        What the release cost.
    sensitivity, noise_scale : float, optional
        The released statistic's sensitivity and the noise's scale, when they apply.
    note : str, optional
        Free text (public facts only).
    parts : list of LedgerEntry
        The releases of a prepaid sub-computation (not added to the total).

    Attributes
    ----------
    step, mechanism, cost, sensitivity, noise_scale, note, parts
        As given.

    Examples
    --------
    >>> import privgauss as pg
    >>> acct = pg.Accountant(pg.ZCDP(1.0))
    >>> entry = acct.spend(pg.ZCDP(0.25), step="mean", mechanism="gaussian")
    >>> acct.ledger[0].step, str(acct.ledger[0].cost)
    ('mean', '0.25-zCDP')
    """

    step: str
    mechanism: str
    cost: Budget
    sensitivity: float | None = None
    noise_scale: float | None = None
    note: str = ""
    # filled while the sub-computation runs (the same list in every ancestor's copy of the
    # entry); not part of the entry's value
    parts: list[LedgerEntry] = field(default_factory=list, compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "step": self.step,
            "mechanism": self.mechanism,
            "cost": budget_to_dict(self.cost),
            "sensitivity": self.sensitivity,
            "noise_scale": self.noise_scale,
            "note": self.note,
        }
        if self.parts:
            out["parts"] = [p.to_dict() for p in self.parts]
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LedgerEntry:
        """The entry :meth:`to_dict` wrote (its parts included)."""
        return cls(
            str(d.get("step", "")),
            str(d.get("mechanism", "")),
            budget_from_dict(d["cost"]),
            d.get("sensitivity"),
            d.get("noise_scale"),
            str(d.get("note", "")),
            [cls.from_dict(p) for p in d.get("parts", ())],
        )
