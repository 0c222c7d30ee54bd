"""Tests of privgauss.mechanisms: calibration formulas, ledger entries, the released noise,
charging before any noise is drawn, the non-private limit and input validation.

Fast seeded noise everywhere except two small secure-path tests (the (ε, δ) count, and one
end-to-end check at the end).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import mpmath
import numpy as np
import pytest
from scipy import integrate, stats

from privgauss import PrivacyBudgetError
from privgauss.mechanisms import (
    above_threshold,
    exponential_mechanism,
    gaussian_mechanism,
    gaussian_sigma,
    gaussian_sigma_analytic,
    gaussian_sigma_zcdp,
    laplace_mechanism,
    private_count,
    report_noisy_max,
    soft_statistics_mechanism,
    stability_histogram,
    symmetric_matrix_mechanism,
    truncated_laplace_bound,
    truncated_laplace_mechanism,
)
from privgauss.noise import NoiseSource
from privgauss.privacy import ZCDP, Accountant, ApproxDP, PureDP
from privgauss.sensitivity import soft_statistics_zcdp, stability_histogram_threshold

ALPHA = 1e-6
HUGE = 1e12  # a huge-but-finite budget: the mechanisms approach their exact values


def _acct(budget: Any = None) -> Accountant:
    return Accountant(budget if budget is not None else ZCDP(1e6))


class RecordingNoise(NoiseSource):
    """A real seeded NoiseSource that also records the Laplace scales it is asked for."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.laplace_scales: list[float] = []

    def laplace(self, values: Any, scale: float) -> np.ndarray:
        self.laplace_scales.append(scale)
        return super().laplace(values, scale)


# ------------------------------------------------------------------------------------------
# calibration
# ------------------------------------------------------------------------------------------


def _bw_delta(sigma: float, sens: float, eps: float) -> float:
    """The Balle–Wang (2018, Thm. 8) δ of the Gaussian mechanism, in 60-digit arithmetic."""
    mpmath.mp.dps = 60
    s, d, e = mpmath.mpf(sigma), mpmath.mpf(sens), mpmath.mpf(eps)
    a, b = d / (2 * s), e * s / d
    return float(mpmath.ncdf(a - b) - mpmath.exp(e) * mpmath.ncdf(-a - b))


@pytest.mark.parametrize("sens", [1e-3, 1.0, 37.5])
@pytest.mark.parametrize("rho", [1e-4, 0.05, 1.0, 20.0])
def test_zcdp_sigma_formula(sens: float, rho: float) -> None:
    assert gaussian_sigma_zcdp(sens, rho) == pytest.approx(sens / math.sqrt(2 * rho), rel=1e-15)
    assert gaussian_sigma(sens, ZCDP(rho)) == gaussian_sigma_zcdp(sens, rho)
    assert gaussian_sigma_zcdp(sens, HUGE) == pytest.approx(sens / math.sqrt(2 * HUGE))
    for bad in (math.inf, math.nan, 0.0, -1.0):  # budgets are finite and positive
        with pytest.raises(PrivacyBudgetError):
            gaussian_sigma_zcdp(sens, bad)


