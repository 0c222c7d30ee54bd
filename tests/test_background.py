"""The background component (issue #26): a fit that leaves more rows outside its final ball
than a Gaussian would scores rows with the Gaussian mixed with a broad Cauchy of weight
``background_weight_`` (a DP output), so a few gross errors do not rule ``score``."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.stats import multivariate_t

import privgauss as pg
from privgauss.metrics import background_matrix, background_scale, gaussian_logpdf

pytestmark = pytest.mark.filterwarnings("ignore::privgauss.warnings.ClippedDataWarning")


def _split(X: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    idx = np.random.default_rng(seed).permutation(len(X))
    cut = int(0.8 * len(X))
    return X[idx[:cut]], X[idx[cut:]]


def _gross(n: int = 20000, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(50.0, 5.0, size=(n, 3))
    X[rng.random((n, 3)) < 0.005] = 99999.0  # recording errors in 1.5 % of the rows
    return X


def test_gross_errors_do_not_rule_the_score():
    train, test = _split(_gross())
    g = pg.PrivateGaussian(epsilon=1.0, delta=1e-6, random_state=0).fit(train)
    assert 0.005 < g.background_weight_ < 0.04
    rows = g.score_samples(test)
    bad = (test == 99999.0).any(axis=1)
    assert bad.sum() > 20
    # a gross row costs tens of nats, not 1e7 (what the Gaussian alone gives it)
    assert rows[bad].min() > -100.0
    assert gaussian_logpdf(test[bad], g.mean_, g.covariance_).max() < -1e5
    # the typical row loses only about log(1 - w)
    gauss = gaussian_logpdf(test[~bad], g.mean_, g.covariance_)
    assert np.median(gauss - rows[~bad]) < 1.5 * -math.log1p(-g.background_weight_) + 1e-3
    # and the mean held-out score beats np.cov's (whose variance the errors inflate)
    S = np.cov(train.T)
    ref = gaussian_logpdf(test, train.mean(0), S).mean()
    assert g.score(test) > ref


def test_the_mixture_is_the_stated_density():
    train, test = _split(_gross(20000, 1))
    g = pg.PrivateGaussian(epsilon=1.0, delta=1e-6, random_state=1).fit(train)
    w, d = g.background_weight_, 3
    assert w > 0
    k = background_scale(d)
    scale = background_matrix(g.covariance_) * k * k
    cauchy = multivariate_t(g.mean_, scale, df=1).logpdf(test[:50])
    gauss = gaussian_logpdf(test[:50], g.mean_, g.covariance_)
    want = np.logaddexp(math.log1p(-w) + gauss, math.log(w) + cauchy)
    np.testing.assert_allclose(g.score_samples(test[:50]), want, rtol=1e-10, atol=1e-9)
    # the background never peaks above the Gaussian: the model's maximum density is the
    # Gaussian's (what DPScorer clips at)
    assert g.score_samples(g.mean_[None])[0] <= gaussian_logpdf(g.mean_[None], g.mean_,
                                                               g.covariance_)[0] + 1e-12
    # a model file keeps it
    g2 = pg.io.from_dict(g.to_dict())
    assert g2.background_weight_ == w
    np.testing.assert_array_equal(g2.score_samples(test[:50]), g.score_samples(test[:50]))


def test_gaussian_data_get_no_background_worth_scoring():
    ws = []
    for seed in range(6):
        X = np.random.default_rng(seed).normal(size=(20000, 4))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = pg.PrivateGaussian(epsilon=1.0, delta=1e-6, random_state=seed).fit(X)
        ws.append(g.background_weight_)
        gap = gaussian_logpdf(X[:2000], g.mean_, g.covariance_).mean() - g.score(X[:2000])
        assert gap < 0.005
    assert np.median(ws) < 0.003


def test_background_is_broad_in_every_direction():
    """A fit can release a direction far narrower than the rows outside its ball (collinear
    count columns); the background is floored there, keeps the variances, and its
    determinant is no smaller than the fit's (so it still never peaks above the Gaussian)."""
    from privgauss.densities import BACKGROUND_FLOOR
    from privgauss.metrics import background_logpdf

    rng = np.random.default_rng(3)
    A = rng.normal(size=(6, 6))
    C = A @ A.T
    C[np.ix_([0, 1], [0, 1])] = [[1.0, 0.99999], [0.99999, 1.0]]  # a nearly collinear pair
    C[0, 2:] = C[1, 2:] = 0.0
    C[2:, 0] = C[2:, 1] = 0.0
    C *= np.outer([1e-3, 1e-3, 1.0, 10.0, 1e4, 1.0], [1e-3, 1e-3, 1.0, 10.0, 1e4, 1.0])
    B = background_matrix(C)
    np.testing.assert_allclose(np.diag(B), np.diag(C), rtol=1e-12)
    s = np.sqrt(np.diag(C))
    floor = BACKGROUND_FLOOR / (1 + BACKGROUND_FLOOR)
    assert np.linalg.eigvalsh(B / np.outer(s, s)).min() >= floor * (1 - 1e-9)
    assert np.linalg.slogdet(B)[1] >= np.linalg.slogdet(C)[1]
    # a row one column-scale off the collinear line costs tens of nats under the background,
    # not the 1e5 the fit's own Cauchy would charge
    x = np.zeros((1, 6))
    x[0, 0] = 1e-3
    x[0, 1] = -1e-3
    k = background_scale(6)

    def cauchy(S: np.ndarray) -> float:  # log density at x of the Cauchy of scale k²·S
        sd = np.sqrt(np.diag(S))
        R = S / np.outer(sd, sd)
        z = x[0] / (sd * k)
        q = float(z @ np.linalg.solve(R, z))
        logdet = np.linalg.slogdet(R)[1] + 2 * np.sum(np.log(sd * k))
        return (math.lgamma(3.5) - math.lgamma(0.5) - 3 * math.log(math.pi) - 0.5 * logdet
                - 3.5 * math.log1p(q))

    broad = background_logpdf(x, np.zeros(6), C)[0]
    assert broad == pytest.approx(cauchy(B), rel=1e-9)
    assert broad - cauchy(C) > 5.0


