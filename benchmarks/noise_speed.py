"""Cost of secure noise (OpenDP samplers, ``random_state=None``) against fast seeded numpy noise.

Measures, in one run on this machine, the time per sample of ``NoiseSource`` for the Gaussian,
Laplace, integer Laplace and integer Gaussian samplers (one vectorised call of ``--n`` values,
and one scalar call at a time) and per call of ``noisy_argmax`` (``--k`` candidates), secure and
fast, and writes a Markdown table to ``benchmarks/results/noise_speed.md``.

Usage (from the repository root)::

    python benchmarks/noise_speed.py            # defaults: --n 20000 --calls 2000 --k 10
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path

import numpy as np

from privgauss.noise import NoiseSource

RESULTS = Path(__file__).resolve().parent / "results" / "noise_speed.md"


def _best_time(fn: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``fn`` over ``repeats`` runs (after one warm-up run)."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _samplers(src: NoiseSource, n: int) -> dict[str, tuple[Callable[[], object], int]]:
    """name -> (one vectorised call, number of samples it draws)."""
    x = np.zeros(n)
    c = np.zeros(n, dtype=np.int64)
    return {
        "gaussian": (lambda: src.gaussian(x, 1.0), n),
        "laplace": (lambda: src.laplace(x, 1.0), n),
        "integer_laplace": (lambda: src.integer_laplace(c, 3.0), n),
        "integer_gaussian": (lambda: src.integer_gaussian(c, 3.0), n),
    }


def _scalar_calls(src: NoiseSource, calls: int, k: int) -> dict[str, Callable[[], object]]:
    """name -> ``calls`` scalar calls in a loop."""
    scores = np.linspace(0.0, 1.0, k)

    def loop(fn: Callable[[], object]) -> Callable[[], object]:
        def run() -> None:
            for _ in range(calls):
                fn()

        return run

    return {
        "gaussian": loop(lambda: src.gaussian(0.0, 1.0)),
        "laplace": loop(lambda: src.laplace(0.0, 1.0)),
        "integer_laplace": loop(lambda: src.integer_laplace(0, 3.0)),
        "integer_gaussian": loop(lambda: src.integer_gaussian(0, 3.0)),
        f"noisy_argmax (k={k})": loop(lambda: src.noisy_argmax(scores, 1.0)),
    }


def measure(n: int, calls: int, k: int, repeats: int) -> list[dict[str, object]]:
    secure, fast = NoiseSource(None), NoiseSource(0)
    rows: list[dict[str, object]] = []
    vec_s, vec_f = _samplers(secure, n), _samplers(fast, n)
    sca_s, sca_f = _scalar_calls(secure, calls, k), _scalar_calls(fast, calls, k)
    for name in sca_s:
        row: dict[str, object] = {"sampler": name}
        if name in vec_s:
            fn_s, m = vec_s[name]
            fn_f, _ = vec_f[name]
            row["secure_vec_us"] = 1e6 * _best_time(fn_s, repeats) / m
            row["fast_vec_us"] = 1e6 * _best_time(fn_f, repeats) / m
        row["secure_call_us"] = 1e6 * _best_time(sca_s[name], repeats) / calls
        row["fast_call_us"] = 1e6 * _best_time(sca_f[name], repeats) / calls
        rows.append(row)
    return rows


def _fmt(v: object, digits: int = 3) -> str:
    if v is None:
        return "–"
    x = float(v)  # type: ignore[arg-type]
    return f"{x:.{digits}g}" if x < 100 else f"{x:.0f}"


def to_markdown(rows: list[dict[str, object]], args: argparse.Namespace, elapsed: float) -> str:
    versions = ", ".join(
        f"{p} {version(p)}" for p in ("privgauss", "opendp", "numpy") if _has_version(p)
    )
    lines = [
        "# Secure vs fast noise: cost per sample",
        "",
        f"Command: `python benchmarks/noise_speed.py --n {args.n} --calls {args.calls} "
        f"--k {args.k} --repeats {args.repeats}` (run from the repository root).",
        "",
        f"Measured {dt.date.today().isoformat()} on {platform.platform()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}; {versions}. "
        f"Total run time {elapsed:.1f} s. Times are medians of {args.repeats} runs. "
        f"1-minute load average at the start: {args.load:.2f} (other processes inflate the "
        "secure timings, which are CPU-bound).",
        "",
        "*Secure* = `NoiseSource(None)` (OpenDP's exact samplers, OS entropy); *fast* = "
        "`NoiseSource(seed)` (numpy). *Vectorised*: one call on an array of "
        f"{args.n} values, time per value. *Per call*: {args.calls} scalar calls in a loop, "
        "time per call (this includes building the OpenDP measurement each time).",
        "",
        "| sampler | secure, vectorised (µs/sample) | fast, vectorised (µs/sample) | ratio "
        "| secure, per call (µs) | fast, per call (µs) | ratio |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        sv, fv = r.get("secure_vec_us"), r.get("fast_vec_us")
        sc, fc = r["secure_call_us"], r["fast_call_us"]
        ratio_v = None if sv is None else float(sv) / float(fv)  # type: ignore[arg-type]
        ratio_c = float(sc) / float(fc)  # type: ignore[arg-type]
        lines.append(
            f"| {r['sampler']} | {_fmt(sv)} | {_fmt(fv)} | {_fmt(ratio_v)} "
            f"| {_fmt(sc)} | {_fmt(fc)} | {_fmt(ratio_c)} |"
        )
    lines.append("")
    return "\n".join(lines)


def _has_version(pkg: str) -> bool:
    try:
        version(pkg)
    except Exception:  # noqa: BLE001 - any metadata problem: just leave the package out
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000, help="values per vectorised call")
    parser.add_argument("--calls", type=int, default=2_000, help="scalar calls per timing")
    parser.add_argument("--k", type=int, default=10, help="candidates for noisy_argmax")
    parser.add_argument("--repeats", type=int, default=3, help="timings per measurement")
    parser.add_argument("--out", type=Path, default=RESULTS, help="Markdown output file")
    args = parser.parse_args(argv)
    args.load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    t0 = time.perf_counter()
    rows = measure(args.n, args.calls, args.k, args.repeats)
    md = to_markdown(rows, args, time.perf_counter() - t0)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(md, encoding="utf-8")
    sys.stdout.write(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
