"""Neighbours that stress an estimator, and the whole outcome of a fit as an audited output.

The outcome side of :mod:`privgauss.audit`: :func:`worst_case_pairs` builds replace-one
neighbours aimed at a clipping estimator (boundary, outlier, duplicate, partition), and
:func:`estimator_mechanism` turns a fit into a mechanism for
:func:`~privgauss.audit.mechanism.audit_mechanism` whose output is the fit's statistic followed
by its whole :class:`FitOutcome` (:func:`fit_outcome`): success, ⊥ (``EstimationFailed``) or
another exception by type, the warning categories, the number of ledger entries and the total
spent. A fit whose exception, warnings or ledger depend on the one record that differs is flagged
like a fit whose estimate does (DESIGN.md privacy rule 10). Auditing tools: no privacy guarantee
of their own, and never part of a release.
"""

from __future__ import annotations

import math
import warnings
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..privacy import Budget

__all__ = [
    "OUTCOME_FEATURES",
    "FitOutcome",
    "estimator_mechanism",
    "fit_outcome",
    "outcome_features",
    "worst_case_pairs",
]


# ------------------------------------------------------------------ neighbours


def worst_case_pairs(
    X: Any, *, radius: float, center: Any = None, far: float = 1e6
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Replace-one neighbours of ``X`` (n, d) built to stress a clipping estimator.

    The last row is replaced in every pair (``center`` defaults to the origin; ``radius`` is the
    clipping radius the estimator is believed to use, ``far`` a multiple of it):

    * ``"boundary"`` — the record sits at ``center + radius·e₁`` in D and ``center − radius·e₁``
      in D′: the largest move a radius-``radius`` clip allows.
    * ``"outlier"`` — ``center + radius·e₁`` against a far outlier ``center + far·radius·e₁``
      (identical after a correct clip; a clip radius read from the data tells them apart).
    * ``"duplicate"`` — the record is a copy of row 0 in D and stays itself in D′.
    * ``"partition"`` — the record in D′ is the row of X farthest from it, which in a separated
      mixture lies in another cluster (a record moved across a partition).

    Returns name → (D, D′), fresh arrays; ``X`` is not modified.
    """
    X = np.array(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2:
        raise ValueError("worst_case_pairs needs a 2-D array with at least 2 rows")
    if not (math.isfinite(radius) and radius > 0 and math.isfinite(far) and far >= 1):
        raise ValueError("radius must be finite and > 0, far finite and >= 1")
    n, d = X.shape
    c = np.zeros(d) if center is None else np.asarray(center, dtype=np.float64).reshape(d)
    e1 = np.zeros(d)
    e1[0] = 1.0

    def with_last(row: np.ndarray) -> np.ndarray:
        out = X.copy()
        out[-1] = row
        return out

    farthest = X[int(np.argmax(np.linalg.norm(X - X[-1], axis=1)))]
    return {
        "boundary": (with_last(c + radius * e1), with_last(c - radius * e1)),
        "outlier": (with_last(c + radius * e1), with_last(c + far * radius * e1)),
        "duplicate": (with_last(X[0]), X.copy()),
        "partition": (X.copy(), with_last(farthest)),
    }


# ------------------------------------------------------------------ the whole outcome of a fit


@dataclass(frozen=True)
class FitOutcome:
    """Everything a fit shows besides its estimates (privacy rule 10: "one trust boundary").

    Neighbouring datasets must end in equal outcomes unless the difference is a DP output; two
    outcomes are compared with ``==`` (and are hashable, so they can be counted).

    * ``kind``: ``"success"``, ``"failed"`` (:class:`~privgauss.exceptions.EstimationFailed`, a
      DP output ⊥), ``"crashed"`` (an ``EstimationFailed`` that wraps an error raised inside
      the algorithm after spending: ``internal`` — not a DP output) or ``"raised"`` (any
      other exception, caught).
    * ``exception_type``: the qualified name of the exception's type (builtins unqualified, e.g.
      ``"ValueError"``; others with their module), ``None`` on success.
    * ``warning_categories``: names (same convention) of the warning categories emitted during
      the fit, each at most once, whatever the warning filters outside the fit.
    * ``ledger_length``: the ledger entries charged during the fit (``None``: not observable).
    * ``spent``: what those entries add up to, in the notion of the fit's budget (``None`` when
      nothing was charged or it is not observable).

    See :func:`fit_outcome` for how the ledger is observed when the fit raises.
    """

    kind: str
    exception_type: str | None = None
    warning_categories: frozenset[str] = frozenset()
    ledger_length: int | None = None
    spent: Budget | None = None

    @property
    def label(self) -> str:
        """A short description without ``spent`` and module names, e.g.
        ``"failed EstimationFailed, 1 ledger entry"``."""

        def short(name: str) -> str:
            return name.rsplit(".", 1)[-1]

        parts = [self.kind]
        if self.exception_type is not None:
            parts[0] += " " + short(self.exception_type)
        if self.warning_categories:
            parts.append("warned " + "+".join(sorted(map(short, self.warning_categories))))
        if self.ledger_length is not None:
            plural = "y" if self.ledger_length == 1 else "ies"
            parts.append(f"{self.ledger_length} ledger entr{plural}")
        return ", ".join(parts)


def fit_outcome(estimator: Any, X: Any, public_X: Any = None) -> FitOutcome:
    """Fit ``estimator`` on ``X`` (``estimator.fit(X, public_X=public_X)``) and return the outcome.

    Any :class:`Exception` raised by ``fit`` is caught and recorded (its message is not);
    warnings are recorded under ``simplefilter("always")`` and not re-emitted. On success
    ``estimator`` is fitted in place, as by ``fit`` itself.

    **How the ledger is observed**, also when the fit raises (the estimators set ``ledger_``
    only on success, and build a per-fit ``Accountant(budget, parent=accountant)``):

    * ``estimator.accountant`` is ``None`` and the estimator has its own budget (``rho=`` or
      ``epsilon=``, with ``delta=``): for the duration of the fit, ``accountant`` is set to a
      fresh observer :class:`~privgauss.privacy.Accountant` whose total is that same budget,
      and restored to ``None`` afterwards. The per-fit accountant forwards every charge to its
      parent, and a parent with the same total refuses exactly what the per-fit accountant
      refuses, so the fit is unchanged while its ledger is mirrored in the observer.
    * ``estimator.accountant`` is already an accountant (a shared total): the entries it gains
      during the fit are read, and ``spent`` is what they add up to.
    * otherwise (no ``accountant`` parameter, or no own budget): ``ledger_`` and
      ``privacy_spent_`` of the fitted estimator on success, ``None`` after an exception.
    """
    return _fit_and_observe(estimator, X, public_X)[0]


def _type_name(cls: type) -> str:
    name = cls.__qualname__
    return name if cls.__module__ == "builtins" else f"{cls.__module__}.{name}"


def _fit_and_observe(estimator: Any, X: Any, public_X: Any) -> tuple[FitOutcome, Any]:
    """:func:`fit_outcome` and the fitted estimator (``None`` unless the fit succeeded)."""
    from ..exceptions import EstimationFailed

    observed, start, injected = _observe(estimator)
    fitted: Any = None
    kind, exc_type = "success", None
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                fitted = estimator.fit(X, public_X=public_X)
            except EstimationFailed as exc:  # internal: an error after spending, not ⊥
                kind = "crashed" if exc.internal else "failed"
                exc_type = _type_name(type(exc))
            except Exception as exc:  # every outcome of the fit is audited, none crashes it
                kind, exc_type = "raised", _type_name(type(exc))
    finally:
        if injected:
            estimator.accountant = None
    categories = frozenset(_type_name(w.category) for w in caught)
    if observed is not None:
        entries = observed.ledger[start:]
        length: int | None = len(entries)
        spent = observed.spent if start == 0 else _spent_by(entries, observed.total)
    elif fitted is not None:
        ledger = getattr(fitted, "ledger_", None)
        length = None if ledger is None else len(ledger)
        spent = getattr(fitted, "privacy_spent_", None)
    else:
        length, spent = None, None
    return FitOutcome(kind, exc_type, categories, length, spent), fitted


def _observe(estimator: Any) -> tuple[Any, int, bool]:
    """(accountant to read, ledger index the fit starts at, whether it was injected)."""
    from ..privacy import Accountant, make_budget

    shared = getattr(estimator, "accountant", _MISSING)
    if isinstance(shared, Accountant):
        return shared, len(shared.ledger), False
    if shared is not None:
        return None, 0, False
    try:
        total = make_budget(
            rho=getattr(estimator, "rho", None),
            epsilon=getattr(estimator, "epsilon", None),
            delta=getattr(estimator, "delta", None),
        )
    except (ValueError, TypeError):  # no valid own budget: the fit decides what happens
        return None, 0, False
    observer = Accountant(total)
    estimator.accountant = observer
    return observer, 0, True


def _spent_by(entries: Sequence[Any], total: Budget) -> Budget | None:
    """What ``entries`` (charged into an accountant with ``total``) add up to, on their own."""
    from ..privacy import Accountant

    replay = Accountant(total)
    for entry in entries:
        replay.spend(entry.cost)
    return replay.spent


_MISSING = object()

OUTCOME_FEATURES = (
    "raised",
    "exception type code",
    "warning categories code",
    "number of warning categories",
    "ledger length",
    "spent (rho or epsilon)",
    "spent delta",
)
"""Names of the coordinates :func:`estimator_mechanism` appends after the statistic."""


def _code(name: str | None) -> float:
    """A stable code in (0, 1] for a name (CRC-32, same in every process), 0 for ``None``."""
    return 0.0 if name is None else (zlib.crc32(name.encode()) + 1) / 2.0**32


def _spent_features(spent: Budget | None) -> tuple[float, float]:
    """(ρ or ε, δ) rounded to 12 significant digits; (0, 0) for nothing, -1 for non-finite."""
    if spent is None:
        return 0.0, 0.0
    main = getattr(spent, "rho", None)
    main = spent.epsilon if main is None else main  # type: ignore[union-attr]  # no rho: has epsilon
    values = (float(main), float(getattr(spent, "delta", 0.0)))
    main_f, delta_f = (float(f"{v:.12g}") if math.isfinite(v) else -1.0 for v in values)
    return main_f, delta_f


def outcome_features(outcome: FitOutcome) -> np.ndarray:
    """The outcome as the numbers :data:`OUTCOME_FEATURES` (same outcome, same numbers)."""
    warned = "|".join(sorted(outcome.warning_categories)) or None
    return np.array(
        [
            1.0 if outcome.kind in ("raised", "crashed") else 0.0,
            _code(outcome.exception_type),
            _code(warned),
            float(len(outcome.warning_categories)),
            -1.0 if outcome.ledger_length is None else float(outcome.ledger_length),
            *_spent_features(outcome.spent),
        ]
    )


def estimator_mechanism(
    make_estimator: Callable[[np.random.Generator], Any],
    statistic: Callable[[Any], Any],
    size: int,
    *,
    public_X: Any = None,
    on_outcome: Callable[[Any, FitOutcome], None] | None = None,
) -> Callable[[Any, np.random.Generator], np.ndarray]:
    """A mechanism for :func:`audit_mechanism` that fits an estimator and summarises the fit.

    ``make_estimator(rng)`` returns an unfitted estimator drawing its noise from ``rng``
    (``random_state=rng``); ``statistic(fitted)`` maps a successful fit to ``size`` floats. The
    output is ``[failed, *statistic, *outcome]`` (``size + 1 + len(OUTCOME_FEATURES)`` floats):

    * ``failed`` is 1 when the fit raised :class:`~privgauss.exceptions.EstimationFailed`;
    * the statistic is zeroed when the fit raised anything;
    * ``outcome`` is :func:`outcome_features` of :func:`fit_outcome`: whether another exception
      was raised and a code of its type, a code and the number of the warning categories
      emitted, the ledger length and the total spent.

    A failure (⊥), an exception, a warning or an extra ledger entry is an output of the
    mechanism too: when it depends on the record that differs between D and D′, the projections
    of :func:`audit_mechanism` see it (a coordinate that is constant within each dataset but
    differs between them gets the largest Fisher weight) and the event is measured like any
    other. Coordinates that are equal on both datasets do not change the audit. Exceptions of
    ``make_estimator`` and ``statistic`` are not outcomes and propagate. ``on_outcome(data,
    outcome)``, if given, is called after every fit (e.g. to count the outcomes per dataset).
    """

    def mechanism(data: Any, rng: np.random.Generator) -> np.ndarray:
        outcome, fitted = _fit_and_observe(make_estimator(rng), data, public_X)
        if on_outcome is not None:
            on_outcome(data, outcome)
        head = np.zeros(size + 1)
        if outcome.kind == "success":
            stat = np.asarray(statistic(fitted), dtype=np.float64).ravel()
            if stat.size != size:
                raise ValueError(f"statistic returned {stat.size} values, expected {size}")
            head[1:] = stat
        elif outcome.kind == "failed":
            head[0] = 1.0
        return np.concatenate([head, outcome_features(outcome)])

    return mechanism
