"""The start's k-means kernels (:mod:`privgauss.mixture.em_starts`): the fast squared distances
and nearest-centre labels agree with the plain broadcast formula and ``np.argmin``."""

import numpy as np
import pytest

from privgauss.mixture.weighted_kmeans import nearest as _nearest
from privgauss.mixture.weighted_kmeans import sq_dists as _sq_dists


@pytest.mark.parametrize("p", [1, 2, 3, 7, 8, 9, 17, 128, 130])
def test_squared_distances_match_the_broadcast_formula(p: int) -> None:
    rng = np.random.default_rng(p)
    points = rng.standard_normal((257, p)) * rng.uniform(0.1, 10.0, p) + 3.0
    C = rng.standard_normal((4, p))
    want = ((points[:, None, :] - C[None]) ** 2).sum(-1).T
    got = _sq_dists(np.ascontiguousarray(points.T), C)
    assert got.shape == (4, 257)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0.0)


def test_nearest_is_argmin_with_the_first_index_among_ties() -> None:
    rng = np.random.default_rng(0)
    D = rng.integers(0, 4, size=(5, 400)).astype(float)  # many ties
    np.testing.assert_array_equal(_nearest(D), np.argmin(D, axis=0))
    D[2, 7] = np.nan  # numpy's own rule where a value is not a number
    np.testing.assert_array_equal(_nearest(D), np.argmin(D, axis=0))



@pytest.mark.parametrize("k", [1, 2, 3, 9])
def test_nearest_two_is_the_gathered_nearest_and_second_bit_for_bit(k: int) -> None:
    """:func:`nearest_two`'s running minima give what the labels' gathers and the scattered
    +inf gave, bit for bit: ties (an integer grid), +inf entries and NaN (numpy's argmin)."""
    from privgauss.mixture.weighted_kmeans import nearest_two

    rng = np.random.default_rng(k)
    for trial in range(6):
        D = (rng.integers(0, 4, size=(k, 400)).astype(float) if trial % 2
             else rng.random((k, 400)) * 10.0)
        if trial >= 2:
            D[rng.integers(k), rng.integers(400)] = np.inf
        if trial >= 4:
            D[rng.integers(k), rng.integers(400)] = np.nan
        lab, near, second = nearest_two(D)
        want = np.argmin(D, axis=0)
        cols = np.arange(400)
        E = D.copy()
        E[want, cols] = np.inf
        np.testing.assert_array_equal(lab, want)
        np.testing.assert_array_equal(near, D[want, cols])
        np.testing.assert_array_equal(second, E.min(axis=0) if k > 1 else np.full(400, np.inf))


def test_lloyd_kernel_equals_the_indexed_statistics_bit_for_bit() -> None:
    """The private Lloyd step's per-block statistics (take-based gathers, one-hot rows from an
    identity) are bit for bit those of fancy indexing and boolean masks, non-finite rows
    included (they count at the centre-free coordinates 0)."""
    from privgauss.linalg import clip_weights
    from privgauss.mixture.em_starts import _lloyd_kernel

    rng = np.random.default_rng(3)
    B = rng.standard_normal((3000, 10)) * 2.0
    B[5, 2] = np.nan
    B[9] = np.inf
    C = rng.standard_normal((9, 10))
    G = np.linalg.qr(rng.standard_normal((10, 10)))[0] * rng.uniform(0.5, 2.0, 10)
    counts, S, M = _lloyd_kernel(B, C, G, 2.5)
    with np.errstate(all="ignore"):
        U = (B @ G.T)[:, None, :] - C @ G.T
        U[~np.isfinite(U)] = 0.0
        lab = np.argmin(np.einsum("ijd,ijd->ij", U, U), axis=1)
        Y = U[np.arange(3000), lab]
        Y *= clip_weights(Y, 2.5)[:, None]
    onehot = (lab[:, None] == np.arange(9)).astype(np.float64)
    np.testing.assert_array_equal(counts, np.bincount(lab, minlength=9))
    np.testing.assert_array_equal(S, onehot.T @ Y)
    for j in range(9):
        Yj = Y[lab == j]
        np.testing.assert_array_equal(M[j], Yj.T @ Yj)

