"""Neighbour-outcome suite (privacy rule 10, the trust boundary).

For every method of both estimators, two neighbouring datasets that differ in one
extreme-but-valid record (|x| up to 1e150, the entry limit) — in ordinary units and in tiny
units (data scaled by 1e-6, parameters scaled to match) — must end in the same outcome class,
with the same warnings and the same number of ledger entries, at the same noise seed. Only a DP
output (an :class:`EstimationFailed` raised after the same charges) may differ, and then only
as a DP output would. A re-validation of transformed rows inside an algorithm (which raises
:class:`InvalidDataError` once a valid record overflows in a whitened or rescaled frame) makes
the tiny-units cases fail.
"""

from __future__ import annotations

import numpy as np
import pytest

import privgauss as pg
from privgauss.audit import fit_outcome

TINY = 1e-6
EXTREMES = ("big+", "big-all")  # last row of D': 1e150 in one coordinate / -1e150 in all


def _extreme(kind: str, d: int) -> np.ndarray:
    if kind == "big+":
        return np.eye(1, d)[0] * 1e150
    return np.full(d, -1e150)


def _gaussian_rows(n: int, d: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, d))


def _constant_rows(n: int, d: int, seed: int) -> np.ndarray:
    """Gaussian rows whose last column is constant (3.7): the "big-all" neighbour makes it
    constant in all rows but one, which must end as the constant column does (issue 17)."""
    X = _gaussian_rows(n, d, seed)
    X[:, -1] = 3.7
    return X


def _zero_inflated_rows(n: int, d: int, seed: int) -> np.ndarray:
    """Gaussian rows whose last column has 72 % zeros and a long tail of distinct values: the
    histogram route reads its spread from the octave release of tied axes (issue 26)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    tail = np.exp(rng.normal(0.0, 1.3, size=n))
    X[:, -1] = np.where(rng.random(n) < 0.72, 0.0, tail)
    return X


def _wide_rows(n: int, d: int, seed: int) -> np.ndarray:
    """Gaussian rows whose last column is log-uniform over 8 decades: no octave of its pair
    differences holds enough pairs for the scale histogram, and the histogram route brackets
    it from the octave release of wide axes (issue 27)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    X[:, -1] = 10 ** rng.uniform(0.0, 8.0, size=n)
    return X


def _mixture_rows(n: int, d: int, seed: int) -> np.ndarray:
    """n rows of a 2-component mixture in d dimensions (``make_mixture(n, k, d)``)."""
    return pg.datasets.make_mixture(n, 2, d, separation=8.0, random_state=seed).X


def test_mixture_rows_helper_has_d_columns() -> None:
    """The helper once passed d as k (issue #29): harmless at d = 2, wrong at any other d."""
    X = _mixture_rows(50, 3, 0)
    assert X.shape == (50, 3)


G = pg.PrivateGaussian
M = pg.PrivateGaussianMixture


def _mix(method: str, **kw):
    return lambda u, s: M(2, epsilon=1.0, delta=1e-6, method=method, enforce_requirements=False,
                          random_state=s, **kw)


