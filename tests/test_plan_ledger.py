"""Every registered method states its budget plan as data (``Method.plan(facts)``), and every
fit's ledger follows it step by step: the same step names, in order, with the same amounts
(relative 1e-12), a planned group being the consecutive entries of a sub-computation whose own
schedule is planned from DP outputs; and the parts compose to exactly the budget."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import privgauss as pg
from privgauss import methods
from privgauss.privacy import ZCDP, ApproxDP, BudgetPlan, PureDP, composed, ledger_mismatch

RHO = {"rho": 0.5}
APPROX = {"epsilon": 1.0, "delta": 1e-6}
PURE = {"epsilon": 1.0}
PRIOR = {"mean_bound": 20.0, "cov_bounds": (0.1, 10.0)}


def _rows(n: int, d: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d)) + 3.0


# (method, estimator parameters, n, d, public rows): every Gaussian method and route, under
# each budget notion it takes
GAUSSIAN: list[tuple[str, dict[str, Any], int, int, int]] = [
    ("clip", {**RHO, "covariance": "identity", "mean_bound": 20.0}, 2000, 2, 0),
    ("clip", {**APPROX, "covariance": "identity", "mean_bound": 20.0}, 2000, 2, 0),
    ("clip", {**PURE, "covariance": "identity", "mean_bound": 20.0}, 2000, 2, 0),
    ("coinpress", {**RHO, **PRIOR}, 2000, 2, 0),
    ("coinpress", {**APPROX, **PRIOR}, 2000, 2, 0),
    ("coinpress", {**RHO, "covariance": "identity", "mean_bound": 20.0}, 2000, 2, 0),
    ("coinpress", {**RHO, "mean": [3.0, 3.0], "cov_bounds": (0.1, 10.0)}, 2000, 2, 0),
    ("public", RHO, 2000, 2, 5),
    ("public", APPROX, 2000, 2, 5),
    ("public", {**RHO, "covariance": "identity"}, 2000, 2, 1),
    ("public", {**RHO, "mean": [3.0, 3.0]}, 2000, 2, 5),
    ("histogram", APPROX, 4000, 2, 0),
    ("histogram", {**APPROX, "covariance": "identity"}, 4000, 2, 0),
    ("histogram", {**APPROX, "constants": "theory"}, 40_000, 2, 0),
    ("hypothesis-selection", PURE, 1000, 1, 3),
    ("hypothesis-selection", {**PURE, "covariance": "identity", "mean_bound": 2.0}, 1000, 1, 0),
    ("ppe", APPROX, 200_000, 2, 0),
]


def _check(est: Any, plan: BudgetPlan | None) -> None:
    assert plan is not None
    assert plan.total == est.budget_
    assert plan.sums_to_total(), f"{plan.composed()} != {plan.total}"
    for branch in plan.branches:
        assert branch.sums_to_total()
    why = ledger_mismatch(plan, est.ledger_)
    assert why is None, why + "\nledger: " + ", ".join(e.step for e in est.ledger_)


@pytest.mark.parametrize(("method", "params", "n", "d", "m"), GAUSSIAN,
                         ids=[f"{g[0]}-{i}" for i, g in enumerate(GAUSSIAN)])
def test_gaussian_fit_follows_its_plan(method: str, params: dict[str, Any], n: int, d: int,
                                       m: int) -> None:
    X = _rows(n, d)
    P = _rows(m, d, seed=1) if m else None
    est = pg.PrivateGaussian(method=method, random_state=0, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, public_X=P)
    assert est.method_ == method
    _check(est, est.budget_plan_)
    if method == "coinpress":
        _check_coinpress_steps(est, params, X, P)


def _stage(prefix: str, steps: Any) -> list[tuple[str, ZCDP]]:
    """The ledger entries of one planned CoinPress stage (``steps.run_mean``/``run_cov``):
    ``"<prefix> i/t"`` at each step's ρ, after its radius search's m counts
    ``"<prefix> i/t radius j/m"`` at ρ_search/m each when the step plans one."""
    out = []
    for i, s in enumerate(steps):
        name, rho = f"{prefix} {i + 1}/{len(steps)}", s.rho
        if s.search is not None:
            m = s.search.queries
            out += [(f"{name} radius {j + 1}/{m}", ZCDP(s.search.rho / m)) for j in range(m)]
            rho = s.rho - s.search.rho
        out.append((name, ZCDP(rho)))
    return out


def _check_coinpress_steps(est: Any, params: dict[str, Any], X: np.ndarray,
                           P: np.ndarray | None) -> None:
    """The CoinPress group step by step: its steps are planned from public quantities only
    (n, d, ρ, the prior, β), so the plan knows each entry's name and amount. The known-mean,
    known-covariance and sequential routes are expanded from their public schedules; the
    mean-first route (chosen from public quantities too) is checked to charge the same
    entries on other rows of the same shape."""
    from privgauss.gaussian.coinpress import mean_first, split_mode
    from privgauss.gaussian.coinpress import plan as cp_plan
    from privgauss.gaussian.coinpress.cov_plan import covariance_schedule
    from privgauss.gaussian.coinpress.mean_plan import mean_schedule

    plan = est.budget_plan_
    (group,) = plan.groups
    rho = plan.part(group, ZCDP).rho
    n, d = X.shape
    assert n * d < split_mode.SPLIT_MIN_VALUES  # the split mode's steps are not expanded here
    if group == "coinpress-mean":
        steps = _stage(group, mean_schedule(n, d, params["mean_bound"], rho, beta=0.01))
    elif group == "coinpress-cov":
        lo, hi = params["cov_bounds"]
        steps = _stage(group, covariance_schedule(n, d, hi / lo, rho, beta=est.beta))
    else:
        R, (lo, hi) = params["mean_bound"], params["cov_bounds"]
        gp = cp_plan.practical_plan(n, d, rho, R, lo, hi, R / lo**0.5, 0.1, 0.0)
        if mean_first.use_mean_first(n, d, gp.cov_err, rho, R, (lo, hi), trusted_prior=True):
            other = pg.PrivateGaussian(method="coinpress", random_state=1, **params)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                other.fit(X[::-1] * 1.5 - 2.0, public_X=P)
            assert [(e.step, e.cost) for e in other.ledger_] == [
                (e.step, e.cost) for e in est.ledger_]
            return
        steps = [e for prefix, stage in [("cov-coarse", gp.coarse), ("mean-rough", gp.rough),
                                         ("cov", gp.cov), ("mean", gp.mean)]
                 for e in _stage(f"{group} {prefix}", stage)]
    assert plan.names()[0] == group  # the group's steps come first, then the other parts
    full = BudgetPlan.of(plan.total, {**dict(steps), **dict(plan.parts[1:])})
    why = ledger_mismatch(full, est.ledger_)
    assert why is None, why


def test_tied_axes_follow_the_histogram_plans_branch() -> None:
    """A column holding one value on 90 % of the rows, the rest spread (a DP output of the
    localisation): the octave release of tied axes runs, and the ledger follows the plan's
    branch, not its main line."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(4000, 2)) + 3.0
    X[:, 1] = np.where(rng.random(4000) < 0.9, 5.0, rng.normal(size=4000) * 3.0)
    est = pg.PrivateGaussian(method="histogram", random_state=0, **APPROX)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)
    assert "localise-ties" in [e.step for e in est.ledger_]
    _check(est, est.budget_plan_)
    plan = est.budget_plan_
    main = BudgetPlan.of(plan.total, dict(plan.parts), groups=plan.groups)
    assert ledger_mismatch(main, est.ledger_) is not None


