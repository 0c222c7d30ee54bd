"""The final DP pick of private EM (:mod:`privgauss.mixture.private_em`): the EM fit, a single
Gaussian, or (with public rows) a mixture fitted on the public rows alone — whichever has the
largest noisy clipped log-likelihood on the private rows (issue 27: a fit worse than one
Gaussian, or than the public rows alone, is never returned but by the pick's noise).

**Reference.** Our design; the score is private EM's run pick (the exponential-mechanism-free
"report noisy max" over a joint Gaussian release of clipped log-likelihood sums, as in DP model
selection by noisy scores: Chaudhuri, Vinterbo, "A stability-based validation procedure for
differentially private machine learning", NeurIPS 2013).

**Neighbours:** replace one row of the private rows; n is public. **Guarantee:** one Gaussian
mechanism, ρ-zCDP at the plan's ``rho_final`` (ledger entry "em final selection"), for every
public dataset: the candidates are released models (the EM fit, the whitening frame's standard
normal — itself the localisation's released Gaussian, or the public rows' one) and a
non-private learner run on the public rows only (free, untrusted); the pick is post-processing.

**Candidates** (all in the whitened frame z; each a k-component mixture so the estimator's
shapes do not change):

* ``"em"``: the last EM step's model;
* ``"single_gaussian"``: the frame's N(0, I) (k equal components, equal weights) — the released
  Gaussian the rows were whitened by (the histogram localisation and its re-whitening, the
  CoinPress release inside a prior, or the public rows' mean and covariance): free;
* ``"public"`` (with at least max(d + 1, k) public rows): scikit-learn's ``GaussianMixture(k,
  n_init=5)`` on the public rows alone, seeded from the fit's noise source (public
  randomness); its warnings are captured; when it fails, no public candidate (a function of
  the public rows only).

**Score.** For each candidate c, S_c = Σ_i clip(log p_c(z_i) − log φ(z_i), ±b) (φ the frame's
standard normal, b = 2d + 10, a row no component can score counts 0), released jointly with
Gaussian noise of L2 sensitivity 2b√C (:func:`~privgauss.sensitivity.score_sums_l2`, C the
*planned* number of candidates — a missing public candidate only makes the noise larger than
needed). The largest noisy S_c wins if it is the EM fit's or beats it by ``MARGIN`` = 2 noise
sds of a difference (2√2·σ): the EM fit is the model asked for, and on the real-table corpus
a plain argmax at σ/n ≈ 0.1 nat/row (bundesliga with 1 % public rows, n = 1.4e4) returned
the single Gaussian in 1 of 2 fits where the EM fit was 0.13 nat/row better; a switch away
from a better EM fit now needs a noise draw beyond 2 sds (2.3 %). Its noise per row is
σ/n = 2b√C/(n√(2ρ_final)), so the result is within about (2 + 2)·√2·σ/n of the best
candidate, w.h.p.

**One pass.** The same pass counts, for each candidate, the rows outside every one of its
components' counting balls (the clipped count of :mod:`.private_em`); only the winner's count
is released after the pick (a count of a model chosen by a DP output: sensitivity 1).
"""

from __future__ import annotations

import math
import warnings
from functools import partial
from typing import Any

import numpy as np

from ..backends import reduce_rows
from ..mechanisms import gaussian_mechanism
from ..noise import NoiseSource
from ..privacy import ZCDP, Accountant
from ..sensitivity import score_sums_l2
from .em_starts import EIG_FLOOR, Run, repair_covariance

__all__: list[str] = []

PUBLIC_INITS = 5  # k-means inits of the public-rows fit (as the benchmark's reference)
SCORE_EIG_FLOOR = 1e-12  # a candidate's eigenvalues for scoring (EM's own are >= 1e-8)
SUB_ROWS = 4096  # rows per sub-block of the kernel
MARGIN = 2.0  # noise sds of a difference by which a simpler candidate must beat the EM fit

Terms = tuple[np.ndarray, np.ndarray, np.ndarray]  # (means, Cholesky inverses, log norms)


def single_gaussian(k: int, d: int) -> Run:
    """The frame's standard normal as a k-component mixture: k equal components N(0, I)."""
    return np.full(k, 1.0 / k), np.zeros((k, d)), np.repeat(np.eye(d)[None], k, axis=0)


def public_candidate(P: np.ndarray, k: int, rng: np.random.Generator, m0: np.ndarray,
                     W: np.ndarray) -> Run | None:
    """scikit-learn's ``GaussianMixture(k, n_init=PUBLIC_INITS)`` fitted on the public rows
    ``P`` alone, in the data's coordinates (as a user would: its ``reg_covar`` is on that
    scale), mapped to the whitened frame z = W(x − m₀); None when it cannot be fitted (fewer
    rows than k, a numerical failure): a function of public rows, the released frame and
    public randomness only. Its warnings (non-convergence) are captured, never re-emitted."""
    from sklearn.mixture import GaussianMixture

    if P.shape[0] < k:
        return None
    seed = int(rng.integers(2**31 - 1))
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            gm = GaussianMixture(k, covariance_type="full", n_init=PUBLIC_INITS,
                                 random_state=seed).fit(P)
    except (ValueError, np.linalg.LinAlgError, FloatingPointError):
        return None
    w = np.asarray(gm.weights_, dtype=np.float64)
    means = (np.asarray(gm.means_, dtype=np.float64) - m0) @ W.T
    covs = np.einsum("ab,jbc,dc->jad", W, np.asarray(gm.covariances_, dtype=np.float64), W)
    out = (w / w.sum(), means, 0.5 * (covs + covs.transpose(0, 2, 1)))
    if not all(np.isfinite(a).all() for a in out):
        return None
    return out


