"""Basic DP mechanisms.

Every mechanism takes its sensitivity explicitly (see :mod:`privgauss.sensitivity`) and a budget,
**charges the accountant before drawing any noise** (so an over-budget release raises
:class:`~privgauss.exceptions.PrivacyBudgetError` with nothing drawn) and writes a ledger entry
with public metadata only. Noise comes from a :class:`~privgauss.noise.NoiseSource`.

Neighbouring datasets are those for which the statistic moves by at most ``sensitivity``; the
callers derive it for replace-one neighbours.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .calibration import (
    check_sensitivity,
    gaussian_sigma,
    gaussian_sigma_analytic,
    gaussian_sigma_zcdp,
    truncated_laplace_bound,
)
from .exceptions import PrivacyBudgetError
from .noise import NoiseSource, RandomState, as_noise
from .privacy import (
    ZCDP,
    Accountant,
    ApproxDP,
    Budget,
    LedgerEntry,
    has_delta,
    is_pure,
    pure_epsilon,
)
from .privacy.budgets import MIN_EPS
from .sensitivity import (
    gaussian_stability_histogram_threshold,
    histogram_l1,
    histogram_l2,
    soft_counts_l2,
    soft_outer_sums_frobenius,
    soft_statistics_zcdp,
    soft_sums_l2,
    stability_histogram_threshold,
)


@dataclass(frozen=True)
class Release:
    """Where a computation's releases go: the accountant charged, the noise source drawn from
    and the prefix of its ledger steps — what the algorithms pass down instead of an
    (accountant, noise, step) triple.

    Parameters
    ----------
    accountant : Accountant
        Charged (before any noise is drawn) for every release made through this context.
    noise : NoiseSource
        The noise source (its :attr:`~privgauss.noise.NoiseSource.rng` gives the non-noise
        randomness: permutations, subsamples). Build a context with :meth:`of` to accept a
        seed or None.
    step : str
        Prefix of the ledger steps charged through this context ("" for none).

    Examples
    --------
    >>> import privgauss as pg
    >>> from privgauss.mechanisms import Release
    >>> rel = Release.of(pg.Accountant(pg.ZCDP(1.0)), 0, "fit")
    >>> rel.at("round-1").step
    'fit/round-1'
    """

    accountant: Accountant
    noise: NoiseSource
    step: str = ""

    @classmethod
    def of(cls, accountant: Accountant, noise: RandomState = None, step: str = "") -> Release:
        """A context for ``accountant`` and the noise source of ``noise`` (a
        :class:`NoiseSource`, a seed, a Generator, or None for secure noise)."""
        return cls(accountant, as_noise(noise), step)

    def name(self, step: str) -> str:
        """The ledger name of ``step`` under this context's prefix."""
        return f"{self.step}/{step}" if self.step and step else (self.step or step)

    def at(self, step: str) -> Release:
        """The same accountant and noise, with steps named under ``step`` (see :meth:`name`)."""
        return replace(self, step=self.name(step))

    def sub(self, label: str) -> Release:
        """The same accountant and noise, with steps named ``"<step> <label>"``: a numbered or
        named part of this context's step (CoinPress's "coinpress-gaussian cov 2/4")."""
        return replace(self, step=f"{self.step} {label}")

    def named(self, default: str) -> Release:
        """This context, its step prefix ``default`` when it has none (an algorithm's own
        name when its caller gave no prefix)."""
        return self if self.step else replace(self, step=default)

    def child(self, name: str, total: Budget | None = None) -> Release:
        """A context charging a child accountant (:meth:`Accountant.child`) whose steps are
        listed here under ``name``; the child's own steps start unprefixed."""
        return Release(self.accountant.child(name, total), self.noise)

    def prepaid(self, entry: LedgerEntry, total: Budget, name: str = "") -> Release:
        """A context for a sub-computation already paid for by ``entry``
        (:meth:`Accountant.prepaid`)."""
        return Release(self.accountant.prepaid(entry, total, name), self.noise)

    @property
    def rng(self) -> np.random.Generator:
        """The noise source's generator for non-noise randomness."""
        return self.noise.rng


def _values(value: Any, what: str = "released value") -> np.ndarray:
    """``value`` as a float array, refused before any charge when it is not numeric (the message
    never quotes the data)."""
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"the {what} must be a real number or an array of real numbers") from None


