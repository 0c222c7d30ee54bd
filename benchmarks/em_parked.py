"""Why private EM at ε = 1e4 ends below scikit-learn's best of 5 on tables with point masses
("parked" tables, issue 27: Aids2 1.54, Chile 4.2, Treatment 2.1 nat/row).

``diagnose TABLE [SEED]`` (the rows and split of ``real_mixtures.py``):

* scikit-learn's ``GaussianMixture(3, n_init=5)`` and its *parked* components (a column whose
  variance in the component is below 1e-4 of the column's): weight, column, value, variance,
  and that variance in private EM's whitened frame (the smallest eigenvalue it needs there);
* the private fit (``PrivateGaussianMixture(3, epsilon=1e4, delta=1e-6, random_state=SEED)``):
  its component nearest each parked one, that component's variance in the column, and the gap
  the variance ratio alone explains, Σ w·½·ln(v_ours / v_sklearn) (nat/row) — against the
  measured gap;
* the winning run's smallest whitened-frame eigenvalue per EM step with the step's eigenvalue
  floor (``_step_eig_floor``) and the numeric floor;
* *basin or floor?* (a) scikit-learn's EM started from the private fit (reg_covar 1e-6, tol
  1e-6): the training and held-out log-likelihood it reaches and its steps; (b) private EM
  with every start replaced by scikit-learn's fit (mapped into the whitened frame; its
  eigenvalues repaired to the numeric floor): the gap it ends with.

``sweep --tables ... --seeds S --variants NF,P ...``: the held-out gap of the private fit at
ε = 1e4 per table and seed for each *floor variant* — ``private_em.NUMERIC_FLOOR`` = NF and
``private_em.FLOOR_POWER`` = P set for the fit (``1e-8,4``: the code as it is) — with
failures (``EstimationFailed``) and the time per fit. The variants patch the module's
constants: a measurement of a proposed change, not the change.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/em_parked.py diagnose Aids2 0
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/em_parked.py sweep --tables Aids2 Chile --seeds 2 \\
        --variants 1e-8,4 1e-16,8
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import statistics
import sys
import time
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
from privgauss.linalg import sym  # noqa: E402
from privgauss.mixture import private_em as pe  # noqa: E402
from privgauss.mixture.em_starts import repair_covariance  # noqa: E402

K = 3
EPS = 1e4
PARKED = 1e-4  # a component's variance below this share of the column's: parked


def _rows(name: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    mc.fresh_tables(2000, 10)
    if name not in corpus.TABLES:
        corpus.TABLES[name] = corpus.Table(name, f"pydataset {name}", "", False,
                                           corpus._pydataset(name))
    rows, _ = rm.load_rows(name)
    train, test, _, _ = split(rows, seed, 20000)
    return train, test


def _private(train: np.ndarray, seed: int, cap: dict[str, Any] | None = None,
             start: GaussianMixture | None = None) -> pg.PrivateGaussianMixture:
    """The private fit at ε = 1e4; ``cap`` receives the frame (m0, W), the winning run's
    per-step smallest eigenvalues and floors; ``start`` replaces every EM start by this fit."""
    transform, steps, release = pe.transform_rows, pe._em_steps, pe._em_release
    frame: dict[str, Any] = {}
    trace: list[tuple[int, float, float]] = []

    def transform_rows(X, W, m0):  # type: ignore[no-untyped-def]
        frame.update(W=np.array(W), m0=np.array(m0))
        return transform(X, W, m0)

    def em_steps(Z, runs, plan, rel, n, stops=None, k=None, frozen=None):  # type: ignore
        if start is not None:
            W, m0 = frame["W"], frame["m0"]
            covs = np.array([repair_covariance(sym(W @ C @ W.T), pe.NUMERIC_FLOOR)
                             for C in start.covariances_])
            forced = (np.array(start.weights_), (start.means_ - m0) @ W.T, covs)
            runs = [tuple(np.copy(x) for x in forced) for _ in runs]
        return steps(Z, runs, plan, rel, n, stops, k=k, frozen=frozen)

    def em_release(stats, run, L, plan, t, rel, n, run_tag=""):  # type: ignore
        out = release(stats, run, L, plan, t, rel, n, run_tag)
        if plan.runs(t) == 1:
            rm_ = plan.stat_rhos(t)[2]
            sig = pe.soft_outer_sums_frobenius(plan.step_radius(t)) / math.sqrt(2.0 * rm_)
            j = int(np.argmin([np.linalg.eigvalsh(c)[0] for c in out[2]]))
            d = out[1].shape[1]
            trace.append((t + 1, float(np.linalg.eigvalsh(out[2][j])[0]),
                          pe._step_eig_floor(sig / (n * float(out[0][j])), d)))
        return out

    pe.transform_rows, pe._em_steps, pe._em_release = (  # type: ignore[assignment]
        transform_rows, em_steps, em_release)
    try:
        est = pg.PrivateGaussianMixture(K, epsilon=EPS, delta=1e-6, random_state=seed)
        est.fit(train)
    finally:
        pe.transform_rows, pe._em_steps, pe._em_release = transform, steps, release
    if cap is not None:
        cap.update(frame, trace=trace)
    return est


def diagnose(name: str, seed: int) -> None:
    warnings.simplefilter("ignore")
    train, test = _rows(name, seed)
    ref = GaussianMixture(K, n_init=5, random_state=seed).fit(train)
    cap: dict[str, Any] = {}
    est = _private(train, seed, cap)
    W = cap["W"]
    var = train.var(axis=0)
    print(f"## {name}, split seed {seed}: n = {train.shape[0]}, d = {train.shape[1]}, "
          f"ε = {EPS:g}\n")
    print(f"sklearn best of 5: train {ref.score(train):.4f}, held out {ref.score(test):.4f}; "
          f"private: train {est.score(train):.4f}, held out {est.score(test):.4f} "
          f"(gap {ref.score(test) - est.score(test):.4f} held out, "
          f"{ref.score(train) - est.score(train):.4f} train)\n")
    print("| sklearn comp. | weight | column | value | rows at it | var (sklearn) | "
          "its whitened eig. | our comp. weight | var (ours) | ½w·ln ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    explained = 0.0
    for j in range(K):
        diag = np.diag(ref.covariances_[j])
        for c in np.flatnonzero(diag < PARKED * var).tolist():
            value = float(ref.means_[j, c])
            at = int(np.sum(train[:, c] == np.round(value, 6)))
            # the component of ours nearest in its standardised mean
            dist = (((est.means_ - ref.means_[j]) / np.sqrt(var)) ** 2).sum(axis=1)
            i = int(np.argmin(dist))
            ours = float(est.covariances_[i][c, c])
            # the smallest eigenvalue the whitened frame needs: the variance of the column
            # direction, v / ‖W^{-T} e_c‖² (a direction of variance v in x)
            u = np.linalg.solve(W.T, np.eye(train.shape[1])[c])
            white = float(diag[c] / (u @ u))
            part = 0.5 * float(ref.weights_[j]) * math.log(max(ours, 1e-300) / diag[c])
            explained += part
            print(f"| {j} | {ref.weights_[j]:.3f} | {c} | {value:.6g} | {at} | {diag[c]:.3g} | "
                  f"{white:.3g} | {est.weights_[i]:.3f} | {ours:.3g} | {part:.3f} |")
    print(f"\nGap explained by the parked variances alone: {explained:.3f} nat/row "
          f"(training gap {ref.score(train) - est.score(train):.3f}).\n")
    trace = cap["trace"]
    shown = [x for x in trace if x[0] % 25 == 0 or x is trace[0] or x is trace[-1]
             or x is trace[-2]]
    print("Winning run after the pick, step: smallest whitened eigenvalue / the step's floor "
          f"(numeric floor {pe.NUMERIC_FLOOR:g}): "
          + ", ".join(f"{t}: {e:.3g}/{f:.3g}" for t, e, f in shown) + "\n")
    # (a) scikit-learn's EM from the private fit
    gm = GaussianMixture(K, weights_init=est.weights_ / est.weights_.sum(),
                         means_init=est.means_,
                         precisions_init=np.linalg.inv(est.covariances_), tol=1e-6,
                         max_iter=2000, reg_covar=1e-6).fit(train)
    print(f"(a) sklearn EM from the private fit: train {gm.score(train):.4f}, held out "
          f"{gm.score(test):.4f} after {gm.n_iter_} steps (sklearn's best of 5: "
          f"{ref.score(train):.4f} / {ref.score(test):.4f})")
    # (b) private EM from scikit-learn's fit
    forced = _private(train, seed, start=ref)
    thin = [float(np.min(np.diag(c) / var)) for c in forced.covariances_]
    fgap = ref.score(test) - forced.score(test)
    print(f"(b) private EM with every start = sklearn's fit: gap {fgap:.4f} held out "
          "(smallest variance / column's per component "
          f"{np.array2string(np.array(thin), precision=3)})\n")


class FactorPrototype:
    """An experiment, not the library's code: private EM with each component's covariance
    carried by its Cholesky factor across steps (L_new = L·chol(C) from the component-frame
    update C, floored through the factor's singular values), so that an eigenvalue far below
    float64's resolution of an O(1) matrix (Chile's parked direction needs 1e-16 in the
    whitened frame) stays exact: a factor resolves singular values down to ~1e-16 of its
    largest, i.e. eigenvalues to ~1e-32. Patched into ``private_em`` for the fit inside
    ``with FactorPrototype():`` (the releases, their sensitivities and the ledger are the
    same; only the post-processing's arithmetic changes). Superseded by the library's own
    factor path in wide plans (``private_em.EMPlan.factored``, branch ``factors``), which
    the prototype turns off while it is patched in (it measures the prototype)."""

    def __init__(self, ridge: float = 0.0) -> None:
        self.ridge = ridge  # > 0: add ridge·I in the data's units after each step (sklearn's
        # reg_covar, mapped into the whitened frame as ridge·W Wᵀ, through the factor)
        self.W: np.ndarray | None = None
        self.fact: dict[bytes, np.ndarray] = {}
        self.inner: np.ndarray | None = None
        self.L: np.ndarray | None = None

    def _key(self, C: np.ndarray) -> bytes:
        return np.ascontiguousarray(C, dtype=np.float64).tobytes()

    def _factor(self, C: np.ndarray) -> np.ndarray:
        got = self.fact.get(self._key(C))
        return got if got is not None else np.linalg.cholesky(C)

    def __enter__(self) -> FactorPrototype:
        from privgauss.mixture import em_final as ef

        self.saved = (pe.repair_covariance, pe._em_release, pe._model_terms, pe._output,
                      pe._model_change, ef._terms, pe.transform_rows)
        repair, release, _, output, change, terms, transform = self.saved
        proto = self

        def transform_rows(X, W, m0):  # type: ignore[no-untyped-def]
            proto.W = np.array(W)
            return transform(X, W, m0)

        def repair_covariance(C, lo=None):  # type: ignore[no-untyped-def]
            if lo is None:  # the component-frame repair inside the step update
                out = repair(C)
                proto.inner = out
                return out
            if proto.inner is None or proto.L is None or np.ndim(C) != 2:
                return repair(C, lo)
            inner, proto.inner = proto.inner, None
            errs = [float(np.abs(Lj @ inner @ Lj.T - C).max()) for Lj in proto.L]
            Lj = proto.L[int(np.argmin(errs))]
            F = Lj @ np.linalg.cholesky(inner)
            U, sv, _ = np.linalg.svd(F)
            sv = np.clip(sv, math.sqrt(lo), 100.0)  # the floor and cap on eigenvalues
            F = (U * sv).T
            if proto.ridge > 0 and proto.W is not None:  # Σ + ridge·W Wᵀ = [F; √r Wᵀ]ᵀ[..]
                F = np.vstack([F, math.sqrt(proto.ridge) * proto.W.T])
            _, R = np.linalg.qr(F)
            Lnew = R.T * np.sign(np.diagonal(R))[None, :]
            Cn = Lnew @ Lnew.T
            proto.fact[proto._key(Cn)] = Lnew
            return Cn

        def em_release(stats, run, L, *a, **kw):  # type: ignore[no-untyped-def]
            proto.L, proto.inner = L, None
            try:
                return release(stats, run, L, *a, **kw)
            finally:
                proto.L, proto.inner = None, None

        def model_terms(weights, covs, factors=None):  # type: ignore[no-untyped-def]
            k, d, _ = covs.shape
            L = np.array([proto._factor(C) for C in covs])
            Linv = np.array([np.linalg.inv(Lj) for Lj in L])
            logdet = 2.0 * np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1)
            return L, Linv, np.log(weights) - 0.5 * logdet - 0.5 * d * math.log(2 * math.pi)

        def out_model(run, m0, W, Winv, prior, factors=None):  # type: ignore[no-untyped-def]
            w, means, covs = output(run, m0, W, Winv, prior)
            if prior is None:
                covs = np.array([(Winv @ proto._factor(C)) @ (Winv @ proto._factor(C)).T
                                 for C in run[2]])
            return w, means, covs

        def model_change(old, new, factors=None):  # type: ignore[no-untyped-def]
            w0, m0_, c0 = old
            w1, m1, c1 = new
            d = m0_.shape[1]
            total = float(np.sum(w0 * (np.log(w0) - np.log(w1))))
            try:
                for j in range(w0.shape[0]):
                    L1 = proto._factor(c1[j])
                    A = np.linalg.solve(L1, proto._factor(c0[j]))
                    b = np.linalg.solve(L1, m1[j] - m0_[j])
                    logdet = 2.0 * float(np.sum(np.log(np.abs(np.diagonal(A)))))
                    total += 0.5 * float(w0[j]) * (float(np.sum(A * A)) - d + float(b @ b)
                                                   - logdet)
            except np.linalg.LinAlgError:
                return math.inf
            return max(total, 0.0) if math.isfinite(total) else math.inf

        def score_terms(run, floor, factors=None):  # type: ignore[no-untyped-def]
            w, means, covs = run
            if floor >= ef.EIG_FLOOR or not all(proto._key(C) in proto.fact for C in covs):
                return terms(run, floor)
            d = means.shape[1]
            L = np.array([proto._factor(C) for C in covs])
            Linv = np.array([np.linalg.inv(Lj) for Lj in L])
            logdet = 2.0 * np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1)
            return means, Linv, np.log(w) - 0.5 * logdet - 0.5 * d * math.log(2 * math.pi)

        pe.repair_covariance, pe._em_release, pe._model_terms = (  # type: ignore[assignment]
            repair_covariance, em_release, model_terms)
        pe._output, pe._model_change, ef._terms = (  # type: ignore[assignment]
            out_model, model_change, score_terms)
        pe.transform_rows = transform_rows  # type: ignore[assignment]
        self.gate = pe.EMPlan.factored
        pe.EMPlan.factored = property(lambda plan: False)  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        from privgauss.mixture import em_final as ef

        (pe.repair_covariance, pe._em_release, pe._model_terms, pe._output,
         pe._model_change, ef._terms, pe.transform_rows) = self.saved
        pe.EMPlan.factored = self.gate  # type: ignore[assignment]


def _positive(C: np.ndarray) -> bool:
    """Whether a released covariance is positive definite as the user's scoring reads it:
    its correlation matrix (scaled by the diagonal) has a Cholesky factor and the diagonal
    is positive."""
    diag = np.diag(C)
    if not np.all(diag > 0):
        return False
    s = 1.0 / np.sqrt(diag)
    try:
        np.linalg.cholesky(C * np.outer(s, s))
    except np.linalg.LinAlgError:
        return False
    return True


def sweep(tables: list[str], seeds: int, variants: list[str]) -> None:
    warnings.simplefilter("ignore")
    specs = [(float(v.split(",")[0]), float(v.split(",")[1]),
              v.split(",")[2] if v.count(",") > 1 else "") for v in variants]
    head = " | ".join(f"NF {nf:g}, P {p:g}{', factors' if 'f' in f else ''}"
                      f"{', ridge 1e-6' if 'r' in f else ''}" for nf, p, f in specs)
    print(f"| table | n×d | seed | {head} |")
    print("|---|---|---|" + "---|" * len(specs))
    saved = pe.NUMERIC_FLOOR, pe.FLOOR_POWER
    per: dict[int, list[float]] = {i: [] for i in range(len(specs))}
    secs: dict[int, list[float]] = {i: [] for i in range(len(specs))}
    fails = [0] * len(specs)
    bad = [0] * len(specs)
    for name in tables:
        for seed in range(seeds):
            train, test = _rows(name, seed)
            ref = GaussianMixture(K, n_init=5, random_state=seed).fit(train)
            cells = []
            for i, (nf, p, fac) in enumerate(specs):
                pe.NUMERIC_FLOOR, pe.FLOOR_POWER = nf, p
                t0 = time.perf_counter()
                try:
                    with (FactorPrototype(1e-6 if "r" in fac else 0.0) if "f" in fac
                          else contextlib.nullcontext()):
                        est = pg.PrivateGaussianMixture(K, epsilon=EPS, delta=1e-6,
                                                        random_state=seed).fit(train)
                    gap = float(ref.score(test) - est.score(test))
                    per[i].append(gap)
                    secs[i].append(time.perf_counter() - t0)
                    pd = all(_positive(C) for C in est.covariances_)
                    bad[i] += not pd
                    cells.append(f"{gap:.4f} ({secs[i][-1]:.1f} s){'' if pd else ' **not PD**'}")
                except pg.EstimationFailed:
                    fails[i] += 1
                    cells.append("**failed**")
                finally:
                    pe.NUMERIC_FLOOR, pe.FLOOR_POWER = saved
            print(f"| {name} | {train.shape[0]}×{train.shape[1]} | {seed} | "
                  + " | ".join(cells) + " |", flush=True)
    print("\n" + "; ".join(
        f"NF {nf:g}, P {p:g}: above 0.02 {sum(g > 0.02 for g in per[i])} of {len(per[i])}, "
        f"failed {fails[i]}, covariances not PD {bad[i]}, "
        f"median s/fit {statistics.median(secs[i]) if secs[i] else 0:.2f}"
        for i, (nf, p, _) in enumerate(specs)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("diagnose")
    d.add_argument("table")
    d.add_argument("seed", type=int, nargs="?", default=0)
    d.add_argument("--variant", default=None, metavar="NF,P",
                   help="set private_em.NUMERIC_FLOOR and FLOOR_POWER for the private fits")
    s = sub.add_parser("sweep")
    s.add_argument("--tables", nargs="+", required=True)
    s.add_argument("--seeds", type=int, default=1)
    s.add_argument("--variants", nargs="+", default=["1e-8,4"])
    a = ap.parse_args()
    if a.cmd == "diagnose":
        if a.variant:
            pe.NUMERIC_FLOOR, pe.FLOOR_POWER = (float(x) for x in a.variant.split(","))
        diagnose(a.table, a.seed)
    else:
        sweep(a.tables, a.seeds, a.variants)


if __name__ == "__main__":
    main()
