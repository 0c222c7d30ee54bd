"""``privgauss experiment``, ``privgauss audit`` and ``privgauss demo``."""

from __future__ import annotations

import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
import numpy as np

from ..exceptions import InvalidDataError, PrivacyBudgetError
from ..io import atomic_path
from ..warnings import SeededNoiseWarning
from ._common import (
    DEMO_PLOT,
    RegistryChoice,
    atomic_outputs,
    check_budget_flags,
    experiment_names,
    gaussian_methods,
    run_user,
)
from .options import BudgetFlags, budget_options

# -- experiment ---------------------------------------------------------------------------------


@click.command()
@click.argument("name", type=RegistryChoice(experiment_names))
@click.option("--trials", type=int, default=None, help="runs per point (default 100; 50 for cov)")
@click.option("--quick", is_flag=True, help="20 trials and 5 sample sizes")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=".",
              show_default=True, help="folder for NAME.csv and NAME.png")
def experiment(name: str, trials: int | None, quick: bool, seed: int, out_dir: str) -> None:
    """Reproduce a paper experiment on synthetic data: CSV of errors and a plot against n.

    \b
    coinpress-mean        CoinPress mean protocol (d=50, rho=0.5, R=10 sqrt(d))
    coinpress-covariance  CoinPress covariance protocol (Sigma=I, d=10, rho=0.5, u=10 sqrt(d))
    one-public            one public sample, mean k*1, k in {10, 100, 1000}, no bound
    public-covariance     covariance with d+1 public rows (d=10), no bounds
    \b
    Example:
      privgauss experiment coinpress-covariance --quick --out results/
    """
    from .. import experiments

    def run() -> None:
        if trials is not None and trials < 2:
            raise InvalidDataError("--trials must be at least 2")
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        rows = experiments.run(name, trials=trials, quick=quick, seed=seed, progress=True)
        csv_path = out / f"{name}.csv"
        png_path: Path | None = out / f"{name}.png"
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            png_path = None
        png_out = None if png_path is None else str(png_path)
        with atomic_outputs(str(csv_path), png_out) as (tmp_csv, tmp_png):
            assert tmp_csv is not None  # a path was given for it
            experiments.write_csv(rows, tmp_csv)
            if tmp_png is not None:
                experiments.plot(rows, tmp_png, title=name)
        click.echo(f"{'n':>7} {'setting':>22} {'method':<28} {'trimmed mean':>13}")
        for r in rows:
            click.echo(f"{r['n']:>7} {str(r['k']):>22} {str(r['method']):<28} "
                       f"{float(r['trimmed_mean']):>13.4f}")
        for label, values in experiments.REFERENCES.get(name, {}).items():
            click.echo(f"{label}: " + ", ".join(f"n={k}: {v:g}" for k, v in values.items()))
        click.echo(f"wrote {csv_path}" + (f" and {png_path}" if png_path else
                   " (install matplotlib for the plot: pip install 'privgauss[plot]')"))

    run_user(run)


# -- audit ----------------------------------------------------------------------------------------

_AUDIT_MECHANISMS = ("gaussian-mechanism", "laplace-mechanism")
_AUDIT_SENSITIVITY = 1.0


def _audit_targets() -> list[str]:
    return [*_AUDIT_MECHANISMS, *(m for m in gaussian_methods() if m != "auto")]


def _audit_pair(target: str, n: int) -> tuple[Any, Any, np.ndarray | None]:
    """A worst-case pair of replace-one neighbours (and the public rows) for ``target``.

    Mechanisms: the statistic moves by exactly the sensitivity. Estimators: n fixed 1-D rows,
    the first of which is replaced by a far outlier on the opposite side (+1e4 vs -1e4), so
    every clipping step binds; public rows (for "public") are 64 fixed points, enough for the
    public method to accept n = 20 private rows."""
    if target in _AUDIT_MECHANISMS:
        return 0.0, _AUDIT_SENSITIVITY, None
    base = np.random.default_rng(12345).standard_normal((n, 1))
    D, D2 = base.copy(), base.copy()
    D[0, 0], D2[0, 0] = 1e4, -1e4
    return D, D2, np.linspace(-2.0, 2.0, 64)[:, None]


