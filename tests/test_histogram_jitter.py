"""The bound-free route's jitter (gaussian/ridge.py, used by gaussian/histogram.py) vanishes
with the budget fast enough that a near-singular Gaussian table converges to np.cov at a huge
budget (issue 26), and the jitter itself is data-independent (a neighbour's rows move only
in the replaced row, so every downstream sensitivity holds)."""

from __future__ import annotations

import math
import warnings

import numpy as np

import privgauss as pg
from privgauss.gaussian import histogram_budget as hist
from privgauss.gaussian.ridge import transform_jittered


def _collinear_table(seed: int, n: int = 500, d: int = 25) -> tuple[np.ndarray, np.ndarray]:
    """(n training rows, 2,000 held-out rows) of a Gaussian whose correlation eigenvalues run
    from 1 down to 1e-5 (near-collinear columns) and whose scales span 1e-2 .. 1e3."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    C = (Q * np.logspace(0, -5, d)) @ Q.T
    scale = np.logspace(-2, 3, d)
    C = C * scale[:, None] * scale[None, :]
    X = rng.multivariate_normal(10.0 * scale * rng.standard_normal(d), C, size=n + 2000)
    return X[:n], X[n:]


def _kl_to_np_cov(train: np.ndarray, cov: np.ndarray) -> float:
    """KL(N(0, np.cov) || N(0, cov)) in nats: scale free, 0 only at np.cov itself."""
    S = np.cov(train, rowvar=False)
    Li = np.linalg.inv(np.linalg.cholesky(S))
    w = np.linalg.eigvalsh(Li @ cov @ Li.T)
    return float(0.5 * (np.sum(1.0 / w) - w.size + np.sum(np.log(w))))


def test_near_singular_gaussian_converges_to_np_cov_at_a_huge_budget() -> None:
    """n = 500, d = 25, correlation eigenvalues to 1e-5, ε = 1e4: the fit is within 0.015 nat
    of np.cov's Gaussian (KL of the covariances; measured 0.0078-0.0081 over seeds 0-4, the
    noise's share at this n·√ρ) and its held-out log-likelihood within 0.03 nat/row (measured
    0.001-0.017). With the jitter η² ∝ 1/(n√ρ) (before budget_condition's n·ρ term) the KL
    was 0.11-0.35 and the held-out gap 0.11-0.39 nat/row: the jitter's cross terms with the
    rows, not the noise, set the error."""
    for seed in range(2):
        train, test = _collinear_table(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = pg.PrivateGaussian(epsilon=1e4, delta=1e-6, random_state=seed).fit(train)
        assert g.method_ == "histogram"
        assert _kl_to_np_cov(train, g.covariance_) <= 0.015
        ref = pg.metrics.gaussian_logpdf(test, train.mean(axis=0), np.cov(train, rowvar=False))
        assert float(np.mean(ref - g.score_samples(test))) <= 0.03


def test_budget_condition_keeps_the_users_value_at_eps_1_and_grows_with_n_rho() -> None:
    """At ε = 1 (ρ ≈ 0.017 for the refinement) the n·ρ term stays below the n·√ρ one up to
    n = 1e6 (the user's 100 stands to n ≈ 7.7e5), so fits at ε = 1 are unchanged; at a huge
    budget the condition (and so 1/η²) grows like n·ρ, up to its cap."""
    for n in (3_000, 100_000, 1_000_000):
        assert hist.budget_condition(100.0, n, 0.017) == max(100.0, 1e-3 * n * math.sqrt(0.017))
    assert math.isclose(hist.budget_condition(100.0, 500, 9000.0), 9000.0)
    assert math.isclose(hist.budget_condition(100.0, 500, 4 * 9000.0), 4 * 9000.0)
    assert hist.budget_condition(100.0, 10**9, 1e8) == hist._MAX_BUDGET_CONDITION


def test_jitter_is_data_independent_between_neighbours() -> None:
    """The jittered rows of two neighbouring tables (one row replaced by adversarial values:
    huge, tiny, on the jitter's own sign pattern) differ in that row only, and there by the
    mapped rows' difference: the jitter adds the same public-noise vector to every other row,
    so each clipped statistic's sensitivity is that of the rows without it."""
    rng = np.random.default_rng(3)
    n, d = 300, 6
    X = rng.standard_normal((n, d)) * 5.0 + 2.0
    a, shift, eta, seed = 1.0 / np.arange(1.0, d + 1.0), np.full(d, 2.0), 0.3, 12345
    base = transform_jittered(X, a, shift, eta, seed)
    assert base is not None
    signs = np.sign(base - (X - shift) * a)
    adversarial = [(0, np.full(d, 1e12)), (n // 2, np.zeros(d)),
                   (n - 1, shift - 7.0 * signs[n - 1])]  # huge, zero, against its own signs
    for k, row in adversarial:
        Y = X.copy()
        Y[k] = row
        other = transform_jittered(Y, a, shift, eta, seed)
        assert other is not None
        diff = np.abs(other - base).max(axis=1)
        assert np.all(diff[np.arange(n) != k] == 0.0)
        np.testing.assert_allclose(other[k] - base[k], (row - X[k]) * a, rtol=1e-12, atol=1e-9)
