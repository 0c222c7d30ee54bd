"""Deep tier of the privacy audit suite: every estimator method, every worst-case pair, many runs.

For each Gaussian method of ``privgauss.estimators.gaussian.METHODS`` (configuration chosen as in
``tests/test_audit_suite.py``) and each pair of :func:`privgauss.audit.worst_case_pairs`
(boundary, far outlier, duplicate, partition), audits the released mean and log-variance; for
each mixture method of ``privgauss.estimators.mixture.METHODS`` that fits within the time limit,
audits the sorted component means on a record moved across the partition (and a far outlier).
Also re-runs two mutations with many runs (halved sensitivity on the zCDP clip path; clip radius
from the data on CoinPress). Writes ``benchmarks/results/audit_deep.md``.

    python benchmarks/audit_deep.py               # the committed results
    python benchmarks/audit_deep.py --scale 0.1   # 10x fewer runs, a quick look
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_audit_suite import (  # noqa: E402
    METHODS,
    audit_gaussian_method,
    gaussian_setup,
)

import privgauss as pg  # noqa: E402
from privgauss.audit import (  # noqa: E402
    AuditResult,
    audit_mechanism,
    estimator_mechanism,
    worst_case_pairs,
)
from privgauss.estimators.mixture import METHODS as MIXTURE_METHODS  # noqa: E402
from privgauss.privacy import zcdp_to_epsilon  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "audit_deep.md"
#: runs per dataset at scale 1, by the cost of one fit
GAUSSIAN_RUNS = {"clip": 20_000, "coinpress": 4_000, "public": 4_000, "histogram": 1_000,
                 "hypothesis-selection": 600}
DEFAULT_RUNS, LARGE_N_RUNS = 1_000, 100
MIXTURE_RUNS = 200
MIXTURE_SLOW = 2.0  # seconds per fit above which a mixture method is not audited here
PAIRS = ("boundary", "outlier", "duplicate", "partition")

Row = tuple[str, str, str, AuditResult, float]
DONE: list[Row] = []  # every audit so far, written after each one (an interrupted run keeps it)


def gaussian_rows(scale: float) -> list[Row]:
    rows = []
    for method in METHODS:
        n = gaussian_setup(method)[1]
        runs = GAUSSIAN_RUNS.get(method, DEFAULT_RUNS if n <= 1000 else LARGE_N_RUNS)
        runs = max(100, int(runs * scale))
        stats = ("mean",) if method == "clip" else ("mean", "log-variance")
        pairs = PAIRS if n <= 1000 else ("outlier",)
        for pair in pairs:
            for stat in stats:
                t0 = time.perf_counter()
                res = audit_gaussian_method(method, pair, runs, statistic=stat)
                rows.append((f"PrivateGaussian {method} (n={n})", pair, stat, res,
                             time.perf_counter() - t0))
                _record(rows[-1])
    return rows


def _mixture_mechanism(method: str, public: np.ndarray | None) -> Callable[..., np.ndarray]:
    def make(rng: np.random.Generator) -> pg.PrivateGaussianMixture:
        return pg.PrivateGaussianMixture(
            2, epsilon=2.0, delta=1e-3, method=method, random_state=rng,
            enforce_requirements=False,
        )

    def stat(m: pg.PrivateGaussianMixture) -> np.ndarray:
        return np.sort(m.means_[:, 0])

    return estimator_mechanism(make, stat, 2, public_X=public)


def mixture_rows(scale: float, n: int) -> tuple[list[Row], list[str]]:
    rows: list[Row] = []
    skipped = []
    mix = pg.datasets.make_mixture(n + 200, 2, 1, separation=20.0, random_state=0)
    X, public_all = mix.X[:n], mix.X[n:]
    runs = max(100, int(MIXTURE_RUNS * scale))
    for method, spec in MIXTURE_METHODS.items():
        public = public_all if spec.uses_public else None
        mech = _mixture_mechanism(method, public)
        t0 = time.perf_counter()
        mech(X, np.random.default_rng(0))
        per_fit = time.perf_counter() - t0
        if per_fit > MIXTURE_SLOW:
            skipped.append(f"{method} ({per_fit:.1f} s per fit at n={n})")
            continue
        pairs = worst_case_pairs(X, radius=float(np.abs(X).max()))
        for pair in ("partition", "outlier"):
            data, neighbour = pairs[pair]
            t0 = time.perf_counter()
            res = audit_mechanism(mech, data, neighbour, epsilon=2.0, delta=1e-3, n_runs=runs)
            rows.append((f"PrivateGaussianMixture {method} (n={n})", pair, "sorted means", res,
                         time.perf_counter() - t0))
            _record(rows[-1])
    return rows, skipped


def mutation_rows(scale: float) -> list[Row]:
    """Two mutations audited with many runs: they must be flagged."""
    from privgauss import linalg
    from privgauss.gaussian import clip_mean as clip_mean_module
    from privgauss.linalg import clip_rows

    rows: list[Row] = []
    original_l2 = clip_mean_module.clipped_mean_l2
    X = np.random.default_rng(0).normal(size=(12, 1))
    rho = 0.05
    claimed = zcdp_to_epsilon(rho, 1e-3)

    def clip_make(rng: np.random.Generator) -> pg.PrivateGaussian:
        return pg.PrivateGaussian(rho=rho, method="clip", covariance="identity", mean_bound=4.0,
                                  random_state=rng)

    data, neighbour = worst_case_pairs(X, radius=20.0)["boundary"]
    mech = estimator_mechanism(clip_make, lambda g: g.mean_[0], 1)
    runs = max(1000, int(100_000 * scale))
    for label, patch in (("real", original_l2), ("halved L2 sensitivity",
                                                 lambda r, n: original_l2(r, n) / 2)):
        clip_mean_module.clipped_mean_l2 = patch
        try:
            t0 = time.perf_counter()
            res = audit_mechanism(mech, data, neighbour, epsilon=claimed, delta=1e-3,
                                  n_runs=runs)
        finally:
            clip_mean_module.clipped_mean_l2 = original_l2
        rows.append((f"mutation: clip zCDP, {label}", "boundary", "mean", res,
                     time.perf_counter() - t0))
        _record(rows[-1])

    def radius_from_data(rows_: Any, center: Any, radius: float) -> Any:
        norms = np.linalg.norm(np.asarray(rows_) - np.asarray(center), axis=1)
        return clip_rows(rows_, center, max(radius, float(norms.max())))

    Xc = np.random.default_rng(1).normal(size=(50, 1))
    data, neighbour = worst_case_pairs(Xc, radius=4.0)["outlier"]

    def cp_make(rng: np.random.Generator) -> pg.PrivateGaussian:
        return pg.PrivateGaussian(rho=rho, mean_bound=4.0, cov_bounds=(0.25, 4.0),
                                  method="coinpress", random_state=rng)

    mech = estimator_mechanism(cp_make, lambda g: g.mean_[0], 1)
    runs = max(200, int(4000 * scale))
    for label in ("real", "radius from data"):
        if label != "real":
            linalg.clip_rows = radius_from_data
        try:
            t0 = time.perf_counter()
            res = audit_mechanism(mech, data, neighbour, epsilon=claimed, delta=1e-3,
                                  n_runs=runs)
        finally:
            linalg.clip_rows = clip_rows
        rows.append((f"mutation: coinpress, {label}", "outlier", "mean", res,
                     time.perf_counter() - t0))
        _record(rows[-1])
    return rows


def _record(row: Row) -> None:
    DONE.append(row)
    print(row[0], row[1], row[2], row[3], flush=True)
    write(DONE, SKIPPED, ARGS, time.perf_counter() - START, done=False)


SKIPPED: list[str] = []
ARGS: Any = None
START = time.perf_counter()


def main() -> None:
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every run count")
    parser.add_argument("--mixture-n", type=int, default=2000)
    parser.add_argument("--skip-mixtures", action="store_true")
    parser.add_argument("--parts", default="mutations,gaussian,mixtures",
                        help="comma-separated parts to run")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results file (markdown)")
    args = ARGS = parser.parse_args()
    t0 = time.perf_counter()
    parts = args.parts.split(",")
    rows = mutation_rows(args.scale) if "mutations" in parts else []
    rows += gaussian_rows(args.scale) if "gaussian" in parts else []
    skipped: list[str] = []
    if not args.skip_mixtures and "mixtures" in parts:
        more, skipped = mixture_rows(args.scale, args.mixture_n)
        SKIPPED.extend(skipped)
        rows += more
    write(rows, skipped, args, time.perf_counter() - t0, done=True)


def write(rows: list[Row], skipped: list[str], args: Any, total: float, done: bool) -> None:
    cmd = "nice -n 10 python benchmarks/audit_deep.py" + (
        f" --scale {args.scale:g}" if args.scale != 1 else ""
    ) + (" --skip-mixtures" if args.skip_mixtures else "") + (
        f" --parts {args.parts}" if args.parts != "mutations,gaussian,mixtures" else ""
    ) + (f" --out {args.out}" if args.out != RESULTS else "")
    lines = [
        "# Privacy audit, deep tier",
        "",
        f"Command: `{cmd}`; privgauss {pg.__version__}, numpy {np.__version__}, Python "
        f"{platform.python_version()}; {total / 60:.1f} min on a shared 2-core machine.",
        "",
        "Each row: `privgauss.audit.audit_mechanism` on one replace-one pair, fast seeded noise, "
        "audit seed 0; the bound is a 99.9%-confidence lower bound on the mechanism's epsilon at "
        "the claimed delta and must not exceed the claimed epsilon (zCDP budgets: claimed "
        "epsilon = the tight conversion at delta). The statistic is `[failed, value]`, so a "
        "failure (EstimationFailed) is an audited output too. Mutation rows must FAIL.",
        "",
        "| target | pair | statistic | runs/dataset | epsilon lower bound | claimed epsilon | "
        "delta | verdict | seconds |",
        "|---|---|---|---:|---:|---:|---:|---|---:|",
    ]
    for target, pair, stat, res, secs in rows:
        verdict = "pass" if res.passed else "FAIL"
        lines.append(
            f"| {target} | {pair} | {stat} | {res.n_runs} | {res.epsilon_lower_bound:.3f} | "
            f"{res.claimed_epsilon:.3f} | {res.delta:g} | {verdict} | {secs:.0f} |"
        )
    real = [r for r in rows if not r[0].startswith("mutation") or r[0].endswith("real")]
    broken = [r for r in rows if r[0].startswith("mutation") and not r[0].endswith("real")]
    lines += [
        "",
        f"Real code: {sum(not r[3].passed for r in real)} violations in {len(real)} audits. "
        f"Mutations flagged: {sum(not r[3].passed for r in broken)} of {len(broken)}."
        + ("" if done else " (run interrupted: rows not listed were not run)"),
    ]
    if skipped:
        lines += ["", "Not audited here (too slow per fit): " + "; ".join(skipped) + "."]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    from privgauss.progress import on_terminal

    with on_terminal():  # a status line naming the current release, on a terminal
        main()
