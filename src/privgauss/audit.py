"""Empirical, black-box privacy auditing of a mechanism on one pair of neighbouring datasets.

A mechanism ``M`` is (ε, δ)-DP only if, for every pair of neighbours ``D, D'`` and every event
``S``, ``P[M(D) ∈ S] ≤ e^ε P[M(D') ∈ S] + δ``. Hence any event with ``p = P[M(D) ∈ S]`` and
``q = P[M(D') ∈ S]`` certifies ``ε ≥ ln((p − δ) / q)``. :func:`audit_mechanism` turns this into a
high-confidence *lower bound* on the true ε of ``M`` (at the given δ) by sampling:

1. **Sampling.** ``M`` is run ``n_runs`` times on ``data`` and ``n_runs`` times on ``neighbour``.
   Four child generators are spawned from ``np.random.SeedSequence(random_state)``, one per
   (dataset, half) pair, and each run draws from its stream, so the runs are independent and the
   audit is reproducible. The mechanism must take all of its randomness from the ``rng`` it gets.
2. **Statistic.** Each output is mapped to a number. By default a numeric scalar is used as is; a
   numeric vector (NumPy array or list; larger arrays are flattened) is projected onto a direction
   learnt from the selection half — the difference of the mean outputs on ``D`` and ``D'``, and
   the Fisher direction (that difference whitened by the pooled covariance); the better of the two
   is kept. A user ``statistic`` may return a float or a 1-D array (projected the same way).
   Without a ``statistic``, non-numeric hashable outputs (labels, tuples, …) are treated as
   discrete: events are ``output == v`` for each observed ``v`` and unions of the values with the
   largest estimated likelihood ratio.
3. **Selection half.** The first ``⌊n_runs/2⌋`` runs of each dataset choose the event: the scan
   covers ``{stat > t}`` and ``{stat < t}`` for thresholds ``t`` midway between consecutive
   distinct pooled statistics (all of them when there are few, else after a grid of quantiles),
   in both orderings (``p`` measured
   on ``D`` and ``q`` on ``D'``, or the reverse). Each candidate is scored by the bound of step 4
   computed on the selection half with the error level divided by the number of candidates (a
   simultaneous bound): the plug-in estimate of ``ln((p − δ)/q)`` shrunk by its sampling error, so
   that noisy events — e.g. far-tail events seen a handful of times, whose plug-in ratio is ``x/0``
   — are not chosen merely because they got lucky on the selection half.
4. **Estimation half.** On the other, independent runs, Clopper–Pearson intervals give a lower
   bound ``p_low`` on ``p`` and an upper bound ``q_high`` on ``q``, each at level
   ``1 − (1 − confidence)/2`` (union bound), and the reported bound is
   ``max(0, ln((p_low − δ)/q_high))`` (``0`` if ``p_low ≤ δ``).

Because the event is fixed before the estimation half is looked at, the estimation counts are plain
binomial draws for that one event: no multiple-testing correction for the many candidates scanned
is needed, and the reported bound holds with probability at least ``confidence``. In particular a
correct mechanism fails the audit (``passed`` is False) with probability at most
``1 − confidence``. A passing audit is *not* a proof of privacy: it only tests one pair of
neighbours and one family of events.

**Estimators** are audited through :func:`estimator_mechanism`, whose output is the fit's
statistic followed by its whole :class:`FitOutcome` (:func:`fit_outcome`): success, ⊥
(``EstimationFailed``) or any other exception by type, the warning categories emitted, the
number of ledger entries and the total spent. A fit whose exception, warnings or ledger depend on
the one record that differs is flagged like a fit whose estimate does (privacy rule 10).
"""

from __future__ import annotations

import math
import numbers
import warnings
import zlib
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .privacy import Budget

__all__ = [
    "OUTCOME_FEATURES",
    "AuditResult",
    "FitOutcome",
    "audit_mechanism",
    "estimator_mechanism",
    "fit_outcome",
    "outcome_features",
    "worst_case_pairs",
]

