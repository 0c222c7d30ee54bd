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
* ``agnostic-faithful`` — the faithful agnostic route (``method="agnostic",
  constants="theory"``: [B] Alg. 2–4 + Choosing with quantised EM lists) for d ∈ {1, 2, 5, 10},
  k ∈ {2, 3} at the first n its plan runs at (``faithful_plan(...).n_needed``, × ``--scales``):
  runs until 9 of 10 are out of reach (two ⊥), one pass over all cells at a time, within
  ``--time-limit`` seconds; the public failure step, and a non-private diagnostic — the share of
  200 blocks (same size, same grid) whose list holds the most common fit — next to the share
  the Choosing Mechanism needs (threshold / T), and [B] Thm 4's n.
* ``agnostic-share`` — the same non-private diagnostic (100 blocks) at 1, 10, 100, 1000 times
  the plan's fewest rows per block (≤ 50,000 rows), k = 2: how many rows per block the
  quantised EM lists need before one fit recurs in ~97% of blocks.

Usage: ``nice -n 10 python benchmarks/ppe.py --part all`` (writes benchmarks/results/ppe.{md,csv}).
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import math
import sys
import time
from pathlib import Path

import numpy as np

import privgauss as pg
from privgauss import metrics, theory
from privgauss.datasets import make_mixture
from privgauss.exceptions import EstimationFailed, InvalidDataError
from privgauss.mechanisms import Release

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


def first_n_mixture(d: int, k: int, runs: int, ns: list[int]
                    ) -> tuple[int | None, float, float, str]:
    for n in ns:
        errs = []
        for seed in range(runs):
            mix = make_mixture(n, k, d, separation=6.0, random_state=2000 + seed)
            try:
                m = pg.PrivateGaussianMixture(
                    k, epsilon=EPS, delta=DELTA, method="agnostic", random_state=seed,
                    enforce_requirements=False,
                ).fit(mix.X)
            except EstimationFailed:
                pass
            else:
                e = metrics.mixture_error(m.weights_, m.means_, m.covariances_, mix.weights,
                                          mix.means, mix.covariances)
                errs.append((e.max_component_tv, e.weight_error))
            if seed + 1 - len(errs) > runs - math.ceil(0.9 * runs):
                break  # cannot reach 9/10 any more
        from privgauss.reductions.agnostic import _p2_producers

        used = "+".join(_p2_producers(n, d, k, EPS, DELTA, 0.05))
        print(f"  agnostic d={d} k={k} n={n} ({used}): {len(errs)}/{runs}", file=sys.stderr,
              flush=True)
        if len(errs) >= math.ceil(0.9 * runs):
            med = np.median(errs, axis=0)
            return n, float(med[0]), float(med[1]), f"{len(errs)}/{runs} ({used})"
    return None, math.nan, math.nan, f"not by {ns[-1]:,}"


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


