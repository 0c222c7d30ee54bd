"""The audit sees the whole outcome of a fit (privacy rule 10, "one trust boundary").

A fake estimator releases a correctly calibrated Gaussian-noise mean of clipped rows, so its
*estimate* is private; deliberately broken variants leak through a side channel only — an
exception, a warning or an extra ledger entry when some record exceeds a threshold. The audit of
:func:`privgauss.audit.estimator_mechanism` must flag each of them (lower bound above the claimed
ε), and pass the correct variant and a real estimator.
"""

from __future__ import annotations

import math
import warnings
import zlib
from typing import Any

import numpy as np
import pytest
from _helpers import scale_free_rows
from click.testing import CliRunner

import privgauss as pg
from privgauss.audit import (
    OUTCOME_FEATURES,
    FitOutcome,
    audit_mechanism,
    estimator_mechanism,
    fit_outcome,
    outcome_features,
    worst_case_pairs,
)
from privgauss.privacy import ZCDP, Accountant, zcdp_to_epsilon

RHO, AUDIT_DELTA = 0.05, 1e-3
CLAIMED = zcdp_to_epsilon(RHO, AUDIT_DELTA)  # ~1.1
RUNS = 400  # a deterministic side channel gives a bound of ~3.2 at 400 runs per dataset
CLIP, THRESHOLD = 1.0, 2.0
X = np.random.default_rng(0).uniform(-1.0, 1.0, size=(20, 1))
D = X.copy()
D[-1, 0] = 0.5  # every record below the threshold
NEIGHBOUR = X.copy()
NEIGHBOUR[-1, 0] = 10.0  # one record above it; after the clip the two differ by 0.5 only
DEFECTS = ("raises", "warns", "extra-entry")


class ClippedMean:
    """ρ-zCDP mean of rows clipped to [-CLIP, CLIP] (Gaussian noise, replace-one L2 sensitivity
    2·CLIP/n). ``defect`` adds a side channel triggered by a record beyond ``THRESHOLD``."""

    def __init__(self, rho: float, *, defect: str | None = None, random_state: Any = None,
                 accountant: Accountant | None = None, fail: bool = False) -> None:
        self.rho = rho
        self.defect = defect
        self.random_state = random_state
        self.accountant = accountant
        self.fail = fail

    def fit(self, X: Any, public_X: Any = None) -> ClippedMean:
        X = np.asarray(X, dtype=float)
        acct = Accountant(ZCDP(self.rho), parent=self.accountant)
        triggered = bool(np.abs(X).max() > THRESHOLD)
        if self.defect == "extra-entry" and triggered:
            acct.spend(ZCDP(self.rho / 2), step="mean, first half")  # same total, one more entry
            acct.spend(ZCDP(self.rho / 2), step="mean, second half")
        else:
            acct.spend(ZCDP(self.rho), step="mean")
        sigma = (2 * CLIP / X.shape[0]) / math.sqrt(2 * self.rho)
        mean = np.clip(X, -CLIP, CLIP).mean(axis=0) + self.random_state.normal(0.0, sigma, 1)
        if self.fail:
            raise pg.EstimationFailed("the mean step failed", step="mean")
        if self.defect == "raises" and triggered:
            raise ValueError("a record is out of range")
        if self.defect == "warns" and triggered:
            warnings.warn("a record is out of range", RuntimeWarning, stacklevel=2)
        self.mean_ = mean
        self.ledger_ = list(acct.ledger)
        self.privacy_spent_ = acct.spent
        return self


def _fake_mechanism(defect: str | None) -> Any:
    return estimator_mechanism(
        lambda rng: ClippedMean(RHO, defect=defect, random_state=rng), lambda g: g.mean_, 1
    )


# ------------------------------------------------------------------------------------------
# the audit catches side channels
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("defect", DEFECTS)
def test_audit_flags_a_side_channel_only_on_the_neighbour(defect: str) -> None:
    res = audit_mechanism(_fake_mechanism(defect), D, NEIGHBOUR, epsilon=CLAIMED,
                          delta=AUDIT_DELTA, n_runs=RUNS)
    assert not res.passed and res.epsilon_lower_bound > CLAIMED, str(res)


def test_audit_passes_the_estimator_without_the_defect() -> None:
    res = audit_mechanism(_fake_mechanism(None), D, NEIGHBOUR, epsilon=CLAIMED,
                          delta=AUDIT_DELTA, n_runs=RUNS)
    assert res.passed, str(res)


def test_audit_passes_a_real_estimator_on_an_outlier_pair() -> None:
    Xc = np.random.default_rng(1).normal(size=(50, 1))
    data, neighbour = worst_case_pairs(Xc, radius=4.0)["outlier"]

    def make(rng: np.random.Generator) -> pg.PrivateGaussian:
        return pg.PrivateGaussian(rho=RHO, covariance="identity", mean_bound=4.0,
                                  method="coinpress", random_state=rng)

    seen: list[FitOutcome] = []
    mech = estimator_mechanism(make, lambda g: g.mean_[0], 1,
                               on_outcome=lambda _data, o: seen.append(o))
    res = audit_mechanism(mech, data, neighbour, epsilon=CLAIMED, delta=AUDIT_DELTA, n_runs=RUNS)
    assert res.passed, str(res)
    assert len(seen) == 2 * RUNS and len(set(seen)) == 1 and seen[0].kind == "success"


