"""The ``privgauss`` command line.

Every subcommand exits with status 2 and a one-line ``error: ...`` message on bad input (missing
file or column, non-numeric cells, empty file, public data of the wrong dimension, a bad budget),
before any budget is spent where possible. Output files are written atomically: a temporary file
renamed into place at the end, so a failure or Ctrl-C never leaves a half-written file. Nothing
derived from private data is printed except DP outputs. Method choices come from the estimator
registries at run time.
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import click
import numpy as np

from . import __version__
from .exceptions import EstimationFailed, InvalidDataError, PrivacyBudgetError
from .io import atomic_path, read_table

_USER_ERRORS = (InvalidDataError, PrivacyBudgetError, EstimationFailed, ValueError, OSError)
_DEMO_PLOT = "privgauss-demo.png"


def _fail(message: str) -> None:
    click.echo(f"error: {' '.join(str(message).split())}", err=True)
    sys.exit(2)


class _RegistryChoice(click.Choice):
    """A ``click.Choice`` whose choices are read from a registry each time they are needed."""

    def __init__(self, choices: Callable[[], Sequence[str]]) -> None:
        self._get = choices
        super().__init__([], case_sensitive=True)

    @property  # type: ignore[override]
    def choices(self) -> Sequence[str]:
        return tuple(self._get())

    @choices.setter
    def choices(self, value: Sequence[str]) -> None:  # set by click.Choice.__init__
        pass


def _gaussian_methods() -> list[str]:
    from .estimators.gaussian import METHODS

    return list(METHODS)


def _mixture_methods() -> list[str]:
    from .estimators.mixture import METHODS

    return ["auto", *METHODS]


def _experiment_names() -> list[str]:
    from .experiments import EXPERIMENTS

    return list(EXPERIMENTS)


# ----------------------------------------------------------------------------------------------
# Shared options and plumbing
# ----------------------------------------------------------------------------------------------


def _budget_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    for opt in reversed(
        [
            click.option("--rho", type=float, default=None, help="rho-zCDP budget"),
            click.option("--epsilon", type=float, default=None, help="epsilon (alone: pure DP)"),
            click.option("--delta", type=float, default=None, help="delta of (eps, delta)-DP"),
        ]
    ):
        fn = opt(fn)
    return fn


def _fit_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    opts = [
        click.argument("data", type=click.Path(dir_okay=False)),
        click.option("--columns", default=None, help="comma-separated columns (CSV/Parquet)"),
        click.option("--public", "public", default=None, type=click.Path(dir_okay=False),
                     help="file of public rows (same columns); never charged to the budget"),
        _budget_options,
        click.option("--seed", type=int, default=None,
                     help="seed for reproducible (NOT secure) noise; omit for secure noise"),
        click.option("--out", type=click.Path(dir_okay=False), default=None,
                     help="write the model JSON here (default: print it)"),
        click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
                     help="write a PNG of the fitted ellipses (needs matplotlib)"),
        click.option("--dims", default="0,1", show_default=True,
                     help="two coordinates (indices or column names) for --plot"),
        click.option("--show-data", is_flag=True,
                     help="draw the private rows on --plot (the picture is NOT private)"),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def _budget(rho: float | None, epsilon: float | None, delta: float | None) -> dict[str, Any]:
    if rho is None and epsilon is None:
        raise PrivacyBudgetError("give a privacy budget: --rho, or --epsilon (with --delta)")
    from .accounting import make_budget

    make_budget(rho=rho, epsilon=epsilon, delta=delta)  # validates before anything is read
    return {"rho": rho, "epsilon": epsilon, "delta": delta}


def _read_inputs(
    data: str, public: str | None, columns: str | None
) -> tuple[np.ndarray, np.ndarray | None, list[str]]:
    X, names = read_table(data, columns, with_names=True)
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    Xp = None
    if public is not None:
        Xp = read_table(public, columns)
        Xp = Xp.reshape(-1, 1) if Xp.ndim == 1 else Xp
        if Xp.ndim != 2 or Xp.shape[1] != X.shape[1]:
            raise InvalidDataError(
                f"the public file has {Xp.shape[-1]} features (columns) but the data has "
                f"{X.shape[1]}; give public rows with the same columns"
            )
    return X, Xp, names


def _parse_dims(dims: str, names: list[str]) -> tuple[int, int]:
    parts = [p.strip() for p in dims.split(",")]
    out = [names.index(p) if p in names else int(p) if p.lstrip("-").isdigit() else -1
           for p in parts]
    if len(out) != 2 or len(set(out)) != 2 or not all(0 <= i < len(names) for i in out):
        raise InvalidDataError(
            f"--dims must name two different columns (indices 0..{len(names) - 1} or names "
            f"{names})"
        )
    return out[0], out[1]


@contextlib.contextmanager
def _atomic_outputs(*paths: str | None) -> Iterator[list[Path | None]]:
    """Temporary paths for each given output, all renamed into place only if the block succeeds."""
    with contextlib.ExitStack() as stack:
        yield [None if p is None else stack.enter_context(atomic_path(p)) for p in paths]


def _check_outputs(out: str | None, plot_path: str | None, dims: str,
                   names: list[str]) -> tuple[int, int] | None:
    """Refuse unusable outputs before the fit spends any budget; the --plot coordinates."""
    for path in (out, plot_path):
        if path is not None and not Path(path).resolve().parent.is_dir():
            raise InvalidDataError(f"cannot write {path}: its folder does not exist")
    if plot_path is None:
        return None
    if len(names) < 2:
        raise InvalidDataError("--plot needs data with at least 2 columns")
    from .plots import new_figure

    new_figure()  # raises a one-line ImportError now if matplotlib is missing
    return _parse_dims(dims, names)


def _finish_fit(model: Any, X: np.ndarray, names: list[str], out: str | None,
                plot_path: str | None, ij: tuple[int, int] | None, show_data: bool) -> None:
    """Write the model (or print it) and the plot, atomically together."""
    text = json.dumps(model.to_dict(), indent=2) + "\n"
    with _atomic_outputs(out, plot_path) as (tmp_out, tmp_plot):
        if tmp_plot is not None:
            from .plots import plot_models

            plot_models({f"private ({model.method_})": model}, tmp_plot, dims=ij,
                        data=X if show_data else None, feature_names=names)
        if tmp_out is not None:
            tmp_out.write_text(text)
    if out is None:
        click.echo(text, nl=False)
    else:
        click.echo(f"wrote {out} (method {model.method_}, spent {model.privacy_spent_})")
    if plot_path:
        note = " (it shows private rows: keep it local)" if show_data else ""
        click.echo(f"wrote {plot_path}{note}")


def _run_user(fn: Callable[[], None]) -> None:
    """Run ``fn``, turning user errors (and a missing matplotlib) into one-line exits."""
    try:
        fn()
    except (*_USER_ERRORS, ImportError) as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _fail("interrupted; no output written")


# ----------------------------------------------------------------------------------------------
# Commands
# ----------------------------------------------------------------------------------------------


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="privgauss")
def main() -> None:
    """Differentially private estimation of Gaussians and Gaussian mixtures, helped by optional
    public data.

    \b
    Examples:
      privgauss demo
      privgauss fit-gaussian data.csv --rho 0.5 --public public.csv --out model.json
      privgauss fit-mixture data.csv --n-components 3 --epsilon 2 --delta 1e-6 --plot fig.png
      privgauss requirements mixture kssu --n 50000 --d 2 --k 3 --epsilon 1 --delta 1e-6
      privgauss experiment coinpress-covariance --quick --out results/
      privgauss audit coinpress --rho 0.1
    """


@main.command("fit-gaussian")
@_fit_options
@click.option("--method", default="auto", show_default=True,
              type=_RegistryChoice(_gaussian_methods), help="estimation method")
@click.option("--mean-bound", type=float, default=None, help="prior radius R around the origin")
@click.option("--cov-bounds", type=(float, float), default=None, help="eigenvalue bounds LO HI")
@click.option("--identity-covariance", is_flag=True, help="estimate the mean only (Sigma = I)")
def fit_gaussian(data: str, columns: str | None, public: str | None, rho: float | None,
                 epsilon: float | None, delta: float | None, seed: int | None, out: str | None,
                 plot_path: str | None, dims: str, show_data: bool, method: str,
                 mean_bound: float | None, cov_bounds: tuple[float, float] | None,
                 identity_covariance: bool) -> None:
    """Fit a private Gaussian to the rows of DATA (CSV, Parquet or .npy).

    \b
    Examples:
      privgauss fit-gaussian data.csv --rho 0.5 --public public.csv --out model.json
      privgauss fit-gaussian data.csv --epsilon 1 --delta 1e-6 --columns age,income
      privgauss fit-gaussian data.npy --rho 0.5 --mean-bound 100 --cov-bounds 0.1 10
    """
    from .estimators import PrivateGaussian

    def run() -> None:
        budget = _budget(rho, epsilon, delta)
        X, Xp, names = _read_inputs(data, public, columns)
        ij = _check_outputs(out, plot_path, dims, names)
        g = PrivateGaussian(**budget, method=method, mean_bound=mean_bound, cov_bounds=cov_bounds,
                            covariance="identity" if identity_covariance else None,
                            random_state=seed).fit(X, public_X=Xp)
        _finish_fit(g, X, names, out, plot_path, ij, show_data)

    _run_user(run)


@main.command("fit-mixture")
@_fit_options
@click.option("--n-components", "-k", type=int, required=True, help="number of components k")
@click.option("--method", default="auto", show_default=True,
              type=_RegistryChoice(_mixture_methods), help="mixture method")
@click.option("--min-weight", type=float, default=None, help="smallest component weight (1/k)")
@click.option("--separation", type=float, default=None,
              help="assumed separation ratio of the components (helps method='auto')")
def fit_mixture(data: str, columns: str | None, public: str | None, rho: float | None,
                epsilon: float | None, delta: float | None, seed: int | None, out: str | None,
                plot_path: str | None, dims: str, show_data: bool, n_components: int,
                method: str, min_weight: float | None, separation: float | None) -> None:
    """Fit a private Gaussian mixture to the rows of DATA (CSV, Parquet or .npy).

    Needs an (epsilon, delta) budget and enough rows: see `privgauss requirements mixture`.
    A failed fit is itself a DP output: the budget is spent and the message says what n the
    failing step needs.

    \b
    Examples:
      privgauss fit-mixture data.csv -k 3 --epsilon 2 --delta 1e-6 --out mix.json
      privgauss fit-mixture data.csv -k 3 --epsilon 2 --delta 1e-6 --public pub.csv --plot mix.png
    """
    from .estimators import PrivateGaussianMixture

    def run() -> None:
        budget = _budget(rho, epsilon, delta)
        X, Xp, names = _read_inputs(data, public, columns)
        ij = _check_outputs(out, plot_path, dims, names)
        m = PrivateGaussianMixture(n_components, **budget, method=method, min_weight=min_weight,
                                   separation=separation, random_state=seed)
        if sys.stderr.isatty():
            click.echo(f"fitting a {n_components}-component mixture (method {method}) ...",
                       err=True)
        m.fit(X, public_X=Xp)
        _finish_fit(m, X, names, out, plot_path, ij, show_data)

    _run_user(run)


# -- requirements ------------------------------------------------------------------------------


@main.group("requirements")
def requirements_cmd() -> None:
    """What n a method needs (from public quantities only; nothing is read or spent).

    \b
    Examples:
      privgauss requirements gaussian public --d 10 --rho 0.5 --n 8000
      privgauss requirements gaussian coinpress --d 10 --rho 0.5 --mean-bound 1e3 --cond 100
      privgauss requirements mixture kssu --n 50000 --d 2 --k 3 --epsilon 1 --delta 1e-6
    """


def _as_rho(b: Any) -> float:
    from .accounting import ZCDP, PureDP, approx_to_zcdp

    if isinstance(b, ZCDP):
        return b.rho
    if isinstance(b, PureDP):
        return b.epsilon**2 / 2
    return approx_to_zcdp(b.epsilon, b.delta)


def gaussian_bound(method: str, d: int, budget: Any, *, alpha: float, beta: float,
                   mean_bound: float | None, cond: float, mean_only: bool,
                   gamma: float) -> tuple[Any, str]:
    """The theory :class:`~privgauss.theory.Bound` for a Gaussian method, and what else it needs."""
    from . import theory
    from .accounting import ApproxDP, PureDP

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
    from .accounting import make_budget

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

    _run_user(run)


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
    from .estimators.mixture import METHODS
    from .mixture.requirements import requirements

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

    _run_user(run)


# -- experiment ---------------------------------------------------------------------------------


@main.command()
@click.argument("name", type=_RegistryChoice(_experiment_names))
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
    from . import experiments

    def run() -> None:
        if trials is not None and trials < 2:
            raise InvalidDataError("--trials must be at least 2")
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        rows = experiments.run(name, trials=trials, quick=quick, seed=seed, progress=True)
        csv_path, png_path = out / f"{name}.csv", out / f"{name}.png"
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            png_path = None  # type: ignore[assignment]
        with _atomic_outputs(str(csv_path), png_path and str(png_path)) as (tmp_csv, tmp_png):
            experiments.write_csv(rows, tmp_csv)  # type: ignore[arg-type]
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

    _run_user(run)


# -- audit ----------------------------------------------------------------------------------------

_AUDIT_MECHANISMS = ("gaussian-mechanism", "laplace-mechanism")
_AUDIT_SENSITIVITY = 1.0


def _audit_targets() -> list[str]:
    return [*_AUDIT_MECHANISMS, *(m for m in _gaussian_methods() if m != "auto")]


def _audit_pair(target: str, n: int) -> tuple[Any, Any, np.ndarray | None]:
    """A worst-case pair of replace-one neighbours (and the public rows) for ``target``.

    Mechanisms: the statistic moves by exactly the sensitivity. Estimators: n fixed 1-D rows,
    the first of which is replaced by a far outlier on the opposite side (+1e4 vs -1e4), so
    every clipping step binds; public rows (for "public") are two fixed points."""
    if target in _AUDIT_MECHANISMS:
        return 0.0, _AUDIT_SENSITIVITY, None
    base = np.random.default_rng(12345).standard_normal((n, 1))
    D, D2 = base.copy(), base.copy()
    D[0, 0], D2[0, 0] = 1e4, -1e4
    return D, D2, np.array([[-1.0], [1.0]])


def _audit_mechanism_fn(target: str, budget: dict[str, float], scale: float, mean_bound: float,
                        public: np.ndarray | None) -> Callable[[Any, np.random.Generator], Any]:
    """``mechanism(data, rng)`` for the audit; ``budget`` holds rho= or epsilon= (delta=)."""
    from .accounting import Accountant, make_budget
    from .audit import estimator_mechanism
    from .estimators import PrivateGaussian
    from .mechanisms import gaussian_mechanism, laplace_mechanism

    if target in _AUDIT_MECHANISMS:
        mech = gaussian_mechanism if target == "gaussian-mechanism" else laplace_mechanism
        sens = _AUDIT_SENSITIVITY * scale
        b = make_budget(**budget)

        def run_mech(v: float, rng: np.random.Generator) -> float:
            return float(mech(v, sens, b, accountant=Accountant(b), noise=rng))

        return run_mech
    kw: dict[str, Any] = dict(budget, method=target)
    if target in ("clip", "coinpress", "hypothesis-selection"):
        kw.update(covariance="identity", mean_bound=mean_bound)
    return estimator_mechanism(
        lambda rng: PrivateGaussian(**kw, random_state=rng),
        lambda g: [g.mean_[0], g.covariance_[0, 0]],
        2,
        public_X=public,
    )


@main.command()
@click.argument("target", type=_RegistryChoice(_audit_targets))
@_budget_options
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
def audit(target: str, rho: float | None, epsilon: float | None, delta: float | None,
          claim_delta: float, runs: int, n: int | None, mean_bound: float, sensitivity_scale: float,
          seed: int) -> None:
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
    from .accounting import ZCDP, ApproxDP, PureDP, make_budget, zcdp_to_epsilon
    from .audit import audit_mechanism

    def run() -> None:
        if rho is None and epsilon is None:
            defaults = {"laplace-mechanism": {"epsilon": 1.0}, "hypothesis-selection":
                        {"epsilon": 1.0}, "histogram": {"epsilon": 1.0, "delta": 1e-3}}
            kw = defaults.get(target, {"rho": 0.5})
        else:
            kw = {k: v for k, v in (("rho", rho), ("epsilon", epsilon), ("delta", delta))
                  if v is not None}
        budget = make_budget(**kw)
        rows = n if n is not None else (2000 if target == "histogram" else 20)
        if runs < 100 or rows < 2 or not (0 < sensitivity_scale <= 1e6):
            raise InvalidDataError("need --runs >= 100, --n >= 2 and --sensitivity-scale > 0")
        if target == "laplace-mechanism" and not isinstance(budget, PureDP):
            raise PrivacyBudgetError("laplace-mechanism needs a pure --epsilon budget")
        if target == "gaussian-mechanism" and isinstance(budget, PureDP):
            raise PrivacyBudgetError("gaussian-mechanism needs --rho or --epsilon with --delta")
        if isinstance(budget, ZCDP):
            claim, at_delta = zcdp_to_epsilon(budget.rho, claim_delta), claim_delta
        else:
            claim = budget.epsilon
            at_delta = budget.delta if isinstance(budget, ApproxDP) else 0.0
        D, D2, public = _audit_pair(target, rows)
        mech = _audit_mechanism_fn(target, kw, sensitivity_scale, mean_bound, public)
        res = audit_mechanism(mech, D, D2, epsilon=claim, delta=at_delta, n_runs=runs,
                              random_state=seed, progress=True)
        click.echo(f"{target} at {budget}: claimed epsilon {claim:.4g} at delta {at_delta:g}")
        click.echo(str(res))
        if not res.passed:
            sys.exit(1)

    _run_user(run)


# -- demo -----------------------------------------------------------------------------------------


def _table(title: str, header: tuple[str, str], rows: list[tuple]) -> None:
    click.echo(f"\n{title}\n{'estimator':<60}{header[0]:>16}{header[1]:>16}{'time s':>8}")
    for label, a, b, secs in rows:
        if b == "" and secs == "":  # a method that did not produce an estimate
            click.echo(f"{label:<60}  {' '.join(a.split())[:120]}")
        else:
            click.echo(f"{label:<60}{a:>16}{b:>16}{secs:>8}")


@main.command()
@click.option("--n", "n", default=5000, show_default=True, help="rows of the Gaussian")
@click.option("--d", "d", default=10, show_default=True, help="dimension of the Gaussian")
@click.option("--rho", default=0.5, show_default=True, help="zCDP budget per Gaussian fit")
@click.option("--mixture-n", default=60000, show_default=True,
              help="rows of the 2-D, 2-component mixture (0: skip the mixture)")
@click.option("--mixture-epsilon", default=2.0, show_default=True,
              help="epsilon per mixture fit (delta = 1e-6)")
@click.option("--seed", default=0, show_default=True, help="seed (fast, reproducible noise)")
@click.option("--plot", "plot_path", default=_DEMO_PLOT, show_default=True,
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

    from . import experiments

    def run() -> None:
        if n < 2 * (d + 1) or d < 2 or not (rho > 0) or mixture_n < 0:
            raise InvalidDataError("need d >= 2, n >= 2(d+1), rho > 0 and --mixture-n >= 0")
        start = time.perf_counter()
        click.echo(f"privgauss {__version__} demo (seed {seed}; seeded noise is for experiments)")
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
            from .plots import new_figure, plot_models

            try:
                fig = new_figure((12.0 if m_models else 6.0, 5.0))
            except ImportError as exc:
                click.echo(f"no plot: {exc}")
                return
            axes = fig.subplots(1, 2 if m_models else 1, squeeze=False)[0]
            plot_models(g_models, ax=axes[0], title=f"Gaussian (d={d}): coordinates 0 and 1")
            if m_models:
                plot_models(m_models, ax=axes[1], title="2-D mixture")
            fig.tight_layout()
            with atomic_path(plot_path) as tmp:
                fig.savefig(tmp, dpi=110, format="png")
            click.echo(f"\nwrote {plot_path}")

    _run_user(run)


if __name__ == "__main__":  # pragma: no cover
    main()
