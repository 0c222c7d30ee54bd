"""Sample-size requirements of the no-public-data mixture learners, from public quantities only.

Two kinds of numbers (spec ``kssu19.md`` §2, §12):

* ``constants="theory"`` — the KSSU19 theorems with every unknown absolute constant set to 1 and
  every polylog to a log (Thm 1.1/5.1 terms N1–N9, warm-up Thm 4.4 terms W1–W4, sample-and-
  aggregate Thm 6.1/6.4). **Indicative only**: right in how they scale, not in absolute size.
  The separation conditions of the same theorems are :func:`separation_main`,
  :func:`separation_warmup` and :func:`separation_sample_aggregate`.
* ``constants="practical"`` (default) — what this library's implementation needs: computed from
  the actual budget split, the AboveThreshold slack Γ and the stability-histogram threshold τ
  of the calls the algorithm makes, times safety factors measured with
  ``benchmarks/mixture_recovery.py`` on well-separated synthetic mixtures (separation ratio ≥ 3
  in the :func:`privgauss.datasets.separation_ratio` sense).

Nothing here looks at data; every function is safe to call before spending any budget, and
:class:`Requirements` says what n (or which knob) is needed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ..accounting import ApproxDP
from ..mechanisms import gaussian_sigma_zcdp
from ..theory import Bound
from .one_cluster import DEFAULT_SPLIT as ONE_CLUSTER_SPLIT
from .one_cluster import KINDS as ONE_CLUSTER_KINDS
from .one_cluster import doubling_radii, search_floor

__all__ = [
    "METHODS",
    "Requirements",
    "kssu_theory_terms",
    "requirements",
    "sample_aggregate_theory",
    "separation_main",
    "separation_sample_aggregate",
    "separation_warmup",
    "warmup_theory_terms",
]

METHODS = ("kssu", "sample-aggregate", "pegme")

# Measured safety factors (benchmarks/mixture_recovery.py): the practical thresholds are the
# smallest n at which the named step's signal (points in a cluster) exceeds its noise floor
# (Γ, τ) by these factors.
_SA_T_OVER_GAMMA = 2.2
_SA_BOX_OVER_TAU = 2.0
_KSSU_T_OVER_GAMMA = 2.5
_KSSU_BOX_OVER_TAU = 2.0


@dataclass(frozen=True)
class Requirements:
    """Whether n samples can work for ``method`` (from public quantities only).

    ``n_needed`` is the practical threshold (``constants="practical"``) or the theorem value
    (``"theory"``); ``ok`` is ``n >= n_needed``; ``terms`` maps each named requirement to the n
    it needs, ``dominant`` names the largest; ``knobs`` says what else must hold.
    """

    method: str
    n: int
    n_needed: float
    ok: bool
    constants: str
    terms: dict[str, float]
    dominant: str
    knobs: dict[str, Any] = field(default_factory=dict)
    note: str = ""

    def __str__(self) -> str:
        verdict = "enough" if self.ok else "too few"
        return (
            f"{self.method}: n = {self.n} is {verdict}; needs n >~ {self.n_needed:.3g} "
            f"({self.constants} constants; dominated by {self.dominant}). {self.note}"
        )

    def message(self) -> str:
        """A refusal message naming the n (and knobs) needed."""
        extra = "".join(f"; {k} {v}" for k, v in self.knobs.items())
        return (
            f"method={self.method!r} needs about n >= {self.n_needed:.3g} samples here "
            f"(got n = {self.n}; dominated by {self.dominant}{extra}). Give more data, a larger "
            "budget, fewer components or a larger min_weight"
        )


def _check(n: int, d: int, k: int, epsilon: float, delta: float, min_weight: float) -> None:
    if n < 1 or d < 1 or k < 1:
        raise ValueError("n, d and k must be positive integers")
    if not (epsilon > 0) or not (0 < delta < 1):
        raise ValueError("need epsilon > 0 and 0 < delta < 1")
    if not (0 < min_weight <= 1.0 / k + 1e-12):
        raise ValueError(f"min_weight must be in (0, 1/k] = (0, {1.0 / k:.4g}]")


def _lg(x: float) -> float:
    return math.log(max(x, math.e))


# ----------------------------------------------------------------------------------------------
# Practical thresholds, from the implementation's own budget split
# ----------------------------------------------------------------------------------------------


def _one_cluster_floor(
    eps: float, delta: float, d: int, beta: float, n_radii: int, split: tuple = ONE_CLUSTER_SPLIT
) -> tuple[float, float]:
    """(Γ of the radius search, τ of the box histogram) of one :func:`one_cluster` call."""
    return search_floor(ApproxDP(eps, delta), ONE_CLUSTER_KINDS, split, (1, 1, d, d), n_radii, beta)


def _sa_practical(n: int, d: int, k: int, eps: float, delta: float, w: float, beta: float) -> dict:
    from .sample_aggregate import (
        DEFAULT_RADIUS_RANGE,
        ROUND_SPLIT,
        default_chunk_size,
        plan_sa_budget,
    )

    plan = plan_sa_budget(ApproxDP(eps, delta), k, d)
    T = doubling_radii(*DEFAULT_RADIUS_RANGE).size
    r0 = plan.rounds[0]
    gamma, tau = _one_cluster_floor(r0.epsilon, r0.delta, d, beta / (4 * k), T, ROUND_SPLIT)
    m = default_chunk_size(k, d, w)
    # round 1: t = 0.8·s/k must exceed 2Γ (else a too-small radius passes AboveThreshold); the
    # heaviest box must hold > τ of the ~s/k estimates
    s_radius = k * _SA_T_OVER_GAMMA * gamma / 0.8
    s_box = k * _SA_BOX_OVER_TAU * tau
    return {
        "terms": {
            "1-cluster radius search (t vs Gamma)": s_radius * m,
            "1-cluster box histogram (threshold tau)": s_box * m,
            "one chunk per 2k": 2.0 * k * m,
        },
        "knobs": {"chunk size": m},
    }


def _terrific_floor(
    budget: ApproxDP, m: int, max_points: int, n_radii: int, beta: float
) -> tuple[float, float, float]:
    """(sampling rate γ, Γ, τ) of one subsampled terrific-ball call on m rows (kssu.py)."""
    from .kssu import amplified_budget
    from .terrific_ball import DEFAULT_SPLIT as TERRIFIC_SPLIT
    from .terrific_ball import KINDS as TERRIFIC_KINDS

    rate = min(1.0, max_points / max(m, 1))
    inner = amplified_budget(budget, rate)
    gamma, tau = search_floor(inner, TERRIFIC_KINDS, TERRIFIC_SPLIT, (1, 1, 2, 2, 1), n_radii, beta)
    return rate, gamma, tau


def _kssu_practical(
    n: int,
    d: int,
    k: int,
    eps: float,
    delta: float,
    w: float,
    beta: float,
    max_points: int = 10_000,
    n_radii_max: int = 24,
) -> dict:
    from .kssu import plan_kssu_budget

    plan = plan_kssu_budget(ApproxDP(eps, delta), k)
    beta0 = beta / (10 * k)
    terms: dict[str, float] = {}
    if k > 1:
        # t = n·w/4; the root (largest node, smallest sampling rate) is the hardest: find the
        # smallest n with t·γ >= c·Γ(γ) and the heaviest box (about a third of a component in
        # the sample) above c·τ, by doubling then bisection on this public function
        terr = plan.node_terrific

        def ok(nn: float, which: str) -> bool:
            rate, gamma, tau = _terrific_floor(terr, int(nn), max_points, n_radii_max + 1, beta0)
            t_in = nn * w / 4 * rate
            if which == "radius":
                return t_in >= _KSSU_T_OVER_GAMMA * gamma
            return nn * w * rate / 3 >= _KSSU_BOX_OVER_TAU * tau

        for which, name in (
            ("radius", "terrific radius search (t vs Gamma)"),
            ("box", "terrific box histogram (threshold tau)"),
        ):
            lo, hi = 1.0, 2.0
            while not ok(hi, which) and hi < 1e15:
                lo, hi = hi, hi * 2
            for _ in range(40):
                mid = math.sqrt(lo * hi)
                lo, hi = (lo, mid) if ok(mid, which) else (mid, hi)
            terms[name] = hi
        # private PCA (only when it drops directions, d > k): the spectral noise
        # ‖E‖ ≈ 2√d·σ_E, σ_E = √2·r_X²/(n√(2ρ)), must stay below a tenth of the between-component
        # eigenvalue w·Δ²; an enclosing ball of separated clusters has r_X² ≈ 6Δ², so
        # n >= 120·√d·(√2/√(2ρ))/w
        if d > k and plan.node_pca is not None:  # k = 1: no split, no PCA
            sigma_unit = gaussian_sigma_zcdp(math.sqrt(2.0), plan.node_pca.rho)
            terms["private PCA noise"] = 120.0 * math.sqrt(d) * sigma_unit / w
    # CoinPress per leaf, measured (d = 10): whitened covariance error ≈ d/√n_j (sampling)
    # + 20·d^1.5/(n_j·√ρ_E) (privacy); both below ~0.25 needs the n_j below
    rho_e = plan.estimation.rho / 2.0
    terms["per-component CoinPress"] = (16.0 * d * d + 80.0 * d**1.5 / math.sqrt(rho_e)) / w
    terms["count regularity"] = 12.0 * math.log(2 * k / beta) / w
    return {
        "terms": terms,
        "knobs": {"max_points": max_points, "separation ratio (measured)": ">= 5"},
    }


# ----------------------------------------------------------------------------------------------
# Theory formulas (constants 1, polylog -> log): spec §2
# ----------------------------------------------------------------------------------------------


def separation_main(
    k: int,
    w_i: float,
    w_j: float,
    sigma_i: float,
    sigma_j: float,
    *,
    n: int | None = None,
    beta: float = 0.05,
    c: float = 1.0,
) -> float:
    """Thm 1.1 / 5.1 (S-main / S-5.1, spec §2.1): the mean distance needed between components
    i and j, c·(σ_i + σ_j)·(√(k·ln(nk/β)) + 1/√w_i + 1/√w_j) (the log term with n given, else
    √k). The paper's constant is c = 100; c = 1 shows the shape."""
    log_term = math.sqrt(k * _lg(n * k / beta)) if n is not None else math.sqrt(k)
    return c * (sigma_i + sigma_j) * (log_term + 1 / math.sqrt(w_i) + 1 / math.sqrt(w_j))


