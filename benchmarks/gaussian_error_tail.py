"""The tail of the bound-free single Gaussian's error on small real tables at ε = 1.

A median hides a fit that is ten times worse than the rest. For each table this script splits
the rows 80/20 (``real_corpus.split``, seed 0), fits ``PrivateGaussian(epsilon=1,
delta=1e-6)`` (``method="auto"``) to the training rows with ``--seeds`` noise seeds and
reports, over the seeds, the distribution of KL(N(np.mean, np.cov) ‖ fit) on the training rows
(nat per row: what a Gaussian's expected log-likelihood loses, since it depends on the rows
only through their mean and covariance) — median, mean, 90th percentile, worst and the share
above 0.2 — and the held-out gap (np.mean/np.cov's held-out mean log-likelihood minus the
fit's ``score``, which includes its background component): median and worst. On tables with
gross errors a fit that clips them is far from np.cov (a large KL) and may score better
held out (a negative gap). The noise seeds are shared between arms, so ``--arms`` compares
code switches on the same draws.

Tables: the corpus of ``corpus.py`` (its held-out flag kept) and the fresh pydataset tables of
``mixture_corpus.py`` (never looked at while tuning the single Gaussian), each without its
determined columns (``real_mixtures.load_rows``), at most ``--max-rows`` rows and
``--fraction`` of them (a seeded random subset). Tables the estimator refuses before spending
are listed as refused; fits that fail after spending are counted.

``--arms "A;B"``: each arm a comma-separated list of ``MODULE.NAME=VALUE`` settings of a
:mod:`privgauss.gaussian` module constant (e.g. ``coinpress.mean_first._MAX_ROUGH_Q=30``;
"" is the code as it is).

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/gaussian_error_tail.py --seeds 20 \\
        --arms ";coinpress.mean_first._MAX_ROUGH_Q=30" --out tail.md
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import statistics
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import corpus  # noqa: E402
import mixture_corpus as mc  # noqa: E402
import real_mixtures as rm  # noqa: E402
from real_corpus import _loglik, split  # noqa: E402

import privgauss as pg  # noqa: E402
from privgauss.exceptions import EstimationFailed, InvalidDataError  # noqa: E402

KINDS = ("gauss", "lognormal", "binary", "likert", "count", "zero-inflated", "share")


def mixed_table(seed: int) -> tuple[np.ndarray, str]:
    """A generated table with the defects of real ones (``--families``): d ∈ 3..9 columns of
    random kinds (Gaussian, lognormal, 0/1 with 3-60 % ones, Likert with 3-7 levels, Poisson
    counts, zero-inflated lognormal, a Beta share), tied by a Gaussian copula with a random
    correlation (two to three factors), each column scaled by 10^U(-2, 3) and shifted by
    10^U(0, 4); n ∈ 2,000..8,000; a third of the tables get 0.1 % gross errors (one cell ×
    1e3). Seeded by ``seed``; returns the rows and a short description."""
    from scipy import stats

    rng = np.random.default_rng(10_000 + seed)
    d, n = int(rng.integers(3, 10)), int(rng.integers(2000, 8001))
    F = rng.standard_normal((d, int(rng.integers(2, 4)))) * rng.uniform(0.3, 1.2)
    C = F @ F.T + np.diag(rng.uniform(0.2, 1.0, d))
    R = C / np.sqrt(np.outer(np.diag(C), np.diag(C)))
    U = stats.norm.cdf(rng.standard_normal((n, d)) @ np.linalg.cholesky(R).T)
    kinds = [KINDS[int(k)] for k in rng.integers(0, len(KINDS), d)]
    cols = []
    for j, kind in enumerate(kinds):
        u = U[:, j]
        if kind == "gauss":
            x = stats.norm.ppf(u)
        elif kind == "lognormal":
            x = np.exp(rng.uniform(0.5, 1.5) * stats.norm.ppf(u))
        elif kind == "binary":
            x = (u < rng.uniform(0.03, 0.6)).astype(float)
        elif kind == "likert":
            p = rng.dirichlet(np.ones(int(rng.choice([3, 5, 7]))))
            x = np.searchsorted(np.cumsum(p)[:-1], u).astype(float) + 1
        elif kind == "count":
            x = stats.poisson.ppf(u, rng.uniform(0.3, 20.0))
        elif kind == "zero-inflated":
            pi = rng.uniform(0.3, 0.8)
            x = np.where(u < pi, 0.0, np.exp(stats.norm.ppf(np.clip((u - pi) / (1 - pi), 1e-12,
                                                                      1 - 1e-12))))
        else:
            x = stats.beta.ppf(u, rng.uniform(1, 5), rng.uniform(1, 5))
        cols.append(x * 10 ** rng.uniform(-2, 3) + 10 ** rng.uniform(0, 4))
    X = np.column_stack(cols)
    gross = rng.random() < 1 / 3
    if gross:
        bad = rng.choice(n, max(1, n // 1000), replace=False)
        j = rng.integers(0, d, bad.size)
        X[bad, j] = X[bad, j] * 1e3
    return X, f"{'+'.join(k[:4] for k in kinds)}{' gross' if gross else ''}"


def kl_to(mu: np.ndarray, S: np.ndarray, m2: np.ndarray, S2: np.ndarray) -> float:
    """KL(N(mu, S) ‖ N(m2, S2)), nat."""
    d = mu.size
    S2i = np.linalg.inv(S2)
    dm = m2 - mu
    return float(0.5 * (np.trace(S2i @ S) + dm @ S2i @ dm - d + np.linalg.slogdet(S2)[1]
                        - np.linalg.slogdet(S)[1]))


def _apply(arm: str, package: str = "privgauss.gaussian") -> dict[tuple[object, str], object]:
    """Set an arm's constants (``MODULE.NAME=VALUE``, MODULE under ``package``); return the old
    values (to restore)."""
    old: dict[tuple[object, str], object] = {}
    for kv in filter(None, (s.strip() for s in arm.split(","))):
        name, value = kv.split("=")
        mod_name, _, attr = name.rpartition(".")
        mod = importlib.import_module(f"{package}.{mod_name}")
        cur = getattr(mod, attr)
        old[(mod, attr)] = cur
        setattr(mod, attr, type(cur)(float(value)))
    return old


def _restore(old: dict[tuple[object, str], object]) -> None:
    for (mod, attr), value in old.items():
        setattr(mod, attr, value)


def _rows(name: str, max_rows: int, fraction: float) -> np.ndarray:
    rows, _ = rm.load_rows(name)
    m = min(max_rows, int(fraction * rows.shape[0]))
    if rows.shape[0] > m:
        keep = np.sort(np.random.default_rng(0).choice(rows.shape[0], m, replace=False))
        rows = rows[keep]
    return rows


def table_kls(rows: np.ndarray, seeds: int, arm: str
              ) -> tuple[list[float], list[float], int] | str:
    """The KLs and held-out gaps of the fits over the noise seeds and the number that failed
    after spending, or the refusal's message."""
    X, test, _, _ = split(rows, 0, rows.shape[0])
    mu, S = X.mean(axis=0), np.cov(X, rowvar=False).reshape(X.shape[1], -1)
    ref = float(_loglik(test, mu, S).mean())
    old = _apply(arm)
    try:
        out, gaps, failed = [], [], 0
        for s in range(seeds):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    g = pg.PrivateGaussian(epsilon=1.0, delta=1e-6, random_state=s).fit(X)
                except InvalidDataError as e:
                    return f"refused ({str(e)[:60]}…)"
                except EstimationFailed:
                    failed += 1
                    continue
            out.append(kl_to(mu, S, g.mean_, g.covariance_))
            gaps.append(ref - float(g.score(test)))
        return out, gaps, failed
    finally:
        _restore(old)


