"""How much of the boosted model's R² in ``synth_peers.py`` is the training rows' discreteness
(issue 28's R² boosted gaps; a diagnosis, no synthesizer is fitted here except from the cache).

MST's and AIM's "raw" rows put every column on 20 equal-width levels between the training
rows' bounds. A boosted model (``HistGradientBoostingRegressor``, defaults) trained on rows
whose predictors take 20 values can split only between those values: on a table whose
target the others hardly predict it overfits less than on continuous predictors. This script
separates that from fidelity: per table and split it scores, on the real held-out rows, the
boosted (and linear) model trained on

* **real**: the real training rows (``synth_peers.py``'s ceiling row);
* **real, predictors on 20 levels**: the same rows with every predictor moved to the centre
  of its equal-width bin (MST raw's form, its bounds the training rows' own) — a perfect
  synthesizer's rows in the peers' raw form;
* **real, target independent**: the training rows with the target column permuted (a
  synthesizer that keeps the marginals and loses every dependence on the target);
* the cached **MST/AIM raw** and **jitter** rows (``--cache``, as ``synth_peers.py``).

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src python \\
        benchmarks/synth_r2_levels.py --tables wavesurge,treering,xclara,fair
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth_gaps import _split, split_args  # noqa: E402
from synth_peers import TARGETS, _held_out, _r2  # noqa: E402

LEVELS = 20


def _on_levels(X: np.ndarray, lo: np.ndarray, hi: np.ndarray, keep: int) -> np.ndarray:
    """``X`` with every column but ``keep`` moved to the centre of its equal-width bin (LEVELS
    bins between ``lo`` and ``hi``)."""
    out = X.copy()
    width = np.where(hi > lo, (hi - lo) / LEVELS, 1.0)
    for j in range(X.shape[1]):
        if j != keep:
            b = np.clip(np.floor((X[:, j] - lo[j]) / width[j]), 0, LEVELS - 1)
            out[:, j] = lo[j] + (b + 0.5) * width[j]
    return out


def run(name: str, args: argparse.Namespace) -> list[str]:
    target = TARGETS[name]
    rows: dict[str, list[tuple[float, float]]] = {}
    for seed in [int(s) for s in args.seeds.split(",")]:
        train, test = _split(name, seed, args.max_rows, args.max_cols)
        lo, hi = train.min(0), train.max(0)
        perm = train.copy()
        perm[:, target] = np.random.default_rng(seed).permutation(perm[:, target])
        sets = {"real": train, f"real, predictors on {LEVELS} levels":
                _on_levels(train, lo, hi, target), "real, target independent": perm}
        work = Path(args.cache) / f"{name}-s{seed}-r{args.max_rows}-c{args.max_cols}"
        if all((work / f"{p}.npy").exists() for p in ("mst", "aim")):
            hi1 = np.where(hi > lo, hi, lo + 1.0)
            rng = np.random.default_rng(0)  # as synth_peers._peers
            for p in ("mst", "aim"):
                raw = np.load(work / f"{p}.npy")
                sets[f"{p} raw"] = raw
                sets[f"{p} jitter"] = np.clip(
                    raw + rng.uniform(-0.5, 0.5, raw.shape) * (hi1 - lo) / 20, lo, hi1)
        for who, X in sets.items():
            rows.setdefault(who, []).append(_r2(test, X, target))
    out = []
    for who, vals in rows.items():
        a = np.array(vals)
        out.append(f"| {name} | {'yes' if _held_out(name) else ''} | {who} | {len(a)} | "
                   f"{np.median(a[:, 0]):.3f} | {np.median(a[:, 1]):.3f} | "
                   + " ".join(f"{v:.3f}" for v in a[:, 1]) + " |")
        print(out[-1], flush=True)
    return out


def main() -> None:
    ap = split_args(__doc__, "wavesurge,treering,xclara,fair", "0,1,2,3,4,5", draws=None)
    args = ap.parse_args()
    print("| table | held out | training rows | splits | R² linear (median) | R² boosted (median) "
          "| R² boosted per split |")
    print("|---|---|---|---|---|---|---|")
    for name in args.tables.split(","):
        run(name, args)


if __name__ == "__main__":
    main()
