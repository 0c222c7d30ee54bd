"""Budget plans as data (privacy/plans.py) and child ledgers (Accountant.child / prepaid):
every plan composes to its total, and no sub-computation's ledger entries are dropped."""

from __future__ import annotations

import math
import pickle
import warnings

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


# ---------------------------------------------------------------------------- every method's plan


def _method_plans() -> list[tuple[str, BudgetPlan]]:
    """Every method's budget plan constructor, at a few public settings."""
    from privgauss.gaussian.coinpress.schedule import coinpress_fractions, split_rho
    from privgauss.mixture import one_cluster as oc
    from privgauss.mixture import terrific_ball as tb
    from privgauss.mixture.cluster_estimation import cluster_plan
    from privgauss.mixture.kssu_budget import plan_kssu_budget
    from privgauss.mixture.pegme import pegme_plan
    from privgauss.mixture.private_em import em_plan
    from privgauss.mixture.public_heavy import heavy_plan
    from privgauss.mixture.public_light import light_plan
    from privgauss.mixture.sample_aggregate_budget import plan_sa_budget
    from privgauss.reductions.ppe_gaussian import plan_practical
    from privgauss.reductions.selection import selection_plan

    out: list[tuple[str, BudgetPlan]] = []
    for eps, delta in ((0.5, 1e-6), (1.0, 1e-8), (5.0, 1e-6)):
        ap = ApproxDP(eps, delta)
        for k in (1, 2, 4):
            out.append((f"kssu {ap} k={k}", plan_kssu_budget(ap, k, 3).budget_plan()))
            out.append((f"sample-aggregate {ap} k={k}", plan_sa_budget(ap, k, 3).budget_plan()))
            y, z = pegme_plan(ap, k)
            out += [(f"pegme Y {ap} k={k}", y), (f"pegme Z {ap} k={k}", z)]
            out.append((f"agnostic P2 {ap} P={k}", selection_plan(eps, delta, k)))
        for b in (ap, PureDP(eps)):
            for d in (1, 5, 50):
                out.append((f"one-cluster {b} d={d}", oc.search_plan(
                    b, oc.NAMES, oc.KINDS, oc.DEFAULT_SPLIT, (1, 1, d, d))))
                out.append((f"terrific-ball {b} d={d}", oc.search_plan(
                    b, tb.NAMES, tb.KINDS, tb.DEFAULT_SPLIT, (1, 1, d, d, 1))))
        out.append((f"ppe-gaussian {ap}", plan_practical(10**6, 3, eps, delta).budget_plan(ap)))
        em = em_plan(50_000, 3, 2, ap)
        out.append((f"em {ap}", BudgetPlan.of(em.total, dict(em.parts()))))
    for rho in (0.05, 0.5, 2.0):
        for k in (1, 3):
            out.append((f"public-light rho={rho} k={k}", light_plan(rho, k, 0.3, 0.4)))
        out.append((f"public-heavy joint rho={rho}", heavy_plan(rho)))
        out.append((f"public-heavy learner rho={rho}", heavy_plan(rho, 0.04, "learner")))
        out.append((f"cluster-estimation rho={rho}",
                    cluster_plan(ZCDP(rho), 0.1, (0.15, 0.25, 0.6), 0.2)))
        for t in (2, 4):
            rhos = split_rho(rho, coinpress_fractions(t))
            out.append((f"coinpress rho={rho} t={t}", BudgetPlan.of(
                ZCDP(rho), {f"step-{i + 1}": ZCDP(r) for i, r in enumerate(rhos)})))
        out.append((f"em rho={rho}", BudgetPlan.of(ZCDP(rho), dict(
            em_plan(50_000, 3, 2, ZCDP(rho), n_public=10).parts()))))
    return out


_PLANS = _method_plans()


