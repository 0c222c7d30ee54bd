"""False alarms and collapses of PrivateGaussian on Gaussian data (issue 26).

For each setting and seed: draw n rows from N(μ, Σ) in d dimensions (Σ with eigenvalues
log-spaced from 1 to ``--condition``, randomly rotated; μ a random direction of norm
``--mean-norm``), fit ``PrivateGaussian(epsilon, delta, random_state=seed)`` with the setting's
prior and count, over seeds:

* ``alarms``: fits that emitted ``ClippedDataWarning`` (on Gaussian data every one is a false
  alarm; the goal is at most 1 in 100 fits);
* ``failed``: ``EstimationFailed`` after spending (with its step);
* ``collapsed``: fits whose released mean lies at the prior's edge (within 1e-6 relative of
  ``mean_bound`` from ``center``), whose DP clipped fraction is above 0.5, or whose Gaussian
  puts the true mean more than 10 Mahalanobis units out — the release describes none of the
  data (the goal: at most β = 0.05 of the fits, and such a fit must end
  in ``EstimationFailed``);
* ``clipped``: median and maximum DP ``clipped_fraction_``; ``cov ratio``: the median of
  ‖Σ̂ − Σ‖_F over ‖np.cov − Σ‖_F (how far from non-private the fits are).

Settings (``--settings``): ``none`` (no prior: the bound-free route), ``prior`` (a correct
prior: mean_bound = 10·‖μ‖ + 10 about 0, cov_bounds = (λ_min/10, 10·λ_max)), ``tight`` (mean
bound 1.5·‖μ‖, cov_bounds = (0.9·λ_min, 1.1·λ_max)), and ``wide-1e{k}`` (mean_bound = 10^k,
cov_bounds = (λ_min/10, 10·λ_max)). ``--method coinpress`` runs the fits with a prior with
that method instead of ``auto`` (which may prefer the bound-free route to a wide prior).

``--tables NAME ...`` runs the same settings on corpus tables (``benchmarks/corpus.py``)
instead of Gaussian draws: each seed fits a bootstrap resample of the table's rows, with the
prior built from the table's np.mean / np.cov as above (cov_bounds spanning np.cov's spectrum:
a valid prior); there ``alarms`` are not false (real tables are not Gaussian), but
``collapsed`` still counts fits that describe none of the data.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/gaussian_alarms.py \\
        --n 5000 20000 --seeds 100 --out benchmarks/results/gaussian_alarms.md
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time
import warnings
from typing import Any

import numpy as np

import privgauss as pg

DELTA = 1e-6
MISSED_DISTANCE = 10.0  # Mahalanobis distance of the true mean counted as a missed fit


def prior_of(setting: str, mu: np.ndarray, cov: np.ndarray) -> dict[str, Any]:
    """The PrivateGaussian prior keywords of ``setting`` for truth (μ, Σ) (all contain it)."""
    w = np.linalg.eigvalsh(cov)
    norm = float(np.linalg.norm(mu))
    if setting == "none":
        return {}
    if setting == "prior":
        return {"mean_bound": 10 * norm + 10, "cov_bounds": (w[0] / 10, 10 * w[-1])}
    if setting == "tight":
        return {"mean_bound": 1.5 * norm + 1, "cov_bounds": (0.9 * w[0], 1.1 * w[-1])}
    if setting.startswith("wide-1e"):
        return {"mean_bound": 10.0 ** int(setting[7:]), "cov_bounds": (w[0] / 10, w[-1] * 10)}
    raise ValueError(f"unknown setting {setting!r}")


def draw(n: int, d: int, seed: int, args: argparse.Namespace, table: np.ndarray | None
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(rows, μ, Σ): a Gaussian draw, or a bootstrap resample of ``table`` with its
    np.mean / np.cov."""
    rng = np.random.default_rng(10_000 + seed)
    if table is not None:
        X = table[rng.integers(0, table.shape[0], table.shape[0])]
        return X, table.mean(axis=0), np.cov(table, rowvar=False).reshape(table.shape[1], -1)
    u = rng.standard_normal(d)
    mu = args.mean_norm * u / np.linalg.norm(u)
    return pg.datasets.make_gaussian(n, d, mean=mu, condition_number=args.condition,
                                     random_state=rng)


