"""Privacy budgets, their conversions and composition.

Three notions are supported, as frozen value types:

* :class:`PureDP` — ε-DP;
* :class:`ZCDP` — ρ-zero-concentrated DP (Bun–Steinke 2016), which composes by adding ρ;
* :class:`ApproxDP` — (ε, δ)-DP.

Conversions: ε-DP ⇒ (ε²/2)-zCDP; ρ-zCDP ⇒ (ε, δ)-DP by the tight bound of Canonne, Kamath and
Steinke (2020, Prop. 12 / Cor. 13), with the simpler ε = ρ + 2√(ρ ln 1/δ) of Bun–Steinke as a
documented fallback; and the inverse, the largest ρ whose conversion stays within (ε, δ).

Budgets are values; the :class:`~privgauss.privacy.accountant.Accountant` is what spends them.
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypedDict, TypeGuard

import numpy as np

from ..exceptions import PrivacyBudgetError


def _brentq(*args: Any, **kwargs: Any) -> float:
    """``scipy.optimize.brentq``, imported on first use (scipy.optimize is slow to import)."""
    from scipy.optimize import brentq

    return float(brentq(*args, **kwargs))


#: slack for float rounding when the last charge exactly exhausts the total
REL_TOL = 1e-9
#: the largest ε or ρ a user may state (:func:`make_budget`): the estimators are checked up to
#: it (tests/test_accounting.py); between 1e150 and 1e200 the Gaussian calibration overflows
MAX_BUDGET = 1e100

#: stands for a converted epsilon of 0 (ApproxDP needs epsilon > 0)
MIN_EPS = sys.float_info.min


def _check_positive(name: str, value: Any) -> float:
    """``value`` as a float, refused with :class:`PrivacyBudgetError` unless it is a real number
    in (0, ∞). Budgets are finite: an infinite ε or ρ is not a "non-private limit" (DESIGN
    rule 12) — a non-private reference is the separately named
    :func:`privgauss.metrics.nonprivate_gaussian`, never a budget value."""
    if type(value) is float and 0.0 < value < math.inf:  # the plans' case, without ABC checks
        return value
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


def check_delta(delta: Any, *, zero_ok: bool = False, message: str | None = None) -> float:
    """``delta`` as a float, refused with :class:`PrivacyBudgetError` (``message``, or a
    generic one) unless it is a real number in (0, 1) — [0, 1) with ``zero_ok``. The one
    range check of a δ value; for a budget, :func:`has_delta`."""
    ok = not isinstance(delta, bool | np.bool_) and isinstance(delta, numbers.Real)
    value = float(delta) if ok else math.nan
    if not ok or math.isnan(value) or not (0.0 <= value < 1.0) or (value == 0 and not zero_ok):
        shown = value if ok else f"an object of type {type(delta).__name__}"
        raise PrivacyBudgetError(
            message or f"delta must be in {'[0, 1)' if zero_ok else '(0, 1)'}, got {shown}"
        )
    return value


@dataclass(frozen=True)
class PureDP:
    """ε-differential privacy (pure DP).

    Parameters
    ----------
    epsilon : float
        ε > 0, finite; anything else raises :class:`~privgauss.PrivacyBudgetError`.

    Attributes
    ----------
    epsilon : float
        The checked ε.

    Examples
    --------
    >>> import privgauss as pg
    >>> pg.PureDP(1.0)
    PureDP(epsilon=1.0)
    >>> print(pg.PureDP(1.0).to_zcdp())    # ε-DP implies (ε²/2)-zCDP
    0.5-zCDP
    """

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
    """ρ-zero-concentrated differential privacy.

    Parameters
    ----------
    rho : float
        ρ > 0, finite; anything else raises :class:`~privgauss.PrivacyBudgetError`.

    Attributes
    ----------
    rho : float
        The checked ρ.

    Examples
    --------
    >>> import privgauss as pg
    >>> pg.ZCDP(0.5)
    ZCDP(rho=0.5)
    >>> print(pg.ZCDP(0.5).to_approx(1e-6))    # the (ε, δ)-DP it implies
    (5.22153, 1e-06)-DP
    """

    rho: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", _check_positive("rho", self.rho))

    def to_approx(self, delta: float, *, method: str = "tight") -> ApproxDP:
        """The (ε, δ)-DP guarantee implied by ρ-zCDP.

        ``method="tight"`` uses Canonne–Kamath–Steinke (2020); ``"simple"`` uses
        ε = ρ + 2√(ρ ln(1/δ)) (Bun–Steinke 2016), which is never smaller.
        """
        # for large delta the tight epsilon can be 0 (then any epsilon > 0 holds)
        eps = max(zcdp_to_epsilon(self.rho, delta, method=method), MIN_EPS)
        return ApproxDP(eps, delta)

    def __str__(self) -> str:
        return f"{self.rho:g}-zCDP"


@dataclass(frozen=True)
class ApproxDP:
    """(ε, δ)-differential privacy; δ = 0 is allowed and means pure ε-DP.

    Parameters
    ----------
    epsilon : float
        ε > 0, finite.
    delta : float
        δ in [0, 1); anything else raises :class:`~privgauss.PrivacyBudgetError`.

    Attributes
    ----------
    epsilon, delta : float
        The checked ε and δ.

    Examples
    --------
    >>> import privgauss as pg
    >>> print(pg.ApproxDP(1.0, 1e-6))
    (1, 1e-06)-DP
    """

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
        object.__setattr__(self, "delta", check_delta(delta, zero_ok=True))

    def to_zcdp(self) -> ZCDP:
        """Only pure DP (δ = 0) converts to zCDP; (ε, δ) with δ > 0 does not."""
        if has_delta(self):
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
    value = float(delta)
    return check_delta(
        value, message=f"delta must be in (0, 1) for a zCDP conversion, got {value}"
    )


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
    return math.exp(min(_log_delta(rho, epsilon), 0.0))  # δ ≤ 1 (exp overflows at ρ ≳ 1e15)


def _log_delta(rho: float, epsilon: float) -> float:
    """The log of CKS20's δ(ρ, ε) before capping at 1 (ρ > 0)."""

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
    return (
        (alpha - 1) * (alpha * rho - epsilon) - math.log(alpha - 1) + alpha * math.log1p(-1 / alpha)
    )


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

    def excess(e: float) -> float:
        return _log_delta(rho, e) - math.log(delta)

    if excess(hi) > 0:  # float rounding at ρ ≳ 1e40, where the bounds agree to 1e-16: the
        return hi  # simple bound holds
    return _brentq(
        excess,
        0.0,
        hi,
        xtol=1e-14,
        rtol=1e-13,
        maxiter=500,
    )


