"""Tests of privgauss.mixture.cluster_estimation: joint per-cluster clipped sums.

Brute-force joint sensitivities on random neighbouring pairs (a row replaced within its cluster,
moved across clusters, moved out of every cluster), also with adversarial frames; empirical
audits on the worst-case pairs, and the broken variant (vector-sum sensitivity τ instead of 2τ)
flagged; the clipping correction against the truth and against no correction; ledgers that sum
to the budget whatever the public frames; the ⊥ path.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from privgauss import EstimationFailed
from privgauss.audit import audit_mechanism
from privgauss.mechanisms import Release
from privgauss.mixture import cluster_estimation as ce
from privgauss.mixture.cluster_estimation import (
    ClusterFrame,
    cluster_sums,
    estimate_clusters,
    frame_from_public,
    release_cluster_sums,
    undo_clipping,
    undo_clipping_batch,
)
from privgauss.noise import NoiseSource
from privgauss.privacy import ZCDP, Accountant
from privgauss.sensitivity import joint_cluster_outer_sum_frobenius, joint_cluster_sum_l2

TAU = 1.7


def _frames(rng: np.random.Generator, k: int, d: int) -> list[ClusterFrame]:
    return [ClusterFrame(rng.normal(size=d) * 3, rng.normal(size=(d, d)) + 2 * np.eye(d))
            for _ in range(k)]


def _distance(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]):
    iu = np.triu_indices(a[1].shape[1])
    dv = float(np.linalg.norm(a[0] - b[0]))
    dm = float(np.linalg.norm(a[1] - b[1]))  # Frobenius of the stacked matrices
    du = float(np.linalg.norm(a[1][:, iu[0], iu[1]] - b[1][:, iu[0], iu[1]]))
    return dv, dm, du


@pytest.mark.parametrize("case", ["within", "across", "out"])
def test_brute_force_joint_sensitivity_is_bounded_and_nearly_attained(case: str) -> None:
    rng = np.random.default_rng(3)
    k, d = 3, 2
    frames = _frames(rng, k, d)
    worst = np.zeros(3)
    for _ in range(600):
        X = rng.normal(size=(12, d)) * rng.choice([0.3, 30.0], size=(12, 1))
        labels = rng.integers(-1, k, size=12)
        i = int(rng.integers(12))
        labels[i] = int(rng.integers(k))
        X2, labels2 = X.copy(), labels.copy()
        X2[i] = rng.normal(size=d) * rng.choice([0.3, 30.0])
        if case == "across":
            labels2[i] = (labels[i] + 1 + int(rng.integers(k - 1))) % k
        elif case == "out":
            labels2[i] = -1
        dv, dm, du = _distance(cluster_sums(X, labels, frames, TAU),
                               cluster_sums(X2, labels2, frames, TAU))
        assert dv <= joint_cluster_sum_l2(TAU) * (1 + 1e-9)
        assert du <= dm <= joint_cluster_outer_sum_frobenius(TAU) * (1 + 1e-9)
        worst = np.maximum(worst, [dv, dm, du])
    attained = {"within": (2 * TAU, math.sqrt(2) * TAU**2),
                "across": (math.sqrt(2) * TAU, math.sqrt(2) * TAU**2),
                "out": (TAU, TAU**2)}[case]
    assert worst[0] >= 0.97 * attained[0] and worst[1] >= 0.97 * attained[1]


def test_adversarial_frames_still_clip_every_row() -> None:
    """Frames from hostile public data (huge, overflowing, singular whiteners): every mapped row
    still has norm ≤ τ, so the sensitivities hold for any public data."""
    X = np.array([[1e300, -1e300], [1.0, 2.0], [0.0, 0.0], [-3.0, 1e10]])
    for W in (np.full((2, 2), 1e200), np.zeros((2, 2)), np.diag([1e-300, 1e300])):
        Z = ce.clipped_rows(X, ClusterFrame(np.array([5.0, -1e9]), W), TAU)
        assert np.isfinite(Z).all() and (np.linalg.norm(Z, axis=1) <= TAU).all()
    dup = frame_from_public(np.repeat([[1.0, 2.0]], 30, axis=0))  # duplicated public rows
    one = frame_from_public(np.array([[1e6, 1e6]]))  # a single far public row
    for f in (dup, one):
        assert np.isfinite(f.whitener).all() and np.isfinite(f.centre).all()


# --------------------------------------------------------------------------- privacy audits

A_RHO_V, A_RHO_M, A_DELTA = 0.25, 0.01, 1e-2
A_FRAMES = [ClusterFrame(np.zeros(2), np.eye(2)), ClusterFrame(np.full(2, 50.0), np.eye(2))]
A_X = np.array([[10.0, 0.0], [0.0, 0.3], [0.2, -0.1], [50.0, 50.2], [49.0, 50.0], [50.1, 49.9]])
A_LABELS = np.array([0, 0, 0, 1, 1, 1])
WITHIN = A_X.copy()
WITHIN[0] = [-10.0, 0.0]  # clipped to +τe1 → −τe1: the vector sum moves by 2τ
ACROSS = A_X.copy()
ACROSS[0] = [60.0, 50.0]  # leaves cluster 0 at +τe1, joins cluster 1 at +τe1


def _gaussian_epsilon(mu: float, delta: float) -> float:
    """Exact ε(δ) of a Gaussian mechanism with sensitivity/σ = μ (Balle–Wang 2018)."""
    def gap(e: float) -> float:
        return norm.cdf(-e / mu + mu / 2) - math.exp(e) * norm.cdf(-e / mu - mu / 2) - delta

    return brentq(gap, 0.0, 50.0)


def _release(data: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    labels = np.array([0 if np.linalg.norm(x) < 25 else 1 for x in data])  # per-row routing
    acct = Accountant(ZCDP(A_RHO_V + A_RHO_M))
    V, M = release_cluster_sums(
        data,
        labels,
        A_FRAMES,
        TAU,
        ZCDP(A_RHO_V),
        ZCDP(A_RHO_M),
        release=Release.of(acct, NoiseSource(rng)),
    )
    iu = np.triu_indices(2)
    return np.concatenate([V.ravel(), M[:, iu[0], iu[1]].ravel()])


# claimed: the whole release is a Gaussian mechanism with μ² = 2ρ_V + 2ρ_M at worst
CLAIMED = _gaussian_epsilon(math.sqrt(2 * (A_RHO_V + A_RHO_M)), A_DELTA)


@pytest.mark.slow
@pytest.mark.parametrize("neighbour", [WITHIN, ACROSS], ids=["within", "across"])
def test_joint_release_passes_the_audit_on_worst_case_pairs(neighbour: np.ndarray) -> None:
    result = audit_mechanism(_release, A_X, neighbour, epsilon=CLAIMED, delta=A_DELTA,
                             n_runs=6_000, random_state=0)
    assert result.passed, str(result)


@pytest.mark.slow
def test_vector_sensitivity_tau_instead_of_2tau_is_flagged(monkeypatch) -> None:
    monkeypatch.setattr(ce.sensitivity, "joint_cluster_sum_l2", lambda r: float(r))
    result = audit_mechanism(_release, A_X, WITHIN, epsilon=CLAIMED, delta=A_DELTA,
                             n_runs=8_000, random_state=0)  # measured: ε ≥ 2.2 > 1.5 claimed
    assert not result.passed, str(result)


# --------------------------------------------------------------------------- estimation


def test_undo_clipping_recovers_the_gaussian_and_no_correction_does_not() -> None:
    rng = np.random.default_rng(0)
    d = 4
    mean = np.array([0.4, -0.2, 0.0, 0.1])
    cov = np.diag([0.5, 1.0, 1.5, 2.0])
    Y = rng.multivariate_normal(mean, cov, size=400_000)
    tau = math.sqrt(d)
    Z = ce.clipped_rows(Y, ClusterFrame(np.zeros(d), np.eye(d)), tau)
    v, S = Z.mean(axis=0), Z.T @ Z / Z.shape[0]
    m_hat, c_hat = undo_clipping(v, S, tau)
    assert np.linalg.norm(m_hat - mean) < 0.02
    assert np.linalg.norm(c_hat - cov) < 0.05
    naive = np.linalg.norm(S - np.outer(v, v) - cov)
    assert naive > 10 * np.linalg.norm(c_hat - cov)


def _count_clipped_moments(monkeypatch) -> list[int]:
    """Count de-clipping's evaluations of the sample's clipped moments (one per iteration)."""
    calls = [0]
    real = ce._Sample.clipped_moments

    def counted(self, *args):
        calls[0] += 1
        return real(self, *args)

    monkeypatch.setattr(ce._Sample, "clipped_moments", counted)
    return calls


def test_undo_clipping_stops_at_a_constrained_fixed_point_with_the_capped_answer(
        monkeypatch) -> None:
    """Noisy moments with a negative eigenvalue pin Σ's eigenvalue at its floor: the residual
    cannot vanish, and the iteration stops once (δ, Σ) stops moving, with what running all
    _ITERATIONS steps gives (the stop rule saves the steps, not the answer)."""
    rng = np.random.default_rng(3)
    d = 8
    tau = math.sqrt(1.2 * d)
    B = rng.standard_normal((d, d))
    S_obs = 0.4 * np.eye(d) + 0.025 * (B + B.T)
    S_obs[0, 0] = -0.3  # no Gaussian's clipped rows have this covariance
    v = 0.3 * rng.standard_normal(d)
    S = S_obs + np.outer(v, v)
    calls = _count_clipped_moments(monkeypatch)
    m_fast, c_fast = undo_clipping(v, S, tau)
    fast_calls = calls[0]
    assert np.linalg.eigvalsh(c_fast)[0] <= ce._MIN_EIG * tau * tau / d * (1 + 1e-9)
    monkeypatch.setattr(ce, "_STILL", 0.0)
    calls[0] = 0
    m_cap, c_cap = undo_clipping(v, S, tau)
    assert calls[0] == ce._ITERATIONS and fast_calls < ce._ITERATIONS // 2
    scale = float(np.abs(c_cap).max())
    assert np.abs(m_fast - m_cap).max() < 1e-6 * max(float(np.abs(m_cap).max()), 1.0)
    assert np.abs(c_fast - c_cap).max() < 1e-6 * scale


def test_sample_deficit_is_what_clipping_takes_from_the_whitened_sample() -> None:
    """deficit(t²) = I − the second moment of clip_t(u) over the whole (antithetic) sample,
    and trace_deficit its trace and the share of rows beyond t (a wrong factor of the
    antithetic half, or 1 − t/‖u‖ for 1 − t²/‖u‖², fails here)."""
    d = 5
    sample = ce._default_sample(d)
    U = np.vstack([sample.H, -sample.H])
    norms = np.linalg.norm(U, axis=1)
    t2 = np.array([2.0, 5.0, 9.0, 400.0])
    deficit = sample.deficit(t2)
    tr_def, share = sample.trace_deficit(t2)
    for j, t in enumerate(np.sqrt(t2)):
        Z = U * np.minimum(1.0, t / norms)[:, None]
        assert np.abs(np.eye(d) - Z.T @ Z / U.shape[0] - deficit[j]).max() < 1e-12
        assert abs(tr_def[j] - np.trace(deficit[j])) < 1e-12
        assert abs(share[j] - (norms > t).mean()) < 1e-15
    assert not deficit[-1].any() and tr_def[-1] == 0.0  # no row beyond t = 20


@pytest.mark.parametrize(("d", "lam"), [(3, 0.5), (5, 1.0), (5, 2.0), (10, 1.0), (10, 2.0)])
def test_undo_clipping_starts_at_the_answer_for_a_centred_isotropic_gaussian(
        monkeypatch, d: int, lam: float) -> None:
    """The start (the observed covariance plus what clipping takes from N(0, λI) on the sample,
    λ solved from the observed mean variance) is exact when the rows are the sample itself
    scaled by √λ: one evaluation confirms it (four to seven without the start)."""
    tau = math.sqrt(d)
    sample = ce._default_sample(d)
    U = math.sqrt(lam) * np.vstack([sample.H, -sample.H])
    Z = U * np.minimum(1.0, tau / np.linalg.norm(U, axis=1))[:, None]
    calls = _count_clipped_moments(monkeypatch)
    delta, cov = undo_clipping(Z.mean(axis=0), Z.T @ Z / Z.shape[0], tau)
    assert calls[0] == 1
    assert np.abs(cov - lam * np.eye(d)).max() < 1e-11 * lam
    assert np.abs(delta).max() < 1e-14


def test_undo_clipping_predicted_stop_returns_what_one_more_evaluation_confirms(
        monkeypatch) -> None:
    """Private EM's releases (rows near N(0, I) in their frame, τ² = 2.5·d): stopping when
    the residual predicted from the last two is below a quarter of the tolerance saves the
    evaluation that would confirm it (in 3 of these 4), and returns the same (δ, Σ) bit for
    bit."""
    rng = np.random.default_rng(5)
    d = 10
    tau = math.sqrt(2.5 * d)
    vs, Ss = [], []
    for off, pert in ((0.03, 0.05), (0.05, 0.1), (0.01, 0.02), (0.1, 0.2)):
        B = rng.standard_normal((d, d))
        cov = np.eye(d) + pert * (B + B.T) / (2 * math.sqrt(d))
        Y = rng.multivariate_normal(off * rng.standard_normal(d), cov, 50_000)
        Z = ce.clipped_rows(Y, ClusterFrame(np.zeros(d), np.eye(d)), tau)
        vs.append(Z.mean(axis=0))
        Ss.append(Z.T @ Z / Z.shape[0])
    calls = _count_clipped_moments(monkeypatch)
    saved = 0
    for v, S in zip(vs, Ss, strict=True):
        monkeypatch.setattr(ce, "_PREDICTED", 0.25)
        calls[0] = 0
        delta, cov = undo_clipping(v, S, tau)
        predicted = calls[0]
        monkeypatch.setattr(ce, "_PREDICTED", 0.0)
        calls[0] = 0
        delta_full, cov_full = undo_clipping(v, S, tau)
        assert predicted in (calls[0], calls[0] - 1)
        saved += calls[0] - predicted
        assert np.array_equal(delta, delta_full) and np.array_equal(cov, cov_full)
    assert saved >= 3


@pytest.mark.parametrize("gather_max", [0, ce._GATHER_MAX, 10**9])
def test_undo_clipping_batch_is_each_component_alone_bit_for_bit(monkeypatch,
                                                                 gather_max: int) -> None:
    """A stack of components that stop at different iterations (moments matched, a
    constrained fixed point, nothing clipped, heavy clipping): each gets exactly what it gets
    alone, and the stack iterates only as long as its slowest component — with every
    component's clipped rows corrected alone, all gathered, or as the default splits them."""
    monkeypatch.setattr(ce, "_GATHER_MAX", gather_max)
    rng = np.random.default_rng(11)
    d = 5
    tau = math.sqrt(1.2 * d)
    vs, Ss = [], []
    for scale in (0.6, 1.0, 3.0):  # a sample's clipped moments: light to heavy clipping
        Y = rng.multivariate_normal(0.3 * rng.standard_normal(d), scale * np.eye(d), 20_000)
        Z = ce.clipped_rows(Y, ClusterFrame(np.zeros(d), np.eye(d)), tau)
        vs.append(Z.mean(axis=0))
        Ss.append(Z.T @ Z / Z.shape[0])
    B = rng.standard_normal((d, d))
    S_neg = 0.4 * np.eye(d) + 0.025 * (B + B.T)
    S_neg[0, 0] = -0.3  # no Gaussian clips to this: stops once it no longer moves
    v_neg = 0.3 * rng.standard_normal(d)
    vs.append(v_neg)
    Ss.append(S_neg + np.outer(v_neg, v_neg))
    vs.append(np.full(d, 0.01))  # tiny: no sample row can be clipped
    Ss.append(1e-3 * np.eye(d) + np.outer(vs[-1], vs[-1]))
    calls = _count_clipped_moments(monkeypatch)
    alone, evals = [], []
    for v, S in zip(vs, Ss, strict=True):
        calls[0] = 0
        alone.append(undo_clipping(v, S, tau))
        evals.append(calls[0])
    calls[0] = 0
    deltas, covs = undo_clipping_batch(np.array(vs), np.array(Ss), tau)
    assert calls[0] == max(evals) and min(evals) < max(evals)
    for j, (dl, cov) in enumerate(alone):
        assert np.array_equal(deltas[j], dl) and np.array_equal(covs[j], cov), j
    order = [3, 0, 4, 2, 1]  # the stack's order does not matter either
    deltas, covs = undo_clipping_batch(np.array(vs)[order], np.array(Ss)[order], tau)
    for i, j in enumerate(order):
        assert np.array_equal(deltas[i], alone[j][0]) and np.array_equal(covs[i], alone[j][1])
    empty = undo_clipping_batch(np.zeros((0, d)), np.zeros((0, d, d)), tau)
    assert empty[0].shape == (0, d) and empty[1].shape == (0, d, d)


