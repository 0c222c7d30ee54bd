"""Private EM's background weight on the fresh corpus at ε = 1 (stop 42): held-out mean
log-likelihood per row of the same fit with the background weighted by the current rule
(:func:`privgauss.gaussian.clip_diagnostics.background_weight`: the clipped count's excess over
the components' own tail, at least a tenth of the rows the count's noise can hide) and by the
earlier one (the excess beyond the count's 1 − 10⁻³ noise quantile). Post-processing of one fit
each: only ``background_weight_`` differs.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/em_background.py --seeds 2 --out benchmarks/results/em_background.md
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import mixture_corpus as mc  # noqa: E402
import real_mixtures as rm  # noqa: E402
from real_corpus import split  # noqa: E402

import privgauss as pg  # noqa: E402
from privgauss.gaussian.clip_diagnostics import count_noise_quantile  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    lines = ["| table | split | public | clipped | old weight | new weight | old score | "
             "new score | gain |", "|---|---|---|---|---|---|---|---|---|"]
    gains = []
    for name in mc.fresh_tables(2000, 10):
        rows, _ = rm.load_rows(name)
        for s in range(args.seeds):
            train, test, private, public = split(rows, s, 20000)
            for pub in (False, True):
                est = pg.PrivateGaussianMixture(3, epsilon=1.0, delta=1e-6, random_state=s)
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        est.fit(private if pub else train, public_X=public if pub else None)
                except (pg.EstimationFailed, pg.InvalidDataError):
                    continue
                cc = est.fit_info_.get("clipped_count")
                if cc is None:
                    continue
                n, p, sigma = float(cc["n"]), float(cc["model_fraction"]), float(cc["noise_scale"])
                new_w = est.background_weight_
                old_w = max(est.clipped_fraction_ - p
                            - count_noise_quantile("count-discrete-gaussian", sigma) / n, 0.0)
                new = float(est.score(test))
                est.background_weight_ = old_w
                old = float(est.score(test))
                gains.append(new - old)
                lines.append(f"| {name} | {s} | {'yes' if pub else ''} | "
                             f"{est.clipped_fraction_:.3f} | {old_w:.4f} | {new_w:.4f} | "
                             f"{old:.3f} | {new:.3f} | {new - old:+.3f} |")
                print(lines[-1], flush=True)
    summary = (f"{len(gains)} fits: mean gain {statistics.mean(gains):+.3f} nat/row, median "
               f"{statistics.median(gains):+.4f}; better by > 0.005: "
               f"{sum(g > 0.005 for g in gains)}, worse by > 0.005: "
               f"{sum(g < -0.005 for g in gains)}, worst {min(gains):+.3f}, best "
               f"{max(gains):+.3f}")
    print(summary)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write("# Private EM's background weight, ε = 1, the fresh corpus (k = 3)\n\n"
                     f"Command: `python benchmarks/em_background.py --seeds {args.seeds} "
                     f"--out {args.out}`\n\n{summary}.\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
