"""Sensitivities of the statistics the library releases, derived in one audited place.

Neighbouring datasets differ by **replacing one record** (n is public), unless a function says
otherwise. Every algorithm takes its sensitivity from here; ``tests/test_sensitivity.py`` checks
each formula against brute-force worst cases.
"""

from __future__ import annotations

import math


def _check(radius: float, n: int) -> None:
    if not radius >= 0 or math.isinf(radius):
        raise ValueError("radius must be finite and >= 0")
    if n < 1:
        raise ValueError("n must be >= 1")


def clipped_mean_l2(radius: float, n: int) -> float:
    """L2 sensitivity of the mean of n rows clipped to a ball of ``radius``: 2r/n.

    Replacing x by y moves the sum by y − x, and ‖y − x‖ ≤ 2r inside the ball.
    """
    _check(radius, n)
    return 2.0 * radius / n


def clipped_mean_l1(radius: float, n: int, d: int) -> float:
    """L1 sensitivity of the mean of n rows clipped to an L2 ball of ``radius`` in d dimensions:
    2r√d/n (since ‖v‖₁ ≤ √d ‖v‖₂)."""
    _check(radius, n)
    return 2.0 * radius * math.sqrt(d) / n


def clipped_second_moment_frobenius(radius: float, n: int) -> float:
    """Frobenius sensitivity of (1/n) Σ xxᵀ over rows clipped to norm ``radius``: √2 r²/n.

    ‖xxᵀ − yyᵀ‖_F² = ‖x‖⁴ + ‖y‖⁴ − 2(xᵀy)² ≤ 2r⁴. It is the L2 sensitivity of the upper
    triangle with off-diagonal entries scaled by √2 (an isometry), which
    :func:`~privgauss.mechanisms.symmetric_matrix_mechanism` noises.
    """
    _check(radius, n)
    return math.sqrt(2.0) * radius**2 / n


def clipped_second_moment_upper_l1(radius: float, n: int, d: int) -> float:
    """L1 sensitivity of the upper triangle (diagonal included) of (1/n) Σ xxᵀ, rows clipped to
    norm ``radius``. Per row the upper triangle has L1 norm ≤ Σ_{i≤j}|x_i x_j| ≤ (‖x‖₁² + ‖x‖²)/2
    ≤ (d + 1) r²/2, so a replacement moves it by at most (d + 1) r²/n."""
    _check(radius, n)
    return (d + 1) * radius**2 / n


def count() -> float:
    """A count of records satisfying a predicate changes by at most 1 under replace-one."""
    return 1.0


def histogram_l1() -> float:
    """A histogram's L1 sensitivity under replace-one: one bin loses a record, one gains one."""
    return 2.0


def stability_histogram_threshold(epsilon: float, delta: float) -> float:
    """Release threshold τ of the replace-one stability histogram with Laplace(2/ε) noise.

    Only a bin that is non-empty in one dataset and empty in the other can break ε-DP, and
    replace-one empties at most one bin of each dataset. It has count 1 and is released when
    1 + Z > τ, Z discrete Laplace(2/ε): probability ≤ e^{−(τ−1)ε/2} / (1 + e^{−ε/2}) < δ for
    τ = 1 + (2/ε) ln(1/δ).
    """
    return 1.0 + (2.0 / epsilon) * math.log(1.0 / delta)


def gaussian_stability_histogram_threshold(sigma: float, delta_key: float) -> float:
    """Release threshold τ of a stability histogram with discrete Gaussian noise N_Z(0, σ²)
    (or a rounded continuous Gaussian) on its counts.

    Under replace-one a bin that is non-empty in only one of the two datasets holds exactly the
    moved record (count 1); it is released when 1 + Z > τ, i.e. Z ≥ m for the integer
    m = ⌊τ − 1⌋ + 1 ≥ τ − 1. The discrete Gaussian's tail satisfies P(Z ≥ m) ≤ P(N(0, σ²) ≥ m − 1)
    (Canonne–Kamath–Steinke 2020), and a rounded Gaussian has P(rint(N) ≥ m) = P(N ≥ m − ½); both
    are ≤ P(N(0, σ²) ≥ τ − 2) = ``delta_key`` for τ = 2 + σ·Φ⁻¹(1 − ``delta_key``).
    """
    from statistics import NormalDist

    if not (sigma > 0 and math.isfinite(sigma)) or not 0.0 < delta_key < 0.5:
        raise ValueError("sigma must be finite and > 0, delta_key in (0, 0.5)")
    return 2.0 + sigma * -NormalDist().inv_cdf(delta_key)


