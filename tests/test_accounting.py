"""Tests of privgauss.privacy: budgets, conversions, composition and the Accountant.

Conversions are checked against an independent computation (dp-accounting's RDP accountant fed
a ZCDpEvent); the Accountant against hand-computed totals.
"""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest
from dp_accounting.rdp import RdpAccountant
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar

from privgauss import PrivacyBudgetError
from privgauss.privacy import (
    ZCDP,
    Accountant,
    ApproxDP,
    LedgerEntry,
    PureDP,
    approx_to_zcdp,
    budget_from_dict,
    budget_to_dict,
    compose_advanced,
    compose_basic,
    compose_zcdp,
    make_budget,
    split,
    zcdp_to_delta,
    zcdp_to_epsilon,
)

RHOS = [1e-4, 1e-2, 0.1, 0.5, 1.0, 5.0, 20.0]
DELTAS = [1e-10, 1e-6, 1e-3, 0.1]
REPLACE_ONE = dp_accounting.privacy_accountant.NeighboringRelation.REPLACE_ONE


# ------------------------------------------------------------------------------------------
# the independent reference: dp-accounting's RDP accountant on a zCDP event
# ------------------------------------------------------------------------------------------


def _optimal_order(rho: float, delta: float) -> float:
    """The order minimising dp-accounting's RDP-to-(ε, δ) bound for the curve ρα, found by a
    bounded scalar search in log(α − 1) (independent of the library's root finding)."""

    def eps(log_am1: float) -> float:
        a = 1.0 + math.exp(log_am1)
        return a * rho + math.log1p(-1 / a) - math.log(delta * a) / (a - 1)

    res = minimize_scalar(
        eps, bounds=(math.log(0.0101), math.log(1e6)), method="bounded", options={"xatol": 1e-12}
    )
    return 1.0 + math.exp(res.x)


_DENSE_ORDERS = list(1.0 + np.logspace(-2, 5, 20001))


def _reference_epsilon(rho: float, delta: float) -> float:
    acct = RdpAccountant(orders=sorted(_DENSE_ORDERS + [_optimal_order(rho, delta)]))
    acct.compose(dp_accounting.ZCDpEvent(rho))
    return acct.get_epsilon(delta)


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("delta", DELTAS)
def test_zcdp_to_epsilon_matches_dp_accounting(rho: float, delta: float) -> None:
    ref = _reference_epsilon(rho, delta)
    ours = zcdp_to_epsilon(rho, delta)
    assert ours == pytest.approx(ref, rel=1e-6, abs=1e-12)
    assert ZCDP(rho).to_approx(delta).epsilon == pytest.approx(ref, rel=1e-6, abs=1e-12)


def test_zcdp_to_delta_matches_dp_accounting() -> None:
    for rho in [0.01, 0.5, 5.0]:
        acct = RdpAccountant(orders=_DENSE_ORDERS)
        acct.compose(dp_accounting.ZCDpEvent(rho))
        for eps in [0.5 * zcdp_to_epsilon(rho, 1e-6), zcdp_to_epsilon(rho, 1e-6), 3 * rho + 1]:
            assert zcdp_to_delta(rho, eps) == pytest.approx(acct.get_delta(eps), rel=1e-5)


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("delta", DELTAS)
def test_zcdp_to_delta_inverts_zcdp_to_epsilon(rho: float, delta: float) -> None:
    eps = zcdp_to_epsilon(rho, delta)
    if eps > 0:
        assert zcdp_to_delta(rho, eps) == pytest.approx(delta, rel=1e-9)
    else:  # epsilon 0 already achieves this delta
        assert zcdp_to_delta(rho, 0.0) <= delta


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("delta", DELTAS)
def test_simple_conversion_is_never_tighter(rho: float, delta: float) -> None:
    simple = zcdp_to_epsilon(rho, delta, method="simple")
    assert simple == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1 / delta)), rel=1e-15)
    assert simple >= zcdp_to_epsilon(rho, delta)
    assert ZCDP(rho).to_approx(delta, method="simple").epsilon == simple


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("delta", [*DELTAS, 0.3, 0.5])
def test_approx_to_zcdp_round_trip(rho: float, delta: float) -> None:
    eps = zcdp_to_epsilon(rho, delta)
    if eps == 0:  # epsilon 0 already achieves delta: nothing to invert
        assert zcdp_to_delta(rho, 0.0) <= delta
        return
    back = approx_to_zcdp(eps, delta)
    assert back == pytest.approx(rho, rel=1e-9)
    assert zcdp_to_epsilon(back, delta) <= eps  # never overshoots


