"""Reproductions of the papers' experiments (CSV rows and error-vs-n plots).

* ``coinpress-mean`` (W1): mean of N(0, I_50), ρ = 0.5, prior radius R = 10√d, n ∈
  linspace(1000, 10000, 12): ours (automatic schedule) vs CoinPress t = 2 with its published
  constants vs the non-private mean (Biswas–Dong–Kamath–Ullman 2020).
* ``one-public`` (W3): one public sample, μ = k·1 (k = 10, 100, 1000), d = 50, ρ = 0.5, no bound:
  ours vs the paper's recipe (CoinPress t = 2 with the code's n-for-d radius) vs plain CoinPress
  t = 2 with R = k√d vs non-private (Bie–Kamath–Singhal 2022, App. A).
* ``public-covariance``: d = 10, ρ = 0.5, d+1 public samples, unknown mean and covariance, no
  bounds: covariance error ‖Σ^{-1/2} Σ̂ Σ^{-1/2} − I‖_F of ours vs the direct port of Alg. 2
  vs ``np.cov``.

Each row is the 10%-trimmed mean (and 10%-trimmed std) of the error over ``trials`` runs on the
same draws for every method. Noise is the fast seeded path: these are experiments, not releases.
"""

from __future__ import annotations

import csv
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import trim_mean
from scipy.stats.mstats import trimmed_std
from tqdm.auto import tqdm

from .accounting import ZCDP, Accountant
from .gaussian.coinpress import coinpress_mean
from .gaussian.public import public_gaussian, public_mean_one_sample

RHO = 0.5
# CoinPress results/synthetic_mean/*-1.txt, t = 2 (anchors.md §2.1)
PUBLISHED_W1 = {1000: 0.281, 1818: 0.187, 2636: 0.149, 5090: 0.102, 10000: 0.0732}


def _acct() -> Accountant:
    return Accountant(ZCDP(RHO))


def _stats(errors: list[float]) -> tuple[float, float]:
    e = np.asarray(errors)
    return float(trim_mean(e, 0.1)), float(trimmed_std(e, limits=(0.1, 0.1), ddof=1))


def _grid(quick: bool, lo: int, hi: int, num: int) -> list[int]:
    ns = np.linspace(lo, hi, num).astype(int)
    return [int(x) for x in (ns[[0, 1, 2, len(ns) // 2, -1]] if quick else ns)]


Row = dict[str, object]


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
                runs = (
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
                (m, S), s = _timed(
                    public_gaussian, X, X_pub, RHO, accountant=_acct(), noise=rng, constants=c
                )
                err[name].append(float(np.linalg.norm(W @ S @ W.T - np.eye(d))))
                secs[name] += s
        for name, e in err.items():
            _record(rows, "cov", n, "d+1 public", name, e, secs[name])
    return rows


EXPERIMENTS: dict[str, Callable[..., list[Row]]] = {
    "coinpress-mean": run_w1,
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


def write_csv(rows: list[Row], path: str | Path) -> None:
    """Write experiment rows as CSV."""
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def plot(rows: list[Row], path: str | Path, title: str = "") -> None:
    """Error against n, one line per method (and per k), with trimmed-std error bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups: dict[tuple[Any, Any], list[Row]] = {}
    for r in rows:
        groups.setdefault((r["k"], r["method"]), []).append(r)
    ks = sorted({r["k"] for r in rows}, key=str)
    fig, axes = plt.subplots(1, len(ks), figsize=(5.5 * len(ks), 4.2), squeeze=False)
    for ax, k in zip(axes[0], ks, strict=True):
        for (kk, method), rs in groups.items():
            if kk != k:
                continue
            rs = sorted(rs, key=lambda r: r["n"])
            ax.errorbar(
                [r["n"] for r in rs],
                [r["trimmed_mean"] for r in rs],
                yerr=[r["trimmed_std"] for r in rs],
                marker="o",
                ms=3,
                capsize=2,
                label=str(method),
            )
        ax.set_xlabel("n (private rows)")
        ax.set_ylabel("error (10%-trimmed mean)")
        ax.set_yscale("log")
        ax.set_title(f"{title}, k = {k}" if isinstance(k, int) else f"{title} ({k})")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
