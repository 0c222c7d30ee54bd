"""Private EM on generated mixture families (issue 27): wrong basins and median gap against
scikit-learn's best of 5 inits, over random families rather than one fixed draw.

A family (seeded; a fresh draw per seed): k in 2–6, d in 2–15, weights Dirichlet(2) with every
weight >= 0.05, each component's covariance a random rotation of per-axis standard deviations
log-uniform in [0.3, 3], means Gaussian points scaled so that the closest pair is exactly
``sep`` standard deviations apart (sep uniform in [1.5, 4]; a pair's distance divided by the
larger of the two components' largest standard deviation). n = 5e4 training rows, 2e4
held-out rows of the same family.

gap = held-out mean log-likelihood of ``GaussianMixture(k, n_init=5)`` minus that of
``PrivateGaussianMixture(k, method="em")`` (nat/row); a *wrong basin* is gap > 0.05. Time is
the ratio of our wall time to ``GaussianMixture(k, n_init=1)``'s, both on one BLAS thread.
Family seeds 0.. are the tuning set; seeds from 1000 on are never used while tuning and are
reported separately.

    python benchmarks/mixture_families.py --families 50 --held-out 50 \
        --out benchmarks/results/mixture_families.md
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from dataclasses import dataclass

import numpy as np
from sklearn.mixture import GaussianMixture
from threadpoolctl import threadpool_limits

import privgauss as pg

HELD_OUT_BASE = 1000  # family seeds >= this are never used for tuning
WRONG = 0.05  # a wrong basin: more than this below sklearn's best of 5
BUDGETS = {"eps=1, delta=1e-6": {"epsilon": 1.0, "delta": 1e-6},
           "eps=1e4, delta=1e-6": {"epsilon": 1e4, "delta": 1e-6}}


@dataclass(frozen=True)
class Family:
    """A generated mixture: parameters drawn from the family seed."""

    seed: int
    sep: float
    weights: np.ndarray
    means: np.ndarray
    roots: np.ndarray  # covariance square roots, (k, d, d)

    @property
    def k(self) -> int:
        return int(self.means.shape[0])

    @property
    def d(self) -> int:
        return int(self.means.shape[1])

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        lab = rng.choice(self.k, size=n, p=self.weights)
        return self.means[lab] + np.einsum("nij,nj->ni", self.roots[lab],
                                           rng.standard_normal((n, self.d)))

    def describe(self) -> str:
        return (f"k={self.k} d={self.d} sep={self.sep:.2f} "
                f"wmin={self.weights.min():.2f}")


def family(seed: int, k: int | None = None, d: int | None = None) -> Family:
    """The family of ``seed`` (k in 2–6 and d in 2–15 unless given)."""
    rng = np.random.default_rng([27, seed])
    k = int(rng.integers(2, 7)) if k is None else k
    d = int(rng.integers(2, 16)) if d is None else d
    sep = float(rng.uniform(1.5, 4.0))
    w = rng.dirichlet(np.full(k, 2.0))
    w = np.maximum(w, 0.05)
    w /= w.sum()
    roots = np.empty((k, d, d))
    sd_max = np.empty(k)
    for j in range(k):
        Q, R = np.linalg.qr(rng.standard_normal((d, d)))
        Q = Q * np.where(np.diag(R) < 0, -1.0, 1.0)
        sd = np.exp(rng.uniform(np.log(0.3), np.log(3.0), size=d))
        roots[j] = Q * sd  # Q diag(sd): covariance Q diag(sd²) Qᵀ
        sd_max[j] = sd.max()
    M = rng.standard_normal((k, d))
    ratio = min(np.linalg.norm(M[i] - M[j]) / max(sd_max[i], sd_max[j])
                for i in range(k) for j in range(i + 1, k))
    return Family(seed, sep, w, M * (sep / ratio), roots)


def _reference(fam: Family, n: int, X: np.ndarray, H: np.ndarray,
               cache: str | None) -> dict[str, float]:
    """sklearn's best of 5 (and of the seed-0 single init), its n_init = 1 time and the single
    Gaussian's score, read from the JSON file ``cache`` when it holds them for (family, n)
    (sklearn's fits are deterministic; its timing is of the run that filled the cache)."""
    key = f"{fam.seed}/{n}"
    stored: dict[str, dict[str, float]] = {}
    if cache and os.path.exists(cache):
        with open(cache) as f:
            stored = json.load(f)
        if key in stored:
            return stored[key]
    t0 = time.perf_counter()
    sk1 = GaussianMixture(fam.k, random_state=0).fit(X)
    t_sk1 = time.perf_counter() - t0
    sk5 = GaussianMixture(fam.k, n_init=5, random_state=0).fit(X)
    ref = {"best": float(max(sk5.score(H), sk1.score(H))), "t_sk1": t_sk1,
           "one_gaussian": float(GaussianMixture(1).fit(X).score(H))}
    if cache:
        if os.path.exists(cache):
            with open(cache) as f:
                stored = json.load(f)
        stored[key] = ref
        with open(f"{cache}.{os.getpid()}", "w") as f:  # atomic: parallel runs share a cache
            json.dump(stored, f)
        os.replace(f"{cache}.{os.getpid()}", cache)
    return ref


def run_family(fam: Family, n: int, budgets: dict[str, dict[str, float]], noise_seed: int = 0,
               method: str = "em", cache: str | None = None, public: int = 0
               ) -> dict[str, object]:
    """One family: sklearn's best of 5 and the private fits' gaps, times on one BLAS thread;
    ``public`` > 0: that many more rows of the family (their own stream) as ``public_X``."""
    rng = np.random.default_rng([fam.seed, 1])
    X, H = fam.sample(n, rng), fam.sample(20_000, rng)
    P = fam.sample(public, np.random.default_rng([fam.seed, 2])) if public else None
    out: dict[str, object] = {"family": fam.describe()}
    with threadpool_limits(1, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = _reference(fam, n, X, H, cache)
        best = ref["best"]
        out["t_sk1"] = ref["t_sk1"]
        out["one_gaussian_gap"] = best - ref["one_gaussian"]
        for name, kw in budgets.items():
            t0 = time.perf_counter()
            est = pg.PrivateGaussianMixture(fam.k, method=method, random_state=noise_seed,
                                            **kw)
            est.fit(X, public_X=P)
            out[f"t {name}"] = time.perf_counter() - t0
            out[f"gap {name}"] = best - est.score(H)
    return out


def sklearn_single_inits(fam: Family, n: int, inits: int) -> list[float]:
    """The non-private reference's own spread: gaps of ``GaussianMixture(k, n_init=1)`` fitted
    with ``inits`` other seeds (10, 11, ...) against the same best of 5 (and of the seed-0
    single init) that :func:`run_family` measures the private fits against."""
    rng = np.random.default_rng([fam.seed, 1])
    X, H = fam.sample(n, rng), fam.sample(20_000, rng)
    with threadpool_limits(1, user_api="blas"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        best = max(GaussianMixture(fam.k, n_init=5, random_state=0).fit(X).score(H),
                   GaussianMixture(fam.k, random_state=0).fit(X).score(H))
        return [best - GaussianMixture(fam.k, random_state=10 + r).fit(X).score(H)
                for r in range(inits)]


def _summary(rows: list[dict[str, object]], name: str) -> str:
    gaps = [float(r[f"gap {name}"]) for r in rows]  # type: ignore[arg-type]
    ratios = [float(r[f"t {name}"]) / float(r["t_sk1"]) for r in rows]  # type: ignore[arg-type]
    wrong = sum(g > WRONG for g in gaps)
    return (f"| {name} | {len(gaps)} | {wrong} | {statistics.median(gaps):.4f} | "
            f"{max(gaps):.3f} | {statistics.median(ratios):.1f} |")


def parse_seeds(text: str) -> list[int]:
    """Family seeds from "A-B" (a range, both ends) or "a,b,c"."""
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(s) for s in text.split(",")]


def print_variants(gaps: list[list[float]], variants: list[str]) -> None:
    """Per variant (columns of ``gaps``, one row per fit): wrong basins, median and mean gap,
    and the wrong basins it adds or fixes against the first variant."""
    G = np.array(gaps)
    for i, v in enumerate(variants):
        wrong, was = G[:, i] > WRONG, G[:, 0] > WRONG
        print(f"{v}: wrong {int(wrong.sum())}/{len(G)}, median {np.median(G[:, i]):.4f}, "
              f"mean {G[:, i].mean():.4f}; vs {variants[0]}: new wrong "
              f"{int((wrong & ~was).sum())}, fixed {int((~wrong & was).sum())}")


def set_constants(pairs: list[str]) -> None:
    """``--set NAME=VALUE``: a ``private_em`` constant, cast to its type (experiment switches;
    a tuple's entries separated by ``:``, e.g. ``STAT_SHARES=0.1:0.2:0.7``; another module of
    :mod:`privgauss.mixture` by its name, e.g. ``em_starts.SUMMARY_RESTARTS=20``)."""
    import importlib

    for kv in pairs:
        name, value = kv.split("=")
        mod, _, name = name.rpartition(".")
        pem = importlib.import_module(f"privgauss.mixture.{mod or 'private_em'}")
        old = getattr(pem, name)
        if isinstance(old, tuple):
            setattr(pem, name, tuple(type(x)(float(v)) for x, v in zip(old, value.split(":"),
                                                                      strict=True)))
        else:
            setattr(pem, name, type(old)(float(value)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", type=int, default=20, help="tuning family seeds 0..F-1")
    ap.add_argument("--first", type=int, default=0,
                    help="first tuning family seed (run a range in parallel processes)")
    ap.add_argument("--seeds", default=None,
                    help="comma-separated tuning family seeds (instead of --first/--families)")
    ap.add_argument("--held-out", type=int, default=0,
                    help=f"held-out family seeds {HELD_OUT_BASE}..")
    ap.add_argument("--held-out-first", type=int, default=0,
                    help=f"first held-out family: seeds {HELD_OUT_BASE}+F..{HELD_OUT_BASE}+F+H-1 "
                    "(fresh families beyond those already looked at)")
    ap.add_argument("--n", type=int, default=50_000)
    ap.add_argument("--budgets", default="all", choices=["all", "eps1", "eps1e4", "mid"],
                    help="mid: eps = 10, 100 and 1000 (where private EM's wide exploration "
                    "starts to apply)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--noise-seed", type=int, default=0,
                    help="the private fits' random_state (their noise)")
    ap.add_argument("--sklearn-cache", default=None, metavar="JSON",
                    help="read/write sklearn's reference scores here (deterministic; saves "
                    "refitting them on every run; times are those of the first run)")
    ap.add_argument("--sklearn-inits", type=int, default=0, metavar="R",
                    help="instead of private fits: R single-init sklearn fits per family, "
                    "counted against the same best of 5 (how often k-means++ + EM alone "
                    "lands in a wrong basin)")
    ap.add_argument("--public", type=int, default=0, metavar="R",
                    help="give each private fit R more rows of the family as public_X")
    ap.add_argument("--overparam", type=float, default=None, metavar="X",
                    help="set privgauss.mixture.private_em.OVERPARAM (1: no over-parameterised "
                    "run; an experiment switch, not an estimator option)")
    ap.add_argument("--low-d", action="store_true",
                    help="families of d = 2 + seed %% 3 columns (the full-grid step count's set)")
    ap.add_argument("--full-grid-steps", type=int, default=None, metavar="T",
                    help="set privgauss.mixture.private_em.T_FULL_GRID (20: the old step count "
                    "at low d; an experiment switch)")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="set a privgauss.mixture.private_em constant (an experiment switch; "
                    "repeatable)")
    args = ap.parse_args()
    set_constants(args.set)
    if args.full_grid_steps is not None:
        from privgauss.mixture import private_em as pem

        pem.T_FULL_GRID = args.full_grid_steps
    if args.overparam is not None:
        from privgauss.mixture import private_em

        private_em.OVERPARAM = args.overparam
    budgets = BUDGETS if args.budgets == "all" else {
        k: v for k, v in BUDGETS.items() if (args.budgets == "eps1") == (v["epsilon"] == 1.0)}
    if args.budgets == "mid":
        budgets = {f"eps={e:g}, delta=1e-6": {"epsilon": e, "delta": 1e-6}
                   for e in (10.0, 100.0, 1000.0)}
    tuning = (list(range(args.first, args.families)) if args.seeds is None
              else [int(s) for s in args.seeds.split(",")])
    sets = {"tuning": tuning,
            "held-out": list(range(HELD_OUT_BASE + args.held_out_first,
                                   HELD_OUT_BASE + args.held_out_first + args.held_out))}
    per_fit = ["| set | seed | family | " + " | ".join(f"gap {b}" for b in budgets)
               + " | single Gaussian gap | time / sklearn n_init=1 |",
               "|---|---|---|" + "---|" * len(budgets) + "---|---|"]
    summary = ["| set | budget | families | wrong basins (gap > 0.05) | median gap | max gap | "
               "median time / sklearn n_init=1 |", "|---|---|---|---|---|---|---|"]
    if args.sklearn_inits:
        for set_name, seeds in sets.items():
            wrong = 0
            for s in seeds:
                gaps = sklearn_single_inits(family(s), args.n, args.sklearn_inits)
                wrong += sum(g > WRONG for g in gaps)
                print(f"| {set_name} | {s} | {family(s).describe()} | "
                      + " ".join(f"{g:.3f}" for g in gaps) + " |", flush=True)
            print(f"{set_name}: sklearn n_init=1 wrong basins {wrong} of "
                  f"{len(seeds) * args.sklearn_inits}", flush=True)
        return
    for set_name, seeds in sets.items():
        rows = []
        for s in seeds:
            fam = family(s, d=2 + s % 3) if args.low_d else family(s)
            r = run_family(fam, args.n, budgets, noise_seed=args.noise_seed,
                           cache=args.sklearn_cache, public=args.public)
            rows.append(r)
            first = next(iter(budgets))
            line = (f"| {set_name} | {s} | {r['family']} | "
                    + " | ".join(f"{float(r[f'gap {b}']):.4f}" for b in budgets)  # type: ignore[arg-type]
                    + f" | {float(r['one_gaussian_gap']):.3f} | "  # type: ignore[arg-type]
                    f"{float(r[f't {first}']) / float(r['t_sk1']):.1f} |")  # type: ignore[arg-type]
            print(line, flush=True)
            per_fit.append(line)
        for b in budgets:
            if rows:
                summary.append(_summary(rows, b).replace("| ", f"| {set_name} | ", 1))
    print("\n".join(summary))
    if args.out:
        with open(args.out, "w") as f:
            f.write("# Private EM on generated mixture families\n\n")
            f.write("Command: `OPENBLAS_NUM_THREADS=1 python " + " ".join(sys.argv) + "`\n\n")
            f.write("gap: sklearn `GaussianMixture(k, n_init=5)` held-out mean log-likelihood "
                    "minus ours (nat/row). Time: ours (the first budget) / sklearn n_init=1, "
                    "one BLAS thread each.\n\n")
            f.write("\n".join(summary) + "\n\n" + "\n".join(per_fit) + "\n")


if __name__ == "__main__":
    from privgauss.progress import on_terminal

    with on_terminal():  # a status line naming the current release, on a terminal
        main()