def histogram_l2() -> float:
    """A histogram's L2 sensitivity under replace-one: √2 (one bin −1, another +1). Used for the
    joint release of the part sizes of a released partition (a replaced row leaves one part and
    joins another)."""
    return math.sqrt(2.0)


def column_max_counts_l2(d: int) -> float:
    """L2 sensitivity of the d per-column maxima of bin counts, (max_b c_1(b), …, max_b c_d(b)),
    c_j(b) the number of rows whose column j falls in bin b of a fixed (public) partition of
    the line, under replace-one: √d. In each column the replaced row leaves one bin and joins
    one (possibly the same): every count moves by at most 1, so their maximum does too
    (max_b c(b) ≤ max_b c'(b) + 1 and back). Equality: every column's heaviest bin loses the
    row (ties elsewhere below). (privgauss.mixture.atoms)"""
    if not (isinstance(d, int) and d >= 1):
        raise ValueError("d must be an int >= 1")
    return math.sqrt(d)


def bounded_mean(width: float, n: int) -> float:
    """Sensitivity of the mean of n values that each lie in an interval of length ``width``:
    width/n (replace-one changes one term by at most the width). E.g. the mean of ‖x − μ‖² over
    rows clipped to a ball of radius R around a point, μ in that ball: width 4R²."""
    _check(width, n)
    return float(width) / n


# ----------------------------------------------------------------------------------------------
# Private location, terrific balls, and their aggregation (KSSU19; privgauss.mixture)
# ----------------------------------------------------------------------------------------------


def capped_count_score() -> float:
    """Replace-one sensitivity of the capped GoodRadius score (NSV16; KSSU19 App. B)
    L(r) = (1/t)·(sum of the t largest values of min(|X ∩ B_r(x_i)|, t) over the rows x_i): 2.

    For a fixed other row each capped count moves by ≤ 1 (the replaced row leaves or enters its
    ball), so the sum over the t best unchanged rows moves by ≤ t; the replaced row's own value
    lies in [0, t] and can enter or leave the top t, another ≤ t. Divided by t: 2. Without the
    cap the change would be Θ(n/t) (spec pitfall P4).
    """
    return 2.0


def capped_radius_score() -> float:
    """Replace-one sensitivity of the terrific-ball radius score Q_r (KSSU19 Claim 5.4): 2.

    Q_r is (1/t)·(sum of the t largest of q_r(x) = min{#_t(in B_r(x)), #_t(outside B_cr(x)),
    t − #_t(annulus)}, #_t = min(·, t)); for a fixed row every term is a capped count moving by
    ≤ 1, and the replaced row's own value lies in [0, t]: the same argument as
    :func:`capped_count_score`.
    """
    return 2.0


def ball_query() -> float:
    """Replace-one sensitivity of the terrific-ball check f_{p,r}(X) = min{|X ∩ B_r(p)|,
    |X \\ B_cr(p)|, t − |annulus|} for a released centre p (KSSU19 eq. (4)): 1 — each term is a
    count of one fixed region, and the minimum of 1-Lipschitz functions is 1-Lipschitz."""
    return 1.0


