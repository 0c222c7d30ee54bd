"""Private EM (``PrivateGaussianMixture(method="em")``) against scikit-learn's non-private
``GaussianMixture`` on the same training rows, scored by held-out mean log-likelihood (issue 18).

gap = sklearn's held-out mean log-likelihood minus ours (nat/row; 0 is as good as non-private).
For scale, the gap of a single Gaussian is reported too. Both budget regimes: (ε, δ) = (1, 1e-6)
and ρ = 0.5; without public rows, and with 1% of the rows' size as public rows (a separate draw
from the same distribution). Wall time as a ratio to sklearn's EM (n_init=1) on the same rows:
with sklearn's default BLAS threads (what a user gets), and with one BLAS thread for sklearn
too (the private fit always runs under one: on a loaded machine BLAS threads slow both down
several-fold, so the first ratio flatters us there); "ours (s)" is the median fit's wall time.

    python benchmarks/private_em.py --seeds 4 --out benchmarks/results/private_em.md
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np
from sklearn.mixture import GaussianMixture
from threadpoolctl import threadpool_limits

import privgauss as pg


def synthetic(n: int, seed: int) -> np.ndarray:
    """k = 3, d = 10, weights .2/.3/.5, means 2 standard deviations apart (fixed parameters;
    ``seed`` draws the rows)."""
    prm = np.random.default_rng(123)
    d, k = 10, 3
    A = prm.normal(size=(k, d, d)) * 0.2 + np.eye(d)
    means = np.zeros((k, d))
    means[1, 0] = means[2, 1] = 2.0
    rng = np.random.default_rng(seed)
    lab = rng.choice(k, size=n, p=[0.2, 0.3, 0.5])
    return means[lab] + np.einsum("nij,nj->ni", A[lab], rng.normal(size=(n, d)))


def pixels(n: int, seed: int) -> np.ndarray:
    """RGB pixels of scikit-learn's bundled ``china.jpg`` sample image, in [0, 1]."""
    from sklearn.datasets import load_sample_image

    img = load_sample_image("china.jpg").reshape(-1, 3).astype(np.float64) / 255.0
    return img[np.random.default_rng(seed).choice(len(img), size=n, replace=False)]


DATA = {"synthetic k=3 d=10, n=5e4": (synthetic, 3, 50_000),
        "china.jpg pixels k=4, n=5e4": (pixels, 4, 50_000)}
BUDGETS = {"eps=1, delta=1e-6": {"epsilon": 1.0, "delta": 1e-6}, "rho=0.5": {"rho": 0.5}}


def _sklearn_time(X: np.ndarray, k: int, repeats: int = 3) -> float:
    """Median wall time of ``repeats`` fits of sklearn's EM (a shared machine's load varies)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        GaussianMixture(k, covariance_type="full", random_state=0).fit(X)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    lines = ["| data | budget | public rows | gap, median (all seeds) | single Gaussian gap | "
             "time / sklearn | time / sklearn, 1 BLAS thread | ours (s) |",
             "|---|---|---|---|---|---|---|---|"]
    for name, (gen, k, n) in DATA.items():
        X, H = gen(n, 0), gen(20_000, 1)
        sk = GaussianMixture(k, covariance_type="full", random_state=0).fit(X)
        t_sk = _sklearn_time(X, k)
        with threadpool_limits(1, user_api="blas"):
            t_sk1 = _sklearn_time(X, k)
        best = max(sk.score(H), GaussianMixture(k, covariance_type="full", random_state=0,
                                                n_init=3).fit(X).score(H))
        one = best - GaussianMixture(1).fit(X).score(H)
        for bname, kw in BUDGETS.items():
            for m in (0, n // 100):
                P = gen(m, 7) if m else None
                if P is None and "rho" in kw:
                    continue  # without public rows em localises with (epsilon, delta)
                gaps, times = [], []
                for s in range(args.seeds):
                    t0 = time.perf_counter()
                    est = pg.PrivateGaussianMixture(k, method="em", random_state=s, **kw)
                    est.fit(X, public_X=P)
                    times.append(time.perf_counter() - t0)
                    gaps.append(best - est.score(H))
                t = statistics.median(times)
                row = (f"| {name} | {bname} | {m} | {statistics.median(gaps):.3f} "
                       f"({', '.join(f'{g:.3f}' for g in gaps)}) | {one:.3f} | "
                       f"{t / t_sk:.1f} | {t / t_sk1:.1f} | {t:.2f} |")
                print(row, flush=True)
                lines.append(row)
    if args.out:
        with open(args.out, "w") as f:
            f.write("# Private EM against scikit-learn's GaussianMixture\n\n")
            f.write("Command: `python benchmarks/private_em.py --seeds "
                    f"{args.seeds} --out {args.out}`\n\n")
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    from privgauss.progress import on_terminal

    with on_terminal():  # a status line naming the current release, on a terminal
        main()