def _mixture(seed: int, n: int = 6000):
    rng = np.random.default_rng(seed)
    mus = np.array([[0.0, 0.0, 0.0], [20.0, 0.0, 0.0]])
    covs = np.array([np.diag([1.0, 2.0, 0.5]), np.array([[2, 0.5, 0], [0.5, 1, 0], [0, 0, 1]])])
    labels = rng.integers(0, 2, size=n)
    X = np.stack([rng.multivariate_normal(mus[j], covs[j]) for j in labels])
    P_labels = rng.integers(0, 2, size=60)
    P = np.stack([rng.multivariate_normal(mus[j], covs[j]) for j in P_labels])
    return X, labels, P, P_labels


def test_large_rho_matches_the_non_private_cluster_estimates_and_ledger_sums() -> None:
    X, labels, P, P_labels = _mixture(1)
    frames = [frame_from_public(P[P_labels == j]) for j in range(2)]
    acct = Accountant(ZCDP(1e8))
    w, m, c = estimate_clusters(
        X,
        labels,
        frames,
        ZCDP(1e8),
        count_share=0.05,
        release=Release.of(acct, 0),
    )
    assert math.isclose(acct.spent.rho, 1e8, rel_tol=1e-12)
    for j in range(2):
        rows = X[labels == j]
        assert abs(w[j] - rows.shape[0] / X.shape[0]) < 1e-3
        assert np.linalg.norm(m[j] - rows.mean(axis=0)) < 0.05
        assert np.linalg.norm(c[j] - np.cov(rows, rowvar=False)) < 0.15


