"""PrivateGaussian on the real-table corpus (``benchmarks/corpus.py``), against np.mean/np.cov
(issue 26).

For each table and seed the rows are split at random into 80% training and 20% held-out rows
(the training rows keep the file's order: a sorted file stays sorted). ``PrivateGaussian``
(default ``method="auto"``, noise seeded by the seed) is fitted on the training rows in four
settings — (ε, δ) = (1, 1e-6) and (1e4, 1e-6), each without public rows and with 1% of the
training rows (drawn at random) given as ``public_X`` and removed from the private rows — and
compared with the non-private Gaussian (``np.mean`` / ``np.cov``) of all the training rows:

* ``gap``: held-out mean log-likelihood of the non-private fit minus ours (nat/row; 0 is as
  good as non-private, > 0 worse): ours is the fitted model's ``score`` (what a user compares:
  the Gaussian with its background component), the reference np.mean/np.cov's Gaussian, scored
  scale free (``pg.metrics.gaussian_logpdf``) with a relative ridge of 1e-9 of each variance so
  a constant or collinear column does not make its score infinite. On a table with *exact*
  linear constraints among its columns (rwm5yr's four education dummies sum to 1) np.cov is
  singular and its density concentrates on the constraint, so any other fit is arbitrarily far
  below it (the gap is ~½·ln(1/ridge) per null direction and says nothing about the fit).
  There both fits are scored on the marginal of the columns that are not exact linear
  functions of earlier ones (found on the training rows, relative residual variance < 1e-10):
  a Gaussian's marginal is its mean and covariance restricted to those columns, and the
  background's (a multivariate Cauchy) likewise, keeping its full-dimension scale factor. The
  table's row in the report names the columns left out of the scoring;
* ``worst gap``: the largest gap over the seeds (a median can hide one bad fit);
* ``np.cov's gap``: with public rows, the gap of np.mean/np.cov of the *private* rows alone
  (the rows the fit was given as private data): what moving 1 % of the rows out of the private
  set costs the non-private fit itself. A fit that uses the public rows only to place its
  frame (or not at all: ``histogram`` below d + 1 public rows) cannot beat it; at n = 455,
  d = 30 (breast_cancer) np.cov's held-out score moves by 0.1-0.2 nat/row when 5 random rows
  are removed. ``gap − np.cov's`` is our gap less that (public rows never hurt: this is what
  must stay within the noise);
* ``KL``: KL(N(np.mean, np.cov) ‖ our Gaussian), both of the rows the fit was given as
  private (scale free; in nat per row): the consistency check that held-out rows do not blur
  (at n = 455, d = 30 the held-out gap of two covariances a KL of 0.02 apart varies from
  −0.12 to +0.03 with the split);
* ``row gap``: the median over held-out rows of the same difference per row (robust to the few
  rows far out, which dominate the mean on heavy-tailed data);
* ``clipped``: ``clipped_fraction_``, the DP fraction of rows outside the last clipping ball;
* ``method``: the method ``auto`` chose (``method_``); ``s/fit``: median wall time of a fit;
* ``refused``: exceptions before anything was spent (``InvalidDataError``, ``ValueError``,
  ``PrivacyBudgetError``), ``failed``: ``EstimationFailed`` after spending, ``error``: anything
  else — each counted over seeds and named (type and the message's first words);
* ``needs n``: the practical sample-size requirement of the method ``auto`` picks here
  (``privgauss.methods.requirements``, the registry the ``privgauss requirements gaussian``
  command reads; from public facts only), and whether the private n meets it ("—": the method
  states no requirement).

Medians over the seeds that fitted. Tables above ``--max-rows`` rows (default 5e5) are
subsampled at random per seed (none of the corpus is, today). Progress goes to stderr.
Mixtures on the same corpus: ``benchmarks/real_mixtures.py``. The report opens with a
summary per setting: the tables refused, failed after spending, or with a median gap above
0.05 nat/row (at ε = 1e4 the consistency check of DESIGN.md: these should all be empty).

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/real_corpus.py --seeds 3 --out benchmarks/results/real_corpus.md
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import statistics
import sys
import time
import warnings
from collections import Counter
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import corpus  # noqa: E402  (benchmarks/ put on the path above)

import privgauss as pg  # noqa: E402
from privgauss import methods  # noqa: E402
from privgauss.backends import DEFAULT_MAX_MEMORY_BYTES  # noqa: E402
from privgauss.gaussian.public_frame import public_verdict  # noqa: E402
from privgauss.privacy import make_budget  # noqa: E402

DELTA = 1e-6
EPSILONS = (1.0, 1e4)
PUBLIC_SHARE = 0.01
REF_RIDGE = 1e-9  # of each variance (scale free), for the np.cov reference
REFUSALS = (pg.InvalidDataError, pg.PrivacyBudgetError, ValueError)


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _loglik(X: np.ndarray, mean: np.ndarray, cov: np.ndarray) -> np.ndarray:
    return pg.metrics.gaussian_logpdf(X, mean, cov, ridge=REF_RIDGE)


def determined_columns(train: np.ndarray, tol: float = 1e-10) -> list[int]:
    """The columns that are exact linear functions (with intercept) of the columns before them
    on ``train``: their residual variance after least squares is below ``tol`` of their own."""
    Z = train - train.mean(axis=0)
    scale = Z.std(axis=0)
    Z = Z / np.where(scale > 0, scale, 1.0)
    kept: list[int] = []
    out: list[int] = []
    for j in range(Z.shape[1]):
        y = Z[:, j]
        if kept:
            coef = np.linalg.lstsq(Z[:, kept], y, rcond=None)[0]
            y = y - Z[:, kept] @ coef
        if scale[j] > 0 and float(np.mean(y * y)) < tol:
            out.append(j)
        else:
            kept.append(j)
    return out


def _model_score(est: Any, test: np.ndarray, keep: np.ndarray | None) -> np.ndarray:
    """``est.score_samples(test)``, or, on the columns ``keep``, the fitted model's marginal
    there: the Gaussian restricted to them, mixed as ``score_samples`` mixes it with the
    background restricted to them (a Cauchy's marginal keeps its scale matrix K_d²·Σ)."""
    if keep is None:
        return np.asarray(est.score_samples(test))
    d, e = test.shape[1], keep.size
    m, C = est.mean_[keep], est.covariance_[np.ix_(keep, keep)]
    X = test[:, keep]
    logp = pg.metrics.gaussian_logpdf(X, m, C, ridge=1e-12)
    w = float(getattr(est, "background_weight_", 0.0))
    if w <= 0.0:
        return logp
    factor = (pg.metrics.background_scale(d) / pg.metrics.background_scale(e)) ** 2
    back = pg.metrics.background_logpdf(X, m, C * factor, ridge=1e-12)
    return np.logaddexp(np.log1p(-w) + logp, np.log(w) + back)


def gaussian_kl(m0: np.ndarray, S0: np.ndarray, m1: np.ndarray, S1: np.ndarray) -> float:
    """KL(N(m0, S0) ‖ N(m1, S1)), scale free: both standardised by the square roots of S0's
    diagonal, S0 with the reference's relative ridge (a constant column stays finite)."""
    s = np.sqrt(np.diag(S0))
    s = np.where(s > 0, s, 1.0)
    A = S0 / np.outer(s, s)
    A = A + REF_RIDGE * np.diag(np.maximum(np.diag(A), 1.0))
    B = S1 / np.outer(s, s)
    L = np.linalg.cholesky(B)
    q = np.linalg.solve(L, (m1 - m0) / s)
    tr = float(np.trace(np.linalg.solve(L.T, np.linalg.solve(L, A))))
    logdet = 2.0 * float(np.sum(np.log(np.diag(L)))) - float(np.linalg.slogdet(A)[1])
    return 0.5 * (tr - len(s) + float(q @ q) + logdet)


def _why(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:150]}"


