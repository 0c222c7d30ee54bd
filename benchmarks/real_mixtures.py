"""PrivateGaussianMixture on the real-table corpus (``benchmarks/corpus.py``), against
scikit-learn's GaussianMixture and a single non-private Gaussian (issue 27's real-table goals).

For each table and seed the rows are split as in ``real_corpus.py`` (80 % training rows in
file order, 20 % held out, 1 % of the training rows drawn as public rows and removed from the
private ones; tables above ``--max-rows`` rows subsampled at random per seed). Columns that are
exact linear functions of earlier ones (rwm5yr's dummies) are dropped for every fit, since
every full-covariance density is degenerate there. On the same rows:

* ``sklearn``: ``GaussianMixture(k, n_init=5)`` on all the training rows, non-private (the
  reference: the best of 5 k-means inits);
* ``gauss``: one non-private Gaussian (np.mean / np.cov) of the training rows;
* ``public alone``: ``GaussianMixture(k, n_init=5)`` on the public rows only (the issue's
  "never worse than sklearn on the public rows alone"; ``—`` where they are fewer than
  ``k·(d+1)`` rows, too few for k full covariances);
* ``PrivateGaussianMixture(k)`` (``method="auto"``, δ = 1e-6, noise seeded by the seed) at
  ε = 1 without and with the public rows (``public_X``), and at ε = 1e4 without them.

Per cell: ``gap`` = sklearn's held-out mean log-likelihood minus ours (nat/row, > 0 worse; the
median over seeds, and the worst seed), ``vs gauss`` = the single Gaussian's minus ours (> 0:
our mixture is worse than one non-private Gaussian), the warnings the fit raised, its
``clipped_fraction_``, ``picked`` (which candidate private EM's final DP pick returned,
``selected_model_``: ``em``, ``single_gaussian`` or ``public``) and outcome (refused
before spending / failed after spending). A table
is *parked* when one of sklearn's components has, in some column, a variance below 1e-4 of that
column's variance: the optimum there puts a component on a single discrete value, which no DP
fit can resolve; the issue asks for "never worse than a single non-private Gaussian" there
instead of a gap to sklearn.

The report opens with the issue's checks, per setting: the tables outside the goal (ε = 1:
gap > 0.10 where not parked, else worse than the Gaussian; with public rows: gap > 0.05 or
worse than the public-alone fit; ε = 1e4: gap > 0.02), failures after spending, and fits
more than 1 nat/row below sklearn without a warning.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/real_mixtures.py --seeds 2 --out benchmarks/results/real_mixtures.md
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import corpus  # noqa: E402  (benchmarks/ put on the path above)
from real_corpus import (  # noqa: E402
    DELTA,
    _log,
    _loglik,
    _outcomes,
    determined_columns,
    guarded_fit,
    split,
)

import privgauss as pg  # noqa: E402

PARKED_SHARE = 1e-4  # a sklearn component variance below this share of the column's: parked
GOAL_EPS1, GOAL_PUBLIC, GOAL_LARGE, SILENT = 0.10, 0.05, 0.02, 1.0
SETTINGS = (("ε = 1", 1.0, False), ("ε = 1, 1% public", 1.0, True), ("ε = 1e4", 1e4, False))


def load_rows(name: str) -> tuple[np.ndarray, list[int]]:
    """A corpus table's rows without its determined columns (:func:`determined_columns`: exact
    linear functions of earlier ones, degenerate for every full-covariance density), and
    the indices of the columns dropped."""
    rows = corpus.TABLES[name].load()
    drop = determined_columns(rows)
    return (np.delete(rows, drop, axis=1) if drop else rows), drop


def _sklearn(rows: np.ndarray, k: int, seed: int) -> Any:
    from sklearn.mixture import GaussianMixture

    return GaussianMixture(k, n_init=5, random_state=seed).fit(rows)


def references(train: np.ndarray, test: np.ndarray, public: np.ndarray, k: int,
               seed: int) -> dict[str, Any]:
    """sklearn's, the single Gaussian's and the public-alone fit's held-out scores."""
    gm = _sklearn(train, k, seed)
    var = train.var(axis=0)
    diag = np.stack([np.diag(C) for C in gm.covariances_])
    parked = bool(np.any(diag < PARKED_SHARE * np.maximum(var, 1e-300)))
    mean, S = train.mean(axis=0), np.cov(train, rowvar=False).reshape(train.shape[1], -1)
    alone = None
    if public.shape[0] >= k * (train.shape[1] + 1):
        alone = float(_sklearn(public, k, seed).score(test))
    return {"sklearn": float(gm.score(test)), "gauss": float(_loglik(test, mean, S).mean()),
            "alone": alone, "parked": parked}


