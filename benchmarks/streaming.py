"""Streaming a covariance fit over data larger than memory (dask chunks from an on-disk .npy).

Writes n rows (default n = 2e7, d = 50 float64: 8 GB) ~ N(μ, Σ) block by block to a ``.npy``
file, then fits ``PrivateGaussian(rho=0.5).fit(path, public_X=d+1 rows)`` in a fresh
subprocess that reads the file chunk by chunk (:func:`privgauss.backends.open_array`), and
reports its wall time, throughput (rows/s) and peak resident memory (``ru_maxrss``), next to an
in-memory fit of ``--n-memory`` rows (default 1e6) in another subprocess: the throughput ratio
streaming / in-memory. The file is deleted afterwards.

    python benchmarks/streaming.py --quick           # n = 2e6 (1.6 GB on disk), smoke run
    nice -n 10 python benchmarks/streaming.py        # n = 2e7 (8 GB)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

_CHILD = r"""
import json, resource, sys, time
import numpy as np
import privgauss as pg
args = json.loads(sys.argv[1])
d = args["d"]
rng = np.random.default_rng(args["seed"])
M = np.asarray(args["M"]); mu = np.asarray(args["mu"])
pub = rng.standard_normal((d + 1, d)) @ M.T + mu
if args["path"]:
    X = args["path"]
else:
    X = np.random.default_rng(args["seed"] + 1).standard_normal((args["n"], d)) @ M.T + mu
t0 = time.perf_counter()
g = pg.PrivateGaussian(rho=0.5, random_state=0).fit(X, public_X=pub)
t = time.perf_counter() - t0
Si = np.linalg.inv(np.linalg.cholesky(M @ M.T))
err = float(np.linalg.norm(Si @ g.covariance_ @ Si.T - np.eye(d)))
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": t, "peak_rss": rss, "error": err, "steps": len(g.ledger_)}))
"""


def _write_npy(path: Path, n: int, d: int, M: np.ndarray, mu: np.ndarray, seed: int) -> float:
    """Rows written in blocks with plain file writes (nothing of the file stays mapped)."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed + 1)
    block = 1 << 18
    with open(path, "wb") as f:
        np.lib.format.write_array_header_2_0(
            f, {"descr": "<f8", "fortran_order": False, "shape": (n, d)}
        )
        for a in range(0, n, block):
            k = min(block, n - a)
            f.write((rng.standard_normal((k, d)) @ M.T + mu).tobytes())
    return time.perf_counter() - t0


def _child(n: int, d: int, M: np.ndarray, mu: np.ndarray, seed: int, path: str) -> dict:
    payload = json.dumps({"n": n, "d": d, "M": M.tolist(), "mu": mu.tolist(), "seed": seed,
                          "path": path})
    out = subprocess.run([sys.executable, "-c", _CHILD, payload], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=float, default=2e7, help="rows streamed from disk (2e7)")
    ap.add_argument("--d", type=int, default=50)
    ap.add_argument("--n-memory", type=float, default=1e6, help="rows of the in-memory fit")
    ap.add_argument("--quick", action="store_true", help="n = 2e6 (smoke run)")
    ap.add_argument("--dir", type=Path, default=None, help="where to write the file (/tmp)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    n = int(2e6 if args.quick else args.n)
    d, n_mem = int(args.d), int(args.n_memory)
    out = args.out or HERE / "results" / ("streaming_quick.md" if args.quick else "streaming.md")
    where = args.dir or Path(tempfile.gettempdir())
    need = n * d * 8
    free = shutil.disk_usage(where).free
    if free < 1.2 * need:
        print(f"not enough disk in {where}: need {need / 2**30:.1f} GiB, free "
              f"{free / 2**30:.1f} GiB (use --dir)", file=sys.stderr)
        return 2
    rng = np.random.default_rng(args.seed)
    M = rng.standard_normal((d, d)) / np.sqrt(d) + np.eye(d)
    mu = np.full(d, 100.0)
    path = where / f"privgauss_streaming_{os.getpid()}.npy"
    try:
        t_write = _write_npy(path, n, d, M, mu, args.seed)
        stream = _child(n, d, M, mu, args.seed, str(path))
    finally:
        path.unlink(missing_ok=True)
    mem = _child(n_mem, d, M, mu, args.seed, "")
    thr_s, thr_m = n / stream["seconds"], n_mem / mem["seconds"]
    cmd = "python benchmarks/streaming.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = "\n".join([
        "# Streaming covariance fit from disk (dask chunks)",
        "",
        f"Command: `{cmd.strip()}`",
        "",
        f"PrivateGaussian(rho=0.5, random_state=0).fit(path.npy, public_X={d + 1} rows), "
        f"d = {d}, rows ~ N(100·1, MMᵀ); file written in {t_write:.0f} s and deleted after.",
        "Peak RSS is ru_maxrss of the fitting subprocess (Python, numpy, dask included).",
        "",
        "| fit | rows | on disk | wall (s) | rows/s | peak RSS | steps | ‖Σ^-1/2 Σ̂ Σ^-1/2 − I‖_F |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        f"| streamed (.npy, dask) | {n:.3g} | {need / 2**30:.2f} GiB | {stream['seconds']:.1f} | "
        f"{thr_s:.3g} | {stream['peak_rss'] / 2**30:.2f} GiB | {stream['steps']} | "
        f"{stream['error']:.4g} |",
        f"| in memory (numpy) | {n_mem:.3g} | | {mem['seconds']:.1f} | {thr_m:.3g} | "
        f"{mem['peak_rss'] / 2**30:.2f} GiB | {mem['steps']} | {mem['error']:.4g} |",
        "",
        f"Throughput ratio streamed / in-memory: **{thr_s / thr_m:.2f}**. "
        f"Peak RSS target ≤ 2 GiB: {'met' if stream['peak_rss'] <= 2 * 2**30 else 'NOT met'}.",
        "",
        f"Machine: {platform.platform()}, {os.cpu_count()} CPUs, load average "
        f"{' '.join(open('/proc/loadavg').read().split()[:3])} (shared machine), "
        f"Python {platform.python_version()}, numpy {np.__version__}.",
        "",
    ])
    print(text)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
