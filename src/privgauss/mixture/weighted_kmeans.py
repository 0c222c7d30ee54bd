"""Weighted k-means on released points (the cells of private EM's start histogram, the
centres of its summary start): k-means++ seeding, then scikit-learn's compiled weighted
Lloyd steps (``COMPILED_LLOYD``), or where they cannot run, numpy Lloyd iterations with
Hamerly's bounds; either gives the plain algorithm's labels (but at near-ties within
rounding, for the compiled steps) and its centres to rounding
(:mod:`privgauss.mixture.em_starts` runs them). Post-processing of DP releases and public
rows only: no privacy cost, no neighbour relation of its own.

**Reference.** Arthur and Vassilvitskii, "k-means++: the advantages of careful seeding",
SODA 2007; Hamerly, "Making k-means even faster", SDM 2010.
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np

__all__ = ["LLOYD_STEPS", "best_kmeans", "best_run", "kmeans", "lloyd", "nearest", "nearest_two",
           "skip_seedings", "sq_dists"]

KMEANS_RESTARTS = 10  # k-means++ seedings of the start's k-means (post-processing)
# Lloyd steps per run at most (post-processing: no privacy effect). On private EM's ~22k start
# cells at ε = 1e4 (n = 5e4, d = 10, k = 3) every run was still moving at the former cap of 50
# and the k-means was a third of the fit (issue 27). With 25, every generated family's gap
# (benchmarks/mixture_families.py, 20 tuning and 10 held-out families, ε = 1 and 1e4) equals
# the 50-step fits' to 4 decimals, and em_speed.py's check fits at ε = 1 and ρ = 0.5 with
# public rows are bit-identical; at 20 one of those public fits moved by 0.007 nat/row
LLOYD_STEPS = 25
# The Lloyd steps themselves run in scikit-learn's compiled weighted Lloyd
# (``sklearn.cluster._kmeans._kmeans_single_lloyd``: chunked distances by a matrix product,
# centres from per-chunk weighted sums; one thread, so the result does not depend on how many
# threads run) where it is importable and every point, weight and seed is finite; the seeding
# stays :func:`lloyd`'s own (the same draws). Its steps are the plain algorithm's, its centres
# equal to rounding (relative ~1e-15: other summation orders), labels the same but at
# near-ties within that rounding; it stops when no label changes (the numpy steps below stop
# when no centre moves by more than 1e-5 relative), or at ``iters`` steps as they do, and it
# moves a cluster left without weight to the point farthest from its centre (the numpy steps
# leave it). On private EM's ~22k start cells at ε = 1e4 (n = 5e4, d = 10, k = 3; issue 27)
# the seven k-means of data seed 1's fit took 191 ms CPU with the numpy steps, 104 ms here.
COMPILED_LLOYD = True
try:  # a private function of scikit-learn, called by keyword (1.9's signature); one that
    # does not take the call raises TypeError and the numpy steps run
    from sklearn.cluster._kmeans import _kmeans_single_lloyd as _compiled_lloyd
except ImportError:  # pragma: no cover - the numpy steps instead
    _compiled_lloyd = None


SQ_CHUNK = 1 << 16  # centres × points per elementwise operation of :func:`sq_dists`


def sq_dists(PT: np.ndarray, C: np.ndarray) -> np.ndarray:
    """(k, n) squared distances of the points (given transposed, ``PT`` of shape (p, n)) to
    the centres ``C``, bit for bit what ``((points[:, None, :] - C[None]) ** 2).sum(-1)``
    gives, 3-7 times faster (no (n, k, p) temporaries): numpy sums a row's p squares in one
    running sum (p < 8) or in eight running sums combined pairwise (8 ≤ p ≤ 128), which is
    reproduced here coordinate by coordinate on contiguous rows of ``PT``, for as many
    centres at once as keep an operation within ``SQ_CHUNK`` elements (few points: all of
    them, and few calls)."""
    p, n = PT.shape
    k = C.shape[0]
    D = np.empty((k, n))
    if p > 128:  # numpy's pairwise sum recurses here: one centre at a time, numpy's own sum
        for j in range(k):
            D[j] = ((PT.T - C[j]) ** 2).sum(-1)
        return D
    step = max(1, SQ_CHUNK // max(n, 1))
    for a in range(0, k, step):
        _sq_dists_into(PT, C[a : a + step], D[a : a + step])
    return D


def _sq_dists_into(PT: np.ndarray, C: np.ndarray, acc: np.ndarray) -> None:
    """:func:`sq_dists` of a few centres (p ≤ 128) into ``acc`` (m, n)."""
    p = PT.shape[0]
    t = np.empty(acc.shape)
    S = np.empty((8, *acc.shape))
    CT = np.ascontiguousarray(C.T)[:, :, None]  # (p, m, 1): coordinate c of every centre

    def square(c: int, out: np.ndarray) -> np.ndarray:
        np.subtract(PT[c], CT[c], out=out)
        out *= out
        return out

    if p < 8:
        square(0, acc)
        for c in range(1, p):
            acc += square(c, t)
        return
    for c in range(8):
        square(c, S[c])
    for c in range(8, p - p % 8):
        S[c % 8] += square(c, t)
    S[0] += S[1]
    S[2] += S[3]
    S[4] += S[5]
    S[6] += S[7]
    S[0] += S[2]
    S[4] += S[6]
    np.add(S[0], S[4], out=acc)
    for c in range(p - p % 8, p):
        acc += square(c, t)


def nearest(D: np.ndarray) -> np.ndarray:
    """``np.argmin(D, axis=0)`` for the (k, n) distances (first index among ties), by k − 1
    contiguous comparisons instead of a strided reduction; a NaN anywhere: numpy's own."""
    lab = np.zeros(D.shape[1], dtype=np.intp)
    best = D[0].copy()
    for j in range(1, D.shape[0]):
        np.putmask(lab, D[j] < best, j)  # lab[D[j] < best] = j, faster
        np.minimum(best, D[j], out=best)
    if np.isnan(best).any():
        return np.argmin(D, axis=0)
    return lab