def _blobs(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Three well-separated Gaussians in d = 3 over-clustered into 12 blobs by k-means:
    (blob counts, means, covariances, true weights, true means)."""
    from sklearn.cluster import KMeans

    rng = np.random.default_rng(seed)
    w = np.array([0.6, 0.3, 0.1])
    mu = np.array([[0.0, 0.0, 0.0], [6.0, 0.0, 0.0], [0.0, 6.0, 2.0]])
    lab = rng.choice(3, size=20_000, p=w)
    X = mu[lab] + rng.standard_normal((20_000, 3)) * np.array([1.0, 0.5, 1.5])
    blob = KMeans(12, n_init=1, random_state=seed).fit(X).labels_
    N = np.bincount(blob, minlength=12).astype(float)
    M = np.array([X[blob == j].mean(axis=0) for j in range(12)])
    S = np.array([np.cov(X[blob == j].T, bias=True) for j in range(12)])
    return N, M, S, w, mu


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_summary_gmm_recovers_the_mixture_from_its_blobs(seed: int) -> None:
    """EM on the over-clustered summary finds the three components (weights, means and the
    per-axis spreads), whatever the k-means++ seeding's luck."""
    from privgauss.mixture.em_starts import summary_gmm

    N, M, S, w, mu = _blobs(seed)
    pi, means, covs = summary_gmm(N, M, S, 3, np.random.default_rng(seed))
    order = [int(np.argmin(((means - m) ** 2).sum(axis=1))) for m in mu]
    assert sorted(order) == [0, 1, 2]
    np.testing.assert_allclose(pi[order], w, atol=0.02)
    np.testing.assert_allclose(means[order], mu, atol=0.1)
    for c in order:
        np.testing.assert_allclose(np.diag(covs[c]), [1.0, 0.25, 2.25], rtol=0.15)


def test_summary_gmm_picks_the_same_restart_under_rounding() -> None:
    """Releases that differ in the last bits (a dask fit's summation order) give the same
    start: a restart within the tolerance of the best does not take over."""
    from privgauss.mixture.em_starts import summary_gmm

    N, M, S, _, _ = _blobs(3)
    a = summary_gmm(N, M, S, 3, np.random.default_rng(7))
    b = summary_gmm(N * (1.0 + 1e-14), M + 1e-14, S, 3, np.random.default_rng(7))
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-9)


def test_summary_gmm_with_no_more_blobs_than_components() -> None:
    """K' ≤ k (too little room to over-cluster): the blobs themselves, padded, weights summing
    to 1."""
    from privgauss.mixture.em_starts import summary_gmm

    N, M, S = np.array([5.0, -1.0]), np.zeros((2, 2)), np.array([np.eye(2)] * 2)
    pi, means, covs = summary_gmm(N, M, S, 3, np.random.default_rng(0))
    assert pi.shape == (3,) and means.shape == (3, 2) and covs.shape == (3, 2, 2)
    assert abs(pi.sum() - 1.0) < 1e-12 and (pi > 0).all()