#: name -> (factory(unit, seed) -> unfitted estimator, rows(n, d, seed), n, d, public rows m)
CASES = {
    "clip-pure": (lambda u, s: G(epsilon=1.0, method="clip", covariance=u**2 * np.eye(3),
                                mean_bound=10 * u, random_state=s), _gaussian_rows, 600, 3, 0),
    "clip-zcdp": (lambda u, s: G(rho=0.5, method="clip", covariance=u**2 * np.eye(3),
                                mean_bound=10 * u, random_state=s), _gaussian_rows, 600, 3, 0),
    "coinpress-known": (lambda u, s: G(rho=0.5, method="coinpress", covariance=u**2 * np.eye(3),
                                      mean_bound=10 * u, random_state=s),
                        _gaussian_rows, 600, 3, 0),
    "coinpress": (lambda u, s: G(rho=0.5, method="coinpress", mean_bound=10 * u,
                                cov_bounds=(0.1 * u**2, 10 * u**2), random_state=s),
                  _gaussian_rows, 600, 3, 0),
    "public-known": (lambda u, s: G(rho=0.5, method="public", covariance=u**2 * np.eye(3),
                                   random_state=s), _gaussian_rows, 600, 3, 1),
    "public": (lambda u, s: G(rho=0.5, method="public", random_state=s),
               _gaussian_rows, 4000, 3, 8),
    "public-approx": (lambda u, s: G(epsilon=1.0, delta=1e-6, method="public", random_state=s),
                      _gaussian_rows, 4000, 3, 8),
    "histogram": (lambda u, s: G(epsilon=1.0, delta=1e-6, method="histogram", random_state=s),
                  _gaussian_rows, 4000, 3, 0),
    "histogram-known": (lambda u, s: G(epsilon=1.0, delta=1e-6, method="histogram",
                                      covariance=u**2 * np.eye(3), random_state=s),
                        _gaussian_rows, 4000, 3, 0),
    "hs-prior": (lambda u, s: G(epsilon=1.0, method="hypothesis-selection",
                               covariance=u**2 * np.eye(3), mean_bound=2 * u, random_state=s),
                 _gaussian_rows, 600, 3, 0),
    "hs-public": (lambda u, s: G(epsilon=1.0, method="hypothesis-selection", random_state=s),
                  _gaussian_rows, 600, 1, 20),
    "ppe": (lambda u, s: G(epsilon=1.0, delta=1e-6, method="ppe", random_state=s),
            _gaussian_rows, 40000, 3, 0),
    "gaussian-auto": (lambda u, s: G(epsilon=1.0, delta=1e-6, random_state=s),
                      _gaussian_rows, 4000, 3, 0),
    # huge budgets: the practical steps search their radii from the data
    # (coinpress/radius_search.py),
    # a fixed number of counts each, whatever the extreme row
    "gaussian-auto-huge": (lambda u, s: G(epsilon=1e4, delta=1e-6, random_state=s),
                           _gaussian_rows, 4000, 3, 0),
    "coinpress-huge": (lambda u, s: G(rho=1e4, method="coinpress", mean_bound=10 * u,
                                     cov_bounds=(0.1 * u**2, 10 * u**2), random_state=s),
                       _gaussian_rows, 600, 3, 0),
    "histogram-constant": (lambda u, s: G(epsilon=1.0, delta=1e-6, method="histogram",
                                         random_state=s), _constant_rows, 4000, 3, 0),
    "histogram-tied": (lambda u, s: G(epsilon=1.0, delta=1e-6, method="histogram",
                                     random_state=s), _zero_inflated_rows, 4000, 3, 0),
    "histogram-wide": (lambda u, s: G(epsilon=1.0, delta=1e-6, method="histogram",
                                     random_state=s), _wide_rows, 4000, 3, 0),
    "gaussian-auto-constant": (lambda u, s: G(epsilon=1.0, delta=1e-6, random_state=s),
                               _constant_rows, 4000, 3, 0),
    "coinpress-constant": (lambda u, s: G(rho=0.5, method="coinpress", mean_bound=10 * u,
                                         cov_bounds=(0.1 * u**2, 10 * u**2), random_state=s),
                           _constant_rows, 600, 3, 0),
    "ppe-constant": (lambda u, s: G(epsilon=1.0, delta=1e-6, method="ppe", random_state=s),
                     _constant_rows, 40000, 3, 0),
    "kssu": (_mix("kssu"), _mixture_rows, 3000, 2, 0),
    "sample-aggregate": (_mix("sample-aggregate"), _mixture_rows, 3000, 2, 0),
    "pegme": (_mix("pegme"), _mixture_rows, 3000, 2, 0),
    "agnostic": (_mix("agnostic"), _mixture_rows, 3000, 2, 0),
    "public-light": (_mix("public-light"), _mixture_rows, 3000, 2, 60),
    "public-heavy": (_mix("public-heavy"), _mixture_rows, 3000, 2, 60),
    "public-heavy-zcdp": (lambda u, s: M(2, rho=0.5, method="public-heavy", random_state=s,
                                         enforce_requirements=False),
                          _mixture_rows, 3000, 2, 60),
    "em": (_mix("em"), _mixture_rows, 3000, 2, 0),
    # below the refined localisation's n: the histograms' diagonal frame, the octave release
    # of wide axes called for by their releases, the unspent reserve on the last step (a tied
    # column's case: its neighbours' DiscreteDataWarning, a function of the released atom
    # counts and fit, differs at this seed — a DP output this checker has no rule for; its
    # ledger branch: test_em_localisation_share.py)
    "em-diagonal": (_mix("em"), _mixture_rows, 1800, 4, 0),
    "em-diagonal-wide": (_mix("em"), _wide_rows, 1800, 3, 0),
    # at a huge budget private EM's DP stopping rule may skip planned steps
    "em-huge": (lambda u, s: M(2, epsilon=1e4, delta=1e-6, method="em", random_state=s,
                               enforce_requirements=False), _mixture_rows, 3000, 2, 0),
    "em-zcdp-public": (lambda u, s: M(2, rho=0.5, method="em", random_state=s,
                                      enforce_requirements=False), _mixture_rows, 3000, 2, 8),
    "mixture-auto-public": (lambda u, s: M(2, epsilon=1.0, delta=1e-6, random_state=s),
                            _mixture_rows, 3000, 2, 60),
    # private EM localised inside the user's prior (no public rows), under rho and (eps, delta),
    # and auto choosing it on a small table
    "em-prior": (lambda u, s: M(2, rho=0.5, method="em", mean_bound=50 * u,
                                cov_bounds=(0.01 * u**2, 100 * u**2), random_state=s),
                 _mixture_rows, 3000, 2, 0),
    "em-prior-approx": (lambda u, s: M(2, epsilon=1.0, delta=1e-6, method="em",
                                       mean_bound=50 * u, center=np.full(2, u),
                                       cov_bounds=(0.01 * u**2, 100 * u**2), random_state=s),
                        _mixture_rows, 3000, 2, 0),
    "mixture-auto-prior": (lambda u, s: M(2, rho=1e4, mean_bound=50 * u,
                                          cov_bounds=(0.01 * u**2, 100 * u**2), random_state=s),
                           _mixture_rows, 60, 2, 0),
    # dirty public rows (issue 17): a far row dropped by the robust frame; public rows 8× too
    # wide; a constant public column (auto falls back to histogram before spending)
    "public-far-row": (lambda u, s: G(rho=0.5, method="public", random_state=s),
                       _gaussian_rows, 4000, 3, 8, lambda P: np.vstack([P, 1e6 * P[:1]])),
    "public-wide-approx": (lambda u, s: G(epsilon=1.0, delta=1e-6, method="public",
                                          random_state=s),
                           _gaussian_rows, 4000, 3, 8, lambda P: 8.0 * P),
    "auto-constant-public": (lambda u, s: G(epsilon=1.0, delta=1e-6, random_state=s),
                             _gaussian_rows, 4000, 3, 8,
                             lambda P: np.c_[P[:, :2], np.full(len(P), 2.0)]),
}