_MAX_THRESHOLDS = 2000  # thresholds scanned per candidate statistic on the selection half
_MAX_FISHER_DIM = 500  # the Fisher direction is only tried up to this output dimension
_RIDGE = 1e-9  # relative ridge added to the pooled covariance for the Fisher direction
_PROGRESS_CHUNK = 1000  # runs between progress-bar updates


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`audit_mechanism`.

    ``epsilon_lower_bound`` holds with probability at least ``confidence``; it is 0.0 when nothing
    distinguishes the two datasets. ``n_runs`` counts runs per dataset (both halves), and
    ``passed`` is ``epsilon_lower_bound <= claimed_epsilon``.
    """

    epsilon_lower_bound: float
    claimed_epsilon: float
    delta: float
    confidence: float
    n_runs: int
    event: str
    passed: bool

    def __str__(self) -> str:
        verdict = "PASSED" if self.passed else "FAILED"
        return (
            f"{verdict}: epsilon >= {self.epsilon_lower_bound:.4f} at {100 * self.confidence:g}% "
            f"confidence (claimed epsilon={self.claimed_epsilon:g}, delta={self.delta:g}, "
            f"{self.n_runs} runs per dataset; event: {self.event})"
        )


@dataclass(frozen=True)
class _Choice:
    """An event chosen on the selection half, with its counts on the estimation half."""

    score: float
    description: str
    k_p: int
    n_p: int
    k_q: int
    n_q: int


def audit_mechanism(
    mechanism: Callable[[Any, np.random.Generator], Any],
    data: Any,
    neighbour: Any,
    *,
    epsilon: float,
    delta: float = 0.0,
    n_runs: int = 20_000,
    statistic: Callable[[Any], float | np.ndarray] | None = None,
    confidence: float = 0.999,
    random_state: int | None = 0,
    progress: bool = False,
) -> AuditResult:
    """Lower-bound the ε of ``mechanism`` at ``delta`` on the neighbours ``data``, ``neighbour``.

    ``mechanism(data, rng)`` must draw all its randomness from ``rng``. ``statistic`` maps an
    output to a float or 1-D array (default: see the module docstring). ``epsilon`` is the
    claimed ε, used only for ``passed``. See the module docstring for the method.

    Raises:
        ValueError: invalid parameters, outputs of inconsistent shapes, or non-finite statistics.
        TypeError: outputs that are neither numeric nor hashable and no ``statistic`` is given,
            or a ``statistic`` that does not return numbers.
    """
    _validate(epsilon=epsilon, delta=delta, n_runs=n_runs, confidence=confidence)
    alpha = (1.0 - confidence) / 2.0
    m_sel = n_runs // 2
    m_est = n_runs - m_sel

    streams = [np.random.default_rng(s) for s in np.random.SeedSequence(random_state).spawn(4)]
    plan = [(data, m_sel), (neighbour, m_sel), (data, m_est), (neighbour, m_est)]
    from tqdm import tqdm  # imported here: scipy.stats and tqdm are slow to import

    bar = tqdm(total=2 * n_runs, desc="privacy audit", disable=not progress)
    groups: list[list[Any]] = []
    try:
        for (dataset, m), rng in zip(plan, streams, strict=True):
            outs = []
            for i in range(m):
                outs.append(mechanism(dataset, rng))
                if (i + 1) % _PROGRESS_CHUNK == 0:
                    bar.update(_PROGRESS_CHUNK)
            bar.update(m % _PROGRESS_CHUNK)
            groups.append(outs)
    finally:
        bar.close()

    if statistic is not None:
        features = [[_numeric_or_raise(statistic(o)) for o in g] for g in groups]
        choice = _numeric_choice(features, delta, alpha)
    else:
        numeric = [[_as_numeric(o) for o in g] for g in groups]
        if all(x is not None for g in numeric for x in g):
            choice = _numeric_choice(numeric, delta, alpha)  # type: ignore[arg-type]  # no None: checked above
        elif all(_is_hashable(o) for g in groups for o in g):
            choice = _discrete_choice(groups, delta, alpha)
        else:
            raise TypeError(
                "mechanism outputs are neither numeric nor hashable: pass a `statistic` mapping "
                "each output to a float or 1-D array"
            )

    raw = _log_ratio_bound(
        np.array([choice.k_p]), choice.n_p, np.array([choice.k_q]), choice.n_q, delta, alpha
    )[0]
    bound = float(raw) if math.isfinite(raw) and raw > 0.0 else 0.0
    return AuditResult(
        epsilon_lower_bound=bound,
        claimed_epsilon=float(epsilon),
        delta=float(delta),
        confidence=float(confidence),
        n_runs=int(n_runs),
        event=choice.description,
        passed=bound <= epsilon,
    )


def _validate(*, epsilon: float, delta: float, n_runs: int, confidence: float) -> None:
    if isinstance(n_runs, bool) or not isinstance(n_runs, numbers.Integral) or n_runs < 100:
        raise ValueError("n_runs must be an integer >= 100")
    if not (isinstance(confidence, numbers.Real) and 0.0 < confidence < 1.0):
        raise ValueError("confidence must lie strictly between 0 and 1")
    if not (isinstance(epsilon, numbers.Real) and math.isfinite(epsilon) and epsilon > 0.0):
        raise ValueError("epsilon must be a finite number > 0")
    if not (isinstance(delta, numbers.Real) and 0.0 <= delta < 1.0):
        raise ValueError("delta must lie in [0, 1)")


# --------------------------------------------------------------------------- bounds


def _cp_lower(k: np.ndarray, n: int, alpha: float) -> np.ndarray:
    """One-sided Clopper–Pearson lower bounds (level ``1 - alpha``) for ``k`` successes of ``n``."""
    from scipy.stats import beta

    k = np.asarray(k, dtype=float)
    out = np.zeros_like(k)
    pos = k > 0
    out[pos] = beta.ppf(alpha, k[pos], n - k[pos] + 1)
    return out


def _cp_upper(k: np.ndarray, n: int, alpha: float) -> np.ndarray:
    """One-sided Clopper–Pearson upper bounds (level ``1 - alpha``) for ``k`` successes of ``n``."""
    from scipy.stats import beta

    k = np.asarray(k, dtype=float)
    out = np.ones_like(k)
    below = k < n
    out[below] = beta.ppf(1.0 - alpha, k[below] + 1, n - k[below])
    return out


def _log_ratio_bound(
    k_p: np.ndarray, n_p: int, k_q: np.ndarray, n_q: int, delta: float, alpha: float
) -> np.ndarray:
    """``ln((p_low - delta) / q_high)`` per candidate, ``-inf`` where ``p_low <= delta``."""
    excess = _cp_lower(k_p, n_p, alpha) - delta
    q_high = _cp_upper(k_q, n_q, alpha)
    out = np.full(excess.shape, -np.inf)
    ok = excess > 0
    out[ok] = np.log(excess[ok] / q_high[ok])
    return out


# --------------------------------------------------------------------------- numeric outputs


def _as_numeric(x: Any) -> np.ndarray | None:
    """A float array for a real scalar, real array or list of reals; ``None`` otherwise."""
    if isinstance(x, bool | np.bool_ | numbers.Real):
        return np.asarray(float(x))
    if isinstance(x, np.ndarray) and x.dtype.kind in "biuf":
        return x.astype(float).ravel()
    if isinstance(x, list):
        try:
            return np.asarray(x, dtype=float).ravel()
        except (TypeError, ValueError):
            return None
    return None


def _numeric_or_raise(x: Any) -> np.ndarray:
    arr = _as_numeric(x)
    if arr is None and isinstance(x, tuple):
        arr = _as_numeric(list(x))
    if arr is None:
        raise TypeError("`statistic` must return a real number or a 1-D array of reals")
    return arr


def _stack(group: Sequence[np.ndarray], dim: int) -> np.ndarray:
    if any(a.size != dim for a in group):
        raise ValueError("mechanism outputs (or statistic values) have inconsistent sizes")
    out = np.asarray(group, dtype=float).reshape(len(group), dim)
    if not np.all(np.isfinite(out)):
        raise ValueError("mechanism outputs (or statistic values) must be finite")
    return out


def _numeric_choice(features: list[list[np.ndarray]], delta: float, alpha: float) -> _Choice:
    dim = features[0][0].size
    sel_d, sel_n, est_d, est_n = (_stack(g, dim) for g in features)
    if dim == 1:
        views = [("stat", sel_d[:, 0], sel_n[:, 0], est_d[:, 0], est_n[:, 0])]
    else:
        views = [
            (f"<stat, w> ({name} w)", sel_d @ w, sel_n @ w, est_d @ w, est_n @ w)
            for name, w in _directions(sel_d, sel_n)
        ]
    best: _Choice | None = None
    for label, s_d, s_n, e_d, e_n in views:
        choice = _threshold_choice(label, s_d, s_n, e_d, e_n, delta, alpha)
        if best is None or choice.score > best.score:
            best = choice
    assert best is not None
    return best


def _directions(sel_d: np.ndarray, sel_n: np.ndarray) -> list[tuple[str, np.ndarray]]:
    """Projection directions learnt on the selection half: mean difference, then Fisher's."""
    diff = sel_d.mean(axis=0) - sel_n.mean(axis=0)
    out = [("mean-difference", diff)]
    dim = diff.size
    if dim <= _MAX_FISHER_DIM and sel_d.shape[0] + sel_n.shape[0] > dim + 2:
        centred = np.concatenate([sel_d - sel_d.mean(axis=0), sel_n - sel_n.mean(axis=0)])
        cov = centred.T @ centred / (centred.shape[0] - 2)
        ridge = _RIDGE * max(float(np.trace(cov)) / dim, np.finfo(float).tiny)
        try:
            fisher = np.linalg.solve(cov + ridge * np.eye(dim), diff)
        except np.linalg.LinAlgError:
            return out
        if np.all(np.isfinite(fisher)):
            out.append(("Fisher", fisher))
    return out


