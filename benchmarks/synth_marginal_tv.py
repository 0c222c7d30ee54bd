"""Per-column 1-way TV of the released marginals alone (issue 28, diagnosis; no release here).

For each table, split (``synth_gaps.py``'s) and seeded draw (``random_state = 1000·split +
draw``) the synthesizer is fitted and each released marginal is read without sampling noise:
its inverse CDF at the levels (i + ½)/N, N = ``--levels``. The table prints, per column, the
TV of that marginal on the real held-out rows' 20 quantile bins (``synth_peers.py``'s 1-way
TV, less the synthetic rows' own sampling noise) and against the training rows it was
released from (the binning and noise error alone), mean over draws, median over splits.
``--bins`` also lists, per column, the quantile bins (of the training rows) with the largest
mean signed mass error (marginal − training).

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/synth_marginal_tv.py --tables noxemissions,treering --draws 4
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth_gaps import _override, _split, split_args  # noqa: E402


def _masses(real: np.ndarray, x: np.ndarray, bins: int = 20) -> tuple[np.ndarray, np.ndarray,
                                                                     np.ndarray]:
    edges = np.unique(np.quantile(real, np.linspace(0, 1, bins + 1)))
    h = [np.histogram(np.clip(v, edges[0], edges[-1]), edges)[0] / len(v) for v in (real, x)]
    return edges, h[0], h[1]


def main() -> None:
    import privgauss as pg

    ap = split_args(__doc__, "noxemissions,treering", "0,1,2")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--levels", type=int, default=20000)
    ap.add_argument("--bins", type=int, default=0, help="list this many worst bins per column")
    ap.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE")
    args = ap.parse_args()
    _override(args.set)
    seeds = [int(s) for s in args.seeds.split(",")]
    u = (np.arange(args.levels) + 0.5) / args.levels
    print("| table | column | kind | TV vs held out | TV vs training "
          "| floor (training vs held out) |")
    print("|---|---|---|---|---|---|")
    for name in args.tables.split(","):
        test_tv, train_tv, floor, errs, kinds = [], [], [], [], []
        for s in seeds:
            train, test = _split(name, s, args.max_rows, args.max_cols)
            d = train.shape[1]
            a, b, e = np.zeros(d), np.zeros(d), [np.zeros(20) for _ in range(d)]
            for r in range(args.draws):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    syn = pg.PrivateSynthesizer(epsilon=args.epsilon, delta=1e-6,
                                                random_state=1000 * s + r).fit(train)
                kinds = [f"{m.kind}{'/' + format(m.step, 'g') if m.step else ''}"
                         for m in syn.marginals_]
                for j, m in enumerate(syn.marginals_):
                    x = m.from_uniform(u)
                    _, p, q = _masses(test[:, j], x)
                    a[j] += 0.5 * np.abs(p - q).sum() / args.draws
                    _, p, q = _masses(train[:, j], x)
                    b[j] += 0.5 * np.abs(p - q).sum() / args.draws
                    e[j][:len(p)] += (q - p) / args.draws
            test_tv.append(a)
            train_tv.append(b)
            floor.append([0.5 * np.abs(np.subtract(*_masses(test[:, j], train[:, j])[1:])).sum()
                          for j in range(d)])
            errs.append(e)
        for j in range(len(kinds)):
            print(f"| {name} | {j} | {kinds[j]} | {np.median([t[j] for t in test_tv]):.4f} | "
                  f"{np.median([t[j] for t in train_tv]):.4f} | "
                  f"{np.median([t[j] for t in floor]):.4f} |", flush=True)
        print(f"| {name} | mean | | {np.median([t.mean() for t in test_tv]):.4f} | "
              f"{np.median([t.mean() for t in train_tv]):.4f} | "
              f"{np.median([np.mean(t) for t in floor]):.4f} |", flush=True)
        if args.bins:
            for j in range(len(kinds)):
                err = np.mean([x[j] for x in errs], axis=0)
                worst = np.argsort(-np.abs(err))[:args.bins]
                print(f"  {name} col {j}: worst quantile bins (index: mean error) "
                      + ", ".join(f"{k}: {err[k]:+.4f}" for k in sorted(worst)))


if __name__ == "__main__":
    main()
