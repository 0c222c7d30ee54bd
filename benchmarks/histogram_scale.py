"""The histogram route's scale step on real tables whose columns spread over orders of
magnitude (issue 27, brief HISTSCALE): how often ``PrivateGaussian(epsilon=1, delta=1e-6)``
fails after spending (``EstimationFailed``, which step), how often the wide-axis octave
release ran (``localise-wide`` in the ledger), the KL of the fit to np.mean/np.cov of the same
rows, and a digest of every fitted mean and covariance, so two checkouts can be compared fit
by fit (``--digests FILE`` writes them; compare the files).

Tables: the fresh pydataset corpus (``mixture_corpus.fresh_tables``, the tables em's small-n
runs used) and ``benchmarks/corpus.py``'s; rows as ``em_small_n.py`` reads them (determined
columns dropped, the 80 % training rows of ``real_corpus.split`` at split seed 0); tables
above ``--max-rows`` rows are skipped (the scale step's failures are a small-n matter: its
threshold is sized to the Gaussian's modal octave at n).

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/histogram_scale.py --seeds 20 --tables SumHes Snmesp
"""

from __future__ import annotations

import argparse
import hashlib
import math
import os
import sys
import warnings
from collections import Counter
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import privgauss as pg  # noqa: E402

DELTA = 1e-6


def one_fit(X: np.ndarray, epsilon: float, seed: int) -> dict[str, Any]:
    from em_small_n import kl

    est = pg.PrivateGaussian(epsilon=epsilon, delta=DELTA, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            est.fit(X)
        except pg.EstimationFailed as exc:
            return {"failed": getattr(exc, "step", None) or "?"}
        except (pg.InvalidDataError, pg.PrivacyBudgetError, ValueError):
            return {"refused": True}
    steps = [e.step for e in est.ledger_]
    digest = hashlib.sha1(np.concatenate([est.mean_.ravel(),
                                          est.covariance_.ravel()]).tobytes()).hexdigest()[:12]
    S = np.cov(X, rowvar=False).reshape(X.shape[1], -1)
    try:
        k = kl(X.mean(axis=0), S, est.mean_, est.covariance_)
    except np.linalg.LinAlgError:
        k = math.inf
    return {"kl": k, "wide": any(s.endswith("-wide") for s in steps), "digest": digest,
            "method": est.method_}


def summarise(res: list[dict[str, Any]]) -> str:
    fails = Counter(r["failed"] for r in res if "failed" in r)
    refused = sum("refused" in r for r in res)
    kls = sorted(r["kl"] for r in res if "kl" in r)
    wide = sum(r.get("wide", False) for r in res)
    med = f"{kls[len(kls) // 2]:.3g}" if kls else "—"
    worst = f"{kls[-1]:.3g}" if kls else "—"
    failed = ", ".join(f"{k}: {v}" for k, v in fails.items()) or "—"
    return (f"{sum(fails.values())}/{len(res)} | {failed} | {refused} | {wide} | {med} | "
            f"{worst}")


def synth(args: argparse.Namespace) -> None:
    """Gaussian rows with one column spread over orders of magnitude (public seeds)."""
    print("| rows | d | n | failed | failed steps | refused | wide ran | median KL | worst KL |")
    print("|---|---|---|---|---|---|---|---|---|")
    for dec in args.decades:
        for n in args.rows:
            res = []
            for s in range(args.seeds):
                rng = np.random.default_rng(20_000 + s)
                A = rng.normal(size=(3, 3)) / np.sqrt(3) + np.eye(3)
                X = np.column_stack([rng.normal(size=(n, 3)) @ A.T * 3.0 + 10.0,
                                     10 ** rng.uniform(3.0, 3.0 + dec, size=n)])
                res.append(one_fit(X, args.epsilon, s))
            print(f"| Gaussian + log-uniform over {dec:g} decades | 4 | {n} | "
                  f"{summarise(res)} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--tables", nargs="*", default=None, help="default: all")
    ap.add_argument("--max-rows", type=int, default=20_000)
    ap.add_argument("--digests", default=None, help="write table seed digest lines here")
    ap.add_argument("--synth", action="store_true",
                    help="instead: Gaussian rows (d = 3) with one column log-uniform over "
                    "--decades decades, at --rows rows")
    ap.add_argument("--decades", type=float, nargs="*", default=[3.0, 4.0, 5.3, 8.0])
    ap.add_argument("--rows", type=int, nargs="*", default=[2600, 5000, 20000])
    args = ap.parse_args()
    if args.synth:
        synth(args)
        return
    import corpus
    import mixture_corpus
    import real_corpus
    import real_mixtures

    fresh = mixture_corpus.fresh_tables(2000, 10)
    names = args.tables or [*fresh, *(t for t in corpus.TABLES if t not in fresh)]
    print("| table | n | d | failed | failed steps | refused | wide ran | median KL | worst KL |")
    print("|---|---|---|---|---|---|---|---|---|")
    out = open(args.digests, "w") if args.digests else None
    for name in names:
        rows, _ = real_mixtures.load_rows(name)
        if rows.shape[0] > args.max_rows * 1.25:
            continue
        train = real_corpus.split(rows, 0, 10**9)[0]
        n, d = train.shape
        res = [one_fit(train, args.epsilon, s) for s in range(args.seeds)]
        print(f"| {name} | {n} | {d} | {summarise(res)} |", flush=True)
        if out is not None:
            for s, r in enumerate(res):
                what = r.get("digest") or ("failed " + r["failed"] if "failed" in r
                                           else "refused")
                out.write(f"{name} {s} {what}\n")
    if out is not None:
        out.close()


if __name__ == "__main__":
    main()
