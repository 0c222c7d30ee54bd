"""Private EM's speed against scikit-learn's EM at n = 5e4, d = 10, k = 3 (issue 27's goal:
wall time ≤ 2× ``GaussianMixture(3, n_init=1)``, both on one BLAS thread).

Data: a k = 3, d = 10 Gaussian mixture (weights .2/.3/.5, means 2 standard deviations apart,
unequal axis scales, rotated, shifted to 100·1: ``benchmarks/em_scale.py``'s recipe), training
rows and 2e4 held-out rows drawn with each data seed. Fits: ``PrivateGaussianMixture(3,
method="em", epsilon=ε, delta=1e-6, random_state=s)`` at ε = 1 and ε = 1e4 against
``sklearn.mixture.GaussianMixture(3, n_init=1, random_state=s)`` (default tol 1e-3), all in
this one process under ``threadpool_limits(1)`` (also run it with ``OPENBLAS_NUM_THREADS=1``).
For each data seed and fit: the median wall and CPU time of ``--repeats`` fits, and the
held-out gap (sklearn's mean log-likelihood minus ours, nat/row: a speed-up that loses
accuracy shows there). ``--profile`` prints a cProfile of one private fit instead.
``--malloc-fixed`` fixes glibc's mmap and trim thresholds first (:func:`_fix_malloc`): without
it a fit's CPU time depends on what the process allocated and freed before (sklearn's fit of
data seed 1: 0.53 s fresh, 0.34 s after one private fit).

``--dump FILE`` fits 14 private models at fixed seeds (n = 3e4; ε = 1, ε = 1e4, ρ = 0.5 with
public rows, k = 3 and 4; and two k = 6, d = 15 families of ``mixture_families.py`` at n = 5e4,
ε = 1 and 1e4) and saves their weights, means, covariances and ledgers; ``--compare FILE``
refits them with the code on ``PYTHONPATH`` and prints the largest relative difference,
whether the fits are bit-identical (what a pure speed-up should give) and whether the ledgers
(step names, costs) are identical. ``--declip-dump FILE`` records the de-clipping calls private
EM makes (``undo_clipping_batch``: a step's components, an exploring step's runs together;
``undo_clipping``: a tied step's pooled covariance) on 4 fits (families 1 and 2 at ε = 1, the
k = 3 mixture at ε = 1 and 1e4) with the outputs of the code on ``PYTHONPATH``;
``--declip-compare FILE`` re-runs them with this code and prints the clipped-moment
evaluations, the CPU time and the components' relative differences.
``--kernel`` times one EM kernel call over 5e4 rows for 6 models and for 1.
``--set NAME=VALUE`` (repeatable) sets a ``private_em`` constant for every fit (the baseline,
e.g. a switch the lead is turning on). ``--families SEEDS`` times ``mixture_families.py``'s
families (n = 5e4, 2e4 held-out rows) at ``--epsilons`` instead: CPU of ours ÷ scikit-learn's
``n_init=1`` on the same rows, for each ``--arms`` variant ("A;B", each a comma-separated
NAME=VALUE list on top of ``--set``, "" the baseline), the arms alternated ``--rounds`` times in
this one process (the machine's load moves between rounds, not between the arms of one), with
the held-out gap to scikit-learn's ``n_init=1`` and the release count of each arm.
``--synth FILE`` times ``PrivateSynthesizer(rho=1e6, n_components=32)`` (issue 28's huge-budget
copula mixture; seeded) on corpus tables wavesurge (2,894 × 2) and doctor_contacts (20,186 × 9),
saves the copulas' weights, means and covariances to FILE, and with ``--against OLD`` prints
their largest relative difference from OLD's.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/em_speed.py --seeds 3 --repeats 3 --out benchmarks/results/em_speed.md
    PYTHONPATH=<old src> python benchmarks/em_speed.py --dump before.npz
    PYTHONPATH=src python benchmarks/em_speed.py --compare before.npz
    PYTHONPATH=<old src> python benchmarks/em_speed.py --declip-dump declip.npz
    PYTHONPATH=src python benchmarks/em_speed.py --declip-compare declip.npz
    PYTHONPATH=<old src> python benchmarks/em_speed.py --synth synth_before.npz
    PYTHONPATH=src python benchmarks/em_speed.py --synth synth_after.npz --against synth_before.npz
    PYTHONPATH=src python benchmarks/em_speed.py --families 12904,12906 --epsilons 10,100 \
        --set SUMMARY_NOISE=0.1 --arms ";NOISE_FREEZE=2,FREEZE_PLAIN=1" --rounds 2
"""

