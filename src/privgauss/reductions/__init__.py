"""Private-to-non-private reductions (spec ``ppe-agnostic.md``): the Private Populous Estimator
(``ppe``: generic Algorithm 1 and the stable average; ``ppe_gaussian``: k = 1 and mixtures),
masking mechanisms (``masking``) and agnostic learning (``agnostic``: list-stability reduction,
Choosing Mechanism, private selection among private candidates)."""

from .masking import ComponentMask, MixtureMask
from .ppe import Semimetric, populous_estimator, stable_average

__all__ = [
    "ComponentMask",
    "MixtureMask",
    "Semimetric",
    "populous_estimator",
    "stable_average",
]
