"""The streaming Gaussian methods run on a dask.distributed cluster with process workers and
give the in-memory releases: every kernel they ship to dask pickles (module-level functions,
partials of them or module-level classes — never lambdas, closures or BLAS objects).

One cluster (2 process workers, 1 thread each) serves the module and is shut down even when a
test fails. A second check needs no cluster: every graph a fit computes must pickle with the
standard :mod:`pickle`, which refuses the closures that distributed would otherwise ship by
value through cloudpickle."""

from __future__ import annotations

import logging
import multiprocessing
import pickle
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import privgauss as pg
from privgauss import backends as bk
from privgauss.exceptions import InvalidDataError
from privgauss.validation import validated_rows

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")

N, D, CHUNK = 20_000, 4, 3000

# (method, options, uses public rows): every Gaussian method that streams dask data
CASES = [
    ("public", {}, True),
    ("coinpress", {"mean_bound": 100.0, "cov_bounds": (0.5, 50.0)}, False),
    ("clip", {"mean_bound": 100.0, "covariance": np.diag([1.0, 2.0, 3.0, 4.0])}, False),
    ("coinpress", {"mean_bound": 100.0, "covariance": np.diag([1.0, 2.0, 3.0, 4.0])}, False),
]
IDS = ["public", "coinpress", "clip-known-cov", "coinpress-known-cov"]

# thresholds that put n = 20000, d = 4 into the split mode of coinpress/split_mode (client-side
# planning only: the workers never read them)
SPLIT = {"SPLIT_MIN_VALUES": 0, "_SPLIT_MIN_ROWS": 100, "_SPLIT_FRACTIONS": (0.25,),
         "_SPLIT_TOLERANCE": 10.0, "_SPLIT_MAX_FRAME_ERROR": 10.0, "_SPLIT_SHARES": (1.0,)}


def _data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    M = rng.standard_normal((D, D)) + 2 * np.eye(D)
    X = rng.standard_normal((N, D)) @ M.T + 40.0
    P = rng.standard_normal((D + 1, D)) @ M.T + 40.0  # d+1 public rows
    return X, P


def _fit(X: Any, P: np.ndarray | None, method: str, kw: dict) -> pg.PrivateGaussian:
    g = pg.PrivateGaussian(rho=0.5, random_state=0, method=method, **kw)
    return g.fit(X, public_X=P)


def _assert_same_release(got: pg.PrivateGaussian, ref: pg.PrivateGaussian) -> None:
    np.testing.assert_allclose(got.mean_, ref.mean_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(got.covariance_, ref.covariance_, rtol=1e-10, atol=1e-12)
    assert [(e.step, e.cost) for e in got.ledger_] == [(e.step, e.cost) for e in ref.ledger_]


def _privgauss_file() -> str:
    return pg.__file__


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=logging.ERROR)
    try:
        with distributed.Client(cluster) as c:
            # the workers run this checkout, not another install of privgauss
            assert set(c.run(_privgauss_file).values()) == {pg.__file__}
            yield c
    finally:
        cluster.close()
        left = multiprocessing.active_children()  # cluster.close() joins its workers
        for p in left:
            p.terminate()
            p.join(10)
        assert not left, "the cluster left worker processes running"


@pytest.fixture(scope="module")
def data() -> tuple[np.ndarray, np.ndarray]:
    return _data()


@pytest.mark.parametrize(("method", "kw", "public"), CASES, ids=IDS)
def test_cluster_gives_the_in_memory_release(client: Any, data: tuple, method: str, kw: dict,
                                             public: bool) -> None:
    X, P = data
    P = P if public else None
    ref = _fit(X, P, method, kw)
    got = _fit(da.from_array(X, chunks=(CHUNK, D)), P, method, kw)
    _assert_same_release(got, ref)