def nearest_two(D: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(labels, nearest, second nearest) of the (k, n) distances: :func:`nearest` of ``D``,
    each column's entry at its label and its smallest entry among the other rows (+inf for
    k = 1), bit for bit what indexing ``D`` gives (minima and maxima are exact), by running
    minima over the k rows instead of gathers and a scattered +inf; a NaN anywhere: numpy's
    own argmin and gathers."""
    lab = np.zeros(D.shape[1], dtype=np.intp)
    best = D[0].copy()
    second = np.full(D.shape[1], np.inf)
    t = np.empty(D.shape[1])
    for j in range(1, D.shape[0]):
        np.putmask(lab, D[j] < best, j)  # lab[D[j] < best] = j, faster
        np.maximum(best, D[j], out=t)  # a new nearest pushes the old one to second
        np.minimum(second, t, out=second)
        np.minimum(best, D[j], out=best)
    if np.isnan(best).any() or np.isnan(second).any():
        lab = np.argmin(D, axis=0)
        cols = np.arange(D.shape[1])
        best = D[lab, cols]
        if D.shape[0] > 1:
            E = D.copy()
            E[lab, cols] = np.inf
            second = E.min(axis=0)
    return lab, best, second


BOUND_SLACK = 1e-9  # relative: a point's bounds decide its label only with this much room


class _Frame:
    """The points for the bounded assignment: shifted by their weighted mean (distances are
    unchanged, and the product form below loses little to cancellation), with their squared
    norms and the largest norm; ``PT`` the unshifted points transposed, for exact
    distances."""

    def __init__(self, points: np.ndarray, w: np.ndarray, PT: np.ndarray) -> None:
        self.PT = PT
        self._points, self._w = points, w

    @cached_property
    def shift(self) -> np.ndarray:
        """The points' weighted mean (computed when first needed: the compiled steps of
        :func:`lloyd` never need it)."""
        return np.asarray(self._w @ self._points / self._w.sum())

    @cached_property
    def P(self) -> np.ndarray:
        return np.asarray(self._points - self.shift)

    @cached_property
    def xx(self) -> np.ndarray:
        return np.asarray(np.einsum("ij,ij->i", self.P, self.P))

    @cached_property
    def reach(self) -> float:
        return float(np.sqrt(self.xx.max(initial=0.0)))

    def labels(self, idx: np.ndarray | None, C: np.ndarray, err: float
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(labels, distance to the nearest centre, distance to the second nearest, +inf for
        one centre) of the points ``idx`` (all: None). The squared distances come from
        ‖x‖² − 2x·c + ‖c‖² (one matrix product), each within ``err`` (:meth:`error`) of
        the exact one; a point whose two nearest are within 4·``err`` gets :func:`sq_dists`'
        own distances, so every label is :func:`nearest` of :func:`sq_dists` bit for bit."""
        P, xx = (self.P, self.xx) if idx is None else (self.P.take(idx, axis=0), self.xx.take(idx))
        C0 = C - self.shift
        D = C0 @ P.T  # (k, m)
        D *= -2.0
        D += np.einsum("ij,ij->i", C0, C0)[:, None]
        D += xx
        np.maximum(D, 0.0, out=D)
        lab, near, second = nearest_two(D)
        if D.shape[0] == 1:
            return lab, np.sqrt(near), second
        tie = np.flatnonzero(second - near <= 4.0 * err)
        if tie.size:  # near-ties: the exact distances decide
            at = tie if idx is None else idx[tie]
            lab[tie], near[tie], second[tie] = nearest_two(sq_dists(self.PT[:, at], C))
        return lab, np.sqrt(near), np.sqrt(second)

    def error(self, C: np.ndarray) -> float:
        """A bound on the error of a squared distance of :meth:`labels` or :func:`sq_dists`:
        a few roundings of terms ≤ (‖x‖ + ‖c‖)², so ≤ (p + 4)·2⁻⁵²·(‖x‖ + ‖c‖)²; a
        distance's error is at most its square root."""
        reach = self.reach + float(np.sqrt(((C - self.shift) ** 2).sum(axis=1).max()))
        return (self.P.shape[1] + 4) * 2.0**-52 * reach * reach