def separation_warmup(
    k: int,
    n: int,
    sigma_i: float,
    sigma_j: float,
    *,
    kappa: float = 1.0,
    beta: float = 0.05,
    xi: float = 1.0,
) -> float:
    """Thm 4.4 (S-warm): C·√ℓ·max(σ_i, σ_j), ℓ = max(512 ln(nk/β), k), C = ξ + 16√κ."""
    ell = max(512.0 * math.log(n * k / beta), k)
    return (xi + 16.0 * math.sqrt(kappa)) * math.sqrt(ell) * max(sigma_i, sigma_j)


def separation_sample_aggregate(
    k: int, n: int, sigma_i: float, sigma_j: float, *, beta: float = 0.05
) -> float:
    """Thm 6.1/6.4 with VW02 as the black box (S-SA): (σ_i + σ_j)·14·(k ln(4n/β))^{1/4}."""
    return (sigma_i + sigma_j) * 14.0 * (k * math.log(4 * n / beta)) ** 0.25


def kssu_theory_terms(
    *,
    n: int,
    d: int,
    k: int,
    epsilon: float,
    delta: float,
    min_weight: float,
    alpha: float = 0.2,
    beta: float = 0.05,
    R: float = 1e3,
    sigma_ratio: float = 10.0,
) -> dict[str, Bound]:
    """Thm 1.1 / 5.1 term by term (N1–N9, spec §2.5), constants 1: each a :class:`Bound` on n.

    ε₀, δ₀ are the per-mechanism budgets of the recursion, ε/√(k ln(1/δ)) and δ/(5k); the NS18
    exponent a, the 9^{log*} factor and the n^a factor are set to 1."""
    _check(n, d, k, epsilon, delta, min_weight)
    w, a, b = min_weight, alpha, beta
    eps0 = epsilon / math.sqrt(k * _lg(1 / delta))
    delta0 = delta / (5 * k)
    lk = _lg(2 * k / b)
    T = math.log2(max(R * sigma_ratio * math.sqrt(d), 2.0)) + 1
    eps_dp = epsilon / math.sqrt(_lg(1 / delta))
    n_klsu = (
        (d * d + _lg(1 / b)) / a**2
        + d * d * _lg(d / (a * b * epsilon * delta)) / (a * eps_dp)
        + d**1.5 * math.sqrt(_lg(sigma_ratio)) * _lg(d / (b * epsilon * delta)) / eps_dp
        + math.sqrt(d) * _lg(R * d) * _lg(d / (b * epsilon * delta)) / eps_dp
    )
    terms = {
        "N1 count regularity": Bound(
            max(12 * lk / w, 203 * k * k * lk / a**2),
            "Cond 2.5",
            "12 ln(2k/b)/w_min, 203 k^2 ln(2k/b)/a^2",
        ),
        "N2 spectral norm of X - C": Bound((d + lk) / w, "Lem 3.2", "(d + ln(2k/b))/w_min"),
        "N3 private PCA": Bound(
            k * d**1.5 * math.sqrt(_lg(1 / delta0)) * _lg(1 / b) / (eps0 * w),
            "Cor 5.15",
            "poly(k) d^1.5 sqrt(ln 1/d0) ln(1/b)/(e0 w_min)",
        ),
        "N4 private location": Bound(
            math.sqrt(d) * _lg(n / b) * _lg(1 / delta0) / (eps0 * w),
            "Thm B.1",
            "sqrt(d) polylog/(e0 w_min)",
        ),
        "N5 terrific radius slack": Bound(
            4 * 16 * (math.log(T) + math.log(2 / b)) / (eps0 * w),
            "Alg 2",
            "t = n w/4 >= Gamma = 16(ln T + ln 2/b)/e0",
        ),
        "N6 no spurious terrific ball": Bound(
            (d * _lg(d / w) + _lg(k / b)) / w, "Claim 5.17", "(d ln(d/w) + ln(k/b))/w_min"
        ),
        "N7 lost points": Bound(
            k * _lg(T / b) * _lg(1 / a) / (a * w * eps0), "Thm 5.18", "k ln(T/b) ln(1/a)/(a w e0)"
        ),
        "N8 per-component KLSU": Bound(2 * n_klsu / w, "Thm 5.19/5.20", "n w/2 >= n_KLSU"),
        "N9 weights": Bound(k * _lg(k / b) / (a * epsilon), "Lem 5.21", "k ln(k/b)/(a eps)"),
    }
    return terms