def _summary_objective(N: np.ndarray, M: np.ndarray, S: np.ndarray, fit: tuple) -> float:
    """The summary log-likelihood of a fit: Σ_c N_c log Σ_j π_j exp(blob c's expected log
    density under component j), written plainly."""
    from scipy.stats import multivariate_normal

    pi, mu, C = fit
    L = np.empty((len(N), len(pi)))
    for j in range(len(pi)):
        P = np.linalg.inv(C[j])
        for c in range(len(N)):
            L[c, j] = (np.log(pi[j]) + multivariate_normal(mu[j], C[j]).logpdf(M[c])
                       - 0.5 * float(np.trace(P @ S[c])))
    top = L.max(axis=1)
    return float(N @ (top + np.log(np.exp(L - top[:, None]).sum(axis=1))))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_summary_gmm_offers_its_best_other_basin(seed: int) -> None:
    """Asked for alternatives, the summary EM returns the same fit and leaves its generator
    where it would (the extra seedings come from a side generator), and offers the best fit
    of those seedings whose objective differs from the winner's: on blobs of four clusters
    fitted with k = 3 (several ways to merge), a different mixture."""
    from privgauss.mixture import em_starts as es

    rng = np.random.default_rng(seed)
    mu4 = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0], [4.0, 4.0]])
    X = mu4[rng.choice(4, size=8000)] + rng.standard_normal((8000, 2))
    from sklearn.cluster import KMeans

    blob = KMeans(12, n_init=1, random_state=seed).fit(X).labels_
    N = np.bincount(blob, minlength=12).astype(float)
    M = np.array([X[blob == j].mean(axis=0) for j in range(12)])
    S = np.array([np.cov(X[blob == j].T, bias=True) for j in range(12)])
    a, b = np.random.default_rng(seed), np.random.default_rng(seed)
    fit = es.summary_gmm(N, M, S, 3, a)
    alts: list = []
    same = es.summary_gmm(N, M, S, 3, b, alternatives=alts)
    assert a.bit_generator.state == b.bit_generator.state
    for x, y in zip(fit, same, strict=True):
        np.testing.assert_array_equal(x, y)
    assert len(alts) == 1
    won, other = _summary_objective(N, M, S, fit), _summary_objective(N, M, S, alts[0])
    assert abs(other - won) > 1e-6 * abs(won)
    assert abs(alts[0][0].sum() - 1.0) < 1e-9
    assert all(np.linalg.eigvalsh(c).min() > 0 for c in alts[0][2])


def _plain_lloyd(points: np.ndarray, weights: np.ndarray, k: int, rng: np.random.Generator,
                 iters: int = 50) -> tuple[np.ndarray, np.ndarray, float]:
    """The weighted Lloyd steps written plainly (every distance every step): the reference the
    bounded :func:`~privgauss.mixture.weighted_kmeans.lloyd` must equal bit for bit."""
    from privgauss.mixture.weighted_kmeans import nearest as _nearest
    from privgauss.mixture.weighted_kmeans import sq_dists as _sq_dists

    w = np.maximum(weights, 0.0)
    PT = np.ascontiguousarray(points.T)
    seeds = [points[rng.choice(len(w), p=w / w.sum())]]
    for _ in range(1, k):
        q = w * np.min(_sq_dists(PT, np.array(seeds)), axis=0)
        seeds.append(points[rng.choice(len(w), p=q / q.sum())] if q.sum() > 0 else seeds[-1])
    C = np.array(seeds)
    for _ in range(iters):
        lab = _nearest(_sq_dists(PT, C))
        newC = C.copy()
        for j in range(k):
            wj = w * (lab == j)
            if wj.sum() > 0:
                newC[j] = wj @ points / wj.sum()
        if np.allclose(newC, C):
            break
        C = newC
    D = _sq_dists(PT, C)
    lab = _nearest(D)
    var = np.array([(w * (lab == j)) @ D[j] / (w * (lab == j)).sum() / points.shape[1]
                    if (w * (lab == j)).sum() > 0 else 1.0 for j in range(k)])
    return C, var, float(w @ np.min(D, axis=0))