def split(rows: np.ndarray, seed: int, max_rows: int) -> tuple[np.ndarray, np.ndarray,
                                                               np.ndarray, np.ndarray]:
    """(training rows in file order, held-out rows, private rows, public rows) for ``seed``;
    the public rows are 1% of the training rows at random (at least 1), removed from the
    private ones."""
    rng = np.random.default_rng(seed)
    idx = np.arange(rows.shape[0])
    if rows.shape[0] > max_rows:
        idx = np.sort(rng.choice(idx, size=max_rows, replace=False))
    perm = rng.permutation(idx)
    cut = (len(perm) * 4) // 5
    train_idx, test_idx = np.sort(perm[:cut]), perm[cut:]
    m = max(1, round(PUBLIC_SHARE * len(train_idx)))
    is_public = np.zeros(len(train_idx), dtype=bool)
    is_public[rng.choice(len(train_idx), size=m, replace=False)] = True
    train = rows[train_idx]
    return train, rows[test_idx], train[~is_public], train[is_public]


def requirement(n: int, d: int, epsilon: float, public: np.ndarray | None) -> dict[str, Any]:
    """What ``auto`` picks for these public facts and the n that method states it needs."""
    budget = make_budget(epsilon=epsilon, delta=DELTA)
    verdict = None if public is None else public_verdict(public, d)
    facts = methods.Facts("gaussian", budget, n, d, n_public=0 if public is None else
                          public.shape[0], max_memory_bytes=DEFAULT_MAX_MEMORY_BYTES,
                          verdict=verdict)
    try:
        name, _ = methods.choose("gaussian", "auto", facts)
        refused = False
    except REFUSALS:  # auto refuses: what the bound-free route it would take needs
        name, refused = "histogram", True
    req = methods.requirements("gaussian", name, facts)
    if req is None:
        return {"method": name, "refused": refused, "n_needed": None, "ok": None}
    return {"method": name, "refused": refused, "n_needed": float(req.n_needed),
            "ok": bool(req.ok)}


