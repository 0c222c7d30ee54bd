import itertools
import math

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.stats import multivariate_normal, norm

from privgauss.exceptions import InvalidDataError
from privgauss.linalg import inv_sqrtm_psd, sym
from privgauss.metrics import (
    MixtureError,
    TVEstimate,
    component_distance,
    covariance_error,
    gaussian_logpdf,
    hellinger_distance,
    mahalanobis_mean_error,
    match_components,
    mean_error,
    mixture_error,
    mixture_tv_distance,
    tv_distance,
    tv_distance_1d,
)


def _random_pd(d, rng, kappa=10.0):
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return sym((Q * np.logspace(0, np.log10(kappa), d)) @ Q.T)


def _tv_quad(m1, s1, m2, s2):
    """Reference TV by numerical integration of |p - q| / 2, split at the crossing points."""
    a = 1 / (2 * s2**2) - 1 / (2 * s1**2)
    b = m1 / s1**2 - m2 / s2**2
    c = m2**2 / (2 * s2**2) - m1**2 / (2 * s1**2) + math.log(s2 / s1)
    roots = [float(r.real) for r in np.roots([a, b, c]) if abs(r.imag) < 1e-12] if a else []
    lo = min(m1 - 40 * s1, m2 - 40 * s2)
    hi = max(m1 + 40 * s1, m2 + 40 * s2)
    pts = sorted({lo, hi, m1, m2, *(r for r in roots if lo < r < hi)})
    f = lambda x: abs(norm.pdf(x, m1, s1) - norm.pdf(x, m2, s2)) / 2  # noqa: E731
    return sum(
        quad(f, u, v, epsabs=1e-13, epsrel=1e-12, limit=200)[0] for u, v in itertools.pairwise(pts)
    )


# ----------------------------------------------------------------------------- parameter errors


def test_mean_errors():
    assert mean_error([3.0, 4.0], [0.0, 0.0]) == 5.0
    cov = np.diag([4.0, 9.0])
    assert mahalanobis_mean_error([2.0, 3.0], [0.0, 0.0], cov) == pytest.approx(math.sqrt(2))
    rng = np.random.default_rng(0)
    C = _random_pd(4, rng)
    a, b = rng.standard_normal(4), rng.standard_normal(4)
    ref = np.linalg.norm(inv_sqrtm_psd(C) @ (a - b))
    assert mahalanobis_mean_error(a, b, C) == pytest.approx(ref, rel=1e-10)
    with pytest.raises(ValueError, match="shape mismatch"):
        mean_error([1.0], [1.0, 2.0])


def test_covariance_error_matches_definition():
    rng = np.random.default_rng(1)
    for d in (1, 3, 6):
        C = _random_pd(d, rng, kappa=100)
        H = _random_pd(d, rng, kappa=5)
        S = inv_sqrtm_psd(C)
        ref = np.linalg.norm(S @ H @ S - np.eye(d))
        assert covariance_error(H, C) == pytest.approx(ref, rel=1e-9)
    assert covariance_error(C, C) == pytest.approx(0.0, abs=1e-12)
    assert covariance_error(2.0 * np.eye(3), np.eye(3)) == pytest.approx(math.sqrt(3))


def test_gaussian_logpdf_vs_scipy():
    rng = np.random.default_rng(2)
    C = _random_pd(5, rng, kappa=30)
    m = rng.standard_normal(5)
    X = rng.standard_normal((200, 5)) * 3
    np.testing.assert_allclose(
        gaussian_logpdf(X, m, C), multivariate_normal(m, C).logpdf(X), rtol=1e-10
    )


# ----------------------------------------------------------------------------- exact 1-D TV

GRID = [
    (m1, s1, m2, s2)
    for m1, m2 in [(0.0, 0.0), (0.0, 0.5), (1.0, -2.0), (0.0, 7.0), (-3.0, 3.1)]
    for s1, s2 in [(1.0, 1.0), (1.0, 1.1), (0.5, 2.0), (3.0, 0.2), (1.0, 1.0 + 1e-6)]
    if (m1, s1) != (m2, s2)
]


@pytest.mark.parametrize(("m1", "s1", "m2", "s2"), GRID)
def test_tv_1d_exact_vs_quad(m1, s1, m2, s2):
    tv = tv_distance_1d(m1, s1, m2, s2)
    assert tv == pytest.approx(_tv_quad(m1, s1, m2, s2), abs=1e-8)
    assert tv_distance_1d(m2, s2, m1, s1) == pytest.approx(tv, abs=1e-15)  # symmetric
    # Affine invariance.
    assert tv_distance_1d(5 + 2 * m1, 2 * s1, 5 + 2 * m2, 2 * s2) == pytest.approx(tv, abs=1e-12)


