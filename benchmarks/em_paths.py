"""Where do private EM's runs go, against scikit-learn's EM from the same starts? A diagnosis of
a basin miss at a huge budget on one real table (issue 27: Treatment at ε = 1e4, whose
scikit-learn best of 5 parks a component on two columns' joint atom, re74 = re75 = 0, while
the private fit parks one on three, re74 = re75 = re78 = 0).

For a pydataset table and split seed (the rows and split of ``real_mixtures.py``):

* scikit-learn's best of 5 and the private fit (``PrivateGaussianMixture(3, epsilon=ε,
  delta=1e-6, random_state=seed)``), training / held-out mean log-likelihood;
* each private start (captured before the EM steps) run by *scikit-learn's* EM in the data's
  units (``reg_covar`` 1e-6, as its best of 5) for 100 and 1000 steps: the basin it reaches
  and its structure — each component's weight and, per column, ``P`` where its variance is
  below 1e-6 of the column's (parked), ``p`` below 1e-3 — and the same for scikit-learn's
  own single inits;
* each private run's structure after its last exploring step (before the run pick) and the
  fit's;
* with ``--path RUN``: that run's lowest component (least mean in column ``--column``) step by
  step beside scikit-learn's EM from the same start;
* diagnosis switches (not fits a user can get; they change the steps, not the releases'
  noise): ``--kernel-radius F`` multiplies the EM kernel's clipping radius and the
  de-clipping's by F at the plan's noise (what clipping alone does to the path);
  ``--from-sklearn`` makes every start scikit-learn's best of 5 (is its basin stable under
  the private steps?); ``--grid-cells M`` gives the start histogram at least M cells per
  axis (a finer grid than the plan's: do the frame starts then match scikit-learn's
  k-means?); ``--explore-radius F`` multiplies the plan's exploring steps' radii by F (their
  noise grows with them: a plan a fit could run, at more noise); ``--no-noise`` charges
  private_em's own releases (the re-whitening, the EM steps, the clipped count) but returns
  them exact (noise or clipping?);
* with ``--path RUN``, also one step's bias from clipping at the plan's first radius: each
  component of that run's start, the exact EM update (its mean in the data's units, its
  variances over the columns'; the third column on — Treatment's earnings) beside the
  clipped and de-clipped one
  (:func:`~privgauss.mixture.cluster_estimation.undo_clipping_batch`), no noise, and the
  share of its responsibility mass outside the radius (a Gaussian component: P(χ²_d > r²)).

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/em_paths.py Treatment 0 --path 4 --column 2
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import warnings
from typing import Any

import numpy as np
from sklearn.mixture import GaussianMixture

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import corpus  # noqa: E402
import mixture_corpus as mc  # noqa: E402
import real_mixtures as rm  # noqa: E402
from real_corpus import split  # noqa: E402

import privgauss as pg  # noqa: E402
from privgauss.mixture import private_em as pe  # noqa: E402

K = 3
ITERS = (100, 1000)
PARKED = 1e-6  # a component variance below this share of the column's: parked (P)
THIN = 1e-3  # ... below this share: narrowing onto a value (p)


def structure(w: np.ndarray, covs: np.ndarray, var: np.ndarray) -> str:
    """Each component as weight:flags (``P`` a parked column, ``p`` a thin one, ``.`` neither),
    sorted."""
    flags = ["".join("P" if v < PARKED else "p" if v < THIN else "." for v in np.diag(C) / var)
             for C in covs]
    return " ".join(sorted(f"{wj:.3f}:{f}" for wj, f in zip(w, flags, strict=True)))


def sk_from(run: tuple[np.ndarray, np.ndarray, np.ndarray], train: np.ndarray, it: int
            ) -> GaussianMixture:
    """scikit-learn's EM (data units, reg_covar 1e-6, no tolerance stop) for ``it`` steps."""
    w, m, c = run
    return GaussianMixture(K, weights_init=w / w.sum(), means_init=m,
                           precisions_init=np.linalg.inv(c), max_iter=it, tol=0.0,
                           reg_covar=1e-6).fit(train)


