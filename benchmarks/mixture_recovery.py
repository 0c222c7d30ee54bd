"""Smallest n at which the no-public-data mixture learners recover every component.

For each configuration (d, k, budget) and method ("kssu", "sample-aggregate") the script searches
a grid of n for the smallest value at which at least ``need`` of ``runs`` independent draws are
recovered: every true component matched (Hungarian matching on the closed-form TV bound) with
per-component TV ≤ 0.2 (``privgauss.metrics.component_distance``, an upper bound on TV) and
weight error ≤ 0.05. Data: ``privgauss.datasets.make_mixture`` with equal weights, spherical
components and separation ratio ``--separation`` (default 6: well separated; KSSU is validated
from 5, sample-and-aggregate from 3). Noise: the fast seeded sampler (the secure one is ~100×
slower per draw and changes nothing statistically).

At the n found it reports the ratio of our largest component TV to that of scikit-learn's
non-private ``GaussianMixture`` (k-means init, 3 restarts) fitted on the same draws, and the
wall-time ratio (ours / sklearn), both medians over the runs.

Usage::

    python benchmarks/mixture_recovery.py --quick            # the target cell + a few, ~10 min
    python benchmarks/mixture_recovery.py                    # all cells, 10 runs, 9/10 needed
    python benchmarks/mixture_recovery.py --budget-seconds 600 --out benchmarks/results

    python benchmarks/mixture_recovery.py --cells '10,3,1' --methods kssu --name target

Results go to ``<out>/<name>.md`` and ``.json`` (name default ``mixture_recovery``).
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from privgauss import EstimationFailed
from privgauss.accounting import Accountant, ApproxDP
from privgauss.datasets import make_mixture
from privgauss.metrics import mixture_error
from privgauss.mixture.kssu import kssu_gmm
from privgauss.mixture.requirements import requirements
from privgauss.mixture.sample_aggregate import sample_aggregate_gmm

GRID = [5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000, 5_000_000]
TV_MAX, WEIGHT_MAX = 0.2, 0.05
DELTA = 1e-6


@dataclass
class Probe:
    n: int
    successes: int
    runs: int
    max_tv: list[float] = field(default_factory=list)
    sk_max_tv: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    sk_seconds: list[float] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)


@dataclass
class Cell:
    method: str
    d: int
    k: int
    epsilon: float
    n_required: float
    smallest_n: int | None = None
    note: str = ""
    probes: list[Probe] = field(default_factory=list)


def _sklearn(X: np.ndarray, k: int, seed: int):
    from sklearn.mixture import GaussianMixture

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gm = GaussianMixture(k, covariance_type="full", n_init=3, random_state=seed).fit(X)
    return gm.weights_, gm.means_, gm.covariances_


def _run_once(
    method: str, n: int, d: int, k: int, eps: float, seed: int, sep: float, probe: Probe
) -> bool:
    mix = make_mixture(n, k, d, separation=sep, random_state=10_000 + seed)
    budget = ApproxDP(eps, DELTA)
    t0 = time.perf_counter()
    try:
        if method == "kssu":
            w, m, c = kssu_gmm(mix.X, k, budget, accountant=Accountant(budget), noise=seed)
        else:
            w, m, c = sample_aggregate_gmm(
                mix.X, k, budget, accountant=Accountant(budget), noise=seed
            )
    except EstimationFailed as exc:
        probe.failures[exc.step] = probe.failures.get(exc.step, 0) + 1
        probe.seconds.append(time.perf_counter() - t0)
        return False
    probe.seconds.append(time.perf_counter() - t0)
    err = mixture_error(w, m, c, mix.weights, mix.means, mix.covariances)
    t1 = time.perf_counter()
    sw, sm, sc = _sklearn(mix.X, k, seed)
    probe.sk_seconds.append(time.perf_counter() - t1)
    sk = mixture_error(sw, sm, sc, mix.weights, mix.means, mix.covariances)
    probe.max_tv.append(float(err.max_component_tv))
    probe.sk_max_tv.append(float(sk.max_component_tv))
    ok = bool(
        (err.permutation >= 0).all()
        and err.max_component_tv <= TV_MAX
        and err.weight_error <= WEIGHT_MAX
    )
    if not ok:
        probe.failures["accuracy"] = probe.failures.get("accuracy", 0) + 1
    return ok


def _probe(
    method: str,
    n: int,
    d: int,
    k: int,
    eps: float,
    runs: int,
    need: int,
    sep: float,
    deadline: float,
) -> Probe | None:
    probe = Probe(n, 0, 0)
    for seed in range(runs):
        if time.perf_counter() > deadline:
            return None
        probe.runs += 1
        probe.successes += _run_once(method, n, d, k, eps, seed, sep, probe)
        if probe.runs - probe.successes > runs - need:  # cannot reach `need` any more
            break
    return probe


def search(cell: Cell, runs: int, need: int, sep: float, deadline: float) -> None:
    """Walk the grid from the requirement's hint: down while recovering, up while not."""
    start = min(range(len(GRID)), key=lambda i: abs(math.log(GRID[i] / cell.n_required)))
    tried: dict[int, bool] = {}
    i = start
    while 0 <= i < len(GRID) and GRID[i] not in tried:
        p = _probe(cell.method, GRID[i], cell.d, cell.k, cell.epsilon, runs, need, sep, deadline)
        if p is None:
            cell.note = "stopped: time budget"
            break
        cell.probes.append(p)
        tried[GRID[i]] = p.successes >= need
        i = i - 1 if tried[GRID[i]] else i + 1
    ok = sorted(n for n, good in tried.items() if good)
    bad = [n for n, good in tried.items() if not good]
    if ok:
        cell.smallest_n = ok[0]
        if not any(b < ok[0] for b in bad) and ok[0] != GRID[0] and cell.note == "":
            cell.note = "not probed below"
    elif not cell.note:
        cell.note = f"not recovered up to n = {max(tried) if tried else 0:,}"


