"""Model files read back: a model dictionary (an estimator's ``to_dict()``, the JSON of a
model file written by :func:`privgauss.io.save`) checked and turned into a fitted
:class:`~privgauss.PrivateGaussian` or :class:`~privgauss.PrivateGaussianMixture`
(:func:`from_dict`), its ledger replayed into a fresh accountant (:func:`replay_ledger`).

A model file is a **record, not a certificate**: anyone can edit it, and nothing in it proves
that the fit ran, on which rows, or with the noise the ledger lists. :func:`privgauss.io.load`
(and :func:`from_dict`) checks that the file is *consistent* and *usable*, and refuses it
otherwise (one line naming the field):

* parameters finite, of the stated shapes, means within ±:data:`MODEL_MAX_MEAN` and covariance
  entries within ±:data:`MODEL_MAX_COVARIANCE` (so sampling and scoring cannot overflow);
* covariances symmetric (to :data:`SYMMETRY_RTOL` of their largest entry) and positive
  semi-definite (smallest eigenvalue ≥ −:data:`PSD_RTOL` × the largest); mixture weights
  non-negative, summing to 1;
* the budget a valid one, and the ledger's costs, replayed into a fresh accountant, fitting it
  and composing exactly to the stated ``spent``.

A file edited consistently (every cost and the spent total divided by 100, say) passes: keep
the files you publish where their provenance is known.

Messages name the field, never a value derived from data.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .exceptions import InvalidDataError, PrivacyBudgetError
from .privacy import (
    Accountant,
    Budget,
    LedgerEntry,
    PureDP,
    budget_from_dict,
    budget_to_dict,
    estimator_kwargs,
)

__all__ = [
    "MODEL_MAX_COVARIANCE",
    "MODEL_MAX_MEAN",
    "PSD_RTOL",
    "SYMMETRY_RTOL",
    "from_dict",
    "replay_ledger",
]


#: Largest magnitude of a model file's mean coordinates: 100 times the largest data value a
#: fit accepts (:data:`~privgauss.validation.MAX_ABS_VALUE`, 1e150), room for the noise.
MODEL_MAX_MEAN = 1e152
#: Largest magnitude of a covariance entry: the square of :data:`MODEL_MAX_MEAN`. Synthetic
#: rows then stay below ~1e153·√d and their squared distances finite: sampling and scoring a
#: loaded model cannot overflow.
MODEL_MAX_COVARIANCE = 1e304
#: Largest asymmetry |C - Cᵀ| of a covariance, relative to its largest entry.
SYMMETRY_RTOL = 1e-9
#: Most negative eigenvalue of a covariance, relative to its largest eigenvalue (rounding).
PSD_RTOL = 1e-8
#: Relative tolerance between the stated ``spent`` and the ledger's composition.
_SPENT_RTOL = 1e-9


def _refuse(field: str, problem: str) -> InvalidDataError:
    return InvalidDataError(f"model file: {field} {problem}")


def _budget_field(value: Any, field: str) -> Budget:
    """A budget written by ``budget_to_dict``, refused (naming ``field``) unless valid."""
    try:
        return budget_from_dict(value)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        detail = f": {exc}" if isinstance(exc, ValueError) else ""
        raise _refuse(field, f"is not a valid privacy budget{detail}") from None


def _same_budget(a: Budget | None, b: Budget | None) -> bool:
    if a is None or b is None:
        return a is b
    da, db = budget_to_dict(a), budget_to_dict(b)
    return da.keys() == db.keys() and all(
        da[k] == db[k] if isinstance(da[k], str)
        else math.isclose(da[k], db[k], rel_tol=_SPENT_RTOL)
        for k in da
    )


def replay_ledger(privacy: Any) -> tuple[Budget, Accountant]:
    """The budget and an accountant holding the file's ledger: refused when the budget is
    invalid, a cost is invalid, the ledger exceeds the budget, or it does not compose to the
    stated ``spent``."""
    if not isinstance(privacy, dict) or not isinstance(privacy.get("ledger"), list):
        raise _refuse("privacy", "must hold a budget, what was spent and a ledger list")
    budget = _budget_field(privacy.get("budget"), "privacy.budget")
    acct = Accountant(budget)
    for i, e in enumerate(privacy["ledger"]):
        if not isinstance(e, dict):
            raise _refuse(f"privacy.ledger[{i}]", "is not a ledger entry")
        cost = _budget_field(e.get("cost"), f"privacy.ledger[{i}].cost")
        try:
            entry = acct.spend(
                cost,
                step=str(e.get("step", "")),
                mechanism=str(e.get("mechanism", "")),
                sensitivity=e.get("sensitivity"),
                noise_scale=e.get("noise_scale"),
                note=str(e.get("note", "")),
            )
        except PrivacyBudgetError:
            raise _refuse("privacy.ledger", "exceeds its own budget") from None
        # the releases of sub-computations this entry paid for (Accountant.prepaid)
        try:
            entry.parts.extend(LedgerEntry.from_dict(p) for p in e.get("parts", ()))
        except (KeyError, TypeError, AttributeError, ValueError):
            raise _refuse(f"privacy.ledger[{i}].parts", "is malformed") from None
    if "spent" not in privacy:
        raise _refuse("privacy.spent", "is missing")
    stated = privacy["spent"]
    spent = None if stated is None else _budget_field(stated, "privacy.spent")
    if not _same_budget(spent, acct.spent):
        raise _refuse(
            "privacy.spent",
            f"({_budget_str(spent)}) differs from what the ledger's entries compose to "
            f"({_budget_str(acct.spent)}): the file was altered",
        )
    return budget, acct


def _budget_str(b: Budget | None) -> str:
    return "nothing" if b is None else str(b)


def _array(data: dict[str, Any], field: str, shape: tuple[int, ...], bound: float) -> np.ndarray:
    """``data[field]`` as a finite float array of ``shape`` with entries within ±``bound``."""
    try:
        arr = np.asarray(data[field], dtype=np.float64)
    except (TypeError, ValueError):
        arr = np.empty(0)
    if arr.shape != shape or not np.all(np.isfinite(arr)):
        raise _refuse(field, f"must be a finite array of shape {shape}")
    if np.any(np.abs(arr) > bound):
        raise _refuse(field, f"has entries above {bound:g} in magnitude (no fit releases such "
                      "values; sampling and scoring them would overflow)")
    return arr


def _covariances(data: dict[str, Any], field: str, shape: tuple[int, ...]) -> np.ndarray:
    """``data[field]``: covariance matrices (the last two axes), checked as :func:`_array`
    does, symmetric and positive semi-definite."""
    cov = _array(data, field, shape, MODEL_MAX_COVARIANCE)
    d = shape[-1]
    stack = cov.reshape(-1, d, d)
    scale = np.abs(stack).max(axis=(1, 2))
    if np.any(np.abs(stack - stack.transpose(0, 2, 1)).max(axis=(1, 2)) > SYMMETRY_RTOL * scale):
        raise _refuse(field, "is not symmetric")
    stack = (stack + stack.transpose(0, 2, 1)) / 2  # no overflow: entries are bounded
    eig = np.linalg.eigvalsh(stack)
    if np.any(eig[:, 0] < -PSD_RTOL * np.maximum(eig[:, -1], 0.0)):
        raise _refuse(field, "is not positive semi-definite (a negative variance)")
    return stack.reshape(shape)


def _count(data: dict[str, Any], field: str) -> int:
    value = data[field]
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise _refuse(field, "must be a positive integer")
    return value


def _feature_names(data: dict[str, Any], d: int) -> np.ndarray | None:
    names = data.get("feature_names")
    if names is None:
        return None
    if not (isinstance(names, list) and len(names) == d and len(set(names)) == d
            and all(isinstance(c, str) and c for c in names)):
        raise _refuse("feature_names", f"must be a list of {d} distinct non-empty names")
    return np.array(names, dtype=object)


def from_dict(data: dict[str, Any]) -> Any:
    """A fitted estimator from a model dictionary (the output of ``to_dict()``), refused with
    a one-line :class:`~privgauss.exceptions.InvalidDataError` naming the field unless it is
    consistent (see the module docstring)."""
    from .estimators import PrivateGaussian, PrivateGaussianMixture

    if not isinstance(data, dict) or data.get("library") != "privgauss":
        raise InvalidDataError("not a privgauss model file (no \"library\": \"privgauss\")")
    kind = data.get("model")
    if kind not in ("gaussian", "gaussian-mixture"):
        raise InvalidDataError(f"unknown model type {kind!r}: expected a privgauss model")
    try:
        d = _count(data, "n_features")
        budget, acct = replay_ledger(data["privacy"])
        if kind == "gaussian":
            est: Any = PrivateGaussian(**estimator_kwargs(budget))
            est.mean_ = _array(data, "mean", (d,), MODEL_MAX_MEAN)
            est.covariance_ = _covariances(data, "covariance", (d, d))
        else:
            k = _count(data, "n_components")
            est = PrivateGaussianMixture(k, **estimator_kwargs(budget))
            w = _array(data, "weights", (k,), math.inf)  # checked next
            if np.any(w < 0) or not math.isclose(float(w.sum()), 1.0, abs_tol=1e-6):
                raise _refuse("weights", "must be non-negative and sum to 1")
            est.weights_ = w
            est.means_ = _array(data, "means", (k, d), MODEL_MAX_MEAN)
            est.covariances_ = _covariances(data, "covariances", (k, d, d))
            # private EM's final DP pick (issue 27; older files and other methods: absent)
            from .mixture.private_em import CANDIDATES

            sel = data.get("selected_model")
            if sel is not None and sel not in CANDIDATES:
                raise _refuse("selected_model",
                              "must be one of " + ", ".join(map(repr, CANDIDATES)))
            est.selected_model_ = sel
        # both kinds (mixtures since issue 27): a DP output and post-processing of it (older
        # files: absent)
        frac = data.get("clipped_fraction")
        if frac is not None and not (isinstance(frac, int | float) and 0 <= frac <= 1):
            raise _refuse("clipped_fraction", "must be a fraction in [0, 1]")
        est.clipped_fraction_ = None if frac is None else float(frac)
        back = data.get("background_weight", 0.0)
        if not (isinstance(back, int | float) and 0.0 <= back <= 1.0):
            raise _refuse("background_weight", "must be a fraction in [0, 1]")
        est.background_weight_ = float(back)
        if data.get("pure_dp", isinstance(budget, PureDP)) != isinstance(budget, PureDP):
            raise _refuse("pure_dp", "contradicts privacy.budget")
        est.method = str(data["method"])
        est.method_ = str(data["method"])
        est.method_reason_ = str(data.get("method_reason", ""))
    except KeyError as exc:
        raise _refuse(str(exc.args[0]), "is missing") from None
    est.n_features_in_ = d
    names = _feature_names(data, d)
    if names is not None:
        est.feature_names_in_ = names
    est.budget_ = budget
    est.accountant_ = acct
    est.privacy_spent_ = acct.spent
    est.ledger_ = list(acct.ledger)
    est.loaded_version_ = str(data.get("version", "unknown"))
    est._cache_factors()  # scoring and sampling use them, as after a fit
    return est
