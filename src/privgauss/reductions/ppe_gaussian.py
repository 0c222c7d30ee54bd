"""Bound-free (ε, δ)-DP estimation of one Gaussian by the Private Populous Estimator (k = 1).

**Neighbours:** replace one row (n public). **Guarantee:** (ε, δ)-DP in total, for any data.

``constants="theory"`` — *faithful* PPE (Arbas thesis Alg. 1, spec A.7): the empirical (μ, Σ) of
each block, dist = max{dist_MEAN, dist_COV} (z = 3/2, r_tri = 1), the (μ, Σ) masking mechanism
B = (R_MEAN, R_COV) at the explicit radius γ of ``masking.py``; (ε, δ) is split as the thesis's
(2ε', 4e^ε' δ'). Block outputs must agree within γ/3 ≈ 1e-4..1e-3 (spec A.10): it needs
astronomically many rows and returns ⊥ (``EstimationFailed``) at any realistic n.

``constants="practical"`` (default) — our *stable-average* PPE, after the averaging of
Ashtiani–Liaw (2022) that the thesis cites: the noisy weighted average of the block outputs that
agree (``ppe.stable_average``: PTR with truncated Laplace, then the analytic Gaussian mechanism
with L2 sensitivity Δ = O(r/t)), which recovers the 1/t sensitivity a single masked block lacks.
Three stages on the same t blocks of s rows (public random partition, t and s from n, d only):

(A) *scale*: u_i = the per-axis log sample variances of block i (scale-free: their spread
    depends on s only, so the public radius r_A is a function of s and d); the release ṽ gives
    axis scales ŝ_k = exp(ṽ_k / 2);
(B) *location*: u_i = the block means of the rows divided by ŝ (a DP output), radius r_B from s,
    d and stage A's public error bound; with ``refine=False`` u_i also holds the block
    covariance (Frobenius), and (μ, Σ) is read off the average — the pure AL22-style estimate;
(C) *refinement* (``refine=True``): CoinPress (``gaussian/coinpress/``) on all n rows divided
    by ŝ, centred at stage B's release, with the zCDP budget left over; the prior radius and the
    eigenvalue bounds come from the public error bounds of stages A–B (their correctness affects
    accuracy only). As in ``histogram.py``, the lower eigenvalue bound assumes the correlation
    matrix has condition number ≤ ``corr_condition``.

Public plan (:class:`PracticalPlan`): ε and δ shares 0.1 ε / δ/8 for each of the two tests and
two noisy averages, the rest (0.6 ε, δ/2) to CoinPress; it needs t ≥ t_min = 1187 blocks at
(1, 1e-6), i.e. n ≳ 24k (d ≤ 9). t is as many blocks of s₀ = max(20, 2d + 2) rows as n allows
(up to 3000), but at most 2·t_min: t_min falls like 1/ε, so as the budget grows the blocks
grow (to n/38 at ε ≥ 1e3). The radii stay those of s₀-row blocks and grow like √(ε/10) up to
10× from ε = 10: with larger blocks and wider radii, heavy-tailed columns and rare values (a
20-row block of a 3 % flag is all 0 in half the blocks) agree across blocks at large budgets,
where before the scale test failed at every ε on 10 of 22 real tables. The refinement gets the
histogram route's ridge (:mod:`privgauss.gaussian.ridge`, condition grown with the budget) and
its check of a collapsed chain.
Measured (``benchmarks/results/ppe.md``): at d = 10, (1, 1e-6), n = 1e5 the errors are within
1.0–1.4× the non-private ones (10/10 runs), at n = 5e4 within 1.1–1.8×.

**Privacy proof.** Each stable average is (ε_test + ε_noise, δ_test + δ_noise)-DP with respect to
replacing one *block output* (``ppe.py``, :func:`privgauss.sensitivity.stable_average_l2`), and
replacing one row changes exactly one block (the partition is public and data-independent), so
each stage is DP with respect to the rows; stage B's inputs depend on the data and on stage A's
*released* ŝ only, so it is an adaptive composition; CoinPress is ρ-zCDP for every public centre,
radius and bounds. The accountant composes the four (ε, δ) charges basically and the zCDP part
with the tight conversion; the ledger sums to at most (ε, δ). Both halves of each stage are
charged before its test, so a ⊥ leaves the budget spent.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import polygamma

from ..backends import as_rows
from ..clipped_stats import transform_rows
from ..exceptions import EstimationFailed
from ..gaussian.histogram import budget_condition, public_padding
from ..gaussian.ridge import JITTER_SHARE, ridged_gaussian
from ..linalg import project_psd, sym, upper_indices
from ..mechanisms import Release, truncated_laplace_bound
from ..privacy import ZCDP, Accountant, ApproxDP, Budget, BudgetPlan, zcdp_rest
from .masking import ComponentMask, dist_comp, theory_etas
from .ppe import (
    SA_FLOOR,
    Semimetric,
    populous_estimator,
    populous_parts,
    ppe_blocks,
    ppe_halves,
    ppe_spends_all,
    run_blocks,
    stable_average,
)

__all__ = [
    "PracticalPlan",
    "empirical_gaussian",
    "plan_practical",
    "ppe_gaussian",
    "ppe_plan",
    "ppe_requirements",
]

# Budget shares of the practical estimator (ε and δ): (A test, A noise, B test, B noise); the
# rest goes to CoinPress. Public constants.
_EPS_SHARES = (0.1, 0.1, 0.1, 0.1)
_DELTA_SHARES = (0.125, 0.125, 0.125, 0.125)
_MAX_BLOCKS = 3000  # the t × t closeness matrix stays ~9 MB
_PASS_MARGIN = 0.97  # t is large enough when the test threshold is at most this
_BLOCKS_PER_NEED = 2  # blocks: at most this many times the least the tests need (t_min) ...
_LEAST_BLOCKS = 20  # ... and at least this many (when n allows)
# the radii grow like √(ε / _GROW_FROM) above ε = _GROW_FROM (their noise still falls like
# 1/√ε), up to _GROW_MAX times the Gaussian percentile: heavy tails then agree at large budgets
_GROW_FROM = 10.0
_GROW_MAX = 10.0
_Z_SCALE = 4.0  # public error bounds: this many noise standard deviations
_CORR_CONDITION = 100.0
# A released axis scale below _DEGENERATE_REL·|released centre| (or below _DEGENERATE_ABS) is at
# the float floor of _scale_rows: the axis is constant (degenerate); the floor sits 100x lower.
_FLOAT_REL = 1e-14
_TINY = float(np.finfo(np.float64).tiny)
_DEGENERATE_REL = 1e-12
_DEGENERATE_ABS = 1e-140


def empirical_gaussian(block: np.ndarray, seed: int) -> tuple[float, np.ndarray, np.ndarray]:
    """The non-private learner of the faithful PPE: (1, sample mean, sample covariance)."""
    del seed
    return 1.0, block.mean(axis=0), np.atleast_2d(np.cov(block, rowvar=False))


def _pd(F: Any) -> bool:
    try:
        np.linalg.cholesky(sym(F[2]))
    except np.linalg.LinAlgError:
        return False
    return bool(np.all(np.isfinite(F[1])))


class PracticalPlan:
    """The public plan of the practical estimator: block count and size, budgets, radii."""

    def __init__(self, n: int, d: int, epsilon: float, delta: float) -> None:
        self.n, self.d = n, d
        e, dl = epsilon, delta
        shares = zip(_EPS_SHARES, _DELTA_SHARES, strict=True)
        self.budgets = [ApproxDP(e * a, dl * b) for a, b in shares]
        self.min_block = max(20, 2 * d + 2)
        self.t_min = max(self._t_min(self.budgets[0]), self._t_min(self.budgets[2]))
        most = min(n // self.min_block, _MAX_BLOCKS)  # the most blocks n allows
        # the radii are those of the smallest blocks; as the budget grows the tests need fewer
        # blocks (t_min falls like 1/ε), so the blocks grow, and a column with heavy tails or a
        # rare value (a block of 20 rows all 0) agrees across them within those radii: at a
        # large budget the tests pass unless a value is rarer than about one per block (flchain's
        # 1.5 % flag at n = 6524: still ⊥, benchmarks/results/ppe.md)
        self.s_radius = n // max(most, 1)
        self.t = min(most, max(_BLOCKS_PER_NEED * self.t_min, _LEAST_BLOCKS))
        self.s = n // max(self.t, 1)
        self.grow = min(_GROW_MAX, max(1.0, math.sqrt(epsilon / _GROW_FROM)))
        self.n_needed = self.t_min * self.min_block

    @staticmethod
    def _t_min(test: ApproxDP) -> int:
        # threshold SA_FLOOR + 2/t + A_t <= _PASS_MARGIN, A_t = TLap bound at sensitivity 2/t
        a1 = truncated_laplace_bound(2.0, test.epsilon, test.delta)  # = t·A_t
        return math.ceil((2 + a1) / (_PASS_MARGIN - SA_FLOOR))

    @property
    def ok(self) -> bool:
        return self.t >= self.t_min

    def budget_plan(self, total: ApproxDP) -> BudgetPlan:
        """The split of ``total`` as a :class:`~privgauss.privacy.BudgetPlan`: the scale and
        location stages' tests and noisy averages, then the rest as zCDP for the CoinPress
        refinement (what the accountant has left: ``remaining_zcdp()``). Composes to exactly
        ``total`` (used in full only with ``refine=True``)."""
        names = ("scale/test", "scale/noise", "location/test", "location/noise")
        parts: dict[str, Budget] = dict(zip(names, self.budgets, strict=True))
        parts["coinpress"] = ZCDP(zcdp_rest(total, self.budgets))
        return BudgetPlan.of(total, parts)

    def radius_scale(self) -> float:
        """r_A: ~97th percentile of ‖u_i − u_j‖ for per-axis log variances (var of one
        log χ²_{s−1} coordinate: ψ'((s − 1)/2))."""
        sd = math.sqrt(2 * float(polygamma(1, (self.s_radius - 1) / 2)))
        return self.grow * sd * (math.sqrt(self.d) + 2.5)

    def radius_location(self, scale_err: float, with_cov: bool) -> float:
        """r_B: the same for block means (and covariances) of rows divided by ŝ, whose
        covariance C has diagonal ≤ e^{scale_err}."""
        infl = math.exp(scale_err)
        r = math.sqrt(2 * infl / self.s_radius) * (math.sqrt(self.d) + 2.5)
        if with_cov:
            # ‖S_i − S_j‖_F: E‖S − C‖_F² ≈ (tr(C)² + tr(C²))/s ≤ 2 (d·infl)²/s
            r = math.hypot(r, 2.5 * math.sqrt(2 * 2) * self.d * infl / math.sqrt(self.s_radius))
        return self.grow * r


def plan_practical(n: int, d: int, epsilon: float, delta: float) -> PracticalPlan:
    return PracticalPlan(n, d, epsilon, delta)


def _scale_rows(block: np.ndarray, seed: int) -> np.ndarray:
    """Per-axis log sample variances of a block, each floored at the float64 resolution of
    the block's values ((_FLOAT_REL·max|x|)², at least the smallest normal float): a block
    constant on an axis (a constant column, or a 0/1 flag that happens to be all 0 there) gives
    that floor instead of −inf, so constant columns agree across blocks."""
    del seed
    with np.errstate(over="ignore", invalid="ignore"):
        floor = (_FLOAT_REL * np.abs(block).max(axis=0)) ** 2 + _TINY
        return np.log(np.maximum(block.var(axis=0, ddof=1), floor))


def _mean_rows(block: np.ndarray, seed: int) -> np.ndarray:
    del seed
    return block.mean(axis=0)


def _mean_cov_rows(block: np.ndarray, seed: int) -> np.ndarray:
    del seed
    d = block.shape[1]
    iu = upper_indices(d)
    C = np.atleast_2d(np.cov(block, rowvar=False))
    w = np.where(iu[0] == iu[1], 1.0, math.sqrt(2.0))  # so that ‖·‖₂ = ‖C‖_F
    return np.concatenate([block.mean(axis=0), C[iu] * w])


def ppe_gaussian(
    X: Any,
    epsilon: float,
    delta: float,
    *,
    release: Release,
    constants: str = "practical",
    refine: bool = True,
    alpha: float = 0.1,
    beta: float = 0.05,
    corr_condition: float = _CORR_CONDITION,
    progress: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """(ε, δ)-DP (mean, covariance) of Gaussian rows with no range parameters; see the module
    docstring. Raises :class:`EstimationFailed` (budget spent) when a stability test fails, and
    ``ValueError`` before spending anything when n is below the plan's minimum. Charged to a
    child of ``release``'s accountant (its steps unprefixed)."""
    X = as_rows(X, min_rows=2)
    n, d = X.shape
    src = release.noise
    total = ApproxDP(epsilon, delta)
    acct = Accountant(total, parent=release.accountant)
    if constants == "theory":
        return _faithful(X, total, Release(acct, src), alpha=alpha, beta=beta, progress=progress)
    if constants != "practical":
        raise ValueError("constants must be 'practical' or 'theory'")
    plan = plan_practical(n, d, epsilon, delta)
    if not plan.ok:
        raise ValueError(
            f"the practical PPE needs about n >= {plan.n_needed} rows here ({plan.t_min} blocks "
            f"of >= {plan.min_block} rows) for epsilon={epsilon:g}, delta={delta:g}; got n = {n}"
        )
    a_test, a_noise, b_test, b_noise = plan.budgets
    # (A) per-axis scales; the same blocks (one public partition) serve every stage
    blocks = run_blocks(X, _identity, plan.t, src)[0]
    U = np.stack([_scale_rows(b, 0) for b in blocks])
    rA = plan.radius_scale()
    sa = stable_average(U, rA, a_test, a_noise, release=Release(acct, src, "ppe-scale"))
    scale = np.exp(sa.value / 2)
    if not np.all(np.isfinite(scale) & (scale > 0)):  # a function of the DP release only
        raise EstimationFailed("the released scale is outside the floating-point range",
                               step="ppe-scale")
    scale_err = _Z_SCALE * sa.sigma + rA / math.sqrt(d) / 2
    # (B) location (and covariance when not refining) in the frame x / ŝ
    with_cov = not refine
    rB = plan.radius_location(scale_err, with_cov)
    learner = _mean_cov_rows if with_cov else _mean_rows
    # each block in the frame x / ŝ; a row that overflows there is sent far (per record)
    U = np.stack([learner(transform_rows(b, 1.0 / scale), 0) for b in blocks])
    sb = stable_average(U, rB, b_test, b_noise, release=Release(acct, src, "ppe-location"))
    center = sb.value[:d]
    if not refine:
        iu = upper_indices(d)
        w = np.where(iu[0] == iu[1], 1.0, 1 / math.sqrt(2.0))
        C = np.zeros((d, d))
        C[iu] = sb.value[d:] * w
        C = project_psd(sym(C + np.triu(C, 1).T), min_eig=1e-6 * max(np.trace(C) / d, 1e-300))
        return center * scale, C * np.outer(scale, scale)
    return _refine(X, scale, center, sb.sigma * (math.sqrt(d) + _Z_SCALE) + rB / 2,
                   math.exp(scale_err), Release(acct, src), beta, corr_condition)


def _refine(X: Any, scale: np.ndarray, center: np.ndarray, radius: float, infl: float,
            release: Release, beta: float,
            corr_condition: float) -> tuple[np.ndarray, np.ndarray]:
    """Stage (C): CoinPress with the rest of the budget in the frame x / ŝ, prior from the
    public error bounds. An axis whose released scale is at the float floor of
    :func:`_scale_rows` (post-processing of stages A–B) is constant: it keeps its released
    centre, variance 0, and enters CoinPress as a column of public N(0, 1) noise, so the plan
    and the ledger are those of d ordinary axes whatever was degenerate."""
    n, d = X.shape
    deg = (scale <= _DEGENERATE_REL * np.abs(center * scale)) | (scale <= _DEGENERATE_ABS)
    s = np.where(deg, 1.0, scale)
    c = np.where(deg, 0.0, center)
    Z = transform_rows(X, 1.0 / s)
    if deg.any():
        Z = np.array(Z, dtype=np.float64, copy=True)
        Z[:, deg] = public_padding(n, int(deg.sum()))
    rho = release.accountant.remaining_zcdp()
    # the histogram route's ridge (:mod:`privgauss.gaussian.ridge`): the assumed condition
    # grows with the budget and the rows get a public ±η jitter, η² = JITTER_SHARE·lo, so
    # collinear or near-constant columns of a real table cannot break the chain's prior; a
    # chain that still collapsed fails (a DP output) instead of returning a covariance off by 1e4
    lo = 1.0 / (infl * budget_condition(corr_condition, n, rho))
    eta2 = JITTER_SHARE * lo
    mu_z, cov_z = ridged_gaussian(
        Z,
        rho,
        eta2,
        release=Release(release.accountant, release.noise, "ppe-refine"),
        cov_bounds=(lo, d * infl),  # the lower bound is the corr_condition assumption
        owned=Z is not X,
        check="ppe-refine",
        center=c,
        radius=radius,
        beta=beta,
    )
    mean = np.where(deg, center * scale, mu_z * s)
    cov = cov_z * np.outer(s, s)
    cov[deg, :] = 0.0
    cov[:, deg] = 0.0
    return mean, cov


def _identity(block: np.ndarray, seed: int) -> np.ndarray:
    del seed
    return block


def _faithful(
    X: np.ndarray,
    total: ApproxDP,
    release: Release,
    *,
    alpha: float,
    beta: float,
    progress: bool,
) -> tuple[np.ndarray, np.ndarray]:
    d = X.shape[1]
    eps, dl = ppe_halves(total)
    _, eta_m, eta_c = theory_etas(alpha / 3, beta / 2, d)
    mask = ComponentMask(d, eps / 2, dl / 2, 1.0, eta_m, eta_c, with_weight=False)
    semimetric = Semimetric(dist_comp, z=1.5, r_tri=1.0, name="dist_COMP")
    t = ppe_blocks(eps, dl)
    if X.shape[0] < t * (d + 1):
        raise ValueError(
            f"the faithful PPE needs at least t(d + 1) = {t * (d + 1)} rows "
            f"(t = {t} blocks); it needs far more to pass its test (see requirements)"
        )
    out, _ = populous_estimator(
        X,
        empirical_gaussian,
        semimetric,
        mask,
        default=(1.0, np.zeros(d), np.eye(d)),
        release=release.at("ppe-faithful"),
        n_blocks=t,
        validate=_pd,
        progress=progress,
    )
    return out[1], out[2]


def ppe_plan(
    n: int,
    d: int,
    budget: ApproxDP,
    constants: str = "practical",
    *,
    k: int = 1,
    count_split: Any = None,
) -> BudgetPlan:
    """The budget plan of :func:`ppe_gaussian` (k = 1) or :func:`ppe_mixture` (k ≥ 2) at
    ``budget``, named as their ledger records it (public quantities only). Practical (k = 1):
    the scale and location stages' noisy averages and tests
    (:meth:`PracticalPlan.budget_plan`), then the CoinPress refinement as one group (its
    steps are planned from the released frame) and, with ``count_split`` (the estimator's ρ ↦
    (refinement, clipped count)), the clipped count. Faithful (``"theory"``) and mixture: the
    masking and the test of Algorithm 1 (:func:`~.ppe.populous_parts`)."""
    if constants == "theory" or k > 1:
        eps, dl = ppe_halves(budget)
        step = "ppe-faithful" if k == 1 else "ppe-mixture"
        return BudgetPlan.of(budget, populous_parts(ApproxDP(eps, dl), step),
                             exact=ppe_spends_all(budget))
    plan = plan_practical(n, d, budget.epsilon, budget.delta).budget_plan(budget)
    parts: dict[str, Budget] = {}
    for stage in ("scale", "location"):  # stable_average charges the noise, then the test
        parts[f"ppe-{stage}-noise"] = plan[f"{stage}/noise"]
        parts[f"ppe-{stage}-test"] = plan[f"{stage}/test"]
    rho = plan.part("coinpress", ZCDP).rho
    main, count = (rho, 0.0) if count_split is None else count_split(rho)
    parts["ppe-refine"] = ZCDP(main)
    if count_split is not None:
        parts["clipped count"] = ZCDP(count)
    return BudgetPlan.of(budget, parts, groups=("ppe-refine",))


def ppe_requirements(
    n: int, d: int, epsilon: float, delta: float, constants: str = "practical", k: int = 1
) -> Any:
    """Whether n rows can work for the PPE estimators (public quantities only): the practical
    plan's minimum (``"practical"``, k = 1) or the faithful Thm 7.1.3 formula
    (:func:`privgauss.theory.ppe_n`, ``"theory"``, any k)."""
    from ..mixture.sample_size import Requirements
    from ..theory import ppe_n

    if constants == "theory" or k > 1:
        need = ppe_n(d, k, epsilon, delta).n
        terms = {"Thm 7.1.3 (explicit masking radius)": need}
        note = "faithful PPE: the thesis's constants, astronomically large"
    else:
        plan = plan_practical(n, d, epsilon, delta)
        need = float(plan.n_needed)
        terms = {f"{plan.t_min} blocks of >= {plan.min_block} rows": need}
        note = "practical stable-average PPE: stability tests need enough blocks"
    key = next(iter(terms))
    return Requirements("ppe", int(n), need, bool(n >= need), constants, terms, key, {}, note)


# ------------------------------------------------------------------------------ k-mixtures


def gmm_learner(block: np.ndarray, seed: int, k: int) -> list[tuple[float, np.ndarray, np.ndarray]]:
    """The black box of the mixture PPE: scikit-learn EM on one block, seeded from public
    randomness (thesis §7 with EM for Moitra–Valiant, spec A.9)."""
    from sklearn.mixture import GaussianMixture
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):  # tiny blocks: BLAS threads only add overhead
        gm = GaussianMixture(
            n_components=k, covariance_type="full", reg_covar=1e-6, random_state=seed
        ).fit(block)
    return [
        (float(w), np.asarray(m), np.asarray(c))
        for w, m, c in zip(gm.weights_, gm.means_, gm.covariances_, strict=True)
    ]


def lifted_distance(F: Any, G: Any) -> float:
    """dist_PARAM(F, G) = min over permutations π of max_i dist_COMP(F_i, G_π(i))."""
    import itertools

    k = len(F)
    cost = np.array([[dist_comp(F[i], G[j]) for j in range(k)] for i in range(k)])
    return float(min(cost[range(k), list(p)].max() for p in itertools.permutations(range(k))))


def _valid_gmm(F: Any) -> bool:
    return all(math.isfinite(c[0]) and _pd(c) for c in F)


def ppe_mixture(
    X: np.ndarray,
    k: int,
    epsilon: float,
    delta: float,
    *,
    release: Release,
    alpha: float = 0.1,
    beta: float = 0.1,
    progress: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Faithful mixture PPE (thesis Thm 7.1.3): EM per block, dist_PARAM (bottleneck lift of
    dist_COMP, z = 3/2, r_tri = 1), B_GMM masking with the explicit radius (basic or advanced
    composition). (ε, δ)-DP under replace-one for any data; ⊥ (``EstimationFailed``) unless
    the blocks' EM fits agree within γ/3, i.e. at astronomically large n (see
    :func:`privgauss.theory.ppe_n`). Weights are clipped and renormalised after masking.
    Charged to a child of ``release``'s accountant (steps "ppe-mixture-...")."""
    import functools

    from .masking import MixtureMask

    n, d = X.shape
    acct = Accountant(ApproxDP(epsilon, delta), parent=release.accountant)
    eps, dl = ppe_halves(ApproxDP(epsilon, delta))
    t = ppe_blocks(eps, dl)
    if n < t * (k * (d + 1) + 1):
        raise ValueError(
            f"the mixture PPE needs at least t(k(d + 1) + 1) = {t * (k * (d + 1) + 1)} rows "
            f"(t = {t} blocks), and far more to pass its test (see requirements)"
        )
    mask = MixtureMask(k, d, eps, dl, alpha / 3, beta / (2 * t))
    default = [(1.0 / k, np.zeros(d), np.eye(d)) for _ in range(k)]
    out, _ = populous_estimator(
        X,
        functools.partial(gmm_learner, k=k),
        Semimetric(lifted_distance, z=1.5, r_tri=1.0, name="dist_PARAM"),
        mask,
        default=default,
        release=Release(acct, release.noise, "ppe-mixture"),
        n_blocks=t,
        validate=_valid_gmm,
        progress=progress,
    )
    w = np.clip([c[0] for c in out], 0.0, 1.0)
    w = w / w.sum() if w.sum() > 0 else np.full(k, 1.0 / k)
    order = np.argsort([c[1][0] for c in out], kind="stable")  # presentation only
    means = np.array([out[i][1] for i in order])
    covs = np.array([out[i][2] for i in order])
    return w[order], means, covs
