"""The benchmark suite in one command: accuracy, speed ratios, memory and scaling (issue 8 item 4).

Parts, all on this machine in one run:

* **accuracy** — ``gaussian_accuracy.py`` (W1 CoinPress mean, W3 one public sample, covariance
  with d + 1 public rows) and ``privgauss.experiments.run_w4`` (W4 CoinPress covariance): ours
  against the non-private estimator on the same draws and against the published CoinPress numbers
  (``experiments.REFERENCES``; anchors.md §2.1, §6).
* **BHS23** — the BHS23 demo setting (anchors.md W7: N(0, I_10), ε = 1, δ = 1e-6) with the default
  ``PrivateGaussian`` (``ppe.fit_gaussian``, method "auto") at n = 1e5 (the demo's n) and n = 1e4
  (a tenth of BHS23's published minimum n ≈ 98,000): how often it returns, its L2 mean error and
  ‖Σ̂ − I‖₂ against the non-private ones. BHS23 publishes no accuracy at these n, only the
  minimum n, so the comparison to it is the sample-size ratio.
* **scaling** — ``scaling.py``: fit time (wall and CPU) and peak memory in n and d, as ratios to
  three bare ``X.T @ X`` passes (``PrivateGaussian`` public method) and to scikit-learn EM
  (``PrivateGaussianMixture`` public-heavy and sample-aggregate), each cell in its own subprocess.
* full run only — ``covariance_speed.py`` (n = 1e6, d = 100), ``public_mixtures.py`` and
  ``noise_speed.py`` as subprocesses, their reports appended to ``suite.md``.

Usage (repository root)::

    nice -n 10 python benchmarks/suite.py --quick   # ≤ 10 min: 20 trials, 2 seeds, 3 repeats
    nice -n 10 python benchmarks/suite.py           # full: 100 trials, 5 seeds, 5 repeats, extras

Writes ``benchmarks/results/suite.{md,csv}`` (summary: one row per figure, with the reference it is
compared to), ``suite_accuracy.csv`` (every accuracy row), ``suite_coinpress_mean.png``,
``suite_coinpress_covariance.png`` and ``scaling.{md,csv,png}``. The component scripts write into a
temporary directory, so their own committed results are left untouched.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gaussian_accuracy  # noqa: E402
import ppe  # noqa: E402
import scaling  # noqa: E402

from privgauss import experiments  # noqa: E402

RESULTS = HERE / "results"
ROOT = HERE.parent
BHS23_MIN_N = 98_000  # anchors.md §2.11: n ≥ 20·k·λ0 at d = 10, ε = 1, δ = 1e-6, λ0 = 50
ONE_PUBLIC_PUBLISHED = 0.275  # anchors.md §6 W3: 1-public curve at k = 1000, n = 1000 (off plot)
FIELDS = ("area", "benchmark", "setting", "metric", "ours", "reference", "reference_kind",
          "ratio")


def _row(area: str, bench: str, setting: str, metric: str, ours: float, ref: float,
         kind: str) -> dict:
    return dict(area=area, benchmark=bench, setting=setting, metric=metric, ours=ours,
                reference=ref, reference_kind=kind,
                ratio=ours / ref if ref and not math.isnan(ref) else math.nan)


def _value(rows: list[dict], exp: str, n: int, method: str, k: object = None) -> float:
    for r in rows:
        if r["experiment"] == exp and int(r["n"]) == n and r["method"] == method and (
                k is None or str(r["k"]) == str(k)):
            return float(r["trimmed_mean"])
    return math.nan


# ----------------------------------------------------------------------------------------------
# parts
# ----------------------------------------------------------------------------------------------


def accuracy(quick: bool, seed: int, tmp: Path) -> tuple[list[dict], list[dict]]:
    """(all accuracy rows, summary rows): the gaussian_accuracy script plus W4."""
    gaussian_accuracy.main(["--out", str(tmp), "--seed", str(seed)] + (["--quick"] if quick
                                                                        else []))
    with open(tmp / "gaussian_accuracy.csv") as fh:
        rows: list[dict] = [
            dict(r, n=int(r["n"]), trials=int(r["trials"]), trimmed_mean=float(r["trimmed_mean"]),
                 trimmed_std=float(r["trimmed_std"]), seconds=float(r["seconds"]))
            for r in csv.DictReader(fh)]
    rows += experiments.run_w4(20 if quick else 100, quick, seed)
    out: list[dict] = []
    ns = sorted({int(r["n"]) for r in rows if r["experiment"] == "w1"})
    worst = max(ns, key=lambda n: _value(rows, "w1", n, "ours") / _value(rows, "w1", n,
                                                                         "non-private"))
    out.append(_row("accuracy", "W1 CoinPress mean", f"d=50, rho=0.5, R=10sqrt(d), n={worst}"
                    " (worst n)", "L2 mean error", _value(rows, "w1", worst, "ours"),
                    _value(rows, "w1", worst, "non-private"), "non-private, same draws"))
    for n, pub in experiments.PUBLISHED_W1.items():
        if n in ns:
            out.append(_row("accuracy", "W1 CoinPress mean", f"d=50, rho=0.5, n={n}",
                            "L2 mean error", _value(rows, "w1", n, "ours"), pub,
                            "published CoinPress t=2"))
    ns4 = sorted({int(r["n"]) for r in rows if r["experiment"] == "w4"})
    for n in ns4:
        ours = _value(rows, "w4", n, "ours")
        if n in experiments.PUBLISHED_W4:
            out.append(_row("accuracy", "W4 CoinPress covariance", f"d=10, rho=0.5, n={n}",
                            "whitened Frobenius cov error", ours, experiments.PUBLISHED_W4[n],
                            "published CoinPress t=3"))
        out.append(_row("accuracy", "W4 CoinPress covariance", f"d=10, rho=0.5, n={n}",
                        "whitened Frobenius cov error", ours,
                        _value(rows, "w4", n, "non-private (X'X/n)"), "non-private, same draws"))
    for n in (1000, 10000):
        ours = _value(rows, "w3", n, "ours (1 public)", 1000)
        out.append(_row("accuracy", "W3 one public sample", f"d=50, k=1000, n={n}",
                        "L2 mean error", ours, _value(rows, "w3", n, "non-private", 1000),
                        "non-private, same draws"))
    out.append(_row("accuracy", "W3 one public sample", "d=50, k=1000, n=1000", "L2 mean error",
                    _value(rows, "w3", 1000, "ours (1 public)", 1000), ONE_PUBLIC_PUBLISHED,
                    "published 1-public (read off plot)"))
    ncov = max(int(r["n"]) for r in rows if r["experiment"] == "cov")
    out.append(_row("accuracy", "covariance, d+1 public", f"d=10, rho=0.5, n={ncov}",
                    "whitened Frobenius cov error", _value(rows, "cov", ncov, "ours"),
                    _value(rows, "cov", ncov, "np.cov"), "non-private, same draws"))
    return rows, out


def bhs23(quick: bool) -> list[dict]:
    """The BHS23 demo setting (d = 10, ε = 1, δ = 1e-6, N(0, I)) with the default estimator."""
    d, seeds = 10, range(2 if quick else 5)
    out = []
    for n in (10_000, 100_000):
        errs, npv, ok = [], [], 0
        for seed in seeds:
            X = np.random.default_rng([seed, 7, n]).standard_normal((n, d))
            npv.append((np.linalg.norm(X.mean(axis=0)),
                        np.linalg.norm(np.cov(X, rowvar=False) - np.eye(d), 2)))
            est, _, status = ppe.fit_gaussian("auto", X, seed)
            if est is not None:
                ok += 1
                errs.append((np.linalg.norm(est[0]), np.linalg.norm(est[1] - np.eye(d), 2)))
        med = np.median(errs, axis=0) if errs else (math.nan, math.nan)
        ref = np.median(npv, axis=0)
        setting = f"d=10, eps=1, delta=1e-6, n={n}, returned {ok}/{len(seeds)}"
        out.append(_row("accuracy", "W7 BHS23 demo setting", setting, "L2 mean error (median)",
                        float(med[0]), float(ref[0]), "non-private, same draws"))
        out.append(_row("accuracy", "W7 BHS23 demo setting", setting,
                        "spectral cov error (median)", float(med[1]), float(ref[1]),
                        "non-private, same draws"))
        if ok == len(seeds):
            out.append(_row("accuracy", "W7 BHS23 demo setting", setting,
                            "n at which an estimate is returned", float(n), float(BHS23_MIN_N),
                            "published BHS23 minimum n"))
    return out


def scaling_summary(rows: list[dict]) -> list[dict]:
    """Summary rows from the scaling rows: time and memory ratios."""
    out = []
    for r in rows:
        if "cpu_ratio" not in r:
            continue
        bare = "3x X.T@X" if r["kind"] == "gaussian" else "sklearn GaussianMixture"
        setting = f"n={r['n']}, d={r['d']}" + ("" if r["status"] == "ok"
                                                  else f" ({r['status']})")
        for metric, key in (("CPU time", "cpu_s"), ("wall time", "wall_s")):
            ref = next(b[key] for b in rows if b["kind"] == r["kind"] and b["n"] == r["n"]
                       and b["d"] == r["d"] and b["method"] == bare)
            out.append(_row("speed", r["method"], setting, metric + " (s)", r[key], ref, bare))
        for metric, key in (("tracemalloc peak (MB)", "traced_peak_mb"),
                            ("peak extra RSS (MB)", "peak_extra_mb")):
            out.append(_row("memory", r["method"], setting, metric, r[key], r["data_mb"],
                            "data size (MB)"))
        out.append(_row("accuracy", r["method"], setting,
                        "whitened Frobenius cov error" if r["kind"] == "gaussian"
                        else "largest component TV bound", r["error"],
                        r["error"] / r["error_ratio"] if r["error_ratio"] else math.nan,
                        "np.cov, same array" if r["kind"] == "gaussian"
                        else "sklearn EM, same draws"))
    return out


#: Full run only: (script, arguments) run as subprocesses, writing ``<name>.md`` into ``--out``.
EXTRAS = (
    ("covariance_speed", ["--n", "1e6", "--d", "100"]),
    ("public_mixtures", ["--ns", "20000,50000,100000", "--runs", "2", "--methods",
                         "public-heavy,public-light,sample-aggregate,em", "--name",
                         "public_mixtures"]),
    ("noise_speed", []),
)


def extras(tmp: Path, runs: tuple = EXTRAS) -> list[str]:
    """The other speed/accuracy scripts as subprocesses; their Markdown, as appendices."""
    text = []
    for name, shown_args in runs:
        out = str(tmp) if name == "public_mixtures" else str(tmp / f"{name}.md")
        args = [*shown_args, "--out", out]
        cmd = [sys.executable, str(HERE / f"{name}.py"), *args]
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
        md = tmp / f"{name}.md"
        body = md.read_text() if md.exists() else f"(failed, exit {proc.returncode})\n" + \
            proc.stderr[-1500:]
        shown = " ".join([f"python benchmarks/{name}.py", *shown_args])
        text += [f"## Appendix: `{shown}`", "",
                 re.sub(r"^(#+) ", r"##\1 ", body, flags=re.MULTILINE), ""]
    return text


# ----------------------------------------------------------------------------------------------
# report
# ----------------------------------------------------------------------------------------------


def _version(pkg: str) -> str:
    try:
        return version(pkg)
    except PackageNotFoundError:
        return "not installed"


def environment() -> list[str]:
    """Commit, machine, library and BLAS versions, thread settings."""
    def git(*args: str) -> str:
        try:
            return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                                  check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return "n/a"

    dirty = git("status", "--porcelain", "--untracked-files=no")
    blas = "n/a"
    try:
        from threadpoolctl import threadpool_info

        blas = "; ".join(f"{i.get('internal_api')} {i.get('version')} "
                         f"({i.get('threading_layer', '')}, {i.get('num_threads')} threads)"
                         for i in threadpool_info())
    except ImportError:
        pass
    vers = ", ".join(f"{p} {_version(p)}" for p in
                     ("privgauss", "numpy", "scipy", "scikit-learn", "matplotlib", "opendp"))
    try:
        with open("/proc/loadavg") as fh:
            load = " ".join(fh.read().split()[:3])
    except OSError:
        load = "n/a"
    return [
        f"- git commit `{git('rev-parse', 'HEAD')}`"
        + (" with uncommitted changes to tracked files" if dirty not in ("", "n/a") else ""),
        f"- date {dt.datetime.now().isoformat(timespec='seconds')}; {platform.platform()}, "
        f"{os.cpu_count()} CPUs; load average at the end {load}",
        f"- Python {platform.python_version()}; {vers}",
        f"- BLAS (threadpoolctl, this process): {blas}",
        "- threads: " + ", ".join(f"{v}={os.environ.get(v, 'unset')}"
                                  for v in scaling.THREAD_VARS)
        + " in this process; the scaling children run with 1 unless set",
    ]


def _fmt(x: object) -> str:
    if isinstance(x, float):
        return "" if math.isnan(x) else f"{x:.4g}"
    return str(x)


def report(command: str, seconds: float, summary: list[dict], scaling_rows: list[dict],
           extra: list[str]) -> str:
    lines = ["# Benchmark suite", "", f"Command: `{command}` (from the repository root; total "
             f"{seconds:.0f} s).", "", *environment(), "",
             "Ratio = ours / reference (< 1 is better for errors and times). Accuracy: "
             "10%-trimmed means over the trials for W1/W3/W4/covariance, medians over seeds "
             "for W7; fast seeded noise (experiments, not releases). Speed: CPU and wall time "
             "against bare passes on the same array in the same process. Memory, against the "
             "size of the data array: the tracemalloc peak of one extra traced call (numpy "
             "buffers; BLAS internals not seen) and the peak RSS during the fit minus the RSS "
             "before it, in a fresh subprocess per cell (kernel peak-RSS mark reset through "
             "/proc/self/clear_refs; a lower bound when freed memory is reused; see scaling.md).",
             "",
             "## Summary", "",
             "| area | benchmark | setting | metric | ours | reference | reference is | ratio |",
             "|---|---|---|---|---:|---:|---|---:|"]
    for r in summary:
        lines.append("| " + " | ".join(_fmt(r[f]) for f in FIELDS) + " |")
    lines += ["", "## Scaling (all cells)", "", *scaling.table(scaling_rows), "",
              scaling.requirement_note(), "",
              "Plots: `scaling.png` (time and memory ratios against n and d; mixtures against "
              "EM), `suite_coinpress_mean.png` and `suite_coinpress_covariance.png` (error "
              "against n with the published CoinPress points). All accuracy rows: "
              "`suite_accuracy.csv`.", "", *extra]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="≤ 10 min: 20 trials, 3 repeats")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    command = "python benchmarks/suite.py" + (" --quick" if args.quick else "") + (
        f" --seed {args.seed}" if args.seed else "")
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()

    def log(msg: str) -> None:
        print(f"[{time.perf_counter() - t0:6.0f} s] {msg}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="privgauss-suite-") as name:
        tmp = Path(name)
        log("accuracy (W1, W3, covariance, W4)")
        acc_rows, summary = accuracy(args.quick, args.seed, tmp)
        log("BHS23 demo setting (W7)")
        summary += bhs23(args.quick)
        log("scaling (one subprocess per cell)")
        t_s = time.perf_counter()
        sc_rows = scaling.run(args.quick, args.seed, log=log)
        scaling_seconds = time.perf_counter() - t_s
        summary += scaling_summary(sc_rows)
        extra: list[str] = []
        if not args.quick:
            log("full run: covariance_speed, public_mixtures, noise_speed")
            extra = extras(tmp)
    seconds = time.perf_counter() - t0

    with open(args.out / "suite_accuracy.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(acc_rows[0]), extrasaction="ignore")
        w.writeheader()
        w.writerows(acc_rows)
    with open(args.out / "suite.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(summary)
    for exp, title in (("w1", "coinpress-mean"), ("w4", "coinpress-covariance")):
        experiments.plot([r for r in acc_rows if r["experiment"] == exp],
                         args.out / f"suite_{title.replace('-', '_')}.png", title=title)
    scaling.write_csv(sc_rows, args.out / "scaling.csv")
    (args.out / "scaling.md").write_text(scaling.markdown(
        sc_rows, f"{command} (scaling part)", scaling_seconds))
    scaling.plot(sc_rows, args.out / "scaling.png")
    (args.out / "suite.md").write_text(report(command, seconds, summary, sc_rows, extra))
    log(f"wrote {args.out}/suite.{{md,csv}}, suite_*.png, scaling.{{md,csv,png}}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