def one_step_bias(run: tuple[np.ndarray, ...], r: float, Z: np.ndarray, Winv: np.ndarray,
                  m0: np.ndarray, var: np.ndarray) -> None:
    """Print each component's exact EM update from ``run`` (whitened frame) beside private
    EM's clipped (radius ``r``) and de-clipped one, without noise (columns 2+ of the data)."""
    from privgauss.mixture.cluster_estimation import undo_clipping_batch

    w, mu, C = run
    L, Linv, ln = pe._model_terms(w, C)
    N, S, M = (x[0] for x in pe._em_kernel(Z, ((mu, Linv, ln),), r))
    ybar, Cy = undo_clipping_batch(S / N[:, None], M / N[:, None, None], r)
    Y = np.einsum("jed,ijd->ije", Linv, Z[:, None, :] - mu[None])
    lp = -0.5 * (Y**2).sum(-1) + ln
    R = np.exp(lp - lp.max(axis=1, keepdims=True))
    R /= R.sum(axis=1, keepdims=True)
    print(f"one step from the run's start at radius {r:.2f} (no noise): exact | clipped + "
          "de-clipped (mean, variance / column variance; columns 2+)")
    for j in range(len(w)):
        rj = R[:, j]
        em = rj @ Y[:, j] / rj.sum()
        D = Y[:, j] - em
        ec = (D * rj[:, None]).T @ D / rj.sum()
        out = float(rj @ ((Y[:, j] ** 2).sum(axis=1) > r * r)) / rj.sum()

        def mean(yb: np.ndarray, j: int = j) -> np.ndarray:
            return np.round((m0 + Winv @ (mu[j] + L[j] @ yb))[2:])

        def spread(c: np.ndarray, j: int = j) -> np.ndarray:
            return np.round((np.diag(Winv @ L[j] @ c @ L[j].T @ Winv.T) / var)[2:], 3)

        print(f"  component {j + 1}: outside {out:.3f}; {mean(em)} {spread(ec)} | "
              f"{mean(ybar[j])} {spread(Cy[j])}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table")
    ap.add_argument("seed", type=int, nargs="?", default=0)
    ap.add_argument("--epsilon", type=float, default=1e4)
    ap.add_argument("--path", type=int, default=0, help="a run (1-based) to follow step by step")
    ap.add_argument("--column", type=int, default=0, help="the path's component: least mean here")
    ap.add_argument("--kernel-radius", type=float, default=1.0)
    ap.add_argument("--from-sklearn", action="store_true")
    ap.add_argument("--grid-cells", type=int, default=0)
    ap.add_argument("--explore-radius", type=float, default=1.0)
    ap.add_argument("--no-noise", action="store_true")
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    np.set_printoptions(precision=3, suppress=True, linewidth=160)
    mc.fresh_tables(2000, 10)
    if a.table not in corpus.TABLES:  # e.g. Treatment (mixture_corpus.py skips it)
        corpus.TABLES[a.table] = corpus.Table(a.table, f"pydataset {a.table}", "", True,
                                              corpus._pydataset(a.table))
    rows, _ = rm.load_rows(a.table)
    train, test, _, _ = split(rows, a.seed, 20000)
    var = train.var(axis=0)
    ref = GaussianMixture(K, n_init=5, random_state=a.seed).fit(train)
    cap: dict[str, Any] = {"rel": []}
    tr, rel, steps = pe.transform_rows, pe._em_release, pe._em_steps
    kern, undo = pe._em_kernel, pe.undo_clipping_batch

    def transform_rows(X, W, m0):  # type: ignore[no-untyped-def]
        cap["W"], cap["m0"] = np.copy(W), np.copy(m0)
        return tr(X, W, m0)

    def em_release(stats, run, L, plan, t, release, n, run_tag="", *more, **kw):  # type: ignore
        out = rel(stats, run, L, plan, t, release, n, run_tag, *more, **kw)
        cap["rel"].append((t, run_tag, tuple(np.copy(x) for x in out)))
        return out

    def em_steps(Z, runs, plan, *more, **kw):  # type: ignore[no-untyped-def]
        if a.from_sklearn:
            W, m0 = cap["W"], cap["m0"]
            sk = (ref.weights_, (ref.means_ - m0) @ W.T,
                  np.array([W @ C @ W.T for C in ref.covariances_]))
            runs = [sk for _ in runs]
        cap["starts"] = [tuple(np.copy(x) for x in r) for r in runs]
        cap["plan"] = plan
        return steps(Z, runs, plan, *more, **kw)

    def em_kernel(B, models, radius, bound=0.0):  # type: ignore[no-untyped-def]
        return kern(B, models, radius * a.kernel_radius, bound)

    def undo_clipping_batch(ybar, C, r):  # type: ignore[no-untyped-def]
        return undo(ybar, C, r * a.kernel_radius)

    pe.transform_rows, pe._em_release, pe._em_steps = (  # type: ignore[assignment]
        transform_rows, em_release, em_steps)
    pe._em_kernel, pe.undo_clipping_batch = em_kernel, undo_clipping_batch  # type: ignore
    grid = pe._grid

    def finer_grid(n: int, d: int, rho_init: float) -> tuple[int, int]:
        p, m = grid(n, d, rho_init)
        return p, max(m, a.grid_cells)

    pe._grid = finer_grid  # type: ignore[assignment]
    plan_of, gauss, matrix = pe.em_plan, pe.gaussian_mechanism, pe.symmetric_matrix_mechanism

    def em_plan(*args, **kw):  # type: ignore[no-untyped-def]
        p = plan_of(*args, **kw)
        if a.explore_radius != 1.0 and p.step_radii:
            p = dataclasses.replace(p, step_radii=tuple(
                r * a.explore_radius if t < p.explore_steps else r
                for t, r in enumerate(p.step_radii)))
        return p

    def exact(mechanism):  # type: ignore[no-untyped-def]
        def release(value, *args, **kw):  # type: ignore[no-untyped-def]
            mechanism(value, *args, **kw)  # charged as in a fit
            return np.array(value, dtype=np.float64)
        return release

    pe.em_plan = em_plan  # type: ignore[assignment]
    if a.no_noise:
        pe.gaussian_mechanism = exact(gauss)  # type: ignore[assignment]
        pe.symmetric_matrix_mechanism = exact(matrix)  # type: ignore[assignment]
    est = pg.PrivateGaussianMixture(K, epsilon=a.epsilon, delta=1e-6,
                                    random_state=a.seed).fit(train)
    W, m0 = cap["W"], cap["m0"]
    Winv = np.linalg.inv(W)

    def data(run: tuple[np.ndarray, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        w, mu, C = run
        return w, m0 + mu @ Winv.T, np.array([Winv @ c @ Winv.T for c in C])

    plan = cap["plan"]
    print(f"{a.table} seed {a.seed}: n = {train.shape[0]}, d = {train.shape[1]}, "
          f"eps = {a.epsilon:g}; plan T = {plan.n_steps}, exploring {plan.explore_steps}, "
          f"runs {plan.n_starts}; grid {plan.grid_cells}^{plan.grid_dims}; kernel radius "
          f"x{a.kernel_radius:g}, exploring radius x{a.explore_radius:g}"
          f"{', no noise in the EM steps' if a.no_noise else ''}"
          f"{', every start = sklearn best of 5' if a.from_sklearn else ''}")
    print(f"sklearn best of 5: train {ref.score(train):.4f} held out {ref.score(test):.4f}  "
          f"[{structure(ref.weights_, ref.covariances_, var)}]")
    print(f"private fit:       train {est.score(train):.4f} held out {est.score(test):.4f}  "
          f"[{structure(est.weights_, est.covariances_, var)}]  gap "
          f"{ref.score(test) - est.score(test):.4f}")
    print("sklearn EM from each private start (data units), train/held out [structure] after "
          f"{', '.join(map(str, ITERS))} steps:")
    for i, run in enumerate([] if a.from_sklearn else cap["starts"]):
        gs = [sk_from(data(run), train, it) for it in ITERS]
        print(f"  start {i + 1}: " + " | ".join(
            f"{g.score(train):.3f}/{g.score(test):.3f} "
            f"[{structure(g.weights_, g.covariances_, var)}]" for g in gs))
    g = sk_from((est.weights_, est.means_, est.covariances_), train, 1000)
    print(f"  from the private fit: {g.score(train):.3f}/{g.score(test):.3f} "
          f"[{structure(g.weights_, g.covariances_, var)}]")
    print("sklearn single inits (k-means in the raw columns), seeds 0-4:")
    for r in range(5):
        g = GaussianMixture(K, random_state=r).fit(train)
        print(f"  seed {r}: {g.score(train):.3f}/{g.score(test):.3f} "
              f"[{structure(g.weights_, g.covariances_, var)}] {g.n_iter_} steps")
    last: dict[str, tuple[int, tuple[np.ndarray, ...]]] = {}
    for t, tag, out in cap["rel"]:
        if t < plan.explore_steps:
            last[tag] = (t, out)
    print("each private run after its last exploring step (frozen runs: their last):")
    for tag in sorted(last, key=lambda s: int(s.split()[-1]) if s else 0):
        t, out = last[tag]
        w, _, C = data(out)
        print(f" {tag or ' run'} (step {t + 1}): [{structure(w, C, var)}]")
    if a.path:
        one_step_bias(cap["starts"][a.path - 1], plan.step_radius(0) * a.kernel_radius,
                      (train - m0) @ W.T, Winv, m0, var)
        w, mu, C = data(cap["starts"][a.path - 1])

        def low(w: np.ndarray, mu: np.ndarray, C: np.ndarray) -> str:
            j = int(np.argmin(mu[:, a.column]))
            return (f"w {w[j]:.3f} mean {np.round(mu[j], 1)} var/column var "
                    f"{np.diag(C[j]) / var}")

        print(f"run {a.path}'s component of least mean in column {a.column}: sklearn EM from "
              "its start | the private run, every 4th step")
        priv = {t: out for t, tag, out in cap["rel"] if tag == f" run {a.path}"}
        for t in range(0, min(plan.explore_steps, 80), 4):
            g = sk_from((w, mu, C), train, t + 1)
            right = low(*data(priv[t])) if t in priv else "(frozen)"
            print(f"  {t + 1:3d} sklearn {low(g.weights_, g.means_, g.covariances_)}\n"
                  f"      private {right}")


if __name__ == "__main__":
    main()
