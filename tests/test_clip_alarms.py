"""ClippedDataWarning on Gaussian data at ε = 1 (issue 26): rare with and without a correct
prior, and a text that tells heavy tails from a partly missed fit and names the knob.

The 100-seed figures are ``benchmarks/results/gaussian_alarms.md``; here 30 seeds per setting
(a false alarm has probability ≈ 2e-3 per fit by :func:`alarm_fraction`'s construction)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import privgauss as pg
from privgauss.gaussian.clip_diagnostics import PARTIAL_MISS_FRACTION, clipped_advice
from privgauss.warnings import ClippedDataWarning


def _gaussian(seed: int, n: int = 5000, d: int = 10) -> tuple[np.ndarray, np.ndarray,
                                                              np.ndarray]:
    rng = np.random.default_rng(7000 + seed)
    u = rng.standard_normal(d)
    return pg.datasets.make_gaussian(n, d, mean=10 * u / np.linalg.norm(u),
                                     condition_number=100.0, random_state=rng)


@pytest.mark.parametrize("prior", [False, True])
def test_false_alarms_at_epsilon_1_with_and_without_a_correct_prior(prior: bool) -> None:
    warned = 0
    for s in range(30):
        X, mu, cov = _gaussian(s)
        w = np.linalg.eigvalsh(cov)
        kw = ({"mean_bound": 10 * float(np.linalg.norm(mu)) + 10,
               "cov_bounds": (w[0] / 10, 10 * w[-1])} if prior else {})
        est = pg.PrivateGaussian(epsilon=1.0, delta=1e-6, random_state=s, **kw)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(X)
        warned += any(issubclass(c.category, ClippedDataWarning) for c in caught)
        assert est.clipped_fraction_ is not None and est.clipped_fraction_ < 0.05
    assert warned <= 1


def test_the_warning_tells_tails_from_a_partly_missed_fit() -> None:
    tails = clipped_advice(0.06, 0.02)
    assert "6.0%" in tails and "2.0%" in tails
    assert "central part" in tails and "raise clip_scale" in tails
    missed = clipped_advice(PARTIAL_MISS_FRACTION + 0.1, 0.02)
    assert "missed part of the data" in missed and "will not fix" in missed
    assert "central part" not in missed
    assert clipped_advice(PARTIAL_MISS_FRACTION, 0.02) != clipped_advice(0.45, 0.02)
