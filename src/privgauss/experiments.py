"""Reproductions of the papers' experiments (CSV rows and error-vs-n plots).

* ``coinpress-mean`` (W1): mean of N(0, I_50), ρ = 0.5, prior radius R = 10√d, n ∈
  linspace(1000, 10000, 12): ours (automatic schedule) vs CoinPress t = 2 with its published
  constants vs the non-private mean (Biswas–Dong–Kamath–Ullman 2020).
* ``one-public`` (W3): one public sample, μ = k·1 (k = 10, 100, 1000), d = 50, ρ = 0.5, no bound:
  ours vs the paper's recipe (CoinPress t = 2 with the code's n-for-d radius) vs plain CoinPress
  t = 2 with R = k√d vs non-private (Bie–Kamath–Singhal 2022, App. A).
* ``coinpress-covariance`` (W4): Σ = I, d = 10, ρ = 0.5, known zero mean, prior
  I ⪯ Σ ⪯ u·I with u = 10√d, n ∈ linspace(3000, 8000, 12): ours (automatic schedule) vs
  CoinPress t = 3 with its published constants vs the non-private XᵀX/n; published CoinPress
  numbers (``results/synthetic_cov/*-1.txt``, anchors.md §2.1) are drawn on the plot.
* ``public-covariance``: d = 10, ρ = 0.5, d+1 public samples, unknown mean and covariance, no
  bounds: covariance error ‖Σ^{-1/2} Σ̂ Σ^{-1/2} − I‖_F of ours vs the direct port of Alg. 2
  vs ``np.cov``.

Each row is the 10%-trimmed mean (and 10%-trimmed std) of the error over ``trials`` runs on the
same draws for every method. Noise is the fast seeded path: these are experiments, not releases.
"""

from __future__ import annotations

import csv
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
from scipy.stats import trim_mean
from scipy.stats.mstats import trimmed_std
from tqdm.auto import tqdm

from .exceptions import EstimationFailed, InvalidDataError, PrivacyBudgetError
from .gaussian.coinpress import coinpress_covariance, coinpress_mean
from .gaussian.public import public_gaussian, public_mean_one_sample
from .privacy import ZCDP, Accountant

RHO = 0.5
# CoinPress results/synthetic_mean/*-1.txt, t = 2 (anchors.md §2.1)
PUBLISHED_W1 = {1000: 0.281, 1818: 0.187, 2636: 0.149, 5090: 0.102, 10000: 0.0732}
# CoinPress results/synthetic_cov/*-1.txt, Σ = I, d = 10, u = 10√d (anchors.md §2.1)
PUBLISHED_W4 = {3000: 0.306, 3909: 0.235, 5273: 0.180, 6636: 0.149, 8000: 0.133}  # t = 3
PUBLISHED_W4_NONPRIVATE = {3000: 0.191, 3909: 0.165, 5273: 0.143, 6636: 0.127, 8000: 0.117}


def _acct() -> Accountant:
    return Accountant(ZCDP(RHO))


def _stats(errors: list[float]) -> tuple[float, float]:
    e = np.asarray(errors)
    return float(trim_mean(e, 0.1)), float(trimmed_std(e, limits=(0.1, 0.1), ddof=1))


