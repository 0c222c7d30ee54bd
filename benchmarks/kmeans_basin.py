"""Issue 27 (famstart, ``benchmarks/results/em_small_clusters.md``): is k-means' own optimum on
the exact rows (no privacy, no grid) in scikit-learn's best basin? Per generated family
(:mod:`mixture_families`, n = 5e4, the benchmark's rows): the gap (held out, nat/row, to the
best of scikit-learn's n_init = 5 and n_init = 1) of EM started from ``KMeans`` (n_init = 10)
on standardised and on whitened columns, and how many of 10 single-init scikit-learn fits per
init method end within 0.05 of that best. A family whose k-means optimum leads EM to a wrong
basin cannot be fixed by a better DP summary for a k-means start.

    OPENBLAS_NUM_THREADS=1 python benchmarks/kmeans_basin.py 1371,1390,1416,1454
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.cluster import KMeans
from sklearn.mixture import GaussianMixture

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mixture_families as mf  # noqa: E402


def basin_row(seed: int) -> str:
    fam = mf.family(seed)
    rng = np.random.default_rng([fam.seed, 1])  # the rows of mixture_families.run_family
    X, H = fam.sample(50_000, rng), fam.sample(20_000, rng)
    best = max(GaussianMixture(fam.k, n_init=5, random_state=0).fit(X).score(H),
               GaussianMixture(fam.k, random_state=0).fit(X).score(H))
    out = []
    m, sd = X.mean(0), X.std(0)
    whiten = np.linalg.inv(np.linalg.cholesky(np.cov(X.T)))
    for name, F in (("standardised", np.diag(1.0 / sd)), ("whitened", whiten)):
        km = KMeans(fam.k, n_init=10, random_state=0).fit((X - m) @ F.T)
        lab = km.labels_
        means = np.array([X[lab == j].mean(0) for j in range(fam.k)])
        covs = np.array([np.cov(X[lab == j].T) + 1e-6 * np.eye(fam.d) for j in range(fam.k)])
        g = GaussianMixture(fam.k, weights_init=np.bincount(lab, minlength=fam.k) / len(X),
                            means_init=means, precisions_init=np.linalg.inv(covs),
                            max_iter=300).fit(X)
        out.append(f"{name} k-means -> EM {best - g.score(H):.3f}")
    for init in ("kmeans", "k-means++", "random_from_data"):
        gaps = [best - GaussianMixture(fam.k, init_params=init, random_state=r).fit(X).score(H)
                for r in range(10)]
        out.append(f"{init} {sum(g < 0.05 for g in gaps)}/10 right")
    return f"{seed} {fam.describe()} {np.round(fam.weights, 3).tolist()} | " + " | ".join(out)


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    for s in sys.argv[1].split(","):
        print(basin_row(int(s)), flush=True)