def joint_sum_count(radius: float, d: int, norm: str = "l2") -> tuple[float, float]:
    """(sensitivity, κ) of the joint release (Σ_{x∈S}(x − a), κ·|S|) over the rows of a region S
    fixed by public or released values, each row clipped to B(a, radius), under replace-one.

    A replacement either moves one member (sum change ≤ 2r, count unchanged), or one row enters
    or leaves S (sum change ≤ r, count change 1). ``norm="l2"``: κ = √3·r makes both cases
    ≤ 2r (√(r² + 3r²) = 2r). ``norm="l1"``: κ = r√d, bound 2r√d (‖v‖₁ ≤ √d‖v‖₂; r√d + κ = 2r√d).
    """
    r = float(radius)
    if not (math.isfinite(r) and r >= 0):
        raise ValueError("radius must be finite and >= 0")
    if norm == "l2":
        return 2.0 * r, math.sqrt(3.0) * r
    if norm == "l1":
        return 2.0 * r * math.sqrt(d), r * math.sqrt(d)
    raise ValueError("norm must be 'l2' or 'l1'")


def ppe_score_mean(t: int) -> float:
    """L1 sensitivity of PPE's Q = (1/t) Σ_i q_i, q_i = (1/t)#{j: dist(Y_i, Y_j) ≤ r} (Arbas
    thesis Remark 4.3.3): replace-one changes one block output Y_ℓ; q_i (i ≠ ℓ) moves by ≤ 1/t
    and q_ℓ ∈ [1/t, 1] by ≤ (t − 1)/t, so Q moves by ≤ 2(t − 1)/t² < 2/t."""
    if t < 1:
        raise ValueError("t must be >= 1")
    return 2.0 / t


def stable_average_l2(radius: float, t: int, low: float, high: float, floor: float) -> float:
    """L2 sensitivity of the weighted average ū = Σ w_i u_i / Σ w_i of t block outputs, with
    w_i = clip((q_i/t − low)/(high − low), 0, 1) and q_i = #{j: ‖u_i − u_j‖ ≤ radius}, between
    replace-one neighbours whose Q = Σ q_i / t² are both ≥ ``floor`` (> low > 1/2 + 1/(2t)).

    Proof (``reductions/ppe.py``, stable average): any two positive-weight blocks, in the same
    or in neighbouring datasets, have more than 2·low·t − t ≥ 1 common close blocks, hence one
    that is unchanged, so every positive-weight output lies within 2r of every other one and of
    ū; W = Σ w_i ≥ t(floor − low)/(1 − low) (w_i ≥ (q_i/t − low)/(1 − low)); the weights of the
    unchanged blocks move by Σ|Δw_i| < 1/(high − low) and the changed block contributes ≤ 4r, so
    ‖ū − ū'‖ ≤ (2r/(high − low) + 4r) / W_min.
    """
    if not (0.5 < low < high <= 1.0 and low < floor <= 1.0):
        raise ValueError("need 1/2 < low < high <= 1 and low < floor <= 1")
    if t * (2 * low - 1) < 1:
        raise ValueError("stable averaging needs t(2 low - 1) >= 1")
    if not radius >= 0 or math.isinf(radius):
        raise ValueError("radius must be finite and >= 0")
    w_min = t * (floor - low) / (1 - low)
    return (2 * radius / (high - low) + 4 * radius) / w_min


# ----------------------------------------------------------------------------------------------
# Joint per-cluster sums (privgauss.mixture.cluster_estimation)
# ----------------------------------------------------------------------------------------------


def joint_cluster_sum_l2(radius: float) -> float:
    """L2 sensitivity of the k per-cluster sums (V_1, …, V_k), V_j = Σ_{i∈C_j} z_i, of rows
    mapped to z_i = clip_r(W_j(x_i − c_j)) (‖z_i‖ ≤ r), under replace-one, released **jointly**:
    2r.

    The clusters C_j are disjoint and each row's cluster and frame (c_j, W_j) are a function of
    that row and of public or released values only, so a replacement changes one row. Either
    it stays in its cluster (one V_j moves by z' − z, norm ≤ 2r) or it moves from cluster j to
    j' (V_j by −z, V_j' by +z': √(‖z‖² + ‖z'‖²) ≤ √2·r), or it enters/leaves the clusters
    (≤ r). The maximum is 2r — not the 2·2r of charging each cluster's release separately.
    """
    _check(radius, 1)
    return 2.0 * float(radius)


