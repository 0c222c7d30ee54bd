"""Private PCA by "Analyze Gauss" (Dwork, Talwar, Thakurta, Zhang 2014, "Analyze Gauss: optimal
bounds for privacy-preserving principal component analysis"; used by KSSU19 Alg. 1 step 4 and
Alg. 3 step 5, spec §3.7, pitfalls P17–P20).

**Neighbours:** replace one row; n is public. **Guarantee:** the release is exactly as private
as ``budget`` (ρ-zCDP, (ε, δ)-DP or ε-DP); ``center``, ``radius`` and ``rank`` must be public or
earlier DP outputs — never computed from ``X``.

Algorithm. Every row is projected onto the ball B(center, radius) (always, also rows already
inside: :func:`privgauss.linalg.clip_rows`, which re-checks the norm after rescaling), and the
centred second-moment matrix M = (1/n) Σ (x−c)(x−c)ᵀ of the clipped copy is released with the
symmetric matrix mechanism: noise on the upper triangle (diagonal included), mirrored.

* zCDP / (ε, δ): Gaussian noise calibrated to the Frobenius sensitivity √2·r²/n
  (:func:`privgauss.sensitivity.clipped_second_moment_frobenius`: ‖xxᵀ − yyᵀ‖_F² ≤ 2r⁴).
* pure ε: Laplace noise calibrated to the L1 sensitivity of the upper triangle, (d+1)·r²/n
  (:func:`privgauss.sensitivity.clipped_second_moment_upper_l1`).

The components are the top ``rank`` eigenvectors of the noisy matrix M̂ = M + E **by algebraic
eigenvalue** (``eigh``, descending): M̂ is symmetric but indefinite, and ranking by |λ| (as an
SVD does) would pick large negative noise directions (P17). Everything after the release is
post-processing.

Utility (deterministic, for the noise actually drawn; Weyl's inequality). With Π̂ the projector
onto the released components and Π_⊥ = I − Π̂,

    λ_max(Π_⊥ M Π_⊥) ≤ λ_{rank+1}(M) + 2‖E‖₂,

i.e. the hypothesis of KSSU19 Lemma 3.1 with B = 2n‖E‖₂ in the un-normalised form. With
probability ≥ 1 − β, ‖E‖₂ ≤ s(2√d + 1 + 2√ln(1/β)) for Gaussian noise of scale s
(:func:`noise_spectral_norm_bound`, spec §3.7 [X]); :func:`projection_error_bound` is twice that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..backends import as_rows
from ..exceptions import PrivacyBudgetError
from ..linalg import clip_rows
from ..mechanisms import Release, gaussian_sigma, symmetric_matrix_mechanism
from ..privacy import ZCDP, ApproxDP, Budget, PureDP, is_pure
from ..sensitivity import clipped_second_moment_frobenius, clipped_second_moment_upper_l1
from ..validation import check_positive_int, check_probability

__all__ = [
    "PrivatePCA",
    "noise_spectral_norm_bound",
    "private_pca",
    "projection_error_bound",
    "top_eigenvectors",
]


@dataclass(frozen=True)
class PrivatePCA:
    """Output of :func:`private_pca` (every field is a DP output or public).

    ``components`` is d × rank with orthonormal columns; ``eigenvalues`` are the matching noisy
    eigenvalues of M̂ = (1/n) Σ (x−c)(x−c)ᵀ + E, descending (they can be negative);
    ``noise_scale`` is the per-entry noise scale (Gaussian σ or Laplace b) of E.
    """

    components: np.ndarray
    eigenvalues: np.ndarray
    noise_scale: float
    center: np.ndarray
    radius: float
    noise_kind: str

    def project(self, X: Any) -> np.ndarray:
        """Coordinates (x − center)·V of the rows of ``X`` in the released basis (n × rank)."""
        X = np.asarray(X, dtype=np.float64)
        return (X - self.center) @ self.components


def top_eigenvectors(matrix: Any, rank: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``rank`` largest eigenvalues of a symmetric matrix **by algebraic value**
    (descending) and their eigenvectors (columns), each column's largest-magnitude entry made
    positive so the output is deterministic."""
    M = np.asarray(matrix, dtype=np.float64)
    w, V = np.linalg.eigh((M + M.T) / 2.0)
    order = np.argsort(w, kind="stable")[::-1][:rank]
    w, V = w[order], V[:, order]
    pivot = np.argmax(np.abs(V), axis=0)
    signs = np.where(V[pivot, np.arange(V.shape[1])] < 0, -1.0, 1.0)
    return w, V * signs


