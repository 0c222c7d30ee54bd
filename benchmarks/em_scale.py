"""Private EM at scale: wall time against scikit-learn's EM, and a fit streamed from disk.

Data: a k = 3, d = 10 Gaussian mixture (weights .2/.3/.5, means 2 standard deviations apart,
unequal axis scales, rotated and shifted to 100·1), written block by block.

1. *Speed against scikit-learn* at n in ``--sizes`` (default 1e5, 1e6), rows in memory: each
   fit in its own subprocess on the same training rows, ``PrivateGaussianMixture(3,
   method="em")`` at ε = 1, δ = 1e-6 and at ρ = 0.5 (with 1 % of the rows as public rows,
   which a ρ budget needs) against ``sklearn.mixture.GaussianMixture(3, random_state=0)``
   (defaults: k-means start, tol 1e-3, up to 100 EM steps). Reports wall times, the ratio
   ours / sklearn measured in this run, and the held-out mean log-likelihood gap (sklearn
   minus ours, nat/row, on 1e5 held-out rows).
2. *From disk*: n = ``--big`` rows (default 2e7: 1.6 GB) written to a ``.npy`` file, fitted from
   the path in a subprocess (the rows stream in chunks: ``privgauss.backends.open_array``),
   peak resident memory = ``ru_maxrss`` of that subprocess; the same file through the command
   line, ``privgauss fit-mixture big.npy ...``, peak RSS from ``os.wait4``. The file is deleted
   afterwards. ``--big-regimes`` picks the budgets run on the big file.

Writes ``benchmarks/results/em_scale.md``.

    python benchmarks/em_scale.py --sizes 1e5 --big 1e6       # quick look (a few minutes)
    python benchmarks/em_scale.py                              # the committed results
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
K, D, SEED = 3, 10, 0
WEIGHTS = np.array([0.2, 0.3, 0.5])
REGIMES = {"eps1": {"epsilon": 1.0, "delta": 1e-6}, "rho0.5": {"rho": 0.5}}

_CHILD = r"""
import json, resource, sys, time, warnings
import numpy as np
warnings.simplefilter("ignore")
a = json.loads(sys.argv[1])
X = a["path"] if a["stream"] else np.load(a["path"])
P = np.load(a["public"]) if a["public"] else None
t0, c0 = time.perf_counter(), time.process_time()
if a["who"] == "sklearn":
    from sklearn.mixture import GaussianMixture
    m = GaussianMixture(3, random_state=0).fit(X)
    extra = {"n_iter": int(m.n_iter_)}
else:
    import privgauss as pg
    m = pg.PrivateGaussianMixture(3, method="em", random_state=0, **a["budget"],
                                  method_params=a.get("params"))
    m.fit(X, public_X=P)
    extra = {"releases": len(m.ledger_)}
t, cpu = time.perf_counter() - t0, time.process_time() - c0
H = np.load(a["heldout"])
out = {"seconds": t, "cpu": cpu, "score": float(m.score(H)),
       "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, **extra}
print(json.dumps(out))
"""


def _model(seed: int = SEED) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(means, per-component scales, rotation): unit-variance components (before the common
    axis scaling) whose means are 2 apart in that frame."""
    rng = np.random.default_rng(seed)
    means = np.sqrt(2.0) * np.eye(K, D)  # pairwise distance 2
    scales = np.exp(rng.uniform(-0.5, 0.5, size=(K, D)))
    scales /= np.sqrt((scales**2).mean(axis=1, keepdims=True))
    rot = np.linalg.qr(rng.standard_normal((D, D)))[0] * np.exp(rng.uniform(-1, 1, D))
    return means, scales, rot


def _rows(n: int, rng: np.random.Generator) -> np.ndarray:
    means, scales, rot = _model()
    lab = rng.choice(K, size=n, p=WEIGHTS)
    Z = rng.standard_normal((n, D)) * scales[lab] + means[lab]
    return Z @ rot.T + 100.0


def _write_npy(path: Path, n: int, seed: int) -> float:
    """Rows written in blocks with plain file writes (the file never sits in our memory)."""
    t0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    block = 1 << 18
    with open(path, "wb") as f:
        np.lib.format.write_array_header_2_0(
            f, {"descr": "<f8", "fortran_order": False, "shape": (n, D)})
        for a in range(0, n, block):
            f.write(np.ascontiguousarray(_rows(min(block, n - a), rng)).tobytes())
    return time.perf_counter() - t0


def _child(args: dict) -> dict:
    env = dict(os.environ)
    src = str(HERE.parent / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(args)], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip().splitlines()[-1])
    return json.loads(out.stdout.strip().splitlines()[-1])


def _cli(path: Path, out: Path, budget: dict) -> dict:
    """``privgauss fit-mixture`` on the file; wall time and peak RSS (os.wait4)."""
    exe = str(Path(sys.executable).parent / "privgauss")  # the console script
    cmd = [exe, "fit-mixture", str(path), "-k", str(K), "--method", "em", "--seed", "0",
           "--out", str(out)]
    for key, value in budget.items():
        cmd += [f"--{key}", str(value)]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(HERE.parent / "src") + os.pathsep + env.get("PYTHONPATH", "")
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    t = time.perf_counter() - t0
    err = proc.stderr.read().decode() if proc.stderr else ""
    if status != 0:
        raise RuntimeError(f"CLI failed: {err}")
    return {"seconds": t, "cpu": usage.ru_utime + usage.ru_stime,
            "peak_rss": usage.ru_maxrss * 1024,
            "command": " ".join(["privgauss", *cmd[1:]])}


def _gib(b: float) -> str:
    return f"{b / 2**30:.2f} GiB"