def approx_to_zcdp(epsilon: float, delta: float, *, method: str = "tight") -> float:
    """Largest ρ such that ρ-zCDP implies (ε, δ)-DP (the inverse of :func:`zcdp_to_epsilon`)."""
    return _approx_to_zcdp(_check_positive("epsilon", epsilon), _check_delta(delta), method)


@lru_cache(maxsize=1024)  # a pure function of public numbers, asked again and again by plans
def _approx_to_zcdp(epsilon: float, delta: float, method: str) -> float:
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


def has_delta(budget: Budget) -> TypeGuard[ApproxDP]:
    """Whether ``budget`` is an (ε, δ) budget with δ > 0 (what stability histograms and the
    (ε, δ) learners need)."""
    return isinstance(budget, ApproxDP) and budget.delta > 0


def delta_at_least(budget: Budget, n: int) -> TypeGuard[ApproxDP]:
    """Whether ``budget`` is an (ε, δ) budget with δ ≥ 1/n: weak enough to allow publishing
    one of n records outright (the estimators warn)."""
    return has_delta(budget) and budget.delta >= 1.0 / n


def is_pure(budget: Budget) -> TypeGuard[PureDP | ApproxDP]:
    """Whether ``budget`` is pure ε-DP (``PureDP``, or ``ApproxDP`` with δ = 0)."""
    return isinstance(budget, PureDP) or (isinstance(budget, ApproxDP) and budget.delta == 0)


def check_rho(rho: Any) -> float:
    """``rho`` as a float, checked as a zCDP parameter (:class:`PrivacyBudgetError` for ≤ 0,
    NaN or a non-number)."""
    return ZCDP(rho).rho


def budget_notion(budget: Budget) -> str:
    """``"zcdp"``, ``"approx"`` (δ > 0) or ``"pure"``: the notion of ``budget``."""
    if isinstance(budget, ZCDP):
        return "zcdp"
    return "pure" if is_pure(budget) else "approx"


def zcdp_of(budget: Budget, what: str, *, refusal: str | None = None) -> float:
    """The ρ a zCDP algorithm may use within ``budget`` (ApproxDP: the largest ρ implying it);
    :class:`PrivacyBudgetError` for a pure budget, naming ``what`` (or saying ``refusal``)."""
    if isinstance(budget, ZCDP):
        return budget.rho
    if has_delta(budget):
        return approx_to_zcdp(budget.epsilon, budget.delta)
    raise PrivacyBudgetError(
        refusal or f"{what} is a zCDP algorithm and cannot give a pure epsilon-DP guarantee; "
        "pass rho= or epsilon= with delta=, or choose a pure-DP method"
    )


def as_rho(budget: Budget) -> float:
    """The ρ a budget stands for in a theorem's bound: ρ itself, ε²/2 for pure ε, the largest
    ρ implying (ε, δ)."""
    if isinstance(budget, ZCDP):
        return budget.rho
    if isinstance(budget, PureDP):
        return budget.epsilon**2 / 2
    return approx_to_zcdp(budget.epsilon, budget.delta)


