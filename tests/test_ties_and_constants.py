"""Ties and constant columns (issue 17): a constant or near-constant column is a degenerate
direction, estimated as such (mean at its value, variance ≈ 0, PSD overall) and never a failure
after spending; discrete columns (0/1 flags, counts with many zeros, a few rounded values,
duplicated rows) fit where Gaussian data fit. Every decision about a degenerate axis is read from
released quantities, so the ledger is the same for every dataset of a given size.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import privgauss as pg

N = 20_000
CONST = 3.7
REGIMES = {"rho": {"rho": 0.5}, "eps": {"epsilon": 1.0, "delta": 1e-6}}


def _gaussian(n: int, seed: int) -> np.ndarray:
    """Three correlated Gaussian columns."""
    mix = np.array([[1.0, 0.3, 0.0], [0.0, 1.0, 0.2], [0.0, 0.0, 1.0]])
    return np.random.default_rng(seed).normal(size=(n, 3)) @ mix


def _with_constant(X: np.ndarray) -> np.ndarray:
    return np.column_stack([X, np.full(X.shape[0], CONST)])


def _errors(g: pg.PrivateGaussian, X: np.ndarray) -> tuple[float, float]:
    """Euclidean mean error and Frobenius covariance error of the first X.shape[1] coordinates
    against the sample mean and np.cov."""
    k = X.shape[1]
    return (float(np.linalg.norm(g.mean_[:k] - X.mean(axis=0))),
            float(np.linalg.norm(g.covariance_[:k, :k] - np.cov(X.T))))


@pytest.mark.parametrize("regime", list(REGIMES))
def test_coinpress_constant_column_keeps_every_mean(regime: str) -> None:
    """A constant column violates any cov_bounds lower bound; its near-zero variance was
    magnified by each whitening step until the clipped means collapsed (measured before the
    fix, ρ = 0.5: the constant column's mean 0.34 instead of 3.7 and the others' off by up to
    10). Now no frame whitens past the prior: the constant's mean is exact to the released
    noise, its variance is the prior's floor, and the other columns are as accurate as without
    it (seeds 0–2; measured ratios of the averaged errors ≤ 1.4)."""
    lo = 1e-4
    kw = dict(method="coinpress", mean_bound=100.0, cov_bounds=(lo, 100.0), **REGIMES[regime])
    without, with_ = [], []
    for seed in range(3):
        X = _gaussian(N, seed)
        g0 = pg.PrivateGaussian(random_state=seed, **kw).fit(X)
        g1 = pg.PrivateGaussian(random_state=seed, **kw).fit(_with_constant(X))
        assert abs(g1.mean_[3] - CONST) < 1e-3
        assert g1.covariance_[3, 3] <= 1.01 * lo  # the prior's floor: ≈ 0 next to 1
        assert np.abs(g1.covariance_[3, :3]).max() < 1e-3
        assert np.linalg.eigvalsh(g1.covariance_)[0] >= 0
        without.append(_errors(g0, X))
        with_.append(_errors(g1, X))
    e0, e1 = np.mean(without, axis=0), np.mean(with_, axis=0)
    assert e1[0] <= 2.0 * e0[0] + 1e-3
    assert e1[1] <= 2.0 * e0[1]


# ---------------------------------------------------------------------------------------------
# The bound-free methods: a constant column is a degenerate axis read off the released histograms
# ---------------------------------------------------------------------------------------------

BOUND_FREE = {  # name -> (estimator keywords, n, seeds): (ε, δ) = (1, 1e-6)
    "histogram": ({"method": "histogram"}, N, 4),
    "auto": ({}, N, 4),
    "ppe": ({"method": "ppe"}, 40_000, 2),
}


@pytest.mark.parametrize("name", list(BOUND_FREE))
def test_bound_free_constant_column_is_a_degenerate_axis(name: str) -> None:
    """Before: the histogram method raised EstimationFailed ("axis 3 is constant") after
    spending, and ppe returned a covariance of ~1e-41 for *every* column (relative error 1.0).
    Now the constant column's mean is its value, its variance and covariances are 0, the ledger
    is that of any 4-column table, and the other columns are as accurate as with an ordinary 4th
    column in its place (same d, so the same plan; averaged errors with the constant / with an
    independent N(0, 1) column, measured: histogram, seeds 0–3, mean 0.0061/0.0048, covariance
    0.022/0.023; ppe, seeds 0–1, 0.0050/0.0051, 0.016/0.015). Against the 3-column fit the
    d = 4 plan costs ppe's mean up to 2.9× (0.0050 vs 0.0018, both below the sampling error
    ≈ 0.01))."""
    kw, n, seeds = BOUND_FREE[name]
    errs: dict[str, list[tuple[float, float]]] = {"3": [], "const": [], "ordinary": []}
    for seed in range(seeds):
        X = _gaussian(n, seed)
        tables = {"3": X, "const": _with_constant(X),
                  "ordinary": np.column_stack([X, np.random.default_rng(99).normal(size=n)])}
        fits = {k: pg.PrivateGaussian(epsilon=1.0, delta=1e-6, random_state=seed, **kw).fit(T)
                for k, T in tables.items()}
        g = fits["const"]
        assert g.method_ == fits["3"].method_
        assert abs(g.mean_[3] - CONST) < 1e-9
        # its variance is the released bound on the fraction of rows away from the value (in
        # squared column units): positive, so no held-out row gets an infinite score, and small
        assert 0.0 < g.covariance_[3, 3] <= 0.02 or name == "ppe"  # (ppe: its own route, 0)
        np.testing.assert_array_equal(g.covariance_[3, :3], 0.0)
        np.testing.assert_array_equal(g.covariance_[:3, 3], 0.0)
        assert np.linalg.eigvalsh(g.covariance_)[0] >= -1e-12
        # the budget is the same; the refinement's number of steps is planned from released
        # scale brackets (a degenerate axis enters as public padding), so the ledger length of
        # this different table may differ — through DP outputs only
        # (field by field: pytest.approx compares budget objects exactly, and the sums of
        # different step counts round differently in the last bit)
        spent, other = g.privacy_spent_, fits["ordinary"].privacy_spent_
        assert (spent.epsilon, spent.delta) == pytest.approx((other.epsilon, other.delta),
                                                             rel=1e-12)
        for k, f in fits.items():
            errs[k].append(_errors(f, X))
    e3, ec, eo = (np.mean(errs[k], axis=0) for k in ("3", "const", "ordinary"))
    assert ec[0] <= 1.5 * eo[0] + 1e-3 and ec[1] <= 1.5 * eo[1]
    # the d = 4 plan costs the other means at most 3× the 3-column fit's, or stays below the
    # sampling error √(3/n) (ppe, seed 1: 0.011 against 0.0007, sampling error 0.0087)
    assert ec[0] <= max(3.0 * e3[0], math.sqrt(3 / n)) and ec[1] <= 2.0 * e3[1]


def test_all_zero_and_huge_constant_columns() -> None:
    """Exact zeros (a flag never set) and a constant far from 0 (1e12): the released value is
    the column's value exactly, the variance the small released floor (never 0)."""
    X = _gaussian(N, 0)
    T = np.column_stack([X, np.zeros(N), np.full(N, 1e12)])
    g = pg.PrivateGaussian(epsilon=1.0, delta=1e-6, random_state=0).fit(T)
    assert g.mean_[3] == 0.0 and g.mean_[4] == 1e12
    np.testing.assert_array_equal(g.covariance_[3:, :3], 0.0)
    assert g.covariance_[3, 4] == 0.0 and 0.0 < g.covariance_[3, 3] <= 0.02
    assert 0.0 < g.covariance_[4, 4] <= 0.02
    assert np.isfinite(g.score_samples(T[:100])).all()
    assert _errors(g, X)[1] < 0.1


