"""Paired, seeded comparison of privgauss's synthetic tables with the cached MST/AIM runs
(issue 28): the tool for telling a change from run-to-run noise.

``synth_peers.py`` fits privgauss once per split with secure noise, so its verdict lines move
between runs of the same code. Here each split (the seeds whose peer runs are in the cache) gets
``--reps`` seeded fits (``random_state = 1000·seed + rep + 7``): the same noise for two versions
of the code, so their medians differ only by what the code changed. Per table and metric it
prints privgauss's median / the best peer's median (the best of MST and AIM, raw or jittered,
per split) and the share of fits at least as good as that split's best peer.

    PYTHONPATH=src python benchmarks/synth_paired.py xclara,wavesurge,macdonell --reps 5

Run it with another checkout's ``src`` on ``PYTHONPATH`` for the "before" column, or sweep a
constant of :mod:`privgauss.synthesis.synthesizer` with ``--set`` (repeatable), e.g.
``--set "FREED_SHARES=(1.0, 0.0, 0.0)"`` (``grid.NAME=...`` for a constant of
:mod:`privgauss.synthesis.grid`). The peers' metrics are computed once per split from
the cache and kept in ``--metrics-cache``.
"""

from __future__ import annotations

import argparse
import ast
import json
import time
import warnings
from pathlib import Path

import numpy as np
import synth_peers as sp

import privgauss as pg

KEYS = ["corr MAE", "1-way TV", "2-way TV", "R² linear", "R² boosted", "loglik", "loglik median"]


def peer_metrics(name: str, seed: int, train: np.ndarray, test: np.ndarray, target: int,
                 runs: Path, store: Path) -> dict[str, dict[str, float]]:
    """The cached peers' metrics on one split (computed from their cached rows once)."""
    path = store / f"{name}-{seed}.json"
    if path.exists():
        return dict(json.loads(path.read_text()))
    out = {}
    cache = runs / f"{name}-s{seed}-r10000-c10"
    for peer, (raw, jit, secs) in sp._peers(train, "x", ["mst", "aim"], cache).items():
        out[peer + " raw"] = sp._metrics(train, test, raw, secs, target)
        out[peer + " jitter"] = sp._metrics(train, test, jit, secs, target)
    path.write_text(json.dumps(out))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", help="comma-separated table names (synth_peers.py's)")
    ap.add_argument("--reps", type=int, default=3, help="seeded privgauss fits per split")
    ap.add_argument("--equal-neighbours", action="store_true",
                    help="privgauss at 2x the peers' rho (as synth_peers.py's flag)")
    ap.add_argument("--epsilon", type=float, default=1.0,
                    help="privgauss's epsilon (delta 1e-6); the peers' cached runs stay at "
                         "epsilon = 1, so with another value only the privgauss columns of two "
                         "checkouts compare")
    ap.add_argument("--cache", default="/tmp/synth_peers_cache", help="the peers' cached runs")
    ap.add_argument("--metrics-cache", default="/tmp/synth_paired_metrics")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="override a constant of privgauss.synthesis.synthesizer (a literal; "
                         "grid.NAME, grid_mixture.NAME, marginals.NAME for those')")
    args = ap.parse_args()
    import importlib

    modules = {}  # a checkout without one of them (a "before" column) still runs
    for mod in ("grid", "grid_mixture", "marginals", "synthesizer"):
        try:
            modules[mod] = importlib.import_module(f"privgauss.synthesis.{mod}")
        except ImportError:
            pass
    for item in args.set:
        key, _, value = item.partition("=")
        where, _, name = key.rpartition(".")
        module = modules.get(where or "synthesizer")
        if module is None or not hasattr(module, name):
            ap.error(f"--set: no constant {key!r} (synthesizer's, or grid.NAME, marginals.NAME)")
        setattr(module, name, ast.literal_eval(value))
        print(f"# {key} = {getattr(module, name)!r}", flush=True)
    runs, store = Path(args.cache), Path(args.metrics_cache)
    store.mkdir(parents=True, exist_ok=True)
    budget = ({"rho": 2 * sp.PEERS_RHO} if args.equal_neighbours
              else {"epsilon": args.epsilon, "delta": 1e-6})
    for name in args.tables.split(","):
        X = sp._load(name)[:, :10]
        target = sp.TARGETS[name]
        seeds = [s for s in range(6)
                 if (runs / f"{name}-s{s}-r10000-c10" / "times.json").exists()]
        ours: dict[str, list[float]] = {k: [] for k in KEYS}
        best: dict[str, list[float]] = {k: [] for k in KEYS}
        wins: dict[str, list[bool]] = {k: [] for k in KEYS}
        seconds = 0.0
        for seed in seeds:
            perm = np.random.default_rng(seed).permutation(len(X))
            cut = int(0.8 * len(X))
            train, test = X[perm[:cut]][:10000], X[perm[cut:]]
            peers = peer_metrics(name, seed, train, test, target, runs, store)
            for rep in range(args.reps):
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    syn = pg.synthesize(train, len(train), random_state=1000 * seed + rep + 7,
                                        **budget)
                seconds += time.perf_counter() - t0
                m = sp._metrics(train, test, np.asarray(syn, dtype=float), 0, target)
                for k in KEYS:
                    larger = sp.METRICS[k][1]
                    b = (max if larger else min)(p[k] for p in peers.values())
                    ours[k].append(m[k])
                    best[k].append(b)
                    wins[k].append(bool(m[k] >= b) if larger else bool(m[k] <= b))
        fits = max(len(ours[KEYS[0]]), 1)
        print(f"{name:10s} " + " ".join(
            f"{k}={np.median(ours[k]):.3f}/{np.median(best[k]):.3f}({np.mean(wins[k]):.0%})"
            for k in KEYS) + f" s/fit={seconds / fits:.2f}", flush=True)


if __name__ == "__main__":
    main()
