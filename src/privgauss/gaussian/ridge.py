"""A ridge the refinement's prior cannot exclude: independent ±η jitter on every entry of the
private rows before a whitening chain, removed from the released covariance afterwards (our
design, for :mod:`.histogram` and :mod:`.public`).

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

from functools import partial
from typing import Any

import numpy as np

from ..backends import is_dask
from ..linalg import sym

__all__ = ["RIDGE_KEEP", "jitter_rows", "unjitter"]

# after removing the jitter's η²·I, the released spectrum is floored at this fraction of η²
RIDGE_KEEP = 0.1


def jitter_rows(Z: Any, eta: float, src: Any, *, owned: bool) -> Any:
    """Z plus an independent ±eta on every entry (fair signs from the fit's noise source ``src``;
    a dask ``Z`` gets them chunk by chunk from a seed drawn here, lazily). ``owned``: a numpy
    ``Z`` may be written in place (a fresh array of the caller's, never the user's rows).
    Signs rather than normals: one random byte per entry, a fifth of a Gaussian draw's cost."""
    if is_dask(Z):
        seed = int(src.rng.integers(2**62))
        return Z.map_blocks(partial(_jitter_block, seed=seed, eta=eta), dtype=np.float64)
    out = Z if owned else np.array(Z, dtype=np.float64, copy=True)
    _add_signs(out, np.frombuffer(src.rng.bytes(out.size), dtype=np.int8), eta)
    return out


def _add_signs(B: np.ndarray, raw: np.ndarray, eta: float) -> None:
    signs = (raw >> 7) | 1  # -1 or +1 from the top bit of each byte
    B += eta * signs.reshape(B.shape).astype(np.float64)


def _jitter_block(B: np.ndarray, seed: int, eta: float,
                  block_info: dict[Any, Any] | None = None) -> np.ndarray:
    """One dask chunk of :func:`jitter_rows` (module level: picklable to workers); its signs
    come from the seed and the chunk's position, not from the order chunks are computed in."""
    where = tuple(block_info[0]["chunk-location"]) if block_info else (0,)
    rng = np.random.default_rng([seed, *where])
    out = np.array(B, dtype=np.float64, copy=True)
    _add_signs(out, np.frombuffer(rng.bytes(out.size), dtype=np.int8), eta)
    return out


def unjitter(cov: np.ndarray, eta2: float) -> np.ndarray:
    """The released covariance less the jitter's eta²·I, its spectrum floored at
    RIDGE_KEEP·eta² (post-processing): a ridge that vanishes with eta²."""
    w, V = np.linalg.eigh(sym(cov) - eta2 * np.eye(cov.shape[0]))
    return sym((V * np.maximum(w, RIDGE_KEEP * eta2)) @ V.T)
