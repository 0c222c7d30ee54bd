"""DP synthetic tables of generated tables with the defects of real ones (issue 28: marginals and
correlations on any table, not only the ones it was tuned on).

Tables: ``gaussian_error_tail.mixed_table(seed)`` — 3–9 columns of random kinds (Gaussian,
lognormal, 0/1 flags, Likert answers, Poisson counts, zero-inflated lognormal, Beta shares)
tied by a Gaussian copula, each scaled by 10^U(−2, 3) and *shifted* by 10^U(0, 4) (values far
from 0 against their spread, as years, lab values or coordinates are), n = 2,000–8,000, a third
with 0.1 % gross errors. Whole-number columns are given as int64 (a CSV's dtype), the others
float64 (a scaled Likert answer is then a float column with a few values: modelled continuous
unless declared). ``pg.synthesize(df, n, epsilon=ε, delta=1e-6, random_state=0)``, no bounds.

Per table and arm, against the real rows: Spearman's rank correlations' mean absolute error
over the column pairs, and the mean over columns of the 1-way total variation on 20 quantile
bins of the real column (synthetic values clipped into the real range, so the bins hold every
row). ``--arms "A;B"``: each arm a comma-separated list of ``MODULE.NAME=VALUE`` settings of a
``privgauss`` module constant ("" the code as it is), run on the same tables and noise seed.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/synth_mixed_tables.py --families 2100-2159 \\
        --arms "synthesis.marginals.NARROW_ZOOM=0;" --out synth_mixed.md
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import warnings

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from em_mixed_tables import _apply, _restore, _seeds  # noqa: E402
from gaussian_error_tail import mixed_table, report  # noqa: E402

import privgauss as pg  # noqa: E402


def frame(seed: int) -> tuple[pd.DataFrame, str]:
    """The generated table as a DataFrame (whole-number columns int64) and its description."""
    rows, kind = mixed_table(seed)
    df = pd.DataFrame({f"c{j}": rows[:, j] for j in range(rows.shape[1])})
    for c in df.columns:
        if np.all(df[c] == np.round(df[c])):
            df[c] = df[c].astype("int64")
    return df, kind


def rank_mae(real: pd.DataFrame, syn: pd.DataFrame) -> float:
    """Mean absolute difference of Spearman's correlations over the column pairs."""
    a = np.atleast_2d(spearmanr(real.to_numpy(float)).correlation)
    b = np.atleast_2d(spearmanr(syn.to_numpy(float)).correlation)
    off = ~np.eye(a.shape[0], dtype=bool)
    return float(np.mean(np.abs(np.nan_to_num(a - b))[off]))


def one_way_tv(real: pd.DataFrame, syn: pd.DataFrame) -> float:
    """Mean over columns of the total variation on 20 quantile bins of the real column (a
    column with fewer distinct quantiles gets fewer bins; one with a single bin is left out)."""
    out = []
    for c in real.columns:
        e = np.unique(np.quantile(real[c], np.linspace(0.0, 1.0, 21)))
        if len(e) < 3:
            continue
        h_syn = np.histogram(np.clip(syn[c], e[0], e[-1]), bins=e)[0] / len(syn)
        h_real = np.histogram(real[c], bins=e)[0] / len(real)
        out.append(0.5 * float(np.abs(h_syn - h_real).sum()))
    return float(np.mean(out)) if out else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", required=True, help="mixed_table seeds: 2100-2159,2300")
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--arms", default="", help='"A;B": arms, each NAME=VALUE,... ("" = as is)')
    ap.add_argument("--out")
    args = ap.parse_args()
    arms = args.arms.split(";")
    lines = ["| table | n×d | " + " | ".join(f"{a or 'as is'}: rank MAE | 1-way TV"
                                              for a in arms) + " |",
             "|---|---|" + "---|---|" * len(arms)]
    got: dict[str, list[tuple[float, float]]] = {a: [] for a in arms}
    for fam in _seeds(args.families):
        df, kind = frame(fam)
        cells = []
        for arm in arms:
            old = _apply(arm)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    syn = pg.synthesize(df, len(df), epsilon=args.epsilon, delta=1e-6,
                                        random_state=0)
            finally:
                _restore(old)
            m = (rank_mae(df, syn), one_way_tv(df, syn))
            got[arm].append(m)
            cells.append(f"{m[0]:.3f} | {m[1]:.3f}")
        line = f"| family {fam} ({kind}) | {df.shape[0]}×{df.shape[1]} | " + " | ".join(
            cells) + " |"
        lines.append(line)
        print(line, file=sys.stderr, flush=True)
    summary = []
    for arm in arms:
        r, t = [x[0] for x in got[arm]], [x[1] for x in got[arm]]
        summary.append(f"- {arm or 'as is'}: rank MAE median {statistics.median(r):.3f} "
                       f"(mean {np.mean(r):.3f}), 1-way TV median {statistics.median(t):.3f} "
                       f"(mean {np.mean(t):.3f})")
    if len(arms) == 2:
        a, b = (got[x] for x in arms)
        for i, name in enumerate(("rank MAE", "1-way TV")):
            better = sum(y[i] < x[i] for x, y in zip(a, b, strict=True))
            worse = sum(y[i] > x[i] for x, y in zip(a, b, strict=True))
            summary.append(f"- {name}, {arms[1] or 'as is'} against {arms[0] or 'as is'}: "
                           f"better on {better}, worse on {worse} of {len(a)} tables")
    report(f"# DP synthetic tables of generated mixed tables (ε = {args.epsilon:g})",
           "synth_mixed_tables.py", [*summary, "", *lines], args.out)


if __name__ == "__main__":
    main()
