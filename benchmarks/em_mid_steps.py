"""Private EM's step count at mid budgets (issue 27's consistency): the held-out gap to
scikit-learn's best of 5 on corpus tables with 1 % public rows, at ε = 1, 10 and 100, for
variants of ``privgauss.mixture.private_em``'s constants (experiment switches, not options):
``STEP_TOL`` (the early steps' noise per row of a component below which T grows past the
noisy default), ``SUMMARY_NOISE`` and ``WIDE_NOISE`` (the noise below which the summary start
and the wide exploration are used), or any other.

Each cell: 2 splits (``real_corpus.split`` seeds 0, 1) × 2 noise seeds, k = 3, δ = 1e-6; T is
the plan's step count on split 0. gap = sklearn's held-out log-likelihood − ours (nat/row).

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/em_mid_steps.py \\
        --tables SLID,Star --eps 1,10,100 --variant STEP_TOL=0.01 --variant STEP_TOL=0.07
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mixture_corpus as mc  # noqa: E402
import real_mixtures as rm  # noqa: E402
from real_corpus import split  # noqa: E402

import privgauss as pg  # noqa: E402
from privgauss.mixture import private_em as pe  # noqa: E402
from privgauss.privacy import ApproxDP  # noqa: E402


def cell(splits: list, refs: list, eps: float) -> list[float]:
    gaps = []
    for sp, (_, test, private, public) in enumerate(splits):
        for seed in range(2):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = pg.PrivateGaussianMixture(3, epsilon=eps, delta=1e-6, random_state=seed,
                                                method="em").fit(private, public_X=public)
            gaps.append(refs[sp]["sklearn"] - float(est.score(test)))
    return gaps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", required=True, help="comma-separated corpus table names")
    ap.add_argument("--eps", default="1,10,100")
    ap.add_argument("--variant", action="append", required=True, metavar="NAME=V[,NAME=V]",
                    help="one column: private_em constants set to these values (repeatable)")
    args = ap.parse_args()
    mc.fresh_tables(2000, 10)
    variants = [{kv.split("=")[0]: float(kv.split("=")[1]) for kv in v.split(",")}
                for v in args.variant]
    saved = {name: getattr(pe, name) for v in variants for name in v}
    print("| table | ε | " + " | ".join(
        f"{', '.join(f'{k} {x:g}' for k, x in v.items())}: T, median gap, mean gap"
        for v in variants) + " |")
    print("|---|---|" + "---|" * len(variants))
    for name in args.tables.split(","):
        rows, _ = rm.load_rows(name)
        splits = [split(rows, sp, 20_000) for sp in range(2)]
        refs = [rm.references(tr, te, pu, 3, sp) for sp, (tr, te, _, pu) in enumerate(splits)]
        for eps in (float(e) for e in args.eps.split(",")):
            cells = []
            for v in variants:
                for const, value in {**saved, **v}.items():
                    setattr(pe, const, value)
                gaps = cell(splits, refs, eps)
                T = pe.em_plan(splits[0][2].shape[0], rows.shape[1], 3, ApproxDP(eps, 1e-6),
                               n_public=splits[0][3].shape[0]).n_steps
                cells.append(f"{T}, {np.median(gaps):.3f}, {np.mean(gaps):.3f}")
            print(f"| {name} | {eps:g} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