def amplified_budget(budget: ApproxDP, rate: float) -> ApproxDP:
    """The (ε′, δ′) a mechanism may use on a uniform subsample (without replacement) of a
    fraction ``rate`` of a fixed-size dataset, so that the composite is ``budget``-DP under
    substitution: ε′ = ln(1 + (e^ε − 1)/γ), δ′ = min(δ/γ, 0.5) (Balle–Barthe–Gaboardi 2018,
    Thm 9: (ε′, δ′) on the sample ⇒ (ln(1 + γ(e^{ε′} − 1)), γδ′) on the whole)."""
    if not (0 < rate <= 1):
        raise ValueError("rate must be in (0, 1]")
    if rate == 1 or math.isinf(budget.epsilon):
        return budget
    if budget.epsilon <= 700.0:
        eps = math.log1p(math.expm1(budget.epsilon) / rate)
    else:  # e^ε overflows: ε + ln(e^{−ε} + (1 − e^{−ε})/γ), the same number
        eps = budget.epsilon + math.log(math.exp(-budget.epsilon)
                                        - math.expm1(-budget.epsilon) / rate)
    return ApproxDP(eps, min(budget.delta / rate, 0.5))


def pure_epsilon(budget: Budget, what: str) -> float:
    """The ε of a pure budget; :class:`PrivacyBudgetError` naming ``what`` for any other."""
    if not is_pure(budget):
        raise PrivacyBudgetError(f"the {what} needs a pure epsilon budget, got {budget}")
    return float(budget.epsilon)


def make_budget(
    *,
    rho: float | None = None,
    epsilon: float | None = None,
    delta: float | None = None,
) -> Budget:
    """Build a budget from estimator keyword arguments (exactly one notion; ε and ρ at most
    :data:`MAX_BUDGET`)."""
    for name, value in (("rho", rho), ("epsilon", epsilon)):
        if (isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)
                and math.isfinite(value) and value > MAX_BUDGET):
            raise PrivacyBudgetError(
                f"{name} must be at most {MAX_BUDGET:g}, got {value:g}: beyond it the noise is "
                "far below float64's resolution of any statistic and some calibrations "
                "overflow (for a non-private reference use "
                "privgauss.metrics.nonprivate_gaussian)"
            )
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


def scaled(budget: Budget, factor: float) -> Budget:
    """``budget`` with its ρ or ε multiplied by ``factor`` (δ kept): a larger or smaller budget
    of the same notion."""
    if isinstance(budget, ZCDP):
        return ZCDP(budget.rho * factor)
    if isinstance(budget, ApproxDP):
        return ApproxDP(budget.epsilon * factor, budget.delta)
    return PureDP(budget.epsilon * factor)


def zcdp_rest(total: ApproxDP, parts: Iterable[PureDP | ApproxDP]) -> float:
    """The largest ρ that, converted with the δ the (ε, δ) ``parts`` leave of ``total``,
    composes with them (basic composition) to exactly ``total``: the zCDP rest of a plan
    whose first parts are pure or approximate."""
    parts = list(parts)
    eps = math.fsum(b.epsilon for b in parts)
    delta = math.fsum(b.delta if isinstance(b, ApproxDP) else 0.0 for b in parts)
    return approx_to_zcdp(total.epsilon - eps, total.delta - delta)


def split(budget: ZCDP, weights: Sequence[float]) -> list[ZCDP]:
    """Split a zCDP budget in proportion to ``weights`` (the parts sum to the total)."""
    w = [float(x) for x in weights]
    if any(x <= 0 or math.isnan(x) for x in w):
        raise ValueError("split weights must be positive")
    s = sum(w)
    return [ZCDP(budget.rho * x / s) for x in w]


def budget_to_dict(b: Budget) -> dict[str, Any]:
    if isinstance(b, ZCDP):
        return {"notion": "zCDP", "rho": b.rho}
    if isinstance(b, PureDP):
        return {"notion": "pure", "epsilon": b.epsilon}
    return {"notion": "approx", "epsilon": b.epsilon, "delta": b.delta}


class BudgetKwargs(TypedDict, total=False):
    """The estimators' budget keywords for one budget."""

    rho: float
    epsilon: float
    delta: float


def estimator_kwargs(budget: Budget) -> BudgetKwargs:
    """The estimator keywords (``rho``, ``epsilon`` or ``epsilon`` and ``delta``) that state
    ``budget``."""
    if isinstance(budget, ZCDP):
        return {"rho": budget.rho}
    if isinstance(budget, PureDP):
        return {"epsilon": budget.epsilon}
    assert isinstance(budget, ApproxDP)
    return {"epsilon": budget.epsilon, "delta": budget.delta}


def budget_from_dict(d: dict[str, Any]) -> Budget:
    notion = d.get("notion")
    if notion == "zCDP":
        return ZCDP(d["rho"])
    if notion == "pure":
        return PureDP(d["epsilon"])
    if notion == "approx":
        return ApproxDP(d["epsilon"], d["delta"])
    raise ValueError(f"unknown privacy notion {notion!r}")
