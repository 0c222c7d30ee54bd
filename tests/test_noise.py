"""Tests of privgauss.noise: every sampler, secure (OpenDP) and fast (seeded numpy), against its
target distribution.

Each goodness-of-fit test asserts a p-value above 1e-6, so a correct sampler fails one of them
with probability at most 1e-6 (the fast ones never, as their seeds are fixed). Secure samplers
cost ~20-70 µs per draw, so their tests use at most ~20k draws.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from privgauss.noise import NoiseSource, as_noise

ALPHA = 1e-6
FAST_N = 100_000
SECURE_N = 20_000


def _fast(seed: int = 0) -> NoiseSource:
    return NoiseSource(seed)


def _chisq_pvalue(samples: np.ndarray, pmf: Callable[[np.ndarray], np.ndarray]) -> float:
    """Chi-square goodness of fit of integer ``samples`` to a pmf symmetric about 0: one cell
    per integer k with |k| < m, and the two tails {k ≤ −m}, {k ≥ m}, where m is the smallest
    integer whose tail holds at least 5 expected draws."""
    samples = np.asarray(samples)
    n = samples.size
    m = 1
    while n * (1.0 - pmf(np.arange(-m + 1, m)).sum()) / 2 >= 5:
        m += 1
    m -= 1
    assert m >= 1, "too few draws for a chi-square test"
    inner = np.arange(-m + 1, m)
    p = pmf(inner)
    tail = (1.0 - p.sum()) / 2
    observed = np.concatenate(
        [[np.sum(samples <= -m)], [np.sum(samples == k) for k in inner], [np.sum(samples >= m)]]
    )
    expected = n * np.concatenate([[tail], p, [tail]])
    return float(stats.chisquare(observed, expected).pvalue)


# ------------------------------------------------------------------------------------------
# construction
# ------------------------------------------------------------------------------------------


def test_random_state_kinds() -> None:
    secure = NoiseSource(None)
    assert secure.secure and isinstance(secure.rng, np.random.Generator)
    fast = NoiseSource(7)
    assert not fast.secure
    gen = np.random.default_rng(3)
    from_gen = NoiseSource(gen)
    assert not from_gen.secure and from_gen.rng is gen
    assert NoiseSource(np.int64(7)).rng.random() == NoiseSource(7).rng.random()
    shared = NoiseSource(fast)
    assert shared.rng is fast.rng and not shared.secure
    assert as_noise(fast) is fast
    assert as_noise(None).secure and not as_noise(5).secure
    assert "secure=True" in repr(secure)
    for bad in (True, 1.5, "0", [0]):
        with pytest.raises(TypeError, match="random_state"):
            NoiseSource(bad)


def test_fast_noise_is_reproducible_and_secure_noise_is_not() -> None:
    a = NoiseSource(11).gaussian(np.zeros(5), 1.0)
    b = NoiseSource(11).gaussian(np.zeros(5), 1.0)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, NoiseSource(12).gaussian(np.zeros(5), 1.0))
    s1 = NoiseSource(None).gaussian(np.zeros(5), 1.0)
    s2 = NoiseSource(None).gaussian(np.zeros(5), 1.0)
    assert not np.array_equal(s1, s2)
    assert NoiseSource(None).rng.integers(2**62) != NoiseSource(None).rng.integers(2**62)


@pytest.mark.parametrize("secure", [False, True])
def test_scale_zero_returns_an_exact_copy(secure: bool) -> None:
    src = NoiseSource(None if secure else 0)
    x = np.array([[1.5, -2.0], [3.0, 4.25]])
    keep = x.copy()
    for out in (
        src.gaussian(x, 0.0),
        src.laplace(x, 0.0),
        src.truncated_laplace(x, 0.0, 1.0),
        src.symmetric(x + x.T, 0.0),
    ):
        assert out is not x
        assert out.shape == x.shape
    np.testing.assert_array_equal(src.gaussian(x, 0.0), x)
    np.testing.assert_array_equal(src.symmetric(x + x.T, 0.0), x + x.T)
    counts = np.array([3, 0, 7])
    np.testing.assert_array_equal(src.integer_laplace(counts, 0.0), counts)
    np.testing.assert_array_equal(src.integer_gaussian(counts, 0.0), counts)
    assert src.noisy_argmax([0.0, 5.0, 1.0], 0.0) == 1
    np.testing.assert_array_equal(x, keep)


@pytest.mark.parametrize("secure", [False, True])
def test_shapes_dtypes_and_no_mutation(secure: bool) -> None:
    src = NoiseSource(None if secure else 1)
    x = np.arange(6, dtype=float).reshape(2, 3)
    keep = x.copy()
    for out in (src.gaussian(x, 1.0), src.laplace(x, 1.0), src.truncated_laplace(x, 1.0, 2.0)):
        assert out.shape == (2, 3) and out.dtype == np.float64
        assert np.all(out != x)  # noise was added everywhere
    np.testing.assert_array_equal(x, keep)
    c = np.arange(6).reshape(3, 2)
    for out in (src.integer_laplace(c, 2.0), src.integer_gaussian(c, 2.0)):
        assert out.shape == (3, 2) and np.issubdtype(out.dtype, np.integer)
    assert np.shape(src.gaussian(1.0, 1.0)) == ()
    with pytest.raises(ValueError):
        src.noisy_argmax([], 1.0)
    with pytest.raises(ValueError):
        src.truncated_laplace(x, 1.0, 0.0)


def test_secure_noise_rejects_non_finite_values() -> None:
    src = NoiseSource(None)
    for bad in (np.array([123.456, np.nan]), np.array([np.inf])):
        with pytest.raises(ValueError, match="non-finite") as info:
            src.gaussian(bad, 1.0)
        assert "123.456" not in str(info.value)  # no data in the message
        with pytest.raises(ValueError, match="non-finite"):
            src.laplace(bad, 1.0)
    with pytest.raises(ValueError, match="non-finite"):
        src.noisy_argmax([0.0, np.nan], 1.0)


# ------------------------------------------------------------------------------------------
# continuous samplers: Kolmogorov–Smirnov
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("secure", [False, True])
def test_gaussian_ks(secure: bool) -> None:
    n, scale, shift = (SECURE_N, 2.5, 3.25) if secure else (FAST_N, 2.5, 3.25)
    src = NoiseSource(None if secure else 1)
    z = (src.gaussian(np.full(n, shift), scale) - shift) / scale
    assert stats.kstest(z, "norm").pvalue > ALPHA
    # the scale is really scale: a 15% wrong one is rejected
    assert stats.kstest(z * 1.15, "norm").pvalue < ALPHA


@pytest.mark.parametrize("secure", [False, True])
def test_laplace_ks(secure: bool) -> None:
    n, scale, shift = (SECURE_N, 0.7, -1.5) if secure else (FAST_N, 0.7, -1.5)
    src = NoiseSource(None if secure else 2)
    z = (src.laplace(np.full(n, shift), scale) - shift) / scale
    assert stats.kstest(z, "laplace").pvalue > ALPHA
    assert stats.kstest(z * 1.15, "laplace").pvalue < ALPHA


def _truncated_laplace_cdf(bound: float, scale: float) -> Callable[[np.ndarray], np.ndarray]:
    lo, hi = stats.laplace.cdf(-bound / scale), stats.laplace.cdf(bound / scale)

    def cdf(x: np.ndarray) -> np.ndarray:
        return np.clip((stats.laplace.cdf(np.asarray(x) / scale) - lo) / (hi - lo), 0.0, 1.0)

    return cdf


@pytest.mark.parametrize("secure", [False, True])
def test_truncated_laplace_ks(secure: bool) -> None:
    scale, bound, shift = 1.3, 2.0, 10.0
    n = 10_000 if secure else FAST_N
    src = NoiseSource(None if secure else 3)
    z = src.truncated_laplace(np.full(n, shift), scale, bound) - shift
    assert np.all(np.abs(z) <= bound)
    assert stats.kstest(z, _truncated_laplace_cdf(bound, scale)).pvalue > ALPHA
    # it is really truncated Laplace, not Laplace nor uniform
    assert stats.kstest(z, _truncated_laplace_cdf(1e6, scale)).pvalue < ALPHA
    assert stats.kstest(z, stats.uniform(-bound, 2 * bound).cdf).pvalue < ALPHA


# ------------------------------------------------------------------------------------------
# integer samplers: chi-square against the exact pmf
# ------------------------------------------------------------------------------------------


def _discrete_laplace_pmf(scale: float) -> Callable[[np.ndarray], np.ndarray]:
    return stats.dlaplace(1.0 / scale).pmf


def _discrete_gaussian_pmf(scale: float) -> Callable[[np.ndarray], np.ndarray]:
    k = int(np.ceil(40 * scale)) + 10
    z = np.arange(-k, k + 1)
    norm = np.exp(-(z**2) / (2 * scale**2)).sum()

    def pmf(x: np.ndarray) -> np.ndarray:
        return np.exp(-(np.asarray(x, dtype=float) ** 2) / (2 * scale**2)) / norm

    return pmf


@pytest.mark.parametrize("secure", [False, True])
@pytest.mark.parametrize("scale", [0.6, 3.0])
def test_integer_laplace_chisquare(secure: bool, scale: float) -> None:
    n = 10_000 if secure else FAST_N
    src = NoiseSource(None if secure else 4)
    z = src.integer_laplace(np.full(n, 5), scale) - 5
    assert np.issubdtype(z.dtype, np.integer)
    assert _chisq_pvalue(z, _discrete_laplace_pmf(scale)) > ALPHA
    assert _chisq_pvalue(z, _discrete_laplace_pmf(scale * 1.15)) < ALPHA


@pytest.mark.parametrize("scale", [0.8, 4.0])
def test_secure_integer_gaussian_chisquare(scale: float) -> None:
    n = 10_000
    z = NoiseSource(None).integer_gaussian(np.full(n, -2), scale) + 2
    assert np.issubdtype(z.dtype, np.integer)
    assert _chisq_pvalue(z, _discrete_gaussian_pmf(scale)) > ALPHA
    assert _chisq_pvalue(z, _discrete_gaussian_pmf(scale * 1.15)) < ALPHA


def test_fast_integer_gaussian_moments() -> None:
    # the fast path rounds a continuous Gaussian: unbiased, variance about scale² + 1/12
    scale, n = 3.0, 400_000
    z = NoiseSource(5).integer_gaussian(np.zeros(n, dtype=int), scale)
    var = scale**2 + 1 / 12
    assert abs(z.mean()) < 5 * np.sqrt(var / n)
    assert abs(z.var() - var) < 5 * var * np.sqrt(2 / n)
    assert stats.skew(z) == pytest.approx(0.0, abs=5 * np.sqrt(6 / n))


# ------------------------------------------------------------------------------------------
# symmetric matrices
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("secure", [False, True])
@pytest.mark.parametrize("kind", ["gaussian", "laplace"])
def test_symmetric_noise(secure: bool, kind: str) -> None:
    d, reps, scale = (16, 60, 0.8) if secure else (30, 400, 0.8)
    src = NoiseSource(None if secure else 6)
    rng = np.random.default_rng(0)
    base = rng.normal(size=(d, d))
    base = base + base.T
    keep = base.copy()
    iu = np.triu_indices(d)
    upper, pairs = [], []
    for _ in range(reps):
        out = src.symmetric(base, scale, kind)
        np.testing.assert_array_equal(out, out.T)  # exactly symmetric
        noise = out - base
        upper.append(noise[iu])
        pairs.append((noise[0, 1], noise[0, 2], noise[1, 1]))
    np.testing.assert_array_equal(base, keep)
    upper = np.concatenate(upper) / scale
    dist = "norm" if kind == "gaussian" else "laplace"
    # entries on and above the diagonal, pooled, follow the target law
    assert stats.kstest(upper, dist).pvalue > ALPHA
    diag = np.concatenate([np.diag(src.symmetric(base, scale, kind) - base) for _ in range(40)])
    assert stats.kstest(diag / scale, dist).pvalue > ALPHA
    # and distinct entries are uncorrelated (independent draws, not copies)
    pairs = np.array(pairs)
    corr = np.corrcoef(pairs.T)
    off = corr[np.triu_indices(3, 1)]
    assert np.all(np.abs(off) < 6 / np.sqrt(reps))


# ------------------------------------------------------------------------------------------
# report noisy max = the exponential mechanism
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("secure", [False, True])
def test_noisy_argmax_is_the_exponential_mechanism(secure: bool) -> None:
    scores = np.array([0.0, 1.0, 2.0, 2.0, -1.0, 0.5])
    scale = 1.0
    # secure draws are slow: at 6,000 of them the chi-square test rejects permute-and-flip
    # (exponential noise) with probability 0.9996 at ALPHA (1.0 at 10,000), the max-share check
    # below with 0.9999; a correct sampler fails either with probability about 1e-6
    n = 6_000 if secure else 60_000
    src = NoiseSource(None if secure else 8)
    picks = np.array([src.noisy_argmax(scores, scale) for _ in range(n)])
    observed = np.bincount(picks, minlength=scores.size)
    probs = np.exp(scores / scale)
    probs /= probs.sum()
    assert stats.chisquare(observed, n * probs).pvalue > ALPHA
    # permute-and-flip (exponential noise) over-selects the maximum: it would be rejected
    assert observed[[2, 3]].sum() / n < probs[[2, 3]].sum() + 5 * np.sqrt(0.25 / n)


def test_noisy_argmax_scale_matters() -> None:
    scores = np.array([0.0, 3.0])
    src = NoiseSource(9)
    n = 20_000
    for scale in (0.5, 3.0):
        hits = sum(src.noisy_argmax(scores, scale) for _ in range(n))
        p = 1 / (1 + np.exp(-3.0 / scale))
        assert stats.binomtest(hits, n, p).pvalue > ALPHA
