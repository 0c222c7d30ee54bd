"""scikit-learn-style private estimators."""

from .gaussian import PrivateGaussian

__all__ = ["PrivateGaussian"]
