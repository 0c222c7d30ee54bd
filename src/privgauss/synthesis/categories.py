"""Categorical columns of a synthetic table (issue 28): their categories, codes and marginals.

A categorical column — a string, object or pandas ``category`` dtype, or a column the caller
gives the kind ``"category"`` — is modelled as an integer column of codes 0, 1, …, one per
category, and its synthetic codes are mapped back to labels (post-processing). Labels are
handled as strings.

*Whose categories.* A category list the caller states (``categories=``) is public: the
column's codes follow it and its marginal is the noisy counts of its categories (no threshold,
every stated category kept; :func:`release_counts`). Otherwise the
list itself is private — one record's rare value (a name, an identifier) must not appear in
the output — and is released by the stability histogram of the column's values
(:func:`~privgauss.mechanisms.gaussian_stability_histograms`, all such columns jointly:
δ-approximate ρ-zCDP under replace-one): a category is released only when its noisy count
clears a threshold that the category of a single record passes with probability at most δ/c
(c such columns). Released categories are ordered by their noisy counts, largest first
(ties by label); the rows of every other value share one more code, *other*, whose synthetic
value is missing. The released noisy counts are the column's marginal (other's mass: the
public n less their sum), so such a column takes no share of the marginals' histograms.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..exceptions import InvalidDataError
from ..mechanisms import Release, gaussian_mechanism, gaussian_stability_histograms
from ..privacy import ZCDP
from ..sensitivity import histogram_l2
from .marginals import Marginal

#: share of an (ε, δ) budget's δ that pays for the released category lists (the thresholds'
#: failure probability); the rest converts the zCDP releases to (ε, δ)
CATEGORY_DELTA_SHARE = 0.1
#: the other code's mass (n less the released counts) is kept only above this many standard
#: deviations of its noise (the m counts' summed noise): without rows of unreleased values it
#: is pure noise, and a column without them would get missing synthetic values. The bar falls
#: with the noise: at a huge budget every row of an unreleased value is kept
OTHER_SIGMAS = 2.0
#: shrink a column's noisy category counts towards their mean (James–Stein) before clipping
#: them at 0 (:func:`count_marginal`; False: clipped as released, an experiment switch)
COUNT_SHRINK = True
#: project a column's (shrunk) noisy counts onto the counts of n rows — the nearest
#: non-negative vector summing to the public n, a shift by one constant then clipping at 0
#: (:func:`project_counts`) — instead of clipping at 0 and rescaling (False: an experiment
#: switch)
COUNT_PROJECT = True
#: > 0: this share of the budget (as zCDP, from the copula model's) orders each released
#: column's categories by their association with the other columns (:func:`associations`)
#: instead of by their counts (an experiment switch)
ORDER_SHARE = 0.0


def _missing(values: np.ndarray) -> np.ndarray:
    """Which entries of an object array are missing: None, a float NaN, pandas' NA or NaT."""
    def one(v: Any) -> bool:
        if v is None:
            return True
        if isinstance(v, float | np.floating):
            return bool(v != v)
        return type(v).__name__ in ("NAType", "NaTType")

    return np.frompyfunc(one, 1, 1)(values).astype(bool)


def column_labels(X: Any, j: int, name: str) -> np.ndarray:
    """Column ``j`` of ``X`` (a DataFrame's by position, else an array's) as strings, refused
    (before anything is spent, naming the column, never a value) when a cell is missing."""
    col = X.iloc[:, j] if hasattr(X, "iloc") else np.asarray(X, dtype=object)[:, j]
    values = np.asarray(col, dtype=object)
    if values.ndim != 1 or values.size == 0:
        raise InvalidDataError(f"column {name!r} has no values")
    if _missing(values).any():
        raise InvalidDataError(f"categorical column {name!r} has missing cells; fill them (a "
                               "category of their own, e.g. 'unknown') or drop those rows")
    return values.astype(str)


def declared_codes(labels: np.ndarray, categories: Sequence[Any], name: str) -> np.ndarray:
    """The codes of a column's labels in a stated category list (public), refused when a
    value is not in it (naming the column only)."""
    cats = [str(c) for c in categories]
    if not cats or len(set(cats)) != len(cats):
        raise InvalidDataError(f"the categories of column {name!r} must be distinct and "
                               "non-empty")
    index = {c: i for i, c in enumerate(cats)}
    codes = np.frompyfunc(lambda v: index.get(v, -1), 1, 1)(labels).astype(np.int64)
    if (codes < 0).any():
        raise InvalidDataError(f"column {name!r} holds values outside its stated categories; "
                               "state every category it has, or leave its categories to be "
                               "released")
    return codes.astype(np.float64)


