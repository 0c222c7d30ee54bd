"""Consistency on Gaussian data at a large n and budget (issue 26: "at n = 1e6 Gaussian data
the covariance ratio ≤ 1.12" at ε = 1e4).

For each seed: n rows from N(μ, Σ) in d dimensions (Σ with eigenvalues geometric in [1,
``--condition``], randomly rotated; μ = 100·N(0, I)), fitted by the default
``PrivateGaussian(epsilon, delta=1e-6, random_state=seed)`` (no bounds, auto method). Reports
per seed and as the median over seeds the ratio of the covariance error
‖Σ^{-1/2} Σ̂ Σ^{-1/2} − I‖_F to np.cov's on the same rows, and the same for the mean
(Mahalanobis error against np.mean's). A ratio of 1 is the non-private estimate's accuracy.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/gaussian_large_n.py --n 1000000 --epsilon 1e4 --seeds 3
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np

import privgauss as pg


def draw(n: int, d: int, condition: float, seed: int) -> tuple[np.ndarray, np.ndarray,
                                                                 np.ndarray]:
    """(rows, μ, Σ) of one seed."""
    rng = np.random.default_rng(10_000 + seed)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    S = (Q * np.geomspace(1.0, condition, d)) @ Q.T
    mu = 100.0 * rng.standard_normal(d)
    L = np.linalg.cholesky(S)
    return rng.standard_normal((n, d)) @ L.T + mu, mu, S


def errors(mean: np.ndarray, cov: np.ndarray, mu: np.ndarray, S: np.ndarray
           ) -> tuple[float, float]:
    """(Mahalanobis mean error, ‖Σ^{-1/2} Σ̂ Σ^{-1/2} − I‖_F)."""
    w, V = np.linalg.eigh(S)
    R = (V / np.sqrt(w)) @ V.T
    return (float(np.linalg.norm(R @ (mean - mu))),
            float(np.linalg.norm(R @ cov @ R - np.eye(len(mu)))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--d", type=int, default=10)
    ap.add_argument("--epsilon", type=float, default=1e4)
    ap.add_argument("--condition", type=float, default=10.0)
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    cov_ratios, mean_ratios = [], []
    for seed in range(args.seeds):
        X, mu, S = draw(args.n, args.d, args.condition, seed)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = pg.PrivateGaussian(epsilon=args.epsilon, delta=1e-6, random_state=seed).fit(X)
        seconds = time.perf_counter() - t0
        em, ec = errors(g.mean_, g.covariance_, mu, S)
        rm, rc = errors(X.mean(axis=0), np.cov(X, rowvar=False), mu, S)
        mean_ratios.append(em / rm)
        cov_ratios.append(ec / rc)
        print(f"seed {seed}: method {g.method_}, covariance error {ec:.5f} (np.cov {rc:.5f}, "
              f"ratio {ec / rc:.3f}), mean error {em:.5f} (np.mean {rm:.5f}, ratio "
              f"{em / rm:.3f}), {seconds:.1f} s", flush=True)
    print(f"n = {args.n}, d = {args.d}, ε = {args.epsilon:g}, δ = 1e-6, condition "
          f"{args.condition:g}, {args.seeds} seeds: median covariance ratio "
          f"{statistics.median(cov_ratios):.3f} (max {max(cov_ratios):.3f}), median mean ratio "
          f"{statistics.median(mean_ratios):.3f} (max {max(mean_ratios):.3f})")


if __name__ == "__main__":
    main()