def _audit_mechanism_fn(target: str, budget: dict[str, float], scale: float, mean_bound: float,
                        public: np.ndarray | None, on_outcome: Callable[[Any, Any], None] | None
                        = None) -> Callable[[Any, np.random.Generator], Any]:
    """``mechanism(data, rng)`` for the audit; ``budget`` holds rho= or epsilon= (delta=).
    Estimators: ``on_outcome(data, FitOutcome)`` is called after every fit."""
    from ..audit import estimator_mechanism
    from ..estimators import PrivateGaussian
    from ..mechanisms import gaussian_mechanism, laplace_mechanism
    from ..privacy import Accountant, make_budget

    if target in _AUDIT_MECHANISMS:
        mech = gaussian_mechanism if target == "gaussian-mechanism" else laplace_mechanism
        sens = _AUDIT_SENSITIVITY * scale
        b = make_budget(**budget)

        def run_mech(v: float, rng: np.random.Generator) -> float:
            return float(mech(v, sens, b, accountant=Accountant(b), noise=rng))

        return run_mech
    from .. import methods

    kw: dict[str, Any] = dict(budget, method=target)
    if methods.get("gaussian", target).prior != "unused":  # a method using a prior gets one
        kw.update(covariance="identity", mean_bound=mean_bound)
    return estimator_mechanism(
        lambda rng: PrivateGaussian(**kw, random_state=rng),
        lambda g: [g.mean_[0], g.covariance_[0, 0]],
        2,
        public_X=public,
        on_outcome=on_outcome,
    )


def _audit_default_budget(target: str) -> dict[str, float]:
    """The audit's budget when none is given: ρ = 0.5 for a method taking a zCDP budget (and
    the Gaussian mechanism), ε = 1 for a pure-DP one (and the Laplace mechanism), else
    ε = 1, δ = 1e-3 (as read from the method's registry record)."""
    from .. import methods

    if target in _AUDIT_MECHANISMS:
        return {"epsilon": 1.0} if target == "laplace-mechanism" else {"rho": 0.5}
    budgets = methods.get("gaussian", target).budgets
    if "zcdp" in budgets:
        return {"rho": 0.5}
    return {"epsilon": 1.0} if "pure" in budgets else {"epsilon": 1.0, "delta": 1e-3}


def _audit_rows(target: str) -> int:
    """Rows of each neighbouring dataset when --n is not given (the method's record)."""
    from .. import methods

    return 20 if target in _AUDIT_MECHANISMS else methods.get("gaussian", target).audit_rows


def _outcome_counts(counts: Counter[str]) -> str:
    """``"3990 success, 1 ledger entry; 10 failed ..."``, most frequent first."""
    return "; ".join(f"{k} {label}" for label, k in counts.most_common())


@click.command()
@click.argument("target", type=RegistryChoice(_audit_targets))
@budget_options
@click.option("--claim-delta", type=float, default=1e-3, show_default=True,
              help="for a rho budget: the delta at which the claimed epsilon is stated")
@click.option("--runs", type=int, default=4000, show_default=True, help="runs per dataset")
@click.option("--n", "n", type=int, default=None,
              help="rows in each neighbouring dataset (estimators; default 20, 2000 for "
              "histogram, which returns a failure on fewer rows)")
@click.option("--mean-bound", type=float, default=3.0, show_default=True,
              help="prior radius R for clip / coinpress / hypothesis-selection")
@click.option("--sensitivity-scale", type=float, default=1.0, show_default=True,
              help="mechanisms only: calibrate the noise to this multiple of the true "
              "sensitivity (< 1 is a deliberately broken mechanism the audit should flag)")
