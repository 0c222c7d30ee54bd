"""Real against synthetic pairs plots for the synthesis guide (issue 28).

Fits ``pg.synthesize`` at ε = 1, δ = 1e-6 (secure noise, no bounds, no types) to the 80%
training split of two corpus tables — wavesurge (d = 2, tuning) and budget_food (held out;
its first three columns, spending shown on a log axis) — and draws as many rows; the figure
shows each pair of columns, real training rows beside synthetic rows, on the same axes.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/synth_pairs_plot.py \\
        --out docs/guide/synthesis_pairs.png
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import load  # noqa: E402

#: (table, columns shown, their names, columns on a log axis)
PANELS = [("wavesurge", [0, 1], ["wave height", "surge"], []),
          ("budget_food", [0, 1, 2], ["food share", "total spending", "age"], [1])]


def main() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import privgauss as pg

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="docs/guide/synthesis_pairs.png")
    args = ap.parse_args()
    pairs = [(t, cols, names, logs, i, j) for t, cols, names, logs in PANELS
             for i in range(len(cols)) for j in range(i + 1, len(cols))]
    fig, axes = plt.subplots(2, len(pairs), figsize=(2.6 * len(pairs), 5.0), squeeze=False)
    rng = np.random.default_rng(0)
    cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for c, (table, cols, names, logs, i, j) in enumerate(pairs):
        if table not in cache:
            X = load(table)[:, cols]
            train = X[rng.permutation(len(X))[: int(0.8 * len(X))]][:10000]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                syn = np.asarray(pg.synthesize(train, len(train), epsilon=1.0, delta=1e-6))
            cache[table] = (train, syn)
        train, syn = cache[table]
        for r, (rows, who) in enumerate([(train, "real"), (syn, "synthetic")]):
            ax = axes[r, c]
            show = rows[:3000]  # the first 3,000 rows of each (random order): a small file
            ax.scatter(show[:, i], show[:, j], s=1, alpha=0.3, rasterized=True)
            ax.set_title(f"{table}: {who}", fontsize=8)
            ax.set_xlabel(names[i], fontsize=7)
            ax.set_ylabel(names[j], fontsize=7)
            ax.tick_params(labelsize=6)
            if i in logs:
                ax.set_xscale("log")
            if j in logs:
                ax.set_yscale("log")
        for ax in axes[:, c]:  # the real rows' axes for both
            ax.set_xlim(axes[0, c].get_xlim())
            ax.set_ylim(axes[0, c].get_ylim())
    fig.tight_layout()
    fig.savefig(args.out, dpi=60)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