def stated_categories(categories: Mapping[str, Sequence[Any]] | None, names: list[str]
                      ) -> dict[str, list[str]]:
    """The caller's category lists by column name (checked against ``names``)."""
    if categories is None:
        return {}
    if not isinstance(categories, Mapping):
        raise InvalidDataError("categories must map column names to their category lists")
    unknown = [c for c in categories if c not in names]
    if unknown:
        raise InvalidDataError(f"categories names unknown column(s) {unknown}")
    out = {}
    for c, cats in categories.items():
        if isinstance(cats, str) or not isinstance(cats, Sequence | np.ndarray):
            raise InvalidDataError(f"the categories of column {c!r} must be a list of labels")
        out[str(c)] = [str(v) for v in cats]
    return out


def released_sigma(rho: float, n_columns: int) -> float:
    """The noise deviation of each released count: ``n_columns`` histograms released jointly
    at ρ (L2 sensitivity √(2c) under replace-one)."""
    return histogram_l2() * math.sqrt(n_columns) / math.sqrt(2.0 * rho)


def release_categories(columns: list[np.ndarray], rho: float, delta: float, n: int, *,
                       release: Release) -> list[tuple[list[str], np.ndarray]]:
    """Each column's released categories (largest noisy count first, ties by label) and their
    noisy counts, from the joint stability histograms of the columns' labels (two ledger
    entries: ``categories`` at ZCDP(ρ) and ``categories (delta)`` for the thresholds)."""
    keyed = [np.unique(c, return_inverse=True) for c in columns]
    keys = np.column_stack([inv.astype(np.int64).ravel() for _, inv in keyed])
    hists = gaussian_stability_histograms(keys, rho, delta, accountant=release.accountant,
                                          noise=release.noise, step=release.name("categories"))
    out = []
    for (labels, _), hist in zip(keyed, hists, strict=True):
        kept = sorted(hist.items(), key=lambda kv: (-kv[1], str(labels[kv[0]])))
        out.append(([str(labels[k]) for k, _ in kept],
                    np.array([float(c) for _, c in kept], dtype=np.float64)))
    return out


def release_counts(codes: list[np.ndarray], sizes: list[int], rho: float, *,
                   release: Release) -> tuple[list[np.ndarray], float]:
    """The noisy counts of each stated column's codes 0 … m − 1 (``sizes``: the m's), all
    columns at once (a replaced row moves between two codes of each: L2 sensitivity √(2c)),
    Gaussian noise at ρ (step ``categories/stated``), and their deviation."""
    flat = np.concatenate([np.bincount(np.rint(c).astype(np.int64), minlength=m)[:m]
                           for c, m in zip(codes, sizes, strict=True)]).astype(np.float64)
    sens = histogram_l2() * math.sqrt(len(codes))
    noisy = gaussian_mechanism(flat, sens, ZCDP(rho), accountant=release.accountant,
                               noise=release.noise, step=release.name("categories/stated"))
    return (np.split(noisy, np.cumsum(sizes)[:-1]), sens / math.sqrt(2.0 * rho))


def encode(labels: np.ndarray, categories: list[str]) -> np.ndarray:
    """Codes of ``labels``: a category's position in ``categories``, ``len(categories)`` (the
    other code) for any other value."""
    index = {c: i for i, c in enumerate(categories)}
    other = len(categories)
    return np.frompyfunc(lambda v: index.get(v, other), 1, 1)(labels).astype(np.float64)


def project_counts(counts: np.ndarray, total: float) -> np.ndarray:
    """The Euclidean projection of ``counts`` onto {x ≥ 0, Σx = ``total``}: x = (c − t)₊ with
    the one t that makes the sum ``total`` (post-processing). Under Gaussian noise of equal
    variance on every count and a public total it is the constrained maximum-likelihood
    estimate (Wang et al. 2020's Norm-Sub): where clipping at 0 then rescaling keeps every
    empty category's positive noise and scales the large ones down, this takes the excess from
    all alike and zeroes what noise alone put there."""
    c = np.asarray(counts, dtype=np.float64)
    if c.size == 0 or total <= 0:
        return np.zeros_like(c)
    top = np.sort(c)[::-1]
    k = np.arange(1, c.size + 1)
    shift = (np.cumsum(top) - float(total)) / k
    m = int(np.flatnonzero(top - shift > 0)[-1]) if np.any(top - shift > 0) else 0
    return np.clip(c - shift[m], 0.0, None)


