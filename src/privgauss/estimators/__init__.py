"""scikit-learn-style private estimators."""

from .gaussian import PrivateGaussian
from .mixture import PrivateGaussianMixture

__all__ = ["PrivateGaussian", "PrivateGaussianMixture"]