def test_constant_column_variance_vanishes_with_the_budget() -> None:
    """A constant column's released variance is floored by its count's noise, so it tends to
    np.var's 0 as the budget grows (before: floored at 1/n = 3.3e-4 at every ε ≥ 1e4, a knob
    that did not vanish); the other columns converge to np.cov and the fit still scores rows."""
    X = _with_constant(_gaussian(3000, 0))
    got = []
    for eps in (1e4, 1e8, 1e12):
        g = pg.PrivateGaussian(epsilon=eps, delta=1e-6, random_state=0).fit(X)
        got.append(g.covariance_[3, 3])
        assert g.mean_[3] == CONST
        np.testing.assert_array_equal(g.covariance_[3, :3], 0.0)
        assert np.isfinite(g.score_samples(X[:50])).all()
    assert 0.0 < got[2] < got[1] < got[0]
    assert got[2] < 1e-7  # measured 3.3e-9 (1/n = 3.3e-4 before)
    assert np.abs(g.covariance_[:3, :3] - np.cov(X[:, :3].T, bias=True)).max() < 1e-6


# ---------------------------------------------------------------------------------------------
# Public rows that are constant in a column cannot precondition it: refused before spending
# ---------------------------------------------------------------------------------------------


def test_public_rows_constant_in_a_column_are_refused_before_spending() -> None:
    """Before: the public preconditioner scaled the column by its rounding-level public spread
    and the fit failed after spending ("the private whitening chain did not converge")."""
    X = _with_constant(_gaussian(N, 0))
    P = _with_constant(_gaussian(50, 9))
    acct = pg.Accountant(pg.ZCDP(1.0))
    with pytest.raises(pg.InvalidDataError, match=r"constant in column\(s\) \[3\].*histogram"):
        pg.PrivateGaussian(rho=0.5, method="public", accountant=acct, random_state=0).fit(
            X, public_X=P)
    assert acct.spent is None or acct.spent.rho == 0
    with pytest.raises(ValueError, match=r"constant in column\(s\) \[3\]"):  # no route left
        pg.PrivateGaussian(rho=0.5, accountant=acct, random_state=0).fit(X, public_X=P)
    assert not acct.ledger
    # auto with an (ε, δ) budget takes the bound-free route, which handles the column
    g = pg.PrivateGaussian(epsilon=1.0, delta=1e-6, random_state=0).fit(X, public_X=P)
    assert g.method_ == "histogram" and "constant in column(s) [3]" in g.method_reason_
    assert g.mean_[3] == CONST


