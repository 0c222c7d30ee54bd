"""A probe for issue 27's small tables: a k-mixture fitted *to the DP synthesizer's rows*.

``PrivateGaussianMixture`` refuses 12 of the corpus' 21 tables at ε = 1 (em needs more rows
than they have), while ``PrivateSynthesizer`` fits every one of them. Fitting scikit-learn's
``GaussianMixture(k, n_init=5)`` to rows drawn from a fitted synthesizer is post-processing of
its release: the same (ε, δ) guarantee, replace-one neighbours. This script measures how far
that is from the reference, beside private EM, on the real-table corpus' splits
(``real_mixtures.py``: 80 % training rows, 20 % held out; no public rows; ε = 1, δ = 1e-6):

* ``em``: ``PrivateGaussianMixture(k)`` (method ``auto``) on the training rows;
* ``via synthesis``: ``PrivateSynthesizer`` on the training rows, ``--draws`` rows sampled
  (at least 10 per training row), the gridded columns dequantised (a uniform jitter of one grid
  step: integer, binary and gridded float columns, the step a DP release), then
  ``GaussianMixture(k, n_init=5)``;

each as ``gap`` (sklearn's held-out mean log-likelihood minus the fit's, nat/row, > 0 worse)
and ``vs gauss`` (one non-private Gaussian's minus the fit's: > 0, worse than it). Medians
over seeds and the worst seed.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/mixture_via_synthesis.py --seeds 2 \\
        --out benchmarks/results/mixture_via_synthesis.md
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import time
import warnings
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import corpus  # noqa: E402  (benchmarks/ put on the path above)
from real_corpus import DELTA, guarded_fit, split  # noqa: E402
from real_mixtures import load_rows, references  # noqa: E402

import privgauss as pg  # noqa: E402


def via_synthesis(train: np.ndarray, test: np.ndarray, k: int, seed: int, draws: int
                  ) -> float:
    """Held-out mean log-likelihood of ``GaussianMixture(k)`` fitted to the synthesizer's rows."""
    from sklearn.mixture import GaussianMixture

    syn = pg.PrivateSynthesizer(epsilon=1.0, delta=DELTA, random_state=seed).fit(train)
    S = np.asarray(syn.sample(max(draws, 10 * train.shape[0]), random_state=seed), dtype=float)
    step = np.array([m.grid for m in syn.marginals_])
    S = S + np.random.default_rng(seed).uniform(-0.5, 0.5, S.shape) * step
    mu, sd = S.mean(axis=0), S.std(axis=0) + 1e-12
    gm = GaussianMixture(k, n_init=5, random_state=seed).fit((S - mu) / sd)
    return float(np.mean(gm.score_samples((test - mu) / sd) - np.log(sd).sum()))


def _cell(values: list[float]) -> str:
    if not values:
        return "— | —"
    return f"{statistics.median(values):.3g} | {max(values):.3g}"


def run(names: list[str], k: int, seeds: int, draws: int) -> list[str]:
    lines = ["| table | n×d | held out | parked | em outcome | em gap | em worst gap | "
             "em vs gauss | via synthesis gap | worst gap | via synthesis vs gauss | worst "
             "vs gauss | s/fit |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in names:
        table = corpus.TABLES[name]
        rows, _ = load_rows(name)
        em: list[dict[str, Any]] = []
        syn_gap, syn_gauss, secs, parked = [], [], [], False
        for s in range(seeds):
            train, test, _, public = split(rows, s, 50_000)
            ref = references(train, test, public, k, s)
            parked = parked or ref["parked"]
            est = pg.PrivateGaussianMixture(k, epsilon=1.0, delta=DELTA, random_state=s)
            failed, _, _ = guarded_fit(est, train, None)
            em.append(failed or {"status": "ok", "gap": ref["sklearn"] - est.score(test),
                                 "vs gauss": ref["gauss"] - est.score(test)})
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                score = via_synthesis(train, test, k, s, draws)
            secs.append(time.perf_counter() - t0)
            syn_gap.append(ref["sklearn"] - score)
            syn_gauss.append(ref["gauss"] - score)
        ok = [r for r in em if r["status"] == "ok"]
        outcome = f"{len(ok)}/{seeds} ok" + (f", {seeds - len(ok)}× {em[0]['status']}"
                                             if len(ok) < seeds else "")
        lines.append(
            f"| {name} | {rows.shape[0]}×{rows.shape[1]} | {'yes' if table.held_out else ''} | "
            f"{'yes' if parked else ''} | {outcome} | {_cell([r['gap'] for r in ok])} | "
            f"{_cell([r['vs gauss'] for r in ok]).split(' | ')[0]} | {_cell(syn_gap)} | "
            f"{_cell(syn_gauss)} | {statistics.median(secs):.2g} |")
        print(lines[-1], flush=True)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", nargs="+", choices=list(corpus.TABLES),
                        default=[n for n, t in corpus.TABLES.items()
                                 if not t.small and not t.held_out])
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--draws", type=int, default=50_000)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    t0 = time.perf_counter()
    lines = run(args.tables, args.k, args.seeds, args.draws)
    if args.out:
        cmd = " ".join(shlex.quote(a) for a in ["python", *sys.argv])
        head = [f"# A k-mixture fitted to the DP synthesizer's rows (k = {args.k}, ε = 1)", "",
                f"Command: `OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src {cmd}` "
                f"({(time.perf_counter() - t0) / 60:.1f} min). See the script's docstring; "
                "gaps in nat/row, > 0 worse than the reference.", ""]
        with open(args.out, "w") as fh:
            fh.write("\n".join(head + lines) + "\n")


if __name__ == "__main__":
    main()
