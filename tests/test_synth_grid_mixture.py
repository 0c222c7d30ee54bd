"""The mixture of normal scores fitted to a two-column table's noisy grid counts (issue 28,
:mod:`privgauss.synthesis.grid_mixture`): its gradient, the k BIC picks (the true k on
clustered counts, 1 on a single Gaussian's, noisy or not), and the synthesizer sampling it
with no release of its own."""

from __future__ import annotations

import warnings

import numpy as np
from scipy.optimize import approx_fprime
from scipy.special import ndtr

import privgauss as pg
from privgauss.synthesis import grid_mixture as gm

N = 2400
W3 = np.array([0.3, 0.4, 0.3])
MU3 = np.array([[-1.2, -1.0], [0.0, 1.0], [1.3, -0.5]])
COV3 = np.array([np.eye(2) * 0.2, [[0.3, 0.1], [0.1, 0.2]], np.eye(2) * 0.15])


def test_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(0)
    fine = rng.normal(24.0, 20.0, (10, 10))
    coarse = gm._blocks(fine, 2) + rng.normal(0.0, 10.0, (5, 5))
    quad = gm._Quadrature(10)
    for k in (1, 3):
        theta = rng.normal(0.0, 0.5, 6 * k - 1)
        args = (k, quad, coarse, 17.0, fine, 20.0, N, 2)
        num = approx_fprime(theta, lambda t, a=args: gm._objective(t, *a)[0], 1e-6)
        got = gm._objective(theta, *args)[1]
        assert np.max(np.abs(num - got)) <= 1e-4 * np.max(np.abs(num))


def test_clustered_counts_give_their_mixture() -> None:
    """Nearly noise-free counts of three clusters: BIC picks k = 3 and the fit's cell
    masses are the clusters' (the noise's guard vanishes as σ → 0)."""
    quad = gm._Quadrature(10)
    fine = N * quad.masses(W3, MU3, COV3)
    w, mu, cov, bics = gm.fit_grid_mixture(gm._blocks(fine, 2), 0.5, fine, 0.5, N, 2, 4)
    assert len(w) == 3 and min(bics, key=lambda k: bics[k]) == "3"
    assert np.max(np.abs(quad.masses(w, mu, cov) - fine / N)) < 2e-3


def test_a_single_gaussians_counts_keep_one_component() -> None:
    """Independent normal scores (no structure to invent): k = 1 at xclara's noise (σ 17 and
    20 per cell) and with the sampling noise alone."""
    for seed in range(4):
        rng = np.random.default_rng(seed)
        U = ndtr(rng.normal(size=(N, 2)))
        fine = np.histogram2d(U[:, 0], U[:, 1], bins=10, range=[[0, 1], [0, 1]])[0]
        coarse = gm._blocks(fine, 2)
        for sc, sf in ((17.0, 20.0), (1.0, 1.0)):
            w, *_ = gm.fit_grid_mixture(coarse + rng.normal(0.0, sc, coarse.shape), sc,
                                        fine + rng.normal(0.0, sf, fine.shape), sf, N, 2, 4)
            assert len(w) == 1, (seed, sc)


def test_synthesizer_samples_the_mixture_without_a_release() -> None:
    rng = np.random.default_rng(1)
    centres = np.array([[0.0, 0.0], [6.0, 0.0], [3.0, 5.0]])
    X = centres[rng.integers(0, 3, 3000)] + rng.normal(size=(3000, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pg.warnings.SeededNoiseWarning)
        syn = pg.PrivateSynthesizer(epsilon=1.0, delta=1e-6, random_state=2).fit(X)
    assert isinstance(syn.copula_, pg.PrivateGaussianMixture)
    assert syn.copula_.method_ == "grid-mixture" and syn.copula_.ledger_ == []
    assert syn.method_.endswith(f"-k{len(syn.copula_.weights_)}")
    steps = [e.step for e in syn.ledger_]
    assert steps == ["marginals/types", "marginals/range", "marginals/bins", "grid", "grid/fine"]
    # the rows follow the three clusters: few synthetic rows between them
    Y = syn.sample(3000, random_state=3)
    gap = np.linalg.norm(Y - np.array([3.0, 0.0]), axis=1) < 1.0
    real = np.linalg.norm(X - np.array([3.0, 0.0]), axis=1) < 1.0
    assert gap.mean() < 3 * max(real.mean(), 1e-3)
