"""Which part of privgauss's synthetic rows loses on a peers' table: oracle swaps of the
marginals and the dependence (issue 28, diagnosis only; nothing here is a DP release).

For each split (``synth_gaps.py``'s, the peers' cached rows) and seeded draw
(``random_state = 1000·split + draw``) the privgauss rows S are scored as they are and in
four variants, with ``synth_peers.py``'s metrics against the real held-out rows:

* *pg copula + train marginals*: each column of S replaced, in S's rank order, by the
  training column's empirical quantiles (privgauss's dependence, exact marginals);
* *train copula + pg marginals*: each training column replaced, in its rank order, by S's
  quantiles (the data's dependence, privgauss's marginals);
* *pg, columns independent*: S's columns permuted independently (no dependence at all);
* *train bootstrap*: n training rows drawn with replacement (exact model, multinomial rows);
* *train itself*: the training rows (the sampling floor).

The peers' rows (MST, AIM; raw and jittered as ``synth_peers.py``) are scored beside them.
Each cell is the median over splits of the mean over draws; per-column 1-way TV is listed
per split below the table. ``--worst N`` also lists, per split, the N held-out rows of
lowest log-likelihood (``synth_peers.py``'s loglik model, mean over draws) with their
values in training standard deviations, the synthetic rows' extremes in the same units,
and how much of the mean loglik the worst 1 % of the rows take.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/synth_swaps.py \\
        --tables treering --seeds 0,1,2 --draws 4
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth_gaps import _override, _peer_metrics, _split, split_args  # noqa: E402
from synth_peers import METRICS, TARGETS, _metrics, _tv_1way  # noqa: E402


def _remap(values: np.ndarray, order_of: np.ndarray) -> np.ndarray:
    """Per column, the empirical quantiles of ``values`` placed in the rank order of
    ``order_of`` (rows of ``order_of``'s length)."""
    m = len(order_of)
    out = np.empty(order_of.shape, dtype=np.float64)
    for j in range(order_of.shape[1]):
        rank = np.argsort(np.argsort(order_of[:, j], kind="stable"), kind="stable")
        q = np.sort(values[:, j])
        idx = np.clip(np.floor((rank + 0.5) / m * len(q)).astype(np.int64), 0, len(q) - 1)
        out[:, j] = q[idx]
    return out


def _row_scores(train: np.ndarray, test: np.ndarray, syn: np.ndarray) -> np.ndarray:
    """Each held-out row's log-likelihood under ``synth_peers._loglik``'s model (a
    4-component mixture fitted to the synthetic rows in training standard units)."""
    from sklearn.mixture import GaussianMixture

    mu, sd = train.mean(0), train.std(0) + 1e-9
    gm = GaussianMixture(4, reg_covar=1e-3, random_state=0).fit((syn - mu) / sd)
    return np.asarray(gm.score_samples((test - mu) / sd) - np.log(sd).sum())


def _worst_rows(train: np.ndarray, test: np.ndarray, syns: list[np.ndarray], n: int,
                split: int) -> None:
    """Print the ``n`` held-out rows of lowest mean log-likelihood over the draws ``syns``."""
    mu, sd = train.mean(0), train.std(0) + 1e-9
    scores = np.mean([_row_scores(train, test, x) for x in syns], axis=0)
    cut = max(1, len(scores) // 100)
    low = np.sort(scores)[:cut]
    z = lambda a: " ".join(f"{v:+.1f}" for v in a)  # noqa: E731
    print(f"\nsplit {split}: mean loglik {scores.mean():.2f}, without the worst 1 % "
          f"({cut} rows) {np.sort(scores)[cut:].mean():.2f} (they take "
          f"{low.sum() / len(scores):+.2f}); synthetic extremes (training sd units, mean over "
          f"draws): max {z(np.mean([(x.max(0) - mu) / sd for x in syns], axis=0))}, "
          f"min {z(np.mean([(x.min(0) - mu) / sd for x in syns], axis=0))}; held-out max "
          f"{z((test.max(0) - mu) / sd)}, min {z((test.min(0) - mu) / sd)}")
    for i in np.argsort(scores)[:n]:
        print(f"* row {i}: loglik {scores[i]:.1f}; values (training sd units) "
              f"{z((test[i] - mu) / sd)}")


def run(name: str, seeds: list[int], draws: int, args: argparse.Namespace) -> None:
    import privgauss as pg

    target = TARGETS[name]
    rows: dict[str, list[dict[str, float]]] = {}
    per_col: dict[str, list[list[float]]] = {}
    for s in seeds:
        train, test = _split(name, s, args.max_rows, args.max_cols)
        peers = _peer_metrics(name, s, train, test, args)
        rng = np.random.default_rng(s)
        variants: dict[str, list[dict[str, float]]] = {}
        cols: dict[str, list[list[float]]] = {}
        syns = []
        for r in range(draws):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                syn = np.asarray(pg.synthesize(train, len(train), epsilon=1.0, delta=1e-6,
                                               random_state=1000 * s + r), float)
            syns.append(syn)
            ind = syn.copy()
            for j in range(ind.shape[1]):
                ind[:, j] = rng.permutation(ind[:, j])
            v = {"privgauss": syn,
                 "pg copula + train marginals": _remap(train, syn),
                 "train copula + pg marginals": _remap(syn, train),
                 "pg, columns independent": ind,
                 "train bootstrap": train[rng.integers(0, len(train), len(train))],
                 "train itself": train}
            for k, x in v.items():
                variants.setdefault(k, []).append(_metrics(train, test, x, 0.0, target))
                cols.setdefault(k, []).append([_tv_1way(test[:, j], x[:, j])
                                               for j in range(test.shape[1])])
        for k, ms in variants.items():
            rows.setdefault(k, []).append({m: float(np.mean([x[m] for x in ms]))
                                           for m in ms[0]})
            per_col.setdefault(k, []).append(list(np.mean(cols[k], axis=0)))
        if peers is not None:
            for k, m in peers.items():
                rows.setdefault(k, []).append(m)
        if args.worst > 0:
            _worst_rows(train, test, syns, args.worst, s)
    keys = [k for k in METRICS if k != "s"]
    print(f"\n{name}, splits {seeds}, {draws} draws\n")
    print("| variant | " + " | ".join(keys) + " |")
    print("|---|" + "---|" * len(keys))
    for v, rs in rows.items():
        print(f"| {v} | " + " | ".join(format(float(np.median([r[k] for r in rs])),
                                              METRICS[k][0]) for k in keys) + " |")
    print("\n1-way TV per column (mean over draws), per split:\n")
    for v, cs in per_col.items():
        print(f"* {v}: " + "; ".join(" / ".join(f"{c:.4f}" for c in split) for split in cs))


def main() -> None:
    ap = split_args(__doc__, "treering", "0,1,2")
    ap.add_argument("--worst", type=int, default=0,
                    help="list this many held-out rows of lowest loglik per split")
    ap.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE",
                    help="override a constant of privgauss.synthesis (as synth_gaps.py)")
    args = ap.parse_args()
    _override(args.set)
    seeds = [int(s) for s in args.seeds.split(",")]
    for name in args.tables.split(","):
        run(name, seeds, args.draws, args)


if __name__ == "__main__":
    main()