# ---------------------------------------------------------------------------------------------
# Near-constant columns and neighbours of a constant column end the same way (privacy rule 10)
# ---------------------------------------------------------------------------------------------

NEIGHBOUR_METHODS = {  # name -> (estimator factory(seed), n)
    "histogram": (lambda s: pg.PrivateGaussian(epsilon=1.0, delta=1e-6, method="histogram",
                                               random_state=s), 8000),
    "auto": (lambda s: pg.PrivateGaussian(epsilon=1.0, delta=1e-6, random_state=s), 8000),
    "coinpress-rho": (lambda s: pg.PrivateGaussian(rho=0.5, method="coinpress", mean_bound=100.0,
                                                   cov_bounds=(1e-2, 100.0), random_state=s),
                      8000),
    "coinpress-eps": (lambda s: pg.PrivateGaussian(epsilon=1.0, delta=1e-6, method="coinpress",
                                                   mean_bound=100.0, cov_bounds=(1e-2, 100.0),
                                                   random_state=s), 8000),
    "ppe": (lambda s: pg.PrivateGaussian(epsilon=1.0, delta=1e-6, method="ppe", random_state=s),
            40_000),
}


def _constant_variants(n: int) -> dict[str, np.ndarray]:
    X = _gaussian(n, 0)
    const = _with_constant(X)
    one_off = const.copy()
    one_off[-1, 3] = 5.0  # a neighbour: constant in all rows but one
    far_off = const.copy()
    far_off[-1, 3] = -1e150  # a neighbour with the entry's extreme value in that row
    near = const.copy()
    near[:, 3] += 1e-9 * np.random.default_rng(5).normal(size=n)
    return {"constant": const, "one-off": one_off, "far-off": far_off, "near": near}