def warmup_theory_terms(
    *,
    n: int,
    d: int,
    k: int,
    epsilon: float,
    delta: float,
    alpha: float = 0.2,
    beta: float = 0.05,
    R0: float = 10.0,
    kappa: float = 1.0,
) -> dict[str, Bound]:
    """Thm 4.4 (PEGME, spherical, equal weights) term by term (W1–W4, spec §2.6), constants 1."""
    _check(n, d, k, epsilon, delta, 1.0 / k)
    a, b = alpha, beta
    ell = max(512.0 * math.log(max(n, 2) * k / b), k)
    lam = R0 + math.sqrt(kappa) * (math.sqrt(d) + math.sqrt(2 * math.log(2 * max(n, 2) / b)))
    s = lam**2 * math.sqrt(2 * math.log(1.25 / delta)) / epsilon
    return {
        "W1 count regularity": Bound(12 * k * _lg(2 * k / b), "Cond 2.5", "12 k ln(2k/b)"),
        "W2 private PCA": Bound(
            2 * k * 4 * math.sqrt(d) * s / (kappa * ell) + k * (d + _lg(k / b)),
            "Lem 4.9",
            "2k B/(kappa l) + k (d + ln(k/b)), B = 4 sqrt(d) s",
        ),
        "W3 clustering": Bound(
            2 * k * math.sqrt(ell) * math.sqrt(k * _lg(1 / delta)) / epsilon,
            "Thm 4.11",
            "2k sqrt(l) sqrt(k ln 1/d)/eps (n^a, 9^log* = 1)",
        ),
        "W4 estimation": Bound(
            k
            * (
                (d + _lg(k / b)) / a**2
                + d * math.sqrt(_lg(k / delta)) / (a * epsilon)
                + math.sqrt(d) * _lg(k / b) / (a * epsilon)
            ),
            "Thm 4.16",
            "k[(d + ln k/b)/a^2 + d sqrt(ln k/d)/(a eps) + ...]",
        ),
        "dimension l <= d": Bound(
            math.inf if ell > d else 0.0, "Thm 4.4", "needs d >= l = max(512 ln(nk/b), k)"
        ),
    }


