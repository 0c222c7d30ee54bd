"""``privgauss requirements``: what n a method needs, before any budget is spent."""

from __future__ import annotations

import math
from typing import Any

import click

from ..exceptions import InvalidDataError, PrivacyBudgetError
from ._common import (
    RegistryChoice,
    gaussian_methods,
    in_cli_words,
    mixture_methods,
    run_user,
)
from .options import BudgetFlags, PriorFlags, budget_options, prior_options

# -- requirements ------------------------------------------------------------------------------


@click.group("requirements")
def requirements_cmd() -> None:
    """What n a method needs (from public quantities only; nothing is read or spent).

    Exit status: 0 when --n is enough (or not given), 1 when it is too few, 2 on bad input.

    \b
    Examples:
      privgauss requirements gaussian public --d 10 --rho 0.5 --n 8000
      privgauss requirements gaussian coinpress --d 10 --rho 0.5 --mean-bound 1e3 --cond 100
      privgauss requirements mixture kssu --n 50000 --d 2 --k 3 --epsilon 1 --delta 1e-6
      privgauss requirements mixture auto --n 2.7e5 --d 3 --k 3 --epsilon 1 --delta 1e-6
    """


def gaussian_bound(method: str, d: int, budget: Any, *, alpha: float, beta: float,
                   mean_bound: float | None, cond: float, mean_only: bool,
                   gamma: float) -> tuple[Any, str]:
    """The theory :class:`~privgauss.theory.Bound` for a Gaussian method, and what else it needs
    (the method's own ``theory_bound`` in :mod:`privgauss.methods`)."""
    from .. import methods

    spec = methods.get("gaussian", method)
    if spec.theory_bound is None:
        raise InvalidDataError(
            f"no sample-size formula is registered for Gaussian method {method!r}")
    facts = methods.Facts("gaussian", budget, 0, d, mean_bound=mean_bound,
                          known_covariance=mean_only, beta=beta, gamma=gamma)
    return spec.theory_bound(facts, alpha, cond)


def _gaussian_report(method: str, d: int, n: float | None, budget: Any, *, alpha: float,
                     beta: float, prior: PriorFlags, cond: float, mean_only: bool,
                     gamma: float, n_public: int | None) -> bool | None:
    """Print the theorem's bound and, when the method has one, the n this implementation's
    own plan needs (:mod:`privgauss.methods`); the verdict (None without ``n``) follows the
    practical requirement when there is one, else the theorem."""
    from .. import methods

    spec = methods.get("gaussian", method)
    if spec.theory_bound is None and spec.requirements is None:
        raise InvalidDataError(
            f"no sample-size formula is registered for Gaussian method {method!r}")
    bound = None
    if spec.theory_bound is not None:
        bound, needs = gaussian_bound(method, d, budget, alpha=alpha, beta=beta,
                                      mean_bound=prior.mean_bound, cond=cond,
                                      mean_only=mean_only, gamma=gamma)
        click.echo(f"{method}: {bound}")
        click.echo(f"also needs: {needs}")
    facts = methods.Facts("gaussian", budget, 0 if n is None else int(n), d,
                          n_public=n_public, mean_bound=prior.mean_bound,
                          cov_bounds=prior.cov_bounds, known_covariance=mean_only, beta=beta,
                          gamma=gamma)
    req = None if spec.requirements is None else spec.requirements(facts)
    if req is not None:
        click.echo(f"practical: this implementation needs n >~ {req.n_needed:.3g} "
                   f"({req.dominant}; {req.note or 'its own plan'})")
    if n is None:
        return None
    if req is not None:
        click.echo(f"verdict: n = {int(n)} is {'enough' if req.ok else 'too few'} for a fit "
                   "by this implementation")
        return bool(req.ok)
    assert bound is not None
    verdict = "enough" if n >= bound.n else "too few"
    click.echo(f"verdict: n = {int(n)} is {verdict} for TV error {alpha:g} by this "
               "(indicative) bound")
    return bool(n >= bound.n)


@requirements_cmd.command("gaussian")
@click.argument("method", type=RegistryChoice(lambda: [m for m in gaussian_methods()
                                                        if m != "auto"]))
@click.option("--d", "d", type=int, required=True, help="dimension")
@click.option("--n", "n", type=float, default=None, help="your number of private rows (verdict)")
@budget_options
@click.option("--alpha", type=float, default=0.1, show_default=True, help="target TV error")
@click.option("--beta", type=float, default=0.05, show_default=True, help="failure probability")
@prior_options("prior radius R",
               "eigenvalue bounds LO HI of the covariance (coinpress: its own plan)")