def _threshold_grid(pooled: np.ndarray) -> np.ndarray:
    """Candidate thresholds: midway between consecutive distinct pooled values (all of them if
    few, else after a grid of pooled quantiles).

    ``{stat > mid}`` selects the same runs of the selection half as ``{stat > lower value}``,
    but on the estimation half a threshold in the middle of a gap is not crossed by runs that
    merely land a little beyond the selection half's extreme (a cluster against a cluster, as
    in an outcome that differs between D and D′ and some noise in the statistic)."""
    values = np.unique(pooled)
    if values.size < 2:
        return values
    lower = np.arange(values.size - 1)
    if lower.size > _MAX_THRESHOLDS:
        levels = np.linspace(0.0, 1.0, _MAX_THRESHOLDS)
        grid = np.quantile(pooled, levels, method="inverted_cdf")
        lower = np.unique(np.minimum(np.searchsorted(values, grid), values.size - 2))
    a, b = values[lower], values[lower + 1]
    mid = a / 2 + b / 2
    return np.where((a < mid) & (mid < b), mid, a)  # adjacent floats: the lower value


def _threshold_choice(
    label: str,
    sel_d: np.ndarray,
    sel_n: np.ndarray,
    est_d: np.ndarray,
    est_n: np.ndarray,
    delta: float,
    alpha: float,
) -> _Choice:
    """Best event ``{label > t}`` / ``{label < t}`` on the selection half, counted on the other."""
    a, b = np.sort(sel_d), np.sort(sel_n)
    pooled = np.concatenate([a, b])
    thresholds = _threshold_grid(pooled)
    gt_a = a.size - np.searchsorted(a, thresholds, side="right")
    gt_b = b.size - np.searchsorted(b, thresholds, side="right")
    lt_a = np.searchsorted(a, thresholds, side="left")
    lt_b = np.searchsorted(b, thresholds, side="left")
    # (side, p measured on data?, k_p, n_p, k_q, n_q)
    candidates = [
        (">", True, gt_a, a.size, gt_b, b.size),
        (">", False, gt_b, b.size, gt_a, a.size),
        ("<", True, lt_a, a.size, lt_b, b.size),
        ("<", False, lt_b, b.size, lt_a, a.size),
    ]
    alpha_sel = alpha / (len(candidates) * thresholds.size)  # simultaneous over all candidates
    best = (-np.inf, ">", True, float(thresholds[0]))
    for side, d_first, k_p, n_p, k_q, n_q in candidates:
        scores = _log_ratio_bound(k_p, n_p, k_q, n_q, delta, alpha_sel)
        i = int(np.argmax(scores))
        if scores[i] > best[0]:
            best = (float(scores[i]), side, d_first, float(thresholds[i]))
    score, side, d_first, t = best
    p_half, q_half = (est_d, est_n) if d_first else (est_n, est_d)

    def count(x: np.ndarray) -> int:
        return int(np.count_nonzero(x > t if side == ">" else x < t))

    return _Choice(
        score=score,
        description=f"{label} {side} {t:.6g} {_ordering(d_first)}",
        k_p=count(p_half),
        n_p=p_half.size,
        k_q=count(q_half),
        n_q=q_half.size,
    )


