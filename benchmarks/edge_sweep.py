"""Edge sweep (issues 27/28): every estimator and method × data defects × budgets.

Runs, for every registered method by name, ``pg.PrivateGaussian(method=m)`` (each of
``methods.names("gaussian")``), ``pg.PrivateGaussianMixture(2, method=m)`` (each of
``methods.names("mixture")``), ``pg.PrivateSynthesizer`` and the command line
(``fit-gaussian``, ``fit-mixture``, ``synthesize`` on a CSV), on data with one defect each:

* ``clean``      — the base draw (Gaussian: d = 3, correlated, unequal scales; mixture: k = 2,
                   d = 3, rotated components at separation ratio 7 (``separation_ratio``:
                   ~ 37 sd), weights 0.4 / 0.6 — spherical and equal-weight for ``pegme``,
                   its model class);
* ``sorted``     — the rows sorted lexicographically;
* ``dups``       — n/20 distinct rows rounded to 0.1, each repeated 20 times (ties, duplicates);
* ``const``      — the last column constant (7.0);
* ``binary``     — the last column 0/1 (Bernoulli(0.3), independent of the rest);
* ``intcodes``   — the last column floor()-ed to integer codes;
* ``t2.5``       — multivariate t with 2.5 degrees of freedom in place of each Gaussian;
* ``gross``      — 1 % of the rows replaced by 1e6 in every column;
* ``scales``     — the columns multiplied by 1e-6, 1 and 1e6;
* ``d1``         — one column;
* ``n-edge``     — the clean draw at n = ceil(1.1 × the method's stated requirement)
                   (``methods.requirements``; only where a method states one);

× budgets ε ∈ {1, 1e4, 1e8, 1e12} with δ = 1e-6, and ρ ∈ {0.5, 1e8} for the zCDP methods
(with a prior — mean ball and eigenvalue bounds computed from the generating law, generous
by 10× — where a method needs one under ρ). Methods that need a prior (``clip``,
``coinpress``, ``hypothesis-selection``) get it at every budget; ``clip`` gets the rows'
np.cov as its known covariance; public-row methods get m public rows drawn from the same
defective law (an independent draw). n is 3000 (Gaussian) / 4000 (mixture), raised to
1.2 × the stated requirement when that is larger (up to a cap; above it the cell runs at the
base n and is expected to be refused).

Outcomes per cell: ``ok``; ``refused`` (a ValueError family exception, nothing spent);
``failed`` (``EstimationFailed`` after spending; ``failed-internal`` when the exception says
``internal=True``: an error inside the algorithm, a bug); ``crash`` (any other exception, or
anything raised after spending that is not ``EstimationFailed``); ``timeout`` (over
``--timeout`` seconds). For ok fits, the error against the non-private counterpart on the
same rows:

* Gaussians: ``mean_err`` = max_j |μ̂_j − μ_j| / s_j and ``cov_err`` = max_ij |Σ̂_ij − Σ_ij| /
  (s_i s_j), against np.mean / np.cov(bias=True), s_j the column's sd (1 for a constant
  column: then absolute);
* mixtures: ``gap`` = training mean log-likelihood per row of sklearn's
  ``GaussianMixture(2, n_init=5)`` (the best of three column scalings — raw, sd, IQR — each
  log-likelihood mapped back to the rows' units by the Jacobian) minus ours (nat/row;
  negative: ours higher; ours includes private EM's broad background component where it has
  one);
* synthesizer: ``corr_mae`` (mean |Δ| of the off-diagonal Pearson correlations, pairs with a
  constant column left out) and ``tv1`` (mean over columns of the 1-way total variation on
  ≤ 20 quantile bins of the real column with edges between its distinct values, or on its
  levels when it has ≤ 20), synthetic sample of
  20 000 rows against the rows.

Reading it: at ε = 1e8–1e12 every ok cell should be near 0 (Gaussians: ≤ 1e-3; mixtures:
|gap| ≲ 0.01 nat/row unless the model class explains it, e.g. pegme; synthesizer: the copula
model's own floor). A ``failed``/``crash`` at a large budget where a smaller one was ok, an
error that grows or plateaus with the budget, or a refusal whose message is wrong, are bugs.

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/edge_sweep.py \
        --out benchmarks/results/edge_sweep.jsonl
    python benchmarks/edge_sweep.py --kind gaussian --method ppe --defect gross  # a subset
    python benchmarks/edge_sweep.py --report benchmarks/results/edge_sweep.jsonl  # the table
    python benchmarks/edge_sweep.py --compare BEFORE.jsonl AFTER.jsonl  # cells not ok
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import privgauss as pg
from privgauss import methods
from privgauss.methods import Facts

DEFECTS = ("clean", "sorted", "dups", "const", "binary", "intcodes", "t2.5", "gross", "scales",
           "d1", "n-edge")
DELTA = 1e-6
BUDGETS: dict[str, pg.Budget] = {
    "eps=1": pg.ApproxDP(1.0, DELTA), "eps=1e4": pg.ApproxDP(1e4, DELTA),
    "eps=1e8": pg.ApproxDP(1e8, DELTA), "eps=1e12": pg.ApproxDP(1e12, DELTA),
    "rho=0.5": pg.ZCDP(0.5), "rho=1e8": pg.ZCDP(1e8),
}
N_BASE = {"gaussian": 3000, "mixture": 4000, "synth": 3000, "cli": 3000}
N_CAP = {"gaussian": 40000, "mixture": 60000}
K = 2
#: the mixtures' separation ratio (privgauss.datasets.separation_ratio): above the 5 and 6 the
#: paper learners were validated at, so every mixture method is in its regime
SEPARATION = 7.0
N_SYNTH = 20000
G_MEAN = np.array([1.0, -2.0, 3.0])
G_COV = np.array([[4.0, 1.2, 0.3], [1.2, 1.0, 0.2], [0.3, 0.2, 0.25]])


class CellTimeout(BaseException):
    """A cell ran past --timeout (BaseException: the library's handlers must not catch it)."""


def _alarm(signum: int, frame: Any) -> None:
    raise CellTimeout()


# -- data ---------------------------------------------------------------------------------------
def _t_rows(rng: np.random.Generator, n: int, mean: np.ndarray, cov: np.ndarray,
            df: float | None) -> np.ndarray:
    z = rng.multivariate_normal(np.zeros(len(mean)), cov, size=n)
    if df is not None:
        z = z / np.sqrt(rng.chisquare(df, size=(n, 1)) / df)
    return mean + z


def _law(kind: str, spherical: bool) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """(means, covariances, weights) of the base law (fixed, public)."""
    if kind != "mixture":
        return [G_MEAN], [G_COV], np.array([1.0])
    if spherical:
        gap = SEPARATION * 3.0 * math.sqrt(2.0)  # (sqrt k + 2 / sqrt 0.5) x sd 1
        return ([np.zeros(3), np.array([gap, 0.0, 0.0])],
                [np.eye(3), np.eye(3)], np.array([0.5, 0.5]))
    rot = np.linalg.qr(np.random.default_rng(7).normal(size=(3, 3)))[0]
    c0 = rot @ np.diag([2.0, 1.0, 0.5]) @ rot.T
    c1 = rot.T @ np.diag([1.0, 0.7, 0.4]) @ rot
    # separation ratio SEPARATION (privgauss.datasets.separation_ratio: the distance over
    # (sqrt k + 1/sqrt w_i + 1/sqrt w_j) x the larger largest sd, here sqrt 2)
    u = np.array([1.0, 1.0, -1.0]) / math.sqrt(3.0)
    gap = SEPARATION * (math.sqrt(2.0) + 1 / math.sqrt(0.4) + 1 / math.sqrt(0.6)) * math.sqrt(2.0)
    return [np.zeros(3), gap * u], [c0, c1], np.array([0.4, 0.6])


def make_rows(kind: str, defect: str, n: int, seed: int, spherical: bool = False) -> np.ndarray:
    """n rows of ``kind``'s base law with ``defect`` applied (seeded)."""
    rng = np.random.default_rng(seed)
    means, covs, weights = _law(kind, spherical)
    df = 2.5 if defect == "t2.5" else None
    counts = rng.multinomial(n, weights)
    X = np.vstack([_t_rows(rng, c, mu, cv, df)
                   for c, mu, cv in zip(counts, means, covs, strict=True)])
    X = X[rng.permutation(n)]
    if defect == "sorted":
        X = X[np.lexsort(X.T[::-1])]
    elif defect == "dups":
        m = max(n // 20, 1)
        X = np.repeat(np.round(X[:m], 1), math.ceil(n / m), axis=0)[:n]
        X = X[rng.permutation(n)]
    elif defect == "const":
        X[:, -1] = 7.0
    elif defect == "binary":
        X[:, -1] = (rng.random(n) < 0.3).astype(float)
    elif defect == "intcodes":
        X[:, -1] = np.floor(X[:, -1])
    elif defect == "gross":
        bad = rng.choice(n, size=max(n // 100, 1), replace=False)
        X[bad] = 1e6
    elif defect == "scales":
        X = X * np.array([1e-6, 1.0, 1e6])
    elif defect == "d1":
        X = X[:, :1].copy()
    return X


def prior(kind: str, defect: str, spherical: bool = False) -> tuple[float, tuple[float, float]]:
    """A generous prior from the generating law (not the rows): mean ball 10 × (largest mean
    norm + sd), eigenvalue bounds 10× around the law's, adjusted for the defect's map."""
    means, covs, _ = _law(kind, spherical)
    scale = np.array([1e-6, 1.0, 1e6]) if defect == "scales" else np.ones(3)
    if defect == "d1":
        scale = np.array([1.0])
    eig = []
    norms = []
    for mu, cv in zip(means, covs, strict=True):
        d = len(scale)
        cv = (cv[:d, :d] * np.outer(scale, scale))
        eig.extend(np.linalg.eigvalsh(cv).tolist())
        norms.append(float(np.linalg.norm(mu[:d] * scale)) + math.sqrt(float(np.trace(cv))))
    lo, hi = min(eig), max(eig)
    if defect in ("const", "binary", "intcodes"):
        lo = min(lo, 0.01)
    return 10.0 * max(norms) + 10.0, (lo / 10.0, hi * 10.0)


# -- one cell -----------------------------------------------------------------------------------
def stated_need(kind: str, method: str, budget: pg.Budget, d: int) -> float | None:
    try:
        facts = Facts(kind, budget, 10**6, d, k=1 if kind == "gaussian" else K, n_public=None)
        req = methods.requirements(kind, method, facts)
    except Exception:  # noqa: BLE001 - no formula for this budget: the fit will say
        return None
    return None if req is None else float(req.n_needed)


def classify(exc: BaseException, acct: pg.Accountant) -> tuple[str, str]:
    spent = bool(acct.ledger)
    msg = f"{type(exc).__name__}: {exc}".replace("\n", " ")[:400]
    if isinstance(exc, CellTimeout):
        return "timeout", msg
    if isinstance(exc, pg.EstimationFailed):
        return ("failed-internal" if getattr(exc, "internal", False) else "failed"), msg
    if isinstance(exc, ValueError) and not spent:
        return "refused", msg
    if isinstance(exc, TypeError) and not spent:
        return "refused", msg
    return "crash", msg + " | " + traceback.format_exc(limit=-3).replace("\n", " ")[-600:]


def gaussian_errors(est: Any, X: np.ndarray) -> dict[str, float]:
    mu = X.mean(axis=0)
    cov = np.atleast_2d(np.cov(X, rowvar=False, bias=True))
    s = np.sqrt(np.diag(cov))
    s = np.where(s > 0, s, 1.0)
    out = {"mean_err": float(np.max(np.abs(np.asarray(est.mean_) - mu) / s))}
    if getattr(est, "covariance_", None) is not None:
        ch = np.atleast_2d(np.asarray(est.covariance_))
        out["cov_err"] = float(np.max(np.abs(ch - cov) / np.outer(s, s)))
    return out


def mixture_gap(est: Any, X: np.ndarray) -> dict[str, float]:
    from sklearn.mixture import GaussianMixture

    # the reference is the best of three column scalings (each sklearn's best of 5 inits, its
    # log-likelihood mapped back to the rows' units by the Jacobian − Σ log s_j): raw columns
    # (reg_covar = 1e-6 is in data units: it swamps a column in units of 1e-6), columns
    # divided by their sd (1 % gross errors at 1e6 squeeze the clusters to 1e-4 units, where
    # reg_covar swamps them again) and by their IQR / 1.349 (which spans the gap between two
    # clusters, where k-means then splits along the other columns)
    iqr = np.subtract(*np.percentile(X, [75, 25], axis=0)) / 1.349
    sd = X.std(axis=0)
    refs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = float(est.score(X))
        for s in (np.ones(X.shape[1]), sd, iqr):
            s = np.where(s > 0, s, 1.0)
            loc = X.mean(axis=0)
            sk = GaussianMixture(K, n_init=5, random_state=0).fit((X - loc) / s)
            refs.append(float(sk.score((X - loc) / s)) - float(np.sum(np.log(s))))
    ref = max(refs)
    return {"gap": ref - ours, "ours_ll": ours, "sk_ll": ref}


def synth_errors(Y: np.ndarray, X: np.ndarray) -> dict[str, float]:
    sd_x = X.std(axis=0)
    keep = np.flatnonzero(sd_x > 0)
    out: dict[str, float] = {}
    if len(keep) >= 2:
        with np.errstate(all="ignore"):
            cx = np.corrcoef(X[:, keep], rowvar=False)
            cy = np.corrcoef(Y[:, keep], rowvar=False)
        cy = np.nan_to_num(cy)  # a synthetic column with no spread: correlation 0
        iu = np.triu_indices(len(keep), 1)
        out["corr_mae"] = float(np.mean(np.abs(cx[iu] - cy[iu])))
    tvs = []
    for j in range(X.shape[1]):
        levels = np.unique(X[:, j])
        if len(levels) <= 20:
            p = np.array([np.mean(X[:, j] == v) for v in levels])
            q = np.array([np.mean(np.isclose(Y[:, j], v, rtol=1e-9, atol=0)) for v in levels])
            tvs.append(0.5 * (np.abs(p - q).sum() + (1 - q.sum())))
        else:
            # quantile edges moved to the midpoint between the neighbouring distinct values,
            # so an atom (ties, duplicates) is never cut by an edge (a synthetic copy of an
            # atom may differ from it in the last bit)
            q = np.quantile(X[:, j], np.linspace(0, 1, 21)[1:-1])
            idx = np.clip(np.searchsorted(levels, q, side="right"), 1, len(levels) - 1)
            edges = np.unique((levels[idx - 1] + levels[idx]) / 2.0)
            p = np.bincount(np.searchsorted(edges, X[:, j]), minlength=len(edges) + 1) / len(X)
            q = np.bincount(np.searchsorted(edges, Y[:, j]), minlength=len(edges) + 1) / len(Y)
            tvs.append(0.5 * np.abs(p - q).sum())
    out["tv1"] = float(np.mean(tvs))
    return out


def budget_kwargs(budget: pg.Budget) -> dict[str, float]:
    if isinstance(budget, pg.ZCDP):
        return {"rho": budget.rho}
    if isinstance(budget, pg.PureDP):
        return {"epsilon": budget.epsilon}
    return {"epsilon": budget.epsilon, "delta": budget.delta}


def run_cell(kind: str, method: str, defect: str, bname: str, seed: int,
             timeout: float) -> dict[str, Any] | None:
    """One cell's record, or None when the cell is not in the grid (a zCDP budget for a
    method that does not take one; n-edge without a stated requirement)."""
    budget = BUDGETS[bname]
    zc = isinstance(budget, pg.ZCDP)
    spec = methods.get(kind, method) if kind in ("gaussian", "mixture") else None
    if spec is not None and zc and not spec.zcdp:
        return None
    spherical = method == "pegme"
    d = 1 if defect == "d1" else 3
    n = N_BASE[kind]
    need = stated_need(kind, method, budget, d) if spec is not None else None
    if defect == "n-edge":
        if need is None or not math.isfinite(need) or need > N_CAP.get(kind, 0):
            return None
        n = max(math.ceil(1.1 * need), 2 * K + 2)
    elif need is not None and 1.2 * need > n and 1.2 * need <= N_CAP.get(kind, 0):
        n = math.ceil(1.2 * need)
    base = "gaussian" if kind in ("gaussian", "synth", "cli") else "mixture"
    X = make_rows(base, defect, n, seed, spherical)
    rec: dict[str, Any] = {"kind": kind, "method": method, "defect": defect, "budget": bname,
                           "n": n, "d": X.shape[1], "seed": seed}
    mb, cb = prior(base, defect, spherical)
    if spec is not None and spec.budgets == frozenset({"pure"}) and not zc:
        budget = pg.PureDP(budget.epsilon)  # a pure-ε method (hypothesis-selection): δ = 0
        rec["budget_used"] = str(budget)
    acct = pg.Accountant(budget)
    kw: dict[str, Any] = {**budget_kwargs(budget), "random_state": seed, "accountant": acct}
    public = None
    if spec is not None and spec.public in ("required",) or method == "public":
        public = make_rows(base, defect, 100 if kind == "mixture" else 50, seed + 10_000,
                           spherical)
    t0 = time.perf_counter()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if kind == "gaussian":
                if method in ("clip", "coinpress", "hypothesis-selection"):
                    kw.update(mean_bound=mb, cov_bounds=cb)
                if method == "clip":
                    kw.update(covariance=np.atleast_2d(np.cov(X, rowvar=False, bias=True)))
                    kw.pop("cov_bounds")
                est = pg.PrivateGaussian(method=method, **kw).fit(X, public_X=public)
                rec.update(gaussian_errors(est, X))
            elif kind == "mixture":
                if zc and method == "em":
                    kw.update(mean_bound=mb, cov_bounds=cb)
                est = pg.PrivateGaussianMixture(K, method=method, **kw).fit(X, public_X=public)
                signal.setitimer(signal.ITIMER_REAL, 0)
                rec.update(mixture_gap(est, X))
            else:  # synth
                syn = pg.PrivateSynthesizer(**kw).fit(X)
                signal.setitimer(signal.ITIMER_REAL, 0)
                rec.update(synth_errors(syn.sample(N_SYNTH, random_state=seed), X))
                rec["synth_method"] = str(getattr(syn, "method_", "?"))
        rec["outcome"] = "ok"
        rec["warnings"] = sorted({type(w.message).__name__ for w in caught
                                  if issubclass(w.category, Warning)})
    except BaseException as exc:  # noqa: BLE001 - every outcome is recorded
        if isinstance(exc, KeyboardInterrupt):
            raise
        rec["outcome"], rec["message"] = classify(exc, acct)
        rec["needed_n"] = getattr(exc, "needed_n", None)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    rec["spent_steps"] = len(acct.ledger)
    rec["seconds"] = round(time.perf_counter() - t0, 2)
    return rec


# -- the command line ---------------------------------------------------------------------------
CLI_BUDGETS = ("eps=1", "eps=1e12", "rho=1e8")


def run_cli_cell(command: str, defect: str, bname: str, seed: int,
                 timeout: float) -> dict[str, Any] | None:
    import pandas as pd

    budget = BUDGETS[bname]
    base = "mixture" if command == "fit-mixture" else "gaussian"
    n = N_BASE["cli"]
    X = make_rows(base, defect, n, seed)
    rec: dict[str, Any] = {"kind": "cli", "method": command, "defect": defect, "budget": bname,
                           "n": n, "d": X.shape[1], "seed": seed}
    cols = [f"c{j}" for j in range(X.shape[1])]
    frame = pd.DataFrame(X, columns=cols)
    if defect in ("binary", "intcodes"):
        frame[cols[-1]] = frame[cols[-1]].astype(int)
    bflags = (["--rho", repr(budget.rho)] if isinstance(budget, pg.ZCDP)
              else ["--epsilon", repr(budget.epsilon), "--delta", repr(budget.delta)])
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data.csv")
        out = os.path.join(tmp, "out.json" if command != "synthesize" else "out.csv")
        frame.to_csv(data, index=False)
        if command == "synthesize":
            args = ["synthesize", data, *bflags, "-n", str(N_SYNTH), "-o", out]
        elif command == "fit-mixture":
            args = ["fit-mixture", data, "-k", str(K), *bflags, "--out", out]
        else:
            args = ["fit-gaussian", data, *bflags, "--out", out]
        if isinstance(budget, pg.ZCDP) and command != "synthesize":
            mb, cb = prior(base, defect)
            args += ["--mean-bound", repr(mb), "--cov-bounds", repr(cb[0]), repr(cb[1])]
        args += ["--seed", str(seed)]
        t0 = time.perf_counter()
        try:
            proc = subprocess.run([sys.executable, "-m", "privgauss.cli", *args],
                                  capture_output=True, text=True, timeout=timeout,
                                  env={**os.environ})
        except subprocess.TimeoutExpired:
            rec.update(outcome="timeout", seconds=timeout)
            return rec
        rec["seconds"] = round(time.perf_counter() - t0, 2)
        rec["status"] = proc.returncode
        tail = (proc.stderr.strip().splitlines() or [""])[-1][:400]
        if proc.returncode == 0:
            rec["outcome"] = "ok"
            try:
                if command == "synthesize":
                    Y = pd.read_csv(out).to_numpy(dtype=float)
                    rec.update(synth_errors(Y, X))
                else:
                    rec.update(cli_model_errors(json.loads(Path(out).read_text()), X, command))
            except Exception as exc:  # noqa: BLE001
                rec["outcome"] = "crash"
                rec["message"] = f"reading the output: {type(exc).__name__}: {exc}"[:400]
        elif proc.returncode == 2:
            rec["outcome"], rec["message"] = "refused", tail
        elif proc.returncode == 3:
            rec["outcome"], rec["message"] = "failed", tail
        else:
            rec["outcome"] = "crash"
            rec["message"] = " ".join(proc.stderr.strip().splitlines()[-3:])[:600]
    return rec


def cli_model_errors(model: dict[str, Any], X: np.ndarray, command: str) -> dict[str, float]:
    from privgauss.model_files import from_dict

    est = from_dict(model)
    return gaussian_errors(est, X) if command == "fit-gaussian" else mixture_gap(est, X)


# -- the grid -----------------------------------------------------------------------------------
def cells(args: argparse.Namespace) -> list[tuple[Callable[..., Any], tuple[Any, ...]]]:
    out: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []
    want = lambda v, sel: not sel or v in sel.split(",")  # noqa: E731
    for kind in ("gaussian", "mixture", "synth", "cli"):
        if not want(kind, args.kind):
            continue
        names = (methods.names(kind) if kind in ("gaussian", "mixture")
                 else ("synthesizer",) if kind == "synth"
                 else ("fit-gaussian", "fit-mixture", "synthesize"))
        for method in names:
            if not want(method, args.method):
                continue
            for defect in DEFECTS:
                if not want(defect, args.defect):
                    continue
                if kind == "cli" and defect == "n-edge":
                    continue
                for bname in BUDGETS:
                    if not want(bname, args.budget):
                        continue
                    if kind == "cli":
                        if bname in CLI_BUDGETS:
                            out.append((run_cli_cell, (method, defect, bname, args.seed,
                                                       args.timeout)))
                        continue
                    if kind == "synth" and defect == "n-edge":
                        continue
                    out.append((run_cell, (kind, method, defect, bname, args.seed,
                                           args.timeout)))
    return out


def report(path: Path) -> str:
    """The markdown tables of a JSONL result file: one row per (kind, method, defect), one
    column per budget; an ok cell shows its error, any other its outcome."""
    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    lines = []
    for kind in ("gaussian", "mixture", "synth", "cli"):
        sub = [r for r in recs if r["kind"] == kind]
        if not sub:
            continue
        bnames = [b for b in BUDGETS if any(r["budget"] == b for r in sub)]
        lines += ["", f"### {kind}", "", "| method | defect | " + " | ".join(bnames) + " |",
                  "|---|---|" + "---|" * len(bnames)]
        keys = list(dict.fromkeys((r["method"], r["defect"]) for r in sub))
        for m, dfc in keys:
            row = []
            for b in bnames:
                hit = [r for r in sub if r["method"] == m and r["defect"] == dfc
                       and r["budget"] == b]
                row.append(_cell_text(hit[-1]) if hit else "")
            lines.append(f"| {m} | {dfc} | " + " | ".join(row) + " |")
    return "\n".join(lines)


def _cell_text(r: dict[str, Any]) -> str:
    if r["outcome"] != "ok":
        return f"**{r['outcome']}**"
    if "gap" in r:
        return f"{r['gap']:.3g}"
    if "tv1" in r:
        return f"{r.get('corr_mae', float('nan')):.2g}/{r['tv1']:.2g}"
    return f"{r['mean_err']:.1g}/{r.get('cov_err', float('nan')):.1g}"


def compare(before: Path, after: Path) -> str:
    """Markdown table of the cells that were not ok in ``before`` or in ``after`` (the last
    record of a cell wins), grouped by (kind, method, outcome before → after, message)."""
    def load(path: Path) -> dict[tuple[str, str, str, str], dict[str, Any]]:
        out = {}
        for line in path.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                out[(r["kind"], r["method"], r["defect"], r["budget"])] = r
        return out

    b, a = load(before), load(after)
    groups: dict[tuple[str, ...], list[str]] = {}
    for key in list(dict.fromkeys([*b, *a])):
        rb, ra = b.get(key), a.get(key)
        ob = rb["outcome"] if rb else "-"
        oa = ra["outcome"] if ra else "-"
        if ob in ("ok", "-") and oa in ("ok", "-"):
            continue
        msg = (ra or rb or {}).get("message", "") if oa != "ok" else (rb or {}).get("message", "")
        head = msg.split(" (failed step")[0].split(". ")[0][:90].replace("|", "/")
        g = (key[0], key[1], ob, oa, head)
        groups.setdefault(g, []).append(f"{key[2]}@{key[3]}")
    lines = ["| kind | method | before | after | message (start) | cells |",
             "|---|---|---|---|---|---|"]
    for (kind, method, ob, oa, head), cells_ in groups.items():
        lines.append(f"| {kind} | {method} | {ob} | {oa} | {head} | {len(cells_)}: "
                     f"{', '.join(cells_)} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", default="", help="gaussian,mixture,synth,cli (default: all)")
    ap.add_argument("--method", default="")
    ap.add_argument("--defect", default="")
    ap.add_argument("--budget", default="")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=120.0)
    ap.add_argument("--out", default="benchmarks/results/edge_sweep.jsonl")
    ap.add_argument("--report", default="", help="print the tables of a JSONL file")
    ap.add_argument("--compare", nargs=2, default=None, metavar=("BEFORE", "AFTER"),
                    help="print the cells not ok in either JSONL file")
    args = ap.parse_args()
    if args.report:
        print(report(Path(args.report)))
        return
    if args.compare:
        print(compare(Path(args.compare[0]), Path(args.compare[1])))
        return
    todo = cells(args)
    print(f"{len(todo)} cells", flush=True)
    with open(args.out, "a") as fh:
        for i, (fn, cell) in enumerate(todo):
            rec = fn(*cell)
            if rec is None:
                continue
            fh.write(json.dumps(rec) + "\n")
            fh.flush()
            if rec["outcome"] != "ok":
                print(i, rec["kind"], rec["method"], rec["defect"], rec["budget"],
                      rec["outcome"], rec.get("message", "")[:200], flush=True)
            else:
                err = {k: round(v, 4) for k, v in rec.items()
                       if k in ("mean_err", "cov_err", "gap", "corr_mae", "tv1")}
                print(i, rec["kind"], rec["method"], rec["defect"], rec["budget"], "ok", err,
                      rec["seconds"], flush=True)


if __name__ == "__main__":
    main()
