"""How far sklearn's tied / diagonal k-mixtures are from its full one on the corpus tables
(non-private, held out), beside private EM's predicted noise cost (issue 27, brief TIEDPLAN).

Same tables, column drops and splits as ``mixture_corpus.py`` / ``real_mixtures.py``: per table
and split seed, ``GaussianMixture(k, covariance_type=..., n_init=5)`` on the training rows,
held-out mean log-likelihood; columns = full's minus each (> 0: that type is worse), and
``private_em.noise_cost`` of the full plan (ε = 1, δ = 1e-6, without and with 1 % public rows)
and what the same last step would cost releasing one pooled (tied) second moment
(:func:`tied_cost`); and the default plan's release floors (``private_em._release_floor``: the
released count under which a step leaves a component's estimate as it was) in its first
exploring step, its first refining step after the run pick and its last step, beside n/k.
"diag-w": diagonal covariances in the whitened frame of the training rows' own covariance
(the frame private EM works in; its Jacobian added back).

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/tied_gap.py --seeds 2 --tables Benefits immi1 ...
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mixture_corpus as mc  # noqa: E402
import real_mixtures as rm  # noqa: E402
from real_corpus import DELTA, split  # noqa: E402

import privgauss as pg  # noqa: E402
from privgauss.mixture import private_em as pe  # noqa: E402
from privgauss.mixture.private_em import noise_cost  # noqa: E402
from privgauss.sensitivity import (  # noqa: E402
    soft_counts_l2,
    soft_outer_sums_frobenius,
    soft_sums_l2,
)


def tied_cost(n: int, d: int, k: int, budget: pg.ApproxDP, n_public: int = 0) -> float:
    """``noise_cost``'s per-row figure (:func:`private_em._noise_change` of the default plan's
    last step, at a radius ≥ r₀) for a step that releases one pooled second moment instead
    of k: its noise on the shared covariance divided by n instead of n/k; means and weights
    as before."""
    plan = pe.em_plan(n, d, k, budget, n_public=n_public)
    t = plan.n_steps - 1
    r = max(plan.step_radius(t), pe.clip_radius(n, d))
    rc, rs, rm = plan.stat_rhos(t)
    s_n = soft_counts_l2() / math.sqrt(2.0 * rc) / n
    s_s = soft_sums_l2(r) / math.sqrt(2.0 * rs) / (n / k)
    s_m = soft_outer_sums_frobenius(r) / math.sqrt(2.0 * rm) / n
    return 0.5 * d * s_s**2 + d * (d + 1) / 8.0 * s_m**2 + 0.5 * k * k * s_n**2


def scores(train: np.ndarray, test: np.ndarray, k: int, seed: int) -> dict[str, float]:
    from sklearn.mixture import GaussianMixture

    out = {}
    for kind in ("full", "tied", "diag"):
        gm = GaussianMixture(k, covariance_type=kind, n_init=5, random_state=seed).fit(train)
        out[kind] = float(gm.score(test))
    m = train.mean(axis=0)
    C = np.cov(train, rowvar=False)
    lam, U = np.linalg.eigh(C)
    W = U / np.sqrt(lam)
    gm = GaussianMixture(k, covariance_type="diag", n_init=5, random_state=seed).fit(
        (train - m) @ W)
    out["diag-w"] = float(gm.score((test - m) @ W)) - 0.5 * float(np.sum(np.log(lam)))
    out["gauss"] = float(GaussianMixture(1, covariance_type="full").fit(train).score(test))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tables", nargs="+", required=True)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--k", type=int, default=3)
    args = ap.parse_args()
    mc.fresh_tables(2000, 10)
    for name in args.tables:
        if name not in mc.corpus.TABLES:
            mc.corpus.TABLES[name] = mc.corpus.Table(name, f"pydataset {name}", "seen", False,
                                                     mc.corpus._pydataset(name))
    print("| table | n×d | seed | full − tied | full − diag | full − diag-w | full − gauss "
          "| noise cost ε=1 | tied noise cost ε=1 | noise cost ε=1, 1% public "
          "| count floors ε=1 (exploring / refining / last step) | n/k |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    budget = pg.ApproxDP(1.0, DELTA)
    for name in args.tables:
        rows, _ = rm.load_rows(name)
        for s in range(args.seeds):
            train, test, private, public = split(rows, s, 20000)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sc = scores(train, test, args.k, s)
            n, d = train.shape
            c0 = noise_cost(n, d, args.k, budget)["per_row"]
            c1 = noise_cost(private.shape[0], d, args.k, budget,
                            n_public=public.shape[0])["per_row"]
            f = sc["full"]
            ct = tied_cost(n, d, args.k, budget)
            plan = pe.em_plan(n, d, args.k, budget)
            T = plan.n_steps
            floors = " / ".join(f"{pe._release_floor(plan, t, n, args.k):.0f}"
                                for t in (0, min(plan.explore_steps + 1, T - 1), T - 1))
            print(f"| {name} | {n}×{d} | {s} | {f - sc['tied']:.3f} | {f - sc['diag']:.3f} | "
                  f"{f - sc['diag-w']:.3f} | {f - sc['gauss']:.3f} | {c0:.3f} | {ct:.3f} | "
                  f"{c1:.3f} | {floors} | {n / args.k:.0f} |",
                  flush=True)


if __name__ == "__main__":
    main()
