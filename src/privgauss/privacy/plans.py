"""Budget plans as data: how an algorithm splits its total budget between its releases.

A :class:`BudgetPlan` is an immutable record of named parts (step name → budget) together
with the total they were made from. It is built from public quantities only (the total, n, d,
k, the method's knobs), before any data are touched, and it checks on construction that its
parts compose to the total under the accountant's rule (zCDP parts add up ρ; pure and
approximate parts compose basically; under an (ε, δ) total zCDP parts are converted together
with the δ the approximate parts leave, by the tight CKS20 bound). An algorithm then

* refuses the whole plan before anything is spent (:meth:`BudgetPlan.reserve`),
* charges each release its part (``plan[name]``), and
* after a failure (⊥) charges the parts it did not use, so the spent budget is data independent
  (:meth:`BudgetPlan.after`, :func:`~privgauss.privacy.accountant.charge_unused`).

``str(plan)`` and :meth:`BudgetPlan.to_dict` show the split (the docs and the ``requirements``
command print them).

Every registered method states its plan (``Method.plan(facts)``, named by the steps its fit's
ledger records), and :func:`ledger_mismatch` checks a fit's ledger against it step by step. A
part listed in ``groups`` stands for a sub-computation charged as several ledger entries
(``"<part> …"`` or ``"<part>/…"``) whose schedule may depend on DP outputs (a refinement planned
from a DP localisation); those entries compose to the part. ``branches`` are the alternative
plans a DP output may select instead (e.g. an extra release for tied axes).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from ..exceptions import PrivacyBudgetError
from .accountant import Accountant, composed, reserve
from .budgets import ZCDP, ApproxDP, Budget, PureDP, budget_to_dict

__all__ = ["BudgetPlan", "ledger_mismatch"]

_REL = 1e-9  # float slack of "composes to exactly the total"

_B = TypeVar("_B", PureDP, ZCDP, ApproxDP)


def _weights(weights: Mapping[str, float]) -> tuple[list[str], list[float], float]:
    names = list(weights)
    w = [float(weights[n]) for n in names]
    if not names or any(not math.isfinite(x) or x <= 0 for x in w):
        raise ValueError("a budget split needs at least one part and positive finite weights")
    return names, w, math.fsum(w)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= _REL * max(abs(a), abs(b))


@dataclass(frozen=True)
class BudgetPlan:
    """An immutable split of a total budget into named parts.

    Parameters
    ----------
    total : Budget
        The budget the plan was made from (the most its parts may compose to).
    parts : tuple of (str, Budget)
        The parts in the order the algorithm charges them; the names are unique.
    exact : bool, default True
        Whether the parts must compose to exactly ``total`` (else: within it).
    groups : frozenset of str, default empty
        Names of parts that a ledger records as several entries ``"<part> …"`` or
        ``"<part>/…"`` composing to the part (a sub-computation whose own schedule may depend on
        DP outputs).
    branches : tuple of BudgetPlan, default ()
        Alternative plans of the same total that DP outputs may select instead of this one.

    Raises
    ------
    PrivacyBudgetError
        When the parts do not compose within the total (or, with ``exact``, not to it).

    Examples
    --------
    >>> plan = BudgetPlan.zcdp(ZCDP(0.5), {"mean": 1.0, "covariance": 3.0})
    >>> plan["covariance"]
    ZCDP(rho=0.375)
    """

    total: Budget
    parts: tuple[tuple[str, Budget], ...]
    exact: bool = True
    groups: frozenset[str] = frozenset()
    branches: tuple[BudgetPlan, ...] = ()

    def __post_init__(self) -> None:
        parts = tuple((str(n), b) for n, b in self.parts)
        object.__setattr__(self, "parts", parts)
        object.__setattr__(self, "groups", frozenset(self.groups))
        object.__setattr__(self, "branches", tuple(self.branches))
        names = [n for n, _ in parts]
        if not self.groups <= set(names):
            raise ValueError(f"groups {sorted(self.groups)} must name parts of the plan {names}")
        if any(b.total != self.total for b in self.branches):
            raise PrivacyBudgetError("every branch of a budget plan must have its total")
        if not parts:
            raise PrivacyBudgetError("a budget plan needs at least one part")
        if len(set(names)) != len(names):
            raise ValueError(f"the parts of a budget plan need unique names, got {names}")
        if not all(isinstance(b, PureDP | ZCDP | ApproxDP) for _, b in parts):
            raise PrivacyBudgetError("every part of a budget plan must be a budget")
        got = composed(self.total, self.budgets())
        if got is None:
            raise PrivacyBudgetError(
                f"the parts of this budget plan do not compose within its total {self.total}"
            )
        if self.exact and not self._is_total(got):
            raise PrivacyBudgetError(
                f"the parts of this budget plan compose to {got}, not to its total {self.total}"
            )

    # -- constructors ----------------------------------------------------------------------
    @classmethod
    def of(cls, total: Budget, parts: Mapping[str, Budget], *, exact: bool = True,
           groups: Iterable[str] = (), branches: Iterable[BudgetPlan] = ()) -> BudgetPlan:
        """A plan from parts an algorithm computed itself (e.g. after a conversion).

        Parameters
        ----------
        total : Budget
            The total the parts were made from.
        parts : mapping of str to Budget
            Step name → budget, in charging order.
        exact : bool, default True
            Whether the parts must compose to exactly the total.
        groups : iterable of str, optional
            Parts a ledger records as several entries (see the class).
        branches : iterable of BudgetPlan, optional
            Alternative plans DP outputs may select (see the class).

        Returns
        -------
        BudgetPlan
        """
        return cls(total, tuple(parts.items()), exact, frozenset(groups), tuple(branches))

    def prefixed(self, prefix: str) -> BudgetPlan:
        """The same plan with every part (and every branch's) named ``prefix + name``: the
        names a caller's ledger records when the algorithm charges under its own step."""
        return BudgetPlan(self.total, tuple((prefix + n, b) for n, b in self.parts), self.exact,
                          frozenset(prefix + g for g in self.groups),
                          tuple(b.prefixed(prefix) for b in self.branches))

    @classmethod
    def zcdp(cls, total: ZCDP, weights: Mapping[str, float]) -> BudgetPlan:
        """ρ split in proportion to ``weights`` (zCDP composition: the ρ's add up).

        Parameters
        ----------
        total : ZCDP
        weights : mapping of str to float
            Step name → positive weight.

        Returns
        -------
        BudgetPlan
            Part i is ``ZCDP(ρ·w_i/Σw)``.
        """
        if not isinstance(total, ZCDP):
            raise PrivacyBudgetError(f"a zCDP split needs a ZCDP total, got {total}")
        names, w, s = _weights(weights)
        parts = tuple((n, ZCDP(total.rho * x / s)) for n, x in zip(names, w, strict=True))
        return cls(total, parts)

    @classmethod
    def basic(
        cls,
        total: ApproxDP,
        weights: Mapping[str, float],
        delta_weights: Mapping[str, float] | None = None,
    ) -> BudgetPlan:
        """(ε, δ) split by basic composition: ε in proportion to ``weights``, δ in proportion
        to ``delta_weights`` (default: the same weights).

        Parameters
        ----------
        total : ApproxDP
        weights : mapping of str to float
            Step name → positive ε weight.
        delta_weights : mapping of str to float, optional
            Step name → δ weight ≥ 0 (same names); a part with weight 0 is pure.

        Returns
        -------
        BudgetPlan
        """
        if not isinstance(total, ApproxDP):
            raise PrivacyBudgetError(f"a basic split needs an ApproxDP total, got {total}")
        names, w, s = _weights(weights)
        dw = [float((delta_weights or weights)[n]) for n in names]
        if any(not math.isfinite(x) or x < 0 for x in dw):
            raise ValueError("delta weights must be finite and >= 0")
        ds = math.fsum(dw)
        parts = []
        for n, x, y in zip(names, w, dw, strict=True):
            eps = total.epsilon * x / s
            delta = total.delta * y / ds if ds > 0 else 0.0
            parts.append((n, ApproxDP(eps, delta) if delta > 0 else PureDP(eps)))
        return cls(total, tuple(parts))

    @classmethod
    def pure(cls, total: PureDP, weights: Mapping[str, float]) -> BudgetPlan:
        """ε split in proportion to ``weights`` (basic composition of pure parts).

        Parameters
        ----------
        total : PureDP
        weights : mapping of str to float
            Step name → positive weight.

        Returns
        -------
        BudgetPlan
        """
        if not isinstance(total, PureDP):
            raise PrivacyBudgetError(f"a pure split needs a PureDP total, got {total}")
        names, w, s = _weights(weights)
        parts = tuple((n, PureDP(total.epsilon * x / s)) for n, x in zip(names, w, strict=True))
        return cls(total, parts)

    # -- lookup ----------------------------------------------------------------------------
    @overload
    def __getitem__(self, key: str | int) -> Budget: ...

    @overload
    def __getitem__(self, key: slice) -> list[Budget]: ...

    def __getitem__(self, key: str | int | slice) -> Budget | list[Budget]:
        """The part named ``key``; an int or a slice indexes the parts in charging order."""
        if isinstance(key, int | slice):
            return self.budgets()[key]
        for n, b in self.parts:
            if n == key:
                return b
        raise KeyError(f"no part {key!r} in this budget plan (parts: {self.names()})")

    def part(self, name: str, kind: type[_B]) -> _B:
        """The part named ``name``, which must be a ``kind`` budget (e.g. ``ZCDP``).

        Raises
        ------
        KeyError
            When there is no such part.
        TypeError
            When the part is of another notion.
        """
        b = self[name]
        if not isinstance(b, kind):
            raise TypeError(f"part {name!r} of this budget plan is {b}, not a {kind.__name__}")
        return b

    def __contains__(self, name: object) -> bool:
        return any(n == name for n, _ in self.parts)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.parts)

    def names(self) -> list[str]:
        """The part names, in charging order."""
        return [n for n, _ in self.parts]

    def budgets(self) -> list[Budget]:
        """The part budgets, in charging order."""
        return [b for _, b in self.parts]

    def after(self, name: str, *, inclusive: bool = False) -> list[Budget]:
        """The budgets of the parts charged after ``name`` (from it, with ``inclusive``): what
        a failure at ``name`` leaves to charge as unused."""
        names = self.names()
        if name not in names:
            raise KeyError(f"no part {name!r} in this budget plan")
        i = names.index(name) + (0 if inclusive else 1)
        return self.budgets()[i:]

    # -- composition -----------------------------------------------------------------------
    def composed(self) -> Budget:
        """What the parts compose to, in the total's notion."""
        got = composed(self.total, self.budgets())
        assert got is not None  # checked on construction
        return got

    def sums_to_total(self) -> bool:
        """Whether the parts compose to exactly the total (up to float rounding)."""
        return self._is_total(composed(self.total, self.budgets()))

    def _is_total(self, got: Budget | None) -> bool:
        """Whether ``got``, what the parts compose to, is exactly the total."""
        tot = self.total
        if got is None:
            return False
        if isinstance(tot, ZCDP):
            return isinstance(got, ZCDP) and _close(got.rho, tot.rho)
        if isinstance(tot, PureDP):
            return isinstance(got, PureDP) and _close(got.epsilon, tot.epsilon)
        assert isinstance(got, ApproxDP)
        # zCDP parts are converted with all the δ the others leave (got.delta is then the
        # total's δ), so both ε and δ are used up exactly
        return _close(got.epsilon, tot.epsilon) and _close(got.delta, tot.delta)

    def reserve(
        self, accountant: Accountant, what: str, *, approx_total: bool | None = None
    ) -> None:
        """Refuse the whole plan up front (nothing spent, nothing drawn) when ``accountant`` —
        or any parent it charges — cannot pay every part.

        Parameters
        ----------
        accountant : Accountant
        what : str
            The computation's name, for the refusal message.
        approx_total : bool, optional
            Whether the accountant must hold an ApproxDP total (default: when this plan's
            total is one).

        Raises
        ------
        PrivacyBudgetError
            When the accountant cannot afford the plan.
        """
        if approx_total is None:
            approx_total = isinstance(self.total, ApproxDP)
        reserve(accountant, self.budgets(), what, approx_total=approx_total)

    # -- display ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The plan as plain data: total, parts (step and cost, in order), exactness."""
        return {
            "total": budget_to_dict(self.total),
            "exact": self.exact,
            "parts": [{"step": n, "cost": budget_to_dict(b), "group": n in self.groups}
                      for n, b in self.parts],
            "branches": [b.to_dict() for b in self.branches],
        }

    def __str__(self) -> str:
        how = "exactly" if self.exact else "within"
        width = max(len(n) for n in self.names())
        lines = [f"budget plan of {self.total} (the parts compose to {how} the total):"]
        lines += [f"  {n.ljust(width)}  {b}{'  (several steps)' if n in self.groups else ''}"
                  for n, b in self.parts]
        lines += [f"  or, as DP outputs select, {b}".replace("\n", "\n  ") for b in self.branches]
        return "\n".join(lines)


