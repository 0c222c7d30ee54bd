"""Where the synthetic table's 2-way TV is lost at a huge budget on wide tables with discrete
columns (issue 28; SYNWIDE diagnosis, benchmarks/results/synth_wide.md).

For each table and seed (``synth_corpus.py``'s split: 80/20, at most 10,000 training rows) the
synthesizer is fitted at ``--eps`` (δ = 1e-6, seeded noise) and its pipeline re-run with one
stage replaced by a non-private stand-in at a time (post-processing experiments on the
training rows: none of this is a release):

* ``synth``: the synthesizer's own rows (``sample_table``);
* ``rows->U->rows``: the training rows' uniform scores through the released marginals
  (``to_uniform``, jittered) mapped straight back (``from_uniform``): the marginals' mapping
  alone, a perfect dependence model;
* ``rows U stratified``: the same scores through ``stratified_levels`` first (the sampler's
  re-ranking of each column onto its marginal);
* ``gmm k=K``: a non-private scikit-learn Gaussian mixture of K full-covariance components
  fitted to the training rows' normal scores, sampled, stratified and mapped back (no grid):
  what a larger k of the copula model would give with no noise;
* ``gmm k=K +grid``: those draws offered as proposals to the released grid
  (``DependenceGrid.sample``), as the sampler does;
* ``synth copula only``: the released copula model without the grid;
* ``synth k=K`` / ``synth grid g=G``: the synthesizer itself (DP, same budget split) with
  ``n_components`` forced to K, or the grid's levels forced to G (``--force-k``,
  ``--force-g``);
* ``hist g=G``: the training rows' own histogram of scores on G levels per column, rows
  uniform inside their cell (a noise-free grid of G levels with no model inside the cells).

Every line reports the 2-way TV (5×5 quantile bins, ``synth_corpus.py``'s rounding) against
the held-out rows, the training rows' floor, and the excess split by pair kind: "dd" both
columns with at most ``--levels`` distinct values in the training rows, "dc" one of them,
"cc" neither.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src python \\
        benchmarks/synth_wide_probe.py --tables Ketchup MedExp --seeds 0 1
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.special import ndtr, ndtri

sys.path.insert(0, str(Path(__file__).resolve().parent))

import synth_corpus as sc  # noqa: E402
import synth_peers as sp  # noqa: E402

import privgauss as pg  # noqa: E402
from privgauss.synthesis.synthesizer import stratified_levels  # noqa: E402


def pair_tv(real: np.ndarray, syn: np.ndarray, bins: int = 5) -> dict[tuple[int, int], float]:
    """``synth_peers._tv_2way`` per pair (on ``synth_corpus``'s rounded values)."""
    return sp._tv_2way_pairs(sc._rounded(real), sc._rounded(syn), bins)


def _map_back(syn: pg.PrivateSynthesizer, U: np.ndarray) -> np.ndarray:
    return np.column_stack([m.from_uniform(U[:, j]) for j, m in enumerate(syn.marginals_)])


def _hist_rows(U: np.ndarray, g: int, rng: np.random.Generator) -> np.ndarray:
    """The rows' cells on g levels per column, each row uniform inside its cell."""
    cell = np.clip(np.floor(U * g), 0, g - 1)
    return (cell + rng.uniform(0.0, 1.0, U.shape)) / g


def probe(name: str, df: object, seed: int, eps: float, ks: list[int], gs: list[int],
          max_rows: int, forced_k: tuple[int, ...] = (), forced_g: tuple[int, ...] = ()
          ) -> list[tuple[str, dict[tuple[int, int], float]]]:
    import pandas as pd
    from sklearn.mixture import GaussianMixture

    assert isinstance(df, pd.DataFrame)
    train, test = sc._split(df, seed, max_rows)
    X = train.to_numpy(dtype=np.float64)
    n, d = X.shape
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        syn = pg.PrivateSynthesizer(epsilon=eps, delta=1e-6, random_state=seed).fit(train)
        S = syn.sample_table(n, random_state=seed + 1).to_numpy(dtype=np.float64)
    secs = time.perf_counter() - t0
    rng = np.random.default_rng(seed + 7)
    U = syn._uniform(X, syn.marginals_, n, rng)
    out = [("floor (train)", pair_tv(test, X)), ("synth", pair_tv(test, S)),
           ("rows->U->rows", pair_tv(test, _map_back(syn, U))),
           ("rows U stratified", pair_tv(test, _map_back(syn, stratified_levels(U, rng))))]
    grid = syn.grid_
    info = (f"{name} seed {seed}: n={n} d={d} method={syn.method_} k={syn.n_components_} "
            f"grid={'none' if grid is None else grid.levels} factor={syn.grid_factor_} "
            f"fit+sample {secs:.1f}s")
    print(info, file=sys.stderr, flush=True)
    # the released copula alone
    draw = syn.copula_.sample(n, random_state=rng)
    Z = draw[0] if isinstance(draw, tuple) else draw
    out.append(("synth copula only",
                pair_tv(test, _map_back(syn, stratified_levels(ndtr(Z), rng)))))
    Zt = ndtri(U)
    for k in ks:
        gm = GaussianMixture(k, covariance_type="full", random_state=seed, reg_covar=1e-4,
                             max_iter=300).fit(Zt)
        Zs = gm.sample(n)[0][rng.permutation(n)]
        out.append((f"gmm k={k}", pair_tv(test, _map_back(syn, stratified_levels(ndtr(Zs),
                                                                                 rng)))))
        if grid is not None:
            P = ndtr(gm.sample(n * 8)[0][rng.permutation(n * 8)])
            Ug = grid.sample(n, P, rng)
            Ug = stratified_levels(Ug, rng, grid.column_masses())
            out.append((f"gmm k={k} +grid", pair_tv(test, _map_back(syn, Ug))))
    for k in forced_k:  # the synthesizer itself with k forced (DP em, same plan)
        t1 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sk = pg.PrivateSynthesizer(epsilon=eps, delta=1e-6, random_state=seed,
                                       n_components=k).fit(train)
            Sk = sk.sample_table(n, random_state=seed + 1).to_numpy(dtype=np.float64)
        out.append((f"synth k={k} ({time.perf_counter() - t1:.1f}s)", pair_tv(test, Sk)))
    for g in forced_g:  # the synthesizer with the grid's levels forced (same plan)
        import privgauss.synthesis.synthesizer as synmod

        keep = synmod.grid_levels
        synmod.grid_levels = lambda n_, d_, rho_, g=g: g  # type: ignore[assignment]
        t1 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sg = pg.PrivateSynthesizer(epsilon=eps, delta=1e-6, random_state=seed).fit(train)
                Sg = sg.sample_table(n, random_state=seed + 1).to_numpy(dtype=np.float64)
        finally:
            synmod.grid_levels = keep
        out.append((f"synth grid g={g} k={sg.n_components_} ({time.perf_counter() - t1:.1f}s)",
                    pair_tv(test, Sg)))
    for g in gs:
        out.append((f"hist g={g}", pair_tv(test, _map_back(syn, stratified_levels(
            _hist_rows(U, g, rng), rng)))))
    return [(info, {})] + out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", nargs="+", default=["Ketchup", "MedExp"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--eps", type=float, default=1e4)
    ap.add_argument("--ks", type=int, nargs="+", default=[1, 8, 16, 32])
    ap.add_argument("--gs", type=int, nargs="+", default=[8, 16, 32])
    ap.add_argument("--force-k", type=int, nargs="*", default=[],
                    help="also fit the synthesizer with n_components forced to each")
    ap.add_argument("--force-g", type=int, nargs="*", default=[],
                    help="also fit the synthesizer with the grid's levels forced to each")
    ap.add_argument("--levels", type=int, default=40,
                    help="a column with at most this many distinct values is 'discrete'")
    ap.add_argument("--max-rows", type=int, default=10000)
    args = ap.parse_args()
    wanted = {t.lower() for t in args.tables}
    tables = [t for t in sc._tables(2000, 10) if t[0].lower() in wanted]
    print(f"Command: `python benchmarks/synth_wide_probe.py {' '.join(sys.argv[1:])}`\n")
    for name, df in tables:
        disc = [int(df.iloc[:, j].nunique()) <= args.levels for j in range(df.shape[1])]
        print(f"### {name}: discrete columns (≤ {args.levels} values) "
              f"{[c for c, x in zip(df.columns, disc, strict=True) if x]}\n")
        print("| seed | probe | 2-way TV | excess | excess dd | excess dc | excess cc |")
        print("|---|---|---|---|---|---|---|")
        for seed in args.seeds:
            res = probe(name, df, seed, args.eps, args.ks, args.gs, args.max_rows,
                        tuple(args.force_k), tuple(args.force_g))
            info, floor = res[0][0], res[1][1]
            print(f"| {seed} | {info} | | | | | |")
            for label, tv in res[1:]:
                ex = {p: tv[p] - floor[p] for p in tv}

                def kind(p: tuple[int, int], disc: list[bool] = disc) -> str:
                    k = disc[p[0]] + disc[p[1]]
                    return "dd" if k == 2 else "dc" if k == 1 else "cc"

                parts = []
                for kk in ("dd", "dc", "cc"):
                    v = [e for p, e in ex.items() if kind(p) == kk]
                    parts.append(f"{np.mean(v):.3f} ({len(v)})" if v else "—")
                print(f"| {seed} | {label} | {np.mean(list(tv.values())):.3f} | "
                      f"{np.mean(list(ex.values())):.3f} | " + " | ".join(parts) + " |",
                      flush=True)
        print()


if __name__ == "__main__":
    main()
