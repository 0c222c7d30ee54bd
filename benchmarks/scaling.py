"""Scaling of fit time and peak memory in n and d, as ratios to bare passes on the same array.

Gaussian cells: ``PrivateGaussian(rho=0.5).fit(X, public_X=pub)`` (d + 1 public rows, the public
method) against three bare Gram products ``X.T @ X`` on the same X (n × d, rows ~ N(0, Σ) with
Σ eigenvalues geometric in [1, 10]); n ∈ {1e4, 1e5, 1e6} at d = 20 and d ∈ {5, 20, 50, 100} at
n = 1e5. Accuracy: ‖Σ^{-1/2} Σ̂ Σ^{-1/2} − I‖_F as a ratio to that of ``np.cov`` on the same X.

Mixture cells: ``PrivateGaussianMixture(method="public-heavy")`` (500 public rows) and
``method="sample-aggregate"`` against scikit-learn's ``GaussianMixture`` (full covariances,
k-means init, one initialisation) on the same draws (``datasets.make_mixture``: d = 10, k = 3,
smallest weight 0.2, separation ratio 6; ε = 1, δ = 1e-6), across n, with
``enforce_requirements=False`` so that every method runs at every n (sample-aggregate's own
requirement here is n ≳ 6e5; below it the fit ends in ``EstimationFailed``, timed all the same).
Accuracy: the largest component TV bound of ``metrics.mixture_error`` (1.0 when the fit fails).

Time: wall clock and CPU time of the process (the fairer figure on a shared machine); with
``repeats`` > 1 the best of the repeats. Memory, two figures: (1) **tracemalloc peak** — one extra
call of each computation under ``tracemalloc`` (numpy reports its buffers to it), the largest
memory allocated at once during the call beyond what was held before: the fit's working memory,
independent of the allocator; BLAS-internal and non-numpy C buffers are not seen. (2) **peak
extra RSS** — each cell runs in a fresh subprocess; before every measured call the kernel's
peak-RSS mark is reset (``/proc/self/clear_refs`` ← 5) and the figure is the peak RSS during the
call minus the RSS before it (``VmHWM − VmRSS``, ``/proc/self/status``). Where the reset is not
available the child falls back to ``resource.getrusage`` ``ru_maxrss`` deltas (the data are
generated in blocks so that generation does not set the high-water mark); ``memory_method`` says
which. A small warm-up fit runs first in each child (imports are not counted); memory it freed
that the allocator kept can be reused without raising the RSS, so small RSS figures are lower
bounds. The children run single-threaded BLAS (``OPENBLAS_NUM_THREADS=1`` etc. unless set by the
caller). Noise: the fast seeded sampler (an experiment, not a release).

Usage (repository root)::

    nice -n 10 python benchmarks/scaling.py            # 5 repeats per cell, mixtures up to n = 2e6
    nice -n 10 python benchmarks/scaling.py --quick    # 3 repeats, mixtures at n = 2e4, 1e5, 1e6

Writes ``benchmarks/results/scaling.{csv,md,png}``; ``benchmarks/suite.py`` calls :func:`run`.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import resource
import subprocess
import sys
import time
import tracemalloc
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
GAUSS_N = (10_000, 100_000, 1_000_000)  # at d = 20
GAUSS_D = (5, 20, 50, 100)  # at n = 1e5
MIX_N_QUICK = (20_000, 100_000, 1_000_000)
MIX_N_FULL = (20_000, 100_000, 300_000, 1_000_000, 2_000_000)
MIX_D, MIX_K, MIX_W, MIX_SEP, MIX_PUBLIC = 10, 3, 0.2, 6.0, 500
EPS, DELTA, RHO = 1.0, 1e-6, 0.5
BLOCK = 1 << 16
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


# ----------------------------------------------------------------------------------------------
# memory: peak RSS of one call, measured inside the child process
# ----------------------------------------------------------------------------------------------


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(field)


def _reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) to the current RSS; False if unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _measured(fn: Callable[[], Any], repeats: int) -> tuple[float, float, float, float, str, Any]:
    """(best wall s, best CPU s, peak extra RSS MB, tracemalloc peak MB, RSS method, result)."""
    walls, cpus, peaks = [], [], []
    out: Any = None
    method = "clear_refs"
    for _ in range(repeats):
        if _reset_peak():
            before = _status_kb("VmRSS")
        else:  # ru_maxrss is in kB on Linux; only growth beyond the previous peak is seen
            method = "ru_maxrss delta"
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        peak = (_status_kb("VmHWM") if method == "clear_refs"
                else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        peaks.append(max(peak - before, 0) / 1024)
    tracemalloc.start()  # one more call, traced: numpy reports its buffers to tracemalloc
    fn()
    traced = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return min(walls), min(cpus), max(peaks), traced, method, out


# ----------------------------------------------------------------------------------------------
# the child: one cell (data generated in blocks, then the baseline and the methods)
# ----------------------------------------------------------------------------------------------


def _gaussian_data(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    eig = np.geomspace(1.0, 10.0, d)
    root = (Q * np.sqrt(eig)) @ Q.T
    X = np.empty((n, d))
    for i in range(0, n, BLOCK):
        m = min(BLOCK, n - i)
        X[i:i + m] = rng.standard_normal((m, d)) @ root
    pub = rng.standard_normal((d + 1, d)) @ root
    return X, pub, (Q / np.sqrt(eig)) @ Q.T


def _cov_err(S_inv_half: np.ndarray, C: np.ndarray) -> float:
    return float(np.linalg.norm(S_inv_half @ C @ S_inv_half - np.eye(C.shape[0])))


def _child_gaussian(n: int, d: int, seed: int, repeats: int) -> list[dict]:
    import privgauss as pg

    X, pub, S_inv_half = _gaussian_data(n, d, seed)
    small, small_pub, _ = _gaussian_data(20_000, d, seed + 1)  # warm-up: imports, BLAS threads
    try:
        pg.PrivateGaussian(rho=RHO, random_state=0).fit(small, public_X=small_pub)
    except pg.InvalidDataError:  # too few rows for this d: the imports are done all the same
        pass
    X.T @ X
    w0, c0, m0, t0, mem, _ = _measured(lambda: [X.T @ X for _ in range(3)], repeats)
    w1, c1, m1, t1, _, est = _measured(
        lambda: pg.PrivateGaussian(rho=RHO, random_state=seed).fit(X, public_X=pub), repeats)
    e_np = _cov_err(S_inv_half, np.cov(X, rowvar=False))
    base = dict(kind="gaussian", n=n, d=d, data_mb=X.nbytes / 2**20, memory_method=mem)
    return [
        dict(base, method="3x X.T@X", wall_s=w0, cpu_s=c0, peak_extra_mb=m0,
             traced_peak_mb=t0, status="ok"),
        dict(base, method="PrivateGaussian public", wall_s=w1, cpu_s=c1, peak_extra_mb=m1,
             traced_peak_mb=t1, status="ok", wall_ratio=w1 / w0, cpu_ratio=c1 / c0,
             error=_cov_err(S_inv_half, est.covariance_), error_ratio=_cov_err(
                 S_inv_half, est.covariance_) / e_np),
    ]


def _child_mixture(n: int, seed: int, repeats: int) -> list[dict]:
    from sklearn.mixture import GaussianMixture

    from privgauss import EstimationFailed, PrivateGaussianMixture
    from privgauss.datasets import make_mixture
    from privgauss.metrics import mixture_error

    mix = make_mixture(n + MIX_PUBLIC, MIX_K, MIX_D, min_weight=MIX_W, separation=MIX_SEP,
                       random_state=30_000 + seed)
    P, X = mix.X[:MIX_PUBLIC], np.ascontiguousarray(mix.X[MIX_PUBLIC:])

    def em() -> tuple:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = GaussianMixture(MIX_K, covariance_type="full", random_state=seed).fit(X)
        return g.weights_, g.means_, g.covariances_

    def ours(method: str) -> Callable[[], Any]:
        def fit() -> Any:
            est = PrivateGaussianMixture(
                MIX_K, epsilon=EPS, delta=DELTA, method=method, min_weight=MIX_W,
                separation=MIX_SEP, enforce_requirements=False, random_state=seed)
            try:
                est.fit(X, public_X=P if method == "public-heavy" else None)
            except (EstimationFailed, ValueError) as exc:
                return type(exc).__name__
            return est.weights_, est.means_, est.covariances_
        return fit

    def tv(res: Any) -> float:
        if isinstance(res, str):
            return 1.0
        try:
            return mixture_error(*res, mix.weights, mix.means, mix.covariances).max_component_tv
        except ValueError:  # an estimate without a density
            return 1.0

    em()  # warm-up (BLAS threads, sklearn imports)
    w0, c0, m0, t0, mem, res0 = _measured(em, repeats)
    base = dict(kind="mixture", n=n, d=MIX_D, data_mb=X.nbytes / 2**20, memory_method=mem)
    rows = [dict(base, method="sklearn GaussianMixture", wall_s=w0, cpu_s=c0,
                 peak_extra_mb=m0, traced_peak_mb=t0, status="ok", error=tv(res0))]
    for method in ("public-heavy", "sample-aggregate"):
        w, c, m, t, _, res = _measured(ours(method), repeats)
        rows.append(dict(base, method=f"PrivateGaussianMixture {method}", wall_s=w, cpu_s=c,
                         peak_extra_mb=m, traced_peak_mb=t,
                         status=res if isinstance(res, str) else "ok",
                         wall_ratio=w / w0, cpu_ratio=c / c0, error=tv(res),
                         error_ratio=tv(res) / max(rows[0]["error"], 1e-12)))
    return rows


def _child(spec: dict) -> list[dict]:
    if spec["kind"] == "gaussian":
        return _child_gaussian(spec["n"], spec["d"], spec["seed"], spec["repeats"])
    return _child_mixture(spec["n"], spec["seed"], spec["repeats"])


# ----------------------------------------------------------------------------------------------
# the parent: one subprocess per cell, CSV + Markdown + plot
# ----------------------------------------------------------------------------------------------


def cells(quick: bool) -> list[dict]:
    """The (kind, n, d) cells of a run, in order."""
    grid = sorted({(n, 20) for n in GAUSS_N} | {(100_000, d) for d in GAUSS_D})
    out = [dict(kind="gaussian", n=n, d=d) for n, d in grid]
    out += [dict(kind="mixture", n=n, d=MIX_D) for n in (MIX_N_QUICK if quick else MIX_N_FULL)]
    return out


def run(quick: bool, seed: int = 0, log: Callable[[str], None] = print) -> list[dict]:
    """Measure every cell in its own subprocess; returns one row per (cell, method)."""
    repeats = 3 if quick else 5
    env = dict(os.environ)
    for var in THREAD_VARS:  # single-threaded BLAS unless the caller says otherwise
        env.setdefault(var, "1")
    rows: list[dict] = []
    for cell in cells(quick):
        spec = dict(cell, seed=seed, repeats=repeats)
        proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)],
                              capture_output=True, text=True, check=False, env=env)
        if proc.returncode != 0:
            log(f"scaling cell {cell} failed:\n{proc.stderr[-2000:]}")
            rows.append(dict(cell, method="(cell)", status=f"child exit {proc.returncode}"))
            continue
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        for r in got:
            log(f"  {r['kind']:8s} n={r['n']:>9,} d={r['d']:>3} {r['method']:40s} "
                f"wall {r['wall_s']:7.3f}s cpu {r['cpu_s']:7.3f}s RSS+{r['peak_extra_mb']:7.1f} MB"
                f" traced {r['traced_peak_mb']:7.1f} MB {r['status']}")
        rows += got
    return rows


FIELDS = ("kind", "n", "d", "method", "status", "wall_s", "cpu_s", "wall_ratio", "cpu_ratio",
          "data_mb", "peak_extra_mb", "traced_peak_mb", "memory_method", "error", "error_ratio")


def write_csv(rows: list[dict], path: Path) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def _f(x: Any, spec: str) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def table(rows: list[dict]) -> list[str]:
    """Markdown table of the scaling rows (ratios are to the first row of each cell)."""
    lines = ["| kind | n | d | method | wall (s) | CPU (s) | wall ratio | CPU ratio | data (MB) "
             "| peak extra RSS (MB) | tracemalloc peak (MB) | traced peak / data | error "
             "| error ratio | status |",
             "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(
            f"| {r['kind']} | {r['n']:,} | {r['d']} | {r['method']} | {_f(r.get('wall_s'), '.3f')} "
            f"| {_f(r.get('cpu_s'), '.3f')} | {_f(r.get('wall_ratio'), '.2f')} "
            f"| {_f(r.get('cpu_ratio'), '.2f')} | {_f(r.get('data_mb'), '.1f')} "
            f"| {_f(r.get('peak_extra_mb'), '.1f')} | {_f(r.get('traced_peak_mb'), '.1f')} "
            f"| {_f(r.get('traced_peak_mb', math.nan) / r.get('data_mb', math.nan), '.2f')} "
            f"| {_f(r.get('error'), '.4g')} "
            f"| {_f(r.get('error_ratio'), '.3f')} | {r.get('status', '')} |")
    return lines


def plot(rows: list[dict], path: Path) -> None:
    """Three panels: CPU ratio vs n (d = 20) and vs d (n = 1e5), and mixture time vs n."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def sel(kind: str, method: str, **fixed: int) -> list[dict]:
        return [r for r in rows if r["kind"] == kind and r["method"] == method
                and "cpu_ratio" in r and all(r[k] == v for k, v in fixed.items())]

    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    g = "PrivateGaussian public"
    for ax, key, fixed, label in ((axes[0], "n", {"d": 20}, "n (d = 20)"),
                                  (axes[1], "d", {"n": 100_000}, "d (n = 1e5)")):
        rs = sorted(sel("gaussian", g, **fixed), key=lambda r: r[key])
        if not rs:
            ax.set_axis_off()
            continue
        x = [r[key] for r in rs]
        ax.plot(x, [r["cpu_ratio"] for r in rs], "o-", label="CPU time / 3× XᵀX")
        ax.plot(x, [r["wall_ratio"] for r in rs], "s--", label="wall time / 3× XᵀX")
        ax2 = ax.twinx()
        ax2.plot(x, [r["traced_peak_mb"] / r["data_mb"] for r in rs], "^:", color="tab:red",
                 label="tracemalloc peak / data size (right)")
        ax2.set_ylabel("tracemalloc peak / data size", color="tab:red")
        ax.set_xscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel("time ratio")
        ax.set_title("PrivateGaussian (public) fit")
        handles = ax.get_legend_handles_labels()
        extra = ax2.get_legend_handles_labels()
        ax.legend(handles[0] + extra[0], handles[1] + extra[1], fontsize=8, loc="upper center")
    ax = axes[2]
    for method in ("PrivateGaussianMixture public-heavy",
                   "PrivateGaussianMixture sample-aggregate"):
        rs = sorted(sel("mixture", method), key=lambda r: r["n"])
        ax.plot([r["n"] for r in rs], [r["cpu_ratio"] for r in rs], "o-",
                label=method.split()[-1] + " CPU / sklearn EM")
    ax.axhline(1.0, color="grey", lw=1, ls=":")
    ax.set_xscale("log")
    ax.set_xlabel(f"n (mixture, d = {MIX_D}, k = {MIX_K})")
    ax.set_ylabel("CPU time ratio")
    ax.set_title("PrivateGaussianMixture vs scikit-learn EM")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def requirement_note() -> str:
    from privgauss.mixture.requirements import sample_aggregate_requirements

    need = sample_aggregate_requirements(n=MIX_N_FULL[-1], d=MIX_D, k=MIX_K, epsilon=EPS,
                                         delta=DELTA, min_weight=MIX_W)
    return (f"Mixture fits run with `enforce_requirements=False`; sample-aggregate's own "
            f"requirement at this setting (`mixture.requirements`) is n ≳ {need.n_needed:.3g} "
            f"({need.dominant}), so below it the fit is expected to end in `EstimationFailed` "
            "(a DP output; its time is reported all the same).")


