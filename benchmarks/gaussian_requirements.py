"""Does a Gaussian fit run at the n ``privgauss requirements gaussian`` states? (issue 17)

For each method with a practical requirement in the registry (``privgauss.methods``: public,
histogram, ppe), fits ``--runs`` datasets of ``--factor`` × the stated n (random covariance
A·Aᵀ + 0.5·I, mean far from 0, d+1 public rows for ``public``) and counts the fits that succeed
(no ``EstimationFailed``, no refusal). Example:

    PYTHONPATH=src python benchmarks/gaussian_requirements.py --factor 1.2 --runs 20
"""

from __future__ import annotations

import argparse
import math
import warnings

import numpy as np

import privgauss as pg
from privgauss import methods
from privgauss.methods import Facts

CASES = [("public", 2, {"rho": 0.5}), ("public", 5, {"rho": 0.5}), ("public", 10, {"rho": 0.5}),
         ("public", 5, {"epsilon": 1.0, "delta": 1e-6}),
         ("histogram", 2, {"epsilon": 1.0, "delta": 1e-6}),
         ("histogram", 5, {"epsilon": 1.0, "delta": 1e-6}),
         ("histogram", 10, {"epsilon": 1.0, "delta": 1e-6}),
         ("histogram", 30, {"epsilon": 1.0, "delta": 1e-6}),
         ("ppe", 2, {"epsilon": 1.0, "delta": 1e-6})]


def run_case(method: str, d: int, kw: dict, factor: float, runs: int) -> tuple[float, int, int]:
    """(stated n, fitted n, successes) of one case."""
    budget = pg.privacy.make_budget(rho=kw.get("rho"), epsilon=kw.get("epsilon"),
                                    delta=kw.get("delta"))
    facts = Facts("gaussian", budget, 0, d, n_public=None)
    need = methods.requirements("gaussian", method, facts).n_needed
    n = math.ceil(factor * need)
    ok = 0
    for seed in range(runs):
        rng = np.random.default_rng(1000 + seed)
        A = rng.standard_normal((d, d))
        cov = A @ A.T + 0.5 * np.eye(d)
        mu = rng.standard_normal(d) * 100
        X = rng.multivariate_normal(mu, cov, size=n)
        P = rng.multivariate_normal(mu, cov, size=d + 1) if method == "public" else None
        try:
            pg.PrivateGaussian(**kw, method=method, random_state=seed).fit(X, public_X=P)
            ok += 1
        except (pg.EstimationFailed, ValueError):
            pass
    return need, n, ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--factor", type=float, default=1.2)
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    print("| method | d | budget | stated n | fitted n | succeeded |\n|---|---|---|---|---|---|")
    for method, d, kw in CASES:
        need, n, ok = run_case(method, d, kw, args.factor, args.runs)
        print(f"| {method} | {d} | {kw} | {need:.0f} | {n} | {ok}/{args.runs} |", flush=True)


if __name__ == "__main__":
    from privgauss.progress import on_terminal

    with on_terminal():  # a status line naming the current release, on a terminal
        main()