def one_fit(private: np.ndarray, public: np.ndarray | None, test: np.ndarray, k: int,
            epsilon: float, seed: int, ref: dict[str, Any]) -> dict[str, Any]:
    est = pg.PrivateGaussianMixture(k, epsilon=epsilon, delta=DELTA, random_state=seed)
    failed, caught, seconds = guarded_fit(est, private, public)
    if failed is not None:
        return failed
    score = float(est.score(test))
    noted = {w.category.__name__ for w in caught} - {"SeededNoiseWarning", "LargeDeltaWarning"}
    return {"status": "ok", "gap": ref["sklearn"] - score, "vs gauss": ref["gauss"] - score,
            "vs alone": None if ref["alone"] is None else ref["alone"] - score,
            "clipped": getattr(est, "clipped_fraction_", None), "warnings": noted,
            "method": est.method_, "seconds": seconds,
            "picked": getattr(est, "selected_model_", None)}


def _med(values: list[float], fmt: str = ".3g") -> str:
    return format(statistics.median(values), fmt) if values else "—"


def _picked(ok: list[dict[str, Any]]) -> str:
    """How often each candidate of private EM's final pick was returned (``selected_model_``)."""
    names = [r["picked"] for r in ok if r["picked"] is not None]
    return ", ".join(f"{n}×{names.count(n)}" for n in sorted(set(names))) or "—"


def misses(label: str, res: list[dict[str, Any]], parked: bool) -> list[str]:
    """The issue's checks that this cell (one table, one setting) fails."""
    ok = [r for r in res if r["status"] == "ok"]
    out = []
    if any(r["status"] == "failed" for r in res):
        out.append("failed after spending")
    if any(r["status"] == "error" for r in res):
        out.append("error")
    if any(r["gap"] > SILENT and not r["warnings"] for r in ok):
        out.append(f"> {SILENT:g} nat/row below sklearn without a warning")
    if label == "ε = 1":
        if parked and any(r["vs gauss"] > 0 for r in ok):
            out.append("worse than one non-private Gaussian (parked table)")
        if not parked and any(r["gap"] > GOAL_EPS1 for r in ok):
            out.append(f"gap > {GOAL_EPS1:g}")
    elif label == "ε = 1, 1% public":
        if not parked and any(r["gap"] > GOAL_PUBLIC for r in ok):
            out.append(f"gap > {GOAL_PUBLIC:g}")
        if any(r["vs alone"] is not None and r["vs alone"] > 0 for r in ok):
            out.append("worse than sklearn on the public rows alone")
    elif any(r["gap"] > GOAL_LARGE for r in ok):
        out.append(f"gap > {GOAL_LARGE:g}")
    return out