def _write(path: str, lines: list[str]) -> None:
    """The results so far (rewritten after every fit: a long run leaves what it measured)."""
    Path(path).write_text("\n".join(lines) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1e5,1e6", help="n for the sklearn comparison")
    ap.add_argument("--big", type=float, default=2e7, help="rows of the on-disk fit (0: skip)")
    ap.add_argument("--big-regimes", default="eps1", help="budgets on the big file: eps1,rho0.5")
    ap.add_argument("--no-cli", action="store_true", help="skip the command-line run")
    ap.add_argument("--big-steps", type=int, default=None,
                    help="EM steps of the big fit (default: the planned number; fewer steps "
                    "give the same peak memory, which the localisation sets, in less time)")
    ap.add_argument("--tmp", default=None, help="folder for the data files")
    ap.add_argument("--out", default=str(HERE / "results" / "em_scale.md"))
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="em_scale_", dir=a.tmp))
    lines = ["# Private EM at scale", "",
             f"Command: `python benchmarks/{Path(__file__).name} {' '.join(sys.argv[1:])}`",
             "", f"Data: k = {K}, d = {D} mixture, weights .2/.3/.5, means 2 sd apart, "
             "rotated, shifted to 100·1. `PrivateGaussianMixture(3, method=\"em\", "
             "random_state=0)`; ρ = 0.5 with 1 % of the rows public. Every fit in a fresh "
             "subprocess; peak RSS = its ru_maxrss (Python, numpy, dask included); held-out "
             "score on 1e5 rows.", ""]
    try:
        heldout = tmp / "heldout.npy"
        np.save(heldout, _rows(100_000, np.random.default_rng(99)))
        lines += ["## Wall time against scikit-learn's EM (rows in memory)", "",
                  "| n | fit | wall (s) | ours / sklearn (wall) | CPU (s) | ours / sklearn "
                  "(CPU) | held-out gap (nat/row) | peak RSS | notes |",
                  "|---:|---|---:|---:|---:|---:|---:|---:|---|"]
        for n in [int(float(s)) for s in a.sizes.split(",") if s]:
            path, pub = tmp / f"train_{n}.npy", tmp / f"public_{n}.npy"
            _write_npy(path, n, SEED + n)
            np.save(pub, _rows(max(n // 100, D + 1), np.random.default_rng(7)))
            base = {"path": str(path), "heldout": str(heldout), "stream": False, "public": None}
            sk = _child({**base, "who": "sklearn"})
            lines.append(f"| {n:.0e} | sklearn GaussianMixture | {sk['seconds']:.1f} | 1 | "
                         f"{sk['cpu']:.1f} | 1 | 0 | {_gib(sk['peak_rss'])} | "
                         f"{sk['n_iter']} EM steps |")
            for name, budget in REGIMES.items():
                r = _child({**base, "who": "ours", "budget": budget,
                            "public": str(pub) if "rho" in budget else None})
                lines.append(
                    f"| {n:.0e} | em {name} | {r['seconds']:.1f} | "
                    f"**{r['seconds'] / sk['seconds']:.2f}** | {r['cpu']:.1f} | "
                    f"**{r['cpu'] / sk['cpu']:.2f}** | {sk['score'] - r['score']:.3f} | "
                    f"{_gib(r['peak_rss'])} | {r['releases']} releases |")
                print(lines[-1], flush=True)
                _write(a.out, lines)
            path.unlink()
        if a.big > 0:
            n = int(a.big)
            path = tmp / "big.npy"
            wrote = _write_npy(path, n, SEED + 1)
            size = path.stat().st_size
            lines += ["", f"## From disk: n = {n:.0e} × {D} ({_gib(size)} .npy, written in "
                      f"{wrote:.0f} s, deleted after)", "",
                      "| fit | wall (s) | CPU (s) | rows/s (wall) | peak RSS | ≤ 2 GiB | "
                      "held-out score |", "|---|---:|---:|---:|---:|---|---:|"]
            pub = tmp / "public_big.npy"
            np.save(pub, _rows(n // 100, np.random.default_rng(8)))
            for name in a.big_regimes.split(","):
                budget = REGIMES[name]
                r = _child({"path": str(path), "heldout": str(heldout), "stream": True,
                            "who": "ours", "budget": budget,
                            "params": None if a.big_steps is None else {"n_steps": a.big_steps},
                            "public": str(pub) if "rho" in budget else None})
                steps = "" if a.big_steps is None else f", {a.big_steps} EM steps"
                lines.append(f"| `fit(path)` em {name}{steps} | {r['seconds']:.0f} | "
                             f"{r['cpu']:.0f} | "
                             f"{n / r['seconds']:.3g} | {_gib(r['peak_rss'])} | "
                             f"{'yes' if r['peak_rss'] <= 2 * 2**30 else 'NO'} | "
                             f"{r['score']:.3f} |")
                print(lines[-1], flush=True)
                _write(a.out, lines)
            if not a.no_cli:
                c = _cli(path, tmp / "model.json", REGIMES["eps1"])
                lines.append(f"| CLI em eps1 | {c['seconds']:.0f} | {c['cpu']:.0f} | "
                             f"{n / c['seconds']:.3g} | "
                             f"{_gib(c['peak_rss'])} | "
                             f"{'yes' if c['peak_rss'] <= 2 * 2**30 else 'NO'} | |")
                lines += ["", f"CLI command: `{c['command']}`"]
                print(lines[-1], flush=True)
                _write(a.out, lines)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    lines += ["", f"Machine: {platform.platform()}, {os.cpu_count()} CPUs, load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end (shared machine), "
              f"Python {platform.python_version()}, numpy {np.__version__}."]
    _write(a.out, lines)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    from privgauss.progress import on_terminal

    with on_terminal():  # a status line naming the current release, on a terminal
        main()
