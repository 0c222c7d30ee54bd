"""privgauss: differentially private estimation of Gaussians and Gaussian mixtures.

See ``README.md`` for a quick start and ``docs/`` for the user guide.
"""

from __future__ import annotations

from .accounting import Accountant, ApproxDP, LedgerEntry, PureDP, ZCDP
from .exceptions import EstimationFailed, InvalidDataError, PrivacyBudgetError
from .noise import NoiseSource

__version__ = "0.1.0"

__all__ = [
    "ZCDP",
    "Accountant",
    "ApproxDP",
    "EstimationFailed",
    "InvalidDataError",
    "LedgerEntry",
    "NoiseSource",
    "PrivacyBudgetError",
    "PureDP",
    "__version__",
]
