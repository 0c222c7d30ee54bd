"""DP synthetic tables on every narrow pydataset table: refusals, types, ranges, consistency
(issue 28).

``synth_peers.py`` compares privgauss with MST and AIM on ten tables; this script asks what a
user with *any* table gets. It reads every CSV in pydataset's bundled tarball (nothing is
downloaded), keeps the tables with at least ``--min-rows`` complete rows and 2 to
``--max-cols`` numeric columns (pandas' own dtypes from the file: integer columns stay int64,
so the synthesizer's integer path is exercised as a CSV user's would be), drops exact duplicate
tables, and for each splits the rows at random 80/20 (at most ``--max-rows`` training rows).
``pg.PrivateSynthesizer`` is fitted on the training DataFrame, with no bounds, at each budget of
``--budgets`` (ε, δ = 1e-6; seeded noise: an experiment), and draws as many rows as it saw.

Per table and budget it records the outcome (a refusal's message), and against the real
held-out rows: correlation MAE, 1-way TV on 20 quantile bins per column, 2-way TV on 5×5
quantile bins per pair (``synth_peers.py``'s metrics, here on values rounded to float32 and
non-integers to 6 significant digits: the files' float32 artefacts, 7.90000009536743 or
7.9000004 for 7.9, would put a synthetic 7.9 into the quantile bin below its level), the
same three for the real *training* rows (the sampling floor: what a perfect synthesizer of
this size would score), and checks of the output's form — the column names and dtypes those
of the input, every integer column's values whole, each 0/1 integer column's values 0 or 1,
and the share of values outside the training rows' [min, max] (the synthesizer releases a
DP range, which may be wider; per column in the JSON and the summary, the table's largest in
the per-table rows), exactly and at the metrics' rounding ("outside (6 digits)":
a float column's point mass at its largest value, synthesized 5e-9 above it, is not
outside there).

**Consistency**: at a huge budget the metrics must fall to the floor (the marginals and the
grid sharpen as the noise vanishes); the table reports each metric's excess over the floor.

Tables of the corpus and of ``synth_peers.py`` are marked "seen" (the synthesizer was tuned on
some of them); the others — most rows here — were never looked at while tuning.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src python benchmarks/synth_corpus.py \\
        --out benchmarks/results/synth_corpus.md
"""

from __future__ import annotations

import argparse
import hashlib
import io
import sys
import tarfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus  # noqa: E402
import synth_peers as sp  # noqa: E402

import privgauss as pg  # noqa: E402


def _tables(min_rows: int, max_cols: int) -> list[tuple[str, object]]:
    """(name, DataFrame of the numeric columns, complete rows) of every distinct pydataset table
    with at least ``min_rows`` rows and 2..``max_cols`` numeric columns."""
    import pandas as pd

    out, seen = [], set()
    with tarfile.open(corpus._pydataset_tarball(), "r|gz") as tar:
        for m in tar:
            if not (m.isfile() and m.name.endswith(".csv")):
                continue
            fh = tar.extractfile(m)
            if fh is None:
                continue
            try:
                df = pd.read_csv(io.BytesIO(fh.read()), index_col=0, encoding="latin-1",
                                 low_memory=False)
            except Exception:  # a file pandas cannot parse is no table for this sweep
                continue
            num = df.select_dtypes(include=["number", "bool"]).dropna(axis=0, how="any")
            if len(num) < min_rows or not 2 <= num.shape[1] <= max_cols:
                continue
            key = hashlib.sha1(np.ascontiguousarray(
                num.to_numpy(dtype=np.float64)).tobytes()).hexdigest()
            if key in seen:
                continue
            seen.add(key)
            out.append((Path(m.name).name[:-4], num.reset_index(drop=True)))
    return sorted(out, key=lambda t: t[0].lower())


def _seen_names() -> set[str]:
    """pydataset items the corpus or the peers' benchmark load (used in tuning, or held out
    of it but looked at): importing the two modules registered them."""
    return {s.lower() for s in corpus._PYDATASET_ITEMS}


def _form(train: object, syn: object) -> dict:
    """Checks of the synthetic DataFrame's form against the training one."""
    import pandas as pd

    assert isinstance(train, pd.DataFrame) and isinstance(syn, pd.DataFrame)
    same = list(syn.columns) == list(train.columns) and list(syn.dtypes) == list(train.dtypes)
    whole, binary, outside, outside6 = True, True, 0.0, 0.0
    per: dict[str, float] = {}
    for c in train.columns:
        t, s = train[c].to_numpy(), syn[c].to_numpy(dtype=np.float64)
        if pd.api.types.is_integer_dtype(train[c].dtype):
            whole &= bool(np.all(s == np.round(s)))
            if set(np.unique(t).tolist()) <= {0, 1}:
                binary &= bool(np.all((s == 0) | (s == 1)))
        lo, hi = float(np.min(t)), float(np.max(t))
        per[str(c)] = float(np.mean((s < lo) | (s > hi)))
        outside = max(outside, per[str(c)])
        t6, s6 = _rounded(t), _rounded(s)
        outside6 = max(outside6, float(np.mean((s6 < t6.min()) | (s6 > t6.max()))))
    return {"form": same, "whole": whole, "binary": binary, "outside": outside,
            "outside6": outside6, "outside cols": per}