from __future__ import annotations

import argparse
import cProfile
import math
import os
import platform
import pstats
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.mixture import GaussianMixture
from threadpoolctl import threadpool_limits

import privgauss as pg

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from em_scale import _rows  # noqa: E402  (the same mixture recipe)
from mixture_families import family, set_constants  # noqa: E402

N, K = 50_000, 3
EPSILONS = (1.0, 1e4)


def _timed(fit: object) -> tuple[float, float, object]:
    t0, c0 = time.perf_counter(), time.process_time()
    model = fit()  # type: ignore[operator]
    return time.perf_counter() - t0, time.process_time() - c0, model


def _sklearn(X: np.ndarray, seed: int) -> object:
    return GaussianMixture(K, n_init=1, random_state=seed).fit(X)


def _ours(X: np.ndarray, eps: float, seed: int) -> object:
    return pg.PrivateGaussianMixture(K, method="em", epsilon=eps, delta=1e-6,
                                     random_state=seed).fit(X)


def _measure(fit: object, repeats: int) -> tuple[float, float, object]:
    runs = [_timed(fit) for _ in range(repeats)]
    return (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs),
            runs[0][2])


CHECK_FITS = [  # (k, budget, public rows, data seed, noise seed)
    *[(3, {"epsilon": 1.0, "delta": 1e-6}, False, s, s) for s in range(4)],
    *[(3, {"epsilon": 1e4, "delta": 1e-6}, False, s, s) for s in range(3)],
    *[(3, {"rho": 0.5}, True, s, s) for s in range(2)],
    (4, {"epsilon": 1.0, "delta": 1e-6}, False, 7, 7),
]
# k = 6, d = 15 families (``mixture_families.py``'s generator, n = 5e4): (family seed, budget)
FAMILY_FITS = [(s, {"epsilon": e, "delta": 1e-6}) for s in (1, 2) for e in (1.0, 1e4)]


def _check_fits() -> dict[str, np.ndarray]:
    """The 14 fits of the before/after check (n = 3e4), flattened into named arrays."""
    out: dict[str, np.ndarray] = {}
    for i, (k, budget, public, seed, noise) in enumerate(CHECK_FITS):
        X = _rows(30_000, np.random.default_rng(3000 + seed))
        P = _rows(200, np.random.default_rng(4000 + seed)) if public else None
        m = pg.PrivateGaussianMixture(k, method="em", random_state=noise, **budget)
        m.fit(X, public_X=P)
        out[f"{i}/weights"] = np.asarray(m.weights_)
        out[f"{i}/means"] = np.asarray(m.means_)
        out[f"{i}/covariances"] = np.asarray(m.covariances_)
        out[f"{i}/ledger"] = np.array([f"{e.step}|{e.mechanism}|{e.cost!r}|{e.sensitivity!r}|"
                                       f"{e.noise_scale!r}" for e in m.ledger_])
        print(f"fit {i}: k={k} {budget} public={public} seed={seed}: "
              f"{len(m.ledger_)} releases", flush=True)
    from mixture_families import family
    for i, (fseed, budget) in enumerate(FAMILY_FITS, start=len(CHECK_FITS)):
        fam = family(fseed, k=6, d=15)
        X = fam.sample(50_000, np.random.default_rng([fseed, 1]))
        m = pg.PrivateGaussianMixture(6, method="em", random_state=fseed, **budget)
        m.fit(X)
        out[f"{i}/weights"] = np.asarray(m.weights_)
        out[f"{i}/means"] = np.asarray(m.means_)
        out[f"{i}/covariances"] = np.asarray(m.covariances_)
        out[f"{i}/ledger"] = np.array([f"{e.step}|{e.mechanism}|{e.cost!r}|{e.sensitivity!r}|"
                                       f"{e.noise_scale!r}" for e in m.ledger_])
        print(f"fit {i}: family {fseed} k=6 d=15 {budget}: {len(m.ledger_)} releases",
              flush=True)
    return out


