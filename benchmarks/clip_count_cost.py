"""Accuracy cost of the clipped-count diagnostic on Gaussian data (issue 17).

Every clipping method of ``PrivateGaussian`` gives a share of its budget to the DP count of
rows outside its final clipping ball (2 % of the budget; the bound-free (ε, δ) methods 0.5 % of
their CoinPress refinement's ρ). This script fits the same draws with the same seeds twice —
with the diagnostic (the library's behaviour) and without it (the algorithm given the whole
budget, no count: the behaviour before the diagnostic; the algorithm draws its noise before
the count, so both arms see the same noise stream) — and reports the ratio of the mean
covariance and mean errors, in both regimes (ρ = 0.5 and ε = 1, δ = 1e-6).

    PYTHONPATH=src python benchmarks/clip_count_cost.py [--seeds 20]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

import privgauss as pg
from privgauss.estimators import gaussian as est_gaussian
from privgauss.estimators.gaussian import PrivateGaussian


def _data(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(10_000 + seed)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    cov = (Q * np.logspace(0, 2, d)) @ Q.T  # condition 100
    mu = rng.normal(size=d)
    return rng.multivariate_normal(mu, cov, size=n + d + 1), mu, cov


CONFIGS = [
    ("coinpress rho=0.5 n=3000", 3000, dict(rho=0.5, mean_bound=10.0, cov_bounds=(0.5, 200.0)),
     False),
    ("coinpress eps=1 n=20000", 20000,
     dict(epsilon=1.0, delta=1e-6, mean_bound=10.0, cov_bounds=(0.5, 200.0)), False),
    ("histogram eps=1 n=20000", 20000, dict(epsilon=1.0, delta=1e-6), False),
    ("public rho=0.5 n=10000", 10000, dict(rho=0.5), True),
]


def run(seeds: int, d: int = 10, only: str = "") -> None:
    warnings.simplefilter("ignore")
    original = PrivateGaussian.__dict__["_count_plan"]
    refine = est_gaussian._SHARE_FROM_REFINEMENT
    print(f"| config (d={d}) | arm | mean cov error | mean mean error | failures |")
    print("|---|---|---|---|---|")
    for name, n, kw, public in CONFIGS:
        if only not in name:
            continue
        res = {}
        for arm in ("without", "with"):
            if arm == "without":
                PrivateGaussian._count_plan = staticmethod(lambda b, m: (b, None))  # type: ignore[method-assign]
                est_gaussian._SHARE_FROM_REFINEMENT = ()
            else:
                PrivateGaussian._count_plan = original  # type: ignore[method-assign]
                est_gaussian._SHARE_FROM_REFINEMENT = refine
            ce, me, fails = [], [], 0
            for s in range(seeds):
                Z, mu, cov = _data(n, d, s)
                X, P = Z[:n], (Z[n:] if public else None)
                try:
                    g = pg.PrivateGaussian(random_state=s, **kw).fit(X, public_X=P)
                except pg.EstimationFailed:
                    fails += 1
                    continue
                ce.append(pg.metrics.covariance_error(g.covariance_, cov))
                me.append(pg.metrics.mean_error(g.mean_, mu))
            res[arm] = (float(np.mean(ce)), float(np.mean(me)))
            print(f"| {name} | {arm} | {res[arm][0]:.4f} | {res[arm][1]:.4f} | {fails} |")
        PrivateGaussian._count_plan = original  # type: ignore[method-assign]
        est_gaussian._SHARE_FROM_REFINEMENT = refine
        print(f"| {name} | **ratio** | **{res['with'][0] / res['without'][0]:.3f}** | "
              f"**{res['with'][1] / res['without'][1]:.3f}** | |")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--only", default="", help="run the configs whose name contains this")
    a = ap.parse_args()
    run(a.seeds, only=a.only)
