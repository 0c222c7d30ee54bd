"""Private EM (``method="em"``, issue 18): sensitivities by brute force, the budget plan and
ledger, recovery against scikit-learn's non-private EM at fixed seeds (synthetic overlapping
mixture; pixels of a sample image), ``auto`` falling back to it, and privacy audits."""

from __future__ import annotations

import math
import warnings
from functools import partial
from typing import Any

import numpy as np
import pytest
from sklearn.mixture import GaussianMixture

import privgauss as pg
from privgauss import mechanisms, sensitivity
from privgauss.audit import audit_mechanism, estimator_mechanism, fit_outcome
from privgauss.mechanisms import Release
from privgauss.mixture import em_starts as es
from privgauss.mixture import private_em as pe
from privgauss.privacy import ZCDP, Accountant, ApproxDP, zcdp_to_epsilon

# ----------------------------------------------------------------------------- sensitivities


def _stats(R: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(N, S, M) of responsibilities R (n, k) and component-frame rows Y (n, k, d)."""
    N = R.sum(axis=0)
    S = np.einsum("ij,ijd->jd", R, Y)
    M = np.einsum("ij,ijd,ije->jde", R, Y, Y)
    return N, S, M


def _worst_changes(radius: float, k: int, d: int, seed: int) -> np.ndarray:
    """Largest observed (ΔN, ΔS, ΔM) over random and adversarial replacements of one row."""
    rng = np.random.default_rng(seed)
    n = 20
    R = rng.dirichlet(np.ones(k), size=n)
    Y = rng.normal(size=(n, k, d))
    Y *= (radius * rng.uniform(0, 1, size=(n, k, 1))) / np.linalg.norm(Y, axis=2, keepdims=True)
    base = _stats(R, Y)
    worst = np.zeros(3)
    for trial in range(400):
        R2, Y2 = R.copy(), Y.copy()
        if trial % 2:  # adversarial: vertices and antipodal / orthogonal rows of norm r
            j, j2 = rng.integers(k), rng.integers(k)
            R[0] = np.eye(k)[j]
            R2[0] = np.eye(k)[j2]
            u = rng.normal(size=d)
            u *= radius / np.linalg.norm(u)
            if trial % 4 == 1 or d == 1:
                v = -u
            else:
                v = np.linalg.qr(np.stack([u, rng.normal(size=d)], 1))[0][:, 1] * radius
            Y[0], Y2[0] = u, v
            base = _stats(R, Y)
        else:
            R2[0] = rng.dirichlet(np.ones(k) * 0.2)
            w = rng.normal(size=(k, d))
            Y2[0] = w * radius / np.linalg.norm(w, axis=1, keepdims=True)
        new = _stats(R2, Y2)
        worst = np.maximum(worst, [np.linalg.norm(a - b) for a, b in zip(base, new, strict=True)])
    return worst


@pytest.mark.parametrize(("k", "d"), [(1, 1), (2, 3), (4, 2)])
def test_soft_statistics_sensitivities_hold_and_are_tight(k, d):
    r = 1.7
    worst = _worst_changes(r, k, d, seed=k * 10 + d)
    stated = np.array([sensitivity.soft_counts_l2(), sensitivity.soft_sums_l2(r),
                       sensitivity.soft_outer_sums_frobenius(r)])
    assert np.all(worst <= stated * (1 + 1e-9)), (worst, stated)
    if k > 1:  # the counts' bound needs two components to be reached
        assert np.all(worst > stated / 2), (worst, stated)  # a halved sensitivity is exceeded
    else:
        assert np.all(worst[1:] > stated[1:] / 2)


def test_pooled_second_moments_have_one_components_sensitivity():
    """A tied step releases Σ_j M_j (one matrix): one row's Σ_j r_ij y_ij y_ijᵀ is a convex
    combination of PSD matrices of Frobenius norm ≤ r², so replacing it moves the pooled sum
    by at most √2·r² — soft_outer_sums_frobenius, not k times it — and the bound is reached
    (a row at one vertex replaced by one at another, orthogonal y), so half of it is exceeded."""
    r = 1.3
    stated = sensitivity.soft_outer_sums_frobenius(r)
    for k, d in ((2, 3), (6, 4), (8, 2)):
        rng = np.random.default_rng(k * 10 + d)
        worst = 0.0
        for _ in range(300):
            R = rng.dirichlet(np.ones(k) * rng.choice([0.1, 1.0]), size=(2, ))
            Y = rng.normal(size=(2, k, d))
            Y *= r * rng.uniform(0.5, 1, size=(2, k, 1)) / np.linalg.norm(Y, axis=2, keepdims=True)
            pooled = [np.einsum("j,jd,je->de", R[i], Y[i], Y[i]) for i in range(2)]
            worst = max(worst, float(np.linalg.norm(pooled[0] - pooled[1])))
        u, v = np.eye(d)[0] * r, np.eye(d)[1] * r
        R2, Y2 = np.eye(k)[[0, k - 1]], np.zeros((2, k, d))
        Y2[0, 0], Y2[1, k - 1] = u, v
        pooled = [np.einsum("j,jd,je->de", R2[i], Y2[i], Y2[i]) for i in range(2)]
        tight = float(np.linalg.norm(pooled[0] - pooled[1]))
        assert worst <= stated * (1 + 1e-9) and tight <= stated * (1 + 1e-9), (worst, stated)
        assert tight == pytest.approx(stated)  # a halved (or 1/k) sensitivity is exceeded


# ----------------------------------------------------------------------------- budget plan


@pytest.mark.parametrize("budget", [ApproxDP(1.0, 1e-6), ZCDP(0.5), ApproxDP(0.3, 1e-8)])
@pytest.mark.parametrize("n_public", [0, 40])
def test_plan_parts_compose_to_the_total(budget, n_public):
    if isinstance(budget, ZCDP) and n_public == 0:
        with pytest.raises(pg.InvalidDataError, match="public rows"):
            pe.em_plan(20000, 5, 3, budget, n_public=n_public)
        return
    plan = pe.em_plan(20000, 5, 3, budget, n_public=n_public)
    acct = Accountant(budget)
    for name, cost in plan.parts():
        acct.spend(cost, step=name)
    spent = acct.spent
    if isinstance(budget, ZCDP):
        assert spent.rho == pytest.approx(budget.rho, rel=1e-9)
    else:
        assert spent.epsilon == pytest.approx(budget.epsilon, rel=1e-6)
        assert spent.delta == pytest.approx(budget.delta, rel=1e-9)
    # half on the last step; over-parameterised, half of the refining steps' share
    last = 0.5
    if plan.components:
        last = (1.0 - pe.OVER_SHARE) * (0.5 if plan.n_steps - plan.reduce_at > 1 else 1.0)
    assert plan.rho_steps[-1] == pytest.approx(last * sum(plan.rho_steps))


# ----------------------------------------------------------------------------- recovery


def _mixture(n: int, seed: int) -> np.ndarray:
    """k = 3, d = 5, weights .2/.3/.5, means 2.5 apart, random full covariances, shifted and
    scaled (parameters fixed; ``seed`` draws the rows)."""
    prm = np.random.default_rng(123)
    d, k = 5, 3
    A = prm.normal(size=(k, d, d)) * 0.3 + np.eye(d)
    means = np.zeros((k, d))
    means[1, 0] = means[2, 1] = 2.5
    rng = np.random.default_rng(seed)
    lab = rng.choice(k, size=n, p=[0.2, 0.3, 0.5])
    X = means[lab] + np.einsum("nij,nj->ni", A[lab], rng.normal(size=(n, d)))
    return 3.0 * X + 100.0


def _gaps(X: np.ndarray, H: np.ndarray, k: int, **kw) -> tuple[float, float]:
    """(gap of the private fit, gap of one Gaussian) to sklearn's held-out log-likelihood."""
    sk = GaussianMixture(k, covariance_type="full", random_state=0, n_init=2).fit(X).score(H)
    one = GaussianMixture(1).fit(X).score(H)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = pg.PrivateGaussianMixture(k, method="em", **kw).fit(X)
    return sk - m.score(H), sk - one


# measured gaps (sklearn − private, held-out mean log-likelihood), noise seeds 0–3:
# ε = 1, δ = 1e-6: 0.001–0.003 (before the issue-18 fix: 0.002–0.095); ρ = 0.5 (40 public
# rows): ≤ 0.001 (the k-means start alone: 0.39, the run pick must choose the other start);
# one Gaussian: 0.87
@pytest.mark.parametrize(("kw", "public", "bound"), [
    (dict(epsilon=1.0, delta=1e-6), False, 0.05),
    (dict(rho=0.5), True, 0.05),
])
def test_recovers_an_overlapping_mixture_close_to_sklearn(kw, public, bound):
    X, H = _mixture(30000, 0), _mixture(20000, 1)
    P = _mixture(40, 7) if public else None
    sk = GaussianMixture(3, covariance_type="full", random_state=0, n_init=2).fit(X).score(H)
    one = sk - GaussianMixture(1).fit(X).score(H)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = pg.PrivateGaussianMixture(3, method="em", random_state=1, **kw).fit(X, public_X=P)
    gap = sk - m.score(H)
    assert one > 0.5  # a single Gaussian is far worse: the bound below would fail it
    assert gap < bound, gap
    assert m.method_ == "em"


def _pixels(n: int, seed: int) -> np.ndarray:
    from sklearn.datasets import load_sample_image

    img = load_sample_image("china.jpg").reshape(-1, 3).astype(np.float64) / 255.0
    return img[np.random.default_rng(seed).choice(len(img), size=n, replace=False)]


def test_pixels_of_a_sample_image_beat_a_single_gaussian():
    """Real data (ties, bounded, skewed, overlapping clusters): k = 4, ε = 1, δ = 1e-6."""
    X, H = _pixels(30000, 0), _pixels(20000, 1)
    sk = GaussianMixture(4, covariance_type="full", random_state=0, n_init=2).fit(X).score(H)
    one = GaussianMixture(1).fit(X).score(H)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = pg.PrivateGaussianMixture(4, epsilon=1.0, delta=1e-6, random_state=0).fit(X)
    assert m.method_ == "em"  # auto: no paper method can work on these overlapping clusters
    # measured gap to sklearn, noise seeds 0–3: 0.060, 0.061, 0.062, 0.103 (at n = 5e4 the
    # median of 6 seeds is 0.016: benchmarks/results/private_em.md); a single Gaussian's: 1.66
    assert sk - one > 1.0
    assert sk - m.score(H) < 0.5, (m.score(H), one, sk)


def test_auto_falls_back_to_em_where_it_used_to_refuse():
    X = _mixture(15000, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = pg.PrivateGaussianMixture(3, epsilon=1.0, delta=1e-6, random_state=0).fit(X)
    assert m.method_ == "em" and "private EM" in m.method_reason_
    assert m.weights_.shape == (3,) and np.all(np.isfinite(m.covariances_))
    # the fit spent exactly its budget
    assert m.privacy_spent_.epsilon == pytest.approx(1.0, rel=1e-6)
    assert m.privacy_spent_.delta == pytest.approx(1e-6, rel=1e-9)


def test_rho_budget_without_public_rows_is_refused_before_spending():
    X = _mixture(3000, 0)
    acct = Accountant(ZCDP(1.0))
    with pytest.raises(pg.InvalidDataError, match="public rows"):
        pg.PrivateGaussianMixture(3, rho=0.5, method="em", accountant=acct).fit(X)
    assert acct.spent is None


@pytest.mark.parametrize("budget", [{"rho": 0.5}, {"epsilon": 1.0, "delta": 1e-6}])
def test_duplicated_public_rows_are_refused_in_ems_words(budget):
    """Public rows with one distinct row cannot give EM its frame: refused before spending, in
    terms of em and the mixture (not method='public', issue #29), with what to do instead."""
    X = _mixture(3000, 0)
    P = np.repeat(_mixture(30, 9)[:1], 20, axis=0)
    acct = Accountant(ZCDP(1.0) if "rho" in budget else ApproxDP(1.0, 1e-6))
    est = pg.PrivateGaussianMixture(2, **budget, method="em", accountant=acct, random_state=0,
                                    enforce_requirements=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(pg.InvalidDataError) as info:
            est.fit(X, public_X=P)
    msg = str(info.value)
    assert "method='em'" in msg and "method='public'" not in msg
    assert "only 1 distinct public rows" in msg and "Drop public_X=" in msg
    assert acct.spent is None


def test_ledger_equals_the_budget_under_rho():
    X, P = _mixture(5000, 0), _mixture(30, 9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = pg.PrivateGaussianMixture(3, rho=0.5, method="em", random_state=0).fit(X, public_X=P)
    assert m.privacy_spent_.rho == pytest.approx(0.5, rel=1e-9)
    plan = m.fit_info_["em_plan"]
    assert len(m.ledger_) == len(plan.parts())  # one ledger entry per planned release


# ----------------------------------------------------------------------------- audits

RHO, AUDIT_DELTA = 0.05, 1e-3


@pytest.mark.slow
def test_em_fit_passes_an_empirical_audit_on_an_outlier_pair():
    """The whole fit (few EM steps, small n, public frame) on neighbours differing in one
    extreme row: the measured ε lower bound stays below the claim."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 1))
    Xn = X.copy()
    Xn[-1] = 1e6
    P = rng.normal(size=(10, 1))
    kinds: list[str] = []
    mech = estimator_mechanism(
        lambda g: pg.PrivateGaussianMixture(2, rho=RHO, method="em", random_state=g,
                                            enforce_requirements=False,
                                            method_params={"n_steps": 2}),
        lambda m: np.sort(m.means_.ravel()), 2, public_X=P,
        on_outcome=lambda data, outcome: kinds.append(outcome.kind),
    )
    res = audit_mechanism(mech, X, Xn, epsilon=zcdp_to_epsilon(RHO, AUDIT_DELTA),
                          delta=AUDIT_DELTA, n_runs=300)
    assert set(kinds) == {"success"}  # the audit measured real fits
    assert res.passed, str(res)


@pytest.mark.slow
def test_the_audit_flags_em_with_a_halved_sensitivity(monkeypatch):
    """The audit above has teeth: with the step's sensitivities 20 times too small it fails.
    The final pick's public-rows candidate is taken out: a model of the 10 public rows alone
    releases nothing of X, and since that candidate needs no margin (em_final) it is picked
    often enough here to hide the broken steps from a 300-run audit."""
    monkeypatch.setattr(pe, "public_candidate", lambda *a, **k: None)
    # the EM steps' joint releases (mechanisms), the composed ones and the start's Lloyd steps'
    for mod in (mechanisms, pe, es):
        monkeypatch.setattr(mod, "soft_sums_l2", lambda r: sensitivity.soft_sums_l2(r) / 20)
        monkeypatch.setattr(mod, "soft_counts_l2", lambda: sensitivity.soft_counts_l2() / 20)
        monkeypatch.setattr(mod, "soft_outer_sums_frobenius",
                            lambda r: sensitivity.soft_outer_sums_frobenius(r) / 20)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 1))  # constant rows would start EM with a degenerate component
    Xn = X.copy()
    Xn[-1] = 1e6
    P = rng.normal(size=(10, 1))
    mech = estimator_mechanism(
        lambda g: pg.PrivateGaussianMixture(1, rho=RHO, method="em", random_state=g,
                                            enforce_requirements=False,
                                            method_params={"n_steps": 1}),
        lambda m: m.means_.ravel(), 1, public_X=P,
    )
    res = audit_mechanism(mech, X, Xn, epsilon=zcdp_to_epsilon(RHO, AUDIT_DELTA),
                          delta=AUDIT_DELTA, n_runs=300)
    assert not res.passed, str(res)


def test_em_neighbours_with_an_extreme_record_end_alike():
    from privgauss.mixture.em_starts import EIG_FLOOR

    discrete = "privgauss.warnings.DiscreteDataWarning"
    X = _mixture(3000, 0)
    Xn = X.copy()
    Xn[-1] = -1e150
    ests = [pg.PrivateGaussianMixture(3, epsilon=1.0, delta=1e-6, method="em",
                                      enforce_requirements=False, random_state=3)
            for _ in range(2)]
    outs = [fit_outcome(est, D) for est, D in zip(ests, (X, Xn), strict=True)]
    assert outs[0].kind == outs[1].kind == "success"
    assert outs[0].ledger_length == outs[1].ledger_length
    # DiscreteDataWarning is a function of DP outputs (the final pick's released fit, the
    # atom counts; as ClippedDataWarning in test_neighbour_outcomes): it may differ between
    # neighbours, but only as those releases decide; every other warning is the same
    assert outs[0].warning_categories - {discrete} == outs[1].warning_categories - {discrete}
    for est, out in zip(ests, outs, strict=True):
        info = est.fit_info_
        floored = float(info["final_selection"]["em_thinnest_variance"]) <= EIG_FLOOR * (
            1.0 + 1e-6)
        gain = info.get("atom_gain")
        parked = gain is not None and gain["gain"] >= gain["alarm"]
        assert (discrete in out.warning_categories) == (floored or parked)
    assert math.isfinite(float(outs[0].ledger_length))


# ----------------------------------------------------------------------------- issue 18 regression


def _kernel_worst(kernel, Z: np.ndarray, seed: int) -> np.ndarray:
    """Largest change of each of a kernel's outputs (L2 of the flattened array) over random and
    extreme replacements of one row of Z."""
    rng = np.random.default_rng(seed)
    base = kernel(Z)
    worst = np.zeros(len(base))
    for trial in range(300):
        Z2 = Z.copy()
        scale = 10.0 ** rng.uniform(-1, 3) if trial % 3 else 1e6
        Z2[rng.integers(len(Z))] = rng.normal(size=Z.shape[1]) * scale
        new = kernel(Z2)
        worst = np.maximum(worst, [np.linalg.norm(np.ravel(a) - np.ravel(b))
                                   for a, b in zip(base, new, strict=True)])
    return worst


def test_kernels_joint_changes_stay_within_the_joint_cost():
    """The joint releases (``JOINT_STATS``) on the real kernels: one replaced row moves an EM
    step's (N, S, M), a Lloyd step's (N, S[, M]) and the re-whitening's (S, M) by a privacy
    loss ½Σ_b‖Δ_b‖²/σ_b² (σ_b each block's noise at its noise-equivalent ρ) of at most
    soft_statistics_zcdp of those ρ — the charge — over random and extreme replacements."""
    from privgauss.sensitivity import soft_statistics_zcdp

    rng = np.random.default_rng(11)
    d, k, R = 3, 3, 1.5
    Z = rng.normal(size=(40, d))
    centres = rng.normal(size=(k, d))
    G = np.eye(d) + 0.3 * rng.normal(size=(d, d))
    covs = np.array([np.eye(d) * (0.5 + j) for j in range(k)])
    _, Linv, log_norm = pe._model_terms(np.full(k, 1.0 / k), covs)
    em = partial(pe._em_kernel, models=((centres, Linv, log_norm),), radius=R)
    cases = [(lambda B: tuple(x[0] for x in em(B)), (0.1, 0.3, 0.6)),
             (lambda B: es._lloyd_kernel(B, centres, G, R)[:2], (0.2, 0.8, 0.0)),
             (lambda B: es._lloyd_kernel(B, centres, G, R), (0.024, 0.096, 0.4)),
             (lambda B: (None, *pe._moment_kernel(B, R)), (0.0, 0.2, 0.8))]
    for kernel, rhos in cases:
        sig = [math.sqrt(2) / math.sqrt(2 * rhos[0]) if rhos[0] else math.inf,
               2 * R / math.sqrt(2 * rhos[1]),
               math.sqrt(2) * R * R / math.sqrt(2 * rhos[2]) if rhos[2] else math.inf]
        base = kernel(Z)
        worst = 0.0
        for trial in range(400):
            Z2 = Z.copy()
            scale = 10.0 ** rng.uniform(-1, 3) if trial % 3 else 1e6
            Z2[rng.integers(len(Z))] = rng.normal(size=d) * scale
            loss = 0.0
            for a, b, sb in zip(base, kernel(Z2), sig, strict=False):
                if a is not None:
                    loss += 0.5 * float(np.sum((np.ravel(a) - np.ravel(b)) ** 2)) / sb**2
            worst = max(worst, loss)
        cost = soft_statistics_zcdp(*rhos)
        assert worst <= cost * (1 + 1e-9), (rhos, worst, cost)
        assert worst > cost / 3, (rhos, worst, cost)  # the bound is not vacuous here


def test_start_and_selection_kernels_stay_within_their_sensitivities():
    """The releases added against the regression, computed by their real kernels: the Lloyd
    step's (counts, sums, second moments), the re-whitening's (sum, second moment) and the
    runs' clipped log-likelihood scores (two models) move by at most their stated L2
    sensitivities when one row is replaced, and by more than half of it (tight)."""
    rng = np.random.default_rng(5)
    d, k, R = 3, 3, 1.5
    Z = rng.normal(size=(40, d))
    centres = rng.normal(size=(k, d))
    G = np.eye(d) + 0.3 * rng.normal(size=(d, d))
    lloyd = _kernel_worst(lambda B: es._lloyd_kernel(B, centres, G, R), Z, 1)
    stated = np.array([sensitivity.soft_counts_l2(), sensitivity.soft_sums_l2(R),
                       sensitivity.soft_outer_sums_frobenius(R)])
    assert np.all(lloyd <= stated * (1 + 1e-9)) and np.all(lloyd > stated / 2), (lloyd, stated)
    moments = _kernel_worst(lambda B: pe._moment_kernel(B, R), Z, 2)
    assert np.all(moments <= stated[1:] * (1 + 1e-9)) and np.all(moments > stated[1:] / 2)
    models = []
    for c in range(2):
        w = np.full(k, 1.0 / k)
        covs = np.array([np.eye(d) * (0.2 + c) for _ in range(k)])
        _, Linv, log_norm = pe._model_terms(w, covs)
        models.append((centres * (1 + c), Linv, log_norm))
    b = 4.0
    score = _kernel_worst(lambda B: pe._em_kernel(B, tuple(models), R, bound=b)[3:], Z, 3)
    s_stated = sensitivity.score_sums_l2(b, 2)
    assert score[0] <= s_stated * (1 + 1e-9) and score[0] > s_stated / 2, (score, s_stated)
    three = (*models, (centres + 5.0, *models[0][1:]))  # one of them far off
    for cap in (0.5, 2.0):  # the regret pick's sums
        regret = _kernel_worst(lambda B, c=cap: pe._em_kernel(B, three, R, bound=c, stats=False,
                                                               regret=True), Z, 3)
        r_stated = sensitivity.regret_sums_l2(cap, 3)
        assert regret[0] <= r_stated * (1 + 1e-9) and regret[0] > r_stated / 2, (regret, cap)


def test_run_pick_releases_capped_regrets_whose_cap_grows_with_the_budget():
    """The run pick's release at ε = 1: the runs' capped regrets at sensitivity cap·√C (a
    release at the likelihood ratios' 2b√C, or at cap·√(C − 1), fails here), the cap the one
    at which the pick's noise is ``REGRET_NOISE`` nat/row (at least ``REGRET_MIN``). The cap
    grows with ρ, and where it would reach the score bound the pick is the clipped likelihood
    ratios' again (ε = 1e4: scikit-learn's best-of-n_init criterion, noise negligible)."""
    n = 20_000
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = pg.PrivateGaussianMixture(3, method="em", epsilon=1.0, delta=1e-6,
                                      random_state=0).fit(_mixture(n, 3))
    plan = m.fit_info_["em_plan"]
    cap = plan.regret_cap(n)
    assert plan.n_starts == 3 and pe.REGRET_MIN <= cap < plan.score_bound
    pick, = [e for e in m.ledger_ if e.step.endswith("em run selection")]
    assert pick.sensitivity == pytest.approx(sensitivity.regret_sums_l2(cap, 3))
    assert pick.sensitivity == pytest.approx(cap * math.sqrt(3))
    noise = pick.sensitivity / math.sqrt(2.0 * plan.rho_score) / n
    assert cap == pe.REGRET_MIN and noise > pe.REGRET_NOISE  # 20,000 rows: the least cap
    big = pe.em_plan(50_000, 5, 3, ApproxDP(1.0, 1e-6))
    assert big.regret_cap(50_000) > pe.REGRET_MIN
    assert sensitivity.regret_sums_l2(big.regret_cap(50_000), 3) / math.sqrt(
        2.0 * big.rho_score) / 50_000 == pytest.approx(pe.REGRET_NOISE)
    caps = [pe.em_plan(50_000, 5, 3, ApproxDP(eps, 1e-6)).regret_cap(50_000)
            for eps in (0.5, 1.0, 3.0)]
    assert all(a < b for a, b in zip(caps, caps[1:], strict=False)), caps
    for eps in (10.0, 1e4):  # the cap would pass the score bound 2d + 10 = 20
        assert pe.em_plan(50_000, 5, 3, ApproxDP(eps, 1e-6)).regret_cap(50_000) == 0.0


def test_regret_pick_finds_the_better_run_where_the_likelihood_ratio_pick_is_noise():
    """Three runs at the pick, 50,000 rows of a k = 3 mixture: the one holding the true
    clusters, one that merges the two nearest and splits the largest, and the true one with
    every covariance 10 % wider (~0.012 nat/row worse). At a plain plan's pick ρ (ε = 1) the
    regret pick takes the true model in ≥ 95 % of 200 noise draws; the clipped likelihood
    ratios at the same ρ, whose noise is ~15× larger per row (0.03 nat/row), far less often."""
    rng = np.random.default_rng(0)
    d, n = 5, 50_000
    means = np.array([[0.0] * d, [3.0] + [0.0] * (d - 1), [0.0, 3.0] + [0.0] * (d - 2)])
    w = np.array([0.5, 0.3, 0.2])
    lab = rng.choice(3, size=n, p=w)
    Z = means[lab] + rng.normal(size=(n, d))
    eye = np.array([np.eye(d)] * 3)
    merged_mean = (0.3 * means[1] + 0.2 * means[2]) / 0.5
    spread = np.outer(means[1] - merged_mean, means[1] - merged_mean) * 0.6
    runs = [(w, means, eye),
            (np.array([0.25, 0.25, 0.5]),
             np.array([means[0] - 0.5, means[0] + 0.5, merged_mean]),
             np.array([np.eye(d), np.eye(d), np.eye(d) + spread + spread.T])),
            (w, means, eye * 1.1)]
    models = tuple((mu, *pe._model_terms(pi, cov)[1:]) for pi, mu, cov in runs)
    plan = pe.em_plan(n, d, 3, ApproxDP(1.0, 1e-6))
    cap = plan.regret_cap(n)
    assert plan.n_starts == 3 and cap > 0
    regret = pe._em_kernel(Z, models, 10.0, bound=cap, stats=False, regret=True)[0]
    ratio = pe._em_kernel(Z, models, 10.0, bound=plan.score_bound, stats=False)[0]
    wins = {"regret": 0, "ratio": 0}
    for seed in range(200):
        for name, scores, c in (("regret", regret, cap), ("ratio", ratio, 0.0)):
            release = Release.of(Accountant(ZCDP(1.0)), seed, "t")
            wins[name] += es.pick_run(scores, plan, release, c) == 0
    assert wins["regret"] >= 190 and wins["ratio"] <= 150, wins


def test_plan_pays_for_every_start_and_the_run_selection():
    """The start's k-means, the re-whitening, both exploring runs and their selection are
    planned releases (composing to the budget, checked above); with public rows there is no
    re-whitening."""
    plan = pe.em_plan(50_000, 10, 3, ApproxDP(1.0, 1e-6))
    names = [name for name, _ in plan.parts()]
    assert plan.n_starts == 3 and plan.explore_steps >= 1
    assert "run selection" in names and "re-whitening statistics" in names
    assert "step 1 run 3 statistics" in names
    # the Lloyd steps' releases, the last one with the clusters' second moments (one joint
    # charge each)
    K = len(plan.rho_kmeans_steps)
    assert [nm for nm in names if nm.startswith("start k-means")] == [
        f"start k-means step {t + 1} statistics" for t in range(K)]
    assert plan.kmeans_rhos(K - 1)[2] > 0 and plan.kmeans_rhos(0)[2] == 0
    assert f"step {plan.n_steps} statistics" in names  # after the pick: one run
    assert not any("re-whitening" in nm
                   for nm, _ in pe.em_plan(50_000, 10, 3, ZCDP(0.5), n_public=500).parts())


@pytest.mark.parametrize(("n", "d", "k", "at_eps1"), [(50_000, 10, 3, False),
                                                      (8_000, 4, 3, False),
                                                      (50_000, 3, 4, True),
                                                      (6_000, 2, 2, True),
                                                      (270_000, 3, 4, True)])
def test_summary_start_only_where_the_steps_noise_is_quiet(n: int, d: int, k: int,
                                                           at_eps1: bool) -> None:
    """K' > k (the summary start) exactly where the first EM step's noise moves a model by at
    most SUMMARY_NOISE = 0.1 (public): at ε = 1 on the low-d shapes (first-step noise 0.03–0.05
    at n = 5e4, d = 3 and n = 6000, d = 2; 1.6e-3 on the 2.7e5-row pixels), not where it is
    louder (d = 10: 0.26; n = 8000, d = 4: the over-parameterised plan), always from ε = 100 on
    (the families' misses at ε = 100 had 1e-3 to 3.5e-3, at ε = 10 first-step noise in
    (1e-2, 0.1]) and at 1e4, and growing budgets never switch it off. The start fits
    ``plan.fitted(k)`` clusters (k' > k where the plan is over-parameterised)."""
    summary = []
    for eps in (1.0, 10.0, 100.0, 1e4):
        plan = pe.em_plan(n, d, k, ApproxDP(eps, 1e-6))
        kf = plan.fitted(k)
        quiet = pe._noise_change(plan, 0, n, d, k) <= pe.SUMMARY_NOISE
        assert (plan.start_clusters > kf) == quiet, (eps, plan.start_clusters)
        assert kf <= plan.start_clusters <= pe.OVERCLUSTER * kf
        summary.append(plan.start_clusters > kf)
    assert summary[0] == at_eps1 and summary[2] and summary[3]
    assert summary == sorted(summary)


def _synthetic(n: int, seed: int) -> np.ndarray:
    """benchmarks/private_em.py's synthetic set (k = 3, d = 10, weights .2/.3/.5, means 2
    apart), from the benchmark itself so that the two cannot drift apart."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    try:
        from private_em import synthetic
    finally:
        sys.path.pop(0)
    return synthetic(n, seed)


def test_synthetic_benchmark_set_recovers_at_epsilon_one():
    """Issue 18's regression: on the benchmark's synthetic set at ε = 1 without public rows,
    main at a0006e1 ended 0.366 nat/row below sklearn at this seed (a component died); this
    code 0.008. Not every seed recovers: of seeds 0–23, one ends in a wrong basin (seed 0:
    0.343), the rest at 0.005–0.030 (benchmarks/results/private_em.md)."""
    X, H = _synthetic(50_000, 0), _synthetic(20_000, 1)
    sk = GaussianMixture(3, covariance_type="full", random_state=0, n_init=2).fit(X).score(H)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = pg.PrivateGaussianMixture(3, method="em", epsilon=1.0, delta=1e-6,
                                      random_state=1).fit(X)
    assert sk - m.score(H) < 0.10, sk - m.score(H)


def test_a_whitened_frame_run_joins_the_pick():
    """Three runs explore — the k-means and histogram starts (k-means on standardised columns)
    and a whitened-frame start — and the DP run pick chooses among them: the plan says three
    and the pick is released. What the third run buys is measured over seeds in the slow test
    below."""
    X, P = _mixture(3000, 0), _mixture(30, 9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = pg.PrivateGaussianMixture(3, method="em", rho=0.5, random_state=0,
                                      enforce_requirements=False).fit(X, public_X=P)
    assert pe.N_STARTS == 3 and m.fit_info_["em_plan"].n_starts == 3
    assert "em run selection" in [e.step for e in m.ledger_]


def test_the_summary_offers_its_other_basin_as_the_third_run(monkeypatch):
    """Where the summary start is used (a quiet plain plan: n = 6000, d = 2, k = 2 at ε = 1), its
    best other basin (``em_starts.summary_gmm``'s alternative) replaces the whitened-frame
    start as the third exploring run (``SUMMARY_ALT`` = 2); the first two runs and the
    ledger — every step, its sensitivity and charge — are what they are without it: the
    alternative is post-processing of the released summary, drawn from a side generator."""
    from privgauss.mixture import em_starts

    rng = np.random.default_rng(3)
    mu = np.array([[0.0, 0.0], [3.0, 0.5], [0.5, 3.0], [3.0, 3.5]])
    X = mu[rng.choice(4, size=6000)] + rng.standard_normal((6000, 2)) * 0.8
    seen: dict[int, dict[str, list]] = {}
    steps, start = pe._em_steps, em_starts.summary_start

    def fit(alt: int) -> Any:
        rec: dict[str, list] = {"runs": [], "alts": []}
        seen[alt] = rec

        def em_steps(Z: Any, runs: list, *a: Any, **kw: Any) -> Any:
            rec["runs"] = [tuple(np.array(x, copy=True) for x in r) for r in runs]
            return steps(Z, runs, *a, **kw)

        def summary_start(*a: Any) -> Any:
            out = start(*a)
            if a[-1] is not None:
                rec["alts"] = list(a[-1])
            return out

        monkeypatch.setattr(pe, "SUMMARY_ALT", alt)
        monkeypatch.setattr(pe, "_em_steps", em_steps)
        monkeypatch.setattr(pe, "summary_start", summary_start)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pg.PrivateGaussianMixture(2, method="em", epsilon=1.0, delta=1e-6,
                                             random_state=0).fit(X)

    with_alt, without = fit(2), fit(0)
    plan = with_alt.fit_info_["em_plan"]
    assert plan.n_starts == pe.N_STARTS and plan.start_clusters > 2
    assert len(seen[2]["alts"]) == 1 and not seen[0]["alts"]
    runs, base = seen[2]["runs"], seen[0]["runs"]
    for a, b in zip(runs[2], seen[2]["alts"][0], strict=True):
        np.testing.assert_array_equal(a, b)
    for r, q in zip(runs[:2], base[:2], strict=True):
        for a, b in zip(r, q, strict=True):
            np.testing.assert_array_equal(a, b)
    assert not all(np.array_equal(a, b) for a, b in zip(runs[2], base[2], strict=True))
    assert [(e.step, e.sensitivity, e.noise_scale, str(e.cost)) for e in with_alt.ledger_] == [
        (e.step, e.sensitivity, e.noise_scale, str(e.cost)) for e in without.ledger_]


@pytest.mark.slow
def test_the_starts_reach_sklearn_over_fit_seeds(monkeypatch):
    """Over the fit seeds 0-13 (ρ = 0.5, these 500 public rows of the benchmark's synthetic
    set) the pick among three runs ends within 0.01 nat/row of sklearn at every seed, and so
    do the two standardised starts alone. Until stop 42 the two starts alone shared a poor
    optimum at 1 of these 14 seeds (0.33 nat/row below sklearn), where the third start made
    the difference; since the stop-42 step changes (a one-step dip under the floor no longer
    split and revived, held components' releases pooled: ``FADE_LEVEL``, ``_pool_release``,
    ``benchmarks/results/em_small_clusters.md``) they reach it too (worst 0.0007), so both
    are held to 0.01 here: a claim over a declared range of seeds.
    What the third start still buys is measured on benchmarks/em_scale.py's rotated,
    unequally scaled mixture (n = 1e6, ε = 1, seeds 4-11: the two starts alone ended
    0.03-0.13 below sklearn at 5 of 8 seeds, all three at 1 of 8)."""
    X, H, P = _synthetic(50_000, 0), _synthetic(20_000, 1), _synthetic(500, 7)
    sk = GaussianMixture(3, covariance_type="full", random_state=0, n_init=2).fit(X).score(H)
    gaps: dict[int, list[float]] = {}
    for starts in (3, 2):
        monkeypatch.setattr(pe, "N_STARTS", starts)
        gaps[starts] = []
        for seed in range(14):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = pg.PrivateGaussianMixture(3, method="em", rho=0.5, random_state=seed).fit(
                    X, public_X=P)
            assert m.fit_info_["em_plan"].n_starts == starts
            gaps[starts].append(sk - m.score(H))
    assert max(gaps[3]) < 0.01, gaps
    assert max(gaps[2]) < 0.01, gaps


def test_pixels_reach_sklearns_basin_at_rho_one_half():
    """The pixels' flat 0.059 gap (every budget) was a basin, not a bias: sklearn's EM started
    from main's private fit stays at 0.058, and k-means in the whitened frame (main's start)
    leads there; k-means on standardised columns does not. Main at a0006e1: 0.059 at seeds
    0–2; this code: 0.007, 0.003, 0.000."""
    X, H, P = _pixels(30_000, 0), _pixels(20_000, 1), _pixels(300, 7)
    sk = GaussianMixture(4, covariance_type="full", random_state=0, n_init=2).fit(X).score(H)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = pg.PrivateGaussianMixture(4, method="em", rho=0.5, random_state=0).fit(
            X, public_X=P)
    assert sk - m.score(H) < 0.03, sk - m.score(H)


def test_pixels_histogram_run_leaves_the_whitened_frame_basin(monkeypatch):
    """The histogram start's k-means runs on standardised columns, as the k-means start's does:
    in the whitened frame it led the histogram run to a basin 0.059 nat/row below sklearn's on
    the pixels at 12 of 12 seeds (benchmark: ε = 1, 500 public rows), a decoy the run pick
    took at 3 of 12 seeds. The pick is forced to the histogram run here: 0.058–0.060 before
    (seeds 0–11), now 0.002–0.013 (seeds 0–5). The k-means histogram start is this test's
    subject: ``CELL_START`` (the cells' mixture in its place, famlowd2) is off here; with it
    the forced run ends 0.045 below sklearn at seed 1."""
    monkeypatch.setattr(pe, "CELL_START", 0)
    pick = pe.pick_run
    monkeypatch.setattr(pe, "pick_run", lambda *a: (pick(*a), 1)[1])  # released, then overridden
    X, H, P = _pixels(50_000, 0), _pixels(20_000, 1), _pixels(500, 7)
    sk = GaussianMixture(4, covariance_type="full", random_state=0, n_init=2).fit(X).score(H)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = pg.PrivateGaussianMixture(4, method="em", epsilon=1.0, delta=1e-6,
                                      random_state=1).fit(X, public_X=P)
    assert "em run selection" in [e.step for e in m.ledger_]  # the pick was still released
    assert sk - m.score(H) < 0.04, sk - m.score(H)


@pytest.mark.parametrize("n_steps", [1, 2, 3, 4])
def test_every_release_is_planned_for_few_steps(n_steps):
    """With few EM steps (the audits use 1 and 2) the run pick still comes after a planned
    step: the ledger lists exactly the plan's parts and spends exactly the budget."""
    X, P = _mixture(3000, 0), _mixture(30, 9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = pg.PrivateGaussianMixture(3, rho=0.5, method="em", random_state=0,
                                      enforce_requirements=False,
                                      method_params={"n_steps": n_steps}).fit(X, public_X=P)
    plan = m.fit_info_["em_plan"]
    assert len(m.ledger_) == len(plan.parts())
    assert ("run selection" in [nm for nm, _ in plan.parts()]) == (n_steps >= 2)
    assert m.privacy_spent_.rho == pytest.approx(0.5, rel=1e-9)


# ----------------------------------------------------------------------------- fast passes


def _plain_stats(Z: np.ndarray, model, radius: float, bound: float = 0.0):
    """The EM step's (N, S, M) and the pick's clipped score of one model, by their definitions
    over all rows at once (scipy's logsumexp, explicit clipping): the reference the fused,
    sub-blocked kernel must reproduce."""
    from scipy.special import logsumexp

    means, Linv, log_norm = model
    d = Z.shape[1]
    with np.errstate(all="ignore"):
        Y = np.stack([(Z - means[j]) @ Linv[j].T for j in range(len(means))], axis=1)
        norm = np.sqrt((Y * Y).sum(axis=2))
        logp = log_norm - 0.5 * norm**2
        lse = logsumexp(logp, axis=1, keepdims=True)
        R = np.exp(logp - lse)
        R[~np.isfinite(R).all(axis=1)] = 1.0 / len(means)
        Yc = np.where(np.isfinite(Y), Y, 0.0) * np.minimum(1.0, radius / norm)[:, :, None]
        v = lse[:, 0] + 0.5 * (Z * Z).sum(axis=1) + 0.5 * d * math.log(2 * math.pi)
    score = np.clip(np.where(np.isfinite(v), v, 0.0), -bound, bound).sum()
    return (R.sum(axis=0), np.einsum("ij,ijd->jd", R, Yc),
            np.einsum("ij,ijd,ije->jde", R, Yc, Yc), score)


def _two_models(d: int, k: int, seed: int):
    rng = np.random.default_rng(seed)
    models = []
    for c in range(2):
        A = rng.normal(size=(k, d, d)) * 0.3 + np.eye(d) * (1 + c)
        _, Linv, log_norm = pe._model_terms(rng.dirichlet(np.ones(k)), A @ A.transpose(0, 2, 1))
        models.append((rng.normal(size=(k, d)) * 2, Linv, log_norm))
    return tuple(models)


def test_em_kernel_equals_the_statistics_definition(monkeypatch):
    """The fused kernel (every run in one pass, sub-blocks in a reused workspace, stacked
    component frames, clipping factors from the densities' squared norms) gives each model's
    N, S, M and score as their plain definitions, across sub-blocks and kernel calls, with
    rows far away, on a mean, of magnitude 1e150 (no component can score it) and with an
    infinite coordinate in a last, partial sub-block (its frames zeroed in place)."""
    from privgauss.backends import reduce_rows

    monkeypatch.setattr(pe, "EM_SUB_ROWS", 64)  # several sub-blocks per kernel call
    rng = np.random.default_rng(0)
    d, k, radius, bound = 4, 3, 2.5, 12.0
    models = _two_models(d, k, 1)
    Z = rng.normal(size=(1000, d)) * 2.0
    Z[3] = 1e150
    Z[5] = -1e6
    Z[7] = models[0][0][1]
    Z[-2, 0] = np.inf  # in a last, partial sub-block (1000 = 3·300 + 100; 100 = 64 + 36)
    out = reduce_rows(Z, partial(pe._em_kernel, models=models, radius=radius, bound=bound),
                      block=300)
    for c, model in enumerate(models):
        for got, want in zip((o[c] for o in out), _plain_stats(Z, model, radius, bound),
                             strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-9)
    assert len(pe._em_kernel(Z, models, radius)) == 3  # no score without a bound
    cap = 1.7
    got = reduce_rows(Z, partial(pe._em_kernel, models=models, radius=radius, bound=cap,
                                 stats=False, regret=True), block=300)[0]
    np.testing.assert_allclose(got, _plain_regrets(Z, models, cap), rtol=1e-10, atol=1e-9)


def _plain_regrets(Z: np.ndarray, models, cap: float) -> np.ndarray:
    """The regret pick's sums by their definition: each row's log density under each model
    less the best of them, capped at −cap (a row one model cannot score: −cap for it; one no
    model can score: 0 for all)."""
    from scipy.special import logsumexp

    rows = []
    with np.errstate(all="ignore"):
        for means, Linv, log_norm in models:
            Y = np.stack([(Z - means[j]) @ Linv[j].T for j in range(len(means))], axis=1)
            rows.append(logsumexp(log_norm - 0.5 * (Y * Y).sum(axis=2), axis=1))
    L = np.array(rows)
    ok = np.isfinite(L)
    out = np.zeros(len(models))
    for i in range(L.shape[1]):
        if not ok[:, i].any():
            continue
        best = L[ok[:, i], i].max()
        out += np.where(ok[:, i], np.maximum(L[:, i] - best, -cap), -cap)
    return out


def test_em_kernel_stays_within_the_soft_statistics_sensitivities():
    """The kernel the fit runs: replacing one row moves N, S and M by at most √2, 2r and
    √2·r² (and by more than half of that: the bounds are tight)."""
    rng = np.random.default_rng(4)
    d, k, R = 3, 3, 1.5
    Z = rng.normal(size=(40, d))
    model = _two_models(d, k, 2)[:1]
    worst = _kernel_worst(lambda B: pe._em_kernel(B, model, R), Z, 4)
    stated = np.array([sensitivity.soft_counts_l2(), sensitivity.soft_sums_l2(R),
                       sensitivity.soft_outer_sums_frobenius(R)])
    assert np.all(worst <= stated * (1 + 1e-9)) and np.all(worst > stated / 2), (worst, stated)


def test_em_kernel_one_row_stays_inside_the_clipping_ball_in_floating_point():
    """One row's own contribution, as the kernel rounds it (its M_j a product of
    V = √r_ij·w_ij·Y_ij, its clipping factor from the squared norm): Σ_j tr M_j ≤ r²,
    ‖S_j‖ ≤ N_j·r and Σ_j N_j ≤ 1 + kε without any tolerance, for rows far beyond the radius
    (every row clipped), on the clipping sphere and inside it, in d = 2–15 at k = 1–6 — the
    per-row bound each released sum's stated sensitivity rests on."""
    rng = np.random.default_rng(11)
    eps = float(np.finfo(np.float64).eps)
    for d, k in ((2, 1), (4, 3), (10, 3), (15, 6)):
        _, Linv, log_norm = pe._model_terms(
            rng.dirichlet(np.ones(k)),
            np.array([np.eye(d) * 10.0 ** rng.uniform(-2, 2) for _ in range(k)]))
        model = (rng.normal(size=(k, d)), Linv, log_norm)
        for radius in (0.7, math.sqrt(d) + 1.3, 37.0):
            for scale in (1e-3, 1.0, radius, 1e3, 1e8):
                for _ in range(25):
                    z = rng.normal(size=(1, d)) * scale
                    N, S, M = pe._em_kernel(z, (model,), radius)
                    assert np.trace(M[0], axis1=1, axis2=2).sum() <= radius**2
                    assert np.all(np.linalg.norm(S[0], axis=1) <= N[0] * radius)
                    assert N[0].sum() <= 1.0 + k * eps


def _one_pass_per_run(Z, runs, plan, release, n, stops=None, k=None, frozen=None,
                      factors=None):
    """The EM steps before the passes were fused: one pass per run, and a separate pass for
    the runs' scores before the winner's step (the full schedule: at ε = 1 the plan has no
    stopping rule and no frozen runs, ``stops`` and ``frozen`` stay empty); an
    over-parameterised run reduced to k before step ``plan.reduce_at``."""
    assert plan.stop_from is None and not plan.freeze
    from privgauss.backends import reduce_rows
    from privgauss.mixture.em_starts import reduce_run

    def models(rs):
        return tuple((m, *pe._model_terms(w, c)[1:]) for w, m, c in rs)

    memory = np.full((k, 2), np.nan)  # the refining steps' combined errors (fresh)
    pool = [None] * runs[0][0].shape[0]  # held components' pooled releases
    peaks = [pe._Peaks.of(*run[1].shape) for run in runs]  # the revivals' restart states
    for t in range(plan.n_steps):
        if t == plan.reduce_at:
            runs = [reduce_run(runs[0], k, n, release.rng)]
            peaks = [pe._Peaks.of(*runs[0][1].shape)]
            pool = [None] * k  # the reduction's components: nothing pooled yet
        if plan.is_tied(t):  # one pooled covariance per run
            runs = [pe._tie(run) for run in runs]
            pool = [None] * runs[0][0].shape[0]  # every covariance replaced
        r = plan.step_radius(t)
        picked = t == plan.explore_steps and len(runs) > 1
        if picked:
            cap = plan.regret_cap(n)
            scores = reduce_rows(Z, partial(pe._em_kernel, models=models(runs), radius=r,
                                            bound=cap or plan.score_bound, regret=cap > 0),
                                 block=pe.EM_BLOCK_ROWS)[3]
            win = pe.pick_run(scores, plan, release, cap)
            runs, peaks = [runs[win]], [peaks[win]]
        # releases combined over steps after the pick, with the reduction's k components
        refining = (len(runs) == 1 and not picked and t >= plan.explore_steps
                    and (plan.reduce_at is None or t >= plan.reduce_at))
        # held components' releases pooled in refining steps and in a k' run's untied steps
        # after the pick (before the reduction)
        overparam = (len(runs) == 1 and not picked and t > plan.explore_steps
                     and plan.reduce_at is not None and t < plan.reduce_at
                     and not plan.is_tied(t))
        pooled = (pe.POOL_HELD and refining) or (pe.POOL_OVERPARAM and overparam)
        new = []
        for c, run in enumerate(runs):
            stats = reduce_rows(Z, partial(pe._em_kernel, models=models([run]),
                                           radius=r), block=pe.EM_BLOCK_ROWS)
            new.append(pe._em_release(tuple(s[0] for s in stats), run,
                                      pe._model_terms(run[0], run[2])[0], plan, t, release,
                                      n, f" run {c + 1}" if len(runs) > 1 else "",
                                      memory if refining else None, None,
                                      pool if pooled else None,
                                      peaks[c]))
        runs = new
    return runs[0]


@pytest.mark.parametrize(("public", "n", "over"), [(False, 2500, 0), (True, 4000, 6),
                                                   (False, 12_000, 6)])
def test_fused_passes_give_the_fit_of_one_pass_per_run(monkeypatch, public, n, over):
    """The whole fit (both starts exploring, the pick, the winner's steps) through the fused
    passes equals, bit for bit, the fit through one pass per run and a separate scoring pass
    at the same seed (a model's statistics do not depend on the other models of its pass).
    The kernel's arithmetic is checked against the definitions above, not here: at this small
    n the fit is not continuous in rounding (the same driver on the plain definitions, equal
    to the kernel's statistics within 1e-12, ends in another model at this seed). At
    n = 4,000 with public rows and at n = 12,000 the plan is over-parameterised (``over`` =
    k' = 6, reduced before its last ``REDUCE_STEPS`` steps), at n = 2,500 not."""
    X, P = _mixture(n, 0), (_mixture(40, 9) if public else None)

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return pg.PrivateGaussianMixture(3, epsilon=1.0, delta=1e-6, method="em",
                                             random_state=2, enforce_requirements=False,
                                             ).fit(X, public_X=P)

    fused = fit()
    monkeypatch.setattr(pe, "_em_steps", _one_pass_per_run)
    plain = fit()
    assert fused.fit_info_["em_plan"].n_starts == 3
    assert fused.fit_info_["em_plan"].components == over  # both schedules
    assert [e.step for e in fused.ledger_] == [e.step for e in plain.ledger_]
    for a in ("weights_", "means_", "covariances_"):
        np.testing.assert_array_equal(getattr(fused, a), getattr(plain, a))


def test_lloyd_kernel_equals_its_definition():
    """The Lloyd step's kernel (all centres in one product) gives the counts, clipped sums and
    second moments of the rows assigned to their nearest centre in the standardised frame,
    as defined, with far and overflowing rows among them."""
    from privgauss.linalg import clip_weights

    rng = np.random.default_rng(6)
    d, k, R = 4, 3, 2.0
    Z = rng.normal(size=(500, d)) * 2.0
    Z[4], Z[9] = 1e155, -1e6  # squared distances overflow for every centre: label 0, y = 0
    centres = rng.normal(size=(k, d))
    G = np.eye(d) + 0.3 * rng.normal(size=(d, d))
    with np.errstate(all="ignore"):
        U = np.stack([(Z - c) @ G.T for c in centres], axis=1)
        U[~np.isfinite(U)] = 0.0
        lab = np.argmin((U * U).sum(axis=2), axis=1)
        Y = U[np.arange(len(Z)), lab]
        Y = Y * clip_weights(Y, R)[:, None]
    want = (np.bincount(lab, minlength=k).astype(float),
            np.array([Y[lab == j].sum(axis=0) for j in range(k)]),
            np.array([Y[lab == j].T @ Y[lab == j] for j in range(k)]))
    for got, w in zip(es._lloyd_kernel(Z, centres, G, R), want, strict=True):
        np.testing.assert_allclose(got, w, rtol=1e-10, atol=1e-9)


def test_revival_splits_the_component_with_the_most_spread() -> None:
    # a dead component (index 2) is revived by splitting the alive one that holds the most
    # spread, w·λ_max: component 0 (two clusters merged, stretched along e₁) rather than the
    # slightly heavier compact component 1 — the old rule (the heaviest) split component 1
    from privgauss.mixture.private_em import _split

    d = 3
    w = np.array([0.46, 0.47, 0.07])
    means = np.array([[0.0, 0.0, 0.0], [5.0, 5.0, 5.0], [9.0, 9.0, 9.0]])
    covs = np.array([np.diag([4.0, 1.0, 1.0]), np.eye(d), np.eye(d)])
    _split(w, means, covs, 2, np.array([True, True, False]))
    np.testing.assert_allclose(means[1], [5.0, 5.0, 5.0])  # untouched
    np.testing.assert_allclose(np.sort([means[0][0], means[2][0]]), [-1.0, 1.0])  # ±½·√4 on e₁
    np.testing.assert_allclose(means[[0, 2], 1:], 0.0)
    np.testing.assert_allclose(w, [0.265, 0.47, 0.265])
    np.testing.assert_allclose(covs[0], np.diag([3.0, 1.0, 1.0]))
    np.testing.assert_allclose(covs[2], covs[0])


def test_a_small_component_under_a_steps_noise_floor_keeps_its_estimate() -> None:
    # issue 27: a 5 %-weight component (2,500 rows, d = 9, ε = 1) sits under an exploring
    # step's release floor (~4,000): it keeps its estimate, not split-revived (the old rule
    # split it and private EM started from sklearn's optimum ended 0.19 below it); a component
    # whose count fell far below its previous one (fading) and one with no rows (dead) are
    # revived by a split
    # (the k-component plan: em_plan's is over-parameterised here, its exploring steps tied,
    # their floor the sums' noise alone; test_tied_steps_... checks those)
    n, d, k, t = 50_000, 9, 4, 1
    plan = pe._base_plan(n, d, k, ApproxDP(1.0, 1e-6))
    assert plan.runs(t) == 3 and not plan.is_tied(t)
    floor, dead = pe._release_floor(plan, t, n, k), pe._dead_floor(plan, t, n, k)
    assert dead < 1_500 < 2_500 < floor  # the small component: under the floor, not dead
    means = np.array([[-6.0] + [0.0] * (d - 1), [6.0] + [0.0] * (d - 1),
                      [0.0, -6.0] + [0.0] * (d - 2), [0.0, 6.0] + [0.0] * (d - 2)])
    covs = np.array([np.eye(d)] * k)
    L = np.linalg.cholesky(covs)

    def step(counts: list[float], weights: list[float], seed: int) -> tuple:
        N = np.array(counts)
        stats = (N, np.zeros((k, d)), N[:, None, None] * np.eye(d))
        run = (np.array(weights), means.copy(), covs.copy())
        return pe._em_release(stats, run, L, plan, t,
                              Release.of(Accountant(ApproxDP(1e9, 0.5)), seed), n)

    for seed in range(5):
        _, m, c = step([2_500, 22_500, 12_500, 12_500], [0.05, 0.45, 0.25, 0.25], seed)
        np.testing.assert_array_equal(m[0], means[0])  # kept: not moved by a split
        np.testing.assert_array_equal(c[0], covs[0])
        # fading: 10,000 rows before, 1,200 now (under FADE_LEVEL × the floor, far beyond
        # the counts' noise) -> revived by a split of another component
        _, m, _ = step([1_200, 23_800, 12_500, 12_500], [0.2, 0.3, 0.25, 0.25], seed)
        assert np.linalg.norm(m[0] - means[0]) > 3.0
        _, m, _ = step([0.0, 25_000, 12_500, 12_500], [0.05, 0.45, 0.25, 0.25], seed)  # dead
        assert np.linalg.norm(m[0] - means[0]) > 3.0


def test_a_small_component_whose_count_dips_under_the_floor_is_not_split_revived(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 27 (generated families 1161, 1126 at ε = 1, d = 15): a true 5-8 % component under
    # the step's release floor whose soft count dips by 15-30 % (a neighbour's update took some
    # of its rows) was called fading and split-revived: the split moved it and cut another
    # true component in two, and the fit lost both. Fading now also needs the count under
    # FADE_LEVEL × the floor; a component sliding further (test above: 1,500 rows) is revived.
    n, d, k, t = 50_000, 9, 4, 1
    plan = pe._base_plan(n, d, k, ApproxDP(1.0, 1e-6))
    floor = pe._release_floor(plan, t, n, k)
    rc = plan.stat_rhos(t)[0]
    noise = 3.0 * math.sqrt(2.0) * sensitivity.soft_counts_l2() / math.sqrt(2.0 * rc)
    prev, now = 4_800.0, 2_800.0
    # under the floor, fallen by more than 1 − FADE and the counts' noise: the old rule's fading
    assert pe._dead_floor(plan, t, n, k) < now < floor
    assert prev - now > max((1.0 - pe.FADE) * prev, noise)
    assert now > pe.FADE_LEVEL * floor  # ... but not under the fading level
    means = np.array([[-6.0] + [0.0] * (d - 1), [6.0] + [0.0] * (d - 1),
                      [0.0, -6.0] + [0.0] * (d - 2), [0.0, 6.0] + [0.0] * (d - 2)])
    covs = np.array([np.eye(d)] * k)
    L = np.linalg.cholesky(covs)

    def step(seed: int) -> tuple:
        N = np.array([now, 22_500.0, 12_500.0, 12_500.0 + prev - now])
        stats = (N, np.zeros((k, d)), N[:, None, None] * np.eye(d))
        run = (np.array([prev / n, 0.45, 0.25, 0.25 - prev / n + 0.05]), means.copy(),
               covs.copy())
        return pe._em_release(stats, run, L, plan, t,
                              Release.of(Accountant(ApproxDP(1e9, 0.5)), seed), n)

    for seed in range(5):
        _, m, c = step(seed)
        np.testing.assert_array_equal(m[0], means[0])  # kept: not moved by a split
        np.testing.assert_array_equal(c[0], covs[0])
        assert np.linalg.norm(m[1:] - means[1:], axis=1).max() < 1.0  # no component cut
    monkeypatch.setattr(pe, "FADE_LEVEL", 1.0)  # the old rule split it
    _, m, _ = step(0)
    assert np.linalg.norm(m[0] - means[0]) > 3.0


def test_a_component_is_dead_only_when_two_released_counts_running_are_under_the_dead_floor(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 27 (family 1454, ε = 1, d = 2): a right 4.9 % component (2,400 rows, 4.7 sds of
    # an exploring step's count noise) released one count under the dead floor (a 1.7-sd dip,
    # ~4 % per step) and was split-revived in all three runs; the fit lost it. Dead now needs
    # the previous released count (the run's weight) under the floor too; a component with no
    # rows in two steps running is revived, and fading is unchanged. (An experiment switch,
    # off by default: it lost on the corpus; off, one count decides as before.)
    monkeypatch.setattr(pe, "DEAD_CONFIRM", True)
    n, d, k, t = 50_000, 9, 4, 1
    plan = pe._base_plan(n, d, k, ApproxDP(1.0, 1e-6))
    floor, dead = pe._release_floor(plan, t, n, k), pe._dead_floor(plan, t, n, k)
    rc = plan.stat_rhos(t)[0]
    noise = 3.0 * math.sqrt(2.0) * sensitivity.soft_counts_l2() / math.sqrt(2.0 * rc)
    big = [22_500.0, 12_500.0, 12_500.0]
    prev, now = 1.5 * dead, 0.8 * dead  # (1454: 4.7 and 2.9 sds, 1.6 and 0.95 dead floors)
    assert now < dead < prev < floor and prev - now < noise  # a dip within the noise

    def revive(count: float, before: float) -> list[bool]:
        return pe._to_revive(np.array([count, *big]), np.array([before, *big]), floor, dead,
                             rc, t).tolist()

    assert revive(now, prev) == [False] * 4  # one count under the dead floor: kept
    assert revive(now, 0.9 * dead) == [True, False, False, False]  # two: dead
    assert revive(0.0, 50.0) == [True, False, False, False]
    assert revive(0.3 * floor, 0.3 * floor + 1.1 * noise)[0]  # fading (t > 0) as before
    assert not pe._to_revive(np.array([0.3 * floor, *big]), np.array([floor, *big]), floor,
                             dead, rc, 0)[0]  # no fading at the first step
    # in a step: a component with no rows in two steps running is moved by a split
    means = np.array([[-6.0] + [0.0] * (d - 1), [6.0] + [0.0] * (d - 1),
                      [0.0, -6.0] + [0.0] * (d - 2), [0.0, 6.0] + [0.0] * (d - 2)])
    covs = np.array([np.eye(d)] * k)
    N = np.array([0.0, 22_500.0, 12_500.0, 15_000.0])
    for seed in range(3):
        _, m, _ = pe._em_release((N, np.zeros((k, d)), N[:, None, None] * np.eye(d)),
                                 (np.array([0.001, 0.45, 0.25, 0.299]), means.copy(),
                                  covs.copy()), np.linalg.cholesky(covs), plan, t,
                                 Release.of(Accountant(ApproxDP(1e9, 0.5)), seed), n)
        assert np.linalg.norm(m[0] - means[0]) > 3.0
    monkeypatch.setattr(pe, "DEAD_CONFIRM", False)  # the old rule: one count decided
    assert revive(now, prev) == [True, False, False, False]


def test_a_held_components_releases_are_pooled_by_precision_until_they_clear_the_floor(
        monkeypatch) -> None:
    # issue 27: a 5-8 % component at d = 15, ε = 1 sits under every refining step's floor but
    # the last; its releases in the held frame are averaged (weights: the steps' ρ, the
    # inverse noise variances at one radius) and update it once the pooled count clears the
    # floor scaled by the pooled noise, √(ρ/Σρ)
    n, k, d, floor, r = 50_000, 6, 3, 3_000.0, 5.0
    rng = np.random.default_rng(0)
    S, M = rng.standard_normal((4, d)), rng.standard_normal((4, d, d))
    pool: list = [None] * k
    assert pe._pool_release(pool, 2, 0.75 * floor, S[0], M[0], r, 1.0, floor, n, k) is None
    assert pool[2] is not None  # held: the release waits in the pool
    out = pe._pool_release(pool, 2, 0.75 * floor + 100.0, S[1], M[1], r, 1.0, floor, n, k)
    assert out is not None and pool[2] is None  # 0.75 + > 1/√2: two releases clear it
    N, Sp, Mp, scale = out
    assert math.isclose(N, 0.75 * floor + 50.0) and math.isclose(scale, math.sqrt(0.5))
    np.testing.assert_allclose(Sp, (S[0] + S[1]) / 2)
    np.testing.assert_allclose(Mp, (M[0] + M[1]) / 2)
    # 0.65 < 1/√2 needs a third release (1/√3 = 0.577)
    for _ in range(2):
        assert pe._pool_release(pool, 0, 0.65 * floor, S[0], M[0], r, 1.0, floor, n, k) is None
    out = pe._pool_release(pool, 0, 0.65 * floor, S[2], M[2], r, 1.0, floor, n, k)
    assert out is not None and math.isclose(out[3], math.sqrt(1.0 / 3.0))
    np.testing.assert_allclose(out[1], (2 * S[0] + S[2]) / 3)
    # unequal steps: weights ρ = (2, 1); the pooled noise variance 1/3 of the last one's
    assert pe._pool_release(pool, 1, 0.65 * floor, S[0], M[0], r, 2.0, floor, n, k) is None
    out = pe._pool_release(pool, 1, 0.65 * floor, S[1], M[1], r, 1.0, floor, n, k)
    assert out is not None and math.isclose(out[3], math.sqrt(1.0 / 3.0))
    np.testing.assert_allclose(out[1], (2 * S[0] + S[1]) / 3)
    np.testing.assert_allclose(out[2], (2 * M[0] + M[1]) / 3)
    # a new radius (another step kind) starts a new pool; a release far under the floor waits
    assert pe._pool_release(pool, 0, 0.65 * floor, S[3], M[3], r, 1.0, floor, n, k) is None
    assert pe._pool_release(pool, 0, 0.65 * floor, S[3], M[3], 2 * r, 1.0, floor, n, k) is None
    assert pool[0][0] == 2 * r and pool[0][1] == 1.0
    # in _em_release (d = 15, k = 6, a refining step): held once, updated at the second; at
    # r₀ (the refining steps' radius before issue 27's REFINE_TAIL), whose floor leaves the
    # count's noise (sd 175 rows) a margin of 3 sds on either side of 0.855 × the floor
    monkeypatch.setattr(pe, "REFINE_TAIL", pe.CLIP_TAIL)
    plan = pe._base_plan(n, 15, k, ApproxDP(1.0, 1e-6))
    assert plan.step_radius(plan.n_steps - 3) == pe.clip_radius(n, 15)
    t = plan.n_steps - 3
    floor = pe._release_floor(plan, t, n, k)
    d = 15
    means = np.zeros((k, d))
    means[:, 0] = 8.0 * np.arange(k)
    covs = np.array([np.eye(d)] * k)
    L = np.linalg.cholesky(covs)
    counts = np.array([0.855 * floor] + [(n - 0.855 * floor) / (k - 1)] * (k - 1))
    stats = (counts, np.zeros((k, d)), counts[:, None, None] * 0.9 * np.eye(d))
    run = (counts / n, means.copy(), covs.copy())
    mem, pool = np.full((k, 2), np.nan), [None] * k
    acct = Release.of(Accountant(ApproxDP(1e9, 0.5)), 3)
    _, m1, c1 = pe._em_release(stats, run, L, plan, t, acct, n, memory=mem, pool=pool)
    np.testing.assert_array_equal(c1[0], covs[0])  # held under the floor
    assert pool[0] is not None and all(p is None for p in pool[1:])
    assert not np.array_equal(c1[1], covs[1])  # the others updated
    _, m2, c2 = pe._em_release(stats, run, L, plan, t, acct, n, memory=mem, pool=pool)
    assert pool[0] is None and not np.array_equal(c2[0], covs[0])  # pooled: updated


def test_a_k_prime_runs_held_components_are_pooled_before_the_reduction(monkeypatch) -> None:
    """fampool (issue 27): the k' run's untied steps after the pick and before the reduction
    pool a held component's releases (``POOL_OVERPARAM``), as the refining steps do: the
    pool is passed at exactly those steps and the refining ones, empty at the first untied
    step (the tied steps replaced every covariance) and at the reduction (new components),
    and an entry is kept over a step only for a component whose estimate that step held,
    with the step's radius and the summed ρ of the steps it pooled. Switched off, the k'
    steps pool nothing; either way the ledger is the same (post-processing of the same
    releases)."""
    real = pe._em_release_runs

    def fit(switch: bool) -> tuple[list[tuple], pg.PrivateGaussianMixture]:
        monkeypatch.setattr(pe, "POOL_OVERPARAM", switch)
        seen: list[tuple] = []

        def spy(steps, plan, t, release, n):
            st = steps[0]
            if st.pool is None:
                assert all(s.pool is None for s in steps)
                seen.append((t, plan, None, None, None, None))
                return real(steps, plan, t, release, n)
            assert len(steps) == 1  # the pooled steps have one run
            before = [None if e is None else (e[0], e[1]) for e in st.pool]
            run = tuple(a.copy() for a in st.run)
            out = real(steps, plan, t, release, n)
            after = [None if e is None else (e[0], e[1]) for e in st.pool]
            seen.append((t, plan, before, after, run, out[0]))
            return out

        monkeypatch.setattr(pe, "_em_release_runs", spy)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gm = pg.PrivateGaussianMixture(3, epsilon=1.0, delta=1e-6, method="em",
                                           random_state=2, enforce_requirements=False
                                           ).fit(_mixture(12_000, 0))
        return seen, gm

    ledgers = []
    for switch in (True, False):
        seen, gm = fit(switch)
        ledgers.append([(e.step, e.cost) for e in gm.ledger_])
        plan = seen[0][1]
        assert plan.components == 6 and plan.reduce_at == 12 and plan.tied_until == 8
        untied_k = set(range(plan.tied_until, plan.reduce_at))
        refining = set(range(plan.reduce_at, plan.n_steps))
        pooled = {t for t, _, before, *_ in seen if before is not None}
        assert pooled == (untied_k | refining if switch else refining)
        held_kprime = 0
        for t, _, before, after, run, new in seen:
            if before is None:
                continue
            r, rm = plan.step_radius(t), plan.stat_rhos(t)[2]
            if t in (plan.tied_until, plan.reduce_at):  # emptied by the tie / the reduction
                assert before == [None] * (6 if t < plan.reduce_at else 3)
            for j, (b, a) in enumerate(zip(before, after, strict=True)):
                if a is None:
                    continue
                # kept: the component was held (its frame unchanged), the pool at the
                # step's radius with the ρ of its held steps
                np.testing.assert_array_equal(new[1][j], run[1][j])
                np.testing.assert_array_equal(new[2][j], run[2][j])
                # (a pool made at another radius starts again)
                assert a[0] == r and math.isclose(
                    a[1], (b[1] if b is not None and b[0] == r else 0.0) + rm)
                held_kprime += t in untied_k
        # at this seed the untied k' steps hold components (5 and 6 at the first)
        assert (held_kprime > 0) == switch
    assert ledgers[0] == ledgers[1]


def test_loud_refining_steps_are_fewer() -> None:
    """An over-parameterised plan without public rows refines over LOUD_REDUCE_STEPS steps
    exactly where its first refining step's noise (with REDUCE_STEPS of them) moves a k-model
    by more than LOUD_REFINE (public: n, d, k and the budget), else over REDUCE_STEPS; the
    refining steps keep 1 − OVER_SHARE of the steps' ρ, half of it on the last, either way,
    and the plan names the same parts as the plain one."""
    budget = ApproxDP(1.0, 1e-6)
    seen = set()
    for n, d, k in [(50_000, 10, 3), (12_000, 5, 2), (50_000, 15, 6), (8000, 6, 3),
                    (50_000, 13, 4)]:
        plan = pe.em_plan(n, d, k, budget)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(pe, "LOUD_REDUCE_STEPS", 0)
            eight = pe.em_plan(n, d, k, budget)
        assert eight.n_steps - eight.reduce_at == pe.REDUCE_STEPS == 8
        loud = pe._refine_noise(eight, n, d, k) > pe.LOUD_REFINE
        seen.add(loud)
        refining = plan.n_steps - plan.reduce_at
        assert refining == (pe.LOUD_REDUCE_STEPS if loud else pe.REDUCE_STEPS), (n, d, k)
        assert plan.components == eight.components
        if not loud:
            assert plan == eight
        rho = sum(plan.rho_steps)
        assert sum(plan.rho_steps[plan.reduce_at:]) == pytest.approx((1 - pe.OVER_SHARE) * rho)
        assert plan.rho_steps[-1] == pytest.approx(0.5 * (1 - pe.OVER_SHARE) * rho)
        assert [nm for nm, _ in plan.parts()] == [nm for nm, _ in eight.parts()]
    assert seen == {True, False}
    # with public rows a loud plan keeps REDUCE_STEPS (LOUD_PUBLIC off)
    public = pe.em_plan(50_000, 15, 6, budget, n_public=500)
    assert public.components and public.n_steps - public.reduce_at == pe.REDUCE_STEPS
    assert pe._refine_noise(public, 50_000, 15, 6) > pe.LOUD_REFINE


def test_over_parameterised_plan_only_where_an_exploring_step_is_loud() -> None:
    """k' = OVERPARAM·k components (public) where the first exploring step's noise moves a
    k-model by more than OVER_NOISE, with the default schedule only, reduced before the last
    REDUCE_STEPS steps (after the run pick); never where k' components would fail em's own
    rows-per-component needs where k passes."""
    budget = ApproxDP(1.0, 1e-6)
    plan = pe.em_plan(50_000, 10, 3, budget)
    assert pe._noise_change(pe._base_plan(50_000, 10, 3, budget), 0, 50_000, 10, 3) > \
        pe.OVER_NOISE
    assert plan.components == 6 and plan.fitted(3) == 6
    assert plan.reduce_at == plan.n_steps - pe.REDUCE_STEPS > plan.explore_steps
    assert pe.em_plan(12_000, 5, 2, budget).components == 4  # test_plan_ledger's case
    # where the start grid sees every column and the steps are loud, T0 = 10 leaves too few
    # steps before the last REDUCE_STEPS to explore with k' (test_fewer_steps_where...)
    low = pe.em_plan(6000, 2, 3, budget)
    assert low.n_steps == 10 and low.components == 0 and low.reduce_at is None
    for quiet in (pe.em_plan(50_000, 3, 3, budget), pe.em_plan(50_000, 10, 3, ApproxDP(1e4, 1e-6)),
                  pe.em_plan(50_000, 10, 3, budget, n_steps=20)):
        assert quiet.components == 0 and quiet.reduce_at is None and quiet.fitted(3) == 3
    # the base plan's ledger and the over-parameterised one's name the same parts (the k' run
    # is an em run: its steps cost what k components' do)
    base = pe._base_plan(50_000, 10, 3, budget)
    assert [nm for nm, _ in plan.parts()] == [nm for nm, _ in base.parts()]
    assert math.isclose(plan.rho_em, base.rho_em, rel_tol=1e-12)
    # with 50 public rows (no localisation) the rows per component bind: at n = 1,850, d = 2,
    # 6 components pass and 12 would not; the exploring step is loud there, yet no k'
    for n in (1_500, 1_850, 2_500, 4_000, 10_000):
        p = pe.em_plan(n, 2, 6, budget, n_public=50)
        if pe.em_requirements(n, 2, 6, budget, n_public=50).ok and p.components:
            assert pe.em_requirements(n, 2, p.components, budget, n_public=50).ok, n
    assert pe.em_requirements(1_850, 2, 6, budget, n_public=50).ok
    assert not pe.em_requirements(1_850, 2, 12, budget, n_public=50).ok
    loud = pe._noise_change(pe._base_plan(1_850, 2, 6, budget, n_public=50), 0, 1_850, 2, 6)
    assert loud > pe.OVER_NOISE and pe.em_plan(1_850, 2, 6, budget, n_public=50).components == 0
    # at d = 2 the start grid sees both columns and T0 = 10 leaves no room for a k' run; at
    # d = 5 (grid of 4 directions) k' = 2k where its last step is quiet enough, fewer where not
    assert pe.em_plan(10_000, 2, 6, budget, n_public=50).components == 0
    assert pe.em_plan(20_000, 5, 6, budget, n_public=50).components == 12
    capped = pe.em_plan(6_000, 5, 6, budget, n_public=50).components
    assert 6 < capped < 12
    over = pe._base_plan(6_000, 5, capped + 1, budget, n_public=50)
    assert pe._noise_change(over, over.n_steps - 1, 6_000, 5, capped + 1) > pe.OVER_CAP


def _over_parameterised_fit(d: int, k: int) -> pg.PrivateGaussianMixture:
    """An ε = 1 em fit of 12,000 well-separated rows (d, k) whose plan is over-parameterised
    (k' > k), run through whatever spies the caller has patched into ``pe``."""
    X = pg.datasets.make_mixture(12_000, k, d, separation=8.0, random_state=12).X
    est = pg.PrivateGaussianMixture(k, method="em", epsilon=1.0, delta=1e-6, random_state=0,
                                    enforce_requirements=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X)
    return est


def test_tied_steps_release_one_pooled_matrix_at_their_planned_share(monkeypatch) -> None:
    """The over-parameterised run's tied steps (before ``tied_until``) release the k'
    components' second moments as one pooled d×d matrix at ``TIED_SHARES`` of the step's ρ;
    the untied k' steps and the refining k steps release one matrix per component at
    ``STAT_SHARES`` (the last step at ``last_shares``: :func:`_output_shares`). With shares
    other than STAT_SHARES, a release at the wrong split, of the
    wrong shape, or a plan that does not name it fails here (and the ledger must equal the
    plan)."""
    from privgauss.privacy.plans import ledger_mismatch
    from privgauss.sensitivity import soft_statistics_zcdp

    monkeypatch.setattr(pe, "TIED_SHARES", (0.2, 0.5, 0.3))
    monkeypatch.setattr(pe, "OVER_TIED", True)
    seen: list[tuple[str, tuple[int, ...], float]] = []
    real = pe.soft_statistics_mechanism

    def spy(N, S, M, radius, rhos, **kw):
        # the moments' share of the step, as planned; the joint charge the step's whole ρ
        seen.append((kw["step"], np.shape(M), rhos[2] / sum(rhos) * soft_statistics_zcdp(*rhos)))
        return real(N, S, M, radius, rhos, **kw)

    monkeypatch.setattr(pe, "soft_statistics_mechanism", spy)
    d, k = 5, 2
    est = _over_parameterised_fit(d, k)
    plan = est.fit_info_["em_plan"]
    kp = plan.components
    assert kp > k and plan.tied_until is not None
    assert plan.explore_steps <= plan.tied_until <= plan.reduce_at
    steps = [(nm, shape, rho) for nm, shape, rho in seen if nm.startswith("em step ")]
    assert len(steps) == sum(plan.runs(t) for t in range(plan.n_steps))
    for nm, shape, rho in steps:
        t = int(nm.split()[2].split("/")[0]) - 1
        share = (0.3 if plan.is_tied(t) else plan.last_shares[2] if t == plan.n_steps - 1
                 else pe.STAT_SHARES[2])
        assert rho == pytest.approx(share * plan.rho_steps[t] / plan.runs(t), rel=1e-12), nm
        width = kp if t < plan.reduce_at else k
        assert shape == ((d, d) if plan.is_tied(t) else (width, d, d)), (nm, shape)
    assert any(plan.is_tied(t) for t in range(plan.n_steps))
    assert ledger_mismatch(est.budget_plan_, est.ledger_) is None


def test_output_shares_minimise_the_last_steps_noise_cost() -> None:
    """_output_shares(d) is the split of a step's ρ over (counts, sums, moments) that
    minimises its noise's KL cost a_c/ρ_c + a_s/ρ_s + a_m/ρ_m (a_c = ½ + d/4, a_s = d·r²,
    a_m = d(d+1)·r⁴/8, r² = d): no point of a fine grid of the simplex is cheaper, and
    STAT_SHARES costs more at the d where k' plans run. A wrong weight (e.g. the count's d/4
    left out, or r⁴ for r²) moves the minimum off the grid's best by more than the grid step."""
    for d in (2, 5, 9, 13, 15):
        a = (0.5 + 0.25 * d, d * d, d * (d + 1.0) * d * d / 8.0)

        def cost(c: float, s: float, m: float, a: tuple[float, ...] = a) -> float:
            return a[0] / c + a[1] / s + a[2] / m

        shares = pe._output_shares(d)
        assert sum(shares) == pytest.approx(1.0, abs=1e-12) and min(shares) > 0
        grid = np.linspace(0.002, 0.996, 498)
        C, S = np.meshgrid(grid, grid, indexing="ij")
        M = 1.0 - C - S
        ok = M > 1e-3
        costs = np.where(ok, a[0] / C + a[1] / S + a[2] / np.where(ok, M, 1.0), np.inf)
        i, j = np.unravel_index(np.argmin(costs), costs.shape)
        assert cost(*shares) <= costs[i, j] * (1.0 + 1e-9)
        assert shares[0] == pytest.approx(grid[i], abs=0.004)
        assert shares[1] == pytest.approx(grid[j], abs=0.004)
        assert cost(*shares) < cost(*pe.STAT_SHARES)
        if d >= 13:  # the k' plans of issue 27's families: 15 % less of that noise
            assert cost(*shares) < 0.9 * cost(*pe.STAT_SHARES)


def test_over_parameterised_last_step_releases_at_output_shares(monkeypatch) -> None:
    """A plan with a k' run releases its last step's counts, sums and second moments with
    the noise of ``last_shares`` = _output_shares(d) of that step's ρ, at the step's radius,
    and every other untied step at ``STAT_SHARES``; each step's one joint charge is that
    step's ρ, and the ledger equals the plan. A plain plan (no k') and every ε = 1e4 plan
    keep STAT_SHARES (the split only where the noise is loud). A release at a wrong split or
    radius, or a plan that does not name it, fails here."""
    from privgauss.privacy.plans import ledger_mismatch
    from privgauss.sensitivity import soft_statistics_zcdp

    seen: list[tuple[str, float, tuple[float, float, float]]] = []
    real = pe.soft_statistics_mechanism

    def spy(N, S, M, radius, rhos, **kw):
        seen.append((kw["step"], float(radius), tuple(rhos)))
        return real(N, S, M, radius, rhos, **kw)

    monkeypatch.setattr(pe, "soft_statistics_mechanism", spy)
    d, k = 5, 2
    est = _over_parameterised_fit(d, k)
    plan = est.fit_info_["em_plan"]
    assert plan.components > k
    assert plan.last_shares == pe._output_shares(d)
    T = plan.n_steps
    checked = 0
    for nm, radius, rhos in seen:
        if not nm.startswith("em step "):
            continue
        t = int(nm.split()[2].split("/")[0]) - 1
        if plan.is_tied(t):
            continue
        shares = plan.last_shares if t == T - 1 else pe.STAT_SHARES
        assert np.array(rhos) / sum(rhos) == pytest.approx(shares, rel=1e-12), nm
        assert soft_statistics_zcdp(*rhos) == pytest.approx(
            plan.rho_steps[t] / plan.runs(t), rel=1e-12), nm
        assert rhos == pytest.approx(plan.stat_rhos(t), rel=1e-12)
        assert radius == plan.step_radius(t), nm
        checked += t == T - 1
    assert checked == 1
    assert ledger_mismatch(est.budget_plan_, est.ledger_) is None
    plain = pe.em_plan(4_000, 7, 3, ApproxDP(1.0, 1e-6))
    assert plain.components == 0 and plain.last_shares == ()
    last = np.array(plain.stat_rhos(plain.n_steps - 1))
    assert last / last.sum() == pytest.approx(pe.STAT_SHARES, rel=1e-12)
    for n, dd, kk in ((50_000, 14, 4), (50_000, 13, 6), (12_000, 5, 2)):
        assert pe.em_plan(n, dd, kk, ApproxDP(1.0, 1e-6)).last_shares == pe._output_shares(dd)
        assert pe.em_plan(n, dd, kk, ApproxDP(1e4, 1e-6)).last_shares == ()


def test_reduce_run_merges_close_components_by_their_moments() -> None:
    """The free reduction of k' released components to k: two far pairs of blobs become two
    components with each pair's mass, mean and covariance (within plus between) — EM on the
    summary is exact on Gaussian blobs."""
    from privgauss.mixture.em_starts import reduce_run

    d = 3
    means = np.array([[0.0, 0.0, 0.0], [0.4, 0.0, 0.0], [30.0, 0.0, 0.0], [30.0, 0.5, 0.0]])
    covs = np.array([np.eye(d) * s for s in (1.0, 0.5, 2.0, 1.0)])
    w = np.array([0.1, 0.3, 0.4, 0.2])
    pi, mu, S = reduce_run((w, means, covs), 2, 10_000, np.random.default_rng(0))
    order = np.argsort(mu[:, 0])
    pi, mu, S = pi[order], mu[order], S[order]
    for c, pair in enumerate(((0, 1), (2, 3))):
        ww = w[list(pair)] / w[list(pair)].sum()
        m = ww @ means[list(pair)]
        C = sum(ww[j] * (covs[p] + np.outer(means[p] - m, means[p] - m))
                for j, p in enumerate(pair))
        assert pi[c] == pytest.approx(w[list(pair)].sum(), abs=1e-6)
        np.testing.assert_allclose(mu[c], m, atol=1e-6)
        np.testing.assert_allclose(S[c], C, atol=1e-5)


def test_fewer_steps_where_the_start_grid_sees_every_column_and_steps_are_loud() -> None:
    """T0 = T_FULL_GRID·(1 + min(1, a)) when the start histogram's grid has a direction per
    column (p = d, public): 10 steps at a loud budget, the old 8 + 4k ≤ 20 once the early
    steps' ρ is what the tolerance needs (a ≥ 1), and more steps than that only from the
    budget (T ∝ ρ); the wide tables' plans are unchanged."""
    budget = ApproxDP(1.0, 1e-6)
    for n, d, k in ((3000, 2, 3), (8000, 2, 3), (8000, 3, 5), (20_000, 4, 6)):
        plan = pe.em_plan(n, d, k, budget, n_public=30 if n < 4000 else 0)
        assert plan.grid_dims == d
        assert 10 <= plan.n_steps < 20, (n, d, k, plan.n_steps)
    assert pe.em_plan(6000, 2, 3, budget).n_steps == 10  # a ≈ 0.04: round(10.4)
    wide = pe.em_plan(50_000, 10, 3, budget)
    assert wide.grid_dims < 10 and wide.n_steps == 20
    # the ramp: the same n, d, k with and without a full grid differ only while a < 1
    for rho in (1e-4, 1e-2, 1.0, 100.0):
        full, part = pe._n_steps(8000, 2, 3, rho, True), pe._n_steps(8000, 2, 3, rho, False)
        assert full <= part
        assert (full == part) == (pe._n_steps(8000, 2, 3, rho, False) > 20 or full == 20)
    assert pe._n_steps(8000, 2, 3, 1e-6, True) == pe.T_FULL_GRID
    assert pe._n_steps(8000, 2, 3, 1e4, True) == pe._n_steps(8000, 2, 3, 1e4, False) > 20


# ---------------------------------------------------------------------- issue 27: small shapes


def _small_component_steps(memory: bool, seed: int, steps: int = 10) -> float:
    """A 5 % component (2,500 of n = 5e4 rows, d = 10, ε = 1: the refining steps' noise, 0.36
    per entry of its second moments, spectral reach 2.3 times its scale) whose truth is
    elongated (variances 9 to 0.09 on rotated axes) starts at the truth and is updated by
    ``steps`` refining releases of its rows' exact clipped statistics (``memory``: combined
    over the steps, else each step alone as before issue 27's change); returns KL(truth ‖
    estimate)."""
    from privgauss.linalg import clip_weights

    n, d, k, rows = 50_000, 10, 3, 2_500
    plan = pe._base_plan(n, d, k, ApproxDP(1.0, 1e-6))
    t = plan.explore_steps + 1  # after the pick: one run, k components
    rng = np.random.default_rng([27, seed])
    Q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    truth = (Q * np.geomspace(9.0, 0.09, d)) @ Q.T
    X = rng.multivariate_normal(np.zeros(d), truth, size=rows)
    far = [np.full(d, 50.0), np.full(d, -50.0)]  # the other two: no rows of this one
    run = (np.array([0.05, 0.475, 0.475]), np.array([np.zeros(d)] + far),
           np.array([truth, np.eye(d), np.eye(d)]))
    mem = np.full((k, 2), np.nan) if memory else None
    r = plan.step_radius(t)
    release = Release.of(Accountant(ApproxDP(1e9, 0.5)), seed)
    for _ in range(steps):
        L = np.linalg.cholesky(run[2])
        Y = np.linalg.solve(L[0], (X - run[1][0]).T).T
        Y = Y * clip_weights(Y, r)[:, None]
        S = np.zeros((k, d))
        S[0] = Y.sum(axis=0)
        stats = (np.array([float(rows), 23_750.0, 23_750.0]), S,
                 np.array([Y.T @ Y, 23_750.0 * np.eye(d), 23_750.0 * np.eye(d)]))
        run = pe._em_release(stats, run, L, plan, t, release, n, "", mem)
    C, m = run[2][0], run[1][0]
    A = np.linalg.solve(C, truth)
    return 0.5 * float(np.trace(A) - d - np.linalg.slogdet(A)[1] + m @ np.linalg.solve(C, m))


def test_a_noisy_small_component_keeps_its_shape_over_the_steps() -> None:
    # issue 27: each refining step's release of a 5 % component's second moments is mostly
    # noise in its own frame; half of James–Stein's shrinkage kept half of each step's noise
    # and the shape random-walked away from the truth it started at; combined over the steps
    # by their precisions (_combine) the releases' noise averages out
    old = [_small_component_steps(False, seed) for seed in range(4)]
    new = [_small_component_steps(True, seed) for seed in range(4)]
    assert max(new) < max(old) and np.median(new) < 0.7 * np.median(old), (old, new)


def test_the_combination_follows_the_release_as_the_noise_vanishes() -> None:
    # consistency: the gain is 1 without noise, whatever the memory; ½ for a fresh estimate
    # whose release is pure noise; James–Stein's factor where EM moves; and pure-noise
    # releases about a settled estimate are averaged (half of James–Stein kept at least a
    # quarter of each step's noise variance)
    assert pe._gain(2.0, 0.0, 1e-3) == 1.0
    assert pe._gain(1.0, 1.0, 1.0) == pytest.approx(0.5)
    # EM's move read as DRIFT_SHARE = ½ of the excess 10 − 1 − 1: (1 + 4)/(1 + 4 + 1)
    assert pe.DRIFT_SHARE == 0.5
    assert pe._gain(10.0, 1.0, 1.0) == pytest.approx(5.0 / 6.0)
    assert pe._gain(1e6, 1.0, 1.0) > 1.0 - 1e-5  # EM moving far beyond the noise: followed
    assert pe._gain(2.0, 1.0, 1.0) == pytest.approx(0.5)  # no excess: the precisions
    d = 15
    C = np.diag(np.linspace(0.5, 2.0, d))
    out, ybar, _, _ = pe._combine(C, np.ones(d), 1e-9, 1e-9, np.array([1e-6, 1e-6]))
    np.testing.assert_allclose(out, C, atol=1e-6)
    np.testing.assert_allclose(ybar, np.ones(d), atol=1e-6)
    s = 0.5
    for seed in range(5):
        rng = np.random.default_rng(seed)
        mem = np.array([np.nan, np.nan])
        for _ in range(8):
            E = rng.normal(scale=s, size=(d, d))
            E = (E + E.T) / 2.0  # sd s on the diagonal, s/√2 off it: the mechanism's noise
            _, _, var_c, var_m = pe._combine(np.eye(d) + E, np.zeros(d), s, s, mem)
            mem = np.array([var_c, var_m])
        assert var_c < 0.25 * s * s  # 8 releases averaged: s²/9 at best


def test_a_fresh_estimate_weighs_as_much_as_a_release_of_the_same_noise(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # a fresh estimate's shape error is the release's noise relative to the released scale
    # (FRESH_RELATIVE): a pure-noise release of a component half as wide as its frame is
    # taken at a gain of at least ½ (the precisions of two equal estimates), where the noise
    # read as an absolute error had given its frame ~4× the weight (gain ~0.2); the scale is
    # taken as released either way, and without noise the release is followed
    d, s, scale = 15, 0.2, 0.5
    gains = {}
    for fresh in (False, True):
        monkeypatch.setattr(pe, "FRESH_RELATIVE", fresh)
        got = []
        for seed in range(6):
            E = np.random.default_rng(seed).normal(scale=s, size=(d, d))
            Cy = scale * np.eye(d) + (E + E.T) / 2.0
            out, _, _, _ = pe._combine(Cy, np.zeros(d), s, s, np.array([np.nan, np.nan]))
            D = Cy - np.trace(Cy) / d * np.eye(d)
            Do = out - np.trace(out) / d * np.eye(d)
            assert np.trace(out) == pytest.approx(np.trace(Cy))
            got.append(float(np.sqrt((Do * Do).sum() / (D * D).sum())))
        gains[fresh] = got
    assert min(gains[True]) >= 0.5 - 1e-12, gains
    assert max(gains[False]) < 0.3, gains
    C = np.diag(np.linspace(0.1, 0.6, d))
    out, _, _, _ = pe._combine(C, np.zeros(d), 1e-9, 1e-9, np.array([np.nan, np.nan]))
    np.testing.assert_allclose(out, C, atol=1e-6)


def test_declipping_cap_stands_only_while_the_noise_is_loud() -> None:
    # a direction de-clipped beyond the radius² is capped there while the step's noise reach
    # 2√d·s exceeds STEP_FLOOR; the cap grows like (STEP_FLOOR/f)^FLOOR_POWER below
    d, r = 10, 4.0
    C = np.diag([1e4] + [1.0] * (d - 1))
    assert np.linalg.eigvalsh(pe._declip_cap(C, r, 0.4))[-1] == pytest.approx(r * r)
    s = pe.STEP_FLOOR / (2.0 * math.sqrt(d)) / 10.0  # f = STEP_FLOOR / 10: cap 1e4·r²
    assert np.linalg.eigvalsh(pe._declip_cap(C, r, s))[-1] == pytest.approx(1e4, rel=1e-9)
    np.testing.assert_array_equal(pe._declip_cap(C, r, 1e-6), C)


def test_stacked_cap_and_floor_equal_the_per_component_ones_bit_for_bit() -> None:
    """The step processing caps and floors every run's components by one stacked call
    (:func:`_declip_cap_batch`, :func:`_floor_batch`); each matrix must come out bit for bit
    as :func:`_declip_cap` and :func:`_floor` give it alone (a stack of one) — capped or
    not, floored or not, noise loud or faint, d = 2 to 15, stacks of 1 to 18."""
    rng = np.random.default_rng(21)
    n_capped = n_same = 0
    for d, m in ((2, 5), (3, 1), (10, 18), (10, 3), (15, 7)):
        Q = np.linalg.qr(rng.standard_normal((m, d, d)))[0]
        lam = np.exp(rng.uniform(-6.0, 5.0, (m, d)))
        C = (Q * lam[:, None, :]) @ np.swapaxes(Q, 1, 2)
        C += 1e-12 * rng.standard_normal(C.shape)  # not exactly symmetric, as released
        s = np.exp(rng.uniform(-9.0, 0.0, m))
        r = 3.0
        capped = pe._declip_cap_batch(C, r, s)
        n_capped += sum(not np.array_equal(capped[i], C[i]) for i in range(m))
        n_same += sum(np.array_equal(capped[i], C[i]) for i in range(m))
        for i in range(m):
            np.testing.assert_array_equal(capped[i], pe._declip_cap(C[i], r, float(s[i])))
        floored = pe._floor_batch(C, s)
        for i in range(m):
            np.testing.assert_array_equal(floored[i], pe._floor(C[i], float(s[i])))
    assert n_capped >= 5 and n_same >= 5  # both branches exercised
    assert pe._floor_batch(np.empty((0, 4, 4)), np.empty(0)).shape == (0, 4, 4)