def _grid(quick: bool, lo: int, hi: int, num: int) -> list[int]:
    ns = np.linspace(lo, hi, num).astype(int)
    return [int(x) for x in (ns[[0, 1, 2, len(ns) // 2, -1]] if quick else ns)]


class Row(TypedDict):
    """One line of an experiment's table (and of its CSV)."""

    experiment: str
    n: int
    k: float | str
    method: str
    trials: int
    trimmed_mean: float
    trimmed_std: float
    seconds: float


def _record(
    rows: list[Row],
    exp: str,
    n: int,
    k: float | str,
    method: str,
    errors: list[float],
    seconds: float,
) -> None:
    tm, ts = _stats(errors)
    rows.append(
        {
            "experiment": exp,
            "n": n,
            "k": k,
            "method": method,
            "trials": len(errors),
            "trimmed_mean": tm,
            "trimmed_std": ts,
            "seconds": round(seconds, 3),
        }
    )


def _timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def run_w1(trials: int, quick: bool, seed: int, progress: bool = False) -> list[Row]:
    d = 50
    R = 10 * np.sqrt(d)
    rows: list[Row] = []
    for n in tqdm(_grid(quick, 1000, 10000, 12), desc="coinpress-mean", disable=not progress):
        rng = np.random.default_rng([seed, n])
        err: dict[str, list[float]] = {"non-private": [], "CoinPress t=2 (theory)": [], "ours": []}
        secs = dict.fromkeys(err, 0.0)
        for _ in range(trials):
            X = rng.standard_normal((n, d))
            err["non-private"].append(float(np.linalg.norm(X.mean(axis=0))))
            for name, kw in (("CoinPress t=2 (theory)", {"constants": "theory"}), ("ours", {})):
                est, s = _timed(
                    coinpress_mean, X, np.zeros(d), R, RHO, accountant=_acct(), noise=rng, **kw
                )
                err[name].append(float(np.linalg.norm(est)))
                secs[name] += s
        for name, e in err.items():
            _record(rows, "w1", n, "R=10sqrt(d)", name, e, secs[name])
    return rows


def run_w3(trials: int, quick: bool, seed: int, progress: bool = False) -> list[Row]:
    d = 50
    rows: list[Row] = []
    for k in (10, 100, 1000):
        mu = np.full(d, float(k))
        for n in tqdm(
            _grid(quick, 1000, 10000, 12), desc=f"one-public k={k}", disable=not progress
        ):
            rng = np.random.default_rng([seed, k, n])
            names = (
                "non-private",
                f"CoinPress t=2, R={k}sqrt(d)",
                "paper-code (1 public)",
                "ours (1 public)",
            )
            err: dict[str, list[float]] = {m: [] for m in names}
            secs = dict.fromkeys(names, 0.0)
            for _ in range(trials):
                X = mu + rng.standard_normal((n, d))
                x_pub = mu + rng.standard_normal(d)
                err[names[0]].append(float(np.linalg.norm(X.mean(axis=0) - mu)))
                runs: tuple[
                    tuple[str, Callable[..., Any], tuple[Any, ...], dict[str, Any]], ...
                ] = (
                    (
                        names[1],
                        coinpress_mean,
                        (X, np.zeros(d), k * np.sqrt(d), RHO),
                        {"constants": "theory"},
                    ),
                    (
                        names[2],
                        public_mean_one_sample,
                        (X, x_pub, RHO),
                        {"constants": "paper-code"},
                    ),
                    (names[3], public_mean_one_sample, (X, x_pub, RHO), {}),
                )
                for name, fn, a, kw in runs:
                    est, s = _timed(fn, *a, accountant=_acct(), noise=rng, **kw)
                    err[name].append(float(np.linalg.norm(est - mu)))
                    secs[name] += s
            for name, e in err.items():
                _record(rows, "w3", n, k, name, e, secs[name])
    return rows


def run_w4(trials: int, quick: bool, seed: int, progress: bool = False) -> list[Row]:
    d = 10
    u = 10 * np.sqrt(d)
    ns = np.rint(np.linspace(3000, 8000, 12)).astype(int)
    grid = [int(x) for x in (ns[[0, 2, 5, 8, 11]] if quick else ns)]  # quick: published n
    rows: list[Row] = []
    names = ("non-private (X'X/n)", "CoinPress t=3 (theory)", "ours")
    for n in tqdm(grid, desc="coinpress-covariance", disable=not progress):
        rng = np.random.default_rng([seed, 4, n])
        err: dict[str, list[float]] = {m: [] for m in names}
        secs = dict.fromkeys(names, 0.0)
        for _ in range(trials):
            X = rng.standard_normal((n, d))
            err[names[0]].append(float(np.linalg.norm(X.T @ X / n - np.eye(d))))
            for name, kw in ((names[1], {"constants": "theory", "steps": 3}), (names[2], {})):
                S, s = _timed(
                    coinpress_covariance, X, RHO, cov_upper=u, accountant=_acct(), noise=rng, **kw
                )
                err[name].append(float(np.linalg.norm(S - np.eye(d))))
                secs[name] += s
        for name, e in err.items():
            _record(rows, "w4", n, "Sigma=I u=10sqrt(d)", name, e, secs[name])
    return rows


def run_cov(trials: int, quick: bool, seed: int, progress: bool = False) -> list[Row]:
    d = 10
    rows: list[Row] = []
    ns = [3000, 5000, 8000] if quick else [3000, 4000, 5000, 6000, 7000, 8000]
    for n in tqdm(ns, desc="public-covariance", disable=not progress):
        rng = np.random.default_rng([seed, 10, n])
        names = ("np.cov", "direct port (theory)", "ours")
        err: dict[str, list[float]] = {m: [] for m in names}
        secs = dict.fromkeys(names, 0.0)
        for _ in range(trials):
            Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
            Sigma = Q @ np.diag(np.geomspace(1, 1e3, d)) @ Q.T
            C = np.linalg.cholesky(Sigma)
            W = np.linalg.inv(C)
            mu = 100 * rng.standard_normal(d)
            X = mu + rng.standard_normal((n, d)) @ C.T
            X_pub = mu + rng.standard_normal((d + 1, d)) @ C.T
            err["np.cov"].append(float(np.linalg.norm(W @ np.cov(X.T) @ W.T - np.eye(d))))
            for name, c in (("direct port (theory)", "theory"), ("ours", "practical")):
                (m, S), s = _timed(  # the direct port is measured even where it is hopeless
                    public_gaussian, X, X_pub, RHO, accountant=_acct(), noise=rng, constants=c,
                    checks=c == "practical",
                )
                err[name].append(float(np.linalg.norm(W @ S @ W.T - np.eye(d))))
                secs[name] += s
        for name, e in err.items():
            _record(rows, "cov", n, "d+1 public", name, e, secs[name])
    return rows


#: Published numbers drawn next to each experiment's curves (label -> {n: error}).
REFERENCES: dict[str, dict[str, dict[int, float]]] = {
    "coinpress-mean": {"CoinPress t=2 (published)": PUBLISHED_W1},
    "coinpress-covariance": {
        "CoinPress t=3 (published)": PUBLISHED_W4,
        "non-private (published)": PUBLISHED_W4_NONPRIVATE,
    },
}

EXPERIMENTS: dict[str, Callable[..., list[Row]]] = {
    "coinpress-mean": run_w1,
    "coinpress-covariance": run_w4,
    "one-public": run_w3,
    "public-covariance": run_cov,
}


def run(
    name: str,
    *,
    trials: int | None = None,
    quick: bool = False,
    seed: int = 0,
    progress: bool = False,
) -> list[Row]:
    """Run one experiment by name; ``trials`` defaults to 100 (50 for public-covariance)."""
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown experiment {name!r}; choose from {sorted(EXPERIMENTS)}")
    if trials is None:
        trials = 20 if quick else (50 if name == "public-covariance" else 100)
    return EXPERIMENTS[name](trials, quick, seed, progress)


# ----------------------------------------------------------------------------------------------
# The command line's demo (synthetic data, real errors)
# ----------------------------------------------------------------------------------------------


def _timed_fit(est: Any, X: np.ndarray, public: np.ndarray | None) -> tuple[Any, float, str]:
    t0 = time.perf_counter()
    try:
        est.fit(X, public_X=public)
        return est, time.perf_counter() - t0, ""
    except EstimationFailed as exc:
        return None, time.perf_counter() - t0, f"failed (a DP output): {exc}"
    except (InvalidDataError, PrivacyBudgetError, ValueError) as exc:
        return None, 0.0, f"not run: {exc}"


def demo_gaussian(n: int, d: int, rho: float, seed: int) -> tuple[list[tuple], dict[str, Any]]:
    """The ``privgauss demo`` Gaussian runs: table rows (label, mean error, covariance error,
    seconds) against the true parameters, and the models to plot: ``"truth"``,
    ``"non-private"`` and every private fit under the label of its row."""
    from .datasets import make_gaussian
    from .estimators import PrivateGaussian
    from .metrics import covariance_error, mahalanobis_mean_error, nonprivate_gaussian
    from .privacy import zcdp_to_epsilon

    rng = np.random.default_rng(seed)
    X, mu, cov = make_gaussian(n, d, mean=np.full(d, 1000.0), condition_number=10.0,
                               random_state=rng)
    pub, _, _ = make_gaussian(d + 1, d, mean=mu, cov=cov, random_state=rng)
    eps = zcdp_to_epsilon(rho, 1e-6)
    runs: list[tuple[str, dict[str, Any], np.ndarray | None]] = [
        ("public: 1 public row, mean only (Sigma known)", {"covariance": cov, "rho": rho},
         pub[:1]),
        (f"public: {d + 1} public rows, no bounds", {"rho": rho}, pub),
        ("coinpress: no public data, prior R=1e4, cov in [0.1, 100]",
         {"mean_bound": 1e4 * math.sqrt(d), "cov_bounds": (0.1, 100.0), "rho": rho}, None),
        (f"histogram: no public data, no bounds, ({eps:.3g}, 1e-6)-DP",
         {"epsilon": eps, "delta": 1e-6}, None),
    ]
    np_mean, np_cov = nonprivate_gaussian(X)
    rows: list[tuple] = [("non-private (sample mean / covariance)",
             f"{mahalanobis_mean_error(np_mean, mu, cov):.4f}",
             f"{covariance_error(np_cov, cov):.4f}", "-")]
    models: dict[str, Any] = {"truth": (mu, cov), "non-private": (np_mean, np_cov)}
    for label, kw, public in runs:
        g, secs, why = _timed_fit(PrivateGaussian(random_state=seed, **kw), X, public)
        if g is None:
            rows.append((label, why, "", ""))
            continue
        cov_err = "known" if "covariance" in kw else f"{covariance_error(g.covariance_, cov):.4f}"
        rows.append((label, f"{mahalanobis_mean_error(g.mean_, mu, cov):.4f}", cov_err,
                     f"{secs:.2f}"))
        models[label] = g
    return rows, models


def demo_mixture(
    n: int, epsilon: float, seed: int, deadline: float
) -> tuple[list[tuple], dict[str, Any]]:
    """The ``privgauss demo`` mixture runs: every registered method that ``method="auto"`` may
    pick, its default (em) first (public-data methods get ``n_pub`` public rows of the same
    mixture), next to scikit-learn's EM; methods due after ``deadline`` (a
    ``time.perf_counter()`` value) and methods "auto" never picks are listed as not run.
    The models to plot are ``"truth"``, ``"non-private"`` (EM) and every private fit under
    the label of its row."""
    from sklearn.mixture import GaussianMixture

    from . import methods
    from .datasets import make_mixture
    from .estimators import PrivateGaussianMixture
    from .metrics import mixture_error

    k, d, n_pub = 2, 2, 40
    mix = make_mixture(n + n_pub, k, d, separation=6.0, covariance="rotated",
                       condition_number=4.0, random_state=seed)
    X, pub = mix.X[n_pub:], mix.X[:n_pub]

    def errors(w: Any, m: Any, c: Any) -> tuple[str, str]:
        e = mixture_error(w, m, c, mix.weights, mix.means, mix.covariances)
        return f"{e.max_component_tv:.4f}", f"{e.weight_error:.4f}"

    sk = GaussianMixture(k, covariance_type="full", random_state=seed).fit(X)
    rows: list[tuple] = [
        ("non-private (scikit-learn EM)", *errors(sk.weights_, sk.means_, sk.covariances_), "-")
    ]
    models: dict[str, Any] = {"truth": (mix.weights, mix.means, mix.covariances),
                              "non-private": sk}
    # auto's default (the record with a fallback: em) first, so that the demo's time budget
    # never leaves it out; the others in the registry's order
    ordered = sorted(methods.table("mixture").items(), key=lambda kv: kv[1].fallback is None)
    for method, spec in ordered:
        public = pub if spec.uses_public else None
        label = f"{method}: " + (f"{n_pub} public rows" if spec.uses_public else "no public data")
        why = ""
        if not math.isfinite(spec.min_separation):
            why = "not run in the demo: method='auto' never picks it"
        elif time.perf_counter() > deadline:
            why = "not run: the demo's time budget is used up"
        if why:
            rows.append((label, f"{why} (try fit-mixture --method {method})", "", ""))
            continue
        est = PrivateGaussianMixture(k, epsilon=epsilon, delta=1e-6, method=method,
                                     random_state=seed)
        m, secs, why = _timed_fit(est, X, public)
        if m is None:
            rows.append((label, why, "", ""))
            continue
        rows.append((label, *errors(m.weights_, m.means_, m.covariances_), f"{secs:.2f}"))
        models[label] = m
    return rows, models



def write_csv(rows: list[Row], path: str | Path) -> None:
    """Write experiment rows as CSV."""
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def plot(rows: list[Row], path: str | Path, title: str = "") -> None:
    """Error against n (see :func:`privgauss.plots.plot_experiment`), with the published
    numbers of experiment ``title`` when there are any."""
    from .plots import plot_experiment

    plot_experiment(rows, path, title=title, reference=REFERENCES.get(title))
