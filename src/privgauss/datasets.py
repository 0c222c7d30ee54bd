"""Synthetic Gaussians and separated Gaussian mixtures, real tables, and the defects real tables
have, for tests and experiments.

Mixture separation follows Kamath, Sheffet, Singhal and Ullman (2019): for every pair
``i != j``

    ||mu_i - mu_j||_2 >= separation * (sqrt(k) + 1/sqrt(w_i) + 1/sqrt(w_j))
                         * max(||Sigma_i||_2^{1/2}, ||Sigma_j||_2^{1/2}),

and :func:`make_mixture` scales the means so that the smallest such ratio equals
``separation`` (see :func:`separation_ratio`).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .linalg import sym
from .validation import check_positive_int

__all__ = [
    "DEFECTS",
    "Mixture",
    "dirty_public",
    "load_table",
    "make_heavy_tailed",
    "with_defect",
    "make_gaussian",
    "make_mixture",
    "random_covariance",
    "random_rotation",
    "separation_ratio",
]


def _check_real(value: Any, name: str, *, minimum: float, strict: bool = False) -> float:
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number, got {type(value).__name__}")
    f = float(value)
    ok = math.isfinite(f) and (f > minimum if strict else f >= minimum)
    if not ok:
        relation = ">" if strict else ">="
        raise ValueError(f"{name} must be finite and {relation} {minimum}, got {value!r}")
    return f


def random_rotation(d: int, random_state: Any = None) -> np.ndarray:
    """Haar-distributed random orthogonal d x d matrix (QR of a Gaussian, signs fixed)."""
    d = check_positive_int(d, "d")
    rng = np.random.default_rng(random_state)
    Q, R = np.linalg.qr(rng.standard_normal((d, d)))
    return Q * np.where(np.diag(R) < 0, -1.0, 1.0)


def random_covariance(
    d: int, condition_number: float = 1.0, *, scale: float = 1.0, random_state: Any = None
) -> np.ndarray:
    """``scale^2 * Q diag(lambda) Q^T`` with eigenvalues log-spaced from 1 to
    ``condition_number`` and a Haar-random rotation ``Q`` (the identity if well-conditioned)."""
    d = check_positive_int(d, "d")
    kappa = _check_real(condition_number, "condition_number", minimum=1.0)
    scale = _check_real(scale, "scale", minimum=0.0, strict=True)
    if kappa == 1.0:
        return scale**2 * np.eye(d)
    eig = np.logspace(0.0, math.log10(kappa), d)
    Q = random_rotation(d, random_state)
    return sym((Q * (scale**2 * eig)) @ Q.T)


def _factor(cov: np.ndarray) -> np.ndarray:
    """A matrix A with A A^T = cov (Cholesky, or eigen-factor for singular PSD matrices)."""
    try:
        return np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        w, V = np.linalg.eigh(cov)
        if w[0] < -1e-10 * max(1.0, abs(w[-1])):
            raise ValueError("cov must be positive semi-definite") from None
        return V * np.sqrt(np.clip(w, 0.0, None))


def make_gaussian(
    n: int,
    d: int | None = None,
    *,
    mean: Any = None,
    cov: Any = None,
    condition_number: float = 1.0,
    random_state: Any = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw ``n`` samples from ``N(mean, cov)``; returns ``(X, mean, cov)``.

    ``d`` may be inferred from ``mean`` or ``cov``. ``mean`` defaults to zeros. Without
    ``cov`` a random covariance with eigenvalues log-spaced from 1 to ``condition_number``
    (randomly rotated) is used. ``random_state`` is None, an int or a numpy Generator.
    """
    n = check_positive_int(n, "n")
    rng = np.random.default_rng(random_state)
    dims = set()
    if d is not None:
        dims.add(check_positive_int(d, "d"))
    if mean is not None:
        mean = np.array(mean, dtype=np.float64).reshape(-1)
        dims.add(mean.shape[0])
    if cov is not None:
        cov = np.array(cov, dtype=np.float64)
        if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
            raise ValueError(f"cov must be a square matrix, got shape {cov.shape}")
        dims.add(cov.shape[0])
    if not dims:
        raise ValueError("give d, mean or cov so that the dimension is known")
    if len(dims) > 1:
        raise ValueError(f"inconsistent dimensions from d, mean and cov: {sorted(dims)}")
    d = dims.pop()
    if mean is None:
        mean = np.zeros(d)
    if not np.isfinite(mean).all():
        raise ValueError("mean contains NaN or infinite values")
    if cov is None:
        cov = random_covariance(d, condition_number, random_state=rng)
    else:
        if not np.isfinite(cov).all():
            raise ValueError("cov contains NaN or infinite values")
        if not np.allclose(cov, cov.T, rtol=1e-10, atol=1e-12):
            raise ValueError("cov must be symmetric")
        cov = sym(cov)
    X = mean + rng.standard_normal((n, d)) @ _factor(cov).T
    return X, mean, cov


