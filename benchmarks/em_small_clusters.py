"""Issue 27, small clusters at ε = 1 (``benchmarks/results/em_small_clusters.md``): private EM's
gap on chosen generated families (:mod:`mixture_families`) and noise seeds, with
``private_em`` constants set from the command line (experiment switches, not estimator
options), and a per-step trace of which true clusters the fit resolves.

    python benchmarks/em_small_clusters.py --seeds 1124,1126 --noise 0,1,2 FADE_LEVEL=1.0
    python benchmarks/em_small_clusters.py --seeds 1161 --trace
    python benchmarks/em_small_clusters.py --seeds 1454 --trace --explore
    python benchmarks/em_small_clusters.py --seeds 1303 --noise 0,2 --diagnose
    python benchmarks/em_small_clusters.py --seeds 2568 --diagnose --pick-basins

A true cluster is *resolved* by a model when one component holds more than half of its rows
and they are more than half of that component's (hard assignment of the training rows in the
whitened frame, by the true labels). The trace wraps ``_em_release_runs`` and ``reduce_run``
(reading the rows and the released models, changing nothing).

``--diagnose`` (fam4): is a fit's gap a wrong structure or the last step's noise? It scores
(held out, in the fit's own whitened frame: gaps as the benchmark's) the returned model, the
model before the last step, scikit-learn's EM started from that model (1 step) and from the
free reduction of an over-parameterised run (1, 2, 3 steps), and prints each true cluster's
KL(true ‖ fitted) at every refining step (components matched to the clusters by least KL).
A right structure: scikit-learn from the model before the last step reaches its best of 5
at once (gap ≈ 0); then the fit's gap is the noise of what the last step released. With
``--pick-basins`` (famcensus) it also prints, for each exploring run's last model before the
run pick, its gap and scikit-learn's EM from it for the steps a picked run has left and for
300 steps (the run's basin), and which run the pick took.

``--reductions`` (fam5): could a k' run's reduction be chosen better? For the k' run as
released before the reduction it scores (held out, the fit's frame) the free reduction
(``reduce_run``) and R point-level EM fits (scikit-learn, one k-means++ init each, seeds
0..R−1) to a sample of 20,000 rows drawn from the k' model: each candidate's mean
log-likelihood on that sample (what a free criterion could measure), on the training rows
(what a DP pick would measure, before its noise), its gap as it is and after 3 steps of
scikit-learn's EM on the training rows from it (a right structure: ≈ 0).

``--starts`` (famlowd2): is a fit's wrong basin already in its starts? For each start the
EM steps receive (k-means, histogram, whitened-frame; a plain plan's order) it scores (held
out, the fit's frame) the start and scikit-learn's EM from it for 300 steps (the start's
basin), and the same for a k-component mixture fitted to the released start cells as
Gaussian blobs by EM with ``R`` restarts (``em_starts.cell_gmm_start``, post-processing), also
after the plan's T steps. ``--diagnose --pick-basins`` then says whether the exploring steps
kept a right start's basin and whether the pick took it.

``--oracle-shapes`` (famreduce; a probe, not a method: it reads the true clusters): the gap
of main's fit and of the same fit with each reduced component (``reduce_run``'s output)
whose KL(true ‖ component) to its nearest true cluster exceeds 3 given that cluster's
covariance (mean and weight kept) — what the k' plan would gain were the small clusters'
shapes known at the reduction.
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
LOW_D = False  # --low-d: d = 4 + seed % 3 (as em_explore / em_look_ahead; its own sklearn cache)


def _family(seed: int) -> mf.Family:
    return mf.family(seed, d=4 + seed % 3) if LOW_D else mf.family(seed)


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


def trace(seed: int, noise_seed: int, explore: bool = False) -> None:
    fam = _family(seed)
    X, lab = sample_labelled(fam, N, np.random.default_rng([fam.seed, 1]))
    rows: dict[str, Any] = {}
    log: list[tuple[str, Any, np.ndarray | None]] = []
    steps, rel, red, split = pe._em_steps, pe._em_release_runs, pe.reduce_run, pe._split

    def em_steps(Z: Any, runs: list[Any], plan: Any, *a: Any, **kw: Any) -> Any:
        rows["Z"], rows["plan"] = np.asarray(Z), plan
        return steps(Z, runs, plan, *a, **kw)

    def em_release(runs: Any, plan: Any, t: int, release: Any, n: int) -> Any:
        outs = rel(runs, plan, t, release, n)
        for st, out in zip(runs, outs, strict=True):
            if not st.tag or explore or len(runs) == 1:  # the picked run (exploring: tagged)
                log.append((f"step {t + 1}{st.tag}", out, np.asarray(st.stats[0]).copy()))
        return outs

    def split_(w: Any, means: Any, covs: Any, dead: int, alive: Any, target: Any = None) -> Any:
        h = (split(w, means, covs, dead, alive) if target is None  # main's signature too
             else split(w, means, covs, dead, alive, target))
        log.append((f"split {dead}<-{h}{' (absorber)' if target is not None else ''}", None,
                    None))
        return h

    def reduce(run: Any, k: int, n: int, rng: Any) -> Any:
        out = red(run, k, n, rng)
        log.append(("reduction", out, None))
        return out

    pe._em_steps, pe._em_release_runs, pe.reduce_run, pe._split = (em_steps, em_release,
                                                                   reduce, split_)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pg.PrivateGaussianMixture(fam.k, method="em", random_state=noise_seed,
                                      **BUDGET).fit(X)
    finally:
        pe._em_steps, pe._em_release_runs, pe.reduce_run, pe._split = steps, rel, red, split
    plan = rows["plan"]
    kf = plan.fitted(fam.k)
    print(f"family {seed} {fam.describe()} noise seed {noise_seed}; weights "
          f"{np.round(fam.weights, 3).tolist()}; T = {plan.n_steps}, explore "
          f"{plan.explore_steps}, reduce at {plan.reduce_at}, k' = {kf}")
    small = [j for j in np.argsort(fam.weights) if fam.weights[j] < 0.1]
    for name, run, counts in log:
        if run is None:  # a split-revival (in the run logged next)
            print(f"  {name:>10}")
            continue
        t = int(name.split()[1]) - 1 if name.startswith("step") else plan.reduce_at
        kk = kf if plan.reduce_at is None or t < plan.reduce_at else fam.k
        res = resolved(rows["Z"], run, lab, fam.k)
        ok = sum(1 for _, f, p in res if f > 0.5 and p > 0.5)
        cl = " ".join(f"w{fam.weights[j]:.3f}->c{res[j][0]} {res[j][1]:.2f}/{res[j][2]:.2f}"
                      for j in small)
        extra = "" if counts is None else (
            f" | floor {pe._release_floor(plan, t, N, kk):.0f} counts "
            + ",".join(f"{x:.0f}" for x in counts))
        print(f"  {name:>10}: resolved {ok}/{fam.k}; small: {cl}{extra}")


def _kl(m1: np.ndarray, S1: np.ndarray, m2: np.ndarray, S2: np.ndarray) -> float:
    """KL(N(m1, S1) ‖ N(m2, S2))."""
    P2 = np.linalg.inv(S2)
    dm = m2 - m1
    return 0.5 * float(np.trace(P2 @ S1) + dm @ P2 @ dm - len(m1)
                       + np.linalg.slogdet(S2)[1] - np.linalg.slogdet(S1)[1])


def _mixture(run: Any) -> Any:
    """A fitted ``GaussianMixture`` holding the model ``run`` = (weights, means, covs)."""
    from sklearn.mixture import GaussianMixture

    w, mu, S = run
    g = GaussianMixture(len(w))
    g.weights_, g.means_, g.covariances_ = w / w.sum(), mu, S
    g.precisions_cholesky_ = np.linalg.cholesky(np.linalg.inv(S))
    g.covariance_type = "full"
    return g


def _sklearn_from(run: Any, steps: int, Z: np.ndarray) -> Any:
    """scikit-learn's EM on ``Z`` for ``steps`` steps started from the model ``run``."""
    from sklearn.mixture import GaussianMixture

    w, mu, S = run
    g = GaussianMixture(len(w), weights_init=w / w.sum(), means_init=mu,
                        precisions_init=np.linalg.inv(S), max_iter=steps, tol=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return g.fit(Z)


def _fit_spied(k: int, X: np.ndarray, noise_seed: int, frame: dict[str, Any],
               **spies: Any) -> Any:
    """An em fit of ``X`` with ``private_em``'s functions named in ``spies`` replaced (restored
    afterwards) and the whitening frame it transforms the rows by stored in ``frame`` ("W",
    "m0")."""
    tr = pe.transform_rows

    def transform_rows(Y: Any, W: Any, m0: Any) -> Any:
        frame["W"], frame["m0"] = W, m0
        return tr(Y, W, m0)

    saved = {name: getattr(pe, name) for name in [*spies, "transform_rows"]}
    for name, fn in {**spies, "transform_rows": transform_rows}.items():
        setattr(pe, name, fn)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pg.PrivateGaussianMixture(k, method="em", random_state=noise_seed,
                                             **BUDGET).fit(X)
    finally:
        for name, fn in saved.items():
            setattr(pe, name, fn)


def diagnose(seed: int, noise_seed: int, cache: str | None, pick_basins: bool = False
             ) -> None:
    from scipy.optimize import linear_sum_assignment

    fam, X, H, best = _drawn(seed, cache)
    log: list[tuple[int, Any, Any]] = []
    explog: list[tuple[int, str, Any]] = []  # the exploring runs' released models
    frame: dict[str, Any] = {}
    rel = pe._em_release_runs

    def em_release(runs: Any, plan: Any, t: int, release: Any, n: int) -> Any:
        outs = rel(runs, plan, t, release, n)
        frame["plan"] = plan
        for st, out in zip(runs, outs, strict=True):
            if st.tag and t < plan.explore_steps:
                explog.append((t, st.tag, out))
            if len(runs) == 1 and t >= plan.explore_steps:  # the picked run
                frame.setdefault("picked", next(
                    (tag for _, tag, r in explog if r is st.run), " ?"))
                log.append((t, st.run, out))
        return outs

    est = _fit_spied(fam.k, X, noise_seed, frame, _em_release_runs=em_release)
    plan, W, m0 = frame["plan"], frame["W"], frame["m0"]
    ldet = float(np.linalg.slogdet(W)[1])
    Z, Hz = (X - m0) @ W.T, (H - m0) @ W.T

    def gap(g: Any) -> float:
        return best - (g.score(Hz) + ldet)

    T = plan.n_steps
    print(f"family {seed} {fam.describe()} noise seed {noise_seed}: T = {T}, k' = "
          f"{plan.fitted(fam.k)}, reduce at {plan.reduce_at}, last step r = "
          f"{plan.step_radius(T - 1):.2f}")
    if explog and pick_basins:  # each exploring run's last model before the pick
        last: dict[str, Any] = {}
        for _, tag, run in explog:
            last[tag] = run
        rest = plan.n_steps - plan.explore_steps  # the steps a picked run has left
        print(f"  picked{frame.get('picked', ' ?')}; at the pick (gap / sklearn {rest} / 300 "
              "steps from it): " + "; ".join(
                  f"{tag.strip()} {gap(_mixture(run)):.4f} / "
                  f"{gap(_sklearn_from(run, rest, Z)):.4f} / "
                  f"{gap(_sklearn_from(run, 300, Z)):.4f}" for tag, run in last.items()),
              flush=True)
    prelast = log[-1][1]
    line = (f"  gap {best - est.score(H):.4f}; before the last step {gap(_mixture(prelast)):.4f}"
            f"; sklearn from it, 1 step: {gap(_sklearn_from(prelast, 1, Z)):.4f}")
    red = [run for t, run, _ in log if t == plan.reduce_at]
    if red:
        line += "; the reduction " + f"{gap(_mixture(red[0])):.4f}" + \
            ", sklearn from it, 1/2/3/300 steps: " + " ".join(
            f"{gap(_sklearn_from(red[0], s, Z)):.4f}" for s in (1, 2, 3, 300))
    print(line)
    tm = (fam.means - m0) @ W.T
    tS = np.array([W @ (R @ R.T) @ W.T for R in fam.roots])
    order = np.argsort(fam.weights)
    for t, _, (w, mu, S) in log:
        if len(w) != fam.k or (plan.reduce_at is not None and t < plan.reduce_at):
            continue
        C = np.array([[_kl(tm[i], tS[i], mu[j], S[j]) for j in range(fam.k)]
                      for i in range(fam.k)])
        col = linear_sum_assignment(np.minimum(C, 1e6))[1]
        print(f"  step {t + 1:>2} KL(true || fitted) by true weight: "
              + " ".join(f"{fam.weights[i]:.3f}:{C[i, col[i]]:.3f}" for i in order))


def _drawn(seed: int, cache: str | None) -> tuple[Any, np.ndarray, np.ndarray, float]:
    """Family ``seed``, its N training rows, 20,000 held-out rows (the gaps' draws) and
    scikit-learn's best held-out log-likelihood of 5 inits (cached)."""
    fam = _family(seed)
    rng = np.random.default_rng([fam.seed, 1])
    X, H = fam.sample(N, rng), fam.sample(20_000, rng)
    return fam, X, H, float(mf._reference(fam, N, X, H, cache)["best"])


def _mean_loglik(run: Any, Y: np.ndarray) -> float:
    """The mixture ``run``'s mean log-likelihood of the rows ``Y``."""
    return float(_mixture(run).score_samples(Y).mean())


def reductions(seed: int, noise_seed: int, cache: str | None, restarts: int) -> None:
    from sklearn.mixture import GaussianMixture

    fam, X, H, best = _drawn(seed, cache)
    cap: dict[str, Any] = {}
    red = pe.reduce_run

    def reduce(run: Any, k: int, n: int, r: Any) -> Any:
        cap["run"], cap["n"], cap["out"] = run, n, red(run, k, n, r)
        return cap["out"]

    _fit_spied(fam.k, X, noise_seed, cap, reduce_run=reduce)
    if "run" not in cap:
        print(f"family {seed} noise seed {noise_seed}: no over-parameterised run")
        return
    W, m0 = cap["W"], cap["m0"]
    ldet = float(np.linalg.slogdet(W)[1])
    Z, Hz = (X - m0) @ W.T, (H - m0) @ W.T
    w, mu, S = cap["run"]
    g = np.random.default_rng(1)
    lab = g.choice(len(w), size=20_000, p=w / w.sum())
    Y = mu[lab] + np.einsum("nij,nj->ni", np.linalg.cholesky(S)[lab],
                            g.standard_normal((20_000, mu.shape[1])))

    rows, after = [], []

    def line(name: str, run: Any) -> str:
        rows.append(_mean_loglik(run, Z))
        after.append(best - (_sklearn_from(run, 3, Z).score(Hz) + ldet))
        return (f"  {name:>12}: k'-sample {_mean_loglik(run, Y):8.4f} rows {rows[-1]:8.4f} "
                f"gap {best - (_mixture(run).score(Hz) + ldet):.4f} after 3 steps {after[-1]:.4f}")

    print(f"family {seed} {fam.describe()} noise seed {noise_seed}: k' = {len(w)}")
    print(line("reduce_run", cap["out"]))
    for i in range(restarts):
        gm = GaussianMixture(fam.k, random_state=i, max_iter=200).fit(Y)
        print(line(f"sample EM {i}", (gm.weights_, gm.means_, gm.covariances_)), flush=True)
    # a DP pick among the first C candidates by the rows' log-likelihood sums (the raw sums,
    # not the clipped score ratios a release would use), noise as pick_run's: sensitivity
    # 2b√C (score_sums_l2, b the plan's score bound) at a share of the EM steps' ρ
    from privgauss.privacy import ApproxDP
    from privgauss.sensitivity import score_sums_l2

    plan = pe.em_plan(N, fam.d, fam.k, ApproxDP(BUDGET["epsilon"], BUDGET["delta"]))
    L, G = N * np.array(rows), np.array(after)
    sim = np.random.default_rng(0)
    for C in (2, 1 + restarts):
        out = []
        for share in (0.05, 0.1, 0.2):
            sig = score_sums_l2(plan.score_bound, C) / math.sqrt(2 * share * sum(plan.rho_steps))
            pick = np.argmax(L[:C] + sig * sim.standard_normal((20_000, C)), axis=1)
            out.append(f"{share:.2f}: sd {sig:.0f}, mean after 3 steps {G[:C][pick].mean():.3f}"
                       f" (≤ 0.05: {np.mean(G[:C][pick] <= 0.05):.2f})")
        print(f"  DP pick among {C}, at a share of the steps' rho " + "; ".join(out))


def starts(seed: int, noise_seed: int, cache: str | None, restarts: int) -> None:
    from privgauss.mixture import em_starts as st

    fam, X, H, best = _drawn(seed, cache)
    cap: dict[str, Any] = {}
    cells = st.cell_gmm_start

    def cell_gmm_start(c: Any, *a: Any) -> Any:
        cap["cells"] = (len(c), cells(c, *a))
        return cap["cells"][1]

    steps = pe._em_steps

    def em_steps(Z: Any, runs: list[Any], plan: Any, *a: Any, **kw: Any) -> Any:
        cap.setdefault("starts", [tuple(np.array(x) for x in r) for r in runs])
        cap["plan"] = plan
        return steps(Z, runs, plan, *a, **kw)

    st.cell_gmm_start = cell_gmm_start
    # a fit with the cells' mixture as its histogram start (CELL_START) only to capture the
    # cells; the three starts of main's fit come from a fit without it
    frame: dict[str, Any] = {}
    saved = pe.CELL_START
    try:
        pe.CELL_START = restarts
        _fit_spied(fam.k, X, noise_seed, {}, _em_steps=em_steps)
        cap.pop("starts")
        pe.CELL_START = 0
        est = _fit_spied(fam.k, X, noise_seed, frame, _em_steps=em_steps)
    finally:
        st.cell_gmm_start, pe.CELL_START = cells, saved
    W, m0, plan = frame["W"], frame["m0"], cap["plan"]
    ldet = float(np.linalg.slogdet(W)[1])
    Z, Hz = (X - m0) @ W.T, (H - m0) @ W.T

    def gap(g: Any) -> float:
        return best - (g.score(Hz) + ldet)

    print(f"{seed} {fam.describe()} noise seed {noise_seed}: T = {plan.n_steps}, "
          f"{plan.grid_cells} cells per axis, fit {best - est.score(H):.4f}; start / sklearn "
          "300 steps from it: " + "; ".join(
              f"{name} {gap(_mixture(r)):.4f} / {gap(_sklearn_from(r, 300, Z)):.4f}"
              for name, r in zip(("k-means", "histogram", "whitened"), cap["starts"],
                                 strict=False)), flush=True)
    if "cells" in cap:
        m, g = cap["cells"]
        print(f"  cells' mixture ({m} cells, {restarts} restarts): "
              f"{gap(_mixture(g)):.4f} / {gap(_sklearn_from(g, 300, Z)):.4f}; after "
              f"{plan.n_steps} steps {gap(_sklearn_from(g, plan.n_steps, Z)):.4f}", flush=True)


def oracle_shapes(seed: int, noise_seed: int, cache: str | None) -> None:
    fam, X, H, best = _drawn(seed, cache)
    red = pe.reduce_run
    gaps, replaced = [], 0
    for oracle in (False, True):
        frame: dict[str, Any] = {}

        def reduce(run: Any, k: int, n: int, r: Any, oracle: bool = oracle,
                   frame: dict[str, Any] = frame) -> Any:
            nonlocal replaced
            w, mu, S = red(run, k, n, r)
            if not oracle:
                return w, mu, S
            W, m0 = frame["W"], frame["m0"]
            tm = (fam.means - m0) @ W.T
            tS = np.array([W @ (R @ R.T) @ W.T for R in fam.roots])
            S = S.copy()
            for j in range(k):
                kl = [_kl(tm[i], tS[i], mu[j], S[j]) for i in range(fam.k)]
                i = int(np.argmin(kl))
                if kl[i] > 3.0:
                    S[j] = tS[i]
                    replaced += 1
            return w, mu, S

        est = _fit_spied(fam.k, X, noise_seed, frame, reduce_run=reduce)
        gaps.append(best - est.score(H))
    print(f"{seed} {fam.describe()} noise seed {noise_seed}: main {gaps[0]:.4f}, oracle shapes "
          f"({replaced} replaced) {gaps[1]:.4f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", required=True, help="comma-separated family seeds")
    ap.add_argument("--noise", default="0", help="comma-separated noise seeds")
    ap.add_argument("--trace", action="store_true", help="per-step trace instead of gaps")
    ap.add_argument("--explore", action="store_true",
                    help="with --trace: the exploring runs' steps too, and the split-revivals")
    ap.add_argument("--diagnose", action="store_true",
                    help="structure or last-step noise (see the module docstring)")
    ap.add_argument("--pick-basins", action="store_true",
                    help="with --diagnose: each exploring run's gap at the pick, and sklearn's "
                    "EM (300 steps) from it")
    ap.add_argument("--reductions", type=int, default=0, metavar="R",
                    help="the reduction's candidates (see the module docstring)")
    ap.add_argument("--oracle-shapes", action="store_true",
                    help="gap with the reduced components' stale shapes replaced by the "
                    "true clusters' (a probe)")
    ap.add_argument("--starts", type=int, default=0, metavar="R",
                    help="each start's basin and the cells' mixture's, R restarts (see the "
                    "module docstring)")
    ap.add_argument("--sklearn-cache", default=None, metavar="JSON")
    ap.add_argument("--low-d", action="store_true",
                    help="d = 4 + seed %% 3 (lookpick's and explore's low-d blocks; the cache "
                    "keys by seed and n: give these their own cache file)")
    ap.add_argument("--epsilon", type=float, default=1.0,
                    help="the fits' epsilon (delta 1e-6; the gaps' sklearn reference is the same)")
    ap.add_argument("set", nargs="*", help="private_em constants, NAME=VALUE")
    args = ap.parse_args()
    global LOW_D
    LOW_D = args.low_d
    BUDGET["epsilon"] = args.epsilon
    mf.set_constants(args.set)
    seeds = [int(s) for s in args.seeds.split(",")]
    noise = [int(s) for s in args.noise.split(",")]
    if args.reductions:
        for s in seeds:
            for q in noise:
                reductions(s, q, args.sklearn_cache, args.reductions)
        return
    if args.starts:
        for s in seeds:
            for q in noise:
                starts(s, q, args.sklearn_cache, args.starts)
        return
    if args.oracle_shapes:
        for s in seeds:
            for q in noise:
                oracle_shapes(s, q, args.sklearn_cache)
        return
    if args.diagnose:
        for s in seeds:
            for q in noise:
                diagnose(s, q, args.sklearn_cache, args.pick_basins)
        return
    if args.trace:
        for s in seeds:
            for q in noise:
                trace(s, q, args.explore)
        return
    gaps = []
    for s in seeds:
        fam = _family(s)
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