def test_approx_to_zcdp_when_tight_epsilon_is_below_rho() -> None:
    # large delta: the tight epsilon is smaller than rho, and the inverse must still be exact
    rho, delta = 0.7, 0.5
    eps = zcdp_to_epsilon(rho, delta)
    assert 0 < eps < rho
    assert approx_to_zcdp(eps, delta) == pytest.approx(rho, rel=1e-9)


@settings(max_examples=60, deadline=None, database=None)
@given(
    eps=st.floats(min_value=1e-3, max_value=50.0),
    log_delta=st.floats(min_value=-23.0, max_value=-0.7),
)
def test_approx_to_zcdp_never_overshoots(eps: float, log_delta: float) -> None:
    delta = math.exp(log_delta)
    rho = approx_to_zcdp(eps, delta)
    assert rho > 0
    assert zcdp_to_epsilon(rho, delta) <= eps
    # and it is the largest such rho, to 1e-9 relative
    assert zcdp_to_epsilon(rho * (1 + 1e-9), delta) > eps
    simple = approx_to_zcdp(eps, delta, method="simple")
    assert simple <= rho
    assert zcdp_to_epsilon(simple, delta, method="simple") == pytest.approx(eps, rel=1e-12)


def test_large_delta_gives_epsilon_zero_but_a_valid_budget() -> None:
    assert zcdp_to_epsilon(1e-4, 0.1) == 0.0  # dp-accounting agrees (see the grid test)
    converted = ZCDP(1e-4).to_approx(0.1)
    assert converted.delta == 0.1 and 0 < converted.epsilon < 1e-300


def test_infinite_budgets_are_refused_by_the_conversions_and_trivial_ones() -> None:
    # budgets are finite (DESIGN rule 12): no conversion takes an infinite or NaN epsilon / rho
    for bad in (math.inf, math.nan):
        with pytest.raises(PrivacyBudgetError):
            zcdp_to_epsilon(bad, 1e-6)
        with pytest.raises(PrivacyBudgetError):
            approx_to_zcdp(bad, 1e-6)
        with pytest.raises(PrivacyBudgetError):
            zcdp_to_delta(bad, 1.0)
        with pytest.raises(PrivacyBudgetError):
            zcdp_to_delta(1.0, bad)
    assert zcdp_to_delta(0.0, 1.0) == 0.0
    with pytest.raises(PrivacyBudgetError):
        zcdp_to_epsilon(1.0, 0.0)
    with pytest.raises(PrivacyBudgetError):
        zcdp_to_epsilon(1.0, 1.0)
    with pytest.raises(ValueError, match="method"):
        zcdp_to_epsilon(1.0, 1e-6, method="loose")


def test_pure_to_zcdp() -> None:
    for eps in [1e-3, 0.5, 1.0, 3.0]:
        assert PureDP(eps).to_zcdp() == ZCDP(eps**2 / 2)
        assert ApproxDP(eps, 0.0).to_zcdp() == ZCDP(eps**2 / 2)
    with pytest.raises(PrivacyBudgetError, match="cannot be converted"):
        ApproxDP(1.0, 1e-6).to_zcdp()
    assert PureDP(1.0).to_approx() == ApproxDP(1.0, 0.0)
    assert PureDP(1.0).to_approx(1e-5) == ApproxDP(1.0, 1e-5)


# ------------------------------------------------------------------------------------------
# composition
# ------------------------------------------------------------------------------------------


def test_compose_zcdp_adds_rho_and_pure_squares() -> None:
    total = compose_zcdp([ZCDP(0.1), ZCDP(0.25), PureDP(0.6)])
    assert total.rho == pytest.approx(0.1 + 0.25 + 0.18, rel=1e-15)
    with pytest.raises(PrivacyBudgetError):
        compose_zcdp([])


def test_compose_basic_adds_both() -> None:
    total = compose_basic([PureDP(0.5), ApproxDP(0.25, 1e-6), ApproxDP(1.0, 2e-6)])
    assert total.epsilon == pytest.approx(1.75, rel=1e-15)
    assert total.delta == pytest.approx(3e-6, rel=1e-15)


