"""PPE / agnostic benchmark (issue 6): where each method first returns an estimate, and its error.

Parts (``--part``):

* ``target`` — d = 10, (ε, δ) = (1, 1e-6), n ∈ {50k, 100k}: the practical PPE
  (``PrivateGaussian(method="ppe")``) against the histogram-localised estimator
  (``method="histogram"``) **on the same draws** (one N(μ, Σ) per seed, μ ~ 1e3·N(0, I),
  Σ = AAᵀ + 0.5 I), with the non-private sample mean/covariance; BHS23 needs n ≳ 98,000 here
  (anchors.md §2.11). Errors: Mahalanobis mean error ‖Σ^{-1/2}(μ̂ − μ)‖ and
  ‖Σ^{-1/2}Σ̂Σ^{-1/2} − I‖_F (``metrics.covariance_error``); median over seeds; wall time ratio.
* ``table`` — d ∈ {1, 2, 5, 10}, k ∈ {1, 2, 3}: the smallest n of the grid at which a method
  returns an estimate in ≥ 9 of ``--runs`` runs, and its median error there, next to the
  theory formula's n (:func:`privgauss.theory.ppe_n`, :func:`privgauss.theory.agnostic_n`).
  k = 1 (``table``): ppe (practical), histogram; k ≥ 2 (``mixture``): agnostic (route P2,
  ``--mixture-runs`` runs per n, separation ratio 6, equal weights) and the faithful PPE's
  formula n. ``faithful``: one run of the faithful PPE at the grid cap per (d, k).

Usage: ``nice -n 10 python benchmarks/ppe.py --part all`` (writes benchmarks/results/ppe.{md,csv}).
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from pathlib import Path

import numpy as np

import privgauss as pg
from privgauss import metrics, theory
from privgauss.datasets import make_mixture
from privgauss.exceptions import EstimationFailed, InvalidDataError

EPS, DELTA = 1.0, 1e-6
GRID = [5_000, 10_000, 20_000, 30_000, 50_000, 100_000, 200_000]
CAP = GRID[-1]
OUT = Path(__file__).parent / "results"


def gaussian(d: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d))
    S = A @ A.T + 0.5 * np.eye(d)
    mu = rng.normal(size=d) * 1e3
    return rng.multivariate_normal(mu, S, size=n), mu, S


def fit_gaussian(method: str, X: np.ndarray, seed: int, constants: str = "practical"):
    t0 = time.perf_counter()
    try:
        g = pg.PrivateGaussian(
            epsilon=EPS, delta=DELTA, method=method, random_state=seed, constants=constants
        ).fit(X)
    except EstimationFailed:
        return None, time.perf_counter() - t0, "failed"
    except InvalidDataError:
        return None, time.perf_counter() - t0, "refused"
    return (g.mean_, g.covariance_), time.perf_counter() - t0, "ok"


def part_target(runs: int, rows: list[dict]) -> list[str]:
    lines = [
        "## Target: d = 10, eps = 1, delta = 1e-6 (same draws for every method)",
        "",
        "| n | method | returned | median Mahalanobis mean err | median cov err (Frobenius, "
        "whitened) | non-private mean / cov err | median time (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for n in (50_000, 100_000):
        res: dict[str, list] = {"ppe": [], "histogram": []}
        nonpriv = []
        times: dict[str, list] = {"ppe": [], "histogram": []}
        for seed in range(runs):
            X, mu, S = gaussian(10, n, seed)
            nonpriv.append((
                metrics.mahalanobis_mean_error(X.mean(axis=0), mu, S),
                metrics.covariance_error(np.cov(X, rowvar=False), S),
            ))
            for m in res:
                est, dt, status = fit_gaussian(m, X, seed)
                times[m].append(dt)
                if est is not None:
                    res[m].append((
                        metrics.mahalanobis_mean_error(est[0], mu, S),
                        metrics.covariance_error(est[1], S),
                    ))
        npm = np.median(nonpriv, axis=0)
        for m, errs in res.items():
            med = np.median(errs, axis=0) if errs else (math.nan, math.nan)
            lines.append(
                f"| {n} | {m} | {len(errs)}/{runs} | {med[0]:.4f} | {med[1]:.4f} | "
                f"{npm[0]:.4f} / {npm[1]:.4f} | {np.median(times[m]):.2f} |"
            )
            rows.append(dict(part="target", d=10, k=1, method=m, n=n, returned=len(errs),
                             runs=runs, mean_err=med[0], cov_err=med[1],
                             nonprivate_mean_err=npm[0], nonprivate_cov_err=npm[1],
                             seconds=float(np.median(times[m]))))
        ratio = np.median(times["ppe"]) / np.median(times["histogram"])
        lines.append(f"| {n} | time ratio ppe / histogram | | | | | {ratio:.2f} |")
    lines += ["", "BHS23 (anchors.md 2.11): needs n >= ~98,000 at d = 10, eps = 1, delta = 1e-6 "
              "(lambda0 = 50); its accuracy at n = 1e5 is not published.", ""]
    return lines


def first_n_gaussian(method: str, d: int, runs: int) -> tuple[int | None, float, float, str]:
    for n in GRID:
        errs, statuses = [], []
        for seed in range(runs):
            X, mu, S = gaussian(d, n, 1000 + seed)
            est, _, status = fit_gaussian(method, X, seed)
            statuses.append(status)
            if status == "refused":
                break
            if est is not None:
                errs.append((metrics.mahalanobis_mean_error(est[0], mu, S),
                             metrics.covariance_error(est[1], S)))
            if seed + 1 - len(errs) > runs - math.ceil(0.9 * runs):
                break  # cannot reach 9/10 any more
        if len(errs) >= math.ceil(0.9 * runs):
            med = np.median(errs, axis=0)
            return n, float(med[0]), float(med[1]), f"{len(errs)}/{runs}"
        print(f"  {method} d={d} n={n}: {statuses.count('ok')} ok, "
              f"{statuses.count('failed')} failed, {statuses.count('refused')} refused",
              file=sys.stderr, flush=True)
    return None, math.nan, math.nan, "not reached"


def first_n_mixture(d: int, k: int, runs: int) -> tuple[int | None, float, float, str]:
    for n in (100_000, 200_000):
        errs = []
        for seed in range(runs):
            mix = make_mixture(n, k, d, separation=6.0, random_state=2000 + seed)
            try:
                m = pg.PrivateGaussianMixture(
                    k, epsilon=EPS, delta=DELTA, method="agnostic", random_state=seed,
                    enforce_requirements=False,
                ).fit(mix.X)
            except EstimationFailed:
                continue
            e = metrics.mixture_error(m.weights_, m.means_, m.covariances_, mix.weights,
                                      mix.means, mix.covariances)
            errs.append((e.max_component_tv, e.weight_error))
            if seed + 1 - len(errs) > runs - math.ceil(0.9 * runs):
                break
        print(f"  agnostic d={d} k={k} n={n}: {len(errs)}/{runs}", file=sys.stderr, flush=True)
        if len(errs) >= math.ceil(0.9 * runs):
            med = np.median(errs, axis=0)
            return n, float(med[0]), float(med[1]), f"{len(errs)}/{runs}"
    return None, math.nan, math.nan, "not reached"


def part_table(runs: int, rows: list[dict]) -> list[str]:
    lines = [
        "## Table: smallest n (grid " + ", ".join(f"{g:g}" for g in GRID) + ") with an "
        "estimate in >= 90% of runs, eps = 1, delta = 1e-6",
        "",
        "k = 1 errors: median Mahalanobis mean error / whitened Frobenius covariance error. "
        "k >= 2 errors: median max component TV bound / weight error (separation ratio 6).",
        "",
        "| d | k | method | first n | runs returned | error there | theory formula n |",
        "|---|---|---|---|---|---|---|",
    ]
    for d in (1, 2, 5, 10):
        for method in ("ppe", "histogram"):
            n, e1, e2, frac = first_n_gaussian(method, d, runs)
            form = f"{theory.ppe_n(d, 1, EPS, DELTA).n:.2g} (faithful)" if method == "ppe" else "-"
            lines.append(f"| {d} | 1 | {method} | {n or f'> {CAP}'} | {frac} | "
                         f"{e1:.4f} / {e2:.4f} | {form} |")
            rows.append(dict(part="table", d=d, k=1, method=method, n=n or "", returned=frac,
                             runs=runs, mean_err=e1, cov_err=e2))
            print("\n".join(lines[-1:]), file=sys.stderr, flush=True)
    return lines + [""]


def part_mixture(mixture_runs: int, dims: list[int], rows: list[dict]) -> list[str]:
    lines = [
        f"## k >= 2: route P2 (agnostic) with {mixture_runs} runs per n (n in 1e5, 2e5); "
        "faithful PPE formula n",
        "",
        "| d | k | method | first n | runs returned | error there | theory formula n |",
        "|---|---|---|---|---|---|---|",
    ]
    for d in (1, 2, 5, 10):
        for k in (2, 3):
            if d in dims:
                n, e1, e2, frac = first_n_mixture(d, k, mixture_runs)
            else:
                n, e1, e2, frac = None, math.nan, math.nan, "not run (time)"
            form = theory.agnostic_n(EPS, DELTA, 0.1, 0.1, 16, 10 * k * d * d).n
            lines.append(f"| {d} | {k} | agnostic (P2) | {n or f'> {CAP}'} | {frac} | "
                         f"{e1:.4f} / {e2:.4f} | {form:.2g} ([B] Thm 4, L = 16) |")
            lines.append(f"| {d} | {k} | ppe (faithful) | > {CAP} | see faithful part | - | "
                         f"{theory.ppe_n(d, k, EPS, DELTA).n:.2g} |")
            rows.append(dict(part="table", d=d, k=k, method="agnostic", n=n or "",
                             returned=frac, runs=mixture_runs, mean_err=e1, cov_err=e2))
            print("\n".join(lines[-2:]), file=sys.stderr, flush=True)
    return lines + [""]


def part_faithful(dims: list[int], rows: list[dict]) -> list[str]:
    lines = ["## Faithful PPE (thesis constants): one run at the grid cap n = 200,000", "",
             "| d | k | outcome | formula n |", "|---|---|---|---|"]
    for d in dims:
        for k in (1, 2, 3):
            if k == 1:
                X = gaussian(d, CAP, 7)[0]
            else:
                X = make_mixture(CAP, k, d, separation=6.0, random_state=7).X
            t0 = time.perf_counter()
            try:
                if k == 1:
                    pg.PrivateGaussian(epsilon=EPS, delta=DELTA, method="ppe", constants="theory",
                                       random_state=0).fit(X)
                else:
                    from privgauss.accounting import Accountant, ApproxDP
                    from privgauss.reductions.ppe_gaussian import ppe_mixture

                    ppe_mixture(X, k, EPS, DELTA, accountant=Accountant(ApproxDP(EPS, DELTA)),
                                noise=0)
                outcome = "estimate"
            except InvalidDataError:
                # the estimator refuses below the formula n; run the algorithm directly
                from privgauss.accounting import Accountant, ApproxDP
                from privgauss.reductions.ppe_gaussian import ppe_gaussian

                try:
                    ppe_gaussian(X, EPS, DELTA, accountant=Accountant(ApproxDP(EPS, DELTA)),
                                 noise=0, constants="theory")
                    outcome = "estimate"
                except EstimationFailed as e:
                    outcome = f"⊥ ({e.step})"
            except EstimationFailed as e:
                outcome = f"⊥ ({e.step})"
            dt = time.perf_counter() - t0
            formula = theory.ppe_n(d, k, EPS, DELTA).n
            lines.append(f"| {d} | {k} | {outcome}, {dt:.0f} s | {formula:.2g} |")
            rows.append(dict(part="faithful", d=d, k=k, method="ppe-faithful", n=CAP,
                             returned=outcome, runs=1, mean_err="", cov_err=""))
            print(lines[-1], file=sys.stderr, flush=True)
    return lines + [""]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--part", choices=["target", "table", "mixture", "faithful", "all"],
                   default="all")
    p.add_argument("--mixture-dims", type=int, nargs="+", default=[1, 2, 5, 10])
    p.add_argument("--faithful-dims", type=int, nargs="+", default=[1, 2, 5, 10])
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--mixture-runs", type=int, default=10)
    p.add_argument("--out", default=str(OUT / "ppe"))
    a = p.parse_args()
    rows: list[dict] = []
    lines = ["# PPE / agnostic benchmark", "",
             f"Command: `nice -n 10 python benchmarks/ppe.py {' '.join(sys.argv[1:])}`", ""]
    t0 = time.time()
    if a.part in ("target", "all"):
        lines += part_target(a.runs, rows)
    if a.part in ("table", "all"):
        lines += part_table(a.runs, rows)
    if a.part in ("mixture", "all"):
        lines += part_mixture(a.mixture_runs, a.mixture_dims, rows)
    if a.part in ("faithful", "all"):
        lines += part_faithful(a.faithful_dims, rows)
    lines.append(f"Total wall time {time.time() - t0:.0f} s (2-core machine shared with other "
                 "jobs).")
    out = Path(a.out)
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    keys = sorted({k for r in rows for k in r})
    with out.with_suffix(".csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