def _compare(path: str) -> None:
    before = dict(np.load(path))
    after = _check_fits()
    worst = 0.0
    same_ledgers = True
    identical = True
    for key, old in before.items():
        new = after[key]
        if key.endswith("/ledger"):
            if old.shape != new.shape or not (old == new).all():
                same_ledgers = False
                print(f"{key}: ledgers differ")
            continue
        identical &= old.shape == new.shape and bool((old == new).all())
        rel = float(np.max(np.abs(new - old)) / max(float(np.max(np.abs(old))), 1e-300))
        worst = max(worst, rel)
        print(f"{key}: max |after - before| / max |before| = {rel:.2e}")
    print(f"largest relative difference over {len(CHECK_FITS) + len(FAMILY_FITS)} fits: "
          f"{worst:.2e}; bit-identical: {identical}; ledgers identical: {same_ledgers}")


DECLIP_FITS = [  # (family seed or None for em_scale's k = 3 mixture at n = 3e4, epsilon)
    (1, 1.0), (2, 1.0), (None, 1.0), (None, 1e4)]


def _declip_runs(calls: list[tuple[np.ndarray, np.ndarray, float]]) -> dict[str, np.ndarray]:
    """The recorded de-clipping calls (each a stack of components clipped at one radius, as
    private EM made it) through ``undo_clipping_batch`` of the code on PYTHONPATH: outputs,
    per call the clipped-moment evaluations of the stack and of its components (an evaluation
    of m components counts m) and the CPU time of all the calls."""
    from privgauss.mixture import cluster_estimation as ce
    real = ce._Sample.clipped_moments
    count = [0, 0]

    def counted(self: object, A: np.ndarray, *args: object) -> object:
        count[0] += 1
        count[1] += int(A.shape[0])
        return real(self, A, *args)  # type: ignore[arg-type]

    ce._Sample.clipped_moments = counted  # type: ignore[method-assign]
    deltas, covs, evals, comp_evals = [], [], [], []
    try:
        c0 = time.process_time()
        for v, S, tau in calls:
            count[:] = [0, 0]
            dl, cov = ce.undo_clipping_batch(v, S, tau)
            deltas.append(dl)
            covs.append(cov)
            evals.append(count[0])
            comp_evals.append(count[1])
        cpu = time.process_time() - c0
    finally:
        ce._Sample.clipped_moments = real  # type: ignore[method-assign]
    return {"delta": _objects(deltas), "cov": _objects(covs), "evals": np.array(evals),
            "comp_evals": np.array(comp_evals), "cpu": np.array(cpu)}


def _objects(arrays: list[np.ndarray]) -> np.ndarray:
    """A 1-d object array holding ``arrays`` (np.array would stack equal shapes)."""
    out = np.empty(len(arrays), dtype=object)
    out[:] = arrays
    return out


def _declip_dump(path: str) -> None:
    """Record the de-clipping calls private EM makes on the fits of ``DECLIP_FITS`` — its
    ``undo_clipping_batch`` (a step's components, all runs of an exploring step at once) and
    ``undo_clipping`` (a tied step's pooled covariance) as imported into ``private_em``,
    each as the stack it passed (one component for the latter) — and save them with this
    code's outputs."""
    from mixture_families import family

    import privgauss.mixture.private_em as pem
    calls: list[tuple[np.ndarray, np.ndarray, float]] = []
    real_batch, real_one = pem.undo_clipping_batch, pem.undo_clipping

    def batch(v: np.ndarray, S: np.ndarray, tau: float, U: object = None
              ) -> tuple[np.ndarray, np.ndarray]:
        assert U is None  # private EM's calls use the default sample
        calls.append((np.array(v, dtype=np.float64), np.array(S, dtype=np.float64),
                      float(tau)))
        return real_batch(v, S, tau)

    def one(v: np.ndarray, S: np.ndarray, tau: float, U: object = None
            ) -> tuple[np.ndarray, np.ndarray]:
        assert U is None
        calls.append((np.array(v, dtype=np.float64)[None], np.array(S, dtype=np.float64)[None],
                      float(tau)))
        return real_one(v, S, tau)

    pem.undo_clipping_batch, pem.undo_clipping = batch, one  # type: ignore[assignment]
    try:
        for fseed, eps in DECLIP_FITS:
            if fseed is None:
                X, k, seed = _rows(30_000, np.random.default_rng(3000)), 3, 0
            else:
                fam = family(fseed, k=6, d=15)
                X, k, seed = fam.sample(50_000, np.random.default_rng([fseed, 1])), 6, fseed
            pg.PrivateGaussianMixture(k, method="em", epsilon=eps, delta=1e-6,
                                      random_state=seed).fit(X)
    finally:
        pem.undo_clipping_batch, pem.undo_clipping = real_batch, real_one  # type: ignore[assignment]
    out = _declip_runs(calls)
    np.savez(path, v=_objects([c[0] for c in calls]), S=_objects([c[1] for c in calls]),
             tau=np.array([c[2] for c in calls]), **out)  # type: ignore[arg-type]
    _declip_summary("recorded", len(calls), out)


