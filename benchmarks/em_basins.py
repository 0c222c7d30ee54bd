"""Which start finds scikit-learn's basin? A diagnosis of private EM at a huge budget on one
real table (issue 27: at ε = 1e4 some tables ended 0.02–0.11 nat/row below scikit-learn's best
of 5 inits).

For a pydataset table and split seed (the rows and split of ``real_mixtures.py``):

* scikit-learn's ``GaussianMixture(3, n_init=5)`` (the reference) on the training rows, its
  training and held-out mean log-likelihood, and that of the private fit
  (``PrivateGaussianMixture(3, epsilon=1e4, delta=1e-6, random_state=seed)``);
* the private fit's plan (T, exploring steps, runs), the run pick's noisy scores, the frozen
  runs, and each of its starts (captured before the EM steps) run by *non-private* EM in the
  whitened frame: the training log-likelihood after 10, 20, 40, 60, 100, 200, 400 and 1000
  steps (does more running reach a better basin, and when?);
* ten single-init scikit-learn fits (``n_init=1``, tol 1e-6, to convergence) with k-means
  in each of three frames: the raw columns, standardised columns, the whitened frame
  (training / held-out log-likelihood in the data's units, and the EM steps taken): which
  frame's seedings reach which basin.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/em_basins.py Males 0
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Any

import numpy as np
from sklearn.mixture import GaussianMixture

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import corpus  # noqa: E402
import mixture_corpus as mc  # noqa: E402
import real_mixtures as rm  # noqa: E402
from real_corpus import split  # noqa: E402

import privgauss as pg  # noqa: E402
from privgauss.mixture import private_em as pe  # noqa: E402

ITERS = (10, 20, 40, 60, 100, 200, 400, 1000)
K = 3


def _gm(run: tuple[np.ndarray, np.ndarray, np.ndarray], max_iter: int, tol: float
        ) -> GaussianMixture:
    w, m, c = run
    return GaussianMixture(K, weights_init=w / w.sum(), means_init=m,
                           precisions_init=np.linalg.inv(c), tol=tol, max_iter=max_iter,
                           reg_covar=1e-6)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table")
    ap.add_argument("seed", type=int, nargs="?", default=0)
    ap.add_argument("--epsilon", type=float, default=1e4)
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    mc.fresh_tables(2000, 10)
    if a.table not in corpus.TABLES:  # e.g. Males (no longer a fresh table)
        corpus.TABLES[a.table] = corpus.Table(a.table, f"pydataset {a.table}", "", True,
                                              corpus._pydataset(a.table))
    rows, _ = rm.load_rows(a.table)
    train, test, _, _ = split(rows, a.seed, 20000)
    cap: dict[str, Any] = {}
    steps, pick = pe._em_steps, pe.pick_run

    def em_steps(Z, runs, plan, release, n, stops=None, k=None, frozen=None,  # type: ignore
                 **more):
        cap.update(Z=np.asarray(Z), starts=[tuple(np.copy(x) for x in r) for r in runs],
                   plan=plan)
        if frozen is not None:  # (before the wide plan: none)
            more["frozen"] = frozen
        out = steps(Z, runs, plan, release, n, stops, k=k, **more)
        cap["frozen"] = None if frozen is None else [(c + 1, t + 1) for c, t in frozen]
        return out

    def pick_run(scores, plan, release, regret_cap=0.0):  # type: ignore
        cap["scores"] = np.asarray(scores) / train.shape[0]
        return pick(scores, plan, release, regret_cap)

    pe._em_steps, pe.pick_run = em_steps, pick_run  # type: ignore[assignment]
    est = pg.PrivateGaussianMixture(K, epsilon=a.epsilon, delta=1e-6,
                                    random_state=a.seed).fit(train)
    ref = GaussianMixture(K, n_init=5, random_state=a.seed).fit(train)
    print(f"{a.table} seed {a.seed}: n = {train.shape[0]}, d = {train.shape[1]}, "
          f"eps = {a.epsilon:g}")
    print(f"sklearn best of 5: train {ref.score(train):.4f} held out {ref.score(test):.4f}")
    print(f"private fit:       train {est.score(train):.4f} held out {est.score(test):.4f}"
          f"  (gap {ref.score(test) - est.score(test):.4f})")
    plan = cap["plan"]
    print(f"plan: T = {plan.n_steps}, exploring {plan.explore_steps}, runs {plan.n_starts}, "
          f"K' = {plan.start_clusters}; run pick scores/row {np.round(cap.get('scores', []), 4)}"
          f"; frozen (run, step) {cap.get('frozen')}")
    Z = cap["Z"]
    print("non-private EM from each start, training log-likelihood (whitened frame) after "
          f"{', '.join(map(str, ITERS))} steps:")
    for i, run in enumerate(cap["starts"]):
        traj = [_gm(run, it, 0.0).fit(Z).score(Z) for it in ITERS]
        print(f"  start {i + 1}: " + " ".join(f"{v:.3f}" for v in traj))
    mu, sd = train.mean(0), train.std(0)
    w, V = np.linalg.eigh(np.cov(train, rowvar=False))
    frames = {"raw": (np.eye(train.shape[1]), 0.0),
              "standardised": (np.diag(1 / sd), float(np.log(sd).sum())),
              "whitened": ((V / np.sqrt(w)) @ V.T, 0.5 * float(np.log(w).sum()))}
    print("sklearn n_init=1 to convergence (tol 1e-6), seeds 0-9, train/held out (steps):")
    for name, (A, off) in frames.items():
        res = []
        for r in range(10):
            g = GaussianMixture(K, random_state=r, tol=1e-6, max_iter=2000).fit(
                (train - mu) @ A.T)
            res.append((g.score((train - mu) @ A.T) - off, g.score((test - mu) @ A.T) - off,
                        g.n_iter_))
        res.sort(reverse=True)
        print(f"  {name}: " + " ".join(f"{x:.3f}/{y:.3f}({s})" for x, y, s in res))


if __name__ == "__main__":
    main()
