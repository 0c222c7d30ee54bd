"""Does a mixture fit run at the n ``privgauss requirements mixture`` states? (issue 18)

For ``kssu`` (the no-public-data learner with a practical requirement), fits ``--runs``
mixtures of ``--factor`` × the stated n (``privgauss.datasets.make_mixture``, equal weights,
spherical components, separation ratio 5 — the separation the method is validated at) with
``PrivateGaussianMixture(k, method="kssu", epsilon, delta=1e-6)`` and counts the fits that
succeed (no ``EstimationFailed``, no refusal), printing the failing steps. Example:

    PYTHONPATH=src python benchmarks/mixture_requirements.py --factor 1.2 --runs 20
    PYTHONPATH=src python benchmarks/mixture_requirements.py --case 2,2,1 --runs 10
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from collections import Counter

import privgauss as pg
from privgauss import methods
from privgauss.datasets import make_mixture
from privgauss.methods import Facts

DELTA = 1e-6
# (d, k, epsilon)
CASES = [(2, 2, 1.0), (2, 2, 2.0), (5, 2, 1.0), (2, 3, 1.0), (10, 3, 5.0)]


def stated_n(method: str, d: int, k: int, eps: float) -> float:
    facts = Facts("mixture", pg.ApproxDP(eps, DELTA), 10**6, d, k=k, n_public=None)
    return float(methods.requirements("mixture", method, facts).n_needed)


def run_case(method: str, d: int, k: int, eps: float, factor: float, runs: int,
             separation: float) -> tuple[float, int, int, Counter, float]:
    """(stated n, fitted n, successes, failing steps, seconds per fit) of one case."""
    need = stated_n(method, d, k, eps)
    n = math.ceil(factor * need)
    ok, steps = 0, Counter()
    t0 = time.perf_counter()
    for seed in range(runs):
        mix = make_mixture(n, k, d, separation=separation, random_state=2000 + seed)
        est = pg.PrivateGaussianMixture(k, method=method, epsilon=eps, delta=DELTA,
                                        random_state=seed)
        try:
            est.fit(mix.X)
            ok += 1
        except pg.EstimationFailed as exc:
            steps[str(getattr(exc, "step", "?"))] += 1
        except ValueError as exc:  # a refusal before spending
            steps["refused: " + str(exc)[:60]] += 1
    return need, n, ok, steps, (time.perf_counter() - t0) / runs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--factor", type=float, default=1.2)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--separation", type=float, default=5.0)
    ap.add_argument("--method", default="kssu")
    ap.add_argument("--case", action="append", default=None,
                    help="d,k,epsilon (repeatable; default: the built-in cases)")
    args = ap.parse_args()
    cases = ([tuple(float(x) for x in c.split(",")) for c in args.case] if args.case
             else CASES)
    warnings.simplefilter("ignore")
    print("| method | d | k | ε | stated n | fitted n | succeeded | failing steps | s/fit |")
    print("|---|---|---|---|---|---|---|---|---|")
    for d, k, eps in cases:
        need, n, ok, steps, sec = run_case(args.method, int(d), int(k), float(eps),
                                           args.factor, args.runs, args.separation)
        fails = ", ".join(f"{s} ×{c}" for s, c in steps.most_common()) or "-"
        print(f"| {args.method} | {int(d)} | {int(k)} | {eps:g} | {need:.0f} | {n} | "
              f"{ok}/{args.runs} | {fails} | {sec:.1f} |", flush=True)


if __name__ == "__main__":
    from privgauss.progress import on_terminal

    with on_terminal():  # a status line naming the current release, on a terminal
        main()