# --------------------------------------------------------------------------- discrete outputs


def _is_hashable(x: Any) -> bool:
    if not isinstance(x, Hashable):
        return False
    try:
        hash(x)
    except TypeError:
        return False
    return True


def _discrete_choice(groups: list[list[Any]], delta: float, alpha: float) -> _Choice:
    """Best event ``output in V`` (single values, and unions of the most telling values)."""
    sel_d, sel_n, est_d, est_n = groups
    count_d, count_n = Counter(sel_d), Counter(sel_n)
    values = list(count_d.keys() | count_n.keys())
    best: tuple[float, frozenset[Any], bool] = (-np.inf, frozenset(values[:1]), True)
    for d_first in (True, False):
        cp, cq = (count_d, count_n) if d_first else (count_n, count_d)
        n_p, n_q = (len(sel_d), len(sel_n)) if d_first else (len(sel_n), len(sel_d))
        kp = np.array([cp[v] for v in values], dtype=float)
        kq = np.array([cq[v] for v in values], dtype=float)
        order = np.argsort(-((kp + 0.5) / n_p) / ((kq + 0.5) / n_q), kind="stable")
        # candidates: each single value, then prefixes of ``order`` of length 2 .. len - 1
        set_kp = np.concatenate([kp, np.cumsum(kp[order])[1:-1]])
        set_kq = np.concatenate([kq, np.cumsum(kq[order])[1:-1]])
        alpha_sel = alpha / (2 * set_kp.size)  # simultaneous over all candidates
        scores = _log_ratio_bound(set_kp, n_p, set_kq, n_q, delta, alpha_sel)
        i = int(np.argmax(scores))
        if scores[i] > best[0]:
            members = (
                values[i : i + 1]
                if i < len(values)
                else [values[j] for j in order[: i - len(values) + 2]]
            )
            best = (float(scores[i]), frozenset(members), d_first)
    score, chosen, d_first = best
    p_half, q_half = (est_d, est_n) if d_first else (est_n, est_d)
    return _Choice(
        score=score,
        description=f"{_describe_set(chosen)} {_ordering(d_first)}",
        k_p=sum(o in chosen for o in p_half),
        n_p=len(p_half),
        k_q=sum(o in chosen for o in q_half),
        n_q=len(q_half),
    )