@pytest.mark.parametrize("eps", [0.01, 0.1, 1.0])
@pytest.mark.parametrize("k", [1, 10, 1000])
def test_compose_advanced_is_the_tighter_bound(eps: float, k: int) -> None:
    delta, dprime = 1e-8, 1e-6
    out = compose_advanced(eps, delta, k, dprime)
    adv = math.sqrt(2 * k * math.log(1 / dprime)) * eps + k * eps * (math.exp(eps) - 1)
    assert out.epsilon == pytest.approx(min(adv, k * eps), rel=1e-12)
    assert out.delta == pytest.approx(k * delta + dprime, rel=1e-12)
    if k == 1:
        assert out.epsilon == pytest.approx(eps)  # basic wins for one step
    if (eps, k) == (0.01, 1000):
        assert out.epsilon < k * eps / 2  # advanced wins for many small steps
    with pytest.raises(ValueError):
        compose_advanced(eps, delta, 0, dprime)


# ------------------------------------------------------------------------------------------
# budget validation
# ------------------------------------------------------------------------------------------

BAD_NUMBERS = [0, 0.0, -1.0, -1e-12, math.nan, math.inf, -math.inf, np.inf, np.float64("nan"),
               "1.0", "abc", True, False, None, [1.0], 1 + 1j]


@pytest.mark.parametrize("bad", BAD_NUMBERS)
def test_bad_budgets_raise(bad: object) -> None:
    for make in (PureDP, ZCDP, lambda v: ApproxDP(v, 1e-6)):
        with pytest.raises(PrivacyBudgetError, match="epsilon|rho") as info:
            make(bad)
        assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("bad", [1.0, 1.5, -1e-9, -1.0, math.nan, math.inf, "0.1", True, False])
def test_bad_delta_raises(bad: object) -> None:
    with pytest.raises(PrivacyBudgetError, match="delta"):
        ApproxDP(1.0, bad)  # type: ignore[arg-type]


def test_numpy_scalars_are_accepted() -> None:
    assert ZCDP(np.float64(0.5)).rho == 0.5
    assert PureDP(np.int64(2)).epsilon == 2.0
    b = ApproxDP(np.float32(1.0), np.float64(1e-6))
    assert isinstance(b.epsilon, float) and isinstance(b.delta, float)
    with pytest.raises(PrivacyBudgetError):
        ZCDP(np.bool_(True))


def test_infinite_budgets_are_refused() -> None:
    # an infinite budget used to be a "non-private limit" that released exact values; it is
    # refused now (a non-private reference is privgauss.metrics.nonprivate_gaussian)
    for make in (PureDP, ZCDP, lambda v: ApproxDP(v, 1e-6)):
        for bad in (math.inf, -math.inf, math.nan):
            with pytest.raises(PrivacyBudgetError):
                make(bad)
    for kw in ({"rho": math.inf}, {"epsilon": math.inf}, {"epsilon": math.inf, "delta": 1e-6},
               {"epsilon": 1.0, "delta": math.inf}, {"rho": math.nan},
               {"epsilon": math.nan, "delta": 1e-6}, {"epsilon": 1.0, "delta": math.nan}):
        with pytest.raises(PrivacyBudgetError):
            make_budget(**kw)
    # a huge-but-finite total works and runs out like any other
    for total, rho_left in [(PureDP(1e12), 0.0), (ZCDP(1e12), 1e12 - 1e12 / 2)]:
        acct = Accountant(total)
        acct.spend(PureDP(1e6))
        assert acct.remaining_zcdp() == pytest.approx(rho_left)
    acct = Accountant(ApproxDP(1e12, 1e-6))
    acct.spend(ApproxDP(1.0, 1e-6))  # all the delta
    with pytest.raises(PrivacyBudgetError):
        acct.spend(ZCDP(1.0))  # a zCDP charge needs delta to convert with
    assert acct.spent == ApproxDP(1.0, 1e-6)
    assert acct.remaining_zcdp() == 0.0


def test_make_budget() -> None:
    assert make_budget(rho=0.5) == ZCDP(0.5)
    assert make_budget(epsilon=1.0) == PureDP(1.0)
    assert make_budget(epsilon=1.0, delta=0) == PureDP(1.0)
    assert make_budget(epsilon=1.0, delta=1e-6) == ApproxDP(1.0, 1e-6)
    for kwargs in ({}, {"delta": 1e-6}, {"rho": 1.0, "epsilon": 1.0}, {"rho": 1.0, "delta": 0.1}):
        with pytest.raises(PrivacyBudgetError):
            make_budget(**kwargs)
    with pytest.raises(PrivacyBudgetError):
        make_budget(epsilon=1.0, delta="0.1")  # type: ignore[arg-type]


