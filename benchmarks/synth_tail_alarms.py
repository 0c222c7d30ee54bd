"""Which tail bins each tail-cut rule keeps (issue 28; nothing here is a DP release): for each
table, split (``synth_gaps._split``) and seeded draw (``random_state = 1000·split + draw``),
``PrivateSynthesizer(epsilon=1, delta=1e-6)`` is fitted with ``marginals.TAIL_GRADED`` False
(one cut for every tail bin) and True (false-alarm share ∝ 2^−t, t octaves past the range),
same seed; every kept tail bin is printed with its distance t, its kept (noisy) count and the
training records in it (0: a false alarm), then a summary per table and rule.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src python \\
        benchmarks/synth_tail_alarms.py --tables wavesurge,fair,psid --seeds 0,1,2 --draws 12
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth_gaps import _split, split_args  # noqa: E402

import privgauss as pg  # noqa: E402
from privgauss.synthesis import marginals as marg  # noqa: E402

_LOG: list[tuple[int, str, float, float, int, float]] = []
_ORIG = marg._released_tails


def _spy(noisy: Any, tails: Any, ranged: Any, sh: float, sr: float) -> Any:
    out = _ORIG(noisy, tails, ranged, sh, sr)
    for j, t in enumerate(out):
        for side, v in t.items():
            keys = np.asarray(tails[j][side][1])
            end = ranged[j][2] if side == "top" else ranged[j][1]
            for i in np.flatnonzero(v[1] > 0):
                _LOG.append((j, side, float(v[0][i]), float(v[0][i + 1]),
                             int(abs(keys[i] - end)), float(v[1][i])))
    return out


def main() -> None:
    ap = split_args(__doc__, "wavesurge,fair,psid,forbes2000,noxemissions", "0,1,2", draws=12)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    marg._released_tails = _spy  # type: ignore[assignment]
    old = marg.TAIL_GRADED
    summary: dict[tuple[str, bool], list[tuple[int, float, int]]] = {}
    seeds = [int(s) for s in args.seeds.split(",")]
    try:
        for name in args.tables.split(","):
            for sp in seeds:
                train, _ = _split(name, sp, args.max_rows, args.max_cols)
                for r in range(args.draws):
                    for graded in (False, True):
                        marg.TAIL_GRADED = graded
                        _LOG.clear()
                        pg.PrivateSynthesizer(epsilon=1, delta=1e-6,
                                              random_state=1000 * sp + r).fit(train)
                        for j, side, lo, hi, t, m in _LOG:
                            cnt = int(np.sum((train[:, j] >= lo) & (train[:, j] < hi)))
                            summary.setdefault((name, graded), []).append((t, m, cnt))
                            print(name, sp, r, "graded" if graded else "old",
                                  f"col {j} {side} [{lo:g},{hi:g}) t={t} kept={m:.1f} "
                                  f"records={cnt}", flush=True)
    finally:
        marg.TAIL_GRADED = old
        marg._released_tails = _ORIG  # type: ignore[assignment]
    print("\n| table | rule | kept with records (t ≤ 3 / t ≥ 4) | false alarms (t ≤ 3 / t ≥ 4) "
          "| false alarms' kept count (t ≤ 3 / t ≥ 4) |\n|---|---|---|---|---|")
    for name in args.tables.split(","):
        for graded in (False, True):
            rows = summary.get((name, graded), [])
            tr = [x for x in rows if x[2] > 0]
            fa = [x for x in rows if x[2] == 0]
            print(f"| {name} | {'graded' if graded else 'old'} "
                  f"| {sum(x[0] <= 3 for x in tr)} / {sum(x[0] >= 4 for x in tr)} "
                  f"| {sum(x[0] <= 3 for x in fa)} / {sum(x[0] >= 4 for x in fa)} "
                  f"| {sum(x[1] for x in fa if x[0] <= 3):.0f} / "
                  f"{sum(x[1] for x in fa if x[0] >= 4):.0f} |")


if __name__ == "__main__":
    main()
