"""``privgauss requirements``: what n a method needs, before any budget is spent."""

from __future__ import annotations

import math
from typing import Any

import click

from ..exceptions import InvalidDataError, PrivacyBudgetError
from ._common import (
    _budget,
    _budget_options,
    _gaussian_methods,
    _mixture_methods,
    _RegistryChoice,
    _run_user,
)

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
    """


def _as_rho(b: Any) -> float:
    from ..privacy import ZCDP, PureDP, approx_to_zcdp

    if isinstance(b, ZCDP):
        return b.rho
    if isinstance(b, PureDP):
        return b.epsilon**2 / 2
    return approx_to_zcdp(b.epsilon, b.delta)


def gaussian_bound(method: str, d: int, budget: Any, *, alpha: float, beta: float,
                   mean_bound: float | None, cond: float, mean_only: bool,
                   gamma: float) -> tuple[Any, str]:
    """The theory :class:`~privgauss.theory.Bound` for a Gaussian method, and what else it needs."""
    from .. import theory
    from ..privacy import ApproxDP, PureDP

    def need_r() -> float:
        if mean_bound is None:
            raise InvalidDataError(f"method {method!r} needs --mean-bound (the prior radius R)")
        return mean_bound

    rho = _as_rho(budget)
    if method == "clip":
        return theory.clip_mean_n(d, alpha, beta, rho, need_r()), "a known covariance and R"
    if method == "coinpress":
        return (theory.klsu_n(d, alpha, beta, rho, need_r(), cond),
                "R and covariance bounds (condition number <= --cond)")
    if method == "public":
        if mean_only:
            return theory.public_mean_n(d, alpha, beta, rho), "1 public row (known covariance)"
        kw = {"epsilon": budget.epsilon} if isinstance(budget, PureDP) else {"rho": rho}
        return theory.public_gaussian_n(d, alpha, beta, gamma=gamma, **kw), f"{d + 1} public rows"
    if method == "histogram":
        if not isinstance(budget, ApproxDP):
            raise PrivacyBudgetError("method 'histogram' needs --epsilon and --delta")
        return theory.al21_n(d, alpha, beta, budget.epsilon, budget.delta), "no bounds"
    if method == "hypothesis-selection":
        if not isinstance(budget, PureDP):
            raise PrivacyBudgetError("method 'hypothesis-selection' needs --epsilon alone (pure)")
        if mean_bound is None:
            return (theory.public_gaussian_n(d, alpha, beta, epsilon=budget.epsilon, gamma=gamma),
                    f"{d + 1} public rows (or --mean-bound and covariance bounds)")
        return (theory.bksw_n(d, alpha, beta, budget.epsilon, mean_bound,
                              None if mean_only else cond), "R (and covariance bounds)")
    raise InvalidDataError(f"no sample-size formula is registered for Gaussian method {method!r}")


@requirements_cmd.command("gaussian")
@click.argument("method", type=_RegistryChoice(lambda: [m for m in _gaussian_methods()
                                                        if m != "auto"]))
@click.option("--d", "d", type=int, required=True, help="dimension")
@click.option("--n", "n", type=float, default=None, help="your number of private rows (verdict)")
@_budget_options
@click.option("--alpha", type=float, default=0.1, show_default=True, help="target TV error")
@click.option("--beta", type=float, default=0.05, show_default=True, help="failure probability")
@click.option("--mean-bound", type=float, default=None, help="prior radius R")
@click.option("--cond", type=float, default=1.0, show_default=True,
              help="covariance condition-number bound K")
@click.option("--mean-only", is_flag=True, help="known covariance: estimate the mean only")
@click.option("--gamma", type=float, default=0.0, show_default=True,
              help="TV distance between public and private distributions")
def requirements_gaussian(method: str, d: int, n: float | None, rho: float | None,
                          epsilon: float | None, delta: float | None, alpha: float, beta: float,
                          mean_bound: float | None, cond: float, mean_only: bool,
                          gamma: float) -> None:
    """Sample size of a Gaussian METHOD from the paper's theorem (indicative: constants 1).

    \b
    Example:
      privgauss requirements gaussian public --d 10 --rho 0.5 --n 8000
    """
    from ..privacy import make_budget

    def run() -> None:
        budget = make_budget(**_budget(rho, epsilon, delta))
        bound, needs = gaussian_bound(method, d, budget, alpha=alpha, beta=beta,
                                      mean_bound=mean_bound, cond=cond, mean_only=mean_only,
                                      gamma=gamma)
        click.echo(f"{method}: {bound}")
        click.echo(f"also needs: {needs}")
        if n is not None:
            verdict = "enough" if n >= bound.n else "too few"
            click.echo(f"verdict: n = {int(n)} is {verdict} for TV error {alpha:g} by this "
                       "(indicative) bound")
            enough.append(n >= bound.n)

    enough: list[bool] = []
    _run_user(run)
    if enough and not enough[0]:
        raise SystemExit(1)  # too few rows: a script can test the verdict


@requirements_cmd.command("mixture")
@click.argument("method", type=_RegistryChoice(lambda: _mixture_methods()[1:]))
@click.option("--n", "n", type=float, required=True, help="your number of private rows")
@click.option("--d", "d", type=int, required=True, help="dimension")
@click.option("--k", "k", type=int, required=True, help="number of components")
@_budget_options
@click.option("--min-weight", type=float, default=None, help="smallest weight (default 1/k)")
@click.option("--constants", type=click.Choice(["practical", "theory"]), default="practical",
              show_default=True, help="this implementation's thresholds, or the theorem's")
def requirements_mixture(method: str, n: float, d: int, k: int, rho: float | None,
                         epsilon: float | None, delta: float | None, min_weight: float | None,
                         constants: str) -> None:
    """Whether n rows can work for a mixture METHOD, and what n it needs.

    \b
    Example:
      privgauss requirements mixture sample-aggregate --n 1e5 --d 2 --k 2 --epsilon 2 --delta 1e-6
    """
    from ..estimators.mixture import METHODS
    from ..mixture.requirements import requirements

    def run() -> None:
        _budget(rho, epsilon, delta)
        if epsilon is None or not delta:
            raise PrivacyBudgetError("mixture methods need --epsilon and --delta (delta > 0)")
        if not (math.isfinite(n) and n >= 1) or d < 1 or k < 1:
            raise InvalidDataError("--n must be a finite number >= 1, --d and --k at least 1")
        name = METHODS[method].requirements
        if name is None:
            click.echo(f"{method}: no sample-size check is registered for this method")
            return
        req = requirements(name, n=int(n), d=d, k=k, epsilon=epsilon, delta=delta,
                           min_weight=min_weight, constants=constants)
        click.echo(str(req).strip())
        for term, value in req.terms.items():
            click.echo(f"  {term:<45} n >~ {value:.3g}")
        click.echo(f"verdict: n = {int(n)} is {'enough' if req.ok else 'too few'}")
        enough.append(req.ok)

    enough: list[bool] = []
    _run_user(run)
    if enough and not enough[0]:
        raise SystemExit(1)  # too few rows: a script can test the verdict

