"""The heavy-tailed examples of README.md and docs/guide/fitting-real-data.md, measured.

Runs the examples' fits with seeded noise (experiments, not releases) and writes the numbers
those pages quote (through ``docs/build_readme.py``) to ``benchmarks/results/heavy_tails.md``:

* ``readme`` — the README's example: t(3) rows, n = 2e4, d = 3, 1 % of rows × 1000, a prior
  (``mean_bound=10``, ``cov_bounds=(0.01, 1e8)``), ρ = 0.1 and 0.5, seed 0: the DP clipped
  fraction and whether ``ClippedDataWarning`` fired; the held-out log-density of fresh gross
  rows under the fit (Gaussian plus background) against the Gaussian alone.
* ``clip_scale`` — t(3) rows (``datasets.make_heavy_tailed``), n = 2e4, d = 5, ρ = 0.5, the
  same prior, seeds 0–2, ``clip_scale`` 1 and 2: the fitted variances (true 3) and the DP
  clipped fraction.
* ``guide`` — the guide's example: ``make_heavy_tailed(20_000, 5)`` with 1 % gross errors,
  sorted by column 0, ε = 1, δ = 1e-6, no bounds, seed 0; the same fit of the shuffled rows
  (against the same rows with another noise seed, for scale), and with ``clip_scale=2``.

Usage (repository root, about a minute on one core)::

    python benchmarks/heavy_tails.py
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.stats import multivariate_normal

import privgauss as pg
from privgauss import datasets

RESULTS = Path(__file__).resolve().parent / "results"


def _rows(n: int, seed: int) -> np.ndarray:
    """The README's rows: t(3), d = 3, with 1 % of the rows multiplied by 1000."""
    rng = np.random.default_rng(seed)
    T = rng.standard_t(3, size=(n, 3))
    T[rng.choice(n, n // 100, replace=False)] *= 1000
    return T


def _fit(X: np.ndarray, **kw: object) -> tuple[pg.PrivateGaussian, bool]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = pg.PrivateGaussian(random_state=0, **kw).fit(X)  # type: ignore[arg-type]
    return g, any(w.category is pg.warnings.ClippedDataWarning for w in caught)


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def readme() -> list[tuple[str, str]]:
    X = _rows(20_000, 0)
    out = []
    prior = {"mean_bound": 10, "cov_bounds": (0.01, 1e8)}
    for rho in (0.1, 0.5):
        g, warned = _fit(X, rho=rho, **prior)
        out.append((f"README example, rho = {rho}: clipped fraction (DP)",
                    _pct(g.clipped_fraction_)))
        out.append((f"README example, rho = {rho}: ClippedDataWarning",
                    "yes" if warned else "no"))
    # held-out gross rows: what the fit at rho = 0.1 gives them, with and without background
    g, _ = _fit(X, rho=0.1, **prior)
    rng = np.random.default_rng(99)
    gross = rng.standard_t(3, size=(1000, 3)) * 1000
    with_bg = float(np.median(g.score_samples(gross)))
    alone = float(np.median(multivariate_normal(g.mean_, g.covariance_).logpdf(gross)))
    fresh = rng.standard_t(3, size=(1000, 3))
    typical = float(np.median(g.score_samples(fresh)
                              - multivariate_normal(g.mean_, g.covariance_).logpdf(fresh)))
    out += [("README example, rho = 0.1: median log-density of held-out gross rows, fit",
             f"{with_bg:.1f}"),
            ("README example, rho = 0.1: median log-density of held-out gross rows, "
             "Gaussian alone", f"{alone:.3g}"),
            ("README example, rho = 0.1: background weight", f"{g.background_weight_:.4f}"),
            ("README example, rho = 0.1: median log-density of held-out t(3) rows, fit "
             "minus Gaussian alone", f"{typical:.4f}")]
    return out


def clip_scale() -> list[tuple[str, str]]:
    prior = {"mean_bound": 10, "cov_bounds": (0.01, 1e8)}
    out = []
    for scale in (1.0, 2.0):
        var, clipped = [], []
        for seed in range(3):
            X, _ = datasets.make_heavy_tailed(20_000, 5, df=3.0, random_state=seed)
            g, _ = _fit(X, rho=0.5, clip_scale=scale, **prior)
            var += list(np.diag(g.covariance_))
            clipped.append(g.clipped_fraction_)
        out.append((f"t(3), n = 2e4, d = 5, rho = 0.5, seeds 0-2, clip_scale = {scale:g}: "
                    "fitted variances (true 3)", f"{min(var):.2f}–{max(var):.2f}"))
        out.append((f"t(3), n = 2e4, d = 5, rho = 0.5, seeds 0-2, clip_scale = {scale:g}: "
                    "clipped fraction (DP)",
                    f"{100 * min(clipped):.1f}–{_pct(max(clipped))}"))
    return out


def guide() -> list[tuple[str, str]]:
    X, _ = datasets.make_heavy_tailed(20_000, 5, df=3.0, random_state=0)
    X = datasets.with_defect(X, "gross", random_state=1)
    X = datasets.with_defect(X, "sorted")
    budget = {"epsilon": 1.0, "delta": 1e-6}
    g, warned = _fit(X, **budget)
    shuffled, _ = _fit(X[np.random.default_rng(5).permutation(len(X))], **budget)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reseeded = pg.PrivateGaussian(random_state=1, **budget).fit(X)
    wide, _ = _fit(X, clip_scale=2.0, **budget)
    v, vw, vc = np.diag(g.covariance_), np.diag(wide.covariance_), np.diag(np.cov(X.T))
    vs = np.diag(shuffled.covariance_)
    return [
        ("guide example: ClippedDataWarning", "yes" if warned else "no"),
        ("guide example: clipped fraction (DP)", _pct(g.clipped_fraction_)),
        ("guide example: clipped fraction alarm", _pct(g.clipped_fraction_alarm_)),
        ("guide example: fitted variances (true 3)", f"{v.min():.2f}–{v.max():.2f}"),
        ("guide example: np.cov variances", f"{vc.min():,.0f}–{vc.max():,.0f}"),
        ("guide example: largest variance difference, shuffled rows",
         f"{np.max(np.abs(vs - v)):.2g}"),
        ("guide example: largest variance difference, the same rows with noise seed 1",
         f"{np.max(np.abs(np.diag(reseeded.covariance_) - v)):.2g}"),
        ("guide example, clip_scale = 2: clipped fraction (DP)", _pct(wide.clipped_fraction_)),
        ("guide example, clip_scale = 2: fitted variances", f"{vw.min():.2f}–{vw.max():.2f}"),
    ]


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=RESULTS / "heavy_tails.md")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    rows = readme() + clip_scale() + guide()
    lines = ["# The heavy-tailed examples of the README and the fitting-real-data guide", "",
             "Command: `python benchmarks/heavy_tails.py` (repository root). Seeded fast noise; "
             "see the script's docstring for the set-ups. "
             f"Run time {time.perf_counter() - t0:.0f} s.", "",
             "| quantity | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in rows]
    text = "\n".join(lines) + "\n"
    args.out.write_text(text)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
