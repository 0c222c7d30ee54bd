"""Tests of the empirical privacy auditor on mechanisms with known (and deliberately broken) ε."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from privgauss.audit import AuditResult, audit_mechanism

EPS = 1.0
DELTA = 1e-5

# Replace-one neighbours at the clip boundary: the clipped sums differ by exactly 1 = sensitivity.
D_SCALAR = np.array([0.0] * 9 + [1.0])
D_SCALAR_NEIGHBOUR = np.zeros(10)

# 5-dim means of 10 rows in [0, 1]^5: one row moved from a corner to the opposite one, so the
# means differ by the full L2 sensitivity sqrt(5) / 10.
N_ROWS, DIM = 10, 5
D_VECTOR = np.zeros((N_ROWS, DIM))
D_VECTOR[-1] = 1.0
D_VECTOR_NEIGHBOUR = np.zeros((N_ROWS, DIM))
VECTOR_SENSITIVITY = math.sqrt(DIM) / N_ROWS


def classical_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    return sensitivity * math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


def laplace_sum(scale: float) -> Callable[[np.ndarray, np.random.Generator], float]:
    def mechanism(data: np.ndarray, rng: np.random.Generator) -> float:
        return float(np.clip(data, 0.0, 1.0).sum() + rng.laplace(0.0, scale))

    return mechanism


def gaussian_sum(sigma: float) -> Callable[[np.ndarray, np.random.Generator], float]:
    def mechanism(data: np.ndarray, rng: np.random.Generator) -> float:
        return float(np.clip(data, 0.0, 1.0).sum() + rng.normal(0.0, sigma))

    return mechanism


def gaussian_mean(sigma: float) -> Callable[[np.ndarray, np.random.Generator], np.ndarray]:
    def mechanism(data: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return np.clip(data, 0.0, 1.0).mean(axis=0) + rng.normal(0.0, sigma, size=data.shape[1])

    return mechanism


def randomized_response(
    flip_probability: float, labels: tuple[Any, Any] = ("no", "yes")
) -> Callable[[np.ndarray, np.random.Generator], Any]:
    """Report the last record's bit, flipped with ``flip_probability``."""

    def mechanism(data: np.ndarray, rng: np.random.Generator) -> Any:
        bit = int(data[-1])
        if rng.random() < flip_probability:
            bit = 1 - bit
        return labels[bit]

    return mechanism


RR_DATA = np.array([0, 1, 0, 1])
RR_NEIGHBOUR = np.array([0, 1, 0, 0])


# --------------------------------------------------------------------------- Laplace


def test_correct_laplace_passes_and_bound_is_tight() -> None:
    result = audit_mechanism(
        laplace_sum(1.0 / EPS), D_SCALAR, D_SCALAR_NEIGHBOUR, epsilon=EPS, n_runs=50_000
    )
    assert isinstance(result, AuditResult)
    assert result.passed
    assert result.epsilon_lower_bound <= EPS
    # Tightness: the best event has p = 1/2, q = 1/(2e); 25k estimation runs per side and
    # 99.9% confidence leave room for about 0.93. A weak auditor would not get close.
    assert result.epsilon_lower_bound > 0.85
    assert result.n_runs == 50_000
    assert result.claimed_epsilon == EPS and result.delta == 0.0 and result.confidence == 0.999
    assert "D" in result.event


def test_laplace_with_halved_sensitivity_is_flagged() -> None:
    result = audit_mechanism(
        laplace_sum(0.5 / EPS), D_SCALAR, D_SCALAR_NEIGHBOUR, epsilon=EPS, n_runs=50_000
    )
    assert not result.passed
    assert result.epsilon_lower_bound > 1.5  # true ε is 2
    assert result.epsilon_lower_bound <= 2.0
    assert str(result).startswith("FAILED")


# --------------------------------------------------------------------------- Gaussian


def test_classical_gaussian_mechanism_passes() -> None:
    sigma = classical_gaussian_sigma(1.0, EPS, DELTA)
    result = audit_mechanism(
        gaussian_sum(sigma), D_SCALAR, D_SCALAR_NEIGHBOUR, epsilon=EPS, delta=DELTA, n_runs=50_000
    )
    assert result.passed
    assert result.epsilon_lower_bound < EPS
    assert str(result).startswith("PASSED")


