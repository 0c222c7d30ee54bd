"""privgauss: differentially private estimation of Gaussians and Gaussian mixtures.

See ``README.md`` for a quick start.

``import privgauss`` is fast: the public names below (and every submodule, e.g. ``pg.audit``,
``pg.io``) are loaded on first use (PEP 562), so scipy.stats, scikit-learn, OpenDP, dask and
matplotlib are imported only by the code that needs them.
"""

from __future__ import annotations

import importlib.util as _importlib_util
import sys as _sys
import typing as _typing

from . import warnings as warnings  # privgauss.warnings; `warnings` is not in __all__
from ._version import __version__
from .exceptions import EstimationFailed, InvalidDataError, PrivacyBudgetError
from .warnings import PrivacyWarning

# public name -> (submodule, attribute); attribute None: the submodule itself
_LAZY: dict[str, tuple[str, str | None]] = {
    "ZCDP": ("privacy", "ZCDP"),
    "Accountant": ("privacy", "Accountant"),
    "ApproxDP": ("privacy", "ApproxDP"),
    "LedgerEntry": ("privacy", "LedgerEntry"),
    "PureDP": ("privacy", "PureDP"),
    "PrivateGaussian": ("estimators", "PrivateGaussian"),
    "PrivateGaussianMixture": ("estimators", "PrivateGaussianMixture"),
    "DPScorer": ("estimators.scoring", "DPScorer"),
    "PrivateSynthesizer": ("synthesis", "PrivateSynthesizer"),
    "synthesize": ("synthesis", "synthesize"),
    "load": ("io", "load"),
    "save": ("io", "save"),
    "mixture_requirements": ("methods", "mixture_requirements"),
    "mixture_plan": ("methods", "mixture_plan"),
    "NoiseSource": ("noise", "NoiseSource"),
    "audit": ("audit", None),
    "privacy": ("privacy", None),
    "datasets": ("datasets", None),
    "metrics": ("metrics", None),
    "methods": ("methods", None),
    "theory": ("theory", None),
}

if _typing.TYPE_CHECKING:  # what static tools see: the names the lazy loader gives
    from . import audit, datasets, methods, metrics, privacy, theory
    from .estimators import PrivateGaussian, PrivateGaussianMixture
    from .estimators.scoring import DPScorer
    from .io import load, save
    from .methods import mixture_plan, mixture_requirements
    from .noise import NoiseSource
    from .privacy import ZCDP, Accountant, ApproxDP, LedgerEntry, PureDP
    from .synthesis import PrivateSynthesizer, synthesize


def _load(module: str) -> _typing.Any:
    # the import statement's machinery (not importlib.import_module), so that
    # `python -X importtime` reports what a lazy name costs
    full = f"{__name__}.{module}"
    __import__(full)
    return _sys.modules[full]


def __getattr__(name: str) -> _typing.Any:
    """Load a public name, or any submodule (``pg.io``, ``pg.sensitivity`` …), on first use."""
    if name in _LAZY:
        module, attr = _LAZY[name]
        value = _load(module)
        if attr is not None:
            value = getattr(value, attr)
    elif not name.startswith("_") and _importlib_util.find_spec(f"{__name__}.{name}") is not None:
        value = _load(name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip this function
    return value


#: the documented public submodules (``pg.theory.*``, ``pg.metrics.*``, … in DESIGN's API)
_PUBLIC_MODULES = ("audit", "datasets", "io", "metrics", "theory", "warnings")


def __dir__() -> list[str]:
    """The public API only: its names and its documented submodules, not the helpers this
    module imports (``sys``, ``typing`` …) nor internal submodules loaded so far."""
    return sorted({*__all__, *_PUBLIC_MODULES})  # a set: audit, theory … are in both


__all__ = [
    "ZCDP",
    "Accountant",
    "ApproxDP",
    "DPScorer",
    "EstimationFailed",
    "InvalidDataError",
    "LedgerEntry",
    "NoiseSource",
    "PrivacyBudgetError",
    "PrivacyWarning",
    "PrivateGaussian",
    "PrivateGaussianMixture",
    "PrivateSynthesizer",
    "PureDP",
    "__version__",
    "audit",
    "datasets",
    "load",
    "methods",
    "metrics",
    "mixture_plan",
    "mixture_requirements",
    "privacy",
    "save",
    "synthesize",
    "theory",
]

del annotations  # the `from __future__` feature flag: not part of the API