def _describe_set(values: frozenset[Any]) -> str:
    if len(values) == 1:
        return f"output == {_short_repr(next(iter(values)))}"
    shown = sorted(_short_repr(v) for v in values)
    body = ", ".join(shown[:5]) + (f", ... ({len(shown)} values)" if len(shown) > 5 else "")
    return f"output in {{{body}}}"


def _short_repr(v: Any, limit: int = 40) -> str:
    r = repr(v)
    return r if len(r) <= limit else r[: limit - 3] + "..."


def _ordering(d_first: bool) -> str:
    return "(D vs D')" if d_first else "(D' vs D)"


# ------------------------------------------------------------------ neighbours


def worst_case_pairs(
    X: Any, *, radius: float, center: Any = None, far: float = 1e6
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Replace-one neighbours of ``X`` (n, d) built to stress a clipping estimator.

    The last row is replaced in every pair (``center`` defaults to the origin; ``radius`` is the
    clipping radius the estimator is believed to use, ``far`` a multiple of it):

    * ``"boundary"`` — the record sits at ``center + radius·e₁`` in D and ``center − radius·e₁``
      in D′: the largest move a radius-``radius`` clip allows.
    * ``"outlier"`` — ``center + radius·e₁`` against a far outlier ``center + far·radius·e₁``
      (identical after a correct clip; a clip radius read from the data tells them apart).
    * ``"duplicate"`` — the record is a copy of row 0 in D and stays itself in D′.
    * ``"partition"`` — the record in D′ is the row of X farthest from it, which in a separated
      mixture lies in another cluster (a record moved across a partition).

    Returns name → (D, D′), fresh arrays; ``X`` is not modified.
    """
    X = np.array(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2:
        raise ValueError("worst_case_pairs needs a 2-D array with at least 2 rows")
    if not (math.isfinite(radius) and radius > 0 and math.isfinite(far) and far >= 1):
        raise ValueError("radius must be finite and > 0, far finite and >= 1")
    n, d = X.shape
    c = np.zeros(d) if center is None else np.asarray(center, dtype=np.float64).reshape(d)
    e1 = np.zeros(d)
    e1[0] = 1.0

    def with_last(row: np.ndarray) -> np.ndarray:
        out = X.copy()
        out[-1] = row
        return out

    farthest = X[int(np.argmax(np.linalg.norm(X - X[-1], axis=1)))]
    return {
        "boundary": (with_last(c + radius * e1), with_last(c - radius * e1)),
        "outlier": (with_last(c + radius * e1), with_last(c + far * radius * e1)),
        "duplicate": (with_last(X[0]), X.copy()),
        "partition": (X.copy(), with_last(farthest)),
    }


# ------------------------------------------------------------------ the whole outcome of a fit


@dataclass(frozen=True)
class FitOutcome:
    """Everything a fit shows besides its estimates (privacy rule 10: "one trust boundary").

    Neighbouring datasets must end in equal outcomes unless the difference is a DP output; two
    outcomes are compared with ``==`` (and are hashable, so they can be counted).

    * ``kind``: ``"success"``, ``"failed"`` (:class:`~privgauss.exceptions.EstimationFailed`, a
      DP output ⊥), ``"crashed"`` (an ``EstimationFailed`` that wraps an error raised inside
      the algorithm after spending: ``internal`` — not a DP output) or ``"raised"`` (any
      other exception, caught).
    * ``exception_type``: the qualified name of the exception's type (builtins unqualified, e.g.
      ``"ValueError"``; others with their module), ``None`` on success.
    * ``warning_categories``: names (same convention) of the warning categories emitted during
      the fit, each at most once, whatever the warning filters outside the fit.
    * ``ledger_length``: the ledger entries charged during the fit (``None``: not observable).
    * ``spent``: what those entries add up to, in the notion of the fit's budget (``None`` when
      nothing was charged or it is not observable).

    See :func:`fit_outcome` for how the ledger is observed when the fit raises.
    """

    kind: str
    exception_type: str | None = None
    warning_categories: frozenset[str] = frozenset()
    ledger_length: int | None = None
    spent: Budget | None = None

    @property
    def label(self) -> str:
        """A short description without ``spent`` and module names, e.g.
        ``"failed EstimationFailed, 1 ledger entry"``."""

        def short(name: str) -> str:
            return name.rsplit(".", 1)[-1]

        parts = [self.kind]
        if self.exception_type is not None:
            parts[0] += " " + short(self.exception_type)
        if self.warning_categories:
            parts.append("warned " + "+".join(sorted(map(short, self.warning_categories))))
        if self.ledger_length is not None:
            plural = "y" if self.ledger_length == 1 else "ies"
            parts.append(f"{self.ledger_length} ledger entr{plural}")
        return ", ".join(parts)


def fit_outcome(estimator: Any, X: Any, public_X: Any = None) -> FitOutcome:
    """Fit ``estimator`` on ``X`` (``estimator.fit(X, public_X=public_X)``) and return the outcome.

    Any :class:`Exception` raised by ``fit`` is caught and recorded (its message is not);
    warnings are recorded under ``simplefilter("always")`` and not re-emitted. On success
    ``estimator`` is fitted in place, as by ``fit`` itself.

    **How the ledger is observed**, also when the fit raises (the estimators set ``ledger_``
    only on success, and build a per-fit ``Accountant(budget, parent=accountant)``):

    * ``estimator.accountant`` is ``None`` and the estimator has its own budget (``rho=`` or
      ``epsilon=``, with ``delta=``): for the duration of the fit, ``accountant`` is set to a
      fresh observer :class:`~privgauss.privacy.Accountant` whose total is that same budget,
      and restored to ``None`` afterwards. The per-fit accountant forwards every charge to its
      parent, and a parent with the same total refuses exactly what the per-fit accountant
      refuses, so the fit is unchanged while its ledger is mirrored in the observer.
    * ``estimator.accountant`` is already an accountant (a shared total): the entries it gains
      during the fit are read, and ``spent`` is what they add up to.
    * otherwise (no ``accountant`` parameter, or no own budget): ``ledger_`` and
      ``privacy_spent_`` of the fitted estimator on success, ``None`` after an exception.
    """
    return _fit_and_observe(estimator, X, public_X)[0]


def _type_name(cls: type) -> str:
    name = cls.__qualname__
    return name if cls.__module__ == "builtins" else f"{cls.__module__}.{name}"


def _fit_and_observe(estimator: Any, X: Any, public_X: Any) -> tuple[FitOutcome, Any]:
    """:func:`fit_outcome` and the fitted estimator (``None`` unless the fit succeeded)."""
    from .exceptions import EstimationFailed

    observed, start, injected = _observe(estimator)
    fitted: Any = None
    kind, exc_type = "success", None
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                fitted = estimator.fit(X, public_X=public_X)
            except EstimationFailed as exc:  # internal: an error after spending, not ⊥
                kind = "crashed" if exc.internal else "failed"
                exc_type = _type_name(type(exc))
            except Exception as exc:  # every outcome of the fit is audited, none crashes it
                kind, exc_type = "raised", _type_name(type(exc))
    finally:
        if injected:
            estimator.accountant = None
    categories = frozenset(_type_name(w.category) for w in caught)
    if observed is not None:
        entries = observed.ledger[start:]
        length: int | None = len(entries)
        spent = observed.spent if start == 0 else _spent_by(entries, observed.total)
    elif fitted is not None:
        ledger = getattr(fitted, "ledger_", None)
        length = None if ledger is None else len(ledger)
        spent = getattr(fitted, "privacy_spent_", None)
    else:
        length, spent = None, None
    return FitOutcome(kind, exc_type, categories, length, spent), fitted


def _observe(estimator: Any) -> tuple[Any, int, bool]:
    """(accountant to read, ledger index the fit starts at, whether it was injected)."""
    from .privacy import Accountant, make_budget

    shared = getattr(estimator, "accountant", _MISSING)
    if isinstance(shared, Accountant):
        return shared, len(shared.ledger), False
    if shared is not None:
        return None, 0, False
    try:
        total = make_budget(
            rho=getattr(estimator, "rho", None),
            epsilon=getattr(estimator, "epsilon", None),
            delta=getattr(estimator, "delta", None),
        )
    except (ValueError, TypeError):  # no valid own budget: the fit decides what happens
        return None, 0, False
    observer = Accountant(total)
    estimator.accountant = observer
    return observer, 0, True


def _spent_by(entries: Sequence[Any], total: Budget) -> Budget | None:
    """What ``entries`` (charged into an accountant with ``total``) add up to, on their own."""
    from .privacy import Accountant

    replay = Accountant(total)
    for entry in entries:
        replay.spend(entry.cost)
    return replay.spent


_MISSING = object()

OUTCOME_FEATURES = (
    "raised",
    "exception type code",
    "warning categories code",
    "number of warning categories",
    "ledger length",
    "spent (rho or epsilon)",
    "spent delta",
)
"""Names of the coordinates :func:`estimator_mechanism` appends after the statistic."""


def _code(name: str | None) -> float:
    """A stable code in (0, 1] for a name (CRC-32, same in every process), 0 for ``None``."""
    return 0.0 if name is None else (zlib.crc32(name.encode()) + 1) / 2.0**32


def _spent_features(spent: Budget | None) -> tuple[float, float]:
    """(ρ or ε, δ) rounded to 12 significant digits; (0, 0) for nothing, -1 for non-finite."""
    if spent is None:
        return 0.0, 0.0
    main = getattr(spent, "rho", None)
    main = spent.epsilon if main is None else main  # type: ignore[union-attr]  # no rho: has epsilon
    values = (float(main), float(getattr(spent, "delta", 0.0)))
    main_f, delta_f = (float(f"{v:.12g}") if math.isfinite(v) else -1.0 for v in values)
    return main_f, delta_f


def outcome_features(outcome: FitOutcome) -> np.ndarray:
    """The outcome as the numbers :data:`OUTCOME_FEATURES` (same outcome, same numbers)."""
    warned = "|".join(sorted(outcome.warning_categories)) or None
    return np.array(
        [
            1.0 if outcome.kind in ("raised", "crashed") else 0.0,
            _code(outcome.exception_type),
            _code(warned),
            float(len(outcome.warning_categories)),
            -1.0 if outcome.ledger_length is None else float(outcome.ledger_length),
            *_spent_features(outcome.spent),
        ]
    )


def estimator_mechanism(
    make_estimator: Callable[[np.random.Generator], Any],
    statistic: Callable[[Any], Any],
    size: int,
    *,
    public_X: Any = None,
    on_outcome: Callable[[Any, FitOutcome], None] | None = None,
) -> Callable[[Any, np.random.Generator], np.ndarray]:
    """A mechanism for :func:`audit_mechanism` that fits an estimator and summarises the fit.

    ``make_estimator(rng)`` returns an unfitted estimator drawing its noise from ``rng``
    (``random_state=rng``); ``statistic(fitted)`` maps a successful fit to ``size`` floats. The
    output is ``[failed, *statistic, *outcome]`` (``size + 1 + len(OUTCOME_FEATURES)`` floats):

    * ``failed`` is 1 when the fit raised :class:`~privgauss.exceptions.EstimationFailed`;
    * the statistic is zeroed when the fit raised anything;
    * ``outcome`` is :func:`outcome_features` of :func:`fit_outcome`: whether another exception
      was raised and a code of its type, a code and the number of the warning categories
      emitted, the ledger length and the total spent.

    A failure (⊥), an exception, a warning or an extra ledger entry is an output of the
    mechanism too: when it depends on the record that differs between D and D′, the projections
    of :func:`audit_mechanism` see it (a coordinate that is constant within each dataset but
    differs between them gets the largest Fisher weight) and the event is measured like any
    other. Coordinates that are equal on both datasets do not change the audit. Exceptions of
    ``make_estimator`` and ``statistic`` are not outcomes and propagate. ``on_outcome(data,
    outcome)``, if given, is called after every fit (e.g. to count the outcomes per dataset).
    """

    def mechanism(data: Any, rng: np.random.Generator) -> np.ndarray:
        outcome, fitted = _fit_and_observe(make_estimator(rng), data, public_X)
        if on_outcome is not None:
            on_outcome(data, outcome)
        head = np.zeros(size + 1)
        if outcome.kind == "success":
            stat = np.asarray(statistic(fitted), dtype=np.float64).ravel()
            if stat.size != size:
                raise ValueError(f"statistic returned {stat.size} values, expected {size}")
            head[1:] = stat
        elif outcome.kind == "failed":
            head[0] = 1.0
        return np.concatenate([head, outcome_features(outcome)])

    return mechanism
