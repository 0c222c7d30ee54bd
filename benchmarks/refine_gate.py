"""Where the refining steps' smaller radius (``private_em.REFINE_TAIL``) helps on the real-table
corpus (issue 27, famgate): private EM's gap to sklearn's best of 5 per split under four plan
variants, on chosen tables of ``mixture_corpus.py`` (held out: report, do not tune on them).

* ``main``: every step at least r₀ (``REFINE_TAIL`` = ``CLIP_TAIL``);
* ``ungated``: famshape — every plan's refining steps down to √d (k' sized with it);
* ``gate``: this branch — only an over-parameterised plan's (k' sized with it);
* ``kprime``: the gate's k', its refining steps at r₀.

The splits are ``real_corpus.split``'s (seed s), the fits ``PrivateGaussianMixture(k)`` at
ε = 1, δ = 1e-6, noise seed s, with and without the 1 % public rows.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/refine_gate.py \\
        --tables Benefits turnout immi1 --splits 4
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mixture_corpus as mc  # noqa: E402
import real_mixtures as rm  # noqa: E402
from real_corpus import DELTA, split  # noqa: E402

import privgauss as pg  # noqa: E402
from privgauss.exceptions import InvalidDataError  # noqa: E402
from privgauss.mixture import private_em as pe  # noqa: E402
from privgauss.privacy import ApproxDP  # noqa: E402

GATED = pe._tail
VARIANTS = ("main", "ungated", "gate", "kprime")


def _ungated(plan: pe.EMPlan, t: int, refine: float = pe.CLIP_TAIL) -> float:
    return pe.REFINE_TAIL if plan.refining(t) else pe.CLIP_TAIL


def _kprime(plan: pe.EMPlan, t: int, refine: float = pe.CLIP_TAIL) -> float:
    return pe.CLIP_TAIL if plan.reduce_at is not None else GATED(plan, t, refine)


def _use(variant: str) -> None:
    tails: dict[str, Callable[..., float]] = {"main": GATED, "ungated": _ungated,
                                              "gate": GATED, "kprime": _kprime}
    pe.REFINE_TAIL = pe.CLIP_TAIL if variant == "main" else 0.0
    pe._tail = tails[variant]  # type: ignore[assignment]
    pe._step_radius.cache_clear()


def run(name: str, splits: int, k: int) -> list[str]:
    rows, _ = rm.load_rows(name)
    out = []
    for pub in (False, True):
        gaps: dict[str, list[float]] = {v: [] for v in VARIANTS}
        plans: dict[str, Any] = {}
        for s in range(splits):
            train, test, private, public = split(rows, s, 20000)
            X, P = (private, public) if pub else (train, None)
            ref = float(rm._sklearn(train, k, s).score(test))
            for v in VARIANTS:
                _use(v)
                plan = pe.em_plan(X.shape[0], X.shape[1], k, ApproxDP(1.0, DELTA),
                                  n_public=0 if P is None else P.shape[0])
                plans[v] = (plan.components, round(plan.step_radii[-1], 2))
                est = pg.PrivateGaussianMixture(k, epsilon=1.0, delta=DELTA, random_state=s)
                try:
                    est.fit(X, public_X=P)
                except InvalidDataError:
                    break
                gaps[v].append(ref - float(est.score(test)))
        _use("gate")
        label = "1 % public" if pub else "ε = 1"
        if not gaps["main"]:
            out.append(f"| {name} | {label} | refused | | | | |")
            continue
        cells = [f"{np.mean(gaps[v]):.3f} ({' '.join(f'{g:.3f}' for g in gaps[v])})"
                 for v in VARIANTS]
        kp = " / ".join(f"{plans[v][0]}, {plans[v][1]}" for v in VARIANTS)
        out.append(f"| {name} | {label} | {kp} | " + " | ".join(cells) + " |")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", nargs="+", required=True)
    ap.add_argument("--splits", type=int, default=4)
    ap.add_argument("--k", type=int, default=3)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    mc.fresh_tables(2000, 10)
    print("| table | setting | k', last radius (main / ungated / gate / kprime) | "
          + " | ".join(f"{v}: mean gap (per split)" for v in VARIANTS) + " |")
    print("|---|---|---|" + "---|" * len(VARIANTS))
    for name in args.tables:
        for line in run(name, args.splits, args.k):
            print(line, flush=True)


if __name__ == "__main__":
    main()