def _counts(count: Any) -> np.ndarray:
    """Integer counts as an int64 array, refused before any charge when they are not finite
    integers."""
    if isinstance(count, np.ndarray | np.integer | int) and np.asarray(count).dtype.kind in "iub":
        return np.asarray(count, dtype=np.int64)
    c = _values(count, "count")
    if not (np.all(np.isfinite(c)) and np.all(c == np.round(c)) and np.all(np.abs(c) < 2**62)):
        raise ValueError("counts must be finite integers")
    return c.astype(np.int64)


# ----------------------------------------------------------------------------------------------
# Mechanisms
# ----------------------------------------------------------------------------------------------


def _charge(
    accountant: Accountant,
    cost: Budget,
    step: str,
    mechanism: str,
    sensitivity: float | None,
    scale: float | None,
    note: str = "",
) -> None:
    accountant.spend(
        cost, step=step, mechanism=mechanism, sensitivity=sensitivity, noise_scale=scale, note=note
    )


def gaussian_mechanism(
    value: Any,
    sensitivity: float,
    budget: Budget,
    *,
    accountant: Accountant,
    noise: RandomState = None,
    step: str = "",
) -> np.ndarray:
    """Release ``value`` (scalar or array) plus N(0, σ²) noise per entry, where ``sensitivity``
    bounds the L2 norm of the change of the whole array between neighbours.

    ρ-zCDP with σ = Δ₂/√(2ρ), or (ε, δ)-DP with the analytic calibration.
    """
    value = _values(value)
    sigma = gaussian_sigma(sensitivity, budget)
    _charge(accountant, budget, step, "gaussian", float(sensitivity), sigma)
    return as_noise(noise).gaussian(value, sigma)


def laplace_mechanism(
    value: Any,
    sensitivity: float,
    budget: Budget,
    *,
    accountant: Accountant,
    noise: RandomState = None,
    step: str = "",
) -> np.ndarray:
    """Release ``value`` plus Laplace(Δ₁/ε) noise per entry; ε-DP when ``sensitivity`` bounds the
    L1 norm of the change between neighbours."""
    value = _values(value)
    eps = pure_epsilon(budget, "Laplace mechanism")
    scale = check_sensitivity(sensitivity) / eps
    _charge(accountant, budget, step, "laplace", float(sensitivity), scale)
    return as_noise(noise).laplace(value, scale)


def frobenius_coordinates(matrix: np.ndarray) -> np.ndarray:
    """The upper triangles (diagonal included) of symmetric matrices ``matrix`` (shape
    (..., d, d)) with their off-diagonal entries multiplied by √2: an isometry from the
    symmetric matrices with the Frobenius norm onto R^{d(d+1)/2} with the L2 norm, so a
    Frobenius sensitivity is the L2 sensitivity of these coordinates."""
    d = matrix.shape[-1]
    iu = _triu(d)
    return matrix[..., iu[0], iu[1]] * _off_diagonal_weights(d)


def from_frobenius_coordinates(values: np.ndarray, d: int) -> np.ndarray:
    """The symmetric matrices (shape (..., d, d)) whose :func:`frobenius_coordinates` are
    ``values``."""
    iu = _triu(d)
    upper = np.asarray(values, dtype=np.float64) / _off_diagonal_weights(d)
    out = np.empty((*upper.shape[:-1], d, d))
    out[..., iu[0], iu[1]] = upper
    out[..., iu[1], iu[0]] = upper
    return out


