"""Snapshot of seeded releases, to check that a change leaves results and ledgers unchanged.

Fits ``PrivateGaussian(epsilon=e, delta=1e-6, random_state=s)`` (default bound-free method) on
Gaussian rows (n from 5e3 to 1e6, d = 10 and 50) and on eight corpus tables, at ε = 1 (seeds
0, 1, 2) and ε = 1e4 (seed 0), and stores each fit's mean, covariance, DP clipped fraction,
method and ledger (or its exception). With a reference snapshot it prints every fit that
differs and the largest difference (mean in units of the released standard deviations,
covariance relative to its largest entry).

    python benchmarks/release_snapshot.py before.pkl            # on the old code
    python benchmarks/release_snapshot.py after.pkl before.pkl  # on the new code: compare
"""

from __future__ import annotations

import pickle
import sys
import warnings
from pathlib import Path

import numpy as np

import privgauss as pg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import load  # noqa: E402

TABLES = ["diamonds", "china_pixels", "randhie", "fair", "mhtdata", "insteval", "rwm5yr",
          "bundesliga"]


def _cases() -> list[tuple[str, np.ndarray]]:
    cases = []
    rng = np.random.default_rng(123)
    for n, d in [(10**6, 10), (10**5, 10), (10**5, 50), (20000, 10), (5000, 10)]:
        A = rng.standard_normal((d, d))
        S = A @ A.T / d + 0.5 * np.eye(d)
        mu = rng.standard_normal(d) * 10
        cases.append((f"gauss{n}x{d}", rng.multivariate_normal(mu, S, size=n)))
    cases += [(t, np.array(load(t))) for t in TABLES]
    return cases


def snapshot() -> dict[tuple[str, float, int], dict]:
    warnings.simplefilter("ignore")
    out: dict[tuple[str, float, int], dict] = {}
    for name, X in _cases():
        for eps, seeds in ((1.0, (0, 1, 2)), (1e4, (0,))):
            for seed in seeds:
                try:
                    g = pg.PrivateGaussian(epsilon=eps, delta=1e-6, random_state=seed).fit(X)
                    out[(name, eps, seed)] = dict(
                        mean=g.mean_, cov=g.covariance_, cf=g.clipped_fraction_,
                        method=g.method_,
                        ledger=[(e.to_dict(), [p.to_dict() for p in e.parts])
                                for e in g.ledger_])
                except Exception as e:  # noqa: BLE001 - a failure is part of the snapshot
                    out[(name, eps, seed)] = dict(err=f"{type(e).__name__}: {e}")
    return out


def compare(new: dict, ref: dict) -> None:
    worst, same = 0.0, 0
    for k, a in ref.items():
        b = new[k]
        if "err" in a or "err" in b:
            if a.get("err") == b.get("err"):
                same += 1
            else:
                print(k, "outcome differs:", a.get("err", "fit"), "|", b.get("err", "fit"))
            continue
        dm = float(np.max(np.abs(a["mean"] - b["mean"]) / (np.sqrt(np.diag(a["cov"])) + 1e-300)))
        dc = float(np.max(np.abs(a["cov"] - b["cov"])) / np.max(np.abs(a["cov"])))
        worst = max(worst, dm, dc)
        if dm == 0 and dc == 0 and a["ledger"] == b["ledger"] and a["cf"] == b["cf"] \
                and a["method"] == b["method"]:
            same += 1
            continue
        print(k, f"mean {dm:.2e} cov {dc:.2e} clipped fraction {a['cf']} -> {b['cf']} "
                 f"ledger same: {a['ledger'] == b['ledger']}")
    print(f"identical: {same} of {len(ref)} fits; largest difference {worst:.2e}")


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):  # -h/--help: no file named so
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 else 2)
    snap = snapshot()
    Path(sys.argv[1]).write_bytes(pickle.dumps(snap))
    if len(sys.argv) > 2:
        compare(snap, pickle.loads(Path(sys.argv[2]).read_bytes()))