class _Bounds:
    """Hamerly's k-means bounds, kept so that a point's label is recomputed only when they
    leave it open: an upper bound on the distance to the labelled centre and a lower bound on
    the distance to every other centre, stored against the centres' cumulative moves
    (``drift[j]``: centre j's moves summed, ``other[j]``: the largest move of a centre other
    than j, summed), so a step costs one comparison per point, not k + 1 updates: upper =
    ``ustar`` + drift[lab], lower = ``lstar`` − other[lab]. A point whose lower bound, or half
    its centre's distance to the nearest other centre, exceeds its upper bound with
    ``BOUND_SLACK`` of room relative to both and to ``scale`` (≥ every distance and
    cumulative move: the stored differences' rounding is relative to it), beyond twice the
    distances' error (:meth:`_Frame.error`), keeps its label: its centre is strictly the
    nearest in exact and in computed squared distances (each accurate to ~p·2⁻⁵³ relative).
    An open point's distances are computed afresh (:meth:`_Frame.labels`): the labels are
    :func:`nearest` of :func:`sq_dists` bit for bit."""

    def __init__(self, frame: _Frame, C: np.ndarray) -> None:
        self.lab, near, second = frame.labels(None, C, frame.error(C))
        k = C.shape[0]
        self.drift, self.other = np.zeros(k), np.zeros(k)
        self.ustar, self.lstar = near, second
        self.key = second - near  # lstar − ustar: the room the moves have used up
        self.moved = np.empty(0, dtype=np.intp)  # points that changed cluster in the last step
        self.old = np.empty(0, dtype=np.intp)  # their previous labels
        finite = second[np.isfinite(second)]
        self.scale = max(float(near.max(initial=0.0)), float(finite.max(initial=0.0)))

    def relabel(self, frame: _Frame, C: np.ndarray) -> None:
        """The points' nearest centres into ``lab``, the bounds updated."""
        self.moved = self.old = np.empty(0, dtype=np.intp)
        k = C.shape[0]
        if k == 1:
            return
        err = frame.error(C)
        room = 2.0 * math.sqrt(err) + BOUND_SLACK * self.scale
        if not math.isfinite(room):
            cand = np.arange(self.lab.size)
        else:  # a superset of the open points (upper + lower ≤ 2·scale)
            cand = np.flatnonzero(self.key <= (self.drift + self.other + room
                                               + 2.0 * BOUND_SLACK * self.scale).take(self.lab))
        if cand.size == 0:
            return
        CC = np.sqrt(sq_dists(np.ascontiguousarray(C.T), C))
        np.fill_diagonal(CC, np.inf)
        half = 0.5 * CC.min(axis=0)  # a point nearer its centre than this keeps its label
        lab = self.lab.take(cand)  # take: numpy's fast gather, the same values as indexing
        upper = self.ustar.take(cand) + self.drift.take(lab)
        gap = np.maximum(self.lstar.take(cand) - self.other.take(lab), half.take(lab))
        gap *= 1.0 - BOUND_SLACK
        gap -= room
        keep = upper * (1.0 + BOUND_SLACK) >= gap
        open_, old = cand[keep], lab[keep]
        if open_.size == 0:
            return
        new, near, second = frame.labels(open_, C, err)
        self.ustar[open_] = near - self.drift.take(new)
        self.lstar[open_] = second + self.other.take(new)
        self.key[open_] = self.lstar[open_] - self.ustar[open_]
        moved = new != old
        self.moved, self.old = open_[moved], old[moved]
        self.lab[open_] = new

    def move(self, before: np.ndarray, after: np.ndarray) -> None:
        """Loosen the bounds by the centres' moves (each inflated by ``BOUND_SLACK``): the
        upper bound by its centre's move, the lower by the largest move of another centre."""
        with np.errstate(invalid="ignore"):
            step = np.sqrt(((after - before) ** 2).sum(axis=1)) * (1.0 + BOUND_SLACK)
        self.drift += step
        if step.size > 1:
            order = np.argsort(step)
            other = np.full(step.size, step[order[-1]])
            other[order[-1]] = step[order[-2]]
            self.other += other
        self.scale += 2.0 * float(step.max())


