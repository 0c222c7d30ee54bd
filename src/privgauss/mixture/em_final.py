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
  CoinPress release inside a prior, or the public rows' mean and covariance): free. In the
  plan's *diagonal frame* (small n, :func:`~privgauss.mixture.private_em._diagonal_frame`)
  that normal is a diagonal Gaussian with bracket-middle scales (no correlations), and the
  candidate is instead the EM fit's moment match (:func:`moment_gaussian`: its overall mean
  and covariance, full; post-processing, free);
* ``"public"`` (with at least max(d + 1, k) public rows): scikit-learn's ``GaussianMixture(k,
  n_init)`` on the public rows alone (5–20 inits, :func:`public_inits`), seeded from the fit's
  noise source (public randomness); its warnings are captured; when it fails, no public
  candidate (a function of the public rows only).

**Score.** For each candidate c after the first, its log-likelihood ratio to the EM fit on
the private rows, R_c = Σ_i clip(log p_c(z_i) − log p_em(z_i), ±b) (b = d + 5,
:func:`final_bound`; a row neither can score counts 0), released jointly with Gaussian noise
of L2 sensitivity 2b√(C − 1) (:func:`~privgauss.sensitivity.score_sums_l2`, C the *planned*
number of candidates — a missing public candidate only makes the noise larger than needed);
the EM fit's R is 0. Ratios to the EM fit need a smaller clip than scores against a fixed
reference (the frame's standard normal, b = 2d + 10, as private EM's run pick), and one
number fewer: the noise per row is 2.1–2.5× smaller at d = 2–5 (flower pixels, 1 % public
rows: σ/n 0.037 → 0.015, where a public fit 0.07 nat/row better on the private rows had lost
to the EM fit by the noise). The largest noisy R_c wins; the single Gaussian only if it
beats the EM fit by ``MARGIN`` = 2 noise sds (2σ): it is a simpler model than the one asked
for, and on the real-table corpus a plain argmax at σ/n ≈ 0.1 nat/row (bundesliga with 1 %
public rows, n = 1.4e4) returned it in 1 of 2 fits where the EM fit was 0.13 nat/row
better. The public rows' fit is a k-component mixture as asked, and has no margin. The
result is within about (2 + 2)·σ/n of the best candidate (σ/n = 2b√(C − 1)/(n√(2ρ_final))),
w.h.p., up to the clip (which ranks a fit that misses a few rows by far less low than
their full loss would).