def _rounded(a: np.ndarray) -> np.ndarray:
    """Values at float32 precision, the non-integers then rounded to 6 significant digits."""
    x = np.asarray(a, np.float32).astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = 10.0 ** (np.floor(np.log10(np.abs(x))) - 5.0)
        r = np.where(np.isfinite(scale) & (scale > 0), np.round(x / scale) * scale, x)
    return np.where(x == np.rint(x), x, r)


def _scores(real: np.ndarray, syn: np.ndarray) -> dict[str, float]:
    # at float32 precision, non-integers to 6 significant digits: pydataset's files carry
    # float32 values (7.90000009536743 for 7.9, and Yogurt's 7.9000004, two float32 steps off)
    # and a synthetic 7.9 on the column's released 0.1 grid would otherwise fall below the
    # real level, into the quantile bin beneath it
    real, syn = (_rounded(a) for a in (real, syn))
    return {"corr MAE": sp._corr_mae(real, syn),
            "1-way TV": float(np.mean([sp._tv_1way(real[:, j], syn[:, j])
                                       for j in range(real.shape[1])])),
            "2-way TV": sp._tv_2way(real, syn)}


def _split(df: Any, seed: int, max_rows: int) -> tuple[Any, np.ndarray]:
    """(training rows as a DataFrame — at most ``max_rows`` of a seeded 80 % —, the other
    20 % as floats)."""
    idx = np.random.default_rng(seed).permutation(len(df))
    cut = int(0.8 * len(df))
    return (df.iloc[idx[:cut][:max_rows]].reset_index(drop=True),
            df.iloc[idx[cut:]].to_numpy(dtype=np.float64))


def _run(name: str, df: object, eps: float, seed: int, max_rows: int,
         fit_offset: int = 0) -> dict:
    import pandas as pd

    assert isinstance(df, pd.DataFrame)
    train, test = _split(df, seed, max_rows)
    row: dict = {"table": name, "n": len(train), "d": df.shape[1], "eps": eps,
                 "int cols": int(sum(pd.api.types.is_integer_dtype(t) for t in df.dtypes))}
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            syn_model = pg.PrivateSynthesizer(epsilon=eps, delta=1e-6,
                                              random_state=seed + fit_offset)
            syn_model.fit(train)
            syn = syn_model.sample_table(len(train), random_state=seed + fit_offset + 1)
    except (pg.InvalidDataError, pg.PrivacyBudgetError, pg.EstimationFailed) as e:
        row.update(outcome=f"{type(e).__name__}: {str(e)[:160]}", s=time.perf_counter() - t0)
        return row
    row["s"] = time.perf_counter() - t0
    row["outcome"] = "ok"
    row["method"] = str(getattr(syn_model.copula_, "method_", ""))
    row["grid"] = syn_model.grid_ is not None
    row["warnings"] = sorted({type(w.message).__name__ for w in caught})
    row.update(_form(train, syn))
    S = syn.to_numpy(dtype=np.float64)
    real = _scores(test, S)
    floor = _scores(test, train.to_numpy(dtype=np.float64))
    for key, v in real.items():
        row[key] = v
        row[key + " floor"] = floor[key]
    return row