def test_gaussian_with_too_little_noise_is_flagged() -> None:
    sigma = classical_gaussian_sigma(1.0, EPS, DELTA) / 3.0  # true ε at this δ is about 2.5
    result = audit_mechanism(
        gaussian_sum(sigma), D_SCALAR, D_SCALAR_NEIGHBOUR, epsilon=EPS, delta=DELTA, n_runs=100_000
    )
    assert not result.passed
    assert result.epsilon_lower_bound > 1.1


# --------------------------------------------------------------------------- discrete outputs


def test_randomized_response_with_labels() -> None:
    correct = randomized_response(1.0 / (1.0 + math.exp(EPS)))
    result = audit_mechanism(correct, RR_DATA, RR_NEIGHBOUR, epsilon=EPS, n_runs=20_000)
    assert result.passed
    assert result.epsilon_lower_bound > 0.8
    assert "output ==" in result.event

    broken = randomized_response(0.1)  # true ε = ln 9 ≈ 2.2
    result = audit_mechanism(broken, RR_DATA, RR_NEIGHBOUR, epsilon=EPS, n_runs=20_000)
    assert not result.passed
    assert 1.8 < result.epsilon_lower_bound <= math.log(9.0)


def test_randomized_response_with_numeric_bits() -> None:
    correct = randomized_response(1.0 / (1.0 + math.exp(EPS)), labels=(0, 1))
    assert audit_mechanism(correct, RR_DATA, RR_NEIGHBOUR, epsilon=EPS, n_runs=20_000).passed
    broken = randomized_response(0.1, labels=(0, 1))
    assert not audit_mechanism(broken, RR_DATA, RR_NEIGHBOUR, epsilon=EPS, n_runs=20_000).passed


def test_discrete_outputs_with_many_values() -> None:
    """k-ary randomized response with tuple outputs (hashable, non-numeric)."""
    k = 4

    def mechanism(data: np.ndarray, rng: np.random.Generator) -> tuple[str, int]:
        value = int(data[-1])
        if rng.random() < 0.5:  # keep with prob 1/2 + 1/(2k), else uniform
            value = int(rng.integers(k))
        return ("bucket", value)

    # P[out = v | v] = 5/8, P[out = v | other] = 1/8: true ε = ln 5
    result = audit_mechanism(
        mechanism, np.array([0, 2]), np.array([0, 1]), epsilon=1.0, n_runs=20_000
    )
    assert not result.passed
    assert 1.3 < result.epsilon_lower_bound <= math.log(5.0)


def test_unhashable_non_numeric_output_needs_statistic() -> None:
    def mechanism(data: np.ndarray, rng: np.random.Generator) -> dict[str, float]:
        return {"value": float(data.sum() + rng.laplace())}

    with pytest.raises(TypeError):
        audit_mechanism(mechanism, D_SCALAR, D_SCALAR_NEIGHBOUR, epsilon=EPS, n_runs=200)
    result = audit_mechanism(
        mechanism,
        D_SCALAR,
        D_SCALAR_NEIGHBOUR,
        epsilon=EPS,
        n_runs=20_000,
        statistic=lambda out: out["value"],
    )
    assert result.passed and result.epsilon_lower_bound > 0.7


# --------------------------------------------------------------------------- vector outputs


@pytest.mark.slow
def test_vector_output_default_projection() -> None:
    sigma = classical_gaussian_sigma(VECTOR_SENSITIVITY, EPS, DELTA)
    correct = audit_mechanism(
        gaussian_mean(sigma), D_VECTOR, D_VECTOR_NEIGHBOUR, epsilon=EPS, delta=DELTA, n_runs=50_000
    )
    assert correct.passed
    assert "<stat, w>" in correct.event

    broken = audit_mechanism(
        gaussian_mean(sigma / 4.0),
        D_VECTOR,
        D_VECTOR_NEIGHBOUR,
        epsilon=EPS,
        delta=DELTA,
        n_runs=50_000,
    )
    assert not broken.passed
    assert broken.epsilon_lower_bound > 1.3


def test_vector_statistic_is_projected() -> None:
    sigma = classical_gaussian_sigma(VECTOR_SENSITIVITY, EPS, DELTA) / 4.0
    inner = gaussian_mean(sigma)

    def mechanism(data: np.ndarray, rng: np.random.Generator) -> dict[str, Any]:
        return {"mean": inner(data, rng), "n": data.shape[0]}

    result = audit_mechanism(
        mechanism,
        D_VECTOR,
        D_VECTOR_NEIGHBOUR,
        epsilon=EPS,
        delta=DELTA,
        n_runs=20_000,
        statistic=lambda out: out["mean"],
    )
    assert not result.passed


