"""Private EM's atom signal (``privgauss.mixture.atoms``, issue 27): where it fires, whether its
claim holds, and what its release costs the fit.

For each case (a generated family of ``mixture_families.py`` — continuous — or a table of the
held-out corpus of ``mixture_corpus.py``, split as there) and noise seed, two private EM fits
with the same noise seed: with the atom release (the default plan) and without it
(``ATOM_SHARE`` = 0: the plan before the release, its 1 % back on the EM steps). Reported:
the DP gain estimate (:func:`~privgauss.mixture.atoms.atom_gain`), its column and mass,
whether the fit warned ``DiscreteDataWarning`` (``atom`` when the atom test fired, ``floor``
for the eigenvalue-floor test), and the cost of the release = held-out mean log-likelihood
without it minus with it (nat/row, > 0: the release made the fit worse).

``--check`` also fits, non-privately, a k-component ``GaussianMixture`` started from a
component parked on the heaviest value of the gain's column (its rows; the rest split by
k-means) and reports its held-out log-likelihood minus the private fit's: what a non-private
mixture parked on that atom really gains (the claim the warning makes), next to
sklearn's best of 5 inits.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/atom_signal.py \\
        --families 0 1 2 3 1000 1001 1002 1003 --seeds 0 1 --out benchmarks/results/atom_signal.md
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import statistics
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mixture_corpus as mc  # noqa: E402
import mixture_families as mf  # noqa: E402
import real_mixtures as rm  # noqa: E402
from real_corpus import split  # noqa: E402

import privgauss as pg  # noqa: E402
from privgauss.mixture import private_em as pe  # noqa: E402

BUDGETS = {"eps1": 1.0, "eps1e4": 1e4}


def _fit(X: np.ndarray, P: np.ndarray | None, k: int, eps: float, seed: int,
         share: float | None) -> tuple[pg.PrivateGaussianMixture, set[str]]:
    old = pe.ATOM_SHARE
    if share is not None:
        pe.ATOM_SHARE = share
    try:
        est = pg.PrivateGaussianMixture(k, method="em", epsilon=eps, delta=1e-6,
                                        random_state=seed, enforce_requirements=False)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            est.fit(X, public_X=P)
    finally:
        pe.ATOM_SHARE = old
    return est, {w.category.__name__ for w in rec}


def _parked_gain(X: np.ndarray, H: np.ndarray, k: int, column: int) -> float:
    """Held-out score of sklearn's GaussianMixture(k) started from a component on the
    heaviest value of ``column`` (its rows) and k − 1 k-means clusters of the other rows."""
    from sklearn.cluster import KMeans
    from sklearn.mixture import GaussianMixture

    v, c = np.unique(X[:, column], return_counts=True)
    at = X[:, column] == v[np.argmax(c)]
    if int(at.sum()) <= X.shape[1]:  # no atom: nothing to park on
        return math.nan
    rest = X[~at]
    lab = KMeans(k - 1, n_init=5, random_state=0).fit_predict(rest) if k > 1 else np.zeros(
        len(rest), dtype=int)
    groups = [X[at]] + [rest[lab == j] for j in range(k - 1)]
    w = np.array([len(g) for g in groups], dtype=float)
    mu = np.array([g.mean(axis=0) for g in groups])
    cov = np.array([np.cov(g, rowvar=False).reshape(X.shape[1], -1) + 1e-6 * np.eye(X.shape[1])
                    for g in groups])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gm = GaussianMixture(k, weights_init=w / w.sum(), means_init=mu,
                             precisions_init=np.linalg.inv(cov), random_state=0).fit(X)
    return float(gm.score(H))


def _sklearn5(X: np.ndarray, H: np.ndarray, k: int) -> float:
    from sklearn.mixture import GaussianMixture

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(GaussianMixture(k, n_init=5, random_state=0).fit(X).score(H))


def run_case(name: str, X: np.ndarray, H: np.ndarray, P: np.ndarray | None, k: int,
             eps: float, seeds: list[int], check: bool) -> list[str]:
    lines = []
    sk = _sklearn5(X, H, k) if check else None
    for seed in seeds:
        t0 = time.perf_counter()
        try:
            base, _ = _fit(X, P, k, eps, seed, 0.0)
            est, caught = _fit(X, P, k, eps, seed, None)
        except (pg.EstimationFailed, ValueError) as exc:
            lines.append(f"| {name} | {eps:g} | {'yes' if P is not None else ''} | {seed} | "
                         f"{type(exc).__name__} | | | | | | | |")
            continue
        g = est.fit_info_["atom_gain"]
        floored = est.fit_info_["final_selection"]["em_thinnest_variance"] <= (
            pe.EIG_FLOOR * (1 + 1e-6))
        fired = [w for w, on in (("atom", g["gain"] >= g["alarm"]), ("floor", floored)) if on]
        assert ("DiscreteDataWarning" in caught) == bool(fired)
        ours = float(est.score(H))
        cost = float(base.score(H)) - ours
        parked = (f"{_parked_gain(X, H, k, int(g['column'])) - ours:.2f} / {sk - ours:.2f}"
                  if check and sk is not None else "")
        lines.append(f"| {name} | {eps:g} | {'yes' if P is not None else ''} | {seed} | "
                     f"{g['gain']:.3g} | {int(g['column'])} | {g['mass']:.3f} | "
                     f"{', '.join(fired) or '—'} | {cost:+.4f} | {parked} | "
                     f"{time.perf_counter() - t0:.1f} |")
        print(lines[-1], file=sys.stderr, flush=True)
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", type=int, nargs="*", default=[])
    ap.add_argument("--n", type=int, default=50_000, help="rows of a family's fit")
    ap.add_argument("--tables", nargs="*", default=[])
    ap.add_argument("--public", action="store_true",
                    help="tables: also with 1%% of the training rows as public rows")
    ap.add_argument("--budgets", nargs="+", default=["eps1", "eps1e4"], choices=list(BUDGETS))
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--check", action="store_true",
                    help="also fit the parked non-private mixture and sklearn's best of 5")
    ap.add_argument("--out")
    args = ap.parse_args()
    lines = ["| case | ε | public | seed | gain | column | mass | DiscreteData | cost | "
             "parked / sklearn5 − ours | s |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for f in args.families:
        fam = mf.family(f)
        rng = np.random.default_rng([fam.seed, 1])
        X, H = fam.sample(args.n, rng), fam.sample(20_000, rng)
        for b in args.budgets:
            lines += run_case(f"family {f} ({fam.describe()})", X, H, None, fam.k,
                              BUDGETS[b], args.seeds, args.check)
    if args.tables:
        mc.fresh_tables(2000, 10)
    for name in args.tables:
        rows, _ = rm.load_rows(name)
        train, test, private, public = split(rows, 0, 20000)
        for b in args.budgets:
            lines += run_case(name, train, test, None, 3, BUDGETS[b], args.seeds, args.check)
            if args.public:
                lines += run_case(name, private, test, public, 3, BUDGETS[b], args.seeds,
                                  args.check)
    costs = [float(line.split("|")[9]) for line in lines[2:] if line.split("|")[9].strip()]
    fired = [line for line in lines[2:] if line.split("|")[8].strip() not in ("—", "")]
    fits = [line for line in lines[2:] if line.split("|")[9].strip()]
    summary = (f"cost of the release over {len(costs)} fits: median {statistics.median(costs):+.4f}"
               f", mean {statistics.fmean(costs):+.4f}, range {min(costs):+.4f} to "
               f"{max(costs):+.4f} nat/row; DiscreteDataWarning on {len(fired)} of {len(fits)}"
               if costs else "")
    text = "\n".join([
        "# Private EM's atom signal", "",
        f"Command: `OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src python "
        f"benchmarks/atom_signal.py {shlex.join(sys.argv[1:])}` (see the script's docstring "
        "for the columns).", "", summary, "", *lines, ""])
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
    print(text)


if __name__ == "__main__":
    main()
