"""``privgauss fit-gaussian`` and ``privgauss fit-mixture``."""

from __future__ import annotations

import sys

import click

from ._common import (
    EXIT_STATUS_HELP,
    RegistryChoice,
    Spending,
    gaussian_methods,
    mixture_methods,
    run_user,
)
from .options import BudgetFlags, InputFlags, OutputFlags, PriorFlags, fit_options, prior_options


@click.command("fit-gaussian", epilog=EXIT_STATUS_HELP)
@fit_options
@click.option("--method", default="auto", show_default=True,
              type=RegistryChoice(gaussian_methods), help="estimation method")
@prior_options("prior radius R around the origin", "eigenvalue bounds LO HI")
@click.option("--identity-covariance", is_flag=True, help="estimate the mean only (Sigma = I)")
@click.option("--clip-scale", type=click.FloatRange(min=0, min_open=True), default=1.0,
              show_default=True, help="multiplier of the covariance clipping radii: above 1 the "
              "fit covers more of heavy-tailed data, with more noise")
def fit_gaussian(data: str, inputs: InputFlags, budget: BudgetFlags, seed: int | None,
                 output: OutputFlags, method: str, prior: PriorFlags, identity_covariance: bool,
                 clip_scale: float) -> None:
    """Fit a private Gaussian to the rows of DATA (CSV, Parquet or .npy).

    \b
    Examples:
      privgauss fit-gaussian data.csv --rho 0.5 --public public.csv --out model.json
      privgauss fit-gaussian data.csv --epsilon 1 --delta 1e-6 --columns age,income
      privgauss fit-gaussian data.npy --rho 0.5 --mean-bound 100 --cov-bounds 0.1 10
      privgauss fit-gaussian noheader.csv --no-header --rho 0.5 --columns 0,2 --public pub.csv
    """
    from ..estimators import PrivateGaussian

    spending = Spending()

    def run() -> None:
        kw = budget.kwargs()
        rows = inputs.read(data)
        ij = output.check(rows.names)
        g = PrivateGaussian(**kw, method=method, mean_bound=prior.mean_bound,
                            cov_bounds=prior.cov_bounds,
                            covariance="identity" if identity_covariance else None,
                            clip_scale=clip_scale, random_state=seed,
                            accountant=spending.accountant_for(kw))
        g.fit(rows.X, public_X=rows.public)
        output.finish(g, rows, ij)

    run_user(run, spending)


@click.command("fit-mixture", epilog=EXIT_STATUS_HELP)
@fit_options
@click.option("--n-components", "-k", type=int, required=True, help="number of components k")
@click.option("--method", default="auto", show_default=True,
              type=RegistryChoice(mixture_methods), help="mixture method (auto: em unless "
              "--separation states one a paper learner was validated at)")
@click.option("--min-weight", type=float, default=None, help="smallest component weight (1/k)")
@click.option("--separation", type=float, default=None,
              help="assumed separation ratio of the components: with it, auto may run a paper "
              "learner validated at that separation")
@prior_options("prior: every component's mean within R of the origin (with --cov-bounds)",
               "prior: eigenvalue bounds LO HI of every component's covariance (with "
               "--mean-bound)")
@click.option("--constants", type=click.Choice(["practical", "theory"]), default="practical",
              show_default=True, help="tuned constants, or the paper's (agnostic: the faithful "
              "list-stability route); privacy is the same")
def fit_mixture(data: str, inputs: InputFlags, budget: BudgetFlags, seed: int | None,
                output: OutputFlags, n_components: int, method: str, min_weight: float | None,
                separation: float | None, prior: PriorFlags, constants: str) -> None:
    """Fit a private Gaussian mixture to the rows of DATA (CSV, Parquet or .npy).

    Budgets: --epsilon with --delta (delta > 0) works for every method; --rho (zCDP) works
    for em, public-light and public-heavy — em then needs d+1 public rows (--public) or a
    prior (--mean-bound and --cov-bounds), the public learners their public rows. --epsilon
    alone (pure DP) is refused. `privgauss requirements mixture auto ...` says, before
    anything is read or spent, which method auto runs, why, and what n it needs. A failed fit
    is itself a DP output: the budget is spent, the exit status is 3 and the message says what
    n the failing step needs.

    \b
    Examples:
      privgauss fit-mixture data.csv -k 3 --epsilon 2 --delta 1e-6 --out mix.json
      privgauss fit-mixture data.csv -k 3 --rho 0.5 --mean-bound 100 --cov-bounds 0.01 100
      privgauss fit-mixture data.csv -k 3 --epsilon 2 --delta 1e-6 --public pub.csv --plot mix.png
    """
    from ..estimators import PrivateGaussianMixture

    spending = Spending()

    def run() -> None:
        kw = budget.kwargs()
        rows = inputs.read(data)
        ij = output.check(rows.names)
        m = PrivateGaussianMixture(n_components, **kw, method=method, min_weight=min_weight,
                                   separation=separation, mean_bound=prior.mean_bound,
                                   cov_bounds=prior.cov_bounds, constants=constants,
                                   random_state=seed, accountant=spending.accountant_for(kw))
        if sys.stderr.isatty():
            click.echo(f"fitting a {n_components}-component mixture (method {method}) ...",
                       err=True)
        m.fit(rows.X, public_X=rows.public)
        output.finish(m, rows, ij)

    run_user(run, spending)

