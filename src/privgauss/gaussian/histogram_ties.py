"""The spread of a tied axis that the stability histograms could not localise: a ρ-zCDP release
of the octaves of its rows' distances to the released mode (our design, a fallback of
:mod:`privgauss.gaussian.histogram`).

**When.** A *tied* axis (most pair differences exactly 0: a 0/1 flag, a count with many zeros)
is localised from its exact-value location histogram. When that histogram releases a single
value v, yet its released count leaves more than 1 % of the rows elsewhere (a flag with 6 %
ones, a count with 72 % zeros and a long tail of distinct values at d = 17, ε = 1), the column
is neither constant nor localised: its other values are individually too rare for the joint
location threshold. Both facts are released quantities, so the decision to run this release is
a DP output.

**What.** For each such axis k (the set F is a DP output) and row i, the key is the octave
⌊log2 |x_ik − v_k|⌋, a fixed integer in [−1075, 1024] for any pair of float64 values, with two
more keys for x_ik = v_k and for a distance that overflows. Over this *fixed, finite* domain
the counts of all 2,102 keys are released with Gaussian noise — no stability threshold, so no
δ: **ρ-zCDP** under replace-one (n public). *Why:* one replaced row moves one count down and one
up in each of the |F| histograms, an L2 change of √(2|F|); σ = √(2|F|)/√(2ρ) = √(|F|/ρ).

**Post-processing.** Octaves whose noisy count exceeds σ·z (z: a false-positive rate of 1 % over
all the keys) are read as held by rows; the root mean square distance to v,
√(Σ_j c_j 4^(j+½) / n) over those octaves, is the axis's spread (an upper bound on its standard
deviation up to the octave's factor √2, and at least √(1 − p) times it when a fraction p of the
rows is away from v). The refinement's scale bracket is then taken around it, as for any tied
axis. When no octave is read, the axis fails (``None``): its other values are too few and too
spread to give a scale at this budget.

The caller charges ρ to the same accountant and takes it from the refinement's share, so the
fit's total is unchanged; the release runs only on the DP-chosen axes and only when there are
any (the ledger length varies through DP outputs only).
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np
from scipy.stats import norm

from ..backends import reduce_rows
from ..mechanisms import Release, gaussian_mechanism
from ..privacy import ZCDP
from ..sensitivity import histogram_l2

__all__ = ["octave_spreads"]

_MIN_OCTAVE, _MAX_OCTAVE = -1075, 1024  # ⌊log2 |a − b|⌋ for float64 a ≠ b with a finite difference
_EQUAL = 0  # key index of x = v
_OVERFLOW = _MAX_OCTAVE - _MIN_OCTAVE + 2  # key index of a difference that overflows
N_KEYS = _OVERFLOW + 1
_FALSE_POSITIVE = 0.01  # chance that some key holding no row is read as held (utility only)


def _octave_counts(B: np.ndarray, axes: np.ndarray, values: np.ndarray) -> list[np.ndarray]:
    """Counts of the octave keys of a block on the given axes, shape (len(axes), N_KEYS): the
    kernel of the release (module level: picklable to dask workers)."""
    out = np.zeros((len(axes), N_KEYS), dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for i, (k, v) in enumerate(zip(axes, values, strict=True)):
            dist = np.abs(B[:, k] - v)
            octave = np.floor(np.log2(dist))
            idx = np.where(np.isfinite(octave), octave - _MIN_OCTAVE + 1, _OVERFLOW)
            idx = np.where(dist == 0, _EQUAL, idx)
            out[i] += np.bincount(idx.astype(np.int64), minlength=N_KEYS)
    return [out]


def octave_spreads(
    X: object,
    axes: np.ndarray,
    values: np.ndarray,
    rho: float,
    *,
    release: Release,
) -> list[float | None]:
    """Release (ρ-zCDP, replace-one, n public) the octave histograms of |x_k − v_k| on ``axes``
    and return each axis's spread (post-processing; see the module docstring), or None for an
    axis none of whose octaves was read as held by rows. ``axes`` and ``values`` must be DP
    outputs or public; ρ is charged to ``release`` (one step, its prefix, or
    "octave-spreads") before any noise is drawn."""
    rel = release.named("octave-spreads")
    axes = np.asarray(axes, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    n = int(X.shape[0])  # type: ignore[attr-defined]
    (counts,) = reduce_rows(X, partial(_octave_counts, axes=axes, values=values))
    h = len(axes)
    sens = histogram_l2() * math.sqrt(h)
    noisy = gaussian_mechanism(counts, sens, ZCDP(rho), accountant=rel.accountant,
                               noise=rel.noise, step=rel.step).reshape(h, N_KEYS)
    sigma = sens / math.sqrt(2.0 * rho)
    read = sigma * float(norm.isf(_FALSE_POSITIVE / (h * N_KEYS)))
    with np.errstate(over="ignore"):
        centres = np.exp2(np.arange(_MIN_OCTAVE, _MAX_OCTAVE + 1, dtype=np.float64) + 0.5)
    out: list[float | None] = []
    for row in noisy:
        held = row > read
        if held[_OVERFLOW] or not held[1:_OVERFLOW].any():
            out.append(None)
            continue
        sel = held[1:_OVERFLOW]
        with np.errstate(over="ignore", invalid="ignore"):
            m2 = float(np.sum(row[1:_OVERFLOW][sel] * (centres[sel] / math.sqrt(n)) ** 2))
        out.append(math.sqrt(m2) if math.isfinite(m2) and m2 > 0 else None)
    return out