# --------------------------------------------------------------------------- sanity


def test_identical_datasets_give_zero() -> None:
    result = audit_mechanism(
        laplace_sum(0.01), D_SCALAR, D_SCALAR.copy(), epsilon=EPS, n_runs=10_000
    )
    assert result.epsilon_lower_bound == 0.0
    assert result.passed


def test_non_private_mechanism_gets_large_bound() -> None:
    def mechanism(data: np.ndarray, rng: np.random.Generator) -> float:
        return float(data.sum())

    result = audit_mechanism(mechanism, D_SCALAR, D_SCALAR_NEIGHBOUR, epsilon=EPS, n_runs=20_000)
    assert not result.passed
    assert result.epsilon_lower_bound > 7.0  # limited only by the number of runs


def test_reproducible_with_same_seed() -> None:
    mechanism = laplace_sum(1.0)
    kwargs: dict[str, Any] = {"epsilon": EPS, "n_runs": 2_000}
    a = audit_mechanism(mechanism, D_SCALAR, D_SCALAR_NEIGHBOUR, random_state=7, **kwargs)
    b = audit_mechanism(mechanism, D_SCALAR, D_SCALAR_NEIGHBOUR, random_state=7, **kwargs)
    c = audit_mechanism(mechanism, D_SCALAR, D_SCALAR_NEIGHBOUR, random_state=8, **kwargs)
    assert a == b
    assert str(a) == str(b)
    assert (a.epsilon_lower_bound, a.event) != (c.epsilon_lower_bound, c.event)


def test_progress_bar(capsys: pytest.CaptureFixture[str]) -> None:
    result = audit_mechanism(
        laplace_sum(1.0), D_SCALAR, D_SCALAR_NEIGHBOUR, epsilon=EPS, n_runs=2_500, progress=True
    )
    assert result.n_runs == 2_500
    assert "privacy audit" in capsys.readouterr().err


@pytest.mark.parametrize(
    "kwargs",
    [
        {"epsilon": 0.0},
        {"epsilon": -1.0},
        {"epsilon": math.inf},
        {"epsilon": 1.0, "delta": -0.1},
        {"epsilon": 1.0, "delta": 1.0},
        {"epsilon": 1.0, "n_runs": 99},
        {"epsilon": 1.0, "n_runs": 1000.0},
        {"epsilon": 1.0, "confidence": 0.0},
        {"epsilon": 1.0, "confidence": 1.0},
    ],
)
def test_invalid_inputs_raise(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        audit_mechanism(laplace_sum(1.0), D_SCALAR, D_SCALAR_NEIGHBOUR, **kwargs)


def test_inconsistent_or_non_finite_outputs_raise() -> None:
    def ragged(data: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return np.zeros(2 + int(rng.random() < 0.5))

    def nan(data: np.ndarray, rng: np.random.Generator) -> float:
        return math.nan

    with pytest.raises(ValueError):
        audit_mechanism(ragged, D_SCALAR, D_SCALAR_NEIGHBOUR, epsilon=EPS, n_runs=200)
    with pytest.raises(ValueError):
        audit_mechanism(nan, D_SCALAR, D_SCALAR_NEIGHBOUR, epsilon=EPS, n_runs=200)


def test_two_separated_clusters_get_the_largest_bound_the_runs_allow() -> None:
    # D and D' give outputs in two clusters with a gap between them (e.g. an outcome that
    # differs, plus noise): a threshold in the gap separates every estimation run, so the bound
    # is the one of k_p = n, k_q = 0 — not a threshold at the selection half's extreme value,
    # which fresh runs of the same cluster cross
    from privgauss.audit.mechanism import _log_ratio_bound

    def mechanism(data: float, rng: np.random.Generator) -> float:
        return data + rng.normal(0.0, 0.01)

    m, alpha = 200, (1 - 0.999) / 2
    best = float(_log_ratio_bound(np.array([m]), m, np.array([0]), m, 0.0, alpha)[0])
    for seed in range(20):  # a threshold at an extreme is crossed with probability ~1/2
        res = audit_mechanism(mechanism, 0.0, 1.0, epsilon=EPS, n_runs=400, random_state=seed)
        assert res.epsilon_lower_bound == pytest.approx(best), str(res)
