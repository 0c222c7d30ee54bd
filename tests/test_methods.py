"""The method registry (``privgauss.methods``, DESIGN.md layer 5): one record per method owns
what it accepts, needs, requires, plans and runs, and nothing outside the registry (and the
algorithms themselves) dispatches on a method's name."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest

import privgauss as pg
from privgauss import methods
from privgauss.exceptions import InvalidDataError, PrivacyBudgetError
from privgauss.methods import Facts

SRC = Path(__file__).resolve().parent.parent / "src" / "privgauss"
# the registry and the algorithms themselves may name methods (an algorithm's ledger steps and
# its own formulas); every other module reads the registry
NAMING = ("methods", "gaussian", "mixture", "reductions")


def _registered() -> set[str]:
    return {name for kind in methods.KINDS for name in methods.names(kind)}


def _method_literals(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, literal) of every string constant of ``source`` equal to a method name."""
    return [(node.lineno, node.value) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value in names]


def test_only_the_registry_and_the_algorithms_name_methods() -> None:
    """No module outside ``methods/`` and the algorithm packages — estimators, cli, io,
    experiments, audit, … — holds a string equal to a registered method's name ("auto"
    aside): they dispatch through the registry."""
    names = _registered() - {"auto"}
    paths = [p for p in sorted(SRC.rglob("*.py"))
             if p.relative_to(SRC).parts[0] not in NAMING]
    assert {"estimators", "cli"} <= {p.relative_to(SRC).parts[0] for p in paths}
    found = [(str(path.relative_to(SRC)), line, value) for path in paths
             for line, value in _method_literals(path.read_text(), names)]
    assert found == [], f"method names outside privgauss.methods (read the registry): {found}"


