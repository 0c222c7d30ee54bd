"""Private EM on generated tables with the defects of real ones (issue 27: "a mixture on any
data"; no fit fails after spending, none is returned far below one Gaussian unwarned).

Tables: ``gaussian_error_tail.mixed_table(seed)`` — 3–9 columns of random kinds (Gaussian,
lognormal, 0/1 flags, Likert answers, Poisson counts, zero-inflated lognormal, Beta shares)
tied by a Gaussian copula, random scales and shifts, n = 2,000–8,000, a third with 0.1 %
gross errors (one cell × 1e3). None of them was looked at while tuning em. Each table is split
80/20 (``real_corpus.split``, seed 0); ``PrivateGaussianMixture(k, epsilon=ε, delta=1e-6,
random_state=s)`` is fitted to the training rows with ``--seeds`` noise seeds and scored on the
held-out rows against scikit-learn's ``GaussianMixture(k, reg_covar=1e-6)`` (best of 2 inits,
held out) and the non-private Gaussian N(np.mean, np.cov) of the training rows.

Per table and arm: fits refused before spending, failed after spending, the median and worst
gap to scikit-learn and to the Gaussian (nat/row; positive: ours is worse), the number of fits
worse than the Gaussian by more than 0.1 and by more than 1 nat/row, how many of those warn
(a :class:`~privgauss.warnings.NoisyFitWarning` or ``ClippedDataWarning``), and the median
fit time. On discrete-heavy tables scikit-learn parks components on single values and gains
10+ nat/row held out; the issue's goal there is "never worse than a single non-private
Gaussian". ``--arms "A;B"``: each arm a comma-separated list of ``MODULE.NAME=VALUE``
settings of a ``privgauss`` module constant (e.g. ``gaussian.histogram_ties.WIDE_FAR=0``;
"" the code as it is), alternated per table on the same draws.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/em_mixed_tables.py --families 1300-1399 --seeds 2 \\
        --arms "gaussian.histogram_ties.WIDE_FAR=0;" --out em_mixed.md
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings

import numpy as np
from sklearn.mixture import GaussianMixture

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gaussian_error_tail import _apply as _apply_under  # noqa: E402
from gaussian_error_tail import _restore as _restore  # noqa: E402
from gaussian_error_tail import mixed_table, report  # noqa: E402
from real_corpus import _loglik, split  # noqa: E402

import privgauss as pg  # noqa: E402
from privgauss.exceptions import EstimationFailed, InvalidDataError  # noqa: E402

ALARMS = ("NoisyFitWarning", "ClippedDataWarning")


def _apply(arm: str) -> dict[tuple[object, str], object]:
    """Set an arm's ``privgauss`` module constants; return the old values."""
    return _apply_under(arm, "privgauss")


def table_row(X: np.ndarray, test: np.ndarray, k: int, eps: float, seeds: int, arm: str,
              sk: float, gauss: float) -> str:
    """One arm's cells for one table (the markdown row's tail)."""
    old = _apply(arm)
    try:
        gaps, ggaps, alarms, times, failed = [], [], [], [], 0
        for s in range(seeds):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                t0 = time.perf_counter()
                try:
                    m = pg.PrivateGaussianMixture(k, epsilon=eps, delta=1e-6,
                                                  random_state=s).fit(X)
                except InvalidDataError:
                    return "refused | | | | | | | |"
                except EstimationFailed:
                    failed += 1
                    continue
                times.append(time.perf_counter() - t0)
            score = float(m.score(test))
            gaps.append(sk - score)
            ggaps.append(gauss - score)
            alarms.append(any(type(w.message).__name__ in ALARMS for w in caught))
    finally:
        _restore(old)
    if not gaps:
        return f"0 | {failed} | | | | | | |"
    worse = [g > 0.1 for g in ggaps]
    far = [g > 1.0 for g in ggaps]
    warned = sum(a for a, f in zip(alarms, far, strict=True) if f)
    return (f"{len(gaps)} | {failed} | {statistics.median(gaps):.3f} | {max(gaps):.3f} | "
            f"{statistics.median(ggaps):.3f} | {max(ggaps):.3f} | {sum(worse)} | "
            f"{sum(far)} ({warned} warned) | {statistics.median(times):.2f}")


def _seeds(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b) + 1)) if b else [int(a)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", required=True, help="mixed_table seeds: 1300-1399,1500")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--arms", default="", help='"A;B": arms, each NAME=VALUE,... ("" = as is)')
    ap.add_argument("--out")
    args = ap.parse_args()
    arms = args.arms.split(";")
    lines = ["| table | n×d | arm | fitted | failed | median gap to sklearn | worst | "
             "median gap to Gaussian | worst | worse than Gaussian by > 0.1 | by > 1 | "
             "median s |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for fam in _seeds(args.families):
        rows, kind = mixed_table(fam)
        X, test, _, _ = split(rows, 0, rows.shape[0])
        mu, S = X.mean(axis=0), np.cov(X, rowvar=False)
        gauss = float(_loglik(test, mu, S).mean())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sk = max(float(GaussianMixture(args.k, reg_covar=1e-6, random_state=r).fit(X)
                           .score(test)) for r in range(2))
        for arm in arms:
            cells = table_row(X, test, args.k, args.epsilon, args.seeds, arm, sk, gauss)
            line = (f"| family {fam} ({kind}) | {X.shape[0]}×{X.shape[1]} | {arm or 'as is'} | "
                    f"{cells} |")
            lines.append(line)
            print(line, file=sys.stderr, flush=True)
    report(f"# Private EM (k = {args.k}, ε = {args.epsilon:g}) on generated mixed tables",
           "em_mixed_tables.py", lines, args.out)


if __name__ == "__main__":
    main()
