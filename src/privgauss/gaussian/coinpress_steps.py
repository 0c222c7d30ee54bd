"""The steps of CoinPress-style estimation shared by its sequential and split modes: one planned
mean step, one planned covariance step (clip in the current frame, noise, update the frame),
and the four-stage practical runner (:mod:`privgauss.gaussian.coinpress` plans and dispatches;
:mod:`privgauss.gaussian.coinpress_split` runs the split modes). Every release is charged to the
accountant before its noise is drawn (:mod:`privgauss.mechanisms`); sensitivities come from
:mod:`privgauss.sensitivity`. Biswas, Dong, Kamath, Ullman, *CoinPress* (NeurIPS 2020), Alg. 1–2.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..clipped_stats import Rows
from ..exceptions import EstimationFailed, PrivacyBudgetError
from ..linalg import inv_sqrtm_psd, project_psd, sym
from ..mechanisms import gaussian_mechanism, symmetric_matrix_mechanism
from ..privacy import ZCDP, Accountant
from ..sensitivity import clipped_mean_l2, clipped_second_moment_frobenius
from .coinpress_plan import CovStep, MeanStep, _Plan, _undo_shrinkage, undo_cov_clip


def _check_accountant(accountant: Any) -> Accountant:
    if not isinstance(accountant, Accountant):
        raise TypeError("accountant must be a privgauss.Accountant")
    return accountant


def _reserve(accountant: Accountant, rho: float) -> None:
    """Refuse up front (nothing spent, nothing drawn) when ρ is not available."""
    if not accountant.can_spend(ZCDP(rho)):
        raise PrivacyBudgetError(
            f"this estimator needs {rho:g}-zCDP but the accountant cannot pay it "
            f"(total {accountant.total}, spent {accountant.spent_str()})"
        )


def _run_mean(
    rows: Rows,
    center: np.ndarray,
    plan: tuple[MeanStep, ...],
    accountant: Accountant,
    noise: Any,
    step: str,
    *,
    A: np.ndarray | None = None,
    shift: np.ndarray | None = None,
) -> np.ndarray:
    """Run a mean plan on the rows W_i = A(y_i − shift) of ``rows`` (y_i − shift without A),
    never materialised: each step releases mean_i clip_{B(c, τ)}(W_i) (one pass, or the
    Gram-based fast evaluation of :class:`~privgauss.clipped_stats.Rows`)."""
    n, d = rows.n, rows.d
    c = center
    t = len(plan)
    for i, s in enumerate(plan):
        stat = rows.clipped_mean(A, shift, c, s.clip_radius)
        released = gaussian_mechanism(
            stat,
            clipped_mean_l2(s.clip_radius, n),
            ZCDP(s.rho),
            accountant=accountant,
            noise=noise,
            step=f"{step} {i + 1}/{t}",
        )
        if s.debias:
            cap = max(3.0 * s.prior_radius, 4.0 * math.sqrt(d / n), 1e-12)
            released = c + _undo_shrinkage(released - c, d, s.clip_radius, cap)
        c = released
    return np.asarray(c, dtype=np.float64)


def _run_cov(
    rows: Rows,
    A: np.ndarray,
    plan: tuple[CovStep, ...],
    accountant: Accountant,
    noise: Any,
    step: str,
    *,
    final: bool = True,
    shift: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Run the plan on rows y_i − shift (second moment S) starting from the transform A
    (A S Aᵀ ⪯ I). Each step whitens W_i = A(y_i − shift), clips rows to the planned radius,
    releases WᵀW/n with the symmetric Gaussian mechanism (Frobenius sensitivity √2 τ²/n),
    projects to PSD and — except in a final step — updates A ← (Z + ηI)^{-1/2} A (A need not
    be symmetric, so this bookkeeping is right for any number of steps). The whitened rows
    are never materialised (:meth:`~privgauss.clipped_stats.Rows.second_moment`).

    Returns (A, None) when ``final`` is False, else (A_used, Ŝ = A⁻¹ Z Aᵀ⁻¹)."""
    n, d = rows.n, rows.d
    t = len(plan)
    sh = np.zeros(d) if shift is None else np.asarray(shift, dtype=np.float64)
    for i, s in enumerate(plan):
        stat = rows.second_moment(A, sh, s.clip_radius)
        Z = symmetric_matrix_mechanism(
            stat,
            clipped_second_moment_frobenius(s.clip_radius, n),
            ZCDP(s.rho),
            accountant=accountant,
            noise=noise,
            step=f"{step} {i + 1}/{t}",
        )
        Zp = project_psd(Z)
        if s.debias:  # a last step clipped inside the bulk: undo the shrinkage (the model's)
            Zp = undo_cov_clip(Zp, s.clip_radius)
        if final and i == t - 1:
            Ainv = np.linalg.inv(A)
            with np.errstate(over="ignore", invalid="ignore"):
                cov = sym(Ainv @ Zp @ Ainv.T)
            if not np.isfinite(cov).all():
                raise EstimationFailed(
                    "the private covariance overflowed; rescale the data or tighten the bounds",
                    step=step,
                )
            return A, cov
        A = inv_sqrtm_psd(Zp + s.eta * np.eye(d)) @ A
    return A, None


def _run_practical(rows: Rows, plan: _Plan, c: np.ndarray, lo: float, accountant: Accountant,
                   src: Any, step: str) -> tuple[np.ndarray, np.ndarray]:
    """Stages 1–4 of :func:`coinpress_gaussian` (``practical``) on ``rows``."""
    d = rows.d
    # Stage 1: coarse whitening steps → T (= A).
    A = np.eye(d) / math.sqrt(plan.s_hi)
    if plan.coarse:
        src1, shift1 = (rows.pairs(src.rng), None) if plan.pairs else (rows, c)
        A, _ = _run_cov(src1, A, plan.coarse, accountant, src, f"{step} cov-coarse",
                        final=False, shift=shift1)
    # Stage 2: rough mean in T-coordinates (cov(TX) ⪯ I).
    m_t = _run_mean(rows, np.zeros(d), plan.rough, accountant, src, f"{step} mean-rough", A=A,
                    shift=c)
    mu_rough = c + np.linalg.solve(A, m_t)
    # Stage 3: covariance of all rows centred at the rough mean, continuing from T.
    _, cov = _run_cov(rows, A, plan.cov, accountant, src, f"{step} cov", shift=mu_rough)
    assert cov is not None
    if not plan.mean:  # a frame plan: the rough mean and the second moment about it
        return mu_rough, cov
    # Stage 4: mean of the rows whitened by the released covariance.
    B = _whitener(cov, lo, step)
    m_w = _run_mean(rows, np.zeros(d), plan.mean, accountant, src, f"{step} mean", A=B,
                    shift=mu_rough)
    return mu_rough + np.linalg.solve(B, m_w), cov


def _whitener(cov: np.ndarray, floor: float, step: str) -> np.ndarray:
    """Symmetric inverse square root of a released covariance (post-processing), eigenvalues
    floored at max(floor·1e-6, 1e-12·λ_max). A non-finite release (overflow on absurd inputs)
    is a DP failure output."""
    if not np.isfinite(cov).all():
        raise EstimationFailed(
            "the private covariance overflowed; rescale the data or tighten the bounds",
            step=step,
        )
    w, V = np.linalg.eigh(sym(cov))
    w = np.maximum(w, max(floor * 1e-6, 1e-12 * float(w[-1]), np.finfo(float).tiny))
    return sym((V / np.sqrt(w)) @ V.T)
