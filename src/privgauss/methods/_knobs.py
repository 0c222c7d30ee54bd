"""The ranges of the mixture methods' knobs (``method_params``): checked up front, before
anything is spent, whichever method ends up running (public parameters only)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..validation import check_positive_int


def check_knob_ranges(params: Mapping[str, Any]) -> None:
    """Refuse a knob of ``params`` outside its range (ValueError, or TypeError for a
    ``learner`` that is not callable); knobs not listed here are left to their method."""
    p = params
    if "terrific_c" in p and not (3.0 < float(p["terrific_c"]) <= 1e3):
        raise ValueError(
            "terrific_c (annulus constant of the terrific-ball search) must be in (3, 1000]"
        )
    if "max_points" in p:
        check_positive_int(p["max_points"], "max_points", minimum=100)
    if "n_radii_max" in p:
        check_positive_int(p["n_radii_max"], "n_radii_max", minimum=2)
    if "peel_factor" in p and not (1.0 <= float(p["peel_factor"]) <= 100.0):
        raise ValueError(
            "peel_factor (released ball = peel_factor x found radius) must be in [1, 100]"
        )
    if "t_fraction" in p and not (0.0 < float(p["t_fraction"]) <= 1.0):
        raise ValueError("t_fraction must be in (0, 1]")
    if "box_factor" in p and not (0.5 <= float(p["box_factor"]) <= 100.0):
        raise ValueError("box_factor must be in [0.5, 100]")
    if "n_steps" in p:
        check_positive_int(p["n_steps"], "n_steps", minimum=1)
        if int(p["n_steps"]) > 100:
            raise ValueError("n_steps (EM steps of method='em') must be at most 100")
    if "n_chunks" in p:
        check_positive_int(p["n_chunks"], "n_chunks", minimum=2)
    if "radii" in p:
        r = np.asarray(p["radii"], dtype=np.float64)
        if r.ndim != 1 or r.size == 0 or not (np.isfinite(r).all() and (r > 0).all()):
            raise ValueError("radii must be a non-empty 1-D grid of finite positive radii")
    if "learner" in p and not callable(p["learner"]):
        raise TypeError("learner must be a callable (rows, k, seed) -> (weights, means)")
