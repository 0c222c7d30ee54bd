"""Private EM for full-covariance Gaussian mixtures (``method="em"``): a practical learner for
overlapping clusters, where the papers' separated-mixture learners need 1e4–1e7 rows.

**Reference.** M. Park, J. Foulds, K. Chaudhuri, M. Welling, "DP-EM: Differentially Private
Expectation Maximization", AISTATS 2017 (noisy sufficient statistics of each EM step under
zCDP / moments accounting). Our variant: bound-free private localisation first, a private (or
public-seeded) start, per-component whitening and clipping in every step, one joint release per
statistic, and a budget that grows towards the last step.

**Neighbours:** replace one row of ``X``; n is public. **Guarantee:** ρ-zCDP for ``ZCDP(ρ)``
(needs ≥ d+1 public rows or a prior: an unbounded domain cannot be localised under zCDP alone),
and (ε, δ)-DP for ``ApproxDP(ε, δ)``, δ > 0, with respect to the private rows, for **every**
public dataset and prior (public rows only set the frame and seed the start; they are free and
untrusted; a prior only sets CoinPress's box).

**Algorithm** (every radius, grid, iteration count and share is a function of n, d, k, the
budget and public rows; every frame after the first a function of releases):

1. *Localise and whiten.* With ≥ d+1 public rows: the public preconditioner's mean μ̂ and root
   A (free). Else, with a user's prior (:class:`EMPrior`: component means within R of c,
   component eigenvalues in [lo, hi]), CoinPress inside the ball (c, R) and the eigenvalue box
   [lo, hi + R²] releases a mean m₀ and covariance C₀ of the whole data with 10 % of the
   budget as ρ. Otherwise :func:`~privgauss.gaussian.histogram.histogram_gaussian` at
   (ε_L, δ/2) releases m₀ and C₀ (stability histograms, then CoinPress). The rows are mapped
   to z = W(x − m₀) (W = C₀^{-1/2} or A^{-1}) by
   :func:`~privgauss.clipped_stats.transform_rows` (a row that overflows is sent far: clipped).
   After the histogram route, a *re-whitening* release (the clipped mean and second moment of
   the z-rows, radius 3√d, 10 % of ρ_EM) gives a second frame: the histogram's covariance has
   little budget and was 0.5–10× off in variance on the synthetic benchmark. Not at small n,
   where its own noise would bend the frame more (:func:`_rewhiten_reach`; the public plan
   says which).
2. *Start.* A noisy histogram of the z-rows on a coarse grid (m cells per axis on p ≤ d
   public random orthonormal directions, m and p from the public plan, coordinates clamped
   into the box [−3, 3]^p): all cells' counts released jointly, Gaussian noise, L2
   sensitivity √2 (one row leaves one cell and joins another). The cell centres are lifted
   to the *standardised* frame u = G z (the columns x − m₀ divided by their released
   standard deviations, as a user's k-means on standardised columns); weighted k-means there
   (weights: the noisy counts above σ·√(2 ln C), C = m^p cells) gives k start centres, the
   least-inertia run of 10 k-means++ seedings (1 beside a summary start, below: a back-up
   there) and of the public seed (without one: a seeding more); with public rows, a k-means
   on the public rows is that seed and the public rows join the noisy cells with a total
   weight of 10 % of n — they seed the start, they do not dictate it. The *histogram
   start*: these centres, equal weights, each cluster's within-cell variance as an isotropic
   covariance in u. The same centres seed ``KMEANS_STEPS`` private Lloyd steps in u (hard
   assignments, y = clip_r(u − c_j); released: counts and sums, and with the last step the
   clusters' second moments): the *k-means start*, each cluster a Gaussian of its released
   covariance, as scikit-learn's. Where the EM steps' noise is quiet (the first step's noise
   alone moves a model by ≤ ``SUMMARY_NOISE`` = 0.1 nat/row, :func:`_noise_change`; public:
   at n = 5e4, ε = 1 every k at d ≤ 5 and some up to d = 9, at ε = 10 up to d = 12 and some
   to 15; where the noise is louder the over-parameterised run below takes over) the
   *summary start* replaces it: the same Lloyd steps and releases with K' ≤ 3k clusters,
   then a k-component mixture fitted to the K' released clusters by EM on the summary (11
   restarts, free;
   :func:`~privgauss.mixture.em_starts.summary_start`). At ε = 1e4 it found sklearn's basin on
   2 of 20 generated families the k-means start missed (0.168 and 0.064 nat/row below
   sklearn → ≤ 0.000; ``benchmarks/results/mixture_families.md``); where the steps are noisy
   their noise loses the basin it found (ε = 1, ungated: families 3, 4 and 1011 0.12–0.40
   nat/row worse, pixels 0.007 → 0.056). (In the whitened frame the pixels' low-variance
   colour directions are blown up 15-fold: k-means there, then EM, settled in a basin 0.059
   nat/row below sklearn's at every budget and seed; a histogram start built there was a decoy the
   run pick below took at 3 of 12 seeds, ε = 1 with 500 public rows.)
3. *T EM steps* (T = 8 + 4k within [10, 20] at a noisy budget, up to 60 as the noise allows:
   :func:`_n_steps`), one pass each
   (:func:`~privgauss.backends.reduce_rows`, a picklable kernel):
   responsibilities r_ij from the current released model; per component
   y_ij = clip_r(L_j^{-1}(z_i − μ_j)) (L_j the Cholesky factor of Σ_j), r = r_t ≥ √d +
   ¼√(2 ln n), the step's radius at which clipping's bias matches its noise
   (:func:`step_radius`: r₀ at ε = 1, growing like √(2 ln ρ), and at least ρ_m^(1/8) so
   that heavy tails stop being clipped as ρ → ∞); in an over-parameterised
   plan a refining step's (after the pick and the reduction) only ≥ √d (``REFINE_TAIL``:
   √d to r₀ at ε = 1, d = 10–15; a plan without k' keeps r₀, :func:`_tail`);
   *Trimming* (a wide plan's steps, :attr:`EMPlan.factored`: quiet budgets; ``TRIM_FACTOR``,
   :func:`_trim_radius`): a row farther than 3r_t from every component (each in its own
   frame) gets responsibility 0 — a gross error the growing radius would otherwise let bend
   a component, r_t² per clipped row (issue 27, edge sweep R6: 1 % of rows at 10⁶, an atom
   19 frame units and ~10⁶ of the clusters' own sds out; from ε ≈ 1e9 the clipped atom
   inflated a cluster's component along it until the fit left the clusters + background
   basin, 1.8 nat/row above scikit-learn, for an atom component + one on both clusters,
   0.64 below it at ε = 1e12, n = 3,000, where that component stuck beside the atom). A
   Gaussian component's own row lies beyond 3r_t with probability ≤ 1e-15 where plans are
   wide (r_t ≥ 2.8 at n = 2,000, d = 2; 1e-31 at d = 10): on clean rows nothing is
   trimmed; the trimmed rows are left to the clipped count and the background. Rows
   between r_t and 3r_t still pull a component by up to r_t a step, so EM still finds
   structure far from its components (at 2r_t, a fresh corpus table, rwm at ε = 1e4,
   lost its parked basin on one split of three: −5.33 → +2.03 nat/row; R6 is fixed from 2
   to 4 × r_t up to ε = 1e14, not at 6). 3r_t grows without bound with the budget (as ρ → ∞
   the steps are scikit-learn's). The responsibilities stay in the sub-simplex
   (Σ_j r_ij ≤ 1), where the sensitivities below hold. Not in other plans (ε = 1 at the
   benchmarks' shapes: unchanged bit for bit).
   Released jointly over the k components: N = (Σ_i r_ij)_j, S = (Σ_i r_ij y_ij)_j and
   M = (Σ_i r_ij y_ij y_ijᵀ)_j (upper triangles), each by the Gaussian mechanism.
   Update (post-processing): μ_j += L_j S_j/N_j (de-clipped, moved at most r),
   Σ_j = L_j C L_jᵀ, C = M_j/N_j − ȳȳᵀ de-clipped, its eigenvalues at most r² while the
   step's noise reach 2√d·s ≥ 0.4 (fading like (0.4/2√d·s)⁴ below: :func:`_declip_cap`;
   beyond r² most rows along a direction were clipped and de-clipping reads noise as
   variance — issue 27: a 5 % component's direction was sent to 1e4), then half a
   James–Stein shrinkage towards tr(C)/d·I (the previous shape, rescaled: in its own frame
   the previous estimate is I) for the known noise and its eigenvalues floored at
   min(0.4, 2√d·s)× their mean for the noise s on an entry (a direction shrinks at most as
   far as noise could fake per step: noise flattened a component and it died), and in the
   whitened frame at 1e-3·min(1, 2√d·s/0.4)⁴, at least 1e-8 (a wide plan's: see parked
   components below; :func:`_step_eig_floor`: the guard stands while noise could shrink a
   direction by 0.4 per step, and fades below; a component narrows onto a collinear pair
   or a discrete value as far as the noise allows).
   *Refining steps* (after the run pick, and after an over-parameterised run's reduction:
   once the components are the k returned) combine each component's releases over the
   steps instead (:func:`_combine`, :func:`_gain`; issue 27): the shape C − tr(C)/d·I and
   the mean move ȳ are weighed against the previous estimate by a Kalman gain
   (P + q)/(P + q + noise), P the previous estimate's error energy (each step's gain × its
   noise variance, carried into the next frame by the harmonic mean of the new variances),
   q = ``DRIFT_SHARE``·(innovation − noise − P)₊ the change EM itself makes (½ of the
   excess: one step's excess overstates it, fam5); the floors then use the
   combined noise √(gain)·s. A settled component's noisy releases are averaged (8
   pure-noise releases at d = 15 leave 0.07–0.17 of one release's noise variance; half
   James–Stein kept at least a quarter of every step's), a component EM moves follows its
   releases (q large: gain → 1). Exploring and
   over-parameterised steps keep half James–Stein (combining there changed which basin the
   pick and the reduction chose: generated family 26, 0.007 → 0.287). Measured
   (``benchmarks/results/em_small_shapes.md``, n = 5e4, ε = 1): issue 27's tuning families
   1081, 1087, 1091, 1113, 1117 × noise seeds 0–2, 8 → 7 wrong basins (1081 0.31 / 0.29 →
   0.05 / 0.05; 1087 and 1091 are wrong structures, not shapes, and stay wrong);
   fresh families 1120–1169 (held out, noise seed 0) 11 → 8 of 50, median 0.0067 → 0.0045;
   ε = 1e4 unchanged. Gains, caps and floors go to 1, ∞ and 0 as the noise vanishes, and
   the mean-move cap r_t grows, so as ρ → ∞ the steps are scikit-learn's. π_j ∝ N_j.
   A component whose noisy count is below the step's noise floor keeps its estimate; it is
   revived (before the last two steps) by splitting the alive one of largest w_j·λ_max(Σ_j)
   along its main axis only when it is dead (its count within 3 noise sds of 0, or under
   the last step's floor) or fading (under ``FADE_LEVEL`` = ½ of the floor and fallen from
   its previous count by more than 15 % and the counts' noise): splitting every component
   under an early step's floor split true 5 % components (issue 27: from scikit-learn's
   optimum, 0.19 below it), and so did fading at the whole floor — at d = 15 a true 5–8 %
   cluster (2,400–4,100 rows) sits under every step's floor (3,634 at k = 6) and its count
   dips 20–40 % when a neighbour's update takes rows; the split moved it and cut another
   true cluster in two (generated families 1124, 1126, 1161, 1169, 1087: ``em_small_clusters.md``).
   A dying component whose largest released count since its last revival cleared the floor
   is *restarted* instead, at its state in the model that count was measured under, at that
   count's weight (:func:`_restart`; not in a k′ run's steps, where components fade into a
   sibling on their cluster): an update had moved it off its rows (generated families 2578,
   2580: a right reduction lost at the first refining step; 0.51 / 0.32 → 0.025 / 0.063).
   *Held components' releases pooled* (refining steps; :func:`_pool_release`). A component
   held under the floor keeps its frame, so its consecutive releases measure the same clipped
   moments: they are averaged by precision (the steps' ρ, at one radius) before the
   de-clipping, and the average updates the component (as one release of the pooled noise,
   combined as above) once its count clears the floor scaled by the pooled noise
   √(ρ_t/Σρ). Such a component was otherwise shaped by the last step's release alone
   (2–4 nat/row on its rows at d = 15, ε = 1); averaging after the de-clipping (every release
   an update) did not help, the de-clipping and floors of releases of noise 0.7 per entry
   being biased. Nothing is pooled where no component is under a floor (the noise vanishing).
   So do a k′ run's untied steps after the pick and before the reduction (``POOL_OVERPARAM``,
   :func:`_pooling`; fampool): their floor (2523, k′ = 11, d = 15: 4,084 rows) is above a
   5–8 % cluster's rows (2,491 / 3,927), whose component otherwise reaches the reduction
   with the tied steps' pooled covariance (KL 6–8 from its cluster); pooled over the four
   untied k′ steps (√(1/4) of the floor) it gets its shape first. The pools are emptied at
   a tied step, a revival and the reduction (the components change). Generated families,
   ε = 1, noise seed 0: tuning block 2570–2629 7 → 4 wrong (2580 0.063 → 0.51: a small
   cluster lost in the last refining steps, after the revivals end); held out 3180–3299 ×
   noise seeds 0, 1: 19 → 16 of 240 (none newly wrong); pydataset tables: Aids2 worse
   (``em_small_clusters.md``, fampool).
   *Three runs, one pick.* The first ⌊T/3⌋ steps advance three starts (each at a third of the step's
   ρ; ⌊T/2⌋ in a plain plan whose first exploring step moves a model by at most ``OVER_NOISE``:
   :func:`_explore_longer`): the k-means start, the histogram start, and a *whitened-frame start*
   (the same cells' k-means in z, isotropic covariances). Which frame's k-means finds the clusters
   depends on the data: on standardised columns it avoids the pixels' decoy basin (0.059) and misses
   the rotated, unequally scaled clusters of ``benchmarks/em_scale.py``'s mixture (5 of 8 fits
   0.03–0.13 below scikit-learn at n = 1e6), and the whitened frame does the reverse; with all
   three, 2 of 12 there (seeds 0–11) and none of 84 fits over the six rows of
   ``benchmarks/private_em.py`` (24 or 12 seeds each) end above 0.05. Then one joint
   release of each run's capped regrets Σ_i max(log p_c(z_i) − max_c' log p_c'(z_i), −u)
   picks the run with the largest noisy score, and the remaining steps advance it alone.
   The cap u (``PICK_REGRET``, :meth:`EMPlan.regret_cap`) is the largest at which the pick's
   noise is ``REGRET_NOISE`` = 0.002 nat/row, at least ``REGRET_MIN`` = 1 nat: at n = 5e4,
   ε = 1 about 2 (d = 5–15), where the runs' clipped log-likelihood ratios to the frame's
   standard normal, Σ_i clip(log p(z_i) − log φ(z_i), ±(2d + 10)) — the pick before — had
   0.03–0.08 nat/row of noise, more than the runs differed by at the pick (0.002–0.02 on
   the fits it decided wrongly, whose runs went on to basins 0.1–0.6 apart). Where u would
   reach 2d + 10 that pick runs as before (ε = 1e4; as ρ grows u grows, towards the
   likelihood's argmax). No start is trusted blindly: a bad public sample or a bad k-means basin
   loses the pick. (``SUMMARY_ALT``, an experiment switch, off: beside a summary start, the
   whitened-frame run replaced by the summary EM's best *other* basin from 90 more seedings,
   :func:`~privgauss.mixture.em_starts.summary_gmm` — where only the whitened start found
   the right basin it loses it; ``mixture_families.md``, "Session 55".) *The cells'
   mixture* (``CELL_START``, :func:`_cell_start`; famlowd2): where the start grid sees every
   direction (d ≤ 5 at n = 5e4, ε = 1) the histogram start is a k-component mixture fitted
   to the released cells as Gaussian blobs by EM with 40 restarts
   (:func:`~privgauss.mixture.em_starts.cell_gmm_start`; post-processing: the plan, the
   ledger, the other two starts and every noise draw are unchanged). The k-means of a
   coarse grid's cells merges neighbouring clusters that a mixture with full covariances
   tells apart: at 7 of 18 misses of low-d generated families (n = 5e4, ε = 1) all three
   plain starts led scikit-learn's EM (300 steps) to a basin 0.10–0.38 nat/row below its
   best, the cells' mixture to its best at 5 of the 7; held out (family seeds 7280–7519,
   noise seeds 0 and 1) 11 → 6 wrong of the 138 fits it changes, none newly wrong
   (``benchmarks/results/em_small_clusters.md``, famlowd2). ``CELL_GATE_SLACK`` = 1 (famd6)
   opens it where the grid misses one direction (d = 6 at n = 5e4, ε = 1: a 5-dimensional
   random projection; the cells' blobs have the frame's unit variance along the unseen
   direction): on fresh d = 6 families (seeds 8380–9179 of the low-d set, noise seeds 0
   and 1) 19 → 11 wrong of 340 fits, 1 newly wrong (the pick took a run that had lost its
   basin). The start grid has at most 12 cells per axis, 24 (``GRID_FINE_CELLS``; famall)
   where it has at most 2 directions and room for them (n ≥ 2e4 at d = 2, ε = 1): a 5 %
   cluster 0.21 from a 41 % one in the whitened frame shared a 12-per-axis cell and every
   start merged them; held out (family seeds 9740–10459 and 7280–7519 with d = 2, noise
   seeds 0 and 1) 4 → 3 wrong of 136 fits, 1 newly wrong (a noisy pick: the run in the right
   basin scored lower at the pick), famlowd2's d = 2 misses 4 → 0 of 14. *Passes:* an
   exploring step
   computes all runs' statistics in one pass (released run by run). With the rows in memory the
   pick's step takes two: the runs' scores alone (frames and densities, no statistics), the
   pick released, then the winner's statistics (six runs' scores and one run's step: ~16 ms
   where one pass of six runs' statistics took ~27 at n = 5e4, d = 10, k = 3); with streamed
   rows the scores share one pass with every run's statistics (the pick is released first, then
   the winner's; the losers' are dropped unreleased), so as not to read the rows twice. Either
   way the same numbers bit for bit (each model's sums are independent of the others'):
   T or T + 1 passes in all.
   *Wide exploration where quiet* (issue 27: scikit-learn's ``n_init``; :func:`_wide_plan`).
   Where even ``WIDE_STARTS`` = 6 runs' first exploring step's noise alone moves a model by
   at most ``WIDE_NOISE`` = 1e-3 nat/row (public; ε = 1e4 on 34 of the 39 fresh corpus
   tables — not on the five with d = 7–10 and 1,900–2,700 training rows — and at n = 5e4,
   d = 10, k = 3; never at ε = 1 there, where it is 0.06–170), the plan explores with 6
   runs over the first ``WIDE_EXPLORE`` = 2/3 of T = ``WIDE_STEPS`` = 150 steps (where the
   default schedule has its ``MAX_STEPS`` and 150 are still that quiet and keep its
   stopping rule; else of the default T). The three starts above are joined by the
   same cells' k-means in the released frame's raw coordinates x − m₀ = W⁻¹z (the frame a
   user's scikit-learn clusters in; least inertia of 2 seedings) and single k-means++
   seedings in the whitened and raw frames, each cluster's covariance that of its cells
   (:func:`~privgauss.mixture.em_starts.frame_starts`, post-processing). Everything else is
   as above: one pass per step for all runs, each run's step at 1/6 of the step's ρ, the run
   pick a joint release of 6 scores (sensitivity 2b√6, or u√6 for capped regrets). An
   exploring run whose released changes meet the stopping rule at ``FREEZE_TOL`` = 1e-3
   (scikit-learn's ``tol``) is *frozen* — its later exploring steps are skipped — and once
   every run is frozen the pick's step runs next (``EMPlan.freeze``: only where a step's
   noise is at most ``STOP_NOISE`` × ``FREEZE_TOL``; the ledger then misses those steps, a
   function of released models, as with the stop below; ``info["em_frozen"]``; with
   ``STOP_NOISE`` = 2 every wide plan: its gate ``WIDE_NOISE`` = 1e-3 is below 2 ×
   ``FREEZE_TOL``). So is a run whose model comes within ``MERGE_TOL`` = 5e-2 of another
   run's (both directions of :func:`_model_change`'s KL bound, components matched by their means:
   :func:`_runs_within`) — at its start or after any exploring step; of a close pair the run
   with the larger index waits, the other carries on (issue 27: n = 5e4, d = 10, k = 3 at
   ε = 1e4, the two raw-frame starts were within 1e-3 at the start on 2 of 8 data seeds,
   and exploring runs reached another's basin before their own stopping rule;
   ``info["em_frozen"]`` then has (run, 0) for a start). At 1e-2 rather than 1e-3 (speed7)
   the runs that approach one basin together wait sooner: at that shape, data seeds 0–10,
   6–30 fewer of a fit's 100–154 run-steps (models summed over its passes; data seed 2's fit
   −15 % CPU), every held-out gap within 7e-5 nat/row; the corpus at ε = 1e4 none worse
   by more than 0.0015 (immi3 7 nat/row better), generated families 0–19 and 1330–1359 the
   same to 4 decimals but one (+1e-4; ``benchmarks/results/em_speed.md``). At 5e-2 (speed10)
   runs that travel towards one basin side by side (0.02–0.09 apart for 10–15 steps at that
   shape, the raw-frame starts' two k-means among them) wait sooner again: data seeds 0–7,
   6–27 fewer run-steps a fit, every held-out gap within 7e-5 nat/row (section speed10 of
   ``em_speed.md``). A start whose components coincide — within what a step's noise moves a
   model by (:func:`_noise_change`), both directions of the KL between each component and the
   first (:func:`_collapsed`): the summary start where its EM on the K' clusters collapsed
   (data seeds 0–2 of that shape, components within 1e-9) — waits from its start too: equal
   components are a fixed point of EM, which only the noise would break (such runs froze
   after 3 steps with a score of the frame's single Gaussian). It bounds the
   time where
   the runs converge fast (n = 5e4, d = 10, k = 3: 1.6–1.7× the three-run plan's CPU time,
   ``benchmarks/results/em_starts.md``); on the corpus' small tables, where the steps are
   mostly too noisy for it, a fit takes up to 2.6 s instead of 0.2–0.6 s (rwm5yr,
   19,609 × 15: 6.1 s).
   Why (diagnosed on Males and Benefits at ε = 1e4, seed 0, the two tables this was tuned
   on): the three-run fit sat at a fixed point of EM (scikit-learn from it moves < 0.001
   nat/row), not in noise. On Males (0.109 nat/row below scikit-learn's best of 5 held
   out) scikit-learn's k-means on the raw columns starts every one of 10 seedings in a basin
   2.3 nat/row higher that EM reaches after 60–100 steps (its default ``tol`` stops it at
   53 steps on the way: that is its best of 5), the summary start's run after ~200; on
   Benefits (0.053 below held out, 0.005 *above* on the training rows) 2 of 10 k-means++
   seedings in the whitened frame reach a basin 0.12 nat/row higher after 90–120 steps,
   still below the others at step 60. A pick after 20 steps, or among three starts, took
   neither; the wide plan takes both (held out: −3.03 and −0.15, i.e. above scikit-learn).
   *Parked components in a wide plan* (issue 27: Aids2, Chile; :attr:`EMPlan.factored`,
   post-processing only — the releases, their sensitivities and the ledger are the same).
   A component on a column's atom (scikit-learn's basin on Aids2 and Chile: weight 0.38 /
   0.48) needs a whitened-frame eigenvalue of 2.5e-12 / 1e-16 to match scikit-learn's
   ``reg_covar`` = 1e-6 in the data's units; the floor below stopped it at
   ``NUMERIC_FLOOR`` = 1e-8 (1.54 / 4.2 nat/row below scikit-learn's best of 5), and float64
   cannot hold 1e-16 in a rotated O(1) matrix (a lower floor made a Cholesky fail after
   spending). In a wide plan (quiet; at ε = 1 only from n ≈ 3e5 at d = 2 to 1e7 at d = 15,
   never at the benchmarks' shapes) each run's covariances are therefore carried by their
   Cholesky factors from step to step (:func:`_factor_update`: L_new from L_j·chol(C), the
   floor applied to its singular values; the kernel's terms, :func:`_model_change` and the
   final pick's score read the factors), and the whitened-frame floor fades like
   (f/0.4)^``FACTOR_POWER`` = 16 down to ``FACTOR_FLOOR`` = 1e-20, no ridge (scale-free):
   a component parks as thin as the rows say. The output is formed in the data's units from
   the factor with each component's correlation matrix's eigenvalues at least
   ``CORR_FLOOR`` = 1e-14 × its largest (:func:`_data_covariance`: symmetric positive
   definite for the user's Cholesky; a parked column's variance is not touched). ε = 1e4,
   the 39 fresh corpus tables (``benchmarks/results/em_parked.md``): Aids2 1.54 → −3.59,
   Chile 4.2 → −2.15, Treatment 2.09 → 0.94 (held out, still outside), no table newly
   outside 0.02, time per fit ×1.02; the other parked tables (and several discrete ones)
   now beat scikit-learn's regularised optimum by more (2–40 nat/row, was 0.3–15: the
   likelihood on an atom is unbounded). The model goes back to the data's units by the
   exact inverse of the rows' map z = W(x − m₀), solved in the frame's standardised columns
   (:func:`_back_map`), not through the frame's W⁻¹: that one is W⁻¹ only to float64's
   resolution of the widest column (mhtdata, sds 1.5e-2 to 7.7e7: W·W⁻¹ − I = 4e-10), and
   a mean parked on the atom 1.0 to 1e-9 came out 1.00000001, 17 of its sds off its rows
   (issue 27, ε = 1e12; −4.39 → −10.72 nat/row to scikit-learn). The clipped count (5.)
   reads the EM fit's factors too: it counts the rows the returned model leaves out.
   *Stopping* (plan = the full schedule of T steps). After the pick, each step's change
   Δ_t between consecutive released models (:func:`_model_change`: Σ_j w_j KL(N_j ‖ N'_j) +
   KL(w ‖ w'), a bound on the mixtures' KL per row; scikit-learn stops at a log-likelihood
   change of 1e-3) is extrapolated geometrically from the last three (:func:`_converged`);
   when the change still to come is at most ``STOP_TOL`` = 3e-5 nat/row, the remaining
   planned steps but the last are skipped and the last (half of the steps' ρ, the largest
   radius) runs next. The rule reads released models only (post-processing), so the stop, the
   shorter ledger (the plan's parts in order, the skipped steps missing) and the budget left
   unspent are DP outputs. It is enabled (public, ``EMPlan.stop_from``) only where one step's
   noise alone moves the model by at most ``STOP_NOISE`` × ``STOP_TOL``
   (:func:`_noise_change`), i.e. the change measures EM's progress, not the noise (noise
   only inflates the released change, so it delays a stop): at n = 5e4, d = 10, k = 3 from
   ε ≈ 300 on, never at ε = 1 (a step's noise there is 0.08).

   *Over-parameterised run* (issue 27; ``OVERPARAM``, :func:`_over_components`). Where the
   first exploring step's noise alone moves a k-model by more than ``OVER_NOISE`` = 0.1
   nat/row (public; n = 5e4, ε = 1: the generated families that landed in wrong basins), the
   starts, the exploring runs, the pick and the EM steps up to ``reduce_at`` = T −
   ``REDUCE_STEPS`` (8) fit k' > k components: the most up to 2k whose last step's noise
   would move a k'-model by at most ``OVER_CAP`` = 0.1 nat/row and that meet
   :func:`em_requirements` at k'. Over-parameterised EM puts a component in every true
   cluster more often (Dwivedi et al. 2020; Xu, Hsu, Maleki, NeurIPS 2018). Before step
   ``reduce_at`` the released k'-model is reduced to k components by EM on its components
   as Gaussian blobs (:func:`~privgauss.mixture.em_starts.reduce_run`, restarts; free), and
   the last 8 steps (1 − ``OVER_SHARE`` = 75 % of the steps' ρ, half of that on the last)
   refine it with k components — 5 (``LOUD_REDUCE_STEPS``) where a refining step's noise alone
   would move a k-model by more than ``LOUD_REFINE`` = 0.03 nat/row (:func:`_refine_noise`;
   public) and the user gave no public rows: there the refining steps before the last are
   noise-dominated (session 53, family 13683, k = 6, d = 15: its 5 % clusters' KL stayed
   1.4–1.6 over steps 13–19 and fell to 0.6 only at the last, while scikit-learn from the free
   reduction reached its optimum in one step), so fewer get more ρ each and the k' run three
   more steps. ε = 1, n = 5e4: over-parameterised plans at d = 12–15 (72 families of
   12844–13519, tuned on; 4 / 6 refining steps about as 5, 3 worse) 16 → 8 wrong of 144; held
   out, fresh 13520–13759, every plan, noise seeds 0 and 1: 24 → 16 of 480; ε = 3: no plan that
   loud. Real tables (``real_mixtures.py``, 6 splits, median gaps to scikit-learn): loud plans
   better without public rows (vietnam_health 3.8 → 0.9, randhie 3.1 → 2.7, doctor_contacts
   0.87 → 0.69, tuna −0.25 → −0.30), mixed with 1 % public rows (vietnam_health 4.3 → 1.1;
   tuna, randhie, doctor_contacts 0.2–0.5 worse; the fresh corpus' Ketchup, SumHes, Wages,
   Aids2 0.1–0.23 worse), so plans with public rows keep 8 (``LOUD_PUBLIC``); the quiet plans
   (bundesliga, wavesurge, health_insurance, low-d families) were mixed and keep 8. Each step's
   releases cost what they would with k (the k components cost what one does), so the plan
   names the same parts.
   *Tied steps* (``OVER_TIED``; ``EMPlan.tied_until``). The k' run needs the structure —
   where the mass is — not each component's shape, and k' full covariances are noisy (each
   divided by its own N_j; a k'-fit ended 0.2–0.9 nat/row below sklearn). Its exploring
   steps and the first ``TIED_AFTER_PICK`` (2) after the run pick fit one pooled (tied)
   covariance: all components share Σ (a start's covariances are replaced by their
   weighted mean, free), the rows are clipped in its one frame around each μ_j, and the
   step releases N, S and the pooled second moment Σ_j M_j (one matrix, the same
   sensitivity; ``TIED_SHARES`` of the step's ρ), whose noise is divided by n
   (:func:`_tied_update`). The k' steps after them are full again: on clusters that differ
   in shape (the synthetic set) a run tied to the reduction ended 0.6 nat/row below sklearn
   there and its 8 refining steps did not recover (4 of 6 noise seeds wrong). Measured
   (``benchmarks/results/mixture_families.md``, "Tied k' steps"): the gated tuning families,
   noise seeds 0–7, 11 wrong basins of 96 (full k' steps: 30); the synthetic set 0 of 6;
   ``benchmarks/em_scale.py``'s rotated, unequally scaled mixture is worse (median gap 0.157
   → 0.208 over 12 fits; both fail it, 11 and 12 of 12; full k' steps at this share: 0.256,
   tied at ``OVER_SHARE`` 0.4 / 0.5: 0.217 / 0.262).

**Sensitivities** (:mod:`privgauss.sensitivity`; responsibilities lie in the simplex — a
trimmed row's all 0: the sub-simplex Σ_j r_ij ≤ 1, where the same bounds hold — and each
y_ij is a clipped function of row i and released values only). Replacing row i changes N by
r − r' (‖·‖₂ ≤ √2: :func:`~privgauss.sensitivity.soft_counts_l2`), S_j by r_j y_j − r'_j y'_j
(Σ_j r²(r_j + r'_j)² ≤ 4r²: 2r, :func:`~privgauss.sensitivity.soft_sums_l2`), M_j by
r_j P − r'_j P' with P, P' PSD of norm ≤ r² (Σ_j (r_j² + r'_j²) r⁴ ≤ 2r⁴: √2·r²,
:func:`~privgauss.sensitivity.soft_outer_sums_frobenius`). The k components cost what one does.
The three are released together and charged once (``JOINT_STATS``;
:func:`~privgauss.mechanisms.soft_statistics_mechanism`): their worst neighbours exclude one
another — the counts' is a row moving between components, the sums' and moments' one staying
in its component — so their joint cost (:func:`~privgauss.sensitivity.soft_statistics_zcdp`)
at the standard shares is 0.85 of the three charges' sum, and :meth:`EMPlan.stat_rhos` scales
each block's noise-equivalent ρ by the step's ρ over that cost.
A tied step's pooled Σ_j M_j moves by A − A', A = Σ_j r_j P_j and A' convex combinations of
PSD matrices of norm ≤ r², so ‖A − A'‖²_F ≤ ‖A‖² + ‖A'‖² ≤ 2r⁴: √2·r² again.
The Lloyd steps' hard assignments and the re-whitening's single component of responsibility 1
are vertices of the simplex: the same bounds. The run scores: each of the C sums moves by at
most 2b, 2b√C (:func:`~privgauss.sensitivity.score_sums_l2`); the capped regrets, each term
in [−u, 0], by at most u, u√C (:func:`~privgauss.sensitivity.regret_sums_l2`).

**Budget plan** (:func:`em_plan`, data; its parts compose to exactly the total). (ε, δ) without
public rows or prior: localisation (ε_L, δ/2), ε_L the larger of 2·(what per-axis Laplace
histograms would need at this n) within [0.2ε, 0.5ε] (the share every large-n plan was tuned
with) and the least ε at which the route the fit runs — the joint Gaussian histograms and
their CoinPress refinement — keeps its margins (:func:`_localises`: the histograms within
their cap, the refinement's planned covariance error ≤ ``LOC_MAX_ERROR`` = 1), at most
``LOC_SHARE_SMALL`` = 0.8ε (issue 27: at ε = 1 the refined route keeps its margins there
from n ≈ 1,700 / 2,700 / 3,800 / 7,600 at d = 3 / 5 / 7 / 13, where the per-axis sizing
asked 6,800 / 11,700 / 16,800 / 32,000) — but where it needs more than ``DIAG_FROM`` =
``LOC_SHARE_MAX`` = 0.5ε (n below ≈ 2,600 / 4,100 / 5,800 at d = 3 / 5 / 7) the *diagonal
frame* runs instead (``DIAGONAL_FRAME``, :func:`_diagonal_frame`): the joint histograms
alone at their need (the whole (ε, δ/2) their reference; within their cap from n ≈ 1,210 /
1,580 / 1,890 / 2,610 at d = 3 / 5 / 7 / 13, the requirement's "histogram localisation"
term — beyond it em refuses), the released per-axis centres and scales as the frame, no
CoinPress refinement, and re-whitening only where its reach allows (as always); a reserve
of ``DIAG_TIE_SHARE`` + ``DIAG_WIDE_SHARE`` of the ρ they leave for their octave releases,
whose unspent part the last EM step spends; EM gets the rest (ε = 1, d = 5: ρ_EM 0.0120 at
n = 2,000, 0.0171 with the reserve unspent, where the refined route left 0.0093 at its own
threshold n = 2,664; ``benchmarks/results/em_small_n.md``). The rest is the largest ρ_EM
that fits the accountant (zCDP charges compose, then convert with the δ left). With public
rows: ρ_EM = everything (an (ε, δ) budget as its largest ρ). With a
prior: 10 % of that ρ localises, ρ_EM = the rest. ρ_EM: 10 % re-whitening (histogram route
only, and only where its noise reach is at most ``REWHITEN_REACH``: :func:`_rewhiten_reach`;
else its share goes to the EM steps; 20 % sums, 80 % moments), 10 % start histogram, 10 %
k-means (40 % on the second moments, the rest evenly over the Lloyd steps, each 20 % counts,
80 % sums; a step's blocks, the last one's with the moments, released together at their joint
cost, as the EM steps'), 5 % the run pick, 3 % the final pick, 1 % the clipped count, 1 % the atom
counts; of the rest, half on the last EM step, the other half evenly on the T − 1 earlier
ones (split between the runs while they explore); within a step the noise of 10 % counts,
30 % sums, 60 % second moments, each scaled up by 1/0.85 (their joint cost: above).
Over-parameterised: ``OVER_SHARE`` (25 %) of the steps' ρ evenly on the T − R k' steps, the
rest on the R = 8 (loud: 5) refining steps (half of it on the last); a tied step splits its ρ
``TIED_SHARES``, the last step by :func:`_output_shares` (the split that minimises its
noise's cost to the returned model: d = 13–15 about 2 % counts, 16 % sums, 82 % moments).
Its start is lean (``LEAN_START``; :func:`_base_plan`'s ``lean``): the start histogram,
k-means start and re-whitening take 5 % of ρ_EM each and the run pick 2.5 % (``LEAN_*``),
the rest going to the EM steps (their share of ρ_EM 0.60 → 0.775), in the plans
that are over-parameterised with the standard shares (the same k' plans). What those fits
lose at n = 5e4, ε = 1 is the refining releases' noise on the small clusters' shapes
(famnext: 14 of 24 misses had the right structure; exact last releases halve their gaps),
not the start; the k' run and its reduction find the structure with half the start's ρ.
Generated families never tuned on (blocks 6200–6679, 3060–3179, 3300–3419 × noise seeds
0, 1; ``mixture_families.md``, session 47): 64 → 45 of 1,440 wrong, the median gap lower in
every block (e.g. 0.0042 → 0.0032); pydataset tables with k' plans at ε = 1: 5 of 6 four-seed
medians better, but the smallest (SumHes, Wages: 2,600–3,300 rows) about 0.05 nat/row worse
over 16 seeds. Plain, wide and ε = 1e4 plans keep the standard shares.

4. *Final pick* (:mod:`.em_final`). Candidates: the EM fit, the frame's standard normal (the
   released Gaussian the rows were whitened by: free) and, with ≥ max(d + 1, k) public rows,
   scikit-learn's mixture of the public rows alone (free), all projected into a prior when
   there is one. One joint release of their clipped log-likelihood ratios to the EM fit
   (clip d + 5, 3 % of ρ_EM taken from the EM steps, "final selection") picks the
   largest; the single Gaussian (a simpler model than asked for) must beat the EM fit by 2
   noise sds of a difference (in the diagonal frame, where the single Gaussian is the EM
   fit's moment match and the clip ``DIAG_BOUND`` = 2, less where the plan predicts a noise
   cost above ``NOISE_COST_ALARM``: :func:`~.em_final.pick_margin`), the public rows'
   fit (a k-component mixture too) need not. So
   the result is never worse than one Gaussian, or the public rows' own fit, but by the pick's
   noise (``info["final_selection"]``; the estimator's ``selected_model_``).
5. *Clipped count.* The final pick's pass also counts the rows outside every component's
   final ball of each candidate (in each component's frame; radius the larger of the last
   step's and the one a Gaussian row exceeds with probability 1 %; a wide plan's EM fit by
   its factors, as it is returned: at ε = 1e12 movies' three components parked to 1e-10
   along genre columns left 2 rows 1e9 sds from all of them, which the covariances read at
   ``EIG_FLOOR`` held inside — background 0, −1.8e18 nat each); the winner's count is
   released with discrete Gaussian noise, sensitivity 1 (1 % of ρ_EM, "clipped count"): the
   estimator's ``clipped_fraction_``, ``ClippedDataWarning`` and background weight.
6. *Atom counts* (:mod:`.atoms`; issue 27). One more pass bins each column of the rows on a
   fine grid of the released frame (cells 10⁻³ of the column's released sd wide, from m₀)
   and releases every column's heaviest cell count jointly, Gaussian noise of L2 sensitivity
   √d (1 % of ρ_EM, "atom counts"; ``info["atom_counts"]``): a point mass (many rows at one
   value) falls in one cell, continuous rows spread thinly. With the released fit it tells
   what a non-private mixture parked on that value would gain
   (:func:`~privgauss.mixture.atoms.atom_gain`: the estimator's ``DiscreteDataWarning``).

**Failure (⊥).** Only the localisation can fail (``EstimationFailed`` from the histograms
or their octave releases, or the refinement's check,
the budget spent so far stays spent; its message names the n it needs). Everything after it is
post-processing that always returns a model: a component whose noisy count is too small keeps
its previous estimate (or is revived by a split). No other exception on private data; the
estimator's warnings are functions of DP outputs: ``ClippedDataWarning`` of the clipped count,
``SimplerModelWarning`` of the final pick, ``DiscreteDataWarning`` of the EM fit's covariances
in the released frame (``info["final_selection"]["em_thinnest_variance"]``) or of the atom
counts with the released fit.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections import deque
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

import numpy as np

from ..backends import as_rows, is_dask, public_rows, reduce_rows
from ..clipped_stats import transform_rows
from ..exceptions import InvalidDataError, PrivacyBudgetError
from ..linalg import clip_weights, sym
from ..mechanisms import (
    Release,
    gaussian_mechanism,
    soft_statistics_mechanism,
    symmetric_matrix_mechanism,
)
from ..privacy import ZCDP, ApproxDP, Budget, approx_to_zcdp, has_delta, zcdp_of
from ..privacy.budgets import MIN_EPS as _MIN_EPS
from ..sensitivity import (
    histogram_l2,
    soft_counts_l2,
    soft_outer_sums_frobenius,
    soft_statistics_zcdp,
    soft_sums_l2,
)
from .atoms import ATOM_SHARE, release_atom_counts
from .cluster_estimation import undo_clipping, undo_clipping_batch
from .em_final import (
    MARGIN,
    final_bound,
    final_pick,
    moment_gaussian,
    pick_margin,
    public_candidate,
    single_gaussian,
)
from .em_starts import (
    EIG_FLOOR,
    Run,
    histogram_start,
    kmeans_steps,
    pick_run,
    reduce_run,
    repair_covariance,
    standardiser,
    summary_start,
)
from .sample_size import Requirements, report

__all__ = ["EMPlan", "EMPrior", "clip_radius", "em_plan", "em_requirements", "private_em_gmm"]

LOC_SHARE_MIN, LOC_SHARE_MAX = 0.2, 0.5  # of ε, for the histogram localisation
LOC_SHARE_SMALL = 0.8  # of ε: ε_L's cap where the localisation needs more than LOC_SHARE_MAX
LOC_MAX_ERROR = 1.0  # at ε_L the localisation's refinement's planned covariance error ≤ this
DIAGONAL_FRAME = True  # below that n: the histograms' diagonal frame, no refinement (False: refuse)
DIAG_FROM = LOC_SHARE_MAX  # ... and where the refined route needs more than this × ε
DIAG_TIE_SHARE = 0.20  # ... its octave release of tied axes: this share of the ρ the histograms
DIAG_WIDE_SHARE = 0.10  # leave, and of wide axes this (the reserve's unspent part: last EM step)
INIT_SHARE = 0.10  # of ρ_EM, the start histogram
REWHITEN_SHARE = 0.10  # of ρ_EM, the re-whitening after a histogram localisation
REWHITEN_SUM_SHARE = 0.2  # of that, the clipped mean (the rest: the second moment)
REWHITEN_REACH = 1.0  # ... planned only where its second moment's noise reach is at most this
KMEANS_SHARE = 0.10  # of ρ_EM, the start's private k-means (Lloyd) steps
KMEANS_STEPS = 5  # private Lloyd steps after the start histogram
KMEANS_MOMENT_SHARE = 0.4  # of the k-means ρ, the clusters' second moments (last step)
KMEANS_STAT_SHARES = (0.2, 0.8)  # counts, sums within a Lloyd step
OVERCLUSTER = 3  # the summary start's Lloyd steps run with up to this × k clusters
SUMMARY_NOISE = 0.1  # the summary start only where a step's noise moves a model at most this
EXPLORE_DIV = 3  # the exploring runs last T // EXPLORE_DIV steps before the run pick
PLAIN_EXPLORE_DIV = 2  # ... T // this in a quiet plain three-run plan (_explore_longer)
PLAIN_EXTRA_STEPS = 0  # ... which gets this many more steps (an experiment switch: 8 measured)
N_STARTS = 3  # EM runs from the k-means, histogram and whitened-frame starts, then a DP pick
CELL_START = 40  # > 0: a plain full-grid plan's histogram start is the cells' mixture, this many
# k-means++ restarts (_cell_start; famlowd2; 0: the k-means histogram start, as before)
CELL_GATE_SLACK = 1  # ... also where the start grid misses at most this many directions (famd6;
# 0: only a grid that sees every direction, as before)
GRID_CELLS = 12  # the start grid's most cells per axis (_grid)
GRID_FINE_CELLS = 24  # > 0: ... this many instead where the grid has at most 2 directions (famall:
# a 5 % cluster 0.2 from a 41 % one in the whitened frame shared its cell at 12; 0: as before)
GRID_MAX_DIMS = 7  # the start grid's most directions: past 6 (the room rule's cap) only where
# that many reach d (a grid of every direction, no random projection; instflag: 6 before)
GRID_MAX_CELLS = 12 ** 6  # ... with at most this many cells (m lowered until m^p fits)
SCORE_SHARE = 0.05  # of ρ_EM, the noisy log-likelihoods that pick one of the runs
PICK_REGRET = True  # the pick sums each row's regret to the runs' best model, capped (regret_cap)
REGRET_NOISE = 0.002  # nat/row: the cap is the largest at which the pick's noise is this
REGRET_MIN = 1.0  # ... and at least this (nat)
LAST_SHARE = 0.5  # of the EM steps' ρ, on the last step
CLIP_TAIL = 0.25  # r₀ = √d + this × √(2 ln n): the least clipping radius of an EM step
REFINE_TAIL = 0.0  # ... of a refining step (after the pick and the reduction): √d at 0
#: every step's radius is at least ρ_m^FREE_RADIUS_POWER (ρ_m its second moments' zCDP): as
#: ρ → ∞ it grows past any row, whatever the data's tails (:func:`step_radius`)
FREE_RADIUS_POWER = 0.125
STAT_SHARES = (0.1, 0.3, 0.6)  # counts, sums, second moments within a step
JOINT_STATS = True  # a step's three releases charged at their joint cost (False: composed)
OUTPUT_SHARES = True  # an over-parameterised plan's last step splits its ρ by _output_shares
STEP_FLOOR = 0.4  # per step, no direction of a component shrinks below this × the mean (at most)
SUMMARY_ALT = 0  # > 0: this run is the summary's best other basin (an experiment switch)
FRESH_RELATIVE = True  # a fresh estimate's shape error: the release's noise relative to its scale
# (_combine; False: the absolute noise, as before session 55)
FLOOR_POWER = 4  # the whitened-frame eigenvalue floor fades like (noise reach / STEP_FLOOR)^this
NUMERIC_FLOOR = 1e-8  # the smallest eigenvalue of a released covariance (whitened frame)
NOISE_TOL = 0.01  # an early EM step's covariance noise per row of a component: the full grid's ramp
STEP_TOL = 0.07  # ... below which T grows past the noisy default, up to MAX_STEPS
MAX_STEPS = 60  # EM steps when the budget makes every step's noise negligible
T_FULL_GRID = 10  # the fewest EM steps when the start's grid sees every direction
STOP_TOL = 3e-5  # the change still to come (KL per row) below which EM jumps to its last step
STOP_RATE = 0.9  # the largest per-step decay of the released changes the stop extrapolates
STOP_NOISE = 2.0  # a stop needs the step's noise to move the model by at most this × STOP_TOL
NOISE_FREEZE = 0.0  # > 0: the freeze reads each change less this × its step's noise (_excess)
FREEZE_PLAIN = True  # a three-run plan's runs freeze and merge too where a wide plan's would
# (midspeed, session 52; False: only wide plans, as before)
STOP_SPAN = 10  # > 0: where a step's noise shuts the stop, a stop from the change over this many
# refining steps less twice a step's noise (_span_stop; midspeed, session 52; 0: as before)
DEAD_SIGMAS = 3.0  # a component whose released count is within this many sds of 0 is dead
# ... True: in two steps running (an experiment switch, off: it fixed held-out families 1454,
# 1494 and 1495 but lost 1384 and four of eight corpus tables' medians at ε = 1 — famstart in
# benchmarks/results/em_small_clusters.md)
DEAD_CONFIRM = False
FADE = 0.85  # under the floor and below this × the previous count: fading, revived
FADE_LEVEL = 0.5  # ... and under this × the step's release floor
REVIVE_RESTART = True  # revived at its state where its count peaked (_restart; False: split)
DRIFT_SHARE = 0.5  # of an innovation's energy beyond noise and prior read as EM's move (_gain)
POOL_HELD = True  # refining steps pool a held component's releases (False: an experiment switch)
POOL_OVERPARAM = True  # so do a k' run's untied steps before the reduction (_pooling; fampool)
MEAN_CAP = True  # a step moves a mean at most its clipping radius (False: an experiment switch)
TRIM_FACTOR = 3.0  # a wide plan's step trims rows beyond this × r_t from every component (0: never)
COUNT_SHARE = 0.01  # of ρ_EM, the count of rows outside every component's final ball
FINAL_SHARE = 0.03  # of ρ_EM (taken from the EM steps), the final pick among the candidates
CANDIDATES = ("em", "single_gaussian", "public")  # the final pick's candidates, in this order
NOISE_COST_ALARM = 0.05  # nat/row the last step's noise may cost before the estimator warns
COUNT_TAIL = 0.01  # a Gaussian component's own rows outside its counting ball (at most)
PRIOR_LOC_SHARE = 0.1  # of the whole ρ, for the CoinPress localisation inside a user's prior
OVERPARAM = 2.0  # the over-parameterised run fits ⌈this × k⌉ components (≤ 1: never)
OVER_NOISE = 0.1  # ... where an exploring step's noise moves a k-model by more than this
OVER_CAP = 0.1  # and fewer where a k'-model's last step's noise would move it by more than this
REDUCE_STEPS = 8  # its last this many steps run with k components, from the free reduction
LOUD_REDUCE_STEPS = 5  # ... this many where a refining step's noise is loud (0: never)
LOUD_REFINE = 0.03  # loud: it moves a k-model by more than this (_refine_noise)
LOUD_PUBLIC = False  # ... also with public rows (False: those plans keep REDUCE_STEPS)
OVER_SHARE = 0.25  # of the EM steps' ρ, on the k'-component steps (the rest: the last ones)
LEAN_START = True  # an over-parameterised plan's start, re-whitening and run pick at these
LEAN_INIT, LEAN_KMEANS, LEAN_REWHITEN, LEAN_SCORE = 0.05, 0.05, 0.05, 0.025  # of ρ_EM
OVER_TIED = True  # the k'-component steps fit one pooled (tied) covariance, released once
TIED_SHARES = (0.1, 0.3, 0.6)  # counts, sums, pooled second moment within a tied step
UNTIED_LAST = 1  # the last this many k'-component steps release full covariances again
TIED_AFTER_PICK = 2  # the tied steps end at most this many steps after the run pick
WIDE_STARTS = 6  # exploring runs where the steps are quiet (issue 27: sklearn's n_init)
WIDE_EXPLORE = 2.0 / 3.0  # ... and the share of the T steps they explore before the pick
WIDE_STEPS = 150  # EM steps of a wide plan where the budget gives the default MAX_STEPS
FREEZE_TOL = 1e-3  # an exploring run stops when its change still to come is at most this
MERGE_TOL = 5e-2  # ... or when its model is within this of another run's (KL bound per row)
WIDE_NOISE = 1e-3  # quiet: a wide plan's exploring step's noise moves a model ≤ this
FACTOR_POWER = 16  # a wide plan's whitened-frame floor fades like (noise reach / STEP_FLOOR)^this
FACTOR_FLOOR = 1e-20  # ... to at least this (whitened frame), carried by Cholesky factors
CORR_FLOOR = 1e-14  # a wide plan's output: each correlation matrix's eigenvalues ≥ this × its top

Model = tuple[np.ndarray, np.ndarray, np.ndarray]  # (means, Cholesky inverses, log norms)


@dataclass(frozen=True)
class EMPrior:
    """The user's prior on the components (public): every mean within ``radius`` of
    ``center`` and every covariance's eigenvalues in ``cov_bounds = (lo, hi)``. The whole
    data's mean then lies in the same ball and its covariance's eigenvalues in
    [lo, hi + radius²] (the spread of the means adds at most radius²): the box the CoinPress
    localisation runs in."""

    center: np.ndarray
    radius: float
    cov_bounds: tuple[float, float]

    @property
    def data_cov_bounds(self) -> tuple[float, float]:
        lo, hi = self.cov_bounds
        return lo, hi + self.radius**2


@dataclass(frozen=True)
class EMPlan:
    """The budget plan of one fit (public quantities only).

    ``localisation``: the (ε_L, δ_L) of the histogram localisation (None with public rows),
    which charges its joint histograms (``rho_histograms`` of zCDP and
    ``localisation_histograms``, their δ) and ``rho_refinement`` (zCDP);
    ``rho_prior_localisation``: the CoinPress localisation inside the user's prior (0 when
    none); ``rho_init``: the start histogram; ``rho_steps``: one ρ per EM step, each split
    ``STAT_SHARES`` over (counts, sums, second moments). :meth:`parts` lists every charge
    in order; they compose to ``total``. ``stop_from``: the first step after which the DP
    stopping rule may skip to the last step (None: never); a fit that stops charges the
    parts in order without the skipped steps'. ``components``: k' > k when the run is
    over-parameterised (0: not), reduced to k before step ``reduce_at`` (None: never); its
    steps before ``tied_until`` (None: none) fit one pooled covariance, their second moments
    one matrix (``TIED_SHARES`` of the step's ρ). ``rho_atoms``: the columns' heaviest-cell
    counts (:mod:`.atoms`), the last part. ``freeze``: a wide plan's exploring runs stop
    once their released changes meet the stopping rule at ``FREEZE_TOL`` (their later
    exploring steps are then missing from the ledger). ``last_shares``: the last step's
    (counts, sums, moments) split where it is not ``STAT_SHARES`` (an over-parameterised
    plan's, :func:`_output_shares`; () elsewhere). ``diagonal``: the localisation is the
    joint histograms of :func:`~privgauss.gaussian.histogram_budget.localisation_plan` at
    ``localisation`` alone (their need, no CoinPress refinement: :func:`_diagonal_frame`);
    ``rho_refinement`` is then the reserve of their octave releases (tied and wide axes,
    :meth:`octave_rhos`), whose unspent part the last EM step spends (:meth:`with_unspent`)."""

    total: Budget
    localisation: ApproxDP | None
    localisation_histograms: ApproxDP | None
    rho_refinement: float
    rho_init: float
    rho_steps: tuple[float, ...]
    grid_dims: int
    grid_cells: int
    radius: float
    rho_prior_localisation: float = 0.0
    rho_histograms: float = 0.0
    rho_kmeans_steps: tuple[float, ...] = ()
    rho_spread: float = 0.0
    rho_rewhiten: float = 0.0
    rewhiten_radius: float = 0.0
    n_starts: int = 1
    explore_steps: int = 0
    rho_score: float = 0.0
    score_bound: float = 0.0
    step_radii: tuple[float, ...] = ()
    rho_count: float = 0.0
    stop_from: int | None = None
    start_clusters: int = 0
    rho_final: float = 0.0
    final_candidates: int = 0
    components: int = 0
    reduce_at: int | None = None
    tied_until: int | None = None
    rho_atoms: float = 0.0
    freeze: bool = False
    last_shares: tuple[float, ...] = ()
    diagonal: bool = False

    @property
    def rho_em(self) -> float:
        return (self.rho_rewhiten + self.rho_init + sum(self.rho_kmeans_steps)
                + self.rho_spread + self.rho_score + sum(self.rho_steps) + self.rho_count
                + self.rho_final + self.rho_atoms)

    def refining(self, t: int) -> bool:
        """Whether step t refines the one picked run with k components (public): after the
        exploring steps and the reduction."""
        return (t >= self.explore_steps if self.n_starts > 1 else True) and (
            self.reduce_at is None or t >= self.reduce_at)

    def regret_cap(self, n: int) -> float:
        """The run pick's regret cap (public; 0: the pick sums clipped log-likelihood ratios
        to the frame's standard normal, as before ``PICK_REGRET``): the largest cap at which
        the pick's noise is ``REGRET_NOISE`` nat/row, at least ``REGRET_MIN`` — 0 where it
        would reach ``score_bound`` (the budget makes either pick's noise negligible; as ρ
        grows the regret pick's cap grows towards the likelihood's argmax)."""
        if not PICK_REGRET or self.rho_score <= 0 or self.n_starts < 2:
            return 0.0
        cap = max(REGRET_MIN, REGRET_NOISE * n * math.sqrt(2.0 * self.rho_score)
                  / math.sqrt(self.n_starts))
        return cap if cap < self.score_bound else 0.0

    def step_radius(self, t: int) -> float:
        """The clipping radius of EM step t (component frames): :func:`step_radius` of that
        step's second-moment noise, at least ``radius``."""
        return self.step_radii[t] if self.step_radii else self.radius


    @property
    def kmeans_radius(self) -> float:
        """The clipping radius of the k-means steps (standardised frame): r."""
        return self.radius

    def kmeans_rhos(self, t: int) -> tuple[float, float, float]:
        """(counts, sums, second moments) noise-equivalent ρ of the start's Lloyd step t: its
        ρ split ``KMEANS_STAT_SHARES``, the last step also releasing the clusters' second
        moments at ``rho_spread`` (0 on the others); with ``JOINT_STATS`` the step's blocks
        are released together and each scaled up by their planned sum over their joint cost
        (:func:`_joint_rhos`)."""
        rho = self.rho_kmeans_steps[t]
        rm = self.rho_spread if t == len(self.rho_kmeans_steps) - 1 else 0.0
        return _joint_rhos(rho * KMEANS_STAT_SHARES[0], rho - rho * KMEANS_STAT_SHARES[0], rm)

    @property
    def joint_releases(self) -> bool:
        """Whether a step's counts, sums (and moments) are released together (``JOINT_STATS``)."""
        return JOINT_STATS

    @property
    def n_steps(self) -> int:
        return len(self.rho_steps)

    def may_stop(self, t: int) -> bool:
        """Whether a small enough released change at step t ends the EM steps early (public):
        from ``stop_from`` on, and only while at least one planned step lies between t and
        the last (a stop jumps to the last step)."""
        return self.stop_from is not None and self.stop_from <= t < self.n_steps - 2

    @property
    def factored(self) -> bool:
        """Whether the steps carry each component's covariance by its Cholesky factor and
        let the whitened-frame floor fade to ``FACTOR_FLOOR`` (public): in a wide plan
        (``WIDE_STARTS`` runs: quiet, issue 27's parked tables at ε = 1e4)."""
        return self.n_starts >= WIDE_STARTS

    def may_freeze(self, t: int) -> bool:
        """Whether an exploring run whose released changes meet the stopping rule stops at
        step t (public): in a quiet wide plan (``freeze``), while exploring."""
        return self.freeze and t < self.explore_steps

    def fitted(self, k: int) -> int:
        """How many components the run starts and explores with (public): ``components``
        when the plan is over-parameterised, else k."""
        return self.components if self.components else k

    def runs(self, t: int) -> int:
        """How many EM runs step t advances (one per start while exploring)."""
        return self.n_starts if t < self.explore_steps else 1

    def is_tied(self, t: int) -> bool:
        """Whether step t fits the over-parameterised run's pooled (tied) covariance (public):
        the k'-component steps before ``tied_until``."""
        return self.tied_until is not None and t < self.tied_until

    def stat_rhos(self, t: int) -> tuple[float, float, float]:
        """(counts, sums, moments) ρ of one run's step t (a tied step's moments: the one
        pooled matrix, ``TIED_SHARES``; the last step of a plan with ``last_shares``: those,
        :func:`_output_shares`)."""
        rho = self.rho_steps[t] / self.runs(t)
        c, s, _ = TIED_SHARES if self.is_tied(t) else (
            self.last_shares if self.last_shares and t == self.n_steps - 1 else STAT_SHARES)
        return _joint_rhos(rho * c, rho * s, rho - rho * c - rho * s)

    def step_parts(self, t: int, run: str = "") -> list[tuple[str, Budget]]:
        """The charges of one run's EM step t (``run``: its label in the part names): one
        joint release of its statistics (``JOINT_STATS``) or their three releases."""
        return _release_parts(f"step {t + 1}{run}", self.stat_rhos(t),
                              ("counts", "sums", "moments"))

    def octave_rhos(self) -> tuple[float, float]:
        """(tied axes, wide axes): the ρ the diagonal frame's octave releases may take
        (``DIAG_TIE_SHARE`` : ``DIAG_WIDE_SHARE`` of the reserve; 0 without ``diagonal``)."""
        if not self.diagonal:
            return 0.0, 0.0
        tie = self.rho_refinement * DIAG_TIE_SHARE / (DIAG_TIE_SHARE + DIAG_WIDE_SHARE)
        return tie, self.rho_refinement - tie

    def with_unspent(self, unspent: float) -> EMPlan:
        """The plan whose last EM step also spends ``unspent`` (the diagonal frame's octave
        reserve that its releases left: a function of their DP outputs), split over its
        statistics as any step's."""
        if not unspent > 0:
            return self
        steps = self.rho_steps[:-1] + (self.rho_steps[-1] + unspent,)
        return dataclasses.replace(self, rho_steps=steps)

    def rewhiten_rhos(self) -> tuple[float, float]:
        """(sums, moments) noise-equivalent ρ of the re-whitening (its ρ split
        ``REWHITEN_SUM_SHARE``; with ``JOINT_STATS`` released together, :func:`_joint_rhos`)."""
        return _rewhiten_split(self.rho_rewhiten)

    def parts(self) -> list[tuple[str, Budget]]:
        out: list[tuple[str, Budget]] = []
        if self.localisation_histograms is not None:
            out.append(("localisation histograms", ZCDP(self.rho_histograms)))
            out.append(("localisation histograms delta", self.localisation_histograms))
            out.append(("localisation octaves" if self.diagonal else
                        "localisation refinement", ZCDP(self.rho_refinement)))
        if self.rho_rewhiten > 0:
            out += _release_parts("re-whitening", (0.0, *self.rewhiten_rhos()),
                                  ("", "sums", "moments"))
        if self.rho_prior_localisation > 0:
            out.append(("localisation in the prior", ZCDP(self.rho_prior_localisation)))
        out.append(("start", ZCDP(self.rho_init)))
        for t in range(len(self.rho_kmeans_steps)):  # composed: the moments named apart
            out += _release_parts(f"start k-means step {t + 1}", self.kmeans_rhos(t),
                                  ("counts", "sums", ""))
        if self.rho_spread > 0 and not JOINT_STATS:
            out.append(("start k-means moments", ZCDP(self.rho_spread)))
        for t in range(self.n_steps):
            for c in range(self.runs(t)):
                run = f" run {c + 1}" if self.runs(t) > 1 else ""
                out += self.step_parts(t, run)
            if t + 1 == self.explore_steps and self.rho_score > 0:
                out.append(("run selection", ZCDP(self.rho_score)))
        if self.rho_final > 0:
            out.append(("final selection", ZCDP(self.rho_final)))
        if self.rho_count > 0:
            out.append(("clipped count", ZCDP(self.rho_count)))
        if self.rho_atoms > 0:
            out.append(("atom counts", ZCDP(self.rho_atoms)))
        return out


def _joint_rhos(rc: float, rs: float, rm: float) -> tuple[float, float, float]:
    """The noise-equivalent ρ of a step's (counts, sums, moments) whose shares of the step's ρ
    are ``rc``, ``rs``, ``rm`` (public): released together (``JOINT_STATS``,
    :func:`~privgauss.mechanisms.soft_statistics_mechanism`) they cost
    :func:`~privgauss.sensitivity.soft_statistics_zcdp` of their noises' ρ, which is linear in
    them: each is scaled by the step's ρ over that cost, so the release spends exactly the
    step's ρ — at the standard shares (0.1, 0.3, 0.6) 1/0.85 of each block's, noise
    variance 15 % lower than composing the three charges. False: the shares as given."""
    if not JOINT_STATS or rs <= 0.0:
        return rc, rs, rm
    cost = soft_statistics_zcdp(rc, rs, rm)
    g = (rc + rs + rm) / cost if cost > 0 else 1.0
    return rc * g, rs * g, rm * g


def _release_parts(prefix: str, rhos: tuple[float, float, float], names: tuple[str, str, str]
                   ) -> list[tuple[str, Budget]]:
    """The plan's parts for one release of (counts, sums, moments) at their noise-equivalent
    ``rhos``: "<prefix> statistics" at their joint cost (``JOINT_STATS``), else one part per
    block named "<prefix> <name>" (a block with an empty name is not listed here)."""
    if JOINT_STATS:
        return [(f"{prefix} statistics", ZCDP(soft_statistics_zcdp(*rhos)))]
    return [(f"{prefix} {name}", ZCDP(r)) for name, r in zip(names, rhos, strict=True) if name]


def _rewhiten_split(rho: float) -> tuple[float, float]:
    """The re-whitening's (sums, moments) noise-equivalent ρ from its planned ``rho``."""
    return _joint_rhos(0.0, rho * REWHITEN_SUM_SHARE, rho - rho * REWHITEN_SUM_SHARE)[1:]


def clip_radius(n: int, d: int) -> float:
    """The per-component clipping radius at a noisy budget, r₀ = √d + ¼√(2 ln n) (public): the
    smallest radius any EM step uses (:func:`step_radius`)."""
    return math.sqrt(d) + CLIP_TAIL * math.sqrt(2.0 * math.log(max(n, 2)))


def step_radius(n: int, d: int, k: int, rho_m: float, tail: float | None = None) -> float:
    """The clipping radius of an EM step whose second moments get ``rho_m`` (public): the
    radius r ≥ r₀ (:func:`clip_radius`) at which clipping's bias on a Gaussian component's
    second moment per entry, ≈ 2·P(χ²_d > r²)/d (each row outside loses ‖y‖² − r², about 2 on
    average, spread over d entries), equals the noise on an entry per row of the component,
    σ_M(r)/(n/k) with σ_M(r) = √2·r²/√(2ρ_m). undo_clipping removes that bias for a Gaussian
    component, not for real clusters' tails; tied to the noise, it vanishes with it: r grows
    like √(2 ln ρ) as ρ → ∞. The balance stops at the radius a Gaussian sample of n rows leaves
    no row outside of (tail 1/n) — beyond it a Gaussian's rows are all inside and only the
    noise would grow — but heavy-tailed rows still fall outside there, at any budget, and
    de-clipping them as a Gaussian's is biased: so r is also at least ρ_m^(1/8)
    (``FREE_RADIUS_POWER``), which passes every row as ρ → ∞ while the noise per entry per
    row, r²/(√ρ_m·n/k) ∝ ρ_m^(−1/4), still vanishes (private EM then converges to
    scikit-learn's EM on any data with finite second moments; at ε ≤ 1e4 this bound is at
    most 0.8 of every plan's radius and changes nothing). n = 5e4, d = 10, k = 3: every
    step's r is r₀ (4.33) at ε = 1; at ε = 1e4 the last step's is 5.8.

    ``tail`` (default ``CLIP_TAIL``): the least radius is √d + tail·√(2 ln n) (r₀ at ¼). The
    over-parameterised plans (a k' run; :func:`_tail`: a plan without one keeps r₀) give
    their refining steps (:meth:`EMPlan.refining`) ``REFINE_TAIL`` = 0: where the noise
    is loud the balance sits below r₀, and a refining step's components are near their
    fixed point in their own frames (rows about N(0, I): ``undo_clipping`` removes the bias
    of a Gaussian component's rows clipped at √d, about half of them). Its noise, ∝ r², and
    its release floor fall with it (d = 15, k = 6, ε = 1: r 5.04 → 3.87, floor 3,634 →
    1,506 rows), and so does the last step's noise that caps the over-parameterised run's
    k' (``OVER_CAP``): n = 5e4, ε = 1, d = 14–15, k = 4/5/6 now run k' = 8/10/11–12 (were
    6–7/6–7/0–7). Issue 27 (``benchmarks/results/em_small_clusters.md``, tuning families,
    mean gap): 0.51 → 0.11 nat/row; the radius with k' held as before 0.57, k' alone
    (``OVER_CAP`` = 0.3 at r₀) 0.21 — the two work together. Tried: every step ≥ √d (the
    tied and exploring steps too: family 4, k = 4, d = 9, sep 1.59, 0.05 → 0.18 at 2 of 3
    noise seeds), refining steps ≥ √d + 0.1·√(2 ln n) (mean 0.13, one regression family
    wrong), √d − 0.1·√(2 ln n) (0.14, one wrong), all but the last step (0.49). At ε = 1e4
    the balance is above r₀ (nothing changes) but where n is small against d (n = 3,000,
    d = 15, k = 6: 4.873 → 4.852).

    Cached (a plan asks once per step, with a few distinct ρ_m), and the χ² tail is scipy's
    special function, which ``scipy.stats.chi2.sf``/``isf`` wrap (the same values bit for
    bit, without the distribution's per-call overhead: 2.8 s of a 10 s fit at ε = 1e4).
    """
    t = CLIP_TAIL if tail is None else float(tail)
    r = _step_radius(int(n), int(d), int(k), float(rho_m), t)
    if rho_m > 0 and math.isfinite(rho_m):
        r = max(r, float(rho_m) ** FREE_RADIUS_POWER)
    return r


@lru_cache(maxsize=256)
def _step_radius(n: int, d: int, k: int, rho_m: float, tail: float) -> float:
    from scipy import special

    r0 = math.sqrt(d) + tail * math.sqrt(2.0 * math.log(max(n, 2)))
    if not rho_m > 0 or not math.isfinite(rho_m):
        return r0
    per_row = math.sqrt(rho_m) * n / max(k, 1)

    def excess(r: float) -> float:  # decreasing in r
        return 2.0 * float(special.chdtrc(d, r * r)) / d - r * r / per_row

    rc = max(r0, clip_radius(n, d))  # r₀ (CLIP_TAIL): the search as before above it
    hi = max(rc, math.sqrt(float(special.chdtri(d, 1.0 / max(n, 2)))))
    if excess(r0) <= 0.0:
        return r0
    if excess(hi) >= 0.0:
        return hi
    lo = rc if excess(rc) > 0.0 else r0  # the same bits as before where r ≥ r₀
    for _ in range(50):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if excess(mid) > 0.0 else (lo, mid)
    return hi


def _tail(plan: EMPlan, t: int, refine: float = CLIP_TAIL) -> float:
    """The least clipping radius's tail term of step t (public): ``refine`` on a refining
    step, else ``CLIP_TAIL``. Only the over-parameterised plans (:func:`em_plan`'s k' run, and
    :func:`_over_components` sizing it) pass ``REFINE_TAIL``; a plan without k' clips at r₀
    throughout (issue 27; ``benchmarks/results/em_small_clusters.md``, "famgate"). Why: the
    de-clipping below r₀ removes the bias of rows that are N(0, I) in the component's frame,
    true only near the fixed point; a k' run exists only where its last step's noise moves a
    k'-model by at most ``OVER_CAP`` (0.1 nat/row), while the plain ε = 1 plans are mostly
    ones that failed that (the real-table corpus: the last step's noise at r₀ moves a
    3-model by 0.17–0.29 nat/row on the tables that lost with 1 % public rows, 0.40–0.75
    without). Measured: on famshape's tuning families the smaller radius with main's k' hurt
    the four without a k' run (d = 15, k = 6, mean gap 0.66 → 0.74; its gain there needs k'
    too); on the corpus 8 of the 9 rows famshape lost by > 0.05 at ε = 1 with 1 % public
    rows had no k'. With this gate: held-out families 1280–1329 (ε = 1) 8 → 4 wrong of 50
    (famshape's 4); the corpus at ε = 1 with and without public rows, two splits, 13 of 78
    rows changed, 6 better and 2 worse by > 0.05 (famshape: 48 changed, 13 better, 11 worse)."""
    return refine if plan.refining(t) else CLIP_TAIL


def _n_steps(n: int, d: int, k: int, rho_steps: float | None = None,
             full_grid: bool = False) -> int:
    """T (public): at a noisy budget T₀ = 8 + 4k within [10, 20]; overlapping components need
    many EM steps from a coarse start. Measured (k = 3, d = 5, n = 30000, ε = 1, δ = 1e-6; gap
    to sklearn's held-out log-likelihood over 4 noise seeds): T = 6: 0.05–0.44, T = 10:
    0.003–0.19, T = 15–20: 0.003–0.13; at ρ = 0.5: T = 6: 0.05–0.31, T = 12: ≤ 0.006. On the
    benchmark's synthetic set (k = 3, d = 10, n = 5e4, ε = 1, no public rows, seeds 0–23) the
    wrong-basin fits are slow ones, not wrong fixed points: non-private EM from their states
    at the run pick also needs more than 17 steps. T = 17 (8 + 3k): 2 of 24 above 0.05 (median
    0.0065); T = 20: 1 of 24 (median 0.007); T = 24: 0 of 24 (median 0.008, each step noisier).

    More steps when the budget allows (``rho_steps``: the ρ of all EM steps): the largest T ≤
    ``MAX_STEPS`` whose early steps' second-moment noise per row of a component,
    σ_M/(n/k) at r₀, stays below ``STEP_TOL`` = 0.07 — so T grows with ρ (T ∝ ρ once the
    noise is small) and EM runs to its fixed point when noise no longer limits it. Family
    seed 4 of ``benchmarks/mixture_families.py`` at ε = 1e4: T = 20 picked a run 0.17
    nat/row below sklearn (the exploring runs had not yet separated), T = 60 one at −0.0000.
    ``STEP_TOL`` was 0.01 (``NOISE_TOL``) until issue 27's mid budgets: with 1 % public rows
    SLID (3,179 rows, d = 3) stayed 0.08–0.10 nat/row below sklearn at ε = 10 and 100 with
    T = 16 and 21, and ended 0.02 and 0.014 below it with T = 32 and 60 (sklearn's EM from
    the T = 21 fit moved 0.05 further: not converged); held out at ε = 10 / 100 (8 tables ×
    2 splits × 2 noise seeds) SumHes 0.125 → 0.034 / −0.018 → −0.112, NOxEmissions,
    VerbAgg, Snmesp and VietNamH better by 0.005–0.03, none worse but PSID at ε = 100
    (−3.05 → −2.47, a table sklearn parks). At ε = 1 the tables' plans are unchanged; of
    the generated families 0–49 at ε = 1 (n = 5e4), the 19 whose T grows (d ≤ 9, to 20–60)
    end as before (2 wrong, median 0.0006 → 0.0004) at up to 3× the time; at ε = 10 family
    4 went 0.169 → 0.001.

    ``full_grid`` (public: the start histogram's grid has a direction per column, p = d, which
    happens at low d): the starts already see the whole shape, and where the steps are noisy
    fewer of them do better — T₀ = :data:`T_FULL_GRID` · (1 + min(1, a)), a the early steps'
    ρ over what ``NOISE_TOL`` needs (10 steps at the noisiest, 20 once a ≥ 1).
    Generated families (``mixture_families.family(seed, d=2 + seed % 3)``, ε = 1, noise
    seed 0), against T₀ = 8 + 4k ≤ 20: n = 8000, the 20 of seeds 0–29 em fits, mean gap
    0.329 → 0.210, wrong basins (> 0.05) 14 → 11; n = 20000, seeds 0–11, mean 0.036 →
    0.015, wrong 3 → 1. Real tables (``benchmarks/real_mixtures.py``, 2 seeds): treering
    0.093 → 0.012 at ε = 1; 40,000 pixel rows (a ≈ 1.1) unchanged — at T₀ = 10 there
    china_pixels went 0.003 → 0.059, hence the ramp in a."""
    t0 = int(min(20, max(10, 8 + 4 * k)))
    if rho_steps is None or not rho_steps > 0 or not math.isfinite(rho_steps):
        return t0
    r2 = clip_radius(n, d) ** 2
    need = (r2 * k / (n * NOISE_TOL)) ** 2  # ρ_m of one early step at the tolerance
    early = _joint_rhos(*STAT_SHARES)[2] * (1.0 - LAST_SHARE) * rho_steps  # their moments' ρ
    if full_grid:
        t0 = min(t0, round(T_FULL_GRID * (1.0 + min(1.0, early / need))))
    fit = 1 + math.floor(min(early / need * (STEP_TOL / NOISE_TOL) ** 2, 10.0 * MAX_STEPS))
    return int(min(MAX_STEPS, max(t0, fit)))


def _localisation_epsilon(n: int, d: int, epsilon: float, delta: float) -> float:
    """ε_L (public): the larger of the share sized by the per-axis Laplace route's need
    (2 × :func:`_theory_need`, within [``LOC_SHARE_MIN``, ``LOC_SHARE_MAX``] × ε: the plans
    every large-n tuning ran with, kept) and what the practical route the fit runs needs
    (:func:`_hist_need`), at most ``LOC_SHARE_SMALL`` × ε. Where that need exceeds
    ``DIAG_FROM`` × ε the plan takes the diagonal frame instead (:func:`_diagonal_frame`;
    with ``DIAGONAL_FRAME`` off, em refuses beyond ``LOC_SHARE_SMALL``: :func:`_requirements`),
    so in the plans ε_L ≤ ``LOC_SHARE_MAX`` × ε. n = 5e4, d = 2–15, ε = 1: the theory share
    (0.2–0.37 ε), as before."""
    eps_old = min(max(2.0 * _theory_need(n, d, delta / 2), LOC_SHARE_MIN * epsilon),
                  LOC_SHARE_MAX * epsilon)
    return float(max(eps_old, min(_hist_need(n, d, delta / 2, eps_old),
                                  LOC_SHARE_SMALL * epsilon)))


def _diagonal_frame(n: int, d: int, epsilon: float, delta: float) -> bool:
    """Whether em localises by the joint histograms alone (public): where the refined route
    keeps no margin within ``LOC_SHARE_SMALL`` × ε (:func:`_localises`) — the CoinPress
    refinement's planned error stays above ``LOC_MAX_ERROR`` there, and it failed after
    spending (d = 7: 8 of 20, d = 13: 20 of 20 at ε_L = 0.8) — while the histograms, at
    the whole (ε, δ/2) as their reference, stay within their cap
    (:func:`~privgauss.gaussian.histogram_budget.localisation_within_cap`: each gets its
    need, together at most half of that ρ). The frame is then the released per-axis centre
    and scale (a diagonal Gaussian; :func:`_histogram_frame`): the EM steps whiten each
    component themselves, and get the refinement's ρ. Also where the refined route needs
    more than ``DIAG_FROM`` × ε: its ε_L (up to ``LOC_SHARE_SMALL``) left EM too little —
    generated mixtures (``make_mixture``, separation 3, k = 3, 20 seeds, ε = 1) at
    n = 2,100 / 3,300 / 4,700 for d = 3 / 5 / 7: median gap to sklearn 1.35 / 1.10 / 2.74 →
    0.95 / 0.85 / 0.14 nat/row, fits worse than one non-private Gaussian 1 / 2 / 6 → 0;
    at DIAG_FROM = 0.25 (n = 3,200 / 5,000 / 7,000) the medians moved by ≤ 0.11 but the worst
    fits grew 0.43 → 1.05 and 0.11 → 0.92 (d = 5, 7): not taken. Public facts only (n, d, ε, δ);
    the diagonal range shrinks as ε grows (never at n = 5e4, d ≤ 15, ε = 1)."""
    from ..gaussian.histogram_budget import localisation_within_cap

    if not DIAGONAL_FRAME or _localises(n, d, DIAG_FROM * epsilon, delta / 2):
        return False
    return bool(localisation_within_cap(n, d, epsilon, delta / 2))


def _histogram_frame(X: Any, plan: EMPlan, release: Release
                     ) -> tuple[np.ndarray, np.ndarray, float]:
    """(mean, diagonal covariance, the octave reserve's unspent ρ) of the diagonal frame
    (``plan.diagonal``): :func:`~privgauss.gaussian.histogram.localise` with the joint
    releases of ``localisation_plan`` at ``plan.localisation`` and the octave releases'
    reserve (:meth:`EMPlan.octave_rhos`; each runs only when the released histograms call
    for it, a DP output). Post-processing of its releases as
    :func:`~privgauss.gaussian.histogram.histogram_gaussian` reads them without the
    refinement: centre, the scale bracket's middle squared; a constant (degenerate) column its
    released value and variance."""
    from ..gaussian.histogram import localisation_plan, localise

    loc = plan.localisation
    assert loc is not None
    n, d = int(X.shape[0]), int(X.shape[1])
    s_j, l_j, _ = localisation_plan(n, d, loc.epsilon, loc.delta)
    tie, wide = plan.octave_rhos()
    out = localise(X, s_j, l_j, release=release, tie_rho=tie, wide_rho=wide)
    var = np.asarray(out.scale, dtype=np.float64) ** 2
    if out.degenerate is not None and out.degenerate_var is not None:
        var = np.where(out.degenerate, out.degenerate_var, var)
    unspent = plan.rho_refinement - out.tie_rho - out.wide_rho
    return np.asarray(out.center, dtype=np.float64), np.diag(var), max(unspent, 0.0)


def _theory_need(n: int, d: int, delta_l: float) -> float:
    """The smallest ε_h with which 2d per-axis Laplace histograms meet their thresholds at n
    (inf when no ε does): the ``constants="theory"`` route, which em does not run — its plans
    at large n were sized (and tuned) with it."""
    from ..gaussian.histogram import P_LOCATION, P_SCALE, min_epsilon

    delta_i = (delta_l / 2.0) / (2 * d)
    return d * (min_epsilon(n // 2, P_SCALE, delta_i) + min_epsilon(n, P_LOCATION, delta_i))


def _localises(n: int, d: int, eps_l: float, delta_l: float) -> bool:
    """Whether the practical localisation at (``eps_l``, ``delta_l``) and n rows is within
    em's margins (public): its joint histograms within their cap
    (:func:`~privgauss.gaussian.histogram_budget.localisation_within_cap`: each threshold at
    most half the expected count of the bin it needs — sized so whatever ε_L, a larger ε_L
    goes to the refinement) and its refinement's planned relative covariance error
    (:func:`~privgauss.gaussian.histogram_budget.refinement_error`) at most
    ``LOC_MAX_ERROR``. Measured at the smallest n em accepts at ε = 1
    (``benchmarks/results/em_small_n.md``, 20 noise seeds, Gaussian rows, d = 2–13): no
    failure, median KL to np.cov 0.05–0.09; without the refinement's bound (the histograms'
    cap alone, ε_L = 0.8) d = 7 failed 8 of 20 and d = 13 20 of 20 in the refinement."""
    from ..gaussian.histogram_budget import localisation_within_cap

    if not localisation_within_cap(n, d, eps_l, delta_l):
        return False
    return bool(_refinement_error(n, d, eps_l, delta_l) <= LOC_MAX_ERROR)


@lru_cache(maxsize=1024)
def _refinement_error(n: int, d: int, eps_l: float, delta_l: float) -> float:
    from ..gaussian.histogram_budget import refinement_error

    return float(refinement_error(n, d, eps_l, delta_l))


@lru_cache(maxsize=1024)
def _hist_need(n: int, d: int, delta_l: float, start: float = 0.0) -> float:
    """The smallest ε_L (to 1 %; inf when none up to 1e6) at which the practical localisation
    — the joint discrete-Gaussian histograms and CoinPress refinement of
    :func:`~privgauss.gaussian.histogram.histogram_gaussian`, the route em runs — meets
    :func:`_localises`; ``start`` when it already does there (a cheap first check). d = 3, 7,
    13 at n = 5e4: 0.02, 0.05, 0.10 (the theory share, 0.2, 0.2, 0.32 at ε = 1, stands);
    n = 2,000, d = 5: 1.10."""
    from ..gaussian.histogram_budget import localisation_min_epsilon

    if start > 0 and _localises(n, d, start, delta_l):
        return start
    lo = localisation_min_epsilon(n, d, delta_l)
    if not math.isfinite(lo):
        return math.inf
    if _localises(n, d, lo, delta_l):
        return lo
    hi = 2.0 * lo
    while not _localises(n, d, hi, delta_l):
        lo, hi = hi, 2.0 * hi
        if hi > 1e6:
            return math.inf
    while hi > 1.01 * lo:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if _localises(n, d, mid, delta_l) else (mid, hi)
    return hi


def _grid(n: int, d: int, rho_init: float) -> tuple[int, int]:
    """(p, m): p ≤ d grid directions with m cells each, m ≥ 3, m^p cells with an expected
    count of at least ~5σ per occupied cell (σ = √2/√(2ρ_init)), m at most ``GRID_CELLS``
    (``GRID_FINE_CELLS`` > 0: at most that many where p ≤ 2, m^p ≤ ``GRID_FINE_CELLS``²).
    Where the room rule gives its cap of 6 directions and d ≤ ``GRID_MAX_DIMS``, the grid takes
    all d directions with the six-direction m (lowered until m^d ≤ ``GRID_MAX_CELLS``): a
    random six-of-seven projection can mix a 0/1 column into every cell axis, so that no start
    splits it (instflag, ``benchmarks/results/em_parked.md``: insteval at ε = 1e4).
    Public: n, d and the plan's ρ only; the histogram's sensitivity does not depend on m."""
    sigma = histogram_l2() / math.sqrt(2.0 * rho_init)
    room = max(n / (5.0 * sigma), 3.0)
    p = int(max(1, min(d, math.floor(math.log(room) / math.log(3.0)), 6)))
    cap = GRID_FINE_CELLS if GRID_FINE_CELLS > 0 and p <= 2 else GRID_CELLS
    m = int(max(3, min(cap, math.floor(room ** (1.0 / p)))))
    if p == 6 < d <= GRID_MAX_DIMS:
        p = d
        while m > 3 and m ** p > GRID_MAX_CELLS:
            m -= 1
    return p, m


def em_plan(n: int, d: int, k: int, budget: Budget, *, n_public: int = 0,
            n_steps: int | None = None, prior: bool = False) -> EMPlan:
    """The budget plan (see the module docstring), from public quantities only. ``prior``:
    the user gave an :class:`EMPrior` (used when there are fewer than d+1 public rows).
    Over-parameterised (``components`` = k' > k, :func:`_over_components`) where an exploring
    step's noise is loud and k' components meet em's own rows-per-component needs."""
    plan = _base_plan(n, d, k, budget, n_public=n_public, n_steps=n_steps, prior=prior)
    wide = _wide_plan(plan, n, d, k, budget, n_steps, n_public, prior)
    if wide is not None:
        return wide
    k_over = _over_components(plan, n, d, k, budget, n_steps, n_public, prior)
    if not k_over:
        return _explore_longer(plan, n, d, k, budget, n_steps, n_public, prior)
    over = _over_plan(plan, n, d, k, k_over, budget, n_public, prior, REDUCE_STEPS)
    if (over is not None and LOUD_REDUCE_STEPS and (LOUD_PUBLIC or not n_public)
            and _refine_noise(over, n, d, k) > LOUD_REFINE):
        over = _over_plan(plan, n, d, k, k_over, budget, n_public, prior, LOUD_REDUCE_STEPS)
    return plan if over is None else over


def _over_plan(plan: EMPlan, n: int, d: int, k: int, k_over: int, budget: Budget,
               n_public: int, prior: bool, reduce_steps: int) -> EMPlan | None:
    """The over-parameterised plan (public): k' = ``k_over`` components until its last
    ``reduce_steps`` steps; None where no k' step would lie between the run pick and the
    reduction (``plan``, the plain one, is then used)."""
    def over_base(lean: bool) -> EMPlan | None:  # None: no k' step between pick and reduction
        over = _base_plan(n, d, k_over, budget, n_public=n_public, n_steps=None, prior=prior,
                          reduce_steps=reduce_steps, refine_tail=REFINE_TAIL, lean=lean)
        fits = over.stop_from is None and over.n_steps - reduce_steps > over.explore_steps
        return over if fits else None

    over = over_base(False)
    if over is None:
        return None
    # the lean start where the plan is over-parameterised anyway (the same k' plans)
    over = (over_base(True) if LEAN_START else None) or over
    reduce_at = over.n_steps - reduce_steps
    over = dataclasses.replace(over, components=k_over, reduce_at=reduce_at,
                               tied_until=min(reduce_at - UNTIED_LAST,
                                              over.explore_steps + TIED_AFTER_PICK)
                               if OVER_TIED else None,
                               last_shares=_output_shares(d) if OUTPUT_SHARES else ())
    # a tied step's pooled moments average over all n rows (as one component's would)
    radii = tuple(step_radius(n, d, 1 if over.is_tied(t) else k_over, over.stat_rhos(t)[2],
                              _tail(over, t, REFINE_TAIL)) for t in range(over.n_steps))
    return dataclasses.replace(over, step_radii=radii)


def _refine_noise(over: EMPlan, n: int, d: int, k: int) -> float:
    """The change a refining step's noise alone makes in a k-model (public,
    :func:`_noise_change`): the first refining step's, the one after the reduction."""
    assert over.reduce_at is not None
    return _noise_change(over, over.reduce_at, n, d, k)


def _explore_longer(plan: EMPlan, n: int, d: int, k: int, budget: Budget,
                    n_steps: int | None, n_public: int, prior: bool) -> EMPlan:
    """The plain three-run plan (no k' run sized, not wide) with ``PLAIN_EXTRA_STEPS`` more
    steps, the first ⌊T/``PLAIN_EXPLORE_DIV``⌋ of them exploring (public): only with the
    default schedule, where the first exploring step's noise moves a model by at most
    ``OVER_NOISE`` nat/row (:func:`_noise_change`) and where the noise limits T
    (:func:`_n_steps` < ``MAX_STEPS``) — so the plan is :func:`_base_plan`'s once the budget
    lets EM run to its fixed point (T grows with ρ to ``MAX_STEPS``; quiet plans are wide).
    The same parts as the plan it replaces, more of them: the EM steps' ρ is re-split over
    T + ``PLAIN_EXTRA_STEPS`` steps by :func:`_base_plan`'s own rule (half on the last, the
    rest evenly; an exploring step's over the three runs), so every step is noisier and the
    parts still compose to the budget.

    Why (issue 27, ``benchmarks/results/em_small_clusters.md``, "explore"): at ε = 1, n = 5e4,
    d = 4–6 the plain plans' run pick came after ⌊T/3⌋ steps, before EM had separated the
    runs' basins (famcensus, lookpick). Measured against main (``benchmarks/em_explore.py``;
    gaps to sklearn's best of 5, wrong > 0.05): tuning misses 2516, 2568, 2533, 1416 × noise
    seeds 0–5: 13 → 6 of 24; held-out plain fits (low-d families 3700–3759, 3800–3859,
    3900–3959 at noise seeds 0 and 1, 4000–4059; families 2760–2789): 18 → 14 of 274 (5
    fixed, 1 new: 3711, which main misses at its noise seeds 1 and 2); fresh 4100–4159:
    6 → 3 of 53 (none new). ⌊T/2⌋ alone, or T + 4, gained less. The misses that stay (3808,
    3817, 3858, ...) stay under every length tried. The noise gate: on the real-table corpus
    at ε = 1 (n = 1,600–22,000) the plain plans are loud (first step 9–65 nat/row) and the
    ungated rule lost there (10 of 36 tables worse by > 0.05, 4 better: MunExp −0.02 → 0.55,
    MedExp 0.24 → 0.60); every generated family's plain plan at ε = 1, n = 5e4 is under it
    (0.01–0.093).

    **On since session 54 at ⌊T/2⌋ with no extra steps** (``PLAIN_EXPLORE_DIV`` = 2,
    ``PLAIN_EXTRA_STEPS`` = 0): with the run pick by capped regrets (``PICK_REGRET``, noise
    0.002 nat/row) a pick at ⌊T/2⌋ took the right basin where the one at ⌊T/3⌋ did not on
    low-d families whose wrong basin led early (14273, 14433, 14576, 14577 of the blocks used
    before: 33 → 29 of 1,440 wrong, none newly wrong; fresh blocks in
    ``mixture_families.md``, "Session 54"); the same parts and T, the pick later.
    Before, with ``EXPLORE_DIV`` here and the switch measured as below, not general enough: the gate
    still admits small-n full-grid plans whose T the ``T_FULL_GRID`` ramp cut for being noisy (n =
    6000, d = 2, k = 3 at ε = 1: 10 → 18 steps), and on held-out low-d families at n = 8000
    (5000–5029) it fixed one fit and lost one (5025: 0.087 → 0.386). With 1 % public rows at ε = 10
    it was better on SLID, SumHes, Ketchup, sunspots (``em_mid_steps.py``), VerbAgg at ε = 1 0.049 →
    0.057 mean (PLAIN_EXPLORE_DIV = 1.5, PLAIN_EXTRA_STEPS = 8).
    Since ``SUMMARY_NOISE`` = 0.1 these plans start from the summary start, whose basin only
    quiet steps keep: on fresh families whose plan the switch changes (48 of 13200–13399,
    noise seeds 0 and 1) it took main's 1 wrong of 96 to 17 (``mixture_families.md``,
    "Session 52")."""
    if n_steps is not None or plan.n_starts != N_STARTS or plan.n_steps >= MAX_STEPS:
        return plan
    if not _noise_change(plan, 0, n, d, k) <= OVER_NOISE:
        return plan  # a loud plan: more, noisier steps lost on the real-table corpus
    if PLAIN_EXPLORE_DIV == EXPLORE_DIV and not PLAIN_EXTRA_STEPS:
        return plan
    return _base_plan(n, d, k, budget, n_public=n_public, prior=prior,
                      explore_div=PLAIN_EXPLORE_DIV, extra_steps=int(PLAIN_EXTRA_STEPS))


def _output_shares(d: int) -> tuple[float, float, float]:
    """(counts, sums, second moments) shares of the ρ of an over-parameterised plan's last EM
    step (public: d only): the split that minimises what that step's noise costs the
    returned model. Per row of a component of n_j rows in its own frame (n = k·n_j): the
    weights ½(σ_N/n_j)² (:func:`_noise_change`), the covariance's scale ¼d(σ_N/n_j)² (the
    count divides the sums and moments: a relative error δN/N scales every variance), the
    mean ½d(σ_S/n_j)² and the covariance d(d+1)/8·(σ_M/n_j)², with σ_N = √2/√(2ρ_c),
    σ_S = 2r/√(2ρ_s), σ_M = √2·r²/√(2ρ_m): a_c/ρ_c + a_s/ρ_s + a_m/ρ_m over n_j², a_c =
    ½ + d/4, a_s = d·r², a_m = d(d+1)·r⁴/8, least (Lagrange) at ρ_x ∝ √a_x; r² = d, a
    refining step's least radius (``REFINE_TAIL``; the step's own radius is then its
    bias/noise balance at its moments' ρ, as for every step). d = 13–15: about (0.02–0.025,
    0.15–0.17, 0.81–0.83) instead of ``STAT_SHARES`` (0.1, 0.3, 0.6), 15 % less of that
    cost: the moments' noise dominates it (a_m/a_s = d(d+1)/8 ≈ 23–30).

    Why the last step only, and only in over-parameterised plans (issue 27, "fam4" in
    ``benchmarks/results/em_small_clusters.md``): there the returned model is the last
    step's, and what those fits still lose at n = 5e4, ε = 1, d = 13–15 is that release's
    noise — scikit-learn's EM started from the model before the last step reaches its own
    optimum in one step (gap 0.0000) on the tuning families 1281, 1282, 1303 and 1315
    (noise seed 0), whose fits lose 0.055–0.12 nat/row, mostly on the 5–8 % clusters'
    shapes. Earlier steps keep ``STAT_SHARES``: there the sums' share keeps near small
    clusters apart (a split of (0.05, 0.2, 0.75) on every refining step merged 1303's two
    small clusters on 2 more of 8 noise seeds) and the counts decide dead and fading
    components; no step follows the last. Measured (tuning families × noise seeds 0–7):
    30 → 24 of 32 fits wrong, median 0.0756 → 0.0692; 31 of the 32 fits better (by
    0.0017–0.012), one 0.0008 worse; 1303's structure losses (4 of 8 seeds, the reduction
    merging its two small clusters) unchanged. A plain plan keeps ``STAT_SHARES`` (famgate:
    the ε = 1 corpus plans without k' lose by structure and shape). A split, not a guard:
    plans with a k' run exist only where the noise is loud (``OVER_NOISE``; no ε = 1e4
    plan has one)."""
    a = (math.sqrt(0.5 + 0.25 * d), float(d), d * math.sqrt(d * (d + 1.0) / 8.0))
    total = sum(a)
    c, s = a[0] / total, a[1] / total
    return c, s, 1.0 - c - s


def _wide_plan(plan: EMPlan, n: int, d: int, k: int, budget: Budget, n_steps: int | None,
               n_public: int, prior: bool) -> EMPlan | None:
    """The plan with ``WIDE_STARTS`` exploring runs over the first ``WIDE_EXPLORE`` of the T
    steps (public), or None: only with the default schedule and where each run's first
    exploring step's noise alone moves a model by at most ``WIDE_NOISE`` nat/row
    (:func:`_noise_change`): with T = ``WIDE_STEPS`` where the budget gives the default
    schedule its most steps (``MAX_STEPS``) and that is quiet — and, where the three-run plan
    may stop early (``stop_from``), still may (else a run picked early ran all 150 steps:
    generated families with d = 15 took 2–2.7× as long) —, else with the default T.
    Exploring runs may freeze (``freeze``) where a step's noise is at most ``STOP_NOISE`` ×
    ``FREEZE_TOL`` — every wide plan since ``STOP_NOISE`` = 2 (``WIDE_NOISE`` = 1e-3 ≤ 2 ×
    ``FREEZE_TOL``; before, at n = 5e4, d = 10, k = 3, ε = 100 six runs explored 40 steps
    each, none frozen or merged: 3.7× scikit-learn's time).
    ε = 1e4 on 34 of the 39 fresh corpus tables and at n = 5e4, d = 10, k = 3;
    never at ε = 1 there (its first step's noise is 0.06–170). The parts are those of
    the plan with three runs, the exploring steps' ρ split over more runs for more steps; the
    run pick's sensitivity grows with the runs (``score_sums_l2``)."""
    if n_steps is not None or plan.n_starts < 2 or WIDE_STARTS <= plan.n_starts:
        return None
    bases = [plan]
    if WIDE_STEPS > plan.n_steps >= MAX_STEPS:
        bases.insert(0, _base_plan(n, d, k, budget, n_public=n_public, n_steps=WIDE_STEPS,
                                   prior=prior))
    wides = []
    for base in bases:
        T = base.n_steps
        explore = max(base.explore_steps, int(math.floor(WIDE_EXPLORE * T)))
        if explore < T - 1:
            wides.append(dataclasses.replace(base, n_starts=WIDE_STARTS, explore_steps=explore))
    for wide in wides:  # the longest quiet one
        T, explore = wide.n_steps, wide.explore_steps
        if not _noise_change(wide, 0, n, d, k) <= WIDE_NOISE:
            continue
        radii = tuple(step_radius(n, d, k, wide.stat_rhos(t)[2], _tail(wide, t))
                      for t in range(T))
        wide = dataclasses.replace(wide, step_radii=radii)
        quiet = _stop_gate(wide, explore, n, d, k)
        if plan.stop_from is not None and not quiet:
            continue  # more steps, but none may stop: the time of all of them (d = 15)
        freeze = _noise_change(wide, 0, n, d, k) <= STOP_NOISE * FREEZE_TOL
        return dataclasses.replace(wide, start_clusters=_start_clusters(n, d, k, wide),
                                   stop_from=explore if quiet else None, freeze=freeze)
    return None


def _over_components(plan: EMPlan, n: int, d: int, k: int, budget: Budget,
                     n_steps: int | None, n_public: int, prior: bool) -> int:
    """k' (public): ⌈``OVERPARAM``·k⌉ components for the over-parameterised run, or 0 (none) —
    only with the default schedule, where the first exploring step's noise alone moves a model
    of k components by more than ``OVER_NOISE`` nat/row (:func:`_noise_change`; n = 5e4,
    ε = 1: the generated families' wrong basins all lie there), and where k' equal components
    meet em's own requirements (:func:`em_requirements` at k')."""
    top = int(math.ceil(OVERPARAM * k - 1e-9))
    if top <= k or n_steps is not None or not plan.explore_steps:
        return 0
    if not _noise_change(plan, 0, n, d, k) > OVER_NOISE:
        return 0
    for k_over in range(top, k, -1):  # the most components whose run stays usable
        over = _base_plan(n, d, k_over, budget, n_public=n_public, prior=prior,
                          refine_tail=REFINE_TAIL)  # its last step's radius as in the k' run
        if _noise_change(over, over.n_steps - 1, n, d, k_over) > OVER_CAP:
            continue
        if _requirements(n, d, k_over, budget, None, n_public, prior, over=False).ok:
            return k_over
    return 0


def _base_plan(n: int, d: int, k: int, budget: Budget, *, n_public: int = 0,
               n_steps: int | None = None, prior: bool = False,
               reduce_steps: int = 0, refine_tail: float = CLIP_TAIL,
               explore_div: float = EXPLORE_DIV, extra_steps: int = 0,
               lean: bool = False) -> EMPlan:
    """:func:`em_plan` for k fitted components; with ``reduce_steps`` = R > 0 the last R EM
    steps (after the reduction) get 1 − ``OVER_SHARE`` of the steps' ρ (half of it on the
    last, the rest evenly), the T − R before them the rest, evenly. ``lean``: the start
    histogram, the k-means start, the re-whitening and the run pick at ``LEAN_INIT``,
    ``LEAN_KMEANS``, ``LEAN_REWHITEN``, ``LEAN_SCORE`` of ρ_EM instead of ``INIT_SHARE``,
    ``KMEANS_SHARE``, ``REWHITEN_SHARE``, ``SCORE_SHARE``, the rest to the EM steps (an
    over-parameterised plan's, :func:`em_plan`)."""
    use_public = n_public >= d + 1
    diagonal = False
    loc: ApproxDP | None = None
    hist: ApproxDP | None = None
    rho_ref = rho_prior = rho_hist = 0.0
    rho_total = zcdp_of(budget, "em", refusal="method='em' needs a rho (zCDP) or (epsilon, "
                        f"delta > 0) budget, got {budget}")
    rho_all = budget.rho if isinstance(budget, ZCDP) else None
    if use_public or prior:
        rho_all = rho_total
        rho_prior = 0.0 if use_public else PRIOR_LOC_SHARE * rho_all
        rho_em = rho_all - rho_prior
    elif isinstance(budget, ZCDP):
        raise InvalidDataError(
            f"method='em' with a rho (zCDP) budget needs at least d+1 = {d + 1} public rows "
            "or a prior (mean_bound= and cov_bounds=) to localise the data (a zCDP release "
            "cannot find an unbounded location): give public_X, or mean_bound= and "
            "cov_bounds=, or pass epsilon= and delta="
        )
    else:
        from ..gaussian.histogram import localisation_plan

        assert isinstance(budget, ApproxDP)
        diagonal = _diagonal_frame(n, d, budget.epsilon, budget.delta)
        eps_l = (budget.epsilon if diagonal
                 else _localisation_epsilon(n, d, budget.epsilon, budget.delta))
        loc = ApproxDP(eps_l, budget.delta / 2)
        # histogram_gaussian(eps_l, δ/2) charges the joint histograms' ρ_h and δ_h, then its
        # refinement ρ_loc − ρ_h (all zCDP but δ_h): EM gets the ρ that the whole budget's
        # conversion with δ − δ_h leaves after ρ_loc (zCDP charges add up before converting)
        s_j, l_j, rho_loc = localisation_plan(n, d, eps_l, budget.delta / 2)
        joint = [b for b in (s_j, l_j) if b is not None]
        rho_hist = sum(b.rho for b in joint)
        hist = ApproxDP(_MIN_EPS * len(joint), sum(b.delta for b in joint))
        rho_ref = rho_loc - rho_hist
        if diagonal:  # the histograms alone (at ε: their need); the octave releases'
            # reserve a share of what is left (at 3 %, histogram_gaussian's, Tobacco's tied
            # column was read at 16 of 20 splits; at 6 %: 20; em_small_n.md); EM the rest
            rho_loc = approx_to_zcdp(budget.epsilon, budget.delta - hist.delta)
            rho_ref = (DIAG_TIE_SHARE + DIAG_WIDE_SHARE) * (rho_loc - rho_hist)
            rho_loc = rho_hist + rho_ref
        rho_em = approx_to_zcdp(budget.epsilon, budget.delta - hist.delta) - rho_loc
    init_share, km_share, rw_share, score_share = (
        (LEAN_INIT, LEAN_KMEANS, LEAN_REWHITEN, LEAN_SCORE) if lean
        else (INIT_SHARE, KMEANS_SHARE, REWHITEN_SHARE, SCORE_SHARE))
    rho_rw = rw_share * rho_em if loc is not None else 0.0
    if rho_rw > 0 and _rewhiten_reach(n, d, rho_rw) > REWHITEN_REACH:
        rho_rw = 0.0  # its noise would bend the frame more than it straightens it
    rho_init = init_share * rho_em
    rho_km = km_share * rho_em
    rho_spread = KMEANS_MOMENT_SHARE * rho_km
    km_steps = tuple([(rho_km - rho_spread) / KMEANS_STEPS] * KMEANS_STEPS)
    rho_count = COUNT_SHARE * rho_em
    rho_score = score_share * rho_em  # dropped below when a single run needs no pick
    rho_final = FINAL_SHARE * rho_em
    rho_atoms = ATOM_SHARE * rho_em
    rest = rho_em - rho_rw - rho_init - rho_km - rho_score - rho_count - rho_final - rho_atoms
    p, m = _grid(n, d, rho_init)
    T = _n_steps(n, d, k, rest, p == d) + extra_steps if n_steps is None else int(n_steps)
    n_starts = N_STARTS if T >= 2 else 1
    if n_starts == 1:
        rest, rho_score = rest + rho_score, 0.0
    last = LAST_SHARE * rest if T > 1 else rest
    steps = tuple([(rest - last) / (T - 1)] * (T - 1) + [rest - (rest - last)]) if T > 1 else (
        rest,)
    if 0 < reduce_steps < T:
        post = (1.0 - OVER_SHARE) * rest
        tail = [post] if reduce_steps == 1 else (
            [0.5 * post / (reduce_steps - 1)] * (reduce_steps - 1) + [post - 0.5 * post])
        steps = tuple([(rest - post) / (T - reduce_steps)] * (T - reduce_steps) + tail)
    plan = EMPlan(budget, loc, hist, rho_ref, rho_init, steps, p, m, clip_radius(n, d),
                  rho_prior, 0.0 if loc is None else rho_hist, km_steps, rho_spread, rho_rw,
                  3.0 * math.sqrt(d), n_starts,
                  max(1, int(T // explore_div)) if n_starts > 1 else 0,
                  rho_score, 2.0 * d + 10.0, rho_count=rho_count, rho_final=rho_final,
                  final_candidates=3 if n_public >= max(d + 1, k) else 2, rho_atoms=rho_atoms,
                  diagonal=loc is not None and diagonal)
    radii = tuple(step_radius(n, d, k, plan.stat_rhos(t)[2], _tail(plan, t, refine_tail))
                  for t in range(T))
    plan = dataclasses.replace(plan, step_radii=radii)
    plan = dataclasses.replace(plan, start_clusters=_start_clusters(n, d, k, plan))
    first = plan.explore_steps if n_starts > 1 else 0  # after the pick: one run
    quiet = first < T and _stop_gate(plan, first, n, d, k)
    # FREEZE_PLAIN: the wide plan's freeze gate (:func:`_wide_plan`) in a three-run plan
    freeze = (FREEZE_PLAIN and n_starts > 1 and n_steps is None
              and _noise_change(plan, 0, n, d, k) <= STOP_NOISE * FREEZE_TOL)
    return dataclasses.replace(plan, stop_from=first if quiet and n_steps is None else None,
                               freeze=freeze)


def _rewhiten_reach(n: int, d: int, rho_rw: float) -> float:
    """The re-whitening's noise reach (public): about the spectral norm, 2√d·σ_M/n, of the
    noise on its released second moment of the z-rows (radius 3√d, its ``rho_rw`` split by
    ``REWHITEN_SUM_SHARE``) — how far it can bend a variance of the frame, where the data's
    is about 1. Above ``REWHITEN_REACH`` the plan has no re-whitening (the histograms' frame
    stands; its ρ goes to the EM steps): at ε = 1 and the smallest n em accepts, d = 3–13,
    it is 2.0–4.1 (Benefits, 3,901 × 7: 3.0, about 0.6 per entry — eigenvalues clipped at
    0.05 bent the frame, and its single Gaussian, the final pick's candidate, scored 4–8
    nat/row below a poor EM fit in the pick; ``benchmarks/results/em_small_n.md``);
    n = 5e4, ε = 1: 0.02 (d = 2) to 0.52 (d = 15), re-whitened as before."""
    r = 3.0 * math.sqrt(d)
    rho_m = _rewhiten_split(rho_rw)[1]
    return 2.0 * math.sqrt(d) * soft_outer_sums_frobenius(r) / math.sqrt(2.0 * rho_m) / n


def _noise_change(plan: EMPlan, t: int, n: int, d: int, k: int, at_r0: bool = False) -> float:
    """The change (KL per row, as :func:`_model_change` measures it) that step t's noise
    alone makes in a model of k equal components (public): in a component's frame its mean
    moves by σ_S/n_j per coordinate and its covariance by σ_M/n_j per diagonal entry
    (σ_M/(√2 n_j) off it), n_j = n/k, and KL(N(0, I) ‖ N(δ, I + E)) ≈ ½‖δ‖² + ¼‖E‖²_F; the
    weights add ½k²(σ_N/n)². n = 5e4, d = 10, k = 3: 0.08 at ε = 1, 1.5e-3 at ε = 10,
    1.7e-6 at ε = 1e4 (measured there: the released change settles at 0.8–1.5e-6 per step).
    A change ≤ ``STOP_TOL`` with this noise ≤ ``STOP_NOISE``·``STOP_TOL`` leaves EM's own
    move at most (1 + √``STOP_NOISE``)² ≈ 5.8 × ``STOP_TOL`` (the noise can cancel part of
    it; ``STOP_NOISE`` was 0.5, 2.9×, before session 51: at 2 the stop and the freeze open at
    ε ≈ 300 instead of 1e3–1e4 at n = 5e4, d = 10, k = 3 — 2.5–3.0× scikit-learn's CPU →
    1.2–1.7× there, every held-out gap within 1e-4, generated families at ε = 10–1000 within
    1e-3, ``benchmarks/results/em_speed.md``). ``at_r0``: at a radius of at least r₀
    (:func:`clip_radius`) — the public warnings
    and requirements (:func:`noise_cost`, :func:`em_requirements`) stay where they were
    before refining steps clipped below r₀ (``REFINE_TAIL``): de-clipping rows clipped
    there amplifies the noise, which this count leaves out."""
    r = plan.step_radius(t)
    if at_r0:
        r = max(r, clip_radius(n, d))
    rc, rs, rm = plan.stat_rhos(t)
    nj = n / k
    s_n = soft_counts_l2() / math.sqrt(2.0 * rc) / n
    s_s = soft_sums_l2(r) / math.sqrt(2.0 * rs) / nj
    s_m = soft_outer_sums_frobenius(r) / math.sqrt(2.0 * rm) / nj
    return 0.5 * d * s_s**2 + d * (d + 1) / 8.0 * s_m**2 + 0.5 * k * k * s_n**2


def _quiet(plan: EMPlan, t: int, n: int, d: int, k: int) -> bool:
    """Whether step t's noise alone moves a model by at most ``STOP_NOISE`` × ``STOP_TOL``
    (public): where the stopping rule reads the released changes as they are."""
    return _noise_change(plan, t, n, d, k) <= STOP_NOISE * STOP_TOL


def _stop_gate(plan: EMPlan, first: int, n: int, d: int, k: int) -> bool:
    """Whether the plan may stop from step ``first`` (public): where it is :func:`_quiet`,
    or with ``STOP_SPAN`` where that step's noise is at most ``STOP_NOISE`` × ``FREEZE_TOL``
    and the last step's at most ``STOP_NOISE`` × ``STOP_TOL`` (:func:`_span_stop`)."""
    if _quiet(plan, first, n, d, k):
        return True
    return (STOP_SPAN > 0
            and _noise_change(plan, first, n, d, k) <= STOP_NOISE * FREEZE_TOL
            and _noise_change(plan, plan.n_steps - 1, n, d, k) <= STOP_NOISE * STOP_TOL)


def _span_stop(span_change: float, noise: float) -> bool:
    """The stop of a plan whose refining steps are too noisy for :func:`_converged`
    (post-processing of released models): ``span_change``, the change (:func:`_model_change`)
    over the last ``STOP_SPAN`` = m refining steps, less twice a step's noise change
    (``noise``, public: two models' noises), is at most m²(1 − ``STOP_RATE``)·``STOP_TOL``. EM
    drifting by a per step moves the model by about m²·a over m steps while the noise's part
    stays bounded (the refining releases are averaged, :func:`_combine`), so a slow EM hidden
    in one step's noise shows over the span; a stop leaves EM at most a/(1 − ``STOP_RATE``)
    = ``STOP_TOL`` to go."""
    m = STOP_SPAN
    return span_change - 2.0 * noise <= m * m * (1.0 - STOP_RATE) * STOP_TOL


def _excess(change: float, noise: float) -> float:
    """An exploring run's released change (:func:`_model_change`) less ``NOISE_FREEZE`` × the
    change its step's noise alone makes (``noise``: :func:`_noise_change`, public), at least 0:
    the part of it read as EM's own move (post-processing), which the freeze tests at
    ``FREEZE_TOL``. Noise adds to a step's move in expectation (E‖a + e‖² = ‖a‖² + E‖e‖²), and
    in a settled run it is counted about twice (this step's noise and EM pulling back the
    last one's): at ε = 100 no run could freeze otherwise (a step's noise 2e-4–2e-3 against
    the (1 − ``STOP_RATE``)·``FREEZE_TOL`` = 1e-4 a noise-led change needs), and runs that
    neither froze nor met another explored every step. Exploring steps only: a refining
    step's release is averaged with the last (:func:`_combine`), its change is not the
    noise's plus EM's, and a stop read this way lost 5e-4–8e-4 nat/row at n = 5e4, d = 10,
    k = 3, ε = 100 (``benchmarks/results/em_speed.md``, midspeed). ``NOISE_FREEZE`` = 0: the
    change itself."""
    return max(change - NOISE_FREEZE * noise, 0.0) if NOISE_FREEZE > 0 else change


def _model_change(old: Run, new: Run, factors: tuple[np.ndarray | None, np.ndarray | None]
                  = (None, None)) -> float:
    """How far one EM step moved a run (post-processing of released models): Σ_j w_j
    KL(N(μ_j, Σ_j) ‖ N(μ'_j, Σ'_j)) + KL(w ‖ w'), an upper bound on the KL divergence per
    row between the old and the new mixture (nat/row, the unit of scikit-learn's ``tol`` on
    the log-likelihood's change). ``factors``: the old and the new covariances' Cholesky
    factors where they are carried (:attr:`EMPlan.factored`; None: from the covariances)."""
    w0, m0, c0 = old
    w1, m1, c1 = new
    d = m0.shape[1]
    f0, f1 = factors
    total = float(np.sum(w0 * (np.log(w0) - np.log(w1))))
    try:  # the components' factors and solves stacked (each as alone), summed in order
        L1 = np.linalg.cholesky(c1) if f1 is None else f1
        A = np.linalg.solve(L1, np.linalg.cholesky(c0) if f0 is None else f0)
        B = np.linalg.solve(L1, (m1 - m0)[:, :, None])[:, :, 0]
    except np.linalg.LinAlgError:  # a released covariance that is not numerically PD
        return math.inf
    # each component's term by stacked reductions (each the 2-D one's value bit for bit:
    # ‖A_j‖²_F as np.sum(A_j·A_j), ‖b_j‖² as b_j @ b_j), added in order as before; ln|Σ0| −
    # ln|Σ1| (|·|: a carried factor's diagonal is positive up to rounding)
    logdet = 2.0 * np.log(np.abs(np.diagonal(A, axis1=1, axis2=2))).sum(axis=1)
    bb = (B[:, None, :] @ B[:, :, None])[:, 0, 0]
    for term in (0.5 * w0 * ((A * A).sum(axis=(1, 2)) - d + bb - logdet)).tolist():
        total += term
    # ≥ 0 in exact arithmetic; rounding can leave −1e-16 between near-equal models
    return max(total, 0.0) if math.isfinite(total) else math.inf


def _runs_within(a: Run, b: Run, tol: float,
                 factors: tuple[np.ndarray | None, np.ndarray | None] = (None, None)) -> bool:
    """Whether two runs' models are within ``tol`` of each other (post-processing of released
    models or of starts): b's components matched to a's by their means (nearest pairs, any
    matching gives a bound), both directions of :func:`_model_change`'s KL bound per row at
    most ``tol``. A cheap lower bound of it, Σ_j w_j·½‖Δμ_j‖²/tr Σ_j, rejects far pairs first.
    ``factors``: a's and b's carried Cholesky factors (None: from the covariances)."""
    from scipy.optimize import linear_sum_assignment

    (wa, ma, ca), (wb, mb, cb) = a, b
    if wa.shape != wb.shape:
        return False
    D = ((ma[:, None, :] - mb[None, :, :]) ** 2).sum(axis=2)
    if not np.isfinite(D).all():
        return False
    _, perm = linear_sum_assignment(D)
    sq = D[np.arange(len(perm)), perm]
    tr = np.minimum(np.trace(ca, axis1=1, axis2=2), np.trace(cb[perm], axis1=1, axis2=2))
    with np.errstate(all="ignore"):
        low = float(np.sum(np.minimum(wa, wb[perm]) * 0.5 * sq / tr))
    if not low <= tol:
        return False
    fa, fb = factors
    bp = (wb[perm], mb[perm], cb[perm])
    fbp = None if fb is None else fb[perm]
    # both directions within tol (the second only when the first is: the same answer as
    # max(…) ≤ tol, neither is NaN)
    return (_model_change(a, bp, (fa, fbp)) <= tol
            and _model_change(bp, a, (fbp, fa)) <= tol)


def _collapsed(run: Run, tol: float, factors: np.ndarray | None = None) -> bool:
    """Whether every component of a run is within ``tol`` of its first, both directions of
    the KL divergence between the two Gaussians (post-processing of a released model or
    start; ``factors``: carried Cholesky factors, None: from the covariances). Components
    that coincide exactly are a fixed point of EM (equal densities: responsibilities equal
    to the weights, every component the same update), so such a run only moves as far as
    the noise breaks the tie."""
    w, mu, cov = run
    if w.shape[0] < 2:
        return False
    ones = np.ones(1)
    first = (ones, mu[:1], cov[:1])
    f0 = None if factors is None else factors[:1]
    for j in range(1, w.shape[0]):
        other = (ones, mu[j : j + 1], cov[j : j + 1])
        fj = None if factors is None else factors[j : j + 1]
        if not (_model_change(first, other, (f0, fj)) <= tol
                and _model_change(other, first, (fj, f0)) <= tol):
            return False
    return True


def _merge_runs(runs: list[Run], facs: list[np.ndarray | None], active: list[bool],
                changed: list[int], tol: float) -> list[int]:
    """The active runs to freeze because their model is within ``tol``
    (:func:`_runs_within`) of another run's, active or frozen (post-processing of released
    models): of a close pair, the run with the larger index (a frozen run stays frozen; the
    one it waits for carries on). Only pairs with a run in ``changed`` (moved this step) are
    compared."""
    out: list[int] = []
    for c in sorted(changed):
        if not active[c]:
            continue
        for o in range(len(runs)):
            if o == c or (o > c and not active[o]) or o in out:
                continue
            if not active[o] or o < c:
                if _runs_within(runs[o], runs[c], tol, (facs[o], facs[c])):
                    out.append(c)
                    active[c] = False
                    break
            elif _runs_within(runs[c], runs[o], tol, (facs[c], facs[o])):
                out.append(o)
                active[o] = False
    return out


def _cell_start(plan: EMPlan, d: int, kf: int) -> bool:
    """Whether the histogram start is the cells' mixture (:func:`~privgauss.mixture.em_starts.
    cell_gmm_start`; public): with ``CELL_START`` > 0, in a plain plan — the k-means start
    beside the histogram and whitened-frame starts (``N_STARTS`` runs, K' = k, not
    over-parameterised) — whose start grid misses at most ``CELL_GATE_SLACK`` directions
    (famd6: 1; the mixture's cells are blobs of the frame's unit variance along the unseen
    direction). The plan and its ledger are unchanged: the start is post-processing of the
    released cells. It closes as the budget grows where the steps turn quiet: the summary
    start (K' > k) or a wide plan takes over (at slack 1, ε = 1e4, two shapes of n = 2000,
    d = 7 stay open, and one of n = 2000, d = 6 as before). Since ``SUMMARY_NOISE`` = 0.1
    (session 52) that is every ε = 1 plain plan at n = 5e4, where it was measured (d ≤ 6);
    it stays at ε = 1 where the steps are loud and the plan has no k' run (n ≤ 2e4 at d ≤ 4,
    e.g. n = 4000, d = 3). Beside the summary start it was measured and left out: fresh
    families at ε = 1 / 3 / 10, 8 / 1 / 0 wrong of 214 / 65 / 70 fits against the summary
    start alone's 7 / 3 / 0, but the photo's pixels (china, k = 4, n = 54,656) 12 of 12 seeds
    in a basin 0.06–0.10 nat/row below scikit-learn's against 6 of 12 (``mixture_families.md``,
    "Session 52")."""
    return (CELL_START > 0 and plan.n_starts == N_STARTS and bool(plan.rho_kmeans_steps)
            and plan.start_clusters <= kf and not plan.components
            and plan.grid_dims >= d - CELL_GATE_SLACK)


def _start_clusters(n: int, d: int, k: int, plan: EMPlan) -> int:
    """K' (public): the summary start's Lloyd clusters, ``OVERCLUSTER``·k at most and no more
    than leave an average cluster 4× the count at which a Lloyd step moves it (each cluster's
    mean needs n/K' rows above its sums' noise); k (the k-means start) when that leaves no
    room, or when the first EM step's noise alone moves a model by more than
    ``SUMMARY_NOISE`` nat/row (:func:`_noise_change`): the summary start's better basin is
    kept only by quiet steps (issue 27; noisier steps left it and the k-means start did
    better — ε = 1: the families' first-step noise is 0.003–3, the pixels' 0.013;
    ε = 1e4: ≤ 4e-5). ``SUMMARY_NOISE`` was 1e-4: generated families 3 and 4 (their better
    basin only from the summary start) were 0.44 and 0.168 below sklearn at ε = 100, and 4
    at ε = 1000 (its first step moved a model by 1.1e-4 there); at 1e-3 all three fits reach
    sklearn's optimum, and no ε = 1 plan of the families 0–49 and 1070–1169 or of the
    corpus' shapes changes (``benchmarks/results/em_mid_steps.md``). At 1e-2 (session 51):
    ε = 100 at n = 5e4 had plain three-run plans with neither the over-parameterised run
    (noisier budgets) nor this start (first-step noise 1e-3–3.5e-3 at d = 11–15), 4 of 60
    families wrong at ε = 100 and none at 10 or 1000 — 0 of 60 at 1e-2 on fresh families
    (``benchmarks/results/mixture_families.md``, "Session 51"). At 0.1 = ``OVER_NOISE``
    (session 52) no plain plan falls between this start and the over-parameterised run: held
    out, the ε = 1 fits whose plan it changes went 11 → 5 wrong of 96 (families 12192–12343)
    and 4 → 2 of 118 (12347–12540), ε = 3 2 → 3 of 65, ε = 10 3 → 0 of 70; the photo's pixels
    at k = 4 and the real tables about as before (``mixture_families.md``, "Session 52")."""
    if not plan.rho_kmeans_steps or not plan.step_radii:
        return k
    if _noise_change(plan, 0, n, d, k) > SUMMARY_NOISE:
        return k
    rs = plan.kmeans_rhos(0)[1]
    move = 2.0 * math.sqrt(d) * soft_sums_l2(1.0) / math.sqrt(2.0 * rs)
    return int(max(k, min(OVERCLUSTER * k, math.floor(n / (4.0 * move)))))


def em_requirements(n: int, d: int, k: int, budget: Budget, *, min_weight: float | None = None,
                    n_public: int = 0, prior: bool = False) -> Requirements:
    """What n ``method="em"`` needs (practical, public quantities only): the histogram
    localisation's n (without public rows or a prior: from that n on the diagonal frame's
    joint histograms stay within their cap at (ε, δ/2), :func:`_diagonal_frame` — or, with
    ``DIAGONAL_FRAME`` off, the refined route keeps its margins within ``LOC_SHARE_SMALL``
    of ε, :func:`_localises`; ε = 1, δ = 1e-6: n ≈ 980 / 1,212 / 1,580 / 1,888 / 2,152 /
    2,608 at d = 2 / 3 / 5 / 7 / 9 / 13, where the refined route asked 1,204 / 1,672 /
    2,664 / 3,760 / 4,944 / 7,552), enough rows per component for the last step's
    covariance noise to be ≤ ½ of a unit-variance component's (rows per component ≥ 2σ_M),
    and the start's rows per component (:func:`_start_rows`; at ε = 1 it binds from d = 7:
    k = 3 asks 2,126 / 2,734 / 3,949 at d = 7 / 9 / 13 — past it the corpus' d = 9–10
    tables fitted 0.5–1.2 nat/row worse than one Gaussian, ``em_small_n.md``)."""
    return _requirements(n, d, k, budget, min_weight, n_public, prior, over=True)


def _requirements(n: int, d: int, k: int, budget: Budget, min_weight: float | None,
                  n_public: int, prior: bool, over: bool) -> Requirements:
    """:func:`em_requirements`; ``over=False``: of the plan for k fitted components without
    over-parameterising it (what :func:`_over_components` asks of k')."""
    w = 1.0 / k if min_weight is None else float(min_weight)
    terms: dict[str, float] = {}
    knobs: dict[str, Any] = {}
    localised = n_public >= d + 1 or prior
    if isinstance(budget, ZCDP) and not localised:
        terms["public rows or a prior for a zCDP budget"] = math.inf
        knobs["public rows"] = (f">= {d + 1} (or mean_bound= and cov_bounds=, or an "
                                "(epsilon, delta) budget)")
    if not localised and isinstance(budget, ApproxDP):
        # the n from which the practical localisation meets its margins within the largest
        # share of ε it may take (:func:`_localises`), or below it the diagonal frame's
        # histograms stay within their cap (:func:`_diagonal_frame`; more rows only help)
        eps, delta = budget.epsilon, budget.delta

        def works(m: int) -> bool:
            return (_localises(m, d, LOC_SHARE_SMALL * eps, delta / 2)
                    or _diagonal_frame(m, d, eps, delta))

        lo, hi = 2, 2
        while not works(hi) and hi < 10**12:
            lo, hi = hi, hi * 2
        while hi - lo > max(1, lo // 200):
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if not works(mid) else (lo, mid)
        terms["histogram localisation"] = float(hi)
    plan_budget = budget if not (isinstance(budget, ZCDP) and not localised) else None
    if plan_budget is not None:
        make = em_plan if over else _base_plan
        plan = make(max(n, 2), d, k, plan_budget, n_public=n_public, prior=prior)
        rho_m = plan.stat_rhos(plan.n_steps - 1)[2]
        r_last = max(plan.step_radius(plan.n_steps - 1), clip_radius(max(n, 2), d))  # as
        sigma_m = soft_outer_sums_frobenius(r_last) / math.sqrt(2.0 * rho_m)  # noise_cost
        terms["rows per component (last-step noise)"] = 2.0 * sigma_m / w
    terms["rows per component (start)"] = _start_rows(d, budget) / w
    return report("em", n, terms, "practical", knobs,
                  "practical thresholds of this implementation (no separation assumed)")


def _start_rows(d: int, budget: Budget) -> float:
    """Rows per component the start and the early EM steps need: max(d + 1,
    40·max(d, 3)·ρ^{-1/4}) (ρ the whole budget as zCDP; d + 1 rows give a full covariance).
    Measured (k = 2, prior localisation, 4 noise seeds; a fit "breaks" when its held-out
    log-likelihood falls several to thousands of nat/row below scikit-learn's): d = 3 breaks
    at ρ = 0.5, n = 200; ρ = 10 and 100, n = 50; ρ = 1000, n = 20; sane at ρ = 10–100,
    n = 200; ρ = 1000, n = 50; ρ = 1e4, n = 20–50 (asked: 285, 135, 76, 43, 24 rows). d = 5,
    ρ = 100: breaks at n = 60, sane at 130 (asked 126). d = 1, ρ = 0.5: breaks at n = 200,
    sane at 300 (asked 285)."""
    rho = zcdp_of(budget, "em") if isinstance(budget, ZCDP) or has_delta(budget) else math.inf
    return float(max(d + 1.0, 40.0 * max(d, 3) * rho ** -0.25))


# ----------------------------------------------------------------------------------------------
# Per-block kernels (module level: picklable to dask workers)
# ----------------------------------------------------------------------------------------------


def _moment_kernel(B: np.ndarray, radius: float) -> tuple[np.ndarray, np.ndarray]:
    """(Σ y, Σ y yᵀ) over a block, y = clip_r(z)."""
    Y = np.where(np.isfinite(B), B, 0.0)
    Y = Y * clip_weights(Y, radius)[:, None]
    return Y.sum(axis=0), Y.T @ Y


EM_SUB_ROWS = 4096  # rows per sub-block of the EM kernel: its temporaries are allocated once
EM_BLOCK_ROWS = 1 << 16  # rows per kernel call (one workspace for all its sub-blocks)


class _Workspace:
    """The EM kernel's temporaries for sub-blocks of ``rows`` rows and models of k components in
    d dimensions, allocated once and reused by every sub-block (and by the thread's next
    call, :func:`_workspace`): fresh arrays of a few hundred kB for every operation made the
    kernel page-fault more than it computed (2.7x slower than with reused buffers). Rows run
    along the last axis (a component's or coordinate's values contiguous): every per-row
    operation is then one long elementwise loop (row-major (rows, k) arrays made numpy
    broadcast with inner loops of length k or d; this layout, the shift folded into the frame
    product and M_j as a symmetric product took six models over 5e4 rows, d = 10, k = 3, from
    36.9 to 27.0 ms CPU)."""

    def __init__(self, rows: int, k: int, d: int) -> None:
        self.B1 = np.ones((d + 1, rows))  # a sub-block's rows, transposed, and a row of ones
        self.Y, self.V = np.empty((k * d, rows)), np.empty((k * d, rows))
        self.q, self.R = np.empty((k, rows)), np.empty((k, rows))
        self.w, self.Rw, self.s = (np.empty((k, rows)) for _ in range(3))
        self.top, self.tot = np.empty(rows), np.empty(rows)
        self.ones = np.ones(rows)
        self.shape = (rows, k, d)


WORKSPACE_KEEP = 1 << 23  # bytes: a thread keeps its last workspace up to this size
_workspaces = threading.local()


def _workspace(rows: int, k: int, d: int) -> _Workspace:
    """A :class:`_Workspace` for this thread, the previous call's when it has the same shape:
    a fit's passes (one kernel call each at n ≤ ``EM_BLOCK_ROWS``) then page-fault its
    buffers in once (a fresh 2.9 MB workspace cost ~1 ms a call at d = 10, k = 3, 5e4 rows:
    5.5 → 4.4 ms for one model; an ε = 1e4 fit makes ~50 calls). Every buffer is written
    before it is read (``B1``'s last row, the ones, is never written). Only workspaces of
    at most ``WORKSPACE_KEEP`` bytes are kept (k = 32, d = 9 would hold 20 MB); one per thread
    (dask's threaded workers run kernels at once), never shared."""
    ws = getattr(_workspaces, "ws", None)
    if ws is not None and ws.shape == (rows, k, d):
        return ws
    ws = _Workspace(rows, k, d)
    _workspaces.ws = ws if 8 * rows * (2 * k * d + 5 * k + d + 4) <= WORKSPACE_KEEP else None
    return ws


def _em_kernel(B: np.ndarray, models: tuple[Model, ...], radius: float, bound: float = 0.0,
               stats: bool = True, trim: float = math.inf, regret: bool = False
               ) -> tuple[np.ndarray, ...]:
    """Each model's (Σ r_ij, Σ r_ij y_ij, Σ r_ij y_ij y_ijᵀ) over a block, y_ij =
    clip_r(L_j^{-1}(z_i − μ_j)), stacked over the models (one pass advances every run); with
    ``bound`` > 0 also each model's Σ_i clip(log p(z_i) − log φ(z_i), ±bound) (φ the frame's
    standard normal; a row the model cannot score counts 0) — with ``regret`` instead each
    model's Σ_i max(log p(z_i) − max_c log p_c(z_i), −bound), the row's regret to the best of
    the models capped (a row a model cannot score: −bound; one no model can score: 0): the
    run pick and the winner's next step share the pass. ``stats=False`` (with ``bound`` > 0):
    the scores alone, as a 1-tuple — each model's score bit for bit the one the full kernel
    gives (the same operations on the same sub-blocks; the statistics' part of a sub-block
    only reads them), at ~40 % of the cost. ``trim`` (:func:`_trim_radius`): a row farther
    than this from every component (each in its own frame) gets responsibility 0 in the
    statistics, not in the scores. Nothing here is released. The block is processed in
    sub-blocks of ``EM_SUB_ROWS`` rows in one :class:`_Workspace`."""
    n, d = B.shape
    k = models[0][0].shape[0]
    m = len(models)
    acc = [np.zeros((m, k)), np.zeros((m, k, d)), np.zeros((m, k, d, d)), np.zeros(m)]
    ws = _workspace(min(n, EM_SUB_ROWS), k, d)
    # each model's stacked [L_j^{-1} | −L_j^{-1}μ_j] (k·d × d+1): one product gives the rows in
    # every component's frame
    stacked = [(np.concatenate([Linv.reshape(k * d, d),
                                -np.einsum("jed,jd->je", Linv, mu).reshape(k * d, 1)], axis=1),
                ln) for mu, Linv, ln in models]
    with np.errstate(all="ignore"):
        for a in range(0, n, EM_SUB_ROWS):
            Bs = B[a : a + EM_SUB_ROWS]
            ws.B1[:d, : len(Bs)] = Bs.T
            ref = (-0.5 * np.einsum("ij,ij->i", Bs, Bs) - 0.5 * d * math.log(2 * math.pi)
                   if bound > 0 else None)
            logp = np.empty((m, len(Bs))) if ref is not None and regret else None
            for c, model in enumerate(stacked):
                _em_densities(len(Bs), model, ws)
                if stats:
                    _em_sub_block(len(Bs), model, radius, ws, [x[c] for x in acc[:3]], trim)
                if logp is not None:
                    logp[c] = ws.top[: len(Bs)] + np.log(ws.tot[: len(Bs)])
                elif ref is not None:  # log p(z_i) − log φ(z_i), clipped; NaN (none): 0
                    v = ws.top[: len(Bs)] + np.log(ws.tot[: len(Bs)]) - ref
                    acc[3][c] += np.clip(np.where(np.isfinite(v), v, 0.0), -bound, bound).sum()
            if logp is not None:  # each row's regret to the best model, capped
                ok = np.isfinite(logp)
                best = np.max(np.where(ok, logp, -np.inf), axis=0)
                scored = np.isfinite(best)
                gap = np.where(ok & scored, logp - np.where(scored, best, 0.0), -bound)
                gap[:, ~scored] = 0.0
                acc[3] += np.maximum(gap, -bound).sum(axis=1)
    if not stats:
        return (acc[3],)
    return tuple(acc) if bound > 0 else tuple(acc[:3])


def _em_densities(n: int, model: tuple[np.ndarray, np.ndarray], ws: _Workspace) -> None:
    """One model's rows in every component's frame and their log-sum-exp over the first n rows
    in the workspace ``ws`` (``ws.B1``: the rows, transposed, over a row of ones): ``ws.Y``
    the frames (one product with the stacked [L_j^{-1} | −L_j^{-1}μ_j]), ``ws.q`` their squared
    norms, ``ws.R`` exp(log N(z_i; μ_j, Σ_j) + log π_j − top_i), ``ws.top`` the largest
    exponent and ``ws.tot`` the sum over the components (a row's log density is top + log tot).
    A component whose Y has a non-finite value or an overflowing square cannot score the row
    (its frame zeroed, q = ∞: R = 0) — a per-record map."""
    T1, log_norm = model
    k = log_norm.shape[0]
    d = T1.shape[0] // k
    Yf = np.matmul(T1, ws.B1[:, :n], out=ws.Y[:, :n])  # (k·d, n)
    Y = Yf.reshape(k, d, n)
    q = np.einsum("jdi,jdi->ji", Y, Y, out=ws.q[:, :n])
    if not np.isfinite(q).all():
        bad = ~np.isfinite(q)
        Y.transpose(0, 2, 1)[bad] = 0.0
        q[bad] = np.inf
    # softmax over the components of log N(z_i; μ_j, Σ_j) + log π_j: its exponentials
    R = np.multiply(q, -0.5, out=ws.R[:, :n])
    R += log_norm[:, None]
    top = np.maximum.reduce(R, axis=0, out=ws.top[:n])
    R -= top
    np.exp(R, out=R)
    np.add.reduce(R, axis=0, out=ws.tot[:n])


def _em_sub_block(n: int, model: tuple[np.ndarray, np.ndarray], radius: float,
                  ws: _Workspace, acc: list[np.ndarray], trim: float = math.inf) -> None:
    """Add one model's (N, S, M) over the first n rows to ``acc``, from the workspace ``ws``
    that :func:`_em_densities` filled for this model (frames, squared norms, exponentials).
    A row no component can score is spread evenly; a component that cannot score it clips
    it to 0 (its frame was zeroed). The clipping factor w = min(1, r'/‖Y‖) uses the
    squared norms the densities need, with clip_weights' margin r' = r(1 − 4(d + 2)ε) for
    their rounding; M_j sums V Vᵀ, V = √r_ij · w · Y (a symmetric product: the margin also
    covers the square root's and the products' roundings, ‖V‖² ≤ r_ij r²). A row whose
    squared norm exceeds ``trim``² in every component's frame is *trimmed*: its
    responsibilities are 0 (a point of the sub-simplex: the same sensitivities)."""
    T1, log_norm = model
    k = log_norm.shape[0]
    d = T1.shape[0] // k
    Y = ws.Y[:, :n].reshape(k, d, n)
    V = ws.V[:, :n].reshape(k, d, n)
    q, R, top = ws.q[:, :n], ws.R[:, :n], ws.top[:n]
    R /= ws.tot[:n]
    R[:, ~np.isfinite(top)] = 1.0 / k  # a row no component can score: spread evenly
    if trim < math.inf:  # beyond every component's trimming ball: no component's row
        R[:, np.min(q, axis=0) > trim * trim] = 0.0
    w = np.sqrt(q, out=ws.w[:, :n])
    np.divide(radius * (1.0 - 4.0 * (d + 2) * float(np.finfo(np.float64).eps)), w, out=w)
    np.minimum(w, 1.0, out=w)  # the clipping factors
    Rw = np.multiply(R, w, out=ws.Rw[:, :n])
    s = np.sqrt(R, out=ws.s[:, :n])
    s *= w
    np.multiply(Y, s[:, None, :], out=V)  # √r_ij w_ij Y_ij
    N, S, M = acc
    N += R @ ws.ones[:n]
    for j in range(k):
        S[j] += Y[j] @ Rw[j]
        M[j] += V[j] @ V[j].T


# ----------------------------------------------------------------------------------------------
# The learner
# ----------------------------------------------------------------------------------------------


def _frame(X: Any, P: np.ndarray | None, plan: EMPlan, release: Release,
           beta: float, constants: str, prior: EMPrior | None = None
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(m₀, W, W^{-1}): the whitening frame z = W(x − m₀): public (``P``), or released —
    CoinPress inside the user's ``prior`` (zCDP), else the bound-free histogram route."""
    if plan.localisation is None and plan.rho_prior_localisation == 0.0:
        from ..gaussian.public import public_preconditioner

        pre = public_preconditioner(P, beta, outliers=False)  # clusters are not outliers
        A = pre.cov_sqrt
        return pre.mean, np.linalg.inv(A), A
    if plan.localisation is None:
        from ..gaussian.coinpress import gaussian_of_rows as _coinpress_gaussian

        assert prior is not None  # the plan has a prior localisation only when given one
        mean, cov = _coinpress_gaussian(
            X, plan.rho_prior_localisation, center=prior.center, radius=prior.radius,
            cov_bounds=prior.data_cov_bounds,
            release=release.at("em localisation in the prior"),
            constants=constants, beta=beta)
    else:
        from ..gaussian.histogram import histogram_gaussian

        loc = plan.localisation
        # the practical (joint-histogram) route whatever ``constants``: em_plan assumes it
        mean, cov = histogram_gaussian(X, loc.epsilon, loc.delta, release=release,
                                       beta=beta, constants="practical")
    return _whitening(mean, cov)


def _whitening(mean: np.ndarray, cov: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(m₀, W, W^{-1}) of a released Gaussian (post-processing): W = C^{-1/2}, its
    eigenvalues floored at 1e-12 × the largest."""
    with np.errstate(all="ignore"):
        cov = sym(cov)
        w, V = np.linalg.eigh(cov)
        w = np.maximum(w, max(float(w[-1]), 1e-300) * 1e-12)
        W = (V / np.sqrt(w)) @ V.T
        Winv = (V * np.sqrt(w)) @ V.T
    return mean, W, Winv


def _rewhiten(Z: Any, plan: EMPlan, release: Release
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(m₁, W₁, W₁^{-1}): a second frame z' = W₁(z − m₁) from the released clipped mean and
    second moment of the z-rows (radius 3√d; one component of responsibility 1, so the soft
    statistics' sensitivities hold). The histogram localisation's covariance has little
    budget and was 0.5–10× off in variance on the synthetic benchmark; every later radius,
    grid and start assumes a frame where the data's covariance is near I."""
    n = int(Z.shape[0])
    R = plan.rewhiten_radius
    S, M = reduce_rows(Z, partial(_moment_kernel, radius=R))
    rs, rm = plan.rewhiten_rhos()
    acct, noise = release.accountant, release.noise
    if JOINT_STATS:  # together, charged once at their joint cost (no counts: n is public)
        _, Sn, Mn = soft_statistics_mechanism(None, S, M, R, (0.0, rs, rm), accountant=acct,
                                              noise=noise,
                                              step=release.name("em re-whitening statistics"))
    else:
        Sn = gaussian_mechanism(S, soft_sums_l2(R), ZCDP(rs), accountant=acct, noise=noise,
                                step=release.name("em re-whitening sums"))
        Mn = symmetric_matrix_mechanism(M, soft_outer_sums_frobenius(R), ZCDP(rm),
                                        accountant=acct, noise=noise,
                                        step=release.name("em re-whitening second moments"))
    mean = Sn / n
    mean *= min(1.0, R / max(float(np.linalg.norm(mean)), 1e-300))
    cov = Mn / n - np.outer(mean, mean)
    w, V = np.linalg.eigh(sym(np.nan_to_num(cov, nan=1.0)))
    w = np.clip(w, 0.05, R * R)  # released variances; the frame before was within a factor ~20
    return mean, (V / np.sqrt(w)) @ V.T, (V * np.sqrt(w)) @ V.T


def _model_terms(weights: np.ndarray, covs: np.ndarray, factors: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(Cholesky factors, their inverses, log(π_j) − ½ log det Σ_j − (d/2) log 2π); the
    factors are ``factors`` where they are carried (:attr:`EMPlan.factored`)."""
    k, d, _ = covs.shape
    L = np.linalg.cholesky(covs) if factors is None else factors
    Linv = np.array([np.linalg.inv(Lj) for Lj in L])
    logdet = 2.0 * np.log(np.diagonal(L, axis1=1, axis2=2)).sum(axis=1)
    log_norm = np.log(weights) - 0.5 * logdet - 0.5 * d * math.log(2 * math.pi)
    return L, Linv, log_norm


def _shrink(C: np.ndarray, s: float, strength: float = 1.0) -> np.ndarray:
    """James–Stein shrinkage of a released covariance ``C`` (the current component's frame,
    where the truth is near a multiple of I) towards tr(C)/d·I, given the noise's standard
    deviation ``s`` on a diagonal entry (s/√2 off it: the symmetric matrix mechanism): the
    noise adds ≈ s²(d − 1)(d + 2)/2 to ‖C − tr(C)/d·I‖²_F, so that much of the dispersion is
    taken back. Post-processing. Without it, a mid-step release whose
    noise (2s√d) is as large as the component's variances flattens an eigenvalue to the floor
    and the component dies (weight 0.10 → 0.001 in one step on the synthetic benchmark).
    ``strength`` < 1 takes back that fraction of the shrinkage only."""
    d = C.shape[0]
    mu = float(np.trace(C)) / d
    D = C - mu * np.eye(d)
    disp = float((D * D).sum())
    alpha = max(0.0, 1.0 - s * s * (d - 1.0) * (d + 2.0) / 2.0 / disp) if disp > 0 else 0.0
    alpha = 1.0 - strength * (1.0 - alpha)
    return sym(mu * np.eye(d) + alpha * D)


def _gain(energy: float, noise: float, prior: float) -> float:
    """The weight of a release against the previous estimate (post-processing): ``energy`` =
    ‖release − previous‖² (its innovation), ``noise`` its expected noise energy, ``prior``
    the previous estimate's expected error energy. The change EM itself makes is estimated
    from what the innovation holds beyond both, q = ``DRIFT_SHARE``·(energy − noise −
    prior)₊, and the release weighs (prior + q)/(prior + q + noise): a Kalman gain whose
    process noise is read from the innovation. Where EM moves far more than the noise (q
    large) or the noise vanishes, 1 (whatever the share: consistency); where the releases
    are noise about a settled estimate, the 1/t of an average of the steps' releases by
    their precisions; with prior = noise, at least ½ (a fresh estimate). With the whole
    excess as q (share 1) it is James–Stein's positive-part factor 1 − noise/energy.

    The share ½ (fam5, ``benchmarks/results/em_small_clusters.md``): one step's excess
    overstates EM's move — it holds the innovation's own fluctuation and whatever error the
    previous estimate has beyond its planned ``prior`` (the floors, the de-clipping's
    nonlinearity) — and a gain raised by it lets a 5-8 % component's shape take each
    refining release's noise. At ε = 1, n = 5e4 half of it left the small clusters' shapes
    closer: fam4's tuning families (d = 13-15) at noise seeds 0-3 14 of 20 fits better
    (mean gap 0.101 → 0.086), at seeds 4-7 15 of 20; held-out families 1380-1429 41 of the
    42 changed fits better (4 → 3 wrong). A drift carried over the steps (a running mean of
    the excess) was worse than the whole excess, and none at all (pure averaging) lost a
    structure (1303: 0.11 → 0.43)."""
    a = prior + DRIFT_SHARE * max(0.0, energy - noise - prior)
    return a / (a + noise) if a + noise > 0 else 1.0


def _combine(Cy: np.ndarray, ybar: np.ndarray, s_c: float, s_m: float, memory: np.ndarray
             ) -> tuple[np.ndarray, np.ndarray, float, float]:
    """One component's released covariance ``Cy`` and mean move ``ybar`` (its own frame, where
    the previous estimate is I and 0) combined with the previous estimate by :func:`_gain`
    (post-processing): the shape, Cy − tr(Cy)/d·I, by the second moments' noise ``s_c`` per
    diagonal entry (s_c/√2 off it: its energy s_c²(d − 1)(d + 2)/2, as :func:`_shrink`) and
    the previous shape's error variance ``memory[0]`` per entry (scaled by the new trace:
    errors are relative; NaN, a fresh estimate: as large as this release's noise relative
    to its scale, s_c²/μ² with μ = tr(Cy)/d — ``FRESH_RELATIVE``, see below); the scale,
    tr(Cy)/d, as released (its noise is √d × smaller); the mean by the sums' noise ``s_m``
    per coordinate and the previous mean's ``memory[1]``. Returns (covariance, mean move,
    their error variances after combining: gain × noise variance).

    Issue 27: at n = 5e4, ε = 1 a 5 % component in d = 15 gets second moments of noise
    s ≈ 0.5–0.8 per entry per refining step (spectral reach 2√d·s = 4–6 times its scale) and
    0.19 on the last; half of James–Stein's shrinkage towards the previous shape kept at
    least half of each step's noise, and no two releases were ever averaged. Here a settled
    component's releases are averaged by their precisions (8 pure-noise releases at d = 15
    leave 0.07–0.17 of one release's noise variance: the innovation's own fluctuation counts
    as q now and then, so not quite 1/t), and a component EM moves follows its releases.
    Used in the refining steps only (:func:`_em_steps`): in the exploring and
    over-parameterised steps it changed which basin the run pick and the reduction took
    (generated families 26 and 4: 0.007 → 0.287, 0.028 → 0.181). Measured in
    ``benchmarks/results/em_small_shapes.md``.

    *A fresh estimate* (the first refining step after the run pick or the reduction; session
    55): its error was s_c² per entry before the trace's scaling, i.e. the release's
    *absolute* noise read as a relative error, so a component narrower than its frame
    (μ < 1: a reduced component's stale shape, a small cluster inside a wide pooled one) got
    a prior μ⁻² times too precise and a gain far below ½ — family 15131 (k = 6, d = 15,
    ε = 1): its 5 % cluster at μ ≈ 0.4 took g = 0.14 of the first refining release, and its
    KL from the truth fell 11.5 → 6.9 → 5.0 → 3.4 → 2.7 → 1.24 over the five refining steps;
    at s_c²/μ² (the prior as good as the release: g ≥ ½) 11.5 → 6.5 → 4.3 → 2.8 → 2.3 → 1.0,
    gap 0.091 → 0.080. Where μ ≈ 1 nothing changes, and as the noise vanishes the gain is 1
    either way. Generated families at ε = 1 (14960–15439, noise seeds 0 and 1): 44 of 960
    fits changed, 29 better, mean −0.0013 nat/row; none crossed 0.05 either way."""
    d = Cy.shape[0]
    dim = (d - 1.0) * (d + 2.0) / 2.0
    mu = float(np.trace(Cy)) / d
    D = Cy - mu * np.eye(d)
    p_c = (s_c * s_c / max(mu * mu, 1e-300) if FRESH_RELATIVE else s_c * s_c) if math.isnan(
        float(memory[0])) else float(memory[0])
    g_c = _gain(float((D * D).sum()), s_c * s_c * dim, p_c * mu * mu * dim)
    p_m = s_m * s_m if math.isnan(float(memory[1])) else float(memory[1])
    g_m = _gain(float(ybar @ ybar), s_m * s_m * d, p_m * d)
    return (sym(mu * np.eye(d) + g_c * D), g_m * ybar, g_c * s_c * s_c, g_m * s_m * s_m)


def _floor(C: np.ndarray, s: float = math.inf) -> np.ndarray:
    """A released covariance in the current component's frame with its eigenvalues floored at
    f × their mean, f = min(``STEP_FLOOR``, 2√d·s/mean) for the noise's standard deviation
    ``s`` on an entry (2√d·s: the spectral norm the symmetric noise reaches): one EM step
    shrinks no direction by more than the noise could fake (noise flattened a 0.2-weight
    component's direction and it died), and as the noise vanishes so does the floor — a
    non-private EM step shrinks a direction as far as the rows say. Post-processing."""
    return _floor_batch(np.asarray(C, dtype=np.float64)[None], np.array([float(s)]))[0]


def _floor_batch(C: np.ndarray, s: np.ndarray) -> np.ndarray:
    """:func:`_floor` of a stack ``C`` (m × d × d) with its noise levels ``s`` (m,), each
    matrix bit for bit as in a stack of one (one stacked eigendecomposition: numpy's
    per-call overhead on d × d matrices was most of a step's flooring —
    ``tests/test_private_em.py`` checks stacks against single matrices). Post-processing."""
    if C.shape[0] == 0:
        return C.copy()
    w, V = np.linalg.eigh(sym(C))
    mean = np.mean(w, axis=1)
    d = C.shape[1]
    frac = np.full(mean.shape, STEP_FLOOR)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(mean > 0, np.minimum(STEP_FLOOR, 2.0 * math.sqrt(d) * s / mean), frac)
    return sym((V * np.maximum(w, (frac * mean)[:, None])[:, None, :]) @ np.swapaxes(V, 1, 2))


def _declip_cap(C: np.ndarray, r: float, s: float) -> np.ndarray:
    """A de-clipped covariance ``C`` in its component's frame with its eigenvalues capped at
    r²·max(1, ``STEP_FLOOR``/f)^``FLOOR_POWER``, f = 2√d·s for the step's noise ``s`` per
    entry (post-processing). Beyond variance r² along a direction most of the component's
    rows along it were clipped at r, the clipped moments barely move with the variance, and
    de-clipping noisy moments there reads noise as variance: issue 27, a 5 % component
    whose frame was 30× too narrow in one direction (n = 5e4, d = 10, ε = 1) was sent to
    de-clipping's cap (1e4·r²/d). One step grows a direction at most to the radius; the
    next step's frame is that much wider and sees it unclipped. The cap fades with the
    noise as :func:`_step_eig_floor`'s guard does."""
    return _declip_cap_batch(np.asarray(C, dtype=np.float64)[None], r, np.array([float(s)]))[0]


def _declip_cap_batch(C: np.ndarray, r: float, s: np.ndarray) -> np.ndarray:
    """:func:`_declip_cap` of a stack ``C`` (m × d × d) with its noise levels ``s`` (m,),
    each matrix bit for bit as alone (one stacked eigendecomposition; a matrix under its cap
    is returned as given). Post-processing."""
    out = np.array(C, dtype=np.float64, copy=True)
    if out.shape[0] == 0:
        return out
    d = out.shape[1]
    top = np.array([r * r / max(_guard_fade(float(x), d, FLOOR_POWER), 1e-300)
                    for x in np.asarray(s, dtype=np.float64).tolist()])
    lam, V = np.linalg.eigh(sym(out))
    over = np.flatnonzero(lam[:, -1] > top)
    if over.size:
        Vo = V[over]
        out[over] = sym((Vo * np.minimum(lam[over], top[over, None])[:, None, :])
                        @ np.swapaxes(Vo, 1, 2))
    return out


def _trim_radius(plan: EMPlan, t: int) -> float:
    """The trimming radius of EM step t (public; components' own frames): ``TRIM_FACTOR`` ×
    r_t in a wide plan (:attr:`EMPlan.factored`), ∞ otherwise (:func:`_em_sub_block`)."""
    if TRIM_FACTOR <= 0.0 or not plan.factored:
        return math.inf
    return TRIM_FACTOR * plan.step_radius(t)


def _step_eig_floor(s: float, d: int, factored: bool = False) -> float:
    """The eigenvalue floor of a component's covariance in the whitened frame after an EM step
    whose second-moment noise has standard deviation ``s`` per row of the component (its own
    frame), public: ``EIG_FLOOR``·min(1, f/``STEP_FLOOR``)^``FLOOR_POWER``, f = 2√d·s the
    noise's spectral reach relative to the component (as in :func:`_floor`), never below
    ``NUMERIC_FLOOR``. While f ≥ ``STEP_FLOOR`` the per-step floor of :func:`_floor` is capped
    and noise alone can shrink a direction by that factor step after step: the absolute
    guard EIG_FLOOR stands (the early steps at ε = 1 at the benchmark sizes). Below it one step
    shrinks a direction by no more than the noise's reach f, and a direction of true variance
    v settles near v/(1 + f) under the noise (about) instead of collapsing: the guard fades, and
    a component narrows onto a discrete value or a collinear pair as far as the rows say, as
    EM does. The former min(EIG_FLOOR, f²) pinned every component of movies (d = 22, f ≈
    0.05) and bfi (f ≈ 0.1) at 1e-3 for all but the last of 60 steps at ε = 1e4, and fair's
    parked component at f² (gaps 12.6, 0.94 and 1.08 nat/row to scikit-learn's best of 5;
    issue 27); a fixed 1e-3 kept tuna's fit 0.46 nat/row below it. Never below 1e-8 (with
    the cap 1e4, a condition number 1e12: the factors and the user's inverses stay
    accurate). ``factored`` (a wide plan's steps, :attr:`EMPlan.factored`): the fade's power
    is ``FACTOR_POWER`` and the least ``FACTOR_FLOOR`` — the covariance is carried by its
    Cholesky factor there (:func:`_factor_update`), which resolves eigenvalues far below
    float64's resolution of an O(1) matrix, so a component parks as thin as the rows say."""
    if factored:
        return max(EIG_FLOOR * _guard_fade(s, d, FACTOR_POWER), FACTOR_FLOOR)
    return max(EIG_FLOOR * _guard_fade(s, d, FLOOR_POWER), NUMERIC_FLOOR)


def _guard_fade(s: float, d: int, power: float) -> float:
    """min(1, f/``STEP_FLOOR``)^``power``, f = 2√d·s the spectral reach of a step's noise
    ``s`` per entry (public): 1 while the noise could shrink a direction by ``STEP_FLOOR`` in
    one step, falling to 0 with the noise — the fade of the step's eigenvalue floor
    (:func:`_step_eig_floor`) and of the de-clipping cap (:func:`_declip_cap`)."""
    return min(1.0, 2.0 * math.sqrt(d) * s / STEP_FLOOR) ** power


def _factor_update(Lj: np.ndarray, Cy: np.ndarray, lo: float | np.ndarray) -> np.ndarray:
    """The Cholesky factor of the step's new covariance L_j C L_jᵀ in the whitened frame, C
    = ``Cy`` (its own frame) repaired as :func:`repair_covariance` does, and the result's
    eigenvalues clipped to [``lo``, 1e4] through the factor's singular values (SVD of
    L_j·chol(C), then a QR back to a lower-triangular factor with a positive diagonal):
    what ``repair_covariance(L_j C L_jᵀ, lo)`` gives, without forming the O(1) matrix whose
    float64 entries cannot hold an eigenvalue below ~1e-16 of the largest (Chile's parked
    direction needs 1e-16, and a Cholesky of that matrix failed after spending). A stack
    of components (``Lj``, ``Cy``: m × d × d, ``lo``: m) at once, each bit for bit as alone
    (the step's k components by one call: issue 28's k = 32). Post-processing."""
    F = Lj @ np.linalg.cholesky(repair_covariance(Cy))
    U, sv, _ = np.linalg.svd(F)
    sv = np.clip(np.where(np.isnan(sv), 1.0, sv), np.sqrt(np.asarray(lo))[..., None], 100.0)
    _, R = np.linalg.qr(np.swapaxes(U * sv[..., None, :], -1, -2))
    sign = np.where(np.diagonal(R, axis1=-2, axis2=-1) < 0, -1.0, 1.0)
    return np.swapaxes(R, -1, -2) * sign[..., None, :]


def _lower_factors(covs: np.ndarray) -> np.ndarray:
    """Lower-triangular factors L (positive diagonal) with L Lᵀ = C of a stack of symmetric
    covariances: their Cholesky factors; where one fails (float64's rounding makes a matrix
    with eigenvalues ~1e-16 of its largest indefinite — a revived component of a parked run:
    generated family 1820 at ε = 1e4 failed after spending), from its eigenvalues floored at
    d·ε_mach of the largest, through a QR of its square root. Post-processing."""
    try:
        return np.linalg.cholesky(covs)
    except np.linalg.LinAlgError:
        return np.array([_lower_factor(C) for C in covs])


def _lower_factor(C: np.ndarray) -> np.ndarray:
    """:func:`_lower_factors` of one matrix."""
    try:
        return np.linalg.cholesky(C)
    except np.linalg.LinAlgError:
        w, V = np.linalg.eigh(sym(C))
        w = np.maximum(w, max(float(w[-1]), 1e-300) * C.shape[-1] * np.finfo(np.float64).eps)
        _, R = np.linalg.qr((V * np.sqrt(w)).T)
        sign = np.where(np.diagonal(R) < 0, -1.0, 1.0)
        return R.T * sign[None, :]


def _error_memory(lam: np.ndarray, var_c: float, var_m: float) -> tuple[float, float]:
    """A component's error variances (shape, mean) in the next frame's units: an error of
    variance v per entry in this frame has about v/h² there, h = d/tr(A⁻¹) the harmonic mean
    of the new estimate's variances ``lam`` (A's eigenvalues) in this frame (the directions
    it narrows weigh most). Post-processing."""
    h = lam.shape[0] / float(np.sum(1.0 / np.maximum(lam, 1e-300)))
    return var_c / h**2, var_m / h


@dataclass
class _Peaks:
    """Per component of a run, its largest released count so far (NaN: none since it was
    revived or split) and its mean and covariance in the model that count was measured
    under (released models; :func:`_restart`)."""

    count: np.ndarray
    means: np.ndarray
    covs: np.ndarray

    @classmethod
    def of(cls, k: int, d: int) -> _Peaks:
        return cls(np.full(k, np.nan), np.zeros((k, d)), np.zeros((k, d, d)))


@dataclass
class _RunStep:
    """One run's step for :func:`_em_release_runs`: its statistics ``stats`` = (N, S, M)
    computed under its model ``run`` (Cholesky factors ``L``), its ledger tag and the state
    its update reads and writes in place (``memory``, ``factors``, ``pool``: see
    :func:`_em_release`)."""

    stats: tuple[np.ndarray, np.ndarray, np.ndarray]
    run: Run
    L: np.ndarray
    tag: str = ""
    memory: np.ndarray | None = None
    factors: np.ndarray | None = None
    pool: list[Any] | None = None
    peaks: _Peaks | None = None


@dataclass
class _Pending:
    """A run between its releases and its update (:func:`_em_release_runs`)."""

    Nn: np.ndarray
    new_w: np.ndarray
    new_means: np.ndarray
    new_covs: np.ndarray
    mem: np.ndarray
    facs: np.ndarray | None
    inputs: list[tuple[int, float, np.ndarray, np.ndarray, float, float]]
    deferred: list[tuple[int, np.ndarray, float, float]]


def _em_release(stats: tuple[np.ndarray, np.ndarray, np.ndarray], run: Run, L: np.ndarray,
                plan: EMPlan, t: int, release: Release, n: int, run_tag: str = "",
                memory: np.ndarray | None = None, factors: np.ndarray | None = None,
                pool: list[Any] | None = None, peaks: _Peaks | None = None) -> Run:
    """Release one run's step-t statistics ``stats`` = (N, S, M) (computed by
    :func:`_em_kernel` under the run's current model, whose Cholesky factors are ``L``) and
    update the run from them (post-processing). ``memory`` (k × 2, updated in place; NaN:
    nothing known, as for a fresh start): each component's error variance per entry of its
    shape and per coordinate of its mean in its own frame, the precision the previous
    releases left it (:func:`_gain`); None: every component fresh. ``factors`` (k × d × d,
    filled in place; a :attr:`EMPlan.factored` plan's untied steps): the new covariances'
    Cholesky factors, updated through the factor (:func:`_factor_update`); the returned
    covariances are their products. ``pool`` (one entry per component, updated in place;
    the steps of :func:`_pooling`): the releases of a component held under the floor, in
    its unchanged frame, averaged by precision until together they clear it
    (:func:`_pool_release`).
    ``peaks`` (updated in place): each component's largest released count so far and its
    state in the model it was measured under, which a revival restarts it at
    (:func:`_restart`); None: revivals split. One run of :func:`_em_release_runs`."""
    return _em_release_runs([_RunStep(stats, run, L, run_tag, memory, factors, pool, peaks)],
                            plan, t, release, n)[0]


def _em_release_runs(steps: list[_RunStep], plan: EMPlan, t: int, release: Release, n: int
                     ) -> list[Run]:
    """:func:`_em_release` for the runs of one step's pass, each run's returned model (and its
    state updated in place) bit for bit what :func:`_em_release` gives it alone: the runs'
    statistics are released run by run in the order of ``steps`` (the same charges and noise
    draws: the updates draw nothing), then updated together — every run's components
    de-clipped by one :func:`~privgauss.mixture.cluster_estimation.undo_clipping_batch` call
    and their factors by one :func:`_factor_update` call (both stacks compute each component
    as it would alone; one call per run was most of an exploring step's post-processing at
    n = 5e4, d = 10, k = 3, ε = 1e4: numpy's per-call overhead on 3 × 10 × 10 arrays).
    Post-processing of the releases only."""
    r = plan.step_radius(t)
    rc, rs, rm = plan.stat_rhos(t)
    acct, noise = release.accountant, release.noise
    tied = plan.is_tied(t)
    sig_m = soft_outer_sums_frobenius(r) / math.sqrt(2.0 * rm)
    sig_s = soft_sums_l2(r) / math.sqrt(2.0 * rs)
    factored = plan.factored and not tied
    pend: list[_Pending] = []
    for st in steps:
        weights, means, covs = st.run
        k, d = means.shape
        N, S, M = st.stats
        tag = f"em step {t + 1}/{plan.n_steps}{st.tag}"
        # a tied step releases the pooled Σ_j M_j (one matrix; the same sensitivity: one row's
        # Σ_j r_ij y_ij y_ijᵀ is a convex combination of PSD matrices of norm ≤ r²)
        Mj = np.asarray(M).sum(axis=0) if tied else np.asarray(M)
        if JOINT_STATS:  # the three together, charged once at their joint cost
            Nn, Sn, Mn = soft_statistics_mechanism(
                N, S, Mj, r, (rc, rs, rm), accountant=acct, noise=noise,
                step=release.name(f"{tag} soft statistics"))
        else:
            Nn = gaussian_mechanism(N, soft_counts_l2(), ZCDP(rc), accountant=acct,
                                    noise=noise, step=release.name(f"{tag} soft counts"))
            Sn = gaussian_mechanism(S.ravel(), soft_sums_l2(r), ZCDP(rs), accountant=acct,
                                    noise=noise, step=release.name(f"{tag} weighted sums")
                                    ).reshape(k, d)
            Mn = symmetric_matrix_mechanism(Mj, soft_outer_sums_frobenius(r), ZCDP(rm),
                                            accountant=acct, noise=noise,
                                            step=release.name(f"{tag} weighted second moments"))
        # post-processing of the releases
        floor = _release_floor(plan, t, n, k)
        new_w = np.maximum(Nn, 0.5) / max(float(np.maximum(Nn, 0.5).sum()), 1.0)
        new_w = np.maximum(new_w, 1e-3)
        new_w /= new_w.sum()
        new_means, new_covs = means.copy(), covs.copy()
        mem = np.full((k, 2), np.nan) if st.memory is None else st.memory
        facs = ((np.array(st.L, dtype=np.float64) if st.factors is None else st.factors)
                if factored else None)
        if facs is not None:
            facs[:] = st.L  # a component without an update keeps its factor
        if tied:
            _tied_update(Nn, Sn, Mn, st.L[0], floor, sig_m, r, n, new_means, new_covs)
            mem[:] = np.nan  # every component's covariance replaced by the pooled one
        # which components update, and from what: one under the step's floor keeps its
        # previous estimate or, in refining steps, adds the release to its pool in its held
        # frame until together they clear the floor (:func:`_pool_release`)
        inputs: list[tuple[int, float, np.ndarray, np.ndarray, float, float]] = []
        pool = st.pool
        for j in range(k if not tied else 0):
            if pool is not None and facs is None:
                if Nn[j] > floor:
                    pool[j] = None  # updated from this release alone: its frame moves
                else:
                    pooled = _pool_release(pool, j, Nn[j], Sn[j], Mn[j], r, rm, floor, n, k)
                    if pooled is not None:
                        Nj, Sj, Mj, scale = pooled
                        inputs.append((j, Nj, Sj, Mj, sig_m * scale, sig_s * scale))
                    continue
            if Nn[j] > floor:
                inputs.append((j, float(Nn[j]), Sn[j], Mn[j], sig_m, sig_s))
        pend.append(_Pending(Nn, new_w, new_means, new_covs, mem, facs, inputs, []))
    # the Gaussians whose rows, clipped at r, have the released first and second moments:
    # clipping shrinks them (~5-10 % of the variance at this radius), which EM would keep;
    # every run's components by one call (each as alone)
    every = [x for p in pend for x in p.inputs]
    ybars: Any = ()
    Cys: Any = ()
    if every:
        Ns = np.array([x[1] for x in every])
        ybars, Cys = undo_clipping_batch(np.array([x[2] for x in every]) / Ns[:, None],
                                         np.array([x[3] for x in every]) / Ns[:, None, None], r)
    # the release combined with what the earlier ones left (its own frame: the previous
    # estimate is 0 and I), by a gain from their noise and the change EM makes (:func:`_gain`),
    # then no direction shrinks below the combined noise's reach (at most STEP_FLOOR of the
    # mean); gain and floor go to 1 and 0 as the noise vanishes. Every run's components
    # capped and floored by one stacked call each (:func:`_declip_cap_batch`,
    # :func:`_floor_batch`: each as alone)
    capped = _declip_cap_batch(np.asarray(Cys, dtype=np.float64),
                               r, np.array([x[4] / x[1] for x in every]))
    combined: list[tuple[np.ndarray, np.ndarray, float, float]] = []
    at = 0
    for st, p in zip(steps, pend, strict=True):
        cut = at + len(p.inputs)
        for (j, Nj, _, _, sm_j, ss_j), ybar, Cy in zip(p.inputs, ybars[at:cut], capped[at:cut],
                                                        strict=True):
            if st.memory is None:  # half the James–Stein shrinkage, as a fresh estimate
                combined.append((_shrink(Cy, sm_j / Nj, strength=0.5), ybar,
                                 (sm_j / Nj) ** 2, math.nan))
            else:
                combined.append(_combine(Cy, ybar, sm_j / Nj, ss_j / Nj, p.mem[j]))
        at = cut
    floored: Any = ()
    if combined:
        floored = _floor_batch(np.array([x[0] for x in combined]),
                               np.sqrt(np.array([x[2] for x in combined])))
    at = 0
    for st, p in zip(steps, pend, strict=True):
        L, means = st.L, st.run[1]
        d = means.shape[1]
        cut = at + len(p.inputs)
        for (j, _, _, _, _, _), (_, ybar, var_c, var_m), Cy in zip(
                p.inputs, combined[at:cut], floored[at:cut], strict=True):
            # rows were clipped at r around the current mean: they cannot move it further
            # (noisy moments near the clipping sphere de-clipped to a far point: a mean
            # jumped 250 away)
            if MEAN_CAP:
                ybar = ybar * min(1.0, r / max(float(np.linalg.norm(ybar)), 1e-300))
            p.new_means[j] = means[j] + L[j] @ ybar
            # the errors left, in the next frame's units (:func:`_error_memory`)
            if p.facs is not None:  # through the factor, all components at once below
                p.deferred.append((j, Cy, var_c, var_m))
                continue
            p.new_covs[j] = repair_covariance(L[j] @ repair_covariance(Cy) @ L[j].T,
                                              _step_eig_floor(math.sqrt(var_c), d))
            A = np.linalg.solve(L[j], np.linalg.solve(L[j], p.new_covs[j]).T)
            p.mem[j] = _error_memory(np.linalg.eigvalsh(sym(A)), var_c, var_m)
        at = cut
    # a wide plan: the floor fades to 1e-20; every run's deferred components by one call
    # (each as alone)
    owners = [(p, st.L, x) for st, p in zip(steps, pend, strict=True) for x in p.deferred]
    if owners:
        d = owners[0][1].shape[1]
        Ls = np.array([L[x[0]] for _, L, x in owners])
        F = _factor_update(Ls, np.array([x[1] for _, _, x in owners]), np.array(
            [_step_eig_floor(math.sqrt(x[2]), d, True) for _, _, x in owners]))
        covs_new = sym(F @ np.swapaxes(F, 1, 2))
        lams = np.linalg.svd(np.linalg.solve(Ls, F), compute_uv=False) ** 2
        for (p, _, (j, _, var_c, var_m)), Fj, Cj, lam in zip(owners, F, covs_new, lams,
                                                             strict=True):
            assert p.facs is not None
            p.facs[j] = Fj
            p.new_covs[j] = Cj
            p.mem[j] = _error_memory(lam, var_c, var_m)
    out: list[Run] = []
    for st, p in zip(steps, pend, strict=True):
        weights, _, _ = st.run
        k = weights.shape[0]
        if t < plan.n_steps - 2:  # later, a revived component could not be fitted any more
            floor = _release_floor(plan, t, n, k)
            revive = _to_revive(p.Nn, n * weights, floor, _dead_floor(plan, t, n, k), rc, t)
            # a restart reads the run's peaks, not in a k' run's steps (there a component
            # fades into a sibling on its cluster, as it should)
            peaks = st.peaks if REVIVE_RESTART and (plan.reduce_at is None
                                                    or t >= plan.reduce_at) else None
            changed: list[int] = []
            for dead in np.flatnonzero(revive).tolist():
                h = None
                restarted = peaks is not None and _restart(int(dead), peaks, floor, n,
                                                          p.new_w, p.new_means, p.new_covs)
                if not restarted:
                    h = _split(p.new_w, p.new_means, p.new_covs, int(dead), n * p.new_w > floor)
                new = [int(dead)] + ([] if h is None else [h])
                changed += new
                p.mem[new] = np.nan  # new estimates
                if st.pool is not None:
                    for c in new:
                        st.pool[c] = None
                if p.facs is not None and (h is not None or restarted):
                    p.facs[new] = _lower_factors(p.new_covs[new])
            if st.peaks is not None:  # this step's counts, under the model they were measured
                top = np.asarray(p.Nn > st.peaks.count) | np.isnan(st.peaks.count)
                top[changed] = False
                st.peaks.count[top] = p.Nn[top]
                st.peaks.means[top] = st.run[1][top]
                st.peaks.covs[top] = st.run[2][top]
                st.peaks.count[changed] = np.nan  # a revived or split component starts again
        out.append((p.new_w, p.new_means, p.new_covs))
    return out


def _pooling(plan: EMPlan, t: int, refining: bool) -> bool:
    """Whether step t pools a held component's releases (public: the plan and t only):
    a refining step (``POOL_HELD``), and with ``POOL_OVERPARAM`` a k' run's untied steps
    after the pick and before the reduction (``plan.reduce_at``), whose release floor is
    above a 5-8 % cluster's rows at d = 14-15, ε = 1 (2523: 4,084 against 2,491 / 3,927),
    so its component otherwise reaches the reduction with the tied steps' pooled covariance
    (KL 6-8 from its cluster; famreduce). Its pool is emptied at the reduction, at a tied
    step and at a revival (:func:`_em_steps`, :func:`_em_release_runs`)."""
    if refining:
        return POOL_HELD
    return (POOL_OVERPARAM and plan.reduce_at is not None and plan.explore_steps < t
            < plan.reduce_at and not plan.is_tied(t))


def _pool_release(pool: list[Any], j: int, N: float, S: np.ndarray, M: np.ndarray, r: float,
                  rm: float, floor: float, n: int, k: int
                  ) -> tuple[float, np.ndarray, np.ndarray, float] | None:
    """Add component j's step release (N, S, M), made under the step's ``floor`` while its
    estimate (hence its frame) is held, to its pool ``pool[j]`` (post-processing; refining
    steps and a k' run's untied steps, :func:`_pooling`): releases at one radius ``r`` are
    averaged by their precisions (weights ρ of the step: every statistic's noise variance
    is ∝ 1/ρ at one r), and once the pooled count
    clears the floor for the pooled noise (the noise terms of :func:`_release_floor` times
    √(ρ/Σρ)), returns (N̄, S̄, M̄, that factor) for one update and empties the pool; else None
    (the estimate is held). Issue 27: a 5-8 % component at d = 15, ε = 1 sits under every
    refining step's floor but the last, so its shape came from one release (2-4 nat/row on
    its rows); averaging the raw moments before the (nonlinear) de-clipping keeps their noise
    linear. As the noise vanishes no component is under the floor and nothing is pooled."""
    acc = pool[j]
    if acc is None or acc[0] != r:
        acc = [r, 0.0, 0.0, np.zeros_like(S), np.zeros_like(M)]
    acc[1] += rm
    acc[2] += rm * float(N)
    acc[3] = acc[3] + rm * S
    acc[4] = acc[4] + rm * M
    pool[j] = acc
    scale = math.sqrt(rm / acc[1])
    Np = acc[2] / acc[1]
    if not Np > max((floor if floor > 1e-3 * n / k else 0.0) * scale, 1e-3 * n / k):
        return None
    pool[j] = None
    return Np, acc[3] / acc[1], acc[4] / acc[1], scale


def _tied_update(Nn: np.ndarray, Sn: np.ndarray, Mn: np.ndarray, L: np.ndarray, floor: float,
                 sig_m: float, r: float, n: int, means: np.ndarray, covs: np.ndarray) -> None:
    """A tied step's update (in place; post-processing): each component above ``floor`` moves
    its mean by L·S_j/N_j (at most r), and every component gets the one pooled covariance
    L C Lᵀ, C = (M − Σ_j S_j S_jᵀ/N_j)/n de-clipped as one centred Gaussian's, half
    James–Stein-shrunk and floored for its noise ``sig_m``/n (Σ_j N_j = n: every row's
    responsibilities sum to 1). ``L``: the pooled covariance's Cholesky factor, the frame all
    components' rows were clipped in."""
    d = means.shape[1]
    centred = np.asarray(Mn, dtype=np.float64).copy()
    for j in np.flatnonzero(Nn > floor).tolist():
        ybar = Sn[j] / Nn[j]
        centred -= Nn[j] * np.outer(ybar, ybar)
        ybar = ybar * min(1.0, r / max(float(np.linalg.norm(ybar)), 1e-300))
        means[j] = means[j] + L @ ybar
    s = sig_m / n
    _, Cy = undo_clipping(np.zeros(d), centred / n, r)
    Cy = _floor(_shrink(Cy, s, strength=0.5), s)
    covs[:] = repair_covariance(L @ repair_covariance(Cy) @ L.T, _step_eig_floor(s, d))


def _tie(run: Run) -> Run:
    """A run's covariances replaced by their weighted mean (post-processing): the pooled
    covariance a tied step's rows are clipped in (the starts fit one per component)."""
    w, means, covs = run
    pooled = sym(np.einsum("j,jab->ab", w / w.sum(), covs))
    return w, means, np.repeat(pooled[None], w.shape[0], axis=0)


def _release_floor(plan: EMPlan, t: int, n: int, k: int) -> float:
    """The released count above which one run's step-t moments update a component (public):
    twice the noise of its second moments (and sums) at the step's ρ, at least 10⁻³·n/k; a
    tied step's second moments are pooled over all rows, so only its sums' noise counts."""
    r = plan.step_radius(t)
    _, rs, rm = plan.stat_rhos(t)
    moments = 0.0 if plan.is_tied(t) else 2.0 * soft_outer_sums_frobenius(r) / math.sqrt(
        2.0 * rm)
    return max(moments, 2.0 * soft_sums_l2(r) / math.sqrt(2.0 * rs), 1e-3 * n / k)


def _dead_floor(plan: EMPlan, t: int, n: int, k: int) -> float:
    """The released count at or below which a component is dead and revived by a split
    (public): ``DEAD_SIGMAS`` standard deviations of step t's count noise, or the floor of
    the last, best-funded step (a component that even that step could not update). Below
    step t's own :func:`_release_floor` but above this, a component keeps its estimate: a
    5 %-weight component in d = 9 (2,500 rows) sat under an early exploring step's floor
    (3,954) and was split-revived at once — private EM started from scikit-learn's optimum
    ended 0.19 nat/row below it (family 4 of ``benchmarks/mixture_families.py``, ε = 1)."""
    rc = plan.stat_rhos(t)[0]
    return max(DEAD_SIGMAS * soft_counts_l2() / math.sqrt(2.0 * rc),
               _release_floor(plan, plan.n_steps - 1, n, k))


def _to_revive(Nn: np.ndarray, prev: np.ndarray, floor: float, dead_floor: float, rc: float,
               t: int) -> np.ndarray:
    """Which components a step split-revives (post-processing of released counts): *dead* —
    this step's released count ``Nn`` at or under ``dead_floor`` (:func:`_dead_floor`; with
    ``DEAD_CONFIRM`` the previous one ``prev``, from the run's released weights, too) — or
    *fading* — under
    ``FADE_LEVEL`` × the step's release ``floor`` and fallen below ``FADE`` × ``prev`` by
    more than the two counts' noise (EM alone does not bring it back: family 7 at ε = 1 slid
    from 8,200 rows to 1,000 and ended 0.32 below sklearn). With ``DEAD_CONFIRM`` dead needs
    two counts running: one noisy count alone killed a right 4.9 % component (2,400 rows,
    4.7 sds of an exploring step's count noise; a 1.7-sd dip, ~4 % per step) in all three
    runs of generated family 1454 (ε = 1, d = 2): the split moved it onto the 0.37 cluster
    and the fit ended 0.32 below sklearn (``benchmarks/results/em_small_clusters.md``,
    famstart; off by default: it lost elsewhere). ``rc``: the step's count ρ."""
    drop = np.maximum((1.0 - FADE) * prev, 3.0 * math.sqrt(2.0) * soft_counts_l2()
                      / math.sqrt(2.0 * rc))  # beyond the two counts' noise
    fading = (Nn <= FADE_LEVEL * floor) & (prev - Nn > drop) if t > 0 else np.zeros(len(Nn), bool)
    dead = ~(Nn > dead_floor)
    if DEAD_CONFIRM:
        dead &= ~(prev > dead_floor)
    return np.asarray(dead | fading, dtype=bool)


def _restart(dead: int, peaks: _Peaks, floor: float, n: int, w: np.ndarray,
             means: np.ndarray, covs: np.ndarray) -> bool:
    """Revive component ``dead`` (in place; post-processing of released values) at its state
    in the model its largest released count so far was measured under (``peaks``), if that
    count cleared the step's ``floor``, with that count's share as its weight (the weights
    renormalised); returns whether it did (else the caller splits, :func:`_split`). Under that
    model the component held the rows it counted; an update since moved it off them and a
    neighbour took them. Issue 27, generated families 2578 and 2580 (ε = 1, d = 10-11): the
    reduction was right, its first refining step moved a 5 % cluster's component off its
    rows (count 2,300-2,400 → 0) and the split of the widest component left the cluster
    merged (0.51 / 0.32 nat/row below sklearn; restarted: 0.025 / 0.063); famcensus' 2528,
    2533 (``benchmarks/results/em_small_clusters.md``, revive). A component that never
    cleared the floor since (dead from the start) is split as before. No new release; as the
    noise vanishes no component fades."""
    top = float(peaks.count[dead])
    if not top > floor:  # NaN: none since its last revival
        return False
    means[dead], covs[dead] = peaks.means[dead], peaks.covs[dead]
    w[dead] = max(float(w[dead]), top / n)
    w /= w.sum()
    return True


def _split(w: np.ndarray, means: np.ndarray, covs: np.ndarray, dead: int,
           alive: np.ndarray) -> int | None:
    """Revive component ``dead`` (its released count below the noise floor: EM alone never
    brings it back, and the fit ends with k − 1 components, 0.34 nat/row below sklearn's on
    the synthetic benchmark) by splitting an ``alive`` component along its main axis, ±½
    standard deviation (in place; post-processing of released values). The one split carries
    the most spread, max w_j·λ_max(Σ_j): a component that holds two clusters is stretched along
    the line between them. Splitting the heaviest instead split a true cluster of weight 0.47
    next to a merged one of 0.47 (synthetic benchmark, ε = 1, seed 2: gap 0.339; with this rule
    0.015, and no other of 24 seeds, nor 12 of each other benchmark row, changed)."""
    cand = np.flatnonzero(alive)
    if cand.size == 0:
        return None
    spread = [w[j] * float(np.linalg.eigvalsh(covs[j])[-1]) for j in cand]
    h = int(cand[int(np.argmax(spread))])
    lam, V = np.linalg.eigh(covs[h])
    step = 0.5 * math.sqrt(max(float(lam[-1]), 0.0)) * V[:, -1]
    means[dead], means[h] = means[h] + step, means[h] - step
    covs[h] = repair_covariance(covs[h] - np.outer(step, step))
    covs[dead] = covs[h]
    w[dead] = w[h] = 0.5 * (w[h] + w[dead])
    return h


def _em_steps(Z: Any, runs: list[Run], plan: EMPlan, release: Release,
              n: int, stops: list[int] | None = None, k: int | None = None,
              frozen: list[tuple[int, int]] | None = None,
              factors: list[np.ndarray | None] | None = None) -> Run:
    """The T EM steps, one pass over the rows each: while exploring, the pass computes every
    run's statistics (released run by run); at the end of the exploration the runs are
    scored and the pick released first, then the winner's statistics — rows in memory: a
    pass of the scores alone, then the winner's step (cheaper than every run's statistics);
    streamed (dask) rows: one pass of both, the losers' statistics dropped unreleased.
    An over-parameterised plan's run is reduced to ``k`` components (free:
    :func:`~privgauss.mixture.em_starts.reduce_run`) before step ``plan.reduce_at``.
    Where the plan lets exploring runs stop (``plan.may_freeze``: quiet wide plans), a run
    whose released changes meet the stopping rule (:func:`_converged`) is *frozen*: its
    later exploring steps are skipped (it waits for the pick as it is, as scikit-learn's
    init stops at its ``tol``), and once every run is frozen the exploration ends and the
    pick's step runs next. So does a run within ``MERGE_TOL`` of another (the later of the
    pair, :func:`_merge_runs`) and a start whose components coincide within a step's noise
    (:func:`_collapsed`). Each freeze is appended to ``frozen`` as (run, step), −1 for a
    start: a function of released models (post-processing), like the stop. A
    :attr:`EMPlan.factored` plan carries each run's covariances by their Cholesky factors
    from step to step (NaN-free products of them in the runs); the returned run's are
    appended to ``factors`` (None where they are not carried)."""
    t = 0
    facs: list[np.ndarray | None] = [None] * len(runs)  # None: from the covariances
    changes: list[float] = []
    mems = [np.full((run[0].shape[0], 2), np.nan) for run in runs]  # fresh estimates
    pools: list[list[Any]] = [[None] * run[0].shape[0] for run in runs]
    peaks = [_Peaks.of(*run[1].shape) for run in runs]  # each run's components' peak counts
    active = [True] * len(runs)
    run_changes: list[list[float]] = [[] for _ in runs]
    # the last STOP_SPAN + 1 refining models, what _span_stop compares
    span: deque[tuple[Run, np.ndarray | None]] = deque(maxlen=max(STOP_SPAN, 0) + 1)
    if plan.may_freeze(0) and len(runs) > 1:  # starts within MERGE_TOL of another start
        for c in _merge_runs(runs, facs, active, list(range(len(runs))), MERGE_TOL):
            if frozen is not None:
                frozen.append((c, -1))
        # a start whose components coincide within what a step's noise moves a model by
        # (a collapsed summary start: EM's tie, broken only by that noise) waits as it is
        tie = _noise_change(plan, 0, n, runs[0][1].shape[1], runs[0][0].shape[0])
        for c, run in enumerate(runs):
            if active[c] and _collapsed(run, tie):
                active[c] = False
                if frozen is not None:
                    frozen.append((c, -1))
    while t < plan.n_steps:
        if (plan.reduce_at is not None and k is not None and t >= plan.reduce_at
                and len(runs) == 1 and runs[0][0].shape[0] > k):
            runs = [reduce_run(runs[0], k, n, release.rng)]
            mems = [np.full((k, 2), np.nan)]
            pools = [[None] * k]
            peaks = [_Peaks.of(*runs[0][1].shape)]
            facs = [None]
            changes.clear()
        if plan.is_tied(t):  # one covariance for all components (a split may have broken it)
            runs = [_tie(run) for run in runs]
            facs = [None] * len(runs)
            for mem in mems:
                mem[:] = np.nan
            pools = [[None] * len(pool) for pool in pools]
        pick = t == plan.explore_steps and len(runs) > 1
        cap = plan.regret_cap(n) if pick else 0.0
        exploring = t < plan.explore_steps and len(runs) > 1
        # the releases are combined over steps once the structure is chosen: after the pick,
        # with the k components of the reduction (:func:`_combine`)
        refining = not exploring and not pick and (plan.reduce_at is None
                                                   or t >= plan.reduce_at)
        idx = [c for c in range(len(runs)) if active[c]] if exploring else list(range(len(runs)))
        terms = [_model_terms(runs[c][0], runs[c][2], facs[c]) for c in idx]
        models = tuple((runs[c][1], Linv, ln) for c, (_, Linv, ln) in zip(idx, terms,
                                                                           strict=True))
        keep = range(len(idx))  # positions in idx
        at = {a: a for a in keep}  # a position's row in the pass's statistics
        if pick and not is_dask(Z):  # rows in memory: the scores, the pick, then its step
            out = reduce_rows(Z, partial(_em_kernel, models=models, radius=plan.step_radius(t),
                                         bound=cap or plan.score_bound, stats=False,
                                         regret=cap > 0), block=EM_BLOCK_ROWS)
            winner = pick_run(out[0], plan, release, cap)
            keep, at = range(winner, winner + 1), {winner: 0}
            out = reduce_rows(Z, partial(_em_kernel, models=models[winner: winner + 1],
                                         radius=plan.step_radius(t),
                                         trim=_trim_radius(plan, t)), block=EM_BLOCK_ROWS)
        else:  # streamed rows: one pass, every run's statistics (the scores with the pick's)
            out = reduce_rows(Z, partial(_em_kernel, models=models,
                                         radius=plan.step_radius(t),
                                         bound=(cap or plan.score_bound) if pick else 0.0,
                                         trim=_trim_radius(plan, t), regret=cap > 0),
                              block=EM_BLOCK_ROWS)
            if pick:
                winner = pick_run(out[3], plan, release, cap)
                keep = range(winner, winner + 1)
        tag = plan.runs(t) > 1
        carry = plan.factored and not plan.is_tied(t)
        new_facs = {idx[a]: np.empty_like(terms[a][0]) if carry else None for a in keep}
        # released run by run, updated together (:func:`_em_release_runs`)
        new = dict(zip([idx[a] for a in keep], _em_release_runs(
            [_RunStep((out[0][at[a]], out[1][at[a]], out[2][at[a]]), runs[idx[a]], terms[a][0],
                      f" run {idx[a] + 1}" if tag else "",
                      mems[idx[a]] if refining else None, new_facs[idx[a]],
                      pools[idx[a]] if _pooling(plan, t, refining) else None, peaks[idx[a]])
             for a in keep],
            plan, t, release, n), strict=True))
        if exploring and plan.may_freeze(t):  # released models only: post-processing
            for c, run in new.items():
                run_changes[c].append(_excess(
                    _model_change(runs[c], run, (facs[c], new_facs[c])),
                    _noise_change(plan, t, n, run[1].shape[1], run[0].shape[0])))
                if _converged(run_changes[c], FREEZE_TOL):
                    active[c] = False
                    if frozen is not None:
                        frozen.append((c, t))
            current = [new.get(c, run) for c, run in enumerate(runs)]
            now = [new_facs[c] if c in new else f for c, f in enumerate(facs)]
            for c in _merge_runs(current, now, active, [c for c in new if active[c]],
                                 MERGE_TOL):
                if frozen is not None:
                    frozen.append((c, t))
        # the stopping rule: a function of released models only (see the module docstring)
        span_stop = False
        if len(new) == 1 and plan.may_stop(t):
            (c, run), = new.items()
            kc = run[0].shape[0]
            assert plan.stop_from is not None  # may_stop
            if STOP_SPAN <= 0 or _quiet(plan, plan.stop_from, n, run[1].shape[1], kc):
                changes.append(_model_change(runs[c], run, (facs[c], new_facs[c])))
            else:  # a plan opened by STOP_SPAN (_stop_gate): the change over the span
                span.append((run, new_facs[c]))
                if len(span) == span.maxlen:
                    (r0, f0), (r1, f1) = span[0], span[-1]
                    span_stop = _span_stop(_model_change(r0, r1, (f0, f1)),
                                           _noise_change(plan, t, n, run[1].shape[1], kc))
        if pick or not exploring:
            mems = [mems[c] for c in new]
            pools = [pools[c] for c in new]
            peaks = [peaks[c] for c in new]
            runs = list(new.values())
            facs = [new_facs[c] for c in new]
        else:
            runs = [new.get(c, run) for c, run in enumerate(runs)]
            facs = [new_facs[c] if c in new else f for c, f in enumerate(facs)]
        if span_stop or _converged(changes):
            if stops is not None:
                stops.append(t)
            t = plan.n_steps - 1
            changes.clear()
        elif exploring and not any(active):
            t = plan.explore_steps  # every run frozen: the pick's step next
        else:
            t += 1
    if factors is not None:
        factors.append(facs[0])
    return runs[0]


def _converged(changes: list[float], tol: float = STOP_TOL) -> bool:
    """The stopping rule on the released changes of the steps so far (post-processing): the
    change still to come, extrapolated geometrically from the last three,
    Δ_t/(1 − q) with q = min(``STOP_RATE``, √(Δ_t/Δ_{t−2})), is at most ``STOP_TOL``. A slow
    EM (q near 1: real tables' runs gain 1e-3 nat/row over 30 steps of 1e-5 each) or one whose
    changes are the noise's (q ≈ 1) runs on; a fast one stops once Δ_t ≤ (1 − q)·``STOP_TOL``."""
    if len(changes) < 3:
        return False
    last, before = changes[-1], changes[-3]
    ratio = last / before if before > 0 else math.inf
    rate = min(STOP_RATE, math.sqrt(ratio)) if ratio >= 0 else STOP_RATE  # NaN: the cap
    return last <= (1.0 - rate) * tol


def _count_radius(plan: EMPlan, d: int) -> float:
    """The clipped count's radius (public): the larger of the last step's and the χ²_d
    quantile a Gaussian row exceeds with probability ``COUNT_TAIL`` (at the EM radius in
    d = 10, 4 % of a clean fit's rows are outside, and 5 % gross errors would hide in that)."""
    from scipy import stats

    return max(plan.step_radius(plan.n_steps - 1), math.sqrt(float(stats.chi2.isf(COUNT_TAIL, d))))


def _release_count(count: float, radius: float, d: int, n: int, plan: EMPlan,
                   release: Release) -> dict[str, float]:
    """The DP number of rows outside every component's final ball (``count``: computed by the
    final pass, :func:`~privgauss.mixture.em_final.final_pick`, for the picked model, in each
    released component's frame): a count of sensitivity 1 under replace-one, discrete Gaussian
    noise from ``plan.rho_count`` (planned: "clipped count"). Returns the noisy count with its
    public context: ``model_fraction`` = P(χ²_d > r²), the fraction of a Gaussian component's
    own rows outside its ball (so of a Gaussian mixture's rows outside every ball, at most),
    and the noise's scale."""
    from scipy import stats

    from ..mechanisms import private_count

    noisy = private_count(int(round(count)), ZCDP(plan.rho_count),
                          accountant=release.accountant, noise=release.noise,
                          step=release.name("em clipped count"))
    return {"noisy": float(np.asarray(noisy).reshape(-1)[0]), "n": float(n),
            "model_fraction": float(stats.chi2.sf(radius * radius, d)), "radius": radius,
            "noise_scale": 1.0 / math.sqrt(2.0 * plan.rho_count)}


def _refuse_untrusted_public(P: np.ndarray) -> None:
    """Refuse, before anything is spent, public rows that cannot give EM its frame (too few
    distinct rows, or rows that do not span R^d: public facts only), in EM's own words — the
    public preconditioner's refusal speaks of ``method='public'``."""
    from ..gaussian.public_frame import frame_of

    _, reason, _ = frame_of(P, outliers=False)  # clusters are not outliers (as in _frame)
    if reason:
        raise InvalidDataError(
            f"method='em' (PrivateGaussianMixture) cannot take its whitening frame from these "
            f"public rows: {reason}. Nothing was spent. Drop public_X=: with an (epsilon, "
            "delta) budget private EM then localises with the bound-free histograms; with a rho "
            "budget give mean_bound= and cov_bounds= (a prior) as well. Or pass at least d+1 "
            "distinct public rows that span every column"
        )


def check_em_inputs(d: int, k: int, budget: Budget, n_public: int, prior: bool = False) -> None:
    """Refusals before anything is spent (public facts only)."""
    if isinstance(budget, ZCDP) and n_public < d + 1 and not prior:
        em_plan(2, d, k, budget, n_public=n_public)  # raises the InvalidDataError


def private_em_gmm(
    X: Any,
    k: int,
    budget: Budget,
    *,
    public_X: Any = None,
    min_weight: float | None = None,
    beta: float = 0.05,
    constants: str = "practical",
    release: Release,
    info: dict[str, Any] | None = None,
    n_steps: int | None = None,
    prior: EMPrior | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(weights, means, covariances) of a k-component mixture by private EM; ρ-zCDP or
    (ε, δ)-DP w.r.t. the rows of ``X`` (replace-one, n public) for any ``public_X`` and any
    ``prior``. See the module docstring. ``prior`` (public, an :class:`EMPrior`) replaces the
    bound-free localisation when there are fewer than d+1 public rows; the final model is
    projected into it (as the estimator projects every release) before the DP count of rows
    outside every component's final ball, then the columns' heaviest-cell counts
    (:mod:`.atoms`). ``info`` receives the ``"em_plan"``, the ``"clipped_count"`` (the noisy
    count with its public context), the ``"atom_counts"`` (likewise) and ``"em_stopped_after"``
    (the step after which the DP stopping rule skipped to the last one; None when all ran).
    Charged to ``release``'s accountant, noise from its noise source."""
    accountant = release.accountant
    X = as_rows(X, min_rows=2)
    n, d = int(X.shape[0]), int(X.shape[1])
    P = None if public_X is None else public_rows(public_X, name="public_X", n_features=d)
    n_pub = 0 if P is None else P.shape[0]
    plan = em_plan(n, d, k, budget, n_public=n_pub, n_steps=n_steps, prior=prior is not None)
    if not accountant.can_spend_all([b for _, b in plan.parts()]):
        raise PrivacyBudgetError(
            f"method='em' needs {budget} from the accountant, which cannot pay it "
            f"(spent: {accountant.spent_str()})"
        )
    if P is not None and plan.localisation is None and plan.rho_prior_localisation == 0.0:
        _refuse_untrusted_public(P)
    if info is not None:
        info["em_plan"] = plan
    # the single Gaussian's handicap in the final pick, from the plan's predicted noise cost,
    # where that candidate is the EM fit's moment match (the diagonal frame); elsewhere it is
    # the frame's standard normal — with public rows, a Gaussian of a few dozen public rows
    # (immi2 and immi5 with 1 % public rows: picked at the smaller margin, 0.2 nat/row worse)
    margin = (pick_margin(_noise_change(plan, plan.n_steps - 1, n, d, k, at_r0=True),
                          NOISE_COST_ALARM) if plan.diagonal else MARGIN)
    from threadpoolctl import threadpool_limits

    # one BLAS thread: the passes' products are small (a few thousand rows by d), and BLAS
    # threads made a fit 5x slower on a loaded 2-core machine (scikit-learn's k-means does
    # the same); dask runs the chunks in parallel instead
    with np.errstate(all="ignore"), threadpool_limits(1, user_api="blas"):
        if plan.diagonal:  # the histograms' frame; the octave reserve left to the last step
            m0, C0, unspent = _histogram_frame(X, plan, release)
            m0, W, Winv = _whitening(m0, C0)
            plan = plan.with_unspent(unspent)
        else:
            m0, W, Winv = _frame(X, P if plan.localisation is None else None, plan, release,
                                 beta, constants, prior)
        Z = transform_rows(X, W, m0)
        if plan.rho_rewhiten > 0:
            m1, W1, W1inv = _rewhiten(Z, plan, release)
            m0, W, Winv = m0 + Winv @ m1, W1 @ W, Winv @ W1inv
            del Z  # in memory the rows are copied into a frame: never two copies at once
            Z = transform_rows(X, W, m0)
        Pz = None if P is None else (P - m0) @ W.T
        G, Ginv = standardiser(Winv)
        kf = plan.fitted(k)  # k' > k components until the reduction when over-parameterised
        extras: list[Run] = []
        hist_run, white_run, seeds = histogram_start(
            Z, Pz, kf, plan, release, n, G, extra=plan.n_starts - N_STARTS, Winv=Winv,
            extras=extras, cell_restarts=CELL_START if _cell_start(plan, d, kf) else 0)
        runs = [hist_run, white_run]
        if plan.rho_kmeans_steps and plan.start_clusters > kf:
            alts: list[Run] | None = [] if SUMMARY_ALT and plan.n_starts == N_STARTS else None
            runs.insert(0, summary_start(Z, seeds, kf, plan, release, G, Ginv, alts))
            if alts:
                runs[SUMMARY_ALT] = alts[0]
        elif plan.rho_kmeans_steps:  # seeds: the histogram k-means' centres (K' = k here)
            runs.insert(0, kmeans_steps(Z, seeds, plan, release, G, Ginv, _shrink))
        runs = (runs + extras)[: max(plan.n_starts, 1)]
        stops: list[int] = []
        frozen: list[tuple[int, int]] = []
        em_factors: list[np.ndarray | None] = []
        em = _em_steps(Z, runs, plan, release, n, stops, k=k, frozen=frozen,
                       factors=em_factors)
        em_factor = em_factors[0] if em_factors else None
        if info is not None:
            info["em_stopped_after"] = stops[0] + 1 if stops else None
            info["em_frozen"] = [(c + 1, t + 1) for c, t in frozen]
        names, cands = _final_candidates(em, P, m0, W, k, plan, release.rng, em_factor)
        outs = [_output(c, m0, W, Winv, prior, em_factor if c is em else None)
                for c in cands]
        if prior is not None:  # the candidates as the user gets them, back in the frame
            cands = [(w, (om - m0) @ W.T, np.array([sym(W @ C @ W.T) for C in oc]))
                     for w, om, oc in outs]
            em_factor = None  # the projected model's covariances are the user's bounds
        radius = _count_radius(plan, d)
        win, outside, scores, noise_sd = final_pick(
            Z, cands, radius=radius, bound=final_bound(d, plan.diagonal), rho=plan.rho_final,
            planned=plan.final_candidates, release=release,
            margins=tuple(margin if nm == CANDIDATES[1] else 0.0 for nm in names),
            factors=[em_factor] + [None] * (len(cands) - 1))
        weights, out_means, out_covs = outs[win]
        if info is not None:
            info["final_selection"] = {
                "selected": names[win], "candidates": names,
                "noisy_scores_per_row": scores.tolist(), "noise_per_row": noise_sd,
                "em_thinnest_variance": _thinnest(cands[0][2]),
                "noise_cost": noise_cost(n, d, k, budget, n_public=n_pub, n_steps=n_steps,
                                         prior=prior is not None)}
        if plan.rho_count > 0:  # the rows the released (projected) model leaves out
            clipped = _release_count(outside, radius, d, n, plan, release)
            if info is not None:
                info["clipped_count"] = clipped
        if plan.rho_atoms > 0:  # the columns' heaviest cells (DiscreteDataWarning)
            atoms = release_atom_counts(X, m0, Winv, plan.rho_atoms, release)
            if info is not None:
                info["atom_counts"] = atoms
    return weights, out_means, out_covs


def noise_cost(n: int, d: int, k: int, budget: Budget, *, n_public: int = 0,
               n_steps: int | None = None, prior: bool = False) -> dict[str, float]:
    """What the plan's noise alone is expected to cost the fit (public quantities only):
    ``per_row``, the change (KL per row) the last EM step's noise makes in a model of k equal
    components (:func:`_noise_change`; the released model carries it, so the held-out
    log-likelihood loses about that much — earlier steps' noise can cost more, by sending EM
    to a worse basin), and ``rows_needed``, the smallest n (within 5 %) at which it would be at
    most ``NOISE_COST_ALARM`` with the same budget, k, d and public rows. n = 5e4, d = 10,
    k = 3, ε = 1: 0.005 nat/row; the corpus' 5,000-row tables with 1 % public rows (d = 7–9):
    0.10–0.22, where the fits ended 0.5–5.9 nat/row below scikit-learn's."""

    def cost(m: int) -> float:
        plan = em_plan(m, d, k, budget, n_public=n_public, n_steps=n_steps, prior=prior)
        return _noise_change(plan, plan.n_steps - 1, m, d, k, at_r0=True)

    per_row = cost(n)
    lo, hi = n, n
    while cost(hi) > NOISE_COST_ALARM and hi < 10**12:
        lo, hi = hi, 2 * hi
    while hi > 1.05 * lo:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if cost(mid) <= NOISE_COST_ALARM else (mid, hi)
    return {"per_row": per_row, "rows_needed": float(hi), "alarm": NOISE_COST_ALARM}


def _final_candidates(em: Run, P: np.ndarray | None, m0: np.ndarray, W: np.ndarray, k: int,
                      plan: EMPlan, rng: np.random.Generator,
                      em_factor: np.ndarray | None = None
                      ) -> tuple[list[str], list[Run]]:
    """The final pick's candidates in the whitened frame, named (``CANDIDATES``): the EM fit,
    a single Gaussian — the frame's standard normal, or in the diagonal frame (whose standard
    normal is a diagonal Gaussian with bracket-middle scales) the EM fit's moment match
    (:func:`~.em_final.moment_gaussian`, full covariance: post-processing; ``em_factor`` its
    covariances' factors where carried) —, and — when the plan has room for it — the mixture
    fitted on the public rows alone (:mod:`.em_final`). Public facts only decide which are
    there; their count is the plan's either way."""
    d = em[1].shape[1]
    single = moment_gaussian(em, k, em_factor) if plan.diagonal else single_gaussian(k, d)
    names, cands = list(CANDIDATES[:2]), [em, single]
    if plan.final_candidates > 2 and P is not None:
        pub = public_candidate(P, k, rng, m0, W)
        if pub is not None:
            names.append(CANDIDATES[2])
            cands.append(pub)
    return names, cands


def _output(run: Run, m0: np.ndarray, W: np.ndarray, Winv: np.ndarray,
            prior: EMPrior | None, factors: np.ndarray | None = None) -> Run:
    """A model of the whitened frame in the data's coordinates, projected into the user's
    ``prior`` when there is one (post-processing). ``factors``: the covariances' Cholesky
    factors where the steps carried them (:attr:`EMPlan.factored`): formed in the data's
    units from the factors (:func:`_data_covariance`)."""
    weights, means, covs = run
    if factors is None:
        out_means = m0 + means @ Winv.T
        out_covs = np.array([sym(Winv @ C @ Winv.T) for C in covs])
    else:
        back = _back_map(W, Winv)
        out_means = m0 + back(means.T).T
        out_covs = np.array([_data_covariance(back(Lj)) for Lj in factors])
    if prior is not None:
        out_means, out_covs = _inside(prior, out_means, out_covs)
    return weights, out_means, out_covs


def _back_map(W: np.ndarray, Winv: np.ndarray) -> Any:
    """x − m₀ from z (columns of a d × m array) as the exact inverse of the rows' map
    z = W(x − m₀), solved in the frame's standardised columns: D·(W D)⁻¹ z, D the columns'
    released standard deviations (the rows' norms of ``Winv``; post-processing). The
    frame's ``Winv`` (W⁻¹ from the released covariance's eigenvectors, times the
    re-whitening's) is W⁻¹ only to float64's resolution of its largest column — every entry
    off by ~1e-16 × the largest column's sd — and W·Winv − I reached 4e-10 on mhtdata
    (columns' sds 1.5e-2 to 7.7e7; issue 27): a component parked on the atom 1.0 of the
    column of sd 0.49, fitted in the frame to 1e-8 of its own sd (1e-10 there), came out
    1.00000001 through ``Winv``, 17 of its sds off its rows (32 % of the rows lost ~156
    nat each at ε = 1e12), and 1.0 to 2e-15 through this map. W·D is as well conditioned as
    the released correlation matrix's root (1.4e3 there; W: 4.5e6), so the solve resolves
    each column of x − m₀ to float64's resolution of that column's own spread."""
    sd = np.sqrt(np.maximum(np.einsum("ij,ij->i", Winv, Winv), 1e-300))
    WD = W * sd[None, :]

    def back(Zt: np.ndarray) -> np.ndarray:
        try:
            return sd[:, None] * np.linalg.solve(WD, Zt)
        except np.linalg.LinAlgError:  # W singular in float64 (released values: public)
            return Winv @ Zt

    return back


def _data_covariance(M: np.ndarray) -> np.ndarray:
    """M Mᵀ (M a covariance's factor in the data's units) with its correlation matrix's
    eigenvalues at least ``CORR_FLOOR`` × its largest (post-processing; scale-free: the
    floor is relative to each column's own spread). The factor resolves eigenvalues far
    below float64's resolution of the product, but the user's matrix is the product: a
    component whose columns are collinear to 1e-16 within it would not be positive definite
    numerically (one fit of issue 27's corpus, mid, with the floor gone); a variance parked
    on a column's atom is untouched (its correlations with the other columns are not near
    ±1), however thin."""
    s = np.sqrt(np.einsum("ij,ij->i", M, M))
    s = np.where(s > 0, s, 1.0)
    U, sv, _ = np.linalg.svd(M / s[:, None])
    sv = np.maximum(sv, math.sqrt(CORR_FLOOR) * sv[0])
    R = sym((U * sv * sv) @ U.T)
    return sym(R * np.outer(s, s))


def _thinnest(covs: np.ndarray) -> float:
    """The smallest eigenvalue of the model's covariances in the whitened frame (where the
    data's covariance is about I): a function of released values. At ``EIG_FLOOR`` or below, a
    component has collapsed onto a discrete value or a collinear direction as far as the
    floors let it (the estimator's :class:`~privgauss.warnings.DiscreteDataWarning`)."""
    return float(min(np.linalg.eigvalsh(sym(C))[0] for C in covs))


def _inside(prior: EMPrior, means: np.ndarray, covs: np.ndarray
            ) -> tuple[np.ndarray, np.ndarray]:
    """The model projected into the user's ``prior`` (post-processing): each mean into the
    ball (a hair inside), each covariance's eigenvalues into ``cov_bounds`` — what the
    estimator does to every release, done here so that the clipped count describes the model
    the user gets (a prior that excludes the data then shows as rows left out)."""
    lo, hi = prior.cov_bounds
    means, covs = means.copy(), covs.copy()
    for j in range(means.shape[0]):
        off = means[j] - prior.center
        norm = float(np.linalg.norm(off))
        if norm > prior.radius:
            means[j] = prior.center + off * (prior.radius / norm * (1.0 - 1e-12))
        w, V = np.linalg.eigh(sym(covs[j]))
        if w[0] < lo or w[-1] > hi:
            covs[j] = sym((V * np.clip(w, lo, hi)) @ V.T)
    return means, covs
