"""The marginals' wider smoothing kernels chosen by Stein's unbiased risk estimate
(:func:`privgauss.synthesis.marginals._diffused`; post-processing of the histogram release)."""

from __future__ import annotations

import numpy as np

from privgauss.synthesis import marginals as marg


def _step(dens: np.ndarray) -> np.ndarray:
    """One step T of the wide kernel, written out: each inner bin's density moves by
    SMOOTH_WEIGHT times its second difference among the inner bins, reflected at their
    ends; the end bins stay."""
    mid = dens[1:-1]
    pad = np.concatenate([mid[:1], mid, mid[-1:]])
    return np.concatenate([dens[:1], mid + marg.SMOOTH_WEIGHT * (pad[:-2] - 2.0 * mid + pad[2:]),
                           dens[-1:]])


def test_diffusion_trace_is_the_trace_of_the_step_powers() -> None:
    """The closed-form tr T^k (the SURE's divergence term) equals the trace of the step's matrix
    built column by column — a wrong trace would make the risk estimate pick wrong kernels."""
    for m in (3, 4, 7, 30):
        t = np.column_stack([_step(e) for e in np.eye(m)])
        for k in (1, 2, 5, 16):
            assert np.isclose(np.trace(np.linalg.matrix_power(t, k)),
                              marg._diffusion_trace(m, k), rtol=1e-10, atol=1e-10)
    d = np.r_[0.3, np.linspace(1.0, 2.0, 10), 0.5]  # a linear inner density is kept
    assert np.allclose(_step(d)[2:-2], d[2:-2])


def test_a_flat_column_is_averaged_over_many_bins() -> None:
    """A flat column (a time index, every year once: ~60 bins of ~170 records against σ = 13,
    unequal widths, partial end bins) comes out of the wide kernel with much less error than
    out of the one James–Stein step; the end bins keep their own counts."""
    rng = np.random.default_rng(1)
    widths = np.r_[np.linspace(250.0, 170.0, 30), np.linspace(170.0, 250.0, 30)]
    true = 0.8 * widths
    true[0] *= 0.4
    true[-1] *= 0.6
    err_one, err_wide, wide_used = [], [], 0
    for _ in range(40):
        noisy = np.clip(true + rng.normal(0.0, 13.0, true.size), 0.0, None)
        change, lam = marg._smoothing(noisy, widths, 13.0)
        err_one.append(np.sum((np.clip(noisy + lam * change, 0.0, None) - true) ** 2))
        out = marg._smoothed(noisy, widths, 13.0)
        wide_used += marg._diffused(noisy, widths, 13.0) is not None
        err_wide.append(np.sum((out - true) ** 2))
        assert np.isclose(out[0], noisy[0]) and np.isclose(out[-1], noisy[-1])
    assert wide_used >= 36
    assert np.mean(err_wide) < 0.5 * np.mean(err_one)


def test_structure_keeps_the_one_step_and_the_kernel_vanishes_with_the_noise() -> None:
    """A column of two narrow bumps: the wide kernels' bias is larger than their noise
    reduction, the one step is kept (None); at a vanishing noise no column is diffused
    (consistency: SURE is then the kernel's squared bias, least at no smoothing)."""
    rng = np.random.default_rng(2)
    widths = np.ones(40)
    x = np.arange(40.0)
    true = 400.0 * (np.exp(-((x - 10) / 2.0) ** 2) + np.exp(-((x - 28) / 1.5) ** 2)) + 5.0
    kept = sum(marg._diffused(np.clip(true + rng.normal(0.0, 13.0, 40), 0.0, None), widths,
                              13.0) is None for _ in range(20))
    assert kept >= 19
    smooth = 100.0 + 30.0 * np.sin(x / 6.0)  # smooth but not linear
    assert marg._diffused(smooth, widths, 1e-6) is None
    assert marg._diffused(smooth + rng.normal(0.0, 13.0, 40), widths, 13.0) is not None


def test_the_closed_form_power_equals_repeated_steps() -> None:
    rng = np.random.default_rng(5)
    for m in (4, 7, 40):
        dens = rng.gamma(2.0, 3.0, m)
        cur = dens.copy()
        for k in range(1, 65):
            cur = _step(cur)
            if k in (1, 2, 3, 8, 64):
                assert np.allclose(marg._diffusion_power(dens, k), cur, rtol=1e-12, atol=1e-12)
        assert marg._diffusion_power(dens, 0)[0] == dens[0]