CLIPPED = "privgauss.warnings.ClippedDataWarning"
DISCRETE = "privgauss.warnings.DiscreteDataWarning"
SIMPLER = "privgauss.warnings.SimplerModelWarning"


def _outcome_pair(case: str, extreme: str, unit: float, seed: int = 3):
    factory, rows, n, d, m, *dirty = CASES[case]
    X = rows(n, d, 0) * unit
    Xn = X.copy()
    Xn[-1] = _extreme(extreme, d)
    P = rows(m, d, 1) * unit if m else None
    if dirty:  # a defect of the public rows
        P = dirty[0](P)
    ea, eb = factory(unit, seed), factory(unit, seed)
    a, b = fit_outcome(ea, X, public_X=P), fit_outcome(eb, Xn, public_X=P)
    for outcome, est in ((a, ea), (b, eb)):
        _assert_clipped_warning_decided_by_release(outcome, est)
        _assert_discrete_warning_decided_by_release(outcome, est)
        _assert_simpler_warning_decided_by_release(outcome, est)
    return _planned_length(a, ea), _planned_length(b, eb)


def _planned_length(outcome, est):
    """Private EM's stopping rule (a function of released models: a DP output) skips the planned
    steps between its stop and its last step, one joint release each (three without
    ``JOINT_STATS``; one run after the pick). Checked here that the ledger misses exactly those;
    the outcome is compared between neighbours with the planned ledger length. Likewise a
    CoinPress chain — inside a prior, or the bound-free route's refinement (also inside EM's
    initialisation) — covers a direction its releases show shrunk, or a column its DP outputs
    name (issue 26), with the counts of a radius search taken from its last covariance step
    (:mod:`privgauss.gaussian.coinpress.direction_cover`): those entries, whole searches inside
    a coinpress group, are left out of the planned length."""
    import dataclasses

    from privgauss.mixture import private_em as pe

    per = 1 if pe.JOINT_STATS else 3  # ledger entries of one run's EM step
    if outcome.kind == "success":
        from privgauss.gaussian.coinpress.direction_cover import _QUERIES

        cover = [e.step for e in est.ledger_ if " cover " in e.step]
        assert len(cover) % _QUERIES == 0, cover
        assert all(e.startswith("coinpress-") for e in cover), cover
        outcome = dataclasses.replace(outcome, ledger_length=outcome.ledger_length - len(cover))
    info = getattr(est, "fit_info_", None) or {}
    frozen = info.get("em_frozen") if outcome.kind == "success" else None
    if frozen:  # a wide plan's exploring runs frozen after step f skip their later ones
        plan = info["em_plan"]
        assert plan.freeze and all(f <= plan.explore_steps for _, f in frozen), frozen
        outcome = dataclasses.replace(outcome, ledger_length=outcome.ledger_length + per * sum(
            plan.explore_steps - f for _, f in frozen))
    stop = info.get("em_stopped_after") if outcome.kind == "success" else None
    if stop is None:
        return outcome
    plan = info["em_plan"]
    numbers = [int(e.step.split()[2].split("/")[0]) for e in est.ledger_
               if e.step.startswith("em step ")]
    assert plan.explore_steps < stop < plan.n_steps - 1, stop
    assert not set(range(stop + 1, plan.n_steps)) & set(numbers), (stop, numbers)
    assert numbers[-per:] == [plan.n_steps] * per
    return dataclasses.replace(
        outcome, ledger_length=outcome.ledger_length + per * (plan.n_steps - 1 - stop))


