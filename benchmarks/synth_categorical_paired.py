"""A ``privgauss.synthesis.categories`` switch off against on, paired (issue 28).

For each table of :mod:`synth_categorical` (its 80/20 splits 0–2) and each arm (categories
released, or declared public), ``--reps`` seeded fits with the switch off and then on, the same
``random_state`` for both: categorical 1-way TV, 1-way TV and 2-way TV against the held-out
rows. Seeded noise, so a change is the switch's own and not the run-to-run noise of
``synth_categorical.py``'s secure-noise runs (``benchmarks/results/synth_categorical.md``).

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src python \\
        benchmarks/synth_categorical_paired.py COUNT_PROJECT --tables diamonds,wages --reps 2
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synth_categorical as sc  # noqa: E402


def main() -> None:
    import privgauss as pg
    from privgauss.synthesis import categories

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("switch", help="a boolean constant of privgauss.synthesis.categories")
    ap.add_argument("--tables", default=",".join(sc.TABLES))
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--max-rows", type=int, default=20_000)
    args = ap.parse_args()
    if not hasattr(categories, args.switch):
        ap.error(f"privgauss.synthesis.categories has no constant {args.switch!r}")
    print("| table | arm | cat 1-way TV off → on | 1-way TV | 2-way TV | cat 1-way better |")
    print("|---|---|---|---|---|---|")
    for name in args.tables.split(","):
        df = sc.load_table(name)
        cats = sc.categorical_columns(df)
        for declare in (False, True):
            rows = []
            for seed in range(3):
                perm = np.random.default_rng(seed).permutation(len(df))
                cut = int(0.8 * len(df))
                train = df.iloc[perm[:cut][: args.max_rows]].reset_index(drop=True)
                test = df.iloc[perm[cut:]].reset_index(drop=True)
                kw = {"categories": {c: sorted(set(train[c])) for c in cats}} if declare else {}
                for rep in range(args.reps):
                    pair = []
                    for value in (False, True):
                        setattr(categories, args.switch, value)
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            syn = pg.PrivateSynthesizer(
                                epsilon=1.0, delta=1e-6, random_state=100 * seed + rep, **kw
                            ).fit(train).sample_table(len(train))
                        cols = sc.tv_columns(test, syn, cats)
                        pairs = sc.tv_pairs(test, syn, cats)
                        pair.append((np.mean([cols[c] for c in cats]),
                                     np.mean(list(cols.values())),
                                     np.mean(list(pairs.values()))))
                    rows.append(pair)
            a = np.array([r[0] for r in rows])
            b = np.array([r[1] for r in rows])
            moved = np.abs(b[:, 0] - a[:, 0]) > 1e-12
            print(f"| {name} | {'declared' if declare else 'released'} | "
                  + " | ".join(f"{a[:, i].mean():.4f} → {b[:, i].mean():.4f}" for i in range(3))
                  + f" | {int((b[:, 0] < a[:, 0] - 1e-12).sum())} of {int(moved.sum())} |",
                  flush=True)


if __name__ == "__main__":
    main()