**At small n** (session 43, brief SMALLPICK; ``benchmarks/results/em_small_n.md``): in the
diagonal frame only (there the single Gaussian is the EM fit's moment match; elsewhere the
frame's standard normal, with public rows a Gaussian of a few dozen rows, keeps ``MARGIN``:
picked at the smaller margin, immi2 and immi5 with 1 % public rows ended 0.2 nat/row worse),
where the plan predicts that its own noise costs the EM fit more than ``NOISE_COST_ALARM`` nat/row
(``private_em.noise_cost``'s ``per_row``, public), the single Gaussian's margin is
``MARGIN`` × alarm / cost (:func:`pick_margin`; unchanged where the noise is cheap), and (two
candidates: the EM fit and its moment match, whose log densities differ by little on most
rows) the ratios are clipped at
``DIAG_BOUND`` = 2 instead of d + 5 (:func:`final_bound`; sensitivity 2·2·√1 = 4): the
pick's noise per row (d + 5)/2 = 3.5–6× smaller there (d = 2–7). On the 17 small corpus
tables em fits in the diagonal frame the pick then returns the moment match at 0–12 of 20
splits.

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
from ..mechanisms import Release, gaussian_mechanism
from ..privacy import ZCDP
from ..sensitivity import score_sums_l2
from .em_starts import EIG_FLOOR, Run, repair_covariance

__all__: list[str] = []

PUBLIC_INITS = (5, 20)  # k-means inits of the public-rows fit: at least, at most
PUBLIC_INIT_ROWS = 100_000  # public rows × inits the public-rows fit may take (its time)
SCORE_EIG_FLOOR = 1e-12  # a candidate's eigenvalues for scoring (EM's own are >= 1e-8 where
# its covariances are not carried by their factors)
SUB_ROWS = 4096  # rows per sub-block of the kernel
DIAG_BOUND = 2.0  # the clip of the ratios in the diagonal frame (final_bound)
MARGIN = 2.0  # noise sds of a difference by which the single Gaussian must beat the EM fit

Terms = tuple[np.ndarray, np.ndarray, np.ndarray]  # (means, Cholesky inverses, log norms)


def single_gaussian(k: int, d: int) -> Run:
    """The frame's standard normal as a k-component mixture: k equal components N(0, I)."""
    return np.full(k, 1.0 / k), np.zeros((k, d)), np.repeat(np.eye(d)[None], k, axis=0)


def moment_gaussian(run: Run, k: int, factors: np.ndarray | None = None) -> Run:
    """The single Gaussian with the overall mean and covariance of a released mixture ``run``
    (its moment match: m = Σ_j w_j μ_j, S = Σ_j w_j (Σ_j + μ_j μ_jᵀ) − m mᵀ, with Σ_j = L_j L_jᵀ
    where the steps carried the factors ``factors``), as k equal components — post-processing
    of released values only. Its eigenvalues are repaired at ``EIG_FLOOR`` (a mixture of
    components parked on one value of a column keeps that column's spread across them; the
    repair only touches a column constant in every component)."""
    w, means, covs = run
    C = covs if factors is None else np.einsum("jab,jcb->jac", factors, factors)
    w = np.asarray(w, dtype=np.float64) / float(np.sum(w))
    m = w @ means
    D = means - m
    S = np.einsum("j,jab->ab", w, C) + np.einsum("j,ja,jb->ab", w, D, D)
    S = repair_covariance(0.5 * (S + S.T), EIG_FLOOR)
    return np.full(k, 1.0 / k), np.repeat(m[None], k, axis=0), np.repeat(S[None], k, axis=0)


def pick_margin(noise_cost: float, alarm: float) -> float:
    """The single Gaussian's handicap in the final pick (noise sds of a difference, public):
    ``MARGIN`` where the plan's predicted noise cost of the EM fit (``noise_cost``, nat/row:
    :func:`~privgauss.mixture.private_em.noise_cost`'s ``per_row`` of the plan) is at most
    ``alarm`` (the estimator's ``NOISE_COST_ALARM``), else ``MARGIN`` × alarm / noise_cost:
    where the plan itself expects its EM fit to lose far more than ``alarm`` to its noise, a
    Gaussian that scores higher is taken on less evidence. Public (n, d, k, the budget); the
    same as before wherever the budget makes EM's noise cheap, so it vanishes as the budget
    grows: at n = 5e4, ε = 1 every plan with k ≤ 4, d ≤ 15 (k = 5: d ≤ 14, k = 6: d ≤ 13);
    d = 14–15 at k = 5–6 predict 0.056–0.080 (margin 1.2–1.8), where the estimator warns
    (``NoisyFitWarning``) too."""
    if not noise_cost > alarm:
        return MARGIN
    return MARGIN * alarm / noise_cost


def public_candidate(P: np.ndarray, k: int, rng: np.random.Generator, m0: np.ndarray,
                     W: np.ndarray) -> Run | None:
    """scikit-learn's ``GaussianMixture(k, n_init)`` fitted on the public rows ``P`` alone, in
    the data's coordinates (as a user would: its ``reg_covar`` is on that scale), mapped to the
    whitened frame z = W(x − m₀); None when it cannot be fitted (fewer rows than k, a numerical
    failure): a function of public rows, the released frame and public randomness only. Its
    warnings (non-convergence) are captured, never re-emitted. ``n_init`` (:func:`public_inits`)
    is up to 20 on few public rows: there the fit's basin depends on its k-means seeding (on a
    table's 192 public rows, 2 of 10 five-init fits ended 2 nat/row below the others' on the
    private rows), and the pick can only return the basin it is offered."""
    from sklearn.mixture import GaussianMixture

    if P.shape[0] < k:
        return None
    seed = int(rng.integers(2**31 - 1))
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            gm = GaussianMixture(k, covariance_type="full", n_init=public_inits(P.shape[0]),
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


def public_inits(n_public: int) -> int:
    """The public-rows fit's k-means inits: ``PUBLIC_INIT_ROWS`` / n_public within
    ``PUBLIC_INITS`` (many on a few rows, where they are cheap and the basin is a lottery)."""
    lo, hi = PUBLIC_INITS
    return int(min(max(PUBLIC_INIT_ROWS // max(n_public, 1), lo), hi))


def _terms(run: Run, floor: float, factors: np.ndarray | None = None) -> Terms:
    """(means, L_j^{-1}, log π_j − ½ log det Σ_j − (d/2) log 2π) of a model, its covariances
    repaired with eigenvalues at least ``floor`` — or, given, read from their Cholesky
    ``factors`` as they are (a wide plan's EM fit, carried by its factors: its eigenvalues
    may be far below ``floor``, exact in the factor)."""
    w, means, covs = run
    d = means.shape[1]
    L = (np.linalg.cholesky(np.array([repair_covariance(C, floor) for C in covs]))
         if factors is None else factors)
    Linv = np.array([np.linalg.inv(Lj) for Lj in L])
    logdet = 2.0 * np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1)
    with np.errstate(divide="ignore"):
        log_norm = np.log(w) - 0.5 * logdet - 0.5 * d * math.log(2 * math.pi)
    return means, Linv, log_norm


def final_bound(d: int, diagonal: bool = False) -> float:
    """The clip of a row's log-likelihood ratio to the EM fit in the final pick: d + 5 (public).
    Two fits' log densities differ by O(d) nat on a typical row; on the corpus (flower pixels,
    wavesurge, budget food) the ratios' 5–95 % range lay within ±12 and clipping at d + 5
    moved a mean ratio by at most 0.03 nat/row but where one fit misses 1–5 % of the rows
    by 10–50 nat (there the clipped ratio still ranks it lower, by less). ``diagonal`` (the
    plan's diagonal frame: two candidates, the EM fit and its moment match): at most
    ``DIAG_BOUND``."""
    return min(float(d) + 5.0, DIAG_BOUND) if diagonal else float(d) + 5.0


def final_kernel(B: np.ndarray, scored: tuple[Terms, ...], counted: tuple[Terms, ...],
                 radius: float, bound: float) -> tuple[np.ndarray, np.ndarray]:
    """For each candidate c over a block: Σ_i clip(log p_c(z_i) − log p_0(z_i), ±bound), its
    log-likelihood ratio to the first candidate (``scored``: their terms; the first's sum is
    0; a row whose ratio is undefined — neither can score it — counts 0), and the number of
    rows outside every component's ball ‖L_j^{-1}(z − μ_j)‖ ≤ radius (``counted``: its terms
    for the count; a row with a non-finite coordinate is outside). Module level: picklable to
    dask workers. Nothing here is released."""
    scores, outside = np.zeros(len(scored)), np.zeros(len(scored))
    with np.errstate(all="ignore"):
        for a in range(0, B.shape[0], SUB_ROWS):
            Bs = B[a : a + SUB_ROWS]
            ref = np.zeros(Bs.shape[0])
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
                v = top + np.log(np.sum(np.exp(logp - top[:, None]), axis=1))
                if c == 0:
                    ref = v
                else:
                    r = v - ref
                    scores[c] += np.clip(np.where(np.isnan(r), 0.0, r), -bound, bound).sum()
                outside[c] += np.count_nonzero(~inside)
    return scores, outside


def final_pick(Z: Any, candidates: list[Run], *, radius: float, bound: float, rho: float,
               planned: int, release: Release,
               margins: tuple[float, ...] | None = None,
               factors: list[np.ndarray | None] | None = None
               ) -> tuple[int, float, np.ndarray, float]:
    """Release the candidates' clipped log-likelihood ratios to the first (the EM fit) jointly
    (ρ-zCDP at ``rho``, sensitivity ``score_sums_l2(bound, planned − 1)``, step "em final
    selection") and pick the largest (the first's is 0) after each candidate's handicap
    ``margins[c]`` (noise sds, public; the first candidate's 0; default none); the same pass
    counts each candidate's rows outside its balls of ``radius`` (covariances repaired at
    ``EIG_FLOOR``, as the clipped count always read them, but read from the factors where
    given: the count is of the rows the returned model leaves out). Returns (the winner's index, its
    unreleased count of rows outside its balls — for the caller's count release —, the noisy
    ratios per row (the first 0), their noise per row). ``factors`` (per candidate, or None):
    the candidates' covariances' Cholesky factors where EM carried them, scored as they are
    (not repaired at ``SCORE_EIG_FLOOR``: a parked component at 1e-16 would be scored at
    1e-12)."""
    n = int(Z.shape[0])
    facs = factors if factors is not None else [None] * len(candidates)
    scored = tuple(_terms(c, SCORE_EIG_FLOOR, f) for c, f in zip(candidates, facs, strict=True))
    # a candidate carried by its factors is counted by them too: the count measures the rows
    # the returned model leaves out (its background's weight), and a component parked to 1e-10
    # in the factor but read at EIG_FLOOR (sd 0.03) left movies' 2 rows 1e9 of its sds away
    # uncounted at ε = 1e12 (background 0: each scored -1.8e18)
    counted = tuple(_terms(c, EIG_FLOOR, f) for c, f in zip(candidates, facs, strict=True))
    scores, outside = reduce_rows(Z, partial(final_kernel, scored=scored, counted=counted,
                                             radius=radius, bound=bound))
    if rho <= 0 or planned < 2:  # no pick planned: the first candidate, nothing released
        return 0, float(np.asarray(outside)[0]), np.full(len(candidates), np.nan), math.inf
    sens = score_sums_l2(bound, planned - 1)
    ratios = np.asarray(scores, dtype=np.float64)[1:]
    noisy = gaussian_mechanism(ratios, sens, ZCDP(rho), accountant=release.accountant,
                               noise=release.noise, step=release.name("em final selection"))
    noisy = np.concatenate([[0.0], np.atleast_1d(np.asarray(noisy, dtype=np.float64))])
    sigma = sens / math.sqrt(2.0 * rho)
    lead = np.zeros(len(candidates)) if margins is None else np.asarray(margins, dtype=float)
    # a handicapped candidate wins only by beating the first by its margin (ties: the first)
    win = int(np.argmax(np.nan_to_num(noisy - lead * sigma, nan=-np.inf)))
    return win, float(np.asarray(outside)[win]), noisy / n, sigma / n