def count_marginal(counts: np.ndarray, n: int, sigma: float, other: bool = True) -> Marginal:
    """The marginal of a column's codes 0 … m − 1 from their m noisy counts of deviation
    ``sigma``, and with ``other`` (a released list) of one more code, m, whose mass is the
    public n less their sum, kept above :data:`OTHER_SIGMAS` deviations of its noise:
    post-processing. With three or more codes the counts are first shrunk towards their mean
    by the James–Stein factor max(0, 1 − (m − 3)σ²/Σ(c − c̄)²) (``COUNT_SHRINK``): many
    categories of a few rows each (SumHes' 125 countries of ~20 rows under noise of ~30 at
    ε = 1) keep their counts' noise otherwise; the factor → 1 as the noise vanishes. Counts
    that must hold all n rows (a stated list, or a released one without other mass) are then
    projected onto n rows (:func:`project_counts`, ``COUNT_PROJECT``), others clipped at 0."""
    c = np.asarray(counts, dtype=np.float64)
    if COUNT_SHRINK and len(c) >= 3 and sigma > 0:
        dev = c - c.mean()
        ss = float(dev @ dev)
        c = c.mean() + (max(0.0, 1.0 - (len(c) - 3) * sigma * sigma / ss) if ss > 0 else 0.0) * dev
    rest = float(n) - float(np.clip(c, 0.0, None).sum())
    if not other or rest <= OTHER_SIGMAS * sigma * math.sqrt(max(len(c), 1)):
        rest = 0.0
        c = project_counts(c, float(n)) if COUNT_PROJECT else c
    c = np.clip(c, 0.0, None)
    mass = np.append(c, rest) if other else c
    if mass.sum() <= 0:
        mass = np.zeros_like(mass)
        mass[-1] = 1.0
    cdf = np.concatenate([[0.0], np.cumsum(mass) / mass.sum()])
    cdf[-1] = 1.0
    edges = np.arange(len(mass) + 1, dtype=np.float64) - 0.5
    return Marginal("integer", edges, cdf)


def decode(codes: np.ndarray, categories: list[str]) -> np.ndarray:
    """Labels of synthetic codes (an object array; None for the other code or beyond)."""
    out = np.full(codes.shape, None, dtype=object)
    k = np.rint(np.asarray(codes, dtype=np.float64)).astype(np.int64)
    ok = (k >= 0) & (k < len(categories))
    cats = np.asarray(categories, dtype=object)
    out[ok] = cats[k[ok]]
    return out


def associations(codes: list[np.ndarray], counts: list[np.ndarray], V: np.ndarray, rho: float,
                 *, release: Release) -> list[np.ndarray]:
    """A new order of each released column's categories: by their mean scores on the first
    principal direction of the categories' mean uniform scores of the other columns.

    ``codes``: each column's codes (the other code, ``len(counts[i])``, counts nowhere);
    ``V`` (n, p): the other columns' uniform scores less ½, each in [−½, ½]. Released: the
    sums of V per category of every column, jointly (a replaced row leaves one category and
    joins another in each column: L2 sensitivity √(2c)·½√p), Gaussian noise at ρ (step
    ``categories/order``); the means divide by the released counts (post-processing). Returns
    each column's permutation of its categories."""
    p = V.shape[1]
    sums = []
    for code, cnt in zip(codes, counts, strict=True):
        m = len(cnt)
        k = np.rint(code).astype(np.int64)
        S = np.zeros((m, p))
        ok = k < m
        np.add.at(S, k[ok], V[ok])
        sums.append(S)
    sens = math.sqrt(2.0 * len(codes)) * 0.5 * math.sqrt(p)
    flat = np.concatenate([S.ravel() for S in sums])
    noisy = gaussian_mechanism(flat, sens, ZCDP(rho), accountant=release.accountant,
                               noise=release.noise, step=release.name("categories/order"))
    out, at = [], 0
    for S, cnt in zip(sums, counts, strict=True):
        M = noisy[at:at + S.size].reshape(S.shape) / np.maximum(cnt, 1.0)[:, None]
        at += S.size
        w = np.clip(cnt, 0.0, None)
        w = w / w.sum() if w.sum() > 0 else np.full(len(cnt), 1.0 / max(len(cnt), 1))
        Mc = M - w @ M
        _, vecs = np.linalg.eigh((Mc * w[:, None]).T @ Mc)
        out.append(np.argsort(Mc @ vecs[:, -1], kind="stable"))
    return out
