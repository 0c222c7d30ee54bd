"""Start or steps? Per generated family (``mixture_families.py``), private EM's starts judged
two ways, then what the EM steps made of them (issue 27).

For each start carried into the exploring runs (k-means or summary start, histogram start,
whitened-frame start): its own held-out gap to scikit-learn's best of 5 (nat/row), and the gap
of *non-private* EM (scikit-learn's ``GaussianMixture``, 300 iterations) started from it on the
same training rows — which basin the start lies in. The same two gaps for each run as the
run pick scores it (after the last exploring step), the pick's noiseless scores per row (the
clipped log-likelihood ratio to the frame's standard normal) with its noise sd per row, the run
the DP pick chose, how many components the steps split-revived, and the fit's final gap. A
family whose runs include a start in sklearn's basin (non-private gap ≈ 0) but ends > 0.05
below sklearn lost its basin in the steps (or the pick), not in the start.

A diagnosis, not a benchmark: it wraps private EM's internals (``transform_rows``,
``_em_steps``, ``pick_run``, ``_split``, ``_em_release``) to look at them; the fit itself is
unchanged but for the options: ``--ungated`` runs the summary start at every budget
(``SUMMARY_NOISE`` = inf), ``--explore-div`` sets ``EXPLORE_DIV`` (the pick after T // it
exploring steps), ``--force-pick`` takes the given run whatever the noisy scores say (an
oracle pick: not DP, a diagnosis only; the pick is still released and charged).

    OPENBLAS_NUM_THREADS=1 python benchmarks/em_start_diagnosis.py --seeds 3,4,6,13,17,18
    OPENBLAS_NUM_THREADS=1 python benchmarks/em_start_diagnosis.py --seeds 4,13 --force-pick 3
"""

from __future__ import annotations

import argparse
import time
import warnings
from typing import Any

import numpy as np
from mixture_families import family
from sklearn.mixture import GaussianMixture
from threadpoolctl import threadpool_limits

import privgauss as pg
from privgauss.mixture import private_em as pe
from privgauss.sensitivity import regret_sums_l2, score_sums_l2

_seen: dict[str, Any] = {}


def _wrap() -> None:
    """Record the frame, the starts, the pick and the splits of the next fit."""
    transform, steps, pick, split = pe.transform_rows, pe._em_steps, pe.pick_run, pe._split
    release = pe._em_release

    def transform_rows(X: Any, W: np.ndarray, m0: np.ndarray) -> Any:
        _seen["frame"] = (W, m0)
        return transform(X, W, m0)

    def em_steps(Z: Any, runs: list[Any], *a: Any, **kw: Any) -> Any:
        _seen["starts"] = [tuple(np.array(x) for x in r) for r in runs]
        return steps(Z, runs, *a, **kw)

    def pick_run(scores: np.ndarray, plan: Any, *a: Any, **kw: Any) -> int:
        _seen["scores"] = np.array(scores, dtype=float)
        regret_cap = float(a[1]) if len(a) > 1 else float(kw.get("cap", 0.0))
        _seen["score_sd"] = (regret_sums_l2(regret_cap, len(scores)) if regret_cap > 0
                             else score_sums_l2(plan.score_bound, len(scores))) / np.sqrt(
            2.0 * plan.rho_score)
        _seen["pick"] = pick(scores, plan, *a, **kw)
        if _seen.get("force") is not None:  # an oracle pick (diagnosis only; still charged)
            _seen["pick"] = _seen["force"]
        return int(_seen["pick"])

    def em_release(stats: Any, run: Any, terms: Any, plan: Any, t: int, *a: Any) -> Any:
        new = release(stats, run, terms, plan, t, *a)
        if t == plan.explore_steps - 1:  # the runs the pick scores
            _seen.setdefault("at_pick", []).append(tuple(np.array(x) for x in new))
        return new

    def split_(*a: Any, **kw: Any) -> None:
        _seen["splits"] = _seen.get("splits", 0) + 1
        split(*a, **kw)

    pe.transform_rows, pe._em_steps, pe.pick_run, pe._split = (transform_rows, em_steps,
                                                               pick_run, split_)
    pe._em_release = em_release