_Prepared = tuple[np.ndarray, np.ndarray, np.ndarray, "_Frame | None"]


def _prepare(points: np.ndarray, weights: np.ndarray) -> _Prepared:
    """(points, clipped weights, points transposed, :class:`_Frame` or None when a point is
    not finite): what every run on these points needs; no points or no weight: one point at
    the origin of weight 1."""
    w = np.ascontiguousarray(np.maximum(weights, 0.0), dtype=np.float64)
    points = np.ascontiguousarray(points, dtype=np.float64)  # the compiled steps need both
    if w.sum() <= 0 or points.shape[0] == 0:
        points, w = np.zeros((1, points.shape[1])), np.ones(1)
    PT = np.ascontiguousarray(points.T)
    return points, w, PT, _Frame(points, w, PT) if np.isfinite(points).all() else None


def weighted_draw(rng: np.random.Generator, p: np.ndarray) -> int:
    """``rng.choice(len(p), p=p)`` for probabilities ``p`` (1-D), the same index from the same
    one uniform: numpy's ``Generator.choice`` draws ``rng.random()`` and searches it in
    ``cumsum(p) / cumsum(p)[-1]`` (side "right"), done here without its checks of ``p``
    (a sum within √ε of 1 by a compensated sum, no negative entry), which were half of a
    draw's time on private EM's ~22k start cells (k-means++ seeding draws one index per
    centre over all points: ~100 draws a fit). Where the last cumulative sum is not finite
    and positive, or an entry is negative, ``rng.choice`` itself runs (and raises as
    before); ``tests/test_weighted_kmeans.py`` checks the draws against it."""
    cdf = np.cumsum(p)
    last = float(cdf[-1]) if cdf.size else math.nan
    if not (math.isfinite(last) and abs(last - 1.0) <= 1e-8) or bool((p < 0).any()):
        return int(rng.choice(len(p), p=p))
    cdf /= cdf[-1]
    return int(cdf.searchsorted(rng.random(), side="right"))


