"""Small n and small budgets (issue 17, "close to the limit at small n"): the bound-free route
fits at n = 3000 (d = 10, (1, 1e-6)) and is near the non-private error at n = 2e4; the pieces
that make it so (joint Gaussian localisation, fitted scale bracket, debiased last covariance
step, mean-first refinement) are checked one by one. Tolerances are measured values with margin
(the measured numbers are in the comments; benchmarks/small_n.py has the 20-seed table).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

import privgauss as pg
from privgauss.clipped_stats import Rows
from privgauss.datasets import make_gaussian
from privgauss.gaussian.coinpress import coinpress_gaussian
from privgauss.gaussian.coinpress import cov_plan as cp_cov
from privgauss.gaussian.coinpress import mean_first as mf
from privgauss.gaussian.coinpress import plan as cp_plan
from privgauss.gaussian.coinpress import tails as cp_tails
from privgauss.gaussian.histogram_reading import fitted_log_scale
from privgauss.mechanisms import Release
from privgauss.metrics import covariance_error, mahalanobis_mean_error
from privgauss.privacy import ZCDP, Accountant


def _ratios(n: int, seed: int) -> tuple[float, float, str]:
    X, mu, S = make_gaussian(n, 10, mean=np.full(10, 1e3), condition_number=100,
                             random_state=seed)
    g = pg.PrivateGaussian(epsilon=1.0, delta=1e-6, random_state=seed).fit(X)
    return (mahalanobis_mean_error(g.mean_, mu, S) / mahalanobis_mean_error(X.mean(0), mu, S),
            covariance_error(g.covariance_, S) / covariance_error(np.cov(X.T), S), g.method_)


@pytest.mark.filterwarnings("ignore::privgauss.warnings.SeededNoiseWarning")
def test_bound_free_fits_at_n_3000() -> None:
    # regression: every such fit failed ("no scale bin was released for axis 0"); measured
    # ratios at seeds 0, 1: mean 2.20, 1.24; covariance 6.14, 7.46
    for seed in (0, 1):
        m, c, method = _ratios(3000, seed)
        assert method == "histogram"
        assert m < 3.5 and c < 10.0, (seed, m, c)


@pytest.mark.filterwarnings("ignore::privgauss.warnings.SeededNoiseWarning")
def test_bound_free_near_nonprivate_at_n_2e4() -> None:
    # was 2.8x on the covariance. With the debiased last covariance step (COV_DEBIAS) seeds 0,
    # 1 gave mean 1.37, 1.11, covariance 1.30, 1.44; without it (the default: it biases 0/1
    # columns) mean 1.37, 1.11, covariance 1.67, 1.92
    rs = np.array([_ratios(20_000, seed)[:2] for seed in (0, 1)])
    assert rs[:, 0].max() < 1.6 and rs[:, 1].max() < 2.2, rs


def _clipped_second_moment(M: np.ndarray, tau: float, n: int = 400_000) -> np.ndarray:
    X = np.random.default_rng(5).standard_normal((n, M.shape[0])) @ np.linalg.cholesky(M).T
    w = np.minimum(1.0, tau / np.linalg.norm(X, axis=1))
    Xc = X * w[:, None]
    return Xc.T @ Xc / n


def test_undo_cov_clip_inverts_the_clip_map() -> None:
    d = 6
    tau = math.sqrt(cp_tails.chi2_isf(0.3, d))  # 70 % quantile: 30 % of isotropic rows clipped
    # isotropic: exact (closed form)
    h = cp_tails.clip_second_moment(d, tau)
    np.testing.assert_allclose(cp_tails.undo_cov_clip(h * np.eye(d), tau), np.eye(d), rtol=1e-6)
    # anisotropic, rotated: the clip shrinks the wide directions more; undone within 1.5 %
    q, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((d, d)))
    M = q @ np.diag(np.linspace(0.4, 1.0, d)) @ q.T
    Z = _clipped_second_moment(M, tau)
    assert np.linalg.norm(Z - M) > 0.08  # the clip did move it (by 0.11)
    assert np.linalg.norm(cp_tails.undo_cov_clip(Z, tau) - M) < 0.015 * np.linalg.norm(M)


def test_planner_debiases_the_last_step_only_where_it_pays(monkeypatch) -> None:
    tau = math.sqrt(cp_tails.chi2_isf(cp_cov.COV_CLIP_TAIL, 10))
    assert not cp_cov._final_cov_step(5000, 10, 0.02, 0.9, tau).debias  # off by default
    monkeypatch.setattr(cp_cov, "COV_DEBIAS", True)
    # noise-dominated and whitened: clipped inside the bulk, undone
    assert cp_cov._final_cov_step(5000, 10, 0.02, 0.9, tau).debias
    # almost no noise, or far from whitened, or d = 1: the covering clip
    assert not cp_cov._final_cov_step(5000, 10, 1e4, 0.9, tau).debias
    assert not cp_cov._final_cov_step(5000, 10, 0.02, 0.05, tau).debias
    tau1 = math.sqrt(cp_tails.chi2_isf(0.01, 1))
    assert not cp_cov._final_cov_step(5000, 1, 0.02, 0.9, tau1).debias
    # the undone clip's predicted error: slope < h, sampling variance >= 1
    t = math.sqrt(cp_tails.chi2_isf(0.3, 10))
    k = cp_tails.cov_clip_slope(10, t)
    assert 0 < k < cp_tails.clip_second_moment(10, t)
    assert cp_tails.clip_fourth_moment(10, t) >= k * k


def test_fitted_scale_recovers_the_position_in_the_bin() -> None:
    m, a_true = 10_000, 3.3  # a = log2(√2 σ) + u
    js = np.arange(-3, 8)
    lo = np.exp2(js - a_true)
    counts = m * 2 * (norm.cdf(2 * lo) - norm.cdf(lo))
    tau = 1500.0
    hist = {int(j): int(round(c)) for j, c in zip(js, counts, strict=True) if c > tau}
    top = max(hist, key=hist.__getitem__)
    a = fitted_log_scale(hist, top, m, tau, 50.0)
    assert a is not None and abs(a - a_true) < 0.02
    # one released bin (e.g. a 0/1 column): no fit, the wide bracket stays
    assert fitted_log_scale({top: hist[top]}, top, m, tau, 50.0) is None


def test_mean_first_replaces_a_failing_sequential_plan() -> None:
    d, rho, R, lo, hi = 10, 0.02, 18.0, 0.005, 20.0
    plan = cp_plan.practical_plan(5000, d, rho, R, lo, hi, R / math.sqrt(lo), 0.05, 0.0)
    assert mf.use_mean_first(5000, d, plan.cov_err, rho, R, (lo, hi))
    big = cp_plan.practical_plan(100_000, d, rho, R, lo, hi, R / math.sqrt(lo), 0.05, 0.0)
    assert not mf.use_mean_first(100_000, d, big.cov_err, rho, R, (lo, hi))
    # a wide prior (a public frame widened by gamma): the rough mean is too coarse for step 4
    assert not mf.use_mean_first(5000, d, plan.cov_err, rho, 5e4, (1.0, 9e8))
    # the dispatch and its ledger (all of ρ, the rough mean first)
    X, _, S = make_gaussian(5000, d, mean=np.full(d, 3.0), condition_number=30, random_state=3)
    sd = np.sqrt(np.diag(S))
    acct = Accountant(ZCDP(rho))
    coinpress_gaussian(X / sd, rho, center=np.zeros(d), radius=R, cov_bounds=(lo, hi),
                       accountant=acct, noise=3)
    assert acct.ledger[0].step.startswith("coinpress-gaussian mean-rough")
    assert sum(e.cost.rho for e in acct.ledger) == pytest.approx(rho, rel=1e-12)


@pytest.mark.filterwarnings("ignore::privgauss.warnings.SeededNoiseWarning")
def test_mean_first_beats_the_sequential_plan_in_the_bound_free_fit_at_n_3000(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # same draws and noise seeds; measured covariance ratios (mean-first, sequential):
    # seed 0: 6.14, 21.2; seed 1: 7.46, 92.4 (over seeds 0-2 at n = 5000: 2.92, 9.57;
    # 13.4, 6.86; 3.04, 11.7 — better in most draws, not in all)
    ours = [_ratios(3000, seed)[1] for seed in (0, 1)]
    monkeypatch.setattr(mf, "_SEQUENTIAL_MAX_RATIO", math.inf)
    monkeypatch.setattr(mf, "_MIN_GAIN", 1.0)
    seq = [_ratios(3000, seed)[1] for seed in (0, 1)]
    assert all(a < 0.4 * b for a, b in zip(ours, seq, strict=True)), (ours, seq)


def _rho05_fit(seed: int, **kw: object) -> tuple[float, Accountant]:
    """CoinPress's published regime with Σ = 2·I inside the prior (1, 10√d): unknown mean,
    covariance error over np.cov's on the same rows, and the fit's ledger."""
    d, u = 10, 10 * math.sqrt(10)
    X, _, S = make_gaussian(3000, d, cov=2.0 * np.eye(d), random_state=20_000 + seed)
    acct = Accountant(ZCDP(0.5))
    _, C = coinpress_gaussian(X, 0.5, center=np.zeros(d), radius=u, cov_bounds=(1.0, u),
                              accountant=acct, noise=seed, **kw)
    return covariance_error(C, S) / covariance_error(np.cov(X.T), S), acct


def test_rho05_unknown_mean_takes_the_mean_first_route(monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 17's goal: unknown-mean covariance ≤ 1.2x non-private at ρ = 0.5, n = 3000 (20
    # draws of benchmarks/small_n.py: 1.16, against 1.24 for the sequential plan). The planner
    # predicts 0.065 for the mean-first variant against 0.079, so it takes it: no coarse
    # whitening of pairwise differences in the ledger, and all of ρ spent.
    ratios = []
    for seed in range(4):
        r, acct = _rho05_fit(seed)
        assert not any("cov-coarse" in e.step for e in acct.ledger)
        assert acct.ledger[0].step.startswith("coinpress-gaussian mean-rough")
        assert sum(e.cost.rho for e in acct.ledger) == pytest.approx(0.5, rel=1e-12)
        ratios.append(r)
    monkeypatch.setattr(mf, "_MIN_GAIN", 1.0)  # the sequential plan on the same draws
    seq = [_rho05_fit(seed)[0] for seed in range(4)]
    # measured (seeds 0-3): mean-first 1.12, 1.18, 1.18, 1.14; sequential 1.21, 1.17, 1.39, 1.25
    assert float(np.median(ratios)) < 1.2, ratios
    assert float(np.mean(ratios)) < float(np.mean(seq)), (ratios, seq)


def _cov_ratio(seed: int, known: bool, reframe: bool = True) -> float:
    d, n = 10, 3000
    X, mu, S = make_gaussian(n, d, mean=np.full(d, 1e3), condition_number=100,
                             random_state=10_000 + seed)
    g = pg.PrivateGaussian(epsilon=1.0, delta=1e-6, method="coinpress", random_state=seed,
                           mean_bound=2e3 * math.sqrt(d), cov_bounds=(0.5, 200.0),
                           mean=mu if known else None)
    mf.REFRAME = reframe
    try:
        g.fit(X)
    finally:
        mf.REFRAME = True
    return covariance_error(g.covariance_, S) / covariance_error(np.cov(X.T), S)


@pytest.mark.filterwarnings("ignore::privgauss.warnings.ClippedDataWarning")
def test_unknown_mean_covariance_close_to_the_known_mean_one_at_small_budget() -> None:
    # issue 17: the unknown-mean path within 1.3x of the known-mean one (ε = 1, n = 3000,
    # d = 10, condition 100). 20 draws of benchmarks/small_n.py: 1.28 (1.48 when the chain's
    # moment is re-centred once at the end with the final mean). Here, seeds 0-9: median 1.26
    # with the last step re-framed on the re-centred moment, 1.39 without (better in 9 of 10).
    known = [_cov_ratio(s, True) for s in range(10)]
    q = [_cov_ratio(s, False) / k for s, k in enumerate(known)]
    q_old = [_cov_ratio(s, False, reframe=False) / k for s, k in enumerate(known)]
    assert float(np.median(q)) < 1.3, q
    assert sum(a < b for a, b in zip(q, q_old, strict=True)) >= 8, (q, q_old)


def test_mean_first_is_exact_at_huge_rho() -> None:
    """All five steps with (nearly) no noise: the sample mean and the covariance about it, so
    the re-centring, re-framing and both poolings are exact bookkeeping."""
    rng = np.random.default_rng(5)
    n, d = 2000, 4
    X = rng.uniform(-1.0, 1.0, size=(n, d)) @ np.diag([1.0, 0.5, 2.0, 0.1]) + 3.0
    acct = Accountant(ZCDP(1e200))  # the noise shrinks slowly as the radii grow with rho
    m, C = mf.mean_first_gaussian(Rows(X), 1e200, center=np.zeros(d), radius=20.0,
                                  cov_bounds=(1e-3, 10.0), release=Release.of(acct, 0))
    np.testing.assert_allclose(m, X.mean(0), atol=1e-6)
    np.testing.assert_allclose(C, np.cov(X.T, bias=True), atol=1e-6)
    steps = [e.step for e in acct.ledger]
    assert steps[0].startswith("mean-first mean-rough")
    assert steps[-1].startswith("mean-first mean-final")
