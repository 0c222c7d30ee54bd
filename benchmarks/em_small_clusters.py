"""Issue 27, small clusters at ε = 1 (``benchmarks/results/em_small_clusters.md``): private EM's
gap on chosen generated families (:mod:`mixture_families`) and noise seeds, with
``private_em`` constants set from the command line (experiment switches, not estimator
options), and a per-step trace of which true clusters the fit resolves.

    python benchmarks/em_small_clusters.py --seeds 1124,1126 --noise 0,1,2 FADE_LEVEL=1.0
    python benchmarks/em_small_clusters.py --seeds 1161 --trace

A true cluster is *resolved* by a model when one component holds more than half of its rows
and they are more than half of that component's (hard assignment of the training rows in the
whitened frame, by the true labels). The trace wraps ``_em_release`` and ``reduce_run``
(reading the rows and the released models, changing nothing).
"""

from __future__ import annotations

import argparse
import math
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mixture_families as mf  # noqa: E402

import privgauss as pg  # noqa: E402
from privgauss.mixture import private_em as pe  # noqa: E402

N = 50_000
BUDGET = {"epsilon": 1.0, "delta": 1e-6}


def sample_labelled(fam: mf.Family, n: int, rng: np.random.Generator
                    ) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`mixture_families.Family.sample` (the same draws) with the true labels."""
    lab = rng.choice(fam.k, size=n, p=fam.weights)
    X = fam.means[lab] + np.einsum("nij,nj->ni", fam.roots[lab],
                                   rng.standard_normal((n, fam.d)))
    return X, lab


def resolved(Z: np.ndarray, run: Any, lab: np.ndarray, k: int) -> list[tuple[int, float, float]]:
    """Per true cluster: (its main component, the share of its rows there, their share of
    that component's rows)."""
    w, mu, S = run
    lp = np.empty((Z.shape[0], len(w)))
    for c in range(len(w)):
        L = np.linalg.cholesky(S[c])
        Y = np.linalg.solve(L, (Z - mu[c]).T)
        lp[:, c] = math.log(max(float(w[c]), 1e-300)) - 0.5 * (Y * Y).sum(0) \
            - np.log(np.diag(L)).sum()
    T = np.zeros((k, len(w)))
    np.add.at(T, (lab, lp.argmax(1)), 1.0)
    out = []
    for j in range(k):
        c = int(T[j].argmax())
        out.append((c, T[j, c] / T[j].sum(), T[j, c] / max(T[:, c].sum(), 1.0)))
    return out


def trace(seed: int, noise_seed: int) -> None:
    fam = mf.family(seed)
    X, lab = sample_labelled(fam, N, np.random.default_rng([fam.seed, 1]))
    rows: dict[str, Any] = {}
    log: list[tuple[str, Any, np.ndarray | None]] = []
    steps, rel, red = pe._em_steps, pe._em_release, pe.reduce_run

    def em_steps(Z: Any, runs: list[Any], plan: Any, *a: Any, **kw: Any) -> Any:
        rows["Z"], rows["plan"] = np.asarray(Z), plan
        return steps(Z, runs, plan, *a, **kw)

    def em_release(stats: Any, run: Any, L: Any, plan: Any, t: int, release: Any, n: int,
                   run_tag: str = "", *a: Any, **kw: Any) -> Any:
        out = rel(stats, run, L, plan, t, release, n, run_tag, *a, **kw)
        if not run_tag:  # the picked run (exploring runs are tagged)
            log.append((f"step {t + 1}", out, np.asarray(stats[0]).copy()))
        return out

    def reduce(run: Any, k: int, n: int, rng: Any) -> Any:
        out = red(run, k, n, rng)
        log.append(("reduction", out, None))
        return out

    pe._em_steps, pe._em_release, pe.reduce_run = em_steps, em_release, reduce
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pg.PrivateGaussianMixture(fam.k, method="em", random_state=noise_seed,
                                      **BUDGET).fit(X)
    finally:
        pe._em_steps, pe._em_release, pe.reduce_run = steps, rel, red
    plan = rows["plan"]
    kf = plan.fitted(fam.k)
    print(f"family {seed} {fam.describe()} noise seed {noise_seed}; weights "
          f"{np.round(fam.weights, 3).tolist()}; T = {plan.n_steps}, explore "
          f"{plan.explore_steps}, reduce at {plan.reduce_at}, k' = {kf}")
    small = [j for j in np.argsort(fam.weights) if fam.weights[j] < 0.1]
    for name, run, counts in log:
        t = int(name.split()[1]) - 1 if name.startswith("step") else plan.n_steps
        kk = kf if plan.reduce_at is None or t < plan.reduce_at else fam.k
        res = resolved(rows["Z"], run, lab, fam.k)
        ok = sum(1 for _, f, p in res if f > 0.5 and p > 0.5)
        cl = " ".join(f"w{fam.weights[j]:.3f}->c{res[j][0]} {res[j][1]:.2f}/{res[j][2]:.2f}"
                      for j in small)
        extra = "" if counts is None else (
            f" | floor {pe._release_floor(plan, t, N, kk):.0f} counts "
            + ",".join(f"{x:.0f}" for x in counts))
        print(f"  {name:>10}: resolved {ok}/{fam.k}; small: {cl}{extra}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", required=True, help="comma-separated family seeds")
    ap.add_argument("--noise", default="0", help="comma-separated noise seeds")
    ap.add_argument("--trace", action="store_true", help="per-step trace instead of gaps")
    ap.add_argument("--sklearn-cache", default=None, metavar="JSON")
    ap.add_argument("set", nargs="*", help="private_em constants, NAME=VALUE")
    args = ap.parse_args()
    for kv in args.set:
        name, value = kv.split("=")
        setattr(pe, name, type(getattr(pe, name))(float(value)))
    seeds = [int(s) for s in args.seeds.split(",")]
    noise = [int(s) for s in args.noise.split(",")]
    if args.trace:
        for s in seeds:
            for q in noise:
                trace(s, q)
        return
    gaps = []
    for s in seeds:
        fam = mf.family(s)
        row = []
        for q in noise:
            out = mf.run_family(fam, N, {"eps1": BUDGET}, noise_seed=q,
                                cache=args.sklearn_cache)
            row.append(float(out["gap eps1"]))  # type: ignore[arg-type]
        gaps += row
        print(f"{s} {fam.describe()} " + " ".join(f"{g:.4f}" for g in row), flush=True)
    g = np.array(gaps)
    print(f"wrong {int((g > mf.WRONG).sum())}/{g.size}, median {np.median(g):.4f}, "
          f"mean {g.mean():.4f}")


if __name__ == "__main__":
    main()
