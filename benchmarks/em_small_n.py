"""Private EM's histogram localisation at small n (issue 27, brief SMALLN): how often the
practical joint histograms (``histogram_gaussian(..., constants="practical")``, the route
``method="em"`` runs) fail after spending at the ε_L em's plan gives them, at n just above
the n em accepts.

``--part loc``: for d in ``--dims``, n the smallest n ``em_requirements`` accepts at
(ε, δ) (× ``--above``), Gaussian rows (a random correlation, scales log-uniform over 4
octaves, mean 1e3), ``--seeds`` noise seeds: the localisation at em's (ε_L, δ/2) —
failures (``EstimationFailed``, which step) and the KL of the released Gaussian to
np.mean / np.cov of the same rows. Then the real tables ``--tables`` (the 80 % training
rows of ``real_corpus.split`` at split seed 0, as ``mixture_corpus.py`` fits them; n is the
table's), the same counts. ``--margins`` instead runs the localisation at ε_L = m × its
practical need (``localisation_min_epsilon``) for each m, at n where that is ``--eps-l``.
``--part corpus``: ``--tables`` of the fresh corpus (``mixture_corpus.py``) at ε, ``--seeds``
splits (seed s: split s, noise seed s, as ``real_mixtures.py``), without public rows
(``--public``: with 1 % public rows), one row per table: outcomes (fitted / refused before
spending / failed after spending, and why), whether em's frame was the diagonal one
(``em_plan.diagonal``), the gap to sklearn's best of 5 and "vs gauss" (the non-private
Gaussian's held-out score minus ours; > 0: worse) as median and worst, how many fits were
worse than that Gaussian, fits > 1 nat/row below sklearn without a warning, and the final
pick's choices.
``--part plans`` prints em's plans where this change must leave them alone (the 34 fresh
corpus shapes with 1 % public rows at ε = 1 and without at ε = 1e4; n = 5e4, d = 2–15,
k = 2–6 at ε = 1): run it on two checkouts and diff.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/em_small_n.py --part loc --seeds 20
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import math
import os
import sys
import types
import warnings
from collections import Counter
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import privgauss as pg  # noqa: E402
from privgauss.gaussian.histogram import histogram_gaussian  # noqa: E402
from privgauss.mechanisms import Release  # noqa: E402
from privgauss.mixture import private_em as pe  # noqa: E402

DELTA = 1e-6


def gaussian_rows(n: int, d: int, seed: int) -> np.ndarray:
    """n rows of a random Gaussian (public seed): correlation from a random factor, per-column
    scales log-uniform over 2^±2, mean 1e3."""
    rng = np.random.default_rng(10_000 + seed)
    A = rng.standard_normal((d, d)) / math.sqrt(d) + np.eye(d)
    C = A @ A.T
    s = np.sqrt(np.diag(C))
    scales = 2.0 ** rng.uniform(-2, 2, size=d)
    C = C / np.outer(s, s) * np.outer(scales, scales)
    return rng.multivariate_normal(np.full(d, 1e3), C, size=n)


def kl(m0: np.ndarray, S0: np.ndarray, m1: np.ndarray, S1: np.ndarray) -> float:
    """KL(N(m0, S0) ‖ N(m1, S1))."""
    d = m0.shape[0]
    S1i = np.linalg.inv(S1)
    diff = m1 - m0
    return 0.5 * float(np.trace(S1i @ S0) + diff @ S1i @ diff - d
                       + np.linalg.slogdet(S1)[1] - np.linalg.slogdet(S0)[1])


def localise(X: np.ndarray, eps_l: float, seed: int, k: int = 3,
             epsilon: float = 1.0) -> dict[str, Any]:
    """One localisation at (eps_l, δ/2), as em's plan runs it; where em's plan at
    (``epsilon``, δ) is the diagonal frame, that one (its KL to np.mean and the diagonal of
    np.cov: the frame it returns is diagonal)."""
    n, d = X.shape
    plan = pe.em_plan(n, d, k, pg.ApproxDP(epsilon, DELTA))
    if plan.diagonal:
        acct = pg.Accountant(pg.ApproxDP(epsilon, DELTA))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                m, C, _ = pe._histogram_frame(X, plan, Release.of(acct, seed))
            except pg.EstimationFailed as exc:
                return {"failed": getattr(exc, "step", None) or "?"}
        return {"kl": kl(X.mean(axis=0), np.diag(X.var(axis=0, ddof=1)), m, C)}
    acct = pg.Accountant(pg.ApproxDP(eps_l, DELTA / 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            m, C = histogram_gaussian(X, eps_l, DELTA / 2, release=Release.of(acct, seed))
        except pg.EstimationFailed as exc:
            return {"failed": getattr(exc, "step", None) or "?"}
    S = np.cov(X, rowvar=False).reshape(X.shape[1], -1)
    try:
        return {"kl": kl(X.mean(axis=0), S, m, C)}
    except np.linalg.LinAlgError:
        return {"kl": math.inf}


def accepted_n(d: int, k: int, epsilon: float) -> int:
    """The smallest n (to 1 %) ``em_requirements`` accepts (no public rows, no prior)."""
    budget = pg.ApproxDP(epsilon, DELTA)
    lo, hi = 10, 10
    while not pe.em_requirements(hi, d, k, budget).ok:
        lo, hi = hi, 2 * hi
    while hi - lo > max(1, lo // 100):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if pe.em_requirements(mid, d, k, budget).ok else (mid, hi)
    return hi


def summarise(results: list[dict[str, Any]]) -> str:
    fails = Counter(r["failed"] for r in results if "failed" in r)
    kls = sorted(r["kl"] for r in results if "kl" in r)
    med = f"{kls[len(kls) // 2]:.3g}" if kls else "—"
    worst = f"{kls[-1]:.3g}" if kls else "—"
    failed = ", ".join(f"{k}: {v}" for k, v in fails.items()) or "—"
    return f"{sum(fails.values())}/{len(results)} | {failed} | {med} | {worst}"


def eps_l_of(n: int, d: int, epsilon: float) -> float:
    """em's ε_L at n (the whole ε where its plan is the diagonal frame)."""
    if pe.em_plan(n, d, 3, pg.ApproxDP(epsilon, DELTA)).diagonal:
        return epsilon
    return pe._localisation_epsilon(n, d, epsilon, DELTA)