@dataclass(eq=False)
class Mixture:
    """A sample from a Gaussian mixture together with its parameters."""

    X: np.ndarray  # (n, d) samples
    labels: np.ndarray  # (n,) component of each sample
    weights: np.ndarray  # (k,)
    means: np.ndarray  # (k, d)
    covariances: np.ndarray  # (k, d, d)


def separation_ratio(means: Any, covariances: Any, weights: Any) -> float:
    """Smallest pairwise ratio ``||mu_i - mu_j|| / ((sqrt(k) + 1/sqrt(w_i) + 1/sqrt(w_j))
    * max(||Sigma_i||_2^{1/2}, ||Sigma_j||_2^{1/2}))``; ``inf`` for a single component."""
    M = np.asarray(means, dtype=np.float64)
    C = np.asarray(covariances, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64).reshape(-1)
    k = w.shape[0]
    if M.ndim != 2 or M.shape[0] != k or C.shape != (k, M.shape[1], M.shape[1]):
        raise ValueError(
            f"expected means (k, d), covariances (k, d, d), weights (k,); got {M.shape}, "
            f"{C.shape}, {w.shape}"
        )
    if not (w > 0).all():
        raise ValueError("weights must be positive")
    if k < 2:
        return math.inf
    std = np.sqrt(np.clip(np.linalg.eigvalsh(sym(C))[:, -1], 0.0, None))
    diff = M[:, None, :] - M[None, :, :]
    dist = np.sqrt(np.einsum("ijd,ijd->ij", diff, diff))
    inv_sqrt_w = 1.0 / np.sqrt(w)
    denom = (math.sqrt(k) + inv_sqrt_w[:, None] + inv_sqrt_w[None, :]) * np.maximum(
        std[:, None], std[None, :]
    )
    iu = np.triu_indices(k, 1)
    return float(np.min(dist[iu] / denom[iu]))


def _mixture_weights(k: int, weights: Any, min_weight: Any, rng: np.random.Generator) -> np.ndarray:
    if weights is not None and min_weight is not None:
        raise ValueError("give either weights or min_weight, not both")
    if weights is not None:
        w = np.array(weights, dtype=np.float64).reshape(-1)
        if w.shape != (k,):
            raise ValueError(f"weights must have length k = {k}, got {w.shape[0]}")
        if not np.isfinite(w).all() or not (w > 0).all():
            raise ValueError("weights must be finite and positive")
        if abs(w.sum() - 1.0) > 1e-8:
            raise ValueError("weights must sum to 1")
        return w / w.sum()
    if min_weight is None:
        return np.full(k, 1.0 / k)
    m = _check_real(min_weight, "min_weight", minimum=0.0, strict=True)
    if k * m > 1.0 + 1e-12:
        raise ValueError(f"min_weight must be at most 1/k = {1.0 / k:.6g} (k * min_weight <= 1)")
    # One random component gets exactly min_weight; the others get min_weight plus a random
    # (Dirichlet) share of the remaining mass, so all are >= min_weight.
    rest = max(0.0, 1.0 - k * m)
    w = m + rest * rng.dirichlet(np.ones(k - 1)) if k > 1 else np.ones(0)
    w = np.insert(w, rng.integers(k), m)
    return w