def one(n: int, d: int, setting: str, seed: int, args: argparse.Namespace,
        table: np.ndarray | None = None) -> dict[str, Any]:
    X, mu, cov = draw(n, d, seed, args, table)
    prior = prior_of(setting, mu, cov)
    if "mean_bound" in prior and np.linalg.norm(mu) >= prior["mean_bound"]:
        return {"alarm": False, "failed": "prior excludes the data (not run)", "collapsed": False}
    est = pg.PrivateGaussian(epsilon=args.epsilon, delta=DELTA, random_state=seed,
                             method=args.method if prior else "auto", **prior)
    out: dict[str, Any] = {"alarm": False, "failed": None, "collapsed": False}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            est.fit(X)
        except pg.EstimationFailed as exc:
            out["failed"] = exc.step or "?"
            return out
        except pg.InvalidDataError:  # refused before spending (a public decision)
            out["failed"] = "refused before spending"
            return out
    out["alarm"] = any(issubclass(w.category, pg.warnings.ClippedDataWarning) for w in caught)
    frac = est.clipped_fraction_
    out["clipped"] = float("nan") if frac is None else float(frac)
    at_edge = ("mean_bound" in prior and np.linalg.norm(est.mean_)
               >= prior["mean_bound"] * (1 - 1e-6))
    # the truth's mean far outside the fitted Gaussian (Mahalanobis distance under Σ̂): the
    # release describes none of the data, whatever the clipped count says
    off = np.linalg.solve(np.linalg.cholesky(est.covariance_), est.mean_ - mu)
    out["collapsed"] = bool(at_edge or (frac is not None and frac > 0.5)
                            or float(np.linalg.norm(off)) > MISSED_DISTANCE)
    ref = np.linalg.norm(np.cov(X, rowvar=False) - cov)
    out["ratio"] = float(np.linalg.norm(est.covariance_ - cov) / ref)
    out["method"] = est.method_
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, nargs="+", default=[5000, 20000])
    p.add_argument("--d", type=int, default=10)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--condition", type=float, default=100.0)
    p.add_argument("--mean-norm", type=float, default=10.0)
    p.add_argument("--seeds", type=int, default=100)
    p.add_argument("--settings", nargs="+", default=["none", "prior", "tight"])
    p.add_argument("--tables", nargs="+", default=None)
    p.add_argument("--method", default="auto", help="method of the fits with a prior")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    cases: list[tuple[str, int, int, np.ndarray | None]]
    if args.tables:
        sys.path.insert(0, __file__.rsplit("/", 1)[0])
        import corpus

        cases = []
        for name in args.tables:
            T = np.asarray(corpus.load(name), dtype=np.float64)
            cases.append((name, T.shape[0], T.shape[1], T))
    else:
        cases = [(str(n), n, args.d, None) for n in args.n]
    what = ("corpus tables (bootstrap resamples)" if args.tables else "Gaussian data")
    data = ("" if args.tables else f"d = {args.d}, condition {args.condition:g}, "
            f"‖μ‖ = {args.mean_norm:g}, ")
    lines = [
        f"# ClippedDataWarning alarms and collapses on {what}",
        "",
        f"Command: `OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src python "
        f"benchmarks/gaussian_alarms.py {shlex.join(sys.argv[1:])}`",
        "",
        f"{data}ε = {args.epsilon:g}, δ = {DELTA:g}; fits with a prior use method="
        f"{args.method!r}; {args.seeds} seeds per row (see the script's docstring).",
        "",
        "| data | setting | method | alarms | failed | collapsed | clipped median / max | "
        "cov ratio (median) | s/fit |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, n, d, table in cases:
        for setting in args.settings:
            t0 = time.perf_counter()
            rows = [one(n, d, setting, s, args, table) for s in range(args.seeds)]
            secs = (time.perf_counter() - t0) / args.seeds
            ok = [r for r in rows if r["failed"] is None]
            fails: dict[str, int] = {}
            for r in rows:
                if r["failed"] is not None:
                    fails[r["failed"]] = fails.get(r["failed"], 0) + 1
            clipped = [r["clipped"] for r in ok if r["clipped"] == r["clipped"]]
            methods = sorted({r["method"] for r in ok})
            line = (f"| {label} | {setting} | {', '.join(methods) or '—'} | "
                    f"{sum(r['alarm'] for r in ok)}/{len(rows)} | "
                    f"{sum(fails.values())}/{len(rows)}"
                    + (" (" + ", ".join(f"{k}: {v}" for k, v in fails.items()) + ")"
                       if fails else "")
                    + f" | {sum(r['collapsed'] for r in ok)}/{len(rows)} | "
                    + (f"{statistics.median(clipped):.3f} / {max(clipped):.3f}" if clipped
                       else "—")
                    + f" | {statistics.median(r['ratio'] for r in ok):.2f} | {secs:.2f} |"
                    if ok else f"| {label} | {setting} | — | — | {len(rows)}/{len(rows)} | — | — "
                    "| — | — |")
            print(line, flush=True)
            lines.append(line)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