@pytest.mark.parametrize(("name", "plan"), _PLANS, ids=[n for n, _ in _PLANS])
def test_every_method_plan_sums_to_its_total(name: str, plan: BudgetPlan) -> None:
    assert plan.sums_to_total(), f"{name}: {plan.composed()} != {plan.total}"
    # charging every part to a fresh accountant of the total succeeds and spends it all
    acct = Accountant(plan.total)
    for step, cost in plan.parts:
        acct.spend(cost, step=step)
    assert acct.remaining is None or (
        isinstance(plan.total, ApproxDP)
        and acct.remaining.epsilon <= 1e-8 * plan.total.epsilon
    )
    assert composed(plan.total, plan.budgets()) == acct.spent


# ---------------------------------------------------------------------------- fits' ledgers


@pytest.fixture(scope="module")
def two_clusters():
    from privgauss.datasets import make_mixture

    mix = make_mixture(20_000, 2, 2, separation=6.0, random_state=12)
    return mix.X[:19_000], mix.X[19_000:19_200]


def _fit_ledger(method: str, X, P, **kw):
    from privgauss import EstimationFailed, PrivateGaussianMixture
    from privgauss.warnings import BudgetSpentWarning

    total = kw.pop("total")
    acct = Accountant(total)
    est = PrivateGaussianMixture(2, method=method, random_state=0, accountant=acct,
                                 enforce_requirements=False, **kw)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BudgetSpentWarning)
            est.fit(X, public_X=P)
    except EstimationFailed:  # a DP outcome: the ledger is complete all the same
        pass
    # the top-level entries compose to what was spent: nothing is charged off the ledger
    assert composed(total, [e.cost for e in acct.ledger]) == acct.spent
    return acct.ledger


def _steps(entries) -> list[str]:
    return [e.step for e in entries]


def test_kssu_ledger_lists_every_planned_charge_and_every_node_release(two_clusters) -> None:
    from privgauss.mixture.kssu_budget import plan_kssu_budget

    total = ApproxDP(5.0, 1e-6)
    ledger = _fit_ledger("kssu", two_clusters[0], None, epsilon=5.0, delta=1e-6, total=total,
                         method_params={"max_points": 2000})
    plan = plan_kssu_budget(total, 2, 2).budget_plan()
    assert len(ledger) == len(plan)
    assert [e.cost for e in ledger] == plan.budgets()
    # the node releases (once dropped with scratch accountants) are kept under their level
    root_enclosing = next(e for e in ledger if e.step == "kssu/level-0/enclosing-ball")
    # one_cluster's four releases (its plan's four parts), under the node's path
    assert len(root_enclosing.parts) == 4
    assert all(p.startswith("root/enclosing-ball/") for p in _steps(root_enclosing.parts))
    counts = next(e for e in ledger if e.step == "kssu/level-1/count")
    assert _steps(counts.parts) == ["root/A/count", "root/B/count"]  # two nodes at level 1
    estimate = next(e for e in ledger if e.step == "kssu/leaves/estimate")
    assert len(estimate.parts) > 0 and all(p.step.startswith("kssu/leaves/part-")
                                           for p in estimate.parts)


def test_sample_aggregate_and_pegme_ledgers(two_clusters) -> None:
    from privgauss.mixture.pegme import pegme_plan
    from privgauss.mixture.sample_aggregate_budget import plan_sa_budget

    total = ApproxDP(5.0, 1e-6)
    ledger = _fit_ledger("sample-aggregate", two_clusters[0], None, epsilon=5.0, delta=1e-6,
                         total=total)
    plan = plan_sa_budget(total, 2, 2).budget_plan()
    assert len(ledger) == len(plan) and [e.cost for e in ledger] == plan.budgets()
    estimate = ledger[-1]
    assert estimate.step == "sample-aggregate/estimate"
    # both parts' CoinPress runs, each within ρ_E = half the charge
    def run_of(step: str) -> str:
        return step.split("/")[1].split(" ")[0]

    runs = {run_of(p.step) for p in estimate.parts}
    assert runs == {"part-1", "part-2"}
    half = estimate.cost.rho / 2
    for run in runs:
        spent = math.fsum(p.cost.rho for p in estimate.parts if run_of(p.step) == run)
        assert spent == pytest.approx(half, rel=1e-9)

    ledger = _fit_ledger("pegme", two_clusters[0], None, epsilon=5.0, delta=1e-6, total=total,
                         method_params={"max_points": 2000})
    assert len(ledger) == 1 and ledger[0].cost == total
    half_y, half_z = pegme_plan(total, 2)
    parts = ledger[0].parts
    # each half's plan, in order (a ⊥ would end a half early; this seed succeeds)
    assert _steps(parts) == [f"pegme/{n}" for n in half_y.names() + half_z.names()]
    assert [p.cost for p in parts] == half_y.budgets() + half_z.budgets()
    # the PSGE runs (mean and variance per part) are listed under the PSGE charge
    assert len(parts[-1].parts) == 2 * 2
    y_enc = parts[0]
    assert len(y_enc.parts) == 4
    assert all(p.startswith("pegme/Y/enclosing-ball/") for p in _steps(y_enc.parts))


