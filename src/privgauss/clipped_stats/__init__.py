"""Clipped statistics of affinely mapped rows, over the block passes of :mod:`privgauss.backends`
(numpy in memory or dask chunks).

:class:`Rows` holds the private rows y_i of a computation (optionally under a public per-record
map, :func:`sanitize_rows`, :func:`affine_rows`) and evaluates mean_i clip_{B(c, τ)}(A(y_i − s))
and Σ_i clip_τ(A(y_i − s)) (…)ᵀ / n: by the clip-then-sum definition in one pass, or faster
from two-pass summaries plus an exact correction for the rows that may reach τ.
:func:`clipped_moments` gives both clipped moments in a fixed, public frame in one pass
(:func:`exact_clipped_moments` is its reference definition). Nothing here is released: each
result equals its clip-then-sum definition up to floating-point rounding, so its sensitivity
under replace-one neighbours is the definition's (:mod:`privgauss.sensitivity`); the callers
add the noise.

The modules, lowest first: :mod:`.record_maps` (the per-record maps), :mod:`.rounding` (the
rounding bounds behind every margin), :mod:`.kernels` (per-block kernels of the passes),
:mod:`.outside` (the per-row verdict the clipped counts sum), :mod:`.summaries` (the two-pass
summaries and the fast statistics from them), :mod:`.rows` (:class:`Rows`),
:mod:`.moment_kernels` and :mod:`.moments` (the one-pass clipped moments).
"""

from __future__ import annotations

from .moments import clipped_moments, exact_clipped_moments, prepare_moments
from .record_maps import (
    MAX_VALUE,
    TRANSFORM_VALUES,
    affine_rows,
    mapped_inputs,
    sanitize_rows,
    transform_rows,
)
from .rows import Rows
from .summaries import U32_BYTES

__all__ = [
    "MAX_VALUE",
    "TRANSFORM_VALUES",
    "U32_BYTES",
    "Rows",
    "affine_rows",
    "clipped_moments",
    "exact_clipped_moments",
    "mapped_inputs",
    "prepare_moments",
    "sanitize_rows",
    "transform_rows",
]
