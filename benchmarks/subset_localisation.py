"""Accuracy of the bound-free fit with and without the subset localisation (issue 26).

``localise`` reads a random subset of the rows when n is large
(:func:`privgauss.gaussian.histogram.localisation_rows`: from n ≈ 4.5e5 at ε = 1, d = 10). No
corpus table is that large, so each table's 80 % training rows (``real_corpus.split``) are
tiled to at least ``--rows`` rows (default 1e6; the held-out 20 % are not), and the default
``PrivateGaussian(epsilon, delta=1e-6, random_state=seed)`` is fitted on them twice: as
shipped (subset) and with the subset switched off (all rows), the same seeds. Reported per
table and ε: the median over seeds of the held-out gap (nat/row against np.mean/np.cov of the
training rows, as ``real_corpus``) of each, the largest |difference| between the two over
seeds, outcomes, and the subset size. ``gauss`` is N(μ, Σ) rows (d = 10, as
``gaussian_speed``), scored the same way.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/subset_localisation.py --seeds 3
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

import privgauss.gaussian.histogram_budget as hist  # localisation_rows reads _SUBSET_MIN

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402
import real_corpus  # noqa: E402
from gaussian_speed import _rows  # noqa: E402

TABLES = ["gauss", "china_pixels", "flower_pixels", "mhtdata", "insteval", "diamonds",
          "randhie", "rwm5yr", "doctor_contacts", "vietnam_health"]


def _data(name: str, seed: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    if name == "gauss":
        X = _rows(rows + rows // 4, 10, seed)[0]
        return X[:rows], X[rows:]
    train, test, _, _ = real_corpus.split(np.array(corpus.load(name)), seed, 10**9)
    k = -(-rows // train.shape[0])
    return np.tile(train, (k, 1)), test


def _fit(train: np.ndarray, test: np.ndarray, eps: float, seed: int, subset: bool
         ) -> dict[str, Any]:
    saved = hist._SUBSET_MIN
    hist._SUBSET_MIN = saved if subset else 10**15
    try:
        return real_corpus.one_fit(train, test, train, None, eps, seed)
    finally:
        hist._SUBSET_MIN = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", nargs="+", default=TABLES)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--rows", type=int, default=10**6)
    parser.add_argument("--eps", type=float, nargs="+", default=[1.0, 1e4])
    args = parser.parse_args()
    print("| table | n×d (tiled) | ε | subset rows | gap, subset | gap, all rows | "
          "max abs diff | outcomes (subset / all) |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for name in args.tables:
        for eps in args.eps:
            res: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
            shape = (0, 0)
            for seed in range(args.seeds):
                train, test = _data(name, seed, args.rows)
                shape = train.shape
                for subset in (True, False):
                    res[subset].append(_fit(train, test, eps, seed, subset))
            n, d = shape
            s_b, l_b, _ = hist.localisation_plan(n, d, eps, 1e-6)
            m = hist.localisation_rows(n, d, s_b, l_b)
            gaps = {k: [r.get("gap", np.nan) for r in v] for k, v in res.items()}
            diff = np.nanmax(np.abs(np.subtract(gaps[True], gaps[False])))
            outs = " / ".join(",".join(r["status"] for r in res[k]) for k in (True, False))
            print(f"| {name} | {n}×{d} | {eps:g} | {m} | {np.nanmedian(gaps[True]):.4g} | "
                  f"{np.nanmedian(gaps[False]):.4g} | {diff:.2g} | {outs} |", flush=True)


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"\n({(time.perf_counter() - t0) / 60:.1f} min)")
