"""Speed of the private covariance fit relative to bare Gram products.

Measures, in one run on the same array X (n × d, rows ~ N(0, Σ) with I ⪯ Σ ⪯ 10·I):

* ``3× X.T @ X`` (the reference: three bare Gram products),
* ``PrivateGaussian(rho=0.5, random_state=0).fit(X, public_X=pub)`` with d+1 public rows
  (public preconditioner → CoinPress mean and covariance),
* ``coinpress_covariance(X, 0.5, cov_upper=10)``,
* with ``--sequential``: the same fit with the split mode disabled,
* with ``--split-tolerance T`` (repeatable): the same fit with the split-mode planner's accuracy
  tolerance set to T instead of the default 1 % (shows the speed/accuracy trade-off),

and reports the time ratios (wall clock, and CPU time of the process — the fairer figure on
a shared, loaded machine; run with ``OPENBLAS_NUM_THREADS=1`` for single-core figures). Both sides
are warmed up first: one ``X.T @ X``, and one small fit on other rows (module imports).
together with the accuracy of each covariance, ‖Σ^{-1/2} Σ̂ Σ^{-1/2} − I‖_F, as a ratio to that
of ``np.cov`` on the same X.

    python benchmarks/covariance_speed.py              # n = 1e6, d = 100
    python benchmarks/covariance_speed.py --n 200000 --d 50
    OPENBLAS_NUM_THREADS=1 python benchmarks/covariance_speed.py
    OPENBLAS_NUM_THREADS=1 python benchmarks/covariance_speed.py --sequential --split-tolerance 0.05
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
import scipy

import privgauss as pg
from privgauss.gaussian.coinpress import coinpress_covariance
from privgauss.gaussian.coinpress import split_mode as cps

HERE = Path(__file__).resolve().parent


def _timed(fn):  # noqa: ANN001, ANN202
    """(wall seconds, CPU seconds of this process, result)."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - t0, time.process_time() - c0, out


def _err(S_inv_half: np.ndarray, C: np.ndarray) -> float:
    d = C.shape[0]
    return float(np.linalg.norm(S_inv_half @ C @ S_inv_half - np.eye(d)))


def _mode(est) -> str:  # noqa: ANN001
    """Which mode the fit ran in, from its (public) ledger."""
    ledger = est.ledger_
    if ledger and ledger[0].mechanism == "parallel composition":
        return "split, parallel mode"
    if any(e.step.endswith("final second moment") for e in ledger):
        return "split, subsample mode"
    return "sequential"


def _uptime() -> str:
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "n/a"