def test_budget_dict_round_trip() -> None:
    for b in (ZCDP(0.3), PureDP(2.0), ApproxDP(1.0, 1e-7), ApproxDP(1.0, 0.0)):
        assert budget_from_dict(budget_to_dict(b)) == b
    with pytest.raises(ValueError):
        budget_from_dict({"notion": "renyi"})


def test_split_sums_to_the_total() -> None:
    for weights in ([1, 1, 1], [0.2, 0.3, 0.5], [1, 2, 3, 4, 5, 6, 7]):
        parts = split(ZCDP(0.7), weights)
        assert math.fsum(p.rho for p in parts) == pytest.approx(0.7, rel=1e-15)
        ratios = [p.rho / parts[0].rho for p in parts]
        assert ratios == pytest.approx([w / weights[0] for w in weights], rel=1e-14)
        acct = Accountant(ZCDP(0.7))
        for p in parts:
            acct.spend(p)
        assert acct.remaining is None
        assert not acct.can_spend(ZCDP(1e-6))
    for bad in ([1, 0], [1, -1], [math.nan]):
        with pytest.raises(ValueError):
            split(ZCDP(1.0), bad)


# ------------------------------------------------------------------------------------------
# the accountant
# ------------------------------------------------------------------------------------------


def test_accountant_needs_a_budget() -> None:
    with pytest.raises(PrivacyBudgetError):
        Accountant(1.0)  # type: ignore[arg-type]
    acct = Accountant(ZCDP(1.0))
    with pytest.raises(PrivacyBudgetError):
        acct.spend(0.5)  # type: ignore[arg-type]
    assert acct.spent is None and acct.spent_str() == "nothing"


def test_zcdp_ledger_sums_to_spent_and_refuses_overdraft() -> None:
    acct = Accountant(ZCDP(1.0))
    costs = [ZCDP(0.1), PureDP(0.5), ZCDP(0.3), ApproxDP(0.6, 0.0)]
    for i, c in enumerate(costs):
        entry = acct.spend(c, step=f"s{i}", mechanism="m", sensitivity=1.0, noise_scale=2.0)
        assert isinstance(entry, LedgerEntry) and entry.cost == c
    ledger_rho = math.fsum(
        e.cost.rho if isinstance(e.cost, ZCDP) else e.cost.epsilon**2 / 2 for e in acct.ledger
    )
    assert ledger_rho == pytest.approx(0.1 + 0.125 + 0.3 + 0.18, rel=1e-15)
    assert acct.spent.rho == pytest.approx(ledger_rho, rel=1e-15)
    assert acct.remaining.rho == pytest.approx(1.0 - ledger_rho, rel=1e-12)
    assert acct.remaining_zcdp() == pytest.approx(1.0 - ledger_rho, rel=1e-12)
    before = list(acct.ledger)
    with pytest.raises(PrivacyBudgetError, match="exceed"):
        acct.spend(ZCDP(0.3), step="too-much")
    assert acct.ledger == before and acct.spent.rho == pytest.approx(ledger_rho, rel=1e-15)
    assert not acct.can_spend(ZCDP(0.3))
    acct.spend(ZCDP(1.0 - ledger_rho))  # exactly what is left still fits
    assert acct.remaining is None
    d = acct.to_dict()
    assert d["total"] == {"notion": "zCDP", "rho": 1.0}
    assert len(d["ledger"]) == 5 and d["ledger"][0]["step"] == "s0"


def test_pure_ledger_sums_and_refuses_other_notions() -> None:
    acct = Accountant(PureDP(1.0))
    for e in (0.25, 0.5):
        acct.spend(PureDP(e))
    acct.spend(ApproxDP(0.125, 0.0))
    assert acct.spent.epsilon == pytest.approx(math.fsum(e.cost.epsilon for e in acct.ledger))
    assert acct.remaining.epsilon == pytest.approx(0.125)
    for bad in (ZCDP(1e-6), ApproxDP(0.01, 1e-9)):
        with pytest.raises(PrivacyBudgetError, match="pure-DP accountant"):
            acct.spend(bad)
        assert not acct.can_spend(bad)
    with pytest.raises(PrivacyBudgetError):
        acct.spend(PureDP(0.2))
    assert len(acct.ledger) == 3


def test_zcdp_total_refuses_approx_charge() -> None:
    acct = Accountant(ZCDP(100.0))
    with pytest.raises(PrivacyBudgetError, match="zCDP accountant"):
        acct.spend(ApproxDP(0.1, 1e-9))
    assert acct.ledger == [] and acct.spent is None
    assert not acct.can_spend(ApproxDP(0.1, 1e-9))