def soft_counts_l2() -> float:
    """L2 sensitivity of the soft counts (N_1, …, N_k), N_j = Σ_i r_ij, of responsibilities
    r_i = (r_i1, …, r_ik) in the probability simplex (each a function of its own row and of
    released values), under replace-one: √2. Replacing row i changes N by r_i − r'_i, and
    ‖r − r'‖₂² ≤ ‖r − r'‖₁ · max_j |r_j − r'_j| ≤ 2 · 1; equality at two distinct vertices.
    (privgauss.mixture.private_em)"""
    return math.sqrt(2.0)


def soft_sums_l2(radius: float) -> float:
    """L2 sensitivity of the concatenated weighted sums (S_1, …, S_k), S_j = Σ_i r_ij y_ij, with
    r_i in the simplex and ‖y_ij‖ ≤ ``radius`` (each y_ij a clipped function of row i and of
    released values), under replace-one: 2r. Replacing row i changes S_j by
    r_j y_j − r'_j y'_j, of norm ≤ r(r_j + r'_j); Σ_j r²(r_j + r'_j)² ≤ r²(Σ_j (r_j + r'_j))²
    = 4r². Equality: r = r' a vertex j and y'_j = −y_j. (privgauss.mixture.private_em)"""
    _check(radius, 1)
    return 2.0 * float(radius)


def soft_outer_sums_frobenius(radius: float) -> float:
    """Frobenius (L2 of the stacked matrices) sensitivity of the weighted second moments
    (M_1, …, M_k), M_j = Σ_i r_ij y_ij y_ijᵀ, rows as in :func:`soft_sums_l2`, under
    replace-one: √2·r². With P = y_j y_jᵀ and P' = y'_j y'_jᵀ PSD of Frobenius norm ≤ r² and
    ⟨P, P'⟩ ≥ 0: ‖r_j P − r'_j P'‖_F² ≤ r_j²‖P‖² + r'_j²‖P'‖² ≤ (r_j² + r'_j²) r⁴, and
    Σ_j (r_j² + r'_j²) ≤ ‖r‖₁² + ‖r'‖₁² = 2. Equality: r = r' a vertex, y'_j ⟂ y_j, both of
    norm r. It is the L2 sensitivity of the stacked upper triangles with off-diagonal entries
    scaled by √2 (:func:`~privgauss.mechanisms.frobenius_coordinates`).
    (privgauss.mixture.private_em)"""
    _check(radius, 1)
    return math.sqrt(2.0) * float(radius) ** 2


def soft_statistics_zcdp(rho_counts: float, rho_sums: float, rho_moments: float) -> float:
    """The zCDP ρ of releasing the soft counts N, weighted sums S and weighted second moments M
    of :func:`soft_counts_l2`, :func:`soft_sums_l2` and :func:`soft_outer_sums_frobenius`
    (every y_ij the same clipped row in all three; M may be the pooled Σ_j M_j) *together*,
    each with the Gaussian noise that alone would make it ``rho_*``-zCDP:
    ρ_S/2 + ρ_M + max(ρ_N, Q), with Q = ρ_S²/(16ρ_M) where ρ_S ≤ 4ρ_M, else ρ_S/2 − ρ_M — at
    most ρ_N + ρ_S + ρ_M, which composing the three charges. Under replace-one.

    With noise σ_x on block x, weights w_x = 1/σ_x, the privacy loss of a pair is
    Σ_j [w_N²(a_j − b_j)² + w_S²‖a_j y_j − b_j y'_j‖² + w_M²‖a_j P_j − b_j P'_j‖²_F] for
    responsibilities a, b in the (sub-)simplex, P = yyᵀ, ‖y‖ ≤ r. With u = y_j·y'_j the
    j-th term is w_N²(a − b)² + w_S²(a²‖y‖² + b²‖y'‖² − 2ab·u) + w_M²(a²‖y‖⁴ + b²‖y'‖⁴
    − 2ab·u²) ≤ (a² + b²)K + w_N²(a − b)² + 2ab·h, K = w_S²r² + w_M²r⁴ and h =
    max over |u| ≤ r² of −(w_S²u + w_M²u²): w_S⁴/(4w_M²) at u = −w_S²/(2w_M²) when that is
    inside, else w_S²r² − w_M²r⁴ at u = −r². Summed, with A = Σa_j², B = Σb_j² (≤ 1) and
    C = Σa_jb_j: (A + B)(w_N² + K) + C(2h − 2w_N²) ≤ 2K + 2·max(w_N², h) (a pooled M: its
    ‖Σ_j a_jP_j‖² ≤ r⁴ and its cross terms ⟨P_j, P'_l⟩ ≥ 0 give the same bound). In ρ
    units (ρ_N = w_N², ρ_S = 2w_S²r², ρ_M = w_M²r⁴) half of that is the formula. Either
    the counts' worst case (two vertices, a row moving between components: the sums' and
    moments' own cases cannot add to it at full size) or the same component with y'
    turned against y by just enough — the worst pairs of the three blocks exclude one
    another, so the charges of composing them overstate the cost (ρ_N, ρ_S, ρ_M = 0.1, 0.3,
    0.6: 0.85 instead of 1). Tight: both cases are attained (d ≥ 2). A block not released
    has ρ 0 (ρ_M = 0: max(ρ_N + ρ_S/2, ρ_S)). (privgauss.mixture.private_em)"""
    rc, rs, rm = float(rho_counts), float(rho_sums), float(rho_moments)
    if not (min(rc, rs, rm) >= 0 and math.isfinite(rc + rs + rm)):
        raise ValueError("the statistics' ρ must be finite and >= 0")
    q = rs * rs / (16.0 * rm) if rs <= 4.0 * rm else rs / 2.0 - rm
    return rs / 2.0 + rm + max(rc, q)


