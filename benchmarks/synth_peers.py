"""DP synthetic tables: ``pg.synthesize`` against smartnoise-synth's MST and AIM (issue 28).

For each table of the corpus (``benchmarks/corpus.py``; held-out tables are marked and were
kept out of any tuning), rows are split at random into 80% training and 20% held-out rows, at
most ``--max-rows`` training rows. Each synthesizer gets the training rows at ε = 1
(δ = 1e-6 where it takes one) and draws as many rows:

* **privgauss**: ``pg.synthesize`` with no bounds and no types (the corpus's columns are
  float64: the DP type test decides integers), secure noise;
* **MST**, **AIM** (smartnoise-synth, in their own virtual environment since their pins clash
  with ours): each column binned into 20 equal-width bins between its **public bounds** (here
  the training rows' min and max, given for free — an advantage privgauss does not get),
  synthetic values the bin centres ("raw") or uniform within the bin ("jitter").

Metrics (synthetic vs real held-out rows): correlation MAE (mean |ΔPearson| over pairs),
1-way and 2-way TV on the real rows' quantile bins (20 per column; 5×5 per pair, averaged),
held-out log-likelihood of the real rows under ``sklearn.mixture.GaussianMixture(4)`` fitted
on the synthetic rows after standardising by the training rows (mean nat/row; median per row
beside it), and wall time.

    python3 -m venv /work/venv-snsynth && /work/venv-snsynth/bin/pip install smartnoise-synth
    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/synth_peers.py \\
        --max-rows 10000 --peers-python /work/venv-snsynth/bin/python \\
        --out benchmarks/results/synth_peers.md

(default tables: fair, bundesliga, wavesurge — used while tuning — and the held-out treering,
budget_food, health_insurance; at most 10 columns each). Times exclude imports and were taken
on a shared, loaded 2-core machine: compare them within one run only.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import TABLES, load  # noqa: E402

# run by the peers' interpreter: reads train.npy and bounds, writes <name>.npy and times
_PEER = r"""
import json, sys, time, warnings
import numpy as np, pandas as pd
warnings.simplefilter("ignore")
from snsynth import Synthesizer
from snsynth.transform import TableTransformer, BinTransformer
work, names = sys.argv[1], sys.argv[2].split(",")
X = np.load(f"{work}/train.npy")
lo, hi = np.load(f"{work}/lo.npy"), np.load(f"{work}/hi.npy")
df = pd.DataFrame(X, columns=[f"c{j}" for j in range(X.shape[1])])
times = {}
for name in names:
    t0 = time.time()
    tt = TableTransformer([BinTransformer(bins=20, lower=float(lo[j]), upper=float(hi[j]))
                           for j in range(X.shape[1])])
    synth = Synthesizer.create(name, epsilon=1.0, delta=1e-6, verbose=False)
    synth.fit(df, transformer=tt, preprocessor_eps=0.0)
    out = synth.sample(len(df))
    times[name] = time.time() - t0
    np.save(f"{work}/{name}.npy", np.asarray(out, dtype=float))