def _fmt_cell(c: Cell) -> str:
    at = next((p for p in c.probes if p.n == c.smallest_n), None)
    if at is None or not at.max_tv:
        ratio = time_ratio = "–"
    else:
        ratio = f"{np.median(at.max_tv) / max(np.median(at.sk_max_tv), 1e-12):.2f}"
        time_ratio = f"{np.median(at.seconds) / max(np.median(at.sk_seconds), 1e-9):.1f}"
    probes = "; ".join(
        f"{p.n:,}: {p.successes}/{p.runs}"
        + (f" ({', '.join(f'{s}×{v}' for s, v in p.failures.items())})" if p.failures else "")
        for p in sorted(c.probes, key=lambda p: p.n)
    )
    n = f"{c.smallest_n:,}" if c.smallest_n else "–"
    return (
        f"| {c.method} | {c.d} | {c.k} | {c.epsilon:g} | {c.n_required:.3g} | {n} | {ratio} "
        f"| {time_ratio} | {probes} {c.note} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="few cells, 3 runs (3/3 needed)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--need", type=int, default=9)
    ap.add_argument("--separation", type=float, default=6.0)
    ap.add_argument("--budget-seconds", type=float, default=math.inf)
    ap.add_argument("--methods", default="kssu,sample-aggregate")
    ap.add_argument(
        "--cells", default="", help="semicolon-separated d,k,epsilon triples, e.g. '10,3,1'"
    )
    ap.add_argument("--name", default="mixture_recovery", help="output file stem")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = ap.parse_args()
    if args.quick:
        args.runs, args.need = 3, 3
        cells = [(10, 3, 1.0), (2, 2, 1.0), (2, 3, 5.0), (10, 3, 5.0), (10, 2, 1.0), (2, 5, 5.0)]
    else:
        cells = [(d, k, e) for e in (1.0, 5.0) for d in (2, 10) for k in (2, 3, 5)]
    if args.cells:
        cells = [
            (int(a), int(b), float(c))
            for a, b, c in (cell.split(",") for cell in args.cells.split(";"))
        ]
    methods = args.methods.split(",")
    deadline = time.perf_counter() + args.budget_seconds
    results: list[Cell] = []
    t_start = time.perf_counter()
    for d, k, eps in cells:
        for method in methods:
            req = requirements(method, n=10**6, d=d, k=k, epsilon=eps, delta=DELTA).n_needed
            cell = Cell(method, d, k, eps, req)
            search(cell, args.runs, args.need, args.separation, deadline)
            results.append(cell)
            print(_fmt_cell(cell), flush=True)
            if time.perf_counter() > deadline:
                break
        if time.perf_counter() > deadline:
            break
    elapsed = time.perf_counter() - t_start
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    header = (
        "# Mixture recovery: smallest n on the grid with >= "
        f"{args.need}/{args.runs} runs recovered\n\n"
        f"Criterion: every component matched with TV bound <= {TV_MAX}, weight error <= "
        f"{WEIGHT_MAX}. Data: equal weights, spherical, separation ratio {args.separation:g}; "
        f"δ = {DELTA:g}; fast seeded noise. Grid: {', '.join(f'{g:,}' for g in GRID)}. "
        f"`n_req` = `requirements(...).n_needed` (practical). Error ratio = median max-component "
        f"TV, ours / sklearn GaussianMixture on the same draws; time ratio = ours / sklearn. "
        f"Total time {elapsed:.0f} s.\n\n"
        "| method | d | k | ε | n_req | smallest n | TV ratio | time ratio | probes |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
    )
    (out / f"{args.name}.md").write_text(header + "\n".join(_fmt_cell(c) for c in results) + "\n")
    (out / f"{args.name}.json").write_text(json.dumps([asdict(c) for c in results], indent=1))


if __name__ == "__main__":
    main()
