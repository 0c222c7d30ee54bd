"""Private EM's atom signal (:mod:`privgauss.mixture.atoms`): the per-column heaviest fine-grid
cell counts, released with sensitivity √d as one planned step ("em atom counts"), and the
:class:`~privgauss.warnings.DiscreteDataWarning` they raise — decided from DP outputs only, on
every em path (in memory, public rows, a prior, dask rows, a .npy file)."""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pytest

import privgauss as pg
from privgauss.mechanisms import Release
from privgauss.mixture import atoms as at
from privgauss.mixture import private_em as pe
from privgauss.privacy import ZCDP, Accountant, ApproxDP
from privgauss.sensitivity import column_max_counts_l2


def _parked(n: int, seed: int, zeros: float = 0.4) -> np.ndarray:
    """rwm's shape: a count-like column with ``zeros`` of its rows at exactly 0 (the rest
    continuous, skewed), a continuous column that depends on it and an independent one, on
    scales far from 1 (a non-private mixture parks a component on the zeros)."""
    rng = np.random.default_rng(seed)
    zero = rng.random(n) < zeros
    visits = np.where(zero, 0.0, rng.gamma(2.0, 3.0, n))
    age = 40.0 + 0.8 * visits + rng.normal(0.0, 10.0, n)
    income = rng.lognormal(1.0, 0.4, n)
    return np.column_stack([visits, age, income])


