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

**Resumable.** Every finished probe (one n, all its runs) is appended to ``<out>/<name>.json``
at once; a rerun with the same settings skips finished cells and reuses finished probes of
unfinished ones. ``--seed-from`` takes earlier result files (e.g. the 3-run quick results): the
search of a cell starts one grid step below the smallest n found there; probes of files made with
the same ``runs``/``need``/separation (``--reuse-probes-from`` for older files) are reused.
Cells not finished within ``--time-budget`` seconds are marked "unfinished" (never extrapolated).

Usage::

    python benchmarks/mixture_recovery.py --quick            # the target cell + a few, ~10 min
    python benchmarks/mixture_recovery.py                    # all cells, 10 runs, 9/10 needed
    python benchmarks/mixture_recovery.py --time-budget 4000 \
        --seed-from benchmarks/results/mixture_recovery_quick.json \
        --reuse-probes-from benchmarks/results/mixture_recovery_target.json

    python benchmarks/mixture_recovery.py --cells '10,3,1' --methods kssu --name target

Results go to ``<out>/<name>.md`` and ``.json`` (name default ``mixture_recovery``).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from privgauss import EstimationFailed, mixture_requirements
from privgauss.datasets import make_mixture
from privgauss.mechanisms import Release
from privgauss.metrics import mixture_error
from privgauss.mixture.kssu import kssu_gmm
from privgauss.mixture.sample_aggregate import sample_aggregate_gmm
from privgauss.privacy import Accountant, ApproxDP

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
    status: str = "done"
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
            w, m, c = kssu_gmm(mix.X, k, budget, release=Release.of(Accountant(budget), seed))
        else:
            w, m, c = sample_aggregate_gmm(
                mix.X, k, budget, release=Release.of(Accountant(budget), seed)
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


def _grid_index(n: float) -> int:
    return min(range(len(GRID)), key=lambda i: abs(math.log(GRID[i] / n)))


def search(
    cell: Cell,
    runs: int,
    need: int,
    sep: float,
    deadline: float,
    start_n: float,
    cached: dict[int, Probe],
    save: Callable[[], None],
) -> None:
    """Walk the grid from ``start_n``: down while recovering, up while not. Probes in
    ``cached`` are reused; each new probe is recorded in ``cell`` and saved at once."""
    tried: dict[int, bool] = {}
    i = _grid_index(start_n)
    while 0 <= i < len(GRID) and GRID[i] not in tried:
        p = cached.get(GRID[i])
        if p is None:
            t0 = time.perf_counter()
            p = _probe(
                cell.method, GRID[i], cell.d, cell.k, cell.epsilon, runs, need, sep, deadline
            )
            if p is None:
                cell.status = "unfinished"
                cell.note = "unfinished: time budget reached"
                save()
                return
            print(
                f"  {cell.method} d={cell.d} k={cell.k} eps={cell.epsilon:g} n={p.n:,}: "
                f"{p.successes}/{p.runs} in {time.perf_counter() - t0:.0f} s",
                flush=True,
            )
        if all(q.n != p.n for q in cell.probes):
            cell.probes.append(p)
        save()
        tried[GRID[i]] = p.successes >= need
        i = i - 1 if tried[GRID[i]] else i + 1
    ok = sorted(n for n, good in tried.items() if good)
    bad = [n for n, good in tried.items() if not good]
    cell.status = "done"
    if ok:
        cell.smallest_n = ok[0]
        if not any(b < ok[0] for b in bad) and ok[0] != GRID[0]:
            cell.note = "not probed below"
    else:
        cell.note = f"not recovered up to n = {max(tried) if tried else 0:,}"
    save()


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
    note = c.note or ("" if c.status == "done" else c.status)
    return (
        f"| {c.method} | {c.d} | {c.k} | {c.epsilon:g} | {c.n_required:.3g} | {n} | {ratio} "
        f"| {time_ratio} | {probes} {note} |"
    )


def _key(method: str, d: int, k: int, eps: float) -> str:
    return f"{method}|{d}|{k}|{eps:g}"


def _cell_from(raw: dict) -> Cell:
    probes = [Probe(**p) for p in raw.get("probes", [])]
    fields = {k: v for k, v in raw.items() if k != "probes"}
    return Cell(**fields, probes=probes)


def _load_seeds(
    seed_paths: list[str], reuse_paths: list[str], settings: dict
) -> tuple[dict[str, int], dict[str, dict[int, Probe]]]:
    """Smallest n found per cell in earlier result files, and their reusable probes: those of
    files saved with the same settings, and of ``reuse_paths`` (older list-format files that the
    caller vouches were run with the same runs/need/separation)."""
    smallest: dict[str, int] = {}
    probes: dict[str, dict[int, Probe]] = {}
    for path in seed_paths + reuse_paths:
        raw = json.loads(Path(path).read_text())
        same = path in reuse_paths or (isinstance(raw, dict) and raw.get("settings") == settings)
        for c in map(_cell_from, raw["cells"] if isinstance(raw, dict) else raw):
            key = _key(c.method, c.d, c.k, c.epsilon)
            if c.smallest_n:
                smallest[key] = min(smallest.get(key, c.smallest_n), c.smallest_n)
            if same:
                probes.setdefault(key, {}).update({p.n: p for p in c.probes})
    return smallest, probes


def _write_md(path: Path, cells: list[Cell], settings: dict, elapsed: float, cmd: str) -> None:
    done = sum(c.status == "done" for c in cells)
    header = (
        "# Mixture recovery: smallest n on the grid with >= "
        f"{settings['need']}/{settings['runs']} runs recovered\n\n"
        f"Command: `{cmd}`\n\n"
        f"Criterion: every component matched with TV bound <= {TV_MAX}, weight error <= "
        f"{WEIGHT_MAX}. Data: equal weights, spherical, separation ratio "
        f"{settings['separation']:g}; δ = {DELTA:g}; fast seeded noise. "
        f"Grid: {', '.join(f'{g:,}' for g in GRID)}. "
        f"`n_req` = `requirements(...).n_needed` (practical). Error ratio = median max-component "
        f"TV, ours / sklearn GaussianMixture on the same draws; time ratio = ours / sklearn. "
        f"{done}/{len(cells)} cells finished; time in this invocation {elapsed:.0f} s. "
        "Cells marked unfinished / not started have no result (nothing extrapolated).\n\n"
        "| method | d | k | ε | n_req | smallest n | TV ratio | time ratio | probes |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
    )
    path.write_text(header + "\n".join(_fmt_cell(c) for c in cells) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="few cells, 3 runs (3/3 needed)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--need", type=int, default=9)
    ap.add_argument("--separation", type=float, default=6.0)
    ap.add_argument(
        "--time-budget",
        "--budget-seconds",
        dest="time_budget",
        type=float,
        default=math.inf,
        help="wall-clock cap in seconds; cells still running then are marked unfinished",
    )
    ap.add_argument("--methods", default="kssu,sample-aggregate")
    ap.add_argument(
        "--cells", default="", help="semicolon-separated d,k,epsilon triples, e.g. '10,3,1'"
    )
    ap.add_argument(
        "--seed-from",
        action="append",
        default=[],
        help="earlier result JSON: start one grid step below its smallest n (repeatable)",
    )
    ap.add_argument(
        "--reuse-probes-from",
        action="append",
        default=[],
        help="earlier list-format result JSON run with the same runs/need/separation whose "
        "probes may be reused as they are (repeatable)",
    )
    ap.add_argument(
        "--start",
        action="append",
        default=[],
        help="first n to probe for one cell, as method:d,k,epsilon=n (repeatable); overrides "
        "seeds and n_req, e.g. to start a costly cell from an educated guess",
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
    settings = {"runs": args.runs, "need": args.need, "separation": args.separation}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    state_path, md_path = out / f"{args.name}.json", out / f"{args.name}.md"
    cmd = "python benchmarks/mixture_recovery.py " + " ".join(sys.argv[1:])

    previous: dict[str, Cell] = {}
    if state_path.exists():
        raw = json.loads(state_path.read_text())
        if not isinstance(raw, dict) or raw.get("settings") != settings:
            raise SystemExit(f"{state_path} was made with other settings; use another --name")
        previous = {_key(c.method, c.d, c.k, c.epsilon): c for c in map(_cell_from, raw["cells"])}
    smallest, seeded = _load_seeds(args.seed_from, args.reuse_probes_from, settings)
    chosen: dict[str, int] = {}
    for item in args.start:
        where, n_start = item.split("=")
        method, triple = where.split(":")
        d_s, k_s, e_s = triple.split(",")
        chosen[_key(method, int(d_s), int(k_s), float(e_s))] = int(float(n_start))

    plan: list[tuple[float, Cell]] = []
    for d, k, eps in cells:
        for method in args.methods.split(","):
            key = _key(method, d, k, eps)
            req = mixture_requirements(method, n=10**6, d=d, k=k, epsilon=eps, delta=DELTA).n_needed
            cell = previous.get(key) or Cell(method, d, k, eps, req, status="not started")
            if key in chosen:
                start = GRID[_grid_index(chosen[key])]
            elif key in smallest:  # one grid step below an earlier (fewer-run) smallest n
                start = GRID[max(_grid_index(smallest[key]) - 1, 0)]
            else:
                start = GRID[_grid_index(req)]
            plan.append((start, cell))
    plan.sort(key=lambda sc: sc[0])  # cheapest first, so that most cells finish in the budget
    ordered = [c for _, c in plan]

    t_start = time.perf_counter()
    deadline = t_start + args.time_budget

    def save() -> None:
        doc = {"settings": settings, "command": cmd, "cells": [asdict(c) for c in ordered]}
        tmp = state_path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(doc, indent=1))
        tmp.replace(state_path)
        _write_md(md_path, ordered, settings, time.perf_counter() - t_start, cmd)

    save()
    for start, cell in plan:
        if cell.status == "done":
            continue
        if time.perf_counter() > deadline:
            break
        key = _key(cell.method, cell.d, cell.k, cell.epsilon)
        cached = {**seeded.get(key, {}), **{p.n: p for p in cell.probes}}
        cell.status, cell.note = "running", ""
        print(
            f"{cell.method} d={cell.d} k={cell.k} eps={cell.epsilon:g}: from n={start:,}",
            flush=True,
        )
        search(cell, args.runs, args.need, args.separation, deadline, start, cached, save)
        print(_fmt_cell(cell), flush=True)
    save()


if __name__ == "__main__":
    from privgauss.progress import on_terminal

    with on_terminal():  # a status line naming the current release, on a terminal
        main()