@pytest.mark.parametrize("sens", [0.01, 1.0, 250.0])
@pytest.mark.parametrize("eps", [0.05, 0.5, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("delta", [1e-10, 1e-6, 1e-2])
def test_analytic_sigma_meets_balle_wang_with_equality(sens: float, eps: float, delta: float):
    sigma = gaussian_sigma_analytic(sens, eps, delta)
    achieved = _bw_delta(sigma, sens, eps)
    assert achieved <= delta  # private, in exact arithmetic
    assert achieved == pytest.approx(delta, rel=1e-9)  # and not more noise than needed
    # delta decreases with sigma, so 1e-6 less noise would break the guarantee
    assert _bw_delta(sigma * (1 - 1e-6), sens, eps) > delta
    assert gaussian_sigma(sens, ApproxDP(eps, delta)) == sigma
    if eps <= 1:
        classical = sens * math.sqrt(2 * math.log(1.25 / delta)) / eps
        assert sigma < classical


def test_analytic_sigma_edge_cases() -> None:
    assert gaussian_sigma_analytic(0.0, 1.0, 1e-6) == 0.0
    assert gaussian_sigma_analytic(1.0, HUGE, 1e-6) < 1e-6  # -> 0 as epsilon grows
    for bad in (math.inf, math.nan, 0.0):
        with pytest.raises(PrivacyBudgetError):
            gaussian_sigma_analytic(1.0, bad, 1e-6)
    for bad_delta in (0.0, 1.0):
        with pytest.raises(PrivacyBudgetError):
            gaussian_sigma_analytic(1.0, 1.0, bad_delta)
    # sigma scales linearly with the sensitivity
    assert gaussian_sigma_analytic(7.0, 0.8, 1e-7) == pytest.approx(
        7 * gaussian_sigma_analytic(1.0, 0.8, 1e-7), rel=1e-9
    )
    for pure in (PureDP(1.0), ApproxDP(1.0, 0.0)):
        with pytest.raises(PrivacyBudgetError, match="Laplace"):
            gaussian_sigma(1.0, pure)


@pytest.mark.parametrize("eps", [0.1, 1.0, 5.0])
@pytest.mark.parametrize("delta", [1e-9, 1e-3])
def test_truncated_laplace_bound_formula_gives_delta(eps: float, delta: float) -> None:
    sens = 2.0
    bound = truncated_laplace_bound(sens, eps, delta)
    assert bound == pytest.approx((sens / eps) * math.log(1 + (math.exp(eps) - 1) / (2 * delta)))
    # the mass that the shifted noise cannot cover is exactly delta (Geng et al. 2020)
    lam = sens / eps
    z = 2 * lam * (1 - math.exp(-bound / lam))
    uncovered = lam * (math.exp((sens - bound) / lam) - math.exp(-bound / lam)) / z
    assert uncovered == pytest.approx(delta, rel=1e-9)


# ------------------------------------------------------------------------------------------
# ledger entries: the noise scale of every mechanism, exactly
# ------------------------------------------------------------------------------------------


def test_gaussian_mechanism_ledger() -> None:
    acct = _acct()
    gaussian_mechanism(np.zeros(3), 0.4, ZCDP(0.3), accountant=acct, noise=0, step="mean")
    e = acct.ledger[-1]
    assert (e.step, e.mechanism, e.cost, e.sensitivity) == ("mean", "gaussian", ZCDP(0.3), 0.4)
    assert e.noise_scale == 0.4 / math.sqrt(2 * 0.3)
    acct = _acct(ApproxDP(10.0, 1e-5))
    gaussian_mechanism(1.0, 0.4, ApproxDP(0.9, 1e-6), accountant=acct, noise=0)
    assert acct.ledger[-1].noise_scale == gaussian_sigma_analytic(0.4, 0.9, 1e-6)


def test_laplace_and_count_ledgers() -> None:
    acct = _acct(PureDP(100.0))
    laplace_mechanism(np.ones(4), 3.0, PureDP(0.25), accountant=acct, noise=0)
    assert acct.ledger[-1].noise_scale == 3.0 / 0.25
    assert acct.ledger[-1].mechanism == "laplace"
    private_count(10, PureDP(0.5), accountant=acct, noise=0, sensitivity=2.0)
    assert acct.ledger[-1].noise_scale == 2.0 / 0.5
    assert acct.ledger[-1].mechanism == "count-discrete-laplace"
    acct = _acct()
    private_count(10, ZCDP(0.125), accountant=acct, noise=0)
    assert acct.ledger[-1].noise_scale == 1.0 / math.sqrt(0.25)
    assert acct.ledger[-1].mechanism == "count-discrete-gaussian"
    acct = _acct(ApproxDP(5.0, 1e-5))
    private_count(10, ApproxDP(1.0, 1e-6), accountant=acct, noise=0)
    assert acct.ledger[-1].noise_scale == gaussian_sigma_analytic(1.0, 1.0, 1e-6)


def test_symmetric_matrix_ledger() -> None:
    m = np.eye(3)
    acct = _acct()
    symmetric_matrix_mechanism(m, 0.2, ZCDP(0.02), accountant=acct, noise=0)
    e = acct.ledger[-1]
    assert e.mechanism == "symmetric-gaussian" and e.noise_scale == 0.2 / math.sqrt(0.04)
    acct = _acct(PureDP(10.0))
    symmetric_matrix_mechanism(m, 0.2, PureDP(0.5), accountant=acct, noise=0)
    e = acct.ledger[-1]
    assert e.mechanism == "symmetric-laplace" and e.noise_scale == 0.2 / 0.5
    acct = _acct(ApproxDP(10.0, 1e-5))
    symmetric_matrix_mechanism(m, 0.2, ApproxDP(1.0, 1e-6), accountant=acct, noise=0)
    assert acct.ledger[-1].noise_scale == gaussian_sigma_analytic(0.2, 1.0, 1e-6)
    with pytest.raises(ValueError, match="square"):
        symmetric_matrix_mechanism(np.ones((2, 3)), 0.2, ZCDP(0.1), accountant=_acct(), noise=0)


@pytest.mark.parametrize("monotone", [False, True])
def test_exponential_mechanism_ledger(monotone: bool) -> None:
    acct = _acct(PureDP(10.0))
    exponential_mechanism([1.0, 2.0], 0.5, PureDP(0.8), accountant=acct, noise=0, monotone=monotone)
    factor = 1.0 if monotone else 2.0
    assert acct.ledger[-1].noise_scale == factor * 0.5 / 0.8
    assert report_noisy_max is exponential_mechanism


@pytest.mark.parametrize("monotone", [False, True])
def test_above_threshold_scales(monotone: bool) -> None:
    acct = _acct(PureDP(10.0))
    src = RecordingNoise(0)
    sens, eps = 0.5, 0.8
    above_threshold(
        [-100.0, -100.0, 100.0],
        0.0,
        sens,
        PureDP(eps),
        accountant=acct,
        noise=src,
        monotone=monotone,
    )
    t_scale = 2 * sens / eps
    q_scale = t_scale if monotone else 4 * sens / eps
    assert src.laplace_scales[0] == t_scale  # the threshold
    assert src.laplace_scales[1:] == [q_scale] * 3  # each query, up to the hit
    assert acct.ledger[-1].noise_scale == q_scale
    assert acct.ledger[-1].cost == PureDP(eps) and len(acct.ledger) == 1


def test_stability_histogram_ledger() -> None:
    acct = _acct(ApproxDP(10.0, 1e-3))
    eps, delta = 0.7, 1e-5
    stability_histogram(np.array([0, 0, 1]), ApproxDP(eps, delta), accountant=acct, noise=0)
    e = acct.ledger[-1]
    tau = 1 + (2 / eps) * math.log(1 / delta)
    assert stability_histogram_threshold(eps, delta) == pytest.approx(tau, rel=1e-15)
    assert e.sensitivity == 2.0 and e.noise_scale == 2.0 / eps
    assert e.note == f"tau={tau:.6g}"


def test_truncated_laplace_ledger_and_bound() -> None:
    acct = _acct(ApproxDP(100.0, 1e-2))
    sens, eps, delta = 1.5, 0.6, 1e-6
    bound = truncated_laplace_bound(sens, eps, delta)
    out = truncated_laplace_mechanism(
        np.full(50_000, 4.0), sens, ApproxDP(eps, delta), accountant=acct, noise=0
    )
    e = acct.ledger[-1]
    assert e.noise_scale == sens / eps and e.note == f"bound={bound:.6g}"
    assert np.all(np.abs(out - 4.0) <= bound)


# ------------------------------------------------------------------------------------------
# the released noise has the stated scale (fast path, large samples)
# ------------------------------------------------------------------------------------------

N = 200_000


def _assert_std(noise: np.ndarray, std: float) -> None:
    n = noise.size
    assert abs(noise.mean()) < 5 * std / math.sqrt(n)
    # the sample std has relative standard error about sqrt((kurtosis - 1) / (4n)) <= 0.3%
    assert noise.std() == pytest.approx(std, rel=0.015)


def test_gaussian_noise_std() -> None:
    for budget, sigma in [
        (ZCDP(0.08), 2.0 / math.sqrt(0.16)),
        (ApproxDP(0.5, 1e-6), gaussian_sigma_analytic(2.0, 0.5, 1e-6)),
    ]:
        acct = Accountant(budget)
        out = gaussian_mechanism(np.full(N, 7.0), 2.0, budget, accountant=acct, noise=1)
        _assert_std(out - 7.0, sigma)


def test_laplace_and_symmetric_noise_std() -> None:
    out = laplace_mechanism(np.zeros(N), 1.0, PureDP(0.5), accountant=_acct(PureDP(1)), noise=2)
    _assert_std(out, math.sqrt(2) * 2.0)
    d = 500  # 125,250 upper-triangle entries
    base = np.eye(d)
    out = symmetric_matrix_mechanism(base, 0.3, ZCDP(0.045), accountant=_acct(), noise=3)
    np.testing.assert_array_equal(out, out.T)
    sigma = 0.3 / math.sqrt(0.09)  # Frobenius sensitivity: σ on the diagonal, σ/√2 off it
    stack = np.zeros((5000, 10, 10))  # 50,000 diagonal entries, released jointly
    noisy = symmetric_matrix_mechanism(stack, 0.3, ZCDP(0.045), accountant=_acct(), noise=4)
    np.testing.assert_array_equal(noisy, np.swapaxes(noisy, 1, 2))
    _assert_std(np.diagonal(noisy, axis1=1, axis2=2).ravel(), sigma)
    _assert_std((out - base)[np.triu_indices(d, 1)], sigma / math.sqrt(2))
    out = symmetric_matrix_mechanism(base, 0.3, PureDP(0.6), accountant=_acct(), noise=3)
    _assert_std((out - base)[np.triu_indices(d)], math.sqrt(2) * 0.5)


def test_count_noise_std() -> None:
    s = 1.0 / 0.4
    q = math.exp(-1 / s)
    out = private_count(np.full(N, 20), PureDP(0.4), accountant=_acct(PureDP(1)), noise=4)
    assert np.issubdtype(out.dtype, np.integer)
    _assert_std(out - 20, math.sqrt(2 * q) / (1 - q))  # discrete Laplace variance
    sigma = 1.0 / math.sqrt(2 * 0.02)
    out = private_count(np.full(N, 20), ZCDP(0.02), accountant=_acct(), noise=4)
    _assert_std(out - 20, math.sqrt(sigma**2 + 1 / 12))  # rounded Gaussian (fast path)


def test_truncated_laplace_noise_std() -> None:
    sens, eps, delta = 1.0, 1.0, 1e-2
    lam, bound = sens / eps, truncated_laplace_bound(sens, eps, delta)
    mass = integrate.quad(lambda x: math.exp(-abs(x) / lam), -bound, bound)[0]
    var = integrate.quad(lambda x: x * x * math.exp(-abs(x) / lam), -bound, bound)[0] / mass
    out = truncated_laplace_mechanism(
        np.zeros(N), sens, ApproxDP(eps, delta), accountant=_acct(ApproxDP(2, 0.1)), noise=5
    )
    _assert_std(out, math.sqrt(var))
    assert math.sqrt(var) < math.sqrt(2) * lam  # truncation removes variance


def test_exponential_mechanism_frequencies() -> None:
    utilities = np.array([0.0, 1.0, 3.0, 2.5])
    sens, eps, n = 1.5, 2.0, 40_000
    src = NoiseSource(6)
    acct = _acct(PureDP(1e12))
    for monotone in (False, True):
        picks = [
            exponential_mechanism(
                utilities, sens, PureDP(eps), accountant=acct, noise=src, monotone=monotone
            )
            for _ in range(n)
        ]
        factor = 1.0 if monotone else 2.0
        p = np.exp(eps * utilities / (factor * sens))
        p /= p.sum()
        observed = np.bincount(picks, minlength=4)
        assert stats.chisquare(observed, n * p).pvalue > ALPHA


def test_stability_histogram_release_probability() -> None:
    eps, delta, n = 1.0, 0.05, 20_000
    tau = stability_histogram_threshold(eps, delta)
    keys = np.array([0] * 1 + [1] * 6 + [2] * 40)  # counts 1, 6, 40
    src = NoiseSource(7)
    released = {0: 0, 1: 0, 2: 0}
    for _ in range(n):
        acct = Accountant(ApproxDP(eps, delta))
        for b in stability_histogram(keys, ApproxDP(eps, delta), accountant=acct, noise=src):
            released[b] += 1
    dl = stats.dlaplace(eps / 2)  # discrete Laplace with scale 2/eps
    for b, c in {0: 1, 1: 6, 2: 40}.items():
        p = dl.sf(math.floor(tau - c))  # P(c + Z > tau)
        assert stats.binomtest(released[b], n, p).pvalue > ALPHA
    # a singleton bin is released with probability at most delta (here about delta / 1.6)
    assert dl.sf(math.floor(tau - 1)) <= delta


def test_stability_histogram_bins_and_validation() -> None:
    acct = _acct(ApproxDP(1e12, 0.5))
    keys2d = np.array([[0, 1]] * 30 + [[2, -3]] * 50)
    out = stability_histogram(keys2d, ApproxDP(1.0, 1e-6), accountant=acct, noise=0)
    assert set(out) == {(0, 1), (2, -3)}
    assert all(isinstance(v, int) for v in out.values())
    assert abs(out[(0, 1)] - 30) < 40 and abs(out[(2, -3)] - 50) < 40
    for bad in (np.array([0.5, 1.5]), np.array([], dtype=int), np.zeros((2, 2, 2), dtype=int)):
        with pytest.raises(ValueError):
            stability_histogram(bad, ApproxDP(1.0, 1e-6), accountant=acct, noise=0)


def test_above_threshold_behaviour() -> None:
    acct = _acct(PureDP(1e12))
    calls: list[int] = []

    def query(i: int, v: float) -> Callable[[], float]:
        def q() -> float:
            calls.append(i)
            return v

        return q

    qs = [query(0, -50.0), query(1, -50.0), query(2, 50.0), query(3, 50.0)]
    assert above_threshold(qs, 0.0, 1.0, PureDP(1.0), accountant=acct, noise=0) == 2
    assert calls == [0, 1, 2]  # lazy: stops at the first hit
    assert above_threshold([-50.0] * 5, 0.0, 1.0, PureDP(1.0), accountant=acct, noise=0) is None


# ------------------------------------------------------------------------------------------
# huge-but-finite budgets: the exact value is approached (the non-private limit)
# ------------------------------------------------------------------------------------------


def test_huge_budget_approaches_the_exact_value() -> None:
    x = np.array([1.25, -3.5, 7.0])
    m = np.array([[2.0, 0.5], [0.5, 1.0]])
    tol = 1e-4  # the noise scales are ~1e-6 here
    for budget, total in ((ZCDP(HUGE), ZCDP(1e3 * HUGE)),
                          (ApproxDP(HUGE, 1e-6), ApproxDP(1e3 * HUGE, 0.5))):
        acct = Accountant(total)
        out = gaussian_mechanism(x, 1.0, budget, accountant=acct, noise=0)
        np.testing.assert_allclose(out, x, rtol=0, atol=tol)
        assert out is not x
        np.testing.assert_allclose(
            symmetric_matrix_mechanism(m, 1.0, budget, accountant=acct, noise=0), m, atol=tol
        )
        assert private_count(17, budget, accountant=acct, noise=0) == 17
    acct = Accountant(PureDP(1e3 * HUGE))
    pure = PureDP(HUGE)
    np.testing.assert_allclose(laplace_mechanism(x, 1.0, pure, accountant=acct, noise=0), x,
                               rtol=0, atol=tol)
    np.testing.assert_allclose(
        symmetric_matrix_mechanism(m, 1.0, pure, accountant=acct, noise=0), m, atol=tol
    )
    np.testing.assert_array_equal(private_count([3, 4], pure, accountant=acct, noise=0), [3, 4])
    assert exponential_mechanism([0.1, 0.3, 0.2], 1.0, pure, accountant=acct, noise=0) == 1
    assert above_threshold([0.1, 0.5, 0.9], 0.45, 1.0, pure, accountant=acct, noise=0) == 1
    acct = Accountant(ApproxDP(1e3 * HUGE, 0.5))
    huge_approx = ApproxDP(HUGE, 1e-6)
    out = truncated_laplace_mechanism(x, 1.0, huge_approx, accountant=acct, noise=0)
    np.testing.assert_allclose(out, x, rtol=0, atol=tol)
    # the stability histogram's threshold tends to 1: exact counts of the bins seen twice or more
    keys = np.array([5] * 3 + [8] * 2 + [9])
    assert stability_histogram(keys, huge_approx, accountant=acct, noise=0) == {5: 3, 8: 2}


def test_infinite_budgets_are_refused_before_any_charge() -> None:
    for make in (lambda: ZCDP(math.inf), lambda: PureDP(math.inf),
                 lambda: ApproxDP(math.inf, 1e-6)):
        with pytest.raises(PrivacyBudgetError, match="finite"):
            make()


# ------------------------------------------------------------------------------------------
# charge before noise: a refused release draws nothing
# ------------------------------------------------------------------------------------------


def _calls(budget_kind: str) -> list[Callable[[Accountant, Any], Any]]:
    z, p, a = ZCDP(0.5), PureDP(1.0), ApproxDP(1.0, 1e-6)
    if budget_kind == "zcdp":
        return [
            lambda acct, src: gaussian_mechanism(np.zeros(2), 1.0, z, accountant=acct, noise=src),
            lambda acct, src: symmetric_matrix_mechanism(
                np.eye(2), 1.0, z, accountant=acct, noise=src
            ),
            lambda acct, src: private_count(3, z, accountant=acct, noise=src),
        ]
    if budget_kind == "pure":
        return [
            lambda acct, src: laplace_mechanism(np.zeros(2), 1.0, p, accountant=acct, noise=src),
            lambda acct, src: symmetric_matrix_mechanism(
                np.eye(2), 1.0, p, accountant=acct, noise=src
            ),
            lambda acct, src: private_count(3, p, accountant=acct, noise=src),
            lambda acct, src: exponential_mechanism([0.0, 1.0], 1.0, p, accountant=acct, noise=src),
            lambda acct, src: above_threshold([0.0, 1.0], 0.5, 1.0, p, accountant=acct, noise=src),
        ]
    return [
        lambda acct, src: gaussian_mechanism(np.zeros(2), 1.0, a, accountant=acct, noise=src),
        lambda acct, src: truncated_laplace_mechanism(0.0, 1.0, a, accountant=acct, noise=src),
        lambda acct, src: stability_histogram(np.array([1, 1]), a, accountant=acct, noise=src),
        lambda acct, src: private_count(3, a, accountant=acct, noise=src),
    ]


@pytest.mark.parametrize(
    "kind,total", [("zcdp", ZCDP(1.0)), ("pure", PureDP(1.5)), ("approx", ApproxDP(1.5, 1e-5))]
)
@pytest.mark.parametrize("as_generator", [False, True])
def test_refused_release_draws_no_noise(kind: str, total: Any, as_generator: bool) -> None:
    for call in _calls(kind):
        acct = Accountant(total)
        fill = ZCDP(0.9) if kind == "zcdp" else ApproxDP(1.0, 0.0) if kind == "pure" else None
        if fill is None:
            acct.spend(ApproxDP(1.0, 9e-6))
        else:
            acct.spend(fill)
        ledger = list(acct.ledger)
        gen = np.random.default_rng(123)
        src = gen if as_generator else NoiseSource(gen)
        with pytest.raises(PrivacyBudgetError):
            call(acct, src)
        assert acct.ledger == ledger
        # the generator was not touched: its next draw is the first draw of a fresh one
        assert gen.random() == np.random.default_rng(123).random()
        # and the same call goes through on a fresh accountant, drawing noise
        call(Accountant(total), gen)
        assert gen.random() != np.random.default_rng(123).random()


@pytest.mark.parametrize(
    "call",
    [
        lambda acct, src: gaussian_mechanism(0.0, 1.0, PureDP(1.0), accountant=acct, noise=src),
        lambda acct, src: laplace_mechanism(0.0, 1.0, ZCDP(1.0), accountant=acct, noise=src),
        lambda acct, src: laplace_mechanism(
            0.0, 1.0, ApproxDP(1.0, 1e-6), accountant=acct, noise=src
        ),
        lambda acct, src: truncated_laplace_mechanism(
            0.0, 1.0, PureDP(1.0), accountant=acct, noise=src
        ),
        lambda acct, src: stability_histogram(np.array([1]), ZCDP(1.0), accountant=acct, noise=src),
        lambda acct, src: exponential_mechanism([0, 1], 1.0, ZCDP(1.0), accountant=acct, noise=src),
        lambda acct, src: above_threshold(
            [0.0], 0.0, 1.0, ApproxDP(1.0, 1e-6), accountant=acct, noise=src
        ),
        lambda acct, src: gaussian_mechanism(0.0, -1.0, ZCDP(1.0), accountant=acct, noise=src),
        lambda acct, src: gaussian_mechanism(0.0, math.nan, ZCDP(1.0), accountant=acct, noise=src),
        lambda acct, src: laplace_mechanism(0.0, math.inf, PureDP(1.0), accountant=acct, noise=src),
        lambda acct, src: private_count(1, PureDP(1.0), accountant=acct, noise=src, sensitivity=-1),
        lambda acct, src: exponential_mechanism([0], -1.0, PureDP(1.0), accountant=acct, noise=src),
        lambda acct, src: above_threshold(
            [0.0], 0.0, math.nan, PureDP(1.0), accountant=acct, noise=src
        ),
        lambda acct, src: truncated_laplace_mechanism(
            0.0, -2.0, ApproxDP(1.0, 1e-6), accountant=acct, noise=src
        ),
        lambda acct, src: symmetric_matrix_mechanism(
            np.eye(2), -1.0, ZCDP(1.0), accountant=acct, noise=src
        ),
    ],
)
def test_wrong_budget_or_sensitivity_is_refused_before_charging(call: Callable) -> None:
    acct = Accountant(ApproxDP(1e12, 0.5))
    gen = np.random.default_rng(5)
    with pytest.raises(ValueError):  # PrivacyBudgetError is a ValueError too
        call(acct, gen)
    assert acct.ledger == []
    assert gen.random() == np.random.default_rng(5).random()


def test_inputs_are_not_mutated() -> None:
    x = np.array([1.0, 2.0, 3.0])
    m = np.array([[1.0, 2.0], [0.0, 1.0]])  # not symmetric: the mechanism symmetrises a copy
    c = np.array([4, 5])
    keys = np.array([1, 1, 2])
    keep = [a.copy() for a in (x, m, c, keys)]
    acct = _acct(ApproxDP(1e12, 0.5))
    gaussian_mechanism(x, 1.0, ApproxDP(1.0, 1e-6), accountant=acct, noise=0)
    laplace_mechanism(x, 1.0, PureDP(1.0), accountant=acct, noise=0)
    out = symmetric_matrix_mechanism(m, 1.0, ApproxDP(HUGE, 1e-6), accountant=acct, noise=0)
    np.testing.assert_allclose(out, [[1.0, 1.0], [1.0, 1.0]], rtol=0, atol=1e-4)
    private_count(c, PureDP(1.0), accountant=acct, noise=0)
    truncated_laplace_mechanism(x, 1.0, ApproxDP(1.0, 1e-6), accountant=acct, noise=0)
    stability_histogram(keys, ApproxDP(1.0, 1e-6), accountant=acct, noise=0)
    for a, k in zip((x, m, c, keys), keep, strict=True):
        np.testing.assert_array_equal(a, k)


def _hockey_stick(pmf: Callable[[int], Any], sens: int, eps: float, width: int) -> float:
    """max over both orders of sum_k max(0, P(k) − e^ε P(k − Δ)), in 50-digit arithmetic."""
    mpmath.mp.dps = 50
    e = mpmath.exp(eps)
    ks = range(-width, width + sens + 1)
    fwd = sum(max(0, pmf(k) - e * pmf(k - sens)) for k in ks)
    bwd = sum(max(0, pmf(k - sens) - e * pmf(k)) for k in ks)
    return float(max(fwd, bwd))


@pytest.mark.parametrize("eps,delta", [(5.0, 1e-3), (2.0, 1e-3), (1.0, 1e-6)])
def test_approx_dp_count_is_a_rounded_gaussian_within_delta(eps: float, delta: float) -> None:
    sigma = gaussian_sigma_analytic(1.0, eps, delta)
    s = mpmath.mpf(sigma)
    width = int(40 * sigma) + 10

    def rounded(k: int) -> Any:
        return mpmath.ncdf((k + 0.5) / s) - mpmath.ncdf((k - 0.5) / s)

    norm = mpmath.fsum(mpmath.exp(-(mpmath.mpf(z) ** 2) / (2 * s**2)) for z in range(-width, width))

    def discrete(k: int) -> Any:
        return mpmath.exp(-(mpmath.mpf(k) ** 2) / (2 * s**2)) / norm

    # rounding the continuous Gaussian is post-processing: within delta
    assert _hockey_stick(rounded, 1, eps, width) <= delta
    if eps >= 2:  # the exact discrete Gaussian at the same sigma would not be
        assert _hockey_stick(discrete, 1, eps, width) > 1.1 * delta
    # and that is what the mechanism releases, in both modes
    acct = Accountant(ApproxDP(1e12, 0.5))
    for noise, n in ((0, 100_000), (None, 5_000)):
        out = private_count(np.full(n, 4), ApproxDP(eps, delta), accountant=acct, noise=noise) - 4
        assert acct.ledger[-1].mechanism == "count-rounded-gaussian"
        m = int(np.abs(out).max()) + 1
        cells = np.arange(-m, m + 1)
        expected = n * np.array([float(rounded(int(k))) for k in cells])
        observed = np.array([np.sum(out == k) for k in cells], dtype=float)
        big = expected >= 5  # cells with few expected draws are pooled into one
        obs, exp = observed[big], expected[big]
        if n - exp.sum() >= 5:
            obs, exp = np.append(obs, n - obs.sum()), np.append(exp, n - exp.sum())
        else:  # the pooled cell is too small to test: condition on the big cells
            exp = exp * obs.sum() / exp.sum()
        assert stats.chisquare(obs, exp).pvalue > ALPHA


def test_secure_path_end_to_end() -> None:
    acct = Accountant(ZCDP(1.0))
    x = np.zeros(2000)
    out = gaussian_mechanism(x, 1.0, ZCDP(0.5), accountant=acct)  # noise=None: secure
    assert out.shape == x.shape and np.all(out != 0)
    assert stats.kstest(out, "norm").pvalue > ALPHA  # sigma = 1/sqrt(2 * 0.5) = 1
    idx = exponential_mechanism([0.0, 100.0], 1.0, PureDP(1.0), accountant=acct)
    assert idx == 1  # wrong with probability e^-50
    assert acct.spent.rho == pytest.approx(1.0)


def test_stability_histogram_from_counts_is_the_release_of_the_records() -> None:
    """A histogram counted elsewhere (streamed) gives the release of the records themselves
    at the same noise seed; malformed counts are refused before anything is charged."""
    keys = np.array([5, -3, 5, 5, 12, -3, 5, 0] * 40)
    bins, counts = np.unique(keys, return_counts=True)
    budget = ApproxDP(1.0, 1e-6)
    a, b = Accountant(ApproxDP(2.0, 1e-5)), Accountant(ApproxDP(2.0, 1e-5))
    want = stability_histogram(keys, budget, accountant=a, noise=7)
    assert want and stability_histogram(bins, budget, accountant=b, noise=7,
                                        counts=counts) == want
    c = Accountant(ApproxDP(2.0, 1e-5))
    for bad_bins, bad_counts in ((bins[::-1], counts[::-1]), (bins, counts * 0),
                                 (bins, counts[:-1])):
        with pytest.raises(ValueError, match="counts"):
            stability_histogram(bad_bins, budget, accountant=c, noise=7, counts=bad_counts)
    assert c.ledger == []


def test_release_context_names_steps_and_forwards_to_child_ledgers() -> None:
    """A Release charges its accountant under its step prefix: ``at`` nests a step, ``named``
    only fills an empty prefix, ``child`` lists the child's charges under its name in the
    parent ledger, ``prepaid`` keeps them in the paying entry's parts; the noise source (and
    its rng) is shared, never re-seeded."""
    from privgauss.mechanisms import Release
    from privgauss.noise import NoiseSource
    from privgauss.privacy import ZCDP, Accountant

    acct = Accountant(ZCDP(1.0))
    rel = Release.of(acct, 3, "fit")
    assert isinstance(rel.noise, NoiseSource) and rel.rng is rel.noise.rng
    assert rel.at("round-1").step == "fit/round-1" and rel.at("").step == "fit"
    assert Release(acct, rel.noise).at("x").step == "x"
    assert rel.named("other") is rel and Release(acct, rel.noise).named("kssu").step == "kssu"
    assert rel.at("a").noise is rel.noise
    gaussian_mechanism(1.0, 1.0, ZCDP(0.1), accountant=rel.accountant, noise=rel.noise,
                       step=rel.name("mean"))
    child = rel.child("sub", ZCDP(0.3))
    assert child.step == "" and child.noise is rel.noise
    gaussian_mechanism(1.0, 1.0, ZCDP(0.2), accountant=child.accountant, noise=child.noise,
                       step="m")
    assert [e.step for e in acct.ledger] == ["fit/mean", "sub/m"]
    paid = acct.spend(ZCDP(0.4), step="paid")
    inner = rel.prepaid(paid, ZCDP(0.4), "node")
    gaussian_mechanism(1.0, 1.0, ZCDP(0.4), accountant=inner.accountant, noise=inner.noise,
                       step="x")
    assert len(acct.ledger) == 3 and [p.step for p in paid.parts] == ["node/x"]
    # the same seeded draws as the bare noise source
    a = Release.of(Accountant(ZCDP(1.0)), 7).noise.gaussian(np.zeros(3), 1.0)
    b = NoiseSource(7).gaussian(np.zeros(3), 1.0)
    np.testing.assert_array_equal(a, b)


def test_soft_statistics_release_is_charged_once_at_its_joint_cost() -> None:
    """EM's (N, S, M) released together: one ledger entry at soft_statistics_zcdp of the
    blocks' ρ (0.85 of their sum at 0.1/0.3/0.6), each block's noise that of its own ρ and
    sensitivity (√2, 2r, √2·r²; M: σ on the diagonal, σ/√2 off it), shapes kept, and the
    noise drawn in the blocks' order as three separate releases would draw it."""
    r, rhos = 1.5, (0.01, 0.03, 0.06)
    acct = _acct()
    k, d = 4000, 6
    N, S, M = np.zeros(k), np.zeros((k, d)), np.zeros((k, d, d))
    Nn, Sn, Mn = soft_statistics_mechanism(N, S, M, r, rhos, accountant=acct, noise=5,
                                           step="em step")
    assert len(acct.ledger) == 1
    e = acct.ledger[0]
    assert e.step == "em step" and e.cost == ZCDP(soft_statistics_zcdp(*rhos))
    assert e.cost.rho == pytest.approx(0.85 * sum(rhos))
    sig = (math.sqrt(2) / math.sqrt(0.02), 2 * r / math.sqrt(0.06),
           math.sqrt(2) * r * r / math.sqrt(0.12))
    assert Nn.shape == N.shape and Sn.shape == S.shape and Mn.shape == M.shape
    _assert_std(Nn, sig[0])
    _assert_std(Sn.ravel(), sig[1])
    _assert_std(np.diagonal(Mn, axis1=1, axis2=2).ravel(), sig[2])
    _assert_std(Mn[:, 0, 1], sig[2] / math.sqrt(2))
    np.testing.assert_array_equal(Mn, np.swapaxes(Mn, 1, 2))
    a2 = _acct()
    src = NoiseSource(5)
    three = (gaussian_mechanism(N, math.sqrt(2), ZCDP(rhos[0]), accountant=a2, noise=src),
             gaussian_mechanism(S, 2 * r, ZCDP(rhos[1]), accountant=a2, noise=src),
             symmetric_matrix_mechanism(M, math.sqrt(2) * r * r, ZCDP(rhos[2]), accountant=a2,
                                        noise=src))
    for got, want in zip((Nn, Sn, Mn), three, strict=True):
        np.testing.assert_array_equal(got, want)
    pooled = soft_statistics_mechanism(N[:3], S[:3], M[0], r, rhos, accountant=_acct(), noise=1)
    assert pooled[2].shape == (d, d)
    # a Lloyd step: counts and sums only, at max(ρ_N + ρ_S/2, ρ_S)
    a3 = _acct()
    lloyd = soft_statistics_mechanism(N, S, None, r, (0.02, 0.08, 0.0), accountant=a3, noise=5)
    assert lloyd[2] is None and len(a3.ledger) == 1
    assert a3.ledger[0].cost.rho == pytest.approx(0.08)
    np.testing.assert_array_equal(lloyd[1], NoiseSource(5).gaussian(np.zeros(N.size + S.size),
                                                                     1.0)[N.size:].reshape(
        S.shape) * (2 * r / math.sqrt(0.16)))
    # the re-whitening: sums and moments of rows of responsibility 1, at ρ_S/2 + ρ_M + Q
    a4 = _acct()
    rw = soft_statistics_mechanism(None, S[0], M[0], r, (0.0, 0.02, 0.08), accountant=a4,
                                   noise=5)
    assert rw[0] is None and rw[2].shape == (d, d) and len(a4.ledger) == 1
    assert a4.ledger[0].cost.rho == pytest.approx(0.01 + 0.08 + 0.02**2 / (16 * 0.08))
    for bad_n, bad_m, bad in ((N, M, (0.0, 0.1, 0.1)), (N, M, (0.1, 0.1, 0.0)),
                              (N, None, (0.1, 0.1, 0.1)), (None, M, (0.1, 0.1, 0.1)),
                              (None, None, (0.0, 0.1, 0.0))):
        with pytest.raises(ValueError):
            soft_statistics_mechanism(bad_n, S, bad_m, r, bad, accountant=_acct(), noise=1)


@pytest.mark.slow
def test_soft_statistics_release_passes_an_audit_at_its_charge_and_fails_below() -> None:
    """An audit of the joint release on its worst neighbours (a row kept in one component,
    y' turned against y by the derivation's angle: every block moves at once) passes at the
    charged ρ's ε and is flagged at the exact ε of half that charge (Balle–Wang's Gaussian
    profile, not the looser zCDP conversion) — the composed sum would pass too, so this is
    the check that the joint cost is not set too low."""
    from scipy.optimize import brentq

    from privgauss.audit import audit_mechanism
    from privgauss.privacy import zcdp_to_epsilon

    r, rhos, d = 1.0, (0.05, 0.15, 0.3), 2
    u = -rhos[1] / (4 * rhos[2])
    y = np.array([r, 0.0])
    yp = r * np.array([u, math.sqrt(1 - u * u)])
    sig = (1 / math.sqrt(rhos[0]), 2 * r / math.sqrt(2 * rhos[1]),
           math.sqrt(2) * r * r / math.sqrt(2 * rhos[2]))
    # the likelihood ratio's direction: each block's change over its noise variance (an
    # off-diagonal coordinate of M counts twice in the Frobenius norm, its noise is σ/√2)
    iu = np.triu_indices(d)
    dS, dM = y - yp, np.outer(y, y) - np.outer(yp, yp)
    w_s = dS / sig[1] ** 2
    w_m = dM[iu] * np.where(iu[0] == iu[1], 1.0, 2.0) / sig[2] ** 2

    def mech(row: np.ndarray, g: np.random.Generator) -> float:
        _, Sn, Mn = soft_statistics_mechanism(np.ones(1), row[None, :], np.outer(row, row)[None],
                                              r, rhos, accountant=_acct(), noise=g)
        return float(Sn[0] @ w_s + Mn[0][iu] @ w_m)

    def exact_eps(rho: float, delta: float) -> float:
        mu = math.sqrt(2 * rho)
        return brentq(lambda e: stats.norm.cdf(-e / mu + mu / 2)
                      - math.exp(e) * stats.norm.cdf(-e / mu - mu / 2) - delta, 0.0, 50.0)

    cost, delta = soft_statistics_zcdp(*rhos), 1e-3
    ok = audit_mechanism(mech, y, yp, epsilon=zcdp_to_epsilon(cost, delta), delta=delta,
                         n_runs=100_000)
    assert ok.passed, str(ok)
    low = audit_mechanism(mech, y, yp, epsilon=exact_eps(cost / 2, delta), delta=delta,
                          n_runs=100_000)
    assert not low.passed, str(low)