def test_mixed_charges_under_an_approx_total() -> None:
    total = ApproxDP(3.0, 1e-5)
    acct = Accountant(total)
    acct.spend(PureDP(0.5))
    acct.spend(ApproxDP(0.25, 4e-6))
    acct.spend(ZCDP(0.05))
    acct.spend(ZCDP(0.02))
    eps_basic = 0.5 + 0.25
    delta_used = 4e-6
    eps_z = zcdp_to_epsilon(0.07, total.delta - delta_used)
    spent = acct.spent
    assert spent.delta == total.delta
    assert spent.epsilon == pytest.approx(eps_basic + eps_z, rel=1e-12)
    assert acct.remaining.epsilon == pytest.approx(3.0 - eps_basic - eps_z, rel=1e-12)
    assert acct.remaining.delta == pytest.approx(total.delta - delta_used, rel=1e-12)
    # the largest further zCDP charge: all the left epsilon on the zCDP part
    rho_left = approx_to_zcdp(3.0 - eps_basic, total.delta - delta_used) - 0.07
    assert acct.remaining_zcdp() == pytest.approx(rho_left, rel=1e-9)
    assert acct.can_spend(ZCDP(rho_left * (1 - 1e-6)))
    assert not acct.can_spend(ZCDP(rho_left * (1 + 1e-6)))
    # an approximate charge takes delta away from the zCDP part, so it costs more than its eps
    small = ApproxDP(0.01, 5e-6)
    eps_after = eps_basic + 0.01 + zcdp_to_epsilon(0.07, total.delta - delta_used - 5e-6)
    assert acct.can_spend(small) == (eps_after <= 3.0)
    # delta exhausted by approximate charges: no zCDP charge fits any more
    acct2 = Accountant(ApproxDP(3.0, 1e-5))
    acct2.spend(ApproxDP(0.1, 1e-5))
    assert acct2.remaining_zcdp() == 0.0
    with pytest.raises(PrivacyBudgetError):
        acct2.spend(ZCDP(1e-9))
    with pytest.raises(PrivacyBudgetError):
        acct2.spend(ApproxDP(0.1, 1e-9))
    acct2.spend(PureDP(0.1))  # pure charges need no delta


def test_spending_exactly_the_remaining_zcdp_fits() -> None:
    acct = Accountant(ApproxDP(2.0, 1e-6))
    acct.spend(ApproxDP(0.5, 2e-7))
    acct.spend(ZCDP(0.01))
    rho = acct.remaining_zcdp()
    acct.spend(ZCDP(rho))
    assert acct.spent.epsilon == pytest.approx(2.0, rel=1e-9)
    assert acct.remaining is None or acct.remaining.epsilon < 1e-9
    assert not acct.can_spend(ZCDP(rho * 1e-3))


def test_shared_accountant_across_calls() -> None:
    from privgauss.mechanisms import gaussian_mechanism, laplace_mechanism

    acct = Accountant(ZCDP(1.0))
    for _ in range(4):
        gaussian_mechanism(np.zeros(3), 1.0, ZCDP(0.2), accountant=acct, noise=0)
    laplace_mechanism(0.0, 1.0, PureDP(0.6), accountant=acct, noise=0)  # 0.18 zCDP: fits
    assert acct.spent.rho == pytest.approx(0.98, rel=1e-12)
    with pytest.raises(PrivacyBudgetError):
        gaussian_mechanism(np.zeros(3), 1.0, ZCDP(0.05), accountant=acct, noise=0)
    assert len(acct.ledger) == 5


def test_parent_accountant_gets_every_charge() -> None:
    parent = Accountant(ZCDP(1.0))
    child = Accountant(ZCDP(0.5), parent=parent)
    child.spend(ZCDP(0.3), step="a")
    assert parent.spent == ZCDP(0.3) and parent.ledger[0].step == "a"
    parent.spend(ZCDP(0.6))
    # fits the child (0.3 + 0.15 <= 0.5) but not the parent (0.9 + 0.15 > 1)
    assert not child.can_spend(ZCDP(0.15))
    with pytest.raises(PrivacyBudgetError):
        child.spend(ZCDP(0.15))
    assert child.spent == ZCDP(0.3) and len(parent.ledger) == 2


