"""Snapshot of seeded mixture fits, to check that a change leaves results and ledgers unchanged.

Fits ``PrivateGaussianMixture(method=m, random_state=0)`` for em (ε-δ and ρ, with and without
public rows or a prior), kssu, sample-aggregate, pegme, public-heavy and public-light (ρ and
ε-δ), ppe and agnostic (k = 1 and k = 2, one producer and both), on synthetic mixtures, and
stores each fit's weights, means, covariances, method, fit_info_ keys and ledger (every entry
with its parts), or its exception. With a reference snapshot it prints every fit that differs.

    python benchmarks/mixture_snapshot.py before.pkl            # on the old code
    python benchmarks/mixture_snapshot.py after.pkl before.pkl  # on the new code: compare
"""

from __future__ import annotations

import pickle
import sys
import time
import warnings
from typing import Any

import numpy as np

import privgauss as pg

RHO = {"rho": 0.5}
APPROX = {"epsilon": 1.0, "delta": 1e-6}
BIG = {"epsilon": 5.0, "delta": 1e-6}
PRIOR = {"mean_bound": 50.0, "cov_bounds": (0.01, 100.0)}

# (name, method, parameters, n, d, k, public rows)
CASES: list[tuple[str, str, dict[str, Any], int, int, int, int]] = [
    ("em-approx", "em", APPROX, 6000, 2, 2, 0),
    ("em-rho-public", "em", RHO, 6000, 2, 2, 10),
    ("em-approx-prior", "em", {**APPROX, **PRIOR}, 6000, 2, 2, 0),
    ("em-rho-prior", "em", {**RHO, **PRIOR}, 6000, 2, 2, 0),
    ("em-approx-public", "em", APPROX, 6000, 2, 2, 10),
    ("em-steps", "em", {"epsilon": 1e4, "delta": 1e-6, "method_params": {"n_steps": 12}},
     6000, 2, 2, 0),
    ("auto-em", "auto", APPROX, 6000, 2, 3, 0),
    ("kssu", "kssu", {**BIG, "method_params": {"max_points": 2000}}, 19_000, 2, 2, 0),
    ("sample-aggregate", "sample-aggregate", BIG, 19_000, 2, 2, 0),
    ("pegme", "pegme", {**BIG, "method_params": {"max_points": 2000}}, 19_000, 2, 2, 0),
    ("public-heavy-rho", "public-heavy", RHO, 19_000, 2, 2, 200),
    ("public-heavy-approx", "public-heavy", BIG, 19_000, 2, 2, 200),
    ("public-heavy-theory", "public-heavy", {**RHO, "constants": "theory"}, 19_000, 2, 2, 200),
    ("public-light-rho", "public-light", RHO, 19_000, 2, 2, 40),
    ("public-light-approx", "public-light", BIG, 19_000, 2, 2, 40),
    ("ppe-k1", "ppe", BIG, 40_000, 1, 1, 0),
    ("agnostic-k1", "agnostic", BIG, 40_000, 1, 1, 0),
    ("agnostic-k2-one-producer", "agnostic", BIG, 19_000, 2, 2, 0),
    ("agnostic-k2-two-producers", "agnostic", BIG, 80_000, 1, 2, 0),
    # producers that fail (too few rows for them; requirements not enforced)
    ("agnostic-k2-failing", "agnostic", BIG, 3000, 2, 2, 0),
    ("agnostic-k1-failing", "agnostic", {"epsilon": 0.5, "delta": 1e-6}, 4000, 2, 1, 0),
    ("kssu-failing", "kssu", {**BIG, "method_params": {"max_points": 2000}}, 3000, 2, 2, 0),
]


def _entry(e: Any) -> Any:
    return (e.to_dict(), [_entry(p) for p in e.parts])


def snapshot(only: set[str] | None = None) -> dict[str, dict[str, Any]]:
    warnings.simplefilter("ignore")
    out: dict[str, dict[str, Any]] = {}
    for name, method, params, n, d, k, m in CASES:
        if only and name not in only:
            continue
        X = pg.datasets.make_mixture(n + m, k, d, separation=8.0, random_state=12).X
        P, X = (X[:m], X[m:]) if m else (None, X)
        acct = pg.Accountant(pg.privacy.make_budget(
            rho=params.get("rho"), epsilon=params.get("epsilon"), delta=params.get("delta")))
        est = pg.PrivateGaussianMixture(k, method=method, random_state=0, accountant=acct,
                                        enforce_requirements=False, **params)
        t = time.perf_counter()
        try:
            est.fit(X, public_X=P)
            rec = dict(weights=est.weights_, means=est.means_, covs=est.covariances_,
                       method=est.method_, reason=est.method_reason_,
                       info=sorted(est.fit_info_))
        except Exception as exc:  # noqa: BLE001 - a failure is part of the snapshot
            rec = dict(err=f"{type(exc).__name__}: {exc}")
        rec["ledger"] = [_entry(e) for e in acct.ledger]
        out[name] = rec
        print(f"{name}: {time.perf_counter() - t:.1f} s, {len(acct.ledger)} entries,",
              rec.get("err", rec.get("method")), flush=True)
    return out


def compare(new: dict[str, dict[str, Any]], ref: dict[str, dict[str, Any]]) -> int:
    differ = 0
    for key, a in ref.items():
        if key not in new:
            continue
        b = new[key]
        same_out = (a.get("err") == b.get("err") and a.get("method") == b.get("method")
                    and a.get("reason") == b.get("reason") and a.get("info") == b.get("info")
                    and all(np.array_equal(a[f], b[f]) for f in ("weights", "means", "covs")
                            if f in a or f in b))
        same_ledger = a["ledger"] == b["ledger"]
        if same_out and same_ledger:
            print(f"{key}: identical")
            continue
        differ += 1
        print(f"{key}: DIFFERS (outputs same: {same_out}, ledger same: {same_ledger})")
        if not same_ledger:
            sa = [e[0]["step"] for e in a["ledger"]]
            sb = [e[0]["step"] for e in b["ledger"]]
            print("   before:", sa)
            print("   after: ", sb)
    return differ


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):  # -h/--help: no file named so
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 else 2)
    path = sys.argv[1]
    only = set(sys.argv[3].split(",")) if len(sys.argv) > 3 else None
    snap = snapshot(only)
    with open(path, "wb") as f:
        pickle.dump(snap, f)
    if len(sys.argv) > 2 and sys.argv[2] != "-":
        with open(sys.argv[2], "rb") as f:
            ref = pickle.load(f)
        print(f"{compare(snap, ref)} of {len(snap)} fits differ")