def _terms(run: Run, floor: float) -> Terms:
    """(means, L_j^{-1}, log π_j − ½ log det Σ_j − (d/2) log 2π) of a model, its covariances
    repaired with eigenvalues at least ``floor``."""
    w, means, covs = run
    d = means.shape[1]
    L = np.linalg.cholesky(np.array([repair_covariance(C, floor) for C in covs]))
    Linv = np.array([np.linalg.inv(Lj) for Lj in L])
    logdet = 2.0 * np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1)
    with np.errstate(divide="ignore"):
        log_norm = np.log(w) - 0.5 * logdet - 0.5 * d * math.log(2 * math.pi)
    return means, Linv, log_norm


def final_kernel(B: np.ndarray, scored: tuple[Terms, ...], counted: tuple[Terms, ...],
                 radius: float, bound: float) -> tuple[np.ndarray, np.ndarray]:
    """For each candidate over a block: Σ_i clip(log p_c(z_i) − log φ(z_i), ±bound) (``scored``:
    its terms; a row it cannot score counts 0) and the number of rows outside every component's
    ball ‖L_j^{-1}(z − μ_j)‖ ≤ radius (``counted``: its terms for the count; a row with a
    non-finite coordinate is outside). Module level: picklable to dask workers. Nothing here is
    released."""
    d = B.shape[1]
    scores, outside = np.zeros(len(scored)), np.zeros(len(scored))
    with np.errstate(all="ignore"):
        for a in range(0, B.shape[0], SUB_ROWS):
            Bs = B[a : a + SUB_ROWS]
            ref = -0.5 * np.einsum("ij,ij->i", Bs, Bs) - 0.5 * d * math.log(2 * math.pi)
            for c, ((mu, Li, ln), (cmu, cLi, _)) in enumerate(zip(scored, counted,
                                                                   strict=True)):
                logp = np.empty((Bs.shape[0], mu.shape[0]))
                inside = np.zeros(Bs.shape[0], dtype=bool)
                for j in range(mu.shape[0]):
                    Y = (Bs - mu[j]) @ Li[j].T
                    logp[:, j] = ln[j] - 0.5 * np.einsum("ij,ij->i", Y, Y)
                    Yc = (Bs - cmu[j]) @ cLi[j].T
                    inside |= np.einsum("ij,ij->i", Yc, Yc) <= radius * radius
                top = np.max(logp, axis=1)
                v = top + np.log(np.sum(np.exp(logp - top[:, None]), axis=1)) - ref
                scores[c] += np.clip(np.where(np.isfinite(v), v, 0.0), -bound, bound).sum()
                outside[c] += np.count_nonzero(~inside)
    return scores, outside


def final_pick(Z: Any, candidates: list[Run], *, radius: float, bound: float, rho: float,
               planned: int, acct: Accountant, src: NoiseSource
               ) -> tuple[int, float, np.ndarray, float]:
    """Release the candidates' scores jointly (ρ-zCDP at ``rho``, sensitivity
    ``score_sums_l2(bound, planned)``, step "em final selection") and pick the largest; the
    same pass counts each candidate's rows outside its balls of ``radius`` (covariances
    repaired at ``EIG_FLOOR``, as the clipped count always read them). Returns
    (the winner's index, its unreleased count of rows outside its balls — for the caller's
    count release —, the noisy scores per row, the scores' noise per row)."""
    n = int(Z.shape[0])
    scored = tuple(_terms(c, SCORE_EIG_FLOOR) for c in candidates)
    counted = tuple(_terms(c, EIG_FLOOR) for c in candidates)
    scores, outside = reduce_rows(Z, partial(final_kernel, scored=scored, counted=counted,
                                             radius=radius, bound=bound))
    if rho <= 0:  # no pick planned: the first candidate (the EM fit), nothing released
        return 0, float(np.asarray(outside)[0]), np.full(len(candidates), np.nan), math.inf
    sens = score_sums_l2(bound, planned)
    noisy = gaussian_mechanism(np.asarray(scores), sens, ZCDP(rho), accountant=acct,
                               noise=src, step="em final selection")
    noisy = np.atleast_1d(np.asarray(noisy, dtype=np.float64))
    sigma = sens / math.sqrt(2.0 * rho)
    win = int(np.argmax(np.nan_to_num(noisy, nan=-np.inf)))
    if win != 0 and not noisy[win] - noisy[0] > MARGIN * math.sqrt(2.0) * sigma:
        win = 0  # within the noise of the EM fit: keep the model the user asked for
    return win, float(np.asarray(outside)[win]), noisy / n, sigma / n