@pytest.mark.parametrize("name", list(NEIGHBOUR_METHODS))
def test_constant_near_constant_and_neighbours_end_alike(name: str) -> None:
    """A constant column, its neighbours (one row changed, to 5.0 or to -1e150) and a
    near-constant column (3.7 + 1e-9·noise) end in the same outcome class with the same
    warnings and the same ledger length; all succeed. Before, the histogram method failed
    after spending on the first three and succeeded on the fourth."""
    from privgauss.audit import fit_outcome

    factory, n = NEIGHBOUR_METHODS[name]
    outcomes, fits = {}, {}
    for k, T in _constant_variants(n).items():
        fits[k] = factory(3)
        outcomes[k] = fit_outcome(fits[k], T)
    first = outcomes["constant"]
    assert first.kind == "success", outcomes
    for k, o in outcomes.items():
        assert o.kind == first.kind, (k, o)
        assert o.warning_categories == first.warning_categories, (k, o)
        if k != "near":  # the neighbours; the near-constant table is another dataset, whose
            # refinement plan (read off released scale brackets) may take other steps
            assert o.ledger_length == first.ledger_length, (k, o)
        # and the estimate is right: the constant's value, a variance at most the prior's floor
        # (6e-3: 0.06 of the prior floor's standard deviation √0.01; coinpress's mean-first
        # route's error there is its final mean's noise: 0.0003-0.0053 over seeds 0-5 before
        # issue 26's count along near-zero columns, 0.0001-0.0047 with it (0.0042 at seed 3,
        # where the earlier bound of 4e-3 had been set from one draw); its sequential route
        # 0.0010-0.0011 — the former gives the final mean 10 % of ρ, the latter 20 %; a
        # constant column that drags the means is off by 0.1 or more)
        assert abs(fits[k].mean_[3] - CONST) < 6e-3, (k, fits[k].mean_)
        assert 0 <= fits[k].covariance_[3, 3] <= 1.01e-2, (k, fits[k].covariance_[3, 3])


# ---------------------------------------------------------------------------------------------
# Discrete columns and duplicated rows fit where Gaussian data fit, about as accurately
# ---------------------------------------------------------------------------------------------


def _discrete_table(kind: str, n: int, seed: int) -> np.ndarray:
    """Three Gaussian columns and a 4th that is Gaussian ("gauss", the reference), a 0/1 flag
    (p = 0.1 or 0.5), a count with many zeros (Poisson 0.3), rounded to three values, or a
    Gaussian table whose last 30 % of rows duplicate earlier ones ("dup30")."""
    rng = np.random.default_rng(100 + seed)
    X = _gaussian(n, seed)
    fourth = {
        "gauss": lambda: rng.normal(size=n),
        "flag-0.1": lambda: (rng.random(n) < 0.1).astype(float),
        "flag-0.5": lambda: (rng.random(n) < 0.5).astype(float),
        "poisson-0.3": lambda: rng.poisson(0.3, n).astype(float),
        "rounded-3": lambda: np.clip(np.round(rng.normal(size=n)), -1.0, 1.0),
        "dup30": lambda: rng.normal(size=n),
    }[kind]()
    T = np.column_stack([X, fourth])
    if kind == "dup30":
        k = int(0.3 * n)
        T[n - k:] = T[rng.integers(0, n - k, k)]
    return T