def _notion(params: dict[str, Any]) -> str:
    if "rho" in params:
        return "zcdp"
    return "approx" if "delta" in params else "pure"


def test_every_registered_method_and_budget_notion_is_covered() -> None:
    """Every (method, budget notion) the registry accepts has a fit checked step by step
    above (CoinPress's split mode aside: its steps are planned inside its group)."""
    for kind, cases in (("gaussian", GAUSSIAN), ("mixture", MIXTURE)):
        covered = {(c[0], _notion(c[1])) for c in cases}
        registered = {(name, notion) for name, m in methods.table(kind).items()
                      for notion in m.budgets}
        assert covered == registered, registered ^ covered
    assert all(m.plan is not None for k in methods.KINDS for m in methods.table(k).values())


def _mixture(n: int, d: int, k: int, separation: float = 8.0, seed: int = 12) -> np.ndarray:
    return pg.datasets.make_mixture(n, k, d, separation=separation, random_state=seed).X


MIXTURE: list[tuple[str, dict[str, Any], int, int, int, int]] = [
    ("em", APPROX, 6000, 2, 2, 0),
    ("em", RHO, 6000, 2, 2, 10),
    ("em", {**APPROX, "mean_bound": 50.0, "cov_bounds": (0.01, 100.0)}, 6000, 2, 2, 0),
    ("em", {**RHO, "mean_bound": 50.0, "cov_bounds": (0.01, 100.0)}, 6000, 2, 2, 0),
    ("em", APPROX, 6000, 2, 2, 10),
    # a loud exploring step: the over-parameterised run (k' = 4; test_private_em checks the
    # plan is), reduced to k = 2 before its last REDUCE_STEPS steps
    ("em", APPROX, 12_000, 5, 2, 0),
    # ... whose refining steps are loud too: LOUD_REDUCE_STEPS of them (k' = 6, k = 3)
    ("em", APPROX, 8000, 6, 3, 0),
    ("kssu", {"epsilon": 5.0, "delta": 1e-6, "method_params": {"max_points": 2000}},
     19_000, 2, 2, 0),
    ("sample-aggregate", {"epsilon": 5.0, "delta": 1e-6}, 19_000, 2, 2, 0),
    ("pegme", {"epsilon": 5.0, "delta": 1e-6, "method_params": {"max_points": 2000}},
     19_000, 2, 2, 0),
    ("public-heavy", RHO, 19_000, 2, 2, 200),
    ("public-heavy", {"epsilon": 5.0, "delta": 1e-6}, 19_000, 2, 2, 200),
    ("public-light", RHO, 19_000, 2, 2, 40),
    ("public-light", {"epsilon": 5.0, "delta": 1e-6}, 19_000, 2, 2, 40),
    ("ppe", {"epsilon": 5.0, "delta": 1e-6}, 40_000, 1, 1, 0),
    ("agnostic", {"epsilon": 5.0, "delta": 1e-6}, 40_000, 1, 1, 0),
    # quiet steps: the summary start (K' = 3k Lloyd clusters); n_steps fixed, so no DP stop
    # (a stopped fit's ledger misses the skipped steps: tests/test_neighbour_outcomes.py)
    ("em", {"epsilon": 1e4, "delta": 1e-6, "method_params": {"n_steps": 12}}, 6000, 2, 2, 0),
]


