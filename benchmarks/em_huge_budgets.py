"""Private EM (k = 3) at huge budgets on the Gaussian corpus (issue 27, session 50).

For each table of ``benchmarks/corpus.py`` (first 20,000 rows): scikit-learn's best
(``GaussianMixture(3, n_init=5, random_state=0)`` on the raw and on the standardised columns,
the latter's log-likelihood mapped back to raw units), then
``PrivateGaussianMixture(3, epsilon=eps, delta=1e-6, random_state=0)`` at each ε and the gap
``reference − est.score(X)`` (training log-likelihood per row; negative: ours higher).

    python benchmarks/em_huge_budgets.py 1e4,1e8,1e12 [table,table,...]
        [--seeds 0,1,2] [--set NAME=VALUE ...]

``--seeds``: the fits' ``random_state``s (noise seeds; default 0); ``--set``: a
``privgauss.mixture.private_em`` constant (an experiment switch, repeatable; instflag).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from corpus import TABLES
from sklearn.mixture import GaussianMixture

import privgauss as pg


def reference(X: np.ndarray, k: int) -> float:
    """scikit-learn's best training log-likelihood per row, raw or standardised columns."""
    s = X.std(0)
    s = np.where(s > 0, s, 1.0)
    m = X.mean(0)
    ref = -np.inf
    for Z, jac in ((X, 0.0), ((X - m) / s, -np.log(s).sum())):
        gm = GaussianMixture(k, n_init=5, random_state=0).fit(Z)
        ref = max(ref, gm.score(Z) + jac)
    return float(ref)


def main() -> None:
    warnings.simplefilter("ignore")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("eps")
    ap.add_argument("tables", nargs="?", default=None)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    args = ap.parse_args()
    from mixture_families import set_constants

    set_constants(args.set)
    epss = [float(e) for e in args.eps.split(",")]
    names = args.tables.split(",") if args.tables else list(TABLES)
    seeds = [int(s) for s in args.seeds.split(",")]
    k = 3
    for name in names:
        X = TABLES[name].load()[:20000]
        ref = reference(X, k)
        for eps in epss:
            for seed in seeds:
                t0 = time.time()
                try:
                    est = pg.PrivateGaussianMixture(k, epsilon=eps, delta=1e-6,
                                                    random_state=seed).fit(X)
                    out = f"gap {ref - est.score(X):8.4f}"
                except Exception as e:  # noqa: BLE001 - a benchmark reports every failure
                    out = f"{type(e).__name__}: {str(e)[:70]}"
                tag = f" seed {seed}" if len(seeds) > 1 else ""
                print(f"{name:18s} {X.shape[0]:6d}x{X.shape[1]:<3d} {eps:8.0e}{tag} {out} "
                      f"{time.time() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    main()