def sample_aggregate_theory(
    *,
    n: int,
    d: int,
    k: int,
    epsilon: float,
    delta: float,
    min_weight: float,
    alpha: float = 0.2,
    beta: float = 0.05,
    R: float = 1e3,
    sigma_ratio: float = 10.0,
) -> dict[str, Bound]:
    """Thm 6.1 / 6.4 with VW02 (spec §2.7), constants 1: n = m·s, where m is what the black box
    needs and s the number of chunks the 1-cluster aggregation needs."""
    _check(n, d, k, epsilon, delta, min_weight)
    w, a, b = min_weight, alpha, beta
    m = d**3 * _lg(d) / w**2 + d * _lg(k / b) / (w * a * a) + k * k * _lg(k / b) / (a * a)
    s = (
        math.sqrt(d) * math.sqrt(k * _lg(1 / delta)) / epsilon * _lg(n / b)
        + k * _lg(k / b) * _lg(k * n / delta) / epsilon
    )
    return {
        "black box m (VW02)": Bound(m, "Lem 6.3", "d^3/w^2 + d ln(k/b)/(w a^2) + k^2 ln(k/b)/a^2"),
        "chunks s": Bound(
            s, "Thm 6.2/6.4", "sqrt(d k ln 1/d)/eps polylog + k ln(k/b) ln(ks/d)/eps"
        ),
        "n = m s": Bound(m * s, "Thm 6.1", "m * s"),
    }


