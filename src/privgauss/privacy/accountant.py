"""The :class:`Accountant`: every release is charged to it *before* any noise is drawn.

A charge that would exceed the total raises :class:`~privgauss.exceptions.PrivacyBudgetError`
and leaves the accountant unchanged. One ledger entry per release, public metadata only
(:class:`~privgauss.privacy.ledger.LedgerEntry`).
"""

from __future__ import annotations

import math
import os
import secrets
import threading
import weakref
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, replace
from typing import Any

from ..exceptions import PrivacyBudgetError
from ..progress import released
from .budgets import (
    MIN_EPS,
    REL_TOL,
    ZCDP,
    ApproxDP,
    Budget,
    PureDP,
    approx_to_zcdp,
    budget_to_dict,
    has_delta,
    zcdp_to_epsilon,
)
from .ledger import LedgerEntry


@dataclass
class _Totals:
    rho: float = 0.0  # zCDP charges (pure charges too, under a zCDP total)
    eps: float = 0.0  # pure / approximate charges, basic composition
    delta: float = 0.0


# Accountants that have been pickled, by their random key: the live one in its own process, or
# the read-only record an unpickling made here (see Accountant.__reduce__).
_BY_KEY: weakref.WeakValueDictionary[str, Accountant] = weakref.WeakValueDictionary()

_READ_ONLY = (
    "this Accountant is a read-only record: it was unpickled where its live original does not "
    "exist (another process, or after the original was garbage-collected) or inherited by a "
    "forked process, so spending through it could spend the same budget twice; spend through "
    "the original Accountant, in the process that created it"
)


