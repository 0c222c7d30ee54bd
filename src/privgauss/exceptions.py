"""Exception types of privgauss.

Messages raised here must never contain data-dependent values (privacy rule 5): only shapes,
dtypes, public parameters and the fact that NaN/inf exist.
"""

from __future__ import annotations


class PrivacyBudgetError(ValueError):
    """An invalid privacy budget, or a release that would exceed the accountant's total.

    Raised before anything is spent (a fit's refusal) or instead of the charge that would
    overdraw (an accountant's refusal; nothing is charged).

    Parameters
    ----------
    message : str
        What is wrong (public parameters only).

    Examples
    --------
    >>> import privgauss as pg
    >>> pg.ZCDP(-1.0)
    Traceback (most recent call last):
    ...
    privgauss.exceptions.PrivacyBudgetError: rho must be > 0, got -1.0
    """


class InvalidDataError(ValueError):
    """Input data that cannot be used: wrong shape, non-numeric, NaN/inf, too few rows.

    Raised at the entry of a fit, before anything is spent; the message names shapes, dtypes
    and public parameters only, never a value of the data.

    Parameters
    ----------
    message : str
        What is wrong with the input.

    Examples
    --------
    >>> import numpy as np, privgauss as pg
    >>> pg.PrivateGaussian(rho=0.5).fit(np.full((10, 2), np.nan))
    Traceback (most recent call last):
    ...
    privgauss.exceptions.InvalidDataError: X contains NaN or infinite values...
    """


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

    Parameters
    ----------
    message : str
        What failed (public and DP quantities only).
    step : str, optional
        The step that failed.
    needed_n : int, optional
        The number of rows that step needs, when known.
    internal : bool, default=False
        An error inside the algorithm after spending, not a released failure.

    Attributes
    ----------
    step, needed_n, internal
        As given.

    Examples
    --------
    >>> import privgauss as pg
    >>> err = pg.EstimationFailed("no cluster found", step="aggregate", needed_n=5000)
    >>> err.step, err.needed_n, err.internal
    ('aggregate', 5000, False)
    """

    def __init__(self, message: str, *, step: str = "", needed_n: int | None = None,
                 internal: bool = False) -> None:
        super().__init__(message)
        self.step = step
        self.needed_n = needed_n
        self.internal = internal
