"""Mixtures with public data: public-heavy, public-light, kssu, sample-aggregate and non-private EM
on the same draws, across n (Bie–Kamath–Singhal Alg. 7 and 10; issue 5).

Data: ``privgauss.datasets.make_mixture`` (spherical, ``--min-weight`` smallest weight, separation
ratio ``--separation``). Each draw has n private rows plus ``--public-heavy`` public rows from the
same mixture (default 10·d/w_min); public-light gets the first ``--public-light`` of them. Every
method sees the same private rows; EM is scikit-learn's ``GaussianMixture`` (full covariances,
k-means init, 3 restarts). Recovery: every true component matched with TV bound ≤ 0.2
(``privgauss.metrics.mixture_error``) and weight error ≤ 0.05. Noise: the fast seeded sampler.

Usage::

    nice -n 10 python benchmarks/public_mixtures.py                       # default, ~15 min
    nice -n 10 python benchmarks/public_mixtures.py --target              # the issue-5 cells only
    python benchmarks/public_mixtures.py --ns 20000,50000 --runs 2 --methods public-heavy,em

Writes ``<out>/<name>.csv`` (one row per run and method), ``.md`` (summary + the command) and
``.png`` (median largest-component TV against n).
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from privgauss import EstimationFailed
from privgauss.datasets import make_mixture
from privgauss.mechanisms import Release
from privgauss.metrics import mixture_error
from privgauss.mixture.kssu import kssu_gmm
from privgauss.mixture.public_heavy import public_heavy_gmm
from privgauss.mixture.public_light import public_light_gmm
from privgauss.mixture.sample_aggregate import sample_aggregate_gmm
from privgauss.privacy import Accountant, ApproxDP

TV_MAX, WEIGHT_MAX = 0.2, 0.05
METHODS = ("public-heavy", "public-light", "kssu", "sample-aggregate", "em")


def _em(X: np.ndarray, k: int, seed: int):
    from sklearn.mixture import GaussianMixture

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gm = GaussianMixture(k, covariance_type="full", n_init=3, random_state=seed).fit(X)
    return gm.weights_, gm.means_, gm.covariances_


def _fit(method: str, X, P_heavy, P_light, k, w_min, budget, seed):
    rel = Release.of(Accountant(budget), seed)
    if method == "em":
        return _em(X, k, seed)
    if method == "public-heavy":
        return public_heavy_gmm(X, k, budget, public_X=P_heavy, min_weight=w_min,
                                release=rel)
    if method == "public-light":
        return public_light_gmm(X, k, budget, public_X=P_light, min_weight=w_min,
                                release=rel)
    if method == "kssu":
        return kssu_gmm(X, k, budget, release=rel)
    return sample_aggregate_gmm(X, k, budget, release=rel)


def run(args: argparse.Namespace) -> list[dict]:
    rows: list[dict] = []
    budget = ApproxDP(args.epsilon, args.delta)
    for n in args.ns:
        for seed in range(args.runs):
            mix = make_mixture(n + args.public_heavy, args.k, args.d, min_weight=args.min_weight,
                               separation=args.separation, random_state=20_000 + seed)
            P = mix.X[: args.public_heavy]
            X = mix.X[args.public_heavy:]
            for method in args.methods:
                t0 = time.perf_counter()
                try:
                    w, m, c = _fit(method, X, P, P[: args.public_light], args.k,
                                   args.min_weight, budget, seed)
                    failed = ""
                except (EstimationFailed, ValueError) as exc:
                    failed = type(exc).__name__ + ": " + getattr(exc, "step", "")
                seconds = time.perf_counter() - t0
                row = {"n": n, "seed": seed, "method": method, "seconds": seconds,
                       "failed": failed}
                e = None
                if not failed:
                    try:
                        e = mixture_error(w, m, c, mix.weights, mix.means, mix.covariances)
                    except ValueError:  # an estimate without a density (singular covariance)
                        failed = "singular covariance"
                if e is not None:
                    row.update(
                        max_tv=e.max_component_tv,
                        weight_error=e.weight_error,
                        max_mean_error=float(np.max(e.mean_errors)),
                        max_cov_error=float(np.max(e.covariance_errors)),
                        recovered=bool((e.permutation >= 0).all()
                                       and e.max_component_tv <= TV_MAX
                                       and e.weight_error <= WEIGHT_MAX),
                    )
                else:
                    row.update(max_tv=1.0, weight_error=1.0, max_mean_error=math.inf,
                               max_cov_error=math.inf, recovered=False)
                rows.append(row)
                print(f"n={n} seed={seed} {method}: tv={row['max_tv']:.3f} "
                      f"w={row['weight_error']:.3f} {seconds:.2f}s {failed}", flush=True)
    return rows


def _median(rows: list[dict], key: str) -> float:
    vals = [r[key] for r in rows]
    return float(np.median(vals)) if vals else math.nan


def _ratio(rs: list[dict], em: list[dict], key: str) -> str:
    """Median over seeds of ours / EM on the same draw."""
    by_seed = {r["seed"]: r[key] for r in em}
    vals = [r[key] / max(by_seed[r["seed"]], 1e-12) for r in rs if r["seed"] in by_seed]
    return f"{np.median(vals):.2f}" if vals else "–"


def summary(rows: list[dict], args: argparse.Namespace, command: str, elapsed: float) -> str:
    lines = [
        "# Mixtures with public data: error against n on the same draws\n",
        f"Command: `{command}` (total {elapsed:.0f} s).\n",
        f"Data: d = {args.d}, k = {args.k}, smallest weight {args.min_weight}, spherical, "
        f"separation ratio {args.separation}; ε = {args.epsilon}, δ = {args.delta}; public rows: "
        f"{args.public_heavy} (public-heavy), {args.public_light} (public-light). Recovered = "
        f"every component matched with TV bound ≤ {TV_MAX} and weight error ≤ {WEIGHT_MAX}. "
        "Ratios are medians over runs of ours / EM on the same draws (TV: largest component TV "
        "bound; mean: largest Mahalanobis mean error; cov: largest covariance error; time: wall "
        "seconds).\n",
        "| n | method | recovered | median max TV | TV / EM | mean err / EM | cov err / EM "
        "| time / EM | failures |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for n in args.ns:
        em = [r for r in rows if r["n"] == n and r["method"] == "em"]
        for method in args.methods:
            rs = [r for r in rows if r["n"] == n and r["method"] == method]
            if not rs:
                continue
            ok = sum(r["recovered"] for r in rs)
            fails = sum(bool(r["failed"]) for r in rs)
            lines.append(
                f"| {n:,} | {method} | {ok}/{len(rs)} | {_median(rs, 'max_tv'):.3f} "
                f"| {_ratio(rs, em, 'max_tv')} | {_ratio(rs, em, 'max_mean_error')} "
                f"| {_ratio(rs, em, 'max_cov_error')} | {_ratio(rs, em, 'seconds')} | {fails} |"
            )
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], args: argparse.Namespace, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for method in args.methods:
        ns = [n for n in args.ns if any(r["n"] == n and r["method"] == method for r in rows)]
        med = [_median([r for r in rows if r["n"] == n and r["method"] == method], "max_tv")
               for n in ns]
        ax.plot(ns, med, marker="o", label=method)
    ax.axhline(TV_MAX, color="grey", ls=":", lw=1, label=f"TV = {TV_MAX}")
    ax.set_xscale("log")
    ax.set_xlabel("private samples n")
    ax.set_ylabel("median largest-component TV bound")
    ax.set_ylim(0, 1.05)
    ax.set_title(f"d={args.d}, k={args.k}, w_min={args.min_weight}, ε={args.epsilon}, "
                 f"δ={args.delta:g}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ns", default="10000,20000,50000,100000,200000")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--min-weight", type=float, default=0.2)
    ap.add_argument("--separation", type=float, default=6.0)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--public-heavy", type=int, default=None, help="default 10·d/w_min")
    ap.add_argument("--public-light", type=int, default=60)
    ap.add_argument("--target", action="store_true",
                    help="issue-5 cells: public-heavy and EM at n = 2e4, 10 runs")
    ap.add_argument("--name", default="public_mixtures")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args()
    if args.public_heavy is None:
        args.public_heavy = int(round(10 * args.d / args.min_weight))
    if args.target:
        args.ns, args.runs, args.methods = "20000", 10, "public-heavy,em"
    args.ns = [int(float(x)) for x in str(args.ns).split(",")]
    args.methods = [m for m in args.methods.split(",") if m]
    unknown = set(args.methods) - set(METHODS)
    if unknown:
        raise SystemExit(f"unknown methods {sorted(unknown)}; choose from {METHODS}")
    t0 = time.perf_counter()
    rows = run(args)
    elapsed = time.perf_counter() - t0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / f"{args.name}.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    command = "python benchmarks/public_mixtures.py " + " ".join(sys.argv[1:])
    (out / f"{args.name}.md").write_text(summary(rows, args, command.strip(), elapsed))
    plot(rows, args, out / f"{args.name}.png")
    print((out / f"{args.name}.md").read_text())


if __name__ == "__main__":
    from privgauss.progress import on_terminal

    with on_terminal():  # a status line naming the current release, on a terminal
        main()