def test_public_method_ledgers_match_their_plans(two_clusters) -> None:
    from privgauss.mixture.cluster_estimation import cluster_plan
    from privgauss.mixture.public_heavy import heavy_plan
    from privgauss.mixture.public_light import JOINT_FRACTIONS, light_plan

    X, P = two_clusters
    ledger = _fit_ledger("public-heavy", X, P, rho=0.5, total=ZCDP(0.5))
    plan = heavy_plan(0.5)
    assert len(ledger) == len(plan) and [e.cost.rho for e in ledger] == pytest.approx(
        [b.rho for b in plan.budgets()], rel=1e-12)
    ledger = _fit_ledger("public-light", X, P[:40], rho=0.5, total=ZCDP(0.5))
    light = light_plan(0.5, 2, 0.3, 0.4)
    est = light["counts"].rho + light["estimate"].rho
    joint = cluster_plan(ZCDP(est), light["counts"].rho / est, JOINT_FRACTIONS, 0.2)
    assert len(ledger) == len(light) - 2 + len(joint)


def test_route_p2_lists_each_producer_under_its_name() -> None:
    from privgauss.datasets import make_mixture

    X = make_mixture(4000, 2, 1, separation=8.0, random_state=0).X
    ledger = _fit_ledger("agnostic", X, None, epsilon=5.0, delta=1e-6,
                         total=ApproxDP(5.0, 1e-6))
    producers = {e.step.split("/")[0] for e in ledger if e.step.startswith("producer-")}
    assert producers and producers <= {f"producer-{i}" for i in range(1, 10)}
    assert ledger[-1].step == "private-selection"


def test_no_algorithm_keeps_a_standalone_accountant() -> None:
    """Every accountant an algorithm creates forwards to its caller's (``parent=``, ``child``)
    or is prepaid by one of its entries: a bare ``Accountant(...)`` would drop its ledger.
    The one exception is :func:`~privgauss.mixture.subsampling.subsampled_call` called directly,
    without a payer (tests)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "src" / "privgauss"
    bare = []
    for pkg in ("gaussian", "mixture", "reductions"):
        for path in sorted((root / pkg).rglob("*.py")):  # subpackages too (gaussian/coinpress)
            tree = ast.parse(path.read_text())
            for fn in ast.walk(tree):
                if not isinstance(fn, ast.FunctionDef):
                    continue
                for node in ast.walk(fn):
                    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                            and node.func.id == "Accountant"
                            and not any(kw.arg == "parent" for kw in node.keywords)):
                        bare.append(f"{path.relative_to(root).as_posix()}:{fn.name}")
    assert bare == ["mixture/subsampling.py:subsampled_call"]


def test_a_saved_model_keeps_the_sub_computations_ledger(two_clusters, tmp_path) -> None:
    import privgauss as pg

    est = pg.PrivateGaussianMixture(2, epsilon=5.0, delta=1e-6, method="sample-aggregate",
                                    random_state=0, enforce_requirements=False,
                                    ).fit(two_clusters[0])
    parts = est.ledger_[-1].parts
    assert parts  # the parts' CoinPress runs
    path = tmp_path / "model.json"
    pg.io.save(est, path)
    back = pg.io.load(path)
    assert [p.to_dict() for p in back.ledger_[-1].parts] == [p.to_dict() for p in parts]
    assert back.privacy_spent_ == est.privacy_spent_