def _declip_summary(name: str, n_calls: int, res: dict[str, np.ndarray] | object) -> None:
    ev, cev = res["evals"], res["comp_evals"]  # type: ignore[index]
    comps = sum(int(np.asarray(d).shape[0]) for d in res["delta"])  # type: ignore[index]
    print(f"{name}: {n_calls} calls of {comps} components, {int(ev.sum())} stacked evaluations "
          f"({int(cev.sum())} component evaluations, {cev.sum() / max(comps, 1):.2f} a "
          f"component), CPU {float(res['cpu']):.3f} s")  # type: ignore[index]


def _declip_compare(path: str) -> None:
    """The dump's calls through this code's ``undo_clipping_batch``: evaluations, CPU and the
    largest relative difference of each component's (δ, Σ) from the dump's outputs."""
    old = np.load(path, allow_pickle=True)
    calls = list(zip(old["v"], old["S"], (float(t) for t in old["tau"]), strict=True))
    new = _declip_runs(calls)
    rel = []
    for D0, C0, D1, C1 in zip(old["delta"], old["cov"], new["delta"], new["cov"], strict=True):
        for d0, c0, d1, c1 in zip(D0, C0, D1, C1, strict=True):
            sc = max(float(np.abs(c0).max()), 1e-300)
            rel.append(max(float(np.abs(d1 - d0).max()) / max(float(np.abs(d0).max()),
                                                               math.sqrt(sc)),
                           float(np.abs(c1 - c0).max()) / sc))
    _declip_summary("dump", len(calls), old)
    _declip_summary("now", len(calls), new)
    q = np.quantile(rel, [0.5, 0.9, 0.99, 1.0])
    print("relative difference of (delta, Sigma) per component, quantiles 50/90/99/max: "
          + " ".join(f"{x:.2e}" for x in q) + f"; bit-identical: {max(rel) == 0.0}")


SYNTH_FITS = [("wavesurge", 32), ("doctor_contacts", 32)]  # (corpus table, n_components)
SYNTH_RHO = 1e6


def _synth(path: str, against: str | None, repeats: int) -> None:
    """Time the synthesizer fits of ``SYNTH_FITS`` (median wall and CPU of ``repeats``), save
    their copulas' parameters to ``path`` and compare them with ``against``'s."""
    import corpus
    out: dict[str, np.ndarray] = {}
    for name, k in SYNTH_FITS:
        X = np.array(corpus.load(name))

        def fit() -> object:
            return pg.PrivateSynthesizer(rho=SYNTH_RHO, n_components=k,  # noqa: B023
                                         random_state=0).fit(X)  # noqa: B023

        w, c, syn = _measure(fit, repeats)
        cop = syn.copula_  # type: ignore[attr-defined]
        for attr in ("weights_", "means_", "covariances_"):
            out[f"{name}/{attr}"] = np.asarray(getattr(cop, attr))
        print(f"{name} {X.shape[0]} x {X.shape[1]}, rho = {SYNTH_RHO:g}, k = "
              f"{syn.n_components_}: wall {w:.2f} s, CPU {c:.2f} s "  # type: ignore[attr-defined]
              f"(median of {repeats}); {syn.method_}", flush=True)  # type: ignore[attr-defined]
    np.savez(path, **out)  # type: ignore[arg-type]
    if against:
        old = dict(np.load(against))
        worst = 0.0
        for key, a in old.items():
            b = out[key]
            rel = (float(np.max(np.abs(b - a)) / max(float(np.max(np.abs(a))), 1e-300))
                   if a.shape == b.shape else math.inf)
            worst = max(worst, rel)
            print(f"{key}: max |now - old| / max |old| = {rel:.2e}")
        print(f"largest relative difference: {worst:.2e}")