def run(names: list[str], k: int, seeds: int, max_rows: int,
        settings: tuple[tuple[str, float, bool], ...] = SETTINGS) -> tuple[list[str], list[str]]:
    lines = [
        "| table | n×d | held out | parked | setting | outcome | gap | worst gap | vs gauss "
        "| vs public alone | clipped | picked | warnings | s/fit | sklearn s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    checks: dict[str, list[str]] = {label: [] for label, _, _ in settings}
    for name in names:
        table = corpus.TABLES[name]
        rows, drop = load_rows(name)
        _log(f"[{name}] n={rows.shape[0]} d={rows.shape[1]} ...")
        splits = [split(rows, s, max_rows) for s in range(seeds)]
        refs, sk_seconds = [], []
        for s, (train, test, _, public) in enumerate(splits):
            t0 = time.perf_counter()
            refs.append(references(train, test, public, k, s))
            sk_seconds.append(time.perf_counter() - t0)
        parked = any(r["parked"] for r in refs)
        for label, eps, pub in settings:
            res = [one_fit(private if pub else train, public if pub else None, test, k, eps, s,
                           refs[s])
                   for s, (train, test, private, public) in enumerate(splits)]
            ok = [r for r in res if r["status"] == "ok"]
            bad = misses(label, res, parked)
            if bad:
                checks[label].append(f"{name}{'*' if table.held_out else ''} "
                                     f"({'; '.join(bad)})")
            warned = sorted(set().union(*(r["warnings"] for r in ok))) if ok else []
            alone = [r["vs alone"] for r in ok if r["vs alone"] is not None]
            clipped = [float(r["clipped"]) for r in ok if r["clipped"] is not None]
            lines.append(
                f"| {name}{f' (without columns {drop})' if drop else ''} | "
                f"{rows.shape[0]}×{rows.shape[1]} | {'yes' if table.held_out else ''} | "
                f"{'yes' if parked else ''} | {label} | {_outcomes(res)} | "
                f"{_med([r['gap'] for r in ok])} | "
                f"{format(max(r['gap'] for r in ok), '.3g') if ok else '—'} | "
                f"{_med([r['vs gauss'] for r in ok])} | {_med(alone) if pub else ''} | "
                f"{_med(clipped, '.3f')} | {_picked(ok)} | "
                f"{', '.join(w.removesuffix('Warning') for w in warned) or '—'} | "
                f"{_med([r['seconds'] for r in ok], '.2g')} | "
                f"{_med(sk_seconds, '.2g') if label == 'ε = 1' else ''} |")
            _log("  " + lines[-1])
    summary = [f"* **{label}**: outside the goal: {', '.join(v) or 'none'}"
               for label, v in checks.items()]
    return lines, summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", nargs="+", choices=list(corpus.TABLES),
                        default=[n for n, t in corpus.TABLES.items() if not t.small])
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--max-rows", type=int, default=50_000,
                        help="subsample larger tables to this many rows per seed")
    parser.add_argument("--settings", nargs="+", choices=["eps1", "eps1-public", "eps1e4"],
                        default=["eps1", "eps1-public", "eps1e4"],
                        help="run only these settings (ε = 1, ε = 1 with 1%% public rows, "
                        "ε = 1e4)")
    parser.add_argument("--out", default=None, help="write a markdown report here")
    args = parser.parse_args()
    keys = ("eps1", "eps1-public", "eps1e4")
    settings = tuple(s for key, s in zip(keys, SETTINGS, strict=True) if key in args.settings)
    command = "python " + " ".join(shlex.quote(a) for a in sys.argv)
    t0 = time.perf_counter()
    lines, summary = run(args.tables, args.k, args.seeds, args.max_rows, settings)
    text = "\n".join([
        f"# PrivateGaussianMixture({args.k}) on the real-table corpus",
        "",
        f"Command: `OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src {command}` "
        f"({(time.perf_counter() - t0) / 60:.1f} min). δ = {DELTA:g}; medians over "
        f"{args.seeds} seeds; gaps in nat/row of held-out mean log-likelihood, > 0 = worse than "
        "the reference; see the script's docstring for the columns (* = held-out table).",
        "",
        "Issue 27's checks per setting:",
        "",
        *summary,
        "",
        *lines,
        "",
    ])
    print(text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