@pytest.mark.parametrize("p,k", [(1, 2), (2, 5), (3, 9), (6, 3), (10, 9), (17, 4), (130, 3)])
def test_bounded_lloyd_equals_the_plain_steps_bit_for_bit(p: int, k: int,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """The Lloyd steps that skip points their bounds settle (labelling the rest by a matrix
    product, exact at near-ties) and centres whose cluster did not change give the plain
    steps' centres, variances, inertia and generator state exactly — on grid-like points
    with many near-ties and on blobs that take many steps, at the default cap and at 50
    (the numpy steps: the compiled ones switched off)."""
    from privgauss.mixture import weighted_kmeans
    from privgauss.mixture.weighted_kmeans import LLOYD_STEPS
    from privgauss.mixture.weighted_kmeans import lloyd as _lloyd

    monkeypatch.setattr(weighted_kmeans, "COMPILED_LLOYD", False)
    rng = np.random.default_rng(p * 100 + k)
    grid = np.round(rng.standard_normal((3000, p)) * 2.0) / 2.0
    blobs = rng.standard_normal((3000, p)) + rng.integers(0, 4, (3000, 1)) * 1.5
    for points in (grid, blobs):
        weights = rng.uniform(0.0, 3.0, len(points))
        for steps in (LLOYD_STEPS, 50):
            a, b = np.random.default_rng(1), np.random.default_rng(1)
            got = _lloyd(points, weights, k, a, iters=steps)
            want = _plain_lloyd(points, weights, k, b, steps)
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])
            assert got[2] == want[2]
            assert a.bit_generator.state == b.bit_generator.state


@pytest.mark.parametrize("p,k", [(1, 2), (2, 5), (3, 9), (6, 3), (10, 9), (17, 4)])
def test_compiled_lloyd_equals_the_plain_steps_to_rounding(p: int, k: int) -> None:
    """The compiled Lloyd steps (scikit-learn's, the default where importable) from
    :func:`lloyd`'s own seeding give the plain steps' converged centres, variances and
    inertia to rounding, and draw exactly what the plain seeding draws — on separated blobs
    (no near-ties); a wrong weighting, a step short or a centre not updated would move them by
    far more than 1e-9. Under a step cap (3 steps, still moving) the two agree to rounding too:
    the compiled steps are the same steps."""
    from privgauss.mixture import weighted_kmeans
    from privgauss.mixture.weighted_kmeans import lloyd as _lloyd

    if weighted_kmeans._compiled_lloyd is None:  # pragma: no cover
        pytest.skip("scikit-learn's compiled Lloyd steps are not importable")
    rng = np.random.default_rng(p * 100 + k + 7)
    centres = rng.standard_normal((k, p)) * 6.0
    points = centres[rng.integers(0, k, 4000)] + rng.standard_normal((4000, p))
    weights = rng.uniform(0.0, 3.0, len(points))
    weights[::7] = 0.0  # released cells' weights are clipped at 0
    for steps in (300, 3):
        a, b = np.random.default_rng(3), np.random.default_rng(3)
        got = _lloyd(points, weights, k, a, iters=steps)
        want = _plain_lloyd(points, weights, k, b, steps)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-9)
        assert got[2] == pytest.approx(want[2], rel=1e-9)
        assert a.bit_generator.state == b.bit_generator.state


@pytest.mark.parametrize("p,k", [(1, 2), (3, 9), (10, 3), (17, 4)])
def test_bounded_labels_are_the_exact_nearest_centres(p: int, k: int) -> None:
    """The product-form distances label every point as :func:`nearest` of :func:`sq_dists`
    does, ties and near-ties included (points on the bisector of two centres, and far from
    the origin, where the product form cancels), and their two distances are within the
    stated error of the exact ones."""
    from privgauss.mixture.weighted_kmeans import _Frame
    from privgauss.mixture.weighted_kmeans import nearest as _nearest
    from privgauss.mixture.weighted_kmeans import sq_dists as _sq_dists

    rng = np.random.default_rng(p + 10 * k)
    for offset in (0.0, 1e3):
        C = rng.standard_normal((k, p)) + offset
        grid = np.round(rng.standard_normal((2000, p)) * 2.0) / 2.0 + offset
        mid = (C[0] + C[min(1, k - 1)]) / 2.0  # on the bisector of two centres
        near_tie = mid + rng.standard_normal((500, 1)) * 1e-15 * (C[0] - C[min(1, k - 1)])
        points = np.vstack([grid, near_tie, mid, C])
        PT = np.ascontiguousarray(points.T)
        frame = _Frame(points, rng.uniform(0.5, 2.0, len(points)), PT)
        err = frame.error(C)
        D = _sq_dists(PT, C)
        idx = np.sort(rng.choice(len(points), 700, replace=False))
        for sel in (None, idx):
            lab, near, second = frame.labels(sel, C, err)
            E = D if sel is None else D[:, sel]
            np.testing.assert_array_equal(lab, _nearest(E))
            cols = np.arange(E.shape[1])
            np.testing.assert_allclose(near, np.sqrt(E[lab, cols]), rtol=0,
                                       atol=np.sqrt(2 * err))
            E = E.copy()
            E[lab, cols] = np.inf
            want = np.sqrt(E.min(axis=0)) if k > 1 else np.full(E.shape[1], np.inf)
            np.testing.assert_allclose(second, want, rtol=0, atol=np.sqrt(2 * err))