# ------------------------------------------------------------------------------------------
# fit_outcome and the mechanism's output
# ------------------------------------------------------------------------------------------


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def test_fit_outcome_on_success_and_on_each_side_channel() -> None:
    ok = fit_outcome(ClippedMean(RHO, random_state=_rng()), D)
    assert ok == FitOutcome("success", None, frozenset(), 1, ZCDP(RHO))
    assert ok.label == "success, 1 ledger entry"
    raised = fit_outcome(ClippedMean(RHO, defect="raises", random_state=_rng()), NEIGHBOUR)
    assert (raised.kind, raised.exception_type, raised.ledger_length) == ("raised", "ValueError", 1)
    assert raised.spent == ZCDP(RHO)  # the ledger is read although the fit raised
    warned = fit_outcome(ClippedMean(RHO, defect="warns", random_state=_rng()), NEIGHBOUR)
    assert warned.kind == "success" and warned.warning_categories == {"RuntimeWarning"}
    extra = fit_outcome(ClippedMean(RHO, defect="extra-entry", random_state=_rng()), NEIGHBOUR)
    assert (extra.ledger_length, extra.spent) == (2, ZCDP(RHO))
    # each differs from the correct fit on the same neighbour
    assert len({ok, raised, warned, extra}) == 4
    assert fit_outcome(ClippedMean(RHO, random_state=_rng()), NEIGHBOUR) == ok


def test_fit_outcome_reads_the_ledger_of_a_failed_fit_and_restores_the_estimator() -> None:
    est = ClippedMean(RHO, random_state=_rng(), fail=True)
    out = fit_outcome(est, D)
    assert out.kind == "failed" and out.exception_type == "privgauss.exceptions.EstimationFailed"
    assert (out.ledger_length, out.spent) == (1, ZCDP(RHO))  # ⊥ keeps the budget spent
    assert est.accountant is None  # the observer accountant is removed again
    # a real estimator's ⊥: histogram on rows without a common scale, after charging the budget
    g = pg.PrivateGaussian(epsilon=1.0, delta=1e-6, method="histogram", random_state=0)
    real = fit_outcome(g, scale_free_rows(2000, X.shape[1]))
    assert real.kind == "failed" and real.ledger_length and real.spent is not None
    assert g.accountant is None


def test_fit_outcome_with_a_shared_accountant_counts_this_fit_only() -> None:
    shared = Accountant(ZCDP(1.0))
    shared.spend(ZCDP(0.3), step="an earlier release")
    out = fit_outcome(ClippedMean(RHO, random_state=_rng(), accountant=shared), D)
    assert (out.ledger_length, out.spent) == (1, ZCDP(RHO))
    assert len(shared.ledger) == 2 and shared.spent == ZCDP(0.3 + RHO)


def test_fit_outcome_records_warnings_whatever_the_outer_filter() -> None:
    est = ClippedMean(RHO, defect="warns", random_state=_rng())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither raised nor hidden: recorded
        assert fit_outcome(est, NEIGHBOUR).warning_categories == {"RuntimeWarning"}
    with warnings.catch_warnings(record=True) as outside:
        warnings.simplefilter("always")
        fit_outcome(est, NEIGHBOUR)
    assert not outside  # captured, never re-emitted


def test_estimator_mechanism_output_layout() -> None:
    size = 1
    width = size + 1 + len(OUTCOME_FEATURES)
    ok = _fake_mechanism(None)(D, _rng())
    assert ok.shape == (width,) and ok[0] == 0.0 and ok[1] != 0.0
    np.testing.assert_array_equal(
        ok[2:], outcome_features(FitOutcome("success", None, frozenset(), 1, ZCDP(RHO)))
    )
    raised = _fake_mechanism("raises")(NEIGHBOUR, _rng())
    assert raised.shape == (width,) and raised[0] == 0.0 and raised[1] == 0.0  # zeroed
    assert raised[2] == 1.0  # raised, with its type's code (CRC-32: the same in every process)
    assert raised[3] == (zlib.crc32(b"ValueError") + 1) / 2**32
    failed = estimator_mechanism(
        lambda rng: ClippedMean(RHO, random_state=rng, fail=True), lambda g: g.mean_, 1
    )(D, _rng())
    assert failed[0] == 1.0 and failed[1] == 0.0 and failed[2] == 0.0
    # each field of the outcome moves the numbers
    base = FitOutcome("success", None, frozenset(), 1, ZCDP(RHO))
    variants = [
        FitOutcome("raised", "ValueError", frozenset(), 1, ZCDP(RHO)),
        FitOutcome("raised", "TypeError", frozenset(), 1, ZCDP(RHO)),
        FitOutcome("success", None, frozenset({"RuntimeWarning"}), 1, ZCDP(RHO)),
        FitOutcome("success", None, frozenset({"UserWarning"}), 1, ZCDP(RHO)),
        FitOutcome("success", None, frozenset(), 2, ZCDP(RHO)),
        FitOutcome("success", None, frozenset(), None, None),
        FitOutcome("success", None, frozenset(), 1, ZCDP(RHO / 2)),
    ]
    rows = {tuple(outcome_features(o)) for o in [base, *variants]}
    assert len(rows) == 1 + len(variants)


def test_estimator_mechanism_does_not_swallow_errors_outside_the_fit() -> None:
    def broken_factory(rng: np.random.Generator) -> ClippedMean:
        raise TypeError("bad audit configuration")

    with pytest.raises(TypeError, match="bad audit configuration"):
        estimator_mechanism(broken_factory, lambda g: g.mean_, 1)(D, _rng())
    with pytest.raises(ValueError, match="expected 2"):
        estimator_mechanism(lambda rng: ClippedMean(RHO, random_state=rng),
                            lambda g: g.mean_, 2)(D, _rng())


def test_cli_audit_reports_the_outcomes_per_dataset() -> None:
    from privgauss.cli import main

    res = CliRunner().invoke(main, ["audit", "coinpress", "--rho", "0.1", "--runs", "100"])
    assert res.exit_code == 0, res.output
    assert "fits on D: 100 success" in res.output and "fits on D': 100 success" in res.output