@dataclass(eq=False)
class Accountant:
    """Charges releases against a total budget and refuses any charge that would exceed it.

    * A :class:`PureDP` total accepts pure charges only (basic composition).
    * A :class:`ZCDP` total accepts zCDP and pure charges (pure ε counts as ε²/2).
    * An :class:`ApproxDP` total accepts all three: pure and approximate charges compose
      basically; zCDP charges add up to ρ, which is converted to (ε_z, δ_z) with the tight CKS20
      bound using all the δ not taken by approximate charges. The spend fits when
      Σε_i + ε_z ≤ ε and Σδ_i < δ (or Σδ_i ≤ δ when no zCDP charge was made).

    The same accountant can be passed to several estimators (``accountant=``) so their releases
    compose under one total. An accountant with a ``parent`` forwards every charge to it: a charge
    is made only if it fits both (this is how one fit's budget sits inside a shared total).

    **Child ledgers.** No sub-computation's releases are lost: :meth:`child` gives an
    accountant whose charges are also charged here, listed in this ledger with the child's
    name as a prefix of their step; :meth:`prepaid` gives one for a sub-computation already
    paid for by one entry of this ledger, whose releases are kept in that entry's ``parts``.

    **Identity.** An accountant is a resource, like a lock or an open file, not a value: its
    budget can be spent once. So ``copy.copy`` and ``copy.deepcopy`` return the accountant
    itself — copies of an estimator holding ``accountant=`` (and ``sklearn.base.clone``, which
    deep-copies parameters) share it and can never spend its budget twice — and two
    accountants are equal only if they are the same object. Pickling keeps that:

    * unpickled in the same process while the original is alive, it *is* the original;
    * otherwise (another process, or the original was garbage-collected) it is a **read-only
      record**: ``total``, ``ledger``, ``spent`` and ``to_dict()`` are kept (so a pickled
      fitted estimator still reports its privacy), but ``spend`` raises
      :class:`PrivacyBudgetError`, ``can_spend`` is False, ``remaining`` None and
      ``remaining_zcdp()`` 0. A forked child process's inherited copy is read-only too.

    Only the process that created an accountant spends through it (:attr:`spendable`).

    **Threads.** Every check-and-charge runs under one re-entrant lock shared by an accountant,
    its children and the accountants it prepaid (the root's lock): concurrent charges can
    neither exceed the total nor be lost. :meth:`exclusive` holds that lock for a whole
    sequence of checks and charges — a fit holds it from its reservation to its last release,
    so threads sharing one accountant (a threaded cross-validation, a thread pool) run their
    private sections one at a time and none is refused half-way by another's charge.

    Parameters
    ----------
    total : Budget
        The total budget (:class:`ZCDP`, :class:`ApproxDP` or :class:`PureDP`).
    ledger : list of LedgerEntry, optional
        The releases so far (default none; charges append to it).
    parent : Accountant, optional
        An accountant every charge is also made to (made by :meth:`child`).
    prefix : str, optional
        Prefix of this accountant's step names in its parent's ledger.

    Attributes
    ----------
    total : Budget
        The total.
    ledger : list of LedgerEntry
        Every release charged, with its cost (public metadata only).
    spent : Budget or None
        What has been spent, in the total's notion (None before the first charge).
    remaining : Budget or None
        What is left (None when nothing is, or for a read-only record).

    Examples
    --------
    >>> import privgauss as pg
    >>> acct = pg.Accountant(pg.ZCDP(1.0))
    >>> entry = acct.spend(pg.ZCDP(0.25), step="mean", mechanism="gaussian")
    >>> print(acct.spent, acct.remaining)
    0.25-zCDP 0.75-zCDP
    >>> acct.can_spend(pg.ZCDP(1.0))
    False
    """

    total: Budget
    ledger: list[LedgerEntry] = field(default_factory=list)
    parent: Accountant | None = field(default=None, repr=False)
    _t: _Totals = field(default_factory=_Totals, repr=False)
    #: prefix of this accountant's steps in its parent's ledger (see :meth:`child`)
    prefix: str = field(default="", repr=False)
    # the entry (of another accountant) that paid for everything charged here (prepaid)
    _paid_by: LedgerEntry | None = field(default=None, repr=False)
    # (payer, step, note): the accountant charged this one's whole total, as one entry, at its
    # first charge (see paid_on_first_charge)
    _payer: tuple[Accountant, str, str] | None = field(default=None, init=False, repr=False)
    # the process that may spend through this accountant (None: a read-only record)
    _owner_pid: int | None = field(default=None, init=False, repr=False)
    _key: str | None = field(default=None, init=False, repr=False)  # set when first pickled
    # one lock per tree of accountants (a child shares its parent's): see the class docstring
    _lock: threading.RLock = field(
        default_factory=threading.RLock, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.total, PureDP | ZCDP | ApproxDP):
            raise PrivacyBudgetError(
                "Accountant needs a budget: pg.ZCDP(rho), pg.PureDP(epsilon) or "
                "pg.ApproxDP(epsilon, delta)"
            )
        self._owner_pid = os.getpid()
        if self.parent is not None:
            self._lock = self.parent._lock

    @contextmanager
    def exclusive(self) -> Iterator[Accountant]:
        """Hold this accountant's lock (shared with its whole tree) for a block of checks and
        charges that must not interleave with another thread's: a reservation followed by the
        releases it reserved for. Re-entrant, so charges inside the block proceed."""
        with self._lock:
            yield self

    # -- identity: copies are the accountant itself ----------------------------------------
    def __copy__(self) -> Accountant:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Accountant:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        if self._key is None:
            self._key = secrets.token_hex(16)
            _BY_KEY[self._key] = self
        state = (self.total, list(self.ledger), self.parent, replace(self._t), self.prefix)
        return (_unpickle_accountant, (self._key, *state))

    @property
    def spendable(self) -> bool:
        """Whether charges can be made through this accountant here: False for a read-only
        record (see the class docstring) or when its parent is one."""
        return self._owner_pid == os.getpid() and (
            self.parent is None or self.parent.spendable
        )

    # -- queries ---------------------------------------------------------------------------
    def _fits(self, t: _Totals) -> bool:
        tot = self.total
        if isinstance(tot, PureDP):
            return t.eps <= tot.epsilon * (1 + REL_TOL)
        if isinstance(tot, ZCDP):
            return t.rho <= tot.rho * (1 + REL_TOL)
        if t.delta > tot.delta * (1 + REL_TOL):
            return False
        eps_z = 0.0
        if t.rho > 0:
            delta_left = tot.delta - t.delta
            if delta_left <= 0:  # a zCDP charge needs some delta to convert with
                return False
            dl = min(delta_left, 1 - 1e-16)
            # the tight ε is never above the simple ρ + 2√(ρ ln 1/δ): when that fits, so does
            # the tight one (the same decision without its root-finding)
            if t.eps + zcdp_to_epsilon(t.rho, dl, method="simple") <= tot.epsilon * (1 + REL_TOL):
                return True
            eps_z = zcdp_to_epsilon(t.rho, dl)
        return t.eps + eps_z <= tot.epsilon * (1 + REL_TOL)

    def _add(self, cost: Budget, base: _Totals | None = None) -> _Totals:
        b = self._t if base is None else base
        t = _Totals(b.rho, b.eps, b.delta)
        tot = self.total
        if isinstance(tot, PureDP):
            if not isinstance(cost, PureDP) and not (
                isinstance(cost, ApproxDP) and cost.delta == 0
            ):
                raise PrivacyBudgetError(
                    f"a pure-DP accountant cannot be charged {cost}; give the estimator an "
                    "ApproxDP or ZCDP budget, or choose a pure-DP method"
                )
            t.eps += cost.epsilon
        elif isinstance(tot, ZCDP):
            if isinstance(cost, ZCDP):
                t.rho += cost.rho
            elif isinstance(cost, PureDP) or cost.delta == 0:
                t.rho += cost.epsilon**2 / 2
            else:
                raise PrivacyBudgetError(
                    f"a zCDP accountant cannot be charged {cost} (approximate DP does not imply "
                    "zCDP); give the estimator an (epsilon, delta) budget instead"
                )
        else:
            if isinstance(cost, ZCDP):
                t.rho += cost.rho
            elif isinstance(cost, PureDP):
                t.eps += cost.epsilon
            else:
                t.eps += cost.epsilon
                t.delta += cost.delta
        return t

    def can_spend_all(self, costs: Iterable[Budget], *, parents: bool = True) -> bool:
        """Whether charging every cost in ``costs``, in order, would succeed (here and, with
        ``parents``, in every parent): a reservation check that changes nothing. (An
        accountant cannot be copied for a trial run — its copies are itself.)"""
        costs = list(costs)
        if self._owner_pid != os.getpid():
            return False
        with self._lock:
            return self._can_spend_all(costs, parents)

    def _can_spend_all(self, costs: list[Budget], parents: bool) -> bool:
        t = self._t
        for cost in costs:
            if not isinstance(cost, PureDP | ZCDP | ApproxDP):
                return False
            try:
                t = self._add(cost, t)
            except PrivacyBudgetError:
                return False
            if not self._fits(t):
                return False
        if self._payer is not None and self._paid_by is None and costs:
            # the first charge makes the payer (and its parents, which a reservation's walk
            # up through ``parent`` does not reach from here) pay the whole total
            if not self._payer[0].can_spend_all([self.total]):
                return False
        return not parents or self.parent is None or self.parent.can_spend_all(costs)

    def can_spend(self, cost: Budget) -> bool:
        """Whether ``cost`` could be charged now (here and in every parent)."""
        if not self.spendable:
            return False
        return self.can_spend_all([cost])

    def spend(
        self,
        cost: Budget,
        *,
        step: str = "",
        mechanism: str = "",
        sensitivity: float | None = None,
        noise_scale: float | None = None,
        note: str = "",
        _parts: list[LedgerEntry] | None = None,
    ) -> LedgerEntry:
        """Charge ``cost``; raise :class:`PrivacyBudgetError` (and change nothing) if it would
        exceed the total. Call this *before* drawing any noise."""
        if not isinstance(cost, PureDP | ZCDP | ApproxDP):
            raise PrivacyBudgetError("spend() needs a PureDP, ZCDP or ApproxDP cost")
        if not self.spendable:
            raise PrivacyBudgetError(_READ_ONLY)
        with self._lock:  # check and charge as one step: no lost update, no overdraft
            entry = self._spend(cost, step, mechanism, sensitivity, noise_scale, note, _parts)
        if self.parent is None:  # once per release, as its top-level ledger names it
            released(self._prefixed(step or mechanism))
        return entry

    def _spend(
        self,
        cost: Budget,
        step: str,
        mechanism: str,
        sensitivity: float | None,
        noise_scale: float | None,
        note: str,
        _parts: list[LedgerEntry] | None,
    ) -> LedgerEntry:
        new = self._add(cost)
        if not self._fits(new):
            raise PrivacyBudgetError(
                f"charging {cost} for step '{step or mechanism}' would exceed the total budget "
                f"{self.total} (already spent: {self.spent_str()}); increase the budget or "
                "use a fresh Accountant"
            )
        parts: list[LedgerEntry] = [] if _parts is None else _parts
        if self._payer is not None and self._paid_by is None:
            self._pay()  # the whole total, charged to the payer before this charge's noise
        if self.parent is not None:
            self.parent.spend(
                cost,
                step=self._prefixed(step),
                mechanism=mechanism,
                sensitivity=sensitivity,
                noise_scale=noise_scale,
                note=note,
                _parts=parts,
            )
        self._t = new
        entry = LedgerEntry(step, mechanism, cost, sensitivity, noise_scale, note, parts)
        self.ledger.append(entry)
        if self._paid_by is not None:
            self._paid_by.parts.append(replace(entry, step=self._prefixed(step)))
        return entry

    def _prefixed(self, step: str) -> str:
        return f"{self.prefix}/{step}" if self.prefix else step

    def child(self, name: str, total: Budget | None = None) -> Accountant:
        """An accountant for a sub-computation named ``name``: every charge made through it is
        also charged here (refused unless it fits both ``total`` — default: this accountant's
        total — and this accountant) and listed in this ledger with step ``name/step``.

        Parameters
        ----------
        name : str
            The sub-computation's name, the prefix of its steps in this ledger.
        total : Budget, optional
            The most the sub-computation may spend.

        Returns
        -------
        Accountant
            The child, whose own ledger holds its entries without the prefix.
        """
        if not name:
            raise ValueError("a child accountant needs a name")
        return Accountant(self.total if total is None else total, parent=self, prefix=name)

    def prepaid(self, entry: LedgerEntry, total: Budget, name: str = "") -> Accountant:
        """An accountant for a sub-computation whose whole cost is ``entry``, already charged
        to this accountant (e.g. one node of a level charged once by parallel composition, or
        a search on a subsample whose amplified budget ``total`` costs ``entry.cost`` on the
        whole data). Its charges are refused beyond ``total``, are not charged here again, and
        are kept in ``entry.parts`` (steps prefixed with ``name``), so none is dropped.

        Parameters
        ----------
        entry : LedgerEntry
            An entry of this ledger, the charge that pays for the sub-computation.
        total : Budget
            What the sub-computation may spend under that charge.
        name : str, optional
            Prefix of the sub-computation's steps in ``entry.parts``.

        Returns
        -------
        Accountant
            A fresh accountant of total ``total`` whose entries also go to ``entry.parts``.
        """
        if not any(e is entry for e in self.ledger):
            raise ValueError("prepaid() needs an entry of this accountant's ledger")
        acct = Accountant(total, prefix=name)
        acct._paid_by = entry
        acct._lock = self._lock  # its charges append to this ledger's entry
        return acct

    def paid_on_first_charge(self, total: Budget, step: str, note: str = "") -> Accountant:
        """An accountant for a sub-computation whose whole cost is ``total``, charged here as
        one entry ``step`` at the sub-computation's first charge (before its noise is drawn),
        or by :meth:`settle`. Like :meth:`prepaid`, its charges are refused beyond ``total``,
        are not charged here again and are kept in that entry's ``parts`` (steps prefixed
        with ``step``); a sub-computation that refuses before charging anything costs nothing.

        Composing the sub-computation as one (ε, δ) entry (basic composition) is what a plan
        of (ε, δ) shares states; its own zCDP charges convert within ``total`` alone.

        Parameters
        ----------
        total : Budget
            What the sub-computation costs (and may spend).
        step : str
            The entry's step in this ledger, and the prefix of the sub-computation's steps in
            its ``parts``.
        note : str, optional
            The entry's note.

        Returns
        -------
        Accountant
            A fresh accountant of total ``total``.
        """
        if not step:
            raise ValueError("paid_on_first_charge needs a step name")
        acct = Accountant(total, prefix=step)
        acct._payer = (self, step, note)
        acct._lock = self._lock
        return acct

    def _pay(self) -> None:
        assert self._payer is not None
        payer, step, note = self._payer
        self._paid_by = payer.spend(self.total, step=step, mechanism="sub-computation",
                                    note=note)

    def settle(self) -> None:
        """An accountant of :meth:`paid_on_first_charge`: charge its payer the whole total now
        if no charge has yet (a sub-computation that ended, or failed, before charging), so
        that what it cost does not depend on the data."""
        with self._lock:
            if self._payer is not None and self._paid_by is None:
                self._pay()

    @property
    def spent(self) -> Budget | None:
        """What has been spent, in the total's notion (None before the first charge)."""
        with self._lock:  # the ledger and the totals of one moment
            return _spent_of(self.total, self._t) if self.ledger else None

    def spent_str(self) -> str:
        s = self.spent
        return "nothing" if s is None else str(s)

    @property
    def remaining(self) -> Budget | None:
        """What can still be spent, in the total's notion (None when nothing is left).

        For an ApproxDP total this is the (ε, δ) left when the zCDP spent so far is converted
        with all unused δ; :meth:`remaining_zcdp` gives the largest further zCDP charge.
        None for a read-only record (nothing can be spent through it).
        """
        if not self.spendable:
            return None
        tot, t = self.total, self._t

        def left(total: float, used: float) -> float | None:
            return total - used if total - used > 1e-12 * total else None

        if isinstance(tot, PureDP):
            eps_left = left(tot.epsilon, t.eps)
            return None if eps_left is None else PureDP(eps_left)
        if isinstance(tot, ZCDP):
            rho_left = left(tot.rho, t.rho)
            return None if rho_left is None else ZCDP(rho_left)
        spent = _spent_of(tot, t) if t.rho or t.eps else None  # the totals used below
        assert spent is None or isinstance(spent, ApproxDP)  # in the total's notion
        eps_left = left(tot.epsilon, 0.0 if spent is None else spent.epsilon)
        delta_left = tot.delta - t.delta
        if eps_left is None:
            return None
        return ApproxDP(eps_left, max(delta_left, 0.0))

    def remaining_zcdp(self) -> float:
        """The largest ρ that can still be charged as zCDP (0 if none, or read-only)."""
        if not self.spendable:
            return 0.0
        tot, t = self.total, self._t
        if isinstance(tot, PureDP):
            return 0.0
        if isinstance(tot, ZCDP):
            return max(tot.rho - t.rho, 0.0)
        delta_left = tot.delta - t.delta
        if delta_left <= 0:
            return 0.0
        eps_left = tot.epsilon - t.eps
        if eps_left <= 0:
            return 0.0
        rho_max = approx_to_zcdp(eps_left, delta_left)
        return max(rho_max - t.rho, 0.0)

    def to_dict(self) -> dict[str, Any]:
        spent = self.spent
        return {
            "total": budget_to_dict(self.total),
            "spent": None if spent is None else budget_to_dict(spent),
            "ledger": [e.to_dict() for e in self.ledger],
        }

    def to_dp_event(self) -> Any:
        """The ledger as a ``dp_accounting`` ``ComposedDpEvent`` (needs ``dp-accounting``).

        zCDP charges become ``ZCDpEvent``; a pure ε charge becomes binary randomized response
        with the same ε (``RandomizedResponseDpEvent``), which dominates every ε-DP mechanism,
        so composing it is valid (use ``NeighboringRelation.REPLACE_ONE``); dp-accounting has
        no generic (ε, δ) event, so δ > 0 charges become ``UnsupportedDpEvent``.
        """
        try:
            import dp_accounting
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "to_dp_event needs the dp-accounting package: pip install dp-accounting"
            ) from exc
        events = []
        for e in self.ledger:
            c = e.cost
            if isinstance(c, ZCDP):
                events.append(dp_accounting.ZCDpEvent(c.rho))
            elif has_delta(c):
                events.append(dp_accounting.UnsupportedDpEvent())
            else:
                # P(keep) / P(flip) = (1 - p/2) / (p/2) = e^eps; written not to overflow
                p_noise = 2.0 * math.exp(-c.epsilon) / (1.0 + math.exp(-c.epsilon))
                events.append(dp_accounting.RandomizedResponseDpEvent(p_noise, 2))
        return dp_accounting.ComposedDpEvent(events)