def fits(d: int, k: int, n: int, epsilon: float, seeds: int) -> str:
    """``seeds`` fits of ``PrivateGaussianMixture(k)`` on n rows of a generated mixture
    (``make_mixture``, separation 3, seed s) at (ε, δ): failures after spending, and the
    held-out (another n rows) gap to sklearn's best of 5 and to one non-private Gaussian."""
    from sklearn.mixture import GaussianMixture

    failed, gaps, vs, picked = 0, [], [], Counter()
    for s in range(seeds):
        data = pg.datasets.make_mixture(2 * n, k, d, separation=3.0, random_state=s).X
        rng = np.random.default_rng(s)
        data = data[rng.permutation(2 * n)]
        X, test = data[:n], data[n:]
        est = pg.PrivateGaussianMixture(k, epsilon=epsilon, delta=DELTA, random_state=s)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                est.fit(X)
            except pg.EstimationFailed:
                failed += 1
                continue
        ours = float(est.score(test))
        sk = float(GaussianMixture(k, n_init=5, random_state=s).fit(X).score(test))
        m, S = X.mean(axis=0), np.cov(X, rowvar=False).reshape(d, d)
        diff = test - m
        ll = -0.5 * (np.einsum("ij,ij->i", diff @ np.linalg.inv(S), diff)
                     + np.linalg.slogdet(S)[1] + d * math.log(2 * math.pi))
        gaps.append(sk - ours)
        vs.append(float(ll.mean()) - ours)
        picked[getattr(est, "selected_model_", None)] += 1
    gaps.sort()
    vs.sort()

    def med(v: list[float]) -> str:
        return f"{v[len(v) // 2]:.3g} / {v[-1]:.3g}" if v else "—"

    return (f"{failed}/{seeds} | {med(gaps)} | {med(vs)} | {sum(v > 0 for v in vs)} | "
            f"{', '.join(f'{a}×{b}' for a, b in picked.items())}")


