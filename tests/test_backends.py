"""Tests of privgauss.backends: chunked passes over numpy or dask data, and the streaming
Gaussian estimators giving the in-memory results."""

from __future__ import annotations

import math

import numpy as np
import pytest

import privgauss as pg
from privgauss import backends as bk
from privgauss.exceptions import InvalidDataError
from privgauss.validation import validated_rows

da = pytest.importorskip("dask.array")


def _data(n: int = 6000, d: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((d, d)) + 2 * np.eye(d)
    X = rng.standard_normal((n, d)) @ M.T + 40.0
    P = rng.standard_normal((d + 3, d)) @ M.T + 40.0
    return X, P


def test_reduce_and_map_rows_agree_for_numpy_and_dask() -> None:
    X, _ = _data(5000, 3)
    Xd = da.from_array(X, chunks=(700, 3))

    def kernel(B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return B.T @ B, B.sum(axis=0)

    for got in (bk.reduce_rows(X, kernel, block=333), bk.reduce_rows(Xd, kernel, block=333)):
        np.testing.assert_allclose(got[0], X.T @ X, rtol=1e-12)
        np.testing.assert_allclose(got[1], X.sum(axis=0), rtol=1e-12)
    norms = bk.map_rows(Xd, lambda B: (np.linalg.norm(B, axis=1),), block=100)[0]
    np.testing.assert_allclose(norms, np.linalg.norm(X, axis=1), rtol=1e-14)
    idx = np.array([0, 699, 700, 4999])
    np.testing.assert_array_equal(bk.take_rows(Xd, idx), X[idx])


def _fit(X, P, method: str, **kw):  # noqa: ANN001, ANN202
    g = pg.PrivateGaussian(rho=0.5, random_state=3, method=method, **kw)
    return g.fit(X, public_X=P)


@pytest.mark.parametrize(
    ("method", "kw", "public"),
    [
        ("public", {}, True),
        ("coinpress", {"mean_bound": 100.0, "cov_bounds": (0.5, 50.0)}, False),
        ("clip", {"mean_bound": 100.0, "covariance": "identity"}, False),
        ("public", {"covariance": "identity"}, True),
    ],
)
def test_dask_input_gives_the_in_memory_release(method: str, kw: dict, public: bool) -> None:
    X, P = _data()
    a = _fit(X, P if public else None, method, **kw)
    b = _fit(da.from_array(X, chunks=(1000, 2)), P if public else None, method, **kw)
    np.testing.assert_allclose(b.mean_, a.mean_, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(b.covariance_, a.covariance_, rtol=1e-10, atol=1e-12)
    assert [(e.step, e.cost) for e in a.ledger_] == [(e.step, e.cost) for e in b.ledger_]
    assert math.isclose(a.privacy_spent_.rho, 0.5)


def test_localcluster_gives_the_numpy_release() -> None:
    distributed = pytest.importorskip("dask.distributed")
    X, P = _data()
    ref = _fit(X, P, "public")
    with distributed.LocalCluster(n_workers=1, processes=False, threads_per_worker=1,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster):
        got = _fit(da.from_array(X, chunks=(1500, 4)), P, "public")
    np.testing.assert_allclose(got.mean_, ref.mean_, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got.covariance_, ref.covariance_, rtol=1e-10, atol=1e-12)
    assert [e.step for e in got.ledger_] == [e.step for e in ref.ledger_]


def test_npy_path_streams_and_equals_in_memory(tmp_path) -> None:  # noqa: ANN001
    X, P = _data()
    path = tmp_path / "x.npy"
    np.save(path, X)
    Xd = bk.open_array(path, chunk_bytes=40_000)
    assert Xd.numblocks[0] > 1
    np.testing.assert_array_equal(Xd[1234:1240].compute(), X[1234:1240])
    a = _fit(X, P, "public")
    b = _fit(str(path), P, "public")
    np.testing.assert_allclose(b.covariance_, a.covariance_, rtol=1e-10, atol=1e-12)


def test_dask_validation_refuses_bad_values_before_any_budget() -> None:
    X, P = _data()
    for bad in (np.nan, np.inf, 1e200):
        Y = X.copy()
        Y[4321, 1] = bad
        acct = pg.Accountant(pg.ZCDP(0.5))
        with pytest.raises(InvalidDataError):
            pg.PrivateGaussian(rho=0.5, accountant=acct, random_state=0).fit(
                da.from_array(Y, chunks=(1000, 4)), public_X=P)
        assert acct.ledger == []
    assert validated_rows(da.from_array(X, chunks=(1000, 4))).shape == X.shape


def test_in_memory_methods_refuse_large_dask_data_before_reading() -> None:
    X, _ = _data()
    Xd = da.from_array(X, chunks=(1000, 4))
    with pytest.raises(InvalidDataError, match="max_memory_bytes"):
        bk.in_memory(Xd, max_memory_bytes=1000)
    np.testing.assert_array_equal(bk.in_memory(Xd), X)
    g = pg.PrivateGaussian(epsilon=1.0, delta=1e-6, method="histogram", random_state=0)
    g.fit(Xd)  # loaded (within the default limit) and equal to the numpy fit
    h = pg.PrivateGaussian(epsilon=1.0, delta=1e-6, method="histogram", random_state=0).fit(X)
    np.testing.assert_allclose(g.covariance_, h.covariance_, rtol=1e-10)


def test_numpy_input_is_not_copied_and_never_modified() -> None:
    X, P = _data()
    X.flags.writeable = False  # any write would raise
    assert validated_rows(X) is X
    Xf = np.asfortranarray(X)
    assert validated_rows(Xf) is Xf
    _fit(X, P, "public")