def _name_comparisons(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, literal) of every comparison (``==``, ``in``, ...) involving a method name."""
    return [(node.lineno, c.value) for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Compare)
            for part in (node.left, *node.comparators) for c in ast.walk(part)
            if isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value in names]


def test_nothing_outside_the_registry_dispatches_on_a_method_name() -> None:
    """The algorithm packages may name methods (their ledger steps, their own reports) but
    never branch on one (``if method == "kssu"``): which formula, public-row count or check a
    method has is a fact of its registry record (``mixture/requirements.py`` has one function
    per learner, reached through the registry: ``pg.mixture_requirements``)."""
    names = _registered() - {"auto"}
    paths = [p for p in sorted(SRC.rglob("*.py")) if p.relative_to(SRC).parts[0] != "methods"]
    assert SRC / "mixture" / "requirements.py" in paths
    found = [(str(path.relative_to(SRC)), line, value) for path in paths
             for line, value in _name_comparisons(path.read_text(), names)]
    assert found == [], f"dispatch on method names outside privgauss.methods: {found}"
    assert _name_comparisons("if m == 'kssu' or m in ('em',):\n    pass\n", names) == [
        (1, "kssu"), (1, "em")]


def test_run_functions_take_a_job_never_the_estimator() -> None:
    """Every registered run function takes one job (public facts, parameter objects and the
    fit's release context: GaussianJob or MixtureJob), and no function of the registry, the
    reductions, synthesis or the mixture learners takes an estimator (a parameter ``est``)
    or both an accountant and a noise source (they take a ``Release``)."""
    import inspect

    for kind in methods.KINDS:
        for name, m in methods.table(kind).items():
            for run in (m.run, m.run_known_mean):
                if run is not None:
                    assert list(inspect.signature(run).parameters) == ["job"], (kind, name)
    checked = 0
    for package in ("methods", "reductions", "synthesis", "mixture"):
        for path in sorted((SRC / package).glob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.FunctionDef):
                    params = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                    args = {a.arg for a in params}
                    annots = " ".join(ast.unparse(a.annotation) for a in params if a.annotation)
                    where = f"{package}/{path.name}: {node.name}"
                    assert "est" not in args, where
                    takes_acct = bool({"acct", "accountant"} & args) or "Accountant" in annots
                    takes_noise = bool({"noise", "src", "noise_source"} & args) or (
                        "NoiseSource" in annots)
                    assert not (takes_acct and takes_noise), where
                    checked += "Release" in annots
    assert checked >= 20  # the walk saw the functions that take a Release (not vacuous)


def test_the_name_check_sees_a_dispatch() -> None:
    """The check above flags a dispatch on a method's name (it would pass vacuously if the
    names or the literals were not found)."""
    names = _registered()
    assert {"coinpress", "kssu", "em", "public-light"} <= names
    code = "def run(m):\n    if m == 'kssu':\n        return 1\n    return {'em': 2}.get(m)\n"
    assert _method_literals(code, names) == [(2, "kssu"), (4, "em")]


def test_registry_records_are_consistent() -> None:
    for kind in methods.KINDS:
        for name, m in methods.table(kind).items():
            assert m.name == name and m.kind == kind
            assert m.summary and m.needs and m.privacy
            assert (SRC.parent.parent / "docs" / m.guide).exists()
            assert callable(m.run)
    with pytest.raises(ValueError, match="one of"):
        methods.get("gaussian", "kssu")
    with pytest.raises(ValueError, match="kind"):
        methods.names("copula")
    # the estimators' lists are the registry's
    assert pg.estimators.gaussian.METHODS == ("auto", *methods.names("gaussian"))
    assert pg.estimators.mixture.METHODS is methods.MIXTURE


def _g(budget: pg.privacy.Budget, **kw: object) -> Facts:
    return Facts("gaussian", budget, kw.pop("n", 1000), kw.pop("d", 3), **kw)  # type: ignore[arg-type]


ZC, APPROX, PURE = pg.ZCDP(0.5), pg.ApproxDP(1.0, 1e-6), pg.PureDP(1.0)


@pytest.mark.parametrize("facts, expected", [
    (_g(ZC, n_public=4), "public"),
    (_g(ZC, n_public=1, known_covariance=True), "public"),
    (_g(ZC, n_public=1), None),  # d+1 public rows needed for the covariance
    (_g(ZC, mean_bound=5.0, cov_bounds=(0.1, 10.0)), "coinpress"),
    (_g(ZC, mean_bound=5.0, cov_bounds=(0.1, 10.0), n_public=4), "public"),
    (_g(APPROX, n=2000), "histogram"),
    (_g(APPROX), None),  # 1000 rows at d = 3: below the bound-free route's requirement
    (_g(PURE, mean_bound=5.0, known_covariance=True), "clip"),
    (_g(PURE, mean_bound=5.0, cov_bounds=(0.1, 10.0)), "hypothesis-selection"),
    (_g(PURE, n_public=4), "hypothesis-selection"),
    (_g(ZC, known_mean=True, n_public=4), "public"),
    (_g(ZC, known_mean=True, cov_bounds=(0.1, 10.0)), "coinpress"),
    (_g(APPROX, known_mean=True), None),  # histogram takes no known mean
    (_g(PURE), None),
])
def test_gaussian_auto_reads_only_public_facts(facts: Facts, expected: str | None) -> None:
    if expected is None:
        with pytest.raises(ValueError, match="public_X|cov_bounds"):
            methods.choose_auto("gaussian", facts)
        return
    name, reason = methods.choose_auto("gaussian", facts)
    assert name == expected and reason
    spec = methods.get("gaussian", name)
    assert spec.accepts(facts.budget)  # auto never picks a method refusing the budget


def test_gaussian_auto_agrees_with_the_estimator() -> None:
    rng = np.random.default_rng(0)
    X, P = rng.standard_normal((4000, 2)), rng.standard_normal((3, 2))
    for kw, public in (({"rho": 0.5}, P), ({"epsilon": 1.0, "delta": 1e-6}, None),
                       ({"rho": 0.5, "mean_bound": 5.0, "cov_bounds": (0.5, 2.0)}, None)):
        g = pg.PrivateGaussian(**kw, random_state=0).fit(X, public_X=public)
        budget = pg.privacy.make_budget(rho=kw.get("rho"), epsilon=kw.get("epsilon"),
                                        delta=kw.get("delta"))
        facts = _g(budget, n=4000, d=2, n_public=0 if public is None else len(public),
                   mean_bound=kw.get("mean_bound"), cov_bounds=kw.get("cov_bounds"))
        assert (g.method_, g.method_reason_) == methods.choose_auto("gaussian", facts)


def test_refusals_name_what_each_method_needs() -> None:
    with pytest.raises(ValueError) as info:
        methods.choose_auto("gaussian", _g(ZC))
    # every method auto can reach says how to enable it
    for name in ("public", "coinpress", "histogram"):
        hint = methods.get("gaussian", name).auto_hint.split("{")[0].split(" (")[0]
        assert hint in str(info.value)
    text = methods.known_mean_refusal(_g(APPROX, known_mean=True), "histogram")
    takes = {m for m in methods.names("gaussian") if methods.get("gaussian", m).known_mean}
    assert takes == {"public", "coinpress"}
    assert {m for m in methods.names("gaussian") if f"method={m!r}" in text} == takes | {
        "histogram"}
    mix = Facts("mixture", APPROX, 50_000, 2, k=2, n_public=3)
    with pytest.raises(InvalidDataError, match="needs at least .* public rows"):
        methods.choose("mixture", "public-heavy", mix)
    with pytest.raises(InvalidDataError, match="public rows"):  # em: a rho budget needs d+1
        methods.choose("mixture", "em", Facts("mixture", ZC, 50_000, 2, k=2))
    with pytest.raises(PrivacyBudgetError, match="zCDP method"):
        methods.choose_auto("mixture", Facts("mixture", ZC, 50_000, 2, k=2))


def test_mixture_fallback_is_the_registered_one() -> None:
    fb = [m for m in methods.table("mixture").values() if m.fallback is not None]
    assert len(fb) == 1
    # a separation kssu and sample-aggregate were validated at, but n below their requirement
    # and above em's: auto falls back to em and says why
    facts = Facts("mixture", APPROX, 10_000, 2, k=2, separation=5.0)
    name, reason = methods.choose_auto("mixture", facts)
    assert name == fb[0].name
    assert reason.startswith("at the stated separation 5, no learner validated there can run")
    assert "'kssu' needs n >~" in reason and "'sample-aggregate' needs n >~" in reason
    with pytest.raises(InvalidDataError, match="no mixture method can work"):  # em: ~980
        methods.choose_auto("mixture", Facts("mixture", APPROX, 900, 2, k=2))


@pytest.mark.parametrize("kind, name, facts", [
    ("mixture", "em", Facts("mixture", pg.ApproxDP(1.0, 1e-6), 20_000, 3, k=2)),
    ("mixture", "em", Facts("mixture", pg.ZCDP(0.5), 20_000, 3, k=2, n_public=10)),
    ("mixture", "kssu", Facts("mixture", pg.ApproxDP(2.0, 1e-6), 20_000, 3, k=3)),
])
def test_budget_plans_are_data_that_spend_exactly_the_budget(kind: str, name: str,
                                                             facts: Facts) -> None:
    """A registered plan is a BudgetPlan of (step, budget) parts: charged to an accountant of
    the total, it fits (spend raises otherwise) and uses all of it."""
    plan = methods.get(kind, name).plan(facts)  # type: ignore[misc]
    assert plan and plan.total == facts.budget and all(isinstance(s, str) for s in plan)
    acct = pg.Accountant(facts.budget)
    for step, part in plan.parts:
        acct.spend(part, step=step)
    assert acct.remaining is None  # nothing left: the plan uses the whole budget


def test_a_registered_plan_matches_the_ledger_of_a_fit() -> None:
    """The plan the registry reports is the one the fit charges (same steps, same costs)."""
    mix = pg.datasets.make_mixture(6000, 2, 2, separation=8.0, random_state=1)
    m = pg.PrivateGaussianMixture(2, epsilon=1.0, delta=1e-6, method="em", random_state=0)
    m.fit(mix.X)
    plan = methods.get("mixture", "em").plan(  # type: ignore[misc]
        Facts("mixture", pg.ApproxDP(1.0, 1e-6), 6000, 2, k=2))
    planned = sum(p.rho for p in plan.budgets() if isinstance(p, pg.ZCDP))
    charged = sum(e.cost.rho for e in m.ledger_ if isinstance(e.cost, pg.ZCDP))
    assert math.isclose(planned, charged, rel_tol=1e-9)
    assert pg.privacy.ledger_mismatch(plan, m.ledger_) is None  # step by step, too


@pytest.mark.parametrize("method, d, budget", [
    ("public", 2, {"rho": 0.5}),
    ("histogram", 2, {"epsilon": 1.0, "delta": 1e-6}),
])
def test_gaussian_requirement_agrees_with_fits(method: str, d: int, budget: dict) -> None:
    """The n ``privgauss requirements gaussian`` states (the method's own plan) is one a fit
    runs at: at 1.2x it succeeds (benchmark: 20/20 seeds for d = 2, 5, 10); below it the
    command says "too few" and exits 1."""
    from click.testing import CliRunner

    from privgauss.cli import main

    b = pg.privacy.make_budget(**budget)
    need = methods.requirements("gaussian", method, _g(b, n=0, d=d, n_public=None)).n_needed
    assert 100 < need < 10_000
    flags = [f"--{k}={v}" for k, v in budget.items()]
    for n, code in ((int(need), 0), (int(0.8 * need), 1)):
        res = CliRunner().invoke(main, ["requirements", "gaussian", method, "--d", str(d),
                                        "--n", str(n), *flags])
        assert res.exit_code == code, res.output
        assert f"{need:.3g}" in res.output
    n = math.ceil(1.2 * need)
    for seed in range(3):
        rng = np.random.default_rng(seed)
        A = rng.standard_normal((d, d))
        cov = A @ A.T + 0.5 * np.eye(d)
        X = rng.multivariate_normal(np.full(d, 50.0), cov, size=n)
        P = rng.multivariate_normal(np.full(d, 50.0), cov, size=d + 1)
        g = pg.PrivateGaussian(**budget, method=method, random_state=seed)
        g.fit(X, public_X=P if method == "public" else None)
        assert np.all(np.isfinite(g.covariance_))
