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

**Estimators** are audited through :func:`~.outcome.estimator_mechanism`, whose output is the
fit's statistic followed by its whole :class:`~.outcome.FitOutcome`
(:func:`~.outcome.fit_outcome`): success, ⊥ (``EstimationFailed``) or any other exception by type,
the warning categories emitted, the number of ledger entries and the total spent. A fit whose
exception, warnings or ledger depend on the one record that differs is flagged like a fit whose
estimate does (privacy rule 10).
"""

from __future__ import annotations

import math
import numbers
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..privacy import check_delta

__all__ = ["AuditResult", "audit_mechanism"]

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
    check_delta(delta, zero_ok=True, message="delta must lie in [0, 1)")


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

