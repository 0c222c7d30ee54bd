"""Paired arms of ``privgauss.synthesis`` constants on the peers' tables' splits, without the
peers (issue 28; experiments only): each arm refits the same seeded draws
(``random_state = 1000·split + draw``, ``synth_gaps._split``'s splits) with its constants set,
so that the arms differ only by the rule under test, and ``synth_peers``'s metrics are
compared arm by arm — on splits whose peers' rows are not cached too (fresh splits, other
budgets). A draw that fails in any arm (``EstimationFailed``) is left out of all arms.

Per metric: the median over splits of each arm's split means, with the splits (and, with
``--per-fit``, the fits) on which the arm is strictly better / worse than the first arm;
``--per-fit`` also prints each fit's loglik, linear and boosted R² and the synthetic
maxima in training standard deviations.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/synth_arms.py \\
        --tables forbes2000 --seeds 3,4,5,6,7,8 --draws 4 --epsilon 1 \\
        --arm "main:marginals.TAIL_DECAY=0.0" --arm "branch:"
"""

from __future__ import annotations

import argparse
import ast
import importlib
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth_gaps import _split  # noqa: E402
from synth_peers import METRICS, TARGETS, _metrics  # noqa: E402

import privgauss as pg  # noqa: E402


def _parse_arm(text: str) -> tuple[str, list[tuple[object, str, object]]]:
    """``NAME:module.CONST=value,module.CONST=value`` (nothing after the colon: defaults); a
    module is one of ``privgauss.synthesis`` (``marginals``) or a dotted path under
    ``privgauss`` (``mixture.private_em``)."""
    name, _, rest = text.partition(":")
    out = []
    for item in filter(None, rest.split(",")):
        target, value = item.split("=", 1)
        mod, const = target.rsplit(".", 1)
        # ``marginals.X``: privgauss.synthesis's; ``mixture.private_em.X``: privgauss's
        module = importlib.import_module(f"privgauss.{mod}" if "." in mod
                                         else f"privgauss.synthesis.{mod}")
        if not hasattr(module, const):
            raise SystemExit(f"no constant {target}")
        out.append((module, const, ast.literal_eval(value)))
    return name, out


def run(name: str, seeds: list[int], draws: int, eps: float,
        arms: list[tuple[str, list[tuple[object, str, object]]]], per_fit: bool) -> None:
    consts = {(m, c) for _, sets in arms for m, c, _ in sets}
    defaults = {(m, c): getattr(m, c) for m, c in consts}
    target = TARGETS[name]
    split_means: list[list[dict[str, float]]] = [[] for _ in arms]
    fits: list[list[dict[str, float]]] = [[] for _ in arms]
    for seed in seeds:
        train, test = _split(name, seed, 10000, 10)
        mu, sd = train.mean(0), train.std(0) + 1e-9
        per: list[list[dict[str, float]]] = [[] for _ in arms]
        for r in range(draws):
            got, maxima = [], []
            for _, sets in arms:
                for (m, c), v in defaults.items():
                    setattr(m, c, v)
                for m, c, v in sets:
                    setattr(m, c, v)
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        syn = np.asarray(pg.synthesize(train, len(train), epsilon=eps,
                                                       delta=1e-6,
                                                       random_state=1000 * seed + r), float)
                except pg.EstimationFailed:
                    got.append(None)
                    continue
                got.append(_metrics(train, test, syn, 0.0, target))
                maxima.append(" ".join(f"{v:+.1f}" for v in (syn.max(0) - mu) / sd))
            for (m, c), v in defaults.items():
                setattr(m, c, v)
            if any(g is None for g in got):
                print(f"split {seed} draw {r}: failed in an arm, left out", flush=True)
                continue
            for i, g in enumerate(got):
                per[i].append(g)
                fits[i].append(g)
            if per_fit:
                print(f"split {seed} draw {r}: " + " | ".join(
                    f"{arms[i][0]}: loglik {g['loglik']:.2f} R² lin {g['R² linear']:.3f} "
                    f"boosted {g['R² boosted']:.3f} max [{maxima[i]}]"
                    for i, g in enumerate(got)), flush=True)
        for i in range(len(arms)):
            if per[i]:
                split_means[i].append({k: float(np.mean([g[k] for g in per[i]]))
                                       for k in METRICS})
    print(f"\n{name}, ε = {eps:g}, splits {seeds}, {draws} draws; arms "
          + ", ".join(a for a, _ in arms))
    print("| table | ε | metric | " + " | ".join(a for a, _ in arms) + " |")
    print("|---|---|---|" + "---|" * len(arms))
    for k, (fmt, larger) in METRICS.items():
        if k == "s":
            continue
        base = np.array([x[k] for x in split_means[0]])
        base_f = np.array([x[k] for x in fits[0]])
        cells = []
        for i in range(len(arms)):
            a = np.array([x[k] for x in split_means[i]])
            a_f = np.array([x[k] for x in fits[i]])
            sign = 1.0 if larger else -1.0
            cell = format(float(np.median(a)), fmt)
            if i:
                cell += (f" (splits {int(np.sum(sign * (a - base) > 1e-12))}+/"
                         f"{int(np.sum(sign * (a - base) < -1e-12))}-")
                if per_fit:
                    cell += (f", fits {int(np.sum(sign * (a_f - base_f) > 1e-12))}+/"
                             f"{int(np.sum(sign * (a_f - base_f) < -1e-12))}-, "
                             f"mean of fits {float(np.mean(base_f)):{fmt}} → "
                             f"{float(np.mean(a_f)):{fmt}}")
                cell += ")"
            cells.append(cell)
        print(f"| {name} | {eps:g} | {k} | " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", default="forbes2000")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--draws", type=int, default=4)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--arm", action="append", required=True, metavar="NAME:MOD.CONST=V,...",
                    help="an arm: its name and the constants it sets (the first arm is the "
                         "baseline the others are compared with)")
    ap.add_argument("--per-fit", action="store_true")
    args = ap.parse_args()
    arms = [_parse_arm(a) for a in args.arm]
    seeds = [int(s) for s in args.seeds.split(",")]
    for name in args.tables.split(","):
        run(name, seeds, args.draws, args.epsilon, arms, args.per_fit)


if __name__ == "__main__":
    main()
