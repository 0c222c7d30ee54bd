"""``method="auto"`` with a prior (issue 26): when both coinpress inside the prior and the
bound-free route can run, the choice is made from public facts before anything is spent — the
bound-free route when its planned covariance error is below ``BOUND_FREE_GAIN`` times
coinpress's — and the reason states both planned errors."""

from __future__ import annotations

import warnings

import numpy as np

import privgauss as pg
from privgauss import methods
from privgauss.methods.histogram import BOUND_FREE_GAIN, prior_against_bound_free
from privgauss.privacy import make_budget


def _facts(n: int, cov_bounds: tuple[float, float], **budget: float) -> methods.Facts:
    return methods.Facts("gaussian", make_budget(**budget), n, 9, mean_bound=400.0,
                         cov_bounds=cov_bounds)


def test_a_loose_prior_gives_way_to_the_bound_free_route() -> None:
    f = _facts(6366, (0.0068, 9600.0), epsilon=1.0, delta=1e-6)
    errors = prior_against_bound_free(f)
    assert errors is not None and errors[0] <= 10.0  # coinpress could run here
    assert errors[1] < BOUND_FREE_GAIN * errors[0]
    name, why = methods.choose("gaussian", "auto", f)
    assert name == "histogram"
    assert f"{errors[0]:.3g}" in why and f"{errors[1]:.3g}" in why and "cannot" not in why


def test_a_tight_prior_keeps_coinpress_and_says_why() -> None:
    f = _facts(6366, (0.5, 20.0), epsilon=1.0, delta=1e-6)
    errors = prior_against_bound_free(f)
    assert errors is not None and not errors[1] < BOUND_FREE_GAIN * errors[0]
    name, why = methods.choose("gaussian", "auto", f)
    assert name == "coinpress" and f"{errors[0]:.3g}" in why and f"{errors[1]:.3g}" in why


def test_no_comparison_without_an_approx_budget() -> None:
    f = _facts(6366, (0.0068, 9600.0), rho=0.02)
    assert prior_against_bound_free(f) is None
    assert methods.choose("gaussian", "auto", f)[0] == "coinpress"


def test_the_bound_free_release_is_projected_into_the_prior() -> None:
    """The fit auto runs with a loose prior is the bound-free one, inside the prior: the
    released mean within mean_bound of the centre and the spectrum within cov_bounds."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((6366, 9)) @ np.diag(np.linspace(0.5, 3.0, 9)) + 2.0
    lo, hi = 0.0068, 9600.0
    est = pg.PrivateGaussian(epsilon=1.0, delta=1e-6, mean_bound=400.0, cov_bounds=(lo, hi),
                             random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)
    assert est.method_ == "histogram"
    assert float(np.linalg.norm(est.mean_)) <= 400.0
    w = np.linalg.eigvalsh(est.covariance_)
    assert lo * (1 - 1e-9) <= w[0] and w[-1] <= hi * (1 + 1e-9)
