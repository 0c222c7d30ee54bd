"""DP synthetic tables: DP marginals (:mod:`.marginals`) and a Gaussian-copula mixture over
them (:mod:`.synthesizer`), issue 28."""

from .synthesizer import PrivateSynthesizer, synthesize

__all__ = ["PrivateSynthesizer", "synthesize"]