def _spent_of(tot: Budget, t: _Totals) -> Budget:
    """The totals ``t`` in the notion of the total ``tot``."""
    if isinstance(tot, PureDP):
        return PureDP(t.eps)
    if isinstance(tot, ZCDP):
        return ZCDP(t.rho)
    if t.rho == 0:
        return ApproxDP(t.eps, t.delta)
    # the zCDP part is converted with all the delta that approximate charges left (_fits
    # keeps some left once a zCDP charge is made); a converted epsilon can be 0 for large delta
    eps_z = zcdp_to_epsilon(t.rho, tot.delta - t.delta)
    return ApproxDP(max(t.eps + eps_z, MIN_EPS), tot.delta)


def composed(total: Budget, costs: Iterable[Budget]) -> Budget | None:
    """What charging every cost in ``costs`` to an accountant of total ``total`` adds up to,
    in the total's notion (the accountant's composition rule), or None when they do not fit
    (or cannot be charged under that notion). Changes nothing: a computation on values."""
    probe = Accountant(total)
    t = probe._t
    for cost in costs:
        try:
            t = probe._add(cost, t)
        except PrivacyBudgetError:
            return None
    if not probe._fits(t):
        return None
    return _spent_of(total, t)


def _unpickle_accountant(
    key: str,
    total: Budget,
    ledger: list[LedgerEntry],
    parent: Accountant | None,
    t: _Totals,
    prefix: str = "",
) -> Accountant:
    """The live accountant pickled under ``key`` if it exists in this process, else a
    read-only record of it (registered, so unpickling it again gives the same object)."""
    live = _BY_KEY.get(key)
    if live is not None:
        return live
    acct = Accountant(total, ledger, parent, t, prefix)
    acct._owner_pid = None  # read-only: the budget is spent only through the original
    acct._key = key
    _BY_KEY[key] = acct
    return acct