def make_mixture(
    n: int,
    k: int,
    d: int,
    *,
    min_weight: float | None = None,
    weights: Any = None,
    separation: float = 3.0,
    covariance: Literal["spherical", "rotated", "diagonal"] = "spherical",
    condition_number: float = 1.0,
    scale: float = 1.0,
    random_state: Any = None,
) -> Mixture:
    """Sample ``n`` points from a random ``k``-component mixture in ``d`` dimensions.

    Weights: ``weights`` as given, or (``min_weight``) one component with exactly
    ``min_weight`` and the rest random but all ``>= min_weight``, or uniform.
    Covariances (times ``scale^2``): ``"spherical"`` is the identity (``condition_number``
    must be 1); ``"diagonal"`` has the eigenvalues log-spaced from 1 to ``condition_number``
    in random order on the diagonal; ``"rotated"`` the same spectrum randomly rotated.
    Means are Gaussian random points scaled so that :func:`separation_ratio` equals
    ``separation`` (and is never below it). Component counts are multinomial and the rows
    are shuffled.
    """
    n = check_positive_int(n, "n")
    k = check_positive_int(k, "k")
    d = check_positive_int(d, "d")
    separation = _check_real(separation, "separation", minimum=0.0)
    kappa = _check_real(condition_number, "condition_number", minimum=1.0)
    scale = _check_real(scale, "scale", minimum=0.0, strict=True)
    if covariance not in ("spherical", "rotated", "diagonal"):
        raise ValueError(
            f"covariance must be 'spherical', 'rotated' or 'diagonal', got {covariance!r}"
        )
    if covariance == "spherical" and kappa != 1.0:
        raise ValueError(
            "condition_number applies to 'diagonal' and 'rotated' covariances; "
            "spherical covariances have condition number 1"
        )
    rng = np.random.default_rng(random_state)
    w = _mixture_weights(k, weights, min_weight, rng)

    eig = np.logspace(0.0, math.log10(kappa), d) * scale**2
    covs = np.empty((k, d, d))
    for j in range(k):
        if covariance == "spherical":
            covs[j] = scale**2 * np.eye(d)
        elif covariance == "diagonal":
            covs[j] = np.diag(rng.permutation(eig))
        else:
            Q = random_rotation(d, rng)
            covs[j] = sym((Q * eig) @ Q.T)

    means = rng.standard_normal((k, d))
    if k > 1:
        ratio = separation_ratio(means, covs, w)
        means *= separation / ratio
        # Guard against rounding leaving the ratio a hair below the requested separation.
        while separation_ratio(means, covs, w) < separation:
            means *= 1.0 + 1e-12
    else:
        means *= scale

    counts = rng.multinomial(n, w)
    labels = np.repeat(np.arange(k), counts)
    X = np.empty((n, d))
    start = 0
    for j, c in enumerate(counts):
        X[start : start + c] = means[j] + rng.standard_normal((c, d)) @ _factor(covs[j]).T
        start += c
    order = rng.permutation(n)
    return Mixture(X=X[order], labels=labels[order], weights=w, means=means, covariances=covs)


# ----------------------------------------------------------------------------------------------
# Real tables and real defects (DESIGN.md, "Real data, not only Gaussian draws")
# ----------------------------------------------------------------------------------------------

TABLES = ("breast_cancer", "digits", "china_pixels")


def load_table(name: str) -> np.ndarray:
    """A real table bundled with scikit-learn, as float64 rows.

    ``"breast_cancer"``: 569 × 30 tumour measurements (scales from 1e-3 to 1e3, correlation
    condition number ~1e5); ``"digits"``: 1797 × 64 pixel counts 0–16 (ties everywhere, 3
    constant columns, many nearly constant); ``"china_pixels"``: the 273,280 × 3 RGB pixels of
    the ``china.jpg`` sample image, 0–255 (integers: ties, clusters that overlap).
    """
    if name == "breast_cancer":
        from sklearn.datasets import load_breast_cancer

        return np.asarray(load_breast_cancer().data, dtype=np.float64)
    if name == "digits":
        from sklearn.datasets import load_digits

        return np.asarray(load_digits().data, dtype=np.float64)
    if name == "china_pixels":
        from sklearn.datasets import load_sample_image

        img = load_sample_image("china.jpg")
        return np.asarray(img, dtype=np.float64).reshape(-1, img.shape[-1])
    raise ValueError(f"unknown table {name!r}; choose one of {', '.join(TABLES)}")