@click.option("--seed", type=int, default=0, show_default=True)
def audit(target: str, budget: BudgetFlags, claim_delta: float, runs: int, n: int | None,
          mean_bound: float, sensitivity_scale: float, seed: int) -> None:
    """Empirical privacy audit of TARGET on a worst-case pair of neighbouring datasets.

    Runs TARGET many times on both datasets (seeded noise) and prints a 99.9%-confidence lower
    bound on its epsilon next to the claimed epsilon. Exit status 1 if the bound exceeds the
    claim. A pass is evidence, not a proof, and only as strong as --runs allows. Default budget:
    --rho 0.5 (--epsilon 1 for laplace-mechanism and hypothesis-selection; --epsilon 1
    --delta 1e-3 for histogram). Estimator runs are slower than mechanism runs
    (hypothesis-selection: about 0.1-0.5 s each).

    \b
    Examples:
      privgauss audit coinpress --rho 0.1
      privgauss audit laplace-mechanism --epsilon 1 --sensitivity-scale 0.5   # flagged
    """
    from ..audit import audit_mechanism
    from ..privacy import ZCDP, ApproxDP, PureDP, make_budget, zcdp_to_epsilon

    def run() -> None:
        if not budget.given:
            kw = _audit_default_budget(target)
        else:
            kw = {k: v for k, v in budget.kwargs().items() if v is not None}
        stated = make_budget(**kw)
        rows = n if n is not None else _audit_rows(target)
        if runs < 100 or rows < 2 or not (0 < sensitivity_scale <= 1e6):
            raise InvalidDataError("need --runs >= 100, --n >= 2 and --sensitivity-scale > 0")
        if target == "laplace-mechanism" and not isinstance(stated, PureDP):
            raise PrivacyBudgetError("laplace-mechanism needs a pure --epsilon budget")
        if target == "gaussian-mechanism" and isinstance(stated, PureDP):
            raise PrivacyBudgetError("gaussian-mechanism needs --rho or --epsilon with --delta")
        if isinstance(stated, ZCDP):
            claim, at_delta = zcdp_to_epsilon(stated.rho, claim_delta), claim_delta
        else:
            claim = stated.epsilon
            at_delta = stated.delta if isinstance(stated, ApproxDP) else 0.0
        D, D2, public = _audit_pair(target, rows)
        outcomes: dict[str, Counter[str]] = {"D": Counter(), "D'": Counter()}

        def count(data: Any, outcome: Any) -> None:
            outcomes["D" if data is D else "D'"][outcome.label] += 1

        mech = _audit_mechanism_fn(target, kw, sensitivity_scale, mean_bound, public, count)
        res = audit_mechanism(mech, D, D2, epsilon=claim, delta=at_delta, n_runs=runs,
                              random_state=seed, progress=True)
        click.echo(f"{target} at {stated}: claimed epsilon {claim:.4g} at delta {at_delta:g}")
        for name, counts in outcomes.items():
            if counts:  # estimators only: how every fit ended (a difference is audited too)
                click.echo(f"fits on {name}: {_outcome_counts(counts)}")
        click.echo(str(res))
        if not res.passed:
            sys.exit(1)

    run_user(run)


# -- demo -----------------------------------------------------------------------------------------


def _table(title: str, header: tuple[str, str], rows: list[tuple]) -> None:
    click.echo(f"\n{title}\n{'estimator':<60}{header[0]:>16}{header[1]:>16}{'time s':>8}")
    for label, a, b, secs in rows:
        if b == "" and secs == "":  # a method that did not produce an estimate
            click.echo(f"{label:<60}  {' '.join(a.split())[:120]}")
        else:
            click.echo(f"{label:<60}{a:>16}{b:>16}{secs:>8}")


def _demo_panels(rows: list[tuple], models: dict[str, Any], header: tuple[str, str]
                 ) -> dict[str, Any]:
    """Panel title → private fit, one per row of the demo's table that has a fit: the method,
    what it was given, and its errors."""
    import textwrap

    panels = {}
    for label, a, b, _ in rows:
        if label not in models or label in ("truth", "non-private"):
            continue
        method, _, given = label.partition(": ")
        errors = f"{header[0]} {a}, " + ("covariance known" if b == "known" else f"{header[1]} {b}")
        wrapped = textwrap.wrap(given, 46, break_on_hyphens=False)
        panels["\n".join([method, *wrapped, errors])] = models[label]
    return panels


@click.command()
@click.option("--n", "n", default=5000, show_default=True, help="rows of the Gaussian")
@click.option("--d", "d", default=10, show_default=True, help="dimension of the Gaussian")
@click.option("--rho", default=0.5, show_default=True, help="zCDP budget per Gaussian fit")
@click.option("--mixture-n", default=60000, show_default=True,
              help="rows of the 2-D, 2-component mixture (0: skip the mixture)")