# Reservations: refuse a whole plan before anything is spent (an accountant cannot be copied
# for a trial run: its copies are itself).


def reserve(
    accountant: Accountant, parts: Sequence[Budget], what: str, *, approx_total: bool = True
) -> None:
    """Refuse up front (nothing spent, nothing drawn) when the accountant — or any parent it
    charges — cannot pay every part. ``approx_total``: the accountant must hold an
    ApproxDP(ε, δ) total (needed by any part with δ > 0)."""
    if not isinstance(accountant, Accountant):
        raise TypeError("accountant must be a privgauss.Accountant")
    if approx_total and not isinstance(accountant.total, ApproxDP):
        raise PrivacyBudgetError(
            f"{what} needs an accountant with an ApproxDP(epsilon, delta) total"
        )
    if not accountant.can_spend_all(parts, parents=False):  # (a copy would be itself)
        raise PrivacyBudgetError(
            f"the accountant cannot afford {what}'s budget; increase its total or use a fresh one"
        )
    if accountant.parent is not None:
        reserve(accountant.parent, parts, what, approx_total=approx_total)


def check_accountant(accountant: Any) -> Accountant:
    """``accountant``, checked to be an :class:`Accountant` (TypeError otherwise)."""
    if not isinstance(accountant, Accountant):
        raise TypeError("accountant must be a privgauss.Accountant")
    return accountant