def _kernel(repeats: int) -> None:
    """CPU time of one EM kernel call (``private_em._em_kernel``) over 5e4 rows (d = 10, k = 3;
    standard normal rows, random models with the fit's radius order), for 6 models (an
    exploring pass of the wide plan) and 1 (a refining step's): the least of ``repeats``."""
    from privgauss.mixture import private_em as pe

    rng = np.random.default_rng(0)
    d, k = 10, 3
    X = rng.standard_normal((N, d)) * 1.5
    models = []
    for _ in range(6):
        A = rng.standard_normal((k, d, d)) * 0.3 + np.eye(d)
        _, Linv, ln = pe._model_terms(rng.dirichlet(np.ones(k)), A @ A.transpose(0, 2, 1))
        models.append((rng.standard_normal((k, d)), Linv, ln))
    for m in (6, 1):
        best = math.inf
        for _ in range(repeats):
            c0 = time.process_time()
            pe._em_kernel(X, tuple(models[:m]), 5.0)
            best = min(best, time.process_time() - c0)
        print(f"_em_kernel, {m} model(s), {N} rows, d = {d}, k = {k}: {best * 1e3:.2f} ms CPU "
              f"(least of {repeats})")


def _arm(text: str) -> dict[str, str]:
    """An ``--arms`` variant: NAME=VALUE pairs, comma-separated ("" the baseline)."""
    return dict(kv.split("=") for kv in text.split(",") if kv)  # type: ignore[misc]


def _families(seeds: list[int], eps_list: list[float], arms: list[str], rounds: int) -> None:
    """``--families``: per family and budget, each arm's CPU ÷ scikit-learn's (its rows, n_init
    = 1, timed in each round), arms alternated round by round; gap to that sklearn fit."""
    from privgauss.mixture import private_em as pem

    variants = [_arm(t) for t in arms]
    names = {name for v in variants for name in v}
    base = {name: getattr(pem, name) for name in names}
    print("| family | k | d | ε | sklearn CPU (s) | " + " | ".join(
        f"arm {i}: CPU / sklearn per round | gap | releases" for i in range(len(arms))) + " |")
    for s in seeds:
        fam = family(s)
        rng = np.random.default_rng([fam.seed, 1])
        X, H = fam.sample(N, rng), fam.sample(20_000, rng)
        for eps in eps_list:
            ratios: list[list[float]] = [[] for _ in arms]
            gaps: list[float] = [0.0] * len(arms)
            releases: list[int] = [0] * len(arms)
            sk_cpu = []
            for r in range(rounds):
                _, tc, sk = _timed(lambda: GaussianMixture(fam.k, n_init=1,  # noqa: B023
                                                           random_state=0).fit(X))  # noqa: B023
                sk_cpu.append(tc)
                order = range(len(arms)) if r % 2 == 0 else reversed(range(len(arms)))
                for i in order:
                    for name in names:
                        setattr(pem, name, base[name])
                    for name, value in variants[i].items():
                        setattr(pem, name, type(base[name])(float(value)))
                    _, c, m = _timed(lambda: pg.PrivateGaussianMixture(  # noqa: B023
                        fam.k, method="em", epsilon=eps, delta=1e-6,  # noqa: B023
                        random_state=0).fit(X))  # noqa: B023
                    ratios[i].append(c / tc)
                    gaps[i] = sk.score(H) - m.score(H)  # type: ignore[attr-defined]
                    releases[i] = len(m.ledger_)  # type: ignore[attr-defined]
            for name in names:
                setattr(pem, name, base[name])
            print(f"| {s} | {fam.k} | {fam.d} | {eps:g} | {statistics.median(sk_cpu):.3f} | "
                  + " | ".join(" / ".join(f"{x:.1f}" for x in ratios[i])
                               + f" | {gaps[i]:.4f} | {releases[i]}" for i in range(len(arms)))
                  + " |", flush=True)


