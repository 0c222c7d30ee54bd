"""``pg.DPScorer``: model selection on private rows (DESIGN.md rule 14, issue #25).

The exact ``score`` of held-out private rows is a release without noise; ``cross_val_score`` and
``GridSearchCV`` publish it and select by it. These tests check that the DP scorer charges what
it says (sensitivity (hi − lo)/n, the mechanism's noise scale, refusal before noise), that one
replaced row moves its statistic by no more than that, that it converges to the exact score,
that an empirical audit of the README's cross-validation workflow finds the exact workflow's
leak and none in the DP one, and that ``GridSearchCV`` selects by DP scores charged to one
accountant.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import chi2
from sklearn.model_selection import GridSearchCV, cross_val_score
from threadpoolctl import threadpool_limits

import privgauss as pg
from privgauss.audit import audit_mechanism
from privgauss.mechanisms import gaussian_sigma_analytic, gaussian_sigma_zcdp
from privgauss.privacy import zcdp_to_epsilon

D = 2


def _rows(n: int, seed: int = 0, scale: float = 1.0) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n, D)) * scale


@pytest.fixture(scope="module")
def gaussian() -> pg.PrivateGaussian:
    """A fitted DP Gaussian: its parameters are DP outputs, public to the scorer."""
    return pg.PrivateGaussian(
        rho=0.5, mean_bound=10.0, cov_bounds=(0.1, 10.0), random_state=0
    ).fit(_rows(2000))


@pytest.fixture(scope="module")
def mixture() -> pg.PrivateGaussianMixture:
    X = _rows(1000, seed=1) + np.repeat([[0.0, 0.0], [6.0, 6.0]], 500, axis=0)
    return pg.PrivateGaussianMixture(
        2, rho=0.5, mean_bound=20.0, cov_bounds=(0.1, 10.0), random_state=0
    ).fit(X)


def _expected_interval(weights: Any, means: Any, covs: Any) -> tuple[float, float]:
    """The documented clip interval, computed independently of the scorer's code:
    hi = log Σ_k w_k (2π)^{-d/2} det(Σ_k)^{-1/2}, lo = hi − (½ χ²_d(1 − 1e-4) + ln k + 1)."""
    weights, covs = np.atleast_1d(weights), np.asarray(covs).reshape(-1, D, D)
    peaks = [math.log(w) - 0.5 * np.linalg.slogdet(2 * np.pi * c)[1]
             for w, c in zip(weights, covs, strict=True)]
    hi = float(logsumexp(peaks))
    return hi - (0.5 * chi2.ppf(1 - 1e-4, D) + math.log(len(weights)) + 1.0), hi


def _gaussian_interval(g: pg.PrivateGaussian) -> tuple[float, float]:
    return _expected_interval([1.0], g.mean_[None], g.covariance_)


# ----------------------------------------------------------------------- 1. what is charged


@pytest.mark.parametrize(
    "kwargs, total, mechanism, scale_of",
    [
        ({"rho": 0.05}, pg.ZCDP(1.0), "gaussian", lambda s: s / math.sqrt(2 * 0.05)),
        ({"epsilon": 0.5}, pg.PureDP(2.0), "laplace", lambda s: s / 0.5),
        ({"epsilon": 0.5, "delta": 1e-6}, pg.ApproxDP(2.0, 1e-5), "gaussian",
         lambda s: gaussian_sigma_analytic(s, 0.5, 1e-6)),
    ],
    ids=["zcdp", "pure", "approx"],
)
def test_each_call_charges_its_budget_with_sensitivity_width_over_n(
    gaussian, kwargs, total, mechanism, scale_of
):
    acct = pg.Accountant(total)
    scorer = pg.DPScorer(acct, random_state=0, **kwargs)
    budget = pg.privacy.make_budget(**kwargs)
    lo, hi = _gaussian_interval(gaussian)
    assert scorer.clip_interval(gaussian) == pytest.approx((lo, hi), rel=1e-12, abs=1e-12)
    for n, calls in ((50, 1), (80, 2)):
        out = scorer(gaussian, _rows(n, seed=n))
        assert math.isfinite(out)
        assert len(acct.ledger) == calls  # exactly one entry per call
        entry = acct.ledger[-1]
        assert (entry.step, entry.mechanism, entry.cost) == ("score", mechanism, budget)
        assert entry.sensitivity == pytest.approx((hi - lo) / n, rel=1e-12)
        assert entry.noise_scale == pytest.approx(scale_of((hi - lo) / n), rel=1e-9)
    spent = acct.spent
    if isinstance(total, pg.ZCDP):
        assert spent.rho == pytest.approx(2 * 0.05, rel=1e-12)
    else:
        assert spent.epsilon == pytest.approx(2 * 0.5, rel=1e-12)
        assert getattr(spent, "delta", 0.0) == pytest.approx(2 * kwargs.get("delta", 0.0))


def test_refuses_before_drawing_noise_when_the_accountant_cannot_pay(gaussian):
    acct = pg.Accountant(pg.ZCDP(0.08))
    rng = np.random.default_rng(3)
    scorer = pg.DPScorer(acct, rho=0.05, random_state=rng)
    scorer(gaussian, _rows(40))
    ledger, spent, state = list(acct.ledger), acct.spent, rng.bit_generator.state
    with pytest.raises(pg.PrivacyBudgetError, match="exceed the total budget"):
        scorer(gaussian, _rows(40))
    assert acct.ledger == ledger and acct.spent == spent
    assert rng.bit_generator.state == state  # no noise was drawn


def test_charges_the_estimators_shared_accountant_and_refuses_without_one(gaussian):
    acct = pg.Accountant(pg.ZCDP(1.0))
    g = pg.PrivateGaussian(rho=0.2, accountant=acct, mean_bound=10.0, cov_bounds=(0.1, 10.0),
                           random_state=0).fit(_rows(500))
    pg.DPScorer(rho=0.1, random_state=0)(g, _rows(30))
    assert [e.step for e in acct.ledger][-1] == "score"
    assert acct.spent.rho == pytest.approx(0.3)
    with pytest.raises(pg.PrivacyBudgetError, match="accountant"):  # own budget, no accountant
        pg.DPScorer(rho=0.1)(gaussian, _rows(30))
    with pytest.raises(TypeError, match="PrivateGaussian"):
        pg.DPScorer(acct, rho=0.1)(object(), _rows(30))
    with pytest.raises(pg.PrivacyBudgetError):
        pg.DPScorer(acct, rho=0.0)
    with pytest.raises(ValueError, match="width"):
        pg.DPScorer(acct, rho=0.1, width=-1.0)
    assert acct.spent.rho == pytest.approx(0.3)  # nothing charged by the refusals


# ------------------------------------------------------- 2. sensitivity and clip, measured


def test_one_replaced_row_moves_the_statistic_by_at_most_the_charged_sensitivity(gaussian):
    """With the same seed the noise is the same, so outputs differ by exactly the pre-noise
    statistic's move. A row at the model's peak against a far row moves it by the whole width
    / n — no more (an unclipped or under-charged scorer fails) and no less (the charge is
    tight). The largest row the trust boundary accepts counts as clipped, without a warning;
    a larger one is refused there, before anything is charged."""
    n, rho = 40, 0.05
    base = _rows(n, seed=9)
    at_peak, far, huge, refused = base.copy(), base.copy(), base.copy(), base.copy()
    at_peak[0] = gaussian.mean_
    far[0] = [1e6, -1e6]
    huge[0] = [1e149, -1e149]
    refused[0] = [1e200, 0.0]

    def release(X: np.ndarray) -> tuple[float, Any]:
        acct = pg.Accountant(pg.ZCDP(1.0))
        out = pg.DPScorer(acct, rho=rho, random_state=7)(gaussian, X)
        return out, acct.ledger[-1]

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from the overflowing row
        warnings.simplefilter("ignore", pg.warnings.SeededNoiseWarning)
        (a, entry), (b, _), (c, _) = release(at_peak), release(far), release(huge)
    lo, hi = _gaussian_interval(gaussian)
    assert entry.sensitivity == pytest.approx((hi - lo) / n, rel=1e-12)
    assert entry.noise_scale == pytest.approx(gaussian_sigma_zcdp(entry.sensitivity, rho))
    move = a - b
    assert move <= entry.sensitivity * (1 + 1e-9)
    assert move >= entry.sensitivity * (1 - 1e-6)
    assert c == b
    acct = pg.Accountant(pg.ZCDP(1.0))
    with pytest.raises(pg.InvalidDataError):
        pg.DPScorer(acct, rho=rho)(gaussian, refused)
    assert acct.ledger == []


def test_clip_interval_is_the_models_peak_and_bounds_its_density(gaussian, mixture):
    assert pg.DPScorer(rho=1.0).clip_interval(gaussian) == pytest.approx(
        _gaussian_interval(gaussian), rel=1e-12)
    expected = _expected_interval(mixture.weights_, mixture.means_, mixture.covariances_)
    lo, hi = pg.DPScorer(rho=1.0).clip_interval(mixture)
    assert (lo, hi) == pytest.approx(expected, rel=1e-12)
    grid = np.concatenate([mixture.means_, _rows(2000, seed=4) * 3 + 3])
    assert np.max(mixture.score_samples(grid)) <= hi
    lo5, hi5 = pg.DPScorer(rho=1.0, width=5.0).clip_interval(mixture)
    assert (hi5, hi5 - lo5) == pytest.approx((hi, 5.0))


# --------------------------------------------------------------------------- 3. consistency


def test_at_a_huge_budget_the_dp_score_is_the_exact_score(gaussian, mixture):
    for model, X in ((gaussian, _rows(200, seed=5)),
                     (mixture, _rows(200, seed=6) + np.repeat([[0.0, 0.0], [6.0, 6.0]], 100, 0))):
        scorer = pg.DPScorer(pg.Accountant(pg.ZCDP(1e13)), rho=1e12, random_state=0)
        lo, hi = scorer.clip_interval(model)
        values = model.score_samples(X)
        assert lo < values.min() and values.max() <= hi  # every row inside the clip range
        assert scorer(model, X) == pytest.approx(model.score(X), abs=1e-6)


# ------------------------------------------------- 4. the README's workflow, audited

AUDIT_N = 60  # 3 folds of 20 held-out rows
FIT_RHO, SCORE_RHO, AUDIT_DELTA = 0.01, 0.01, 1e-3


class _SharedGenerator(np.random.Generator):
    """A Generator that ``sklearn.clone`` (a deep copy) does not copy: the three folds' fits then
    draw successive, independent noise, as with secure noise. (A plain seeded Generator or int
    would give every fold the same noise draws.)"""

    def __deepcopy__(self, memo: dict[int, Any]) -> _SharedGenerator:
        return self


def _neighbours() -> tuple[np.ndarray, np.ndarray]:
    """Replace-one neighbours: the last row (held out in the third fold, in the training rows
    of the other two) sits at the centre in D and far out in D′."""
    D_, D2 = _rows(AUDIT_N, seed=11), _rows(AUDIT_N, seed=11)
    D_[-1] = 0.0
    D2[-1] = [1e8, 0.0]
    return D_, D2


def _cv_workflow(dp: bool) -> Any:
    """The README's cross-validation example (small n, the fast 'clip' method, seeded noise):
    one accountant for the study, fits charged to it, scored by the DP scorer (or, the leak,
    by the estimator's exact score)."""

    def run(X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        shared = _SharedGenerator(np.random.PCG64(int(rng.integers(2**63))))
        acct = pg.Accountant(pg.ZCDP(1.0))
        g = pg.PrivateGaussian(rho=FIT_RHO, accountant=acct, method="clip",
                               covariance="identity", mean_bound=4.0, random_state=shared)
        scoring = pg.DPScorer(acct, rho=SCORE_RHO, random_state=shared) if dp else None
        scores = cross_val_score(g, X, cv=3, scoring=scoring, error_score="raise")
        assert acct.spent.rho == pytest.approx(3 * FIT_RHO + (3 * SCORE_RHO if dp else 0.0))
        return scores

    return run


def _audit(dp: bool, n_runs: int, charged_rho: float) -> Any:
    with threadpool_limits(1):  # tiny matrices: BLAS threads only contend
        return audit_mechanism(_cv_workflow(dp), *_neighbours(),
                               epsilon=zcdp_to_epsilon(charged_rho, AUDIT_DELTA),
                               delta=AUDIT_DELTA, n_runs=n_runs, random_state=25)


@pytest.mark.slow
def test_audit_flags_the_exact_score_workflow():
    """The leak was real: exact fold scores tell the neighbours apart far beyond what the
    accountant charged (the three fits, 0.03-zCDP: ε = 0.67 at δ = 1e-3)."""
    result = _audit(dp=False, n_runs=300, charged_rho=3 * FIT_RHO)
    assert not result.passed, str(result)
    # (ε̂ ≥ 2.06 here, 2.96 before the background component: a far held-out row now costs
    # (d + 1)·ln r nats, not r²/2 — still unbounded, so still not private; since every fit
    # keeps a background of at least a tenth of its clipped count's noise, the row sits at
    # 1e8: at 50 the leak is still there but this audit no longer resolves it)
    assert result.epsilon_lower_bound > result.claimed_epsilon + 1.0, str(result)


@pytest.mark.slow
def test_audit_passes_the_dp_scorer_workflow():
    """The leak is closed: with the DP scorer the same workflow on the same neighbours stays
    within its charge (three fits and three scores, 0.06-zCDP: ε = 1.01 at δ = 1e-3). An
    unclipped scorer moves the third fold's score by tens of nats here and fails like the
    exact one."""
    result = _audit(dp=True, n_runs=400, charged_rho=3 * (FIT_RHO + SCORE_RHO))
    assert result.passed, str(result)


# ------------------------------------------------------------------- 5. GridSearchCV


class _Recording(pg.DPScorer):
    """The DP scorer, remembering what it released."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.released: list[float] = []

    def __call__(self, estimator: Any, X: Any, y: Any = None) -> float:
        out = super().__call__(estimator, X, y)
        self.released.append(out)
        return out


@pytest.mark.filterwarnings("ignore::privgauss.warnings.ClippedDataWarning")  # the bad prior
@pytest.mark.parametrize("train_scores", [False, True])
def test_grid_search_selects_by_dp_scores_charged_to_one_accountant(train_scores):
    X = _rows(800, seed=3, scale=10.0)  # variance 100: a prior capping it at 2 fits badly
    acct = pg.Accountant(pg.ZCDP(2.0))
    g = pg.PrivateGaussian(rho=0.1, accountant=acct, mean_bound=100.0, random_state=0)
    scorer = _Recording(acct, rho=0.02, random_state=1)
    grid = GridSearchCV(g, {"cov_bounds": [(0.5, 2.0), (0.5, 1000.0)]}, cv=2, scoring=scorer,
                        return_train_score=train_scores, error_score="raise").fit(X)
    calls = 4 * (2 if train_scores else 1)  # 2 settings x 2 folds, on held-out (+ train) rows
    res = grid.cv_results_
    columns = [f"split{i}_{part}_score" for i in (0, 1)
               for part in (("test", "train") if train_scores else ("test",))]
    assert sorted(v for c in columns for v in res[c]) == sorted(scorer.released)
    assert len(scorer.released) == calls
    assert grid.best_index_ == int(np.argmax(res["mean_test_score"]))
    assert grid.best_params_ == {"cov_bounds": (0.5, 1000.0)}
    score_entries = [e for e in acct.ledger if e.step == "score"]
    assert len(score_entries) == calls
    # 2 x 2 fits + the refit on all rows (refit=True), and every score call
    assert acct.spent.rho == pytest.approx(5 * 0.1 + calls * 0.02, rel=1e-12)
    grid.score(X[:100])  # GridSearchCV.score uses the scorer: charged too
    assert len([e for e in acct.ledger if e.step == "score"]) == calls + 1
