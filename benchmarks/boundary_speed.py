"""Fit time before and after the one-trust-boundary change (issue 14), in one run.

Runs the same fits with two source trees of privgauss (``--old`` and ``--new``, each a path to a
``src`` directory), alternating, in fresh subprocesses, and prints the median wall time of each
and their ratio. Example (from the repo root, with an old checkout in /tmp/old):

    git worktree add --detach /tmp/old <commit>
    python benchmarks/boundary_speed.py --old /tmp/old/src --new src --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

CASES = {
    "gaussian public, n=1e6 d=20, rho=0.5": """
X = np.random.default_rng(0).normal(size=(1_000_000, 20))
P = np.random.default_rng(1).normal(size=(21, 20))
fit = lambda: pg.PrivateGaussian(rho=0.5, method="public", random_state=0).fit(X, public_X=P)
""",
    "gaussian known covariance (coinpress), n=1e6 d=20": """
X = np.random.default_rng(0).normal(size=(1_000_000, 20)) * 1e-3
fit = lambda: pg.PrivateGaussian(rho=0.5, method="coinpress", covariance=1e-6 * np.eye(20),
                                 mean_bound=1.0, random_state=0).fit(X)
""",
    "gaussian histogram (bound-free), n=2e5 d=10, eps=1 delta=1e-6": """
X = np.random.default_rng(0).normal(size=(200_000, 10))
fit = lambda: pg.PrivateGaussian(epsilon=1.0, delta=1e-6, method="histogram",
                                 random_state=0).fit(X)
""",
    "mixture kssu, n=2e4 d=2 k=2, eps=1 delta=1e-6": """
X = pg.datasets.make_mixture(20_000, 2, 2, separation=8.0, random_state=0).X
fit = lambda: pg.PrivateGaussianMixture(2, epsilon=1.0, delta=1e-6, method="kssu",
                                        enforce_requirements=False, random_state=0).fit(X)
""",
}

RUN = """
import sys, time, warnings
sys.path.insert(0, {src!r})
import numpy as np, privgauss as pg
warnings.simplefilter("ignore")
{setup}
fit()  # warm-up: imports and caches
t = time.perf_counter(); fit(); print(time.perf_counter() - t)
"""


def _time(src: str, setup: str) -> float:
    out = subprocess.run([sys.executable, "-c", RUN.format(src=src, setup=setup)],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", required=True)
    ap.add_argument("--new", required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", default="", help="run the cases whose name contains this text")
    args = ap.parse_args()
    rows = []
    for name, setup in CASES.items():
        if args.only not in name:
            continue
        old, new = [], []
        for _ in range(args.repeats):
            old.append(_time(args.old, setup))
            new.append(_time(args.new, setup))
        o, n = statistics.median(old), statistics.median(new)
        rows.append({"case": name, "old_s": o, "new_s": n, "ratio": n / o})
        print(f"| {name} | {o:.3f} | {n:.3f} | {n / o:.2f} |", flush=True)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
