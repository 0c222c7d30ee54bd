"""A ridge the refinement's prior cannot exclude: independent ±η jitter on every entry of the
private rows before a whitening chain, removed from the released covariance afterwards (our
design, for :mod:`.histogram`, :mod:`.public`, the PPE refinement and the mixture part
learners; :func:`ridged_gaussian` runs the whole of it around CoinPress).

CoinPress-style chains (Biswas et al. 2020) assume a lower bound on the covariance's spectrum
in their frame. Real tables break it — columns that are exact linear combinations of others
(dummies summing to 1), near-collinear ones (start/end positions), a public frame that does not
fit the private rows — and the chain then collapses (a direction released orders of magnitude
below the truth) or ends in a failure after spending. Adding η·s_ij, s_ij = ±1 independent
fair signs, to every entry makes the covariance the chain sees Σ + η²·I, whose smallest
eigenvalue is at least η² whatever the data; the mean is unchanged in expectation.

**Privacy.** The jitter is a fixed, data-independent randomisation of each record (its signs
come from the fit's own noise source, drawn whatever the rows are): every sensitivity computed
downstream holds, and the guarantee is that of the chain. **Post-processing.**
:func:`unjitter` subtracts η²·I from the release and floors its spectrum at
``RIDGE_KEEP``·η², so a direction the noise cannot resolve is returned at a small ridge
instead of 0 or a negative value; callers tie η² to the noise, so the ridge vanishes with it.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from ..backends import as_rows, is_dask
from ..exceptions import EstimationFailed
from ..linalg import sym
from ..mechanisms import Release
from .coinpress import gaussian_of_rows

__all__ = ["JITTER_SHARE", "RIDGE_KEEP", "check_chain", "jitter_rows", "jitter_seed",
           "ridged_gaussian", "transform_jittered", "unjitter"]

# after removing the jitter's η²·I, the released spectrum is floored at this fraction of η²
RIDGE_KEEP = 0.01

# The jitter's variance η² as a fraction of the chain's assumed lower bound lo (used by
# :mod:`.histogram`'s refinement and the mixture part learners of
# :mod:`privgauss.mixture.component_estimation`), chosen on mhtdata (near-collinear positions;
# ε = 1, ridge floor 0.01·η²) for the histogram route: it fails after spending without a
# jitter (3 of 3 seeds), fits 5 of 5 at 0.03 (median gap -0.03 nat/row), 3 of 3 at 0.1 (0.35);
# at 0.01 (floor 0.1·η²) it failed 1 of 3. At 1 a Gaussian table of condition 1e4 lost accuracy
# (covariance error 0.52 against < 0.2). At ε ≥ 1e4 exactly collinear dummies fit 10 of 10
# seeds at 0.03·lo, 1 of 2 with 0.1·lo·100/cond. (The held-out baseball was looked at while
# diagnosing — median gap over seeds 0-9: -0.87 without, -0.36 at 0.03, +1.62 at 0.1 — so it
# is no longer a clean held-out check of this constant.)
JITTER_SHARE = 0.03

# released smallest eigenvalue below this fraction of the prior's lower bound: a failure (good
# fits measured at ≥ 0.14·lo, failed ones at ≤ 5e-5·lo; see check_chain)
_PRIOR_SLACK = 1e-3


def ridged_gaussian(Z: Any, rho: float, eta2: float, *, release: Release,
                    cov_bounds: tuple[float, float], owned: bool, seed: int | None = None,
                    jittered: bool = False, check: str | None = None,
                    **chain: Any) -> tuple[np.ndarray, np.ndarray]:
    """CoinPress (:func:`~privgauss.gaussian.coinpress.gaussian_of_rows`, ``prior_floor=False``)
    on the rows ``Z`` plus a ±η jitter, η² = ``eta2``, with its release less η²·I.

    ``Z``: rows in the caller's frame (numpy or dask; ``owned``: a numpy ``Z`` may be jittered
    in place); ``seed``: the signs' seed when the caller drew it (:func:`jitter_seed`), else
    drawn here from ``release``'s noise source; ``jittered``: ``Z`` already carries the jitter
    (:func:`transform_jittered`). ``eta2 = 0``: no ridge, the chain as published. ``check``: the
    step a collapsed chain fails as (:func:`check_chain`, judged against η², or against lo
    without a ridge); None: not checked. ``chain``: CoinPress's other keywords (``center``,
    ``radius``, ``beta``, ``constants``, ``cover``). Returns CoinPress's mean and the
    unjittered covariance, in ``Z``'s frame.

    **Privacy:** ρ-zCDP under replace-one (n public), charged to ``release``: the jitter is a
    data-independent randomisation of each record (its signs drawn whatever the rows are), so
    CoinPress's guarantee holds for every public prior; the check and the unjitter are
    post-processing. The ridge vanishes with the noise: callers tie η² to lo, which falls as
    ρ grows, and :func:`unjitter` keeps at most ``RIDGE_KEEP``·η² of it."""
    eta = math.sqrt(eta2)
    if eta2 > 0 and not jittered:
        Z = jitter_rows(Z, eta, release.noise, owned=owned, seed=seed)
    mean, cov = gaussian_of_rows(as_rows(Z, min_rows=2), rho, cov_bounds=cov_bounds,
                                 release=release, prior_floor=False, **chain)
    cov = np.asarray(cov)
    if check is not None:
        check_chain(cov, eta2 if eta2 > 0 else cov_bounds[0], step=check)
    return np.asarray(mean), unjitter(cov, eta2) if eta2 > 0 else cov


def check_chain(cov_z: np.ndarray, lo: float, step: str = "histogram-refinement") -> None:
    """Fail (a DP output: a function of the release and the public ``lo``) when the released
    standardised covariance has an eigenvalue below _PRIOR_SLACK·lo (``lo``: the jitter's η²
    in the practical route, the prior's lower bound in "theory"): the whitening chain did not
    converge, and its estimate is then off by orders of magnitude (e.g. condition 1e8 with
    corr_condition=100 and no jitter: mean error 6.6e3, covariance error 2e2)."""
    if not float(np.linalg.eigvalsh(sym(cov_z))[0]) >= _PRIOR_SLACK * lo:
        raise EstimationFailed(
            "the released covariance is far more ill-conditioned than the refinement's prior "
            "allows: the correlation matrix's condition number exceeds corr_condition (raise "
            "it), or the refinement cannot whiten that range at this n (more rows); columns "
            "that are exact linear combinations of others (dummies that sum to 1, a total next "
            "to its parts) make it singular: drop one of them; or use method='public' with "
            "d+1 public rows",
            step=step,
        )


def jitter_rows(Z: Any, eta: float, src: Any, *, owned: bool, seed: int | None = None) -> Any:
    """Z plus an independent ±eta on every entry. The signs of rows [k·B, (k+1)·B) come from
    a generator seeded by (seed, k), the seed drawn from a generator spawned from the fit's
    noise source ``src``: the same signs for a numpy ``Z`` and for a dask ``Z`` however it is
    chunked (chunks are jittered lazily). ``owned``: a numpy ``Z`` may be written in place (a
    fresh array of the caller's, never the user's rows). Signs rather than normals: one
    random byte per entry, a fifth of a Gaussian draw's cost. ``seed``: one
    :func:`jitter_seed` already drew."""
    seed = jitter_seed(src) if seed is None else seed
    if is_dask(Z):
        return Z.map_blocks(partial(_jitter_block, seed=seed, eta=eta), dtype=np.float64)
    out = Z if owned else np.array(Z, dtype=np.float64, copy=True)
    _add_signs(out, 0, seed, eta)
    return out


def jitter_seed(src: Any) -> int:
    """The seed of a jitter's signs, drawn from a generator spawned from the fit's noise
    source (see :func:`jitter_rows`)."""
    return int(_child(src.rng).integers(2**62))


def transform_jittered(X: np.ndarray, a: np.ndarray, shift: np.ndarray, eta: float,
                       seed: int) -> np.ndarray | None:
    """``jitter_rows(transform_rows(X, a, shift), eta, ·)`` for C-contiguous numpy rows and
    a diagonal map ``a``, with the jitter's signs from ``seed``: the same values, in one
    pass (each cache-sized block of rows is mapped, (x − shift)·a as
    :func:`~privgauss.clipped_stats.transform_rows` computes it, then jittered while in
    cache). None, with nothing drawn beyond the seed, when a mapped row overflows or leaves
    ±1e150 (the caller then maps and jitters apart, and such rows are sent far)."""
    from ..clipped_stats import MAX_VALUE, TRANSFORM_VALUES

    n, d = X.shape
    if not (X.dtype == np.float64 and X.flags.c_contiguous and n and d):
        return None
    out = np.empty((n, d))
    step = max(1, TRANSFORM_VALUES // d)
    ts, ta = np.tile(shift, step), np.tile(a, step)
    with np.errstate(over="ignore", invalid="ignore"):
        for k in range(-(-n // _BLOCK)):
            lo, hi = k * _BLOCK, min(n, (k + 1) * _BLOCK)
            raw = _random_bytes(seed, k, _BLOCK * d).reshape(_BLOCK, d)
            for a0 in range(lo, hi, step):
                a1 = min(hi, a0 + step)
                xb = X[a0:a1].reshape(-1)
                ob = out[a0:a1].reshape(-1)
                m = xb.size
                np.subtract(xb, ts[:m], out=ob)
                np.multiply(ob, ta[:m], out=ob)
                if not (ob.max() <= MAX_VALUE and ob.min() >= -MAX_VALUE):  # NaN: too
                    return None
                out[a0:a1] += eta * ((raw[a0 - lo : a1 - lo] >> 7) | 1).astype(np.float64)
    return out


def _child(rng: np.random.Generator) -> np.random.Generator:
    """An independent generator spawned from ``rng`` without drawing from it, so the fit's
    noise draws after the jitter are those it would make without one (a generator with no
    seed sequence gives one draw instead)."""
    try:
        return rng.spawn(1)[0]
    except (TypeError, ValueError, AttributeError):
        return np.random.default_rng(int(rng.integers(2**62)))


_BLOCK = 1 << 16  # rows per block of signs


def _add_signs(B: np.ndarray, start: int, seed: int, eta: float) -> None:
    """Add the jitter of global rows [start, start + len(B)) to B in place."""
    stop, d = start + B.shape[0], B.shape[1]
    for k in range(start // _BLOCK, -(-stop // _BLOCK)):
        lo, hi = max(start, k * _BLOCK), min(stop, (k + 1) * _BLOCK)
        raw = _random_bytes(seed, k, _BLOCK * d).reshape(_BLOCK, d)
        raw = raw[lo - k * _BLOCK: hi - k * _BLOCK]
        B[lo - start: hi - start] += eta * ((raw >> 7) | 1).astype(np.float64)


def _random_bytes(seed: int, k: int, size: int) -> np.ndarray:
    """``np.random.default_rng([seed, k]).bytes(size)`` as int8 values — the same bytes: the
    generator's 32-bit draws are the halves of its PCG64 outputs, low half first, so its bytes
    are those outputs' little-endian bytes — read without the per-draw conversion
    (a third of the time)."""
    raw = np.random.PCG64([seed, k]).random_raw(-(-size // 8)).astype("<u8", copy=False)
    return raw.view(np.int8)[:size]


def _jitter_block(B: np.ndarray, seed: int, eta: float,
                  block_info: dict[Any, Any] | None = None) -> np.ndarray:
    """One dask chunk of :func:`jitter_rows` (module level: picklable to workers): its rows'
    global positions pick their signs."""
    start = int(block_info[0]["array-location"][0][0]) if block_info else 0
    out = np.array(B, dtype=np.float64, copy=True)
    _add_signs(out, start, seed, eta)
    return out


def unjitter(cov: np.ndarray, eta2: float) -> np.ndarray:
    """The released covariance less the jitter's eta²·I, its spectrum floored at
    RIDGE_KEEP·eta² (post-processing): a ridge that vanishes with eta²."""
    w, V = np.linalg.eigh(sym(cov) - eta2 * np.eye(cov.shape[0]))
    return sym((V * np.maximum(w, RIDGE_KEEP * eta2)) @ V.T)