def test_to_dp_event_composes_in_dp_accounting() -> None:
    orders = list(1.0 + np.logspace(-2, 4, 4001))
    acct = Accountant(ZCDP(2.0))
    acct.spend(ZCDP(0.2))
    acct.spend(ZCDP(0.3))
    event = acct.to_dp_event()
    rdp = RdpAccountant(orders=orders)
    assert rdp.supports(event)
    rdp.compose(event)
    assert rdp.get_epsilon(1e-6) == pytest.approx(zcdp_to_epsilon(0.5, 1e-6), rel=1e-5)

    # a pure charge enters as epsilon-randomized response: valid and tighter than eps^2/2 zCDP
    acct.spend(PureDP(0.5))
    event = acct.to_dp_event()
    rdp = RdpAccountant(orders=orders, neighboring_relation=REPLACE_ONE)
    assert rdp.supports(event)
    rdp.compose(event)
    eps_dp_accounting = rdp.get_epsilon(1e-6)
    assert zcdp_to_epsilon(0.5, 1e-6) < eps_dp_accounting
    assert eps_dp_accounting <= acct.spent.to_approx(1e-6).epsilon * (1 + 1e-6)
    # a single pure charge alone: dp-accounting recovers (about) its epsilon at a tiny delta
    solo = Accountant(PureDP(1.0))
    solo.spend(PureDP(1.0))
    rdp = RdpAccountant(orders=orders, neighboring_relation=REPLACE_ONE)
    rdp.compose(solo.to_dp_event())
    assert 0.9 < rdp.get_epsilon(1e-12) < 1.05

    # huge epsilons do not overflow: they are (nearly) non-private events
    big = Accountant(PureDP(1e12))
    big.spend(PureDP(1000.0))
    big.spend(PureDP(1e9))
    e1, e2 = big.to_dp_event().events
    assert e1.noise_parameter == 0.0 and e2.noise_parameter == 0.0

    # (epsilon, delta) charges have no dp-accounting event: reported as unsupported
    mixed = Accountant(ApproxDP(5.0, 1e-6))
    mixed.spend(ApproxDP(1.0, 1e-7))
    mixed.spend(ZCDP(0.1))
    event = mixed.to_dp_event()
    assert isinstance(event.events[0], dp_accounting.UnsupportedDpEvent)
    assert not RdpAccountant(orders=orders).supports(event)


@pytest.mark.parametrize("epsilon", [1e12, 1e16, 1e20, 1e50, 1e100, 1e300])
def test_conversions_hold_at_huge_budgets(epsilon: float) -> None:
    """At ε ≳ 1e16 the conversion raised OverflowError (exp of CKS20's log δ at ε = 0) and at
    ε ≳ 1e50 a root-finding ValueError (the bounds agree to float resolution): a consistency
    check at a huge budget crashed before fitting. The ρ returned must still imply (ε, δ)."""
    from privgauss.privacy.budgets import approx_to_zcdp, zcdp_to_delta, zcdp_to_epsilon

    rho = approx_to_zcdp(epsilon, 1e-6)
    assert 0.99 * epsilon < rho < epsilon
    assert zcdp_to_epsilon(rho, 1e-6) <= epsilon
    assert zcdp_to_delta(rho, 0.0) == 1.0


def test_budgets_above_the_largest_are_refused_and_the_largest_fits() -> None:
    """ε or ρ above MAX_BUDGET is refused at entry, before any row is read (between 1e150 and
    1e200 the Gaussian calibration overflowed and the bound-free plan asked for inf rows); at
    MAX_BUDGET itself the default estimators fit and converge."""
    import numpy as np

    import privgauss as pg
    from privgauss.exceptions import PrivacyBudgetError
    from privgauss.privacy.budgets import MAX_BUDGET

    X = np.random.default_rng(0).normal(size=(3000, 3)) * [2.0, 1.0, 0.5] + 5.0
    for kw in ({"epsilon": 1e101, "delta": 1e-6}, {"rho": 1e150}, {"epsilon": 1e300}):
        with pytest.raises(PrivacyBudgetError, match="at most 1e\\+100"):
            pg.PrivateGaussian(**kw).fit(X)
    g = pg.PrivateGaussian(epsilon=MAX_BUDGET, delta=1e-6, random_state=0).fit(X)
    assert np.abs(g.covariance_ - np.cov(X.T, bias=True)).max() < 1e-6
    m = pg.PrivateGaussianMixture(2, epsilon=MAX_BUDGET, delta=1e-6, random_state=0).fit(X)
    assert np.isfinite(m.score(X))