@click.option("--cond", type=float, default=1.0, show_default=True,
              help="covariance condition-number bound K")
@click.option("--mean-only", is_flag=True, help="known covariance: estimate the mean only")
@click.option("--gamma", type=float, default=0.0, show_default=True,
              help="TV distance between public and private distributions")
@click.option("--n-public", type=int, default=None,
              help="your number of public rows (default: the fewest the method takes)")
def requirements_gaussian(method: str, d: int, n: float | None, budget: BudgetFlags,
                          alpha: float, beta: float, prior: PriorFlags, cond: float,
                          mean_only: bool, gamma: float, n_public: int | None) -> None:
    """Sample size of a Gaussian METHOD: the paper's theorem (indicative: constants 1) and,
    for methods whose fit can fail or refuse at small n (public, histogram, ppe; coinpress
    with --mean-bound and --cov-bounds), the n this implementation's own plan needs — the
    verdict then follows it.

    \b
    Examples:
      privgauss requirements gaussian public --d 10 --rho 0.5 --n 8000
      privgauss requirements gaussian coinpress --d 30 --rho 0.5 --n 455 \\
          --mean-bound 1e6 --cov-bounds 1e-6 1e10
    """
    from ..privacy import make_budget

    def run() -> None:
        stated = make_budget(**budget.kwargs())
        if d < 1 or (n is not None and not (math.isfinite(n) and n >= 1)) or (
                n_public is not None and n_public < 0):
            raise InvalidDataError("--d must be at least 1, --n a finite number >= 1 and "
                                   "--n-public at least 0")
        cov = prior.cov_bounds
        if cov is not None and not 0 < cov[0] <= cov[1] < math.inf:
            raise InvalidDataError("--cov-bounds must be LO HI with 0 < LO <= HI < inf")
        ok = _gaussian_report(method, d, n, stated, alpha=alpha, beta=beta, prior=prior,
                              cond=cond, mean_only=mean_only, gamma=gamma, n_public=n_public)
        if ok is not None:
            enough.append(ok)

    enough: list[bool] = []
    run_user(run)
    if enough and not enough[0]:
        raise SystemExit(1)  # too few rows: a script can test the verdict


@requirements_cmd.command("mixture")
@click.argument("method", type=RegistryChoice(mixture_methods))
@click.option("--n", "n", type=float, required=True, help="your number of private rows")
@click.option("--d", "d", type=int, required=True, help="dimension")
@click.option("--k", "k", type=int, required=True, help="number of components")
@budget_options
@click.option("--min-weight", type=float, default=None, help="smallest weight (default 1/k)")
@click.option("--n-public", type=int, default=None,
              help="your number of public rows (--public of fit-mixture)")
@click.option("--separation", type=float, default=None,
              help="the separation ratio you assume (fit-mixture's --separation)")
@prior_options("prior radius R of the components' means (with --cov-bounds)",
               "eigenvalue bounds LO HI of the components' covariances (with --mean-bound)")
@click.option("--constants", type=click.Choice(["practical", "theory"]), default="practical",
              show_default=True, help="this implementation's thresholds, or the theorem's "
              "(auto: fit-mixture's --constants; its choice reads the practical ones)")
@click.option("--plan", "show_plan", is_flag=True,
              help="also print the budget plan: every step the fit's ledger would record, "
              "with its cost")