KINDS = ("flag-0.1", "flag-0.5", "poisson-0.3", "rounded-3", "dup30")
DISCRETE_METHODS = {  # name -> (factory(seed), n, seeds, public rows?)
    "histogram": (lambda s: pg.PrivateGaussian(epsilon=1.0, delta=1e-6, method="histogram",
                                               random_state=s), 6000, 4, False),
    "coinpress-rho": (NEIGHBOUR_METHODS["coinpress-rho"][0], 8000, 2, False),
    "coinpress-eps": (NEIGHBOUR_METHODS["coinpress-eps"][0], 8000, 2, False),
    "public-rho": (lambda s: pg.PrivateGaussian(rho=0.5, method="public", random_state=s),
                   8000, 2, True),
    "public-eps": (lambda s: pg.PrivateGaussian(epsilon=1.0, delta=1e-6, method="public",
                                                random_state=s), 8000, 2, True),
}


#: skewed columns lose a little of their tail to the Gaussian-calibrated clipping (at ρ = 0.5 the
#: Poisson column's variance comes out 0.27 for 0.29): measured ratios up to 1.91 (Poisson) and
#: 1.39 (p = 0.1 flag), both with coinpress at ρ = 0.5
SKEW_FACTOR = {"poisson-0.3": 2.5, "flag-0.1": 1.75}


def _relative_cov_error(g: pg.PrivateGaussian, T: np.ndarray) -> float:
    C = np.cov(T.T)
    return float(np.linalg.norm(g.covariance_ - C) / np.linalg.norm(C))


@pytest.mark.parametrize("name", list(DISCRETE_METHODS))
def test_discrete_columns_fit_like_gaussian_ones(name: str) -> None:
    """Each defect fits at the n where the Gaussian reference fits, with a relative covariance
    error against np.cov (averaged over the seeds) at most 1.5× the reference's (skewed
    columns: :data:`SKEW_FACTOR`). Before, the histogram method failed after spending on the
    p = 0.1 flag at n = 6000 for seeds 0 and 2 (its scale histogram released only the zero
    bin). Measured ratios to the reference (flag 0.1, flag 0.5, Poisson, rounded, duplicated):
    histogram 0.96 0.94 0.85 0.90 1.07 (reference 0.110); coinpress ρ 1.39 0.81 1.91 0.79 0.95
    (0.0084), (ε, δ) 1.08 0.97 1.17 0.99 0.98 (0.023); public ρ 1.22 0.82 1.67 0.86 0.96
    (0.010), (ε, δ) 1.33 0.82 1.31 1.01 0.99 (0.024)."""
    factory, n, seeds, public = DISCRETE_METHODS[name]

    def errors(kind: str) -> tuple[float, float]:
        """(relative covariance error, the 4th column's mean error in its standard
        deviations), averaged over the seeds."""
        errs = []
        for s in range(seeds):
            T = _discrete_table(kind, n, s)
            P = _discrete_table(kind, 40, 50 + s) if public else None
            g = factory(s).fit(T, public_X=P)
            col = T[:, 3]
            errs.append((_relative_cov_error(g, T), abs(g.mean_[3] - col.mean()) / col.std()))
        return tuple(np.mean(errs, axis=0))  # type: ignore[return-value]

    ref_cov, ref_mean = errors("gauss")
    for kind in KINDS:
        cov, mean = errors(kind)
        assert cov <= SKEW_FACTOR.get(kind, 1.5) * ref_cov, kind
        # a skewed column's mean is as good as a Gaussian one's, up to its sampling error
        # 1/√n. Before: a clipped last mean step de-shrunk under the Gaussian model put a
        # p = 0.1 flag 0.17 standard deviations off (coinpress, public; Gaussian column 0.007),
        # and the histogram route read that flag as the constant 0 on two of four seeds
        assert mean <= 2.0 * ref_mean + 1.0 / math.sqrt(n), (kind, mean, ref_mean)
