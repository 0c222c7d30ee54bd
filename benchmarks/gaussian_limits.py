"""The bound-free Gaussian methods at large budgets on every corpus table: do they converge to
np.mean / np.cov on the same rows? (DESIGN.md's consistency rule; session 50.)

Prints one line per (table, method, ε): the largest mean error in standard deviations and the
largest covariance error in units s_i·s_j against np.mean / np.cov(bias=True), or the
exception. Tables longer than ``--rows`` keep their first rows.

Usage::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/gaussian_limits.py \
        --methods ppe,auto --epsilons 1e2,1e4,1e8,1e12 [--seeds 1] [--tables fair,movies | --fresh]
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from corpus import TABLES  # noqa: E402

import privgauss as pg  # noqa: E402


def errors(g: pg.PrivateGaussian, X: np.ndarray) -> tuple[float, float]:
    """(max mean error in sd, max covariance error in s_i·s_j) against the same rows."""
    mu, C = X.mean(axis=0), np.atleast_2d(np.cov(X.T, bias=True))
    s = np.sqrt(np.diag(C))
    s = np.where(s > 0, s, 1.0)  # a constant column: absolute errors
    return (float(np.max(np.abs(g.mean_ - mu) / s)),
            float(np.max(np.abs(g.covariance_ - C) / np.outer(s, s))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--methods", default="auto,ppe")
    ap.add_argument("--epsilons", default="1e4,1e8,1e12")
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--rows", type=int, default=60_000)
    ap.add_argument("--tables", default="", help="comma-separated names (default: all)")
    ap.add_argument("--fresh", action="store_true",
                    help="the mixture corpus's fresh pydataset tables (>= 2000 rows, <= 10 "
                    "columns) instead of corpus.py's")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    if args.fresh:
        import mixture_corpus

        names = mixture_corpus.fresh_tables(2000, 10)
    else:
        names = args.tables.split(",") if args.tables else list(TABLES)
    for name in names:
        X = TABLES[name].load()[: args.rows]
        for method in args.methods.split(","):
            for eps in map(float, args.epsilons.split(",")):
                cells = []
                for seed in range(args.seeds):
                    try:
                        g = pg.PrivateGaussian(method=method, epsilon=eps, delta=args.delta,
                                               random_state=seed).fit(X)
                        me, ce = errors(g, X)
                        cells.append(f"{me:.2g} / {ce:.2g}")
                    except Exception as exc:  # a refusal or a failure is a result here
                        cells.append(f"{type(exc).__name__}: {str(exc)[:60]}")
                print(f"{name:18s} {X.shape[0]:6d}x{X.shape[1]:<3d} {method:10s} {eps:8.0e}  "
                      + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