def requirements_mixture(method: str, n: float, d: int, k: int, budget: BudgetFlags,
                         min_weight: float | None, n_public: int | None,
                         separation: float | None, prior: PriorFlags, constants: str,
                         show_plan: bool) -> None:
    """Whether n rows can work for a mixture METHOD, and what n it needs; `auto`: which method
    `fit-mixture` would run with these flags, and why, before anything is read or spent.

    A rho budget works for the methods that take one (em, public-light, public-heavy); the
    others need --epsilon and --delta. Exit status 1 when n is too few (auto: when fit-mixture
    would refuse for too few rows).

    \b
    Examples:
      privgauss requirements mixture auto --n 2.7e5 --d 3 --k 3 --epsilon 1 --delta 1e-6
      privgauss requirements mixture auto --n 1e5 --d 2 --k 2 --epsilon 1 --delta 1e-6 \\
          --separation 5
      privgauss requirements mixture em --n 5000 --d 3 --k 2 --rho 0.5 --n-public 4
      privgauss requirements mixture sample-aggregate --n 1e5 --d 2 --k 2 --epsilon 2 --delta 1e-6
      privgauss requirements mixture kssu --n 1e5 --d 2 --k 2 --epsilon 2 --delta 1e-6 --plan
    """
    from .. import methods
    from ..privacy import make_budget

    def run() -> None:
        stated = make_budget(**budget.kwargs())
        mean_bound, cov_bounds = prior.mean_bound, prior.cov_bounds
        if not (math.isfinite(n) and n >= 1) or d < 1 or k < 1 or (
                n_public is not None and n_public < 0):
            raise InvalidDataError("--n must be a finite number >= 1, --d and --k at least 1, "
                                   "--n-public at least 0")
        if separation is not None and not (math.isfinite(separation) and separation > 0):
            raise InvalidDataError("--separation must be a finite number > 0")
        if (mean_bound is None) != (cov_bounds is None):
            raise InvalidDataError("--mean-bound and --cov-bounds go together (the prior "
                                   "bounds every component's mean and covariance)")
        if cov_bounds is not None and not 0 < cov_bounds[0] <= cov_bounds[1] < math.inf:
            raise InvalidDataError("--cov-bounds must be LO HI with 0 < LO <= HI < inf")
        if method == "auto":
            enough.append(_auto_report(int(n), d, k, stated, min_weight=min_weight,
                                       n_public=n_public or 0, separation=separation,
                                       mean_bound=mean_bound, cov_bounds=cov_bounds,
                                       constants=constants, show_plan=show_plan))
            return
        spec = methods.get("mixture", method)
        if not spec.accepts(stated):
            takes = " or ".join(sorted({"zcdp": "--rho", "approx": "--epsilon and --delta "
                                        "(delta > 0)", "pure": "--epsilon alone"}[b]
                                       for b in spec.budgets))
            raise PrivacyBudgetError(f"method {method!r} takes {takes}")
        # the formula the command's --constants names; public rows are checked when stated
        facts = methods.Facts("mixture", stated, int(n), d, k=k, n_public=n_public,
                              min_weight=min_weight, separation=separation,
                              mean_bound=mean_bound, cov_bounds=cov_bounds, formula=constants,
                              constants=constants)
        if show_plan:
            _echo_plan(None if spec.plan is None else spec.plan(facts))
        if spec.requirements is None:
            click.echo(f"{method}: no sample-size check is registered for this method")
            return
        req = spec.requirements(facts)
        click.echo(str(req).strip())
        for term, value in req.terms.items():
            click.echo(f"  {term:<45} n >~ {value:.3g}")
        click.echo(f"verdict: n = {int(n)} is {'enough' if req.ok else 'too few'}")
        enough.append(req.ok)

    enough: list[bool] = []
    run_user(run)
    if enough and not enough[0]:
        raise SystemExit(1)  # too few rows: a script can test the verdict


def _echo_plan(plan: Any) -> None:
    """Print a method's budget plan (or that its route states none)."""
    click.echo("no budget plan is stated for this route" if plan is None else str(plan))


def _auto_report(n: int, d: int, k: int, budget: Any, *, min_weight: float | None,
                 n_public: int, separation: float | None, mean_bound: float | None,
                 cov_bounds: tuple[float, float] | None, constants: str,
                 show_plan: bool = False) -> bool:
    """Print what ``fit-mixture --method auto`` would run with these flags, why, and what each
    other method lacks (:func:`privgauss.methods.mixture_plan`); True when it would run.
    A refusal for other reasons than too few rows is raised (exit status 2)."""
    from ..methods import mixture_plan
    from ..privacy import ZCDP, ApproxDP, PureDP, estimator_kwargs

    kw: dict[str, Any] = dict(estimator_kwargs(budget))
    assert isinstance(budget, ZCDP | ApproxDP | PureDP)
    plan = mixture_plan(n, d, k, n_public=n_public, min_weight=min_weight,
                        separation=separation, mean_bound=mean_bound, cov_bounds=cov_bounds,
                        constants=constants, **kw)
    if plan.error is not None and not plan.too_few_rows:
        raise plan.error
    if plan.method is not None:
        click.echo(f"auto runs: {plan.method}")
        click.echo(f"why: {in_cli_words(plan.reason)}")
        if show_plan:
            _echo_plan(plan.budget_plan)
    else:
        click.echo(f"auto refuses: {in_cli_words(plan.reason)}")
    req = plan.requirements
    if req is not None:
        click.echo(f"{req.method} needs n >~ {req.n_needed:.3g} ({req.dominant})")
    click.echo("the other methods:")
    for name, why in plan.considered.items():
        if name != plan.method:
            click.echo(f"  {name:<17} {in_cli_words(why)}")
    click.echo(f"verdict: n = {n} is {'enough' if plan.ok else 'too few'}")
    return plan.ok
