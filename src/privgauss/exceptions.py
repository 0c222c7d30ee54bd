"""Exception types of privgauss.

Messages raised here must never contain data-dependent values (privacy rule 5): only shapes,
dtypes, public parameters and the fact that NaN/inf exist.
"""

from __future__ import annotations


class PrivacyBudgetError(ValueError):
    """An invalid privacy budget, or a release that would exceed the accountant's total."""


class InvalidDataError(ValueError):
    """Input data that cannot be used: wrong shape, non-numeric, NaN/inf, too few rows."""


class NonNumericDataError(InvalidDataError, TypeError):
    """Input with entries that are not numbers (e.g. objects in an object-dtype array); also a
    ``TypeError``, as scikit-learn raises for such input."""


class EstimationFailed(RuntimeError):
    """A differentially private failure output (the paper's ⊥).

    The budget of the failed run stays spent. ``step`` names the step that failed and
    ``needed_n`` (when known) the number of samples that step needs, computed from public
    quantities only. ``internal`` is True when the failure is not an outcome the algorithm
    releases but an error inside it after spending (a singular matrix, an overflow, …),
    turned into this exception so that the caller sees one failure contract; the audits
    (:mod:`privgauss.audit`) count such a failure as a crash, never as a DP output.
    """

    def __init__(self, message: str, *, step: str = "", needed_n: int | None = None,
                 internal: bool = False) -> None:
        super().__init__(message)
        self.step = step
        self.needed_n = needed_n
        self.internal = internal
