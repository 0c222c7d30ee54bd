"""Where a small table's 1-way TV and correlation gaps to MST/AIM come from, and what a
budget split measured in paired seeded draws changes (issue 28, diagnosis; nothing here is a
DP release).

For each table, split (``synth_gaps.py``'s splits, the peers' cached rows) and seeded draw
(``random_state = 1000·split + draw``, the same seeds for every variant: paired), privgauss's
rows S are scored with ``synth_peers.py``'s cheap metrics (corr MAE, 1-way TV, 2-way TV; R²
boosted with ``--r2``) against the real held-out rows, and, with ``--swaps``, also

* *exact marginals*: S's columns replaced, in S's rank order, by the training columns'
  empirical quantiles (privgauss's dependence, the data's marginals);
* *exact dependence*: the training rows' columns replaced, in their rank order, by S's
  quantiles (the data's dependence, privgauss's marginals);
* *train itself*: the training rows (the sampling floor).

The peers' cached rows (MST, AIM; raw and jittered as ``synth_peers.py``) give the best peer
per split. Variants (``--variant NAME:MODULE.CONST=VALUE;...``, constants of
``privgauss.synthesis``, set before the variant's fits and restored after) run on the same
seeds as the baseline. Each cell: the median over splits of the mean over draws, and in
brackets the median over splits of the gap to the split's best peer (> 0: privgauss better);
below, each variant's mean paired difference from the baseline over the split × draw pairs
with its standard error (the split's noise cancels there).
``--per-split`` also prints the per-split means.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/synth_split.py \\
        --tables wavesurge,xclara --seeds 0,1,2 --draws 6 --swaps \\
        --variant "bins+:synthesizer.NARROW_SHARE_STEP=0.07"
"""

from __future__ import annotations

import argparse
import ast
import importlib
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth_gaps import _split, split_args  # noqa: E402
from synth_peers import TARGETS, _corr_mae, _r2, _tv_1way, _tv_2way, peer_rows  # noqa: E402
from synth_swaps import _remap  # noqa: E402

#: metric -> larger is better
CHEAP = {"corr MAE": False, "1-way TV": False, "2-way TV": False}


def _scores(test: np.ndarray, syn: np.ndarray, target: int, r2: bool) -> dict[str, float]:
    out = {"corr MAE": _corr_mae(test, syn),
           "1-way TV": float(np.mean([_tv_1way(test[:, j], syn[:, j])
                                      for j in range(test.shape[1])])),
           "2-way TV": _tv_2way(test, syn)}
    if r2:
        out["R² boosted"] = _r2(test, syn, target)[1]
    return out


def _peers(name: str, seed: int, train: np.ndarray, test: np.ndarray, target: int,
           r2: bool, cache: str, max_rows: int, max_cols: int) -> dict[str, dict] | None:
    rows = peer_rows(train, Path(cache) / f"{name}-s{seed}-r{max_rows}-c{max_cols}",
                     ["mst", "aim"])
    if rows is None:
        return None
    out = {}
    for p, (raw, jit) in rows.items():
        out[f"{p} raw"] = _scores(test, raw, target, r2)
        out[f"{p} jitter"] = _scores(test, jit, target, r2)
    return out


def _parse_variant(text: str) -> tuple[str, list[tuple[Any, str, Any]]]:
    label, _, body = text.partition(":")
    sets = []
    for item in filter(None, (s.strip() for s in body.split(";"))):
        target, value = item.split("=", 1)
        code = target.endswith(":")  # MODULE.NAME:=EXPR: a Python expression (a lambda)
        mod, const = target.rstrip(":").rsplit(".", 1)
        module = importlib.import_module(f"privgauss.synthesis.{mod}")
        if not hasattr(module, const):
            raise SystemExit(f"no constant {target}")
        sets.append((module, const, eval(value) if code else ast.literal_eval(value)))
    return label, sets


def _fit_rows(train: np.ndarray, seed: int, sets: list[tuple[Any, str, Any]],
              epsilon: float = 1.0) -> np.ndarray:
    import privgauss as pg

    old = [(m, c, getattr(m, c)) for m, c, _ in sets]
    try:
        for m, c, v in sets:
            setattr(m, c, v)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.asarray(pg.synthesize(train, len(train), epsilon=epsilon, delta=1e-6,
                                            random_state=seed), float)
    finally:
        for m, c, v in old:
            setattr(m, c, v)