@pytest.mark.parametrize(("method", "params", "n", "d", "k", "m"), MIXTURE,
                         ids=[f"{g[0]}-{i}" for i, g in enumerate(MIXTURE)])
def test_mixture_fit_follows_its_plan(method: str, params: dict[str, Any], n: int, d: int,
                                      k: int, m: int) -> None:
    X = _mixture(n + m, d, k)
    P, X = (X[:m], X[m:]) if m else (None, X)
    est = pg.PrivateGaussianMixture(k, method=method, random_state=0,
                                    enforce_requirements=False, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est.fit(X, public_X=P)
        except pg.EstimationFailed:
            pytest.fail("no fit")
    _check(est, est.budget_plan_)


@pytest.mark.slow  # ~15 s: EM on each of the PPE's blocks
def test_the_mixture_ppe_ledger_follows_its_plan_through_its_failure() -> None:
    """The faithful mixture PPE (k >= 2) passes its stability test only at astronomically
    large n; its ⊥ (a DP output) comes after both planned charges, so the ledger of the failed
    fit is its plan."""
    params = {"epsilon": 50.0, "delta": 1e-4}  # a large budget: fewer blocks, a faster fit
    X = _mixture(2000, 1, 2)
    acct = pg.Accountant(ApproxDP(50.0, 1e-4))
    est = pg.PrivateGaussianMixture(2, method="ppe", random_state=0, accountant=acct,
                                    enforce_requirements=False, **params)
    with pytest.raises(pg.EstimationFailed, match="stability test"):
        est.fit(X)
    preview = pg.mixture_plan(2000, 1, 2, method="ppe", enforce_requirements=False, **params)
    assert preview.method == "ppe"
    plan = methods.get("mixture", "ppe").plan(preview.facts)  # type: ignore[misc]
    assert plan is not None and plan.sums_to_total()
    assert ledger_mismatch(plan, acct.ledger) is None
    assert [e.step for e in acct.ledger] == ["ppe-mixture-mask", "ppe-mixture-test"]


# ---------------------------------------------------------------------------- the matching rule


class _Entry:
    def __init__(self, step: str, cost: Any) -> None:
        self.step, self.cost = step, cost


def test_ledger_mismatch_names_the_first_difference() -> None:
    total = ZCDP(1.0)
    plan = BudgetPlan.of(total, {"a": ZCDP(0.25), "b": ZCDP(0.5), "c": ZCDP(0.25)},
                         groups=("b",))
    ok = [_Entry("a", ZCDP(0.25)), _Entry("b 1/2", ZCDP(0.2)), _Entry("b/x", ZCDP(0.3)),
          _Entry("c", ZCDP(0.25))]
    assert ledger_mismatch(plan, ok) is None
    # an amount off by more than the tolerance, a renamed step, a missing or extra entry,
    # a group that does not compose to its part, a group with no entry, another notion
    bad = {
        "costs": [_Entry("a", ZCDP(0.25 * (1 + 1e-9))), *ok[1:]],
        "step 'x'": [_Entry("x", ZCDP(0.25)), *ok[1:]],
        "ends before": ok[:3],
        "not in the plan": [*ok, _Entry("d", ZCDP(0.1))],
        "compose to": [ok[0], _Entry("b 1/2", ZCDP(0.2)), ok[3]],
        "steps of 'b'": [ok[0], ok[3]],
        "planned 0.25-zCDP": [ok[0], ok[1], ok[2], _Entry("c", PureDP(0.25))],
    }
    for why, entries in bad.items():
        got = ledger_mismatch(plan, entries)
        assert got is not None and why in got, (why, got)
    # "b-x" is not a step of the group "b" (only "b", "b …" and "b/…" are)
    assert ledger_mismatch(plan, [ok[0], _Entry("b-x", ZCDP(0.5)), ok[3]]) is not None
    # within the relative tolerance
    assert ledger_mismatch(plan, [_Entry("a", ZCDP(0.25 * (1 + 1e-13))), *ok[1:]]) is None


def test_a_branch_is_followed_when_the_plan_is_not() -> None:
    total = ApproxDP(1.0, 1e-6)
    main = {"x": ApproxDP(0.5, 1e-6), "y": PureDP(0.5)}
    other = BudgetPlan.of(total, {"x": ApproxDP(0.5, 1e-6), "t": PureDP(0.1), "y": PureDP(0.4)})
    plan = BudgetPlan.of(total, main, branches=(other,))
    assert ledger_mismatch(plan, [_Entry("x", ApproxDP(0.5, 1e-6)), _Entry("y", PureDP(0.5))]
                           ) is None
    assert ledger_mismatch(plan, [_Entry("x", ApproxDP(0.5, 1e-6)), _Entry("t", PureDP(0.1)),
                                  _Entry("y", PureDP(0.4))]) is None
    # the main plan's difference is reported when no branch matches either
    got = ledger_mismatch(plan, [_Entry("x", ApproxDP(0.5, 1e-6)), _Entry("t", PureDP(0.5))])
    assert got is not None and "planned 'y'" in got
    with pytest.raises(Exception, match="total"):
        BudgetPlan.of(total, main, branches=(BudgetPlan.of(ApproxDP(2.0, 1e-6), {
            "x": ApproxDP(2.0, 1e-6)}),))


def test_the_preview_and_the_command_show_the_plan() -> None:
    from click.testing import CliRunner

    from privgauss.cli import main

    preview = pg.mixture_plan(100_000, 2, 2, epsilon=2.0, delta=1e-6, method="kssu")
    plan = preview.budget_plan
    assert plan is not None and plan.names()[-1] == "kssu/leaves/estimate"
    assert plan == methods.get("mixture", "kssu").plan(preview.facts)  # type: ignore[misc]
    res = CliRunner().invoke(main, ["requirements", "mixture", "kssu", "--n", "1e5", "--d", "2",
                                    "--k", "2", "--epsilon", "2", "--delta", "1e-6", "--plan"])
    assert res.exit_code == 0, res.output
    assert "kssu/level-0/enclosing-ball" in res.output and "kssu/leaves/estimate" in res.output
    res = CliRunner().invoke(main, ["requirements", "mixture", "auto", "--n", "1e5", "--d", "2",
                                    "--k", "2", "--epsilon", "1", "--delta", "1e-6", "--plan"])
    assert res.exit_code == 0, res.output
    assert "em clipped count" in res.output and "(several steps)" in res.output


def _producer_follows_its_learners_plan(entry: Any, learner: str, d: int, k: int) -> None:
    """A P2 producer's entry (its share, one (ε, δ) entry) keeps its learner's releases in its
    parts, and they follow the learner's own plan at that share step by step."""
    from privgauss.mixture.kssu_budget import plan_kssu_budget
    from privgauss.mixture.sample_aggregate_budget import plan_sa_budget

    share = entry.cost
    own = {"kssu": plan_kssu_budget, "sample-aggregate": plan_sa_budget}[learner]
    plan = own(share, k, d).budget_plan().prefixed(f"{entry.step}/{learner}/")
    why = ledger_mismatch(BudgetPlan.of(share, dict(plan.parts), groups=plan.groups),
                          entry.parts)
    assert why is None, why


@pytest.mark.slow  # ~20 s: a KSSU producer, then the selection
def test_agnostic_with_learner_producers_follows_its_plan() -> None:
    """One producer (KSSU) at this n: the top-level ledger is the selection's plan, one entry
    per producer share (before, the producer's releases were top-level entries grouped under
    its name; now they are the share's parts), and the parts follow KSSU's own plan."""
    X = _mixture(19_000, 2, 2)
    est = pg.PrivateGaussianMixture(2, method="agnostic", epsilon=5.0, delta=1e-6,
                                    random_state=0, enforce_requirements=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)
    _check(est, est.budget_plan_)
    assert est.budget_plan_.names() == ["producer-1", "private-selection"]  # type: ignore[union-attr]
    assert est.fit_info_["producers"] == ["kssu"]
    _producer_follows_its_learners_plan(est.ledger_[0], "kssu", 2, 2)


def test_agnostic_with_failing_producers_follows_its_plan() -> None:
    """Too few rows for the KSSU producer (requirements not enforced): it fails (⊥, a DP
    output) and the selection has no candidate; the failed fit's ledger is still the plan,
    and the producer's releases (its unused parts included) compose to its share."""
    params = {"epsilon": 5.0, "delta": 1e-6}
    acct = pg.Accountant(ApproxDP(5.0, 1e-6))
    est = pg.PrivateGaussianMixture(2, method="agnostic", random_state=0, accountant=acct,
                                    enforce_requirements=False, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(pg.EstimationFailed, match="every candidate producer failed"):
            est.fit(_mixture(3000, 2, 2))
    preview = pg.mixture_plan(3000, 2, 2, method="agnostic", enforce_requirements=False,
                              **params)
    plan = methods.get("mixture", "agnostic").plan(preview.facts)  # type: ignore[misc]
    assert plan is not None and plan.sums_to_total()
    assert ledger_mismatch(plan, acct.ledger) is None
    assert [e.step for e in acct.ledger] == ["producer-1", "private-selection"]
    entry = acct.ledger[0]
    got = composed(entry.cost, [p.cost for p in entry.parts])
    assert entry.parts and isinstance(got, ApproxDP)
    assert got.epsilon == pytest.approx(entry.cost.epsilon, rel=1e-9)
    assert got.delta == pytest.approx(entry.cost.delta, rel=1e-9)


def test_private_selection_ledger_is_its_plan_whatever_the_producers_do() -> None:
    """Producers that spend all their share as zCDP (which the selection's (ε, δ) total would
    compose more tightly than their shares), stop early and fail, or fail before any charge:
    the ledger is :func:`selection_plan` step by step, each share one entry holding what its
    producer released, and the whole budget is spent exactly."""
    from privgauss.mechanisms import Release
    from privgauss.reductions.selection import private_selection, selection_plan

    X = np.random.default_rng(0).normal(size=(600, 1))

    def spending(fraction: float, fail: bool) -> Any:
        def make(Xg: np.ndarray, share: ApproxDP, release: Release) -> Any:
            rho = release.accountant.remaining_zcdp() * fraction
            release.accountant.spend(ZCDP(rho / 2), step="a")
            release.accountant.spend(ZCDP(rho / 2), step="b")
            if fail:
                raise pg.EstimationFailed("stopped", step="b")
            return np.ones(1), np.full((1, 1), float(np.mean(Xg))), np.ones((1, 1, 1))

        return make

    def silent(Xg: np.ndarray, share: ApproxDP, release: Release) -> Any:
        raise pg.EstimationFailed("nothing released")

    producers = [spending(1.0, False), spending(0.3, True), silent, spending(1.0, False)]
    acct = pg.Accountant(ApproxDP(2.0, 1e-6))
    _, info = private_selection(X, producers, 2.0, 1e-6, release=Release.of(acct, 0))
    assert info["n_candidates"] == 2 and info["n_failed"] == 2
    plan = selection_plan(2.0, 1e-6, len(producers))
    assert ledger_mismatch(plan, acct.ledger) is None
    assert [len(e.parts) for e in acct.ledger] == [2, 2, 0, 2, 0]
    assert acct.ledger[1].parts[0].step == "producer-2/a"
    assert acct.remaining is None  # spent exactly: no top-up, no rest


def test_the_faithful_agnostic_route_follows_its_plan() -> None:
    """constants="theory": R Filter-and-Test rounds and the Choosing Mechanism, each charged
    on every dataset; identical rows (every block's list holds their cell) fit, and the ledger
    is the plan (a ⊥ after the Choosing Mechanism's charge ends the same way:
    test_agnostic.py::test_estimator_faithful_route_end_to_end)."""
    from privgauss.reductions.agnostic import faithful_plan

    eps, delta = 50.0, 1e-3
    n = faithful_plan(2, 1, eps, delta).n_needed
    est = pg.PrivateGaussianMixture(1, method="agnostic", constants="theory", epsilon=eps,
                                    delta=delta, random_state=0, enforce_requirements=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(np.tile([2.0, -1.0], (n, 1)))
    _check(est, est.budget_plan_)
    assert est.budget_plan_.names()[-1] == "choosing"  # type: ignore[union-attr]
    assert len(est.budget_plan_) >= 2  # type: ignore[arg-type]


def test_a_share_paid_on_first_charge() -> None:
    """``Accountant.paid_on_first_charge``: the share is one entry of the payer's ledger,
    charged at the sub-computation's first charge (refused, changing nothing, when the payer
    cannot pay it) or by ``settle``; its charges are its parts, refused beyond the share."""
    acct = pg.Accountant(ApproxDP(1.0, 1e-6))
    share = ApproxDP(0.5, 5e-7)
    sub = acct.paid_on_first_charge(share, "part")
    assert acct.ledger == [] and sub.can_spend(ZCDP(1e-3))
    assert not sub.can_spend(PureDP(0.6))  # beyond the share
    sub.spend(ZCDP(1e-3), step="a")
    sub.spend(ZCDP(2e-3), step="b")
    sub.settle()  # already paid: nothing more
    assert [(e.step, e.cost) for e in acct.ledger] == [("part", share)]
    assert [p.step for p in acct.ledger[0].parts] == ["part/a", "part/b"]
    quiet = acct.paid_on_first_charge(share, "quiet")
    quiet.settle()  # charged nothing: pays its share now
    assert [e.step for e in acct.ledger] == ["part", "quiet"] and acct.remaining is None

    poor = pg.Accountant(ApproxDP(0.4, 1e-6))
    sub = poor.paid_on_first_charge(share, "part")
    assert not sub.can_spend(ZCDP(1e-4))
    # a reservation through it sees the payer's parents too
    fit = pg.Accountant(ApproxDP(1.0, 1e-6), parent=poor)
    with pytest.raises(pg.PrivacyBudgetError):
        BudgetPlan.of(share, {"a": share}).reserve(fit.paid_on_first_charge(share, "p"), "x")
    with pytest.raises(pg.PrivacyBudgetError):
        sub.spend(ZCDP(1e-4), step="a")
    assert poor.ledger == [] and sub.ledger == []
