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
  ``benchmarks/mixture_recovery.py`` on well-separated synthetic mixtures, and for ``kssu``
  checked with ``benchmarks/mixture_requirements.py`` at separation ratio 5 (the
  :func:`privgauss.datasets.separation_ratio` sense); at ratio 3 its partition failed in 6 of 6
  fits at 1.2× the stated n (d = 2, k = 2, ε = 2), so a failure above the stated n points to too
  little separation, not too few rows.

Nothing here looks at data; every function is safe to call before spending any budget, and
:class:`Requirements` says what n (or which knob) is needed. There is one function per learner
(:func:`kssu_requirements`, :func:`sample_aggregate_requirements`, :func:`pegme_requirements`,
:func:`public_heavy_report`, :func:`public_light_report`); the registry's records call them, and
reaching one by its method name is the registry's: ``pg.mixture_requirements``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..privacy import Budget, zcdp_of
from ..theory import Bound
from .kssu import KSSUOptions
from .kssu_sample_size import practical_terms as _kssu_practical
from .pegme import PegmeOptions
from .public_heavy import min_public_rows, public_heavy_requirements, theory_terms
from .public_light import min_public_rows as light_public_rows
from .public_light import public_light_requirements
from .sample_aggregate import practical_terms as _sa_practical
from .sample_size import Requirements, check_sizes, report
from .sample_size import lg as _lg

__all__ = [
    "Requirements",
    "kssu_requirements",
    "kssu_theory_terms",
    "pegme_requirements",
    "public_heavy_report",
    "public_light_report",
    "sample_aggregate_requirements",
    "sample_aggregate_theory",
    "separation_main",
    "separation_sample_aggregate",
    "separation_warmup",
    "warmup_theory_terms",
]

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
    check_sizes(n, d, k, epsilon, delta, min_weight)
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
    check_sizes(n, d, k, epsilon, delta, 1.0 / k)
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
    check_sizes(n, d, k, epsilon, delta, min_weight)
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
# Each learner's requirement (its registry record calls it: privgauss.mixture_requirements)
# ----------------------------------------------------------------------------------------------


def _constants(constants: str) -> None:
    if constants not in ("practical", "theory"):
        raise ValueError("constants must be 'practical' or 'theory'")


@dataclass(frozen=True)
class _Query:
    """What every learner's requirement is asked: the public sizes, the smallest weight
    (``None``: 1/k), the accuracy and failure targets and which constants."""

    n: int
    d: int
    k: int
    min_weight: float | None
    alpha: float
    beta: float
    constants: str

    @property
    def weight(self) -> float:
        return 1.0 / self.k if self.min_weight is None else float(self.min_weight)


def _paper_report(
    name: str,
    theory: Callable[..., dict[str, Bound]],
    practical: Callable[[float], dict[str, Any]],
    q: _Query,
    epsilon: float,
    delta: float,
    *,
    with_weight: bool = True,
    keep: str | None = None,
) -> Requirements:
    """The :class:`Requirements` of a paper learner (``name`` labels the report): its
    ``theory(...)`` terms (``keep``: only that one; ``with_weight``: it takes ``min_weight``)
    or its ``practical(w)`` ``{"terms", "knobs"}``."""
    _constants(q.constants)
    n, d, k, w = q.n, q.d, q.k, q.weight
    check_sizes(n, d, k, epsilon, delta, w)
    if q.constants == "theory":
        extra = {"min_weight": w} if with_weight else {}
        bounds = theory(n=n, d=d, k=k, epsilon=epsilon, delta=delta, alpha=q.alpha,
                        beta=q.beta, **extra)
        if keep is not None:
            bounds = {keep: bounds[keep]}
        terms = {term: b.n for term, b in bounds.items()}
        note = "theorem terms with constants 1 and polylog -> log: indicative only"
        knobs: dict[str, Any] = {}
    else:
        out = practical(w)
        terms, knobs = out["terms"], out["knobs"]
        note = "practical thresholds of this implementation (measured safety factors)"
    return report(name, n, terms, q.constants, knobs, note)


def kssu_requirements(
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
    kssu_options: KSSUOptions | None = None,
) -> Requirements:
    """Whether ``n`` samples can work for ``kssu`` (KSSU19 Thm 1.1 / 5.1), from public
    quantities only (d, k, the (ε, δ) budget, min_weight defaulting to 1/k).

    ``constants="practical"``: this implementation's thresholds (see the module docstring);
    ``"theory"``: the theorem's terms with constants 1 (indicative only). ``kssu_options``:
    the learner's knobs that move its search floor (``max_points``, the subsample size of the
    pairwise scores, and ``n_radii_max``, its number of radii below a released ball; default
    :class:`~.kssu.KSSUOptions`)."""
    opts = KSSUOptions() if kssu_options is None else kssu_options
    return _paper_report(
        "kssu", kssu_theory_terms,
        lambda w: _kssu_practical(n, d, k, epsilon, delta, w, beta, max_points=opts.max_points,
                                  n_radii_max=opts.n_radii_max),
        _Query(n, d, k, min_weight, alpha, beta, constants), epsilon, delta)