# ----------------------------------------------------------------------------------------------
# The entry point
# ----------------------------------------------------------------------------------------------


def requirements(
    method: str,
    *,
    n: int,
    d: int,
    k: int,
    epsilon: float,
    delta: float,
    min_weight: float | None = None,
    alpha: float = 0.2,
    beta: float = 0.05,
    constants: str = "practical",
    max_points: int = 10_000,
) -> Requirements:
    """Whether ``n`` samples can work for ``method`` ("kssu", "sample-aggregate" or "pegme"),
    from public quantities only (d, k, the (ε, δ) budget, min_weight defaulting to 1/k).

    ``constants="practical"``: this implementation's thresholds (see the module docstring);
    ``"theory"``: the paper's theorem terms with constants 1 (indicative only). ``max_points``
    is the KSSU learner's subsample size of the pairwise scores (its default)."""
    if method in ("public-heavy", "public-light"):  # issue 5: formulas in their own module
        from .public_heavy import public_requirements

        return public_requirements(method, n=n, d=d, k=k, budget=ApproxDP(epsilon, delta),
                                   min_weight=min_weight, alpha=alpha, beta=beta,
                                   constants=constants)
    if method in ("ppe", "agnostic"):  # issue 6: formulas in privgauss.reductions
        from ..reductions.agnostic import reduction_requirements

        return reduction_requirements(method, n=n, d=d, k=k, epsilon=epsilon, delta=delta,
                                      alpha=alpha, beta=beta, constants=constants)
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if constants not in ("practical", "theory"):
        raise ValueError("constants must be 'practical' or 'theory'")
    w = 1.0 / k if min_weight is None else float(min_weight)
    _check(n, d, k, epsilon, delta, w)
    if constants == "theory":
        if method == "kssu":
            bounds = kssu_theory_terms(
                n=n, d=d, k=k, epsilon=epsilon, delta=delta, min_weight=w, alpha=alpha, beta=beta
            )
        elif method == "pegme":
            bounds = warmup_theory_terms(
                n=n, d=d, k=k, epsilon=epsilon, delta=delta, alpha=alpha, beta=beta
            )
        else:
            bounds = sample_aggregate_theory(
                n=n, d=d, k=k, epsilon=epsilon, delta=delta, min_weight=w, alpha=alpha, beta=beta
            )
            bounds = {"n = m s": bounds["n = m s"]}
        terms = {name: b.n for name, b in bounds.items()}
        note = "theorem terms with constants 1 and polylog -> log: indicative only"
        knobs: dict[str, Any] = {}
    else:
        if method == "sample-aggregate":
            out = _sa_practical(n, d, k, epsilon, delta, w, beta)
        else:
            out = _kssu_practical(n, d, k, epsilon, delta, w, beta, max_points=max_points)
        terms, knobs = out["terms"], out["knobs"]
        note = "practical thresholds of this implementation (measured safety factors)"
    dominant = max(terms, key=lambda key: terms[key])
    need = float(terms[dominant])
    return Requirements(
        method, int(n), need, bool(n >= need), constants, dict(terms), dominant, knobs, note
    )
