"""Tests of privgauss.backends (chunked passes over numpy or dask data), the one-pass clipped
moments of privgauss.clipped_stats, and the streaming Gaussian estimators giving the in-memory
results."""

from __future__ import annotations

import math

import numpy as np
import pytest

import privgauss as pg
from privgauss import backends as bk
from privgauss import clipped_stats as cs
from privgauss.exceptions import InvalidDataError
from privgauss.linalg import clip_rows
from privgauss.mechanisms import Release
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


def test_reduce_rows_adds_many_dask_chunks_in_a_tree() -> None:
    """More chunks than two levels of the tree add (REDUCE_FAN² chunks): every chunk counted
    exactly once, the sums those of the rows; a tree task adds its results in order."""
    X, _ = _data(3000, 2)
    Xd = da.from_array(X, chunks=(37, 2))  # 82 chunks: three levels at a fan of 8
    assert Xd.numblocks[0] > bk.REDUCE_FAN ** 2

    def kernel(B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.array([B.shape[0]], dtype=np.int64), B.sum(axis=0)

    rows, sums = bk.reduce_rows(Xd, kernel)
    assert rows.tolist() == [3000]
    np.testing.assert_allclose(sums, X.sum(axis=0), rtol=1e-12)
    parts = bk._add_parts([np.ones(2)], [np.ones(2)], [np.ones(2)])
    np.testing.assert_array_equal(parts[0], [3.0, 3.0])


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


# ---- one-pass clipped first and second moments (split-mode final pass)


def _moment_case(offset: float, seed: int = 2) -> tuple:
    rng = np.random.default_rng(seed)
    n, d = 6000, 5
    M = rng.standard_normal((d, d)) + 2 * np.eye(d)
    X = rng.standard_normal((n, d)) @ M.T + offset
    P = np.linalg.inv(M) * 1.3
    rows = cs.Rows(X, input_map=(P, X[:40].mean(axis=0)))
    A = np.eye(d) + 0.3 * rng.standard_normal((d, d))
    s = 0.1 * rng.standard_normal(d)
    return X, rows, A, s


@pytest.mark.parametrize("offset", [0.0, 1e12])
def test_clipped_moments_equal_the_clip_then_sum_definition(offset: float) -> None:
    X, rows, A, s = _moment_case(offset)
    n, d = X.shape
    ex = np.sort(np.random.default_rng(0).choice(n, 700, replace=False))
    keep = np.setdiff1d(np.arange(n), ex)
    for tau in (0.5, 2.0, 3.0, 1e3):
        # the definition, written out: y = P(x − p0), W = clip_τ(A(y − s)) over the kept rows
        W = ((X[keep] - rows.p0) @ rows.P.T - s) @ A.T
        Wc, k = clip_rows(W, np.zeros(d), tau)
        ref = (Wc.mean(axis=0), Wc.T @ Wc / keep.size)
        for got in (cs.clipped_moments(rows, A, s, tau, ex),
                    cs.exact_clipped_moments(rows, A, s, tau, ex)):
            np.testing.assert_allclose(got[0], ref[0], rtol=1e-9, atol=1e-12 * tau)
            np.testing.assert_allclose(got[1], ref[1], rtol=1e-9, atol=1e-12 * tau**2)
    assert 0 < k < keep.size or tau > 10  # some rows clipped at the small radii


def test_clipped_moments_rows_on_the_boundary_and_extreme_rows() -> None:
    X, rows, A, s = _moment_case(0.0, seed=3)
    d = X.shape[1]
    tau = 2.0
    # rows mapped exactly onto the sphere (and a hair either side), and rows so large that the
    # per-record map sanitises them to 0 or the clipped Gram must be formed directly
    B = np.linalg.inv(A @ rows.P)
    u = np.random.default_rng(1).standard_normal((30, d))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    on = (u * tau * np.array([1.0, 1 - 1e-15, 1 + 1e-15] * 10)[:, None]) @ B.T
    X2 = X.copy()
    X2[:30] = rows.p0 + np.linalg.solve(rows.P, s) + on
    X2[30] = 1e150
    X2[31] = -3e149
    X2[32] = rows.p0 + 1e4
    r2 = cs.Rows(X2, input_map=(rows.P, rows.p0))
    a = cs.clipped_moments(r2, A, s, tau)
    b = cs.exact_clipped_moments(r2, A, s, tau)
    np.testing.assert_allclose(a[0], b[0], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a[1], b[1], rtol=1e-9, atol=1e-12)


def test_clipped_moments_sensitivity_worst_case_pair() -> None:
    # replacing one kept row moves the mean by ≤ 2τ/n₂ (L2) and the second moment by
    # ≤ √2τ²/n₂ (Frobenius): rows at opposite / orthogonal points of the sphere
    from privgauss.sensitivity import clipped_mean_l2, clipped_second_moment_frobenius

    rng = np.random.default_rng(5)
    n, d, tau = 500, 3, 1.5
    X = rng.standard_normal((n, d))
    ex = np.arange(0, n, 5)
    rows = cs.Rows(X)
    base = cs.clipped_moments(rows, np.eye(d), np.zeros(d), tau, ex)
    n2 = n - ex.size
    worst = [0.0, 0.0]
    far = 1e3 * np.eye(d)
    for r1, r2 in [(far[0], -far[0]), (far[0], far[1])]:  # opposite, orthogonal
        X1, X2 = X.copy(), X.copy()
        X1[1], X2[1] = r1, r2
        m1, S1 = cs.clipped_moments(cs.Rows(X1), np.eye(d), np.zeros(d), tau, ex)
        m2, S2 = cs.clipped_moments(cs.Rows(X2), np.eye(d), np.zeros(d), tau, ex)
        worst[0] = max(worst[0], float(np.linalg.norm(m1 - m2)))
        worst[1] = max(worst[1], float(np.linalg.norm(S1 - S2)))
    assert math.isclose(worst[0], clipped_mean_l2(tau, n2), rel_tol=1e-9)
    assert math.isclose(worst[1], clipped_second_moment_frobenius(tau, n2), rel_tol=1e-9)
    # a row of the excluded set changes nothing
    X3 = X.copy()
    X3[0] = 1e3
    got = cs.clipped_moments(cs.Rows(X3), np.eye(d), np.zeros(d), tau, ex)
    np.testing.assert_allclose(got[1], base[1], rtol=1e-12, atol=1e-15)


def test_split_mode_dask_and_npy_equal_numpy(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path) -> None:  # noqa: ANN001
    from privgauss.gaussian.coinpress import split_mode as cps

    monkeypatch.setattr(cps, "SPLIT_MIN_VALUES", 0)
    monkeypatch.setattr(cps, "_SPLIT_MIN_ROWS", 100)
    monkeypatch.setattr(cps, "_SPLIT_FRACTIONS", (0.25,))
    monkeypatch.setattr(cps, "_SPLIT_TOLERANCE", 10.0)
    monkeypatch.setattr(cps, "_SPLIT_MAX_FRAME_ERROR", 10.0)
    monkeypatch.setattr(cps, "_SPLIT_SHARES", (1.0,))
    X, _ = _data()
    kw = {"mean_bound": 100.0, "cov_bounds": (0.5, 50.0)}
    a = _fit(X, None, "coinpress", **kw)
    # the split's one charge, then the fit's clipped count (clip_diagnostics)
    assert [e.mechanism for e in a.ledger_] == ["parallel composition",
                                                "count-discrete-gaussian"]
    path = tmp_path / "x.npy"
    np.save(path, X)
    for Xs in (da.from_array(X, chunks=(1000, 2)), str(path)):
        b = _fit(Xs, None, "coinpress", **kw)
        np.testing.assert_allclose(b.mean_, a.mean_, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(b.covariance_, a.covariance_, rtol=1e-10, atol=1e-12)
    assert math.isclose(a.privacy_spent_.rho, 0.5)


@pytest.mark.parametrize("excess", [1e-6, 1e-8, -1e-6])
def test_clipped_moments_float32_tier_classifies_rows_a_hair_from_the_sphere(
    excess: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every row lies at (1 ± 1e-6)·τ in the frame: rows just outside must be clipped (the
    Gram shrinks by ≈ 2e-6, far above the tolerance) and rows just inside must not; a float32
    norm that missed its rounding margin would be caught here."""
    import privgauss.linalg as la

    calls = []
    real = la.clip_weights
    monkeypatch.setattr(la, "clip_weights", lambda D, r: calls.append(1) or real(D, r))
    rng = np.random.default_rng(5)
    n, d, tau = 6000, 30, 3.0
    A = np.eye(d) + 0.2 * rng.standard_normal((d, d))
    s = rng.standard_normal(d)
    u = rng.standard_normal((n, d))
    u *= (tau * (1 + excess)) / np.linalg.norm(u, axis=1, keepdims=True)
    X = s + np.linalg.solve(A, u.T).T
    rows = cs.Rows(X)
    a = cs.clipped_moments(rows, A, s, tau)
    b = cs.exact_clipped_moments(rows, A, s, tau)
    np.testing.assert_allclose(a[1], b[1], rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(a[0], b[0], rtol=1e-10, atol=1e-13)
    unclipped = (u.T @ u) / n
    shrink = float(np.trace(b[1]) / np.trace(unclipped))
    assert shrink == pytest.approx(1.0 if excess < 0 else (1 + excess) ** -2, rel=1e-9)
    assert calls  # the float32 tier ran (it corrects candidate rows with clip weights)


def test_pair_differences_stream_once_and_equal_the_direct_differences_bit_for_bit() -> None:
    """Random pairs across chunks (either side first, both in one chunk, the same row
    twice): the streamed differences are the in-memory X[second] − X[first] exactly, and
    each chunk is computed once."""
    import dask

    X, _ = _data(5000, 3)
    X[7] = X[9]  # equal rows: a difference of exactly 0
    rng = np.random.default_rng(4)
    perm = rng.permutation(5000)
    first, second = perm[:2500], perm[2500:]
    first, second = np.append(first, 7), np.append(second, 9)
    Xd = da.from_array(X, chunks=(700, 3))
    calls = []

    def counting_get(graph: object, keys: object, **kw: object) -> object:
        calls.append(1)
        return dask.get(graph, keys, **kw)

    with dask.config.set(scheduler=counting_get):
        got = bk.pair_differences(Xd, first, second)
    assert len(calls) == Xd.numblocks[0]
    want = X[second] - X[first]
    np.testing.assert_array_equal(got, want)
    assert np.array_equal(np.signbit(got), np.signbit(want)) and not got[-1].any()
    np.testing.assert_array_equal(bk.pair_differences(X, first, second), want)


def test_histogram_localisation_of_dask_rows_releases_the_in_memory_histograms() -> None:
    """The streamed location counts and pair differences give the same releases (the same
    noise draws on the same counts) as the rows in memory."""
    from privgauss.gaussian.histogram import localisation_budget

    X, _ = _data(20_000, 3)
    X[:, 1] = np.round(X[:, 1])  # ties: zero pair differences on one axis
    s_b, l_b, total = localisation_budget(20_000, 3, 1.0, 1e-6)
    _same_localisation(X, (3001, 3), s_b, l_b, total)


def test_subset_localisation_of_dask_rows_releases_the_in_memory_histograms() -> None:
    """Above the subset size (:func:`~privgauss.gaussian.histogram.localisation_rows`) the
    dask rows are read at the same random subset, in the same order, as the rows in memory."""
    from privgauss.gaussian.histogram import localisation_plan, localisation_rows

    n, d = 600_000, 2
    X = np.random.default_rng(4).standard_normal((n, d)) * [2.0, 0.5] + [10.0, -3.0]
    s_b, l_b, _ = localisation_plan(n, d, 1.0, 1e-6)
    assert localisation_rows(n, d, s_b, l_b) < n
    _same_localisation(X, (100_003, d), s_b, l_b, pg.ApproxDP(1.0, 1e-6))


def _same_localisation(X: np.ndarray, chunks: tuple[int, int], s_b, l_b, total) -> None:
    """``localise`` of ``X`` in memory and as dask rows of ``chunks``: the same histograms,
    centre and ledger."""
    from privgauss.gaussian.histogram import localise

    out = []
    for rows in (X, da.from_array(X, chunks=chunks)):
        acct = pg.Accountant(total)
        out.append((localise(rows, s_b, l_b, release=Release.of(acct, 3)), acct.ledger))
    (a, la), (b, lb) = out
    assert a.scale_histograms == b.scale_histograms
    assert a.location_histograms == b.location_histograms
    np.testing.assert_array_equal(a.center, b.center)
    assert [(e.step, e.cost) for e in la] == [(e.step, e.cost) for e in lb]