def _same(a: float, b: float, rel: float) -> bool:
    return a == b or abs(a - b) <= rel * max(abs(a), abs(b))


def _equal(a: Budget, b: Budget | None, rel: float) -> bool:
    if isinstance(a, ZCDP):
        return isinstance(b, ZCDP) and _same(a.rho, b.rho, rel)
    if isinstance(a, PureDP):
        return isinstance(b, PureDP) and _same(a.epsilon, b.epsilon, rel)
    return (isinstance(b, ApproxDP) and _same(a.epsilon, b.epsilon, rel)
            and _same(a.delta, b.delta, rel))


def _mismatch_one(plan: BudgetPlan, entries: Sequence[Any], rel: float) -> str | None:
    i = 0
    for name, part in plan.parts:
        if name in plan.groups:
            j = i
            while j < len(entries) and (entries[j].step == name or entries[j].step.startswith(
                    (name + " ", name + "/"))):
                j += 1
            if j == i:
                got = entries[i].step if i < len(entries) else "the end of the ledger"
                return f"ledger entry {i}: expected the steps of {name!r}, got {got!r}"
            total = composed(part, [e.cost for e in entries[i:j]])
            if not _equal(part, total, rel):
                return (f"ledger entries {i}..{j - 1} ({name!r}) compose to {total}, "
                        f"planned {part}")
            i = j
            continue
        if i >= len(entries):
            return f"the ledger ends before the planned step {name!r}"
        entry = entries[i]
        if entry.step != name:
            return f"ledger entry {i}: step {entry.step!r}, planned {name!r}"
        if not _equal(part, entry.cost, rel):
            return f"ledger entry {i} ({name!r}) costs {entry.cost}, planned {part}"
        i += 1
    if i < len(entries):
        return f"ledger entry {i} ({entries[i].step!r}) is not in the plan"
    return None


def ledger_mismatch(plan: BudgetPlan, entries: Sequence[Any], *,
                    rel: float = 1e-12) -> str | None:
    """Why a ledger does not follow ``plan`` step by step, or None when it does.

    ``entries`` (a fit's top-level :class:`~privgauss.privacy.LedgerEntry` list) follow the
    plan when, in order, each part is one entry of the part's name and cost (relative
    tolerance ``rel`` on ρ, ε and δ) — or, for a part in ``plan.groups``, one or more
    consecutive entries named ``"<part>"``, ``"<part> …"`` or ``"<part>/…"`` that compose to
    its cost — and no entry is left over; or when they follow one of ``plan.branches``.

    Parameters
    ----------
    plan : BudgetPlan
    entries : sequence of LedgerEntry
    rel : float
        Relative tolerance of the amounts (float rounding of the shares).

    Returns
    -------
    str or None
        The first difference (of the plan itself when no branch matches either), or None.
    """
    first = _mismatch_one(plan, entries, rel)
    if first is None or any(_mismatch_one(b, entries, rel) is None for b in plan.branches):
        return None
    return first