def test_spend_and_noise_do_not_depend_on_the_data_or_public_frames() -> None:
    """Same budget, two very different data sets and frames (one from duplicated public rows):
    the ledgers agree entry by entry (cost, sensitivity, noise scale) and sum to the budget."""
    X, labels, P, P_labels = _mixture(2)
    good = [frame_from_public(P[P_labels == j]) for j in range(2)]
    bad = [frame_from_public(np.repeat(P[:1], 5, axis=0)), frame_from_public(P[:1] + 1e6)]
    ledgers = []
    for data, frames in ((X, good), (X[::-1] * 3 + 7, bad)):
        acct = Accountant(ZCDP(0.4))
        estimate_clusters(
            data,
            labels,
            frames,
            ZCDP(0.4),
            count_share=0.1,
            release=Release.of(acct, 5),
        )
        assert math.isclose(acct.spent.rho, 0.4, rel_tol=1e-12)
        ledgers.append([(e.step, e.cost.rho, e.sensitivity, e.noise_scale) for e in acct.ledger])
    assert ledgers[0] == ledgers[1]


def test_a_tiny_cluster_is_a_dp_failure_with_the_budget_spent() -> None:
    X, labels, P, P_labels = _mixture(3, n=400)
    labels = labels.copy()
    labels[labels == 1] = -1  # cluster 1 is empty
    frames = [frame_from_public(P[P_labels == j]) for j in range(2)]
    acct = Accountant(ZCDP(50.0))
    with pytest.raises(EstimationFailed, match="d \\+ 2"):
        estimate_clusters(
            X,
            labels,
            frames,
            ZCDP(50.0),
            count_share=0.05,
            release=Release.of(acct, 0),
        )
    assert math.isclose(acct.spent.rho, 50.0, rel_tol=1e-12)