def reserve_rho(accountant: Accountant, rho: float) -> None:
    """Refuse up front (nothing spent, nothing drawn) when the accountant (with its parents)
    cannot pay ``ZCDP(rho)``: a zCDP estimator's check before its first release."""
    if not accountant.can_spend(ZCDP(rho)):
        raise PrivacyBudgetError(
            f"this estimator needs {rho:g}-zCDP but the accountant cannot pay it "
            f"(total {accountant.total}, spent {accountant.spent_str()})"
        )


def charge_rest(accountant: Accountant, note: str) -> None:
    """Charge what ``accountant`` has not yet spent (step and mechanism ``"unused"``), so that
    a computation that ended early costs its whole total whichever release it ended after.
    Under an (ε, δ) total the rest is charged as the largest ρ still possible (keeping the δ
    a zCDP charge converts with); nothing when nothing is left or it cannot be charged."""
    rest: Budget | None = accountant.remaining
    if isinstance(accountant.total, ApproxDP) and accountant.remaining_zcdp() > 0:
        rest = ZCDP(accountant.remaining_zcdp())  # keeps the δ a zCDP total converts with
    if rest is None:
        return
    with suppress(PrivacyBudgetError):
        accountant.spend(rest, step="unused", mechanism="unused", note=note)


def charge_unused(accountant: Accountant, parts: Sequence[Budget], step: str) -> None:
    """Charge the parts an earlier ⊥ left unused, so the spent budget is data independent."""
    for p in parts:
        accountant.spend(
            p, step=step, mechanism="unused", note="reserved; an earlier step returned ⊥"
        )