json.dump(times, open(f"{work}/times.json", "w"))
"""


def _tv_1way(real: np.ndarray, syn: np.ndarray, bins: int = 20) -> float:
    edges = np.unique(np.quantile(real, np.linspace(0, 1, bins + 1)))
    if len(edges) < 2:
        return 0.0
    h = [np.histogram(np.clip(x, edges[0], edges[-1]), edges)[0] / len(x) for x in (real, syn)]
    return 0.5 * float(np.abs(h[0] - h[1]).sum())


def _tv_2way(real: np.ndarray, syn: np.ndarray, bins: int = 5) -> float:
    d = real.shape[1]
    out = []
    for i in range(d):
        for j in range(i + 1, d):
            ei = np.unique(np.quantile(real[:, i], np.linspace(0, 1, bins + 1)))
            ej = np.unique(np.quantile(real[:, j], np.linspace(0, 1, bins + 1)))
            if len(ei) < 2 or len(ej) < 2:
                continue
            h = [np.histogram2d(np.clip(x[:, i], ei[0], ei[-1]), np.clip(x[:, j], ej[0], ej[-1]),
                                [ei, ej])[0] / len(x) for x in (real, syn)]
            out.append(0.5 * float(np.abs(h[0] - h[1]).sum()))
    return float(np.mean(out)) if out else 0.0


def _corr_mae(real: np.ndarray, syn: np.ndarray) -> float:
    with np.errstate(all="ignore"):
        a, b = np.nan_to_num(np.corrcoef(real.T)), np.nan_to_num(np.corrcoef(syn.T))
    iu = np.triu_indices(real.shape[1], 1)
    return float(np.mean(np.abs(a - b)[iu])) if iu[0].size else 0.0


def _loglik(train: np.ndarray, test: np.ndarray, syn: np.ndarray) -> tuple[float, float]:
    from sklearn.mixture import GaussianMixture

    mu, sd = train.mean(0), train.std(0) + 1e-9
    gm = GaussianMixture(4, reg_covar=1e-3, random_state=0).fit((syn - mu) / sd)
    s = gm.score_samples((test - mu) / sd) - np.log(sd).sum()
    return float(np.mean(s)), float(np.median(s))


def _metrics(train: np.ndarray, test: np.ndarray, syn: np.ndarray, secs: float) -> dict:
    ll, ll_med = _loglik(train, test, syn)
    return {"corr MAE": _corr_mae(test, syn),
            "1-way TV": float(np.mean([_tv_1way(test[:, j], syn[:, j])
                                       for j in range(test.shape[1])])),
            "2-way TV": _tv_2way(test, syn), "loglik": ll, "loglik median": ll_med, "s": secs}


def _peers(train: np.ndarray, python: str, names: list[str]) -> dict[str, tuple]:
    """MST/AIM on the training rows in the peers' venv: {name: (raw rows, jittered rows, s)}."""
    lo, hi = train.min(0), train.max(0)
    hi = np.where(hi > lo, hi, lo + 1.0)
    with tempfile.TemporaryDirectory() as work:
        np.save(f"{work}/train.npy", train)
        np.save(f"{work}/lo.npy", lo)
        np.save(f"{work}/hi.npy", hi)
        subprocess.run([python, "-c", _PEER, work, ",".join(names)], check=True)
        times = json.loads(Path(f"{work}/times.json").read_text())
        out = {}
        rng = np.random.default_rng(0)
        width = (hi - lo) / 20
        for name in names:
            raw = np.load(f"{work}/{name}.npy")
            jit = np.clip(raw + rng.uniform(-0.5, 0.5, raw.shape) * width, lo, hi)
            out[name] = (raw, jit, times[name])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", default="fair,bundesliga,wavesurge,treering,budget_food,"
                    "health_insurance")
    ap.add_argument("--max-rows", type=int, default=20000)
    ap.add_argument("--max-cols", type=int, default=10)
    ap.add_argument("--peers-python", default=None,
                    help="python of the venv with smartnoise-synth (omit: privgauss only)")
    ap.add_argument("--peers", default="mst,aim")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    import privgauss as pg
    import privgauss.synthesis  # noqa: F401  # imports outside the timings, as the peers'

    lines = ["| table | held out | n train | d | synthesizer | corr MAE | 1-way TV | 2-way TV "
             "| loglik | loglik median | s |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in args.tables.split(","):
        X = load(name)[:, : args.max_cols]
        rng = np.random.default_rng(0)
        perm = rng.permutation(len(X))
        cut = int(0.8 * len(X))
        train, test = X[perm[:cut]][: args.max_rows], X[perm[cut:]]
        rows: dict[str, dict] = {}
        t0 = time.time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            syn = pg.synthesize(train, len(train), epsilon=1.0, delta=1e-6)
        rows["privgauss"] = _metrics(train, test, np.asarray(syn, float), time.time() - t0)
        if args.peers_python:
            for peer, (raw, jit, secs) in _peers(train, args.peers_python,
                                                 args.peers.split(",")).items():
                rows[f"{peer} raw"] = _metrics(train, test, raw, secs)
                rows[f"{peer} jitter"] = _metrics(train, test, jit, secs)
        held = "yes" if TABLES[name].held_out else ""
        for who, m in rows.items():
            lines.append(f"| {name} | {held} | {len(train)} | {X.shape[1]} | {who} | "
                         f"{m['corr MAE']:.3f} | {m['1-way TV']:.3f} | {m['2-way TV']:.3f} | "
                         f"{m['loglik']:.2f} | {m['loglik median']:.2f} | {m['s']:.1f} |")
            print(lines[-1], file=sys.stderr, flush=True)
    text = ("# DP synthetic tables against MST and AIM (ε = 1, δ = 1e-6)\n\n"
            "Regenerate with the command in `benchmarks/synth_peers.py`'s docstring.\n\n"
            + "\n".join(lines) + "\n")
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    from privgauss.progress import on_terminal

    with on_terminal():  # a status line naming the current release, on a terminal
        main()
