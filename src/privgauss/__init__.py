"""privgauss: differentially private estimation of Gaussians and Gaussian mixtures.

See ``README.md`` for a quick start.
"""

from __future__ import annotations

__version__ = "0.1.0"

from . import audit, datasets, metrics, theory
from .accounting import ZCDP, Accountant, ApproxDP, LedgerEntry, PureDP
from .estimators import PrivateGaussian, PrivateGaussianMixture
from .exceptions import EstimationFailed, InvalidDataError, PrivacyBudgetError
from .io import load
from .mixture.requirements import requirements as mixture_requirements
from .noise import NoiseSource

__all__ = [
    "ZCDP",
    "Accountant",
    "ApproxDP",
    "EstimationFailed",
    "InvalidDataError",
    "LedgerEntry",
    "NoiseSource",
    "PrivacyBudgetError",
    "PrivateGaussian",
    "PrivateGaussianMixture",
    "PureDP",
    "__version__",
    "audit",
    "datasets",
    "load",
    "metrics",
    "mixture_requirements",
    "theory",
]
