"""A rare 0/1 column inside a valid prior at ε = 1 (issue 26, "no degenerate release of a
non-constant column", "a missed fit is a failure, not a model").

CoinPress's chain clips whitened rows at τ ≈ √d + c; the ones of a flag with a fraction p of
ones lie ~1/√p standard deviations out, each step keeps about p·τ² of that variance, and when
p·τ² < 1 the chain shrinks the column step after step down to ``cov_bounds``' lower bound (a
1 % flag: 0.007× its variance, with no warning before). The fit must then say so — a DP
warning naming the collapse — or release that variance within a factor 2 of np.cov's; a
constant column (harmlessly floored at the bound) and Gaussian columns must not trigger it."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import privgauss as pg
from privgauss.gaussian.clip_diagnostics import is_collapsed
from privgauss.warnings import ClippedDataWarning


def _table(last: np.ndarray, n: int = 20_000) -> np.ndarray:
    rng = np.random.default_rng(0)
    G = rng.standard_normal((n, 4)) @ rng.standard_normal((4, 4)) * 0.5
    G += rng.standard_normal((n, 4))
    return np.column_stack([G, last]).astype(float)


def _fit(X: np.ndarray, widen: float, seed: int) -> tuple[pg.PrivateGaussian, list[str]]:
    """ε = 1 with a valid prior: mean_bound 10‖μ‖ + 10·sd_max, cov_bounds ``widen``× outside
    np.cov's spectrum (a constant column's variance 0 is left out of the lower end)."""
    mu, S = X.mean(0), np.cov(X.T)
    live = np.diag(S) > 0
    w = np.linalg.eigvalsh(S[np.ix_(live, live)])
    bound = 10 * float(np.linalg.norm(mu)) + 10 * float(np.sqrt(S.diagonal().max()))
    prior = dict(mean_bound=bound,
                 cov_bounds=(float(w[0]) / widen, float(w[-1]) * widen))
    est = pg.PrivateGaussian(epsilon=1.0, delta=1e-6, random_state=seed, **prior)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X)
    assert est.method_ == "coinpress"
    return est, [str(c.message) for c in caught if issubclass(c.category, ClippedDataWarning)]


@pytest.mark.parametrize("widen", [100.0, 2.0])
@pytest.mark.parametrize("p", [0.01, 0.03])
def test_a_rare_flag_is_estimated_or_reported_never_silently_collapsed(widen: float,
                                                                       p: float) -> None:
    flag = (np.random.default_rng(1).random(20_000) < p).astype(float)
    X = _table(flag)
    truth = float(np.var(X[:, -1], ddof=1))
    for seed in range(2):
        est, msgs = _fit(X, widen, seed)
        ratio = float(est.covariance_[-1, -1]) / truth
        named = any("last covariance release" in m and "beyond the clipping radius" in m
                    for m in msgs)
        assert named or 0.5 < ratio < 2.0, (p, widen, seed, ratio, msgs)


@pytest.mark.parametrize("widen", [100.0, 2.0])
def test_no_collapse_warning_for_a_constant_or_a_common_flag(widen: float) -> None:
    for last in (np.full(20_000, 3.0),
                 (np.random.default_rng(2).random(20_000) < 0.3).astype(float)):
        est, msgs = _fit(_table(last), widen, 0)
        assert not any("last covariance release" in m for m in msgs), msgs
        assert np.isfinite(est.covariance_).all()


def test_collapse_band() -> None:
    # a constant column (0 ± σ) and a whitened direction (≥ 2ℓ − 1) are not collapses
    assert not is_collapsed(0.002, 0.006, 0.9)
    assert not is_collapsed(0.85, 0.006, 0.9)
    assert is_collapsed(0.35, 0.006, 0.9) and is_collapsed(0.5, 0.006, 0.9)
    # noise that hides the gap, or a frame the plan does not expect to be white: never
    assert not is_collapsed(0.35, 0.1, 0.9) and not is_collapsed(0.2, 0.006, 0.55)
