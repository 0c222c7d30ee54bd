"""No fit fails after spending, and every released covariance is positive definite, where the
factor path runs (wide plans; issue 27): ``PrivateGaussianMixture(3)`` on ``em_parked.py``'s
21 sweep tables (split seed 0) at several ε. Prints, per ε, how many plans were wide
(``EMPlan.factored``), how many fits failed and how many had a covariance that is not positive
definite as the user's scoring reads it (``em_parked._positive``) or a non-finite held-out
``score_samples``.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/em_parked_stress.py --eps 1e3 1e6 1e8
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import em_parked as ep  # noqa: E402

import privgauss as pg  # noqa: E402

TABLES = ("Aids2 Chile Treatment rwm amis azpro immi3 Vocab ohio mid nwtco Tobacco SLID Star "
          "sunspots NOxEmissions MunExp Benefits Ketchup Snmesp SumHes").split()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--eps", type=float, nargs="+", default=[1e3, 1e6, 1e8])
    ap.add_argument("--tables", nargs="+", default=list(TABLES))
    args = ap.parse_args()
    for eps in args.eps:
        fails = bad = wide = 0
        for name in args.tables:
            train, test = ep._rows(name, 0)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est = pg.PrivateGaussianMixture(3, epsilon=eps, delta=1e-6,
                                                    random_state=0).fit(train)
            except pg.EstimationFailed:
                fails += 1
                print(f"failed: {name} at ε = {eps:g}")
                continue
            wide += bool(est.fit_info_["em_plan"].factored)
            ok = (all(ep._positive(C) for C in est.covariances_)
                  and bool(np.all(np.isfinite(est.score_samples(test)))))
            bad += not ok
        print(f"ε = {eps:g}: {len(args.tables)} tables, wide (factored) {wide}, failed {fails}, "
              f"not PD or not finite {bad}", flush=True)


if __name__ == "__main__":
    main()