def _assert_clipped_warning_decided_by_release(outcome, est):
    """ClippedDataWarning is a function of a DP output (the released clipped fraction against
    its public threshold): it may differ between neighbours, but only as the release decides."""
    fraction = getattr(est, "clipped_fraction_", None) if outcome.kind == "success" else None
    if fraction is None:
        assert CLIPPED not in outcome.warning_categories, outcome
        return
    decided = fraction > est.clipped_fraction_alarm_
    assert (CLIPPED in outcome.warning_categories) == decided, (outcome, fraction)


def _assert_discrete_warning_decided_by_release(outcome, est):
    """DiscreteDataWarning is a function of DP outputs (private EM's released thinnest
    variance against the eigenvalue floor, the released heaviest-cell counts' atom gain
    against its alarm): it may differ between neighbours, but only as those releases decide
    (at n = 1,800, d = 3 a released variance may sit at the floor in one neighbour's fit)."""
    from privgauss.mixture.em_starts import EIG_FLOOR

    info = (getattr(est, "fit_info_", None) or {}) if outcome.kind == "success" else {}
    sel, gain = info.get("final_selection"), info.get("atom_gain")
    floored = sel is not None and float(sel["em_thinnest_variance"]) <= EIG_FLOOR * (1 + 1e-6)
    parked = gain is not None and gain["gain"] >= gain["alarm"]
    assert (DISCRETE in outcome.warning_categories) == (floored or parked), (outcome, sel, gain)


