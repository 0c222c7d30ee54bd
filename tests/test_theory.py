"""The theory formulas scale as the theorems say (constants are set to 1, so only scaling is
checked), and refuse nonsense arguments."""

import math

import pytest

from privgauss import theory


def _slope(f, lo, hi):
    return math.log(f(hi) / f(lo)) / math.log(hi / lo)


def test_public_gaussian_scales_like_d_squared():
    s = _slope(lambda d: theory.public_gaussian_n(d, 0.1, 0.05, rho=0.5).n, 100, 1000)
    assert 1.9 < s < 2.3


def test_public_mean_scales_like_d_and_inverse_alpha_squared():
    assert 0.95 < _slope(lambda d: theory.public_mean_n(d, 0.1, 0.05, 0.5).n, 100, 10000) < 1.05
    # the statistical term dominates at large rho: n ~ 1/alpha^2
    s = _slope(lambda a: theory.public_mean_n(50, a, 0.05, 1e6).n, 0.01, 0.001)
    assert -2.05 < s < -1.95


def test_public_data_removes_range_dependence():
    # without public data the bound grows with R and K; with public data it does not depend on them
    small = theory.klsu_n(10, 0.1, 0.05, 0.5, radius=10, cond=10).n
    large = theory.klsu_n(10, 0.1, 0.05, 0.5, radius=1e12, cond=1e12).n
    assert large > small
    pub = theory.public_gaussian_n(10, 0.1, 0.05, rho=0.5)
    assert "R" not in pub.formula and pub.n > 0


def test_gamma_shift_costs_at_most_polylog():
    a = theory.public_gaussian_n(20, 0.1, 0.05, rho=0.5, gamma=0.0).n
    b = theory.public_gaussian_n(20, 0.1, 0.05, rho=0.5, gamma=0.5).n
    c = theory.public_gaussian_n(20, 0.1, 0.05, rho=0.5, gamma=0.99).n
    assert a < b < c < 10 * a


def test_pure_and_approx_versions():
    assert theory.public_gaussian_n(5, 0.1, 0.05, epsilon=1.0).theorem == "Thm 3.7 (pure)"
    m = theory.bksw_n(5, 0.1, 0.05, 1.0, radius=10).n
    f = theory.bksw_n(5, 0.1, 0.05, 1.0, radius=10, cond=10).n
    assert f > m
    assert theory.al21_n(5, 0.1, 0.05, 1.0, 1e-6).n > theory.al21_n(5, 0.1, 0.05, 10.0, 1e-6).n
    assert "indicative" in str(theory.clip_mean_n(5, 0.1, 0.05, 0.5, 10.0))


@pytest.mark.parametrize(
    "kw", [dict(alpha=0.0), dict(alpha=1.5), dict(beta=1.0), dict(rho=-1.0), dict(rho=math.nan)]
)
def test_refuses_bad_arguments(kw):
    args = dict(d=5, alpha=0.1, beta=0.05, rho=0.5) | kw
    with pytest.raises(ValueError):
        theory.public_mean_n(**args)
