"""Issue 27 (lookpick): does a run pick that looks where the runs go fix the plain plans' misses?
(``benchmarks/results/em_small_clusters.md``, "lookpick"; a probe: no ``src`` change.)

Before private EM's run pick (plain three-run plans at ε = 1, n = 5e4), each exploring run's
released model is moved ``--iters`` EM steps on a free DP summary — post-processing only:

* ``cells``: the start histogram's released cells (the noisy counts above the start's
  threshold, each cell a Gaussian blob at its centre with its own spread width²/12 along the
  grid's directions and unit variance along the others: the blobs ``frame_starts`` reads);
* ``runs``: the exploring runs' own last released models pooled (every run's components as
  blobs of n·w_j/C rows).

and then either the pick scores the moved models while the current ones continue (``score``),
or the moved models replace the runs, are scored and the winner continues (``move``). The
moving is the grouped-data EM of :func:`~privgauss.mixture.em_starts.summary_gmm` started from
the run. Variants are named ``main`` or ``MODE-SUMMARY-ITERS`` (``score-cells-10``). The fit's
functions are wrapped (the same releases, charges and noise draws: the pick is a joint release
of C clipped sums either way, sensitivity 2b√C).

    python benchmarks/em_look_ahead.py --seeds 2516,2568,2533,1416 --noise 0,1,2 \\
        --variants main,score-cells-10,move-cells-10,score-runs-10,move-runs-10
    python benchmarks/em_look_ahead.py --seeds 3700-3759 --low-d --variants main,score-cells-10

``--low-d``: the families of :func:`mixture_families.family` with d = 4 + seed % 3 (the plain
plans' range at ε = 1, n = 5e4). ``--runs``: each exploring run's held-out gap at the pick and
after the move, and what 300 steps of scikit-learn's EM reach from each (the runs' basins).
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mixture_families as mf  # noqa: E402
from em_small_clusters import _mixture, _sklearn_from  # noqa: E402

import privgauss as pg  # noqa: E402
from privgauss.mixture import em_starts as es  # noqa: E402
from privgauss.mixture import private_em as pe  # noqa: E402

N = 50_000
BUDGET = {"epsilon": 1.0, "delta": 1e-6}

Run = tuple[np.ndarray, np.ndarray, np.ndarray]


def cells_summary(cap: dict[str, Any]) -> Run:
    """(rows, centres, covariances) of the start histogram's kept cells, lifted to z."""
    V, width, m = cap["cellkw"]["V"], cap["cellkw"]["width"], cap["cellkw"]["m"]
    d, p = V.shape
    sigma = es.histogram_l2() / math.sqrt(2.0 * cap["rho_init"])
    keep = cap["noisy"] > sigma * max(2.0, math.sqrt(2.0 * math.log(m**p)))
    cells = np.array(np.unravel_index(np.arange(m**p), (m,) * p)).T
    centres = -es.BOX + (cells + 0.5) * width
    seen = V @ V.T
    cov = width**2 / 12.0 * seen + (np.eye(d) - seen)
    return (cap["noisy"][keep], centres[keep] @ V.T,
            np.repeat(cov[None], int(keep.sum()), axis=0))


def runs_summary(runs: list[Run], n: int) -> Run:
    """The runs' components pooled as blobs of n·w_j/C rows."""
    C = len(runs)
    return (np.concatenate([n * r[0] / C for r in runs]), np.concatenate([r[1] for r in runs]),
            np.concatenate([r[2] for r in runs]))


def move(run: Run, summ: Run, iters: int) -> Run:
    """``iters`` grouped-data EM steps on the blobs ``summ`` from ``run``."""
    rows, means, covs = summ
    w, mu, S = run
    eye = np.eye(mu.shape[1])
    for _ in range(iters):
        logp = es._blob_loglik(means, covs, mu, S) + np.log(w)
        resp = np.exp(logp - logp.max(axis=1, keepdims=True))
        resp /= resp.sum(axis=1, keepdims=True)
        tot, mu, S = es._summary_m_step(rows, means, covs, resp)
        S = es.repair_covariance(S, es.EIG_FLOOR) + 1e-6 * eye
        w = np.maximum(tot / tot.sum(), 1e-3)
        w = w / w.sum()
    return w, mu, S