def lloyd(points: np.ndarray, weights: np.ndarray, k: int, rng: np.random.Generator,
           init: np.ndarray | None = None, iters: int = LLOYD_STEPS,
           prepared: _Prepared | None = None, variances: bool = True
           ) -> tuple[np.ndarray, np.ndarray, float]:
    """:func:`kmeans` and the run's weighted inertia (for :func:`best_kmeans`): k-means++
    seeding (unless ``init``), then at most ``iters`` Lloyd steps — scikit-learn's compiled
    ones (``COMPILED_LLOYD``: the plain steps' centres to rounding) where every point,
    weight and seed is finite and there are more points than centres, else the numpy steps
    below, the plain Lloyd steps' bit for bit. The numpy assignment step recomputes only
    the points whose bounds (:class:`_Bounds`) leave their label open, by a matrix product
    with an exact fallback at near-ties, and a centre only when its cluster gained or lost a
    point (``w_j @ points / Σ w_j``, as the plain step). On private EM's start cells at
    ε = 1e4 (22,151 cells, n = 5e4, d = 10, k = 3; ``benchmarks/em_speed.py``, seed 0) the
    start's four k-means at 50 steps took 1.42 s of CPU with exact distances for the open
    points and Elkan's bounds, 1.30 s here (the centres' sums are most of the rest; updating
    them by the moved points, 0.92 s, changed ε = 1 fits on lattice-like cells through
    near-ties). ``prepared``: :func:`_prepare` of the same points and weights
    (:func:`best_kmeans` shares it between its runs). ``variances`` False: the (k, n) squared
    distances of the points to the centres in the variances' place (:func:`best_kmeans`
    computes the variances of the winning run only, from them)."""
    if prepared is None:
        prepared = _prepare(points, weights)
    points, w, PT, frame = prepared
    if init is None:
        seeds = [points[weighted_draw(rng, w / w.sum())]]
        d2 = sq_dists(PT, np.array(seeds))[0]
        for i in range(1, k):
            q = w * d2
            seeds.append(points[weighted_draw(rng, q / q.sum())] if q.sum() > 0 else seeds[-1])
            if i < k - 1:  # the distance to the nearest seed so far (min is exact)
                np.minimum(d2, sq_dists(PT, seeds[-1][None])[0], out=d2)
        C = np.array(seeds)
    else:
        C = np.array(init, dtype=np.float64)
    if (COMPILED_LLOYD and _compiled_lloyd is not None and frame is not None and iters > 0
            and points.shape[0] > k and np.isfinite(w).all() and np.isfinite(C).all()):
        try:
            _, _, done, _ = _compiled_lloyd(points, w, np.array(C, dtype=np.float64, order="C"),
                                            max_iter=iters, tol=0.0, n_threads=1)
        except TypeError:  # another signature (a scikit-learn version): the numpy steps
            pass
        else:
            C = np.asarray(done, dtype=np.float64)
            iters = 0  # the steps are done: the variances and inertia below, as after them
    bounds: _Bounds | None = None
    # a cluster's weights w·[lab = j] by np.where (twice as fast; the same values when every
    # weight is finite: 0·∞ would be NaN)
    finite_w = bool(np.isfinite(w).all())
    # with the bounds (and finite weights): every cluster's weights as rows of one (k, n)
    # array, kept up to date by the points that changed cluster — the same values as
    # np.where, without k comparisons and selections over all points a step (on private EM's
    # ~22k start cells at K' = 9 they cost as much as the centre sums)
    Wk: np.ndarray | None = None
    for _ in range(iters):
        if frame is None or not np.isfinite(C).all():
            bounds = None
            Wk = None
            lab = nearest(sq_dists(PT, C))
            changed = np.ones(k, dtype=bool)
        else:
            first = bounds is None
            if bounds is None:
                bounds = _Bounds(frame, C)
            else:
                bounds.relabel(frame, C)
            lab = bounds.lab
            changed = np.zeros(k, dtype=bool)
            if first:
                changed[:] = True
            else:  # a cluster that neither gained nor lost a point keeps its centre
                changed[lab[bounds.moved]] = True
                changed[bounds.old] = True
            if finite_w:
                if first or Wk is None:
                    Wk = np.zeros((k, w.size))
                    Wk[lab, np.arange(w.size)] = w
                elif bounds.moved.size:
                    Wk[bounds.old, bounds.moved] = 0.0
                    Wk[lab.take(bounds.moved), bounds.moved] = w.take(bounds.moved)
        newC = C.copy()
        for j in np.flatnonzero(changed).tolist():
            if Wk is not None:
                wj = Wk[j]
            else:
                wj = np.where(lab == j, w, 0.0) if finite_w else w * (lab == j)
            sj = wj.sum()
            if sj > 0:
                newC[j] = wj @ points / sj
        # np.allclose(newC, C) without its overhead (numpy's own when a value is not finite)
        close = np.abs(newC - C) <= 1e-8 + 1e-5 * np.abs(C)
        if close.all() if np.isfinite(newC).all() and np.isfinite(C).all() \
                else np.allclose(newC, C):
            break
        if bounds is not None:
            bounds.move(C, newC)
        C = newC
    bounds = None  # its bounds freed before the last distances
    D = sq_dists(PT, C)
    if not variances:
        return C, D, float(w @ np.min(D, axis=0))
    return C, _variances(D, w, points.shape[1]), float(w @ np.min(D, axis=0))