def pegme_requirements(
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
    pegme_options: PegmeOptions | None = None,
) -> Requirements:
    """Whether ``n`` samples can work for ``pegme`` (the KSSU19 warm-up, Thm 4.4), from public
    quantities only. ``"theory"``: terms W1–W4 with constants 1 (indicative only);
    ``"practical"``: the least n at which its private searches can be meaningful
    (:func:`~.pegme.practical_rows`, ``pegme_options`` its knobs; a necessary condition)."""
    from ..privacy import ApproxDP
    from .pegme import practical_rows

    def practical(w: float) -> dict[str, Any]:
        terms = practical_rows(d, k, ApproxDP(epsilon, delta), beta, pegme_options)
        return {"terms": terms, "knobs": {}}

    return _paper_report(
        "pegme", warmup_theory_terms, practical,
        _Query(n, d, k, min_weight, alpha, beta, constants), epsilon, delta,
        with_weight=False)


def sample_aggregate_requirements(
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
) -> Requirements:
    """Whether ``n`` samples can work for ``sample-aggregate`` (KSSU19 Thm 6.1 / 6.4 with
    VW02), from public quantities only. ``"theory"``: n = m·s with constants 1 (indicative
    only); ``"practical"``: this implementation's thresholds."""
    return _paper_report(
        "sample-aggregate", sample_aggregate_theory,
        lambda w: _sa_practical(n, d, k, epsilon, delta, w, beta),
        _Query(n, d, k, min_weight, alpha, beta, constants), epsilon, delta, keep="n = m s")


def _public_report(
    name: str,
    practical: Callable[..., dict[str, float]],
    fewest: Callable[[int, float], int],
    extra_theory: Callable[[int, int, float], dict[str, float]],
    q: _Query,
    budget: Budget,
    n_public: int | None,
) -> Requirements:
    """The :class:`Requirements` of a BKS22 public-data learner (``name`` labels the report):
    its ``practical(...)`` terms or the Thm 4.29 terms plus ``extra_theory(d, k, ρ)``, and
    ``fewest(d, w)`` public rows."""
    n, d, k, w, beta = q.n, q.d, q.k, q.weight, q.beta
    rho = zcdp_of(budget, name)
    knobs: dict[str, Any] = {"public rows": f">= {fewest(d, w)}"}
    if q.constants == "theory":
        bounds = theory_terms(d=d, k=k, rho=rho, min_weight=w, alpha=q.alpha, beta=beta)
        terms = {term: b.n for term, b in bounds.items() if term != "public rows m"}
        terms.update(extra_theory(d, k, rho))
        note = "theorem terms with constants 1 and polylog -> log: indicative only"
    else:
        terms = practical(n=n, d=d, k=k, rho=rho, min_weight=w, beta=beta)
        note = "practical thresholds of this implementation (measured safety factors)"
    if n_public is not None and n_public < fewest(d, w):
        terms["too few public rows"] = math.inf
    return report(name, n, terms, q.constants, knobs, note)


def public_heavy_report(
    *,
    n: int,
    d: int,
    k: int,
    budget: Budget,
    min_weight: float | None = None,
    beta: float = 0.05,
    alpha: float = 0.2,
    constants: str = "practical",
    n_public: int | None = None,
) -> Requirements:
    """:class:`Requirements` of ``public-heavy`` from public quantities only (``budget`` ZCDP
    or (ε, δ) with δ > 0). ``"practical"``: this implementation's measured thresholds;
    ``"theory"``: Thm 4.29 terms with constants 1 (indicative only). ``n_public`` (if given)
    is checked against :func:`~.public_heavy.min_public_rows`."""
    return _public_report(
        "public-heavy", public_heavy_requirements, min_public_rows, lambda d, k, rho: {},
        _Query(n, d, k, min_weight, alpha, beta, constants), budget, n_public)


def public_light_report(
    *,
    n: int,
    d: int,
    k: int,
    budget: Budget,
    min_weight: float | None = None,
    beta: float = 0.05,
    alpha: float = 0.2,
    constants: str = "practical",
    n_public: int | None = None,
) -> Requirements:
    """:class:`Requirements` of ``public-light`` from public quantities only (``budget`` ZCDP
    or (ε, δ) with δ > 0). ``"practical"``: this implementation's measured thresholds;
    ``"theory"``: Thm 4.24 terms with constants 1 and its d^1.5 k^2.5 clustering term
    (indicative only). ``n_public`` (if given) is checked against
    :func:`~.public_light.min_public_rows`."""
    return _public_report(
        "public-light", public_light_requirements, light_public_rows,
        lambda d, k, rho: {"clustering d^1.5 k^2.5": d**1.5 * k**2.5 / math.sqrt(rho)},
        _Query(n, d, k, min_weight, alpha, beta, constants), budget, n_public)