def test_background_keeps_the_rows_a_noisy_count_can_hide():
    """A clipped count that noise pushed to or below the Gaussian's own tail cannot rule out
    rows outside: the weight stays at least a tenth of the rows its noise can hide (the corpus's
    fair table scored +0.45 nat/row at the one seed in ten whose count came out 0, -0.3 at
    the others); once the count is exact to a row, that floor is 0."""
    n = 5000
    for seed in range(4):
        X = np.random.default_rng(seed).normal(size=(n, 3))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = pg.PrivateGaussian(epsilon=1.0, delta=1e-6, random_state=seed).fit(X)
        sigma = [e.noise_scale for e in g.ledger_ if e.step == "clipped count"][0]
        assert sigma > 10
        assert g.background_weight_ >= 0.1 * (sigma - 1) / n
        assert g.background_weight_ < 0.05  # and no more than the count's noise allows
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        big = pg.PrivateGaussian(epsilon=1e5, delta=1e-6, random_state=0).fit(X)
    sigma = [e.noise_scale for e in big.ledger_ if e.step == "clipped count"][0]
    assert sigma < 1 and big.background_weight_ < 1e-3


def test_mixture_background_follows_the_count_as_the_gaussian_does():
    """Private EM's background weight is the clipped count's excess over the components' own
    tail, at least a tenth of the rows the count's noise can hide — the single Gaussian's rule
    (:func:`~privgauss.gaussian.clip_diagnostics.background_weight`). Its earlier rule, the
    excess beyond the count's 1 − 10⁻³ noise quantile, left a weight of 0 at small n and ε = 1,
    and held-out rows of SumHes scored −538 nat under the EM fit. The floor is 0 once the count
    is exact to a row."""
    from privgauss.gaussian.clip_diagnostics import background_weight

    assert background_weight(0.05, 0.01, 30.0, 3000) == pytest.approx(0.04)
    assert background_weight(0.0, 0.01, 30.0, 3000) == pytest.approx(0.1 * 29.0 / 3000)
    assert background_weight(0.0, 0.01, 0.5, 3000) == 0.0
    # rows counted outside within the model's own expected tail still get a tenth of their
    # share (gross errors can hide there: 3 of 3,086 rows at ε = 1e4, model tail 0.12 %)
    assert background_weight(3 / 3086, 0.0012, 0.08, 3086) == pytest.approx(0.1 * 3 / 3086)
    n = 4000
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(size=(n // 2, 2)), rng.normal(size=(n // 2, 2)) + 6.0])
    for seed in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = pg.PrivateGaussianMixture(2, epsilon=1.0, delta=1e-6, random_state=seed).fit(X)
        cc = m.fit_info_["clipped_count"]
        sigma = float(cc["noise_scale"])
        assert sigma > 10
        assert m.background_weight_ == pytest.approx(background_weight(
            m.clipped_fraction_, float(cc["model_fraction"]), sigma, n))
        assert m.background_weight_ >= 0.1 * (sigma - 1) / n
        assert m.background_weight_ >= m.clipped_fraction_ - float(cc["model_fraction"])
