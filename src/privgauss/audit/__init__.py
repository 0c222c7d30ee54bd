"""Empirical, black-box privacy auditing: a high-confidence lower bound on a mechanism's ε from
one pair of neighbouring datasets (:mod:`.mechanism`), and estimators audited through the whole
outcome of a fit (:mod:`.outcome`). Testing tools, not proofs: a passing audit tests one pair of
neighbours and one family of events; no release goes through this package."""

from .mechanism import AuditResult, audit_mechanism
from .outcome import (
    OUTCOME_FEATURES,
    FitOutcome,
    estimator_mechanism,
    fit_outcome,
    outcome_features,
    worst_case_pairs,
)

__all__ = [
    "OUTCOME_FEATURES",
    "AuditResult",
    "FitOutcome",
    "audit_mechanism",
    "estimator_mechanism",
    "fit_outcome",
    "outcome_features",
    "worst_case_pairs",
]
