"""Deep tier of the hostile-input checks: >= 2,000 generated inputs per public entry point.

Runs the strategies and the oracle of ``tests/test_hostile_inputs.py`` (valid result or typed
error with a message; no numpy/scipy exception, no budget spent on invalid input, no modified
input) with many examples, counts the outcomes per entry point and writes them to
``benchmarks/results/hostile_deep.md``. A contract violation is counted (and the first few are
listed) instead of stopping the run.

    python benchmarks/hostile_deep.py                 # 2,000 examples per entry point
    python benchmarks/hostile_deep.py --examples 200  # a quicker look
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_hostile_inputs import (  # noqa: E402
    SENSITIVITIES,
    cli_case,
    cli_options_case,
    dimension,
    gaussian_fit_case,
    hostile_data,
    hostile_public,
    mechanism_case,
    mixture_fit_case,
    option_commands,
    post_fit_case,
)

import privgauss as pg  # noqa: E402
from privgauss.estimators.gaussian import METHODS as GAUSSIAN_METHODS  # noqa: E402
from privgauss.estimators.mixture import METHODS as MIXTURE_METHODS  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "hostile_deep.md"
CLI = {
    "fit-gaussian": ["--epsilon", "1", "--delta", "1e-6"],
    "fit-mixture": ["--epsilon", "1", "--delta", "1e-6", "--n-components", "2"],
}


def entry_points(tmp: Path) -> dict[str, Callable[[st.DataObject], str]]:
    """Entry point name -> a function drawing one case and returning its outcome."""
    out: dict[str, Callable[[st.DataObject], str]] = {}

    def gaussian(method: str) -> Callable[[st.DataObject], str]:
        def run(data: st.DataObject) -> str:
            X = data.draw(hostile_data())
            return gaussian_fit_case(method, X, data.draw(hostile_public(dimension(X))))

        return run

    def mixture(method: str) -> Callable[[st.DataObject], str]:
        def run(data: st.DataObject) -> str:
            X = data.draw(hostile_data())
            k = data.draw(st.sampled_from((1, 2, 3, 0, -1, 2.5, "2", None, 10**6)))
            return mixture_fit_case(method, X, data.draw(hostile_public(dimension(X))), k)

        return run

    def post(what: str) -> Callable[[st.DataObject], str]:
        return lambda data: post_fit_case(what, data.draw(hostile_data()))

    def mech(name: str) -> Callable[[st.DataObject], str]:
        def run(data: st.DataObject) -> str:
            value = data.draw(hostile_data())
            return mechanism_case(name, value, data.draw(SENSITIVITIES))

        return run

    def cli(command: str, suffix: str) -> Callable[[st.DataObject], str]:
        return lambda data: cli_case(command, data.draw(hostile_data()), suffix, CLI[command], tmp)

    for m in (*[m for m in GAUSSIAN_METHODS if m != "auto"], "auto"):
        out[f"PrivateGaussian.fit method={m}"] = gaussian(m)
    for m in ("auto", *MIXTURE_METHODS):
        out[f"PrivateGaussianMixture.fit method={m}"] = mixture(m)
    for what in ("gaussian.score_samples", "mixture.score_samples", "mixture.predict",
                 "mixture.predict_proba"):
        out[what] = post(what)
    for name in ("gaussian", "laplace", "count", "exponential", "symmetric", "histogram",
                 "truncated"):
        out[f"mechanisms.{name}"] = mech(name)
    for command in CLI:
        for suffix in (".csv", ".npy"):
            out[f"cli {command} ({suffix})"] = cli(command, suffix)
    out["cli requirements / audit / demo (options)"] = lambda data: cli_options_case(
        data.draw(option_commands())
    )
    return out


def run_entry(fn: Callable[[st.DataObject], str], examples: int, seed: int
              ) -> tuple[Counter[str], list[str], float]:
    counts: Counter[str] = Counter()
    violations: list[str] = []
    bar = tqdm(total=examples, leave=False, mininterval=30)

    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def body(data: st.DataObject) -> None:
        bar.update(1)
        try:
            counts[fn(data)] += 1
        except AssertionError as exc:
            counts["VIOLATION"] += 1
            if len(violations) < 3:
                violations.append(str(exc).splitlines()[0][:200])
        except Exception as exc:  # noqa: BLE001 - an unexpected exception is a violation too
            counts["VIOLATION"] += 1
            if len(violations) < 3:
                violations.append(f"{type(exc).__name__}: {str(exc)[:160]}")

    t0 = time.perf_counter()
    body._hypothesis_internal_use_seed = seed  # type: ignore[attr-defined]
    body()
    bar.close()
    return counts, violations, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default=None,
                        help="substrings (separated by |) of the entry points to run")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results file (markdown)")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        entries = entry_points(Path(tmp))
        for name, fn in entries.items():
            if args.only and not any(part in name for part in args.only.split("|")):
                continue
            counts, violations, secs = run_entry(fn, args.examples, args.seed)
            rows.append((name, counts, violations, secs))
            print(f"{name}: {sum(counts.values())} cases, {counts['VIOLATION']} violations, "
                  f"{secs:.0f}s", flush=True)
            write(rows, args, done=len(rows) == len(entries) or bool(args.only))


def write(rows: list[tuple[str, Counter[str], list[str], float]], args: Any, done: bool) -> None:
    """Write the table (after every entry point, so an interrupted run keeps its results)."""
    cmd = "python benchmarks/hostile_deep.py" + (
        f" --examples {args.examples}" if args.examples != 2000 else ""
    ) + (f" --only '{args.only}'" if args.only else "") + (
        f" --out {args.out}" if args.out != RESULTS else ""
    )
    lines = [
        "# Hostile-input deep tier",
        "",
        f"Command: `{cmd}` (seed {args.seed}); privgauss {pg.__version__}, numpy "
        f"{np.__version__}, Python {platform.python_version()}.",
        "",
        "Each case is one generated input (see `tests/test_hostile_inputs.py`: wrong shapes and "
        "dtypes, NaN/inf, magnitudes 1e-300..1e300, translations by 1e12, duplicate rows, "
        "constant columns, tiny n, public data of another dimension, pandas with text columns, "
        "object arrays, lists, 0-d, 3-d, invalid k / sensitivities). `ok` = a valid result; "
        "other columns = typed errors; VIOLATION = a contract breach.",
        "",
        "| entry point | cases | ok | typed errors | VIOLATION | seconds |",
        "|---|---:|---:|---|---:|---:|",
    ]
    total = bad = 0
    for name, counts, _violations, secs in rows:
        n = sum(counts.values())
        total += n
        bad += counts["VIOLATION"]
        errors = ", ".join(
            f"{k} {v}" for k, v in sorted(counts.items()) if k not in ("ok", "VIOLATION")
        )
        lines.append(
            f"| {name} | {n} | {counts['ok']} | {errors} | {counts['VIOLATION']} | {secs:.0f} |"
        )
    status = "" if done else " (run interrupted: entry points not listed were not run)"
    lines += ["", f"Total: {total} cases, {bad} violations{status}.", ""]
    listed = [(name, v) for name, _c, vs, _s in rows for v in vs]
    if listed:
        lines += ["First violations per entry point:", ""]
        lines += [f"- {name}: {v}" for name, v in listed]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    from privgauss.progress import on_terminal

    with on_terminal():  # a status line naming the current release, on a terminal
        main()