def _assert_simpler_warning_decided_by_release(outcome, est):
    """SimplerModelWarning is a function of a DP output (private EM's final pick among the EM
    fit, a single Gaussian and the public rows' fit, by noisy released scores): it may
    differ between neighbours, but only as the pick decides — raised exactly when the
    released pick (``selected_model_``) is not the EM fit."""
    from privgauss.mixture.private_em import CANDIDATES

    selected = getattr(est, "selected_model_", None) if outcome.kind == "success" else None
    picked_other = selected is not None and selected != CANDIDATES[0]
    assert (SIMPLER in outcome.warning_categories) == picked_other, (outcome, selected)


def _assert_same(a, b):
    allowed = {"success", "failed"}  # never an exception decided by a private value
    assert a.kind in allowed, a
    assert b.kind in allowed, b
    # ClippedDataWarning, DiscreteDataWarning, SimplerModelWarning: checked against the
    # released values (_outcome_pair), not compared
    wa, wb = (x.warning_categories - {CLIPPED, DISCRETE, SIMPLER} for x in (a, b))
    if a.kind == b.kind:
        assert wa == wb, (a, b)
        assert a.ledger_length == b.ledger_length, (a, b)
    else:  # a DP output (⊥) differs: only its own warning may differ
        spent = "privgauss.warnings.BudgetSpentWarning"
        assert wa - {spent} == wb - {spent}, (a, b)


# Every case runs with both extremes and in both units: the default run takes a Latin square
# of the four (each extreme once, each unit once: the tiny units that catch a re-validation,
# with the one-coordinate extreme that test_a_revalidation_inside_an_algorithm_is_caught
# shows caught there), the slow set the other two
PAIRS = [
    pytest.param("big+", TINY, id="big+-tiny"),
    pytest.param("big-all", 1.0, id="big-all-ordinary"),
    pytest.param("big+", 1.0, id="big+-ordinary", marks=pytest.mark.slow),
    pytest.param("big-all", TINY, id="big-all-tiny", marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("extreme", "unit"), PAIRS)
@pytest.mark.parametrize("case", list(CASES))
def test_neighbours_end_in_the_same_outcome(case, extreme, unit):
    a, b = _outcome_pair(case, extreme, unit)
    _assert_same(a, b)
    if case.endswith("-constant"):  # a constant column is estimated, never a failure (⊥)
        assert a.kind == b.kind == "success", (a, b)


@pytest.mark.parametrize(
    ("module", "case"),
    [("privgauss.methods._gaussian", "coinpress-known"),  # the whitening of a known covariance
     ("privgauss.gaussian.histogram", "histogram-known"),
     ("privgauss.reductions.ppe_gaussian", "ppe")],
)
def test_a_revalidation_inside_an_algorithm_is_caught(monkeypatch, module, case):
    """The suite's power: re-validating transformed rows (the bug this suite exists for) in one
    place makes a tiny-units pair end differently."""
    import importlib

    from privgauss.validation import check_data

    def revalidating(X, A=None, shift=None):  # the old code: transform, then validate again
        with np.errstate(all="ignore"):
            W = np.asarray(X) - (0.0 if shift is None else shift)
            if A is not None:
                W = W * A if np.ndim(A) == 1 else W @ np.asarray(A).T
        return check_data(W)

    monkeypatch.setattr(importlib.import_module(module), "transform_rows", revalidating)
    a, b = _outcome_pair(case, "big+", TINY)
    with pytest.raises(AssertionError):
        _assert_same(a, b)