@functools.lru_cache(maxsize=64)
def _triu(d: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.triu_indices(d)``, read-only, computed once per d (private EM releases a stack of
    second moments per run and step: rebuilding the indices four times a release was a
    tenth of an ε = 1e4 fit's release processing at n = 5e4, d = 10, k = 3)."""
    rows, cols = np.triu_indices(d)
    rows.flags.writeable = False
    cols.flags.writeable = False
    return rows, cols


@functools.lru_cache(maxsize=64)
def _off_diagonal_weights(d: int) -> np.ndarray:
    """1 on the diagonal's coordinates, √2 off it (read-only, once per d)."""
    iu = _triu(d)
    w = np.where(iu[0] == iu[1], 1.0, math.sqrt(2.0))
    w.flags.writeable = False
    return w


def symmetric_matrix_mechanism(
    matrix: Any,
    sensitivity: float,
    budget: Budget,
    *,
    accountant: Accountant,
    noise: RandomState = None,
    step: str = "",
) -> np.ndarray:
    """Release a symmetric matrix (or a stack of them, shape (k, d, d), released jointly).

    zCDP / (ε, δ): ``sensitivity`` bounds the Frobenius norm of the change (of the whole
    stack). The Gaussian mechanism runs on the :func:`frobenius_coordinates`, whose L2
    sensitivity that is: each diagonal entry gets noise of standard deviation σ (the ledger's
    ``noise_scale``), each off-diagonal entry σ/√2 (it appears twice in the Frobenius norm).
    The noise's Frobenius norm is then σ²·d(d+1)/2 in expectation, where noise of σ on every
    upper-triangle entry (as private, and the usual choice) costs σ²·d². Tight: a change
    r²(e₁e₂ᵀ + e₂e₁ᵀ) and a change r²(e₁e₁ᵀ − e₂e₂ᵀ), both of Frobenius norm √2·r², move the
    coordinates by the whole sensitivity.
    Pure ε: Laplace noise, ``sensitivity`` bounds the L1 norm of the change of the upper
    triangle(s).
    The output is symmetric but not necessarily PSD (project with :func:`linalg.project_psd`).
    """
    m = _values(matrix, "matrix")
    if m.ndim not in (2, 3) or m.shape[-1] != m.shape[-2]:
        raise ValueError("symmetric_matrix_mechanism needs a square matrix or a stack of them")
    m = (m + np.swapaxes(m, -1, -2)) / 2
    src = as_noise(noise)
    if is_pure(budget):
        eps = pure_epsilon(budget, "symmetric Laplace mechanism")
        scale = check_sensitivity(sensitivity) / eps
        _charge(accountant, budget, step, "symmetric-laplace", float(sensitivity), scale)
        if m.ndim == 2:
            return src.symmetric(m, scale, "laplace")
        return np.stack([src.symmetric(mj, scale, "laplace") for mj in m])
    scale = gaussian_sigma(sensitivity, budget)
    _charge(accountant, budget, step, "symmetric-gaussian", float(sensitivity), scale)
    d = m.shape[-1]
    noisy = src.gaussian(frobenius_coordinates(m).ravel(), scale)
    return from_frobenius_coordinates(np.reshape(noisy, (*m.shape[:-2], -1)), d)


def soft_statistics_mechanism(
    counts: Any,
    sums: Any,
    moments: Any,
    radius: float,
    rhos: tuple[float, float, float],
    *,
    accountant: Accountant,
    noise: RandomState = None,
    step: str = "",
) -> tuple[Any, np.ndarray, Any]:
    """Release an EM step's soft counts N (k), weighted sums S (k × d, any shape) and weighted
    second moments M (k × d × d, or one pooled d × d) of rows clipped to ``radius``, together:
    each block gets the Gaussian noise that alone would make it ``rhos`` = (ρ_N, ρ_S, ρ_M)
    zCDP (σ = Δ/√(2ρ) with :func:`~privgauss.sensitivity.soft_counts_l2`,
    :func:`~privgauss.sensitivity.soft_sums_l2` and
    :func:`~privgauss.sensitivity.soft_outer_sums_frobenius`; M as
    :func:`symmetric_matrix_mechanism` noises it), and the release is charged once, at its
    joint cost :func:`~privgauss.sensitivity.soft_statistics_zcdp` — less than ρ_N + ρ_S + ρ_M,
    since the three blocks' worst neighbours differ. ``moments`` None (ρ_M = 0): counts and
    sums only (a Lloyd step's hard assignments); ``counts`` None (ρ_N = 0): sums and moments
    of rows all of responsibility 1 (the re-whitening). The noise is drawn block by block, in
    that order. Returns the noisy blocks, shaped as given (None for an absent block)."""
    s_ = _values(sums)
    rc, rs, rm = (float(x) for x in rhos)
    n_ = None if counts is None else _values(counts)
    m_ = None if moments is None else _values(moments, "matrix")
    if m_ is not None and (m_.ndim not in (2, 3) or m_.shape[-1] != m_.shape[-2]):
        raise ValueError("the second moments must be a square matrix or a stack of them")
    if not (rs > 0 and (rc > 0 if n_ is not None else rc == 0)
            and (rm > 0 if m_ is not None else rm == 0) and (n_ is not None or m_ is not None)):
        raise ValueError("every released block's ρ must be > 0 (0 for an absent block), and "
                         "the sums go with the counts or the moments")
    r = float(radius)
    sig = (soft_counts_l2() / math.sqrt(2.0 * rc) if n_ is not None else math.inf,
           soft_sums_l2(r) / math.sqrt(2.0 * rs),
           soft_outer_sums_frobenius(r) / math.sqrt(2.0 * rm) if m_ is not None else math.inf)
    kept = [(name, x) for name, x, blk in zip(("counts", "sums", "moments"), sig, (n_, s_, m_),
                                              strict=True) if blk is not None]
    _charge(accountant, ZCDP(soft_statistics_zcdp(rc, rs, rm)), step, "gaussian-soft-statistics",
            None, kept[-1][1], note=f"noise scales ({', '.join(nm for nm, _ in kept)}) "
            + ", ".join(f"{x:.6g}" for _, x in kept))
    src = as_noise(noise)
    noisy_n = None if n_ is None else src.gaussian(n_, sig[0])
    noisy_s = src.gaussian(s_, sig[1])
    if m_ is None:
        return noisy_n, noisy_s, None
    m_ = (m_ + np.swapaxes(m_, -1, -2)) / 2
    noisy_m = src.gaussian(frobenius_coordinates(m_).ravel(), sig[2])
    return (noisy_n, noisy_s,
            from_frobenius_coordinates(np.reshape(noisy_m, (*m_.shape[:-2], -1)), m_.shape[-1]))


def truncated_laplace_mechanism(
    value: Any,
    sensitivity: float,
    budget: ApproxDP,
    *,
    accountant: Accountant,
    noise: RandomState = None,
    step: str = "",
) -> np.ndarray:
    """Release ``value`` plus Laplace(Δ/ε) noise truncated to [−A, A] with
    A = (Δ/ε) ln(1 + (e^ε − 1)/(2δ)); (ε, δ)-DP for a scalar statistic of sensitivity Δ.
    Its noise is bounded, which the PPE reduction needs."""
    if not has_delta(budget):
        raise PrivacyBudgetError(
            "the truncated Laplace mechanism needs an (epsilon, delta>0) budget"
        )
    value = _values(value)
    sensitivity = check_sensitivity(sensitivity)
    scale = sensitivity / budget.epsilon
    bound = truncated_laplace_bound(sensitivity, budget.epsilon, budget.delta)
    _charge(accountant, budget, step, "truncated-laplace", sensitivity, scale, f"bound={bound:.6g}")
    return as_noise(noise).truncated_laplace(value, scale, bound)


def private_count(
    count: int | np.ndarray,
    budget: Budget,
    *,
    accountant: Accountant,
    noise: RandomState = None,
    step: str = "",
    sensitivity: float = 1.0,
) -> np.ndarray:
    """A noisy integer count (or vector of disjoint counts with L1/L2 sensitivity given).

    Pure ε: discrete Laplace with scale Δ/ε. zCDP: discrete Gaussian with σ = Δ/√(2ρ)
    (exact in secure mode). (ε, δ): Gaussian noise with the analytic σ, rounded to an integer
    (post-processing). The exact discrete Gaussian is not used there: its δ at the analytic σ
    can exceed the continuous one (e.g. about 2δ for ε = 5, δ = 1e-3, Δ = 1).
    """
    count = _counts(count)
    src = as_noise(noise)
    if is_pure(budget):
        eps = pure_epsilon(budget, "private count")
        scale = check_sensitivity(sensitivity) / eps
        _charge(accountant, budget, step, "count-discrete-laplace", sensitivity, scale)
        return src.integer_laplace(count, scale)
    sigma = gaussian_sigma(sensitivity, budget)
    if isinstance(budget, ZCDP):
        _charge(accountant, budget, step, "count-discrete-gaussian", sensitivity, sigma)
        return src.integer_gaussian(count, sigma)
    _charge(accountant, budget, step, "count-rounded-gaussian", sensitivity, sigma)
    return np.rint(src.gaussian(np.asarray(count, dtype=np.int64), sigma)).astype(np.int64)


def exponential_mechanism(
    utilities: Any,
    sensitivity: float,
    budget: Budget,
    *,
    accountant: Accountant,
    noise: RandomState = None,
    step: str = "",
    monotone: bool = False,
) -> int:
    """Select an index with probability ∝ exp(ε u_i / (2Δ)) (∝ exp(ε u_i / Δ) when every
    utility moves in the same direction between neighbours, ``monotone=True``).

    Implemented as report-noisy-max with Gumbel noise, which has exactly that distribution;
    ε-DP when ``sensitivity`` bounds the change of each utility.
    """
    utilities = _values(utilities, "utilities").ravel()
    if utilities.size == 0:
        raise ValueError("the exponential mechanism needs at least one candidate utility")
    eps = pure_epsilon(budget, "exponential mechanism")
    sensitivity = check_sensitivity(sensitivity)
    factor = 1.0 if monotone else 2.0
    scale = factor * sensitivity / eps
    _charge(accountant, budget, step, "exponential", sensitivity, scale)
    return as_noise(noise).noisy_argmax(utilities, scale)


report_noisy_max = exponential_mechanism


def above_threshold(
    queries: Iterable[float] | Iterable[Callable[[], float]],
    threshold: float,
    sensitivity: float,
    budget: Budget,
    *,
    accountant: Accountant,
    noise: RandomState = None,
    step: str = "",
    monotone: bool = False,
) -> int | None:
    """AboveThreshold (the sparse vector technique, Dwork–Roth Alg. 1): the index of the first
    query whose noisy value exceeds the noisy threshold, or None if none does.

    The threshold gets Laplace(2Δ/ε) noise and each query Laplace(4Δ/ε) (Laplace(2Δ/ε) when
    ``monotone``); ε-DP in total however many queries are asked. Queries may be callables,
    evaluated lazily, so the scan stops at the first hit.
    """
    eps = pure_epsilon(budget, "AboveThreshold")
    sensitivity = check_sensitivity(sensitivity)
    t_scale = 2 * sensitivity / eps
    q_scale = t_scale if monotone else 2 * t_scale
    _charge(accountant, budget, step, "above-threshold", sensitivity, q_scale)
    src = as_noise(noise)
    noisy_t = float(src.laplace(threshold, t_scale))
    for i, q in enumerate(queries):
        v = q() if callable(q) else q
        if float(src.laplace(v, q_scale)) >= noisy_t:
            return i
    return None


def stability_histogram(
    keys: Any,
    budget: Budget,
    *,
    accountant: Accountant,
    noise: RandomState = None,
    step: str = "",
    counts: Any = None,
) -> dict[Any, int]:
    """The stability-based histogram (approximate DP): noisy counts of the non-empty bins,
    released only where the noisy count exceeds τ = 1 + (2/ε) ln(1/δ).

    ``keys`` holds one bin per record: a 1-D integer array, or a 2-D integer array with one
    tuple-bin per row (e.g. grid cells). Counts get discrete Laplace(2/ε) noise (replace-one
    moves one record between two bins: L1 sensitivity 2). (ε, δ)-DP for any number of bins,
    including unbounded domains. Returns {bin: noisy count}.

    With ``counts`` (a histogram counted elsewhere, e.g. streamed over data chunks), ``keys``
    is instead the 1-D array of distinct bins in increasing order and ``counts`` their
    positive record counts: the release is then the one the records themselves would give.
    """
    if not has_delta(budget):
        raise PrivacyBudgetError("the stability histogram needs an (epsilon, delta>0) budget")
    k = np.asarray(keys)
    if k.ndim not in (1, 2) or k.shape[0] == 0:
        raise ValueError("keys must be a non-empty 1-D or 2-D array, one bin per record")
    if not np.issubdtype(k.dtype, np.integer):
        raise ValueError("histogram keys must be integers (bin indices)")
    if counts is not None:
        counts = np.asarray(counts)
        if not (k.ndim == 1 and counts.shape == k.shape and np.all(np.diff(k) > 0)
                and np.issubdtype(counts.dtype, np.integer) and np.all(counts > 0)):
            raise ValueError("with counts, keys must be the distinct bins in increasing order "
                             "and counts their positive integer counts")
    eps = budget.epsilon
    scale = histogram_l1() / eps
    tau = stability_histogram_threshold(eps, budget.delta)
    _charge(
        accountant, budget, step, "stability-histogram", histogram_l1(), scale, f"tau={tau:.6g}"
    )
    bins, counts = (k, counts) if counts is not None else np.unique(k, axis=0,
                                                                    return_counts=True)
    noisy = as_noise(noise).integer_laplace(counts, scale)
    keep = noisy > tau
    out: dict[Any, int] = {}
    for b, c in zip(bins[keep], noisy[keep], strict=True):
        key = int(b) if k.ndim == 1 else tuple(int(x) for x in b)
        out[key] = int(c)
    return out


def gaussian_stability_histograms(
    keys: Any,
    rho: float,
    delta: float,
    *,
    accountant: Accountant,
    noise: RandomState = None,
    step: str = "",
    columns: Sequence[tuple[np.ndarray, np.ndarray]] | None = None,
) -> list[dict[int, int]]:
    """The stability histograms of the H columns of an (n, H) integer key array, released
    jointly with discrete Gaussian noise: for each column, the noisy counts of its non-empty
    bins that exceed τ. δ-approximate ρ-zCDP (Bun–Steinke 2016, Def. 8.1) under replace-one.

    *Why.* Replace-one moves one record in every column: in each histogram one bin loses it and
    one gains it. A bin non-empty in only one of the two datasets holds exactly that record
    (count 1); conditioned on no such bin being released (probability ≥ 1 − δ: at most one such
    bin per column and side, each released with probability ≤ δ/H by
    :func:`~privgauss.sensitivity.gaussian_stability_histogram_threshold`), the output is a
    post-processing (thresholding) of the Gaussian-noised counts of the bins non-empty in both,
    whose change has L2 norm ≤ √2 per column, √(2H) in all: σ = √(2H)/√(2ρ) = √(H/ρ). The
    conditioned outputs are ρ-zCDP and the rest has probability ≤ δ on each side, which is
    δ-approximate ρ-zCDP; it composes with zCDP releases by adding ρ (and δ), and converts to
    (ε(ρ_total, δ'), δ + δ')-DP.

    *Ledger.* Two entries, both charged before any noise is drawn: ``ZCDP(ρ)`` for the
    conditioned part (step ``step``) and ``ApproxDP(tiny, δ)`` for the event (step
    ``step + " (delta)"``): an ApproxDP accountant composes them exactly as the approximate
    zCDP guarantee above (ρ converted with the δ left after δ).

    ``columns``: the H histograms counted elsewhere (e.g. streamed over data chunks) instead of
    ``keys``: (distinct bins, their positive counts) per histogram; the release is the one the
    records themselves would give.
    """
    if columns is None:
        k = np.asarray(keys)
        if k.ndim != 2 or k.shape[0] == 0 or k.shape[1] == 0:
            raise ValueError("keys must be a non-empty 2-D array, one column per histogram")
        if not np.issubdtype(k.dtype, np.integer):
            raise ValueError("histogram keys must be integers (bin indices)")
        columns = [np.unique(k[:, j], return_counts=True) for j in range(k.shape[1])]
    elif not columns or not all(np.all(np.asarray(c) > 0) for _, c in columns):
        raise ValueError("columns must be (distinct bins, positive counts), one per histogram")
    rho = ZCDP(rho).rho
    budget_delta = ApproxDP(MIN_EPS, delta)
    if not has_delta(budget_delta):
        raise PrivacyBudgetError("the stability histogram needs delta > 0")
    h = len(columns)
    sens = histogram_l2() * math.sqrt(h)
    sigma = sens / math.sqrt(2.0 * rho)
    tau = gaussian_stability_histogram_threshold(sigma, budget_delta.delta / h)
    if not accountant.can_spend_all([ZCDP(rho), budget_delta]):
        raise PrivacyBudgetError(
            f"the joint stability histograms need {rho:g}-zCDP and delta {delta:g}, which the "
            f"accountant cannot pay (total {accountant.total}, spent {accountant.spent_str()})"
        )
    _charge(accountant, ZCDP(rho), step, "gaussian-stability-histograms", sens, sigma,
            f"tau={tau:.6g}, {h} histograms")
    _charge(accountant, budget_delta, f"{step} (delta)", "gaussian-stability-histograms-delta",
            None, None, "probability that a bin holding only the moved record is released")
    src = as_noise(noise)
    # one noise call for the H histograms (the same σ; one secure call costs ~0.3 ms besides
    # its draws), in column order: the draws of H calls, one after another
    sizes = [np.asarray(c).size for _, c in columns]
    noisy_all = src.integer_gaussian(np.concatenate([np.asarray(c) for _, c in columns]), sigma)
    out: list[dict[int, int]] = []
    for (bins, _), noisy in zip(columns, np.split(noisy_all, np.cumsum(sizes)[:-1]),
                                strict=True):
        bins = np.asarray(bins)
        keep = noisy > tau
        out.append({int(b): int(c) for b, c in zip(bins[keep], noisy[keep], strict=True)})
    return out


__all__ = [
    "NoiseSource",
    "above_threshold",
    "exponential_mechanism",
    "gaussian_mechanism",
    "gaussian_sigma",
    "gaussian_sigma_analytic",
    "gaussian_sigma_zcdp",
    "gaussian_stability_histograms",
    "laplace_mechanism",
    "private_count",
    "report_noisy_max",
    "stability_histogram",
    "symmetric_matrix_mechanism",
    "truncated_laplace_bound",
    "truncated_laplace_mechanism",
]