# (rows, d) of the fresh corpus tables (``mixture_corpus.py``; rwm5yr's determined columns
# dropped as there)
SHAPES = [(2843, 3), (8437, 4), (3589, 6), (4877, 7), (2590, 4), (2381, 7), (2485, 5),
          (4956, 6), (5574, 9), (3000, 9), (3126, 7), (2385, 5), (2287, 6), (8088, 4),
          (4028, 8), (2148, 4), (4855, 7), (27326, 4), (4014, 3), (5904, 8), (5748, 4),
          (3250, 4), (3177, 2), (2820, 2), (2724, 7), (2929, 10), (2675, 5), (2000, 4),
          (3343, 10), (7584, 2), (5006, 7), (21638, 3), (4165, 5), (2412, 9)]


def print_plans() -> None:
    for rows, d in SHAPES:
        train = (rows * 4) // 5
        m = max(1, round(0.01 * train))
        print("public", rows, d, repr(pe.em_plan(train - m, d, 3, pg.ApproxDP(1.0, DELTA),
                                                 n_public=m)))
        print("eps1e4", rows, d, repr(pe.em_plan(train, d, 3, pg.ApproxDP(1e4, DELTA))))
    for d in range(2, 16):
        for k in range(2, 7):
            print("n5e4", d, k, repr(pe.em_plan(50_000, d, k, pg.ApproxDP(1.0, DELTA))))


@contextlib.contextmanager
def _unenforced(rm: Any) -> Any:
    """``real_mixtures``' estimator with ``enforce_requirements=False``."""
    cls = rm.pg.PrivateGaussianMixture
    rm.pg = types.SimpleNamespace(**{**vars(pg), "PrivateGaussianMixture": functools.partial(
        cls, enforce_requirements=False)})
    try:
        yield
    finally:
        rm.pg = pg


def _short(why: str) -> str:
    """The part of a refusal or failure message that says why (the n it asks, the step)."""
    at = why.find("needs about n")
    return why[at:at + 48] if at >= 0 else why[:90]