def test_tv_1d_special_values():
    assert tv_distance_1d(0, 1, 0, 1) == 0.0
    assert tv_distance_1d(0, 1, 2, 1) == pytest.approx(2 * norm.cdf(1.0) - 1, abs=1e-15)
    assert tv_distance_1d(0, 1, 100, 1) == 1.0
    assert tv_distance_1d(0, 1e-3, 0, 1e3) == pytest.approx(1.0, abs=1e-4)
    # Continuity at equal variances.
    assert tv_distance_1d(0, 1, 1, 1 + 1e-12) == pytest.approx(tv_distance_1d(0, 1, 1, 1), abs=1e-9)
    for bad in [(0, 0, 0, 1), (0, -1, 0, 1), (math.nan, 1, 0, 1), (0, 1, 0, math.inf)]:
        with pytest.raises(ValueError):
            tv_distance_1d(*bad)


# ----------------------------------------------------------------------------- Monte Carlo TV


def test_tv_distance_1d_input_is_exact():
    est = tv_distance([0.0], [[1.0]], [1.0], [[4.0]])
    assert isinstance(est, TVEstimate)
    exact = tv_distance_1d(0, 1, 1, 2)
    assert est.estimate == est.lower == est.upper == exact


@pytest.mark.parametrize(
    ("m2", "c2", "exact"),
    [
        ([1.0, 0.0], np.eye(2), tv_distance_1d(0, 1, 1, 1)),
        ([0.0, 0.0], np.diag([4.0, 1.0]), tv_distance_1d(0, 1, 0, 2)),
        ([0.0, 0.3], np.diag([1.0, 0.25]), tv_distance_1d(0, 1, 0.3, 0.5)),
    ],
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mc_tv_ci_contains_exact(m2, c2, exact, seed):
    # The second coordinate (or first) is shared, so the 2-D TV equals a 1-D exact TV.
    # Rotate both distributions: TV is invariant, and the test covers correlated covariances.
    rng = np.random.default_rng(100 + seed)
    Q, _ = np.linalg.qr(rng.standard_normal((2, 2)))
    est = tv_distance(
        np.zeros(2),
        np.eye(2),
        Q @ np.array(m2),
        Q @ c2 @ Q.T,
        n_samples=50_000,
        random_state=seed,
        confidence=0.999,
    )
    assert est.lower <= exact <= est.upper
    assert est.upper - est.lower < 0.02
    assert 0.0 <= est.lower <= est.estimate <= est.upper <= 1.0


def test_mc_tv_identical_and_reproducible():
    C = np.array([[2.0, 0.5], [0.5, 1.0]])
    assert tv_distance([1, 2], C, [1, 2], C, random_state=0).estimate == 0.0
    a = tv_distance([0, 0], np.eye(2), [1, 1], C, random_state=5, n_samples=1000)
    b = tv_distance([0, 0], np.eye(2), [1, 1], C, random_state=5, n_samples=1000)
    assert a == b


def test_mc_tv_halfwidth_at_most_hoeffding():
    n = 200
    est = tv_distance([0, 0], np.eye(2), [1, 0], np.eye(2), n_samples=n, random_state=3)
    hoeff = math.sqrt(math.log(2 / 0.05) / (2 * n))
    assert est.upper - est.estimate <= hoeff + 1e-15
    assert est.estimate - est.lower <= hoeff + 1e-15


def test_mc_tv_rejects_singular():
    with pytest.raises(InvalidDataError, match="not positive definite"):
        tv_distance([0, 0], np.diag([1.0, 0.0]), [0, 0], np.eye(2))


@pytest.mark.parametrize("seed", range(4))
def test_hellinger_sandwich_vs_mc_tv(seed):
    rng = np.random.default_rng(seed)
    m1, m2 = rng.standard_normal(2), rng.standard_normal(2)
    C1, C2 = _random_pd(2, rng, kappa=4), _random_pd(2, rng, kappa=4)
    H = hellinger_distance(m1, C1, m2, C2)
    ub = component_distance(m1, C1, m2, C2)
    est = tv_distance(m1, C1, m2, C2, n_samples=50_000, random_state=seed, confidence=0.999)
    assert H**2 <= est.upper
    assert est.lower <= ub <= math.sqrt(2) * H + 1e-15
    assert ub == pytest.approx(H * math.sqrt(2 - H**2), rel=1e-12)


@pytest.mark.parametrize(("m1", "s1", "m2", "s2"), [(0, 1, 1, 1), (0, 1, 0, 3), (1, 0.5, -1, 2)])
def test_hellinger_closed_form_vs_quad_1d(m1, s1, m2, s2):
    def root_pq(x):
        return math.sqrt(norm.pdf(x, m1, s1) * norm.pdf(x, m2, s2))

    bc = quad(root_pq, -50, 50, points=[m1, m2], limit=200)[0]
    assert hellinger_distance(m1, s1**2, m2, s2**2) == pytest.approx(math.sqrt(1 - bc), abs=1e-9)
    assert hellinger_distance([0, 0], np.eye(2), [0, 0], np.eye(2)) == 0.0
    assert hellinger_distance([0, 0], np.eye(2), [100, 0], np.eye(2)) == 1.0


# ----------------------------------------------------------------------------- mixture TV


def _mixture_tv_quad(w1, m1, s1, w2, m2, s2):
    p = lambda x: sum(w * norm.pdf(x, m, s) for w, m, s in zip(w1, m1, s1, strict=True))  # noqa: E731
    q = lambda x: sum(w * norm.pdf(x, m, s) for w, m, s in zip(w2, m2, s2, strict=True))  # noqa: E731
    pts = sorted(set(m1) | set(m2))
    return quad(lambda x: abs(p(x) - q(x)) / 2, -40, 40, points=pts, limit=400)[0]


def test_mixture_tv_vs_quad_1d():
    w1, m1, s1 = [0.3, 0.7], [-2.0, 1.0], [1.0, 0.5]
    w2, m2, s2 = [0.5, 0.5], [-1.5, 1.5], [0.8, 1.0]
    exact = _mixture_tv_quad(w1, m1, s1, w2, m2, s2)
    for seed in range(3):
        est = mixture_tv_distance(
            w1,
            m1,
            np.square(s1),
            w2,
            m2,
            np.square(s2),
            n_samples=40_000,
            random_state=seed,
            confidence=0.999,
        )
        assert est.lower <= exact <= est.upper


def test_mixture_tv_single_component_and_permutation():
    rng = np.random.default_rng(9)
    C = np.stack([_random_pd(3, rng), _random_pd(3, rng)])
    M = rng.standard_normal((2, 3)) * 4
    w = np.array([0.25, 0.75])
    same = mixture_tv_distance(w, M, C, w[::-1], M[::-1], C[::-1], n_samples=5000, random_state=0)
    assert same.estimate < 1e-12
    # One component each: agrees with the Gaussian TV (overlapping intervals).
    one = mixture_tv_distance(
        [1.0], M[:1], C[:1], [1.0], M[1:], C[1:], n_samples=20_000, random_state=4
    )
    g = tv_distance(M[0], C[0], M[1], C[1], n_samples=20_000, random_state=7)
    assert max(one.lower, g.lower) <= min(one.upper, g.upper)
    with pytest.raises(ValueError, match="sum to 1"):
        mixture_tv_distance([0.5, 0.6], M, C, w, M, C)


# ----------------------------------------------------------------------------- matching


def _permuted_mixture(k, d, seed, noise=0.05):
    rng = np.random.default_rng(seed)
    means = rng.standard_normal((k, d)) * 10
    covs = np.stack([_random_pd(d, rng, kappa=3) for _ in range(k)])
    weights = rng.dirichlet(np.ones(k))
    perm = rng.permutation(k)  # estimate i corresponds to true component perm[i]
    means_hat = means[perm] + noise * rng.standard_normal((k, d))
    covs_hat = covs[perm] * (1 + noise * rng.uniform(-1, 1, size=(k, 1, 1)))
    weights_hat = weights[perm]
    inverse = np.argsort(perm)  # true j is estimate inverse[j]
    return (weights_hat, means_hat, covs_hat), (weights, means, covs), inverse


@pytest.mark.parametrize("method", ["hungarian", "minmax"])
@pytest.mark.parametrize(("k", "d", "seed"), [(2, 1, 0), (5, 3, 1), (9, 2, 2), (12, 4, 3)])
def test_match_recovers_permutation(method, k, d, seed):
    (wh, mh, ch), (w, m, c), inverse = _permuted_mixture(k, d, seed)
    perm = match_components(mh, m, ch, c, method=method)
    np.testing.assert_array_equal(perm, inverse)
    np.testing.assert_array_equal(match_components(mh, m, method=method), inverse)
    np.testing.assert_allclose(mh[perm], m, atol=0.5)


def test_minmax_differs_from_hungarian():
    # Costs: identity matching = (1, 7.81) (sum 8.81), swap = (5, 5) (sum 10).
    means_true = np.array([[0.0, 0.0], [6.0, 0.0]])
    means_hat = np.array([[1.0, 0.0], [0.0, 5.0]])
    np.testing.assert_array_equal(match_components(means_hat, means_true), [0, 1])
    np.testing.assert_array_equal(match_components(means_hat, means_true, method="minmax"), [1, 0])


def test_minmax_brute_force_agreement():
    rng = np.random.default_rng(11)
    for _ in range(20):
        k = int(rng.integers(2, 7))
        mt, mh = rng.standard_normal((k, 2)), rng.standard_normal((k, 2))
        cost = np.linalg.norm(mt[:, None] - mh[None], axis=2)
        best = min(max(cost[j, p[j]] for j in range(k)) for p in itertools.permutations(range(k)))
        perm = match_components(mh, mt, method="minmax")
        assert sorted(perm) == list(range(k))
        assert max(cost[j, perm[j]] for j in range(k)) == pytest.approx(best, abs=1e-15)
        hung = match_components(mh, mt)
        best_sum = min(
            sum(cost[j, p[j]] for j in range(k)) for p in itertools.permutations(range(k))
        )
        assert sum(cost[j, hung[j]] for j in range(k)) == pytest.approx(best_sum, rel=1e-12)


def test_match_fewer_estimated_components():
    means_true = np.array([[0.0], [10.0], [20.0]])
    perm = match_components(np.array([[19.5], [0.2]]), means_true)
    np.testing.assert_array_equal(perm, [1, -1, 0])
    with pytest.raises(ValueError, match="method"):
        match_components(means_true, means_true, method="greedy")
    with pytest.raises(ValueError, match="both"):
        match_components(means_true, means_true, covs_hat=np.ones((3, 1, 1)))


# ----------------------------------------------------------------------------- mixture_error


def test_mixture_error_exact_estimate():
    (wh, mh, ch), (w, m, c), inverse = _permuted_mixture(4, 3, 5, noise=0.0)
    res = mixture_error(wh, mh, ch, w, m, c)
    assert isinstance(res, MixtureError)
    np.testing.assert_array_equal(res.permutation, inverse)
    assert res.weight_error == 0.0
    np.testing.assert_allclose(res.component_tv, 0.0, atol=1e-7)
    np.testing.assert_allclose(res.mean_errors, 0.0, atol=1e-12)
    np.testing.assert_allclose(res.covariance_errors, 0.0, atol=1e-12)
    assert res.component_tv_mc is None


def test_mixture_error_values_and_mc():
    (wh, mh, ch), (w, m, c), inverse = _permuted_mixture(3, 2, 6, noise=0.3)
    res = mixture_error(wh, mh, ch, w, m, c, mc=True, n_samples=20_000, random_state=0)
    for j in range(3):
        i = inverse[j]
        assert res.mean_errors[j] == pytest.approx(mahalanobis_mean_error(mh[i], m[j], c[j]))
        assert res.covariance_errors[j] == pytest.approx(covariance_error(ch[i], c[j]))
        assert res.component_tv[j] == pytest.approx(component_distance(m[j], c[j], mh[i], ch[i]))
        H = hellinger_distance(m[j], c[j], mh[i], ch[i])
        assert H**2 - 0.02 <= res.component_tv_mc[j] <= res.component_tv[j] + 0.02
    assert res.max_component_tv == res.component_tv.max()
    assert res.weight_error == 0.0


def test_mixture_error_missing_component():
    w = np.array([0.2, 0.3, 0.5])
    m = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    c = np.stack([np.eye(2)] * 3)
    wh = np.array([0.45, 0.55])
    res = mixture_error(wh, m[[2, 0]], c[:2], w, m, c, method="minmax")
    np.testing.assert_array_equal(res.permutation, [1, -1, 0])
    assert res.component_tv[1] == 1.0 and res.max_component_tv == 1.0
    assert np.isinf(res.mean_errors[1]) and np.isinf(res.covariance_errors[1])
    # Matched pairs: |0.2 - 0.55| and |0.5 - 0.45|; unmatched true component: 0.3.
    assert res.weight_error == pytest.approx(0.35)
