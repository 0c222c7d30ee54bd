"""Public-data Gaussian fits just above the refusal line: what happens at the n the plan check lets
through, next to the planner's predicted and ideal (perfect-preconditioner) errors.

For d ∈ {50, 100} with d+1 public rows and ρ = 1, a few seeds per n: whether the fit returns,
fails (``EstimationFailed`` after spending: a collapsed whitening chain) or is refused before
spending, and the relative Frobenius covariance error of what it returns, next to np.cov's.

    python benchmarks/public_refusal_edge.py    # -> benchmarks/results/public_refusal_edge.md
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import privgauss as pg
from privgauss.gaussian.public import public_noise_ratio, public_predicted_error

HERE = Path(__file__).resolve().parent
CASES = {50: (7000, 8000, 10000), 100: (20000, 22000, 24000, 26000, 28000, 32000)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--rho", type=float, default=1.0)
    args = ap.parse_args()
    t0 = time.time()
    lines = [
        "# Public-data fits just above the refusal line",
        "",
        "Command: `python benchmarks/public_refusal_edge.py "
        f"--seeds {args.seeds} --rho {args.rho:g}`",
        "",
        "Rows ~ N(0, I_d), d+1 public rows from the same law, `PrivateGaussian(rho)` defaults. "
        "predicted / ideal: the planner's relative covariance error with the public "
        "preconditioner's worst-case range / with a perfect one (`public_predicted_error`); "
        "noise: 2σ√d/ℓ of the plan's last covariance step (`public_noise_ratio`). The plan "
        "check refuses, before spending, when d ≥ 50 and noise > 0.5 (and a perfect "
        "preconditioner's ≤ 0.5), or predicted > 20 and > 2 × ideal. Errors: ‖Σ̂ − I‖_F/√d.",
        "",
        "| d | n | predicted | ideal | noise | returned | failed | refused | errors | np.cov |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for d, ns in CASES.items():
        for n in ns:
            pred = public_predicted_error(n, d + 1, d, args.rho, 0.05, 0.0, "practical")
            ideal = public_predicted_error(n, d + 1, d, args.rho, 0.05, 0.0, "practical",
                                           ideal=True)
            noise = public_noise_ratio(n, d + 1, d, args.rho, 0.05, 0.0, "practical")
            ok, failed, refused, errs, base = 0, 0, 0, [], []
            for seed in range(args.seeds):
                rng = np.random.default_rng(seed)
                X = rng.standard_normal((n, d))
                pub = rng.standard_normal((d + 1, d))
                base.append(np.linalg.norm(np.cov(X, rowvar=False) - np.eye(d)) / np.sqrt(d))
                try:
                    est = pg.PrivateGaussian(rho=args.rho, random_state=seed).fit(X, public_X=pub)
                except pg.EstimationFailed:
                    failed += 1
                    continue
                except pg.InvalidDataError:
                    refused += 1
                    continue
                ok += 1
                errs.append(np.linalg.norm(est.covariance_ - np.eye(d)) / np.sqrt(d))
            lines.append(
                f"| {d} | {n} | {pred:.3g} | {ideal:.3g} | {noise:.3g} | {ok} | {failed} | "
                f"{refused} | {', '.join(f'{e:.3f}' for e in errs) or '-'} | "
                f"{np.median(base):.3f} |"
            )
            print(lines[-1], flush=True)
    lines += ["", f"Total wall time {time.time() - t0:.0f} s (shared 2-core machine)."]
    out = HERE / "results" / "public_refusal_edge.md"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    from privgauss.progress import on_terminal

    with on_terminal():  # a status line naming the current release, on a terminal
        main()