def guarded_fit(est: Any, private: np.ndarray, public: np.ndarray | None
                ) -> tuple[dict[str, Any] | None, list[Any], float]:
    """Fit ``est`` on ``private`` (and ``public`` rows): (None, or the outcome of a fit that
    raised — ``failed`` after spending, ``refused`` before, ``error`` for anything else —,
    the warnings it raised, its wall time in seconds)."""
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(private, public_X=public)
    except pg.EstimationFailed as exc:
        return {"status": "failed", "why": _why(exc)}, [], 0.0
    except REFUSALS as exc:
        return {"status": "refused", "why": _why(exc)}, [], 0.0
    except Exception as exc:  # reported, not hidden: a real-data bug
        return {"status": "error", "why": _why(exc)}, [], 0.0
    return None, list(caught), time.perf_counter() - t0


def one_fit(train: np.ndarray, test: np.ndarray, private: np.ndarray, public: np.ndarray | None,
            epsilon: float, seed: int) -> dict[str, Any]:
    """One private fit and its comparison with np.mean/np.cov of ``train``."""
    mean, S = train.mean(axis=0), np.cov(train, rowvar=False).reshape(train.shape[1], -1)
    drop = determined_columns(train)
    keep = np.setdiff1d(np.arange(train.shape[1]), drop) if drop else None
    ref = (_loglik(test, mean, S) if keep is None
           else _loglik(test[:, keep], mean[keep], S[np.ix_(keep, keep)]))
    out: dict[str, Any] = {"req": requirement(private.shape[0], private.shape[1], epsilon,
                                              public)}
    est = pg.PrivateGaussian(epsilon=epsilon, delta=DELTA, random_state=seed)
    failed, caught, seconds = guarded_fit(est, private, public)
    if failed is not None:
        return {**out, **failed}
    rows = ref - _model_score(est, test, keep)
    frac = getattr(est, "clipped_fraction_", None)
    noted = {w.category.__name__ for w in caught} - {"SeededNoiseWarning"}
    # np.cov of the rows the fit got as private (all training rows without public rows)
    pm, pS = private.mean(axis=0), np.cov(private, rowvar=False).reshape(train.shape[1], -1)
    k = np.arange(train.shape[1]) if keep is None else keep
    own = ref - _loglik(test[:, k], pm[k], pS[np.ix_(k, k)])
    try:
        kl = gaussian_kl(pm[k], pS[np.ix_(k, k)], est.mean_[k],
                         est.covariance_[np.ix_(k, k)])
    except np.linalg.LinAlgError:  # our covariance not positive definite there
        kl = float("inf")
    return {**out, "status": "ok", "gap": float(rows.mean()), "row gap": float(np.median(rows)),
            "own": float(own.mean()), "kl": kl,
            "clipped": None if frac is None else float(frac), "method": est.method_,
            "seconds": seconds, "warnings": noted, "scored without": drop}


def _med(values: list[float], fmt: str) -> str:
    return format(statistics.median(values), fmt) if values else "—"