@click.option("--mixture-epsilon", default=2.0, show_default=True,
              help="epsilon per mixture fit (delta = 1e-6)")
@click.option("--seed", default=0, show_default=True, help="seed (fast, reproducible noise)")
@click.option("--plot", "plot_path", default=DEMO_PLOT, show_default=True,
              type=click.Path(dir_okay=False), help="PNG of the fits ('' for none)")
def demo(n: int, d: int, rho: float, mixture_n: int, mixture_epsilon: float, seed: int,
         plot_path: str) -> None:
    """Private fits on synthetic data, with and without public data, next to non-private.

    A d-dimensional Gaussian with mean 1000*1 (unknown to the estimators) and condition number
    10, and a 2-D mixture of two separated components, fitted by every registered mixture method
    that method='auto' may pick (reductions such as ppe are listed, not run).
    Errors are against the true parameters. Seeded noise: not for real releases.

    \b
    Example:
      privgauss demo --n 5000 --d 10 --rho 0.5 --plot demo.png
    """

    from .. import experiments

    def run() -> None:
        # the demo always seeds its noise (on its own synthetic data) and says so above; the
        # SeededNoiseWarning's advice to omit --seed does not apply to it
        warnings.filterwarnings("ignore", category=SeededNoiseWarning)
        check_budget_flags(rho=rho, mixture_epsilon=mixture_epsilon)
        if n < 2 * (d + 1) or d < 2 or mixture_n < 0:
            raise InvalidDataError("need d >= 2, n >= 2(d+1) and --mixture-n >= 0")
        start = time.perf_counter()
        from .._version import __version__

        click.echo(f"privgauss {__version__} demo on synthetic data, with seeded noise (seed "
                   f"{seed}): reproducible, fine for a demo, not for releasing real data")
        g_rows, g_models = experiments.demo_gaussian(n, d, rho, seed)
        _table(f"Gaussian: n={n}, d={d}, mean 1000*1, condition number 10, rho={rho} per fit",
               ("mean err", "cov err"), g_rows)
        click.echo("mean err = ||Sigma^-1/2 (mu_hat - mu)||, cov err = "
                   "||Sigma^-1/2 Sigma_hat Sigma^-1/2 - I||_F")
        m_models: dict[str, Any] = {}
        if mixture_n:
            m_rows, m_models = experiments.demo_mixture(
                mixture_n, mixture_epsilon, seed, deadline=start + 40.0
            )
            _table(f"Mixture: n={mixture_n}, d=2, k=2, separation 6, "
                   f"({mixture_epsilon:g}, 1e-6)-DP per fit", ("max comp. TV", "weight err"),
                   m_rows)
            click.echo("max comp. TV = largest TV distance between matched components")
        if plot_path:
            from ..plots import FitGroup, plot_fits

            groups = [
                FitGroup(f"Gaussian: n={n}, d={d}, rho={rho} per fit "
                         "(marginal on coordinates 0 and 1)",
                         _demo_panels(g_rows, g_models, ("mean err", "cov err")),
                         truth=g_models["truth"], reference=g_models["non-private"]),
            ]
            if m_models:
                groups.append(FitGroup(
                    f"Mixture: n={mixture_n}, d=2, k=2, ({mixture_epsilon:g}, 1e-6)-DP per fit",
                    _demo_panels(m_rows, m_models, ("max comp. TV", "weight err")),
                    truth=m_models["truth"], reference=m_models["non-private"], zoom=True))
            if not any(g.fits for g in groups):
                click.echo("no plot: no method produced a fit")
                return
            try:
                mixture_note = "; EM for the mixture" if m_models else ""
                fig = plot_fits(groups, reference_label="non-private fit (sample mean and "
                                f"covariance{mixture_note})")
            except ImportError as exc:
                click.echo(f"no plot: {exc}")
                return
            with atomic_path(plot_path) as tmp:
                fig.savefig(tmp, dpi=110, format="png")
            click.echo(f"\nwrote {plot_path}")

    run_user(run)  # whose catch_warnings restores the warning filters afterwards