@pytest.mark.parametrize(("method", "kw", "public"), CASES[:2], ids=IDS[:2])
def test_cluster_split_mode_gives_the_in_memory_release(
    client: Any, data: tuple, method: str, kw: dict, public: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The one-pass clipped moments (float32 tier: a BLAS routine the kernel must look up on
    the worker) on the cluster."""
    from privgauss.gaussian.coinpress import split_mode as cps

    for name, value in SPLIT.items():
        monkeypatch.setattr(cps, name, value)
    X, P = data
    P = P if public else None
    ref = _fit(X, P, method, kw)
    assert [e.mechanism for e in ref.ledger_][:1] == ["parallel composition"]
    _assert_same_release(_fit(da.from_array(X, chunks=(CHUNK, D)), P, method, kw), ref)


def test_cluster_npy_file_streams_and_gives_the_in_memory_release(
    client: Any, data: tuple, tmp_path: Any
) -> None:
    X, P = data
    path = tmp_path / "x.npy"
    np.save(path, X)
    Xd = bk.open_array(path, chunk_bytes=CHUNK * D * 8)
    assert Xd.numblocks[0] == -(-N // CHUNK)
    # the graph carries the file's (absolute) path, never an open handle
    src = pickle.loads(pickle.dumps(bk._NpyRows(path)))
    assert src.path.is_absolute() and src.path.samefile(path)
    np.testing.assert_array_equal(src[10:12], X[10:12])
    _assert_same_release(_fit(str(path), P, "public", {}), _fit(X, P, "public", {}))


def test_cluster_entry_validation(client: Any, data: tuple) -> None:
    """validated_rows' chunked NaN/magnitude pass runs on the workers."""
    X, P = data
    assert validated_rows(da.from_array(X, chunks=(CHUNK, D))).shape == X.shape
    for bad in (np.nan, np.inf, 1e200):
        Y = X.copy()
        Y[12345, 2] = bad
        with pytest.raises(InvalidDataError):
            validated_rows(da.from_array(Y, chunks=(CHUNK, D)))
        acct = pg.Accountant(pg.ZCDP(0.5))
        with pytest.raises(InvalidDataError):
            pg.PrivateGaussian(rho=0.5, accountant=acct, random_state=0).fit(
                da.from_array(Y, chunks=(CHUNK, D)), public_X=P)
        assert acct.ledger == []


# ---- no cluster: every graph pickles with the standard pickle


def _strict_get(expr: Any, keys: Any, **kwargs: Any) -> Any:
    """A synchronous scheduler that first pickles the whole graph with the standard pickle
    (no cloudpickle fallback): a lambda or closure anywhere in it fails here."""
    pickle.dumps(dict(expr.__dask_graph__()), protocol=pickle.HIGHEST_PROTOCOL)
    _strict_get.calls += 1  # type: ignore[attr-defined]
    return dask.get(expr, keys, **kwargs)


def test_every_graph_of_a_fit_pickles_without_cloudpickle(
    data: tuple, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from privgauss.gaussian.coinpress import split_mode as cps

    X, P = data
    path = tmp_path / "x.npy"
    np.save(path, X)
    _strict_get.calls = 0  # type: ignore[attr-defined]
    with dask.config.set(scheduler=_strict_get):
        for method, kw, public in CASES:
            _fit(da.from_array(X, chunks=(CHUNK, D)), P if public else None, method, kw)
        _fit(str(path), P, "public", {})
        for name, value in SPLIT.items():
            monkeypatch.setattr(cps, name, value)
        for method, kw, public in CASES[:2]:
            _fit(da.from_array(X, chunks=(CHUNK, D)), P if public else None, method, kw)
        for budget, public in EM_CASES:  # private EM, private and public frames
            _fit_em(da.from_array(X, chunks=(CHUNK, D)), P if public else None, budget)
    assert _strict_get.calls > 20  # type: ignore[attr-defined]


# ---- private EM mixtures (method="em") stream dask rows: one pass per EM step

EM_N, EM_D, EM_CHUNK = 24_000, 3, 2500

# (budget, public rows): the (ε, δ) path localises privately (stability histograms and a
# CoinPress refinement on dask rows); with public rows the frame is public; ρ needs them
EM_CASES = [
    ({"epsilon": 1.0, "delta": 1e-6}, False),
    ({"rho": 0.5}, True),
    ({"epsilon": 1e4, "delta": 1e-6}, False),  # quiet steps: the summary start, the DP stop
]
EM_IDS = ["eps-delta", "rho-public", "eps-huge"]


@pytest.fixture(scope="module")
def em_data() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from privgauss.datasets import make_mixture

    mix = make_mixture(EM_N + 60, EM_D, 3, separation=3.0, random_state=5)
    X = mix.X * 7.0 + 300.0  # far from 0, not unit scale: the frame must be found
    return X[:EM_N], X[EM_N:], mix.weights  # 60 public rows


def _fit_em(X: Any, P: np.ndarray | None, budget: dict) -> pg.PrivateGaussianMixture:
    m = pg.PrivateGaussianMixture(3, method="em", random_state=0, **budget)
    return m.fit(X, public_X=P)


@pytest.fixture(scope="module")
def em_reference(em_data: tuple) -> Any:
    """The in-memory fit of each EM case (by index in EM_CASES), fitted once for the tests
    that compare a dask or file fit with it; the tests only read the fitted attributes."""
    X, P, _ = em_data
    fits: dict[int, pg.PrivateGaussianMixture] = {}

    def reference(case: int) -> pg.PrivateGaussianMixture:
        if case not in fits:
            budget, public = EM_CASES[case]
            fits[case] = _fit_em(X, P if public else None, budget)
        return fits[case]

    return reference


def _assert_same_mixture(got: pg.PrivateGaussianMixture, ref: pg.PrivateGaussianMixture
                         ) -> None:
    """Equal up to the rounding of the sums: numpy blocks of 43,690 rows (d = 3) and dask
    chunks of 2,500 rows add the same per-row terms in a different order (relative
    differences ~1e-16 per sum, carried through ~20 noisy EM steps)."""
    for name in ("weights_", "means_", "covariances_"):
        np.testing.assert_allclose(getattr(got, name), getattr(ref, name), rtol=1e-9,
                                   atol=1e-9, err_msg=name)
    assert [(e.step, e.cost) for e in got.ledger_] == [(e.step, e.cost) for e in ref.ledger_]


# the (ε, δ) case (private localisation on the cluster) runs by default; the public frame and
# the quiet steps of a huge budget in the slow set (every case's graphs are pickled without
# cloudpickle by default: test_every_graph_of_a_fit_pickles_without_cloudpickle)
@pytest.mark.parametrize(("budget", "public"), [
    pytest.param(*case, id=name, marks=[pytest.mark.slow] if i else [])
    for i, (case, name) in enumerate(zip(EM_CASES, EM_IDS, strict=True))])
def test_cluster_em_mixture_gives_the_in_memory_fit(client: Any, em_data: tuple,
                                                    em_reference: Any, budget: dict,
                                                    public: bool) -> None:
    X, P, weights = em_data
    P = P if public else None
    ref = em_reference(EM_CASES.index((budget, public)))
    assert ref.method_ == "em"
    # a real fit (the equality then compares fits, not collapsed models): three components
    assert ref.weights_.min() > 0.15 and np.sort(weights)[0] > 0.3
    got = _fit_em(da.from_array(X, chunks=(EM_CHUNK, EM_D)), P, budget)
    _assert_same_mixture(got, ref)


def test_cluster_em_mixture_streams_a_npy_file(client: Any, em_data: tuple, em_reference: Any,
                                               tmp_path: Any,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """From a path the rows are read in chunks on the workers, never loaded whole (the
    estimator's in-memory loader is not called)."""
    from privgauss.estimators import mixture as est_mixture

    def no_load(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the em fit loaded the rows into memory")

    X = em_data[0]
    path = tmp_path / "mix.npy"
    np.save(path, X)
    ref = em_reference(0)  # the (ε, δ) case: no public rows
    monkeypatch.setattr(est_mixture, "in_memory", no_load)
    _assert_same_mixture(_fit_em(str(path), None, EM_CASES[0][0]), ref)