def _outcomes(res: list[dict[str, Any]]) -> str:
    """'3/3 ok', then the refusals/failures counted and named (messages that differ only in
    their numbers counted together, the first one shown)."""
    ok = sum(r["status"] == "ok" for r in res)
    bad: Counter[str] = Counter()
    shown: dict[str, str] = {}
    for r in res:
        if r["status"] != "ok":
            key = re.sub(r"[0-9][0-9.,e+-]*", "#", f"{r['status']} {r['why']}")
            bad[key] += 1
            shown.setdefault(key, f"{r['status']} ({r['why']})")
    return " ; ".join([f"{ok}/{len(res)} ok", *(f"{c}× {shown[k]}" for k, c in bad.items())])


GAP_FAR = 0.05  # nat/row: a median gap above this at eps = 1e4 is "far off" in the summary
KL_FAR = 0.01  # nat/row: the summary lists the tables whose median KL to np.cov exceeds it
# (at the largest ε only: the consistency check; at ε = 1 the noise and the background's
# robust fit keep the KL large where the held-out gap is negative)


def summary(cells: list[dict[str, Any]], seeds: int) -> list[str]:
    """Per setting: the tables refused, failed after spending, or far from the non-private
    fit (np.cov)."""
    out = []
    for label in dict.fromkeys(c["setting"] for c in cells):
        mine = [c for c in cells if c["setting"] == label]

        def names(key: str, cs: list[dict[str, Any]] = mine) -> str:
            hit = [f"{c['name']}{'*' if c['held_out'] else ''} ({c[key]}/{seeds})"
                   for c in cs if c[key]]
            return ", ".join(hit) or "none"

        all_ok = sum(c["ok"] == seeds for c in mine)
        far = [f"{c['name']}{'*' if c['held_out'] else ''} ({c['gap']:.3g})" for c in mine
               if c["gap"] is not None and c["gap"] > GAP_FAR]
        worst = [f"{c['name']}{'*' if c['held_out'] else ''} ({c['worst']:.3g})" for c in mine
                 if c.get("worst") is not None and c["worst"] > GAP_FAR
                 and not (c["gap"] is not None and c["gap"] > GAP_FAR)]
        net = [f"{c['name']}{'*' if c['held_out'] else ''} ({c['net']:.3g})" for c in mine
               if c.get("net") is not None and c["net"] > GAP_FAR]
        kls = [f"{c['name']}{'*' if c['held_out'] else ''} ({c['kl']:.2g})" for c in mine
               if c.get("kl") is not None and c["kl"] > KL_FAR]
        public = "public" in label and "no public" not in label
        out.append(
            f"* **{label}**: "
            f"{all_ok}/{len(mine)} tables fitted at every seed; refused before spending: "
            f"{names('refused')}; failed after spending: {names('failed')}; other errors: "
            f"{names('error')}; median gap > {GAP_FAR} nat/row: {', '.join(far) or 'none'}"
            f"; else some seed's gap > {GAP_FAR}: {', '.join(worst) or 'none'}"
            + (f"; median gap − np.cov's on the private rows > {GAP_FAR}: "
               f"{', '.join(net) or 'none'}" if public else "")
            + (f"; median KL to np.cov > {KL_FAR}: {', '.join(kls) or 'none'}"
               if f"ε = {max(EPSILONS):g}," in label else "")
            + "."
        )
    return out


def _need(res: list[dict[str, Any]]) -> str:
    reqs = [r["req"] for r in res]
    refused = "; auto refuses" if any(q["refused"] for q in reqs) else ""
    needed = [q["n_needed"] for q in reqs if q["n_needed"] is not None]
    if not needed:
        return "— (" + "/".join(sorted({q["method"] for q in reqs})) + f"{refused})"
    met = all(q["ok"] for q in reqs if q["n_needed"] is not None)
    who = "/".join(sorted({q["method"] for q in reqs}))
    return f"{max(needed):.3g} ({who}: {'met' if met else 'NOT met'}{refused})"


SETTINGS = [(eps, pub) for eps in EPSILONS for pub in (False, True)]


