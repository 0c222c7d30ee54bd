"""Point masses (atoms) in the columns of private EM's rows: a DP signal that a non-private
mixture can score far higher than the private fit by parking a component on a single value
(issue 27: :class:`~privgauss.warnings.DiscreteDataWarning` beyond the eigenvalue-floor test).

**Reference.** Our design. On a column where many rows share one value the likelihood of a
Gaussian mixture is unbounded: scikit-learn's ``GaussianMixture`` collapses a component onto
the value (its variance → ``reg_covar``) and scores far above any fit that does not, while
private EM's fit may not sit at its floor there at all (rwm, Treatment of the held-out corpus
once ended 2.0 and 3.0 nat/row below scikit-learn, neither fit near its floor; the wide plan's
Cholesky factors let parked components thin out since, ``benchmarks/results/em_parked.md``).

**Neighbours:** replace one row of the private rows; n is public. **Guarantee:** one Gaussian
mechanism, ρ-zCDP at the plan's ``rho_atoms`` (``ATOM_SHARE`` = 1 % of private EM's ρ, taken
from the EM steps; ledger entry "em atom counts"), for every public dataset and prior: the
grid is a function of the released frame and public constants only.

**Statistic.** Column j of each row is binned on a fine grid in the released frame: cells of
width ``ATOM_WIDTH`` · s_j (s_j the frame's released standard deviation of column j, 10⁻³ of
it) from the frame's released mean m₀_j, folded modulo ``ATOM_CELLS`` (2¹⁴ cells: cells
16.4 s_j apart share a count — still a fixed partition of the line, so a row is in one cell
whatever it is; a value too large for the index shares the outermost cell). Released: the
heaviest cell's count of every column, jointly, with Gaussian noise of L2 sensitivity √d
(:func:`~privgauss.sensitivity.column_max_counts_l2`: a replaced row leaves one cell and
joins one in each column, so each maximum moves by at most 1). An atom falls in one cell
whatever the width; a continuous column of n rows puts at most about 0.4·10⁻³·n rows in a
cell. One pass over the rows (:func:`~privgauss.backends.reduce_rows`, a picklable kernel:
in memory, dask arrays and files alike).

**Decision** (:func:`atom_gain`, post-processing of the release and the released fit). The
mass of column j's heaviest cell, at its noise's lower confidence bound
p_j = (c̃_j − z·σ)/n (z the one-sided 1 − ``ATOM_FALSE``/d normal quantile, σ the release's
noise sd; clamped to [0, 1]), and v_j, the smallest variance of column j among the released
fit's components. A mixture with a component of weight p_j at the atom and variance
``REG_COVAR`` there (scikit-learn's default ``reg_covar``, 10⁻⁶ in the data's units) has a
marginal density in column j at the atom of at least p_j/√(2π·10⁻⁶); the released fit's is
at most 1/√(2π·v_j). On the atom's rows the non-private fit gains at least
ln p_j + ½·ln(v_j/10⁻⁶) nat there, so
gain_j = p_j · (ln p_j + ½·ln(v_j / 10⁻⁶)) nat/row (0 when negative or p_j = 0). The
estimator warns when max_j gain_j ≥ ``ATOM_ALARM`` = 1 nat/row (issue 27's bar). The noise
margin zσ/n vanishes as the budget grows; a continuous column's heaviest cell (≈ 4·10⁻⁴ of
the rows) gains at most ≈ 4·10⁻⁴·(½·ln(v/10⁻⁶) − 7.8) < 0.01 nat/row.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from ..backends import block_rows, reduce_rows
from ..mechanisms import Release, gaussian_mechanism
from ..privacy import ZCDP
from ..sensitivity import column_max_counts_l2

__all__ = ["ATOM_ALARM", "ATOM_SHARE", "atom_gain", "release_atom_counts"]

ATOM_SHARE = 0.01  # of ρ_EM (taken from the EM steps), the per-column heaviest cell counts
ATOM_WIDTH = 1e-3  # a cell's width, in the released standard deviation of its column
ATOM_CELLS = 2**14  # cells per column; the grid is folded modulo this many
ATOM_FALSE = 1e-3  # the chance that noise alone lifts some column's lower bound above its count
REG_COVAR = 1e-6  # the variance a non-private mixture parks a component at (sklearn's default)
ATOM_ALARM = 1.0  # nat/row: the estimated gain of a parked component that warns
_INDEX_LIMIT = 2.0**52  # |cell index| beyond which values share the outermost cell


def atom_kernel(B: np.ndarray, origin: np.ndarray, width: np.ndarray) -> list[np.ndarray]:
    """Per column, the counts of a block's rows in each of the ``ATOM_CELLS`` folded cells
    (shape (d, ATOM_CELLS)): cell ⌊(x_j − origin_j)/width_j⌋ mod ``ATOM_CELLS``. A value whose
    index overflows is put in the outermost cell and a NaN in cell 0 (per record, as if
    clipped). Module level: picklable to dask workers. Nothing here is released."""
    d = B.shape[1]
    with np.errstate(all="ignore"):
        U = np.nan_to_num((B - origin) / width, nan=0.0, posinf=_INDEX_LIMIT,
                          neginf=-_INDEX_LIMIT)
    idx = np.floor(np.clip(U, -_INDEX_LIMIT, _INDEX_LIMIT)).astype(np.int64) % ATOM_CELLS
    flat = (idx + np.arange(d, dtype=np.int64) * ATOM_CELLS).ravel()
    return [np.bincount(flat, minlength=d * ATOM_CELLS).reshape(d, ATOM_CELLS)]


def heaviest_cells(X: Any, m0: np.ndarray, Winv: np.ndarray) -> np.ndarray:
    """The count of each column's heaviest cell (not released): one pass over ``X`` (numpy
    or dask), cells of width ``ATOM_WIDTH`` × the frame's standard deviation of the column
    (the rows of ``Winv`` give the frame's covariance Winv·Winvᵀ) from ``m0``."""
    sd = np.sqrt(np.maximum(np.einsum("ij,ij->i", Winv, Winv), 1e-300))
    # blocks of at least 4 × ATOM_CELLS rows: each block's (d, ATOM_CELLS) counts are added
    # to the total, which would dominate on the default ~1 MB blocks at large d
    block = max(block_rows(int(X.shape[1])), 4 * ATOM_CELLS)
    counts = reduce_rows(X, partial(atom_kernel, origin=np.asarray(m0, dtype=np.float64),
                                    width=ATOM_WIDTH * sd), block=block)[0]
    return np.asarray(counts, dtype=np.float64).max(axis=1)


def release_atom_counts(X: Any, m0: np.ndarray, Winv: np.ndarray, rho: float,
                        release: Release) -> dict[str, Any]:
    """Release the d heaviest-cell counts of ``X`` in the frame (``m0``, ``Winv``: released)
    jointly by the Gaussian mechanism at ρ = ``rho`` (sensitivity √d, step "em atom counts").
    Returns the noisy counts with their public context (n, the noise sd, the cell width)."""
    n, d = int(X.shape[0]), int(X.shape[1])
    top = heaviest_cells(X, m0, Winv)
    sens = column_max_counts_l2(d)
    noisy = gaussian_mechanism(top, sens, ZCDP(rho), accountant=release.accountant,
                               noise=release.noise, step=release.name("em atom counts"))
    return {"noisy": np.atleast_1d(np.asarray(noisy, dtype=np.float64)).tolist(),
            "n": float(n), "noise_scale": sens / math.sqrt(2.0 * rho), "width": ATOM_WIDTH}


def atom_gain(atoms: dict[str, Any], covs: np.ndarray) -> dict[str, float]:
    """What a component parked on a column's heaviest cell would gain over the released fit
    (nat/row; see the module docstring): from the released counts ``atoms`` (as
    :func:`release_atom_counts` returns them) and the released fit's covariances ``covs``
    (the data's units) only — post-processing. Returns the largest ``gain``, its ``column``,
    that column's lower-bound ``mass`` p_j and ``variance`` v_j, and the ``alarm``."""
    noisy = np.asarray(atoms["noisy"], dtype=np.float64)
    n, sigma = float(atoms["n"]), float(atoms["noise_scale"])
    d = noisy.shape[0]
    from scipy import stats

    z = float(stats.norm.isf(ATOM_FALSE / d))
    mass = np.clip((noisy - z * sigma) / n, 0.0, 1.0)
    covs = np.asarray(covs, dtype=np.float64)
    var = np.min(np.diagonal(covs, axis1=1, axis2=2), axis=0)
    with np.errstate(all="ignore"):
        gain = mass * (np.log(mass) + 0.5 * np.log(np.maximum(var, 1e-300) / REG_COVAR))
    gain = np.where((mass > 0) & np.isfinite(gain), np.maximum(gain, 0.0), 0.0)
    j = int(np.argmax(gain))
    return {"gain": float(gain[j]), "column": float(j), "mass": float(mass[j]),
            "variance": float(var[j]), "alarm": ATOM_ALARM}