@pytest.mark.parametrize("k,d", [(1, 1), (2, 2), (3, 10), (4, 5), (6, 15), (9, 3), (12, 2)])
def test_summary_em_over_restarts_equals_one_restart_at_a_time(k: int, d: int) -> None:
    """The restarts advanced together give each restart's objective and fit exactly as
    :func:`_summary_em` run on its own does (restarts that converge at different steps)."""
    from privgauss.mixture.em_starts import _summary_em, _summary_em_batch

    rng = np.random.default_rng(10 * k + d)
    K = 3 * k
    N = rng.uniform(10.0, 1000.0, K)
    means = rng.standard_normal((K, d)) * 2.0
    A = rng.standard_normal((K, d, d)) * 0.3
    covs = A @ np.swapaxes(A, 1, 2) + 0.1 * np.eye(d)
    resps = [np.eye(k)[rng.integers(0, k, K)] for _ in range(7)]
    batch = _summary_em_batch(N, means, covs, resps)
    assert len(batch) == len(resps)
    for resp, (obj, fit) in zip(resps, batch, strict=True):
        want_obj, want = _summary_em(N, means, covs, resp)
        assert obj == want_obj
        for x, y in zip(fit, want, strict=True):
            np.testing.assert_array_equal(x, y)


def test_skip_seedings_advances_the_generator_as_the_seedings_would() -> None:
    """A k-means++ seeding draws k uniforms: skipping it leaves the generator where running
    it would (so fewer seedings change no later draw)."""
    from privgauss.mixture.weighted_kmeans import best_kmeans, lloyd, skip_seedings

    pts = np.random.default_rng(3).standard_normal((400, 3))
    w = np.random.default_rng(4).uniform(0.1, 2.0, 400)
    for k in (1, 3, 6):
        a, b = np.random.default_rng(k), np.random.default_rng(k)
        lloyd(pts, w, k, a)
        skip_seedings(b, k, 1)
        assert a.bit_generator.state == b.bit_generator.state
        a, b = np.random.default_rng(k), np.random.default_rng(k)
        best_kmeans(pts, w, k, a, None, 10)
        best_kmeans(pts, w, k, b, None, 2)
        skip_seedings(b, k, 8)
        assert a.bit_generator.state == b.bit_generator.state


def _start_inputs(K: int, k: int = 3) -> tuple[object, object, np.ndarray]:
    from types import SimpleNamespace

    import privgauss as pg
    from privgauss.mechanisms import Release

    rng = np.random.default_rng(7)
    Z = np.concatenate([rng.standard_normal((3000, 4)) * 0.4 + c
                        for c in ([1.5, 0, 0, 0], [-1.5, 0, 0, 0], [0, 1.5, 0, 0])])
    plan = SimpleNamespace(grid_dims=4, grid_cells=8, rho_init=1e3, start_clusters=K)
    release = Release.of(pg.Accountant(pg.ZCDP(1e3)), 11, "t")
    return Z, plan, release


def _starts(K: int, monkeypatch: pytest.MonkeyPatch, quiet: int) -> tuple[object, dict]:
    import privgauss.mixture.em_starts as es

    monkeypatch.setattr(es, "QUIET_RESTARTS", quiet)
    Z, plan, release = _start_inputs(K)
    out = es.histogram_start(Z, None, 3, plan, release, len(Z), np.eye(4))
    return out, release.rng.bit_generator.state


