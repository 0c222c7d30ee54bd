"""PrivateGaussianMixture on the narrow pydataset tables nobody chose (issue 27's real-table
goals, checked where nothing was tuned).

``real_mixtures.py`` runs the corpus of ``corpus.py`` (some of it tuned on). This script takes
the tables ``synth_corpus.py`` finds — every CSV in pydataset's tarball with at least
``--min-rows`` complete rows and 2 to ``--max-cols`` numeric columns, duplicates dropped — less
those of the corpus and of ``synth_peers.py``, and runs ``real_mixtures.run`` on them: the
same splits, references (sklearn's best of 5, one non-private Gaussian, sklearn on the public
rows alone), settings, goals and report columns. None of these tables was looked at while
tuning; they are marked held out.

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 PYTHONPATH=src \\
        python benchmarks/mixture_corpus.py --out benchmarks/results/mixture_corpus.md
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import corpus  # noqa: E402
import mixture_families as mf  # noqa: E402
import real_mixtures as rm  # noqa: E402
import synth_corpus as sc  # noqa: E402


def fresh_tables(min_rows: int, max_cols: int) -> list[str]:
    """Register the fresh tables in ``corpus.TABLES`` (held out) and return their names."""
    seen = sc._seen_names()
    names = []
    for name, _ in sc._tables(min_rows, max_cols):
        if name.lower() in seen or name in corpus.TABLES:
            continue
        corpus.TABLES[name] = corpus.Table(name, f"pydataset {name}", "fresh: not described",
                                           True, corpus._pydataset(name))
        names.append(name)
    return names


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-rows", type=int, default=2000)
    ap.add_argument("--max-cols", type=int, default=10)
    ap.add_argument("--max-rows", type=int, default=20000)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--settings", nargs="+", default=["eps1", "eps1-public", "eps1e4"],
                    choices=["eps1", "eps1-public", "eps1e4"])
    ap.add_argument("--tables", nargs="+", default=None,
                    help="only these tables (a pydataset table outside the fresh ones, e.g. "
                    "Males, is added and marked as not held out)")
    ap.add_argument("--out")
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="set a privgauss.mixture.private_em constant (an experiment switch; "
                    "repeatable)")
    args = ap.parse_args()
    mf.set_constants(args.set)
    pick = {"eps1": rm.SETTINGS[0], "eps1-public": rm.SETTINGS[1], "eps1e4": rm.SETTINGS[2]}
    names = fresh_tables(args.min_rows, args.max_cols)
    if args.tables:
        for name in args.tables:
            if name not in corpus.TABLES:
                corpus.TABLES[name] = corpus.Table(name, f"pydataset {name}", "seen", False,
                                                   corpus._pydataset(name))
        names = list(args.tables)
    lines, summary = rm.run(names, args.k, args.seeds, args.max_rows,
                            tuple(pick[s] for s in args.settings))
    text = "\n".join([
        f"# PrivateGaussianMixture({args.k}) on {len(names)} pydataset tables"
        f"{'' if args.tables else ' nobody chose'}",
        "", f"Command: `python benchmarks/mixture_corpus.py {shlex.join(sys.argv[1:])}` "
        "(the columns as in real_mixtures.md; every table here is held out: none was looked "
        "at while tuning).", "", "Issue 27's checks per setting:", "", *summary, "", *lines,
        ""])
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