def private_pca(
    X: Any,
    center: Any,
    radius: float,
    rank: int,
    budget: Budget,
    *,
    release: Release,
) -> PrivatePCA:
    """Analyze-Gauss private PCA of the rows of ``X`` clipped to B(center, radius).

    Releases (1/n)Σ(x−c)(x−c)ᵀ with symmetric noise (Gaussian for ``ZCDP``/``ApproxDP`` with
    δ > 0, sensitivity √2 r²/n in Frobenius norm; Laplace for pure ε, sensitivity (d+1) r²/n in
    L1 of the upper triangle) and returns its top-``rank`` eigenvectors by algebraic eigenvalue.
    Exactly ``budget``-DP under replace-one neighbours with n public; ``center``, ``radius`` and
    ``rank`` must be public. Charged to ``release`` (step "private-pca" unless it names one).
    DTTZ14; KSSU19 §3.7 of the spec.
    """
    if not isinstance(budget, ZCDP | ApproxDP | PureDP):
        raise PrivacyBudgetError("budget must be a ZCDP, ApproxDP or PureDP instance")
    data = as_rows(X)
    n, d = data.shape
    rank = check_positive_int(rank, "rank", minimum=1)
    if rank > d:
        raise ValueError(f"rank must be at most the dimension d = {d}, got {rank}")
    c = np.asarray(center, dtype=np.float64)
    if c.shape != (d,) or not np.isfinite(c).all():
        raise ValueError(f"center must be a finite vector of shape ({d},)")
    radius = float(radius)
    if not (math.isfinite(radius) and radius > 0):
        raise ValueError("radius must be a finite number > 0")

    clipped, _ = clip_rows(data, c, radius)  # the count of clipped rows is private: dropped
    centred = clipped - c
    second_moment = centred.T @ centred / n
    pure = is_pure(budget)
    if pure:
        sensitivity = clipped_second_moment_upper_l1(radius, n, d)
    else:
        sensitivity = clipped_second_moment_frobenius(radius, n)
    noisy = symmetric_matrix_mechanism(
        second_moment, sensitivity, budget, accountant=release.accountant, noise=release.noise,
        step=release.named("private-pca").step,
    )
    if pure:
        assert not isinstance(budget, ZCDP)  # pure: PureDP, or ApproxDP with delta 0
        eps = budget.epsilon
        scale = 0.0 if math.isinf(eps) else sensitivity / eps
    else:
        scale = gaussian_sigma(sensitivity, budget)
    eigenvalues, components = top_eigenvectors(noisy, rank)
    return PrivatePCA(
        components=components,
        eigenvalues=eigenvalues,
        noise_scale=scale,
        center=c.copy(),
        radius=radius,
        noise_kind="laplace" if pure else "gaussian",
    )


def noise_spectral_norm_bound(noise_scale: float, d: int, beta: float = 0.05) -> float:
    """High-probability bound s·(2√d + 1 + 2√ln(1/β)) on ‖E‖₂ for a d × d symmetric matrix whose
    upper triangle (diagonal included) is independent N(0, s²): E‖E‖₂ ≲ (2√d + 1)s and ‖E‖₂ is
    a √2·s-Lipschitz function of the standardised entries (Gaussian concentration). Spec §3.7
    [X]; checked empirically in the tests. For Gaussian noise only. The symmetric matrix
    mechanism's off-diagonal noise is s/√2, so the bound holds with room to spare."""
    d = check_positive_int(d, "d", minimum=1)
    beta = check_probability(beta, "beta")
    s = float(noise_scale)
    if not (math.isfinite(s) and s >= 0):
        raise ValueError("noise_scale must be finite and >= 0")
    return s * (2.0 * math.sqrt(d) + 1.0 + 2.0 * math.sqrt(math.log(1.0 / beta)))


def projection_error_bound(noise_scale: float, d: int, beta: float = 0.05) -> float:
    """With probability ≥ 1 − β, λ_max(Π_⊥ M Π_⊥) − λ_{rank+1}(M) ≤ 2‖E‖₂ ≤ this value, where
    Π_⊥ projects off the released components (Weyl; DTTZ14 Thm 9 / KSSU19 Lemma 4.8 form)."""
    return 2.0 * noise_spectral_norm_bound(noise_scale, d, beta)