def _variances(D: np.ndarray, w: np.ndarray, p: int) -> np.ndarray:
    """Each cluster's weighted variance per coordinate from the (k, n) squared distances
    ``D`` of the points (weights ``w``, clipped at 0) to their centres (1 for a cluster
    without weight)."""
    lab = nearest(D)
    finite_w = bool(np.isfinite(w).all())
    var = np.empty(D.shape[0])
    for j in range(D.shape[0]):
        wj = np.where(lab == j, w, 0.0) if finite_w else w * (lab == j)
        var[j] = wj @ D[j] / wj.sum() / p if wj.sum() > 0 else 1.0
    return var


def kmeans(points: np.ndarray, weights: np.ndarray, k: int, rng: np.random.Generator,
            init: np.ndarray | None = None, iters: int = LLOYD_STEPS
            ) -> tuple[np.ndarray, np.ndarray]:
    """Weighted Lloyd (k-means++ seeding unless ``init``) — post-processing of DP/public points.
    Returns (centres, per-centre weighted variance per coordinate)."""
    C, var, _ = lloyd(points, weights, k, rng, init, iters)
    return C, var


def best_kmeans(points: np.ndarray, weights: np.ndarray, k: int, rng: np.random.Generator,
                 init: np.ndarray | None, restarts: int = KMEANS_RESTARTS
                 ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`kmeans` from ``init`` (when given) and from ``restarts`` k-means++ seedings;
    the run of least weighted inertia wins (post-processing of released cells and public
    rows). One seeding alone put two centres in one of two clusters 6.9 standard deviations
    apart in 2 of 4 fits, and EM never left that basin."""
    C, D, prepared = best_run(points, weights, k, rng, init, restarts)
    # the winner's variances only (the same numbers: lloyd's own, from the same distances)
    return C, _variances(D, prepared[1], prepared[0].shape[1])


def best_run(points: np.ndarray, weights: np.ndarray, k: int, rng: np.random.Generator,
             init: np.ndarray | None, restarts: int = KMEANS_RESTARTS
             ) -> tuple[np.ndarray, np.ndarray, _Prepared]:
    """:func:`best_kmeans`'s winning centres, their (k, n') squared distances to the points
    as :func:`sq_dists` gives them and :func:`_prepare` of the points (n' = n unless no point
    has weight: then one point at the origin)."""
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    starts = [init] + [None] * restarts
    prepared = _prepare(points, weights)
    for start in starts:
        C, D, inertia = lloyd(points, weights, k, rng, init=start, prepared=prepared,
                              variances=False)
        if best is None or inertia < best[0]:
            best = (inertia, C, D)
    assert best is not None
    return best[1], best[2], prepared


def skip_seedings(rng: np.random.Generator, k: int, seedings: int) -> None:
    """Advance ``rng`` past ``seedings`` k-means++ seedings of k centres without running them:
    :func:`lloyd` draws one uniform per centre (``rng.choice`` with probabilities; fewer only
    when the points have fewer than k distinct ones of positive weight). A caller that runs
    fewer seedings than before keeps every later draw, and so every later run, as it was."""
    if seedings > 0 and k > 0:
        rng.random(k * seedings)