def _git() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, text=True,
                              capture_output=True).stdout.strip()
    except OSError:
        return "?"


MALLOC_MMAP = 1 << 25  # bytes: glibc's M_MMAP_THRESHOLD under --malloc-fixed (its dynamic cap)
MALLOC_TRIM = 1 << 28  # bytes: its M_TRIM_THRESHOLD


def _fix_malloc() -> bool:
    """Fix glibc's mmap threshold (``MALLOC_MMAP``) and trim threshold (``MALLOC_TRIM``) for
    this process (``mallopt``; the same as ``MALLOC_MMAP_THRESHOLD_=33554432
    MALLOC_TRIM_THRESHOLD_=268435456`` in the environment); False where there is no glibc.
    glibc raises its mmap threshold when a large mmapped block is freed, so an array a fit
    allocates is either fresh mmapped pages (page-faulted in, cleared) or reused heap,
    depending on what the process freed before: ``GaussianMixture(3).fit`` of data seed 1
    took 0.53 s CPU in a fresh process and 0.34 s after one private fit of main at d67b969
    (0.35 s either way with the thresholds fixed), so the table's ratios moved with the
    order of the fits and with how a private fit allocates."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if platform.system() != "Linux" or name is None:
        return False
    libc = ctypes.CDLL(name)
    if not hasattr(libc, "mallopt"):
        return False
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's malloc.h
    return bool(libc.mallopt(M_MMAP_THRESHOLD, MALLOC_MMAP)
                and libc.mallopt(M_TRIM_THRESHOLD, MALLOC_TRIM))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--epsilons", default=",".join(str(e) for e in EPSILONS))
    ap.add_argument("--profile", type=float, default=None, metavar="EPS",
                    help="print a cProfile of one private fit at this epsilon (seed 0)")
    ap.add_argument("--dump", default=None, metavar="FILE", help="save the 14 check fits")
    ap.add_argument("--compare", default=None, metavar="FILE",
                    help="refit the 14 check fits and compare them with FILE")
    ap.add_argument("--declip-dump", default=None, metavar="FILE",
                    help="record private EM's de-clipping calls on 4 fits, with outputs")
    ap.add_argument("--declip-compare", default=None, metavar="FILE",
                    help="re-run FILE's de-clipping calls and compare the outputs")
    ap.add_argument("--synth", default=None, metavar="FILE",
                    help="time the synthesizer's k = 32 fits at rho = 1e6, save them to FILE")
    ap.add_argument("--against", default=None, metavar="OLD",
                    help="with --synth: compare the fits with OLD's")
    ap.add_argument("--kernel", action="store_true",
                    help="time one EM kernel call (6 models and 1) instead")
    ap.add_argument("--malloc-fixed", action="store_true",
                    help="fix glibc's mmap and trim thresholds first (see _fix_malloc): "
                    "sklearn's and our times then no longer depend on what ran before")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="set a privgauss.mixture.private_em constant for every fit "
                    "(repeatable)")
    ap.add_argument("--families", default=None, metavar="SEEDS",
                    help="comma-separated mixture_families.py family seeds: time those "
                    "instead, at --epsilons, for each of --arms")
    ap.add_argument("--arms", default="", metavar="A;B",
                    help="with --families: ';'-separated variants, each comma-separated "
                    "NAME=VALUE private_em constants on top of --set ('' the baseline)")
    ap.add_argument("--rounds", type=int, default=2,
                    help="with --families: rounds of the arms, alternated")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    set_constants(a.set)
    eps_list = [float(e) for e in a.epsilons.split(",") if e]
    with threadpool_limits(1):
        if a.dump:
            np.savez(a.dump, **_check_fits())  # type: ignore[arg-type]
            return
        if a.compare:
            _compare(a.compare)
            return
        if a.declip_dump:
            _declip_dump(a.declip_dump)
            return
        if a.declip_compare:
            _declip_compare(a.declip_compare)
            return
        if a.kernel:
            _kernel(max(a.repeats, 10))
            return
        if a.synth:
            _synth(a.synth, a.against, a.repeats)
            return
        if a.malloc_fixed and not _fix_malloc():
            print("--malloc-fixed: no glibc mallopt here; thresholds left as they are")
        if a.families:
            warm = family(0)
            pg.PrivateGaussianMixture(warm.k, method="em", epsilon=10.0, delta=1e-6,
                                      random_state=0).fit(warm.sample(N, np.random.default_rng(0)))
            _families([int(x) for x in a.families.split(",")], eps_list, a.arms.split(";"),
                      a.rounds)
            return
        if a.profile is not None:
            X = _rows(N, np.random.default_rng(1000))
            prof = cProfile.Profile(time.process_time)  # CPU: the machine is shared
            prof.enable()
            _ours(X, a.profile, 0)
            prof.disable()
            pstats.Stats(prof).sort_stats("cumulative").print_stats(40)
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)
            return
        lines = [
            "# Private EM's speed against scikit-learn (issue 27)", "",
            f"Command: `OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src python "
            f"benchmarks/{Path(__file__).name} {' '.join(sys.argv[1:])}` (commit {_git()})", "",
            f"n = {N:.0e}, d = 10, k = {K} (`em_scale.py`'s mixture), 2e4 held-out rows per "
            f"data seed; medians of {a.repeats} fits each, one process, one BLAS thread. "
            "sklearn: `GaussianMixture(3, n_init=1)`, default tol. gap = sklearn's held-out "
            "mean log-likelihood minus ours (nat/row).", "",
            "| seed | fit | wall (s) | CPU (s) | wall / sklearn | CPU / sklearn | gap | notes |",
            "|---:|---|---:|---:|---:|---:|---:|---|"]
        ratios: dict[str, list[float]] = {}
        cpu_ratios: dict[str, list[float]] = {}
        for seed in range(a.seeds):
            X = _rows(N, np.random.default_rng(1000 + seed))
            H = _rows(20_000, np.random.default_rng(2000 + seed))
            tw, tc, sk = _measure(lambda: _sklearn(X, seed), a.repeats)  # noqa: B023
            base = sk.score(H)  # type: ignore[attr-defined]
            lines.append(f"| {seed} | sklearn | {tw:.2f} | {tc:.2f} | 1 | 1 | 0 | "
                         f"{sk.n_iter_} EM steps |")  # type: ignore[attr-defined]
            print(lines[-1], flush=True)
            for eps in eps_list:
                w, c, m = _measure(lambda: _ours(X, eps, seed), a.repeats)  # noqa: B023
                gap = base - m.score(H)  # type: ignore[attr-defined]
                steps = sum(1 for e in m.ledger_ if "moments" in str(e)  # type: ignore[attr-defined]
                            and "step" in str(e) and "k-means" not in str(e))
                lines.append(f"| {seed} | em ε = {eps:g} | {w:.2f} | {c:.2f} | **{w / tw:.2f}** | "
                             f"{c / tc:.2f} | {gap:.4f} | {len(m.ledger_)} releases |")  # type: ignore[attr-defined]
                ratios.setdefault(f"em ε = {eps:g}", []).append(w / tw)
                cpu_ratios.setdefault(f"em ε = {eps:g}", []).append(c / tc)
                print(lines[-1], f"({steps} moment releases)", flush=True)
        lines += ["", "Median wall / sklearn over the seeds: " + ", ".join(
            f"{name} **{statistics.median(v):.2f}**" for name, v in ratios.items())
                  + "; CPU / sklearn: " + ", ".join(
            f"{name} **{statistics.median(v):.2f}**" for name, v in cpu_ratios.items()) + ".", "",
                  f"Machine: {platform.platform()}, {os.cpu_count()} CPUs, load average "
                  f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end (shared), "
                  f"Python {platform.python_version()}, numpy {np.__version__}."]
        print("\n".join(lines[-3:]))
        if a.out:
            Path(a.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
