"""Private EM on heavy-tailed clusters as the budget grows (issue 27's consistency): does the fit
converge to scikit-learn's EM on the same rows, whatever the tails?

Two clusters of Student-t rows (``--df`` degrees of freedom, d = 4, weights 0.65 / 0.35,
mixed by a random map), n training rows; ``PrivateGaussianMixture(2)`` at each ε (δ = 1e-6,
seeded noise), optionally with the first 30 rows as public rows. Reported per fit: the gap to
scikit-learn's best of 5 on the training rows (nat/row, > 0 = below it), the same with the
background component removed (``background_weight_`` = 0: the components alone), the released
clipped fraction and the background weight. ``--set FREE_RADIUS_POWER=0`` runs the steps'
radius without its ρ_m^(1/8) bound (any ``private_em`` constant can be set so).

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/em_heavy_limit.py --out benchmarks/results/em_heavy_limit.md
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import warnings

import numpy as np
from sklearn.mixture import GaussianMixture

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mixture_families as mf  # noqa: E402

import privgauss as pg  # noqa: E402


def heavy_rows(n: int, df: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    z = rng.standard_t(df, size=(n, 4))
    lab = rng.random(n) < 0.35
    return np.where(lab[:, None], 2.0 * z + 8.0, z) @ rng.normal(size=(4, 4))


def one(X: np.ndarray, epsilon: float, seed: int, public: bool) -> dict[str, float]:
    best = GaussianMixture(2, n_init=5, random_state=seed).fit(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = pg.PrivateGaussianMixture(2, epsilon=epsilon, delta=1e-6, random_state=seed)
        est.fit(X[30:], public_X=X[:30]) if public else est.fit(X)
    ref, score = float(best.score(X)), float(est.score(X))
    weight = float(est.background_weight_)
    est.background_weight_ = 0.0
    alone = float(est.score(X))
    return {"gap": ref - score, "components": ref - alone,
            "clipped": float(est.clipped_fraction_), "background": weight}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--df", type=float, nargs="+", default=[3.0, 2.5])
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0, 1e4, 1e6, 1e8, 1e12])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--public", action="store_true", help="also with 30 public rows")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--out")
    args = ap.parse_args()
    mf.set_constants(args.set)
    lines = ["| df | public | ε | seed | gap | gap, components alone | clipped | background |",
             "|---|---|---|---|---|---|---|---|"]
    for df in args.df:
        for public in ([False, True] if args.public else [False]):
            for eps in args.eps:
                for seed in range(args.seeds):
                    r = one(heavy_rows(args.n, df, seed), eps, seed, public)
                    lines.append(f"| {df:g} | {'30 rows' if public else ''} | {eps:g} | {seed} "
                                 f"| {r['gap']:.4f} | {r['components']:.4f} "
                                 f"| {r['clipped']:.4f} | {r['background']:.4f} |")
                    print(lines[-1], flush=True)
    text = "\n".join([f"Command: `python benchmarks/em_heavy_limit.py {shlex.join(sys.argv[1:])}`",
                      "", *lines, ""])
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