def fit(fam: mf.Family, X: np.ndarray, noise_seed: int, variant: str
        ) -> tuple[Any, dict[str, Any]]:
    """One em fit with the variant's hooks (``main``: read only)."""
    mode, summary, iters = variant.split("-") if variant != "main" else ("main", "", "0")
    cap: dict[str, Any] = {}
    saved = (es.reduce_rows, es.gaussian_mechanism, pe._em_release_runs, pe.pick_run,
             pe._em_steps, pe.transform_rows)
    rr, gm, rel, pick, steps, tr = saved

    def reduce_rows(Z: Any, fn: Any, *a: Any, **kw: Any) -> Any:
        if isinstance(fn, partial) and fn.func is es._cell_kernel:
            cap["cellkw"] = fn.keywords
        return rr(Z, fn, *a, **kw)

    def gaussian_mechanism(x: Any, sens: Any, budget: Any, **kw: Any) -> Any:
        out = gm(x, sens, budget, **kw)
        if kw.get("step", "").endswith("em start histogram"):
            cap["noisy"], cap["rho_init"] = np.array(out), budget.rho
        return out

    def em_steps(Z: Any, runs: Any, plan: Any, *a: Any, **kw: Any) -> Any:
        cap["Z"] = np.asarray(Z)
        return steps(Z, runs, plan, *a, **kw)

    def transform_rows(Y: Any, W: Any, m0: Any) -> Any:
        cap["W"], cap["m0"] = W, m0
        return tr(Y, W, m0)

    def em_release(sts: Any, plan: Any, t: int, release: Any, n: int) -> Any:
        outs = rel(sts, plan, t, release, n)
        if len(sts) > 1 and t == plan.explore_steps - 1:
            summ = cells_summary(cap) if summary == "cells" else runs_summary(outs, n)
            cap["cur"] = outs
            cap["moved"] = [move(o, summ, int(iters)) for o in outs]
            if mode == "move":
                return cap["moved"]
        return outs

    def pick_run(scores: Any, plan: Any, release: Any, regret_cap: float = 0.0) -> int:
        if mode == "score" and "moved" in cap:
            models = tuple((mu, *pe._model_terms(w, S)[1:]) for w, mu, S in cap["moved"])
            scores = pe._em_kernel(cap["Z"], models, plan.step_radius(plan.explore_steps),
                                   bound=regret_cap or plan.score_bound,
                                   regret=regret_cap > 0)[3]
        cap["win"] = pick(scores, plan, release, regret_cap)
        return int(cap["win"])

    es.reduce_rows, es.gaussian_mechanism = reduce_rows, gaussian_mechanism
    pe._em_release_runs, pe.pick_run, pe._em_steps = em_release, pick_run, em_steps
    pe.transform_rows = transform_rows
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = pg.PrivateGaussianMixture(fam.k, method="em", random_state=noise_seed,
                                            **BUDGET).fit(X)
    finally:
        (es.reduce_rows, es.gaussian_mechanism, pe._em_release_runs, pe.pick_run,
         pe._em_steps, pe.transform_rows) = saved
    return est, cap


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", required=True, help="comma-separated, or a range A-B")
    ap.add_argument("--noise", default="0", help="comma-separated noise seeds")
    ap.add_argument("--variants", default="main,score-cells-10,move-cells-10")
    ap.add_argument("--low-d", action="store_true", help="d = 4 + seed % 3")
    ap.add_argument("--runs", action="store_true", help="the runs' gaps and basins at the pick")
    ap.add_argument("--sklearn-cache", default=None, metavar="JSON")
    args = ap.parse_args()
    seeds = mf.parse_seeds(args.seeds)
    variants = args.variants.split(",")
    gaps = []
    for s in seeds:
        fam = mf.family(s, d=4 + s % 3) if args.low_d else mf.family(s)
        rng = np.random.default_rng([fam.seed, 1])
        X, H = fam.sample(N, rng), fam.sample(20_000, rng)
        best = mf._reference(fam, N, X, H, args.sklearn_cache)["best"]
        for q in [int(x) for x in args.noise.split(",")]:
            row = []
            for v in variants:
                est, cap = fit(fam, X, q, v)
                row.append(best - est.score(H))
                if args.runs and v != "main" and "cur" in cap:
                    W, m0 = cap["W"], cap["m0"]
                    ld = float(np.linalg.slogdet(W)[1])
                    Hz = (H - m0) @ W.T

                    def gap(g: Any, ld: float = ld, Hz: np.ndarray = Hz,
                            best: float = best) -> float:
                        return float(best - (g.score(Hz) + ld))

                    for name in ("cur", "moved"):
                        print(f"   {s}/{q} {v} {name}: gap " + " ".join(
                            f"{gap(_mixture(r)):.3f}" for r in cap[name]) + "; sklearn 300: "
                            + " ".join(f"{gap(_sklearn_from(r, 300, cap['Z'])):.3f}"
                                       for r in cap[name]), flush=True)
            gaps.append(row)
            print(f"{s} {fam.describe()} noise {q}: " + "; ".join(
                f"{v} {g:.4f}" for v, g in zip(variants, row, strict=True)), flush=True)
    mf.print_variants(gaps, variants)


if __name__ == "__main__":
    main()