def markdown(rows: list[dict], command: str, seconds: float) -> str:
    mem = sorted({r.get("memory_method", "") for r in rows} - {""})
    return "\n".join([
        "# Scaling in n and d: time and peak memory as ratios to bare passes", "",
        f"Command: `{command}` (from the repository root; total {seconds:.0f} s).", "",
        "Gaussian rows: ratios to three bare `X.T @ X` on the same array; error ratio = "
        "‖Σ^{-1/2} Σ̂ Σ^{-1/2} − I‖_F / same for `np.cov`. Mixture rows: ratios to scikit-learn "
        "`GaussianMixture` (full, one k-means init) on the same draws; error = largest component "
        "TV bound (1.0 = failed), error ratio = ours / EM. tracemalloc peak = largest numpy/Python "
        "memory allocated at once during one extra traced call; peak extra RSS = peak RSS during "
        "the call minus RSS before it, in a fresh subprocess per cell (method: "
        f"{', '.join(mem)}; a lower bound when freed memory is reused). "
        "Times are best-of-repeats; CPU time is the fairer figure on this shared machine. BLAS "
        "threads in the children: " + ", ".join(
            f"{v}={os.environ.get(v, '1')}" for v in THREAD_VARS) + ".", "",
        *table(rows), "", requirement_note(), "", "Plot: `scaling.png`.", ""])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 repeats, mixtures at n = 2e4, 1e5, 1e6")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(_child(json.loads(args.child))))
        return 0
    t0 = time.perf_counter()
    rows = run(args.quick, args.seed)
    seconds = time.perf_counter() - t0
    args.out.mkdir(parents=True, exist_ok=True)
    cmd = "python benchmarks/scaling.py" + (" --quick" if args.quick else "") + (
        f" --seed {args.seed}" if args.seed else "")
    write_csv(rows, args.out / "scaling.csv")
    (args.out / "scaling.md").write_text(markdown(rows, cmd, seconds))
    plot(rows, args.out / "scaling.png")
    print(f"wrote {args.out}/scaling.{{csv,md,png}}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
