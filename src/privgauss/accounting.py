"""Privacy budgets, conversions, composition and the :class:`Accountant`.

Three notions are supported, as frozen value types:

* :class:`PureDP` — ε-DP;
* :class:`ZCDP` — ρ-zero-concentrated DP (Bun–Steinke 2016), which composes by adding ρ;
* :class:`ApproxDP` — (ε, δ)-DP.

Conversions: ε-DP ⇒ (ε²/2)-zCDP; ρ-zCDP ⇒ (ε, δ)-DP by the tight bound of Canonne, Kamath and
Steinke (2020, Prop. 12 / Cor. 13), with the simpler ε = ρ + 2√(ρ ln 1/δ) of Bun–Steinke as a
documented fallback; and the inverse, the largest ρ whose conversion stays within (ε, δ).

Every release is charged to an :class:`Accountant` *before* any noise is drawn; a charge that would
exceed the total raises :class:`PrivacyBudgetError` and leaves the accountant unchanged.
"""

from __future__ import annotations

import math
import numbers
import os
import secrets
import sys
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .exceptions import PrivacyBudgetError


def _brentq(*args: Any, **kwargs: Any) -> float:
    """``scipy.optimize.brentq``, imported on first use (scipy.optimize is slow to import)."""
    from scipy.optimize import brentq

    return float(brentq(*args, **kwargs))


_REL_TOL = 1e-9  # slack for float rounding when the last charge exactly exhausts the total
_MIN_EPS = sys.float_info.min  # stands for a converted epsilon of 0 (ApproxDP needs epsilon > 0)