def _report(rows: list[dict], seen: set[str], args: argparse.Namespace) -> str:
    keys = ["corr MAE", "1-way TV", "2-way TV"]
    lines = ["# DP synthetic tables on every narrow pydataset table (issue 28)", "",
             f"Command: `python benchmarks/synth_corpus.py {' '.join(sys.argv[1:])}` "
             f"(δ = 1e-6, seeded noise {args.seed}, at most {args.max_rows} training rows; "
             "the script's docstring says what each column means). \"excess\": the metric "
             "minus the real training rows' (the sampling floor), both against the real "
             "held-out rows.", ""]
    for eps in args.budgets:
        sub = [r for r in rows if r["eps"] == eps]
        ok = [r for r in sub if r["outcome"] == "ok"]
        fresh = [r for r in ok if r["table"].lower() not in seen]
        lines += [f"## ε = {eps:g}", "",
                  f"* tables: {len(sub)} ({sum(r['table'].lower() not in seen for r in sub)} "
                  f"never used in tuning); fitted: {len(ok)}; refused: {len(sub) - len(ok)}",
                  f"* output form (names and dtypes) as the input's: "
                  f"{sum(r['form'] for r in ok)} of {len(ok)}; integer columns whole: "
                  f"{sum(r['whole'] for r in ok)}; 0/1 columns 0/1: "
                  f"{sum(r['binary'] for r in ok)}; largest share of a column's values "
                  f"outside the training range: median "
                  f"{np.median([r['outside'] for r in ok]) if ok else float('nan'):.4f}, max "
                  f"{max([r['outside'] for r in ok], default=float('nan')):.4f} (at the "
                  f"metrics' 6 digits: median "
                  f"{np.median([r['outside6'] for r in ok]) if ok else float('nan'):.4f}, max "
                  f"{max([r['outside6'] for r in ok], default=float('nan')):.4f})"]
        cols = [(r["table"], c, v) for r in ok for c, v in r["outside cols"].items()]
        if cols:
            share = np.array([v for *_, v in cols])
            worst = sorted(cols, key=lambda t: -t[2])[:8]
            lines.append(
                f"* columns with synthetic values outside the training range: "
                f"{int(np.sum(share > 0.01))} of {len(cols)} above 1 % (in "
                f"{len({t for t, _, v in cols if v > 0.01})} tables), "
                f"{int(np.sum(share > 0.05))} above 5 %; mean share over all columns "
                f"{share.mean():.4f}; largest: "
                + ", ".join(f"{t}.{c} {v:.3f}" for t, c, v in worst if v > 0.01))
        if ok:
            secs = [r["s"] for r in ok]
            lines.append(f"* seconds per table (fit and sample, one thread): median "
                         f"{np.median(secs):.2f}, max {max(secs):.2f}")
        for label, group in (("all fitted", ok), ("never used in tuning", fresh)):
            if not group:
                continue
            parts = []
            for key in keys:
                ex = np.array([r[key] - r[key + " floor"] for r in group])
                parts.append(f"{key} excess median {np.median(ex):.3f}, 90th percentile "
                             f"{np.quantile(ex, 0.9):.3f}, max {ex.max():.3f}")
            lines.append(f"* {label} ({len(group)}): " + "; ".join(parts))
        lines.append("")
        for r in sub:
            if r["outcome"] != "ok":
                lines.append(f"* refused: {r['table']} ({r['n']}×{r['d']}): {r['outcome']}")
        lines.append("")
    lines += ["## Per table", "",
              "| table | seen | n train × d | int cols | ε | outcome | method | grid | corr MAE "
              "(floor) | 1-way TV (floor) | 2-way TV (floor) | form | whole | 0/1 | outside | "
              "warnings | s |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        seen_mark = "yes" if r["table"].lower() in seen else ""
        if r["outcome"] != "ok":
            lines.append(f"| {r['table']} | {seen_mark} | {r['n']}×{r['d']} | {r['int cols']} "
                         f"| {r['eps']:g} | refused | | | | | | | | | | | {r['s']:.2f} |")
            continue
        cells = " | ".join(f"{r[k]:.3f} ({r[k + ' floor']:.3f})" for k in keys)
        lines.append(
            f"| {r['table']} | {seen_mark} | {r['n']}×{r['d']} | {r['int cols']} | "
            f"{r['eps']:g} | ok | {r['method']} | {'yes' if r['grid'] else ''} | {cells} | "
            f"{'yes' if r['form'] else 'NO'} | {'yes' if r['whole'] else 'NO'} | "
            f"{'yes' if r['binary'] else 'NO'} | {r['outside']:.4f} | "
            f"{', '.join(w.replace('Warning', '') for w in r['warnings']) or '—'} | "
            f"{r['s']:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budgets", type=float, nargs="+", default=[1.0, 1e4],
                    help="epsilons (delta 1e-6)")
    ap.add_argument("--min-rows", type=int, default=2000)
    ap.add_argument("--max-cols", type=int, default=10)
    ap.add_argument("--max-rows", type=int, default=10000, help="training rows at most")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fit-offset", type=int, default=0,
                    help="the fit's noise seed is --seed plus this (the split stays --seed's): "
                         "other noise draws on the same splits")
    ap.add_argument("--limit", type=int, default=0, help="first this many tables (0: all)")
    ap.add_argument("--tables", nargs="+", default=None,
                    help="only these tables (names, case-insensitive)")
    ap.add_argument("--json", type=Path, help="also write the per-table rows as JSON")
    ap.add_argument("--out", type=Path, help="markdown report (default: stdout)")
    ap.add_argument("--set", action="append", default=[], metavar="MODULE.NAME=VALUE",
                    help="override a constant of privgauss.synthesis for an experiment "
                         "(synth_gaps.py's --set: e.g. marginals.SUPPORT_END_BETA=0.01)")
    args = ap.parse_args()
    from synth_gaps import _override

    _override(args.set)
    tables = _tables(args.min_rows, args.max_cols)
    if args.tables:
        wanted = {t.lower() for t in args.tables}
        tables = [t for t in tables if t[0].lower() in wanted]
    if args.limit:
        tables = tables[:args.limit]
    seen = _seen_names()
    rows = []
    for i, (name, df) in enumerate(tables):
        for eps in args.budgets:
            r = _run(name, df, eps, args.seed, args.max_rows, args.fit_offset)
            rows.append(r)
            print(f"[{i + 1}/{len(tables)}] {name} {r['n']}x{r['d']} eps={eps:g}: "
                  f"{r['outcome'][:90]} {r['s']:.1f}s", file=sys.stderr, flush=True)
    if args.json:
        import json

        args.json.write_text(json.dumps(rows, indent=1, default=str))
    text = _report(rows, seen, args)
    if args.out:
        args.out.write_text(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
