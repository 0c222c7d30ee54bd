"""Issue 27 (explore): a longer exploration before a plain plan's run pick at ε = 1?
(``benchmarks/results/em_small_clusters.md``, "explore"; a probe of two plan switches.)

Before this change a plain (no k', not wide) three-run plan explored ⌊T/3⌋ of its T steps
before the DP run pick. Variants ``divD-exE`` set ``private_em.PLAIN_EXPLORE_DIV`` = D and
``PLAIN_EXTRA_STEPS`` = E (``div3-ex0``: the plan before the change; ``div1.5-ex8``: the
default since): the exploring steps are ⌊T'/D⌋ of T' = T + E, the steps' ρ re-split over
the T' steps by the plan's own rule (the plan still sums to the budget). Only the plan
changes, and only where :func:`private_em._explore_longer` applies (its noise gate and
T < ``MAX_STEPS``; the probe measured here ran before both gates: plans at T = 60 got
T + E too); k' and wide plans are untouched.

    python benchmarks/em_explore.py --seeds 2516,2568,2533,1416 --noise 0,1,2 \\
        --variants div3-ex0,div2-ex0,div3-ex4,div2-ex4
    python benchmarks/em_explore.py --seeds 3900-3959 --low-d --variants div3-ex0,div2-ex0

``--low-d``: :func:`mixture_families.family` with d = 4 + seed % 3 (as ``em_look_ahead``).
``--plain-only``: skip fits whose plan at ε = 1 is not plain (k' or wide: every variant is
main there). Gap = sklearn's best of 5 minus ours (held out), "wrong" > 0.05.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mixture_families as mf  # noqa: E402

import privgauss as pg  # noqa: E402
from privgauss.mixture import private_em as pe  # noqa: E402
from privgauss.privacy import ApproxDP  # noqa: E402

N = 50_000
BUDGET = {"epsilon": 1.0, "delta": 1e-6}


def set_variant(v: str) -> None:
    div, ex = v.split("-")
    pe.PLAIN_EXPLORE_DIV, pe.PLAIN_EXTRA_STEPS = float(div[3:]), int(ex[2:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", required=True, help="comma-separated, or a range A-B")
    ap.add_argument("--noise", default="0", help="comma-separated noise seeds")
    ap.add_argument("--variants", default="div3-ex0,div2-ex0")
    ap.add_argument("--low-d", action="store_true", help="d = D + seed % 3 (D: --d-base)")
    ap.add_argument("--d-base", type=int, default=4)
    ap.add_argument("--n", type=int, default=N)
    ap.add_argument("--plain-only", action="store_true")
    ap.add_argument("--sklearn-cache", default=None, metavar="JSON")
    args = ap.parse_args()
    seeds = mf.parse_seeds(args.seeds)
    variants = args.variants.split(",")
    saved = (pe.PLAIN_EXPLORE_DIV, pe.PLAIN_EXTRA_STEPS)
    gaps = []
    for s in seeds:
        fam = mf.family(s, d=args.d_base + s % 3) if args.low_d else mf.family(s)
        plans = []
        for v in variants:
            set_variant(v)
            p = pe.em_plan(args.n, fam.d, fam.k, ApproxDP(**BUDGET))
            plans.append(f"{p.n_steps}/{p.explore_steps}")
        pe.PLAIN_EXPLORE_DIV, pe.PLAIN_EXTRA_STEPS = saved
        plain = p.components == 0 and p.n_starts == pe.N_STARTS
        if args.plain_only and not plain:
            print(f"{s} {fam.describe()}: not plain (k' {p.components}), skipped", flush=True)
            continue
        rng = np.random.default_rng([fam.seed, 1])
        X, H = fam.sample(args.n, rng), fam.sample(20_000, rng)
        best = mf._reference(fam, args.n, X, H, args.sklearn_cache)["best"]
        for q in [int(x) for x in args.noise.split(",")]:
            row, secs = [], []
            for v in variants:
                set_variant(v)
                t0 = time.perf_counter()
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        est = pg.PrivateGaussianMixture(fam.k, method="em", random_state=q,
                                                        **BUDGET).fit(X)
                finally:
                    pe.PLAIN_EXPLORE_DIV, pe.PLAIN_EXTRA_STEPS = saved
                secs.append(time.perf_counter() - t0)
                row.append(best - est.score(H))
            gaps.append(row)
            print(f"{s} {fam.describe()} noise {q} (T/explore {' '.join(plans)}): " + "; ".join(
                f"{v} {g:.4f}" for v, g in zip(variants, row, strict=True))
                + f"  [{' '.join(f'{t:.0f}s' for t in secs)}]", flush=True)
    mf.print_variants(gaps, variants)


if __name__ == "__main__":
    main()