def _continuous(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    lab = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    means = np.array([[0.0, 0.0, 0.0], [4.0, 0.0, 1.0], [0.0, 4.0, -1.0]])
    return (means[lab] + rng.normal(size=(n, 3)) * [0.3, 1.0, 2.0]) * 50.0 + 1000.0


def _fit(X: Any, P: Any = None, **kw: Any) -> tuple[pg.PrivateGaussianMixture, set[str]]:
    params: dict[str, Any] = {} if "rho" in kw else {"epsilon": 1.0, "delta": 1e-6}
    params.update(kw)
    m = pg.PrivateGaussianMixture(3, method="em", random_state=0, **params)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        m.fit(X, public_X=P)
    return m, {w.category.__name__ for w in rec}


# ---- the statistic and its sensitivity ---------------------------------------------------


def test_an_atom_falls_in_one_cell_and_continuous_columns_spread() -> None:
    """Every row at one value lands in one cell whatever the frame's origin and scale; a
    continuous column's heaviest cell holds about n·width·φ(0) rows; gross and non-finite
    values are cells like any other (no error)."""
    rng = np.random.default_rng(0)
    n = 20000
    X = np.column_stack([np.where(rng.random(n) < 0.3, 7.25, rng.normal(7.0, 2.0, n)),
                         rng.normal(0.0, 1.0, n)])
    exact = float(np.sum(X[:, 0] == 7.25))
    for m0, sd in [((7.0, 0.0), (2.0, 1.0)), ((7.25 - 1e-9, 0.3), (0.5, 3.0)),
                   ((-1e3, 1e3), (1e-3, 1e5))]:
        top = at.heaviest_cells(X, np.array(m0), np.diag(sd))
        assert top[0] >= exact and top[0] <= exact + 0.001 * n  # the atom, + a few neighbours
    top = at.heaviest_cells(X, np.zeros(2), np.eye(2))
    assert top[1] <= 2.0 * n * at.ATOM_WIDTH * 0.4 + 20  # ≈ 8 expected at the mode
    Y = X.copy()
    Y[:5] = [1e308, -1e308]
    Y[5] = [np.nan, np.inf]
    [counts] = at.atom_kernel(Y, np.zeros(2), np.full(2, 1e-3))
    assert counts.shape == (2, at.ATOM_CELLS) and counts.sum(axis=1).tolist() == [n, n]


def test_the_sensitivity_is_sqrt_d_and_attained() -> None:
    """Replacing one row moves each column's heaviest count by at most 1 (random and
    adversarial neighbours), and a row moved out of every column's heaviest cell attains
    √d: a smaller stated sensitivity (1, say) fails here."""
    rng = np.random.default_rng(1)
    d, n = 4, 500
    X = np.round(rng.normal(size=(n, d)) * 3.0) / 3.0  # ties everywhere
    m0, Winv = np.zeros(d), np.eye(d)
    base = at.heaviest_cells(X, m0, Winv)
    worst = 0.0
    for trial in range(300):
        Y = X.copy()
        i = int(rng.integers(n))
        if trial % 3 == 0:  # a row into the heaviest cells, or out of them
            Y[i] = X[int(rng.integers(n))]
        elif trial % 3 == 1:
            Y[i] = rng.normal(size=d) * 1e3
        else:
            Y[i] = np.round(rng.normal(size=d) * 3.0) / 3.0
        change = at.heaviest_cells(Y, m0, Winv) - base
        assert np.max(np.abs(change)) <= 1.0
        worst = max(worst, float(np.linalg.norm(change)))
    # every column's unique heaviest cell loses the same row
    Z = np.zeros((n, d))
    Z[: n // 2] = np.arange(n // 2)[:, None] * 10.0  # distinct values in each column
    Z[n // 2:] = 5.0  # one atom in every column, all in the same rows
    Y = Z.copy()
    Y[-1] = -77.0
    change = at.heaviest_cells(Y, m0, Winv) - at.heaviest_cells(Z, m0, Winv)
    worst = max(worst, float(np.linalg.norm(change)))
    assert worst == pytest.approx(math.sqrt(d)) == column_max_counts_l2(d)
    assert worst <= column_max_counts_l2(d) + 1e-12
    with pytest.raises(ValueError):
        column_max_counts_l2(0)


def test_the_release_is_one_gaussian_step_at_its_sensitivity() -> None:
    """One ledger entry "em atom counts" of the planned ρ, noise sd √d/√(2ρ), and the noisy
    counts around the true ones at that scale."""
    d, rho = 3, 0.02
    X = _parked(5000, 0)
    acct = Accountant(ZCDP(1.0))
    out = at.release_atom_counts(X, X.mean(axis=0), np.diag(X.std(axis=0)), rho,
                                 Release.of(acct, 0))
    [entry] = acct.ledger
    sigma = math.sqrt(d) / math.sqrt(2.0 * rho)
    assert entry.step == "em atom counts" and entry.cost == ZCDP(rho)
    assert entry.sensitivity == pytest.approx(math.sqrt(d))
    assert entry.noise_scale == pytest.approx(sigma) == out["noise_scale"]
    assert out["n"] == 5000 and len(out["noisy"]) == d
    assert abs(out["noisy"][0] - float(np.sum(X[:, 0] == 0.0))) < 5 * sigma


# ---- the plan and the ledger --------------------------------------------------------------


def test_the_plan_names_the_atom_counts_and_still_adds_up() -> None:
    for kw in ({}, {"n_public": 50}, {"prior": True}):
        budget = ZCDP(0.5) if kw else ApproxDP(1.0, 1e-6)
        plan = pe.em_plan(20000, 4, 3, budget, **kw)
        parts = dict(plan.parts())
        assert parts["atom counts"].rho == pytest.approx(at.ATOM_SHARE * plan.rho_em)
        assert plan.rho_atoms == pytest.approx(at.ATOM_SHARE * plan.rho_em)
        assert list(parts)[-1] == "atom counts"
        assert sum(b.rho for b in parts.values() if isinstance(b, ZCDP)) == pytest.approx(
            plan.rho_em + plan.rho_prior_localisation + plan.rho_refinement
            + plan.rho_histograms)


@pytest.mark.parametrize("route", ["plain", "public", "prior"])
def test_every_em_route_releases_the_atom_counts_as_planned(route: str) -> None:
    X = _parked(12000, 2)
    P = _parked(60, 3) if route == "public" else None
    kw: dict[str, Any] = {"rho": 0.5} if route != "plain" else {}
    if route == "prior":
        kw.update(mean_bound=200.0, center=np.full(3, 20.0), cov_bounds=(1e-4, 1e4))
    m, caught = _fit(X, P, **kw)
    assert m.ledger_[-1].step == "em atom counts"
    assert pg.privacy.ledger_mismatch(m.budget_plan_, m.ledger_) is None
    gain = m.fit_info_["atom_gain"]
    assert gain["column"] == 0 and gain["mass"] > 0.3  # 40 % zeros, n = 12000
    assert gain == at.atom_gain(m.fit_info_["atom_counts"], m.covariances_)
    # at ρ = 0.5 the fit itself may park a component on the zeros (its floor, then)
    floored = m.fit_info_["final_selection"]["em_thinnest_variance"] <= pe.EIG_FLOOR * (1 + 1e-6)
    assert gain["gain"] >= at.ATOM_ALARM or floored
    assert "DiscreteDataWarning" in caught


def test_dask_rows_and_npy_files_release_the_same_counts(tmp_path: Any) -> None:
    """The streaming path (dask chunks, a .npy file opened lazily) bins the same rows into
    the same cells: the same released counts (same noise seed) and the same warning."""
    da = pytest.importorskip("dask.array")
    X = _parked(12000, 4)
    ref, caught = _fit(X)
    got, caught2 = _fit(da.from_array(X, chunks=(2500, 3)))
    path = tmp_path / "rows.npy"
    np.save(path, X)
    got2, caught3 = _fit(str(path), max_memory_bytes=10_000)
    for g in (got, got2):
        np.testing.assert_allclose(g.fit_info_["atom_counts"]["noisy"],
                                   ref.fit_info_["atom_counts"]["noisy"], rtol=1e-12)
    assert "DiscreteDataWarning" in caught & caught2 & caught3


# ---- the decision: DP outputs only --------------------------------------------------------


def test_the_gain_formula() -> None:
    """p = (c̃ − zσ)/n, gain = p (ln p + ½ ln(v / 1e-6)), the largest column's; nothing below
    the noise margin, nothing where the fit is as narrow as sklearn's regularisation."""
    z = float(__import__("scipy.stats", fromlist=["norm"]).norm.isf(at.ATOM_FALSE / 2))
    atoms = {"noisy": [4000.0 + 3 * z, 100.0], "n": 10000.0, "noise_scale": 3.0}
    covs = np.array([np.diag([2.0, 1.0]), np.diag([0.5, 9.0])])
    g = at.atom_gain(atoms, covs)
    assert g["column"] == 0 and g["mass"] == pytest.approx(0.4)
    assert g["variance"] == 0.5
    assert g["gain"] == pytest.approx(0.4 * (math.log(0.4) + 0.5 * math.log(0.5 / 1e-6)))
    assert at.atom_gain({**atoms, "noisy": [3 * z, 3 * z]}, covs)["gain"] == 0.0
    assert at.atom_gain(atoms, covs * 1e-7)["gain"] == 0.0  # narrower than reg_covar


def test_the_warning_reads_the_released_counts_and_fit_only(monkeypatch: Any) -> None:
    """The same continuous rows warn when the released counts say "40 % at one value" and do
    not when they say "nothing"; the parked rows do not warn when the released counts say
    "nothing" (and the fit is off its floor): the rows reach the decision only through the
    release and the released fit. The stored gain is atom_gain of those DP outputs."""
    C, D = _continuous(12000, 5), _parked(12000, 5)

    def forced(value: float) -> Any:
        def mech(top: np.ndarray, *args: Any, **kw: Any) -> np.ndarray:
            pg.mechanisms.gaussian_mechanism(top, *args, **kw)  # charged as planned
            return np.full(np.shape(top), value)
        return mech

    m0, caught0 = _fit(C)
    assert "DiscreteDataWarning" not in caught0
    monkeypatch.setattr(at, "gaussian_mechanism", forced(0.4 * 12000 + 100.0))
    m1, caught1 = _fit(C)
    assert "DiscreteDataWarning" in caught1
    assert m1.fit_info_["atom_gain"] == at.atom_gain(m1.fit_info_["atom_counts"],
                                                      m1.covariances_)
    monkeypatch.setattr(at, "gaussian_mechanism", forced(0.0))
    m2, caught2 = _fit(D)
    floored = m2.fit_info_["final_selection"]["em_thinnest_variance"] <= pe.EIG_FLOOR * (1 + 1e-6)
    assert ("DiscreteDataWarning" in caught2) == floored
    assert m2.fit_info_["atom_gain"]["gain"] == 0.0


def test_neighbours_get_the_same_warnings_and_ledger() -> None:
    """Replace-one neighbours (a parked row moved far away; a continuous row moved onto
    another's value), same noise seed: the same outcome, warnings and ledger length."""
    from privgauss.audit import fit_outcome

    P, C = _parked(8000, 6), _continuous(8000, 6)
    for X, row in ((P, np.full(3, 1e9)), (C, C[1])):
        Y = X.copy()
        Y[0] = row
        outs = [fit_outcome(pg.PrivateGaussianMixture(3, epsilon=1.0, delta=1e-6,
                                                      method="em", random_state=7), D)
                for D in (X, Y)]
        assert outs[0].kind == outs[1].kind == "success"
        assert outs[0].warning_categories == outs[1].warning_categories
        assert outs[0].ledger_length == outs[1].ledger_length


def test_parked_rows_warn_and_continuous_rows_do_not(monkeypatch) -> None:
    """At ε = 1: 40 % of a column at one value warns (the fit is not at its floor there, so
    the floor test alone would not); a continuous mixture of the same size does not. The
    refining steps clip at r₀ here (``REFINE_TAIL``): at the balance below it (√d..r₀) this
    fit's parked component reaches the eigenvalue floor, and the floor test alone warns. So it
    does with the cells' mixture as the histogram start (``CELL_START``, famlowd2: thinnest
    variance 3.2e-6, a component parked on the zeros as a non-private mixture parks one), and
    with the summary start (``SUMMARY_NOISE`` = 0.1, session 52) and with the run pick by
    capped regrets (``PICK_REGRET``, session 54: it takes the run that parks a component on
    the zeros, thinnest variance 4.7e-4; and its later pick, ``PLAIN_EXPLORE_DIV``) and with
    the steps' joint releases (``JOINT_STATS``, session 57: their lower noise parks one,
    3.4e-6): all off here, to keep a fit above the floor."""
    monkeypatch.setattr(pe, "JOINT_STATS", False)
    monkeypatch.setattr(pe, "PICK_REGRET", False)
    monkeypatch.setattr(pe, "PLAIN_EXPLORE_DIV", pe.EXPLORE_DIV)
    monkeypatch.setattr(pe, "REFINE_TAIL", pe.CLIP_TAIL)
    monkeypatch.setattr(pe, "CELL_START", 0)
    monkeypatch.setattr(pe, "SUMMARY_NOISE", 1e-2)
    m, caught = _fit(_parked(20000, 2))
    assert m.fit_info_["final_selection"]["em_thinnest_variance"] > pe.EIG_FLOOR * (1 + 1e-6)
    assert m.fit_info_["atom_gain"]["gain"] >= at.ATOM_ALARM
    assert "DiscreteDataWarning" in caught
    m2, caught2 = _fit(_continuous(20000, 8))
    assert m2.fit_info_["atom_gain"]["gain"] < 0.05
    assert "DiscreteDataWarning" not in caught2