def make_heavy_tailed(
    n: int, d: int, *, df: float = 3.0, condition_number: float = 1.0, random_state: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` rows of a multivariate Student t with ``df`` degrees of freedom (scale matrix with
    eigenvalues log-spaced from 1 to ``condition_number``); returns ``(X, cov)`` with ``cov``
    the distribution's covariance ``df/(df-2)`` × scale (``df`` > 2)."""
    df = _check_real(df, "df", minimum=2.0, strict=True)
    rng = np.random.default_rng(random_state)
    Z, _, scale = make_gaussian(n, d, condition_number=condition_number, random_state=rng)
    X = Z * np.sqrt(df / rng.chisquare(df, size=(Z.shape[0], 1)))
    return X, scale * df / (df - 2.0)


def _rounded(X: np.ndarray, levels: int) -> np.ndarray:
    """Each column rounded to ``levels`` values (its quantile-bin medians)."""
    out = X.copy()
    for j in range(X.shape[1]):
        edges = np.quantile(X[:, j], np.linspace(0, 1, levels + 1)[1:-1])
        bins = np.searchsorted(edges, X[:, j])
        for b in np.unique(bins):
            out[bins == b, j] = np.median(X[bins == b, j])
    return out


def _defect_rows(X: np.ndarray, defect: str, rng: np.random.Generator) -> np.ndarray:
    n, d = X.shape
    out = X.copy()
    if defect == "sorted":
        return out[np.argsort(out[:, 0], kind="stable")]
    if defect == "rounded":
        return _rounded(out, 3)
    if defect == "binary":  # a 0/1 flag (10% ones) in the first column
        out[:, 0] = (X[:, 0] > np.quantile(X[:, 0], 0.9)).astype(np.float64)
        return out
    if defect == "counts":  # counts with many zeros in the first column
        out[:, 0] = np.asarray(rng.poisson(0.3, size=n), dtype=np.float64)
        return out
    if defect == "constant":
        out[:, -1] = 3.7
        return out
    if defect == "gross":  # 1% recording errors: one coordinate off by a factor of 1000
        rows = rng.choice(n, size=max(1, n // 100), replace=False)
        out[rows, rng.integers(0, d, size=rows.size)] *= 1000.0
        return out
    if defect == "duplicates":  # 30% of rows replaced by copies of other rows
        rows = rng.choice(n, size=(3 * n) // 10, replace=False)
        out[rows] = X[rng.integers(0, n, size=rows.size)]
        return out
    raise ValueError(f"unknown defect {defect!r}; choose one of {', '.join(DEFECTS)}")


DEFECTS = ("sorted", "rounded", "binary", "counts", "constant", "gross", "duplicates")


def with_defect(X: Any, defect: str, random_state: Any = None) -> np.ndarray:
    """A copy of the rows ``X`` with one defect real tables have (the input is not changed):

    ``"sorted"`` rows sorted by the first column; ``"rounded"`` every column rounded to 3
    values; ``"binary"`` first column a 0/1 flag (10% ones); ``"counts"`` first column Poisson(0.3)
    counts (74% zeros); ``"constant"`` last column 3.7 in every row; ``"gross"`` 1% of rows with
    one coordinate multiplied by 1000; ``"duplicates"`` 30% of rows replaced by copies of others.
    Heavy tails: :func:`make_heavy_tailed`; dirty public rows: :func:`dirty_public`.
    """
    X = np.array(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-d rows, got shape {X.shape}")
    return _defect_rows(X, defect, np.random.default_rng(random_state))


def dirty_public(public_X: Any, kind: str, random_state: Any = None) -> np.ndarray:
    """Public rows with a defect: ``"outlier"`` one row replaced by a data-entry error (1e6 in
    every coordinate); ``"shifted"`` rows of a subgroup (the top fifth by the first column)
    resampled to the same count; ``"duplicated"`` the first row repeated d+1 times in front."""
    P = np.array(public_X, dtype=np.float64)
    if P.ndim != 2:
        raise ValueError(f"public_X must be 2-d rows, got shape {P.shape}")
    rng = np.random.default_rng(random_state)
    if kind == "outlier":
        P[rng.integers(0, P.shape[0])] = 1e6
        return P
    if kind == "shifted":
        top = P[P[:, 0] >= np.quantile(P[:, 0], 0.8)]
        return top[rng.integers(0, top.shape[0], size=P.shape[0])]
    if kind == "duplicated":
        return np.vstack([np.repeat(P[:1], P.shape[1] + 1, axis=0), P])
    raise ValueError(f"unknown kind {kind!r}; choose outlier, shifted or duplicated")