def _check_positive(name: str, value: Any) -> float:
    """``value`` as a float, refused with :class:`PrivacyBudgetError` unless it is a real number
    in (0, ∞). Budgets are finite: an infinite ε or ρ is not a "non-private limit" (DESIGN
    rule 12) — a non-private reference is the separately named
    :func:`privgauss.metrics.nonprivate_gaussian`, never a budget value."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise PrivacyBudgetError(
            f"{name} must be a positive number, got an object of type {type(value).__name__}"
        )
    value = float(value)
    if math.isnan(value):
        raise PrivacyBudgetError(f"{name} must be a positive number, got NaN")
    if math.isinf(value):
        raise PrivacyBudgetError(
            f"{name} must be finite, got {value}; privacy budgets are finite (for a non-private "
            "reference use privgauss.metrics.nonprivate_gaussian, not an infinite budget)"
        )
    if value <= 0:
        raise PrivacyBudgetError(f"{name} must be > 0, got {value}")
    return value


def _check_nonnegative(name: str, value: Any) -> float:
    """A finite ε or ρ >= 0 for the conversions (0 is a valid point of their curves)."""
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise PrivacyBudgetError(f"{name} must be a finite number >= 0, got {value}")
    return value


@dataclass(frozen=True)
class PureDP:
    """ε-differential privacy."""

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _check_positive("epsilon", self.epsilon))

    def to_zcdp(self) -> ZCDP:
        """ε-DP implies (ε²/2)-zCDP (Bun–Steinke 2016, Prop. 1.4)."""
        return ZCDP(self.epsilon**2 / 2)

    def to_approx(self, delta: float = 0.0) -> ApproxDP:
        return ApproxDP(self.epsilon, delta) if delta > 0 else ApproxDP(self.epsilon, 0.0)

    def __str__(self) -> str:
        return f"{self.epsilon:g}-DP"


@dataclass(frozen=True)
class ZCDP:
    """ρ-zero-concentrated differential privacy."""

    rho: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", _check_positive("rho", self.rho))

    def to_approx(self, delta: float, *, method: str = "tight") -> ApproxDP:
        """The (ε, δ)-DP guarantee implied by ρ-zCDP.

        ``method="tight"`` uses Canonne–Kamath–Steinke (2020); ``"simple"`` uses
        ε = ρ + 2√(ρ ln(1/δ)) (Bun–Steinke 2016), which is never smaller.
        """
        # for large delta the tight epsilon can be 0 (then any epsilon > 0 holds)
        eps = max(zcdp_to_epsilon(self.rho, delta, method=method), _MIN_EPS)
        return ApproxDP(eps, delta)

    def __str__(self) -> str:
        return f"{self.rho:g}-zCDP"


@dataclass(frozen=True)
class ApproxDP:
    """(ε, δ)-differential privacy; δ = 0 is allowed and means pure ε-DP."""

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _check_positive("epsilon", self.epsilon))
        delta = self.delta
        # real numbers only (numpy scalars included); no bools, no strings
        if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
            raise PrivacyBudgetError(
                f"delta must be a number in [0, 1), got an object of type {type(delta).__name__}"
            )
        delta = float(delta)
        if math.isnan(delta) or not 0.0 <= delta < 1.0:
            raise PrivacyBudgetError(f"delta must be in [0, 1), got {delta}")
        object.__setattr__(self, "delta", delta)

    def to_zcdp(self) -> ZCDP:
        """Only pure DP (δ = 0) converts to zCDP; (ε, δ) with δ > 0 does not."""
        if self.delta > 0:
            raise PrivacyBudgetError(
                "an (epsilon, delta) guarantee with delta > 0 cannot be converted to zCDP; "
                "use an ApproxDP accountant instead"
            )
        return PureDP(self.epsilon).to_zcdp()

    def __str__(self) -> str:
        return f"({self.epsilon:g}, {self.delta:g})-DP"


Budget = PureDP | ZCDP | ApproxDP


# ----------------------------------------------------------------------------------------------
# zCDP -> (epsilon, delta) conversions
# ----------------------------------------------------------------------------------------------


def _check_delta(delta: float) -> float:
    delta = float(delta)
    if math.isnan(delta) or not 0.0 < delta < 1.0:
        raise PrivacyBudgetError(f"delta must be in (0, 1) for a zCDP conversion, got {delta}")
    return delta


def zcdp_to_delta(rho: float, epsilon: float) -> float:
    """Smallest δ such that ρ-zCDP implies (ε, δ)-DP, by CKS20 Corollary 13.

    δ = inf_{α>1} exp((α−1)(αρ−ε)) / (α−1) · (1−1/α)^α. The log of the objective has
    derivative (2α−1)ρ − ε + ln(1−1/α), increasing in α, so the infimum is at its unique root.
    ρ and ε must be finite and >= 0 (:class:`PrivacyBudgetError` otherwise).
    """
    rho = _check_nonnegative("rho", rho)
    epsilon = _check_nonnegative("epsilon", epsilon)
    if rho == 0:
        return 0.0

    def dlog(a: float) -> float:
        return (2 * a - 1) * rho - epsilon + math.log1p(-1 / a)

    lo, hi = 1.0 + 1e-12, 2.0
    while dlog(hi) < 0:
        hi *= 2
        if hi > 1e300:
            break
    if dlog(lo) >= 0:
        alpha = lo
    elif dlog(hi) <= 0:
        alpha = hi
    else:
        alpha = _brentq(dlog, lo, hi, xtol=1e-14, rtol=1e-15, maxiter=500)
    log_delta = (
        (alpha - 1) * (alpha * rho - epsilon) - math.log(alpha - 1) + alpha * math.log1p(-1 / alpha)
    )
    return min(1.0, math.exp(log_delta))


def zcdp_to_epsilon(rho: float, delta: float, *, method: str = "tight") -> float:
    """Smallest ε such that ρ-zCDP implies (ε, δ)-DP.

    ``method="tight"`` solves CKS20's bound for ε; ``"simple"`` returns ρ + 2√(ρ ln(1/δ)).
    ρ must be finite and >= 0 (:class:`PrivacyBudgetError` otherwise).
    """
    rho = _check_nonnegative("rho", rho)
    delta = _check_delta(delta)
    simple = rho + 2 * math.sqrt(rho * math.log(1 / delta))
    if method == "simple":
        return simple
    if method != "tight":
        raise ValueError(f"method must be 'tight' or 'simple', got {method!r}")
    if rho == 0:
        return 0.0
    if zcdp_to_delta(rho, 0.0) <= delta:
        return 0.0
    # delta(rho, eps) is decreasing in eps; the simple bound is a valid upper end.
    hi = simple
    return _brentq(
        lambda e: math.log(zcdp_to_delta(rho, e)) - math.log(delta),
        0.0,
        hi,
        xtol=1e-14,
        rtol=1e-13,
        maxiter=500,
    )


def approx_to_zcdp(epsilon: float, delta: float, *, method: str = "tight") -> float:
    """Largest ρ such that ρ-zCDP implies (ε, δ)-DP (the inverse of :func:`zcdp_to_epsilon`)."""
    epsilon = _check_positive("epsilon", epsilon)
    delta = _check_delta(delta)
    if method == "simple":
        # rho + 2 sqrt(rho L) = eps  =>  sqrt(rho) = sqrt(L + eps) - sqrt(L)
        log_term = math.log(1 / delta)
        return (math.sqrt(log_term + epsilon) - math.sqrt(log_term)) ** 2
    # The simple bound is never tighter, so its inverse is a feasible lower end. The tight
    # epsilon can be smaller than rho when delta is large, so the upper end is found by doubling.
    lo = approx_to_zcdp(epsilon, delta, method="simple")
    hi = max(epsilon, 2 * lo)

    def f(r: float) -> float:
        return zcdp_to_epsilon(r, delta) - epsilon

    while f(hi) <= 0:
        lo, hi = hi, 2 * hi
    root = lo if f(lo) >= 0 else _brentq(f, lo, hi, xtol=1e-300, rtol=1e-13, maxiter=500)
    # Make sure the returned rho is on the safe side of the root.
    while zcdp_to_epsilon(root, delta) > epsilon:
        root *= 1 - 1e-12
    return root


# ----------------------------------------------------------------------------------------------
# Composition
# ----------------------------------------------------------------------------------------------


def compose_zcdp(budgets: Iterable[ZCDP | PureDP]) -> ZCDP:
    """zCDP composes additively; pure ε-DP enters as ε²/2."""
    total = 0.0
    for b in budgets:
        total += b.rho if isinstance(b, ZCDP) else b.to_zcdp().rho
    if total <= 0:
        raise PrivacyBudgetError("nothing to compose")
    return ZCDP(total)


def compose_basic(budgets: Iterable[ApproxDP | PureDP]) -> ApproxDP:
    """Basic composition: the ε's add and the δ's add."""
    eps = 0.0
    delta = 0.0
    for b in budgets:
        eps += b.epsilon
        delta += b.delta if isinstance(b, ApproxDP) else 0.0
    return ApproxDP(eps, delta)


def compose_advanced(epsilon: float, delta: float, k: int, delta_prime: float) -> ApproxDP:
    """k-fold advanced composition (Dwork–Rothblum–Vadhan; Kairouz et al. form).

    ε_tot = √(2k ln(1/δ')) ε + k ε (e^ε − 1), δ_tot = kδ + δ'. The returned guarantee is the
    tighter of this and basic composition (kε, kδ + δ') — basic is tighter for few steps.
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    _check_delta(delta_prime)
    adv = math.sqrt(2 * k * math.log(1 / delta_prime)) * epsilon + k * epsilon * math.expm1(epsilon)
    return ApproxDP(min(adv, k * epsilon), k * delta + delta_prime)


# ----------------------------------------------------------------------------------------------
# The accountant
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LedgerEntry:
    """One release: public metadata only, never data values."""

    step: str
    mechanism: str
    cost: Budget
    sensitivity: float | None = None
    noise_scale: float | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "mechanism": self.mechanism,
            "cost": budget_to_dict(self.cost),
            "sensitivity": self.sensitivity,
            "noise_scale": self.noise_scale,
            "note": self.note,
        }


def budget_to_dict(b: Budget) -> dict[str, Any]:
    if isinstance(b, ZCDP):
        return {"notion": "zCDP", "rho": b.rho}
    if isinstance(b, PureDP):
        return {"notion": "pure", "epsilon": b.epsilon}
    return {"notion": "approx", "epsilon": b.epsilon, "delta": b.delta}


def budget_from_dict(d: dict[str, Any]) -> Budget:
    notion = d.get("notion")
    if notion == "zCDP":
        return ZCDP(d["rho"])
    if notion == "pure":
        return PureDP(d["epsilon"])
    if notion == "approx":
        return ApproxDP(d["epsilon"], d["delta"])
    raise ValueError(f"unknown privacy notion {notion!r}")


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
    """

    total: Budget
    ledger: list[LedgerEntry] = field(default_factory=list)
    parent: Accountant | None = field(default=None, repr=False)
    _t: _Totals = field(default_factory=_Totals, repr=False)
    # the process that may spend through this accountant (None: a read-only record)
    _owner_pid: int | None = field(default=None, init=False, repr=False)
    _key: str | None = field(default=None, init=False, repr=False)  # set when first pickled

    def __post_init__(self) -> None:
        if not isinstance(self.total, PureDP | ZCDP | ApproxDP):
            raise PrivacyBudgetError(
                "Accountant needs a budget: pg.ZCDP(rho), pg.PureDP(epsilon) or "
                "pg.ApproxDP(epsilon, delta)"
            )
        self._owner_pid = os.getpid()

    # -- identity: copies are the accountant itself ----------------------------------------
    def __copy__(self) -> Accountant:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Accountant:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        if self._key is None:
            self._key = secrets.token_hex(16)
            _BY_KEY[self._key] = self
        state = (self.total, list(self.ledger), self.parent, replace(self._t))
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
            return t.eps <= tot.epsilon * (1 + _REL_TOL)
        if isinstance(tot, ZCDP):
            return t.rho <= tot.rho * (1 + _REL_TOL)
        if t.delta > tot.delta * (1 + _REL_TOL):
            return False
        eps_z = 0.0
        if t.rho > 0:
            delta_left = tot.delta - t.delta
            if delta_left <= 0:  # a zCDP charge needs some delta to convert with
                return False
            eps_z = zcdp_to_epsilon(t.rho, min(delta_left, 1 - 1e-16))
        return t.eps + eps_z <= tot.epsilon * (1 + _REL_TOL)

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
        return not parents or self.parent is None or self.parent.can_spend_all(costs)

    def can_spend(self, cost: Budget) -> bool:
        if not self.spendable:
            return False
        try:
            ok = self._fits(self._add(cost))
        except PrivacyBudgetError:
            return False
        return ok and (self.parent is None or self.parent.can_spend(cost))

    def spend(
        self,
        cost: Budget,
        *,
        step: str = "",
        mechanism: str = "",
        sensitivity: float | None = None,
        noise_scale: float | None = None,
        note: str = "",
    ) -> LedgerEntry:
        """Charge ``cost``; raise :class:`PrivacyBudgetError` (and change nothing) if it would
        exceed the total. Call this *before* drawing any noise."""
        if not isinstance(cost, PureDP | ZCDP | ApproxDP):
            raise PrivacyBudgetError("spend() needs a PureDP, ZCDP or ApproxDP cost")
        if not self.spendable:
            raise PrivacyBudgetError(_READ_ONLY)
        new = self._add(cost)
        if not self._fits(new):
            raise PrivacyBudgetError(
                f"charging {cost} for step '{step or mechanism}' would exceed the total budget "
                f"{self.total} (already spent: {self.spent_str()}); increase the budget or "
                "use a fresh Accountant"
            )
        if self.parent is not None:
            self.parent.spend(
                cost,
                step=step,
                mechanism=mechanism,
                sensitivity=sensitivity,
                noise_scale=noise_scale,
                note=note,
            )
        self._t = new
        entry = LedgerEntry(step, mechanism, cost, sensitivity, noise_scale, note)
        self.ledger.append(entry)
        return entry

    @property
    def spent(self) -> Budget | None:
        """What has been spent, in the total's notion (None before the first charge)."""
        if not self.ledger:
            return None
        tot, t = self.total, self._t
        if isinstance(tot, PureDP):
            return PureDP(t.eps)
        if isinstance(tot, ZCDP):
            return ZCDP(t.rho)
        if t.rho == 0:
            return ApproxDP(t.eps, t.delta)
        # the zCDP part is converted with all the delta that approximate charges left (_fits
        # keeps some left once a zCDP charge is made); a converted epsilon can be 0 for large delta
        eps_z = zcdp_to_epsilon(t.rho, tot.delta - t.delta)
        return ApproxDP(max(t.eps + eps_z, _MIN_EPS), tot.delta)

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
        spent = self.spent
        assert spent is None or isinstance(spent, ApproxDP)  # spent is in the total's notion
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
            elif isinstance(c, ApproxDP) and c.delta > 0:
                events.append(dp_accounting.UnsupportedDpEvent())
            else:
                # P(keep) / P(flip) = (1 - p/2) / (p/2) = e^eps; written not to overflow
                p_noise = 2.0 * math.exp(-c.epsilon) / (1.0 + math.exp(-c.epsilon))
                events.append(dp_accounting.RandomizedResponseDpEvent(p_noise, 2))
        return dp_accounting.ComposedDpEvent(events)


def _unpickle_accountant(
    key: str, total: Budget, ledger: list[LedgerEntry], parent: Accountant | None, t: _Totals
) -> Accountant:
    """The live accountant pickled under ``key`` if it exists in this process, else a
    read-only record of it (registered, so unpickling it again gives the same object)."""
    live = _BY_KEY.get(key)
    if live is not None:
        return live
    acct = Accountant(total, ledger, parent, t)
    acct._owner_pid = None  # read-only: the budget is spent only through the original
    acct._key = key
    _BY_KEY[key] = acct
    return acct


def make_budget(
    *,
    rho: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
) -> Budget:
    """Build a budget from estimator keyword arguments (exactly one notion)."""
    if rho is not None:
        if epsilon is not None or delta is not None:
            raise PrivacyBudgetError(
                "give either rho, or epsilon (with an optional delta), not both"
            )
        return ZCDP(rho)
    if epsilon is None:
        if delta is not None:
            raise PrivacyBudgetError("delta was given without epsilon")
        raise PrivacyBudgetError(
            "a privacy budget is required: pass rho=, or epsilon= (and delta=)"
        )
    if delta is None or (not isinstance(delta, str) and delta == 0):
        return PureDP(epsilon)
    return ApproxDP(epsilon, delta)


def split(budget: ZCDP, weights: Sequence[float]) -> list[ZCDP]:
    """Split a zCDP budget in proportion to ``weights`` (the parts sum to the total)."""
    w = [float(x) for x in weights]
    if any(x <= 0 or math.isnan(x) for x in w):
        raise ValueError("split weights must be positive")
    s = sum(w)
    return [ZCDP(budget.rho * x / s) for x in w]