def run(name: str, args: argparse.Namespace,
        variants: list[tuple[str, list[tuple[Any, str, Any]]]]) -> None:
    target = TARGETS[name]
    keys = list(CHEAP) + (["R² boosted"] if args.r2 else [])
    larger = {**CHEAP, "R² boosted": True}
    rows: dict[str, list[dict[str, float]]] = {}
    best: list[dict[str, float]] = []
    paired: dict[str, list[dict[str, float]]] = {}  # per (split, draw): variant − baseline
    for s in [int(x) for x in args.seeds.split(",")]:
        train, test = _split(name, s, args.max_rows, args.max_cols)
        peers = _peers(name, s, train, test, target, args.r2, args.cache, args.max_rows,
                       args.max_cols)
        if peers is None:
            continue
        best.append({k: (max if larger[k] else min)(p[k] for p in peers.values())
                     for k in keys})
        draws_of: dict[str, list[dict[str, float]]] = {}
        for label, sets in variants:
            per: dict[str, list[dict[str, float]]] = {}
            for r in range(args.draws):
                syn = _fit_rows(train, 1000 * s + r, sets, args.epsilon)
                per.setdefault(label, []).append(_scores(test, syn, target, args.r2))
                if args.swaps and label == variants[0][0]:
                    per.setdefault(f"{label}, exact marginals", []).append(
                        _scores(test, _remap(train, syn), target, args.r2))
                    per.setdefault(f"{label}, exact dependence", []).append(
                        _scores(test, _remap(syn, train), target, args.r2))
            for k, ms in per.items():
                rows.setdefault(k, []).append({m: float(np.mean([x[m] for x in ms]))
                                               for m in keys})
            if label != variants[0][0]:
                base = draws_of[variants[0][0]]
                paired.setdefault(label, []).extend(
                    {m: x[m] - b[m] for m in keys} for x, b in zip(per[label], base,
                                                                   strict=True))
            draws_of[label] = per[label]
        if args.swaps:
            rows.setdefault("train itself (floor)", []).append(
                _scores(test, train, target, args.r2))
        for k, m in peers.items():
            rows.setdefault(k, []).append(m)
    print(f"\n{name}, splits {args.seeds}, {args.draws} draws\n")
    print("| variant | " + " | ".join(keys) + " |")
    print("|---|" + "---|" * len(keys))
    for v, rs in rows.items():
        cells = []
        for k in keys:
            a = np.array([r[k] for r in rs])
            b = np.array([x[k] for x in best])
            gap = (a - b) if larger[k] else (b - a)
            cells.append(f"{float(np.median(a)):.4f} ({float(np.median(gap)):+.4f})")
        print(f"| {v} | " + " | ".join(cells) + " |")
        if args.per_split:
            print("|  per split | " + " | ".join(
                " ".join(f"{r[k]:.4f}" for r in rs) for k in keys) + " |")
    if paired:
        print(f"\nPaired with {variants[0][0]} (same split and seed): mean difference ± its "
              "standard error over the split × draw pairs [their median: R² boosted has "
              "outlying draws] (> 0: the variant's metric larger)\n")
        print("| variant | " + " | ".join(keys) + " |")
        print("|---|" + "---|" * len(keys))
        for v, ds in paired.items():
            cells = []
            for k in keys:
                x = np.array([p[k] for p in ds])
                se = float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")
                cells.append(f"{float(x.mean()):+.4f} ± {se:.4f} [{float(np.median(x)):+.4f}]")
            print(f"| {v} | " + " | ".join(cells) + " |")
    sys.stdout.flush()


def main() -> None:
    ap = split_args(__doc__, "wavesurge,xclara", "0,1,2", draws=6)
    ap.add_argument("--swaps", action="store_true", help="also score the oracle swaps")
    ap.add_argument("--r2", action="store_true", help="also score R² boosted")
    ap.add_argument("--per-split", action="store_true")
    ap.add_argument("--epsilon", type=float, default=1.0,
                    help="privgauss's ε (δ = 1e-6; the peers' rows stay at ε = 1)")
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME:MODULE.CONST=VALUE;... (constants of privgauss.synthesis; "
                         "MODULE.NAME:=EXPR sets an evaluated expression, e.g. a lambda)")
    args = ap.parse_args()
    variants = [("privgauss", [])] + [_parse_variant(v) for v in args.variant]
    for name in args.tables.split(","):
        run(name, args, variants)


if __name__ == "__main__":
    main()