def part_mixture(mixture_runs: int, dims: list[int], ks: list[int], ns: list[int],
                 rows: list[dict]) -> list[str]:
    lines = [
        f"## k >= 2: route P2 (agnostic) with {mixture_runs} runs per n (n in "
        f"{', '.join(f'{n:g}' for n in ns)}); faithful PPE formula n",
        "",
        "| d | k | method | first n | runs returned | error there | theory formula n |",
        "|---|---|---|---|---|---|---|",
    ]
    for d in (1, 2, 5, 10):
        for k in ks:
            if d in dims:
                n, e1, e2, frac = first_n_mixture(d, k, mixture_runs, ns)
            else:
                n, e1, e2, frac = None, math.nan, math.nan, "not run (time)"
            form = theory.agnostic_n(EPS, DELTA, 0.1, 0.1, 16, 10 * k * d * d).n
            lines.append(f"| {d} | {k} | agnostic (P2) | {n or f'> {ns[-1]}'} | {frac} | "
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
                    from privgauss.privacy import Accountant, ApproxDP
                    from privgauss.reductions.ppe_gaussian import ppe_mixture

                    ppe_mixture(
                        X,
                        k,
                        EPS,
                        DELTA,
                        release=Release.of(Accountant(ApproxDP(EPS, DELTA)), 0),
                    )
                outcome = "estimate"
            except InvalidDataError:
                # the estimator refuses below the formula n; run the algorithm directly
                from privgauss.privacy import Accountant, ApproxDP
                from privgauss.reductions.ppe_gaussian import ppe_gaussian

                try:
                    ppe_gaussian(
                        X,
                        EPS,
                        DELTA,
                        constants="theory",
                        release=Release.of(Accountant(ApproxDP(EPS, DELTA)), 0),
                    )
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


def modal_share(X: np.ndarray, k: int, plan, n_blocks: int = 200, seed: int = 0) -> float:
    """Non-private diagnostic: the share of ``n_blocks`` blocks (the route's block size and
    grid) whose list holds the most common quantised fit."""
    from collections import Counter

    from threadpoolctl import threadpool_limits

    from privgauss.reductions.quantised_lists import quantised_em_lists

    rng = np.random.default_rng(seed)
    s = X.shape[0] // plan.n_blocks
    n_blocks = min(n_blocks, plan.n_blocks)
    perm = rng.permutation(X.shape[0])
    offset = rng.uniform(size=1 + X.shape[1] + X.shape[1] * (X.shape[1] + 1) // 2)
    counts: Counter = Counter()
    with threadpool_limits(1):
        for i in range(n_blocks):
            items = quantised_em_lists(X[perm[i * s:(i + 1) * s]], i, k=k, step=plan.step,
                                       offset=offset, w_step=plan.w_step,
                                       restarts=plan.restarts)
            counts.update({c for c, _ in items if c != "g0"})
    return max(counts.values(), default=0) / n_blocks


def part_agnostic_faithful(dims: list[int], scales: list[float], runs: int, limit: float,
                           rows: list[dict]) -> list[str]:
    from privgauss.reductions.agnostic import faithful_plan
    from privgauss.reductions.list_stable import choosing_threshold, reduction_parameters

    need = math.ceil(0.9 * runs)
    cells = [(d, k, sc) for d in dims for k in (2, 3) for sc in scales]
    res: dict[tuple, dict] = {c: {"ok": [], "fail": [], "secs": []} for c in cells}
    t0 = time.perf_counter()
    for r in range(runs):  # one pass over the undecided cells per round
        for cell in cells:
            d, k, sc = cell
            st = res[cell]
            if len(st["fail"]) > runs - need or len(st["ok"]) >= need:
                continue
            if time.perf_counter() - t0 > limit:
                break
            plan = faithful_plan(d, k, EPS, DELTA)
            n = int(sc * plan.n_needed)
            mix = make_mixture(n, k, d, separation=6.0, random_state=3000 + r)
            if r == 0:
                st["share"] = modal_share(mix.X, k, plan)
            t1 = time.perf_counter()
            try:
                m = pg.PrivateGaussianMixture(
                    k, epsilon=EPS, delta=DELTA, method="agnostic", constants="theory",
                    random_state=r,
                ).fit(mix.X)
                e = metrics.mixture_error(m.weights_, m.means_, m.covariances_, mix.weights,
                                          mix.means, mix.covariances)
                st["ok"].append((e.max_component_tv, e.weight_error))
            except EstimationFailed as exc:
                st["fail"].append(exc.step)
            st["secs"].append(time.perf_counter() - t1)
            print(f"  agnostic-faithful d={d} k={k} n={n}: {len(st['ok'])} ok, "
                  f"{st['fail']} ({st['secs'][-1]:.0f} s)", file=sys.stderr, flush=True)
    lines = [
        f"## Faithful agnostic route (`method=\"agnostic\", constants=\"theory\"`), eps = {EPS:g}, "
        f"delta = {DELTA:g}",
        "",
        "alpha = 0.2, beta = 0.05, C = 3, L = 5 (4 EM restarts + g0), T from `faithful_plan` "
        "(a candidate held by every list passes both tests). Runs stop once 9 of 10 is out of "
        "reach. 'modal share': non-private diagnostic, the share of 200 blocks of the same size "
        "(same grid) whose list holds the most common quantised fit; the Choosing Mechanism needs "
        "about threshold/T of the blocks at the final radius.",
        "",
        "| d | k | n (T x rows) | runs | returned | outcome | error there | modal share / needed "
        "| s per run | [B] Thm 4 n |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (d, k, sc), st in res.items():
        plan = faithful_plan(d, k, EPS, DELTA)
        n = int(sc * plan.n_needed)
        p = reduction_parameters(EPS, DELTA, plan.alpha, plan.beta, plan.list_size, 3.0)
        needed = choosing_threshold(p.e1, p.d1, plan.list_size, p.b1) / plan.n_blocks
        done = len(st["ok"]) + len(st["fail"])
        if not done:
            lines.append(f"| {d} | {k} | {n} ({plan.n_blocks} x {n // plan.n_blocks}) | 0 | - | "
                         f"not run (time limit) | - | - | - | {plan.theory_n:.2g} |")
            continue
        err = (np.median(st["ok"], axis=0) if st["ok"] else None)
        outcome = ", ".join(f"{st['fail'].count(s)} x ⊥ ({s})" for s in sorted(set(st["fail"])))
        lines.append(
            f"| {d} | {k} | {n} ({plan.n_blocks} x {n // plan.n_blocks}) | {done} | "
            f"{len(st['ok'])}/{done} | {outcome or 'estimates'} | "
            f"{'-' if err is None else f'{err[0]:.4f} / {err[1]:.4f}'} | "
            f"{st.get('share', math.nan):.3f} / {needed:.3f} | {np.median(st['secs']):.0f} | "
            f"{plan.theory_n:.2g} |"
        )
        rows.append(dict(part="agnostic-faithful", d=d, k=k, method="agnostic-theory", n=n,
                         returned=f"{len(st['ok'])}/{done}", runs=done,
                         mean_err="" if err is None else err[0],
                         cov_err="" if err is None else err[1]))
    return lines + [""]


def part_agnostic_share(dims: list[int], rows: list[dict]) -> list[str]:
    from privgauss.reductions.agnostic import faithful_plan

    lines = ["## Faithful agnostic route: modal share vs rows per block (non-private diagnostic)",
             "", "k = 2, separation 6, 100 blocks per cell, the route's grid (alpha = 0.2); the "
             "Choosing Mechanism needs ~0.97 at T = 5534.", "",
             "| d | rows per block | modal share | n this block size needs (x T) |",
             "|---|---|---|---|"]
    for d in dims:
        plan = faithful_plan(d, 2, EPS, DELTA)
        for mult in (1, 10, 100, 1000):
            size = plan.min_block * mult
            if size > 50_000:
                break
            X = make_mixture(100 * size, 2, d, separation=6.0, random_state=4000 + mult).X
            # blocks of `size` rows: a plan with 100 blocks over these rows
            share = modal_share(X, 2, dataclasses.replace(plan, n_blocks=100), n_blocks=100)
            lines.append(f"| {d} | {size} | {share:.2f} | {size * plan.n_blocks:.2g} |")
            rows.append(dict(part="agnostic-share", d=d, k=2, method="agnostic-theory",
                             n=size * plan.n_blocks, returned=f"share {share:.2f}", runs=100))
            print(lines[-1], file=sys.stderr, flush=True)
    return lines + [""]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--part", default="all",
                   choices=["target", "table", "mixture", "faithful", "agnostic-faithful",
                            "agnostic-share", "all"])
    p.add_argument("--scales", type=float, nargs="+", default=[1.0],
                   help="agnostic-faithful: n = scale x the plan's n")
    p.add_argument("--time-limit", type=float, default=1500.0,
                   help="agnostic-faithful: stop starting runs after this many seconds")
    p.add_argument("--mixture-dims", type=int, nargs="+", default=[1, 2, 5, 10])
    p.add_argument("--mixture-ks", type=int, nargs="+", default=[2, 3])
    p.add_argument("--mixture-ns", type=float, nargs="+", default=[1e5, 2e5, 5e5],
                   help="route P2: the grid of n probed in order")
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
        lines += part_mixture(a.mixture_runs, a.mixture_dims, a.mixture_ks,
                              [int(x) for x in a.mixture_ns], rows)
    if a.part in ("faithful", "all"):
        lines += part_faithful(a.faithful_dims, rows)
    if a.part == "agnostic-faithful":
        lines += part_agnostic_faithful(a.faithful_dims, a.scales, a.runs, a.time_limit, rows)
    if a.part == "agnostic-share":
        lines += part_agnostic_share(a.faithful_dims, rows)
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
    from privgauss.progress import on_terminal

    with on_terminal():  # a status line naming the current release, on a terminal
        main()