def machine_lines(load_before: str, load_after: str) -> list[str]:
    """The report's "Machine and libraries" block (also used by ``gaussian_speed.py``)."""
    lines = [
        "",
        "Machine and libraries:",
        "",
        f"- {platform.platform()}, {platform.machine()}, {os.cpu_count()} CPUs",
        f"- load average (1/5/15 min) before: {load_before}; after: {load_after}",
        f"- Python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
        f"privgauss {getattr(pg, '__version__', 'n/a')}",
    ]
    try:
        cfg = np.show_config(mode="dicts")  # type: ignore[call-arg]
        blas = cfg["Build Dependencies"]["blas"]
        lines.append(f"- BLAS: {blas.get('name')} {blas.get('version')}")
    except Exception:  # pragma: no cover - older numpy
        pass
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=float, default=1e6, help="private rows (default 1e6)")
    ap.add_argument("--d", type=int, default=100, help="dimension (default 100)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "covariance_speed.md")
    ap.add_argument("--no-write", action="store_true", help="print only")
    ap.add_argument("--repeats", type=int, default=3,
                    help="times the reference and the default fit are timed (medians reported)")
    ap.add_argument("--sequential", action="store_true",
                    help="also fit with the split mode disabled (the sequential plan)")
    ap.add_argument("--split-tolerance", type=float, action="append", default=[],
                    help="also fit with this split-mode accuracy tolerance (repeatable)")
    args = ap.parse_args(argv)
    n, d = int(args.n), int(args.d)

    rng = np.random.default_rng(args.seed)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    eig = np.geomspace(1.0, 10.0, d)
    root = (Q * np.sqrt(eig)) @ Q.T
    S_inv_half = (Q / np.sqrt(eig)) @ Q.T
    X = rng.standard_normal((n, d)) @ root
    pub = rng.standard_normal((d + 1, d)) @ root

    load_before = _uptime()
    X.T @ X  # warm-up (BLAS threads, page faults)
    # the library's warm-up: one small fit on other rows loads the modules the large fit uses
    # (imports are a once-per-process cost, not the fit's); it shares no plan with the large fit
    w = rng.standard_normal((1 << 17, 10))  # large enough for the split mode, d = 10: cheap
    pg.PrivateGaussian(rho=0.5, random_state=1).fit(w, public_X=w[:11])
    # the reference and the default fit, each timed `repeats` times alternately (noise seeds
    # 0, 1, ...): medians, since both vary by several % from run to run on a shared machine
    grams, fits = [], []
    for r in range(args.repeats):
        grams.append(_timed(lambda: [X.T @ X for _ in range(3)]))
        fits.append(_timed(
            lambda: pg.PrivateGaussian(rho=0.5, random_state=r).fit(X, public_X=pub)  # noqa: B023
        ))
    t_gram, c_gram = (float(np.median([g[i] for g in grams])) for i in (0, 1))
    t_fit, c_fit = (float(np.median([f[i] for f in fits])) for i in (0, 1))
    est = fits[0][2]
    acct = pg.Accountant(pg.ZCDP(0.5))
    t_cp, c_cp, C_cp = _timed(
        lambda: coinpress_covariance(X, 0.5, cov_upper=10.0, accountant=acct, noise=0)
    )
    extra = []
    if args.sequential:
        default_min = cps.SPLIT_MIN_VALUES
        cps.SPLIT_MIN_VALUES = 1 << 62
        try:
            extra.append(("off", *_timed(
                lambda: pg.PrivateGaussian(rho=0.5, random_state=0).fit(X, public_X=pub))))
        finally:
            cps.SPLIT_MIN_VALUES = default_min
    default_tol = cps._SPLIT_TOLERANCE
    for tol in args.split_tolerance:
        cps._SPLIT_TOLERANCE = tol
        try:
            extra.append((tol, *_timed(
                lambda: pg.PrivateGaussian(rho=0.5, random_state=0).fit(X, public_X=pub))))
        finally:
            cps._SPLIT_TOLERANCE = default_tol
    load_after = _uptime()

    e_np = _err(S_inv_half, np.cov(X, rowvar=False))
    e_fit = _err(S_inv_half, est.covariance_)
    e_cp = _err(S_inv_half, C_cp)
    nan = float("nan")
    rows = [
        ("3× X.T @ X", t_gram, 1.0, c_gram, 1.0, "", ""),
        ("PrivateGaussian.fit (d+1 public rows)", t_fit, t_fit / t_gram, c_fit, c_fit / c_gram,
         f"{e_fit:.4g}", f"{e_fit / e_np:.3f}"),
        ("coinpress_covariance (cov_upper=10)", t_cp, t_cp / t_gram, c_cp, c_cp / c_gram,
         f"{e_cp:.4g}", f"{e_cp / e_np:.3f}"),
        ("np.cov", nan, nan, nan, nan, f"{e_np:.4g}", "1.000"),
    ]
    for tol, t, c, g in extra:
        e = _err(S_inv_half, g.covariance_)
        label = "split disabled" if tol == "off" else f"split tolerance {tol:g}"
        rows.insert(-2, (f"PrivateGaussian.fit, {label} ({_mode(g)})", t,
                         t / t_gram, c, c / c_gram, f"{e:.4g}", f"{e / e_np:.3f}"))
    rows[1] = (f"{rows[1][0]} ({_mode(est)})", *rows[1][1:])
    cmd = "python " + " ".join(
        [os.path.relpath(__file__, Path.cwd()) if Path.cwd() in Path(__file__).parents
         else __file__] + (argv if argv is not None else sys.argv[1:])
    )
    lines = [
        "# Private covariance: speed relative to X.T @ X",
        "",
        f"Command: `{cmd}`",
        "",
        f"n = {n}, d = {d}, ρ = 0.5 (zCDP), Σ eigenvalues geometric in [1, 10], seed {args.seed}.",
        "Target: PrivateGaussian.fit ≤ 1.5 × (3 × X.T @ X).",
        "",
        f"Reference and default fit: medians of {args.repeats} alternating timings (noise seeds "
        f"0..{args.repeats - 1}; accuracy of seed 0): "
        + ", ".join(f"{f[1] / g[1]:.2f}" for g, f in zip(grams, fits, strict=True))
        + " (CPU ratios of the individual pairs). Other rows: one timing each.",
        "",
        f"BLAS threads: OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}.",
        "",
        "| computation | wall (s) | wall ratio to 3× XᵀX | CPU (s) | CPU ratio | "
        "‖Σ^-1/2 Σ̂ Σ^-1/2 − I‖_F | error / np.cov |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]

    def fmt(x: float, spec: str) -> str:
        return "" if x != x else format(x, spec)

    for name, t, r, c, cr, e, er in rows:
        lines.append(f"| {name} | {fmt(t, '.3f')} | {fmt(r, '.2f')} | {fmt(c, '.3f')} | "
                     f"{fmt(cr, '.2f')} | {e} | {er} |")
    def mean_err(mu: np.ndarray) -> str:  # the true mean is 0
        return f"{float(np.linalg.norm(S_inv_half @ mu)):.4g}"

    lines += ["", f"Mean error ‖Σ^-1/2(μ̂ − μ)‖: np.mean {mean_err(X.mean(axis=0))}; default "
              f"fit {mean_err(est.mean_)}"
              + "".join(f"; {'split disabled' if tol == 'off' else f'split tolerance {tol:g}'} "
                        f"{mean_err(g.mean_)}" for tol, _, _, g in extra)
              + "."]
    lines += machine_lines(load_before, load_after)
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
