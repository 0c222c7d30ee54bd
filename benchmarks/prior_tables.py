"""PrivateGaussian inside a valid prior on corpus tables, against np.mean/np.cov (issue 26).

For each table, prior width w and seed: the rows are split as in ``real_corpus.py`` (80 %
training, 20 % held out); the prior is built from the training rows' np.mean / np.cov —
``mean_bound`` = 10‖μ‖ + 10·sd_max, ``cov_bounds`` = (λ_min/w, λ_max·w), a valid prior — and
``PrivateGaussian(epsilon, delta=1e-6, method=..., random_state=seed, **prior)`` is fitted on
the training rows. Printed per (table, w): the method that ran, KL(np.cov ‖ fit) (median and
worst over seeds), the held-out gap (np.cov's mean log-likelihood minus the fit's ``score``,
median and worst), the fits with a ``ClippedDataWarning``, the fits whose chain covered a
shrunk direction (ledger entries "… cover k …": :mod:`privgauss.gaussian.coinpress.direction_cover`)
and the fits more than 1 nat/row off without a warning; fits refused before spending or failed
after it are named in the method column. ``--method histogram`` runs the bound-free route (no
prior) on the same splits.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/prior_tables.py --tables randhie fair --widths 100 10 2 --seeds 5
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import corpus  # noqa: E402
from real_corpus import _loglik, _model_score, determined_columns, gaussian_kl, split  # noqa: E402

import privgauss as pg  # noqa: E402


def prior_of(train: np.ndarray, width: float) -> dict[str, Any]:
    """A valid prior for ``train``: ``width``× outside np.cov's spectrum (constant columns'
    variance 0 left out of the lower end)."""
    mu, S = train.mean(0), np.cov(train, rowvar=False)
    live = np.diag(S) > 0
    w = np.linalg.eigvalsh(S[np.ix_(live, live)])
    bound = 10 * float(np.linalg.norm(mu)) + 10 * float(np.sqrt(S.diagonal().max()))
    return {"mean_bound": bound, "cov_bounds": (float(w[0]) / width, float(w[-1]) * width)}


def row(table: str, width: float, seeds: int, epsilon: float, method: str) -> str:
    rows = np.array(corpus.load(table))
    gaps, kls, warned, covered, silent, ran, out = [], [], 0, 0, 0, set(), []
    for s in range(seeds):
        train, test, _, _ = split(rows, s, 500_000)
        mean, S = train.mean(0), np.cov(train, rowvar=False)
        drop = determined_columns(train)
        keep = np.setdiff1d(np.arange(train.shape[1]), drop) if drop else None
        k = np.arange(train.shape[1]) if keep is None else keep
        ref = _loglik(test[:, k], mean[k], S[np.ix_(k, k)])
        prior = {} if method == "histogram" else prior_of(train, width)
        est = pg.PrivateGaussian(epsilon=epsilon, delta=1e-6, method=method, random_state=s,
                                 **prior)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                est.fit(train)
            except pg.EstimationFailed:
                out.append("failed")
                continue
            except (pg.InvalidDataError, pg.PrivacyBudgetError):
                out.append("refused")
                continue
        warn = any(issubclass(c.category, pg.warnings.ClippedDataWarning) for c in caught)
        gap = float((ref - _model_score(est, test, keep)).mean())
        gaps.append(gap)
        kls.append(gaussian_kl(mean[k], S[np.ix_(k, k)], est.mean_[k],
                               est.covariance_[np.ix_(k, k)]))
        warned += warn
        covered += any(" cover " in e.step for e in est.ledger_)
        silent += gap > 1.0 and not warn
        ran.add(est.method_)
    w = "none" if method == "histogram" else f"{width:g}"
    if not kls:
        return f"| {table} | {w} | {', '.join(out)} | | | | | | | |"
    note = f" ({len(out)} {'/'.join(sorted(set(out)))})" if out else ""
    return (f"| {table} | {w} | {'/'.join(sorted(ran))}{note} | {np.median(kls):.3g} "
            f"| {max(kls):.3g} | {np.median(gaps):.4f} | {max(gaps):.4f} | {warned}/{seeds} "
            f"| {covered}/{seeds} | {silent} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tables", nargs="+", default=["randhie", "fair"])
    p.add_argument("--widths", nargs="+", type=float, default=[100.0, 10.0, 2.0])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--method", default="auto")
    args = p.parse_args()
    print(f"ε = {args.epsilon:g}, δ = 1e-6, method = {args.method}, {args.seeds} seeds")
    print("| table | prior width | method | KL median | KL worst | gap median | gap worst "
          "| warned | covered | > 1 nat silent |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    widths = [1.0] if args.method == "histogram" else args.widths
    for t in args.tables:
        for w in widths:
            print(row(t, w, args.seeds, args.epsilon, args.method), flush=True)


if __name__ == "__main__":
    main()