def score_sums_l2(bound: float, models: int) -> float:
    """L2 sensitivity of C = ``models`` sums of per-row scores clipped to [−b, b]
    (S_c = Σ_i clip(s_c(x_i), ±b), each s_c a function of its row and released values), under
    replace-one: 2b√C. Each S_c moves by at most 2b. Equality: a row scoring b in every model
    replaced by one scoring −b. (privgauss.mixture.private_em, the pick between EM runs)"""
    _check(bound, 1)
    if not (isinstance(models, int) and models >= 1):
        raise ValueError("models must be an int >= 1")
    return 2.0 * float(bound) * math.sqrt(models)


def regret_sums_l2(cap: float, models: int) -> float:
    """L2 sensitivity of C = ``models`` sums of per-row regrets capped at ``cap``
    (R_c = Σ_i max(s_c(x_i) − max_c' s_c'(x_i), −cap), each s_c a function of its row and
    released values), under replace-one: cap·√C. Every term lies in [−cap, 0], so each R_c
    moves by at most cap. Equality: a row every model scores alike (regrets 0) replaced by
    one that each model but another one scores far worse — possible for every c at once only
    up to the one model that is best on it, so cap·√C is an upper bound, tight within
    √(C/(C − 1)). (privgauss.mixture.private_em, the pick between EM runs)"""
    _check(cap, 1)
    if not (isinstance(models, int) and models >= 1):
        raise ValueError("models must be an int >= 1")
    return float(cap) * math.sqrt(models)


def joint_cluster_outer_sum_frobenius(radius: float) -> float:
    """Frobenius (L2 of the stacked matrices) sensitivity of the k per-cluster sums of outer
    products (M_1, …, M_k), M_j = Σ_{i∈C_j} z_i z_iᵀ, rows as in :func:`joint_cluster_sum_l2`,
    under replace-one, released jointly: √2·r².

    Within a cluster: ‖zzᵀ − z'z'ᵀ‖_F² = ‖z‖⁴ + ‖z'‖⁴ − 2(zᵀz')² ≤ 2r⁴. Across clusters j → j':
    ‖zzᵀ‖_F² + ‖z'z'ᵀ‖_F² = ‖z‖⁴ + ‖z'‖⁴ ≤ 2r⁴. Entering/leaving: ≤ r². It is the L2
    sensitivity of the stacked :func:`~privgauss.mechanisms.frobenius_coordinates`, which
    :func:`~privgauss.mechanisms.symmetric_matrix_mechanism` noises.
    """
    _check(radius, 1)
    return math.sqrt(2.0) * float(radius) ** 2