def test_fewer_cell_seedings_only_beside_a_summary_start(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """With K' > k (a summary start: quiet budgets) the two k-centre cell k-means run
    ``QUIET_RESTARTS`` seedings and skip the rest: the K'-centre seeds and the generator after
    the start are those of all ``KMEANS_RESTARTS`` seedings. With K' = k (noisy budgets) the
    starts do not depend on ``QUIET_RESTARTS`` at all."""
    from privgauss.mixture.em_starts import QUIET_RESTARTS
    from privgauss.mixture.weighted_kmeans import KMEANS_RESTARTS

    (h, w, seeds), state = _starts(9, monkeypatch, QUIET_RESTARTS)
    (h_all, w_all, seeds_all), state_all = _starts(9, monkeypatch, KMEANS_RESTARTS)
    np.testing.assert_array_equal(seeds, seeds_all)
    assert state == state_all
    # K' = k: the k-means start; QUIET_RESTARTS is never read
    (h, w, seeds), state = _starts(3, monkeypatch, 0)
    (h2, w2, seeds2), state2 = _starts(3, monkeypatch, KMEANS_RESTARTS)
    for a, b in zip((*h, *w, seeds), (*h2, *w2, seeds2), strict=True):
        np.testing.assert_array_equal(a, b)
    assert state == state2


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_summary_gmm_skips_the_seedings_it_no_longer_runs(seed: int,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """The summary EM runs ``SUMMARY_RESTARTS`` seedings and skips ``SUMMARY_SKIPPED`` more
    in the generator: the generator ends where all of them would leave it, and on these blobs
    (the best restart among the first) the fit is the one of all of them."""
    import privgauss.mixture.em_starts as es

    N, M, S, _, _ = _blobs(seed)
    a = np.random.default_rng(seed)
    fit = es.summary_gmm(N, M, S, 3, a)
    monkeypatch.setattr(es, "SUMMARY_RESTARTS", es.SUMMARY_RESTARTS + es.SUMMARY_SKIPPED)
    monkeypatch.setattr(es, "SUMMARY_SKIPPED", 0)
    b = np.random.default_rng(seed)
    fit_all = es.summary_gmm(N, M, S, 3, b)
    assert a.bit_generator.state == b.bit_generator.state
    for x, y in zip(fit, fit_all, strict=True):
        np.testing.assert_array_equal(x, y)


def test_lloyd_falls_back_to_the_numpy_steps_when_the_compiled_call_does_not_fit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A compiled Lloyd function of another signature (another scikit-learn) is not fatal:
    :func:`lloyd` then runs its numpy steps, bit for bit what they give switched on alone."""
    from privgauss.mixture import weighted_kmeans

    def other_signature(X, sample_weight, centers_init, n_clusters):  # type: ignore[no-untyped-def]
        raise AssertionError("not reached")

    rng = np.random.default_rng(8)
    points = rng.standard_normal((500, 3)) + rng.integers(0, 3, (500, 1)) * 4.0
    weights = rng.uniform(0.5, 2.0, 500)
    monkeypatch.setattr(weighted_kmeans, "_compiled_lloyd", other_signature)
    got = weighted_kmeans.lloyd(points, weights, 3, np.random.default_rng(2))
    monkeypatch.setattr(weighted_kmeans, "COMPILED_LLOYD", False)
    want = weighted_kmeans.lloyd(points, weights, 3, np.random.default_rng(2))
    for a, b in zip(got[:2], want[:2], strict=True):
        np.testing.assert_array_equal(a, b)
    assert got[2] == want[2]


def test_weighted_draw_is_the_generators_choice() -> None:
    """k-means++ seeding's :func:`~privgauss.mixture.weighted_kmeans.weighted_draw` is
    ``rng.choice(len(p), p=p)`` — the same index and the generator in the same state after
    it — on skewed, sparse and one-point weights, and falls back to ``choice`` (raising as
    it does) on probabilities that are not."""
    from privgauss.mixture.weighted_kmeans import weighted_draw

    src = np.random.default_rng(3)
    cases = [src.random(22_000), src.pareto(0.7, 5_000), np.r_[np.zeros(50), 1.0, np.zeros(9)],
             (src.random(300) < 0.05) * src.random(300) + 0.0, np.ones(1)]
    for q in cases:
        if q.sum() <= 0:
            continue
        p = q / q.sum()
        a, b = np.random.default_rng(11), np.random.default_rng(11)
        for _ in range(300):
            assert weighted_draw(a, p) == int(b.choice(len(p), p=p))
        assert a.bit_generator.state == b.bit_generator.state
    for bad in (np.array([0.5, np.nan, 0.5]), np.array([1.5, -0.5])):
        with pytest.raises(ValueError):
            weighted_draw(np.random.default_rng(0), bad)


def test_summary_repair_is_the_repair_to_rounding_and_decides_per_restart() -> None:
    """The summary EM's covariances skip the eigendecomposition only where the repair would
    change nothing but rounding: restarts whose matrices are all inside [lo, 1e4] equal
    :func:`repair_covariance`'s to 1e-13 relative and are sym(S) exactly; a restart with a
    matrix below the floor or above the cap is repaired as before, bit for bit, and does not
    drag the other restarts into the repair; a NaN raises the repair's error, as before."""
    from privgauss.linalg import sym
    from privgauss.mixture import em_starts as es

    rng = np.random.default_rng(4)
    k, d, m = 3, 6, 4
    A = rng.standard_normal((m * k, d, d))
    S = A @ np.swapaxes(A, 1, 2) / d + 0.05 * np.eye(d)
    S += 1e-13 * rng.standard_normal(S.shape)  # not exactly symmetric
    got = es._summary_repair(S, 1e-3, k)
    np.testing.assert_array_equal(got, sym(S))
    ref = es.repair_covariance(S, 1e-3)
    assert np.abs(got - ref).max() <= 1e-13 * np.abs(ref).max()
    bad = S.copy()
    bad[4] = np.diag([1e-5] + [1.0] * (d - 1))  # restart 1: an eigenvalue under lo
    bad[9] = np.diag([2e4] + [1.0] * (d - 1))  # restart 3: above the cap
    got = es._summary_repair(bad, 1e-3, k)
    np.testing.assert_array_equal(got[:3], sym(bad[:3]))  # restarts 0 and 2 untouched
    np.testing.assert_array_equal(got[6:9], sym(bad[6:9]))
    for i in (1, 3):
        np.testing.assert_array_equal(got[i * k : (i + 1) * k],
                                      es.repair_covariance(bad[i * k : (i + 1) * k], 1e-3))
    assert np.linalg.eigvalsh(got[4])[0] == pytest.approx(1e-3)
    assert np.linalg.eigvalsh(got[9])[-1] == pytest.approx(1e4)
    assert np.isfinite(got).all()
    bad[7, 0, 0] = np.nan  # not finite: the repair's own error, as before
    with pytest.raises(np.linalg.LinAlgError):
        es.repair_covariance(bad, 1e-3)
    with pytest.raises(np.linalg.LinAlgError):
        es._summary_repair(bad, 1e-3, k)


@pytest.mark.parametrize("k,steps", [(3, 2), (9, 3), (3, 300), (9, 300)])
def test_compiled_steps_are_scikit_learns_lloyd_bit_for_bit(k: int, steps: int) -> None:
    """:func:`lloyd` from given centres runs scikit-learn's ``_kmeans_single_lloyd`` and ends at
    its centres bit for bit — still moving at the cap (2, 3) and converged (300); the wrong
    weights (unclipped), points or step count handed over would move them."""
    from privgauss.mixture import weighted_kmeans

    try:
        from sklearn.cluster._kmeans import _kmeans_single_lloyd
    except ImportError:  # pragma: no cover
        pytest.skip("scikit-learn's Lloyd is not importable")
    rng = np.random.default_rng(k * 1000 + steps)
    # grid-like cells with many near-ties, blobs of weights (some 0), as the start's cells
    points = np.round(rng.standard_normal((6000, 10)) * 3.0) / 3.0
    points += rng.integers(0, 3, (6000, 1)) * 1.5
    weights = rng.uniform(0.0, 3.0, 6000)
    weights[::5] = 0.0
    init = points[rng.choice(6000, k, replace=False)]
    want = _kmeans_single_lloyd(points, weights, init.copy(), max_iter=steps, tol=0.0,
                                n_threads=1)
    got, _, _ = weighted_kmeans.lloyd(points, weights, k, np.random.default_rng(0),
                                      init=init.copy(), iters=steps)
    np.testing.assert_array_equal(got, want[2])
    if steps == 300:
        assert want[3] < 300  # converged: the stopping rule was exercised
    else:
        assert want[3] == steps


@pytest.mark.parametrize("k,restarts", [(3, 1), (9, 2), (4, 0)])
def test_best_kmeans_variances_are_the_winning_runs_own(k: int, restarts: int) -> None:
    """:func:`best_kmeans` computes the variances of its winning run only: the centres and
    variances are bit for bit those of the least-inertia run of :func:`lloyd` (variances on),
    run by run from the same generator, which ends in the same state."""
    from privgauss.mixture.weighted_kmeans import best_kmeans, lloyd

    rng = np.random.default_rng(k + 10 * restarts)
    points = rng.standard_normal((3000, 6)) + rng.integers(0, 5, (3000, 1)) * 2.0
    weights = rng.uniform(0.0, 2.0, 3000)
    init = points[:k] + 0.1
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    C, var = best_kmeans(points, weights, k, a, init, restarts)
    runs = [lloyd(points, weights, k, b, init=start) for start in [init] + [None] * restarts]
    inertias = [r[2] for r in runs]
    win = runs[int(np.argmin(inertias))]  # first of equal inertias, as best_kmeans keeps it
    np.testing.assert_array_equal(C, win[0])
    np.testing.assert_array_equal(var, win[1])
    assert a.bit_generator.state == b.bit_generator.state
    assert restarts == 0 or len(set(inertias)) > 1  # seedings differ: the pick was exercised


def test_frame_starts_labels_from_the_winning_runs_distances(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """:func:`frame_starts` labels the cells by the winning k-means run's own distances: the
    starts and the generator are bit for bit those of labelling by fresh distances (forced
    here by hiding the run's distances), on weighted cells and on cells of no weight."""
    from privgauss.mixture import em_starts

    rng = np.random.default_rng(4)
    V = np.linalg.qr(rng.standard_normal((5, 3)))[0]
    cells = (rng.standard_normal((800, 3)) + rng.integers(0, 3, (800, 1)) * 2.0) @ V.T
    raw = np.diag([1.0, 3.0, 0.5, 2.0, 1.0])
    frames = [(raw, 1), (np.eye(5), 0)]
    real = em_starts.best_run

    def hidden(*args: object, **kw: object) -> object:
        C, D, prepared = real(*args, **kw)  # type: ignore[arg-type]
        return C, D[:, :1], (prepared[0][:1], *prepared[1:])

    for wts in (rng.uniform(0.0, 5.0, 800), np.zeros(800)):
        a, b = np.random.default_rng(1), np.random.default_rng(1)
        got = em_starts.frame_starts(cells, wts, V, 0.2, 3, a, frames)
        monkeypatch.setattr(em_starts, "best_run", hidden)
        want = em_starts.frame_starts(cells, wts, V, 0.2, 3, b, frames)
        monkeypatch.setattr(em_starts, "best_run", real)
        assert a.bit_generator.state == b.bit_generator.state
        for x, y in zip(got, want, strict=True):
            for u, v in zip(x, y, strict=True):
                np.testing.assert_array_equal(u, v)