def corpus_rows(names: list[str], k: int, epsilon: float, seeds: int, public: bool,
                force: bool = False) -> None:
    import corpus
    import mixture_corpus
    import real_corpus
    import real_mixtures as rm

    mixture_corpus.fresh_tables(2000, 10)
    for name in names:  # as mixture_corpus.py --tables: a table outside the fresh ones
        if name not in corpus.TABLES:
            corpus.TABLES[name] = corpus.Table(name, f"pydataset {name}", "seen", False,
                                               corpus._pydataset(name))
    print("| table | n×d | fitted | refused | failed after spending | diagonal frame | gap "
          "median / worst | vs gauss median / worst | worse than gauss | > 1 unwarned | "
          "picked | why |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        rows, drop = rm.load_rows(name)
        res = []
        for s in range(seeds):
            train, test, private, pub = real_corpus.split(rows, s, 20000)
            ref = rm.references(train, test, pub, k, s)
            fit_rows, pub_rows = (private, pub) if public else (train, None)
            plan = pe.em_plan(fit_rows.shape[0], fit_rows.shape[1], k,
                              pg.ApproxDP(epsilon, DELTA),
                              n_public=0 if pub_rows is None else pub_rows.shape[0])
            if force:  # past em's refusal (an experiment: what its requirement guards)
                with _unenforced(rm):
                    r = rm.one_fit(fit_rows, pub_rows, test, k, epsilon, s, ref)
            else:
                r = rm.one_fit(fit_rows, pub_rows, test, k, epsilon, s, ref)
            r["diagonal"] = getattr(plan, "diagonal", False)  # (main before this: none)
            res.append(r)
        ok = [r for r in res if r["status"] == "ok"]
        why = Counter(_short(r["why"]) for r in res if r["status"] != "ok")
        gaps = sorted(r["gap"] for r in ok)
        vs = sorted(r["vs gauss"] for r in ok)
        unwarned = sum(1 for r in ok if r["gap"] > 1.0 and not r["warnings"])
        picked = Counter(r["picked"] for r in ok)

        def mw(v: list[float]) -> str:
            return f"{v[len(v) // 2]:.3g} / {v[-1]:.3g}" if v else "—"

        print(f"| {name}{f' (without {drop})' if drop else ''} | {rows.shape[0]}×"
              f"{rows.shape[1]} | {len(ok)}/{seeds} | "
              f"{sum(r['status'] == 'refused' for r in res)} | "
              f"{sum(r['status'] == 'failed' for r in res)} | "
              f"{sum(bool(r['diagonal']) for r in res)} | {mw(gaps)} | {mw(vs)} | "
              f"{sum(v > 0 for v in vs)} | {unwarned} | "
              f"{', '.join(f'{a}×{b}' for a, b in picked.items()) or '—'} | "
              f"{'; '.join(f'{b}× {a}' for a, b in why.items()) or '—'} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", default="loc",
                    choices=["loc", "margins", "plans", "corpus", "fits"])
    ap.add_argument("--public", action="store_true", help="--part corpus with 1 %% public rows")
    ap.add_argument("--force", action="store_true",
                    help="--part corpus past em's refusal (enforce_requirements=False)")
    ap.add_argument("--dims", type=int, nargs="*", default=[3, 7, 13])
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--above", type=float, default=1.02)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--margins", type=float, nargs="+", default=[1.0, 1.25, 1.5, 2.0])
    ap.add_argument("--eps-l", type=float, default=0.8)
    ap.add_argument("--tables", nargs="*", default=["immi1", "Hdma", "turnout"])
    ap.add_argument("--table-eps", type=float, nargs="*", default=None,
                    help="run the tables' localisation at these ε_L instead of em's")
    ap.add_argument("--n", type=int, default=None, help="--part fits at this n")
    ap.add_argument("--diag-from", type=float, default=None,
                    help="an experiment: em's DIAG_FROM (the diagonal frame where the refined "
                    "route needs more than this × ε)")
    args = ap.parse_args()
    if args.diag_from is not None:
        pe.DIAG_FROM = args.diag_from
    if args.part == "plans":
        print_plans()
        return
    if args.part == "fits":
        print("| d | k | n | ε | failed after spending | gap median / worst | vs gauss median / "
              "worst | worse than gauss | picked |")
        print("|---|---|---|---|---|---|---|---|---|")
        for d in args.dims:
            n = args.n or int(math.ceil(args.above * accepted_n(d, args.k, args.epsilon)))
            print(f"| {d} | {args.k} | {n} | {args.epsilon:g} | "
                  f"{fits(d, args.k, n, args.epsilon, args.seeds)} |", flush=True)
        return
    if args.part == "corpus":
        corpus_rows(args.tables, args.k, args.epsilon, args.seeds, args.public, args.force)
        return
    print("| rows | d | n | ε_L | failed | failed steps | median KL | worst KL |")
    print("|---|---|---|---|---|---|---|---|")
    if args.part == "margins":
        from privgauss.gaussian.histogram_budget import localisation_min_epsilon

        for d in args.dims:
            for m in args.margins:
                lo, hi = 10, 10**7  # n where m × need = eps_l
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    lo, hi = ((mid, hi) if m * localisation_min_epsilon(mid, d, DELTA / 2)
                              > args.eps_l else (lo, mid))
                res = [localise(gaussian_rows(hi, d, s), args.eps_l, s)
                       for s in range(args.seeds)]
                print(f"| Gaussian, margin {m} | {d} | {hi} | {args.eps_l:.3g} | "
                      f"{summarise(res)} |", flush=True)
        return
    for d in args.dims:
        n = int(math.ceil(args.above * accepted_n(d, args.k, args.epsilon)))
        e = eps_l_of(n, d, args.epsilon)
        res = [localise(gaussian_rows(n, d, s), e, s, args.k, args.epsilon)
               for s in range(args.seeds)]
        print(f"| Gaussian | {d} | {n} | {e:.3g} | {summarise(res)} |", flush=True)
    if args.tables:
        import mixture_corpus
        import real_corpus
        import real_mixtures

        mixture_corpus.fresh_tables(2000, 10)
        for name in args.tables:
            rows, _ = real_mixtures.load_rows(name)
            train = real_corpus.split(rows, 0, 20000)[0]
            n, d = train.shape
            ok = pe.em_requirements(n, d, args.k, pg.ApproxDP(args.epsilon, DELTA)).ok
            for e in args.table_eps or [eps_l_of(n, d, args.epsilon)]:
                res = [localise(train, e, s, args.k, args.epsilon) for s in range(args.seeds)]
                print(f"| {name}{'' if ok else ' (em refuses)'} | {d} | {n} | {e:.3g} | "
                      f"{summarise(res)} |", flush=True)


if __name__ == "__main__":
    main()
