"""CPU time of private EM's starts on their own inputs (issue 27): the cells' k-means
(``best_kmeans``), the private Lloyd kernel (``_lloyd_kernel``) and the summary EM
(``summary_gmm``) of one ``em_speed.py`` fit (n = 5e4, d = 10, k = 3, ε = 1e4, data seed 0).

``--capture FILE`` fits once with the code on ``PYTHONPATH`` and saves every call's inputs
(the generator's state included) and outputs; ``--time FILE`` re-runs the calls with the code
on ``PYTHONPATH`` ``--repeats`` times, prints the least CPU time of each kind of call over the
repeats (``summary_gmm``'s includes its own k-means, which is also one of the ``best_kmeans``
calls), and whether every output equals the captured one bit for bit. Capture with the old
code, time both (interleave them: the machine is shared)::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=<old src> python benchmarks/em_starts_speed.py --capture s.pkl
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=<old src> python benchmarks/em_starts_speed.py --time s.pkl
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/em_starts_speed.py --time s.pkl
"""

from __future__ import annotations

import argparse
import copy
import pickle
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from privgauss.mixture import em_starts as es
from privgauss.mixture import weighted_kmeans as wk

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import em_speed  # noqa: E402
from em_scale import _rows  # noqa: E402


def _rng(state: dict[str, Any]) -> np.random.Generator:
    rng = np.random.default_rng()
    rng.bit_generator.state = state
    return rng


def _call(kind: str, args: tuple[Any, ...]) -> Any:
    if kind == "best_kmeans":
        P, w, k, state, init, restarts = args
        return wk.best_kmeans(P, w, k, _rng(state), init, restarts)
    if kind == "lloyd_kernel":
        return es._lloyd_kernel(*args)
    N, means, covs, k, state = args
    return es.summary_gmm(N, means, covs, k, _rng(state))


def _capture(path: str) -> None:
    calls: list[tuple[str, tuple[Any, ...], Any]] = []
    orig = (es.best_kmeans, es._lloyd_kernel, es.summary_gmm)

    def bk(P: Any, w: Any, k: int, rng: Any, init: Any, restarts: int = wk.KMEANS_RESTARTS
           ) -> Any:
        args = (P.copy(), w.copy(), k, copy.deepcopy(rng.bit_generator.state),
                None if init is None else init.copy(), restarts)
        out = orig[0](P, w, k, rng, init, restarts)
        calls.append(("best_kmeans", args, out))
        return out

    def lk(B: Any, centres: Any, G: Any, radius: float) -> Any:
        out = orig[1](B, centres, G, radius)
        calls.append(("lloyd_kernel", (B.copy(), centres.copy(), G.copy(), radius), out))
        return out

    def sg(N: Any, means: Any, covs: Any, k: int, rng: Any) -> Any:
        args = (N.copy(), means.copy(), covs.copy(), k, copy.deepcopy(rng.bit_generator.state))
        out = orig[2](N, means, covs, k, rng)
        calls.append(("summary_gmm", args, out))
        return out

    es.best_kmeans, es._lloyd_kernel, es.summary_gmm = bk, lk, sg  # type: ignore[assignment]
    try:
        em_speed._ours(_rows(em_speed.N, np.random.default_rng(1000)), 1e4, 0)
    finally:
        es.best_kmeans, es._lloyd_kernel, es.summary_gmm = orig
    Path(path).write_bytes(pickle.dumps(calls))
    kinds = sorted({c[0] for c in calls})
    print({kind: sum(1 for c in calls if c[0] == kind) for kind in kinds}, "calls saved to", path)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True))


def _time(path: str, repeats: int) -> None:
    calls = pickle.loads(Path(path).read_bytes())
    best: dict[str, float] = {}
    same = True
    for _ in range(repeats):
        spent: dict[str, float] = {}
        for kind, args, out in calls:
            t = time.process_time()
            got = _call(kind, args)
            spent[kind] = spent.get(kind, 0.0) + time.process_time() - t
            same = same and _same(got, out)
        best = {k: min(v, best.get(k, np.inf)) for k, v in spent.items()}
    print(" ".join(f"{k} {v * 1e3:.1f} ms" for k, v in best.items()),
          f"total {sum(best.values()) * 1e3:.1f} ms (least of {repeats});",
          f"bit-identical to the capture: {same}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--capture", default=None, metavar="FILE")
    ap.add_argument("--time", default=None, metavar="FILE")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    warnings.simplefilter("ignore")
    with threadpool_limits(1):
        if a.capture:
            _capture(a.capture)
        if a.time:
            _time(a.time, a.repeats)


if __name__ == "__main__":
    main()
