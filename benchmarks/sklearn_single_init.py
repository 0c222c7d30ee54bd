"""Issue 27's yardstick, for scale: how often scikit-learn's own ``GaussianMixture`` with its
default single k-means init (``n_init = 1``) lands in a wrong basin on the generated families,
against the same reference as private EM's gaps (scikit-learn's best of 5, from
:mod:`mixture_families`' cache or computed), at n = 5e4, held-out rows as there.

    python benchmarks/sklearn_single_init.py --seeds 12844-12963 --inits 1-5 --sklearn-cache C.json

Prints each family's single-init gaps and the count above 0.05 (the benchmarks' "wrong"). The
inits' random states should not include 0, which is part of the reference.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.mixture import GaussianMixture

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mixture_families as mf  # noqa: E402

N = 50_000
WRONG = 0.05


def _range(text: str) -> list[int]:
    lo, _, hi = text.partition("-")
    return list(range(int(lo), int(hi or lo) + 1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", required=True, help="family seeds, LO-HI (inclusive)")
    ap.add_argument("--inits", default="1-5", help="scikit-learn random states, LO-HI")
    ap.add_argument("--sklearn-cache", default=None, metavar="JSON")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    gaps: list[float] = []
    for s in _range(args.seeds):
        fam = mf.family(s)
        rng = np.random.default_rng([fam.seed, 1])  # mixture_families.run_family's draws
        X, H = fam.sample(N, rng), fam.sample(20_000, rng)
        best = mf._reference(fam, N, X, H, args.sklearn_cache)["best"]
        row = [best - GaussianMixture(fam.k, random_state=r).fit(X).score(H)
               for r in _range(args.inits)]
        gaps += row
        print(s, fam.describe(), " ".join(f"{g:.4f}" for g in row), flush=True)
    wrong = sum(g > WRONG for g in gaps)
    print(f"scikit-learn n_init=1: wrong {wrong}/{len(gaps)} ({100 * wrong / len(gaps):.1f} %), "
          f"median gap {statistics.median(gaps):.4f}")


if __name__ == "__main__":
    main()