def _frame_score(run: tuple[np.ndarray, ...] | GaussianMixture, H: np.ndarray) -> float:
    """Held-out mean log-likelihood (data coordinates) of a model of the whitened frame."""
    W, m0 = _seen["frame"]
    if not isinstance(run, GaussianMixture):
        g = GaussianMixture(len(run[0]))
        g.weights_, g.means_, g.covariances_ = run
        g.precisions_cholesky_ = np.array([np.linalg.inv(np.linalg.cholesky(c)).T
                                           for c in run[2]])
        run = g
    return float(run.score((H - m0) @ W.T) + np.linalg.slogdet(W)[1])


def diagnose(seed: int, budget: dict[str, float], noise_seed: int = 0) -> str:
    fam = family(seed)
    rng = np.random.default_rng([fam.seed, 1])  # the rows of mixture_families.run_family
    X, H = fam.sample(50_000, rng), fam.sample(20_000, rng)
    force = _seen.get("force")
    _seen.clear()
    _seen["force"] = force
    with threadpool_limits(1, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        best = max(GaussianMixture(fam.k, n_init=5, random_state=0).fit(X).score(H),
                   GaussianMixture(fam.k, random_state=0).fit(X).score(H))
        t0 = time.perf_counter()
        est = pg.PrivateGaussianMixture(fam.k, method="em", random_state=noise_seed,
                                        **budget).fit(X)
        seconds = time.perf_counter() - t0
        W, m0 = _seen["frame"]
        Zx = (X - m0) @ W.T
        own, basin = [], []
        for w, mu, cov in _seen["starts"]:
            own.append(best - _frame_score((w, mu, cov), H))
            g = GaussianMixture(fam.k, weights_init=w / w.sum(), means_init=mu,
                                precisions_init=np.array([np.linalg.inv(c) for c in cov]),
                                max_iter=300).fit(Zx)
            basin.append(best - _frame_score(g, H))
        at_pick = [best - _frame_score(r, H) for r in _seen.get("at_pick", [])]
        pick_basin = []
        for w, mu, cov in _seen.get("at_pick", []):
            g = GaussianMixture(fam.k, weights_init=w / w.sum(), means_init=mu,
                                precisions_init=np.array([np.linalg.inv(c) for c in cov]),
                                max_iter=300).fit(Zx)
            pick_basin.append(best - _frame_score(g, H))
    scores = _seen.get("scores", np.zeros(0)) / len(X)
    return (f"| {seed} | {fam.describe()} | {' / '.join(f'{g:.3f}' for g in own)} | "
            f"{' / '.join(f'{g:.3f}' for g in basin)} | "
            f"{' / '.join(f'{g:.3f}' for g in at_pick)} | "
            f"{' / '.join(f'{g:.3f}' for g in pick_basin)} | "
            f"{' / '.join(f'{s:.3f}' for s in scores)} ± {_seen.get('score_sd', 0) / len(X):.3f} | "
            f"{_seen.get('pick', 0) + 1} | "
            f"{_seen.get('splits', 0)} | {best - est.score(H):.4f} | {seconds:.0f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="3,4,6,13,17,18", help="family seeds")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--noise-seed", type=int, default=0)
    ap.add_argument("--ungated", action="store_true",
                    help="the summary start at every budget (SUMMARY_NOISE = inf)")
    ap.add_argument("--explore-div", type=float, default=None,
                    help="the runs explore for T // this steps (EXPLORE_DIV)")
    ap.add_argument("--force-pick", type=int, default=None,
                    help="take this run (1-3) whatever the noisy scores say (an oracle pick)")
    args = ap.parse_args()
    if args.force_pick is not None:
        _seen["force"] = args.force_pick - 1
    if args.explore_div is not None:
        pe.EXPLORE_DIV = args.explore_div
    if args.ungated:
        pe.SUMMARY_NOISE = float("inf")
    _wrap()
    print("| family | shape | start gaps (runs 1/2/3) | non-private EM from each start | "
          "gaps at the pick | non-private EM from each run at the pick | "
          "pick scores (nat/row) ± noise sd | picked run | splits (all runs) | final gap | "
          "fit (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for s in (int(x) for x in args.seeds.split(",")):
        print(diagnose(s, {"epsilon": args.epsilon, "delta": 1e-6}, args.noise_seed),
              flush=True)


if __name__ == "__main__":
    main()