def run(names: list[str], seeds: int, max_rows: int) -> tuple[list[str], list[str]]:
    """(the report's table lines, its summary lines)."""
    cells: list[dict[str, Any]] = []
    lines = [
        "| table | n×d | held out | ε | public | outcome | gap (nat/row) | worst gap "
        "| np.cov's gap | gap − np.cov's | KL | row gap | clipped | method | s/fit "
        "| needs n (met?) | warnings |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        table = corpus.TABLES[name]
        rows = table.load()
        t_table = time.perf_counter()
        _log(f"[{name}] n={rows.shape[0]} d={rows.shape[1]} ...")
        splits = [split(rows, s, max_rows) for s in range(seeds)]
        for eps, pub in SETTINGS:
            res = []
            for s, (train, test, private, public) in enumerate(splits):
                X = private if pub else train
                res.append(one_fit(train, test, X, public if pub else None, eps, s))
            ok = [r for r in res if r["status"] == "ok"]
            setting = f"ε = {eps:g}, {'1% public rows' if pub else 'no public rows'}"
            cells.append({"name": name, "held_out": table.held_out, "setting": setting,
                          "ok": len(ok), "gap": (statistics.median([r["gap"] for r in ok])
                                                 if ok else None),
                          "worst": max((r["gap"] for r in ok), default=None),
                          "net": (statistics.median([r["gap"] - r["own"] for r in ok])
                                  if ok and pub else None),
                          "kl": statistics.median([r["kl"] for r in ok]) if ok else None,
                          **{k: sum(r["status"] == k for r in res)
                             for k in ("refused", "failed", "error")}})
            warned = sorted(set().union(*(r["warnings"] for r in ok))) if ok else []
            dropped = sorted({j for r in ok for j in r["scored without"]})
            marginal = f" (scored without column {dropped})" if dropped else ""
            lines.append(
                f"| {name}{' (small)' if table.small else ''}{marginal} | "
                f"{rows.shape[0]}×{rows.shape[1]} | {'yes' if table.held_out else ''} | "
                f"{eps:g} | {f'{splits[0][3].shape[0]} rows' if pub else '—'} | "
                f"{_outcomes(res)} | {_med([r['gap'] for r in ok], '.3g')} | "
                f"{format(max(r['gap'] for r in ok), '.3g') if ok else '—'} | "
                f"{_med([r['own'] for r in ok], '.3g') if pub else '—'} | "
                f"{_med([r['gap'] - r['own'] for r in ok], '.3g') if pub else '—'} | "
                f"{_med([r['kl'] for r in ok], '.2g')} | "
                f"{_med([r['row gap'] for r in ok], '.3g')} | "
                f"{_med([r['clipped'] for r in ok if r['clipped'] is not None], '.3f')} | "
                f"{', '.join(sorted({r['method'] for r in ok})) or '—'} | "
                f"{_med([r['seconds'] for r in ok], '.2g')} | {_need(res)} | "
                f"{', '.join(w.removesuffix('Warning') for w in warned) or '—'} |"
            )
            _log("  " + lines[-1])
        _log(f"[{name}] done in {time.perf_counter() - t_table:.0f} s")
    return lines, summary(cells, seeds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", nargs="+", choices=list(corpus.TABLES),
                        default=list(corpus.TABLES), help="a subset of the corpus")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--max-rows", type=int, default=500_000,
                        help="subsample larger tables to this many rows per seed")
    parser.add_argument("--out", default=None, help="write a markdown report here")
    args = parser.parse_args()
    command = "python " + " ".join(shlex.quote(a) for a in sys.argv)
    t0 = time.perf_counter()
    lines, summed = run(args.tables, args.seeds, args.max_rows)
    minutes = (time.perf_counter() - t0) / 60
    tables = ["| table | n | d | held out | source | defects |", "|---|---|---|---|---|---|"]
    for name in args.tables:
        t, X = corpus.TABLES[name], corpus.load(name)
        tables.append(f"| {name} | {X.shape[0]} | {X.shape[1]} | {'yes' if t.held_out else ''} "
                      f"| {t.source} | {t.defects} |")
    text = "\n".join([
        "# PrivateGaussian on the real-table corpus",
        "",
        f"Command: `OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src {command}` "
        f"({minutes:.1f} min on one core). δ = {DELTA:g}; medians over {args.seeds} seeds; "
        "see the script's docstring for the columns and `benchmarks/corpus.py` for the tables "
        "and their defects.",
        "",
        "Summary (* = held-out table; counts are seeds):",
        "",
        *summed,
        "",
        *lines,
        "",
        "## Tables",
        "",
        *tables,
        "",
    ])
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    from privgauss.progress import on_terminal

    with on_terminal():  # a status line naming the current release, on a terminal
        main()