def _summary(kls: list[float], gaps: list[float], failed: int) -> str:
    if not kls:
        return f"— | — | — | — | — | — | — | {failed}"
    a = np.asarray(kls)
    return (f"{statistics.median(kls):.4f} | {a.mean():.4f} | {np.quantile(a, 0.9):.3f} | "
            f"{a.max():.3f} | {(a > 0.2).mean():.2f} | {statistics.median(gaps):.4f} | "
            f"{max(gaps):.3f} | {failed}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--max-rows", type=int, default=20000)
    ap.add_argument("--fraction", type=float, default=1.0,
                    help="fit this share of each table's rows (a seeded random subset)")
    ap.add_argument("--min-rows", type=int, default=2000)
    ap.add_argument("--max-cols", type=int, default=10)
    ap.add_argument("--arms", default="", help='"A;B": arms, each NAME=VALUE,... ("" = as is)')
    ap.add_argument("--tables", nargs="+", default=None)
    ap.add_argument("--families", default=None,
                    help="generated tables (mixed_table) at these comma-separated seeds "
                    "instead of the real ones")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.families:
        names = [f"family {s}" for s in args.families.split(",")]
    else:
        fresh = mc.fresh_tables(args.min_rows, args.max_cols)
        names = args.tables or [*corpus.TABLES, *fresh]
    arms = args.arms.split(";")
    lines = ["| table | n×d | held out | arm | median KL | mean | p90 | worst | share > 0.2 "
             "| median gap | worst gap | failed |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    means: dict[str, list[float]] = {a: [] for a in arms}
    worst: dict[str, list[float]] = {a: [] for a in arms}
    for name in names:
        if name.startswith("family "):
            X, kind = mixed_table(int(name.split()[1]))
            name, held = f"{name} ({kind})", "yes"
        else:
            X = _rows(name, args.max_rows, args.fraction)
            held = "yes" if corpus.TABLES[name].held_out else ""
        if X.shape[1] < 2 or X.shape[1] > args.max_cols:
            continue
        for arm in arms:
            res = table_kls(X, args.seeds, arm)
            cells = res if isinstance(res, str) else _summary(*res)
            if not isinstance(res, str) and res[0]:
                means[arm].append(float(np.mean(res[0])))
                worst[arm].append(float(np.max(res[0])))
            line = f"| {name} | {X.shape[0]}×{X.shape[1]} | {held} | {arm or 'as is'} | {cells} |"
            lines.append(line)
            print(line, file=sys.stderr, flush=True)
    totals = [f"- {a or 'as is'}: {len(means[a])} tables fitted; mean of the tables' mean KL "
              f"{np.mean(means[a]):.4f}; tables whose worst fit is above 0.2: "
              f"{sum(w > 0.2 for w in worst[a])}" for a in arms if means[a]]
    report("# The bound-free single Gaussian's error tail at ε = 1 (KL to np.cov, same rows)",
           "gaussian_error_tail.py", [*totals, "", *lines], args.out)


def report(title: str, script: str, body: list[str], out: str | None) -> None:
    """A results page: the title, the command that made it (this process's arguments) and
    ``body``, written to ``out`` (or printed)."""
    text = "\n".join([title, "", f"Command: `python benchmarks/{script} "
                      f"{shlex.join(sys.argv[1:])}`", "", *body, ""])
    if out:
        Path(out).write_text(text, encoding="utf-8")
    else:
        print(text)


if __name__ == "__main__":
    main()
